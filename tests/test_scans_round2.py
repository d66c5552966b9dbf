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
