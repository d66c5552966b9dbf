"""FPR-Scan, TPR-Scan and IJDI-Scan (Menghani, McFowland & Neill, "Insufficiently Justified
Disparate Impact"), with search-aware randomization tests.

All three run Bias Scan (q > 1, penalised) on one outcome class:

* ``side="negative"``: the rows with y_true = 0 (D_N); the scan outcome is a false positive.
* ``side="positive"``: the rows with y_true = 1 (D_P); the scan outcome is a true positive.

FPR-/TPR-Scan use the constant null rate p̄_b (the overall FPR or TPR). IJDI-Scan uses
p_scan = p̄_b + λ(p_i − p̄) with base-rate probabilities p_i and runs Algorithm 1 (edge-case
adjustments and rescans) until the detected subgroup passes both edge tests.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .._validation import (
    as_numpy,
    check_binary,
    check_choice,
    check_finite,
    check_nonnegative_scalar,
    check_probabilities,
)
from ._alg1 import (
    CODE_ACCEPT,
    CODE_ALPHA,
    CODE_BETA,
    CODE_NONE,
    CODE_PIN,
    Alg1Out,
    make_params,
)
from ._api import DEFAULT_Q_BOUNDS, _subset_dict
from ._basis import make_basis
from ._encode import Encoded, encode_data
from ._engine import make_problem, row_mask
from ._randomization import (
    NullSpec,
    _procedure,
    check_randomization_args,
    null_scores,
    p_value,
    pad_problem,
    replicate_key,
)

__all__ = ["IJDIResult", "IJDIStep", "fpr_scan", "tpr_scan", "ijdi_scan", "DEFAULT_P_EPSILON"]

#: Default clamp of p_scan into [ε, 1 − ε] where it enters the scan (see :func:`ijdi_scan`).
DEFAULT_P_EPSILON = 1e-6

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
      scan_converged: every restart of this scan reached a local optimum within ``max_steps``.
    """

    score: float
    subset: dict
    size: int
    edge_case: str
    factor: float
    scan_converged: bool


class IJDIResult(NamedTuple):
    """Result of :func:`ijdi_scan`, :func:`fpr_scan` and :func:`tpr_scan`.

    The first nine fields are those of :class:`~ofijax.scan.ScanResult`.

    Attributes:
      subset: detected subgroup ``{column: values}`` (``{}`` with score 0: nothing detected).
      score: its penalised score (0.0 when nothing is detected).
      q: fitted odds multiplier (1.0 when nothing is detected).
      size: number of rows of the scanned side in the subgroup.
      mask: ``(N,)`` bool over **all** input rows: scanned side and in the subgroup.
      converged: Algorithm 1 ended within ``max_adjustments`` with a subgroup that passes both edge
        tests, and its last scan converged.
      listed: the un-normalised subgroup (the penalty counts its values).
      p_value: randomization-test p-value, ``(1 + #{F* ≥ F}) / (R + 1)`` (NaN without a test).
      null_scores: ``(R,)`` replicate scores (None without a test).
      history: tuple of :class:`IJDIStep`, one per scan (1 + number of rescans).
      p_scan: ``(N,)`` float, the final (adjusted) null rate of each row of the side (NaN elsewhere).
      num_rescans: number of rescans (adjustments) Algorithm 1 made.
    """

    subset: dict
    score: float
    q: float
    size: int
    mask: np.ndarray
    converged: bool
    listed: dict | None
    p_value: float
    null_scores: Any
    history: tuple
    p_scan: np.ndarray
    num_rescans: int


class _Side(NamedTuple):
    rows: np.ndarray  # indices of the side's rows in the input
    enc: Encoded
    y: np.ndarray  # scan outcome p̂_b on the side (float64 0/1)
    p: np.ndarray | None  # base-rate probabilities on the side
    n: int  # total input rows


# ---------------------------------------------------------------------------------------------
# Input handling


def _recommendations(y_pred, threshold, threshold_rule, n) -> np.ndarray:
    check_choice(threshold_rule, "threshold_rule", ("ge", "gt"))
    s = as_numpy(y_pred, "y_pred")
    if s.dtype == bool:
        s = s.astype(np.float64)
    if s.dtype.kind not in "iuf":
        raise ValueError(
            f"y_pred: must be binary recommendations (0/1) or numeric scores; got dtype {s.dtype}."
        )
    s = s.astype(np.float64)
    check_finite(s, "y_pred")
    if s.ndim != 1 or s.shape[0] != n:
        raise ValueError(
            f"y_pred: must be 1-D with one value per row of data ({n}); got shape {s.shape}."
        )
    t = as_numpy(threshold, "threshold")
    if t.dtype.kind not in "iuf":
        raise ValueError(f"threshold: must be a number or one number per row; got {threshold!r}.")
    t = t.astype(np.float64)
    check_finite(t, "threshold")
    if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != n):
        raise ValueError(
            f"threshold: must be a scalar or one value per row ({n}); got shape {t.shape}."
        )
    return (s >= t if threshold_rule == "ge" else s > t).astype(np.float64)


def _select(data, idx):
    if isinstance(data, pd.DataFrame | pd.Series):
        return data.iloc[idx].reset_index(drop=True)
    return np.asarray(data)[idx]


def _n_rows(data) -> int:
    if isinstance(data, pd.DataFrame | pd.Series):
        return len(data)
    arr = np.asarray(data)
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"data: must be a DataFrame or a 2-D array (rows × attributes); got shape {arr.shape}."
        )
    return arr.shape[0]


def _prepare_side(data, y_true, y_pred, p_true, side, threshold, threshold_rule, value_labels):
    check_choice(side, "side", ("negative", "positive"))
    n = _n_rows(data)
    y = check_binary(y_true, "y_true")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(
            f"y_true: must be 1-D with one label per row of data ({n}); got shape {y.shape}."
        )
    yhat = _recommendations(y_pred, threshold, threshold_rule, n)
    p = None
    if p_true is not None:
        p = check_probabilities(p_true, "p_true")
        if p.ndim != 1 or p.shape[0] != n:
            raise ValueError(
                f"p_true: must be 1-D with one probability per row of data ({n}); "
                f"got shape {p.shape}."
            )
    label = 0 if side == "negative" else 1
    rows = np.flatnonzero(y == label)
    if rows.size == 0:
        raise ValueError(
            f"side: side={side!r} has no rows (no y_true == {label}); scan the other side or "
            "check the labels."
        )
    enc = encode_data(_select(data, rows), value_labels)
    return _Side(rows, enc, yhat[rows], None if p is None else p[rows], n)


def _check_scan_kw(penalty, num_restarts, max_steps, q_bounds, p_epsilon):
    pen = check_nonnegative_scalar(penalty, "penalty")
    if isinstance(num_restarts, bool) or not isinstance(num_restarts, int | np.integer) or (
        num_restarts < 1
    ):
        raise ValueError(f"num_restarts: must be an integer ≥ 1; got {num_restarts!r}.")
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, int | np.integer) or max_steps < 1
    ):
        raise ValueError(f"max_steps: must be an integer ≥ 1 or None; got {max_steps!r}.")
    try:
        lo, hi = float(q_bounds[0]), float(q_bounds[1])
    except Exception as exc:
        raise ValueError(f"q_bounds: must be a pair (q_lo, q_hi); got {q_bounds!r}.") from exc
    if not (0 < lo < 1 < hi < math.inf):
        raise ValueError(f"q_bounds: must satisfy 0 < q_lo < 1 < q_hi < inf; got {q_bounds!r}.")
    eps = check_nonnegative_scalar(p_epsilon, "p_epsilon")
    if eps >= 0.5:
        raise ValueError(f"p_epsilon: must be in [0, 0.5); got {p_epsilon!r}.")
    return pen, (lo, hi), eps


# ---------------------------------------------------------------------------------------------
# The shared driver

_run = jax.jit(_procedure, static_argnums=0)
#: History arrays have at least this length (max_adjustments ≤ 100 shares one compilation).
_HISTORY = 101


def _drive(spec: NullSpec, side: _Side, lam: float, pen: float, eps: float, qb, key,
           num_replicates: int, null: str, replicate_chunk, strict: bool = False,
           cap: int = 0) -> IJDIResult:
    n_values = np.array([len(lab) for lab in side.enc.labels], dtype=np.int32)
    with jax.enable_x64(True):
        key = jax.random.key(0) if key is None else key
        problem = make_problem(side.enc.codes, n_values)
        basis = make_basis("chebyshev", direction="positive", q_bounds=qb) if (
            spec.kind == "ijdi") else None
        p_side = side.p if side.p is not None else np.zeros_like(side.y)
        data = pad_problem(problem, side.y, p_side)
        problem = data.problem
        params = make_params(lam, pen, eps, strict, cap)
        out: Alg1Out = _run(spec, key, data.y, data.p, data.valid, data.row_cell, problem, basis,
                            params)
        out = jax.tree.map(np.asarray, out)
        rows_in = np.asarray(
            row_mask(problem, jnp.asarray(out.mask), jnp.asarray(out.listed)))[: data.n]
        null, bad = None, 0
        if num_replicates:
            if spec.kind == "ijdi":
                p_null = np.clip(side.y.mean() + lam * (side.p - side.p.mean()), 0.0, 1.0)
            else:
                p_null = np.full(side.y.shape, side.y.mean())
            p_null = np.concatenate([p_null, np.zeros(data.y.shape[0] - data.n)])
            null, bad = null_scores(
                replicate_key(key), spec, data, jnp.asarray(p_null),
                num_replicates=num_replicates, basis=basis, params=params,
                replicate_chunk=replicate_chunk)
        steps = []
        for j in range(int(out.num_scans)):
            m_j, l_j = out.masks[j], out.listeds[j]
            size_j = int(np.asarray(
                row_mask(problem, jnp.asarray(m_j), jnp.asarray(l_j)))[: data.n].sum())
            none = int(out.codes[j]) == CODE_NONE
            steps.append(IJDIStep(
                score=0.0 if none else float(out.scores[j]),
                subset={} if none else _subset_dict(side.enc, m_j, l_j, normalize=True),
                size=0 if none else size_j,
                edge_case=_EDGE_NAMES[int(out.codes[j])],
                factor=float(out.factors[j]),
                scan_converged=bool(out.scan_converged[j]),
            ))
    detected = float(out.score) > 0
    if not detected:
        rows_in = np.zeros_like(rows_in)
    mask = np.zeros(side.n, dtype=bool)
    mask[side.rows[rows_in]] = True
    p_scan = np.full(side.n, np.nan)
    p_scan[side.rows] = out.state.p_scan[: side.rows.size]
    converged = bool(out.converged)
    if not converged:
        last = steps[-1]
        if last.edge_case not in ("accepted", "no_subgroup"):
            warnings.warn(
                f"IJDI-Scan: Algorithm 1 reached max_adjustments={cap} with the "
                f"last subgroup still failing an edge test ({last.edge_case!r}); the result is "
                "the last scan's (converged=False). Raise max_adjustments.",
                RuntimeWarning, stacklevel=3)
        else:
            warnings.warn(
                "IJDI-Scan: a restart of the last scan reached the coordinate-ascent step cap "
                "max_steps (converged=False); raise max_steps.", RuntimeWarning, stacklevel=3)
    if detected and spec.kind == "ijdi":
        tiny = rows_in & (out.state.p_scan[: side.rows.size] <= eps) & (side.y > 0)
        if tiny.any():
            warnings.warn(
                f"IJDI-Scan: the detected subgroup holds {int(tiny.sum())} row(s) with p_scan "
                f"clipped to 0 but a positive outcome; each adds up to "
                f"{'log(1/p_epsilon)' if eps > 0 else 'log(q_hi)'} to the score. See p_epsilon.",
                RuntimeWarning, stacklevel=3)
    if bad:
        warnings.warn(
            f"randomization test: {bad} of {num_replicates} replicates hit a cap "
            "(max_adjustments or max_steps); their scores are those of the last scan.",
            RuntimeWarning, stacklevel=3)
    return IJDIResult(
        subset=steps[-1].subset if detected else {},
        score=float(out.score) if detected else 0.0,
        q=float(np.exp(out.log_q)) if detected else 1.0,
        size=int(rows_in.sum()),
        mask=mask,
        converged=converged,
        listed=_subset_dict(side.enc, out.mask, out.listed, normalize=False) if detected else {},
        p_value=p_value(float(out.score) if detected else 0.0, null) if null is not None
        else math.nan,
        null_scores=null,
        history=tuple(steps),
        p_scan=p_scan,
        num_rescans=int(out.num_scans) - 1,
    )


# ---------------------------------------------------------------------------------------------
# Public functions


def _rate_scan(side_name, data, y_true, y_pred, *, threshold, threshold_rule, penalty,
               num_restarts, key, q_bounds, max_steps, p_epsilon, num_replicates, null,
               replicate_chunk, value_labels):
    pen, qb, eps = _check_scan_kw(penalty, num_restarts, max_steps, q_bounds, p_epsilon)
    r = check_randomization_args(num_replicates, null, replicate_chunk)
    side = _prepare_side(data, y_true, y_pred, None, side_name, threshold, threshold_rule,
                         value_labels)
    spec = NullSpec("rate", null, int(num_restarts), None if max_steps is None else int(max_steps),
                    t_bounds=(0.0, math.log(qb[1])))
    return _drive(spec, side, 0.0, pen, eps, qb, key, r, null, replicate_chunk)


def fpr_scan(
    data,
    y_true,
    y_pred,
    *,
    threshold=0.5,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: jax.Array | None = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_replicates: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
) -> IJDIResult:
    r"""FPR-Scan: the subgroup whose false positive rate is raised most significantly.

    On the negatives :math:`D_N = \{i: y_i = 0\}` the scan outcome is the recommendation
    :math:`\hat p_{i,b}` (a false positive) and every row's null rate is the overall FPR
    :math:`\bar p_b`; Bias Scan with q > 1 then maximises

    .. math::

        F(S) = \max_{q \ge 1} \Bigl[\textstyle\sum_{S} \hat p_{i,b} \log q
               - |S| \log(1 - \bar p_b + q \bar p_b)\Bigr] - c \cdot \#\text{values listed},

    i.e. :math:`|S|\,\mathrm{KL}(\mathrm{FPR}(S) \Vert \bar p_b)` when FPR(S) > p̄_b. This equals
    :func:`ijdi_scan` with ``lam=0, side="negative"``.

    Args:
      data: DataFrame (or 2-D array) of categorical attributes, all rows (both classes).
      y_true: binary outcomes (0/1).
      y_pred: binary recommendations, or scores turned into recommendations by ``threshold``.
      threshold: scalar or per-row threshold (binary ``y_pred`` passes unchanged for any
        threshold in (0, 1]).
      threshold_rule: ``"ge"`` (:math:`\hat p_b = 1[s \ge \theta]`, the paper) or ``"gt"`` (strict,
        the reference code).
      penalty: complexity penalty per listed value (default 0.1, the IJDI reference's).
      num_restarts, key, q_bounds, max_steps, value_labels: as in :func:`~ofijax.scan.bias_scan`
        (the scan uses ``key``; randomization replicates use keys derived from it).
      p_epsilon: p̄_b is clamped into ``[ε, 1 − ε]`` (only matters for FPR 0 or 1).
      num_replicates: R ≥ 0 randomization replicates (0: no test, ``p_value`` NaN).
      null: ``"bernoulli"`` (y* ~ Bernoulli(p̄_b), p̄_b recomputed from y*) or ``"permutation"``.
      replicate_chunk: replicates per vmapped batch (default: automatic, memory-bounded).

    Returns:
      :class:`IJDIResult`.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import fpr_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> y = np.zeros(200, int)
      >>> yhat = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> res = fpr_scan(df, y, yhat.astype(int))
      >>> res.subset, res.size, round(res.score, 3)
      ({'g': ('a',)}, 100, 15.608)
    """
    return _rate_scan("negative", data, y_true, y_pred, threshold=threshold,
                      threshold_rule=threshold_rule, penalty=penalty, num_restarts=num_restarts,
                      key=key, q_bounds=q_bounds, max_steps=max_steps, p_epsilon=p_epsilon,
                      num_replicates=num_replicates, null=null, replicate_chunk=replicate_chunk,
                      value_labels=value_labels)


def tpr_scan(
    data,
    y_true,
    y_pred,
    *,
    threshold=0.5,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: jax.Array | None = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_replicates: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
) -> IJDIResult:
    r"""TPR-Scan: the subgroup whose true positive rate is raised most significantly.

    The same as :func:`fpr_scan` on the positives :math:`D_P = \{i: y_i = 1\}` with the overall
    TPR as null rate (a raised TPR is a lowered FNR). Equals :func:`ijdi_scan` with ``lam=0,
    side="positive"``. Arguments as in :func:`fpr_scan`.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import tpr_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> yhat = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> tpr_scan(df, np.ones(200, int), yhat.astype(int)).subset
      {'g': ('a',)}
    """
    return _rate_scan("positive", data, y_true, y_pred, threshold=threshold,
                      threshold_rule=threshold_rule, penalty=penalty, num_restarts=num_restarts,
                      key=key, q_bounds=q_bounds, max_steps=max_steps, p_epsilon=p_epsilon,
                      num_replicates=num_replicates, null=null, replicate_chunk=replicate_chunk,
                      value_labels=value_labels)


def ijdi_scan(
    data,
    y_true,
    y_pred,
    p_true,
    *,
    lam: float,
    side: str = "negative",
    mode: str = "reference",
    max_adjustments: int = 100,
    threshold=0.5,
    threshold_rule: str = "ge",
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: jax.Array | None = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_replicates: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
    value_labels=None,
) -> IJDIResult:
    r"""IJDI-Scan: the subgroup with the most significant *insufficiently justified* disparate impact.

    On the chosen side (negatives: FPR; positives: TPR) the IJDI criterion allows a subgroup's
    error-rate excess up to λ times its base-rate excess (paper eq. 3):
    :math:`\sum_{S}(\hat p_{i,b} - \bar p_b) \le \lambda \sum_{S}(p_i - \bar p)`. Bias Scan (q > 1)
    runs with scan outcome :math:`\hat p_{i,b}` and null rate

    .. math:: \hat p_{i,\mathrm{scan}} = \bar p_b + \lambda\,(p_i - \bar p),

    means over the side's rows, clipped to [0, 1]. Algorithm 1 then checks the detected S:

    1. *Edge case 1*, mean_S(p − p̄) < −1e−6 (p(S) < p(~S), where the criterion only asks
       FPR(S) ≤ FPR(~S)): the members of S below p(~S) are raised by the factor α ∈ (0, 1] so that
       mean_S p = p(~S); p_scan is recomputed on S (``mode="reference"``: p̄_b + λ(p − p̄) with the
       frozen p̄, as the authors' code does; ``mode="strict"``: p̄_b, exactly FPR(S) ≤ FPR(~S));
       rescan.
    2. *Edge case 2*, the net clipping on S is negative (mean_S(p_scan − raw) < −1e−6): if
       mean_S raw ≥ 1, p_scan = 1 on S (S cannot score); otherwise p_scan on S is raised toward 1
       by β so that Σ_S p_scan = Σ_S raw; rescan.

    Adjustments accumulate; the loop stops at the first subgroup passing both tests (or scoring 0),
    or after ``max_adjustments`` rescans (``converged=False`` and a warning). Every rescan uses the
    same ``key``. λ = 0 reduces to :func:`fpr_scan` / :func:`tpr_scan`.

    Hazard: a row with p_scan = 0 (raw < 0, likely at large λ) and outcome 1 makes the likelihood
    unbounded. p_scan is therefore clamped into ``[p_epsilon, 1 − p_epsilon]`` where it enters the
    scan (default ε = 1e−6, so such a row adds at most log(1/ε) ≈ 13.8); with ``p_epsilon=0`` the
    q bracket caps it instead (log q ≤ log q_hi). A warning names such rows when they are in the
    detected subgroup.

    Args:
      data: DataFrame (or 2-D array) of categorical attributes, all rows (both classes).
      y_true: binary outcomes (0/1).
      y_pred: binary recommendations, or scores thresholded by ``threshold``/``threshold_rule``.
      p_true: base-rate probabilities :math:`p_i = \Pr(y_i = 1 \mid x_i)` in [0, 1], e.g. from
        :func:`estimate_true_probabilities` (not the audited classifier's scores).
      lam: λ ≥ 0 (see :func:`lambda_from_costs`).
      side: ``"negative"`` (FPR, rows with y_true = 0) or ``"positive"`` (TPR, y_true = 1).
      mode: ``"reference"`` (default) or ``"strict"``: the p_scan recomputed on S after edge case 1.
      max_adjustments: cap K on rescans (default 100).
      threshold, threshold_rule, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
        num_replicates, null, replicate_chunk, value_labels: as in :func:`fpr_scan`; the Bernoulli
        null draws y* from the initial clipped p_scan and each replicate reruns Algorithm 1 in full.

    Returns:
      :class:`IJDIResult` (with the adjustment ``history``).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import ijdi_scan
      >>> df = pd.DataFrame({"g": ["a", "b"] * 100})
      >>> p = np.where(df.g == "a", 0.6, 0.4)          # group a has the higher base rate
      >>> yhat = np.where(df.g == "a", np.arange(200) % 8 != 0, np.arange(200) % 10 == 1)
      >>> y = np.zeros(200, int)
      >>> [ijdi_scan(df, y, yhat.astype(int), p, lam=lam).subset for lam in (0.0, 5.0)]
      [{'g': ('a',)}, {}]
    """
    lam = check_nonnegative_scalar(lam, "lam")
    check_choice(mode, "mode", ("reference", "strict"))
    if isinstance(max_adjustments, bool) or not isinstance(max_adjustments, int | np.integer) or (
        max_adjustments < 0
    ):
        raise ValueError(f"max_adjustments: must be an integer ≥ 0; got {max_adjustments!r}.")
    pen, qb, eps = _check_scan_kw(penalty, num_restarts, max_steps, q_bounds, p_epsilon)
    r = check_randomization_args(num_replicates, null, replicate_chunk)
    if p_true is None:
        raise ValueError(
            "p_true: required; pass base-rate probabilities (e.g. estimate_true_probabilities)."
        )
    side_ = _prepare_side(data, y_true, y_pred, p_true, side, threshold, threshold_rule,
                          value_labels)
    spec = NullSpec("ijdi", null, int(num_restarts),
                    None if max_steps is None else int(max_steps),
                    t_bounds=(0.0, math.log(qb[1])),
                    history=max(_HISTORY, int(max_adjustments) + 1))
    return _drive(spec, side_, lam, pen, eps, qb, key, r, null, replicate_chunk,
                  strict=(mode == "strict"), cap=int(max_adjustments))
