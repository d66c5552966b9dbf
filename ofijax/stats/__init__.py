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

Every scan here returns :class:`ofijax.scan.ScanResult`, the result of the row scans (no row
``mask``), and says whether its optimum is certified (``result.certified``: the rate scans'
``search="auto"`` scores every subgroup of a small space, as the row scans' does; so does
``bias_scan_cells``, with Bias Scan's rule). ``CellScanResult`` is the former name of that type,
kept for a release.

Randomization tests: for FPR-/TPR-Scan every row of a side has the same null rate p̄_b, so a
Bernoulli-null replicate's cell sum is Binomial(n_c, p̄_b), drawn from the counts at no extra pass
(the law of the row-level draws summed over the cell, not the same draws). The p-value is a Monte
Carlo estimate of the exact randomization p-value; ``result.p_value_interval`` is its 95%
Clopper-Pearson interval; the row scans' p-value is another estimate of the same exact p-value
(other draws of the same law), so the two differ by Monte Carlo error. Under ``jax.distributed`` the replicates are split over the processes and gathered, with
the same scores for any process count.

Bias Scan runs on statistics: the per-row expectations enter through additive Chebyshev (or
exact, for few distinct values) cell features, see :func:`ofijax.scan.chebyshev_cell_features`
and :func:`ofijax.scan.scan_cells`, summed over batches (:func:`collect_bias`).

IJDI-Scan is **not** available on statistics (run it on rows, or on a sample). Its design here is
**one pass per rescan**, not a quantized p-histogram: Algorithm 1 changes the expectations of the
rows of each detected subgroup S before it rescans (edge case 1 raises the rows of S whose working
p lies below p(~S), each by its own amount; edge case 2 rescales their p_scan), and the next scan
needs Σ_S log(1 − p_scan + q·p_scan) over the adjusted rows. A row's adjusted p depends only on
its original p, its cell and the adjustment history, so each rescan's cell features are again
additive, exactly: one pass over the data per rescan, plus one for the sum over the rows of S
below p(~S) that sets edge case 1's α, and all of that again for every randomization replicate
(R · rescans passes). When p is a function of the scanned attributes (e.g.
:func:`ofijax.scan.estimate_true_probabilities` on the same columns) every quantity is constant
per cell and Algorithm 1 would run on the cell statistics with no further pass; that special case
is the next step. It is not wired because Algorithm 1 (``ofijax.scan``) takes per-row masks
without row weights, and a second, cell-level copy of its edge cases and modes would have to be
kept equal to it.

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
