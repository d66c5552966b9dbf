"""How often do the scans miss the global optimum? Random small tables against brute force (#43).

For each random table (3 attributes with 3 values each, n in {14, 20, 40, 80} rows, a planted
raised error rate on a random subgroup or none, a penalty in {0.1, 0.5, 1}), every subgroup is scored by an independent brute force in
NumPy (the closed form of FPR-/TPR-Scan's score: max over q in [1, q_hi] of
Y_S log q - n_S log(1 - p + q p), minus the penalty per listed value of each constrained
attribute), and the scan's score is compared with the best. A *miss* is a scan score more than
1e-9 (relative) below the brute-force optimum; a *false "no subgroup"* a scan that reports score 0
while some subgroup scores above 0.

Searches measured: FPR-Scan's ``search="coordinate_ascent"`` (MDSS's multi-start local search,
the default 10 restarts and 50) and ``search="auto"`` (exhaustive on these spaces: certified);
Bias Scan's ``"coordinate_ascent"`` and ``"auto"`` (expectations p in {0.15, 0.25, 0.35, 0.45};
brute force by a bounded Brent search per subgroup, so a miss there is > 1e-7 relative).

    python experiments/scan_miss_rate.py [--tables 200] [--out experiments/results/scan_miss_rate.csv]
                                         [--no-seeds]

Coordinate ascent runs its random restarts, the greedy lane and, on these small tables, the seeded
lanes (every single value and pair of values, ``ofijax.scan._plan.seed_starts``); ``--no-seeds``
measures it without the seeded lanes (the search before issue #43's item 4).

Writes one row per (search, restarts) with tables, misses, false "no subgroup"s, the miss rate and a
95% Clopper-Pearson upper bound, and prints them.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import time

import numpy as np
import pandas as pd
from scipy import stats as sps

from ofijax.scan import bias_scan, fpr_scan

Q_HI = 1e6
EPS = 1e-6


def subgroups(frame: pd.DataFrame):
    """Every subgroup of the table's attribute space: ``(rows inside, values listed)`` for each
    choice, per attribute, of no constraint or a proper nonempty subset of its values."""
    cols = list(frame.columns)
    options = []
    for c in cols:
        vals = sorted(frame[c].unique())
        subs = [(None, 0)]  # unconstrained
        for r in range(1, len(vals)):
            subs += [(set(s), r) for s in itertools.combinations(vals, r)]
        options.append(subs)
    codes = {c: frame[c].to_numpy() for c in cols}
    for combo in itertools.product(*options):
        inside = np.ones(len(frame), bool)
        pen = 0
        for c, (s, r) in zip(cols, combo, strict=True):
            if s is not None:
                inside &= np.isin(codes[c], list(s))
                pen += r
        yield inside, pen


def brute_force(frame: pd.DataFrame, y: np.ndarray, penalty: float) -> float:
    """The best FPR-Scan score over every subgroup (all scanned rows: y = harmful prediction)."""
    pbar = min(max(y.mean(), EPS), 1 - EPS)
    t_hi = math.log(Q_HI)
    best = 0.0
    if y.sum() in (0, len(y)):
        return 0.0  # uniform predictions: no subgroup
    for inside, pen in subgroups(frame):
        n_s = int(inside.sum())
        if n_s == 0:
            continue
        y_s = float(y[inside].sum())
        rate = y_s / n_s
        if rate <= pbar:
            gain = 0.0
        else:
            t = t_hi if rate >= 1 else min(t_hi, math.log(rate * (1 - pbar) / (pbar * (1 - rate))))
            gain = y_s * t - n_s * math.log1p(pbar * math.expm1(t))
        best = max(best, gain - penalty * pen)
    return best


def brute_force_bias(frame: pd.DataFrame, y: np.ndarray, p: np.ndarray, penalty: float) -> float:
    """The best Bias Scan score (positive direction) over every subgroup: for each, the concave
    1-D maximum over t = log q in [0, log q_hi] of sum_S [y t - log(1 - p + p e^t)] by
    scipy's bounded Brent search, minus the penalty per listed value."""
    from scipy.optimize import minimize_scalar

    t_hi = math.log(Q_HI)
    best = 0.0
    for inside, pen in subgroups(frame):
        if not inside.any():
            continue
        ys, ps = y[inside], p[inside]

        def neg(t, ys=ys, ps=ps):
            return -(ys.sum() * t - np.log1p(ps * np.expm1(t)).sum())

        if ys.sum() <= ps.sum():  # the LLR's slope at q = 1 is sum(y - p): no gain above 1
            gain = 0.0
        else:
            opt = minimize_scalar(neg, bounds=(0.0, t_hi), method="bounded",
                                  options={"xatol": 1e-12})
            gain = max(0.0, -float(opt.fun), -float(neg(t_hi)))
        best = max(best, gain - penalty * pen)
    return best


def random_table(rng: np.random.Generator):
    m, v = 3, [3, 3, 3]  # one attribute space (343 subgroups), so the scans compile once
    n = int(rng.choice([14, 20, 40, 80]))
    frame = pd.DataFrame({f"a{j}": rng.integers(0, v[j], n).astype(str) for j in range(m)})
    base = rng.uniform(0.1, 0.5)
    planted = np.ones(n, bool)
    for j in range(m):
        if rng.random() < 0.6:
            planted &= frame[f"a{j}"].isin([str(x) for x in rng.choice(v[j], 1)]).to_numpy()
    if rng.random() < 0.3:
        planted[:] = False
    rate = np.where(planted, min(0.95, base + rng.uniform(0.2, 0.5)), base)
    y = (rng.random(n) < rate).astype(int)
    penalty = float(rng.choice([0.1, 0.5, 1.0]))
    return frame, y, penalty


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                   "scan_miss_rate.csv"))
    ap.add_argument("--no-seeds", action="store_true",
                    help="coordinate ascent without the seeded lanes (restarts and greedy lane)")
    args = ap.parse_args()
    if args.no_seeds:
        from ofijax.scan import _plan

        _plan.SEED_MAX_CELLS = -1  # no table gets seeded lanes
        os.environ["OFIJAX_AOT"] = "0"  # kept executables (with seeds) are keyed by the source
    rng = np.random.default_rng(args.seed)
    runs = [("fpr_scan", "coordinate_ascent", 10), ("fpr_scan", "coordinate_ascent", 50),
            ("fpr_scan", "auto", 10), ("bias_scan", "coordinate_ascent", 10),
            ("bias_scan", "auto", 10)]
    counts = {r: [0, 0, 0] for r in runs}  # tables, misses, false "no subgroup"
    t0 = time.perf_counter()
    for i in range(args.tables):
        frame, y, penalty = random_table(rng)
        best = {"fpr_scan": brute_force(frame, y.astype(float), penalty)}
        # Bias Scan: expectations from four levels (exact basis), outcomes as drawn above
        p = rng.choice([0.15, 0.25, 0.35, 0.45], len(y))
        best["bias_scan"] = brute_force_bias(frame, y.astype(float), p, penalty)
        y_true = np.ones(len(y), int)  # every row scanned (FPR-Scan's side); 1 = beneficial
        for scan, search, restarts in runs:
            if scan == "fpr_scan":
                r = fpr_scan(frame, y_true, 1 - y, penalty=penalty, num_restarts=restarts,
                             key=i, search=search)
                tol = 1e-9
            else:
                r = bias_scan(frame, y, p, penalty=penalty, num_restarts=restarts, key=i,
                              search=search)
                tol = 1e-7  # the brute force's bounded Brent search
            best_s = best[scan]
            c = counts[(scan, search, restarts)]
            c[0] += 1
            if r.score < best_s - tol * max(1.0, abs(best_s)):
                c[1] += 1
                if r.score <= 0.0 and best_s > 0:
                    c[2] += 1
            if search == "auto":
                assert r.search == "exhaustive" and r.certified, r.search
    rows = []
    for (scan, search, restarts), (tables, misses, none) in counts.items():
        hi = float(sps.beta.ppf(0.975, misses + 1, tables - misses)) if misses < tables else 1.0
        rows.append({"scan": scan, "search": search, "num_restarts": restarts,
                     "tables": tables, "misses": misses, "false_no_subgroup": none,
                     "miss_rate": misses / tables, "miss_rate_upper95": hi})
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for row in rows:
        print(row)
    print(f"{args.tables} tables in {time.perf_counter() - t0:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
