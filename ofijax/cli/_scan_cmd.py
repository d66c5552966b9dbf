"""The ``ofijax scan`` command in the pandas engine (FPR-/TPR-/IJDI-Scan over the rows).

This module owns :func:`cmd_scan`: its option checks, the rows (:func:`~ofijax.cli._prepare.prepare`),
the one binning rule of ``--bins``/``--max-levels`` (as the stream and Spark engines apply it to cell
statistics), the in-sample probability estimate of IJDI-Scan, and the printed and written results
(scan.json, scan.md, report.html through ``_sources.write_scan_report``, one schema for every engine).
Directories, globs and ``--engine stream|spark`` go to ``_sources.cmd_scan``.
"""

from __future__ import annotations

from ofijax.cli import _sources
from ofijax.cli._output import CLIError, as_option, option_name
from ofijax.cli._prepare import (
    check_column,
    check_draws,
    file_lines,
    label_columns,
    prepare,
    read_source,
    require,
)

__all__ = ["cmd_scan"]

UserError = CLIError  # an error in the user's input: reported in one line, exit status 2


def cmd_scan(args) -> int:
    if args.lam < 0:
        raise UserError(f"--lam: must be ≥ 0; got {args.lam}.")
    check_draws(args, "samples", "--samples")
    if _sources.use_stats(args):  # directories, globs, --engine stream/spark
        return _sources.cmd_scan(args)
    df, desc, defaults = read_source(args, label_columns(args, "attr"))
    require(args, defaults, ("label", "pred"))
    if args.attr is None:
        if "attr" not in defaults:
            raise UserError("--attr: required with --data (the columns to scan over; alias --group).")
        args.attr = defaults["attr"]
    if args.prob:
        check_column(df, args.prob, "--prob", desc)
    extra = list(args.attr) + ([args.prob] if args.prob else [])
    prep = prepare(
        df, label=args.label, pred=args.pred, groups=[], positive=args.positive,
        dropna=args.dropna, weight=None, extra=extra, source=desc, min_groups=0,
        threshold=args.threshold, lines=file_lines(args),
    )
    if args.out:
        from ofijax.cli._output import check_out_dir

        check_out_dir(args.out, args.force)  # inputs first, then the output
    import jax

    from ofijax.auditing import run_scans
    from ofijax.auditing.reporting import scan_lines

    frame = prep["frame"]
    from ofijax.auditing import bin_features

    try:  # the one binning rule (bins and their edges), as the stream and Spark engines apply it
        attrs, edges = bin_features(frame[list(args.attr)], bins=args.bins,
                                    max_levels=args.max_levels)
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"sensitive_features": "--attr"}) from None
    beneficial = 0 if args.harmful_label else 1
    prob = None
    notes = []
    if args.prob:
        prob = frame[args.prob].to_numpy(dtype=float)
    elif args.lam > 0:
        from ofijax.scan import estimate_true_probabilities

        prob = estimate_true_probabilities(attrs, prep["y"])
        notes.append("P(label | attributes) estimated in sample by logistic regression on the --attr "
                     "columns (as the IJDI paper); pass --prob to use your own estimate.")
    if not args.quiet:
        print(_sources.scan_header(args, desc, len(prep["y"]), "pandas"), flush=True)
    try:
        res = run_scans(
            jax.random.key(args.seed), prep["y"], prep["yhat"], attrs, beneficial_label=beneficial,
            probabilities=prob, lam=args.lam, num_samples=args.samples, side=args.side,
            rate_scans=args.lam == 0 or prob is None, top_k=args.top,
        )
    except (ValueError, TypeError) as exc:
        raise as_option(exc, {"data": "--attr", "p_true": "--prob", "lam": "--lam",
                               "num_samples": option_name(args, "samples", "--samples"),
                               "scan_probabilities": "--prob"}) from None
    print("\n".join(line[4:] for line in scan_lines(res)))  # "name: ..." and "  #j: ..." lines
    if not args.quiet:
        for n in notes:
            print(f"Note: {n}")
    if args.out:
        _sources.write_scan_report(args, desc=desc, rows=len(prep["y"]), res=res, notes=notes,
                                   edges=edges, engine="pandas")
        if not args.quiet:
            print(f"Wrote scan.json, scan.md, report.html to {args.out}/")
    return 0
