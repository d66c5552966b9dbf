"""JAX samplers of confusion matrices (int32, TP, FN, FP, TN layout).

Random words. ``jax.random.bits`` with the default threefry key runs at roughly 7e7 words/s on a
CPU core pair, which would cap every sampler. We therefore spend the caller's key on four words
that seed XLA's native counter-based generator (``lax.rng_bit_generator`` with the Threefry
algorithm, about 5e8 words/s): the stream is a pure function of the key, identical for a fixed key
on a given backend and XLA version.

Exactness.
* :func:`uniform_cms` draws one integer uniformly in [0, N(n)) from one 32-bit word (Lemire's
  multiply-shift with exact rejection; rejected rows are redrawn inside a ``lax.while_loop``, so
  the result is exactly uniform) and decodes it for n ≤ 255 by one gather from a packed table
  of M(n) in rank order (a byte per cell; the same matrix as the closed form of
  :mod:`ofijax._combinatorics` for every rank). Above n = 255 it uses stars and bars: three
  exact uniform positions in [0, n + 3), redrawn while two coincide, sorted (faster than the
  closed form's cube roots; the closed form serves enumeration and the traced-n sampler). The
  same with Σα − 1 bars, grouped into runs of α_c parts, is the Dirichlet-multinomial at integer
  α (:func:`dirichlet_bars`, above n = 255).
* The multinomial, Dirichlet-multinomial and hypergeometric samplers draw TP, then FN | TP, then
  FP | TP, FN from their exact conditional laws (binomial, beta-binomial, hypergeometric) by
  Walker's alias method on float64-built tables indexed by the remaining count (per stage one
  exact uniform column among n + 1 and one 32-bit word against the column's threshold: two
  words and one gather; each probability resolved to 2^-32 of a column). Above the tables'
  sizes the multinomial and the Dirichlet-multinomial are drawn in ``_samplers.py`` (an exact
  binomial chain; Dirichlet probabilities from Marsaglia–Tsang gammas); from 2^16 multinomial
  matrices per call at n > 32, by the O(1) lookups of ``_bintables.py`` (2^-32 resolution);
  subsample above n = 1000 by the exact hypergeometric sampler of ``_hypergeometric.py``.
* Shared by the rejection samplers (BTRS in ``_samplers.py``, HRUA in ``_hypergeometric.py``):
  :func:`unit64` (a word as a float64 uniform) and :func:`compact` (the refills' slot lists).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._combinatorics import num_cms

__all__ = [
    "random_bits",
    "unit64",
    "compact",
    "stack_cells",
    "uniform_floats",
    "uniform_below",
    "unrank_cms",
    "unrank_cms_jit",
    "unrank_range",
    "packed_table_np",
    "packed_table",
    "lookup_cms",
    "uniform_cms",
    "uniform_cms_traced",
    "uniform_below_traced",
    "UNRANK_MAX_N",
    "LUT_MAX_N",
    "BARS_MAX_K",
    "bars_fit",
    "dirichlet_bars",
]

#: Largest n whose |M(n)| fits in an unsigned 32-bit rank.
UNRANK_MAX_N = 2949
#: Largest n served by the packed lookup table (one byte per cell; N(255) = 2,829,056 words).
LUT_MAX_N = 255

_THREEFRY = lax.RandomAlgorithm.RNG_THREE_FRY


def _key_words(key: jax.Array) -> jax.Array:
    return jax.random.bits(key, (4,), jnp.uint32)


def random_bits(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """uint32 words from XLA's Threefry ``rng_bit_generator`` seeded by ``key``."""
    _, bits = lax.rng_bit_generator(_key_words(key), tuple(shape), jnp.uint32, algorithm=_THREEFRY)
    return bits


def uniform_floats(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 uniforms on [0, 1) with 24 random bits each."""
    return (random_bits(key, shape) >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def _refill(key, draw, reject, values, pool, full_round_first=True):
    """Replace rejected rows of ``values`` (flat leading axis) until none is rejected.

    Round 0 (only if something was rejected, and only with ``full_round_first``) redraws every
    rejected slot from a fresh full-size draw, which is cheaper on CPU than compacting when
    many are rejected; later rounds number the few remaining rejected
    slots by a cumulative sum and fill them from a pool of ``pool`` candidates (round i uses
    ``fold_in(key, i)``; slots beyond the pool wait for the next round). Which slot gets which
    candidate depends only on the rejection pattern, so accepted values keep their exact law.
    """
    size = values.shape[0]

    def expand(mask, vals):
        return mask.reshape(mask.shape + (1,) * (vals.ndim - 1))

    def full_round(vals):
        fresh = draw(jax.random.fold_in(key, 0), size)
        return jnp.where(expand(reject(vals), vals), fresh, vals)

    if full_round_first:
        values = lax.cond(jnp.any(reject(values)), full_round, lambda v: v, values)

    def cond(state):
        _, vals = state
        return jnp.any(reject(vals))

    def body(state):
        i, vals = state
        bad = reject(vals)
        slot = jnp.cumsum(bad.astype(jnp.int32)) - 1
        cand = draw(jax.random.fold_in(key, i), pool)
        take = bad & (slot < pool)
        new = cand[jnp.clip(slot, 0, pool - 1)]
        return i + 1, jnp.where(expand(take, vals), new, vals)

    _, out = lax.while_loop(cond, body, (jnp.int32(1), values))
    return out


def _pool_size(size: int, p_reject: float) -> int:
    return int(min(size, math.ceil(size * p_reject * p_reject * 4.0) + 64))


def _mul_hi_lo(x: jax.Array, bound: int) -> tuple[jax.Array, jax.Array]:
    """(x · bound) >> 32 and (x · bound) mod 2^32 for uint32 x, with 16-bit limbs (no uint64)."""
    c, d = jnp.uint32(bound >> 16), jnp.uint32(bound & 0xFFFF)
    a, b = x >> 16, x & jnp.uint32(0xFFFF)
    bd, ad, bc = b * d, a * d, b * c
    mid = (bd >> 16) + (ad & jnp.uint32(0xFFFF)) + (bc & jnp.uint32(0xFFFF))
    hi = a * c + (ad >> 16) + (bc >> 16) + (mid >> 16)
    return hi, x * jnp.uint32(bound)


@functools.partial(jax.jit, static_argnums=(1, 2))
def uniform_below(key: jax.Array, bound: int, shape: tuple[int, ...]) -> jax.Array:
    """Exactly uniform uint32 integers in [0, bound), 1 ≤ bound < 2^32 (static).

    Lemire's multiply-shift: r = ⌊x · bound / 2^32⌋ for a uniform word x, rejecting x when
    (x · bound) mod 2^32 < 2^32 mod bound (then every r has exactly ⌊2^32 / bound⌋ preimages).
    Words are laid out in rows of R (R · P(reject) ≈ 1/32); a row holding any rejected word is
    redrawn whole from a fresh stream, the few bad rows being numbered by a cumulative sum over
    rows, until no row is bad. A row is kept only when all its words are accepted, and which
    fresh row replaces which depends only on the rejection pattern, so the law is exact.
    """
    size = int(np.prod(shape, dtype=np.int64))
    thresh = (2**32) % bound
    if thresh == 0:
        return _mul_hi_lo(random_bits(key, shape), bound)[0]
    p = thresh / 2**32
    R = 1
    while R < 1024 and 2 * R * p <= 1.0 / 32:
        R *= 2
    rows = max(1, -(-size // R))
    k0, k1 = jax.random.split(key)
    words = random_bits(k0, (rows, R))
    t = jnp.uint32(thresh)

    def bad_rows(w):
        return jnp.any(_mul_hi_lo(w, bound)[1] < t, axis=1)

    p_row = 1.0 - (1.0 - p) ** R
    pool = int(min(rows, math.ceil(rows * p_row * 2.0) + 8))

    def cond(state):
        return jnp.any(state[1])

    def body(state):
        i, bad, w = state
        idx = jnp.nonzero(bad, size=pool, fill_value=rows)[0]  # first bad rows; rows = none
        fresh = random_bits(jax.random.fold_in(k1, i), (pool, R))
        w = w.at[idx].set(fresh, mode="drop")
        bad = bad.at[idx].set(bad_rows(fresh), mode="drop")
        return i + 1, bad, w

    _, _, words = lax.while_loop(cond, body, (jnp.int32(0), bad_rows(words), words))
    out = _mul_hi_lo(words, bound)[0].reshape(-1)[:size]
    return out.reshape(shape)


def unit64(w: jax.Array) -> jax.Array:
    """float64 in (0, 1): the midpoints of the 2^32 cells of a uint32 word."""
    return (w.astype(jnp.float64) + 0.5) * (2.0**-32)


def pool_size(size: int, divisor: int) -> int:
    """size // divisor + 64 rounded up to a multiple of 64 (at most ``size``): the rejection
    samplers' refill pools. Pool lengths that are not a multiple of the vector width measured
    up to 1.6x slower per slot (BTRS, 2^15 slots: 5,525 vs 5,568; experiments/notes/samplers.md,
    round 5)."""
    return min(size, -(-(size // divisor + 64) // 64) * 64)


def compact(mask: jax.Array, pool: int) -> jax.Array:
    """The first ``pool`` indices where ``mask`` holds, in order, padded with len(mask).

    The rank is ``jnp.cumsum`` (one reduce-window on XLA:CPU) of a mask materialised first (else
    its producer is re-evaluated inside the window): slower to run than an associative scan
    (122 vs 62 µs at 2^14 slots) but ~0.5 s less to compile per use (0.24 vs 0.74 s), which
    matters more in first calls (experiments/notes/samplers.md). Shared by the rejection
    samplers' refills (binomial BTRS and inversion pools, the Dirichlet's gamma rows,
    hypergeometric HRUA).
    """
    size = mask.shape[0]
    mask = lax.optimization_barrier(mask)
    rank = jnp.cumsum(mask.astype(jnp.int32)) - 1
    tgt = jnp.where(mask & (rank < pool), rank, pool)
    return jnp.full((pool,), size, jnp.int32).at[tgt].set(jnp.arange(size, dtype=jnp.int32),
                                                          mode="drop")


def stack_cells(tp, fn, fp, tn) -> jax.Array:
    """Stack four int columns into (..., 4) int32 by column updates of a zero buffer.

    ``jnp.stack`` here lets XLA's CPU backend fuse the whole sampler into the concatenation and
    re-evaluate it per output element whenever a consumer (for example a float conversion in a
    metric) is not simplified away: measured 4-5x slower end to end. Column-wise
    dynamic-update-slices materialise each cell once.
    """
    out = jnp.zeros(fn.shape + (4,), jnp.int32)
    for i, col in enumerate((tp, fn, fp, tn)):
        out = out.at[..., i].set(col.astype(jnp.int32))
    return out


_INV3 = 0xAAAAAAAB  # 3 · 0xAAAAAAAB ≡ 1 (mod 2^32)


def _num_cms_u32(m: jax.Array) -> jax.Array:
    """N(m) = C(m + 3, 3) as exact uint32 for −1 ≤ m ≤ 2949, without a table or uint64.

    T = (m + 1)(m + 2)/2 fits; 3 N = T (m + 3) is taken mod 2^32 and multiplied by the inverse
    of 3 mod 2^32, which recovers N exactly because N < 2^32.
    """
    mu = (m + 1).astype(jnp.uint32)
    t = (mu * (mu + 1)) >> 1
    return t * (mu + 2) * jnp.uint32(_INV3)


def _cbrt(x: jax.Array) -> jax.Array:
    """float32 cube root of x > 0: exponent bit trick + two Newton steps (rel. error < 1e-5).

    XLA's ``cbrt`` is scalar code on CPU; this is plain vector arithmetic.
    """
    i = lax.bitcast_convert_type(x, jnp.int32)
    # i / 3 in float (an initial guess needs no exact division; integer // is slow here)
    third = (i.astype(jnp.float32) * jnp.float32(1.0 / 3.0)).astype(jnp.int32)
    y = lax.bitcast_convert_type(third + 709921077, jnp.float32)
    for _ in range(2):
        y = (2.0 * y + x / (y * y)) * jnp.float32(1.0 / 3.0)
    return y




def _unrank_m(s: jax.Array, n: int | jax.Array) -> jax.Array:
    """m = n − TP: the least m with N(m) > s (uint32 s; cube-root estimate + exact corrections)."""
    # (m + 2)³ − (m + 2) = 6 N(m).
    y = _cbrt(6.0 * s.astype(jnp.float32) + 1.0)
    m = jnp.clip(jnp.floor(y).astype(jnp.int32) - 2, 0, n)
    for _ in range(2):
        m = jnp.where((m < n) & (_num_cms_u32(m) <= s), m + 1, m)
    return jnp.where((m > 0) & (_num_cms_u32(m - 1) > s), m - 1, m)


def _unrank_tail(m: jax.Array, s2: jax.Array, n: int | jax.Array) -> jax.Array:
    """Cells from m = n − TP and the int32 offset s2 < T(m + 1) inside the TP block."""
    # k = m − FP + 1: least k with T(k) = k (k + 1) / 2 > s2.
    k = jnp.floor((jnp.sqrt(8.0 * s2.astype(jnp.float32) + 1.0) - 1.0) * 0.5).astype(jnp.int32)
    k = jnp.where((k * (k + 1)) >> 1 <= s2, k + 1, k)
    k = jnp.where((k * (k + 1)) >> 1 <= s2, k + 1, k)
    k = jnp.where((k > 1) & (((k - 1) * k) >> 1 > s2), k - 1, k)
    fn = s2 - (((k - 1) * k) >> 1)
    fp = m + 1 - k
    tn = k - 1 - fn
    tp = jnp.broadcast_to(n - m, fn.shape)
    return stack_cells(tp, fn, fp, tn)


def unrank_cms(rank: jax.Array, n: int | jax.Array) -> jax.Array:
    """Closed-form unranking of uint32 ranks in [0, N(n)) into int32 (..., 4) matrices.

    m = n − TP is the least m with N(m) > rank (cube-root estimate + integer corrections against
    N computed exactly in uint32, see ``_num_cms_u32``); then k = m − FP + 1 is the least k with T(k) > rank − N(m−1)
    (square-root estimate + corrections); FN is the remaining offset and TN the rest.
    ``n`` may be a Python int or an int array broadcastable with ``rank`` (traced is fine).
    Ranks outside [0, N(n)) give garbage rows (callers mask them).
    """
    if isinstance(n, int) and n > UNRANK_MAX_N:
        raise ValueError(f"n: unranking needs |M(n)| < 2^32, i.e. n ≤ {UNRANK_MAX_N}; got {n}.")
    s = rank.astype(jnp.uint32)
    m = _unrank_m(s, n)
    s2 = (s - _num_cms_u32(m - 1)).astype(jnp.int32)  # offset inside the TP block, < T(m + 1) ≤ 4.4e6
    return _unrank_tail(m, s2, n)


def unrank_range(base: jax.Array, size: int, n: int) -> jax.Array:
    """``unrank_cms(base + arange(size), n)`` (uint32 scalar ``base``), cheaper on one TP block.

    When the first and last ranks share TP (m = n − TP), every offset inside the block is
    base − N(m − 1) + j and only the square-root stage runs per element (one ``lax.cond`` per
    range); otherwise the full closed form runs. Same values as :func:`unrank_cms`.
    """
    base = jnp.asarray(base).astype(jnp.uint32)
    ends = jnp.stack([base, base + jnp.uint32(size - 1)])
    m_ends = _unrank_m(ends, n)
    j = jnp.arange(size, dtype=jnp.uint32)

    def one_block(_):
        m0 = m_ends[0]
        off = (base - _num_cms_u32(m0 - 1)).astype(jnp.int32)
        return _unrank_tail(jnp.broadcast_to(m0, (size,)), off + j.astype(jnp.int32), n)

    def general(_):
        return unrank_cms(base + j, n)

    return lax.cond(m_ends[0] == m_ends[1], one_block, general, None)


unrank_cms_jit = jax.jit(unrank_cms)


def _stars_and_bars(key: jax.Array, n: int, shape: tuple[int, ...]) -> jax.Array:
    """Uniform over M(n) for any n: 3 distinct sorted positions among n + 3 (exact rejection);
    :func:`dirichlet_bars` at α = (1, 1, 1, 1)."""
    return dirichlet_bars(key, n, (1, 1, 1, 1), tuple(shape))


#: Most bars (Σα − 1) that :func:`dirichlet_bars` takes: its order statistics cost K(K − 1)
#: comparisons per row (measured in experiments/notes/samplers.md).
BARS_MAX_K = 15


def bars_fit(alpha: tuple) -> bool:
    """Whether :func:`dirichlet_bars` serves these concentrations: positive integers with
    Σα − 1 ≤ :data:`BARS_MAX_K`."""
    return all(float(a).is_integer() and a >= 1 for a in alpha) and sum(alpha) - 1 <= BARS_MAX_K


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def dirichlet_bars(key: jax.Array, n: int, alpha: tuple, shape: tuple[int, ...]) -> jax.Array:
    """Dirichlet-multinomial(n, α) for integer α ≥ 1 by stars and bars, int32 (*shape, 4).

    With A = Σα, the uniform composition of n into A parts (K = A − 1 distinct bars among
    n + K positions, each K-subset equally likely) grouped into runs of α_TP, α_FN, α_FP, α_TN
    parts has P(CM = x) = Π_c C(x_c + α_c − 1, α_c − 1) / C(n + A − 1, A − 1), which is the
    Dirichlet-multinomial PMF at integer α (aggregation of the Dirichlet). With the sorted bars
    s_1 < … < s_K and cumulative c_1 = α_TP, c_2 = c_1 + α_FN, c_3 = c_2 + α_FP:
    TP = s_{c_1} + 1 − α_TP, FN = s_{c_2} − s_{c_1} − α_FN, FP = s_{c_3} − s_{c_2} − α_FP,
    TN = n + K − s_{c_3} − α_TN. Positions are exact uniforms (:func:`uniform_below`); rows with
    two equal positions are redrawn (:func:`_refill`), so the law is exact. The order
    statistics come from a min/max sorting network (:func:`_group_bars`). α = (1, 1, 1, 1) is
    the uniform distribution on M(n) (:func:`_stars_and_bars`, the same draws).
    """
    a = tuple(int(v) for v in alpha)
    K = sum(a) - 1
    size = int(np.prod(shape, dtype=np.int64))
    width = n + K

    def draw(k, m):
        return uniform_below(k, width, (m, K)).astype(jnp.int32)

    k0, k1 = jax.random.split(key)
    # Rows with a repeated position (probability ≈ K(K − 1)/2 / width) are redrawn; where they
    # are rare and K > 3, from pools only (a full-size first round doubled the cost at K = 15,
    # n = 1e5: 72 → 51 ms per 2^18 rows); K = 3 (the uniform sampler) keeps its draws.
    p_rep = K * (K - 1) / 2 / width
    pools_only = K > 3 and p_rep <= 1 / 64
    pool = min(size, math.ceil(2 * size * p_rep) + 64) if pools_only else _pool_size(size, p_rep)
    pos = _refill(k1, draw, _repeats, draw(k0, size), pool, full_round_first=not pools_only)
    return _group_bars(pos, width, a).reshape(tuple(shape) + (4,))


def _repeats(pos: jax.Array) -> jax.Array:
    """Rows of (m, K) positions in which two coincide."""
    K = pos.shape[1]
    bad = jnp.zeros(pos.shape[:1], bool)
    for i in range(K):
        for j in range(i + 1, K):
            bad = bad | (pos[:, i] == pos[:, j])
    return bad


@functools.cache
def _sorting_network(K: int) -> tuple[tuple[int, int], ...]:
    """Batcher's odd–even merge sort on the next power of two ≥ K, comparators reaching past
    K dropped (the padding would be +∞ there, so they never swap)."""
    n = 1 << max(0, (K - 1).bit_length())
    out, p = [], 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < K:
                        out.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return tuple(out)


def _group_bars(pos: jax.Array, width, alpha: tuple) -> jax.Array:
    """Cells (m, 4) of K = Σα − 1 distinct bar positions (m, K) in [0, width): the sizes of the
    four runs of α_c parts. Sorted by a min/max network (XLA's generic sort of short rows costs
    several times more on CPU; only the three order statistics read survive simplification)."""
    cols = [pos[:, i] for i in range(pos.shape[1])]
    for i, j in _sorting_network(len(cols)):
        cols[i], cols[j] = jnp.minimum(cols[i], cols[j]), jnp.maximum(cols[i], cols[j])
    c1 = alpha[0]
    c2, c3 = c1 + alpha[1], c1 + alpha[1] + alpha[2]
    s1, s2, s3 = cols[c1 - 1], cols[c2 - 1], cols[c3 - 1]
    return stack_cells(s1 + 1 - alpha[0], s2 - s1 - alpha[1], s3 - s2 - alpha[2],
                       width - s3 - alpha[3])


def packed_table_np(n: int) -> np.ndarray:
    """All of M(n) in rank order, one uint32 per matrix: TP | FN << 8 | FP << 16 | TN << 24.

    Only for n ≤ :data:`LUT_MAX_N` (each cell fits a byte). Cached per n (NumPy; N(255) words
    are 11 MB).
    """
    if not 0 <= n <= LUT_MAX_N:
        raise ValueError(f"n: the packed table needs 0 ≤ n ≤ {LUT_MAX_N}; got {n}.")
    return _packed_table_np(int(n))


@functools.lru_cache(maxsize=8)
def _packed_table_np(n: int) -> np.ndarray:
    blocks = []
    for m in range(n + 1):  # m = n − TP; inside: k − 1 = row ascending (FP descending), FN = col
        row, col = np.tril_indices(m + 1)
        row = row.astype(np.uint32)
        col = col.astype(np.uint32)
        fp = np.uint32(m) - row
        tn = row - col
        blocks.append(np.uint32(n - m) | (col << 8) | (fp << 16) | (tn << 24))
    out = np.concatenate(blocks).astype(np.uint32)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=8)
def packed_table(n: int) -> jax.Array:
    """:func:`packed_table_np` as a (cached, concrete) JAX array on the default device."""
    with jax.ensure_compile_time_eval():
        return jnp.asarray(packed_table_np(n))


@functools.lru_cache(maxsize=1)
def _bitcast_little_endian() -> bool:
    with jax.ensure_compile_time_eval():
        b = lax.bitcast_convert_type(jnp.uint32(0x04030201), jnp.uint8)
        return [int(v) for v in np.asarray(b)] == [1, 2, 3, 4]


def lookup_cms(rank: jax.Array, table: jax.Array) -> jax.Array:
    """int32 (..., 4) matrices of ranks in [0, len(table)) from a :func:`packed_table`.

    Out-of-range ranks give unspecified rows (callers mask them).
    """
    words = table.at[rank].get(mode="promise_in_bounds")
    if _bitcast_little_endian():
        # one (..., 4) uint8 view of each word: fuses into consumers without a stack
        return lax.bitcast_convert_type(words, jnp.uint8).astype(jnp.int32)
    return jnp.stack(
        [((words >> (8 * i)) & jnp.uint32(0xFF)).astype(jnp.int32) for i in range(4)], axis=-1
    )  # pragma: no cover - big-endian backends


@functools.partial(jax.jit, static_argnums=(2, 3))
def _uniform_cms_lut(key: jax.Array, table: jax.Array, n: int, shape: tuple[int, ...]):
    return lookup_cms(uniform_below(key, num_cms(n), shape), table)


def uniform_cms(key: jax.Array, n: int, shape: tuple[int, ...], table=None) -> jax.Array:
    """Exactly uniform draws from M(n), int32 (*shape, 4).

    For n ≤ :data:`LUT_MAX_N` the rank is uniform on [0, N(n)) (:func:`uniform_below`) and
    decoded by the packed lookup table (``table`` = :func:`packed_table` (n), which callers that
    jit around this should pass as an argument rather than close over); the table's matrix of a
    rank is the closed form's (:func:`unrank_cms`). Above, stars and bars
    (:func:`_stars_and_bars`): at n = 1000 it measured 22 ms per 2^20 draws against 45 ms for
    drawing a rank and unranking it in closed form (experiments/notes/samplers.md).
    """
    shape = tuple(shape)
    if n > LUT_MAX_N:
        return _stars_and_bars(key, n, shape)
    return _uniform_cms_lut(key, packed_table(n) if table is None else table, n, shape)


# ------------------------------------------------------------------- traced n (one compile per sweep)


def _mul_hi_lo_traced(x: jax.Array, bound: jax.Array) -> tuple[jax.Array, jax.Array]:
    """:func:`_mul_hi_lo` for a traced uint32 ``bound``."""
    c, d = bound >> 16, bound & jnp.uint32(0xFFFF)
    a, b = x >> 16, x & jnp.uint32(0xFFFF)
    bd, ad, bc = b * d, a * d, b * c
    mid = (bd >> 16) + (ad & jnp.uint32(0xFFFF)) + (bc & jnp.uint32(0xFFFF))
    hi = a * c + (ad >> 16) + (bc >> 16) + (mid >> 16)
    return hi, x * bound


def uniform_below_traced(key: jax.Array, bound: jax.Array, size: int, width: int = 1) -> jax.Array:
    """Exactly uniform uint32 (size, width) in [0, bound) for a traced uint32 1 ≤ bound.

    Lemire's multiply-shift with exact rejection (a word is rejected when
    (x · bound) mod 2^32 < 2^32 mod bound); a row with any rejected word is redrawn whole by
    :func:`_refill` (which fresh row replaces which depends only on the rejection pattern), so
    the law is exact for every bound; the pool is sized for the worst case (P(reject) < ½).
    """
    bound = jnp.asarray(bound, jnp.uint32)
    thresh = (jnp.uint32(0) - bound) % bound  # 2^32 mod bound

    def draw(k, m):
        return random_bits(k, (m, width))

    def reject(w):
        return jnp.any(_mul_hi_lo_traced(w, bound)[1] < thresh, axis=-1)

    k0, k1 = jax.random.split(key)
    words = _refill(k1, draw, reject, draw(k0, size), min(size, size // 2 + 64))
    return _mul_hi_lo_traced(words, bound)[0]


def uniform_cms_traced(key: jax.Array, n: jax.Array, size: int) -> jax.Array:
    """Exactly uniform draws from M(n), int32 (size, 4), for a traced int32 n (1 ≤ n < 2^31 − 3).

    One program serves every n: n ≤ :data:`UNRANK_MAX_N` draws a rank uniform on [0, N(n)) and
    unranks it in closed form; larger n draws three distinct positions among n + 3 (stars and
    bars, exact rejection). Same law as :func:`uniform_cms`, another stream of draws.
    """
    n = jnp.asarray(n, jnp.int32)

    def by_rank(k):
        r = uniform_below_traced(k, _num_cms_u32(jnp.minimum(n, UNRANK_MAX_N)), size)[:, 0]
        return unrank_cms(r, jnp.minimum(n, UNRANK_MAX_N))

    def by_bars(k):
        width = (n + 3).astype(jnp.uint32)

        def draw(kk, m):
            return uniform_below_traced(kk, width, m, 3).astype(jnp.int32)

        ka, kb = jax.random.split(k)
        pos = _refill(kb, draw, _repeats, draw(ka, size), min(size, size // 8 + 64))
        return _group_bars(pos, n + 3, (1, 1, 1, 1))

    return lax.cond(n <= UNRANK_MAX_N, by_rank, by_bars, key)

