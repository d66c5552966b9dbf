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

__all__ = ["collect", "resolve_files", "source_batches", "file_columns", "na_value_tuple",
           "DEFAULT_BATCH_SIZE"]

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


def _csv_format(files: list[str], columns: list[str], strings: tuple, na_values: tuple) -> Any:
    """pyarrow's CSV reading with the one missing-value rule: an empty field is missing, and so
    is a field equal to one of ``na_values``; every other text (``NA``, ``null``) is a value.
    ``strings``: columns read as text whatever they look like (group and attribute labels)."""
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds

    return ds.CsvFileFormat(
        parse_options=pcsv.ParseOptions(
            delimiter="\t" if files[0].lower().endswith((".tsv", ".tsv.gz")) else ","),
        read_options=pcsv.ReadOptions(block_size=1 << 24),
        convert_options=pcsv.ConvertOptions(
            null_values=["", *na_values], strings_can_be_null=True, quoted_strings_can_be_null=True,
            column_types={c: pa.string() for c in strings}, include_columns=None))


def file_columns(f: str, fmt: str, arg: str = "data") -> list[str]:
    """The column names of one file, refusing a name given twice (naming ``arg``, the file and
    the column)."""
    if fmt == "csv":
        import csv
        import gzip

        opener = gzip.open if f.lower().endswith(".gz") else open
        try:
            with opener(f, "rt", newline="", encoding="utf-8") as fh:
                names = next(csv.reader(
                    fh, delimiter="\t" if f.lower().endswith((".tsv", ".tsv.gz", ".tab")) else ","), [])
        except (OSError, UnicodeDecodeError, EOFError, csv.Error) as exc:
            raise ValueError(f"{arg}: cannot read {f!r} as CSV ({exc}).") from None
    else:
        import pyarrow.parquet as pq

        try:
            names = list(pq.read_schema(f).names)
        except Exception as exc:  # noqa: BLE001 - report which file is unreadable
            raise ValueError(f"{arg}: cannot read {f!r} as Parquet ({exc}).") from None
    seen: set = set()
    for c in names:
        if c in seen:
            raise ValueError(
                f"{arg}: file {f!r} has two columns named {c!r}; rename one (every column name "
                "must be unique).")
        seen.add(c)
    return names


def _file_batches(files: list[str], fmt: str, columns: list[str], batch_size: int,
                  strings: tuple = (), na_values: tuple = ()
                  ) -> tuple[Iterator[tuple[str, pa.Table, Any]], int | None]:
    import pyarrow.dataset as ds

    if fmt == "csv":
        fmt_obj = _csv_format(files, columns, tuple(c for c in strings if c in columns), na_values)
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
            names = file_columns(f, fmt)
            missing = [c for c in columns if c not in names]
            if missing:
                raise ValueError(
                    f"data: file {f!r} has no column {missing[0]!r} (columns: "
                    f"{', '.join(names[:30])}); every file must hold the same columns.")
            try:
                d = ds.dataset(f, format=fmt_obj)
                batches = d.to_batches(columns=columns, batch_size=batch_size)
            except Exception as exc:  # noqa: BLE001
                raise ValueError(f"data: cannot read {f!r} as {fmt} ({exc}).") from None
            done = 0
            for j, b in enumerate(_guarded(batches, f, fmt)):
                # CSV: file lines (header = line 1); Parquet: 0-based rows of the file
                loc = _file_locator(f, fmt, done, j + 1)
                done += b.num_rows
                yield f"file {f!r}, batch {j + 1}", pa.Table.from_batches([b]), loc

    return gen(), total


def _file_locator(f: str, fmt: str, start: int, batch: int) -> Any:
    """Local row ``i`` of batch ``batch`` that starts ``start`` data rows into file ``f``: its
    line in a CSV file (header = line 1), its 0-based row in a Parquet file."""
    if fmt == "csv":
        return lambda i: f"line {start + i + 2:,} of {f!r} (batch {batch})"
    return lambda i: f"row {start + i:,} (0-based) of {f!r} (batch {batch})"


def _guarded(batches: Iterator, f: str, fmt: str) -> Iterator:
    """Arrow's own read errors (a malformed CSV row, a corrupt page) as one ValueError naming the
    file."""
    it = iter(batches)
    while True:
        try:
            b = next(it)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"data: cannot read {f!r} as {fmt} ({msg}).") from None
        yield b


def source_batches(source: Any, columns: list[str], batch_size: int, strings: tuple = (),
                   na_values: tuple = ()
                   ) -> tuple[Iterator[tuple[str, pa.Table, Any]], int | None]:
    """``(where, table, locate)`` per batch: ``locate(i)`` words the batch's row ``i`` (a CSV
    file's line, or the 0-based row of a Parquet file; None: the 0-based position over the whole
    source)."""
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
        return _file_batches(files, fmt, columns, batch_size, strings, na_values)
    mod = type(source).__module__.split(".")[0]
    if mod == "polars" and not hasattr(source, "to_arrow"):
        to_arrow(source)  # a LazyFrame: one TypeError naming data and the fix
    if isinstance(source, pa.Table | pa.RecordBatch) or mod in ("pandas", "polars"):
        t = to_arrow(_select(source, columns))
        return iter([("the data", t, None)]), t.num_rows
    if isinstance(source, Iterable) and not isinstance(source, dict):
        return ((f"batch {i + 1}", to_arrow(_select(b, columns)), None)
                for i, b in enumerate(source)), None
    return iter([("the data", to_arrow(source), None)]), None


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


def na_value_tuple(na_values: Any) -> tuple:
    """``na_values`` as a tuple of strings (None: none; one string: that one)."""
    if na_values is None:
        return ()
    vals = (na_values,) if isinstance(na_values, str) else tuple(na_values)
    bad = [v for v in vals if not isinstance(v, str)]
    if bad:
        raise TypeError(f"na_values: must be strings (the text that means missing); got {bad[0]!r}.")
    return vals


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
    as_strings: bool = False,
    na_values: Any = None,
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
      as_strings: read the group and attribute columns as strings (labels, not numbers): the
        text of a CSV field as written (``"01"``, ``"1"`` and ``"1.0"`` are three groups), other
        values cast by Arrow (integer ``1`` → ``"1"``, float ``1.0`` → ``"1"``), so parts that
        store a column with different types merge. Without it a column typed differently in
        two parts (a number in one, text in another) is a ``ValueError`` naming both.
      na_values: strings that mean missing in the group and attribute columns (and, in CSV
        files, in every column), besides the one rule for files: an empty CSV field, a null or a
        NaN is missing; any other text (``"NA"``, ``"null"``) is a value.

    Missing values are an error (naming the file and the line of a CSV file, or the 0-based
    row): drop those rows or map them to an explicit category first.

    Returns:
      :class:`~ofijax.stats.Statistics`.

    Raises:
      ValueError: naming the file and the line (CSV; header = line 1) or the 0-based row, for a
        missing or duplicated column, a missing group or attribute value, a non-binary
        label/prediction, or a column typed differently in two parts; nothing is returned then.

    Examples:
      >>> import pandas as pd
      >>> df = pd.DataFrame({"y": [1, 0, 1, 0], "p": [1, 1, 0, 0], "g": list("aabb")})
      >>> st = collect(df, label="y", pred="p", group="g")
      >>> st.counts.groups, st.counts.cms.tolist()
      (('a', 'b'), [[1, 0, 1, 0], [0, 1, 0, 1]])

      Group labels as text: codes that read alike as numbers stay apart; an empty CSV field is
      missing, ``NA`` is a label unless named in ``na_values``.

      >>> import os, tempfile
      >>> f = os.path.join(tempfile.mkdtemp(), "codes.csv")
      >>> _ = open(f, "w").write("y,p,g\\n1,1,01\\n0,1,1\\n1,0,1.0\\n0,0,NA\\n")
      >>> collect(f, label="y", pred="p", group="g", as_strings=True).counts.groups
      ('01', '1', '1.0', 'NA')
      >>> _ = open(f, "w").write("y,p,g\\n1,1,01\\n0,1,1\\n1,0,1.0\\n")
      >>> collect(f, label="y", pred="p", group="g").counts.groups  # read as numbers: one group
      (1.0,)
    """
    group_l = [group] if isinstance(group, str) else (list(group) if group is not None else [])
    attrs_l = [attrs] if isinstance(attrs, str) else (list(attrs) if attrs is not None else [])
    if not group_l and not attrs_l:
        raise ValueError("group: give the group column(s), the attribute columns (attrs), or both.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: must be a positive integer; got {batch_size!r}.")
    na = na_value_tuple(na_values)
    keys = list(dict.fromkeys(group_l + attrs_l + [label, pred]))
    labels = tuple(dict.fromkeys(group_l + attrs_l))
    batches, total = source_batches(source, keys, batch_size,
                                    strings=labels if as_strings else (), na_values=na)
    fine, pending, pending_rows, offset = None, [], 0, 0
    types: dict = {}
    with Progress(total, "rows", unit="rows", enabled=progress) as bar:
        for where, tbl, locate in batches:
            n = tbl.num_rows
            if n == 0:
                continue
            tbl = check_batch(tbl, binary=(label, pred), categorical=labels, where=where,
                              offset=offset, locate=locate, as_strings=as_strings, na_values=na,
                              types=types)
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
