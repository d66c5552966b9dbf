r"""Significance of the Objective Fairness Index: exact null tests and bootstrap intervals.

OFI(i, j) = B_i − B_j with B = (FP − FN)/n. Write D = FP − FN (an integer in [−n, n]). The test
statistic is |OFI|; an observed pair is compared with the distribution of |D_i/n_i − D_j/n_j| when
the two groups' confusion matrices are drawn independently under a **named null**:

* ``"uniform"`` -- every confusion matrix of M(n) equally likely (the OFI paper's setting, App. B):
  P(D = d) = ⌊(n − |d| + 2)² / 4⌋ / C(n + 3, 3). This null knows nothing of the data but the
  group sizes; it is the reference behind the paper's ±0.3 threshold and is very permissive.
* ``"pooled"`` -- both groups drawn from Multinomial(n_g, p) with p the pooled confusion matrix of
  the pair, p = (cm_i + cm_j)/(n_i + n_j) (MATCH-style, the 2025 follow-up's fixed-p model):
  P(D = d) = Σ_FN n!/(FP! FN! R!) p_FP^FP p_FN^FN (1 − p_FP − p_FN)^R with FP = FN + d.

Exactness: with ``M = |D_i n_j − D_j n_i|`` (an integer), the two-sided p-value is

.. math:: p = \sum_{x} P(D_i = x)\,\big[P(D_j \le \lfloor (x n_j - M)/n_i \rfloor)
          + P(D_j \ge \lceil (x n_j + M)/n_i \rceil)\big],

so ties are decided in integer arithmetic, never by a float tolerance, in O(n_i + n_j) once the two
PMFs are known. The PMFs come from :func:`ofijax.distributions.marginal_benefit_pmf` (exact,
float64; O(n²) for the multinomial null) for n ≤ 2,000 and, for the multinomial null above that,
from an FFT of the generating function (p_FN z⁻¹ + p_TP + p_TN + p_FP z)ⁿ (absolute error ~1e-13,
so p-values below ~1e-12 are reported as such, not to their digits). :func:`ofijax.distributions.ofi_pvalue` computes the same p-value from the full OFI
lattice, which is limited to moderate n.

The bootstrap interval resamples rows within each group, which for unweighted data is exactly
Multinomial(n_g, cm_g/n_g) per group; the percentile interval of the pairwise OFIs is returned.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as v
from ofijax import distributions as _dist
from ofijax.cm import FN, FP
from ofijax.metrics import ofi, pairwise

__all__ = [
    "NULLS",
    "OFITest",
    "OFIBootstrap",
    "ofi_test",
    "pairwise_ofi_test",
    "ofi_bootstrap",
    "diff_pmf",
    "holm",
]

#: The null models understood by :func:`ofi_test`.
NULLS = ("uniform", "pooled")
_METHODS = ("exact", "monte_carlo")
_EXACT_LIMIT = 2_000  # above this group size the multinomial PMF is computed by FFT


class OFITest(NamedTuple):
    """Result of :func:`ofi_test`.

    Attributes:
        ofi: the observed OFI = B_i − B_j.
        p_value: P(|OFI*| ≥ |OFI|) under the null (two-sided).
        null: the null model's name (``"uniform"`` or ``"pooled"``).
        method: ``"exact"`` or ``"monte_carlo"``.
    """

    ofi: float
    p_value: float
    null: str
    method: str


class OFIBootstrap(NamedTuple):
    """Result of :func:`ofi_bootstrap`: percentile intervals of every pairwise OFI.

    Attributes:
        low: ``(k, k)`` lower bounds of OFI(i, j).
        high: ``(k, k)`` upper bounds.
        confidence: the nominal coverage, e.g. 0.95.
        num_samples: the number of bootstrap replicates.
    """

    low: np.ndarray
    high: np.ndarray
    confidence: float
    num_samples: int


# --------------------------------------------------------------------------------------------
# Exact PMFs of D = FP − FN
# --------------------------------------------------------------------------------------------


def _multinomial_pmf_fft(n: int, p_fp: float, p_fn: float) -> np.ndarray:
    size = 2 * n + 1
    step = np.zeros(size)
    step[0], step[1], step[2] = p_fn, max(1.0 - p_fp - p_fn, 0.0), p_fp  # z^(D + 1) per row
    pmf = np.fft.irfft(np.fft.rfft(step) ** n, size)
    pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


def diff_pmf(n: int, probs: Any = None) -> np.ndarray:
    """PMF of D = FP − FN for one group of size ``n``, at d = −n, …, n (exact; FFT for large n).

    Args:
        n: group size, ≥ 1.
        probs: ``None`` for the uniform null over M(n); otherwise cell probabilities
            ``(p_TP, p_FN, p_FP, p_TN)`` of a Multinomial(n, p) null.

    Returns:
        float64 array of length ``2n + 1`` summing to 1 (B = d/n).

    Examples:
        >>> from ofijax.auditing._significance import diff_pmf
        >>> (diff_pmf(1) * 4).tolist()  # M(1): FN, {TP, TN}, FP
        [1.0, 2.0, 1.0]
        >>> diff_pmf(1, [0.5, 0.25, 0.25, 0.0]).tolist()
        [0.25, 0.5, 0.25]
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n: group size must be ≥ 1, got {n}.")
    if probs is None:
        return _dist.marginal_benefit_pmf(n).probs
    p = v.check_probabilities(probs, "probs").reshape(-1)
    if p.shape != (4,) or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError("probs: must be 4 probabilities (TP, FN, FP, TN) summing to 1.")
    if n <= _EXACT_LIMIT:
        return _dist.marginal_benefit_pmf(n, p).probs
    return _multinomial_pmf_fft(n, float(p[FP]), float(p[FN]))


def _pvalue_from_pmfs(pmf_i: np.ndarray, pmf_j: np.ndarray, n_i: int, n_j: int, m: int) -> float:
    """P(|D_i n_j − D_j n_i| ≥ m) for independent D_i ~ pmf_i, D_j ~ pmf_j (integer m ≥ 0)."""
    if m <= 0:
        return 1.0
    x = np.arange(-n_i, n_i + 1, dtype=np.int64)
    lower_cdf = np.concatenate([[0.0], np.cumsum(pmf_j)])  # lower_cdf[t + n_j + 1] = P(D_j ≤ t)
    upper_sf = np.concatenate([np.cumsum(pmf_j[::-1])[::-1], [0.0]])  # upper_sf[t + n_j] = P(D_j ≥ t)
    t_lo = np.floor_divide(x * n_j - m, n_i)
    t_hi = -np.floor_divide(-(x * n_j + m), n_i)
    lo = lower_cdf[np.clip(t_lo + n_j + 1, 0, 2 * n_j + 1)]
    hi = upper_sf[np.clip(t_hi + n_j, 0, 2 * n_j + 1)]
    return float(min(1.0, max(0.0, np.sum(pmf_i * (lo + hi)))))


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def _integer_cm(cm: Any, name: str) -> np.ndarray:
    arr = v.check_counts(cm, name)
    if arr.shape != (4,):
        raise ValueError(f"{name}: must be one confusion matrix (TP, FN, FP, TN); got shape {arr.shape}.")
    if arr.sum() <= 0:
        raise ValueError(f"{name}: has n = 0; a group needs at least one row.")
    return arr.astype(np.int64)


def _check_key(key: Any) -> jax.Array:
    if key is None:
        raise ValueError("key: method='monte_carlo' needs a PRNG key, e.g. jax.random.key(0).")
    if isinstance(key, (int, np.integer)):
        return jax.random.key(int(key))
    return key


def _null_probs(cm_i: np.ndarray, cm_j: np.ndarray, null: str):
    if null == "uniform":
        return None
    pooled = (cm_i + cm_j).astype(np.float64)
    return pooled / pooled.sum()


def ofi_test(
    cm_i: Any,
    cm_j: Any,
    *,
    null: str = "pooled",
    method: str = "exact",
    key: Any = None,
    num_samples: int = 10_000,
) -> OFITest:
    r"""Two-sided test of OFI(i, j) = 0 against a named null model.

    .. math:: p = P_{H_0}\big(|B^*_i - B^*_j| \ge |B_i - B_j|\big)

    Args:
        cm_i: ``(4,)`` integer counts TP, FN, FP, TN of group i.
        cm_j: ``(4,)`` counts of group j.
        null: ``"pooled"`` (default): both groups drawn from Multinomial(n_g, p_pooled) with
            p_pooled = (cm_i + cm_j)/(n_i + n_j); ``"uniform"``: each group's matrix uniform over
            M(n_g), the OFI paper's null (depends only on n_i, n_j).
        method: ``"exact"`` (default; convolution of the two exact PMFs of FP − FN) or
            ``"monte_carlo"`` (``num_samples`` draws with ``key``; p = (1 + hits)/(1 + draws)).
        key: PRNG key for ``method="monte_carlo"``.
        num_samples: Monte Carlo draws.

    Returns:
        :class:`OFITest` with the observed OFI, the p-value and the null's name.

    Examples:
        Table 1, scenario B (OFI = 2/9): unremarkable under the uniform null over M(6) × M(18).

        >>> from ofijax.auditing._significance import ofi_test
        >>> t = ofi_test([0, 1, 0, 5], [0, 7, 0, 11], null="uniform")
        >>> round(t.ofi, 4), round(t.p_value, 3), t.null
        (0.2222, 0.716, 'uniform')
    """
    ci, cj = _integer_cm(cm_i, "cm_i"), _integer_cm(cm_j, "cm_j")
    v.check_choice(null, "null", NULLS)
    v.check_choice(method, "method", _METHODS)
    n_i, n_j = int(ci.sum()), int(cj.sum())
    d_i, d_j = int(ci[FP] - ci[FN]), int(cj[FP] - cj[FN])
    o = d_i / n_i - d_j / n_j
    m = abs(d_i * n_j - d_j * n_i)
    probs = _null_probs(ci, cj, null)
    if method == "exact":
        p = _pvalue_from_pmfs(diff_pmf(n_i, probs), diff_pmf(n_j, probs), n_i, n_j, m)
    else:
        p = float(
            _monte_carlo_pvalues(
                _check_key(key), np.array([n_i]), np.array([n_j]),
                None if probs is None else probs[None], np.array([m]), int(num_samples),
            )[0]
        )
    return OFITest(float(o), p, null, method)


def pairwise_ofi_test(
    cms: Any,
    *,
    null: str = "pooled",
    method: str = "exact",
    key: Any = None,
    num_samples: int = 10_000,
    progress: Any = None,
) -> np.ndarray:
    """p-values of every pair of groups, ``(k, k)`` symmetric with 1 on the diagonal.

    Args:
        cms: ``(k, 4)`` integer counts.
        null, method, key, num_samples: as in :func:`ofi_test` (one key for all pairs).
        progress: optional callable wrapping an iterable (e.g. ``tqdm``) for the exact loop.

    Examples:
        >>> from ofijax.auditing._significance import pairwise_ofi_test
        >>> P = pairwise_ofi_test([[0, 1, 0, 5], [0, 7, 0, 11]], null="uniform")
        >>> P.round(3).tolist()
        [[1.0, 0.716], [0.716, 1.0]]
    """
    c = v.check_counts(cms, "cms")
    if c.ndim != 2 or c.shape[-1] != 4:
        raise ValueError(f"cms: must have shape (k, 4); got {c.shape}.")
    c = c.astype(np.int64)
    v.check_choice(null, "null", NULLS)
    v.check_choice(method, "method", _METHODS)
    n = c.sum(-1)
    if np.any(n <= 0):
        raise ValueError(f"cms: group {int(np.argmin(n))} has n = 0; drop empty groups first.")
    k = c.shape[0]
    iu, ju = np.triu_indices(k, 1)
    d = c[:, FP] - c[:, FN]
    m = np.abs(d[iu] * n[ju] - d[ju] * n[iu])
    out = np.ones((k, k))
    if iu.size == 0:
        return out
    if method == "exact":
        pairs = list(zip(iu.tolist(), ju.tolist(), m.tolist()))
        it = progress(pairs) if progress is not None else pairs
        vals = []
        for i, j, mm in it:
            probs = _null_probs(c[i], c[j], null)
            vals.append(
                _pvalue_from_pmfs(diff_pmf(n[i], probs), diff_pmf(n[j], probs), int(n[i]), int(n[j]), mm)
            )
        vals = np.asarray(vals)
    else:
        probs = None
        if null == "pooled":
            pooled = (c[iu] + c[ju]).astype(np.float64)
            probs = pooled / pooled.sum(-1, keepdims=True)
        vals = _monte_carlo_pvalues(_check_key(key), n[iu], n[ju], probs, m, int(num_samples))
    out[iu, ju] = vals
    out[ju, iu] = vals
    return out


def _uniform_cm_draws(key, n, shape):
    """Matrices uniform over M(n) by stars and bars: 3 distinct bar positions among n + 3 slots.

    ``n`` broadcasts against ``shape``; returns int32 ``shape + (4,)``. Exact, and cheap to compile.
    """
    k1, k2, k3 = jax.random.split(key, 3)
    n = jnp.broadcast_to(n.astype(jnp.int32), shape)
    s1 = jax.random.randint(k1, shape, 0, n + 3)
    s2 = jax.random.randint(k2, shape, 0, n + 2)
    s2 = s2 + (s2 >= s1)
    lo, hi = jnp.minimum(s1, s2), jnp.maximum(s1, s2)
    s3 = jax.random.randint(k3, shape, 0, n + 1)
    s3 = s3 + (s3 >= lo)
    s3 = s3 + (s3 >= hi)
    b = jnp.sort(jnp.stack([s1, s2, s3], -1), axis=-1)
    return jnp.stack([b[..., 0], b[..., 1] - b[..., 0] - 1, b[..., 2] - b[..., 1] - 1, n + 2 - b[..., 2]], -1)


@functools.partial(jax.jit, static_argnames=("num_samples", "uniform"))
def _null_draws(key, n_i, n_j, probs, *, num_samples, uniform):
    """D = FP − FN of ``num_samples`` null draws per pair: two ``(num_samples, P)`` arrays.

    ``uniform``: each matrix uniform over M(n) (stars and bars); otherwise Multinomial(n, probs)
    with the pair's ``probs`` ``(P, 4)``.
    """
    dt = jnp.result_type(float)
    k_i, k_j = jax.random.split(key)
    shape = (num_samples, n_i.shape[0])
    if uniform:
        cm_i = _uniform_cm_draws(k_i, n_i, shape)
        cm_j = _uniform_cm_draws(k_j, n_j, shape)
    else:
        p = jnp.broadcast_to(probs.astype(dt), shape + (4,))
        cm_i = jax.random.multinomial(k_i, jnp.broadcast_to(n_i.astype(dt), shape), p, shape=shape + (4,))
        cm_j = jax.random.multinomial(k_j, jnp.broadcast_to(n_j.astype(dt), shape), p, shape=shape + (4,))
    return cm_i[..., FP] - cm_i[..., FN], cm_j[..., FP] - cm_j[..., FN]


def _monte_carlo_pvalues(key, n_i, n_j, probs, m, num_samples):
    if num_samples < 1:
        raise ValueError(f"num_samples: must be ≥ 1, got {num_samples}.")
    n_i, n_j = np.asarray(n_i, np.int64), np.asarray(n_j, np.int64)
    probs_arr = jnp.full((n_i.shape[0], 4), 0.25) if probs is None else jnp.asarray(probs)
    d_i, d_j = _null_draws(
        key, jnp.asarray(n_i), jnp.asarray(n_j), probs_arr, num_samples=num_samples, uniform=probs is None
    )
    # Counts are exact integers in float; decide ties in int64 on the host.
    d_i = np.rint(np.asarray(d_i)).astype(np.int64)
    d_j = np.rint(np.asarray(d_j)).astype(np.int64)
    stat = np.abs(d_i * n_j[None, :] - d_j * n_i[None, :])
    hits = np.sum(stat >= np.asarray(m)[None, :], axis=0)
    return (1.0 + hits) / (1.0 + num_samples)


def holm(p_values: Any) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1).

    Examples:
        >>> from ofijax.auditing._significance import holm
        >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def _bootstrap_ofi_multinomial(key, cms, num_samples):
    """``(num_samples, k, k)`` bootstrap OFIs from per-group Multinomial(n_g, cm_g/n_g) draws.

    O(R·k) work but slow to compile (``jax.random.multinomial`` runs binomial rejection loops);
    used for large data, where the row draws of :func:`_bootstrap_ofi_positions` would be too many.
    """
    dt = jnp.result_type(float)
    c = cms.astype(dt)
    n = c.sum(-1)
    shape = (num_samples,) + c.shape
    draws = jax.random.multinomial(
        key, jnp.broadcast_to(n, shape[:-1]), jnp.broadcast_to(c / n[:, None], shape), shape=shape
    )
    b = (draws[..., FP] - draws[..., FN]) / n
    return b[..., :, None] - b[..., None, :]


def _bootstrap_ofi_positions(key, cms, position_group, num_samples):
    """The same bootstrap by resampling rows: position r of a replicate belongs to group
    ``position_group[r]`` and lands in cell c with probability cm_g[c]/n_g (one uniform each).

    O(R·N) cheap elementwise work; compiles in about a second.
    """
    dt = jnp.result_type(float)
    c = cms.astype(dt)
    n = c.sum(-1)
    k = c.shape[0]
    cum = jnp.cumsum(c, -1)[:, :3]
    u = jax.random.uniform(key, (num_samples, position_group.shape[0]), dt)
    x = u * n[position_group]
    cell = (x[..., None] >= cum[position_group]).sum(-1)
    seg = position_group[None, :] * 4 + cell + (jnp.arange(num_samples, dtype=jnp.int32) * k * 4)[:, None]
    cm = jax.ops.segment_sum(
        jnp.ones(seg.size, dt), seg.reshape(-1), num_segments=num_samples * k * 4
    ).reshape(num_samples, k, 4)
    b = (cm[..., FP] - cm[..., FN]) / n
    return b[..., :, None] - b[..., None, :]


_bootstrap_multinomial_jit = jax.jit(_bootstrap_ofi_multinomial, static_argnames=("num_samples",))
_bootstrap_positions_jit = jax.jit(_bootstrap_ofi_positions, static_argnames=("num_samples",))
_ROW_DRAW_LIMIT = 1 << 25  # R·N above this: multinomial draws instead of row draws


def _bootstrap_ofi(key, cms, *, num_samples: int):
    """Bootstrap OFIs ``(num_samples, k, k)`` of integer counts ``cms`` (k, 4), by the cheaper route."""
    c = np.asarray(cms)
    sizes = np.rint(c.sum(-1)).astype(np.int64)
    if int(sizes.sum()) * num_samples <= _ROW_DRAW_LIMIT:
        pos = jnp.asarray(np.repeat(np.arange(c.shape[0], dtype=np.int32), sizes))
        return _bootstrap_positions_jit(key, jnp.asarray(c), pos, num_samples=num_samples)
    return _bootstrap_multinomial_jit(key, jnp.asarray(c), num_samples=num_samples)


@functools.partial(jax.jit, static_argnames=("num_samples", "num_groups"))
def _bootstrap_rows(key, cell, codes, order, starts, sizes, weights, *, num_samples, num_groups):
    """Weighted bootstrap: resample rows within each group, ``(num_samples, k, k)`` OFIs.

    ``order`` sorts rows by group; position r of a replicate draws a random row of group codes[r].
    """
    dt = jnp.result_type(float)
    nrows = cell.shape[0]
    u = jax.random.uniform(key, (num_samples, nrows), dt)
    g = codes[order]  # group of each sorted position
    pick = starts[g][None, :] + jnp.minimum((u * sizes[g][None, :]).astype(jnp.int32), sizes[g][None, :] - 1)
    rows = order[pick]  # (R, N) original row ids
    seg = codes[rows] * 4 + cell[rows]
    data = weights[rows].astype(dt)
    seg = seg + (jnp.arange(num_samples, dtype=jnp.int32) * num_groups * 4)[:, None]
    cm = jax.ops.segment_sum(data.reshape(-1), seg.reshape(-1), num_segments=num_samples * num_groups * 4)
    return pairwise(ofi, cm.reshape(num_samples, num_groups, 4))


def _percentiles(samples: jax.Array, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    a = (1.0 - confidence) / 2.0
    q = np.quantile(np.asarray(samples, dtype=np.float64), [a, 1.0 - a], axis=0)
    return q[0], q[1]


def _check_confidence(confidence: Any) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence: must lie strictly between 0 and 1, e.g. 0.95; got {confidence!r}.")
    return c


def ofi_bootstrap(
    key: Any, cms: Any, *, num_samples: int = 2000, confidence: float = 0.95
) -> OFIBootstrap:
    r"""Percentile bootstrap intervals of every pairwise OFI(i, j) = B_i − B_j.

    Rows are resampled with replacement within each group, which for counts is exactly
    cm*_g ~ Multinomial(n_g, cm_g / n_g); all groups and replicates are drawn in one vmapped call.
    The interval is the [(1 − c)/2, (1 + c)/2] quantile range of the replicates.

    Args:
        key: PRNG key (first argument, as every random function in ofijax).
        cms: ``(k, 4)`` counts TP, FN, FP, TN (k ≥ 2).
        num_samples: bootstrap replicates.
        confidence: nominal coverage c.

    Returns:
        :class:`OFIBootstrap` with ``(k, k)`` bounds (the diagonal is [0, 0]).

    Examples:
        >>> import jax
        >>> from ofijax.auditing._significance import ofi_bootstrap
        >>> bs = ofi_bootstrap(jax.random.key(0), [[30, 5, 20, 45], [40, 20, 5, 35]])
        >>> bool(bs.low[0, 1] < 0.30 < bs.high[0, 1])  # OFI = 0.15 - (-0.15) = 0.30
        True
    """
    c = v.check_counts(cms, "cms")
    if c.ndim != 2 or c.shape[-1] != 4:
        raise ValueError(f"cms: must have shape (k, 4); got {c.shape}.")
    if np.any(c.sum(-1) <= 0):
        raise ValueError("cms: a group has n = 0; drop empty groups first.")
    conf = _check_confidence(confidence)
    if int(num_samples) < 2:
        raise ValueError(f"num_samples: must be ≥ 2, got {num_samples}.")
    if isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    samples = _bootstrap_ofi(key, jnp.asarray(c), num_samples=int(num_samples))
    low, high = _percentiles(samples, conf)
    return OFIBootstrap(low, high, conf, int(num_samples))
