r"""Per-group laws of D = FP − FN (an integer in [−n, n]): the exact log-PMFs the p-value engine sums.

Owns :func:`log_diff_pmf` (one group, cached), :func:`log_diff_pmfs` (many groups: the
multinomial recurrence batched over distributions with the same floating-point operations as one
at a time, so batching changes no digit), the binomial closed forms (:func:`log_binomial`,
:func:`log_binomial_window`), the compensated running sum (:func:`running_sum`), the log-sum-exp
the tail sums share (:func:`lse`) and ``special``, scipy.special imported on first use.

Uniform null (every matrix of M(n) equally likely): #{D = d} = ⌊(n − |d| + 2)²/4⌋ of N(n).
Multinomial(n; p) with a = p_FN, b = p_FP, c = p_TP + p_TN: the coefficients t_d of
(a/z + c + b z)^n satisfy a(n + d + 1) t_{d+1} + c d t_d = b(n − d + 1) t_{d−1}; they are run
downward from t_n = b^n for d ≥ 0 (and mirrored for d ≤ 0) on the ratios ρ = t_{d−1}/t_d,
ρ ← A/ρ + C with A, C > 0, so every term is positive; log t is the running sum of log ρ, so
nothing underflows. That running sum reaches |n log b|; above ``COMP_MIN_N`` steps it is summed
in blocks with compensated offsets, so the PMF keeps a relative error of ~n·1e-16 (accuracy
measurements: experiments/notes/distributions.md). c = 0 (and a or b = 0) are binomial closed
forms (``scipy.special.gammaln``, vectorized).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


class _LazySpecial:
    """``scipy.special``, imported on first use (``import ofijax`` and the audits that never
    reach these functions skip its import)."""

    def __getattr__(self, name):
        from scipy import special

        return getattr(special, name)


special = _LazySpecial()


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
    if n <= COMP_MIN_N:  # short: one running sum (see COMP_MIN_N)
        seq = np.empty(n + 1)
        seq[0] = n * math.log(b)
        seq[1:] = lr
        return np.cumsum(seq)
    return running_sum(n * math.log(b), lr)


#: Above this n the log-PMF's running sum is blocked and compensated (:func:`running_sum`);
#: up to here one running sum rounds at most ~√4096 = 64 ulps of |n log b|.
COMP_MIN_N = 4096
#: Steps per block of :func:`running_sum` (a block's running sum stays ≤ 1024 max|step|).
_COMP_BLOCK = 1024


def running_sum(start: float, steps: np.ndarray) -> np.ndarray:
    """[start, start + s_0, start + s_0 + s_1, …] with an error of a few ulps of the result.

    A plain running sum whose magnitude reaches |n log b| rounds every step at that magnitude
    (a random walk of ~√n ulps). Here: running sums within blocks of ``_COMP_BLOCK`` steps
    (magnitudes ≤ _COMP_BLOCK max|s|), block offsets accumulated with Kahan compensation, one
    final addition per value."""
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


def log_binomial(n: int, p: float) -> np.ndarray:
    """log Bin(k; n, p), k = 0..n (float64; ``p`` in (0, 1]: the callers route p = 0 elsewhere).

    log C(n, k) = lgamma(n + 1) − lgamma(k + 1) − lgamma(n − k + 1), vectorized
    (``scipy.special.gammaln``, ~1 ulp each; no Python loop over k).
    """
    return log_binomial_window(n, p, 0, n)


def log_binomial_window(n: int, p: float, k0: int, k1: int) -> np.ndarray:
    """log Bin(k; n, p) for k = k0..k1 (0 ≤ k0 ≤ k1 ≤ n), vectorized; 0·log 0 = 0."""
    k = np.arange(k0, k1 + 1, dtype=np.float64)
    lc = special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kp = np.where(k > 0, k * math.log(p) if p > 0 else -np.inf, 0.0)
        q = math.log1p(-p) if p < 1 else -math.inf
        kq = np.where(k < n, (n - k) * q, 0.0)
    return lc + kp + kq


#: Log-PMFs kept by :func:`log_diff_pmf` (the groups of a few audits; ≤ 50 n bytes each).
_PMF_CACHE = 256


@lru_cache(maxsize=_PMF_CACHE)
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
            out[: n + 1] = log_binomial(n, a)[::-1]
        elif a <= 0.0:  # D = FP ~ Bin(n, b)
            out = np.full(2 * n + 1, -np.inf)
            out[n:] = log_binomial(n, b)
        elif c <= 0.0:  # FN + FP = n: D = 2 FP − n, FP ~ Bin(n, b / (a + b))
            out = np.full(2 * n + 1, -np.inf)
            out[::2] = log_binomial(n, b / (a + b))
        else:
            up = _half(n, a, b, c)  # d = n..0
            lo = _half(n, b, a, c)  # d = −n..0
            out = np.concatenate([lo[:n], up[::-1]])
        with np.errstate(divide="ignore"):
            out = out - lse(out)  # removes the rounding drift (≈ n·1e-16)
    out.setflags(write=False)
    return out


#: Distributions per block of the batched recurrence (NumPy rows of one step).
_BATCH_ROWS = 128
#: Fewer distributions than this are built one at a time (scalar loop, cached).
_BATCH_MIN = 6
#: Most floats a block of the batched recurrence may hold (16 MB of ratios).
BATCH_FLOATS = 2_000_000
#: Steps of the recurrence whose coefficients are precomputed at once (memory ~ 3·chunk·rows).
_STEP_CHUNK = 2048


def lse(v: np.ndarray) -> float:
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
               and (j + 1 - i) * (ns[todo[j]] + 1) <= BATCH_FLOATS):
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
                v = v - lse(v)
            v.setflags(write=False)
            out[r] = v
        i = j
    return out
