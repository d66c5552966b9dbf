"""IJDI paper, real data: detected subgroups, scores and randomization p-values.

COMPAS (audited p̂_0 = the decile's empirical reoffence rate, p_i = the reference's logistic
regression) and German credit (audited p̂_0 = logistic regression, p_i = random forest), θ = 0.5,
both sides (negative: FPR on D_N; positive: TPR on D_P), λ ∈ {0, 0.3, 1, 3, 10}, penalty 0.1 per
included value, 10 restarts, ``mode="reference"``. Data preparation: ``ijdi_common`` (§7.1 of the
spec).

For each (data set, side, λ):

* the main run uses key ``seed`` and a Bernoulli randomization test with R replicates (default
  200): y* ~ Bernoulli(initial p_scan) on the same records, the whole Algorithm 1 rerun on each,
  p = (1 + #{F* ≥ F}) / (R + 1);
* the **spread over keys**: the same scan (no test) under ``--keys`` further PRNG keys. The
  reference runs its random restarts unseeded, so its reported subgroups can change from run to
  run; here each key is reproducible and the table shows how many distinct subgroups the keys
  give and the range of their scores.

Outputs (``experiments/results/``): ``ijdi_real.csv`` (main runs, with FPR/TPR and p inside and
outside the detected subgroup), ``ijdi_real_spread.csv`` (one row per key),
``ijdi_real_table.md``.

Usage: ``python experiments/ijdi_real.py [--replicates 200] [--test-lambdas 0 1] [--keys 4]
[--data compas german] [--sides negative positive] [--lambdas ...] [--quick]``. Each finished
setting is checkpointed (``results/ijdi_real_partial<--partial-suffix>.csv`` and ``_spread.csv``);
``--from-partial SUFFIX ...`` writes the outputs from one or more checkpoints (e.g. a COMPAS and a
German run in two processes). Cost: each replicate reruns the whole Algorithm 1 (rescans
included); on CPU the replicates run as serial slots, one worker thread per core.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ijdi_common as C  # noqa: E402

LAMBDAS = (0.0, 0.3, 1.0, 3.0, 10.0)


def datasets(names=("compas", "german")) -> dict:
    """{name: (X, y, p̂_0, p_i)} for the real-data scans."""
    out = {}
    if "compas" in names:
        d = C.compas()
        out["compas"] = (d[list(C.COMPAS_FEATURES)], d["outcomes"].to_numpy(),
                         d["proba_compas"].to_numpy(), d["proba_lr"].to_numpy())
    if "german" in names:
        g = C.german()
        out["german"] = (g[list(C.GERMAN_FEATURES)], g["outcomes"].to_numpy(),
                         g["proba_lr"].to_numpy(), g["proba_rf"].to_numpy())
    return out


def describe(mask, on_side, yb, p):
    """Rates inside/outside the detected subgroup, on the scanned side."""
    s = mask[on_side]
    rate_s = float(yb[on_side][s].mean()) if s.any() else float("nan")
    rate_o = float(yb[on_side][~s].mean()) if (~s).any() else float("nan")
    p_s = float(p[on_side][s].mean()) if s.any() else float("nan")
    p_o = float(p[on_side][~s].mean()) if (~s).any() else float("nan")
    return rate_s, rate_o, p_s, p_o


def run(names=("compas", "german"), sides=("negative", "positive"), lambdas=LAMBDAS, *,
        replicates=200, keys=4, seed=0, num_restarts=C.NUM_RESTARTS, penalty=C.PENALTY,
        test_lambdas=None, progress=False, checkpoint=None):
    """Main runs (with a randomization test at the λ in ``test_lambdas``; default all) and spread."""
    import jax

    from ofijax.scan import ijdi_scan


    main_rows, spread_rows = [], []
    for name, (X, y, p_hat, p) in datasets(names).items():
        yb = (p_hat >= C.THRESHOLD).astype(np.float64)
        for side in sides:
            on_side = y == (0 if side == "negative" else 1)
            for lam in lambdas:
                kw = dict(lam=float(lam), side=side, threshold=C.THRESHOLD, penalty=penalty,
                          num_restarts=num_restarts, beneficial_label=0)  # 1 = harmful
                r_here = replicates if test_lambdas is None or lam in test_lambdas else 0
                with C.Timer() as t:
                    res = ijdi_scan(X, y, p_hat, p, key=jax.random.key(seed),
                                    num_samples=r_here, **kw)
                rate_s, rate_o, p_s, p_o = describe(res.mask, on_side, yb, p)
                main_rows.append({
                    "data": name, "side": side, "lam": float(lam),
                    "subset": C.format_subset(res.subset), "score": float(res.score),
                    "size": int(res.size), "n_side": int(on_side.sum()),
                    "p_value": float(res.p_value), "replicates": r_here,
                    "rate_in_S": rate_s, "rate_outside": rate_o, "p_in_S": p_s,
                    "p_outside": p_o, "q": float(res.q), "rescans": int(res.num_rescans),
                    "edge_cases": ",".join(h.edge_case for h in res.history[:-1]) or "-",
                    "converged": bool(res.converged), "unbounded": bool(res.unbounded),
                    "seconds": round(t.seconds, 1),
                })
                for j in range(keys + 1):  # key `seed` again (no test) + `keys` more
                    k_res = res if j == 0 else ijdi_scan(
                        X, y, p_hat, p, key=jax.random.key(seed + j), **kw)
                    spread_rows.append({
                        "data": name, "side": side, "lam": float(lam), "key": seed + j,
                        "subset": C.format_subset(k_res.subset), "score": float(k_res.score),
                        "size": int(k_res.size), "unbounded": bool(k_res.unbounded),
                    })
                if checkpoint is not None:  # what ran so far (an interrupted run keeps it)
                    pd.DataFrame(main_rows).to_csv(f"{checkpoint}.csv", index=False)
                    pd.DataFrame(spread_rows).to_csv(f"{checkpoint}_spread.csv", index=False)
                if progress:
                    r = main_rows[-1]
                    print(f"{name} {side} λ={lam:g}: {r['subset']} score {r['score']:.3f} "
                          f"p {r['p_value']:.3f} ({t.seconds:.1f} s)", flush=True)
    return pd.DataFrame(main_rows), pd.DataFrame(spread_rows)


def spread_summary(spread: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (name, side, lam), s in spread.groupby(["data", "side", "lam"], sort=False):
        counts = s.subset.value_counts()
        out.append({
            "data": name, "side": side, "lam": lam, "keys": len(s),
            "distinct_subgroups": int(counts.size),
            "modal_subgroup_share": float(counts.iloc[0] / len(s)),
            "score_min": float(s.score.min()), "score_max": float(s.score.max()),
            "unbounded_keys": int(s.unbounded.sum()) if "unbounded" in s else 0,
        })
    return pd.DataFrame(out)


def table(main: pd.DataFrame, spread: pd.DataFrame) -> str:
    cols = ["data", "side", "lam", "subset", "size", "score", "p_value", "rate_in_S",
            "rate_outside", "p_in_S", "p_outside", "edge_cases", "unbounded"]
    m = main[cols].rename(columns={"lam": "λ", "rate_in_S": "FPR/TPR(S)",
                                   "rate_outside": "FPR/TPR(~S)", "p_in_S": "p(S)",
                                   "p_outside": "p(~S)", "edge_cases": "adjustments"})
    r = int(main.replicates.max()) if len(main) else 0
    txt = (f"Key 0, randomization test with R = {r} replicates (p = (1 + #{{F* ≥ F}})/(R + 1); "
           "NaN where no test was run). *unbounded*: every scanned row of S has the outcome, so "
           "q runs to its cap and the score measures the cap (log(1/p_epsilon) per row with raw "
           "p_scan < 0), not a finding.\n\n"
           + C.markdown_table(m, ".3f"))
    ss = spread_summary(spread)
    if len(ss):
        txt += ("\n\nSpread over PRNG keys (the restarts' randomness): distinct detected subgroups "
                "and score range.\n\n" + C.markdown_table(ss, ".3f"))
    return txt


def main(argv=None) -> dict:
    ap = C.base_parser(__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200, help="randomization replicates R")
    ap.add_argument("--keys", type=int, default=4, help="extra PRNG keys for the spread")
    ap.add_argument("--test-lambdas", type=float, nargs="*", default=None,
                    help="λ values that get the randomization test (default: all)")
    ap.add_argument("--restarts", type=int, default=C.NUM_RESTARTS)
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--data", nargs="+", default=["compas", "german"])
    ap.add_argument("--sides", nargs="+", default=["negative", "positive"])
    ap.add_argument("--lambdas", type=float, nargs="+", default=list(LAMBDAS))
    ap.add_argument("--from-partial", nargs="*", default=None, metavar="SUFFIX",
                    help="write the outputs from the checkpoint CSVs of interrupted runs "
                         "(their --partial-suffix values; none = the default checkpoint)")
    ap.add_argument("--partial-suffix", default="",
                    help="checkpoint name suffix, so that runs in parallel processes "
                         "(e.g. --data german) do not overwrite each other")
    args = ap.parse_args(argv)
    names, sides, lams, reps, keys = (tuple(args.data), tuple(args.sides), tuple(args.lambdas),
                                      args.replicates, args.keys)
    if args.quick:
        names, sides, lams, reps, keys = ("compas",), ("negative",), (0.0, 1.0), 19, 1
    suffix = "_quick" if args.quick else ""
    partial = C.results_path(f"ijdi_real_partial{suffix}{args.partial_suffix}")
    with C.Timer() as t:
        if args.from_partial is not None:
            stems = [C.results_path(f"ijdi_real_partial{suffix}{s}")
                     for s in (args.from_partial or [""])]
            main_df = pd.concat([pd.read_csv(f"{s}.csv") for s in stems], ignore_index=True)
            spread = pd.concat([pd.read_csv(f"{s}_spread.csv") for s in stems],
                               ignore_index=True)
            reps = int(main_df.replicates.max())
        else:
            main_df, spread = run(names, sides, lams, replicates=reps, keys=keys,
                                  seed=args.seed, num_restarts=args.restarts,
                                  test_lambdas=args.test_lambdas, progress=args.progress,
                                  checkpoint=partial)
    C.write_csv(main_df, f"ijdi_real{suffix}.csv")
    C.write_csv(spread, f"ijdi_real_spread{suffix}.csv")
    runtime = float(main_df.seconds.sum()) if args.from_partial is not None else t.seconds
    C.write_markdown(table(main_df, spread) + f"\n\nRuntime: {runtime:.0f} s "
                     f"({C.cpu_count_note()}).", f"ijdi_real_table{suffix}.md")
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(main_df[["data", "side", "lam", "subset", "size", "score", "p_value"]].to_string(
            index=False))
    key = {}
    for _, r in main_df.iterrows():
        if r.lam in (0.0, 1.0):
            tag = f"real_{r.data}_{r.side}_lam{r.lam:g}"
            key[f"{tag}_subset"] = r.subset
            key[f"{tag}_score"] = round(r.score, 4)
            key[f"{tag}_p_value"] = round(r.p_value, 4)
    key["real_replicates"] = reps
    key["real_runtime_s"] = round(t.seconds, 1)
    C.print_key_values(key)
    return key


if __name__ == "__main__":
    main()
