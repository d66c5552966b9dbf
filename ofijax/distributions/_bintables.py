"""Binomial draws by O(1) table lookups, for the multinomial above the small-n tables.

Owns the float64 CDF of Bin(n, p) on a window of values (from Stirling-series log-ratios to the
mode, accurate at n = 10⁶ where lgamma differences are not), its condensed lookup table
(Marsaglia, Tsang & Wang, "Fast generation of discrete random variables", 2004: the 32-bit
probabilities split into digits, each digit's values repeated that many times, so one word and
one gather give a draw), rows of 32-bit CDF thresholds searched by bisection for small per-slot
n, and :func:`table_multinomial`: Multinomial(n, p) matrices for a fixed p and a traced n, drawn
as P ~ Bin(n, p_TP + p_FN) from a window table, then TP | P and FP | n − P with P = A + 128 h + r
split into binomials of fixed size A (a window table) and of sizes 128 h and r < 128 (rows),
since Bin(a + b, q) = Bin(a, q) + Bin(b, q) for independent parts. Every probability is resolved
to 2^-32 (one 32-bit word per lookup); the windows leave out at most 2e-12 of each law's mass
(Bernstein's bound), and :func:`table_multinomial_fits` says where they fit.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._sampling import random_bits

__all__ = ["stirling_tail", "window_pmf", "condensed_table", "condensed_draw", "fits",
           "half_width", "window_lo", "window_counts",
           "table_multinomial", "table_multinomial_fits", "WINDOW", "ROW_WINDOW", "ROW_SPLIT",
           "LEFT_OUT", "STIRLING_TAIL"]

#: s(k) = log k! − (k + ½) log(k + 1) + (k + 1) − ½ log 2π for k ≤ 9 (Hörmann's table, as in
#: TensorFlow's BTRS); above 9 the Stirling series 1/12 − 1/360 x² + 1/1260 x⁴ over x = k + 1
#: (truncation error < 1/(1680 · 11⁷) = 3e-11).
STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                 0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                 0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                 0.00833056343336287)
#: Values per window table (static shapes): Bin(n, p) fits when n < WINDOW or its Bernstein
#: interval (mass outside ≤ LEFT_OUT) is narrower than WINDOW − 2; ~ n p (1 − p) ≤ 2.9e5.
#: At most 2^15 (window indices are kept as int16).
WINDOW = 1 << 13
#: Per-slot sizes d < WINDOW split as d = ROW_SPLIT · h + r; rows of Bin(ROW_SPLIT · h, q) keep
#: ROW_WINDOW values around their mean (σ ≤ 45 there, so the Bernstein interval is ~690 wide);
#: 128 halves the rows' build against 64 for one more bisection step on r (see
#: experiments/notes/samplers.md).
ROW_SPLIT = 128
ROW_WINDOW = 1 << 10
#: Mass a window may leave out (both tails together, by Bernstein's inequality).
LEFT_OUT = 2e-12
#: Digit widths (bits) of the condensed tables, 32 bits of probability in all; level i holds at
#: most (2^bits − 1) · WINDOW entries, so narrow low digits keep the build small (the notes).
_DIGITS = (8, 8, 3, 3, 3, 3, 3, 1)


def stirling_tail(k, dt):
    """s(k) of :data:`STIRLING_TAIL` (table up to 9, Stirling series above) for int arrays k ≥ 0.

    The table is read by a chain of selects, not a gather: a gather inside a fused loop keeps
    XLA:CPU from vectorising it (BTRS's tests ran ~1.5x slower; experiments/notes/samplers.md,
    round 5)."""
    x = k.astype(dt) + 1
    s = 1 / (x * x)
    out = (dt(1 / 12) - (dt(1 / 360) - s * dt(1 / 1260)) * s) / x
    for i in range(9, 0, -1):
        out = jnp.where(k == i, jnp.asarray(STIRLING_TAIL[i], dt), out)
    return jnp.where(k <= 0, jnp.asarray(STIRLING_TAIL[0], dt), out)


def half_width(var, xp=jnp):
    """t with exp(−t²/(2(σ² + t/3))) = LEFT_OUT / 2: Bernstein's bound on each tail of a sum of
    independent [0, 1] variables of variance σ² (and, by Hoeffding 1963, Thm. 4, of draws without
    replacement: the hypergeometric windows of ``_hypergeometric`` use it)."""
    L = math.log(2 / LEFT_OUT)
    return L / 3 + xp.sqrt(L * L / 9 + 2 * L * var)


def fits(n, p, width: int | None = None, xp=jnp):
    """Whether Bin(n, p)'s values (or all but LEFT_OUT of its mass) fit ``width`` values
    (default :data:`WINDOW`); ``xp`` = numpy for concrete arguments (no program compiled)."""
    width = WINDOW if width is None else width
    nf = xp.asarray(n).astype(xp.float64)
    return (xp.asarray(n) < width) | (2 * half_width(nf * p * (1 - p), xp) + 2 < width)


def _laws(n, p, xp=jnp):
    """The three fixed-size laws of :func:`table_multinomial` (sizes, probabilities ≤ ½), the
    flips, and P's window start ``plo``; NumPy or traced."""
    s, sneg = p[0] + p[1], p[2] + p[3]
    qa = xp.where(s > 0, p[0] / xp.where(s > 0, s, 1), 0.0)
    qb = xp.where(sneg > 0, p[2] / xp.where(sneg > 0, sneg, 1), 0.0)
    flips = (s > 0.5, qa > 0.5, qb > 0.5)
    ss, qa, qb = (xp.minimum(x, 1 - x) for x in (s, qa, qb))
    lo1 = window_lo(xp.asarray(n, xp.int32), ss, WINDOW, xp)
    plo = xp.where(flips[0], n - (lo1 + WINDOW - 1), lo1)  # P's window, mirrored if s flipped
    a = xp.maximum(plo, 0)
    a2 = xp.maximum(n - (plo + WINDOW - 1), 0)
    return xp.stack([n, a, a2]).astype(xp.int32), xp.stack([ss, qa, qb]), flips, plo


def table_multinomial_fits(n: int, p) -> bool:
    """Whether :func:`table_multinomial`'s windows fit Multinomial(n, p) (concrete n, p): each
    of Bin(n, s), Bin(A, q_a), Bin(A', q_b) has n < WINDOW or 2 t + 2 < WINDOW, t the Bernstein
    half-width L/3 + √(L²/9 + 2 L σ²), L = log(2/LEFT_OUT).

    Example:
        >>> table_multinomial_fits(10**6, [0.4, 0.1, 0.2, 0.3]), table_multinomial_fits(10**7, [0.25] * 4)
        (True, False)
    """
    sizes, probs, _, _ = _laws(np.int64(n), np.asarray(p, np.float64), np)
    return bool(np.all(fits(sizes, probs, xp=np)))


def window_pmf(n, p, lo, width: int):
    """Bin(n, p) probabilities of k = lo … lo + width − 1, float64 (..., width), up to one
    common factor (1 at the mode); p ≤ ½ (0 allowed), int32 n and lo broadcast together.

    log f(k)/f(m) = −d L₀ − (k + ½) log1p(d/(m + 1)) − (n − k + ½) log1p(−d/(n − m + 1))
    + s(m) + s(n − m) − s(k) − s(n − k), d = k − m, m = ⌊(n + 1) p⌋, L₀ = log((m + 1)/(r (n − m + 1))),
    r = p/(1 − p): Stirling's series with log1p of small ratios, so no large logarithms cancel.
    """
    n, lo = jnp.asarray(n)[..., None], jnp.asarray(lo)[..., None]
    p = jnp.asarray(p, jnp.float64)[..., None]
    k = lo + jnp.arange(width, dtype=jnp.int32)
    zero = p <= 0
    ps = jnp.where(zero, 0.25, p)
    nf = n.astype(jnp.float64)
    m = jnp.clip(jnp.floor((nf + 1) * ps), 0, nf).astype(jnp.int32)
    kk = jnp.clip(k, 0, n)
    d = (kk - m).astype(jnp.float64)
    l0 = jnp.log((m + 1).astype(jnp.float64) / (ps / (1 - ps) * (n - m + 1).astype(jnp.float64)))
    lr = (-d * l0 - (kk.astype(jnp.float64) + 0.5) * jnp.log1p(d / (m + 1).astype(jnp.float64))
          - ((n - kk).astype(jnp.float64) + 0.5) * jnp.log1p(-d / (n - m + 1).astype(jnp.float64))
          + stirling_tail(m, jnp.float64) + stirling_tail(n - m, jnp.float64)
          - stirling_tail(kk, jnp.float64) - stirling_tail(n - kk, jnp.float64))
    f = jnp.where((k >= 0) & (k <= n), jnp.exp(lr), 0.0)
    return jnp.where(zero, (k == 0).astype(jnp.float64), f)


def window_lo(n, p, width: int, xp=jnp):
    """The window's first value: centred on the mean, inside [0, n − width + 1] (0 if n < width)."""
    c = xp.floor(n.astype(xp.float64) * p).astype(xp.int32) - width // 2
    return xp.clip(c, 0, xp.maximum(n - width + 1, 0))


def window_counts(pmf):
    """Integer probabilities c_j (int64, Σ c_j = 2^32 exactly): differences of the normalised CDF
    rounded to 2^-32 (each within 2^-32 of the window-normalised probability)."""
    cdf = jnp.cumsum(pmf, axis=-1)
    t = jnp.round(cdf / cdf[..., -1:] * 2.0**32).astype(jnp.int64)
    return jnp.diff(t, prepend=jnp.zeros(t.shape[:-1] + (1,), jnp.int64), axis=-1)


def _level_sizes(width: int):
    sizes, cum = [], 0
    for i, b in enumerate(_DIGITS):
        cum += b
        most = (1 << b) if i == 0 else (1 << b) - 1  # the first digit is not masked (c ≤ 2^32)
        sizes.append(min(1 << cum, most * width))
    return sizes


def condensed_table(counts):
    """Condensed lookup tables of integer probabilities ``counts`` (..., width), each row Σ = 2^32.

    Digit i of c_j (widths :data:`_DIGITS`, the first unmasked) is how many times j appears in
    level i's part of the table; level i's entries each stand for 2^(32 − bits up to i) words.
    All levels are filled by one scatter of their first positions and one running maximum over
    level · 2^16 + j (so no value leaks from one level into the next). Returns (table int16
    (..., size), level boundaries int64 (..., levels), level offsets, shifts); values
    j < 2^15 are kept as int16 (half the cache footprint).
    """
    width = counts.shape[-1]
    assert width <= 1 << 15, "window indices are int16"
    sizes = _level_sizes(width)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    shifts = (32 - np.cumsum(_DIGITS)).astype(np.int64)
    masks = np.array([-1] + [(1 << b) - 1 for b in _DIGITS[1:]], np.int64)
    dig = ((counts[..., None, :] >> shifts[:, None]) & masks[:, None]).astype(jnp.int32)
    end = jnp.cumsum(dig, axis=-1)  # (..., levels, width)
    start = end - dig + jnp.asarray(offsets, jnp.int32)[:, None]
    total = int(np.sum(sizes))
    lead = counts.shape[:-1]
    val = ((jnp.arange(len(_DIGITS), dtype=jnp.int32)[:, None] << 16)
           + jnp.arange(width, dtype=jnp.int32)).reshape(-1)
    pos = jnp.where(dig > 0, start, total).reshape((-1, len(_DIGITS) * width))
    marks = jax.vmap(lambda ps: jnp.full((total,), -1, jnp.int32).at[ps].set(val, mode="drop"))(pos)
    table = (lax.associative_scan(jnp.maximum, marks, axis=1) & 0xFFFF).astype(jnp.int16)
    table = table.reshape(lead + (total,))
    bounds = jnp.cumsum(end[..., -1].astype(jnp.int64) << shifts, axis=-1)
    return table, bounds, jnp.asarray(offsets), jnp.asarray(shifts)


def condensed_draw(tab, w):
    """Index j with probability c_j / 2^32 for uint32 words ``w`` (one table of
    :func:`condensed_table`): the level is the number of level boundaries ≤ w, then one gather."""
    table, bounds, offsets, shifts = tab
    x = w.astype(jnp.int64)
    level = jnp.zeros(w.shape, jnp.int32)
    for k in range(len(_DIGITS) - 1):
        level = level + (x >= bounds[k]).astype(jnp.int32)
    base = jnp.where(level > 0, bounds[jnp.maximum(level - 1, 0)], 0)
    return table[offsets[level] + ((x - base) >> shifts[level])].astype(jnp.int32)


def _bisect(flat, width: int, row, last, w):
    """min{j ≤ last : w < T[row, j]} (else ``last``) by bisection; ``flat`` the row-major
    thresholds (rows · width,) uint32 and ``last`` the row's last value with mass."""
    lo = jnp.zeros(w.shape, jnp.int32)
    hi = last
    base = row * width
    for _ in range(max(1, math.ceil(math.log2(width)))):
        mid = (lo + hi) >> 1
        gt = w < flat[base + mid]
        hi = jnp.where(gt, mid, hi)
        lo = jnp.where(gt, lo, mid + 1)
    return hi


def _row_thresholds(sizes, q, width: int):
    """Rows of Bin(size, q) on windows centred on the means (q (...,) broadcast over the rows):
    thresholds T_j = round(2^32 F_j) as uint32 (2^32 capped, never read: the search stops at the
    row's first j with F_j = 1), those last values, and the windows' first values."""
    q = jnp.asarray(q)[..., None]
    lo = window_lo(sizes, q, width)
    cdf = jnp.cumsum(window_pmf(sizes, q, lo, width), axis=-1)
    t = jnp.round(cdf / cdf[..., -1:] * 2.0**32).astype(jnp.int64)
    last = width - jnp.sum(t >= 1 << 32, axis=-1, dtype=jnp.int32)  # F = 1 on a suffix
    return jnp.minimum(t, (1 << 32) - 1).astype(jnp.uint32), last, lo


def table_multinomial(n, p):
    """``draw(key, m)`` → the columns (tp, fn, fp, tn) of m Multinomial(n, p) matrices (p
    float64 (4,), n traced int32) from tables built once; 7 random words per matrix.

    P = TP + FN ~ Bin(n, s), s = p_TP + p_FN, from its window [lo, lo + WINDOW) (one word); then
    TP | P ~ Bin(P, q_a) and FP | n − P ~ Bin(n − P, q_b) with P = A + d, n − P = A' + d',
    d, d' ∈ [0, WINDOW) (three words each: Bin(A, q) from a window, Bin(ROW_SPLIT · h, q) and
    Bin(r, q) from rows, d = ROW_SPLIT · h + r). A probability above ½ is flipped
    (X = N − Bin(N, 1 − q)). Only where :func:`table_multinomial_fits`: elsewhere a window
    would leave out more than LEFT_OUT of a law.
    """
    sizes, probs, (fs, fa, fb), plo = _laws(n, p)
    a, a2 = sizes[1], sizes[2]
    lo = window_lo(sizes, probs, WINDOW)
    table, bounds, offsets, shifts = condensed_table(window_counts(window_pmf(sizes, probs, lo, WINDOW)))
    windows = [(table[i], bounds[i], offsets, shifts) for i in range(3)]  # sliced once, here
    h = jnp.arange(WINDOW // ROW_SPLIT, dtype=jnp.int32) * ROW_SPLIT
    rows_h, last_h, lo_h = _row_thresholds(h, probs[1:], ROW_WINDOW)
    rows_r, last_r, _ = _row_thresholds(jnp.arange(ROW_SPLIT, dtype=jnp.int32), probs[1:], ROW_SPLIT)
    rows_h = [lax.optimization_barrier(rows_h[i].reshape(-1)) for i in range(2)]
    rows_r = [lax.optimization_barrier(rows_r[i].reshape(-1)) for i in range(2)]
    windows = lax.optimization_barrier(windows)

    def side(i, d, w):  # Bin(A_i + d, q_i) = A_i's window + ROW_SPLIT · h's row + r's row
        h, r = d // ROW_SPLIT, d % ROW_SPLIT
        x = lo[i + 1] + condensed_draw(windows[i + 1], w[0])
        x = x + lo_h[i][h] + _bisect(rows_h[i], ROW_WINDOW, h, last_h[i][h], w[1])
        return x + _bisect(rows_r[i], ROW_SPLIT, r, last_r[i][r], w[2])

    def draw(key, m):
        # barriers: materialise each stage once (else XLA fuses a stage into every consumer)
        w = lax.optimization_barrier(random_bits(key, (7, m)))
        y = lo[0] + condensed_draw(windows[0], w[0])
        pos = lax.optimization_barrier(jnp.where(fs, n - y, y))
        neg = n - pos
        ya, yb = lax.optimization_barrier((side(0, pos - a, w[1:4]), side(1, neg - a2, w[4:7])))
        tp = jnp.where(fa, pos - ya, ya)
        fp = jnp.where(fb, neg - yb, yb)
        return tp, pos - tp, fp, neg - fp

    return draw
