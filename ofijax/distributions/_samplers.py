"""The public samplers (key first) and the sampler objects :func:`monte_carlo` runs.

Owns the checked wrappers around the exact samplers of :mod:`._sampling` (:func:`sample_uniform`,
:func:`sample_multinomial`, :func:`sample_dirichlet_multinomial`, :func:`subsample`, and the
binomial chain for groups above the tables), their conditional-table cache, and the hashable
sampler objects (:func:`uniform_sampler`, …, :func:`pair_sampler`, :func:`pair_statistic`) whose
arrays travel as jit operands: equal samplers (same kind, n and parameters) reuse one compiled
Monte Carlo block.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as _v
from ofijax.metrics import ofi as _ofi

from . import _sampling as _S
from ._args import check_alpha as _check_alpha
from ._args import check_cm as _check_cm
from ._args import check_n as _check_n
from ._args import check_probs as _check_probs
from ._args import check_sampler_n as _check_sampler_n
from ._args import check_shape as _check_shape


def sample_uniform(key: jax.Array, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Exactly uniform draws from M(n): int32 (*shape, 4), TP, FN, FP, TN.

    One random 32-bit word per matrix: an integer r uniform on [0, N(n)) (rejection of the top
    2^32 mod N(n) words, refilled until none is left, so exactly uniform), unranked in closed form
    (TP from the cumulative C(x; n) by a cube root, FP from triangular numbers by a square root,
    then FN) — see :func:`unrank_confusion_matrix`. For n ≥ 2950 (N(n) ≥ 2^32) it uses stars and
    bars instead: three distinct sorted positions among n + 3, exact by rejection.

    This is NOT Multinomial(n, ¼, ¼, ¼, ¼), which concentrates near n/4 per cell.

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_uniform
        >>> cms = sample_uniform(jax.random.key(0), 10, (3,))
        >>> cms.shape, cms.dtype, cms.sum(-1).tolist()
        ((3, 4), dtype('int32'), [10, 10, 10])
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    return _S.uniform_cms(key, n, _check_shape(shape))


@functools.partial(jax.jit, static_argnums=(3,))
def _binomial_chain(key, n, p, shape):
    """:func:`binomial_chain_core`, jitted: n is an argument, so every n shares one program."""
    return binomial_chain_core(key, n, p, shape)


def binomial_chain_core(key, n, p, shape):
    """Sequential binomials for large n (p: (..., 4) float).

    The remainders n − TP, … are kept in the default integer dtype (int32 holds every n < 2^31),
    so rows sum to n exactly; each binomial count is drawn in the default float (float32: its
    trial count is n rounded to 24 bits, a relative change below 6e-8) and clipped to the
    remainder.
    """
    k0, k1, k2 = jax.random.split(key, 3)
    it = jnp.result_type(int)
    ft = jnp.result_type(float)
    rest1 = p[..., 1] + p[..., 2] + p[..., 3]
    q1 = jnp.where(rest1 > 0, p[..., 1] / jnp.where(rest1 > 0, rest1, 1), 0.0)
    rest2 = p[..., 2] + p[..., 3]
    q2 = jnp.where(rest2 > 0, p[..., 2] / jnp.where(rest2 > 0, rest2, 1), 0.0)

    def draw(k, total, prob):
        x = jax.random.binomial(k, total.astype(ft), jnp.broadcast_to(prob, shape), shape)
        return jnp.clip(jnp.round(x).astype(it), 0, total)

    m0 = jnp.broadcast_to(jnp.asarray(n, dtype=it), shape)
    tp = draw(k0, m0, p[..., 0])
    m1 = m0 - tp
    fn = draw(k1, m1, q1)
    m2 = m1 - fn
    fp = draw(k2, m2, q2)
    return jnp.stack([tp, fn, fp, m2 - fp], axis=-1).astype(jnp.int32)


def sample_multinomial(key: jax.Array, n: int, probs: Any, shape: Sequence[int] = ()) -> jax.Array:
    """CM ~ Multinomial(n, probs), int32 (*shape, 4); ``probs`` in TP, FN, FP, TN order.

    Drawn as TP ~ Bin(n, p_TP), FN | TP ~ Bin(n − TP, p_FN / (1 − p_TP)),
    FP | TP, FN ~ Bin(rest, p_FP / (p_FP + p_TN)), each by inverse CDF on a float64-built table
    (three uniforms per matrix, probabilities resolved to 2^-24) for n ≤ 2048; above that by
    ``jax.random.binomial``.

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_multinomial
        >>> cms = sample_multinomial(jax.random.key(0), 50, [0.1, 0.2, 0.3, 0.4], (2, 3))
        >>> cms.shape, bool((cms.sum(-1) == 50).all())
        ((2, 3, 4), True)
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    p = _check_probs(probs)
    shape = _check_shape(shape)
    if n > _S.TABLE_MAX_N:
        return _binomial_chain(key, n, jnp.asarray(p, jnp.result_type(float)), shape)
    t = _tables(n, "multinomial", p)
    return _S.table_sample(key, n, *t, shape)


def sample_dirichlet_multinomial(
    key: jax.Array, n: int, alpha: Any, shape: Sequence[int] = ()
) -> jax.Array:
    """CM ~ Dirichlet-multinomial(n, alpha), int32 (*shape, 4).

    p ~ Dirichlet(alpha), CM | p ~ Multinomial(n, p), drawn without p as conditional
    beta-binomials: TP ~ BB(n, α_TP, α_FN + α_FP + α_TN), FN | TP ~ BB(n − TP, α_FN, α_FP + α_TN),
    FP | TP, FN ~ BB(rest, α_FP, α_TN) (inverse CDF tables for n ≤ 2048, else Dirichlet then
    binomials). alpha = (1, 1, 1, 1) is the uniform distribution on M(n).

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_dirichlet_multinomial
        >>> sample_dirichlet_multinomial(jax.random.key(1), 7, [1, 1, 1, 1], (4,)).sum(-1).tolist()
        [7, 7, 7, 7]
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    a = _check_alpha(alpha)
    shape = _check_shape(shape)
    if n > _S.TABLE_MAX_N:
        k0, k1 = jax.random.split(key)
        p = jax.random.dirichlet(k0, jnp.asarray(a, jnp.result_type(float)), shape)
        return _binomial_chain(k1, n, p, shape)
    t = _tables(n, "dirichlet", a)
    return _S.table_sample(key, n, *t, shape)


def subsample(key: jax.Array, cm: Any, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Confusion matrices of n rows drawn without replacement from a real group with counts ``cm``.

    Multivariate hypergeometric, drawn as TP ~ HG(M, cm_TP, n), FN | TP ~ HG(M − cm_TP, cm_FN,
    n − TP), FP | … ~ HG(cm_FP + cm_TN, cm_FP, rest), M = Σ cm, by inverse CDF tables
    (n ≤ 2048). int32 (*shape, 4).

    Example:
        >>> import jax
        >>> from ofijax.distributions import subsample
        >>> subsample(jax.random.key(0), [5, 0, 0, 5], 10, (2,)).tolist()
        [[5, 0, 0, 5], [5, 0, 0, 5]]
    """
    key = _v.as_key(key)
    c = _check_cm(cm)
    n = _check_n(n)
    if n > sum(c):
        raise ValueError(
            f"n: cannot draw {n} rows without replacement from a group of {sum(c)} rows; "
            "use n ≤ the group size (or sample_multinomial for draws with replacement)."
        )
    if n > _S.TABLE_MAX_N:
        raise ValueError(
            f"n: subsample supports up to {_S.TABLE_MAX_N} draws; got {n}. For larger samples "
            "the multinomial approximation sample_multinomial(key, n, cm / sum(cm)) is accurate."
        )
    shape = _check_shape(shape)
    t = _tables(n, "hypergeom", c)
    return _S.table_sample(key, n, *t, shape)


#: Conditional tables kept (n, kind, params); cleared when full (a sweep of sizes refills it).
_TABLE_CACHE_SIZE = 16
_TABLE_CACHE: dict = {}


def _tables(n: int, kind: str, params: tuple) -> tuple[jax.Array, ...]:
    k = (n, kind, params)
    hit = _TABLE_CACHE.get(k)
    if hit is None:
        if len(_TABLE_CACHE) > _TABLE_CACHE_SIZE:
            _TABLE_CACHE.clear()
        hit = tuple(np.asarray(t) for t in _S.conditional_tables(n, kind, params))
        _TABLE_CACHE[k] = hit
    return hit


# Hashable sampler objects, so that jitted Monte Carlo blocks are cached across calls.


@dataclass(frozen=True)
class _Sampler:
    kind: str
    n: int
    params: tuple = ()

    def operands(self) -> tuple:
        """Arrays the sampler reads (passed as jit arguments by :func:`monte_carlo`)."""
        if self.kind == "uniform" and self.n <= _S.LUT_MAX_N:
            return (_S.packed_table(self.n),)
        return ()

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            table = operands[0] if operands else None
            return _S.uniform_cms(key, self.n, _check_shape(shape), table)
        return self(key, shape)

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            return sample_uniform(key, self.n, shape)
        if self.kind == "multinomial":
            return sample_multinomial(key, self.n, self.params, shape)
        if self.kind == "dirichlet":
            return sample_dirichlet_multinomial(key, self.n, self.params, shape)
        return subsample(key, self.params, self.n, shape)


def sampler_operands(sampler: Callable) -> tuple:
    """Arrays a library sampler reads (empty for user samplers)."""
    return sampler.operands() if isinstance(sampler, (_Sampler, _PairSampler)) else ()


def sampler_draw(sampler: Callable, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
    if isinstance(sampler, (_Sampler, _PairSampler)):
        return sampler.draw(operands, key, shape)
    return sampler(key, shape)


@dataclass(frozen=True)
class _PairSampler:
    first: Callable
    second: Callable

    def operands(self) -> tuple:
        return (sampler_operands(self.first), sampler_operands(self.second))

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        k0, k1 = jax.random.split(key)
        return jnp.stack(
            [sampler_draw(self.first, operands[0], k0, shape), sampler_draw(self.second, operands[1], k1, shape)],
            axis=-2,
        )

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        return self.draw(self.operands(), key, shape)


@dataclass(frozen=True)
class _PairStatistic:
    metric: Callable

    def __call__(self, cms: jax.Array) -> jax.Array:
        return self.metric(cms[..., 0, :], cms[..., 1, :])


def uniform_sampler(n: int) -> Callable:
    """``sampler(key, shape)`` drawing uniformly from M(n) (for :func:`monte_carlo`)."""
    return _Sampler("uniform", _check_sampler_n(n))


def multinomial_sampler(n: int, probs: Any) -> Callable:
    """``sampler(key, shape)`` drawing Multinomial(n, probs) matrices."""
    return _Sampler("multinomial", _check_sampler_n(n), _check_probs(probs))


def dirichlet_multinomial_sampler(n: int, alpha: Any) -> Callable:
    """``sampler(key, shape)`` drawing Dirichlet-multinomial(n, alpha) matrices."""
    return _Sampler("dirichlet", _check_sampler_n(n), _check_alpha(alpha))


def subsample_sampler(cm: Any, n: int) -> Callable:
    """``sampler(key, shape)`` drawing n rows without replacement from a group with counts ``cm``."""
    c = _check_cm(cm)
    n = _check_n(n)
    if n > sum(c):
        raise ValueError(f"n: cannot draw {n} rows without replacement from {sum(c)} rows.")
    return _Sampler("hypergeom", n, c)


def pair_sampler(sampler_i: Callable, sampler_j: Callable) -> Callable:
    """``sampler(key, shape) -> (*shape, 2, 4)``: two independent groups (i first).

    Use with :func:`pair_statistic` for two-group metrics such as OFI.
    """
    return _PairSampler(sampler_i, sampler_j)


def pair_statistic(metric: Callable = _ofi) -> Callable:
    """Turn ``metric(cm_i, cm_j)`` (default :func:`ofijax.ofi`) into a statistic of (..., 2, 4)."""
    return _PairStatistic(metric)
