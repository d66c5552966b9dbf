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

p-values come from the one engine, :func:`ofijax.distributions.ofi_pvalue_cms`: with
``M = |D_i n_j − D_j n_i|`` (an integer) the two-sided p-value is

.. math:: p = \sum_{x} P(D_i = x)\,\big[P(D_j \le \lfloor (x n_j - M)/n_i \rfloor)
          + P(D_j \ge \lceil (x n_j + M)/n_i \rceil)\big],

so ties are decided in integer arithmetic, and the sum of positive terms is kept in log space:
small p-values keep their digits (no FFT, no floor). Large batches of large groups may use its
saddlepoint path (relative error ≤ 2e-3); ``method`` in the result says which ran.

The bootstrap interval resamples rows within each group, which for unweighted data is exactly
Multinomial(n_g, cm_g/n_g) per group; the percentile interval of the pairwise OFIs is returned.

The multiplicity adjustments live here too: :func:`holm` (the one Holm, over the last axis of any
shape: the pairs of one audit, or of every candidate of a batch) and :func:`benjamini_hochberg`.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as v
from ofijax import distributions as _dist
from ofijax._jaxcache import aot_jit, compiler_options
from ofijax._progress import Notice
from ofijax.cm import FN, FP
from ofijax.metrics import ofi, pairwise

#: The null models understood by :func:`ofi_test`.
NULLS = ("uniform", "pooled")
#: The p-value methods of every test and audit: ``"auto"`` (default), ``"exact"`` and
#: ``"saddlepoint"`` go to the engine :func:`ofijax.distributions.ofi_pvalue_cms`;
#: ``"monte_carlo"`` draws ``num_samples`` tables with ``key``.
METHODS = ("auto", "exact", "saddlepoint", "monte_carlo")
_METHODS = METHODS  # one vocabulary for ofi_test and pairwise_ofi_test
_PAIR_METHODS = METHODS


class OFITest(NamedTuple):
    """Result of :func:`ofi_test`.

    Attributes:
        ofi: the observed OFI = B_i − B_j.
        p_value: P(|OFI*| ≥ |OFI|) under the null (two-sided).
        null: the null model's name (``"uniform"`` or ``"pooled"``).
        method: the method that produced the p-value: ``"exact"``, ``"saddlepoint"`` (relative
            error ≤ 2e-3) or ``"monte_carlo"`` (an estimate from ``num_samples`` draws).
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
# Tests
# --------------------------------------------------------------------------------------------


def diff_pmf(n: int, probs: Any = None) -> np.ndarray:
    """PMF of D = FP − FN for one group of size ``n``, at d = −n, …, n (exact, O(n)).

    The same PMF as :func:`ofijax.distributions.marginal_benefit_pmf` (B = d/n), as an array.

    Args:
        n: group size, ≥ 1.
        probs: ``None`` for the uniform null over M(n); otherwise cell probabilities
            ``(p_TP, p_FN, p_FP, p_TN)`` of a Multinomial(n, p) null.

    Examples:
        >>> from ofijax.auditing import diff_pmf
        >>> (diff_pmf(1) * 4).tolist()  # M(1): FN, {TP, TN}, FP
        [1.0, 2.0, 1.0]
        >>> diff_pmf(1, [0.5, 0.25, 0.25, 0.0]).tolist()
        [0.25, 0.5, 0.25]
    """
    return _dist.marginal_benefit_pmf(n, probs).probs


def _integer_cm(cm: Any, name: str) -> np.ndarray:
    arr = v.check_counts(cm, name)
    if arr.shape != (4,):
        raise ValueError(f"{name}: must be one confusion matrix (TP, FN, FP, TN); got shape {arr.shape}.")
    if arr.sum() <= 0:
        raise ValueError(f"{name}: has n = 0; a group needs at least one row.")
    return arr.astype(np.int64)


def _num_draws(num_samples: Any, least: int = 1) -> int:
    """``num_samples`` as an int ≥ ``least`` (a whole number; not a bool, string or 1.5)."""
    ok = isinstance(num_samples, (int, np.integer)) and not isinstance(num_samples, (bool, np.bool_))
    if not ok or int(num_samples) < least:
        raise ValueError(f"num_samples: must be an integer ≥ {least}; got {num_samples!r}.")
    return int(num_samples)


def _null_cm(null: Any, pooled: np.ndarray) -> Any:
    """The reference CM(s) of the named null for the engine ("uniform" stays a name)."""
    v.check_choice(null, "null", NULLS)
    return "uniform" if null == "uniform" else pooled


def ofi_test(
    cm_i: Any,
    cm_j: Any,
    *,
    null: str = "pooled",
    method: str = "auto",
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
        method: ``"auto"`` (default: the engine :func:`ofijax.distributions.ofi_pvalue_cms`
            decides, exact in log space unless the exact work is very large), ``"exact"``
            (log-space exact convolution), ``"saddlepoint"`` (its approximation, relative error
            ≤ 2e-3, pooled null, n ≥ 2000) or ``"monte_carlo"`` (``num_samples`` draws from the
            :mod:`ofijax.distributions` samplers; p = (1 + hits)/(1 + draws)). The result's
            ``method`` says which one produced the p-value.
        key: PRNG key or int seed; used (and required) only by ``method="monte_carlo"``.
        num_samples: Monte Carlo draws (an integer ≥ 1).

    Returns:
        :class:`OFITest` with the observed OFI, the p-value, the null's name and the method.

    Examples:
        Table 1, scenario B (OFI = 2/9): unremarkable under the uniform null over M(6) × M(18).

        >>> from ofijax.auditing import ofi_test
        >>> t = ofi_test([0, 1, 0, 5], [0, 7, 0, 11], null="uniform")
        >>> round(t.ofi, 4), round(t.p_value, 3), t.null
        (0.2222, 0.716, 'uniform')
    """
    ci, cj = _integer_cm(cm_i, "cm_i"), _integer_cm(cm_j, "cm_j")
    ref = _null_cm(null, ci + cj)
    v.check_choice(method, "method", _METHODS)
    num = _num_draws(num_samples)
    if method == "monte_carlo":
        p = float(_monte_carlo_pvalues(v.as_key(_require_key(key)), ci[None], cj[None], null, num)[0])
        n_i, n_j = int(ci.sum()), int(cj.sum())
        o = (ci[FP] - ci[FN]) / n_i - (cj[FP] - cj[FN]) / n_j
        return OFITest(float(o), p, null, method)
    r = _dist.ofi_pvalue_cms(ci, cj, null=ref, method=method)
    return OFITest(float(r.ofi), float(r.p_value), null, str(r.method))


def pairwise_ofi_test(
    cms: Any,
    *,
    null: str = "pooled",
    method: str = "auto",
    key: Any = None,
    num_samples: int = 10_000,
    progress: Any = None,
) -> np.ndarray:
    """p-values of every pair of groups, ``(k, k)`` symmetric with 1 on the diagonal.

    All pairs go through :func:`ofijax.distributions.ofi_pvalue_cms` in one vectorized call.

    Args:
        cms: ``(k, 4)`` integer counts.
        null, key, num_samples: as in :func:`ofi_test` (one key for all pairs).
        method: ``"auto"`` (default: exact, or the saddlepoint for very large batches of large
            groups), ``"exact"``, ``"saddlepoint"`` or ``"monte_carlo"`` (as :func:`ofi_test`).
        progress: optional callable wrapping an iterable (e.g. ``tqdm``), used by the Monte Carlo
            loop over pairs.

    Examples:
        >>> from ofijax.auditing import pairwise_ofi_test
        >>> P = pairwise_ofi_test([[0, 1, 0, 5], [0, 7, 0, 11]], null="uniform")
        >>> P.round(3).tolist()
        [[1.0, 0.716], [0.716, 1.0]]
    """
    return pairwise_pvalues(cms, null=null, method=method, key=key, num_samples=num_samples,
                            progress=progress)[0]


def pairwise_pvalues(cms: Any, *, null: str, method: str, key: Any = None, num_samples: int = 10_000,
                     progress: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`pairwise_ofi_test` with the method of every pair: ``(p, method, approximate,
    error_bound)``, each ``(k, k)``: p-values (1 on the diagonal), the method that produced each
    one (the engine's ``"exact"``, ``"saddlepoint"``, ``"bracketed"``, ``"truncated"``, or
    ``"monte_carlo"``; ``""`` on the diagonal), whether it is an approximation or an estimate, and
    the engine's bound on its relative error |p̂ − p|/p (0.0 where exact; NaN for a Monte Carlo
    estimate, whose error is statistical: resolution 1/(num_samples + 1))."""
    c = v.check_counts(cms, "cms")
    if c.ndim != 2 or c.shape[-1] != 4:
        raise ValueError(f"cms: must have shape (k, 4); got {c.shape}.")
    c = c.astype(np.int64)
    v.check_choice(null, "null", NULLS)
    v.check_choice(method, "method", _PAIR_METHODS)
    num = _num_draws(num_samples)
    n = c.sum(-1)
    if np.any(n <= 0):
        raise ValueError(f"cms: group {int(np.argmin(n))} has n = 0; drop empty groups first.")
    k = c.shape[0]
    iu, ju = np.triu_indices(k, 1)
    out = np.ones((k, k))
    used = np.full((k, k), "", dtype=object)
    approx = np.zeros((k, k), dtype=bool)
    bound = np.zeros((k, k))
    if iu.size == 0:
        return out, used, approx, bound
    if method == "monte_carlo":
        vals = _monte_carlo_pvalues(v.as_key(_require_key(key)), c[iu], c[ju], null, num, progress)
        how = np.full(iu.size, "monte_carlo", dtype=object)
        rough = np.ones(iu.size, dtype=bool)
        err = np.full(iu.size, np.nan)
    else:
        r = _dist.ofi_pvalue_cms(c[iu], c[ju], null=_null_cm(null, c[iu] + c[ju]), method=method)
        vals = np.asarray(r.p_value, np.float64)
        how = np.asarray(r.method, dtype=object).reshape(-1)
        rough = np.asarray(r.approximate, bool).reshape(-1)
        err = np.asarray(r.error_bound, np.float64).reshape(-1)
    for (a, b) in ((iu, ju), (ju, iu)):
        out[a, b] = vals
        used[a, b] = how
        approx[a, b] = rough
        bound[a, b] = err
    return out, used, approx, bound


def _require_key(key: Any) -> Any:
    if key is None:
        raise ValueError("key: method='monte_carlo' needs a PRNG key or an int seed, e.g. key=0.")
    return key


def _test_seed(numbers) -> int:
    """A 31-bit seed from a test's integers, the same on every run and platform."""
    h = 0
    for x in numbers:
        h = (h * 1_000_003 + int(x)) % 2_147_483_647
    return h


def _monte_carlo_pvalues(key, cm_i, cm_j, null, num_samples, progress=None):
    """(1 + hits)/(1 + draws) per pair, drawing with the distributions samplers.

    Each pair's key is ``fold_in(key, seed)`` with the seed taken from the numbers that define its
    test (the sizes, smaller first, M = |D_i n_j − D_j n_i| and, under the pooled null, the pooled
    counts), and the smaller group draws first: a pair's estimate depends only on the key and its
    own test, not on its position, the order of the two groups or their names."""
    pairs = range(cm_i.shape[0])
    out = np.empty(cm_i.shape[0])
    for p in progress(pairs) if progress is not None else pairs:
        ci, cj = np.asarray(cm_i[p], np.int64), np.asarray(cm_j[p], np.int64)
        n_i, n_j = int(ci.sum()), int(cj.sum())
        if (n_i, tuple(ci)) > (n_j, tuple(cj)):
            ci, cj, n_i, n_j = cj, ci, n_j, n_i
        m = abs(int(ci[FP] - ci[FN]) * n_j - int(cj[FP] - cj[FN]) * n_i)
        ident = [n_i, n_j, m] + ([] if null == "uniform" else (ci + cj).tolist())
        k_i, k_j = jax.random.split(jax.random.fold_in(key, _test_seed(ident)))
        if null == "uniform":
            si, sj = _dist.sample_uniform(k_i, n_i, (num_samples,)), _dist.sample_uniform(k_j, n_j, (num_samples,))
        else:
            probs = (ci + cj) / (n_i + n_j)
            si = _dist.sample_multinomial(k_i, n_i, probs, (num_samples,))
            sj = _dist.sample_multinomial(k_j, n_j, probs, (num_samples,))
        d_i = np.asarray(si[:, FP], np.int64) - np.asarray(si[:, FN], np.int64)
        d_j = np.asarray(sj[:, FP], np.int64) - np.asarray(sj[:, FN], np.int64)
        hits = int(np.sum(np.abs(d_i * n_j - d_j * n_i) >= m))
        out[p] = (1.0 + hits) / (1.0 + num_samples)
    return out


def holm(p_values: Any) -> np.ndarray:
    r"""Holm–Bonferroni adjusted p-values along the last axis; every leading index is one family.

    With the m p-values of a family sorted, p_(1) ≤ … ≤ p_(m) (ties kept in their given order),

    .. math:: \tilde p_{(r)} = \min\Big(1, \max_{s \le r} (m - s + 1)\, p_{(s)}\Big),

    returned in the input's order (step-down, monotone, capped at 1). A NaN p-value sorts last,
    counts in m (conservative for the others) and stays NaN. A 0-d input is a family of one.

    Examples:
        >>> from ofijax.auditing import holm
        >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
        [0.03, 0.06, 0.06]
        >>> holm([[0.01, 0.04, 0.03], [0.5, 0.01, 0.2]]).round(2).tolist()
        [[0.03, 0.06, 0.06], [0.5, 0.03, 0.4]]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim == 0:
        p = p.reshape(1)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    adj = np.maximum.accumulate((m - np.arange(m)) * np.take_along_axis(p, order, -1), axis=-1)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, np.minimum(adj, 1.0), -1)
    return out


def benjamini_hochberg(p: Any) -> np.ndarray:
    r"""Benjamini–Hochberg step-up adjusted p-values (q-values) of one flat family.

    .. math:: q_{(r)} = \min_{s \ge r} \min(1, m\,p_{(s)}/s)

    Examples:
        >>> from ofijax.auditing import benjamini_hochberg
        >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.5]).round(3).tolist()
        [0.04, 0.053, 0.053, 0.5]
    """
    p = np.asarray(p, np.float64).reshape(-1)
    m = p.size
    order = np.argsort(p, kind="stable")
    q = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(q[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
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


# executables kept on disk (ofijax._jaxcache.aot_jit): a new process skips tracing and lowering
_bootstrap_multinomial_jit = aot_jit(_bootstrap_ofi_multinomial, static_argnames=("num_samples",),
                                     name="ofijax.auditing.bootstrap_multinomial",
                                     compiler_options=compiler_options())
_bootstrap_positions_jit = aot_jit(_bootstrap_ofi_positions, static_argnames=("num_samples",),
                                   name="ofijax.auditing.bootstrap_positions",
                                   compiler_options=compiler_options())
_ROW_DRAW_LIMIT = 1 << 25  # R·N above this: multinomial draws instead of row draws


def bootstrap_ofi(key, cms, *, num_samples: int):
    """Bootstrap OFIs ``(num_samples, k, k)`` of integer counts ``cms`` (k, 4), by the cheaper route."""
    c = np.asarray(cms)
    sizes = np.rint(c.sum(-1)).astype(np.int64)
    if int(sizes.sum()) * num_samples <= _ROW_DRAW_LIMIT:
        # NumPy arguments: converted on the call as jnp.asarray would (no identity programs)
        pos = np.repeat(np.arange(c.shape[0], dtype=np.int32), sizes)
        return _bootstrap_positions_jit(key, c, pos, num_samples=num_samples)
    return _bootstrap_multinomial_jit(key, c, num_samples=num_samples)


@functools.partial(jax.jit, static_argnames=("num_samples", "num_groups"))
def bootstrap_rows(key, cell, codes, order, starts, sizes, weights, *, num_samples, num_groups):
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


def percentiles(samples: jax.Array, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The [(1 − c)/2, (1 + c)/2] quantiles of ``samples`` along axis 0 (float64)."""
    a = (1.0 - confidence) / 2.0
    q = np.quantile(np.asarray(samples, dtype=np.float64), [a, 1.0 - a], axis=0)
    return q[0], q[1]


def check_confidence(confidence: Any) -> float:
    """``confidence`` as a float strictly between 0 and 1, or a ValueError naming it."""
    return v.check_fraction(confidence, "confidence")


def ofi_bootstrap(
    key: Any, cms: Any, *, num_samples: int = 2000, confidence: float = 0.95
) -> OFIBootstrap:
    r"""Percentile bootstrap intervals of every pairwise OFI(i, j) = B_i − B_j.

    Rows are resampled with replacement within each group, which for counts is exactly
    cm*_g ~ Multinomial(n_g, cm_g / n_g); all groups and replicates are drawn in one vmapped call.
    The interval is the [(1 − c)/2, (1 + c)/2] quantile range of the replicates.

    Args:
        key: PRNG key or int seed (first argument, as every random function in ofijax).
        cms: ``(k, 4)`` counts TP, FN, FP, TN (k ≥ 2).
        num_samples: bootstrap replicates (an integer ≥ 2).
        confidence: nominal coverage c.

    Returns:
        :class:`OFIBootstrap` with ``(k, k)`` bounds (the diagonal is [0, 0]).

    Examples:
        >>> import jax
        >>> from ofijax.auditing import ofi_bootstrap
        >>> bs = ofi_bootstrap(jax.random.key(0), [[30, 5, 20, 45], [40, 20, 5, 35]])
        >>> bool(bs.low[0, 1] < 0.30 < bs.high[0, 1])  # OFI = 0.15 - (-0.15) = 0.30
        True
    """
    c = v.check_counts(cms, "cms")
    if c.ndim != 2 or c.shape[-1] != 4:
        raise ValueError(f"cms: must have shape (k, 4); got {c.shape}.")
    if np.any(c.sum(-1) <= 0):
        raise ValueError("cms: a group has n = 0; drop empty groups first.")
    conf = check_confidence(confidence)
    num = _num_draws(num_samples, least=2)
    with Notice(f"OFI bootstrap: {num:,} resamples of {c.shape[0]} groups"):  # one device call
        samples = jax.block_until_ready(
            bootstrap_ofi(v.as_key(key), jnp.asarray(c), num_samples=num))
    low, high = percentiles(samples, conf)
    return OFIBootstrap(low, high, conf, num)
