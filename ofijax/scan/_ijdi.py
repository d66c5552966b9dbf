"""FPR-Scan, TPR-Scan and IJDI-Scan (Menghani, McFowland & Neill, "Insufficiently Justified
Disparate Impact"), with search-aware randomization tests.

Labels follow the library's convention (1 = beneficial; ``beneficial_label=0`` when the data's 1
is harmful); internally the scans run in the paper's harm orientation (1 = harmful). All three run
Bias Scan (q > 1, penalised) on one outcome class:

* ``side="negative"``: the rows whose true outcome is beneficial (the paper's D_N); the scan
  outcome is a harmful prediction (a false positive of harm = a false negative of the benefit).
* ``side="positive"``: the rows whose true outcome is harmful (D_P); the scan outcome is a harmful
  prediction (a true positive of harm: the benefit withheld).

FPR-/TPR-Scan use the constant null rate p̄_b (the overall FPR or TPR). IJDI-Scan uses
p_scan = p̄_b + λ(p_i − p̄) with base-rate probabilities p_i and runs Algorithm 1 (edge-case
adjustments and rescans) until the detected subgroup passes both edge tests.

This module owns the public row scans, their shared driver (search, top-k, randomization test)
and the assembly of their :class:`~ofijax.scan.ScanResult`; input checks and the side's rows live
in :mod:`._sides`, the words of a result in :mod:`._words`, FPR-/TPR-Scan from cell statistics in
:mod:`._ratecells`.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax
import numpy as np

from .._validation import check_choice, check_nonnegative_scalar, device_array
from ._alg1 import (
    CODE_ACCEPT,
    CODE_ALPHA,
    CODE_BETA,
    CODE_NONE,
    CODE_PIN,
    DEFAULT_RESTARTS,
    Alg1Out,
    make_params,
)
from ._basis import make_basis
from ._checks import (
    DEFAULT_P_EPSILON,
    DEFAULT_Q_BOUNDS,
    ScanOptions,
    check_beneficial_label,
    check_int,
    check_random_options,
    check_scan_options,
    resolve_data_alias,
)
from ._encode import DEFAULT_MAX_VALUES
from ._engine import make_problem, row_mask
from ._exhaustive import (
    chunk_size,
    make_enumeration,
    num_subgroups,
    resolve_search,
)
from ._ijdi_exhaustive import (
    ijdi_exhaustive_feasible,
    ijdi_steps_null_scores,
    observed_ijdi_steps,
)
from ._programs import CELLS_IN
from ._randomization import (
    PROCEDURE,
    NullSpec,
    null_scores,
    p_value,
    pad_problem,
    replicate_key,
)
from ._ratecells import rate_scan_cells
from ._result import IJDIResult, ScanResult, cap_reached, subset_dict
from ._sides import Side, prepare_side, total_rows
from ._topk import StepSpec, observed_steps, steps_null_scores
from ._words import describe_rate_scan, describe_side

__all__ = ["IJDIResult", "IJDIStep", "fpr_scan", "tpr_scan", "ijdi_scan", "rate_scan_cells",
           "describe_rate_scan", "DEFAULT_P_EPSILON"]

_EDGE_NAMES = {
    CODE_ACCEPT: "accepted",
    CODE_ALPHA: "alpha",
    CODE_BETA: "beta",
    CODE_PIN: "pin",
    CODE_NONE: "no_subgroup",
}


class IJDIStep(NamedTuple):
    """One scan of Algorithm 1 and what followed it.

    Attributes:
      score: penalised score of the subgroup this scan found.
      subset: that subgroup (normalised, as in :class:`~ofijax.scan.ScanResult`).
      size: its number of rows (of the scanned side; 0 for "no_subgroup").
      edge_case: what Algorithm 1 did next: ``"alpha"`` (edge case 1, p(S) < p(~S): p raised on
        S, rescan), ``"beta"`` (edge case 2, net clipping: p_scan raised toward 1 on S, rescan),
        ``"pin"`` (edge case 2 with mean_S raw ≥ 1: p_scan = 1 on S, rescan), ``"accepted"`` (the
        result), ``"no_subgroup"`` (score ≤ 0: nothing detected). On the last step, a value other
        than ``"accepted"``/``"no_subgroup"`` means the cap ``max_adjustments`` stopped the loop.
      factor: α or β of the adjustment (NaN when none).
      scan_converged: every restart of this scan reached a local optimum within ``max_steps``
        (an exhaustive scan: always True).
    """

    score: float
    subset: dict
    size: int
    edge_case: str
    factor: float
    scan_converged: bool


def _build(side: Side, problem, out, rows_in, *, kind, lam, eps, qb, p_val, null, steps=(),
           exclude=None, rank=0, search="coordinate_ascent"):
    """A :class:`ScanResult` from one (numpy) :class:`Alg1Out`; ``rows_in``: side rows in S;
    ``exclude``: ``(n,)`` rows of earlier top-k finds (not counted in ``total_size``)."""
    detected = float(out.score) > 0
    if not detected:
        rows_in = np.zeros_like(rows_in)
    mask = np.zeros(side.n, dtype=bool)
    mask[side.rows[rows_in]] = True
    p_scan = np.full(side.n, np.nan)
    p_scan[side.rows] = out.state.p_scan[: side.rows.size]
    subset = subset_dict(side.enc, out.mask, out.listed, normalize=True) if detected else {}
    in_total = total_rows(side, subset) if detected else np.zeros(side.n, bool)
    if exclude is not None:
        in_total &= ~exclude
    total = int(in_total.sum())
    size = int(rows_in.sum())
    score = float(out.score) if detected else 0.0
    q = float(np.exp(out.log_q)) if detected else 1.0
    obs = float(side.y[rows_in].mean()) if size else math.nan
    exp = float(np.clip(out.state.p_scan[: side.rows.size][rows_in], eps, 1 - eps).mean()) if (
        size) else math.nan
    unbounded = detected and cap_reached(out.log_q, qb, "positive")
    return ScanResult(
        subset=subset,
        score=score,
        q=q,
        size=size,
        mask=mask,
        converged=bool(out.converged),
        listed=subset_dict(side.enc, out.mask, out.listed, normalize=False) if detected else {},
        p_value=p_val,
        null_scores=null,
        total_size=total,
        description=describe_side(side, subset, total, size, score, q, obs, exp, unbounded, qb[1],
                              p_val, kind, lam, rank),
        observed_rate=obs,
        expected_rate=exp,
        unbounded=bool(unbounded),
        search=search,
        bins=dict(side.enc.edges or {}),
        history=tuple(steps),
        p_scan=p_scan,
        num_rescans=int(out.num_scans) - 1,
        rate=float(side.y.mean()),
    )


# ---------------------------------------------------------------------------------------------
# The shared driver

#: History arrays have at least this length (max_adjustments ≤ 100 shares one compilation).
_HISTORY = 101


def _history(side: Side, problem, out, n_real) -> list:
    steps = []
    for j in range(int(out.num_scans)):
        m_j, l_j = out.masks[j], out.listeds[j]
        size_j = int(np.asarray(
            row_mask(problem, device_array(m_j), device_array(l_j)))[:n_real].sum())
        none = int(out.codes[j]) == CODE_NONE
        steps.append(IJDIStep(
            score=0.0 if none else float(out.scores[j]),
            subset={} if none else subset_dict(side.enc, m_j, l_j, normalize=True),
            size=0 if none else size_j,
            edge_case=_EDGE_NAMES[int(out.codes[j])],
            factor=float(out.factors[j]),
            scan_converged=bool(out.scan_converged[j]),
        ))
    return steps


def _warn_outcome(side: Side, out, rows_in, steps, kind, eps, cap):
    detected = float(out.score) > 0
    if not bool(out.converged):
        last = steps[-1]
        if last.edge_case not in ("accepted", "no_subgroup"):
            warnings.warn(
                f"IJDI-Scan: Algorithm 1 reached max_adjustments={cap} with the "
                f"last subgroup still failing an edge test ({last.edge_case!r}); the result is "
                "the last scan's (converged=False). Raise max_adjustments.",
                RuntimeWarning, stacklevel=4)
        else:
            warnings.warn(
                "IJDI-Scan: a restart of the last scan reached the coordinate-ascent step cap "
                "max_steps (converged=False); raise max_steps.", RuntimeWarning, stacklevel=4)
    if detected and kind == "ijdi":
        tiny = rows_in & (out.state.p_scan[: side.rows.size] <= eps) & (side.y > 0)
        if tiny.any():
            warnings.warn(
                f"IJDI-Scan: the detected subgroup holds {int(tiny.sum())} row(s) with p_scan "
                f"clipped to 0 but a positive outcome; each adds up to "
                f"{'log(1/p_epsilon)' if eps > 0 else 'log(q_hi)'} to the score. See p_epsilon.",
                RuntimeWarning, stacklevel=4)


def _drive(spec: NullSpec, side: Side, lam: float, opts: ScanOptions, rnd, strict: bool = False,
           cap: int = 0, search: str = "coordinate_ascent") -> ScanResult:
    n_values = np.array([len(lab) for lab in side.enc.labels], dtype=np.int32)
    eps, qb, key = opts.p_epsilon, opts.q_bounds, rnd.key
    with jax.enable_x64(True):
        problem = make_problem(side.enc.codes, n_values)
        basis = make_basis("chebyshev", direction="positive", q_bounds=qb) if (
            spec.kind == "ijdi") else None
        p_side = side.p if side.p is not None else np.zeros_like(side.y)
        data = pad_problem(problem, side.y, p_side)
        problem = data.problem
        params = make_params(lam, opts.penalty, eps, strict, cap)
        if spec.kind == "ijdi":
            p_null = np.clip(side.y.mean() + lam * (side.p - side.p.mean()), 0.0, 1.0)
        else:
            p_null = np.full(side.y.shape, side.y.mean())
        p_null = device_array(np.concatenate([p_null, np.zeros(data.y.shape[0] - data.n)]))
        common = dict(kind=spec.kind, lam=lam, eps=eps, qb=qb)
        nv = np.asarray(problem.n_values)
        if spec.kind == "ijdi" and search == "auto":
            search = ("exhaustive" if ijdi_exhaustive_feasible(
                nv, problem.num_cells, basis.num_features) else "coordinate_ascent")
        search = resolve_search(search, nv, problem.num_cells, hint=", or bin / group values")
        common["search"] = search
        if opts.top_k is None and search == "coordinate_ascent":
            run = PROCEDURE.pick(problem.num_cells)
            out: Alg1Out = run(spec, key, data.y, data.p, data.valid, data.row_cell, problem,
                               basis, params)
            out = jax.tree.map(np.asarray, out)
            rows_in = np.asarray(
                row_mask(problem, device_array(out.mask), device_array(out.listed)))[: data.n]
            null, bad = None, 0
            if rnd.num_samples:
                null, bad = null_scores(
                    replicate_key(key), spec, data, p_null, num_replicates=rnd.num_samples,
                    basis=basis, params=params, replicate_chunk=rnd.replicate_chunk)
            steps = _history(side, problem, out, data.n)
            _warn_outcome(side, out, rows_in, steps, spec.kind, eps, cap)
            score = float(out.score) if float(out.score) > 0 else 0.0
            res = _build(side, problem, out, rows_in, steps=steps, null=null,
                         p_val=p_value(score, null) if null is not None else math.nan, **common)
        else:
            k_top = opts.top_k or 1
            enum, num, chunk = None, 0, 0
            if search == "exhaustive":
                enum = make_enumeration(nv, problem.v_max)
                num = num_subgroups(nv)
                width = basis.num_features if spec.kind == "ijdi" else 1  # features per cell
                chunk = chunk_size(num, problem.num_cells, len(nv), width)
            if spec.kind == "ijdi" and search == "exhaustive":  # Algorithm 1, scans certified
                outs, valids = observed_ijdi_steps(data, basis, params, enum, k=k_top,
                                                   history=spec.history, num=num, chunk=chunk)
                null, bad = ijdi_steps_null_scores(
                    key, spec, data, p_null, basis, params, enum, k=k_top, num=num, chunk=chunk,
                    num_samples=rnd.num_samples, replicate_chunk=rnd.replicate_chunk)
            else:
                sspec = StepSpec(spec, k_top, search, enum_num=num, enum_chunk=chunk)
                outs, valids = observed_steps(sspec, key, data.y, data.p, data.valid,
                                              data.row_cell, problem, basis, params, enum)
                null, bad = steps_null_scores(key, sspec, data, p_null, basis, params, enum,
                                              num_samples=rnd.num_samples,
                                              replicate_chunk=rnd.replicate_chunk)
            outs = jax.tree.map(np.asarray, outs)
            valids = np.asarray(valids)[:, : data.n]
            results, earlier = [], np.zeros(side.n, bool)
            for j in range(k_top):
                out = jax.tree.map(lambda a, j=j: a[j], outs)
                if j > 0 and not float(out.score) > 0:
                    break
                rows_in = np.asarray(CELLS_IN(problem, device_array(out.mask), device_array(
                    out.listed)))[np.asarray(data.row_cell)[: data.n]] & valids[j]
                steps = _history(side, problem, out, data.n)
                if j == 0:
                    _warn_outcome(side, out, rows_in, steps, spec.kind, eps, cap)
                score = float(out.score) if float(out.score) > 0 else 0.0
                res_j = _build(
                    side, problem, out, rows_in, steps=steps,
                    null=null if rnd.num_samples else None, exclude=earlier, rank=j,
                    p_val=p_value(score, null) if rnd.num_samples else math.nan, **common)
                results.append(res_j)
                if res_j.score > 0:  # the rows (both classes) of this find: not counted again
                    earlier = earlier | total_rows(side, res_j.subset)
            res = (results[0]._replace(top=tuple(results)) if opts.top_k is not None
                   else results[0])
    if bad:
        warnings.warn(
            f"randomization test: {bad} of {rnd.num_samples} replicates hit a cap "
            "(max_adjustments or max_steps); their scores are those of the last scan.",
            RuntimeWarning, stacklevel=3)
    return res


# ---------------------------------------------------------------------------------------------
# Public functions


_COMMON_ARGS = """
      data: DataFrame (or 2-D array) of categorical attributes, all rows (both classes);
        ``group=`` is an alias. pandas arguments (``data``, ``y_true``, ``y_pred``, ``p_true``,
        a per-row ``threshold``) are aligned on their index, never matched by position: the same
        labels in another order are reordered to the first pandas argument's rows; any other
        difference is a ``ValueError`` naming the argument. Missing attribute values are refused
        (in any row: ``total_size`` counts both classes).
      y_true: binary true outcomes (0/1); with the default ``beneficial_label=1``, 1 is the
        beneficial outcome (e.g. "did not reoffend", "repaid"), as in :func:`ofijax.audit`.
      y_pred: binary predictions (0/1) in the same orientation, or scores/probabilities turned
        into predictions by ``threshold`` (``1[score ≥ threshold]``, then read with
        ``beneficial_label``).
      beneficial_label: 1 (default: label 1 = beneficial) or 0 (the data's 1 is the harmful
        outcome, the IJDI paper's orientation, e.g. COMPAS recidivism). The scans run internally
        in the harm orientation; results are the same for both spellings of the same data.
      threshold: ``None`` (default), a scalar or a per-row threshold. 0/1 ``y_pred`` passes
        unchanged (for ``None`` or any threshold in (0, 1]). Other values (scores,
        probabilities) become decisions only through a threshold: with ``None``, 0.5 is applied
        with a ``UserWarning`` (pass ``threshold=`` to choose it and silence the warning). The
        threshold applied to non-binary ``y_pred`` is recorded at the end of the result's
        ``description`` ("predictions thresholded at 0.5 (default; ...)" or "... (given; ...)").
      threshold_rule: ``"ge"`` (``1[s ≥ θ]``, the paper) or ``"gt"`` (strict, the reference code).
      penalty: complexity penalty per listed value (default 0.1, the IJDI reference's).
      num_restarts, q_bounds, max_steps, value_labels, bins, max_values: as in
        :func:`~ofijax.scan.bias_scan`.
      key: PRNG key or int seed; required when ``num_samples > 0``; otherwise it only breaks the
        restarts' ties (default ``jax.random.key(0)``, deterministic).
      p_epsilon: null rates are clamped into ``[ε, 1 − ε]`` where they enter the scan.
      num_samples: R ≥ 0 randomization replicates (0: no test, ``p_value`` NaN);
        ``num_replicates`` is its deprecated name.
      null: ``"bernoulli"`` (y* ~ Bernoulli(null rate), rates recomputed from y*) or
        ``"permutation"``.
      replicate_chunk: replicates per vmapped batch (default: automatic, memory-bounded).
      top_k: k ≥ 1: the k subgroups found by rescanning with earlier finds' rows removed, in
        ``result.top``, with family-wise p-values (see :func:`~ofijax.scan.bias_scan`).
      group: alias of ``data``."""


def _rate_scan(side_name, data, y_true, y_pred, *, beneficial_label, threshold, threshold_rule,
               penalty, num_restarts, key, q_bounds, max_steps, p_epsilon, num_samples, null,
               replicate_chunk, value_labels, top_k, bins, max_values, group, num_replicates,
               search="auto"):
    data = resolve_data_alias(data, group)
    check_choice(search, "search", ("auto", "exhaustive", "coordinate_ascent"))
    b = check_beneficial_label(beneficial_label)
    opts = check_scan_options(penalty=penalty, q_bounds=q_bounds, num_restarts=num_restarts,
                              max_steps=max_steps, p_epsilon=p_epsilon, top_k=top_k)
    rnd = check_random_options(key=key, num_samples=num_samples, num_replicates=num_replicates,
                               null=null, replicate_chunk=replicate_chunk, stacklevel=4)
    side = prepare_side(data, y_true, y_pred, None, side_name, threshold, threshold_rule,
                         value_labels, b, bins, max_values,
                         fn="fpr_scan" if side_name == "negative" else "tpr_scan", stacklevel=4)
    spec = NullSpec("rate", rnd.null, opts.num_restarts, opts.max_steps,
                    t_bounds=(0.0, math.log(opts.q_bounds[1])))
    return _drive(spec, side, 0.0, opts, rnd, search=search)


def fpr_scan(
    data=None,
    y_true=None,
    y_pred=None,
    *,
    search: str = "auto",
    beneficial_label: int = 1,
    threshold=None,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int = 10,
    key=None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_samples: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
    top_k: int | None = None,
    bins=None,
    max_values: int | None = DEFAULT_MAX_VALUES,
    group=None,
    num_replicates: int | None = None,
) -> ScanResult:
    r"""FPR-Scan: the subgroup most significantly **denied the benefit** among rows whose true
    outcome is beneficial (a raised false-negative rate of the beneficial outcome).

    In the IJDI paper's harm orientation (1 = harmful) this is a raised false-positive rate of the
    harmful prediction, hence the name. On the rows whose true outcome is beneficial,
    :math:`D_N`, the scan outcome is a harmful prediction :math:`\hat p_{i,b}` and every row's
    null rate is their overall rate :math:`\bar p_b`; Bias Scan with q > 1 maximises

    .. math::

        F(S) = \max_{q \ge 1} \Bigl[\textstyle\sum_{S} \hat p_{i,b} \log q
               - |S| \log(1 - \bar p_b + q \bar p_b)\Bigr] - c \cdot \#\text{values listed},

    i.e. :math:`|S|\,\mathrm{KL}(\mathrm{rate}(S) \Vert \bar p_b)` when rate(S) > p̄_b. This
    equals :func:`ijdi_scan` with ``lam=0, side="negative"``.

    Search. ``search="auto"`` (default) scores *every* subgroup when the attribute space is small
    (``Π_m (2^{V_m} − 1)`` ≤ 1e6 subgroups and that times cells × (1 + M) ≤ 1e8, e.g. COMPAS's
    five IJDI attributes): the result is the global optimum, ``result.search == "exhaustive"``
    (``result.certified``); otherwise, and with ``search="coordinate_ascent"``, MDSS's multi-start
    local search, a local optimum (``certified`` False; on small tables it also starts from
    every single value and pair of values): on 150 random small tables it fell below the
    brute-force optimum on 2 (1.3%; 95% upper bound 4.7%) with the default 10 restarts and on
    none with 50, none of them reporting "no subgroup" while one scores above 0
    (``experiments/scan_miss_rate.py``).
    Randomization replicates run the same search as the observed scan.

    Args:
      search: ``"auto"``, ``"exhaustive"`` or ``"coordinate_ascent"`` (above).{args}

    Returns:
      :class:`~ofijax.scan.ScanResult`; ``size`` counts the scanned rows of S (true outcome
      beneficial), ``total_size`` all rows of S, ``description`` says it in words.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import fpr_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> y = np.ones(200, int)                     # everyone's true outcome is beneficial
      >>> denied = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> res = fpr_scan(df, y, (~denied).astype(int))   # predictions: 1 = benefit granted
      >>> res.subset, res.size, res.total_size, round(res.score, 3)
      ({'g': ('a',)}, 100, 100, 15.608)
    """
    return _rate_scan("negative", data, y_true, y_pred, beneficial_label=beneficial_label,
                      threshold=threshold, threshold_rule=threshold_rule, penalty=penalty,
                      num_restarts=num_restarts, key=key, q_bounds=q_bounds, max_steps=max_steps,
                      p_epsilon=p_epsilon, num_samples=num_samples, null=null,
                      replicate_chunk=replicate_chunk, value_labels=value_labels, top_k=top_k,
                      bins=bins, max_values=max_values, group=group,
                      num_replicates=num_replicates, search=search)


def tpr_scan(
    data=None,
    y_true=None,
    y_pred=None,
    *,
    search: str = "auto",
    beneficial_label: int = 1,
    threshold=None,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int = 10,
    key=None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_samples: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
    top_k: int | None = None,
    bins=None,
    max_values: int | None = DEFAULT_MAX_VALUES,
    group=None,
    num_replicates: int | None = None,
) -> ScanResult:
    r"""TPR-Scan: the subgroup most significantly **given the benefit less often** among rows
    whose true outcome is harmful (a raised true-positive rate of the harmful outcome, i.e. a
    lowered false-positive rate of the beneficial outcome).

    The same as :func:`fpr_scan` on the rows whose true outcome is harmful, :math:`D_P`, with
    their overall rate of harmful predictions as null rate. Equals :func:`ijdi_scan` with
    ``lam=0, side="positive"``. Arguments (``search`` included) as in :func:`fpr_scan`.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import tpr_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> harmful = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> tpr_scan(df, np.zeros(200, int), (~harmful).astype(int)).subset
      {'g': ('a',)}
    """
    return _rate_scan("positive", data, y_true, y_pred, beneficial_label=beneficial_label,
                      threshold=threshold, threshold_rule=threshold_rule, penalty=penalty,
                      num_restarts=num_restarts, key=key, q_bounds=q_bounds, max_steps=max_steps,
                      p_epsilon=p_epsilon, num_samples=num_samples, null=null,
                      replicate_chunk=replicate_chunk, value_labels=value_labels, top_k=top_k,
                      bins=bins, max_values=max_values, group=group,
                      num_replicates=num_replicates, search=search)


def ijdi_scan(
    data=None,
    y_true=None,
    y_pred=None,
    p_true=None,
    *,
    lam: float | None = None,
    side: str = "negative",
    beneficial_label: int = 1,
    mode: str = "reference",
    max_adjustments: int = 100,
    threshold=None,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int | None = None,
    key=None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_samples: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
    top_k: int | None = None,
    bins=None,
    max_values: int | None = DEFAULT_MAX_VALUES,
    group=None,
    num_replicates: int | None = None,
    search: str = "auto",
) -> ScanResult:
    r"""IJDI-Scan: the subgroup with the most significant *insufficiently justified* disparate impact.

    Internally in the harm orientation (1 = harmful; ``beneficial_label`` converts): on the
    chosen side (``"negative"``: rows whose true outcome is beneficial, scanned for being denied
    the benefit; ``"positive"``: rows whose true outcome is harmful, scanned for being given the
    benefit less often) the IJDI criterion allows a subgroup's excess rate of harmful predictions
    up to λ times its excess true risk of the harmful outcome (paper eq. 3):
    :math:`\sum_{S}(\hat p_{i,b} - \bar p_b) \le \lambda \sum_{S}(p_i - \bar p)`. Bias Scan
    (q > 1) runs with scan outcome :math:`\hat p_{i,b}` (a harmful prediction) and null rate

    .. math:: \hat p_{i,\mathrm{scan}} = \bar p_b + \lambda\,(p_i - \bar p),

    means over the side's rows, clipped to [0, 1]; here :math:`p_i` is the probability of the
    *harmful* outcome (``1 − p_true`` when ``beneficial_label=1``). Algorithm 1 then checks S:

    1. *Edge case 1*, mean_S(p − p̄) < −1e−6 (p(S) < p(~S), where the criterion only asks
       rate(S) ≤ rate(~S)): the members of S below p(~S) are raised by the factor α ∈ (0, 1] so
       that mean_S p = p(~S); p_scan is recomputed on S (``mode="reference"``: p̄_b + λ(p − p̄)
       with the frozen p̄, as the authors' code does; ``mode="strict"``: p̄_b); rescan.
    2. *Edge case 2*, the net clipping on S is negative (mean_S(p_scan − raw) < −1e−6): if
       mean_S raw ≥ 1, p_scan = 1 on S (S cannot score); otherwise p_scan on S is raised toward 1
       by β so that Σ_S p_scan = Σ_S raw; rescan.

    Adjustments accumulate; the loop stops at the first subgroup passing both tests (or scoring 0),
    or after ``max_adjustments`` rescans (``converged=False`` and a warning). The first scan uses
    ``key`` (so λ = 0 reduces exactly to :func:`fpr_scan` / :func:`tpr_scan` with the same key and
    restarts); rescan i draws fresh restarts from ``fold_in(key, i)``.

    Search. ``search="auto"`` (default) runs every scan of Algorithm 1 as an exhaustive search
    when the attribute space is small (``Π_m (2^{V_m} − 1)`` ≤ 1e6 subgroups and that times
    cells × (K + M) ≤ 4e8, K the Chebyshev features; COMPAS's five IJDI attributes: yes): each
    scan returns the global optimum of its score, so the whole procedure is deterministic (no
    key, no restarts) and ``result.certified`` is True; its top-k steps and randomization
    replicates run the same search. Otherwise, and with ``search="coordinate_ascent"``, each scan
    is MDSS's multi-start local search (``certified`` False): the default of 50 restarts
    (``num_restarts=None``) makes the result key-stable where 10 (the reference's) is not: over
    20 keys on COMPAS (negative side, λ = 1) 10 restarts return the 9.13 subgroup for 50% of the
    keys, 25 for 95%, 50 for all (``experiments/ijdi_restarts.py``). At λ ≥ 3 no count tried is
    key-stable there, since the edge-case adjustments depend on the subgroups found first; the
    exhaustive search removes that dependence (COMPAS positive side, λ = 3: 1.93, one of the
    local searches' answers, 1.78 with key 0). On 60 random small tables (3 attributes × 3
    values, 60 rows) coordinate ascent ended on another subgroup than the exhaustive path on 7%
    (λ = 1) and 17% (λ = 3) of them at 10 restarts, 2% and 5% at the default 50
    (``experiments/notes/scans.md``).

    Hazard: a row with p_scan = 0 (raw < 0, likely at large λ) and outcome 1 makes the likelihood
    unbounded. p_scan is therefore clamped into ``[p_epsilon, 1 − p_epsilon]`` where it enters the
    scan (default ε = 1e−6, so such a row adds at most log(1/ε) ≈ 13.8); with ``p_epsilon=0`` the
    q bracket caps it instead (log q ≤ log q_hi) and the result is flagged ``unbounded``. A
    warning names such rows when they are in the detected subgroup.

    Args:
      p_true: base-rate probabilities :math:`\Pr(y_i = 1 \mid x_i)` of label 1 in ``y_true``'s
        orientation (beneficial by default), e.g. from :func:`estimate_true_probabilities` on the
        same labels (not the audited classifier's scores).
      lam: λ ≥ 0 (required; see :func:`lambda_from_costs`).
      side: ``"negative"`` (rows whose true outcome is beneficial: raised false-negative rate of
        the benefit, the paper's FPR side) or ``"positive"`` (true outcome harmful: the paper's
        TPR side).
      mode: ``"reference"`` (default) or ``"strict"``: the p_scan recomputed on S after edge case 1.
      num_restarts: random restarts per scan of Algorithm 1 (None: ``DEFAULT_RESTARTS`` = 50; the
        reference runs 10).
      max_adjustments: cap K on rescans (default 100).
      search: ``"auto"``, ``"exhaustive"`` or ``"coordinate_ascent"`` (above).{args}

    Returns:
      :class:`~ofijax.scan.ScanResult` (with the adjustment ``history``).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import ijdi_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> p_harm = np.where(df.g == "a", 0.6, 0.4)   # group a has the higher true risk of harm
      >>> denied = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> y = np.ones(200, int)                       # true outcome beneficial for everyone
      >>> [ijdi_scan(df, y, (~denied).astype(int), 1 - p_harm, lam=lam).subset
      ...  for lam in (0.0, 5.0)]
      [{'g': ('a',)}, {}]
    """
    data = resolve_data_alias(data, group)
    check_choice(search, "search", ("auto", "exhaustive", "coordinate_ascent"))
    if lam is None:
        raise ValueError("lam: required; pass λ ≥ 0 (0 = FPR-/TPR-Scan; see lambda_from_costs).")
    lam = check_nonnegative_scalar(lam, "lam")
    check_choice(mode, "mode", ("reference", "strict"))
    cap = check_int(max_adjustments, "max_adjustments", 0)
    b = check_beneficial_label(beneficial_label)
    if num_restarts is None:
        num_restarts = DEFAULT_RESTARTS
    opts = check_scan_options(penalty=penalty, q_bounds=q_bounds, num_restarts=num_restarts,
                              max_steps=max_steps, p_epsilon=p_epsilon, top_k=top_k)
    rnd = check_random_options(key=key, num_samples=num_samples, num_replicates=num_replicates,
                               null=null, replicate_chunk=replicate_chunk)
    if p_true is None:
        raise ValueError(
            "p_true: required; pass base-rate probabilities (e.g. estimate_true_probabilities)."
        )
    side_ = prepare_side(data, y_true, y_pred, p_true, side, threshold, threshold_rule,
                          value_labels, b, bins, max_values, fn="ijdi_scan", stacklevel=3)
    spec = NullSpec("ijdi", rnd.null, opts.num_restarts, opts.max_steps,
                    t_bounds=(0.0, math.log(opts.q_bounds[1])),
                    history=max(_HISTORY, cap + 1))
    return _drive(spec, side_, lam, opts, rnd, strict=(mode == "strict"), cap=cap, search=search)


fpr_scan.__doc__ = fpr_scan.__doc__.replace("{args}", _COMMON_ARGS)
ijdi_scan.__doc__ = ijdi_scan.__doc__.replace("{args}", _COMMON_ARGS)
