"""The ``ofijax`` command line: ``audit``, ``scan``, ``simulate`` and ``table1``.

``ofijax audit`` with no options audits the embedded COMPAS data as the OFI paper did (ProPublica's
violent two-year file, filtered to 4,020 rows; label flipped to "not a violent recidivist",
prediction = low risk, group = race) and writes ``report.json``, ``report.md`` and heatmaps to
``ofijax-report/``. Errors in the user's input (a missing file, an unknown column, a non-binary
label, missing values, an empty group, a bad option) print one line on stderr and exit with status
2, writing nothing; an existing report folder is replaced only with ``--force``, and reports are
written atomically (a temporary folder renamed into place).

This module owns :func:`main`: parsing (``_parser``), dispatch to the commands (``_audit_cmd``,
``_scan_cmd``, ``simulate`` and ``table1`` here) and the one-line error rule with its exit statuses
(2 for the user's input, 1 for a missing optional package or an OS error).
"""

from __future__ import annotations

import os
import sys

from ofijax.cli._audit_cmd import audit_header, cmd_audit
from ofijax.cli._output import CLIError
from ofijax.cli._parser import METHODS, NA_RULE, build_parser
from ofijax.cli._prepare import check_draws, load_table, prepare
from ofijax.cli._scan_cmd import cmd_scan

__all__ = ["main", "build_parser", "load_table", "prepare", "METHODS", "NA_RULE", "check_draws",
           "audit_header"]

EXIT_USAGE = 2  # the exit status of an error in the user's input (argparse's own)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C

UserError = CLIError  # an error in the user's input: reported in one line, exit status 2


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
    if args.bins < 1:
        raise UserError(f"--bins: must be ≥ 1; got {args.bins}.")
    from ofijax.cli._output import check_out_dir
    from ofijax.cli._simulate import format_report, simulate_run, write_results

    if args.out:
        check_out_dir(args.out, args.force)
    res = simulate_run(args.n, null=args.null, cm=args.cm, num_samples=args.samples, seed=args.seed,
                       observed=args.observed, bins=args.bins, quantiles=args.quantiles)
    text = format_report(res)
    if args.out:
        names = write_results(res, args.out, args.force)
        text += f"\nwrote {', '.join(names)} to {args.out}"
    print(text)
    return 0


def _cmd_table1(args) -> int:
    from ofijax.cli._table1 import table1_report

    print(table1_report())
    return 0


_COMMANDS = {"audit": cmd_audit, "scan": cmd_scan, "simulate": _cmd_simulate, "table1": _cmd_table1}


def main(argv: list[str] | None = None) -> int:
    """Run the ``ofijax`` command line; returns the exit status.

    With no arguments it prints the help. Every error in the user's input is one line on stderr
    and exit status 2, with nothing written.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except UserError as exc:
        cmd = argv[0] if argv[0] in _COMMANDS else None
        msg = str(exc).strip().replace("\n", " ")
        if msg.startswith("argument "):  # argparse's "argument --x: --x: ..." → "--x: ..."
            opt, _, rest = msg[len("argument "):].partition(": ")
            first = opt.split("/")[0]
            msg = rest if rest.startswith(first) else f"{first}: {rest}"
        print(f"ofijax{' ' + cmd if cmd else ''}: error: {msg} (see ofijax {cmd + ' ' if cmd else ''}--help)",
              file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 0
    args.argv = argv
    try:
        rc = _COMMANDS[args.command](args)
        for note in getattr(args, "deprecated", None) or []:  # after the work: errors stay one line
            print(f"ofijax: note: {note}", file=sys.stderr)
        return rc
    except (UserError, ValueError, TypeError, FileNotFoundError) as exc:
        msg = str(exc).strip().replace("\n", " ")
        print(f"ofijax {args.command}: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:
        print(f"ofijax {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader closed stdout (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        return 1
    except OSError as exc:
        print(f"ofijax {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print("ofijax: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
