"""Cell feature bases: represent Σ_i log(1 - p_i + p_i·e^t) over a set of rows as a dot product.

Work in t = log q. Each row contributes ``g_p(t) = log(1 - p + p·e^t) = log1p(p·expm1(t))`` to
``F_S(t) = Σ_{i∈S} g_{p_i}(t)``; the Bernoulli log-likelihood ratio of a set is
``G_S(t) = Y_S·t - F_S(t)`` (concave in t). A *basis* is a fixed list of functions
``φ(t) = (φ_0(t), …, φ_{K-1}(t))`` together with a per-row linear feature map, so that for every set of
rows ``F_S(t) = Φ_S · φ(t)`` and ``F'_S(t) = Φ_S · φ'(t)`` with ``Φ_S = Σ_{i∈S} Φ_i``. Aggregating over
cells, restarts or replicates is then a linear sum of K numbers per cell.

Two bases:

* ``exact`` (few distinct p values, e.g. constant p for FPR-Scan or decile scores): ``φ_k = g_{p_k}``
  and ``Φ_i = one_hot(k(i))``; exact to float64 round-off.
* ``chebyshev`` (continuous p): ``φ_k(t) = T_k(x(t))`` on the side of the bracket in use,
  ``[0, T_hi]`` (positive direction) or ``[T_lo, 0]`` (negative), ``x`` the affine map onto [-1, 1]
  and ``Φ_i`` the Chebyshev interpolation coefficients of ``g_{p_i}`` at K Chebyshev points.

Chebyshev error bound. ``g_p(t)`` has its complex singularities where ``1 - p + p·e^t = 0``, i.e. at
``t = log((1-p)/p) ± iπ(2j+1)``: on the lines ``Im t = ±π`` for *every* p. On an interval of
half-width h they sit at ``Im x = ±π/h``, so ``g_p`` is analytic inside the Bernstein ellipse with
``ρ = b + sqrt(b² + 1)``, ``b = π/h``, uniformly in p, and the degree-(K-1) interpolant converges like
``O(ρ^{-K})``. Measured over p ∈ [0, 1] (a 200-point grid plus p ∈ {1e-12, …, 1 - 1e-12}), the max
error on the interval is ≤ 0.4·ρ^{-K} until round-off takes over; :func:`chebyshev_degree`
therefore takes the smallest K with ``ρ^{-K} ≤ tol`` (``tol = 1e-13``). Stated bound, per row:
``|F_cheb - F| ≤ ρ^{-K} + 4·K·T·ε`` (T = max |t| on the interval, ε = 2.2e-16: round-off of the
transform, ≈ 8e-13 for the default bracket), so a set of n rows is off by at most n times that
(≈ 1e-5 absolute at n = 10^7 in the worst case; typical errors are far smaller); F' loses a further
factor ≈ K²/h. For the default bracket q ∈ [1e-6, 1e6] (h = 6.91, ρ = 1.553) this
gives K = 68; for AIF360's [1e-3, 1e3] (ρ = 2.26) K = 37. ``tests/test_scan_basis.py`` checks the
bound against row-level evaluation.

Reduced rank. The coefficient vectors of ``g_p`` for p ∈ [0, 1] span far fewer than K directions
(singular values fall below 1e-14 of the largest by r ≈ 44 of 68). :func:`make_basis` therefore
projects onto the leading r right singular vectors W (K × r) of the coefficient matrix of a dense
p grid (linear and log-spaced towards 0 and 1), with the smallest r whose measured error on held-out
p (1,000 random values plus extremes) and a 257-point t grid is ≤ :data:`RANK_TOL` = 1e-12 per row:
``Φ_i = coeffs_i · W`` and ``φ(t) = T(x(t)) · W``. Every per-cell sum, matmul and basis evaluation
of the scan then costs r/K of the full basis (44/68 on the default bracket, 24/37 on AIF360's);
the per-row bound above grows by at most RANK_TOL (checked in ``tests/test_scan_basis.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._jaxcache import kept_array
from ofijax._validation import device_array

from ._checks import DEFAULT_Q_BOUNDS
from ._encode import stable_argsort

__all__ = [
    "Basis",
    "EXACT_MAX_VALUES",
    "RANK_TOL",
    "MIN_FEATURES",
    "MAX_FEATURES",
    "MAX_GROUP",
    "PRODUCT_LOG_MAX",
    "reduced_projection",
    "chebyshev_degree",
    "make_basis",
    "basis_eval",
    "features",
    "row_values",
    "RowLayout",
    "block_size",
    "make_layout",
    "layout_group",
]

#: Largest number of distinct p values for which ``basis="auto"`` picks the exact basis.
EXACT_MAX_VALUES = 64
#: Rows per chunk in :func:`features` (bounds the (chunk, K) temporary to a few tens of MB).
_CHUNK = 1 << 15
#: Slots per chunk of the block features when each block's logs are projected onto the features
#: in its chunk (:func:`_features_blocked`): the chunk's (slots, K) logs stay in cache.
_PROJECT_CHUNK = 1 << 12
#: Largest per-row error the reduced-rank projection may add to F (measured, see module doc).
RANK_TOL = 1e-12
#: Fewest Chebyshev features (a degree-7 interpolant), whatever the bracket's width.
MIN_FEATURES = 8
#: Most Chebyshev features: enough for ρ^{-K} ≤ 1e-13 on brackets up to |log q| ≈ 33
#: (q ∈ [3e-15, 3e14]); wider brackets are capped (their bound is then ρ^{-160}).
MAX_FEATURES = 160
#: Widest block of row factors (:func:`layout_group`); :func:`block_size` picks a power of two
#: up to it by its cost model (10 rows a cell: 16; 160 rows a cell: 32).
MAX_GROUP = 32
#: Largest |log| of a block's product (:func:`layout_group`): float64's normal range is ±708, so
#: a product of G factors each in [e^{-T}, e^{T}] with G·T ≤ 600 stays a normal number.
PRODUCT_LOG_MAX = 600.0


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["t_lo", "t_hi", "values", "proj"],
    meta_fields=["kind"],
)
@dataclasses.dataclass(frozen=True)
class Basis:
    """A feature basis on the interval ``[t_lo, t_hi]`` of t = log q (one side of 0).

    Attributes:
      kind: ``"exact"`` or ``"chebyshev"`` (static).
      t_lo, t_hi: the search interval for t (0-d arrays, traced, so both directions share one
        compilation); ``t_lo = 0`` for the positive direction (q ≥ 1), ``t_hi = 0`` for the
        negative one (q ≤ 1).
      values: ``(K,)`` array: the distinct p values (exact) or the Chebyshev nodes in t (chebyshev).
      proj: ``(K, r)`` reduced-rank projection W of the Chebyshev coefficients (None: exact basis,
        or a full-rank Chebyshev basis); the number of features is r.
    """

    kind: str
    t_lo: jax.Array
    t_hi: jax.Array
    values: jax.Array
    proj: jax.Array | None = None

    @property
    def num_nodes(self) -> int:
        """K: distinct p values (exact) or Chebyshev nodes."""
        return int(self.values.shape[0])

    @property
    def num_features(self) -> int:
        """Features per cell: r with a projection, else K."""
        return self.num_nodes if self.proj is None else int(self.proj.shape[1])

    def endpoints(self) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """φ(t_lo), φ'(t_lo), φ(t_hi), φ'(t_hi), each (K,).

        For a Chebyshev basis in closed form, the values :func:`basis_eval` computes there
        (``x = ∓1``): ``T_k(-1) = (-1)^k``, ``T_k(1) = 1``, ``T_k'(∓1) = (∓1)^{k+1} k²`` over
        the half-width (projected by a reduced basis's ``proj``), the same numbers without its
        arccos, cosines and sines (the solver expands a reduced basis to the full one inside the
        search's loops, where these ran at every solve and were ~70 operations of its program to
        trace, lower and compile)."""
        if self.kind == "chebyshev":
            k = np.arange(self.num_nodes)
            half = 0.5 * (self.t_hi - self.t_lo)
            kk = jnp.asarray(k * k, self.values.dtype)
            odd = k % 2 == 1
            f_lo = jnp.asarray(np.where(odd, -1.0, 1.0), self.values.dtype)
            d_lo = jnp.asarray(np.where(odd, 1.0, -1.0), self.values.dtype) * kk / half
            ends = (f_lo, d_lo, jnp.ones_like(f_lo), kk / half)
            # a reduced basis: their projection, as basis_eval projects its values
            return ends if self.proj is None else tuple(e @ self.proj for e in ends)
        f, df = basis_eval(self, jnp.stack([self.t_lo, self.t_hi]))
        return f[0], df[0], f[1], df[1]


def chebyshev_degree(t_lo: float, t_hi: float, tol: float = 1e-13) -> int:
    """Number of Chebyshev features K with ``ρ^{-K} ≤ tol`` on ``[t_lo, t_hi]`` (see module doc).

    Examples:
      >>> import math
      >>> chebyshev_degree(0.0, math.log(1e6)), chebyshev_degree(0.0, math.log(1e3))
      (68, 37)
    """
    h = 0.5 * (t_hi - t_lo)
    if h <= 0:
        return 1
    b = math.pi / h
    rho = b + math.sqrt(b * b + 1.0)
    k = math.ceil(math.log(1.0 / tol) / math.log(rho))
    return int(min(max(k, MIN_FEATURES), MAX_FEATURES))


def _cheb_nodes_x(k: int) -> np.ndarray:
    j = np.arange(k)
    return np.cos(np.pi * (j + 0.5) / k)


def _cheb_transform(k: int) -> np.ndarray:
    """(K, K) matrix M with coefficients = values_at_nodes @ M.T (Chebyshev points of the 1st kind)."""
    j = np.arange(k)
    m = np.cos(np.pi * np.outer(np.arange(k), j + 0.5) / k) * (2.0 / k)
    m[0] *= 0.5
    return m


def _cheb_values(t_lo: float, t_hi: float, k: int) -> np.ndarray:
    """T_j(x(t)) on a t grid: (257, K)."""
    x = np.cos(np.linspace(0.0, np.pi, 257))
    return np.cos(np.outer(np.arccos(x), np.arange(k)))


@functools.lru_cache(maxsize=32)
def reduced_projection(t_lo: float, t_hi: float, k: int, tol: float = RANK_TOL) -> np.ndarray:
    """``(K, r)`` orthonormal W: the smallest r whose projection error is ≤ ``tol`` per row
    (:func:`_reduced_projection`), kept in ofijax's cache folder (``kept_array``: a later process
    reads it instead of repeating the SVD and the rank search, ~0.25 s or more under load).

    Examples:
      >>> import math
      >>> reduced_projection(0.0, math.log(1e6), 68).shape[1] < 50
      True
    """
    parts = (float(t_lo).hex(), float(t_hi).hex(), int(k), float(tol).hex())
    return kept_array("ofijax.scan.reduced_projection", parts,
                      lambda: _reduced_projection(t_lo, t_hi, k, tol))


def _reduced_projection(t_lo: float, t_hi: float, k: int, tol: float = RANK_TOL) -> np.ndarray:
    """``(K, r)`` orthonormal W: the smallest r whose projection error is ≤ ``tol`` per row.

    W = the leading right singular vectors of the Chebyshev coefficients of ``g_p`` over a dense p
    grid; r is checked on held-out p (see module doc). Returns the identity when no r < K meets
    ``tol``.
    """
    nodes = 0.5 * (t_lo + t_hi) + 0.5 * (t_hi - t_lo) * _cheb_nodes_x(k)
    e = np.expm1(nodes)
    m = _cheb_transform(k)
    tiny = np.logspace(-15, -1, 200)
    grid = np.concatenate([np.linspace(0.0, 1.0, 801), tiny, 1.0 - tiny])
    coef = np.log1p(grid[:, None] * e[None, :]) @ m.T
    _, _, vt = np.linalg.svd(coef, full_matrices=False)
    rng = np.random.default_rng(12345)
    held = np.concatenate([rng.uniform(0.0, 1.0, 1000), [0.0, 1.0, 1e-12, 1.0 - 1e-12, 1e-7]])
    c_held = np.log1p(held[:, None] * e[None, :]) @ m.T
    tt = _cheb_values(t_lo, t_hi, k)

    def ok(r):
        w = vt[:r].T
        return np.abs((c_held - (c_held @ w) @ w.T) @ tt.T).max() <= tol

    if not ok(k - 1):
        return np.eye(k)
    lo, hi = 1, k - 1  # bisection for the smallest r that meets tol (ok(hi) holds)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return vt[:hi].T.copy()


def make_basis(
    kind: str,
    *,
    direction: str,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    p_values=None,
    num_features: int | None = None,
    reduced: bool = True,
) -> Basis:
    """Build a :class:`Basis` for one direction.

    Args:
      kind: ``"exact"`` (then ``p_values``, the distinct expectations, is required) or
        ``"chebyshev"``.
      direction: ``"positive"`` (t ∈ [0, log q_hi]) or ``"negative"`` (t ∈ [log q_lo, 0]).
      q_bounds: the bracket for q.
      p_values: distinct p values for the exact basis (sorted here).
      num_features: Chebyshev K; default :func:`chebyshev_degree` of the interval.
      reduced: project the Chebyshev coefficients onto :func:`reduced_projection` (default).
    """
    q_lo, q_hi = (float(q_bounds[0]), float(q_bounds[1]))
    if direction == "positive":
        t_lo, t_hi = 0.0, math.log(q_hi)
    else:
        t_lo, t_hi = math.log(q_lo), 0.0
    check = ("exact", "chebyshev")
    if kind not in check:
        raise ValueError(f"kind: must be one of {check}; got {kind!r}.")
    if kind == "exact":
        return _basis_arrays(kind, t_lo, t_hi, np.unique(np.asarray(p_values, dtype=np.float64)))
    return _chebyshev_basis(t_lo, t_hi, int(num_features or chebyshev_degree(t_lo, t_hi)),
                            bool(reduced))


@functools.lru_cache(maxsize=32)
def _chebyshev_basis(t_lo: float, t_hi: float, k: int, reduced: bool) -> Basis:
    """The Chebyshev :class:`Basis` of an interval, built once per process (its arrays are
    immutable device arrays; a scan reuses them instead of transferring them again)."""
    values = 0.5 * (t_lo + t_hi) + 0.5 * (t_hi - t_lo) * _cheb_nodes_x(k)
    proj = reduced_projection(t_lo, t_hi, k) if reduced else None
    return _basis_arrays("chebyshev", t_lo, t_hi, values, proj)


def _basis_arrays(kind, t_lo, t_hi, values, proj=None) -> Basis:
    with jax.enable_x64(True):
        return Basis(
            kind,
            device_array(t_lo, np.float64),  # transfers, not jnp.asarray's programs
            device_array(t_hi, np.float64),
            device_array(values, np.float64),
            None if proj is None else device_array(proj, np.float64),
        )


def _coef_map(basis: Basis) -> jax.Array:
    """(K, r) map from values at the Chebyshev nodes to features: M^T (· W)."""
    m = jnp.asarray(_cheb_transform(basis.num_nodes)).T
    return m if basis.proj is None else m @ basis.proj


def basis_eval(basis: Basis, t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """φ(t) and φ'(t), each of shape ``t.shape + (K,)``, so ``F(t) = Φ·φ(t)``, ``F'(t) = Φ·φ'(t)``."""
    t = jnp.asarray(t)[..., None]
    if basis.kind == "exact":
        p = basis.values
        x = jnp.expm1(t)
        den = 1.0 + p * x  # = 1 - p + p e^t > 0
        return jnp.log1p(p * x), p * (1.0 + x) / den
    k = basis.num_nodes
    half = 0.5 * (basis.t_hi - basis.t_lo)
    mid = 0.5 * (basis.t_hi + basis.t_lo)
    x = jnp.clip((t - mid) / half, -1.0, 1.0)
    theta = jnp.arccos(x)
    kk = jnp.arange(k, dtype=t.dtype)
    phi = jnp.cos(kk * theta)
    s = jnp.sin(theta)
    small = jnp.abs(s) < 1e-12
    # T_k'(x) = k sin(kθ)/sin θ; limits k² at x = 1 and (-1)^{k+1} k² at x = -1.
    limit = jnp.where(x > 0, kk * kk, jnp.where(kk % 2 == 1, 1.0, -1.0) * kk * kk)
    dphi = jnp.where(small, limit, kk * jnp.sin(kk * theta) / jnp.where(small, 1.0, s)) / half
    if basis.proj is not None:
        return phi @ basis.proj, dphi @ basis.proj
    return phi, dphi


def row_values(basis: Basis, p: jax.Array) -> jax.Array:
    """Per-row features ``(..., K)`` (before the Chebyshev transform): one-hot or g_p at the nodes."""
    p = jnp.asarray(p)
    if basis.kind == "exact":
        idx = jnp.clip(jnp.searchsorted(basis.values, p), 0, basis.num_features - 1)
        return jax.nn.one_hot(idx, basis.num_features, dtype=p.dtype)
    e = jnp.expm1(basis.values)
    return jnp.log1p(p[..., None] * e)


class RowLayout(NamedTuple):
    """Rows regrouped into blocks of ``G`` rows of a single cell (padding slots hold row ``N``).

    Built once by :func:`make_layout`; lets :func:`features` multiply ``G`` factors
    ``1 - p + p e^t`` before one ``log`` and scatter ``G``-times fewer terms into the cells.
    """

    slot_row: jax.Array  # (B·G,) int32: row index of each slot, N for padding
    block_cell: jax.Array  # (B,) int32: the cell of each block
    group: int  # G


def layout_group(basis_or_bound) -> int:
    """Largest block size G ≤ :data:`MAX_GROUP` such that a product of G factors stays inside
    float64 range (``G·T ≤`` :data:`PRODUCT_LOG_MAX`, T the bracket's largest |t|).

    >>> layout_group(13.8), layout_group(1e-3)
    (32, 32)
    >>> layout_group(34.5)
    17
    """
    if isinstance(basis_or_bound, Basis):
        bound = max(abs(float(basis_or_bound.t_lo)), abs(float(basis_or_bound.t_hi)))
    else:
        bound = float(basis_or_bound)
    return int(max(1, min(MAX_GROUP, PRODUCT_LOG_MAX // max(bound, 1e-12))))


#: Cost of one block (a ``log`` and a scatter-add per feature) in units of one slot (a multiply
#: per feature), for :func:`block_size`: fitted on 10^5 rows in 625-74k cells, K = 68.
BLOCK_COST = 23


def block_size(counts: np.ndarray, max_group: int) -> int:
    """The block size G ≤ ``max_group`` (a power of two) of least modelled cost
    ``slots + BLOCK_COST · blocks`` for cells of ``counts`` rows: large blocks when cells hold many
    rows, small ones when most cells hold a few (a cell of 3 rows in a block of 32 pays 29
    padding slots). E.g. 10 rows per cell: G = 16; 160 rows per cell: G = 32."""
    best, best_cost = 1, None
    g = 1
    while g <= max(1, max_group):
        blocks = int(np.sum(-(-counts // g)))
        cost = blocks * g + BLOCK_COST * blocks
        if best_cost is None or cost < best_cost:
            best, best_cost = g, cost
        g *= 2
    return best


def make_layout(row_cell: np.ndarray, num_cells: int, group: int) -> RowLayout:
    """Group the rows of each cell into blocks of G rows (NumPy, once per problem), G the
    :func:`block_size` for these cells, at most ``group`` (e.g. :func:`layout_group`)."""
    row_cell = np.asarray(row_cell)
    n = row_cell.size
    order = stable_argsort(row_cell)
    counts = np.bincount(row_cell, minlength=num_cells)
    group = block_size(counts, group)
    cell_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    blocks = -(-counts // group)
    block_start = np.concatenate([[0], np.cumsum(blocks)[:-1]])
    # sorted row i of cell c goes to slot block_start[c]·G + (i - cell_start[c]); the sorted rows'
    # cells are runs of counts[c] rows, so per-cell offsets repeat (sequential, not gathered)
    slot = np.repeat(block_start * group - cell_start, counts) + np.arange(n)
    total = int(blocks.sum())
    slot_row = np.full(total * group, n, dtype=np.int32)
    slot_row[slot] = order
    block_cell = np.repeat(np.arange(num_cells, dtype=np.int32), blocks)
    return RowLayout(device_array(slot_row), device_array(block_cell), int(group))


#: Minimax coefficients of fdlibm's ``__ieee754_log`` (e_log.c, Sun Microsystems 1993: "Permission
#: to use, copy, modify, and distribute this software is freely granted, provided that this notice
#: is preserved"): ``log(1+f) = f - (f²/2 - s·(f²/2 + R(s²)))``, ``s = f/(2+f)``, error < 1 ulp.
_LOG_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
           1.479819860511658591e-01)
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # float64 bits of sqrt(1/2)


def _log_positive(x: jax.Array) -> jax.Array:
    """``log(x)`` of positive *normal* float64 ``x`` (no zero, subnormal, inf or NaN), to 1 ulp.

    fdlibm's algorithm in array operations: ``x = 2^k·m`` with ``m ∈ [√½, √2)`` (read off the
    bits), ``log x = k·ln 2 + log m`` with ``log m`` from a degree-14 minimax polynomial in
    ``s = (m-1)/(m+1)``. XLA:CPU evaluates a float64 ``log`` in an elementwise fusion without
    vectorising it (timings: ``experiments/notes/scan_engine.md``, "features"): the block
    products of :func:`features` take their logs here. Measured against ``np.log`` on
    7·10^5 values spanning 1e-304 to 1e304: at most 1 ulp, ``log(1) = 0`` exactly.

    >>> import numpy as np
    >>> with jax.enable_x64(True):
    ...     x = jnp.array([1.0, 2.0, 1e-300, 1e300, 0.7])
    ...     bool(np.allclose(_log_positive(x), np.log(np.asarray(x)), rtol=3e-16, atol=0))
    True
    """
    x = jnp.asarray(x, jnp.float64)
    bits = jax.lax.bitcast_convert_type(x, jnp.int64)
    k = (bits - _SQRT_HALF_BITS) >> 52  # arithmetic shift: the exponent of x/√½, rounded down
    m = jax.lax.bitcast_convert_type(bits - (k << 52), jnp.float64)  # x / 2^k ∈ [√½, √2)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LOG_LG
    r = w * (lg2 + w * (lg4 + w * lg6)) + z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)))
    hfsq = 0.5 * f * f
    kf = k.astype(jnp.float64)
    return kf * _LN2_HI - ((hfsq - (s * (hfsq + r) + kf * _LN2_LO)) - f)


@partial(jax.jit, static_argnames=("num_cells", "group", "total"))
def _features_blocked(p_rows, slot_row, block_cell, num_cells, basis, group, total=None,
                      tail=None):
    """:func:`features` on a :class:`RowLayout`: ``log Π (1 + p_i (e^{t_j} - 1))`` over each block
    of G rows of one cell, summed into the cells and mapped onto the features (:func:`_coef_map`).

    Where cells hold a row or two (blocks of G ≤ 2 rows, fewer than two a cell on average, as
    with many attributes or values), each chunk's logs are mapped onto the features before they
    are summed into the cells: about the same multiply-adds, on a chunk of
    :data:`_PROJECT_CHUNK` slots that stays in cache, and r instead of K columns summed.
    Otherwise the cells' sums are mapped once at the end, which is faster for full blocks
    (timings: ``experiments/notes/scan_engine.md``, "features").
    ``total`` (≥ ``num_cells``, default equal): rows of the result, those past ``num_cells``
    zero (padding cells summed in place, not copied onto a padded array afterwards); ``tail``
    (``(total, c)``, optional): columns appended after the features (where each chunk's logs
    are mapped early, the sums start from them and add zeros there, so no wider copy is made
    afterwards).
    """
    total = num_cells if total is None else total
    k = basis.num_nodes
    p_ext = jnp.concatenate([jnp.asarray(p_rows, jnp.float64), jnp.zeros(1, jnp.float64)])
    nb = block_cell.shape[0]
    coef = _coef_map(basis)
    early = group <= 2 and nb < 2 * num_cells
    chunk_blocks = max(1, min(nb, (_PROJECT_CHUNK if early else _CHUNK) // group))
    pad = (-nb) % chunk_blocks
    slots = jnp.concatenate([slot_row, jnp.full(pad * group, p_rows.shape[0], jnp.int32)])
    cells = jnp.concatenate([block_cell, jnp.full(pad, total, jnp.int32)])
    slots = slots.reshape(-1, chunk_blocks, group)
    cells = cells.reshape(-1, chunk_blocks)
    e = jnp.expm1(basis.values)

    def body(acc, xs):
        sl, ce = xs
        pb = p_ext[sl]  # (chunk, G); padding slots p = 0 -> factor exactly 1
        prod = jnp.prod(1.0 + pb[..., None] * e, axis=1)  # (chunk, K)
        # each product is a positive normal number (at most G factors in [e^{-T}, e^{T}],
        # G·T ≤ PRODUCT_LOG_MAX)
        logs = _log_positive(prod)
        if early:
            logs = logs @ coef
            if tail is not None:  # the tail's columns get zeros (x + 0 = x exactly)
                logs = jnp.concatenate([logs, jnp.zeros((logs.shape[0], tail.shape[1]))], 1)
        return acc + jax.ops.segment_sum(logs, ce, num_segments=total), None

    if early:
        init = jnp.zeros((total, coef.shape[1]), jnp.float64)
        if tail is not None:
            init = jnp.concatenate([init, jnp.asarray(tail, jnp.float64)], axis=1)
    else:
        init = jnp.zeros((total, k), jnp.float64)
    vals, _ = jax.lax.scan(body, init, (slots, cells))
    return vals if early else _append(vals @ coef, tail)


def _append(x, tail):
    """``[x | tail]`` (``tail`` None: ``x``)."""
    return x if tail is None else jnp.concatenate([x, jnp.asarray(tail, x.dtype)], axis=1)


@partial(jax.jit, static_argnames=("num_cells",))
def _features(p_rows: jax.Array, row_cell: jax.Array, num_cells: int, basis: Basis) -> jax.Array:
    """Cell features ``Φ`` of shape ``(num_cells, K)``: pure, jittable, linear in the rows.

    ``Φ_c = Σ_{i: row_cell[i] = c} Φ_i`` where, for the exact basis, ``Φ_i`` is the one-hot of
    ``p_i`` among ``basis.values`` (p_i must be one of them; no check under ``jit``) and, for the
    Chebyshev basis, the Chebyshev coefficients of ``g_{p_i}``. Rows are processed in chunks of
    32768 so memory stays at O(chunk·K + num_cells·K). Rows with ``row_cell`` outside
    ``[0, num_cells)`` are dropped. Requires float64 (``jax.enable_x64``).
    """
    p_rows = jnp.asarray(p_rows, dtype=jnp.float64)
    row_cell = jnp.asarray(row_cell, dtype=jnp.int32)
    k = basis.num_features
    n = p_rows.shape[0]
    if basis.kind == "exact":
        idx = jnp.clip(jnp.searchsorted(basis.values, p_rows), 0, k - 1)
        flat = jnp.where(
            (row_cell >= 0) & (row_cell < num_cells), row_cell * k + idx, num_cells * k
        )
        counts = jax.ops.segment_sum(
            jnp.ones_like(p_rows), flat, num_segments=num_cells * k + 1
        )
        return counts[: num_cells * k].reshape(num_cells, k)
    chunk = min(_CHUNK, max(n, 1))
    pad = (-n) % chunk
    pp = jnp.concatenate([p_rows, jnp.zeros(pad, p_rows.dtype)]).reshape(-1, chunk)
    cc = jnp.concatenate([row_cell, jnp.zeros(pad, jnp.int32)]).reshape(-1, chunk)
    e = jnp.expm1(basis.values)

    def body(acc, xs):
        pc, ci = xs
        g = jnp.log1p(pc[:, None] * e[None, :])  # padded rows: p = 0 -> exactly 0
        return acc + jax.ops.segment_sum(g, ci, num_segments=num_cells), None

    vals, _ = jax.lax.scan(body, jnp.zeros((num_cells, basis.num_nodes), jnp.float64), (pp, cc))
    return vals @ _coef_map(basis)


def features(
    p_rows: jax.Array, row_cell: jax.Array, num_cells: int, basis: Basis,
    layout: RowLayout | None = None, total: int | None = None, tail=None,
) -> jax.Array:
    """Cell features ``Φ`` of shape ``(num_cells, K)``: pure, jittable, linear in the rows.

    ``Φ_c = Σ_{i: row_cell[i] = c} Φ_i`` where, for the exact basis, ``Φ_i`` is the one-hot of
    ``p_i`` among ``basis.values`` (p_i must be one of them; no check under ``jit``) and, for the
    Chebyshev basis, the Chebyshev coefficients of ``g_{p_i}``. Rows are processed in chunks of
    32768 so memory stays at O(chunk·K + num_cells·K). Rows with ``row_cell`` outside
    ``[0, num_cells)`` are dropped. Requires float64 (``jax.enable_x64``).

    ``layout`` (optional, from :func:`make_layout` with the same ``row_cell``) switches the
    Chebyshev path to block products: ``Σ_i log(1 + p_i x) = log Π_i (1 + p_i x)`` over blocks of G
    rows of one cell, G-times fewer logs and scatter-adds (≈4× faster at 10^6 rows); round-off
    stays at the level of G float64 products (~G·1e-16 relative per block).

    ``total`` (≥ ``num_cells``): the result has ``total`` rows, those past ``num_cells`` zero
    (empty padding cells, as :func:`~._engine.pad_cells` appends them); ``tail`` (``(total,
    c)``, optional): columns appended after the features, ``[Φ | tail]`` (the statistics the
    search stacks beside them, without a second copy of the features); each cell's features the
    same bit for bit.
    """
    total = num_cells if total is None else int(total)
    if total < num_cells:
        raise ValueError(f"total: must be ≥ num_cells = {num_cells}; got {total}.")
    if tail is not None and (jnp.ndim(tail) != 2 or jnp.shape(tail)[0] != total):
        raise ValueError(f"tail: must have shape (total = {total}, c); got {jnp.shape(tail)}.")
    if layout is not None and basis.kind == "chebyshev":
        return _features_blocked(
            p_rows, layout.slot_row, layout.block_cell, num_cells, basis, layout.group, total,
            tail
        )
    return _append(_features(p_rows, row_cell, total, basis), tail)
