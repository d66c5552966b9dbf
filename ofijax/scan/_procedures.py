"""Generic scan procedures on padded rows: the layer between the engine and the randomization tests.

A *procedure* maps one data set (rows ``y``, null rates ``p``, a ``valid`` mask for padding rows,
their cells ``row_cell``) to a :class:`ProcedureOut`: the subgroup a whole scan finds and its
score. The randomization tests (:mod:`._randomization`) rerun a procedure on null data; the public
scans (:mod:`._api`, :mod:`._ijdi`) run it once. This module holds the procedures that need no
edge-case loop:

* :func:`bias_procedure`: plain Bias Scan with fixed expectations ``p``;
* :func:`rate_procedure`: FPR-/TPR-Scan (every row's null rate is mean(y), closed-form basis);
* :func:`clamped_scan`: one multi-start scan with ``p`` clamped into ``[eps, 1 − eps]``, the
  building block IJDI's Algorithm 1 (:mod:`._alg1`) reruns after each adjustment;
* :func:`disjoint_steps`: k finds, each scanned on the rows no earlier find holds (top-k).

Everything is pure, jittable and vmappable, and needs float64 (``jax.enable_x64``).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._validation import device_array
from ._basis import Basis, features
from ._engine import Problem, cell_mask, outcome_counts, scan_arrays

__all__ = [
    "disjoint_steps",
    "AlgState",
    "Params",
    "make_params",
    "ProcedureOut",
    "CODE_UNSEEN",
    "CODE_ACCEPT",
    "CODE_ALPHA",
    "CODE_BETA",
    "CODE_PIN",
    "CODE_NONE",
    "mean_over",
    "trivial_out",
    "uniform_outcomes",
    "no_subgroup_if",
    "clamped_scan",
    "rate_procedure",
    "bias_procedure",
]

# History codes: what a procedure did after a scan (Algorithm 1 uses all of them).
CODE_UNSEEN = -1  # slot not used
CODE_ACCEPT = 0  # no edge case: the subgroup is returned
CODE_ALPHA = 1  # edge case 1 (p(S) < p(~S)): α-update of p^w, rescan
CODE_BETA = 2  # edge case 2 (net clipping): β-update of p_scan, rescan
CODE_PIN = 3  # edge case 2 with mean_S raw ≥ 1: p_scan pinned at 1 on S, rescan
CODE_NONE = 4  # score ≤ 0: no subgroup


class AlgState(NamedTuple):
    """Per-row working arrays of a procedure (all ``(N,)`` float; see :mod:`._alg1`)."""

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
    """:class:`Params` of concrete values as float64/bool/int32 arrays (call inside
    ``jax.enable_x64(True)``), each moved by a plain transfer (``jnp.asarray`` would compile a
    program per dtype in every process)."""
    return Params(device_array(lam, jnp.float64), device_array(penalty, jnp.float64),
                  device_array(eps, jnp.float64), device_array(strict, bool),
                  device_array(cap, jnp.int32))


class ProcedureOut(NamedTuple):
    """Output of a procedure (Algorithm 1 fills the history; the others have one entry)."""

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


def mean_over(x, w):
    """Mean of ``x`` over the rows where ``w`` (0 when none)."""
    return jnp.sum(jnp.where(w, x, 0.0)) / jnp.maximum(jnp.sum(w), 1)


def trivial_out(r, state: AlgState) -> ProcedureOut:
    """A one-scan :class:`ProcedureOut` from a :class:`~._engine.RawScan`."""
    one = lambda x: x[None]  # noqa: E731
    code = jnp.where(r.score > 0, CODE_ACCEPT, CODE_NONE).astype(jnp.int32)
    return ProcedureOut(r.mask, r.listed, jnp.where(r.score > 0, r.score, 0.0), r.log_q,
                        r.converged, jnp.asarray(1), state, one(code), one(r.score),
                        jnp.full(1, jnp.nan, r.score.dtype), one(r.mask), one(r.listed),
                        one(r.converged))


def uniform_outcomes(y, valid):
    """True when every valid row has the same outcome (all 0 or all 1; also when none is valid):
    no subgroup's rate can then differ from the others', whatever a clamped null rate says."""
    pos = jnp.sum(jnp.where(valid, y, 0) > 0)
    return (pos == 0) | (pos == jnp.sum(valid))


def no_subgroup_if(flag, out: ProcedureOut) -> ProcedureOut:
    """``out`` where ``flag`` is False; otherwise "no subgroup": score 0, q = 1 (log q 0), one
    history entry coded :data:`CODE_NONE`, converged. (A select: the same values bit for bit where
    ``flag`` is False.)"""
    first = jnp.arange(out.codes.shape[0]) == 0
    return out._replace(
        score=jnp.where(flag, jnp.zeros_like(out.score), out.score),
        log_q=jnp.where(flag, jnp.zeros_like(out.log_q), out.log_q),
        converged=jnp.where(flag, True, out.converged),
        num_scans=jnp.where(flag, jnp.ones_like(out.num_scans), out.num_scans),
        codes=jnp.where(flag, jnp.where(first, CODE_NONE, CODE_UNSEEN).astype(out.codes.dtype),
                        out.codes),
        scores=jnp.where(flag, jnp.where(first, 0.0, jnp.nan).astype(out.scores.dtype),
                         out.scores),
        scan_converged=jnp.where(flag, True, out.scan_converged),
    )


def clamped_scan(key, problem: Problem, p_scan, Y, row_cell, basis: Basis, params: Params,
                 num_restarts: int, max_steps: int | None):
    """One multi-start scan with null rates ``clip(p_scan, eps, 1 − eps)`` (a RawScan)."""
    p = jnp.clip(p_scan, params.eps, 1.0 - params.eps)
    Phi = features(p, row_cell, problem.num_cells, basis)
    return scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                       num_restarts=num_restarts, max_steps=max_steps)


def rate_procedure(key, y, p, valid, row_cell, problem: Problem, t_bounds: tuple[float, float],
                   params: Params, *, num_restarts: int, max_steps: int | None) -> ProcedureOut:
    """FPR-/TPR-Scan: p_scan = p̄_b = mean(y) for every row, exact one-value basis (closed form).

    ``p`` is unused (kept for a common signature). p̄_b is clamped into ``[eps, 1 − eps]``.
    """
    del p
    y = y.astype(jnp.float64)
    pbar = jnp.clip(mean_over(y, valid), params.eps, 1.0 - params.eps)
    basis = Basis("exact", t_bounds[0], t_bounds[1], pbar[None])
    p_rows = jnp.full(y.shape, pbar)
    Phi = features(p_rows, row_cell, problem.num_cells, basis)
    Y = outcome_counts(y, row_cell, problem.num_cells)
    r = scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                    num_restarts=num_restarts, max_steps=max_steps)
    return trivial_out(r, AlgState(p_rows, p_rows, p_rows, jnp.zeros_like(p_rows)))


def bias_procedure(key, y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params, *,
                   num_restarts: int, max_steps: int | None) -> ProcedureOut:
    """Plain Bias Scan with fixed expectations ``p`` (no clamping: ``eps`` is unused)."""
    del valid  # padding rows are dropped through their out-of-range row_cell
    Phi = features(p, row_cell, problem.num_cells, basis)
    Y = outcome_counts(y.astype(jnp.float64), row_cell, problem.num_cells)
    r = scan_arrays(key, problem, Phi, Y, basis, penalty=params.penalty,
                    num_restarts=num_restarts, max_steps=max_steps)
    return trivial_out(r, AlgState(p, p, p, jnp.zeros_like(p)))


def disjoint_steps(problem: Problem, valid, row_cell, k: int, search):
    """``k`` steps of ``search(valid_j, row_cell_j, problem_j) -> out`` (an output with ``mask``,
    ``listed`` and ``score``), each on the rows no earlier find holds: ``problem_j`` counts only
    those rows in its cells, and a find's rows (score > 0) leave ``valid`` and move to the empty
    cell ``num_cells``. Returns ``(outs, valids)``: the stacked outputs and the rows each step
    scanned (``(k, N)`` bool)."""
    nc = problem.num_cells

    def body(carry, _):
        valid_j, rc_j = carry
        n_cells = jax.ops.segment_sum(valid_j.astype(jnp.float64), rc_j, num_segments=nc)
        out = search(valid_j, rc_j, dataclasses.replace(problem, n_cells=n_cells))
        in_s = (cell_mask(problem, out.mask, out.listed)[jnp.minimum(rc_j, nc - 1)] & valid_j
                & (out.score > 0))
        return (valid_j & ~in_s, jnp.where(in_s, nc, rc_j)), (out, valid_j)

    _, (outs, valids) = jax.lax.scan(body, (valid, row_cell), None, length=k)
    return outs, valids
