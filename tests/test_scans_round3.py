"""Scans round 2, the rest (#43) and the scan API's one result type (#38).

IJDI-Scan's exhaustive path against the literal NumPy Algorithm 1 with brute-force scans
(``tests/test_ijdi.py``'s oracle), its independence of keys and restarts, top-k and randomization
tests with the same search, uniform predictions; the one result type (``stats`` rate scans return
``ScanResult`` with ``certified``); the module split of ``scan/_ijdi.py``.
"""

from __future__ import annotations

import math
import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest
from test_ijdi import CODES, DF, ENUM, NEG, N, _as_dict, _enumerate, _tiny, ref_algorithm1

from ofijax import scan, stats

ijdi_scan = partial(scan.ijdi_scan, beneficial_label=0)  # the paper's harm orientation


@pytest.mark.parametrize("seed,lam,mode", [(0, 1.0, "reference"), (0, 2.0, "reference"),
                                           (3, 3.0, "reference"), (3, 3.0, "strict"),
                                           (1, 4.0, "reference")])
def test_ijdi_exhaustive_equals_literal_algorithm1_with_brute_force_scans(seed, lam, mode):
    y, p = _tiny(seed)
    sg, F, steps, ps = ref_algorithm1(ENUM, y, p, lam, strict=mode == "strict")
    res = ijdi_scan(DF, NEG, y, p, lam=lam, mode=mode, search="exhaustive")
    assert res.search == "exhaustive" and res.certified
    assert [s.edge_case for s in res.history] == steps
    assert res.subset == _as_dict(sg)
    assert res.score == pytest.approx(F, abs=1e-7)
    np.testing.assert_allclose(res.p_scan, ps, atol=1e-12)
    assert res.converged and all(s.scan_converged for s in res.history)


def test_ijdi_auto_is_exhaustive_on_small_spaces_and_does_not_depend_on_the_key():
    y, p = _tiny(3)
    base = ijdi_scan(DF, NEG, y, p, lam=3.0)  # default search="auto": 147 subgroups
    assert base.search == "exhaustive" and base.certified
    for key, restarts in ((1, 2), (7, 50)):
        other = ijdi_scan(DF, NEG, y, p, lam=3.0, key=key, num_restarts=restarts)
        assert other.subset == base.subset and other.score == base.score
        assert [s.edge_case for s in other.history] == [s.edge_case for s in base.history]
    local = ijdi_scan(DF, NEG, y, p, lam=3.0, search="coordinate_ascent")
    assert local.search == "coordinate_ascent" and not local.certified
    # the first scans see the same null rates: the exhaustive one is at least as good
    assert base.history[0].score >= local.history[0].score - 1e-9
    with pytest.raises(ValueError, match="^search: "):
        ijdi_scan(DF, NEG, y, p, lam=1.0, search="brute")


def test_ijdi_exhaustive_top_k_second_find_is_the_oracle_on_the_remaining_rows():
    y, p = _tiny(0)
    res = ijdi_scan(DF, NEG, y, p, lam=1.0, top_k=2, search="exhaustive")
    first, second = res.top
    assert first.subset == _as_dict(ref_algorithm1(ENUM, y, p, 1.0)[0])
    keep = ~first.mask  # top-k removes the first find's rows (all rows are scanned here)
    sg, F, _, _ = ref_algorithm1(_enumerate(CODES[keep]), y[keep], p[keep], 1.0)
    assert second.subset == _as_dict(sg) and second.score == pytest.approx(F, abs=1e-7)
    assert second.certified and not (first.mask & second.mask).any()


def test_ijdi_exhaustive_randomization_test_counts_replicates_by_the_formula():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.2, 0.8, N)
    planted = (CODES[:, 0] == 1) & (CODES[:, 2] == 0)
    yhat = (rng.uniform(size=N) < np.where(planted, 0.9, 0.2)).astype(int)
    R = 9
    res = ijdi_scan(DF, NEG, yhat, p, lam=0.5, num_samples=R, key=0, search="exhaustive")
    again = ijdi_scan(DF, NEG, yhat, p, lam=0.5, num_samples=R, key=0, search="exhaustive")
    assert res.subset == {"a": (1,), "c": (0,)} and res.certified
    np.testing.assert_array_equal(res.null_scores, again.null_scores)
    assert res.null_scores.shape == (R,) and np.all(res.null_scores >= 0)
    assert res.p_value == (1 + np.sum(res.null_scores >= res.score)) / (R + 1)
    assert res.p_value == pytest.approx(1 / (R + 1))  # nothing in the null scores this high


def test_ijdi_exhaustive_uniform_predictions_detect_nothing():
    _, p = _tiny(0)
    for yhat in (np.ones(N), np.zeros(N)):
        res = ijdi_scan(DF, NEG, yhat, p, lam=1.0, search="exhaustive")
        assert res.score == 0.0 and res.subset == {} and res.q == 1.0 and res.certified
        assert [s.edge_case for s in res.history] == ["no_subgroup"]


# ---------------------------------------------------------------------------------------------
# One result type


def _cells(df, y, pred):
    frame = df.assign(_label=y, _pred=pred)
    g = frame.groupby(list(df.columns) + ["_label"]).agg(
        n=("_pred", "size"), positives=("_pred", "sum")).reset_index()
    return stats.CellStats(tuple(df.columns), tuple(g[c].to_numpy() for c in df.columns),
                           g["_label"].to_numpy(np.int8), g["n"].to_numpy(np.int64),
                           g["positives"].to_numpy(np.int64))


def test_stats_rate_scans_return_the_one_result_type_with_certified_and_rate():
    y, _ = _tiny(0)
    truth = (np.arange(N) % 3 == 0).astype(int)
    cs = _cells(DF, truth, y.astype(int))
    for cell_fn, row_fn in ((stats.fpr_scan_cells, scan.fpr_scan),
                            (stats.tpr_scan_cells, scan.tpr_scan)):
        c = cell_fn(cs, beneficial_label=0)
        r = row_fn(DF, truth, y, beneficial_label=0)
        assert type(c) is scan.ScanResult and stats.CellScanResult is scan.ScanResult
        assert c.mask is None and c.search == r.search == "exhaustive" and c.certified
        assert c.subset == r.subset and c.size == r.size and c.description == r.description
        side = truth == (0 if cell_fn is stats.fpr_scan_cells else 1)
        assert c.rate == r.rate == y[side].mean()  # p̄_b of the scanned class, by NumPy
    local = stats.fpr_scan_cells(cs, beneficial_label=0, search="coordinate_ascent")
    assert local.search == "coordinate_ascent" and not local.certified
    b = scan.bias_scan(DF, y, np.full(N, y.mean()))
    assert math.isnan(b.rate)


def test_every_public_scan_says_whether_it_is_certified():
    y, p = _tiny(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = [scan.fpr_scan(DF, NEG, y, beneficial_label=0),
                   scan.tpr_scan(DF, 1 - NEG, y, beneficial_label=0),
                   ijdi_scan(DF, NEG, y, p, lam=1.0), scan.bias_scan(DF, y, p),
                   scan.rate_scan_cells(0, ["g"], [np.array(["a", "b"])], np.array([1, 1]),
                                        np.array([100, 100]), np.array([12, 90]))]
    for r in results:
        assert isinstance(r, scan.ScanResult) and r.search in ("exhaustive", "coordinate_ascent")
        assert r.certified == (r.search == "exhaustive")


def test_split_modules_stay_small_and_say_what_they_own():
    from pathlib import Path

    root = Path(scan.__file__).parent
    for name in ("_ijdi", "_sides", "_words", "_ratecells", "_ijdi_exhaustive", "_result",
                 "_exhaustive", "_api", "_encode"):
        text = (root / f"{name}.py").read_text()
        assert len(text.splitlines()) <= 700, name
        assert text.startswith('"""') and len(text.split('"""')[1]) >= 200, name
    # the former import place of the moved public names still works
    from ofijax.scan import _ijdi

    assert _ijdi.rate_scan_cells is scan.rate_scan_cells
    assert _ijdi.describe_rate_scan is scan.describe_rate_scan
    assert scan.IJDIResult is scan.ScanResult


def test_frame_of_values_that_print_alike_bins_distinctly():
    """#43 item 9: edges that print alike at 6 significant digits give distinct labels."""
    x = pd.DataFrame({"t": [1.0, 1.0000005, 1.000001, 1.0000002, 1.0000007, 1.0000009] * 10})
    y = np.r_[np.ones(30), np.zeros(30)].astype(int)
    r = scan.fpr_scan(x, np.ones(60, int), y, bins={"t": [1.0, 1.0000005, 1.000001]})
    labels = scan.bin_labels([1.0, 1.0000005, 1.000001])
    assert len(set(labels)) == 2 and set(r.bins) == {"t"}


def test_ijdi_exhaustive_refused_beyond_a_million_subgroups_and_auto_rule():
    from ofijax.scan._ijdi_exhaustive import IJDI_EXHAUSTIVE_MAX_WORK, ijdi_exhaustive_feasible

    big = pd.DataFrame({c: np.arange(180) % 8 for c in "abc"})  # 255^3 = 16.6 million subgroups
    y, p = _tiny(0)
    with pytest.raises(ValueError, match="^search: 'exhaustive' enumerates every subgroup"):
        ijdi_scan(big, NEG, y, p, lam=1.0, search="exhaustive")
    # auto: ≤ 1e6 subgroups and G·C·(K + M) ≤ the budget (COMPAS: 11,907 × 112 × (44 + 5))
    assert ijdi_exhaustive_feasible([2, 6, 3, 2, 2], 112, 44)
    assert 11907 * 112 * 49 <= IJDI_EXHAUSTIVE_MAX_WORK
    assert not ijdi_exhaustive_feasible([8, 8, 8], 16, 44)  # too many subgroups
    assert not ijdi_exhaustive_feasible([10, 5], 4096, 44)  # 1023·31 subgroups × 4096 cells × 46: 6e9
