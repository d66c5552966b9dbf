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
