"""Benchmark: ofijax.scan.bias_scan vs AIF360's MDSS bias_scan on identical synthetic inputs.

Generator (mdss_notes.md §4): ``default_rng(0)``; attribute codes uniform over V values; p ~ U(0.05,
0.95); odds × 2 inside the planted subgroup {a0 ∈ {1, 2}, a1 = min(3, V-1)}; y = 1[u < p_true].
Both scans: Bernoulli, positive direction (q > 1; AIF360 ``overpredicted=False``), penalty 1e-17,
10 restarts. AIF360: min over repeats (1 repeat for the big cases). ofijax: the first call
(compile + run) minus the best later call is reported as ``compile``, then the min of 3 calls
(1 for 100k x 10 x 10). Found subsets are normalised
(attributes listed with all values dropped) and re-scored, with the planted subgroup, by
``ofijax.scan.score_subset``.

Cold column (issue #14): for the 10k × 4 × 5 case (and 100k × 10 × 10 without ``--quick``), a
fresh subprocess times its *first* ``bias_scan`` call with an empty persistent compilation cache
(``cold``), then a second fresh subprocess with that cache folder filled (``cache-warm``); both
are compared with AIF360's time on the same inputs. Goals: cold ≤ 1.5× AIF360, cache-warm ≤ 0.3×.
With ``--cold-only`` each of those 10k × 4 × 5 processes then runs a 19-replicate randomization
test (``num_samples=19``, after its scans, as a user would): ``cold_test19_s`` /
``cache_warm_test19_s``, next to 19 AIF360 scans (no peer has the test itself).

Timings on a shared machine are noisy; the *ratios* (both measured in the same run) are what count.

Usage: ``python experiments/bench_scan.py [--quick] [--cold-only [--warm-repeats N]]`` (``--quick`` skips the
10^6-row case; ``--cold-only`` runs only the cold column, with import time and the in-process
second call too, and writes ``experiments/results/bench_scan_cold.csv`` instead).
Writes ``experiments/results/bench_scan.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's ofijax, uninstalled too
from ofijax.scan import bias_scan, score_subset  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def generate(n, n_attr, n_val, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_val, size=(n, n_attr))
    p = rng.uniform(0.05, 0.95, n)
    inside = np.isin(codes[:, 0], [1, 2]) & (codes[:, 1] == min(3, n_val - 1))
    odds = p / (1 - p) * np.where(inside, 2.0, 1.0)
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(int)
    df = pd.DataFrame(codes, columns=[f"a{j}" for j in range(n_attr)])
    planted = {"a0": (1, 2), "a1": (min(3, n_val - 1),)}
    return df, y, p, planted


def normalise(df, subset):
    out = {}
    for col in sorted(subset):
        vals = tuple(sorted(int(v) for v in subset[col]))
        if len(vals) < df[col].nunique():
            out[col] = vals
    return out


def time_aif360(df, y, p, repeats):
    from aif360.detectors.mdss_detector import bias_scan as aif_scan

    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = aif_scan(data=df, observations=pd.Series(y), expectations=pd.Series(p),
                       favorable_value="high", overpredicted=False, scoring="Bernoulli",
                       num_iters=10, penalty=1e-17, mode="binary")
        best = min(best, time.perf_counter() - t0)
    return best, out


def time_ofijax(df, y, p, repeats=3, **kw):
    t0 = time.perf_counter()
    res = bias_scan(df, y, p, penalty=1e-17, num_restarts=10, search="coordinate_ascent", **kw)
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = bias_scan(df, y, p, penalty=1e-17, num_restarts=10, search="coordinate_ascent", **kw)
        best = min(best, time.perf_counter() - t0)
    return best, max(first - best, 0.0), res


COLD = r"""
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
from bench_scan import generate
from ofijax.scan import bias_scan
t1 = time.perf_counter()
df, y, p, _ = generate({n}, {a}, {v})
t2 = time.perf_counter()
bias_scan(df, y, p, penalty=1e-17, num_restarts=10, search="coordinate_ascent")
t3 = time.perf_counter()
bias_scan(df, y, p, penalty=1e-17, num_restarts=10, search="coordinate_ascent")
t4 = time.perf_counter()
if {test}:  # then a randomization test with 19 replicates (after the scan, as a user would)
    bias_scan(df, y, p, penalty=1e-17, num_restarts=10, search="coordinate_ascent",
              num_samples=19, key=0)
print(t1 - t0, t3 - t2, t4 - t3, time.perf_counter() - t4)
"""


def cold_times(n, a, v, warm_repeats=1, test=False):
    """Fresh-process timings, ``[(import_s, first_call_s, second_call_s, test_s)]`` for an empty
    persistent compilation cache, then for a second process with that cache filled (the best of
    ``warm_repeats`` such processes, by first call). The cache folder holds JAX's compiled
    programs and ofijax's kept executables (``<cache>/ofijax-aot``), so the cache-warm process
    neither compiles nor traces the scan's programs. ``test``: each process then also runs a
    19-replicate randomization test (``test_s``; 0 otherwise)."""
    here = Path(__file__).resolve().parent
    code = COLD.format(root=str(here.parent), here=str(here), n=n, a=a, v=v, test=bool(test))
    cache = tempfile.mkdtemp(prefix="ofijax-bench-cache-")
    env = {**os.environ, "OFIJAX_CACHE_DIR": cache, "OFIJAX_PROGRESS": "0"}
    env.pop("OFIJAX_CACHE", None)
    out = []
    for _ in range(1 + max(1, warm_repeats)):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           check=True)
        out.append(tuple(float(x) for x in r.stdout.strip().splitlines()[-1].split()))
    return [out[0], min(out[1:], key=lambda t: t[1])]


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def cold_only(quick: bool, warm_repeats: int = 1):
    """The cold column alone: AIF360 vs fresh-process first calls; writes bench_scan_cold.csv."""
    cases = [("10k_4x5", 10_000, 4, 5, 3)]
    if not quick:
        cases.append(("100k_10x10", 100_000, 10, 10, 1))
    rows, summary = [], {}
    for name, n, a, v, reps in cases:
        df, y, p, _ = generate(n, a, v)
        t_aif, _ = time_aif360(df, y, p, reps)
        (imp0, cold, warm0, test0), (imp1, cached, warm1, test1) = cold_times(
            n, a, v, warm_repeats, test=name == "10k_4x5")
        load = load_average()
        print(f"\n== {name}: n={n}, {a} attributes x {v} values (load average {load})")
        print(f"  AIF360 : {t_aif:.3f} s (min of {reps})")
        print(f"  fresh process, empty cache : import {imp0:.2f} s, first call {cold:.2f} s "
              f"({cold / t_aif:.2f}x AIF360), second call {warm0:.3f} s")
        print(f"  fresh process, cache warm  : import {imp1:.2f} s, first call {cached:.2f} s "
              f"(best of {max(1, warm_repeats)}) "
              f"({cached / t_aif:.2f}x AIF360), second call {warm1:.3f} s")
        if test0:
            print(f"  then a 19-replicate randomization test: {test0:.2f} s with the cache "
                  f"empty, {test1:.2f} s cache-warm (19 AIF360 scans: {19 * t_aif:.2f} s)")
        rows.append(dict(case=name, n=n, attributes=a, values=v, aif360_s=t_aif,
                         aif360_repeats=reps, cold_import_s=imp0, cold_first_call_s=cold,
                         cold_second_call_s=warm0, cache_warm_import_s=imp1,
                         cache_warm_first_call_s=cached, cache_warm_second_call_s=warm1,
                         cache_warm_processes=max(1, warm_repeats),
                         cold_over_aif360=cold / t_aif, cache_warm_over_aif360=cached / t_aif,
                         cold_test19_s=test0, cache_warm_test19_s=test1, load_average=load))
        key = name.replace("_4x5", "")
        summary[f"cold_over_aif360_{key}"] = f"{cold / t_aif:.2f}"
        summary[f"cache_warm_over_aif360_{key}"] = f"{cached / t_aif:.2f}"
        if test0:
            summary[f"cold_test19_s_{key}"] = f"{test0:.2f}"
            summary[f"cache_warm_test19_s_{key}"] = f"{test1:.2f}"
            summary[f"cold_test19_over_19_aif360_scans_{key}"] = f"{test0 / (19 * t_aif):.3f}"
    write_results("bench_scan_cold.csv", rows, summary)


def write_results(filename, rows, summary, keep_other_cases=False):
    """Write ``rows`` to ``results/filename`` and print the ``name: value`` summary lines.

    ``keep_other_cases``: keep the file's rows of cases not rerun now (``--only``)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / filename
    if keep_other_cases and path.exists():
        with open(path, newline="") as fh:
            old = list(csv.DictReader(fh))
        new = {r["case"]: r for r in rows}
        rows = [new.pop(r["case"], r) for r in old] + list(new.values())
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print()
    for k, val in summary.items():
        print(f"{k}: {val}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the 10^6-row case")
    ap.add_argument("--cold-only", action="store_true",
                    help="only the cold column (AIF360 vs fresh-process first calls); writes "
                         "bench_scan_cold.csv (with --quick: the 10k case alone)")
    ap.add_argument("--only", nargs="+", metavar="CASE",
                    help="rerun only these cases (10k_4x5 100k_4x5 1m_4x5 100k_10x10); the other "
                         "rows of bench_scan.csv are kept")
    ap.add_argument("--warm-repeats", type=int, default=1, metavar="N",
                    help="with --cold-only: N cache-warm fresh processes, the best first call "
                         "reported (for noisy machines)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.cold_only:
        return cold_only(args.quick, args.warm_repeats)
    # (name, n, attributes, values, AIF360 repeats, ofijax repeats after the compile call)
    cases = [("10k_4x5", 10_000, 4, 5, 3, 3), ("100k_4x5", 100_000, 4, 5, 2, 3)]
    if not args.quick:
        cases.append(("1m_4x5", 1_000_000, 4, 5, 1, 3))
    cases.append(("100k_10x10", 100_000, 10, 10, 1, 1))
    if args.only:
        cases = [c for c in cases if c[0] in args.only]
    print(f"machine: {os.cpu_count()} cores (shared; ratios matter, absolute times are noisy)")
    print("settings: Bernoulli, positive direction, penalty 1e-17, 10 restarts; "
          "ofijax q in [1e-6, 1e6] (default), AIF360 q in [1e-3, 1e3]")
    rows, summary = [], {}
    for name, n, a, v, reps, ofi_reps in cases:
        df, y, p, planted = generate(n, a, v)
        t_aif, (aif_subset, aif_score) = time_aif360(df, y, p, reps)
        t_ofi, t_compile, res = time_ofijax(df, y, p, ofi_reps)
        aif_norm = normalise(df, aif_subset)
        ofi_norm = normalise(df, res.subset)
        planted_score = score_subset(df, y, p, dict(planted), penalty=1e-17).score
        aif_rescored = score_subset(df, y, p, {k: list(vv) for k, vv in aif_subset.items()},
                                    penalty=1e-17).score
        speedup = t_aif / t_ofi
        cold = (name == "10k_4x5") or (name == "100k_10x10" and not args.quick)
        if cold:
            (_, t_cold, _, _), (_, t_cached, _, _) = cold_times(n, a, v)
        else:
            t_cold = t_cached = float("nan")
        print(f"\n== {name}: n={n}, {a} attributes x {v} values")
        print(f"  AIF360 : {t_aif:8.3f} s (min of {reps})  score {float(aif_score):.4f}  "
              f"(re-scored {aif_rescored:.4f})  subset {aif_norm}  planted: {aif_norm == planted}")
        print(f"  ofijax : {t_ofi:8.3f} s (min of {ofi_reps}, compile {t_compile:.2f} s)  score "
              f"{res.score:.4f}  subset {ofi_norm}  planted: {ofi_norm == planted}  "
              f"converged: {res.converged}")
        print(f"  planted subgroup score {planted_score:.4f}; speedup {speedup:.1f}x")
        if cold:
            print(f"  fresh process first call: cold cache {t_cold:.2f} s "
                  f"({t_cold / t_aif:.2f}x AIF360), cache warm {t_cached:.2f} s "
                  f"({t_cached / t_aif:.2f}x AIF360)")
        rows.append(dict(case=name, n=n, attributes=a, values=v, aif360_s=t_aif,
                         aif360_repeats=reps, ofijax_s=t_ofi, ofijax_compile_s=t_compile,
                         speedup=speedup, cold_first_call_s=t_cold,
                         cache_warm_first_call_s=t_cached, aif360_score=float(aif_score),
                         aif360_rescored=aif_rescored, ofijax_score=res.score,
                         planted_score=planted_score, aif360_found_planted=aif_norm == planted,
                         ofijax_found_planted=ofi_norm == planted))
        key = name.replace("_4x5", "")
        summary[f"speedup_{key}"] = f"{speedup:.1f}"
        if cold:
            summary[f"cold_over_aif360_{key}"] = f"{t_cold / t_aif:.2f}"
            summary[f"cache_warm_over_aif360_{key}"] = f"{t_cached / t_aif:.2f}"
        summary[f"ofijax_found_planted_{key}"] = ofi_norm == planted
        summary[f"aif360_found_planted_{key}"] = aif_norm == planted
        summary[f"ofijax_score_over_planted_{key}"] = f"{res.score / planted_score:.3f}"
        summary[f"aif360_score_over_planted_{key}"] = f"{aif_rescored / planted_score:.3f}"
    write_results("bench_scan.csv", rows, summary, keep_other_cases=bool(args.only))


if __name__ == "__main__":
    main()
