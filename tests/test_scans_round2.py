"""Scans round 2 (#43): degenerate cases, one binning rule, one scan pipeline for every engine,
the global optimum where the space is enumerable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ofijax.auditing import run_scans
from ofijax.scan import fpr_scan, ijdi_scan, tpr_scan

# ---------------------------------------------------------------------------------------------
# (a) degenerate cases: uniform predictions, every row in one class


def _frame(n=20):
    return pd.DataFrame({"a": list("abcab" * (n // 5)), "b": list("xyyxy" * (n // 5))})


@pytest.mark.parametrize("pred", [0, 1])
def test_uniform_predictions_detect_nothing(pred):
    d = _frame()
    n = len(d)
    yp = np.full(n, pred)
    for fn in (fpr_scan, tpr_scan):
        yt = np.ones(n, int) if fn is fpr_scan else np.zeros(n, int)
        r = fn(d, yt, yp)
        assert (r.subset, r.score, r.q, r.size, r.total_size) == ({}, 0.0, 1.0, 0, 0)
        assert "no subgroup" in r.description
        # the randomization test and top-k agree: nothing found, p = 1
        r = fn(d, yt, yp, key=1, num_samples=9, top_k=2)
        assert r.score == 0.0 and r.p_value == 1.0 and len(r.top) == 1
    r = ijdi_scan(d, np.ones(n, int), yp, np.linspace(0.2, 0.8, n), lam=1.0)
    assert r.subset == {} and r.score == 0.0
    assert [s.edge_case for s in r.history] == ["no_subgroup"]


def test_uniform_predictions_in_mixed_labels_still_scan_the_other_class():
    # uniform predictions within the scanned class only: nothing on that side
    d = _frame()
    n = len(d)
    yt = np.tile([1, 0], n // 2)
    yp = np.where(yt == 1, 0, (np.arange(n) % 3 == 0).astype(int))
    assert fpr_scan(d, yt, yp).score == 0.0


def test_run_scans_one_class_is_no_subgroup():
    d = _frame()
    n = len(d)
    res = run_scans(0, np.ones(n, int), np.zeros(n, int), d, num_samples=0)
    for name in ("fpr_scan", "tpr_scan"):
        r = res[name]
        assert r["subgroup"] == {} and r["score"] == 0.0 and r["size"] == 0
        assert "no subgroup" in r["description"] and "nan" not in r["description"]
        assert r["top"][0]["score"] == 0.0


# ---------------------------------------------------------------------------------------------
# (b) one binning rule: (e_j, e_{j+1}], the first bin [e_0, e_1], for audits, scans and the CLI


def test_bin_codes_match_pandas_cut_right_closed():
    from ofijax.scan import bin_codes, bin_labels
    rng = np.random.default_rng(3)
    x = rng.integers(18, 80, 500).astype(float)
    edges = np.unique(np.quantile(x, np.linspace(0, 1, 5)))
    ref = pd.cut(x, edges, labels=False, include_lowest=True, right=True)
    np.testing.assert_array_equal(bin_codes(x, edges), ref)
    assert bin_codes([edges[0] - 1, np.nan], edges).tolist() == [-1, -1]
    assert bin_labels([18, 25, 40]) == ["[18, 25]", "(25, 40]"]


def test_scan_and_audit_bins_put_the_same_people_in_the_same_bin():
    from ofijax.auditing import bin_features
    from ofijax.scan import bias_scan, score_subset
    rng = np.random.default_rng(0)
    n = 2000
    age = rng.integers(18, 80, n)
    df = pd.DataFrame({"age": age})
    binned, edges_a = bin_features(df, bins=4)
    y = (rng.random(n) < 0.3).astype(int)
    p = np.full(n, 0.3)
    res = bias_scan(df, y, p, bins={"age": 4}, penalty=0.5)
    assert list(res.bins["age"]) == edges_a["age"]
    e = np.asarray(edges_a["age"])
    on_inner = np.isin(age, e[1:-1])
    assert on_inner.sum() > 50  # integer ages on the quantile edges: the closed side matters
    # the scan's bin label names the same interval as the audit's, minus its number
    audit_labels = sorted(set(binned["age"]))
    for lab in audit_labels:
        interval = lab.split(": ", 1)[1]
        r = score_subset(df, y, p, {"age": [interval]}, bins={"age": 4}, penalty=0.0)
        assert r.size == int((binned["age"] == lab).sum())
    # and both equal pandas.cut(right=True, include_lowest=True), an independent reference
    ref = pd.cut(age, e, labels=False, include_lowest=True, right=True)
    counts = np.bincount(ref, minlength=len(e) - 1)
    assert sorted(binned["age"].value_counts().sort_index().tolist()) == sorted(counts.tolist())


def test_close_edges_get_distinct_labels():
    # item 9: edges that print alike at 6 significant digits
    from ofijax.auditing import bin_features
    from ofijax.scan import bias_scan, bin_labels
    edges = [1.0, 1.0000005, 1.000001]
    assert len(set(bin_labels(edges))) == 2
    t0 = 1.7e9
    ts = [t0, t0 + 1, t0 + 2, t0 + 3]
    assert len(set(bin_labels(ts))) == 3
    x = np.array([1.0, 1.0000002, 1.0000007, 1.000001] * 10)
    df = pd.DataFrame({"x": x})
    rng = np.random.default_rng(1)
    y = (rng.random(40) < 0.5).astype(int)
    res = bias_scan(df, y, np.full(40, 0.4), bins={"x": edges})
    assert res.bins["x"] == tuple(edges)
    binned, _ = bin_features(df, bins={"x": edges})
    assert binned["x"].nunique() == 2
