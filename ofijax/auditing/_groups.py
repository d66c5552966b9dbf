r"""Group columns of an audit: refuse continuous or high-cardinality columns, or cut them into bins.

An audit compares *groups*. A column with many distinct values (age in years, an income, an id)
makes one "group" per value: dozens of tiny groups, thousands of pairs and no verdict worth
reading. :func:`bin_features` refuses such a column with a message that says how to proceed, or,
with ``bins``, cuts it into quantile bins (or at given edges) whose edges are reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax.scan import bin_codes, bin_labels

__all__ = ["MAX_GROUPS", "MAX_LEVELS", "bin_features", "check_group_count", "quantile_of_counts"]

#: Distinct values a group column may have before it must be binned (``max_levels``).
MAX_LEVELS = 20

#: Most groups (intersections) an audit takes: k(k − 1)/2 exact tests, one per pair.
MAX_GROUPS = 200


def _as_columns(features: Any) -> tuple[str, list[tuple[Any, Any]]]:
    """(kind, [(name, column)]) of the group input; kind says how to rebuild it."""
    if isinstance(features, pd.DataFrame):
        if features.shape[1] == 0:
            raise ValueError("sensitive_features: the DataFrame has no columns; pass at least one group column.")
        return "frame", [(c, features[c]) for c in features.columns]
    if isinstance(features, pd.Series):
        return "series", [(features.name, features)]
    if isinstance(features, dict):
        if not features:
            raise ValueError("sensitive_features: the dict has no columns; pass at least one group column.")
        return "dict", list(features.items())
    arr = np.asarray(features, dtype=object) if not isinstance(features, np.ndarray) else features
    if arr.ndim == 2:
        if arr.shape[1] == 0:
            raise ValueError("sensitive_features: the 2-D array has no columns; pass at least one group column.")
        return "array2d", [(j, arr[:, j]) for j in range(arr.shape[1])]
    return "array", [(None, arr)]


def _is_numeric(col: Any) -> bool:
    s = pd.Series(np.asarray(col)) if not isinstance(col, pd.Series) else col
    if pd.api.types.is_bool_dtype(s):
        return False
    if pd.api.types.is_numeric_dtype(s):
        return True
    try:  # object columns of plain numbers (e.g. from a list)
        return bool(len(s)) and pd.to_numeric(s, errors="coerce").notna().all()
    except (TypeError, ValueError):
        return False


def quantile_of_counts(values: Any, counts: Any, q: Any) -> np.ndarray:
    """``numpy.quantile(rows, q)`` (its default ``"linear"`` method) of the rows that ``values``
    stand for, ``counts[i]`` rows each, computed from the counts (the rows are never built).

    The same virtual index ``N q + (1 − q) − 1`` and the same interpolation as NumPy, so the result
    equals ``numpy.quantile(numpy.repeat(values, counts), q)`` bit for bit (tested): quantile bins
    of cell statistics (the stream and Spark engines) and of rows (the pandas engine) get the same
    edges.

    >>> quantile_of_counts([1.0, 2.0, 10.0], [3, 1, 2], [0.0, 0.5, 1.0]).tolist()
    [1.0, 1.5, 10.0]
    """
    x = np.asarray(values, dtype=np.float64)
    c = np.asarray(counts, dtype=np.int64)
    order = np.argsort(x, kind="stable")
    x, c = x[order], c[order]
    keep = c > 0
    x, c = x[keep], c[keep]
    ends = np.cumsum(c)  # rows 0..ends[i]-1 hold values up to x[i]
    n = int(ends[-1])
    qs = np.asarray(q, dtype=np.float64)
    vi = n * qs + (1 + qs * (1 - 1 - 1)) - 1  # numpy's _compute_virtual_index, alpha = beta = 1
    prev = np.floor(vi)
    nxt = prev + 1
    prev = np.clip(prev, 0, n - 1).astype(np.int64)
    nxt = np.clip(nxt, 0, n - 1).astype(np.int64)
    gamma = vi - np.floor(vi)
    a = x[np.searchsorted(ends, prev, side="right")]
    b = x[np.searchsorted(ends, nxt, side="right")]
    diff = b - a
    out = a + diff * gamma
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), out)


def _edges_for(values: np.ndarray, spec: Any, name: str, counts: Any = None) -> np.ndarray:
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        q = int(spec)
        if q < 2:
            raise ValueError(f"bins: needs at least 2 bins for {name}; got {q}.")
        qs = np.linspace(0.0, 1.0, q + 1)
        edges = np.unique(np.quantile(values, qs) if counts is None
                          else quantile_of_counts(values, counts, qs))
        if edges.size < 2:
            raise ValueError(f"bins: column {name} is constant; it cannot be cut into bins.")
        return edges
    edges = np.asarray(spec, dtype=np.float64).reshape(-1)
    if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError(f"bins: the edges for {name} must be ≥ 2 increasing finite numbers; got {spec!r}.")
    if values.min() < edges[0] or values.max() > edges[-1]:
        raise ValueError(
            f"bins: values of {name} lie outside the edges [{edges[0]:g}, {edges[-1]:g}] "
            f"(min {values.min():g}, max {values.max():g}); widen the first or last edge."
        )
    return edges


def _cut(col: Any, edges: np.ndarray) -> Any:
    """The bins of ``col`` under the one binning rule of ofijax (:data:`ofijax.scan.BIN_RULE`:
    ``(e_j, e_{j+1}]``, the first bin ``[e_0, e_1]``; the scans' ``bins=`` cut the same way),
    labelled ``"1: [17, 35]"``, ``"2: (35, 55]"``, ... (the number keeps the bins in order when
    labels are sorted; distinct edges get distinct labels)."""
    m = edges.size - 1
    w = len(str(m))
    labels = [f"{i + 1:0{w}d}: {text}" for i, text in enumerate(bin_labels(edges))]
    num = pd.to_numeric(pd.Series(np.asarray(col)), errors="coerce").to_numpy(dtype=np.float64)
    codes = bin_codes(num, edges)
    out = np.asarray([labels[c] if c >= 0 else None for c in codes.tolist()], dtype=object)
    if isinstance(col, pd.Series):
        return pd.Series(out, index=col.index, name=col.name)
    return out


def bin_features(features: Any, *, bins: Any = None, max_levels: int = MAX_LEVELS,
                 counts: Any = None) -> tuple[Any, dict]:
    """Check the group columns; cut continuous or high-cardinality numeric ones into bins.

    A column with more than ``max_levels`` distinct values is refused unless ``bins`` covers it:
    ``bins=q`` (int) cuts every such numeric column into ``q`` quantile bins (edges = the
    0, 1/q, …, 1 quantiles, duplicates dropped; intervals closed on the right, the first also on
    the left); ``bins={"age": 5, "income": [0, 2e4, 5e4, 1e6]}`` names columns and gives a count
    or the edges. A listed column is binned whatever its number of values.

    Args:
        features: the ``sensitive_features`` of :func:`ofijax.audit` (array, Series, DataFrame,
            dict or 2-D array).
        bins: ``None``, an int, or a dict column → int or edges.
        max_levels: most distinct values of an unbinned column.
        counts: optional ``(n,)`` integer rows each entry stands for (cell statistics: one entry
            per distinct value combination): quantile bins are then those of the rows
            (:func:`quantile_of_counts`), so counts give the bins their rows would.

    Returns:
        ``(features, edges)``: the features (same container and index; binned columns become
        labels such as ``"2: (28, 37]"``, numbered so that they sort in order) and ``{column: [edges]}`` for the binned columns.

    Raises:
        ValueError: naming ``sensitive_features`` (a column with too many values, and how to bin
            it) or ``bins``.

    Examples:
        >>> import numpy as np
        >>> from ofijax.auditing import bin_features
        >>> ages = np.arange(18, 78)
        >>> binned, edges = bin_features(ages, bins=3)
        >>> edges
        {'group': [18.0, 37.666666666666664, 57.33333333333333, 77.0]}
        >>> sorted(set(binned))
        ['1: [18, 37.6667]', '2: (37.6667, 57.3333]', '3: (57.3333, 77]']
        >>> bin_features(ages)
        Traceback (most recent call last):
        ...
        ValueError: sensitive_features: column 'group' has 60 distinct values (more than max_levels = 20), ...
    """
    ml = max_levels
    if isinstance(ml, bool) or not isinstance(ml, (int, np.integer)) or ml < 2:
        raise ValueError(f"max_levels: must be an integer ≥ 2; got {max_levels!r}.")
    if bins is not None and not isinstance(bins, dict) and (
        isinstance(bins, bool) or not isinstance(bins, (int, np.integer))
    ):
        raise TypeError(f"bins: must be None, an int or a dict column -> int or edges; got {type(bins).__name__}.")
    v.check_unique_columns(features, "sensitive_features")
    kind, cols = _as_columns(features)
    if isinstance(bins, dict):
        known = {("group" if n is None else n) for n, _ in cols}
        unknown = [c for c in bins if c not in known]
        if unknown:
            raise ValueError(f"bins: column {unknown[0]!r} is not a group column; group columns: {sorted(map(str, known))}.")
    edges_out: dict = {}
    new_cols = []
    changed = False
    for name, col in cols:
        label = "group" if name is None else name
        values = pd.Series(np.asarray(col, dtype=object) if not isinstance(col, pd.Series) else col)
        nunique = int(values.nunique(dropna=True))
        spec = bins.get(label) if isinstance(bins, dict) else (bins if nunique > ml else None)
        if spec is None:
            if nunique > ml:
                numeric = _is_numeric(col)
                how = (
                    f"pass bins={{{label!r}: 5}} (quantile bins; CLI: --bins 5) or explicit edges"
                    if numeric else
                    "merge rare values into fewer categories first"
                )
                raise ValueError(
                    f"sensitive_features: column {label!r} has {nunique} distinct values (more than "
                    f"max_levels = {ml}), which looks continuous or high-cardinality: one group per value "
                    f"gives {nunique * (nunique - 1) // 2} pairs of tiny groups; {how}, or raise max_levels "
                    "to audit every value."
                )
            new_cols.append((name, col))
            continue
        if not _is_numeric(col):
            raise ValueError(f"bins: column {label!r} is not numeric; only numeric columns can be binned.")
        num = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        fin = np.isfinite(num)
        finite = num[fin]
        if finite.size == 0:
            raise ValueError(f"bins: column {label!r} has no finite values to bin.")
        e = _edges_for(finite, spec, repr(label),
                       None if counts is None else np.asarray(counts, np.int64)[fin])
        edges_out[str(label)] = [float(x) for x in e]
        new_cols.append((name, _cut(col, e)))
        changed = True
    if not changed:
        return features, edges_out
    if kind == "frame":
        out = features.copy()
        for name, col in new_cols:
            out[name] = col
        return out, edges_out
    if kind == "series":
        return new_cols[0][1], edges_out
    if kind == "dict":
        return dict(new_cols), edges_out
    if kind == "array2d":
        return np.column_stack([np.asarray(c, dtype=object) for _, c in new_cols]), edges_out
    return new_cols[0][1], edges_out


def check_group_count(k: int, limit: int = MAX_GROUPS) -> None:
    """Refuse more than ``limit`` groups, before any pairwise work (k(k − 1)/2 tests).

    >>> from ofijax.auditing.reporting import check_group_count
    >>> check_group_count(10)
    >>> check_group_count(10_000)
    Traceback (most recent call last):
    ...
    ValueError: sensitive_features: 10000 groups (49,995,000 pairs) exceed the audit's limit of 200 groups ...
    """
    if k > limit:
        raise ValueError(
            f"sensitive_features: {k} groups ({k * (k - 1) // 2:,} pairs) exceed the audit's limit of "
            f"{limit} groups (one exact test per pair); bin or merge the group columns (bins=...), or "
            "audit a subset of the groups."
        )
