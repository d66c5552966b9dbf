"""The argument parser of the ``ofijax`` command and its option validators.

This module owns :func:`build_parser` (every command's options, help texts and defaults), the
argparse pieces behind it (one-line usage errors, ``--seed``/number/integer validators, deprecated
spellings that still work and leave a note, the help formatter) and the option vocabularies shown
in the help (:data:`METHODS`, :data:`NA_RULE`). It reads no data and runs nothing.
"""

from __future__ import annotations

import argparse
import math

from ofijax.cli import _sources
from ofijax.cli._output import CLIError

__all__ = ["build_parser", "METHODS", "NA_RULE", "MAX_LEVELS"]

# Defaults of the options that count draws (a randomization p-value resolves 1/(N + 1)):
AUDIT_SAMPLES = 2000  # bootstrap replicates per pair: percentile intervals want ≥ 1,000
AUDIT_SCAN_SAMPLES = 100  # randomization replicates of audit --scan: p-values down to 1/101 < 0.05/5
SCAN_SAMPLES = 200  # randomization replicates of ofijax scan: p-values down to 1/201
SIMULATE_SAMPLES = 100_000  # Monte Carlo draws of simulate: a 5% tail to a standard error of 0.0007
SIMULATE_BINS = 400  # histogram bins of simulate where the lattice would be too fine to plot
#: Most distinct values of an unbinned group/attribute column: the audit's own default
#: (``ofijax.auditing.MAX_LEVELS``; tests/test_cli_layout.py checks that they agree).
MAX_LEVELS = 20

#: ``--method`` of ``ofijax audit``: the p-value methods of :func:`ofijax.audit`.
METHODS = ("auto", "exact", "saddlepoint", "monte_carlo")

_DESCRIPTION = """\
ofijax: legally grounded fairness audits of binary classifiers.

Run `ofijax COMMAND --help` for each command's options; without --data, audit and scan use the
embedded COMPAS data, as in the OFI paper.
"""

#: The one missing-value rule of every engine (pandas, stream, spark), shown in the help.
NA_RULE = ("missing values: an empty field (and a null/NaN in Parquet) is missing; any other text, "
           "'NA' included, is a value (a group label) unless named by --na-values")


UserError = CLIError  # an error in the user's input: reported in one line, exit status 2


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UserError(message)


def _seed(text: str) -> int:
    """``--seed``: an integer in [0, 2**64)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed: must be an integer in [0, 2**64); got {text!r}.") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"--seed: must be an integer in [0, 2**64); got {text}.")
    return value


def _finite(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: must be a number; got {text!r}.") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name}: must be a finite number; got {text}.")
        return value
    return parse


def _positive_int(name: str, minimum: int = 0):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: must be an integer; got {text!r}.") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name}: must be ≥ {minimum}; got {value}.")
        return value
    return parse


class _Deprecated(argparse.Action):
    """An older spelling of an option: still works, hidden from the help; a note after a
    successful run names the new spelling (errors stay one line)."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("default", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _spell(namespace, self.dest, option_string, self.new)


class _Spelled(argparse.Action):
    """Stores the value and remembers that the current spelling was used (for messages)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        _spell(namespace, self.dest, option_string, None)


def _spell(namespace, dest: str, used: str | None, new: str | None) -> None:
    spelled = dict(getattr(namespace, "spelled", None) or {})
    spelled[dest] = used
    namespace.spelled = spelled
    if new:
        notes = list(getattr(namespace, "deprecated", None) or [])
        notes.append(f"{used} is deprecated; use {new} (same meaning).")
        namespace.deprecated = notes


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
                   help="CSV (.csv, .csv.gz), TSV or Parquet file, one row per person (or a directory "
                        "or glob of such files: see --engine). Without it the embedded COMPAS data are "
                        "used (see --compas). Group and attribute columns are read as text: '01', '1' "
                        "and '1.0' are three groups")
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
    d.add_argument("--threshold", metavar="T", type=_finite("--threshold"),
                   help="the --pred column holds scores or probabilities: predict 1 (beneficial) where "
                        "score >= T (compared in float64)")
    d.add_argument("--positive", metavar="VALUE", action="append",
                   help="value(s) counted as 1 (beneficial) in a label/prediction column that is not "
                        "already 0/1; every other value counts as 0. Repeat for several values.")
    d.add_argument("--harmful-label", action="store_true",
                   help="label/prediction 1 is the HARMFUL outcome (e.g. 1 = recidivist): flip both so "
                        "that the positive cell is beneficial, as OFI assumes")
    if weights:
        d.add_argument("--weight", metavar="COL", help="optional column of non-negative sample weights")
    d.add_argument("--bins", metavar="N", type=_positive_int("--bins", 2),
                   help="cut numeric group/attribute columns with more than --max-levels values into N "
                        "quantile bins (edges shown in the report); without it such columns are refused")
    d.add_argument("--max-levels", metavar="K", type=_positive_int("--max-levels", 2), default=MAX_LEVELS,
                   help="most distinct values of an unbinned group/attribute column")
    d.add_argument("--dropna", action="store_true",
                   help="drop rows with a missing value in the columns used (otherwise they are an "
                        "error). " + NA_RULE)
    d.add_argument("--na-values", metavar="VALUE", nargs="+", default=None,
                   help="field values that also mean missing, e.g. --na-values NA 'n/a' (by default "
                        "only an empty field is missing: 'NA' is a group label)")
    return d


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ofijax`` command."""
    parser = _Parser(prog="ofijax", description=_DESCRIPTION, formatter_class=_Formatter)
    from ofijax import __version__

    parser.add_argument("--version", action="version", version=f"ofijax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    # audit ------------------------------------------------------------------------------------
    pa = sub.add_parser(
        "audit", formatter_class=_Formatter,
        help="audit a classifier: OFI with significance, DI, verdicts, report files",
        description=(
            "Audit a binary classifier between groups. For every pair (i, j): OFI = B_i - B_j with\n"
            "B = (FP - FN)/n, its p-value under a named null, a bootstrap interval, DI and TE, and a\n"
            "verdict: 'algorithmic bias' (OFI significant; OFI > 0 = bias against j), 'selection-rate\n"
            "disparity' (OFI not significant, DI fails the four-fifths rule), 'too small to judge'\n"
            "(a group under the minimum-evidence size: 5 people at alpha 0.05) or 'no evidence'.\n"
            "report.md explains every column ('How to read this report'); report.html is the same audit\n"
            "as one self-contained, printable page, with the impact-ratio tables and provenance.\n\n"
            "Without --data it audits the embedded COMPAS data as the OFI paper did."
        ),
    )
    da = _data_options(pa, group_help="sensitive-attribute column; repeat for intersections "
                                      "(e.g. --group race --group sex). Default for COMPAS: race")
    da.add_argument("--groups", metavar="VALUE", nargs="+",
                    help="compare only these groups (labels as printed, 'A & B' for intersections)")
    s = pa.add_argument_group("statistics")
    s.add_argument("--alpha", type=_finite("--alpha"), default=0.05, help="significance level of the verdicts")
    s.add_argument("--null", choices=("pooled", "uniform"), default="pooled",
                   help="null model of the OFI test: 'pooled' = both groups drawn from the pair's pooled "
                        "confusion matrix (multinomial, exact); 'uniform' = every confusion matrix of "
                        "M(n) equally likely (the OFI paper's, very permissive)")
    s.add_argument("--method", choices=METHODS, default="auto",
                   help="p-values of the OFI tests: 'exact' (the exact null distribution), "
                        "'saddlepoint' (an approximation, said so in the report), 'monte_carlo' "
                        "(--samples draws) or 'auto' (exact where it is affordable)")
    s.add_argument("--correction", choices=("holm", "bonferroni", "none"), default="holm",
                   help="multiple-testing correction over the k(k-1)/2 pairs")
    s.add_argument("--confidence", type=_finite("--confidence"), default=0.95,
                   help="coverage of the bootstrap intervals (per pair; the report adds intervals "
                        "simultaneous over all pairs by Bonferroni)")
    s.add_argument("--samples", type=int, default=AUDIT_SAMPLES, metavar="N", action=_Spelled,
                   help="draws: bootstrap replicates of each pairwise OFI, and Monte Carlo draws "
                        "with --method monte_carlo (0 = skip the bootstrap)")
    s.add_argument("--bootstrap", type=int, dest="samples", action=_Deprecated, new="--samples")
    s.add_argument("--seed", type=_seed, default=0, help="PRNG seed (bootstrap, Monte Carlo, scans)")
    s.add_argument("--di-variant", choices=("paper", "pp_over_p"), default="paper",
                   help="DI as the paper's eq. 1 (P^/n ratio) or the authors' 2024 code (P^/P ratio)")
    s.add_argument("--scan", action="store_true",
                   help="also report the worst (most disadvantaged) subgroup by FPR-/TPR-Scan over the "
                        "--attr columns, with a randomization p-value (the slowest part of an audit: each of "
                        "the --scan-samples replicates repeats the scans)")
    s.add_argument("--attr", metavar="COL", nargs="+",
                   help="attribute columns for --scan (default: the --group columns; for COMPAS: race, "
                        "sex, age_cat, c_charge_degree)")
    s.add_argument("--scan-samples", type=int, default=AUDIT_SCAN_SAMPLES, metavar="N", action=_Spelled,
                   help="randomization replicates (draws) of each scan p-value (with --scan)")
    s.add_argument("--replicates", type=int, dest="scan_samples", action=_Deprecated,
                   new="--scan-samples")
    s.add_argument("--top", metavar="K", type=_positive_int("--top", 1), default=1,
                   help="with --scan: report the K worst subgroups of each scan (each found without the "
                        "earlier ones' people), with family-wise p-values")
    o = pa.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", default="ofijax-report",
                   help="directory for report.json, report.md, report.html and the heatmap PNGs")
    o.add_argument("--force", action="store_true", help="replace an existing --out folder")
    o.add_argument("--no-plots", action="store_true", help="do not write heatmap PNGs")
    o.add_argument("--quiet", action="store_true", help="print only the verdicts")
    ir = pa.add_argument_group(
        "impact ratios (report.json 'impact_ratios', report.md, report.html; no label needed)",
        "Per --group column, and their intersection with two or more, each category's selection rate and\n"
        "impact ratio (rate over the highest rate), with Fisher's exact test (small counts) or the\n"
        "two-proportion z-test of its gap from the reference. An empty group value is an unknown\n"
        "category here (counted, left out). Without --label only these tables (and DI) are reported.")
    ir.add_argument("--scoring-rate", metavar="COL",
                    help="the tool scores instead of selecting: the share of each category scoring strictly "
                         "above the median of COL over the full sample (exact), and its impact ratio")
    ir.add_argument("--lower-is-better", action="store_true",
                    help="with --scoring-rate: a lower score is favourable (count strictly below the median)")
    ir.add_argument("--keep-small", action="store_true",
                    help="keep categories under 2%% of the rows with a known value in the impact-ratio "
                         "calculation (by default they are listed but left out of it, as NYC LL144 allows)")
    from ofijax.cli._batch import add_batch_options

    add_batch_options(pa)  # batch audit: --pred COL [COL ...], --score COL --thresholds A:B:STEP
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
    ps.add_argument("--attr", "--group", dest="attr", metavar="COL", nargs="+",
                    help="attribute columns to scan over (categorical). Default for COMPAS: the IJDI "
                         "paper's Sex, Race, Prior Offenses, Under 25, ChargeDegree (ijdi file) or "
                         "race, sex, age_cat, c_charge_degree (other files)")
    ps.add_argument("--prob", metavar="COL",
                    help="column of estimated P(label = 1 | x) (label as given, 1 = beneficial unless "
                         "--harmful-label) for IJDI-Scan; without it, --lam > 0 estimates it by the "
                         "in-sample logistic regression of the IJDI paper")
    ps.add_argument("--lam", type=_finite("--lam"), default=0.0,
                    help="IJDI's lambda: the FPR/TPR raise allowed per unit of raised true risk "
                         "(0 = FPR-/TPR-Scan)")
    ps.add_argument("--side", choices=("negative", "positive", "both"), default="both",
                    help="negative = rows with label 0 (FPR), positive = rows with label 1 (TPR)")
    ps.add_argument("--samples", type=int, default=SCAN_SAMPLES, metavar="N", action=_Spelled,
                    help="randomization replicates (draws) of the p-value")
    ps.add_argument("--replicates", type=int, dest="samples", action=_Deprecated, new="--samples")
    ps.add_argument("--top", metavar="K", type=_positive_int("--top", 1), default=1,
                    help="report the K worst subgroups of each scan: each next one found by rescanning "
                         "without the earlier ones' people, each with a family-wise p-value (the chance "
                         "that any of the K would score as high by chance)")
    ps.add_argument("--seed", type=_seed, default=0, help="PRNG seed")
    ps.add_argument("--out", metavar="DIR", help="optional directory for scan.json")
    ps.add_argument("--force", action="store_true", help="replace an existing --out folder")
    ps.add_argument("--quiet", action="store_true", help="print only the subgroups found")
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
    pm.add_argument("--samples", type=int, default=SIMULATE_SAMPLES, help="Monte Carlo draws")
    pm.add_argument("--seed", type=_seed, default=0, help="PRNG seed")
    pm.add_argument("--observed", type=_finite("--observed"), metavar="OFI",
                    help="an observed OFI (needs two sizes): its two-sided tail probability by Monte "
                         "Carlo (Wilson interval) and exactly through the p-value engine")
    pm.add_argument("--bins", type=int, default=SIMULATE_BINS, metavar="B",
                    help="histogram bins where a lattice histogram (one bin per attainable value) "
                         "would exceed 20,001 points")
    pm.add_argument("--quantiles", type=float, nargs="+", metavar="Q",
                    help="quantile levels in (0, 1), each with a 95%% interval (default 0.025 0.975)")
    pm.add_argument("--out", metavar="DIR",
                    help="also write results.json (schema_version, settings, summaries, exact PMFs, "
                         "tails) and PNG plots of B and OFI (exact curve, the paper's ±0.3 band)")
    pm.add_argument("--force", action="store_true", help="replace an existing --out folder")

    # table1 -----------------------------------------------------------------------------------
    sub.add_parser("table1", help="the OFI paper's Table 1 recomputed by ofijax",
                   description="Print the OFI paper's Table 1 (Ricci v. DeStefano scenarios).")
    return parser
