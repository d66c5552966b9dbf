"""Tests of the IJDI-paper experiments (experiments/ijdi_*.py) and their building blocks."""

from __future__ import annotations

import importlib
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ofijax.datasets import load_compas

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def _script(name):
    if str(EXPERIMENTS) not in sys.path:
        sys.path.insert(0, str(EXPERIMENTS))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def C():
    return _script("ijdi_common")


# ---------------------------------------------------------------------------- data preparation


def test_compas_decile_table_and_counts(C):
    d = C.compas()
    assert len(d) == 7214 and int((d.outcomes == 0).sum()) == 3963
    raw = load_compas("ijdi")
    # independent recomputation with exact fractions, per decile
    for dec, ref in C.DECILE_TABLE.items():
        rows = raw[raw.COMPASPredictedDecileScore == dec]
        rate = Fraction(int(rows.ReoffendedWithinTwoYears.sum()), len(rows))
        assert round(float(rate), 4) == ref
        assert np.all(d.proba_compas[d.decile == dec] == float(rate))
    assert int((d.proba_compas >= 0.5).sum()) == 2636  # "high risk" = decile >= 6
    assert set(d.proba_compas.round(6)) .isdisjoint({0.4, 0.45, 0.5})  # ge == gt at these θ
    assert int(C.subgroup_mask(d, C.EXP1_SUBGROUP).sum()) == 2293


def test_decile_check_detects_a_wrong_table(C, monkeypatch):
    C._compas_cached.cache_clear()
    monkeypatch.setitem(C.DECILE_TABLE, 5, 0.4788)
    with pytest.raises(AssertionError, match="decile 5"):
        C.compas()
    C._compas_cached.cache_clear()


def test_compas_p_i_matches_reference(C):
    """The reference's in-sample LR p_i (values printed in its notebooks, 6 decimals)."""
    p = C.compas().proba_lr.to_numpy()
    ref = {0: 0.232134, 1: 0.289774, 2: 0.668642, 4: 0.373653, 7212: 0.335035, 7213: 0.515657}
    np.testing.assert_allclose(p[list(ref)], list(ref.values()), atol=1e-4)


def test_german_counts_and_models(C):
    g = C.german()
    assert len(g) == 1000 and int(g.outcomes.sum()) == 300
    for col, counts in C.GERMAN_COUNTS.items():
        assert g[col].value_counts().to_dict() == counts, col
    # reference notebook values: rows 0-4 and 995-999 (LR audited, RF = p_i), 6 decimals
    rows = [0, 1, 2, 3, 4, 995, 996, 997, 998, 999]
    lr = [0.114175, 0.612611, 0.154985, 0.545431, 0.574045,
          0.136923, 0.517829, 0.135555, 0.550995, 0.397940]
    rf = [0.046250, 0.803333, 0.092917, 0.141350, 0.213719,
          0.122083, 0.687929, 0.010000, 0.829405, 0.248544]
    np.testing.assert_allclose(g.proba_lr.to_numpy()[rows], lr, atol=1e-4)
    np.testing.assert_allclose(g.proba_rf.to_numpy()[rows], rf, atol=1e-6)
    assert ((g.proba_lr > 0.5) == g.outcomes).mean() == 0.747  # reference accuracy
    assert ((g.proba_rf > 0.5) == g.outcomes).mean() == 0.933


def test_german_count_check_fails_on_bad_bins(C):
    g = C.german()
    g.loc[0, "duration"] = "Very Short"
    with pytest.raises(AssertionError, match="duration"):
        C.check_german_counts(g)


# ---------------------------------------------------------------------------- designs, metrics


def test_iou(C):
    t = np.array([1, 1, 0, 0], bool)
    assert C.iou(np.array([1, 1, 0, 0], bool), t) == 1.0
    assert C.iou(np.array([1, 0, 1, 0], bool), t) == pytest.approx(1 / 3)
    assert C.iou(np.zeros(4, bool), t) == 0.0
    assert C.iou(None, t) == 0.0
    with pytest.raises(ValueError, match="detected"):
        C.iou(np.ones(3, bool), t)


def test_lambda_star_exact(C):
    """λ*(k) = [FPR(S)-FPR(~S)]/[p(S)-p(~S)] within D_N, by exact rational integration."""
    sympy = pytest.importorskip("sympy")
    x = sympy.Symbol("x")

    def moments(mu, k):
        lo, hi = mu - sympy.Rational(k, 100), mu + sympy.Rational(k, 100)
        w = 1 - x
        z = sympy.integrate(w, (x, lo, hi))
        p = sympy.integrate(w * x, (x, lo, hi)) / z
        f = sympy.integrate(w, (x, max(lo, sympy.Rational(1, 2)), hi)) / z if hi > 0.5 else 0
        return p, f

    for k in (1, 3, 10):
        ps, fs = moments(sympy.Rational(51, 100), k)
        po, fo = moments(sympy.Rational(49, 100), k)
        exact = sympy.nsimplify((fs - fo) / (ps - po))
        assert exact == sympy.Rational(75, k) * (4999 - k * k) / (7497 - k * k)
        assert C.exp1_lambda_star(k) == pytest.approx(float(exact), rel=1e-12)
        assert C.exp1_lambda_star_numeric(k) == pytest.approx(float(exact), rel=1e-4)
    assert C.exp1_lambda_star(0) == 50.0


def test_exp1_simulation(C):
    in_s = np.arange(2000) < 700
    p, y = C.exp1_simulate(np.random.default_rng(1), in_s, 3)
    assert np.all((p[in_s] >= 0.48) & (p[in_s] <= 0.54))
    assert np.all((p[~in_s] >= 0.46) & (p[~in_s] <= 0.52))
    assert set(np.unique(y)) == {0, 1}
    p0, _ = C.exp1_simulate(np.random.default_rng(1), in_s, 0)
    assert set(np.unique(p0)) == {0.49, 0.51}


def test_exp2_designs(C):
    d = C.compas()
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = C.exp2_random_subgroup(rng, d)
        assert s and set(s) <= set(C.EXP2_S_ATTRIBUTES)
        for a, vals in s.items():
            assert 0 < len(vals) < d[a].nunique()
    p = C.exp2_true_probabilities(d)
    assert len(np.unique(np.round(p, 10))) <= 6  # charge_degree x prior_offenses only
    in_s = np.arange(len(d)) % 2 == 0
    for eps, t in ((0.3, 0.4256), (1.0, 0.2689), (3.0, 0.0474)):
        _, theta = C.exp2_inject(p, in_s, eps, "threshold")
        assert round(float(theta[0]), 4) == t and theta[1] == 0.5
        ph, theta = C.exp2_inject(p, in_s, eps, "proba")
        np.testing.assert_allclose(C.logit(ph[in_s]) - C.logit(p[in_s]), eps, atol=1e-12)
        assert np.all(ph[~in_s] == p[~in_s]) and np.all(theta == 0.5)


# ---------------------------------------------------------------------------- mitigation logic


def test_fixed_subgroup_edge_logic():
    M = _script("ijdi_mitigation")
    # Edge case 1: S has the lower base rate -> mean_S p_w = p(~S) after the alpha step.
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8])
    yb = np.array([1, 1, 0, 0, 1, 0], float)
    in_s = np.array([1, 1, 1, 0, 0, 0], bool)
    ps, adj = M.fixed_subgroup_null(yb, p, in_s, 1.0)
    assert adj == ["alpha"]
    pbar_b, pbar0, p_not = yb.mean(), p.mean(), p[~in_s].mean()
    np.testing.assert_allclose(ps[in_s].mean(), pbar_b + 1.0 * (p_not - pbar0))  # reference
    ps_strict, _ = M.fixed_subgroup_null(yb, p, in_s, 1.0, mode="strict")
    np.testing.assert_allclose(ps_strict[in_s], pbar_b)
    # Edge case 2 (beta): clipping at 1 inside S -> sum_S p_scan = sum_S raw afterwards.
    p = np.array([0.9, 0.5, 0.2, 0.2, 0.1, 0.1])
    ps, adj = M.fixed_subgroup_null(yb, p, np.array([1, 1, 0, 0, 0, 0], bool), 1.0)
    raw = yb.mean() + 1.0 * (p - p.mean())
    assert raw[0] > 1 and raw[:2].mean() < 1 and adj == ["beta"]
    np.testing.assert_allclose(ps[:2].sum(), raw[:2].sum())
    assert np.all(ps[:2] <= 1) and np.all(ps[2:] == np.clip(raw[2:], 0, 1))
    # Pin: mean_S raw >= 1 -> p_scan = 1 on S.
    ps, adj = M.fixed_subgroup_null(yb, p, np.array([1, 0, 0, 0, 0, 0], bool), 5.0)
    assert adj == ["pin"] and ps[0] == 1.0


# ---------------------------------------------------------------------------- end to end


def test_exp1_small_end_to_end(C):
    """k = 0, λ far below and above λ* = 50: S is found at λ = 0 and nothing at λ = 80."""
    E1 = _script("ijdi_exp1")
    res = E1.scan_runs((0,), (0.0, 80.0), 1, seed=0)
    assert len(res) == 2
    r0, r80 = res.iloc[0], res.iloc[1]
    assert r0.iou > 0.99 and r0.score > 100
    assert r80.iou == 0.0 and r80.score == 0.0 and not r80.detected
    s = E1.summarize(res)
    assert list(s.below_cutoff) == [True, False]
    assert isinstance(E1.table(s), str) and "λ*(0) = 50.000" in E1.table(s)


def test_results_tables_are_written_by_scripts(C):
    """Every table in RESULTS.md (IJDI section) is included verbatim from a file the scripts write."""
    text = C.RESULTS_MD.read_text()
    for name in ("ijdi_exp1_table.md", "ijdi_exp2_table.md", "ijdi_real_table.md",
                 "ijdi_mitigation_table.md"):
        assert f"<!-- begin results/{name} -->" in text
        assert (EXPERIMENTS / "results" / name).is_file()
    assert C.assemble_results(text) == text, "run: python experiments/ijdi_common.py"
