"""IJDI paper, Experiment 2: injected bias, detection vs λ (spec ``ijdi_algorithm.md`` §7.3).

Real COMPAS covariates. The true p_i is an in-sample logistic regression on the real outcomes
**without** the attributes that can define S (sex, race, under_25 are all left out, so p_i depends
on charge_degree and prior_offenses only; §7.3 leaves open whether all three are dropped). Each
run:

1. draws a random true subgroup S over (sex, race, under_25): per attribute a uniform random
   non-empty value subset, constrained only if strict; redrawn if nothing is constrained;
2. re-simulates the outcomes y ~ Bernoulli(p_i) and, for the "learned" variant, refits p_i by the
   reference's logistic regression on all 5 scan features and the simulated y (in sample);
3. injects bias of log-odds size ε into S's recommendations, two ways:
   probability shift p̂_0 = sigmoid(logit p_i + ε) in S (θ = 0.5), and threshold shift p̂_0 = p_i
   with θ_S = sigmoid(−ε) (0.4256 / 0.2689 / 0.0474 for ε = 0.3 / 1 / 3);
4. runs IJDI-Scan on both sides (D_N: FPR, D_P: TPR), with the true and the learned p_i, for every
   λ, and records the IoU (over the side's records) of the detected vs the true S.

ε = 0 means no injection (the two injections coincide; it is scanned once and reported under
both). Grids: ε ∈ {0, 0.3, 1, 3}, λ ∈ {0, 0.2, 0.5, 1, 2, 5, 10, 20, 50}; penalty 0.1, 10
restarts. The outcomes change every run, so each run compiles Algorithm 1 once per side and reuses
it for its 7 × 2 × 9 scans on that side.

Outputs (``experiments/results/``): ``ijdi_exp2_runs.csv``, ``ijdi_exp2_summary.csv``,
``ijdi_exp2_table.md`` and ``ijdi_exp2.png`` (mean IoU vs λ; rows: side × p_i, columns: injection).

Usage: ``python experiments/ijdi_exp2.py [--runs N] [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ijdi_common as C  # noqa: E402

DEFAULT_RUNS = 2


def scan_runs(epsilons, lambdas, runs, *, sides=("negative", "positive"),
              p_kinds=("true", "learned"), seed=0, num_restarts=C.NUM_RESTARTS,
              penalty=C.PENALTY, progress=False, checkpoint=None) -> pd.DataFrame:
    """Run Experiment 2 and return one row per (run, side, injection, ε, p_kind, λ)."""
    import jax

    from ofijax.scan import ijdi_scan


    df = C.compas()
    X = df[list(C.COMPAS_FEATURES)]
    p_true = C.exp2_true_probabilities(df)
    base = jax.random.key(seed)
    rows = []
    cols = ["run", "side", "injection", "eps", "p_kind", "lam", "iou", "score", "detected",
            "size", "true_size", "n_side", "rescans", "true_subset", "subset"]
    for r in range(runs):
        rng = np.random.default_rng([seed, 2, r])
        subset = C.exp2_random_subgroup(rng, df)
        in_s = C.subgroup_mask(df, subset)
        y = (rng.uniform(size=len(df)) < p_true).astype(np.int64)
        p_of = {"true": p_true}
        if "learned" in p_kinds:
            p_of["learned"] = C.compas_lr_probabilities(df, y)
        key = jax.random.fold_in(base, r)
        injections = [("none", 0.0)] if 0.0 in epsilons else []
        injections += [(kind, e) for kind in ("proba", "threshold") for e in epsilons if e != 0]
        for side in sides:
            on_side = y == (0 if side == "negative" else 1)
            truth = in_s[on_side]
            for kind, eps in injections:
                p_hat, theta = C.exp2_inject(p_true, in_s, eps, "proba" if kind == "none" else kind)
                for pk in p_kinds:
                    for lam in lambdas:
                        res = ijdi_scan(X, y, p_hat, p_of[pk], lam=float(lam), side=side,
                                        beneficial_label=0,  # 1 = harmful, as in the paper
                                        threshold=theta, penalty=penalty,
                                        num_restarts=num_restarts, key=key)
                        base_row = {
                            "run": r, "side": side, "eps": eps, "p_kind": pk, "lam": float(lam),
                            "iou": C.iou(res.mask[on_side], truth) if res.score > 0 else 0.0,
                            "score": float(res.score), "detected": bool(res.score > 0),
                            "size": int(res.size), "true_size": int(truth.sum()),
                            "n_side": int(on_side.sum()), "rescans": int(res.num_rescans),
                            "true_subset": C.format_subset(subset),
                            "subset": C.format_subset(res.subset),
                        }
                        for inj in (("proba", "threshold") if kind == "none" else (kind,)):
                            rows.append({**base_row, "injection": inj})
            if progress:
                print(f"run {r} side {side}: S = {C.format_subset(subset)} "
                      f"(|S ∩ side| = {int(truth.sum())}); {len(rows)} rows", flush=True)
        if checkpoint is not None:  # the runs so far, so an interrupted run can be summarized
            pd.DataFrame(rows)[cols].to_csv(checkpoint, index=False)
    return pd.DataFrame(rows)[cols]


def _injections_identical(runs: pd.DataFrame) -> bool:
    """Whether the probability and threshold shifts gave the same scan in every (run, setting)."""
    keys = ["run", "side", "eps", "p_kind", "lam"]
    a = runs[runs.injection == "proba"].set_index(keys).sort_index()
    b = runs[runs.injection == "threshold"].set_index(keys).sort_index()
    return bool(len(a) == len(b) and np.allclose(a.score, b.score, rtol=1e-9, atol=1e-9)
                and (a.subset == b.subset).all())


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby(["side", "injection", "p_kind", "eps", "lam"], sort=True)
    out = g.agg(runs=("iou", "size"), mean_iou=("iou", "mean"), sd_iou=("iou", "std"),
                mean_score=("score", "mean"), detection_rate=("detected", "mean")).reset_index()
    out.insert(out.columns.get_loc("sd_iou") + 1, "se_iou", out.sd_iou / np.sqrt(out.runs))
    return out


def best_lambda(summary: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (side, injection, p_kind, ε > 0): IoU at λ = 0, the best λ and its IoU, IoU at max λ.

    With ``runs``, also the paired differences over runs (the same random subgroups at every λ)
    of the best λ's IoU minus the IoU at λ = 0 and at the largest λ, with their standard errors
    (the best λ is picked from the same runs, so these differences are biased upwards a little).
    """
    out = []
    for keys, s in summary[summary.eps > 0].groupby(["side", "injection", "p_kind", "eps"]):
        s = s.sort_values("lam")
        best = s.loc[s.mean_iou.idxmax()]
        row = {
            "side": keys[0], "injection": keys[1], "p_kind": keys[2], "eps": keys[3],
            "iou_lam0": float(s.mean_iou.iloc[0]), "best_lam": float(best.lam),
            "best_iou": float(best.mean_iou), "iou_lam_max": float(s.mean_iou.iloc[-1]),
        }
        if runs is not None:
            r = runs[(runs.side == keys[0]) & (runs.injection == keys[1])
                     & (runs.p_kind == keys[2]) & (runs.eps == keys[3])]
            wide = r.pivot_table(index="run", columns="lam", values="iou")
            for name, ref in (("lam0", s.lam.iloc[0]), ("lam_max", s.lam.iloc[-1])):
                d = wide[best.lam] - wide[ref]
                row[f"gain_vs_{name}"] = float(d.mean())
                row[f"se_gain_vs_{name}"] = float(d.std(ddof=1) / np.sqrt(len(d))) if len(
                    d) > 1 else float("nan")
        out.append(row)
    return pd.DataFrame(out)


def plot(summary: pd.DataFrame, path: Path) -> None:
    import matplotlib.pyplot as plt

    panels = [(s, pk) for s in ("negative", "positive") for pk in ("true", "learned")
              if ((summary.side == s) & (summary.p_kind == pk)).any()]
    injections = [i for i in ("proba", "threshold") if (summary.injection == i).any()]
    fig, axes = plt.subplots(len(panels), len(injections),
                             figsize=(4.2 * len(injections), 2.8 * len(panels)), squeeze=False)
    eps_values = sorted(summary.eps.unique())
    for i, (side, pk) in enumerate(panels):
        for j, inj in enumerate(injections):
            ax = axes[i][j]
            for c, e in enumerate(eps_values):
                s = summary[(summary.side == side) & (summary.p_kind == pk)
                            & (summary.injection == inj) & (summary.eps == e)].sort_values("lam")
                x = np.arange(len(s))
                ax.plot(x, s.mean_iou, "o-", ms=3, color=f"C{c}", label=f"ε = {e:g}")
            lams = sorted(summary.lam.unique())
            ax.set_xticks(np.arange(len(lams)))
            ax.set_xticklabels([f"{v:g}" for v in lams], fontsize=7)
            ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{side} side ({'FPR' if side == 'negative' else 'TPR'}), {pk} p_i, "
                         f"{inj} shift", fontsize=8)
            if j == 0:
                ax.set_ylabel("mean IoU")
            if i == len(panels) - 1:
                ax.set_xlabel("λ")
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    n = int(summary.runs.min())
    fig.suptitle(f"IJDI Experiment 2: detection of an injected subgroup vs λ ({n} runs)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def table(summary: pd.DataFrame, runs: pd.DataFrame | None = None) -> str:
    parts = []
    s0 = summary[summary.injection == "proba"]  # the threshold shift gives identical scans
    for (side, pk), s in s0.groupby(["side", "p_kind"]):
        s = s.assign(cell=[f"{m:.2f} ± {e:.2f}" for m, e in zip(s.mean_iou, s.se_iou)])
        wide = s.pivot(index="lam", columns="eps", values="cell")
        wide.columns = [f"ε={e:g}" for e in wide.columns]
        wide = wide.reset_index().rename(columns={"lam": "λ"})
        parts.append(f"**{side} side, {pk} p_i** (mean IoU ± standard error over runs)\n\n"
                     + C.markdown_table(wide, ".2f"))
    best = best_lambda(summary, runs)
    best = best[best.injection == "proba"].drop(columns="injection")
    if len(best):
        parts.append("**Best λ per setting** (mean IoU at λ = 0, at the best λ, at the largest "
                     "λ; gains: paired mean difference over runs ± standard error)"
                     "\n\n" + C.markdown_table(best, ".2f"))
    return "\n\n".join(parts)


def main(argv=None) -> dict:
    ap = C.base_parser(__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=DEFAULT_RUNS,
                    help=f"runs (random subgroups); default {DEFAULT_RUNS}")
    ap.add_argument("--restarts", type=int, default=C.NUM_RESTARTS)
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--from-runs", default=None,
                    help="summarize an existing runs CSV (e.g. the checkpoint) instead of scanning")
    ap.add_argument("--runtime-s", type=float, default=None,
                    help="with --from-runs: the scanning run's runtime, for the table note")
    args = ap.parse_args(argv)
    eps, lams, runs, sides, pks = (C.EXP2_EPSILONS, C.EXP2_LAMBDAS, args.runs,
                                   ("negative", "positive"), ("true", "learned"))
    if args.quick:
        eps, lams, runs, sides, pks = (0.0, 3.0), (0.0, 1.0, 50.0), 1, ("negative",), ("true",)
    suffix = "_quick" if args.quick else ""
    with C.Timer() as t:
        if args.from_runs:
            res = pd.read_csv(args.from_runs)
            runs = int(res.run.nunique())
        else:
            res = scan_runs(eps, lams, runs, sides=sides, p_kinds=pks, seed=args.seed,
                            num_restarts=args.restarts, progress=args.progress,
                            checkpoint=C.results_path(f"ijdi_exp2_runs_partial{suffix}.csv"))
    summary = summarize(res)
    C.write_csv(res, f"ijdi_exp2_runs{suffix}.csv")
    C.write_csv(summary, f"ijdi_exp2_summary{suffix}.csv")
    C.write_csv(best_lambda(summary, res), f"ijdi_exp2_best{suffix}.csv")
    same = _injections_identical(res)
    C.write_markdown(
        f"{runs} runs (random subgroups); proba shift shown: the threshold shift gives "
        f"{'identical' if same else 'different (!)'} results in every scan. " + table(summary, res)
        + f"\n\nRuntime: {args.runtime_s or t.seconds:.0f} s ({C.cpu_count_note()}).",
        f"ijdi_exp2_table{suffix}.md")
    if not args.no_plot:
        plot(summary, C.results_path(f"ijdi_exp2{suffix}.png"))
    print(best_lambda(summary, res).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    key = {}
    for side in sides:
        for inj in ("proba", "threshold"):
            for lam in (0.0, max(lams)):
                s = summary[(summary.side == side) & (summary.injection == inj)
                            & (summary.p_kind == "true") & (summary.eps == max(eps))
                            & (summary.lam == lam)]
                if len(s):
                    key[f"exp2_{side}_{inj}_eps{max(eps):g}_lam{lam:g}_iou"] = float(
                        s.mean_iou.iloc[0])
    best = best_lambda(summary, res)
    if len(best):
        key["exp2_mean_best_minus_lam0_iou"] = float((best.best_iou - best.iou_lam0).mean())
    null = summary[summary.eps == 0]
    key["exp2_eps0_mean_iou"] = float(null.mean_iou.mean()) if len(null) else float("nan")
    key["exp2_runs"] = runs
    key["exp2_scans"] = int(len(res[res.injection == "proba"]) + len(res[(res.injection ==
                            "threshold") & (res.eps > 0)]))
    key["exp2_runtime_s"] = round(args.runtime_s or t.seconds, 1)
    C.print_key_values(key)
    return key


if __name__ == "__main__":
    main()
