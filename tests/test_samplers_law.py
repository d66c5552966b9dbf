"""Laws of the samplers' round-2 pieces (#41 item 2) against independent references.

The Dirichlet probabilities above the tables (``distributions._gammas.dirichlet``: Marsaglia–
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
from test_samplers_speed import _chi2_pvalue  # one goodness-of-fit helper

from ofijax import distributions as D
from ofijax.distributions import _alias as A
from ofijax.distributions import _gammas as G
from ofijax.distributions import _samplers as S
from ofijax.distributions import _sampling as SS


@pytest.mark.parametrize("alpha", [(4.0, 1.0, 2.0, 3.0), (0.3, 1.0, 0.5, 7.5)])
def test_dirichlet_marginals_are_beta(alpha):
    """Each p_c ~ Beta(α_c, α₀ − α_c) (α < 1 through the boost), rows sum to 1, none NaN."""
    rows = 1 << 16
    p = np.asarray(G.dirichlet(jax.random.key(5), alpha, rows), np.float64)
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
    p = np.asarray(G.dirichlet(jax.random.key(6), alpha, rows), np.float64)
    a0 = 10.0
    for i, j in ((0, 1), (2, 3)):
        cov = np.cov(p[:, i], p[:, j])[0, 1]
        exact = -alpha[i] * alpha[j] / (a0**2 * (a0 + 1))
        vi, vj = (alpha[c] * (a0 - alpha[c]) / (a0**2 * (a0 + 1)) for c in (i, j))
        assert abs(cov - exact) < 5 * math.sqrt((vi * vj + exact**2) / rows), (i, j)


#: One program for the general Dirichlet-multinomial tests below (alpha and rows are static; n is
#: traced): small components, so n·p < 10 in many slots (one or several inversion pools)
#: next to BTRS slots, and α < 1 (the gamma boost).
SMALL_ALPHA = (0.3, 1.0, 0.5, 7.5)
DM_ROWS = 1 << 16


def _dm_chain(key, n):
    with jax.enable_x64(True):
        return np.asarray(S._dirichlet_chain(key, np.int32(n), SMALL_ALPHA, DM_ROWS))


def test_dirichlet_chain_whole_law_small_n():
    """Every matrix of M(40) against scipy.stats.dirichlet_multinomial (chi-square), through the
    general path called directly (mostly inversion at this n)."""
    n = 40
    cms = _dm_chain(jax.random.key(11), n)
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all() and (cms >= 0).all()
    assert _whole_law_pvalue(cms, n) > 1e-4


def _whole_law_pvalue(cms, n):
    """Chi-square p-value of DM_ROWS matrices of M(n) against
    scipy.stats.dirichlet_multinomial(SMALL_ALPHA), one cell per matrix."""
    grid = np.array([(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a)
                     for c in range(n + 1 - a - b)])
    pmf = stats.dirichlet_multinomial.pmf(grid, SMALL_ALPHA, n)
    assert abs(pmf.sum() - 1) < 1e-9
    rank = {tuple(r): i for i, r in enumerate(grid.tolist())}
    obs = np.bincount([rank[tuple(r)] for r in cms.tolist()], minlength=len(grid))
    return _chi2_pvalue(obs, pmf, DM_ROWS)


@pytest.mark.parametrize("n", [3000, 100_000])
def test_dirichlet_chain_marginals_are_beta_binomial(n):
    """Each cell X_c ~ BetaBinomial(n, α_c, α₀ − α_c) (chi-square against scipy.stats.betabinom)
    and FN | TP ~ BetaBinomial(n − TP, α_FN, α_FP + α_TN) on the rows with TP = 0 (the most
    common value); BTRS and inversion slots mix at these n."""
    cms = _dm_chain(jax.random.key(n), n)
    assert (cms.sum(-1) == n).all() and (cms >= 0).all()
    a = np.asarray(SMALL_ALPHA)
    for c in range(4):
        law = stats.betabinom(n, a[c], a.sum() - a[c])
        assert _binned_pvalue(cms[:, c], law) > 1e-4, c
    fn = cms[cms[:, 0] == 0, 1]
    assert len(fn) > 1000
    assert _binned_pvalue(fn, stats.betabinom(n, a[1], a[2] + a[3])) > 1e-4


def _binned_pvalue(x, law, bins=64):
    """Chi-square of integer draws against a discrete scipy law on 0..n in ~``bins`` bins of
    equal mass (edges at its quantiles, from its whole PMF; bin i holds (e_{i−1}, e_i])."""
    cdf = np.cumsum(law.pmf(np.arange(law.support()[1] + 1)))
    edges = np.unique(np.searchsorted(cdf, np.linspace(0, 1, bins + 1)[1:-1]))
    pmf = np.diff(np.concatenate([[0.0], cdf[edges], [1.0]]))
    obs = np.bincount(np.searchsorted(edges, x, side="left"), minlength=len(pmf))
    return _chi2_pvalue(obs, pmf, len(x))


def test_dirichlet_shortfall_rows_are_filled(monkeypatch):
    """With only 64 extra rows, most rejected rows are made up by the refill pools (several
    rounds at α = 1, ~18 % of rows rejected): Beta marginals (Kolmogorov–Smirnov) and the
    Dirichlet's covariance still hold."""
    monkeypatch.setattr(G, "GAMMA_EXTRA", 1 << 30)
    alpha, rows = (0.7, 1.0, 1.0, 3.0), 30_001  # a size of its own: traced with the patch
    p = np.asarray(G.dirichlet(jax.random.key(12), alpha, rows), np.float64)
    assert p.shape == (rows, 4) and np.isfinite(p).all() and np.abs(p.sum(1) - 1).max() < 1e-6
    a = np.asarray(alpha)
    a0 = a.sum()
    for c in range(4):
        assert stats.kstest(p[:, c], stats.beta(a[c], a0 - a[c]).cdf).pvalue > 1e-4, c
    cov = np.cov(p[:, 0], p[:, 3])[0, 1]
    exact = -a[0] * a[3] / (a0**2 * (a0 + 1))
    v0, v3 = (a[c] * (a0 - a[c]) / (a0**2 * (a0 + 1)) for c in (0, 3))
    assert abs(cov - exact) < 5 * math.sqrt((v0 * v3 + exact**2) / rows)


def test_compact_by_cumsum_matches_numpy():
    """_sampling.compact (cumsum rank) lists the first ``pool`` set indices in order, padded
    with len(mask), as NumPy's flatnonzero does (empty, sparse, dense and full masks)."""
    rng = np.random.default_rng(13)
    for size in (1000, 1 << 14):
        for frac in (0.0, 0.01, 0.13, 0.5, 1.0):
            mask = rng.random(size) < frac
            for pool in (64, size // 8 + 64, size):
                want = np.full(pool, size)
                idx = np.flatnonzero(mask)[:pool]
                want[: len(idx)] = idx
                assert np.array_equal(np.asarray(SS.compact(jax.numpy.asarray(mask), pool)), want)


def test_cos_sin_turn_against_numpy():
    """The Box–Muller angle's cos/sin polynomials against NumPy's float64 cos/sin on 2^16 words
    (every quadrant) and the four exact quadrant starts."""
    w = np.random.default_rng(8).integers(0, 2**32, size=1 << 16, dtype=np.uint64).astype(np.uint32)
    w = np.concatenate([w, np.array([0, 1 << 30, 2 << 30, 3 << 30], np.uint32)])
    c, s = (np.asarray(x, np.float64) for x in G._cos_sin_turn(jax.numpy.asarray(w)))
    t = (w >> 8).astype(np.float64) * 2.0**-24
    assert np.abs(c - np.cos(2 * np.pi * t)).max() < 2.5e-7
    assert np.abs(s - np.sin(2 * np.pi * t)).max() < 2.5e-7
    assert c[-4:].tolist() == [1, 0, -1, 0] and s[-4:].tolist() == [0, 1, 0, -1]


# ----------------------------------------------- table lookups of the multinomial (round 3)

from ofijax.distributions import _bintables as B  # noqa: E402

DRAWS = 1 << 17


@jax.jit
def _window(n, p):
    with jax.enable_x64(True):
        lo = B.window_lo(n, p, B.WINDOW)
        counts = B.window_counts(B.window_pmf(n, p, lo, B.WINDOW))
        return lo, counts, B.condensed_table(counts)


@jax.jit
def _window_draws(key, n, p):
    with jax.enable_x64(True):
        lo, _, tab = _window(n, p)
        return lo + B.condensed_draw(tab, S._S.random_bits(key, (DRAWS,)))


@pytest.mark.parametrize("n,p", [(300, 0.3), (5000, 0.5), (1_000_000, 0.2), (1_000_000, 0.5)])
def test_window_probabilities_against_scipy(n, p):
    """The window's integer probabilities c_j / 2^32 are within 2^-32 (+ float64 error) of
    scipy.stats.binom.pmf, sum to 2^32 exactly, and the window holds all but 2e-12 of the mass."""
    with jax.enable_x64(True):
        lo, counts, _ = _window(np.int32(n), np.float64(p))
    lo, c = int(lo), np.asarray(counts, np.int64)
    assert c.sum() == 2**32 and (c >= 0).all()
    k = lo + np.arange(B.WINDOW)
    pmf = stats.binom.pmf(k, n, p)
    assert np.abs(c / 2**32 - pmf).max() < 2.0**-32 + 1e-12
    assert stats.binom.cdf(lo - 1, n, p) + stats.binom.sf(lo + B.WINDOW - 1, n, p) < B.LEFT_OUT


@pytest.mark.parametrize("n,p", [(300, 0.3), (5000, 0.5), (1_000_000, 0.2)])
def test_condensed_table_maps_exactly_c_words_to_each_value(n, p):
    """Walking the table level by level: value j receives exactly c_j of the 2^32 words (the
    lookup's law is the integer probabilities, nothing lost or doubled)."""
    with jax.enable_x64(True):
        _, counts, (table, bounds, offsets, shifts) = _window(np.int32(n), np.float64(p))
    c = np.asarray(counts, np.int64)
    table, bounds = np.asarray(table, np.int64), np.asarray(bounds, np.int64)
    offsets, shifts = np.asarray(offsets), np.asarray(shifts)
    got = np.zeros(B.WINDOW, np.int64)
    prev = 0
    for i in range(len(bounds)):
        used = (int(bounds[i]) - prev) >> int(shifts[i])
        assert used << int(shifts[i]) == int(bounds[i]) - prev
        part = table[offsets[i]: offsets[i] + used]
        got += np.bincount(part, minlength=B.WINDOW) << int(shifts[i])
        prev = int(bounds[i])
    assert prev == 2**32 and np.array_equal(got, c)


@pytest.mark.parametrize("n,p", [(300, 0.3), (5000, 0.5), (1_000_000, 0.2)])
def test_window_draws_are_binomial(n, p):
    """Draws of the window table (one word each) against scipy.stats.binom (chi-square)."""
    with jax.enable_x64(True):
        x = np.asarray(_window_draws(jax.random.key(n), np.int32(n), np.float64(p)))
    lo, hi = int(stats.binom.ppf(1e-9, n, p)), int(stats.binom.isf(1e-9, n, p))
    assert lo <= x.min() and x.max() <= hi + 1
    ks = np.arange(x.min(), x.max() + 1)
    obs = np.bincount(x - x.min())
    pmf = stats.binom.pmf(ks, n, p)
    pmf[0] += stats.binom.cdf(x.min() - 1, n, p)
    pmf[-1] += stats.binom.sf(x.max(), n, p)
    assert _chi2_pvalue(obs, pmf, DRAWS) > 1e-4


@pytest.fixture(scope="module")
def tables_fn():
    """multinomial_cms on the table path (one program for every n and p)."""
    return jax.jit(S.multinomial_cms, static_argnums=(3, 4))


@pytest.mark.parametrize("n", [300, 10_000, 1_000_000])
def test_table_multinomial_marginals_are_binomial(tables_fn, n):
    """Each cell of the table path (P = A + 128 h + r decomposition) is Bin(n, p_c) against
    scipy.stats.binom (chi-square), and (TP, FN) against scipy.stats.multinomial at n = 300."""
    p = np.array([0.4, 0.1, 0.2, 0.3])
    assert B.table_multinomial_fits(n, p)
    cms = np.asarray(tables_fn(jax.random.key(n + 1), np.int32(n), p, DRAWS, True))
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all() and (cms >= 0).all()
    for c in range(4):
        x = cms[:, c]
        ks = np.arange(x.min(), x.max() + 1)
        pmf = stats.binom.pmf(ks, n, p[c])
        pmf[0] += stats.binom.cdf(x.min() - 1, n, p[c])
        pmf[-1] += stats.binom.sf(x.max(), n, p[c])
        assert _chi2_pvalue(np.bincount(x - x.min()), pmf, DRAWS) > 1e-4, c
    if n == 300:
        a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        cells = np.column_stack([a.ravel(), b.ravel(), n - a.ravel() - b.ravel()])
        pmf = np.where(cells[:, 2] >= 0, stats.multinomial.pmf(np.maximum(cells, 0), n,
                                                               [p[0], p[1], p[2] + p[3]]), 0)
        obs = np.bincount(cms[:, 0] * (n + 1) + cms[:, 1], minlength=(n + 1) ** 2)
        assert _chi2_pvalue(obs, pmf, DRAWS) > 1e-4


def test_table_path_is_one_program_for_every_n_and_p(tables_fn):
    """n and p are traced: a sweep over sizes and probabilities compiles the table path once."""
    compiled = None
    for n, p in ((50, [0.1, 0.2, 0.3, 0.4]), (70_000, [0.25, 0.25, 0.25, 0.25]),
                 (1_100_000, [0.9, 0.05, 0.03, 0.02])):
        cms = np.asarray(tables_fn(jax.random.key(9), np.int32(n), np.asarray(p), DRAWS, True))
        assert (cms.sum(-1) == n).all()
        compiled = compiled or tables_fn._cache_size()
    assert tables_fn._cache_size() == compiled  # no program for the second and third sizes


def test_table_multinomial_degenerate_probabilities(tables_fn):
    """Zero probabilities give zero cells on the table path (flips on every side); the means
    are n p."""
    for p in ([0.7, 0.0, 0.25, 0.05], [0.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.0, 0.0],
              [0.0, 0.9, 0.1, 0.0]):
        p = np.asarray(p)
        assert B.table_multinomial_fits(5000, p)
        cms = np.asarray(tables_fn(jax.random.key(3), np.int32(5000), p, DRAWS, True))
        assert (cms.sum(-1) == 5000).all() and (cms[:, p == 0] == 0).all(), p
        se = np.sqrt(5000 * p * (1 - p) / DRAWS)
        assert np.all(np.abs(cms.mean(0) - 5000 * p) <= 5 * se), p


def test_row_windows_always_fit():
    """The rows of Bin(128 h, q) hold all but LEFT_OUT of their mass for every q (σ is largest at
    q = ½ and the largest h); n = 1.2e6 fits any p, 5e6 at p = ½ does not."""
    h = (B.WINDOW // B.ROW_SPLIT - 1) * B.ROW_SPLIT
    assert bool(B.fits(np.int64(h), 0.5, B.ROW_WINDOW, xp=np))
    assert B.table_multinomial_fits(1_200_000, [0.25, 0.25, 0.25, 0.25])
    assert B.table_multinomial_fits(1_200_000, [0.5, 0.0, 0.5, 0.0])
    assert not B.table_multinomial_fits(5_000_000, [0.25, 0.25, 0.25, 0.25])


def test_window_that_does_not_fit_goes_to_the_chain(monkeypatch):
    """With windows of 256 values, Bin(10⁴, ½) does not fit: sample_multinomial takes the exact
    BTRS chain (and so below 2^16 rows, or the inverse-CDF tables at n ≤ 250); at n = 300 the
    windows fit and it takes the lookups (the law on that small window: the slow test below)."""
    monkeypatch.setattr(B, "WINDOW", 256)
    p = np.array([0.4, 0.1, 0.2, 0.3])
    assert not B.table_multinomial_fits(10_000, p) and B.table_multinomial_fits(300, p)
    calls = []
    monkeypatch.setattr(S, "_binomial_chain", lambda key, n, p, shape, tables: calls.append(
        (int(n), shape, tables)) or np.zeros(shape + (4,), np.int32))
    rows = S.MULTINOMIAL_TABLE_MIN_ROWS
    for n, shape in ((10_000, (rows,)), (300, (rows,)), (300, (rows - 1,)), (100, (2, rows // 2)),
                     (100, (rows - 1,)), (S.MULTINOMIAL_LOOKUP_MIN_N, (rows,))):
        D.sample_multinomial(jax.random.key(0), n, p, shape)
    # n ≤ 250 below the lookups' rows or n: the inverse-CDF tables (no chain call)
    assert calls == [(10_000, (rows,), False), (300, (rows,), True), (300, (rows - 1,), False),
                     (100, (2, rows // 2), True)]


@pytest.mark.slow
def test_small_window_table_law(monkeypatch):
    """Windows of 256 values at n = 300: the table path's (P, TP) law matches scipy's
    (chi-square; every row and window in play). Slow tier: a program of its own (~4 s)."""
    monkeypatch.setattr(B, "WINDOW", 256)
    p = np.array([0.4, 0.1, 0.2, 0.3])
    rows = S.MULTINOMIAL_TABLE_MIN_ROWS
    n = 300
    assert B.table_multinomial_fits(n, p)
    f = jax.jit(S.multinomial_cms, static_argnums=(3, 4))
    cms = np.asarray(f(jax.random.key(5), np.int32(n), p, rows, True))
    pos, tp = cms[:, 0] + cms[:, 1], cms[:, 0]
    k = np.arange(n + 1)
    pmf = (stats.binom.pmf(k, n, 0.5)[:, None] * stats.binom.pmf(k[None, :], k[:, None], 0.8)).ravel()
    assert _chi2_pvalue(np.bincount(pos * (n + 1) + tp, minlength=(n + 1) ** 2), pmf, rows) > 1e-4


def _dm_table_chain(key, n, alpha=SMALL_ALPHA, rows=DM_ROWS):
    """The Dirichlet-multinomial with the positives' alias table (the public path for non-integer
    α at 2048 < n ≤ DM_POSITIVES_TABLE_MAX_N), called directly at any n."""
    a = tuple(map(float, alpha))
    table = A.betabinomial_table(n, a[0] + a[1], a[2] + a[3])
    with jax.enable_x64(True):
        return np.asarray(S._dirichlet_table_chain(key, np.int32(n), table, a, rows))


def test_dirichlet_table_chain_whole_law_small_n():
    """Every matrix of M(40) against scipy.stats.dirichlet_multinomial (chi-square) with the
    positives drawn from their beta-binomial table and TP | P, FP | n − P by the binomials."""
    n = 40
    cms = _dm_table_chain(jax.random.key(21), n)
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all() and (cms >= 0).all()
    assert _whole_law_pvalue(cms, n) > 1e-4


def test_dirichlet_table_chain_marginals_are_beta_binomial():
    """n = 3000 through the public function (non-integer α: the table path): each cell ~
    BetaBinomial(n, α_c, α₀ − α_c) and FN | TP = 0 ~ BetaBinomial(n, α_FN, α_FP + α_TN)."""
    n = 3000
    assert A.TABLE_MAX_N < n <= S.DM_POSITIVES_TABLE_MAX_N
    cms = np.asarray(D.sample_dirichlet_multinomial(jax.random.key(22), n, SMALL_ALPHA, (DM_ROWS,)))
    assert np.array_equal(cms, _dm_table_chain(jax.random.key(22), n))  # the same program
    a = np.asarray(SMALL_ALPHA)
    for c in range(4):
        assert _binned_pvalue(cms[:, c], stats.betabinom(n, a[c], a.sum() - a[c])) > 1e-4, c
    fn = cms[cms[:, 0] == 0, 1]
    assert len(fn) > 1000
    assert _binned_pvalue(fn, stats.betabinom(n, a[1], a[2] + a[3])) > 1e-4
