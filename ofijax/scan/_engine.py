"""The Bias Scan engine's one import point: the array-level interface that FPR-/TPR-/IJDI-Scan and
the randomization tests build on, re-exported from the modules that own its parts. Everything
runs on arrays and needs float64 (wrap calls in ``with jax.enable_x64(True):``; the public entry
points in :mod:`ofijax.scan` do that).

Where each part lives
---------------------
* :mod:`._plan` -- the cell compression (:class:`Problem`), padding to shared shapes, the array
  result (:class:`RawScan`) and the static choices a search makes once (:class:`~._plan.Plan`),
  each constant named with its reason.
* :mod:`._sums` -- membership of cells in a subgroup and per-value sums (one-hot matmul or
  segment sum of the stacked statistics).
* :mod:`._step` -- the attribute step (exact best value set of one attribute) and the score.
* :mod:`._lanes` -- the lane search as ``init / step / terminate`` pure functions.
* :mod:`._programs` -- :func:`scan_arrays`, kept-executable programs (:class:`Programs`,
  :data:`SEARCH`) and the thread scheduler of a split search (:func:`split_search`).

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
score rose by more than :data:`IMPROVE_TOL` mark all attributes unvisited; mark this one visited;
stop when all are visited or after ``max_steps`` steps (then ``converged`` is False). Restarts are
a batch axis run in lock-step: restart 0 starts from the whole data, the others from a random
subgroup (ρ ~ U(0,1), attributes in random order, each value kept with probability ρ, the
constraint kept only if it excludes a value and ≥ :data:`MIN_INIT_ROWS` rows remain). ofijax adds
one *greedy* lane (``greedy=True``, default): steepest coordinate ascent from the whole data, which
escapes the noise constraints that a random first attribute locks in at near-zero penalty. All
lanes advance together: each iteration steps every active lane by :func:`attribute_step`, batched
over the lanes as written (not ``vmap``-ed): one batch, or groups of active lanes on large tables.
The best lane wins (ties: lowest index, restarts first).

Cost model (per lane-step; C cells, M attributes, K features, V = V_max):

* membership of the other constraints: O(C·M) elementwise (one packed-bit shift per code when
  V ≤ 64; no gathers);
* per-value sums: a masked one-hot matmul, O(C·V·K), for small tables
  (C·V < :data:`SEGMENT_MIN_WORK`), else one segment sum by code of the cell statistics
  (features, outcome and row counts side by side) with no V factor: O(C) index tests plus
  O(C_in·K) for the C_in cells that satisfy the other constraints;
* the solves: O(V·K) per Newton or halving step (three solves on 2V rows), independent of C.

On large tables (C ≥ :data:`GROUP_MIN_CELLS`) each iteration steps only the active lanes, in
groups of :data:`GROUP_WIDTH`, so a search costs about Σ_lanes steps lane-steps rather than
lanes · max steps. XLA:CPU runs a search program on one core, so on a multi-core CPU
``bias_scan`` steps the lanes of such a table on a thread per core, the threads taking turns
with them (:func:`split_search`, :func:`search_parts`; ``OFIJAX_SEARCH_THREADS`` caps them): a
lane's steps depend only on its own key, so the result is the one-program search's bit for bit.
Measured costs are in ``experiments/notes/scan_engine.md``.
"""

from __future__ import annotations

from ._basis import features
from ._plan import (
    FAST_REPLICATES,
    GROUP_MIN_CELLS,
    GROUP_WIDTH,
    IMPROVE_TOL,
    MIN_INIT_ROWS,
    SEGMENT_MIN_WORK,
    SMALL_CELLS,
    Problem,
    RawScan,
    cell_bucket,
    default_max_steps,
    make_problem,
    outcome_counts,
    pad_cells,
    pad_problem_cells,
    search_args,
    stack_width,
)
from ._programs import (
    SEARCH,
    TURN,
    Programs,
    scan_arrays,
    search_cells,
    search_cells_small,
    search_parts,
    split_search,
)
from ._step import Step, attribute_step, score_arrays
from ._sums import cell_mask, row_mask, stack_tail

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
    "GROUP_MIN_CELLS",
    "GROUP_WIDTH",
    "SEGMENT_MIN_WORK",
    "FAST_REPLICATES",
    "Programs",
    "SEARCH",
    "TURN",
    "split_search",
    "search_parts",
    "search_args",
    "search_cells",
    "search_cells_small",
]
