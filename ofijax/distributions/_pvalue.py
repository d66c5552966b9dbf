r"""The one OFI p-value engine: P(|OFI*| ≥ |OFI|) under a null, at every n up to 2^31 − 1.

This module owns the public functions (:func:`ofi_pvalue_cms`, :func:`ofi_pvalue`, their checks
and :class:`PValue`), the engine's limits and the rule that routes each pair to a method
(:func:`engine_bounds`); the methods live beside it: per-group log-PMFs of D in
:mod:`._diffpmf`, exact tail sums and windows of huge groups in :mod:`._tails`, the saddlepoint
in :mod:`._saddle`, the uniform null's closed forms and block bracket in :mod:`._uniform_tail`.

Write D = FP − FN for one group (an integer in [−n, n]) and, for a pair, the integer statistic
T = D_i n_j − D_j n_i = OFI · n_i n_j. The two-sided p-value of an observed M = |T| > 0 is

.. math:: p = \sum_x P(D_i = x)\,\big[P(D_j \le \lfloor (x n_j - M)/n_i \rfloor)
          + P(D_j \ge \lceil (x n_j + M)/n_i \rceil)\big]

(ties decided in integers; the floors in exact int64 arithmetic at any n < 2^31). Everything is
a sum of positive terms, kept in **log space** (``np.logaddexp``), so a p-value of 1e-89 (or
1e-1000, returned as 0.0 with its exact ``log_p_value``) keeps its relative accuracy; there is
no FFT and no floor. Every result carries ``error_bound``, a bound on |p̂ − p|/p: 0 where exact.

**Exact** (``method="exact"``, and ``"auto"`` wherever it is cheap):

* per-group log-PMFs of D, O(n), for n ≤ ``EXACT_MAX_N`` (5e6; memory ~ 50 n bytes): the
  uniform null's closed form, the multinomial null's positive three-term recurrence (batched
  over all the pairs of one call, with the same floating-point operations as one at a time). The
  sum runs over the PMFs' bulk (values within e^800 of the mode); the left-out mass is bounded
  and the sum is redone in full unless it exceeds that bound by e^40.
* uniform null, any larger group: closed forms summed over the smaller group's x (O(n_s), for
  n_s ≤ ``UNIFORM_SUM_MAX`` = 2^23; "auto" while the call's Σ n_s stays below it), p = 2 × one
  tail.
* multinomial null, groups above ``EXACT_MAX_N``: exact windows of the PMF when a cell
  probability is 0 (binomial closed forms), errors are rare (n(a + b) ≤ ``SMALL_ERRORS`` = 200:
  a double sum over FN + FP ≤ S_max) or correct predictions are (n c ≤ 200: a mixture over
  C ~ Bin(n, c) of the c = 0 closed forms); the mass outside the window is bounded (``"truncated"``
  with that bound in the rare case it is not negligible against p).

**Saddlepoint** (``method="saddlepoint"``, and ``"auto"`` when the exact work Σ(n_i + n_j) over
distinct pairs exceeds ``AUTO_EXACT_WORK`` = 2e6 or exact is infeasible): multinomial null, the
smaller group s with n_s ≥ ``SADDLE_MIN_N`` (2000), n_s(a + b) ≥ ``SADDLE_MIN_COUNT`` (200) and
n_s c ≥ ``SADDLE_MIN_CORRECT`` (10): its accuracy is governed by these expected counts, not by
the probabilities (a cell probability of 1e-5 is fine); **relative error ≤ SADDLE_REL_ERROR
(2e-3)** in that domain, tested against the exact engine (tests/test_pvalue_scale.py; measured
per regime by experiments/bench_pvalue.py --accuracy). A pair whose smaller group is outside the
domain but whose larger group is inside (e.g. 300 rows against 30 million) sums the smaller
group's exact PMF against the larger group's Lugannani–Rice tails (same bound).

**Bracketed** (uniform null, both groups above 2^23, or "auto" past its budget): a rigorous
block bracket of the closed-form sum, whose relative half-width is returned as ``error_bound``
(≤ ~2e-4).

``"exact"`` beyond the budgets above is refused by a ValueError naming ``method='auto'``.
``"auto"`` answers every pair of group sizes up to 2^31 − 1 under every null. A group of more
than 5e6 rows with few correct predictions under the null (n c ≤ ``SMALL_ERRORS``, where the
saddlepoint, whose lattice then has nearly span 2, is not accurate) takes an exact window of the
mixture over the number correct, C ~ Bin(n, c), of the c = 0 closed forms.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ofijax import _validation as _v

from ._args import null_probs as null_probs
from ._diffpmf import BATCH_FLOATS as _BATCH_FLOATS
from ._diffpmf import log_binomial as _log_binomial  # noqa: F401 (a deprecated alias, see below)
from ._diffpmf import log_diff_pmf as log_diff_pmf
from ._diffpmf import log_diff_pmfs as log_diff_pmfs
from ._diffpmf import running_sum as _running_sum  # noqa: F401 (a deprecated alias, see below)
from ._saddle import log_lower_saddle as _log_lower_saddle  # noqa: F401 (a deprecated alias, see below)
from ._saddle import log_tail_hybrid as _log_tail_hybrid
from ._saddle import log_tail_saddle as log_tail_saddle
from ._tails import DROP_MARGIN as _DROP_MARGIN
from ._tails import SMALL_ERRORS as SMALL_ERRORS
from ._tails import log_tail_exact as log_tail_exact
from ._tails import log_tail_windows as _log_tail_windows
from ._tails import mixture_window as _mixture_window  # noqa: F401 (a deprecated alias, see below)
from ._tails import pmf_window as _huge_pmf_window
from ._uniform_tail import UNIFORM_SUM_MAX as UNIFORM_SUM_MAX
from ._uniform_tail import q_sum as _q_sum  # noqa: F401 (a deprecated alias, see below)
from ._uniform_tail import uniform_cdf as _uniform_cdf  # noqa: F401 (a deprecated alias, see below)
from ._uniform_tail import uniform_log_tail_bracket as _uniform_log_tail_bracket
from ._uniform_tail import uniform_log_tail_sum as _uniform_log_tail_sum

# The names imported with "noqa: F401" are engine pieces that tests and experiments/bench_pvalue.py
# read from this module under their old names: deprecated here for one release (their homes are
# the modules the docstring names).
__all__ = [
    "PValue",
    "SADDLE_MIN_N",
    "SADDLE_REL_ERROR",
    "EXACT_MAX_N",
    "log_diff_pmf",
    "log_diff_pmfs",
    "log_tail_exact",
    "log_tail_saddle",
    "engine",
    "engine_bounds",
    "null_probs",
    "ofi_pvalue",
    "ofi_pvalue_cms",
]

#: Smallest group size where the saddlepoint path is used (its error bound is tested from here).
SADDLE_MIN_N = 2000
#: Stated relative error bound of the saddlepoint p-value (for min(n_i, n_j) ≥ SADDLE_MIN_N).
SADDLE_REL_ERROR = 2e-3
#: Largest group size of the exact engine (memory ~ 50 n bytes; a loop of n steps, batched over
#: distributions). Read at call time, so a test may lower it to reach the windows of huge groups.
EXACT_MAX_N = 5_000_000
#: Largest group size at all (window of the saddlepoint ~ 24 σ* ≈ 24 √n points per pair).
MAX_N = 2**31 - 1
#: "auto" runs everything exactly while Σ (n_i + n_j) over distinct exact pairs stays below this.
AUTO_EXACT_WORK = 2_000_000


class PValue(NamedTuple):
    """p-values of the OFI test, with how they were computed.

    Attributes:
        p_value: float64 (...) two-sided p-values P(|OFI*| ≥ |OFI|) (0.0 only when below 1e-308;
            ``log_p_value`` keeps the digits).
        log_p_value: float64 (...) natural log of the p-value.
        ofi: float64 (...) the observed OFI (the lattice point the p-value refers to).
        method: str (...) array per entry: ``"exact"``, ``"saddlepoint"``, ``"bracketed"``
            (uniform null, both groups > 2^23: the block bracket) or ``"truncated"`` (exact
            windows of huge groups whose left-out mass is not negligible; rare).
        approximate: bool (...) array, True where the p-value is an approximation
            (``error_bound > 0``).
        error_bound: float64 (...) bound on the relative error |p̂ − p| / p of each p-value
            (it holds for ``log_p_value`` too, below 1e-308): 0.0 where exact (float rounding
            only, ~n·1e-16), ``SADDLE_REL_ERROR`` for the saddlepoint, the computed bracket for
            ``"bracketed"``; the field is last (indices 0–4 are the fields above; a full
            unpacking needs six names).
    """

    p_value: np.ndarray
    log_p_value: np.ndarray
    ofi: np.ndarray
    method: np.ndarray
    approximate: np.ndarray
    error_bound: np.ndarray = None  # type: ignore[assignment]


def _pmf_window(n: int, q, scale: float = 1.0):
    """(offset, log P(D = offset + i), log bound of the mass left out) of D = FP − FN, or None.

    Exact (to ~1e-15 relative per value) for: n ≤ EXACT_MAX_N (the full PMF), the uniform null
    excluded (None); above it, the windows of :func:`ofijax.distributions._tails.pmf_window`
    (a zero cell probability, few correct predictions or rare errors). None otherwise. ``scale``
    widens the windows (by that factor; the engine widens them while a p-value is not far above
    the mass they leave out).
    """
    a, b, c = q
    if n <= EXACT_MAX_N:
        return -n, log_diff_pmf(n, (a, b, c)), -math.inf
    return _huge_pmf_window(n, q, scale)


# ------------------------------------------------------------------------------ dispatch

#: Saddlepoint pairs need n_s ≥ SADDLE_MIN_N, n_s(p_FN + p_FP) ≥ SADDLE_MIN_COUNT and
#: n_s(p_TP + p_TN) ≥ SADDLE_MIN_CORRECT for the smaller group s: the error is governed by the
#: expected counts, not by the probabilities. Chosen where the measured error stays inside
#: SADDLE_REL_ERROR (experiments/bench_pvalue.py --accuracy, tests/test_pvalue_scale.py; the
#: measurements outside the domain: experiments/notes/distributions.md).
SADDLE_MIN_COUNT = 200.0
SADDLE_MIN_CORRECT = 10.0
#: Unused by the engine; importable for one more release (deprecated).
SADDLE_MIN_PROB = 0.005
#: Unused by the engine (its floors are exact int64 at any n < 2^31); deprecated like the above.
SADDLE_MAX_NN = 2.0**63
_METHODS = ("auto", "exact", "saddlepoint")
#: Uniform-null pairs whose smaller group is at most this always take the exact closed-form sum
#: (O(n_s), cheap), whatever "auto"'s budget of closed-form work says.
_UNIFORM_ALWAYS_EXACT = 65536
#: Window widening factors tried while a p-value is near the mass its windows leave out.
_WINDOW_SCALES = (1.0, 4.0, 16.0, 64.0, 256.0)
#: Most PMF values the widened windows of one pair may hold (memory ~ 160 MB).
_WINDOW_MAX_POINTS = 20_000_000
#: Left-out mass below this fraction of p is negligible (float64 rounding of the sum).
_NEGLIGIBLE = 1e-15


def _saddle_good(n, probs):
    """Per pair: is the saddlepoint of a group of size n accurate (expected counts large)?"""
    if probs is None:
        return np.zeros(np.shape(n), dtype=bool)
    return ((n >= SADDLE_MIN_N) & (n * (probs[:, 0] + probs[:, 1]) >= SADDLE_MIN_COUNT)
            & (n * probs[:, 2] >= SADDLE_MIN_CORRECT) & (np.min(probs, axis=-1) > 0.0))


def _saddle_ok(n_i, n_j, probs):
    """Both groups' saddlepoints accurate (the smaller group's expected counts decide)."""
    return _saddle_good(np.minimum(n_i, n_j), probs)


def _exact_feasible(n_i, n_j, probs):
    """Per pair: can the engine compute the p-value exactly (within its memory/time budget)?"""
    big = np.maximum(n_i, n_j)
    small = np.minimum(n_i, n_j)
    if probs is None:
        return (big <= EXACT_MAX_N) | (small <= UNIFORM_SUM_MAX)
    ok = big <= EXACT_MAX_N
    rest = np.flatnonzero(~ok)
    for k in rest.tolist():
        q = tuple(probs[k].tolist())
        ok[k] = all(_windowable(int(n), q) for n in (n_i[k], n_j[k]))
    return ok


def _windowable(n: int, q) -> bool:
    a, b, c = q
    return (n <= EXACT_MAX_N or min(a, b, c) <= 0.0 or n * (a + b) <= SMALL_ERRORS
            or n * c <= SMALL_ERRORS)


def engine(m, n_i, n_j, probs, method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """log p-values and the method per pair, for 1-D arrays (see :func:`engine_bounds`)."""
    log_p, used, _ = engine_bounds(m, n_i, n_j, probs, method)
    return log_p, used


def engine_bounds(m, n_i, n_j, probs, method: str = "auto"):
    """log p-values, the method per pair and a relative error bound per pair, for 1-D arrays.

    Args:
        m: int64 (P,) observed |T| = |D_i n_j − D_j n_i| (a multiple of gcd(n_i, n_j)).
        n_i, n_j: int64 (P,) group sizes in [1, 2^31 − 1].
        probs: None (uniform null) or float64 (P, 3): (p_FN, p_FP, p_TP + p_TN) per pair.
        method: ``"auto"``, ``"exact"`` or ``"saddlepoint"``.

    Returns (log_p, method, error_bound): ``method`` per pair is ``"exact"``,
    ``"saddlepoint"``, ``"bracketed"`` (uniform null, smaller group > UNIFORM_SUM_MAX, or past
    "auto"'s budget of closed-form sums) or ``"truncated"`` (an exact window whose left-out
    mass is not negligible against p); ``error_bound`` is 0.0 for exact values (float rounding
    only, ~n·1e-16) and a bound on |p̂ − p|/p otherwise (at most 1 where it says "truncated").
    """
    m = np.asarray(m, np.int64)
    n_i = np.asarray(n_i, np.int64)
    n_j = np.asarray(n_j, np.int64)
    P = m.shape[0]
    ok = _saddle_ok(n_i, n_j, probs)
    feasible = _exact_feasible(n_i, n_j, probs)
    if method == "exact":
        if not feasible.all():
            k = int(np.flatnonzero(~feasible)[0])
            raise ValueError(
                f"method: the exact OFI p-value needs max(n_i, n_j) ≤ {EXACT_MAX_N:,}"
                + (f" or min(n_i, n_j) ≤ {UNIFORM_SUM_MAX:,} under the uniform null"
                   if probs is None else
                   ", a zero cell probability, rare errors (n(p_FN + p_FP) ≤ "
                   f"{SMALL_ERRORS:g}) or few correct predictions (n(p_TP + p_TN) ≤ "
                   f"{SMALL_ERRORS:g})")
                + f" (memory and time); got n_i = {int(n_i[k]):,}, n_j = {int(n_j[k]):,}. Use "
                "method='auto' (exact where feasible, else an approximation with its relative "
                "error bound in PValue.error_bound)."
            )
        use_saddle = np.zeros(P, dtype=bool)
    elif method == "saddlepoint":
        if not ok.all():
            raise ValueError(
                "method: 'saddlepoint' needs the multinomial null and, for the smaller group s, "
                f"n_s (p_FN + p_FP) ≥ {SADDLE_MIN_COUNT:g} and n_s (p_TP + p_TN) ≥ "
                f"{SADDLE_MIN_CORRECT:g} (every cell probability > 0); "
                "use method='auto' (exact where the saddlepoint is not accurate)."
            )
        use_saddle = ok
    else:
        keys = set(zip(n_i.tolist(), n_j.tolist(),
                       map(tuple, probs.tolist()) if probs is not None else [None] * P))
        work = sum(ni + nj for ni, nj, _ in keys)
        use_saddle = ok & ((work > AUTO_EXACT_WORK) | ~feasible)
    log_p = np.zeros(P)
    bound = np.zeros(P)
    used = np.where(use_saddle, "saddlepoint", "exact").astype(object)
    todo = ~use_saddle & (m > 0)
    # pairs the classic exact engine covers (both groups ≤ EXACT_MAX_N): full PMFs
    classic = todo & (np.maximum(n_i, n_j) <= EXACT_MAX_N)
    if classic.any():
        _exact_classic(np.flatnonzero(classic), m, n_i, n_j, probs, log_p)
    rest = np.flatnonzero(todo & ~classic)
    uniform_work = 0  # "auto": exact closed-form sums while Σ n_s stays ≤ UNIFORM_SUM_MAX
    for k in rest.tolist():
        ni, nj, mk = int(n_i[k]), int(n_j[k]), int(m[k])
        ns, nl = min(ni, nj), max(ni, nj)
        if probs is None:
            uniform_work += ns
            if ns <= _UNIFORM_ALWAYS_EXACT or (ns <= UNIFORM_SUM_MAX
                               and (method == "exact" or uniform_work <= UNIFORM_SUM_MAX)):
                log_p[k] = min(0.0, _uniform_log_tail_sum(mk, ns, nl))
            else:
                lp, bd = _uniform_log_tail_bracket(mk, ns, nl)
                log_p[k], bound[k], used[k] = min(0.0, lp), bd, "bracketed"
            continue
        q = tuple(probs[k].tolist())
        if feasible[k]:
            for scale in _WINDOW_SCALES:  # widen while p is near the left-out mass
                ws, wl = _pmf_window(ns, q, scale), _pmf_window(nl, q, scale)
                args = (ws[1], ws[0], wl[1], wl[0], ns, nl, np.array([mk]))
                vals, bulk_drop = _log_tail_windows(*args)
                val = float(vals[0])
                if bulk_drop > -np.inf and not val - _DROP_MARGIN > bulk_drop:  # redo over the windows
                    val = float(_log_tail_windows(*args, full=True)[0][0])
                drop = float(np.logaddexp(ws[2], wl[2]))
                if not (drop > -np.inf and drop - val > math.log(_NEGLIGIBLE)):
                    break
                if ws[1].size + wl[1].size > _WINDOW_MAX_POINTS:
                    break
            log_p[k] = val
            if drop > -np.inf and drop - val > math.log(_NEGLIGIBLE):  # left-out mass not negligible
                bound[k], used[k] = math.exp(min(0.0, drop - val)), "truncated"
            continue
        # the larger group's saddlepoint is accurate, the smaller's is not: exact PMF of s
        ws = _pmf_window(ns, q)
        if ws is None or not bool(_saddle_good(np.array([nl]), probs[k:k + 1])[0]):
            raise ValueError(
                f"null: no accurate p-value for n_i = {ni:,}, n_j = {nj:,} with cell probabilities "
                f"(p_FN, p_FP, p_TP + p_TN) = {q} (fewer than {SADDLE_MIN_CORRECT:g} expected "
                "correct predictions in a group of more than 5,000,000): pass a reference CM as "
                "null, or test this pair by Monte Carlo (audit(..., method='monte_carlo'))."
            )
        val = float(_log_tail_hybrid(ws[1], ws[0], np.array([mk]), ns, nl, *q)[0])
        log_p[k], used[k] = val, "saddlepoint"
        bound[k] = SADDLE_REL_ERROR + (math.exp(min(0.0, ws[2] - val)) if ws[2] > -np.inf else 0.0)
    s = use_saddle & (m > 0)
    if s.any():
        pr = probs[s]
        log_p[s] = log_tail_saddle(m[s].astype(np.float64), n_i[s], n_j[s],
                                   pr[:, 0], pr[:, 1], pr[:, 2])
    bound[s] = SADDLE_REL_ERROR
    used = np.asarray(used.tolist() if P else [], dtype=str).reshape(P)
    return log_p, used, bound


def _exact_classic(idx, m, n_i, n_j, probs, log_p) -> None:
    """The exact engine for groups ≤ EXACT_MAX_N: full PMFs built in batches, truncated sums."""
    groups: dict = {}
    for k in idx.tolist():
        pk = None if probs is None else tuple(probs[k].tolist())
        groups.setdefault((int(n_i[k]), int(n_j[k]), pk), []).append(k)
    items = list(groups.items())
    start = 0
    while start < len(items):  # blocks of pairs: PMFs built together, bounded memory
        stop, size = start, 0
        while stop < len(items) and (stop == start or size < 4 * _BATCH_FLOATS):
            size += 2 * (items[stop][0][0] + items[stop][0][1]) + 2
            stop += 1
        blk = items[start:stop]
        dists = list(dict.fromkeys(d for (ni, nj, pk), _ in blk for d in ((ni, pk), (nj, pk))))
        pmfs = dict(zip(dists, log_diff_pmfs([d[0] for d in dists],
                                             None if probs is None else [d[1] for d in dists])))
        for (ni, nj, pk), ks in blk:
            log_p[ks] = log_tail_exact(pmfs[(ni, pk)], pmfs[(nj, pk)], ni, nj, m[ks])
        start = stop

# ------------------------------------------------------------------------------ public API


#: Observed OFIs within this of a lattice point k/lcm(n_i, n_j) are snapped to it (float32 OFIs
#: of real counts are within ~1e-7 of theirs; distinct lattice points of n < 2^31 differ by more).
_SNAP = 1e-6


def _check_sizes(x, name: str) -> np.ndarray:
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{name}: must be a positive integer group size; got a bool.")
    arr = _v.as_numpy(x, name)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name}: must be positive integer group sizes; got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        _v.check_finite(arr, name)
        if np.any(arr != np.round(arr)):
            raise ValueError(f"{name}: group sizes must be whole numbers; got {arr.tolist()!r}.")
    if arr.size and (arr.min() < 1 or arr.max() > MAX_N):
        raise ValueError(
            f"{name}: group sizes must lie in [1, 2**31 − 1]; got min {arr.min()}, max {arr.max()}."
        )
    return arr.astype(np.int64)




def _null_abc(null, name: str = "null", pooled=None):
    """(..., 3) float64 (p_FN, p_FP, p_TP + p_TN) of :func:`null_probs`, or None."""
    p = null_probs(null, name, pooled)
    if p is None:
        return None
    return np.stack([p[..., 1], p[..., 2], p[..., 0] + p[..., 3]], -1)


def _finish(log_p, ofi, used, shape, bound=None) -> PValue:
    log_p = np.minimum(log_p, 0.0).reshape(shape)
    used = used.reshape(shape)
    bound = (np.where(used == "exact", 0.0, SADDLE_REL_ERROR) if bound is None
             else np.asarray(bound, np.float64)).reshape(shape)
    return PValue(np.exp(log_p), log_p, np.asarray(ofi, np.float64).reshape(shape), used,
                  bound > 0.0, bound)


def ofi_pvalue_cms(cm_i, cm_j, *, null="pooled", method: str = "auto") -> PValue:
    r"""Two-sided OFI p-values of many pairs of confusion matrices at once (the one engine).

    .. math:: p = P_{H_0}\big(|B^*_i - B^*_j| \ge |B_i - B_j|\big), \quad B = (FP - FN)/n

    with the two groups' matrices drawn independently under the null; ties are decided in
    integers (|D_i n_j − D_j n_i| ≥ M). Broadcasts over leading axes.

    Args:
        cm_i, cm_j: (..., 4) integer counts TP, FN, FP, TN (n ≥ 1 each).
        null: ``"pooled"`` (Multinomial(n, p) with p = (cm_i + cm_j)/(n_i + n_j) per pair),
            ``"uniform"`` (uniform over M(n)), or a reference CM (..., 4) (Multinomial(n, cm/Σcm)).
        method: ``"auto"`` (default: exact where cheap, see below; never refuses a group size
            up to 2^31 − 1), ``"exact"`` (log-space exact sums; a ValueError naming
            ``method='auto'`` beyond its budget: multinomial null with a group above 5e6 rows,
            unless a cell probability is 0 or errors are rare; uniform null with both groups
            above 2^23 rows) or ``"saddlepoint"`` (multinomial null, smaller group s with
            n_s ≥ 2000, n_s(p_FN + p_FP) ≥ 200 and n_s(p_TP + p_TN) ≥ 10; relative error ≤ 2e-3).
            ``"auto"`` is exact unless the exact work Σ(n_i + n_j) over distinct pairs exceeds
            2e6 or a group is too large for it; then the saddlepoint where it is accurate, exact
            sums/windows elsewhere, and the uniform null's block bracket (a rigorous bound, ~1e-4)
            when both groups exceed 2^23 rows.

    Returns:
        :class:`PValue` (p_value, log_p_value, ofi, method, approximate, error_bound), each of
        shape (...); ``error_bound`` bounds |p̂ − p|/p (0.0 where exact).

    Example:
        >>> from ofijax.distributions import ofi_pvalue_cms
        >>> r = ofi_pvalue_cms([0, 1, 0, 5], [0, 7, 0, 11], null="uniform")
        >>> round(float(r.p_value), 3), str(r.method), bool(r.approximate)
        (0.716, 'exact', False)
        >>> big = ofi_pvalue_cms([10**9, 2 * 10**8, 3 * 10**8, 5 * 10**8],
        ...                      [10**9, 2 * 10**8 + 150_000, 3 * 10**8, 5 * 10**8])
        >>> str(big.method), bool(big.approximate), float(big.error_bound)
        ('saddlepoint', True, 0.002)
        >>> round(float(big.log_p_value), 1)  # p ≈ 5.6e-7 at 2e9 rows per group
        -14.4
    """
    _v.check_choice(method, "method", _METHODS)
    ci = _v.check_counts(cm_i, "cm_i")
    cj = _v.check_counts(cm_j, "cm_j")
    for name, c in (("cm_i", ci), ("cm_j", cj)):
        if c.ndim < 1 or c.shape[-1] != 4:
            raise ValueError(f"{name}: last axis must have length 4 (TP, FN, FP, TN); got {c.shape}.")
        if c.size and c.sum(-1).min() <= 0:
            raise ValueError(f"{name}: a group has n = 0; every group needs at least one row.")
        if c.size and c.max() > MAX_N:
            raise ValueError(f"{name}: counts above 2**31 − 1 are not supported; got {c.max():.0f}.")
    abc = None if isinstance(null, str) else _null_abc(null, "null")
    shapes = [ci.shape[:-1], cj.shape[:-1]] + ([] if abc is None else [abc.shape[:-1]])
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as exc:
        raise ValueError(f"cm_j: the shapes of cm_i, cm_j (and null) do not broadcast: {shapes}.") from exc
    ci = np.broadcast_to(ci, shape + (4,)).astype(np.int64).reshape(-1, 4)
    cj = np.broadcast_to(cj, shape + (4,)).astype(np.int64).reshape(-1, 4)
    if isinstance(null, str):
        abc = _null_abc(null, "null", pooled=ci + cj)
    else:
        abc = np.ascontiguousarray(np.broadcast_to(abc, shape + (3,)).reshape(-1, 3))
    n_i, n_j = ci.sum(-1), cj.sum(-1)
    d_i, d_j = ci[:, 2] - ci[:, 1], cj[:, 2] - cj[:, 1]
    m = np.abs(d_i * n_j - d_j * n_i)
    log_p, used, bound = engine_bounds(m, n_i, n_j, abc, method)
    return _finish(log_p, d_i / n_i - d_j / n_j, used, shape, bound)


def ofi_pvalue(ofi_observed, n_i, n_j, *, null="uniform", method: str = "auto"):
    """Two-sided p-value P(|OFI*| ≥ |observed|) under the null, for arrays (broadcasting).

    ``null`` is ``"uniform"`` (both groups uniform on M(n)) or a reference CM (..., 4) giving
    Multinomial(n, cm / Σ cm) for both groups. Observed values within 1e-6 of the lattice
    1/lcm(n_i, n_j) are snapped to it, so that OFIs computed in float32 or float64 from real
    counts hit their support point; other values are rounded up (P(|OFI*| ≥ value)). Pass the
    counts to :func:`ofi_pvalue_cms` to avoid floating point altogether.
    |OFI| ≤ 2 always, so |ofi_observed| > 2 is refused (it cannot come from two matrices). The
    engine is exact in log space (relative error ~1e-12 however small p is; no FFT) where that is
    cheap and otherwise approximate with a stated relative error bound; ``method`` is ``"auto"``
    | ``"exact"`` | ``"saddlepoint"`` as in :func:`ofi_pvalue_cms` (use that function, or
    ``log_p_value``, for p below 1e-308 and for the per-entry method flags and error bounds);
    group sizes up to 2^31 − 1. Returns a float for scalar inputs, else float64 arrays.

    Example:
        >>> from ofijax.distributions import ofi_pvalue
        >>> ofi_pvalue(0.0, 1, 1), ofi_pvalue(2.0, 1, 1), round(ofi_pvalue(1.0, 1, 1), 4)
        (1.0, 0.125, 0.625)
        >>> ofi_pvalue([0.5, 1.0], 2, [2, 4]).round(4).tolist()
        [0.74, 0.2286]
    """
    return _ofi_pvalue_result(ofi_observed, n_i, n_j, null=null, method=method, scalar=True)


def _ofi_pvalue_result(ofi_observed, n_i, n_j, *, null, method, scalar=False):
    _v.check_choice(method, "method", _METHODS)
    obs = _v.as_numpy(ofi_observed, "ofi_observed")
    if obs.dtype.kind not in "biuf":
        raise ValueError(f"ofi_observed: must be numeric OFI values; got dtype {obs.dtype}.")
    obs = obs.astype(np.float64)
    _v.check_finite(obs, "ofi_observed")
    if obs.size and np.abs(obs).max() > 2.0 + 1e-12:
        raise ValueError(
            f"ofi_observed: |OFI| ≤ 2 for any two confusion matrices; got {np.abs(obs).max():.6g}. "
            "Pass OFI = B_i − B_j (not a percentage or a scaled value)."
        )
    ni, nj = _check_sizes(n_i, "n_i"), _check_sizes(n_j, "n_j")
    abc = _null_abc(null, "null")
    shapes = [obs.shape, ni.shape, nj.shape] + ([] if abc is None else [abc.shape[:-1]])
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as exc:
        raise ValueError(
            f"n_j: the shapes of ofi_observed, n_i, n_j (and null) do not broadcast: {shapes}."
        ) from exc
    obs = np.broadcast_to(obs, shape).reshape(-1)
    ni = np.broadcast_to(ni, shape).reshape(-1)
    nj = np.broadcast_to(nj, shape).reshape(-1)
    if abc is not None:
        abc = np.ascontiguousarray(np.broadcast_to(abc, shape + (3,)).reshape(-1, 3))
    g = np.gcd(ni, nj)
    lcm = (ni // g) * nj
    x = np.abs(obs) * lcm
    r = np.round(x)
    k = np.where(np.abs(x - r) <= _SNAP * lcm, r, np.ceil(x))  # within _SNAP of a lattice point
    # |OFI| ≤ 2: k ≤ 2 lcm, so m = k g ≤ 2 n_i n_j < 2^63 (clipped before the int64 cast)
    k_max = 2.0 * lcm.astype(np.float64)
    m = np.where(k >= k_max, 2 * ni * nj, np.where(k >= k_max, 0.0, k).astype(np.int64) * g)
    log_p, used, bound = engine_bounds(m, ni, nj, abc, method)
    res = _finish(log_p, obs, used, shape, bound)
    if scalar:
        return float(res.p_value) if res.p_value.ndim == 0 else res.p_value
    return res
