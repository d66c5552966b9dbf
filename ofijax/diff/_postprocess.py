"""B-parity post-processing: per-group thresholds on a scorer's output (``OFIThresholdOptimizer``).

Private module; :class:`OFIThresholdOptimizer` is re-exported by :mod:`ofijax.diff`. It owns the
threshold search and the estimator around it. Data model: the fit data's scores are swept once
through :func:`ofijax.cm.threshold_sweep` (exact int64 counts, float64 with weights) at every
distinct score, giving each group ``g`` the points (selected count ``m``, marginal benefit
``B = (m - P_g)/n_g``, utility ``U = w·CM``) of all its threshold rules, ordered by ``B``. The
search then runs in one jitted JAX program over all groups at once, in float64 (local x64):

* ``randomize=True``: every mixture of two threshold rules is allowed, so each group's
  attainable (B, U) set is the upper concave hull of its points (computed by removing, in
  parallel and until none is left, every point on or below the chord of its live neighbours).
  With a common window ``[c, c + tolerance]`` each group takes the best hull point in it,
  ``clip(B*_g, c, c + tolerance)``; the total is concave and piecewise linear in ``c``, so its
  maximum lies at one of the finitely many breakpoints, which are all evaluated. Exact: no grid.
* ``randomize=False``: each group takes its best point with ``B`` in ``[c, c + tolerance]``
  (range maxima from a sparse table), for every ``c`` among the points' ``B`` values; when no
  deterministic rules reach ``tolerance`` the smallest reachable spread is used, with a warning.

Ties (equal utility within 1e-9 relative) go to the smaller spread of ``B``, then the smaller
``c``, so results do not depend on group names or order.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as v
from ofijax._jaxcache import aot_jit
from ofijax.cm import encode_groups, threshold_sweep
from ofijax.diff._sklearn import ParamsMixin

__all__ = ["OFIThresholdOptimizer"]

_OBJECTIVES = ("accuracy", "balanced_accuracy")
_PREDICT_METHODS = ("auto", "predict_proba", "decision_function", "predict")
# Slack that lets a window of the smallest reachable width admit its own end point despite the
# rounding of c + width in float64; B values are rationals (m - P)/n whose distinct values differ
# by far more than this for any n below 1e7.
_SLACK = 1e-15


# ---------------------------------------------------------------------------------------------
# The search (one jitted program per padded number of thresholds; float64 under local x64)
# ---------------------------------------------------------------------------------------------


def _prev_alive(alive: jax.Array) -> jax.Array:
    """Index of the last live point at or before each position (-1 if none)."""
    idx = jnp.arange(alive.shape[-1])
    return jax.lax.cummax(jnp.where(alive, idx, -1), axis=alive.ndim - 1)


def _next_alive(alive: jax.Array) -> jax.Array:
    """Index of the first live point at or after each position (T if none)."""
    t = alive.shape[-1]
    idx = jnp.arange(t)
    return jax.lax.cummin(jnp.where(alive, idx, t), axis=alive.ndim - 1, reverse=True)


def _upper_hull(x: jax.Array, u: jax.Array, alive: jax.Array) -> jax.Array:
    """Live mask of the upper concave hull of the points ``(x, u)`` (``x`` nondecreasing).

    A point on or below the chord of its live neighbours is not a hull vertex, so all such points
    are removed at once, repeatedly, until every live interior point lies strictly above its chord.
    """
    t = x.shape[-1]

    def neighbours(al):
        prev_incl, next_incl = _prev_alive(al), _next_alive(al)
        p = jnp.concatenate([jnp.full_like(prev_incl[:, :1], -1), prev_incl[:, :-1]], axis=1)
        q = jnp.concatenate([next_incl[:, 1:], jnp.full_like(next_incl[:, :1], t)], axis=1)
        return p, q  # last live strictly before i, first live strictly after i

    def body(state):
        al, _ = state
        p, q = neighbours(al)
        interior = al & (p >= 0) & (q < t)
        pc, qc = jnp.clip(p, 0, t - 1), jnp.clip(q, 0, t - 1)
        xp, up = jnp.take_along_axis(x, pc, 1), jnp.take_along_axis(u, pc, 1)
        xq, uq = jnp.take_along_axis(x, qc, 1), jnp.take_along_axis(u, qc, 1)
        below = (u - up) * (xq - xp) <= (uq - up) * (x - xp)
        drop = interior & below
        return al & ~drop, jnp.any(drop)

    al, _ = jax.lax.while_loop(lambda s: s[1], body, (alive, jnp.array(True)))
    return al


def _pick(total: jax.Array, spread: jax.Array, c: jax.Array) -> jax.Array:
    """Index of the best candidate: max utility (1e-9 relative), then min spread, then min c."""
    best = jnp.max(total)
    near = total >= best - 1e-9 * jnp.maximum(1.0, jnp.abs(best))
    s = jnp.where(near, spread, jnp.inf)
    near = near & (s <= jnp.min(s))
    return jnp.argmin(jnp.where(near, c, jnp.inf))


@aot_jit(name="ofijax.diff.threshold_search_randomized")  # executable kept on disk
def _search_randomized(b, u, alive0, tol):
    """Per group ``(a, b, p)``: mix the rules at indices a and b (weight p on b)."""
    k, t = b.shape
    alive = _upper_hull(b, u, alive0)
    prev_incl = _prev_alive(alive)
    nxt = _next_alive(alive)
    next_excl = jnp.concatenate([nxt[:, 1:], jnp.full_like(nxt[:, :1], t)], axis=1)
    bstar = jnp.take_along_axis(b, jnp.argmax(jnp.where(alive, u, -jnp.inf), 1)[:, None], 1)[:, 0]
    lo, hi = b[:, 0], b[:, -1]
    c_lo, c_hi = jnp.max(lo) - tol, jnp.min(hi)
    verts = jnp.where(alive, b, c_hi).reshape(-1)
    cands = jnp.concatenate([verts, verts - tol, bstar, bstar - tol, jnp.stack([c_lo, c_hi])])
    cands = jnp.clip(cands, c_lo, c_hi)
    target = jnp.clip(bstar[None, :], cands[:, None], cands[:, None] + tol)  # (C, k)

    def per_group(bg, ug, prev_g, next_g, tg):
        j = jnp.clip(jnp.searchsorted(bg, tg, side="right") - 1, 0, t - 1)
        a = jnp.maximum(prev_g[j], 0)
        nb = next_g[a]
        has_b = nb < t
        bb = jnp.where(has_b, nb, a)
        width = bg[bb] - bg[a]
        p = jnp.where(has_b & (width > 0), (tg - bg[a]) / jnp.where(width > 0, width, 1.0), 0.0)
        p = jnp.clip(p, 0.0, 1.0)
        return a, bb, p, ug[a] + p * (ug[bb] - ug[a])

    a, bb, p, val = jax.vmap(per_group, in_axes=(0, 0, 0, 0, 1), out_axes=1)(
        b, u, prev_incl, next_excl, target
    )
    total = jnp.sum(val, axis=1)
    spread = jnp.max(target, 1) - jnp.min(target, 1)
    i = _pick(total, spread, cands)
    return a[i], bb[i], p[i]


def _sparse_table(u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Range-maximum tables ``(L, k, T)`` of values and (first) argmax indices."""
    k, t = u.shape
    vals, idxs = [u], [jnp.broadcast_to(jnp.arange(t), (k, t))]
    span = 1
    while 2 * span <= t:
        pv, pi = vals[-1], idxs[-1]
        sv = jnp.concatenate([pv[:, span:], jnp.full((k, span), -jnp.inf, pv.dtype)], 1)
        si = jnp.concatenate([pi[:, span:], jnp.zeros((k, span), pi.dtype)], 1)
        take_second = sv > pv
        vals.append(jnp.where(take_second, sv, pv))
        idxs.append(jnp.where(take_second, si, pi))
        span *= 2
    return jnp.stack(vals), jnp.stack(idxs)


@aot_jit(name="ofijax.diff.threshold_search_deterministic")  # executable kept on disk
def _search_deterministic(b, u, tol):
    """Per group the index of one rule; and the window width used (≥ tol)."""
    k, t = b.shape
    cands = b.reshape(-1)
    first = jax.vmap(lambda bg: jnp.searchsorted(bg, cands, side="left"))(b)  # (k, C)
    reach = jnp.where(
        first < t, jnp.take_along_axis(b, jnp.clip(first, 0, t - 1), 1) - cands[None], jnp.inf
    )
    w_min = jnp.min(jnp.max(reach, 0))
    width = jnp.where(w_min > tol, w_min * (1 + 1e-12) + _SLACK, tol)
    last = jax.vmap(lambda bg: jnp.searchsorted(bg, cands + width, side="right"))(b)  # (k, C)
    vals, idxs = _sparse_table(u)
    length = jnp.maximum(last - first, 1)
    level = jnp.floor(jnp.log2(length.astype(b.dtype))).astype(jnp.int32)
    level = jnp.where((1 << (level + 1)) <= length, level + 1, level)  # guard log2 rounding
    level = jnp.where((1 << level) > length, level - 1, level)
    s1 = jnp.clip(first, 0, t - 1)
    s2 = jnp.clip(last - (1 << level), 0, t - 1)
    g = jnp.arange(k)[:, None]
    v1, i1 = vals[level, g, s1], idxs[level, g, s1]
    v2, i2 = vals[level, g, s2], idxs[level, g, s2]
    second = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    best_v = jnp.where(second, v2, v1)
    best_i = jnp.where(second, i2, i1)
    ok = last > first
    total = jnp.where(jnp.all(ok, 0), jnp.sum(jnp.where(ok, best_v, 0.0), 0), -jnp.inf)
    chosen_b = jnp.take_along_axis(b, best_i, 1)
    spread = jnp.max(chosen_b, 0) - jnp.min(chosen_b, 0)
    i = _pick(total, spread, cands)
    return best_i[:, i], width


# ---------------------------------------------------------------------------------------------
# Host-side helpers
# ---------------------------------------------------------------------------------------------


def _not_fitted(name: str) -> Exception:
    msg = f"{name}: this OFIThresholdOptimizer is not fitted yet; call fit(X, y, sensitive_features=...) first."
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:  # scikit-learn is optional
        return ValueError(msg)
    return NotFittedError(msg)


def _n_rows(x: Any, name: str) -> int:
    try:
        return int(x.shape[0]) if hasattr(x, "shape") else len(x)
    except TypeError as exc:
        raise TypeError(f"{name}: must be an array-like with one row per sample.") from exc


def _objective_weights(objective: Any, y_ben: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """Cell weights (TP, FN, FP, TN) such that the objective = Σ_rows weight(cell) / N."""
    if isinstance(objective, str):
        v.check_choice(objective, "objective", _OBJECTIVES)
        if objective == "accuracy":
            return np.array([1.0, 0.0, 0.0, 1.0])
        ww = np.ones(y_ben.shape[0]) if w is None else w
        total, pos = ww.sum(), ww[y_ben == 1].sum()
        neg = total - pos
        if pos == 0 or neg == 0:
            raise ValueError(
                "objective: 'balanced_accuracy' needs both outcomes in y; use 'accuracy'."
            )
        return np.array([total / (2 * pos), 0.0, 0.0, total / (2 * neg)])
    arr = np.asarray(objective, dtype=np.float64) if not isinstance(objective, bool) else None
    if arr is None or arr.shape != (4,) or not np.all(np.isfinite(arr)):
        raise ValueError(
            "objective: must be 'accuracy', 'balanced_accuracy' or four finite utilities of the "
            f"cells (TP, FN, FP, TN), e.g. (1, 0, 0, 1) for accuracy; got {objective!r}."
        )
    return arr


class OFIThresholdOptimizer(ParamsMixin):
    """Post-processing to B-parity: per-group thresholds on a scorer, as fairlearn's ``ThresholdOptimizer``.

    For group :math:`g` with :math:`n_g` rows, :math:`P_g` of them with the beneficial label,
    a rule "beneficial when score ≥ t" selects :math:`m_g(t)` rows and has marginal benefit

    .. math::
        \\mathcal{B}_g = \\frac{FP_g - FN_g}{n_g} = \\frac{m_g - P_g}{n_g}
        = \\text{selection rate} - \\text{base rate}, \\qquad
        \\mathrm{OFI}_{ij} = \\mathcal{B}_i - \\mathcal{B}_j .

    ``fit`` chooses for every group a threshold rule (``randomize=True``: a mixture of two,
    applied to the rows scored between them with probability ``mix_``) that maximizes the
    objective :math:`\\sum_g w \\cdot CM_g / N` on the fit data subject to
    :math:`\\max_{i,j} |\\mathrm{OFI}_{ij}| \\le` ``tolerance`` (in expectation when randomized;
    exactly 0 with ``tolerance=0``). The optimum over all such rules is found exactly (see the
    module notes), from exact int64 counts of :func:`ofijax.cm.threshold_sweep`; the search
    covers all groups' thresholds at once in one JAX program.

    **It uses group membership at decision time.** Each person's decision depends on their
    group, which is disparate treatment: unlawful in some settings, e.g. US employment selection
    (Title VII forbids adjusting scores or cutoffs by race, sex or other protected
    characteristics) and often in credit. Use it where the law permits group-aware decisions,
    e.g. remedial programmes that allow them, research, audits and simulation (what would
    parity cost?), or to set a benchmark for methods that do not use the group at decision time
    (:class:`ofijax.diff.OFIClassifier`). Parity holds on the fit data; on new data it holds up
    to sampling noise, so fit on enough rows per group.

    Args:
        estimator: the scorer. ``None``: scikit-learn's ``LogisticRegression(max_iter=1000)``.
        prefit: ``True`` to use ``estimator`` as already fitted; otherwise ``fit`` trains a clone.
        constraint: ``"b_parity"``, equal marginal benefit across groups (the only one).
        tolerance: the largest allowed ``max|OFI|`` on the fit data (≥ 0).
        objective: ``"accuracy"``, ``"balanced_accuracy"`` or four utilities of the cells
            (TP, FN, FP, TN), maximized as their mean over rows.
        randomize: allow mixtures of two thresholds per group (exact parity, randomized
            decisions); ``False`` keeps decisions deterministic, and if no deterministic rules
            reach ``tolerance`` the smallest reachable ``max|OFI|`` is used (with a warning).
        beneficial_label: the label value of the beneficial outcome (COMPAS: ``0``, no
            recidivism). Scores are read for that class.
        predict_method: ``"auto"`` (``predict_proba``, else ``decision_function``) or one of
            ``"predict_proba"``, ``"decision_function"``, ``"predict"``.
        random_state: int seed or ``jax.random.key`` for the randomized decisions of
            :meth:`predict`; ``None`` means seed 0, so predictions are reproducible.

    Attributes (after ``fit``):
        estimator_: the fitted scorer. classes_: the two labels. groups_: the group labels
        (tuples for several sensitive columns), in sorted order. thresholds_: ``(k, 2)`` float64,
        per group ``(upper, lower)``: rows scoring ≥ upper get the beneficial outcome, rows in
        ``[lower, upper)`` get it with probability ``mix_``, rows below ``lower`` never
        (``inf`` selects nobody). mix_: ``(k,)``. fit_marginal_benefit_: ``(k,)`` expected
        :math:`\\mathcal{B}_g` on the fit data; fit_max_abs_ofi_: their spread;
        fit_objective_: the objective's expected value there; tolerance_: the window used.

    Examples:
        >>> import numpy as np
        >>> from ofijax.diff import OFIThresholdOptimizer
        >>> rng = np.random.default_rng(0)
        >>> group = rng.integers(0, 2, 400)
        >>> x = rng.normal(size=(400, 2)) + group[:, None]
        >>> y = (x[:, 0] + rng.normal(size=400) > 0.5).astype(int)
        >>> post = OFIThresholdOptimizer().fit(x, y, sensitive_features=group)
        >>> post.groups_, round(post.fit_max_abs_ofi_, 9)
        ((0, 1), 0.0)
        >>> post.predict(x[:3], sensitive_features=group[:3]).shape
        (3,)
    """

    _estimator_type = "classifier"

    def __init__(
        self,
        estimator: Any = None,
        *,
        prefit: bool = False,
        constraint: str = "b_parity",
        tolerance: float = 0.0,
        objective: Any = "accuracy",
        randomize: bool = True,
        beneficial_label: Any = 1,
        predict_method: str = "auto",
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.prefit = prefit
        self.constraint = constraint
        self.tolerance = tolerance
        self.objective = objective
        self.randomize = randomize
        self.beneficial_label = beneficial_label
        self.predict_method = predict_method
        self.random_state = random_state

    # --- scikit-learn protocol (without importing scikit-learn) -----------------------------

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
            input_tags=InputTags(),
            requires_fit=True,
        )

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "thresholds_")

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = [
            f"{k}={getattr(self, k)!r}"
            for k in self._get_param_names()
            if not (getattr(self, k) is defaults[k] or (
                isinstance(getattr(self, k), (int, float, str)) and getattr(self, k) == defaults[k]
            ))
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    # --- fitting -------------------------------------------------------------------------------

    def _check_options(self) -> None:
        v.check_choice(self.constraint, "constraint", ("b_parity",))
        v.check_nonnegative_scalar(self.tolerance, "tolerance")
        v.check_choice(self.predict_method, "predict_method", _PREDICT_METHODS)
        for name in ("prefit", "randomize"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name}: must be True or False; got {getattr(self, name)!r}.")
        if self.prefit and self.estimator is None:
            raise ValueError("estimator: prefit=True needs a fitted estimator; pass one or set prefit=False.")

    def _new_estimator(self) -> Any:
        if self.estimator is None:
            try:
                from sklearn.linear_model import LogisticRegression
            except ImportError as exc:
                raise ValueError(
                    "estimator: None means scikit-learn's LogisticRegression, which is not "
                    "installed; pip install scikit-learn, or pass an estimator."
                ) from exc
            return LogisticRegression(max_iter=1000)
        try:
            from sklearn.base import clone
        except ImportError:
            import copy

            return copy.deepcopy(self.estimator)
        return clone(self.estimator)

    def _scores(self, x: Any) -> np.ndarray:
        """Scores of the beneficial class (higher = more beneficial), float64."""
        est, method = self.estimator_, self.predict_method
        if method == "auto":
            method = "predict_proba" if hasattr(est, "predict_proba") else "decision_function"
        col = self._beneficial_col_
        try:
            raw = getattr(est, method)(x)
        except Exception as exc:
            if type(exc).__name__ == "NotFittedError":
                raise ValueError(
                    "estimator: prefit=True but the estimator is not fitted; fit it first or "
                    "set prefit=False."
                ) from exc
            raise
        raw = np.asarray(raw, dtype=np.float64)
        if method == "predict_proba":
            s = raw[:, col]
        elif method == "decision_function":
            if raw.ndim != 1:
                raise ValueError(
                    f"predict_method: decision_function gave shape {raw.shape}; binary "
                    "estimators give one score per row. Use 'predict_proba'."
                )
            s = raw if col == 1 else -raw
        else:
            s = (np.asarray(est.predict(x)) == self.classes_[col]).astype(np.float64)
        v.check_finite(s, "estimator scores")
        return s

    def fit(
        self, X: Any, y: Any, *, sensitive_features: Any = None, sample_weight: Any = None
    ) -> OFIThresholdOptimizer:
        """Fit the scorer (unless ``prefit``) and choose the per-group thresholds on ``X, y``.

        Args:
            X: features, as the estimator takes them (never the sensitive feature, unless you
                mean the scorer to use it).
            y: ``(n,)`` binary labels.
            sensitive_features: ``(n,)`` group labels, or several columns (their intersections
                are the groups). pandas inputs are aligned on their index.
            sample_weight: optional ``(n,)`` non-negative weights (passed to the estimator's
                ``fit`` too).

        Returns:
            self.
        """
        self._check_options()
        if sensitive_features is None:
            raise ValueError("sensitive_features: required; pass one group label per row of X.")
        a = v.align_pandas(X=X, y=y, sensitive_features=sensitive_features, sample_weight=sample_weight)
        X, sf, sw = a["X"], a["sensitive_features"], a["sample_weight"]
        y_arr = v.as_numpy(a["y"], "y")
        if y_arr.ndim != 1:
            raise ValueError(f"y: must be 1-D (one label per row), got shape {y_arr.shape}.")
        n = v.check_same_length(X=np.empty(_n_rows(X, "X")), y=y_arr)
        if n == 0:
            raise ValueError("X: is empty (0 rows); fit needs data.")
        w = None if sw is None else v.check_counts(sw, "sample_weight").astype(np.float64)
        if w is not None and w.shape != (n,):
            raise ValueError(f"sample_weight: must have one weight per row ({n}), got shape {w.shape}.")
        if self.prefit:
            est = self.estimator
        else:
            est = self._new_estimator()
            est.fit(X, y_arr) if w is None else est.fit(X, y_arr, sample_weight=w)
        classes = getattr(est, "classes_", None)
        classes = np.unique(y_arr) if classes is None else np.asarray(classes)
        if classes.shape != (2,):
            raise ValueError(
                f"y: needs exactly two classes (binary outcome), got {classes.tolist()}."
            )
        if self.beneficial_label not in classes.tolist():
            raise ValueError(
                f"beneficial_label: {self.beneficial_label!r} is not one of the classes "
                f"{classes.tolist()}; pass the label of the beneficial outcome."
            )
        unknown = ~np.isin(y_arr, classes)
        if unknown.any():
            raise ValueError(
                f"y: holds labels {np.unique(y_arr[unknown]).tolist()[:5]} outside the "
                f"estimator's classes {classes.tolist()}."
            )
        self.estimator_, self.classes_ = est, classes
        self._beneficial_col_ = classes.tolist().index(self.beneficial_label)
        codes, groups, _ = _encode(sf, n)
        scores = self._scores(X)
        y_ben = (y_arr == self.beneficial_label).astype(np.int64)
        util = _objective_weights(self.objective, y_ben, w)
        self._search(scores, y_ben, codes, groups, w, util)
        return self

    def _search(self, scores, y_ben, codes, groups, w, util) -> None:
        k = len(groups)
        distinct = np.unique(scores)[::-1]  # descending: selections grow along the axis
        none = np.nextafter(distinct[0], np.inf)
        thr = np.concatenate([[none], distinct])
        t_pad = 1 << int(np.ceil(np.log2(max(thr.size, 2))))  # few program shapes
        thr = np.concatenate([thr, np.full(t_pad - thr.size, distinct[-1])])
        cms = np.asarray(
            threshold_sweep(y_ben, scores, codes, thr, sample_weight=w).cms
        )  # (T, k, 4) exact
        cms = np.moveaxis(cms, 0, 1).astype(np.float64)  # (k, T, 4)
        n_g = cms[:, 0].sum(-1)
        pos_g = cms[:, 0, 0] + cms[:, 0, 1]
        m = cms[..., 0] + cms[..., 2]
        b = (m - pos_g[:, None]) / n_g[:, None]
        u = cms @ util
        first = np.concatenate([np.ones((k, 1), bool), m[:, 1:] != m[:, :-1]], axis=1)
        tol = float(self.tolerance)
        with jax.enable_x64(True):
            args = [v.device_array(a, jnp.float64) for a in (b, u)]
            if self.randomize:
                ia, ib, p = _search_randomized(
                    *args, v.device_array(first), jnp.float64(tol)
                )
                ia, ib, p = np.asarray(ia), np.asarray(ib), np.asarray(p, np.float64)
                width = tol
            else:
                ia, width = _search_deterministic(*args, jnp.float64(tol))
                ia, width = np.asarray(ia), float(width)
                ib, p = ia, np.zeros(k)
        if width > tol:
            warnings.warn(
                f"tolerance: no deterministic thresholds reach max|OFI| <= {tol:g} on the fit "
                f"data; used the smallest reachable, {width:.6g}. Pass randomize=True for exact "
                "parity (randomized decisions) or a larger tolerance.",
                UserWarning,
                stacklevel=3,
            )
        p = np.where(ib == ia, 0.0, p)
        rows = np.arange(k)
        upper = np.where(p >= 1.0, thr[ib], thr[ia])
        lower = np.where((p > 0.0) & (p < 1.0), thr[ib], upper)
        mix = np.where((p > 0.0) & (p < 1.0), p, 0.0)
        upper = np.where(upper == none, np.inf, upper)
        lower = np.where(lower == none, np.inf, lower)
        expected = (1 - p)[:, None] * cms[rows, ia] + p[:, None] * cms[rows, ib]
        b_fit = (expected[:, 0] + expected[:, 2] - pos_g) / n_g
        self.groups_ = groups
        self.thresholds_ = np.stack([upper, lower], axis=1)
        self.mix_ = mix
        self.fit_marginal_benefit_ = b_fit
        self.fit_max_abs_ofi_ = float(b_fit.max() - b_fit.min())
        # fsum: the correctly rounded sum, whatever the groups' order
        self.fit_objective_ = math.fsum(expected @ util) / math.fsum(n_g)
        self.tolerance_ = max(width, tol)

    # --- prediction ----------------------------------------------------------------------------

    def _beneficial_probability(self, X: Any, sensitive_features: Any) -> tuple[Any, np.ndarray]:
        if not hasattr(self, "thresholds_"):
            raise _not_fitted("X")
        if sensitive_features is None:
            raise ValueError("sensitive_features: required; pass one group label per row of X.")
        a = v.align_pandas(X=X, sensitive_features=sensitive_features)
        X, sf = a["X"], a["sensitive_features"]
        n = _n_rows(X, "X")
        codes, groups, _ = _encode(sf, n)
        index = {g: i for i, g in enumerate(self.groups_)}
        unseen = [g for g in groups if g not in index]
        if unseen:
            raise ValueError(
                f"sensitive_features: group(s) {unseen[:5]} were not seen in fit (groups "
                f"{list(self.groups_)}); thresholds exist only for those. Map them to a fitted "
                "group or refit with them."
            )
        gi = np.array([index[g] for g in groups], dtype=np.int64)[codes]
        s = self._scores(X)
        upper, lower = self.thresholds_[gi, 0], self.thresholds_[gi, 1]
        prob = np.where(s >= upper, 1.0, np.where(s >= lower, self.mix_[gi], 0.0))
        return X, prob

    def predict_proba(self, X: Any, *, sensitive_features: Any) -> np.ndarray:
        """Probability of each class (``classes_`` order) under the randomized decision rule.

        These are the decision rule's probabilities (1, ``mix_`` or 0), not calibrated outcome
        probabilities.
        """
        _, prob = self._beneficial_probability(X, sensitive_features)
        out = np.empty((prob.shape[0], 2))
        out[:, self._beneficial_col_] = prob
        out[:, 1 - self._beneficial_col_] = 1.0 - prob
        return out

    def predict(self, X: Any, *, sensitive_features: Any, random_state: Any = None) -> np.ndarray:
        """Labels from the per-group thresholds; rows between a group's two thresholds draw.

        Args:
            X: features. sensitive_features: the rows' groups (each seen in ``fit``).
            random_state: int seed or ``jax.random.key`` for the draws; ``None``: the
                estimator's ``random_state``, or seed 0 if that is ``None`` too.
        """
        _, prob = self._beneficial_probability(X, sensitive_features)
        seed = random_state if random_state is not None else self.random_state
        ben = prob >= 1.0
        if np.any((prob > 0.0) & (prob < 1.0)):
            key = v.as_key(0 if seed is None else seed, "random_state")
            bits = np.asarray(jax.random.bits(key, (prob.shape[0],), jnp.uint32), np.float64)
            ben = (bits + 0.5) / 2.0**32 < prob
        return np.where(ben, self.classes_[self._beneficial_col_], self.classes_[1 - self._beneficial_col_])


def _encode(sf: Any, n: int) -> tuple[np.ndarray, tuple, Any]:
    """Group codes, refusing a length that differs from X's with a message naming the argument."""
    one_column = (hasattr(sf, "shape") and len(sf.shape) == 1) or (
        isinstance(sf, list) and np.ndim(sf) == 1
    )
    if one_column and len(sf) != n:
        raise ValueError(
            f"sensitive_features: has {len(sf)} rows but X has {n}; pass one group label per row."
        )
    return encode_groups(sf, n)
