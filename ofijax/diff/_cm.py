"""Soft (probability-weighted) confusion matrices and group-weight helpers.

Private module; the public names are re-exported by :mod:`ofijax.diff`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.typing import ArrayLike

from ofijax._validation import (
    align_pandas,
    as_numpy,
    check_binary,
    check_finite,
    check_probabilities,
    is_tracer,
)

__all__ = [
    "GroupWeights",
    "one_hot_groups",
    "soft_confusion_matrices",
    "check_group_weights",
    "soft_cms",
]


class GroupWeights(NamedTuple):
    """Group-membership weights built by :func:`one_hot_groups`.

    Attributes:
        weights: ``(N, G)`` float array; ``weights[n, g]`` is row ``n``'s membership of group ``g``.
        groups: the ``G`` group labels, in column order (tuples ``(column, value)`` for
            ``combine="union"``, tuples of values for ``combine="intersect"`` with several columns).
    """

    weights: jax.Array
    groups: tuple


def _columns(sensitive_features: Any) -> tuple[list[np.ndarray], list[Any]]:
    """Split 1-D labels, a 2-D array or a DataFrame into a list of 1-D label columns."""
    if sensitive_features is None or isinstance(sensitive_features, (str, bytes)):
        raise ValueError(
            f"sensitive_features: must be one group label per row (a 1-D array, list or Series) "
            f"or a 2-D table of attributes; got {type(sensitive_features).__name__}."
        )
    if hasattr(sensitive_features, "columns") and hasattr(sensitive_features, "iloc"):
        names = list(sensitive_features.columns)
        cols = [as_numpy(sensitive_features[c], f"sensitive_features[{c!r}]") for c in names]
        return cols, names
    if isinstance(sensitive_features, (list, tuple)):
        _refuse_missing(sensitive_features)
    arr = as_numpy(sensitive_features, "sensitive_features")
    if arr.ndim == 1:
        return [arr], [None]
    if arr.ndim == 2:
        return [arr[:, k] for k in range(arr.shape[1])], list(range(arr.shape[1]))
    raise ValueError(
        f"sensitive_features: must be 1-D labels or a 2-D (rows, attributes) table; "
        f"got shape {arr.shape}."
    )


def _refuse_missing(labels: Any) -> None:
    """A Python list ``["a", nan]`` would become the strings ``"a"``, ``"nan"``: check first."""
    try:
        obj = np.array(labels, dtype=object)
    except ValueError:  # ragged nested lists: let the shape checks report them
        return
    missing = pd.isna(obj)
    if np.any(missing):
        idx = np.flatnonzero(missing.reshape(missing.shape[0], -1).any(axis=-1))
        raise ValueError(
            f"sensitive_features: {idx.size} row(s) have a missing group label (first rows "
            f"{idx[:5].tolist()}); fill them with an explicit category or drop those rows."
        )


def _codes(col: np.ndarray, name: str) -> tuple[np.ndarray, list]:
    if col.dtype.kind in "fc":
        check_finite(col, name)
    missing = pd.isna(col)
    if np.any(missing):
        idx = np.flatnonzero(missing)
        raise ValueError(
            f"{name}: {idx.size} row(s) have a missing group label (first rows "
            f"{idx[:5].tolist()}); fill them with an explicit category or drop those rows."
        )
    try:
        values, codes = np.unique(col, return_inverse=True)
    except TypeError:
        raise ValueError(
            f"{name}: group labels of mixed types cannot be ordered; convert them to one type "
            "first (e.g. .astype(str))."
        ) from None
    return codes.reshape(-1), [v.item() if hasattr(v, "item") else v for v in values]


def one_hot_groups(sensitive_features: Any, *, combine: str = "intersect") -> GroupWeights:
    """One-hot group weights ``(N, G)`` from group labels, for :func:`soft_confusion_matrices`.

    Args:
        sensitive_features: 1-D labels (any dtype: strings, integers, pandas), or a 2-D table /
            DataFrame of several sensitive attributes.
        combine: with several attributes, ``"intersect"`` makes one group per observed combination
            (rows partition into groups), ``"union"`` concatenates the one-hot columns of each
            attribute (every row belongs to one group per attribute; groups overlap).

    Returns:
        :class:`GroupWeights` with ``weights`` (float, rows sum to 1 for ``"intersect"``) and the
        sorted group labels.

    Examples:
        >>> from ofijax.diff import one_hot_groups
        >>> gw = one_hot_groups(["b", "a", "b"])
        >>> gw.groups
        ('a', 'b')
        >>> gw.weights.tolist()
        [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    """
    if combine not in ("intersect", "union"):
        raise ValueError(f"combine: must be 'intersect' or 'union'; got {combine!r}.")
    cols, names = _columns(sensitive_features)
    n = len(cols[0])
    if n == 0:
        raise ValueError("sensitive_features: is empty (0 rows); pass one label per row.")
    coded = [
        _codes(c, "sensitive_features" if nm is None else f"sensitive_features[{nm!r}]")
        for c, nm in zip(cols, names)
    ]
    dtype = jnp.result_type(float)
    if len(coded) == 1:
        codes, values = coded[0]
        return GroupWeights(jax.nn.one_hot(codes, len(values), dtype=dtype), tuple(values))
    if combine == "union":
        blocks, groups = [], []
        for (codes, values), nm in zip(coded, names):
            blocks.append(np.eye(len(values))[codes])
            groups.extend((nm, v) for v in values)
        return GroupWeights(jnp.asarray(np.concatenate(blocks, axis=1), dtype=dtype), tuple(groups))
    stacked = np.stack([c for c, _ in coded], axis=1)
    combos, codes = np.unique(stacked, axis=0, return_inverse=True)
    groups = tuple(tuple(coded[k][1][i] for k, i in enumerate(row)) for row in combos)
    return GroupWeights(jax.nn.one_hot(codes.reshape(-1), len(groups), dtype=dtype), groups)


def check_group_weights(
    group_weights: Any, n: int, name: str = "group_weights", rows_of: str = "y_true"
) -> jax.Array:
    """Validate and return group weights as a float ``(N, G)`` array (package-internal helper).

    Raises ``ValueError`` naming ``group_weights`` on a non-numeric, negative, non-finite or
    wrongly shaped input, or when its row count is not ``n``.
    """
    if is_tracer(group_weights):
        gw = group_weights
    else:
        arr = as_numpy(group_weights, name)
        if arr.dtype.kind not in "biuf":
            raise ValueError(
                f"{name}: must be numeric (N, G) membership weights, got dtype {arr.dtype}; "
                "turn group labels into weights with one_hot_groups(labels)."
            )
        if arr.ndim == 2:
            check_finite(arr, name)
            if arr.size and arr.min() < 0:
                raise ValueError(
                    f"{name}: membership weights must be ≥ 0; got a negative value."
                )
        gw = jnp.asarray(arr)
    if gw.ndim == 1:
        if gw.dtype != jnp.bool_:
            raise ValueError(
                f"{name}: a 1-D array must be a boolean subgroup mask (G = 1); for group "
                "labels use one_hot_groups(labels), for one weighted group pass shape (N, 1)."
            )
        gw = gw[:, None]
    if gw.ndim != 2:
        raise ValueError(
            f"{name}: must have shape (N, G) (or a 1-D boolean mask); got shape {gw.shape}."
        )
    if gw.shape[0] != n:
        raise ValueError(
            f"{name}: has {gw.shape[0]} rows but {rows_of} has {n}; pass one row per sample."
        )
    return gw


def soft_confusion_matrices(
    y_true: ArrayLike,
    probs: ArrayLike,
    group_weights: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> jax.Array:
    r"""Per-group confusion matrices of the randomized classifier that predicts 1 with ``probs``.

    With weights :math:`w_{ng} = s_n\,G_{ng}` (sample weight times group membership):

    .. math::

        TP_g = \sum_n w_{ng}\, y_n p_n,\quad FN_g = \sum_n w_{ng}\, y_n (1-p_n),\quad
        FP_g = \sum_n w_{ng}\,(1-y_n)\, p_n,\quad TN_g = \sum_n w_{ng}\,(1-y_n)(1-p_n).

    These are the *expected* counts of the randomized classifier, so every core metric runs on
    them unchanged; with :math:`p \in \{0, 1\}` they are the hard counts. In particular the
    marginal benefit is exact in expectation:
    :math:`\mathcal{B}_g = (FP_g - FN_g)/n_g = \bar p_g - \bar y_g`
    (weighted mean probability minus weighted base rate). The result is differentiable in
    ``probs`` (and in ``group_weights`` / ``sample_weight``).

    Args:
        y_true: ``(N,)`` binary labels, 1 = the beneficial outcome.
        probs: ``(..., N)`` probabilities of the positive (beneficial) prediction, in [0, 1];
            leading batch axes are kept.
        group_weights: ``(N, G)`` non-negative membership weights: one-hot (see
            :func:`one_hot_groups`), several attributes side by side, or continuous; or a 1-D
            boolean subgroup mask (for example a subgroup found by a scan), giving ``G = 1``.
        sample_weight: optional ``(N,)`` non-negative row weights.

    Returns:
        ``(..., G, 4)`` float array ordered TP, FN, FP, TN.

    Examples:
        >>> import jax.numpy as jnp
        >>> from ofijax.diff import soft_confusion_matrices
        >>> y = jnp.array([1, 1, 0, 0])
        >>> p = jnp.array([0.75, 0.5, 0.5, 0.0])
        >>> groups = jnp.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        >>> soft_confusion_matrices(y, p, groups).tolist()
        [[1.25, 0.75, 0.0, 0.0], [0.0, 0.0, 0.5, 1.5]]
    """
    a = align_pandas(
        y_true=y_true, probs=probs, group_weights=group_weights, sample_weight=sample_weight
    )
    y_true, probs = a["y_true"], a["probs"]
    group_weights, sample_weight = a["group_weights"], a["sample_weight"]
    if not is_tracer(y_true):
        y_np = check_binary(y_true, "y_true")
        y_true = y_np
        if y_np.ndim != 1:
            raise ValueError(f"y_true: must be 1-D (N,); got shape {y_np.shape}.")
    y = jnp.asarray(y_true)
    if y.ndim != 1:
        raise ValueError(f"y_true: must be 1-D (N,); got shape {y.shape}.")
    n = y.shape[0]
    if not is_tracer(probs):
        src = as_numpy(probs, "probs").dtype
        p_np = check_probabilities(probs, "probs")
        probs = p_np.astype(src) if src.kind == "f" else p_np
    p = jnp.asarray(probs)
    if p.ndim == 0 or p.shape[-1] != n:
        raise ValueError(
            f"probs: last axis must have one probability per row ({n}); got shape {p.shape}."
        )
    gw = check_group_weights(group_weights, n)
    if sample_weight is not None:
        if not is_tracer(sample_weight):
            sw_np = as_numpy(sample_weight, "sample_weight")
            if sw_np.dtype.kind not in "biuf":
                raise ValueError(f"sample_weight: must be numeric, got dtype {sw_np.dtype}.")
            check_finite(sw_np, "sample_weight")
            if sw_np.size and sw_np.min() < 0:
                raise ValueError("sample_weight: row weights must be ≥ 0; got a negative value.")
            sample_weight = sw_np
        sw = jnp.asarray(sample_weight)
        if sw.shape != (n,):
            raise ValueError(
                f"sample_weight: must have shape ({n},) (one weight per row); got {sw.shape}."
            )
    else:
        sw = None
    return soft_cms(y, p, gw, sw)


def soft_cms(y: jax.Array, p: jax.Array, gw: jax.Array, sw: jax.Array | None) -> jax.Array:
    """Unchecked core of :func:`soft_confusion_matrices` (package-internal; used inside compiled
    training, where the inputs were checked once outside ``jit``)."""
    dtype = jnp.result_type(p.dtype, gw.dtype, float)
    if sw is not None:
        dtype = jnp.result_type(dtype, sw.dtype)
    p = p.astype(dtype)
    y = y.astype(dtype)
    w = gw.astype(dtype) if sw is None else gw.astype(dtype) * sw.astype(dtype)[:, None]
    q = 1 - p
    cells = jnp.stack(
        [y * p, y * q, (1 - y) * p, (1 - y) * q], axis=-1
    )  # (..., N, 4): expected TP, FN, FP, TN indicators per row
    return jnp.einsum("...nk,ng->...gk", cells, w)
