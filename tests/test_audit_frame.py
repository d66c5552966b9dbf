"""audit() and AuditFrame: fairlearn vocabulary, exact values, verdict logic, weights, errors."""

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ofijax import AuditFrame, audit
from ofijax import auditing as sig


def rows_from_cms(cms, labels):
    """Expand confusion matrices into (y, y_hat, group) rows: TP (1,1), FN (1,0), FP (0,1), TN (0,0)."""
    y, yh, g = [], [], []
    for cm, lab in zip(cms, labels):
        for (yt, yp), count in zip(((1, 1), (1, 0), (0, 1), (0, 0)), cm):
            y += [yt] * count
            yh += [yp] * count
            g += [lab] * count
    return np.array(y), np.array(yh), np.array(g, dtype=object)


# Three groups, k = 3: "a" is denied benefit (many FN), "b" is accurate, "c" small.
CMS = [(40, 30, 5, 45), (60, 5, 5, 50), (6, 1, 2, 6)]
LABELS = ["a", "b", "c"]
Y, YH, G = rows_from_cms(CMS, LABELS)


@pytest.fixture(scope="module")
def af():
    return audit(0, Y, YH, sensitive_features=pd.Series(G, name="grp"), num_samples=500)


def B(cm):
    tp, fn, fp, tn = cm
    return Fraction(fp - fn, tp + fn + fp + tn)


def test_by_group_overall_and_pairwise_exact(af):
    assert isinstance(af, AuditFrame)
    bg = af.by_group
    assert list(bg.index) == LABELS and bg.index.name == "grp"
    assert bg[["tp", "fn", "fp", "tn"]].to_numpy().tolist() == [list(c) for c in CMS]
    assert bg["n"].tolist() == [sum(c) for c in CMS]
    for lab, cm in zip(LABELS, CMS):
        n = sum(cm)
        assert bg.loc[lab, "benefit"] == pytest.approx(float(Fraction(cm[0] + cm[2], n)), abs=1e-6)
        assert bg.loc[lab, "expected_benefit"] == pytest.approx(float(Fraction(cm[0] + cm[1], n)), abs=1e-6)
        assert bg.loc[lab, "marginal_benefit"] == pytest.approx(float(B(cm)), abs=1e-6)
        assert bg.loc[lab, "true_positive_rate"] == pytest.approx(cm[0] / (cm[0] + cm[1]), abs=1e-6)
    total = np.sum(CMS, axis=0)
    assert af.overall["n"] == total.sum()
    assert af.overall["marginal_benefit"] == pytest.approx(float(B(total)), abs=1e-6)
    ofi = af.pairwise("ofi")
    assert ofi.shape == (3, 3) and list(ofi.columns) == LABELS
    for i, ci in zip(LABELS, CMS):
        for j, cj in zip(LABELS, CMS):
            assert ofi.loc[i, j] == pytest.approx(float(B(ci) - B(cj)), abs=1e-6)
            di = Fraction(ci[0] + ci[2], sum(ci)) / Fraction(cj[0] + cj[2], sum(cj))
            assert af.pairwise("di").loc[i, j] == pytest.approx(float(di), rel=1e-5)
    # a per-group metric gives its difference m_i - m_j; "B" is an alias of marginal_benefit
    assert np.allclose(af.pairwise("B").to_numpy(), ofi.to_numpy(), atol=1e-6)
    import ofijax

    assert np.allclose(af.pairwise(ofijax.ofi).to_numpy(), ofi.to_numpy(), atol=1e-6)


def test_fairlearn_aggregates(af):
    b = af.by_group["marginal_benefit"]
    assert af.group_min("B") == pytest.approx(b.min())
    assert af.group_max("marginal_benefit") == pytest.approx(b.max())
    assert af.difference("B") == pytest.approx(b.max() - b.min())  # = max |OFI|
    assert af.difference("B") == pytest.approx(np.abs(af.ofi).max(), abs=1e-6)
    ov = af.overall["marginal_benefit"]
    assert af.difference("B", method="to_overall") == pytest.approx((b - ov).abs().max())
    tpr = af.by_group["true_positive_rate"]
    assert af.ratio("tpr") == pytest.approx(tpr.min() / tpr.max())
    r = tpr / af.overall["true_positive_rate"]
    assert af.ratio("tpr", method="to_overall") == pytest.approx(np.minimum(r, 1 / r).min())
    series = af.difference()
    assert isinstance(series, pd.Series) and "accuracy" in series.index
    with pytest.raises(ValueError, match="method"):
        af.difference("B", method="pairwise")
    with pytest.raises(ValueError, match="unknown per-group metric"):
        af.group_max("f1")


def test_pvalues_intervals_and_verdicts(af):
    cms = np.array(CMS)
    P = sig.pairwise_ofi_test(cms, null="pooled")
    assert np.allclose(af.p_value, P)
    raw = P[np.triu_indices(3, 1)]
    assert np.allclose(af.pairs["p_value"], raw)
    assert np.allclose(af.pairs["p_adjusted"], sig.holm(raw))
    assert (af.pairs["null"] == "pooled").all()
    assert np.allclose(af.ci_low, -af.ci_high.T)  # antisymmetric intervals
    ab = af.pairs.set_index(["group_i", "group_j"]).loc[("a", "b")]
    # OFI(a, b) = -25/120 - 0 < 0: significant, biased against a (the group with the lower B).
    assert ab["ofi"] < 0 and ab["verdict"] == "algorithmic bias"
    assert ab["disadvantaged"] == "a" and ab["favoured"] == "b"
    assert ab["ci_low"] < ab["ofi"] < ab["ci_high"] < 0
    assert "against a" in ab["reading"]
    assert set(af.pairs["verdict"]) <= set(sig.VERDICTS)
    json.dumps(af.to_dict(), allow_nan=False)  # valid JSON: NaN became None
    assert "algorithmic bias" in af.summary() and "AuditFrame(3 groups" in repr(af)


def test_sign_convention_positive_ofi_is_bias_against_j():
    # Group "x" gets unjust benefit (FP), "y" is accurate: OFI(x, y) > 0, against y.
    y, yh, g = rows_from_cms([(50, 0, 40, 10), (50, 0, 0, 50)], ["x", "y"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0)
    row = af.pairs.iloc[0]
    assert row["ofi"] == pytest.approx(0.4) and row["verdict"] == "algorithmic bias"
    assert row["disadvantaged"] == "y" and row["favoured"] == "x"
    assert math.isnan(row["ci_low"])  # num_samples=0 skips the intervals


def test_systemic_disparity_and_no_evidence():
    # A perfect classifier (B = 0 for both) with different base rates: OFI = 0 exactly, DI = 0.4.
    y, yh, g = rows_from_cms([(20, 0, 0, 80), (50, 0, 0, 50), (21, 0, 0, 79)], ["lo", "hi", "lo2"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0, correction="none")
    pairs = af.pairs.set_index(["group_i", "group_j"])
    hl = pairs.loc[("hi", "lo")]
    assert hl["ofi"] == 0 and hl["p_value"] == 1.0
    assert hl["di"] == pytest.approx(2.5) and hl["verdict"] == "selection-rate disparity"
    assert hl["favoured"] == "hi" and hl["disadvantaged"] == "lo" and hl["four_fifths"] == "fails: j selected less"
    same = pairs.loc[("lo", "lo2")]
    assert same["verdict"] == "no evidence" and pd.isna(same["disadvantaged"])


def test_uniform_null_is_permissive_and_named():
    y, yh, g = rows_from_cms([(0, 1, 0, 5), (0, 7, 0, 11)], ["i", "j"])  # Table 1, scenario B
    af = audit(0, y, yh, sensitive_features=g, null="uniform", num_samples=0)
    assert af.pairs.loc[0, "p_value"] == pytest.approx(sig.ofi_test([0, 1, 0, 5], [0, 7, 0, 11], null="uniform").p_value)
    assert af.settings["null"] == "uniform" and "uniform null" in af.pairs.loc[0, "reading"]
    assert af.pairs.loc[0, "verdict"] == "no evidence"  # DI is 0/0: undefined, never "no bias" by DI
    assert any("undefined" in n for n in af.notes)


def test_integer_weights_equal_duplicated_rows_and_fractional_weights_use_bootstrap():
    y, yh, g = rows_from_cms([(10, 6, 1, 8), (12, 1, 2, 9)], ["a", "b"])
    w = np.where(np.arange(len(y)) % 3 == 0, 2, 1)
    weighted = audit(0, y, yh, sensitive_features=g, sample_weight=w, num_samples=200)
    dup = np.repeat(np.arange(len(y)), w)
    plain = audit(0, y[dup], yh[dup], sensitive_features=g[dup], num_samples=0)
    assert np.array_equal(weighted.cms, plain.cms)
    assert np.allclose(weighted.p_value, plain.p_value)
    frac = audit(0, y, yh, sensitive_features=g, sample_weight=w * 0.7, num_samples=200)
    assert np.isnan(frac.pairs.loc[0, "p_value"]) and "bootstrap interval" in frac.pairs.loc[0, "reading"]
    assert any("fractional sample weights" in n for n in frac.notes)
    assert frac.ofi[0, 1] == pytest.approx(weighted.ofi[0, 1], abs=1e-6)  # scaling weights keeps OFI
    lo, hi = frac.pairs.loc[0, ["ci_low", "ci_high"]]
    assert lo < frac.ofi[0, 1] < hi


def test_several_sensitive_columns_and_beneficial_label():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"race": rng.choice(["r1", "r2"], n), "sex": rng.choice(["F", "M"], n)})
    y = rng.integers(0, 2, n)
    yh = rng.integers(0, 2, n)
    af = audit(0, y, yh, sensitive_features=df, num_samples=0)
    assert isinstance(af.by_group.index, pd.MultiIndex) and list(af.by_group.index.names) == ["race", "sex"]
    assert len(af.pairs) == 6 and af.pairwise("ofi").shape == (4, 4)
    assert af.to_dict()["groups"][0] == "r1 & F"
    flipped = audit(0, 1 - y, 1 - yh, sensitive_features=df, beneficial_label=0, num_samples=0)
    assert np.array_equal(flipped.cms, af.cms) and np.allclose(flipped.ofi, af.ofi)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(sensitive_features=["a"] * 6), "only one group"),
        (dict(sensitive_features=["a", "b"] * 3, alpha=1.5), "alpha"),
        (dict(sensitive_features=["a", "b"] * 3, null="permutation"), "null"),
        (dict(sensitive_features=["a", "b"] * 3, correction="fdr"), "correction"),
        (dict(sensitive_features=["a", "b"] * 3, num_samples=1), "num_samples"),
        (dict(sensitive_features=["a", "b"] * 2), "length mismatch"),
    ],
)
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        audit(0, [1, 0, 1, 0, 1, 1], [1, 1, 0, 0, 1, 0], **kwargs)


def test_non_binary_labels_rejected():
    with pytest.raises(ValueError, match="binary"):
        audit(0, [1, 2, 1, 2], [1, 0, 1, 0], sensitive_features=["a", "a", "b", "b"])


def test_scan_guard_message_when_scan_module_absent(monkeypatch):
    import sys

    import ofijax

    monkeypatch.setitem(sys.modules, "ofijax.scan", None)  # import ofijax.scan -> ImportError
    monkeypatch.delattr(ofijax, "scan", raising=False)
    with pytest.raises(ImportError, match="ofijax.scan"):
        audit(0, Y, YH, sensitive_features=G, num_samples=0, scan=True)


def test_scan_reports_the_disadvantaged_subgroup(tmp_path):
    pytest.importorskip("ofijax.scan")
    rng = np.random.default_rng(4)
    n = 600
    df = pd.DataFrame({"race": rng.choice(["r1", "r2", "r3"], n), "sex": rng.choice(["F", "M"], n)})
    y = rng.integers(0, 2, n)  # 1 = beneficial
    yh = np.where(rng.random(n) < 0.85, y, 1 - y)
    planted = (df["race"] == "r2").to_numpy() & (df["sex"] == "M").to_numpy()
    yh = np.where(planted & (y == 1) & (rng.random(n) < 0.7), 0, yh)  # r2 & M wrongly denied
    af = audit(0, y, yh, sensitive_features=df["race"], num_samples=0, scan=True, scan_features=df,
               scan_side="negative", scan_num_samples=0)
    fpr = af.scan["fpr_scan"]
    assert fpr["subgroup"] == {"race": ["r2"], "sex": ["M"]} and fpr["side"] == "negative"
    assert fpr["scanned_size"] == int((planted & (y == 1)).sum()) and fpr["num_samples"] == 0
    assert fpr["size"] == int(planted.sum())
    assert math.isnan(fpr["p_value"]) and "wrongly denied" in fpr["description"]
    assert set(af.scan) == {"fpr_scan"}
    assert "Worst subgroups (scan)" in af.summary()
    assert af.to_dict()["scan"]["fpr_scan"]["p_value"] is None
    # the scan command on the same data (harmful-label orientation given directly)
    import ofijax.cli as cli

    path = tmp_path / "scan.csv"
    df.assign(y=1 - y, yh=1 - yh).to_csv(path, index=False)
    rc = cli.main(["scan", "--data", str(path), "--label", "y", "--pred", "yh", "--harmful-label",
                   "--attr", "race", "sex", "--side", "negative", "--replicates", "0", "--out", str(tmp_path / "s")])
    assert rc == 0
    res = json.loads((tmp_path / "s" / "scan.json").read_text())["results"]["fpr_scan"]
    assert res["subgroup"] == fpr["subgroup"] and res["score"] == pytest.approx(fpr["score"])


def test_scan_top_k_in_audit_report_and_cli(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 600
    df = pd.DataFrame({"race": rng.choice(["r1", "r2", "r3"], n), "sex": rng.choice(["F", "M"], n)})
    y = rng.integers(0, 2, n)  # 1 = beneficial
    yh = np.where(rng.random(n) < 0.85, y, 1 - y)
    p1 = (df["race"] == "r2").to_numpy() & (df["sex"] == "M").to_numpy()
    p2 = (df["race"] == "r3").to_numpy() & (df["sex"] == "F").to_numpy()
    yh = np.where((p1 | p2) & (y == 1) & (rng.random(n) < 0.7), 0, yh)
    af = audit(0, y, yh, sensitive_features=df["race"], num_samples=0, scan=True, scan_features=df,
               scan_side="negative", scan_num_samples=0, scan_top_k=2)
    fpr = af.scan["fpr_scan"]
    assert fpr["top_k"] == 2 and af.settings["scan_top_k"] == 2
    assert sorted(t["size"] for t in fpr["top"]) == sorted([int(p1.sum()), int(p2.sum())])
    assert {frozenset((c, v[0]) for c, v in t["subgroup"].items()) for t in fpr["top"]} == {
        frozenset({("race", "r2"), ("sex", "M")}), frozenset({("race", "r3"), ("sex", "F")})}
    assert fpr["subgroup"] == fpr["top"][0]["subgroup"] and fpr["size"] == fpr["top"][0]["size"]
    text = af.summary()
    assert "the top 2 subgroup(s)" in text and "#2: " in text and "no randomization test" in text
    assert af.to_dict()["scan"]["fpr_scan"]["top"][1]["p_value"] is None
    # default k = 1: the one-subgroup structure plus a one-element ``top``
    one = audit(0, y, yh, sensitive_features=df["race"], num_samples=0, scan=True, scan_features=df,
                scan_side="negative", scan_num_samples=0).scan["fpr_scan"]
    assert one["top_k"] == 1 and len(one["top"]) == 1 and one["top"][0]["subgroup"] == one["subgroup"]
    assert not one["description"].startswith("#1")
    with pytest.raises(ValueError, match="^scan_top_k: must be ≥ 1"):
        audit(0, y, yh, sensitive_features=df["race"], scan=True, scan_features=df, scan_top_k=0)
    with pytest.raises(TypeError, match="^top_k: must be an integer"):
        sig.run_scans(0, y, yh, df, top_k=True)
    # the audit command: --scan --top 2 writes both subgroups to report.json and report.md
    import ofijax.cli as cli

    path = tmp_path / "two.csv"
    df.assign(y=y, yh=yh).to_csv(path, index=False)
    out = tmp_path / "r"
    assert cli.main(["audit", "--data", str(path), "--label", "y", "--pred", "yh", "--group", "race",
                     "--bootstrap", "0", "--no-plots", "--scan", "--attr", "race", "sex", "--replicates",
                     "0", "--top", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "race in {r2} and sex in {M}" in printed and "race in {r3} and sex in {F}" in printed
    rep = json.loads((out / "report.json").read_text())
    assert len(rep["scan"]["fpr_scan"]["top"]) == 2 and len(rep["scan"]["tpr_scan"]["top"]) >= 1
    md = (out / "report.md").read_text()
    assert "race in {r2} and sex in {M}" in md and "race in {r3} and sex in {F}" in md


# ------------------------------------------------------------------ verdicts in words ------------
def _pair(af, i, j):
    return af.pairs.set_index(["group_i", "group_j"]).loc[(i, j)]


def test_verdict_text_algorithmic_bias_names_direction_numbers_and_di():
    # "lo" is wrongly denied (FN), "hi" accurate; DI also fails against "lo": same direction.
    y, yh, g = rows_from_cms([(20, 40, 0, 40), (60, 0, 0, 40)], ["lo", "hi"])
    r = _pair(audit(0, y, yh, sensitive_features=g, num_samples=0), "hi", "lo")
    assert r["verdict"] == "algorithmic bias" and r["disadvantaged"] == "lo"
    text = r["reading"]
    assert text.startswith("lo receives less unjustified benefit than hi: B_lo − B_hi = -0.400")
    assert "Holm-adjusted" in text and "pooled null" in text and "Algorithmic bias against lo" in text
    assert "lo is selected at 0.33× the rate of hi" in text and "fails the four-fifths rule as well" in text


def test_verdict_text_says_when_di_fails_the_other_way():
    # Adult-like: "f" has a low base rate, is selected less (DI fails against f), but "m" is the one
    # wrongly denied more (OFI > 0 for f): the reading must say both, without contradiction.
    y, yh, g = rows_from_cms([(30, 5, 5, 460), (200, 100, 5, 195)], ["f", "m"])
    r = _pair(audit(0, y, yh, sensitive_features=g, num_samples=0), "f", "m")
    assert r["verdict"] == "algorithmic bias" and r["disadvantaged"] == "m"
    assert "Algorithmic bias against m" in r["reading"]
    assert "in the other direction" in r["reading"] and "a disparity against f" in r["reading"]


def test_verdict_text_systemic_disparity_and_no_evidence():
    y, yh, g = rows_from_cms([(20, 0, 0, 80), (50, 0, 0, 50), (21, 0, 0, 79)], ["lo", "hi", "lo2"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0)
    sd = _pair(af, "hi", "lo")
    assert sd["verdict"] == "selection-rate disparity"
    assert "selection-rate disparity against lo" in sd["reading"] and "lo is selected at 0.40× the rate of hi" in sd["reading"]
    assert "is not significant" in sd["reading"] and "base rates" in sd["reading"]
    ne = _pair(af, "lo", "lo2")
    assert ne["verdict"] == "no evidence" and "no evidence of bias" in ne["reading"]
    assert "passes the four-fifths rule" in ne["reading"]


def test_minimum_evidence_rule_matches_the_exact_uniform_count():
    from math import comb

    from ofijax.auditing import min_group_size

    for alpha in (0.5, 0.2, 0.1, 0.05, 0.01, 0.001):
        n = min_group_size(alpha)
        # 2 of the C(n + 3, 3) matrices of M(n) reach B = ±1 (brute force over M(n) for small n)
        for m in (n - 1, n):
            if m >= 1:
                cms = [(a, b, c, m - a - b - c) for a in range(m + 1) for b in range(m + 1 - a)
                       for c in range(m + 1 - a - b)]
                assert len(cms) == comb(m + 3, 3)
                assert sum(abs(c[2] - c[1]) == m for c in cms) == 2
        assert Fraction(2, comb(n + 3, 3)) < Fraction(alpha).limit_denominator(10**6)
        assert n == 1 or Fraction(2, comb(n + 2, 3)) >= Fraction(alpha).limit_denominator(10**6)
    assert min_group_size(0.05) == 5


def test_small_groups_are_too_small_to_judge():
    # A one-row group that would otherwise read as a systemic disparity (DI 0 vs 0.5).
    y, yh, g = rows_from_cms([(25, 0, 0, 25), (0, 0, 0, 1), (24, 1, 1, 24)], ["a", "tiny", "b"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=50)
    for other in ("a", "b"):
        r = _pair(af, other, "tiny") if other < "tiny" else _pair(af, "tiny", other)
        assert r["verdict"] == "too small to judge" and pd.isna(r["disadvantaged"])
        assert "tiny has only 1 people" in r["reading"] and "fewer than 5" in r["reading"]
    assert _pair(af, "a", "b")["verdict"] == "no evidence"
    assert af.settings["min_group_size"] == 5 and any("too small to judge" in n for n in af.notes)
    loose = audit(0, y, yh, sensitive_features=g, num_samples=0, min_group_size=1)
    assert "too small to judge" not in set(loose.pairs["verdict"])
    assert audit(0, y, yh, sensitive_features=g, num_samples=0, alpha=0.01).settings["min_group_size"] == 9


def test_findings_sorted_by_severity_and_counted():
    y, yh, g = rows_from_cms([(20, 40, 0, 40), (60, 0, 0, 40), (20, 0, 0, 80), (0, 0, 0, 2)],
                             ["x", "y", "z", "w"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0)
    text = af.summary()
    first = text.splitlines()[0]
    counts = af.pairs["verdict"].value_counts()
    assert first.startswith("Findings: ") and f"{counts['algorithmic bias']} algorithmic bias" in first
    assert f"{counts['too small to judge']} too small to judge" in first
    body = text.split("Findings, most severe first:")[1]
    positions = [body.find(v_) for v_ in ("Algorithmic bias", "selection-rate disparity", "too small to judge")]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
    md = ofijax_render(af)
    assert "## How to read this report" in md and "selection rate b" in md and "E[b]" in md
    for word in ("TE (treatment equality)", "DI (disparate impact)", "NOT adjusted", "null"):
        assert word in md
    assert af.to_dict()["verdict_counts"]["algorithmic bias"] == counts["algorithmic bias"]


def ofijax_render(af):
    from ofijax.auditing import render_report

    return render_report(af, "markdown")


# ------------------------------------------------------------------ group columns ----------------
def test_continuous_group_column_refused_unless_binned():
    rng = np.random.default_rng(3)
    n = 400
    age = pd.Series(rng.integers(17, 90, n), index=np.arange(n)[::-1], name="age")
    y = pd.Series(rng.integers(0, 2, n), index=age.index)
    yh = pd.Series(rng.integers(0, 2, n), index=age.index)
    with pytest.raises(ValueError, match=r"^sensitive_features: column 'age' has \d+ distinct values"):
        audit(0, y, yh, sensitive_features=age)
    af = audit(0, y, yh, sensitive_features=age, bins=4, num_samples=0)
    edges = af.settings["bins"]["age"]
    assert edges == pytest.approx(np.quantile(age.to_numpy(), [0, 0.25, 0.5, 0.75, 1]).tolist())
    assert len(af.groups) == 4 and af.groups[0].startswith("1: [")
    # counts per bin equal a NumPy reference, whatever the index order
    ref = np.searchsorted(np.asarray(edges[1:-1]), age.to_numpy(), side="left")
    assert af.by_group["n"].tolist() == np.bincount(ref, minlength=4).tolist()
    af2 = audit(0, y, yh, sensitive_features=pd.DataFrame({"age": age}), bins={"age": [17, 30, 50, 90]},
                num_samples=0)
    assert af2.settings["bins"] == {"age": [17.0, 30.0, 50.0, 90.0]} and len(af2.groups) == 3
    with pytest.raises(ValueError, match="^bins: values of 'age' lie outside"):
        audit(0, y, yh, sensitive_features=age, bins={"age": [20, 50, 90]})
    with pytest.raises(ValueError, match="^bins: column 'sex' is not a group column"):
        audit(0, y, yh, sensitive_features=age, bins={"sex": 3})
    many = pd.Series([f"id{i}" for i in range(n)], index=age.index)
    with pytest.raises(ValueError, match="merge rare values"):
        audit(0, y, yh, sensitive_features=many)


def test_ten_thousand_groups_refused_quickly():
    n = 20_000
    g = np.arange(n) % 10_000
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="max_levels"):
        audit(0, y, y, sensitive_features=g)
    with pytest.raises(ValueError, match=r"10000 groups \(49,995,000 pairs\) exceed"):
        audit(0, y, y, sensitive_features=g, max_levels=20_000)


# ------------------------------------------------------------------ deprecation path -------------
def test_old_call_style_warns_and_uses_key_zero():
    with pytest.warns(FutureWarning, match="key first"):
        old = audit(Y, YH, sensitive_features=G, num_samples=50)
    new = audit(0, Y, YH, sensitive_features=G, num_samples=50)
    assert np.array_equal(old.ci_low, new.ci_low, equal_nan=True)
    with pytest.warns(DeprecationWarning, match="num_bootstrap is deprecated; use num_samples"):
        dep = audit(0, Y, YH, sensitive_features=G, num_bootstrap=50)
    assert dep.settings["num_samples"] == 50 and np.array_equal(dep.ci_high, new.ci_high, equal_nan=True)
    import jax

    typed = audit(jax.random.key(0), Y, YH, sensitive_features=G, num_samples=50)
    assert np.array_equal(typed.ci_low, new.ci_low, equal_nan=True)
    with pytest.raises(TypeError, match="^key:"):
        audit("seed", Y, YH, sensitive_features=G)


def test_adjust_pvalues_one_place():
    from ofijax.auditing import adjust_pvalues

    p = np.array([0.01, 0.04, 0.03, np.nan])
    assert np.allclose(adjust_pvalues(p[:3], "bonferroni"), [0.03, 0.12, 0.09])
    assert np.allclose(adjust_pvalues(p[:3], "holm"), [0.03, 0.06, 0.06])  # Holm by hand
    assert np.allclose(adjust_pvalues(p[:3], "none"), p[:3])
    y, yh, g = rows_from_cms(CMS, LABELS)
    af = audit(0, y, yh, sensitive_features=g, num_samples=0, correction="bonferroni")
    assert np.allclose(af.pairs["p_adjusted"], np.minimum(af.pairs["p_value"] * 3, 1))


def test_heatmaps_escape_labels_and_cap_size(tmp_path):
    from ofijax.auditing import write_heatmaps

    y, yh, g = rows_from_cms([(20, 40, 0, 40), (60, 0, 0, 40)], ["$\\frac{a$", "b_c"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0)
    files, note = write_heatmaps(af, str(tmp_path))
    assert files == ["ofi_heatmap.png", "di_heatmap.png"] and note is None
    assert all((tmp_path / f).stat().st_size > 1000 for f in files)
    many = np.repeat(np.arange(31), 6)
    af31 = audit(0, np.tile([1, 0, 1, 0, 1, 1], 31), np.tile([1, 0, 0, 1, 1, 0], 31),
                 sensitive_features=many, num_samples=0, max_levels=40)
    files, note = write_heatmaps(af31, str(tmp_path / "none"))
    assert files == [] and "31 groups exceed" in note


def test_simultaneous_intervals_match_the_multiplicity_correction(af):
    p = af.pairs
    assert (p["ci_low_simultaneous"] <= p["ci_low"]).all() and (p["ci_high_simultaneous"] >= p["ci_high"]).all()
    assert (p["ci_low_simultaneous"] < p["ci_low"]).any()  # 3 pairs: 98.3% > 95%, strictly wider
    y, yh, g = rows_from_cms(CMS, LABELS)
    none = audit(0, y, yh, sensitive_features=g, num_samples=500, correction="none").pairs
    assert np.allclose(none["ci_low_simultaneous"], none["ci_low"])
    assert "simultaneous (Bonferroni)" in af.summary() and "simultaneous" not in audit(
        0, y, yh, sensitive_features=g, num_samples=50, correction="none").summary().split("Pairs")[1]
