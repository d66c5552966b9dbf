"""Encode categorical attributes to integer codes and compress rows into occupied cells.

Runs once per call, in NumPy, outside ``jit``. Everything after it is arrays.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

__all__ = ["Encoded", "encode_data", "build_cells"]


class Encoded(NamedTuple):
    """Integer-coded attributes.

    Attributes:
      codes: ``(N, M)`` int32, ``codes[i, m] ∈ [0, V_m)``.
      columns: the M column names (DataFrame columns, or 0..M-1 for arrays).
      labels: per column, a NumPy array of the V_m observed values; ``labels[m][code]``.
    """

    codes: np.ndarray
    columns: list
    labels: list


def _encode_column(col: pd.Series, name: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        if col.isna().any():
            raise ValueError(
                f"data: column {name!r} has {int(col.isna().sum())} missing (NaN) value(s); "
                "drop those rows or map missing to an explicit category first."
            )
        observed = np.unique(col.cat.codes.to_numpy())
        lut = np.full(len(col.cat.categories), -1, dtype=np.int64)
        lut[observed] = np.arange(observed.size)
        codes = lut[col.cat.codes.to_numpy()]
        labels = np.asarray(col.cat.categories)[observed]
        return codes.astype(np.int32), labels
    kind = col.dtype.kind if isinstance(col.dtype, np.dtype) else None
    if kind == "f" or (kind is None and pd.api.types.is_float_dtype(col.dtype)):
        vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(vals).any():
            raise ValueError(
                f"data: column {name!r} has {int(np.isnan(vals).sum())} missing (NaN) value(s); "
                "drop those rows or map missing to an explicit category first."
            )
        if not np.all(np.isfinite(vals)) or np.any(vals != np.round(vals)):
            raise ValueError(
                f"data: column {name!r} holds non-integer floats, i.e. a continuous attribute; "
                "Bias Scan needs categorical attributes: bin it first (e.g. pandas.qcut into "
                "deciles) or cast it to int/str."
            )
    elif kind is None or kind == "O":
        if col.isna().any():
            raise ValueError(
                f"data: column {name!r} has {int(col.isna().sum())} missing (NaN/None) value(s); "
                "drop those rows or map missing to an explicit category first."
            )
        vals = col.to_numpy()
        floats = [v for v in vals[:1000] if isinstance(v, float | np.floating)]
        if floats and any(float(v) != round(float(v)) for v in floats):
            raise ValueError(
                f"data: column {name!r} holds non-integer floats, i.e. a continuous attribute; "
                "bin it first (e.g. pandas.qcut) or cast it to str."
            )
    elif kind not in "biuUSM":
        raise ValueError(
            f"data: column {name!r} has dtype {col.dtype}, which is not categorical; "
            "pass categorical, string, integer or boolean columns."
        )
    try:
        codes, uniques = pd.factorize(col, sort=True)
    except TypeError:  # mixed, unorderable labels: keep first-appearance order
        codes, uniques = pd.factorize(col, sort=False)
    return codes.astype(np.int32), np.asarray(uniques)


def encode_data(data: Any, value_labels: Any = None) -> Encoded:
    """Encode a DataFrame (or a 2-D array of codes/values) into ``(N, M)`` int32 codes.

    Only *observed* values get codes, in sorted order (categories order for ``category`` columns).
    A 2-D array is read column by column the same way; with ``value_labels`` (one sequence per
    column, ``value_labels[m][code]``) its entries must be integer codes indexing those labels.
    """
    if isinstance(data, pd.Series):
        data = data.to_frame()
    if isinstance(data, pd.DataFrame):
        frame = data
    else:
        arr = np.asarray(data)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(
                f"data: must be a DataFrame or a 2-D array (rows × attributes); got shape {arr.shape}."
            )
        frame = pd.DataFrame({m: arr[:, m] for m in range(arr.shape[1])})
    if frame.shape[1] == 0:
        raise ValueError("data: has no columns; pass at least one categorical attribute.")
    if frame.shape[0] == 0:
        raise ValueError("data: has no rows; pass at least one row.")
    if value_labels is not None and len(value_labels) != frame.shape[1]:
        raise ValueError(
            f"value_labels: must hold one label sequence per column ({frame.shape[1]}); "
            f"got {len(value_labels)}."
        )
    codes = np.empty(frame.shape, dtype=np.int32)
    labels = []
    for m, name in enumerate(frame.columns):
        col = frame[name]
        if value_labels is not None:
            lab = np.asarray(value_labels[m])
            raw = col.to_numpy()
            if raw.dtype.kind not in "iu" or raw.min() < 0 or raw.max() >= len(lab):
                raise ValueError(
                    f"data: column {name!r} must hold integer codes in [0, {len(lab)}) to index "
                    "value_labels; pass the raw values without value_labels otherwise."
                )
            observed = np.unique(raw)
            lut = np.full(len(lab), -1, dtype=np.int64)
            lut[observed] = np.arange(observed.size)
            codes[:, m] = lut[raw]
            labels.append(lab[observed])
            continue
        c, lab = _encode_column(col, name)
        codes[:, m] = c
        labels.append(lab)
    return Encoded(codes, list(frame.columns), labels)


def build_cells(codes: np.ndarray, n_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Occupied cells of a code table: ``(row_cell (N,), cell_codes (C, M), n_cells (C,))``.

    Uses a mixed-radix int64 key per row (re-densified with ``np.unique`` whenever the radix product
    would overflow) and a 1-D ``np.unique``; with a small key space a counting pass (bincount)
    replaces the sort. Cells are in lexicographic order of their codes.
    """
    n, m = codes.shape
    key = np.zeros(n, dtype=np.int64)
    space = 1
    for j in range(m):
        v = int(n_values[j])
        if space * v >= 2**62:
            _, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64).reshape(-1)
            space = int(key.max()) + 1
        key = key * v + codes[:, j]
        space *= v
    if space <= max(4 * n, 1 << 16):
        counts = np.bincount(key, minlength=space)
        occupied = np.flatnonzero(counts)
        lut = np.full(space, -1, dtype=np.int64)
        lut[occupied] = np.arange(occupied.size)
        row_cell = lut[key].astype(np.int32)
        n_cells = counts[occupied]
        first = np.zeros(occupied.size, dtype=np.int64)
        first[row_cell[::-1]] = np.arange(n - 1, -1, -1)  # any representative row per cell
    else:
        _, first, inv, n_cells = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        row_cell = inv.reshape(-1).astype(np.int32)
    cell_codes = codes[first]
    return row_cell, np.ascontiguousarray(cell_codes, dtype=np.int32), n_cells.astype(np.int64)
