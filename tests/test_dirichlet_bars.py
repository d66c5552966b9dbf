"""Dirichlet-multinomial at integer α by stars and bars (``_sampling.dirichlet_bars``, #41).

Laws against independent references: the whole-matrix PMF Π Γ(x_c + α_c)/(x_c! Γ(α_c)) ·
n! Γ(A)/Γ(n + A) by chi-square at small n, scipy.stats.betabinom marginals and the exact
covariances at n above the tables; the sorting network against sorted(); the route of the
public sampler.
"""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest
from scipy import stats
from test_distributions_sampling import chi2_check, dm_prob
from test_samplers_speed import _chi2_pvalue

from ofijax import distributions as D
from ofijax.distributions import _sampling as S


@pytest.mark.parametrize("K", range(1, 16))
def test_sorting_network_sorts(K):
    """Every 0/1 input sorted (the 0-1 principle: then every input is sorted), K ≤ 15."""
    net = S._sorting_network(K)
    for bits in itertools.product((0, 1), repeat=K):
        v = list(bits)
        for i, j in net:
            v[i], v[j] = min(v[i], v[j]), max(v[i], v[j])
        assert v == sorted(bits)


@pytest.mark.parametrize("alpha,n", [((2, 1, 1, 3), 6), ((1, 3, 1, 1), 5)])
def test_whole_matrix_law_small_n(alpha, n):
    """Every matrix of M(n) at its exact Dirichlet-multinomial probability (many repeated
    positions at this n, so the refill rounds are exercised)."""
    cms = np.asarray(S.dirichlet_bars(jax.random.key(3), n, alpha, (1 << 15,)))
    chi2_check(cms, n, dm_prob(alpha))


def test_ones_is_the_uniform_stars_and_bars():
    """α = (1, 1, 1, 1) draws the uniform sampler's matrices (one implementation)."""
    key = jax.random.key(4)
    a = np.asarray(S.dirichlet_bars(key, 300, (1, 1, 1, 1), (1000,)))
    assert np.array_equal(a, np.asarray(D.sample_uniform(key, 300, (1000,))))


def test_large_n_marginals_and_covariance():
    """n = 3000, α = (4, 1, 2, 3) through the public sampler: each cell ~ BetaBinomial(n, α_c,
    A − α_c) (chi-square over its values) and Cov(X_i, X_j) = −n a_i a_j (n + A)/(1 + A)."""
    n, alpha, num = 3000, (4, 1, 2, 3), 1 << 16
    cms = np.asarray(D.sample_dirichlet_multinomial(jax.random.key(5), n, alpha, (num,)))
    assert cms.dtype == np.int32 and (cms >= 0).all() and (cms.sum(-1) == n).all()
    A = sum(alpha)
    for c in range(4):
        pmf = stats.betabinom(n, alpha[c], A - alpha[c]).pmf(np.arange(n + 1))
        assert _chi2_pvalue(np.bincount(cms[:, c], minlength=n + 1), pmf, num) > 1e-5, c
    a = np.asarray(alpha) / A
    x = cms.astype(np.float64)
    for i, j in ((0, 1), (0, 2), (1, 3), (2, 3)):
        exact = -n * a[i] * a[j] * (n + A) / (1 + A)
        vi, vj = (n * a[c] * (1 - a[c]) * (n + A) / (1 + A) for c in (i, j))
        assert abs(np.cov(x[:, i], x[:, j])[0, 1] - exact) < 5 * math.sqrt((vi * vj + exact**2) / num)


def test_route():
    """Integer α with Σα ≤ 16 above n = 255 take the bars (same draws); n ≤ 255, fractional α
    and Σα > 16 do not."""
    key = jax.random.key(6)
    bars = np.asarray(S.dirichlet_bars(key, 256, (2, 1, 2, 3), (64,)))
    assert np.array_equal(np.asarray(D.sample_dirichlet_multinomial(key, 256, [2, 1, 2, 3], (64,))), bars)
    assert S.bars_fit((4.0, 1.0, 2.0, 3.0)) and S.bars_fit((1, 1, 1, 13))
    assert not S.bars_fit((4.5, 1, 2, 3)) and not S.bars_fit((1, 1, 1, 14))
    assert not S.bars_fit((0.5, 1, 1, 1))
