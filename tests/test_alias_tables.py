"""Conditional alias tables (``distributions._alias``, #41): the law each table encodes against
its PMF and against scipy.stats; draws by chi-square at an n where the rows are wide.

The law of a table is read off exactly: P(k) = (t_k + Σ_{j: a_j = k} (2^32 − t_j)) / (W 2^32).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy import stats
from test_samplers_speed import _chi2_pvalue

from ofijax.distributions import _alias as A


def _law(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact probabilities (R, W) a table encodes and, per value, 1 + its alias columns."""
    R, W, _ = table.shape
    t = table[..., 0].view(np.uint32).astype(np.float64) / 2.0**32
    a = table[..., 1]
    law, hits = t / W, np.ones((R, W))
    for r in range(R):
        np.add.at(law[r], a[r], (1 - t[r]) / W)
        np.add.at(hits[r], a[r], 1)
    return law, hits


@pytest.mark.parametrize("W", [1, 2, 7, 100, 1000])
def test_alias_rows_encode_their_pmf(W):
    """Random rows (Dirichlet, some with zeros, a point mass): every probability within
    (1 + its alias columns) · 2^-33 / W plus float64 drift; thresholds and aliases in range."""
    rng = np.random.default_rng(W)
    pmf = rng.dirichlet(np.full(W, 0.3), size=6)
    pmf[1, : W // 2] = 0
    pmf[1] /= pmf[1].sum()
    pmf[2] = 0
    pmf[2, W - 1] = 1
    tab = A.alias_rows(pmf)
    assert tab.shape == (6, W, 2) and tab.dtype == np.int32
    assert ((tab[..., 1] >= 0) & (tab[..., 1] < W)).all()
    law, hits = _law(tab)
    assert (np.abs(law - pmf) <= hits * 2.0**-33 / W + 1e-14).all()
    assert (law[pmf == 0] == 0).all()  # a value of probability 0 is never drawn


@pytest.mark.parametrize("kind,params,laws", [
    ("multinomial", (0.4, 0.1, 0.2, 0.3),
     lambda m: (stats.binom(m, 0.4), stats.binom(m, 0.1 / 0.6), stats.binom(m, 0.2 / 0.5))),
    ("dirichlet", (4.5, 1.5, 2.5, 3.5),
     lambda m: (stats.betabinom(m, 4.5, 7.5), stats.betabinom(m, 1.5, 6.0),
                stats.betabinom(m, 2.5, 3.5))),
    ("hypergeom", (300, 100, 200, 400),
     lambda m: (stats.hypergeom(1000, 300, m), stats.hypergeom(700, 100, m),
                stats.hypergeom(600, 200, m))),
])
def test_conditional_tables_against_scipy(kind, params, laws):
    """Each stage's rows (m = n for TP; m = 0, 57, n for the others) against scipy.stats."""
    n = 300
    tabs = A.conditional_tables(n, kind, params)
    for stage, tab in enumerate(tabs):
        law = _law(tab)[0]
        for m in ((n,) if stage == 0 else (0, 57, n)):
            ref = laws(m)[stage].pmf(np.arange(n + 1))
            row = law[0 if stage == 0 else m]
            assert np.abs(row - ref).max() < 1e-9, (stage, m)


def test_draws_at_wide_rows():
    """n = 1500 Dirichlet-multinomial by the tables (rows of 1501 values): every cell ~
    BetaBinomial(n, α_c, Σα − α_c) by chi-square on 2^18 matrices (FN and FP through the
    conditional stages; the columns are exact uniforms, the thresholds 32-bit words)."""
    n, alpha = 1500, (4.5, 1.5, 2.5, 3.5)
    tabs = A.conditional_tables(n, "dirichlet", alpha)
    cms = np.asarray(A.table_sample(jax.random.key(2), n, *tabs, (1 << 18,)))
    assert (cms.sum(-1) == n).all() and (cms >= 0).all()
    for c in range(4):
        pmf = stats.betabinom(n, alpha[c], sum(alpha) - alpha[c]).pmf(np.arange(n + 1))
        assert _chi2_pvalue(np.bincount(cms[:, c], minlength=n + 1), pmf, len(cms)) > 1e-5, c


def test_subsample_of_a_huge_group():
    """Groups of ~5e17 rows (n = 10, tables): the law is the multinomial's to ~1e-16 (it took
    TP = 10 in every draw when the table's log-falling-factorials were lgamma differences).
    Counts summing past 2^63 − 1 are refused by name."""
    from test_distributions_sampling import chi2_check

    from ofijax import distributions as D

    c = (10**17, 10**17, 2 * 10**17, 10**17)
    cms = np.asarray(D.subsample(jax.random.key(7), c, 10, (1 << 15,)))
    p = np.asarray(c, np.float64) / sum(c)
    chi2_check(cms, 10, lambda x: float(stats.multinomial(10, p).pmf(x)))
    with pytest.raises(ValueError, match=r"cm: the four counts must sum to at most 2\*\*63"):
        D.subsample(jax.random.key(0), (2**62, 2**61, 2**61, 2**62 - 5), 10, (4,))


def test_dirichlet_multinomial_of_huge_concentrations():
    """α ≈ 1e15 (n = 10, tables): the law is the multinomial's with p = α/Σα (to ~1e-14; the
    lgamma differences of the former tables cancelled and gave means 5.0, 3.6, 0.9, 0.5)."""
    from test_distributions_sampling import chi2_check

    from ofijax import distributions as D

    a = (1e15, 1e15, 2e15, 1e15)
    cms = np.asarray(D.sample_dirichlet_multinomial(jax.random.key(8), 10, a, (1 << 15,)))
    p = np.asarray(a) / sum(a)
    chi2_check(cms, 10, lambda x: float(stats.multinomial(10, p).pmf(x)))


@pytest.mark.parametrize("W", [1, 2, 7, 1000, 1 << 18])
def test_alias_flat_encodes_its_pmf(W):
    """One long row by the closed-form sweep: random PMFs (Dirichlet with zeros, a point mass,
    exactly uniform) within (1 + its alias columns) · 2^-33 / W plus the running sums' drift;
    a value of probability 0 is never drawn."""
    rng = np.random.default_rng(W)
    point = np.zeros(W)
    point[W // 2] = 1
    rows = [rng.dirichlet(np.full(W, 0.3)), np.full(W, 1 / W), point]
    half = rng.dirichlet(np.full(W, 2.0)) * (np.arange(W) % 3 != 1)
    rows.append(half / half.sum() if half.sum() > 0 else rows[1])
    for pmf in rows:
        tab = A.alias_flat(pmf)
        assert tab.shape == (W, 2) and tab.dtype == np.int32
        assert ((tab[:, 1] >= 0) & (tab[:, 1] < W)).all()
        law, hits = _law(tab[None])
        assert (np.abs(law[0] - pmf) <= hits[0] * 2.0**-33 / W + 1e-14).all()
        assert (law[0][pmf == 0] == 0).all()


def test_betabinomial_table_against_scipy():
    """The positives' table of the Dirichlet-multinomial above 2048: BetaBinomial(n, a, b) on
    0..n (scipy.stats.betabinom), zero on the padding up to the power of two; its draws
    (top bits of one word, the threshold word) by chi-square."""
    n, a, b = 5000, 6.0, 6.0
    tab = A.betabinomial_table(n, a, b)
    assert tab.shape == (8192, 2)
    law = _law(tab[None])[0][0]
    ref = stats.betabinom(n, a, b).pmf(np.arange(n + 1))
    assert np.abs(law[: n + 1] - ref).max() < 1e-12 and (law[n + 1:] == 0).all()
    w = jax.random.bits(jax.random.key(3), (2, 1 << 18), np.uint32)
    x = np.asarray(A.pow2_draw(jax.numpy.asarray(tab), w))
    assert x.min() >= 0 and x.max() <= n
    bins = np.searchsorted(np.cumsum(ref), np.linspace(0, 1, 65)[1:-1])  # ~64 equal-mass bins
    pmf = np.diff(np.concatenate([[0.0], np.cumsum(ref)[bins], [1.0]]))
    obs = np.bincount(np.searchsorted(bins, x, side="left"), minlength=len(pmf))
    assert _chi2_pvalue(obs, pmf, len(x)) > 1e-5


def test_stirling_tail_against_mpmath():
    """s(k) = log k! − (k + ½) log(k + 1) + (k + 1) − ½ log 2π (the table up to 9 read by
    selects, the series above; k ≤ 0 reads s(0)) against mpmath at 30 digits, in float64 and
    float32."""
    import mpmath

    from ofijax.distributions import _bintables as B

    mpmath.mp.dps = 30
    ks = np.array([0, 1, 2, 5, 9, 10, 11, 50, 1000, 10**6, 2**31 - 2])

    def ref(k):
        return float(mpmath.loggamma(k + 1) - (k + mpmath.mpf(1) / 2) * mpmath.log(k + 1) + (k + 1)
                     - mpmath.log(2 * mpmath.pi) / 2)

    want = np.array([ref(int(k)) for k in ks])
    with jax.enable_x64(True):
        got64 = np.asarray(B.stirling_tail(jax.numpy.asarray(ks, jax.numpy.int64), jax.numpy.float64))
        got32 = np.asarray(B.stirling_tail(jax.numpy.asarray(ks, jax.numpy.int32), jax.numpy.float32))
        neg = float(B.stirling_tail(jax.numpy.asarray(-3), jax.numpy.float64))
    assert np.abs(got64 - want).max() < 4e-11
    assert np.abs(got32 - want).max() < 1e-8
    assert neg == B.STIRLING_TAIL[0]
