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
    assert hl["di"] == pytest.approx(2.5) and hl["verdict"] == "systemic disparity"
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
