"""The one result type of every scan (:class:`ScanResult`) and the words that describe it.

Owns :class:`ScanResult`, which every public scan returns (row scans, scans from cell statistics,
``ofijax.stats``), its former names (``IJDIResult``; ``stats.CellScanResult``), and the helpers
that turn an array-level subgroup into its ``{column: values}`` form and words.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ._encode import Encoded

__all__ = ["ScanResult", "IJDIResult", "subset_dict", "subset_text", "cap_reached",
           "UNBOUNDED_TEXT"]


class ScanResult(NamedTuple):
    """Result of every scan: :func:`bias_scan`, :func:`score_subset`, :func:`fpr_scan`,
    :func:`tpr_scan`, :func:`ijdi_scan`, :func:`rate_scan_cells`, and ``ofijax.stats``'
    ``fpr_scan_cells``, ``tpr_scan_cells`` and ``bias_scan_cells``.

    One type, one meaning per field; a field a scan has no value for holds its default (``None``,
    NaN, ``()``, 0). The variants differ only there: scans of rows fill ``mask`` over the input
    rows (and FPR-/TPR-/IJDI-Scan ``p_scan``); scans from cell statistics have no rows
    (``mask`` None; ``bias_scan_cells``: ``(C,)`` over the cells); only IJDI-Scan fills
    ``history`` and ``num_rescans``; only error-rate scans fill ``rate``. Every result says
    whether its optimum is certified (:attr:`certified`). Former names: ``IJDIResult`` (this
    type) and ``ofijax.stats.CellScanResult`` (this type since #38; its fields keep their names,
    but positions 4 on differ: read fields by name).

    Attributes:
      subset: the subgroup S, normalised: ``{column: tuple of values}`` for each constrained
        attribute that excludes at least one observed value; ``{}`` is the whole data (or, with
        score 0, "nothing detected").
      score: penalised score ``max_q LLR(q) - penalty·(#values listed)`` (Python float).
      q: fitted odds multiplier (1.0 when the score is 0).
      size: rows of the **scanned class** in S (FPR-/TPR-/IJDI-Scan: the rows whose true outcome
        is the side's; Bias Scan: every row of S).
      mask: ``(N,)`` NumPy bool over all input rows: scanned class and in S (scans from cell
        statistics: None, or ``(C,)`` over the cells for ``bias_scan_cells``).
      converged: coordinate ascent: every restart reached a *local* optimum (no single attribute's
        value set can be changed to raise the score) within ``max_steps`` — not a guarantee of the
        global optimum; exhaustive search: always True (the global optimum over all subgroups).
        IJDI-Scan: also, Algorithm 1 ended with a subgroup passing both edge tests.
      listed: the un-normalised subgroup (attributes listed with all their values kept); the
        penalty counts the values listed here.
      p_value: randomization-test p-value ``(1 + #{F* ≥ F}) / (R + 1)`` (NaN without a test;
        with ``top_k``: family-wise, see :func:`bias_scan`): a Monte Carlo estimate of the exact
        randomization p-value, bracketed by the property ``p_value_interval`` (95%
        Clopper-Pearson).
      null_scores: ``(R,)`` replicate scores (None without a test).
      total_size: rows of S in the whole input, whatever their class (a top-k find after the
        first: not counting the rows of the earlier finds, which its rescan removed).
      description: what the result means, in words: which rate is raised for which rows, both
        rates, both sizes, and a warning when the score is an artefact of the q cap; for
        FPR-/TPR-/IJDI-Scan of predictions that were not 0/1, the threshold that turned them into
        decisions ("predictions thresholded at 0.5 (default; ...)" or "... (given; ...)").
      observed_rate: rate of the scanned outcome among the scanned rows of S (Bias Scan: of
        outcome 1; FPR-/TPR-/IJDI-Scan: of the harmful prediction, i.e. benefit withheld).
      expected_rate: mean null rate (expectation) of those rows (FPR-/TPR-Scan: the class's
        overall rate; IJDI-Scan: the mean final p_scan, clamped by ``p_epsilon``).
      unbounded: q ran to the end of ``q_bounds``: every scanned row of S has the outcome (or,
        negative direction, none has), so the likelihood ratio grows without bound and the score
        measures the cap, not an effect size. Treat such a subgroup as "every row positive", not as
        a ranked finding.
      search: ``"exhaustive"`` (every subgroup scored: the global optimum, ``certified``; for
        IJDI-Scan every scan of Algorithm 1 is its global optimum) or ``"coordinate_ascent"``
        (multi-start local search: a local optimum, which missed the global one on 1.3% (FPR-Scan)
        and 2.7% (Bias Scan) of 150 random small tables at 10 restarts; on tables of ≤ 4,096 cells
        it also starts from every single value and pair of values; ``experiments/scan_miss_rate.py``); ``"given"``
        for :func:`score_subset`. The property ``certified`` is ``search == "exhaustive"``.
      bins: ``{column: bin edges}`` of the columns binned by ``bins=`` (empty if none).
      top: with ``top_k=k``: the k subgroups found one after another, each with the earlier ones'
        rows removed, as :class:`ScanResult` s with family-wise p-values (``top[0]`` is this
        result); ``()`` otherwise.
      history: IJDI-Scan: one :class:`~ofijax.scan.IJDIStep` per scan of Algorithm 1; ``()``
        otherwise.
      p_scan: IJDI-/FPR-/TPR-Scan: ``(N,)`` final null rate of each scanned row (NaN elsewhere);
        None for Bias Scan.
      num_rescans: IJDI-Scan: rescans (adjustments) Algorithm 1 made; 0 otherwise.
      rate: FPR-/TPR-/IJDI-Scan: the scanned class's overall rate of the harmful prediction
        p̄_b (all its rows, unclamped; the FPR or TPR); NaN for Bias Scan.
    """

    subset: dict
    score: float
    q: float
    size: int
    mask: np.ndarray
    converged: bool = True
    listed: dict | None = None
    p_value: float = math.nan
    null_scores: Any = None
    total_size: int = 0
    description: str = ""
    observed_rate: float = math.nan
    expected_rate: float = math.nan
    unbounded: bool = False
    search: str = "coordinate_ascent"
    bins: dict | None = None
    top: tuple = ()
    history: tuple = ()
    p_scan: np.ndarray | None = None
    num_rescans: int = 0
    rate: float = math.nan

    @property
    def certified(self) -> bool:
        """Whether the result is certified to be the global optimum: every subgroup was scored
        (``search == "exhaustive"``). Otherwise (``"coordinate_ascent"``) it is a local optimum:
        no single attribute's value set can be changed to raise the score, but a better subgroup
        may exist (``experiments/scan_miss_rate.py`` measures how often)."""
        return self.search == "exhaustive"

    @property
    def p_value_interval(self) -> tuple[float, float]:
        """95% Clopper-Pearson interval for the exact randomization p-value, of which
        ``p_value`` is a Monte Carlo estimate from the R = ``len(null_scores)`` replicates
        (:func:`~._randomization.p_value_interval`); ``(NaN, NaN)`` without a test.

        Engines that draw replicates differently from the same null law (rows: a Bernoulli draw
        per row; cell statistics: a Binomial draw per cell) give different estimates of the same
        exact p-value, each interval covering it with probability ≥ 95%; they differ by Monte
        Carlo error (overlapping intervals), not digit for digit."""
        from ._randomization import p_value_interval

        r = 0 if self.null_scores is None else int(np.size(self.null_scores))
        return p_value_interval(self.p_value, r)


#: Former name of the result of FPR-/TPR-/IJDI-Scan: the same type as :class:`ScanResult`.
IJDIResult = ScanResult

UNBOUNDED_TEXT = (
    "unbounded: {what}, so q runs to its cap {cap:g} and the score ({score:.2f}) measures "
    "q_bounds, not an effect size; read it as '{short}', not as a ranked finding"
)


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def subset_dict(enc: Encoded, mask: np.ndarray, listed: np.ndarray, normalize: bool) -> dict:
    """``{column: values}`` of a subgroup ``(mask (M, V), listed (M,))``; ``normalize`` drops
    attributes that list every observed value."""
    out = {}
    mask = np.asarray(mask)
    listed = np.asarray(listed)
    for m, name in enumerate(enc.columns):
        if not listed[m]:
            continue
        nv = len(enc.labels[m])
        row = mask[m, :nv]
        if normalize and row.all():
            continue
        out[name] = tuple(_py(v) for v in enc.labels[m][row])
    return out


def subset_text(subset: dict) -> str:
    """``"race in {b} and age in {30, 40}"`` (``"all rows"`` for ``{}``)."""
    if not subset:
        return "all rows"
    return " and ".join(f"{c} in {{{', '.join(map(str, v))}}}" for c, v in subset.items())


def cap_reached(log_q: float, q_bounds: tuple[float, float], direction: str) -> bool:
    """True when the fitted log q sits at the end of the bracket on the scan's side."""
    cap = math.log(q_bounds[1] if direction == "positive" else q_bounds[0])
    return bool(abs(float(log_q) - cap) <= 1e-6 * max(1.0, abs(cap)))
