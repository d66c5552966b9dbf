"""OFI significance: exact p-values against brute-force enumeration, Monte Carlo, bootstrap coverage."""

import itertools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ofijax.auditing import _significance as sig


def all_cms(n):
    """M(n): every (TP, FN, FP, TN) with sum n."""
    return [(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a) for c in range(n + 1 - a - b)]


def cm_prob(cm, probs):
    """Exact multinomial probability of ``cm`` with rational ``probs`` (None = uniform over M(n))."""
    n = sum(cm)
    if probs is None:
        return Fraction(1, math.comb(n + 3, 3))
    out = Fraction(math.factorial(n))
    for x, p in zip(cm, probs):
        out *= p**x / math.factorial(x)
    return out


def brute_pvalue(ci, cj, null):
    """P(|OFI*| >= |OFI|) by enumerating M(n_i) x M(n_j) in exact rational arithmetic."""
    ni, nj = sum(ci), sum(cj)
    obs = abs(Fraction(ci[2] - ci[1], ni) - Fraction(cj[2] - cj[1], nj))
    probs = None
    if null == "pooled":
        pooled = [a + b for a, b in zip(ci, cj)]
        probs = [Fraction(x, ni + nj) for x in pooled]
    total = Fraction(0)
    mj = [(b, cm_prob(b, probs)) for b in all_cms(nj)]
    for a in all_cms(ni):
        wa = cm_prob(a, probs)
        if wa == 0:
            continue
        ba = Fraction(a[2] - a[1], ni)
        for b, wb in mj:
            if wb and abs(ba - Fraction(b[2] - b[1], nj)) >= obs:
                total += wa * wb
    return total


PAIRS = [
    ((1, 0, 0, 0), (0, 1, 0, 1)),
    ((1, 2, 0, 1), (0, 0, 3, 2)),
    ((0, 1, 0, 2), (0, 2, 0, 2)),  # Table-1-like: FN only
    ((2, 0, 1, 1), (1, 1, 1, 1)),
    ((0, 0, 4, 1), (3, 0, 0, 0)),
    ((1, 1, 1, 1), (2, 0, 0, 2)),  # OFI = 0 exactly: p = 1
]


@pytest.mark.parametrize("null", ["uniform", "pooled"])
@pytest.mark.parametrize("ci,cj", PAIRS)
def test_exact_pvalue_matches_enumeration(ci, cj, null):
    ref = brute_pvalue(ci, cj, null)
    t = sig.ofi_test(ci, cj, null=null)
    assert t.null == null and t.method == "exact"
    assert t.ofi == pytest.approx(float(Fraction(ci[2] - ci[1], sum(ci)) - Fraction(cj[2] - cj[1], sum(cj))))
    assert t.p_value == pytest.approx(float(ref), abs=1e-12)


@pytest.mark.parametrize("null", ["uniform", "pooled"])
def test_agrees_with_distributions_ofi_pvalue(null):
    from ofijax.distributions import ofi_pvalue

    for ci, cj in [((3, 4, 1, 2), (5, 0, 2, 6)), ((10, 2, 7, 3), (4, 9, 1, 8)), ((0, 1, 0, 5), (0, 7, 0, 11))]:
        ni, nj = sum(ci), sum(cj)
        o = (ci[2] - ci[1]) / ni - (cj[2] - cj[1]) / nj
        ref = ofi_pvalue(o, ni, nj, null="uniform" if null == "uniform" else np.add(ci, cj))
        assert sig.ofi_test(ci, cj, null=null).p_value == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_pairwise_test_matches_single_pairs_and_is_symmetric():
    cms = np.array([[1, 2, 0, 1], [0, 0, 3, 2], [2, 0, 1, 1]])
    for null in ("uniform", "pooled"):
        P = sig.pairwise_ofi_test(cms, null=null)
        assert P.shape == (3, 3) and np.allclose(P, P.T) and np.all(np.diag(P) == 1)
        for i, j in itertools.combinations(range(3), 2):
            assert P[i, j] == pytest.approx(float(brute_pvalue(tuple(cms[i]), tuple(cms[j]), null)), abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12])
def test_diff_pmf_uniform_matches_enumeration(n):
    counts = np.zeros(2 * n + 1)
    for cm in all_cms(n):
        counts[cm[2] - cm[1] + n] += 1
    assert np.allclose(sig.diff_pmf(n), counts / len(all_cms(n)), atol=0, rtol=1e-13)
    # Var(B) = (n + 4) / (10 n) under the uniform null (ofi_notes §7)
    b = np.arange(-n, n + 1) / n
    assert np.sum(sig.diff_pmf(n) * b**2) == pytest.approx((n + 4) / (10 * n), rel=1e-12)


def test_diff_pmf_multinomial_exact_and_enumeration():
    probs = [Fraction(1, 2), Fraction(1, 8), Fraction(1, 4), Fraction(1, 8)]
    n = 4
    ref = np.zeros(2 * n + 1)
    for cm in all_cms(n):
        ref[cm[2] - cm[1] + n] += float(cm_prob(cm, probs))
    assert np.allclose(sig.diff_pmf(n, [float(p) for p in probs]), ref, atol=1e-14)
    p = np.array([0.5, 0.2, 0.1, 0.2])
    exact = sig.diff_pmf(300, p)
    d = np.arange(-300, 301)
    assert np.sum(exact * d) == pytest.approx(300 * (p[2] - p[1]), rel=1e-9)
    assert np.sum(exact * d**2) - np.sum(exact * d) ** 2 == pytest.approx(
        300 * ((p[2] + p[1]) - (p[2] - p[1]) ** 2), rel=1e-9
    )


def test_zero_probability_cells():
    # p_FN = 0: D >= 0 always; pooled null of two groups without FN.
    pmf = sig.diff_pmf(3, [0.5, 0.0, 0.5, 0.0])
    assert np.allclose(pmf, [0, 0, 0, 1 / 8, 3 / 8, 3 / 8, 1 / 8])
    t = sig.ofi_test([1, 0, 2, 0], [2, 0, 1, 0], null="pooled")
    assert t.p_value == pytest.approx(float(brute_pvalue((1, 0, 2, 0), (2, 0, 1, 0), "pooled")))


def test_monte_carlo_pvalue_close_to_exact():
    ci, cj = (1, 2, 0, 1), (0, 0, 3, 2)
    key = jax.random.key(3)
    for null in ("pooled", "uniform"):
        exact = sig.ofi_test(ci, cj, null=null).p_value
        mc = sig.ofi_test(ci, cj, null=null, method="monte_carlo", key=key, num_samples=40_000)
        se = math.sqrt(exact * (1 - exact) / 40_000)
        assert abs(mc.p_value - exact) < 4.5 * se + 1e-4, (null, mc.p_value, exact)
        assert mc.method == "monte_carlo"
    again = sig.ofi_test(ci, cj, null="pooled", method="monte_carlo", key=key, num_samples=40_000)
    assert again.p_value == sig.ofi_test(ci, cj, null="pooled", method="monte_carlo", key=key,
                                         num_samples=40_000).p_value


def test_holm_against_hand_computation():
    p = [0.01, 0.04, 0.03, 0.5]
    # sorted 0.01, 0.03, 0.04, 0.5 -> 4*0.01, 3*0.03, 2*0.04, 1*0.5 -> running max
    assert sig.holm(p).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert sig.holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_bootstrap_intervals_cover_true_ofi_at_nominal_rate():
    """S simulated data sets, each bootstrapped (vmapped over data sets and replicates)."""
    p_i = np.array([0.30, 0.10, 0.20, 0.40])  # B_i = +0.10
    p_j = np.array([0.35, 0.20, 0.05, 0.40])  # B_j = -0.15
    n_i, n_j, S, R = 60, 80, 300, 400
    true_ofi = 0.25
    rng = np.random.default_rng(11)  # the data sets; the bootstrap itself runs in JAX
    cms = jnp.asarray(np.stack([rng.multinomial(n_i, p_i, S), rng.multinomial(n_j, p_j, S)], axis=1))
    k_boot = jax.random.key(11)
    pos = jnp.asarray(np.repeat([0, 1], [n_i, n_j]).astype(np.int32))
    boot = jax.jit(jax.vmap(lambda k, c: sig._bootstrap_ofi_positions(k, c, pos, R)))
    samples = boot(jax.random.split(k_boot, S), cms)  # (S, R, 2, 2)
    lo, hi = np.quantile(np.asarray(samples[:, :, 0, 1]), [0.025, 0.975], axis=1)
    coverage = np.mean((lo <= true_ofi) & (true_ofi <= hi))
    assert 0.90 <= coverage <= 0.985, coverage  # nominal 0.95; binomial sd over 300 sets ~ 0.013


def test_bootstrap_routes_agree_and_public_wrapper(monkeypatch):
    cms = np.array([[30, 5, 20, 45], [40, 20, 5, 35], [10, 3, 2, 5]])
    key = jax.random.key(0)
    rows = sig.ofi_bootstrap(key, cms, num_samples=3000)
    monkeypatch.setattr(sig, "_ROW_DRAW_LIMIT", 0)  # force the multinomial route
    multi = sig.ofi_bootstrap(key, cms, num_samples=3000)
    assert np.allclose(rows.low, multi.low, atol=0.03) and np.allclose(rows.high, multi.high, atol=0.03)
    assert np.allclose(rows.low, -rows.high.T)  # OFI(j, i) = -OFI(i, j)
    assert rows.low[0, 1] < 0.30 < rows.high[0, 1]
    again = sig.ofi_bootstrap(key, cms, num_samples=3000)
    assert np.array_equal(again.low, multi.low)  # fixed key, same route => same result


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: sig.ofi_test([1, 0, 0], [1, 0, 0, 0]), "cm_i"),
        (lambda: sig.ofi_test([1, 0, 0, 0], [0, 0, 0, 0]), "n = 0"),
        (lambda: sig.ofi_test([1, 0, 0, 0], [1, 0, 0, 0], null="bogus"), "null"),
        (lambda: sig.ofi_test([1, 0, 0, 0], [1, 0, 0, 0], method="monte_carlo"), "key"),
        (lambda: sig.ofi_test([1.5, 0, 0, 0], [1, 0, 0, 0]), "whole numbers"),
        (lambda: sig.ofi_bootstrap(0, [[1, 0, 0, 0], [1, 0, 0, 0]], confidence=1.5), "confidence"),
        (lambda: sig.diff_pmf(0), "n"),
        (lambda: sig.diff_pmf(3, [0.5, 0.5, 0.5, 0.0]), "probs"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
