"""Public Bias Scan entry points: :func:`bias_scan` and :func:`score_subset`.

Owns their validation (once per call), the encoding of rows into cells, the choice of search
(exhaustive where the space is small, else multi-start coordinate ascent), the first-call programs
of the cell statistics, top-k and randomization tests, and the assembly of their
:class:`~ofijax.scan.ScanResult`.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._jaxcache import aot_enabled
from .._progress import Notice
from .._validation import (
    align_pandas,
    check_binary,
    check_choice,
    check_probabilities,
    device_array,
)
from ._alg1 import make_params
from ._basis import (
    EXACT_MAX_VALUES,
    Basis,
    RowLayout,
    features,
    layout_group,
    make_basis,
    make_layout,
)
from ._checks import (
    DEFAULT_Q_BOUNDS,
    check_random_options,
    check_scan_options,
    resolve_data_alias,
)
from ._encode import DEFAULT_MAX_VALUES, Encoded, encode_data
from ._engine import (
    SEARCH,
    Programs,
    cell_bucket,
    make_problem,
    outcome_counts,
    pad_cells,
    pad_problem_cells,
    row_mask,
    scan_arrays,
    score_arrays,
    search_args,
    search_parts,
    split_search,
    stack_tail,
)
from ._exhaustive import (
    EXHAUSTIVE_MAX_SUBGROUPS,
    chunk_size,
    exhaustive_feasible,
    make_enumeration,
    num_subgroups,
)
from ._programs import CELLS_IN
from ._randomization import NullSpec, bias_scan_null_scores, p_value, pad_problem
from ._result import UNBOUNDED_TEXT, ScanResult, cap_reached, subset_dict, subset_text
from ._topk import StepSpec, observed_steps, steps_null_scores

__all__ = ["ScanResult", "bias_scan", "score_subset", "DEFAULT_Q_BOUNDS"]


# ---------------------------------------------------------------------------------------------
# Inputs


def _prepare(data, observations, expectations, value_labels, bins=None,
             max_values=DEFAULT_MAX_VALUES):
    # pandas arguments aligned on their index (same labels in another order: reordered to the
    # first pandas argument's rows) or refused, never matched by position
    aligned = align_pandas(data=data, observations=observations, expectations=expectations)
    data, observations, expectations = aligned.values()
    enc = encode_data(data, value_labels, bins=bins, max_values=max_values)
    n = enc.codes.shape[0]
    y = check_binary(observations, "observations")
    p = check_probabilities(expectations, "expectations")
    if y.ndim != 1 or p.ndim != 1:
        raise ValueError(
            "observations, expectations: must be 1-D (one value per row); got shapes "
            f"{y.shape} and {p.shape}."
        )
    if not (y.shape[0] == p.shape[0] == n):
        raise ValueError(
            f"length mismatch: data has {n} rows, observations {y.shape[0]}, expectations "
            f"{p.shape[0]}; pass one value per row in each."
        )
    if n and np.all((p == 0) | (p == 1)):
        raise ValueError(
            "expectations: every value is 0 or 1, i.e. binary predictions, not probabilities. "
            "Bias Scan compares outcomes with *expected probabilities* p_i (e.g. a model's "
            "predicted probabilities): with p ∈ {0, 1} a row either cannot deviate or deviates "
            "without bound, so nothing meaningful is scored. To audit binary predictions against "
            "true labels use fpr_scan / tpr_scan (or ijdi_scan)."
        )
    return enc, y, p


def _choose_basis(p: np.ndarray, kind: str, direction: str, q_bounds) -> Basis:
    if kind == "auto":
        many = np.unique(p[:4096]).size > EXACT_MAX_VALUES  # cheap early exit for continuous p
        kind = "chebyshev" if many or np.unique(p).size > EXACT_MAX_VALUES else "exact"
    if kind == "exact":
        distinct = np.unique(p)
        if distinct.size > 4096:
            raise ValueError(
                f"basis: 'exact' needs few distinct expectations; got {distinct.size}. "
                "Use basis='chebyshev' (or 'auto')."
            )
        return make_basis("exact", direction=direction, q_bounds=q_bounds, p_values=distinct)
    return make_basis("chebyshev", direction=direction, q_bounds=q_bounds)


def _problem_basis(enc: Encoded, p, kind, direction, q_bounds):
    n_values = np.array([len(lab) for lab in enc.labels], dtype=np.int32)
    problem = make_problem(enc.codes, n_values)
    basis = _choose_basis(p, kind, direction, q_bounds)
    layout = None
    if basis.kind == "chebyshev":
        layout = make_layout(np.asarray(problem.row_cell), problem.num_cells, layout_group(basis))
    return problem, basis, layout


def _unpadded(enc: Encoded, y, p, kind, direction, q_bounds):
    problem, basis, layout = _problem_basis(enc, p, kind, direction, q_bounds)
    return (problem, *_features_counts(problem, basis, layout, y, p), basis)


def _features_counts(problem, basis, layout, y, p):
    """The cell features ``Phi`` and outcome counts ``Y`` of the rows."""
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis, layout)
    return Phi, outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)


def _cells_program(p, y, problem, basis, slot_row, block_cell, group, num_cells, stacked):
    layout = None if slot_row is None else RowLayout(slot_row, block_cell, group)
    # the features and counts summed straight into the padded cells (empty ones: zero), not
    # copied onto padded arrays afterwards (a copy and a fresh array; experiments/notes/scans.md)
    padded = pad_problem_cells(problem, num_cells)
    Y = outcome_counts(jnp.asarray(y), problem.row_cell, num_cells)
    # stacked: the search's statistics [Phi | Y | n | 0…], summed as one array
    tail = stack_tail(padded, Y, basis.num_features) if stacked else None
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis, layout,
                   total=num_cells, tail=tail)
    return padded, Phi, Y


# Features, outcome counts and padding as one program (their jitted functions, called inside it),
# with its executable kept on disk (``aot_jit``): one load instead of several traced programs.
# Tables of at most SMALL_CELLS (padded) cells get the fast-compiling options, as their search
# does (chosen by the measurements in experiments/notes/scans.md).
_CELLS = Programs(_cells_program, "ofijax.scan.cells", static_argnums=(6, 7, 8))


def _padded_cells(problem, basis, layout, y, p, stacked=False):
    """``pad_cells(problem, Phi, Y, cell_bucket(C))`` with ``Phi = features(p, ...)`` and
    ``Y = outcome_counts(y, ...)``, through one ahead-of-time program (the fast-compiling one for
    a small table; the same options, through ``jax.jit``, when executables are not kept).
    ``stacked``: the stacked statistics of a split search (``[Phi | Y | n | 0…]``) in place of
    ``Phi``, summed into their own array (at 100k × 4 × 50 the search's start no longer copies
    the features into a fresh 44 MB array)."""
    lay = (None, None, 0) if layout is None else (layout.slot_row, layout.block_cell,
                                                   layout.group)
    c = cell_bucket(problem.num_cells)
    return _CELLS.pick(c)(p, y, problem, basis, *lay, c, bool(stacked))


def _split_parts(problem, *, num_restarts, max_steps, greedy=True) -> int:
    """The threads :func:`_search` will split the search of ``problem`` (padded or not) over
    (:func:`search_parts`; 1: one program, also for a table whose steps sum by one-hot matmul,
    which :func:`split_search` would run as one program anyway)."""
    steps = search_args(problem, max_steps)[1]
    return search_parts(cell_bucket(problem.num_cells), num_restarts, greedy, steps,
                        v_max=problem.v_max)


def _default_key(key, num_samples, num_replicates):
    """``key=None`` without replicates: ``jax.random.key(0)`` built from its key data (no
    compiled program; only for the default threefry implementation, else ``None`` as given)."""
    def zero(x):
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x == 0

    if key is not None or not zero(num_samples) or not (num_replicates is None
                                                          or zero(num_replicates)):
        return key  # anything else is checked (and refused) by check_random_options
    if jax.config.jax_default_prng_impl != "threefry2x32":
        return None
    return jax.random.wrap_key_data(np.zeros(2, np.uint32), impl="threefry2x32")


def _arrays(enc: Encoded, y, p, kind, direction, q_bounds):
    """``(problem, Phi, Y, basis)`` with cells padded to a :func:`cell_bucket` size."""
    problem, Phi, Y, basis = _unpadded(enc, y, p, kind, direction, q_bounds)
    return (*pad_cells(problem, Phi, Y, cell_bucket(problem.num_cells)), basis)


# ---------------------------------------------------------------------------------------------
# The top-level search: one ahead-of-time program per shape (first calls in new processes)


_SEARCHED: set = set()  # shapes searched in this process (for the progress notice only)


def _search(key, problem, Phi, Y, basis, *, penalty, num_restarts, max_steps, greedy=True,
            stats=None):
    """:func:`scan_arrays` on a padded problem, through the ahead-of-time programs: ``(RawScan,
    rows)``, ``rows`` the ``(N,)`` bool NumPy mask of the found subgroup's rows. ``stats``: the
    stacked statistics (``_padded_cells(..., stacked=True)``) of a search split over the cores,
    given instead of ``Phi``."""
    m = problem.cell_codes.shape[1]
    # the search sees only cell arrays, so its program is shared by all row counts
    cells, max_steps = search_args(problem, max_steps)
    c, k = problem.num_cells, basis.num_features
    parts = _split_parts(problem, num_restarts=num_restarts, max_steps=max_steps, greedy=greedy)
    if stats is not None and parts == 1:
        raise ValueError("stats: only for a search split over the cores")
    if not aot_enabled() and parts == 1:  # no executables kept (cache off, OFIJAX_AOT=0)
        raw = scan_arrays(key, problem, Phi, Y, basis, penalty=penalty,
                          num_restarts=num_restarts, max_steps=max_steps, greedy=greedy)
        return raw, np.asarray(row_mask(problem, raw.mask, raw.listed))
    shape = (c, k, m, problem.v_max, basis.kind, num_restarts, max_steps, bool(greedy))
    kept = "the executable is kept on disk for later processes" if aot_enabled() else "per process"
    msg = (f"scan: searching {c:,} cells × {m} attributes" if shape in _SEARCHED else
           f"scan: compiling the search for {c:,} cells × {m} attributes × {k} features (once "
           f"per shape; {kept})")
    with Notice(msg):
        if parts > 1:  # the lanes as concurrent parts, one per core (same results)
            out, cells_in = split_search(key, cells, Phi, Y, basis, penalty, max_steps,
                                         num_restarts, greedy, parts, stats=stats)
        else:
            out, cells_in = SEARCH.pick(c)(key, cells, Phi, Y, basis, float(penalty), max_steps,
                                           num_restarts, bool(greedy))
            jax.block_until_ready(out)
    _SEARCHED.add(shape)
    # the rows of the found subgroup: its cells' membership (computed in the search program)
    # read at each row's cell, a NumPy gather instead of a row-mask program to compile
    return out, np.asarray(cells_in)[np.asarray(problem.row_cell)]


# ---------------------------------------------------------------------------------------------
# Results


def _describe(subset, total, score, q, obs, exp, direction, unbounded, q_bounds, p_val, search):
    if not score > 0:
        return ("no subgroup detected: no subgroup's outcomes deviate from their expectations in "
                f"the {direction} direction enough to score above 0 ({search} search)")
    more = "more" if direction == "positive" else "less"
    text = (f"{subset_text(subset)} ({total} rows): outcome 1 occurs {more} often than the "
            f"expectations predict — observed rate {obs:.3f} vs expected {exp:.3f} (odds ×{q:.3g}); "
            f"score {score:.2f} ({search} search)")
    if not math.isnan(p_val):
        text += f", p = {p_val:.3g}"
    if unbounded:
        what, short = (("every row of S has outcome 1", "every row positive")
                       if direction == "positive" else
                       ("no row of S has outcome 1", "every row negative"))
        cap = q_bounds[1] if direction == "positive" else q_bounds[0]
        text += "; " + UNBOUNDED_TEXT.format(what=what, cap=cap, score=score, short=short)
    return text


def _bias_result(enc, rows, mask, listed, score, log_q, converged, y, p, *, direction, q_bounds,
                 search, p_val=math.nan, null=None, warn=True):
    rows = np.asarray(rows, bool)
    score = float(score)
    n_s = int(rows.sum())
    obs = float(y[rows].mean()) if n_s else math.nan
    exp = float(p[rows].mean()) if n_s else math.nan
    unbounded = score > 0 and cap_reached(log_q, q_bounds, direction)
    if warn and score > 0:
        bad = rows & ((p == 0) & (y == 1) if direction == "positive" else (p == 1) & (y == 0))
        if bad.any():
            lim, cap = (("0", "q_hi") if direction == "positive" else ("1", "q_lo"))
            warnings.warn(
                f"bias_scan: the subgroup holds {int(bad.sum())} row(s) with expectation {lim} but "
                f"outcome {1 - int(lim)}; each adds |log {cap}| to the score, which therefore "
                f"depends on q_bounds={tuple(q_bounds)}. Clip the expectations away from 0 and 1 "
                "(e.g. numpy.clip(p, 1e-6, 1 - 1e-6)) or drop those rows.",
                RuntimeWarning, stacklevel=3)
    q = float(np.exp(float(log_q))) if score > 0 else 1.0
    subset = subset_dict(enc, mask, listed, normalize=True)
    return ScanResult(
        subset=subset,
        score=score,
        q=q,
        size=n_s,
        mask=rows,
        converged=bool(converged),
        listed=subset_dict(enc, mask, listed, normalize=False),
        p_value=p_val,
        null_scores=null,
        total_size=n_s,
        description=_describe(subset, n_s, score, q, obs, exp, direction, unbounded, q_bounds,
                              p_val, search),
        observed_rate=obs,
        expected_rate=exp,
        unbounded=bool(unbounded),
        search=search,
        bins=dict(enc.edges or {}),
    )


# ---------------------------------------------------------------------------------------------
# Public functions


def _check_bias_choices(direction, basis, search=None):
    check_choice(direction, "direction", ("positive", "negative"))
    check_choice(basis, "basis", ("auto", "exact", "chebyshev"))
    if search is not None:
        check_choice(search, "search", ("auto", "exhaustive", "coordinate_ascent"))


def bias_scan(
    data=None,
    observations=None,
    expectations=None,
    *,
    direction: str = "positive",
    penalty: float = 1e-17,
    num_restarts: int = 10,
    key=None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    basis: str = "auto",
    max_steps: int | None = None,
    value_labels=None,
    num_samples: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    search: str = "auto",
    top_k: int | None = None,
    bins=None,
    max_values: int | None = DEFAULT_MAX_VALUES,
    group=None,
    num_replicates: int | None = None,
) -> ScanResult:
    r"""Bias Scan (MDSS): the subgroup whose outcomes deviate most from their expectations.

    Each row i has categorical attributes, an outcome :math:`y_i \in \{0,1\}` and an expectation
    :math:`p_i \in [0,1]` (a probability, e.g. a model's predicted probability — binary 0/1
    predictions are refused: use :func:`fpr_scan` / :func:`tpr_scan` for those). Under H1(S) the
    odds inside subgroup S are multiplied by q; the score is the Bernoulli log-likelihood ratio
    maximised over q on the requested side of 1, minus the penalty times the number of values
    listed over the constrained attributes:

    .. math::

        F(S) = \max_{q} \sum_{i \in S} \bigl[y_i \log q - \log(1 - p_i + q\,p_i)\bigr]
               - \lambda \sum_{m\ \mathrm{constrained}} |V_m(S)|

    with :math:`q \in [1, q_{hi}]` for ``direction="positive"`` (outcome 1 more frequent than
    expected; AIF360's ``overpredicted=False``) and :math:`q \in [q_{lo}, 1]` for ``"negative"``.

    Search. ``search="exhaustive"`` scores *every* subgroup (``Π_m (2^{V_m} − 1)`` of them, e.g.
    11,907 for COMPAS's five IJDI attributes) in vectorized chunks and returns the global optimum
    (see :mod:`ofijax.scan._exhaustive`); ``"coordinate_ascent"`` is MDSS's multi-start local
    search (restarts as one batch, see :mod:`ofijax.scan._engine`), whose ``converged`` only means
    that every restart reached a *local* optimum, not the global one. On tables of at most
    4,096 cells it also starts from every single value and, where they are few (at most 64
    starts in all), every pair of values of two attributes, so one- and two-constraint optima
    are reachable: on 150 random small tables (3 attributes × 3 values, 14–80 rows, penalty
    0.1–1) it fell below the brute-force optimum on 4 with the default 10 restarts (2.7%; 95%
    upper bound 6.7%), none reporting "no subgroup" while one scores above 0
    (``experiments/scan_miss_rate.py``; FPR-Scan's coordinate ascent: 1.3% at 10 restarts, 0 of
    150 at 50; without the seeded starts 13% and 11%). ``"auto"`` (default) enumerates when there are at most 1e6
    subgroups and the work (subgroups × occupied cells × (features + attributes)) is at most 4e9,
    and otherwise runs coordinate ascent; ``result.search`` says which ran and
    ``result.certified`` whether the result is the global optimum. Computation is
    in float64 (inside ``jax.enable_x64(True)``) whatever the global JAX setting.

    Args:
      data: DataFrame of categorical columns (string, category, int, bool, or integral float), or a
        2-D array (columns named 0..M-1; with ``value_labels`` its entries are integer codes).
        ``group=`` is accepted as an alias. pandas arguments (``data``, ``observations``,
        ``expectations``) are aligned on their index, never matched by position: the same labels
        in another order are reordered to the first pandas argument's rows; any other
        difference is a ``ValueError`` naming the argument.
      observations: binary outcomes y (0/1), one per row.
      expectations: probabilities p in [0, 1], one per row (not all 0/1).
      direction: ``"positive"`` (q > 1) or ``"negative"`` (q < 1).
      penalty: λ ≥ 0 per listed value (AIF360 default 1e-17; the IJDI code uses 0.1).
      num_restarts: number of coordinate-ascent restarts (≥ 1); restart 0 starts from all data.
      key: PRNG key or int seed. Without a randomization test it only breaks the restarts' ties
        (default ``jax.random.key(0)``: same call, same result); with ``num_samples > 0`` it is
        required.
      q_bounds: bracket for q (default (1e-6, 1e6); AIF360 parity: (1e-3, 1e3)). When every row
        of a subgroup has y = 1 the likelihood increases without bound and q stops at the bracket
        end: the result is flagged ``unbounded`` (its score measures the bracket).
      basis: ``"auto"`` (exact when p has ≤ 64 distinct values, else Chebyshev), ``"exact"`` or
        ``"chebyshev"``; the Chebyshev basis is accurate to ~1e-13 per row (see ``_basis``).
      max_steps: cap on coordinate-ascent steps per restart (default 20·M + 50).
      value_labels: optional labels per column for integer-coded array input.
      num_samples: R ≥ 0 randomization replicates for a search-aware p-value (0: no test,
        ``p_value`` is NaN). Each replicate reruns the whole search on null data and
        ``p_value = (1 + #{F* ≥ F}) / (R + 1)``. (``num_replicates`` is its deprecated name.)
      null: ``"bernoulli"`` (y* ~ Bernoulli(p), Bias Scan's parametric null) or ``"permutation"``
        (attribute rows permuted relative to (y, p); exact under exchangeability).
      replicate_chunk: replicates per batch (bounds memory; default chosen from the data size).
      search: ``"auto"``, ``"exhaustive"`` or ``"coordinate_ascent"`` (above).
      top_k: k ≥ 1: also find the next subgroups, each by rescanning with the earlier finds' rows
        removed; ``result.top`` holds the k results (fewer if a rescan finds nothing), each with a
        family-wise p-value from the same replicates (each replicate runs all k steps; its
        statistic is the largest of its k scores). ``None`` (default): one subgroup.
      bins: ``None``, an int k ≥ 2 (quantile-bin every numeric column that is continuous or has
        more than ``max_values`` values) or ``{column: k or edges}``; the edges are in
        ``result.bins``.
      max_values: columns with more distinct values are refused unless binned (default 64;
        ``None``: no limit).
      group: alias of ``data``.
      num_replicates: deprecated name of ``num_samples``.

    Returns:
      :class:`ScanResult`, whose ``description`` says in words which rows deviate and how.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import bias_scan
      >>> df = pd.DataFrame({"sex": ["F", "M"] * 100,
      ...                    "age": ["young", "old"] * 50 + ["old", "young"] * 50})
      >>> y = (np.arange(200) % 3 == 0).astype(int)          # base rate 1/3 ...
      >>> young_men = ((df["sex"] == "M") & (df["age"] == "young")).to_numpy()
      >>> y[young_men] = np.arange(50) % 4 != 0              # ... but 3/4 for young men
      >>> res = bias_scan(df, y, np.full(200, 1 / 3), penalty=0.1)
      >>> res.subset, res.size, round(res.score, 3), round(res.q, 2), res.search
      ({'sex': ('M',), 'age': ('young',)}, 50, 17.067, 5.69, 'exhaustive')
      >>> print(res.description)
      sex in {M} and age in {young} (50 rows): outcome 1 occurs more often than the expectations predict — observed rate 0.740 vs expected 0.333 (odds ×5.69); score 17.07 (exhaustive search)
    """
    data = resolve_data_alias(data, group)
    _check_bias_choices(direction, basis, search)
    opts = check_scan_options(penalty=penalty, q_bounds=q_bounds, num_restarts=num_restarts,
                              max_steps=max_steps, top_k=top_k)
    rnd = check_random_options(key=_default_key(key, num_samples, num_replicates),
                               num_samples=num_samples, num_replicates=num_replicates,
                               null=null, replicate_chunk=replicate_chunk)
    enc, y, p = _prepare(data, observations, expectations, value_labels, bins, max_values)
    n = enc.codes.shape[0]
    common = dict(direction=direction, q_bounds=opts.q_bounds)
    with jax.enable_x64(True):
        problem, b, layout = _problem_basis(enc, p, basis, direction, opts.q_bounds)
        n_values = np.asarray(problem.n_values)
        if search == "auto":
            search = ("exhaustive" if exhaustive_feasible(n_values, problem.num_cells,
                                                          b.num_features)
                      else "coordinate_ascent")
        elif search == "exhaustive" and num_subgroups(n_values) > EXHAUSTIVE_MAX_SUBGROUPS:
            raise ValueError(
                f"search: 'exhaustive' enumerates every subgroup; these attributes have "
                f"{num_subgroups(n_values):.3g} (more than {EXHAUSTIVE_MAX_SUBGROUPS:g}). Use "
                "search='coordinate_ascent' (or 'auto'), or bin / group values."
            )
        if search == "coordinate_ascent" and opts.top_k is None:
            # the first-call path: two ahead-of-time programs (cells; search and its rows)
            split = _split_parts(problem, num_restarts=opts.num_restarts,
                                 max_steps=opts.max_steps) > 1
            padded, Phi_p, Y_p = _padded_cells(problem, b, layout, y, p, stacked=split)
            raw, rows = _search(rnd.key, padded, None if split else Phi_p, Y_p, b,
                                penalty=opts.penalty, num_restarts=opts.num_restarts,
                                max_steps=opts.max_steps, stats=Phi_p if split else None)
            res = _bias_result(enc, rows, np.asarray(raw.mask), np.asarray(raw.listed), raw.score,
                               raw.log_q, raw.converged, y, p, search=search, **common)
            if rnd.num_samples:
                rt = bias_scan_null_scores(
                    rnd.key, padded, b, y, p, penalty=opts.penalty,
                    num_restarts=opts.num_restarts, max_steps=opts.max_steps,
                    num_replicates=rnd.num_samples, null=rnd.null,
                    replicate_chunk=rnd.replicate_chunk, observed_score=res.score)
                res = _bias_result(enc, rows, np.asarray(raw.mask), np.asarray(raw.listed),
                                   raw.score, raw.log_q, raw.converged, y, p, search=search,
                                   p_val=rt.p_value, null=rt.null_scores, warn=False, **common)
            return res
        # exhaustive search and/or top-k: the k-step driver (k = 1 without top_k), which builds
        # its own per-row data (no cell features needed here)
        data_p = pad_problem(problem, y, p)
        enum, spec_kw = None, {}
        if search == "exhaustive":
            enum = make_enumeration(n_values, problem.v_max)
            num = num_subgroups(n_values)
            spec_kw = dict(enum_num=num, enum_chunk=chunk_size(
                num, data_p.problem.num_cells, len(n_values), b.num_features))
        k = opts.top_k or 1
        spec = StepSpec(NullSpec("bias", rnd.null, opts.num_restarts, opts.max_steps), k,
                        search, **spec_kw)
        params = make_params(penalty=opts.penalty, eps=0.0)
        outs, valids = observed_steps(spec, rnd.key, data_p.y, data_p.p, data_p.valid,
                                      data_p.row_cell, data_p.problem, b, params, enum)
        outs = jax.tree.map(np.asarray, outs)
        valids = np.asarray(valids)[:, :n]
        null_s, bad = steps_null_scores(rnd.key, spec, data_p, data_p.p, b, params, enum,
                                        num_samples=rnd.num_samples,
                                        replicate_chunk=rnd.replicate_chunk)
        if bad:
            warnings.warn(f"randomization test: {bad} of {rnd.num_samples} replicates hit the "
                          "step cap max_steps.", RuntimeWarning, stacklevel=2)
        results = []
        for j in range(k):
            if j > 0 and not outs.score[j] > 0:
                break
            rows = np.asarray(CELLS_IN(data_p.problem, device_array(outs.mask[j]),
                                       device_array(outs.listed[j])))[np.asarray(
                                            data_p.row_cell)[:n]] & valids[j]
            results.append(_bias_result(
                enc, rows, outs.mask[j], outs.listed[j], outs.score[j], outs.log_q[j],
                outs.converged[j], y, p, search=search, warn=(j == 0),
                p_val=p_value(float(outs.score[j]), null_s) if rnd.num_samples else math.nan,
                null=null_s if rnd.num_samples else None, **common))
        first = results[0]
        return first._replace(top=tuple(results)) if opts.top_k is not None else first


def subset_arrays(enc: Encoded, subset: dict, v_max: int):
    """``(mask (M, v_max), listed (M,))`` of a subgroup given as ``{column: values}``."""
    if not isinstance(subset, dict):
        raise ValueError(
            f"subset: must be a dict {{column: values}}; got {type(subset).__name__}."
        )
    m = len(enc.columns)
    mask = np.zeros((m, v_max), dtype=bool)
    listed = np.zeros(m, dtype=bool)
    for m_i, lab in enumerate(enc.labels):
        mask[m_i, : len(lab)] = True
    index = {c: i for i, c in enumerate(enc.columns)}
    for col, vals in subset.items():
        if col not in index:
            raise ValueError(f"subset: unknown column {col!r}; columns are {enc.columns!r}.")
        m_i = index[col]
        if isinstance(vals, str) or not hasattr(vals, "__iter__"):
            vals = [vals]
        vals = list(vals)
        if not vals:
            raise ValueError(f"subset: column {col!r} lists no values; list at least one.")
        labels = list(enc.labels[m_i])
        row = np.zeros(v_max, dtype=bool)
        for v in vals:
            hits = [j for j, lab in enumerate(labels) if lab == v]
            if not hits:
                raise ValueError(
                    f"subset: value {v!r} of column {col!r} does not occur in the data; "
                    f"observed values are {labels[:20]!r}."
                )
            row[hits[0]] = True
        mask[m_i] = row
        listed[m_i] = True
    return mask, listed


def score_subset(
    data=None,
    observations=None,
    expectations=None,
    subset: dict | None = None,
    *,
    direction: str = "positive",
    penalty: float = 1e-17,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    basis: str = "auto",
    value_labels=None,
    bins=None,
    max_values: int | None = DEFAULT_MAX_VALUES,
    group=None,
) -> ScanResult:
    """Score a given subgroup with the same score as :func:`bias_scan`.

    ``subset`` maps column → allowed values (a scalar means one value); unlisted columns are
    unconstrained; every listed value counts toward the penalty (also when all values are listed).
    With ``bins=``, name the bins by their labels (``"[18, 25]"``, ``"(25, 40]"``: the one
    binning rule, :data:`~ofijax.scan.BIN_RULE`), as ``result.bins`` gives their edges.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import score_subset
      >>> df = pd.DataFrame({"g": ["a", "b"] * 50})
      >>> y = np.array([1, 0] * 50)
      >>> res = score_subset(df, y, np.full(100, 0.5), {"g": ["a"]}, penalty=0.0)
      >>> res.size, round(res.score, 4), round(res.q), res.unbounded  # all 50 positive: q at the cap
      (50, 34.6573, 1000000, True)
    """
    data = resolve_data_alias(data, group)
    _check_bias_choices(direction, basis)
    if subset is None:
        raise ValueError("subset: required; pass {column: values} ({} is the whole data).")
    opts = check_scan_options(penalty=penalty, q_bounds=q_bounds, num_restarts=1, max_steps=None)
    enc, y, p = _prepare(data, observations, expectations, value_labels, bins, max_values)
    with jax.enable_x64(True):
        problem, Phi, Y, b = _arrays(enc, y, p, basis, direction, opts.q_bounds)
        mask, listed = subset_arrays(enc, subset, problem.v_max)
        score, t = score_arrays(problem, Phi, Y, b, jnp.asarray(mask), jnp.asarray(listed),
                                penalty=opts.penalty)
        rows = np.asarray(row_mask(problem, device_array(mask), device_array(listed)))
        return _bias_result(enc, rows, mask, listed, score, t, True, y, p, direction=direction,
                            q_bounds=opts.q_bounds, search="given")
