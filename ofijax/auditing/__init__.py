"""Audits: per-group tables, exact OFI tests, bootstrap intervals, verdicts and the report.

Example:
    >>> import ofijax
    >>> af = ofijax.audit(0, [1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0], sensitive_features=list("aabbab"),
    ...                   min_group_size=1)
    >>> sorted(af.by_group.index)
    ['a', 'b']
"""

from ofijax.auditing._batch import ACROSS as ACROSS
from ofijax.auditing._batch import UTILITIES as UTILITIES
from ofijax.auditing._batch import BatchAudit as BatchAudit
from ofijax.auditing._batch import audit_batch as audit_batch
from ofijax.auditing._batch import benjamini_hochberg as benjamini_hochberg
from ofijax.auditing._batch import pareto_frontier as pareto_frontier
from ofijax.auditing._batch import plot_frontier as plot_frontier
from ofijax.auditing._batch import select_candidates as select_candidates
from ofijax.auditing._frame import GROUP_METRICS as GROUP_METRICS
from ofijax.auditing._frame import PAIR_METRICS as PAIR_METRICS
from ofijax.auditing._frame import AuditFrame as AuditFrame
from ofijax.auditing._frame import audit as audit
from ofijax.auditing._frame import audit_from_counts as audit_from_counts
from ofijax.auditing._groups import MAX_GROUPS as MAX_GROUPS
from ofijax.auditing._groups import MAX_LEVELS as MAX_LEVELS
from ofijax.auditing._groups import bin_features as bin_features
from ofijax.auditing._groups import check_group_count as check_group_count
from ofijax.auditing._html import render_html as render_html
from ofijax.auditing._impact import MIN_SHARE as MIN_SHARE
from ofijax.auditing._impact import impact_from_counts as impact_from_counts
from ofijax.auditing._impact import impact_ratios as impact_ratios
from ofijax.auditing._impact import impact_section as impact_ratios_section
from ofijax.auditing._impact import scoring_from_batches as scoring_from_batches
from ofijax.auditing._plots import write_heatmaps as write_heatmaps
from ofijax.auditing._report import HOW_TO_READ as HOW_TO_READ
from ofijax.auditing._report import format_p as format_p
from ofijax.auditing._report import group_label as group_label
from ofijax.auditing._report import impact_lines as impact_lines
from ofijax.auditing._report import render_report as render_report
from ofijax.auditing._report import scan_lines as scan_lines
from ofijax.auditing._report import to_jsonable as to_jsonable
from ofijax.auditing._scans import run_scans as run_scans
from ofijax.auditing._significance import NULLS as NULLS
from ofijax.auditing._significance import OFIBootstrap as OFIBootstrap
from ofijax.auditing._significance import OFITest as OFITest
from ofijax.auditing._significance import diff_pmf as diff_pmf
from ofijax.auditing._significance import holm as holm
from ofijax.auditing._significance import ofi_bootstrap as ofi_bootstrap
from ofijax.auditing._significance import ofi_test as ofi_test
from ofijax.auditing._significance import pairwise_ofi_test as pairwise_ofi_test
from ofijax.auditing._verdicts import VERDICT_RENAMES as VERDICT_RENAMES
from ofijax.auditing._verdicts import VERDICTS as VERDICTS
from ofijax.auditing._verdicts import adjust_pvalues as adjust_pvalues
from ofijax.auditing._verdicts import min_group_size as min_group_size

__all__ = [
    "audit_from_counts",
    "AuditFrame",
    "audit",
    "GROUP_METRICS",
    "PAIR_METRICS",
    "VERDICTS",
    "VERDICT_RENAMES",
    "NULLS",
    "OFITest",
    "OFIBootstrap",
    "ofi_test",
    "pairwise_ofi_test",
    "ofi_bootstrap",
    "diff_pmf",
    "holm",
    "adjust_pvalues",
    "min_group_size",
    "MAX_GROUPS",
    "MAX_LEVELS",
    "bin_features",
    "check_group_count",
    "render_report",
    "scan_lines",
    "HOW_TO_READ",
    "format_p",
    "group_label",
    "to_jsonable",
    "write_heatmaps",
    "run_scans",
    # regulator-style impact-ratio tables (no label needed)
    "impact_ratios",
    "impact_from_counts",
    "impact_ratios_section",
    "scoring_from_batches",
    "impact_lines",
    "MIN_SHARE",
    "render_html",
    # batch audits (many candidates at once)
    "BatchAudit",
    "audit_batch",
    "pareto_frontier",
    "select_candidates",
    "plot_frontier",
    "benjamini_hochberg",
    "ACROSS",
    "UTILITIES",
]
