"""Statistics computed inside Apache Spark (optional extra ``ofijax[spark]``).

``from_spark`` runs one ``groupBy(group, attrs, label, prediction).count()`` on the cluster; only
the table of distinct combinations (at most a few per occupied cell) travels to the driver, where
the checks, the exact tests, the verdicts and the scans' search run. The checks read that small
table: a null/NaN group or attribute value or a label outside {0, 1} anywhere in the data is an
error naming the column and the offending value (Spark rows have no order, so no row number).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._frames import COUNT
from ._stats import Statistics, from_fine

#: Text a CSV label or prediction may hold for 1 and 0 besides the digits (pyarrow's defaults).
_TRUE = ("True", "TRUE", "true")
_FALSE = ("False", "FALSE", "false")

__all__ = ["from_spark"]


def from_spark(
    df: Any,
    *,
    label: str,
    pred: str,
    group: Any = None,
    attrs: Any = None,
    beneficial_label: int = 1,
    as_strings: bool = False,
    na_values: Any = None,
) -> Statistics:
    """Group counts and cell statistics of a Spark DataFrame, aggregated in Spark.

    Args:
      df: a ``pyspark.sql.DataFrame``.
      label, pred, group, attrs, beneficial_label: as in :func:`ofijax.stats.collect`.
      as_strings: cast the group and attribute columns to strings in Spark (integers as
        ``"1"``; floats with an integral value as ``"1"``, as Arrow writes them, so the labels
        equal :func:`~ofijax.stats.collect`'s with ``as_strings=True``).
      na_values: strings of the group and attribute columns that mean missing (besides null and
        NaN), as in :func:`~ofijax.stats.collect`.

    Label and prediction columns may be numbers, booleans or the text of a number (a CSV file
    read without schema inference): every value must equal 0 or 1.

    Returns:
      :class:`~ofijax.stats.Statistics` (the same as ``collect`` on the same rows).
    """
    try:
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F
    except ImportError as exc:  # pragma: no cover - optional extra
        raise ImportError(
            "from_spark needs pyspark: pip install 'ofijax[spark]'.") from exc
    if not isinstance(df, DataFrame):
        raise TypeError(f"df: must be a pyspark.sql.DataFrame; got {type(df).__name__}.")
    group_l = [group] if isinstance(group, str) else (list(group) if group is not None else [])
    attrs_l = [attrs] if isinstance(attrs, str) else (list(attrs) if attrs is not None else [])
    if not group_l and not attrs_l:
        raise ValueError("group: give the group column(s), the attribute columns (attrs), or both.")
    keys = list(dict.fromkeys(group_l + attrs_l + [label, pred]))
    missing = [c for c in keys if c not in df.columns]
    if missing:
        raise ValueError(
            f"data: the Spark DataFrame has no column {missing[0]!r} (columns: "
            f"{', '.join(df.columns[:30])}).")
    from ._stream import na_value_tuple

    na = na_value_tuple(na_values)
    dtypes = dict(df.dtypes)
    cols = []
    for c in keys:
        col = F.col(c)
        t = dtypes[c]
        if c in (label, pred) and t == "boolean":
            col = col.cast("int")
        elif c not in (label, pred):
            if t in ("float", "double"):
                col = F.when(F.isnan(col), F.lit(None)).otherwise(col)
                if as_strings:  # Arrow's text of a float: 1.0 → "1"
                    col = F.when(col == F.floor(col), col.cast("long").cast("string")).otherwise(
                        col.cast("string"))
            elif as_strings:
                col = col.cast("string")
            if na and (as_strings or t == "string"):
                col = F.when(col.isin(*na), F.lit(None)).otherwise(col)
        cols.append(col.alias(c))
    fine = (df.select(*cols).groupBy(*keys).count()
            .withColumnRenamed("count", COUNT).toPandas())
    if len(fine) == 0:
        raise ValueError("data: the Spark DataFrame has no rows.")
    for c in group_l + attrs_l:
        bad = pd.isna(fine[c])
        if bad.any():
            raise ValueError(
                f"data: column {c!r} of the Spark DataFrame has "
                f"{int(fine.loc[bad, COUNT].sum()):,} missing (null/NaN) value(s); drop those "
                "rows or map missing to an explicit category first.")
    for c in (label, pred):
        shown = vals = fine[c]
        if vals.dtype == object or pd.api.types.is_string_dtype(vals):  # text of numbers (CSV)
            # the booleans pyarrow's CSV reader (the stream engine) reads, as 1/0
            vals = pd.to_numeric(vals.replace({t: "1" for t in _TRUE} | {f: "0" for f in _FALSE}),
                                 errors="coerce")
        bad = pd.isna(vals) | ~vals.isin([0, 1])
        if bad.any():
            raise ValueError(
                f"data: column {c!r} of the Spark DataFrame is not binary: value "
                f"{shown[bad].iloc[0]!r} in {int(fine.loc[bad, COUNT].sum()):,} row(s); labels and "
                "predictions must be 0/1.")
        fine[c] = vals.astype(np.int64)
    fine[COUNT] = fine[COUNT].astype(np.int64)
    if as_strings or na:  # rows of a label read as "1" and as "1.0" are one combination now
        fine = fine.groupby(keys, sort=False, dropna=False)[COUNT].sum().reset_index()
    return from_fine(fine, label=label, pred=pred, group=group_l or None, attrs=attrs_l or None,
                     beneficial_label=beneficial_label)
