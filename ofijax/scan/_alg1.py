"""IJDI-Scan's Algorithm 1: p_scan construction, the two edge-case updates and the whole procedure
as one jittable, vmappable function (``lax.while_loop`` with a cap), on top of the generic
procedures of :mod:`._procedures` (which plain Bias Scan and FPR-/TPR-Scan use directly).

Everything here works on the rows of one side (D_N or D_P) and on the engine's cell arrays
(:mod:`._engine`); nothing validates input. It needs float64 (callers wrap it in
``jax.enable_x64(True)``).

Notation (spec ``ijdi_algorithm.md`` §5.3): y = the scan outcome p̂_b, p = the base-rate
probabilities, p̄_b = mean(y), p̄⁰ = mean(p) (frozen), p^w = working copy of p,
raw = p̄_b + λ(p^w − p̄⁰), p_scan = clip(raw, 0, 1) (then adjusted), c = the censoring record.
A subgroup S is a row mask ``in_s``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._basis import Basis
from ._engine import Problem, cell_mask, outcome_counts
from ._procedures import (
    CODE_ACCEPT,
    CODE_ALPHA,
    CODE_BETA,
    CODE_NONE,
    CODE_PIN,
    CODE_UNSEEN,
    AlgState,
    Params,
    ProcedureOut,
    bias_procedure,
    clamped_scan,
    make_params,
    mean_over,
    rate_procedure,
)

__all__ = [
    "AlgState",
    "Params",
    "make_params",
    "Alg1Out",
    "EDGE_TOL",
    "DEFAULT_RESTARTS",
    "CODE_ACCEPT",
    "CODE_ALPHA",
    "CODE_BETA",
    "CODE_PIN",
    "CODE_NONE",
    "CODE_UNSEEN",
    "initial_state",
    "edge_case_1",
    "edge_case_2",
    "check_edges",
    "rescan_key",
    "default_scan",
    "algorithm1",
    "rate_procedure",
    "bias_procedure",
]

#: Tolerance of both edge-case tests (the reference's 1e-6).
EDGE_TOL = 1e-6
#: Default restarts per scan of Algorithm 1 (``ijdi_scan(num_restarts=None)``).
#: ``experiments/ijdi_restarts.py`` (20 keys, the inputs of ``ijdi_real.py``, λ ∈ {0, 1, 3}, both
#: sides of COMPAS; German credit only λ = 0 negative at 10 restarts ran): share of keys returning
#: the modal subgroup with 10 / 25 / 50 restarts: COMPAS negative λ = 1: 0.50 / 0.95 / 1.00,
#: λ = 3: 0.45 / 0.70 / 1.00; COMPAS positive λ = 3: 0.65 / 0.45 / 0.65 (3 subgroups at 50: no
#: count tried is key-stable there, Algorithm 1's path dependence); λ = 0 and COMPAS positive
#: λ = 1: 1.00 at every count. 50 is the smallest count tried that is key-stable wherever any was.
DEFAULT_RESTARTS = 50

#: Output of :func:`algorithm1` (the shared :class:`~._procedures.ProcedureOut`).
Alg1Out = ProcedureOut


def initial_state(y, p, lam, valid=None):
    """Steps 1–2 of Algorithm 1: ``(AlgState, p̄_b, p̄⁰)`` with raw = p̄_b + λ(p − p̄⁰).

    ``valid`` (bool, optional) marks real rows; padding rows are left out of every mean.
    """
    valid = jnp.ones(y.shape, bool) if valid is None else valid
    pbar_b = mean_over(y, valid)
    pbar0 = mean_over(p, valid)
    raw = pbar_b + lam * (p - pbar0)
    p_scan = jnp.clip(raw, 0.0, 1.0)
    return AlgState(p, raw, p_scan, p_scan - raw), pbar_b, pbar0


def edge_case_1(state: AlgState, in_s, p_orig, pbar_b, pbar0, lam, strict, valid=None):
    """Step 3d: raise the members of S below p(~S) so that mean_S p^w = p(~S).

    ``p(~S)`` is the mean of the *original* p outside S. With ``L = {i ∈ S: p^w_i < p(~S)}``,
    ``α = Σ_S (p(~S) − p^w) / Σ_L (p(~S) − p^w)`` and ``p^w_i += α (p(~S) − p^w_i)`` on L. Then raw,
    p_scan and c are recomputed on S only: raw = p̄_b + λ(p^w − p̄⁰) (``strict=False``, the
    reference) or raw = p̄_b (``strict=True``). Returns ``(state, α, p(~S))``; α = 0 if undefined
    (never when the test ``mean_S (p^w − p̄⁰) < 0`` holds, since updates only raise p^w).
    ``in_s`` must exclude padding rows; ``valid`` marks the real rows (default: all).
    """
    out = ~in_s if valid is None else valid & ~in_s
    p_not_s = jnp.sum(jnp.where(out, p_orig, 0.0)) / jnp.maximum(jnp.sum(out), 1)
    gap = p_not_s - state.p_w
    low = in_s & (state.p_w < p_not_s)
    num = jnp.sum(jnp.where(in_s, gap, 0.0))
    den = jnp.sum(jnp.where(low, gap, 0.0))
    alpha = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
    p_w = jnp.where(low, state.p_w + alpha * gap, state.p_w)
    raw_s = jnp.where(strict, pbar_b, pbar_b + lam * (p_w - pbar0))
    raw = jnp.where(in_s, raw_s, state.raw)
    clipped = jnp.clip(raw, 0.0, 1.0)
    p_scan = jnp.where(in_s, clipped, state.p_scan)
    c = jnp.where(in_s, clipped - raw, state.c)
    return AlgState(p_w, raw, p_scan, c), alpha, p_not_s


def edge_case_2(state: AlgState, in_s):
    """Step 3e: undo the net clipping on S.

    If ``mean_S raw ≥ 1``: p_scan = 1 and c = 0 on S (S can no longer score). Otherwise
    ``β = Σ_S (raw − p_scan) / Σ_S (1 − p_scan)`` and ``p_scan += β (1 − p_scan)`` on S, then
    c = p_scan − raw on every row (as the reference does), so ``Σ_S p_scan = Σ_S raw``.
    Returns ``(state, β (NaN when pinned), pinned)``.
    """
    mean_raw = mean_over(state.raw, in_s)
    pinned = mean_raw >= 1.0
    num = jnp.sum(jnp.where(in_s, state.raw - state.p_scan, 0.0))
    den = jnp.sum(jnp.where(in_s, 1.0 - state.p_scan, 0.0))
    beta = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
    ps_b = jnp.where(in_s & (state.p_scan < 1.0), state.p_scan + beta * (1.0 - state.p_scan),
                     state.p_scan)
    c_b = ps_b - state.raw
    ps_pin = jnp.where(in_s, 1.0, state.p_scan)
    c_pin = jnp.where(in_s, 0.0, state.c)
    p_scan = jnp.where(pinned, ps_pin, ps_b)
    c = jnp.where(pinned, c_pin, c_b)
    return AlgState(state.p_w, state.raw, p_scan, c), jnp.where(pinned, jnp.nan, beta), pinned


def check_edges(state: AlgState, in_s, score, p_orig, pbar_b, pbar0, lam, strict, valid=None):
    """Steps 3b–3e for one scan result: ``(code, new_state, factor)`` (state unchanged on accept)."""
    m_delta = mean_over(state.p_w - pbar0, in_s)
    m_c = mean_over(state.c, in_s)
    st1, alpha, _ = edge_case_1(state, in_s, p_orig, pbar_b, pbar0, lam, strict, valid)
    st2, beta, pinned = edge_case_2(state, in_s)
    none = ~(score > 0)
    fire1 = ~none & (m_delta < -EDGE_TOL)
    fire2 = ~none & ~fire1 & (m_c < -EDGE_TOL)
    code = jnp.where(
        none, CODE_NONE,
        jnp.where(fire1, CODE_ALPHA,
                  jnp.where(fire2, jnp.where(pinned, CODE_PIN, CODE_BETA), CODE_ACCEPT)),
    ).astype(jnp.int32)
    new = jax.tree.map(lambda a, b, s: jnp.where(fire1, a, jnp.where(fire2, b, s)), st1, st2, state)
    factor = jnp.where(fire1, alpha, jnp.where(fire2, beta, jnp.nan))
    return code, new, factor


def rescan_key(key, index):
    """The key of scan ``index`` of Algorithm 1: ``key`` itself for the first scan (so λ = 0 and
    FPR-/TPR-Scan agree), ``fold_in(key, index)`` for rescan ``index`` ≥ 1 (every rescan draws fresh
    restarts instead of repeating the first scan's)."""
    kd = jax.random.key_data(key)
    folded = jax.random.key_data(jax.random.fold_in(key, index))
    return jax.random.wrap_key_data(jnp.where(index == 0, kd, folded),
                                    impl=jax.random.key_impl(key))


def default_scan(key, problem: Problem, row_cell, basis: Basis, params: Params, *,
                 num_restarts: int, max_steps: int | None):
    """Algorithm 1's scan as the reference runs it: scan ``i`` is the multi-start coordinate
    ascent (:func:`~._procedures.clamped_scan`) with key :func:`rescan_key` ``(key, i)``. Returns
    the ``scan(i, p_scan, Y) -> (mask, listed, score, log_q, converged)`` that
    :func:`algorithm1` calls."""
    def scan(index, p_scan, Y):
        r = clamped_scan(rescan_key(key, index), problem, p_scan, Y, row_cell, basis, params,
                         num_restarts, max_steps)
        return r.mask, r.listed, r.score, r.log_q, r.converged

    return scan


def algorithm1(key, y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params, *,
               history: int, num_restarts: int, max_steps: int | None, scan=None
               ) -> ProcedureOut:
    """Algorithm 1 of the IJDI paper (as run by the reference), pure and vmappable.

    ``scan(i, p_scan, Y) -> (mask, listed, score, log_q, converged)`` is scan ``i`` (0 = the
    first, i ≥ 1 the rescans) with the current p_scan and the outcome counts ``Y`` per cell; by
    default (``None``) :func:`default_scan`: coordinate ascent with ``num_restarts`` restarts and
    key :func:`rescan_key` ``(key, i)`` (``key``, ``num_restarts`` and ``max_steps`` are read
    only by it; :func:`~._ijdi_exhaustive.algorithm1_exhaustive` passes an exhaustive scan). The
    loop stops when a scan scores ≤ 0, passes both edge tests, or after ``params.cap``
    adjustments (then ``converged`` is False if the last subgroup still fails a test); the cap
    must be < ``history`` (the static length of the history arrays). ``row_cell`` may differ from
    ``problem.row_cell`` (permutation nulls); padding rows (``valid`` False) must have
    ``row_cell`` ≥ ``problem.num_cells`` so the scan drops them. p_scan is clamped into
    ``[eps, 1 − eps]`` only where it enters the scan. The scan appears once in the loop body (one
    compiled copy); ``params`` are traced, so another λ or penalty does not recompile.
    """
    if scan is None:
        scan = default_scan(key, problem, row_cell, basis, params, num_restarts=num_restarts,
                            max_steps=max_steps)
    k = history - 1
    m, v = problem.cell_codes.shape[1], problem.v_max
    y = y.astype(p.dtype)
    state, pbar_b, pbar0 = initial_state(y, p, params.lam, valid)
    Y = outcome_counts(y, row_cell, problem.num_cells)
    cap = jnp.minimum(params.cap, k)
    nan = jnp.full(k + 1, jnp.nan, p.dtype)
    hist = (
        jnp.full(k + 1, CODE_UNSEEN, jnp.int32), nan, nan,
        jnp.zeros((k + 1, m, v), bool), jnp.zeros((k + 1, m), bool), jnp.zeros(k + 1, bool),
    )
    # the last scan's output in the loop carry (overwritten by the first scan)
    r0 = (jnp.zeros((m, v), bool), jnp.zeros(m, bool), jnp.zeros((), p.dtype),
          jnp.zeros((), p.dtype), jnp.zeros((), bool))

    def cond(carry):
        return ~carry[2]

    def body(carry):
        st, it, _, _, _, (codes, scores, factors, masks, listeds, sconv) = carry
        mask, listed, score, log_q, converged = scan(it, st.p_scan, Y)
        in_s = cell_mask(problem, mask, listed)[row_cell] & valid
        code, new, factor = check_edges(st, in_s, score, p, pbar_b, pbar0, params.lam,
                                        params.strict, valid)
        ok = (code == CODE_ACCEPT) | (code == CODE_NONE)
        stop = ok | (it >= cap)
        hist = (codes.at[it].set(code), scores.at[it].set(score),
                factors.at[it].set(jnp.where(ok, jnp.nan, factor)), masks.at[it].set(mask),
                listeds.at[it].set(listed), sconv.at[it].set(converged))
        st2 = jax.tree.map(lambda a, b: jnp.where(stop, a, b), st, new)
        return (st2, jnp.where(stop, it, it + 1), stop, (mask, listed, score, log_q, converged),
                code, hist)

    st, it, _, r, code, hist = jax.lax.while_loop(
        cond, body, (state, jnp.asarray(0), jnp.asarray(False), r0,
                     jnp.asarray(CODE_UNSEEN, jnp.int32), hist))
    mask, listed, score, log_q, converged = r
    codes, scores, factors, masks, listeds, sconv = hist
    ok = (code == CODE_ACCEPT) | (code == CODE_NONE)
    score = jnp.where(code == CODE_NONE, 0.0, score)
    return ProcedureOut(mask, listed, score, log_q, ok & converged, it + 1, st, codes,
                        scores, factors, masks, listeds, sconv)
