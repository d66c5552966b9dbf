"""The lane search (MDSS coordinate ascent, Neill et al.) as pure functions in an
``init / step / terminate`` interface: :func:`init` builds every lane's start (restart 0 the whole
data, the other restarts random subgroups, on small tables seeded lanes from every single value
and, where few, pair of values, the greedy lane the whole data), :func:`step` runs one
iteration of every active lane (one :func:`~._step.attribute_step` each), :func:`terminate` says
when no lane is active; :func:`run` loops them (optionally for a capped number of iterations, the
unit the thread scheduler of :mod:`._programs` hands out) and :func:`search` returns every lane's
:class:`~._plan.RawScan`. A lane's steps depend only on its own key and state, so lanes stepped
on different threads give the same result bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._plan import IMPROVE_TOL, MIN_INIT_ROWS, Plan, Problem, RawScan, make_plan, seed_starts
from ._solve import batched_zeros
from ._step import Step, attribute_step
from ._sums import Prepared, in_subset, penalty_count, prepare, valid_values

__all__ = ["Lanes", "LANE_FIELDS", "init", "step", "terminate", "run", "search", "lane_results",
           "random_start", "num_seeds", "lane_keys", "seeded_start", "SEED_STREAM"]

#: ``fold_in`` data of the seeded lanes' keys (``fold_in(keys[0], SEED_STREAM)``): a stream of
#: its own, so the random restarts' keys, starts and steps are those of a search without seeds.
SEED_STREAM = 0x5EEDED


class Lanes(NamedTuple):
    """Search state: R restart lanes plus one greedy lane (index R) when enabled."""

    mask: jax.Array  # (L, M, V)
    listed: jax.Array  # (L, M)
    score: jax.Array  # (L,) penalised score of each lane's subgroup (-inf before its first step)
    log_q: jax.Array  # (L,) its fitted t = log q
    visited: jax.Array  # (L, M) (greedy lane: all True once a sweep found no improvement)
    steps: jax.Array  # (L,)
    active: jax.Array  # (L,) still searching
    best_mask: jax.Array  # (M, V) greedy lane: best candidate of the current sweep
    best_listed: jax.Array  # (M,)
    best_score: jax.Array  # ()
    best_log_q: jax.Array  # ()
    best_attr: jax.Array  # () int32: the attribute the sweep's best candidate re-optimised
    sweep_pos: jax.Array  # () int32: greedy lane: steps taken in the current sweep
    skip: jax.Array  # () int32: greedy lane: the attribute its last move re-optimised (-1: none)


#: The :class:`Lanes` fields with a lane axis; the others belong to the greedy lane.
LANE_FIELDS = ("mask", "listed", "score", "log_q", "visited", "steps", "active")


def random_start(u_order, rho, u_keep, problem: Problem, valid, codes_t=None):
    """Random initial subgroups (ρ ~ U(0,1), random attribute order, ≥ MIN_INIT_ROWS rows),
    batched over the leading (restart) axes of ``u_order`` (..., M), ``rho`` (...) and
    ``u_keep`` (..., M, V_max), written out rather than ``vmap``-ed (see attribute_step)."""
    m = problem.cell_codes.shape[1]
    order = jnp.argsort(u_order, axis=-1)
    keep = (u_keep < rho[..., None, None]) & valid
    lead = rho.shape

    def body(i, ml):
        mask, listed = ml
        # attribute a = order[..., i] of each restart: its row of mask replaced by keep's, by
        # selects on a one-hot (no gathers or scatters)
        at_a = jnp.arange(m) == order[..., i, None]  # (..., M)
        excludes = jnp.any(at_a[..., None] & valid & ~keep, axis=(-2, -1))
        mask2 = jnp.where(at_a[..., None], keep, mask)
        listed2 = listed | at_a
        rows = (in_subset(problem, mask2, listed2, codes_t=codes_t).astype(problem.n_cells.dtype)
                @ problem.n_cells)
        ok = excludes & (rows >= MIN_INIT_ROWS)
        return jnp.where(ok[..., None, None], mask2, mask), jnp.where(ok[..., None], listed2, listed)

    start = (valid | batched_zeros(lead + valid.shape, bool, rho),
             batched_zeros(lead + (m,), bool, rho))
    return jax.lax.fori_loop(0, m, body, start)  # carries batched (see batched_zeros)


def num_seeds(problem: Problem) -> int:
    """The number of seeded lanes of a search over ``problem`` (static;
    :func:`~._plan.seed_starts`)."""
    return len(seed_starts(problem.num_cells, problem.cell_codes.shape[1], problem.v_max))


def lane_keys(keys, problem: Problem):
    """The restart keys ``keys`` (R,) followed by the seeded lanes' keys (:func:`num_seeds` of
    them, ``split(fold_in(keys[0], SEED_STREAM), S)``): one key per restart or seeded lane."""
    s = num_seeds(problem)
    if s == 0:
        return keys
    return jnp.concatenate([keys, jax.random.split(jax.random.fold_in(keys[0], SEED_STREAM), s)])


def seeded_start(problem: Problem, valid, codes_t=None):
    """``(mask (S, M, V), listed (S, M), ok (S,))``: the seeded lanes' starts
    (:func:`~._plan.seed_starts`: ``a = v`` or ``a = v and b = w``). ``ok``: the start is a real
    subgroup (its values exist, each constraint excludes a value, at least one row)."""
    table = seed_starts(problem.num_cells, problem.cell_codes.shape[1], problem.v_max)
    m, v_max = problem.cell_codes.shape[1], problem.v_max
    a, v, b, w = (jnp.asarray(table[:, i]) for i in range(4))
    at_a = jnp.arange(m)[None, :] == a[:, None]  # (S, M)
    at_b = jnp.arange(m)[None, :] == b[:, None]  # all False for a single (b = -1)
    row_a = jnp.arange(v_max)[None, :] == v[:, None]  # (S, V)
    row_b = jnp.arange(v_max)[None, :] == w[:, None]
    mask = jnp.where(at_a[:, :, None], row_a[:, None, :],
                     jnp.where(at_b[:, :, None], row_b[:, None, :], True)) & valid
    listed = at_a | at_b

    def real(at):  # the constraint on `at` keeps a value and excludes one (or is absent)
        keeps = jnp.any(at[:, :, None] & mask, axis=(1, 2))
        excludes = jnp.any(at[:, :, None] & valid & ~mask, axis=(1, 2))
        return (keeps & excludes) | ~jnp.any(at, axis=1)

    rows = (in_subset(problem, mask, listed, codes_t=codes_t).astype(problem.n_cells.dtype)
            @ problem.n_cells)
    return mask, listed, real(at_a) & real(at_b) & (rows >= 1)


def init(k_init, problem: Problem, dtype, max_steps, greedy: bool, codes_t=None,
         seeds: int = 0) -> Lanes:
    """Every lane's start: restart lanes from their start keys ``k_init`` (the first of each
    restart key's split; restart 0 from the whole data), then ``seeds`` seeded lanes (the last
    ``seeds`` keys of ``k_init``, :func:`lane_keys`; starts :func:`seeded_start`; a seed that is
    no real subgroup starts stopped, converged, with score -inf), then the greedy lane from the
    whole data.

    No lane's start is scored: a restart lane's first step always counts as an improvement (its
    visited flags are all unset anyway), and the greedy lane's base, the whole data, is scored
    by its first step (the pool of attribute 0 with nothing listed). So a lane that never steps
    (``max_steps = 0``) keeps -inf, and the best lane is then restart 0 (the whole data).
    """
    r = k_init.shape[0] - seeds
    m = problem.cell_codes.shape[1]
    v_max = problem.v_max
    valid = valid_values(problem)
    u = jax.vmap(lambda k: jax.random.uniform(k, (m + 1 + m * v_max,), dtype=dtype))(k_init[:r])
    mask_r, listed_r = random_start(u[:, :m], u[:, m], u[:, m + 1:].reshape(r, m, v_max),
                                    problem, valid, codes_t)
    first = (jnp.arange(r) == 0)[:, None]
    mask = jnp.where(first[:, :, None], valid[None], mask_r)
    listed = jnp.where(first, False, listed_r)
    ok = jnp.ones(r, bool)
    if seeds:
        mask_s, listed_s, ok_s = seeded_start(problem, valid, codes_t)
        mask = jnp.concatenate([mask, mask_s])
        listed = jnp.concatenate([listed, listed_s])
        ok = jnp.concatenate([ok, ok_s])
    lanes = r + seeds + 1 if greedy else r + seeds
    if greedy:
        mask = jnp.concatenate([mask, valid[None]])
        listed = jnp.concatenate([listed, jnp.zeros((1, m), bool)])
        ok = jnp.concatenate([ok, jnp.ones(1, bool)])
    neg_inf = jnp.asarray(-jnp.inf, dtype)
    return Lanes(
        mask=mask, listed=listed, score=jnp.full(lanes, neg_inf),
        log_q=jnp.zeros(lanes, dtype), visited=jnp.broadcast_to(~ok[:, None], (lanes, m)),
        steps=jnp.zeros(lanes, jnp.int32), active=ok & (max_steps > 0),
        best_mask=valid, best_listed=jnp.zeros(m, bool), best_score=neg_inf,
        best_log_q=jnp.asarray(0.0, dtype), best_attr=jnp.int32(0), sweep_pos=jnp.int32(0),
        skip=jnp.int32(-1),
    )


def terminate(state: Lanes):
    """() bool: no lane is active (the search is done)."""
    return ~jnp.any(state.active)


def step(s: Lanes, k_steps, problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
         plan: Plan, prepared: Prepared, grouped: bool) -> Lanes:
    """One iteration: every active lane steps one attribute (:func:`~._step.attribute_step`).

    Restart lanes (MDSS): each steps one random unvisited attribute (drawn from its step key
    ``k_steps[l]`` folded with its step count), always accepts, and resets its visited flags
    when the score rose by more than ``IMPROVE_TOL``; done when all are visited. Greedy lane:
    steepest ascent; it steps the attributes 0..M-1 in turn from the same base subgroup, and at
    the end of each sweep moves to the best candidate if it beats the base by more than
    ``IMPROVE_TOL``, else stops. A sweep after a move passes over the attribute that move
    re-optimised (its step would return the base), so sweeps after the first take M - 1 steps.
    Every lane stops after ``max_steps`` steps. ``grouped``: step the active lanes in groups of
    ``plan.width`` (else all lanes as one batch).
    """
    r = k_steps.shape[0]
    m = problem.cell_codes.shape[1]
    v_max = problem.v_max
    dtype = Phi.dtype
    lanes = s.mask.shape[0]
    width = plan.width
    neg_inf = jnp.asarray(-jnp.inf, dtype)

    def step_fn(mk, ls, a):  # batched over the lanes (see attribute_step)
        return attribute_step(problem, Phi, Y, basis, mk, ls, a, penalty, ends, plan.one_solver,
                              prepared)

    u_step = jax.vmap(
        lambda k, n: jax.random.uniform(jax.random.fold_in(k, n), (m,), dtype=dtype)
    )(k_steps, s.steps[:r])
    a = jnp.argmax(jnp.where(s.visited[:r], -1.0, u_step), axis=1)
    if greedy:  # the sweep's next attribute, passing over the one the last move set
        ga = s.sweep_pos + (s.sweep_pos >= s.skip) * (s.skip >= 0)
        a = jnp.concatenate([a, ga[None].astype(a.dtype)])
    if grouped:
        # active lanes first (stable), padded with the last lane to whole groups
        n_groups = -(-lanes // width)
        order = jnp.argsort(~s.active, stable=True)
        order = jnp.concatenate([order, jnp.full(n_groups * width - lanes, order[-1])])
        n_active = jnp.sum(s.active)
        count = -(-n_active // width)

        def group(j, out: Step):
            sel = jax.lax.dynamic_slice(order, (j * width,), (width,))
            # Slots past the active lanes (an odd count's last group) step an empty subgroup
            # (its segment sums drop every cell unread) and are dropped: otherwise an inactive
            # lane or a repeat would cost a full step.
            spare = j * width + jnp.arange(width) >= n_active
            mk = jnp.where(spare[:, None, None], False, s.mask[sel])
            ls = jnp.where(spare[:, None], True, s.listed[sel])
            dest = jnp.where(spare, lanes, sel)  # out of range: dropped
            new = step_fn(mk, ls, a[sel])
            return jax.tree.map(lambda o, x: o.at[dest].set(x, mode="drop"), out, new)

        zeros = jnp.zeros(lanes, dtype)
        init_out = Step(row=jnp.zeros((lanes, v_max), bool), listed=jnp.zeros(lanes, bool),
                        score=zeros, log_q=zeros, pool_score=zeros, pool_log_q=zeros)
        st = jax.lax.fori_loop(0, count, group, init_out)
    elif prepared.stats is not None:
        # lock-step on a segment-summed table: a stopped lane steps an empty subgroup (its
        # segment sums drop every cell unread; its outputs are discarded below) instead of its own
        st = step_fn(s.mask & s.active[:, None, None], s.listed | ~s.active[:, None], a)
    else:
        st = step_fn(s.mask, s.listed, a)
    # each lane's attribute a[l] updated by selects on a one-hot, not scatters (the
    # fast-compiling options expand every scatter into a while loop of its own); same values
    at = jnp.arange(m)[None, :] == a[:, None]  # (L, M)
    mask2 = jnp.where(at[:, :, None], st.row[:, None, :], s.mask)
    listed2 = jnp.where(at, st.listed[:, None], s.listed)
    others = penalty_count(problem, mask2, listed2 & ~at)
    full = st.score - penalty * others
    act = s.active
    steps = s.steps + act
    # restart lanes: always accept; reset the visited flags on improvement
    improved = full > s.score + IMPROVE_TOL
    visited = jnp.where(improved[:, None], False, s.visited) | at
    new_mask, new_listed, new_score, new_t = mask2, listed2, full, st.log_q
    bm, bl, bs, bt, ba = s.best_mask, s.best_listed, s.best_score, s.best_log_q, s.best_attr
    pos, skip = s.sweep_pos, s.skip
    if greedy:  # greedy lane: keep the base, remember the sweep's best, move at sweep end
        g = r
        # the base's score: at the lane's first step (nothing listed) its pool is the whole data
        first = s.steps[g] == 0
        base = jnp.where(first, st.pool_score[g], s.score[g])
        base_t = jnp.where(first, st.pool_log_q[g], s.log_q[g])
        cand = act[g] & (full[g] > bs)
        bm = jnp.where(cand, mask2[g], bm)
        bl = jnp.where(cand, listed2[g], bl)
        bs = jnp.where(cand, full[g], bs)
        bt = jnp.where(cand, st.log_q[g], bt)
        ba = jnp.where(cand, a[g].astype(jnp.int32), ba)
        # A sweep after a move passes over the attribute that move set: its step would return
        # the base (the base's value set is already that attribute's optimum given the others),
        # so it cannot improve. With one attribute nothing is left: the lane stops.
        end = act[g] & (pos == jnp.where(skip >= 0, m - 2, m - 1))
        move = end & (bs > base + IMPROVE_TOL)
        new_mask = new_mask.at[g].set(jnp.where(move, bm, s.mask[g]))
        new_listed = new_listed.at[g].set(jnp.where(move, bl, s.listed[g]))
        new_score = new_score.at[g].set(jnp.where(move, bs, base))
        new_t = new_t.at[g].set(jnp.where(move, bt, base_t))
        visited = visited.at[g].set(jnp.full(m, end & (~move | (m == 1))))
        bs = jnp.where(end, neg_inf, bs)
        skip = jnp.where(move, ba, skip)
        pos = jnp.where(end, 0, pos + act[g]).astype(jnp.int32)
    new_visited = jnp.where(act[:, None], visited, s.visited)
    return Lanes(
        mask=jnp.where(act[:, None, None], new_mask, s.mask),
        listed=jnp.where(act[:, None], new_listed, s.listed),
        score=jnp.where(act, new_score, s.score),
        log_q=jnp.where(act, new_t, s.log_q),
        visited=new_visited,
        steps=steps,
        active=act & ~jnp.all(new_visited, axis=1) & (steps < max_steps),
        best_mask=bm, best_listed=bl, best_score=bs, best_log_q=bt, best_attr=ba,
        sweep_pos=pos, skip=skip,
    )


def run(state: Lanes, k_steps, problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
        one_solver=None, prepared: Prepared | None = None, width: int | None = None,
        cap=None) -> Lanes:
    """:func:`step` the lanes of ``state`` (:func:`init`; ``k_steps`` the restart lanes' step
    keys, the second of each key's split) until :func:`terminate`, or, with ``cap``, until
    ``cap`` iterations have run or a lane has stopped (the thread scheduler resumes it).
    ``prepared``: :func:`~._sums.prepare` of the problem when the caller holds it; ``width``:
    lanes per batched step (default the :class:`~._plan.Plan`'s)."""
    plan = make_plan(problem, state.mask.shape[0], one_solver, width)
    if prepared is None:
        prepared = prepare(problem, Phi, Y)  # loop-invariant: once, not per step
    grouped = plan.width < state.mask.shape[0] or cap is not None

    def body(s: Lanes) -> Lanes:
        return step(s, k_steps, problem, Phi, Y, basis, penalty, max_steps, greedy, ends, plan,
                    prepared, grouped)

    if cap is None:
        return jax.lax.while_loop(lambda s: ~terminate(s), body, state)
    n_start = jnp.sum(state.active)
    # at most `cap` iterations, and none after a lane stopped
    out, _ = jax.lax.while_loop(
        lambda si: ~terminate(si[0]) & (si[1] < cap) & (jnp.sum(si[0].active) == n_start),
        lambda si: (body(si[0]), si[1] + 1), (state, jnp.int32(0)))
    return out


def lane_results(state: Lanes) -> RawScan:
    """Every lane's :class:`~._plan.RawScan` (leading lane axis): its subgroup, score, log q,
    whether it stopped at a local optimum (all attributes visited) and its step count."""
    return RawScan(mask=state.mask, listed=state.listed, score=state.score, log_q=state.log_q,
                   converged=jnp.all(state.visited, axis=1), steps=state.steps)


def search(keys, problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
           one_solver=None) -> RawScan:
    """All starts from the restart ``keys`` (R,) and the seeded lanes (:func:`lane_keys`) in
    lock-step, run to the end: every lane's :class:`~._plan.RawScan` (:func:`lane_results`;
    restarts, seeded lanes, greedy lane). Each key is split once into the lane's start key
    (:func:`init`) and step key (:func:`step`)."""
    pairs = jax.vmap(jax.random.split)(lane_keys(keys, problem))  # each (start, steps) keys
    state = init(pairs[:, 0], problem, Phi.dtype, max_steps, greedy, seeds=num_seeds(problem))
    out = run(state, pairs[:, 1], problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
              one_solver)
    return lane_results(out)
