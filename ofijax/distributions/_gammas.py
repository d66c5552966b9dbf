"""Dirichlet probabilities for the Dirichlet-multinomial above its tables: Marsaglia–Tsang
gammas in float32, vectorized in JAX.

Owns :func:`dirichlet` (p ~ Dirichlet(α), rows) and :func:`dirichlet_cols` (the unnormalised
gammas as columns (4, size), which ``_samplers._dirichlet_chain`` feeds to its binomial stages):
one Marsaglia–Tsang candidate per gamma from Box–Muller normals (:func:`_cos_sin_turn`: cos/sin
by polynomials), α < 1 boosted by U^(1/α), rows with a rejected gamma replaced by extra rows
drawn up front and, rarely, by pools; which row fills which slot depends only on the rejection
pattern, so accepted rows keep the law (float32 arithmetic: ~1e-7 relative).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import _sampling as _S

__all__ = ["GAMMA_EXTRA", "GAMMA_POOL", "dirichlet", "dirichlet_cols"]

#: Rows whose four gammas are not all accepted (one candidate each: 5-18 % of rows, e.g. 5.6 %
#: at α = (4.5, 1.5, 2.5, 3.5), 10 % at (0.5, 0.5, 0.5, 0.5), 18 % at (1, 1, 1, 1)) are made up
#: by size // GAMMA_EXTRA + 64 extra rows drawn up front; the rare shortfall is filled from
#: pools of size // GAMMA_POOL + 64 rows.
GAMMA_EXTRA = 4
GAMMA_POOL = 8


def _cos_sin_turn(w):
    """cos 2πt and sin 2πt (float32) for t = ⌊w / 2^8⌋ / 2^24, a uint32 word's top 24 bits.

    The top two bits pick the quadrant (an exact rotation by q · 90°), the next 22 the angle
    ψ ∈ [0, π/2) inside it, where Taylor polynomials of degree 11 (sin) and 12 (cos) truncate at
    < 4e-8; with float32 rounding within 2.1e-7 of cos/sin (tested). XLA:CPU's float32 sin/cos
    cost ~3x more per element here (experiments/notes/samplers.md).
    """
    f32 = jnp.float32
    q = w >> 30
    psi = ((w >> 8) & jnp.uint32(0x3FFFFF)).astype(f32) * f32(np.pi / 2 * 2.0**-22)
    z = psi * psi
    s = psi * (1 + z * (f32(-1 / 6) + z * (f32(1 / 120) + z * (f32(-1 / 5040) + z * (
        f32(1 / 362880) + z * f32(-1 / 39916800))))))
    c = 1 + z * (f32(-1 / 2) + z * (f32(1 / 24) + z * (f32(-1 / 720) + z * (f32(1 / 40320) + z * (
        f32(-1 / 3628800) + z * f32(1 / 479001600))))))
    cos = jnp.where(q == 0, c, jnp.where(q == 1, -s, jnp.where(q == 2, -c, s)))
    sin = jnp.where(q == 0, s, jnp.where(q == 1, c, jnp.where(q == 2, -s, -c)))
    return cos, sin


def _gamma_cols(key, alpha: tuple, m: int):
    """log Gamma(α_c) for c = 0..3 as columns (4, m) (float32), and whether each row is accepted.

    Marsaglia–Tsang ("A simple method for generating gamma variables", 2000) for α + 1 where
    α < 1 (boosted by log U / α), else α: d = α − 1/3, c = 1/√(9d), x ~ N(0, 1), v = (1 + cx)³,
    accept when 1 + cx > 0 and (u < 1 − 0.0331 x⁴ or log u < x²/2 + d(1 − v + log v)); the
    value is d v. One candidate per gamma; the four normals of a row are the two Box–Muller
    pairs (r cos θ, r sin θ) of two (u₁, θ) word pairs (u₁ has 32 bits and a floor of 2^-33, so
    |x| ≤ 6.7: the tail beyond, 2e-11 of the mass, is not drawn): 8 words per row (12 with a
    boost). A row is accepted when its four candidates are. Columns, and the words drawn flat
    then reshaped: XLA:CPU's generator and arithmetic on a minor axis of 4 cost ~3x more
    (experiments/notes/samplers.md).
    """
    f32 = jnp.float32
    a = np.asarray(alpha, np.float64)
    boost = a < 1
    d = np.where(boost, a + 1, a) - 1 / 3
    c = 1 / np.sqrt(9 * d)
    nw = 12 if boost.any() else 8  # the last four: the boosts' U
    w = _S.random_bits(key, (nw * m,)).reshape(nw, m)
    u1 = w[0:2].astype(f32) * f32(2.0**-32) + f32(2.0**-33)
    cos, sin = _cos_sin_turn(w[2:4])
    r = jnp.sqrt(f32(-2) * jnp.log(u1))
    x = jnp.concatenate([r * cos, r * sin])  # (4, m): four independent normals per row
    dd, cc = jnp.asarray(d, f32)[:, None], jnp.asarray(c, f32)[:, None]
    u = ((w[4:8] >> 8).astype(f32) + f32(0.5)) * f32(2.0**-24)
    t = f32(1) + cc * x
    logv = f32(3) * jnp.log(jnp.where(t > 0, t, f32(1)))
    v = t * t * t
    x2 = x * x
    ok = (t > 0) & ((u < f32(1) - f32(0.0331) * x2 * x2)
                    | (jnp.log(u) < f32(0.5) * x2 + dd * (f32(1) - v + logv)))
    lg = jnp.log(dd) + logv
    if boost.any():
        u3 = ((w[8:12] >> 8).astype(f32) + f32(0.5)) * f32(2.0**-24)
        lg = lg + jnp.where(jnp.asarray(boost)[:, None], jnp.log(u3) / jnp.asarray(a, f32)[:, None],
                            f32(0))
    return lg, jnp.all(ok, axis=0)


def dirichlet_cols(key, alpha: tuple, size: int):
    """Unnormalised Dirichlet(alpha) columns e (4, size), float32, max 1 per row: p = e / Σ e.

    Log gammas from :func:`_gamma_cols` on size + size // GAMMA_EXTRA + 64 rows; the first
    ``size`` accepted rows (all four gammas accepted) are kept, in order (one compaction). Slots
    left without one (rare: more rows rejected than the extra rows) are filled from pools of
    size // GAMMA_POOL + 64 fresh rows until none is left. Which row fills which slot depends
    only on which rows were accepted, so the kept rows are independent with Marsaglia–Tsang's
    law (float32 arithmetic: ~1e-7 relative in the acceptance bounds). Normalised in log space
    (e = exp(lg − max lg)), so that tiny α do not underflow to 0/0.
    """
    rows = size + size // GAMMA_EXTRA + 64
    lg, ok = _gamma_cols(jax.random.fold_in(key, 0), alpha, rows)
    take = _S.compact(ok, size)
    lg = lg[:, jnp.minimum(take, rows - 1)]
    ok = take < rows
    pool = min(size, size // GAMMA_POOL + 64)

    def redraw(c):
        i, lg, ok = c
        idx = _S.compact(~ok, pool)
        fresh, fok = _gamma_cols(jax.random.fold_in(key, i), alpha, pool)
        return i + 1, lg.at[:, idx].set(fresh, mode="drop"), ok.at[idx].set(fok, mode="drop")

    _, lg, _ = lax.while_loop(lambda c: jnp.any(~c[2]), redraw, (jnp.int32(1), lg, ok))
    return jnp.exp(lg - jnp.max(lg, axis=0, keepdims=True))


@functools.partial(jax.jit, static_argnums=(1, 2))
def dirichlet(key: jax.Array, alpha: tuple, size: int) -> jax.Array:
    """p ~ Dirichlet(alpha), float32 (size, 4), from four gammas per row (:func:`dirichlet_cols`:
    Marsaglia–Tsang, rows with a rejected gamma redrawn whole, normalised in log space)."""
    e = dirichlet_cols(key, alpha, size)
    return (e / jnp.sum(e, axis=0, keepdims=True)).T
