"""The audit a person reads (#42): impact-ratio tables, the detectable effect, provenance, the
self-contained HTML report (checked in headless Chromium where one is installed)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import ofijax

# ------------------------------------------------------------------------------------------------
# impact_ratios
# ------------------------------------------------------------------------------------------------


def _brute(sel, groups):
    """Independent reference: per category exact counts, rates and ratios as Fractions."""
    cats = sorted(set(groups))
    n = {c: sum(1 for g in groups if g == c) for c in cats}
    s = {c: sum(int(x) for x, g in zip(sel, groups) if g == c) for c in cats}
    rate = {c: Fraction(s[c], n[c]) for c in cats}
    best = max(rate.values())
    return n, s, rate, {c: rate[c] / best if best else None for c in cats}


def test_impact_ratios_counts_rates_ratios_against_fractions():
    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b", "c", "d"], size=400, p=[0.4, 0.3, 0.2, 0.1])
    sel = (rng.random(400) < np.select([g == "a", g == "b", g == "c"], [0.6, 0.4, 0.3], 0.5)).astype(int)
    t = ofijax.impact_ratios(sel, pd.Series(g, name="race"))
    n, s, rate, ratio = _brute(sel.tolist(), g.tolist())
    assert t["attribute"].eq("race").all()
    for r in t.itertuples():
        assert r.n == n[r.category] and r.selected == s[r.category]
        assert r.selection_rate == float(rate[r.category])
        assert r.impact_ratio == pytest.approx(float(ratio[r.category]), rel=1e-15)
    assert t["n"].dtype == np.int64 and t["selected"].dtype == np.int64
    assert t.loc[t["reference"], "impact_ratio"].tolist() == [1.0]


@pytest.mark.parametrize("a,b,c,d", [(3, 1, 1, 3), (0, 10, 4, 2), (1, 7, 9, 2), (12, 0, 3, 5), (2, 30, 0, 28)])
def test_fisher_matches_scipy(a, b, c, d):
    from ofijax.auditing._impact import fisher_exact_two_sided

    assert fisher_exact_two_sided(a, b, c, d) == pytest.approx(
        scipy.stats.fisher_exact([[a, b], [c, d]], alternative="two-sided").pvalue, rel=1e-9)


def test_row_tests_against_scipy():
    """Small counts: Fisher; large: the pooled z-test (scipy's normal tail of the same z)."""
    sel = [1] * 3 + [0] * 5 + [1] * 7 + [0] * 1 + [1] * 300 + [0] * 700 + [1] * 450 + [0] * 550
    grp = ["s1"] * 8 + ["s2"] * 8 + ["L1"] * 1000 + ["L2"] * 1000
    small = ofijax.impact_ratios(sel[:16], grp[:16]).set_index("category")
    assert small.loc["s1", "test"] == "Fisher exact"
    assert small.loc["s1", "p_value"] == pytest.approx(
        scipy.stats.fisher_exact([[3, 5], [7, 1]]).pvalue, rel=1e-9)
    big = ofijax.impact_ratios(sel[16:], grp[16:]).set_index("category")
    assert big.loc["L1", "test"].startswith("z-test")
    p1, p2, ph = 0.3, 0.45, 0.375
    z = (p1 - p2) / math.sqrt(ph * (1 - ph) * (2 / 1000))
    assert big.loc["L1", "z"] == pytest.approx(z, rel=1e-12)
    assert big.loc["L1", "p_value"] == pytest.approx(2 * scipy.stats.norm.sf(abs(z)), rel=1e-9)
    assert bool(big.loc["L1", "significant"])


def test_unknowns_two_percent_rule_and_intersection():
    df = pd.DataFrame({
        "sex": ["F"] * 60 + ["M"] * 38 + [None] * 2 + ["F"],
        "race": ["A"] * 50 + ["B"] * 40 + ["C"] * 1 + [""] * 9 + ["A"],
        "hired": [1] * 30 + [0] * 20 + [1] * 10 + [0] * 30 + [1] + [0] * 9 + [np.nan],
    })
    t = ofijax.impact_ratios("hired", ["sex", "race"], data=df)
    # the row with an unknown outcome is left out of every table
    assert t.attrs["unknown_outcome"] == 1
    assert t.attrs["unknown"] == {"sex": 2, "race": 9, "sex x race": 9}  # rows 98-99 unknown in both
    race = t[t["attribute"] == "race"].set_index("category")
    # a row with unknown sex still counts in the race table
    assert race["n"].sum() == 100 - 9
    # C is 1 of 91 < 2%: listed with count and rate, excluded, never the reference (rate 1.0)
    assert bool(race.loc["C", "excluded"]) and race.loc["C", "selection_rate"] == 1.0
    assert math.isnan(race.loc["C", "impact_ratio"]) and not race.loc["C", "reference"]
    assert bool(race.loc["A", "reference"])
    kept = ofijax.impact_ratios("hired", ["sex", "race"], data=df, exclude_small=False)
    assert kept.set_index(["attribute", "category"]).loc[("race", "C"), "reference"]
    inter = t[t["attribute"] == "sex x race"]
    assert set(inter["category"]) <= {f"{s} & {r}" for s in "FM" for r in "ABC"}
    assert inter["n"].sum() == 100 - 9


def test_three_columns_each_alone_and_full_intersection_only():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({c: rng.choice(list("xy"), 200) for c in ("a", "b", "c")})
    df["p"] = rng.integers(0, 2, 200)
    t = ofijax.impact_ratios("p", ["a", "b", "c"], data=df)
    assert list(dict.fromkeys(t["attribute"])) == ["a", "b", "c", "a x b x c"]
    full = t[t["attribute"] == "a x b x c"]
    ref = df.groupby(["a", "b", "c"])["p"].agg(["size", "sum"])
    for r in full.itertuples():
        key = tuple(r.category.split(" & "))
        assert (r.n, r.selected) == tuple(ref.loc[key])


def test_scoring_rate_exact_median_ties_not_above():
    scores = [1, 2, 3, 3, 3, 4, 5, 9, 3, 0]   # median 3: ties are not above
    grp = list("aaaaabbbbb")
    t = ofijax.impact_ratios(scores=scores, sensitive_features=grp).set_index("category")
    assert t.attrs["median"] == 3.0
    assert (t.loc["a", "scored_above"], t.loc["b", "scored_above"]) == (0, 3)
    low = ofijax.impact_ratios(scores=scores, sensitive_features=grp, lower_is_better=True).set_index("category")
    assert (low.loc["a", "scored_above"], low.loc["b", "scored_above"]) == (2, 1)


def test_no_dependence_on_names_or_order_and_pandas_aligned():
    rng = np.random.default_rng(2)
    g = pd.Series(rng.choice(["u", "v", "w"], 300), name="g")
    s = pd.Series(rng.integers(0, 2, 300))
    t = ofijax.impact_ratios(s, g)
    perm = rng.permutation(300)
    t2 = ofijax.impact_ratios(s.iloc[perm], g.iloc[perm[::-1]].sort_index())  # aligned on the index
    pd.testing.assert_frame_equal(t, t2)
    ren = ofijax.impact_ratios(s, g.map({"u": "z", "v": "y", "w": "x"}))
    a = t.drop(columns="category").sort_values(["n", "selected"]).reset_index(drop=True)
    b = ren.drop(columns="category").sort_values(["n", "selected"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ValueError, match="^y_pred"):
        ofijax.impact_ratios(pd.Series([1, 0], index=[5, 6]), pd.Series(["a", "b"], index=[0, 1]))


def test_bad_input_one_error_naming_the_argument():
    with pytest.raises(ValueError, match="^y_pred: pass exactly one"):
        ofijax.impact_ratios([1, 0], ["a", "b"], scores=[1, 2])
    with pytest.raises(ValueError, match="^y_pred: must be 0/1"):
        ofijax.impact_ratios([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="^min_share"):
        ofijax.impact_ratios([1, 0], ["a", "b"], min_share=2)
    with pytest.raises(ValueError, match="^sensitive_features"):
        ofijax.impact_ratios("p", "g")


# ------------------------------------------------------------------------------------------------
# detectable_ofi
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_i,n_j,p", [(300, 300, (0.4, 0.1, 0.1, 0.4)), (200, 500, (0.5, 0.15, 0.05, 0.3))])
def test_detectable_ofi_has_80_percent_power_by_monte_carlo(n_i, n_j, p):
    """Draw pairs whose true OFI is the stated detectable effect; the audit's own exact test
    (pooled null) rejects at alpha = 0.05 in about 80% of them."""
    from ofijax.distributions import ofi_pvalue_cms

    p = np.asarray(p)
    null_i, null_j = np.rint(p * n_i).astype(int), np.rint(p * n_j).astype(int)
    delta = float(ofijax.auditing._verdicts.detectable_ofi(null_i, null_j, 0.05))
    # independent formula: Var(FP - FN) = n[(pFP + pFN) - (pFP - pFN)^2] per group (ofi_notes §8)
    q = (null_i + null_j) / (n_i + n_j)
    var = ((q[2] + q[1]) - (q[2] - q[1]) ** 2) * (1 / n_i + 1 / n_j)
    assert delta == pytest.approx((scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)) * math.sqrt(var))
    # alternative: move delta/2 of the mass between FN and FP in each group, in opposite ways,
    # keeping the pooled error rates (B_i - B_j = delta in expectation)
    wi = n_j / (n_i + n_j)
    shift_i, shift_j = delta * wi / 2, -delta * (1 - wi) / 2
    pi = p + np.array([0, -shift_i, shift_i, 0])
    pj = p + np.array([0, -shift_j, shift_j, 0])
    rng = np.random.default_rng(7)
    m = 600
    ci, cj = rng.multinomial(n_i, pi, size=m), rng.multinomial(n_j, pj, size=m)
    assert np.mean((ci[:, 2] - ci[:, 1]) / n_i - (cj[:, 2] - cj[:, 1]) / n_j) == pytest.approx(delta, abs=0.01)
    pv = np.asarray(ofi_pvalue_cms(ci, cj, null="pooled").p_value)
    power = float(np.mean(pv < 0.05))
    assert abs(power - 0.8) < 0.06, power


def test_detectable_in_pairs_and_verdict_wording():
    df = ofijax.datasets.load_compas("violent", filtered=True)
    af = ofijax.audit(0, "label_not_recid", "pred_low_risk", sensitive_features="race", data=df, num_samples=0)
    p = af.pairs
    assert {"detectable_ofi", "detectable_method"} <= set(p.columns)
    assert p["detectable_method"].str.contains("pooled null's cell probabilities").all()
    ne = p[p["verdict"] == "no evidence"].iloc[0]
    assert f"no significant algorithmic bias; this test would detect |OFI| >= {ne['detectable_ofi']:.3f}" in ne["reading"]
    sr = p[p["verdict"] == "selection-rate disparity"].iloc[0]
    assert f"this test would detect |OFI| >= {sr['detectable_ofi']:.3f}" in sr["reading"]
    bias = p[p["verdict"] == "algorithmic bias"].iloc[0]
    assert "would detect" not in bias["reading"]
    # larger groups detect smaller effects; the value does not depend on which group is i
    from ofijax.auditing._verdicts import detectable_ofi

    a, b = np.array([40, 10, 12, 38]), np.array([30, 5, 9, 56])
    assert detectable_ofi(a, b, 0.05) == detectable_ofi(b, a, 0.05)
    assert detectable_ofi(10 * a, 10 * b, 0.05) < detectable_ofi(a, b, 0.05)
    uni = detectable_ofi(a, b, 0.05, null="uniform")
    z = scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)
    assert uni == pytest.approx(z * math.sqrt(104 / 1000 + 104 / 1000))
