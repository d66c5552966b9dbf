r"""The one OFI p-value engine: P(|OFI*| ≥ |OFI|) under a null, at every n up to 2^31 − 1.

Write D = FP − FN for one group (an integer in [−n, n]) and, for a pair, the integer statistic
T = D_i n_j − D_j n_i = OFI · n_i n_j. The two-sided p-value of an observed M = |T| > 0 is

.. math:: p = \sum_x P(D_i = x)\,\big[P(D_j \le \lfloor (x n_j - M)/n_i \rfloor)
          + P(D_j \ge \lceil (x n_j + M)/n_i \rceil)\big]

(ties decided in integers; the floors in exact int64 arithmetic at any n < 2^31). Everything is
a sum of positive terms, kept in **log space** (``np.logaddexp``), so a p-value of 1e-89 (or
1e-1000, returned as 0.0 with its exact ``log_p_value``) keeps its relative accuracy; there is
no FFT and no floor. Every result carries ``error_bound``, a bound on |p̂ − p|/p: 0 where exact.

**Exact** (``method="exact"``, and ``"auto"`` wherever it is cheap):

* per-group log-PMFs of D, O(n), for n ≤ ``EXACT_MAX_N`` (5e6; memory ~ 50 n bytes):
  uniform null (every matrix of M(n) equally likely): #\{D = d\} = ⌊(n − |d| + 2)²/4⌋ of N(n);
  Multinomial(n; p) with a = p_FN, b = p_FP, c = p_TP + p_TN: the coefficients t_d of
  (a/z + c + b z)^n satisfy a(n + d + 1) t_{d+1} + c d t_d = b(n − d + 1) t_{d−1}; run downward
  from t_n = b^n for d ≥ 0 (and mirrored for d ≤ 0) on the ratios ρ = t_{d−1}/t_d,
  ρ ← A/ρ + C with A, C > 0, every term is positive; log t is the running sum of log ρ, so no
  underflow. That running sum reaches |n log b|, and a plain one rounds each step at that
  magnitude (a random walk of ~√n ulps: 1.1e-7 relative error in the PMF measured at n = 1.5e5,
  p_FN = p_FP = 7e-5); above n = 4096 it is summed in blocks with compensated offsets (errors
  ≤ 3e-11 against 40-digit mpmath at n = 3e5–2e6; results for n ≤ 4096 are unchanged). c = 0 (and a or b = 0) are binomial closed forms (``scipy.special.gammaln``,
  vectorized). Many distributions (all the pairs of one call) run the recurrence together: one
  loop over the steps, NumPy over the distributions (:func:`log_diff_pmfs`), with the same
  floating-point operations as one at a time, so batching changes no digit. The sum runs over
  the PMFs' bulk (values within e^800 of the mode); the left-out mass is bounded and the sum is
  redone in full unless it exceeds that bound by e^40.
* uniform null, any larger group: the closed forms P(D = x) = ⌊(n − |x| + 2)²/4⌋/N(n) and
  P(D ≤ t) = Q(n + t + 2)/N(n) (t ≤ 0; by symmetry above), Q(s) = Σ_{r ≤ s} ⌊r²/4⌋ =
  ⌊s(s + 2)(2s − 1)/24⌋, summed over the smaller group's x (O(n_s), for n_s ≤
  ``UNIFORM_SUM_MAX`` = 2^23; "auto" while the call's Σ n_s stays below it), p = 2 × one tail.
* multinomial null, groups above ``EXACT_MAX_N``: exact windows of the PMF when a cell
  probability is 0 (binomial closed forms), errors are rare (n(a + b) ≤ ``SMALL_ERRORS`` = 200:
  a double sum over FN + FP ≤ S_max) or correct predictions are (n c ≤ 200: a mixture over
  C ~ Bin(n, c) of the c = 0 closed forms); the mass outside the window is bounded (``"truncated"``
  with that bound in the rare case it is not negligible against p).

**Saddlepoint** (``method="saddlepoint"``, and ``"auto"`` when the exact work Σ(n_i + n_j) over
distinct pairs exceeds ``AUTO_EXACT_WORK`` = 2e6 or exact is infeasible): multinomial null, the
smaller group s with n_s ≥ ``SADDLE_MIN_N`` (2000), n_s(a + b) ≥ ``SADDLE_MIN_COUNT`` (200) and
n_s c ≥ ``SADDLE_MIN_CORRECT`` (10): its accuracy is governed by these expected counts, not by
the probabilities (a cell probability of 1e-5 is fine). The same sum over x of the smaller group,
restricted to the window x* ± (6σ* + 4) around the tilted mean of D_s at the two-group saddlepoint
(terms outside are below e⁻¹⁸ of the largest and decay geometrically), with P(D_s = x) from the
closed-form lattice saddlepoint with its first correction term and the tails of D_l from the
Lugannani–Rice formula with Daniels' second continuity correction (both closed form: the saddle
equation of one group is a quadratic in e^s). A sum of positive terms has at most the largest
relative error of its terms, so the bound of the univariate pieces carries over:
**relative error ≤ SADDLE_REL_ERROR (2e-3)** in that domain, tested against the exact engine
(tests/test_pvalue_scale.py; max measured per regime in experiments/RESULTS.md, "p-value
accuracy at every n"). A pair whose smaller group is outside the domain but whose larger group
is inside (e.g. 300 rows against 30 million) sums the smaller group's exact PMF against the
larger group's Lugannani–Rice tails (same bound).

**Bracketed** (uniform null, both groups above 2^23, or "auto" past its budget): the closed-form
sum over blocks whose ends are spaced geometrically (factor 1 + 1e-4) from the points where a
factor's relative slope is large; each factor is monotone on a block, so each block's sum lies
between L·min·min and L·max·max of its end values: a rigorous bracket, whose relative half-width
is returned as ``error_bound`` (≤ ~2e-4; measured errors ~1e-9).

``"exact"`` beyond the budgets above is refused by a ValueError naming ``method='auto'``.
``"auto"`` answers every pair of group sizes up to 2^31 − 1 under every null. A group of more
than 5e6 rows with few correct predictions under the null (n c ≤ ``SMALL_ERRORS``, where the
saddlepoint, whose lattice then has nearly span 2, is not accurate) takes an exact window of the
mixture over the number correct, C ~ Bin(n, c), of the c = 0 closed forms.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ofijax import _validation as _v


class _LazySpecial:
    """``scipy.special``, imported on first use (~0.3 s that ``import ofijax`` and the audits
    that never reach these functions need not pay)."""

    def __getattr__(self, name):
        from scipy import special

        return getattr(special, name)


_sp = _LazySpecial()

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
#: Largest group size of the exact engine (memory ~ 50 n bytes; a loop of n steps, batched over distributions).
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
            ``"bracketed"``; the field is last, so access by name or by index 0–4 is unchanged (a
            full unpacking now needs six names).
    """

    p_value: np.ndarray
    log_p_value: np.ndarray
    ofi: np.ndarray
    method: np.ndarray
    approximate: np.ndarray
    error_bound: np.ndarray = None  # type: ignore[assignment]


# ------------------------------------------------------------------------------ per-group PMFs


def _log_uniform(n: int) -> np.ndarray:
    r = n - np.abs(np.arange(-n, n + 1, dtype=np.int64))
    counts = ((r + 2) * (r + 2) // 4).astype(np.float64)
    log_total = math.log(n + 1) + math.log(n + 2) + math.log(n + 3) - math.log(6)
    return np.log(counts) - log_total


def _half_safe(n: int, a: float, b: float, c: float) -> np.ndarray:
    """log t_d for d = n, …, 0 by the rescaled three-term recurrence (any c ≥ 0; slow loop)."""
    out = np.empty(n + 1)
    scale = n * math.log(b)
    out[0] = scale
    u1, u2 = 1.0, 0.0  # t_{n−k}, t_{n−k+1} divided by exp(scale)
    log = math.log
    for k in range(n):
        new = (a * (2 * n - k + 1) * u2 + c * (n - k) * u1) / (b * (k + 1))
        if new > 0.0:
            scale += log(new)
            out[k + 1] = scale
            u2, u1 = u1 / new, 1.0
        else:
            out[k + 1] = -math.inf
            u2, u1 = u1, 0.0
    return out


def _ratio_coefs(n, a, b, c, ks):
    """(A_k, C_k) of ρ_{k+1} = A_k/ρ_k + C_k, ρ_k = t_{n−k}/t_{n−k+1} (broadcasting)."""
    den = b * (ks + 1.0)
    return a * (2.0 * n + 1.0 - ks) / den, c * (n - ks) / den


def _finish_half(n: int, b: float, rho: np.ndarray):
    """log t_d, d = n..0, from the ratios (sequential cumulative sum); None if not all > 0, finite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log(rho)
    if n and not (np.all(rho > 0.0) and np.all(np.isfinite(lr))):
        return None
    if n <= _COMP_MIN_N:  # short: one running sum (unchanged results for small groups)
        seq = np.empty(n + 1)
        seq[0] = n * math.log(b)
        seq[1:] = lr
        return np.cumsum(seq)
    return _running_sum(n * math.log(b), lr)


#: Above this n the log-PMF's running sum is blocked and compensated (:func:`_running_sum`).
_COMP_MIN_N = 4096
_COMP_BLOCK = 1024


def _running_sum(start: float, steps: np.ndarray) -> np.ndarray:
    """[start, start + s_0, start + s_0 + s_1, …] with an error of a few ulps of the result.

    A plain running sum whose magnitude reaches |n log b| (~1e6 at n = 1.5e5 with b = 7e-5)
    rounds every step at that magnitude: a random walk of ~√n ulps, measured 1.1e-7 relative
    error in the PMF. Here: running sums within blocks of 1,024 steps (magnitudes ≤ 1,024 max|s|),
    block offsets accumulated with Kahan compensation, one final addition per value."""
    n = steps.size
    pad = (-n) % _COMP_BLOCK
    x = np.concatenate([steps, np.zeros(pad)]).reshape(-1, _COMP_BLOCK)
    inner = np.cumsum(x, axis=1)
    offs = np.empty(inner.shape[0])
    total, comp = start, 0.0
    for r, blk in enumerate(inner[:, -1].tolist()):  # Kahan over the block sums
        offs[r] = total
        y = blk - comp
        t = total + y
        comp = (t - total) - y
        total = t
    out = np.empty(n + 1)
    out[0] = start
    out[1:] = (inner + offs[:, None]).reshape(-1)[:n]
    return out


def _half(n: int, a: float, b: float, c: float) -> np.ndarray:
    """log t_d for d = n, n − 1, …, 0 (coefficients of (a/z + c + b z)^n), a, b, c > 0.

    Ratios ρ_{k+1} = A_k/ρ_k + C_k (positive terms), then log t by a cumulative sum; the same
    floating-point operations as the batched :func:`_half_batch`. Falls back to
    :func:`_half_safe` if a ratio leaves float64.
    """
    ap, cp = _ratio_coefs(float(n), a, b, c, np.arange(n, dtype=np.float64))
    rho = np.empty(n)
    r = math.inf
    for k, (x, y) in enumerate(zip(ap.tolist(), cp.tolist())):
        r = x / r + y
        rho[k] = r
    out = _finish_half(n, b, rho)
    return _half_safe(n, a, b, c) if out is None else out


def _log_binomial(n: int, p: float) -> np.ndarray:
    """log Bin(k; n, p), k = 0..n (float64; ``p`` in (0, 1]: the callers route p = 0 elsewhere).

    log C(n, k) = lgamma(n + 1) − lgamma(k + 1) − lgamma(n − k + 1), vectorized
    (``scipy.special.gammaln``, ~1 ulp each; no Python loop over k).
    """
    return _log_binomial_window(n, p, 0, n)


def _log_binomial_window(n: int, p: float, k0: int, k1: int) -> np.ndarray:
    """log Bin(k; n, p) for k = k0..k1 (0 ≤ k0 ≤ k1 ≤ n), vectorized; 0·log 0 = 0."""
    k = np.arange(k0, k1 + 1, dtype=np.float64)
    lc = _sp.gammaln(n + 1.0) - _sp.gammaln(k + 1.0) - _sp.gammaln(n - k + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kp = np.where(k > 0, k * math.log(p) if p > 0 else -np.inf, 0.0)
        q = math.log1p(-p) if p < 1 else -math.inf
        kq = np.where(k < n, (n - k) * q, 0.0)
    return lc + kp + kq


@lru_cache(maxsize=256)
def log_diff_pmf(n: int, probs: tuple[float, float, float] | None) -> np.ndarray:
    """log P(D = d), d = −n..n, float64 (2n + 1,); ``probs`` = (a, b, c) = (p_FN, p_FP, p_TP + p_TN).

    ``None`` is the uniform null over M(n). Exact to about n·1e-16 relative; cached.
    """
    if probs is None:
        out = _log_uniform(n)
    else:
        a, b, c = probs
        if a <= 0.0 and b <= 0.0:
            out = np.full(2 * n + 1, -np.inf)
            out[n] = 0.0
        elif b <= 0.0:  # D = −FN, FN ~ Bin(n, a)
            out = np.full(2 * n + 1, -np.inf)
            out[: n + 1] = _log_binomial(n, a)[::-1]
        elif a <= 0.0:  # D = FP ~ Bin(n, b)
            out = np.full(2 * n + 1, -np.inf)
            out[n:] = _log_binomial(n, b)
        elif c <= 0.0:  # FN + FP = n: D = 2 FP − n, FP ~ Bin(n, b / (a + b))
            out = np.full(2 * n + 1, -np.inf)
            out[::2] = _log_binomial(n, b / (a + b))
        else:
            up = _half(n, a, b, c)  # d = n..0
            lo = _half(n, b, a, c)  # d = −n..0
            out = np.concatenate([lo[:n], up[::-1]])
        with np.errstate(divide="ignore"):
            out = out - _lse(out)  # removes the rounding drift (≈ n·1e-16)
    out.setflags(write=False)
    return out


#: Distributions per block of the batched recurrence, and most floats a block may hold.
_BATCH_ROWS = 128
#: Fewer distributions than this are built one at a time (scalar loop, cached).
_BATCH_MIN = 6
_BATCH_FLOATS = 2_000_000
#: Steps of the recurrence whose coefficients are precomputed at once (memory ~ 3·chunk·rows).
_STEP_CHUNK = 2048


def _lse(v: np.ndarray) -> float:
    """log Σ exp(v) of a 1-D array (-inf if empty of mass); a light scipy.special.logsumexp."""
    top = float(v.max()) if v.size else -math.inf
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(v - top))))


def _half_batch(n: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list:
    """:func:`_half` for many distributions at once: one loop over the steps, NumPy over rows.

    The same floating-point operations as :func:`_half` (so the results agree to the last bit);
    rows with ragged n run to the largest n and are cut. Returns a list of float64 arrays
    (n_r + 1,), log t_d for d = n_r, …, 0.
    """
    n = np.asarray(n, np.int64)
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    rows = n.size
    out: list = [None] * rows
    if rows == 0:
        return out
    kmax = int(n.max())
    nf = n.astype(np.float64)
    rho = np.empty((kmax + 1, rows))
    rho[0] = np.inf  # so that the first A/ρ is 0
    with np.errstate(all="ignore"):
        for s in range(0, kmax, _STEP_CHUNK):
            ks = np.arange(s, min(kmax, s + _STEP_CHUNK), dtype=np.float64)[:, None]
            ap, cp = _ratio_coefs(nf, a, b, c, ks)
            for j in range(ks.shape[0]):
                k = s + j + 1
                np.divide(ap[j], rho[k - 1], out=rho[k])
                rho[k] += cp[j]
    for r in range(rows):
        nr = int(n[r])
        got = _finish_half(nr, float(b[r]), np.ascontiguousarray(rho[1:nr + 1, r]))
        out[r] = _half_safe(nr, float(a[r]), float(b[r]), float(c[r])) if got is None else got
    return out


def log_diff_pmfs(ns, probs) -> list:
    """:func:`log_diff_pmf` for many (n, probs) at once (the multinomial recurrence batched).

    Args:
        ns: sequence of group sizes.
        probs: None (uniform null for all) or a sequence of (a, b, c) tuples.

    Returns a list of read-only float64 arrays (2n + 1,), equal to :func:`log_diff_pmf` (the
    batched recurrence does the same floating-point operations).
    """
    ns = [int(x) for x in ns]
    if probs is None:
        return [log_diff_pmf(x, None) for x in ns]
    probs = [tuple(float(v) for v in q) for q in probs]
    out: list = [None] * len(ns)
    todo = []
    for r, (x, (a, b, c)) in enumerate(zip(ns, probs)):
        if a <= 0.0 or b <= 0.0 or c <= 0.0:
            out[r] = log_diff_pmf(x, (a, b, c))  # closed forms
        else:
            todo.append(r)
    if len(todo) < _BATCH_MIN:  # a few: the scalar loop is faster, and cached
        for r in todo:
            out[r] = log_diff_pmf(ns[r], probs[r])
        return out
    todo.sort(key=lambda r: ns[r])  # similar sizes share a block
    i = 0
    while i < len(todo):
        j = i + 1
        while (j < len(todo) and j - i < _BATCH_ROWS
               and (j + 1 - i) * (ns[todo[j]] + 1) <= _BATCH_FLOATS):
            j += 1
        blk = todo[i:j]
        nn = np.array([ns[r] for r in blk], np.int64)
        pa = np.array([probs[r] for r in blk], np.float64)
        both = _half_batch(np.concatenate([nn, nn]), np.concatenate([pa[:, 0], pa[:, 1]]),
                           np.concatenate([pa[:, 1], pa[:, 0]]), np.concatenate([pa[:, 2], pa[:, 2]]))
        up, lo = both[: len(blk)], both[len(blk):]  # d = n..0 and d = −n..0
        for r, x, u, w in zip(blk, nn.tolist(), up, lo):
            v = np.concatenate([w[:x], u[::-1]])
            with np.errstate(divide="ignore"):
                v = v - _lse(v)
            v.setflags(write=False)
            out[r] = v
        i = j
    return out


# ------------------------------------------------------------------------------ exact tail


#: PMF values below (mode − _TRUNC) in log space are left out of the exact sum (each is below
#: e^-800 of the mode); the sum is redone in full unless it exceeds the dropped mass by e^40.
_TRUNC = 800.0


def _window(lp: np.ndarray, trunc: bool):
    """Index range [lo, hi] of lp's values ≥ max − _TRUNC and a log bound on the mass outside."""
    if not trunc:
        return 0, lp.size - 1, -np.inf
    top = float(lp.max())
    keep = np.flatnonzero(lp >= top - _TRUNC)
    lo, hi = int(keep[0]), int(keep[-1])
    dropped = lp.size - (hi - lo + 1)
    return lo, hi, (math.log(dropped) + top - _TRUNC) if dropped else -np.inf


def log_tail_exact(
    lp_i: np.ndarray, lp_j: np.ndarray, n_i: int, n_j: int, m: np.ndarray, *, _trunc: bool = True
) -> np.ndarray:
    """log P(|D_i n_j − D_j n_i| ≥ m) for integer m ≥ 0 (array), from the two log-PMFs.

    Values of the PMFs below e^-800 of their modes are left out (each sum of positive terms is
    then checked to exceed the left-out mass by a factor e^40, else redone in full), so the
    relative error stays that of the PMFs (~n·1e-16) while the work is over their bulk only.
    """
    m = np.asarray(m, dtype=np.int64)
    if n_i > n_j:  # sum over the smaller group (|T| is symmetric in i, j)
        lp_i, lp_j, n_i, n_j = lp_j, lp_i, n_j, n_i
    lo_i, hi_i, drop_i = _window(lp_i, _trunc)
    lo_j, hi_j, drop_j = _window(lp_j, _trunc)
    drop = np.logaddexp(drop_i, drop_j)
    wi, wj = lp_i[lo_i:hi_i + 1], lp_j[lo_j:hi_j + 1]
    t0, nw = lo_j - n_j, hi_j - lo_j + 1  # window of D_j: t0 .. t0 + nw − 1
    with np.errstate(divide="ignore", invalid="ignore"):
        log_f = np.concatenate([[-np.inf], np.logaddexp.accumulate(wj)])  # [t − t0 + 1]: ≤ t
        log_s = np.concatenate([np.logaddexp.accumulate(wj[::-1])[::-1], [-np.inf]])  # [t − t0]: ≥ t
        x = np.arange(lo_i - n_i, hi_i - n_i + 1, dtype=np.int64)
        out = np.zeros(m.shape)
        flat_m, flat_out = m.reshape(-1), out.reshape(-1)
        for idx, mm in enumerate(flat_m.tolist()):
            if mm <= 0:
                flat_out[idx] = 0.0
                continue
            t_lo = np.floor_divide(x * n_j - mm, n_i)
            t_hi = -np.floor_divide(-(x * n_j + mm), n_i)
            lo = log_f[np.clip(t_lo - t0 + 1, 0, nw)]
            hi = log_s[np.clip(t_hi - t0, 0, nw)]
            val = _lse(wi + np.logaddexp(lo, hi))
            if drop > -np.inf and not val - 40.0 > drop:  # left-out mass not negligible
                val = float(log_tail_exact(lp_i, lp_j, n_i, n_j, np.array([mm]), _trunc=False)[0])
            flat_out[idx] = min(0.0, val)
    return out


# ------------------------------------------------------------------------------ saddlepoint


def _step_weights(u, a, b, c, need_lz: bool = True):
    """Tilted weights (w−, w0, w+) of one step in {−1, 0, 1} at tilt u, and log Z (stable;
    None when ``need_lz`` is False)."""
    m = np.abs(u)
    lm, l0, lp = np.log(a) - u - m, np.log(c) - m, np.log(b) + u - m
    top = np.maximum(np.maximum(lm, l0), lp)
    em, e0, ep = np.exp(lm - top), np.exp(l0 - top), np.exp(lp - top)
    z = em + e0 + ep
    if not need_lz:
        return em / z, e0 / z, ep / z, None
    lz = m + top + np.log(z)
    # near u = 0, log Z(u) = log1p((a expm1(−u) + b expm1(u)) / (a + b + c)) keeps its relative
    # digits (the sum above loses ~n·1e-16 absolute in n log Z, which Lugannani–Rice's w then
    # amplifies: it once gave P = 0 for a tail of probability ½)
    uu = np.clip(u, -1.0, 1.0)
    with np.errstate(invalid="ignore"):
        near = np.log1p((a * np.expm1(-uu) + b * np.expm1(uu)) / (a + b + c))
    return em / z, e0 / z, ep / z, np.where(np.abs(u) < 1.0, near, lz)


def _cumulants(wm, w0, wp):
    mu = wp - wm
    d_m, d_0, d_p = -1.0 - mu, -mu, 1.0 - mu
    k2 = wp * w0 + wm * w0 + 4.0 * wp * wm
    s_m, s_0, s_p = d_m * d_m, d_0 * d_0, d_p * d_p  # products, not pow (several times faster)
    m3 = wm * s_m * d_m + w0 * s_0 * d_0 + wp * s_p * d_p
    m4 = wm * s_m * s_m + w0 * s_0 * s_0 + wp * s_p * s_p
    return mu, k2, m3, m4 - 3.0 * k2 * k2


def _saddle_u(d, n, a, b, c):
    """Tilt u with n·E_u[step] = d (|d| < n): root of (n − d) b z² − d c z − (n + d) a = 0."""
    disc = np.sqrt((d * c) ** 2 + 4.0 * (n - d) * (n + d) * a * b)
    pos = d >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        z_pos = (d * c + disc) / (2.0 * (n - d) * b)
        z_neg = 2.0 * (n + d) * a / (disc - d * c)
    return np.log(np.where(pos, z_pos, z_neg))


def _log_pmf_saddle(d, n, a, b, c):
    """Lattice saddlepoint log P(D = d) with the first correction term; exact at |d| = n."""
    inner = np.abs(d) < n
    dd = np.where(inner, d, 0.0)
    u = _saddle_u(dd, n, a, b, c)
    wm, w0, wp, lz = _step_weights(u, a, b, c)
    _, k2, k3, k4 = _cumulants(wm, w0, wp)
    corr = (k4 / (8.0 * k2 * k2) - 5.0 * k3 * k3 / (24.0 * k2**3)) / n
    val = n * lz - u * dd - 0.5 * np.log(2.0 * np.pi * n * k2) + np.log1p(corr)
    edge = np.where(d > 0, n * np.log(b), n * np.log(a))
    return np.where(inner, val, edge)


def _log_upper_saddle(k, n, a, b, c):
    """log P(D ≥ k) (k integer array) by Lugannani–Rice with the second continuity correction."""
    k = np.asarray(k, dtype=np.float64)
    out = np.zeros(k.shape)
    out = np.where(k > n, -np.inf, out)
    out = np.where(k == n, n * np.log(b), out)
    mid = (k > -n) & (k < n)
    kk = np.where(mid, k, 0.0) - 0.5
    u = _saddle_u(kk, n, a, b, c)
    wm, w0, wp, lz = _step_weights(u, a, b, c)
    mu, k2, k3, _ = _cumulants(wm, w0, wp)
    big_k = n * lz
    r2 = np.maximum(2.0 * (u * kk - big_k), 0.0)
    w = np.sign(u) * np.sqrt(r2)
    v = 2.0 * np.sinh(u / 2.0) * np.sqrt(n * k2)
    small = np.abs(w) < 1e-4
    ws = np.where(small, 1.0, w)
    vs = np.where(small, 1.0, v)
    with np.errstate(divide="ignore", invalid="ignore"):
        # upper tail: Q(w) − φ(w)(1/w − 1/v) = Q(w)[1 − h], h = φ(w)/Q(w) (1/w − 1/v)
        log_q = _sp.log_ndtr(-ws)
        log_phi = -0.5 * ws * ws - 0.5 * math.log(2.0 * math.pi)
        h = np.exp(log_phi - log_q) * (1.0 / ws - 1.0 / vs)
        lr = log_q + np.log1p(-np.minimum(h, 1.0 - 1e-300))
    # near the centre: Edgeworth with continuity correction (p ≈ ½ there); only where |w| is
    # small (few points: the same arithmetic, element by element, on those alone)
    val = lr
    if np.any(small):
        nn = np.broadcast_to(n, kk.shape)[small]
        ks2, ks3 = k2[small], k3[small]
        sd = np.sqrt(nn * ks2)
        z = (kk[small] - nn * mu[small]) / np.where(sd > 0, sd, 1.0)
        skew = nn * ks3 / np.where(sd > 0, sd**3, 1.0)
        edge = _sp.ndtr(-z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * skew / 6.0 * (z * z - 1.0)
        val = lr.copy()
        val[small] = np.log(np.clip(edge, 1e-300, 1.0))
    out = np.where(mid, np.minimum(val, 0.0), out)
    return out


def _log_lower_saddle(t, n, a, b, c):
    """log P(D ≤ t) = log P(−D ≥ −t) (−D has a and b swapped)."""
    return _log_upper_saddle(-np.asarray(t, dtype=np.float64), n, b, a, c)


def _pair_kprime(theta, n_i, n_j, a, b, c):
    """d/dθ of the CGF of T = n_j D_i − n_i D_j, divided by n_i n_j."""
    wm, _, wp, _ = _step_weights(theta * n_j, a, b, c, False)
    mu_i = wp - wm
    wm2, _, wp2, _ = _step_weights(-theta * n_i, a, b, c, False)
    return mu_i - (wp2 - wm2)


def _window_centre(m, n_i, n_j, a, b, c):
    """Tilted mean and sd of D_i at the saddlepoint of P(T ≥ m) (bisection, vectorized)."""
    target = np.minimum(m / (n_i * n_j), 2.0 - 1e-12)
    lo = np.zeros_like(target)
    hi = np.full_like(target, 60.0) / np.minimum(n_i, n_j)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        big = _pair_kprime(mid, n_i, n_j, a, b, c) >= target
        hi = np.where(big, mid, hi)
        lo = np.where(big, lo, mid)
    wm, w0, wp, _ = _step_weights(hi * n_j, a, b, c, False)
    return n_i * (wp - wm), np.sqrt(n_i * (wp * w0 + wm * w0 + 4.0 * wp * wm))


def _threshold_int(x, nj, ni, m, upper):
    """t(x) = ⌊(x n_j − m)/n_i⌋ (upper tail) or ⌈(x n_j + m)/n_i⌉ in exact int64 arithmetic.

    |x| ≤ n_i, n_j < 2^31 and 0 ≤ m ≤ 2 n_i n_j < 2^63: m is split as q n_i + r first, so no
    intermediate leaves int64 (x n_j ± r stays within ±2^62 + 2^31).
    """
    q, r = np.divmod(m, ni)
    if upper:
        return np.floor_divide(x * nj - r, ni) - q
    return -np.floor_divide(-(x * nj + r), ni) + q


def _threshold(x, nj, ni, mm, upper):
    """t(x) of :func:`_threshold_int` for float-valued integer arrays (exact in int64)."""
    xi = np.asarray(x).astype(np.int64)
    t = _threshold_int(xi, np.asarray(nj).astype(np.int64), np.asarray(ni).astype(np.int64),
                       np.asarray(mm).astype(np.int64), upper)
    return t.astype(np.float64)


def _log_tail_j(t, nj, a, b, c, upper):
    """log P(D_j ≤ t) (upper tail of T) or log P(D_j ≥ t), t integer-valued (any range)."""
    if upper:
        lt = _log_lower_saddle(np.clip(t, -nj, nj), nj, a, b, c)
        return np.where(t < -nj, -np.inf, np.where(t >= nj, 0.0, lt))
    lt = _log_upper_saddle(np.clip(t, -nj, nj), nj, a, b, c)
    return np.where(t > nj, -np.inf, np.where(t <= -nj, 0.0, lt))


def _window_logsum(lo, hi, n_i, n_j, m, a, b, c, upper):
    """log Σ_{x=lo..hi} P̂(D_i = x) P̂(D_j ≤ / ≥ t(x)) for pairs (1-D arrays, lo ≤ hi integers)."""
    width = int((hi - lo).max()) + 1
    x = lo[:, None] + np.arange(width, dtype=np.float64)[None, :]
    ok = x <= hi[:, None]
    x = np.where(ok, x, lo[:, None])
    ni, nj, mm = n_i[:, None], n_j[:, None], m[:, None]
    aa, bb, cc = a[:, None], b[:, None], c[:, None]
    t = _threshold(x, nj, ni, mm, upper)
    terms = _log_pmf_saddle(x, ni, aa, bb, cc) + _log_tail_j(t, nj, aa, bb, cc, upper)
    return _sp.logsumexp(np.where(ok, terms, -np.inf), axis=1)


def log_tail_saddle(m, n_i, n_j, a, b, c, *, half_width: float = 6.0) -> np.ndarray:
    """Saddlepoint log P(|D_i n_j − D_j n_i| ≥ m), vectorized over pairs (1-D arrays).

    Sums P̂(D_s = x) P̂(D_l ≤ ⌊(x n_l − m)/n_s⌋) over x in the window x* ± (half_width σ* + 4)
    of the upper tail, and P̂(D_s = x) P̂(D_l ≥ ⌈(x n_l + m)/n_s⌉) over the lower tail's window,
    where s is the smaller group of the pair and l the larger (|T| is symmetric in i, j; the
    window then spans the fewest points). Terms beyond the window are < e^(−half_width²/2) of
    the largest and decay geometrically (log-concave). The floors/ceilings are exact per x, in
    int64 (they make the distribution of T lumpy when n_i ≠ n_j, which a saddlepoint for T alone
    would smooth over).
    """
    m = np.asarray(m, np.float64)
    n_i = np.asarray(n_i, np.float64)
    n_j = np.asarray(n_j, np.float64)
    n_i, n_j = np.minimum(n_i, n_j), np.maximum(n_i, n_j)
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    out = np.full(m.shape, -np.inf)
    for upper in (True, False):  # T ≥ m, and T ≤ −m (= −T ≥ m: a and b swapped, x mirrored)
        aa, bb = (a, b) if upper else (b, a)
        xc, sd = _window_centre(m, n_i, n_j, aa, bb, c)
        xc = xc if upper else -xc
        hw = np.ceil(half_width * sd + 4.0)
        lo = np.maximum(np.round(xc) - hw, -n_i)
        hi = np.minimum(np.round(xc) + hw, n_i)
        order = np.argsort(hi - lo, kind="stable")  # similar widths share a block (less padding)
        width = hi - lo + 1.0
        s = 0
        while s < m.size:  # blocks of ≤ ~2e6 points (rows padded to the block's widest)
            e = s + 1
            while e < m.size and width[order[e]] * (e - s + 1) <= 2e6:
                e += 1
            k = order[s:e]
            val = _window_logsum(lo[k], hi[k], n_i[k], n_j[k], m[k], a[k], b[k], c[k], upper)
            out[k] = np.logaddexp(out[k], val)
            s = e
    return np.minimum(out, 0.0)


def _log_tail_hybrid(lp_s, off_s, m, n_s, n_l, a, b, c) -> np.ndarray:
    """log P(|D_s n_l − D_l n_s| ≥ m) from the exact log-PMF of the smaller group s (values
    ``lp_s`` at d = off_s, off_s + 1, …) and the Lugannani–Rice tails of the larger group l
    (its saddlepoint is accurate: n_l(a + b) and n_l c large). Sums over the exact PMF's bulk."""
    top = float(lp_s.max())
    keep = np.flatnonzero(lp_s >= top - _TRUNC)
    x = np.arange(int(keep[0]), int(keep[-1]) + 1, dtype=np.int64)
    w = lp_s[x]
    x = x + off_s
    m = np.asarray(m, np.int64).reshape(-1)
    out = np.full(m.shape, -np.inf)
    nl, ns = np.int64(n_l), np.int64(n_s)
    for k, mm in enumerate(m.tolist()):
        lo = _log_tail_j(_threshold_int(x, nl, ns, np.int64(mm), True).astype(np.float64),
                         float(n_l), a, b, c, True)
        hi = _log_tail_j(_threshold_int(x, nl, ns, np.int64(mm), False).astype(np.float64),
                         float(n_l), a, b, c, False)
        out[k] = _lse(w + np.logaddexp(lo, hi))
    return np.minimum(out, 0.0)


# ------------------------------------------------------------------------------ windows of PMFs
#: Windowed exact PMFs of groups too large for the O(n) recurrence: when a cell probability is 0
#: (binomial closed forms) or the errors are rare (n(a + b) ≤ SMALL_ERRORS: a double sum over
#: (FN, FP), FN + FP ≤ S_max: P(S_max) < e^-850 P(mode)). Binomial windows: ⌈45σ + 900⌉ either side of the
#: mode. Both cover every value within e^-800 of the mode; the mass left out is bounded and
#: returned (``drop``), and a p-value not far above it is flagged ("truncated", with its bound).
SMALL_ERRORS = 200.0  # ≥ SADDLE_MIN_COUNT: every huge group the saddlepoint declines has a window


def _binom_range(n: int, p: float, scale: float = 1.0) -> tuple[int, int]:
    sd = math.sqrt(n * p * (1.0 - p))
    w = int(math.ceil(scale * (45.0 * sd + 900.0)))
    mode = int(math.floor((n + 1) * p))
    return max(0, mode - w), min(n, mode + w)


def _log_binom_tail_above(n: int, p: float, k: int) -> float:
    """A bound on log P(Bin(n, p) > k): P(k + 1) / (1 − r), r = P(k + 2)/P(k + 1) (the ratios of
    successive terms decrease, so the tail is below that geometric series); 0 if r ≥ 1."""
    if k >= n:
        return -math.inf
    if p >= 1.0:
        return 0.0
    r = (n - k - 1) * p / ((k + 2) * (1.0 - p))
    if r >= 1.0:
        return 0.0
    return float(_log_binomial_window(n, p, k + 1, k + 1)[0]) - math.log1p(-r)


def _pmf_window(n: int, q, scale: float = 1.0):
    """(offset, log P(D = offset + i), log bound of the mass left out) of D = FP − FN, or None.

    Exact (to ~1e-15 relative per value) for: n ≤ EXACT_MAX_N (the full PMF), the uniform null
    excluded (None); a zero cell probability (binomial closed forms, windowed); few correct
    predictions n c ≤ SMALL_ERRORS (:func:`_mixture_window`); rare errors n(a + b) ≤
    SMALL_ERRORS (double sum over FN + FP ≤ S_max). None otherwise. ``scale``
    widens the windows (by that factor; the engine widens them while a p-value is not far above
    the mass they leave out).
    """
    a, b, c = q
    if n <= EXACT_MAX_N:
        return -n, log_diff_pmf(n, (a, b, c)), -math.inf
    if a <= 0.0 and b <= 0.0:
        return 0, np.zeros(1), -math.inf
    if b <= 0.0 or a <= 0.0:  # D = −FN ~ −Bin(n, a)  or  D = FP ~ Bin(n, b)
        p = a if b <= 0.0 else b
        k0, k1 = _binom_range(n, p, scale)
        v = _log_binomial_window(n, p, k0, k1)
        drop = np.logaddexp(_log_binom_tail_above(n, p, k1) if k1 < n else -np.inf,
                            _log_binom_tail_above(n, 1.0 - p, n - k0) if k0 > 0 else -np.inf)
        return (-k1, v[::-1].copy(), float(drop)) if b <= 0.0 else (k0, v, float(drop))
    if c <= 0.0:  # D = 2 FP − n, FP ~ Bin(n, b/(a + b)); odd offsets carry no mass
        p = b / (a + b)
        k0, k1 = _binom_range(n, p, scale)
        v = _log_binomial_window(n, p, k0, k1)
        out = np.full(2 * (k1 - k0) + 1, -np.inf)
        out[::2] = v
        drop = np.logaddexp(_log_binom_tail_above(n, p, k1) if k1 < n else -np.inf,
                            _log_binom_tail_above(n, 1.0 - p, n - k0) if k0 > 0 else -np.inf)
        return 2 * k0 - n, out, float(drop)
    if n * c <= SMALL_ERRORS:  # few correct: C ~ Bin(n, c); given C = k, D = 2 FP − (n − k)
        return _mixture_window(n, a, b, c, scale)
    lam = n * (a + b)
    if lam > SMALL_ERRORS:
        return None
    # S = FN + FP ~ Bin(n, a + b): the first s_max above the mode with P(S = s_max) below
    # e^-850 of the mode's (so every value of D within e^-800 of its mode is complete)
    hi = min(n, int(math.ceil(lam + scale * (45.0 * math.sqrt(lam) + 900.0))))
    mode = min(n, int(math.floor((n + 1) * (a + b))))
    ls = _log_binomial_window(n, a + b, mode, hi)
    below = np.flatnonzero(ls < ls[0] - 850.0 * scale)
    s_max = mode + int(below[0]) if below.size else hi
    d = np.arange(-s_max, s_max + 1, dtype=np.float64)[:, None]
    u = np.arange(0, s_max + 1, dtype=np.float64)[None, :]  # FN
    v = u + d  # FP
    ok = (v >= 0) & (u + v <= s_max)
    uu, vv = np.where(ok, u, 0.0), np.where(ok, v, 0.0)
    lv = (_sp.gammaln(n + 1.0) - _sp.gammaln(uu + 1.0) - _sp.gammaln(vv + 1.0)
          - _sp.gammaln(n - uu - vv + 1.0) + uu * math.log(a) + vv * math.log(b)
          + (n - uu - vv) * math.log(c))
    vals = _sp.logsumexp(np.where(ok, lv, -np.inf), axis=1)
    drop = _log_binom_tail_above(n, a + b, s_max)
    return -s_max, vals, drop


def _mixture_window(n: int, a: float, b: float, c: float, scale: float = 1.0):
    """:func:`_pmf_window` when few predictions are correct (n·c ≤ SMALL_ERRORS, a, b > 0).

    The number correct C ~ Bin(n, c); given C = k the n − k errors split FP ~ Bin(n − k,
    b/(a + b)), so D = 2 FP − (n − k) and P(D = d) = Σ_k P(C = k) P(FP = (d + n − k)/2). The
    sum runs over k from 0 to the first k above C's mode with P(C = k) below e^-850 of the
    mode's, each term over the FP window of :func:`_binom_range` (the same cover rule as the
    other windows); the mass left out is bounded by the two tails and returned.
    """
    p = b / (a + b)
    lam = n * c
    hi = min(n, int(math.ceil(lam + scale * (45.0 * math.sqrt(lam) + 900.0))))
    mode = min(n, int(math.floor((n + 1) * c)))
    lk = _log_binomial_window(n, c, 0, hi)
    below = np.flatnonzero((np.arange(lk.size) > mode) & (lk < lk[mode] - 850.0 * scale))
    k_max = int(below[0]) if below.size else hi
    k0, k1 = _binom_range(n - k_max, p, scale)
    k1 = min(k1 + k_max, n)
    off = 2 * k0 - n  # the smallest d: FP = k0 with k = 0
    out = np.full(2 * (k1 - k0) + k_max + 1, -np.inf)
    drop = -math.inf
    for k in range(k_max + 1):
        top = min(k1, n - k)
        v = lk[k] + _log_binomial_window(n - k, p, k0, top)
        start = 2 * k0 - (n - k) - off
        seg = out[start:start + 2 * (top - k0) + 1:2]
        np.logaddexp(seg, v, out=seg)
        tails = np.logaddexp(
            _log_binom_tail_above(n - k, p, top) if top < n - k else -np.inf,
            _log_binom_tail_above(n - k, 1.0 - p, n - k - k0) if k0 > 0 else -np.inf)
        drop = float(np.logaddexp(drop, lk[k] + tails))
    drop = float(np.logaddexp(drop, _log_binom_tail_above(n, c, k_max)))
    return off, out, drop


def _log_tail_windows(wi, off_i, wj, off_j, n_i, n_j, m, full: bool = False):
    """(log P(|D_i n_j − D_j n_i| ≥ m), log bound of the mass left out of the sum) from two
    windowed log-PMFs (offsets = the d of index 0).

    The same sum as :func:`log_tail_exact` over the bulk (values ≥ max − 800) of each window, or
    over the whole windows when ``full``."""
    def bulk(w):
        if full:
            return 0, w.size - 1, -math.inf
        top = float(w.max())
        keep = np.flatnonzero(w >= top - _TRUNC)
        left = w.size - (int(keep[-1]) - int(keep[0]) + 1)
        return int(keep[0]), int(keep[-1]), (math.log(left) + top - _TRUNC) if left else -math.inf

    lo_i, hi_i, d_i = bulk(wi)
    lo_j, hi_j, d_j = bulk(wj)
    w_i, w_j = wi[lo_i:hi_i + 1], wj[lo_j:hi_j + 1]
    t0, nw = lo_j + off_j, hi_j - lo_j + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        log_f = np.concatenate([[-np.inf], np.logaddexp.accumulate(w_j)])
        log_s = np.concatenate([np.logaddexp.accumulate(w_j[::-1])[::-1], [-np.inf]])
        x = np.arange(lo_i + off_i, hi_i + off_i + 1, dtype=np.int64)
        m = np.asarray(m, np.int64).reshape(-1)
        out = np.zeros(m.shape)
        ni, nj = np.int64(n_i), np.int64(n_j)
        for k, mm in enumerate(m.tolist()):
            if mm <= 0:
                continue
            t_lo = _threshold_int(x, nj, ni, np.int64(mm), True)
            t_hi = _threshold_int(x, nj, ni, np.int64(mm), False)
            lo = log_f[np.clip(t_lo - t0 + 1, 0, nw)]
            hi = log_s[np.clip(t_hi - t0, 0, nw)]
            out[k] = min(0.0, _lse(w_i + np.logaddexp(lo, hi)))
    return out, float(np.logaddexp(d_i, d_j))


# ------------------------------------------------------------------------------ uniform null, any n


def _q_sum(s: np.ndarray) -> np.ndarray:
    """Σ_{r=0}^{s} ⌊r²/4⌋ = ⌊s(s + 2)(2s − 1)/24⌋ for int64 s ≥ 0, as float64 (exact below
    1.6e6, relative ~1e-16 above, where the floor changes less than one part in 1e17)."""
    s = np.asarray(s, np.int64)
    small = s < 1_600_000
    ss = np.where(small, s, 0)
    exact = (ss * (ss + 2) * (2 * ss - 1)) // 24
    sf = s.astype(np.float64)
    return np.where(small, exact.astype(np.float64), sf * (sf + 2.0) * (2.0 * sf - 1.0) / 24.0)


def _uniform_total(n) -> np.ndarray:
    """N(n) = C(n + 3, 3) as float64."""
    nf = np.asarray(n, np.float64)
    return (nf + 1.0) * (nf + 2.0) * (nf + 3.0) / 6.0


def _uniform_pmf(x, n) -> np.ndarray:
    """P(D = x) = ⌊(n − |x| + 2)²/4⌋ / N(n) under the uniform null, float64 (|x| ≤ n)."""
    r = np.asarray(n, np.int64) - np.abs(np.asarray(x, np.int64)) + 2
    if np.max(r, initial=0) < 3_000_000_000:
        cnt = ((r * r) // 4).astype(np.float64)
    else:
        rf = r.astype(np.float64)
        cnt = np.floor(rf * rf / 4.0)
    return cnt / _uniform_total(n)


def _uniform_cdf(t, n) -> np.ndarray:
    """P(D ≤ t) under the uniform null (closed form, float64; t any int64, n ≥ 1)."""
    t = np.asarray(t, np.int64)
    tot = _uniform_total(n)
    tc = np.clip(t, -n - 1, n)
    low = _q_sum(np.maximum(n + tc + 2, 0)) / tot  # t ≤ 0: #{D ≤ t} = Q(n + t + 2)
    high = 1.0 - _q_sum(np.maximum(n - tc + 1, 0)) / tot  # t ≥ 0: N − #{D ≥ t + 1}
    out = np.where(tc <= 0, low, high)
    return np.where(t < -n, 0.0, np.where(t >= n, 1.0, out))


#: The uniform closed-form sum is exact over x = −n_s..n_s for the smaller group s up to here.
UNIFORM_SUM_MAX = 2**23
_UNI_CHUNK = 1 << 20


def _uniform_log_tail_sum(m: int, n_s: int, n_l: int) -> float:
    """Exact log P(|D_s n_l − D_l n_s| ≥ m) under the uniform null (m > 0): 2 Σ_x P_s(x)
    P(D_l ≤ ⌊(x n_l − m)/n_s⌋), closed-form terms, O(n_s) in chunks (the two tails are equal
    by the symmetry D → −D and disjoint for m > 0)."""
    x_lo = max(-n_s, -((n_s * n_l - m) // n_l))  # t ≥ −n_l  ⇔  x ≥ (m − n_s n_l)/n_l
    total = 0.0
    for s in range(x_lo, n_s + 1, _UNI_CHUNK):
        x = np.arange(s, min(n_s, s + _UNI_CHUNK - 1) + 1, dtype=np.int64)
        t = _threshold_int(x, np.int64(n_l), np.int64(n_s), np.int64(m), True)
        total += float(np.sum(_uniform_pmf(x, n_s) * _uniform_cdf(t, n_l)))
    return math.log(2.0 * total) if total > 0 else -math.inf


#: Relative width of a block of the bracketed uniform sum (n_s > UNIFORM_SUM_MAX).
_BRACKET_EPS = 1e-4


@lru_cache(maxsize=8)
def _geometric_offsets(span: int, eps: float) -> np.ndarray:
    """0, 1, 2, … then ⌊(1 + eps)^k⌋: integers in [0, span] spaced by a factor ≤ 1 + eps."""
    if span <= 0:
        return np.zeros(1, np.int64)
    dense = np.arange(0, min(span, int(2.0 / eps)) + 1, dtype=np.int64)
    if span <= dense[-1]:
        return dense
    k = np.arange(math.ceil(math.log(dense[-1]) / math.log1p(eps)),
                  math.ceil(math.log(span) / math.log1p(eps)) + 1)
    geo = np.minimum(np.floor(np.exp(k * math.log1p(eps))).astype(np.int64), span)
    return np.unique(np.concatenate([dense, geo, [span]]))


def _uniform_log_tail_bracket(m: int, n_s: int, n_l: int) -> tuple[float, float]:
    """(log p, relative error bound) under the uniform null for any n (m > 0), by blocks.

    p = 2 Σ_x f(x), f(x) = P_s(x) G_l(t(x)) with P_s(x) = P(D_s = x) non-decreasing for x ≤ 0 and
    non-increasing for x ≥ 0, and G_l(t(x)) = P(D_l ≤ t(x)) non-decreasing in x. On a block
    [x_a, x_b] that does not straddle 0 the block's sum therefore lies in
    [L · min(P_s(x_a), P_s(x_b)) G_l(t(x_a)), L · max(P_s(x_a), P_s(x_b)) G_l(t(x_b))], L = x_b − x_a + 1:
    a rigorous bracket of the whole sum. Block ends are spaced geometrically (factor 1 + 5e-5) from
    every point where a factor's relative slope is large (the first x with G_l > 0, x = 0,
    x = ±n_s), so each block's bracket is narrow (~ 2.5e-4 wide); the estimate is the sum of the
    blocks' trapezoids (clipped to the bracket) and the bound is the larger distance to the
    bracket's ends, relative."""
    x_lo = max(-n_s, -((n_s * n_l - m) // n_l))
    eps = _BRACKET_EPS
    pts = [np.array([x_lo, n_s, 0, -1, 1], np.int64)]
    off = _geometric_offsets(2 * n_s + 1, eps)
    for centre, sign in ((x_lo, 1), (n_s, -1), (0, 1), (0, -1)) + (((-n_s, 1),) if x_lo == -n_s else ()):
        pts.append(centre + sign * off)
    e = np.unique(np.concatenate(pts))
    e = e[(e >= x_lo) & (e <= n_s)]
    # blocks [e_k, e_{k+1} − 1], the last one [e_last, e_last]; 0 is its own block start
    starts = e
    ends = np.concatenate([e[1:] - 1, [n_s]])
    length = (ends - starts + 1).astype(np.float64)
    ps, pe = _uniform_pmf(starts, n_s), _uniform_pmf(ends, n_s)
    nl, ns = np.int64(n_l), np.int64(n_s)
    gs = _uniform_cdf(_threshold_int(starts, nl, ns, np.int64(m), True), n_l)
    ge = _uniform_cdf(_threshold_int(ends, nl, ns, np.int64(m), True), n_l)
    lo = length * np.minimum(ps, pe) * gs
    hi = length * np.maximum(ps, pe) * ge
    est = np.clip(length * 0.5 * (ps * gs + pe * ge), lo, hi)
    tot, tlo, thi = float(est.sum()), float(lo.sum()), float(hi.sum())
    if tot <= 0.0:
        return -math.inf, 0.0
    bound = max(tot - tlo, thi - tot) / tot
    return math.log(2.0 * tot), bound


# ------------------------------------------------------------------------------ dispatch

#: Saddlepoint pairs need n_s ≥ SADDLE_MIN_N, n_s(p_FN + p_FP) ≥ SADDLE_MIN_COUNT and
#: n_s(p_TP + p_TN) ≥ SADDLE_MIN_CORRECT for the smaller group s: the error is governed by the
#: expected counts, not by the probabilities. Outside this domain it was measured above the bound:
#: 2.5e-3 at n_s(p_FN + p_FP) = 75 with p_FN = 1.6e-5 (p ~ 1e-195: the tilted counts where
#: FP ≈ FN are ~ 2 n_s √(p_FN p_FP) = 11), 2.4e-3 at 110, 4e-2 at n_s = 405 with
#: n_s(p_TP + p_TN) = 11 (p ~ 1e-352); inside it ≤ 7e-4 (experiments/bench_pvalue.py
#: --accuracy, tests/test_pvalue_scale.py).
SADDLE_MIN_COUNT = 200.0
SADDLE_MIN_CORRECT = 10.0
#: Kept for compatibility (the old rule was min(a, b, c) ≥ SADDLE_MIN_PROB); no longer used.
SADDLE_MIN_PROB = 0.005
#: Kept for compatibility: the floors ⌊(x n_j − m)/n_i⌋ are now exact int64 at any n < 2^31.
SADDLE_MAX_NN = 2.0**63
_METHODS = ("auto", "exact", "saddlepoint")


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
    # pairs the classic exact engine covers (both groups ≤ EXACT_MAX_N): unchanged path
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
            if ns <= 65536 or (ns <= UNIFORM_SUM_MAX
                               and (method == "exact" or uniform_work <= UNIFORM_SUM_MAX)):
                log_p[k] = min(0.0, _uniform_log_tail_sum(mk, ns, nl))
            else:
                lp, bd = _uniform_log_tail_bracket(mk, ns, nl)
                log_p[k], bound[k], used[k] = min(0.0, lp), bd, "bracketed"
            continue
        q = tuple(probs[k].tolist())
        if feasible[k]:
            for scale in (1.0, 4.0, 16.0, 64.0, 256.0):  # widen while p is near the left-out mass
                ws, wl = _pmf_window(ns, q, scale), _pmf_window(nl, q, scale)
                args = (ws[1], ws[0], wl[1], wl[0], ns, nl, np.array([mk]))
                vals, bulk_drop = _log_tail_windows(*args)
                val = float(vals[0])
                if bulk_drop > -np.inf and not val - 40.0 > bulk_drop:  # redo over the windows
                    val = float(_log_tail_windows(*args, full=True)[0][0])
                drop = float(np.logaddexp(ws[2], wl[2]))
                if not (drop > -np.inf and drop - val > math.log(1e-15)):
                    break
                if ws[1].size + wl[1].size > 20_000_000:
                    break
            log_p[k] = val
            if drop > -np.inf and drop - val > math.log(1e-15):  # left-out mass not negligible
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


def null_probs(null, name: str = "null", pooled=None):
    """(..., 4) float64 p = cm / Σ cm of a reference CM (or of ``pooled`` for "pooled"); None = uniform."""
    if isinstance(null, str):
        _v.check_choice(null, name, ("uniform",) if pooled is None else ("uniform", "pooled"))
        if null == "uniform":
            return None
        arr = np.asarray(pooled, dtype=np.float64)
    else:
        arr = _v.as_numpy(null, name)
        if arr.dtype.kind not in "biuf" or arr.ndim < 1 or arr.shape[-1] != 4:
            raise ValueError(
                f"{name}: must be 'uniform' or a reference CM of 4 non-negative counts (TP, FN, FP, TN) "
                f"along the last axis; got {arr.dtype} of shape {arr.shape}."
            )
        arr = arr.astype(np.float64)
        _v.check_finite(arr, name)
        if np.any(arr < 0) or np.any(arr.sum(-1) <= 0):
            raise ValueError(
                f"{name}: a reference CM must hold 4 non-negative counts with a positive total."
            )
    return arr / arr.sum(-1, keepdims=True)


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
    k = np.where(np.abs(x - r) <= 1e-6 * lcm, r, np.ceil(x))  # within 1e-6 of a lattice point
    # |OFI| ≤ 2: k ≤ 2 lcm, so m = k g ≤ 2 n_i n_j < 2^63 (clipped before the int64 cast)
    k_max = 2.0 * lcm.astype(np.float64)
    m = np.where(k >= k_max, 2 * ni * nj, np.where(k >= k_max, 0.0, k).astype(np.int64) * g)
    log_p, used, bound = engine_bounds(m, ni, nj, abc, method)
    res = _finish(log_p, obs, used, shape, bound)
    if scalar:
        return float(res.p_value) if res.p_value.ndim == 0 else res.p_value
    return res
