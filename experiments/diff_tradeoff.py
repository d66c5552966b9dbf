"""Accuracy vs. OFI trade-off of fairness-penalized training (ofijax.diff) on COMPAS and Adult.

For each data set and model (logistic regression, a small MLP) one call to
:func:`ofijax.diff.tradeoff_sweep` trains every penalty strength × seed as one compiled program
(full-batch Adam, penalty ``ofi_penalty(reduction="max_gap")`` on soft group CMs). We report
hard-threshold accuracy and max |OFI| across race groups on the training data (where the
penalty acts) and on held-out data (with its simultaneous interval and the noise floor of
:func:`ofijax.diff.evaluate`: the 95th percentile of max |OFI| for groups that do not differ, at
the held-out group sizes), the accuracy cost of cutting max |OFI| below 0.02, the sweep
time against training the same models one by one in a Python loop (same run), fairlearn's
ExponentiatedGradient(DemographicParity) as a comparator, and a brute-force re-scan of all
one- and two-attribute subgroups over the *unprotected* attributes (does the penalty move the
bias into a subgroup it does not see?). ``ofijax.scan`` is used as well when it is installed.

Data: COMPAS general recidivism (ProPublica filters, 6,172 rows; label flipped: 1 = not a
recidivist; features one-hot of sex, age_cat, race, priors bins, charge degree; group = race),
random 70/30 split. UCI Adult (group = race; official train/test split, subsampled for speed).

Usage: ``python experiments/diff_tradeoff.py [--quick]``. Writes
``experiments/results/diff_tradeoff{_quick}.csv`` and ``.png``; ends with ``name: value`` lines.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ofijax  # noqa: E402
from ofijax import diff  # noqa: E402
from ofijax.datasets import load_adult, load_compas  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.02


# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------


def _one_hot(df: pd.DataFrame, cols: list[str]) -> np.ndarray:
    return pd.get_dummies(df[cols].astype(str), dtype=np.float32).to_numpy()


def compas_data(rng: np.random.Generator, quick: bool):
    df = load_compas("general")
    df["priors"] = pd.cut(df["priors_count"], [-1, 0, 3, 9, 100], labels=["0", "1-3", "4-9", "10+"])
    attrs = ["sex", "age_cat", "race", "priors", "c_charge_degree"]
    x = _one_hot(df, attrs)
    y = df["label_not_recid"].to_numpy().astype(np.int32)
    # Asian (31) and Native American (11) are too small for a stable B (one person moves B by
    # 1/n): merge them into "Other" (343) for the group penalty and the report.
    race = df["race"].replace({"Asian": "Other", "Native American": "Other"}).to_numpy()
    idx = rng.permutation(len(df))
    cut = int(0.7 * len(df))
    tr, te = idx[:cut], idx[cut:]
    if quick:
        tr = tr[:1000]
    unprotected = df[["sex", "age_cat", "priors", "c_charge_degree"]].astype(str)
    return _split(x, y, race, tr, te, unprotected, df[attrs].astype(str))


def adult_data(rng: np.random.Generator, quick: bool):
    tr_df, te_df = load_adult("train"), load_adult("test")
    n_tr, n_te = (1000, 1000) if quick else (6000, len(te_df))
    tr_df = tr_df.iloc[rng.permutation(len(tr_df))[:n_tr]].reset_index(drop=True)
    te_df = te_df.iloc[rng.permutation(len(te_df))[:n_te]].reset_index(drop=True)
    df = pd.concat([tr_df, te_df], ignore_index=True)
    cats = [
        "workclass", "education", "marital_status", "occupation",
        "relationship", "race", "sex", "native_country",
    ]
    df[cats] = df[cats].fillna("missing")
    num = np.stack(
        [
            df["age"], df["education_num"], np.log1p(df["capital_gain"]),
            np.log1p(df["capital_loss"]), df["hours_per_week"],
        ],
        axis=1,
    ).astype(np.float32)
    num = (num - num[:n_tr].mean(0)) / num[:n_tr].std(0)
    x = np.concatenate([num, _one_hot(df, cats)], axis=1)
    y = df["label_income_gt_50k"].to_numpy().astype(np.int32)
    df["age_bin"] = pd.cut(df["age"], [0, 25, 45, 200], labels=["<25", "25-45", ">45"])
    unprotected = df[["sex", "age_bin", "marital_status", "relationship", "workclass"]].astype(str)
    tr, te = np.arange(n_tr), np.arange(n_tr, len(df))
    return _split(x, y, df["race"].to_numpy(), tr, te, unprotected, df[["race", "sex"]])


def _split(x, y, race, tr, te, unprotected, scan_frame):
    gw = diff.one_hot_groups(race)

    def batch(ix):
        return diff.Batch(jnp.asarray(x[ix]), jnp.asarray(y[ix]), gw.weights[ix])

    return {
        "train": batch(tr),
        "test": batch(te),
        "groups": gw.groups,
        "x": (x[tr], x[te]),
        "y": (y[tr], y[te]),
        "race": (race[tr], race[te]),
        "unprotected": (unprotected.iloc[tr].reset_index(drop=True),
                        unprotected.iloc[te].reset_index(drop=True)),
        "scan_frame": scan_frame.iloc[tr].reset_index(drop=True),
    }


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------


def loop_baseline(key, model, data, strengths, num_seeds, num_steps, opt, penalty, temp):
    """The same runs, one model at a time, one jitted step per Python iteration."""
    keys = jax.random.split(key, num_seeds)
    acc = np.zeros((len(strengths), num_seeds))
    for si, s in enumerate(strengths):
        step = diff.make_train_step(
            model.apply, opt, penalty, strength=float(s), surrogate_temperature=temp
        )
        for r in range(num_seeds):
            params = model.init(keys[r])
            opt_state = opt.init(params)
            for _ in range(num_steps):
                params, opt_state, _ = step(params, opt_state, data)
            pred = np.asarray(model.apply(params, data.x) > 0)
            acc[si, r] = float(np.mean(pred == np.asarray(data.y)))
    return acc


def subgroup_audit(frame: pd.DataFrame, y, pred, min_size: int):
    """Max |B_S - B_not S| over all 1- and 2-attribute subgroups S of ``frame`` (n_S ≥ min_size)."""
    masks, names = [], []
    cols = list(frame.columns)
    for k in (1, 2):
        for combo in itertools.combinations(cols, k):
            for values, idx in frame.groupby(list(combo), observed=True).indices.items():
                values = values if isinstance(values, tuple) else (values,)
                if len(idx) < min_size or len(frame) - len(idx) < min_size:
                    continue
                m = np.zeros(len(frame), bool)
                m[idx] = True
                masks.append(m)
                names.append(" & ".join(f"{c}={v}" for c, v in zip(combo, values)))
    m = np.stack(masks, 1).astype(np.float32)
    gw = np.concatenate([m, 1 - m], axis=1)  # subgroup, complement
    cms = diff.soft_confusion_matrices(y, pred.astype(np.float32), gw)
    b = np.asarray(ofijax.marginal_benefit(cms))
    k = m.shape[1]
    o = b[:k] - b[k:]
    i = int(np.argmax(np.abs(o)))
    return float(np.abs(o[i])), names[i], int(m[:, i].sum())


def run_scan(frame, y, probs, label):
    """Re-scan a trained model with IJDI-Scan (λ = 1, negative side) and FPR-Scan.

    The scans take the training labels as they are (1 = beneficial, their default
    ``beneficial_label=1``; internally they run in IJDI's harm orientation); true probabilities
    come from ``estimate_true_probabilities`` on the scan attributes.
    """
    from ofijax import scan

    y_ben = np.asarray(y, dtype=int)  # label 1 = beneficial, the scans' default orientation
    pred_ben = (np.asarray(probs) >= 0.5).astype(int)
    p_ben = scan.estimate_true_probabilities(frame, y_ben)
    out = []
    for name, res in (
        ("fpr_scan", scan.fpr_scan(frame, y_ben, pred_ben)),
        ("ijdi_scan(lam=1)", scan.ijdi_scan(frame, y_ben, pred_ben, p_ben, lam=1.0)),
    ):
        out.append(f"{label}: {name} subset={res.subset} score={res.score:.3f} size={res.size}")
    return "\n".join(out)


def fairlearn_eg(d, eps_list, seed, max_iter):
    try:
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return []
    rows = []
    (x_tr, x_te), (y_tr, y_te), r_tr = d["x"], d["y"], d["race"][0]
    for eps in eps_list:
        t0 = time.perf_counter()
        eg = ExponentiatedGradient(
            LogisticRegression(max_iter=500), DemographicParity(), eps=eps, max_iter=max_iter
        )
        eg.fit(x_tr, y_tr, sensitive_features=r_tr)
        fit_s = time.perf_counter() - t0
        row = {"method": f"fairlearn EG(DP) eps={eps}", "fit_s": fit_s}
        for split, x, y, b in (("train", x_tr, y_tr, d["train"]), ("test", x_te, y_te, d["test"])):
            pred = eg.predict(x, random_state=seed)
            cms = diff.soft_confusion_matrices(y, pred.astype(np.float32), b.groups)
            o = np.asarray(ofijax.marginal_benefit(cms))
            ok = np.isfinite(o)
            row[f"{split}_acc"] = float(np.mean(pred == y))
            row[f"{split}_max_ofi"] = float(o[ok].max() - o[ok].min())
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small, fast run (for tests)")
    ap.add_argument("--temperature", type=float, default=0.3, help="surrogate temperature")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--no-loop", action="store_true",
                    help="skip timing the same runs as a Python loop (same CSV, fewer lines)")
    ap.add_argument("--datasets", nargs="+", choices=("compas", "adult"),
                    default=["compas", "adult"], help="which data sets to run (default: both)")
    args = ap.parse_args()
    quick = args.quick
    strengths = [0.0, 4.0, 16.0] if quick else [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
    num_seeds = 2
    num_steps = 40 if quick else 250
    hidden = (8,) if quick else (16,)
    opt = optax.adam(0.05)
    temp = args.temperature

    def penalty(cms):
        return diff.ofi_penalty(cms, reduction="max_gap")

    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    rows, eg_rows, summary, scans, plot = [], [], [], [], {}
    loaders = {"compas": compas_data, "adult": adult_data}
    for name, loader in ((k, loaders[k]) for k in args.datasets):
        d = loader(rng, quick)
        n_feat = d["train"].x.shape[1]
        for mname, model in (
            ("logistic", diff.logistic_model(n_feat)),
            ("mlp", diff.mlp_model(n_feat, hidden=hidden)),
        ):
            t0 = time.perf_counter()
            res = diff.tradeoff_sweep(
                key, model.init, model.apply, d["train"], strengths,
                num_seeds=num_seeds, num_steps=num_steps, optimizer=opt,
                penalty_fn=penalty, surrogate_temperature=temp,
            )
            jax.block_until_ready(res.accuracy)
            sweep_s = time.perf_counter() - t0
            if args.no_loop:
                loop_acc, loop_s = None, float("nan")
            else:
                t0 = time.perf_counter()
                loop_acc = loop_baseline(
                    key, model, d["train"], strengths, num_seeds, num_steps, opt, penalty, temp
                )
                loop_s = time.perf_counter() - t0
            # held-out: accuracy, max|OFI| with its simultaneous interval, and the noise floor
            test_ev = [[diff.evaluate(1000 * si + r, model.apply,
                                      jax.tree.map(lambda a, si=si, r=r: a[si, r], res.params),
                                      d["test"], num_samples=1000)
                        for r in range(num_seeds)] for si in range(len(strengths))]
            tr_acc, tr_ofi = np.asarray(res.accuracy), np.asarray(res.max_abs_ofi)
            te_acc = np.array([[float(e.accuracy) for e in row] for row in test_ev])
            te_ofi = np.array([[float(e.max_abs_ofi) for e in row] for row in test_ev])
            te_lo = np.array([[float(e.max_abs_ofi_interval[0]) for e in row] for row in test_ev])
            te_hi = np.array([[float(e.max_abs_ofi_interval[1]) for e in row] for row in test_ev])
            te_floor = np.array([[float(e.noise_floor) for e in row] for row in test_ev])
            for si, s in enumerate(strengths):
                o = np.asarray(test_ev[si][0].ofi)
                i, j = np.unravel_index(np.nanargmax(np.abs(o)), o.shape)
                rows.append({
                    "dataset": name, "model": mname, "strength": s,
                    "train_acc": tr_acc[si].mean(), "train_acc_sd": tr_acc[si].std(),
                    "train_max_ofi": tr_ofi[si].mean(), "train_max_ofi_sd": tr_ofi[si].std(),
                    "test_acc": te_acc[si].mean(), "test_acc_sd": te_acc[si].std(),
                    "test_max_ofi": te_ofi[si].mean(), "test_max_ofi_sd": te_ofi[si].std(),
                    "test_max_ofi_low": te_lo[si].mean(), "test_max_ofi_high": te_hi[si].mean(),
                    "test_noise_floor": te_floor[si].mean(),
                    "test_seeds_above_noise_floor": int(np.sum(te_ofi[si] > te_floor[si])),
                    "test_worst_pair_seed0": f"{d['groups'][i]} vs {d['groups'][j]}",
                })
            plot[(name, mname)] = (tr_acc.mean(1), tr_ofi.mean(1), te_acc.mean(1), te_ofi.mean(1))
            hit = np.flatnonzero(tr_ofi.mean(1) < TARGET)
            tag = f"{name}_{mname}"
            summary.append((f"{tag}_plain_train_max_ofi", tr_ofi[0].mean()))
            summary.append((f"{tag}_plain_test_max_ofi", te_ofi[0].mean()))
            if hit.size:
                si = int(hit[0])
                summary += [
                    (f"{tag}_strength_for_max_ofi_below_{TARGET}", strengths[si]),
                    (f"{tag}_train_acc_cost_for_max_ofi_below_{TARGET}",
                     tr_acc[0].mean() - tr_acc[si].mean()),
                    (f"{tag}_test_acc_cost_for_max_ofi_below_{TARGET}",
                     te_acc[0].mean() - te_acc[si].mean()),
                    (f"{tag}_test_max_ofi_at_that_strength", te_ofi[si].mean()),
                ]
            else:
                si = len(strengths) - 1
                summary.append((f"{tag}_max_ofi_below_{TARGET}", "not reached"))
                summary.append((f"{tag}_min_train_max_ofi", tr_ofi.mean(1).min()))
            summary.append((f"{tag}_sweep_s", sweep_s))
            summary.append((f"{tag}_test_noise_floor_median", float(np.median(te_floor))))
            summary.append((f"{tag}_test_seeds_above_noise_floor",
                            f"{int(np.sum(te_ofi > te_floor))} of {te_ofi.size}"))
            if loop_acc is not None:
                agree = float(np.mean(np.abs(loop_acc - np.asarray(res.accuracy)) <= 2e-3))
                summary += [
                    (f"{tag}_loop_s", loop_s),
                    (f"{tag}_loop_over_sweep_time_ratio", loop_s / sweep_s),
                    (f"{tag}_loop_agrees_with_sweep_fraction", agree),
                ]
            # re-scan the unprotected attributes: plain model vs the chosen fair model
            min_size = 20 if quick else 50
            for label, idx in (("plain", 0), ("fair", si)):
                params = jax.tree.map(lambda a, idx=idx: a[idx, 0], res.params)
                logits = model.apply(params, d["train"].x)
                pred = np.asarray(logits > 0)
                gap, sub, size = subgroup_audit(d["unprotected"][0], d["y"][0], pred, min_size)
                summary.append((f"{tag}_{label}_subgroup_max_ofi", gap))
                scans.append(f"{tag} {label}: max |B_S - B_notS| = {gap:.3f} at {sub} (n={size})")
                if name == "compas" and mname == "logistic":
                    scans.append(run_scan(d["scan_frame"], d["y"][0],
                                          np.asarray(jax.nn.sigmoid(logits)), f"{tag} {label}"))
        for row in fairlearn_eg(
            d, (0.02,) if quick else (0.01, 0.05), seed=0, max_iter=5 if quick else 30
        ):
            row["dataset"] = name
            eg_rows.append(row)
            summary.append((f"{name}_fairlearn_eg_{row['method'].split('=')[-1]}_test_max_ofi",
                            row["test_max_ofi"]))

    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if quick else ""
    curve = pd.DataFrame(rows)
    curve.to_csv(args.out / f"diff_tradeoff{suffix}.csv", index=False, float_format="%.5g")
    if eg_rows:
        pd.DataFrame(eg_rows).to_csv(
            args.out / f"diff_tradeoff_fairlearn{suffix}.csv", index=False, float_format="%.5g"
        )
    _plot(plot, eg_rows, args.out / f"diff_tradeoff{suffix}.png")
    print(curve.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if eg_rows:
        print(pd.DataFrame(eg_rows).to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("\n".join(scans))
    for k, v in summary:
        print(f"{k}: {v:.4f}" if isinstance(v, float | np.floating) else f"{k}: {v}")


def _plot(plot, eg_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, name in zip(axes, ("compas", "adult")):
        for (dn, mname), (tra, tro, tea, teo) in plot.items():
            if dn != name:
                continue
            line = ax.plot(tro, tra, "o-", label=f"{mname} (train)")[0]
            ax.plot(teo, tea, "s--", color=line.get_color(), alpha=0.6, label=f"{mname} (test)")
        for row in eg_rows:
            if row["dataset"] == name:
                ax.plot(row["test_max_ofi"], row["test_acc"], "k^", label=row["method"] + " (test)")
        ax.axvline(TARGET, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("max |OFI| across race groups")
        ax.set_ylabel("accuracy (hard threshold 0.5)")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    main()
