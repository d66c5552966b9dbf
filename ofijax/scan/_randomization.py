"""Search-aware randomization tests for Bias Scan, FPR-/TPR-Scan and IJDI-Scan.

Each replicate draws null data and reruns the **whole** procedure (the multi-start scan and, for
IJDI-Scan, Algorithm 1 with its edge-case loop), so the null distribution is that of the *maximum*
score the search finds, and the p-value accounts for the search:

    p = (1 + #{r : F*_r ≥ F}) / (R + 1).

That p-value is a **Monte Carlo estimate**: it is valid (P(p ≤ α) ≤ α under the null) for any R,
and it estimates the exact randomization p-value p_∞ = P(F* ≥ F), the limit as R → ∞. The count
k = #{F*_r ≥ F} is Binomial(R, p_∞), so :func:`p_value_interval` (Clopper-Pearson on k of R)
brackets p_∞; two engines that draw replicates differently from the same null law (rows: one
Bernoulli per row; cell statistics: one Binomial per cell) estimate the same p_∞, each interval
covering it with probability ≥ 95%: their p-values differ by Monte Carlo error (overlapping
intervals), not draw for draw.

Null draws:

* ``"bernoulli"`` (default, the parametric bootstrap of Zhang & Neill): ``y*_i ~ Bernoulli(p_i)``
  from the null rates of the observed run (Bias Scan: the expectations; FPR/TPR: the overall rate;
  IJDI: the initial, clipped p_scan); each replicate recomputes p̄_b from y*.
* ``"permutation"``: the rows of the attribute table are permuted relative to (y, p) (exact when
  rows are exchangeable under the null).

Replicates are a batch: ``vmap`` over replicate keys, in chunks of ``replicate_chunk`` (to bound
memory), sharded over the replicate axis when several JAX devices exist. On one CPU device two
procedures run serially in one thread per core instead (a vmapped batch costs more per replicate
there): IJDI-Scan's Algorithm 1 (:func:`ijdi_null_scores`) and, unless ``replicate_chunk`` is
given, plain Bias Scan's Bernoulli replicates (:func:`serial_bias_null_scores`). Progress goes to stderr
through :mod:`ofijax._progress` (on when stderr is a terminal or ``OFIJAX_PROGRESS=1``; runs under
2 s stay silent).

Layering: plain Bias Scan and FPR-/TPR-Scan replicates run the generic procedures of
:mod:`._procedures`; only IJDI-Scan replicates run Algorithm 1 (:mod:`._alg1`), whose edge-case
loop is batched across replicates by refilling slots (:func:`ijdi_null_scores`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._jaxcache import aot_jit
from .._progress import Progress
from .._validation import device_array
from ._alg1 import algorithm1, check_edges, initial_state, rescan_key
from ._basis import MAX_FEATURES, Basis, features
from ._checks import DEFAULT_Q_BOUNDS
from ._engine import (
    SEARCH,
    SMALL_CELLS,
    Problem,
    Programs,
    cell_bucket,
    cell_mask,
    outcome_counts,
    pad_problem_cells,
    scan_arrays,
    search_args,
)
from ._procedures import (
    CODE_ACCEPT,
    CODE_NONE,
    AlgState,
    Params,
    bias_procedure,
    clamped_scan,
    make_params,
    no_subgroup_if,
    rate_procedure,
    uniform_outcomes,
)

__all__ = [
    "NullSpec",
    "NULL_KINDS",
    "RandomizationResult",
    "check_randomization_args",
    "null_scores",
    "null_draw",
    "procedure",
    "p_value",
    "p_value_interval",
    "bias_scan_null_scores",
    "serial_bias_null_scores",
    "replicate_key",
    "chunked_null_scores",
    "ijdi_null_scores",
    "Padded",
    "pad_problem",
    "PROCEDURE",
]

NULL_KINDS = ("bernoulli", "permutation")
#: Relative tolerance for "F* ≥ F" (scores of the same subgroup computed by different code paths
#: agree to ~1e-12; ties at exactly 0 count as ≥).
TIE_RTOL = 1e-9
#: Memory budget (bytes) for the per-chunk batch when ``replicate_chunk`` is None.
_CHUNK_BUDGET = 256 * 2**20
#: (N,) float64 vectors a replicate holds besides its features (:func:`_auto_chunk`'s estimate).
_ROW_VECTORS = 8
#: Most replicates a batch holds when ``replicate_chunk`` is None (IJDI-Scan's replicates carry
#: Algorithm 1's state as well, so they batch half as many).
_MAX_CHUNK = 512
_MAX_CHUNK_IJDI = 256
#: The constant folded into the scan's key to derive the replicates' key stream (any fixed value
#: would do; changing it changes every randomization test's draws).
REPLICATE_STREAM = 0x5EED
#: Most worker threads :func:`ijdi_null_scores` uses on a CPU backend.
_MAX_CPU_WORKERS = 8


class NullSpec(NamedTuple):
    """Static description of the procedure a replicate reruns (hashable: it keys the jit cache)."""

    kind: str  # "bias" | "rate" | "ijdi"
    null: str  # "bernoulli" | "permutation"
    num_restarts: int
    max_steps: int | None
    history: int = 1  # static length of Algorithm 1's history arrays (cap + 1 at least)
    t_bounds: tuple[float, float] = (0.0, math.log(DEFAULT_Q_BOUNDS[1]))


class RandomizationResult(NamedTuple):
    """p-value and null scores of a randomization test."""

    p_value: float
    null_scores: np.ndarray  # (R,) float64
    num_unconverged: int  # replicates whose procedure hit a cap
    p_value_interval: tuple = (math.nan, math.nan)  # 95% Clopper-Pearson bounds of p_∞


def replicate_key(key: jax.Array) -> jax.Array:
    """The key replicates are drawn from, derived from the scan's key (the observed run uses
    ``key`` itself, so its result does not depend on whether a test is run)."""
    return jax.random.fold_in(key, REPLICATE_STREAM)


# A kept executable (``aot_jit``); under a trace, the plain jitted function.
replicate_key = aot_jit(replicate_key, name="ofijax.scan.replicate_key")


def chunked_null_scores(key: jax.Array, num_samples: int, chunk: int, run_chunk: Any
                        ) -> tuple[np.ndarray, int]:
    """``(T* (R,), #replicates whose procedure hit a cap)`` of R = ``num_samples`` replicates run
    ``chunk`` at a time: replicate r uses ``jax.random.split(replicate_key(key), R)[r]`` whatever
    the chunking (the last chunk is padded with copies of the last key and cut off after).
    ``run_chunk(keys) -> (scores, converged)`` runs one chunk of keys."""
    chunks = _CHUNK_KEYS(key, num_samples, chunk, True)
    scores, conv = [], []
    bar = Progress(num_samples, "randomization test", unit="replicates")
    for i, keys in enumerate(chunks):
        s, c = run_chunk(keys)
        scores.append(np.asarray(s))
        conv.append(np.asarray(c))
        bar.update(min(chunk, num_samples - i * chunk))
    bar.close()
    s = np.concatenate(scores)[:num_samples]
    c = np.concatenate(conv)[:num_samples]
    return np.asarray(s, np.float64), int(np.sum(~c))


def _chunk_keys(key: jax.Array, num_samples: int, chunk: int, derive: bool
                ) -> tuple[jax.Array, ...]:
    """``jax.random.split(k, num_samples)`` in chunks of ``chunk`` keys, the last padded with
    copies of the last key; ``k`` = ``replicate_key(key)`` with ``derive``, else ``key``."""
    keys = jax.random.split(replicate_key(key) if derive else key, num_samples)
    n_chunks = math.ceil(num_samples / chunk)
    pad = n_chunks * chunk - num_samples
    if pad:
        keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], pad, axis=0)])
    return tuple(keys[i * chunk:(i + 1) * chunk] for i in range(n_chunks))


# One kept executable (``aot_jit``) instead of the eager split, pad and slices (each a program
# compiled in every process).
_CHUNK_KEYS = aot_jit(_chunk_keys, name="ofijax.scan.chunk_keys", static_argnums=(1, 2, 3))


def check_randomization_args(num_replicates: Any, null: Any, replicate_chunk: Any) -> int:
    """Validate the three options; return ``num_replicates`` as int."""
    if isinstance(num_replicates, bool) or not isinstance(num_replicates, int | np.integer) or (
        num_replicates < 0
    ):
        raise ValueError(
            f"num_replicates: must be an integer ≥ 0 (0 = no randomization test); "
            f"got {num_replicates!r}."
        )
    if null not in NULL_KINDS:
        raise ValueError(f"null: must be one of 'bernoulli', 'permutation'; got {null!r}.")
    if replicate_chunk is not None and (
        isinstance(replicate_chunk, bool) or not isinstance(replicate_chunk, int | np.integer)
        or replicate_chunk < 1
    ):
        raise ValueError(
            f"replicate_chunk: must be an integer ≥ 1 or None (automatic); got {replicate_chunk!r}."
        )
    return int(num_replicates)


def p_value(observed: float, null: np.ndarray) -> float:
    """``(1 + #{F* ≥ F}) / (R + 1)``; NaN when there are no replicates.

    Examples:
      >>> p_value(5.0, np.array([1.0, 6.0, 5.0, 0.0]))
      0.6
    """
    null = np.asarray(null, dtype=np.float64)
    if null.size == 0:
        return math.nan
    tol = TIE_RTOL * max(1.0, abs(observed))
    return float((1 + np.sum(null >= observed - tol)) / (null.size + 1))


def p_value_interval(p: float, num_samples: int, confidence: float = 0.95
                     ) -> tuple[float, float]:
    r"""Clopper-Pearson interval for the exact randomization p-value of a Monte Carlo p-value.

    ``p = (1 + k) / (R + 1)`` (:func:`p_value`) with ``k = #{F*_r ≥ F}`` of ``R = num_samples``
    replicates; k ~ Binomial(R, p_∞) where p_∞ = P(F* ≥ F) is the exact randomization p-value
    (the limit as R → ∞). The two-sided interval at ``confidence`` (default 95%) is

    .. math:: [\,B^{-1}(\tfrac{α}{2}; k, R - k + 1),\ B^{-1}(1 - \tfrac{α}{2}; k + 1, R - k)\,]

    (α = 1 − confidence; lower bound 0 at k = 0, upper bound 1 at k = R), which covers p_∞ with
    probability ≥ ``confidence`` whatever p_∞. The estimate ``p`` itself lies inside. ``(NaN,
    NaN)`` when there is no test (``p`` NaN or ``num_samples`` 0).

    Examples:
      >>> lo, hi = p_value_interval(0.6, 4)          # k = 2 of R = 4
      >>> round(lo, 4), round(hi, 4)
      (0.0676, 0.9324)
      >>> [round(b, 4) for b in p_value_interval(1 / 21, 20)]   # k = 0 of 20
      [0.0, 0.1684]
    """
    from scipy.special import betaincinv

    r = int(num_samples)
    if r <= 0 or p is None or math.isnan(float(p)):
        return (math.nan, math.nan)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: must be in (0, 1); got {confidence!r}.")
    k = int(round(float(p) * (r + 1))) - 1
    if not 0 <= k <= r or abs((1 + k) / (r + 1) - float(p)) > 1e-9:
        raise ValueError(
            f"p: {p!r} is not a randomization p-value (1 + k) / (R + 1) of R = {r} replicates; "
            "pass the p_value and the number of replicates of the same test.")
    a = 1.0 - confidence
    lo = 0.0 if k == 0 else float(betaincinv(k, r - k + 1, a / 2))
    hi = 1.0 if k == r else float(betaincinv(k + 1, r - k, 1 - a / 2))
    return (lo, hi)


class Padded(NamedTuple):
    """Rows and cells padded to bucketed sizes, so data sets of similar size share compilations.

    Padding rows have ``valid`` False, y = p = 0 and ``row_cell = problem.num_cells`` (out of
    range, so features and counts drop them); padding cells are empty (:func:`~._plan.pad_cells`).
    """

    problem: Problem  # cells padded; problem.row_cell = the real rows' cells
    y: jax.Array
    p: jax.Array
    valid: jax.Array
    row_cell: jax.Array
    n: int  # real rows


def pad_problem(problem: Problem, y, p) -> Padded:
    """Pad ``problem``'s cells and the rows ``y``, ``p`` to :func:`cell_bucket` sizes."""
    n = int(np.shape(y)[0])
    padded = pad_problem_cells(problem, cell_bucket(problem.num_cells))
    yp, pp, rc, valid = _pad_rows(device_array(y, np.float64), device_array(p, np.float64),
                                  problem.row_cell, cell_bucket(n) - n, padded.num_cells)
    # The padded problem carries the padded row_cell too: an unpadded one would make every jitted
    # procedure retrace for each new row count N (its shape is part of the trace signature).
    padded = dataclasses.replace(padded, row_cell=rc)
    return Padded(padded, yp, pp, valid, rc, n)


def _pad_rows(y, p, row_cell, n_pad: int, num_cells: int):
    f = lambda a: jnp.concatenate([a, jnp.zeros(n_pad, a.dtype)])  # noqa: E731
    rc = jnp.concatenate([row_cell, jnp.full(n_pad, num_cells, jnp.int32)])
    valid = jnp.arange(y.shape[0] + n_pad) < y.shape[0]
    return f(y), f(p), rc, valid


# One kept executable (``aot_jit``) instead of ~8 eager ops compiled in every process.
_pad_rows = aot_jit(_pad_rows, name="ofijax.scan.pad_rows", static_argnums=(3, 4))


def procedure(spec: NullSpec, key, y, p, valid, row_cell, problem, basis, params):
    """Run the procedure ``spec.kind`` names ("bias", "rate" or "ijdi") once on padded rows.

    FPR-/TPR-/IJDI-Scan of uniform predictions (every scanned row's outcome the same, all 0 or
    all 1) detect nothing: no subgroup's rate differs from the rest's, so the result is "no
    subgroup" with score 0 (:func:`no_subgroup_if`), not the artefact of the clamped null rate
    (p̄_b = 1 − ε scored every row at ~5e-5 with q = 1e6)."""
    if spec.kind == "ijdi":
        return no_subgroup_if(uniform_outcomes(y, valid), algorithm1(
            key, y, p, valid, row_cell, problem, basis, params, history=spec.history,
            num_restarts=spec.num_restarts, max_steps=spec.max_steps))
    if spec.kind == "rate":
        return no_subgroup_if(uniform_outcomes(y, valid), rate_procedure(
            key, y, p, valid, row_cell, problem, spec.t_bounds, params,
            num_restarts=spec.num_restarts, max_steps=spec.max_steps))
    return bias_procedure(key, y, p, valid, row_cell, problem, basis, params,
                          num_restarts=spec.num_restarts, max_steps=spec.max_steps)




def null_draw(null: str, key, y, p_null, valid, row_cell):
    """One null data set: ``(y*, row_cell*)``.

    ``"bernoulli"``: y*_i ~ Bernoulli(p_null_i) (0 on padding rows), cells unchanged.
    ``"permutation"``: the real rows' cells are permuted (padding rows stay last and unchanged).
    """
    n = y.shape[0]
    if null == "bernoulli":
        u = jax.random.uniform(key, (n,), dtype=p_null.dtype)
        return ((u < p_null) & valid).astype(y.dtype), row_cell
    u = jax.random.uniform(key, (n,), dtype=jnp.float64)
    perm = jnp.argsort(jnp.where(valid, u, 2.0))
    return y, row_cell[perm]


def _replicates(keys, y, p, p_null, valid, row_cell, problem: Problem, basis: Basis | None,
                params: Params, spec: NullSpec):
    """Scores and convergence flags of one chunk of replicates (vmapped over ``keys``)."""

    def one(k):
        k_null, k_scan = jax.random.split(k)
        y_r, rc = null_draw(spec.null, k_null, y, p_null, valid, row_cell)
        out = procedure(spec, k_scan, y_r, p, valid, rc, problem, basis, params)
        return out.score, out.converged

    return jax.vmap(one)(keys)


#: :func:`procedure` on the observed data, and :func:`_replicates`: each compiled with the
#: default or (small tables, few replicates) the fast-compiling options, executables kept on disk.
PROCEDURE = Programs(procedure, "ofijax.scan.procedure", static_argnums=(0,))
_REPLICATES = Programs(_replicates, "ofijax.scan.replicates", static_argnums=(9,))


class _Slots(NamedTuple):
    """B replicate slots of Algorithm 1 in flight (see :func:`ijdi_null_scores`)."""

    key: jax.Array  # (B, 2) uint32 key data of the slot's replicate
    y: jax.Array  # (B, N) null outcomes
    rc: jax.Array  # (B, N) null cells
    st: AlgState  # (B, N) each
    pbar_b: jax.Array  # (B,)
    pbar0: jax.Array  # (B,)
    it: jax.Array  # (B,) adjustments so far


def _slot_step(slots: _Slots, new_keys, refill, y_obs, p, p_null, valid, row_cell,
               problem: Problem, basis: Basis, params: Params, spec: NullSpec):
    """One scan (plus edge check and update) for every slot; refilled slots start a replicate.

    A replicate in a slot runs exactly Algorithm 1 (:func:`~._alg1.algorithm1`): same null draw,
    same scan keys (:func:`~._alg1.rescan_key` of the slot's scan index), same checks and cap. Returns ``(slots, finished, score,
    converged)``.
    """

    def one(kd, y, rc, st, pbar_b, pbar0, it, nk, fresh):
        kd = jnp.where(fresh, nk, kd)
        k_null, k_scan = jax.random.split(jax.random.wrap_key_data(kd))
        y_new, rc_new = null_draw(spec.null, k_null, y_obs, p_null, valid, row_cell)
        st_new, pb_new, p0_new = initial_state(y_new, p, params.lam, valid)
        sel = lambda a, b: jnp.where(fresh, a, b)  # noqa: E731
        y, rc = sel(y_new, y), sel(rc_new, rc)
        st = jax.tree.map(sel, st_new, st)
        pbar_b, pbar0, it = sel(pb_new, pbar_b), sel(p0_new, pbar0), sel(0, it)
        Y = outcome_counts(y, rc, problem.num_cells)
        r = clamped_scan(rescan_key(k_scan, it), problem, st.p_scan, Y, rc, basis, params,
                         spec.num_restarts, spec.max_steps)
        in_s = cell_mask(problem, r.mask, r.listed)[rc] & valid
        code, new, _ = check_edges(st, in_s, r.score, p, pbar_b, pbar0, params.lam,
                                   params.strict, valid)
        ok = (code == CODE_ACCEPT) | (code == CODE_NONE)
        finished = ok | (it >= params.cap)
        st = jax.tree.map(lambda a, b: jnp.where(finished, a, b), st, new)
        score = jnp.where(code == CODE_NONE, 0.0, r.score)
        return (kd, y, rc, st, pbar_b, pbar0, it + 1), finished, score, ok & r.converged

    out, finished, score, conv = jax.vmap(one)(*slots, new_keys, refill)
    return _Slots(*out), finished, score, conv


#: :func:`_slot_step`, default or fast-compiling options (:class:`~._programs.Programs`): the
#: fast-compiling one saves compile time at about the same run time (notes: "replicates").
_SLOT_STEP = Programs(_slot_step, "ofijax.scan.slot_step", static_argnums=(11,))


def ijdi_null_scores(keys, spec: NullSpec, data: Padded, p_null, basis, params, chunk, bar,
                     workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Null scores of Algorithm 1 with ``chunk`` slots refilled as replicates finish.

    Under ``vmap`` a batch of whole Algorithm-1 runs would rescan every replicate as often as the
    slowest one needs; refilling slots makes the work the sum, not the maximum, of the rescans.
    ``workers`` > 1 runs that many slot loops in threads (each with ``chunk`` slots), drawing
    replicates from one shared queue: on CPU, where a vmapped scan costs as much per replicate as
    a serial one (its while loop runs as long as the slowest lane of the batch), serial slots on
    every core are the fastest layout. Replicate r's result depends only on ``keys[r]``: it does
    not depend on ``workers``, nor on ``chunk`` beyond float64 round-off (a vmapped batch sums in
    another order than one slot: ~1e-14 relative, far inside :data:`TIE_RTOL`).
    """
    r_total = keys.shape[0]
    kd_all = np.asarray(jax.random.key_data(keys))
    scores = np.full(r_total, np.nan)
    conv = np.zeros(r_total, bool)
    lock = threading.Lock()
    counter = iter(range(r_total))

    def next_index() -> int:
        with lock:
            return next(counter, -1)

    step = _SLOT_STEP.pick(data.problem.num_cells, r_total)

    def loop() -> None:
        with jax.enable_x64(True):  # thread-local: set again in each worker thread
            n = data.y.shape[0]
            z = jnp.zeros((chunk, n), jnp.float64)
            slots = _Slots(
                jnp.asarray(np.repeat(kd_all[:1], chunk, axis=0)), z,
                jnp.zeros((chunk, n), jnp.int32), AlgState(z, z, z, z),
                jnp.zeros(chunk), jnp.zeros(chunk), jnp.zeros(chunk, jnp.int32))
            slots = jax.tree.map(_shard, slots)
            rid = np.full(chunk, -1)
            need = np.ones(chunk, bool)
            while True:
                new_kd = np.repeat(kd_all[:1], chunk, axis=0)
                for j in np.flatnonzero(need):
                    rid[j] = next_index()
                    if rid[j] >= 0:
                        new_kd[j] = kd_all[rid[j]]
                if not (rid >= 0).any():
                    return
                slots, fin, sc, cv = step(
                    slots, _shard(jnp.asarray(new_kd)), _shard(jnp.asarray(need)), data.y,
                    data.p, p_null, data.valid, data.row_cell, data.problem, basis, params, spec)
                fin, sc, cv = np.asarray(fin), np.asarray(sc), np.asarray(cv)
                need = fin | (rid < 0)
                hit = fin & (rid >= 0)
                scores[rid[hit]] = sc[hit]
                conv[rid[hit]] = cv[hit]
                with lock:
                    bar.update(int(hit.sum()))
                rid[hit] = -1

    _run_threads(loop, max(1, min(int(workers), r_total)))
    return scores, conv


def _bernoulli_counts(kd, y, p_null, valid, row_cell, num_cells: int):
    """Scan key data and outcome counts ``Y*`` of one Bernoulli replicate (key data ``kd``)."""
    k_null, k_scan = jax.random.split(jax.random.wrap_key_data(kd))
    y_r, rc = null_draw("bernoulli", k_null, y, p_null, valid, row_cell)
    return jax.random.key_data(k_scan), outcome_counts(y_r, rc, num_cells)


def _fixed_features(p, row_cell, num_cells: int, basis: Basis):
    """The cell features every Bernoulli replicate of Bias Scan shares (p and cells are fixed)."""
    return features(p, row_cell, num_cells, basis)


# Kept executables (``aot_jit``): a cache-warm process runs a randomization test's set-up without
# compiling (``num_cells`` static, passed by position).
_bernoulli_counts = aot_jit(_bernoulli_counts, name="ofijax.scan.bernoulli_counts",
                            static_argnums=(5,))
_fixed_features = aot_jit(_fixed_features, name="ofijax.scan.fixed_features", static_argnums=(2,))


#: Bias Scan's Bernoulli replicates on CPU run the observed scan's fast-compiling program for up to
#: this many replicates on small tables (no compile), else the default-option program (a first
#: call compiles it, and it runs each replicate faster; ``experiments/bench_scan.py
#: --cold-only``; notes: "replicates").
FAST_BIAS_REPLICATES = 128


def serial_bias_null_scores(keys, spec: NullSpec, data: Padded, p_null, basis: Basis,
                            params: Params, bar, workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Bias Scan Bernoulli replicates one at a time, in ``workers`` threads (the CPU layout).

    Replicate r is exactly :func:`procedure` ("bias") on its null draw: y* from ``keys[r]``'s
    null key, the shared cell features Φ (p and the cells do not change under the Bernoulli
    null, so Φ is computed once, not per replicate), and one top-level multi-start scan with the
    scan key (no batch compilation). With at most :data:`FAST_BIAS_REPLICATES` replicates on a
    small table (``C ≤ SMALL_CELLS``) that is the observed scan's own program
    (:data:`~._programs.SEARCH`'s fast-compiling one, loaded or compiled already), so the test
    compiles no search; otherwise it is ``scan_arrays(throughput=True)`` (default options, three
    solves a step), which a first call compiles and which runs each replicate faster. On a CPU
    backend a ``vmap``-ed batch costs more per replicate than this (its search loop runs as long
    as the slowest lane of the whole batch, and every lane costs its share of each step; notes:
    "replicates").
    Scores equal the batched ones to float64 round-off (other summation orders).
    """
    r_total = keys.shape[0]
    kd_all = np.asarray(jax.random.key_data(keys))
    impl = jax.random.key_impl(keys)
    scores = np.full(r_total, np.nan)
    conv = np.zeros(r_total, bool)
    lock = threading.Lock()
    counter = iter(range(r_total))
    nc = data.problem.num_cells
    with jax.enable_x64(True):
        Phi = _fixed_features(data.p, data.row_cell, nc, basis)
    if nc <= SMALL_CELLS and r_total <= FAST_BIAS_REPLICATES:
        # bias_scan's observed search: same arguments, same program, same executable
        cells, steps = search_args(data.problem, spec.max_steps)
        penalty = float(params.penalty)

        def search(key, Y):
            return SEARCH.small(key, cells, Phi, Y, basis, penalty, steps, spec.num_restarts,
                                True)[0]
    else:  # the default options and three solves a step (scan_arrays' throughput program)
        def search(key, Y):
            return scan_arrays(key, data.problem, Phi, Y, basis, penalty=params.penalty,
                               num_restarts=spec.num_restarts, max_steps=spec.max_steps,
                               throughput=True)

    def loop() -> None:
        with jax.enable_x64(True):  # thread-local: set again in each worker thread
            while True:
                with lock:
                    r = next(counter, -1)
                if r < 0:
                    return
                kd, Y = _bernoulli_counts(kd_all[r], data.y, p_null, data.valid, data.row_cell,
                                          nc)
                out = search(jax.random.wrap_key_data(kd, impl=impl), Y)
                sc = float(out.score)
                scores[r] = sc if sc > 0 else 0.0
                conv[r] = bool(out.converged)
                with lock:
                    bar.update(1)

    _run_threads(loop, max(1, min(int(workers), r_total)))
    return scores, conv


def _run_threads(loop, workers: int) -> None:
    """Run ``loop`` in ``workers`` threads (in this thread when 1); re-raise the first error."""
    if workers == 1:
        loop()
        return
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            loop()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _cpu_workers() -> int:
    """Worker threads for Algorithm-1 replicates on a single CPU device (1 elsewhere)."""
    if jax.default_backend() != "cpu" or jax.device_count() > 1:
        return 1
    return max(1, min(os.cpu_count() or 1, _MAX_CPU_WORKERS))


def _auto_chunk(num_replicates: int, n_rows: int, num_features: int, spec: NullSpec) -> int:
    # Per replicate: a few (N,) vectors plus, when features are recomputed per replicate,
    # the (rows-chunk, K) temporary of features().
    batched_features = spec.kind == "ijdi" or spec.null == "permutation"
    width = _ROW_VECTORS + (min(num_features, MAX_FEATURES) if batched_features else 0)
    per = np.dtype(np.float64).itemsize * n_rows * width
    chunk = max(1, _CHUNK_BUDGET // max(per, 1))
    return int(min(num_replicates, chunk, _MAX_CHUNK_IJDI if spec.kind == "ijdi" else _MAX_CHUNK))


def _shard(keys: jax.Array) -> jax.Array:
    devices = jax.devices()
    if len(devices) <= 1 or keys.shape[0] % len(devices):
        return keys
    mesh = jax.sharding.Mesh(np.asarray(devices), ("replicates",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("replicates"))
    return jax.device_put(keys, sharding)


def null_scores(key, spec: NullSpec, data: Padded, p_null, *, num_replicates: int,
                basis: Basis | None, params: Params, replicate_chunk: int | None = None
                ) -> tuple[np.ndarray, int]:
    """Run ``num_replicates`` null replicates of ``spec``'s procedure; returns (scores, #unconverged).

    Must be called inside ``jax.enable_x64(True)``. ``data`` holds the (padded) rows and cells;
    ``p_null`` (padded like ``data.y``) the Bernoulli null rates. Replicate r uses
    ``jax.random.split(key, num_replicates)[r]`` whatever the chunk size, so results do not depend
    on ``replicate_chunk`` or on the number of devices.
    """
    if num_replicates == 0:
        return np.zeros(0), 0
    k_feat = 1 if basis is None else basis.num_features
    workers = 1
    # CPU, one device: Bias Scan's Bernoulli replicates run serially, one thread per core
    # (:func:`serial_bias_null_scores`); an explicit replicate_chunk asks for vmapped batches.
    serial = (spec.kind == "bias" and spec.null == "bernoulli" and replicate_chunk is None
              and jax.default_backend() == "cpu" and jax.device_count() == 1)
    if spec.kind == "ijdi" and replicate_chunk is None and _cpu_workers() > 1:
        # CPU: serial slots (chunk 1) on every core beat one vmapped batch (notes: "replicates")
        chunk, workers = 1, _cpu_workers()
    elif spec.kind == "ijdi" and replicate_chunk is None and jax.default_backend() == "cpu":
        chunk = jax.device_count()
    elif serial:
        chunk = 1
    else:
        chunk = replicate_chunk or _auto_chunk(num_replicates, int(data.y.shape[0]), k_feat,
                                               spec)
    ndev = jax.device_count()
    if ndev > 1 and chunk % ndev:
        chunk = ndev * math.ceil(chunk / ndev)
    bar = Progress(num_replicates, "randomization test", unit="replicates")
    if spec.kind == "ijdi" or serial:
        (keys,) = _CHUNK_KEYS(key, num_replicates, num_replicates, False)
    if spec.kind == "ijdi":
        s, c = ijdi_null_scores(keys, spec, data, p_null, basis, params, chunk, bar, workers)
    elif serial:
        s, c = serial_bias_null_scores(keys, spec, data, p_null, basis, params, bar,
                                       _cpu_workers())
    else:
        scores, conv = [], []
        run = _REPLICATES.pick(data.problem.num_cells, num_replicates)
        for i, ks in enumerate(_CHUNK_KEYS(key, num_replicates, chunk, False)):
            ks = _shard(ks)
            s, c = run(ks, data.y, data.p, p_null, data.valid, data.row_cell, data.problem,
                       basis, params, spec)
            scores.append(np.asarray(s))
            conv.append(np.asarray(c))
            bar.update(min(chunk, num_replicates - i * chunk))
        s = np.concatenate(scores)[:num_replicates]
        c = np.concatenate(conv)[:num_replicates]
    bar.close()
    return np.asarray(s, np.float64), int(np.sum(~np.asarray(c)))


def bias_scan_null_scores(key, problem: Problem, basis: Basis, observations, expectations, *,
                          penalty: float, num_restarts: int, max_steps: int | None,
                          num_replicates: int, null: str = "bernoulli",
                          replicate_chunk: int | None = None, observed_score: float
                          ) -> RandomizationResult:
    """Randomization test for plain Bias Scan (the hook :func:`~ofijax.scan.bias_scan` calls).

    Replicates redraw ``y* ~ Bernoulli(expectations)`` (or permute the attribute rows) and rerun the
    same multi-start scan (same basis, penalty, restarts) with replicate keys drawn from
    :func:`replicate_key` of ``key``. Must be called inside ``jax.enable_x64(True)``.
    """
    num_replicates = check_randomization_args(num_replicates, null, replicate_chunk)
    spec = NullSpec("bias", null, int(num_restarts), max_steps)
    params = make_params(penalty=float(penalty), eps=0.0)
    data = pad_problem(problem, observations, expectations)
    s, bad = null_scores(replicate_key(key), spec, data, data.p, num_replicates=num_replicates,
                         basis=basis, params=params, replicate_chunk=replicate_chunk)
    p = p_value(observed_score, s)
    return RandomizationResult(p, s, bad, p_value_interval(p, s.size))
