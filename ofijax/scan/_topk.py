"""Several subgroups, one after another, and their family-wise randomization test.

Top-k (``top_k=k`` on every scan): step 1 is the scan itself; step j + 1 rescans the data with the
rows of steps 1..j removed (as if they were not in the data: null rates, means and cell counts are
recomputed on the remaining rows), so the k subgroups are disjoint in rows. A step that finds
nothing (score 0) ends the list.

Family-wise p-values (single-step max statistic): each randomization replicate draws one null data
set and reruns the **whole** k-step procedure on it; its statistic is the largest of its k scores,
``T*_r = max_j F*_{r,j}``. Find j gets ``p_j = (1 + #{r: T*_r ≥ F_j}) / (R + 1)``, which bounds the
probability that *any* of the k finds scores that high under the null (family-wise error rate),
whatever k. ``p_1`` is at least the plain p-value of the first find.

Every function here is pure array code (called inside ``jax.enable_x64(True)``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._progress import Notice
from .._validation import is_tracer
from ._alg1 import CODE_ACCEPT, CODE_NONE, Alg1Out, AlgState
from ._basis import Basis, features
from ._engine import Programs, outcome_counts
from ._exhaustive import exhaustive_arrays
from ._procedures import disjoint_steps, mean_over, uniform_outcomes
from ._randomization import (
    NullSpec,
    Padded,
    chunked_null_scores,
    null_draw,
    procedure,
)

__all__ = ["StepSpec", "run_steps", "observed_steps", "steps_null_scores"]


class StepSpec(NamedTuple):
    """Static description of the k-step procedure (hashable: it keys the jit cache)."""

    null: NullSpec  # procedure kind, null model, restarts, step cap, history length, t bounds
    k: int  # number of steps (subgroups)
    search: str = "coordinate_ascent"  # or "exhaustive" (kinds "bias" and "rate")
    enum_num: int = 0  # exhaustive: number of subgroups
    enum_chunk: int = 0  # exhaustive: subgroups per chunk


def _exhaustive_out(y, p, rc, problem, basis, params, enum, spec: StepSpec, valid=None) -> Alg1Out:
    """Every subgroup scored (:func:`exhaustive_arrays`): Bias Scan with expectations ``p``, or
    (``spec.null.kind == "rate"``) FPR-/TPR-Scan with the null rate p̄_b = mean of ``y`` over the
    ``valid`` rows, clamped into [eps, 1 − eps], as :func:`~._procedures.rate_procedure` (uniform
    outcomes: no subgroup)."""
    uniform = jnp.asarray(False)
    if spec.null.kind == "rate":
        y = y.astype(jnp.float64)
        pbar = jnp.clip(mean_over(y, valid), params.eps, 1.0 - params.eps)
        basis = Basis("exact", spec.null.t_bounds[0], spec.null.t_bounds[1], pbar[None])
        p = jnp.full(y.shape, pbar)
        uniform = uniform_outcomes(y, valid)
    Phi = features(p, rc, problem.num_cells, basis)
    Y = outcome_counts(y, rc, problem.num_cells)
    mask, listed, score, t = exhaustive_arrays(problem, Phi, Y, basis, enum, params.penalty,
                                               num=spec.enum_num, chunk=spec.enum_chunk)
    pos = (score > 0) & ~uniform
    one = lambda x: x[None]  # noqa: E731
    code = jnp.where(pos, CODE_ACCEPT, CODE_NONE).astype(jnp.int32)
    true = jnp.asarray(True)
    state = AlgState(p, p, p, jnp.zeros_like(p))
    return Alg1Out(mask, listed, jnp.where(pos, score, 0.0), jnp.where(pos, t, 0.0), true,
                   jnp.asarray(1), state, one(code), one(jnp.where(uniform, 0.0, score)),
                   jnp.full(1, jnp.nan, score.dtype),
                   one(mask), one(listed), one(true))


def run_steps(spec: StepSpec, key, y, p, valid, row_cell, problem, basis, params, enum):
    """The k-step procedure; returns ``(outs, valids)``: the stacked :class:`Alg1Out` of each step
    and the rows each step scanned (``(k, N)`` bool)."""
    def search(valid_j, rc_j, prob_j):
        if spec.search == "exhaustive":
            return _exhaustive_out(y, p, rc_j, prob_j, basis, params, enum, spec, valid_j)
        return procedure(spec.null, key, y, p, valid_j, rc_j, prob_j, basis, params)

    return disjoint_steps(problem, valid, row_cell, spec.k, search)


#: :func:`run_steps` on the observed data (default or fast-compiling options, see
#: :class:`~._engine.Programs`).
_OBSERVED = Programs(run_steps, "ofijax.scan.observed_steps", static_argnums=(0,))


def _pick(programs: Programs, spec: StepSpec, num_cells: int, num_replicates: int = 0):
    """``programs.pick``, except that an exhaustive search keeps XLA's default options: its run
    (every subgroup scored) outweighs the compile, and the fast-compiling options ran it slower
    with no faster first call (``experiments/notes/scan_engine.md``, "exhaustive")."""
    if spec.search == "exhaustive":
        return programs.default
    return programs.pick(num_cells, num_replicates)


def observed_steps(spec: StepSpec, key, y, p, valid, row_cell, problem, basis, params, enum):
    """:func:`run_steps` on the observed data (jitted; a stderr notice if it runs > ~2 s)."""
    args = (spec, key, y, p, valid, row_cell, problem, basis, params, enum)
    run = _pick(_OBSERVED, spec, problem.num_cells)
    if is_tracer(y):
        return run(*args)
    what = f"{spec.search} search" + (f", top {spec.k}" if spec.k > 1 else "")
    with Notice(f"scan: {what} over {problem.num_cells:,} cells (a first call per shape "
                "compiles; cached on disk for later processes)"):
        return jax.block_until_ready(run(*args))


def _replicates(spec: StepSpec, keys, y, p, p_null, valid, row_cell, problem, basis, params,
                enum):
    def one(k):
        k_null, k_scan = jax.random.split(k)
        y_r, rc = null_draw(spec.null.null, k_null, y, p_null, valid, row_cell)
        outs, _ = run_steps(spec, k_scan, y_r, p, valid, rc, problem, basis, params, enum)
        return jnp.max(outs.score), jnp.all(outs.converged)

    return jax.vmap(one)(keys)


_REPLICATES = Programs(_replicates, "ofijax.scan.steps_replicates", static_argnums=(0,))


def steps_null_scores(key, spec: StepSpec, data: Padded, p_null, basis, params, enum, *,
                      num_samples: int, replicate_chunk: int | None = None
                      ) -> tuple[np.ndarray, int]:
    """``(T* (R,), #replicates that hit a cap)``: the max statistic of R null replicates.

    Replicate r uses ``jax.random.split(replicate_key(key), R)[r]`` whatever the chunking.
    """
    if num_samples == 0:
        return np.zeros(0), 0
    default = 16 if spec.search == "exhaustive" else (32 if spec.null.kind == "ijdi" else 64)
    chunk = int(min(num_samples, replicate_chunk or default))
    run = _pick(_REPLICATES, spec, data.problem.num_cells, num_samples)
    return chunked_null_scores(key, num_samples, chunk, lambda keys: run(
        spec, keys, data.y, data.p, p_null, data.valid, data.row_cell, data.problem, basis,
        params, enum))
