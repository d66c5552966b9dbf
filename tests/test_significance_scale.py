"""#36 at the audit level: p-values at any group size, with their method and error bound in every
result (API tables, notes, report.json), checked against an independent normal reference."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from ofijax import stats
from ofijax.auditing import audit_from_counts

# three groups: 6 M, 6 M and 20 M rows (TP, FN, FP, TN); the third with a small FN share
CMS = np.array([[2_400_000, 600_000, 700_000, 2_300_000],
                [2_380_000, 620_000, 690_000, 2_310_000],
                [10_000_000, 30_000, 3_100_000, 6_870_000]], dtype=np.int64)


def _normal_p(ci, cj):
    """Two-sided p of T = D_i n_j − D_j n_i under the pooled multinomial null, normal limit."""
    pooled = (ci + cj) / (ci + cj).sum()
    a, b = pooled[1], pooled[2]
    var_d = a + b - (b - a) ** 2  # Var(FP − FN) per row
    ni, nj = int(ci.sum()), int(cj.sum())  # Python integers: no int64 overflow
    t = int(ci[2] - ci[1]) * nj - int(cj[2] - cj[1]) * ni
    sd = math.sqrt(var_d * (ni * nj * nj + nj * ni * ni))
    return 2 * sps.norm.sf(abs(t) / sd)


@pytest.mark.parametrize("null", ["pooled", "uniform"])
def test_default_audit_never_refuses_large_groups(null):
    gc = stats.GroupCounts(("a", "b", "c"), ("g",), CMS)
    af = stats.audit_counts(0, gc, null=null, num_samples=200)
    pr = af.pairs
    assert np.isfinite(pr["p_value"]).all() and (pr["p_value"] <= 1).all()
    approx = pr["p_method"] != "exact"
    assert approx.any()
    assert (pr.loc[approx, "p_error_bound"] > 0).all()
    assert (pr.loc[approx, "p_error_bound"] <= 2e-3).all()
    assert (pr.loc[~approx, "p_error_bound"] == 0).all()
    assert any("p_error_bound" in note for note in af.notes)


def test_pooled_pvalue_matches_the_normal_limit():
    # a pair whose p is moderate (z about 2.5), where the normal limit is accurate at 6 M rows
    ci = np.array([2_400_000, 600_000, 700_000, 2_300_000])
    cj = np.array([2_400_000, 600_000 - 2_000, 700_000 + 2_000, 2_300_000])
    af = audit_from_counts(0, np.stack([ci, cj]), groups=("a", "b"), num_samples=0)
    p = float(af.pairs.loc[0, "p_value"])
    ref = _normal_p(ci, cj)
    assert 1e-3 < ref < 0.1
    assert abs(p - ref) / ref < 0.02, (p, ref)


def test_exact_method_beyond_its_budget_names_auto():
    with pytest.raises(ValueError, match=r"^method: .*method='auto'"):
        audit_from_counts(0, CMS, groups=("a", "b", "c"), method="exact", num_samples=0)


def test_report_json_carries_method_and_bound(tmp_path):
    from ofijax.auditing.reporting import to_jsonable

    af = audit_from_counts(0, CMS, groups=("a", "b", "c"), num_samples=0)
    rows = json.loads(json.dumps(to_jsonable(af.pairs.to_dict("records"))))
    assert {"p_method", "p_error_bound"} <= set(rows[0])
    assert any(r["p_method"] == "saddlepoint" and 0 < r["p_error_bound"] <= 2e-3 for r in rows)


def test_few_correct_predictions_in_huge_groups_get_an_exact_window():
    """The corner "auto" used to refuse: > 5e6 rows, nearly every prediction wrong under the null.
    The mixture window equals the exact recurrence PMF where both exist, and the huge pair's p
    agrees with the normal limit (z about 5.8)."""
    from ofijax.distributions import _pvalue as P
    from ofijax.distributions import ofi_pvalue_cms

    for n, q in [(2000, (0.3, 0.69, 0.01)), (5000, (0.5, 0.499, 0.001))]:
        off, w, _ = P._mixture_window(n, *q)
        d = np.arange(off, off + w.size)
        inside = (d >= -n) & (d <= n)
        assert np.isneginf(w[~inside]).all()
        exact = P.log_diff_pmf(n, q)[d[inside] + n]
        bulk = exact > exact.max() - 600
        np.testing.assert_allclose(w[inside][bulk], exact[bulk], rtol=0, atol=1e-9)
    ci = np.array([2, 3_000_000, 2_999_995, 3])
    cj = np.array([1, 2_990_000, 3_009_998, 1])
    r = ofi_pvalue_cms(ci, cj)
    assert str(r.method) == "exact" and float(r.error_bound) == 0.0
    ni, nj = int(ci.sum()), int(cj.sum())
    t = int(ci[2] - ci[1]) * nj - int(cj[2] - cj[1]) * ni
    pooled = (ci + cj) / (ni + nj)
    var_d = pooled[1] + pooled[2] - (pooled[2] - pooled[1]) ** 2
    ref = 2 * sps.norm.sf(abs(t) / math.sqrt(var_d * (ni * nj * nj + nj * ni * ni)))
    assert abs(math.log(float(r.p_value)) - math.log(ref)) < 0.05 * abs(math.log(ref))
