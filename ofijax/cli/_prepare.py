"""Reading the user's table and turning its columns into what an audit or a scan takes.

This module owns the data side of the ``ofijax`` command for the in-memory (pandas) engine:
:func:`load_table` (CSV/TSV/Parquet, group and attribute columns as the strings in the file, the one
missing-value rule), :func:`prepare` (column checks, missing values, 0/1 labels and predictions from
``--positive``/``--threshold``, weights, ``--groups``), :func:`to_binary`, and the small helpers the
commands share to pick their input: :func:`read_source` (the file or the embedded COMPAS data and its
default columns), :func:`require`, :func:`label_columns`, :func:`file_lines` and
:func:`check_draws`. Every error is a :class:`~ofijax.cli._output.CLIError` naming the option.
"""

from __future__ import annotations

import os
import zlib
from typing import Any

from ofijax.cli import _sources
from ofijax.cli._output import CLIError, label_strings, option_name

__all__ = ["load_table", "prepare", "to_binary", "check_column", "values_preview", "read_source", "require",
           "file_lines", "label_columns", "check_draws", "UserError"]

UserError = CLIError  # an error in the user's input: reported in one line, exit status 2

#: Characters of the column list an unknown-column error shows (one readable line on a terminal).
COLUMNS_SHOWN = 600
#: Distinct values an error lists before "... (N distinct)".
VALUES_SHOWN = 10
#: float64 counts every integer exactly up to 2**53; larger weights or sums are refused.
EXACT_FLOAT = 2**53
#: Rows (or file lines) a missing-value error names per column before ", ...".
ROWS_SHOWN = 3
#: Groups a --groups error lists as present.
GROUPS_SHOWN = 20


def load_table(path: str, *, labels=(), na_values=()):
    """Read a CSV (``.csv``, ``.csv.gz``, ``.txt``), TSV or Parquet file into a DataFrame.

    ``labels``: group/attribute columns, read as the strings in the file (``"01"``, ``"1"`` and
    ``"1.0"`` are three groups; Parquet numbers as Arrow writes them, ``1.0`` → ``"1"``). The
    missing-value rule of every engine: an empty CSV field (a null/NaN in Parquet) is missing,
    and so is a value in ``na_values``; any other text (``"NA"``) is a value. A column name given
    twice in the file is refused.

    Example:
        >>> import os, tempfile
        >>> f = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> _ = open(f, "w").write("y,g\\n1,01\\n0,1\\n1,NA\\n0,\\n")
        >>> load_table(f, labels=["g"])["g"].tolist()
        ['01', '1', 'NA', nan]
    """
    import pandas as pd

    if not os.path.exists(path):
        raise FileNotFoundError(f"--data: file {path!r} not found.")
    if os.path.isdir(path):
        raise UserError(f"--data: {path!r} is a directory; pass a .csv or .parquet file, or read every "
                        "file in it with --engine stream (or auto).")
    low = path.lower()
    na = [str(v) for v in (na_values or ())]
    try:
        if low.endswith((".parquet", ".pq", ".parq")):
            try:
                import pyarrow.parquet as pq
            except ImportError as exc:
                raise UserError(
                    f"--data: reading Parquet needs pyarrow ({exc}); install it or pass a CSV file."
                ) from None
            _sources.unique_columns(list(pq.read_schema(path).names), path)
            tbl = pq.read_table(path)
            for c in labels:
                if c in tbl.column_names:
                    i = tbl.column_names.index(c)
                    tbl = tbl.set_column(i, c, label_strings(tbl.column(c), na))
            return tbl.to_pandas()
        sep = "\t" if low.endswith((".tsv", ".tsv.gz", ".tab")) else ","
        head = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False)
        names = head.iloc[0].tolist() if len(head) else []
        _sources.unique_columns(names, path)
        return pd.read_csv(path, sep=sep, dtype={c: str for c in labels if c in names},
                           keep_default_na=False, na_values=["", *na])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, zlib.error,
            OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError | CLIError):
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"--data: cannot read {path!r} as a table ({msg}).") from None


def check_column(df, col: str, option: str, source: str) -> None:
    if col not in df.columns:
        cols = ", ".join(map(str, df.columns))
        if len(cols) > COLUMNS_SHOWN:
            cols = cols[:COLUMNS_SHOWN] + ", ..."
        raise UserError(f"{option}: column {col!r} not found in {source}; columns: {cols}")


def values_preview(values, limit: int = VALUES_SHOWN) -> str:
    vals = [repr(x.item() if hasattr(x, "item") else x) for x in list(values)[:limit]]
    more = f", ... ({len(values)} distinct)" if len(values) > limit else ""
    return "[" + ", ".join(vals) + more + "]"


def to_binary(series, option: str, positive: list[str] | None, threshold: float | None = None):
    """Map a label/prediction column to 0/1, or raise naming its values.

    With ``threshold`` (predictions only), a numeric column of scores is 1 where score ≥ threshold,
    compared in float64 as NumPy does.
    """
    import numpy as np
    import pandas as pd

    s = series
    if threshold is not None:
        if not pd.api.types.is_numeric_dtype(s) or s.dtype == bool:
            raise UserError(f"--threshold: the {option} column {s.name!r} is not numeric; its values are "
                            f"{values_preview(sorted(map(str, pd.unique(s))))}")
        return (s.to_numpy(dtype=np.float64) >= float(threshold)).astype(np.int8), None
    if s.dtype == bool:
        return s.astype(np.int8).to_numpy(), None
    uniq = pd.unique(s)
    if pd.api.types.is_numeric_dtype(s) and set(np.asarray(uniq, dtype=float).tolist()) <= {0.0, 1.0}:
        return s.astype(np.int8).to_numpy(), None
    if not pd.api.types.is_numeric_dtype(s) and set(map(str, uniq)) <= {"0", "1"}:
        return (s.astype(str) == "1").astype(np.int8).to_numpy(), None
    if positive:
        if pd.api.types.is_numeric_dtype(s):
            nums = []
            for p in positive:
                try:
                    nums.append(float(p))
                except ValueError:
                    pass
            hit = s.astype(float).isin(nums)
        else:
            hit = s.astype(str).isin(positive)
        if not hit.any():
            raise UserError(
                f"--positive: none of {positive} occurs in the {option} column {s.name!r}; "
                f"its values are {values_preview(sorted(map(str, uniq)))}"
            )
        mapped = sorted({str(x) for x in s[hit].unique()})
        return hit.astype(np.int8).to_numpy(), mapped
    if (option == "--pred" and pd.api.types.is_numeric_dtype(s)
            and float(np.nanmin(np.asarray(uniq, dtype=float))) >= 0.0
            and float(np.nanmax(np.asarray(uniq, dtype=float))) <= 1.0):
        raise UserError(
            f"{option}: column {s.name!r} holds scores/probabilities in [0, 1], not 0/1 predictions; "
            "pass --threshold T (prediction = score >= T, e.g. --threshold 0.5)."
        )
    hint = ("Pass --threshold T for scores, or --positive VALUE to name the beneficial value."
            if option == "--pred" and pd.api.types.is_numeric_dtype(s)
            else "Pass --positive VALUE to name the beneficial value.")
    texts = {str(x) for x in uniq}
    nums = set()
    for t in texts:
        try:
            nums.add(float(t))
        except ValueError:
            pass
    odd = sorted(t for t in texts if t not in {"0", "1", "0.0", "1.0"})
    if not pd.api.types.is_numeric_dtype(s) and nums <= {0.0, 1.0} and 0 < len(odd) <= 3:
        hint = (f"If {', '.join(map(repr, odd))} mean(s) missing, pass --na-values {' '.join(odd)} "
                "(with --dropna to drop those rows); otherwise pass --positive VALUE.")
    raise UserError(
        f"{option}: column {s.name!r} is not binary 0/1; its values are "
        f"{values_preview(sorted(map(str, uniq)))}. {hint}"
    )


def prepare(
    df,
    *,
    label: str,
    pred: str,
    groups: list[str],
    positive: list[str] | None = None,
    dropna: bool = False,
    weight: str | None = None,
    only_groups: list[str] | None = None,
    extra: list[str] | None = None,
    source: str = "the data",
    min_groups: int = 2,
    threshold: float | None = None,
    lines: bool = False,
) -> dict:
    """Check and convert the columns of an audit; raise :class:`UserError` on bad input.

    ``lines``: the rows of ``df`` are a file's data rows in order, so messages name file lines
    (header = line 1, first data row = line 2); otherwise they name 0-based row positions.

    Returns a dict with ``y``, ``yhat`` (int8 0/1), ``sf`` (DataFrame of the group columns),
    ``w`` (weights or None), ``frame`` (the rows kept), ``dropped`` and ``positive_map``.
    """
    import numpy as np
    import pandas as pd

    cols = [("--label", label), ("--pred", pred)] + [("--group", g) for g in groups]
    for opt, seq in (("--group", groups), ("--attr", extra or [])):
        dup = sorted({c for c in seq if list(seq).count(c) > 1})
        if dup:
            raise UserError(f"{opt}: column {dup[0]!r} is given twice; name each column once.")
    if weight:
        cols.append(("--weight", weight))
    cols += [("--attr", a) for a in (extra or [])]
    for opt, c in cols:
        check_column(df, c, opt, source)
    if len(df) == 0:
        raise UserError(f"--data: {source} has no rows.")
    used = list(dict.fromkeys(c for _, c in cols))
    missing = df[used].isna()
    dropped = 0
    if missing.any().any():
        bad_rows = missing.any(axis=1)
        n_bad = int(bad_rows.sum())
        if not dropna:
            parts = []
            for c in used:
                idx = np.flatnonzero(missing[c].to_numpy())
                if idx.size:
                    more = ", ..." if idx.size > ROWS_SHOWN else ""
                    if lines:  # file line numbers (header = line 1)
                        where = f"line{'s' if idx.size > 1 else ''} {', '.join(str(i + 2) for i in idx[:ROWS_SHOWN])}{more}"
                    else:
                        where = f"row{'s' if idx.size > 1 else ''} {', '.join(str(i) for i in idx[:ROWS_SHOWN])}{more} (0-based)"
                    parts.append(f"{c!r}: {idx.size} ({where})")
            raise UserError(
                f"--data: {n_bad} row(s) have missing values (empty fields or --na-values) in {source}: "
                f"{'; '.join(parts)}. Pass --dropna to drop them, or fill them first."
            )
        df = df.loc[~bad_rows]
        dropped = n_bad
        if len(df) == 0:
            raise UserError("--dropna: every row has a missing value; nothing is left to audit.")
    positive_map = {}
    y, m = to_binary(df[label], "--label", positive)
    if m:
        positive_map[label] = m
    yhat, m = to_binary(df[pred], "--pred", positive, threshold)
    if m:
        positive_map[pred] = m
    sf = df[groups].copy()
    for g in groups:
        col = sf[g]
        if isinstance(col.dtype, pd.CategoricalDtype):
            counts = col.value_counts()
            empty = [str(c) for c, n in counts.items() if n == 0]
            if empty and not only_groups:
                raise UserError(
                    f"--group: group {empty[0]!r} of column {g!r} has zero rows (a declared category "
                    f"with no data); choose the groups to compare with --groups."
                )
            sf[g] = col.astype(str) if not only_groups else col
    if only_groups:
        labels = sf.astype(str).agg(" & ".join, axis=1) if len(groups) > 1 else sf[groups[0]].astype(str)
        present = sorted(set(labels))
        for gname in only_groups:
            if gname not in present:
                raise UserError(
                    f"--groups: group {gname!r} has zero rows in column(s) {', '.join(groups)}; "
                    f"groups present: {values_preview(present, GROUPS_SHOWN)}"
                )
        keep = labels.isin(only_groups).to_numpy()
        df, sf, y, yhat = df.loc[keep], sf.loc[keep], y[keep], yhat[keep]
        sf = sf.astype(str)
    w = None
    if weight:
        col = df[weight]
        if pd.api.types.is_integer_dtype(col) or col.dtype == object:
            try:  # exact integers, whatever their size
                ints = [int(x) for x in col] if col.dtype == object else col.to_numpy().tolist()
            except (TypeError, ValueError, OverflowError):
                ints = None
            if ints is not None and any(abs(x) > EXACT_FLOAT for x in ints):
                raise UserError(f"--weight: column {weight!r} has weights above 2**53 = 9,007,199,254,740,992, "
                                "which cannot be counted exactly; rescale the weights.")
        w = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        if np.isnan(w).any() or (w < 0).any() or np.isinf(w).any():
            raise UserError(f"--weight: column {weight!r} must hold finite non-negative numbers.")
        if w.sum() > EXACT_FLOAT:
            raise UserError(f"--weight: column {weight!r} sums to {w.sum():.3g}, beyond the 2**53 that "
                            "float64 counts exactly; rescale the weights.")
    nunique = sf.drop_duplicates().shape[0] if groups else 0
    if nunique < min_groups:
        raise UserError(
            f"--group: only one group ({sf.iloc[0].tolist()}) is present; an audit compares at least two."
        )
    return {
        "y": y, "yhat": yhat, "sf": sf.reset_index(drop=True), "w": w,
        "frame": df.reset_index(drop=True), "dropped": dropped, "positive_map": positive_map,
    }


def read_source(args, labels=()) -> tuple[Any, str, dict]:
    """The DataFrame to analyse, a description, and the COMPAS defaults (if embedded).

    ``labels``: the group/attribute columns, read as strings (see :func:`load_table`)."""
    if args.data:
        return load_table(args.data, labels=[c for c in labels if c],
                          na_values=getattr(args, "na_values", None) or ()), repr(args.data), {}
    from ofijax.datasets import load_compas

    if args.compas == "ijdi":
        df = load_compas("ijdi")
        df["pred_not_high_risk"] = (df["risk_decile"] <= 5).astype("int8")
        desc = "embedded COMPAS (IJDI-Scan authors' file, 7,214 rows)"
        defaults = {"label": "label_not_recid", "pred": "pred_not_high_risk", "group": ["Race"],
                    "attr": ["Sex", "Race", "Prior Offenses", "Under 25", "ChargeDegree"]}
        return df, desc, defaults
    df = load_compas(args.compas, filtered=True)
    desc = f"embedded COMPAS ({args.compas} two-year file, ProPublica filters)"
    defaults = {"label": "label_not_recid", "pred": "pred_low_risk", "group": ["race"],
                "attr": ["race", "sex", "age_cat", "c_charge_degree"]}
    return df, desc, defaults


def require(args, defaults: dict, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(args, name) is None:
            if name in defaults:
                setattr(args, name, defaults[name])
            else:
                raise UserError(f"--{name}: required with --data (the column of {_WHAT[name]}).")


_WHAT = {"label": "true labels", "pred": "predictions", "group": "the sensitive attribute"}


def file_lines(args) -> bool:
    """Whether the rows are a text file's lines (CSV/TSV; not Parquet, not embedded data)."""
    return bool(args.data) and not args.data.lower().endswith((".parquet", ".pq", ".parq"))


def label_columns(args, *names) -> list[str]:
    """The group/attribute columns named on the command line (read as strings)."""
    cols: list[str] = []
    for n in names:
        v = getattr(args, n, None)
        cols += [v] if isinstance(v, str) else list(v or [])
    return list(dict.fromkeys(cols))


def check_draws(args, dest: str, default: str, *, bootstrap: bool = False) -> None:
    """``--samples`` / ``--scan-samples`` (or their older spellings): whole numbers ≥ 0 (and not
    1 for a bootstrap)."""
    value = getattr(args, dest)
    name = option_name(args, dest, default)
    if bootstrap and (value < 0 or value == 1):
        raise UserError(f"{name}: must be 0 (skip the bootstrap) or at least 2; got {value}.")
    if value < 0:
        raise UserError(f"{name}: must be ≥ 0; got {value}.")
