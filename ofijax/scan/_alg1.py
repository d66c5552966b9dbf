"""Pure-JAX cores of FPR-/TPR-/IJDI-Scan: p_scan construction, the two edge-case updates of
Algorithm 1 and the whole procedure as one jittable, vmappable function (``lax.while_loop`` with a cap).

Everything here works on the rows of one side (D_N or D_P) and on the engine's cell arrays
(:mod:`._engine`); nothing validates input. It needs float64 (callers wrap it in
``jax.enable_x64(True)``).

Notation (spec ``ijdi_algorithm.md`` §5.3): y = the scan outcome p̂_b, p = the base-rate
probabilities, p̄_b = mean(y), p̄⁰ = mean(p) (frozen), p^w = working copy of p,
raw = p̄_b + λ(p^w − p̄⁰), p_scan = clip(raw, 0, 1) (then adjusted), c = the censoring record.
A subgroup S is a row mask ``in_s``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ._basis import Basis, features
from ._engine import Problem, cell_mask, outcome_counts, scan_arrays

__all__ = [
    "AlgState",
    "Params",
    "make_params",
    "Alg1Out",
    "EDGE_TOL",
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
    "algorithm1",
    "rate_procedure",
    "bias_procedure",
]

#: Tolerance of both edge-case tests (the reference's 1e-6).
EDGE_TOL = 1e-6

# History codes: what Algorithm 1 did after a scan.
CODE_UNSEEN = -1  # slot not used
CODE_ACCEPT = 0  # no edge case: the subgroup is returned
CODE_ALPHA = 1  # edge case 1 (p(S) < p(~S)): α-update of p^w, rescan
CODE_BETA = 2  # edge case 2 (net clipping): β-update of p_scan, rescan
CODE_PIN = 3  # edge case 2 with mean_S raw ≥ 1: p_scan pinned at 1 on S, rescan
CODE_NONE = 4  # score ≤ 0: no subgroup


class AlgState(NamedTuple):
    """Per-row working arrays of Algorithm 1 (all ``(N,)`` float)."""

    p_w: jax.Array  # working base-rate probabilities p^w
    raw: jax.Array  # unclipped null rate
    p_scan: jax.Array  # null rate passed to the scan
    c: jax.Array  # censoring record (p_scan − raw, except where pinned)


class Params(NamedTuple):
    """Traced scalar parameters (changing them does not recompile)."""

    lam: jax.Array  # λ
    penalty: jax.Array  # complexity penalty per listed value
    eps: jax.Array  # p_scan is clamped into [eps, 1 - eps] where it enters the scan
    strict: jax.Array  # bool: strict edge-case-1 update (raw = p̄_b on S)
    cap: jax.Array  # int: max_adjustments (≤ the static history length - 1)


def make_params(lam=0.0, penalty=0.1, eps=1e-6, strict=False, cap=0) -> Params:
    """:class:`Params` as float64/bool/int32 arrays (call inside ``jax.enable_x64(True)``)."""
    return Params(jnp.asarray(lam, jnp.float64), jnp.asarray(penalty, jnp.float64),
                  jnp.asarray(eps, jnp.float64), jnp.asarray(strict, bool),
                  jnp.asarray(cap, jnp.int32))


class Alg1Out(NamedTuple):
    """Output of :func:`algorithm1` (and of the simpler procedures, with trivial history)."""

    mask: jax.Array  # (M, V_max) final subgroup
    listed: jax.Array  # (M,)
    score: jax.Array  # penalised score of the final scan
    log_q: jax.Array
    converged: jax.Array  # final subgroup passes both edge tests (or scores 0) and the scan converged
    num_scans: jax.Array  # scans run (1 + rescans)
    state: AlgState  # final working arrays
    codes: jax.Array  # (K+1,) int32 history codes, per scan
    scores: jax.Array  # (K+1,) score of each scan
    factors: jax.Array  # (K+1,) α or β applied after that scan (NaN otherwise)
    masks: jax.Array  # (K+1, M, V_max)
    listeds: jax.Array  # (K+1, M)
    scan_converged: jax.Array  # (K+1,) bool


def initial_state(y, p, lam, valid=None):
    """Steps 1–2 of Algorithm 1: ``(AlgState, p̄_b, p̄⁰)`` with raw = p̄_b + λ(p − p̄⁰).

    ``valid`` (bool, optional) marks real rows; padding rows are left out of every mean.
    """
    valid = jnp.ones(y.shape, bool) if valid is None else valid
    pbar_b = _mean_over(y, valid)
    pbar0 = _mean_over(p, valid)
    raw = pbar_b + lam * (p - pbar0)
    p_scan = jnp.clip(raw, 0.0, 1.0)
    return AlgState(p, raw, p_scan, p_scan - raw), pbar_b, pbar0


def _mean_over(x, w):
    return jnp.sum(jnp.where(w, x, 0.0)) / jnp.maximum(jnp.sum(w), 1)


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
    mean_raw = _mean_over(state.raw, in_s)
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
    m_delta = _mean_over(state.p_w - pbar0, in_s)
    m_c = _mean_over(state.c, in_s)
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


def _scan(key, problem: Problem, p_scan, Y, row_cell, basis, params: Params, num_restarts,
          max_steps):
    p = jnp.clip(p_scan, params.eps, 1.0 - params.eps)
    Phi = features(p, row_cell, problem.num_cells, basis)
    return scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                       num_restarts=num_restarts, max_steps=max_steps)


def algorithm1(key, y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params, *,
               history: int, num_restarts: int, max_steps: int | None) -> Alg1Out:
    """Algorithm 1 of the IJDI paper (as run by the reference), pure and vmappable.

    Every (re)scan uses the same ``key``, so a rescan on unchanged p_scan returns the same subgroup.
    The loop stops when a scan scores ≤ 0, passes both edge tests, or after ``params.cap``
    adjustments (then ``converged`` is False if the last subgroup still fails a test); the cap must
    be < ``history`` (the static length of the history arrays).
    ``row_cell`` may differ from ``problem.row_cell`` (permutation nulls); padding rows
    (``valid`` False) must have ``row_cell`` ≥ ``problem.num_cells`` so the scan drops them. p_scan
    is clamped into ``[eps, 1 − eps]`` only where it enters the scan.
    """
    k = history - 1
    m, v = problem.cell_codes.shape[1], problem.v_max
    y = y.astype(p.dtype)
    state, pbar_b, pbar0 = initial_state(y, p, params.lam, valid)
    Y = outcome_counts(y, row_cell, problem.num_cells)

    def scan(st):
        return _scan(key, problem, st.p_scan, Y, row_cell, basis, params, num_restarts, max_steps)

    def in_rows(r):
        return cell_mask(problem, r.mask, r.listed)[row_cell] & valid

    r0 = scan(state)
    nan = jnp.full(k + 1, jnp.nan, p.dtype)
    hist = (
        jnp.full(k + 1, CODE_UNSEEN, jnp.int32),
        nan.at[0].set(r0.score),
        nan,
        jnp.zeros((k + 1, m, v), bool).at[0].set(r0.mask),
        jnp.zeros((k + 1, m), bool).at[0].set(r0.listed),
        jnp.zeros(k + 1, bool).at[0].set(r0.converged),
    )

    def cond(carry):
        _, _, it, done, _ = carry
        return (~done) & (it < jnp.minimum(params.cap, k))

    def body(carry):
        st, r, it, _, (codes, scores, factors, masks, listeds, sconv) = carry
        code, new, factor = check_edges(st, in_rows(r), r.score, p, pbar_b, pbar0, params.lam,
                                        params.strict, valid)
        done = (code == CODE_ACCEPT) | (code == CODE_NONE)
        r2 = jax.lax.cond(done, lambda: r, lambda: scan(new))
        codes = codes.at[it].set(code)
        factors = factors.at[it].set(factor)
        nxt = jnp.where(done, it, it + 1)
        j = jnp.minimum(nxt, k)
        scores = scores.at[j].set(r2.score)
        masks = masks.at[j].set(r2.mask)
        listeds = listeds.at[j].set(r2.listed)
        sconv = sconv.at[j].set(r2.converged)
        return new, r2, nxt, done, (codes, scores, factors, masks, listeds, sconv)

    st, r, it, _, hist = jax.lax.while_loop(
        cond, body, (state, r0, jnp.asarray(0), jnp.asarray(False), hist))
    codes, scores, factors, masks, listeds, sconv = hist
    # Check the final subgroup once more (it is unchecked when the cap stopped the loop).
    code, _, factor = check_edges(st, in_rows(r), r.score, p, pbar_b, pbar0, params.lam,
                                  params.strict, valid)
    codes = codes.at[it].set(code)
    factors = factors.at[it].set(jnp.where((code == CODE_ACCEPT) | (code == CODE_NONE),
                                           jnp.nan, factor))
    ok = (code == CODE_ACCEPT) | (code == CODE_NONE)
    score = jnp.where(code == CODE_NONE, 0.0, r.score)
    return Alg1Out(r.mask, r.listed, score, r.log_q, ok & r.converged, it + 1, st, codes,
                   scores, factors, masks, listeds, sconv)


def _trivial_out(r, state: AlgState) -> Alg1Out:
    one = lambda x: x[None]  # noqa: E731
    code = jnp.where(r.score > 0, CODE_ACCEPT, CODE_NONE).astype(jnp.int32)
    return Alg1Out(r.mask, r.listed, jnp.where(r.score > 0, r.score, 0.0), r.log_q, r.converged,
                   jnp.asarray(1), state, one(code), one(r.score),
                   jnp.full(1, jnp.nan, r.score.dtype), one(r.mask), one(r.listed),
                   one(r.converged))


def rate_procedure(key, y, p, valid, row_cell, problem: Problem, t_bounds: tuple[float, float],
                   params: Params, *, num_restarts: int, max_steps: int | None) -> Alg1Out:
    """FPR-/TPR-Scan: p_scan = p̄_b = mean(y) for every row, exact one-value basis (closed form).

    ``p`` is unused (kept for a common signature). p̄_b is clamped into ``[eps, 1 − eps]``.
    """
    del p
    y = y.astype(jnp.float64)
    pbar = jnp.clip(_mean_over(y, valid), params.eps, 1.0 - params.eps)
    basis = Basis("exact", t_bounds[0], t_bounds[1], pbar[None])
    p_rows = jnp.full(y.shape, pbar)
    Phi = features(p_rows, row_cell, problem.num_cells, basis)
    Y = outcome_counts(y, row_cell, problem.num_cells)
    r = scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                    num_restarts=num_restarts, max_steps=max_steps)
    return _trivial_out(r, AlgState(p_rows, p_rows, p_rows, jnp.zeros_like(p_rows)))


def bias_procedure(key, y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params, *,
                   num_restarts: int, max_steps: int | None) -> Alg1Out:
    """Plain Bias Scan with fixed expectations ``p`` (no clamping: ``eps`` is unused)."""
    del valid  # padding rows are dropped through their out-of-range row_cell
    Phi = features(p, row_cell, problem.num_cells, basis)
    Y = outcome_counts(y.astype(jnp.float64), row_cell, problem.num_cells)
    r = scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                    num_restarts=num_restarts, max_steps=max_steps)
    return _trivial_out(r, AlgState(p, p, p, jnp.zeros_like(p)))
