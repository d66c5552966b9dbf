"""Subgroup scans: Bias Scan (MDSS) and FPR-/TPR-/IJDI-Scan, with randomization tests.

What users call:

* :func:`bias_scan` — the subgroup whose outcomes deviate most from their expectations.
* :func:`score_subset` — score a given subgroup.
* :func:`fpr_scan`, :func:`tpr_scan`, :func:`ijdi_scan` — error-rate scans of binary predictions
  against true labels (label 1 = beneficial by default, as in :func:`ofijax.audit`).
* :func:`rate_scan_cells` — FPR-/TPR-Scan from cell statistics (counts, no rows), with the
  result the row scans give.
* :func:`estimate_true_probabilities`, :func:`lambda_from_costs` — IJDI-Scan's inputs.
* :func:`bin_codes`, :func:`bin_labels`, :data:`BIN_RULE` — the one binning rule of ofijax
  (``bins=`` of the scans and audits, ``--bins`` of the CLI): ``(e_j, e_{j+1}]``, the first bin
  ``[e_0, e_1]``.
* :data:`DEFAULT_Q_BOUNDS` — the default bracket of the odds multiplier q.

One result type: every scan above (and ``ofijax.stats``' ``fpr_scan_cells``, ``tpr_scan_cells``,
``bias_scan_cells``) returns a :class:`ScanResult`. A field a scan has no value for keeps its
default (scans from counts have no row ``mask``; only IJDI-Scan fills ``history`` with
:class:`IJDIStep` s). Each result says in words which rate is raised for which rows, and whether
its optimum is **certified**: ``result.search == "exhaustive"`` (``result.certified``) means every
subgroup was scored, the global optimum; ``"coordinate_ascent"`` means a local optimum of the
multi-start search. ``search="auto"`` (the default of the row scans, ``rate_scan_cells`` and the
stats rate scans) enumerates whenever the attribute space is small enough; on 150 random small
tables coordinate ascent at the default 10 restarts (plus, on small tables, starts from every
single value and pair of values) fell below the brute-force optimum on 1.3% (FPR-Scan) and 2.7%
(Bias Scan), exhaustive search on none (``experiments/scan_miss_rate.py``).

Lower level, for ``ofijax.stats`` and new procedures: :func:`scan_cells` (the search on cell
arrays) and its array result :class:`CellScan` (the public functions turn it into a
:class:`ScanResult`), :func:`chebyshev_cell_features`, :func:`describe_rate_scan` (the one wording
of a rate-scan result). The array-level engine is documented in ``ofijax.scan._engine``.

Former names, kept for a release: ``IJDIResult`` (= :class:`ScanResult`).
"""

from ._api import bias_scan, score_subset
from ._checks import DEFAULT_Q_BOUNDS
from ._ijdi import IJDIStep, fpr_scan, ijdi_scan, tpr_scan
from ._probabilities import estimate_true_probabilities, lambda_from_costs
from ._ratecells import rate_scan_cells
from ._result import IJDIResult, ScanResult
from ._words import describe_rate_scan

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

# Lower level: scans from per-cell statistics (used by ofijax.stats)
from ._cells import CellScan, chebyshev_cell_features, scan_cells  # noqa: E402

__all__ += ["CellScan", "scan_cells", "chebyshev_cell_features"]

# The one binning rule: scans' bins=, auditing.bin_features and the CLI's --bins
from ._encode import BIN_RULE, bin_codes, bin_labels  # noqa: E402

__all__ += ["BIN_RULE", "bin_codes", "bin_labels"]
