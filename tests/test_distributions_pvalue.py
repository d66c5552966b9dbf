"""The one OFI p-value engine (ofijax.distributions._pvalue): exact in log space, saddlepoint bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ofijax import distributions as D
from ofijax.distributions import _combinatorics as C
from ofijax.distributions import _pvalue as P


@pytest.mark.parametrize("n,probs", [(9, (0.3, 0.1, 0.2, 0.4)), (12, (0.0, 0.5, 0.5, 0.0)),
                                     (7, (0.5, 0.0, 0.25, 0.25)), (400, (0.5, 0.1, 0.2, 0.2))])
def test_log_pmf_matches_trinomial_reference(n, probs):
    """Against the O(n²) trinomial sum (independent code); Fractions: test_robustness_distributions."""
    lp = P.log_diff_pmf(n, (probs[1], probs[2], probs[0] + probs[3]))
    ref = C.trinomial_diff_pmf(n, probs[2], probs[1])
    keep = ref > 1e-250
    assert np.allclose(np.exp(lp[keep]), ref[keep], rtol=1e-10)
    assert np.all(np.exp(lp[~keep]) < 1e-240)


def test_far_tail_keeps_its_digits():
    """The old FFT path returned ~7e-9 here; the engine agrees with an O(n²) direct reference."""
    ci, cj = [2000, 500, 500, 2000], [2000, 800, 200, 2000]
    r = D.ofi_pvalue_cms(ci, cj, null="pooled", method="exact")
    pooled = np.add(ci, cj) / 10000
    n = 5000
    pmf = C.trinomial_diff_pmf(n, pooled[2], pooled[1])  # positive terms, no FFT
    m = abs((ci[2] - ci[1]) * n - (cj[2] - cj[1]) * n)
    d = np.arange(-n, n + 1)
    cdf = np.cumsum(pmf)
    # P(|D_i − D_j| ≥ m/n): for each x, P(D_j ≤ x − k) + P(D_j ≥ x + k)
    k = m // n
    lo = np.where(d - k >= -n, cdf[np.clip(d - k + n, 0, 2 * n)], 0.0)
    sf = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])
    hi = sf[np.clip(d + k + n, 0, 2 * n + 1)]
    ref = float(np.sum(pmf * (lo + hi)))
    assert 1e-60 < ref < 1e-20
    assert float(r.p_value) == pytest.approx(ref, rel=1e-9)
    s = D.ofi_pvalue_cms(ci, cj, null="pooled", method="saddlepoint")
    assert bool(s.approximate) and str(s.method) == "saddlepoint"
    assert float(s.p_value) == pytest.approx(ref, rel=P.SADDLE_REL_ERROR)


def test_saddlepoint_error_bound_against_exact():
    rng = np.random.default_rng(7)
    worst = 0.0
    for trial in range(6):
        ni = int(rng.integers(2000, 2600))
        nj = [ni, ni + 1, int(rng.integers(2000, 2600))][trial % 3]
        p = rng.dirichlet([1, 1, 1, 1])
        p = np.maximum(p, 0.01)
        p /= p.sum()
        a, b, c = p[1], p[2], p[0] + p[3]
        g = math.gcd(ni, nj)
        sd = math.sqrt(ni * nj * nj * (a + b) + nj * ni * ni * (a + b))
        ms = (np.array([0.2, 2.0, 8.0, 25.0]) * sd).astype(np.int64) // g * g + g
        ex = P.log_tail_exact(P.log_diff_pmf(ni, (a, b, c)), P.log_diff_pmf(nj, (a, b, c)), ni, nj, ms)
        sa = P.log_tail_saddle(ms.astype(float), np.full(4, ni), np.full(4, nj), np.full(4, a),
                               np.full(4, b), np.full(4, c))
        worst = max(worst, float(np.max(np.abs(np.expm1(sa - ex)))))
        assert ex.min() < math.log(1e-100)  # the grid reaches the far tail
    assert worst <= P.SADDLE_REL_ERROR


def test_vectorized_equals_single_calls_and_broadcasts():
    rng = np.random.default_rng(3)
    ci = rng.integers(0, 9, (5, 4)) + np.array([1, 0, 0, 0])
    cj = rng.integers(0, 9, (5, 4)) + np.array([0, 0, 0, 1])
    for null in ("uniform", "pooled"):
        r = D.ofi_pvalue_cms(ci, cj, null=null)
        assert r.p_value.shape == (5,) and r.method.shape == (5,)
        single = [float(D.ofi_pvalue_cms(a, b, null=null).p_value) for a, b in zip(ci, cj)]
        assert np.allclose(r.p_value, single, rtol=1e-13)
    ref_cm = [3, 1, 2, 4]
    r = D.ofi_pvalue_cms(ci[:, None], cj[None], null=ref_cm)
    assert r.p_value.shape == (5, 5)
    o = D.ofi_pvalue(r.ofi, ci.sum(-1)[:, None], cj.sum(-1)[None], null=ref_cm)
    assert np.allclose(o, r.p_value, rtol=1e-12)


def test_ofi_pvalue_scalars_and_limits():
    assert D.ofi_pvalue(0.0, 3, 5) == 1.0
    assert D.ofi_pvalue(2.0, 1, 1) == pytest.approx(1 / 8 * 2 * (1 / 4) ** 0 / 2)  # (1/4)(1/4)·2
    r = D.ofi_pvalue_cms([0, 0, 3000, 0], [0, 3000, 0, 0], null="uniform")  # 2 of N(3000)² pairs
    assert float(r.log_p_value) == pytest.approx(math.log(2) - 2 * math.log(C.num_cms(3000)), rel=1e-12)
    r = D.ofi_pvalue_cms([0, 0, 3000, 0], [0, 3000, 0, 0], null="pooled")  # 2 · (½^3000)²
    assert float(r.p_value) == 0.0  # below 1e-308, but the digits are kept in log space:
    assert float(r.log_p_value) == pytest.approx(math.log(2) - 6000 * math.log(2), rel=1e-12)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: D.ofi_pvalue(3.0, 5, 5), "ofi_observed"),
        (lambda: D.ofi_pvalue(float("nan"), 5, 5), "ofi_observed"),
        (lambda: D.ofi_pvalue("0.1", 5, 5), "ofi_observed"),
        (lambda: D.ofi_pvalue(0.1, 0, 5), "n_i"),
        (lambda: D.ofi_pvalue(0.1, 5, 2.5), "n_j"),
        (lambda: D.ofi_pvalue(0.1, 5, 2**31), "n_j"),
        (lambda: D.ofi_pvalue(0.1, 5, 5, null="pooled"), "null"),
        (lambda: D.ofi_pvalue(0.1, 5, 5, null=[1, 2, 3]), "null"),
        (lambda: D.ofi_pvalue(0.1, 5, 5, method="fft"), "method"),
        (lambda: D.ofi_pvalue_cms([1, 0, 0, 0], [0, 0, 0, 0]), "cm_j"),
        (lambda: D.ofi_pvalue_cms([1, 0, 0], [1, 0, 0, 0]), "cm_i"),
        (lambda: D.ofi_pvalue_cms([5, 1, 1, 5], [5, 1, 1, 5], method="saddlepoint"), "method"),
        (lambda: D.ofi_pvalue_cms([[1, 0, 0, 0]] * 2, [[1, 0, 0, 0]] * 3), "cm_j"),
    ],
)
def test_bad_inputs_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_large_groups_are_fast_paths_not_hangs():
    # exact, O(n) recurrence: n = 20,000 in well under a second on an idle core (not timed here)
    p = D.ofi_pvalue(0.1, 20_000, 20_000, null=[1, 2, 3, 4])
    assert 0.0 < p < 1e-10
    pmf = D.ofi_pmf(3000, 3000)
    assert pmf.counts is None and pmf.probs.sum() == pytest.approx(1.0, rel=1e-12)
    # #36: no longer refused: the uniform null's closed-form sum over the smaller group is exact
    r = D.ofi_pvalue_cms([10**9, 0, 0, 0], [0, 0, 1, 0], null="uniform")
    assert str(r.method) == "exact" and float(r.error_bound) == 0.0 and 0.0 < float(r.p_value) <= 1.0


def test_batched_pmfs_equal_one_at_a_time():
    """log_diff_pmfs (the recurrence over a batch of distributions) = log_diff_pmf, row by row."""
    rng = np.random.default_rng(11)
    ns = [int(x) for x in rng.integers(1, 700, 30)] + [1, 2, 3, 650, 650]
    probs = [tuple(rng.dirichlet([1, 1, 1]).tolist()) for _ in ns]
    probs[-5:] = [(0.4, 0.6, 0.0), (0.0, 0.3, 0.7), (0.2, 0.0, 0.8), (1e-9, 0.5, 0.5 - 1e-9),
                  (0.001, 0.002, 0.997)]
    got = P.log_diff_pmfs(ns, probs)
    for n, q, g in zip(ns, probs, got):
        ref = P.log_diff_pmf.__wrapped__(n, q)  # uncached, scalar recurrence
        fin = np.isfinite(ref)
        assert g.shape == (2 * n + 1,) and np.array_equal(np.isfinite(g), fin)
        assert np.allclose(g[fin], ref[fin], rtol=1e-12, atol=1e-12)
    uni = P.log_diff_pmfs([4, 9], None)
    assert np.array_equal(uni[1], P.log_diff_pmf(9, None))


def _tail_reference(ci, cj):
    """One pair at a time: scalar PMFs and the untruncated sum (the engine's pre-batch path)."""
    ni, nj = sum(ci), sum(cj)
    pooled = np.add(ci, cj) / (ni + nj)
    q = (float(pooled[1]), float(pooled[2]), float(pooled[0] + pooled[3]))
    m = abs((ci[2] - ci[1]) * nj - (cj[2] - cj[1]) * ni)
    lp_i, lp_j = P.log_diff_pmf.__wrapped__(ni, q), P.log_diff_pmf.__wrapped__(nj, q)
    return float(P.log_tail_exact(lp_i, lp_j, ni, nj, np.array([m]), _trunc=False)[0])


def test_batched_engine_equals_per_pair_including_far_tails():
    """All pairs in one call (batched PMFs, truncated sums) = per-pair full sums to 1e-12 relative,
    from p ≈ 1 to the far tail (p < 1e-50) and with extreme cells (p_FP ~ 1e-3)."""
    rng = np.random.default_rng(5)
    cms_i, cms_j = [], []
    for t in range(24):
        ni, nj = (int(x) for x in rng.integers(50, 1500, 2))
        p = rng.dirichlet([4, 1, 1, 4])
        if t % 4 == 3:
            p = np.array([0.5, 0.002, 0.001, 0.497])  # extreme threshold: rare errors
        shift = [0.0, 0.1, 0.3, 0.6][t % 4] if t % 4 != 3 else 0.0
        pj = p.copy()
        pj[1], pj[2] = p[1] + shift * p[2], p[2] * (1 - shift)
        cms_i.append(rng.multinomial(ni, p))
        cms_j.append(rng.multinomial(nj, pj / pj.sum()))
    cms_i += [[300, 0, 300, 400], [0, 0, 700, 300]]  # far tail (p < 1e-50), and p < 1e-308 (e^-786),
    cms_j += [[300, 300, 0, 400], [0, 700, 0, 300]]  # where the truncated sum must be redone in full
    r = D.ofi_pvalue_cms(np.array(cms_i), np.array(cms_j), null="pooled", method="exact")
    ref = np.array([_tail_reference(list(a), list(b)) for a, b in zip(cms_i, cms_j)])
    assert ref.min() < -750.0 and np.sort(ref)[1] < math.log(1e-50) and ref.max() > math.log(0.05)
    assert np.all(np.abs(np.expm1(r.log_p_value - np.minimum(ref, 0.0))) <= 1e-12)


def test_saddlepoint_near_the_mean_regression():
    """n log Z(u) lost ~n·1e-16 near u = 0 and Lugannani–Rice's w amplified it: P(D ≤ t) came
    out 0 for a tail of probability ½ at n = 35,202, and the pair's p-value was 0.7 % off."""
    ci, cj = np.array([20529, 1753, 2263, 10580]), np.array([20540, 1840, 2258, 10564])
    po = (ci + cj) / (ci + cj).sum()
    a, b, c = po[1], po[2], po[0] + po[3]
    nj = int(cj.sum())
    cdf = np.logaddexp.accumulate(P.log_diff_pmf(nj, (a, b, c)))
    t = np.arange(-nj, nj + 1)
    sel = np.abs(t - nj * (b - a)) <= 80
    sad = P._log_lower_saddle(t[sel].astype(np.float64), nj, a, b, c)
    assert np.all(np.isfinite(sad))
    assert np.max(np.abs(np.expm1(sad - cdf[sel]))) <= 1e-5
    ex = D.ofi_pvalue_cms(ci, cj, method="exact")
    sa = D.ofi_pvalue_cms(ci, cj, method="saddlepoint")
    assert abs(math.expm1(float(sa.log_p_value - ex.log_p_value))) <= 1e-5


@pytest.mark.parametrize("n,p", [(1, 0.5), (9, 0.3), (40, 1e-3), (25, 1.0), (30, 0.999)])
def test_log_binomial_against_fractions(n, p):
    """The one-sided branches (D = FP or D = -FN) use log Bin(k; n, p) from math.lgamma."""
    from fractions import Fraction

    got = P._log_binomial(n, p)
    fp = Fraction(p)
    for k in range(n + 1):
        ref = math.comb(n, k) * fp**k * (1 - fp) ** (n - k)
        if ref == 0:
            assert got[k] == -np.inf
        else:
            assert got[k] == pytest.approx(math.log(ref) if ref > 1e-300 else
                                           math.log(ref.numerator) - math.log(ref.denominator),
                                           rel=1e-13, abs=1e-12)
