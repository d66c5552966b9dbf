"""IJDI paper, Experiment 1: recovering a known cutoff λ* (spec ``ijdi_algorithm.md`` §7.2).

Real COMPAS covariates; p and y simulated. True S = {race = African-American, sex = Male,
under_25 = False} (2,293 of 7,214 rows). p_i ~ U(0.51 ± 0.01k) in S and U(0.49 ± 0.01k) outside,
y_i ~ Bernoulli(p_i); the audited classifier is the truth itself (p̂_0 = p, θ = 0.5) and IJDI-Scan
uses the same p_i, on D_N (the negative side). Within D_N the criterion's cutoff is
λ*(k) = [FPR(S) − FPR(~S)] / [p(S) − p(~S)] = 50 (k = 0), 50.007, 16.660, 4.967 (k = 1, 3, 10):
for λ < λ* the scan should find S (IoU ≈ 1), for λ > λ* nothing (IoU = 0).

For every k ∈ {0, 1, 3, 10}, run r and λ in the grid, one IJDI-Scan (penalty 0.1, 10 restarts,
``mode="reference"``); the metric is the IoU over D_N records of the detected vs the true S
(0 when nothing is detected), plus the penalised score. The λ loop sits inside each run so that
every run compiles Algorithm 1 once (a new D_N has a new shape) and reuses it for all 11 λ.

Outputs (``experiments/results/``): ``ijdi_exp1_runs.csv`` (one row per k, run, λ),
``ijdi_exp1_summary.csv`` and ``ijdi_exp1_table.md`` (mean IoU / score / detection rate per k, λ),
``ijdi_exp1.png`` (one panel per k with λ*(k)).

Usage: ``python experiments/ijdi_exp1.py [--runs 40] [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ijdi_common as C  # noqa: E402


def scan_runs(ks, lambdas, runs, *, seed=0, num_restarts=C.NUM_RESTARTS, penalty=C.PENALTY,
              mode="reference", progress=False) -> pd.DataFrame:
    """Run Experiment 1 and return one row per (k, run, λ)."""
    import jax

    from ofijax.scan import ijdi_scan


    df = C.compas()
    X = df[list(C.COMPAS_FEATURES)]
    in_s = C.subgroup_mask(df, C.EXP1_SUBGROUP)
    base = jax.random.key(seed)
    rows = []
    for k in ks:
        for r in range(runs):
            rng = np.random.default_rng([seed, int(round(100 * k)), r])
            p, y = C.exp1_simulate(rng, in_s, k)
            neg = y == 0
            truth = in_s[neg]
            key = jax.random.fold_in(jax.random.fold_in(base, int(round(100 * k))), r)
            for lam in lambdas:
                res = ijdi_scan(X, y, p, p, lam=float(lam), side="negative", mode=mode,
                                beneficial_label=0,  # the paper's orientation: 1 = harmful
                                threshold=C.THRESHOLD, penalty=penalty,
                                num_restarts=num_restarts, key=key)
                rows.append({
                    "k": k, "run": r, "lam": float(lam),
                    "iou": C.iou(res.mask[neg], truth) if res.score > 0 else 0.0,
                    "score": float(res.score),
                    "detected": bool(res.score > 0),
                    "size": int(res.size),
                    "true_size": int(truth.sum()),
                    "n_side": int(neg.sum()),
                    "rescans": int(res.num_rescans),
                    "converged": bool(res.converged),
                    "subset": C.format_subset(res.subset),
                })
            if progress:
                last = rows[-len(lambdas):]
                print(f"k={k} run={r}: IoU " + " ".join(f"{x['iou']:.2f}" for x in last),
                      flush=True)
    return pd.DataFrame(rows)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby(["k", "lam"], sort=True)
    out = g.agg(
        runs=("iou", "size"),
        mean_iou=("iou", "mean"),
        sd_iou=("iou", "std"),
        mean_score=("score", "mean"),
        detection_rate=("detected", "mean"),
        mean_rescans=("rescans", "mean"),
    ).reset_index()
    out["lambda_star"] = out["k"].map(C.exp1_lambda_star)
    out["below_cutoff"] = out["lam"] < out["lambda_star"]
    return out


def plot(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib.pyplot as plt

    ks = sorted(summary["k"].unique())
    fig, axes = plt.subplots(1, len(ks), figsize=(3.6 * len(ks), 3.2), squeeze=False)
    for ax, k in zip(axes[0], ks):
        s = summary[summary["k"] == k]
        ax.plot(s["lam"], s["mean_iou"], "o-", color="C0", label="mean IoU")
        ax.set_ylim(-0.05, 1.05)
        ax.axvline(C.exp1_lambda_star(k), color="k", ls="--", lw=1,
                   label=f"λ* = {C.exp1_lambda_star(k):.3g}")
        ax.set_xlabel("λ")
        ax.set_title(f"k = {k:g}")
        ax2 = ax.twinx()
        ax2.plot(s["lam"], s["mean_score"], "s:", color="C1", ms=3, label="mean score")
        ax2.tick_params(axis="y", colors="C1")
        if k == ks[0]:
            ax.set_ylabel("IoU with true S (over D_N)")
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="center left")
        else:
            ax.legend(fontsize=7, loc="center left")
    fig.suptitle("IJDI Experiment 1: IoU of detected vs true subgroup (score on right axis)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def table(summary: pd.DataFrame) -> str:
    wide = summary.pivot(index="lam", columns="k", values="mean_iou")
    wide.columns = [f"IoU k={k:g}" for k in wide.columns]
    wide = wide.reset_index().rename(columns={"lam": "λ"})
    stars = ", ".join(f"λ*({k:g}) = {C.exp1_lambda_star(k):.3f}"
                      for k in sorted(summary["k"].unique()))
    n = int(summary["runs"].min())
    return f"Mean IoU over {n} runs per k ({stars}).\n\n" + C.markdown_table(wide, ".2f")


def main(argv=None) -> dict:
    ap = C.base_parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40,
                    help="runs per k (default 40, as the reference's stored output)")
    ap.add_argument("--restarts", type=int, default=C.NUM_RESTARTS)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    ks, lambdas, runs = C.EXP1_KS, C.EXP1_LAMBDAS, args.runs
    if args.quick:
        ks, lambdas, runs = (0, 3), (0.0, 12.0, 50.0, 80.0), min(args.runs, 2)
    with C.Timer() as t:
        res = scan_runs(ks, lambdas, runs, seed=args.seed, num_restarts=args.restarts,
                        progress=args.progress)
    summary = summarize(res)
    suffix = "_quick" if args.quick else ""
    C.write_csv(res, f"ijdi_exp1_runs{suffix}.csv")
    C.write_csv(summary, f"ijdi_exp1_summary{suffix}.csv")
    C.write_markdown(table(summary) + f"\n\nRuntime: {t.seconds:.0f} s ({C.cpu_count_note()}).",
                     f"ijdi_exp1_table{suffix}.md")
    if not args.no_plot:
        plot(summary, C.results_path(f"ijdi_exp1{suffix}.png"))
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    key = {}
    for k in ks:
        for lam in (0.0, 50.0):
            s = summary[(summary.k == k) & (summary.lam == lam)]
            if len(s):
                key[f"exp1_mean_iou_k{k:g}_lam{lam:g}"] = float(s.mean_iou.iloc[0])
    key["exp1_runs_per_k"] = runs
    key["exp1_scans"] = len(res)
    key["exp1_runtime_s"] = round(t.seconds, 1)
    C.print_key_values(key)
    return key


if __name__ == "__main__":
    main()
