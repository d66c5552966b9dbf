"""Issue #37, trust round 3 (the scans): pandas rows aligned or refused, probabilities thresholded
only on purpose, duplicate columns and missing values refused in words, docstrings without
control characters, the cell scans' descriptions and ``num_samples``, ``audit_counts``'s method.

Every check compares with an independent reference: the call on NumPy arrays in ``data``'s row
order (reindexed by pandas/NumPy here), counts made with NumPy, or the row-level scan.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax import scan, stats

N = 120


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.choice(["u", "v", "w"], N), "b": rng.integers(0, 2, N)},
                     index=rng.permutation(np.arange(500, 500 + N)))
    y = rng.integers(0, 2, N)
    # predictions: the benefit withheld more often where a == "u"
    scores = np.clip(rng.random(N) - 0.25 * (X["a"].to_numpy() == "u"), 0, 1)
    p = np.clip(0.2 + 0.6 * rng.random(N), 0, 1)
    return X, y, scores, p


X, Y, SCORES, P = _data()
PRED = (SCORES >= 0.5).astype(int)
PERM = np.random.default_rng(1).permutation(N)


def _series(values):
    """``values`` (in X's row order) as a Series on X's index, rows shuffled."""
    return pd.Series(values, index=X.index).iloc[PERM]


def _same(a, b):
    assert a.subset == b.subset
    assert a.score == b.score  # bit for bit: the same rows reach the same engine
    assert a.size == b.size and a.total_size == b.total_size
    np.testing.assert_array_equal(a.mask, b.mask)
    assert a.description == b.description


# ---------------------------------------------------------------------------------------------
# 2. pandas inputs aligned on their index or refused


def test_shuffled_series_give_the_aligned_result_rate_scans():
    for fn in (scan.fpr_scan, scan.tpr_scan):
        ref = fn(X, Y, PRED)  # NumPy arrays in X's row order: the reference
        _same(fn(X, _series(Y), _series(PRED)), ref)
    # the scores (with a shuffled per-row threshold) are thresholded after alignment
    thr = np.where(np.arange(N) % 3 == 0, 0.4, 0.6)
    ref = scan.fpr_scan(X, Y, (SCORES >= thr).astype(int))
    got = scan.fpr_scan(X, _series(Y), _series(SCORES), threshold=_series(thr))
    assert got.subset == ref.subset and got.score == ref.score
    np.testing.assert_array_equal(got.mask, ref.mask)


def test_shuffled_series_give_the_aligned_result_ijdi_and_bias():
    ref = scan.ijdi_scan(X, Y, PRED, P, lam=0.5, num_restarts=5)
    _same(scan.ijdi_scan(X, _series(Y), _series(PRED), _series(P), lam=0.5, num_restarts=5), ref)
    ref = scan.bias_scan(X, Y, P, penalty=0.1)
    _same(scan.bias_scan(X, _series(Y), _series(P), penalty=0.1), ref)
    sub = {"a": ["u"]}
    _same(scan.score_subset(X, _series(Y), _series(P), sub),
          scan.score_subset(X, Y, P, sub))
    # the data frame itself shuffled against NumPy-ordered... no: a shuffled *frame* with
    # Series on the original order: rows follow the frame (the first pandas argument)
    Xs = X.iloc[PERM]
    y_s = pd.Series(Y, index=X.index)
    ref = scan.bias_scan(Xs, y_s.reindex(Xs.index).to_numpy(),
                         pd.Series(P, index=X.index).reindex(Xs.index).to_numpy(), penalty=0.1)
    _same(scan.bias_scan(Xs, y_s, pd.Series(P, index=X.index), penalty=0.1), ref)


def test_shuffled_series_randomization_and_top_k():
    kw = dict(num_samples=3, key=jax.random.key(2), top_k=2)
    ref = scan.fpr_scan(X, Y, PRED, **kw)
    got = scan.fpr_scan(X, _series(Y), _series(PRED), **kw)
    _same(got, ref)
    np.testing.assert_array_equal(got.null_scores, ref.null_scores)
    assert got.p_value == ref.p_value
    assert len(got.top) == len(ref.top)
    for a, b in zip(got.top, ref.top, strict=True):
        _same(a, b)


def test_shuffled_series_estimate_true_probabilities():
    ref = scan.estimate_true_probabilities(X, Y)
    np.testing.assert_array_equal(scan.estimate_true_probabilities(X, _series(Y)), ref)


def test_chebyshev_cell_features_aligned():
    cells = np.arange(N) % 7
    ref = scan.chebyshev_cell_features(P, cells, 7)
    got = scan.chebyshev_cell_features(_series(P), _series(cells), 7)
    # the same rows summed in another order: equal to round-off only
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    # shuffled against each other: aligned, not matched by position
    p_s = pd.Series(P, index=X.index)
    c_s = pd.Series(cells, index=X.index).iloc[PERM]
    np.testing.assert_allclose(scan.chebyshev_cell_features(p_s, c_s, 7), ref, atol=1e-12)


@pytest.mark.parametrize("arg", ["y_true", "y_pred"])
def test_mismatched_labels_name_the_argument_rate_scans(arg):
    other = pd.Series(Y, index=np.arange(N))  # labels 0..N-1: not X's
    args = {"y_true": Y, "y_pred": PRED, arg: other}
    for fn in (scan.fpr_scan, scan.tpr_scan):
        with pytest.raises(ValueError, match=f"^{arg}: its pandas index"):
            fn(X, args["y_true"], args["y_pred"])


def test_mismatched_labels_name_the_argument_other_scans():
    bad = pd.Series(P, index=np.arange(N))
    with pytest.raises(ValueError, match="^p_true: its pandas index"):
        scan.ijdi_scan(X, Y, PRED, bad, lam=1.0)
    with pytest.raises(ValueError, match="^expectations: its pandas index"):
        scan.bias_scan(X, Y, bad)
    with pytest.raises(ValueError, match="^observations: its pandas index"):
        scan.score_subset(X, pd.Series(Y, index=np.arange(N)), P, {})
    with pytest.raises(ValueError, match="^y_true: its pandas index"):
        scan.estimate_true_probabilities(X, pd.Series(Y, index=np.arange(N)))
    with pytest.raises(ValueError, match="^threshold: its pandas index"):
        scan.fpr_scan(X, Y, SCORES, threshold=pd.Series(0.5, index=np.arange(N)))
    # a Series missing some of X's labels
    with pytest.raises(ValueError, match="^y_pred: its pandas index lacks 1"):
        scan.fpr_scan(X, Y, _series(PRED).iloc[1:])


# ---------------------------------------------------------------------------------------------
# 3. probabilities become decisions only through a threshold given, or with a warning


@pytest.mark.parametrize("fn", [scan.fpr_scan, scan.tpr_scan])
def test_default_threshold_warns_and_is_recorded(fn):
    with pytest.warns(UserWarning, match=r"threshold 0\.5.*Pass threshold=") as rec:
        got = fn(X, Y, SCORES)
    assert fn.__name__ in str(rec[0].message)
    assert rec[0].filename == __file__  # points at the caller
    ref = fn(X, Y, (SCORES >= 0.5).astype(int))  # NumPy's decisions
    assert got.subset == ref.subset and got.score == ref.score
    np.testing.assert_array_equal(got.mask, ref.mask)
    assert got.description == ref.description + (
        "; predictions thresholded at 0.5 (default; y_pred ≥ 0.5 → 1)")


def test_explicit_threshold_is_silent_and_recorded():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = scan.fpr_scan(X, Y, SCORES, threshold=0.6, threshold_rule="gt")
        ref = scan.fpr_scan(X, Y, (SCORES > 0.6).astype(int))
        binary = scan.fpr_scan(X, Y, PRED, threshold=0.5)  # 0/1 pass unchanged
    assert got.score == ref.score and got.subset == ref.subset
    assert got.description == ref.description + (
        "; predictions thresholded at 0.6 (given; y_pred > threshold → 1)")
    assert "thresholded" not in binary.description and "thresholded" not in ref.description


def test_ijdi_threshold_rule():
    with pytest.warns(UserWarning, match="^ijdi_scan: y_pred holds values other than 0/1") as rec:
        got = scan.ijdi_scan(X, Y, SCORES, P, lam=0.5, num_restarts=5)
    assert rec[0].filename == __file__
    ref = scan.ijdi_scan(X, Y, PRED, P, lam=0.5, num_restarts=5)
    assert got.score == ref.score and got.subset == ref.subset
    assert got.description.endswith("predictions thresholded at 0.5 (default; y_pred ≥ 0.5 → 1)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = scan.ijdi_scan(X, Y, SCORES, P, lam=0.5, num_restarts=5, threshold=0.5)
    assert given.score == ref.score
    assert given.description.endswith("(given; y_pred ≥ threshold → 1)")


def test_threshold_default_is_none():
    for fn in (scan.fpr_scan, scan.tpr_scan, scan.ijdi_scan):
        assert inspect.signature(fn).parameters["threshold"].default is None


# ---------------------------------------------------------------------------------------------
# 9. duplicate column names; 12. missing values counted in all rows and in the scanned ones


def test_duplicate_columns_refused_by_every_scan():
    D = pd.DataFrame(np.c_[X["b"].to_numpy(), X["b"].to_numpy(), X["b"].to_numpy()],
                     columns=["a", "a", "c"])
    msg = r"^data: duplicate column name\(s\) \['a'\]"
    calls = [lambda: scan.fpr_scan(D, Y, PRED), lambda: scan.tpr_scan(D, Y, PRED),
             lambda: scan.ijdi_scan(D, Y, PRED, P, lam=1.0), lambda: scan.bias_scan(D, Y, P),
             lambda: scan.score_subset(D, Y, P, {}),
             lambda: scan.estimate_true_probabilities(D, Y)]
    for call in calls:
        with pytest.raises(ValueError, match=msg):
            call()


def test_missing_values_counted_in_all_rows_and_the_scanned_ones():
    Xm = X.copy()
    a = Xm["a"].to_numpy(dtype=object, copy=True)
    a[:28] = None
    Xm["a"] = a
    # the scan's rows: FPR-Scan scans the beneficial true outcome (y_true == 1)
    used = int(np.sum(pd.isna(a) & (Y == 1)))
    assert 0 < used < 28
    msg = (rf"^data: column 'a' has 28 missing \(NaN/None\) values \({used} among the "
           rf"{int((Y == 1).sum())} rows this scan uses, side='negative'\)")
    with pytest.raises(ValueError, match=msg):
        scan.fpr_scan(Xm, Y, PRED)
    used_pos = int(np.sum(pd.isna(a) & (Y == 0)))
    with pytest.raises(ValueError, match=rf"has 28 missing .*\({used_pos} among"):
        scan.tpr_scan(Xm, Y, PRED)
    # missing values only among the rows of the other class are refused too (total_size counts
    # every row), and the message says none are among the scanned rows
    Xo = X.copy()
    b = Xo["b"].to_numpy(dtype=float)
    b[np.flatnonzero(Y == 0)[:3]] = np.nan
    Xo["b"] = b
    with pytest.raises(ValueError, match=r"^data: column 'b' has 3 missing .*\(0 among"):
        scan.fpr_scan(Xo, Y, PRED)


# ---------------------------------------------------------------------------------------------
# 13. no control characters in any public docstring

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _public_objects():
    mods = [ofijax] + [importlib.import_module(m.name)
                       for m in pkgutil.walk_packages(ofijax.__path__, "ofijax.") if m.ispkg]
    seen: set = set()
    for mod in mods:
        yield mod.__name__, mod
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{mod.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr_name, attr in vars(obj).items():
                    if attr_name.startswith("_") and attr_name != "__init__":
                        continue
                    if isinstance(attr, classmethod | staticmethod):
                        attr = attr.__func__
                    if isinstance(attr, property):
                        attr = attr.fget
                    if callable(attr):
                        yield f"{mod.__name__}.{name}.{attr_name}", attr


def test_public_docstrings_have_no_control_characters():
    objs = list(_public_objects())
    names = {q for q, _ in objs}
    assert {"ofijax.scan.fpr_scan", "ofijax.scan.ijdi_scan", "ofijax.stats.fpr_scan_cells"} <= names
    bad = [f"{q}: {sorted(set(_CONTROL.findall(o.__doc__)))!r}" for q, o in objs
           if isinstance(getattr(o, "__doc__", None), str) and _CONTROL.search(o.__doc__)]
    assert bad == []
    # the formulas kept their backslashes
    assert r"\bar p_b" in scan.fpr_scan.__doc__ and r"\textstyle" in scan.fpr_scan.__doc__
    assert r"\mathrm{scan}} = \bar p_b" in scan.ijdi_scan.__doc__


def test_control_character_check_can_fail():
    assert _CONTROL.search("F(S) = \bar p") and _CONTROL.search("\textstyle")
    assert not _CONTROL.search("line one\nline two")


# ---------------------------------------------------------------------------------------------
# 17. the cell scans: description, num_samples (num_replicates deprecated)


def _cells(frame, y, pred):
    """CellStats of rows, aggregated with pandas (an independent construction)."""
    d = frame.assign(_label=y, _pred=pred)
    g = d.groupby(list(frame.columns) + ["_label"], sort=True).agg(
        n=("_pred", "size"), positives=("_pred", "sum")).reset_index()
    return stats.CellStats(tuple(frame.columns),
                           tuple(g[c].to_numpy() for c in frame.columns),
                           g["_label"].to_numpy(np.int8), g["n"].to_numpy(np.int64),
                           g["positives"].to_numpy(np.int64))


@pytest.mark.parametrize("b", [1, 0])
def test_cell_scan_description_matches_the_row_scan(b):
    cs = _cells(X, Y, PRED)
    for cell_fn, row_fn in ((stats.fpr_scan_cells, scan.fpr_scan),
                            (stats.tpr_scan_cells, scan.tpr_scan)):
        rc, rr = cell_fn(cs, beneficial_label=b), row_fn(X, Y, PRED, beneficial_label=b)
        assert rc.subset == rr.subset and rc.size == rr.size
        assert rc.total_size == rr.total_size
        assert rc.observed_rate == pytest.approx(rr.observed_rate, abs=1e-12)
        assert rc.expected_rate == pytest.approx(rr.expected_rate, abs=1e-12)
        assert rc.description == rr.description


def test_cell_scan_description_no_subgroup_and_unbounded():
    # nothing to find: every cell at the same rate
    cs = stats.CellStats(("g",), (np.array(["a", "b"]),), np.array([0, 0], np.int8),
                         np.array([100, 100]), np.array([50, 50]))
    r = stats.fpr_scan_cells(cs, beneficial_label=0)
    assert r.score == 0 and r.description == (
        "FPR-Scan: no subgroup detected among the rows whose true outcome is beneficial "
        "(y_true = 0)")
    # every scanned row of a cell predicted harmful: q at its cap
    cs = stats.CellStats(("g",), (np.array(["a", "b"]),), np.array([0, 0], np.int8),
                         np.array([40, 100]), np.array([40, 10]))
    r = stats.fpr_scan_cells(cs, beneficial_label=0, q_bounds=(1e-3, 1e3))
    assert r.unbounded and "unbounded: " in r.description and "its cap 1000" in r.description


# two cells per side, the same arrays for both tests below: one replicate program compiled
_CODES, _N, _POS = np.array([[0], [1]]), np.array([100, 100]), np.array([88, 10])
_CS = stats.CellStats(("g",), (np.array(["a", "b", "a", "b"]),), np.array([0, 0, 1, 1], np.int8),
                      np.r_[_N, _N], np.r_[_POS, _POS])


def test_cell_scans_num_samples_and_deprecated_num_replicates():
    for fn in (stats.fpr_scan_cells, stats.tpr_scan_cells):
        assert "num_samples" in inspect.signature(fn).parameters
        new = fn(_CS, key=3, num_samples=5, beneficial_label=0)
        with pytest.warns(DeprecationWarning, match="num_replicates is deprecated"):
            old = fn(_CS, key=3, num_replicates=5, beneficial_label=0)
        np.testing.assert_array_equal(new.null_scores, old.null_scores)
        assert new.p_value == old.p_value and new.null_scores.shape == (5,)
        # p = (1 + #{F* >= F}) / (R + 1), counted with NumPy
        assert new.p_value == (1 + np.sum(new.null_scores >= new.score)) / 6
        assert f"; p = {new.p_value:.3g}" in new.description
        with pytest.raises(ValueError, match="^num_samples: given together"):
            with pytest.warns(DeprecationWarning):
                fn(_CS, key=3, num_samples=4, num_replicates=5)


def test_scan_cells_num_samples_alias():
    new = scan.scan_cells(_CODES, [2], _N, _POS, key=jax.random.key(1), num_samples=5)
    with pytest.warns(DeprecationWarning, match="num_replicates is deprecated"):
        old = scan.scan_cells(_CODES, [2], _N, _POS, key=jax.random.key(1), num_replicates=5)
    np.testing.assert_array_equal(new.null_scores, old.null_scores)
    assert new.null_scores.shape == (5,)


# ---------------------------------------------------------------------------------------------
# #36: audit_counts's method


def test_audit_counts_method_auto_passed_through(monkeypatch):
    assert inspect.signature(stats.audit_counts).parameters["method"].default == "auto"
    doc = stats.audit_counts.__doc__
    assert '"auto" | "exact" | "saddlepoint" |' in doc and '"monte_carlo"' in doc
    seen = []
    audit_module = inspect.getmodule(stats.audit_counts)
    monkeypatch.setattr(audit_module, "audit_from_counts",
                        lambda *a, **kw: seen.append(kw["method"]))
    gc = stats.GroupCounts(("i", "j"), ("group",), np.array([[0, 1, 0, 5], [0, 7, 0, 11]]))
    for m in (None, "exact", "saddlepoint", "monte_carlo"):
        stats.audit_counts(0, gc) if m is None else stats.audit_counts(0, gc, method=m)
    assert seen == ["auto", "exact", "saddlepoint", "monte_carlo"]


def test_describe_rate_scan_is_the_row_scans_wording():
    """scan.describe_rate_scan gives ScanResult.description from the result's numbers (one
    wording for row and cell scans); a bad side is one ValueError naming it."""
    import math as _math

    rng = np.random.default_rng(5)
    d = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 400), "b": rng.choice(["u", "v"], 400)})
    y = rng.integers(0, 2, 400)
    p = np.where((d.a == "x") & (y == 1), rng.random(400) < 0.3, y).astype(int)
    r = scan.fpr_scan(d, y, p, key=0)
    assert r.score > 0
    text = scan.describe_rate_scan("negative", 1, r.subset, r.total_size, r.size, r.score, r.q,
                                   r.observed_rate, r.expected_rate, r.unbounded,
                                   scan.DEFAULT_Q_BOUNDS[1], _math.nan)
    assert text == r.description
    with pytest.raises(ValueError, match="^side: "):
        scan.describe_rate_scan("both", 1, {}, 0, 0, 0.0, 1.0, 0.0, 0.0, False, 1e6)
