r"""Exact tail sums of the pair statistic T = D_i n_j − D_j n_i, and exact windows of huge groups' PMFs.

Owns the integer thresholds t(x) of the sum over the smaller group (:func:`threshold_int`, exact
int64 at any n < 2^31), the exact log-space tail P(|T| ≥ m) from two full log-PMFs
(:func:`log_tail_exact`, summed over the PMFs' bulk: values within e^``TRUNC`` of the mode, the
left-out mass bounded and the sum redone in full unless it exceeds that bound by
e^``DROP_MARGIN``), and, for multinomial groups too large for the O(n) recurrence, exact windows
of the PMF of D (:func:`pmf_window`: binomial closed forms when a cell probability is 0, a double
sum over FN + FP when errors are rare, n(a + b) ≤ ``SMALL_ERRORS``, a mixture over the number
correct when n c ≤ ``SMALL_ERRORS``) with the same sum over windows (:func:`log_tail_windows`).
Every window covers each value within e^-800 of its mode; the mass left out is bounded and
returned, and the engine flags a p-value not far above it ("truncated", with its bound).
"""

from __future__ import annotations

import math

import numpy as np

from ._diffpmf import log_binomial_window as _log_binomial_window
from ._diffpmf import lse as _lse
from ._diffpmf import special as _sp


def threshold_int(x, nj, ni, m, upper):
    """t(x) = ⌊(x n_j − m)/n_i⌋ (upper tail) or ⌈(x n_j + m)/n_i⌉ in exact int64 arithmetic.

    |x| ≤ n_i, n_j < 2^31 and 0 ≤ m ≤ 2 n_i n_j < 2^63: m is split as q n_i + r first, so no
    intermediate leaves int64 (x n_j ± r stays within ±2^62 + 2^31).
    """
    q, r = np.divmod(m, ni)
    if upper:
        return np.floor_divide(x * nj - r, ni) - q
    return -np.floor_divide(-(x * nj + r), ni) + q



#: PMF values below (mode − TRUNC) in log space are left out of the exact sum (each is below
#: e^-800 of the mode: far below any p-value float64 holds relative to the bulk).
TRUNC = 800.0
#: A truncated sum stands only if it exceeds the left-out mass by e^DROP_MARGIN (e^40 ≈ 2e17,
#: beyond float64's relative precision); else it is redone in full.
DROP_MARGIN = 40.0


def _window(lp: np.ndarray, trunc: bool):
    """Index range [lo, hi] of lp's values ≥ max − TRUNC and a log bound on the mass outside."""
    if not trunc:
        return 0, lp.size - 1, -np.inf
    top = float(lp.max())
    keep = np.flatnonzero(lp >= top - TRUNC)
    lo, hi = int(keep[0]), int(keep[-1])
    dropped = lp.size - (hi - lo + 1)
    return lo, hi, (math.log(dropped) + top - TRUNC) if dropped else -np.inf


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
            if drop > -np.inf and not val - DROP_MARGIN > drop:  # left-out mass not negligible
                val = float(log_tail_exact(lp_i, lp_j, n_i, n_j, np.array([mm]), _trunc=False)[0])
            flat_out[idx] = min(0.0, val)
    return out


# ------------------------------------------------------------------------------ windows of PMFs
#: Windows for rare errors (n(a + b) ≤ this) or few correct predictions (n c ≤ this); at least
#: the saddlepoint's SADDLE_MIN_COUNT and SADDLE_MIN_CORRECT, so every huge group the saddlepoint
#: declines has a window (tests/test_distributions_layout.py).
SMALL_ERRORS = 200.0
#: A binomial window spans ⌈_COVER_SD σ + _COVER_PAD⌉ either side of the mode: it covers every
#: value within e^-800 (TRUNC) of the mode's.
_COVER_SD = 45.0
_COVER_PAD = 900.0
#: Double sums and mixtures stop at the first count whose probability is below e^-_COVER_LOG of
#: the mode's (50 beyond TRUNC, so every value of D within e^-800 of its mode is complete).
_COVER_LOG = 850.0


def _binom_range(n: int, p: float, scale: float = 1.0) -> tuple[int, int]:
    sd = math.sqrt(n * p * (1.0 - p))
    w = int(math.ceil(scale * (_COVER_SD * sd + _COVER_PAD)))
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


def pmf_window(n: int, q, scale: float = 1.0):
    """(offset, log P(D = offset + i), log bound of the mass left out) of D = FP − FN for a
    multinomial group of any size n (the engine calls it above EXACT_MAX_N), or None.

    Exact (to ~1e-15 relative per value) for: a zero cell probability (binomial closed forms,
    windowed); few correct predictions n c ≤ SMALL_ERRORS (:func:`mixture_window`); rare errors
    n(a + b) ≤ SMALL_ERRORS (double sum over FN + FP ≤ S_max). None otherwise. ``scale``
    widens the windows (by that factor; the engine widens them while a p-value is not far above
    the mass they leave out).
    """
    a, b, c = q
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
        return mixture_window(n, a, b, c, scale)
    lam = n * (a + b)
    if lam > SMALL_ERRORS:
        return None
    # S = FN + FP ~ Bin(n, a + b): the first s_max above the mode with P(S = s_max) below
    # e^-850 of the mode's (so every value of D within e^-800 of its mode is complete)
    hi = min(n, int(math.ceil(lam + scale * (_COVER_SD * math.sqrt(lam) + _COVER_PAD))))
    mode = min(n, int(math.floor((n + 1) * (a + b))))
    ls = _log_binomial_window(n, a + b, mode, hi)
    below = np.flatnonzero(ls < ls[0] - _COVER_LOG * scale)
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


def mixture_window(n: int, a: float, b: float, c: float, scale: float = 1.0):
    """:func:`pmf_window` when few predictions are correct (n·c ≤ SMALL_ERRORS, a, b > 0).

    The number correct C ~ Bin(n, c); given C = k the n − k errors split FP ~ Bin(n − k,
    b/(a + b)), so D = 2 FP − (n − k) and P(D = d) = Σ_k P(C = k) P(FP = (d + n − k)/2). The
    sum runs over k from 0 to the first k above C's mode with P(C = k) below e^-850 of the
    mode's, each term over the FP window of :func:`_binom_range` (the same cover rule as the
    other windows); the mass left out is bounded by the two tails and returned.
    """
    p = b / (a + b)
    lam = n * c
    hi = min(n, int(math.ceil(lam + scale * (_COVER_SD * math.sqrt(lam) + _COVER_PAD))))
    mode = min(n, int(math.floor((n + 1) * c)))
    lk = _log_binomial_window(n, c, 0, hi)
    below = np.flatnonzero((np.arange(lk.size) > mode) & (lk < lk[mode] - _COVER_LOG * scale))
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


def log_tail_windows(wi, off_i, wj, off_j, n_i, n_j, m, full: bool = False):
    """(log P(|D_i n_j − D_j n_i| ≥ m), log bound of the mass left out of the sum) from two
    windowed log-PMFs (offsets = the d of index 0).

    The same sum as :func:`log_tail_exact` over the bulk (values ≥ max − 800) of each window, or
    over the whole windows when ``full``."""
    def bulk(w):
        if full:
            return 0, w.size - 1, -math.inf
        top = float(w.max())
        keep = np.flatnonzero(w >= top - TRUNC)
        left = w.size - (int(keep[-1]) - int(keep[0]) + 1)
        return int(keep[0]), int(keep[-1]), (math.log(left) + top - TRUNC) if left else -math.inf

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
            t_lo = threshold_int(x, nj, ni, np.int64(mm), True)
            t_hi = threshold_int(x, nj, ni, np.int64(mm), False)
            lo = log_f[np.clip(t_lo - t0 + 1, 0, nw)]
            hi = log_s[np.clip(t_hi - t0, 0, nw)]
            out[k] = min(0.0, _lse(w_i + np.logaddexp(lo, hi)))
    return out, float(np.logaddexp(d_i, d_j))

