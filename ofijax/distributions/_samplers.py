"""The public samplers (key first) and the sampler objects :func:`monte_carlo` runs.

Owns the checked wrappers around the exact samplers of :mod:`._sampling`, :mod:`._alias`,
:mod:`._bintables`, :mod:`._hypergeometric` and :mod:`._gammas` (:func:`sample_uniform`,
:func:`sample_multinomial`, :func:`sample_dirichlet_multinomial`, :func:`subsample`), the exact
binomial sampler at any n (:func:`binomial`: Hörmann's BTRS, vectorized, with compacted refills;
inversion for small means, pooled) and the two-stage multinomial built on it
(:func:`multinomial_cms`, for groups above the tables), the Dirichlet-multinomial's chain above
its tables (:func:`_dirichlet_chain`), the conditional-table cache, and the hashable
sampler objects (:func:`uniform_sampler`, …, :func:`pair_sampler`, :func:`pair_statistic`) whose
arrays travel as jit operands: equal samplers (same kind, n and parameters) reuse one compiled
Monte Carlo block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ofijax import _validation as _v
from ofijax._jaxcache import aot_jit
from ofijax.metrics import ofi as _ofi

from . import _alias as _A
from . import _gammas as _G
from . import _hypergeometric as _H
from . import _sampling as _S
from ._args import check_alpha as _check_alpha
from ._args import check_cm as _check_cm
from ._args import check_n as _check_n
from ._args import check_probs as _check_probs
from ._args import check_sampler_n as _check_sampler_n
from ._args import check_shape as _check_shape
from ._bintables import stirling_tail as _stirling_tail
from ._bintables import table_multinomial as _table_multinomial
from ._bintables import table_multinomial_fits as _table_multinomial_fits


def sample_uniform(key: jax.Array, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Exactly uniform draws from M(n): int32 (*shape, 4), TP, FN, FP, TN.

    For n ≤ 255, one random 32-bit word per matrix: an integer r uniform on [0, N(n))
    (rejection of the top 2^32 mod N(n) words, refilled until none is left, so exactly uniform),
    decoded by one gather from a packed table of M(n) in rank order (the same matrix as the
    closed-form :func:`unrank_confusion_matrix`). Above, stars and bars: three distinct sorted
    positions among n + 3 (three words, rows with a coincidence redrawn, so exact), which is
    about twice as fast as unranking in closed form there (experiments/notes/samplers.md).

    This is NOT Multinomial(n, ¼, ¼, ¼, ¼), which concentrates near n/4 per cell.

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_uniform
        >>> cms = sample_uniform(jax.random.key(0), 10, (3,))
        >>> cms.shape, cms.dtype, cms.sum(-1).tolist()
        ((3, 4), dtype('int32'), [10, 10, 10])
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    return _S.uniform_cms(key, n, _check_shape(shape))


def _binomial_chain_fn(key, n, p, shape, tables):
    """:func:`binomial_chain_core`, jitted: n is an argument, so every n shares one program (one
    per ``tables``). Call it under ``jax.enable_x64(True)`` with float64 ``p`` to keep the
    probabilities' 53 bits. Its executable is kept on disk (:func:`~ofijax._jaxcache.aot_jit`).
    """
    return binomial_chain_core(key, n, p, shape, tables)


_binomial_chain = aot_jit(_binomial_chain_fn, name="ofijax.distributions.binomial_chain",
                          static_argnums=(3, 4))


def binomial_chain_core(key, n, p, shape, tables=False):
    """Multinomial(n, p) matrices int32 (*shape, 4) by :func:`multinomial_cms` (p: (4,) or
    (*shape, 4) float; n an int or traced int32 < 2^31)."""
    size = int(np.prod(shape, dtype=np.int64))
    p = jnp.reshape(p, (-1, 4)) if jnp.ndim(p) > 1 else p
    return multinomial_cms(key, n, p, size, tables).reshape(tuple(shape) + (4,))


def sample_multinomial(key: jax.Array, n: int, probs: Any, shape: Sequence[int] = ()) -> jax.Array:
    """CM ~ Multinomial(n, probs), int32 (*shape, 4); ``probs`` in TP, FN, FP, TN order.

    From 2^16 matrices per call at 32 < n where n·p(1 − p) ≲ 2.9e5 for the stages' laws (n up
    to ~1.2e6 at any p), in two stages by O(1) table lookups (:func:`multinomial_cms`):
    positives P ~ Bin(n, p_TP + p_FN), then TP | P and FP | n − P; 7 random words per matrix,
    each probability resolved to 2^-32, at most 2e-12 of each binomial's mass (its far tails,
    by Bernstein's bound) left out. Otherwise, for n ≤ 250, as TP ~ Bin(n, p_TP),
    FN | TP ~ Bin(n − TP, p_FN / (1 − p_TP)), FP | TP, FN ~ Bin(rest, p_FP / (p_FP + p_TN)),
    each by inverse CDF on a float64-built table (three uniforms per matrix, probabilities
    resolved to 2^-24); above, the same two stages by exact BTRS where the mean is ≥ 10, else
    inversion (float64, p read in float64).

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_multinomial
        >>> cms = sample_multinomial(jax.random.key(0), 50, [0.1, 0.2, 0.3, 0.4], (2, 3))
        >>> cms.shape, bool((cms.sum(-1) == 50).all())
        ((2, 3, 4), True)
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    p = _check_probs(probs)
    shape = _check_shape(shape)
    size = int(np.prod(shape, dtype=np.int64))
    lookups = (size >= MULTINOMIAL_TABLE_MIN_ROWS and n > MULTINOMIAL_LOOKUP_MIN_N
               and _table_multinomial_fits(n, p))
    if lookups or n > MULTINOMIAL_TABLE_MAX_N:
        with jax.enable_x64(True):
            return _binomial_chain(key, np.int32(n), np.asarray(p, np.float64), shape, lookups)
    t = _tables(n, "multinomial", p)
    return _A.table_sample(key, n, *t, shape)


def sample_dirichlet_multinomial(
    key: jax.Array, n: int, alpha: Any, shape: Sequence[int] = ()
) -> jax.Array:
    """CM ~ Dirichlet-multinomial(n, alpha), int32 (*shape, 4).

    p ~ Dirichlet(alpha), CM | p ~ Multinomial(n, p), drawn without p as conditional
    beta-binomials: TP ~ BB(n, α_TP, α_FN + α_FP + α_TN), FN | TP ~ BB(n − TP, α_FN, α_FP + α_TN),
    FP | TP, FN ~ BB(rest, α_FP, α_TN) (alias tables for n ≤ 2048, :mod:`._alias`; above, in
    blocks of 2^14 rows, p ~ Dirichlet in float32 by :func:`~._gammas.dirichlet_cols`, then the
    exact binomial stages of :func:`multinomial_cms`, the positives TP + FN ~
    BB(n, α_TP + α_FN, α_FP + α_TN) by one lookup in an alias table of n + 1 values up to
    n = 2^21 − 1, :func:`~._alias.betabinomial_table`). Integer α ≥ 1 with Σα ≤ 16 take stars
    and bars above n = 255 (:func:`~._sampling.dirichlet_bars`: Σα − 1 exact uniform positions
    per matrix, ~3x NumPy).
    alpha = (1, 1, 1, 1) is the uniform distribution on M(n).

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_dirichlet_multinomial
        >>> sample_dirichlet_multinomial(jax.random.key(1), 7, [1, 1, 1, 1], (4,)).sum(-1).tolist()
        [7, 7, 7, 7]
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    a = _check_alpha(alpha)
    shape = _check_shape(shape)
    if n > _S.LUT_MAX_N and _S.bars_fit(a):
        return _S.dirichlet_bars(key, n, a, shape)
    if n > _A.TABLE_MAX_N:
        size = int(np.prod(shape, dtype=np.int64))
        with jax.enable_x64(True):
            if n <= DM_POSITIVES_TABLE_MAX_N:
                t = _cached((n, "dirichlet_positives", a),
                            lambda: (_A.betabinomial_table(n, a[0] + a[1], a[2] + a[3]),))[0]
                out = _dirichlet_table_chain(key, np.int32(n), t, a, size)
            else:
                out = _dirichlet_chain(key, np.int32(n), a, size)
        return out.reshape(tuple(shape) + (4,))
    t = _tables(n, "dirichlet", a)
    return _A.table_sample(key, n, *t, shape)


def subsample(key: jax.Array, cm: Any, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Confusion matrices of n rows drawn without replacement from a real group with counts ``cm``.

    Multivariate hypergeometric: P(CM = x) = Π_c C(cm_c, x_c) / C(M, n), M = Σ cm, for any
    n ≤ M (groups up to 2^53 − 1 rows above n = 1000, 2^63 − 1 below; n < 2^31). int32
    (*shape, 4). For n ≤ 1000 drawn as TP ~ HG(M, cm_TP, n), FN | TP ~ HG(M − cm_TP, cm_FN,
    n − TP), FP | … ~ HG(cm_FP + cm_TN, cm_FP, rest) from float64-built alias tables
    (:mod:`._alias`: probabilities resolved to 2^-32). Above, by an exact hypergeometric sampler (Stadlober's HRUA, and
    inversion where the mean is < 10; float64 log-PMF ratios by Stirling's series, accurate at
    any group size; 32-bit uniforms): positives P ~ HG(M, cm_TP + cm_FN, n) by one lookup in a
    table of P's probabilities (32-bit resolution, window leaving out ≤ 2e-12 of the mass; by
    the same sampler where the window does not fit), then TP | P ~ HG(cm_TP + cm_FN, cm_TP, P)
    and FP | P ~ HG(cm_FP + cm_TN, cm_FP, n − P) (the same law), as one loop over one sampler,
    whose test reads log f(k)/f(m) from two float64 log-factorial tables per stage where they
    hold every candidate (where P's window fits: n ≤ 1.2e6 for a group of 10 n; the same decisions,
    so the same draws, ~1.5x NumPy). There ``cm`` and ``n`` are arguments of one compiled
    program per ``shape`` (two: with and without the tables).

    Example:
        >>> import jax
        >>> from ofijax.distributions import subsample
        >>> subsample(jax.random.key(0), [5, 0, 0, 5], 10, (2,)).tolist()
        [[5, 0, 0, 5], [5, 0, 0, 5]]
        >>> group = [40_000, 10_000, 20_000, 30_000]
        >>> cms = subsample(jax.random.key(1), group, 5000, (3,))
        >>> cms.sum(-1).tolist(), bool((cms <= jax.numpy.array(group)).all())
        ([5000, 5000, 5000], True)
    """
    key = _v.as_key(key)
    c = _check_cm(cm)
    n = _check_n(n)
    _H.check_subsample(c, n)
    shape = _check_shape(shape)
    if n <= _H.SUBSAMPLE_TABLE_MAX_N:
        t = _tables(n, "hypergeom", c)
        return _A.table_sample(key, n, *t, shape)
    size = int(np.prod(shape, dtype=np.int64))
    with jax.enable_x64(True):
        out = _H.subsample_cms(key, np.asarray(c, np.int64), np.int64(n), size,
                               _H.subsample_tables_fit(c, n))
    return out.reshape(tuple(shape) + (4,))


# ------------------------------------------------------------- exact binomial draws at any n


#: BTRS's hat dominates the binomial PMF for n·p ≥ 10 (p ≤ ½; Hörmann 1993); below, inversion.
BTRS_MIN_MEAN = 10.0
#: The float32 test decides a candidate only outside ±2^-16 × (sum of its terms' magnitudes):
#: each term is a few correctly rounded float32 operations (relative error ≤ ~10 · 2^-24), so the
#: band holds the float32 error with a 25x margin; candidates inside it are tested in float64.
_BAND = 2.0 ** -16
#: Vectorized BTRS rounds before the leftovers are compacted, and the first leftover pool
#: (size // BTRS_POOL + 64 slots, rounded up to a multiple of 64): chosen by
#: experiments/bench_distributions.py --over-n; see experiments/notes/samplers.md (7 holds the
#: ~12-14 % left at n·p ~ 1e3 in one pool, where 8 overflowed into a second full pass).
BTRS_ROUNDS = 1
BTRS_POOL = 7
#: Slots the first pool could not hold (n·p ≲ 2000: more rejections) go to pools of
#: size // BTRS_POOL_LAST + 64, as many as needed (experiments/notes/samplers.md, round 5).
BTRS_POOL_LAST = 64
#: Largest n that sample_multinomial draws from the alias tables (above: the binomial chain).
MULTINOMIAL_TABLE_MAX_N = 250
#: Rows per block of :func:`multinomial_cms` (large temporaries cost fresh pages on every call).
MULTINOMIAL_CHUNK = 1 << 14
#: sample_multinomial draws by table lookups (:mod:`._bintables`) from this many rows (their
#: build costs ~8 ms per call) and above this n, where they fit; else by the alias tables
#: (n ≤ MULTINOMIAL_TABLE_MAX_N) or the BTRS chain. Both chosen by
#: experiments/bench_distributions.py --over-n (experiments/notes/samplers.md).
MULTINOMIAL_TABLE_MIN_ROWS = 1 << 16
MULTINOMIAL_LOOKUP_MIN_N = 32
#: Rows per block of the lookups (small temporaries: 7 words and a few int32 per row).
MULTINOMIAL_LOOKUP_CHUNK = 1 << 16


def _btrs_setup(n, p, dt=jnp.float64):
    """BTRS constants for int32 n and float64 p ≤ ½ with n·p ≥ 10: the proposal's in float64,
    the full test's (log α, L₀, Stirling tails) in ``dt``.

    In float32 (the vectorized first test) each of log α, L₀ and the tails is within a few ulp:
    log α's error is inside the band's |log α| term; L₀ = log((m + 1)/(r (n − m + 1))) is off by
    ≤ ~2e-7 absolute, so t₁ = −d·L₀ by ≤ 2e-7 |d|, while |t₂| + |t₃| ≥ |d|/2 (log1p bounds), so
    the band 2^-16 × mag ≥ 7.6e-6 |d| holds it 38 times over; the tails are < 0.09 (errors
    ~1e-8). Candidates inside the band are re-tested with float64 constants.
    """
    nf = n.astype(jnp.float64)
    spq = jnp.sqrt(nf * p * (1 - p))
    b = 1.15 + 2.53 * spq
    mf = jnp.floor((nf + 1) * p)  # the mode m
    m = mf.astype(jnp.int32)
    ratio = (mf + 1) * (1 - p) / (p * (nf - mf + 1))  # (m + 1)/(r (n − m + 1)), r = p/(1 − p)
    return dict(n=n, m=m, a=-0.0873 + 0.0248 * b + 0.01 * p, b=b,
                cm=nf * p + 0.5 - mf, vr=0.92 - 4.2 / b,
                lalpha=jnp.log(((2.83 + 5.1 / b) * spq).astype(dt)), l0=jnp.log(ratio.astype(dt)),
                tails=_stirling_tail(m, dt) + _stirling_tail(n - m, dt))


def _btrs_propose(P, wu, wv):
    """Candidate k = m + ⌊(2a/u_s + b) u + c − m⌋ (float64, so ⌊·⌋ is exact to 2^-40 at
    |·| < 2^12) and the squeeze u_s ≥ 0.07, v ≤ v_r."""
    u = _S.unit64(wu) - 0.5
    v = _S.unit64(wv)
    us = 0.5 - jnp.abs(u)
    nf = P["n"].astype(jnp.float64)
    d = jnp.clip(jnp.floor((2 * P["a"] / us + P["b"]) * u + P["cm"]), -nf - 1, nf + 1)
    k = P["m"] + d.astype(jnp.int32)
    inside = (k >= 0) & (k <= P["n"])
    return v, us, k - P["m"], k, inside, (us >= 0.07) & (v <= P["vr"]) & inside


def _btrs_sides(P, v, us, d, k, dt):
    """log v + log α − log(a/u_s² + b) and log f(k)/f(m) in ``dt``, and their terms' magnitudes.

    log f(k)/f(m) = −d·L₀ − (k + ½) log1p(d/(m + 1)) − (n − k + ½) log1p(−d/(n − m + 1))
    + s(m) + s(n − m) − s(k) − s(n − k), d = k − m, L₀ = log((m + 1)/(r (n − m + 1))): the
    binomial log-ratio by Stirling's series, written with log1p of small ratios so that no large
    logarithms cancel.
    """
    usd = us.astype(dt)
    lv = jnp.log(v.astype(dt))
    lh = jnp.log(P["a"].astype(dt) / (usd * usd) + P["b"].astype(dt))
    la = P["lalpha"].astype(dt)
    n, m = P["n"], P["m"]
    kk = jnp.clip(k, 0, n)
    df = d.astype(dt)
    t1 = -df * P["l0"].astype(dt)
    t2 = -(kk.astype(dt) + dt(0.5)) * jnp.log1p(df / (m + 1).astype(dt))
    t3 = -((n - kk).astype(dt) + dt(0.5)) * jnp.log1p(-df / (n - m + 1).astype(dt))
    rhs = t1 + t2 + t3 + (P["tails"].astype(dt) - _stirling_tail(kk, dt) - _stirling_tail(n - kk, dt))
    mag = jnp.abs(lv) + jnp.abs(lh) + jnp.abs(la) + jnp.abs(t1) + jnp.abs(t2) + jnp.abs(t3) + 1
    return lv + la - lh, rhs, mag


def _btrs_test64(P, wu, wv):
    v, us, d, k, inside, quick = _btrs_propose(P, wu, wv)
    lhs, rhs, _ = _btrs_sides(P, v, us, d, k, jnp.float64)
    return k, quick | (inside & (lhs <= rhs))


def _btrs(key, n, p, size):
    """Binomial(n, p) by Hörmann's BTRS (transformed rejection with squeeze), p ≤ ½, n·p ≥ 10.

    ``BTRS_ROUNDS`` candidates per slot are drawn and tested at once (squeeze in float64, the
    full test in float32 outside an error band, its constants log α, L₀ and the tails in float32
    too: :func:`_btrs_setup`); the first accepted one is the draw, exactly as the sequential
    algorithm. Slots left over (all rejected, or a candidate inside the band) are compacted into
    a pool (:data:`BTRS_POOL`; any it cannot hold into smaller pools, :data:`BTRS_POOL_LAST`,
    as many as needed), whose constants are recomputed in float64, and finished in float64:
    first the undecided candidate, then fresh ones until accepted. Which slot gets which fresh
    candidate depends only on which slots are left, so the law is exactly BTRS's (float64
    rounding aside: relative error of each probability ~1e-10; uniforms have 32 bits).
    """
    n, p = jnp.broadcast_to(n, (size,)), jnp.broadcast_to(p, (size,))
    P = lax.optimization_barrier(_btrs_setup(n, p, jnp.float32))
    w = lax.optimization_barrier(_S.random_bits(jax.random.fold_in(key, 0), (BTRS_ROUNDS, 2, size)))
    done = jnp.zeros((size,), bool)
    pending = jnp.zeros((size,), bool)  # a drawn candidate not yet decided (inside the band)
    out = jnp.zeros((size,), jnp.int32)
    wu0, wv0 = w[0, 0], w[0, 1]
    for i in range(BTRS_ROUNDS):
        v, us, d, k, inside, quick = _btrs_propose(P, w[i, 0], w[i, 1])
        # one pass over the float32 test (else XLA fuses it into both decisions)
        lhs, rhs, mag = lax.optimization_barrier(_btrs_sides(P, v, us, d, k, jnp.float32))
        band = mag * jnp.float32(_BAND)
        acc = quick | (inside & (lhs <= rhs - band))
        und = ~quick & inside & (lhs <= rhs + band) & ~acc
        live = ~done & ~pending
        out = jnp.where(live & acc, k, out)
        wu0 = jnp.where(live & und, w[i, 0], wu0)
        wv0 = jnp.where(live & und, w[i, 1], wv0)
        done, pending = done | (live & acc), pending | (live & und)
        done, pending, out, wu0, wv0 = lax.optimization_barrier((done, pending, out, wu0, wv0))
    def outer(c, small):
        i, done, pending, out = c
        idx = _S.compact(~done, small)
        j = jnp.minimum(idx, size - 1)
        Pj = lax.optimization_barrier(_btrs_setup(n[j], p[j]))
        wu, wv = wu0[j], wv0[j]

        def inner(ci):
            t, fin, pend, val = ci
            fresh = _S.random_bits(jax.random.fold_in(jax.random.fold_in(key, i), t), (2, small))
            kj, ok = _btrs_test64(Pj, jnp.where(pend, wu, fresh[0]), jnp.where(pend, wv, fresh[1]))
            return t + 1, fin | ok, jnp.zeros_like(pend), jnp.where(fin, val, kj)

        _, fin, _, val = lax.while_loop(lambda ci: jnp.any(~ci[1]), inner,
                                        (jnp.int32(0), idx >= size, pending[j], out[j]))
        done = done.at[idx].set(fin, mode="drop")
        pending = pending.at[idx].set(False, mode="drop")
        return i + 1, done, pending, out.at[idx].set(val, mode="drop")

    c = outer((jnp.int32(1), done, pending, out), _S.pool_size(size, BTRS_POOL))
    last = _S.pool_size(size, BTRS_POOL_LAST)
    return lax.while_loop(lambda c: jnp.any(~c[1]), lambda c: outer(c, last), c)[3]



def _binomial_inversion(key, n, p, size):
    """Binomial(n, p) for n·p < 10 by sequential search of the float64 CDF from 0."""
    u = _S.unit64(_S.random_bits(key, (size,)))
    ratio = p / (1 - p)
    pmf = jnp.broadcast_to(jnp.exp(n.astype(jnp.float64) * jnp.log1p(-p)), (size,))

    def body(s):
        k, pmf, cdf = s
        go = (u > cdf) & (k < n)
        k1 = k + 1
        pmf1 = pmf * ratio * (n - k).astype(jnp.float64) / k1.astype(jnp.float64)
        return jnp.where(go, k1, k), jnp.where(go, pmf1, pmf), jnp.where(go, cdf + pmf1, cdf)

    return lax.while_loop(lambda s: jnp.any((u > s[2]) & (s[0] < n)), body,
                          (jnp.zeros((size,), jnp.int32), pmf, pmf))[0]


#: Slots with n·p < BTRS_MIN_MEAN are inverted in pools of size // INVERSION_POOL + 64 slots
#: (compacted), as many pools as they need (one with per-row p, where they are a few %).
INVERSION_POOL = 8


def _inversion_slots(key, n, p, small, size, pooled=True):
    """Binomial(n, p) by :func:`_binomial_inversion` where ``small`` (0 elsewhere), int32 (size,).

    The inversion's loop runs until its largest draw is found, over every slot it is given, so
    the small slots are compacted into pools first (the i-th pool's words from
    ``fold_in(key, i)``); with ``pooled`` False (fixed probabilities, where the small slots are
    all or none of a stage) one pass over every slot. Each slot reads its own uniform either
    way, so the law is the same.
    """
    pool = min(size, size // INVERSION_POOL + 64)

    def body(c):
        i, left, out = c
        idx = _S.compact(left, pool)
        j = jnp.minimum(idx, size - 1)
        live = idx < size
        x = _binomial_inversion(jax.random.fold_in(key, i), jnp.where(live, n[j], 0),
                                jnp.where(live, p[j], 0.0), pool)
        return i + 1, left.at[idx].set(False, mode="drop"), out.at[idx].set(x, mode="drop")

    def pools():
        return lax.while_loop(lambda c: jnp.any(c[1]), body,
                              (jnp.int32(0), small, jnp.zeros((size,), jnp.int32)))[2]

    # most slots small (a fixed small p): one pass over every slot costs less than many pools
    if pooled:
        return pools()
    return lax.cond(jnp.any(small), lambda: _binomial_inversion(key, n, p, size),
                    lambda: jnp.zeros((size,), jnp.int32))


def binomial(key: jax.Array, n: jax.Array, p: jax.Array, size: int,
             pooled: bool = True) -> jax.Array:
    """Exact Binomial(n, p) draws, int32 (size,), for int32 n and float p broadcastable to it.

    By symmetry p ≤ ½ (X = n − Bin(n, 1 − p) above); n·p ≥ :data:`BTRS_MIN_MEAN` by BTRS (see
    :func:`_btrs`), else by inversion of the float64 CDF. Traced under ``jax.enable_x64`` (float64
    arithmetic whatever the global flag; p is read in float64, so pass float64 probabilities
    where they matter). Branches no slot needs are skipped (``lax.cond``). ``pooled``: invert
    the small-mean slots in compacted pools (per-row p: they are few) rather than in one pass
    over every slot (:func:`_inversion_slots`).
    """
    with jax.enable_x64(True):
        n = jnp.asarray(n, jnp.int32)
        p = jnp.asarray(p, jnp.float64)
        flip = p > 0.5
        ps = jnp.where(flip, 1 - p, p)
        big = n.astype(jnp.float64) * ps >= BTRS_MIN_MEAN
        kb, ki = jax.random.split(key)
        x_big = lax.cond(jnp.any(big),
                         lambda: _btrs(kb, jnp.where(big, n, 40), jnp.where(big, ps, 0.25), size),
                         lambda: jnp.zeros((size,), jnp.int32))
        x_small = _inversion_slots(ki, jnp.broadcast_to(jnp.where(big, 0, n), (size,)),
                                   jnp.broadcast_to(jnp.where(big, 0.0, ps), (size,)),
                                   jnp.broadcast_to(~big, (size,)), size, pooled)
        x = jnp.where(big, x_big, x_small)
        return jnp.where(flip, n - x, x).astype(jnp.int32)


def multinomial_cms(key: jax.Array, n: jax.Array, p: jax.Array, size: int,
                    tables: bool = False) -> jax.Array:
    """Multinomial(n, p) confusion matrices, int32 (size, 4), in two binomial stages.

    Positives P = TP + FN ~ Bin(n, p_TP + p_FN); then TP | P ~ Bin(P, p_TP/(p_TP + p_FN)) and
    FP | P ~ Bin(n − P, p_FP/(p_FP + p_TN)), independent. ``p`` (4,) or (size, 4); n a traced
    int32 is fine (one program for every n). With ``tables`` (a fixed p whose windows fit:
    :func:`~._bintables.table_multinomial_fits`, checked by the caller) by table lookups
    (:func:`~._bintables.table_multinomial`: 7 words per matrix, probabilities resolved to
    2^-32, at most 2e-12 of each binomial's mass left out); otherwise exactly, the second stage
    by ONE call of :func:`binomial` over 2·size slots. More than :data:`MULTINOMIAL_CHUNK` rows
    are drawn in blocks of that many by ``lax.map`` (a key per block; the last block padded), so
    the temporaries stay small.
    """
    with jax.enable_x64(True):
        p = jnp.asarray(p, jnp.float64)
        n = jnp.asarray(n, jnp.int32)
        if p.ndim == 2:
            return _in_blocks(key, size, lambda k, m, pr: _multinomial_block(k, n, pr, m), rows=p)
        if not tables:
            return _in_blocks(key, size, lambda k, m: _multinomial_block(k, n, p, m))
        draw = _table_multinomial(n, p)
        return _in_blocks(key, size, lambda k, m: _S.stack_cells(*draw(k, m)),
                          chunk=MULTINOMIAL_LOOKUP_CHUNK)


def _in_blocks(key, size: int, draw, rows=None, chunk=None):
    """``draw(key, m[, rows])`` → (m, 4) matrices for ``size`` rows: one call up to ``chunk``
    (default :data:`MULTINOMIAL_CHUNK`) rows, else blocks of that many by ``lax.map``, a key per
    block (``jax.random.split(key, blocks)``); per-row parameters ``rows`` (size, ...) are
    padded with copies of their first row, and the padding is cut off."""
    chunk = MULTINOMIAL_CHUNK if chunk is None else chunk
    if size <= chunk:
        return draw(key, size) if rows is None else draw(key, size, rows)
    blocks = -(-size // chunk)
    keys = jax.random.split(key, blocks)
    if rows is None:
        out = lax.map(lambda k: draw(k, chunk), keys)
    else:
        pad = blocks * chunk - size
        rb = jnp.concatenate([rows, jnp.broadcast_to(rows[:1], (pad,) + rows.shape[1:])])
        rb = rb.reshape((blocks, chunk) + rows.shape[1:])
        out = lax.map(lambda kr: draw(kr[0], chunk, kr[1]), (keys, rb))
    return out.reshape(-1, 4)[:size]


def _dirichlet_chain_fn(key, n, alpha, size, positives=None):
    """Dirichlet-multinomial(n, alpha) matrices int32 (size, 4): per block of
    :data:`MULTINOMIAL_CHUNK` rows (a key per block), p ~ Dirichlet(alpha) as unnormalised
    float32 columns (:func:`~._gammas.dirichlet_cols`), then the two binomial stages of
    :func:`multinomial_cms` on p_TP + p_FN = (e₀ + e₁)/Σe, e₀/(e₀ + e₁) and e₂/(e₂ + e₃)
    (float64 from the float32 e; temporaries stay small).

    With ``positives`` (the alias table of P = TP + FN ~ BetaBinomial(n, α_TP + α_FN,
    α_FP + α_TN), :func:`~._alias.betabinomial_table`) P is one lookup (two words) instead of a
    binomial stage: the Dirichlet's group total p_TP + p_FN is independent of the shares
    e₀/(e₀ + e₁) and e₂/(e₂ + e₃) (neutrality), and Bin(n, ·) mixed over its Beta law is that
    beta-binomial; TP | P ~ Bin(P, e₀/(e₀ + e₁)), FP | P ~ Bin(n − P, e₂/(e₂ + e₃)) as before.
    """
    with jax.enable_x64(True):
        n = jnp.asarray(n, jnp.int32)

        def block(k, m):
            k0, k1 = jax.random.split(k)
            e = _G.dirichlet_cols(k0, alpha, m).astype(jnp.float64)
            spos, sneg = e[0] + e[1], e[2] + e[3]
            if positives is None:
                return _multinomial_stages(k1, n, spos / (spos + sneg), _share(e[0], spos),
                                           _share(e[2], sneg), m)
            k1, k2 = jax.random.split(k1)
            pos = lax.optimization_barrier(_A.pow2_draw(positives, _S.random_bits(k2, (2, m))))
            return _split_stages(k1, n, pos, _share(e[0], spos), _share(e[2], sneg), m)

        return _in_blocks(key, size, block)


_dirichlet_chain = aot_jit(_dirichlet_chain_fn, name="ofijax.distributions.dirichlet_chain",
                           static_argnums=(2, 3))


def _dirichlet_table_chain_fn(key, n, positives, alpha, size):
    """:func:`_dirichlet_chain_fn` with the positives' table (one program per table width)."""
    return _dirichlet_chain_fn(key, n, alpha, size, positives)


_dirichlet_table_chain = aot_jit(_dirichlet_table_chain_fn,
                                 name="ofijax.distributions.dirichlet_table_chain",
                                 static_argnums=(3, 4))


def _share(x, total):
    """x / total, 0 where total is 0."""
    return jnp.where(total > 0, x / jnp.where(total > 0, total, 1), 0.0)


def _multinomial_block(key, n, p, size):
    spos, sneg = p[..., 0] + p[..., 1], p[..., 2] + p[..., 3]
    return _multinomial_stages(key, n, spos, _share(p[..., 0], spos), _share(p[..., 2], sneg), size,
                               pooled=p.ndim == 2)


def _multinomial_stages(key, n, spos, qa, qb, size, pooled=True):
    """P ~ Bin(n, spos); TP | P ~ Bin(P, qa) and FP | n − P ~ Bin(n − P, qb) in one call
    (``pooled``: per-row probabilities, see :func:`binomial`)."""
    k0, k1 = jax.random.split(key)
    pos = binomial(k0, n, spos, size, pooled)
    return _split_stages(k1, n, pos, qa, qb, size, pooled)


def _split_stages(key, n, pos, qa, qb, size, pooled=True):
    """TP | P ~ Bin(P, qa) and FP | n − P ~ Bin(n − P, qb) in one :func:`binomial` call of
    2 · size slots; the matrices int32 (size, 4)."""
    q = jnp.concatenate([jnp.broadcast_to(qa, (size,)), jnp.broadcast_to(qb, (size,))])
    two = binomial(key, jnp.concatenate([pos, n - pos]), q, 2 * size, pooled)
    tp, fp = two[:size], two[size:]
    return _S.stack_cells(tp, pos - tp, fp, n - pos - fp)


#: Largest n whose Dirichlet-multinomial (above the alias tables, non-integer α) draws its
#: positives from one alias table of n + 1 values (:func:`~._alias.betabinomial_table`, 2 MB at
#: 2^18; built in ~0.05 s, kept in the table cache) instead of a binomial stage; above, the
#: table's random reads leave the caches and the binomial stage measured faster
#: (experiments/notes/samplers.md, round 5).
DM_POSITIVES_TABLE_MAX_N = (1 << 21) - 1
#: Conditional tables kept (n, kind, params); cleared when full (a sweep of sizes refills it).
_TABLE_CACHE_SIZE = 16
_TABLE_CACHE_BYTES = 1 << 27  # ... or bytes (a positives' table of large n: up to 16 MB)
_TABLE_CACHE: dict = {}


def _cached(key: tuple, build: Callable[[], tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """``build()`` once per ``key`` (the cache is cleared when full, by count or bytes)."""
    hit = _TABLE_CACHE.get(key)
    if hit is None:
        held = sum(t.nbytes for v in _TABLE_CACHE.values() for t in v)
        if len(_TABLE_CACHE) > _TABLE_CACHE_SIZE or held > _TABLE_CACHE_BYTES:
            _TABLE_CACHE.clear()
        hit = _TABLE_CACHE[key] = build()
    return hit


def _tables(n: int, kind: str, params: tuple) -> tuple[np.ndarray, ...]:
    """The three conditional alias tables (:func:`~._alias.conditional_tables`), cached."""
    return _cached((n, kind, params),
                   lambda: tuple(np.asarray(t) for t in _A.conditional_tables(n, kind, params)))


# Hashable sampler objects, so that jitted Monte Carlo blocks are cached across calls.


@dataclass(frozen=True)
class _Sampler:
    kind: str
    n: int
    params: tuple = ()

    def operands(self) -> tuple:
        """Arrays the sampler reads (passed as jit arguments by :func:`monte_carlo`)."""
        if self.kind == "uniform" and self.n <= _S.LUT_MAX_N:
            return (_S.packed_table(self.n),)
        return ()

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            table = operands[0] if operands else None
            return _S.uniform_cms(key, self.n, _check_shape(shape), table)
        return self(key, shape)

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            return sample_uniform(key, self.n, shape)
        if self.kind == "multinomial":
            return sample_multinomial(key, self.n, self.params, shape)
        if self.kind == "dirichlet":
            return sample_dirichlet_multinomial(key, self.n, self.params, shape)
        return subsample(key, self.params, self.n, shape)


def sampler_operands(sampler: Callable) -> tuple:
    """Arrays a library sampler reads (empty for user samplers)."""
    return sampler.operands() if isinstance(sampler, (_Sampler, _PairSampler)) else ()


def sampler_draw(sampler: Callable, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
    if isinstance(sampler, (_Sampler, _PairSampler)):
        return sampler.draw(operands, key, shape)
    return sampler(key, shape)


@dataclass(frozen=True)
class _PairSampler:
    first: Callable
    second: Callable

    def operands(self) -> tuple:
        return (sampler_operands(self.first), sampler_operands(self.second))

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        a, b = self.first, self.second
        if (isinstance(a, _Sampler) and a == b and a.kind == "multinomial"
                and a.n > MULTINOMIAL_LOOKUP_MIN_N):
            # both groups in ONE call (one set of lookup tables; two chain loops in one program
            # cost ~1.3x more: experiments/notes/samplers.md); still independent groups
            both = sample_multinomial(key, a.n, a.params, (2,) + tuple(_check_shape(shape)))
            return jnp.stack([both[0], both[1]], axis=-2)
        k0, k1 = jax.random.split(key)
        return jnp.stack(
            [sampler_draw(self.first, operands[0], k0, shape), sampler_draw(self.second, operands[1], k1, shape)],
            axis=-2,
        )

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        return self.draw(self.operands(), key, shape)


@dataclass(frozen=True)
class _PairStatistic:
    metric: Callable

    def __call__(self, cms: jax.Array) -> jax.Array:
        return self.metric(cms[..., 0, :], cms[..., 1, :])


def uniform_sampler(n: int) -> Callable:
    """``sampler(key, shape)`` drawing uniformly from M(n) (for :func:`monte_carlo`)."""
    return _Sampler("uniform", _check_sampler_n(n))


def multinomial_sampler(n: int, probs: Any) -> Callable:
    """``sampler(key, shape)`` drawing Multinomial(n, probs) matrices."""
    return _Sampler("multinomial", _check_sampler_n(n), _check_probs(probs))


def dirichlet_multinomial_sampler(n: int, alpha: Any) -> Callable:
    """``sampler(key, shape)`` drawing Dirichlet-multinomial(n, alpha) matrices."""
    return _Sampler("dirichlet", _check_sampler_n(n), _check_alpha(alpha))


def subsample_sampler(cm: Any, n: int) -> Callable:
    """``sampler(key, shape)`` drawing n rows without replacement from a group with counts ``cm``
    (:func:`subsample`: any n ≤ Σ cm)."""
    c = _check_cm(cm)
    n = _check_n(n)
    _H.check_subsample(c, n)
    return _Sampler("hypergeom", n, c)


def pair_sampler(sampler_i: Callable, sampler_j: Callable) -> Callable:
    """``sampler(key, shape) -> (*shape, 2, 4)``: two independent groups (i first).

    Use with :func:`pair_statistic` for two-group metrics such as OFI.
    """
    return _PairSampler(sampler_i, sampler_j)


def pair_statistic(metric: Callable = _ofi) -> Callable:
    """Turn ``metric(cm_i, cm_j)`` (default :func:`ofijax.ofi`) into a statistic of (..., 2, 4)."""
    return _PairStatistic(metric)
