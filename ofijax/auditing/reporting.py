"""Report and CLI plumbing of the audits: for ofijax's CLI and report writers; not a stable API.

The helpers the ``ofijax`` command and the report writers share (JSON conversion, group labels,
p-value wording, the text/Markdown report's scan and impact-ratio sections, the HTML page, the
streaming scoring-rate tables, the group-count limit). They may change in any release without a
deprecation period; user code calls :mod:`ofijax.auditing` (``audit``, ``AuditFrame.summary``,
``render_report``, ``write_heatmaps``, ``run_scans``, ``impact_ratios``, ``audit_batch``, …).
Until the next release these names are also importable from :mod:`ofijax.auditing`, with a
``DeprecationWarning`` that names this module.

Example:
    >>> from ofijax.auditing.reporting import format_p, group_label
    >>> group_label(("Black", "F")), format_p(0.5)
    ('Black & F', '0.500')
"""

from ofijax.auditing._groups import check_group_count as check_group_count
from ofijax.auditing._html import render_html as render_html
from ofijax.auditing._impact import impact_section as impact_ratios_section
from ofijax.auditing._impact import scoring_from_batches as scoring_from_batches
from ofijax.auditing._report import HOW_TO_READ as HOW_TO_READ
from ofijax.auditing._report import format_p as format_p
from ofijax.auditing._report import group_label as group_label
from ofijax.auditing._report import impact_lines as impact_lines
from ofijax.auditing._report import scan_lines as scan_lines
from ofijax.auditing._report import to_jsonable as to_jsonable

__all__ = [
    "check_group_count",
    "render_html",
    "impact_ratios_section",
    "scoring_from_batches",
    "HOW_TO_READ",
    "format_p",
    "group_label",
    "impact_lines",
    "scan_lines",
    "to_jsonable",
]
