"""Bias Scan engine vs. independent brute-force oracles (row-level NumPy/SciPy scoring)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from ofijax.scan import _engine as E
from ofijax.scan import _lanes, _plan, _programs, _sums
from ofijax.scan._basis import features, make_basis

N_ROWS = 240
N_VALUES = (2, 3, 4)
C_MAX = int(np.prod(N_VALUES))
RESTARTS = 10
T_HI = math.log(1e6)


# ---------------------------------------------------------------------------------------------
# Independent row-level reference


def _G(t, y, p):
    """Row-level Bernoulli LLR Σ y t - log(1 - p + p e^t), NumPy."""
    return np.sum(y) * t - np.sum(np.log1p(np.multiply.outer(np.expm1(t), p)), axis=-1)


def _max_llr(y, p, direction):
    """max over t on the direction's side of 0 (dense grid, then bounded Brent refinement)."""
    if y.size == 0:
        return 0.0
    a, b = (0.0, T_HI) if direction == "positive" else (-T_HI, 0.0)
    grid = np.linspace(a, b, 4001)
    vals = _G(grid, y, p)
    j = int(np.argmax(vals))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    res = minimize_scalar(lambda t: -_G(np.array([t]), y, p)[0], bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    return max(vals[j], -res.fun, 0.0)


def _brute_force(codes, y, p, direction, penalty):
    """Max penalised score over all ∏(2^V - 1) subgroups (an attribute with all values = free).

    All subgroups are scored at once on a dense t-grid (row-level log1p), and the ones within 0.05
    of the best grid score are refined with bounded Brent.
    """
    per_attr = []
    for v in N_VALUES:
        subsets = []
        for r in range(1, v + 1):
            subsets += [frozenset(s) for s in itertools.combinations(range(v), r)]
        per_attr.append(subsets)
    members, ks = [], []
    for combo in itertools.product(*per_attr):
        rows = np.ones(codes.shape[0], bool)
        k = 0
        for m, s in enumerate(combo):
            if len(s) < N_VALUES[m]:
                rows &= np.isin(codes[:, m], list(s))
                k += len(s)
        members.append(rows)
        ks.append(k)
    memb = np.array(members, dtype=np.float64)
    ks = np.array(ks)
    a, b = (0.0, T_HI) if direction == "positive" else (-T_HI, 0.0)
    grid = np.linspace(a, b, 2001)
    g = np.log1p(np.multiply.outer(p, np.expm1(grid)))  # (N, T)
    vals = np.outer(memb @ y, grid) - memb @ g  # (S, T)
    approx = vals.max(axis=1) - penalty * ks
    best = 0.0
    for i in np.flatnonzero(approx >= approx.max() - 0.05):
        rows = memb[i] > 0
        best = max(best, _max_llr(y[rows], p[rows], direction) - penalty * ks[i])
    return best


def _table(seed, varying_p):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, v, N_ROWS) for v in N_VALUES], axis=1)
    codes[: len(N_VALUES) * 4] = 0
    for m, v in enumerate(N_VALUES):  # every value observed
        codes[m * 4: m * 4 + v, m] = np.arange(v)
    p = rng.uniform(0.1, 0.9, N_ROWS) if varying_p else np.full(N_ROWS, 0.3)
    bump = (codes[:, 0] == 1) & np.isin(codes[:, 2], [0, 3])
    odds = p / (1 - p) * np.where(bump, rng.choice([0.4, 2.5]), 1.0)
    y = (rng.uniform(size=N_ROWS) < odds / (1 + odds)).astype(np.int8)
    return codes, y, p


def _engine_inputs(codes, y, p, direction, varying_p):
    problem = E.make_problem(codes, np.array(N_VALUES))
    kind = "chebyshev" if varying_p else "exact"
    basis = make_basis(kind, direction=direction, p_values=np.unique(p))
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
    Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
    problem, Phi, Y = E.pad_cells(problem, Phi, Y, C_MAX)
    return problem, basis, Phi, Y


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["positive", "negative"])
@pytest.mark.parametrize("varying_p", [False, True])
def test_scan_matches_brute_force(direction, varying_p):
    """Best score == max over all 315 subgroups (penalty 0 and 0.5), for ≥ 9 of 10 tables."""
    agree = 0
    total = 0
    for seed in range(5):
        codes, y, p = _table(seed + 10 * varying_p, varying_p)
        problem, basis, Phi, Y = _engine_inputs(codes, y, p, direction, varying_p)
        for penalty in (0.0, 0.5):
            raw = E.scan_arrays(jax.random.key(seed), problem, Phi, Y, basis,
                                penalty=penalty, num_restarts=RESTARTS)
            ref = _brute_force(codes, y, p, direction, penalty)
            ours = float(raw.score)
            assert ours <= ref + 1e-6  # never above the true optimum
            # the reported score is the exact score of the reported subgroup
            rows = np.asarray(E.row_mask(problem, raw.mask, raw.listed))
            k = int(np.sum(np.asarray(raw.mask)[np.asarray(raw.listed)]
                           & (np.arange(problem.v_max) < np.array(N_VALUES)[:, None])
                           [np.asarray(raw.listed)]))
            direct = _max_llr(y[rows], p[rows], direction) - penalty * k
            assert ours == pytest.approx(direct, abs=1e-6)
            assert bool(raw.converged)
            agree += abs(ours - ref) <= 1e-4
            total += 1
    assert agree >= total - 1, f"{agree}/{total} tables reached the brute-force optimum"


@pytest.mark.parametrize("penalty,one_solver", [(0.0, True), (0.7, True), (0.7, False)])
def test_attribute_step_matches_brute_force(penalty, one_solver, monkeypatch):
    """The per-attribute step equals the best of all 2^V - 1 value subsets (and unconstrained),
    both as one looped solver (small tables) and as three solves (large tables)."""
    monkeypatch.setattr(_plan, "SMALL_CELLS", 1 << 30 if one_solver else 0)
    rng = np.random.default_rng(3)
    n_values = (6, 3)
    n = 400
    codes = np.stack([rng.integers(0, v, n) for v in n_values], axis=1)
    codes[:6, 0] = np.arange(6)
    codes[:3, 1] = np.arange(3)
    p = rng.uniform(0.05, 0.95, n)
    eff = np.array([0.3, 1.0, 2.0, 3.5, 1.5, 0.8])[codes[:, 0]]
    odds = p / (1 - p) * eff
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(np.int8)
    problem = E.make_problem(codes, np.array(n_values))
    for direction in ("positive", "negative"):
        basis = make_basis("chebyshev", direction=direction)
        Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
        Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
        # other attribute constrained to values {0, 2}
        mask = jnp.asarray(np.array([[True] * 6, [True, False, True, False, False, False]]))
        listed = jnp.asarray(np.array([True, True]))
        step = jax.jit(lambda *a: E.attribute_step(*a))(  # a fresh trace for each path
            problem, Phi, Y, basis, mask, listed, 0, penalty)
        row, lst, pooled = step.row, step.listed, step.score
        base = np.isin(codes[:, 1], [0, 2])
        best = _max_llr(y[base], p[base], direction)  # unconstrained
        assert float(step.pool_score) == pytest.approx(best, abs=1e-6)
        for r in range(1, 7):
            for s in itertools.combinations(range(6), r):
                rows = base & np.isin(codes[:, 0], s)
                best = max(best, _max_llr(y[rows], p[rows], direction) - penalty * r)
        assert float(pooled) == pytest.approx(best, abs=1e-6)
        rows = base & (np.asarray(row)[codes[:, 0]] if bool(lst) else True)
        k = int(np.asarray(row).sum()) if bool(lst) else 0
        assert _max_llr(y[rows], p[rows], direction) - penalty * k == pytest.approx(best, abs=1e-6)


def _greedy_reference(codes, y, p, direction, penalty):
    """Steepest coordinate ascent from the whole data, brute force: each sweep optimises every
    attribute's value set (or no constraint) given the others, row-level; moves to the sweep's
    best when it beats the base by more than 1e-6. Returns (score, moves)."""
    def score(sets):
        rows = np.ones(codes.shape[0], bool)
        k = 0
        for m, s in enumerate(sets):
            if s is not None:
                rows &= np.isin(codes[:, m], list(s))
                k += len(s)
        return _max_llr(y[rows], p[rows], direction) - penalty * k

    base = [None] * len(N_VALUES)
    base_score, moves = score(base), 0
    while True:
        best = (-np.inf, None, None)
        for m, v in enumerate(N_VALUES):
            options = [None] + [frozenset(c) for r in range(1, v + 1)
                                for c in itertools.combinations(range(v), r)]
            for c in options:
                sc = score(base[:m] + [c] + base[m + 1:])
                if sc > best[0]:
                    best = (sc, m, c)
        if not best[0] > base_score + 1e-6:
            return base_score, moves
        base[best[1]] = best[2]
        base_score, moves = best[0], moves + 1


def test_greedy_lane_is_steepest_ascent_and_skips_the_moved_attribute():
    """The greedy lane ends where brute-force steepest ascent ends (same score), in
    M + moves·(M - 1) steps: a sweep after a move does not re-step the attribute just set
    (its step would return the base)."""
    m = len(N_VALUES)
    checked = 0
    for seed, direction, penalty in [(0, "positive", 0.5), (1, "negative", 0.5),
                                     (2, "positive", 0.0), (3, "positive", 1.5)]:
        codes, y, p = _table(seed, True)
        problem, basis, Phi, Y = _engine_inputs(codes, y, p, direction, True)
        keys = jax.random.split(jax.random.key(seed), 2)
        lanes = _lanes.search(keys, problem, Phi, Y, basis, jnp.asarray(penalty), 100, True,
                              basis.endpoints())
        scores, conv, steps = lanes.score, lanes.converged, lanes.steps
        ref, moves = _greedy_reference(codes, y, p, direction, penalty)
        assert float(scores[-1]) == pytest.approx(ref, abs=1e-6)
        assert bool(conv[-1])
        assert int(steps[-1]) == m + moves * (m - 1)
        checked += moves > 0
    assert checked >= 2  # the tables do make the lane move


@pytest.mark.parametrize("grouped", [False, True])
def test_every_lane_carries_its_subgroups_score_and_log_q(grouped, monkeypatch):
    """The score and log q a lane carries (its last attribute step's; the result's come from the
    best lane, with no re-score) equal score_arrays' direct re-score of the lane's final subgroup,
    for the restart lanes and the greedy lane, on the lock-step path and on the grouped
    segment-sum path of large tables; and scan_arrays returns the best lane's pair."""
    if grouped:  # step only the active lanes, in pairs, with segment sums
        monkeypatch.setattr(_plan, "GROUP_MIN_CELLS", 1)
        monkeypatch.setattr(_plan, "AGGREGATE", "segment")
    checked = 0
    for seed, direction, penalty, varying in [(0, "positive", 0.5, True), (1, "negative", 0.1, True),
                                              (2, "positive", 0.0, True), (3, "positive", 1.0, False)]:
        codes, y, p = _table(seed, varying)
        problem, basis, Phi, Y = _engine_inputs(codes, y, p, direction, varying)
        keys = jax.random.split(jax.random.key(seed), 4)
        search = jax.jit(lambda *a: _lanes.search(*a[:6], 100, True, a[6]))  # a fresh trace
        lanes = search(keys, problem, Phi, Y, basis, jnp.asarray(penalty), basis.endpoints())
        masks, listeds, scores = lanes.mask, lanes.listed, lanes.score
        steps, log_qs = lanes.steps, lanes.log_q
        for lane in range(keys.shape[0] + 1):  # the restart lanes, then the greedy lane
            assert int(steps[lane]) > 0
            direct, t = E.score_arrays(problem, Phi, Y, basis, masks[lane], listeds[lane],
                                       penalty=penalty)
            assert float(scores[lane]) == pytest.approx(float(direct), rel=1e-10, abs=1e-10)
            assert float(log_qs[lane]) == pytest.approx(float(t), rel=1e-7, abs=1e-9)
            checked += bool(np.asarray(listeds[lane]).any())
        raw = E.scan_arrays(jax.random.key(seed), problem, Phi, Y, basis, penalty=penalty,
                            num_restarts=4)
        best = int(np.argmax(np.asarray(scores)))
        # (another program: fast-compiling options; the same lanes up to float64 round-off)
        assert float(raw.score) == pytest.approx(float(scores[best]), rel=1e-12, abs=1e-12)
        assert float(raw.log_q) == pytest.approx(float(log_qs[best]), rel=1e-9, abs=1e-12)
    assert checked >= 8  # most final subgroups are constrained ones


def test_determinism_and_restart_zero():
    codes, y, p = _table(1, True)
    problem, basis, Phi, Y = _engine_inputs(codes, y, p, "positive", True)
    kw = dict(penalty=0.0, num_restarts=RESTARTS)
    a = E.scan_arrays(jax.random.key(5), problem, Phi, Y, basis, **kw)
    b = E.scan_arrays(jax.random.key(5), problem, Phi, Y, basis, **kw)
    for x, z in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))
    # restart 0 starts from the whole data: with a zero step cap it returns the start unchanged
    raw = E.scan_arrays(jax.random.key(5), problem, Phi, Y, basis, penalty=0.0,
                        num_restarts=1, max_steps=0)
    whole, _ = E.score_arrays(problem, Phi, Y, basis, jnp.ones((3, 4), bool),
                              jnp.zeros(3, bool), penalty=0.0)
    assert float(whole) == pytest.approx(_max_llr(y, p, "positive"), abs=1e-8)
    assert not np.asarray(raw.listed).any()
    assert float(raw.score) == pytest.approx(float(whole), abs=1e-12)
    assert not bool(raw.converged)


def test_zero_step_cap_returns_restart_zero_with_many_restarts():
    """Starts are not scored: with max_steps = 0 every lane keeps its start and the result is
    restart 0's (the whole data), scored directly, whatever the other restarts' starts were."""
    codes, y, p = _table(1, True)
    problem, basis, Phi, Y = _engine_inputs(codes, y, p, "positive", True)
    raw = E.scan_arrays(jax.random.key(3), problem, Phi, Y, basis, penalty=0.0,
                        num_restarts=6, max_steps=0)
    assert not np.asarray(raw.listed).any()
    assert float(raw.score) == pytest.approx(_max_llr(y, p, "positive"), abs=1e-8)
    from ofijax.scan import _lanes

    seeds = _lanes.num_seeds(problem)  # the seeded lanes (#43) also keep their starts
    assert seeds > 0
    assert np.asarray(raw.steps).tolist() == [0] * (6 + seeds + 1)  # restarts, seeded, greedy


def test_batched_zeros_follow_vmap_and_loops_batch_once():
    """batched_zeros are zeros; under vmap they carry the batch axis, so a loop that starts from
    them batches its body once (counted on JAX's batching of the loop's jaxpr)."""
    from jax._src.interpreters import batching

    from ofijax.scan._solve import batched_zeros

    z = batched_zeros((3, 2), jnp.float64, jnp.ones(4))
    assert z.shape == (3, 2) and z.dtype == jnp.float64 and not np.asarray(z).any()
    assert not np.asarray(batched_zeros(3, bool, jnp.ones(2))).any()

    def loop(x, start):
        return jax.lax.fori_loop(0, 3, lambda i, c: c + x, start(x))

    calls = []
    real = batching.batch_jaxpr

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    xs = jnp.arange(6.0).reshape(2, 3)
    counts = []
    for start in (lambda x: jnp.zeros(3), lambda x: batched_zeros(3, x.dtype, x)):
        calls.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(batching, "batch_jaxpr", counting)
            out = jax.vmap(lambda x, s=start: loop(x, s))(xs)
        np.testing.assert_array_equal(np.asarray(out), 3 * np.asarray(xs))
        counts.append(len(calls))
    assert counts[1] < counts[0], counts


def test_step_cap_reports_not_converged():
    codes, y, p = _table(2, True)
    problem, basis, Phi, Y = _engine_inputs(codes, y, p, "positive", True)
    capped = E.scan_arrays(jax.random.key(0), problem, Phi, Y, basis, penalty=0.0,
                           num_restarts=RESTARTS, max_steps=2)
    full = E.scan_arrays(jax.random.key(0), problem, Phi, Y, basis, penalty=0.0,
                         num_restarts=RESTARTS)
    assert not bool(capped.converged)
    assert bool(full.converged)


def test_vmap_over_replicates():
    """scan_arrays vmaps over (key, Y) with problem and basis fixed; equals the unbatched calls."""
    codes, y, p = _table(4, True)
    problem, basis, Phi, Y = _engine_inputs(codes, y, p, "positive", True)
    rng = np.random.default_rng(0)
    ys = (rng.uniform(size=(3, N_ROWS)) < p).astype(np.float64)
    Ys = jax.vmap(lambda yy: E.outcome_counts(yy, problem.row_cell, problem.num_cells))(
        jnp.asarray(ys))
    Ys = jnp.concatenate([Ys, jnp.zeros((3, C_MAX - Ys.shape[1]))], axis=1)
    keys = jax.random.split(jax.random.key(1), 3)
    batched = jax.vmap(lambda k, yy: E.scan_arrays(k, problem, Phi, yy, basis, penalty=0.0,
                                                   num_restarts=RESTARTS))(keys, Ys)
    for i in range(3):
        single = E.scan_arrays(keys[i], problem, Phi, Ys[i], basis, penalty=0.0, num_restarts=RESTARTS)
        assert float(batched.score[i]) == pytest.approx(float(single.score), abs=1e-9)


# ---------------------------------------------------------------------------------------------
# Aggregation paths of the engine (segment sum, one-hot matmul, shift-tested membership,
# grouped lanes) against the one-hot reference path and NumPy


def _path_table(seed=7, n=700, n_values=(7, 5, 70)):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, v, n) for v in n_values], axis=1)
    codes[:, 1] = np.where(codes[:, 0] < 3, 0, codes[:, 1])  # clustered, uneven cells
    for m, v in enumerate(n_values):
        codes[:v, m] = np.arange(v)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return codes, y, p, np.array(n_values)


@pytest.mark.parametrize("v_cap", [None, 6])
def test_per_value_paths_match_numpy(monkeypatch, v_cap):
    """One-hot matmul and segment sum (of the stacked cell statistics, padded or not; cells
    outside the subgroup dropped) give the same per-value sums (to 1e-12 relative) as NumPy over
    the rows; membership by shifts (V ≤ 64; on the codes as stored and attribute-major) and by
    gather (V > 64) equals NumPy's; all also under vmap."""
    codes, y, p, n_values = _path_table()
    if v_cap is not None:  # all V ≤ 64: the shift test
        codes = np.minimum(codes, v_cap - 1)
        n_values = np.minimum(n_values, v_cap)
    problem = E.make_problem(codes, n_values)
    basis = make_basis("chebyshev", direction="positive")
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
    Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
    padded = -(-problem.num_cells // 8) * 8 + 8
    problem, Phi, Y = E.pad_cells(problem, Phi, Y, padded)
    row_cell = np.asarray(problem.row_cell)
    phi_rows = np.asarray(Phi)[row_cell] / np.asarray(problem.n_cells)[row_cell][:, None]
    rng = np.random.default_rng(1)
    masks = rng.uniform(size=(3, len(n_values), problem.v_max)) < 0.6
    listed = rng.uniform(size=(3, len(n_values))) < 0.7
    attrs = np.array([0, 2, 1])
    ref = []
    for lane in range(3):
        ok = masks[lane] | ~(listed[lane] & (np.arange(len(n_values)) != attrs[lane]))[:, None]
        ins = np.all(ok[np.arange(len(n_values)), codes], axis=1)
        got = np.asarray(_sums.in_subset(problem, jnp.asarray(masks[lane]),
                                      jnp.asarray(listed[lane]), skip=attrs[lane]))
        np.testing.assert_array_equal(got[row_cell], ins)
        codes_t = problem.cell_codes.T  # the attribute-major layout of the scan's steps
        got_t = _sums.in_subset(problem, jnp.asarray(masks[lane]), jnp.asarray(listed[lane]),
                             skip=attrs[lane], codes_t=codes_t)
        np.testing.assert_array_equal(np.asarray(got_t)[row_cell], ins)
        np.testing.assert_array_equal(np.asarray(_sums.column(problem, attrs[lane], codes_t)),
                                      np.asarray(problem.cell_codes)[:, attrs[lane]])
        onehot = (codes[:, attrs[lane]][:, None] == np.arange(problem.v_max)) & ins[:, None]
        ref.append((onehot.T @ phi_rows, onehot.T @ y.astype(np.float64), onehot.sum(axis=0)))

    def agg(mk, ls, a):
        inside = _sums.in_subset(problem, mk, ls, skip=a)
        return _sums.per_value(problem, Phi, Y, inside, _sums.column(problem, a))

    # segment sums of the stacked rows padded to 4 columns or not padded
    for how, align in (("onehot", 4), ("segment", 4), ("segment", 1)):
        monkeypatch.setattr(_plan, "AGGREGATE", how)
        monkeypatch.setattr(_plan, "STACK_ALIGN", align)
        out = jax.jit(jax.vmap(agg))(jnp.asarray(masks), jnp.asarray(listed), jnp.asarray(attrs))
        for lane in range(3):
            single = jax.jit(agg)(jnp.asarray(masks[lane]), jnp.asarray(listed[lane]),
                                  int(attrs[lane]))
            for got, alone, want in zip(out, single, ref[lane]):
                scale = max(1.0, float(np.abs(want).max()))
                np.testing.assert_allclose(np.asarray(got[lane]), want, rtol=0, atol=1e-12 * scale)
                np.testing.assert_allclose(np.asarray(alone), want, rtol=0, atol=1e-12 * scale)


def test_grouped_segment_scan_equals_lockstep_onehot(monkeypatch):
    """Stepping only the active lanes in groups, with segment sums (cells outside dropped), takes
    the same steps and finds the same subgroups as the lock-step one-hot search (also vmapped)."""
    codes, y, p, n_values = _path_table(seed=3, n=900, n_values=(6, 4, 9))
    bump = (codes[:, 0] == 2) & (codes[:, 2] < 4)
    y = np.where(bump, (np.random.default_rng(0).uniform(size=y.size) < 0.9), y).astype(np.int8)
    problem = E.make_problem(codes, n_values)
    basis = make_basis("chebyshev", direction="positive")
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
    Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
    problem, Phi, Y = E.pad_cells(problem, Phi, Y, -(-problem.num_cells // 8) * 8)
    cells = dataclasses.replace(problem, row_cell=jnp.zeros(0, jnp.int32))
    keys = jax.random.split(jax.random.key(2), 2)

    def run():  # a fresh jit, so the module switches are read at trace time
        f = jax.jit(_programs.search_cells.__wrapped__, static_argnums=(7, 8, 9, 10))
        one = jax.vmap(lambda k: f(k, cells, Phi, Y, basis, 0.01, 60, RESTARTS, True, None,
                                   False))
        return one(keys)

    monkeypatch.setattr(_plan, "AGGREGATE", "onehot")
    monkeypatch.setattr(_plan, "GROUP_MIN_CELLS", 1 << 40)
    ref = run()
    monkeypatch.setattr(_plan, "AGGREGATE", "segment")
    monkeypatch.setattr(_plan, "GROUP_MIN_CELLS", 1)
    assert _plan.group_width(cells.num_cells, RESTARTS + 1) == _plan.GROUP_WIDTH
    got = run()
    np.testing.assert_array_equal(np.asarray(got.steps), np.asarray(ref.steps))
    np.testing.assert_array_equal(np.asarray(got.mask), np.asarray(ref.mask))
    np.testing.assert_array_equal(np.asarray(got.listed), np.asarray(ref.listed))
    np.testing.assert_allclose(np.asarray(got.score), np.asarray(ref.score), rtol=0, atol=1e-9)
    assert np.asarray(ref.steps).min() < np.asarray(ref.steps).max()  # lanes of unequal length


def _split_inputs():
    """A table whose search steps its lanes in groups (≥ GROUP_MIN_CELLS padded cells), as
    bias_scan builds it: the DataFrame, y, p and the padded cell arrays."""
    import pandas as pd

    from ofijax.scan import _api

    rng = np.random.default_rng(8)
    n = 10_000
    codes = rng.integers(0, 14, (n, 4))
    p = rng.uniform(0.05, 0.95, n)
    bump = (codes[:, 0] < 3) & (codes[:, 2] > 9)
    y = (rng.uniform(size=n) < np.where(bump, 0.8, p)).astype(np.int8)
    df = pd.DataFrame(codes, columns=["a", "b", "c", "d"])
    with jax.enable_x64(True):  # as bias_scan builds them, whatever the caller's mode
        enc, yy, pp = _api._prepare(df, y, p, None)
        problem, basis, layout = _api._problem_basis(enc, pp, "auto", "positive",
                                                     _api.DEFAULT_Q_BOUNDS)
        padded, Phi, Y = _api._padded_cells(problem, basis, layout, yy, pp)
    assert Phi.shape[0] >= E.GROUP_MIN_CELLS
    return df, y, p, padded, basis, Phi, Y


@pytest.mark.parametrize("restarts, greedy, parts, turn",
                         [(5, True, 2, 8), (5, True, 3, 8), (4, False, 2, 8), (5, True, 2, 1),
                          (3, True, 1, 3)])
def test_split_search_equals_one_search_program(monkeypatch, restarts, greedy, parts, turn):
    """The search split over threads that share the lanes turn by turn returns the one-program
    search's result bit for bit: the best lane's subgroup, score, log q, every lane's steps,
    convergence and the found cells (restart 0 still starts from the whole data), whatever the
    number of threads and the turn's length (1 iteration: a turn after every step)."""
    _, _, _, padded, basis, Phi, Y = _split_inputs()
    cells, steps = E.search_args(padded, None)
    key = jax.random.key(11)
    monkeypatch.setattr(_programs, "TURN", turn)
    ref, ref_in = E.SEARCH.default(key, cells, Phi, Y, basis, 1e-3, steps, restarts, greedy)
    got, got_in = E.split_search(key, cells, Phi, Y, basis, 1e-3, steps, restarts, greedy, parts)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(got_in, np.asarray(ref_in))
    assert len(np.asarray(got.steps)) == restarts + greedy and np.asarray(got.steps).min() > 0
    assert np.asarray(got.listed).any()


def test_pad_problem_cells_pads_as_pad_cells():
    """pad_problem_cells (no cell arrays) pads the cells exactly as pad_cells does."""
    problem = E.make_problem(np.array([[0, 1], [1, 0], [1, 1], [1, 1]]))
    with jax.enable_x64(True):
        ref, _, _ = E.pad_cells(problem, jnp.ones((3, 2)), jnp.ones(3), 16)
        got = E.pad_problem_cells(problem, 16)
    assert got.num_cells == ref.num_cells == 16 and got.v_max == ref.v_max
    for a, b in ((got.cell_codes, ref.cell_codes), (got.n_cells, ref.n_cells)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="num_cells"):
        E.pad_problem_cells(problem, 2)


def test_stacked_cells_program_gives_the_search_statistics():
    """The cells program's stacked variant (a split search's input) returns the array the
    search would stack from the plain variant's features, bit for bit: [Phi | Y | n | 0…]."""
    from ofijax.scan import _api

    df, y, p, padded, basis, Phi, Y = _split_inputs()
    with jax.enable_x64(True):
        enc, yy, pp = _api._prepare(df, y, p, None)
        problem, basis, layout = _api._problem_basis(enc, pp, "auto", "positive",
                                                     _api.DEFAULT_Q_BOUNDS)
        padded2, stats, Y2 = _api._padded_cells(problem, basis, layout, yy, pp, stacked=True)
        ref = np.asarray(_sums.stack(padded, Phi, Y))
    assert stats.shape == (Phi.shape[0], E.stack_width(Phi.shape[1]))
    np.testing.assert_array_equal(np.asarray(stats), ref)
    np.testing.assert_array_equal(np.asarray(Y2), np.asarray(Y))
    np.testing.assert_array_equal(np.asarray(padded2.cell_codes), np.asarray(padded.cell_codes))


def test_search_parts_follow_size_cores_and_setting(monkeypatch):
    """One part for small tables or no steps; else the setting (or the usable cores when it is
    not a number), capped at one part per two lanes and at least 1."""
    big = E.GROUP_MIN_CELLS
    monkeypatch.setenv("OFIJAX_SEARCH_THREADS", "8")
    assert E.search_parts(big, 10, True, 130) == 5  # 11 lanes: at most 5 parts
    assert E.search_parts(big, 3, False, 130) == 1
    assert E.search_parts(big - 1, 10, True, 130) == 1  # lanes stepped as one batch: not split
    assert E.search_parts(big, 10, True, 0) == 1
    for bad in ("0", "-3"):
        monkeypatch.setenv("OFIJAX_SEARCH_THREADS", bad)
        assert E.search_parts(big, 10, True, 130) == 1
    monkeypatch.setenv("OFIJAX_SEARCH_THREADS", "many")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert E.search_parts(big, 10, True, 130) == max(1, min(cores, 5))


def test_bias_scan_same_on_one_thread_and_split(monkeypatch, x64):
    """bias_scan on a table whose search is split over the cores gives the same result whether
    it runs as one program (OFIJAX_SEARCH_THREADS=1) or as two parts on two threads, with the
    caller in JAX's 32-bit mode or in 64-bit mode (the parts' threads set their own)."""
    from ofijax.scan import bias_scan

    df, y, p, padded, *_ = _split_inputs()
    results = []
    for threads in ("1", "2"):
        monkeypatch.setenv("OFIJAX_SEARCH_THREADS", threads)
        assert E.search_parts(padded.num_cells, 5, True, 130) == int(threads)
        results.append(bias_scan(df, y, p, penalty=1e-3, num_restarts=5, key=11))
    one, split = results
    assert split.subset == one.subset and split.score == one.score and split.q == one.q
    np.testing.assert_array_equal(split.mask, one.mask)
    assert split.size > 0 and split.converged == one.converged
    assert set(one.subset) >= {"a", "c"}  # the planted subgroup's attributes


@pytest.mark.parametrize("v_cap", [None, 6])
def test_padding_cells_are_in_no_subgroup(v_cap):
    """pad_cells' empty cells carry the code V_max, so every membership test (packed-bit shift
    for V ≤ 64, gather above) leaves them out, even of a subgroup allowing every value; the real
    cells' membership is unchanged."""
    codes, y, p, n_values = _path_table()
    if v_cap is not None:
        codes = np.minimum(codes, v_cap - 1)
        n_values = np.minimum(n_values, v_cap)
    problem = E.make_problem(codes, n_values)
    c = problem.num_cells
    basis = make_basis("chebyshev", direction="positive")
    Phi = features(jnp.asarray(p), problem.row_cell, c, basis)
    Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, c)
    padded, _, _ = E.pad_cells(problem, Phi, Y, c + 5)
    assert np.all(np.asarray(padded.cell_codes)[c:] == problem.v_max)
    everything = jnp.ones((len(n_values), problem.v_max), bool)
    for listed in (jnp.ones(len(n_values), bool), jnp.zeros(len(n_values), bool)):
        got = np.asarray(E.cell_mask(padded, everything, listed))
        assert got[:c].all() and not got[c:].any()
        codes_t = padded.cell_codes.T.astype(jnp.uint8)
        got_t = np.asarray(_sums.in_subset(padded, everything, listed, codes_t=codes_t))
        if problem.v_max <= 64:  # the attribute-major shift test of large tables
            assert got_t[:c].all() and not got_t[c:].any()
