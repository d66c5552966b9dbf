"""OFIClassifier: a scikit-learn estimator trained with a fairness penalty on mini-batches.

Private module; :class:`OFIClassifier` is re-exported by :mod:`ofijax.diff`. It owns the
estimator's conventions (parameters stored unchanged in ``__init__``, learned attributes with a
trailing underscore, NumPy parameters so a fitted estimator pickles), the mini-batch training
program (one jitted ``lax.scan`` over epochs and batches around :mod:`ofijax.diff._train`'s
step), the mapping of group labels to the groups seen in ``fit``, and the defaults, which were
chosen on COMPAS training/validation splits by ``experiments/diff_defaults.py`` (see
``experiments/notes/diff.md``). scikit-learn is optional: it is imported only when scikit-learn
itself asks (``__sklearn_tags__``, ``get_metadata_routing``) or to raise its ``NotFittedError``,
so fitting and predicting work without it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._validation import align_pandas, as_key, as_numpy, check_finite
from ofijax.diff._cm import one_hot_groups
from ofijax.diff._evaluate import Evaluation, evaluate
from ofijax.diff._penalty import (
    RATES,
    REDUCTIONS,
    di_penalty,
    equalized_odds_penalty,
    ofi_penalty,
    rate_parity_penalty,
)
from ofijax.diff._plugin import fit_plugin, given_logits, rule_scores, training_gaps
from ofijax.diff._sklearn import ParamsMixin
from ofijax.diff._train import (
    Batch,
    PenaltyState,
    adam_cosine,
    bce_loss,
    build_step,
    epoch_batches,
    logistic_apply,
    logistic_model,
    mlp_apply,
    mlp_model,
    running_mean,
)

__all__ = ["OFIClassifier"]

PENALTIES = ("ofi", "di", "rate_parity", "equalized_odds")
MODELS = ("logistic", "mlp")
METHODS = ("penalty", "plugin")


@functools.cache
def _penalty_fn(penalty: str, reduction: str, rates: tuple) -> Any:
    """One function ``(cms, tolerance) -> penalty`` per setting, so the jitted training program
    is reused (the tolerance is traced: each gap counts as max(0, gap - tolerance))."""
    if penalty == "ofi":
        return lambda cms, tol: ofi_penalty(cms, reduction=reduction, threshold=tol)
    if penalty == "di":
        return lambda cms, tol: di_penalty(cms, reduction=reduction, threshold=tol)
    if penalty == "rate_parity":
        return lambda cms, tol: rate_parity_penalty(cms, rates=rates, reduction=reduction,
                                                    threshold=tol)
    return lambda cms, tol: equalized_odds_penalty(cms, reduction=reduction, threshold=tol)


@functools.partial(
    jax.jit,
    static_argnames=("apply_fn", "optimizer", "penalty_fn", "num_epochs", "batch_size",
                     "penalty_rows", "average"),
)
def _fit_program(
    key, params, x, y, gw, w, strength, temperature, tolerance, *,
    apply_fn, optimizer, penalty_fn, num_epochs, batch_size, penalty_rows, average=False,
):
    """Adam on shuffled mini-batches; returns ``(params, per-epoch mean loss, mean penalty)``.

    With ``average`` the parameters returned are the uniform mean of the iterates after steps
    ``total // 2`` to ``total - 1`` (Polyak averaging over the second half; ``total`` = epochs ×
    batches per epoch), otherwise the last iterate.

    Each epoch draws a permutation of the rows; the last batch is filled up with weight-0 rows
    so every batch has one shape. The penalty's soft CMs come from the mini-batch
    (``penalty_rows == 0``), from every row (``penalty_rows >= n``), or from ``penalty_rows``
    consecutive rows of a second per-epoch permutation (a window that moves on by
    ``penalty_rows`` each step, wrapping around).
    """
    n = y.shape[0]
    nb = -(-n // batch_size)
    step = build_step(apply_fn, optimizer, lambda cms: penalty_fn(cms, tolerance), bce_loss,
                      False, 0.0, 0.0, None, temperature)
    dtype = jnp.result_type(float)
    pstate = PenaltyState(jnp.zeros((), dtype), None)
    full = Batch(x, y, gw, w) if penalty_rows >= n else None

    start = (num_epochs * nb) // 2

    def epoch(carry, inp):
        k, e = inp
        idx, valid = epoch_batches(k, n, batch_size, w.dtype)
        perm_pen = (jax.random.permutation(jax.random.fold_in(k, 1), n)
                    if 0 < penalty_rows < n else None)

        def body(c, inp):
            ix, v, i = inp
            p, o, avg, cnt = c
            b = Batch(x[ix], y[ix], gw[ix], w[ix] * v)
            pb = full
            if perm_pen is not None:
                jx = perm_pen[(i * penalty_rows + jnp.arange(penalty_rows)) % n]
                pb = Batch(x[jx], y[jx], gw[jx], w[jx])
            p, o, _, m = step(strength, p, o, b, pstate, pb)
            if average:
                avg, cnt = running_mean(avg, p, cnt, e * nb + i >= start)
            return (p, o, avg, cnt), (m.loss, m.penalty)

        carry, (loss, pen) = jax.lax.scan(body, carry, (idx, valid, jnp.arange(nb)))
        return carry, (jnp.mean(loss), jnp.mean(pen))

    keys = jax.random.split(key, num_epochs)
    carry = (params, optimizer.init(params), params, jnp.zeros((), jnp.int32))
    (params, _, avg, _), (loss, pen) = jax.lax.scan(
        epoch, carry, (keys, jnp.arange(num_epochs)))
    return (avg if average else params), loss, pen


class _FitRequest(dict):
    """The routing choices of :meth:`OFIClassifier.set_fit_request` (``clone`` copies them)."""

    def __sklearn_clone__(self) -> _FitRequest:
        return _FitRequest(self)


class OFIClassifier(ParamsMixin):
    r"""A binary classifier trained against group bias (OFI by default), for scikit-learn.

    Minimizes, with Adam,

    .. math::

        \ell_{\text{batch}}(\theta) + \lambda \max_{i<j}
        \max\big(0,\ |s_i - s_j| - \tau\big),\qquad s = s\big(C(\sigma(f_\theta(x)/T))\big),

    the weighted cross-entropy of a shuffled mini-batch plus ``strength`` :math:`\lambda` times
    the group gaps beyond ``tolerance`` :math:`\tau` of a statistic :math:`s` of the soft group
    confusion matrices (:func:`ofijax.diff.soft_confusion_matrices`) at surrogate temperature
    :math:`T`, computed on ``penalty_batch_size`` rows per step (all training rows when there are
    no more); the maximum over pairs is the default ``reduction="max_gap"``. With
    ``penalty="ofi"``, :math:`s_g = \mathcal{B}_g = (FP_g - FN_g)/n_g`, where "positive" is
    ``beneficial_label``: a large enough :math:`\lambda` makes the penalty the constraint "soft
    training max|OFI| ≤ :math:`\tau`" (an exact penalty). Predictions are hard:
    ``beneficial_label`` iff the logit is > 0. The sensitive feature is used only in training
    (never as a model input), so prediction needs only ``X``.

    ``method="plugin"`` fits the plug-in group-blind rule instead: ``beneficial_label`` iff
    :math:`2\eta(x) - 1 + \sum_g \lambda_g s_g(x)/\pi_g > 0` (:math:`\sum_g \lambda_g = 0`), with
    :math:`\eta` the label model fitted at strength 0, :math:`s_g(x)` a multinomial logistic
    model of the group given ``X`` (trained the same way), :math:`\pi_g` the training group
    shares and :math:`\lambda` searched exactly on the training rows: the multipliers nearest 0
    with hard training max|OFI| ≤ ``tolerance`` (a warning if none). For the true :math:`\eta`
    and :math:`s` it is the most accurate rule of ``X`` alone under equal :math:`\mathcal{B}`.
    ``strength``, ``surrogate_temperature``, ``penalty_batch_size`` and ``average`` do not apply;
    ``penalty`` must be ``"ofi"``. :meth:`decision_function` is the score, :meth:`predict_proba`
    :math:`\mathrm{clip}(\eta + \frac12\sum_g \lambda_g s_g/\pi_g, 0, 1)` for the beneficial
    class: consistent with :meth:`predict`, not a calibrated probability.

    Parameters (stored unchanged; checked in :meth:`fit`):
        method: ``"penalty"`` (the default) or ``"plugin"`` (above).
        strength: :math:`\lambda \ge 0` (0 = plain cross-entropy).
        tolerance: :math:`\tau \ge 0`, the gap that costs nothing, in the units of the
            penalty's statistic (B for ``"ofi"``; the default 0.04 was chosen for OFI).
        surrogate_temperature: :math:`T > 0`. At :math:`T = 1` the penalty is the exact expected
            OFI of the randomized classifier; that expectation can be equalized by moving
            probabilities a little around 0.5 without changing a hard prediction, so :math:`T =
            1` barely moves held-out OFI. Smaller :math:`T` makes the penalty see hard decisions.
        penalty: ``"ofi"``, ``"di"`` (log selection-rate gaps), ``"rate_parity"`` (gaps of
            ``rates``), ``"equalized_odds"`` (TPR and FPR gaps).
        reduction: how pair gaps combine (see :func:`ofijax.diff.ofi_penalty`).
        rates: rates for ``penalty="rate_parity"`` (default ``("selection",)``: demographic
            parity).
        model: ``"logistic"`` or ``"mlp"`` (ReLU layers ``hidden_layer_sizes``).
        beneficial_label: the label of the beneficial outcome (COMPAS recidivism: 0).
        epochs, batch_size, learning_rate: Adam on shuffled mini-batches of the cross-entropy.
        penalty_batch_size: rows whose soft CMs the penalty uses per step: every training row
            when there are at most this many (the exact soft training gap), otherwise the next
            window of a per-epoch permutation; ``None`` = the cross-entropy's mini-batch, whose
            per-group statistics carry a large sampling error at small batch sizes.
        average: ``None`` (the last iterate) or ``"polyak"``: the model returned is the uniform
            mean of the parameter iterates over the second half of the training steps, which
            lowers the variance of the last iterate.
        standardize: centre and scale ``X`` with the training mean and standard deviation.
        random_state: int seed (initial weights and batch order); the same seed gives the same
            model.

    Defaults (``method="penalty"``, ``strength=2``, ``surrogate_temperature=0.1``,
    ``tolerance=0.04``, ``penalty_batch_size=4096``, ``epochs=20``, ``batch_size=256``,
    ``learning_rate=0.05`` decayed along a cosine, ``standardize=True``) were chosen on COMPAS
    training/validation splits only (``experiments/diff_defaults.py``; rounds 3 and 4, on fresh
    seeds, found nothing better: averaging, 40 epochs, the MLP and the plug-in rule included).
    On held-out splits (African-American vs Caucasian, race not a model input) they halve the
    median max|OFI| of logistic regression (median per-seed ratios 0.50, 0.45, 0.45 on 8, 16 and
    16 seeds) at 1.6 to 2.7 points of accuracy; the plug-in rule did no better. Without group
    membership at decision time, more costs accuracy on COMPAS;
    :class:`ofijax.diff.OFIThresholdOptimizer` uses it.

    Attributes (after :meth:`fit`): ``classes_``, ``groups_`` (the group labels seen in
    ``fit``), ``n_features_in_``, ``feature_names_in_`` (DataFrames with string columns),
    ``params_`` (NumPy pytree), ``mean_``, ``scale_``, ``loss_curve_`` (per-epoch mean of the
    objective), ``penalty_curve_`` (per-epoch mean of the hinged penalty on the penalty rows:
    with the whole training set, the soft training gap beyond ``tolerance``),
    ``train_max_ofi_`` (hard, on the training rows); plug-in: ``group_params_``,
    ``group_coef_`` (:math:`\lambda_g/\pi_g`; ``None`` for the penalty).

    Examples:
        >>> import numpy as np
        >>> from ofijax.diff import OFIClassifier
        >>> rng = np.random.default_rng(0)
        >>> group = rng.integers(0, 2, 400)
        >>> X = np.c_[rng.normal(size=400) + group, rng.normal(size=400)]
        >>> y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0.5).astype(int)
        >>> clf = OFIClassifier(epochs=20).fit(X, y, sensitive_features=group)
        >>> clf.classes_.tolist(), clf.groups_
        ([0, 1], (0, 1))
        >>> clf.predict(X[:3]).shape, clf.predict_proba(X[:3]).shape
        ((3,), (3, 2))
        >>> rule = OFIClassifier(method="plugin", tolerance=0.03)
        >>> rule = rule.fit(X, y, sensitive_features=group)
        >>> rule.train_max_ofi_ <= 0.03, bool(abs(rule.group_coef_ @ np.bincount(group)) < 1e-9)
        (True, True)
    """

    _estimator_type = "classifier"

    def __init__(
        self,
        *,
        method: str = "penalty",
        strength: float = 2.0,
        surrogate_temperature: float = 0.1,
        tolerance: float = 0.04,
        penalty: str = "ofi",
        reduction: str = "max_gap",
        rates: tuple = ("selection",),
        model: str = "logistic",
        hidden_layer_sizes: tuple = (16,),
        beneficial_label: Any = 1,
        epochs: int = 20,
        batch_size: int = 256,
        penalty_batch_size: int | None = 4096,
        learning_rate: float = 0.05,
        average: str | None = None,
        standardize: bool = True,
        random_state: int = 0,
    ) -> None:
        self.method = method
        self.strength = strength
        self.surrogate_temperature = surrogate_temperature
        self.tolerance = tolerance
        self.penalty = penalty
        self.reduction = reduction
        self.rates = rates
        self.model = model
        self.hidden_layer_sizes = hidden_layer_sizes
        self.beneficial_label = beneficial_label
        self.epochs = epochs
        self.batch_size = batch_size
        self.penalty_batch_size = penalty_batch_size
        self.learning_rate = learning_rate
        self.average = average
        self.standardize = standardize
        self.random_state = random_state

    # ----------------------------------------------------------------- scikit-learn protocol

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.name != "self"
        }
        changed = [
            f"{k}={v!r}" for k, v in self.get_params().items()
            if not (isinstance(v, type(defaults[k])) and v == defaults[k])
        ]
        return f"OFIClassifier({', '.join(changed)})"

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(multi_class=False),
            input_tags=InputTags(),
        )

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "params_")

    def set_fit_request(
        self, *, sensitive_features: Any = True, sample_weight: Any = None
    ) -> OFIClassifier:
        """Metadata routing (``sklearn.set_config(enable_metadata_routing=True)``): which
        ``fit`` keywords a meta-estimator passes on. ``sensitive_features`` is requested by
        default; request ``sample_weight`` with ``set_fit_request(sample_weight=True)``."""
        self._metadata_request = _FitRequest(
            sensitive_features=sensitive_features, sample_weight=sample_weight
        )
        return self

    def get_metadata_routing(self) -> Any:
        """scikit-learn's routing request of ``fit`` (imports sklearn; see :meth:`set_fit_request`)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        wanted = {"sensitive_features": True, "sample_weight": None,
                  **getattr(self, "_metadata_request", {})}
        req = MetadataRequest(owner=type(self).__name__)
        for param, alias in wanted.items():
            req.fit.add_request(param=param, alias=alias)
        return req

    # ----------------------------------------------------------------------------- checks

    def _check_params(self) -> None:
        if self.method not in METHODS or (self.method == "plugin" and self.penalty != "ofi"):
            raise ValueError(
                f"method: must be 'penalty' or 'plugin' (the plug-in rule equalizes B: penalty="
                f"'ofi' only); got method={self.method!r} with penalty={self.penalty!r}."
            )
        if self.penalty not in PENALTIES:
            raise ValueError(
                f"penalty: must be one of {', '.join(map(repr, PENALTIES))}; got {self.penalty!r}."
            )
        if self.model not in MODELS:
            raise ValueError(f"model: must be 'logistic' or 'mlp'; got {self.model!r}.")
        if self.reduction not in REDUCTIONS:
            raise ValueError(
                f"reduction: must be one of {', '.join(map(repr, REDUCTIONS))}; "
                f"got {self.reduction!r}."
            )
        rates = (self.rates,) if isinstance(self.rates, str) else tuple(self.rates)
        if not rates or any(r not in RATES for r in rates):
            raise ValueError(
                f"rates: must name rates among {', '.join(map(repr, RATES))}; got {self.rates!r}."
            )
        for name, positive in (
            ("strength", False), ("surrogate_temperature", True), ("tolerance", False),
            ("learning_rate", True),
        ):
            v = getattr(self, name)
            ok = isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            if not ok or not np.isfinite(v) or v < 0 or (positive and v == 0):
                need = "> 0" if positive else "≥ 0"
                raise ValueError(f"{name}: must be a finite number {need}; got {v!r}.")
        for name in ("epochs", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"{name}: must be a positive integer; got {v!r}.")
        pbs = self.penalty_batch_size
        if pbs is not None and (isinstance(pbs, bool) or not isinstance(pbs, int | np.integer)
                                or pbs < 1):
            raise ValueError(
                f"penalty_batch_size: must be a positive integer, or None for the mini-batch; "
                f"got {pbs!r}."
            )
        hidden = self.hidden_layer_sizes
        if isinstance(hidden, int | np.integer):
            hidden = (hidden,)
        if self.model == "mlp" and (
            not isinstance(hidden, tuple | list)
            or not hidden
            or any(isinstance(h, bool) or not isinstance(h, int | np.integer) or h < 1
                   for h in hidden)
        ):
            raise ValueError(
                f"hidden_layer_sizes: must be a tuple of positive integers such as (16,); "
                f"got {self.hidden_layer_sizes!r}."
            )
        if self.average is not None and not (isinstance(self.average, str)
                                             and self.average == "polyak"):
            raise ValueError(
                f"average: must be None (the last iterate) or 'polyak' (the mean of the second "
                f"half's iterates); got {self.average!r}."
            )
        if not isinstance(self.standardize, bool):
            raise ValueError(f"standardize: must be True or False; got {self.standardize!r}.")
        as_key(self.random_state, "random_state")

    def _features(self, X: Any, fitting: bool) -> np.ndarray:
        names = None
        if hasattr(X, "columns") and hasattr(X, "iloc"):
            cols = list(X.columns)
            if all(isinstance(c, str) for c in cols):
                names = np.asarray(cols, dtype=object)
        x = as_numpy(X, "X")
        if x.dtype == object:
            try:
                x = x.astype(float)
            except (TypeError, ValueError):
                raise ValueError(
                    "X: must be numeric features; encode categories first (e.g. one-hot)."
                ) from None
        if x.dtype.kind not in "biuf":
            raise ValueError(
                f"X: must be numeric features, got dtype {x.dtype}; encode categories first."
            )
        if x.ndim == 1:
            raise ValueError(
                "X: must be 2-D (rows, features); reshape a single feature with X.reshape(-1, 1)."
            )
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"X: must be a non-empty 2-D (rows, features) array; got {x.shape}.")
        check_finite(x, "X")
        if fitting:
            self.n_features_in_ = x.shape[1]
            if names is not None:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            if x.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X: has {x.shape[1]} features but OFIClassifier was fitted with "
                    f"{self.n_features_in_}; pass the same columns as in fit."
                )
            fitted = getattr(self, "feature_names_in_", None)
            if fitted is not None and names is not None and list(names) != list(fitted):
                raise ValueError(
                    "X: its column names differ from those seen in fit; pass the same columns "
                    "in the same order."
                )
        return x.astype(np.float64)

    def _check_fitted(self) -> None:
        if not hasattr(self, "params_"):
            msg = "This OFIClassifier is not fitted yet; call fit(X, y, sensitive_features=...)."
            try:
                from sklearn.exceptions import NotFittedError
            except ImportError:
                raise AttributeError(msg) from None
            raise NotFittedError(msg)

    def _groups(self, sensitive_features: Any, n: int) -> np.ndarray:
        """One-hot ``(n, G)`` membership in the groups seen in ``fit`` (unseen labels refused)."""
        gw = one_hot_groups(sensitive_features)
        w = np.asarray(gw.weights)
        if w.shape[0] != n:
            raise ValueError(
                f"sensitive_features: has {w.shape[0]} rows but X has {n}; pass one label per row."
            )
        index = {g: k for k, g in enumerate(self.groups_)}
        unseen = [g for g in gw.groups if g not in index]
        if unseen:
            raise ValueError(
                f"sensitive_features: group label(s) {unseen[:5]!r} were not seen in fit (seen: "
                f"{list(self.groups_)!r}); map them to a fitted group or refit with them."
            )
        out = np.zeros((n, len(self.groups_)), dtype=w.dtype)
        for j, g in enumerate(gw.groups):
            out[:, index[g]] = w[:, j]
        return out

    def _labels(self, y: Any, fitting: bool) -> np.ndarray:
        ya = as_numpy(y, "y")
        if ya.ndim != 1:
            raise ValueError(f"y: must be 1-D (one label per row); got shape {ya.shape}.")
        if fitting:
            classes = np.unique(ya)
            if classes.size != 2:
                raise ValueError(
                    f"y: OFIClassifier is binary and needs exactly two classes; got "
                    f"{classes.size} ({classes[:5].tolist()})."
                )
            if self.beneficial_label not in classes.tolist():
                raise ValueError(
                    f"beneficial_label: {self.beneficial_label!r} is not one of y's classes "
                    f"{classes.tolist()}; pass the label of the beneficial outcome."
                )
            self.classes_ = classes
        else:
            bad = ~np.isin(ya, self.classes_)
            if bad.any():
                raise ValueError(
                    f"y: label(s) {np.unique(ya[bad])[:5].tolist()} are not among the classes "
                    f"seen in fit {self.classes_.tolist()}."
                )
        return (ya == self.beneficial_label).astype(np.int32)

    def _weights(self, sample_weight: Any, n: int) -> np.ndarray:
        if sample_weight is None:
            return np.ones(n)
        w = as_numpy(sample_weight, "sample_weight")
        if w.dtype.kind not in "biuf" or w.shape != (n,):
            raise ValueError(f"sample_weight: must be {n} non-negative numbers (one per row).")
        check_finite(w, "sample_weight")
        if w.min() < 0 or w.sum() <= 0:
            raise ValueError("sample_weight: must be ≥ 0 with a positive sum.")
        return w.astype(np.float64)

    # ------------------------------------------------------------------------- fit/predict

    def fit(
        self, X: Any, y: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> OFIClassifier:
        """Train on ``X`` (features only) with the penalty on the groups of ``sensitive_features``.

        Args:
            X: ``(N, D)`` numeric features (the sensitive feature need not, and should not,
                be among them).
            y: ``(N,)`` binary labels (any two values; ``beneficial_label`` is the good one).
            sensitive_features: ``(N,)`` group labels, or a table of several attributes (one
                group per observed combination). Required.
            sample_weight: optional ``(N,)`` non-negative row weights.

        Returns:
            ``self``. Warns (``UserWarning``) when training collapsed to one class.
        """
        if sensitive_features is None:
            raise ValueError(
                "sensitive_features: required; pass one group label per row, e.g. "
                "fit(X, y, sensitive_features=df['race'])."
            )
        self._check_params()
        a = align_pandas(X=X, y=y, sensitive_features=sensitive_features,
                         sample_weight=sample_weight)
        x = self._features(a["X"], fitting=True)
        n = x.shape[0]
        yb = self._labels(a["y"], fitting=True)
        if yb.shape[0] != n:
            raise ValueError(f"y: has {yb.shape[0]} rows but X has {n}; pass one label per row.")
        gw = one_hot_groups(a["sensitive_features"])
        if gw.weights.shape[0] != n:
            raise ValueError(
                f"sensitive_features: has {gw.weights.shape[0]} rows but X has {n}; pass one "
                "label per row."
            )
        self.groups_ = gw.groups
        w = self._weights(a["sample_weight"], n)
        if self.standardize:
            mean, scale = x.mean(axis=0), x.std(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
        else:
            mean, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
        self.mean_, self.scale_ = mean, scale
        dtype = jnp.result_type(float)
        xs = jnp.asarray((x - mean) / scale, dtype)
        k_init, k_fit = jax.random.split(as_key(self.random_state, "random_state"))
        params0 = self._model(x.shape[1]).init(k_init)
        rates = (self.rates,) if isinstance(self.rates, str) else tuple(self.rates)
        bs = int(min(self.batch_size, n))
        plugin = self.method == "plugin"  # the label model is the unpenalized one
        optimizer = adam_cosine(float(self.learning_rate), int(self.epochs) * -(-n // bs))
        params, loss, pen = _fit_program(
            k_fit,
            params0,
            xs,
            jnp.asarray(yb),
            jnp.asarray(gw.weights, dtype),
            jnp.asarray(w, dtype),
            jnp.asarray(0.0 if plugin else float(self.strength), dtype),
            jnp.asarray(float(self.surrogate_temperature), dtype),
            jnp.asarray(float(self.tolerance), dtype),
            apply_fn=self._apply_fn(),
            optimizer=optimizer,
            penalty_fn=_penalty_fn(self.penalty, self.reduction, rates),
            num_epochs=int(self.epochs),
            batch_size=bs,
            penalty_rows=0 if plugin or self.penalty_batch_size is None else int(
                min(self.penalty_batch_size, n)),
            average=self.average == "polyak",
        )
        self.params_ = jax.tree.map(np.asarray, params)
        self.loss_curve_ = np.asarray(loss)
        self.penalty_curve_ = np.asarray(pen)
        if not np.all(np.isfinite(self.loss_curve_)):
            raise FloatingPointError(
                "learning_rate: training diverged (non-finite loss); lower learning_rate or "
                "strength."
            )
        self.group_params_ = self.group_coef_ = None
        if plugin:
            self.group_params_, self.group_coef_ = fit_plugin(
                jax.random.fold_in(k_fit, 1), xs, self._logits(x, eta=True), yb, gw.weights, w,
                float(self.tolerance), optimizer, int(self.epochs), bs)
        pred = self._logits(x) > 0
        b, _ = training_gaps(pred.astype(np.float64), yb.astype(np.float64), gw.weights, w)
        self.train_max_ofi_ = float(np.nanmax(b) - np.nanmin(b))
        if plugin and self.train_max_ofi_ > self.tolerance:
            warnings.warn(f"OFIClassifier: the plug-in search reached training max|OFI| "
                          f"{self.train_max_ofi_:.4g} > tolerance; raise tolerance.", UserWarning,
                          stacklevel=2)
        if pred.all() or not pred.any():
            label = self.beneficial_label if pred.all() else self._other_label()
            warnings.warn(f"OFIClassifier: training collapsed to one class (every training row is "
                          f"predicted {label!r}); lower strength or raise surrogate_temperature "
                          "(plug-in: raise tolerance).", UserWarning, stacklevel=2)
        return self

    def _model(self, d: int) -> Any:
        if self.model == "logistic":
            return logistic_model(d)
        hidden = self.hidden_layer_sizes
        hidden = (hidden,) if isinstance(hidden, int | np.integer) else hidden
        return mlp_model(d, tuple(int(h) for h in hidden))

    def _apply_fn(self) -> Any:
        return logistic_apply if self.model == "logistic" else mlp_apply

    def _other_label(self) -> Any:
        return self.classes_[self.classes_ != self.beneficial_label][0]

    def _logits(self, x: np.ndarray, eta: bool = False) -> np.ndarray:
        """The decision score (the plug-in rule's if fitted so); ``eta``: the label model's logit."""
        dtype = jnp.result_type(float)
        xs = jnp.asarray((x - self.mean_) / self.scale_, dtype)
        params = jax.tree.map(lambda a: jnp.asarray(a, dtype), self.params_)
        z = np.asarray(self._apply_fn()(params, xs), dtype=np.float64)
        if eta or getattr(self, "group_coef_", None) is None:
            return z
        return rule_scores(z, self.group_params_, xs, self.group_coef_)

    def decision_function(self, X: Any) -> np.ndarray:
        """Logit of ``classes_[1]`` (scikit-learn's convention): > 0 predicts ``classes_[1]``."""
        self._check_fitted()
        z = self._logits(self._features(X, fitting=False))
        return z if self.classes_[1] == self.beneficial_label else -z

    def predict_proba(self, X: Any) -> np.ndarray:
        """``(N, 2)`` probabilities in the order of ``classes_``."""
        self._check_fitted()
        z = self._logits(self._features(X, fitting=False))
        p_ben = (1.0 / (1.0 + np.exp(-z)) if getattr(self, "group_coef_", None) is None
                 else np.clip((z + 1) / 2, 0.0, 1.0))
        ben_first = self.classes_[0] == self.beneficial_label
        return np.stack([p_ben, 1 - p_ben] if ben_first else [1 - p_ben, p_ben], axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Hard labels: ``beneficial_label`` iff the logit is > 0, else the other class."""
        self._check_fitted()
        z = self._logits(self._features(X, fitting=False))
        return np.where(z > 0, self.beneficial_label, self._other_label()).astype(
            self.classes_.dtype
        )

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """(Weighted) accuracy of :meth:`predict` on ``(X, y)``."""
        a = align_pandas(X=X, y=y, sample_weight=sample_weight)
        pred = self.predict(a["X"])
        ya = as_numpy(a["y"], "y")
        if ya.shape != pred.shape:
            raise ValueError(f"y: must have one label per row of X ({pred.shape[0]}).")
        w = self._weights(a["sample_weight"], pred.shape[0])
        return float(np.sum(w * (pred == ya)) / np.sum(w))

    def evaluate(
        self,
        key: Any,
        X: Any,
        y: Any,
        *,
        sensitive_features: Any,
        sample_weight: Any = None,
        num_samples: int = 2000,
        confidence: float = 0.95,
    ) -> Evaluation:
        """Held-out accuracy, per-pair OFI with intervals, max|OFI| with an interval, noise floor.

        ``key`` (a ``jax.random.key`` or an int seed, first and required) drives the bootstrap
        and the noise-floor draws. Groups are those seen in ``fit`` (an unseen label is a
        ``ValueError`` naming ``sensitive_features``); OFI is oriented so that positive =
        ``beneficial_label``. See :func:`ofijax.diff.evaluate` for the fields.
        """
        self._check_fitted()
        a = align_pandas(X=X, y=y, sensitive_features=sensitive_features,
                         sample_weight=sample_weight)
        x = self._features(a["X"], fitting=False)
        yb = self._labels(a["y"], fitting=False)
        if yb.shape[0] != x.shape[0]:
            raise ValueError(f"y: has {yb.shape[0]} rows but X has {x.shape[0]}.")
        gw = self._groups(a["sensitive_features"], x.shape[0])
        w = None if a["sample_weight"] is None else self._weights(a["sample_weight"], x.shape[0])
        dtype = jnp.result_type(float)
        xs = jnp.asarray((x - self.mean_) / self.scale_, dtype)
        params = jax.tree.map(lambda v: jnp.asarray(v, dtype), self.params_)
        data = Batch(xs, jnp.asarray(yb), jnp.asarray(gw, dtype),
                     None if w is None else jnp.asarray(w, dtype))
        if getattr(self, "group_coef_", None) is not None:  # the rule's hard decisions
            return evaluate(key, given_logits, jnp.asarray(np.sign(self._logits(x)), dtype), data,
                            num_samples=num_samples, confidence=confidence)
        return evaluate(key, self._apply_fn(), params, data, num_samples=num_samples,
                        confidence=confidence)
