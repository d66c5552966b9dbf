"""IJDI-Scan with exhaustive scans: Algorithm 1 where every scan is the global optimum.

Owns the certified path of :func:`~ofijax.scan.ijdi_scan` (``search="exhaustive"``, and
``"auto"`` on small attribute spaces): Algorithm 1 of the IJDI paper (:mod:`._alg1`: the same
initial state, edge tests and adjustments, :func:`~._alg1.check_edges`) in which each scan scores
*every* subgroup (:func:`~._exhaustive.exhaustive_arrays`) with the null rates
``clip(p_scan, ε, 1 − ε)`` instead of running the multi-start coordinate ascent. Each scan then
returns the global optimum of its penalised score, so the whole procedure is deterministic (no
restarts, no key) and certified scan by scan; its top-k steps (earlier finds' rows removed, as
:func:`~._topk.run_steps`) and its randomization replicates (each reruns the whole k-step procedure
on null data, family-wise max statistic, as :func:`~._topk.steps_null_scores`) run the same search.

Work per scan: ``G·C·(K + M)`` multiply-adds for G subgroups, C cells, K Chebyshev features and M
attributes; :func:`ijdi_exhaustive_feasible` is ``search="auto"``'s budget. Everything here is pure
array code (called inside ``jax.enable_x64(True)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._jaxcache import aot_jit
from .._progress import Notice
from ._alg1 import algorithm1
from ._basis import Basis, features
from ._engine import Problem
from ._exhaustive import (
    EXHAUSTIVE_MAX_SUBGROUPS,
    Enumeration,
    exhaustive_arrays,
    num_subgroups,
)
from ._procedures import (
    Params,
    ProcedureOut,
    disjoint_steps,
    no_subgroup_if,
    uniform_outcomes,
)
from ._randomization import NullSpec, Padded, chunked_null_scores, null_draw

__all__ = [
    "IJDI_EXHAUSTIVE_MAX_WORK",
    "ijdi_exhaustive_feasible",
    "algorithm1_exhaustive",
    "ijdi_steps",
    "observed_ijdi_steps",
    "ijdi_steps_null_scores",
]

#: IJDI-Scan's ``search="auto"`` enumerates when one scan's work ``G·C·(K + M)`` is at most this:
#: COMPAS's five IJDI attributes (11,907 subgroups × 112 padded cells × 49: 6.5e7) with room,
#: where the exhaustive scans and their replicates cost what coordinate ascent's do (measured in
#: ``experiments/notes/scans.md``).
IJDI_EXHAUSTIVE_MAX_WORK = 4e8


def ijdi_exhaustive_feasible(n_values, num_cells: int, num_features: int) -> bool:
    """Whether IJDI-Scan's ``search="auto"`` enumerates: ≤ 1e6 subgroups and one scan's
    ``G·C·(K + M)`` ≤ :data:`IJDI_EXHAUSTIVE_MAX_WORK`."""
    g = num_subgroups(n_values)
    m = len(np.asarray(n_values))
    return (g <= EXHAUSTIVE_MAX_SUBGROUPS
            and g * num_cells * (num_features + m) <= IJDI_EXHAUSTIVE_MAX_WORK)


def algorithm1_exhaustive(y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params,
                          enum: Enumeration, *, history: int, num: int, chunk: int
                          ) -> ProcedureOut:
    """Algorithm 1 (:func:`~._alg1.algorithm1`) with every scan exhaustive; pure, vmappable.

    The loop, its stopping rule (a scan scoring ≤ 0, a subgroup passing both edge tests, or
    ``params.cap`` adjustments) and its history arrays are :func:`~._alg1.algorithm1`'s (called
    with this ``scan``); only the scan differs: every one of the ``num`` subgroups is scored with
    null rates ``clip(p_scan, eps, 1 − eps)`` and the best kept (ties: the lowest enumeration
    index). Uniform
    outcomes (every valid row's the same) give "no subgroup", as :func:`~._randomization.procedure`
    does for the coordinate-ascent path.
    """
    true = jnp.asarray(True)

    def scan(index, p_scan, Y):
        del index  # deterministic: no key, no restarts
        q = jnp.clip(p_scan, params.eps, 1.0 - params.eps)
        Phi = features(q, row_cell, problem.num_cells, basis)
        mask, listed, score, t = exhaustive_arrays(problem, Phi, Y, basis, enum, params.penalty,
                                                   num=num, chunk=chunk)
        return mask, listed, score, t, true

    out = algorithm1(None, y, p, valid, row_cell, problem, basis, params, history=history,
                     num_restarts=0, max_steps=None, scan=scan)
    return no_subgroup_if(uniform_outcomes(y, valid), out)


def ijdi_steps(y, p, valid, row_cell, problem: Problem, basis: Basis, params: Params,
               enum: Enumeration, k: int, history: int, num: int, chunk: int):
    """``k`` steps of :func:`algorithm1_exhaustive`, each with the earlier finds' rows removed
    (as :func:`~._topk.run_steps`): ``(outs, valids)``, the stacked outputs and the rows each
    step scanned (``(k, N)`` bool)."""
    def search(valid_j, rc_j, prob_j):
        return algorithm1_exhaustive(y, p, valid_j, rc_j, prob_j, basis, params, enum,
                                     history=history, num=num, chunk=chunk)

    return disjoint_steps(problem, valid, row_cell, k, search)


_OBSERVED = aot_jit(ijdi_steps, name="ofijax.scan.ijdi_exhaustive_steps",
                    static_argnums=(8, 9, 10, 11))


def observed_ijdi_steps(data: Padded, basis: Basis, params: Params, enum: Enumeration, *, k: int,
                        history: int, num: int, chunk: int):
    """:func:`ijdi_steps` on the observed data (one program; a stderr notice if it runs > ~2 s)."""
    what = "exhaustive IJDI search" + (f", top {k}" if k > 1 else "")
    with Notice(f"scan: {what} over {data.problem.num_cells:,} cells and {num:,} subgroups (a "
                "first call per shape compiles; cached on disk for later processes)"):
        return jax.block_until_ready(_OBSERVED(
            data.y, data.p, data.valid, data.row_cell, data.problem, basis, params, enum, k,
            history, num, chunk))


def _replicates(keys, y, p, p_null, valid, row_cell, problem, basis, params, enum, null, k,
                history, num, chunk):
    def one(key):
        k_null, _ = jax.random.split(key)  # the split of every replicate engine (_topk)
        y_r, rc = null_draw(null, k_null, y, p_null, valid, row_cell)
        outs, _ = ijdi_steps(y_r, p, valid, rc, problem, basis, params, enum, k, history, num,
                             chunk)
        return jnp.max(outs.score), jnp.all(outs.converged)

    return jax.vmap(one)(keys)


_REPLICATES = aot_jit(_replicates, name="ofijax.scan.ijdi_exhaustive_replicates",
                      static_argnums=(10, 11, 12, 13, 14))

#: Replicates per vmapped batch (each holds the ``(chunk, C, M)`` temporaries of the scan).
_REPLICATE_CHUNK = 16


def ijdi_steps_null_scores(key, spec: NullSpec, data: Padded, p_null, basis: Basis,
                           params: Params, enum: Enumeration, *, k: int, num: int, chunk: int,
                           num_samples: int, replicate_chunk: int | None = None
                           ) -> tuple[np.ndarray, int]:
    """``(T* (R,), #replicates that hit the cap max_adjustments)``: the max statistic over the k
    steps of R null replicates (``spec.null``: Bernoulli or permutation draws). Replicate r uses
    ``jax.random.split(replicate_key(key), R)[r]`` whatever the chunking."""
    if num_samples == 0:
        return np.zeros(0), 0
    size = int(min(num_samples, replicate_chunk or _REPLICATE_CHUNK))
    return chunked_null_scores(key, num_samples, size, lambda keys: _REPLICATES(
        keys, data.y, data.p, p_null, data.valid, data.row_cell, data.problem, basis, params,
        enum, spec.null, k, spec.history, num, chunk))
