"""Subgroup scans: Bias Scan (MDSS) and FPR-/TPR-/IJDI-Scan, with randomization tests.

Public API:

* :func:`bias_scan` — the subgroup whose outcomes deviate most from their expectations
  (exhaustive search when the attribute space is small, else multi-start coordinate ascent).
* :func:`score_subset` — score a given subgroup.
* :func:`fpr_scan`, :func:`tpr_scan`, :func:`ijdi_scan` — error-rate scans of binary predictions
  against true labels (label 1 = beneficial by default, as in :func:`ofijax.audit`).
* :func:`rate_scan_cells` — FPR-/TPR-Scan from cell statistics (counts, no rows), with the
  result the row scans give.
* :class:`ScanResult` — the one result type (``IJDIResult`` is the same type); each result says in
  words which rate is raised for which rows.
* :func:`estimate_true_probabilities`, :func:`lambda_from_costs` — IJDI-Scan's inputs.
* :func:`bin_codes`, :func:`bin_labels`, :data:`BIN_RULE` — the one binning rule of ofijax
  (``bins=`` of the scans and audits, ``--bins`` of the CLI): ``(e_j, e_{j+1}]``, the first bin
  ``[e_0, e_1]``.

The array-level engine (for randomization tests and new procedures) is documented in
``ofijax.scan._engine``.
"""

from ._api import bias_scan, score_subset
from ._checks import DEFAULT_Q_BOUNDS
from ._ijdi import IJDIStep, describe_rate_scan, fpr_scan, ijdi_scan, rate_scan_cells, tpr_scan
from ._probabilities import estimate_true_probabilities, lambda_from_costs
from ._result import IJDIResult, ScanResult

__all__ = [
    "ScanResult",
    "bias_scan",
    "score_subset",
    "DEFAULT_Q_BOUNDS",
    "IJDIResult",
    "IJDIStep",
    "fpr_scan",
    "tpr_scan",
    "ijdi_scan",
    "rate_scan_cells",
    "describe_rate_scan",
    "estimate_true_probabilities",
    "lambda_from_costs",
]

# Scans from per-cell statistics (issue 15; used by ofijax.stats)
from ._cells import CellScan, chebyshev_cell_features, scan_cells  # noqa: E402

__all__ += ["CellScan", "scan_cells", "chebyshev_cell_features"]

# The one binning rule (issue 43): scans' bins=, auditing.bin_features and the CLI's --bins
from ._encode import BIN_RULE, bin_codes, bin_labels  # noqa: E402

__all__ += ["BIN_RULE", "bin_codes", "bin_labels"]
