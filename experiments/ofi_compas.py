"""OFI paper, COMPAS study: per-race confusion matrices, OFI, DI (both variants) and TE.

Data: ProPublica's two-year files, shipped in ``ofijax.datasets``:

* ``violent`` -- ``compas-scores-two-years-violent.csv`` with ProPublica's filters (4,020 rows),
  label = two-year violent recidivism, prediction = violence score. This is the paper's data.
* ``general`` -- ``compas-scores-two-years.csv`` with the same filters (6,172 rows), label =
  two-year recidivism, prediction = general score. Not comparable with the paper's figure.

Positive label = "not a recidivist", positive prediction = "Low" risk (the paper's flip). The
confusion matrices are exact integers counted from raw rows by ``ofijax.group_confusion_matrices``;
the flip is cross-checked against counting the original orientation and applying ``ofijax.flip``.

The published figure was computed by the authors from *rounded integer percentages* (Gursoy &
Kakadiaris, Table 8B) times the group sizes. ``paper_inputs`` rebuilds those fractional matrices
(the percentages are checked to equal our exact counts rounded to whole percent) so that the
effect of the rounding is measured, not guessed.

Writes under ``experiments/results/`` (prefix ``ofi_compas_``): per-data-set count tables,
pairwise matrices (OFI, DI paper, DI pp_over_p, TE) as CSV, heatmap PNGs, the percentage check
and ``ofi_compas_key_numbers.csv``.

Usage: ``python experiments/ofi_compas.py [--quick] [--out DIR]``
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
from ofijax.datasets import load_compas  # noqa: E402

#: Rounded integer percentages (TP, FN, FP, TN) with positive = recidivist / high risk, as
#: hard-coded in the OFI authors' ``compas_case_study.py`` from Gursoy & Kakadiaris (arXiv
#: 2307.00472, Table 8B), and the group sizes used there. Reference data, checked below.
PAPER_PERCENT = {
    "African-American": (13, 8, 24, 55),
    "Asian": (12, 0, 4, 85),
    "Caucasian": (4, 8, 14, 75),
    "Hispanic": (3, 7, 17, 73),
    "Native American": (14, 0, 14, 71),
    "Other": (7, 7, 13, 74),
}
PAPER_N = {
    "African-American": 1918,
    "Asian": 26,
    "Caucasian": 1459,
    "Hispanic": 355,
    "Native American": 7,
    "Other": 255,
}

PAIR = ("African-American", "Caucasian")


def compas_cms(variant: str) -> tuple[tuple, np.ndarray]:
    """Exact per-race CMs (beneficial orientation) from the raw rows of a COMPAS variant.

    Returns ``(groups, cms)`` with ``cms`` of shape ``(k, 4)`` (TP, FN, FP, TN), positive label =
    not a recidivist, positive prediction = Low risk.
    """
    df = load_compas(variant)
    res = ofijax.group_confusion_matrices(df["label_not_recid"], df["pred_low_risk"], df["race"])
    # Cross-check the flip: count in the original (harmful-positive) orientation, then flip.
    orig = ofijax.group_confusion_matrices(
        df["two_year_recid"], 1 - df["pred_low_risk"], df["race"]
    )
    assert orig.groups == res.groups
    np.testing.assert_array_equal(np.asarray(ofijax.flip(orig.cms)), np.asarray(res.cms))
    return res.groups, np.asarray(res.cms)


def rounded_percentages(cms_beneficial: np.ndarray) -> np.ndarray:
    """Whole-percent cells in the original orientation (positive = recidivist), half up."""
    orig = np.asarray(ofijax.flip(cms_beneficial), dtype=np.float64)
    return np.floor(100.0 * orig / orig.sum(-1, keepdims=True) + 0.5).astype(int)


def paper_inputs(groups) -> np.ndarray:
    """The authors' fractional CMs: percent / 100 * n, flipped to the beneficial orientation."""
    orig = np.array([np.array(PAPER_PERCENT[g], float) / 100.0 * PAPER_N[g] for g in groups])
    return np.asarray(ofijax.flip(orig), dtype=np.float64)


def _pair_values(tables, groups) -> dict[str, float]:
    i, j = groups.index(PAIR[0]), groups.index(PAIR[1])
    return {name: float(t.iloc[i, j]) for name, t in tables.items()}


def run(out_dir: Path = RESULTS_DIR, quick: bool = False) -> dict[str, object]:
    """Compute every table and figure; return the key numbers."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dpi = 60 if quick else 90
    key_rows = []
    numbers: dict[str, object] = {}
    tables_by_source = {}
    for variant in ("violent", "general"):
        groups, cms = compas_cms(variant)
        cm_table(cms, groups).to_csv(out_dir / f"ofi_compas_{variant}_counts.csv")
        tables = pair_tables(cms, groups)
        tables_by_source[variant] = tables
        for name, t in tables.items():
            t.to_csv(out_dir / f"ofi_compas_{variant}_{name}.csv", float_format="%.6f")
        label = "violent subset, 4,020 rows" if variant == "violent" else "general, 6,172 rows"
        heatmaps(
            tables,
            f"COMPAS ({label}), exact counts; positive = not a recidivist / Low risk",
            out_dir / f"ofi_compas_{variant}_heatmaps.png",
            dpi=dpi,
        )
        for metric, val in _pair_values(tables, groups).items():
            key_rows.append({"source": f"{variant}_exact", "metric": metric, "value": val})
            numbers[f"{metric}_aa_cauc_{variant}"] = val
        numbers[f"rows_{variant}"] = int(cms.sum())

    # The paper's inputs: rounded percentages of the violent subset.
    groups, cms = compas_cms("violent")
    ours_pct = rounded_percentages(cms)
    check = []
    for g, row in zip(groups, ours_pct):
        check.append(
            {
                "group": g,
                "n_ours": int(cms[groups.index(g)].sum()),
                "n_paper": PAPER_N[g],
                **{f"{c}_pct_ours": int(v) for c, v in zip(("TP", "FN", "FP", "TN"), row)},
                **{f"{c}_pct_paper": v for c, v in zip(("TP", "FN", "FP", "TN"), PAPER_PERCENT[g])},
                "row_sum_pct_paper": sum(PAPER_PERCENT[g]),
                "match": bool(
                    tuple(int(v) for v in row) == PAPER_PERCENT[g]
                    and int(cms[groups.index(g)].sum()) == PAPER_N[g]
                ),
            }
        )
    check = pd.DataFrame(check)
    check.to_csv(out_dir / "ofi_compas_paper_percentages.csv", index=False)
    numbers["paper_percentages_match"] = bool(check["match"].all())

    fcms = paper_inputs(groups)
    paper_tables = pair_tables(fcms, groups)
    for name, t in paper_tables.items():
        t.to_csv(out_dir / f"ofi_compas_paper_inputs_{name}.csv", float_format="%.6f")
    if not quick:
        heatmaps(
            paper_tables,
            "COMPAS violent subset from the paper's rounded percentages (what the published "
            "figure shows)",
            out_dir / "ofi_compas_paper_inputs_heatmaps.png",
            dpi=dpi,
        )
    for metric, val in _pair_values(paper_tables, groups).items():
        key_rows.append({"source": "paper_rounded_inputs", "metric": metric, "value": val})
        numbers[f"{metric}_aa_cauc_paper_inputs"] = val
    exact = tables_by_source["violent"]
    for name in paper_tables:
        diff = np.abs(paper_tables[name].to_numpy() - exact[name].to_numpy())
        both = np.isfinite(diff)
        numbers[f"max_abs_diff_rounding_{name}"] = float(diff[both].max())
        key_rows.append(
            {
                "source": "max_abs_diff_exact_vs_rounded",
                "metric": name,
                "value": float(diff[both].max()),
            }
        )
    pd.DataFrame(key_rows).to_csv(
        out_dir / "ofi_compas_key_numbers.csv", index=False, float_format="%.6f"
    )
    return numbers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small figures, skip the extra heatmap")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="output folder")
    args = p.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    numbers = run(args.out, quick=args.quick)
    numbers["runtime_s"] = round(time.perf_counter() - t0, 2)
    print_key_numbers(numbers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
