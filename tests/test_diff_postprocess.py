"""OFIThresholdOptimizer (ofijax.diff): B-parity post-processing against brute-force searches.

The references enumerate every threshold rule per group with exact ``Fraction`` arithmetic: all
combinations (deterministic rules) or the concave hull built from all pairs of rules (randomized
mixtures), so the package's vectorized search is checked against an independent oracle.
"""

from __future__ import annotations

import itertools
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ofijax.diff import OFIThresholdOptimizer


class FixedScorer:
    """A prefit 'estimator' whose score of class 1 is the first column of X."""

    classes_ = np.array([0, 1])

    def predict_proba(self, x):
        s = np.asarray(x, dtype=float)[:, 0]
        return np.stack([1 - s, s], axis=1)


def _data(seed, sizes=(30, 24, 18), grid=10):
    rng = np.random.default_rng(seed)
    g = np.concatenate([np.full(n, i) for i, n in enumerate(sizes)])
    s = np.round(rng.uniform(0, 1, g.size) * grid) / grid  # coarse scores: many ties
    y = (rng.uniform(0, 1, g.size) < 0.2 + 0.6 * s - 0.1 * g).astype(int)
    return s[:, None], y, g


def _points(s, y, w):
    """Exact (B, U) of every threshold rule 'score >= t' of one group (t over its scores, +inf)."""
    n, pos = len(y), int(y.sum())
    out = []
    for t in [np.inf, *np.unique(s)]:
        sel = s >= t
        tp, fp = int((sel & (y == 1)).sum()), int((sel & (y == 0)).sum())
        fn, tn = pos - tp, (n - pos) - fp
        u = sum(Fraction(wi) * c for wi, c in zip(w, (tp, fn, fp, tn)))
        out.append((Fraction(tp + fp - pos, n), u))
    return sorted(out)


def _hull_max(pts, lo, hi):
    """max over x in [lo, hi] of the concave hull of pts (all pairs; max at an end or a vertex)."""
    xs = [x for x in (lo, hi)] + [b for b, _ in pts if lo <= b <= hi]
    best = None
    for x in xs:
        for (bi, ui), (bj, uj) in itertools.product(pts, pts):
            if bi <= x <= bj:
                val = ui if bi == bj else ui + (uj - ui) * (x - bi) / (bj - bi)
                best = val if best is None else max(best, val)
    return best


def _brute_randomized(x, y, g, w, tol):
    groups = [_points(x[g == k, 0], y[g == k], w) for k in np.unique(g)]
    tol = Fraction(tol)
    c_lo = max(p[0][0] for p in groups) - tol
    c_hi = min(p[-1][0] for p in groups)
    cands = {c_lo, c_hi} | {b - d for p in groups for b, _ in p for d in (0, tol)}
    best = None
    for c in cands:
        if not c_lo <= c <= c_hi:
            continue
        vals = [_hull_max(p, max(c, p[0][0]), min(c + tol, p[-1][0])) for p in groups]
        total = sum(vals)
        best = total if best is None else max(best, total)
    return best / len(y)


def _brute_deterministic(x, y, g, w, tol):
    groups = [_points(x[g == k, 0], y[g == k], w) for k in np.unique(g)]
    combos = [
        (max(b for b, _ in c) - min(b for b, _ in c), sum(u for _, u in c))
        for c in itertools.product(*groups)
    ]
    feasible = [u for spread, u in combos if spread <= Fraction(tol)]
    if feasible:
        return max(feasible) / len(y), Fraction(tol)
    smallest = min(spread for spread, _ in combos)
    return max(u for spread, u in combos if spread == smallest) / len(y), smallest


def _realized(post, x, y, g, w):
    """Expected B per group and objective of the fitted rule, recomputed from predict_proba."""
    p = post.predict_proba(x, sensitive_features=g)[:, 1]
    b = np.array([(p[g == k].sum() - y[g == k].sum()) / (g == k).sum() for k in np.unique(g)])
    cells = np.stack([p * y, (1 - p) * y, p * (1 - y), (1 - p) * (1 - y)], 1)
    return b, float((cells @ np.asarray(w, float)).sum() / len(y))


OBJECTIVES = [("accuracy", (1, 0, 0, 1)), ((2.0, -1.0, -3.0, 1.0), (2, -1, -3, 1))]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tol", [0.0, 0.05])
@pytest.mark.parametrize("objective,w", OBJECTIVES)
def test_randomized_optimum_matches_brute_force(seed, tol, objective, w):
    x, y, g = _data(seed)
    post = OFIThresholdOptimizer(FixedScorer(), prefit=True, tolerance=tol, objective=objective)
    post.fit(x, y, sensitive_features=g)
    best = _brute_randomized(x, y, g, w, tol)
    b, obj = _realized(post, x, y, g, w)
    assert b.max() - b.min() <= tol + 1e-12
    np.testing.assert_allclose(b, post.fit_marginal_benefit_, atol=1e-12)
    assert obj == pytest.approx(float(best), abs=1e-9)
    assert post.fit_objective_ == pytest.approx(float(best), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 2])
@pytest.mark.parametrize("tol", [0.0, 0.04, 0.15])
def test_deterministic_optimum_matches_brute_force(seed, tol):
    x, y, g = _data(seed, sizes=(20, 16, 12), grid=8)
    post = OFIThresholdOptimizer(FixedScorer(), prefit=True, tolerance=tol, randomize=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        post.fit(x, y, sensitive_features=g)
    best, width = _brute_deterministic(x, y, g, (1, 0, 0, 1), tol)
    relaxed = width > Fraction(tol)
    assert any("tolerance" in str(r.message) for r in rec) == relaxed
    assert np.all(post.mix_ == 0) and np.all(post.thresholds_[:, 0] == post.thresholds_[:, 1])
    pred = post.predict(x, sensitive_features=g)
    b = [Fraction(int(pred[g == k].sum() - y[g == k].sum()), int((g == k).sum())) for k in range(3)]
    assert max(b) - min(b) <= width
    assert Fraction(int((pred == y).sum()), len(y)) == best
    assert post.fit_objective_ == pytest.approx(float(best), abs=1e-12)


def test_balanced_accuracy_objective_matches_brute_force():
    x, y, g = _data(3)
    pos, neg = Fraction(int(y.sum())), Fraction(int(len(y) - y.sum()))
    n = Fraction(len(y))
    w = (n / (2 * pos), 0, 0, n / (2 * neg))
    post = OFIThresholdOptimizer(FixedScorer(), prefit=True, objective="balanced_accuracy")
    post.fit(x, y, sensitive_features=g)
    assert post.fit_objective_ == pytest.approx(float(_brute_randomized(x, y, g, w, 0.0)), abs=1e-9)


def test_randomized_draws_match_the_mixing_probability():
    x, y, g = _data(0)
    post = OFIThresholdOptimizer(FixedScorer(), prefit=True, random_state=5).fit(
        x, y, sensitive_features=g
    )
    k = int(np.argmax(post.mix_ * (1 - post.mix_)))
    q = post.mix_[k]
    assert 0 < q < 1
    upper, lower = post.thresholds_[k]
    s = lower if lower < upper else upper
    reps = 20_000
    xs, gs = np.full((reps, 1), s), np.full(reps, k)
    draws = post.predict(xs, sensitive_features=gs)
    sd = np.sqrt(q * (1 - q) / reps)
    assert abs(draws.mean() - q) < 5 * sd
    # same seed, same draws; another seed, other draws; expected B over many seeds
    again = post.predict(xs, sensitive_features=gs)
    assert np.array_equal(draws, again)
    assert not np.array_equal(draws, post.predict(xs, sensitive_features=gs, random_state=6))
    bs = []
    for seed in range(200):
        pred = post.predict(x, sensitive_features=g, random_state=seed)
        bs.append([(pred[g == j].sum() - y[g == j].sum()) / (g == j).sum() for j in range(3)])
    mean_b = np.mean(bs, 0)
    se = np.std(bs, 0) / np.sqrt(len(bs)) + 1e-12
    assert np.all(np.abs(mean_b - post.fit_marginal_benefit_) < 5 * se + 1e-12)


def test_results_do_not_depend_on_group_names_or_order():
    x, y, g = _data(4)
    names = np.array(["c", "a", "b"])[g]  # renamed and reordered by sorting
    p1 = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, y, sensitive_features=g)
    p2 = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, y, sensitive_features=names)
    assert p2.groups_ == ("a", "b", "c")
    order = [p2.groups_.index(n) for n in ("c", "a", "b")]
    np.testing.assert_array_equal(p1.thresholds_, p2.thresholds_[order])
    np.testing.assert_array_equal(p1.mix_, p2.mix_[order])
    assert p1.fit_objective_ == p2.fit_objective_


def test_pandas_inputs_are_aligned_on_their_index():
    x, y, g = _data(5)
    idx = pd.Index([f"r{i}" for i in range(len(y))])
    xf = pd.DataFrame(x, index=idx)
    ys, gs = pd.Series(y, index=idx), pd.Series(g, index=idx)
    perm = np.random.default_rng(0).permutation(len(y))
    p1 = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(xf, ys, sensitive_features=gs)
    p2 = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(
        xf, ys.iloc[perm], sensitive_features=gs.iloc[perm]
    )
    np.testing.assert_array_equal(p1.thresholds_, p2.thresholds_)
    a = p1.predict_proba(xf, sensitive_features=gs)
    b = p1.predict_proba(xf, sensitive_features=gs.iloc[perm])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="^sensitive_features"):
        p1.predict(xf, sensitive_features=gs.set_axis(range(len(y))))


def test_beneficial_label_zero_equals_flipped_labels():
    x, y, g = _data(6)
    flipped = FixedScorer()
    p0 = OFIThresholdOptimizer(flipped, prefit=True, beneficial_label=0).fit(
        1 - x, y, sensitive_features=g
    )
    p1 = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, 1 - y, sensitive_features=g)
    np.testing.assert_allclose(p0.fit_marginal_benefit_, p1.fit_marginal_benefit_, atol=1e-12)
    assert p0.fit_objective_ == pytest.approx(p1.fit_objective_, abs=1e-12)
    a = p0.predict(1 - x, sensitive_features=g)
    b = p1.predict(x, sensitive_features=g)
    np.testing.assert_array_equal(a, 1 - b)


def test_default_estimator_decision_function_and_one_group():
    x, y, g = _data(7)
    x2 = np.concatenate([x, x > 0.5], 1).astype(float)  # coarse: few distinct scores
    post = OFIThresholdOptimizer().fit(x2, y, sensitive_features=g)
    assert post.fit_max_abs_ofi_ < 1e-12
    dec = OFIThresholdOptimizer(post.estimator_, prefit=True, predict_method="decision_function")
    dec.fit(x2, y, sensitive_features=g)
    # the logistic score is monotone in the decision function: same selections, same optimum
    assert dec.fit_objective_ == pytest.approx(post.fit_objective_, abs=1e-12)
    one = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, y, sensitive_features=np.zeros(len(y)))
    acc = max(((x[:, 0] >= t) == y).mean() for t in [np.inf, *np.unique(x)])
    assert one.fit_objective_ == pytest.approx(acc, abs=1e-12)


def test_sklearn_clone_pickle_pipeline_params():
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y, g = _data(8)
    post = OFIThresholdOptimizer(LogisticRegression(C=0.5), tolerance=0.01, random_state=3)
    assert post.get_params()["estimator__C"] == 0.5
    post.set_params(estimator__C=2.0, tolerance=0.02)
    assert post.estimator.C == 2.0 and post.tolerance == 0.02
    c = clone(post)
    assert c.get_params(deep=False).keys() == post.get_params(deep=False).keys()
    assert c.tolerance == 0.02 and not hasattr(c, "thresholds_")
    post.fit(x, y, sensitive_features=g)
    back = pickle.loads(pickle.dumps(post))
    np.testing.assert_array_equal(
        back.predict(x, sensitive_features=g), post.predict(x, sensitive_features=g)
    )
    pipe = make_pipeline(StandardScaler(), OFIThresholdOptimizer())
    pipe.fit(x, y, ofithresholdoptimizer__sensitive_features=g)
    assert pipe.predict(x, sensitive_features=g).shape == y.shape
    assert "tolerance=0.02" in repr(post)


def test_errors_name_the_argument():
    from sklearn.exceptions import NotFittedError

    x, y, g = _data(9)
    est = FixedScorer()
    with pytest.raises(NotFittedError, match="^X"):
        OFIThresholdOptimizer(est, prefit=True).predict(x, sensitive_features=g)
    bad = [
        ({"tolerance": -0.1}, "^tolerance"),
        ({"constraint": "equalized_odds"}, "^constraint"),
        ({"objective": "f1"}, "^objective"),
        ({"objective": (1, 0, 0)}, "^objective"),
        ({"beneficial_label": 2}, "^beneficial_label"),
        ({"predict_method": "score"}, "^predict_method"),
    ]
    for kwargs, pat in bad:
        with pytest.raises(ValueError, match=pat):
            OFIThresholdOptimizer(est, prefit=True, **kwargs).fit(x, y, sensitive_features=g)
    with pytest.raises(TypeError, match="^randomize"):
        OFIThresholdOptimizer(est, prefit=True, randomize="yes").fit(x, y, sensitive_features=g)
    with pytest.raises(ValueError, match="^estimator"):
        OFIThresholdOptimizer(prefit=True).fit(x, y, sensitive_features=g)
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="^estimator: prefit=True but the estimator is not fitted"):
        OFIThresholdOptimizer(LogisticRegression(), prefit=True).fit(x, y, sensitive_features=g)
    post = OFIThresholdOptimizer(est, prefit=True).fit(x, y, sensitive_features=g)
    with pytest.raises(ValueError, match="^sensitive_features"):
        post.fit(x, y)
    with pytest.raises(ValueError, match="^sensitive_features.*not seen"):
        post.predict(x, sensitive_features=np.full(len(y), 7))
    with pytest.raises(ValueError, match="^sensitive_features"):
        post.predict(x, sensitive_features=g[:-1])
    with pytest.raises(ValueError, match="^y"):
        OFIThresholdOptimizer(est, prefit=True).fit(x, np.full(len(y), 3), sensitive_features=g)
    with pytest.raises(TypeError, match="^random_state"):
        post.predict(x, sensitive_features=g, random_state=0.5)


def test_integer_weights_equal_repeated_rows_and_x64_does_not_matter():
    import jax

    x, y, g = _data(10)
    w = np.random.default_rng(3).integers(1, 4, len(y))
    rep = np.repeat(np.arange(len(y)), w)
    weighted = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(
        x, y, sensitive_features=g, sample_weight=w
    )
    repeated = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(
        x[rep], y[rep], sensitive_features=g[rep]
    )
    np.testing.assert_array_equal(weighted.thresholds_, repeated.thresholds_)
    np.testing.assert_allclose(weighted.mix_, repeated.mix_, rtol=1e-12)
    assert weighted.fit_objective_ == pytest.approx(repeated.fit_objective_, abs=1e-12)
    with jax.enable_x64(True):
        wide = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, y, sensitive_features=g)
    narrow = OFIThresholdOptimizer(FixedScorer(), prefit=True).fit(x, y, sensitive_features=g)
    np.testing.assert_array_equal(wide.thresholds_, narrow.thresholds_)
    np.testing.assert_array_equal(wide.mix_, narrow.mix_)
