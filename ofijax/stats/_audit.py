"""Audits and scans from statistics: :func:`audit_counts`, :func:`fpr_scan_cells`, :func:`tpr_scan_cells`.

``audit_counts`` computes exactly what :func:`ofijax.audit` computes from rows (without weights
or scans): the per-group table, the pairwise OFI/DI/TE, the exact (or Monte Carlo) p-values with
the same correction, the bootstrap intervals (resampling a group's rows *is* a multinomial on its
confusion matrix, so the same draws) and the verdicts, all from the ``(k, 4)`` counts.
The scans run the engine of :mod:`ofijax.scan` on the cells (:func:`ofijax.scan.scan_cells`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ofijax._validation import as_key
from ofijax.auditing import AuditFrame, audit_from_counts
from ofijax.scan import DEFAULT_Q_BOUNDS, ScanResult, describe_rate_scan, scan_cells

from ._stats import CellStats, GroupCounts

__all__ = ["audit_counts", "fpr_scan_cells", "tpr_scan_cells", "CellScanResult"]


def audit_counts(
    key: Any,
    counts: GroupCounts,
    *,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "auto",
    correction: str = "holm",
    confidence: float = 0.95,
    num_samples: int = 2000,
    di_variant: str = "paper",
    beneficial_label: int | None = None,
    min_group_size: int | None = None,
    **deprecated: Any,
) -> AuditFrame:
    r"""The audit of :func:`ofijax.audit` from mergeable per-group counts.

    A thin wrapper of :func:`ofijax.auditing.audit_from_counts` (the one audit implementation):
    same tables, p-values, intervals and verdicts as ``ofijax.audit(key, y_true, y_pred,
    sensitive_features=...)`` on the rows the counts were built from. OFI(i, j) = B_i − B_j with
    B = (FP − FN)/n.

    Args:
      key: PRNG key or int seed (bootstrap, Monte Carlo).
      counts: :class:`GroupCounts` (already oriented: positive = beneficial).
      method: how the OFI p-values are computed, ``"auto" | "exact" | "saddlepoint" |
        "monte_carlo"`` (default ``"auto"``: exact where that is affordable, else the accurate
        approximation; the report says which), passed to
        :func:`ofijax.auditing.audit_from_counts` as :func:`ofijax.audit` does.
      alpha, null, correction, confidence, num_samples, di_variant, min_group_size: as in
        :func:`ofijax.audit` (``num_bootstrap``/``num_null_samples`` are deprecated names of
        ``num_samples``).
      beneficial_label: recorded in ``settings`` only (the counts carry the orientation).

    Examples:
      >>> import numpy as np
      >>> gc = GroupCounts(("i", "j"), ("group",), np.array([[0, 1, 0, 5], [0, 7, 0, 11]]))
      >>> af = audit_counts(0, gc, null="uniform")
      >>> round(float(af.ofi[0, 1]), 4), af.pairs.loc[0, "verdict"]
      (0.2222, 'no evidence')
    """
    import warnings

    if not isinstance(counts, GroupCounts):
        raise TypeError(f"counts: must be a GroupCounts; got {type(counts).__name__}.")
    for old in ("num_bootstrap", "num_null_samples"):
        if old in deprecated:
            warnings.warn(f"audit_counts: {old} is deprecated; use num_samples.", DeprecationWarning,
                          stacklevel=2)
            if old == "num_bootstrap":
                num_samples = deprecated.pop(old)
            else:
                deprecated.pop(old)
    if deprecated:
        raise TypeError(f"{next(iter(deprecated))}: not an argument of audit_counts.")
    groups = tuple(counts.groups)
    ncols = len(groups[0]) if groups and isinstance(groups[0], tuple) else 1
    names = tuple(counts.names) if len(tuple(counts.names)) == ncols else None
    return audit_from_counts(
        key, np.asarray(counts.cms, np.int64), groups, names=names, alpha=alpha, null=null,
        method=method, correction=correction, confidence=confidence, num_samples=num_samples,
        di_variant=di_variant, beneficial_label=1 if beneficial_label is None else beneficial_label,
        min_group_size=min_group_size)


#: Former name of the result of :func:`fpr_scan_cells` / :func:`tpr_scan_cells`: since #38 they
#: return :class:`ofijax.scan.ScanResult`, the one result of every scan (same field names, ``mask``
#: None; positions 4 on differ, so read fields by name). Kept for a release.
CellScanResult = ScanResult


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _encode(cells: CellStats, label: int):
    sel = np.asarray(cells.label) == label
    if not sel.any():
        side = "negative" if label == 0 else "positive"
        raise ValueError(
            f"cells: the {side} side has no rows (no label == {label}); scan the other side.")
    n = np.asarray(cells.n, np.int64)[sel]
    pos = np.asarray(cells.positives, np.int64)[sel]
    codes, labels = [], []
    for vals in cells.values:
        v = pd.Series(np.asarray(vals)[sel])
        try:
            c, u = pd.factorize(v, sort=True)
        except TypeError:
            c, u = pd.factorize(v, sort=False)
        codes.append(c.astype(np.int64))
        labels.append(np.asarray(u))
    codes = np.stack(codes, 1)
    # the same (attribute values, label) entry can occur twice only if values compare equal after
    # conversion; aggregate by code to be safe, in lexicographic code order
    nv = np.array([len(u) for u in labels], np.int64)
    key = np.zeros(codes.shape[0], np.int64)
    for j in range(codes.shape[1]):
        key = key * nv[j] + codes[:, j]
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    n_c = np.bincount(inv.ravel(), weights=n, minlength=uk.size).astype(np.int64)
    y_c = np.bincount(inv.ravel(), weights=pos, minlength=uk.size).astype(np.int64)
    return codes[first], nv, n_c, y_c, labels


def _subset(columns, labels, mask, listed, normalize):
    out = {}
    for m, name in enumerate(columns):
        if not listed[m]:
            continue
        row = np.asarray(mask[m, : len(labels[m])])
        if normalize and row.all():
            continue
        out[name] = tuple(_py(v) for v in labels[m][row])
    return out


def _num_samples(num_samples, num_replicates, fn):
    """``num_samples``, or the deprecated ``num_replicates`` (with a ``DeprecationWarning``)."""
    import warnings

    if num_replicates is None:
        return num_samples
    warnings.warn(f"{fn}: num_replicates is deprecated; use num_samples (the library-wide name "
                  "for the number of random draws).", DeprecationWarning, stacklevel=3)
    if num_samples not in (None, 0) and num_samples != num_replicates:
        raise ValueError(
            "num_samples: given together with the deprecated num_replicates; pass only "
            "num_samples.")
    return num_replicates


def _rate_scan(cells, label, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
               num_samples, replicate_chunk, beneficial_label=1, search="auto"):
    if not isinstance(cells, CellStats):
        raise TypeError(f"cells: must be a CellStats; got {type(cells).__name__}.")
    if isinstance(beneficial_label, bool) or beneficial_label not in (0, 1):
        raise ValueError(f"beneficial_label: must be 1 or 0; got {beneficial_label!r}.")
    if beneficial_label == 1:  # the engine scans in the harm orientation (1 = harmful)
        cells = cells.flip()
    codes, nv, n_c, y_c, labels = _encode(cells, label)
    if num_samples and key is None:
        raise ValueError(
            "key: the randomization test draws random replicates; pass a key (or an int seed).")
    key = None if key is None else as_key(key)
    r = scan_cells(codes, nv, n_c, y_c, kind="rate", key=key, penalty=penalty,
                   num_restarts=num_restarts, q_bounds=q_bounds, max_steps=max_steps,
                   p_epsilon=p_epsilon, num_samples=num_samples,
                   replicate_chunk=replicate_chunk, search=search)
    detected = r.score > 0
    subset = _subset(cells.columns, labels, r.mask, r.listed, True) if detected else {}
    size = int(n_c[r.cells].sum()) if detected else 0
    q = r.q if detected else 1.0
    # the subgroup's rows in the whole statistics (both true labels), as the row scans count them
    total = 0
    if detected:
        inside = np.ones(np.asarray(cells.n).shape[0], bool)
        for m, col in enumerate(cells.columns):
            if col in subset:
                inside &= np.asarray(pd.Series(np.asarray(cells.values[m])).isin(
                    list(subset[col])), bool)
        total = int(np.asarray(cells.n, np.int64)[inside].sum())
    obs = float(y_c[r.cells].sum() / size) if size else math.nan
    exp = float(np.clip(y_c.sum() / n_c.sum(), p_epsilon, 1 - p_epsilon)) if size else math.nan
    cap = math.log(q_bounds[1])
    unbounded = bool(detected and abs(math.log(q) - cap) <= 1e-6 * max(1.0, abs(cap)))
    side = "negative" if label == 0 else "positive"
    return ScanResult(
        subset=subset, score=r.score, q=q, size=size, mask=None, converged=r.converged,
        listed=_subset(cells.columns, labels, r.mask, r.listed, False) if detected else {},
        p_value=r.p_value, null_scores=r.null_scores,
        rate=float(y_c.sum() / n_c.sum()) if n_c.sum() else math.nan,
        description=describe_rate_scan(side, int(beneficial_label), subset, total, size, r.score,
                                       q, obs, exp, unbounded, q_bounds[1], r.p_value),
        total_size=total, observed_rate=obs, expected_rate=exp, unbounded=unbounded,
        search=r.search, bins={},
    )


def fpr_scan_cells(
    cells: CellStats,
    *,
    beneficial_label: int = 1,
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: Any = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = 1e-6,
    num_samples: int = 0,
    replicate_chunk: int | None = None,
    num_replicates: int | None = None,
    search: str = "auto",
) -> ScanResult:
    r"""FPR-Scan (:func:`ofijax.scan.fpr_scan`) from cell statistics.

    Labels follow the one orientation of ofijax: ``beneficial_label=1`` (default) means label 1 is
    the beneficial outcome; the cells are flipped into the scan's harm orientation, which then
    scans the harm-label-0 cells with outcome = harmful predictions and null rate p̄_b = their
    overall rate; the subgroup and score equal ``fpr_scan(data, y_true, y_pred, beneficial_label=...)``
    on the rows (same
    ``key``; ``key=None`` means ``jax.random.key(0)``, which only breaks ties of the restarts,
    while a randomization test needs an explicit key). The Bernoulli-null test draws each replicate's cell sums as
    Binomial(n_c, p̄_b), the law of the row-level test's per-row Bernoulli draws summed over the
    cell, but not the same draws: ``p_value = (1 + #{F* ≥ F}) / (R + 1)`` is a Monte Carlo
    estimate of the exact randomization p-value, ``result.p_value_interval`` its 95%
    Clopper-Pearson interval. The row scan (same key) estimates the same exact p-value from other
    draws, so the two differ by Monte Carlo error, not digit for digit: e.g. 0.952 from cells and
    1.0 from rows with 20 replicates (``experiments/notes/cli.md``: 19 and 20 of 20 at or above
    the observed score; intervals [0.751, 0.999] and [0.832, 1], which overlap).
    ``num_samples`` is the number of replicates (0: no test; ``num_replicates`` is its
    deprecated name). ``description`` says the result in the words of the row-level scan's.
    ``search`` as in :func:`ofijax.scan.fpr_scan`: ``"auto"`` (default) scores every subgroup
    when the space is small enough (the global optimum, as the row scan finds it), else
    coordinate ascent; ``"exhaustive"`` or ``"coordinate_ascent"`` force one. The result is the
    :class:`ofijax.scan.ScanResult` of every scan (``mask`` None: no rows); ``result.certified``
    says whether the optimum is the global one (exhaustive) or a local one.

    Examples:
      >>> import numpy as np
      >>> cs = CellStats(("g",), (np.array(["a", "b"]),), np.array([0, 0], np.int8),
      ...                np.array([100, 100]), np.array([88, 10]))
      >>> r = fpr_scan_cells(cs, beneficial_label=0)
      >>> r.subset, r.size, round(r.score, 3), r.certified
      ({'g': ('a',)}, 100, 34.062, True)
      >>> print(r.description)  # doctest: +NORMALIZE_WHITESPACE
      FPR-Scan: among rows whose true outcome is beneficial (y_true = 0), those with g in {a} are denied the benefit (y_pred = 1) more often than expected — predicted harmful at rate 0.880 vs expected 0.490: a raised false-negative rate of the beneficial outcome (the IJDI paper's raised false-positive rate of the harmful prediction). Subgroup: 100 rows in all, 100 with true outcome beneficial; odds ×7.63, score 34.06
    """
    num_samples = _num_samples(num_samples, num_replicates, "fpr_scan_cells")
    return _rate_scan(cells, 0, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
                      num_samples, replicate_chunk, beneficial_label, search)


def tpr_scan_cells(
    cells: CellStats,
    *,
    beneficial_label: int = 1,
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: Any = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = 1e-6,
    num_samples: int = 0,
    replicate_chunk: int | None = None,
    num_replicates: int | None = None,
    search: str = "auto",
) -> ScanResult:
    """TPR-Scan (:func:`ofijax.scan.tpr_scan`) from cell statistics: the label-1 cells.

    Arguments as in :func:`fpr_scan_cells`.
    """
    num_samples = _num_samples(num_samples, num_replicates, "tpr_scan_cells")
    return _rate_scan(cells, 1, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
                      num_samples, replicate_chunk, beneficial_label, search)
