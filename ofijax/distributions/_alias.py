"""Conditional alias tables of the exact samplers at small n (multinomial, Dirichlet-multinomial,
multivariate hypergeometric).

A confusion matrix is drawn as TP, then FN | TP, then FP | TP, FN, each from its exact
conditional law (binomial, beta-binomial, hypergeometric) given the count m still to place:
float64 PMF tables (n + 1, n + 1) (row m = that law; :func:`conditional_tables`) turned into
Walker alias tables (:func:`alias_rows`, Vose's algorithm, all rows in lockstep), sampled by
:func:`table_sample` with one exact uniform column among n + 1 and one 32-bit word per stage
(one gather of 8 bytes: O(1) whatever n, where the former bisection of float32 CDF rows read
⌈log2(n + 1)⌉ scattered entries). Each probability is resolved to 2^-32 (the bisection: 2^-24).
The callers (``_samplers.py``) cache the tables per (n, kind, params). Also one long table
(:func:`alias_flat`, :func:`betabinomial_table`, :func:`pow2_draw`): the Dirichlet-multinomial's
positives above n = 2048.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ._sampling import random_bits, stack_cells, uniform_below

__all__ = ["TABLE_MAX_N", "alias_flat", "alias_rows", "betabinomial_table", "conditional_tables",
           "pow2_draw", "table_sample"]

#: Largest n for the conditional alias tables ((n + 1)² pairs of int32 per stage).
TABLE_MAX_N = 2048


def _pmf_from_logpmf(logpmf: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Rows normalised to 1 (float64); a row without mass (unreachable) is a point mass at 0."""
    logpmf = np.where(valid, logpmf, -np.inf)
    top = np.max(logpmf, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    w = np.exp(logpmf - top)
    total = w.sum(axis=-1, keepdims=True)
    w = np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)
    w[..., 0] = np.where(total[..., 0] > 0, w[..., 0], 1.0)
    return w


def alias_rows(pmf: np.ndarray) -> np.ndarray:
    """Walker alias tables of the rows of ``pmf`` (R, W) (each summing to 1): int32 (R, W, 2),
    [..., 0] the column's threshold t_j (a uint32 stored as int32), [..., 1] its alias a_j.

    A draw picks a column j uniformly, then j itself when a uniform 32-bit word is < t_j, else
    a_j: P(k) = (t_k + Σ_{j: a_j = k} (2^32 − t_j)) / (W 2^32). Built by Vose's algorithm, all
    rows in lockstep (one small column of each row per step, float64): q = W p; a small column s
    (q_s < 1) takes t_s = round(q_s 2^32) and the top large column l as alias, q_l −= 1 − q_s.
    Columns left when one side runs out hold q = 1 up to rounding and are their own alias.
    Each probability is within (1 + its alias columns) · 2^-33 / W of ``pmf`` (rounding of t)
    plus the float64 drift of the updates (tested against the PMF).
    """
    pmf = np.asarray(pmf, np.float64)
    R, W = pmf.shape
    q = (pmf * W).ravel()  # flat (row-major) arrays: 1-D fancy indexing is the fast kind
    thr = np.full(R * W, 2**32 - 1, np.uint64)
    alias = np.tile(np.arange(W, dtype=np.int64), R)
    small = (q < 1).reshape(R, W)
    ns = small.sum(axis=1)
    nl = W - ns
    order = np.argsort(~small, axis=1, kind="stable")  # each row: its small columns first
    cols = np.arange(W)[None, :]
    s_stack = np.where(cols < ns[:, None], order, 0).ravel()
    l_stack = np.zeros((R, W), np.int64)
    l_stack[cols < nl[:, None]] = order[cols >= ns[:, None]]
    l_stack = l_stack.ravel()
    base = np.arange(R, dtype=np.int64) * W
    act = base[(ns > 0) & (nl > 0)] // W
    while act.size:
        b = base[act]
        sc = b + s_stack[b + ns[act] - 1]
        lc = b + l_stack[b + nl[act] - 1]
        ns[act] -= 1
        qs = q[sc]
        thr[sc] = np.clip(np.floor(qs * 2.0**32 + 0.5), 0, 2**32 - 1)
        alias[sc] = lc - b
        q[lc] -= 1.0 - qs
        down = q[lc] < 1
        r2 = act[down]
        nl[r2] -= 1
        s_stack[base[r2] + ns[r2]] = lc[down] - base[r2]
        ns[r2] += 1
        act = act[(ns[act] > 0) & (nl[act] > 0)]
    out = np.empty((R, W, 2), np.int32)
    out[..., 0] = thr.astype(np.uint32).view(np.int32).reshape(R, W)
    out[..., 1] = alias.astype(np.int32).reshape(R, W)
    return out


def alias_flat(pmf: np.ndarray) -> np.ndarray:
    """Walker alias table of one long PMF (W,) (summing to 1; zeros allowed): int32 (W, 2) as
    :func:`alias_rows`, built without a loop over the columns (Vose's lockstep steps one column
    at a time; here W is up to 2^18).

    The sweep of Hübschle-Schneider & Sanders ("Parallel weighted random sampling", 2019) in
    closed form: with q = W p, the small columns s₁ < s₂ < … (q < 1) in order need deficits
    1 − q, the large ones l₁ < l₂ < … (q ≥ 1) offer surpluses q − 1; D and S their running sums
    (float128 where the platform has it, so the drift stays at the 2^-32 level at W = 2^20).
    Small column i takes t = q and as alias the large column j with S_{j−1} ≤ D_{i−1} < S_j (the
    one serving the sweep when it reaches i). Large column j is used up at S_j: inside the
    deficit of the small column i with D_{i−1} < S_j ≤ D_i, it keeps 1 − (D_i − S_j) and takes
    l_{j+1} as alias (the sweep's step where a large column turns small); the last one keeps the
    rest (q ≈ 1). Tested against the PMF (each probability within (1 + its alias columns) ·
    2^-33 / W plus the sums' drift).
    """
    p = np.asarray(pmf, np.float64)
    W = p.size
    q = p * W
    thr = np.full(W, 2**32 - 1, np.uint64)
    alias = np.arange(W, dtype=np.int64)
    light = np.flatnonzero(q < 1)
    heavy = np.flatnonzero(q >= 1)
    if light.size and heavy.size:
        d = 1 - q[light].astype(np.longdouble)
        D = np.cumsum(d)
        S = np.cumsum(q[heavy].astype(np.longdouble) - 1)
        start = np.concatenate([np.zeros(1, D.dtype), D[:-1]])  # D_{i−1}
        j = np.minimum(np.searchsorted(S, start, side="right"), heavy.size - 1)
        thr[light] = np.clip(np.floor(q[light] * 2.0**32 + 0.5), 0, 2**32 - 1)
        alias[light] = heavy[j]
        i = np.searchsorted(D, S[:-1], side="left")  # large columns used up inside deficit i
        used = np.flatnonzero(i < light.size)
        keep = (1 - (D[i[used]] - S[used])).astype(np.float64)
        thr[heavy[used]] = np.clip(np.floor(keep * 2.0**32 + 0.5), 0, 2**32 - 1)
        alias[heavy[used]] = heavy[used + 1]
    out = np.empty((W, 2), np.int32)
    out[:, 0] = thr.astype(np.uint32).view(np.int32)
    out[:, 1] = alias.astype(np.int32)
    return out


def betabinomial_table(n: int, a: float, b: float) -> np.ndarray:
    """Alias table (:func:`alias_flat`) of BetaBinomial(n, a, b) on 0 … n, padded with zero
    columns to W = 2^⌈log2(n + 1)⌉ so that a draw's column is the top bits of one word
    (:func:`pow2_draw`); int32 (W, 2). The PMF as in :func:`conditional_tables` (float64 sums of
    logs, no lgamma differences)."""
    pmf = _stage_table(n, "betabinomial", (float(a), float(b)), rows=[n])[0]
    W = 1 << max(1, math.ceil(math.log2(n + 1)))
    return alias_flat(np.concatenate([pmf, np.zeros(W - n - 1)]))


def pow2_draw(table: jax.Array, w: jax.Array) -> jax.Array:
    """Draws from an alias table of W = 2^b columns (b ≥ 1) for uint32 words ``w`` (2, ...):
    column = the top b bits of w[0] (exactly uniform), kept when w[1] < its threshold, else its
    alias. int32 (...)."""
    b = table.shape[0].bit_length() - 1
    col = (w[0] >> (32 - b)).astype(jnp.int32)
    return _pick(table[col], col, w[1])


def _pick(entry, col, word):
    """The column ``col`` where the 32-bit ``word`` is below its threshold (``entry`` [..., 0],
    a uint32 stored as int32), else its alias (``entry`` [..., 1])."""
    return jnp.where(word < jax.lax.bitcast_convert_type(entry[..., 0], jnp.uint32), col,
                     entry[..., 1])


def _log_rising(a: float, n: int) -> np.ndarray:
    """log Γ(a + j)/Γ(a) = Σ_{i<j} log(a + i) for j = 0..n (no lgamma differences, which cancel
    for large a: at α ≈ 1e15 they gave another law)."""
    return np.concatenate([[0.0], np.cumsum(np.log(a + np.arange(n, dtype=np.float64)))])


def _log_falling(top: int, n: int) -> np.ndarray:
    """log(top! / (top − j)!) for j = 0..n (−inf for j > top) as sums of log(top − i): exact to
    float64 rounding of each term at any top < 2^63 (lgamma(top + 1) − lgamma(top − j + 1)
    cancels catastrophically once lgamma's ulp is large: top ≳ 1e13)."""
    j = np.arange(n, dtype=np.int64)
    terms = np.log(np.maximum(np.int64(top) - j, 1).astype(np.float64))
    out = np.concatenate([[0.0], np.cumsum(terms)])
    return np.where(np.arange(n + 1) <= top, out, -np.inf)


def _stage_table(n: int, kind: str, params: tuple, rows=None) -> np.ndarray:
    """PMF table (len(rows), n + 1), float64: row m is the law of the next cell given m draws
    remain (``rows`` default 0..n; TP's stage needs only m = n)."""
    mi = (np.arange(n + 1) if rows is None else np.asarray(rows))[:, None]
    ki = np.arange(n + 1)[None, :]
    m, k = mi.astype(np.float64), ki.astype(np.float64)
    valid = ki <= mi
    rest = np.where(valid, mi - ki, 0)
    km = rest.astype(np.float64)
    lf = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))])
    logc = lf[mi] - lf[ki] - lf[rest]
    if kind == "binomial":
        (p,) = params
        if p <= 0.0:
            logpmf = np.where(k == 0, 0.0, -np.inf)
        elif p >= 1.0:
            logpmf = np.where(k == m, 0.0, -np.inf)
        else:
            logpmf = logc + k * math.log(p) + km * math.log1p(-p)
    elif kind == "betabinomial":
        a, b = params
        if b == 0.0:  # all remaining mass goes to this cell
            logpmf = np.where(k == m, 0.0, -np.inf)
        else:
            ra, rb, rab = (_log_rising(x, n) for x in (a, b, a + b))
            logpmf = logc + ra[ki] + rb[rest] - rab[mi]
    elif kind == "hypergeom":
        total, good = params  # population size and successes in it
        bad = total - good
        lg, lb, lt = (_log_falling(c, n) for c in (good, bad, total))
        with np.errstate(invalid="ignore"):
            logpmf = logc + lg[ki] + lb[rest] - lt[mi]
        logpmf = np.where(np.isnan(logpmf), -np.inf, logpmf)
    else:  # pragma: no cover - internal
        raise AssertionError(kind)
    return _pmf_from_logpmf(logpmf, valid)


def conditional_tables(n: int, kind: str, params: tuple) -> tuple[np.ndarray, ...]:
    """Three alias tables (:func:`alias_rows`) for TP (one row), FN | TP and FP | TP, FN
    (see the module docstring).

    ``kind`` is ``"multinomial"`` (params = 4 probabilities), ``"dirichlet"`` (4 concentrations)
    or ``"hypergeom"`` (4 population counts).
    """
    p = [float(v) for v in params]
    if kind == "multinomial":
        q1 = p[1] / (p[1] + p[2] + p[3]) if p[1] + p[2] + p[3] > 0 else 0.0
        q2 = p[2] / (p[2] + p[3]) if p[2] + p[3] > 0 else 0.0
        stages = [("binomial", (p[0],)), ("binomial", (q1,)), ("binomial", (q2,))]
    elif kind == "dirichlet":
        stages = [
            ("betabinomial", (p[0], p[1] + p[2] + p[3])),
            ("betabinomial", (p[1], p[2] + p[3])),
            ("betabinomial", (p[2], p[3])),
        ]
    elif kind == "hypergeom":
        c = [int(v) for v in params]
        stages = [
            ("hypergeom", (sum(c), c[0])),
            ("hypergeom", (c[1] + c[2] + c[3], c[1])),
            ("hypergeom", (c[2] + c[3], c[2])),
        ]
    else:  # pragma: no cover - internal
        raise AssertionError(kind)
    first = _stage_table(n, *stages[0], rows=[n])  # only the row m = n is needed for TP
    return tuple(alias_rows(t) for t in (first, _stage_table(n, *stages[1]),
                                         _stage_table(n, *stages[2])))


@functools.partial(jax.jit, static_argnums=(1, 5))
def table_sample(key, n, t0, t1, t2, shape):
    """Sequential draw of int32 (*shape, 4) matrices from three alias tables
    (:func:`conditional_tables`): per stage an exact uniform column (:func:`uniform_below`) of
    the row of the remaining count, then the column or its alias by a 32-bit word."""
    width = n + 1
    k0, k1 = jax.random.split(key)
    col = uniform_below(k0, width, (3,) + tuple(shape)).astype(jnp.int32)
    word = random_bits(k1, (3,) + tuple(shape))

    def stage(table, i, row):
        return _pick(table.reshape(-1, 2)[row * width + col[i]], col[i], word[i])

    tp = stage(t0, 0, jnp.zeros(tuple(shape), jnp.int32))
    m1 = n - tp
    fn = stage(t1, 1, m1)
    m2 = m1 - fn
    fp = stage(t2, 2, m2)
    return stack_cells(tp, fn, fp, m2 - fp)
