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

__all__ = ["from_spark"]


def from_spark(
    df: Any,
    *,
    label: str,
    pred: str,
    group: Any = None,
    attrs: Any = None,
    beneficial_label: int = 1,
) -> Statistics:
    """Group counts and cell statistics of a Spark DataFrame, aggregated in Spark.

    Args:
      df: a ``pyspark.sql.DataFrame``.
      label, pred, group, attrs, beneficial_label: as in :func:`ofijax.stats.collect`.

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
    cols = []
    for c in keys:
        col = F.col(c)
        if c in (label, pred) and dict(df.dtypes)[c] == "boolean":
            col = col.cast("int")
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
        vals = fine[c]
        bad = pd.isna(vals) | ~vals.isin([0, 1])
        if bad.any():
            raise ValueError(
                f"data: column {c!r} of the Spark DataFrame is not binary: value "
                f"{vals[bad].iloc[0]!r} in {int(fine.loc[bad, COUNT].sum()):,} row(s); labels and "
                "predictions must be 0/1.")
        fine[c] = vals.astype(np.int64)
    fine[COUNT] = fine[COUNT].astype(np.int64)
    return from_fine(fine, label=label, pred=pred, group=group_l or None, attrs=attrs_l or None,
                     beneficial_label=beneficial_label)
