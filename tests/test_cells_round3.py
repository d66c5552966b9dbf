"""Scans from cell statistics, round 3 (#43 leftovers): Monte Carlo p-values with an interval for
the exact randomization p-value (rows and cells draw replicates differently from the same null
law), and Bias Scan's exhaustive search from :class:`ofijax.stats.BiasCells`."""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.stats import binom, ks_2samp

from ofijax import scan, stats
from ofijax.scan import scan_cells
from ofijax.scan._randomization import p_value, p_value_interval

# --- the interval -----------------------------------------------------------------------------


@pytest.mark.parametrize("r", [1, 4, 20, 57])
def test_p_value_interval_is_clopper_pearson_by_binomial_tails(r):
    """Bounds solve the binomial tail equations (scipy's binom, an independent reference), the
    estimate lies inside, and the bounds are monotone in k."""
    prev = (-1.0, -1.0)
    for k in range(r + 1):
        p = (1 + k) / (r + 1)
        lo, hi = p_value_interval(p, r)
        assert lo <= p <= hi and lo <= k / r <= hi
        assert lo > prev[0] and hi > prev[1] or k == r and hi == 1.0
        prev = (lo, hi)
        if k == 0:
            assert lo == 0.0
        else:  # P(X ≥ k | lo) = 2.5%
            assert binom.sf(k - 1, r, lo) == pytest.approx(0.025, rel=1e-8)
        if k == r:
            assert hi == 1.0
        else:  # P(X ≤ k | hi) = 2.5%
            assert binom.cdf(k, r, hi) == pytest.approx(0.025, rel=1e-8)


def test_p_value_interval_covers_the_exact_p_value_at_least_95_percent():
    """Exact coverage by enumeration of k ~ Binomial(R, p_inf) over a grid of p_inf."""
    r = 20
    bounds = [p_value_interval((1 + k) / (r + 1), r) for k in range(r + 1)]
    for p_inf in np.linspace(0.001, 0.999, 101):
        cover = sum(binom.pmf(k, r, p_inf) for k, (lo, hi) in enumerate(bounds)
                    if lo <= p_inf <= hi)
        assert cover >= 0.95 - 1e-12


def test_p_value_interval_refuses_what_is_not_a_randomization_p_value():
    assert all(math.isnan(b) for b in p_value_interval(math.nan, 20))
    assert all(math.isnan(b) for b in p_value_interval(0.5, 0))
    with pytest.raises(ValueError, match=r"^p: "):
        p_value_interval(0.5, 20)  # 10.5 of 20
    with pytest.raises(ValueError, match=r"^confidence: "):
        p_value_interval(0.5, 1, confidence=1.5)


# --- rows and cells: same null law, intervals -------------------------------------------------

N = 120
_rng = np.random.default_rng(5)
DF = pd.DataFrame({"a": _rng.choice(list("xyz"), N), "b": _rng.choice(list("uv"), N)})
TRUTH = _rng.integers(0, 2, N)
PRED = (_rng.random(N) < np.where(DF.a == "x", 0.5, 0.35)).astype(int)
R = 200


@pytest.fixture(scope="module")
def rows_cells():
    cs = stats.collect(DF.assign(t=TRUTH, p=PRED), label="t", pred="p", attrs=["a", "b"]).cells
    r = scan.fpr_scan(DF, TRUTH, PRED, key=1, num_samples=R)
    c = stats.fpr_scan_cells(cs, key=1, num_samples=R)
    return cs, r, c


def test_rows_and_cells_replicates_agree_in_law(rows_cells):
    cs, r, c = rows_cells
    assert r.subset == c.subset and r.score == pytest.approx(c.score, rel=1e-12)
    assert r.null_scores.shape == c.null_scores.shape == (R,)
    # different draws (per row vs per cell) ...
    assert not np.allclose(r.null_scores, c.null_scores)
    # ... of the same law: two-sample KS at a generous level
    assert ks_2samp(r.null_scores, c.null_scores).pvalue > 0.01
    # the test can fail: the same cells with another penalty are another law
    other = stats.fpr_scan_cells(cs, key=1, num_samples=R, penalty=0.6)
    assert ks_2samp(r.null_scores, other.null_scores).pvalue < 1e-6
    # both estimate one exact p-value: the 200-replicate intervals overlap
    (lo_r, hi_r), (lo_c, hi_c) = r.p_value_interval, c.p_value_interval
    assert max(lo_r, lo_c) <= min(hi_r, hi_c)


def test_rows_and_cells_p_values_lie_in_each_others_interval_at_cli_scale(rows_cells):
    """At the CLI example's scale (20 replicates): the first 20 replicates of each engine are a
    20-replicate test; each engine's p-value lies in the other's interval."""
    _, r, c = rows_cells
    pr, pc = p_value(r.score, r.null_scores[:20]), p_value(c.score, c.null_scores[:20])
    lo_r, hi_r = p_value_interval(pr, 20)
    lo_c, hi_c = p_value_interval(pc, 20)
    assert lo_c <= pr <= hi_c and lo_r <= pc <= hi_r


def test_every_randomization_p_value_carries_its_interval(rows_cells):
    cs, r, c = rows_cells
    for res in (r, c):
        k = int(np.sum(res.null_scores >= res.score - 1e-9 * max(1.0, res.score)))  # brute force
        assert res.p_value == (1 + k) / (R + 1)
        assert res.p_value_interval == p_value_interval(res.p_value, R)
    # the array level carries it as a field (the last one), top-k finds too
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    a = scan_cells(codes, [2, 2], np.array([30, 30, 30, 30]), np.array([20, 9, 10, 11]),
                   key=jax.random.key(0), num_samples=9, top_k=2, search="exhaustive")
    assert a._fields[-1] == "p_value_interval" and a.certified
    for f in a.top:
        assert f.p_value_interval == p_value_interval(f.p_value, 9)
    none = stats.fpr_scan_cells(cs)
    assert all(math.isnan(b) for b in none.p_value_interval)


# --- Bias Scan from cell statistics, exhaustive ----------------------------------------------

M = 160
_rb = np.random.default_rng(11)
BDF = pd.DataFrame({"g": _rb.choice(list("abc"), M), "h": _rb.choice(list("uvw"), M)})
BP = _rb.uniform(0.1, 0.7, M)
BY = (_rb.random(M) < np.where((BDF.g == "a") & (BDF.h != "w"), np.minimum(BP * 1.8, 0.95),
                               BP)).astype(int)


def _brute_force_bias(df, y, p, penalty, q_hi=1e6):
    """Every subgroup, the exact per-row score maximised over log q by scipy (no ofijax)."""
    cols = list(df.columns)
    values = [sorted(df[c].unique()) for c in cols]
    choices = [[None] + [s for r in range(1, len(v)) for s in itertools.combinations(v, r)]
               for v in values]
    best = (-math.inf, None)
    for pick in itertools.product(*choices):
        inside = np.ones(len(df), bool)
        for c, s in zip(cols, pick):
            if s is not None:
                inside &= df[c].isin(s).to_numpy()
        yy, pp = y[inside], p[inside]

        def neg(t, yy=yy, pp=pp):
            return -(yy.sum() * t - np.log1p(pp * np.expm1(t)).sum())

        opt = optimize.minimize_scalar(neg, bounds=(0.0, math.log(q_hi)), method="bounded",
                                       options={"xatol": 1e-12})
        gain = max(-opt.fun, 0.0)
        score = gain - penalty * sum(len(s) for s in pick if s is not None)
        if score > best[0] + 1e-9:
            best = (score, {c: s for c, s in zip(cols, pick) if s is not None})
    return best


def test_bias_scan_cells_exhaustive_equals_row_scan_and_brute_force():
    bc = stats.collect_bias(BDF.assign(y=BY, p=BP), outcome="y", expectations="p",
                            attrs=["g", "h"])
    row = scan.bias_scan(BDF, BY, BP, penalty=0.3, basis="chebyshev", search="exhaustive")
    cell = stats.bias_scan_cells(bc, penalty=0.3, search="exhaustive")
    assert cell.search == row.search == "exhaustive" and cell.certified and row.certified
    assert cell.subset == row.subset and cell.size == row.size
    assert cell.score == pytest.approx(row.score, rel=1e-12, abs=1e-12)
    auto = stats.bias_scan_cells(bc, penalty=0.3)  # 7 x 7 subgroups: "auto" enumerates
    assert auto.search == "exhaustive" and auto.subset == cell.subset
    score, subset = _brute_force_bias(BDF, BY, BP, 0.3)
    assert {k: tuple(v) for k, v in subset.items()} == cell.subset
    assert cell.score == pytest.approx(score, rel=1e-8)


def test_bias_scan_cells_search_is_checked():
    bc = stats.collect_bias(BDF.assign(y=BY, p=BP), outcome="y", expectations="p", attrs="g")
    with pytest.raises(ValueError, match=r"^search: "):
        stats.bias_scan_cells(bc, search="brute")
    wide = pd.DataFrame({"k": np.arange(42) % 21, "y": [0, 1] * 21, "p": [0.4] * 42})
    bw = stats.collect_bias(wide, outcome="y", expectations="p", attrs="k")
    with pytest.raises(ValueError, match=r"^search: 'exhaustive'.*coordinate_ascent"):
        stats.bias_scan_cells(bw, search="exhaustive")  # 2^21 - 1 subgroups
    local = stats.bias_scan_cells(bw)  # "auto": too many subgroups, coordinate ascent
    assert local.search == "coordinate_ascent" and not local.certified


def test_row_bias_scan_top_finds_carry_their_interval():
    """The property holds for every scan with a test: here Bias Scan's family-wise top-k."""
    b = scan.bias_scan(BDF, BY, BP, penalty=0.3, key=0, num_samples=9, top_k=2)
    assert len(b.top) == 2
    for f in b.top:
        k = int(np.sum(f.null_scores >= f.score - 1e-9 * max(1.0, f.score)))
        assert f.p_value == (1 + k) / 10
        assert f.p_value_interval == p_value_interval(f.p_value, 9)
