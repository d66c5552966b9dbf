"""Program management and the thread scheduler of the search: :func:`scan_arrays` (the jitted
search on cell arrays, the array-level entry point), :class:`Programs` (a function with its
executables kept on disk, default and fast-compiling), the top-level programs a first call meets
(:data:`SEARCH`; :data:`START`, :data:`RESUME`, :data:`STACK`, :data:`CELLS_IN` of a split
search), and :func:`split_search`, which runs the lanes of one search on several CPU threads in
turns with the same result bit for bit. The step functions live in :mod:`._lanes`; what is
chosen by benchmark here is in ``experiments/notes/scan_engine.md``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._jaxcache import aot_jit, compiler_options
from ofijax._progress import Notice
from ofijax._validation import is_tracer

from ._basis import Basis
from ._lanes import LANE_FIELDS, Lanes, init, lane_keys, num_seeds, run, search
from ._plan import (
    FAST_REPLICATES,
    GROUP_WIDTH,
    Problem,
    RawScan,
    aggregation,
    default_max_steps,
    fast_compile,
    grouped,
    one_solver,
)
from ._step import penalised_score
from ._sums import Prepared, cell_mask, codes_major, stack

__all__ = [
    "scan_arrays",
    "search_cells",
    "search_cells_small",
    "Programs",
    "SEARCH",
    "START",
    "STACK",
    "RESUME",
    "CELLS_IN",
    "TURN",
    "LAST_TURN",
    "search_parts",
    "split_search",
]

#: Shapes ``scan_arrays`` has already run in this process (for its progress notice only).
_COMPILED: set = set()


def scan_arrays(
    key, problem: Problem, Phi, Y, basis: Basis, *, penalty, num_restarts: int = 10,
    max_steps: int | None = None, greedy: bool = True, throughput: bool = False,
) -> RawScan:
    """Multi-start coordinate ascent (MDSS) over cell arrays; returns the best restart.

    Args:
      key: a PRNG key (restart r uses ``jax.random.split(key, num_restarts)[r]``; the seeded
        lanes a stream of their own, :func:`~._lanes.lane_keys`).
      problem: the cell compression (:func:`~._plan.make_problem`).
      Phi: ``(C, K)`` basis features (:func:`~._basis.features`).
      Y: ``(C,)`` outcome counts (:func:`~._plan.outcome_counts`).
      basis: the :class:`~._basis.Basis` (also fixes the direction).
      penalty: per listed value (traced, so changing it does not recompile).
      num_restarts: restarts, run in lock-step as a batch axis; restart 0 starts from all data.
        On tables of at most :data:`~._plan.SEED_MAX_CELLS` cells, seeded lanes run with them
        (:func:`~._plan.seed_starts`: from every single value and, where few, every pair of
        values of two attributes), after the restarts (ties go to the restarts) and before the
        greedy lane, so one- and two-constraint optima are reachable; a search with seeds is
        never worse than the same random restarts without them.
      max_steps: cap on attribute steps per restart (default ``20·M + 50``; traced, so changing
        it does not recompile).
      greedy: also run one steepest-ascent start from the whole data (an extra lane of
        :func:`~._lanes.search`: sweeps all attributes from the same base, moves to the best
        candidate while it improves), compared after the restarts (ties go to the restarts). An
        ofijax addition to MDSS: with a near-zero penalty and many attributes the random-order
        ascent of MDSS locks in noise constraints; the steepest start avoids that. It costs one
        lane, i.e. M - 1 iterations per move (M for the first sweep).
      throughput: compile for run time rather than compile time: for callers that run the same
        shape many times (randomization replicates). By default a table of at most
        :data:`~._plan.SMALL_CELLS` cells gets the fast-compiling program (one looped solver per
        step, :func:`ofijax._jaxcache.compiler_options`), whose run is slower.

    Returns:
      :class:`~._plan.RawScan` of the best restart; its score and log q are those its last
      attribute step computed for the final subgroup (the per-value sums of the cells added up
      by value, so they equal :func:`~._step.score_arrays`' direct sum over the cells to float64
      round-off, ~1e-13 relative). Starts are not scored (see :func:`~._lanes.init`), so with
      ``max_steps = 0`` the result is restart 0's start, the whole data, scored directly.
    """
    m = problem.cell_codes.shape[1]
    max_steps = default_max_steps(m) if max_steps is None else int(max_steps)
    # The jitted core sees only cell arrays (not row_cell), so its compilation is shared by all
    # data sets with the same (C, M, V_max, K).
    cells = dataclasses.replace(problem, row_cell=jnp.zeros(0, jnp.int32))
    small = one_solver(Phi.shape[0], throughput)
    args = (key, cells, Phi, Y, basis, penalty, max_steps, num_restarts, bool(greedy), small,
            max_steps == 0)
    if is_tracer(Phi):  # inside an outer jit/vmap: nothing runs now
        return search_cells(*args)
    shape = (tuple(Phi.shape), str(Phi.dtype), tuple(problem.cell_codes.shape), problem.v_max,
             basis.kind, num_restarts, bool(greedy), small, max_steps == 0)
    c, k = Phi.shape
    if shape in _COMPILED:
        msg = f"scan: searching {c:,} cells × {m} attributes"
    else:  # the first call for a shape compiles (seconds on CPU; the disk cache keeps it)
        msg = (f"scan: compiling the search for {c:,} cells × {m} attributes × {k} features "
               "(once per shape and process; cached on disk for later processes)")
    # Small problems (run time ≪ compile time) use the faster-compiling program.
    fn = search_cells_small if small else search_cells
    with Notice(msg):
        out = fn(*args)
        jax.block_until_ready(out)
    _COMPILED.add(shape)
    return out


def _search_cells(key, problem, Phi, Y, basis, penalty, max_steps, num_restarts,
                  greedy, solver, unstepped) -> RawScan:
    """The best lane's subgroup with the score and log q its last step computed (a search
    program holds no solver besides the step's); ``unstepped`` (static: ``max_steps == 0``, no
    lane steps): restart 0's start, the whole data, scored directly. Ties: the lowest lane."""
    penalty = jnp.asarray(penalty, Phi.dtype)
    keys = jax.random.split(key, num_restarts)
    ends = basis.endpoints()
    lanes = search(keys, problem, Phi, Y, basis, penalty, max_steps, greedy, ends, solver)
    best = jnp.argmax(lanes.score)
    mask, listed = lanes.mask[best], lanes.listed[best]
    if unstepped:
        score, t = penalised_score(problem, Phi, Y, basis, mask, listed, penalty, ends)
    else:
        score, t = lanes.score[best], lanes.log_q[best]
    return RawScan(mask=mask, listed=listed, score=score, log_q=t,
                   converged=jnp.all(lanes.converged), steps=lanes.steps)


#: :func:`_search_cells` jitted (``num_restarts``, ``greedy``, the solver choice and
#: ``unstepped`` static), with XLA's default options and with the fast-compiling ones.
search_cells = jax.jit(_search_cells, static_argnums=(7, 8, 9, 10))
search_cells_small = jax.jit(_search_cells, static_argnums=(7, 8, 9, 10),
                             compiler_options=compiler_options())


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
        max_replicates`` (default :data:`~._plan.FAST_REPLICATES`), else the default one."""
        return self.small if fast_compile(num_cells, num_replicates, max_replicates) else self.default


def _search_program(key, cells, Phi, Y, basis, penalty, max_steps, num_restarts, greedy):
    """:func:`scan_arrays` as one top-level program (``max_steps``, ``num_restarts`` and
    ``greedy`` static), and the ``(C,)`` :func:`~._sums.cell_mask` of the subgroup it found (the
    caller reads its rows as ``cells_in[row_cell]``, so no row-mask program is compiled);
    ``cells`` is a :class:`~._plan.Problem` without rows (``row_cell`` empty), so the program is
    shared by all row counts."""
    raw = scan_arrays(key, cells, Phi, Y, basis, penalty=penalty, num_restarts=num_restarts,
                      max_steps=max_steps, greedy=greedy)
    return raw, cell_mask(cells, raw.mask, raw.listed)


#: The top-level search (:func:`_search_program`: ``(RawScan, cells_in)``) of ``bias_scan`` and
#: of its Bernoulli replicates on CPU, with its executables kept on disk: a new process loads it
#: instead of tracing and lowering the search again (see ``ofijax._jaxcache.aot_jit``).
SEARCH = Programs(_search_program, "ofijax.scan.search", static_argnums=(6, 7, 8))


def _start_program(key, cells, stats, max_steps, num_restarts, greedy):
    """The start of a split search (:func:`split_search`): every lane's :func:`~._lanes.init`
    (:func:`~._lanes.lane_keys`: restart r's key ``jax.random.split(key, num_restarts)[r]``,
    then the seeded lanes') and the attribute-major codes
    its turns share with the stacked statistics ``stats`` (:func:`~._sums.prepare`'s two
    arrays)."""
    keys = lane_keys(jax.random.split(key, num_restarts), cells)
    k_init = jax.vmap(jax.random.split)(keys)[:, 0]
    codes_t = codes_major(cells)  # (stats is not returned: an input returned is copied)
    return init(k_init, cells, stats.dtype, max_steps, greedy, codes_t=codes_t,
                seeds=num_seeds(cells)), codes_t


def _resume_program(key, idx, state, prepared, cells, Phi, Y, basis, penalty, cap, max_steps,
                    num_restarts, greedy):
    """A turn of a split search (:func:`split_search`): :data:`~._plan.GROUP_WIDTH` restart
    lanes ``idx`` (their keys :func:`~._lanes.lane_keys` ``[idx]``) plus the greedy
    lane's slot when ``greedy``, in ``state``, stepped by :func:`~._lanes.run` for at most
    ``cap`` iterations and none after a lane stopped; returns the new state."""
    keys = lane_keys(jax.random.split(key, num_restarts), cells)
    k_steps = jax.vmap(jax.random.split)(keys[idx])[:, 1]
    return run(state, k_steps, cells, Phi, Y, basis, jnp.asarray(penalty, Phi.dtype), max_steps,
               greedy, basis.endpoints(), prepared=prepared, width=GROUP_WIDTH, cap=cap)


#: :func:`_start_program`, :func:`~._sums.stack`, :func:`_resume_program` and
#: :func:`~._sums.cell_mask` with their executables kept on disk (one turn program serves every
#: turn of every thread).
START = aot_jit(_start_program, name="ofijax.scan.start", static_argnums=(3, 4, 5))
STACK = aot_jit(stack, name="ofijax.scan.stack")
RESUME = aot_jit(_resume_program, name="ofijax.scan.resume", static_argnums=(10, 11, 12))
CELLS_IN = aot_jit(cell_mask, name="ofijax.scan.cells_in")
#: Iterations of a turn (:func:`split_search`) while lanes wait for a thread, and once every
#: active lane has one. A turn also ends when one of its lanes stops; between turns a thread can
#: take other lanes, so the cores stay busy to the end. Each turn is a call of its own, so long
#: turns win (``experiments/bench_scan_shapes.py``; notes: "turns").
TURN = 64
LAST_TURN = 16

_POOL: list = []  # [(threads, executor)]: the thread pool of split searches, made on first use
_POOL_LOCK = threading.Lock()


def search_parts(num_cells: int, num_restarts: int, greedy: bool, max_steps: int,
                 v_max: int | None = None) -> int:
    """How many threads :func:`split_search` runs a top-level search on: 1 (one program) on an
    accelerator, on one core, without steps, for tables of fewer than
    :data:`~._plan.GROUP_MIN_CELLS` cells, or (given ``v_max``) for tables whose steps sum by
    one-hot matmul; else the usable CPU cores (``OFIJAX_SEARCH_THREADS`` overrides), at most one
    per two lanes.

    XLA:CPU runs a search program on one core (its loops hold small arrays and run
    sequentially), so on a multi-core CPU the lanes, which are independent, run faster on their
    own threads. Only tables whose search steps its lanes in groups of
    :data:`~._plan.GROUP_WIDTH` are split: there a lane's arithmetic does not depend on which
    lanes share its program, so the result is the same bit for bit on any number of cores; a
    smaller table steps all its lanes as one batch, whose size a split would change.
    """
    if jax.default_backend() != "cpu" or not grouped(num_cells) or max_steps <= 0:
        return 1
    if v_max is not None and aggregation(num_cells, v_max) != "segment":
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
    :data:`~._plan.GROUP_WIDTH` active lanes no other thread holds (the greedy lane first, then
    the restarts in order; as many as keeps every free thread busy), steps them for a turn
    (:func:`_resume_program`: at most :data:`TURN` iterations, ending early when one of them
    stops) and puts them back. A lane's steps depend only on its own key and state, and each is
    computed in a group of :data:`~._plan.GROUP_WIDTH` lanes as in the one-program search, so
    which thread or partner steps it changes nothing; the best lane (the first of the highest
    score, lanes in :func:`~._lanes.search`'s order) is picked here. ``stats``: the stacked cell
    statistics ``[Phi | Y | n | 0…]`` when the caller has them (``features(...,
    tail=stack_tail(...))``), in which case ``Phi`` is not read; else they are stacked here
    (:data:`STACK`). A table whose steps sum by one-hot matmul (no stacked statistics to share)
    runs as one :data:`SEARCH` program. Returns NumPy arrays."""
    if aggregation(cells.num_cells, cells.v_max) != "segment":
        if stats is not None:  # the features are the stacked statistics' first columns
            Phi = np.asarray(stats)[:, :basis.num_features]
        out, cells_in = SEARCH.pick(cells.num_cells)(key, cells, Phi, Y, basis, float(penalty),
                                                     max_steps, num_restarts, bool(greedy))
        return jax.tree.map(np.asarray, out), np.asarray(cells_in)
    starts = num_restarts + num_seeds(cells)  # the lanes before the greedy one
    lanes = starts + bool(greedy)
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] < parts:
            _POOL[:] = [(parts, ThreadPoolExecutor(parts, thread_name_prefix="ofijax-search"))]
        pool = _POOL[0][1]
    with jax.enable_x64(True):  # the caller's thread (x64 is thread-local)
        if stats is None:
            stats = STACK(cells, Phi, Y)
        start, codes_t = START(key, cells, stats, max_steps, num_restarts, bool(greedy))
        prepared = Prepared(stats=stats, codes_t=codes_t)
        # every lane's state by field, updated after each turn
        state = {f: np.array(x) for f, x in start._asdict().items()}
    active = state["active"]  # updated in place
    # the turns read the cells through `prepared` only: zero-row stand-ins for Phi and Y give
    # the feature count and dtype (one program for every table of the bucket)
    no_phi, no_y = np.zeros((0, basis.num_features)), np.zeros(0)
    order = ([lanes - 1] if greedy else []) + list(range(starts))
    held = np.zeros(lanes, bool)
    turn = threading.Condition()
    running = [0]
    failed: list = []

    def take() -> tuple[list[int], int]:  # (under `turn`) this thread's next lanes and cap
        free = [i for i in order if active[i] and not held[i]]
        if not free:
            return [], 0
        threads_free = parts - running[0]
        cap = TURN if np.sum(active) > parts * GROUP_WIDTH else LAST_TURN
        return free[:min(GROUP_WIDTH, -(-len(free) // threads_free))], cap

    def work(_):
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
                    restarts = [i for i in mine if i < starts]
                    idx = np.zeros(GROUP_WIDTH, np.int32)
                    idx[:len(restarts)] = restarts
                    slots = list(idx) + ([lanes - 1] if greedy else [])
                    inp = {f: x[slots] if f in LANE_FIELDS else x for f, x in state.items()}
                    on = np.zeros(len(slots), bool)  # the slots of this turn's lanes
                    on[:len(restarts)] = True
                    on[-1] |= greedy and lanes - 1 in mine
                    inp["active"] = inp["active"] & on
                try:
                    out = RESUME(key, idx, Lanes(**inp), prepared, cells, no_phi, no_y, basis,
                                 float(penalty), cap, max_steps, num_restarts, bool(greedy))
                    out = {f: np.asarray(x) for f, x in out._asdict().items()}
                except BaseException:
                    with turn:
                        failed.append(True)
                        running[0] -= 1
                        turn.notify_all()
                    raise
                with turn:
                    for f in Lanes._fields:
                        if f in LANE_FIELDS:
                            for j, lane in enumerate(slots):
                                if on[j]:
                                    state[f][lane] = out[f][j]
                        elif greedy and on[-1]:
                            state[f] = out[f]
                    held[mine] = False
                    running[0] -= 1
                    turn.notify_all()

    list(pool.map(work, range(parts)))
    best = int(np.argmax(state["score"]))
    with jax.enable_x64(True):
        cells_in = np.asarray(CELLS_IN(cells, state["mask"][best], state["listed"][best]))
    converged = np.all(state["visited"], axis=1)
    return (RawScan(mask=state["mask"][best], listed=state["listed"][best],
                    score=state["score"][best], log_q=state["log_q"][best],
                    converged=np.all(converged), steps=state["steps"]), cells_in)
