"""``ofijax audit|scan --data DIR_OR_GLOB`` beyond memory: streaming and Spark engines.

``--engine auto`` (default) streams when ``--data`` is a directory or a glob pattern (and loads a
single file into memory as before); ``--engine stream`` always streams (Arrow record batches,
bounded memory, progress of rows done); ``--engine spark`` aggregates inside Apache Spark
(``--spark-master``, default ``local[*]``; needs ``ofijax[spark]``). Both compute the additive
statistics of :mod:`ofijax.stats` and then the same report as the in-memory path. Bad input
anywhere in the data (a missing column, a missing group value, a non-binary label) is one line on
stderr naming the file, batch and row, exit status 2, and no report file is written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import Any

from ofijax.auditing import format_p, to_jsonable

__all__ = ["add_options", "use_stats", "cmd_audit", "cmd_scan"]

_SCAN_TEXT = {
    "fpr_scan": ("negative", "wrongly denied the benefit: raised rate of the harmful prediction among "
                 "people whose true outcome is beneficial (FPR-Scan in the harm orientation, i.e. a "
                 "raised false-negative rate of the beneficial prediction)"),
    "tpr_scan": ("positive", "least often given an unjust benefit: raised rate of the harmful "
                 "prediction among people whose true outcome is harmful (TPR-Scan in the harm "
                 "orientation)"),
}


def add_options(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--spark-master`` and ``--batch-size`` for ``audit`` and ``scan``."""
    g = p.add_argument_group("larger than memory")
    g.add_argument("--engine", choices=("auto", "pandas", "stream", "spark"), default="auto",
                   help="how --data is read: 'pandas' loads one file into memory; 'stream' reads "
                        "Parquet/CSV files (a file, directory or glob such as 'data/*.parquet') as "
                        "Arrow batches with bounded memory; 'spark' aggregates in Apache Spark; "
                        "'auto' streams directories and globs and loads single files")
    g.add_argument("--spark-master", default="local[*]", metavar="URL",
                   help="Spark master for --engine spark")
    g.add_argument("--batch-size", type=int, default=1 << 20, metavar="ROWS",
                   help="rows per Arrow batch for --engine stream")


def use_stats(args: Any) -> bool:
    """Whether this invocation goes through the statistics path."""
    engine = getattr(args, "engine", "auto")
    if engine in ("stream", "spark"):
        return True
    if engine == "pandas" or not getattr(args, "data", None):
        return False
    d = args.data
    return os.path.isdir(d) or any(ch in d for ch in "*?[")


def _fail(msg: str):
    raise ValueError(msg)  # the command line prints it in one line and exits 2


def _check_common(args: Any, needed: tuple) -> None:
    if not args.data:
        _fail(f"--engine: {args.engine!r} needs --data (a Parquet/CSV file, directory or glob).")
    for name in needed:
        if getattr(args, name, None) is None:
            _fail(f"--{name}: required with --data.")
    if getattr(args, "positive", None):
        _fail("--positive: not supported when streaming; store labels and predictions as 0/1.")
    if getattr(args, "dropna", False):
        _fail("--dropna: not supported when streaming; drop missing rows before writing the files.")
    if getattr(args, "weight", None):
        _fail("--weight: sample weights are not supported when streaming.")
    if args.batch_size < 1:
        _fail(f"--batch-size: must be ≥ 1; got {args.batch_size}.")
    if args.engine == "spark" and not args.spark_master:
        _fail("--spark-master: give a master URL, e.g. local[*].")


def _spark_frame(args: Any):
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ImportError("--engine spark needs pyspark: pip install 'ofijax[spark]'.") from None
    from ofijax.stats import resolve_files

    files, fmt = resolve_files(args.data, "--data")
    spark = (SparkSession.builder.master(args.spark_master).appName("ofijax")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    if fmt == "parquet":
        return spark.read.parquet(*files)
    return spark.read.csv(files, header=True, inferSchema=True)


def _statistics(args: Any, *, group, attrs, beneficial: int):
    from ofijax import stats

    try:
        if args.engine == "spark":
            return stats.from_spark(_spark_frame(args), label=args.label, pred=args.pred,
                                    group=group, attrs=attrs, beneficial_label=beneficial)
        return stats.collect(args.data, label=args.label, pred=args.pred, group=group,
                             attrs=attrs, beneficial_label=beneficial, batch_size=args.batch_size)
    except (ValueError, FileNotFoundError) as exc:
        msg = str(exc)
        _fail("--data: " + msg[len("data: "):] if msg.startswith("data: ") else msg)


def run_scans(key, cells, beneficial: int, num_replicates: int, side: str = "both") -> dict:
    """FPR-/TPR-Scan from cell statistics in the harm orientation (as ``audit(scan=True)``)."""
    import jax

    from ofijax import stats

    harm = cells.flip() if beneficial == 1 else cells
    runs = [(name, sd) for name, (sd, _) in _SCAN_TEXT.items() if side in (sd, "both")]
    keys = jax.random.split(key, len(runs))
    out = {}
    for (name, sd), k in zip(runs, keys):
        fn = stats.fpr_scan_cells if name == "fpr_scan" else stats.tpr_scan_cells
        r = fn(harm, key=k, num_replicates=num_replicates, beneficial_label=0)
        what = _SCAN_TEXT[name][1]
        sub = {str(c): [to_jsonable(x) for x in vals] for c, vals in r.subset.items()}
        sub_txt = " and ".join(f"{c} in {{{', '.join(map(str, v))}}}" for c, v in sub.items())
        p_txt = ("no randomization test" if math.isnan(r.p_value)
                 else f"p = {format_p(r.p_value)} ({num_replicates} replicates)")
        desc = (f"{sub_txt} ({r.size} rows): {what}; odds x{r.q:.2f}, score {r.score:.2f}, {p_txt}"
                if r.score > 0 else f"no subgroup detected ({what})")
        out[name] = {
            "side": sd, "subgroup": sub, "size": int(r.size), "score": float(r.score),
            "q": float(r.q), "p_value": float(r.p_value), "num_replicates": num_replicates,
            "converged": bool(r.converged), "description": desc,
        }
    return out


def cmd_audit(args: Any, finish) -> int:
    """``ofijax audit`` through the statistics path; ``finish(args, af, report, desc, rows, elapsed)``
    (passed in by ``_main``) writes the report exactly as the in-memory path does."""
    import jax

    from ofijax import stats

    _check_common(args, ("label", "pred", "group"))
    if args.groups:
        _fail("--groups: not supported when streaming; filter the files first.")
    if not 0.0 < args.alpha < 1.0:
        _fail(f"--alpha: must lie strictly between 0 and 1; got {args.alpha}.")
    if not 0.0 < args.confidence < 1.0:
        _fail(f"--confidence: must lie strictly between 0 and 1; got {args.confidence}.")
    if args.bootstrap < 0 or args.bootstrap == 1:
        _fail(f"--bootstrap: must be 0 (skip) or at least 2; got {args.bootstrap}.")
    attrs = (args.attr or list(args.group)) if args.scan else None
    if args.attr and not args.scan:
        _fail("--attr: only used with --scan.")
    beneficial = 0 if args.harmful_label else 1
    t0 = time.perf_counter()
    st = _statistics(args, group=list(args.group), attrs=attrs, beneficial=beneficial)
    if len(st.counts.groups) < 2:
        _fail(f"--group: only one group ({st.counts.groups[0]!r}) is present; an audit compares "
              "at least two.")
    from ofijax._validation import as_key

    key = as_key(args.seed)  # the in-memory audit's seed → key rule
    af = stats.audit_counts(
        key, st.counts, alpha=args.alpha, null=args.null, method=args.method,
        correction=args.correction, confidence=args.confidence, num_samples=args.bootstrap,
        di_variant=args.di_variant, beneficial_label=beneficial)
    if args.scan:
        k_scan = jax.random.split(key, 3)[2]
        af = af._replace(scan=run_scans(k_scan, st.cells, beneficial, int(args.replicates)))
    elapsed = time.perf_counter() - t0
    from ofijax import __version__

    desc = f"{args.data!r} ({args.engine} engine)"
    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(getattr(args, "argv", [])),
        "data": {
            "source": desc, "rows": int(st.rows), "rows_dropped": 0, "label": args.label,
            "pred": args.pred, "group": list(args.group), "positive": {},
            "harmful_label": bool(args.harmful_label), "weight": None, "groups_selected": None,
            "engine": args.engine,
        },
        "seed": args.seed,
        **af.to_dict(),
    }
    return finish(args, af, report, desc, int(st.rows), elapsed)


def cmd_scan(args: Any) -> int:
    """``ofijax scan`` (FPR-/TPR-Scan) through the statistics path."""
    import jax

    _check_common(args, ("label", "pred", "attr"))
    if args.lam != 0 or args.prob:
        _fail("--lam: IJDI-Scan (--lam > 0, --prob) needs rows; run it with --engine pandas on a "
              "sample, or FPR-/TPR-Scan (--lam 0) on the whole data.")
    if args.replicates < 0:
        _fail(f"--replicates: must be ≥ 0; got {args.replicates}.")
    beneficial = 0 if args.harmful_label else 1
    st = _statistics(args, group=None, attrs=list(args.attr), beneficial=beneficial)
    desc = f"{args.data!r} ({args.engine} engine)"
    print(f"ofijax scan of {desc}: {st.rows:,} rows, attributes {', '.join(args.attr)}; "
          f"{args.replicates} randomization replicates per scan", flush=True)
    res = run_scans(jax.random.key(args.seed), st.cells, beneficial, int(args.replicates),
                    side=args.side)
    for name, r in res.items():
        print(f"{name}: {r['description']}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "scan.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable({"data": desc, "attributes": list(args.attr), "lam": args.lam,
                              "seed": args.seed, "results": res, "notes": []}), fh, indent=2,
                      allow_nan=False)
        print(f"Wrote scan.json to {args.out}/")
    return 0
