"""``ofijax audit|scan --data DIR_OR_GLOB`` beyond memory: streaming and Spark engines.

``--engine auto`` (default) streams when ``--data`` is a directory or a glob pattern, and a single
file when ``ofijax audit`` needs only counts (see :func:`use_stats`; an option that needs the rows
loads it with pandas); ``--engine stream`` always streams (Arrow record batches,
bounded memory, progress of rows done); ``--engine spark`` aggregates inside Apache Spark
(``--spark-master``, default ``local[*]``; needs ``ofijax[spark]``). Both compute the additive
statistics of :mod:`ofijax.stats` and then the same report as the in-memory path. Bad input
anywhere in the data (a missing or duplicated column, a missing group value, a non-binary label)
is one line on stderr naming the file and the line (CSV) or the 0-based row (Parquet), exit
status 2, and no report file is written.

Every engine reads the same values: group and attribute columns as the strings in the file
(``"01"``, ``"1"`` and ``"1.0"`` are three groups; parts typed differently merge), and one
missing-value rule: an empty field (a null/NaN in Parquet) is missing, any other text (``"NA"``
included) is a label unless named by ``--na-values``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from ofijax.auditing.reporting import to_jsonable
from ofijax.cli._output import BATCH_ROWS, CLIError

__all__ = ["add_options", "use_stats", "cmd_audit", "cmd_scan", "file_header", "unique_columns",
           "needs_rows", "RowsNeeded", "scan_cells_binned", "write_scan_report", "scan_header"]

def add_options(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--spark-master`` and ``--batch-size`` for ``audit`` and ``scan``."""
    g = p.add_argument_group("larger than memory")
    g.add_argument("--engine", choices=("auto", "pandas", "stream", "spark"), default="auto",
                   help="how --data is read: 'pandas' loads one file into memory; 'stream' reads "
                        "Parquet/CSV files (a file, directory or glob such as 'data/*.parquet') as "
                        "Arrow batches with bounded memory; 'spark' aggregates in Apache Spark; "
                        "'auto' streams directories and globs, and a single file when the audit "
                        "needs only counts (pandas when an option needs the rows: --positive, "
                        "--dropna, --weight, --threshold, --groups, --bins, --scan; and for ofijax "
                        "scan); every engine gives the same report")
    g.add_argument("--spark-master", default="local[*]", metavar="URL",
                   help="Spark master for --engine spark")
    g.add_argument("--batch-size", type=int, default=BATCH_ROWS, metavar="ROWS",
                   help="rows per Arrow batch for --engine stream")


def use_stats(args: Any) -> bool:
    """Whether this invocation goes through the statistics path.

    ``--engine auto`` (the default) streams directories and globs, and streams a single file too
    when ``ofijax audit`` needs only counts (a large file is read in batches, not whole);
    an option that needs the rows (``--positive``, ``--dropna``, ``--weight``, ``--threshold``,
    ``--groups``, ``--bins``, ``--scan``) or a Parquet categorical group column (whose declared
    but empty categories the in-memory audit reports) loads the file with pandas. Both give the
    same report (``data.engine`` says which ran)."""
    engine = getattr(args, "engine", "auto")
    if engine in ("stream", "spark"):
        return True
    if engine == "pandas" or not getattr(args, "data", None):
        return False
    d = args.data
    if os.path.isdir(d) or any(ch in d for ch in "*?["):
        args.engine = "stream"  # what ran, for the report and the messages
        return True
    if args.command != "audit" or not os.path.isfile(d) or needs_rows(args):
        return False
    if d.lower().endswith((".parquet", ".pq", ".parq")):
        try:
            import pyarrow.parquet as pq

            schema = pq.read_schema(d)
        except Exception:  # noqa: BLE001 - the pandas reader words the error
            return False
        import pyarrow as pa

        for c in args.group or []:
            if c in schema.names and pa.types.is_dictionary(schema.field(c).type):
                return False
    elif not d.lower().endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")):
        return False
    args.engine = "stream"  # what ran, for the report and the messages
    args.auto_file = True  # an input error: the pandas engine reads the rows and words it
    return True


class RowsNeeded(Exception):
    """``--engine auto`` streamed a single file and met an input error: the pandas engine reads
    the rows and words the error as it always has (naming the option and the fix), or, where it
    reads the rows after all, audits them."""


def needs_rows(args: Any) -> list[str]:
    """The options of this ``ofijax audit`` that need the rows in memory (pandas engine)."""
    used = []
    for opt, dest in (("--positive", "positive"), ("--dropna", "dropna"), ("--weight", "weight"),
                      ("--groups", "groups"), ("--bins", "bins"), ("--scan", "scan")):
        if getattr(args, dest, None):
            used.append(opt)
    if getattr(args, "threshold", None) is not None:
        used.append("--threshold")
    if not args.group or not args.label or not args.pred:
        used.append("default columns")
    return used


def file_header(path: str) -> list[str]:
    """The column names of a CSV/TSV (first line) or Parquet file (its schema)."""
    low = path.lower()
    if low.endswith((".parquet", ".pq", ".parq")):
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # noqa: BLE001 - one line naming the file
            raise ValueError(f"--data: cannot read {path!r} as Parquet ({exc}).") from None
    import csv
    import gzip

    opener = gzip.open if low.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as fh:
            return next(csv.reader(fh, delimiter="\t" if low.endswith((".tsv", ".tsv.gz", ".tab"))
                                   else ","), [])
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as exc:
        raise ValueError(f"--data: cannot read {path!r} as a table ({exc}).") from None


def unique_columns(names: list, path: str) -> None:
    """Refuse a file that names a column twice (every engine does, naming --data and the file)."""
    seen: set = set()
    for c in names:
        if c in seen:
            raise CLIError(f"--data: file {path!r} has two columns named {c!r}; rename one (every "
                             "column name must be unique).")
        seen.add(c)


#: Column names an error about a file's missing column lists (the first ones).
COLUMNS_SHOWN = 30


def _fail(msg: str):
    raise ValueError(msg)  # the command line prints it in one line and exits 2


def _check_common(args: Any, needed: tuple) -> None:
    if not args.data:
        _fail(f"--engine: {args.engine!r} needs --data (a Parquet/CSV file, directory or glob).")
    for name in needed:
        if getattr(args, name, None) is None:
            _fail(f"--{name}: required with --data.")
    if getattr(args, "positive", None):
        _fail("--positive: not supported when streaming; store labels and predictions as 0/1, or "
              "pass --engine pandas.")
    if getattr(args, "dropna", False):
        _fail("--dropna: not supported when streaming; drop missing rows before writing the files, "
              "or pass --engine pandas.")
    if getattr(args, "weight", None):
        _fail("--weight: sample weights are not supported when streaming; pass --engine pandas.")
    if getattr(args, "threshold", None) is not None:
        _fail("--threshold: not supported when streaming; store 0/1 predictions, or pass "
              "--engine pandas.")
    if args.batch_size < 1:
        _fail(f"--batch-size: must be ≥ 1; got {args.batch_size}.")
    if args.engine == "spark" and not args.spark_master:
        _fail("--spark-master: give a master URL, e.g. local[*].")


def _files(args: Any, columns: list) -> tuple[list[str], str]:
    """The files of --data, each checked for duplicated and missing columns (cheap: headers)."""
    from ofijax.stats import resolve_files

    files, fmt = resolve_files(args.data, "--data")
    for f in files:
        names = file_header(f)
        unique_columns(names, f)
        missing = [c for c in columns if c not in names]
        if missing:
            opt = _option_of(args, missing[0])
            _fail(f"--data: file {f!r} has no column {missing[0]!r} ({opt}); columns: "
                  f"{', '.join(map(str, names[:COLUMNS_SHOWN]))}; every file must hold the columns named.")
    return files, fmt


def _option_of(args: Any, col: str) -> str:
    for opt, dest in (("--label", "label"), ("--pred", "pred"), ("--group", "group"),
                      ("--attr", "attr")):
        v = getattr(args, dest, None)
        if col == v or (isinstance(v, list) and col in v):
            return opt
    return "--data"


def _spark_frame(args: Any, files: list, fmt: str, labels: list, numeric: list):
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
    except ImportError:
        raise ImportError("--engine spark needs pyspark: pip install 'ofijax[spark]'.") from None
    spark = (SparkSession.builder.master(args.spark_master).appName("ofijax")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    na = list(args.na_values or [])
    files = [os.path.abspath(f) for f in files]  # the JVM's working folder may differ from ours
    if fmt == "csv":  # every field as its text (no inference): labels stay "01"; "" is null
        sep = "\t" if files[0].lower().endswith((".tsv", ".tsv.gz", ".tab")) else ","
        # quote = escape = '"': a quote inside a quoted field is doubled (RFC 4180, as pandas
        # and pyarrow write and read it; Spark's default escape is a backslash)
        df = spark.read.csv(files, header=True, inferSchema=False, sep=sep, quote='"', escape='"')
        for c in dict.fromkeys(labels + numeric):  # "" (a quoted empty field too) and --na-values
            df = df.withColumn(c, F.when(F.col(c).isin("", *na), F.lit(None)).otherwise(F.col(c)))
        return df
    import pyarrow.parquet as pq

    kinds = {c: {str(pq.read_schema(f).field(c).type) for f in files} for c in labels}
    if all(len(k) == 1 for k in kinds.values()):
        return spark.read.parquet(*files)
    parts = []  # parts typed differently: each label column as Arrow's text of it, then one union
    for f in files:
        d = spark.read.parquet(f).select(*dict.fromkeys(labels + numeric))
        for c in labels:
            t = dict(d.dtypes)[c]
            col = F.col(c)
            if t in ("float", "double"):
                col = F.when(F.isnan(col), F.lit(None)).otherwise(col)
                col = F.when(col == F.floor(col), col.cast("long").cast("string")).otherwise(
                    col.cast("string"))
            d = d.withColumn(c, col.cast("string"))
        parts.append(d)
    out = parts[0]
    for d in parts[1:]:
        out = out.unionByName(d)
    return out


def _statistics(args: Any, files: list, fmt: str, *, group, attrs, beneficial: int):
    from ofijax import stats

    labels = list(dict.fromkeys((group or []) + (attrs or [])))
    numeric = [args.label, args.pred]
    try:
        if args.engine == "spark":
            import warnings

            with warnings.catch_warnings():  # pyspark's own notes (e.g. on the pandas version)
                for kind in (UserWarning, FutureWarning):
                    warnings.filterwarnings("ignore", category=kind, module=r"pyspark(\.|$)")
                return stats.from_spark(_spark_frame(args, files, fmt, labels, numeric),
                                        label=args.label, pred=args.pred, group=group, attrs=attrs,
                                        beneficial_label=beneficial, as_strings=True,
                                        na_values=args.na_values)
        return stats.collect(files, label=args.label, pred=args.pred, group=group,
                             attrs=attrs, beneficial_label=beneficial, batch_size=args.batch_size,
                             as_strings=True, na_values=args.na_values)
    except (ValueError, FileNotFoundError) as exc:
        msg = str(exc)
        _fail("--data: " + msg[len("data: "):] if msg.startswith("data: ") else msg)


def run_scans(key, cells, beneficial: int, num_samples: int, side: str = "both",
              top_k: int = 1) -> dict:
    """FPR-/TPR-Scan from cell statistics: :func:`ofijax.auditing.run_scans` with ``cells=``, the
    output (fields, sizes, rates, words, ``top``) of the in-memory ``audit(scan=True)``."""
    from ofijax.auditing import run_scans as scans

    return scans(key, cells=cells, beneficial_label=beneficial, num_samples=num_samples,
                 side=side, top_k=top_k)


def cmd_audit(args: Any, finish) -> int:
    """``ofijax audit`` through the statistics path; ``finish(args, af, report, desc, rows, elapsed)``
    (passed in by ``_audit_cmd``, which has checked the options common to every engine) writes
    the report exactly as the in-memory path does."""
    import jax

    from ofijax import stats
    from ofijax.cli._output import check_out_dir

    _check_common(args, ("label", "pred", "group"))
    if args.groups:
        _fail("--groups: not supported when streaming; filter the files first, or pass "
              "--engine pandas.")
    attrs = (args.attr or list(args.group)) if args.scan else None
    beneficial = 0 if args.harmful_label else 1
    group = list(args.group)
    t0 = time.perf_counter()
    try:
        files, fmt = _files(args, list(dict.fromkeys(group + (attrs or []) + [args.label, args.pred])))
        st = _statistics(args, files, fmt, group=group, attrs=attrs, beneficial=beneficial)
        _check_groups(args, st.counts)
    except ValueError:
        if getattr(args, "auto_file", False):
            raise RowsNeeded() from None
        raise
    scan_cells = scan_cells_binned(args, st.cells)[0] if args.scan else None  # --max-levels
    check_out_dir(args.out, args.force)  # inputs (files, columns, values) first, then the output
    from ofijax._validation import as_key

    key = as_key(args.seed)  # the in-memory audit's seed → key rule
    from ofijax.cli._output import as_option, option_name

    try:
        af = stats.audit_counts(
            key, st.counts, alpha=args.alpha, null=args.null, method=args.method,
            correction=args.correction, confidence=args.confidence, num_samples=args.samples,
            di_variant=args.di_variant, beneficial_label=beneficial)
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"num_samples": option_name(args, "samples", "--samples")}) from None
    if args.scan:
        k_scan = jax.random.split(key, 3)[2]
        af = af._replace(scan=run_scans(k_scan, scan_cells, beneficial, int(args.scan_samples),
                                        top_k=args.top),
                         settings={**af.settings, "scan_num_samples": int(args.scan_samples),
                                   "scan_top_k": int(args.top)})  # as audit(scan=True) records them
    elapsed = time.perf_counter() - t0
    from ofijax import __version__
    from ofijax.cli._output import data_section

    desc = repr(args.data)
    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(getattr(args, "argv", [])),
        "data": data_section(args, source=desc, rows=st.rows, dropped=0, positive={},
                             engine=args.engine),
        "seed": args.seed,
        **af.to_dict(),
    }
    # impact ratios from the exact group counts (each column alone sums the intersections; the
    # streaming engines refuse missing group values, so no category is unknown here)
    import numpy as np

    from ofijax.auditing import impact_from_counts
    from ofijax.cli._output import add_report_extras

    cms = np.asarray(st.counts.cms, dtype=np.int64)
    impact = impact_from_counts(st.counts.groups, st.counts.names, cms.sum(1), cms[:, 0] + cms[:, 2],
                                exclude_small=not getattr(args, "keep_small", False), alpha=args.alpha)
    if getattr(args, "scoring_rate", None) is not None:  # two more passes: the exact median, counts above
        from ofijax.auditing.reporting import scoring_from_batches
        from ofijax.cli._output import score_batches

        try:
            impact = scoring_from_batches(
                lambda: score_batches(files, fmt, group, args.scoring_rate, na_values=args.na_values,
                                      batch_size=args.batch_size),
                group, args.scoring_rate, lower_is_better=args.lower_is_better,
                exclude_small=not args.keep_small, alpha=args.alpha)
        except ValueError as exc:
            if isinstance(exc, CLIError):
                raise
            raise as_option(exc, {"scores": "--scoring-rate"}) from None
    hashes = getattr(args, "input_hashes", None)
    report = add_report_extras(report, args, impact=impact, rows_read=st.rows, rows_used=st.rows,
                               inputs=hashes)
    return finish(args, af, report, desc, int(st.rows), elapsed)


def _check_groups(args: Any, counts) -> None:
    """At least two groups, and each group column checked by the pandas engine's one rule
    (:func:`ofijax.auditing.bin_features`: a continuous or high-cardinality column is refused with
    the same words); a column that ``--bins`` would cut is refused naming ``--bins`` (the counts
    path has no bins for the audit's groups; the --attr columns of ``--scan`` are binned from their
    cells)."""
    import numpy as np
    import pandas as pd

    from ofijax.auditing import bin_features
    from ofijax.cli._output import as_option

    if len(counts.groups) < 2:
        _fail(f"--group: only one group ({counts.groups[0]!r}) is present; an audit compares "
              "at least two.")
    for j, name in enumerate(counts.names):
        vals = sorted({g[j] if isinstance(g, tuple) else g for g in counts.groups}, key=str)
        try:
            _, edges = bin_features(pd.DataFrame({name: np.asarray(vals, dtype=object)}), bins=args.bins,
                                    max_levels=args.max_levels)
        except (ValueError, TypeError) as exc:
            raise as_option(exc, {"sensitive_features": "--group"}) from None
        if edges:
            _fail(f"--bins: the --group column {name!r} has {len(vals)} distinct values, which --bins "
                  f"{args.bins} cuts into quantile bins of the rows; with --engine {args.engine} only the "
                  "--attr columns of --scan are binned: pass --engine pandas, or store a binned group "
                  "column.")


def scan_cells_binned(args: Any, cells, option: str = "--attr"):
    """The attribute values of cell statistics checked and binned as ``--bins`` / ``--max-levels``
    say, by the one rule of the pandas engine (:func:`ofijax.auditing.bin_features` with the
    cells' counts: the quantile bins of the rows they count): ``(cells, {column: edges})``."""
    import numpy as np
    import pandas as pd

    from ofijax.auditing import bin_features
    from ofijax.cli._output import as_option

    frame = pd.DataFrame({c: np.asarray(v, dtype=object) for c, v in zip(cells.columns, cells.values)})
    try:
        binned, edges = bin_features(frame, bins=args.bins, max_levels=args.max_levels,
                                     counts=np.asarray(cells.n, np.int64))
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"sensitive_features": option}) from None
    if not edges:
        return cells, {}
    values = tuple(np.asarray(binned[c], dtype=object) for c in cells.columns)
    return cells._replace(values=values), edges


def write_scan_report(args: Any, *, desc: str, rows: int, res: dict, notes: list, edges: dict,
                      engine: str) -> None:
    """scan.json, scan.md and the self-contained report.html in ``--out``: one schema whatever the
    engine (pandas, stream, spark); scan.json carries ``schema_version`` and ``provenance`` (the
    audit's: versions, command, seed, input files with SHA-256, rows, date)."""
    from ofijax.auditing.reporting import render_html, scan_lines
    from ofijax.cli._output import add_report_extras, report_dir, start_hashing

    hashes = start_hashing(getattr(args, "data", None))
    report = add_report_extras({"data": desc, "engine": engine, "rows": int(rows),
                                "attributes": list(args.attr), "lam": args.lam,
                                "seed": args.seed, "num_samples": args.samples,
                                "top_k": args.top, "bins": edges, "results": res,
                                "notes": notes}, args, rows_read=int(rows), rows_used=int(rows),
                               inputs=hashes)
    page = render_html({"data": {"source": desc, "rows": int(rows), "group": list(args.attr),
                                 "label": args.label, "pred": args.pred},
                        "scan": res, "notes": notes, "provenance": report["provenance"],
                        "schema_version": report["schema_version"], "kind": "scan"},
                       title="ofijax scan report")
    with report_dir(args.out, args.force) as tmp:
        with open(os.path.join(tmp, "scan.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable(report), fh, indent=2, allow_nan=False)
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(page)
        with open(os.path.join(tmp, "scan.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(["# ofijax scan report", "", f"- data: {desc}, {rows} rows",
                                 f"- attributes: {', '.join(map(str, args.attr))}",
                                 f"- command: `ofijax {' '.join(getattr(args, 'argv', []))}`", "",
                                 "## Worst subgroups", "", *scan_lines(res, md=True),
                                 *(["", "## Notes", ""] + [f"- {n}" for n in notes] if notes else [])])
                     + "\n")


def scan_header(args: Any, desc: str, rows: int, engine: str) -> str:
    """The first line ``ofijax scan`` prints (every engine)."""
    return (f"ofijax scan of {desc} ({engine} engine): {rows:,} rows, attributes "
            f"{', '.join(map(str, args.attr))}; {args.samples} randomization replicates per scan"
            + (f"; top {args.top} subgroups per scan" if args.top > 1 else ""))


def cmd_scan(args: Any) -> int:
    """``ofijax scan`` (FPR-/TPR-Scan) through the statistics path: the options, output and
    scan.json/scan.md of the pandas engine (``--top``, ``--bins``, ``--max-levels``, ``--side``,
    ``--out``/``--force``), from cell statistics."""
    import jax

    from ofijax.auditing import run_scans
    from ofijax.auditing.reporting import scan_lines

    _check_common(args, ("label", "pred", "attr"))
    if args.lam != 0 or args.prob:
        _fail("--lam: IJDI-Scan (--lam > 0, --prob) needs rows; run it with --engine pandas on a "
              "sample, or FPR-/TPR-Scan (--lam 0) on the whole data.")
    beneficial = 0 if args.harmful_label else 1
    attrs = list(args.attr)
    files, fmt = _files(args, list(dict.fromkeys(attrs + [args.label, args.pred])))
    st = _statistics(args, files, fmt, group=None, attrs=attrs, beneficial=beneficial)
    cells, edges = scan_cells_binned(args, st.cells)
    if args.out:
        from ofijax.cli._output import check_out_dir

        check_out_dir(args.out, args.force)  # inputs (files, columns, values) first, then the output
    desc = repr(args.data)
    if not args.quiet:
        print(scan_header(args, desc, st.rows, args.engine), flush=True)
    res = run_scans(jax.random.key(args.seed), cells=cells, beneficial_label=beneficial,
                    num_samples=int(args.samples), side=args.side, top_k=args.top)
    print("\n".join(line[4:] for line in scan_lines(res)))  # "name: ..." and "  #j: ..." lines
    if args.out:
        write_scan_report(args, desc=desc, rows=st.rows, res=res, notes=[], edges=edges,
                          engine=args.engine)
        if not args.quiet:
            print(f"Wrote scan.json, scan.md, report.html to {args.out}/")
    return 0
