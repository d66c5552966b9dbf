"""A two-sided OFI threshold under an explicit null, next to the paper's fixed 0.3.

Owns :class:`Threshold`, :func:`ofi_threshold` (the level-quantile of |OFI| from the exact PMF or
by Monte Carlo) and ``PAPER_THRESHOLD``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as _v
from ofijax.metrics import ofi as _ofi

from ._args import check_n as _check_n
from ._args import check_num_samples as _check_num_samples
from ._args import one_null_probs as _null_probs
from ._exact import marginal_benefit_moments, ofi_pmf
from ._reduce import monte_carlo
from ._samplers import multinomial_sampler, pair_sampler, uniform_sampler

#: The OFI paper's fixed flag threshold (≈ σ of B for ONE group under the uniform null).
PAPER_THRESHOLD = 0.3
#: Slack of the exact CDF comparison with the level (float64 sums of the PMF).
_CDF_SLACK = 1e-12
#: Monte Carlo thresholds use the exact lattice 1/lcm(n_i, n_j) while it has at most this many
#: points in [0, 2] (histogram slots per chunk); above it, a histogram of _MC_BINS bins.
_LATTICE_MAX_POINTS = 200_001
_MC_BINS = 8000


class Threshold(NamedTuple):
    """A two-sided OFI threshold under an explicit null.

    Attributes:
        threshold: t with P(|OFI| ≤ t) ≥ level under the null (smallest such support point for
            ``method="exact"``; for ``"monte_carlo"`` the same inverse CDF of the draws on the
            lattice 1/lcm(n_i, n_j), or a histogram quantile when that lattice has over 2e5 points).
        level: the two-sided level.
        sigma_ofi: σ of OFI under the null (√(Var B_i + Var B_j)).
        sigma_b_i: σ of B for group i alone (what the paper's 0.3 approximates, n → ∞).
        sigma_b_j: σ of B for group j alone.
        paper_threshold: the paper's fixed 0.3, for comparison.
        method: "exact" or "monte_carlo".
        null: "uniform" or the multinomial probabilities used.
    """

    threshold: float
    level: float
    sigma_ofi: float
    sigma_b_i: float
    sigma_b_j: float
    paper_threshold: float
    method: str
    null: Any


def ofi_threshold(
    n_i: int,
    n_j: int,
    *,
    null: Any = "uniform",
    level: float = 0.95,
    method: str = "exact",
    key: jax.Array | None = None,
    num_samples: int = 1_000_000,
) -> Threshold:
    r"""Two-sided threshold for |OFI| at ``level`` under an explicit null, next to the paper's 0.3.

    The paper flags |OFI| > 0.3 and motivates 0.3 as "the standard deviation". That number is
    σ of B **for one group** under the uniform null, σ(B; n) = √((n + 4)/(10 n)) → 1/√10 ≈ 0.316
    (Theorem D.2). OFI = B_i − B_j is a difference of two independent B's, so under the same null
    σ(OFI) = √(σ²(B; n_i) + σ²(B; n_j)) → √(2/10) ≈ 0.447: ±0.3 is not a 1σ band for OFI, and
    about half of all pairs of uniformly random classifiers exceed it. This function returns the
    level-quantile of |OFI| under the null instead, with both σ's for reference. Under a
    multinomial null (a reference CM, e.g. the pooled data) B concentrates (σ ∝ 1/√n), so the
    threshold shrinks with group size, as the paper suggests for better-than-uniform classifiers.

    Args:
        n_i, n_j: group sizes.
        null: ``"uniform"`` or a reference CM (4 counts, TP, FN, FP, TN) → Multinomial(n, cm/Σcm).
        level: two-sided level, e.g. 0.95 → P(|OFI| ≤ threshold) ≥ 0.95.
        method: ``"exact"`` (convolution PMF) or ``"monte_carlo"`` (needs ``key``).
        key: PRNG key for ``method="monte_carlo"``.
        num_samples: Monte Carlo draws.

    Example:
        >>> from ofijax.distributions import ofi_threshold
        >>> t = ofi_threshold(20, 20)
        >>> round(t.threshold, 4), round(t.sigma_ofi, 4), round(t.sigma_b_i, 4), t.paper_threshold
        (0.95, 0.4899, 0.3464, 0.3)
    """
    n_i, n_j = _check_n(n_i, "n_i"), _check_n(n_j, "n_j")
    lv = _v.check_fraction(level, "level")
    _v.check_choice(method, "method", ("exact", "monte_carlo"))
    p = _null_probs(null)
    mi = marginal_benefit_moments(n_i, p)
    mj = marginal_benefit_moments(n_j, p)
    s_i, s_j = math.sqrt(float(mi.var)), math.sqrt(float(mj.var))
    s_ofi = math.sqrt(float(mi.var) + float(mj.var))
    label = "uniform" if p is None else p
    if method == "exact":
        pmf = ofi_pmf(n_i, n_j, null=null)
        absnum = np.abs(pmf.numerators)
        uniq, inv = np.unique(absnum, return_inverse=True)
        cdf = np.cumsum(np.bincount(inv, weights=pmf.probs, minlength=uniq.size))
        j = int(np.searchsorted(cdf, lv - _CDF_SLACK, side="left"))
        t = float(uniq[min(j, uniq.size - 1)] / pmf.denominator)
        return Threshold(t, lv, s_ofi, s_i, s_j, PAPER_THRESHOLD, method, label)
    if key is None:
        raise ValueError("key: method='monte_carlo' needs a PRNG key, e.g. jax.random.key(0).")
    num = _check_num_samples(num_samples)
    if p is None:
        si, sj = uniform_sampler(n_i), uniform_sampler(n_j)
    else:
        si, sj = multinomial_sampler(n_i, p), multinomial_sampler(n_j, p)
    lcm = math.lcm(n_i, n_j)
    lat = lcm if 2 * lcm + 1 <= _LATTICE_MAX_POINTS else None  # exact inverse CDF on the lattice
    summ = monte_carlo(
        key, _AbsOfi(), pair_sampler(si, sj), num, bins=_MC_BINS, range=(0.0, 2.0), quantiles=(lv,),
        lattice=lat,
    )
    return Threshold(float(summ.quantiles[0]), lv, s_ofi, s_i, s_j, PAPER_THRESHOLD, method, label)


@dataclass(frozen=True)
class _AbsOfi:
    def __call__(self, cms):
        return jnp.abs(_ofi(cms[..., 0, :], cms[..., 1, :]))
