"""Confusion matrices in one layout: arrays of shape ``(..., 4)`` ordered TP, FN, FP, TN.

The positive prediction is the *beneficial* outcome (hired, released, approved). Data where label 1
is harmful (COMPAS: 1 = recidivist) must be flipped with :func:`flip` or ``beneficial_label=0``.

Cell ``c`` of a row with label ``y`` and prediction ``ŷ`` is ``2·(1 − y) + (1 − ŷ)``:
TP = 0, FN = 1, FP = 2, TN = 3. Every builder here is one segment-sum over that index, so millions of
rows, thousands of groups and many models (leading axes of ``y_pred``) cost one pass.

**Counts are exact whatever** ``jax_enable_x64`` **says.** The builders and conversions run on
concrete inputs and return JAX arrays of dtype **int64** (float64 with ``sample_weight`` or
fractional counts), computed under a local ``jax.enable_x64(True)`` or in NumPy, so counts
≥ 2³¹ and integer weights ≥ 2²⁴ stay exact (weighted totals up to 2⁵³). Scores are compared with
thresholds in float64, exactly as NumPy does. These arrays keep their dtype when indexed, passed
to :mod:`ofijax.metrics` or converted with ``np.asarray``; note that plain ``jnp`` arithmetic on
them *outside* x64 mode is JAX's own and truncates to 32 bits. Conversions (:func:`flip`,
:func:`from_counts`, ...) called on tracers inside ``jit`` follow the traced dtype.

pandas inputs (``y_true``, ``y_pred``, ``scores``, ``sensitive_features``, ``sample_weight``) are
aligned on their index or refused (:func:`ofijax._validation.align_pandas`), never matched by
position.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax._jaxcache import aot_jit

#: Index of each cell along the last axis.
TP, FN, FP, TN = 0, 1, 2, 3


class GroupConfusionMatrices(NamedTuple):
    """Per-group confusion matrices.

    Attributes:
        cms: array ``(..., k, 4)`` in the layout TP, FN, FP, TN; leading axes are those of ``y_pred``
            (many models / seeds) or of the thresholds.
        groups: the ``k`` group labels in sorted order; tuples of labels when several sensitive
            columns were given (their intersections are the groups).
        names: the names of the sensitive columns (``None`` where the input had no names).
    """

    cms: jax.Array
    groups: tuple
    names: tuple | None


# --------------------------------------------------------------------------------------------
# Input preparation (concrete inputs, outside jit)
# --------------------------------------------------------------------------------------------


def prepare_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Check optional row weights and return them as a float64 NumPy array (or ``None``).

    Weights must be a 1-D numeric array of ``n`` finite, non-negative values whose total is
    below 2**53 (so that float64 sums of integer weights are exact).

    >>> from ofijax.cm import prepare_weights
    >>> prepare_weights([1, 2**30, 3], 3).dtype
    dtype('float64')
    """
    if sample_weight is None:
        return None
    w = v.as_numpy(sample_weight, "sample_weight")
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight: must be numeric, got dtype {w.dtype}.")
    if w.ndim != 1:
        raise ValueError(f"sample_weight: must be 1-D (one weight per row), got shape {w.shape}.")
    if w.dtype.kind in "iu" and w.size and int(np.max(np.abs(w))) >= 2**53:
        raise ValueError("sample_weight: integer weights must be below 2**53 to be counted exactly.")
    w = w.astype(np.float64)
    v.check_finite(w, "sample_weight")
    if np.any(w < 0):
        raise ValueError("sample_weight: weights must be non-negative.")
    v.check_same_length(y_true=np.empty(n), sample_weight=w)
    if w.size and float(w.sum()) >= 2.0**53:
        raise ValueError(
            "sample_weight: the weights total 2**53 or more, beyond which float64 counts are not "
            "exact; rescale the weights."
        )
    return w


def prepare_labels(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check binary labels and predictions; return them as int8 NumPy arrays.

    ``y_true`` is ``(n,)``, ``y_pred`` ``(..., n)`` (leading axes for many models); both 0/1.

    >>> from ofijax.cm import prepare_labels
    >>> [a.tolist() for a in prepare_labels([1, 0], [[0, 0], [1, 1]])]
    [[1, 0], [[0, 0], [1, 1]]]
    """
    yt = v.check_binary(y_true, "y_true")
    yp = v.check_binary(y_pred, "y_pred")
    if yt.ndim != 1:
        raise ValueError(f"y_true: must be 1-D (one label per row), got shape {yt.shape}.")
    if yp.ndim < 1:
        raise ValueError("y_pred: must hold one prediction per row, got a scalar.")
    v.check_same_length(y_true=yt, y_pred=yp)
    if yt.shape[0] == 0:
        raise ValueError("y_true: is empty (n = 0); a confusion matrix needs at least one row.")
    return yt, yp


# Old private names, kept for callers not yet switched to the public ones.
_prepare_weights = prepare_weights
_prepare_labels = prepare_labels


def _exact(arr: np.ndarray) -> jax.Array:
    """A NumPy int64/float64 array as a JAX array of the same dtype, whatever the x64 flag."""
    with jax.enable_x64(True):
        return jnp.asarray(arr)


def _columns(sensitive_features: Any, n: int) -> tuple[list[np.ndarray], tuple | None]:
    """Split sensitive features into a list of 1-D columns and their names."""
    sf = sensitive_features
    if isinstance(sf, pd.DataFrame):
        v.check_unique_columns(sf, "sensitive_features")
        return [sf.iloc[:, j].to_numpy() for j in range(sf.shape[1])], tuple(sf.columns)
    if isinstance(sf, pd.Series):
        return [sf.to_numpy()], (sf.name,) if sf.name is not None else None
    if isinstance(sf, dict):
        return [v.as_numpy(c, f"sensitive_features[{k!r}]") for k, c in sf.items()], tuple(sf)
    if isinstance(sf, (list, tuple)) and len(sf) > 0 and all(np.ndim(c) == 1 for c in sf):
        return [
            np.asarray(c, dtype=object) if isinstance(c, (list, tuple)) else np.asarray(c)
            for c in sf
        ], None
    if sf is None or isinstance(sf, (str, bytes)):
        raise ValueError(
            "sensitive_features: must be one group label per row (a 1-D array, list or Series) "
            f"or several columns; got {type(sf).__name__}."
        )
    # a Python list ["a", nan] would become the strings "a", "nan": keep objects for lists
    arr = np.asarray(sf, dtype=object) if isinstance(sf, (list, tuple)) else np.asarray(sf)
    if arr.ndim == 1:
        return [arr], None
    if arr.ndim == 2:
        if arr.shape[0] != n and arr.shape[1] == n:
            arr = arr.T
        return [arr[:, j] for j in range(arr.shape[1])], None
    raise ValueError(
        "sensitive_features: must be a 1-D array/Series or a 2-D array/DataFrame (one column per "
        f"attribute), got shape {arr.shape}."
    )


def _check_one_kind(col: np.ndarray, label: str) -> None:
    """Refuse a group column that mixes text with other values: ``1`` and ``"1"`` are different
    groups that print alike (``'1'``), so every label, report and verdict would confuse them."""
    if col.dtype != object:
        return
    is_text = np.fromiter((isinstance(x, (str, bytes)) for x in col), bool, col.shape[0])
    if is_text.any() and not is_text.all():
        t = col[np.flatnonzero(is_text)[0]]
        o = col[np.flatnonzero(~is_text)[0]]
        raise ValueError(
            f"{label}: mixes text and non-text group values (e.g. {t!r} and {o!r}), which print "
            "alike as labels; convert the column to one type first, e.g. .astype(str)."
        )


def encode_groups(sensitive_features: Any, n: int) -> tuple[np.ndarray, tuple, tuple | None]:
    """Encode sensitive features into integer group ids.

    Args:
        sensitive_features: a 1-D array/Series, or several columns (2-D array, DataFrame, dict or
            list of 1-D arrays); the groups are the observed intersections of the columns.
        n: the number of rows expected.

    Returns:
        ``(codes, groups, names)``: ``codes`` an int32 array ``(n,)`` of group ids ``0..k-1``, ``groups``
        the ``k`` labels in sorted order (tuples for several columns), ``names`` the column names.

    Raises:
        ValueError: on a length mismatch or a missing (NaN/None) group value.
    """
    cols, names = _columns(sensitive_features, n)
    per_col_codes, per_col_uniques = [], []
    for j, col in enumerate(cols):
        label = "sensitive_features" if len(cols) == 1 else f"sensitive_features[{j}]"
        if names is not None and len(cols) > 1:
            label = f"sensitive_features[{names[j]!r}]"
        col = np.asarray(col)
        if col.ndim != 1:
            raise ValueError(f"{label}: must be 1-D, got shape {col.shape}.")
        if col.shape[0] != n:
            raise ValueError(
                f"{label}: length mismatch (y_true has {n} rows but {label} has "
                f"{col.shape[0]}); pass one group value per row."
            )
        missing = pd.isna(col)
        if np.any(missing):
            idx = np.flatnonzero(missing)
            raise ValueError(
                f"{label}: {idx.size} row(s) have a missing group value (first rows {idx[:5].tolist()}); "
                "fill them with an explicit category or drop those rows."
            )
        _check_one_kind(col, label)
        codes, uniques = pd.factorize(col, sort=True)
        per_col_codes.append(codes.astype(np.int64))
        per_col_uniques.append(np.asarray(uniques))
    if len(cols) == 1:
        codes = per_col_codes[0]
        groups = tuple(u.item() if hasattr(u, "item") else u for u in per_col_uniques[0])
        return codes.astype(np.int32), groups, names
    # Intersections: mixed-radix key over the per-column codes, then keep the observed combinations.
    radices = [len(u) for u in per_col_uniques]
    key = np.zeros(n, dtype=np.int64)
    for c, r in zip(per_col_codes, radices):
        key = key * r + c
    observed, inverse = np.unique(key, return_inverse=True)
    groups = []
    for k in observed:
        parts = []
        for r in reversed(radices):
            parts.append(int(k % r))
            k //= r
        parts = parts[::-1]
        groups.append(
            tuple(
                (u[p].item() if hasattr(u[p], "item") else u[p])
                for u, p in zip(per_col_uniques, parts)
            )
        )
    return inverse.astype(np.int32).reshape(-1), tuple(groups), names


# --------------------------------------------------------------------------------------------
# Kernels (jitted; shapes are static)
# --------------------------------------------------------------------------------------------


def _cell_index(y_true: jax.Array, y_pred: jax.Array) -> jax.Array:
    return 2 * (1 - y_true.astype(jnp.int32)) + (1 - y_pred.astype(jnp.int32))


@aot_jit(name="ofijax.cm.group_counts", static_argnames=("num_groups",))  # executable kept on disk
def _group_counts_kernel(y_true, y_pred, codes, weights, *, num_groups):
    """Segment-sum rows into ``(..., num_groups, 4)``; ``y_pred`` may carry leading axes.

    Traced under ``jax.enable_x64(True)`` (see :func:`_group_counts`): int64 counts, float64
    weighted counts.
    """
    lead = y_pred.shape[:-1]
    n = y_pred.shape[-1]
    yp = y_pred.reshape((-1, n))
    b = yp.shape[0]
    cell = _cell_index(y_true[None, :], yp)  # (b, n)
    ids = (jnp.arange(b, dtype=jnp.int64)[:, None] * num_groups + codes[None, :]) * 4 + cell
    if weights is None:
        data = jnp.ones(ids.shape, dtype=jnp.int64)
    else:
        data = jnp.broadcast_to(weights.astype(jnp.float64), ids.shape)
    out = jax.ops.segment_sum(data.reshape(-1), ids.reshape(-1), num_segments=b * num_groups * 4)
    return out.reshape(lead + (num_groups, 4))


def _group_counts(y_true, y_pred, codes, weights, *, num_groups) -> jax.Array:
    """Exact per-group counts: int64 (float64 with weights) whatever ``jax_enable_x64`` says."""
    with jax.enable_x64(True):
        return _group_counts_kernel(
            np.asarray(y_true), np.asarray(y_pred), np.asarray(codes, np.int64),
            None if weights is None else np.asarray(weights, np.float64), num_groups=num_groups,
        )


# --------------------------------------------------------------------------------------------
# Public builders
# --------------------------------------------------------------------------------------------


def confusion_matrix(
    y_true: Any, y_pred: Any, *, sample_weight: Any = None, beneficial_label: int = 1
) -> jax.Array:
    """Confusion matrix of binary labels and predictions, layout ``(..., 4)`` = TP, FN, FP, TN.

    Args:
        y_true: ``(n,)`` labels in {0, 1}.
        y_pred: ``(..., n)`` predictions in {0, 1}; leading axes (many models) give leading axes of
            the result.
        sample_weight: optional ``(n,)`` non-negative weights (the result is then float).
        beneficial_label: which label value is the beneficial outcome (1 by default). With
            ``beneficial_label=0`` (e.g. COMPAS, where 1 = recidivist) the matrix is flipped so that
            the positive cell is the beneficial one.

    Returns:
        ``(..., 4)`` exact counts: int64 without weights, float64 with weights, whatever
        ``jax_enable_x64`` says.

    Raises:
        ValueError: on non-binary labels, length mismatch, NaN, no rows, or pandas inputs whose
            indexes do not match (equal indexes in another order are aligned).

    Examples:
        The trap from the notes: y = [1,1,0,0,0], ŷ = [1,0,1,1,0] has TP 1, FN 1, FP 2, TN 1.

        >>> import ofijax
        >>> ofijax.confusion_matrix([1, 1, 0, 0, 0], [1, 0, 1, 1, 0])
        Array([1, 1, 2, 1], dtype=int64)
    """
    _check_beneficial(beneficial_label)
    a = v.align_pandas(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight)
    yt, yp = prepare_labels(a["y_true"], a["y_pred"])
    w = prepare_weights(a["sample_weight"], yt.shape[0])
    codes = np.zeros(yt.shape[0], dtype=np.int32)
    cms = _group_counts(yt, yp, codes, w, num_groups=1)[..., 0, :]
    return _apply_beneficial(cms, beneficial_label)


def _check_beneficial(beneficial_label):
    if isinstance(beneficial_label, (bool, np.bool_)) or beneficial_label not in (0, 1):
        raise ValueError(f"beneficial_label: must be 0 or 1, got {beneficial_label!r}.")


def _apply_beneficial(cms, beneficial_label):
    _check_beneficial(beneficial_label)
    return cms if beneficial_label == 1 else flip(cms)


def group_confusion_matrices(
    y_true: Any,
    y_pred: Any,
    sensitive_features: Any,
    *,
    sample_weight: Any = None,
    beneficial_label: int = 1,
) -> GroupConfusionMatrices:
    """Confusion matrices of every group (or intersection of groups) in one segment-sum.

    Args:
        y_true: ``(n,)`` labels in {0, 1}.
        y_pred: ``(..., n)`` predictions in {0, 1}; leading axes (models, seeds, thresholds) are kept.
        sensitive_features: ``(n,)`` group labels, or several columns (DataFrame, 2-D array, dict or
            list of arrays) whose observed intersections become the groups.
        sample_weight: optional ``(n,)`` non-negative weights.
        beneficial_label: the label value of the beneficial outcome (see :func:`confusion_matrix`).

    Returns:
        :class:`GroupConfusionMatrices` with ``cms`` of shape ``(..., k, 4)`` (exact int64, or
        float64 with weights) and the ``k`` sorted group labels.

    Examples:
        >>> import ofijax
        >>> r = ofijax.group_confusion_matrices([1, 0, 1, 0], [1, 1, 0, 0], ["a", "a", "b", "b"])
        >>> r.groups
        ('a', 'b')
        >>> r.cms
        Array([[1, 0, 1, 0],
               [0, 1, 0, 1]], dtype=int64)
    """
    _check_beneficial(beneficial_label)
    a = v.align_pandas(
        y_true=y_true, y_pred=y_pred, sensitive_features=sensitive_features,
        sample_weight=sample_weight,
    )
    yt, yp = prepare_labels(a["y_true"], a["y_pred"])
    n = yt.shape[0]
    w = prepare_weights(a["sample_weight"], n)
    codes, groups, names = encode_groups(a["sensitive_features"], n)
    cms = _group_counts(yt, yp, codes, w, num_groups=len(groups))
    return GroupConfusionMatrices(_apply_beneficial(cms, beneficial_label), groups, names)


def _sweep_counts(y_true, scores, codes, weights, thresholds, *, num_groups) -> np.ndarray:
    """``(T, k, 4)`` counts at every threshold, on the host in NumPy (int64 / float64).

    Scores and thresholds are float64, so ``score ≥ threshold`` is decided exactly as NumPy
    decides it; each row is binned once by how many thresholds it clears.
    """
    t = thresholds.shape[0]
    order = np.argsort(thresholds, kind="stable")
    sorted_t = thresholds[order]
    # b_i = number of thresholds <= score_i: row i is predicted positive for sorted thresholds j < b_i.
    b = np.searchsorted(sorted_t, scores, side="right").astype(np.int64)
    lab = y_true.astype(np.int64)
    ids = (b * num_groups + codes.astype(np.int64)) * 2 + lab
    size = (t + 1) * num_groups * 2
    hist = np.bincount(ids, weights=weights, minlength=size)
    hist = hist.reshape(t + 1, num_groups, 2)
    # positives predicted at sorted threshold j: rows with b > j  (reverse cumulative sum).
    rev = np.cumsum(hist[::-1], axis=0)[::-1]  # rev[j] = sum_{b >= j}
    pred_pos = rev[1:]  # (t, k, 2): sum over b > j
    total = rev[0]  # (k, 2)
    tp = pred_pos[..., 1]
    fp = pred_pos[..., 0]
    fn = total[None, :, 1] - tp
    tn = total[None, :, 0] - fp
    cms_sorted = np.stack([tp, fn, fp, tn], axis=-1)
    out = np.empty_like(cms_sorted)
    out[order] = cms_sorted
    return out


def threshold_sweep(
    y_true: Any,
    scores: Any,
    sensitive_features: Any,
    thresholds: Any,
    *,
    sample_weight: Any = None,
    beneficial_label: int = 1,
) -> GroupConfusionMatrices:
    """Per-group confusion matrices at many thresholds, ``ŷ = 1[score ≥ threshold]``.

    Cost is O(n log T + T·k): each row is binned once by how many thresholds it clears, then a
    reverse cumulative sum gives every threshold's counts. No pass over the rows per threshold.
    Scores and thresholds are compared in float64 on the host, so the result equals NumPy's
    ``scores >= threshold`` exactly (a score 1e-9 below a threshold is below it; integer scores
    above 2²⁴ are not rounded), whatever ``jax_enable_x64`` says.

    Args:
        y_true: ``(n,)`` labels in {0, 1}.
        scores: ``(n,)`` real scores (higher = more likely the beneficial prediction).
        sensitive_features: group labels, as in :func:`group_confusion_matrices`.
        thresholds: ``(T,)`` thresholds, any order (the output follows it).
        sample_weight: optional ``(n,)`` non-negative weights.
        beneficial_label: the label value of the beneficial outcome.

    Returns:
        :class:`GroupConfusionMatrices` with ``cms`` of shape ``(T, k, 4)``: exact int64 counts
        (float64 with weights).

    Examples:
        >>> import ofijax
        >>> r = ofijax.threshold_sweep([1, 0, 1, 0], [0.9, 0.6, 0.4, 0.1], [0, 0, 1, 1], [0.5, 0.0])
        >>> r.cms[0].tolist()
        [[1, 0, 1, 0], [0, 1, 0, 1]]
        >>> r.cms[1].tolist()
        [[1, 0, 1, 0], [1, 0, 1, 0]]
    """
    _check_beneficial(beneficial_label)
    a = v.align_pandas(
        y_true=y_true, scores=scores, sensitive_features=sensitive_features,
        sample_weight=sample_weight,
    )
    yt = v.check_binary(a["y_true"], "y_true")
    if yt.ndim != 1:
        raise ValueError(f"y_true: must be 1-D (one label per row), got shape {yt.shape}.")
    s = v.as_numpy(a["scores"], "scores")
    if s.dtype.kind not in "biuf":
        raise ValueError(f"scores: must be numeric, got dtype {s.dtype}.")
    if s.ndim != 1:
        raise ValueError(f"scores: must be 1-D (one score per row), got shape {s.shape}.")
    v.check_finite(s, "scores")
    n = v.check_same_length(y_true=yt, scores=s)
    if n == 0:
        raise ValueError("y_true: is empty (n = 0); a confusion matrix needs at least one row.")
    th = v.as_numpy(thresholds, "thresholds")
    if th.ndim == 0:
        th = th.reshape(1)
    if th.ndim != 1 or th.dtype.kind not in "biuf":
        raise ValueError(
            f"thresholds: must be a 1-D numeric array, got shape {th.shape} and dtype {th.dtype}."
        )
    v.check_finite(th, "thresholds")
    if th.size == 0:
        raise ValueError("thresholds: is empty; pass at least one threshold.")
    w = prepare_weights(a["sample_weight"], n)
    codes, groups, names = encode_groups(a["sensitive_features"], n)
    cms = _sweep_counts(
        yt, s.astype(np.float64), codes, w, th.astype(np.float64), num_groups=len(groups)
    )
    return GroupConfusionMatrices(_apply_beneficial(_exact(cms), beneficial_label), groups, names)


def _counts_array(x: Any, name: str) -> Any:
    """Concrete counts as a NumPy int64 (integers, bools) or float64 array; tracers unchanged."""
    if v.is_tracer(x):
        return x
    if x is None:
        raise ValueError(f"{name}: must be numeric counts; got None.")
    arr = v.as_numpy(x, name)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}: must be numeric counts, got dtype {arr.dtype}.")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        raise ValueError(f"{name}: counts must be below 2**63; got {int(arr.max())}.")
    arr = arr.astype(np.int64 if arr.dtype.kind in "biu" else np.float64)
    v.check_finite(arr, name)
    if np.any(arr < 0):
        raise ValueError(f"{name}: counts must be non-negative; got a negative value.")
    return arr


def _out(c: Any) -> jax.Array:
    """Return a NumPy result exactly (int64/float64 JAX array); a traced result unchanged."""
    return _exact(c) if isinstance(c, np.ndarray) else c


def _stack(cells: list, axis: int = -1) -> Any:
    if all(isinstance(c, np.ndarray) for c in cells):
        return np.stack(cells, axis=axis)
    return jnp.stack([jnp.asarray(c) for c in cells], axis=axis)


def from_counts(*, tp: Any, fn: Any, fp: Any, tn: Any) -> jax.Array:
    """Build ``(..., 4)`` confusion matrices from named cells (broadcast together).

    Concrete cells give exact int64 (float64 for fractional counts) whatever
    ``jax_enable_x64`` says; traced cells (inside ``jit``) keep their traced dtype.

    Examples:
        >>> import ofijax
        >>> ofijax.from_counts(tp=1, fn=0, fp=0, tn=5)
        Array([1, 0, 0, 5], dtype=int64)
    """
    names = ("tp", "fn", "fp", "tn")
    cells = [_counts_array(c, name) for c, name in zip((tp, fn, fp, tn), names)]
    shapes = [np.shape(c) for c in cells]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        desc = ", ".join(f"{k} {sh}" for k, sh in zip(names, shapes))
        # Blame the cell without which the others broadcast; when several qualify, the first
        # cell is the reference (as for lengths) and the next one is blamed.
        candidates = []
        for i, k in enumerate(names):
            try:
                np.broadcast_shapes(*(o for j, o in enumerate(shapes) if j != i))
            except ValueError:
                continue
            candidates.append(k)
        later = [k for k in candidates if k != names[0]]
        bad = candidates[0] if len(candidates) == 1 else (later[0] if later else names[1])
        raise ValueError(
            f"{bad}: the cells' shapes do not broadcast together ({desc}); pass cells of one "
            "shape (or scalars)."
        ) from None
    if all(isinstance(c, np.ndarray) for c in cells):
        cells = list(np.broadcast_arrays(*cells))
        dtype = np.result_type(*cells)
        return _out(np.stack([c.astype(dtype) for c in cells], axis=-1))
    return jnp.stack(jnp.broadcast_arrays(*cells), axis=-1)


def from_sklearn(matrix: Any) -> jax.Array:
    """Convert scikit-learn's ``[[TN, FP], [FN, TP]]`` (any leading axes) to ``(..., 4)``.

    scikit-learn's ``confusion_matrix(y, ŷ, labels=[0, 1])`` puts true labels on rows and
    predictions on columns, negatives first. Reading it as TP, FN, FP, TN silently flips the sign
    of every OFI; this converter is the only safe route.

    Examples:
        >>> import ofijax
        >>> ofijax.from_sklearn([[1, 2], [1, 1]])  # tn=1, fp=2, fn=1, tp=1
        Array([1, 1, 2, 1], dtype=int64)
    """
    m = _counts_array(matrix, "matrix")
    if m.ndim < 2 or m.shape[-2:] != (2, 2):
        raise ValueError(
            f"matrix: must have shape (..., 2, 2) as scikit-learn's [[TN, FP], [FN, TP]]; got {m.shape}."
        )
    return _out(_stack([m[..., 1, 1], m[..., 1, 0], m[..., 0, 1], m[..., 0, 0]]))


def _check_cm_shape(c: Any) -> None:
    if c.ndim < 1 or c.shape[-1] != 4:
        raise ValueError(f"cm: last axis must have length 4 (TP, FN, FP, TN); got shape {c.shape}.")


def to_sklearn(cm: Any) -> jax.Array:
    """Convert ``(..., 4)`` (TP, FN, FP, TN) to scikit-learn's ``(..., 2, 2)`` ``[[TN, FP], [FN, TP]]``.

    Examples:
        >>> import ofijax
        >>> ofijax.to_sklearn([1, 1, 2, 1]).tolist()
        [[1, 2], [1, 1]]
    """
    c = _counts_array(cm, "cm")
    _check_cm_shape(c)
    row0 = _stack([c[..., TN], c[..., FP]])
    row1 = _stack([c[..., FN], c[..., TP]])
    return _out(_stack([row0, row1], axis=-2))


def flip(cm: Any) -> jax.Array:
    """Swap which label is beneficial: TP ↔ TN and FN ↔ FP.

    Use it for data whose label 1 is the harmful outcome (COMPAS: recidivist). Afterwards
    B' = −B of the original matrix; DI and TE change value, not just sign. Concrete counts come
    back exact (int64 / float64), traced ones in their traced dtype.

    Examples:
        >>> import ofijax
        >>> ofijax.flip([1, 2, 3, 4])
        Array([4, 3, 2, 1], dtype=int64)
    """
    c = _counts_array(cm, "cm")
    _check_cm_shape(c)
    return _out(c[..., ::-1].copy() if isinstance(c, np.ndarray) else c[..., ::-1])
