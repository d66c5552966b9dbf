"""Evaluation of trained models, and the strengths × seeds trade-off sweep (train, then evaluate).

Private module; the public names are re-exported by :mod:`ofijax.diff`. It owns
:class:`Evaluation` and :func:`evaluate` (hard-threshold accuracy, group CMs, OFI and DI of a
model; with a key, simultaneous bootstrap intervals and the noise floor, from group counts by
:func:`held_out_uncertainty`), and :func:`tradeoff_sweep`, which trains with
:mod:`ofijax.diff._train`'s step and evaluates each run inside one compiled program.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ofijax._validation import as_key, as_numpy, check_fraction
from ofijax.diff._cm import GroupWeights, soft_cms
from ofijax.diff._penalty import CMEstimator
from ofijax.diff._train import (
    Batch,
    PenaltyState,
    StepMetrics,
    build_step,
    check_batch,
    check_model_input,
    check_size,
    check_train_options,
    default_penalty,
    logits_of,
    resolve_loss,
)
from ofijax.distributions import sample_multinomial
from ofijax.metrics import disparate_impact, ofi, pairwise

if TYPE_CHECKING:  # optax is imported on first use
    import optax

__all__ = ["Evaluation", "evaluate", "SweepResult", "tradeoff_sweep"]




class Evaluation(NamedTuple):
    """Hard-threshold evaluation of a model, with held-out uncertainty when a key is given.

    Attributes:
        accuracy: (weighted) accuracy of :math:`\\hat y = [\\mathrm{logit} > 0]`.
        cms: ``(G, 4)`` hard group confusion matrices.
        ofi: ``(G, G)`` OFI matrix, :math:`\\mathcal{B}_i - \\mathcal{B}_j` (NaN for empty groups).
        di: ``(G, G)`` disparate impact :math:`b_i / b_j` (NaN where undefined).
        max_abs_ofi: largest :math:`|\\mathrm{OFI}_{ij}|` over non-empty groups.
        ofi_interval: ``(G, G, 2)`` simultaneous intervals (lower, upper) for every
            :math:`\\mathrm{OFI}_{ij}` at level ``confidence`` (studentized max-t bootstrap;
            NaN for empty groups).
        max_abs_ofi_interval: ``(2,)`` interval for :math:`\\max_{ij}|\\mathrm{OFI}_{ij}|` implied
            by the simultaneous intervals (lower bound 0 when every interval covers 0).
        noise_floor: the ``confidence`` quantile of :math:`\\max|\\mathrm{OFI}|` when every group's
            CM is drawn from the pooled cell probabilities at its size (no group difference).
        noise_samples: ``(num_samples,)`` those draws of :math:`\\max|\\mathrm{OFI}|`.
        below_noise_floor: ``max_abs_ofi <= noise_floor``: the observed spread is within what
            identical groups of these sizes show.
        noise_p_value: Monte Carlo p-value :math:`(1 + \\#\\{\\text{draws} \\ge
            \\text{observed}\\})/(1 + \\text{num\\_samples})` of the observed max|OFI| under that
            null (an approximation, never below :math:`1/(1+\\text{num\\_samples})`).
        confidence: the level of the intervals and of the noise floor.

        The fields from ``ofi_interval`` on are ``None`` when :func:`evaluate` ran without a key
        (deprecated) and inside :func:`tradeoff_sweep`.
    """

    accuracy: jax.Array
    cms: jax.Array
    ofi: jax.Array
    di: jax.Array
    max_abs_ofi: jax.Array
    ofi_interval: Any = None
    max_abs_ofi_interval: Any = None
    noise_floor: Any = None
    noise_samples: Any = None
    below_noise_floor: Any = None
    noise_p_value: Any = None
    confidence: Any = None

    def describe(self) -> str:
        """One plain sentence on accuracy, max|OFI| with its interval, and the noise floor."""
        m = float(self.max_abs_ofi)
        head = f"accuracy {float(self.accuracy):.4f}; max|OFI| {m:.4f}"
        if self.noise_floor is None:
            return head + " (no interval: pass a key to evaluate)."
        lo, hi = (float(v) for v in self.max_abs_ofi_interval)
        lvl = f"{100 * float(self.confidence):g}%"
        floor = float(self.noise_floor)
        if not np.isfinite(floor):
            return head + " (fewer than two non-empty groups: no interval, no noise floor)."
        verdict = (
            f"below the noise floor {floor:.4f} ({lvl} quantile of max|OFI| for identical groups "
            f"of these sizes): no evidence of a group difference"
            if self.below_noise_floor
            else f"above the noise floor {floor:.4f} ({lvl} quantile of max|OFI| for identical "
            f"groups of these sizes; Monte Carlo p ≈ {float(self.noise_p_value):.3g})"
        )
        return f"{head} ({lvl} interval {lo:.4f} to {hi:.4f}), {verdict}."


def _evaluate(apply_fn: Callable, params: Any, data: Batch) -> Evaluation:
    n = data.y.shape[0]
    logits = logits_of(apply_fn, params, data.x, n)
    pred = (logits > 0).astype(jnp.result_type(float))
    cms = soft_cms(data.y, pred, data.groups, data.weight)
    o = pairwise(ofi, cms)
    d = pairwise(disparate_impact, cms)
    yf = data.y.astype(pred.dtype)
    ok = (pred == yf).astype(pred.dtype)
    if data.weight is None:
        acc = jnp.mean(ok)
    else:
        w = data.weight.astype(pred.dtype)
        acc = jnp.sum(w * ok) / jnp.sum(w)
    max_abs = jnp.max(jnp.where(jnp.isfinite(o), jnp.abs(o), 0.0), axis=(-2, -1))
    return Evaluation(acc, cms, o, d, max_abs)


_MISSING = object()


def evaluate(
    key: Any,
    apply_fn: Any,
    params: Any = _MISSING,
    data: Any = _MISSING,
    *,
    num_samples: int = 2000,
    confidence: float = 0.95,
) -> Evaluation:
    r"""Held-out accuracy, OFI with simultaneous intervals, and the noise floor of a model.

    Predicts 1 (beneficial) iff the logit is > 0 and reports, per group :math:`g` with hard
    counts :math:`C_g = (TP, FN, FP, TN)_g` and :math:`\mathcal{B}_g = (FP_g - FN_g)/n_g`:

    * ``accuracy``, ``cms``, ``ofi`` (:math:`\mathcal{B}_i - \mathcal{B}_j`), ``di``,
      ``max_abs_ofi``;
    * **intervals** (``ofi_interval``, ``max_abs_ofi_interval``): a stratified bootstrap (each
      group's rows resampled within the group, i.e. :math:`C^*_g \sim
      \mathrm{Multinomial}(n_g, C_g/n_g)`), studentized with
      :math:`\widehat{se}_{ij}^2 = v_i + v_j`, :math:`v_g = (q^+_g + q^-_g - (q^+_g -
      q^-_g)^2)/n_g` (:math:`q^\pm` the FP and FN shares, each with half a count added so that
      :math:`v_g > 0`). With :math:`c` the ``confidence`` quantile of
      :math:`\max_{i<j} |\mathrm{OFI}^*_{ij} - \mathrm{OFI}_{ij}| / \widehat{se}^*_{ij}`, the
      intervals :math:`\mathrm{OFI}_{ij} \pm c\,\widehat{se}_{ij}` hold simultaneously, so
      :math:`\max|\mathrm{OFI}|` lies in :math:`[\max_{ij}(|\mathrm{OFI}_{ij}| - c\,
      \widehat{se}_{ij})^+,\ \max_{ij}(|\mathrm{OFI}_{ij}| + c\,\widehat{se}_{ij})]` with at least
      that confidence. (A percentile bootstrap of the maximum itself is biased upwards near 0
      and under-covers there.)
    * the **noise floor**: every group's CM drawn as :math:`\mathrm{Multinomial}(n_g, \bar
      p)` from the pooled cell probabilities :math:`\bar p = \sum_g C_g / \sum_g n_g` of the
      evaluated predictions (:func:`ofijax.distributions.sample_multinomial`), giving the
      distribution of :math:`\max|\mathrm{OFI}|` for groups that do not differ; its
      ``confidence`` quantile is ``noise_floor`` and ``below_noise_floor`` says whether the
      observed value is within it.

    With ``sample_weight`` the proportions are weighted and :math:`n_g` is the Kish effective size
    :math:`(\sum w)^2 / \sum w^2` rounded (an approximation). Random draws are keyed per group
    by the group's rank in a canonical order of the CMs, so results do not depend on group
    names or column order.

    Args:
        key: ``jax.random.key``/``PRNGKey`` or int seed for the bootstrap and noise draws
            (first, required; ``evaluate(apply_fn, params, data)`` without a key is deprecated
            and leaves the interval fields ``None``).
        apply_fn: ``apply_fn(params, x) -> logits (N,)``.
        params: the model's parameters.
        data: a :class:`Batch` with one-hot groups (each row in at most one group).
        num_samples: bootstrap and noise draws (≥ 100).
        confidence: level of the intervals and quantile of the noise floor, in (0, 1).

    Returns:
        :class:`Evaluation`; :meth:`Evaluation.describe` says it in one sentence.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import Batch, evaluate
        >>> data = Batch(jnp.array([[1.0], [-1.0], [1.0]]), jnp.array([1, 1, 0]),
        ...              jnp.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        >>> ev = evaluate(0, lambda p, x: x[:, 0] * p, 1.0, data, num_samples=200)
        >>> ev.cms.tolist(), ev.max_abs_ofi.item()
        ([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], 1.5)
        >>> ev.ofi_interval.shape, bool(ev.max_abs_ofi_interval[0] <= 1.5)
        ((2, 2, 2), True)
    """
    if callable(key) and data is _MISSING:
        warnings.warn(
            "evaluate(apply_fn, params, data) without a key is deprecated: pass a key first, "
            "evaluate(key, apply_fn, params, data), to get intervals and the noise floor.",
            DeprecationWarning,
            stacklevel=2,
        )
        apply_fn, params, data, key = key, apply_fn, params, None
    elif params is _MISSING or data is _MISSING:
        raise TypeError("evaluate: call evaluate(key, apply_fn, params, data).")
    if key is not None:
        key = as_key(key)
        if isinstance(num_samples, bool) or not isinstance(num_samples, int | np.integer) or \
                num_samples < 100:
            raise ValueError(f"num_samples: must be an integer ≥ 100; got {num_samples!r}.")
        confidence = check_fraction(confidence, "confidence")
    data = check_batch(data, "data")
    check_model_input(apply_fn, params, data.x, set(), "data.x")
    ev = _evaluate_jit(apply_fn, params, data)
    if key is None:
        return ev
    gw = np.asarray(data.groups, dtype=np.float64)
    if not (np.all((gw == 0) | (gw == 1)) and np.all(gw.sum(axis=1) <= 1)):
        raise ValueError(
            "data.groups: intervals and the noise floor need one-hot groups (each row in at most "
            "one group, weights 0/1); build them with one_hot_groups(labels) (combine="
            "'intersect')."
        )
    logits = np.asarray(logits_of(apply_fn, params, data.x, data.y.shape[0]))
    pred = (logits > 0).astype(np.float64)
    y = np.asarray(data.y, dtype=np.float64)
    w = np.ones_like(y) if data.weight is None else np.asarray(data.weight, dtype=np.float64)
    cells = np.stack([y * pred, y * (1 - pred), (1 - y) * pred, (1 - y) * (1 - pred)], axis=1)
    cms = np.einsum("nk,ng->gk", cells * w[:, None], gw)  # float64: exact for integer weights
    if data.weight is None:
        sizes = cms.sum(axis=1)
    else:
        sw, sw2 = gw.T @ w, gw.T @ (w * w)
        sizes = np.where(sw2 > 0, np.round(sw * sw / np.where(sw2 > 0, sw2, 1)), 0)
    return ev._replace(**held_out_uncertainty(key, cms, sizes.astype(np.int64), int(num_samples),
                                              confidence, float(ev.max_abs_ofi)))


_evaluate_jit = jax.jit(_evaluate, static_argnums=0)


def _canonical_keys(key: Any, cms: np.ndarray, usable: np.ndarray) -> dict[int, Any]:
    """One key per usable group, by its rank in a canonical (lexicographic CM) order."""
    props = cms / np.maximum(cms.sum(axis=1, keepdims=True), 1e-300)
    order = np.lexsort(np.c_[props, cms.sum(axis=1)].T[::-1])
    ranked = [g for g in order if usable[g]]
    return {int(g): jax.random.fold_in(key, r) for r, g in enumerate(ranked)}


def _draw(key: Any, n: int, probs: np.ndarray, num_samples: int) -> np.ndarray:
    p = np.clip(probs, 0, None)
    return np.asarray(sample_multinomial(key, int(n), p / p.sum(), (num_samples,)), np.float64)


def _benefit_and_var(c: np.ndarray, n: Any) -> tuple[np.ndarray, np.ndarray]:
    """B = (FP − FN)/n and its multinomial variance with half a count added to FP and FN."""
    b = (c[..., 2] - c[..., 1]) / n
    qp, qn = (c[..., 2] + 0.5) / (n + 1), (c[..., 1] + 0.5) / (n + 1)
    return b, (qp + qn - (qp - qn) ** 2) / n


def held_out_uncertainty(
    key: Any,
    cms: np.ndarray,
    sizes: np.ndarray,
    num_samples: int,
    confidence: float,
    observed_max: float,
) -> dict[str, Any]:
    """Simultaneous OFI intervals, the max|OFI| interval and the noise floor from group CMs.

    Package-internal core of :func:`evaluate` (counts level): ``cms`` ``(G, 4)`` float64 counts,
    ``sizes`` ``(G,)`` integer sample sizes (0 = empty group, left out).
    """
    g = cms.shape[0]
    tot = cms.sum(axis=1)
    usable = (sizes > 0) & (tot > 0)
    idx = np.flatnonzero(usable)
    nan2 = np.full((g, g, 2), np.nan)
    out = {
        "ofi_interval": nan2,
        "max_abs_ofi_interval": np.full(2, np.nan),
        "noise_floor": np.nan,
        "noise_samples": np.full(num_samples, np.nan),
        "below_noise_floor": False,
        "noise_p_value": np.nan,
        "confidence": confidence,
    }
    for k in idx:
        nan2[k, k] = 0.0
    if idx.size < 2:
        return out
    k_boot, k_null = jax.random.split(key)
    boot_keys = _canonical_keys(k_boot, cms, usable)
    null_keys = _canonical_keys(k_null, cms, usable)
    n = sizes[idx].astype(np.float64)
    props = cms[idx] / tot[idx, None]
    counts = props * n[:, None]  # the observed CM at the (effective) size n
    pooled = cms[idx].sum(axis=0) / tot[idx].sum()
    boot = np.stack([_draw(boot_keys[int(k)], sizes[k], props[j], num_samples)
                     for j, k in enumerate(idx)], axis=1)  # (S, G', 4)
    null = np.stack([_draw(null_keys[int(k)], sizes[k], pooled, num_samples)
                     for k in idx], axis=1)
    b, v = _benefit_and_var(counts, n)
    bs, vs = _benefit_and_var(boot, n)
    iu, ju = np.triu_indices(idx.size, k=1)
    o = b[iu] - b[ju]
    se = np.sqrt(v[iu] + v[ju])
    t = np.abs((bs[:, iu] - bs[:, ju]) - o) / np.sqrt(vs[:, iu] + vs[:, ju])
    c = float(np.quantile(t.max(axis=1), confidence, method="higher"))
    lo, hi = np.clip(o - c * se, -2, 2), np.clip(o + c * se, -2, 2)
    for p, (a_, b_) in enumerate(zip(iu, ju)):
        i, j = idx[a_], idx[b_]
        nan2[i, j] = (lo[p], hi[p])
        nan2[j, i] = (-hi[p], -lo[p])
    max_lo = float(np.max(np.maximum(0.0, np.maximum(lo, -hi))))
    max_hi = float(np.max(np.maximum(np.abs(lo), np.abs(hi))))
    bn = (null[..., 2] - null[..., 1]) / n
    noise = bn.max(axis=1) - bn.min(axis=1)
    floor = float(np.quantile(noise, confidence, method="higher"))
    exceed = int(np.sum(noise >= observed_max - 1e-12))
    out.update(
        ofi_interval=nan2,
        max_abs_ofi_interval=np.array([max_lo, max_hi]),
        noise_floor=floor,
        noise_samples=noise,
        below_noise_floor=bool(observed_max <= floor),
        noise_p_value=(1 + exceed) / (1 + num_samples),
    )
    return out


class SweepResult(NamedTuple):
    """Result of :func:`tradeoff_sweep`; every field has leading axes ``(S, R)`` (strengths, seeds).

    Attributes:
        strengths: ``(S,)`` the penalty strengths.
        params: the trained parameters (pytree, leaves ``(S, R, ...)``).
        accuracy: ``(S, R)`` hard-threshold accuracy on the evaluation data.
        cms: ``(S, R, G, 4)`` hard group confusion matrices.
        ofi: ``(S, R, G, G)`` OFI matrices.
        di: ``(S, R, G, G)`` disparate-impact matrices.
        max_abs_ofi: ``(S, R)`` largest :math:`|\\mathrm{OFI}|`.
        history: :class:`StepMetrics` with leaves ``(S, R, num_steps)``.
    """

    strengths: jax.Array
    params: Any
    accuracy: jax.Array
    cms: jax.Array
    ofi: jax.Array
    di: jax.Array
    max_abs_ofi: jax.Array
    history: StepMetrics


@functools.partial(
    jax.jit,
    static_argnames=(
        "init_fn",
        "apply_fn",
        "num_seeds",
        "num_steps",
        "optimizer",
        "penalty_fn",
        "loss",
        "lagrangian",
        "dual_lr",
        "threshold",
        "estimator",
        "surrogate_temperature",
    ),
)
def _sweep(
    key,
    params0,
    data,
    eval_data,
    strengths,
    *,
    init_fn,
    apply_fn,
    num_seeds,
    num_steps,
    optimizer,
    penalty_fn,
    loss,
    lagrangian,
    dual_lr,
    threshold,
    estimator,
    surrogate_temperature,
):
    step = build_step(
        apply_fn,
        optimizer,
        penalty_fn,
        resolve_loss(loss),
        lagrangian,
        dual_lr,
        threshold,
        estimator,
        surrogate_temperature,
    )
    g = data.groups.shape[-1]
    dtype = jnp.result_type(float)

    def run(strength, seed_key):
        params = params0 if init_fn is None else init_fn(seed_key)
        opt_state = optimizer.init(params)
        cm_state = None if estimator is None else estimator.init(jnp.zeros((g, 4), dtype))
        pstate = PenaltyState(jnp.zeros((), dtype), cm_state)

        def body(carry, _):
            p, o, s = carry
            p, o, s, m = step(strength, p, o, data, s)
            return (p, o, s), m

        (params, _, _), hist = jax.lax.scan(body, (params, opt_state, pstate), None, num_steps)
        ev = _evaluate(apply_fn, params, eval_data)
        return params, ev, hist

    seed_keys = jax.random.split(key, num_seeds)
    per_seed = jax.vmap(run, in_axes=(None, 0))
    params, ev, hist = jax.vmap(per_seed, in_axes=(0, None))(strengths, seed_keys)
    return SweepResult(
        strengths, params, ev.accuracy, ev.cms, ev.ofi, ev.di, ev.max_abs_ofi, hist
    )


def tradeoff_sweep(
    key: jax.Array,
    init_params: Any,
    apply_fn: Callable[[Any, jax.Array], jax.Array],
    data: Batch,
    strengths: ArrayLike,
    *,
    num_seeds: int = 1,
    num_steps: int = 200,
    optimizer: optax.GradientTransformation | None = None,
    penalty_fn: Callable[[jax.Array], jax.Array] | None = None,
    loss: str | Callable = "bce",
    lagrangian: bool = False,
    dual_lr: float = 0.1,
    threshold: float = 0.0,
    estimator: CMEstimator | None = None,
    surrogate_temperature: float = 1.0,
    eval_data: Batch | None = None,
) -> SweepResult:
    r"""Train every strength × seed with full-batch steps, as one compiled program.

    Each run is ``num_steps`` steps of :func:`make_train_step`'s update on all of ``data``
    (``jax.lax.scan``), then a hard-threshold :func:`evaluate` on ``eval_data`` (default:
    ``data``). Runs are vectorized with ``vmap`` over seeds and strengths, so the sweep
    compiles once and the whole grid runs as one batched program. The same seed keys are used
    for every strength (common random numbers), so differences across strengths are not
    init noise.

    Args:
        key: a ``jax.random.key``/``PRNGKey`` or an int seed; split into ``num_seeds`` keys,
            one per seed.
        init_params: ``init(key) -> params`` (seeds change the initialization) or a params
            pytree used for every seed (full-batch training is then deterministic and all
            seeds agree).
        apply_fn: ``apply_fn(params, x) -> logits (N,)``.
        data: the training :class:`Batch`.
        strengths: ``(S,)`` penalty coefficients (multiplier caps in Lagrangian mode).
        num_seeds: ``R``.
        num_steps: full-batch steps per run.
        optimizer: optax optimizer (default ``optax.adam(0.05)``). Pass the same object to
            repeated calls to reuse the compiled program.
        penalty_fn: ``penalty_fn(cms) -> scalar``; default ``ofi_penalty`` with ``"max_gap"``.
        loss, lagrangian, dual_lr, threshold, estimator, surrogate_temperature: as in
            :func:`make_train_step`.
        eval_data: :class:`Batch` to evaluate on (default ``data``). Its group columns must
            mean the training groups: the same number of columns and, where both batches carry
            :class:`~ofijax.diff.GroupWeights` (labels), the same labels in the same order;
            otherwise ``ValueError`` naming ``eval_data.groups``.

    Returns:
        :class:`SweepResult` with leading axes ``(S, R)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from ofijax.diff import Batch, logistic_model, tradeoff_sweep
        >>> x = jnp.array([[0.0], [1.0], [2.0], [3.0]])
        >>> data = Batch(x, jnp.array([0, 1, 0, 1]), jnp.array([[1.0, 0], [1, 0], [0, 1], [0, 1]]))
        >>> m = logistic_model(1)
        >>> res = tradeoff_sweep(jax.random.key(0), m.init, m.apply, data, [0.0, 1.0],
        ...                      num_seeds=2, num_steps=5)
        >>> res.accuracy.shape, res.ofi.shape
        ((2, 2), (2, 2, 2, 2))
    """
    key = as_key(key)
    ns = check_size(num_seeds, "num_seeds")
    nt = check_size(num_steps, "num_steps")
    s_arr = as_numpy(strengths, "strengths")
    if s_arr.ndim != 1 or s_arr.size == 0 or s_arr.dtype.kind not in "biuf":
        raise ValueError(f"strengths: must be a non-empty 1-D list of numbers; got {strengths!r}.")
    s_float = s_arr.astype(float)
    if np.any(np.isnan(s_float)) or np.any(s_float < 0):
        raise ValueError("strengths: must all be numbers ≥ 0 (no NaN).")
    if not lagrangian and not np.all(np.isfinite(s_float)):
        raise ValueError("strengths: must be finite (only Lagrangian caps may be inf).")
    check_train_options(0.0, lagrangian, dual_lr, threshold, surrogate_temperature)
    dtype = jnp.result_type(float)
    names = _group_names(data)
    eval_names = names if eval_data is None else _group_names(eval_data)
    data = check_batch(data, "data")
    eval_data = data if eval_data is None else check_batch(eval_data, "eval_data")
    if eval_data.groups.shape[1] != data.groups.shape[1]:
        raise ValueError(
            f"eval_data.groups: has {eval_data.groups.shape[1]} groups but data.groups has "
            f"{data.groups.shape[1]}; use the same group columns (build both with "
            "one_hot_groups on the labels of all rows, then split)."
        )
    if names is not None and eval_names is not None and tuple(names) != tuple(eval_names):
        raise ValueError(
            f"eval_data.groups: its columns are the groups {list(eval_names)!r} but data.groups' "
            f"are {list(names)!r}; the columns must mean the same groups in the same order "
            "(build both with one_hot_groups on the labels of all rows, then split)."
        )
    if callable(init_params):
        init_fn, params0 = init_params, None
        shapes = jax.eval_shape(init_fn, key)
    else:
        init_fn, params0 = None, init_params
        shapes = params0
    check_model_input(apply_fn, shapes, data.x, set(), "data.x")
    if eval_data is not data:
        check_model_input(apply_fn, shapes, eval_data.x, set(), "eval_data.x")
    return _sweep(
        key,
        params0,
        data,
        eval_data,
        jnp.asarray(s_arr, dtype),
        init_fn=init_fn,
        apply_fn=apply_fn,
        num_seeds=ns,
        num_steps=nt,
        optimizer=_default_optimizer() if optimizer is None else optimizer,
        penalty_fn=default_penalty if penalty_fn is None else penalty_fn,
        loss=loss,
        lagrangian=lagrangian,
        dual_lr=float(dual_lr),
        threshold=float(threshold),
        estimator=estimator,
        surrogate_temperature=float(surrogate_temperature),
    )


def _group_names(batch: Any) -> tuple | None:
    groups = getattr(batch, "groups", None)
    return groups.groups if isinstance(groups, GroupWeights) else None


@functools.cache
def _default_optimizer():
    """``optax.adam(0.05)``, one shared object (so jitted sweeps reuse their compilation)."""
    import optax

    return optax.adam(0.05)
