"""The audit's one set of rules: ``apply_rules`` on any leading shape against Fractions
and brute-force verdicts, one Holm that broadcasts against a brute-force Holm, the same refusals
in ``audit`` and ``audit_batch``, and the facade's moved names."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax import auditing
from ofijax.auditing import audit_batch, holm
from ofijax.auditing._rules import apply_rules
from ofijax.auditing._verdicts import VERDICTS, verdict_codes

# ------------------------------------------------------------------ Holm -------------------------


def _brute_holm(p: list[float]) -> list[float]:
    """Holm from its definition, in Fractions: sort (NaN last), p̃_(r) = min(1, max_{s≤r} (m−s+1) p_(s))."""
    m = len(p)
    finite = sorted((x, i) for i, x in enumerate(p) if not math.isnan(x))
    out = [math.nan] * m
    best = Fraction(0)
    for s, (x, i) in enumerate(finite, start=1):
        best = max(best, (m - s + 1) * Fraction(x))
        out[i] = float(min(Fraction(1), best))
    return out


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1,), (4, 1)])
def test_holm_broadcasts_and_equals_brute_force_with_ties_and_nan(shape):
    rng = np.random.default_rng(sum(shape))
    p = rng.choice([0.001, 0.01, 0.02, 0.02, 0.04, 0.3, 0.3, 0.9], size=shape)  # many ties
    p = np.where(rng.random(shape) < 0.15, np.nan, p * rng.choice([1.0, 0.5], size=shape))
    got = holm(p)
    assert got.shape == p.shape and got.dtype == np.float64
    want = np.array([_brute_holm(row) for row in p.reshape(-1, shape[-1]).tolist()]).reshape(shape)
    np.testing.assert_array_equal(got, want)  # exact: one float product, maxima, a cap at 1
    # each leading index is its own family: the rows one by one give the same numbers
    for idx in np.ndindex(*shape[:-1]):
        np.testing.assert_array_equal(holm(p[idx]), got[idx])


def test_holm_one_family_of_one_and_order_independence():
    assert holm(0.03).tolist() == [0.03]
    assert holm([]).tolist() == []
    rng = np.random.default_rng(1)
    p = rng.random((4, 9))
    perm = rng.permutation(9)
    np.testing.assert_array_equal(holm(p)[:, perm], holm(p[:, perm]))


def test_holm_batch_is_gone_and_holm_is_the_one_used():
    from ofijax.auditing import _batch, _verdicts

    assert not hasattr(_batch, "holm_batch")
    p = np.array([0.01, 0.04, 0.03, np.nan])
    np.testing.assert_array_equal(_verdicts.adjust_pvalues(p, "holm"), holm(p))


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "none"])
def test_adjust_pvalues_one_family_per_row(correction):
    from ofijax.auditing import adjust_pvalues

    rng = np.random.default_rng(9)
    p = np.where(rng.random((5, 6)) < 0.1, np.nan, rng.random((5, 6)) / 10)
    got = adjust_pvalues(p, correction)
    for r in range(5):
        row = [x for x in p[r]]
        want = {"holm": _brute_holm(row),
                "bonferroni": [min(1.0, 6 * x) if not math.isnan(x) else math.nan for x in row],
                "none": row}[correction]
        np.testing.assert_array_equal(got[r], want)


# ------------------------------------------------------------------ apply_rules ------------------


def _rate(num, den):
    return None if den == 0 else Fraction(num, den)


def _reference(cm_i, cm_j, variant):
    """OFI, DI, impact ratio and four-fifths reading of a pair from their definitions (Fractions)."""
    tp_i, fn_i, fp_i, tn_i = (int(x) for x in cm_i)
    tp_j, fn_j, fp_j, tn_j = (int(x) for x in cm_j)
    n_i, n_j = tp_i + fn_i + fp_i + tn_i, tp_j + fn_j + fp_j + tn_j
    ofi = Fraction(fp_i - fn_i, n_i) - Fraction(fp_j - fn_j, n_j)
    if variant == "paper":
        r_i, r_j = _rate(tp_i + fp_i, n_i), _rate(tp_j + fp_j, n_j)
    else:
        r_i, r_j = _rate(tp_i + fp_i, tp_i + fn_i), _rate(tp_j + fp_j, tp_j + fn_j)
    di = None if r_i is None or r_j is None or r_j == 0 else r_i / r_j
    if r_i is None or r_j is None or max(r_i, r_j) == 0:
        ir, ff = None, math.nan
    else:
        ir = min(r_i, r_j) / max(r_i, r_j)
        ff = 0.0 if ir >= Fraction(4, 5) else (1.0 if r_i > r_j else -1.0)
    return ofi, di, ir, ff


def _brute_verdict(small, significant, ff, ofi):
    if small:
        return 2, 0
    if significant:
        return 0, (1 if ofi > 0 else -1)
    if not math.isnan(ff) and ff != 0:
        return 1, int(ff)
    return 3, 0


@pytest.mark.parametrize("variant", ["paper", "pp_over_p"])
def test_apply_rules_against_fractions_on_any_leading_shape(variant):
    rng = np.random.default_rng(38)
    cms = rng.integers(0, 6, size=(2, 3, 4, 4))
    cms[0, 0, 1] = [0, 3, 0, 4]  # nobody selected: DI undefined, impact ratio 0
    cms[0, 1, :2] = [[0, 2, 0, 3], [0, 1, 0, 9]]  # two groups selecting nobody: NaN impact ratio
    cms[1, 2, 3] = [5, 0, 0, 0]
    cms[..., 3] += (cms.sum(-1) == 0)  # no empty group
    k = cms.shape[-2]
    iu, ju = np.triu_indices(k, 1)
    significant = rng.random(cms.shape[:-2] + (iu.size,)) < 0.3
    r = apply_rules(cms, significant, di_variant=variant, min_group_size=10)
    for idx in np.ndindex(*cms.shape[:-2]):
        c = cms[idx]
        for p, (i, j) in enumerate(zip(iu, ju)):
            ofi, di, ir, ff = _reference(c[i], c[j], variant)
            assert r.ofi[idx + (i, j)] == pytest.approx(float(ofi), abs=1e-15)
            assert (math.isnan(r.di[idx + (i, j)]) if di is None
                    else r.di[idx + (i, j)] == pytest.approx(float(di), rel=1e-15))
            assert (math.isnan(r.impact_ratio[idx + (i, j)]) if ir is None
                    else r.impact_ratio[idx + (i, j)] == float(ir))
            assert (math.isnan(r.four_fifths[idx + (i, j)]) if math.isnan(ff) else r.four_fifths[idx + (i, j)] == ff)
            small = min(c[i].sum(), c[j].sum()) < 10
            assert bool(r.small[idx + (p,)]) == small
            code, side = _brute_verdict(small, bool(significant[idx + (p,)]), ff, ofi)
            assert (int(r.verdict[idx + (p,)]), int(r.disadvantaged[idx + (p,)])) == (code, side)
        # per-group rates: one division each, so exactly the Fraction rounded once
        for g in range(k):
            tp, fn, fp, tn = (int(x) for x in c[g])
            n = tp + fn + fp + tn
            assert r.per_group["n"][idx + (g,)] == n
            assert r.per_group["benefit"][idx + (g,)] == float(Fraction(tp + fp, n))
            assert r.per_group["marginal_benefit"][idx + (g,)] == float(Fraction(fp - fn, n))
            assert r.per_group["accuracy"][idx + (g,)] == float(Fraction(tp + tn, n))
        # the one-candidate case is the same computation, bit for bit
        one = apply_rules(c, significant[idx], di_variant=variant, min_group_size=10)
        for name in ("ofi", "di", "impact_ratio", "four_fifths", "te", "verdict", "disadvantaged"):
            np.testing.assert_array_equal(getattr(one, name), getattr(r, name)[idx], err_msg=name)
        for name in one.per_group:
            np.testing.assert_array_equal(one.per_group[name], r.per_group[name][idx], err_msg=name)
    assert set(np.unique(r.verdict)) == {0, 1, 2, 3}  # every verdict reached: the test can fail
    assert r.ofi.dtype == np.float64 and r.per_group["benefit"].dtype == np.float64


def test_apply_rules_float64_and_exact_counts_whatever_x64_says():
    import jax

    big = np.array([[2**40 + 1, 3, 2**35, 7], [5, 2**41, 9, 2**33]], np.int64)
    with jax.enable_x64(False):
        r = apply_rules(big[None], np.zeros((1, 1), bool), di_variant="paper", min_group_size=1)
    assert r.per_group["n"].dtype == np.float64
    assert r.per_group["n"][0].tolist() == [float(big[0].sum()), float(big[1].sum())]
    ofi, _, ir, _ = _reference(big[0], big[1], "paper")
    assert r.ofi[0, 0, 1] == pytest.approx(float(ofi), rel=1e-15)
    assert r.impact_ratio[0, 0, 1] == float(ir)


def test_verdict_codes_elementwise_against_brute_force():
    rng = np.random.default_rng(2)
    shape = (50,)
    small = rng.random(shape) < 0.2
    significant = rng.random(shape) < 0.4
    ff = rng.choice([-1.0, 0.0, 1.0, np.nan], size=shape)
    ofi = rng.normal(size=shape)
    code, side = verdict_codes(small, significant, ff, ofi)
    want = [_brute_verdict(*t) for t in zip(small, significant, ff, ofi)]
    assert list(zip(code.tolist(), side.tolist())) == want
    assert [VERDICTS[c] for c in (0, 1, 2, 3)] == ["algorithmic bias", "selection-rate disparity",
                                                   "too small to judge", "no evidence"]


# ------------------------------------------------------------------ one validation ---------------

Y = [1, 0, 1, 0, 1, 0, 1, 1]
P = [1, 1, 0, 0, 1, 0, 1, 0]
G = list("aaabbbab")


def _error(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f()
        except (ValueError, TypeError) as exc:
            return type(exc), str(exc)
    return None


BAD = [
    ("beneficial_label", {"beneficial_label": 2}),
    ("beneficial_label", {"beneficial_label": True}),
    ("beneficial_label", {"beneficial_label": "1"}),
    ("alpha", {"alpha": 0}),
    ("alpha", {"alpha": "x"}),
    ("min_group_size", {"min_group_size": 0}),
    ("min_group_size", {"min_group_size": 2.5}),
    ("null", {"null": "x"}),
    ("method", {"method": "x"}),
    ("correction", {"correction": "x"}),
    ("di_variant", {"di_variant": "x"}),
    ("sample_weight", {"sample_weight": [-1, 1, 1, 1, 1, 1, 1, 1]}),
    ("sample_weight", {"sample_weight": [np.nan, 1, 1, 1, 1, 1, 1, 1]}),
    ("sample_weight", {"sample_weight": [1, 1]}),
    ("sample_weight", {"sample_weight": list("abcdefgh")}),
    ("sample_weight", {"sample_weight": np.ones(8) * 1j}),
    ("y_true", {"y_true": [2, 0, 1, 0, 1, 0, 1, 1]}),
    ("y_true", {"y_true": np.array(Y) * 1j}),
    ("y_pred", {"y_true": [1, 0]}),
    ("y_pred", {"y_pred": [2, 0, 1, 0, 1, 0, 1, 1]}),
    ("sensitive_features", {"sensitive_features": ["a"] * 8}),
    ("sensitive_features", {"sensitive_features": ["a"] * 7}),
    ("sensitive_features", {"sensitive_features": ["a", None, "a", "b", "b", "b", "a", "b"]}),
    ("sensitive_features", {"sensitive_features": [f"g{i}" for i in range(8)], "max_levels": 5}),
    ("sensitive_features", {"y_true": pd.Series(Y), "sensitive_features": pd.Series(G, index=range(1, 9))}),
]


@pytest.mark.parametrize("name, bad", BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_audit_and_audit_batch_refuse_alike(name, bad):
    a = {"y_true": Y, "y_pred": P, "sensitive_features": G, **bad}
    extra = {k: v for k, v in a.items() if k not in ("y_true", "y_pred", "sensitive_features")}
    one = _error(lambda: ofijax.audit(0, a["y_true"], a["y_pred"], sensitive_features=a["sensitive_features"],
                                      num_samples=0, **extra))
    many = _error(lambda: audit_batch(a["y_true"], [a["y_pred"]], sensitive_features=a["sensitive_features"],
                                      **extra))
    assert one is not None and one[1].startswith(f"{name}: "), one
    assert many == one


def test_batch_bins_groups_as_the_audit_does():
    rng = np.random.default_rng(4)
    n = 120
    age = pd.Series(rng.integers(18, 80, n), name="age")
    y = pd.Series(rng.integers(0, 2, n))
    preds = pd.DataFrame({"m1": rng.integers(0, 2, n), "m2": rng.integers(0, 2, n)})
    ba = audit_batch(y, preds, sensitive_features=age, bins=3)
    assert ba.settings["bins"]["age"] == pytest.approx(np.quantile(age, [0, 1 / 3, 2 / 3, 1]).tolist())
    assert any("age was cut into 3 bins" in note for note in ba.notes)
    for c, col in enumerate(preds):
        af = ofijax.audit(0, y, preds[col], sensitive_features=age, bins=3, num_samples=0)
        assert ba.groups == af.groups
        np.testing.assert_array_equal(ba.cms[c], af.cms)
        np.testing.assert_array_equal(ba.pairs.loc[ba.pairs["candidate"] == col, "ofi"], af.pairs["ofi"])


def test_dict_columns_are_aligned_on_the_index_or_refused():
    """A dict of pandas columns (candidates' predictions, group columns) is aligned column by column
    on the reference index, never matched by position; a column with other labels is refused."""
    idx = [5, 3, 8, 1, 9, 2, 7, 4]
    y = pd.Series(Y, index=idx)
    p = pd.Series(P, index=idx)
    g = pd.Series(G, index=idx)
    h = pd.Series(list("xyxyxyxy"), index=idx)
    want = audit_batch(y, {"m": p}, sensitive_features={"g": g, "h": h}, min_group_size=1)
    shuffled = [2, 7, 0, 5, 1, 6, 3, 4]
    got = audit_batch(y, {"m": p.iloc[shuffled]}, sensitive_features={"g": g.iloc[shuffled], "h": h},
                      min_group_size=1)
    assert got.groups == want.groups and got.cms.tolist() == want.cms.tolist()
    af = ofijax.audit(0, y, p, sensitive_features={"g": g.iloc[shuffled], "h": h.iloc[::-1]},
                      min_group_size=1, num_samples=0)
    assert af.groups == want.groups and af.cms.tolist() == want.cms[0].tolist()
    other = p.set_axis([i + 100 for i in idx])
    with pytest.raises(ValueError, match=r"^y_pred\['m'\]: its pandas index"):
        audit_batch(y, {"m": other}, sensitive_features=g)
    with pytest.raises(ValueError, match=r"^sensitive_features\['h'\]: its pandas index"):
        ofijax.audit(0, y, p, sensitive_features={"g": g, "h": other}, num_samples=0)


# ------------------------------------------------------------------ the facade -------------------

MOVED = ["check_group_count", "render_html", "impact_ratios_section", "scoring_from_batches", "HOW_TO_READ",
         "format_p", "group_label", "impact_lines", "scan_lines", "to_jsonable"]


@pytest.mark.parametrize("name", MOVED)
def test_moved_names_warn_and_point_to_reporting(name):
    from ofijax.auditing import reporting

    assert name in reporting.__all__ and name not in auditing.__all__
    with pytest.warns(DeprecationWarning, match=rf"ofijax\.auditing\.{name} is deprecated.*ofijax\.auditing\.reporting"):
        obj = getattr(auditing, name)
    assert obj is getattr(reporting, name)


def test_facade_lists_user_api_only():
    assert set(auditing.__all__) >= {"audit", "audit_from_counts", "AuditFrame", "audit_batch", "BatchAudit",
                                     "pareto_frontier", "select_candidates", "plot_frontier", "impact_ratios",
                                     "ofi_test", "holm", "benjamini_hochberg", "adjust_pvalues", "bin_features"}
    assert not set(auditing.__all__) & set(MOVED)
    with pytest.raises(AttributeError, match="no attribute 'holm_batch'"):
        auditing.holm_batch  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from ofijax.auditing import audit, render_report, run_scans, write_heatmaps  # noqa: F401
