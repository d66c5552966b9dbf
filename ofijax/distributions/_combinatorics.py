"""Exact counting over M(n), the set of confusion matrices with n samples (OFI paper, App. B–D).

Everything here is exact (Python ints, ``fractions.Fraction``) or float64 NumPy, runs on the host,
and is the reference the JAX samplers and the streaming reductions are tested against.

Rank order. Matrices are ranked by the *remainder* ``m = n − TP`` (so TP descending), then by
``k = m − FP + 1`` (FP descending), then by FN ascending:

    rank(cm) = N(m − 1) + T(k − 1) + FN,   N(m) = C(m + 3, 3),  T(k) = k (k + 1) / 2,

because the matrices with TP ≥ t are a shifted copy of M(n − t) (N(n − t) of them) and, for a fixed
TP, those with FP ≥ f number T(m − f + 1). Both blocks invert in closed form (a cube root, a square
root and an integer correction step), which the uniform sampler uses to unrank one random integer.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral

import numpy as np

__all__ = [
    "num_cms",
    "cell_count",
    "tri",
    "diff_count",
    "diff_counts",
    "enumerate_cms",
    "rank_cms",
    "unrank_cms_np",
    "trinomial_diff_pmf",
    "log_factorials",
]


def num_cms(n: int) -> int:
    """|M(n)| = C(n + 3, 3) = (n + 1)(n + 2)(n + 3) / 6 (Corollary B.2), for any integer n ≥ −1."""
    return (n + 1) * (n + 2) * (n + 3) // 6


def tri(k: int) -> int:
    """The k-th triangular number T(k) = k (k + 1) / 2."""
    return k * (k + 1) // 2


def cell_count(x: int, n: int) -> int:
    """C(x; n) = C(n − x + 2, 2): matrices of M(n) in which a given cell equals x (Theorem B.1)."""
    if x < 0 or x > n:
        return 0
    return (n - x + 1) * (n - x + 2) // 2


def diff_count(d: int, n: int) -> int:
    """Number of (TP, FN, FP, TN) ∈ M(n) with FP − FN = d, namely ⌊(n − |d| + 2)² / 4⌋.

    Derivation: with FN = j and FP = j + |d| (or the mirror), TP + TN = n − |d| − 2j leaves
    n − |d| − 2j + 1 choices, so with r = n − |d| the count is Σ_{j=0}^{⌊r/2⌋} (r − 2j + 1):
    (q + 1)² for r = 2q and (q + 1)(q + 2) for r = 2q + 1, both equal to ⌊(r + 2)² / 4⌋.
    """
    r = n - abs(d)
    if r < 0:
        return 0
    return (r + 2) * (r + 2) // 4


def diff_counts(n: int) -> np.ndarray:
    """int64 array of :func:`diff_count` for d = −n, …, n (O(n))."""
    r = n - np.abs(np.arange(-n, n + 1, dtype=np.int64))
    return (r + 2) * (r + 2) // 4


def enumerate_cms(n: int) -> np.ndarray:
    """All of M(n) as an int64 array (N(n), 4) in TP, FN, FP, TN layout, in rank order."""
    blocks = []
    for m in range(n + 1):  # m = n − TP
        row, col = np.tril_indices(m + 1)  # row = k − 1, col = FN < k, row-major = rank order
        fp = m - row
        fn = col
        tn = row - col
        tp = np.full_like(fp, n - m)
        blocks.append(np.stack([tp, fn, fp, tn], axis=-1))
    return np.concatenate(blocks, axis=0).astype(np.int64)


def rank_cms(cm: np.ndarray) -> np.ndarray:
    """Rank (int64, or Python-int object array when large) of each matrix of a (..., 4) stack."""
    cm = np.asarray(cm, dtype=np.int64)
    fn, fp, tn = cm[..., 1], cm[..., 2], cm[..., 3]
    m = fn + fp + tn
    k = m - fp + 1
    return m * (m + 1) * (m + 2) // 6 + (k - 1) * k // 2 + fn


def _icbrt_floor(v: int) -> int:
    """⌊v^(1/3)⌋ for a non-negative Python int, exactly."""
    r = int(round(v ** (1.0 / 3.0))) if v < 2**1000 else int(math.isqrt(v))
    while r**3 > v:
        r -= 1
    while (r + 1) ** 3 <= v:
        r += 1
    return r


def unrank_cms_np(rank: int, n: int) -> tuple[int, int, int, int]:
    """Exact (Python int) inverse of :func:`rank_cms` for one rank in [0, N(n))."""
    s = int(rank)
    # m = min{m : N(m) > s}; N(m) ≈ (m + 2)³ / 6.
    m = max(_icbrt_floor(6 * s) - 3, 0)
    while num_cms(m) <= s:
        m += 1
    while m > 0 and num_cms(m - 1) > s:
        m -= 1
    s2 = s - num_cms(m - 1)
    k = max((math.isqrt(8 * s2 + 1) - 1) // 2, 0)
    while tri(k) <= s2:
        k += 1
    while k > 1 and tri(k - 1) > s2:
        k -= 1
    s3 = s2 - tri(k - 1)
    fp = m + 1 - k
    return (n - m, s3, fp, k - 1 - s3)


def log_factorials(n: int) -> np.ndarray:
    """float64 array of log(k!) for k = 0..n."""
    out = np.zeros(n + 1, dtype=np.float64)
    if n >= 1:
        out[1:] = np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))
    return out


def _xlogy(x: np.ndarray, y: float) -> np.ndarray:
    if y == 0.0:
        return np.where(x == 0, 0.0, -np.inf)
    return x * math.log(y)


def trinomial_diff_pmf(n: int, p_fp: float, p_fn: float) -> np.ndarray:
    """P(FP − FN = d), d = −n..n, under Multinomial(n, p) (float64, O(n²) in row chunks).

    P(FP − FN = d) = Σ_FN n! / (FP! FN! R!) p_FP^FP p_FN^FN (1 − p_FP − p_FN)^R, FP = FN + d,
    R = n − FP − FN ≥ 0 (ofi_notes §10).
    """
    p_rest = max(1.0 - p_fp - p_fn, 0.0)
    lf = log_factorials(n)
    out = np.zeros(2 * n + 1, dtype=np.float64)
    a = np.arange(n + 1, dtype=np.int64)  # FP
    rows = max(1, (1 << 22) // (n + 1))
    for start in range(0, n + 1, rows):
        b = np.arange(start, min(n + 1, start + rows), dtype=np.int64)[:, None]  # FN
        r = n - a[None, :] - b
        ok = r >= 0
        rr = np.where(ok, r, 0)
        logp = (
            lf[n]
            - lf[a][None, :]
            - lf[b]
            - lf[rr]
            + _xlogy(a[None, :].astype(np.float64), p_fp)
            + _xlogy(b.astype(np.float64), p_fn)
            + _xlogy(rr.astype(np.float64), p_rest)
        )
        w = np.where(ok, np.exp(logp), 0.0)
        d = (a[None, :] - b) + n
        out += np.bincount(d.ravel(), weights=w.ravel(), minlength=2 * n + 1)
    return out


def is_python_integer(x: object) -> bool:
    """True for Python/NumPy integers (not bool)."""
    return isinstance(x, Integral) and not isinstance(x, bool)


def fraction_or_float(x: object) -> Fraction | float:
    """Keep exact numbers exact (int/Fraction → Fraction), everything else becomes float."""
    if isinstance(x, Fraction) or is_python_integer(x):
        return Fraction(x)
    return float(x)
