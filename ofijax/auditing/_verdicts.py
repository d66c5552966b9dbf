r"""Verdicts of an audit in plain words: the minimum-evidence rule, multiplicity, the reading.

The OFI paper's reading (§2.3, §4), with one rule added for small groups:

* **too small to judge**: a group of the pair has fewer than :func:`min_group_size` people;
* **algorithmic bias**: OFI(i, j) = B_i − B_j significantly ≠ 0 (adjusted p < α); the group
  with the lower B receives less unjustified benefit: the model is biased against it;
* **selection-rate disparity**: the selection rates fail the four-fifths rule (the impact ratio,
  lower rate over higher, is below 4/5) and OFI is not significant: the groups are selected at
  different rates, and there is no significant evidence at this sample size that the model's
  errors cause it (which is not proof that they do not; a gap from different base rates reads
  the same way). Its old name "systemic disparity" maps to it through :data:`VERDICT_RENAMES`;
* **no evidence**: neither.

**The minimum-evidence rule.** Under the uniform null each of the C(n + 3, 3) confusion matrices
of a group of n people is equally likely, and only two of them (every person wrongly given, or
wrongly denied, the benefit) reach the most extreme B = ±1. So no outcome of a group of n people
can be significant at level α on its own unless 2 / C(n + 3, 3) < α. The smallest such n is the
smallest group we judge (5 at α = 0.05, 9 at α = 0.01); a pair with a smaller group is reported
as "too small to judge": its numbers are shown, no verdict is given.

:func:`verdict_codes` is the rule itself, elementwise over pairs of any shape (used by
:func:`ofijax.audit`, :func:`ofijax.audit_batch` and :func:`pair_verdict`, which words it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ofijax.auditing import _significance as sig

__all__ = ["VERDICTS", "VERDICT_RENAMES", "DETECTABLE_POWER", "adjust_pvalues", "detectable_ofi",
           "format_number", "min_group_size", "pair_verdict", "severity_order", "verdict_codes"]

#: The power at which :func:`detectable_ofi` states the smallest detectable |OFI|.
DETECTABLE_POWER = 0.8

#: The verdicts, most severe first.
VERDICTS = ("algorithmic bias", "selection-rate disparity", "too small to judge", "no evidence")

#: Old verdict strings → the current ones. "systemic disparity" claimed more than was
#: measured: a non-significant OFI is no evidence of algorithmic bias at this sample size, not
#: proof that the gap comes from base rates. Map stored results with ``VERDICT_RENAMES.get(v, v)``.
VERDICT_RENAMES = {"systemic disparity": "selection-rate disparity"}

_CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "no multiplicity correction"}


def min_group_size(alpha: float) -> int:
    """Smallest n whose own outcome could be significant: 2 / C(n + 3, 3) < ``alpha``.

    >>> from ofijax.auditing import min_group_size
    >>> min_group_size(0.05), min_group_size(0.01), min_group_size(0.5)
    (5, 9, 2)
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha: must lie strictly between 0 and 1; got {alpha!r}.")
    n = 1
    while 2.0 / math.comb(n + 3, 3) >= a:
        n += 1
    return n


def verdict_codes(small: Any, significant: Any, four_fifths: Any, ofi: Any) -> tuple[np.ndarray, np.ndarray]:
    """The verdict rule, elementwise over pairs (i, j) of any shape: the one rule behind
    :func:`ofijax.audit`, :func:`ofijax.audit_batch` and :func:`pair_verdict`.

    Returns ``(code, side)``. ``code`` indexes :data:`VERDICTS`: 2 (too small to judge) where
    ``small``; else 0 (algorithmic bias) where ``significant``; else 1 (selection-rate disparity)
    where the four-fifths reading fails (``four_fifths`` = ±1, see :func:`ofijax.four_fifths_pair`);
    else 3 (no evidence). ``side`` names the disadvantaged group: +1 group j, −1 group i, 0 none;
    a bias finding is against the group with the lower B (OFI = B_i − B_j > 0: j), a disparity
    against the group selected less (``four_fifths`` = +1: j).

    >>> from ofijax.auditing._verdicts import verdict_codes
    >>> code, side = verdict_codes([True, False, False, False], [True, True, False, False],
    ...                            [1.0, 0.0, -1.0, 0.0], [0.1, -0.2, 0.0, 0.0])
    >>> code.tolist(), side.tolist()
    ([2, 0, 1, 3], [0, -1, -1, 0])
    """
    small = np.asarray(small, dtype=bool)
    significant = np.asarray(significant, dtype=bool) & ~small
    ff = np.nan_to_num(np.asarray(four_fifths, dtype=np.float64))  # NaN (undefined) reads as a pass
    fails = ~small & ~significant & (ff != 0)
    code = np.where(small, 2, np.where(significant, 0, np.where(fails, 1, 3)))
    bias_side = np.where(np.asarray(ofi, dtype=np.float64) > 0, 1, -1)
    side = np.where(significant, bias_side, np.where(fails, np.sign(ff), 0)).astype(np.int64)
    return code, side


def detectable_ofi(cm_i: Any, cm_j: Any, alpha: float, *, null: str = "pooled",
                   power: float = DETECTABLE_POWER) -> np.ndarray:
    r"""The smallest |OFI| a two-sided level-``alpha`` test of OFI(i, j) = 0 detects with ``power``
    (normal approximation), at these group sizes.

    δ = (z_{1−α/2} + z_{power}) · σ₀, with σ₀ the sd of OFI = B_i − B_j under the null:

    * ``"pooled"``: both groups' cells drawn with the pooled probabilities p = (cm_i + cm_j)/(n_i + n_j);
      Var(B) = [(p_FP + p_FN) − (p_FP − p_FN)²]/n per group, σ₀² = that bracket · (1/n_i + 1/n_j);
    * ``"uniform"``: every confusion matrix of M(n) equally likely, Var(B) = (n + 4)/(10 n)
      (OFI paper, Cor. D.4 corrected), σ₀² = Var(B_i) + Var(B_j).

    The alternative keeps σ₀ (a local alternative); capped at 2, the range of OFI. Batched over
    the leading axes; float64.

    >>> from ofijax.auditing._verdicts import detectable_ofi
    >>> round(float(detectable_ofi([40, 10, 10, 40], [40, 10, 10, 40], 0.05)), 4)
    0.1772
    """
    from statistics import NormalDist

    ci = np.asarray(cm_i, dtype=np.float64)
    cj = np.asarray(cm_j, dtype=np.float64)
    ni, nj = ci.sum(-1), cj.sum(-1)
    z = NormalDist().inv_cdf(1.0 - float(alpha) / 2.0) + NormalDist().inv_cdf(float(power))
    with np.errstate(divide="ignore", invalid="ignore"):
        if null == "uniform":
            var = (ni + 4.0) / (10.0 * ni) + (nj + 4.0) / (10.0 * nj)
        else:
            pooled = (ci + cj) / (ni + nj)[..., None]
            pfn, pfp = pooled[..., 1], pooled[..., 2]
            var = ((pfp + pfn) - (pfp - pfn) ** 2) * (1.0 / ni + 1.0 / nj)
        return np.minimum(z * np.sqrt(var), 2.0)


def adjust_pvalues(p_values: Any, correction: str) -> np.ndarray:
    """Adjust families of p-values along the last axis (each leading index one family of m):
    ``"holm"`` (step-down, default of :func:`ofijax.audit`; :func:`ofijax.auditing.holm`),
    ``"bonferroni"`` (min(m p, 1)) or ``"none"``; NaN stays NaN. The within-candidate correction
    of :func:`ofijax.audit` (one family) and :func:`ofijax.audit_batch` (one per candidate).

    >>> from ofijax.auditing import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bonferroni").round(2).tolist()
    [0.03, 0.12, 0.09]
    >>> adjust_pvalues([[0.01, 0.04, 0.03], [0.5, 0.01, 0.2]], "holm").round(2).tolist()
    [[0.03, 0.06, 0.06], [0.5, 0.03, 0.4]]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim == 0:
        p = p.reshape(1)
    if correction == "holm":
        return np.asarray(sig.holm(p), dtype=np.float64)
    if correction == "bonferroni":
        return np.minimum(p * p.shape[-1], 1.0)
    if correction == "none":
        return p.copy()
    raise ValueError(f"correction: must be one of 'holm', 'bonferroni', 'none'; got {correction!r}.")


def severity_order(verdicts: Any, p_adjusted: Any, ofi: Any, di: Any) -> np.ndarray:
    """Indices that sort findings most severe first: verdict rank, then the smaller adjusted p
    (algorithmic bias; ties: larger |OFI|) or the larger |log DI| (systemic disparity)."""
    rank = {v: r for r, v in enumerate(VERDICTS)}
    r = np.asarray([rank.get(v, len(VERDICTS)) for v in verdicts])
    p = np.nan_to_num(np.asarray(p_adjusted, dtype=np.float64), nan=1.0)
    o = np.abs(np.nan_to_num(np.asarray(ofi, dtype=np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.abs(np.nan_to_num(np.log(np.asarray(di, dtype=np.float64)), nan=0.0, posinf=50, neginf=50))
    v_ = np.asarray(list(verdicts), dtype=object)
    first = np.where(v_ == VERDICTS[1], -d, p)  # bias: smallest p; disparity: largest gap
    return np.lexsort((-d, -o, first, r))


def format_number(x: Any, digits: int = 3, sign: bool = False, undefined: str = "undefined") -> str:
    """``x`` with ``digits`` decimals (``sign``: always signed); a value that rounds to zero prints
    ``"0.000"`` (never ``"-0.000"``); NaN/None print ``undefined``.

    >>> from ofijax.auditing._verdicts import format_number
    >>> format_number(-1e-9, 2, sign=True), format_number(-0.0, 2), format_number(0.125, 2, True)
    ('0.00', '0.00', '+0.12')
    """
    if x is None:
        return undefined
    x = float(x)
    if math.isnan(x):
        return undefined
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    if float(text) == 0.0:
        return f"{0.0:.{digits}f}"
    return text


def _f(x: float, digits: int = 3, sign: bool = False) -> str:
    return format_number(x, digits, sign)


def pair_verdict(
    gi: str,
    gj: str,
    *,
    n_i: float,
    n_j: float,
    b_i: float,
    b_j: float,
    mb_i: float,
    mb_j: float,
    ofi: float,
    di_ij: float,
    di_ji: float,
    four_fifths: float,
    significant: bool,
    evidence: str,
    min_size: int,
    detectable: float | None = None,
    detectable_how: str = "",
) -> dict:
    """The verdict of one pair and its reading in plain words.

    Args:
        gi, gj: the group labels.
        n_i, n_j: group sizes.
        b_i, b_j: selection rates (share given the beneficial prediction).
        mb_i, mb_j: the groups' B = (FP − FN)/n.
        ofi: B_i − B_j.
        di_ij, di_ji: DI of i relative to j and of j relative to i.
        four_fifths: the four-fifths reading of the pair (:func:`ofijax.four_fifths_pair`, from
            the symmetric impact ratio: 1: j selected less, −1: i selected less, 0: pass, NaN:
            undefined, i.e. nobody selected in either group).
        significant: whether the test (or, without p-values, the interval) finds OFI ≠ 0.
        evidence: the numbers behind it, e.g. ``"p = 0.003, Holm-adjusted; exact test, pooled null"``.
        min_size: the minimum-evidence group size.
        detectable: the smallest |OFI| the pair's test detects with 80% power at its unadjusted
            alpha (:func:`detectable_ofi`); a verdict without significance states it.
        detectable_how: how ``detectable`` was computed, in words (shown in brackets).

    Returns:
        dict with ``verdict``, ``favoured``, ``disadvantaged`` (None when there is none) and
        ``reading`` (one paragraph).
    """
    small = [(g, n) for g, n in ((gi, n_i), (gj, n_j)) if n < min_size]
    code, side = verdict_codes(bool(small), significant, four_fifths, ofi)
    code = int(code)
    could = ""
    if detectable is not None and not math.isnan(detectable):
        could = (f"; no significant algorithmic bias; this test would detect |OFI| >= {detectable:.3f}"
                 + (f" ({detectable_how})" if detectable_how else ""))
    ff_fails = not math.isnan(four_fifths) and four_fifths != 0  # the reading; the verdict is `code`
    if ff_fails:
        lo, hi, blo, bhi, dlo = (gj, gi, b_j, b_i, di_ji) if four_fifths > 0 else (gi, gj, b_i, b_j, di_ij)
        di_text = (f"{lo} is selected at {dlo:.2f}× the rate of {hi} (selection rates {blo:.3f} vs "
                   f"{bhi:.3f}), which fails the four-fifths rule")
    elif math.isnan(four_fifths):
        lo = hi = None
        di_text = ("the impact ratio is undefined (no one in either group is selected), so the four-fifths "
                   "rule cannot be read")
    else:
        lo = hi = None
        di_text = (f"selection rates {b_i:.3f} ({gi}) vs {b_j:.3f} ({gj}): DI = {di_ij:.2f} passes the "
                   "four-fifths rule")
    if code == 2:
        who = " and ".join(f"{g} has only {int(n) if float(n).is_integer() else n} people" for g, n in small)
        text = (f"{gi} vs {gj}: too small to judge — {who} (fewer than {min_size}, the smallest group "
                f"whose outcome could be significant at this alpha). For information only: "
                f"B_{gi} − B_{gj} = {_f(ofi, sign=True)} ({evidence}); {di_text}.")
        return {"verdict": "too small to judge", "favoured": None, "disadvantaged": None, "reading": text}
    if code == 0:
        fav, dis = (gj, gi) if side < 0 else (gi, gj)
        mb_f, mb_d = (mb_i, mb_j) if ofi > 0 else (mb_j, mb_i)
        text = (f"{dis} receives less unjustified benefit than {fav}: B_{dis} − B_{fav} = "
                f"{_f(mb_d - mb_f, sign=True)} (B = {_f(mb_d, sign=True)} vs {_f(mb_f, sign=True)}; "
                f"{evidence}). Algorithmic bias against {dis}: the model's errors favour {fav}.")
        if ff_fails:
            if lo == dis:
                text += f" The selection rates point the same way: {di_text} as well."
            else:
                text += (f" Note: {di_text} as well, in the other direction — a disparity against {lo} "
                         "that OFI attributes to the groups' different base rates, not to the model.")
        else:
            text += f" {di_text[0].upper() + di_text[1:]}."
        return {"verdict": "algorithmic bias", "favoured": fav, "disadvantaged": dis, "reading": text}
    if code == 1:
        text = (f"{gi} vs {gj}: selection-rate disparity against {lo} (DI fails) — {di_text}; no "
                f"significant algorithmic bias: B_{gi} − B_{gj} = {_f(ofi, sign=True)} is not significant "
                f"({evidence}){could.replace('; no significant algorithmic bias', '')}. That is no evidence, "
                "at this sample size, that the model's errors cause the gap (it is not proof that they do "
                "not); different base rates would read the same way.")
        return {"verdict": VERDICTS[1], "favoured": hi, "disadvantaged": lo, "reading": text}
    text = (f"{gi} vs {gj}: no evidence of bias — B_{gi} − B_{gj} = {_f(ofi, sign=True)} is not "
            f"significant ({evidence}){could}; {di_text}.")
    return {"verdict": "no evidence", "favoured": None, "disadvantaged": None, "reading": text}
