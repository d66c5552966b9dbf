"""The rows an error-rate scan reads: FPR-/TPR-/IJDI-Scan's input checks and one side's data.

Owns the validation and preparation shared by :func:`~ofijax.scan.fpr_scan`,
:func:`~ofijax.scan.tpr_scan` and :func:`~ofijax.scan.ijdi_scan`: pandas alignment, labels in
the harm orientation (1 = harmful) the engine works in, predictions turned into decisions by the
one threshold rule (:func:`recommendations`), missing attribute values refused, ``bins=`` applied,
and the scanned class's rows encoded into cells (:class:`Side`); :func:`total_rows` maps a
subgroup back to the rows of both classes.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from .._validation import (
    align_pandas,
    as_numpy,
    check_binary,
    check_choice,
    check_finite,
    check_probabilities,
)
from ._encode import Encoded, bin_columns, encode_data, to_frame

__all__ = ["Side", "recommendations", "check_missing", "prepare_side", "total_rows"]


class Side(NamedTuple):
    rows: np.ndarray  # indices of the side's rows in the input
    enc: Encoded
    y: np.ndarray  # scan outcome: the harmful prediction on the side (float64 0/1)
    p: np.ndarray | None  # base-rate probabilities of the harmful outcome on the side
    n: int  # total input rows
    frame: pd.DataFrame  # all rows' attributes (binned)
    value_labels: object
    side: str
    beneficial_label: int
    note: str | None = None  # the threshold applied to y_pred, in words (None: 0/1 as given)


def recommendations(y_pred, threshold, threshold_rule, n, fn="fpr_scan", stacklevel=5):
    """``(decisions (n,) float64 0/1, note)``: ``y_pred`` as binary decisions, and the words the
    result's description records about the threshold applied (``None`` when none was needed).

    The one rule of ofijax: predictions that are not all 0/1 (scores, probabilities) become
    decisions only through a threshold; with ``threshold=None`` 0.5 is applied with a
    ``UserWarning`` (pass ``threshold=`` to choose it and silence the warning)."""
    check_choice(threshold_rule, "threshold_rule", ("ge", "gt"))
    s = as_numpy(y_pred, "y_pred")
    if s.dtype == bool:
        s = s.astype(np.float64)
    if s.dtype.kind in "US":  # text '0'/'1' (or numbers) as NumPy strings: the rule of object text
        try:
            s = s.astype(np.float64)
        except ValueError:
            pass
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
    binary = bool(np.all((s == 0) | (s == 1)))
    default = threshold is None
    if default:
        if binary:
            return s, None
        threshold = 0.5
    t = as_numpy(threshold, "threshold")
    if t.dtype.kind not in "iuf":
        raise ValueError(f"threshold: must be a number or one number per row; got {threshold!r}.")
    t = t.astype(np.float64)
    check_finite(t, "threshold")
    if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != n):
        raise ValueError(
            f"threshold: must be a scalar or one value per row ({n}); got shape {t.shape}."
        )
    out = (s >= t if threshold_rule == "ge" else s > t).astype(np.float64)
    if binary and np.array_equal(out, s):  # 0/1 predictions pass unchanged: nothing to record
        return out, None
    op = "≥" if threshold_rule == "ge" else ">"
    at = "per-row thresholds" if t.ndim == 1 else f"{float(t):g}"
    if default:
        warnings.warn(
            f"{fn}: y_pred holds values other than 0/1 (scores or probabilities), so they were "
            f"turned into decisions at the threshold 0.5 (y_pred {op} 0.5 → 1), the default; the "
            "result's description records it. Pass threshold= (e.g. threshold=0.5) to choose "
            "the threshold and silence this warning, or pass 0/1 decisions.",
            UserWarning, stacklevel=stacklevel)
        return out, f"predictions thresholded at 0.5 (default; y_pred {op} 0.5 → 1)"
    return out, f"predictions thresholded at {at} (given; y_pred {op} threshold → 1)"


def check_missing(frame: pd.DataFrame, rows: np.ndarray, side: str) -> None:
    """Refuse missing attribute values anywhere in ``frame`` (a result's ``total_size`` counts
    the rows of both classes), saying how many there are and how many the scanned side holds."""
    for name in frame.columns:
        na = np.asarray(frame[name].isna(), bool)
        total = int(na.sum())
        if total:
            used = int(na[rows].sum())
            raise ValueError(
                f"data: column {name!r} has {total} missing (NaN/None) value"
                f"{'s' if total > 1 else ''} ({used} among the {rows.size} rows this scan uses, "
                f"side={side!r}); drop those rows or map missing to an explicit category first."
            )


def prepare_side(data, y_true, y_pred, p_true, side, threshold, threshold_rule, value_labels,
                  beneficial_label, bins, max_values, fn="fpr_scan", stacklevel=4):
    check_choice(side, "side", ("negative", "positive"))
    # pandas arguments aligned on their index (same labels in another order: reordered to the
    # first pandas argument's rows) or refused, never matched by position
    aligned = align_pandas(data=data, y_true=y_true, y_pred=y_pred, p_true=p_true,
                           threshold=threshold)
    data, y_true, y_pred, p_true, threshold = aligned.values()
    frame = to_frame(data)
    n = frame.shape[0]
    y = check_binary(y_true, "y_true")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(
            f"y_true: must be 1-D with one label per row of data ({n}); got shape {y.shape}."
        )
    yhat, note = recommendations(y_pred, threshold, threshold_rule, n, fn, stacklevel + 1)
    p = None
    if p_true is not None:
        p = check_probabilities(p_true, "p_true")
        if p.ndim != 1 or p.shape[0] != n:
            raise ValueError(
                f"p_true: must be 1-D with one probability per row of data ({n}); "
                f"got shape {p.shape}."
            )
    if beneficial_label == 1:  # the engine works in the harm orientation (1 = harmful)
        y, yhat = 1 - y, 1.0 - yhat
        p = None if p is None else 1.0 - p
    label = 0 if side == "negative" else 1
    rows = np.flatnonzero(y == label)
    if value_labels is None and frame.shape[1]:
        check_missing(frame, rows, side)
    edges: dict = {}
    if value_labels is None and frame.shape[1] and n:
        frame, edges = bin_columns(frame, bins, max_values)
    if rows.size == 0:
        true = beneficial_label if side == "negative" else 1 - beneficial_label
        raise ValueError(
            f"side: side={side!r} scans the rows whose true outcome is "
            f"{'beneficial' if side == 'negative' else 'harmful'} (y_true == {true}), and there "
            "are none; scan the other side or check the labels and beneficial_label."
        )
    enc = encode_data(frame.iloc[rows].reset_index(drop=True), value_labels, max_values=None)
    enc = enc._replace(edges=edges)
    return Side(rows, enc, yhat[rows], None if p is None else p[rows], n, frame, value_labels,
                 side, beneficial_label, note)


def total_rows(side: Side, subset: dict) -> np.ndarray:
    """Rows of the whole input (both classes) in the subgroup ``subset``."""
    out = np.ones(side.n, bool)
    for col, vals in subset.items():
        column = side.frame[col]
        if side.value_labels is not None:
            m = list(side.frame.columns).index(col)
            lab = np.asarray(side.value_labels[m], dtype=object)
            column = pd.Series(lab[column.to_numpy()])
        out &= np.asarray(column.isin(list(vals)), bool)
    return out
