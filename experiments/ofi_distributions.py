"""OFI paper, appendices B-D: the distribution of B over M(n), OFI's null and the ±0.3 threshold.

Null model throughout: **(U) uniform over M(n)**, every confusion matrix with n samples equally
likely (the paper's setting), unless a line says "multinomial" (null (M), ofi_notes §8).

1. **σ(B; n), exact vs Monte Carlo, n = 1 … 1000.** Exact variance from the exact PMF
   (``ofijax.distributions.marginal_benefit_moments``, Fractions) for every n, checked against
   Theorem D.2's (n + 4)/(10 n) and against Corollary D.4's printed (n + 4)/10 (a typo); Monte
   Carlo (``monte_carlo`` + ``uniform_sampler``) on a log grid of n; the fixed p = ¼ multinomial
   (0.5/n, *not* uniform) drawn next to it as the trap it is.
2. **Shape of B.** The exact PMF (``marginal_benefit_pmf``) against the triangular density the
   paper's Theorem C.2 says B "mimics", and against (3/2)(1 - |x|)², the actual limit (the counts
   are ⌊(n - |d| + 2)²/4⌋: quadratic, not linear, in |d|; its variance is exactly 1/10).
3. **OFI's null distribution and thresholds** for two pairs of group sizes (``ofi_pmf``,
   ``ofi_threshold``): σ(OFI), the 95 % two-sided threshold, and how often |OFI| > 0.3 under the
   null -- ±0.3 is about one σ of B for one group, not of OFI.
4. **Holes** (the 2025 follow-up, ofi_notes §10): for common metrics, the number and share of
   matrices in M(n) with a *mathematical* zero denominator, counted with integer conditions on
   the enumerated cells and compared with the closed forms; the core metrics' NaN counts are
   checked to agree.

Writes ``experiments/results/ofi_distributions_*.csv`` and ``*.png``.
Usage: ``python experiments/ofi_distributions.py [--quick] [--samples N]``
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from fractions import Fraction
from pathlib import Path

import jax
import numpy as np
import pandas as pd

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]  # _ofi_common and the repo's ofijax

from _ofi_common import RESULTS_DIR, print_key_numbers, save_numbers  # noqa: E402

import ofijax  # noqa: E402
from ofijax import distributions as D  # noqa: E402

MC_GRID = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)
QUICK_GRID = (10,)
SHAPE_NS = (10, 50, 1000)
OFI_PAIRS = ((20, 20), (50, 200))
HOLE_NS = (1, 2, 5, 10, 20, 50, 100)


# ------------------------------------------------------------------------------- 1. sigma(B; n)


def sigma_table(n_max: int, mc_grid, key, samples: int, multinomial: bool = True) -> pd.DataFrame:
    rows = []
    for n in range(1, n_max + 1):
        m = D.marginal_benefit_moments(n)
        formula = Fraction(n + 4, 10 * n)
        rows.append(
            {
                "n": n,
                "var_exact": float(m.var),
                "var_exact_fraction": f"{m.var.numerator}/{m.var.denominator}",
                "var_equals_theorem_D2": m.mean == 0 and m.var == formula,
                "sigma_exact": math.sqrt(m.var),
                "var_corollary_D4_as_printed": (n + 4) / 10,
                "sigma_multinomial_p_quarter": math.sqrt(0.5 / n),
                "sigma_mc": np.nan,
                "sigma_mc_se": np.nan,
                "mean_mc": np.nan,
                "mean_mc_se": np.nan,
                "sigma_mc_multinomial_p_quarter": np.nan,
            }
        )
    df = pd.DataFrame(rows).set_index("n")
    for i, n in enumerate(mc_grid):
        k_u, k_m = jax.random.split(jax.random.fold_in(key, i))
        s = D.monte_carlo(k_u, ofijax.marginal_benefit, D.uniform_sampler(n), samples, bins=64)
        # SE of the sample σ: √(Var(X²)) / (2σ√N), with E[X⁴] from the exact PMF.
        pmf = D.marginal_benefit_pmf(n)
        m4 = float(np.sum(pmf.probs * pmf.values**4))
        var = df.loc[n, "var_exact"]
        se_sigma = math.sqrt(max(m4 - var**2, 0.0) / s.count) / (2 * math.sqrt(var))
        df.loc[n, ["sigma_mc", "sigma_mc_se", "mean_mc", "mean_mc_se"]] = [
            s.std,
            se_sigma,
            s.mean,
            s.stderr,
        ]
        if multinomial:
            sm = D.monte_carlo(
                k_m, ofijax.marginal_benefit, D.multinomial_sampler(n, [0.25] * 4), samples, bins=64
            )
            df.loc[n, "sigma_mc_multinomial_p_quarter"] = sm.std
    return df


# ---------------------------------------------------------------------------- 2. shape of B


def shape_table(ns) -> pd.DataFrame:
    rows = []
    for n in ns:
        pmf = D.marginal_benefit_pmf(n)
        counts = np.asarray(pmf.counts, dtype=object)
        left = counts[: n + 1]  # d = -n … 0
        steps = np.diff(left.astype(np.int64))
        dens = pmf.probs * n  # probability per unit of B
        x = pmf.values
        tri = 1 - np.abs(x)
        quad = 1.5 * (1 - np.abs(x)) ** 2
        rows.append(
            {
                "n": n,
                "support_points": len(x),
                "mode": float(x[np.argmax(pmf.probs)]),
                "count_decreases_towards_0": int(np.sum(steps < 0)),
                "distinct_increments_first5": " ".join(str(int(s)) for s in steps[:5]),
                "sup_abs_diff_triangular": float(np.max(np.abs(dens - tri))),
                "sup_abs_diff_quadratic": float(np.max(np.abs(dens - quad))),
                "sigma_exact": math.sqrt(D.marginal_benefit_moments(n).var),
                "sigma_triangular": 1 / math.sqrt(6),
                "sigma_quadratic_limit": 1 / math.sqrt(10),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------- 3. OFI null and thresholds


def threshold_table(pairs, key, quick: bool) -> tuple[pd.DataFrame, dict]:
    rows, pmfs = [], {}
    for n_i, n_j in pairs:
        pmf = D.ofi_pmf(n_i, n_j)
        pmfs[(n_i, n_j)] = pmf
        t = D.ofi_threshold(n_i, n_j, level=0.95)
        beyond = float(pmf.probs[np.abs(pmf.values) > 0.3 + 1e-12].sum())
        mc_t = np.nan
        if not quick:
            mc_t = D.ofi_threshold(
                n_i,
                n_j,
                level=0.95,
                method="monte_carlo",
                key=jax.random.fold_in(key, n_i * 7 + n_j),
                num_samples=400_000,
            ).threshold
        rows.append(
            {
                "n_i": n_i,
                "n_j": n_j,
                "null": "uniform",
                "sigma_B_i": t.sigma_b_i,
                "sigma_B_j": t.sigma_b_j,
                "sigma_OFI": t.sigma_ofi,
                "threshold_95_exact": t.threshold,
                "threshold_95_mc": mc_t,
                "share_abs_ofi_gt_0.3": beyond,
                "paper_threshold": t.paper_threshold,
            }
        )
    # A multinomial null: both groups drawn from the pooled COMPAS (violent) confusion matrix.
    from ofijax.datasets import load_compas

    df = load_compas("violent")
    pooled = np.asarray(ofijax.confusion_matrix(df["label_not_recid"], df["pred_low_risk"]))
    for n_i, n_j in pairs:
        t = D.ofi_threshold(n_i, n_j, null=pooled.tolist(), level=0.95)
        pmf = D.ofi_pmf(n_i, n_j, null=pooled.tolist())
        rows.append(
            {
                "n_i": n_i,
                "n_j": n_j,
                "null": "multinomial(pooled COMPAS violent CM " + " ".join(map(str, pooled)) + ")",
                "sigma_B_i": t.sigma_b_i,
                "sigma_B_j": t.sigma_b_j,
                "sigma_OFI": t.sigma_ofi,
                "threshold_95_exact": t.threshold,
                "threshold_95_mc": np.nan,
                "share_abs_ofi_gt_0.3": float(pmf.probs[np.abs(pmf.values) > 0.3 + 1e-12].sum()),
                "paper_threshold": t.paper_threshold,
            }
        )
    return pd.DataFrame(rows), pmfs


# ------------------------------------------------------------------------------- 4. holes

# metric -> (zero-denominator condition on integer cells, closed form of the count or None)
HOLES = {
    "B / OFI (n)": (lambda tp, fn, fp, tn: np.zeros_like(tp, bool), lambda n: 0),
    "TPR (TP+FN)": (lambda tp, fn, fp, tn: tp + fn == 0, lambda n: n + 1),
    "FPR (FP+TN)": (lambda tp, fn, fp, tn: fp + tn == 0, lambda n: n + 1),
    "PPV (TP+FP)": (lambda tp, fn, fp, tn: tp + fp == 0, lambda n: n + 1),
    "simplified F1 (2TP+FP+FN)": (lambda tp, fn, fp, tn: 2 * tp + fp + fn == 0, lambda n: 1),
    "MCC (product of marginals)": (
        lambda tp, fn, fp, tn: (tp + fp == 0) | (tp + fn == 0) | (tn + fp == 0) | (tn + fn == 0),
        lambda n: 4 * n,
    ),
    "harmonic F1 (1/PPV + 1/TPR; 1/0 undefined)": (
        lambda tp, fn, fp, tn: (tp + fp == 0) | (tp + fn == 0) | (tp == 0),
        lambda n: math.comb(n + 2, 2),
    ),
    "DI part P̂/n (a group's selection rate as denominator: P̂ = 0)": (
        lambda tp, fn, fp, tn: tp + fp == 0,
        lambda n: n + 1,
    ),
    "TE part FN/FP (FP)": (lambda tp, fn, fp, tn: fp == 0, lambda n: math.comb(n + 2, 2)),
}

#: core metrics whose NaN set must equal the mathematical holes above
CORE_NAN = {
    "TPR (TP+FN)": ofijax.true_positive_rate,
    "FPR (FP+TN)": ofijax.false_positive_rate,
    "PPV (TP+FP)": ofijax.positive_predictive_value,
    "B / OFI (n)": ofijax.marginal_benefit,
}


def holes_table(ns) -> pd.DataFrame:
    rows = []
    for n in ns:
        cms = D.enumerate_confusion_matrices(n)
        tp, fn, fp, tn = (cms[:, k] for k in range(4))
        total = len(cms)
        for name, (cond, closed) in HOLES.items():
            mask = cond(tp, fn, fp, tn)
            count = int(mask.sum())
            row = {
                "n": n,
                "metric": name,
                "matrices": total,
                "holes": count,
                "closed_form": closed(n),
                "share": count / total,
                "core_nan_count": np.nan,
            }
            if name in CORE_NAN:
                vals = np.asarray(CORE_NAN[name](cms))
                row["core_nan_count"] = int(np.isnan(vals).sum())
            rows.append(row)
        # TE is pairwise: undefined pairs over M(n) x M(n) (inclusion-exclusion, not the paper's
        # C(n1+2,2) + C(n2+2,2) - 1).
        z = math.comb(n + 2, 2)
        rows.append(
            {
                "n": n,
                "metric": "TE pairs over M(n) x M(n)",
                "matrices": total * total,
                "holes": int(total * total - (total - int((fp == 0).sum())) ** 2),
                "closed_form": z * total + total * z - z * z,
                "share": (z * total + total * z - z * z) / (total * total),
                "core_nan_count": np.nan,
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ plots


def plots(sig, shapes_ns, pmfs, holes, out_dir: Path, dpi: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(sig.index, sig["sigma_exact"], label="exact σ(B; n) = √((n+4)/(10n))")
    mc = sig.dropna(subset=["sigma_mc"])
    ax.errorbar(
        mc.index,
        mc["sigma_mc"],
        yerr=2 * mc["sigma_mc_se"],
        fmt="o",
        ms=4,
        label="Monte Carlo, uniform on M(n) (±2 SE)",
    )
    ax.plot(
        sig.index,
        sig["sigma_multinomial_p_quarter"],
        "--",
        label="multinomial p = ¼ (NOT uniform): √(0.5/n)",
    )
    ax.plot(mc.index, mc["sigma_mc_multinomial_p_quarter"], "x", color="C2")
    ax.axhline(1 / math.sqrt(10), color="k", lw=0.8, ls=":", label="1/√10 ≈ 0.316")
    ax.axhline(0.3, color="r", lw=0.8, ls=":", label="paper's threshold 0.3")
    ax.set_xscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("σ of B")
    ax.set_title("σ(B; n) under the uniform null")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "ofi_distributions_sigma.png", dpi=dpi)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(shapes_ns), figsize=(4 * len(shapes_ns), 3.4), squeeze=False)
    for ax, n in zip(axes[0], shapes_ns):
        pmf = D.marginal_benefit_pmf(n)
        x = np.linspace(-1, 1, 401)
        ax.plot(pmf.values, pmf.probs * n, ".", ms=3 if n <= 50 else 1, label="exact PMF × n")
        ax.plot(x, 1 - np.abs(x), label="triangular 1 − |x|")
        ax.plot(x, 1.5 * (1 - np.abs(x)) ** 2, label="(3/2)(1 − |x|)²")
        ax.set_title(f"B over M({n})")
        ax.set_xlabel("B")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "ofi_distributions_shape.png", dpi=dpi)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(pmfs), figsize=(4.5 * len(pmfs), 3.4), squeeze=False)
    for ax, ((n_i, n_j), pmf) in zip(axes[0], pmfs.items()):
        t = D.ofi_threshold(n_i, n_j, level=0.95).threshold
        ax.plot(pmf.values, pmf.probs * pmf.denominator, lw=1)
        for v, c, lab in ((0.3, "r", "±0.3 (paper)"), (t, "k", "±95 % threshold")):
            ax.axvline(v, color=c, ls=":", label=lab)
            ax.axvline(-v, color=c, ls=":")
        ax.set_title(f"OFI null, uniform, n_i={n_i}, n_j={n_j}")
        ax.set_xlabel("OFI")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "ofi_distributions_ofi_null.png", dpi=dpi)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, g in holes.groupby("metric", sort=False):
        if (g["holes"] > 0).any():
            ax.plot(g["n"], g["share"], "o-", ms=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("share of M(n) undefined")
    ax.set_title("Holes: mathematical zero denominators (B and OFI have none)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out_dir / "ofi_distributions_holes.png", dpi=dpi)
    plt.close(fig)


def run(
    out_dir: Path = RESULTS_DIR, quick: bool = False, samples: int | None = None, seed: int = 0
) -> dict[str, object]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    key = jax.random.key(seed)
    n_max = 100 if quick else 1000
    samples = samples or (20_000 if quick else 1_000_000)
    sig = sigma_table(n_max, QUICK_GRID if quick else MC_GRID, key, samples, multinomial=not quick)
    sig.to_csv(out_dir / "ofi_distributions_sigma.csv", float_format="%.6g")
    shape_ns = (10, 50) if quick else SHAPE_NS
    shapes = shape_table(shape_ns)
    shapes.to_csv(out_dir / "ofi_distributions_shape.csv", index=False, float_format="%.6g")
    thr, pmfs = threshold_table(OFI_PAIRS[:1] if quick else OFI_PAIRS, key, quick)
    thr.to_csv(out_dir / "ofi_distributions_thresholds.csv", index=False, float_format="%.6g")
    holes = holes_table(HOLE_NS[:3] if quick else HOLE_NS)
    holes.to_csv(out_dir / "ofi_distributions_holes.csv", index=False, float_format="%.6g")
    plots(sig, shape_ns, pmfs, holes, out_dir, dpi=60 if quick else 90)

    mc = sig.dropna(subset=["sigma_mc"])
    z = (mc["sigma_mc"] - mc["sigma_exact"]) / mc["sigma_mc_se"]
    uni = thr[thr["null"] == "uniform"]
    numbers: dict[str, object] = {
        "null_model": "uniform over M(n) (U), unless stated",
        "var_equals_theorem_D2_all_n": bool(sig["var_equals_theorem_D2"].all()),
        "n_checked_exactly": int(len(sig)),
        "sigma_B_n1": float(sig.loc[1, "sigma_exact"]),
        "sigma_B_n10": float(sig.loc[10, "sigma_exact"]),
        f"sigma_B_n{n_max}": float(sig.loc[n_max, "sigma_exact"]),
        "var_B_n10_exact": sig.loc[10, "var_exact_fraction"],
        "var_B_n10_corollary_D4_as_printed": float(sig.loc[10, "var_corollary_D4_as_printed"]),
        "mc_max_abs_z_sigma": float(np.abs(z).max()),
        "mc_samples_per_n": samples,
        "B_count_decreases_towards_mode": int(shapes["count_decreases_towards_0"].sum()),
        f"sup_density_diff_triangular_n{shape_ns[-1]}": float(
            shapes["sup_abs_diff_triangular"].iloc[-1]
        ),
        f"sup_density_diff_quadratic_n{shape_ns[-1]}": float(
            shapes["sup_abs_diff_quadratic"].iloc[-1]
        ),
        "holes_match_closed_forms": bool((holes["holes"] == holes["closed_form"]).all()),
        "core_nan_counts_match_holes": bool(
            (holes.dropna(subset=["core_nan_count"]).eval("holes == core_nan_count")).all()
        ),
    }
    for _, r in uni.iterrows():
        tag = f"{r.n_i}x{r.n_j}"
        numbers[f"sigma_ofi_uniform_{tag}"] = float(r.sigma_OFI)
        numbers[f"threshold95_ofi_uniform_{tag}"] = float(r.threshold_95_exact)
        numbers[f"share_abs_ofi_gt_0.3_uniform_{tag}"] = float(r["share_abs_ofi_gt_0.3"])
    save_numbers(numbers, out_dir / "ofi_distributions_numbers.csv")
    return numbers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="n ≤ 100, one MC point, 2e4 samples")
    p.add_argument("--samples", type=int, default=None, help="Monte Carlo draws per n")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    numbers = run(args.out, quick=args.quick, samples=args.samples, seed=args.seed)
    numbers["runtime_s"] = round(time.perf_counter() - t0, 2)
    print_key_numbers(numbers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
