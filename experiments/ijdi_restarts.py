"""How many restarts make IJDI-Scan's top result stable across PRNG keys (issue #17)?

For COMPAS and German credit (the inputs of ``ijdi_real.py``), both sides, λ ∈ {0, 1, 3} (or
``--lambdas``) and each restart count in ``--restarts``, IJDI-Scan (Algorithm 1, penalty 0.1,
``mode="reference"``) runs under ``--keys`` PRNG keys (default 10). Every rescan of Algorithm 1
draws fresh restarts (``rescan_key``). A setting is *stable* when every key returns the same
subgroup. Reports, per restart count, the share of settings that are stable and the mean share of
keys that return the modal subgroup; the recommended default is the smallest count whose settings
are all stable (or the best one tried).

Writes ``experiments/results/ijdi_restarts.csv`` (one row per setting and restart count) and ends
with ``name: value`` lines. Usage: ``python experiments/ijdi_restarts.py [--quick]
[--keys 10] [--restarts 10 25 50] [--lambdas 0 1 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OFIJAX_PROGRESS", "0")

import ijdi_common as C  # noqa: E402
import jax  # noqa: E402
from ijdi_real import datasets  # noqa: E402

from ofijax.scan import ijdi_scan  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="COMPAS negative side, λ = 1, 3 keys")
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--restarts", type=int, nargs="+", default=[10, 25, 50])
    ap.add_argument("--lambdas", type=float, nargs="+", default=[0.0, 1.0, 3.0])
    ap.add_argument("--data", nargs="+", default=["compas", "german"])
    ap.add_argument("--sides", nargs="+", default=["negative", "positive"])
    ap.add_argument("--from-csv", action="store_true",
                    help="summarize results/ijdi_restarts.csv (e.g. of an interrupted run)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    names, sides, lams, keys, restarts = (args.data, args.sides, args.lambdas, args.keys,
                                          args.restarts)
    if args.quick:
        names, sides, lams, keys, restarts = ["compas"], ["negative"], [1.0], 3, [5, 10]
    rows = []
    t_all = time.perf_counter()
    if args.from_csv:
        names = []
        rows = pd.read_csv(C.results_path("ijdi_restarts.csv")).to_dict("records")
    data = datasets(tuple(names)) if names else {}
    for name in names:
        X, y, p_hat, p = data[name]
        for side in sides:
            for lam in lams:
                for r in restarts:
                    subs, scores = [], []
                    t0 = time.perf_counter()
                    for k in range(keys):
                        res = ijdi_scan(X, y, p_hat, p, lam=lam, side=side, num_restarts=r,
                                        key=jax.random.key(k), beneficial_label=0)
                        subs.append(C.format_subset(res.subset))
                        scores.append(res.score)
                    counts = pd.Series(subs).value_counts()
                    rows.append(dict(data=name, side=side, lam=lam, restarts=r, keys=keys,
                                     distinct=int(counts.size),
                                     modal_share=float(counts.iloc[0] / keys),
                                     modal_subset=counts.index[0],
                                     score_min=float(np.min(scores)),
                                     score_max=float(np.max(scores)),
                                     seconds=time.perf_counter() - t0))
                    C.write_csv(pd.DataFrame(rows), "ijdi_restarts_quick.csv" if args.quick
                                else "ijdi_restarts.csv")  # what ran so far
                    print(f"{name} {side} λ={lam:g} restarts={r}: {counts.size} distinct, modal "
                          f"share {counts.iloc[0] / keys:.2f}, scores "
                          f"{np.min(scores):.3f}–{np.max(scores):.3f}", flush=True)
    df = pd.DataFrame(rows)
    C.write_csv(df, "ijdi_restarts_quick.csv" if args.quick else "ijdi_restarts.csv")
    wide = df.pivot_table(index=["data", "side", "lam", "keys"], columns="restarts",
                          values="modal_share").reset_index()
    wide.columns = [c if isinstance(c, str) else f"modal share, {c} restarts"
                    for c in wide.columns]
    dist = df.pivot_table(index=["data", "side", "lam"], columns="restarts", values="distinct")
    for r in dist.columns:
        wide[f"distinct, {r} restarts"] = dist[r].astype("Int64").to_numpy()
    C.write_markdown(
        "Share of PRNG keys returning the modal subgroup, and the number of distinct subgroups, "
        "per restart count (10 = the reference's).\n\n" + C.markdown_table(wide, ".2f"),
        "ijdi_restarts_quick.md" if args.quick else "ijdi_restarts.md")
    summary = df.groupby("restarts").agg(stable=("distinct", lambda d: float(np.mean(d == 1))),
                                         modal_share=("modal_share", "mean"))
    print(summary.to_string())
    all_stable = summary.index[summary.stable == 1.0]
    best = int(all_stable.min()) if len(all_stable) else int(summary.stable.idxmax())
    for r, s in summary.iterrows():
        print(f"stable_share_restarts{r}: {s.stable:.2f}")
        print(f"modal_share_restarts{r}: {s.modal_share:.2f}")
    print(f"recommended_restarts: {best}")
    print(f"all_settings_stable_at_recommended: {bool(len(all_stable))}")
    print(f"runtime_s: {time.perf_counter() - t_all:.0f}")


if __name__ == "__main__":
    main()
