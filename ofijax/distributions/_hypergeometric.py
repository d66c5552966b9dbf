"""Exact hypergeometric draws at any size, vectorized in JAX, and the multivariate chain on them.

Owns :func:`hypergeometric` (HG(N, K, n): marked items among n drawn without replacement from N
with K marked; per-slot int64 parameters, populations up to 2^53 − 1 rows, draws int32):
Stadlober's ratio-of-uniforms HRUA where the reduced mean is ≥ :data:`HRUA_MIN_MEAN`, inversion
of the float64 CDF below, with the log-PMF ratios written by Stirling's series and ``log1p`` of
small ratios (no large log-factorials cancel, so the law is accurate at N ~ 1e9 and beyond),
each candidate tested in float32 outside an error band and in float64 inside it; and
:func:`subsample_cms` (:func:`subsample_block` in blocks), the multivariate hypergeometric
confusion matrices of a real group in two stages (positives, then TP | positives and
FP | negatives in one call of it), the positives by one lookup in a condensed table of their
HG window (:func:`window_pmf`, :func:`positives_table`, built by ``_bintables``) where it fits,
with :func:`check_subsample`, the arguments' one check.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._jaxcache import aot_jit
from . import _bintables as _B
from . import _sampling as _S
from ._args import SAMPLER_MAX_N
from ._bintables import stirling_tail as _stirling_tail

#: HRUA's table-mountain hat (Stadlober 1989): h = D1 · sqrt(var + ½) + D2 (as in NumPy).
_D1 = 1.7155277699214135
_D2 = 0.8989161620588988
#: HRUA where the reduced mean s · M / N is at least this; below, inversion from 0 (a search of
#: about mean + a few steps; the same switch as the binomial's BTRS_MIN_MEAN).
HRUA_MIN_MEAN = 10.0
#: The leftover pools (size // HRUA_POOL + 64 slots, then size // HRUA_POOL_LAST + 64) and the
#: candidates per pool slot in each (experiments/notes/samplers.md, "Subsample at any n").
HRUA_POOL = 3
HRUA_REFILL = 2
HRUA_POOL_LAST = 32
HRUA_REFILL_LAST = 3
#: Largest population the float64 arithmetic holds exactly.
HG_MAX_N = 2**53 - 1
#: Largest n that subsample draws from the conditional alias tables (``_alias.py``; above:
#: :func:`subsample_cms`). The tables draw 2^18 matrices in 12–15 ms at n = 300 … 2048 against
#: 93–128 ms here (NumPy 74–80 ms); building them costs 0.44 s at n = 1000 and 3 s at n = 2048
#: per (group, n), hence the switch at 1000 (experiments/notes/samplers.md).
SUBSAMPLE_TABLE_MAX_N = 1000
#: Rows per block of :func:`subsample_cms` (large temporaries cost fresh pages on every call;
#: 2^16 measured 7-15 % faster than 2^14 per 2^20 pairs at n = 1e4 … 1e6, 2^17 no better:
#: experiments/notes/samplers.md, round 5).
SUBSAMPLE_CHUNK = 1 << 16

def _tail(k):
    """s(k), Stirling's remainder of log k!, for float64 whole k ≥ 0
    (:func:`~._bintables.stirling_tail`: the table up to 9, the series above, truncation error
    < 3e-11)."""
    return _stirling_tail(k, jnp.float64)


def _tail32(k):
    """s(k) in float32 (k float64 whole ≥ 0)."""
    return _stirling_tail(k, jnp.float32)


def _step(x, e):
    """(x + e + ½) log1p(e / (x + 1)): log (x + e)! − log x! less e log(x + 1) − e and the tails."""
    return (x + e + 0.5) * jnp.log1p(e / (x + 1))


def _setup(N, M, s, mode_terms=True):
    """HRUA's constants (float64) for reduced slots: M ≤ N/2 marked, s ≤ N/2 drawn, mean ≥ 10
    (without ``mode_terms`` the float64 test's :func:`_mode_terms` are left to its callers).

    The mode m = ⌊(s + 1)(M + 1)/(N + 2)⌋ is computed in float64: where rounding moves it by
    one, f(m ± 1)/f(m) = 1 + O(2^-50), so the hat still dominates to float64 rounding.
    """
    p = M / N
    q = (N - M) / N
    mu = s * p
    var = (N - s) * s * p * q / (N - 1)
    c = jnp.sqrt(var + 0.5)
    m = jnp.floor((s + 1) * (M + 1) / (N + 2))
    r = N - M - s  # ≥ 0
    P = dict(M=M, s=s, r=r, a=mu + 0.5, h=_D1 * c + _D2, m=m,
             b=jnp.minimum(jnp.minimum(s, M) + 1, jnp.floor(mu + 0.5 + 16 * c)))
    return {**P, **_mode_terms(P)} if mode_terms else P


def _mode_terms(P):
    """The float64 test's per-slot terms at the mode: L = log((m + 1)(r + m + 1) /
    ((M − m + 1)(s − m + 1))) and Σ s(·) (:func:`_log_ratio`)."""
    m, M, s, r = P["m"], P["M"], P["s"], P["r"]
    lmode = (jnp.log(m + 1) - jnp.log(M - m + 1) - jnp.log(s - m + 1) + jnp.log(r + m + 1))
    return dict(lmode=lmode, tails=_tail(m) + _tail(M - m) + _tail(s - m) + _tail(r + m))


def _log_ratio(P, k):
    """log f(k)/f(m) of the reduced law f(k) ∝ 1 / (k! (M − k)! (s − k)! (r + k)!), r = N − M − s.

    With d = k − m: −d L − Σ (x + e + ½) log1p(e/(x + 1)) + Σ s(x) − Σ s(x + e) over
    (x, e) = (m, d), (M − m, −d), (s − m, −d), (r + m, d), L = log((m + 1)(r + m + 1) /
    ((M − m + 1)(s − m + 1))) (Stirling's series: the linear parts cancel exactly). Terms are of
    the size of |d|, so float64 gives the ratio to ~1e-15 |d| absolute at any N ≤ 2^53.
    """
    m, M, s, r = P["m"], P["M"], P["s"], P["r"]
    d = k - m
    t = _step(m, d) + _step(M - m, -d) + _step(s - m, -d) + _step(r + m, d)
    tk = _tail(k) + _tail(M - k) + _tail(s - k) + _tail(r + k)
    return -d * P["lmode"] - t + (P["tails"] - tk)


def _propose(P, wu, wv):
    """HRUA's candidate k = ⌊a + h (V − ½)/U⌋ in float64 (so ⌊·⌋ is exact to ~2^-30 at any
    mean), U, and whether a ≤ … < b (else rejected)."""
    u = _S.unit64(wu)
    x = P["a"] + P["h"] * (_S.unit64(wv) - 0.5) / u
    return jnp.floor(jnp.clip(x, 0, P["b"] - 1)), u, (x >= 0) & (x < P["b"])


def _candidate(P, wu, wv):
    """The candidate and whether it is accepted (2 log U ≤ log f(k)/f(m)), in float64: the test
    decides exactly what Stadlober's squeezes decide (they only avoid the log)."""
    k, u, inside = lax.optimization_barrier(_propose(P, wu, wv))
    return k, inside & (2 * jnp.log(u) <= _log_ratio(P, k))


def _log1pmx(r):
    """log1p(r) − r in float32 with a relative error ≤ ~2^-20: for |r| < ½ by the series of
    2 atanh(z) − r, z = r/(2 + r) (−r²/(2 + r) + 2 Σ_j z^(2j+1)/(2j + 1), j = 1..8: truncation
    < |z|^17 ≤ 3^-17), above by the difference (|log1p(r) − r| ≥ 0.09 there)."""
    f32 = jnp.float32
    z = r / (2 + r)
    z2 = z * z
    ser = f32(1 / 17)
    for j in range(7, 0, -1):
        ser = f32(1 / (2 * j + 1)) + z2 * ser
    small = -r * r / (2 + r) + 2 * z * z2 * ser
    return jnp.where(jnp.abs(r) < 0.5, small, jnp.log1p(r) - r)


def _log_ratio32(P, k):
    """:func:`_log_ratio` in float32 and the sum of its terms' magnitudes.

    (x + e + ½) log1p(r) = e + (e − ½) r + (x + e + ½)(log1p(r) − r), r = e/(x + 1), and the
    e's cancel: every term is of the size of d²/x (the result's size), not |d|, so a band of
    2^-16 of the magnitudes (float32's few-ulp errors with a 10x margin) decides all but a few
    candidates per thousand.
    """
    f32 = jnp.float32
    m, M, s, r = P["m"], P["M"], P["s"], P["r"]
    d = k - m
    lin = (-d * P["lmode"]).astype(f32)
    tails = (P["tails"].astype(f32) - _tail32(k) - _tail32(M - k) - _tail32(s - k)
             - _tail32(r + k))
    total, mag = lin + tails, jnp.abs(lin) + jnp.abs(tails)
    for x, e in ((m, d), (M - m, -d), (s - m, -d), (r + m, d)):
        q = (e / (x + 1)).astype(f32)
        t = (e - 0.5).astype(f32) * q + (x + e + 0.5).astype(f32) * _log1pmx(q)
        total, mag = total - t, mag + jnp.abs(t)
    return total, mag


#: The float32 test decides a candidate only outside ±2^-16 × (sum of its terms' magnitudes + 1).
_BAND = 2.0**-16


def _candidate32(P, wu, wv):
    """The candidate, whether float32 accepts it, and whether it rejects it (neither: inside the
    band, to be tested in float64)."""
    k, u, inside = lax.optimization_barrier(_propose(P, wu, wv))
    lhs = 2 * jnp.log(u.astype(jnp.float32))
    rhs, mag = _log_ratio32(P, k)
    band = (mag + jnp.abs(lhs) + 1) * jnp.float32(_BAND)
    return k, inside & (lhs <= rhs - band), ~inside | (lhs > rhs + band)


def _candidate_tab(P, wu, wv, tab):
    """:func:`_candidate32` with log f(k)/f(m) read from the stage's log-factorial tables
    (:func:`stage_tables`: G(k) + H(s − k) − (G(m) + H(s − m)), two gathers, no logarithm but
    log U) and the same band (2^-16 (|2 log U| + 1), three orders of magnitude above the tables'
    ≤ ~1e-8 error). Candidates beyond the values both tables hold (per slot [ke, ku], around the
    mode) are rejected when 2 log U exceeds the nearer edge's ratio (log-concavity: the PMF
    falls away from the mode), else left undecided; so are all candidates of a slot whose
    tables miss its mode. Slots marked ``dead`` (not HRUA's: the caller discards them) accept
    their first candidate."""
    k, u, inside = lax.optimization_barrier(_propose(P, wu, wv))
    lhs = (2 * jnp.log(u.astype(jnp.float32))).astype(jnp.float64)
    rhs = _tab_log(tab, P["s"], jnp.clip(k, P["ke"], P["ku"])) - P["rmode"]
    band = (jnp.abs(lhs) + 1) * _BAND
    held = (k >= P["ke"]) & (k <= P["ku"])
    acc = inside & P["tok"] & held & (lhs <= rhs - band)
    return k, acc | P["dead"], ~P["dead"] & (~inside | (P["tok"] & (lhs > rhs + band)))


def _tab_setup(P, tab, dead):
    """Per-slot fields of :func:`_candidate_tab`: the values [ke, ku] both tables hold, whether
    they hold the mode (``tok``), and G(m) + H(s − m)."""
    G, _, g0, h0 = tab
    last = G.shape[0] - 1
    m, s = P["m"], P["s"]
    ke = jnp.maximum(jnp.maximum(g0, s - h0 - last), 0)
    ku = jnp.minimum(jnp.minimum(g0 + last, s - h0), jnp.minimum(s, P["M"]))
    return dict(ke=ke, ku=ku, tok=(ke < m) & (m < ku), rmode=_tab_log(tab, s, m), dead=dead)


def _tab_log(tab, s, k):
    """G(k) + H(s − k) from the stage's tables (indices clipped into them)."""
    G, H, g0, h0 = tab
    last = G.shape[0] - 1
    return (G[jnp.clip(k - g0, 0, last).astype(jnp.int32)]
            + H[jnp.clip(s - k - h0, 0, last).astype(jnp.int32)])


def _decide(P, wu, wv, tab=None):
    """The candidate of words ``wu``, ``wv`` per slot and whether HRUA accepts it: the float32
    test (or, with ``tab``, the table test :func:`_candidate_tab`) where it is outside its band,
    the float64 test (compacted, :data:`_EXACT_POOL` slots a turn) for the few inside it, so
    every decision is the float64 test's (and the draws the same with or without tables)."""
    first = _candidate32(P, wu, wv) if tab is None else _candidate_tab(P, wu, wv, tab)
    k, acc, rej = lax.optimization_barrier(first)
    und = ~acc & ~rej
    m = und.shape[0]
    pool = min(m, _EXACT_POOL)

    def exact(c):
        acc, und = c
        idx = _S.compact(und, pool)
        j = jnp.minimum(idx, m - 1)
        Pj = {a: x[j] for a, x in P.items()}
        _, ok = _candidate(Pj if "lmode" in Pj else {**Pj, **_mode_terms(Pj)}, wu[j], wv[j])
        return acc.at[idx].set(ok, mode="drop"), und.at[idx].set(False, mode="drop")

    acc, _ = lax.while_loop(lambda c: jnp.any(c[1]), exact, (acc, und))
    return k, acc


#: Undecided float32 tests (~5e-5 of candidates) are redone in float64 this many at a time.
_EXACT_POOL = 64


def _first_accepted(P, w, tab=None):
    """The first accepted of the candidates from words ``w`` (R, 2, m) per slot, and whether any
    was accepted (a rolled loop over the R candidates: one copy of :func:`_decide` compiled)."""
    shape = jax.eval_shape(lambda: _decide(P, w[0, 0], w[0, 1], tab))[0]

    def body(r, c):
        val, any_ok = c
        k, ok = lax.optimization_barrier(_decide(P, w[r, 0], w[r, 1], tab))
        return jnp.where(ok & ~any_ok, k, val), any_ok | ok

    return lax.fori_loop(0, w.shape[0], body, (jnp.zeros(shape.shape, shape.dtype),
                                               jnp.zeros(shape.shape, bool)))


def _hrua(key, N, M, s, size, tab=None, dead=None):
    """HG(N, M, s) by HRUA for reduced slots (float64 parameters (size,) or shared scalars,
    M, s ≤ N/2, mean ≥ 10).

    One candidate per slot is drawn and decided at once (:func:`_decide`; HRUA accepts 62–73 %
    of its candidates); the slots left are compacted into a pool of size // :data:`HRUA_POOL`
    + 64 with :data:`HRUA_REFILL` fresh candidates each, then, until none is left, into pools
    of size // :data:`HRUA_POOL_LAST` + 64 with :data:`HRUA_REFILL_LAST` each (both rounded
    up to a multiple of 64: :func:`~._sampling.pool_size`). Each draw is the
    first accepted candidate of its slot, and which slot gets which fresh candidates depends
    only on which slots are left, so the law is HRUA's (float64 rounding aside; uniforms have
    32 bits).
    """
    P = _setup(N, M, s, tab is None)  # (once for shared parameters)
    if tab is not None:
        P = {**P, **_tab_setup(P, tab, dead)}
    P = lax.optimization_barrier({a: jnp.broadcast_to(x, (size,)) for a, x in P.items()})
    w = _S.random_bits(jax.random.fold_in(key, 0), (2, size))
    out, done = lax.optimization_barrier(_decide(P, w[0], w[1], tab))

    def turn(c, pool, refill):
        i, done, out = c
        idx = _S.compact(~done, pool)
        j = jnp.minimum(idx, size - 1)
        fresh = _S.random_bits(jax.random.fold_in(key, i), (refill, 2, pool))
        kj, ok = _first_accepted({a: x[j] for a, x in P.items()}, fresh, tab)
        return (i + 1, done.at[idx].set(ok | done[j], mode="drop"),
                out.at[idx].set(jnp.where(ok, kj, out[j]), mode="drop"))

    c = turn((jnp.int32(1), done, out), _S.pool_size(size, HRUA_POOL), HRUA_REFILL)
    last = _S.pool_size(size, HRUA_POOL_LAST)
    c = lax.while_loop(lambda c: jnp.any(~c[1]), lambda c: turn(c, last, HRUA_REFILL_LAST), c)
    return c[2]


def _log_pmf0(N, M, s):
    """log P(X = 0) = log (N − M)! (N − s)! / ((N − M − s)! N!) for reduced float64 slots.

    As Σ of Stirling steps: (N − M + ½) log1p(s/(r + 1)) − (N + ½) log1p(s/(N − s + 1))
    + s log1p(−M/(N − s + 1)) + s(N − M) − s(r) − s(N) + s(N − s), r = N − M − s.
    """
    r = N - M - s
    return (_step(r, s) - _step(N - s, s) + s * jnp.log1p(-M / (N - s + 1))
            + _tail(N - M) - _tail(r) - _tail(N) + _tail(N - s))


def _inversion(key, N, M, s, size):
    """HG(N, M, s) for reduced float64 slots of mean < 10: sequential search of the float64 CDF
    from 0 (f(k + 1)/f(k) = (M − k)(s − k) / ((k + 1)(r + k + 1)))."""
    u = _S.unit64(_S.random_bits(key, (size,)))
    r = N - M - s
    top = jnp.minimum(M, s)
    pmf = jnp.broadcast_to(jnp.exp(_log_pmf0(N, M, s)), (size,))

    def body(c):
        k, pmf, cdf = c
        go = (u > cdf) & (k < top)
        pmf1 = pmf * (M - k) * (s - k) / ((k + 1) * (r + k + 1))
        return jnp.where(go, k + 1, k), jnp.where(go, pmf1, pmf), jnp.where(go, cdf + pmf1, cdf)

    k0 = jnp.zeros((size,), jnp.float64)
    return lax.while_loop(lambda c: jnp.any((u > c[2]) & (c[0] < top)), body, (k0, pmf, pmf))[0]


def hypergeometric(key: jax.Array, N, K, n, size: int, tables=None) -> jax.Array:
    """Exact HG(N, K, n) draws, int32 (size,): marked items among n drawn without replacement
    from N items of which K are marked; N, K, n int64 broadcastable to (size,), 0 ≤ K, n ≤ N ≤
    :data:`HG_MAX_N`, n < 2^31.

    P(X = k) = C(K, k) C(N − K, n − k) / C(N, n). Reduced by symmetry to M = min(K, N − K) marked
    and s = min(n, N − n) drawn (X = s − X' when K > N/2, then X = K − X' when n > N/2); then
    Stadlober's HRUA (ratio of uniforms with a table-mountain hat; the candidate is accepted
    when 2 log U ≤ log f(k)/f(m)) where s · M / N ≥ :data:`HRUA_MIN_MEAN`, else inversion of the
    float64 CDF. Each log f(k)/f(m) is a sum of Stirling steps of the size of |k − m| (see
    :func:`_log_ratio`), exact to ~1e-15 |k − m| whatever N: NumPy's HRUA subtracts
    log-factorials of size N log N (absolute error ~1e-5 at N = 1e9). Uniforms have 32 bits.
    Traced under ``jax.enable_x64`` whatever the global flag; branches no slot needs are
    skipped (``lax.cond``). With ``tables`` (G, H, g0, h0 of :func:`stage_tables`, for shared
    N and K) HRUA's test reads the log-ratios from them (:func:`_candidate_tab`): the same
    decisions, so the same draws. Its public form is :func:`ofijax.distributions.subsample`
    (whose example runs it); the law is tested in tests/test_hypergeometric.py.
    """
    with jax.enable_x64(True):
        f64 = jnp.float64
        N, K, n = (jnp.asarray(v, jnp.int64) for v in (N, K, n))  # (size,) or shared scalars
        flip_n = 2 * n > N
        s = jnp.where(flip_n, N - n, n)
        flip_k = 2 * K > N
        M = jnp.where(flip_k, N - K, K)
        Nf, Mf, sf = N.astype(f64), M.astype(f64), s.astype(f64)
        mean = sf * Mf / jnp.maximum(Nf, 1)
        big = mean >= HRUA_MIN_MEAN
        kb, ki = jax.random.split(key)
        x_big = lax.cond(
            jnp.any(big),
            lambda: _hrua(kb, jnp.where(big, Nf, 100.0), jnp.where(big, Mf, 50.0),
                          jnp.where(big, sf, 50.0), size, tables, ~big),
            lambda: jnp.zeros((size,), f64))
        x_small = lax.cond(
            jnp.any(~big),
            lambda: _inversion(ki, jnp.where(big, 1.0, Nf), jnp.where(big, 0.0, Mf),
                               jnp.where(big, 0.0, sf), size),
            lambda: jnp.zeros((size,), f64))
        x = jnp.where(big, x_big, x_small).astype(jnp.int64)
        x = jnp.where(flip_k, s - x, x)
        x = jnp.where(flip_n, K - x, x)
        return jnp.broadcast_to(x, (size,)).astype(jnp.int32)


def window_pmf(N, K, n):
    """HG(N, K, n) on a window of :data:`~._bintables.WINDOW` values (shared int64 scalars):
    ``(lo, f, fits, reduce)``, f float64 (WINDOW,) ∝ P(X' = lo + j) (1 at the mode) for the reduced
    law X' ~ HG(N, M, s), M = min(K, N − K), s = min(n, N − n) (support 0 … min(M, s)), and
    ``reduce(x')`` → X (X = s − X' if K > N/2, then K − X if n > N/2).

    f(k)/f(m) = exp(:func:`_log_ratio`): Stirling steps of the size of |k − m|, so each
    probability is exact to ~1e-15 |k − m| relative at any N ≤ 2^53 (far below 2^-32 on the
    window). The window [lo, lo + WINDOW) is centred on the mean s M/N, so it holds every value
    (min(M, s) < WINDOW) or all but LEFT_OUT = 2e-12 of the mass when 2 t + 2 < WINDOW, t the
    Bernstein half-width of Bin(s, M/N) (:func:`~._bintables.half_width`, variance s p q): the
    hypergeometric's variance s p q (N − s)/(N − 1) is at most the binomial's, and by Hoeffding
    (1963, Theorem 4) E exp(λ X) without replacement is at most E exp(λ Y) with replacement, so
    every Chernoff-type bound of Bin(s, M/N) (Bernstein's included) holds for HG(N, M, s)
    (Serfling 1974 sharpens it). ``fits`` is false elsewhere (huge variance: use HRUA).
    """
    f64 = jnp.float64
    N, K, n = (jnp.asarray(v, jnp.int64) for v in (N, K, n))
    lo, top, fits, reduce, (Nf, Mf, sf) = _window_params(N, K, n, jnp)
    k = lo + jnp.arange(_B.WINDOW, dtype=jnp.int64)
    P = _setup(jnp.maximum(Nf, 2.0), Mf, sf)
    f = jnp.where(k <= top, jnp.exp(_log_ratio(P, jnp.minimum(k, top).astype(f64))), 0.0)
    return lo, f, fits, reduce


def _window_params(N, K, n, xp):
    """:func:`window_pmf`'s window (int64 scalars, NumPy or traced): its first value ``lo``, the
    reduced support's top min(M, s), ``fits``, ``reduce`` and float64 N, M, s."""
    flip_n, flip_k = 2 * n > N, 2 * K > N
    s = xp.where(flip_n, N - n, n)
    M = xp.where(flip_k, N - K, K)
    Nf, Mf, sf = (xp.maximum(x, 0).astype(xp.float64) for x in (N, M, s))
    p = Mf / xp.maximum(Nf, 1)
    top = xp.minimum(M, s)
    width = _B.WINDOW
    fits = (top < width) | (2 * _B.half_width(sf * p * (1 - p), xp) + 2 < width)
    lo = xp.clip(xp.floor(sf * p).astype(xp.int64) - width // 2, 0,
                 xp.maximum(top - width + 1, 0))

    def reduce(x):
        x = xp.where(flip_k, s - x, x)
        return xp.where(flip_n, K - x, x)

    return lo, top, fits, reduce, (Nf, Mf, sf)


#: Entries of each log-factorial table of :func:`stage_tables` (float64; two per stage).
LOGF_TABLE = 1 << 15


def _stage_draws(cm, n, xp):
    """The three stages of :func:`subsample_block` as (population, marked, fewest drawn, most
    drawn): P ~ HG(Σ cm, cm_TP + cm_FN, n), TP | P and FP | n − P, with P in its window's values
    (every P in [n − negatives, positives] where the window does not fit); and ``fits``."""
    pos, neg = cm[0] + cm[1], cm[2] + cm[3]
    lo, top, fits, reduce, _ = _window_params(pos + neg, pos, n, xp)
    ends = reduce(lo), reduce(xp.minimum(lo + _B.WINDOW - 1, top))
    p_lo = xp.where(fits, xp.minimum(*ends), xp.maximum(n - neg, 0))
    p_hi = xp.where(fits, xp.maximum(*ends), xp.minimum(n, pos))
    return ((pos + neg, pos, n, n), (pos, cm[0], p_lo, p_hi), (neg, cm[2], n - p_hi, n - p_lo)), fits


def _stage_span(N, K, d_lo, d_hi, xp):
    """Reduced M = min(K, N − K), the tables' first values g0 (of k) and h0 (of s − k), and
    the number of values the draws d_lo … d_hi need in each: every mode m(s) ± (16 c + 4),
    c = √(var + ½) at the largest reduced s (HRUA's candidates stop at a + 16 c)."""
    f64 = xp.float64
    M = xp.minimum(K, N - K).astype(f64)
    Nf = N.astype(f64)
    red = [xp.minimum(d, N - d).astype(f64) for d in (d_lo, d_hi)]
    s_lo = xp.minimum(*red)
    s_hi = xp.where((2 * d_lo <= N) & (2 * d_hi >= N), xp.floor(Nf / 2), xp.maximum(*red))
    m_lo, m_hi = (xp.floor((x + 1) * (M + 1) / (Nf + 2)) for x in (s_lo, s_hi))
    p = M / xp.maximum(Nf, 1)
    var = xp.maximum((Nf - s_hi) * s_hi * p * (1 - p) / xp.maximum(Nf - 1, 1), 0)
    R = xp.floor(16 * xp.sqrt(var + 0.5)) + 4
    g0 = xp.maximum(m_lo - R, 0)
    h0 = xp.maximum(s_lo - m_lo - R, 0)
    need = xp.maximum(m_hi + R - g0, s_hi - m_hi + R - h0) + 1
    return M, g0, h0, need


def subsample_tables_fit(cm, n) -> bool:
    """Whether :func:`stage_tables` hold every conditional stage's candidates for counts ``cm``
    and ``n`` (concrete; NumPy): P's window fits and each of TP | P, FP | n − P needs at most
    :data:`LOGF_TABLE` values."""
    cm = np.asarray(cm, np.int64)
    stages, fits = _stage_draws(cm, np.int64(n), np)
    needs = [_stage_span(*(np.int64(v) for v in st), np)[3] for st in stages[1:]]
    return bool(fits) and all(float(x) <= LOGF_TABLE for x in needs)


def _lf_diff(x, e):
    """log (x + e)! − log x! for float64 whole x ≥ 0, x + e ≥ 0: Stirling steps
    (:func:`_step`) + e log(x + 1) − e + s(x + e) − s(x), of the size of |e| log x (no
    log-factorials of the size of x log x cancel)."""
    return _step(x, e) + e * jnp.log(x + 1) - e + _tail(x + e) - _tail(x)


def stage_tables(cm, n):
    """Log-factorial tables of the three stages of :func:`subsample_block` (traced int64 ``cm``,
    ``n``): G (3, LOGF_TABLE), H (3, LOGF_TABLE), g0 (3,), h0 (3,) float64.

    The reduced law HG(N, M, s) has log f(k) = G(k) + H(s − k) + const with
    G(k) = −log k! − log (M − k)! and H(j) = −log j! − log (N − M − j)!, both relative to their
    first value (G(g0 + i) = −Δ(g0, i) − Δ(M − g0, −i), Δ = :func:`_lf_diff`; −inf beyond the
    support), so HRUA's ratio f(k)/f(m) is two gathers per candidate. Values up to ~1e6 in
    size: absolute error ≤ ~1e-8 (tested against mpmath).
    """
    f64 = jnp.float64
    stages, _ = _stage_draws(cm, n, jnp)
    i = jnp.arange(LOGF_TABLE, dtype=f64)
    out = []
    for N, K, d_lo, d_hi in stages:
        M, g0, h0, _ = _stage_span(N, K, d_lo, d_hi, jnp)
        rest = N.astype(f64) - M

        def table(x0, top):
            ok = x0 + i <= top
            ii = jnp.where(ok, i, 0.0)
            return jnp.where(ok, -_lf_diff(x0, ii) - _lf_diff(top - x0, -ii), -jnp.inf)

        out.append((table(g0, M), table(h0, rest), g0, h0))
    return tuple(jnp.stack(col) for col in zip(*out))


def positives_table(cm, n):
    """The positives stage P ~ HG(Σ cm, cm_TP + cm_FN, n) of :func:`subsample_block` as a
    condensed lookup table (:func:`window_pmf` → :func:`~._bintables.window_counts`, integer
    probabilities summing to 2^32 exactly → :func:`~._bintables.condensed_table`): built once
    for every slot, since every slot shares the parameters. Returns ``(fits, draw)``,
    ``draw(words)`` → P int64 for uint32 ``words`` (one per slot); where ``fits`` is false the
    window would leave out more than LEFT_OUT and the caller draws P by HRUA instead.
    """
    cm = jnp.asarray(cm, jnp.int64)
    lo, f, fits, reduce = window_pmf(jnp.sum(cm), cm[0] + cm[1], n)
    tab = lax.optimization_barrier(_B.condensed_table(_B.window_counts(f)))

    def draw(words):
        return reduce(lo + _B.condensed_draw(tab, words).astype(jnp.int64))

    return fits, draw


def subsample_block(key: jax.Array, cm, n, size: int, positives=None, tables=None) -> jax.Array:
    """Multivariate hypergeometric confusion matrices int32 (size, 4): n rows drawn without
    replacement from a group with int64 counts ``cm`` (4,) (n may be traced).

    Positives P = TP + FN ~ HG(M, cm_TP + cm_FN, n), M = Σ cm; then, given P, the positives
    drawn are a uniform subset of the group's positives and the negatives of its negatives,
    independent: TP | P ~ HG(cm_TP + cm_FN, cm_TP, P) and FP | P ~ HG(cm_FP + cm_TN, cm_FP,
    n − P). The same law as the chain TP, FN | TP, FP | TP, FN. P, whose parameters every slot
    shares, is one lookup in :func:`positives_table` (``positives``, built here if not given)
    where its window fits; the other stages (and P where the window does not fit) are one
    ``lax.scan`` over one :func:`hypergeometric` body (a key per stage; P's stage draws 0 rows
    when the table has drawn it), so the program holds one copy of the sampler; with
    ``tables`` (:func:`stage_tables`) its test reads log-ratios from them.
    """
    with jax.enable_x64(True):
        cm = jnp.asarray(cm, jnp.int64)
        n = jnp.asarray(n, jnp.int64)
        fits, draw_p = positives_table(cm, n) if positives is None else positives
        kt, key = jax.random.split(key)
        p_tab = draw_p(_S.random_bits(kt, (size,)))
        pos, neg = cm[0] + cm[1], cm[2] + cm[3]
        big = jnp.stack([pos + neg, pos, neg])
        marked = jnp.stack([pos, cm[0], cm[2]])

        def stage(p, kj):
            k, j = kj[:2]
            drawn = jnp.where(j == 0, jnp.where(fits, 0, n), jnp.where(j == 1, p, n - p))
            x = hypergeometric(k, big[j], marked[j], drawn, size,
                               kj[2] if tables is not None else None).astype(jnp.int64)
            x = jnp.where((j == 0) & fits, p_tab, x)
            return jnp.where(j == 0, x, p), x

        xs = (jax.random.split(key, 3), jnp.arange(3))
        _, (p, tp, fp) = lax.scan(stage, jnp.zeros((size,), jnp.int64),
                                  xs if tables is None else xs + (tables,))
        p, tp, fp = p.astype(jnp.int32), tp.astype(jnp.int32), fp.astype(jnp.int32)
        n32 = n.astype(jnp.int32)
        return _S.stack_cells(tp, p - tp, fp, n32 - p - fp)


def _subsample_cms(key: jax.Array, cm: jax.Array, n: jax.Array, size: int,
                   tables: bool = False) -> jax.Array:
    """:func:`subsample_block` for any ``size``: blocks of :data:`SUBSAMPLE_CHUNK` rows by
    ``lax.map`` (a key per block, the last block cut), the positives' table built once for all.
    ``cm`` int64 (4,) and ``n`` int64 are arguments, so every group and n share one program per
    size; call it under ``jax.enable_x64(True)`` so that they arrive as int64. Its compiled
    executable is kept on disk (:func:`~ofijax._jaxcache.aot_jit`: ~5 s of compilation once,
    then loaded by later processes). With ``tables`` (where :func:`subsample_tables_fit`) HRUA
    reads its log-ratios from :func:`stage_tables`, built once: the same draws, ~2x faster."""
    with jax.enable_x64(True):
        positives = positives_table(cm, n)
        tabs = lax.optimization_barrier(stage_tables(cm, n)) if tables else None
        if size <= SUBSAMPLE_CHUNK:
            return subsample_block(key, cm, n, size, positives, tabs)
        blocks = -(-size // SUBSAMPLE_CHUNK)
        keys = jax.random.split(key, blocks)
        out = lax.map(lambda k: subsample_block(k, cm, n, SUBSAMPLE_CHUNK, positives, tabs), keys)
        return out.reshape(-1, 4)[:size]


subsample_cms = aot_jit(_subsample_cms, name="ofijax.distributions.subsample_cms",
                        static_argnums=(3, 4))


def check_subsample(c: tuple, n: int) -> None:
    """One ValueError naming the argument when n rows cannot be subsampled from counts ``c``
    (checked counts, a checked positive n)."""
    if n > sum(c):
        raise ValueError(
            f"n: cannot draw {n:,} rows without replacement from a group of {sum(c):,} rows; "
            "use n ≤ the group size (or sample_multinomial for draws with replacement).")
    if n > SAMPLER_MAX_N:
        raise ValueError(f"n: the samplers return int32 counts, so n must be at most 2**31 − 4 = "
                         f"{SAMPLER_MAX_N:,}; got {n:,}. Draw smaller samples.")
    if n > SUBSAMPLE_TABLE_MAX_N and sum(c) > HG_MAX_N:
        raise ValueError(
            f"cm: groups of up to 2**53 − 1 rows can be subsampled (exact float64 arithmetic); "
            f"got {sum(c):,}. Use sample_multinomial(key, n, cm) (for n ≪ the group, nearly the "
            "same law).")
