"""The ``ofijax`` command line: ``audit``, ``scan``, ``simulate`` and ``table1``.

``ofijax audit`` with no options audits the embedded COMPAS data as the OFI paper did (ProPublica's
violent two-year file, filtered to 4,020 rows; label flipped to "not a violent recidivist",
prediction = low risk, group = race) and writes ``report.json``, ``report.md`` and heatmaps to
``ofijax-report/``. Errors in the user's input (a missing file, an unknown column, a non-binary
label, missing values, an empty group) print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from fractions import Fraction
from typing import Any

from ofijax.cli import _sources

__all__ = ["main", "build_parser", "load_table", "prepare"]

EXIT_USAGE = 2

_DESCRIPTION = """\
ofijax: legally grounded fairness audits of binary classifiers.

Commands:
  audit      per-group metrics, pairwise OFI with significance, DI, verdicts, report files
             (no --data: the embedded COMPAS data, as in the OFI paper)
  scan       the worst subgroup by FPR-/TPR-/IJDI-Scan with a randomization p-value
  simulate   Monte Carlo of B and OFI under a null model for given group sizes
  table1     the OFI paper's Table 1 recomputed (also what `python -m ofijax` prints)

Run `ofijax COMMAND --help` for each command's options.
"""


class UserError(ValueError):
    """An error in the user's input: reported in one line, exit status 2."""


# ------------------------------------------------------------------------------------------------
# Data loading and preparation (pure pandas; no JAX import needed for the checks)
# ------------------------------------------------------------------------------------------------


def load_table(path: str):
    """Read a CSV (``.csv``, ``.csv.gz``, ``.txt``), TSV or Parquet file into a DataFrame."""
    import pandas as pd

    if not os.path.exists(path):
        raise FileNotFoundError(f"--data: file {path!r} not found.")
    if os.path.isdir(path):
        raise UserError(f"--data: {path!r} is a directory; pass a .csv or .parquet file.")
    low = path.lower()
    try:
        if low.endswith((".parquet", ".pq")):
            try:
                return pd.read_parquet(path)
            except ImportError as exc:
                raise UserError(
                    f"--data: reading Parquet needs pyarrow or fastparquet ({exc}); "
                    "install one or pass a CSV file."
                ) from None
        sep = "\t" if low.endswith((".tsv", ".tsv.gz", ".tab")) else ","
        return pd.read_csv(path, sep=sep)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"--data: cannot read {path!r} as a table ({exc}).") from None


def _check_column(df, col: str, option: str, source: str) -> None:
    if col not in df.columns:
        cols = ", ".join(map(str, df.columns))
        if len(cols) > 600:
            cols = cols[:600] + ", ..."
        raise UserError(f"{option}: column {col!r} not found in {source}; columns: {cols}")


def _values_preview(values, limit: int = 10) -> str:
    vals = [repr(x.item() if hasattr(x, "item") else x) for x in list(values)[:limit]]
    more = f", ... ({len(values)} distinct)" if len(values) > limit else ""
    return "[" + ", ".join(vals) + more + "]"


def _to_binary(series, option: str, positive: list[str] | None):
    """Map a label/prediction column to 0/1, or raise naming its values."""
    import numpy as np
    import pandas as pd

    s = series
    if s.dtype == bool:
        return s.astype(np.int8).to_numpy(), None
    uniq = pd.unique(s)
    if pd.api.types.is_numeric_dtype(s) and set(np.asarray(uniq, dtype=float).tolist()) <= {0.0, 1.0}:
        return s.astype(np.int8).to_numpy(), None
    if not pd.api.types.is_numeric_dtype(s) and set(map(str, uniq)) <= {"0", "1"}:
        return (s.astype(str) == "1").astype(np.int8).to_numpy(), None
    if positive:
        if pd.api.types.is_numeric_dtype(s):
            nums = []
            for p in positive:
                try:
                    nums.append(float(p))
                except ValueError:
                    pass
            hit = s.astype(float).isin(nums)
        else:
            hit = s.astype(str).isin(positive)
        if not hit.any():
            raise UserError(
                f"--positive: none of {positive} occurs in the {option} column {s.name!r}; "
                f"its values are {_values_preview(sorted(map(str, uniq)))}"
            )
        mapped = sorted({str(x) for x in s[hit].unique()})
        return hit.astype(np.int8).to_numpy(), mapped
    raise UserError(
        f"{option}: column {s.name!r} is not binary 0/1; its values are "
        f"{_values_preview(sorted(map(str, uniq)))}. Pass --positive VALUE to name the beneficial value."
    )


def prepare(
    df,
    *,
    label: str,
    pred: str,
    groups: list[str],
    positive: list[str] | None = None,
    dropna: bool = False,
    weight: str | None = None,
    only_groups: list[str] | None = None,
    extra: list[str] | None = None,
    source: str = "the data",
    min_groups: int = 2,
) -> dict:
    """Check and convert the columns of an audit; raise :class:`UserError` on bad input.

    Returns a dict with ``y``, ``yhat`` (int8 0/1), ``sf`` (DataFrame of the group columns),
    ``w`` (weights or None), ``frame`` (the rows kept), ``dropped`` and ``positive_map``.
    """
    import numpy as np
    import pandas as pd

    cols = [("--label", label), ("--pred", pred)] + [("--group", g) for g in groups]
    if weight:
        cols.append(("--weight", weight))
    cols += [("--attr", a) for a in (extra or [])]
    for opt, c in cols:
        _check_column(df, c, opt, source)
    if len(df) == 0:
        raise UserError(f"--data: {source} has no rows.")
    used = list(dict.fromkeys(c for _, c in cols))
    missing = df[used].isna()
    dropped = 0
    if missing.any().any():
        bad_rows = missing.any(axis=1)
        n_bad = int(bad_rows.sum())
        if not dropna:
            parts = []
            for c in used:
                idx = np.flatnonzero(missing[c].to_numpy())
                if idx.size:
                    first = ", ".join(str(i + 2) for i in idx[:3])  # file line numbers (header = 1)
                    parts.append(f"{c!r}: {idx.size} (file lines {first}{', ...' if idx.size > 3 else ''})")
            raise UserError(
                f"{n_bad} row(s) have missing values: {'; '.join(parts)}. "
                "Pass --dropna to drop them, or fill them first."
            )
        df = df.loc[~bad_rows]
        dropped = n_bad
        if len(df) == 0:
            raise UserError("--dropna: every row has a missing value; nothing is left to audit.")
    positive_map = {}
    y, m = _to_binary(df[label], "--label", positive)
    if m:
        positive_map[label] = m
    yhat, m = _to_binary(df[pred], "--pred", positive)
    if m:
        positive_map[pred] = m
    sf = df[groups].copy()
    for g in groups:
        col = sf[g]
        if isinstance(col.dtype, pd.CategoricalDtype):
            counts = col.value_counts()
            empty = [str(c) for c, n in counts.items() if n == 0]
            if empty and not only_groups:
                raise UserError(
                    f"--group: group {empty[0]!r} of column {g!r} has zero rows (a declared category "
                    f"with no data); choose the groups to compare with --groups."
                )
            sf[g] = col.astype(str) if not only_groups else col
    if only_groups:
        labels = sf.astype(str).agg(" & ".join, axis=1) if len(groups) > 1 else sf[groups[0]].astype(str)
        present = sorted(set(labels))
        for gname in only_groups:
            if gname not in present:
                raise UserError(
                    f"--groups: group {gname!r} has zero rows in column(s) {', '.join(groups)}; "
                    f"groups present: {_values_preview(present, 20)}"
                )
        keep = labels.isin(only_groups).to_numpy()
        df, sf, y, yhat = df.loc[keep], sf.loc[keep], y[keep], yhat[keep]
        sf = sf.astype(str)
    w = None
    if weight:
        w = pd.to_numeric(df[weight], errors="coerce").to_numpy(dtype=float)
        if np.isnan(w).any() or (w < 0).any():
            raise UserError(f"--weight: column {weight!r} must hold non-negative numbers.")
    nunique = sf.drop_duplicates().shape[0] if groups else 0
    if nunique < min_groups:
        raise UserError(
            f"--group: only one group ({sf.iloc[0].tolist()}) is present; an audit compares at least two."
        )
    return {
        "y": y, "yhat": yhat, "sf": sf.reset_index(drop=True), "w": w,
        "frame": df.reset_index(drop=True), "dropped": dropped, "positive_map": positive_map,
    }


# ------------------------------------------------------------------------------------------------
# Report files
# ------------------------------------------------------------------------------------------------


def write_heatmaps(af, out: str) -> tuple[list[str], str | None]:
    """OFI and DI heatmaps (as the OFI paper's Figure 2) as PNGs; skipped without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm, TwoSlopeNorm
    except ImportError:
        return [], "matplotlib is not installed: heatmap PNGs skipped (pip install matplotlib)."
    import numpy as np

    from ofijax.auditing._frame import _label

    labels = [_label(g) for g in af.groups]
    k = len(labels)
    size = max(4.5, 0.8 * k + 2.5)
    files = []
    sig_mask = af.p_adjusted < af.settings["alpha"] if not np.isnan(af.p_adjusted).all() else (
        (af.ci_low > 0) | (af.ci_high < 0)
    )
    for name, mat, title in (
        ("ofi_heatmap.png", af.ofi, "OFI(i, j) = B_i − B_j   (* significant; > 0: bias against j)"),
        ("di_heatmap.png", af.di, f"DI(i, j) ({af.settings['di_variant']} variant; outside [0.8, 1.25] fails 4/5)"),
    ):
        fig, ax = plt.subplots(figsize=(size, size * 0.85))
        m = np.asarray(mat, dtype=float)
        if name.startswith("ofi"):
            lim = max(float(np.nanmax(np.abs(m))), 1e-3)
            im = ax.imshow(m, cmap="RdBu", norm=TwoSlopeNorm(0.0, -lim, lim))
        else:
            pos = m[np.isfinite(m) & (m > 0)]
            lim = max(float(np.max(np.abs(np.log(pos)))) if pos.size else 0.5, np.log(1.3))
            im = ax.imshow(np.where(m > 0, m, np.nan), cmap="RdBu", norm=LogNorm(np.exp(-lim), np.exp(lim)))
        cbar = fig.colorbar(im, ax=ax, shrink=0.8)
        if not name.startswith("ofi"):
            ticks = [t for t in (0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0) if np.exp(-lim) <= t <= np.exp(lim)]
            cbar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
            cbar.minorticks_off()
        for i in range(k):
            for j in range(k):
                val = m[i, j]
                txt = "undef." if np.isnan(val) else f"{val:.2f}"
                if name.startswith("ofi") and i != j and bool(sig_mask[i, j]):
                    txt += "*"
                ax.text(j, i, txt, ha="center", va="center", fontsize=8)
        ax.set_xticks(range(k), labels, rotation=45, ha="right")
        ax.set_yticks(range(k), labels)
        ax.set_xlabel("group j")
        ax.set_ylabel("group i")
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
        files.append(name)
    return files, None


def _md_table(df) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(x) for x in row) + " |")
    return "\n".join(lines)


def write_markdown(af, report: dict, path: str, images: list[str], plot_note: str | None) -> None:
    """A Markdown report: data, settings, per-group table, pairs, verdicts, notes, heatmaps."""
    import pandas as pd

    from ofijax.auditing._frame import _fmt_p, _label

    s = af.settings
    d = report["data"]
    bg = af.by_group.reset_index()
    bg.insert(0, "group", [_label(g) for g in af.groups])
    bg = bg[["group", "n", "tp", "fn", "fp", "tn", "benefit", "expected_benefit", "marginal_benefit"]]
    bg = bg.rename(columns={"benefit": "b", "expected_benefit": "E[b]", "marginal_benefit": "B"})
    for c in ("b", "E[b]", "B"):
        bg[c] = bg[c].map(lambda x: f"{x:.4f}")
    p = af.pairs
    pairs = pd.DataFrame({
        "i": [_label(g) for g in p["group_i"]], "j": [_label(g) for g in p["group_j"]],
        "OFI": p["ofi"].map(lambda x: f"{x:+.4f}"),
        f"{100 * s['confidence']:.0f}% interval": [
            "n/a" if pd.isna(a) else f"[{a:+.3f}, {b:+.3f}]" for a, b in zip(p["ci_low"], p["ci_high"])
        ],
        "p": p["p_value"].map(_fmt_p), f"p ({s['correction']})": p["p_adjusted"].map(_fmt_p),
        "DI": p["di"].map(lambda x: "undef." if pd.isna(x) else f"{x:.3f}"),
        "4/5 rule": p["four_fifths"], "verdict": p["verdict"],
    })
    lines = [
        "# ofijax audit report", "",
        f"- data: {d['source']}, {d['rows']} rows" + (f" ({d['rows_dropped']} dropped: missing values)" if d["rows_dropped"] else ""),
        f"- label `{d['label']}`, prediction `{d['pred']}`, groups by {', '.join(f'`{g}`' for g in d['group'])}"
        + (" (label/prediction flipped: 1 was harmful)" if d["harmful_label"] else ""),
        f"- OFI test: {s['null']} null ({s['method']}), {s['correction']} correction, alpha = {s['alpha']}; "
        f"{100 * s['confidence']:.0f}% percentile bootstrap ({s['num_bootstrap']} replicates, seed {report['seed']})",
        f"- ofijax {report['ofijax_version']}; command: `{report['command']}`",
        "",
        "Reading (OFI paper, §2.3): OFI(i, j) = B_i − B_j with B = (FP − FN)/n. A significant OFI is "
        "**algorithmic bias** (OFI > 0: against j); OFI not significant while DI fails the four-fifths "
        "rule is a **systemic disparity** outside the model.",
        "", "## Groups", "", _md_table(bg), "", "## Pairs", "", _md_table(pairs), "", "## Verdicts", "",
    ]
    lines += [f"- {r}" for r in p["reading"]]
    if af.scan:
        lines += ["", "## Worst subgroups (scan)", ""]
        lines += [f"- {k}: {v.get('description', v)}" for k, v in af.scan.items()]
    notes = list(af.notes) + ([plot_note] if plot_note else [])
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    if images:
        lines += ["", "## Heatmaps", ""] + [f"![{im}]({im})" for im in images]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------
# Simulation
# ------------------------------------------------------------------------------------------------


def simulate_report(ns, *, null: str, cm, samples: int, seed: int, observed: float | None) -> str:
    """Monte Carlo of B (and OFI for two sizes) under a null, next to the exact values.

    Draws come from the :mod:`ofijax.distributions` samplers (one jitted pair draw per chunk of
    65,536, so one compilation); exact moments, tails and thresholds from the same module. Ties in
    |OFI| ≥ t are decided in integers: |D_i n_j − D_j n_i| ≥ ⌈t n_i n_j⌉ with D = FP − FN.
    """
    import jax
    import numpy as np

    from ofijax import distributions as D
    from ofijax.auditing import _significance as sig
    from ofijax.auditing._frame import _progress
    from ofijax.cm import FN, FP

    probs = None
    if null != "uniform":
        c = np.asarray(cm, dtype=float)
        probs = c / c.sum()

    def sampler(n):
        if null == "uniform":
            return D.uniform_sampler(n)
        if null == "multinomial":
            return D.multinomial_sampler(n, probs)
        return D.subsample_sampler([int(round(x)) for x in cm], n)

    ni, nj = (ns[0], ns[1]) if len(ns) == 2 else (ns[0], ns[0])
    chunk = int(min(samples, 1 << 16))
    draw = jax.jit(lambda k: D.pair_sampler(sampler(ni), sampler(nj))(k, (chunk,)))
    key = jax.random.key(seed)
    d_i, d_j = [], []
    for start in _progress(range(0, samples, chunk), "simulate"):
        cms = np.asarray(draw(jax.random.fold_in(key, start // chunk)))[: samples - start].astype(np.int64)
        d_i.append(cms[:, 0, FP] - cms[:, 0, FN])
        d_j.append(cms[:, 1, FP] - cms[:, 1, FN])
    d_i, d_j = np.concatenate(d_i), np.concatenate(d_j)

    null_txt = {
        "uniform": "uniform over M(n)",
        "multinomial": f"Multinomial(n, p = {np.round(probs, 4).tolist() if probs is not None else None})",
        "subsample": f"subsample n rows without replacement from the CM {cm} (hypergeometric)",
    }[null]
    lines = [f"ofijax simulate: {samples} draws, null = {null_txt}, seed {seed}", ""]
    lines.append(f"{'quantity':<22}{'MC mean':>10}{'MC sd':>10}{'exact mean':>12}{'exact sd':>10}"
                 f"{'q2.5%':>9}{'q97.5%':>9}")

    def row(name, x, mom):
        em, es = ("n/a", "n/a") if mom is None else (f"{float(mom.mean):.4f}", f"{math.sqrt(float(mom.var)):.4f}")
        q = np.quantile(x, [0.025, 0.975])
        lines.append(f"{name:<22}{x.mean():>10.4f}{x.std():>10.4f}{em:>12}{es:>10}{q[0]:>9.3f}{q[1]:>9.3f}")

    def exact_moments(n):
        return None if null == "subsample" else D.marginal_benefit_moments(n, probs)

    row(f"B, n = {ni}", d_i / ni, exact_moments(ni))
    if len(ns) == 2:
        row(f"B, n = {nj}", d_j / nj, exact_moments(nj))
        mi, mj = exact_moments(ni), exact_moments(nj)
        row(f"OFI, n = {ni}, {nj}", d_i / ni - d_j / nj,
            None if mi is None else D.Moments(mi.mean - mj.mean, mi.var + mj.var))
        stat = np.abs(d_i * nj - d_j * ni)  # = |OFI| n_i n_j, exact integers
        checks = [("P(|OFI| >= 0.3)", math.ceil(Fraction(3, 10) * ni * nj))]
        if observed is not None:  # the nearest attainable |OFI|
            checks.append((f"P(|OFI| >= |{observed:+.4f}|)", int(round(abs(observed) * ni * nj))))
        lines.append("")
        for label, m in checks:
            ex = "n/a" if null == "subsample" else (
                f"{sig._pvalue_from_pmfs(sig.diff_pmf(ni, probs), sig.diff_pmf(nj, probs), ni, nj, m):.4f}")
            lines.append(f"{label}: Monte Carlo {np.mean(stat >= m):.4f}, exact {ex}")
        if null != "subsample":
            t = D.ofi_threshold(ni, nj, null="uniform" if probs is None else list(probs))
            lines.append(
                f"exact 95% two-sided OFI threshold under this null: {t.threshold:.4f} "
                f"(sd of OFI {t.sigma_ofi:.4f}; the paper's 0.3 approximates the sd of B for ONE group, "
                f"here {t.sigma_b_i:.4f} and {t.sigma_b_j:.4f})"
            )
    if null == "uniform":
        lines.append(f"exact Var(B) under the uniform null = (n + 4)/(10 n) = {(ni + 4) / (10 * ni):.5f} (n = {ni})")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# Parser
# ------------------------------------------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the descriptions' line breaks and shows a default only where there is one."""

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if not (d is None or d is False or d == argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _data_options(p: argparse.ArgumentParser, *, group_help: str | None, compas: tuple = ("violent", "general"),
                  compas_help: str = "", pred_default: str = "pred_low_risk",
                  weights: bool = True) -> argparse._ArgumentGroup:
    d = p.add_argument_group("data")
    d.add_argument("--data", metavar="FILE",
                   help="CSV (.csv, .csv.gz), TSV or Parquet file, one row per person. Without it the "
                        "embedded COMPAS data are used (see --compas).")
    d.add_argument("--compas", choices=compas, default=compas[0],
                   help=compas_help or "which embedded COMPAS file to use when --data is not given: "
                        "'violent' (the OFI paper's 4,020 rows) or 'general' (6,172 rows)")
    d.add_argument("--label", metavar="COL",
                   help="column of true labels (0/1, 1 = beneficial outcome; see --positive and "
                        "--harmful-label). Default for COMPAS: label_not_recid")
    d.add_argument("--pred", metavar="COL",
                   help=f"column of the classifier's predictions (0/1). Default for COMPAS: {pred_default}")
    if group_help:
        d.add_argument("--group", metavar="COL", action="append", help=group_help)
    d.add_argument("--positive", metavar="VALUE", action="append",
                   help="value(s) counted as 1 (beneficial) in a label/prediction column that is not "
                        "already 0/1; every other value counts as 0. Repeat for several values.")
    d.add_argument("--harmful-label", action="store_true",
                   help="label/prediction 1 is the HARMFUL outcome (e.g. 1 = recidivist): flip both so "
                        "that the positive cell is beneficial, as OFI assumes")
    if weights:
        d.add_argument("--weight", metavar="COL", help="optional column of non-negative sample weights")
    d.add_argument("--dropna", action="store_true",
                   help="drop rows with a missing value in the columns used (otherwise they are an error)")
    return d


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ofijax`` command."""
    parser = argparse.ArgumentParser(prog="ofijax", description=_DESCRIPTION, formatter_class=_Formatter)
    from ofijax import __version__

    parser.add_argument("--version", action="version", version=f"ofijax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # audit ------------------------------------------------------------------------------------
    pa = sub.add_parser(
        "audit", formatter_class=_Formatter,
        help="audit a classifier: OFI with significance, DI, verdicts, report files",
        description=(
            "Audit a binary classifier between groups. For every pair (i, j): OFI = B_i - B_j with\n"
            "B = (FP - FN)/n, its p-value under a named null, a bootstrap interval, DI and TE, and a\n"
            "verdict: 'algorithmic bias' (OFI significant; OFI > 0 = bias against j), 'systemic\n"
            "disparity' (OFI not significant, DI fails the four-fifths rule) or 'no evidence'.\n\n"
            "Without --data it audits the embedded COMPAS data as the OFI paper did."
        ),
    )
    da = _data_options(pa, group_help="sensitive-attribute column; repeat for intersections "
                                      "(e.g. --group race --group sex). Default for COMPAS: race")
    da.add_argument("--groups", metavar="VALUE", nargs="+",
                    help="compare only these groups (labels as printed, 'A & B' for intersections)")
    s = pa.add_argument_group("statistics")
    s.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdicts")
    s.add_argument("--null", choices=("pooled", "uniform"), default="pooled",
                   help="null model of the OFI test: 'pooled' = both groups drawn from the pair's pooled "
                        "confusion matrix (multinomial, exact); 'uniform' = every confusion matrix of "
                        "M(n) equally likely (the OFI paper's, very permissive)")
    s.add_argument("--method", choices=("exact", "monte_carlo"), default="exact",
                   help="exact convolution of the null PMFs, or Monte Carlo draws")
    s.add_argument("--correction", choices=("holm", "bonferroni", "none"), default="holm",
                   help="multiple-testing correction over the k(k-1)/2 pairs")
    s.add_argument("--confidence", type=float, default=0.95, help="coverage of the bootstrap intervals")
    s.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap replicates of each pairwise OFI (0 = skip)")
    s.add_argument("--seed", type=int, default=0, help="PRNG seed (bootstrap, Monte Carlo, scans)")
    s.add_argument("--di-variant", choices=("paper", "pp_over_p"), default="paper",
                   help="DI as the paper's eq. 1 (P^/n ratio) or the authors' 2024 code (P^/P ratio)")
    s.add_argument("--scan", action="store_true",
                   help="also report the worst (most disadvantaged) subgroup by FPR-/TPR-Scan over the "
                        "--attr columns, with a randomization p-value (slow: a minute or more)")
    s.add_argument("--attr", metavar="COL", nargs="+",
                   help="attribute columns for --scan (default: the --group columns; for COMPAS: race, "
                        "sex, age_cat, c_charge_degree)")
    s.add_argument("--replicates", type=int, default=100,
                   help="randomization replicates of each scan p-value (with --scan)")
    o = pa.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", default="ofijax-report",
                   help="directory for report.json, report.md and the heatmap PNGs")
    o.add_argument("--no-plots", action="store_true", help="do not write heatmap PNGs")
    o.add_argument("--quiet", action="store_true", help="print only the verdicts")
    _sources.add_options(pa)

    # scan -------------------------------------------------------------------------------------
    ps = sub.add_parser(
        "scan", formatter_class=_Formatter,
        help="worst subgroup by FPR-/TPR-/IJDI-Scan with a randomization p-value",
        description=(
            "Search subgroups (conjunctions of attribute values) for the one whose false-positive\n"
            "rate (FPR-Scan, --side negative) or true-positive rate (TPR-Scan, --side positive) is\n"
            "raised most significantly; with --lam > 0 and --prob, IJDI-Scan allows the raise that\n"
            "the true risk justifies. Without --data: the embedded COMPAS data."
        ),
    )
    _data_options(
        ps, group_help=None, compas=("ijdi", "violent", "general"), weights=False,
        pred_default="pred_not_high_risk (ijdi file: decile <= 5) or pred_low_risk",
        compas_help="embedded COMPAS file without --data: 'ijdi' (the IJDI-Scan authors' 7,214 rows; "
                    "prediction = decile <= 5, i.e. not high risk at theta = 0.5, as that paper), "
                    "'violent' or 'general'",
    )
    ps.add_argument("--attr", metavar="COL", nargs="+",
                    help="attribute columns to scan over (categorical). Default for COMPAS: the IJDI "
                         "paper's Sex, Race, Prior Offenses, Under 25, ChargeDegree (ijdi file) or "
                         "race, sex, age_cat, c_charge_degree (other files)")
    ps.add_argument("--prob", metavar="COL",
                    help="column of estimated P(label = 1 | x) (label as given, 1 = beneficial unless "
                         "--harmful-label) for IJDI-Scan; without it, --lam > 0 estimates it by the "
                         "in-sample logistic regression of the IJDI paper")
    ps.add_argument("--lam", type=float, default=0.0,
                    help="IJDI's lambda: the FPR/TPR raise allowed per unit of raised true risk "
                         "(0 = FPR-/TPR-Scan)")
    ps.add_argument("--side", choices=("negative", "positive", "both"), default="both",
                    help="negative = rows with label 0 (FPR), positive = rows with label 1 (TPR)")
    ps.add_argument("--replicates", type=int, default=200, help="randomization replicates of the p-value")
    ps.add_argument("--seed", type=int, default=0, help="PRNG seed")
    ps.add_argument("--out", metavar="DIR", help="optional directory for scan.json")
    _sources.add_options(ps)

    # simulate ---------------------------------------------------------------------------------
    pm = sub.add_parser(
        "simulate", formatter_class=_Formatter,
        help="Monte Carlo of B and OFI under a null model for given group sizes",
        description=(
            "Draw confusion matrices under a null model and summarise B = (FP - FN)/n for each group\n"
            "size and OFI = B_i - B_j for two sizes, next to the exact values. Nulls: 'uniform' (every\n"
            "matrix of M(n) equally likely, the OFI paper's), 'multinomial' (cells drawn with the\n"
            "probabilities of --cm) or 'subsample' (rows drawn without replacement from --cm)."
        ),
    )
    pm.add_argument("--n", type=int, nargs="+", required=True, metavar="N",
                    help="group size(s): one size for B, two sizes (n_i n_j) for OFI as well")
    pm.add_argument("--null", choices=("uniform", "multinomial", "subsample"), default="uniform",
                    help="null model: uniform over M(n); Multinomial(n, --cm / sum); or n rows drawn "
                         "without replacement from the rows counted by --cm")
    pm.add_argument("--cm", type=float, nargs=4, metavar=("TP", "FN", "FP", "TN"),
                    help="reference confusion matrix (counts; probabilities for multinomial) of "
                         "--null multinomial / subsample")
    pm.add_argument("--samples", type=int, default=100_000, help="Monte Carlo draws")
    pm.add_argument("--seed", type=int, default=0, help="PRNG seed")
    pm.add_argument("--observed", type=float, metavar="OFI",
                    help="an observed OFI: report its Monte Carlo and exact two-sided p-values")

    # table1 -----------------------------------------------------------------------------------
    sub.add_parser("table1", help="the OFI paper's Table 1 recomputed by ofijax",
                   description="Print the OFI paper's Table 1 (Ricci v. DeStefano scenarios).")
    return parser


# ------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------


def _source(args) -> tuple[Any, str, dict]:
    """The DataFrame to analyse, a description, and the COMPAS defaults (if embedded)."""
    if args.data:
        return load_table(args.data), repr(args.data), {}
    from ofijax.datasets import load_compas

    if args.compas == "ijdi":
        df = load_compas("ijdi")
        df["pred_not_high_risk"] = (df["risk_decile"] <= 5).astype("int8")
        desc = "embedded COMPAS (IJDI-Scan authors' file, 7,214 rows)"
        defaults = {"label": "label_not_recid", "pred": "pred_not_high_risk", "group": ["Race"],
                    "attr": ["Sex", "Race", "Prior Offenses", "Under 25", "ChargeDegree"]}
        return df, desc, defaults
    df = load_compas(args.compas, filtered=True)
    desc = f"embedded COMPAS ({args.compas} two-year file, ProPublica filters)"
    defaults = {"label": "label_not_recid", "pred": "pred_low_risk", "group": ["race"],
                "attr": ["race", "sex", "age_cat", "c_charge_degree"]}
    return df, desc, defaults


def _require(args, defaults: dict, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(args, name) is None:
            if name in defaults:
                setattr(args, name, defaults[name])
            else:
                raise UserError(f"--{name}: required with --data (the column of {_WHAT[name]}).")


_WHAT = {"label": "true labels", "pred": "predictions", "group": "the sensitive attribute"}


def _cmd_audit(args) -> int:
    if _sources.use_stats(args):  # directories, globs, --engine stream/spark (issue 15)
        return _sources.cmd_audit(args, write_heatmaps, write_markdown)
    from ofijax.auditing._frame import _clean, audit

    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha: must lie strictly between 0 and 1; got {args.alpha}.")
    if not 0.0 < args.confidence < 1.0:
        raise UserError(f"--confidence: must lie strictly between 0 and 1; got {args.confidence}.")
    if args.bootstrap < 0 or args.bootstrap == 1:
        raise UserError(f"--bootstrap: must be 0 (skip) or at least 2; got {args.bootstrap}.")
    df, desc, defaults = _source(args)
    _require(args, defaults, ("label", "pred", "group"))
    attrs = None
    if args.scan:
        attrs = args.attr or (defaults.get("attr") if not args.data else None) or list(args.group)
    elif args.attr:
        raise UserError("--attr: only used with --scan.")
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=args.group, positive=args.positive,
        dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=attrs, source=desc,
    )
    if prep["dropped"]:
        print(f"ofijax: note: dropped {prep['dropped']} row(s) with missing values (--dropna).", file=sys.stderr)
    t0 = time.perf_counter()
    af = audit(
        prep["y"], prep["yhat"], sensitive_features=prep["sf"], sample_weight=prep["w"],
        beneficial_label=0 if args.harmful_label else 1, alpha=args.alpha, null=args.null,
        method=args.method, correction=args.correction, confidence=args.confidence,
        num_bootstrap=args.bootstrap, key=args.seed, di_variant=args.di_variant,
        scan=args.scan, scan_features=prep["frame"][attrs] if attrs else None,
        num_replicates=args.replicates,
    )
    elapsed = time.perf_counter() - t0
    from ofijax import __version__

    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": {
            "source": desc, "rows": int(len(prep["y"])), "rows_dropped": int(prep["dropped"]),
            "label": args.label, "pred": args.pred, "group": list(args.group),
            "positive": prep["positive_map"], "harmful_label": bool(args.harmful_label),
            "weight": args.weight, "groups_selected": args.groups,
        },
        "seed": args.seed,
        **af.to_dict(),
    }
    os.makedirs(args.out, exist_ok=True)
    written = []
    with open(os.path.join(args.out, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(_clean(report), fh, indent=2, allow_nan=False)
    written.append("report.json")
    images, plot_note = ([], None) if args.no_plots else write_heatmaps(af, args.out)
    written += images
    write_markdown(af, report, os.path.join(args.out, "report.md"), images, plot_note)
    written.append("report.md")

    if args.quiet:
        for r in af.pairs["reading"]:
            print(r)
    else:
        print(f"ofijax audit of {desc}: {len(prep['y'])} rows, groups by {', '.join(args.group)}, "
              f"label {args.label!r}, prediction {args.pred!r}")
        print()
        print(af.summary())
    if plot_note:
        print(f"ofijax: note: {plot_note}", file=sys.stderr)
    print(f"\nWrote {', '.join(written)} to {args.out}/ ({elapsed:.1f} s).")
    return 0


def _cmd_scan(args) -> int:
    if _sources.use_stats(args):  # directories, globs, --engine stream/spark (issue 15)
        return _sources.cmd_scan(args)
    if args.lam < 0:
        raise UserError(f"--lam: must be ≥ 0; got {args.lam}.")
    if args.replicates < 0:
        raise UserError(f"--replicates: must be ≥ 0; got {args.replicates}.")
    df, desc, defaults = _source(args)
    _require(args, defaults, ("label", "pred"))
    if args.attr is None:
        if "attr" not in defaults:
            raise UserError("--attr: required with --data (the columns to scan over).")
        args.attr = defaults["attr"]
    extra = list(args.attr) + ([args.prob] if args.prob else [])
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=[], positive=args.positive,
        dropna=args.dropna, weight=None, extra=extra, source=desc, min_groups=0,
    )
    import jax

    from ofijax.auditing._frame import _clean, _run_scans

    frame = prep["frame"]
    beneficial = 0 if args.harmful_label else 1
    prob = None
    notes = []
    if args.prob:
        prob = frame[args.prob].to_numpy(dtype=float)
    elif args.lam > 0:
        from ofijax.scan import estimate_true_probabilities

        prob = estimate_true_probabilities(frame[list(args.attr)], prep["y"])
        notes.append("P(label | attributes) estimated in sample by logistic regression on the --attr "
                     "columns (as the IJDI paper); pass --prob to use your own estimate.")
    print(f"ofijax scan of {desc}: {len(prep['y'])} rows, attributes {', '.join(args.attr)}; "
          f"{args.replicates} randomization replicates per scan", flush=True)
    res = _run_scans(
        jax.random.key(args.seed), prep["y"], prep["yhat"], frame[list(args.attr)], beneficial,
        prob, args.lam, args.replicates, side=args.side, rate_scans=args.lam == 0 or prob is None,
    )
    for name, r in res.items():
        print(f"{name}: {r['description']}")
    for n in notes:
        print(f"Note: {n}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "scan.json"), "w", encoding="utf-8") as fh:
            json.dump(_clean({"data": desc, "attributes": list(args.attr), "lam": args.lam,
                              "seed": args.seed, "results": res, "notes": notes}), fh, indent=2,
                      allow_nan=False)
        print(f"Wrote scan.json to {args.out}/")
    return 0


def _cmd_simulate(args) -> int:
    if any(n < 1 for n in args.n):
        raise UserError(f"--n: group sizes must be ≥ 1; got {args.n}.")
    if len(args.n) > 2:
        raise UserError(f"--n: give one size (B) or two sizes (OFI); got {len(args.n)}.")
    if args.samples < 1:
        raise UserError(f"--samples: must be ≥ 1; got {args.samples}.")
    if args.null != "uniform":
        if args.cm is None:
            raise UserError(f"--cm: --null {args.null} needs a reference confusion matrix TP FN FP TN.")
        if min(args.cm) < 0 or sum(args.cm) <= 0:
            raise UserError(f"--cm: needs non-negative values with a positive sum; got {args.cm}.")
        if args.null == "subsample":
            if any(x != round(x) for x in args.cm):
                raise UserError(f"--cm: --null subsample needs whole counts; got {args.cm}.")
            if max(args.n) > sum(args.cm):
                raise UserError(f"--n: cannot draw {max(args.n)} rows without replacement from {int(sum(args.cm))}.")
    elif args.cm is not None:
        raise UserError("--cm: only used with --null multinomial or subsample.")
    print(simulate_report(args.n, null=args.null, cm=args.cm, samples=args.samples, seed=args.seed,
                          observed=args.observed))
    return 0


def _cmd_table1(args) -> int:
    from ofijax.cli._table1 import table1_report

    print(table1_report())
    return 0


_COMMANDS = {"audit": _cmd_audit, "scan": _cmd_scan, "simulate": _cmd_simulate, "table1": _cmd_table1}


def main(argv: list[str] | None = None) -> int:
    """Run the ``ofijax`` command line; returns the exit status.

    With no arguments it prints the OFI paper's Table 1 and a pointer to the commands.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        from ofijax.cli._table1 import table1_report

        print(table1_report())
        print("\nCommands: ofijax audit | scan | simulate | table1   (ofijax --help for details)")
        return 0
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    args.argv = argv
    try:
        return _COMMANDS[args.command](args)
    except (UserError, ValueError, FileNotFoundError) as exc:
        msg = str(exc).strip().replace("\n", " ")
        print(f"ofijax {args.command}: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:
        print(f"ofijax {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("ofijax: interrupted", file=sys.stderr)
        return 130
