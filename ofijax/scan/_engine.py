"""The Bias Scan engine: pure, jittable functions on cell arrays.

This module is the internal interface that FPR-/TPR-/IJDI-Scan and the randomization tests build on.
It is stable; everything here runs on arrays and needs float64 (wrap calls in
``with jax.enable_x64(True):``; the public entry points in :mod:`ofijax.scan` do that).

Data model
----------
Rows are compressed once into the occupied *cells* of the attribute table (:class:`Problem`). All
per-row information the scan needs is linear in the rows and aggregated per cell:

* ``Phi = features(p_rows, problem.row_cell, problem.num_cells, basis)``: ``(C, K)`` basis
  features such that ``Σ_{i∈S} log(1 - p_i + p_i e^t) = (Σ_{c∈S} Phi_c) · φ(t)`` (see
  :mod:`._basis`).
* ``Y = outcome_counts(y_rows, problem.row_cell, problem.num_cells)``: ``(C,)`` outcome counts.

A subgroup is a pair ``(mask (M, V_max) bool, listed (M,) bool)``: attribute m is constrained iff
``listed[m]`` and then allows the values v with ``mask[m, v]``. Its penalised score is

    score = max_{t ∈ [t_lo, t_hi]} (Y_S·t - Phi_S·φ(t)) - penalty · Σ_{m listed} |mask[m]|,

with t = log q restricted to the direction's side of 0 by the basis (so the direction lives in the
basis; ``scan_arrays`` / ``score_arrays`` take none).

Interface
---------
::

    problem = make_problem(codes, n_values)                       # NumPy, once
    Phi = features(p_rows, problem.row_cell, problem.num_cells, basis)    # pure, jit
    Y = outcome_counts(y_rows, problem.row_cell, problem.num_cells)       # pure, jit
    raw = scan_arrays(key, problem, Phi, Y, basis, penalty=..., num_restarts=..., max_steps=...)
    score, log_q = score_arrays(problem, Phi, Y, basis, mask, listed, penalty=...)
    rows = row_mask(problem, raw.mask, raw.listed)                # (N,) bool

``scan_arrays`` is jitted (``num_restarts`` and ``max_steps`` static, ``penalty`` traced) and can be
``jax.vmap``-ed over ``(key, Phi, Y)`` with ``problem`` and ``basis`` held fixed, e.g. for randomization
replicates. For permutation nulls that re-map rows to cells, call :func:`features` with the permuted
``row_cell``.

Search (MDSS, Neill et al.)
---------------------------
Coordinate ascent per restart: pick a random unvisited attribute, drop its constraint, optimise its
value set exactly given the others (:func:`attribute_step`), re-score with the full penalty; if the
score rose by more than 1e-6 mark all attributes unvisited; mark this one visited; stop when all are
visited or after ``max_steps`` steps (then ``converged`` is False). Restarts are a batch axis run in
lock-step: restart 0 starts from the whole data, the others from a random subgroup (ρ ~ U(0,1),
attributes in random order, each value kept with probability ρ, the constraint kept only if it excludes
a value and ≥ 10 rows remain). ofijax adds one *greedy* lane (``greedy=True``, default): steepest
coordinate ascent from the whole data, which escapes the noise constraints that a random first
attribute locks in at near-zero penalty. All lanes advance together: each iteration steps every
active lane by :func:`attribute_step`, batched over the lanes as written (not ``vmap``-ed): one
batch (in which a stopped lane steps an empty subgroup on a segment-summed table), or groups of
active lanes on large tables. The best lane wins (ties: lowest index, restarts first).

Cost model (per lane-step; C cells, M attributes, K features, V = V_max):

* membership of the other constraints: O(C·M) elementwise (one packed-bit shift per code when
  V ≤ 64; no gathers, which cost ~5-25 ns per element on XLA's CPU backend);
* per-value sums (:func:`_per_value`): a masked one-hot matmul, O(C·V·K), for small tables
  (C·V < :data:`SEGMENT_MIN_WORK`), else one segment sum by code of the cell statistics
  (features, outcome and row counts side by side, :func:`_prepare`) with no V factor: O(C)
  index tests plus O(C_in·K) for the C_in cells that satisfy the other constraints (the others
  are dropped unread); each lane's segment sum stays an un-batched scatter under ``vmap``;
* the solves: O(V·K·18) (three solves on 2V rows, each 5 halvings then safeguarded Newton on
  Clenshaw series, run as one loop over one compiled solver; see :func:`attribute_step` and
  :mod:`._solve`), independent of C.

Lanes stop after different numbers of steps; on large tables (C ≥ :data:`GROUP_MIN_CELLS`) each
iteration steps only the active lanes, in groups of :data:`GROUP_WIDTH`, so a scan costs about
Σ_lanes steps lane-steps rather than L·max steps (417 vs 1,001 at 100k × 10 × 10). Cell
compression pays when C ≪ N; when nearly every row is its own cell each lane-step tests all C
cells and reads the statistics of those inside (≈ 0.3 ms at C = 1.15·10^5, K = 44, 5% inside on
one CPU core; ≈ 2 ms if all are inside).

XLA:CPU runs a search program on one core (its loops hold small arrays), so on a multi-core CPU
``bias_scan`` steps the lanes of such a table on a thread per core, the threads taking turns
with them (:func:`split_search`, :func:`search_parts`; ``OFIJAX_SEARCH_THREADS`` caps them): a
lane's steps depend only on its own key, so the result is the one-program search's bit for
bit.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._jaxcache import aot_jit, compiler_options
from ofijax._progress import Notice
from ofijax._validation import device_array, is_tracer

from ._basis import Basis, features
from ._encode import build_cells
from ._solve import batched_zeros, maximize, solve

__all__ = [
    "Problem",
    "RawScan",
    "make_problem",
    "features",
    "outcome_counts",
    "scan_arrays",
    "score_arrays",
    "attribute_step",
    "Step",
    "cell_mask",
    "row_mask",
    "default_max_steps",
    "pad_cells",
    "pad_problem_cells",
    "stack_width",
    "stack_tail",
    "cell_bucket",
    "IMPROVE_TOL",
    "MIN_INIT_ROWS",
    "SMALL_CELLS",
    "FAST_REPLICATES",
    "Programs",
    "SEARCH",
    "TURN",
    "split_search",
    "search_parts",
    "search_args",
]

#: A step counts as an improvement (resetting the visited flags) if the score rose by more than this.
IMPROVE_TOL = 1e-6
#: A random restart keeps a constraint only if at least this many rows remain (AIF360's value).
MIN_INIT_ROWS = 10


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["cell_codes", "n_values", "row_cell", "n_cells"],
    meta_fields=["num_cells", "v_max"],
)
@dataclasses.dataclass(frozen=True)
class Problem:
    """The cell compression of an attribute table (built once by :func:`make_problem`).

    Attributes:
      cell_codes: ``(C, M)`` int32 codes of each occupied cell.
      n_values: ``(M,)`` int32 number of values per attribute.
      row_cell: ``(N,)`` int32 cell of each row.
      n_cells: ``(C,)`` float64 rows per cell.
      num_cells: C (static).
      v_max: max_m V_m (static): the width of subgroup masks.
    """

    cell_codes: jax.Array
    n_values: jax.Array
    row_cell: jax.Array
    n_cells: jax.Array
    num_cells: int
    v_max: int

    @property
    def num_attributes(self) -> int:
        return int(self.cell_codes.shape[1])


class RawScan(NamedTuple):
    """Array result of :func:`scan_arrays` (the best restart)."""

    mask: jax.Array  # (M, V_max) bool, allowed values (only meaningful where listed)
    listed: jax.Array  # (M,) bool, constrained attributes
    score: jax.Array  # penalised score
    log_q: jax.Array  # fitted t = log q
    converged: jax.Array  # bool: every restart reached a local optimum within max_steps
    steps: jax.Array  # (num_restarts [+1 greedy],) int: attribute steps of each start


def make_problem(codes: np.ndarray, n_values: np.ndarray | None = None) -> Problem:
    """Build a :class:`Problem` from ``(N, M)`` integer codes (values ``0..V_m-1``)."""
    codes = np.asarray(codes, dtype=np.int32)
    if n_values is None:
        n_values = codes.max(axis=0) + 1
    n_values = np.asarray(n_values, dtype=np.int32)
    row_cell, cell_codes, n_cells = build_cells(codes, n_values)
    with jax.enable_x64(True):
        return Problem(
            cell_codes=device_array(cell_codes),  # transfers, not jnp.asarray's programs
            n_values=device_array(n_values),
            row_cell=device_array(row_cell),
            n_cells=device_array(n_cells, np.float64),
            num_cells=int(cell_codes.shape[0]),
            v_max=int(n_values.max()),
        )


def default_max_steps(num_attributes: int) -> int:
    """Cap on coordinate-ascent steps per restart: ``20·M + 50``."""
    return 20 * num_attributes + 50


@partial(jax.jit, static_argnames=("num_cells",))
def outcome_counts(y_rows: jax.Array, row_cell: jax.Array, num_cells: int) -> jax.Array:
    """Per-cell outcome counts ``Y_c = Σ_{i: row_cell[i]=c} y_i`` as float64 ``(num_cells,)``."""
    y = jnp.asarray(y_rows, dtype=jnp.float64)
    return jax.ops.segment_sum(y, jnp.asarray(row_cell, jnp.int32), num_segments=num_cells)


def _valid_values(problem: Problem) -> jax.Array:
    return jnp.arange(problem.v_max)[None, :] < problem.n_values[:, None]


def _allowed(problem: Problem, ok, codes_t=None) -> jax.Array:
    """(..., C) bool: cells whose code is allowed by ``ok`` (..., M, V_max) bool on every
    attribute (leading axes: lanes).

    For V_max ≤ 64 each attribute's row of ``ok`` is packed into one uint32 (V_max ≤ 32: 16
    codes a vector, a third less time than uint64 at 32 attributes × 115k cells) or uint64 and
    tested with a shift (elementwise, no gather: XLA's CPU gathers cost ~5-25 ns per element);
    otherwise the table is gathered at each cell's codes. ``codes_t``: the codes
    attribute-major, ``(M, C)`` (:func:`_prepare`), for the shift test: reduced over the leading
    axis it ran 2-4× faster than over the rows of ``(C, M)`` (100k cells × 10 attributes: 0.22
    vs 0.8-1.0 ms for two lanes).
    """
    m = problem.cell_codes.shape[1]
    if problem.v_max <= 64:
        word = jnp.uint32 if problem.v_max <= 32 else jnp.uint64  # 16 or 8 codes a vector
        one = word(1)
        shifts = jnp.arange(problem.v_max, dtype=word)
        bits = jnp.sum(jnp.where(ok, one << shifts, word(0)), axis=-1, dtype=word)  # (..., M)
        if codes_t is None:  # (..., C, M), reduced over the attributes
            hit = (bits[..., None, :] >> problem.cell_codes.astype(word)) & one
            return jnp.all(hit == 1, axis=-1)
        hit = (bits[..., :, None] >> codes_t.astype(word)) & one  # (..., M, C)
        return jnp.all(hit == 1, axis=-2)
    flat = problem.cell_codes + (jnp.arange(m, dtype=jnp.int32) * problem.v_max)[None, :]
    # an empty padding cell (pad_cells: code V_max on every attribute) reads past the table at
    # its last attribute, so it is in no subgroup, as in the shift test
    return jnp.all(jnp.take(ok.reshape(ok.shape[:-2] + (-1,)), flat, axis=-1, mode="fill",
                            fill_value=False), axis=-1)


def _column(problem: Problem, m, codes_t=None) -> jax.Array:
    """(..., C) codes of attribute ``m`` (traced, shape (...)): rows of ``codes_t``
    (attribute-major codes), else an elementwise select, not a gather."""
    m = jnp.asarray(m)
    if codes_t is not None:
        return jnp.take(codes_t, m, axis=0).astype(jnp.int32)
    a = jnp.arange(problem.cell_codes.shape[1])
    return jnp.sum(jnp.where(a == m[..., None, None], problem.cell_codes, 0), axis=-1,
                   dtype=jnp.int32)


def _in_subset(problem: Problem, mask, listed, skip=None, codes_t=None) -> jax.Array:
    """(..., C) bool: cells satisfying every listed attribute (except ``skip``, shape (...))."""
    m = problem.cell_codes.shape[1]
    active = listed if skip is None else listed & (jnp.arange(m) != jnp.asarray(skip)[..., None])
    # ok[m, v] = value v allowed on attribute m, or m not active; tested at each cell's codes.
    return _allowed(problem, mask | ~active[..., None], codes_t)


def cell_mask(problem: Problem, mask: jax.Array, listed: jax.Array) -> jax.Array:
    """(C,) bool: the cells in the subgroup ``(mask, listed)``."""
    return _in_subset(problem, mask, listed)


@jax.jit  # one small program instead of ~15 eager ops, each compiled on first use
def row_mask(problem: Problem, mask: jax.Array, listed: jax.Array) -> jax.Array:
    """(N,) bool: the rows in the subgroup ``(mask, listed)``."""
    return cell_mask(problem, mask, listed)[problem.row_cell]


def _penalty_count(problem: Problem, mask, listed):
    counts = jnp.sum(mask & _valid_values(problem), axis=-1)
    return jnp.sum(jnp.where(listed, counts, 0), axis=-1)


def _score(problem, Phi, Y, basis, mask, listed, penalty, ends=None):
    w = _in_subset(problem, mask, listed).astype(Phi.dtype)
    g, t = maximize(basis, w @ Phi, w @ Y, ends)
    return g - penalty * _penalty_count(problem, mask, listed), t


@jax.jit
def score_arrays(problem, Phi, Y, basis, mask, listed, *, penalty):
    """Penalised score and fitted log q of the subgroup ``(mask, listed)``.

    ``score = max_t (Y_S t - Phi_S·φ(t)) - penalty·Σ_{m listed} |mask[m] ∩ values of m|``.
    """
    return _score(problem, Phi, Y, basis, mask, listed, jnp.asarray(penalty, Phi.dtype))


#: ``"auto"``: per-value sums by segment sum when C·V_max ≥ this, else by a one-hot matmul.
SEGMENT_MIN_WORK = 1 << 16
#: How :func:`attribute_step` forms its per-value sums: ``"auto"``, ``"segment"`` or ``"onehot"``
#: (a module switch for tests and benchmarks; both give the same sums up to summation order).
AGGREGATE = "auto"


#: :func:`_prepare` pads its rows to a multiple of this many columns: XLA:CPU's scatter of
#: 46-column rows ran ~1.5× slower than of 48-column ones (its inner loop vectorises by 4).
STACK_ALIGN = 4


def _segment_sums(num: int):
    """``(x, ids) -> segment_sum(x, ids, num)`` with rows whose id is ``≥ num`` dropped, that stays
    un-batched under ``vmap``.

    XLA's CPU scatter-add of a plain (C, K) array is a fast streaming loop, but a batched scatter
    (what ``vmap`` makes of it: 2-D indices, broadcast updates) or one whose updates are a fused
    expression is 10-30× slower, so a ``vmap`` over lanes or replicates is turned into a loop of
    un-batched scatters (``jax.custom_batching.sequential_vmap``).

    A dropped row (out-of-range id, ``mode="drop"``) is tested and skipped without its features
    being read, so the sum costs about C index tests plus the rows kept: at 115k cells × 48
    columns 0.3 ms with 5% of the rows kept against 1.9 ms when every row is added (to a dump
    slot); also faster than summing only the chunks of rows that hold a kept one (each chunk's
    slice is copied before its scatter).
    """

    @jax.custom_batching.sequential_vmap
    def seg(x, ids):
        return jax.ops.segment_sum(x, ids, num_segments=num, mode="drop")

    return seg


def _aggregation(problem: Problem) -> str:
    """How :func:`_per_value` sums: ``"segment"`` or ``"onehot"`` (see :data:`AGGREGATE`)."""
    if AGGREGATE != "auto":
        return AGGREGATE
    return "segment" if problem.num_cells * problem.v_max >= SEGMENT_MIN_WORK else "onehot"


class _Prepared(NamedTuple):
    """Loop-invariant arrays of a scan's attribute steps (:func:`_prepare`, once per scan)."""

    stats: jax.Array | None  # (C, K + 2 + pad) [Phi | Y | n_cells | 0…]; None: one-hot path
    # (M, C) uint8 (int32 if V_max > 255): the cell codes, attribute-major; None: one-hot path
    codes_t: jax.Array | None


def _prepare(problem: Problem, Phi, Y) -> _Prepared:
    """The rows :func:`_per_value`'s segment sum scatters (``stats``) and the attribute-major
    codes the membership test reads (``codes_t``); both ``None`` on tables summed by one-hot
    matmul (small, where the program's compile time matters more than its run).

    ``stats`` has the columns ``[Phi | Y | n_cells | 0…]``, zero-padded to a multiple of
    :data:`STACK_ALIGN` columns: one scatter of these rows costs about what the scatter of
    ``Phi`` alone did (XLA:CPU's scatter pays per row), where ``Y`` and ``n_cells`` had a second
    one. Build it once per scan and pass it to :func:`attribute_step`, not once per step.
    """
    if _aggregation(problem) != "segment":  # small tables: the step reads cell_codes as it is
        return _Prepared(None, None)
    return _Prepared(_stack(problem, Phi, Y), _codes_t(problem))


def _codes_t(problem: Problem):
    # one byte a code where the values fit (the membership test reads all M codes of every
    # cell each step: at 32 attributes × 115k cells 3.7 instead of 14.7 MB); the barrier keeps
    # XLA from turning the transpose into a layout change of its consumers
    small = jnp.uint8 if problem.v_max <= 255 else jnp.int32
    return jax.lax.optimization_barrier(problem.cell_codes.T.astype(small))


def stack_width(k: int) -> int:
    """Columns of the stacked cell statistics ``[Phi | Y | n_cells | 0…]`` of ``k`` features
    (:func:`_prepare`): k + 2 rounded up to a multiple of :data:`STACK_ALIGN`."""
    return k + 2 + (-(k + 2)) % STACK_ALIGN


def stack_tail(problem: Problem, Y, k: int, dtype=jnp.float64):
    """The columns the stacked statistics hold after ``k`` features: ``[Y | n_cells | 0…]``
    (``features(..., tail=)`` appends them as it sums, giving :func:`_prepare`'s array)."""
    pad = stack_width(k) - k - 2
    n = problem.n_cells.astype(dtype)
    return jnp.concatenate([jnp.asarray(Y, dtype)[:, None], n[:, None],
                            jnp.zeros((n.shape[0], pad), dtype)], axis=1)


def _stack(problem: Problem, Phi, Y):
    return jnp.concatenate([Phi, stack_tail(problem, Y, Phi.shape[1], Phi.dtype)], axis=1)


def _per_value(problem: Problem, Phi, Y, inside, col, stats=None):
    """``(phi_v (..., V, K), y_v (..., V), n_v (..., V))``: sums over the ``inside`` cells by
    value ``col`` (both ``(..., C)``; leading axes: lanes).

    Two exact-arithmetic-equivalent forms (they differ only in summation order, ~1e-16
    relative): a masked one-hot matmul, O(C·V·K) (cheapest for small tables), and a segment sum
    of the stacked cell statistics ``stats`` (:func:`_prepare`; built here when not given) by
    code, ``inside`` cells to their value and the others dropped unread, with no V factor.
    """
    v_max = problem.v_max
    if _aggregation(problem) == "segment":
        k = Phi.shape[-1]
        stats = _stack(problem, Phi, Y) if stats is None else stats
        # cells outside the subgroup get an out-of-range id: dropped unread; the barrier keeps
        # the index computation out of the scatter's fused loop
        ids = jax.lax.optimization_barrier(jnp.where(inside, col, v_max))
        seg = _segment_sums(v_max)
        for _ in range(ids.ndim - 1):  # lanes: one un-batched scatter each (see _segment_sums)
            seg = jax.vmap(seg, in_axes=(None, 0))
        sums = seg(stats, ids)
        return sums[..., :k], sums[..., k], sums[..., k + 1]
    onehot = (col[..., None] == jnp.arange(v_max)).astype(Phi.dtype)
    onehot = jnp.swapaxes(onehot * inside.astype(Phi.dtype)[..., None], -1, -2)  # (..., V, C)
    return onehot @ Phi, onehot @ Y, onehot @ problem.n_cells


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
                   one_solver: bool | None = None, prepared: _Prepared | None = None) -> Step:
    """Exact best value set of attribute ``m`` given the other constraints (a :class:`Step`).

    Batched over leading lane axes of ``mask`` (..., M, V_max), ``listed`` (..., M) and ``m``
    (...), written out rather than ``vmap``-ed: the search steps all its lanes in one call, and
    a ``vmap`` of this step (its loops, the solver's included) took ~0.19 s longer to trace,
    lower and compile (10k × 4 × 5, 11 lanes: 0.13 + 0.12 + 0.36 s against 0.08 + 0.06 +
    0.29 s for one lane unbatched).

    ``score = G*(new subset) - penalty·|row|`` (0 penalty if unlisted): the penalised interval
    sweep of Speakman et al. over the ≤ 2V-1 q-intervals, plus the "unconstrained" candidate
    (the pool D' of all the attribute's values), which wins only if strictly better (or if no
    value set is positive).

    Three batched solves: (0) the maximum of each value and of the pool, (1) both crossings
    ``G = penalty`` of each value with a positive penalised score, (2) the maximum of each
    interval's value set. With ``one_solver`` (default: on small tables, ``C ≤ SMALL_CELLS``,
    where compiling costs more than running) they run as one loop over one :func:`~._solve.solve` on 2·V_max rows (padded), so
    the step compiles one solver instead of three (a 10k × 4 × 5 scan program compiled ~1 s
    faster on CPU); otherwise as three solves on their own V + 1, 2V and 2V rows (the
    padding's extra sixth of solver work and the loop measured 10-20% slower warm at 100k × 4 ×
    10 and × 50, and 200 randomization replicates at 10k × 4 × 5 ~1.4× slower); the one-solver
    form also keeps the solver's halvings (``grid=False``: the grid's product cost its program
    ~0.06 s of compile). ``prepared``: the loop-invariant :func:`_prepare` of ``(problem, Phi,
    Y)`` when the caller steps many times (without it the step reads ``problem.cell_codes`` and
    stacks the statistics itself).
    """
    v_max = problem.v_max
    dtype = Phi.dtype
    c = jnp.asarray(penalty, dtype)
    ends = basis.endpoints() if ends is None else ends
    prepared = _Prepared(None, None) if prepared is None else prepared
    m = jnp.asarray(m)
    inside = _in_subset(problem, mask, listed, skip=m, codes_t=prepared.codes_t)  # (..., C)
    col = _column(problem, m, prepared.codes_t)  # (..., C)
    phi_v, y_v, n_v = _per_value(problem, Phi, Y, inside, col, prepared.stats)
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
        one_solver = problem.num_cells <= SMALL_CELLS

    def solve_at(i, st: _Phases):  # solve i on the carry's rows: (G at t*, t*)
        return solve(basis, st.phi, st.y, i != 1, st.t_hat, st.g_hat, c,
                     left[: st.y.shape[-1]], ends, grid=False if one_solver else None)

    # solve 0's rows: the V values and the pool (padded to 2V rows for the loop)
    n0 = w if one_solver else v_max + 1
    pad = n0 - v_max - 1
    st = _Phases(
        jnp.concatenate([phi_v, phi_v.sum(axis=-2, keepdims=True),
                         jnp.zeros(lead + (pad, k), dtype)], axis=-2),
        jnp.concatenate([y_v, y_v.sum(axis=-1, keepdims=True), jnp.zeros(lead + (pad,), dtype)],
                        axis=-1),
        zw[..., :n0], zw[..., :n0], zw, zw, batched_zeros(lead + (w - 1, v_max), bool, y_v),
        zw, zw,
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
        new_row,
        ~unconstrained,
        jnp.where(unconstrained, g_all, s_best),
        jnp.where(unconstrained, t_all, at_j(st.t2[..., :-1])),
        g_all,
        t_all,
    )


def _random_start(u_order, rho, u_keep, problem: Problem, valid, codes_t=None):
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
        # selects on a one-hot (no gathers or scatters; see _search's body)
        at_a = jnp.arange(m) == order[..., i, None]  # (..., M)
        excludes = jnp.any(at_a[..., None] & valid & ~keep, axis=(-2, -1))
        mask2 = jnp.where(at_a[..., None], keep, mask)
        listed2 = listed | at_a
        rows = (_in_subset(problem, mask2, listed2, codes_t=codes_t).astype(problem.n_cells.dtype)
                @ problem.n_cells)
        ok = excludes & (rows >= MIN_INIT_ROWS)
        return jnp.where(ok[..., None, None], mask2, mask), jnp.where(ok[..., None], listed2, listed)

    start = (valid | batched_zeros(lead + valid.shape, bool, rho),
             batched_zeros(lead + (m,), bool, rho))
    return jax.lax.fori_loop(0, m, body, start)  # carries batched (see batched_zeros)


class _Lanes(NamedTuple):
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


#: Lanes per group when :func:`_search` steps only the active lanes (large tables).
GROUP_WIDTH = 2
#: ... which it does when the padded cell count is at least this, i.e. above :data:`SMALL_CELLS`
#: (smaller tables step all lanes in one batch: there per-op overhead, not per-lane work,
#: dominates an iteration). It was 2^14 until the lanes were batched as written; then, at 100k
#: rows × 4 attributes and 10 restarts, groups ran as fast or faster on one thread (7,168 cells:
#: 79 vs 88 ms; 10,240 cells: 60 vs 62 ms), and such tables can be split over the cores
#: (:func:`search_parts`: 57 and 41 ms on two).
GROUP_MIN_CELLS = (1 << 12) + 1


def _group_width(problem: Problem, lanes: int) -> int:
    """Lanes per batched step in :func:`_search`: all lanes, or :data:`GROUP_WIDTH` (static).

    Lanes run for different numbers of steps (at 100k × 10 × 10 the 11 lanes take 12-91 steps,
    417 in all), so stepping every lane until the longest stops computes 1,001 lane-steps. On
    large tables each iteration instead steps only the active lanes, in groups of
    :data:`GROUP_WIDTH` (a loop over ⌈active / width⌉ groups), ≈ 420 lane-steps there. Every
    lane takes exactly the steps it took in lock-step. When the active count is odd, the last
    group's spare slot steps an empty subgroup (its segment sums drop every cell unread) instead
    of a full step of an inactive lane: at 100k × 4 × 50 that spares 103 of 572 full lane-steps
    (469 are needed; the greedy lane runs alone for its last 65 of 112 steps), at 100k × 10 × 10
    63 of 480.
    """
    return GROUP_WIDTH if problem.num_cells >= GROUP_MIN_CELLS and lanes > GROUP_WIDTH else lanes


def _search(keys, problem, Phi, Y, basis, penalty, max_steps, greedy, ends, one_solver=None):
    """All starts in lock-step; each iteration steps every active lane (:func:`_group_width`).

    Restart lanes (MDSS): restart 0 from the whole data, others from a random start; each
    iteration a lane steps one random unvisited attribute, always accepts, and resets its visited
    flags when the score rose by more than ``IMPROVE_TOL``; done when all are visited.
    Greedy lane (optional, see :func:`scan_arrays`): steepest ascent from the whole data; it steps
    the attributes 0..M-1 in turn from the same base subgroup (one per iteration), and at the end
    of each sweep moves to the best candidate if it beats the base by more than ``IMPROVE_TOL``,
    else stops (a local optimum in the same sense). A sweep after a move passes over the attribute
    that move re-optimised (its step would return the base), so sweeps after the first take
    M - 1 steps. Every lane stops after ``max_steps`` iterations.

    A lane's steps depend only on its own key and state, so a search whose lanes are stepped on
    several threads (:func:`split_search`) gives each lane's result bit for bit.
    """
    pairs = jax.vmap(jax.random.split)(keys)  # each restart's (start, steps) keys
    state = _start(pairs[:, 0], problem, Phi.dtype, max_steps, greedy)
    out = _advance(state, pairs[:, 1], problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
                   one_solver)
    return out.mask, out.listed, out.score, jnp.all(out.visited, axis=1), out.steps, out.log_q


def _start(k_init, problem: Problem, dtype, max_steps, greedy: bool, codes_t=None) -> _Lanes:
    """The search's start (:func:`_search`): restart lanes from their start keys ``k_init``
    (the first of each restart key's split; restart 0 from the whole data), then the greedy
    lane from the whole data."""
    r = k_init.shape[0]
    m = problem.cell_codes.shape[1]
    v_max = problem.v_max
    valid = _valid_values(problem)
    u = jax.vmap(lambda k: jax.random.uniform(k, (m + 1 + m * v_max,), dtype=dtype))(k_init)
    mask_r, listed_r = _random_start(u[:, :m], u[:, m], u[:, m + 1:].reshape(r, m, v_max),
                                     problem, valid, codes_t)
    first = (jnp.arange(r) == 0)[:, None]
    mask = jnp.where(first[:, :, None], valid[None], mask_r)
    listed = jnp.where(first, False, listed_r)
    lanes = r + 1 if greedy else r
    if greedy:
        mask = jnp.concatenate([mask, valid[None]])
        listed = jnp.concatenate([listed, jnp.zeros((1, m), bool)])
    # No lane's start is scored: a restart lane's first step always counts as an improvement
    # (its visited flags are all unset anyway), and the greedy lane's base, the whole data, is
    # scored by its first step (the pool of attribute 0 with nothing listed). So a lane that never
    # steps (max_steps = 0) keeps -inf, and the best lane is then restart 0 (the whole data).
    neg_inf = jnp.asarray(-jnp.inf, dtype)
    zero = jnp.asarray(0.0, dtype)
    return _Lanes(
        mask, listed, jnp.full(lanes, neg_inf), jnp.zeros(lanes, dtype), jnp.zeros((lanes, m), bool),
        jnp.zeros(lanes, jnp.int32), jnp.full(lanes, max_steps > 0), valid, jnp.zeros(m, bool),
        neg_inf, zero, jnp.int32(0), jnp.int32(0), jnp.int32(-1),
    )


def _advance(state: _Lanes, k_steps, problem, Phi, Y, basis, penalty, max_steps, greedy, ends,
             one_solver=None, prepared: _Prepared | None = None, width: int | None = None,
             cap=None) -> _Lanes:
    """Step the lanes of ``state`` (:func:`_start`; ``k_steps`` the restart lanes' step keys,
    the second of each key's split) until none is active (:func:`_search`'s loop), or, with
    ``cap``, until ``cap`` iterations have run or a lane has stopped (:func:`split_search`
    resumes it). ``prepared``: :func:`_prepare` of the problem when the caller holds it;
    ``width``: lanes per batched step (default :func:`_group_width`)."""
    r = k_steps.shape[0]
    m = problem.cell_codes.shape[1]
    v_max = problem.v_max
    dtype = Phi.dtype
    lanes = state.mask.shape[0]
    neg_inf = jnp.asarray(-jnp.inf, dtype)
    # One batched step for all lanes, or for the active ones in groups (see _group_width). (A
    # fori_loop over lanes whose cond skips stopped lanes was tried: no gain at 20k × 8 × 8 and
    # far slower on small or vmapped problems, where per-op overhead on 11× smaller batches
    # dominates.)
    width = _group_width(problem, lanes) if width is None else width
    if prepared is None:
        prepared = _prepare(problem, Phi, Y)  # loop-invariant: once, not per step

    def one_step(mk, ls, a):
        st = attribute_step(problem, Phi, Y, basis, mk, ls, a, penalty, ends, one_solver, prepared)
        return st.row, st.listed, st.score, st.pool_score, st.log_q, st.pool_log_q

    step_fn = one_step  # batched over the lanes (see attribute_step)
    n_groups = -(-lanes // width)

    def cond(s: _Lanes):
        return jnp.any(s.active)

    n_start = jnp.sum(state.active)

    def body(s: _Lanes):
        u_step = jax.vmap(
            lambda k, n: jax.random.uniform(jax.random.fold_in(k, n), (m,), dtype=dtype)
        )(k_steps, s.steps[:r])
        a = jnp.argmax(jnp.where(s.visited[:r], -1.0, u_step), axis=1)
        if greedy:  # the sweep's next attribute, passing over the one the last move set
            ga = s.sweep_pos + (s.sweep_pos >= s.skip) * (s.skip >= 0)
            a = jnp.concatenate([a, ga[None].astype(a.dtype)])
        if width < lanes or cap is not None:
            # active lanes first (stable), padded with the last lane to whole groups
            order = jnp.argsort(~s.active, stable=True)
            order = jnp.concatenate([order, jnp.full(n_groups * width - lanes, order[-1])])
            n_active = jnp.sum(s.active)
            count = -(-n_active // width)

            def group(j, out):
                sel = jax.lax.dynamic_slice(order, (j * width,), (width,))
                # Slots past the active lanes (an odd count's last group) step an empty subgroup
                # (its segment sums drop every cell unread) and are dropped:
                # otherwise an inactive lane or a repeat would cost a full step.
                spare = j * width + jnp.arange(width) >= n_active
                mk = jnp.where(spare[:, None, None], False, s.mask[sel])
                ls = jnp.where(spare[:, None], True, s.listed[sel])
                dest = jnp.where(spare, lanes, sel)  # out of range: dropped
                return tuple(o.at[dest].set(x, mode="drop")
                             for o, x in zip(out, step_fn(mk, ls, a[sel])))

            init = (jnp.zeros((lanes, v_max), bool), jnp.zeros(lanes, bool),
                    *(jnp.zeros(lanes, dtype) for _ in range(4)))
            row, lst, pooled, pool_score, t_step, pool_t = jax.lax.fori_loop(0, count, group,
                                                                             init)
        elif prepared.stats is not None:
            # lock-step on a segment-summed table: a stopped lane steps an empty subgroup (its
            # segment sums drop every cell unread; its outputs are discarded below) instead of
            # its own
            row, lst, pooled, pool_score, t_step, pool_t = step_fn(
                s.mask & s.active[:, None, None], s.listed | ~s.active[:, None], a)
        else:
            row, lst, pooled, pool_score, t_step, pool_t = step_fn(s.mask, s.listed, a)
        # each lane's attribute a[l] updated by selects on a one-hot, not scatters: with the
        # fast-compiling options XLA:CPU expands every scatter into a while loop of its own
        # (six of them, ~0.1 s of a 10k × 4 × 5 program's compile); the values are the same
        at = jnp.arange(m)[None, :] == a[:, None]  # (L, M)
        mask2 = jnp.where(at[:, :, None], row[:, None, :], s.mask)
        listed2 = jnp.where(at, lst[:, None], s.listed)
        others = _penalty_count(problem, mask2, listed2 & ~at)
        full = pooled - penalty * others
        act = s.active
        steps = s.steps + act
        # restart lanes: always accept; reset the visited flags on improvement
        improved = full > s.score + IMPROVE_TOL
        visited = jnp.where(improved[:, None], False, s.visited) | at
        new_mask, new_listed, new_score, new_t = mask2, listed2, full, t_step
        bm, bl, bs, bt, ba = s.best_mask, s.best_listed, s.best_score, s.best_log_q, s.best_attr
        pos, skip = s.sweep_pos, s.skip
        if greedy:  # greedy lane: keep the base, remember the sweep's best, move at sweep end
            g = r
            # the base's score: at the lane's first step (nothing listed) its pool is the whole data
            first = s.steps[g] == 0
            base = jnp.where(first, pool_score[g], s.score[g])
            base_t = jnp.where(first, pool_t[g], s.log_q[g])
            cand = act[g] & (full[g] > bs)
            bm = jnp.where(cand, mask2[g], bm)
            bl = jnp.where(cand, listed2[g], bl)
            bs = jnp.where(cand, full[g], bs)
            bt = jnp.where(cand, t_step[g], bt)
            ba = jnp.where(cand, a[g].astype(jnp.int32), ba)
            # A sweep after a move passes over the attribute that move set: its step would return
            # the base (the base's value set is already that attribute's optimum given the
            # others), so it cannot improve. With one attribute nothing is left: the lane stops.
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
        new_mask = jnp.where(act[:, None, None], new_mask, s.mask)
        new_listed = jnp.where(act[:, None], new_listed, s.listed)
        new_score = jnp.where(act, new_score, s.score)
        new_t = jnp.where(act, new_t, s.log_q)
        new_visited = jnp.where(act[:, None], visited, s.visited)
        new_active = act & ~jnp.all(new_visited, axis=1) & (steps < max_steps)
        return _Lanes(new_mask, new_listed, new_score, new_t, new_visited, steps, new_active, bm,
                      bl, bs, bt, ba, pos, skip)

    if cap is None:
        return jax.lax.while_loop(cond, body, state)
    # at most `cap` iterations, and none after a lane stopped
    out, _ = jax.lax.while_loop(
        lambda si: cond(si[0]) & (si[1] < cap) & (jnp.sum(si[0].active) == n_start),
        lambda si: (body(si[0]), si[1] + 1), (state, jnp.int32(0)))
    return out


def scan_arrays(
    key, problem: Problem, Phi, Y, basis: Basis, *, penalty, num_restarts: int = 10,
    max_steps: int | None = None, greedy: bool = True, throughput: bool = False,
) -> RawScan:
    """Multi-start coordinate ascent (MDSS) over cell arrays; returns the best restart.

    Args:
      key: a PRNG key (restart r uses ``jax.random.split(key, num_restarts)[r]``).
      problem: the cell compression (:func:`make_problem`).
      Phi: ``(C, K)`` basis features (:func:`features`).
      Y: ``(C,)`` outcome counts (:func:`outcome_counts`).
      basis: the :class:`~._basis.Basis` (also fixes the direction).
      penalty: per listed value (traced, so changing it does not recompile).
      num_restarts: restarts, run in lock-step as a batch axis; restart 0 starts from all data.
      max_steps: cap on attribute steps per restart (default ``20·M + 50``; traced, so changing
        it does not recompile).
      greedy: also run one steepest-ascent start from the whole data (an extra lane of
        :func:`_search`: sweeps all attributes from the same base, moves to the best candidate
        while it improves), compared after the restarts (ties go to the restarts). An ofijax
        addition to MDSS: with a near-zero penalty and many attributes the random-order ascent
        of MDSS locks in noise constraints (AIF360 stops at a third of the planted score on the
        100k × 10 × 10 benchmark); the steepest start avoids that. It costs one lane, i.e. M - 1
        iterations per move (M for the first sweep), usually fewer than the restarts need.
      throughput: compile for run time rather than compile time: for callers that run the same
        shape many times (randomization replicates). By default a table of at most
        :data:`SMALL_CELLS` cells gets the fast-compiling program (one looped solver per step,
        :func:`ofijax._jaxcache.compiler_options`), whose run is up to ~1.4× slower.

    Returns:
      :class:`RawScan` of the best restart; its score and log q are those its last attribute step
      computed for the final subgroup (:func:`attribute_step`: the per-value sums of the cells
      added up by value, so they equal :func:`score_arrays`' direct sum over the cells to float64
      round-off, ~1e-13 relative). Starts are not scored (see :func:`_search`), so with
      ``max_steps = 0`` the result is restart 0's start, the whole data, scored directly.
    """
    m = problem.cell_codes.shape[1]
    max_steps = default_max_steps(m) if max_steps is None else int(max_steps)
    # The jitted core sees only cell arrays (not row_cell), so its compilation is shared by all
    # data sets with the same (C, M, V_max, K).
    cells = dataclasses.replace(problem, row_cell=jnp.zeros(0, jnp.int32))
    small = Phi.shape[0] <= SMALL_CELLS and not throughput
    args = (key, cells, Phi, Y, basis, penalty, max_steps, num_restarts, bool(greedy), small,
            max_steps == 0)
    if is_tracer(Phi):  # inside an outer jit/vmap: nothing runs now
        return _scan_cells(*args)
    shape = (tuple(Phi.shape), str(Phi.dtype), tuple(problem.cell_codes.shape), problem.v_max,
             basis.kind, num_restarts, bool(greedy), small, max_steps == 0)
    c, k = Phi.shape
    if shape in _COMPILED:
        msg = f"scan: searching {c:,} cells × {m} attributes"
    else:  # the first call for a shape compiles (seconds on CPU; the disk cache keeps it)
        msg = (f"scan: compiling the search for {c:,} cells × {m} attributes × {k} features "
               "(once per shape and process; cached on disk for later processes)")
    # Small problems (run time ≪ compile time) use the faster-compiling program.
    fn = _scan_cells_small if small else _scan_cells
    with Notice(msg):
        out = fn(*args)
        jax.block_until_ready(out)
    _COMPILED.add(shape)
    return out


#: Shapes ``scan_arrays`` has already run in this process (for its progress notice only).
_COMPILED: set = set()

#: Padded cell counts up to which a top-level scan is compiled with
#: :func:`ofijax._jaxcache.compiler_options` (~40% less compile time on CPU, same run time and
#: results at 640 cells; at ~20k cells the default XLA:CPU program ran faster).
SMALL_CELLS = 4096


#: Randomization tests of small tables (C ≤ :data:`SMALL_CELLS`) with at most this many replicates
#: also compile their replicate batches with the fast-compiling options (:class:`Programs`): there
#: a first call's compile outweighs the run. FPR-Scan on COMPAS (640 cells, fresh process, empty
#: cache): 19 replicates 2.98 s with them vs 4.94 s without, 199 replicates 3.58 vs 5.08 s. A warm
#: repeat in the same process pays up to ~1.35× (99 replicates 0.28 vs 0.26 s, top_k=3 with 49
#: replicates 0.61 vs 0.45 s, 999 replicates 2.86 vs 2.40 s: larger tests keep the default
#: options).
FAST_REPLICATES = 256


class Programs:
    """A function jitted twice, each with its executables kept on disk (:func:`aot_jit`): with
    XLA's default options and with the fast-compiling ones of small tables
    (:func:`ofijax._jaxcache.compiler_options`); :meth:`pick` chooses by table size and
    replicate count. A given choice always builds the same program, so a result does not depend
    on whether its executable came from the disk."""

    def __init__(self, fun, name: str, static_argnums=()):
        self.default = aot_jit(fun, name=name, static_argnums=static_argnums)
        self.small = aot_jit(fun, name=name + "_small", static_argnums=static_argnums,
                             compiler_options=compiler_options())

    def pick(self, num_cells: int, num_replicates: int = 0,
             max_replicates: int = FAST_REPLICATES):
        """The fast-compiling program for ``num_cells ≤ SMALL_CELLS`` and ``num_replicates ≤
        max_replicates`` (default :data:`FAST_REPLICATES`), else the default one."""
        small = num_cells <= SMALL_CELLS and num_replicates <= max_replicates
        return self.small if small else self.default


def _search_program(key, cells, Phi, Y, basis, penalty, max_steps, num_restarts, greedy):
    """:func:`scan_arrays` as one top-level program (``max_steps``, ``num_restarts`` and
    ``greedy`` static), and the ``(C,)`` :func:`cell_mask` of the subgroup it found (the caller
    reads its rows as ``cells_in[row_cell]``, so no row-mask program is compiled); ``cells`` is a
    :class:`Problem` without rows (``row_cell`` empty), so the program is shared by all row
    counts."""
    raw = scan_arrays(key, cells, Phi, Y, basis, penalty=penalty, num_restarts=num_restarts,
                      max_steps=max_steps, greedy=greedy)
    return raw, cell_mask(cells, raw.mask, raw.listed)


def _scan_cells_impl(key, problem, Phi, Y, basis, penalty, max_steps, num_restarts,
                     greedy, one_solver, unstepped) -> RawScan:
    """The best lane's subgroup with the score and log q its last step computed (a search
    program holds no solver besides the step's: a final re-score's own solver was ~0.16 s of a
    10k × 4 × 5 program's compile); ``unstepped`` (static: ``max_steps == 0``, no lane steps):
    restart 0's start, the whole data, scored directly."""
    penalty = jnp.asarray(penalty, Phi.dtype)
    keys = jax.random.split(key, num_restarts)
    ends = basis.endpoints()
    masks, listeds, scores, conv, steps, log_qs = _search(
        keys, problem, Phi, Y, basis, penalty, max_steps, greedy, ends, one_solver
    )
    best = jnp.argmax(scores)
    mask, listed = masks[best], listeds[best]
    if unstepped:
        score, t = _score(problem, Phi, Y, basis, mask, listed, penalty, ends)
    else:
        score, t = scores[best], log_qs[best]
    return RawScan(mask, listed, score, t, jnp.all(conv), steps)


_scan_cells = jax.jit(_scan_cells_impl, static_argnums=(7, 8, 9, 10))
_scan_cells_small = jax.jit(_scan_cells_impl, static_argnums=(7, 8, 9, 10),
                            compiler_options=compiler_options())

#: The top-level search (:func:`_search_program`: ``(RawScan, cells_in)``) of ``bias_scan`` and
#: of its Bernoulli replicates on CPU, with its executables kept on disk: a new process loads it
#: instead of tracing and lowering the search again (~1-2 s on CPU; see
#: ``ofijax._jaxcache.aot_jit``).
SEARCH = Programs(_search_program, "ofijax.scan.search", static_argnums=(6, 7, 8))


def _start_program(key, cells, stats, max_steps, num_restarts, greedy):
    """The start of a split search (:func:`split_search`): every lane's :func:`_start` (restart
    r's key ``jax.random.split(key, num_restarts)[r]``) and the attribute-major codes its turns
    share with the stacked statistics ``stats`` (:func:`_prepare`'s two arrays)."""
    k_init = jax.vmap(jax.random.split)(jax.random.split(key, num_restarts))[:, 0]
    codes_t = _codes_t(cells)  # (stats is not returned: an input returned is copied)
    return _start(k_init, cells, stats.dtype, max_steps, greedy, codes_t=codes_t), codes_t


def _resume_program(key, idx, state, prepared, cells, Phi, Y, basis, penalty, cap, max_steps,
                    num_restarts, greedy):
    """A turn of a split search (:func:`split_search`): :data:`GROUP_WIDTH` restart lanes
    ``idx`` (their keys ``jax.random.split(key, num_restarts)[idx]``) plus the greedy lane's slot
    when ``greedy``, in ``state``, stepped by :func:`_advance` for at most ``cap`` iterations and
    none after a lane stopped; returns the new state."""
    k_steps = jax.vmap(jax.random.split)(jax.random.split(key, num_restarts)[idx])[:, 1]
    return _advance(state, k_steps, cells, Phi, Y, basis, jnp.asarray(penalty, Phi.dtype),
                    max_steps, greedy, basis.endpoints(), prepared=prepared, width=GROUP_WIDTH,
                    cap=cap)


#: :func:`_start_program`, :func:`_stack`, :func:`_resume_program` and :func:`cell_mask` with
#: their executables kept on disk (one turn program serves every turn of every thread).
START = aot_jit(_start_program, name="ofijax.scan.start", static_argnums=(3, 4, 5))
STACK = aot_jit(_stack, name="ofijax.scan.stack")
RESUME = aot_jit(_resume_program, name="ofijax.scan.resume", static_argnums=(10, 11, 12))
CELLS_IN = aot_jit(cell_mask, name="ofijax.scan.cells_in")
#: Iterations of a turn (:func:`split_search`) while lanes wait for a thread, and once every
#: active lane has one. A turn also ends when one of its lanes stops; between turns a thread can
#: take other lanes, so the cores stay busy to the end. Each turn costs a call (~0.3-0.4 ms), so
#: long turns won: at 100k rows × 4 attributes × 10 values (~0.3 ms a step) 8 and 2 took 48 ms,
#: 64 and 16 36 ms; at × 50 values 343 and 329 ms.
TURN = 64
LAST_TURN = 16

_POOL: list = []  # [(threads, executor)]: the thread pool of split searches, made on first use
_POOL_LOCK = threading.Lock()


def search_parts(num_cells: int, num_restarts: int, greedy: bool, max_steps: int) -> int:
    """How many threads :func:`split_search` runs a top-level search on: 1 (one program) on an
    accelerator, on one core, without steps, or for tables of fewer than
    :data:`GROUP_MIN_CELLS` cells; else the usable CPU cores (``OFIJAX_SEARCH_THREADS``
    overrides), at most one per two lanes.

    XLA:CPU runs a search program on one core (its loops hold small arrays and run
    sequentially), so on a multi-core CPU the lanes, which are independent, run faster on their
    own threads (100k rows × 4 attributes × 50 values, 10 restarts, 2 cores: 574 → 367 ms as
    two fixed halves). Only tables whose search steps its lanes in groups of
    :data:`GROUP_WIDTH` are split: there a lane's arithmetic does not depend on which lanes
    share its program, so the result is the same bit for bit on any number of cores; a smaller
    table steps all its lanes as one batch, whose size a split would change (a lane's score then
    moved by 1 ulp).
    """
    if jax.default_backend() != "cpu" or num_cells < GROUP_MIN_CELLS or max_steps <= 0:
        return 1
    env = os.environ.get("OFIJAX_SEARCH_THREADS", "").strip()
    try:
        cores = int(env) if env else len(os.sched_getaffinity(0))
    except (ValueError, AttributeError):
        cores = os.cpu_count() or 1
    lanes = num_restarts + bool(greedy)
    return max(1, min(cores, lanes // 2))


def split_search(key, cells: Problem, Phi, Y, basis: Basis, penalty, max_steps: int,
                 num_restarts: int, greedy: bool, parts: int, stats=None):
    """:data:`SEARCH`'s ``(RawScan, cells_in)``, bit for bit, on ``parts`` threads that share
    the lanes turn by turn.

    The lanes start together (:func:`_start_program`); then each thread repeatedly takes up to
    :data:`GROUP_WIDTH` active lanes no other thread holds (the greedy lane first, then the
    restarts in order; as many as keeps every free thread busy), steps them for a turn
    (:func:`_resume_program`: at most :data:`TURN` iterations, ending early when one of them
    stops) and puts them back. A lane's steps depend only on its own key and state, and each is
    computed in a group of :data:`GROUP_WIDTH` lanes as in the one-program search, so which
    thread or partner steps it changes nothing; the best lane (the first of the highest score,
    lanes in :func:`_search`'s order) is picked here. Lanes of unequal lengths keep both cores
    busy to the end (fixed halves of the lanes, one per thread, left one core idle while the
    other finished a long lane). ``stats``: the stacked cell statistics ``[Phi | Y | n | 0…]``
    when the caller has them (``features(..., tail=stack_tail(...))``), in which case ``Phi``
    and ``Y`` are not read; else they are stacked here (:data:`STACK`). Returns NumPy
    arrays."""
    lanes = num_restarts + bool(greedy)
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] < parts:
            _POOL[:] = [(parts, ThreadPoolExecutor(parts, thread_name_prefix="ofijax-search"))]
        pool = _POOL[0][1]
    with jax.enable_x64(True):  # the caller's thread (x64 is thread-local)
        if stats is None:
            stats = STACK(cells, Phi, Y)
        start, codes_t = START(key, cells, stats, max_steps, num_restarts, bool(greedy))
        prepared = _Prepared(stats, codes_t)
        state = [np.array(x) for x in start]  # every lane's state, updated after each turn
    # the turns read the cells through `prepared` only: zero-row stand-ins for Phi and Y give
    # the feature count and dtype (one program for every table of the bucket)
    no_phi, no_y = np.zeros((0, basis.num_features)), np.zeros(0)
    lane_fields = range(7)  # _Lanes fields with a lane axis; the rest are the greedy lane's
    order = ([lanes - 1] if greedy else []) + list(range(num_restarts))
    held = np.zeros(lanes, bool)
    turn = threading.Condition()
    running = [0]
    failed: list = []

    def take() -> tuple[list[int], int]:  # (under `turn`) this thread's next lanes and cap
        free = [i for i in order if state[6][i] and not held[i]]
        if not free:
            return [], 0
        threads_free = parts - running[0]
        cap = TURN if np.sum(state[6]) > parts * GROUP_WIDTH else LAST_TURN
        return free[:min(GROUP_WIDTH, -(-len(free) // threads_free))], cap

    def run(_):
        with jax.enable_x64(True):
            while True:
                with turn:
                    while not failed:
                        mine, cap = take()
                        if mine or running[0] == 0:
                            break
                        turn.wait()
                    if failed or not mine:
                        return
                    held[mine] = True
                    running[0] += 1
                    restarts = [i for i in mine if i < num_restarts]
                    idx = np.zeros(GROUP_WIDTH, np.int32)
                    idx[:len(restarts)] = restarts
                    slots = list(idx) + ([lanes - 1] if greedy else [])
                    inp = [x[slots] if f in lane_fields else x for f, x in enumerate(state)]
                    on = np.zeros(len(slots), bool)  # the slots of this turn's lanes
                    on[:len(restarts)] = True
                    on[-1] |= greedy and lanes - 1 in mine
                    inp[6] = inp[6] & on
                try:
                    out = RESUME(key, idx, _Lanes(*inp), prepared, cells, no_phi, no_y, basis,
                                 float(penalty), cap, max_steps, num_restarts, bool(greedy))
                    out = [np.asarray(x) for x in out]
                except BaseException:
                    with turn:
                        failed.append(True)
                        running[0] -= 1
                        turn.notify_all()
                    raise
                with turn:
                    for f in range(len(state)):
                        if f in lane_fields:
                            for j, lane in enumerate(slots):
                                if on[j]:
                                    state[f][lane] = out[f][j]
                        elif greedy and on[-1]:
                            state[f] = out[f]
                    held[mine] = False
                    running[0] -= 1
                    turn.notify_all()

    list(pool.map(run, range(parts)))
    masks, listeds, scores, log_qs, visited, steps = (state[f] for f in (0, 1, 2, 3, 4, 5))
    best = int(np.argmax(scores))
    with jax.enable_x64(True):
        cells_in = np.asarray(CELLS_IN(cells, masks[best], listeds[best]))
    conv = np.all(visited, axis=1)
    return (RawScan(masks[best], listeds[best], scores[best], log_qs[best], np.all(conv), steps),
            cells_in)


def search_args(problem: Problem, max_steps: int | None) -> tuple[Problem, int]:
    """``(cells, max_steps)`` as :data:`SEARCH` takes them: the problem without rows (one program
    for all row counts) and the step cap resolved (default ``20·M + 50``)."""
    m = problem.cell_codes.shape[1]
    steps = default_max_steps(m) if max_steps is None else int(max_steps)
    return dataclasses.replace(problem, row_cell=np.zeros(0, np.int32)), steps


def cell_bucket(num_cells: int) -> int:
    """Padded cell count: the smallest 2^k·{1, 1.25, 1.5, 1.75} ≥ num_cells (at least 16).

    Padding to these sizes (≤ 25% extra) lets data sets of similar size share one compilation.
    """
    size = 16
    while True:
        for f in (4, 5, 6, 7):
            if size * f // 4 >= num_cells:
                return size * f // 4
        size *= 2


def pad_cells(problem: Problem, Phi, Y, num_cells: int):
    """Append empty cells (no rows, zero features) up to ``num_cells``: results are unchanged.

    Lets many small problems share one compiled scan (same shapes), e.g. in tests or when
    ``vmap``-ing over data sets. The empty cells' codes are ``V_max``, a value no attribute has,
    so the membership test keeps them out of every subgroup and the segment sums skip them
    unread (they would add zeros: at 100k × 4 × 20 they were 9% of the cells a search read).
    """
    extra = num_cells - problem.num_cells
    if extra < 0:
        raise ValueError(f"num_cells: must be ≥ {problem.num_cells}; got {num_cells}.")
    cell_codes, n_cells, Phi, Y = _pad_arrays(problem.cell_codes, problem.n_cells, Phi, Y, extra,
                                              problem.v_max)
    padded = Problem(
        cell_codes=cell_codes,
        n_values=problem.n_values,
        row_cell=problem.row_cell,
        n_cells=n_cells,
        num_cells=num_cells,
        v_max=problem.v_max,
    )
    return padded, Phi, Y


def pad_problem_cells(problem: Problem, num_cells: int) -> Problem:
    """``problem`` with empty cells appended up to ``num_cells``, as :func:`pad_cells` appends
    them, for a caller without the cell arrays (through the same program)."""
    c = problem.num_cells
    return pad_cells(problem, jnp.zeros((c, 1), jnp.float64), jnp.zeros(c, jnp.float64),
                     num_cells)[0]


@partial(jax.jit, static_argnums=(4, 5))  # one program, not 8 eager ops compiled one by one
def _pad_arrays(cell_codes, n_cells, Phi, Y, extra: int, code: int = 0):
    def pad(a, value=0):
        return jnp.concatenate([a, jnp.full((extra,) + a.shape[1:], value, a.dtype)])

    return pad(cell_codes, code), pad(n_cells), pad(Phi), pad(Y)
