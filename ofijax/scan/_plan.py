"""What a search is given and what it decides once: the cell compression of a table
(:class:`Problem`), its padding to shared shapes (:func:`cell_bucket`, :func:`pad_cells`), the
array result (:class:`RawScan`), and the static choices a search makes from the table's shape
before it runs (:class:`Plan`: how per-value sums are formed, one looped solver or three, lanes
per batched step), each behind a named constant with its reason. Everything here is NumPy or a
small jitted program; nothing searches. Constants chosen by a benchmark point to it; the
measurements are in ``experiments/notes/scan_engine.md``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._jaxcache import aot_jit
from ofijax._validation import device_array

from ._encode import build_cells

__all__ = [
    "Problem",
    "RawScan",
    "Plan",
    "make_plan",
    "make_problem",
    "outcome_counts",
    "default_max_steps",
    "search_args",
    "cell_bucket",
    "pad_cells",
    "pad_problem_cells",
    "stack_width",
    "aggregation",
    "one_solver",
    "group_width",
    "grouped",
    "fast_compile",
    "seed_starts",
    "IMPROVE_TOL",
    "MIN_INIT_ROWS",
    "STEPS_PER_ATTRIBUTE",
    "STEPS_BASE",
    "SMALL_CELLS",
    "GROUP_MIN_CELLS",
    "GROUP_WIDTH",
    "SEGMENT_MIN_WORK",
    "AGGREGATE",
    "STACK_ALIGN",
    "FAST_REPLICATES",
    "MIN_BUCKET",
    "SEED_MAX_CELLS",
    "SEED_MAX_LANES",
]

#: A step counts as an improvement (resetting the visited flags) if the score rose by more than
#: this: far above float64 round-off of a score (~1e-13 relative), far below a meaningful gain.
IMPROVE_TOL = 1e-6
#: A random restart keeps a constraint only if at least this many rows remain (AIF360's value).
MIN_INIT_ROWS = 10
#: Step cap per restart, ``STEPS_PER_ATTRIBUTE·M + STEPS_BASE``: 20 sweeps of the attributes plus
#: 50 steps, well above what a restart takes to stop (12-91 steps at 100k × 10 × 10, a cap of 250;
#: ``experiments/bench_scan_shapes.py``); a restart that reaches it reports ``converged=False``.
STEPS_PER_ATTRIBUTE = 20
STEPS_BASE = 50

#: Padded cell counts up to which a search is a *small* table: its attribute step runs one looped
#: solver and its top-level program gets the fast-compiling options (compile time outweighs run
#: time there; ``experiments/bench_scan.py --cold-only``; notes: "small tables").
SMALL_CELLS = 4096
#: Tables of at least this many padded cells (the first size above :data:`SMALL_CELLS`) step only
#: their active lanes, in groups of :data:`GROUP_WIDTH`, and may split a search over the cores
#: (``experiments/bench_scan_shapes.py``; notes: "lane groups").
GROUP_MIN_CELLS = SMALL_CELLS + 1
#: Lanes per group when a search steps only its active lanes: pairs beat groups of 1 or 3
#: (``experiments/bench_scan_shapes.py``; notes: "lane groups").
GROUP_WIDTH = 2
#: ``"auto"`` aggregation: per-value sums by segment sum when C·V_max ≥ this, else by a one-hot
#: matmul (the segment sum is the faster from there; ``experiments/bench_scan_shapes.py``; notes:
#: "per-value sums").
SEGMENT_MIN_WORK = 1 << 16
#: How the attribute step forms its per-value sums: ``"auto"``, ``"segment"`` or ``"onehot"`` (a
#: module switch for tests and benchmarks; both give the same sums up to summation order).
AGGREGATE = "auto"
#: The stacked cell statistics are padded to a multiple of this many columns: XLA:CPU's scatter
#: vectorises its inner loop by 4 (``experiments/bench_scan_shapes.py``; notes: "stacked rows").
STACK_ALIGN = 4
#: Randomization tests of small tables with at most this many replicates also compile their
#: replicate batches with the fast-compiling options: there a first call's compile outweighs the
#: run (``experiments/bench_scan.py --cold-only``; notes: "fast-compiling replicates").
FAST_REPLICATES = 256
#: The smallest padded cell count (:func:`cell_bucket`): tiny tables share one program.
MIN_BUCKET = 16
#: :func:`cell_bucket` sizes are ``2^k · q / 4`` for these q: at most 25% padding.
BUCKET_QUARTERS = (4, 5, 6, 7)
#: Seeded lanes (:func:`seed_starts`) run on tables of at most this many padded cells: there a
#: lane costs little (all lanes step as one batch) and an optimum of a few rows can be
#: significant; larger tables keep only the random restarts and the greedy lane.
SEED_MAX_CELLS = SMALL_CELLS
#: At most this many seeded lanes: every single value when ``M·V_max`` fits, and also every pair
#: of values of two attributes when ``M·V_max + C(M, 2)·V_max²`` fits (3 attributes × 3 values:
#: 9 + 27 = 36); chosen by ``experiments/scan_miss_rate.py`` (notes: "seeded lanes").
SEED_MAX_LANES = 64


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
    """Array result of a search (the best restart; with a leading lane axis, every lane's)."""

    mask: jax.Array  # (M, V_max) bool, allowed values (only meaningful where listed)
    listed: jax.Array  # (M,) bool, constrained attributes
    score: jax.Array  # penalised score
    log_q: jax.Array  # fitted t = log q
    converged: jax.Array  # bool: every restart reached a local optimum within max_steps
    steps: jax.Array  # (num_restarts [+1 greedy],) int: attribute steps of each start


class Plan(NamedTuple):
    """The static choices of one search, made once from its table's shape (:func:`make_plan`);
    plain Python values, so a plan is part of a program's trace, not of its inputs."""

    aggregation: str  # per-value sums: "segment" (segment sum) or "onehot" (masked matmul)
    one_solver: bool  # the attribute step's three solves as one looped solver
    width: int  # lanes per batched step: all lanes, or GROUP_WIDTH (active lanes only)


def aggregation(num_cells: int, v_max: int) -> str:
    """How the attribute step of a table of ``num_cells`` cells and ``v_max`` values sums by
    value: ``"segment"`` or ``"onehot"`` (:data:`AGGREGATE`, else by :data:`SEGMENT_MIN_WORK`).

    >>> aggregation(640, 5), aggregation(20480, 10)
    ('onehot', 'segment')
    """
    if AGGREGATE != "auto":
        return AGGREGATE
    return "segment" if num_cells * v_max >= SEGMENT_MIN_WORK else "onehot"


def one_solver(num_cells: int, throughput: bool = False) -> bool:
    """Whether a table of ``num_cells`` (padded) cells is small (``≤ SMALL_CELLS``) and not
    compiled for throughput: its step runs one looped solver, its program the fast options."""
    return num_cells <= SMALL_CELLS and not throughput


def grouped(num_cells: int) -> bool:
    """Whether a table steps its active lanes in groups (``≥ GROUP_MIN_CELLS`` cells)."""
    return num_cells >= GROUP_MIN_CELLS


def group_width(num_cells: int, lanes: int) -> int:
    """Lanes per batched step: all lanes, or :data:`GROUP_WIDTH` (static).

    Lanes run for different numbers of steps, so stepping every lane until the longest stops
    computes ``lanes · max`` lane-steps. On large tables each iteration instead steps only the
    active lanes, in groups of :data:`GROUP_WIDTH` (a loop over ⌈active / width⌉ groups), about
    ``Σ steps`` lane-steps. Every lane takes exactly the steps it took in lock-step. When the
    active count is odd, the last group's spare slot steps an empty subgroup (its segment sums
    drop every cell unread) instead of a full step of an inactive lane.
    """
    return GROUP_WIDTH if grouped(num_cells) and lanes > GROUP_WIDTH else lanes


def seed_starts(num_cells: int, m: int, v_max: int) -> np.ndarray:
    """``(S, 4)`` int32 rows ``(a, v, b, w)``: the seeded lanes' starts (static), the subgroup
    ``attribute a = value v`` (``b = -1``) or ``a = v and b = w`` (a < b): every single value, and
    every pair of values of two attributes, within :data:`SEED_MAX_LANES`, on tables of at most
    :data:`SEED_MAX_CELLS` cells (else none). A random restart keeps each value with probability
    ρ and a constraint only if :data:`MIN_INIT_ROWS` rows remain, so it rarely starts inside a
    small subgroup; these starts make one- and two-constraint optima reachable."""
    singles = [(a, v, -1, 0) for a in range(m) for v in range(v_max)]
    if num_cells > SEED_MAX_CELLS or len(singles) > SEED_MAX_LANES:
        return np.zeros((0, 4), np.int32)
    pairs = [(a, v, b, w) for a in range(m) for b in range(a + 1, m)
             for v in range(v_max) for w in range(v_max)]
    rows = singles + pairs if len(singles) + len(pairs) <= SEED_MAX_LANES else singles
    return np.asarray(rows, np.int32).reshape(-1, 4)


def make_plan(problem: Problem, lanes: int, solver: bool | None = None,
              width: int | None = None) -> Plan:
    """The :class:`Plan` of a search of ``lanes`` lanes over ``problem`` (``solver``/``width``:
    the caller's choice where it makes one, else the table's)."""
    return Plan(
        aggregation=aggregation(problem.num_cells, problem.v_max),
        one_solver=one_solver(problem.num_cells) if solver is None else bool(solver),
        width=group_width(problem.num_cells, lanes) if width is None else int(width),
    )


def fast_compile(num_cells: int, num_replicates: int = 0,
                 max_replicates: int = FAST_REPLICATES) -> bool:
    """Whether a top-level program gets the fast-compiling options: ``num_cells ≤ SMALL_CELLS``
    and ``num_replicates ≤ max_replicates``."""
    return num_cells <= SMALL_CELLS and num_replicates <= max_replicates


def stack_width(k: int) -> int:
    """Columns of the stacked cell statistics ``[Phi | Y | n_cells | 0…]`` of ``k`` features:
    k + 2 rounded up to a multiple of :data:`STACK_ALIGN`."""
    return k + 2 + (-(k + 2)) % STACK_ALIGN


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
    """Cap on coordinate-ascent steps per restart: ``20·M + 50`` (:data:`STEPS_PER_ATTRIBUTE`,
    :data:`STEPS_BASE`).

    >>> default_max_steps(4)
    130
    """
    return STEPS_PER_ATTRIBUTE * num_attributes + STEPS_BASE


def search_args(problem: Problem, max_steps: int | None) -> tuple[Problem, int]:
    """``(cells, max_steps)`` as the top-level search programs take them: the problem without
    rows (one program for all row counts) and the step cap resolved (default ``20·M + 50``)."""
    m = problem.cell_codes.shape[1]
    steps = default_max_steps(m) if max_steps is None else int(max_steps)
    return dataclasses.replace(problem, row_cell=np.zeros(0, np.int32)), steps


@partial(jax.jit, static_argnames=("num_cells",))
def outcome_counts(y_rows: jax.Array, row_cell: jax.Array, num_cells: int) -> jax.Array:
    """Per-cell outcome counts ``Y_c = Σ_{i: row_cell[i]=c} y_i`` as float64 ``(num_cells,)``."""
    y = jnp.asarray(y_rows, dtype=jnp.float64)
    return jax.ops.segment_sum(y, jnp.asarray(row_cell, jnp.int32), num_segments=num_cells)


def cell_bucket(num_cells: int) -> int:
    """Padded cell count: the smallest ``2^k · {1, 1.25, 1.5, 1.75}`` ≥ ``num_cells`` (at least
    :data:`MIN_BUCKET`).

    Padding to these sizes (≤ 25% extra) lets data sets of similar size share one compilation.

    >>> [cell_bucket(c) for c in (1, 17, 100, 4097)]
    [16, 20, 112, 5120]
    """
    size = MIN_BUCKET
    while True:
        for f in BUCKET_QUARTERS:
            if size * f // 4 >= num_cells:
                return size * f // 4
        size *= 2


def pad_cells(problem: Problem, Phi, Y, num_cells: int):
    """Append empty cells (no rows, zero features) up to ``num_cells``: results are unchanged.

    Lets many small problems share one compiled scan (same shapes), e.g. in tests or when
    ``vmap``-ing over data sets. The empty cells' codes are ``V_max``, a value no attribute has,
    so the membership test keeps them out of every subgroup and the segment sums skip them
    unread.
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
    return pad_cells(problem, np.zeros((c, 1), np.float64), np.zeros(c, np.float64),
                     num_cells)[0]


def _pad_arrays(cell_codes, n_cells, Phi, Y, extra: int, code: int = 0):
    def pad(a, value=0):
        return jnp.concatenate([a, jnp.full((extra,) + a.shape[1:], value, a.dtype)])

    return pad(cell_codes, code), pad(n_cells), pad(Phi), pad(Y)


# One kept executable (``aot_jit``), not 8 eager ops compiled one by one in every process.
_pad_arrays = aot_jit(_pad_arrays, name="ofijax.scan.pad_arrays", static_argnums=(4, 5))
