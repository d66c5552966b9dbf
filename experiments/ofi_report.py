"""Build the number tables of RESULTS.md (OFI section) from the CSVs the experiment scripts wrote.

No number is typed in here except the OFI paper's own printed values (``PAPER_*``), which are
quoted next to ours. Every other figure is read from ``experiments/results/*.csv``. Each table is a
block between ``<!-- ofi:NAME -->`` and ``<!-- /ofi:NAME -->`` in ``experiments/RESULTS.md``;
``--update`` rewrites those blocks in place, ``--check`` exits 1 when they are stale (the test
suite runs the check).

Usage: ``python experiments/ofi_report.py [--update | --check]``
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RESULTS_MD = HERE / "RESULTS.md"

#: The OFI paper's printed Table 1 values (2 decimals; "1 by context" for B's DI).
PAPER_TABLE1 = {
    "A": {"ofi": "−0.06", "di": "0.38"},
    "B": {"ofi": "0.22", "di": "NaN (1 by context)"},
    "alpha": {"ofi": "0.23", "di": "2.71"},
}


def _num(path: Path) -> dict[str, str]:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    return dict(zip(df["name"], df["value"]))


def _f(x, nd=4) -> str:
    x = float(x)
    if math.isnan(x):
        return "NaN"
    return f"{x:.{nd}f}".replace("-", "−")


def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def _frac(cm_i: str, cm_j: str) -> Fraction:
    ci = [int(x) for x in cm_i.split()]
    cj = [int(x) for x in cm_j.split()]
    return Fraction(ci[2] - ci[1], sum(ci)) - Fraction(cj[2] - cj[1], sum(cj))


def block_table1(r: Path) -> str:
    t = pd.read_csv(r / "ofi_table1.csv")
    rows = []
    for _, s in t.iterrows():
        p = PAPER_TABLE1[s.scenario]
        rows.append(
            {
                "scenario": s.scenario,
                "CM i / CM j (TP FN FP TN)": f"{s.cm_i} / {s.cm_j}",
                "OFI paper": p["ofi"],
                "OFI ours (exact)": f"{_frac(s.cm_i, s.cm_j)} = {_f(s.ofi)}",
                "DI paper": p["di"],
                "DI ours, eq. 1": _f(s.di_paper),
                "DI ours, 0/0→1": _f(s.di_paper_undefined_one),
                "DI ours, P̂/P": _f(s.di_pp_over_p),
                "TE ours": _f(s.te),
            }
        )
    return _md(pd.DataFrame(rows))


def block_compas_counts(r: Path) -> str:
    out = []
    for v in ("violent", "general"):
        c = pd.read_csv(r / f"ofi_compas_{v}_counts.csv")
        c = c.assign(**{k: c[k].map(lambda x: _f(x)) for k in ("b", "E[b]", "B")})
        out.append(f"**{v}** ({int(c['n'].sum()):,} rows)\n\n" + _md(c))
    return "\n\n".join(out)


def block_compas_pct(r: Path) -> str:
    c = pd.read_csv(r / "ofi_compas_paper_percentages.csv")
    rows = []
    for _, s in c.iterrows():
        rows.append(
            {
                "group": s.group,
                "n ours / paper": f"{s.n_ours} / {s.n_paper}",
                "ours: TP FN FP TN (%)": " ".join(
                    str(s[f"{k}_pct_ours"]) for k in ("TP", "FN", "FP", "TN")
                ),
                "paper's inputs (%)": " ".join(
                    str(s[f"{k}_pct_paper"]) for k in ("TP", "FN", "FP", "TN")
                ),
                "paper's row sum": f"{s.row_sum_pct_paper} %",
                "match": "yes" if s.match else "NO",
            }
        )
    return _md(pd.DataFrame(rows))


def block_compas_key(r: Path) -> str:
    k = pd.read_csv(r / "ofi_compas_key_numbers.csv")
    piv = k.pivot(index="metric", columns="source", values="value")
    order = ["ofi", "di_paper", "di_pp_over_p", "te"]
    names = {
        "ofi": "OFI",
        "di_paper": "DI, eq. 1 (P̂/n)",
        "di_pp_over_p": "DI, authors' code (P̂/P)",
        "te": "TE",
    }
    rows = []
    for m in order:
        rows.append(
            {
                "metric (African-American, Caucasian)": names[m],
                "violent, exact counts": _f(piv.loc[m, "violent_exact"]),
                "violent, paper's rounded % (published figure's inputs)": _f(
                    piv.loc[m, "paper_rounded_inputs"]
                ),
                "max |exact − rounded| over all pairs": _f(
                    piv.loc[m, "max_abs_diff_exact_vs_rounded"]
                ),
                "general file, exact counts": _f(piv.loc[m, "general_exact"]),
            }
        )
    n = _num(r / "ofi_compas_numbers.csv")
    tail = []
    for v in ("violent", "general"):
        key = f"ofi_aa_cauc_{v}_threshold95_multinomial_null"
        if key in n:
            tail.append(
                f"* {v}: null = both groups Multinomial(n_g, p), p = pooled CM "
                f"({n[f'ofi_aa_cauc_{v}_null_reference_cm']}); σ(OFI) = "
                f"{_f(n[f'ofi_aa_cauc_{v}_sigma_ofi_multinomial_null'])}, 95 % threshold "
                f"±{_f(n[key])}, observed OFI {_f(n[f'ofi_aa_cauc_{v}'])}, exact two-sided "
                f"p = {float(n[f'ofi_aa_cauc_{v}_pvalue_multinomial_null']):.2g}."
            )
    return _md(pd.DataFrame(rows)) + ("\n\n" + "\n".join(tail) if tail else "")


def block_employment(r: Path) -> str:
    n = _num(r / "ofi_employment_adult_numbers.csv")
    rows = []
    for m in ("rf", "nb"):
        rows.append(
            {
                "model": m.upper(),
                "accuracy": _f(n[f"adult_{m}_accuracy"]),
                "OFI(Black, White)": _f(n[f"adult_{m}_ofi_black_white"]),
                "DI eq. 1": _f(n[f"adult_{m}_di_paper_black_white"]),
                "DI P̂/P": _f(n[f"adult_{m}_di_pp_over_p_black_white"]),
                "TE": _f(n[f"adult_{m}_te_black_white"]),
                "OFI sign flips under the authors' layout": n[
                    f"adult_{m}_ofi_sign_flipped_by_authors_layout"
                ],
            }
        )
    out = [
        f"Train {int(n['adult_train_rows']):,} rows, test {int(n['adult_test_rows']):,} rows.",
        _md(pd.DataFrame(rows)),
    ]
    for m in ("rf", "nb"):
        d = pd.read_csv(r / f"ofi_employment_adult_{m}_direction_counts.csv")
        d = d[
            ["group", "comparisons", "di_paper_gt_1", "di_paper_gt_5/4", "ofi_gt_0", "ofi_gt_0.3"]
        ]
        d = d.rename(
            columns={
                "di_paper_gt_1": "DI > 1",
                "di_paper_gt_5/4": "DI > 5/4",
                "ofi_gt_0": "OFI > 0",
                "ofi_gt_0.3": "OFI > 0.3",
            }
        )
        out.append(
            f"**{m.upper()}**: comparisons in which each metric favours group i\n\n" + _md(d)
        )
    c60 = pd.read_csv(r / "ofi_employment_adult_rf60_counts.csv")
    out.append(
        "**RF, 60 rows** (24 test rows): groups in the test part "
        f"{n['adult_rf60_groups_in_test']}; undefined DI (eq. 1) pairs "
        f"{n['adult_rf60_undefined_di_paper_pairs']}, undefined TE pairs "
        f"{n['adult_rf60_undefined_te_pairs']}.\n\n"
        + _md(c60.assign(B=c60["B"].map(_f))[["group", "n", "TP", "FN", "FP", "TN", "B"]])
    )
    return "\n\n".join(out)


def block_robustness(r: Path) -> str:
    s = pd.read_csv(r / "ofi_robustness_summary.csv")
    rows = []
    for _, x in s.iterrows():
        rows.append(
            {
                "n_i×n_j": f"{x.n_i}×{x.n_j}",
                "change": x.change,
                "metric": x.metric,
                "pairs": f"{x.pairs:,}",
                "undefined share": _f(x.undefined_share, 4),
                "median max |Δ|": _f(x.median_max_change, 4),
                "largest |Δ|": _f(x.max_max_change, 4),
                "OFI bound": "" if math.isnan(x.ofi_bound) else _f(x.ofi_bound, 4),
                "share: defined↔undefined": _f(x.share_definedness_switch, 3),
                "share: verdict flips": _f(x.share_verdict_flip, 3),
            }
        )
    return _md(pd.DataFrame(rows))


def block_dist_sigma(r: Path) -> str:
    s = pd.read_csv(r / "ofi_distributions_sigma.csv").set_index("n")
    rows = []
    for n in s.index[s["sigma_mc"].notna()]:
        x = s.loc[n]
        rows.append(
            {
                "n": n,
                "Var B exact": x.var_exact_fraction,
                "= (n+4)/(10n)": "yes" if x.var_equals_theorem_D2 else "NO",
                "D.4 as printed (n+4)/10": _f(x.var_corollary_D4_as_printed, 1),
                "σ exact": _f(x.sigma_exact),
                "σ Monte Carlo ± SE": f"{_f(x.sigma_mc)} ± {_f(x.sigma_mc_se)}",
                "σ, p = ¼ multinomial (not uniform)": _f(x.sigma_mc_multinomial_p_quarter),
            }
        )
    n = _num(r / "ofi_distributions_numbers.csv")
    head = (
        f"Exact Var B = (n+4)/(10n) for every n = 1 … {n['n_checked_exactly']}: "
        f"{n['var_equals_theorem_D2_all_n']}. Monte Carlo: {int(n['mc_samples_per_n']):,} "
        f"draws per n, largest |z| of σ = {_f(n['mc_max_abs_z_sigma'], 2)}."
    )
    return head + "\n\n" + _md(pd.DataFrame(rows))


def block_dist_shape(r: Path) -> str:
    s = pd.read_csv(r / "ofi_distributions_shape.csv")
    s = s[
        [
            "n",
            "mode",
            "count_decreases_towards_0",
            "distinct_increments_first5",
            "sup_abs_diff_triangular",
            "sup_abs_diff_quadratic",
            "sigma_exact",
        ]
    ].copy()
    for c in ("sup_abs_diff_triangular", "sup_abs_diff_quadratic", "sigma_exact"):
        s[c] = s[c].map(_f)
    s = s.rename(
        columns={
            "count_decreases_towards_0": "count decreases towards the mode",
            "distinct_increments_first5": "first count increments",
            "sup_abs_diff_triangular": "sup |n·P − (1−|x|)|",
            "sup_abs_diff_quadratic": "sup |n·P − 1.5(1−|x|)²|",
            "sigma_exact": "σ exact (triangle: 0.4082, limit: 0.3162)",
        }
    )
    return _md(s)


def block_dist_thresholds(r: Path) -> str:
    t = pd.read_csv(r / "ofi_distributions_thresholds.csv")
    rows = []
    for _, x in t.iterrows():
        rows.append(
            {
                "n_i, n_j": f"{x.n_i}, {x.n_j}",
                "null": x.null,
                "σ B_i": _f(x.sigma_B_i),
                "σ B_j": _f(x.sigma_B_j),
                "σ OFI": _f(x.sigma_OFI),
                "95 % threshold (exact)": _f(x.threshold_95_exact),
                "95 % (Monte Carlo)": _f(x.threshold_95_mc),
                "P(|OFI| > 0.3)": _f(x["share_abs_ofi_gt_0.3"]),
            }
        )
    return _md(pd.DataFrame(rows))


def block_dist_holes(r: Path) -> str:
    h = pd.read_csv(r / "ofi_distributions_holes.csv")
    ns = sorted(h["n"].unique())
    pick = [n for n in (10, 100) if n in ns] or ns[-1:]
    rows = []
    for metric, g in h.groupby("metric", sort=False):
        row = {"metric (zero denominator)": metric}
        for n in pick:
            x = g[g["n"] == n].iloc[0]
            ok = "" if x.holes == x.closed_form else " (≠ closed form!)"
            row[f"holes, n = {n}"] = f"{x.holes:,}{ok}"
            row[f"share, n = {n}"] = _f(x.share)
        rows.append(row)
    return _md(pd.DataFrame(rows))


BLOCKS = {
    "table1": block_table1,
    "compas-key": block_compas_key,
    "compas-pct": block_compas_pct,
    "compas-counts": block_compas_counts,
    "employment": block_employment,
    "robustness": block_robustness,
    "dist-sigma": block_dist_sigma,
    "dist-shape": block_dist_shape,
    "dist-thresholds": block_dist_thresholds,
    "dist-holes": block_dist_holes,
}


def render(results: Path = RESULTS) -> dict[str, str]:
    return {name: fn(results) for name, fn in BLOCKS.items()}


def apply(text: str, blocks: dict[str, str]) -> str:
    for name, body in blocks.items():
        pat = re.compile(rf"(<!-- ofi:{name} -->\n)(?:.*?\n)?(<!-- /ofi:{name} -->)", re.S)
        if not pat.search(text):
            raise ValueError(f"RESULTS.md: block <!-- ofi:{name} --> not found")
        text = pat.sub(lambda m, b=body: m.group(1) + b + "\n" + m.group(2), text)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--update", action="store_true", help="rewrite the blocks in RESULTS.md")
    g.add_argument("--check", action="store_true", help="fail if RESULTS.md is stale")
    args = p.parse_args(argv)
    blocks = render()
    if args.update or args.check:
        text = RESULTS_MD.read_text()
        new = apply(text, blocks)
        if args.check:
            if new != text:
                print("RESULTS.md is stale: run python experiments/ofi_report.py --update")
                return 1
            print("RESULTS.md is up to date")
            return 0
        RESULTS_MD.write_text(new)
        return 0
    for name, body in blocks.items():
        print(f"<!-- ofi:{name} -->\n{body}\n<!-- /ofi:{name} -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
