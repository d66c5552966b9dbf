"""Any table → Arrow, and the per-batch checks (missing columns, NaN groups, non-binary labels).

pandas DataFrames, polars DataFrames, pyarrow Tables and RecordBatches all become a
:class:`pyarrow.Table` of the needed columns; every check names the batch it found the problem in
(``where``: e.g. ``"file 'a.parquet', batch 3 (rows 2,000,001–3,000,000)"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["to_arrow", "check_batch", "aggregate_batch", "combine", "row_locator", "as_label_column",
           "COUNT"]

#: Name of the count column of the aggregated ("fine") tables.
COUNT = "__n__"


def to_arrow(frame: Any, arg: str = "data") -> pa.Table:
    """A pandas/polars DataFrame, pyarrow Table or RecordBatch (or dict of columns) as a Table."""
    if isinstance(frame, pa.Table):
        return frame
    if isinstance(frame, pa.RecordBatch):
        return pa.Table.from_batches([frame])
    mod = type(frame).__module__.split(".")[0]
    if mod == "polars":
        if not hasattr(frame, "to_arrow"):  # a LazyFrame (a query, not rows)
            raise TypeError(
                f"{arg}: a polars {type(frame).__name__} is a query, not rows; pass "
                "frame.collect() (frame.collect(engine='streaming') for a large one), or the "
                "Parquet/CSV files it scans (a path, directory or glob) to stream them."
            )
        return frame.to_arrow()
    if mod == "pandas":
        import pandas as pd

        if isinstance(frame, pd.DataFrame):
            try:
                return pa.Table.from_pandas(frame, preserve_index=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # e.g. 1 and "1" in one column
                msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ValueError(
                    f"{arg}: a column cannot be read as one type ({msg}); store each column with "
                    "one type (e.g. group labels all as text: df[col].astype(str))."
                ) from None
    if isinstance(frame, dict):
        return pa.table({k: np.asarray(v) for k, v in frame.items()})
    raise TypeError(
        f"{arg}: must be a pandas or polars DataFrame, a pyarrow Table/RecordBatch, a path or an "
        f"iterator of those; got {type(frame).__name__}."
    )


def _first_bad(mask: pa.ChunkedArray | pa.Array) -> int:
    arr = np.asarray(mask.to_numpy(zero_copy_only=False) if hasattr(mask, "to_numpy") else mask)
    hits = np.flatnonzero(arr)
    return int(hits[0]) if hits.size else -1


def row_locator(offset: int, where: str = "") -> Any:
    """Where local row ``i`` of a batch lies when ``offset`` rows came before it: a 0-based
    position over the whole source (frames, tables, batches), e.g. ``"row 5 (0-based)"``."""
    tail = f"; {where}" if where and where != "the data" else ""
    return lambda i: f"row {offset + i:,} (0-based{tail})"


def as_label_column(col: Any, na_values: tuple = ()) -> Any:
    """A group/attribute column as strings: the text of a CSV field, ``str`` of integers, Arrow's
    shortest repr of floats (``1.0`` → ``"1"``); nulls stay null and strings in ``na_values``
    become null."""
    if isinstance(col, pa.ChunkedArray) and col.num_chunks == 0:
        col = pa.chunked_array([], type=col.type)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_floating(col.type):  # NaN is missing, as everywhere
        col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
    if not pa.types.is_string(col.type):
        col = col.cast(pa.string())
    if na_values:
        col = pc.if_else(pc.is_in(col, value_set=pa.array(list(na_values), pa.string())),
                         pa.scalar(None, pa.string()), col)
    return col


def check_batch(tbl: pa.Table, *, binary: tuple, categorical: tuple, where: str, offset: int,
                probabilities: tuple = (), locate: Any = None, as_strings: bool = False,
                na_values: tuple = (), types: dict | None = None) -> pa.Table:
    """Check one batch; return it with dictionary columns decoded and booleans as int8.

    Raises ``ValueError`` starting with ``data:`` naming ``where``, the column and the row:
    ``locate(i)`` words local row ``i`` (a CSV file's line, ``"line 7 of 'a.csv'"``); without it,
    the 0-based position over the whole source (``offset`` rows came before this batch).

    ``as_strings``: read the ``categorical`` (group/attribute) columns as strings, so that codes
    such as ``"01"`` and ``"1"`` stay apart and parts typed differently merge; ``na_values``:
    strings of those columns that mean missing. ``types`` (a dict kept across batches) records
    each categorical column's type, so that parts typed differently are refused by name rather
    than failing inside a merge.
    """
    locate = locate or row_locator(offset, where)
    missing = [c for c in dict.fromkeys(binary + categorical + probabilities)
               if c not in tbl.column_names]
    if missing:
        raise ValueError(
            f"data: {where} has no column {missing[0]!r} (columns: "
            f"{', '.join(tbl.column_names[:30])}); every file and batch must hold the same columns."
        )
    for c in dict.fromkeys(categorical):
        col = tbl.column(c)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if as_strings or (na_values and _is_text(col.type)):
            col = as_label_column(col, na_values)
        tbl = tbl.set_column(tbl.column_names.index(c), c, col)
        if types is not None:
            first = types.setdefault(c, (col.type, where))
            if not _same_kind(first[0], col.type):
                raise ValueError(
                    f"data: column {c!r} has type {col.type} in {where} but {first[0]} in "
                    f"{first[1]}; store it with one type in every part, or read group and "
                    "attribute columns as strings (collect(..., as_strings=True); the ofijax "
                    "command does)."
                )
        bad = pc.is_null(col, nan_is_null=True)
        i = _first_bad(bad)
        if i >= 0:
            raise ValueError(
                f"data: column {c!r} has a missing (null/NaN/empty) value at "
                f"{locate(i)}; drop those rows or map missing to an explicit category first."
            )
    for c in dict.fromkeys(binary):
        col = tbl.column(c)
        if pa.types.is_boolean(col.type):
            col = col.cast(pa.int8())
        elif _is_text(col.type) and set(pc.unique(col).to_pylist()) <= {"0", "1", None}:
            col = col.cast(pa.int8())  # the text labels "0"/"1" (as ofijax.audit takes them)
        elif not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            vals = pc.unique(col).to_pylist()[:10]
            raise ValueError(
                f"data: {where}: column {c!r} has type {col.type} (values such as {vals}); labels "
                "and predictions must be 0/1 (integer, float or boolean)."
            )
        ok = pc.and_kleene(pc.is_valid(col), pc.or_(pc.equal(col, 0), pc.equal(col, 1)))
        i = _first_bad(pc.invert(pc.fill_null(ok, False)))
        if i >= 0:
            val = col[i].as_py()
            what = ("a missing (null/NaN/empty) value" if val is None or val != val
                    else f"value {val!r}")
            raise ValueError(
                f"data: column {c!r} is not binary: {what} at "
                f"{locate(i)}; labels and predictions must be 0/1."
            )
        tbl = tbl.set_column(tbl.column_names.index(c), c, col.cast(pa.int8()))
    for c in dict.fromkeys(probabilities):
        col = tbl.column(c).cast(pa.float64())
        ok = pc.and_kleene(pc.greater_equal(col, 0.0), pc.less_equal(col, 1.0))
        i = _first_bad(pc.invert(pc.fill_null(ok, False)))
        if i >= 0:
            raise ValueError(
                f"data: column {c!r} must hold probabilities in [0, 1]; value "
                f"{col[i].as_py()!r} at {locate(i)}."
            )
        tbl = tbl.set_column(tbl.column_names.index(c), c, col)
    return tbl


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Types whose values merge as the same labels: equal types, both numbers (a part of int32
    and one of float64: 1 and 1.0 are one number), or both text; a number and a string (``1`` in
    one part, ``"1"`` in another) are refused."""
    if a == b or pa.types.is_null(a) or pa.types.is_null(b):
        return True
    num = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in num) and any(f(b) for f in num):
        return True
    return _is_text(a) and _is_text(b)


def aggregate_batch(tbl: pa.Table, keys: list) -> pa.Table:
    """Row counts per distinct combination of ``keys`` (one pyarrow group-by)."""
    out = tbl.select(keys).group_by(keys, use_threads=True).aggregate([([], "count_all")])
    names = [COUNT if n == "count_all" else n for n in out.column_names]
    return out.rename_columns(names).select(keys + [COUNT])


def combine(tables: list, keys: list) -> pa.Table:
    """Sum the counts of several aggregated tables (same keys)."""
    t = pa.concat_tables(tables, promote_options="permissive")
    out = t.group_by(keys, use_threads=True).aggregate([(COUNT, "sum")])
    names = list(out.column_names)
    names[names.index(f"{COUNT}_sum")] = COUNT
    return out.rename_columns(names).select(keys + [COUNT])
