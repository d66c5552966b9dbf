"""One bounded-memory pass over the data: paths, globs, directories, frames or batch iterators.

Parquet (and CSV) files are read as Arrow record batches through :mod:`pyarrow.dataset`, only the
needed columns, ``batch_size`` rows at a time; each batch is checked and reduced to row counts per
distinct (group, attribute, label, prediction) combination by one Arrow group-by, and those small
tables are summed as the pass goes. Memory is O(batch_size + occupied combinations), whatever the
number of rows.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from .._progress import Progress
from ._frames import COUNT, aggregate_batch, check_batch, combine, to_arrow
from ._stats import Statistics, from_fine

__all__ = ["collect", "resolve_files", "source_batches", "DEFAULT_BATCH_SIZE"]

#: Rows per Arrow record batch read from files.
DEFAULT_BATCH_SIZE = 1 << 20

_PARQUET = (".parquet", ".pq", ".parq")
_CSV = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")


def _is_path(x: Any) -> bool:
    return isinstance(x, str | os.PathLike)


def resolve_files(path: Any, arg: str = "data") -> tuple[list[str], str]:
    """The files of a path, directory or glob pattern (sorted) and their format."""
    p = os.fspath(path)
    if any(ch in p for ch in "*?["):
        files = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
        if not files:
            raise FileNotFoundError(f"{arg}: no file matches {p!r}.")
    elif os.path.isdir(p):
        files = sorted(
            os.path.join(root, f) for root, _, fs in os.walk(p) for f in fs
            if f.lower().endswith(_PARQUET + _CSV) and not f.startswith((".", "_"))
        )
        if not files:
            raise FileNotFoundError(f"{arg}: directory {p!r} holds no .parquet or .csv file.")
    elif os.path.isfile(p):
        files = [p]
    else:
        raise FileNotFoundError(f"{arg}: {p!r} not found.")
    kinds = {"csv" if f.lower().endswith(_CSV) else "parquet" for f in files}
    if len(kinds) > 1:
        raise ValueError(f"{arg}: {p!r} mixes Parquet and CSV files; pass one format.")
    return files, kinds.pop()


def _file_batches(files: list[str], fmt: str, columns: list[str], batch_size: int
                  ) -> tuple[Iterator[tuple[str, pa.Table]], int | None]:
    import pyarrow.dataset as ds

    if fmt == "csv":
        import pyarrow.csv as pcsv

        fmt_obj = ds.CsvFileFormat(
            parse_options=pcsv.ParseOptions(
                delimiter="\t" if files[0].lower().endswith((".tsv", ".tsv.gz")) else ","),
            read_options=pcsv.ReadOptions(block_size=1 << 24))
    else:
        fmt_obj = ds.ParquetFileFormat()
    total: int | None = None
    if fmt == "parquet":
        import pyarrow.parquet as pq

        total = 0
        for f in files:
            try:
                total += pq.ParquetFile(f).metadata.num_rows
            except Exception as exc:  # noqa: BLE001 - report which file is unreadable
                raise ValueError(f"data: cannot read {f!r} as Parquet ({exc}).") from None

    def gen():
        for f in files:
            try:
                d = ds.dataset(f, format=fmt_obj)
                names = d.schema.names
            except Exception as exc:  # noqa: BLE001
                raise ValueError(f"data: cannot read {f!r} as {fmt} ({exc}).") from None
            missing = [c for c in columns if c not in names]
            if missing:
                raise ValueError(
                    f"data: file {f!r} has no column {missing[0]!r} (columns: "
                    f"{', '.join(names[:30])}); every file must hold the same columns.")
            for b, batch in enumerate(d.to_batches(columns=columns, batch_size=batch_size)):
                yield f"file {f!r}, batch {b + 1}", pa.Table.from_batches([batch])

    return gen(), total


def source_batches(source: Any, columns: list[str], batch_size: int
                    ) -> tuple[Iterator[tuple[str, pa.Table]], int | None]:
    if _is_path(source) or (isinstance(source, list | tuple) and source
                            and all(_is_path(s) for s in source)):
        paths = [source] if _is_path(source) else list(source)
        files, fmt = [], None
        for p in paths:
            fs, k = resolve_files(p)
            if fmt is not None and k != fmt:
                raise ValueError("data: the paths mix Parquet and CSV files; pass one format.")
            files += fs
            fmt = k
        return _file_batches(files, fmt, columns, batch_size)
    mod = type(source).__module__.split(".")[0]
    if isinstance(source, pa.Table | pa.RecordBatch) or mod in ("pandas", "polars"):
        t = to_arrow(_select(source, columns))
        return iter([("the data", t)]), t.num_rows
    if isinstance(source, Iterable) and not isinstance(source, dict):
        return ((f"batch {i + 1}", to_arrow(_select(b, columns)))
                for i, b in enumerate(source)), None
    return iter([("the data", to_arrow(source))]), None


def _select(frame: Any, columns: list[str]) -> Any:
    """Only the needed columns (before any conversion); missing ones are reported later."""
    names = list(getattr(frame, "column_names", None) or getattr(frame, "columns", []))
    keep = [c for c in columns if c in names]
    if isinstance(frame, pa.Table | pa.RecordBatch):
        return frame.select(keep)
    mod = type(frame).__module__.split(".")[0]
    if mod == "polars":
        return frame.select(keep)
    if mod == "pandas" and hasattr(frame, "loc"):
        return frame.loc[:, keep]
    return frame


def collect(
    source: Any,
    *,
    label: str,
    pred: str,
    group: Any = None,
    attrs: Any = None,
    beneficial_label: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool | None = None,
) -> Statistics:
    """Group counts and cell statistics in one pass over ``source``.

    Args:
      source: a path (Parquet or CSV file, directory, glob such as ``"data/*.parquet"``), a list
        of paths, a pandas/polars DataFrame, a pyarrow Table/RecordBatch, or an iterable of those
        (batches of one data set).
      label, pred: columns of the true labels and predictions, 0/1 (or boolean).
      group: column(s) whose observed intersections are the audit's groups (None: no counts).
      attrs: categorical columns spanning the scans' cells (None: no cell statistics).
      beneficial_label: 1, or 0 when label/prediction 1 is harmful (orients the CMs).
      batch_size: rows per record batch read from files (bounds memory).
      progress: show rows done on stderr (None: ``ofijax._progress`` default).

    Returns:
      :class:`~ofijax.stats.Statistics`.

    Raises:
      ValueError: naming the file, the batch and the row, for a missing column, a missing group
        or attribute value, or a non-binary label/prediction; nothing is returned then.

    Examples:
      >>> import pandas as pd
      >>> df = pd.DataFrame({"y": [1, 0, 1, 0], "p": [1, 1, 0, 0], "g": list("aabb")})
      >>> st = collect(df, label="y", pred="p", group="g")
      >>> st.counts.groups, st.counts.cms.tolist()
      (('a', 'b'), [[1, 0, 1, 0], [0, 1, 0, 1]])
    """
    group_l = [group] if isinstance(group, str) else (list(group) if group is not None else [])
    attrs_l = [attrs] if isinstance(attrs, str) else (list(attrs) if attrs is not None else [])
    if not group_l and not attrs_l:
        raise ValueError("group: give the group column(s), the attribute columns (attrs), or both.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: must be a positive integer; got {batch_size!r}.")
    keys = list(dict.fromkeys(group_l + attrs_l + [label, pred]))
    batches, total = source_batches(source, keys, batch_size)
    fine, pending, pending_rows, offset = None, [], 0, 0
    with Progress(total, "rows", unit="rows", enabled=progress) as bar:
        for where, tbl in batches:
            n = tbl.num_rows
            if n == 0:
                continue
            span = f"{where} (rows {offset + 1:,}-{offset + n:,})"
            tbl = check_batch(tbl, binary=(label, pred), categorical=tuple(group_l + attrs_l),
                              where=span, offset=offset)
            agg = aggregate_batch(tbl, keys)
            pending.append(agg)
            pending_rows += agg.num_rows
            if pending_rows > max(1 << 18, 4 * (0 if fine is None else fine.num_rows)):
                fine = combine(pending + ([fine] if fine is not None else []), keys)
                pending, pending_rows = [], 0
            offset += n
            bar.update(n)
    if fine is None and not pending:
        raise ValueError("data: has no rows.")
    fine = combine(pending + ([fine] if fine is not None else []), keys)
    df = fine.to_pandas()
    st = from_fine(df, label=label, pred=pred, group=group_l or None, attrs=attrs_l or None,
                   beneficial_label=beneficial_label)
    assert st.rows == offset and int(df[COUNT].sum()) == offset
    return st
