"""Public Bias Scan API: results, subsets, score_subset vs NumPy, input errors."""

from __future__ import annotations

import math

import jax
import numpy as np
import pandas as pd
import pytest

import ofijax.scan as scan
from ofijax.scan import ScanResult, bias_scan, score_subset


def _data(n=400, seed=0, varying=True):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(["a", "b", "c"], n),
        "age": rng.choice([20, 30, 40, 50], n),
    })
    p = rng.uniform(0.1, 0.9, n) if varying else np.full(n, 0.4)
    inside = (df["race"] == "b").to_numpy() & df["age"].isin([30, 40]).to_numpy()
    odds = p / (1 - p) * np.where(inside, 4.0, 1.0)
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(int)
    return df, y, p


def _np_score(y, p, direction="positive"):
    """Independent row-level max LLR on the direction's side (grid + golden refinement)."""
    a, b = (0.0, math.log(1e6)) if direction == "positive" else (-math.log(1e6), 0.0)

    def G(t):
        return y.sum() * t - np.log1p(np.multiply.outer(np.expm1(t), p)).sum(-1)

    grid = np.linspace(a, b, 3001)
    j = int(np.argmax(G(grid)))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, 3000)]
    gr = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        c, d = hi - gr * (hi - lo), lo + gr * (hi - lo)
        if G(np.array([c]))[0] > G(np.array([d]))[0]:
            hi = d
        else:
            lo = c
    return max(float(G(np.array([0.5 * (lo + hi)]))[0]), float(G(grid).max()), 0.0)


def test_public_surface():
    assert {"ScanResult", "bias_scan", "score_subset", "DEFAULT_Q_BOUNDS"} <= set(scan.__all__)
    assert {"fpr_scan", "tpr_scan", "ijdi_scan", "IJDIResult"} <= set(scan.__all__)
    for name in scan.__all__:
        assert hasattr(scan, name), name
    assert ScanResult._fields[:9] == ("subset", "score", "q", "size", "mask", "converged",
                                      "listed", "p_value", "null_scores")
    for extra in ("total_size", "description", "observed_rate", "expected_rate", "unbounded",
                  "search", "bins", "top", "history", "p_scan", "num_rescans"):
        assert extra in ScanResult._fields
    assert scan.IJDIResult is ScanResult  # one result type for every scan


@pytest.mark.parametrize("varying", [True, False])
def test_bias_scan_finds_planted_and_is_consistent(varying):
    df, y, p = _data(varying=varying)
    res = bias_scan(df, y, p, penalty=0.5)
    assert res.subset == {"race": ("b",), "age": (30, 40)}
    assert res.converged and res.q > 1
    assert math.isnan(res.p_value) and res.null_scores is None
    inside = (df["race"] == "b").to_numpy() & df["age"].isin([30, 40]).to_numpy()
    np.testing.assert_array_equal(res.mask, inside)
    assert res.size == inside.sum()
    assert res.score == pytest.approx(_np_score(y[inside], p[inside]) - 0.5 * 3, abs=1e-6)
    again = score_subset(df, y, p, res.listed, penalty=0.5)
    assert again.score == pytest.approx(res.score, abs=1e-9)
    assert again.subset == res.subset and again.size == res.size


def test_determinism_default_key_and_negative_direction():
    df, y, p = _data(seed=3)
    a = bias_scan(df, y, p, direction="negative", penalty=0.1)
    b = bias_scan(df, y, p, direction="negative", penalty=0.1, key=jax.random.key(0))
    assert a.subset == b.subset and a.score == b.score
    assert a.q <= 1
    rows = a.mask
    k = sum(len(v) for v in a.listed.values())
    assert a.score == pytest.approx(_np_score(y[rows], p[rows], "negative") - 0.1 * k, abs=1e-6)


def test_score_subset_matches_numpy_and_penalty_counting():
    df, y, p = _data(seed=5)
    rows = (df["sex"] == "F").to_numpy()
    ref = _np_score(y[rows], p[rows])
    r1 = score_subset(df, y, p, {"sex": ["F"]}, penalty=0.0)
    assert r1.score == pytest.approx(ref, abs=1e-6)
    assert r1.size == rows.sum() and r1.subset == {"sex": ("F",)}
    # an attribute listed with all its values still pays, and is dropped from `subset`
    r2 = score_subset(df, y, p, {"sex": "F", "race": ["a", "b", "c"]}, penalty=0.25)
    assert r2.score == pytest.approx(ref - 0.25 * 4, abs=1e-6)
    assert r2.subset == {"sex": ("F",)}
    assert r2.listed == {"sex": ("F",), "race": ("a", "b", "c")}
    whole = score_subset(df, y, p, {}, penalty=3.0)
    assert whole.score == pytest.approx(_np_score(y, p), abs=1e-6) and whole.size == len(y)


def test_array_input_with_value_labels():
    df, y, p = _data(seed=1)
    codes = np.stack([pd.factorize(df[c], sort=True)[0] for c in df.columns], axis=1)
    labels = [sorted(df[c].unique()) for c in df.columns]
    res_df = bias_scan(df, y, p, penalty=0.5)
    res_arr = bias_scan(codes, y, p, penalty=0.5, value_labels=labels)
    assert res_arr.score == pytest.approx(res_df.score, abs=1e-9)
    assert res_arr.subset == {{"sex": 0, "race": 1, "age": 2}[k]: v for k, v in res_df.subset.items()}


def test_categorical_and_float_columns():
    df, y, p = _data(seed=2)
    df2 = df.assign(race=df["race"].astype("category"), age=df["age"].astype(float))
    a = bias_scan(df, y, p, penalty=0.5)
    b = bias_scan(df2, y, p, penalty=0.5)
    assert a.score == pytest.approx(b.score, abs=1e-9)
    assert set(a.subset) == set(b.subset)


def _err(match, *args, **kwargs):
    with pytest.raises(ValueError, match=match):
        bias_scan(*args, **kwargs)


def test_bad_inputs():
    df, y, p = _data(n=50)
    _err("column 'cont'.*continuous", df.assign(cont=np.linspace(0, 1, 50)), y, p)
    df_nan = df.assign(race=df["race"].where(np.arange(50) != 3, None))
    _err("column 'race'.*missing", df_nan, y, p)
    df_nan2 = df.assign(age=df["age"].astype(float).where(np.arange(50) != 3))
    _err("column 'age'.*missing", df_nan2, y, p)
    _err("observations: must be binary", df, np.where(y == 1, 2, 0), p)
    _err("expectations: probabilities must lie in", df, y, p + 0.5)
    _err("expectations:.*NaN", df, y, np.where(np.arange(50) == 0, np.nan, p))
    _err("length mismatch", df, y[:-1], p)
    _err("length mismatch", df, y, p[:-1])
    _err("penalty", df, y, p, penalty=-1.0)
    _err("direction: must be one of", df, y, p, direction="up")
    _err("num_restarts: must be an integer", df, y, p, num_restarts=0)
    _err("q_bounds", df, y, p, q_bounds=(2.0, 10.0))
    _err("basis: must be one of", df, y, p, basis="spline")
    with pytest.raises(ValueError, match="subset: unknown column 'nope'"):
        score_subset(df, y, p, {"nope": ["x"]})
    with pytest.raises(ValueError, match="value 'zz' of column 'race' does not occur"):
        score_subset(df, y, p, {"race": ["zz"]})


def test_bias_scan_randomization_option():
    """bias_scan(num_replicates=R) runs the search-aware test: a strong effect gives 1/(R+1)."""
    df, y, p = _data(varying=False)
    res = bias_scan(df, y, p, penalty=0.5, num_samples=19, key=jax.random.key(3))
    assert res.subset == {"race": ("b",), "age": (30, 40)}
    assert res.p_value == pytest.approx(1 / 20)
    assert np.asarray(res.null_scores).shape == (19,)
    assert np.all(np.asarray(res.null_scores) < res.score)
    with pytest.raises(ValueError, match="null"):
        bias_scan(df, y, p, num_samples=5, null="bootstrap", key=0)
    with pytest.raises(ValueError, match="num_samples"):
        bias_scan(df, y, p, num_samples=-1)
    # an int seed is a key; the old name still works, with a DeprecationWarning
    with pytest.warns(DeprecationWarning, match="num_samples"):
        old = bias_scan(df, y, p, penalty=0.5, num_replicates=19, key=3)
    assert old.p_value == res.p_value
    np.testing.assert_array_equal(old.null_scores, res.null_scores)
    # a randomization test draws random numbers: it needs an explicit key
    with pytest.raises(TypeError, match="^key: required when num_samples > 0"):
        bias_scan(df, y, p, num_samples=5)
    with pytest.raises(TypeError, match="^key"):
        bias_scan(df, y, p, num_samples=5, key="seed")


# ---------------------------------------------------------------------------------------------
# One convention: probabilities, aliases, orientation, words, bins, the q cap


def test_binary_expectations_are_refused():
    df, y, p = _data(n=50)
    with pytest.raises(ValueError, match="^expectations: every value is 0 or 1.*fpr_scan"):
        bias_scan(df, y, (p > 0.5).astype(int))


def test_group_alias_and_description():
    df, y, p = _data()
    a = bias_scan(df, y, p, penalty=0.5)
    b = bias_scan(group=df, observations=y, expectations=p, penalty=0.5)
    assert a.subset == b.subset and a.score == b.score
    with pytest.raises(ValueError, match="^group: an alias of data"):
        bias_scan(df, y, p, group=df)
    with pytest.raises(ValueError, match="^data: required"):
        bias_scan(observations=y, expectations=p)
    assert a.total_size == a.size == int(a.mask.sum())
    assert a.observed_rate == pytest.approx(y[a.mask].mean())
    assert a.expected_rate == pytest.approx(p[a.mask].mean())
    assert a.description.startswith("race in {b} and age in {30, 40} (")
    assert "more often than the expectations predict" in a.description
    assert not a.unbounded


def test_unbounded_flag_and_zero_expectation_warning():
    df, y, p = _data()
    y = y.copy()
    inside = (df["race"] == "b").to_numpy() & df["age"].isin([30, 40]).to_numpy()
    y[inside] = 1  # every row of the planted subgroup positive: q runs to its cap
    res = bias_scan(df, y, p, penalty=0.5)
    assert res.subset == {"race": ("b",), "age": (30, 40)}
    assert res.unbounded and res.q == pytest.approx(1e6)
    assert "unbounded: every row of S has outcome 1" in res.description
    wider = bias_scan(df, y, p, penalty=0.5, q_bounds=(1e-3, 1e3))
    assert wider.unbounded and wider.score < res.score  # the score measures the cap
    # p = 0 with y = 1 inside the subgroup: the score depends on q_bounds -> warning
    p0 = np.where(inside & (np.arange(len(y)) % 7 == 0), 0.0, p)
    with pytest.warns(RuntimeWarning, match="expectation 0 but outcome 1.*q_bounds"):
        bias_scan(df, y, p0, penalty=0.5)


def test_bins_and_high_cardinality_columns():
    df, y, p = _data()
    rng = np.random.default_rng(0)
    cont = df.assign(income=rng.lognormal(10, 1, len(df)))
    with pytest.raises(ValueError, match="^data: column 'income' holds non-integer floats.*bins="):
        bias_scan(cont, y, p, penalty=0.5)
    many = df.assign(age=rng.integers(18, 90, len(df)))
    with pytest.raises(ValueError, match="^data: column 'age' has [0-9]+ distinct values.*bins="):
        bias_scan(many, y, p, penalty=0.5)
    res = bias_scan(cont, y, p, penalty=0.5, bins=4)
    edges = res.bins["income"]
    assert len(edges) == 5 and edges[0] == cont["income"].min() and edges[-1] == cont["income"].max()
    np.testing.assert_allclose(edges, np.quantile(cont["income"], np.linspace(0, 1, 5)))
    # named bins: the labels are the intervals, in order
    r2 = score_subset(cont, y, p, {"income": [f"[{edges[0]:.6g}, {edges[1]:.6g}]"]}, bins=4)
    assert r2.size == int((cont["income"] <= edges[1]).sum())  # the one rule: (a, b], first [a, b]
    with pytest.raises(ValueError, match="^bins:"):
        bias_scan(cont, y, p, bins=1)
    with pytest.raises(ValueError, match="^bins: column 'sex' is not numeric"):
        bias_scan(df, y, p, bins={"sex": 2})
    assert score_subset(many, y, p, {}, max_values=None).size == len(y)  # the limit can be lifted


def test_estimate_true_probabilities_refuses_a_huge_design():
    import pandas as pd

    from ofijax.scan import estimate_true_probabilities

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.integers(0, 10_000, 20_000).astype(str)})
    with pytest.raises(ValueError, match=r"^data: the one-hot design has"):
        estimate_true_probabilities(X, rng.integers(0, 2, 20_000))
