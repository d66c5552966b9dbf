"""The exact hypergeometric sampler (``distributions._hypergeometric``) and ``subsample`` above
its tables: draws against scipy's laws (chi-square), the float32 decisions against the float64
test, the log-PMF ratios against mpmath at N ~ 1e9, edge cases, exact integer sums, errors and
one program for every group and n.

The drawing tests share two compiled programs (``_draw`` at SIZE slots, ``subsample_cms`` at SIZE
rows; several seconds each to compile), so they are in the slow tier; the argument checks and
the log-ratio accuracy stay in the quick tier.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.stats as st

import ofijax
from ofijax import distributions as D
from ofijax.distributions import _hypergeometric as H
from ofijax.distributions import _sampling as S

SIZE = 1 << 14


@jax.jit
def _draw(key, N, K, n):
    return H.hypergeometric(key, N, K, n, SIZE)


def draw(seed, N, K, n):
    with jax.enable_x64(True):  # (SIZE,) int64 arguments: one program for every test
        args = [jnp.broadcast_to(jnp.asarray(v, jnp.int64), (SIZE,)) for v in (N, K, n)]
        return np.asarray(_draw(jax.random.key(seed), *args)).astype(np.int64)


def chi2_pvalue(x, dist, bins=30):
    """Chi-square p-value of integer draws against a scipy law on bins of about equal mass."""
    edges = np.unique(dist.ppf(np.linspace(0, 1, bins + 1)[1:-1]).astype(np.int64))
    edges = np.concatenate([[-1], edges, [np.iinfo(np.int64).max // 2]])
    exp = np.diff(dist.cdf(edges)) * len(x)
    obs = np.histogram(x, bins=edges + 0.5)[0]
    keep = exp > 0
    stat = ((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    return st.chi2.sf(stat, keep.sum() - 1)


@pytest.mark.slow
@pytest.mark.parametrize("N,K,n", [
    (50, 20, 15),                 # mean 6: inversion
    (1000, 400, 100),             # HRUA
    (1000, 700, 900),             # K > N/2 and n > N/2 (both symmetries)
    (1000, 700, 100),             # K > N/2 only
    (1000, 300, 800),             # n > N/2 only
    (10**9, 3 * 10**8, 10**6),    # large N (binned)
    (2**40, 2**39 + 12345, 3 * 10**5),
])
def test_draws_follow_scipy_hypergeom(N, K, n):
    x = draw(0, N, K, n)
    dist = st.hypergeom(N, K, n)
    assert x.min() >= max(0, n - (N - K)) and x.max() <= min(K, n)
    assert chi2_pvalue(x, dist) > 1e-4
    se = np.sqrt(dist.var() / len(x))
    assert abs(x.mean() - dist.mean()) < 5 * se


@pytest.mark.slow
def test_edge_cases_are_exact():
    for N, K, n, want in ((100, 0, 40, 0), (100, 100, 40, 40), (100, 37, 0, 0), (100, 37, 100, 37),
                          (10**12, 10**12, 10**6, 10**6), (10**12, 0, 10**6, 0), (1, 1, 1, 1)):
        assert (draw(1, N, K, n) == want).all(), (N, K, n)


@pytest.mark.slow
def test_per_slot_parameters():
    # one call, a different law per slot (small, inversion and HRUA slots mixed)
    N = np.array([50, 1000, 10**7] * (SIZE // 3) + [50] * (SIZE % 3), np.int64)
    K = N * 2 // 5
    n = np.where(N == 50, 15, np.where(N == 1000, 100, 10**5))
    x = draw(2, N, K, n)
    for v, nv in ((50, 15), (1000, 100), (10**7, 10**5)):
        sel = N == v
        assert chi2_pvalue(x[sel], st.hypergeom(v, v * 2 // 5, nv), bins=12) > 1e-4


def _mp_log_ratio(N, M, s, k, m):
    def lf(v):
        return mpmath.loggamma(mpmath.mpf(v) + 1)
    r = N - M - s
    f = lambda j: -(lf(j) + lf(M - j) + lf(s - j) + lf(r + j))  # noqa: E731
    return float(f(k) - f(m))


@pytest.mark.parametrize("N,M,s", [(10**9, 3 * 10**8, 10**6), (2**50, 2**45, 10**7),
                                   (1000, 400, 100)])
def test_log_ratio_matches_mpmath(N, M, s):
    mpmath.mp.dps = 40
    with jax.enable_x64(True):
        P = H._setup(*(jnp.full((1,), float(v)) for v in (N, M, s)))
        m = int(P["m"][0])
        sd = float(np.sqrt(st.hypergeom(N, M, s).var()))
        ks = sorted({max(0, min(s, M, int(m + z * sd))) for z in (-12, -3, -1, -0.3, 0, 0.4, 2, 9)})
        got = np.asarray(H._log_ratio({a: jnp.broadcast_to(v, (len(ks),)) for a, v in P.items()},
                                      jnp.asarray(ks, jnp.float64)))
        got32, mag = H._log_ratio32({a: jnp.broadcast_to(v, (len(ks),)) for a, v in P.items()},
                                    jnp.asarray(ks, jnp.float64))
    want = np.array([_mp_log_ratio(N, M, s, k, m) for k in ks])
    assert np.all(np.abs(got - want) <= 1e-12 * (1 + np.abs(want))), (got - want)
    # the float32 value lies well inside the band the sampler trusts it to
    err32 = np.abs(np.asarray(got32, np.float64) - want)
    assert np.all(err32 <= H._BAND / 8 * (np.asarray(mag, np.float64) + 1))


@jax.jit
def _both_tests(key, N, M, s):
    P = H._setup(*(jnp.full((SIZE,), v) for v in (N, M, s)))
    w = S.random_bits(key, (2, SIZE))
    return H._candidate32(P, w[0], w[1]), H._candidate(P, w[0], w[1])


@pytest.mark.slow
def test_float32_decisions_agree_with_float64():
    with jax.enable_x64(True):
        for N, M, s in ((10**5, 4 * 10**4, 10**4), (10**9, 3 * 10**8, 10**6), (200, 90, 60)):
            (k32, acc, rej), (k64, ok) = _both_tests(jax.random.key(N % 1000), *(
                jnp.float64(v) for v in (N, M, s)))
            acc, rej, ok = np.asarray(acc), np.asarray(rej), np.asarray(ok)
            assert (np.asarray(k32) == np.asarray(k64)).all()
            assert not (acc & ~ok).any() and not (rej & ok).any()
            assert (~acc & ~rej).mean() < 1e-3  # undecided, redone in float64


GROUP = (40_000, 10_000, 20_000, 30_000)


def _programs() -> int:
    """Executables of subsample_cms in this process (an aot_jit function: kept on disk, loaded
    or compiled once per shape) plus its plain jit's (used when the cache is off)."""
    from ofijax import _jaxcache

    kept = sum(1 for k in _jaxcache._LOADED if isinstance(k, tuple) and k[0] is H.subsample_cms)
    return kept + H.subsample_cms.jitted._cache_size()


@pytest.mark.slow
def test_subsample_above_the_tables_has_hypergeometric_marginals():
    n = 5000  # > 2048: the old limit
    cms = np.asarray(D.subsample(jax.random.key(3), GROUP, n, (SIZE,)))
    assert cms.dtype == np.int32 and (cms.sum(-1) == n).all()
    assert (cms >= 0).all() and (cms <= np.array(GROUP)).all()
    M = sum(GROUP)
    for c in range(4):
        assert chi2_pvalue(cms[:, c], st.hypergeom(M, GROUP[c], n)) > 1e-4
    # pairs of cells: the positives and TP + FP are hypergeometric too
    assert chi2_pvalue(cms[:, 0] + cms[:, 1], st.hypergeom(M, GROUP[0] + GROUP[1], n)) > 1e-4
    assert chi2_pvalue(cms[:, 0] + cms[:, 2], st.hypergeom(M, GROUP[0] + GROUP[2], n)) > 1e-4
    # covariances of the multivariate hypergeometric
    ref = st.multivariate_hypergeom(m=list(GROUP), n=n)
    cov = np.cov(cms.T.astype(np.float64))
    want = ref.cov()
    sd = np.sqrt(np.outer(np.diag(want), np.diag(want)))
    assert np.all(np.abs(cov - want) < 0.05 * sd)
    np.testing.assert_allclose(cms.mean(0), ref.mean(), atol=5 * np.sqrt(np.diag(want).max() / SIZE))


@pytest.mark.slow
def test_subsample_above_the_tables_edge_groups():
    assert (np.asarray(D.subsample(0, (3000, 0, 0, 2000), 5000, (SIZE,))) == [3000, 0, 0, 2000]).all()
    cms = np.asarray(D.subsample(1, (6000, 0, 0, 4000), 3000, (SIZE,)))
    assert (cms[:, 1] == 0).all() and (cms[:, 2] == 0).all() and (cms.sum(-1) == 3000).all()
    assert chi2_pvalue(cms[:, 0], st.hypergeom(10_000, 6000, 3000)) > 1e-4
    big = (10**12, 3 * 10**11, 2 * 10**11, 5 * 10**11)  # groups beyond int32
    cms = np.asarray(D.subsample(2, big, 2 * 10**6, (SIZE,)))
    assert (cms.sum(-1) == 2 * 10**6).all() and (cms >= 0).all()


@pytest.mark.slow
def test_subsample_one_program_for_every_group_and_n():
    D.subsample(0, GROUP, 3000, (SIZE,))
    before = _programs()
    for cm, n in ((GROUP, 4000), ((5, 6, 7, 10**6), 2000), (GROUP, 100_000)):
        cms = np.asarray(D.subsample(1, cm, n, (SIZE,)))
        assert (cms.sum(-1) == n).all() and (cms <= np.array(cm)).all()
    assert _programs() == before


@pytest.mark.slow
def test_subsample_sampler_in_monte_carlo_above_the_tables():
    s = D.monte_carlo(0, D.pair_statistic(ofijax.ofi),
                      D.pair_sampler(D.subsample_sampler(GROUP, 3000),
                                     D.subsample_sampler(GROUP, 3000)), 2048, chunk_size=1024)
    assert s.count == 2048 and abs(s.mean) < 0.01


def test_subsample_errors():
    with pytest.raises(ValueError, match="^n: cannot draw 101 rows"):
        D.subsample(0, (25, 25, 25, 25), 101, (2,))
    with pytest.raises(ValueError, match="^n: cannot draw"):
        D.subsample_sampler((25, 25, 25, 25), 101)
    with pytest.raises(ValueError, match="^n: the samplers return int32"):
        D.subsample(0, (2**31, 0, 0, 2**31), 2**31, (2,))
    with pytest.raises(ValueError, match="^cm: groups of up to 2"):
        D.subsample(0, (2**53, 0, 0, 5), 5000, (2,))
    with pytest.raises(ValueError, match="^cm: groups of up to 2"):
        D.subsample_sampler((2**53, 0, 0, 5), 5000)


# ------------------------------------ the positives stage by table lookup (#41 item 2, round 4)

from ofijax.distributions import _bintables as B  # noqa: E402

P_DRAWS = 1 << 16


@jax.jit
def _positives(key, cm, n):
    """One program for the quick tier's window tests: P's window (reduced law), its integer
    probabilities, whether it fits, and P_DRAWS draws of P by table lookup."""
    with jax.enable_x64(True):
        N, K = jnp.sum(cm), cm[0] + cm[1]
        lo, f, fits, _ = H.window_pmf(N, K, n)
        fits2, draw = H.positives_table(cm, n)
        return lo, B.window_counts(f), fits, fits2, draw(S.random_bits(key, (P_DRAWS,)))


def positives(seed, cm, n):
    with jax.enable_x64(True):
        out = _positives(jax.random.key(seed), jnp.asarray(cm, jnp.int64), jnp.int64(n))
    lo, counts, fits, fits2, p = (np.asarray(v) for v in out)
    assert bool(fits) == bool(fits2)
    return int(lo), counts.astype(np.int64), bool(fits), p.astype(np.int64)


def _reduced(N, K, n):
    return min(K, N - K), min(n, N - n)


@pytest.mark.parametrize("cm,n", [
    ((300, 100, 250, 350), 400),                    # whole support in the window
    ((40_000, 10_000, 20_000, 30_000), 5000),       # whole support (min(M, s) < WINDOW)
    ((400_000, 100_000, 200_000, 300_000), 100_000),  # a window around the mean
    ((700, 100, 100, 100), 900),                    # K > N/2 and n > N/2 (both flips)
    ((4_000_000, 1_000_000, 2_000_000, 3_000_000), 1_000_000),  # the bench's group at n = 1e6
])
def test_positives_window_against_scipy(cm, n):
    """c_j / 2^32 within 2^-32 (+ float64 error) of scipy.stats.hypergeom.pmf of the reduced law on
    the window, Σ c_j = 2^32 exactly, and the window leaves out ≤ LEFT_OUT (scipy's tails)."""
    lo, counts, fits, _ = positives(0, cm, n)
    N, K = sum(cm), cm[0] + cm[1]
    M, s = _reduced(N, K, n)
    ref = st.hypergeom(N, M, s)
    assert fits and counts.sum() == 1 << 32 and (counts >= 0).all()
    hi = lo + B.WINDOW - 1  # (scipy's sf beyond the support is slow: skipped, it is 0 there)
    out = (ref.cdf(lo - 1) if lo > 0 else 0.0) + (ref.sf(hi) if hi < min(M, s) else 0.0)
    assert out <= B.LEFT_OUT
    # scipy's pmf within 13 sd of the mean (scipy costs ~0.2 ms a value at N = 1e5); beyond,
    # the pmf is < 1e-20 (Bernstein), so c_j / 2^32 ≤ 2^-32 + 1e-12 means c_j ≤ 1
    k = lo + np.arange(B.WINDOW)
    near = np.abs(k - ref.mean()) <= 13 * ref.std() + 1
    err = np.abs(counts[near] / 2.0**32 - ref.pmf(k[near]))
    assert err.max() <= 2.0**-32 + out + 1e-12, err.max()
    assert counts[~near].max(initial=0) <= 1


def _mp_pmf(N, M, s, k):
    return float(mpmath.binomial(M, k) * mpmath.binomial(N - M, s - k) / mpmath.binomial(N, s))


@pytest.mark.parametrize("cm,n", [
    ((2 * 10**8, 10**8, 3 * 10**8, 4 * 10**8), 10**6),   # N = 1e9
    ((2**39, 12345, 2**38, 2**38 - 12345), 3 * 10**5),    # N = 2^40
])
def test_positives_window_at_large_N_against_mpmath(cm, n):
    """At N ~ 1e9 scipy's pmf is off by ~2e-7 relative (log-gamma differences), so the reference
    is mpmath (40 digits) at points from the mode to ~8 sd out; the window's left-out mass is
    bounded by Bernstein's inequality (sd ≤ 500 here, half-window 4096)."""
    mpmath.mp.dps = 40
    lo, counts, fits, _ = positives(1, cm, n)
    N, K = sum(cm), cm[0] + cm[1]
    M, s = _reduced(N, K, n)
    assert fits and counts.sum() == 1 << 32
    mean, sd = s * M / N, np.sqrt(s * M / N * (1 - M / N))
    assert lo <= mean - 8 * sd and mean + 8 * sd < lo + B.WINDOW
    for z in (-8, -4, -1.5, -0.2, 0, 0.7, 3, 6):
        k = int(round(mean + z * sd))
        assert abs(counts[k - lo] / 2.0**32 - _mp_pmf(N, M, s, k)) <= 2.0**-32 + 1e-12, (z, k)


def test_positives_window_fits_only_where_bernstein_allows():
    """fits ⇔ min(M, s) < WINDOW or 2 t + 2 < WINDOW (t Bernstein's half-width of Bin(s, M/N))."""
    for cm, n, want in (((3 * 10**11, 2 * 10**11, 2 * 10**11, 3 * 10**11), 2 * 10**6, False),
                        ((10**10, 10**10, 49 * 10**10, 49 * 10**10), 2 * 10**6, True),
                        ((5 * 10**6, 0, 0, 5 * 10**6), 4 * 10**6, False),
                        ((5, 6, 7, 10**6), 2000, True)):
        N, K = sum(cm), cm[0] + cm[1]
        M, s = _reduced(N, K, n)
        p = M / N
        t = float(B.half_width(np.float64(s * p * (1 - p)), np))
        assert (min(M, s) < B.WINDOW or 2 * t + 2 < B.WINDOW) == want
        assert positives(2, cm, n)[2] == want, (cm, n)


@pytest.mark.parametrize("cm,n,seed", [
    ((40_000, 10_000, 20_000, 30_000), 5000, 3),
    ((400_000, 100_000, 200_000, 300_000), 100_000, 4),
    ((700, 100, 100, 100), 900, 5),
    ((2 * 10**8, 10**8, 3 * 10**8, 4 * 10**8), 10**6, 6),
])
def test_positives_draws_follow_scipy(cm, n, seed):
    """Chi-square of 2^16 table-lookup draws of P = TP + FN against scipy's HG(Σ cm, TP + FN, n)."""
    _, _, fits, p = positives(seed, cm, n)
    dist = st.hypergeom(sum(cm), cm[0] + cm[1], n)
    assert fits and p.min() >= max(0, n - cm[2] - cm[3]) and p.max() <= min(n, cm[0] + cm[1])
    assert chi2_pvalue(p, dist) > 1e-4
    assert abs(p.mean() - dist.mean()) < 5 * np.sqrt(dist.var() / len(p))


@pytest.mark.slow
def test_subsample_where_the_window_does_not_fit():
    """Huge variance (σ² ≈ 5e5): P by HRUA in the same program, with the right law."""
    big = (3 * 10**11, 2 * 10**11, 2 * 10**11, 3 * 10**11)
    n = 2 * 10**6
    assert not positives(0, big, n)[2]
    before = _programs()
    cms = np.asarray(D.subsample(7, big, n, (SIZE,))).astype(np.int64)
    assert (cms.sum(-1) == n).all() and (cms >= 0).all()
    N = sum(big)
    assert chi2_pvalue(cms[:, 0] + cms[:, 1], st.hypergeom(N, big[0] + big[1], n)) > 1e-4
    assert chi2_pvalue(cms[:, 0], st.hypergeom(N, big[0], n)) > 1e-4
    assert _programs() <= max(before, 1) + 1  # the float32 test's program: no tables here
    assert not H.subsample_tables_fit(big, n)


@pytest.mark.parametrize("cm,n", [
    ((40_000, 10_000, 20_000, 30_000), 5000),
    ((30, 5000, 7000, 100), 6000),                    # TP | P with K < 10 % of the positives
    ((10**12, 3 * 10**11, 2 * 10**11, 10**9), 10**5),  # populations beyond int32
])
def test_stage_tables_against_lgamma(cm, n):
    """G(g0 + i) − G(g0) = −Δ log k! − Δ log (M − k)! (and H likewise) of every stage against
    mpmath's loggamma at 40 digits (float64 lgamma differences lose ~1e-2 at 1e12), −inf beyond
    the support."""
    mpmath.mp.dps = 40
    with jax.enable_x64(True):
        G, Hh, g0, h0 = (np.asarray(t) for t in jax.jit(H.stage_tables)(
            jnp.asarray(cm, jnp.int64), jnp.int64(n)))
    pos, neg = cm[0] + cm[1], cm[2] + cm[3]
    for j, (N, K) in enumerate(((pos + neg, pos), (pos, cm[0]), (neg, cm[2]))):
        M = min(K, N - K)
        for tab, x0, top in ((G[j], int(g0[j]), M), (Hh[j], int(h0[j]), N - M)):
            def lf(k, top=top):
                return mpmath.loggamma(k + 1) + mpmath.loggamma(top - k + 1)
            for i in (1, 7, 500, 4000, H.LOGF_TABLE - 1):
                if x0 + i <= top:
                    want = float(-(lf(x0 + i) - lf(x0)))
                    assert abs(tab[i] - want) < 1e-9 * (1 + abs(want) * 1e-5), (j, i)
                else:
                    assert tab[i] == -np.inf, (j, i)
            assert tab[0] == 0


@pytest.mark.slow
def test_subsample_tables_give_the_same_draws():
    """HRUA's test read from the log-factorial tables decides every candidate as the float64
    test does, so the draws equal the float32 path's bit for bit (same key): groups where the
    tables fit, and one where they do not hold the slots' modes (every candidate then undecided
    or decided at the tables' edges: slow, still the same draws)."""
    groups = [((40_000, 10_000, 20_000, 30_000), 5000),          # the bench's group of 10 n
              ((30, 5000, 7000, 100), 6000),                     # n near the group: flips
              ((10**15, 3 * 10**14, 2 * 10**15, 10**13), 2 * 10**5),  # huge population
              ((5000, 5000, 5000, 5000), 19_000),                # P crosses N/2 in its window
              ((100, 200, 50_000, 10), 2000)]                    # small means: inversion too
    rows = 1 << 12
    for cm, n in groups:
        assert H.subsample_tables_fit(cm, n), (cm, n)
    groups.append(((12 * 10**6, 3 * 10**6, 6 * 10**6, 9 * 10**6), 3 * 10**6))
    assert not H.subsample_tables_fit(*groups[-1])
    for cm, n in groups:
        with jax.enable_x64(True):
            c = np.asarray(cm, np.int64)
            a = np.asarray(H.subsample_cms(jax.random.key(3), c, np.int64(n), rows, False))
            b = np.asarray(H.subsample_cms(jax.random.key(3), c, np.int64(n), rows, True))
        assert (a.sum(-1) == n).all() and np.array_equal(a, b), (cm, n)
