"""Evaluation of trained models, and the strengths × seeds trade-off sweep (train, then evaluate).

Private module; the public names are re-exported by :mod:`ofijax.diff`. It owns
:class:`Evaluation` and :func:`evaluate` (hard-threshold accuracy, group CMs, OFI and DI of a
model; with a key, intervals and the noise floor of :mod:`ofijax.diff._uncertainty`'s kind), and
:func:`tradeoff_sweep`, which trains with :mod:`ofijax.diff._train`'s step and evaluates each run
inside one compiled program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ofijax._validation import as_key, as_numpy
from ofijax.diff._cm import soft_cms
from ofijax.diff._penalty import CMEstimator
from ofijax.diff._train import (
    Batch,
    PenaltyState,
    StepMetrics,
    _build_step,
    _check_batch,
    _check_model_input,
    _check_size,
    _check_train_options,
    _default_penalty,
    _logits,
    _resolve_loss,
)
from ofijax.metrics import disparate_impact, ofi, pairwise

if TYPE_CHECKING:  # optax is imported on first use
    import optax

__all__ = ["Evaluation", "evaluate", "SweepResult", "tradeoff_sweep"]




class Evaluation(NamedTuple):
    """Hard-threshold evaluation of a model on a :class:`Batch`.

    Attributes:
        accuracy: (weighted) accuracy of :math:`\\hat y = [\\mathrm{logit} > 0]`.
        cms: ``(G, 4)`` hard group confusion matrices.
        ofi: ``(G, G)`` OFI matrix, :math:`\\mathcal{B}_i - \\mathcal{B}_j` (NaN for empty groups).
        di: ``(G, G)`` disparate impact :math:`b_i / b_j` (NaN where undefined).
        max_abs_ofi: largest :math:`|\\mathrm{OFI}_{ij}|` over non-empty groups.
    """

    accuracy: jax.Array
    cms: jax.Array
    ofi: jax.Array
    di: jax.Array
    max_abs_ofi: jax.Array


def _evaluate(apply_fn: Callable, params: Any, data: Batch) -> Evaluation:
    n = data.y.shape[0]
    logits = _logits(apply_fn, params, data.x, n)
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


def evaluate(apply_fn: Callable, params: Any, data: Batch) -> Evaluation:
    """Hard-threshold accuracy, group CMs, OFI and DI of a trained model (predict 1 iff logit > 0).

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import Batch, evaluate
        >>> data = Batch(jnp.array([[1.0], [-1.0], [1.0]]), jnp.array([1, 1, 0]),
        ...              jnp.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        >>> ev = evaluate(lambda p, x: x[:, 0] * p, 1.0, data)
        >>> ev.cms.tolist(), ev.max_abs_ofi.item()
        ([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], 1.5)
    """
    data = _check_batch(data, "data")
    _check_model_input(apply_fn, params, data.x, set(), "data.x")
    return _evaluate_jit(apply_fn, params, data)


_evaluate_jit = jax.jit(_evaluate, static_argnums=0)


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
    step = _build_step(
        apply_fn,
        optimizer,
        penalty_fn,
        _resolve_loss(loss),
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
        eval_data: :class:`Batch` to evaluate on (default ``data``).

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
    ns = _check_size(num_seeds, "num_seeds")
    nt = _check_size(num_steps, "num_steps")
    s_arr = as_numpy(strengths, "strengths")
    if s_arr.ndim != 1 or s_arr.size == 0 or s_arr.dtype.kind not in "biuf":
        raise ValueError(f"strengths: must be a non-empty 1-D list of numbers; got {strengths!r}.")
    s_float = s_arr.astype(float)
    if np.any(np.isnan(s_float)) or np.any(s_float < 0):
        raise ValueError("strengths: must all be numbers ≥ 0 (no NaN).")
    if not lagrangian and not np.all(np.isfinite(s_float)):
        raise ValueError("strengths: must be finite (only Lagrangian caps may be inf).")
    _check_train_options(0.0, lagrangian, dual_lr, threshold, surrogate_temperature)
    dtype = jnp.result_type(float)
    data = _check_batch(data, "data")
    eval_data = data if eval_data is None else _check_batch(eval_data, "eval_data")
    if eval_data.groups.shape[1] != data.groups.shape[1]:
        raise ValueError(
            f"eval_data.groups: has {eval_data.groups.shape[1]} groups but data.groups has "
            f"{data.groups.shape[1]}; use the same group columns."
        )
    if callable(init_params):
        init_fn, params0 = init_params, None
        shapes = jax.eval_shape(init_fn, key)
    else:
        init_fn, params0 = None, init_params
        shapes = params0
    _check_model_input(apply_fn, shapes, data.x, set(), "data.x")
    if eval_data is not data:
        _check_model_input(apply_fn, shapes, eval_data.x, set(), "eval_data.x")
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
        penalty_fn=_default_penalty if penalty_fn is None else penalty_fn,
        loss=loss,
        lagrangian=lagrangian,
        dual_lr=float(dual_lr),
        threshold=float(threshold),
        estimator=estimator,
        surrogate_temperature=float(surrogate_temperature),
    )


@functools.cache
def _default_optimizer():
    """``optax.adam(0.05)``, one shared object (so jitted sweeps reuse their compilation)."""
    import optax

    return optax.adam(0.05)
