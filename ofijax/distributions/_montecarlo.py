"""Fixed-memory streaming summaries (count, mean, variance, min, max, histogram, NaN count).

The engine evaluates ``values = statistic(generate(chunk_index))`` chunk by chunk. Chunks are
grouped in blocks; one block is one jitted call (a ``lax.map`` over the block's chunks, sharded
over all local devices with ``shard_map`` when several exist) returning one small per-chunk summary
for every chunk. The host merges per-chunk summaries in float64 with Python-int counts, in chunk
order, so the result does not depend on the number of devices or on the block size, and memory is
O(chunk_size + bins) whatever the number of chunks.

Per-chunk moments are two-pass (mean, then Σ (x − mean)²) in the statistic's dtype; chunks are
merged with the parallel formula of Chan, Golub & LeVeque (1979):
M2 = Σ_c M2_c + Σ_c n_c (mean_c − mean)².
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec

from ofijax._progress import Progress

__all__ = ["Summary", "ChunkStats", "stream", "merge_summaries", "finalize"]

DEFAULT_QUANTILES = (0.005, 0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975, 0.995)


class Summary(NamedTuple):
    """Streaming summary of a statistic's values.

    Attributes:
        count: number of defined (non-NaN) values, a Python int.
        undefined: number of NaN values (excluded from everything else), a Python int.
        mean: mean of the defined values (float, NaN when ``count`` is 0).
        var: population variance (ddof = 0) of the defined values.
        min: smallest defined value.
        max: largest defined value.
        hist: int64 counts per bin over ``edges`` (the last bin includes its right edge).
        edges: float64 bin edges, ``bins + 1`` of them.
        below: defined values below ``edges[0]``.
        above: defined values above ``edges[-1]``.
        quantile_levels: levels at which ``quantiles`` are read off the histogram.
        quantiles: quantiles interpolated linearly inside bins (NaN when the level falls in the
            mass below or above the histogram range).
    """

    count: int
    undefined: int
    mean: float
    var: float
    min: float
    max: float
    hist: np.ndarray
    edges: np.ndarray
    below: int
    above: int
    quantile_levels: np.ndarray
    quantiles: np.ndarray

    @property
    def std(self) -> float:
        """Population standard deviation."""
        return math.sqrt(self.var) if self.var == self.var else math.nan

    @property
    def stderr(self) -> float:
        """Monte Carlo standard error of ``mean``: std / √count."""
        return self.std / math.sqrt(self.count) if self.count else math.nan


class ChunkStats(NamedTuple):
    """Per-chunk partial results (leading axis: chunks)."""

    count: Any
    undefined: Any
    mean: Any
    m2: Any
    min: Any
    max: Any
    hist: Any  # (chunks, bins + 2): below, bins..., above


def _chunk_stats(values: jax.Array, valid: jax.Array, bins: int, lo: float, hi: float) -> ChunkStats:
    """Summary of one chunk: ``values`` (chunk, k) float, ``valid`` (chunk, 1) bool.

    One pass: sums of x − c and (x − c)² around a shift c (the chunk's first value), so
    mean = c + S1/n and M2 = S2 − S1²/n lose at most a bit or two when c is a typical value.
    """
    x = values
    nan = jnp.isnan(x)
    ok = valid & ~nan
    undefined = jnp.sum(valid & nan, dtype=jnp.int32)
    cnt = jnp.sum(ok, dtype=jnp.int32)
    first = x[0, 0]
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
    idx = jnp.floor((x - lo) * (bins / (hi - lo))).astype(jnp.int32)
    idx = jnp.where(x == hi, bins - 1, idx)  # the right edge closes the last bin
    idx = jnp.clip(idx, -1, bins) + 1  # 0 = below, bins + 1 = above
    idx = jnp.where(ok, idx, bins + 2)  # dropped slot
    hist = jnp.zeros(bins + 3, jnp.int32).at[idx.reshape(-1)].add(1, mode="promise_in_bounds")
    return ChunkStats(cnt, undefined, mean, m2, mn, mx, hist[: bins + 2])


@functools.lru_cache(maxsize=32)
def _block_fn(generate, statistic, chunk_size, bins, lo, hi, ndev):
    """Jitted block evaluator: (key, chunk_ids (K,), valid_counts (K,), operands) -> ChunkStats (K, ...).

    ``operands`` (a pytree of arrays, e.g. a lookup table) are jit arguments, not constants baked
    into the program; ``generate(key, cid, operands)`` receives them when there are any.
    """

    def one_chunk(key, cid, nvalid, operands):
        cms = generate(key, cid, operands) if operands else generate(key, cid)
        vals = jnp.asarray(statistic(cms))
        if vals.size % chunk_size:
            raise ValueError(
                "statistic: must return values with the chunk as leading axis; got shape "
                f"{vals.shape} for a chunk of {chunk_size} samples."
            )
        if not jnp.issubdtype(vals.dtype, jnp.floating):
            vals = vals.astype(jnp.float32)
        vals = vals.reshape(chunk_size, -1)
        valid = (jnp.arange(chunk_size, dtype=jnp.int32) < nvalid)[:, None]
        return _chunk_stats(vals, valid, bins, lo, hi)

    def local(key, cids, nvalids, operands):
        return lax.map(lambda a: one_chunk(key, a[0], a[1], operands), (cids, nvalids))

    if ndev > 1:
        mesh = Mesh(np.array(jax.local_devices()[:ndev]), ("chunks",))
        spec = PartitionSpec("chunks")
        local = jax.shard_map(
            local, mesh=mesh, in_specs=(PartitionSpec(), spec, spec, PartitionSpec()),
            out_specs=spec,
        )
    return jax.jit(local)


def merge_summaries(*parts: Summary, quantile_levels=None) -> Summary:
    """Merge summaries of disjoint samples (same histogram edges) into one.

    Counts add; means and variances combine exactly (Chan et al.):
    mean = Σ n_i mean_i / n,  n var = Σ n_i var_i + Σ n_i (mean_i − mean)².
    Quantiles are recomputed from the merged histogram.

    Example:
        >>> import numpy as np
        >>> from ofijax.distributions._montecarlo import summary_from_values
        >>> a = summary_from_values(np.array([0.0, 1.0]), bins=4, range=(0, 2))
        >>> b = summary_from_values(np.array([2.0]), bins=4, range=(0, 2))
        >>> m = merge_summaries(a, b)
        >>> (m.count, m.mean, round(m.var, 6), m.min, m.max, m.hist.tolist())
        (3, 1.0, 0.666667, 0.0, 2.0, [1, 0, 1, 1])
    """
    if not parts:
        raise ValueError("parts: pass at least one Summary to merge.")
    for p in parts:
        if not isinstance(p, Summary):
            raise TypeError(
                f"parts: each argument must be a Summary; got {type(p).__name__}. Unpack a list: "
                "merge_summaries(*summaries)."
            )
    edges = parts[0].edges
    for p in parts[1:]:
        if p.edges.shape != edges.shape or not np.allclose(p.edges, edges):
            raise ValueError("parts: summaries must share the same histogram bins and range.")
    counts = np.array([p.count for p in parts], dtype=np.float64)
    means = np.array([p.mean if p.count else 0.0 for p in parts], dtype=np.float64)
    m2s = np.array([p.var * p.count if p.count else 0.0 for p in parts], dtype=np.float64)
    stats = ChunkStats(
        count=counts,
        undefined=np.array([p.undefined for p in parts]),
        mean=means,
        m2=m2s,
        min=np.array([p.min if p.count else np.inf for p in parts]),
        max=np.array([p.max if p.count else -np.inf for p in parts]),
        hist=np.stack([np.concatenate([[p.below], p.hist, [p.above]]) for p in parts]),
    )
    levels = parts[0].quantile_levels if quantile_levels is None else quantile_levels
    return finalize(_Acc.from_chunks(stats), edges, levels)


class _Acc:
    """Host accumulator: exact integer counts, float64 moments."""

    __slots__ = ("count", "undefined", "mean", "m2", "min", "max", "hist")

    def __init__(self, nbins: int):
        self.count = 0
        self.undefined = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.hist = np.zeros(nbins + 2, dtype=np.int64)

    @classmethod
    def from_chunks(cls, st: ChunkStats) -> _Acc:
        acc = cls(np.shape(st.hist)[-1] - 2)
        acc.add_chunks(st)
        return acc

    def add_chunks(self, st: ChunkStats) -> None:
        cnt = np.asarray(st.count, dtype=np.int64)
        n_new = int(cnt.sum())
        self.undefined += int(np.asarray(st.undefined, dtype=np.int64).sum())
        self.hist += np.asarray(st.hist, dtype=np.int64).sum(axis=0)
        if n_new == 0:
            return
        w = cnt.astype(np.float64)
        means = np.asarray(st.mean, dtype=np.float64)
        mean_b = float(np.sum(w * means) / n_new)
        m2_b = float(np.sum(np.asarray(st.m2, dtype=np.float64)) + np.sum(w * (means - mean_b) ** 2))
        sel = cnt > 0
        self.min = min(self.min, float(np.min(np.asarray(st.min, dtype=np.float64)[sel])))
        self.max = max(self.max, float(np.max(np.asarray(st.max, dtype=np.float64)[sel])))
        n_a = self.count
        n = n_a + n_new
        delta = mean_b - self.mean
        self.mean += delta * (n_new / n)
        self.m2 += m2_b + delta * delta * (n_a * n_new / n)
        self.count = n


def _quantiles(hist: np.ndarray, edges: np.ndarray, below: int, total: int, levels) -> np.ndarray:
    levels = np.asarray(levels, dtype=np.float64)
    out = np.full(levels.shape, np.nan)
    if total == 0:
        return out
    cum = below + np.concatenate([[0], np.cumsum(hist)])  # mass at or below each edge
    for i, q in enumerate(levels.ravel()):
        target = q * total
        if target < below or target > cum[-1]:
            continue
        j = int(np.searchsorted(cum, target, side="left"))
        if j == 0:
            out.flat[i] = edges[0]
            continue
        lo_c, hi_c = cum[j - 1], cum[j]
        frac = 0.0 if hi_c == lo_c else (target - lo_c) / (hi_c - lo_c)
        out.flat[i] = edges[j - 1] + frac * (edges[j] - edges[j - 1])
    return out


def finalize(acc: _Acc, edges: np.ndarray, levels) -> Summary:
    """Turn a host accumulator into a :class:`Summary`."""
    below, above = int(acc.hist[0]), int(acc.hist[-1])
    hist = acc.hist[1:-1].copy()
    levels = np.asarray(DEFAULT_QUANTILES if levels is None else levels, dtype=np.float64)
    nan = math.nan
    return Summary(
        count=acc.count,
        undefined=acc.undefined,
        mean=acc.mean if acc.count else nan,
        var=acc.m2 / acc.count if acc.count else nan,
        min=acc.min if acc.count else nan,
        max=acc.max if acc.count else nan,
        hist=hist,
        edges=edges,
        below=below,
        above=above,
        quantile_levels=levels,
        quantiles=_quantiles(hist, edges, below, acc.count, levels),
    )


def summary_from_values(values, *, bins: int = 100, range=(-1.0, 1.0), quantiles=None) -> Summary:
    """Summary of an in-memory array (reference implementation, NumPy float64)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    nan = np.isnan(x)
    ok = x[~nan]
    lo, hi = float(range[0]), float(range[1])
    edges = np.linspace(lo, hi, bins + 1)
    acc = _Acc(bins)
    acc.undefined = int(nan.sum())
    acc.count = int(ok.size)
    if ok.size:
        acc.mean = float(ok.mean())
        acc.m2 = float(((ok - acc.mean) ** 2).sum())
        acc.min, acc.max = float(ok.min()), float(ok.max())
        inside = (ok >= lo) & (ok <= hi)
        acc.hist[1:-1] = np.histogram(ok[inside], bins=bins, range=(lo, hi))[0]
        acc.hist[0] = int((ok < lo).sum())
        acc.hist[-1] = int((ok > hi).sum())
    return finalize(acc, edges, quantiles)


def _process_grid() -> tuple[int, int]:
    """``(process_count, process_index)`` of ``jax.distributed`` (``(1, 0)`` without it)."""
    return jax.process_count(), jax.process_index()


def _allgather(st: ChunkStats) -> ChunkStats:
    """Every process's block summaries, stacked on a leading process axis (in process order)."""
    from jax.experimental import multihost_utils

    return ChunkStats(*(np.asarray(x) for x in multihost_utils.process_allgather(tuple(st))))


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
) -> Summary:
    """Run ``statistic(generate(key, chunk_index))`` over ⌈total / chunk_size⌉ chunks.

    A ``generate`` with an ``operands()`` method returning a non-empty tuple of arrays is called
    as ``generate(key, chunk_index, operands)`` with those arrays passed as jit arguments.

    Under ``jax.distributed`` (P processes, e.g. hosts) the blocks are dealt out in rounds:
    in round t process r evaluates block t·P + r on its *local* devices, the P block summaries
    are gathered (``process_allgather``, a few KiB) and every process merges them in block
    order. Chunk c always uses the same key and the blocks have the same shape as in one
    process with the same local device count, so every process returns the Summary of a
    single-process run (bit for bit), in O(P · block) memory.
    """
    lo, hi = float(range[0]), float(range[1])
    ndev = len(jax.local_devices()) if devices is None else int(devices)
    n_proc, rank = _process_grid()
    n_chunks = -(-total // chunk_size)
    if chunks_per_block is None:
        # about 2^24 samples per jitted call, at least one chunk per device
        chunks_per_block = max(1, (1 << 24) // chunk_size)
    per_block = -(-max(chunks_per_block, ndev) // ndev) * ndev
    # balance the blocks (one compiled shape) so that the last one is not mostly padding
    n_blocks = -(-n_chunks // per_block)
    even = -(-n_chunks // n_blocks)
    per_block = -(-even // ndev) * ndev
    fn = _block_fn(generate, statistic, chunk_size, bins, lo, hi, ndev)
    operands = generate.operands() if hasattr(generate, "operands") else ()
    acc = _Acc(bins)
    prog = Progress(total, desc, unit="samples", enabled=None if rank == 0 else False)
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
                acc.add_chunks(st)
                prog.update(int(nvalid.sum()))
                continue
            every = _allgather(st)
            for j in builtins.range(min(n_proc, n_blocks - first)):  # in block order
                acc.add_chunks(ChunkStats(*(x[j] for x in every)))
            done = (min(total, min(first + n_proc, n_blocks) * per_block * chunk_size)
                    - min(total, first * per_block * chunk_size))
            prog.update(done)
    finally:
        prog.close()
    return finalize(acc, np.linspace(lo, hi, bins + 1), quantiles)
