"""Fairness-penalized training: batches, models, and the pure jitted step.

Private module; the public names are re-exported by :mod:`ofijax.diff`. It owns :class:`Batch`
and its checks, the two small models (:func:`logistic_model`, :func:`mlp_model`), the loss and
the step builder behind :func:`make_train_step`; :mod:`ofijax.diff._evaluate` (evaluation, the
sweep) and :mod:`ofijax.diff._estimator` (the scikit-learn estimator) build on them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._validation import as_key, as_numpy, check_binary, check_finite, is_tracer
from ofijax.diff._cm import GroupWeights, check_group_weights, soft_cms
from ofijax.diff._penalty import CMEstimator, ofi_penalty

if TYPE_CHECKING:  # optax is imported on first use (keeps `import ofijax` light; experiments/notes/diff.md)
    import optax

__all__ = [
    "Batch",
    "Model",
    "PenaltyState",
    "StepMetrics",
    "init_penalty_state",
    "logistic_model",
    "mlp_model",
    "make_train_step",
    # package-internal helpers (used by _evaluate and _estimator)
    "bce_loss",
    "build_step",
    "check_batch",
    "check_model_input",
    "check_size",
    "check_train_options",
    "default_penalty",
    "logistic_apply",
    "logits_of",
    "mlp_apply",
    "resolve_loss",
    "adam_cosine",
    "running_mean",
    "epoch_batches",
]


class Batch(NamedTuple):
    """A batch of training (or evaluation) data.

    Attributes:
        x: ``(N, D)`` features.
        y: ``(N,)`` binary labels, 1 = the beneficial outcome.
        groups: ``(N, G)`` group weights, or the :class:`~ofijax.diff.GroupWeights` of
            :func:`ofijax.diff.one_hot_groups` (its labels then name the columns).
        weight: optional ``(N,)`` sample weights (``None`` = all ones).
    """

    x: jax.Array
    y: jax.Array
    groups: jax.Array
    weight: jax.Array | None = None


class StepMetrics(NamedTuple):
    """Per-step training metrics.

    Attributes:
        loss: the minimized objective, task loss + coefficient × penalty.
        task_loss: the (weighted mean) task loss.
        penalty: the fairness penalty on the (estimated) soft CMs of the batch.
        multiplier: the penalty coefficient used in the step (``strength``, or the Lagrange
            multiplier in Lagrangian mode).
    """

    loss: jax.Array
    task_loss: jax.Array
    penalty: jax.Array
    multiplier: jax.Array


class PenaltyState(NamedTuple):
    """Carried state of a stateful train step (Lagrangian mode and/or a CM estimator).

    Attributes:
        multiplier: the Lagrange multiplier :math:`\\lambda \\ge 0` (scalar).
        cm_state: the state of the CM estimator, or ``None``.
    """

    multiplier: jax.Array
    cm_state: Any = None


class Model(NamedTuple):
    """A model as a pair of pure functions.

    Attributes:
        init: ``init(key) -> params`` (``key`` a ``jax.random.key``/``PRNGKey`` or an int seed).
        apply: ``apply(params, x) -> logits`` of shape ``(N,)``.
    """

    init: Callable[[jax.Array], Any]
    apply: Callable[[Any, jax.Array], jax.Array]


# ---------------------------------------------------------------------------------------------
# small models
# ---------------------------------------------------------------------------------------------


def logistic_apply(params: Any, x: jax.Array) -> jax.Array:
    return x @ params["w"] + params["b"]


def mlp_apply(params: Any, x: jax.Array) -> jax.Array:
    h = x
    for layer in params["hidden"]:
        h = jax.nn.relu(h @ layer["w"] + layer["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def logistic_model(num_features: int, *, init_scale: float = 0.01) -> Model:
    r"""Logistic regression :math:`\mathrm{logit} = x w + b` as a :class:`Model`.

    Args:
        num_features: ``D``.
        init_scale: standard deviation of the random initial weights (``key`` decides them).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from ofijax.diff import logistic_model
        >>> m = logistic_model(3)
        >>> m.apply(m.init(jax.random.key(0)), jnp.ones((2, 3))).shape
        (2,)
    """
    d = check_size(num_features, "num_features")
    dtype = jnp.result_type(float)

    def init(key: jax.Array) -> Any:
        return {
            "w": init_scale * jax.random.normal(as_key(key), (d,), dtype),
            "b": jnp.zeros((), dtype),
        }

    return Model(init, logistic_apply)


def mlp_model(num_features: int, hidden: tuple[int, ...] = (16,)) -> Model:
    """A ReLU multilayer perceptron with one logit output, as a :class:`Model` (He init).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from ofijax.diff import mlp_model
        >>> m = mlp_model(3, hidden=(4,))
        >>> m.apply(m.init(jax.random.key(0)), jnp.ones((5, 3))).shape
        (5,)
    """
    d = check_size(num_features, "num_features")
    sizes = [d] + [check_size(h, "hidden") for h in hidden]
    dtype = jnp.result_type(float)

    def init(key: jax.Array) -> Any:
        keys = jax.random.split(as_key(key), len(sizes))
        layers = [
            {
                "w": jax.random.normal(k, (a, b), dtype) * jnp.sqrt(2.0 / a).astype(dtype),
                "b": jnp.zeros((b,), dtype),
            }
            for k, a, b in zip(keys[:-1], sizes[:-1], sizes[1:])
        ]
        out = {
            "w": jax.random.normal(keys[-1], (sizes[-1],), dtype) / jnp.sqrt(sizes[-1]),
            "b": jnp.zeros((), dtype),
        }
        return {"hidden": layers, "out": out}

    return Model(init, mlp_apply)


def running_mean(mean: Any, params: Any, count: jax.Array, include: jax.Array) -> tuple:
    """One step of the running mean of parameter iterates: with ``include`` the iterate joins
    (``count`` + 1 iterates, mean += (params − mean) / (count + 1)); otherwise nothing moves."""
    new = count + include.astype(count.dtype)
    frac = jnp.where(include, 1.0 / jnp.maximum(new, 1), 0.0)
    return jax.tree.map(lambda m, q: m + frac.astype(m.dtype) * (q - m), mean, params), new


@functools.cache
def adam_cosine(learning_rate: float, total_steps: int) -> Any:
    """Adam with the learning rate decayed to 0 along a cosine over training."""
    import optax

    return optax.adam(optax.cosine_decay_schedule(learning_rate, total_steps))


def check_size(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise ValueError(f"{name}: must be a positive integer; got {v!r}.")
    return int(v)


# ---------------------------------------------------------------------------------------------
# the step
# ---------------------------------------------------------------------------------------------


def bce_loss(logits: jax.Array, y: jax.Array, w: jax.Array | None) -> jax.Array:
    import optax

    per = optax.sigmoid_binary_cross_entropy(logits, y.astype(logits.dtype))
    if w is None:
        return jnp.mean(per)
    w = w.astype(per.dtype)
    return jnp.sum(w * per) / jnp.sum(w)


def resolve_loss(loss: str | Callable) -> Callable:
    if callable(loss):
        return loss
    if loss == "bce":
        return bce_loss
    raise ValueError(f"loss: must be 'bce' or a callable loss(logits, y, weight); got {loss!r}.")


def logits_of(apply_fn: Callable, params: Any, x: jax.Array, n: int) -> jax.Array:
    out = apply_fn(params, x)
    if out.shape == (n, 1):
        out = out[:, 0]
    if out.shape != (n,):
        raise ValueError(
            f"apply_fn: must return one logit per row, shape ({n},); got shape {out.shape}."
        )
    return out


def default_penalty(cms: jax.Array) -> jax.Array:
    return ofi_penalty(cms, reduction="max_gap")


def build_step(
    apply_fn: Callable,
    optimizer: optax.GradientTransformation,
    penalty_fn: Callable,
    loss_fn: Callable,
    lagrangian: bool,
    dual_lr: float,
    threshold: float,
    estimator: CMEstimator | None,
    surrogate_temperature: float,
) -> Callable:
    """Pure ``step(strength, params, opt_state, batch, pstate, penalty_batch=None)``.

    The task loss is taken on ``batch``; the penalty's soft CMs on ``penalty_batch`` when given
    (for example many more rows than the mini-batch, so the penalty's group statistics are not
    dominated by the batch's sampling error), else on ``batch``. Returns ``(params, opt_state,
    pstate, metrics)``.
    """

    def objective(params, batch, coef, cm_state, pen_batch):
        n = batch.y.shape[0]
        logits = logits_of(apply_fn, params, batch.x, n)
        task = loss_fn(logits, batch.y, batch.weight)
        if pen_batch is None:
            pen_batch, pen_logits = batch, logits
        else:
            pen_logits = logits_of(apply_fn, params, pen_batch.x, pen_batch.y.shape[0])
        probs = jax.nn.sigmoid(pen_logits / surrogate_temperature)
        cms = soft_cms(pen_batch.y, probs, pen_batch.groups, pen_batch.weight)
        if estimator is not None:
            cms, cm_state = estimator.update(cms, cm_state)
        pen = penalty_fn(cms)
        return task + coef * pen, (task, pen, cm_state)

    def step(strength, params, opt_state, batch, pstate, penalty_batch=None):
        strength = jnp.asarray(strength)
        coef = pstate.multiplier if lagrangian else strength
        (total, (task, pen, cm_state)), grads = jax.value_and_grad(objective, has_aux=True)(
            params, batch, jax.lax.stop_gradient(coef), pstate.cm_state, penalty_batch
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        import optax

        params = optax.apply_updates(params, updates)
        mult = pstate.multiplier
        if lagrangian:
            mult = jnp.clip(mult + dual_lr * (pen - threshold), 0.0, strength).astype(mult.dtype)
        return params, opt_state, PenaltyState(mult, cm_state), StepMetrics(total, task, pen, coef)

    return step


def init_penalty_state(
    num_groups: int,
    *,
    estimator: CMEstimator | None = None,
    multiplier: float = 0.0,
) -> PenaltyState:
    """Initial :class:`PenaltyState` for a stateful step from :func:`make_train_step`.

    Args:
        num_groups: ``G``, the number of group-weight columns.
        estimator: the same CM estimator given to :func:`make_train_step` (or ``None``).
        multiplier: initial Lagrange multiplier :math:`\\lambda_0 \\ge 0`.
    """
    g = check_size(num_groups, "num_groups")
    if not (float(multiplier) >= 0):
        raise ValueError(f"multiplier: must be ≥ 0; got {multiplier!r}.")
    dtype = jnp.result_type(float)
    cm_state = None if estimator is None else estimator.init(jnp.zeros((g, 4), dtype))
    return PenaltyState(jnp.asarray(multiplier, dtype), cm_state)


def check_train_options(strength, lagrangian, dual_lr, threshold, surrogate_temperature):
    for name, v, pos in (
        ("strength", strength, False),
        ("dual_lr", dual_lr, True),
        ("threshold", threshold, False),
        ("surrogate_temperature", surrogate_temperature, True),
    ):
        if is_tracer(v):
            continue
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: must be a real number; got {v!r}.") from None
        if arr.shape != () or np.isnan(arr) or arr < 0 or (pos and arr == 0):
            need = "> 0" if pos else "≥ 0"
            raise ValueError(f"{name}: must be a scalar {need}; got {v!r}.")
        if name == "strength" and not np.isfinite(arr) and not lagrangian:
            raise ValueError(
                f"strength: must be finite in penalty mode (an infinite coefficient makes the "
                f"loss inf/NaN); got {v!r}. inf is allowed only as the multiplier cap with "
                "lagrangian=True."
            )
        if name != "strength" and not np.isfinite(arr):
            raise ValueError(f"{name}: must be finite; got {v!r}.")
    if not isinstance(lagrangian, bool):
        raise ValueError(f"lagrangian: must be True or False; got {lagrangian!r}.")


def make_train_step(
    apply_fn: Callable[[Any, jax.Array], jax.Array],
    optimizer: optax.GradientTransformation,
    penalty_fn: Callable[[jax.Array], jax.Array] | None = None,
    *,
    strength: float,
    loss: str | Callable = "bce",
    lagrangian: bool = False,
    dual_lr: float = 0.1,
    threshold: float = 0.0,
    estimator: CMEstimator | None = None,
    surrogate_temperature: float = 1.0,
    check_inputs: bool = True,
) -> Callable:
    r"""A pure jitted training step for a fairness-penalized binary classifier.

    The step minimizes

    .. math::

        L(\theta) = \ell(\theta) + c\, \mathrm{pen}\big(C(\sigma(f_\theta(x)/T))\big)

    where :math:`\ell` is the task loss, :math:`C` the soft group confusion matrices
    (:func:`ofijax.diff.soft_confusion_matrices`), optionally smoothed by ``estimator``, and
    :math:`T` the ``surrogate_temperature``. With :math:`T = 1` the penalty is an exact
    expectation over the randomized classifier :math:`\hat y \sim \mathrm{Bernoulli}(p)`;
    :math:`T < 1` sharpens it towards the deterministic classifier :math:`\hat y = [p > 1/2]`.
    (A model that is calibrated within every group has a soft marginal benefit of ≈ 0, so at
    :math:`T = 1` the penalty cannot see the bias that thresholding at 1/2 creates; a
    temperature of 0.1 to 0.3 targets the thresholded classifier.)

    * Penalty mode (``lagrangian=False``): :math:`c` = ``strength``; the step is
      ``step(params, opt_state, batch) -> (params, opt_state, metrics)``, or with an
      ``estimator`` ``step(params, opt_state, batch, state) -> (params, opt_state, state,
      metrics)``.
    * Lagrangian mode: :math:`c = \lambda` from ``state`` and, after the primal step,
      dual ascent :math:`\lambda \leftarrow \mathrm{clip}(\lambda + \eta(\mathrm{pen} - \tau),
      0, \text{strength})` on the constraint :math:`\mathrm{pen} \le \tau`; the step is
      ``step(params, opt_state, batch, state) -> (params, opt_state, state, metrics)``.
      ``strength`` caps the multiplier (pass ``float("inf")`` for no cap).

    ``state`` is a :class:`PenaltyState` from :func:`init_penalty_state`.

    Args:
        apply_fn: ``apply_fn(params, x) -> logits`` of shape ``(N,)``.
        optimizer: an optax ``GradientTransformation``; ``opt_state = optimizer.init(params)``.
        penalty_fn: ``penalty_fn(cms (G, 4)) -> scalar``; default
            ``ofi_penalty(cms, reduction="max_gap")``.
        strength: the penalty coefficient (≥ 0), or the multiplier cap in Lagrangian mode.
        loss: ``"bce"`` (weighted mean binary cross-entropy on logits) or a callable
            ``loss(logits, y, weight_or_None) -> scalar``.
        lagrangian: use dual ascent instead of a fixed coefficient.
        dual_lr: :math:`\eta > 0`, the dual step size.
        threshold: :math:`\tau \ge 0`, the constraint level.
        estimator: optional CM estimator (e.g. :func:`ofijax.diff.ema_confusion_matrices`).
        surrogate_temperature: :math:`T > 0` used for the penalty's probabilities. The default
            1 keeps the exact-expectation reading but barely moves held-out OFI of the hard
            classifier (COMPAS validation, ``experiments/diff_defaults.py``: median max|OFI|
            0.10 to 0.12 for strengths 0.5 to 4, plain model 0.105); use 0.1 to 0.3 to change
            hard decisions.
            :class:`ofijax.diff.OFIClassifier` chooses its default by measurement.
        check_inputs: check every concrete ``batch`` on the host before the jitted step runs:
            labels 0/1 (``ValueError`` naming ``batch.y`` for labels such as {1, 2}), finite
            features (``batch.x``), one group-weight row and weight per row (``batch.groups``,
            ``batch.weight``) and a feature count the model accepts (``batch.x``). This costs a
            device-to-host copy of the batch per step; pass ``False`` in tight loops over data
            already checked (for example with :func:`tradeoff_sweep`'s checks). Traced batches
            (the step called inside your own ``jit``/``scan``) are never checked.

    Returns:
        The step (a jitted function behind the host-side checks). ``batch`` is a :class:`Batch`.

    Raises:
        ValueError: naming the argument, for a non-finite ``strength`` in penalty mode, other
            invalid options, and (with ``check_inputs``) a bad batch.

    Examples:
        >>> import jax, jax.numpy as jnp, optax
        >>> from ofijax.diff import Batch, logistic_model, make_train_step
        >>> x = jnp.array([[0.0], [1.0], [2.0], [3.0]])
        >>> batch = Batch(x, jnp.array([0, 0, 1, 1]), jnp.array([[1.0, 0], [0, 1], [1, 0], [0, 1]]))
        >>> model = logistic_model(1)
        >>> params, opt = model.init(jax.random.key(0)), optax.sgd(0.1)
        >>> step = make_train_step(model.apply, opt, strength=1.0)
        >>> params, opt_state, metrics = step(params, opt.init(params), batch)
        >>> metrics.multiplier.item()
        1.0
    """
    check_train_options(strength, lagrangian, dual_lr, threshold, surrogate_temperature)
    inner = build_step(
        apply_fn,
        optimizer,
        default_penalty if penalty_fn is None else penalty_fn,
        resolve_loss(loss),
        lagrangian,
        dual_lr,
        threshold,
        estimator,
        surrogate_temperature,
    )
    if not isinstance(check_inputs, bool):
        raise ValueError(f"check_inputs: must be True or False; got {check_inputs!r}.")
    stateful = lagrangian or estimator is not None

    if stateful:

        @jax.jit
        def jitted(params, opt_state, batch, state):
            return inner(strength, params, opt_state, _as_batch(batch), state)

    else:

        @jax.jit
        def jitted(params, opt_state, batch):
            dtype = jnp.result_type(float)
            pstate = PenaltyState(jnp.zeros((), dtype), None)
            params, opt_state, _, metrics = inner(
                strength, params, opt_state, _as_batch(batch), pstate
            )
            return params, opt_state, metrics

    if not check_inputs:
        return jitted
    seen_shapes: set = set()

    @functools.wraps(jitted)
    def step(params, opt_state, batch, *state):
        b = _as_batch(batch)
        if not any(is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(b)):
            check_batch(b, "batch")
            check_model_input(apply_fn, params, b.x, seen_shapes)
        return jitted(params, opt_state, batch, *state)

    return step


def check_model_input(
    apply_fn: Callable, params: Any, x: Any, seen: set, name: str = "batch.x"
) -> None:
    """Raise ``ValueError`` naming ``name`` when ``apply_fn`` cannot take ``x`` (by shape)."""
    leaves, tree = jax.tree_util.tree_flatten(params)
    sig = (np.shape(x), str(np.asarray(x).dtype) if not hasattr(x, "dtype") else str(x.dtype),
           tree, tuple((np.shape(leaf), str(getattr(leaf, "dtype", ""))) for leaf in leaves))
    if sig in seen:
        return
    try:
        jax.eval_shape(apply_fn, params, x)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}: the model cannot take features of shape {np.shape(x)} (does the number "
            f"of features match the model's?): {str(exc).splitlines()[0]}"
        ) from None
    seen.add(sig)


def _as_batch(batch: Any) -> Batch:
    if isinstance(batch, Batch):
        return batch
    if isinstance(batch, tuple) and 3 <= len(batch) <= 4:
        return Batch(*batch)
    raise ValueError("batch: must be a Batch(x, y, groups[, weight]) named tuple.")


def check_batch(batch: Any, name: str) -> Batch:
    """Validate a concrete batch once, outside jit."""
    b = _as_batch(batch)
    y = check_binary(b.y, f"{name}.y")
    if y.ndim != 1:
        raise ValueError(f"{name}.y: must be 1-D (N,); got shape {y.shape}.")
    x = as_numpy(b.x, f"{name}.x")
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{name}.x: must be numeric features, got dtype {x.dtype}.")
    if x.ndim < 1 or x.shape[0] != y.shape[0]:
        raise ValueError(
            f"{name}.x: must have one row per label ({y.shape[0]}); got shape {x.shape}."
        )
    check_finite(x, f"{name}.x")
    groups = b.groups.weights if isinstance(b.groups, GroupWeights) else b.groups
    gw = check_group_weights(groups, y.shape[0], f"{name}.groups", f"{name}.y")
    w = None
    if b.weight is not None:
        wa = as_numpy(b.weight, f"{name}.weight")
        if wa.dtype.kind not in "biuf":
            raise ValueError(f"{name}.weight: must be numeric, got dtype {wa.dtype}.")
        check_finite(wa, f"{name}.weight")
        if wa.shape != y.shape or (wa.size and wa.min() < 0):
            raise ValueError(f"{name}.weight: must be {y.shape} non-negative weights.")
        w = jnp.asarray(b.weight)
    return Batch(jnp.asarray(b.x), jnp.asarray(b.y), gw, w)


def epoch_batches(key: jax.Array, n: int, batch_size: int, dtype: Any) -> tuple:
    """One epoch's mini-batches of ``n`` rows: row indices ``(nb, batch_size)`` of a permutation
    drawn from ``key``, the last batch filled up with row 0, and the ``(nb, batch_size)`` mask of
    real rows in ``dtype`` (the filled rows get weight 0), nb = ⌈n / batch_size⌉. Shared by the
    estimator's and the plug-in group model's training programs."""
    nb = -(-n // batch_size)
    pad = nb * batch_size - n
    valid = (jnp.arange(nb * batch_size) < n).reshape(nb, batch_size).astype(dtype)
    perm = jax.random.permutation(key, n)
    return jnp.concatenate([perm, jnp.zeros((pad,), perm.dtype)]).reshape(nb, batch_size), valid
