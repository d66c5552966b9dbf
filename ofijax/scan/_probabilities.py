"""Base-rate probabilities p_i for IJDI-Scan, and the IJDI cost parameter λ.

* :func:`estimate_true_probabilities`: an L2-regularised logistic regression on one-hot encoded
  categorical attributes, fitted by Newton's method in JAX (float64). It minimises exactly
  scikit-learn's ``LogisticRegression(C=1/l2)`` objective, so users need no scikit-learn.
* :func:`lambda_from_costs`: λ from three elicited costs (IJDI paper, eq. 3 and App. C).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .._validation import (
    align_pandas,
    as_pandas,
    check_binary,
    check_choice,
    check_nonnegative_scalar,
    device_array,
)
from ._encode import check_unique_columns

__all__ = ["estimate_true_probabilities", "lambda_from_costs", "one_hot_design"]

_MAX_NEWTON = 100


def _frame(data: Any) -> pd.DataFrame:
    data = as_pandas(data, "data")
    if isinstance(data, pd.Series):
        return data.to_frame()
    if isinstance(data, pd.DataFrame):
        check_unique_columns(data)
        return data
    arr = np.asarray(data)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(
            f"data: must be a DataFrame or a 2-D array (rows × attributes); got shape {arr.shape}."
        )
    return pd.DataFrame({m: arr[:, m] for m in range(arr.shape[1])})


#: Largest one-hot design (columns) estimate_true_probabilities fits.
_MAX_DESIGN_COLUMNS = 2_000


def one_hot_design(data: Any, drop_first: bool | Mapping = False, *,
                   max_columns: int | None = None) -> tuple[np.ndarray, list]:
    """One-hot design matrix of categorical columns, levels in sorted order.

    Args:
      data: DataFrame (or 2-D array) of categorical attributes.
      drop_first: ``False`` keeps every level; ``True`` drops the first (sorted) level of every
        column; a mapping ``{column: level}`` drops that reference level in the named columns
        only (every other column keeps all its levels).
      max_columns: refuse (``ValueError`` naming ``data``) a design wider than this, before any
        of it is built.

    Returns:
      ``(X (N, D) float64, names)`` with names ``"column=level"``.

    Examples:
      >>> import pandas as pd
      >>> X, names = one_hot_design(pd.DataFrame({"a": ["x", "y", "x"]}), drop_first={"a": "x"})
      >>> X.ravel().tolist(), names
      ([0.0, 1.0, 0.0], ['a=y'])
    """
    frame = _frame(data)
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"data: must have at least one row and one column; got {frame.shape}.")
    if isinstance(drop_first, Mapping):
        unknown = [c for c in drop_first if c not in frame.columns]
        if unknown:
            raise ValueError(
                f"drop_first: unknown column(s) {unknown!r}; columns are {list(frame.columns)!r}."
            )
    elif not isinstance(drop_first, bool | np.bool_):
        raise ValueError(
            f"drop_first: must be True, False or a mapping {{column: level}}; got {drop_first!r}."
        )
    parts = []
    for name in frame.columns:
        col = frame[name]
        if col.isna().any():
            raise ValueError(
                f"data: column {name!r} has missing values; map them to an explicit category first."
            )
        codes, levels = pd.factorize(col, sort=True)
        levels = list(levels)
        keep = list(range(len(levels)))
        if isinstance(drop_first, Mapping):
            if name in drop_first:
                ref = drop_first[name]
                hits = [j for j, lev in enumerate(levels) if lev == ref]
                if not hits:
                    raise ValueError(
                        f"drop_first: level {ref!r} does not occur in column {name!r}; "
                        f"levels are {levels!r}."
                    )
                keep.remove(hits[0])
        elif drop_first:
            keep = keep[1:]
        parts.append((name, codes, levels, keep))
    width = sum(len(keep) for *_, keep in parts)
    if max_columns is not None and width > max_columns:
        raise ValueError(
            f"data: the one-hot design has {width:,} columns (more than {max_columns:,}); "
            "bin or group high-cardinality columns first, or pass your own probabilities."
        )
    cols, names = [], []
    for name, codes, levels, keep in parts:
        for j in keep:
            cols.append((codes == j).astype(np.float64))
            names.append(f"{name}={levels[j]}")
    X = np.stack(cols, axis=1) if cols else np.zeros((frame.shape[0], 0))
    return X, names


def _objective(w, X, y, sw, l2):
    z = X @ w[1:] + w[0]
    # log-loss: log(1 + e^z) - y z, summed with sample weights; intercept w[0] unpenalised.
    return jnp.sum(sw * (jnp.logaddexp(0.0, z) - y * z)) + 0.5 * l2 * jnp.sum(w[1:] ** 2)


def _fit_newton(X, y, sw, l2, tol, max_iter=_MAX_NEWTON):
    """Damped Newton on the (strictly convex) L2 logistic objective; returns (w, iters, gnorm)."""
    d = X.shape[1] + 1
    reg = jnp.concatenate([jnp.zeros(1, X.dtype), jnp.full(d - 1, l2, X.dtype)])
    Xa = jnp.concatenate([jnp.ones((X.shape[0], 1), X.dtype), X], axis=1)

    def grad_hess(w):
        z = Xa @ w
        mu = jax.nn.sigmoid(z)
        g = Xa.T @ (sw * (mu - y)) + reg * w
        h = (Xa * (sw * mu * (1.0 - mu))[:, None]).T @ Xa + jnp.diag(reg)
        return g, h

    def f(w):
        return _objective(w, X, y, sw, l2)

    def cond(s):
        _, it, gnorm = s
        return (it < max_iter) & (gnorm > tol)

    def body(s):
        w, it, _ = s
        g, h = grad_hess(w)
        # Tiny ridge keeps the solve defined when an unpenalised direction is flat (l2 = 0).
        step = jnp.linalg.solve(h + 1e-12 * jnp.eye(d, dtype=h.dtype), g)
        f0 = f(w)
        slope = g @ step

        def ls_cond(a):
            return (f(w - a * step) > f0 - 1e-4 * a * slope) & (a > 1e-10)

        a = jax.lax.while_loop(ls_cond, lambda a: 0.5 * a, jnp.asarray(1.0, X.dtype))
        w2 = w - a * step
        g2, _ = grad_hess(w2)
        return w2, it + 1, jnp.max(jnp.abs(g2))

    w0 = jnp.zeros(d, X.dtype)
    g0, _ = grad_hess(w0)
    return jax.lax.while_loop(cond, body, (w0, jnp.asarray(0), jnp.max(jnp.abs(g0))))


def _fit_predict(X, y, sw, l2, tol):
    """σ(X w₁ + w₀) on every row of ``X`` for the weights :func:`_fit_newton` fits with row
    weights ``sw``: the fit and its predictions as one program."""
    w, _, _ = _fit_newton(X, y, sw, l2, tol)
    return jax.nn.sigmoid(X @ w[1:] + w[0])


# One program instead of the fit plus ~8 eager ops, each compiled on first use. Plain ``jax.jit``,
# not a kept executable (``aot_jit``): the solve calls LAPACK, and an XLA:CPU executable with
# LAPACK calls read back from disk crashed the process when run (jaxlib 0.10.2).
_FIT_PREDICT = jax.jit(_fit_predict)


def estimate_true_probabilities(
    data,
    y_true,
    *,
    model: str = "logistic",
    l2: float = 1.0,
    drop_first: bool | Mapping = False,
    cross_fit: int = 0,
    tol: float = 1e-9,
) -> np.ndarray:
    r"""Estimate base-rate probabilities :math:`p_i = \Pr(y_i = 1 \mid x_i)` for IJDI-Scan.

    Fits an L2-regularised logistic regression on the one-hot encoded categorical attributes by
    minimising exactly scikit-learn's ``LogisticRegression(C=1/l2)`` objective

    .. math::

        \sum_i \bigl[\log(1 + e^{z_i}) - y_i z_i\bigr] + \frac{l_2}{2}\lVert w\rVert^2,
        \qquad z_i = b + x_i^\top w,

    with the intercept b unpenalised, by damped Newton iterations in float64 (converged to a
    gradient max-norm below ``tol``; scikit-learn's lbfgs stops at 1e-4, so the two agree to about
    1e-4 in probability). The model sees both outcome classes and, as in the IJDI reference code,
    predicts **in sample** unless ``cross_fit`` is set. This model is separate from the audited
    classifier (the paper's p̂_0); any other estimate of p can be passed to
    :func:`~ofijax.scan.ijdi_scan` instead.

    Args:
      data: DataFrame (or 2-D array) of categorical attributes.
      y_true: binary outcomes (0/1). pandas arguments are aligned on their index (the same
        labels in another order: reordered to ``data``'s rows; else ``ValueError``); the
        probabilities are in the order of the first pandas argument's rows.
      model: ``"logistic"`` (the only model for now).
      l2: ridge strength ≥ 0, ``1/C`` in scikit-learn terms (default 1, i.e. ``C = 1``).
      drop_first: see :func:`one_hot_design`. The IJDI reference drops, on COMPAS,
        ``{"Sex": "Female", "Prior Offenses": "None", "ChargeDegree": "M", "Under 25": False}``
        and keeps every race level; under L2 the dropped level shifts p slightly.
      cross_fit: 0 (in-sample, the reference's choice) or k ≥ 2: row i is predicted by a model
        fitted without fold ``i mod k`` (deterministic strided folds).
      tol: convergence tolerance on the gradient max-norm.

    Returns:
      ``(N,)`` float64 NumPy array of probabilities.

    Examples:
      >>> import numpy as np, pandas as pd
      >>> df = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 4})
      >>> p = estimate_true_probabilities(df, [1, 1, 1, 0, 0, 0, 1, 0], l2=0.0)
      >>> np.round(p, 4).tolist()
      [0.75, 0.75, 0.75, 0.75, 0.25, 0.25, 0.25, 0.25]
    """
    check_choice(model, "model", ("logistic",))
    l2 = check_nonnegative_scalar(l2, "l2")
    tol = check_nonnegative_scalar(tol, "tol")
    if isinstance(cross_fit, bool) or not isinstance(cross_fit, int | np.integer) or (
        cross_fit < 0 or cross_fit == 1
    ):
        raise ValueError(f"cross_fit: must be 0 (in-sample) or an integer k ≥ 2; got {cross_fit!r}.")
    # pandas arguments aligned on their index or refused, never matched by position
    data, y_true = align_pandas(data=data, y_true=y_true).values()
    y = check_binary(y_true, "y_true").astype(np.float64)
    # Newton's method solves a D × D system: refuse a wide design before building it, don't hang
    X, _ = one_hot_design(data, drop_first, max_columns=_MAX_DESIGN_COLUMNS)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y_true: must be 1-D with one label per row of data ({X.shape[0]}); got shape {y.shape}."
        )
    with jax.enable_x64(True):
        Xj, yj = device_array(X), device_array(y)
        l2j, tolj = device_array(l2, np.float64), device_array(tol, np.float64)
        if cross_fit == 0:
            return np.asarray(_FIT_PREDICT(Xj, yj, device_array(np.ones_like(y)), l2j, tolj))
        folds = np.arange(X.shape[0]) % cross_fit
        out = np.empty(X.shape[0])
        for k in range(cross_fit):
            sw = device_array((folds != k).astype(np.float64))
            held = folds == k
            out[held] = np.asarray(_FIT_PREDICT(Xj, yj, sw, l2j, tolj))[held]
        return out


def lambda_from_costs(cost_fp: float, cost_fn: float, cost_imbalance: float) -> float:
    r"""IJDI's λ from three costs: :math:`\lambda = (1 + c_{FN}/c_{FP}) / (c_\Delta / c_{FP})`.

    This is :math:`(c_{FP} + c_{FN}) / c_\Delta` (IJDI paper, eq. 3). Giving one more person in S a
    positive recommendation changes the expected error cost by :math:`p_i c_{FN} - (1-p_i) c_{FP}`,
    so extra positives in S buy utility :math:`(c_{FP}+c_{FN})\sum_S (p_i - \bar p)` at an imbalance
    disutility :math:`c_\Delta \sum_S (\hat p_{i,b} - \bar p_b)`; they are sufficiently justified
    iff the utility is at least the disutility.

    How to elicit the costs: only their ratios matter, so fix :math:`c_{FP} = 1` (the cost of one
    false positive, e.g. detaining one person who would not reoffend) and ask two questions:

    1. *How many false positives is one false negative worth?* That gives :math:`c_{FN}/c_{FP}`.
    2. *How many false positives would you accept to avoid raising one subgroup member's error
       rate relative to everyone else by one unit* (one extra false positive in S beyond the
       population rate)? That gives :math:`c_\Delta/c_{FP}`.

    Ratios (1, 2) give λ = 1; (2, 10) give λ = 0.3. λ = 0 (infinite imbalance cost) is plain
    error-rate balance (FPR-/TPR-Scan); λ → ∞ approaches risk-adjusted regression.

    Args:
      cost_fp: cost of a false positive (> 0).
      cost_fn: cost of a false negative (≥ 0).
      cost_imbalance: cost of one unit of error-rate imbalance in a subgroup, :math:`c_\Delta` (> 0).

    Examples:
      >>> lambda_from_costs(1, 1, 2), round(lambda_from_costs(1, 2, 10), 6)
      (1.0, 0.3)
    """
    fp = check_nonnegative_scalar(cost_fp, "cost_fp")
    fn = check_nonnegative_scalar(cost_fn, "cost_fn")
    imb = check_nonnegative_scalar(cost_imbalance, "cost_imbalance")
    if fp == 0:
        raise ValueError("cost_fp: must be > 0 (costs are measured in units of one false positive).")
    if imb == 0:
        raise ValueError(
            "cost_imbalance: must be > 0; an infinite λ (no imbalance cost) is not a scan setting."
        )
    lam = (1.0 + fn / fp) / (imb / fp)
    if not math.isfinite(lam):
        raise ValueError("cost_fp, cost_fn, cost_imbalance: the resulting λ is not finite.")
    return lam
