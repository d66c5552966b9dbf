"""Mergeable additive statistics: audits and scans beyond one machine's memory.

Everything an audit needs is the per-group confusion matrices (:class:`GroupCounts`); FPR-/TPR-Scan
need per-cell row counts and positive-prediction counts of the attribute cross-product, split by
the true label (:class:`CellStats`). Both are sums over rows, so they merge across batches, files
and workers (``a.merge(b)``, exact int64), and the exact tests, verdicts and the scans' search run
on them on one machine:

* :func:`collect`: one bounded-memory pass over Parquet/CSV files (path, directory or glob),
  pandas/polars DataFrames, pyarrow Tables/RecordBatches or an iterator of batches;
* :func:`from_spark`: the same statistics aggregated inside Apache Spark (``ofijax[spark]``);
* :func:`audit_counts`: :func:`ofijax.audit`'s report from :class:`GroupCounts`;
* :func:`fpr_scan_cells`, :func:`tpr_scan_cells`: FPR-/TPR-Scan from :class:`CellStats`, with a
  Bernoulli-null randomization test drawn from the counts;
* :func:`collect_bias`, :func:`bias_scan_cells`: Bias Scan from per-cell counts, outcome sums and
  Chebyshev features of the expectations (:class:`BiasCells`).

Randomization tests: for FPR-/TPR-Scan every row of a side has the same null rate p̄_b, so a
Bernoulli-null replicate's cell sum is Binomial(n_c, p̄_b), drawn from the counts at no extra pass
(equal in distribution to the row-level draws, not draw for draw). Under ``jax.distributed`` the
replicates are split over the processes and gathered, with the same scores for any process count.

Bias Scan and IJDI-Scan (design): their per-row expectations enter through additive Chebyshev
(or exact, for few distinct values) cell features, see :func:`ofijax.scan.chebyshev_cell_features`
and :func:`ofijax.scan.scan_cells`, so Bias Scan runs on features summed over batches. IJDI-Scan's
Algorithm 1 changes the expectations of the rows of each detected subgroup before a rescan; its
plan on statistics is **one pass per rescan** (exact: the adjusted p of a row depends only on its
own p and its cell, so each rescan's features are again additive), not yet wired here: run
IJDI-Scan on rows (or on a sample).

Example:
    >>> import pandas as pd
    >>> from ofijax.stats import collect, audit_counts
    >>> df = pd.DataFrame({"y": [1, 0, 1, 0] * 25, "p": [1, 1, 0, 0] * 25, "g": list("ab") * 50})
    >>> st = collect(df, label="y", pred="p", group="g")
    >>> audit_counts(0, st.counts).cms.tolist()
    [[25, 25, 0, 0], [0, 0, 25, 25]]
"""

from ._audit import CellScanResult, audit_counts, fpr_scan_cells, tpr_scan_cells
from ._bias import BiasCells, bias_scan_cells, collect_bias
from ._spark import from_spark
from ._stats import CellStats, GroupCounts, Statistics
from ._stream import DEFAULT_BATCH_SIZE, collect, resolve_files

__all__ = [
    "GroupCounts",
    "CellStats",
    "Statistics",
    "CellScanResult",
    "BiasCells",
    "collect_bias",
    "bias_scan_cells",
    "collect",
    "from_spark",
    "audit_counts",
    "fpr_scan_cells",
    "tpr_scan_cells",
    "resolve_files",
    "DEFAULT_BATCH_SIZE",
]
