"""Encode categorical attributes to integer codes and compress rows into occupied cells.

Owns the scans' reading of attribute tables: duplicate and high-cardinality columns refused,
the one binning rule of ofijax (:data:`BIN_RULE`, :func:`bin_codes`, :func:`bin_labels`,
``bins=``), value codes and labels (:class:`Encoded`), and the compression of rows into occupied
cells (:func:`build_cells`). Runs once per call, in NumPy, outside ``jit``; everything after it
is arrays.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._validation import as_pandas

__all__ = [
    "Encoded",
    "encode_data",
    "build_cells",
    "stable_argsort",
    "to_frame",
    "check_unique_columns",
    "bin_columns",
    "bin_codes",
    "bin_labels",
    "BIN_RULE",
    "DEFAULT_MAX_VALUES",
]

#: A column with more distinct values than this is refused unless binned (``bins=``) or the
#: limit is raised (``max_values=``): scanning 73 ages as 73 unrelated categories finds value
#: sets like {32, 34, 36, ...} that nobody can act on, and the search cost grows with the values.
DEFAULT_MAX_VALUES = 64


class Encoded(NamedTuple):
    """Integer-coded attributes.

    Attributes:
      codes: ``(N, M)`` int32, ``codes[i, m] ∈ [0, V_m)``.
      columns: the M column names (DataFrame columns, or 0..M-1 for arrays).
      labels: per column, a NumPy array of the V_m observed values; ``labels[m][code]``.
      edges: ``{column: tuple of bin edges}`` for the columns binned by ``bins=`` (else empty).
    """

    codes: np.ndarray
    columns: list
    labels: list
    edges: dict | None = None


def _small_int(col: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """``(codes, observed values)`` of a NumPy integer/bool column whose range is small (≤ 2^16 or
    ≤ 4 rows per value) by one counting pass, as ``pd.factorize(col, sort=True)`` gives them but
    ~4× faster; None for any other column."""
    if not isinstance(col.dtype, np.dtype) or col.dtype.kind not in "biu" or len(col) == 0:
        return None
    vals = col.to_numpy()
    if vals.dtype.kind == "b":
        vals = vals.view(np.uint8)
    lo, hi = int(vals.min()), int(vals.max())
    if hi - lo > max(1 << 16, 4 * vals.size) or lo < -(1 << 62) or hi > (1 << 62):
        return None
    shifted = vals.astype(np.intp) - lo  # in intp: no wrap-around of narrow types
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    observed = np.flatnonzero(present) + lo
    labels = observed.astype(col.dtype) if col.dtype.kind != "b" else observed.astype(bool)
    if present.all():  # every value in [lo, hi] occurs: the codes are the shifted values
        return shifted.astype(np.int32), labels
    lut = np.cumsum(present, dtype=np.int32) - 1
    return lut[shifted], labels


def _distinct_at_most(col: pd.Series, limit: int) -> int:
    """The number of distinct values of ``col``, or a number ≤ ``limit`` when it has at most that
    many (an integer column whose range spans ≤ ``limit`` values is not counted)."""
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iu" and len(col):
        vals = col.to_numpy()
        if int(vals.max()) - int(vals.min()) < limit:
            return 0
    return int(col.nunique(dropna=True))


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
                "the scans need categorical attributes: pass bins=5 (quantile bins, edges shown "
                "in the result) or bin it yourself (e.g. pandas.qcut) or cast it to int/str."
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
                "pass bins=5 (quantile bins) or bin it yourself (e.g. pandas.qcut) or cast it to str."
            )
    elif kind not in "biuUSM":
        raise ValueError(
            f"data: column {name!r} has dtype {col.dtype}, which is not categorical; "
            "pass categorical, string, integer or boolean columns."
        )
    fast = _small_int(col)
    if fast is not None:
        return fast
    try:
        codes, uniques = pd.factorize(col, sort=True)
    except TypeError:  # mixed, unorderable labels: keep first-appearance order
        codes, uniques = pd.factorize(col, sort=False)
    return codes.astype(np.int32), np.asarray(uniques)


def check_unique_columns(frame: pd.DataFrame, name: str = "data") -> None:
    """Refuse a DataFrame whose column names repeat (``frame[c]`` would be a DataFrame and a
    subgroup ``{c: values}`` ambiguous): one ``ValueError`` naming the duplicated names."""
    cols = frame.columns
    if not cols.is_unique:
        dup = list(dict.fromkeys(cols[cols.duplicated()].tolist()))
        raise ValueError(
            f"{name}: duplicate column name(s) {dup!r}; every attribute needs its own name "
            "(a subgroup is written {column: values}). Rename or drop the repeated columns, "
            "e.g. data.loc[:, ~data.columns.duplicated()]."
        )


def to_frame(data: Any) -> pd.DataFrame:
    """``data`` as a DataFrame: a Series becomes one column, a 1-D/2-D array columns ``0..M-1``.

    polars and pyarrow tables/columns are converted to pandas first (:func:`as_pandas`)."""
    data = as_pandas(data, "data")
    if isinstance(data, pd.Series):
        return data.to_frame()
    if isinstance(data, pd.DataFrame):
        check_unique_columns(data)
        return data
    if data is None:
        raise ValueError("data: required; pass a DataFrame (or 2-D array) of attribute columns.")
    arr = np.asarray(data)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(
            f"data: must be a DataFrame or a 2-D array (rows × attributes); got shape {arr.shape}."
        )
    return pd.DataFrame({m: arr[:, m] for m in range(arr.shape[1])})


def _is_numeric(col: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype)
            and not isinstance(col.dtype, pd.CategoricalDtype))


#: The one binning rule of ofijax (scans' ``bins=``, :func:`ofijax.auditing.bin_features`, the
#: CLI's ``--bins`` on every engine): bins closed on the right, ``(e_j, e_{j+1}]``, the first also
#: closed on the left, ``[e_0, e_1]`` — pandas.cut's ``right=True, include_lowest=True``. A value on
#: an inner edge belongs to the lower bin.
BIN_RULE = "(e_j, e_j+1], the first bin [e_0, e_1]"


def bin_codes(values, edges) -> np.ndarray:
    """The bin of each value under :data:`BIN_RULE`: ``j`` with ``e_j < x ≤ e_{j+1}`` (``x = e_0``:
    bin 0); ``-1`` for a value outside ``[e_0, e_K]`` or NaN. Edges: increasing (a repeated
    single edge ``[e, e]``: one bin holding ``e``).

    >>> bin_codes([18, 25, 26, 40, 60], [18, 25, 40, 60]).tolist()
    [0, 0, 1, 1, 2]
    """
    x = np.asarray(values, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    codes = np.searchsorted(e[1:-1], x, side="left").astype(np.int64)
    codes[~((x >= e[0]) & (x <= e[-1]))] = -1
    return codes


def _edge_texts(edges) -> list:
    """The edges as short texts, distinct for distinct edges: 6 significant digits, more where
    two edges would print alike (up to the 17 of a float64, which tell any two apart)."""
    e = np.asarray(edges, dtype=np.float64)
    distinct = np.unique(e).size
    for digits in range(6, 18):
        texts = [f"{x:.{digits}g}" for x in e]
        if len(set(texts)) == distinct:
            return texts
    return [repr(float(x)) for x in e]


def bin_labels(edges) -> list:
    """Labels of the bins of ``edges`` under :data:`BIN_RULE`: ``"[18, 25]"``, ``"(25, 40]"``, ...;
    distinct edges always get distinct labels (more digits where 6 print alike).

    >>> bin_labels([18, 25, 40])
    ['[18, 25]', '(25, 40]']
    >>> bin_labels([1, 1.0000005, 1.000001])
    ['[1, 1.0000005]', '(1.0000005, 1.000001]']
    """
    t = _edge_texts(edges)
    return [("[" if j == 0 else "(") + f"{t[j]}, {t[j + 1]}]" for j in range(len(t) - 1)]


def _quantile_bins(col: pd.Series, name: Any, spec: Any) -> tuple[pd.Series, tuple]:
    vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
    if np.isnan(vals).any() or not np.all(np.isfinite(vals)):
        raise ValueError(
            f"data: column {name!r} has missing or infinite values; drop or impute them before "
            "binning."
        )
    if isinstance(spec, int | np.integer) and not isinstance(spec, bool):
        k = int(spec)
        if k < 2:
            raise ValueError(f"bins: must be an integer ≥ 2 (number of quantile bins); got {k}.")
        edges = np.unique(np.quantile(vals, np.linspace(0.0, 1.0, k + 1)))
    else:
        try:
            edges = np.asarray(spec, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"bins: for column {name!r} pass an integer (quantile bins) or increasing edges; "
                f"got {spec!r}."
            ) from exc
        if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError(
                f"bins: edges for column {name!r} must be ≥ 2 finite, strictly increasing numbers; "
                f"got {spec!r}."
            )
        if vals.min() < edges[0] or vals.max() > edges[-1]:
            raise ValueError(
                f"bins: edges for column {name!r} must cover its range [{vals.min():g}, "
                f"{vals.max():g}]; got [{edges[0]:g}, {edges[-1]:g}]."
            )
    if edges.size < 2:  # a constant column
        edges = np.array([edges[0], edges[0]])
    codes = bin_codes(vals, edges)  # the one rule: (e_j, e_{j+1}], the first bin [e_0, e_1]
    labels = bin_labels(edges)
    cat = pd.Categorical.from_codes(codes, categories=pd.Index(labels), ordered=True)
    return pd.Series(cat, index=col.index, name=col.name), tuple(float(e) for e in edges)


def bin_columns(frame: pd.DataFrame, bins: Any = None,
                max_values: int | None = DEFAULT_MAX_VALUES) -> tuple[pd.DataFrame, dict]:
    """Bin continuous / high-cardinality columns, or refuse them with a clear message.

    A column needs binning when it holds non-integer floats or more than ``max_values`` distinct
    values (``None``: no limit). ``bins`` is ``None`` (refuse such columns), an int k ≥ 2 (quantile
    bins ``(e_j, e_{j+1}]``, the first ``[e_0, e_1]`` (:data:`BIN_RULE`), at the k-quantiles,
    duplicate edges merged, for every numeric column that needs binning) or a dict ``{column: k or increasing edges}`` (bin exactly those columns;
    the others follow the rule). Returns ``(frame, {column: edges})``.

    Examples:
      >>> import pandas as pd
      >>> f, edges = bin_columns(pd.DataFrame({"age": [18, 20, 30, 40, 50, 60, 70, 80]}), {"age": 2})
      >>> f["age"].tolist(), edges
      (['[18, 45]', '[18, 45]', '[18, 45]', '[18, 45]', '(45, 80]', '(45, 80]', '(45, 80]', '(45, 80]'], {'age': (18.0, 45.0, 80.0)})
    """
    if max_values is not None and (isinstance(max_values, bool) or not isinstance(
            max_values, int | np.integer) or max_values < 2):
        raise ValueError(f"max_values: must be an integer ≥ 2 or None; got {max_values!r}.")
    explicit: dict = {}
    default_k = None
    if bins is None:
        pass
    elif isinstance(bins, dict):
        unknown = [c for c in bins if c not in frame.columns]
        if unknown:
            raise ValueError(
                f"bins: unknown column(s) {unknown!r}; columns are {list(frame.columns)!r}."
            )
        explicit = dict(bins)
    elif isinstance(bins, int | np.integer) and not isinstance(bins, bool):
        if bins < 2:
            raise ValueError(f"bins: must be an integer ≥ 2 (number of quantile bins); got {bins}.")
        default_k = int(bins)
    else:
        raise ValueError(
            f"bins: must be None, an integer ≥ 2 (quantile bins) or a dict {{column: bins}}; "
            f"got {bins!r}."
        )
    out, edges = {}, {}
    for name in frame.columns:
        col = frame[name]
        if name in explicit:
            if not _is_numeric(col):
                raise ValueError(
                    f"bins: column {name!r} is not numeric (dtype {col.dtype}); only numeric "
                    "columns can be binned. Group its values yourself."
                )
            out[name], edges[name] = _quantile_bins(col, name, explicit[name])
            continue
        needs, why = False, ""
        if _is_numeric(col) and pd.api.types.is_float_dtype(col.dtype):
            v = col.to_numpy(dtype=np.float64, na_value=np.nan)
            fin = v[np.isfinite(v)]
            if np.any(fin != np.round(fin)):
                needs, why = True, "holds non-integer floats (a continuous attribute)"
        if not needs and max_values is not None and not isinstance(col.dtype, pd.CategoricalDtype):
            try:
                distinct = _distinct_at_most(col, max_values)
            except TypeError:  # unhashable values: left to the encoder
                distinct = 0
            if distinct > max_values:
                needs, why = True, (f"has {distinct} distinct values (more than "
                                    f"max_values={max_values})")
        if needs and default_k is not None and _is_numeric(col):
            out[name], edges[name] = _quantile_bins(col, name, default_k)
            continue
        if needs:
            fix = ("pass bins=5 (quantile bins; the edges are shown in the result's `bins`), "
                   "bin it yourself (e.g. pandas.qcut) or raise max_values"
                   if _is_numeric(col) else
                   "group its values into fewer categories or raise max_values")
            raise ValueError(
                f"data: column {name!r} {why}; a subgroup scan treats every value as its own "
                f"category. To scan it, {fix}."
            )
        out[name] = col
    if not edges:
        return frame, {}
    return pd.DataFrame(out, index=frame.index), edges


def encode_data(data: Any, value_labels: Any = None, bins: Any = None,
                max_values: int | None = DEFAULT_MAX_VALUES) -> Encoded:
    """Encode a DataFrame (or a 2-D array of codes/values) into ``(N, M)`` int32 codes.

    Only *observed* values get codes, in sorted order (categories order for ``category`` columns).
    A 2-D array is read column by column the same way; with ``value_labels`` (one sequence per
    column, ``value_labels[m][code]``) its entries must be integer codes indexing those labels.
    Continuous / high-cardinality columns are binned or refused by :func:`bin_columns`.
    """
    frame = to_frame(data)
    if frame.shape[1] == 0:
        raise ValueError("data: has no columns; pass at least one categorical attribute.")
    if frame.shape[0] == 0:
        raise ValueError("data: has no rows; pass at least one row.")
    edges: dict | None = None
    if value_labels is not None:
        if len(value_labels) != frame.shape[1]:
            raise ValueError(
                f"value_labels: must hold one label sequence per column ({frame.shape[1]}); "
                f"got {len(value_labels)}."
            )
    else:
        frame, edges = bin_columns(frame, bins, max_values)
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
    return Encoded(codes, list(frame.columns), labels, edges)


def stable_argsort(x: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative ints < 2^32 by 16-bit LSD radix passes (NumPy's radix sort)."""
    if x.size == 0 or int(x.max()) < (1 << 16):
        return np.argsort(x.astype(np.uint16), kind="stable")
    o1 = np.argsort((x & 0xFFFF).astype(np.uint16), kind="stable")
    o2 = np.argsort((x[o1] >> 16).astype(np.uint16), kind="stable")
    return o1[o2]


def build_cells(codes: np.ndarray, n_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Occupied cells of a code table: ``(row_cell (N,), cell_codes (C, M), n_cells (C,))``.

    Uses a mixed-radix int64 key per row (re-densified with ``np.unique`` whenever the radix product
    would overflow) and a 1-D sort: a counting pass (bincount) for a small key space, a stable
    radix argsort (:func:`stable_argsort`) for keys below 2^32, else ``np.unique``. Cells are in
    lexicographic order of their codes.
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
    elif n and space <= 1 << 32:  # a stable radix argsort (two 16-bit passes; see notes/scans.md)
        order = stable_argsort(key)
        sk = key[order]
        start = np.empty(n, bool)
        start[0] = True
        np.not_equal(sk[1:], sk[:-1], out=start[1:])
        row_cell = np.empty(n, np.int32)
        row_cell[order] = np.cumsum(start, dtype=np.int32) - 1
        starts = np.flatnonzero(start)
        first = order[starts]  # the first row of each cell (stable)
        n_cells = np.diff(np.append(starts, n))
    else:
        _, first, inv, n_cells = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        row_cell = inv.reshape(-1).astype(np.int32)
    cell_codes = np.take(codes, first, axis=0)  # a row gather, faster than codes[first]
    return row_cell, np.ascontiguousarray(cell_codes, dtype=np.int32), n_cells.astype(np.int64)
