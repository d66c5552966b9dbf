"""The ``ofijax`` command line: ``audit``, ``scan``, ``simulate`` and ``table1``.

``ofijax audit`` with no options audits the embedded COMPAS data as the OFI paper did (ProPublica's
violent two-year file, filtered to 4,020 rows; label flipped to "not a violent recidivist",
prediction = low risk, group = race) and writes ``report.json``, ``report.md`` and heatmaps to
``ofijax-report/``. Errors in the user's input (a missing file, an unknown column, a non-binary
label, missing values, an empty group, a bad option) print one line on stderr and exit with status
2, writing nothing; an existing report folder is replaced only with ``--force``, and reports are
written atomically (a temporary folder renamed into place).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from typing import Any

from ofijax.cli import _sources
from ofijax.cli._output import (
    CLIError,
    as_option,
    data_section,
    label_strings,
    option_name,
    report_dir,
)

__all__ = ["main", "build_parser", "load_table", "prepare", "METHODS"]

#: ``--method`` of ``ofijax audit``: the p-value methods of :func:`ofijax.audit`.
METHODS = ("auto", "exact", "saddlepoint", "monte_carlo")

EXIT_USAGE = 2

_DESCRIPTION = """\
ofijax: legally grounded fairness audits of binary classifiers.

Run `ofijax COMMAND --help` for each command's options; without --data, audit and scan use the
embedded COMPAS data, as in the OFI paper.
"""

#: The one missing-value rule of every engine (pandas, stream, spark), shown in the help.
NA_RULE = ("missing values: an empty field (and a null/NaN in Parquet) is missing; any other text, "
           "'NA' included, is a value (a group label) unless named by --na-values")


UserError = CLIError  # an error in the user's input: reported in one line, exit status 2


# ------------------------------------------------------------------------------------------------
# Data loading and preparation (pure pandas; no JAX import needed for the checks)
# ------------------------------------------------------------------------------------------------


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


def _check_column(df, col: str, option: str, source: str) -> None:
    if col not in df.columns:
        cols = ", ".join(map(str, df.columns))
        if len(cols) > 600:
            cols = cols[:600] + ", ..."
        raise UserError(f"{option}: column {col!r} not found in {source}; columns: {cols}")


def _values_preview(values, limit: int = 10) -> str:
    vals = [repr(x.item() if hasattr(x, "item") else x) for x in list(values)[:limit]]
    more = f", ... ({len(values)} distinct)" if len(values) > limit else ""
    return "[" + ", ".join(vals) + more + "]"


def _to_binary(series, option: str, positive: list[str] | None, threshold: float | None = None):
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
                            f"{_values_preview(sorted(map(str, pd.unique(s))))}")
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
                f"its values are {_values_preview(sorted(map(str, uniq)))}"
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
        f"{_values_preview(sorted(map(str, uniq)))}. {hint}"
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
        _check_column(df, c, opt, source)
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
                    more = ", ..." if idx.size > 3 else ""
                    if lines:  # file line numbers (header = line 1)
                        where = f"line{'s' if idx.size > 1 else ''} {', '.join(str(i + 2) for i in idx[:3])}{more}"
                    else:
                        where = f"row{'s' if idx.size > 1 else ''} {', '.join(str(i) for i in idx[:3])}{more} (0-based)"
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
    y, m = _to_binary(df[label], "--label", positive)
    if m:
        positive_map[label] = m
    yhat, m = _to_binary(df[pred], "--pred", positive, threshold)
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
                    f"groups present: {_values_preview(present, 20)}"
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
            if ints is not None and any(abs(x) > 2**53 for x in ints):
                raise UserError(f"--weight: column {weight!r} has weights above 2**53 = 9,007,199,254,740,992, "
                                "which cannot be counted exactly; rescale the weights.")
        w = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        if np.isnan(w).any() or (w < 0).any() or np.isinf(w).any():
            raise UserError(f"--weight: column {weight!r} must hold finite non-negative numbers.")
        if w.sum() > 2**53:
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


# ------------------------------------------------------------------------------------------------
# Report files
# ------------------------------------------------------------------------------------------------


def audit_header(report: dict) -> list[str]:
    """The lines that head ``report.md``: data, columns, orientation, command."""
    d = report["data"]
    rows = f"{d['source']}, {d['rows']} rows" + (
        f" ({d['rows_dropped']} dropped: missing values)" if d["rows_dropped"] else "")
    orient = ("label/prediction 1 was the HARMFUL outcome (--harmful-label): both flipped so that the benefit "
              "is prediction 0" if d["harmful_label"] else "label/prediction 1 = the beneficial outcome")
    pred = f"prediction `{d['pred']}`" + (f" (score >= {d['threshold']:g})" if d.get("threshold") is not None else "")
    return [
        f"data: {rows}",
        f"label `{d['label']}`, {pred}, groups by {', '.join(f'`{g}`' for g in d['group'])}; {orient}",
        f"ofijax {report['ofijax_version']}; seed {report['seed']}; command: `{report['command']}`",
    ]


# ------------------------------------------------------------------------------------------------
# Parser
# ------------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UserError(message)


def _seed(text: str) -> int:
    """``--seed``: an integer in [0, 2**64)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed: must be an integer in [0, 2**64); got {text!r}.") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"--seed: must be an integer in [0, 2**64); got {text}.")
    return value


def _finite(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: must be a number; got {text!r}.") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name}: must be a finite number; got {text}.")
        return value
    return parse


def _positive_int(name: str, minimum: int = 0):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: must be an integer; got {text!r}.") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name}: must be ≥ {minimum}; got {value}.")
        return value
    return parse


class _Deprecated(argparse.Action):
    """An older spelling of an option: still works, hidden from the help; a note after a
    successful run names the new spelling (errors stay one line)."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _spell(namespace, self.dest, option_string, self.new)


class _Spelled(argparse.Action):
    """Stores the value and remembers that the current spelling was used (for messages)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _spell(namespace, self.dest, option_string, None)


def _spell(namespace, dest: str, used: str | None, new: str | None) -> None:
    spelled = dict(getattr(namespace, "spelled", None) or {})
    spelled[dest] = used
    namespace.spelled = spelled
    if new:
        notes = list(getattr(namespace, "deprecated", None) or [])
        notes.append(f"{used} is deprecated; use {new} (same meaning).")
        namespace.deprecated = notes


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the descriptions' line breaks and shows a default only where there is one."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if not (d is None or d is False or d == argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _data_options(p: argparse.ArgumentParser, *, group_help: str | None, compas: tuple = ("violent", "general"),
                  compas_help: str = "", pred_default: str = "pred_low_risk",
                  weights: bool = True) -> argparse._ArgumentGroup:
    d = p.add_argument_group("data")
    d.add_argument("--data", metavar="FILE",
                   help="CSV (.csv, .csv.gz), TSV or Parquet file, one row per person (or a directory "
                        "or glob of such files: see --engine). Without it the embedded COMPAS data are "
                        "used (see --compas). Group and attribute columns are read as text: '01', '1' "
                        "and '1.0' are three groups")
    d.add_argument("--compas", choices=compas, default=compas[0],
                   help=compas_help or "which embedded COMPAS file to use when --data is not given: "
                        "'violent' (the OFI paper's 4,020 rows) or 'general' (6,172 rows)")
    d.add_argument("--label", metavar="COL",
                   help="column of true labels (0/1, 1 = beneficial outcome; see --positive and "
                        "--harmful-label). Default for COMPAS: label_not_recid")
    d.add_argument("--pred", metavar="COL",
                   help=f"column of the classifier's predictions (0/1). Default for COMPAS: {pred_default}")
    if group_help:
        d.add_argument("--group", metavar="COL", action="append", help=group_help)
    d.add_argument("--threshold", metavar="T", type=_finite("--threshold"),
                   help="the --pred column holds scores or probabilities: predict 1 (beneficial) where "
                        "score >= T (compared in float64)")
    d.add_argument("--positive", metavar="VALUE", action="append",
                   help="value(s) counted as 1 (beneficial) in a label/prediction column that is not "
                        "already 0/1; every other value counts as 0. Repeat for several values.")
    d.add_argument("--harmful-label", action="store_true",
                   help="label/prediction 1 is the HARMFUL outcome (e.g. 1 = recidivist): flip both so "
                        "that the positive cell is beneficial, as OFI assumes")
    if weights:
        d.add_argument("--weight", metavar="COL", help="optional column of non-negative sample weights")
    d.add_argument("--bins", metavar="N", type=_positive_int("--bins", 2),
                   help="cut numeric group/attribute columns with more than --max-levels values into N "
                        "quantile bins (edges shown in the report); without it such columns are refused")
    d.add_argument("--max-levels", metavar="K", type=_positive_int("--max-levels", 2), default=20,
                   help="most distinct values of an unbinned group/attribute column")
    d.add_argument("--dropna", action="store_true",
                   help="drop rows with a missing value in the columns used (otherwise they are an "
                        "error). " + NA_RULE)
    d.add_argument("--na-values", metavar="VALUE", nargs="+", default=None,
                   help="field values that also mean missing, e.g. --na-values NA 'n/a' (by default "
                        "only an empty field is missing: 'NA' is a group label)")
    return d


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ofijax`` command."""
    parser = _Parser(prog="ofijax", description=_DESCRIPTION, formatter_class=_Formatter)
    from ofijax import __version__

    parser.add_argument("--version", action="version", version=f"ofijax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    # audit ------------------------------------------------------------------------------------
    pa = sub.add_parser(
        "audit", formatter_class=_Formatter,
        help="audit a classifier: OFI with significance, DI, verdicts, report files",
        description=(
            "Audit a binary classifier between groups. For every pair (i, j): OFI = B_i - B_j with\n"
            "B = (FP - FN)/n, its p-value under a named null, a bootstrap interval, DI and TE, and a\n"
            "verdict: 'algorithmic bias' (OFI significant; OFI > 0 = bias against j), 'selection-rate\n"
            "disparity' (OFI not significant, DI fails the four-fifths rule), 'too small to judge'\n"
            "(a group under the minimum-evidence size: 5 people at alpha 0.05) or 'no evidence'.\n"
            "report.md explains every column ('How to read this report'); report.html is the same audit\n"
            "as one self-contained, printable page, with the impact-ratio tables and provenance.\n\n"
            "Without --data it audits the embedded COMPAS data as the OFI paper did."
        ),
    )
    da = _data_options(pa, group_help="sensitive-attribute column; repeat for intersections "
                                      "(e.g. --group race --group sex). Default for COMPAS: race")
    da.add_argument("--groups", metavar="VALUE", nargs="+",
                    help="compare only these groups (labels as printed, 'A & B' for intersections)")
    s = pa.add_argument_group("statistics")
    s.add_argument("--alpha", type=_finite("--alpha"), default=0.05, help="significance level of the verdicts")
    s.add_argument("--null", choices=("pooled", "uniform"), default="pooled",
                   help="null model of the OFI test: 'pooled' = both groups drawn from the pair's pooled "
                        "confusion matrix (multinomial, exact); 'uniform' = every confusion matrix of "
                        "M(n) equally likely (the OFI paper's, very permissive)")
    s.add_argument("--method", choices=METHODS, default="auto",
                   help="p-values of the OFI tests: 'exact' (the exact null distribution), "
                        "'saddlepoint' (an approximation, said so in the report), 'monte_carlo' "
                        "(--samples draws) or 'auto' (exact where it is affordable)")
    s.add_argument("--correction", choices=("holm", "bonferroni", "none"), default="holm",
                   help="multiple-testing correction over the k(k-1)/2 pairs")
    s.add_argument("--confidence", type=_finite("--confidence"), default=0.95,
                   help="coverage of the bootstrap intervals (per pair; the report adds intervals "
                        "simultaneous over all pairs by Bonferroni)")
    s.add_argument("--samples", type=int, default=2000, metavar="N", action=_Spelled,
                   help="draws: bootstrap replicates of each pairwise OFI, and Monte Carlo draws "
                        "with --method monte_carlo (0 = skip the bootstrap)")
    s.add_argument("--bootstrap", type=int, dest="samples", action=_Deprecated, new="--samples")
    s.add_argument("--seed", type=_seed, default=0, help="PRNG seed (bootstrap, Monte Carlo, scans)")
    s.add_argument("--di-variant", choices=("paper", "pp_over_p"), default="paper",
                   help="DI as the paper's eq. 1 (P^/n ratio) or the authors' 2024 code (P^/P ratio)")
    s.add_argument("--scan", action="store_true",
                   help="also report the worst (most disadvantaged) subgroup by FPR-/TPR-Scan over the "
                        "--attr columns, with a randomization p-value (slow: a minute or more)")
    s.add_argument("--attr", metavar="COL", nargs="+",
                   help="attribute columns for --scan (default: the --group columns; for COMPAS: race, "
                        "sex, age_cat, c_charge_degree)")
    s.add_argument("--scan-samples", type=int, default=100, metavar="N", action=_Spelled,
                   help="randomization replicates (draws) of each scan p-value (with --scan)")
    s.add_argument("--replicates", type=int, dest="scan_samples", action=_Deprecated,
                   new="--scan-samples")
    s.add_argument("--top", metavar="K", type=_positive_int("--top", 1), default=1,
                   help="with --scan: report the K worst subgroups of each scan (each found without the "
                        "earlier ones' people), with family-wise p-values")
    o = pa.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", default="ofijax-report",
                   help="directory for report.json, report.md, report.html and the heatmap PNGs")
    o.add_argument("--force", action="store_true", help="replace an existing --out folder")
    o.add_argument("--no-plots", action="store_true", help="do not write heatmap PNGs")
    o.add_argument("--quiet", action="store_true", help="print only the verdicts")
    ir = pa.add_argument_group(
        "impact ratios (report.json 'impact_ratios', report.md, report.html; no label needed)",
        "Per --group column, and their intersection with two or more, each category's selection rate and\n"
        "impact ratio (rate over the highest rate), with Fisher's exact test (small counts) or the\n"
        "two-proportion z-test of its gap from the reference. An empty group value is an unknown\n"
        "category here (counted, left out). Without --label only these tables (and DI) are reported.")
    ir.add_argument("--scoring-rate", metavar="COL",
                    help="the tool scores instead of selecting: the share of each category scoring strictly "
                         "above the median of COL over the full sample (exact), and its impact ratio")
    ir.add_argument("--lower-is-better", action="store_true",
                    help="with --scoring-rate: a lower score is favourable (count strictly below the median)")
    ir.add_argument("--keep-small", action="store_true",
                    help="keep categories under 2%% of the rows with a known value in the impact-ratio "
                         "calculation (by default they are listed but left out of it, as NYC LL144 allows)")
    from ofijax.cli._batch import add_batch_options

    add_batch_options(pa)  # batch audit: --pred COL [COL ...], --score COL --thresholds A:B:STEP
    _sources.add_options(pa)

    # scan -------------------------------------------------------------------------------------
    ps = sub.add_parser(
        "scan", formatter_class=_Formatter,
        help="worst subgroup by FPR-/TPR-/IJDI-Scan with a randomization p-value",
        description=(
            "Search subgroups (conjunctions of attribute values) for the one whose false-positive\n"
            "rate (FPR-Scan, --side negative) or true-positive rate (TPR-Scan, --side positive) is\n"
            "raised most significantly; with --lam > 0 and --prob, IJDI-Scan allows the raise that\n"
            "the true risk justifies. Without --data: the embedded COMPAS data."
        ),
    )
    _data_options(
        ps, group_help=None, compas=("ijdi", "violent", "general"), weights=False,
        pred_default="pred_not_high_risk (ijdi file: decile <= 5) or pred_low_risk",
        compas_help="embedded COMPAS file without --data: 'ijdi' (the IJDI-Scan authors' 7,214 rows; "
                    "prediction = decile <= 5, i.e. not high risk at theta = 0.5, as that paper), "
                    "'violent' or 'general'",
    )
    ps.add_argument("--attr", "--group", dest="attr", metavar="COL", nargs="+",
                    help="attribute columns to scan over (categorical). Default for COMPAS: the IJDI "
                         "paper's Sex, Race, Prior Offenses, Under 25, ChargeDegree (ijdi file) or "
                         "race, sex, age_cat, c_charge_degree (other files)")
    ps.add_argument("--prob", metavar="COL",
                    help="column of estimated P(label = 1 | x) (label as given, 1 = beneficial unless "
                         "--harmful-label) for IJDI-Scan; without it, --lam > 0 estimates it by the "
                         "in-sample logistic regression of the IJDI paper")
    ps.add_argument("--lam", type=_finite("--lam"), default=0.0,
                    help="IJDI's lambda: the FPR/TPR raise allowed per unit of raised true risk "
                         "(0 = FPR-/TPR-Scan)")
    ps.add_argument("--side", choices=("negative", "positive", "both"), default="both",
                    help="negative = rows with label 0 (FPR), positive = rows with label 1 (TPR)")
    ps.add_argument("--samples", type=int, default=200, metavar="N", action=_Spelled,
                    help="randomization replicates (draws) of the p-value")
    ps.add_argument("--replicates", type=int, dest="samples", action=_Deprecated, new="--samples")
    ps.add_argument("--top", metavar="K", type=_positive_int("--top", 1), default=1,
                    help="report the K worst subgroups of each scan: each next one found by rescanning "
                         "without the earlier ones' people, each with a family-wise p-value (the chance "
                         "that any of the K would score as high by chance)")
    ps.add_argument("--seed", type=_seed, default=0, help="PRNG seed")
    ps.add_argument("--out", metavar="DIR", help="optional directory for scan.json")
    ps.add_argument("--force", action="store_true", help="replace an existing --out folder")
    ps.add_argument("--quiet", action="store_true", help="print only the subgroups found")
    _sources.add_options(ps)

    # simulate ---------------------------------------------------------------------------------
    pm = sub.add_parser(
        "simulate", formatter_class=_Formatter,
        help="Monte Carlo of B and OFI under a null model for given group sizes",
        description=(
            "Draw confusion matrices under a null model and summarise B = (FP - FN)/n for each group\n"
            "size and OFI = B_i - B_j for two sizes, next to the exact values. Nulls: 'uniform' (every\n"
            "matrix of M(n) equally likely, the OFI paper's), 'multinomial' (cells drawn with the\n"
            "probabilities of --cm) or 'subsample' (rows drawn without replacement from --cm)."
        ),
    )
    pm.add_argument("--n", type=int, nargs="+", required=True, metavar="N",
                    help="group size(s): one size for B, two sizes (n_i n_j) for OFI as well")
    pm.add_argument("--null", choices=("uniform", "multinomial", "subsample"), default="uniform",
                    help="null model: uniform over M(n); Multinomial(n, --cm / sum); or n rows drawn "
                         "without replacement from the rows counted by --cm")
    pm.add_argument("--cm", type=float, nargs=4, metavar=("TP", "FN", "FP", "TN"),
                    help="reference confusion matrix (counts; probabilities for multinomial) of "
                         "--null multinomial / subsample")
    pm.add_argument("--samples", type=int, default=100_000, help="Monte Carlo draws")
    pm.add_argument("--seed", type=_seed, default=0, help="PRNG seed")
    pm.add_argument("--observed", type=_finite("--observed"), metavar="OFI",
                    help="an observed OFI (needs two sizes): its two-sided tail probability by Monte "
                         "Carlo (Wilson interval) and exactly through the p-value engine")
    pm.add_argument("--bins", type=int, default=400, metavar="B",
                    help="histogram bins where a lattice histogram (one bin per attainable value) "
                         "would exceed 20,001 points")
    pm.add_argument("--quantiles", type=float, nargs="+", metavar="Q",
                    help="quantile levels in (0, 1), each with a 95%% interval (default 0.025 0.975)")
    pm.add_argument("--out", metavar="DIR",
                    help="also write results.json (schema_version, settings, summaries, exact PMFs, "
                         "tails) and PNG plots of B and OFI (exact curve, the paper's ±0.3 band)")
    pm.add_argument("--force", action="store_true", help="replace an existing --out folder")

    # table1 -----------------------------------------------------------------------------------
    sub.add_parser("table1", help="the OFI paper's Table 1 recomputed by ofijax",
                   description="Print the OFI paper's Table 1 (Ricci v. DeStefano scenarios).")
    return parser


# ------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------


def _source(args, labels=()) -> tuple[Any, str, dict]:
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


def _require(args, defaults: dict, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(args, name) is None:
            if name in defaults:
                setattr(args, name, defaults[name])
            else:
                raise UserError(f"--{name}: required with --data (the column of {_WHAT[name]}).")


_WHAT = {"label": "true labels", "pred": "predictions", "group": "the sensitive attribute"}


def _lines(args) -> bool:
    """Whether the rows are a text file's lines (CSV/TSV; not Parquet, not embedded data)."""
    return bool(args.data) and not args.data.lower().endswith((".parquet", ".pq", ".parq"))


def _label_columns(args, *names) -> list[str]:
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


def _cmd_audit(args) -> int:
    from ofijax import __version__
    from ofijax.auditing import audit
    from ofijax.cli._batch import dispatch_batch
    from ofijax.cli._output import check_out_dir, start_hashing

    hashes = start_hashing(args.data)  # SHA-256 of the inputs, overlapping the audit (provenance)
    args.input_hashes = hashes
    if (rc := dispatch_batch(args, source=_source, prepare=prepare)) is not None:  # batch audit
        return rc
    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha: must lie strictly between 0 and 1; got {args.alpha}.")
    if not 0.0 < args.confidence < 1.0:
        raise UserError(f"--confidence: must lie strictly between 0 and 1; got {args.confidence}.")
    check_draws(args, "samples", "--samples", bootstrap=True)
    check_draws(args, "scan_samples", "--scan-samples")
    if args.lower_is_better and args.scoring_rate is None:
        raise UserError("--lower-is-better: only used with --scoring-rate COL.")
    if (args.label is None or args.scoring_rate is not None) and args.data and getattr(args, "engine", "auto") == "auto" \
            and os.path.isfile(args.data):
        args.engine = "pandas"  # label-free tables and the exact median of scores read the rows
    if _sources.use_stats(args):  # directories, globs, single files needing only counts, stream/spark
        try:
            return _sources.cmd_audit(args, _finish_audit)
        except _sources.RowsNeeded:  # --engine auto on one file: the rows word the input error
            args.engine = "pandas"
    attrs = None
    if not args.scan:
        if args.attr:
            raise UserError("--attr: only used with --scan.")
        if args.top != 1:
            raise UserError("--top: only used with --scan.")
    df, desc, defaults = _source(args, _label_columns(args, "group", *(("attr",) if args.scan else ())))
    if args.scoring_rate is not None or (args.label is None and "label" not in defaults):
        _require(args, defaults, ("group",) if args.scoring_rate is not None and args.pred is None
                 else ("pred", "group"))
        if args.label is None:  # label-free: impact ratios (and DI) only
            return _label_free_audit(args, df, desc, hashes)
        _require(args, defaults, ("label", "pred", "group"))
    else:
        _require(args, defaults, ("label", "pred", "group"))
    if args.scan:
        attrs = args.attr or (defaults.get("attr") if not args.data else None) or list(args.group)
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=args.group, positive=args.positive,
        dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=attrs, source=desc,
        threshold=args.threshold, lines=_lines(args),
    )
    scan_features = None
    if attrs:
        scan_features = _binned(prep["frame"][list(attrs)], args, "--attr")
    _binned(prep["sf"], args, "--group")  # the group columns' checks (audit repeats them), before --out
    check_out_dir(args.out, args.force)  # inputs first, then the output, then the work
    if prep["dropped"]:
        print(f"ofijax: note: dropped {prep['dropped']} row(s) with missing values (--dropna).", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        af = audit(
            args.seed, prep["y"], prep["yhat"], sensitive_features=prep["sf"], sample_weight=prep["w"],
            beneficial_label=0 if args.harmful_label else 1, alpha=args.alpha, null=args.null,
            method=args.method, correction=args.correction, confidence=args.confidence,
            num_samples=args.samples, di_variant=args.di_variant, bins=args.bins,
            max_levels=args.max_levels, scan=args.scan, scan_features=scan_features,
            scan_num_samples=args.scan_samples, scan_top_k=args.top,
        )
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"num_samples": option_name(args, "samples", "--samples"),
                               "scan_num_samples": option_name(args, "scan_samples", "--scan-samples")}
                         ) from None
    elapsed = time.perf_counter() - t0

    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": data_section(args, source=desc, rows=len(prep["y"]), dropped=prep["dropped"],
                             positive=prep["positive_map"], engine="pandas"),
        "seed": args.seed,
        **af.to_dict(),
    }
    from ofijax.cli._output import add_report_extras

    report = add_report_extras(report, args, impact=_impact_table(args, df), rows_read=len(df),
                               rows_used=len(prep["y"]), inputs=hashes)
    if args.weight:
        report["impact_ratios"]["weights"] = (f"not applied: the impact ratios count people (rows); the OFI "
                                              f"audit uses --weight {args.weight}")
    return _finish_audit(args, af, report, desc, len(prep["y"]), elapsed)


def _impact_table(args, df):
    """The impact-ratio tables of the rows read (rows dropped for OFI included; an empty group
    value is an unknown category), by selection (--pred) or --scoring-rate."""
    import numpy as np
    import pandas as pd

    from ofijax.auditing import impact_ratios

    groups = pd.DataFrame(index=df.index)
    for g in args.group:
        _check_column(df, g, "--group", "the data")
        col = df[g]
        if args.bins and pd.api.types.is_numeric_dtype(col) and col.nunique() > args.max_levels:
            known = col.notna()
            binned = _binned(df.loc[known, [g]], args, "--group")
            col = pd.Series(np.asarray(binned.iloc[:, 0], dtype=object), index=df.index[known]).reindex(df.index)
        groups[g] = col
    try:
        if args.scoring_rate is not None:
            _check_column(df, args.scoring_rate, "--scoring-rate", "the data")
            sc = pd.to_numeric(df[args.scoring_rate], errors="coerce")
            if sc.notna().sum() == 0:
                raise UserError(f"--scoring-rate: column {args.scoring_rate!r} holds no numeric scores.")
            return impact_ratios(scores=sc, sensitive_features=groups, lower_is_better=args.lower_is_better,
                                 exclude_small=not args.keep_small, alpha=args.alpha)
        pred = df[args.pred]
        known = pred.notna()
        yhat, _ = _to_binary(pred[known], "--pred", args.positive, args.threshold)
        sel = pd.Series(np.nan, index=df.index)
        sel[known] = (1 - yhat) if args.harmful_label else yhat
        return impact_ratios(sel, groups, exclude_small=not args.keep_small, alpha=args.alpha)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, UserError):
            raise
        raise as_option(exc, {"scores": "--scoring-rate", "y_pred": "--pred"}) from None


def _label_free_audit(args, df, desc: str, hashes) -> int:
    """``ofijax audit`` without --label: the impact-ratio tables (and DI in them), no OFI."""
    import numpy as np

    from ofijax import __version__
    from ofijax.auditing import impact_lines, render_html, to_jsonable
    from ofijax.cli._output import add_report_extras, check_out_dir

    if args.scan:
        raise UserError("--scan: the scans need true labels; pass --label COL.")
    if len(df) == 0:
        raise UserError(f"--data: {desc} has no rows.")
    t0 = time.perf_counter()
    table = _impact_table(args, df)
    check_out_dir(args.out, args.force)
    used = len(df) - int(table.attrs.get("unknown_outcome", 0))  # rows with a known prediction/score
    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": {**data_section(args, source=desc, rows=len(df), dropped=0, positive={}, engine="pandas")},
        "seed": args.seed,
        "notes": ["No --label: OFI (and its verdicts) needs true labels; this report gives the impact ratios "
                  "(the selection-rate ratios that DI and the four-fifths rule read) and their tests only."],
    }
    # DI between the groups of the audit (the --group columns' intersection): r_i / r_j
    last = table[table["attribute"] == table["attribute"].iloc[-1]] if len(table) else table
    rate = last.iloc[:, 4].to_numpy(dtype=float)  # selection_rate / scoring_rate
    with np.errstate(divide="ignore", invalid="ignore"):
        di = np.where(rate[None, :] > 0, rate[:, None] / rate[None, :], np.nan)
    report["groups"] = last["category"].tolist()
    report["group_columns"] = list(args.group)
    report["pairwise"] = {"di": di.tolist()}
    report = add_report_extras(report, args, impact=table, rows_read=len(df), rows_used=used, inputs=hashes)
    elapsed = time.perf_counter() - t0
    section = report["impact_ratios"]
    with report_dir(args.out, args.force) as tmp:
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable(report), fh, indent=2, allow_nan=False)
        md = ["# ofijax audit report (impact ratios)", "", f"- data: {desc}, {len(df)} rows",
              f"- command: `{report['command']}`", "", *(f"- {n}" for n in report["notes"]), "",
              *impact_lines(section, md=True)]
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(md) + "\n")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(to_jsonable(report)))
    if not args.quiet:
        print(f"ofijax audit of {desc}: {len(df)} rows, groups by {', '.join(args.group)}; no --label: "
              "impact ratios only (OFI needs labels)")
        print()
        print("\n".join(impact_lines(section, md=False)))
    print(f"\nWrote report.json, report.md, report.html to {args.out}/ ({elapsed:.1f} s).")
    return 0


def _finish_audit(args, af, report: dict, desc: str, rows: int, elapsed: float) -> int:
    """Write report.json, report.md, report.html and the heatmaps atomically into ``--out`` and print the summary
    (shared by the in-memory and the streaming/Spark audit)."""
    from ofijax.auditing import (
        impact_lines,
        render_html,
        render_report,
        to_jsonable,
        write_heatmaps,
    )

    written = ["report.json"]
    plot_note = None
    with report_dir(args.out, args.force) as tmp:
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable(report), fh, indent=2, allow_nan=False)
        images: list[str] = []
        if not args.no_plots:
            try:
                images, plot_note = write_heatmaps(af, tmp)
            except (ValueError, RuntimeError) as exc:  # matplotlib failures: name the way out
                raise UserError(f"--no-plots: drawing the heatmaps failed ({str(exc).splitlines()[0]}); "
                                "pass --no-plots to write the report without them.") from None
        written += images
        md = render_report(af, "markdown", header=audit_header(report), images=images,
                           notes=[plot_note] if plot_note else [])
        if report.get("impact_ratios"):
            md += "\n" + "\n".join(impact_lines(report["impact_ratios"], md=True)) + "\n"
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as fh:
            fh.write(md)
        written.append("report.md")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(to_jsonable(report)))
        written.append("report.html")

    if args.quiet:
        for r in af.pairs["reading"]:
            print(r)
    else:
        print(f"ofijax audit of {desc}: {rows} rows, groups by {', '.join(args.group)}, "
              f"label {args.label!r}, prediction {args.pred!r}")
        print()
        print(af.summary())
    if plot_note:
        print(f"ofijax: note: {plot_note}", file=sys.stderr)
    print(f"\nWrote {', '.join(written)} to {args.out}/ ({elapsed:.1f} s).")
    return 0


def _binned(frame, args, option: str):
    """The attribute columns, binned as --bins/--max-levels say (refused when continuous)."""
    from ofijax.auditing import bin_features

    try:
        binned, _ = bin_features(frame, bins=args.bins, max_levels=args.max_levels)
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"sensitive_features": option}) from None
    return binned


def _cmd_scan(args) -> int:
    if args.lam < 0:
        raise UserError(f"--lam: must be ≥ 0; got {args.lam}.")
    check_draws(args, "samples", "--samples")
    if _sources.use_stats(args):  # directories, globs, --engine stream/spark (issue 15)
        return _sources.cmd_scan(args)
    df, desc, defaults = _source(args, _label_columns(args, "attr"))
    _require(args, defaults, ("label", "pred"))
    if args.attr is None:
        if "attr" not in defaults:
            raise UserError("--attr: required with --data (the columns to scan over; alias --group).")
        args.attr = defaults["attr"]
    if args.prob:
        _check_column(df, args.prob, "--prob", desc)
    extra = list(args.attr) + ([args.prob] if args.prob else [])
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=[], positive=args.positive,
        dropna=args.dropna, weight=None, extra=extra, source=desc, min_groups=0,
        threshold=args.threshold, lines=_lines(args),
    )
    if args.out:
        from ofijax.cli._output import check_out_dir

        check_out_dir(args.out, args.force)  # inputs first, then the output
    import jax

    from ofijax.auditing import run_scans, scan_lines

    frame = prep["frame"]
    from ofijax.auditing import bin_features

    try:  # the one binning rule (bins and their edges), as the stream and Spark engines apply it
        attrs, edges = bin_features(frame[list(args.attr)], bins=args.bins,
                                    max_levels=args.max_levels)
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"sensitive_features": "--attr"}) from None
    beneficial = 0 if args.harmful_label else 1
    prob = None
    notes = []
    if args.prob:
        prob = frame[args.prob].to_numpy(dtype=float)
    elif args.lam > 0:
        from ofijax.scan import estimate_true_probabilities

        prob = estimate_true_probabilities(attrs, prep["y"])
        notes.append("P(label | attributes) estimated in sample by logistic regression on the --attr "
                     "columns (as the IJDI paper); pass --prob to use your own estimate.")
    if not args.quiet:
        print(_sources.scan_header(args, desc, len(prep["y"]), "pandas"), flush=True)
    try:
        res = run_scans(
            jax.random.key(args.seed), prep["y"], prep["yhat"], attrs, beneficial_label=beneficial,
            probabilities=prob, lam=args.lam, num_samples=args.samples, side=args.side,
            rate_scans=args.lam == 0 or prob is None, top_k=args.top,
        )
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"data": "--attr", "p_true": "--prob", "lam": "--lam",
                               "num_samples": option_name(args, "samples", "--samples"),
                               "scan_probabilities": "--prob"}) from None
    print("\n".join(line[4:] for line in scan_lines(res)))  # "name: ..." and "  #j: ..." lines
    if not args.quiet:
        for n in notes:
            print(f"Note: {n}")
    if args.out:
        _sources.write_scan_report(args, desc=desc, rows=len(prep["y"]), res=res, notes=notes,
                                   edges=edges, engine="pandas")
        if not args.quiet:
            print(f"Wrote scan.json, scan.md, report.html to {args.out}/")
    return 0


def _cmd_simulate(args) -> int:
    if any(n < 1 for n in args.n):
        raise UserError(f"--n: group sizes must be ≥ 1; got {args.n}.")
    if len(args.n) > 2:
        raise UserError(f"--n: give one size (B) or two sizes (OFI); got {len(args.n)}.")
    if args.samples < 1:
        raise UserError(f"--samples: must be ≥ 1; got {args.samples}.")
    if args.null != "uniform":
        if args.cm is None:
            raise UserError(f"--cm: --null {args.null} needs a reference confusion matrix TP FN FP TN.")
        if min(args.cm) < 0 or sum(args.cm) <= 0:
            raise UserError(f"--cm: needs non-negative values with a positive sum; got {args.cm}.")
        if args.null == "subsample":
            if any(x != round(x) for x in args.cm):
                raise UserError(f"--cm: --null subsample needs whole counts; got {args.cm}.")
            if max(args.n) > sum(args.cm):
                raise UserError(f"--n: cannot draw {max(args.n)} rows without replacement from {int(sum(args.cm))}.")
    elif args.cm is not None:
        raise UserError("--cm: only used with --null multinomial or subsample.")
    if args.bins < 1:
        raise UserError(f"--bins: must be ≥ 1; got {args.bins}.")
    from ofijax.cli._output import check_out_dir
    from ofijax.cli._simulate import format_report, simulate_run, write_results

    if args.out:
        check_out_dir(args.out, args.force)
    res = simulate_run(args.n, null=args.null, cm=args.cm, num_samples=args.samples, seed=args.seed,
                       observed=args.observed, bins=args.bins, quantiles=args.quantiles)
    text = format_report(res)
    if args.out:
        names = write_results(res, args.out, args.force)
        text += f"\nwrote {', '.join(names)} to {args.out}"
    print(text)
    return 0


def _cmd_table1(args) -> int:
    from ofijax.cli._table1 import table1_report

    print(table1_report())
    return 0


_COMMANDS = {"audit": _cmd_audit, "scan": _cmd_scan, "simulate": _cmd_simulate, "table1": _cmd_table1}


def main(argv: list[str] | None = None) -> int:
    """Run the ``ofijax`` command line; returns the exit status.

    With no arguments it prints the help. Every error in the user's input is one line on stderr
    and exit status 2, with nothing written.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except UserError as exc:
        cmd = argv[0] if argv[0] in _COMMANDS else None
        msg = str(exc).strip().replace("\n", " ")
        if msg.startswith("argument "):  # argparse's "argument --x: --x: ..." → "--x: ..."
            opt, _, rest = msg[len("argument "):].partition(": ")
            first = opt.split("/")[0]
            msg = rest if rest.startswith(first) else f"{first}: {rest}"
        print(f"ofijax{' ' + cmd if cmd else ''}: error: {msg} (see ofijax {cmd + ' ' if cmd else ''}--help)",
              file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    args.argv = argv
    try:
        rc = _COMMANDS[args.command](args)
        for note in getattr(args, "deprecated", None) or []:  # after the work: errors stay one line
            print(f"ofijax: note: {note}", file=sys.stderr)
        return rc
    except (UserError, ValueError, TypeError, FileNotFoundError) as exc:
        msg = str(exc).strip().replace("\n", " ")
        print(f"ofijax {args.command}: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:
        print(f"ofijax {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ofijax {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("ofijax: interrupted", file=sys.stderr)
        return 130
