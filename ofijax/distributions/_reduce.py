"""The streaming entry points: :func:`reduce_all`, :func:`monte_carlo` and :func:`sweep`.

Owns their argument checks (histogram, quantile levels, lattice) and the chunk generators they
hand to :func:`._montecarlo.stream`: every matrix of M(n) in rank order (:class:`RankGen`), draws
of any sampler (:class:`_SampleGen`), and the draws of a sweep whose sizes are jit operands
(:class:`_SweepGen`: one compiled program for every size).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as _v

from . import _combinatorics as _C
from . import _montecarlo as _MC
from . import _sampling as _S
from ._args import check_n as _check_n
from ._args import check_num_samples as _check_num_samples
from ._args import check_sampler_n as _check_sampler_n
from ._args import one_null_probs as _null_probs
from ._samplers import binomial_chain_core as _binomial_chain_core
from ._samplers import sampler_draw as _draw
from ._samplers import sampler_operands as _operands

#: Smallest chunk (2^6 draws) when a run is shorter than ``chunk_size``: chunks shrink to the
#: run's size rounded up to a power of two, so short runs compile small programs.
_MIN_CHUNK_LOG2 = 6


@dataclass(frozen=True)
class _SampleGen:
    sampler: Callable
    chunk: int

    def operands(self) -> tuple:
        return _operands(self.sampler)

    def __call__(self, key, cid, operands=()):
        return _draw(self.sampler, operands, jax.random.fold_in(key, cid), (self.chunk,))


@dataclass(frozen=True)
class RankGen:
    n: int
    chunk: int

    def operands(self) -> tuple:
        return (_S.packed_table(self.n),) if self.n <= _S.LUT_MAX_N else ()

    def __call__(self, key, cid, operands=()):
        del key
        base = cid.astype(jnp.uint32) * jnp.uint32(self.chunk)
        if operands:
            ranks = jnp.minimum(base + jnp.arange(self.chunk, dtype=jnp.uint32),
                                jnp.uint32(_C.num_cms(self.n) - 1))  # tail rows are masked
            return _S.lookup_cms(ranks, operands[0])
        return _S.unrank_range(base, self.chunk, self.n)


def _check_hist(bins: Any, range: Any, chunk_size: Any) -> tuple[int, tuple[float, float], int]:
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
        raise ValueError(f"bins: must be a positive integer; got {bins!r}.")
    try:
        lo, hi = (float(range[0]), float(range[1]))
    except (TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"range: must be a pair (low, high); got {range!r}.") from exc
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"range: must be finite with low < high; got {range!r}.")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size: must be a positive integer; got {chunk_size!r}.")
    return int(bins), (lo, hi), int(chunk_size)


def _check_quantiles(quantiles: Any) -> tuple[float, ...] | None:
    if quantiles is None:
        return None
    try:
        q = np.asarray(quantiles, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"quantiles: must be numbers in [0, 1]; got {quantiles!r}.") from exc
    if not np.all((q >= 0.0) & (q <= 1.0)):  # also refuses NaN
        raise ValueError(f"quantiles: levels must lie in [0, 1] (e.g. 0.025, 0.975); got {quantiles!r}.")
    return tuple(float(v) for v in q)


#: Most bins a lattice histogram may have (per-chunk histograms of int32: 4 MB per chunk).
_MAX_LATTICE_BINS = 1_000_000


def _check_lattice(lattice: Any, rng: tuple[float, float]) -> int | None:
    if lattice is None:
        return None
    if isinstance(lattice, bool) or not isinstance(lattice, Integral) or lattice < 1:
        raise ValueError(f"lattice: must be a positive integer denominator q (values k/q), e.g. n "
                         f"for B or lcm(n_i, n_j) for OFI; got {lattice!r}.")
    width = (rng[1] - rng[0]) * int(lattice)
    if width > _MAX_LATTICE_BINS:
        raise ValueError(f"lattice: {int(lattice)} over range {rng} needs {width:,.0f} bins (at most "
                         f"{_MAX_LATTICE_BINS:,}); narrow range or use bins.")
    q = int(lattice)
    if math.floor(Fraction(repr(rng[1])) * q) < math.ceil(Fraction(repr(rng[0])) * q):
        raise ValueError(f"lattice: range {rng} holds no multiple of 1/{int(lattice)}; widen range.")
    return int(lattice)


def reduce_all(
    n: int,
    fn: Callable[[jax.Array], jax.Array],
    *,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    chunk_size: int = 1 << 16,
    quantiles: Sequence[float] | None = None,
    lattice: int | None = None,
) -> Any:
    """Summarise ``fn`` over every matrix of M(n), streaming, in fixed memory.

    Ranks 0 … N(n) − 1 are cut into chunks of ``chunk_size``; each chunk is unranked in closed
    form (int32 (chunk, 4)), passed to ``fn`` (any metric of a CM stack, e.g.
    ``ofijax.marginal_benefit``) and summarised; chunks are merged exactly on the host (see
    :class:`Summary`). NaN values are counted in ``undefined`` and excluded elsewhere. Chunks are
    spread over all devices when several exist. Needs n ≤ 2949.

    The values and every sum are float64 whatever ``jax_enable_x64`` says, and the bins are
    decided exactly on lattices ([a, b), the last bin closed, as numpy.histogram; see
    :class:`Summary`), so the histogram is the exact count of matrices per bin.
    ``lattice=q`` gives one bin per attainable value k/q in ``range`` (``bins`` is then ignored)
    and exact inverse-CDF quantiles (``lattice=n`` for B). A statistic returning (chunk, k)
    values (or a pytree of arrays) gives k summaries (a list, or the same pytree), in one pass.

    Example:
        >>> import ofijax
        >>> from ofijax.distributions import reduce_all
        >>> s = reduce_all(10, ofijax.marginal_benefit, bins=4)
        >>> s.count, abs(s.mean) < 1e-15, round(s.var, 12), s.hist.tolist()
        (286, True, 0.14, [22, 103, 127, 34])
        >>> reduce_all(10, ofijax.marginal_benefit, bins=20).hist.tolist()[:6]
        [1, 2, 4, 6, 9, 12]
        >>> e = reduce_all(2, ofijax.marginal_benefit, lattice=2)
        >>> e.values.tolist(), e.hist.tolist(), float(e.quantiles[4])  # median
        ([-1.0, -0.5, 0.0, 0.5, 1.0], [1, 2, 4, 2, 1], 0.0)
    """
    n = _check_n(n)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if n > _S.UNRANK_MAX_N:
        raise ValueError(f"n: reduce_all supports n ≤ {_S.UNRANK_MAX_N} (N(n) < 2^32); got {n}.")
    total = _C.num_cms(n)
    chunk_size = min(chunk_size, 1 << max(_MIN_CHUNK_LOG2, (total - 1).bit_length()))
    return _MC.stream(
        jax.random.key(0), RankGen(n, chunk_size), fn, total,
        chunk_size=chunk_size, bins=bins, range=rng, quantiles=_check_quantiles(quantiles),
        desc=f"reduce_all(n={n})", lattice=_check_lattice(lattice, rng),
    )


def monte_carlo(
    key: jax.Array,
    statistic: Callable[[jax.Array], jax.Array],
    sampler: Callable[[jax.Array, tuple[int, ...]], jax.Array],
    num_samples: int,
    *,
    chunk_size: int = 1 << 16,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    quantiles: Sequence[float] | None = None,
    lattice: int | None = None,
) -> Any:
    """Monte Carlo summary of ``statistic(sampler(key_c, (chunk_size,)))`` in fixed memory.

    Chunk c uses ``key_c = fold_in(key, c)``, so the result for a fixed key depends on
    ``chunk_size`` but not on the number of devices or on how chunks are grouped. Chunks are
    evaluated in blocks of about 2^24 samples: one jitted call per block runs a ``lax.map`` over
    the block's chunks (sharded with ``jax.shard_map`` over a 1-D mesh of all devices when there
    are several) and returns one small summary per chunk; the host merges them with exact integer
    counts and float64 Chan–Welford moments. Memory is O(chunk_size + bins) for any
    ``num_samples`` (1e10 works; it is a loop). A one-line stderr progress counter appears when a
    run exceeds ~2 s (:mod:`ofijax._progress`; ``OFIJAX_PROGRESS=0`` switches it off).
    The program is compiled per sampler (its n) and block shape: for many group sizes use
    :func:`sweep`, which compiles once for all of them.

    Multi-host: call ``jax.distributed.initialize()`` in every process first, then the same
    call with the same key in every process. The blocks are dealt out over the processes (each
    runs its share on its local devices), the small per-block summaries are gathered and merged
    in block order, so every process gets the Summary of a single-process run with the same
    local device count, bit for bit (tested with two local CPU processes).

    Args:
        key: a JAX PRNG key.
        statistic: maps an int32 CM stack (chunk, ..., 4) to values with the chunk as leading axis
            (any core metric, e.g. ``ofijax.marginal_benefit``; :func:`pair_statistic` for two
            groups). NaN values count as undefined.
        sampler: ``sampler(key, shape) -> (*shape, ..., 4)``, e.g. :func:`uniform_sampler`.
        num_samples: number of draws, ≥ 1.
        chunk_size: draws per chunk (memory bound).
            A statistic returning (chunk, k) values, or a pytree of arrays, gives k summaries
            (a list, or the same pytree of summaries) from one pass over the samples.
        bins, range: histogram over [range[0], range[1]] (use (-2, 2) for OFI): bin k is
            [e_k, e_{k+1}), the last bin closed; decided exactly on lattices (see
            :class:`Summary`). Values and sums are float64 whatever ``jax_enable_x64`` says.
        quantiles: levels read off the histogram.
        lattice: q: one bin per attainable value k/q in ``range`` (``bins`` ignored), exact
            inverse-CDF quantiles (the definition of :meth:`PMF.quantile`); ``n`` for B,
            ``lcm(n_i, n_j)`` for OFI. Values off the lattice make the run fail (ValueError).

    Returns:
        A :class:`Summary` (or several, see ``statistic``); merge with :func:`merge_summaries`.
        Its intervals: :meth:`Summary.mean_interval`, :meth:`Summary.tail_probability`,
        :meth:`Summary.quantile_intervals`.

    Example:
        >>> import jax, ofijax
        >>> from ofijax.distributions import monte_carlo, uniform_sampler
        >>> s = monte_carlo(jax.random.key(0), ofijax.marginal_benefit, uniform_sampler(10), 4096,
        ...                 chunk_size=1024)
        >>> s.count, abs(s.mean) < 0.05, abs(s.var - 0.14) < 0.02
        (4096, True, True)
    """
    key = _v.as_key(key)
    num = _check_num_samples(num_samples)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if not callable(statistic):
        raise ValueError("statistic: must be a callable mapping a CM stack to values.")
    if not callable(sampler):
        raise ValueError("sampler: must be a callable sampler(key, shape), e.g. uniform_sampler(n).")
    chunk_size = min(chunk_size, 1 << max(_MIN_CHUNK_LOG2, (num - 1).bit_length()))
    return _MC.stream(
        key, _SampleGen(sampler, chunk_size), statistic, num,
        chunk_size=chunk_size, bins=bins, range=rng, quantiles=_check_quantiles(quantiles),
        desc="monte_carlo", lattice=_check_lattice(lattice, rng),
    )


@dataclass(frozen=True)
class _SweepGen:
    """Draws for one size of a sweep; the sizes and probabilities are jit arguments (operands),
    not part of the program, so every size shares one compiled block."""

    kind: str  # "uniform" or "multinomial"
    chunk: int
    groups: int
    ns: tuple = field(default=(), compare=False)
    probs: tuple = field(default=(), compare=False)

    def operands(self) -> tuple:
        return (np.asarray(self.ns, dtype=np.int32), np.asarray(self.probs, dtype=np.float32))

    def __call__(self, key, cid, operands=()):
        ns, p = operands
        k = jax.random.fold_in(key, cid)
        out = []
        for g in range(self.groups):
            kg = jax.random.fold_in(k, g)
            if self.kind == "uniform":
                out.append(_S.uniform_cms_traced(kg, ns[g], self.chunk))
            else:
                out.append(_binomial_chain_core(kg, ns[g], p, (self.chunk,)))
        return out[0] if self.groups == 1 else jnp.stack(out, axis=-2)


def sweep(
    key: jax.Array,
    statistic: Callable[[jax.Array], Any],
    ns: Sequence[Any],
    num_samples: Any,
    *,
    null: Any = "uniform",
    chunk_size: int = 1 << 14,
    chunks_per_block: int = 16,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    quantiles: Sequence[float] | None = None,
) -> list:
    """Monte Carlo of ``statistic`` at many group sizes with ONE compiled program.

    The sizes (and the null's probabilities) are arguments of the jitted block, not constants,
    and every block has the same shape (``chunks_per_block`` chunks of ``chunk_size`` draws; the
    last block of a size is padded), so a sweep over any sizes and sample counts compiles once
    per (statistic, chunk_size, histogram): a second sweep over new sizes compiles nothing.

    Args:
        key: PRNG key (or int seed); size n uses ``fold_in(fold_in(key, n_i), n_j)``, so its
            summary does not depend on the other sizes of the sweep.
        statistic: as in :func:`monte_carlo`: of (chunk, 4) matrices when ``ns`` holds ints, of
            (chunk, 2, 4) pairs (group i first) when it holds pairs ``(n_i, n_j)`` (e.g.
            :func:`pair_statistic`).
        ns: group sizes (ints ≥ 1, or pairs of them).
        num_samples: draws per size (an int, or one per size).
        null: ``"uniform"`` (exactly uniform on M(n), any n < 2^31 − 3) or a reference CM / 4
            probabilities (Multinomial(n, p) by the exact binomial chain, any n < 2^31; the
            probabilities travel to the program as float32, i.e. resolved to ~6e-8 relative).
        chunk_size, chunks_per_block: the block shape (memory O(chunk_size)).
        bins, range, quantiles: the histogram, as in :func:`monte_carlo`.

    Returns:
        A list with one :class:`Summary` (or the statistic's structure of them) per size.
        The draws follow the same laws as :func:`uniform_sampler` / :func:`multinomial_sampler`
        but are another stream than :func:`monte_carlo` with those samplers.

    Example:
        >>> import ofijax
        >>> from ofijax.distributions import sweep
        >>> out = sweep(0, ofijax.marginal_benefit, [5, 50], 20_000, chunk_size=4096)
        >>> [(s.count, round(s.var, 2)) for s in out]  # Var B = (n + 4)/(10 n): 0.18, 0.108
        [(20000, 0.18), (20000, 0.11)]
    """
    key = _v.as_key(key)
    if not callable(statistic):
        raise ValueError("statistic: must be a callable mapping a CM stack to values.")
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or len(ns) == 0:
        raise ValueError(f"ns: must be a non-empty list of group sizes (or pairs); got {ns!r}.")
    pairs = [tuple(x) if isinstance(x, (tuple, list)) else (x,) for x in ns]
    groups = len(pairs[0])
    if groups not in (1, 2) or any(len(x) != groups for x in pairs):
        raise ValueError("ns: give all sizes as ints or all as pairs (n_i, n_j).")
    pairs = [tuple(_check_sampler_n(v) for v in x) for x in pairs]
    if isinstance(num_samples, Sequence) and not isinstance(num_samples, (str, bytes)):
        nums = [_check_num_samples(v) for v in num_samples]
        if len(nums) != len(pairs):
            raise ValueError(f"num_samples: give one count or one per size ({len(pairs)}); got "
                             f"{len(nums)}.")
    else:
        nums = [_check_num_samples(num_samples)] * len(pairs)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if isinstance(chunks_per_block, bool) or not isinstance(chunks_per_block, Integral) \
            or chunks_per_block < 1:
        raise ValueError(f"chunks_per_block: must be a positive integer; got {chunks_per_block!r}.")
    p = _null_probs(null)
    kind = "uniform" if p is None else "multinomial"
    levels = _check_quantiles(quantiles)
    out = []
    for sizes, num in zip(pairs, nums):
        gen = _SweepGen(kind, chunk_size, groups, sizes, p or (0.25,) * 4)
        k = key
        for v in sizes:
            k = jax.random.fold_in(k, v)
        out.append(_MC.stream(k, gen, statistic, num, chunk_size=chunk_size, bins=bins, range=rng,
                              quantiles=levels, chunks_per_block=int(chunks_per_block),
                              desc=f"sweep(n={sizes[0] if groups == 1 else sizes})",
                              balance=False))
    return out
