"""FPR-/TPR-Scan from cell statistics (:func:`rate_scan_cells`): counts in, the row scans' result out.

Owns the checks of cell statistics (one entry per occupied attribute values and true label), their
merge into the scanned class's cells, and the :class:`~ofijax.scan.ScanResult` (subgroup, sizes,
rates, ``top``, description) built from :func:`~._cells.scan_cells`' output, so that counts and
rows give the same answer.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._validation import check_choice
from ._cells import scan_cells
from ._checks import (
    DEFAULT_P_EPSILON,
    DEFAULT_Q_BOUNDS,
    check_beneficial_label,
    check_random_options,
    check_scan_options,
)
from ._encode import encode_data
from ._result import ScanResult, cap_reached, subset_dict
from ._sides import Side
from ._words import describe_side

__all__ = ["rate_scan_cells"]


def _cell_table(columns, values, label, n, positives, b):
    """The entries of cell statistics as a frame (harm orientation: ``harm`` = true outcome
    harmful, ``pred`` = harmful predictions), checked."""
    columns = list(columns)
    if len(values) != len(columns) or not columns:
        raise ValueError("cells: give one array of values per attribute column (at least one).")
    n = np.asarray(n)
    if n.dtype.kind not in "iu" or np.any(n < 0):
        raise ValueError("cells: n must hold non-negative integer row counts.")
    n = n.astype(np.int64)
    pos = np.asarray(positives)
    if pos.dtype.kind not in "iu" or pos.shape != n.shape or np.any((pos < 0) | (pos > n)):
        raise ValueError("cells: positives must be integer counts with 0 ≤ positives ≤ n.")
    lab = np.asarray(label).astype(np.int64)
    if lab.shape != n.shape or not np.isin(lab, (0, 1)).all():
        raise ValueError("cells: label must be 0/1, one per entry.")
    frame = pd.DataFrame({c: np.asarray(v, dtype=object) for c, v in zip(columns, values)})
    if any(len(frame[c]) != n.size for c in columns):
        raise ValueError("cells: every values array needs one entry per cell.")
    pos = pos.astype(np.int64)
    harm = (1 - lab) if b == 1 else lab
    pred = (n - pos) if b == 1 else pos
    return frame, harm, n, pred


def rate_scan_cells(
    key,
    columns,
    values,
    label,
    n,
    positives,
    *,
    side: str = "negative",
    beneficial_label: int = 1,
    penalty: float = 0.1,
    num_restarts: int = 10,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = DEFAULT_P_EPSILON,
    num_samples: int = 0,
    top_k: int | None = None,
    search: str = "auto",
) -> ScanResult:
    r"""FPR-Scan (``side="negative"``) or TPR-Scan (``"positive"``) from cell statistics, with the
    :class:`ScanResult` (subgroup, score, q, sizes, rates, ``top``, description in the same words)
    that :func:`fpr_scan` / :func:`tpr_scan` give on the rows the statistics count.

    The statistics (e.g. ``ofijax.stats`` ``CellStats``) hold one entry per occupied
    (attribute values, true label): ``values`` (one array per column), ``label`` (0/1 in the
    data's orientation, ``beneficial_label`` says which is beneficial), ``n`` rows and
    ``positives`` rows predicted 1. A subgroup is a union of cells, so the scan, its top-k steps
    (earlier finds' cells removed) and the sizes equal the row scans' (same ``key``); the
    randomization test draws each cell's null outcome sum as Binomial(n_c, p̄_b), so p-values
    agree with the row scans' in distribution, not draw for draw. ``search`` as in
    :func:`fpr_scan` (``"auto"``: exhaustive on the same spaces). ``mask`` and ``p_scan`` are
    None (no rows). ``key`` (a PRNG key or int seed, required) breaks the restarts' ties as the
    row scans' ``key`` does (``0`` there is their default) and draws the replicates.

    Examples:
      >>> import numpy as np
      >>> r = rate_scan_cells(0, ["g"], [np.array(["a", "b"])], np.array([1, 1]),
      ...                     np.array([100, 100]), np.array([12, 90]))
      >>> r.subset, r.size, r.total_size, round(r.score, 3)
      ({'g': ('a',)}, 100, 100, 34.062)
    """
    check_choice(side, "side", ("negative", "positive"))
    b = check_beneficial_label(beneficial_label)
    opts = check_scan_options(penalty=penalty, q_bounds=q_bounds, num_restarts=num_restarts,
                              max_steps=max_steps, p_epsilon=p_epsilon, top_k=top_k)
    if key is None:
        raise TypeError("key: required; pass a PRNG key or an int seed (0: the row scans' "
                        "default).")
    rnd = check_random_options(key=key, num_samples=num_samples, num_replicates=None,
                               null="bernoulli", replicate_chunk=None)
    frame, harm, n_all, pred = _cell_table(columns, values, label, n, positives, b)
    want = 0 if side == "negative" else 1
    sel = (harm == want) & (n_all > 0)
    if not sel.any():
        true = b if side == "negative" else 1 - b
        raise ValueError(
            f"side: side={side!r} scans the rows whose true outcome is "
            f"{'beneficial' if side == 'negative' else 'harmful'} (label {true}), and there "
            "are none; scan the other side or check the labels and beneficial_label.")
    enc = encode_data(frame[sel].reset_index(drop=True), max_values=None)
    nv = np.array([len(lab) for lab in enc.labels], np.int64)
    flat = np.zeros(int(sel.sum()), np.int64)
    for j in range(enc.codes.shape[1]):
        flat = flat * nv[j] + enc.codes[:, j]
    uk, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    n_c = np.bincount(inv.ravel(), weights=n_all[sel], minlength=uk.size).astype(np.int64)
    y_c = np.bincount(inv.ravel(), weights=pred[sel], minlength=uk.size).astype(np.int64)
    codes = enc.codes[first]
    r = scan_cells(codes, nv, n_c, y_c, kind="rate", key=rnd.key, penalty=opts.penalty,
                   num_restarts=opts.num_restarts, q_bounds=opts.q_bounds,
                   max_steps=opts.max_steps, p_epsilon=opts.p_epsilon,
                   num_samples=rnd.num_samples, top_k=opts.top_k, search=search)
    info = Side(None, enc, None, None, int(n_all.sum()), frame, None, side, b)
    eps, qb = opts.p_epsilon, opts.q_bounds
    results, earlier = [], np.zeros(n_all.size, bool)
    left_n, left_y = n_c.copy(), y_c.copy()
    uniform = y_c.sum() == 0 or y_c.sum() == n_c.sum()
    for j, f in enumerate(r.top or (r,)):
        detected = f.score > 0
        subset = subset_dict(enc, f.mask, f.listed, normalize=True) if detected else {}
        inside = np.ones(n_all.size, bool)
        for col, vals in subset.items():
            inside &= np.asarray(frame[col].isin(list(vals)), bool)
        inside &= ~earlier & detected
        size = int(left_n[f.cells].sum()) if detected else 0
        pbar = left_y.sum() / max(left_n.sum(), 1)
        obs = float(left_y[f.cells].sum() / size) if size else math.nan
        exp = float(np.clip(np.full(size, pbar), eps, 1 - eps).mean()) if size else math.nan
        q = f.q if detected else 1.0
        unbounded = bool(detected and cap_reached(math.log(q), qb, "positive"))
        total = int(n_all[inside].sum())
        p_val = f.p_value
        results.append(ScanResult(
            subset=subset, score=float(f.score) if detected else 0.0, q=q, size=size, mask=None,
            converged=True if uniform else bool(f.converged),
            listed=subset_dict(enc, f.mask, f.listed, normalize=False) if detected else {},
            p_value=p_val, null_scores=f.null_scores, total_size=total,
            description=describe_side(info, subset, total, size, float(f.score) if detected else 0.0,
                                  q, obs, exp, unbounded, qb[1], p_val, "rate", 0.0, j),
            observed_rate=obs, expected_rate=exp, unbounded=unbounded,
            search=f.search, bins={}, rate=float(y_c.sum() / n_c.sum())))
        if detected:
            earlier |= inside
            left_n = np.where(f.cells, 0, left_n)
            left_y = np.where(f.cells, 0, left_y)
    first_res = results[0]
    return first_res._replace(top=tuple(results)) if opts.top_k is not None else first_res
