"""The attribute step and the penalised score, as pure functions on cell arrays: the exact best
value set of one attribute given the others (:func:`attribute_step`, the penalised interval
sweep of Speakman et al.), and the score of a given subgroup (:func:`score_arrays`). Both are
batched over leading lane axes as written; the search (:mod:`._lanes`) calls the step once per
lane and iteration. Costs and the choice between one looped solver and three solves are in
``experiments/notes/scan_engine.md``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._basis import Basis
from ._plan import Problem
from ._plan import one_solver as small_table
from ._solve import batched_zeros, maximize, solve
from ._sums import Prepared, column, in_subset, penalty_count, per_value

__all__ = ["Step", "attribute_step", "penalised_score", "score_arrays"]


class Step(NamedTuple):
    """Result of :func:`attribute_step` for one attribute."""

    row: jax.Array  # (V_max,) bool: the attribute's new value set
    listed: jax.Array  # bool: whether the attribute is constrained after the step
    score: jax.Array  # G*(new subset) - penalty·|row| (no penalty when unlisted)
    log_q: jax.Array  # its fitted t = log q
    pool_score: jax.Array  # G*(pool): the subset with this attribute's constraint dropped
    pool_log_q: jax.Array  # its fitted t = log q


class _Phases(NamedTuple):
    """State of :func:`attribute_step` between its three solves (2·V_max rows each in the looped
    form; solve 0 has V_max + 1 rows in the three-solve form)."""

    phi: jax.Array  # (2V, K) the rows' features for the next solve
    y: jax.Array  # (2V,)
    t_hat: jax.Array  # (2V,) crossings: the maximiser
    g_hat: jax.Array  # (2V,) crossings: the maximum
    g0: jax.Array  # (2V,) solve 0: max G of the V values (rows :V) and of the pool (row V)
    t0: jax.Array  # (2V,)
    member: jax.Array  # (2V - 1, V) bool: the values of each q-interval
    g2: jax.Array  # (2V,) solve 2: max G of each interval's value set
    t2: jax.Array  # (2V,)


def attribute_step(problem: Problem, Phi, Y, basis: Basis, mask, listed, m, penalty, ends=None,
                   one_solver: bool | None = None, prepared: Prepared | None = None) -> Step:
    """Exact best value set of attribute ``m`` given the other constraints (a :class:`Step`).

    Batched over leading lane axes of ``mask`` (..., M, V_max), ``listed`` (..., M) and ``m``
    (...), written out rather than ``vmap``-ed: the search steps all its lanes in one call, and
    a ``vmap`` of this step (its loops, the solver's included) traces, lowers and compiles more
    slowly.

    ``score = G*(new subset) - penalty·|row|`` (0 penalty if unlisted): the penalised interval
    sweep of Speakman et al. over the ≤ 2V-1 q-intervals, plus the "unconstrained" candidate
    (the pool D' of all the attribute's values), which wins only if strictly better (or if no
    value set is positive).

    Three batched solves: (0) the maximum of each value and of the pool, (1) both crossings
    ``G = penalty`` of each value with a positive penalised score, (2) the maximum of each
    interval's value set. With ``one_solver`` (default: on small tables,
    :func:`~._plan.one_solver`, where compiling costs more than running) they run as one loop
    over one :func:`~._solve.solve` on 2·V_max rows (padded), so the step compiles one solver
    instead of three, and keep the solver's halvings (``grid=False``); otherwise as three
    solves on their own V + 1, 2V and 2V rows, which run faster. ``prepared``: the
    loop-invariant :func:`~._sums.prepare` of ``(problem, Phi, Y)`` when the caller steps many
    times (without it the step reads ``problem.cell_codes`` and stacks the statistics itself).
    """
    v_max = problem.v_max
    dtype = Phi.dtype
    c = jnp.asarray(penalty, dtype)
    ends = basis.endpoints() if ends is None else ends
    prepared = Prepared(stats=None, codes_t=None) if prepared is None else prepared
    m = jnp.asarray(m)
    inside = in_subset(problem, mask, listed, skip=m, codes_t=prepared.codes_t)  # (..., C)
    col = column(problem, m, prepared.codes_t)  # (..., C)
    phi_v, y_v, n_v = per_value(problem, Phi, Y, inside, col, prepared.stats)
    lead = y_v.shape[:-1]  # the lanes' axes (none for one subgroup)
    present = n_v > 0
    w = 2 * v_max
    k = phi_v.shape[-1]
    left = jnp.arange(w) < v_max  # solve 1: rows :V the left crossings, V: the right ones
    inf = jnp.asarray(jnp.inf, dtype)
    zw = batched_zeros(lead + (w,), dtype, y_v)  # loop carries start batched (see batched_zeros)

    def two(x, axis=-1):
        return jnp.concatenate([x, x], axis=axis)

    def to_crossings(st: _Phases, g, t):
        return st._replace(phi=two(phi_v, -2), y=two(y_v), t_hat=two(t[..., :v_max]),
                           g_hat=two(g[..., :v_max]), g0=g, t0=t)

    def to_intervals(st: _Phases, g, t):
        valid = present & (st.g0[..., :v_max] - c > 0)
        lo = jnp.where(valid, t[..., :v_max], inf)
        hi = jnp.where(valid, t[..., v_max:], inf)
        edges = jnp.sort(jnp.concatenate([lo, hi], axis=-1), axis=-1)
        mids = 0.5 * (edges[..., :-1] + edges[..., 1:])  # (..., 2V-1)
        member = (valid[..., None, :] & (lo[..., None, :] < mids[..., :, None])
                  & (mids[..., :, None] < hi[..., None, :]))  # (..., 2V-1, V)
        mem = member.astype(dtype)
        return st._replace(
            phi=jnp.concatenate([mem @ phi_v, jnp.zeros(lead + (1, k), dtype)], axis=-2),
            y=jnp.concatenate([(mem @ y_v[..., None])[..., 0], jnp.zeros(lead + (1,), dtype)],
                              axis=-1),
            member=member)

    def finish(st: _Phases, g, t):
        return st._replace(g2=g, t2=t)

    after = [to_crossings, to_intervals, finish]
    if one_solver is None:
        one_solver = small_table(problem.num_cells)

    def solve_at(i, st: _Phases):  # solve i on the carry's rows: (G at t*, t*)
        return solve(basis, st.phi, st.y, i != 1, st.t_hat, st.g_hat, c,
                     left[: st.y.shape[-1]], ends, grid=False if one_solver else None)

    # solve 0's rows: the V values and the pool (padded to 2V rows for the loop)
    n0 = w if one_solver else v_max + 1
    pad = n0 - v_max - 1
    st = _Phases(
        phi=jnp.concatenate([phi_v, phi_v.sum(axis=-2, keepdims=True),
                             jnp.zeros(lead + (pad, k), dtype)], axis=-2),
        y=jnp.concatenate([y_v, y_v.sum(axis=-1, keepdims=True), jnp.zeros(lead + (pad,), dtype)],
                          axis=-1),
        t_hat=zw[..., :n0], g_hat=zw[..., :n0], g0=zw, t0=zw,
        member=batched_zeros(lead + (w - 1, v_max), bool, y_v), g2=zw, t2=zw,
    )
    if one_solver:  # one solver to compile, on 2V rows
        st = jax.lax.fori_loop(
            0, 3, lambda i, st: jax.lax.switch(i, after, st, *solve_at(i, st)), st)
    else:  # three solvers, each on its own rows (V + 1, 2V, 2V)
        for i in range(3):
            st = after[i](st, *solve_at(i, st))
    g_all, t_all = st.g0[..., v_max], st.t0[..., v_max]
    k_j = st.member.astype(dtype).sum(axis=-1)
    s_j = jnp.where(k_j > 0, st.g2[..., :-1] - c * k_j, -inf)
    j = jnp.argmax(s_j, axis=-1)

    def at_j(x):  # x[..., j] of each lane
        return jnp.take_along_axis(x, j[..., None], axis=-1)[..., 0]

    s_best = at_j(s_j)
    unconstrained = (g_all > s_best) | ~(at_j(k_j) > 0)
    all_row = jnp.arange(v_max) < problem.n_values[m][..., None]
    best_row = jnp.take_along_axis(st.member, j[..., None, None], axis=-2)[..., 0, :]
    new_row = jnp.where(unconstrained[..., None], all_row, best_row)
    return Step(
        row=new_row,
        listed=~unconstrained,
        score=jnp.where(unconstrained, g_all, s_best),
        log_q=jnp.where(unconstrained, t_all, at_j(st.t2[..., :-1])),
        pool_score=g_all,
        pool_log_q=t_all,
    )


def penalised_score(problem, Phi, Y, basis, mask, listed, penalty, ends=None):
    """``(score, log_q)`` of the subgroup ``(mask, listed)``, summed directly over its cells."""
    w = in_subset(problem, mask, listed).astype(Phi.dtype)
    g, t = maximize(basis, w @ Phi, w @ Y, ends)
    return g - penalty * penalty_count(problem, mask, listed), t


@jax.jit
def score_arrays(problem, Phi, Y, basis, mask, listed, *, penalty):
    """Penalised score and fitted log q of the subgroup ``(mask, listed)``.

    ``score = max_t (Y_S t - Phi_S·φ(t)) - penalty·Σ_{m listed} |mask[m] ∩ values of m|``.
    """
    return penalised_score(problem, Phi, Y, basis, mask, listed, jnp.asarray(penalty, Phi.dtype))
