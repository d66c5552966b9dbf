"""IJDI paper, mitigation procedures (spec ``ijdi_algorithm.md`` §7.4).

**Approach 1: group thresholds on COMPAS.** Thresholds (African-American, others):
a (.45, .45), b (.50, .45), c (.45, .40), d (.50, .40). The fixed subgroup S = {race =
African-American} is not rescanned but scored directly, with Algorithm 1's edge-case logic applied
to that fixed S (edge case 1: p(S) < p(~S) → α-raise p on S; edge case 2: net clipping on S → β
or pin; repeated until S passes both tests), then the penalised Bias Scan score of S under the
adjusted null rates (``ofijax.scan.score_subset``, q ≥ 1, penalty 0.1 per value, so a subgroup
within its allowance scores −0.1). Negative (FPR) and positive (TPR) sides, λ ∈ {0, 0.3, 1, 3, 10};
FPR and TPR of AA vs others alongside.

**Approach 2: iterative subgroup thresholds** (COMPAS and German credit; each side on its own
filtered set). Start with θ = 0.5; run IJDI-Scan; stop if the score is ≤ 0; otherwise set the
detected S's target positive rate to clip(PR(~S) + λ(p(S) − p(~S)), 0, 1) with the raw p_i, set
θ_S to the (1 − target) quantile of p̂_0 within S (NumPy's linear interpolation) and rescan; at
most ``--max-iters`` (default 3, as the reference) threshold updates. The recommendation rule is
p̂_0 > θ here (``threshold_rule="gt"``, the reference's rule), since quantile thresholds can fall on
COMPAS's discrete decile probabilities. The thresholds are fitted per outcome class using y: an
analysis tool, not a deployable policy.

Outputs (``experiments/results/``): ``ijdi_mitigation_groups.csv`` (approach 1),
``ijdi_mitigation_iterative.csv`` (approach 2, one row per scan), ``ijdi_mitigation_table.md``.

Usage: ``python experiments/ijdi_mitigation.py [--max-iters 3] [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ijdi_common as C  # noqa: E402

LAMBDAS = (0.0, 0.3, 1.0, 3.0, 10.0)
SETTINGS = {"a": (0.45, 0.45), "b": (0.50, 0.45), "c": (0.45, 0.40), "d": (0.50, 0.40)}
AA = {"race": ["African-American"]}
EDGE_TOL = 1e-6  # the reference's tolerance for both edge tests
P_EPSILON = 1e-6  # p_scan clamp where it enters the score (ofijax.scan.ijdi_scan's default)


def fixed_subgroup_null(yb, p, in_s, lam, *, mode="reference", max_adjustments=100):
    """Algorithm 1's null rates for a **fixed** subgroup S (steps 1-2 and 3c-3e of §5.3).

    Args:
      yb: (n,) 0/1 recommendations on the side (D_N or D_P).
      p: (n,) base-rate probabilities on the side.
      in_s: (n,) bool membership of S.
      lam: λ.
      mode: "reference" (raw on S recomputed with the frozen p̄ after edge case 1) or "strict"
        (raw = p̄_b on S after edge case 1).

    Returns:
      (p_scan, adjustments): the adjusted null rates and the list of edge cases applied
      ("alpha", "beta", "pin").
    """
    yb = np.asarray(yb, dtype=np.float64)
    p_orig = np.asarray(p, dtype=np.float64)
    in_s = np.asarray(in_s, dtype=bool)
    pbar_b, pbar0 = yb.mean(), p_orig.mean()
    p_w = p_orig.copy()
    raw = pbar_b + lam * (p_w - pbar0)
    p_scan = np.clip(raw, 0.0, 1.0)
    c = p_scan - raw
    adjustments = []
    p_not_s = p_orig[~in_s].mean() if (~in_s).any() else pbar0
    for _ in range(max_adjustments):
        m_delta = (p_w[in_s] - pbar0).mean()
        m_c = c[in_s].mean()
        if m_delta < -EDGE_TOL:  # edge case 1: p(S) < p(~S)
            low = in_s & (p_w < p_not_s)
            alpha = (p_not_s - p_w[in_s]).sum() / (p_not_s - p_w[low]).sum()
            p_w[low] += alpha * (p_not_s - p_w[low])
            raw_s = np.full(in_s.sum(), pbar_b) if mode == "strict" else (
                pbar_b + lam * (p_w[in_s] - pbar0))
            raw[in_s] = raw_s
            p_scan[in_s] = np.clip(raw_s, 0.0, 1.0)
            c[in_s] = p_scan[in_s] - raw_s
            adjustments.append("alpha")
        elif m_c < -EDGE_TOL:  # edge case 2: net clipping on S
            if raw[in_s].mean() >= 1.0:
                p_scan[in_s] = 1.0
                c[in_s] = 0.0
                adjustments.append("pin")
            else:
                beta = (raw[in_s] - p_scan[in_s]).sum() / (1.0 - p_scan[in_s]).sum()
                upd = in_s & (p_scan < 1.0)
                p_scan[upd] += beta * (1.0 - p_scan[upd])
                c = p_scan - raw
                adjustments.append("beta")
        else:
            break
    return p_scan, adjustments


def score_fixed_subgroup(X_side, yb, p, subset, lam, *, penalty=C.PENALTY, mode="reference"):
    """Penalised IJDI score of a fixed subgroup (Algorithm 1's edge logic, no rescan)."""
    from ofijax.scan import score_subset

    in_s = C.subgroup_mask(X_side, subset)
    p_scan, adj = fixed_subgroup_null(yb, p, in_s, lam, mode=mode)
    p_scan = np.clip(p_scan, P_EPSILON, 1.0 - P_EPSILON)
    res = score_subset(X_side, yb.astype(np.int64), p_scan, subset, direction="positive",
                       penalty=penalty)
    return float(res.score), adj


def approach1(lambdas=LAMBDAS, settings=SETTINGS) -> pd.DataFrame:
    d = C.compas()
    X = d[list(C.COMPAS_FEATURES)]
    is_aa = C.subgroup_mask(d, AA)
    rows = []
    for label, (t_aa, t_other) in settings.items():
        theta = np.where(is_aa, t_aa, t_other)
        yb_all = (d["proba_compas"].to_numpy() >= theta).astype(np.float64)
        rates = {}
        for side, lab in (("negative", 0), ("positive", 1)):
            on = d["outcomes"].to_numpy() == lab
            rates[side] = (yb_all[on & is_aa].mean(), yb_all[on & ~is_aa].mean())
        for side, lab in (("negative", 0), ("positive", 1)):
            on = d["outcomes"].to_numpy() == lab
            Xs = X[on].reset_index(drop=True)
            for lam in lambdas:
                score, adj = score_fixed_subgroup(Xs, yb_all[on], d["proba_lr"].to_numpy()[on],
                                                  AA, lam)
                rows.append({
                    "setting": label, "theta_aa": t_aa, "theta_other": t_other, "side": side,
                    "lam": float(lam), "score": score, "adjustments": ",".join(adj) or "-",
                    "fpr_aa": rates["negative"][0], "fpr_other": rates["negative"][1],
                    "tpr_aa": rates["positive"][0], "tpr_other": rates["positive"][1],
                })
    return pd.DataFrame(rows)


def approach2(names=("compas", "german"), sides=("negative", "positive"), lambdas=LAMBDAS, *,
              max_iters=3, seed=0, num_restarts=C.NUM_RESTARTS, penalty=C.PENALTY,
              progress=False) -> pd.DataFrame:
    import jax

    from ofijax.scan import ijdi_scan


    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ijdi_real import datasets

    rows = []
    for name, (X, y, p_hat, p) in datasets(names).items():
        for side in sides:
            on = y == (0 if side == "negative" else 1)
            for lam in lambdas:
                theta = np.full(len(y), C.THRESHOLD)
                for it in range(max_iters + 1):
                    res = ijdi_scan(X, y, p_hat, p, lam=float(lam), side=side, threshold=theta,
                                    beneficial_label=0,  # 1 = harmful, as in the paper
                                    threshold_rule="gt", penalty=penalty,
                                    num_restarts=num_restarts, key=jax.random.key(seed))
                    yb = (p_hat > theta).astype(np.float64)
                    row = {"data": name, "side": side, "lam": float(lam), "iteration": it,
                           "subset": C.format_subset(res.subset), "score": float(res.score),
                           "size": int(res.size), "rate_all": float(yb[on].mean())}
                    if res.score <= 0:
                        rows.append(row)
                        break
                    s = res.mask & on
                    o = ~res.mask & on
                    pr_s, pr_o = yb[s].mean(), yb[o].mean()
                    target = float(np.clip(pr_o + lam * (p[s].mean() - p[o].mean()), 0.0, 1.0))
                    row.update(rate_in_S=float(pr_s), rate_outside=float(pr_o),
                               p_in_S=float(p[s].mean()), p_outside=float(p[o].mean()),
                               target_rate=target)
                    if it < max_iters:
                        new_t = float(np.quantile(p_hat[s], 1.0 - target))
                        theta = theta.copy()
                        theta[s] = new_t
                        row["new_threshold_S"] = new_t
                    rows.append(row)
                if progress:
                    print(f"{name} {side} λ={lam:g}: scores " + " → ".join(
                        f"{r['score']:.2f}" for r in rows
                        if r["data"] == name and r["side"] == side and r["lam"] == lam),
                        flush=True)
    return pd.DataFrame(rows)


def final_scores(it: pd.DataFrame) -> pd.DataFrame:
    g = it.groupby(["data", "side", "lam"], sort=False)
    return g.agg(scans=("score", "size"), first_score=("score", "first"),
                 last_score=("score", "last")).reset_index()


def table(a1: pd.DataFrame, a2: pd.DataFrame) -> str:
    parts = []
    if len(a1):
        rates = a1.drop_duplicates("setting")[["setting", "theta_aa", "theta_other", "fpr_aa",
                                               "fpr_other", "tpr_aa", "tpr_other"]]
        parts.append("**Approach 1, error rates** (COMPAS, AA vs others)\n\n"
                     + C.markdown_table(rates, ".3f"))
        for side, s in a1.groupby("side"):
            wide = s.pivot(index="lam", columns="setting", values="score")
            wide.columns = [f"setting {c}" for c in wide.columns]
            parts.append(f"**Approach 1, {side} side**: penalised score of S = AA "
                         "(−0.1 = within the allowance)\n\n"
                         + C.markdown_table(wide.reset_index().rename(columns={"lam": "λ"}),
                                            ".2f"))
    if len(a2):
        parts.append("**Approach 2** (iterative subgroup thresholds): score per scan\n\n"
                     + C.markdown_table(final_scores(a2).assign(
                         trajectory=lambda f: [" → ".join(
                             f"{v:.2f}" for v in a2[(a2.data == r.data) & (a2.side == r.side)
                                                    & (a2.lam == r.lam)].score)
                             for r in f.itertuples()]), ".2f"))
    return "\n\n".join(parts)


def main(argv=None) -> dict:
    ap = C.base_parser(__doc__.splitlines()[0])
    ap.add_argument("--max-iters", type=int, default=3, help="threshold updates (approach 2)")
    ap.add_argument("--restarts", type=int, default=C.NUM_RESTARTS)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    lams, names, sides = LAMBDAS, ("compas", "german"), ("negative", "positive")
    if args.quick:
        lams, names, sides = (0.0, 1.0), ("compas",), ("negative",)
    with C.Timer() as t:
        a1 = approach1(lams)
        a2 = approach2(names, sides, lams, max_iters=args.max_iters, seed=args.seed,
                       num_restarts=args.restarts, progress=args.progress)
    suffix = "_quick" if args.quick else ""
    C.write_csv(a1, f"ijdi_mitigation_groups{suffix}.csv")
    C.write_csv(a2, f"ijdi_mitigation_iterative{suffix}.csv")
    C.write_markdown(table(a1, a2) + f"\n\nRuntime: {t.seconds:.0f} s ({C.cpu_count_note()}).",
                     f"ijdi_mitigation_table{suffix}.md")
    print(a1[["setting", "side", "lam", "score", "adjustments"]].to_string(index=False))
    print(a2[["data", "side", "lam", "iteration", "subset", "score"]].to_string(index=False))
    key = {}
    for _, r in a1[a1.lam == 1.0].iterrows():
        key[f"mit1_{r.side}_setting_{r.setting}_lam1_score"] = round(r.score, 4)
    for _, r in final_scores(a2).iterrows():
        key[f"mit2_{r.data}_{r.side}_lam{r.lam:g}_first_last"] = (
            f"{r.first_score:.3f} -> {r.last_score:.3f} ({r.scans} scans)")
    key["mitigation_runtime_s"] = round(t.seconds, 1)
    C.print_key_values(key)
    return key


if __name__ == "__main__":
    main()
