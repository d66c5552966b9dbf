"""The one fixed-memory, mergeable, sharded Monte Carlo loop: :func:`stream` (device side).

Owns the jitted block evaluator (per-chunk summaries of a statistic on all local devices), the
device half of the histogram rule (:func:`_slots`) and the multi-process schedule; the
:class:`Summary` type, the histogram convention with its proven snap rule, the host accumulator
and merging live in :mod:`._summary` (re-exported here).

The engine evaluates ``values = statistic(generate(chunk_index))`` chunk by chunk. Chunks are
grouped in blocks; one block is one jitted call (a ``lax.map`` over the block's chunks, sharded
over all local devices with ``shard_map`` when several exist) returning one small per-chunk summary
for every chunk. The host merges per-chunk summaries in float64 with Python-int counts, in chunk
order, so the result does not depend on the number of devices or on the block size, and memory is
O(chunk_size + bins) whatever the number of chunks.

Precision. The samples are drawn under the caller's JAX settings; the statistic and every summary
of its values are then traced with 64-bit types switched on (``jax.enable_x64``), whatever
``jax_enable_x64`` says: the statistic's values are float64 (a core metric of an integer CM
computes B = d/n correctly rounded in float64), per-chunk sums are float64 around a shift and
chunks merge with the parallel formula of Chan, Golub & LeVeque (1979):
M2 = Σ_c M2_c + Σ_c n_c (mean_c − mean)². Counts are int32 per chunk (chunk ≤ 2^31) and Python
ints on the host.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec

from ofijax._progress import Progress

from ._summary import LATTICE_TOL as _LATTICE_TOL
from ._summary import SCHEMA_VERSION as SCHEMA_VERSION
from ._summary import Acc as _Acc
from ._summary import Bins as _Bins
from ._summary import ChunkStats as ChunkStats
from ._summary import Summary as Summary
from ._summary import finalize as finalize
from ._summary import make_bins as make_bins
from ._summary import merge_summaries as merge_summaries
from ._summary import summary_from_values as summary_from_values
from ._summary import wilson_interval as wilson_interval

__all__ = [
    "Summary", "ChunkStats", "stream", "merge_summaries", "finalize", "wilson_interval",
    "SCHEMA_VERSION", "summary_from_values", "make_bins",
]

#: Samples per jitted block call (enough work per call to hide dispatch; at least one chunk per
#: device).
_BLOCK_SAMPLES = 1 << 24
#: Most int32 per-chunk histogram slots one block may return (~128 MiB; lattice plans).
_BLOCK_HIST_SLOTS = 1 << 25
#: Compiled block evaluators kept (one per generator, statistic, chunk size, plan, devices).
_PROGRAM_CACHE = 32


def _slots(x: jax.Array, plan: _Bins) -> jax.Array:
    """Histogram slot of float64 values: 0 = below, 1..nb = bins, nb + 1 = above, nb + 2 =
    off-lattice (lattice plans only)."""
    nb = plan.nbins
    if plan.lattice is None:
        e = plan.edges()
        tau = plan.tau()
        lowered = jnp.asarray(e - tau, dtype=jnp.float64)
        j = jnp.searchsorted(lowered, x, side="right")  # edges e_m with e_m − τ ≤ x
        last = jnp.where(x <= e[-1] + tau, nb, nb + 1)  # the closed last bin
        return jnp.where(j == nb + 1, last, j).astype(jnp.int32)
    r = x * plan.lattice
    k = jnp.round(r)
    off = jnp.abs(r - k) > _LATTICE_TOL * jnp.maximum(1.0, jnp.abs(r))
    kk = jnp.clip(k - plan.kmin, -1, nb).astype(jnp.int32) + 1
    return jnp.where(off, nb + 2, kk)


def _column_stats(x: jax.Array, valid: jax.Array, plan: _Bins) -> ChunkStats:
    """Summary of one column of one chunk: ``x`` (chunk,) float64, ``valid`` (chunk,) bool.

    One pass: sums of x − c and (x − c)² around a shift c (the chunk's first value), so
    mean = c + S1/n and M2 = S2 − S1²/n lose at most a bit or two when c is a typical value.
    """
    nan = jnp.isnan(x)
    ok = valid & ~nan
    undefined = jnp.sum(valid & nan, dtype=jnp.int32)
    cnt = jnp.sum(ok, dtype=jnp.int32)
    first = x[0]
    c = jnp.where(jnp.isfinite(first), first, jnp.zeros_like(first))
    d = jnp.where(ok, x - c, jnp.zeros_like(x))
    s1 = jnp.sum(d)
    s2 = jnp.sum(d * d)
    cntf = jnp.maximum(cnt, 1).astype(x.dtype)
    mean = c + s1 / cntf
    m2 = jnp.maximum(s2 - s1 * (s1 / cntf), 0)
    big = jnp.asarray(jnp.inf, x.dtype)
    mn = jnp.min(jnp.where(ok, x, big))
    mx = jnp.max(jnp.where(ok, x, -big))
    nb = plan.nbins
    idx = jnp.where(ok, _slots(x, plan), nb + 3)  # dropped slot
    hist = jnp.zeros(nb + 4, jnp.int32).at[idx].add(1, mode="promise_in_bounds")
    return ChunkStats(cnt, undefined, mean, m2, mn, mx, hist[: nb + 3])


def _flatten_values(vals: Any, chunk_size: int) -> tuple[jax.Array, Any, list]:
    """The statistic's output (an array or a pytree of arrays with the chunk as leading axis) as
    float64 (chunk, k) columns, with the tree structure and each leaf's trailing shape."""
    leaves, tree = jax.tree.flatten(vals)
    cols, shapes = [], []
    for leaf in leaves:
        v = jnp.asarray(leaf)
        if v.ndim == 0 or v.shape[0] != chunk_size:
            raise ValueError(
                "statistic: must return values with the chunk as leading axis (or a pytree of "
                f"such arrays); got shape {v.shape} for a chunk of {chunk_size} samples.")
        shapes.append(tuple(int(s) for s in v.shape[1:]))
        cols.append(v.astype(jnp.float64).reshape(chunk_size, -1))
    if not cols:
        raise ValueError("statistic: returned no arrays.")
    return jnp.concatenate(cols, axis=1), tree, shapes


@functools.lru_cache(maxsize=_PROGRAM_CACHE)
def _block_fn(generate, statistic, chunk_size, plan, ndev):
    """Jitted block evaluator: (key, chunk_ids (K,), valid_counts (K,), operands) -> ChunkStats
    (K, k, ...), and a dict that receives the statistic's tree structure when it is traced.

    ``operands`` (a pytree of arrays, e.g. a lookup table) are jit arguments, not constants baked
    into the program; ``generate(key, cid, operands)`` receives them when there are any.
    """
    info: dict = {}

    def one_chunk(key, cid, nvalid, operands):
        cms = generate(key, cid, operands) if operands else generate(key, cid)
        with jax.enable_x64(True):
            vals, tree, shapes = _flatten_values(statistic(cms), chunk_size)
            info["tree"], info["shapes"] = tree, shapes
            valid = jnp.arange(chunk_size, dtype=jnp.int32) < nvalid
            return jax.vmap(lambda col: _column_stats(col, valid, plan), in_axes=1)(vals)

    def local(key, cids, nvalids, operands):
        return lax.map(lambda a: one_chunk(key, a[0], a[1], operands), (cids, nvalids))

    if ndev > 1:
        mesh = Mesh(np.array(jax.local_devices()[:ndev]), ("chunks",))
        spec = PartitionSpec("chunks")
        local = jax.shard_map(
            local, mesh=mesh, in_specs=(PartitionSpec(), spec, spec, PartitionSpec()),
            out_specs=spec,
        )
    return jax.jit(local), info

def _process_grid() -> tuple[int, int]:
    """``(process_count, process_index)`` of ``jax.distributed`` (``(1, 0)`` without it)."""
    return jax.process_count(), jax.process_index()


def _allgather(st: ChunkStats) -> ChunkStats:
    """Every process's block summaries, stacked on a leading process axis (in process order)."""
    from jax.experimental import multihost_utils

    with jax.enable_x64(True):  # the float64 moments must not be canonicalised to float32
        return ChunkStats(*(np.asarray(x) for x in multihost_utils.process_allgather(tuple(st))))


def _rebuild(summaries: list, tree, shapes) -> Any:
    """Columns back into the statistic's structure: a Summary per scalar leaf, nested lists for
    leaves with trailing axes."""
    out, pos = [], 0
    for shp in shapes:
        size = math.prod(shp)
        cols = summaries[pos : pos + size]
        pos += size
        if not shp:
            out.append(cols[0])
            continue
        arr = cols
        for dim in reversed(shp[1:]):
            arr = [arr[i : i + dim] for i in builtins.range(0, len(arr), dim)]
        out.append(arr)
    return jax.tree.unflatten(tree, out)


def stream(
    key: jax.Array,
    generate: Callable,
    statistic: Callable,
    total: int,
    *,
    chunk_size: int,
    bins: int,
    range: tuple[float, float],
    quantiles=None,
    chunks_per_block: int | None = None,
    desc: str = "ofijax",
    devices: int | None = None,
    lattice: int | None = None,
    balance: bool = True,
) -> Any:
    """Run ``statistic(generate(key, chunk_index))`` over ⌈total / chunk_size⌉ chunks.

    A ``generate`` with an ``operands()`` method returning a non-empty tuple of arrays is called
    as ``generate(key, chunk_index, operands)`` with those arrays passed as jit arguments.
    Returns one :class:`Summary` for a statistic of shape (chunk,), nested lists of summaries for
    (chunk, *s), and the same pytree of those for a pytree of arrays: one pass over the samples.

    Under ``jax.distributed`` (P processes, e.g. hosts) the blocks are dealt out in rounds:
    in round t process r evaluates block t·P + r on its *local* devices, the P block summaries
    are gathered (``process_allgather``, a few KiB) and every process merges them in block
    order. Chunk c always uses the same key and the blocks have the same shape as in one
    process with the same local device count, so every process returns the Summary of a
    single-process run (bit for bit), in O(P · block) memory.

    ``balance=False`` keeps ``chunks_per_block`` as given (the last block padded) instead of
    evening the blocks out: one compiled block shape for every ``total`` (sweeps).
    """
    lo, hi = float(range[0]), float(range[1])
    plan = make_bins(bins, lo, hi, lattice)
    ndev = len(jax.local_devices()) if devices is None else int(devices)
    n_proc, rank = _process_grid()
    n_chunks = -(-total // chunk_size)
    if chunks_per_block is None:
        # about _BLOCK_SAMPLES samples per jitted call, at least one chunk per device
        chunks_per_block = max(1, _BLOCK_SAMPLES // chunk_size)
        # and at most _BLOCK_HIST_SLOTS per-chunk histogram slots per block
        chunks_per_block = max(1, min(chunks_per_block, _BLOCK_HIST_SLOTS // (plan.nbins + 3)))
    per_block = -(-max(chunks_per_block, ndev) // ndev) * ndev
    # balance the blocks (one compiled shape) so that the last one is not mostly padding
    n_blocks = -(-n_chunks // per_block)
    if balance:
        even = -(-n_chunks // n_blocks)
        per_block = -(-even // ndev) * ndev
    fn, info = _block_fn(generate, statistic, chunk_size, plan, ndev)
    operands = generate.operands() if hasattr(generate, "operands") else ()
    accs: list[_Acc] | None = None
    prog = Progress(total, desc, unit="samples", enabled=None if rank == 0 else False)

    def add(st):
        nonlocal accs
        k = np.shape(st.count)[-1]
        if accs is None:
            accs = [_Acc(plan.nbins) for _ in builtins.range(k)]
        for j, acc in enumerate(accs):
            acc.add_chunks(ChunkStats(*(np.asarray(x)[:, j] for x in st)))

    try:
        for first in builtins.range(0, n_blocks, n_proc):
            # this process's block of the round (past the end: all-padding, zero valid samples)
            start = (first + rank) * per_block
            cids = np.arange(start, start + per_block, dtype=np.int64)
            nvalid = np.clip(total - cids * chunk_size, 0, chunk_size)
            st = fn(key, jnp.asarray(cids.astype(np.int32)), jnp.asarray(nvalid.astype(np.int32)),
                    operands)
            st = jax.tree.map(np.asarray, st)
            if n_proc == 1:
                add(st)
                prog.update(int(nvalid.sum()))
                continue
            every = _allgather(st)
            for j in builtins.range(min(n_proc, n_blocks - first)):  # in block order
                add(ChunkStats(*(x[j] for x in every)))
            done = (min(total, min(first + n_proc, n_blocks) * per_block * chunk_size)
                    - min(total, first * per_block * chunk_size))
            prog.update(done)
    finally:
        prog.close()
    off = sum(int(a.hist[-1]) for a in accs)
    if off:
        raise ValueError(
            f"lattice: {off:,} values are not multiples of 1/{lattice}; pass the statistic's "
            "denominator (n for B, lcm(n_i, n_j) for OFI) or use bins instead of lattice.")
    edges = plan.edges()
    summaries = [finalize(a, edges, quantiles, plan.lattice) for a in accs]
    return _rebuild(summaries, info["tree"], info["shapes"])
