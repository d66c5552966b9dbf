"""Samplers of ofijax.distributions: exact laws checked by chi-square on fixed keys."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from ofijax import distributions as D
from ofijax.distributions import _combinatorics as C
from ofijax.distributions import _sampling as S

DRAWS = 40_000


def chi2_critical(df: int, z: float = 4.265) -> float:
    """Upper critical value of chi-square(df) at p ≈ 1e-5 (Wilson–Hilferty)."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + z * math.sqrt(h)) ** 3


def chi2_check(cms: np.ndarray, n: int, prob_of) -> None:
    """Chi-square of the empirical law of whole matrices against exact probabilities.

    Cells with expected count < 5 are pooled into one cell.
    """
    cms = np.asarray(cms).reshape(-1, 4)
    assert cms.dtype == np.int32
    assert (cms >= 0).all() and (cms.sum(-1) == n).all()
    allm = C.enumerate_cms(n)
    p = np.array([prob_of(tuple(r)) for r in allm.tolist()])
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-9)
    obs = np.bincount(C.rank_cms(cms), minlength=len(allm)).astype(float)
    exp = p * len(cms)
    assert obs[p == 0].sum() == 0, "drew an impossible matrix"
    small = exp < 5
    o = np.append(obs[~small], obs[small].sum())
    e = np.append(exp[~small], exp[small].sum())
    keep = e > 0
    stat = float(((o[keep] - e[keep]) ** 2 / e[keep]).sum())
    df = int(keep.sum()) - 1
    assert stat < chi2_critical(df), (stat, df)


def uniform_prob(n):
    N = C.num_cms(n)
    return lambda cm: 1.0 / N


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_sample_uniform_is_uniform(n):
    cms = np.asarray(D.sample_uniform(jax.random.key(n), n, (DRAWS,)))
    chi2_check(cms, n, uniform_prob(n))


def test_stars_and_bars_path_is_uniform():
    cms = np.asarray(S._stars_and_bars(jax.random.key(7), 5, (DRAWS,)))
    chi2_check(cms, 5, uniform_prob(5))


def test_rejection_refill_is_exact():
    # bound with a huge rejection zone (2^32 mod bound ≈ bound/2 … ) still gives exact uniforms
    bound = 3 * 2**30  # accepted words < 3·2^30; 25 % of words are rejected and refilled
    x = np.asarray(S.uniform_below(jax.random.key(3), bound, (DRAWS,)), dtype=np.int64)
    assert x.max() < bound
    obs = np.bincount(x // (2**30), minlength=3)
    exp = DRAWS / 3
    assert ((obs - exp) ** 2 / exp).sum() < chi2_critical(2)
    small = np.asarray(S.uniform_below(jax.random.key(4), 7, (DRAWS,)))
    obs = np.bincount(small, minlength=7)
    assert ((obs - DRAWS / 7) ** 2 / (DRAWS / 7)).sum() < chi2_critical(6)


def test_large_n_uniform_marginal():
    # n ≥ 2950 uses stars and bars; check the TP marginal C(x; n)/N(n) in 8 coarse bins
    n = 3000
    cms = np.asarray(D.sample_uniform(jax.random.key(11), n, (DRAWS,)))
    assert (cms.sum(-1) == n).all()
    edges = np.linspace(0, n + 1, 9).astype(int)
    N = C.num_cms(n)
    p = np.array([sum(C.cell_count(x, n) for x in range(a, b)) / N
                  for a, b in zip(edges[:-1], edges[1:])])
    for cell in range(4):
        obs = np.histogram(cms[:, cell], bins=edges)[0]
        exp = p * DRAWS
        assert ((obs - exp) ** 2 / exp).sum() < chi2_critical(7)


def test_uniform_shapes_and_determinism():
    k = jax.random.key(0)
    a = D.sample_uniform(k, 12, (2, 3))
    assert a.shape == (2, 3, 4) and a.dtype == np.int32
    assert (np.asarray(a).sum(-1) == 12).all()
    assert (np.asarray(D.sample_uniform(k, 12, (2, 3))) == np.asarray(a)).all()
    assert D.sample_uniform(k, 5).shape == (4,)
    assert not (np.asarray(D.sample_uniform(jax.random.key(1), 12, (2, 3))) == np.asarray(a)).all()
    # works under jit with a traced key
    f = jax.jit(lambda key: D.sample_uniform(key, 12, (5,)))
    assert f(k).shape == (5, 4)


def multinomial_prob(p):
    def prob(cm):
        out = math.factorial(sum(cm))
        for c, pc in zip(cm, p):
            out = out / math.factorial(c) * pc**c
        return out

    return prob


def dm_prob(alpha):
    A = sum(alpha)

    def prob(cm):
        n = sum(cm)
        lp = math.lgamma(n + 1) + math.lgamma(A) - math.lgamma(n + A)
        for c, a in zip(cm, alpha):
            lp += math.lgamma(c + a) - math.lgamma(c + 1) - math.lgamma(a)
        return math.exp(lp)

    return prob


def hypergeom_prob(pop):
    M = sum(pop)

    def prob(cm):
        out = 1
        for c, k in zip(cm, pop):
            out *= math.comb(k, c)
        return out / math.comb(M, sum(cm))

    return prob


@pytest.mark.parametrize("probs", [(0.1, 0.2, 0.3, 0.4), (0.25, 0.25, 0.25, 0.25),
                                   (0.0, 0.5, 0.2, 0.3)])
def test_sample_multinomial(probs):
    n = 6
    cms = np.asarray(D.sample_multinomial(jax.random.key(1), n, probs, (DRAWS,)))
    chi2_check(cms, n, multinomial_prob(probs))


def test_sample_multinomial_large_n_moments():
    p = (0.1, 0.2, 0.3, 0.4)
    for n in (700, 2100):  # the two-stage exact binomial chain (above the tables' n = 250)
        cms = np.asarray(D.sample_multinomial(jax.random.key(2), n, p, (10_000,)))
        assert cms.dtype == np.int32 and (cms.sum(-1) == n).all()
        b = (cms[:, 2] - cms[:, 1]) / n
        mom = D.marginal_benefit_moments(n, p)
        se_mean = math.sqrt(mom.var / len(b))
        assert abs(b.mean() - mom.mean) < 5 * se_mean
        assert abs(b.var() / mom.var - 1) < 0.08


@pytest.mark.parametrize("alpha", [(1, 1, 1, 1), (0.5, 2.0, 1.0, 3.0)])
def test_sample_dirichlet_multinomial(alpha):
    n = 6
    cms = np.asarray(D.sample_dirichlet_multinomial(jax.random.key(5), n, alpha, (DRAWS,)))
    chi2_check(cms, n, dm_prob(alpha))


def test_dirichlet_multinomial_ones_is_uniform():
    for cm in C.enumerate_cms(5).tolist():
        assert math.isclose(dm_prob((1, 1, 1, 1))(tuple(cm)), 1 / C.num_cms(5))


@pytest.mark.parametrize("pop,n", [((5, 3, 4, 6), 7), ((2, 0, 9, 1), 5)])
def test_subsample_is_hypergeometric(pop, n):
    cms = np.asarray(D.subsample(jax.random.key(9), pop, n, (DRAWS,)))
    assert (cms <= np.array(pop)).all()
    chi2_check(cms, n, hypergeom_prob(pop))


def test_subsample_whole_group():
    cms = np.asarray(D.subsample(jax.random.key(0), [3, 1, 4, 2], 10, (5,)))
    assert (cms == np.array([3, 1, 4, 2])).all()


def test_uniform_sampler_table_paths_agree():
    # the lookup table (n ≤ LUT_MAX_N) gives the draws of unranking the ranks in closed form;
    # above, stars and bars
    key = jax.random.key(11)
    k0, k1 = jax.random.split(key)
    ranks = S.uniform_below(k0, C.num_cms(30), (500,))
    refs = [np.asarray(S.unrank_cms_jit(ranks, np.int32(30)))]
    assert (np.asarray(D.sample_uniform(k0, 30, (500,))) == refs[0]).all()
    refs.append(np.asarray(S._stars_and_bars(k1, S.LUT_MAX_N + 1, (500,))))
    assert (np.asarray(D.sample_uniform(k1, S.LUT_MAX_N + 1, (500,))) == refs[1]).all()
    # table passed as a jit argument (as monte_carlo does) == table closed over
    pair = D.pair_sampler(D.uniform_sampler(30), D.uniform_sampler(S.LUT_MAX_N + 1))
    a = np.asarray(pair(key, (500,)))
    b = np.asarray(jax.jit(lambda k, ops: pair.draw(ops, k, (500,)))(key, pair.operands()))
    assert (a == b).all()
    assert (a[:, 0] == refs[0]).all() and (a[:, 1] == refs[1]).all()


def test_sampler_objects_are_hashable_and_equal():
    assert D.uniform_sampler(5) == D.uniform_sampler(5)
    assert hash(D.multinomial_sampler(5, [0.25] * 4)) == hash(D.multinomial_sampler(5, [0.25] * 4))
    s = D.pair_sampler(D.uniform_sampler(3), D.subsample_sampler([4, 4, 4, 4], 5))
    out = s(jax.random.key(0), (7,))
    assert out.shape == (7, 2, 4)
    assert (np.asarray(out[:, 0]).sum(-1) == 3).all() and (np.asarray(out[:, 1]).sum(-1) == 5).all()


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda k: D.sample_uniform(k, 0, (3,)), "n:"),
        (lambda k: D.sample_uniform(k, 4.5, (3,)), "n:"),
        (lambda k: D.sample_uniform(k, 4, (-1,)), "shape:"),
        (lambda k: D.sample_multinomial(k, 4, [0.3, 0.3, 0.3, 0.3], (3,)), "probs:"),
        (lambda k: D.sample_multinomial(k, 4, [0.6, 0.6, -0.2, 0.0], (3,)), "probs:"),
        (lambda k: D.sample_multinomial(k, 4, [0.5, 0.5, 0.0], (3,)), "probs:"),
        (lambda k: D.sample_dirichlet_multinomial(k, 4, [1, 0, 1, 1], (3,)), "alpha:"),
        (lambda k: D.sample_dirichlet_multinomial(k, 4, [1, -2, 1, 1], (3,)), "alpha:"),
        (lambda k: D.subsample(k, [1, 1, 1, 1], 5, (3,)), "n:"),
        (lambda k: D.subsample(k, [1, -1, 1, 1], 2, (3,)), "cm:"),
        (lambda k: D.subsample(k, [1.5, 1, 1, 1], 2, (3,)), "cm:"),
        (lambda k: D.multinomial_sampler(4, [1, 1, 1, 1]), "probs:"),
        (lambda k: D.uniform_sampler(-2), "n:"),
    ],
)
def test_bad_sampler_inputs(call, arg):
    with pytest.raises(ValueError, match=arg):
        call(jax.random.key(0))
