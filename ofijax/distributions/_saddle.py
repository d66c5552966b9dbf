r"""The saddlepoint tail of the pair statistic T = D_i n_j − D_j n_i under a multinomial null.

Owns :func:`log_tail_saddle` (both groups by saddlepoints) and :func:`log_tail_hybrid` (the
smaller group's exact PMF against the larger group's saddlepoint tails). The sum over x of the
smaller group s is restricted to the window x* ± (6σ* + 4) around the tilted mean of D_s at the
two-group saddlepoint (terms outside are below e⁻¹⁸ of the largest and decay geometrically),
with P(D_s = x) from the closed-form lattice saddlepoint with its first correction term and the
tails of D_l from the Lugannani–Rice formula with Daniels' second continuity correction (both
closed form: the saddle equation of one group is a quadratic in e^u). A sum of positive terms has
at most the largest relative error of its terms, so the bound of the univariate pieces carries
over (the engine's SADDLE_REL_ERROR, in the domain its SADDLE_MIN_* constants state).
"""

from __future__ import annotations

import math

import numpy as np

from ._diffpmf import lse as _lse
from ._diffpmf import special as _sp
from ._tails import TRUNC as _TRUNC
from ._tails import threshold_int as _threshold_int

#: |u| below which log Z(u) is computed as log1p(expm1 sums): keeps its relative digits near 0.
_NEAR_ZERO_TILT = 1.0
#: |w| below which Lugannani–Rice cancels (1/w − 1/v); an Edgeworth expansion is used there.
_SMALL_W = 1e-4
#: Tilt bracket [0, _TILT_MAX / n_s] of the bisection and its halvings (80 halvings of 60 reach
#: below float64 resolution).
_TILT_MAX = 60.0
_BISECT_STEPS = 80
#: The window x* ± (half_width σ* + _WINDOW_PAD) of the sum over the smaller group.
_WINDOW_PAD = 4.0
#: Points per block of the windowed sums (rows padded to the block's widest; ~100 MB temporaries).
_BLOCK_POINTS = 2e6


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
    # amplifies into a wrong tail near the centre)
    uu = np.clip(u, -_NEAR_ZERO_TILT, _NEAR_ZERO_TILT)
    with np.errstate(invalid="ignore"):
        near = np.log1p((a * np.expm1(-uu) + b * np.expm1(uu)) / (a + b + c))
    return em / z, e0 / z, ep / z, np.where(np.abs(u) < _NEAR_ZERO_TILT, near, lz)


def _cumulants(wm, w0, wp):
    mu = wp - wm
    d_m, d_0, d_p = -1.0 - mu, -mu, 1.0 - mu
    k2 = wp * w0 + wm * w0 + 4.0 * wp * wm
    s_m, s_0, s_p = d_m * d_m, d_0 * d_0, d_p * d_p  # products, not pow (cheaper)
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
    small = np.abs(w) < _SMALL_W
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


def log_lower_saddle(t, n, a, b, c):
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
    hi = np.full_like(target, _TILT_MAX) / np.minimum(n_i, n_j)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        big = _pair_kprime(mid, n_i, n_j, a, b, c) >= target
        hi = np.where(big, mid, hi)
        lo = np.where(big, lo, mid)
    wm, w0, wp, _ = _step_weights(hi * n_j, a, b, c, False)
    return n_i * (wp - wm), np.sqrt(n_i * (wp * w0 + wm * w0 + 4.0 * wp * wm))



def _threshold(x, nj, ni, mm, upper):
    """t(x) of :func:`_threshold_int` for float-valued integer arrays (exact in int64)."""
    xi = np.asarray(x).astype(np.int64)
    t = _threshold_int(xi, np.asarray(nj).astype(np.int64), np.asarray(ni).astype(np.int64),
                       np.asarray(mm).astype(np.int64), upper)
    return t.astype(np.float64)


def _log_tail_j(t, nj, a, b, c, upper):
    """log P(D_j ≤ t) (upper tail of T) or log P(D_j ≥ t), t integer-valued (any range)."""
    if upper:
        lt = log_lower_saddle(np.clip(t, -nj, nj), nj, a, b, c)
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
        hw = np.ceil(half_width * sd + _WINDOW_PAD)
        lo = np.maximum(np.round(xc) - hw, -n_i)
        hi = np.minimum(np.round(xc) + hw, n_i)
        order = np.argsort(hi - lo, kind="stable")  # similar widths share a block (less padding)
        width = hi - lo + 1.0
        s = 0
        while s < m.size:  # blocks of ≤ _BLOCK_POINTS points (rows padded to the block's widest)
            e = s + 1
            while e < m.size and width[order[e]] * (e - s + 1) <= _BLOCK_POINTS:
                e += 1
            k = order[s:e]
            val = _window_logsum(lo[k], hi[k], n_i[k], n_j[k], m[k], a[k], b[k], c[k], upper)
            out[k] = np.logaddexp(out[k], val)
            s = e
    return np.minimum(out, 0.0)


def log_tail_hybrid(lp_s, off_s, m, n_s, n_l, a, b, c) -> np.ndarray:
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

