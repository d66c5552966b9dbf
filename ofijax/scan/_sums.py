"""Membership and per-value sums on cell arrays: which cells a subgroup holds (:func:`cell_mask`,
:func:`in_subset`, a packed-bit test, no gathers), and the sums over those cells by the values of
one attribute (:func:`per_value`: a masked one-hot matmul on small tables, a segment sum of the
stacked cell statistics on large ones, as :func:`~._plan.aggregation` decides), with the
loop-invariant arrays a search builds once for them (:class:`Prepared`). Pure, jittable, batched
over leading lane axes as written (not ``vmap``-ed). The costs behind these forms are in
``experiments/notes/scan_engine.md``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._jaxcache import aot_jit
from ._plan import Problem, aggregation, stack_width

__all__ = [
    "Prepared",
    "prepare",
    "valid_values",
    "allowed",
    "column",
    "in_subset",
    "cell_mask",
    "row_mask",
    "penalty_count",
    "codes_major",
    "stack_tail",
    "stack",
    "per_value",
]

#: Widest value table the membership test packs into machine words (uint64); wider tables are
#: gathered at each cell's codes.
PACK_MAX_VALUES = 64
#: Value tables up to this width pack into uint32 (16 codes a vector instead of 8).
PACK32_MAX_VALUES = 32
#: Attribute-major codes are stored one byte a code up to this many values, else int32.
BYTE_MAX_VALUES = 255


def valid_values(problem: Problem) -> jax.Array:
    """``(M, V_max)`` bool: value v exists for attribute m."""
    return jnp.arange(problem.v_max)[None, :] < problem.n_values[:, None]


def allowed(problem: Problem, ok, codes_t=None) -> jax.Array:
    """(..., C) bool: cells whose code is allowed by ``ok`` (..., M, V_max) bool on every
    attribute (leading axes: lanes).

    For ``V_max ≤`` :data:`PACK_MAX_VALUES` each attribute's row of ``ok`` is packed into one
    uint32 (``V_max ≤`` :data:`PACK32_MAX_VALUES`) or uint64 word and tested with a shift
    (elementwise: XLA's CPU gathers cost several ns per element); otherwise the table is
    gathered at each cell's codes. ``codes_t``: the codes attribute-major, ``(M, C)``
    (:func:`codes_major`), for the shift test, reduced over the leading axis (faster than over
    the rows of ``(C, M)``).
    """
    m = problem.cell_codes.shape[1]
    if problem.v_max <= PACK_MAX_VALUES:
        word = jnp.uint32 if problem.v_max <= PACK32_MAX_VALUES else jnp.uint64
        one = word(1)
        shifts = jnp.arange(problem.v_max, dtype=word)
        bits = jnp.sum(jnp.where(ok, one << shifts, word(0)), axis=-1, dtype=word)  # (..., M)
        if codes_t is None:  # (..., C, M), reduced over the attributes
            hit = (bits[..., None, :] >> problem.cell_codes.astype(word)) & one
            return jnp.all(hit == 1, axis=-1)
        hit = (bits[..., :, None] >> codes_t.astype(word)) & one  # (..., M, C)
        return jnp.all(hit == 1, axis=-2)
    flat = problem.cell_codes + (jnp.arange(m, dtype=jnp.int32) * problem.v_max)[None, :]
    # an empty padding cell (pad_cells: code V_max on every attribute) reads past the table at
    # its last attribute, so it is in no subgroup, as in the shift test
    return jnp.all(jnp.take(ok.reshape(ok.shape[:-2] + (-1,)), flat, axis=-1, mode="fill",
                            fill_value=False), axis=-1)


def column(problem: Problem, m, codes_t=None) -> jax.Array:
    """(..., C) codes of attribute ``m`` (traced, shape (...)): rows of ``codes_t``
    (attribute-major codes), else an elementwise select, not a gather."""
    m = jnp.asarray(m)
    if codes_t is not None:
        return jnp.take(codes_t, m, axis=0).astype(jnp.int32)
    a = jnp.arange(problem.cell_codes.shape[1])
    return jnp.sum(jnp.where(a == m[..., None, None], problem.cell_codes, 0), axis=-1,
                   dtype=jnp.int32)


def in_subset(problem: Problem, mask, listed, skip=None, codes_t=None) -> jax.Array:
    """(..., C) bool: cells satisfying every listed attribute (except ``skip``, shape (...))."""
    m = problem.cell_codes.shape[1]
    active = listed if skip is None else listed & (jnp.arange(m) != jnp.asarray(skip)[..., None])
    # ok[m, v] = value v allowed on attribute m, or m not active; tested at each cell's codes.
    return allowed(problem, mask | ~active[..., None], codes_t)


def cell_mask(problem: Problem, mask: jax.Array, listed: jax.Array) -> jax.Array:
    """(C,) bool: the cells in the subgroup ``(mask, listed)``."""
    return in_subset(problem, mask, listed)


def row_mask(problem: Problem, mask: jax.Array, listed: jax.Array) -> jax.Array:
    """(N,) bool: the rows in the subgroup ``(mask, listed)``."""
    return cell_mask(problem, mask, listed)[problem.row_cell]


#: ``row_mask`` as one kept executable (``aot_jit``), not ~15 eager ops compiled in every process
#: (under a trace it is the plain jitted function).
row_mask = aot_jit(row_mask, name="ofijax.scan.row_mask")


def penalty_count(problem: Problem, mask, listed):
    """(...) the number of values the listed attributes allow (the penalty's count)."""
    counts = jnp.sum(mask & valid_values(problem), axis=-1)
    return jnp.sum(jnp.where(listed, counts, 0), axis=-1)


def _segment_sums(num: int):
    """``(x, ids) -> segment_sum(x, ids, num)`` with rows whose id is ``≥ num`` dropped, that stays
    un-batched under ``vmap``.

    XLA's CPU scatter-add of a plain (C, K) array is a fast streaming loop, but a batched scatter
    (what ``vmap`` makes of it) or one whose updates are a fused expression is much slower, so a
    ``vmap`` over lanes or replicates is turned into a loop of un-batched scatters
    (``jax.custom_batching.sequential_vmap``). A dropped row (out-of-range id, ``mode="drop"``)
    is tested and skipped without its features being read, so the sum costs about C index tests
    plus the rows kept.
    """

    @jax.custom_batching.sequential_vmap
    def seg(x, ids):
        return jax.ops.segment_sum(x, ids, num_segments=num, mode="drop")

    return seg


class Prepared(NamedTuple):
    """Loop-invariant arrays of a search's attribute steps (:func:`prepare`, once per search)."""

    stats: jax.Array | None  # (C, K + 2 + pad) [Phi | Y | n_cells | 0…]; None: one-hot path
    # (M, C) uint8 (int32 past BYTE_MAX_VALUES values): the cell codes attribute-major; None:
    # one-hot path
    codes_t: jax.Array | None


def prepare(problem: Problem, Phi, Y) -> Prepared:
    """The rows :func:`per_value`'s segment sum scatters (``stats``) and the attribute-major
    codes the membership test reads (``codes_t``); both ``None`` on tables summed by one-hot
    matmul (small, where the program's compile time matters more than its run).

    ``stats`` has the columns ``[Phi | Y | n_cells | 0…]``, zero-padded to
    :func:`~._plan.stack_width` columns: one scatter of these rows costs about what the scatter
    of ``Phi`` alone does (XLA:CPU's scatter pays per row). Build it once per search and pass it
    to the attribute step, not once per step.
    """
    if aggregation(problem.num_cells, problem.v_max) != "segment":  # small: reads cell_codes
        return Prepared(stats=None, codes_t=None)
    return Prepared(stats=stack(problem, Phi, Y), codes_t=codes_major(problem))


def codes_major(problem: Problem):
    """``(M, C)`` the cell codes attribute-major, one byte a code where the values fit (the
    membership test reads all M codes of every cell each step)."""
    small = jnp.uint8 if problem.v_max <= BYTE_MAX_VALUES else jnp.int32
    # the barrier keeps XLA from turning the transpose into a layout change of its consumers
    return jax.lax.optimization_barrier(problem.cell_codes.T.astype(small))


def stack_tail(problem: Problem, Y, k: int, dtype=jnp.float64):
    """The columns the stacked statistics hold after ``k`` features: ``[Y | n_cells | 0…]``
    (``features(..., tail=)`` appends them as it sums, giving :func:`prepare`'s array)."""
    pad = stack_width(k) - k - 2
    n = problem.n_cells.astype(dtype)
    return jnp.concatenate([jnp.asarray(Y, dtype)[:, None], n[:, None],
                            jnp.zeros((n.shape[0], pad), dtype)], axis=1)


def stack(problem: Problem, Phi, Y):
    """The stacked cell statistics ``[Phi | Y | n_cells | 0…]`` (:func:`prepare`)."""
    return jnp.concatenate([Phi, stack_tail(problem, Y, Phi.shape[1], Phi.dtype)], axis=1)


def per_value(problem: Problem, Phi, Y, inside, col, stats=None):
    """``(phi_v (..., V, K), y_v (..., V), n_v (..., V))``: sums over the ``inside`` cells by
    value ``col`` (both ``(..., C)``; leading axes: lanes).

    Two exact-arithmetic-equivalent forms (they differ only in summation order, ~1e-16
    relative): a masked one-hot matmul, O(C·V·K) (cheapest for small tables), and a segment sum
    of the stacked cell statistics ``stats`` (:func:`prepare`; built here when not given) by
    code, ``inside`` cells to their value and the others dropped unread, with no V factor.
    """
    v_max = problem.v_max
    if aggregation(problem.num_cells, problem.v_max) == "segment":
        k = Phi.shape[-1]
        stats = stack(problem, Phi, Y) if stats is None else stats
        # cells outside the subgroup get an out-of-range id: dropped unread; the barrier keeps
        # the index computation out of the scatter's fused loop
        ids = jax.lax.optimization_barrier(jnp.where(inside, col, v_max))
        seg = _segment_sums(v_max)
        for _ in range(ids.ndim - 1):  # lanes: one un-batched scatter each (see _segment_sums)
            seg = jax.vmap(seg, in_axes=(None, 0))
        sums = seg(stats, ids)
        return sums[..., :k], sums[..., k], sums[..., k + 1]
    onehot = (col[..., None] == jnp.arange(v_max)).astype(Phi.dtype)
    onehot = jnp.swapaxes(onehot * inside.astype(Phi.dtype)[..., None], -1, -2)  # (..., V, C)
    return onehot @ Phi, onehot @ Y, onehot @ problem.n_cells
