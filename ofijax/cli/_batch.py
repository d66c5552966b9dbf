"""``ofijax audit`` over many candidates: several ``--pred`` columns, or ``--score`` with ``--thresholds``.

``ofijax audit --pred COL [COL ...]`` audits several prediction columns at once and
``ofijax audit --score COL --thresholds START:STOP:STEP`` a grid of decision thresholds
(prediction 1 = score ≥ threshold), both through :func:`ofijax.auditing.audit_batch`. The report
directory gets ``candidates.csv`` (one row per candidate, most severe first), ``pairs.csv``,
``by_group.csv``, ``batch.json``, ``frontier.png`` and ``report.md`` with the frontier, the
candidates meeting the default constraints, and the selection caveat.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any

from ofijax.cli._output import CLIError, check_out_dir, report_dir
from ofijax.cli._prepare import require

UserError = CLIError  # an error in the user's input: reported in one line, exit status 2

__all__ = ["add_batch_options", "dispatch_batch", "cmd_audit_batch", "parse_thresholds"]

CANDIDATES_SHOWN = 15  # most severe candidates printed (all are in candidates.csv)
_MAX_THRESHOLDS = 100_000  # most thresholds of one grid: each is a candidate audit; a STEP typo is refused, not run


def add_batch_options(pa) -> None:
    """Add the batch options to the ``audit`` parser and let ``--pred`` take several columns."""
    pred = pa._option_string_actions["--pred"]
    pred.nargs = "+"
    pred.metavar = "COL"
    pred.help = (pred.help or "") + ". Several columns audit several candidates at once (batch audit)"
    b = pa.add_argument_group("batch audit (several candidates at once)")
    b.add_argument("--score", metavar="COL",
                   help="column of scores: audit the decision rules 'prediction = 1 if score >= t' for "
                        "every t of --thresholds (1 = beneficial; with --harmful-label 1 = harmful)")
    b.add_argument("--thresholds", metavar="START:STOP:STEP",
                   help="threshold grid for --score: START:STOP:STEP (STOP included when on the grid) "
                        "or a comma-separated list")
    b.add_argument("--across", choices=("holm", "bh", "none"), default="holm",
                   help="correction over all candidates x pairs: Holm (family-wise) or "
                        "Benjamini-Hochberg (false-discovery rate)")
    b.add_argument("--utility", default="accuracy",
                   choices=("accuracy", "balanced_accuracy", "true_positive_rate",
                            "positive_predictive_value", "selection_rate"),
                   help="utility axis of the fairness-accuracy frontier")


def dispatch_batch(args, *, source, prepare) -> int | None:
    """Run a batch audit when several ``--pred`` columns or ``--score`` were given; else normalise
    ``args.pred`` to one column and return ``None`` (the one-model audit goes on).

    ``source(args)`` → (DataFrame, description, COMPAS defaults) and ``prepare`` (column checks,
    :func:`ofijax.cli.prepare`) are the audit command's own, passed in so that both commands read
    data the same way (and this module does not import the command module back).
    """
    preds = args.pred
    if getattr(args, "score", None) is not None or (isinstance(preds, list) and len(preds) > 1):
        return cmd_audit_batch(args, source=source, prepare=prepare)
    if getattr(args, "thresholds", None) is not None:
        raise UserError("--thresholds: only used with --score COL.")
    if isinstance(preds, list):
        args.pred = preds[0]
    return None


def parse_thresholds(text: str):
    """``START:STOP:STEP`` (STOP included when on the grid) or ``a,b,c`` → sorted float64 array."""
    import numpy as np

    t = str(text).strip()
    try:
        if ":" in t:
            parts = t.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, step = (float(x) for x in parts)
            if not all(map(math.isfinite, (start, stop, step))) or step <= 0 or stop < start:
                raise UserError(
                    f"--thresholds: needs finite START <= STOP and STEP > 0, e.g. 0.1:0.9:0.05; got {text!r}."
                )
            count = int(math.floor((stop - start) / step + 1e-9)) + 1
            if count > _MAX_THRESHOLDS:
                raise UserError(f"--thresholds: {count} thresholds exceed {_MAX_THRESHOLDS}; use a larger STEP.")
            return np.round(start + step * np.arange(count), 12)
        vals = np.array([float(x) for x in t.split(",") if x.strip()], dtype=np.float64)
    except UserError:
        raise
    except ValueError:
        raise UserError(f"--thresholds: expected START:STOP:STEP or a comma-separated list; got {text!r}.") from None
    if vals.size == 0 or not np.all(np.isfinite(vals)):
        raise UserError(f"--thresholds: expected finite numbers; got {text!r}.")
    if vals.size > _MAX_THRESHOLDS:
        raise UserError(f"--thresholds: {vals.size} thresholds exceed {_MAX_THRESHOLDS}.")
    return np.unique(vals)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{x:.4g}"
    return str(x)


def _md_table(df) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def cmd_audit_batch(args, *, source, prepare) -> int:
    """The batch branch of ``ofijax audit`` (``source``, ``prepare``: see :func:`dispatch_batch`)."""
    import numpy as np
    import pandas as pd

    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha: must lie strictly between 0 and 1; got {args.alpha}.")
    if args.scan or args.attr:
        raise UserError("--scan: not available in a batch audit; scan the chosen candidate with `ofijax scan`.")
    df, desc, defaults = source(args)
    if args.score is not None:
        if args.pred is not None:
            raise UserError("--pred: pass either prediction columns (--pred) or --score with --thresholds, not both.")
        if args.thresholds is None:
            raise UserError("--thresholds: --score needs a threshold grid, e.g. --thresholds 0.1:0.9:0.05.")
        th = parse_thresholds(args.thresholds)
        require(args, defaults, ("label", "group"))
        # the label column stands in for the prediction column that a score grid does not have
        prep = prepare(
            df, label=args.label, pred=args.label, groups=args.group, positive=args.positive,
            dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=[args.score], source=desc,
        )
        score = prep["frame"][args.score]
        if not pd.api.types.is_numeric_dtype(score) or pd.api.types.is_bool_dtype(score):
            raise UserError(f"--score: column {args.score!r} must be numeric; got dtype {score.dtype}.")
        inputs = {"scores": score.to_numpy(dtype=np.float64), "thresholds": th}
        what = f"score {args.score!r} at {th.size} thresholds ({_fmt(float(th[0]))} to {_fmt(float(th[-1]))})"
        cand_desc = {"score": args.score, "thresholds": th.tolist()}
    else:
        if args.thresholds is not None:
            raise UserError("--thresholds: only used with --score COL.")
        cols = list(args.pred)
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise UserError(f"--pred: column {dup[0]!r} is given twice; name each candidate once.")
        require(args, defaults, ("label", "group"))
        prep = prepare(
            df, label=args.label, pred=cols[0], groups=args.group, positive=args.positive,
            dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=cols[1:], source=desc,
        )
        preds = {cols[0]: prep["yhat"]}
        for c in cols[1:]:  # the same checks and 0/1 mapping as the first column
            other = prepare(
                df, label=args.label, pred=c, groups=args.group, positive=args.positive,
                dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=cols, source=desc,
            )
            preds[c] = other["yhat"]
            prep["positive_map"].update(other["positive_map"])
        inputs = {"y_pred": preds}
        what = f"{len(cols)} prediction columns"
        cand_desc = {"pred": cols}
    check_out_dir(args.out, args.force)  # inputs first, then the output, then the work
    if prep["dropped"]:
        print(f"ofijax: note: dropped {prep['dropped']} row(s) with missing values (--dropna).", file=sys.stderr)

    from ofijax.auditing import audit_batch, pareto_frontier, select_candidates

    t0 = time.perf_counter()
    try:
        ba = audit_batch(
            prep["y"], sensitive_features=prep["sf"], sample_weight=prep["w"],
            beneficial_label=0 if args.harmful_label else 1, alpha=args.alpha, null=args.null,
            method=args.method, correction=args.correction, across=args.across,
            **({"key": args.seed, "num_samples": args.samples}
               if args.method == "monte_carlo" else {}),
            di_variant=args.di_variant, utility=args.utility, **inputs,
        )
    except (ValueError, TypeError) as exc:
        from ofijax.cli._output import as_option

        raise as_option(exc, {"scores": "--score", "thresholds": "--thresholds", "y_pred": "--pred",
                              "across": "--across", "utility": "--utility",
                              "num_samples": "--samples"}) from None
    elapsed = time.perf_counter() - t0
    sev = ba.by_severity()
    fr_ofi = pareto_frontier(ba, fairness="max_abs_ofi")
    fr_di = pareto_frontier(ba, fairness="di_ratio")
    feasible = select_candidates(ba)
    from ofijax import __version__

    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": {
            "source": desc, "rows": int(len(prep["y"])), "rows_dropped": int(prep["dropped"]),
            "label": args.label, "group": list(args.group), "positive": prep["positive_map"],
            "harmful_label": bool(args.harmful_label), "weight": args.weight, "groups_selected": args.groups,
            **cand_desc,
        },
        "groups": [str(g) for g in ba.groups],
        "settings": ba.settings,
        "notes": list(ba.notes),
        "candidates": _records(sev),
        "frontier_max_abs_ofi": [_py(x) for x in fr_ofi.index],
        "frontier_di_ratio": [_py(x) for x in fr_di.index],
        "feasible": [_py(x) for x in feasible.index],
    }
    from ofijax.cli._output import add_report_extras

    report = add_report_extras(report, args, rows_read=len(df), rows_used=len(prep["y"]),
                               inputs=getattr(args, "input_hashes", None))

    out = args.out
    with report_dir(out, args.force) as tmp:  # complete, then renamed into place (--force replaces)
        written = []
        sev.reset_index().to_csv(os.path.join(tmp, "candidates.csv"), index=False)
        ba.pairs.to_csv(os.path.join(tmp, "pairs.csv"), index=False)
        ba.by_group.to_csv(os.path.join(tmp, "by_group.csv"), index=False)
        with open(os.path.join(tmp, "batch.json"), "w", encoding="utf-8") as fh:
            json.dump(_clean(report), fh, indent=2, allow_nan=False)
        written += ["candidates.csv", "pairs.csv", "by_group.csv", "batch.json"]
        images, plot_note = ([], None) if args.no_plots else _plot(ba, tmp)
        written += images
        _markdown(ba, report, sev, fr_ofi, fr_di, feasible, os.path.join(tmp, "report.md"), images, plot_note)
        written.append("report.md")
        _html(ba, report, sev, fr_ofi, fr_di, feasible, os.path.join(tmp, "report.html"),
              [os.path.join(tmp, im) for im in images], plot_note)
        written.append("report.html")

    n_c = len(ba.candidates)
    print(f"ofijax batch audit of {desc}: {len(prep['y'])} rows, groups by {', '.join(args.group)}, "
          f"label {args.label!r}, {what}")
    print(f"{n_c} candidates x {ba.settings['num_pairs']} pairs, {args.method} p-values ({args.null} null), "
          f"{args.correction} within each candidate, {args.across} across all; alpha = {args.alpha}")
    if not args.quiet:
        cols = [c for c in ("threshold",) if c in sev.columns] + [
            "utility", "max_abs_ofi", "worst_pair", "di_ratio", "n_significant", "n_significant_across", "verdict"]
        shown = sev[cols].head(CANDIDATES_SHOWN).copy()
        for c in ("utility", "max_abs_ofi", "di_ratio"):
            shown[c] = shown[c].map(_fmt)
        print("\nMost severe candidates first:")
        print(shown.to_string())
        print(f"\nPareto frontier ({args.utility} vs max |OFI|): {', '.join(_fmt(_py(x)) for x in fr_ofi.index)}")
    if len(feasible):
        best = feasible.index[0]
        print(f"{len(feasible)} of {n_c} candidates have no significant algorithmic bias and every DI in "
              f"[0.8, 1.25]; the best {args.utility}: {_fmt(_py(best))} "
              f"({feasible['utility'].iloc[0]:.4f}).")
    else:
        print(f"None of the {n_c} candidates has both no significant algorithmic bias and every DI in [0.8, 1.25].")
    print("Note: choosing among candidates is itself a selection; its numbers are optimistic. "
          "Confirm the choice on held-out data with a one-model `ofijax audit`.")
    if plot_note:
        print(f"ofijax: note: {plot_note}", file=sys.stderr)
    print(f"\nWrote {', '.join(written)} to {out}/ ({elapsed:.1f} s).")
    return 0


def _py(x: Any) -> Any:
    if hasattr(x, "item"):
        x = x.item()
    if isinstance(x, tuple):
        return " & ".join(map(str, x))
    return x


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(x) for k, x in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(x) for x in obj]
    obj = _py(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _records(df) -> list[dict]:
    d = df.reset_index()
    return [{k: _py(v) for k, v in r.items()} for r in d.to_dict("records")]


def _plot(ba, out: str) -> tuple[list[str], str | None]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed: frontier.png skipped (pip install matplotlib)."
    from ofijax.auditing import plot_frontier
    from ofijax.cli._output import PLOT_DPI

    fig = plot_frontier(ba)
    fig.savefig(os.path.join(out, "frontier.png"), dpi=PLOT_DPI)
    plt.close(fig)
    return ["frontier.png"], None


def _markdown(ba, report, sev, fr_ofi, fr_di, feasible, path, images, plot_note) -> None:
    s = ba.settings
    d = report["data"]
    cols = [c for c in ("threshold",) if c in sev.columns] + [
        "utility", "accuracy", "selection_rate", "max_abs_ofi", "worst_pair", "worst_ofi", "min_p_adjusted",
        "di_ratio", "n_significant", "n_significant_across", "n_systemic", "verdict"]

    def table(df, limit=50):
        t = df[cols].head(limit).reset_index()
        for c in t.columns:
            t[c] = t[c].map(lambda x: _fmt(_py(x)))
        return _md_table(t)

    lines = [
        "# ofijax batch audit report", "",
        f"- data: {d['source']}, {d['rows']} rows; label `{d['label']}`, groups by "
        + ", ".join(f"`{g}`" for g in d["group"]) + (" (1 was harmful: flipped)" if d["harmful_label"] else ""),
        f"- candidates: {s['num_candidates']} ("
        + (f"score `{d['score']}` thresholded" if "score" in d else "prediction columns") + f"), "
        f"{s['num_pairs']} pairs of groups each",
        f"- OFI test: exact, {s['null']} null; {s['correction']} within each candidate (as a one-model "
        f"audit); {s['across']} across all {s['num_candidates'] * s['num_pairs']} tests; alpha = {s['alpha']}",
        f"- utility: {s['utility']}; ofijax {report['ofijax_version']}; command: `{report['command']}`",
        "",
        "**Selection caveat.** Picking the best of many candidates is itself a selection among many noisy "
        "comparisons: some candidate looks clean, and some looks accurate, by chance. `n_significant` counts "
        "pairs significant within the candidate (a one-model audit's reading); `n_significant_across` "
        "counts those still significant after the correction over the whole batch. The chosen "
        "candidate's numbers are optimistic; confirm it on held-out data with a one-model `ofijax audit`.",
        "",
        "How to read: OFI(i, j) = B_i − B_j with B = (FP − FN)/n (unjust benefit per person); "
        "`max_abs_ofi` is the largest |OFI| over pairs, `worst_pair` where it occurs; `di_ratio` = "
        "min/max selection rate over groups (four-fifths rule: ≥ 0.8); verdicts as `ofijax audit`: "
        "significant OFI = algorithmic bias, else DI failing four-fifths = selection-rate disparity (no significant algorithmic bias at this sample size).",
        "", "## Candidates, most severe first", "", table(sev),
        "", f"## Pareto frontier: {s['utility']} vs max |OFI|", "", table(fr_ofi.iloc[::-1]),
        "", f"## Pareto frontier: {s['utility']} vs DI ratio", "", table(fr_di.iloc[::-1]),
        "", "## Candidates with no significant algorithmic bias and every DI in [0.8, 1.25]", "",
        table(feasible) if len(feasible) else "None.",
    ]
    notes = list(ba.notes) + ([plot_note] if plot_note else [])
    lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    if images:
        lines += ["", "## Frontier", ""] + [f"![{im}]({im})" for im in images]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _html(ba, report, sev, fr_ofi, fr_di, feasible, path, image_paths, plot_note) -> None:
    """report.html of a batch audit: the summary, the candidates, the frontiers, the feasible
    candidates, the frontier figure (a data URI), provenance and methods (self-contained)."""
    from ofijax.auditing.reporting import render_html

    s = ba.settings
    cols = [c for c in ("threshold",) if c in sev.columns] + [
        "utility", "accuracy", "selection_rate", "max_abs_ofi", "worst_pair", "worst_ofi", "min_p_adjusted",
        "di_ratio", "n_significant", "n_significant_across", "verdict"]

    def view(df):
        t = df[[c for c in cols if c in df.columns]].reset_index()
        if "threshold" in t.columns:  # the candidate is its threshold
            t = t.drop(columns=[c for c in t.columns if c == "candidate"])
            t["threshold"] = t["threshold"].map(lambda x: _fmt(_py(x)))
        if s["utility"] == "accuracy" and "accuracy" in t.columns:
            t = t.drop(columns=["utility"])
        for c in t.columns:
            if t[c].dtype == object:
                t[c] = t[c].map(lambda x: str(_py(x)))
        return t

    page = dict(_clean(report))
    page["notes"] = list(ba.notes) + ([plot_note] if plot_note else []) + [
        "Selection caveat: picking the best of many candidates is itself a selection among many noisy "
        "comparisons; n_significant counts pairs significant within the candidate, n_significant_across "
        "those still significant after the correction over the whole batch. Confirm the chosen candidate "
        "on held-out data with a one-model `ofijax audit`."]
    page["data"] = {**page["data"], "pred": ", ".join(page["data"].get("pred", []))
                    if "pred" in page["data"] else f"score {page['data'].get('score')} thresholded"}
    sections = [
        ("Candidates, most severe first", view(sev),
         f"{s['num_candidates']} candidates x {s['num_pairs']} pairs; {s['correction']} within each "
         f"candidate, {s['across']} across all; alpha = {s['alpha']}."),
        (f"Pareto frontier: {s['utility']} vs max |OFI|", view(fr_ofi.iloc[::-1])),
        (f"Pareto frontier: {s['utility']} vs DI ratio", view(fr_di.iloc[::-1])),
        ("Candidates with no significant algorithmic bias and every DI in [0.8, 1.25]",
         view(feasible) if len(feasible) else None, None if len(feasible) else "None."),
    ]
    figures = []
    for p in image_paths:
        with open(p, "rb") as fh:
            figures.append(("Frontier: utility against max |OFI| and the DI ratio", fh.read()))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_html(page, title="ofijax batch audit report", extra_sections=tuple(sections),
                             figures=tuple(figures)))
