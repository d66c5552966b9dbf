"""The fast exact binomial sampler (BTRS + inversion) and the two-stage multinomial (#41).

Laws checked against independent references: scipy.stats.binom / scipy.stats.multinomial PMFs
(chi-square over every value with enough expected mass, the rest pooled) and exact moments at
large n. Internals are the point here (``distributions._samplers.binomial``, ``multinomial_cms``).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import stats

from ofijax import distributions as D
from ofijax.distributions import _samplers as S

DRAWS = 1 << 17


def _chi2_pvalue(obs: np.ndarray, pmf: np.ndarray, total: int) -> float:
    """Chi-square goodness of fit; cells with expected count < 5 are pooled into one."""
    exp = pmf * total
    small = exp < 5
    o = np.append(obs[~small], obs[small].sum())
    e = np.append(exp[~small], exp[small].sum())
    if e[-1] == 0:
        o, e = o[:-1], e[:-1]
    assert abs(o.sum() - total) == 0
    chi2 = float(((o - e) ** 2 / e).sum())
    return float(stats.chi2.sf(chi2, len(e) - 1))


@pytest.fixture(scope="module")
def binomial_fn():
    return jax.jit(S.binomial, static_argnums=(3,))


def test_binomial_overflow_pools(monkeypatch):
    """A first BTRS pool of 64 slots (BTRS_POOL patched): nearly all rejected slots finish in
    the smaller pools after it (BTRS_POOL_LAST, several rounds); the law still matches scipy."""
    monkeypatch.setattr(S, "BTRS_POOL", 1 << 20)
    fn = jax.jit(S.binomial, static_argnums=(3,))  # traced with the patch
    for n, p in ((200, 0.3), (100_000, 0.25)):
        x = np.asarray(fn(jax.random.key(n), np.full(DRAWS, n, np.int32), np.full(DRAWS, p), DRAWS))
        obs = np.bincount(x, minlength=n + 1)
        assert _chi2_pvalue(obs, stats.binom.pmf(np.arange(n + 1), n, p), DRAWS) > 1e-4, n


@pytest.mark.parametrize(
    "n,p",
    [(30, 0.4), (25, 0.45), (1000, 0.02), (5000, 0.001), (40, 0.9), (12, 0.5), (3, 0.999),
     (200, 0.3), (100_000, 0.25)],
)
def test_binomial_law(binomial_fn, n, p):
    """BTRS (n·min(p, 1 − p) ≥ 10) and inversion (below), both sides of ½, against scipy."""
    x = np.asarray(binomial_fn(jax.random.key(n), np.full(DRAWS, n, np.int32),
                               np.full(DRAWS, p), DRAWS))
    assert x.dtype == np.int32 and x.min() >= 0 and x.max() <= n
    lo, hi = int(stats.binom.ppf(1e-9, n, p)), int(stats.binom.isf(1e-9, n, p))
    assert lo <= x.min() and x.max() <= hi + 1  # nothing far outside the support's bulk
    ks = np.arange(0, n + 1)
    obs = np.bincount(x, minlength=n + 1)
    assert _chi2_pvalue(obs, stats.binom.pmf(ks, n, p), DRAWS) > 1e-4


def test_binomial_mixed_parameters_one_call(binomial_fn):
    """Per-slot n and p (both branches, flips and degenerate p = 0, 1 in one call)."""
    n = np.array([0, 7, 50, 50, 3000, 3000, 9, 2_000_000], np.int32)
    p = np.array([0.5, 0.0, 1.0, 0.5, 0.001, 0.7, 0.3, 0.5])
    reps = 1 << 14
    nn, pp = np.tile(n, reps), np.tile(p, reps)
    x = np.asarray(binomial_fn(jax.random.key(3), nn, pp, nn.size)).reshape(reps, n.size)
    assert (x[:, 0] == 0).all() and (x[:, 1] == 0).all() and (x[:, 2] == 50).all()
    for j in range(3, n.size):
        mean, var = n[j] * p[j], n[j] * p[j] * (1 - p[j])
        se = math.sqrt(var / reps)
        assert abs(x[:, j].mean() - mean) < 5 * se, (n[j], p[j])
        assert abs(x[:, j].var() / var - 1) < 5 * math.sqrt(2 / reps) + 0.01, (n[j], p[j])
    obs = np.bincount(x[:, 3], minlength=51)  # Bin(50, ½): chi-square as well
    assert _chi2_pvalue(obs, stats.binom.pmf(np.arange(51), 50, 0.5), reps) > 1e-4


@pytest.fixture(scope="module")
def multinomial_fn():
    return jax.jit(S.multinomial_cms, static_argnums=(3,))


@pytest.mark.parametrize("probs", [(0.4, 0.1, 0.2, 0.3), (0.001, 0.5, 0.3, 0.199),
                                   (0.7, 0.0, 0.25, 0.05)])
def test_multinomial_cms_law_small_n(multinomial_fn, probs):
    """Every matrix of M(n) against scipy.stats.multinomial (n = 12 and 60)."""
    f = multinomial_fn
    for n in (12, 60):
        cms = np.asarray(f(jax.random.key(n), np.int32(n), np.asarray(probs), DRAWS))
        assert (cms.sum(-1) == n).all() and (cms >= 0).all()
        grid = np.array([(a, b, c, n - a - b - c) for a in range(n + 1)
                         for b in range(n + 1 - a) for c in range(n + 1 - a - b)])
        index = {tuple(r): i for i, r in enumerate(grid)}
        obs = np.bincount([index[tuple(r)] for r in cms], minlength=len(grid))
        pmf = stats.multinomial.pmf(grid, n, probs)
        assert _chi2_pvalue(obs, pmf, DRAWS) > 1e-4, (n, probs)


def test_multinomial_large_n_exact_moments(multinomial_fn):
    """Means, variances and covariances of the four cells over 2^20 draws at n = 10^6; the
    same compiled program as every other n and p above (n and p are traced)."""
    n, p = 1_000_000, np.array([0.4, 0.1, 0.2, 0.3])
    multinomial_fn(jax.random.key(99), np.int32(5), p[::-1].copy(), DRAWS)  # another n and p
    before = multinomial_fn._cache_size()  # (the jit cache is shared with other jax.jit wrappers
    # of multinomial_cms in this process: count what this n and p add, not the total)
    cms = np.concatenate([np.asarray(multinomial_fn(jax.random.key(100 + i), np.int32(n), p, DRAWS))
                          for i in range(8)]).astype(np.float64)
    num = len(cms)
    assert (cms.sum(-1) == n).all()
    var = n * p * (1 - p)
    assert np.all(np.abs(cms.mean(0) - n * p) < 5 * np.sqrt(var / num))
    assert np.all(np.abs(cms.var(0) / var - 1) < 5 * math.sqrt(2 / num))
    cov = np.cov(cms.T)
    for i, j in ((0, 1), (0, 2), (1, 3), (2, 3)):  # Cov = −n p_i p_j
        exact = -n * p[i] * p[j]
        se = math.sqrt((var[i] * var[j] + exact**2) / num)
        assert abs(cov[i, j] - exact) < 5 * se, (i, j)
    assert multinomial_fn._cache_size() == before  # one program for every n and p


def _chain(key, n, alpha, num):
    """The general Dirichlet-multinomial path above the tables (Dirichlet probabilities, then the
    binomial stages), called directly as the public function does for non-integer alpha."""
    with jax.enable_x64(True):
        return np.asarray(S._dirichlet_chain(key, np.int32(n), tuple(map(float, alpha)), num))


def test_dirichlet_multinomial_large_n_is_uniform():
    """alpha = 1 is uniform on M(n): E B = 0 and Var B = (n + 4)/(10 n) at n = 3000, through the
    general path (the public function takes stars and bars for integer alpha)."""
    n, num = 3000, 1 << 12
    cms = _chain(jax.random.key(2), n, (1, 1, 1, 1), num)
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all()
    b = (cms[:, 2] - cms[:, 1]) / n
    var = (n + 4) / (10 * n)
    assert abs(b.mean()) < 5 * math.sqrt(var / num)
    assert abs(b.var() / var - 1) < 5 * math.sqrt(2 / num) + 0.05


def test_dirichlet_multinomial_large_n_moments():
    """n = 3000 (above the tables), non-integer α = (4.5, 1.5, 2.5, 3.5) through the public
    function (so the general path): E X_c = n a_c and Var X_c = n a_c (1 − a_c)(n + α₀)/(1 + α₀),
    a = α/α₀, for every cell."""
    n, num, alpha = 3000, 1 << 12, np.array([4.5, 1.5, 2.5, 3.5])
    cms = np.asarray(D.sample_dirichlet_multinomial(jax.random.key(7), n, alpha, (num,)))
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all() and (cms >= 0).all()
    a0 = alpha.sum()
    a = alpha / a0
    var = n * a * (1 - a) * (n + a0) / (1 + a0)
    x = cms.astype(np.float64)
    assert np.all(np.abs(x.mean(0) - n * a) < 5 * np.sqrt(var / num))
    # the sample variance's relative s.e. is √((κ − 1)/num), κ ≈ the Beta marginal's kurtosis
    kurt = np.array([float(stats.beta(c, a0 - c).stats(moments="k")) + 3 for c in alpha])
    assert np.all(np.abs(x.var(0) / var - 1) < 5 * np.sqrt((kurt - 1) / num) + 0.01)


def test_binomial_few_small_means_pooled(binomial_fn):
    """Slots with n·p < 10 among BTRS slots: 1/16 of them (inverted in one compacted pool) and
    1/4 (more than a pool holds: two pools), both against scipy.stats.binom."""
    n, size = 100_000, DRAWS
    for every, p_small in ((16, 3e-5), (4, 8e-5)):
        small = np.arange(size) % every == 0
        p = np.where(small, p_small, 0.3)
        assert (small.sum() <= size // S.INVERSION_POOL + 64) == (every == 16)  # one pool, two
        x = np.asarray(binomial_fn(jax.random.key(every), np.full(size, n, np.int32), p, size))
        for sel, q in ((small, p_small), (~small, 0.3)):
            xs = x[sel]
            ks = np.arange(xs.min(), xs.max() + 1)
            pmf = stats.binom.pmf(ks, n, q)
            pmf[0] += stats.binom.cdf(xs.min() - 1, n, q)
            pmf[-1] += stats.binom.sf(xs.max(), n, q)
            assert _chi2_pvalue(np.bincount(xs - xs.min()), pmf, sel.sum()) > 1e-4, (every, q)


def test_eager_metrics_chunked_transfer_same_values_and_errors():
    """Above 2^18 rows the eager path moves the counts in blocks: same float64 values as NumPy's
    exact division, same error for a bad row in a later block, any leading shape."""
    import ofijax

    rng = np.random.default_rng(4)
    rows = (1 << 18) * 2 + 12_345
    a = rng.integers(0, 1000, size=(rows, 4))
    a[a.sum(1) == 0] = 1
    b = rng.integers(1, 1000, size=(rows, 4)).astype(np.uint16)
    ba = (a[:, 2] - a[:, 1]) / a.sum(1)
    bb = (b[:, 2].astype(np.int64) - b[:, 1]) / b.sum(1, dtype=np.int64)
    got = ofijax.marginal_benefit(a)
    assert got.dtype == np.float64 and got.shape == (rows,) and np.array_equal(np.asarray(got), ba)
    assert np.array_equal(np.asarray(ofijax.ofi(a, b)), ba - bb)
    a3 = a[: 3 * 100_000].reshape(3, 100_000, 4)
    assert np.array_equal(np.asarray(ofijax.marginal_benefit(a3)), ba[: 3 * 100_000].reshape(3, -1))
    bad = a.copy()
    bad[rows - 5] = 0
    with pytest.raises(ValueError, match=rf"^cm: a confusion matrix has n = 0 \(at index \({rows - 5},\)\)"):
        ofijax.marginal_benefit(bad)
    bad[rows - 5] = [-1, 0, 0, 2]
    with pytest.raises(ValueError, match="^cm_j: counts must be non-negative"):
        ofijax.ofi(a, bad)


def test_pair_of_equal_multinomial_samplers_one_call():
    """Two equal multinomial samplers above the tables draw both groups in one chain call:
    independent groups (OFI's exact mean and variance, no correlation between the groups)."""
    p = [0.4, 0.1, 0.2, 0.3]
    s = D.pair_sampler(D.multinomial_sampler(600, p), D.multinomial_sampler(600, p))
    x = np.asarray(s(jax.random.key(0), (4096,)))
    assert x.shape == (4096, 2, 4) and (x.sum(-1) == 600).all()
    assert abs(np.corrcoef(x[:, 0, 0], x[:, 1, 0])[0, 1]) < 5 / math.sqrt(4096)
    ofi = (x[:, 0, 2] - x[:, 0, 1] - x[:, 1, 2] + x[:, 1, 1]) / 600
    m = D.ofi_moments(600, 600, null=p)
    assert abs(ofi.mean() - float(m.mean)) < 5 * math.sqrt(float(m.var) / 4096)
    assert abs(ofi.var() / float(m.var) - 1) < 5 * math.sqrt(2 / 4096)
