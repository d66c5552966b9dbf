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
    covariance of two coordinates is the Dirichlet's −α_i α_j / (α₀² (α₀ + 1)) (same α and
    program as the first marginals test)."""
    alpha = (4.0, 1.0, 2.0, 3.0)
    rows = 1 << 16
    p = np.asarray(S.dirichlet(jax.random.key(6), alpha, rows), np.float64)
    a0 = 10.0
    for i, j in ((0, 1), (2, 3)):
        cov = np.cov(p[:, i], p[:, j])[0, 1]
        exact = -alpha[i] * alpha[j] / (a0**2 * (a0 + 1))
        vi, vj = (alpha[c] * (a0 - alpha[c]) / (a0**2 * (a0 + 1)) for c in (i, j))
        assert abs(cov - exact) < 5 * math.sqrt((vi * vj + exact**2) / rows), (i, j)


def test_cos_sin_turn_against_numpy():
    """The Box–Muller angle's cos/sin polynomials against NumPy's float64 cos/sin on 2^16 words
    (every quadrant) and the four exact quadrant starts."""
    w = np.random.default_rng(8).integers(0, 2**32, size=1 << 16, dtype=np.uint64).astype(np.uint32)
    w = np.concatenate([w, np.array([0, 1 << 30, 2 << 30, 3 << 30], np.uint32)])
    c, s = (np.asarray(x, np.float64) for x in S._cos_sin_turn(jax.numpy.asarray(w)))
    t = (w >> 8).astype(np.float64) * 2.0**-24
    assert np.abs(c - np.cos(2 * np.pi * t)).max() < 2.5e-7
    assert np.abs(s - np.sin(2 * np.pi * t)).max() < 2.5e-7
    assert c[-4:].tolist() == [1, 0, -1, 0] and s[-4:].tolist() == [0, 1, 0, -1]
