"""#36: OFI p-values at every n (up to 2^31 − 1) under every null, with tested error bounds.

References are independent of the code under test: the exact O(n) engine (recurrence, full
log-PMFs) for the approximations, brute-force integer sums and Python integers for the closed
forms, scipy.stats for binomial windows, the normal limit (pooled null) and numerical integration
of B's limit density (3/2)(1 − |x|)² (uniform null) at n = 20e6 and 2^31 − 1. Large n only through
counts; the file runs in a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ofijax import distributions as D
from ofijax.distributions import _pvalue as P

M31 = 2**31 - 1


def _cm(n: int, d: int, p_fn: float) -> list[int]:
    """A CM of n rows with FP − FN = d (the p-value depends on the CMs only through n and d
    when the null is a reference CM)."""
    fn = int(round(n * p_fn))
    fn = max(fn, max(0, -d))
    fp = fn + d
    tp = (n - fn - fp) // 2
    return [tp, fn, fp, n - tp - fn - fp]


# (n_i, n_j, reference CM (TP, FN, FP, TN)): small cell probabilities (0 < p < 0.005) where the
# expected counts n_s(p_FN + p_FP) are still ≥ 200, unequal and coprime sizes, and the edges of
# the saddlepoint's domain (n_s(p_FN + p_FP) = 200, n_s(p_TP + p_TN) ≈ 10).
GRID = [
    (2000, 2000, [0.45, 0.001, 0.2, 0.349]),
    (2000, 3001, [0.5, 0.3, 1e-5, 0.19999]),
    (2000, 4000, [0.6, 0.002, 0.3, 0.098]),
    (2000, 2500, [0.5, 0.05, 0.05, 0.4]),  # n_s (a + b) = 200: the edge
    (60000, 61001, [0.498, 0.002, 0.002, 0.498]),  # a, b = 0.002: the old rule refused it
    (2000, 2003, [0.002, 0.5, 0.493, 0.005]),  # n_s c = 14: mostly wrong predictions
    (4000, 4000, [0.0005, 0.499, 0.498, 0.0025]),  # n_s c = 12
]


def _saddle_vs_exact(ni, nj, ref):
    ref = np.asarray(ref, np.float64)
    a, b = ref[1], ref[2]
    sd = math.sqrt(ni * nj * nj * (a + b) + nj * ni * ni * (a + b))
    g = math.gcd(ni, nj)
    out = []
    for z in (0.2, 1.5, 4.0, 10.0, 25.0, 45.0):
        m = int(z * sd) // g * g + g
        if m >= 2 * ni * nj:
            continue
        out.append(m)
    ms = np.array(out, np.int64)
    probs = np.tile([a, b, ref[0] + ref[3]], (len(ms), 1))
    ni_a, nj_a = np.full(len(ms), ni), np.full(len(ms), nj)
    ex, how_e, bd_e = P.engine_bounds(ms, ni_a, nj_a, probs, "exact")
    sa, how_s, bd_s = P.engine_bounds(ms, ni_a, nj_a, probs, "saddlepoint")
    assert set(how_e) == {"exact"} and not bd_e.any()
    assert set(how_s) == {"saddlepoint"} and np.all(bd_s == P.SADDLE_REL_ERROR)
    return np.abs(np.expm1(sa - ex)), ex


@pytest.mark.parametrize("ni,nj,ref", GRID)
def test_saddlepoint_relative_bound_against_exact(ni, nj, ref):
    err, ex = _saddle_vs_exact(ni, nj, ref)
    assert err.max() <= P.SADDLE_REL_ERROR, (err, ex)
    assert ex.min() < math.log(1e-300)  # every case reaches p < 1e-300 (log space)


def test_saddlepoint_bound_holds_down_to_1e_minus_300():
    err, ex = _saddle_vs_exact(3000, 3000, [0.4, 0.15, 0.15, 0.3])
    assert ex.min() < math.log(1e-300)
    assert err.max() <= P.SADDLE_REL_ERROR
    # the same through the public API: counts whose p-value is below 1e-300
    r = D.ofi_pvalue_cms(_cm(3000, 900, 0.15), _cm(3000, -900, 0.15), null=[4, 1.5, 1.5, 3],
                         method="saddlepoint")
    e = D.ofi_pvalue_cms(_cm(3000, 900, 0.15), _cm(3000, -900, 0.15), null=[4, 1.5, 1.5, 3],
                         method="exact")
    assert float(e.log_p_value) < math.log(1e-300)
    assert abs(math.expm1(float(r.log_p_value - e.log_p_value))) <= float(r.error_bound)
    assert bool(r.approximate) and not bool(e.approximate) and float(e.error_bound) == 0.0


def test_saddlepoint_refuses_outside_its_domain_and_auto_stays_exact():
    ci, cj = [990, 1, 1, 1008], [1000, 0, 2, 998]  # n(p_FN + p_FP) = 4 < 200, n < 2000
    with pytest.raises(ValueError, match="^method: .*method='auto'"):
        D.ofi_pvalue_cms(ci, cj, method="saddlepoint")
    r = D.ofi_pvalue_cms(ci, cj)
    assert str(r.method) == "exact" and not bool(r.approximate)


def test_small_probability_pairs_take_the_saddlepoint_in_large_batches():
    """The old rule (every cell probability ≥ 0.005) sent extreme thresholds to the exact path."""
    ni, nj = 90000, 60001
    ci = np.array([[45000 - k, 180, 120 + k, 44700] for k in range(40)])  # every pooled p < 0.005,
    cj = np.array([[30000, 135, 120, 29746]] * 40)  # but n_s (p_FN + p_FP) ≈ 222 ≥ 200
    r = D.ofi_pvalue_cms(ci, cj)  # Σ(n_i + n_j) > 2e6: auto may approximate
    assert ci.sum(-1)[0] == ni and cj.sum(-1)[0] == nj
    assert set(r.method.tolist()) == {"saddlepoint"}
    e = D.ofi_pvalue_cms(ci[::10], cj[::10], method="exact")
    assert np.all(np.abs(np.expm1(r.log_p_value[::10] - e.log_p_value)) <= P.SADDLE_REL_ERROR)


# ------------------------------------------------------------------------------ uniform null


def test_q_sum_and_uniform_cdf_against_brute_force():
    s = np.arange(0, 400)
    brute = np.cumsum(s * s // 4)
    assert np.array_equal(P._q_sum(s), brute.astype(float))
    big = np.array([1_599_999, 1_600_000, 10**9, M31 + 2], np.int64)
    exact = np.array([float(sum_sq4(int(v))) for v in big])
    assert np.allclose(P._q_sum(big), exact, rtol=1e-15, atol=0)
    for n in (1, 2, 7, 30):
        counts = [(n - abs(d) + 2) ** 2 // 4 for d in range(-n, n + 1)]
        total = sum(counts)
        assert total == math.comb(n + 3, 3)
        cdf = np.cumsum(counts) / total
        t = np.arange(-n - 3, n + 4)
        ref = np.concatenate([np.zeros(3), cdf, np.ones(3)])
        assert np.allclose(P._uniform_cdf(t, n), ref, rtol=1e-15, atol=1e-16)


def sum_sq4(s: int) -> int:
    """Σ_{r ≤ s} ⌊r²/4⌋ by Python integers (the closed form's reference)."""
    return s * (s + 2) * (2 * s - 1) // 24


@pytest.mark.parametrize("ni,nj", [(40, 40), (41, 97), (300, 7)])
def test_uniform_closed_form_sum_equals_classic_exact(ni, nj):
    g = math.gcd(ni, nj)
    ms = np.arange(g, 2 * ni * nj + 1, max(g, (2 * ni * nj) // 37 // g * g), dtype=np.int64)
    ref = P.log_tail_exact(P.log_diff_pmf(ni, None), P.log_diff_pmf(nj, None), ni, nj, ms)
    got = [P._uniform_log_tail_sum(int(m), min(ni, nj), max(ni, nj)) for m in ms]
    assert np.all(np.abs(np.expm1(np.array(got) - ref)) <= 1e-12)


def test_uniform_bracket_holds_its_bound():
    """The block bracket (used when both groups exceed 2^23) against the exact closed-form sum."""
    for ns, nl in [(60000, 60000), (60001, 150000)]:
        g = math.gcd(ns, nl)
        for frac in (0.01, 0.5, 1.0, 1.7, 1.999):
            m = int(frac * ns * nl) // g * g
            ex = P._uniform_log_tail_sum(m, ns, nl)
            br, bound = P._uniform_log_tail_bracket(m, ns, nl)
            assert abs(math.expm1(br - ex)) <= max(bound, 1e-13)
            assert bound <= 1e-3


def _uniform_limit_p(c: float) -> float:
    """P(|B_i − B_j| ≥ c) for B_i, B_j independent with density (3/2)(1 − |x|)² on [−1, 1]
    (the uniform null's n → ∞ limit), by numerical integration (scipy)."""
    from scipy import integrate

    def f(x):
        return 1.5 * (1 - abs(x)) ** 2

    def cdf(y):
        if y <= -1:
            return 0.0
        if y >= 1:
            return 1.0
        return 0.5 * (1 + y) ** 3 if y <= 0 else 1 - 0.5 * (1 - y) ** 3

    val, _ = integrate.quad(lambda x: f(x) * cdf(x - c), -1, 1, points=[0, c - 1, c], limit=200,
                            epsabs=0, epsrel=1e-12)
    return 2 * val


@pytest.mark.parametrize("n", [20_000_000, M31])
def test_uniform_null_at_huge_n_matches_the_limit_density(n):
    ofi = np.array([0.05, 0.5, 1.0, 1.6])
    r = D.ofi_pvalue_cms([[n // 2, 0, 0, n - n // 2]] * 4,
                         [[n // 2, 0, 0, n - n // 2]] * 4, null="uniform")  # p = 1 (OFI = 0)
    assert np.all(r.p_value == 1.0)
    res = P._ofi_pvalue_result(ofi, n, n - 1, null="uniform", method="auto")
    assert set(res.method.tolist()) == {"bracketed"} and np.all(res.approximate)
    assert np.all(res.error_bound <= 1e-3)
    ref = np.array([_uniform_limit_p(c) for c in ofi])
    # the lattice differs from the limit by O(1/n); the bracket's own bound is stated per entry
    assert np.all(np.abs(res.p_value / ref - 1) <= res.error_bound + 10.0 / n)


def test_uniform_small_group_against_huge_group_is_exact():
    r = P._ofi_pvalue_result(np.array([0.3, 1.5]), 7, M31, null="uniform", method="exact")
    assert set(r.method.tolist()) == {"exact"} and not r.approximate.any()
    # reference: the same sum with the huge group's CDF from Python integers (exact rationals)
    from fractions import Fraction

    n_s, n_l = 7, M31
    tot_s, tot_l = math.comb(n_s + 3, 3), math.comb(n_l + 3, 3)
    lcm = n_s * n_l
    for ofi, got in zip((0.3, 1.5), r.p_value):
        m = math.ceil(round(ofi * lcm, 6))
        acc = Fraction(0)
        for x in range(-n_s, n_s + 1):
            t = (x * n_l - m) // n_s
            if t < -n_l:
                continue
            cnt_l = (sum_sq4(n_l + t + 2) if t <= 0 else tot_l - sum_sq4(n_l - t + 1))
            acc += Fraction((n_s - abs(x) + 2) ** 2 // 4, tot_s) * Fraction(cnt_l, tot_l)
        assert got == pytest.approx(float(2 * acc), rel=1e-12)


# ------------------------------------------------------------------------------ pooled null, huge n


@pytest.mark.parametrize("n", [20_000_000, M31])
def test_pooled_null_at_huge_n_matches_the_normal_limit(n):
    """Multinomial null at n = 20e6 and 2^31 − 1: the saddlepoint against the normal limit
    (T = n_j D_i − n_i D_j, Var = n_i n_j (n_i + n_j) V, V = (a + b) − (b − a)²) in the
    central region, where the normal's relative error (skewness/√n · z³) is below 1e-3."""
    a, b = 0.1, 0.12
    ref_cm = [0.4, a, b, 1 - 0.4 - a - b]
    ni, nj = n, n - 1
    V = (a + b) - (b - a) ** 2
    sd = math.sqrt(ni * nj * (ni + nj) * V)
    z = np.array([0.5, 1.0, 2.0, 3.0])
    ofi = z * sd / (ni * nj)
    res = P._ofi_pvalue_result(ofi, ni, nj, null=ref_cm, method="auto")
    assert set(res.method.tolist()) == {"saddlepoint"} and np.all(res.approximate)
    from scipy.stats import norm

    ref = 2 * norm.sf(z)  # the lattice point tested moves z by < 1/sd
    assert np.all(np.abs(res.p_value / ref - 1) <= 1e-3)


def test_huge_groups_never_refused_by_auto_and_exact_names_auto():
    ci = [M31 // 2, M31 // 8, M31 // 8 + 60000, M31 - M31 // 2 - 2 * (M31 // 8) - 60000]
    cj = [M31 // 2, M31 // 8, M31 // 8, M31 - M31 // 2 - 2 * (M31 // 8)]
    for null in ("pooled", "uniform", [5, 1, 2, 5]):
        r = D.ofi_pvalue_cms(ci, cj, null=null)
        assert np.isfinite(r.log_p_value) and bool(r.approximate) and 0 < float(r.error_bound) <= 2e-3
    with pytest.raises(ValueError, match="^method: .*method='auto'"):
        D.ofi_pvalue_cms(ci, cj, method="exact")
    with pytest.raises(ValueError, match="^method: .*method='auto'"):
        D.ofi_pvalue_cms([30_000_000, 0, 0, 0], [0, 0, 30_000_000, 0], null="uniform", method="exact")
    # OFI = ±2 at n = 2^31 − 1: m = 2 n_i n_j is the largest int64 the engine meets
    p = D.ofi_pvalue([2.0, -2.0], M31, M31 - 1, null=[1, 1, 1, 1])
    assert np.all(np.isfinite(p))


def test_zero_cells_and_rare_errors_at_huge_n_are_exact_windows():
    """A zero pooled cell (a threshold at 0 or 1) or rare errors at n ≫ EXACT_MAX_N: binomial
    closed forms / a double sum on a window, exact; against scipy's binomial and the recurrence."""
    from scipy import stats

    n, b = 10**9, 3e-7
    off, lv, drop = P._pmf_window(n, (0.0, b, 1 - b))
    k = np.arange(len(lv)) + off
    assert np.allclose(lv, stats.binom.logpmf(k, n, b), rtol=1e-11, atol=1e-9)
    assert (k[0] == 0 or lv[0] < lv.max() - 800) and lv[-1] < lv.max() - 800 and drop < -800
    q = (1e-4, 4e-4, 1 - 5e-4)  # n(a + b) = 200 at n = 4e5: compare with the O(n) recurrence
    old = P.EXACT_MAX_N
    try:
        P.EXACT_MAX_N = 1000
        off, lv, drop = P._pmf_window(400_000, q)
    finally:
        P.EXACT_MAX_N = old
    ref = P.log_diff_pmf(400_000, q)[off + 400_000: off + 400_000 + len(lv)]
    keep = ref > ref.max() - 700
    # two exact methods (double sum vs the recurrence's compensated running sum)
    assert np.allclose(lv[keep], ref[keep], rtol=0, atol=1e-9)
    r = D.ofi_pvalue_cms([10**9, 0, 500, 10**9], [10**9, 0, 300, 10**9])  # p_FN = 0
    assert str(r.method) == "exact" and float(r.error_bound) == 0.0
    r2 = D.ofi_pvalue_cms([10**9, 3, 20, 10**9], [10**9, 2, 10, 10**9])  # rare errors
    assert str(r2.method) == "exact" and 1e-4 < float(r2.p_value) < 0.2


def test_hybrid_small_group_against_huge_group():
    """Smaller group's expected errors below 30 (saddlepoint inaccurate there), larger group's
    large: exact PMF of the small group × Lugannani–Rice tails of the large one, within the
    saddlepoint bound of the exact engine."""
    q = (0.004, 0.006, 0.99)
    ns, nl = 400, 60000
    lp_s, lp_l = P.log_diff_pmf(ns, q), P.log_diff_pmf(nl, q)
    g = math.gcd(ns, nl)
    ms = (np.array([0.5, 3.0, 12.0, 40.0]) * math.sqrt(ns * nl * (ns + nl) * 0.01)).astype(np.int64) // g * g
    ex = P.log_tail_exact(lp_s, lp_l, ns, nl, ms)
    hy = P._log_tail_hybrid(lp_s, -ns, ms, ns, nl, *q)
    assert ex.min() < math.log(1e-30)
    assert np.all(np.abs(np.expm1(hy - ex)) <= P.SADDLE_REL_ERROR)
    r = D.ofi_pvalue_cms(_cm(ns, 3, 0.004), _cm(10**8, 0, 0.004), null=[0.5, 0.004, 0.006, 0.49])
    assert str(r.method) == "saddlepoint" and float(r.error_bound) >= P.SADDLE_REL_ERROR


def test_log_binomial_is_vectorized_and_exact_enough():
    from fractions import Fraction

    got = P._log_binomial(60, 0.3)
    for k in (0, 1, 30, 59, 60):
        ref = math.comb(60, k) * Fraction(0.3) ** k * (1 - Fraction(0.3)) ** (60 - k)
        assert got[k] == pytest.approx(math.log(ref.numerator) - math.log(ref.denominator), rel=1e-13)


def test_windows_keep_digits_far_below_their_bulk():
    """Exact windows (groups above EXACT_MAX_N, forced here by lowering it) against the classic
    exact engine on the same pairs: zero-cell binomials and rare errors, p from ~1e-2 down to
    1e-2300, where the windows are redone in full or widened (never "truncated" here)."""
    pairs = [([10**5, 0, 40, 10**5], [10**5, 0, 10, 10**5 + 30]),  # p_FN = 0 pooled
             ([10**5, 0, 5000, 10**5], [10**5, 0, 0, 10**5 + 5000]),  # p ~ 1e-1000s
             ([10**5, 30, 0, 10**5], [10**5 + 7, 0, 0, 10**5 + 23]),  # p_FP = 0 pooled
             ([150_000, 9, 30, 150_000], [150_000, 12, 11, 150_000 + 16])]  # rare errors
    ci, cj = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    ref = D.ofi_pvalue_cms(ci, cj, method="exact")
    old = P.EXACT_MAX_N
    try:
        P.EXACT_MAX_N = 1000
        got = D.ofi_pvalue_cms(ci, cj, method="exact")
    finally:
        P.EXACT_MAX_N = old
    assert set(got.method.tolist()) == {"exact"} and not got.error_bound.any()
    assert ref.log_p_value.min() < -1000 * math.log(10) and ref.p_value.max() > 1e-3
    assert np.all(np.abs(np.expm1(got.log_p_value - ref.log_p_value)) <= 1e-9)  # two exact methods


def test_recurrence_running_sum_keeps_its_digits_at_large_n():
    """The log-PMF is a running sum reaching |n log b|; a plain sum lost ~√n ulps of it (1.1e-7
    relative on the d < 0 half here, the pooled null of a pair of 300,039 rows each). Against
    an independent double sum over (FN, FP) in Python floats with math.lgamma and math.fsum."""
    n, q = 300_039, (21 / 600_078, 41 / 600_078, 1 - 62 / 600_078)
    lp = P.log_diff_pmf(n, q)
    la, lb, lc = (math.log(v) for v in q)
    lg_n = math.lgamma(n + 1)
    for d in (-30, -3, 0, 4, 40):
        terms = [lg_n - math.lgamma(u + 1) - math.lgamma(u + d + 1) - math.lgamma(n - 2 * u - d + 1)
                 + u * la + (u + d) * lb + (n - 2 * u - d) * lc for u in range(max(0, -d), 300)]
        top = max(terms)
        ref = top + math.log(math.fsum(math.exp(t - top) for t in terms))
        assert abs(lp[d + n] - ref) <= 2e-9, d
    # the same running sum via the blocks as in one plain sum, on steps where both are exact
    steps = np.full(10_000, 0.5)
    assert np.array_equal(P._running_sum(2.0**20, steps), 2.0**20 + 0.5 * np.arange(10_001))
