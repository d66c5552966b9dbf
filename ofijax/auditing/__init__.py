"""Audits: per-group tables, exact OFI tests, bootstrap intervals, verdicts and the report.

What users call: :func:`audit` (and :func:`audit_from_counts`) → :class:`AuditFrame`;
:func:`audit_batch` → :class:`BatchAudit` with :func:`pareto_frontier`, :func:`select_candidates`
and :func:`plot_frontier`; the tests :func:`ofi_test`, :func:`pairwise_ofi_test`,
:func:`ofi_bootstrap`; multiplicity (:func:`holm`, :func:`benjamini_hochberg`,
:func:`adjust_pvalues`); :func:`impact_ratios`; the report :func:`render_report`, its heatmaps
:func:`write_heatmaps` and the scans of an audit :func:`run_scans`. The CLI's report plumbing is
:mod:`ofijax.auditing.reporting` (not a stable API); its names are still importable from here for
one release, with a ``DeprecationWarning``.

Example:
    >>> import ofijax
    >>> af = ofijax.audit(0, [1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0], sensitive_features=list("aabbab"),
    ...                   min_group_size=1)
    >>> sorted(af.by_group.index)
    ['a', 'b']
"""

from ofijax.auditing._auditframe import PAIR_METRICS as PAIR_METRICS
from ofijax.auditing._auditframe import AuditFrame as AuditFrame
from ofijax.auditing._batch import ACROSS as ACROSS
from ofijax.auditing._batch import UTILITIES as UTILITIES
from ofijax.auditing._batch import BatchAudit as BatchAudit
from ofijax.auditing._batch import audit_batch as audit_batch
from ofijax.auditing._batch import pareto_frontier as pareto_frontier
from ofijax.auditing._batch import plot_frontier as plot_frontier
from ofijax.auditing._batch import select_candidates as select_candidates
from ofijax.auditing._deprecated import __getattr__ as __getattr__  # moved names, for a release
from ofijax.auditing._frame import audit as audit
from ofijax.auditing._frame import audit_from_counts as audit_from_counts
from ofijax.auditing._groups import MAX_GROUPS as MAX_GROUPS
from ofijax.auditing._groups import MAX_LEVELS as MAX_LEVELS
from ofijax.auditing._groups import bin_features as bin_features
from ofijax.auditing._impact import MIN_SHARE as MIN_SHARE
from ofijax.auditing._impact import impact_from_counts as impact_from_counts
from ofijax.auditing._impact import impact_ratios as impact_ratios
from ofijax.auditing._plots import write_heatmaps as write_heatmaps
from ofijax.auditing._report import render_report as render_report
from ofijax.auditing._rules import GROUP_METRICS as GROUP_METRICS
from ofijax.auditing._scans import run_scans as run_scans
from ofijax.auditing._significance import NULLS as NULLS
from ofijax.auditing._significance import OFIBootstrap as OFIBootstrap
from ofijax.auditing._significance import OFITest as OFITest
from ofijax.auditing._significance import benjamini_hochberg as benjamini_hochberg
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
    "audit",
    "audit_from_counts",
    "AuditFrame",
    "GROUP_METRICS",
    "PAIR_METRICS",
    "VERDICTS",
    "VERDICT_RENAMES",
    "min_group_size",
    "MAX_GROUPS",
    "MAX_LEVELS",
    "bin_features",
    # significance and multiplicity
    "NULLS",
    "OFITest",
    "OFIBootstrap",
    "ofi_test",
    "pairwise_ofi_test",
    "ofi_bootstrap",
    "diff_pmf",
    "holm",
    "benjamini_hochberg",
    "adjust_pvalues",
    # the report, its heatmaps and the audit's scans
    "render_report",
    "write_heatmaps",
    "run_scans",
    # regulator-style impact-ratio tables (no label needed)
    "impact_ratios",
    "impact_from_counts",
    "MIN_SHARE",
    # batch audits (many candidates at once)
    "BatchAudit",
    "audit_batch",
    "pareto_frontier",
    "select_candidates",
    "plot_frontier",
    "ACROSS",
    "UTILITIES",
]
