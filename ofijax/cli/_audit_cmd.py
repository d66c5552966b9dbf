"""The ``ofijax audit`` command in the pandas engine, and the report files every engine writes.

This module owns :func:`cmd_audit` (option checks, the data, :func:`ofijax.audit`, the report
dictionary; the batch form goes to ``_batch``, the streaming and Spark engines to ``_sources``),
the label-free audit (``--pred`` and ``--group`` without ``--label``: the impact-ratio tables and
DI only), the impact-ratio table of the rows read, and :func:`finish_audit`, which writes
report.json, report.md, report.html and the heatmaps atomically for every engine and prints the
summary.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ofijax.cli import _sources
from ofijax.cli._output import CLIError, as_option, data_section, option_name, report_dir
from ofijax.cli._prepare import (
    check_column,
    check_draws,
    file_lines,
    label_columns,
    prepare,
    read_source,
    require,
    to_binary,
)

__all__ = ["cmd_audit", "finish_audit", "audit_header", "impact_table", "label_free_audit", "binned_columns"]

UserError = CLIError  # an error in the user's input: reported in one line, exit status 2


def audit_header(report: dict) -> list[str]:
    """The lines that head ``report.md``: data, columns, orientation, command."""
    d = report["data"]
    rows = f"{d['source']}, {d['rows']} rows" + (
        f" ({d['rows_dropped']} dropped: missing values)" if d["rows_dropped"] else "")
    orient = ("label/prediction 1 was the HARMFUL outcome (--harmful-label): both flipped so that the benefit "
              "is prediction 0" if d["harmful_label"] else "label/prediction 1 = the beneficial outcome")
    pred = f"prediction `{d['pred']}`" + (f" (score >= {d['threshold']:g})" if d.get("threshold") is not None else "")
    return [
        f"data: {rows}",
        f"label `{d['label']}`, {pred}, groups by {', '.join(f'`{g}`' for g in d['group'])}; {orient}",
        f"ofijax {report['ofijax_version']}; seed {report['seed']}; command: `{report['command']}`",
    ]


def cmd_audit(args) -> int:
    from ofijax import __version__
    from ofijax.auditing import audit
    from ofijax.cli._batch import dispatch_batch
    from ofijax.cli._output import check_out_dir, start_hashing

    hashes = start_hashing(args.data)  # SHA-256 of the inputs, overlapping the audit (provenance)
    args.input_hashes = hashes
    if (rc := dispatch_batch(args, source=read_source, prepare=prepare)) is not None:  # batch audit
        return rc
    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha: must lie strictly between 0 and 1; got {args.alpha}.")
    if not 0.0 < args.confidence < 1.0:
        raise UserError(f"--confidence: must lie strictly between 0 and 1; got {args.confidence}.")
    check_draws(args, "samples", "--samples", bootstrap=True)
    check_draws(args, "scan_samples", "--scan-samples")
    if args.lower_is_better and args.scoring_rate is None:
        raise UserError("--lower-is-better: only used with --scoring-rate COL.")
    if not args.scan:  # the scan options, checked once for every engine
        if args.attr:
            raise UserError("--attr: only used with --scan.")
        if args.top != 1:
            raise UserError("--top: only used with --scan.")
    if (args.label is None or args.scoring_rate is not None) and args.data and getattr(args, "engine", "auto") == "auto" \
            and os.path.isfile(args.data):
        args.engine = "pandas"  # label-free tables and the exact median of scores read the rows
    if _sources.use_stats(args):  # directories, globs, single files needing only counts, stream/spark
        try:
            return _sources.cmd_audit(args, finish_audit)
        except _sources.RowsNeeded:  # --engine auto on one file: the rows word the input error
            args.engine = "pandas"
    attrs = None
    df, desc, defaults = read_source(args, label_columns(args, "group", *(("attr",) if args.scan else ())))
    if args.scoring_rate is not None or (args.label is None and "label" not in defaults):
        require(args, defaults, ("group",) if args.scoring_rate is not None and args.pred is None
                 else ("pred", "group"))
        if args.label is None:  # label-free: impact ratios (and DI) only
            return label_free_audit(args, df, desc, hashes)
        require(args, defaults, ("label", "pred", "group"))
    else:
        require(args, defaults, ("label", "pred", "group"))
    if args.scan:
        attrs = args.attr or (defaults.get("attr") if not args.data else None) or list(args.group)
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=args.group, positive=args.positive,
        dropna=args.dropna, weight=args.weight, only_groups=args.groups, extra=attrs, source=desc,
        threshold=args.threshold, lines=file_lines(args),
    )
    scan_features = None
    if attrs:
        scan_features = binned_columns(prep["frame"][list(attrs)], args, "--attr")
    binned_columns(prep["sf"], args, "--group")  # the group columns' checks (audit repeats them), before --out
    check_out_dir(args.out, args.force)  # inputs first, then the output, then the work
    if prep["dropped"]:
        print(f"ofijax: note: dropped {prep['dropped']} row(s) with missing values (--dropna).", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        af = audit(
            args.seed, prep["y"], prep["yhat"], sensitive_features=prep["sf"], sample_weight=prep["w"],
            beneficial_label=0 if args.harmful_label else 1, alpha=args.alpha, null=args.null,
            method=args.method, correction=args.correction, confidence=args.confidence,
            num_samples=args.samples, di_variant=args.di_variant, bins=args.bins,
            max_levels=args.max_levels, scan=args.scan, scan_features=scan_features,
            scan_num_samples=args.scan_samples, scan_top_k=args.top,
        )
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"num_samples": option_name(args, "samples", "--samples"),
                               "scan_num_samples": option_name(args, "scan_samples", "--scan-samples")}
                         ) from None
    elapsed = time.perf_counter() - t0

    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": data_section(args, source=desc, rows=len(prep["y"]), dropped=prep["dropped"],
                             positive=prep["positive_map"], engine="pandas"),
        "seed": args.seed,
        **af.to_dict(),
    }
    from ofijax.cli._output import add_report_extras

    report = add_report_extras(report, args, impact=impact_table(args, df), rows_read=len(df),
                               rows_used=len(prep["y"]), inputs=hashes)
    if args.weight:
        report["impact_ratios"]["weights"] = (f"not applied: the impact ratios count people (rows); the OFI "
                                              f"audit uses --weight {args.weight}")
    return finish_audit(args, af, report, desc, len(prep["y"]), elapsed)


def impact_table(args, df):
    """The impact-ratio tables of the rows read (rows dropped for OFI included; an empty group
    value is an unknown category), by selection (--pred) or --scoring-rate."""
    import numpy as np
    import pandas as pd

    from ofijax.auditing import impact_ratios

    groups = pd.DataFrame(index=df.index)
    for g in args.group:
        check_column(df, g, "--group", "the data")
        col = df[g]
        if args.bins and pd.api.types.is_numeric_dtype(col) and col.nunique() > args.max_levels:
            known = col.notna()
            binned = binned_columns(df.loc[known, [g]], args, "--group")
            col = pd.Series(np.asarray(binned.iloc[:, 0], dtype=object), index=df.index[known]).reindex(df.index)
        groups[g] = col
    try:
        if args.scoring_rate is not None:
            check_column(df, args.scoring_rate, "--scoring-rate", "the data")
            sc = pd.to_numeric(df[args.scoring_rate], errors="coerce")
            if sc.notna().sum() == 0:
                raise UserError(f"--scoring-rate: column {args.scoring_rate!r} holds no numeric scores.")
            return impact_ratios(scores=sc, sensitive_features=groups, lower_is_better=args.lower_is_better,
                                 exclude_small=not args.keep_small, alpha=args.alpha)
        pred = df[args.pred]
        known = pred.notna()
        yhat, _ = to_binary(pred[known], "--pred", args.positive, args.threshold)
        sel = pd.Series(np.nan, index=df.index)
        sel[known] = (1 - yhat) if args.harmful_label else yhat
        return impact_ratios(sel, groups, exclude_small=not args.keep_small, alpha=args.alpha)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, UserError):
            raise
        raise as_option(exc, {"scores": "--scoring-rate", "y_pred": "--pred"}) from None


def label_free_audit(args, df, desc: str, hashes) -> int:
    """``ofijax audit`` without --label: the impact-ratio tables (and DI in them), no OFI."""
    import numpy as np

    from ofijax import __version__
    from ofijax.auditing.reporting import impact_lines, render_html, to_jsonable
    from ofijax.cli._output import add_report_extras, check_out_dir

    if args.scan:
        raise UserError("--scan: the scans need true labels; pass --label COL.")
    if len(df) == 0:
        raise UserError(f"--data: {desc} has no rows.")
    t0 = time.perf_counter()
    table = impact_table(args, df)
    check_out_dir(args.out, args.force)
    used = len(df) - int(table.attrs.get("unknown_outcome", 0))  # rows with a known prediction/score
    report = {
        "ofijax_version": __version__,
        "command": "ofijax " + " ".join(args.argv),
        "data": {**data_section(args, source=desc, rows=len(df), dropped=0, positive={}, engine="pandas")},
        "seed": args.seed,
        "notes": ["No --label: OFI (and its verdicts) needs true labels; this report gives the impact ratios "
                  "(the selection-rate ratios that DI and the four-fifths rule read) and their tests only."],
    }
    # DI between the groups of the audit (the --group columns' intersection): r_i / r_j
    last = table[table["attribute"] == table["attribute"].iloc[-1]] if len(table) else table
    rate = last["scoring_rate" if "scoring_rate" in last.columns else "selection_rate"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        di = np.where(rate[None, :] > 0, rate[:, None] / rate[None, :], np.nan)
    report["groups"] = last["category"].tolist()
    report["group_columns"] = list(args.group)
    report["pairwise"] = {"di": di.tolist()}
    report = add_report_extras(report, args, impact=table, rows_read=len(df), rows_used=used, inputs=hashes)
    elapsed = time.perf_counter() - t0
    section = report["impact_ratios"]
    with report_dir(args.out, args.force) as tmp:
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable(report), fh, indent=2, allow_nan=False)
        md = ["# ofijax audit report (impact ratios)", "", f"- data: {desc}, {len(df)} rows",
              f"- command: `{report['command']}`", "", *(f"- {n}" for n in report["notes"]), "",
              *impact_lines(section, md=True)]
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(md) + "\n")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(to_jsonable(report)))
    if not args.quiet:
        print(f"ofijax audit of {desc}: {len(df)} rows, groups by {', '.join(args.group)}; no --label: "
              "impact ratios only (OFI needs labels)")
        print()
        print("\n".join(impact_lines(section, md=False)))
    print(f"\nWrote report.json, report.md, report.html to {args.out}/ ({elapsed:.1f} s).")
    return 0


def finish_audit(args, af, report: dict, desc: str, rows: int, elapsed: float) -> int:
    """Write report.json, report.md, report.html and the heatmaps atomically into ``--out`` and print the summary
    (shared by the in-memory and the streaming/Spark audit)."""
    from ofijax.auditing import render_report, write_heatmaps
    from ofijax.auditing.reporting import impact_lines, render_html, to_jsonable

    written = ["report.json"]
    plot_note = None
    with report_dir(args.out, args.force) as tmp:
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as fh:
            json.dump(to_jsonable(report), fh, indent=2, allow_nan=False)
        images: list[str] = []
        if not args.no_plots:
            try:
                images, plot_note = write_heatmaps(af, tmp)
            except (ValueError, RuntimeError) as exc:  # matplotlib failures: name the way out
                raise UserError(f"--no-plots: drawing the heatmaps failed ({str(exc).splitlines()[0]}); "
                                "pass --no-plots to write the report without them.") from None
        written += images
        md = render_report(af, "markdown", header=audit_header(report), images=images,
                           notes=[plot_note] if plot_note else [])
        if report.get("impact_ratios"):
            md += "\n" + "\n".join(impact_lines(report["impact_ratios"], md=True)) + "\n"
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as fh:
            fh.write(md)
        written.append("report.md")
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as fh:
            fh.write(render_html(to_jsonable(report)))
        written.append("report.html")

    if args.quiet:
        for r in af.pairs["reading"]:
            print(r)
    else:
        print(f"ofijax audit of {desc}: {rows} rows, groups by {', '.join(args.group)}, "
              f"label {args.label!r}, prediction {args.pred!r}")
        print()
        print(af.summary())
    if plot_note:
        print(f"ofijax: note: {plot_note}", file=sys.stderr)
    print(f"\nWrote {', '.join(written)} to {args.out}/ ({elapsed:.1f} s).")
    return 0


def binned_columns(frame, args, option: str):
    """The attribute columns, binned as --bins/--max-levels say (refused when continuous)."""
    from ofijax.auditing import bin_features

    try:
        binned, _ = bin_features(frame, bins=args.bins, max_levels=args.max_levels)
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"sensitive_features": option}) from None
    return binned
