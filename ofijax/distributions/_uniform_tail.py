r"""The OFI p-value under the uniform null at any group size, from closed forms.

Owns P(D = x) = ⌊(n − |x| + 2)²/4⌋/N(n) and P(D ≤ t) = Q(n + t + 2)/N(n) (t ≤ 0; by symmetry
above), Q(s) = Σ_{r ≤ s} ⌊r²/4⌋ = ⌊s(s + 2)(2s − 1)/24⌋ (:func:`q_sum`, :func:`uniform_cdf`), the
exact sum over the smaller group's x (:func:`uniform_log_tail_sum`, O(n_s), for n_s ≤
``UNIFORM_SUM_MAX``; p = 2 × one tail) and, beyond it, the block bracket
(:func:`uniform_log_tail_bracket`): the closed-form sum over blocks whose ends are spaced
geometrically (factor 1 + ``_BRACKET_EPS``) from the points where a factor's relative slope is
large; each factor is monotone on a block, so each block's sum lies between L·min·min and
L·max·max of its end values: a rigorous bracket, whose relative half-width is the p-value's
``error_bound``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ._tails import threshold_int as _threshold_int

#: Below this s the product s(s + 2)(2s − 1) fits int64 (2 · 1.6e6³ < 2^63): Q(s) exact there.
_Q_EXACT_MAX = 1_600_000
#: Below this r the count r² fits int64 (3e9² < 2^63): ⌊r²/4⌋ exact there.
_R_EXACT_MAX = 3_000_000_000


def q_sum(s: np.ndarray) -> np.ndarray:
    """Σ_{r=0}^{s} ⌊r²/4⌋ = ⌊s(s + 2)(2s − 1)/24⌋ for int64 s ≥ 0, as float64 (exact below
    1.6e6, relative ~1e-16 above, where the floor changes less than one part in 1e17)."""
    s = np.asarray(s, np.int64)
    small = s < _Q_EXACT_MAX
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
    if np.max(r, initial=0) < _R_EXACT_MAX:
        cnt = ((r * r) // 4).astype(np.float64)
    else:
        rf = r.astype(np.float64)
        cnt = np.floor(rf * rf / 4.0)
    return cnt / _uniform_total(n)


def uniform_cdf(t, n) -> np.ndarray:
    """P(D ≤ t) under the uniform null (closed form, float64; t any int64, n ≥ 1)."""
    t = np.asarray(t, np.int64)
    tot = _uniform_total(n)
    tc = np.clip(t, -n - 1, n)
    low = q_sum(np.maximum(n + tc + 2, 0)) / tot  # t ≤ 0: #{D ≤ t} = Q(n + t + 2)
    high = 1.0 - q_sum(np.maximum(n - tc + 1, 0)) / tot  # t ≥ 0: N − #{D ≥ t + 1}
    out = np.where(tc <= 0, low, high)
    return np.where(t < -n, 0.0, np.where(t >= n, 1.0, out))


#: The uniform closed-form sum is exact over x = −n_s..n_s for the smaller group s up to here.
UNIFORM_SUM_MAX = 2**23
#: Values of x per NumPy step of the exact sum (memory ~ 50 MB of temporaries).
_UNI_CHUNK = 1 << 20


def uniform_log_tail_sum(m: int, n_s: int, n_l: int) -> float:
    """Exact log P(|D_s n_l − D_l n_s| ≥ m) under the uniform null (m > 0): 2 Σ_x P_s(x)
    P(D_l ≤ ⌊(x n_l − m)/n_s⌋), closed-form terms, O(n_s) in chunks (the two tails are equal
    by the symmetry D → −D and disjoint for m > 0)."""
    x_lo = max(-n_s, -((n_s * n_l - m) // n_l))  # t ≥ −n_l  ⇔  x ≥ (m − n_s n_l)/n_l
    total = 0.0
    for s in range(x_lo, n_s + 1, _UNI_CHUNK):
        x = np.arange(s, min(n_s, s + _UNI_CHUNK - 1) + 1, dtype=np.int64)
        t = _threshold_int(x, np.int64(n_l), np.int64(n_s), np.int64(m), True)
        total += float(np.sum(_uniform_pmf(x, n_s) * uniform_cdf(t, n_l)))
    return math.log(2.0 * total) if total > 0 else -math.inf


#: Relative width of a block of the bracketed uniform sum (n_s > UNIFORM_SUM_MAX): brackets of
#: relative half-width ≤ ~2e-4 (tests/test_pvalue_scale.py).
_BRACKET_EPS = 1e-4
#: Offset grids kept by :func:`_geometric_offsets` (one per group size of a call).
_OFFSETS_CACHE = 8


@lru_cache(maxsize=_OFFSETS_CACHE)
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


def uniform_log_tail_bracket(m: int, n_s: int, n_l: int) -> tuple[float, float]:
    """(log p, relative error bound) under the uniform null for any n (m > 0), by blocks.

    p = 2 Σ_x f(x), f(x) = P_s(x) G_l(t(x)) with P_s(x) = P(D_s = x) non-decreasing for x ≤ 0 and
    non-increasing for x ≥ 0, and G_l(t(x)) = P(D_l ≤ t(x)) non-decreasing in x. On a block
    [x_a, x_b] that does not straddle 0 the block's sum therefore lies in
    [L · min(P_s(x_a), P_s(x_b)) G_l(t(x_a)), L · max(P_s(x_a), P_s(x_b)) G_l(t(x_b))], L = x_b − x_a + 1:
    a rigorous bracket of the whole sum. Block ends are spaced geometrically (factor
    1 + _BRACKET_EPS) from every point where a factor's relative slope is large (the first x with
    G_l > 0, x = 0, x = ±n_s), so each block's bracket is narrow; the estimate is the sum of the
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
    gs = uniform_cdf(_threshold_int(starts, nl, ns, np.int64(m), True), n_l)
    ge = uniform_cdf(_threshold_int(ends, nl, ns, np.int64(m), True), n_l)
    lo = length * np.minimum(ps, pe) * gs
    hi = length * np.maximum(ps, pe) * ge
    est = np.clip(length * 0.5 * (ps * gs + pe * ge), lo, hi)
    tot, tlo, thi = float(est.sum()), float(lo.sum()), float(hi.sum())
    if tot <= 0.0:
        return -math.inf, 0.0
    bound = max(tot - tlo, thi - tot) / tot
    return math.log(2.0 * tot), bound
