"""Tests of the OFI-paper reproductions (experiments/ofi_*.py) and their building blocks."""

from __future__ import annotations

import importlib
import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax.datasets import load_adult, load_compas

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _script(name):
    if str(EXPERIMENTS) not in sys.path:
        sys.path.insert(0, str(EXPERIMENTS))
    return importlib.import_module(name)


# ---------------------------------------------------------------------------- Table 1


def _b(cm):
    tp, fn, fp, tn = cm
    return Fraction(fp - fn, tp + fn + fp + tn)


def _di(ci, cj, variant):
    def rate(c):
        tp, fn, fp, tn = c
        den = tp + fn + fp + tn if variant == "paper" else tp + fn
        return None if den == 0 else Fraction(tp + fp, den)

    ri, rj = rate(ci), rate(cj)
    if ri is None or rj is None or rj == 0:
        return None
    return ri / rj


def _te(ci, cj):
    if ci[2] == 0 or cj[2] == 0:
        return None
    return Fraction(ci[1], ci[2]) - Fraction(cj[1], cj[2])


def test_table1_through_public_api():
    sc = {s.name: s for s in ofijax.paper_table1()}
    expected = {  # paper: OFI -0.06 / 0.22 / 0.23, DI 0.38 / NaN (1 by context) / 2.71
        "A": (Fraction(-1, 18), Fraction(3, 8), Fraction(7, 8)),
        "B": (Fraction(2, 9), None, None),
        "alpha": (Fraction(30, 133), Fraction(19, 7), Fraction(4)),
    }
    for name, (o, di, di2) in expected.items():
        ci, cj = (tuple(int(x) for x in c) for c in (sc[name].cm_i, sc[name].cm_j))
        assert _b(ci) - _b(cj) == o
        assert _di(ci, cj, "paper") == di and _di(ci, cj, "pp_over_p") == di2
        assert float(ofijax.ofi(ci, cj)) == pytest.approx(float(o), abs=1e-6)
        got = float(ofijax.disparate_impact(ci, cj))
        got2 = float(ofijax.disparate_impact(ci, cj, variant="pp_over_p"))
        for g, want in ((got, di), (got2, di2)):
            assert math.isnan(g) if want is None else g == pytest.approx(float(want), rel=1e-6)
    assert float(ofijax.disparate_impact(sc["B"].cm_i, sc["B"].cm_j, undefined="one")) == 1.0
    # The paper's printed (2-decimal) values are the exact ones rounded.
    assert [round(float(x), 2) for x in (Fraction(-1, 18), Fraction(2, 9), Fraction(30, 133))] == [
        -0.06,
        0.22,
        0.23,
    ]
    assert [round(float(x), 2) for x in (Fraction(3, 8), Fraction(19, 7))] == [0.38, 2.71]


# ---------------------------------------------------------------------------- COMPAS


@pytest.mark.parametrize("variant", ["violent", "general"])
def test_compas_counts_equal_pandas_crosstab(variant):
    comp = _script("ofi_compas")
    groups, cms = comp.compas_cms(variant)
    df = load_compas(variant)
    text = "v_score_text" if variant == "violent" else "score_text"
    # Direct pandas computation on the raw columns, in the beneficial orientation.
    not_recid = df["two_year_recid"] == 0
    low = df[text] == "Low"
    cells = pd.DataFrame(
        {
            "TP": not_recid & low,
            "FN": not_recid & ~low,
            "FP": ~not_recid & low,
            "TN": ~not_recid & ~low,
            "race": df["race"],
        }
    )
    want = cells.groupby("race")[["TP", "FN", "FP", "TN"]].sum()
    assert list(groups) == list(want.index)
    np.testing.assert_array_equal(cms, want.to_numpy())
    assert cms.sum() == (4020 if variant == "violent" else 6172)


def test_compas_rounded_percentages_are_the_papers_inputs():
    comp = _script("ofi_compas")
    groups, cms = comp.compas_cms("violent")
    pct = comp.rounded_percentages(cms)
    for g, row in zip(groups, pct):
        assert tuple(int(x) for x in row) == comp.PAPER_PERCENT[g]
        assert int(cms[groups.index(g)].sum()) == comp.PAPER_N[g]


def test_compas_script_quick(tmp_path):
    comp = _script("ofi_compas")
    nums = comp.run(tmp_path, quick=True)
    assert nums["rows_violent"] == 4020 and nums["rows_general"] == 6172
    assert nums["paper_percentages_match"] is True
    # Exact OFI(African-American, Caucasian) on the violent subset, from the integer counts.
    want = Fraction(154 - 468, 1918) - Fraction(110 - 198, 1459)
    assert nums["ofi_aa_cauc_violent"] == pytest.approx(float(want), abs=1e-6)
    for f in (
        "ofi_compas_violent_heatmaps.png",
        "ofi_compas_key_numbers.csv",
        "ofi_compas_general_ofi.csv",
        "ofi_compas_paper_inputs_di_pp_over_p.csv",
    ):
        assert (tmp_path / f).stat().st_size > 0
    ofi = pd.read_csv(tmp_path / "ofi_compas_violent_ofi.csv", index_col=0).to_numpy()
    np.testing.assert_allclose(ofi, -ofi.T, atol=1e-6)  # antisymmetric


# ---------------------------------------------------------------------------- employment


def test_sklearn_layout_conversion_and_the_authors_misreading():
    from sklearn.metrics import confusion_matrix

    emp = _script("ofi_employment")
    y = np.array([1, 1, 0, 0, 0, 1, 0, 1, 1, 0])
    yhat = np.array([1, 0, 1, 1, 0, 1, 1, 0, 0, 0])
    g = np.array(["a"] * 5 + ["b"] * 5)
    names, cms, sk = emp.group_cms(y, yhat, g)
    assert names == ("a", "b")
    # Notes §2: y = [1,1,0,0,0], ŷ = [1,0,1,1,0] gives TP 1, FN 1, FP 2, TN 1 and B = +1/5.
    np.testing.assert_array_equal(cms[0], [1, 1, 2, 1])
    np.testing.assert_array_equal(sk[0], confusion_matrix(y[:5], yhat[:5], labels=[0, 1]))
    assert float(ofijax.marginal_benefit(cms[0])) == pytest.approx(0.2)
    # Reading scikit-learn's [[TN, FP], [FN, TP]] as [[TP, FN], [FP, TN]] gives -B.
    assert float(ofijax.marginal_benefit(sk[0].reshape(4))) == pytest.approx(-0.2)


def test_employment_script_quick(tmp_path):
    emp = _script("ofi_employment")
    nums = emp.adult_study(tmp_path, seed=0, quick=True)
    assert nums["adult_rf_ofi_sign_flipped_by_authors_layout"] is True
    assert 0.7 < nums["adult_rf_accuracy"] < 1.0 and 0.6 < nums["adult_nb_accuracy"] < 1.0
    counts = pd.read_csv(tmp_path / "ofi_employment_adult_rf_counts.csv", index_col=0)
    assert counts["n"].sum() == nums["adult_test_rows"] == 1000
    assert set(counts.index) <= {
        "White",
        "Black",
        "Asian-Pac-Islander",
        "Amer-Indian-Eskimo",
        "Other",
    }
    rf60 = pd.read_csv(tmp_path / "ofi_employment_adult_rf60_counts.csv", index_col=0)
    assert rf60["n"].sum() == 24
    for f in (
        "ofi_employment_adult_nb_heatmaps.png",
        "ofi_employment_adult_rf_direction_counts.csv",
    ):
        assert (tmp_path / f).stat().st_size > 0


def test_employment_acs_study_on_synthetic_files(tmp_path):
    emp = _script("ofi_employment")
    from test_datasets import _acs_rows

    rng = np.random.default_rng(1)
    for year, fname in [(2016, "ss16pga.csv"), (2017, "psam_p13.csv")]:
        d = tmp_path / "acs" / str(year) / "1-Year"
        d.mkdir(parents=True)
        _acs_rows(rng, 80, year).to_csv(d / fname, index=False)
    out = tmp_path / "out"
    out.mkdir()
    nums = emp.acs_study(tmp_path / "acs", out, years=(2016, 2017), quick=True)
    assert nums["acs_rows"] == 160
    counts = pd.read_csv(out / "ofi_employment_acs_rf_counts.csv", index_col=0)
    assert counts["n"].sum() == 160 - round(0.6 * 160)
    assert (out / "ofi_employment_acs_60_rf_heatmaps.png").exists()


def test_adult_loader_feeds_the_study():
    emp = _script("ofi_employment")
    vocab = emp.adult_vocabulary()
    x = emp.encode_adult(load_adult("test").head(50), vocab)
    assert x.shape == (50, len(emp.ADULT_FEATURES)) and np.isfinite(x).all()


# ---------------------------------------------------------------------------- robustness


def _brute(n_i, n_j, kind, metric):
    """Pure-Python reference: per pair, max |change| over defined neighbours (Fractions)."""
    rob = _script("ofi_robustness")
    f = {
        "ofi": lambda a, b: _b(a) - _b(b),
        "di_paper": lambda a, b: _di(a, b, "paper"),
        "te": _te,
    }[metric]
    d_i, d_j = rob.deltas(kind)
    out, undefined = [], 0
    for ci in rob.enumerate_cms(n_i):
        for cj in rob.enumerate_cms(n_j):
            ci_, cj_ = tuple(int(x) for x in ci), tuple(int(x) for x in cj)
            v0 = f(ci_, cj_)
            undefined += v0 is None
            best = None
            for a, b in zip(d_i, d_j):
                a2 = tuple(int(x) for x in np.add(ci_, a))
                b2 = tuple(int(x) for x in np.add(cj_, b))
                if min(a2) < 0 or min(b2) < 0:
                    continue
                v1 = f(a2, b2)
                if v0 is not None and v1 is not None:
                    best = abs(v1 - v0) if best is None else max(best, abs(v1 - v0))
            out.append(math.nan if best is None else float(best))
    return np.array(out), undefined


@pytest.mark.parametrize(
    ("kind", "metric"), list(itertools.product(["add", "move"], ["ofi", "di_paper", "te"]))
)
def test_robustness_matches_brute_force(kind, metric):
    rob = _script("ofi_robustness")
    undefined, change, _switch, _flip = rob.pair_study(2, 3, kind, metric, chunk=4)
    want, want_undef = _brute(2, 3, kind, metric)
    assert int(undefined.sum()) == want_undef
    np.testing.assert_allclose(change, want, rtol=1e-5, equal_nan=True)


def test_robustness_script_quick(tmp_path):
    rob = _script("ofi_robustness")
    nums = rob.run(tmp_path, quick=True)
    assert nums["te_undefined_pairs_6x18"] == nums["te_undefined_pairs_formula_6x18"] == 47880
    assert nums["max_change_ofi_move_6x18"] == pytest.approx(
        2 / 6, abs=1e-6
    )  # the bound is attained
    assert nums["max_change_ofi_add_6x18"] == pytest.approx(2 / 7, abs=1e-6)
    assert nums["max_change_di_paper_add_6x18"] > 1  # DI has no such bound
    assert nums["table1_ofi_B_to_alpha_change"] == pytest.approx(30 / 133 - 2 / 9, abs=1e-6)
    s = pd.read_csv(tmp_path / "ofi_robustness_summary.csv")
    assert (s.loc[s.metric == "ofi", "undefined_pairs"] == 0).all()
    assert (tmp_path / "ofi_robustness.png").stat().st_size > 0
