"""Trust checks, audit side: group-order invariance of four-fifths and verdicts, float64 batch
numbers, distinct group labels, column names with ``data=``, duplicate group columns, text
labels, verdict wording, "-0.00", and the one method vocabulary."""

import itertools
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax import audit, audit_batch, four_fifths_pair, impact_ratio, ofi_test, pairwise_ofi_test
from ofijax.auditing import VERDICT_RENAMES, VERDICTS, audit_from_counts


def rows_from_cms(cms, labels):
    """(y, y_hat, group) rows of confusion matrices: TP (1,1), FN (1,0), FP (0,1), TN (0,0)."""
    y, yh, g = [], [], []
    for cm, lab in zip(cms, labels):
        for (yt, yp), count in zip(((1, 1), (1, 0), (0, 1), (0, 0)), cm):
            y += [yt] * count
            yh += [yp] * count
            g += [lab] * count
    return np.array(y), np.array(yh), np.array(g, dtype=object)


def _rate(cm, variant="paper"):
    tp, fn, fp, tn = (int(x) for x in cm)
    den = tp + fn + fp + tn if variant == "paper" else tp + fn
    return None if den == 0 else Fraction(tp + fp, den)


def _ratio_ref(ci, cj, variant="paper"):
    """Independent reference: min/max of the two Fraction rates (None where undefined)."""
    ri, rj = _rate(ci, variant), _rate(cj, variant)
    if ri is None or rj is None or max(ri, rj) == 0:
        return None
    return min(ri, rj) / max(ri, rj)


def _ff_ref(ci, cj, variant="paper"):
    ir = _ratio_ref(ci, cj, variant)
    if ir is None:
        return None
    if ir >= Fraction(4, 5):
        return 0
    return 1 if _rate(ci, variant) > _rate(cj, variant) else -1


# ------------------------------------------------------------------------------------------------
# Item 1: impact ratio and the four-fifths rule do not depend on group names or order
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["paper", "pp_over_p"])
def test_impact_ratio_and_four_fifths_pair_match_fractions(variant):
    rng = np.random.default_rng(1)
    cms = rng.integers(0, 6, size=(300, 2, 4))
    cms[:40, 0, [0, 2]] = 0  # group i selects no one
    cms[40:60, :, [0, 2]] = 0  # neither selects anyone
    cms[60:70, 1] = [4, 0, 1, 0]  # rates 1 vs ...
    cms[cms.sum(-1) == 0] = [0, 0, 0, 1]
    ir = np.asarray(impact_ratio(cms[:, 0], cms[:, 1], variant=variant))
    ff = np.asarray(four_fifths_pair(cms[:, 0], cms[:, 1], variant=variant))
    ir_swapped = np.asarray(impact_ratio(cms[:, 1], cms[:, 0], variant=variant))
    ff_swapped = np.asarray(four_fifths_pair(cms[:, 1], cms[:, 0], variant=variant))
    for t in range(cms.shape[0]):
        ref = _ratio_ref(cms[t, 0], cms[t, 1], variant)
        if ref is None:
            assert np.isnan(ir[t]) and np.isnan(ff[t]) and np.isnan(ff_swapped[t])
        else:
            assert ir[t] == float(ref) == ir_swapped[t]
            assert ff[t] == _ff_ref(cms[t, 0], cms[t, 1], variant) == -ff_swapped[t]


def test_four_fifths_exact_tie_passes():
    # rates 4/10 and 5/10: ratio exactly 4/5 passes; 39/100 vs 1/2 fails
    assert float(four_fifths_pair([4, 0, 0, 6], [5, 0, 0, 5])) == 0
    assert float(four_fifths_pair([39, 0, 0, 61], [50, 0, 0, 50])) == -1


def test_zero_selections_fail_whatever_the_group_is_called():
    # "A": 0 of 25 selected; "M": 12 of 30 selected. The pair fails whichever group sorts first: a
    # directional DI would read 0 ("fails") as A-M but NaN ("undefined") once A is renamed Z.
    cms = [(0, 0, 0, 25), (12, 0, 0, 18)]
    out = {}
    for name in ("A", "Z"):
        y, yh, g = rows_from_cms(cms, [name, "M"])
        af = audit(0, y, yh, sensitive_features=g, num_samples=0)
        r = af.pairs.iloc[0]
        assert r["impact_ratio"] == 0.0
        assert r["four_fifths"] == ("fails: i selected less" if r["group_i"] == name else "fails: j selected less")
        assert r["verdict"] in ("algorithmic bias", "selection-rate disparity")
        out[name] = (r["verdict"], "renamed" if r["disadvantaged"] == name else r["disadvantaged"])
    assert out["A"] == out["Z"]
    assert out["A"][0] == "selection-rate disparity" and out["A"][1] == "renamed"


def _pair_view(af_pairs, rename_back):
    """{frozenset(pair): (verdict, disadvantaged, four-fifths failing group, ir, p, p_adj, ofi i->j)}."""
    view = {}
    for _, r in af_pairs.iterrows():
        gi, gj = rename_back[r["group_i"]], rename_back[r["group_j"]]
        ff = r["four_fifths"]
        loser = None if ff in ("passes", "undefined") else (gi if ff.endswith("i selected less") else gj)
        dis = None if pd.isna(r["disadvantaged"]) or r["disadvantaged"] is None else rename_back[r["disadvantaged"]]
        key = tuple(sorted((gi, gj)))
        sign = 1.0 if (gi, gj) == key else -1.0
        view[key] = (r["verdict"], dis, loser, ff == "undefined", r["impact_ratio"], r["p_value"],
                     r["p_adjusted"], sign * r["ofi"])
    return view


def test_audit_verdicts_invariant_under_renaming_and_reordering():
    rng = np.random.default_rng(7)
    cms = [(0, 9, 0, 21), (14, 3, 6, 17), (5, 12, 1, 22), (9, 1, 9, 11), (0, 4, 0, 8)]
    names = ["A", "B", "C", "D", "E"]
    y, yh, g = rows_from_cms(cms, names)
    base = audit(0, y, yh, sensitive_features=g, num_samples=0)
    ref = _pair_view(base.pairs, {n: n for n in names})
    assert "selection-rate disparity" in {v[0] for v in ref.values()}
    assert any(v[3] for v in ref.values())  # A vs E: nobody selected in either: undefined
    for perm in [("Z", "Y", "X", "W", "V"), ("m", "a", "z", "b", "q"), ("3", "1", "2", "0", "4")]:
        mapping = dict(zip(names, perm))
        order = rng.permutation(len(y))
        g2 = np.array([mapping[x] for x in g], dtype=object)[order]
        af = audit(0, y[order], yh[order], sensitive_features=g2, num_samples=0)
        got = _pair_view(af.pairs, {v_: k for k, v_ in mapping.items()})
        assert got.keys() == ref.keys()
        for k in ref:
            assert got[k][:4] == ref[k][:4], k
            np.testing.assert_array_equal(np.array(got[k][4:], float), np.array(ref[k][4:], float))
        # OFI antisymmetric, impact ratio symmetric
        np.testing.assert_array_equal(af.ofi, -af.ofi.T)
        np.testing.assert_array_equal(af.impact_ratio, af.impact_ratio.T)


def test_batch_verdicts_invariant_under_renaming():
    cms = [(0, 9, 0, 21), (14, 3, 6, 17), (5, 12, 1, 22), (0, 4, 0, 8)]
    names = ["A", "B", "C", "D"]
    y, yh, g = rows_from_cms(cms, names)
    preds = np.stack([yh, np.where(np.arange(len(y)) % 3 == 0, 1, yh)])
    base = audit_batch(y, preds, sensitive_features=g)
    mapping = dict(zip(names, ["Z", "Y", "X", "W"]))
    ren = audit_batch(y, preds, sensitive_features=np.array([mapping[x] for x in g], dtype=object))
    back = {v_: k for k, v_ in mapping.items()}
    for c in (0, 1):
        a = _pair_view(base.pairs[base.pairs["candidate"] == c], {n: n for n in names})
        b = _pair_view(ren.pairs[ren.pairs["candidate"] == c], back)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k][:4] == b[k][:4]
            np.testing.assert_array_equal(np.array(a[k][4:], float), np.array(b[k][4:], float))
    assert base.candidates["verdict"].tolist() == ren.candidates["verdict"].tolist()
    assert base.candidates["four_fifths_pass"].tolist() == ren.candidates["four_fifths_pass"].tolist()


# ------------------------------------------------------------------------------------------------
# Item 6: audit_batch numbers are audit's, to float64 precision, whatever jax_enable_x64 says
# ------------------------------------------------------------------------------------------------


def test_batch_ofi_and_di_equal_audit_and_fractions(x64):
    rng = np.random.default_rng(3)
    n = 997
    y = rng.integers(0, 2, n)
    g = rng.choice(np.array(["p", "q", "r"], dtype=object), n, p=[0.31, 0.33, 0.36])
    preds = rng.integers(0, 2, (3, n))
    ba = audit_batch(y, preds, sensitive_features=g)
    for c in range(3):
        af = audit(0, y, preds[c], sensitive_features=g, num_samples=0)
        rows = ba.pairs[ba.pairs["candidate"] == c].reset_index(drop=True)
        ap = af.pairs.reset_index(drop=True)
        for col in ("ofi", "di", "impact_ratio", "p_value", "p_adjusted"):
            np.testing.assert_array_equal(rows[col].to_numpy(float), ap[col].to_numpy(float), err_msg=col)
        cms = ba.cms[c]
        for t, (i, j) in enumerate(itertools.combinations(range(3), 2)):
            ci, cj = (tuple(int(x) for x in cms[i]), tuple(int(x) for x in cms[j]))
            b_i = Fraction(ci[2] - ci[1], sum(ci))
            b_j = Fraction(cj[2] - cj[1], sum(cj))
            assert abs(Fraction(rows.loc[t, "ofi"]) - (b_i - b_j)) <= Fraction(1, 2**52)
            di = _rate(ci) / _rate(cj)
            assert abs(Fraction(rows.loc[t, "di"]) - di) <= di / 2**51
            assert rows.loc[t, "impact_ratio"] == float(_ratio_ref(ci, cj))


# ------------------------------------------------------------------------------------------------
# Items 7, 8, 9, 11: group labels, data=, duplicate columns, text labels
# ------------------------------------------------------------------------------------------------


def test_mixed_text_and_number_groups_are_refused():
    y = np.array([1, 0] * 10)
    g = np.array([1] * 10 + ["1"] * 10, dtype=object)
    for call in (lambda: audit(0, y, y, sensitive_features=g, num_samples=0),
                 lambda: audit_batch(y, y[None], sensitive_features=g),
                 lambda: ofijax.group_confusion_matrices(y, y, g)):
        with pytest.raises(ValueError, match=r"^sensitive_features: mixes text and non-text"):
            call()
    # one type is fine: the same values as text are one group each, as numbers too
    both = np.array([1] * 10 + [2] * 10, dtype=object)
    assert audit(0, y, y, sensitive_features=both.astype(str), num_samples=0).groups == ("1", "2")
    assert audit(0, y, y, sensitive_features=both, num_samples=0).groups == (1, 2)


def test_data_keyword_matches_columns_passed_directly():
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14)], ["f", "m"])
    df = pd.DataFrame({"label": y, "pred": yh, "sex": g, "w": np.ones(len(y), int)}, index=np.arange(len(y)) * 3)
    a = audit(0, "label", "pred", sensitive_features="sex", data=df, num_samples=0)
    b = audit(0, df.label, df.pred, sensitive_features=df.sex, num_samples=0)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    c = audit(0, "label", "pred", sensitive_features=["sex"], sample_weight="w", data=df, num_samples=0)
    assert c.pairs["ofi"].tolist() == b.pairs["ofi"].tolist()
    ba = audit_batch("label", ["pred", "label"], sensitive_features="sex", data=df)
    bb = audit_batch(df.label, df[["pred", "label"]], sensitive_features=df.sex)
    pd.testing.assert_frame_equal(ba.pairs, bb.pairs)


@pytest.mark.parametrize("call, match", [
    (lambda df: audit(0, df.label, df.pred, sensitive_features="sex"),
     r"^sensitive_features: got the column name 'sex' but no data; pass the DataFrame too"),
    (lambda df: audit(0, "label", "pred", sensitive_features="sex", data=df, num_samples=0),
     None),
    (lambda df: audit(0, "label", "nope", sensitive_features="sex", data=df),
     r"^y_pred: data has no column 'nope'"),
    (lambda df: audit(0, "label", "pred", sensitive_features=["sex", "sex"], data=df),
     r"^sensitive_features: names a column twice"),
    (lambda df: audit_batch(df.label, df[["pred"]], sensitive_features="sex"),
     r"^sensitive_features: got the column name 'sex' but no data"),
    (lambda df: audit_batch("label", ["pred"], sensitive_features="sex", data=df, scores="x"),
     r"^scores: data has no column 'x'"),
])
def test_column_name_errors_name_the_argument(call, match):
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14)], ["f", "m"])
    df = pd.DataFrame({"label": y, "pred": yh, "sex": g})
    if match is None:
        call(df)
        return
    with pytest.raises(ValueError, match=match):
        call(df)


def test_data_must_be_a_frame():
    with pytest.raises(TypeError, match=r"^data: must be a DataFrame"):
        audit(0, "label", "pred", sensitive_features="sex", data=[1, 2])


def test_duplicate_group_column_names_are_refused():
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14)], ["f", "m"])
    sf = pd.DataFrame({"a": g, "b": g})
    sf.columns = ["a", "a"]
    for call in (lambda: audit(0, y, yh, sensitive_features=sf, num_samples=0),
                 lambda: audit_batch(y, yh[None], sensitive_features=sf),
                 lambda: ofijax.group_confusion_matrices(y, yh, sf)):
        with pytest.raises(ValueError, match=r"^sensitive_features: the DataFrame has duplicate column names \('a'\)"):
            call()


def test_text_labels_one_rule_for_every_container():
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14)], ["f", "m"])
    ref = audit(0, y, yh, sensitive_features=g, num_samples=0).pairs
    ref_b = audit_batch(y, yh[None], sensitive_features=g).pairs
    forms = {
        "<U1": lambda a: a.astype(str),
        "object": lambda a: a.astype(str).astype(object),
        "list": lambda a: [str(x) for x in a],
        "Series": lambda a: pd.Series(a.astype(str)),
        "bytes": lambda a: a.astype("S1"),
    }
    for name, f in forms.items():
        got = audit(0, f(y), f(yh), sensitive_features=g, num_samples=0).pairs
        pd.testing.assert_frame_equal(got, ref, obj=name)
        got_b = audit_batch(f(y), np.asarray(f(yh))[None], sensitive_features=g).pairs
        pd.testing.assert_frame_equal(got_b, ref_b, obj=name)
    # anything but exactly "0"/"1" is refused in every container, naming the argument
    for bad in (["yes", "no"], ["1.0", "0.0"], [" 1", "0"]):
        arr = np.array(bad * (len(y) // 2))
        for form in (arr, arr.astype(object), list(arr)):
            with pytest.raises(ValueError, match=r"^y_true: must be binary 0/1"):
                audit(0, form, yh, sensitive_features=g, num_samples=0)
            with pytest.raises(ValueError, match=r"^y_pred: must be binary 0/1"):
                audit(0, y, form, sensitive_features=g, num_samples=0)


# ------------------------------------------------------------------------------------------------
# Item 15: verdict wording; item 17: no "-0.00"
# ------------------------------------------------------------------------------------------------


def test_verdict_says_what_was_measured():
    assert VERDICTS == ("algorithmic bias", "selection-rate disparity", "too small to judge", "no evidence")
    assert VERDICT_RENAMES == {"systemic disparity": "selection-rate disparity"}
    assert all(v_ in VERDICTS for v_ in VERDICT_RENAMES.values())
    y, yh, g = rows_from_cms([(20, 0, 0, 80), (50, 0, 0, 50)], ["lo", "hi"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=0)
    r = af.pairs.iloc[0]
    assert r["verdict"] == "selection-rate disparity" and r["disadvantaged"] == "lo"
    assert "(DI fails)" in r["reading"] and "no significant algorithmic bias" in r["reading"]
    assert "systemic" not in r["reading"] and "systemic" not in af.summary(explain=True).split("How to read")[0]


def test_reports_print_no_negative_zero():
    # B_a = -1/50, B_b = 0: OFI(a, b) = -0.02, which rounds to zero at one decimal
    y, yh, g = rows_from_cms([(20, 1, 0, 29), (20, 0, 0, 30)], ["a", "b"])
    af = audit(0, y, yh, sensitive_features=g, num_samples=50)
    for text in (af.summary(digits=1), ofijax.auditing.render_report(af, "markdown", digits=1)):
        assert not re.search(r"-0\.0(?![0-9]*[1-9])", text), text


# ------------------------------------------------------------------------------------------------
# One method vocabulary, default "auto"; p_method per pair
# ------------------------------------------------------------------------------------------------


def test_method_vocabulary_and_p_method():
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14), (8, 2, 2, 18)], ["a", "b", "c"])
    auto = audit(0, y, yh, sensitive_features=g, num_samples=0)
    assert auto.settings["method"] == "auto"
    assert set(auto.pairs["p_method"]) == {"exact"}
    exact = audit(0, y, yh, sensitive_features=g, num_samples=0, method="exact")
    np.testing.assert_array_equal(auto.p_value, exact.p_value)
    mc = audit(0, y, yh, sensitive_features=g, num_samples=200, method="monte_carlo")
    assert set(mc.pairs["p_method"]) == {"monte_carlo"}
    assert "Monte Carlo test (200 draws)" in mc.pairs["reading"].iloc[0]
    assert np.all(np.abs(mc.p_value - exact.p_value) < 0.12)
    with pytest.raises(ValueError, match=r"^method: must be one of 'auto', 'exact', 'saddlepoint', 'monte_carlo'; got 'fast'"):
        audit(0, y, yh, sensitive_features=g, method="fast")
    for f in (ofi_test, pairwise_ofi_test):
        with pytest.raises(ValueError, match=r"^method: must be one of 'auto', 'exact', 'saddlepoint', 'monte_carlo'"):
            f(*([[1, 2, 3, 4], [2, 2, 2, 2]] if f is ofi_test else [[[1, 2, 3, 4], [2, 2, 2, 2]]]), method="fast")
    t = ofi_test([10, 4, 3, 13], [6, 9, 1, 14])
    assert t.method == "exact" and t.p_value == exact.pairs["p_value"].iloc[0]
    t_mc = ofi_test([10, 4, 3, 13], [6, 9, 1, 14], method="monte_carlo", key=0, num_samples=200)
    assert t_mc.method == "monte_carlo"


def test_saddlepoint_is_flagged_and_close_to_exact():
    cms = [[900, 300, 250, 1100], [800, 420, 200, 1200]]
    ex = audit_from_counts(0, cms, ["x", "y"], method="exact", num_samples=0)
    sp = audit_from_counts(0, cms, ["x", "y"], method="saddlepoint", num_samples=0)
    auto = audit_from_counts(0, cms, ["x", "y"], num_samples=0)  # stats.audit_counts passes "auto" here
    assert ex.pairs["p_method"].iloc[0] == "exact"
    assert sp.pairs["p_method"].iloc[0] == "saddlepoint"
    assert auto.pairs["p_method"].iloc[0] in ("exact", "saddlepoint")
    p_ex, p_sp = ex.pairs["p_value"].iloc[0], sp.pairs["p_value"].iloc[0]
    assert abs(p_sp - p_ex) <= 2e-3 * p_ex
    assert any("approximate" in n for n in sp.notes) and not any("approximate" in n for n in ex.notes)


def test_batch_monte_carlo_needs_key_and_ignores_candidate_order():
    y, yh, g = rows_from_cms([(10, 4, 3, 13), (6, 9, 1, 14)], ["a", "b"])
    preds = np.stack([yh, 1 - yh, np.ones_like(yh)])
    with pytest.raises(ValueError, match=r"^key: method='monte_carlo' needs a PRNG key"):
        audit_batch(y, preds, sensitive_features=g, method="monte_carlo")
    a = audit_batch(y, preds, sensitive_features=g, method="monte_carlo", key=1, num_samples=200)
    b = audit_batch(y, preds[::-1], sensitive_features=g, method="monte_carlo", key=1, num_samples=200)
    assert set(a.pairs["p_method"]) <= {"monte_carlo", "exact"} and a.pairs["approximate"].any()
    np.testing.assert_array_equal(a.pairs["p_value"].to_numpy(), b.pairs["p_value"].to_numpy()[::-1])
    ex = audit_batch(y, preds, sensitive_features=g)
    assert set(ex.pairs["p_method"]) == {"exact"}
    assert np.all(np.abs(a.pairs["p_value"].to_numpy() - ex.pairs["p_value"].to_numpy()) < 0.15)


def test_monte_carlo_p_values_do_not_depend_on_group_names():
    cms = [(10, 4, 3, 13), (6, 9, 1, 14), (8, 2, 2, 18)]
    y, yh, g = rows_from_cms(cms, ["a", "b", "c"])
    a = audit(0, y, yh, sensitive_features=g, num_samples=200, method="monte_carlo")
    ren = {"a": "z", "b": "y", "c": "x"}  # reverses the sorted order
    b = audit(0, y, yh, sensitive_features=np.array([ren[x] for x in g], dtype=object), num_samples=200,
              method="monte_carlo")
    np.testing.assert_array_equal(a.p_value, b.p_value[::-1, ::-1])
    # ofi_test and pairwise_ofi_test: the same estimate for a pair, either way round
    t1 = ofi_test(cms[0], cms[1], method="monte_carlo", key=3, num_samples=200)
    t2 = ofi_test(cms[1], cms[0], method="monte_carlo", key=3, num_samples=200)
    assert t1.p_value == t2.p_value and t1.ofi == -t2.ofi


def test_bootstrap_intervals_do_not_depend_on_group_names():
    cms = [(10, 4, 3, 13), (6, 9, 1, 14), (8, 2, 2, 18)]
    y, yh, g = rows_from_cms(cms, ["a", "b", "c"])
    ren = {"a": "z", "b": "y", "c": "x"}
    g2 = np.array([ren[x] for x in g], dtype=object)
    a = audit(0, y, yh, sensitive_features=g, num_samples=200)
    b = audit(0, y, yh, sensitive_features=g2, num_samples=200)
    for m in ("ci_low", "ci_high"):
        np.testing.assert_array_equal(getattr(a, m), getattr(b, m)[::-1, ::-1])
    w = np.where(np.arange(len(y)) % 3 == 0, 0.5, 1.5)
    a = audit(0, y, yh, sensitive_features=g, sample_weight=w, num_samples=200)
    b = audit(0, y, yh, sensitive_features=g2, sample_weight=w, num_samples=200)
    for m in ("ci_low", "ci_high"):
        np.testing.assert_array_equal(getattr(a, m), getattr(b, m)[::-1, ::-1])
    assert a.pairs["verdict"].tolist() == b.pairs["verdict"].tolist()[::-1]
