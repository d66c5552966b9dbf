"""Differentiable fairness penalties on (soft) group confusion matrices, and a running estimate.

Private module; the public names are re-exported by :mod:`ofijax.diff`.

Every penalty takes ``cms`` of shape ``(..., G, 4)`` (TP, FN, FP, TN) and returns shape ``(...)``.
Groups with ``n ≤ min_size`` (in particular empty groups, n = 0) and groups whose statistic is
undefined (for example a TPR with no positives) are masked out: they contribute nothing, and the
gradient stays finite because the core metrics use the double-``where`` and the statistic is
replaced by 0 *before* any further arithmetic. With fewer than two usable groups the penalty is 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ofijax._validation import as_numpy, check_finite, is_tracer
from ofijax.metrics import (
    base_rate,
    false_negative_rate,
    false_positive_rate,
    group_size,
    marginal_benefit,
    positive_predictive_value,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)

__all__ = [
    "REDUCTIONS",
    "RATES",
    "ofi_penalty",
    "di_penalty",
    "rate_parity_penalty",
    "equalized_odds_penalty",
    "EMAState",
    "CMEstimator",
    "ema_confusion_matrices",
]

REDUCTIONS = ("max_gap", "to_overall", "l2", "lse")

RATES: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tpr": true_positive_rate,
    "fpr": false_positive_rate,
    "fnr": false_negative_rate,
    "tnr": true_negative_rate,
    "ppv": positive_predictive_value,
    "selection": selection_rate,
    "base": base_rate,
}
_STATS = {**RATES, "ofi": marginal_benefit}


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _check_cms(cms: Any, name: str = "cms") -> jax.Array:
    if not is_tracer(cms):
        arr = as_numpy(cms, name)
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name}: must be numeric counts (..., G, 4), got dtype {arr.dtype}.")
        check_finite(arr, name)
        if arr.size and arr.min() < 0:
            raise ValueError(f"{name}: counts must be ≥ 0; got a negative value.")
        # Integer (e.g. int64 ≥ 2**31) and float16 counts become the default float on the host,
        # so they are rounded, never wrapped to int32 or computed in float16.
        if arr.dtype.kind != "f" or arr.dtype.itemsize < 4:
            arr = arr.astype(jnp.result_type(float))
        cms = arr
    c = jnp.asarray(cms)
    if c.ndim < 2 or c.shape[-1] != 4:
        raise ValueError(
            f"{name}: must have shape (..., G, 4) ordered TP, FN, FP, TN; got shape {c.shape}."
        )
    if not jnp.issubdtype(c.dtype, jnp.floating):
        c = c.astype(jnp.result_type(float))
    return c


def _check_options(reduction: str, threshold: Any, temperature: Any, min_size: Any) -> None:
    if reduction not in REDUCTIONS:
        opts = ", ".join(repr(r) for r in REDUCTIONS)
        raise ValueError(f"reduction: must be one of {opts}; got {reduction!r}.")
    for name, value, positive in (
        ("threshold", threshold, False),
        ("temperature", temperature, True),
        ("min_size", min_size, False),
    ):
        if value is None or is_tracer(value):
            continue
        try:
            v = float(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: must be a number; got {value!r}.") from exc
        if not (v == v and abs(v) != float("inf")) or v < 0 or (positive and v == 0):
            need = "> 0" if positive else "≥ 0"
            raise ValueError(f"{name}: must be a finite number {need}; got {value!r}.")


# ---------------------------------------------------------------------------------------------
# the generic gap penalty
# ---------------------------------------------------------------------------------------------


def _safe(stat: jax.Array, valid: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mask undefined statistics to 0 before any arithmetic (keeps gradients finite)."""
    valid = valid & jnp.isfinite(stat)
    return jnp.where(valid, stat, 0.0), valid


def _gap_penalty(
    stats: jax.Array,
    valid: jax.Array,
    overall: jax.Array | None,
    overall_valid: jax.Array | None,
    *,
    reduction: str,
    threshold: Any,
    temperature: Any,
) -> jax.Array:
    """Penalty from per-group statistics ``stats`` of shape ``(..., K, G)`` (K statistics).

    Pairwise gaps :math:`|s_{ki} - s_{kj}|` (``i < j``, both usable) or, for ``"to_overall"``,
    gaps :math:`|s_{kg} - s_{k,\\text{overall}}|`; then an optional hinge and the reduction.
    """
    batch = stats.shape[:-2]
    if reduction == "to_overall":
        gaps = jnp.abs(stats - overall[..., None])  # (..., K, G)
        mask = valid & overall_valid[..., None]
    else:
        g = stats.shape[-1]
        gaps = jnp.abs(stats[..., :, None] - stats[..., None, :])  # (..., K, G, G)
        upper = jnp.triu(jnp.ones((g, g), dtype=bool), k=1)
        mask = valid[..., :, None] & valid[..., None, :] & upper
    mask = jnp.broadcast_to(mask, gaps.shape).reshape(*batch, -1)
    gaps = gaps.reshape(*batch, -1)
    if threshold is not None:
        gaps = jax.nn.relu(gaps - threshold)
    gaps = jnp.where(mask, gaps, 0.0)
    count = jnp.sum(mask, axis=-1)
    if reduction in ("max_gap", "to_overall"):
        # Exact max; its gradient is a valid subgradient (shared among ties), 0 when no pair.
        return jnp.max(gaps, axis=-1)
    if reduction == "l2":
        return jnp.sum(gaps**2, axis=-1) / jnp.maximum(count, 1)
    # "lse": log-mean-exp, between the mean and the max of the gaps; 0 when all gaps are 0.
    t = jnp.asarray(temperature, dtype=gaps.dtype)
    has = count > 0
    b = jnp.where(has[..., None], mask, True).astype(gaps.dtype)
    lme = jax.nn.logsumexp(gaps / t, axis=-1, b=b) - jnp.log(jnp.where(has, count, 1))
    return jnp.where(has, t * lme, 0.0)


def _log_selection(c: jax.Array, eps: jax.Array) -> jax.Array:
    """log(selection rate + eps), NaN where undefined (finite gradients)."""
    s = selection_rate(c)
    ok = jnp.isfinite(s) & (s + eps > 0)
    return jnp.where(ok, jnp.log(jnp.where(ok, s + eps, 1.0)), jnp.nan)


@functools.partial(jax.jit, static_argnames=("stat_names", "reduction"))
def _penalty_core(c, threshold, temperature, min_size, overall, eps, *, stat_names, reduction):
    """Jitted core: the core metrics see tracers, so empty groups are masked, not rejected."""

    def stat(name: str, cms: jax.Array) -> jax.Array:
        return _log_selection(cms, eps) if name == "log_selection" else _STATS[name](cms)

    valid_n = group_size(c) > min_size
    stats, valids = [], []
    for name in stat_names:
        s, v = _safe(stat(name, c), valid_n)
        stats.append(s)
        valids.append(v)
    stats_a = jnp.stack(stats, axis=-2)  # (..., K, G)
    valid_a = jnp.stack(valids, axis=-2)
    o = ov = None
    if reduction == "to_overall":
        oc = jnp.sum(c, axis=-2) if overall is None else overall
        o_list, ov_list = [], []
        for name in stat_names:
            s, v = _safe(stat(name, oc), group_size(oc) > 0)
            o_list.append(s)
            ov_list.append(v)
        o = jnp.stack(o_list, axis=-1)  # (..., K)
        ov = jnp.stack(ov_list, axis=-1)
    return _gap_penalty(
        stats_a, valid_a, o, ov, reduction=reduction, threshold=threshold, temperature=temperature
    )


def _penalty_from_stat(
    cms: ArrayLike,
    stat_names: tuple[str, ...],
    *,
    reduction: str,
    threshold: Any,
    temperature: Any,
    min_size: Any,
    overall: ArrayLike | None,
    eps: Any = 0.0,
) -> jax.Array:
    _check_options(reduction, threshold, temperature, min_size)
    c = _check_cms(cms)
    if overall is not None:
        overall = _check_cms(jnp.asarray(overall)[..., None, :], "overall")[..., 0, :]
    return _penalty_core(
        c,
        threshold,
        temperature,
        0.0 if min_size is None else min_size,
        overall if reduction == "to_overall" else None,
        eps,
        stat_names=stat_names,
        reduction=reduction,
    )


_COMMON_ARGS = """\
        reduction: how gaps are combined:
            ``"max_gap"``: the largest pairwise gap, :math:`\\max_{i<j} |s_i - s_j|` (exact max,
            subgradient shared among ties);
            ``"to_overall"``: the largest gap to the overall statistic,
            :math:`\\max_g |s_g - s_{\\text{overall}}|`;
            ``"l2"``: the mean squared pairwise gap;
            ``"lse"``: the log-mean-exp :math:`T \\log \\frac{1}{K}\\sum_{i<j} e^{|s_i - s_j|/T}`,
            a smooth max that lies between the mean and the max of the gaps, is 0 when all gaps
            are 0, and tends to ``"max_gap"`` as :math:`T \\to 0`.
        threshold: optional hinge :math:`\\tau`; each gap becomes :math:`\\max(0, |\\cdot| - \\tau)`
            so gaps within the tolerance cost nothing.
        temperature: :math:`T > 0` of ``"lse"`` (ignored otherwise).
        min_size: groups with :math:`n \\le` ``min_size`` are excluded (default 0: only empty
            groups).
        overall: CM ``(..., 4)`` of the whole population for ``"to_overall"``; defaults to the sum
            of the group CMs, which is right when the groups partition the rows (one-hot).
"""


def _with_common_args(f: Callable) -> Callable:
    f.__doc__ = f.__doc__.replace("        {common_args}\n", _COMMON_ARGS)
    return f


@_with_common_args
def ofi_penalty(
    cms: ArrayLike,
    *,
    reduction: str = "max_gap",
    threshold: float | None = None,
    temperature: float = 0.05,
    min_size: float = 0.0,
    overall: ArrayLike | None = None,
) -> jax.Array:
    r"""Penalty on the Objective Fairness Index between groups.

    Uses the per-group marginal benefit :math:`\mathcal{B}_g = (FP_g - FN_g)/n_g` and the gaps
    :math:`|\mathrm{OFI}_{ij}| = |\mathcal{B}_i - \mathcal{B}_j|`. On soft confusion matrices
    :math:`\mathcal{B}_g = \bar p_g - \bar y_g`, the expected marginal benefit of the randomized
    classifier, so the penalty is an exact expectation, not a relaxation of a ratio.

    Args:
        cms: ``(..., G, 4)`` group confusion matrices (hard or soft), TP, FN, FP, TN.
        {common_args}

    Returns:
        The penalty, shape ``(...)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import ofi_penalty
        >>> cms = jnp.array([[1, 1, 0, 5], [1, 7, 0, 11]])  # OFI paper Table 1, scenario alpha
        >>> round(float(ofi_penalty(cms)), 4)  # |OFI| = 30/133
        0.2256
        >>> float(ofi_penalty(cms, threshold=0.3))
        0.0
    """
    return _penalty_from_stat(
        cms,
        ("ofi",),
        reduction=reduction,
        threshold=threshold,
        temperature=temperature,
        min_size=min_size,
        overall=overall,
    )


@_with_common_args
def di_penalty(
    cms: ArrayLike,
    *,
    reduction: str = "max_gap",
    threshold: float | None = None,
    temperature: float = 0.05,
    eps: float = 1e-3,
    min_size: float = 0.0,
    overall: ArrayLike | None = None,
) -> jax.Array:
    r"""Penalty on disparate impact, as gaps of log selection rates.

    With selection rate :math:`b_g = \hat P_g / n_g` (the paper's DI numerator) the gaps are
    :math:`|\log \mathrm{DI}_{ij}| = |\log(b_i + \epsilon) - \log(b_j + \epsilon)|`; the
    :math:`\epsilon` keeps the value and its gradient finite at zero selection. ``threshold =
    log(5/4)`` encodes the four-fifths rule.

    Args:
        cms: ``(..., G, 4)`` group confusion matrices (hard or soft).
        {common_args}
        eps: smoothing :math:`\epsilon > 0` added to every selection rate.

    Returns:
        The penalty, shape ``(...)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import di_penalty
        >>> cms = jnp.array([[1, 0, 0, 5], [7, 0, 1, 10]])  # Table 1, scenario A: DI = 3/8
        >>> round(float(di_penalty(cms, eps=0.0)), 4)  # |log(3/8)|
        0.9808
    """
    if not is_tracer(eps):
        try:
            e = float(eps)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"eps: must be a number ≥ 0; got {eps!r}.") from exc
        if not (e == e) or e < 0 or e == float("inf"):
            raise ValueError(f"eps: must be a finite number ≥ 0; got {eps!r}.")

    return _penalty_from_stat(
        cms,
        ("log_selection",),
        eps=eps,
        reduction=reduction,
        threshold=threshold,
        temperature=temperature,
        min_size=min_size,
        overall=overall,
    )


@_with_common_args
def rate_parity_penalty(
    cms: ArrayLike,
    *,
    rates: Sequence[str] = ("tpr", "fpr"),
    reduction: str = "max_gap",
    threshold: float | None = None,
    temperature: float = 0.05,
    min_size: float = 0.0,
    overall: ArrayLike | None = None,
) -> jax.Array:
    r"""Penalty on gaps of group rates (equalized odds, equal opportunity, demographic parity).

    For each named rate :math:`r` the gaps :math:`|r_i - r_j|` of all rates are pooled before
    the reduction, so ``rates=("tpr", "fpr")`` with ``"max_gap"`` is fairlearn's
    equalized-odds difference and ``rates=("selection",)`` its demographic-parity difference.
    A group is skipped for a rate whose denominator is 0 (for example a TPR without positives).

    Args:
        cms: ``(..., G, 4)`` group confusion matrices (hard or soft).
        rates: names among ``"tpr"``, ``"fpr"``, ``"fnr"``, ``"tnr"``, ``"ppv"``,
            ``"selection"``, ``"base"``.
        {common_args}

    Returns:
        The penalty, shape ``(...)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import rate_parity_penalty
        >>> cms = jnp.array([[3, 1, 1, 3], [1, 1, 1, 1]])  # TPR 3/4 vs 1/2, FPR 1/4 vs 1/2
        >>> float(rate_parity_penalty(cms))
        0.25
        >>> float(rate_parity_penalty(cms, rates=("tpr",), reduction="l2"))
        0.0625
    """
    if isinstance(rates, str):
        rates = (rates,)
    rates = tuple(rates)
    if not rates:
        raise ValueError("rates: name at least one rate, e.g. ('tpr', 'fpr').")
    for r in rates:
        if r not in RATES:
            opts = ", ".join(repr(k) for k in RATES)
            raise ValueError(f"rates: each must be one of {opts}; got {r!r}.")
    return _penalty_from_stat(
        cms,
        rates,
        reduction=reduction,
        threshold=threshold,
        temperature=temperature,
        min_size=min_size,
        overall=overall,
    )


def equalized_odds_penalty(cms: ArrayLike, **kwargs: Any) -> jax.Array:
    r"""Equalized-odds penalty: :func:`rate_parity_penalty` with ``rates=("tpr", "fpr")``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import equalized_odds_penalty
        >>> float(equalized_odds_penalty(jnp.array([[3, 1, 1, 3], [1, 1, 1, 1]])))
        0.25
    """
    if "rates" in kwargs:
        raise ValueError("rates: equalized_odds_penalty fixes rates=('tpr', 'fpr'); "
                         "use rate_parity_penalty to choose other rates.")
    return rate_parity_penalty(cms, rates=("tpr", "fpr"), **kwargs)


# ---------------------------------------------------------------------------------------------
# running estimate
# ---------------------------------------------------------------------------------------------


class EMAState(NamedTuple):
    """State of :func:`ema_confusion_matrices`.

    Attributes:
        cms: the (biased) exponential moving average of the group CMs, ``(..., G, 4)``.
        count: number of updates so far (int32 scalar).
    """

    cms: jax.Array
    count: jax.Array


class CMEstimator(NamedTuple):
    """An optax-style pair of pure functions that smooths group CMs across batches.

    Attributes:
        init: ``init(cms_like) -> state``; ``cms_like`` gives the shape ``(..., G, 4)``.
        update: ``update(cms, state) -> (estimate, new_state)``. ``estimate`` is differentiable
            in the current ``cms`` only; the history enters as a constant.
    """

    init: Callable[[ArrayLike], Any]
    update: Callable[[ArrayLike, Any], tuple[jax.Array, Any]]


def ema_confusion_matrices(decay: float, *, debias: bool = True) -> CMEstimator:
    r"""Exponential moving average of group confusion matrices, for mini-batch training.

    .. math::

        m_t = \delta\, m_{t-1} + (1-\delta)\, C_t,\qquad
        \hat C_t = m_t / (1-\delta^t)\ \text{(debiased)}

    A group that is small or absent in one batch keeps the counts it had before, so
    :math:`\mathcal{B}_g = (FP_g - FN_g)/n_g` of :math:`\hat C_t` is a ratio of running sums
    (never a running mean of noisy ratios) and penalties stay defined. Gradients flow only
    through the current batch's :math:`(1-\delta) C_t`; the history is a constant
    (``stop_gradient``). ``decay = 0`` returns the batch CMs unchanged.

    Args:
        decay: :math:`\delta \in [0, 1)`.
        debias: divide by :math:`1-\delta^t` (as Adam does) so the estimate has the scale of
            one batch from the first step.

    Returns:
        :class:`CMEstimator` ``(init, update)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import ema_confusion_matrices
        >>> est = ema_confusion_matrices(0.5)
        >>> state = est.init(jnp.zeros((2, 4)))
        >>> c1 = jnp.array([[2.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])  # group 1 absent
        >>> c2 = jnp.array([[0.0, 2.0, 0.0, 2.0], [1.0, 0.0, 1.0, 2.0]])
        >>> est1, state = est.update(c1, state)
        >>> est2, state = est.update(c2, state)
        >>> est2.tolist()  # (0.5 * 0.5 * c1 + 0.5 * c2) / (1 - 0.25)
        [[0.6666666865348816, 1.3333333730697632, 0.0, 2.0], [0.6666666865348816, 0.0, 0.6666666865348816, 1.3333333730697632]]
    """  # noqa: E501
    try:
        d = float(decay)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"decay: must be a number in [0, 1); got {decay!r}.") from exc
    if not (0.0 <= d < 1.0):
        raise ValueError(f"decay: must lie in [0, 1) (e.g. 0.9); got {decay!r}.")

    def init(cms_like: ArrayLike) -> EMAState:
        c = jnp.asarray(cms_like)
        if c.ndim < 2 or c.shape[-1] != 4:
            raise ValueError(f"cms_like: must have shape (..., G, 4); got shape {c.shape}.")
        dtype = c.dtype if jnp.issubdtype(c.dtype, jnp.floating) else jnp.result_type(float)
        return EMAState(jnp.zeros(c.shape, dtype), jnp.zeros((), jnp.int32))

    def update(cms: ArrayLike, state: EMAState) -> tuple[jax.Array, EMAState]:
        c = jnp.asarray(cms)
        if c.shape != state.cms.shape:
            raise ValueError(
                f"cms: shape {c.shape} does not match the estimator state {state.cms.shape}."
            )
        c = c.astype(state.cms.dtype)
        m = d * jax.lax.stop_gradient(state.cms) + (1.0 - d) * c
        count = state.count + 1
        est = m / (1.0 - d ** count.astype(m.dtype)) if debias else m
        return est, EMAState(jax.lax.stop_gradient(m), count)

    return CMEstimator(init, update)
