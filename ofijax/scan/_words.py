"""The words of an error-rate scan result: FPR-/TPR-/IJDI-Scan's ``description``.

Owns the one wording of :attr:`~ofijax.scan.ScanResult.description` for the row scans
(:mod:`._ijdi`), the scans from cell statistics (:mod:`._ratecells`, ``ofijax.stats``) and
:func:`describe_rate_scan`: which rate is raised for which rows, both rates, both sizes, the
p-value, the q-cap warning and the threshold note.
"""

from __future__ import annotations

import math

from ._result import UNBOUNDED_TEXT, subset_text
from ._sides import Side

__all__ = ["describe_rate_scan", "describe_side", "scan_words"]

_SIDE_TEXT = {
    "negative": ("beneficial", "denied the benefit", "more",
                 "a raised false-negative rate of the beneficial outcome (the IJDI paper's raised "
                 "false-positive rate of the harmful prediction)"),
    "positive": ("harmful", "given the benefit", "less",
                 "a raised true-positive rate of the harmful outcome, i.e. a lowered "
                 "false-positive rate of the beneficial outcome"),
}


def describe_side(side: Side, subset, total, size, score, q, obs, exp, unbounded, cap, p_val,
              kind, lam, rank=0):
    return scan_words(side.side, side.beneficial_label, side.note, subset, total, size, score, q, obs,
                  exp, unbounded, cap, p_val, kind, lam, rank)


def describe_rate_scan(side: str, beneficial_label: int, subset: dict, total: int, size: int,
                       score: float, q: float, observed_rate: float, expected_rate: float,
                       unbounded: bool, q_cap: float, p_value: float = math.nan) -> str:
    """The words of an FPR-/TPR-Scan result (:attr:`ScanResult.description`), from its numbers:
    the one wording of the row scans and of the scans from statistics (``ofijax.stats``).

    ``side``: ``"negative"`` (FPR-Scan) or ``"positive"`` (TPR-Scan); ``total``: the subgroup's
    rows in all, ``size``: those scanned; ``q_cap``: the upper q bound; ``p_value``: NaN without a
    randomization test.

    Example:
        >>> print(describe_rate_scan("negative", 1, {"g": ("a",)}, 120, 100, 34.06, 7.63, 0.88,
        ...                          0.49, False, 1e6))  # doctest: +NORMALIZE_WHITESPACE
        FPR-Scan: among rows whose true outcome is beneficial (y_true = 1), those with g in {a}
        are denied the benefit (y_pred = 0) more often than expected — predicted harmful at rate
        0.880 vs expected 0.490: a raised false-negative rate of the beneficial outcome (the IJDI
        paper's raised false-positive rate of the harmful prediction). Subgroup: 120 rows in all,
        100 with true outcome beneficial; odds ×7.63, score 34.06
    """
    if side not in _SIDE_TEXT:
        raise ValueError(f"side: must be 'negative' or 'positive'; got {side!r}.")
    return scan_words(side, int(beneficial_label), None, subset, total, size, score, q, observed_rate,
                  expected_rate, unbounded, q_cap, p_value, "rate", 0.0)


def scan_words(side_name, b, side_note, subset, total, size, score, q, obs, exp, unbounded, cap,
           p_val, kind, lam, rank=0):
    truth, verb, how, rate = _SIDE_TEXT[side_name]
    t_label = b if side_name == "negative" else 1 - b
    name = {"rate": "FPR-Scan" if side_name == "negative" else "TPR-Scan",
            "ijdi": f"IJDI-Scan (lambda = {lam:g})"}[kind]
    note = f"; {side_note}" if side_note else ""
    if not score > 0:
        return (f"{name}: no subgroup detected among the rows whose true outcome is {truth} "
                f"(y_true = {t_label}){note}")
    later = f" (not in the {rank} earlier find{'s' if rank > 1 else ''})" if rank else ""
    text = (f"{name}: among rows whose true outcome is {truth} (y_true = {t_label}), those with "
            f"{subset_text(subset)}{later} are {verb} (y_pred = {b if side_name == 'positive' else 1 - b})"
            f" {how} often than expected — predicted harmful at rate {obs:.3f} vs expected "
            f"{exp:.3f}: {rate}. Subgroup: {total} rows in all, {size} with true outcome {truth}; "
            f"odds ×{q:.3g}, score {score:.2f}")
    if kind == "ijdi":
        text += (f"; the expected rate allows lambda = {lam:g} times the subgroup's excess true "
                 "risk of the harmful outcome (after Algorithm 1's adjustments)")
    if not math.isnan(p_val):
        text += f"; p = {p_val:.3g}"
    if unbounded:
        text += "; " + UNBOUNDED_TEXT.format(
            what=f"every row of S with true outcome {truth} is predicted harmful", cap=cap,
            score=score, short="every row positive")
    return text + note
