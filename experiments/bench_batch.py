"""Benchmark: batch audits of many candidates vs a loop of fairlearn MetricFrame.

Work: C candidates (half decision thresholds of one score, half random models) × 6 groups ×
n rows (default 1,000 × 6 × 100,000). ofijax runs :func:`ofijax.auditing.audit_batch` twice — on the
score with the threshold grid (``threshold_sweep``: no pass over rows per threshold) and on the
``(C/2, n)`` predictions of the random models (one segment-sum) — and computes per candidate and
pair of groups OFI with its p-value (the exact test; for large batches of large groups the engine
may take its saddlepoint path, relative error ≤ 2e-3, reported below as ``approximate_share``),
Holm within and across candidates, DI, the four-fifths screen and the verdicts. The peer is a
loop of fairlearn ``MetricFrame`` computing **only** the by-group rates (selection rate, TPR,
FPR, accuracy; no p-values) on the same inputs, one call per candidate. When the fairlearn loop
would be long, only ``--fairlearn-calls`` of them are timed (spread over both candidate kinds)
and the total is extrapolated linearly (the per-call cost does not depend on the candidate).

Cold = first call in this process (compilation included); warm = a second identical call
(``--no-warm`` skips it; the warm figures then repeat the cold ones, ``warm_measured: 0``).
The saddlepoint path of the p-value engine dominates the time (since #36 it also takes pairs with
pooled cell probabilities below 0.005 when their expected counts are large); the output gives the
share of saddlepoint p-values.

Run:  python experiments/bench_batch.py [--quick]
Writes experiments/results/bench_batch.csv and ends with ``name: value`` lines.

``--thresholds-vs-fairlearn`` (issue #36) runs the threshold comparison alone: ``audit_batch(y,
scores=..., thresholds=T values in [0, 1] (both ends included: no FP or no FN there), 6 groups)``
with p-values (default method) against a loop of fairlearn ``MetricFrame`` (selection_rate,
false_positive_rate, false_negative_rate) over the same T candidates, interleaved: each repeat
times one ofijax call and then ``--fairlearn-calls`` MetricFrame calls spread over the grid
(extrapolated to T; a call's cost does not depend on the threshold); each side keeps its
minimum over ``--repeats``; the first ofijax call of the process is reported as cold. Writes
experiments/results/bench_batch_thresholds_<T>x<n>.csv.
The machine is shared: compare the ratio measured in the same run, not absolute times.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OFIJAX_PROGRESS", "0")

import ofijax  # noqa: E402
from ofijax.auditing import audit_batch  # noqa: E402

RESULTS = ROOT / "experiments" / "results"
GROUP_SHARES = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])



def _write_and_print(rows: list, name: str) -> int:
    """``results/NAME`` as (name, value) rows, then the ``name: value`` lines."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / name, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "value"])
        w.writerows(rows)
    print()
    for k, v in rows:
        print(f"{k}: {v}")
    return 0

def make_data(n: int, num_candidates: int, seed: int = 0):
    """Labels, 6 groups, one score, a threshold grid and random models' predictions."""
    rng = np.random.default_rng(seed)
    g = rng.choice(len(GROUP_SHARES), size=n, p=GROUP_SHARES)
    shift = np.linspace(-0.3, 0.3, len(GROUP_SHARES))[g]
    y = (rng.random(n) < 0.4 + 0.1 * np.sign(shift)).astype(np.int8)
    score = 1.0 / (1.0 + np.exp(-(1.5 * (y - 0.5) + shift + rng.normal(0.0, 1.0, n))))
    n_thr = num_candidates // 2
    thresholds = np.linspace(0.05, 0.95, n_thr)
    n_models = num_candidates - n_thr
    preds = np.empty((n_models, n), np.int8)
    for j in range(n_models):  # random models: noisy scores with their own bias and cut-off
        s = score + rng.normal(0.0, 0.15, n) + rng.normal(0.0, 0.05) * (g == rng.integers(6))
        preds[j] = s >= rng.uniform(0.3, 0.7)
    return y, g, score, thresholds, preds


def run_ofijax(y, g, score, thresholds, preds):
    t0 = time.perf_counter()
    a = audit_batch(y, scores=score, thresholds=thresholds, sensitive_features=g)
    t1 = time.perf_counter()
    b = audit_batch(y, preds, sensitive_features=g)
    t2 = time.perf_counter()
    return a, b, t1 - t0, t2 - t1


def run_fairlearn(y, g, score, thresholds, preds, calls: int):
    from fairlearn.metrics import (
        MetricFrame,
        false_positive_rate,
        selection_rate,
        true_positive_rate,
    )
    from sklearn.metrics import accuracy_score

    metrics = {"selection_rate": selection_rate, "tpr": true_positive_rate, "fpr": false_positive_rate,
               "accuracy": accuracy_score}
    total = len(thresholds) + len(preds)
    k_thr = max(1, calls // 2)
    k_mod = max(1, calls - k_thr)
    pick_t = np.linspace(0, len(thresholds) - 1, k_thr).round().astype(int)
    pick_m = np.linspace(0, len(preds) - 1, k_mod).round().astype(int)
    frames = []
    t0 = time.perf_counter()
    for i in pick_t:
        yp = (score >= thresholds[i]).astype(np.int8)
        frames.append(MetricFrame(metrics=metrics, y_true=y, y_pred=yp, sensitive_features=g).by_group)
    for j in pick_m:
        frames.append(MetricFrame(metrics=metrics, y_true=y, y_pred=preds[j], sensitive_features=g).by_group)
    elapsed = time.perf_counter() - t0
    timed = len(pick_t) + len(pick_m)
    return elapsed, timed, elapsed / timed * total, frames, pick_t, pick_m


def thresholds_vs_fairlearn(n: int, num_thresholds: int, repeats: int, calls: int, seed: int) -> int:
    """Issue #36: audit_batch over a threshold grid with p-values vs a MetricFrame loop, interleaved."""
    from fairlearn.metrics import (
        MetricFrame,
        false_negative_rate,
        false_positive_rate,
        selection_rate,
    )

    y, g, score, _, _ = make_data(n, 2, seed)
    th = np.linspace(0.0, 1.0, num_thresholds)
    metrics = {"selection_rate": selection_rate, "fpr": false_positive_rate, "fnr": false_negative_rate}
    pick = np.linspace(0, num_thresholds - 1, min(calls, num_thresholds)).round().astype(int)
    print(f"bench_batch thresholds: {num_thresholds} thresholds x {len(GROUP_SHARES)} groups x {n} rows; "
          f"fairlearn {len(pick)} calls a repeat (extrapolated to {num_thresholds}); {repeats} repeats",
          flush=True)
    of_times, fl_per_call, res = [], [], None
    for rep in range(repeats):
        t0 = time.perf_counter()
        res = audit_batch(y, scores=score, thresholds=th, sensitive_features=g)
        of_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        frames = [MetricFrame(metrics=metrics, y_true=y, y_pred=(score >= th[i]).astype(np.int8),
                              sensitive_features=g).by_group for i in pick]
        fl_per_call.append((time.perf_counter() - t0) / len(pick))
        print(f"repeat {rep}: ofijax {of_times[-1]:.3f} s, fairlearn {fl_per_call[-1]:.4f} s/call", flush=True)
    max_diff = 0.0
    for f, i in zip(frames, pick):
        sr = res.by_group[res.by_group["candidate"] == float(th[i])]["selection_rate"].to_numpy()
        max_diff = max(max_diff, float(np.max(np.abs(sr - f["selection_rate"].to_numpy()))))
    fl_total = min(fl_per_call) * num_thresholds
    of_best = min(of_times)
    pairs = res.pairs
    rows = [
        ("thresholds", num_thresholds), ("rows", n), ("groups", len(GROUP_SHARES)),
        ("pair_tests", len(pairs)), ("repeats", repeats), ("fairlearn_calls_per_repeat", len(pick)),
        ("ofijax_cold_s", round(of_times[0], 3)), ("ofijax_min_s", round(of_best, 3)),
        ("fairlearn_min_s_per_call", round(min(fl_per_call), 4)),
        ("fairlearn_total_s", round(fl_total, 2)),
        ("ratio", round(fl_total / of_best, 1)), ("ratio_cold", round(fl_total / of_times[0], 1)),
        ("approximate_share", round(float(pairs["approximate"].mean()), 4)),
        ("min_log10_p_value", round(float(pairs["log10_p_value"].min()), 1)),
        ("selection_rate_max_abs_diff_vs_fairlearn", max_diff),
        ("load_average_1min", round(os.getloadavg()[0], 1)), ("cpu_count", os.cpu_count()),
    ]
    return _write_and_print(rows, f"bench_batch_thresholds_{num_thresholds}x{n}.csv")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds-vs-fairlearn", action="store_true",
                    help="issue #36: audit_batch over a threshold grid vs a MetricFrame loop (interleaved)")
    ap.add_argument("--thresholds", type=int, default=200, help="grid size of --thresholds-vs-fairlearn")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats of --thresholds-vs-fairlearn")
    ap.add_argument("--quick", action="store_true", help="small sizes (100 candidates x 20,000 rows)")
    ap.add_argument("--candidates", type=int, default=None)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--fairlearn-calls", type=int, default=None,
                    help="fairlearn calls actually timed (the rest is extrapolated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the second (warm) ofijax call; the ratio then uses the cold time")
    args = ap.parse_args(argv)
    if args.thresholds_vs_fairlearn:
        return thresholds_vs_fairlearn(args.rows or 100_000, args.thresholds, args.repeats,
                                       args.fairlearn_calls or 20, args.seed)
    C = args.candidates or (100 if args.quick else 1000)
    n = args.rows or (20_000 if args.quick else 100_000)
    calls = args.fairlearn_calls or (10 if args.quick else 40)
    calls = min(calls, C)
    y, g, score, th, preds = make_data(n, C, args.seed)
    print(f"bench_batch: {C} candidates ({len(th)} thresholds + {len(preds)} random models) x "
          f"{len(GROUP_SHARES)} groups x {n} rows; ofijax {ofijax.__version__}", flush=True)

    a, b, cold_thr, cold_mod = run_ofijax(y, g, score, th, preds)
    cold = cold_thr + cold_mod
    print(f"ofijax cold: thresholds {cold_thr:.2f} s + models {cold_mod:.2f} s", flush=True)
    if args.no_warm:
        warm_thr, warm_mod = cold_thr, cold_mod
    else:
        a, b, warm_thr, warm_mod = run_ofijax(y, g, score, th, preds)
        print(f"ofijax warm: thresholds {warm_thr:.2f} s + models {warm_mod:.2f} s", flush=True)
    warm = warm_thr + warm_mod

    fl_time, fl_calls, fl_total, frames, pick_t, pick_m = run_fairlearn(y, g, score, th, preds, calls)
    print(f"fairlearn: {fl_calls} MetricFrame calls in {fl_time:.2f} s "
          f"({fl_time / fl_calls:.3f} s each) -> {fl_total:.1f} s for {C} candidates"
          + (" (extrapolated)" if fl_calls < C else ""), flush=True)

    # same numbers: fairlearn's by-group selection rates equal ofijax's for the timed candidates
    max_diff = 0.0
    for f, i in zip(frames[: len(pick_t)], pick_t):
        sr = a.by_group[a.by_group["candidate"] == float(th[i])]["selection_rate"].to_numpy()
        max_diff = max(max_diff, float(np.max(np.abs(sr - f["selection_rate"].to_numpy()))))
    for f, j in zip(frames[len(pick_t):], pick_m):
        sr = b.by_group[b.by_group["candidate"] == int(j)]["selection_rate"].to_numpy()
        max_diff = max(max_diff, float(np.max(np.abs(sr - f["selection_rate"].to_numpy()))))

    pairs = len(a.pairs) + len(b.pairs)
    approx = 0.0
    if "approximate" in a.pairs.columns:
        approx = float((a.pairs["approximate"].sum() + b.pairs["approximate"].sum()) / pairs)
    n_sig = int((a.pairs["verdict"] == "algorithmic bias").sum() + (b.pairs["verdict"] == "algorithmic bias").sum())
    min_p = float(min(a.pairs["log10_p_value"].min(), b.pairs["log10_p_value"].min()))
    ratio_warm = fl_total / warm
    ratio_cold = fl_total / cold
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = "quick" if args.quick else f"{C}x{n}"
    rows = [
        ("candidates", C), ("rows", n), ("groups", len(GROUP_SHARES)), ("pair_tests", pairs),
        ("ofijax_cold_s", round(cold, 3)), ("ofijax_warm_s", round(warm, 3)),
        ("ofijax_warm_thresholds_s", round(warm_thr, 3)), ("ofijax_warm_models_s", round(warm_mod, 3)),
        ("fairlearn_calls_timed", fl_calls), ("fairlearn_s_per_call", round(fl_time / fl_calls, 4)),
        ("fairlearn_total_s", round(fl_total, 2)), ("fairlearn_extrapolated", int(fl_calls < C)),
        ("ratio_warm", round(ratio_warm, 1)), ("ratio_cold", round(ratio_cold, 1)),
        ("ratio_warm_models_only", round(fl_time / fl_calls * len(preds) / warm_mod, 1)),
        ("ratio_warm_thresholds_only", round(fl_time / fl_calls * len(th) / warm_thr, 1)),
        ("approximate_share_models", round(float(b.pairs["approximate"].mean()), 4)),
        ("approximate_share_thresholds", round(float(a.pairs["approximate"].mean()), 4)),
        ("approximate_share", round(approx, 4)), ("significant_pairs", n_sig), ("min_log10_p_value", round(min_p, 1)),
        ("selection_rate_max_abs_diff_vs_fairlearn", max_diff),
        ("warm_measured", int(not args.no_warm)),
        ("load_average_1min", round(os.getloadavg()[0], 1)),
        ("cpu_count", os.cpu_count()),
    ]
    return _write_and_print(rows, f"bench_batch_{tag}.csv")


if __name__ == "__main__":
    raise SystemExit(main())
