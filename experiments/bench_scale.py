"""Benchmark: audits and FPR-Scan beyond one machine's memory (issue 15).

1. Generates a synthetic Parquet data set (default 100 M rows in 50 files; ``--quick``: 1 M rows
   in 4 files) with 10 categorical attributes ``a0..a9`` (cardinalities 2,2,2,2,2,3,3,3,3,3),
   a true label ``y`` ~ Bernoulli(0.4), a probability ``score`` and the prediction
   ``pred = 1[score ≥ 0.5]``. Planted bias: among the negatives (y = 0) the rows with
   ``a0 = 1 and a5 = 2`` get a raised false-positive rate (0.30 instead of 0.20).
2. Streams it (``ofijax.stats.collect``, Arrow batches of 2^20 rows) in a fresh child process:
   group counts (groups = a5) and cell statistics, then ``audit_counts`` (exact p-values up to
   10 M rows; above, Monte Carlo: the exact test's PMFs have 2n + 1 entries per group) and
   FPR-Scan with a 200-replicate Bernoulli randomization test; prints rows/s, the child's peak
   RSS after the pass and at the end (goal < 2 GiB), wall time, and whether the planted subgroup
   was found with p ≤ 0.01.
3. The same aggregation through Spark local mode (``ofijax.stats.from_spark``) on the first
   10 M rows' files (``--quick``: 250 k), in a fresh child process.
4. The peer: pandas ``read_parquet`` + ``groupby(...).size()`` on the largest prefix of files that
   fits comfortably (``--pandas-rows``, default 10 M; ``--quick``: all), for the aggregation rate.

5. ``--e2e SIZES`` (issue 36): the **default** ``ofijax audit`` of a directory of Parquet parts
   (columns ``region`` with 5 string categories, ``y``, ``yhat``; 10/30/100 M rows by default) as a
   fresh process, after one earlier run so the compile cache is as a user has it, against a
   pyarrow group-by count (region x y x yhat) of the same files as a fresh process, interleaved
   (best of ``--repeats``); peak RSS of each process from ``wait4``; at 10 M rows also pandas
   ``read_parquet`` + a fairlearn ``MetricFrame`` (selection rate, FPR, FNR by region). Prints
   rows/s, peak RSS and the ratio ofijax / pyarrow per size, writes
   ``results/bench_scale_e2e.csv``, then the p-value accuracy table of
   ``bench_pvalue.py --accuracy`` (approximate vs exact where exact is feasible, and vs the
   large-n limits; ``--no-accuracy`` skips it).

Usage: ``python experiments/bench_scale.py [--quick] [--dir DIR] [--keep]``;
``python experiments/bench_scale.py --e2e 10e6,30e6,100e6 [--repeats 3]``. Writes
``experiments/results/bench_scale.csv`` (not with ``--quick``). Ends with ``name: value`` lines.
Timings on a shared machine are noisy; the ratio stream/pandas is measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo's ofijax, uninstalled too
RESULTS = Path(__file__).resolve().parent / "results"
CARD = (2, 2, 2, 2, 2, 3, 3, 3, 3, 3)
ATTRS = [f"a{j}" for j in range(len(CARD))]
PLANTED = {"a0": (1,), "a5": (2,)}


def generate(out: Path, rows: int, files: int, seed: int = 0) -> float:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    per = -(-rows // files)
    rng = np.random.default_rng(seed)
    for f in range(files):
        n = min(per, rows - f * per)
        if n <= 0:
            break
        cols = {a: rng.integers(0, c, n, dtype=np.int8) for a, c in zip(ATTRS, CARD)}
        y = (rng.random(n) < 0.4).astype(np.int8)
        planted = (cols["a0"] == 1) & (cols["a5"] == 2)
        # P(score >= 0.5): 0.8 for positives; FPR 0.2, 0.3 inside the planted subgroup
        hi = np.where(y == 1, 0.8, np.where(planted, 0.3, 0.2))
        u = rng.random(n)
        score = np.where(u < hi, 0.5 + 0.5 * rng.random(n), 0.5 * rng.random(n))
        cols.update(y=y, score=score.astype(np.float32), pred=(score >= 0.5).astype(np.int8))
        pq.write_table(pa.table(cols), out / f"part-{f:04d}.parquet", row_group_size=1 << 20)
    return time.perf_counter() - t0


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB on Linux


def child_stream(data: str, replicates: int, method: str) -> dict:

    from ofijax import stats

    t0 = time.perf_counter()
    st = stats.collect(data, label="y", pred="pred", group="a5", attrs=ATTRS)
    t_collect = time.perf_counter() - t0
    rss_collect = _peak_rss_gib()
    a = _audit_and_scan(st, replicates, method)
    return {
        "rows": st.rows, "collect_s": t_collect, "wall_s": time.perf_counter() - t0,
        "rows_per_s": st.rows / t_collect, "peak_rss_gib": _peak_rss_gib(),
        "peak_rss_collect_gib": rss_collect, "cells": int(len(st.cells.n)), **a,
    }


def _audit_and_scan(st, replicates: int, method: str) -> dict:
    """audit_counts + FPR-Scan with a Bernoulli randomization test on collected statistics."""
    import jax

    from ofijax import stats

    t1 = time.perf_counter()
    af = stats.audit_counts(jax.random.key(0), st.counts, num_samples=2000, method=method)
    t_audit = time.perf_counter() - t1
    t2 = time.perf_counter()
    r = stats.fpr_scan_cells(st.cells, key=jax.random.key(0), num_samples=replicates,
                             beneficial_label=0)  # the planted subgroup is in the harm orientation
    return {"audit_s": t_audit, "scan_s": time.perf_counter() - t2,
            "subset": {k: list(v) for k, v in r.subset.items()}, "score": r.score,
            "p_value": r.p_value, "verdicts": af.pairs["verdict"].tolist(),
            "found": r.subset == PLANTED and r.p_value <= 0.01}


def child_spark(files: list[str], replicates: int = 0, method: str = "exact") -> dict:
    from pyspark.sql import SparkSession

    from ofijax import stats

    t0 = time.perf_counter()
    spark = (SparkSession.builder.master("local[*]").appName("bench_scale")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    t_start = time.perf_counter() - t0
    df = spark.read.parquet(*files)
    t1 = time.perf_counter()
    st = stats.from_spark(df, label="y", pred="pred", group="a5", attrs=ATTRS)
    t_agg = time.perf_counter() - t1
    spark.stop()
    out = {"rows": st.rows, "startup_s": t_start, "aggregate_s": t_agg,
           "rows_per_s": st.rows / t_agg, "peak_rss_gib_driver_python": _peak_rss_gib()}
    if replicates:  # the same audit and scan as the stream stage, on Spark's statistics
        out.update(_audit_and_scan(st, replicates, method))
        out["wall_s"] = time.perf_counter() - t0
        out["peak_rss_gib_driver_python"] = _peak_rss_gib()
    return out


def child_pandas(files: list[str]) -> dict:
    import pandas as pd

    t0 = time.perf_counter()
    df = pd.concat([pd.read_parquet(f, columns=ATTRS + ["y", "pred"]) for f in files],
                   ignore_index=True)
    t_read = time.perf_counter() - t0
    t1 = time.perf_counter()
    g = df.groupby(ATTRS + ["y", "pred"], observed=True).size()
    t_group = time.perf_counter() - t1
    return {"rows": len(df), "read_s": t_read, "groupby_s": t_group,
            "rows_per_s": len(df) / (t_read + t_group), "groups": int(len(g)),
            "peak_rss_gib": _peak_rss_gib()}


def _child(stage: str, payload: dict) -> dict:
    env = dict(os.environ, OFIJAX_PROGRESS=os.environ.get("OFIJAX_PROGRESS", "0"))
    env.setdefault("JAX_PLATFORMS", "cpu")
    out = subprocess.run([sys.executable, __file__, "--child", stage, json.dumps(payload)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{stage} child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ end to end (issue 36)

REGIONS = ("north", "south", "east", "west", "centre")


def generate_preds(out: Path, rows: int, files: int, seed: int = 1) -> float:
    """``rows`` rows of (region, y, yhat) in ``files`` Parquet parts; five regions of ~rows/5,
    base rate 0.4, FPR 0.20 and FNR 0.25 except region "south" (FPR 0.17, FNR 0.27): a small,
    significant OFI at this size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    per = -(-rows // files)
    labels = pa.array(REGIONS)
    for f in range(files):
        n = min(per, rows - f * per)
        if n <= 0:
            break
        g = rng.integers(0, len(REGIONS), n, dtype=np.int8)
        y = (rng.random(n) < 0.4).astype(np.int8)
        south = g == 1
        fpr = np.where(south, 0.17, 0.20)
        fnr = np.where(south, 0.27, 0.25)
        u = rng.random(n)
        yhat = np.where(y == 1, u >= fnr, u < fpr).astype(np.int8)
        region = pa.DictionaryArray.from_arrays(pa.array(g), labels).cast(pa.string())
        pq.write_table(pa.table({"region": region, "y": y, "yhat": yhat}),
                       out / f"part-{f:04d}.parquet", row_group_size=1 << 20)
    return time.perf_counter() - t0


def _run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (GiB) of one fresh process (its own rusage, from wait4), stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    # communicate() reaped the child: its rusage is in RUSAGE_CHILDREN only as a maximum over
    # all children, so each measured command runs under a small wrapper that reports its own
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}):\n{err[-3000:]}")
    line = [x for x in out.splitlines() if x.startswith("PEAK_RSS_KB ")]
    rss = int(line[-1].split()[1]) / 2**20 if line else float("nan")
    return wall, rss, out


_WRAP = (
    "import os, resource, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:])\n"
    "_, status, ru = os.wait4(p.pid, 0)\n"
    "print('PEAK_RSS_KB', ru.ru_maxrss, flush=True)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)

_ARROW_COUNT = (
    "import sys, pyarrow.dataset as ds\n"
    "t = ds.dataset(sys.argv[1], format='parquet').to_table(columns=['region', 'y', 'yhat'])\n"
    "g = t.group_by(['region', 'y', 'yhat']).aggregate([([], 'count_all')])\n"
    "print(g.num_rows, sum(g.column('count_all').to_pylist()))\n"
)

_FAIRLEARN = (
    "import sys, pandas as pd\n"
    "from fairlearn.metrics import MetricFrame, selection_rate, false_positive_rate, "
    "false_negative_rate\n"
    "df = pd.read_parquet(sys.argv[1], columns=['region', 'y', 'yhat'])\n"
    "mf = MetricFrame(metrics={'sr': selection_rate, 'fpr': false_positive_rate, "
    "'fnr': false_negative_rate}, y_true=df.y, y_pred=df.yhat, sensitive_features=df.region)\n"
    "print(mf.by_group.shape, len(df))\n"
)


def e2e(sizes: list[int], repeats: int, base: Path, keep: bool) -> dict:
    env = dict(os.environ, OFIJAX_PROGRESS="0")
    env.setdefault("JAX_PLATFORMS", "cpu")
    wrap = [sys.executable, "-c", _WRAP]
    rows_out = []
    summary: dict = {}
    for rows in sizes:
        data = base / f"preds_{rows}"
        files = max(1, rows // 2_000_000)
        t_gen = generate_preds(data, rows, files)
        size = sum(p.stat().st_size for p in data.glob("*.parquet"))
        print(f"\n{rows:,} rows in {files} files ({size / 2**30:.2f} GiB), generated in {t_gen:.0f} s")
        out_dir = base / "report"
        audit_cmd = wrap + [sys.executable, "-m", "ofijax", "audit", "--data", str(data),
                            "--label", "y", "--pred", "yhat", "--group", "region",
                            "--out", str(out_dir), "--force", "--quiet"]
        arrow_cmd = wrap + [sys.executable, "-c", _ARROW_COUNT, str(data)]
        fl_cmd = wrap + [sys.executable, "-c", _FAIRLEARN, str(data)]
        _run_measured(audit_cmd, env)  # the earlier run: compile cache as a user has it
        best: dict = {}
        for _ in range(repeats):  # interleaved, each one's minimum
            for name, cmd in (("ofijax", audit_cmd), ("pyarrow", arrow_cmd)) + (
                    (("fairlearn", fl_cmd),) if rows <= 10_000_000 else ()):
                try:
                    wall, rss, _ = _run_measured(cmd, env)
                except RuntimeError as exc:
                    print(f"  {name} failed: {str(exc)[-300:]}")
                    continue
                w0, r0 = best.get(name, (math.inf, 0.0))
                best[name] = (min(w0, wall), max(r0, rss))
        rep = json.loads((out_dir / "report.json").read_text())
        pairs = rep.get("pairs", [])
        methods = sorted({str(p.get("p_method", p.get("method", "?"))) for p in pairs})
        for name, (wall, rss) in best.items():
            rows_out.append({"rows": rows, "tool": name, "wall_s": round(wall, 3),
                             "rows_per_s": round(rows / wall), "peak_rss_gib": round(rss, 3)})
            print(f"  {name:9s} {wall:7.2f} s  {rows / wall:14,.0f} rows/s  peak RSS {rss:5.2f} GiB")
        tag = f"{rows // 1_000_000}m"
        if "ofijax" in best and "pyarrow" in best:
            ratio = best["ofijax"][0] / best["pyarrow"][0]
            summary[f"e2e_{tag}_ofijax_over_pyarrow_time"] = round(ratio, 2)
            summary[f"e2e_{tag}_ofijax_peak_rss_gib"] = round(best["ofijax"][1], 3)
            summary[f"e2e_{tag}_ofijax_rows_per_s"] = round(rows / best["ofijax"][0])
            summary[f"e2e_{tag}_pyarrow_rows_per_s"] = round(rows / best["pyarrow"][0])
            summary[f"e2e_{tag}_pyarrow_peak_rss_gib"] = round(best["pyarrow"][1], 3)
        if "fairlearn" in best:
            summary[f"e2e_{tag}_fairlearn_rows_per_s"] = round(rows / best["fairlearn"][0])
            summary[f"e2e_{tag}_fairlearn_peak_rss_gib"] = round(best["fairlearn"][1], 3)
            if "ofijax" in best:
                summary[f"e2e_{tag}_fairlearn_over_ofijax_time"] = round(
                    best["fairlearn"][0] / best["ofijax"][0], 2)
        summary[f"e2e_{tag}_p_methods"] = "+".join(methods)
        summary[f"e2e_{tag}_pairs_with_p"] = sum(p.get("p_value") is not None for p in pairs)
        if not keep:
            shutil.rmtree(data, ignore_errors=True)
    return {"rows": rows_out, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 M rows, 250 k through Spark")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--spark-rows", type=int, default=None)
    ap.add_argument("--pandas-rows", type=int, default=None)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--dir", default=None, help="where to write the Parquet files")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-stream", action="store_true", help="skip the streaming stage")
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas peer")
    ap.add_argument("--spark-full", action="store_true",
                    help="also run the audit and the FPR-Scan test on Spark's statistics")
    ap.add_argument("--csv", default="bench_scale.csv", help="file name under results/")
    ap.add_argument("--audit-method", choices=("exact", "monte_carlo"), default=None,
                    help="OFI p-values (default: exact up to 10 M rows, else Monte Carlo)")
    ap.add_argument("--e2e", default=None, metavar="SIZES",
                    help="end-to-end default CLI audit vs pyarrow count, e.g. 10e6,30e6,100e6")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats (--e2e)")
    ap.add_argument("--no-accuracy", action="store_true",
                    help="--e2e without the p-value accuracy table (bench_pvalue.py --accuracy)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.e2e:
        sizes = [int(float(x)) for x in args.e2e.split(",")]
        base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ofijax_bench_e2e_"))
        print(f"machine: {os.cpu_count()} cores (shared; absolute rates are noisy); "
              f"load {os.getloadavg()[0]:.1f}")
        res = e2e(sizes, args.repeats, base, args.keep)
        if not args.quick:
            RESULTS.mkdir(exist_ok=True)
            with open(RESULTS / "bench_scale_e2e.csv", "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(res["rows"][0]))
                w.writeheader()
                w.writerows(res["rows"])
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)
        if not args.no_accuracy:  # the p-value accuracy table (bench_pvalue.py --accuracy)
            print("\np-value accuracy, approximate vs exact (and vs large-n limits):")
            acc = subprocess.run([sys.executable, str(Path(__file__).parent / "bench_pvalue.py"),
                                  "--accuracy"], capture_output=True, text=True, check=True)
            table = [x for x in acc.stdout.splitlines() if x.startswith("|")]
            print("\n".join(table))
            res["summary"].update(
                (k_.strip(), v.strip()) for k_, v in
                (x.split(":", 1) for x in acc.stdout.splitlines() if x.startswith("max_rel_error[")))
        print()
        for k_, v in res["summary"].items():
            print(f"{k_}: {v}")
        return
    if args.child:
        stage, payload = args.child[0], json.loads(args.child[1])
        fn = {"stream": child_stream, "spark": child_spark, "pandas": child_pandas}[stage]
        res = fn(**payload)
        print(json.dumps(res))
        return
    rows = args.rows or (1_000_000 if args.quick else 100_000_000)
    files = 4 if args.quick else 50
    spark_rows = args.spark_rows or (250_000 if args.quick else 10_000_000)
    pandas_rows = args.pandas_rows or (rows if args.quick else 10_000_000)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ofijax_bench_scale_"))
    data = base / "data"
    print(f"machine: {os.cpu_count()} cores (shared; absolute rates are noisy)")
    t_gen = generate(data, rows, files)
    paths = sorted(str(p) for p in data.glob("*.parquet"))
    size = sum(os.path.getsize(p) for p in paths)
    per_file = -(-rows // files)
    print(f"generated {rows:,} rows in {len(paths)} files ({size / 2**30:.2f} GiB) in {t_gen:.0f} s")
    res = {"rows": rows, "parquet_gib": size / 2**30, "generate_s": t_gen,
           "load_avg_1m_start": os.getloadavg()[0]}
    # the exact OFI test convolves PMFs of length 2n + 1 (O(n) memory per group): above 10 M rows
    # the audit uses its Monte Carlo p-values so the whole run stays in bounded memory
    method = args.audit_method or ("exact" if rows <= 10_000_000 else "monte_carlo")
    s = pd_res = sp = None
    if not args.no_stream:
        s = _child("stream", {"data": str(data / "*.parquet"), "replicates": args.replicates,
                              "method": method})
        print(f"stream: {s['rows']:,} rows, collect {s['collect_s']:.1f} s "
              f"({s['rows_per_s']:,.0f} rows/s, peak RSS {s['peak_rss_collect_gib']:.2f} GiB), "
              f"audit ({method}) {s['audit_s']:.1f} s, FPR-Scan + {args.replicates} replicates "
              f"{s['scan_s']:.1f} s, peak RSS {s['peak_rss_gib']:.2f} GiB; found {s['subset']} "
              f"score {s['score']:.2f} p = {s['p_value']:.4f} ({s['cells']:,} cell entries)")
        res.update({f"stream_{k}": v for k, v in s.items() if not isinstance(v, dict | list)})
    if not args.no_pandas:
        k = max(1, min(len(paths), pandas_rows // per_file))
        while True:  # the largest prefix that fits: halve it if pandas runs out of memory
            try:
                pd_res = _child("pandas", {"files": paths[:k]})
                break
            except RuntimeError as exc:
                if k == 1:
                    raise
                print(f"pandas peer failed on {k * per_file:,} rows ({str(exc)[-200:]!r}); halving")
                k //= 2
        print(f"pandas peer: {pd_res['rows']:,} rows, read {pd_res['read_s']:.1f} s + groupby "
              f"{pd_res['groupby_s']:.1f} s ({pd_res['rows_per_s']:,.0f} rows/s), peak RSS "
              f"{pd_res['peak_rss_gib']:.2f} GiB")
        res.update({f"pandas_{k_}": v for k_, v in pd_res.items()})
    if not args.no_spark:
        k = max(1, min(len(paths), spark_rows // per_file))
        sp_method = args.audit_method or ("exact" if spark_rows <= 10_000_000 else "monte_carlo")
        sp = _child("spark", {"files": paths[:k], "method": sp_method,
                              "replicates": args.replicates if args.spark_full else 0})
        print(f"spark local: {sp['rows']:,} rows, startup {sp['startup_s']:.1f} s, aggregate "
              f"{sp['aggregate_s']:.1f} s ({sp['rows_per_s']:,.0f} rows/s)")
        if args.spark_full:
            print(f"spark: audit ({sp_method}) {sp['audit_s']:.1f} s, FPR-Scan + "
                  f"{args.replicates} replicates {sp['scan_s']:.1f} s, wall {sp['wall_s']:.1f} s, "
                  f"driver Python peak RSS {sp['peak_rss_gib_driver_python']:.2f} GiB; found "
                  f"{sp['subset']} score {sp['score']:.2f} p = {sp['p_value']:.4f}")
        res.update({f"spark_{k_}": v for k_, v in sp.items() if not isinstance(v, dict | list)})
    res["load_avg_1m_end"], res["load_avg_5m_end"], res["load_avg_15m_end"] = os.getloadavg()
    print(f"load average at the end: {os.getloadavg()}")
    if not args.keep and not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        with open(RESULTS / args.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["name", "value"])
            w.writerows(sorted(res.items()))
    print()
    out = {"rows": rows}
    if s is not None:
        out.update({
            "stream_rows_per_s": round(s["rows_per_s"]),
            "stream_peak_rss_gib": round(s["peak_rss_gib"], 3),
            "stream_collect_peak_rss_gib": round(s["peak_rss_collect_gib"], 3),
            "stream_wall_s": round(s["wall_s"], 1),
            "planted_found_p_le_0.01": s["found"],
        })
    if pd_res is not None:
        out["pandas_rows_per_s"] = round(pd_res["rows_per_s"])
        if s is not None:
            out["stream_vs_pandas_rate"] = round(s["rows_per_s"] / pd_res["rows_per_s"], 2)
    if sp is not None:
        out["spark_rows"] = sp["rows"]
        out["spark_rows_per_s"] = round(sp["rows_per_s"])
        if args.spark_full:
            out["spark_planted_found_p_le_0.01"] = sp["found"]
    for k_, v in out.items():
        print(f"{k_}: {v}")


if __name__ == "__main__":
    main()
