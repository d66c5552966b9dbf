"""Bias Scan (MDSS): find the subgroup whose outcomes deviate most from their expectations.

Public API:

* :func:`bias_scan` — multi-start coordinate-ascent subset scan (AIF360-compatible scoring and
  penalty, restarts batched with ``vmap``, cell compression so cost scales with occupied cells).
* :func:`score_subset` — score a given subgroup.
* :class:`ScanResult` — the result NamedTuple.

The array-level engine (for FPR-/TPR-/IJDI-Scan and randomization tests) is documented in
``ofijax.scan._engine``.
"""

from ._api import DEFAULT_Q_BOUNDS, ScanResult, bias_scan, score_subset

__all__ = ["ScanResult", "bias_scan", "score_subset", "DEFAULT_Q_BOUNDS"]

# FPR-/TPR-/IJDI-Scan and randomization tests (issue 5)
from ._ijdi import IJDIResult, IJDIStep, fpr_scan, ijdi_scan, tpr_scan  # noqa: E402
from ._probabilities import estimate_true_probabilities, lambda_from_costs  # noqa: E402

__all__ += [
    "IJDIResult",
    "IJDIStep",
    "fpr_scan",
    "tpr_scan",
    "ijdi_scan",
    "estimate_true_probabilities",
    "lambda_from_costs",
]

# Scans from per-cell statistics (issue 15; used by ofijax.stats)
from ._cells import CellScan, chebyshev_cell_features, scan_cells  # noqa: E402

__all__ += ["CellScan", "scan_cells", "chebyshev_cell_features"]
