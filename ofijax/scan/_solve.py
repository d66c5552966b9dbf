"""Vectorised one-dimensional solvers for the Bernoulli score in t = log q.

For a set with outcome count Y and basis features Φ (see :mod:`._basis`),
``G(t) = Y·t - Φ·φ(t)`` is concave. On the basis interval ``[a, b]`` (one side of 0, so G(0) = 0
is always feasible):

* :func:`maximize` returns ``(max_t G, argmax_t)``; the maximum is ≥ 0.
* :func:`crossings` returns the open interval ``{t ∈ [a, b] : G(t) > c}`` as ``(left, right)``,
  clipped to ``[a, b]`` (only meaningful where ``max G > c``).

Both are fixed-iteration searches, batched over any leading axes of ``Φ`` / ``Y`` (no
data-dependent loops), each one loop (:func:`_newton`): :data:`N_BISECT` = 5 halvings of the
bracket, then safeguarded Newton steps (:data:`N_NEWTON` = 4 for the maximiser,
:data:`N_NEWTON_CROSS` = 5 for the crossings) that keep the bracket and land inside it whenever a
step would leave it.

* The maximiser is the root of the slope ``s(t) = Y - F'(t)``, ``F'(t) = Σ_i σ_i(t)`` with
  ``σ_i = p_i e^t / (1 - p_i + p_i e^t)``; ``s' = -Σ σ_i(1-σ_i)`` and ``|s''| ≤ |s'|``, so Newton's
  error obeys ``e_{k+1} ≲ ½·e_k²`` once in the bracket: from ``e_0 ≤ 13.8 / 2^6 ≈ 0.22`` (5
  halvings of an interval of width ≤ log 1e6) three steps reach ~4e-8, the fourth ~1e-15.
* A crossing is the root of ``w(t) = sqrt(G(t̂) - G(t)) - sqrt(G(t̂) - c)``, which is nearly linear
  in ``t - t̂`` (``G`` is quadratic at its maximum), so Newton converges quadratically even when
  the crossing lies close to ``t̂`` (where Newton on ``G - c`` would not); ``w' = -G'(t) / (2
  sqrt(G(t̂) - G(t)))``.

Every iteration evaluates the series and its derivative (a T and a U series stacked into one
Clenshaw recurrence, ~2× a plain series; for the maximiser on the derivative's coefficients
``c' = c·D``, computed once per solve), so a solve costs ≈ 2·(5 + 4) = 18 series evaluations
instead of the 40 of pure bisection, which :data:`NEWTON` = False selects (40 halvings, bracket
~1.3e-11 in t). For the Chebyshev basis (:data:`GRID`) the halvings' bracket
can come instead from the series at the 31 interior points of a uniform grid on [a, b], one
matrix product with a fixed table of T_k there (:func:`_grid_bracket`): the same bracket width,
and only the Newton steps stay in the loop (4-5 evaluations instead of 9-10; timings in
``experiments/notes/scan_engine.md``, "solver"). Halvings and Newton steps
share the loop body, so the program is no larger than the bisection's, and both kinds of solve
are one function (:func:`solve`, the kind a traced flag), so the attribute step compiles a
single solver for its three solves. Both reach far inside the 1e-6 asked for (measured against
60 halvings: t within 1e-13, crossings within 5e-12); the score at the maximum is off by
O(n·1e-22) since G is flat there. The exact basis with a single p uses the closed form
``e^t = Y(1-p) / (p(n-Y))`` for the maximiser. For the Chebyshev basis, reduced-rank features are
expanded to the K coefficients once per solve and each point evaluates the series by Clenshaw's
recurrence (2K multiply-adds, no trig; equal to the direct sum to ~1e-15 relative).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._basis import Basis, basis_eval

__all__ = ["SECTIONS", "N_ITER", "NEWTON", "N_BISECT", "N_NEWTON", "N_NEWTON_CROSS", "GRID",
           "value_at", "solve", "maximize", "crossings", "batched_zeros"]

#: Multisection: each iteration evaluates SECTIONS - 1 points and keeps one of SECTIONS pieces.
#: Plain bisection (2) is fastest on CPU: the Chebyshev evaluations, not the loop overhead,
#: dominate (notes: "solver").
SECTIONS = 2
#: Iterations: the bracket shrinks by 2^40 ≈ 1.1e12 (≈ 1.3e-11 in t on |t| ≤ 14), far inside the
#: 1e-6 asked for (notes: "solver").
N_ITER = 40
#: Safeguarded Newton after :data:`N_BISECT` halvings (True), or :data:`N_ITER` halvings (False).
NEWTON = True
#: Halvings before the Newton steps (bracket ≤ 13.8 / 2^5 ≈ 0.43 wide; 4 measured as accurate).
N_BISECT = 5
#: Newton steps on the slope (maximiser) and on the crossing function ``w`` (see module doc).
N_NEWTON = 4
N_NEWTON_CROSS = 5
#: Chebyshev basis: the halvings' bracket from the series on a fixed grid (one matrix product,
#: :func:`_grid_bracket`) instead of :data:`N_BISECT` evaluations in the loop (False: halvings).
#: :func:`solve`'s ``grid`` overrides it per call: the attribute step of a small table, whose
#: program is compiled for a first call, keeps the halvings (the grid's product and selects
#: cost compile time there; notes: "small tables").
GRID = True


def batched_zeros(shape, dtype, like) -> jax.Array:
    """Zeros of ``shape`` that carry the batch axes of ``like`` (any traced input) under ``vmap``.

    For a loop's initial carry: JAX batches a loop body again for as long as a carry element
    turns from unbatched to batched, so carries that start as constants make each loop batch its
    body twice, and nested loops compound it (notes: "tracing"). Outside ``vmap`` these are plain
    zeros (XLA folds the select away)."""
    r = jnp.where(False, jnp.ravel(jnp.asarray(like))[0], 0).astype(dtype)
    return jnp.broadcast_to(r, shape)


def _multisect(pred, lo, hi):
    """Fixed-count multisection: :data:`SECTIONS` - 1 interior points per iteration.

    ``pred(points)`` (points of shape ``lo.shape + (SECTIONS - 1,)``) must be True left of the
    target and False right of it; returns the final bracket ``(lo, hi)``.
    """
    fracs = jnp.arange(1, SECTIONS, dtype=lo.dtype) / SECTIONS

    def body(_, lh):
        lo, hi = lh
        pts = lo[..., None] + (hi - lo)[..., None] * fracs
        cnt = jnp.sum(pred(pts), axis=-1)
        take = lambda i: jnp.take_along_axis(pts, i[..., None], axis=-1)[..., 0]  # noqa: E731
        new_lo = jnp.where(cnt > 0, take(jnp.maximum(cnt - 1, 0)), lo)
        new_hi = jnp.where(cnt < SECTIONS - 1, take(jnp.minimum(cnt, SECTIONS - 2)), hi)
        return new_lo, new_hi

    return jax.lax.fori_loop(0, N_ITER, body, (lo, hi))


def _newton(f_df, right_of, lo, hi, n_bisect, n_newton):
    """Root of ``f`` in the bracket ``[lo, hi]``: ``n_bisect`` halvings, then ``n_newton``
    safeguarded Newton steps, in one loop (one loop body to compile; a halving evaluates ``f'``
    too and ignores it).

    ``f_df(t) -> (f, f')`` is the function whose root is sought and its derivative;
    ``right_of(t, f) -> bool``: the root lies right of ``t`` (given ``f = f(t)``). Each step first
    shrinks the bracket to the side of ``t`` holding the root, then (a halving) takes the new
    bracket's midpoint or (a Newton step) takes the Newton point if it
    is inside the bracket; a point beyond an end (an overshoot: the root lies near that end) is
    moved to ``1/256`` of the bracket inside it, so a root at or next to an end is still reached
    (the bracket then shrinks 256-fold a step), or onto the end itself when it is beyond it by
    less than that (a rounding-size step at convergence: the sign test and the step can see
    the function's value rounded differently); a non-finite step takes the midpoint. Returns the
    last point.
    """

    def body(i, st):
        lo, hi, t = st
        f, df = f_df(t)
        r = right_of(t, f)
        lo = jnp.where(r, t, lo)
        hi = jnp.where(r, hi, t)
        tn = t - f / jnp.where(df != 0, df, 1.0)
        inner = (hi - lo) * (1.0 / 256.0)
        # beyond an end by less than `inner` (e.g. a rounding step at convergence): that end
        low = jnp.where(lo - tn < inner, lo, lo + inner)
        high = jnp.where(tn - hi < inner, hi, hi - inner)
        tc = jnp.where(tn < lo, low, jnp.where(tn > hi, high, tn))
        ok = (df != 0) & jnp.isfinite(tn) & (i >= n_bisect)
        return lo, hi, jnp.where(ok, tc, 0.5 * (lo + hi))

    t0 = 0.5 * (lo + hi)
    return jax.lax.fori_loop(0, n_bisect + n_newton, body, (lo, hi, t0))[2]


@functools.lru_cache(maxsize=8)
def _grid_table(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, T)``: the n - 1 interior points ``x_j = -1 + 2j/n`` of a uniform grid on [-1, 1] and
    the (k, n - 1) values ``T_i(x_j)`` of the first k Chebyshev polynomials there (by their
    recurrence, in float64)."""
    x = -1.0 + 2.0 * np.arange(1, n) / n
    t = np.empty((k, n - 1))
    t[0] = 1.0
    if k > 1:
        t[1] = x
    for i in range(2, k):
        t[i] = 2.0 * x * t[i - 1] - t[i - 2]
    return x, t


def _grid_bracket(basis: Basis, coef, scale, right_at, lo, hi):
    """The bracket of :data:`N_BISECT` halvings from one matrix product: the series ``coef``
    (..., K) (times ``scale``) at the ``2^N_BISECT - 1`` interior points of a uniform grid on
    the basis interval [a, b] is ``coef @ T`` (:func:`_grid_table`), and ``right_at(t, v)`` (the
    points t (..., P) and the values v there) says at which of them the root lies to the
    right. The new bracket is the grid cell of [lo, hi] holding the root: its ends are the last
    point inside (lo, hi) to the left of the root and the next one (or lo, hi themselves), so it
    is at most (b - a) / 2^N_BISECT wide, as the halvings' (on [a, b]; on a narrower [lo, hi],
    e.g. a crossing's, it is narrower still), and the points stay in order even if rounding
    makes the test non-monotone near the root."""
    n = 1 << N_BISECT
    x, tab = _grid_table(coef.shape[-1], n)
    dt = coef.dtype
    half = 0.5 * (basis.t_hi - basis.t_lo)
    mid = 0.5 * (basis.t_hi + basis.t_lo)
    t = mid + half * jnp.asarray(x, dt)  # (n - 1,)
    v = (coef @ jnp.asarray(tab, dt)) * jnp.asarray(scale, dt)  # (..., n - 1)
    ok = (t > lo[..., None]) & (t < hi[..., None])
    first = jnp.sum(t <= lo[..., None], axis=-1)  # index of the first point inside
    stop = first + jnp.sum(ok, axis=-1)  # one past the last
    k = first + jnp.sum(ok & right_at(t, v), axis=-1)  # the first point right of the root
    t_pad = jnp.concatenate([t, t[-1:]])  # (indices up to n - 1 read a valid entry)
    new_lo = jnp.where(k > first, t_pad[jnp.maximum(k - 1, 0)], lo)
    new_hi = jnp.where(k < stop, t_pad[k], hi)
    return new_lo, new_hi


def _full(basis: Basis, phi_s: jax.Array, ends):
    """Expand reduced-rank features to the K Chebyshev coefficients once per solve, so that every
    bisection point costs K trig terms, not K trig terms plus a (K, r) projection."""
    if basis.proj is None:
        return basis, phi_s, ends
    full = dataclasses.replace(basis, proj=None)
    return full, phi_s @ basis.proj.T, None


def _clenshaw_prep(basis: Basis, coef, derivative: bool):
    """The loop-invariant part of :func:`_clenshaw`: the series' coefficients, moved to the
    leading axis in recurrence order (for the derivative: the U-series coefficients ``(j+1)
    c_{j+1}``). Computed once per solve, outside the bisection loop: XLA does not hoist this
    reverse-transpose copy out of the loop, and inside it cost more than the recurrence itself
    (measured under ``vmap`` over replicates)."""
    c = jnp.moveaxis(coef, -1, 0)  # (K, ...)
    if derivative:  # d/dx Σ c_k T_k = Σ_{j<K-1} (j+1) c_{j+1} U_j(x)
        k = c.shape[0]
        c = c[1:] * jnp.arange(1, k, dtype=c.dtype).reshape((k - 1,) + (1,) * (c.ndim - 1))
    return c[0], c[:0:-1], derivative


def _clenshaw(basis: Basis, prep, t):
    """Σ_k c_k T_k(x(t)) (or its t-derivative) by Clenshaw's recurrence: 2K multiply-adds per
    point instead of K cosines (and K sines) plus a dot product. ``prep`` is
    :func:`_clenshaw_prep` of the coefficients."""
    c0, rest, derivative = prep
    x, b1, b2, half = _recurrence(basis, c0, rest, t)
    if derivative:
        return (c0 + 2.0 * x * b1 - b2) / half  # U series: b_0
    return c0 + x * b1 - b2  # T series


def _recurrence(basis: Basis, c0, rest, t):
    """``(x, b_1, b_2, h)``: the point ``x(t)`` on [-1, 1], Clenshaw's ``b_1, b_2`` for the
    coefficients ``rest`` (highest first) and the half-width ``h = dt/dx``."""
    half = 0.5 * (basis.t_hi - basis.t_lo)
    mid = 0.5 * (basis.t_hi + basis.t_lo)
    x = jnp.clip((t - mid) / half, -1.0, 1.0)
    z = batched_zeros(jnp.broadcast_shapes(c0.shape, x.shape), x.dtype, x)

    def step(carry, ck):
        b1, b2 = carry
        return (ck + 2.0 * x * b1 - b2, b1), None

    (b1, b2), _ = jax.lax.scan(step, (z, z), rest)
    return x, b1, b2, half


@functools.lru_cache(maxsize=8)
def _deriv_matrix(k: int) -> np.ndarray:
    """(K, K) map D from Chebyshev coefficients of f to those of df/dx: ``c' = c @ D``,
    ``c'_i = (2 / (1 + δ_i0)) Σ_{j > i, j - i odd} j c_j``."""
    d = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k, 2):
            d[j, i] = (1.0 if i == 0 else 2.0) * j
    return d


def _pair_prep(basis: Basis, coef):
    """Coefficients for :func:`_pair_eval`: the T series of ``coef`` (a function f) and the U
    series of ``(j+1) c_{j+1}`` (its derivative df/dx) stacked on a new axis 0, moved behind the
    recurrence axis. For the derivatives of F pass ``coef = c·D`` (:func:`_deriv_matrix`)."""
    k = coef.shape[-1]
    u = coef[..., 1:] * jnp.arange(1, k, dtype=coef.dtype)  # U-series coefficients, K - 1 of them
    u = jnp.concatenate([u, jnp.zeros_like(u[..., :1])], axis=-1)  # padded to K
    c = jnp.moveaxis(jnp.stack([coef, u]), -1, 0)  # (K, 2, ...)
    return c[0], c[:0:-1]


def _pair_eval(basis: Basis, prep, t):
    """Both series of ``prep`` at ``t`` by one Clenshaw recurrence on the stacked coefficients
    (the cost of one 2-term recurrence on twice the batch): ``(f(t), df/dt)`` for
    ``f = Σ_k coef_k T_k(x(t))``."""
    c0, rest = prep
    x, b1, b2, half = _recurrence(basis, c0, rest, t)
    return c0[0] + x * b1[0] - b2[0], (c0[1] + 2.0 * x * b1[1] - b2[1]) / half


def value_at(basis: Basis, phi_s: jax.Array, y_s: jax.Array, t: jax.Array, prep=None
             ) -> jax.Array:
    """G(t) = Y·t - Φ·φ(t), batched (``prep``: :func:`_clenshaw_prep` of ``phi_s``, optional)."""
    if basis.kind == "chebyshev" and basis.proj is None:
        prep = _clenshaw_prep(basis, phi_s, False) if prep is None else prep
        return y_s * t - _clenshaw(basis, prep, t)
    f, _ = basis_eval(basis, t)
    return y_s * t - jnp.sum(phi_s * f, axis=-1)


def _slope(basis: Basis, phi_s, y_s, t, prep=None):
    if basis.kind == "chebyshev" and basis.proj is None:
        prep = _clenshaw_prep(basis, phi_s, True) if prep is None else prep
        return y_s - _clenshaw(basis, prep, t)
    _, df = basis_eval(basis, t)
    return y_s - jnp.sum(phi_s * df, axis=-1)


def _prep(basis: Basis, phi_s, derivative: bool):
    """:func:`_clenshaw_prep` for the Chebyshev basis, None otherwise."""
    if basis.kind == "chebyshev" and basis.proj is None:
        return _clenshaw_prep(basis, phi_s, derivative)
    return None


def solve(basis: Basis, phi_s: jax.Array, y_s: jax.Array, maximise, t_hat=None, g_hat=None,
          c=None, left=None, ends=None, grid: bool | None = None) -> tuple[jax.Array, jax.Array]:
    """Either solve of this module in one program: ``(G(t*), t*)``, batched over leading axes.

    ``maximise`` (a bool, which may be traced) selects the kind:

    * True: t* = argmax over [a, b] of G, clipped to 0 where the maximum is not positive
      (:func:`maximize`; the crossing arguments are ignored).
    * False: t* = the end of ``{t : G(t) > c}`` on the side ``left`` (True: in ``[a, t_hat]``,
      False: in ``[t_hat, b]``) of the maximiser ``t_hat``, whose value is ``g_hat = G(t_hat) >
      c`` (:func:`crossings`); a bracket end where ``G > c`` still holds is returned as is.

    Both run one :func:`_newton` loop on the same series evaluation (the coefficients of F' for
    the maximiser, of F for the crossings, chosen by ``maximise``), so a caller that alternates
    kinds in a loop (the attribute step) compiles one solver instead of one per call.
    ``grid``: the Chebyshev bracket from the grid (True) or by halvings (False; default
    :data:`GRID`), the same bracket.
    """
    basis, phi_s, ends = _full(basis, phi_s, ends)
    a, b = basis.t_lo, basis.t_hi
    dt = phi_s.dtype
    y_s = jnp.asarray(y_s, dtype=dt)
    maximise = jnp.asarray(maximise)
    zero = batched_zeros(y_s.shape, dt, y_s)  # a batched loop carry (see batched_zeros)
    t_hat = zero if t_hat is None else jnp.asarray(t_hat, dt)
    g_hat = zero if g_hat is None else jnp.asarray(g_hat, dt)
    c = jnp.asarray(0.0 if c is None else c, dt)
    left = jnp.zeros(y_s.shape, bool) if left is None else jnp.asarray(left)
    cross = ~maximise
    lo = jnp.where(cross & ~left, t_hat, a) + zero
    hi = jnp.where(cross & left, t_hat, b) + zero
    if basis.kind == "chebyshev":  # (F', F'') of the maximiser or (F, F') of the crossings
        half = 0.5 * (basis.t_hi - basis.t_lo)
        coef = jnp.where(maximise, phi_s @ jnp.asarray(_deriv_matrix(phi_s.shape[-1]), dt), phi_s)
        prep = _pair_prep(basis, coef)  # hoisted out of the loop
        scale = jnp.where(maximise, 1.0 / half, 1.0)

        def pair(t):
            v, dv = _pair_eval(basis, prep, t)
            return v * scale, dv * scale
    elif basis.kind == "exact":  # φ_k' = σ_k (the success probability at t), φ_k'' = σ_k (1 - σ_k)
        def pair(t):
            f, df = basis_eval(basis, t)
            d1 = jnp.sum(phi_s * df, axis=-1)
            return (jnp.where(maximise, d1, jnp.sum(phi_s * f, axis=-1)),
                    jnp.where(maximise, jnp.sum(phi_s * (df * (1.0 - df)), axis=-1), d1))
    else:
        raise NotImplementedError(basis.kind)
    s_gap = jnp.sqrt(jnp.maximum(g_hat - c, 0.0))

    def root_fn(y, gh, sg, t, v):
        # the function whose root is sought, at t where the series is v: maximiser: the slope
        # s = Y - F'; crossing: w = sqrt(G(t̂) - G) - sqrt(G(t̂) - c); and u = sqrt(G(t̂) - G)
        u = jnp.sqrt(jnp.maximum(gh - (y * t - v), 0.0))
        return jnp.where(maximise, y - v, u - sg), u

    def f_df(t):
        # s' = -F''; w' = -G' / (2 sqrt(G(t̂) - G))
        v, dv = pair(t)
        f, u = root_fn(y_s, g_hat, s_gap, t, v)
        w_df = jnp.where(u > 0, -(y_s - dv) / (2.0 * jnp.where(u > 0, u, 1.0)), 0.0)
        return f, jnp.where(maximise, -dv, w_df)

    # the root lies right of t iff s(t) > 0 (maximiser); on the left side iff G(t) <= c (w >= 0),
    # on the right side iff G(t) > c (w < 0)
    def right_of(t, f, lf=left):
        return jnp.where(maximise, f > 0, (f < 0) ^ lf)

    n_newton = jnp.where(maximise, N_NEWTON, N_NEWTON_CROSS)
    n_bisect = N_BISECT
    if basis.kind == "chebyshev" and (GRID if grid is None else grid):  # one product
        def right_at(t, v):  # right_of at the points t (..., P), the series' values v there
            y, gh, sg, lf = (x[..., None] for x in (y_s, g_hat, s_gap, left))
            return right_of(t, root_fn(y, gh, sg, t, v)[0], lf)

        lo, hi = _grid_bracket(basis, coef, scale, right_at, lo, hi)
        n_bisect = 0
    t = _newton(f_df, right_of, lo, hi, n_bisect, n_newton)
    f_a, d_a, f_b, d_b = basis.endpoints() if ends is None else ends
    if basis.kind == "exact" and basis.num_features == 1:  # closed form: e^t = Y(1-p) / (p(n-Y))
        p, n = basis.values[0], phi_s[..., 0]
        tc = jnp.log(y_s) + jnp.log1p(-p) - jnp.log(p) - jnp.log(n - y_s)  # ±inf/nan at edges
        t_max = jnp.where(jnp.isnan(tc), 0.0, jnp.clip(tc, a, b))
    else:
        t_max = jnp.where(y_s - phi_s @ d_a <= 0, a, t)
        t_max = jnp.where(y_s - phi_s @ d_b >= 0, b, t_max)
    end_a = left & (y_s * a - phi_s @ f_a - c > 0)
    end_b = ~left & (y_s * b - phi_s @ f_b - c > 0)
    t = jnp.where(maximise, t_max, jnp.where(end_a, a, jnp.where(end_b, b, t)))
    g = value_at(basis, phi_s, y_s, t)
    neg = maximise & ~(g > 0)
    return jnp.where(neg, 0.0, g), jnp.where(neg, 0.0, t)


def maximize(
    basis: Basis, phi_s: jax.Array, y_s: jax.Array, ends=None
) -> tuple[jax.Array, jax.Array]:
    """(max over t ∈ [a, b] of G(t), its argmax t̂), batched over leading axes of ``y_s``.

    ``ends`` optionally passes ``basis.endpoints()`` computed once by the caller.
    """
    if NEWTON:
        return solve(basis, phi_s, y_s, True, ends=ends)
    basis, phi_s, ends = _full(basis, phi_s, ends)
    a, b = basis.t_lo, basis.t_hi
    y_s = jnp.asarray(y_s, dtype=phi_s.dtype)
    if basis.kind == "exact" and basis.num_features == 1:
        p = basis.values[0]
        n = phi_s[..., 0]
        t = jnp.log(y_s) + jnp.log1p(-p) - jnp.log(p) - jnp.log(n - y_s)  # ±inf/nan at edges
        t = jnp.where(jnp.isnan(t), 0.0, jnp.clip(t, a, b))
    else:
        lo = jnp.full(y_s.shape, a, dtype=phi_s.dtype)
        hi = jnp.full(y_s.shape, b, dtype=phi_s.dtype)
        d_prep = _prep(basis, phi_s[..., None, :], True)  # hoisted out of the bisection loop
        lo, hi = _multisect(
            lambda pts: _slope(basis, phi_s[..., None, :], y_s[..., None], pts, d_prep) > 0,
            lo, hi,
        )
        t = 0.5 * (lo + hi)
        _, d_a, _, d_b = basis.endpoints() if ends is None else ends
        t = jnp.where(y_s - phi_s @ d_a <= 0, a, t)
        t = jnp.where(y_s - phi_s @ d_b >= 0, b, t)
    g = value_at(basis, phi_s, y_s, t)
    neg = ~(g > 0)
    return jnp.where(neg, 0.0, g), jnp.where(neg, 0.0, t)


def crossings(
    basis: Basis, phi_s: jax.Array, y_s: jax.Array, t_hat: jax.Array, c: jax.Array, ends=None
) -> tuple[jax.Array, jax.Array]:
    """Endpoints (left, right) of ``{t ∈ [a, b] : G(t) > c}`` around the maximiser ``t_hat``.

    One root search on each side of ``t_hat`` (stacked; :func:`solve`); an end of ``[a, b]``
    where ``G > c`` still holds is returned as is. Assumes ``G(t_hat) > c`` (callers mask the
    other entries).
    """
    y_s = jnp.asarray(y_s, dtype=phi_s.dtype)
    t_hat = jnp.asarray(t_hat, dtype=phi_s.dtype)
    left = jnp.array([True, False]).reshape((2,) + (1,) * t_hat.ndim)
    if NEWTON:
        g_hat = value_at(basis, phi_s, y_s, t_hat)
        two = (2,) + t_hat.shape

        def side(x):
            return jnp.broadcast_to(x, two)

        _, root = solve(basis, jnp.broadcast_to(phi_s, two + phi_s.shape[-1:]), side(y_s),
                        False, side(t_hat), side(g_hat), c, side(left), ends)
        return root[0], root[1]
    basis, phi_s, ends = _full(basis, phi_s, ends)
    a, b = basis.t_lo, basis.t_hi
    # Stack the two searches: left root in [a, t_hat] (G - c rises through 0), right root in
    # [t_hat, b] (G - c falls through 0); "the root lies right of pt" is G(pt) <= c on the left
    # and G(pt) > c on the right.
    lo = jnp.stack([jnp.full_like(t_hat, a), t_hat])
    hi = jnp.stack([t_hat, jnp.full_like(t_hat, b)])
    ph = jnp.stack([phi_s, phi_s])[..., None, :]
    yy = jnp.stack([y_s, y_s])[..., None]
    v_prep = _prep(basis, ph, False)  # hoisted out of the bisection loop

    def pred(pts):
        return (value_at(basis, ph, yy, pts, v_prep) - c > 0) ^ left[..., None]

    lo, hi = _multisect(pred, lo, hi)
    root = 0.5 * (lo + hi)
    f_a, _, f_b, _ = basis.endpoints() if ends is None else ends
    ok_a = y_s * a - phi_s @ f_a - c > 0
    ok_b = y_s * b - phi_s @ f_b - c > 0
    return jnp.where(ok_a, a, root[0]), jnp.where(ok_b, b, root[1])
