"""Benchmark: ``ofijax audit`` in a new process (compilation cache cold and warm) vs fairlearn.

Input: the embedded COMPAS "violent" data (4,020 rows, the OFI paper's), written once to a CSV so
both tools read the same file. Three timings, each a fresh Python process, wall clock:

* ``cli_cold``: ``python -m ofijax audit --data FILE ... --no-plots --quiet`` with an empty
  persistent compilation cache (``OFIJAX_CACHE_DIR`` a new folder): imports, compiles, runs.
* ``cli_warm``: the same command again with that cache folder now filled.
* ``fairlearn``: ``python -c`` that reads the CSV with pandas and computes the same by-group
  rates with ``fairlearn.metrics.MetricFrame`` (count, selection rate, FPR, FNR, TPR, TNR per race).
* ``cli_warm_plots``: the same cache-warm command without ``--no-plots`` (the default: two
  matplotlib heatmaps).
* for reference, ``python -c "import jax"`` and ``python -c "import ofijax"`` (new processes): the
  part of the CLI's time that is start-up (ml_dtypes 0.7.0 alone takes 1.3–2.5 s of ``import jax``
  with NumPy 2.4; 0.6.0 takes 0.01 s), and ``import_floor``: ``python -c "import jax, pandas"``,
  the libraries the audit cannot do without (JAX for the metrics and bootstrap, pandas to read
  the CSV; the exact p-values' log-binomials use ``math.lgamma``, no ``scipy.special``): no
  cache-warm CLI run can be faster than this.

The fairlearn side computes only the per-group rates; the ofijax audit also computes exact OFI
p-values, bootstrap intervals, DI/TE and verdicts. Goal (issue #14): cache-warm CLI ≤ 1.5 s.
Timings on a shared machine are noisy. Writes ``experiments/results/bench_audit.csv``; ends with
``name: value`` lines.

Usage: ``python experiments/bench_audit.py [--quick] [--repeats N]`` (``--quick``: one repeat).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"

FAIRLEARN = r"""
import sys
import pandas as pd
from fairlearn.metrics import (MetricFrame, count, false_negative_rate, false_positive_rate,
                               selection_rate, true_negative_rate, true_positive_rate)
df = pd.read_csv(sys.argv[1])
mf = MetricFrame(metrics={"count": count, "selection_rate": selection_rate,
                          "fpr": false_positive_rate, "fnr": false_negative_rate,
                          "tpr": true_positive_rate, "tnr": true_negative_rate},
                 y_true=df["label_not_recid"], y_pred=df["pred_low_risk"],
                 sensitive_features=df["race"])
print(mf.by_group.to_csv())
"""


def run(cmd, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   cwd=ROOT)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args()
    reps = args.repeats or (1 if args.quick else 3)
    sys.path.insert(0, str(ROOT))
    from ofijax.datasets import load_compas

    tmp = Path(tempfile.mkdtemp(prefix="ofijax-bench-audit-"))
    data = tmp / "compas_violent.csv"
    df = load_compas(variant="violent")
    df.to_csv(data, index=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OFIJAX_PROGRESS": "0"}
    cli = [sys.executable, "-m", "ofijax", "audit", "--data", str(data), "--label",
           "label_not_recid", "--pred", "pred_low_risk", "--group", "race", "--no-plots",
           "--quiet"]
    rows = []
    for r in range(reps):
        cache = tmp / f"cache{r}"
        e = {**env, "OFIJAX_CACHE_DIR": str(cache)}
        cold = run(cli + ["--out", str(tmp / f"cold{r}")], e)
        warm = run(cli + ["--out", str(tmp / f"warm{r}")], e)
        plots = run([c for c in cli if c != "--no-plots"] + ["--out", str(tmp / f"plots{r}")], e)
        fl = run([sys.executable, "-c", FAIRLEARN, str(data)], env)
        jax_imp = run([sys.executable, "-c", "import jax"], env)
        floor = run([sys.executable, "-c", "import jax, pandas"], env)
        ofi_imp = run([sys.executable, "-c", "import ofijax"], e)
        rows.append(dict(repeat=r, rows=len(df), cli_cold_s=cold, cli_warm_s=warm,
                         cli_warm_plots_s=plots, fairlearn_s=fl, import_jax_s=jax_imp,
                         import_floor_s=floor, import_ofijax_s=ofi_imp,
                         load_average=" ".join(f"{x:.2f}" for x in os.getloadavg())))
        print(f"repeat {r}: cli cold {cold:.2f} s, cli warm {warm:.2f} s (with heatmaps "
              f"{plots:.2f} s), fairlearn {fl:.2f} s (new process: import jax {jax_imp:.2f} s, "
              f"import jax+pandas {floor:.2f} s, import ofijax {ofi_imp:.2f} s)",
              flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / ("bench_audit_quick.csv" if args.quick else "bench_audit.csv"), "w",
              newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    best = {k: min(r[k] for r in rows)
            for k in ("cli_cold_s", "cli_warm_s", "cli_warm_plots_s", "fairlearn_s", "import_jax_s",
                      "import_floor_s", "import_ofijax_s")}
    print(f"rows: {len(df)}")
    print(f"cli_cold_s: {best['cli_cold_s']:.2f}")
    print(f"cli_warm_s: {best['cli_warm_s']:.2f}")
    print(f"fairlearn_metricframe_s: {best['fairlearn_s']:.2f}")
    print(f"cli_warm_over_fairlearn: {best['cli_warm_s'] / best['fairlearn_s']:.2f}")
    print(f"cli_warm_plots_s: {best['cli_warm_plots_s']:.2f}")
    print(f"import_jax_s: {best['import_jax_s']:.2f}")
    print(f"import_floor_s: {best['import_floor_s']:.2f}")
    print(f"cli_warm_above_floor_s: {best['cli_warm_s'] - best['import_floor_s']:.2f}")
    print(f"import_ofijax_s: {best['import_ofijax_s']:.2f}")
    import ml_dtypes
    import numpy

    print(f"ml_dtypes: {ml_dtypes.__version__} (numpy {numpy.__version__})")
    print(f"cpu_count: {os.cpu_count()}")


if __name__ == "__main__":
    main()
