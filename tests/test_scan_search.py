"""Bias Scan's exhaustive search against a row-level brute force, and top-k subgroups with
family-wise p-values (two planted subgroups; calibration under the null)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ofijax.scan import bias_scan, fpr_scan

N_VALUES = (2, 3, 4)  # 3 · 7 · 15 = 315 subgroups
N_ROWS = 240
T_HI = math.log(1e6)


def _max_llr(Y, P, W, direction):
    """Per subgroup g: max over t on the direction's side of Y_g t − Σ_i W_gi log(1 − p + p e^t),
    by bisection on the (monotone) slope, row by row in NumPy."""
    G = W.shape[0]
    a, b = (0.0, T_HI) if direction == "positive" else (-T_HI, 0.0)

    def slope(t):
        e = np.exp(t)[:, None]
        return Y - np.sum(W * (P * e / (1 - P + P * e)), axis=1)

    lo, hi = np.full(G, a), np.full(G, b)
    for _ in range(120):
        mid = 0.5 * (lo + hi)
        up = slope(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    t = 0.5 * (lo + hi)
    t = np.where(slope(np.full(G, a)) <= 0, a, t)
    t = np.where(slope(np.full(G, b)) >= 0, b, t)
    return np.maximum(Y * t - np.sum(W * np.log1p(P * np.expm1(t)[:, None]), axis=1), 0.0)


def _members(codes):
    per_attr = [[frozenset(s) for r in range(1, v + 1) for s in itertools.combinations(range(v), r)]
                for v in N_VALUES]
    W, ks = [], []
    for combo in itertools.product(*per_attr):
        rows = np.ones(codes.shape[0], bool)
        k = 0
        for m, s in enumerate(combo):
            if len(s) < N_VALUES[m]:
                rows &= np.isin(codes[:, m], list(s))
                k += len(s)
        W.append(rows)
        ks.append(k)
    return np.array(W, dtype=np.float64), np.array(ks)


def _brute(codes, y, p, direction, penalty):
    W, ks = _members(codes)
    sc = _max_llr(W @ y, p[None, :], W, direction) - penalty * ks
    return float(sc.max())


def _table(seed, varying):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, v, N_ROWS) for v in N_VALUES], axis=1)
    for m, v in enumerate(N_VALUES):  # every value observed
        codes[m * 4: m * 4 + v, m] = np.arange(v)
    p = rng.uniform(0.1, 0.9, N_ROWS) if varying else np.full(N_ROWS, 0.3)
    bump = (codes[:, 0] == 1) & np.isin(codes[:, 2], [0, 3])
    odds = p / (1 - p) * np.where(bump, rng.choice([0.4, 2.5]), 1.0)
    y = (rng.uniform(size=N_ROWS) < odds / (1 + odds)).astype(np.int8)
    return pd.DataFrame(codes, columns=["a", "b", "c"]), codes, y, p


@pytest.mark.parametrize("varying", [False, True])
@pytest.mark.parametrize("direction", ["negative", "positive"])
def test_exhaustive_search_is_the_global_optimum(direction, varying):
    """Every table, both penalties: the exhaustive score equals the brute-force optimum, and the
    score is its subset's. (Coordinate ascent may fall short: tests/test_scan_engine.py.)"""
    for seed in range(5):
        df, codes, y, p = _table(seed + 100 * varying, varying)
        for penalty in (0.0, 0.5):
            ref = _brute(codes, y, p, direction, penalty)
            ex = bias_scan(df, y, p, direction=direction, penalty=penalty)
            assert ex.search == "exhaustive" and ex.converged
            assert ex.score == pytest.approx(ref, abs=1e-6), (seed, penalty)
            if ex.score > 0:
                W = ex.mask.astype(np.float64)[None, :]
                k = sum(len(v) for v in ex.listed.values())
                direct = _max_llr(W @ y, p[None, :], W, direction)[0] - penalty * k
                assert ex.score == pytest.approx(direct, abs=1e-6)


def test_exhaustive_refused_when_too_many_subgroups():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"x{j}": rng.integers(0, 8, 50) for j in range(3)})  # 255^3 > 1e6
    y, p = rng.integers(0, 2, 50), np.full(50, 0.4)
    with pytest.raises(ValueError, match="search: 'exhaustive'"):
        bias_scan(df, y, p, search="exhaustive")
    # ... and search="auto" falls back to coordinate ascent there (checked on the rule itself)
    from ofijax.scan._exhaustive import exhaustive_feasible, num_subgroups

    assert num_subgroups([8, 8, 8]) == 255**3 and not exhaustive_feasible([8, 8, 8], 50, 1)
    assert num_subgroups([2, 3, 2, 2, 6]) == 11907 and exhaustive_feasible([2, 3, 2, 2, 6], 144, 68)
    with pytest.raises(ValueError, match="search: must be one of"):
        bias_scan(df, y, p, search="greedy")


# ---------------------------------------------------------------------------------------------
# Top-k


def _two_planted(seed=0, n=600):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 3, n),
                       "c": rng.integers(0, 2, n)})
    s1 = ((df.a == 0) & (df.b == 1)).to_numpy()
    s2 = ((df.a == 2) & (df.c == 1)).to_numpy()
    return df, s1, s2, rng


def test_top_k_finds_two_planted_subgroups_with_familywise_pvalues():
    df, s1, s2, rng = _two_planted()
    n = len(df)
    p = np.full(n, 0.3)
    y = (rng.uniform(size=n) < np.where(s1, 0.85, np.where(s2, 0.7, 0.3))).astype(int)
    R = 19
    res = bias_scan(df, y, p, penalty=0.5, top_k=3, num_samples=R, key=1)
    found = [r.subset for r in res.top]
    assert found[:2] == [{"a": (0,), "b": (1,)}, {"a": (2,), "c": (1,)}]
    assert res.top[0].score == res.score and res.subset == found[0]
    # disjoint rows; each find's rows are its subgroup minus earlier finds
    np.testing.assert_array_equal(res.top[0].mask, s1)
    np.testing.assert_array_equal(res.top[1].mask, s2 & ~s1)
    # family-wise: one max-statistic null for all finds; both planted ones get the minimum
    assert res.null_scores.shape == (R,)
    assert res.top[0].p_value == pytest.approx(1 / (R + 1))
    assert res.top[1].p_value == pytest.approx(1 / (R + 1))
    assert all(a.p_value <= b.p_value for a, b in zip(res.top, res.top[1:]))
    if len(res.top) > 2:  # a third, noise find is not significant
        assert res.top[2].p_value > 0.1
    # the same through FPR-Scan (rows whose true outcome is beneficial, denied the benefit)
    denied = y.astype(bool)
    fres = fpr_scan(df, np.ones(n, int), (~denied).astype(int), penalty=0.5, top_k=2)
    assert [r.subset for r in fres.top] == found[:2]
    assert "denied the benefit" in fres.top[1].description


def test_top_k_familywise_pvalues_are_calibrated_under_the_null():
    """20 null data sets × 9 replicates: the family-wise p of the top find is roughly uniform."""
    df, _, _, rng = _two_planted(seed=3, n=300)
    p = np.full(len(df), 0.3)
    pv = []
    for j in range(20):
        y = (rng.uniform(size=len(df)) < p).astype(int)
        res = bias_scan(df, y, p, penalty=0.5, top_k=2, num_samples=9, key=j)
        pv.append(res.top[0].p_value)
    pv = np.array(pv)
    assert set(np.round(pv * 10).astype(int)) <= set(range(1, 11))
    assert 0.3 <= pv.mean() <= 0.75, pv
    assert np.mean(pv <= 0.1) <= 0.3, pv


# ---------------------------------------------------------------------------------------------
# Seeded lanes (#43): starts from every single value and pair of values


def _fpr_best_of_one_and_two_values(codes, y, penalty):
    """Brute force, row by row: the best FPR-Scan score (closed form, q in [1, 1e6]) over the
    whole data and every subgroup ``a = v`` or ``a = v and b = w`` (y = harmful prediction)."""
    pbar = min(max(y.mean(), 1e-6), 1 - 1e-6)

    def score(inside, k):
        n_s, y_s = int(inside.sum()), float(y[inside].sum())
        if n_s == 0 or y_s / n_s <= pbar:
            return 0.0 - penalty * k
        rate = y_s / n_s
        t = T_HI if rate >= 1 else min(T_HI, math.log(rate * (1 - pbar) / (pbar * (1 - rate))))
        return y_s * t - n_s * math.log1p(pbar * math.expm1(t)) - penalty * k

    m = codes.shape[1]
    best = max(0.0, score(np.ones(len(y), bool), 0))
    for a in range(m):
        for v in np.unique(codes[:, a]):
            best = max(best, score(codes[:, a] == v, 1))
            for b in range(a + 1, m):
                for w in np.unique(codes[:, b]):
                    best = max(best, score((codes[:, a] == v) & (codes[:, b] == w), 2))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_seeded_search_reaches_every_one_and_two_value_subgroup(seed):
    """On a small table (3 attributes × 3 values: 9 single and 27 pair seeds) coordinate ascent
    with ONE random restart scores at least the best subgroup of one value or two values of two
    attributes (a lane's score never falls, and every such subgroup is a seeded start), however
    few its rows: random restarts (≥ 10 rows, each value kept with probability ρ) rarely start
    there (``experiments/scan_miss_rate.py``)."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.choice([14, 16, 18]))  # one cell bucket (one compiled search)
    codes = rng.integers(0, 3, (n, 3))
    codes[:3] = np.arange(3)[:, None]  # every value observed
    planted = (codes[:, 0] == rng.integers(3)) & (codes[:, 1] == rng.integers(3))
    y = (rng.uniform(size=n) < np.where(planted, 0.8, 0.25)).astype(int)
    frame = pd.DataFrame(codes.astype(str), columns=["a", "b", "c"])
    penalty = float(rng.choice([0.1, 0.5, 1.0]))
    best = _fpr_best_of_one_and_two_values(codes, y, penalty)
    r = fpr_scan(frame, np.ones(n, int), 1 - y, search="coordinate_ascent", num_restarts=1,
                 penalty=penalty, key=seed)
    assert r.score >= best - 1e-9 * max(1.0, best), (r.score, best)
    again = fpr_scan(frame, np.ones(n, int), 1 - y, search="coordinate_ascent", num_restarts=1,
                     penalty=penalty, key=seed)
    assert again.score == r.score and again.subset == r.subset  # same key, same result


def test_seed_starts_counts_and_limits():
    """Singles and pairs while they fit SEED_MAX_LANES, singles alone above, none on large
    tables; every start's attributes and values are in range, a < b for a pair."""
    from ofijax.scan import _plan

    t = _plan.seed_starts(64, 3, 3)
    assert len(t) == 9 + 27 and len({tuple(x) for x in t}) == 36
    assert ((t[:, 2] == -1) | (t[:, 0] < t[:, 2])).all() and (t[:, [1, 3]] < 3).all()
    assert len(_plan.seed_starts(64, 5, 5)) == 25  # 25 + 250 pairs > 64: singles only
    assert len(_plan.seed_starts(64, 9, 8)) == 0  # 72 singles > SEED_MAX_LANES
    assert len(_plan.seed_starts(_plan.SEED_MAX_CELLS + 1, 3, 3)) == 0


def test_seeded_lanes_are_added_after_the_restarts_and_never_make_a_search_worse(monkeypatch):
    """The lane search with seeds runs R restarts + S seeded lanes + the greedy lane; its best
    score is at least that of the same restarts without seeds (the restarts' keys are
    unchanged), and every lane stops at a local optimum. (Where seeds gain: the test above,
    whose tables 2 and 5 the search without seeds misses, reporting "no subgroup".)"""
    import jax
    import jax.numpy as jnp

    from ofijax.scan import _engine as E
    from ofijax.scan import _lanes
    from ofijax.scan._basis import features, make_basis

    no_seeds = np.zeros((0, 4), np.int32)
    basis = make_basis("chebyshev", direction="positive")

    def search(keys, problem, Phi, Y):
        return _lanes.search(keys, problem, Phi, Y, basis, jnp.asarray(0.3), 110, True,
                             basis.endpoints())

    # one trace each (every table pads to the same bucket); two functions, as jit caches traces
    # by function
    with_seeds = jax.jit(search)
    without = jax.jit(lambda *a: search(*a))
    with jax.enable_x64(True):
        for seed in range(4):
            rng = np.random.default_rng(seed)
            n = 30
            codes = np.stack([rng.integers(0, 3, n) for _ in range(3)], axis=1)
            codes[:3] = np.arange(3)[:, None]
            p = rng.uniform(0.1, 0.6, n)
            y = (rng.uniform(size=n) < np.where((codes[:, 0] == 1) & (codes[:, 1] == 2), 0.9,
                                                p)).astype(float)
            problem = E.make_problem(codes, np.array([3, 3, 3]))
            Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
            Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
            problem, Phi, Y = E.pad_cells(problem, Phi, Y, 32)
            cells = E.search_args(problem, None)[0]  # no rows: the same program for every table
            keys = jax.random.split(jax.random.key(seed), 2)
            seeded = with_seeds(keys, cells, Phi, Y)
            with monkeypatch.context() as mp:
                mp.setattr(_lanes, "seed_starts", lambda *a: no_seeds)
                plain = without(keys, cells, Phi, Y)
            assert seeded.score.shape == (2 + 36 + 1,) and plain.score.shape == (3,)
            best_s, best_p = float(np.max(seeded.score)), float(np.max(plain.score))
            assert best_s >= best_p - 1e-12 * abs(best_p)
            assert np.asarray(seeded.converged).all()
