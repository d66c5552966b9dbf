"""Laws of the samplers' round-2 pieces (#41 item 2) against independent references.

The Dirichlet probabilities above the tables (``distributions._samplers.dirichlet``: Marsaglia–
Tsang gammas, float32) against scipy.stats.beta marginals (Kolmogorov–Smirnov) and the
Dirichlet's covariance (the Dirichlet-multinomial's moments at n > 2048 are tested in
test_samplers_speed.py, next to the binomial chain's program they share). Internals are the
point here.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import stats

from ofijax.distributions import _samplers as S


@pytest.mark.parametrize("alpha", [(4.0, 1.0, 2.0, 3.0), (0.3, 1.0, 0.5, 7.5)])
def test_dirichlet_marginals_are_beta(alpha):
    """Each p_c ~ Beta(α_c, α₀ − α_c) (α < 1 through the boost), rows sum to 1, none NaN."""
    rows = 1 << 16
    p = np.asarray(S.dirichlet(jax.random.key(5), alpha, rows), np.float64)
    assert p.shape == (rows, 4) and np.isfinite(p).all() and (p >= 0).all()
    assert np.abs(p.sum(1) - 1).max() < 1e-6
    a = np.asarray(alpha)
    for c in range(4):
        assert stats.kstest(p[:, c], stats.beta(a[c], a.sum() - a[c]).cdf).pvalue > 1e-4, c


def test_dirichlet_rows_are_redrawn_whole():
    """Both accepted and redrawn rows (about 1 % of rows need a redraw) keep the law: the
    covariance of two coordinates is the Dirichlet's −α_i α_j / (α₀² (α₀ + 1))."""
    alpha = (1.5, 1.5, 1.5, 1.5)
    rows = 1 << 16
    p = np.asarray(S.dirichlet(jax.random.key(6), alpha, rows), np.float64)
    a0 = 6.0
    cov = np.cov(p[:, 0], p[:, 1])[0, 1]
    exact = -1.5 * 1.5 / (a0**2 * (a0 + 1))
    var = 1.5 * 4.5 / (a0**2 * (a0 + 1))
    assert abs(cov - exact) < 5 * math.sqrt((var * var + exact**2) / rows)

