"""One script that runs every speed benchmark at sizes fit for a large GPU, and names the device.

Workloads (full sizes; ``--quick`` shrinks each to seconds on a CPU):

* ``montecarlo``: Monte Carlo of the marginal benefit B under the uniform null on M(100),
  10^10 confusion matrices (``ofijax.distributions.monte_carlo``).
* ``bias_rows``: Bias Scan with continuous expectations, 10^7 rows × 4 attributes × 5 values.
* ``bias_wide``: Bias Scan with continuous expectations, 10^6 rows × 20 attributes × 10 values
  (nearly one row per cell: the per-attribute step's worst case).
* ``fpr_randomization``: FPR-Scan with a 10,000-replicate Bernoulli randomization test
  (10^4 negatives × 4 × 5).
* ``bias_randomization``: Bias Scan (continuous p) with a 10,000-replicate randomization test
  (10^4 rows × 4 × 5).
* ``ijdi_randomization``: IJDI-Scan (Algorithm 1, λ = 1) on the COMPAS negatives with R = 1,000
  replicates, each rerunning the whole edge-case loop (batched slots).
* ``batch_audit``: ``ofijax.audit_batch`` of 2,000 decision thresholds of one score × 6 groups ×
  10^6 rows (``threshold_sweep`` plus the batched exact / saddlepoint p-value engine, Holm within
  and across candidates).

Each workload reports ``first`` (compile + run, a fresh process's first call) and ``warm`` (a
second call) wall time in seconds, and its throughput. The full run is sized to finish in under
5 minutes on one H100/H200-class GPU (estimated from CPU rates; not yet measured on a GPU).
Prints ``name: value`` lines and writes ``<out>/<workload>.csv`` (default
``experiments/results/gpu/``) with the device named in every row.

Usage: ``python experiments/gpu_check.py [--quick] [--out DIR] [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OFIJAX_PROGRESS", "0")

import jax  # noqa: E402

import ofijax  # noqa: E402
from ofijax import distributions as D  # noqa: E402
from ofijax.scan import bias_scan, estimate_true_probabilities, fpr_scan, ijdi_scan  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "gpu"
FEATURES = ["Sex", "Race", "Prior Offenses", "Under 25", "ChargeDegree"]
DECILE_P = [0.2139, 0.3114, 0.3762, 0.4343, 0.4787, 0.5585, 0.5912, 0.6836, 0.6988, 0.7728]

FULL = {
    "montecarlo": dict(num=10**10, n=100, chunk=1 << 22),
    "bias_rows": dict(n=10**7, m=4, v=5),
    "bias_wide": dict(n=10**6, m=20, v=10),
    "fpr_randomization": dict(n=10_000, m=4, v=5, reps=10_000),
    "bias_randomization": dict(n=10_000, m=4, v=5, reps=10_000),
    "ijdi_randomization": dict(reps=1_000),
    "batch_audit": dict(n=10**6, thresholds=2_000),
}
# --quick: every workload in seconds on a CPU; the two bias scans share one shape bucket (and so
# one compilation), as do the two randomization tests' problems.
QUICK = {
    "montecarlo": dict(num=10**6, n=100, chunk=1 << 16),
    "bias_rows": dict(n=20_000, m=4, v=5),
    "bias_wide": dict(n=5_000, m=4, v=5),
    "fpr_randomization": dict(n=2_000, m=4, v=5, reps=4),
    "bias_randomization": dict(n=2_000, m=4, v=5, reps=4),
    "ijdi_randomization": dict(reps=2),
    "batch_audit": dict(n=20_000, thresholds=20),
}


def device_name() -> str:
    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', '?')} x{jax.device_count()}"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = fn()
    return out, first, time.perf_counter() - t0


def synthetic(n, m, v, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, v, size=(n, m), dtype=np.int32)
    p = rng.uniform(0.05, 0.95, n)
    inside = np.isin(codes[:, 0], [1, 2]) & (codes[:, 1] == min(3, v - 1))
    odds = p / (1 - p) * np.where(inside, 2.0, 1.0)
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(np.int8)
    df = pd.DataFrame(codes, columns=[f"a{j}" for j in range(m)])
    return df, y, p, inside


def run_montecarlo(c):
    def go():
        return D.monte_carlo(jax.random.key(0), ofijax.marginal_benefit, D.uniform_sampler(c["n"]),
                             c["num"], chunk_size=c["chunk"])

    s, first, warm = timed(go)
    return {"samples": c["num"], "first_s": first, "warm_s": warm,
            "rate_per_s": c["num"] / warm, "mean": s.mean, "var": s.var}


def run_bias(c):
    df, y, p, inside = synthetic(c["n"], c["m"], c["v"])
    res, first, warm = timed(lambda: bias_scan(df, y, p, penalty=1e-17, search="coordinate_ascent", num_restarts=10))
    planted = res.subset == {"a0": (1, 2), "a1": (min(3, c["v"] - 1),)}
    return {"rows": c["n"], "attributes": c["m"], "values": c["v"], "first_s": first,
            "warm_s": warm, "rows_per_s": c["n"] / warm, "score": res.score,
            "found_planted": planted}


def run_fpr_randomization(c):
    df, _, _, inside = synthetic(c["n"], c["m"], c["v"], seed=1)
    rng = np.random.default_rng(2)
    odds = 0.3 / 0.7 * np.where(inside, 2.0, 1.0)
    yhat = (rng.uniform(size=c["n"]) < odds / (1 + odds)).astype(int)
    y = np.zeros(c["n"], int)
    res, first, warm = timed(lambda: fpr_scan(df, y, yhat, num_samples=c["reps"], key=0,
                                              beneficial_label=0))
    return {"rows": c["n"], "replicates": c["reps"], "first_s": first, "warm_s": warm,
            "replicates_per_s": c["reps"] / warm, "p_value": res.p_value}


def run_bias_randomization(c):
    df, y, p, _ = synthetic(c["n"], c["m"], c["v"], seed=3)
    res, first, warm = timed(lambda: bias_scan(df, y, p, penalty=1e-17,
                                               search="coordinate_ascent", num_samples=c["reps"], key=0))
    return {"rows": c["n"], "replicates": c["reps"], "first_s": first, "warm_s": warm,
            "replicates_per_s": c["reps"] / warm, "p_value": res.p_value}


def run_ijdi_randomization(c):
    from ofijax.datasets import load_compas

    df = load_compas(variant="ijdi")
    y = df["ReoffendedWithinTwoYears"].to_numpy()
    p_hat = np.asarray(DECILE_P)[df["COMPASPredictedDecileScore"].to_numpy() - 1]
    drop = {"Sex": "Female", "Prior Offenses": "None", "ChargeDegree": "M", "Under 25": False}
    p = estimate_true_probabilities(df[FEATURES], y, drop_first=drop)
    res, first, warm = timed(lambda: ijdi_scan(df[FEATURES], y, p_hat, p, lam=1.0, beneficial_label=0,
                                               num_samples=c["reps"], key=0, threshold=0.5))
    return {"rows": int((y == 0).sum()), "replicates": c["reps"], "first_s": first,
            "warm_s": warm, "replicates_per_s": c["reps"] / warm, "score": res.score,
            "p_value": res.p_value}


def run_batch_audit(c):
    from ofijax.auditing import audit_batch

    rng = np.random.default_rng(4)
    shares = np.array([0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
    g = rng.choice(len(shares), size=c["n"], p=shares)
    shift = np.linspace(-0.3, 0.3, len(shares))[g]
    y = (rng.random(c["n"]) < 0.4 + 0.1 * np.sign(shift)).astype(np.int8)
    score = 1.0 / (1.0 + np.exp(-(1.5 * (y - 0.5) + shift + rng.normal(0.0, 1.0, c["n"]))))
    thresholds = np.linspace(0.05, 0.95, c["thresholds"])
    groups = np.array([f"g{j}" for j in range(len(shares))])[g]
    res, first, warm = timed(lambda: audit_batch(y, scores=score, thresholds=thresholds,
                                                 sensitive_features=groups))
    pairs = res.pairs
    return {"rows": c["n"], "candidates": c["thresholds"], "pairs": len(pairs),
            "first_s": first, "warm_s": warm, "candidates_per_s": c["thresholds"] / warm,
            "approximate_share": float(np.mean(pairs["approximate"])) if "approximate" in pairs
            else float("nan")}


RUNNERS = {
    "montecarlo": run_montecarlo,
    "bias_rows": run_bias,
    "bias_wide": run_bias,
    "fpr_randomization": run_fpr_randomization,
    "bias_randomization": run_bias_randomization,
    "ijdi_randomization": run_ijdi_randomization,
    "batch_audit": run_batch_audit,
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds on a CPU)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder for the CSV files")
    ap.add_argument("--only", nargs="+", choices=sorted(RUNNERS), help="run only these")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    sizes = QUICK if args.quick else FULL
    names = args.only or list(RUNNERS)
    dev = device_name()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"device: {dev}")
    print(f"mode: {'quick' if args.quick else 'full'}")
    t_all = time.perf_counter()
    for name in names:
        row = {"workload": name, "device": dev, "mode": "quick" if args.quick else "full",
               **RUNNERS[name](sizes[name])}
        with open(args.out / f"{name}.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(row))
            w.writeheader()
            w.writerow(row)
        for k, v in row.items():
            if k in ("workload", "device", "mode"):
                continue
            val = f"{v:.4g}" if isinstance(v, float) else v
            print(f"{name}_{k}: {val}")
    print(f"total_s: {time.perf_counter() - t_all:.1f}")


if __name__ == "__main__":
    main()
