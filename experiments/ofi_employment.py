"""OFI paper, employment study design on UCI Adult (substitute) and, optionally, local ACS files.

The paper (Fig. 3, 6-8) trains scikit-learn's ``RandomForestClassifier`` and ``GaussianNB`` with
default settings on Folktables' ACSEmployment (Georgia 2014-2017, 393,236 rows), builds per-race
confusion matrices on the test part and compares OFI, DI and TE for every race pair; a second run
uses only 60 random rows (36 train / 24 test) to show DI and TE going undefined.

The ACS microdata are not available offline, so the default data set is **UCI Adult** (target
income > 50K, group = race), with the official train/test split, the same two models (defaults +
an explicit ``random_state``) and the 60-row run. With ``--acs-root DIR`` the script runs the
paper's own design on local ACS PUMS person files (``ofijax.datasets.load_acs_employment``):
per-year min-max scaling, a seeded shuffle per year, years concatenated, positional 60/40 split.

Per-group CMs are built twice and asserted equal: with ``sklearn.metrics.confusion_matrix(...,
labels=[0, 1])`` per group converted by ``ofijax.from_sklearn``, and with
``ofijax.group_confusion_matrices``. The script also records what the authors' code computes:
it wraps scikit-learn's ``[[TN, FP], [FN, TP]]`` directly as ``[[TP, FN], [FP, TN]]``, which turns
B into -B (every OFI changes sign), DI into a ratio of N̂/N and TE into FP/FN differences.

Writes under ``experiments/results/`` (prefix ``ofi_employment_``). Usage:
``python experiments/ofi_employment.py [--quick] [--seed 0] [--acs-root DIR --acs-years 2014 ...]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]  # _ofi_common and the repo's ofijax

from _ofi_common import (  # noqa: E402
    RESULTS_DIR,
    cm_table,
    heatmaps,
    pair_tables,
    print_key_numbers,
)

import ofijax  # noqa: E402
from ofijax.datasets import load_acs_employment, load_adult  # noqa: E402

ADULT_FEATURES = [
    "age",
    "workclass",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
]


def _models(seed: int, quick: bool):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.naive_bayes import GaussianNB

    rf_kwargs = {"random_state": seed}
    if quick:
        rf_kwargs["n_estimators"] = 20  # the only departure from defaults, in --quick only
    return {
        "rf": lambda: RandomForestClassifier(**rf_kwargs),
        "nb": lambda: GaussianNB(),
    }


def adult_vocabulary() -> dict[str, dict[str, int]]:
    """Integer codes of every categorical Adult feature (sorted values of both splits; "?" kept)."""
    both = pd.concat([load_adult("train"), load_adult("test")], ignore_index=True)
    vocab = {}
    for c in ADULT_FEATURES:
        if both[c].dtype.kind not in "iuf":
            values = sorted(both[c].fillna("?").astype(str).unique())
            vocab[c] = {val: i for i, val in enumerate(values)}
    return vocab


def encode_adult(df: pd.DataFrame, vocab: dict[str, dict[str, int]]) -> np.ndarray:
    """Numeric design matrix: categorical columns as integer codes ("?" -> its own code)."""
    cols = []
    for c in ADULT_FEATURES:
        if c in vocab:
            codes = df[c].fillna("?").astype(str).map(vocab[c])
            cols.append(codes.to_numpy(np.float64))
        else:
            cols.append(df[c].to_numpy(np.float64))
    return np.column_stack(cols)


def minmax(train: np.ndarray, *others: np.ndarray):
    lo, hi = train.min(0), train.max(0)
    scale = np.where(hi > lo, hi - lo, 1.0)
    return [(a - lo) / scale for a in (train, *others)]


def group_cms(y_true, y_pred, groups):
    """Per-group CMs by both routes; asserts they agree. Returns (names, cms (k, 4))."""
    from sklearn.metrics import confusion_matrix

    y_true, y_pred, groups = map(np.asarray, (y_true, y_pred, groups))
    res = ofijax.group_confusion_matrices(y_true, y_pred, groups)
    sk = np.stack(
        [
            confusion_matrix(y_true[groups == g], y_pred[groups == g], labels=[0, 1])
            for g in res.groups
        ]
    )
    via_sklearn = np.asarray(ofijax.from_sklearn(sk))
    np.testing.assert_array_equal(via_sklearn, np.asarray(res.cms))
    return res.groups, np.asarray(res.cms), sk


def direction_counts(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per group i: in how many comparisons j != i each metric points to bias *for* i.

    DI > 1 / DI > 5/4 (four-fifths rule), OFI > 0 / OFI > 0.3, TE > 0 (TE reads the other way
    round: larger = bias toward i). Undefined pairs are counted separately.
    """
    rows = []
    for g in tables["ofi"].index:
        others = [h for h in tables["ofi"].columns if h != g]
        di = tables["di_paper"].loc[g, others].to_numpy(float)
        di2 = tables["di_pp_over_p"].loc[g, others].to_numpy(float)
        o = tables["ofi"].loc[g, others].to_numpy(float)
        te = tables["te"].loc[g, others].to_numpy(float)
        rows.append(
            {
                "group": g,
                "comparisons": len(others),
                "di_paper_gt_1": int(np.sum(di > 1)),
                "di_paper_gt_5/4": int(np.sum(di > 1.25)),
                "di_paper_undefined": int(np.sum(~np.isfinite(di))),
                "di_pp_over_p_gt_1": int(np.sum(di2 > 1)),
                "di_pp_over_p_undefined": int(np.sum(~np.isfinite(di2))),
                "ofi_gt_0": int(np.sum(o > 0)),
                "ofi_gt_0.3": int(np.sum(o > 0.3)),
                "te_gt_0": int(np.sum(te > 0)),
                "te_undefined": int(np.sum(~np.isfinite(te))),
            }
        )
    return pd.DataFrame(rows)


def audit(name, y_true, y_pred, groups, out_dir: Path, title: str, dpi: int) -> dict:
    """Write counts, pairwise tables, heatmaps and direction counts for one model run."""
    names, cms, sk = group_cms(y_true, y_pred, groups)
    names = [str(g) for g in names]
    counts = cm_table(cms, names)
    counts.to_csv(out_dir / f"ofi_employment_{name}_counts.csv")
    tables = pair_tables(cms, names)
    # What the authors' code computes: scikit-learn's matrix read as [[TP, FN], [FP, TN]].
    misread = sk.reshape(-1, 4)  # (TN, FP, FN, TP) taken as (TP, FN, FP, TN)
    wrong = pair_tables(misread, names)
    tables["ofi_authors_layout"] = wrong["ofi"]
    tables["di_pp_over_p_authors_layout"] = wrong["di_pp_over_p"]
    for key, t in tables.items():
        t.to_csv(out_dir / f"ofi_employment_{name}_{key}.csv", float_format="%.6f")
    heatmaps(tables, title, out_dir / f"ofi_employment_{name}_heatmaps.png", dpi=dpi)
    dc = direction_counts(tables)
    dc.to_csv(out_dir / f"ofi_employment_{name}_direction_counts.csv", index=False)
    off = ~np.eye(len(names), dtype=bool)
    ofi_m = tables["ofi"].to_numpy()
    return {
        "groups": names,
        "tables": tables,
        "accuracy": float(np.mean(np.asarray(y_true) == np.asarray(y_pred))),
        "ofi_sign_flipped_by_authors_layout": bool(
            np.allclose(tables["ofi_authors_layout"].to_numpy(), -ofi_m, atol=1e-6)
        ),
        "undefined_di_paper_pairs": int((~np.isfinite(tables["di_paper"].to_numpy()))[off].sum()),
        "undefined_te_pairs": int((~np.isfinite(tables["te"].to_numpy()))[off].sum()),
        "pairs": int(off.sum()),
    }


def adult_study(out_dir: Path, seed: int = 0, quick: bool = False) -> dict[str, object]:
    """RF and NB on UCI Adult (official split) plus the 60-row run; returns key numbers."""
    dpi = 40 if quick else 90
    train, test = load_adult("train"), load_adult("test")
    if quick:
        train = train.sample(n=2000, random_state=seed)
        test = test.sample(n=1000, random_state=seed)
    vocab = adult_vocabulary()
    xtr, xte = encode_adult(train, vocab), encode_adult(test, vocab)
    xtr, xte = minmax(xtr, xte)
    ytr = train["label_income_gt_50k"].to_numpy()
    yte = test["label_income_gt_50k"].to_numpy()
    numbers: dict[str, object] = {"adult_train_rows": len(train), "adult_test_rows": len(test)}
    for mname, make in _models(seed, quick).items():
        clf = make().fit(xtr, ytr)
        pred = clf.predict(xte).astype(np.int8)
        r = audit(
            f"adult_{mname}",
            yte,
            pred,
            test["race"].to_numpy(),
            out_dir,
            f"UCI Adult (test split, {len(test):,} rows), {mname.upper()}: income > 50K by race",
            dpi,
        )
        t = r["tables"]
        numbers[f"adult_{mname}_accuracy"] = r["accuracy"]
        for metric in ("ofi", "di_paper", "di_pp_over_p", "te"):
            numbers[f"adult_{mname}_{metric}_black_white"] = float(t[metric].loc["Black", "White"])
        numbers[f"adult_{mname}_ofi_sign_flipped_by_authors_layout"] = r[
            "ofi_sign_flipped_by_authors_layout"
        ]
    # 60 random rows of the pooled data, positional 36/24 split, RF (the paper's Fig. 8).
    pooled = pd.concat([load_adult("train"), load_adult("test")], ignore_index=True)
    rng = np.random.default_rng(seed)
    small = pooled.iloc[rng.choice(len(pooled), size=60, replace=False)].reset_index(drop=True)
    x = encode_adult(small, vocab)
    x = minmax(x)[0]
    y = small["label_income_gt_50k"].to_numpy()
    clf = _models(seed, quick)["rf"]().fit(x[:36], y[:36])
    pred = clf.predict(x[36:]).astype(np.int8)
    r = audit(
        "adult_rf60",
        y[36:],
        pred,
        small["race"].to_numpy()[36:],
        out_dir,
        "UCI Adult, 60 random rows (36 train / 24 test), RF",
        dpi,
    )
    numbers["adult_rf60_groups_in_test"] = len(r["groups"])
    numbers["adult_rf60_undefined_di_paper_pairs"] = f"{r['undefined_di_paper_pairs']}/{r['pairs']}"
    numbers["adult_rf60_undefined_te_pairs"] = f"{r['undefined_te_pairs']}/{r['pairs']}"
    return numbers


def acs_study(
    root: Path,
    out_dir: Path,
    years=(2014, 2015, 2016, 2017),
    state: str = "GA",
    seed: int = 0,
    quick: bool = False,
) -> dict[str, object]:
    """The paper's design on local ACS files: per-year min-max + shuffle, positional 60/40."""
    from ofijax.datasets import ACS_EMPLOYMENT_FEATURES

    dpi = 60 if quick else 90
    rng = np.random.default_rng(seed)
    parts = []
    for y in years:
        d = load_acs_employment(root, state=state, years=[y])
        x = minmax(d[list(ACS_EMPLOYMENT_FEATURES)].to_numpy(np.float64))[0]
        d = d.assign(**{c: x[:, i] for i, c in enumerate(ACS_EMPLOYMENT_FEATURES)})
        parts.append(d.iloc[rng.permutation(len(d))])
    data = pd.concat(parts, ignore_index=True)
    feats = list(ACS_EMPLOYMENT_FEATURES)
    numbers: dict[str, object] = {"acs_rows": len(data)}

    def run(tag, frame, model_names):
        cut = int(round(0.6 * len(frame)))
        x = frame[feats].to_numpy()
        y = frame["label_employed"].to_numpy()
        for mname in model_names:
            clf = _models(seed, quick)[mname]().fit(x[:cut], y[:cut])
            pred = clf.predict(x[cut:]).astype(np.int8)
            r = audit(
                f"acs_{tag}{mname}",
                y[cut:],
                pred,
                frame["race"].to_numpy()[cut:],
                out_dir,
                f"ACS Employment {state} {min(years)}-{max(years)} ({len(frame):,} rows), "
                f"{mname.upper()}",
                dpi,
            )
            numbers[f"acs_{tag}{mname}_accuracy"] = r["accuracy"]
            numbers[f"acs_{tag}{mname}_undefined_te_pairs"] = (
                f"{r['undefined_te_pairs']}/{r['pairs']}"
            )

    run("", data, ("rf", "nb"))
    small = data.iloc[rng.choice(len(data), size=min(60, len(data)), replace=False)]
    run("60_", small.reset_index(drop=True), ("rf",))
    return numbers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="subsample Adult, 20 trees")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--acs-root", type=Path, default=None, help="folder with ACS PUMS files")
    p.add_argument("--acs-state", default="GA")
    p.add_argument("--acs-years", type=int, nargs="+", default=[2014, 2015, 2016, 2017])
    args = p.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    numbers = adult_study(args.out, seed=args.seed, quick=args.quick)
    if args.acs_root is not None:
        numbers.update(
            acs_study(
                args.acs_root,
                args.out,
                tuple(args.acs_years),
                args.acs_state,
                args.seed,
                args.quick,
            )
        )
    numbers["runtime_s"] = round(time.perf_counter() - t0, 2)
    print_key_numbers(numbers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
