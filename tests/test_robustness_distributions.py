"""Hypothesis contract for ofijax.distributions and the OFI tests of ofijax.auditing.

Valid inputs give the numbers of an independent reference (Fractions by enumeration of M(n), NumPy);
invalid inputs give one ValueError/TypeError whose message starts with the argument's name. Every
test runs in JAX's default 32-bit mode and in x64 mode.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ofijax import auditing as A
from ofijax import distributions as D

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def mode(request):
    with jax.enable_x64(request.param):
        yield request.param


# ---------------------------------------------------------------------------- references


def _cms(n):
    return [(tp, fn, fp, n - tp - fn - fp) for tp in range(n + 1) for fn in range(n + 1 - tp)
            for fp in range(n + 1 - tp - fn)]


def _law(n, probs):
    """Exact P(D = d), D = FP − FN, as Fractions (probs None = uniform over M(n))."""
    out: dict[int, Fraction] = {}
    cms = _cms(n)
    for cm in cms:
        if probs is None:
            w = Fraction(1, len(cms))
        else:
            w = Fraction(math.factorial(n))
            for k, p in zip(cm, probs):
                w = w * Fraction(p) ** k / math.factorial(k)
        out[cm[2] - cm[1]] = out.get(cm[2] - cm[1], Fraction(0)) + w
    return out


def _pvalue_ref(ci, cj, null):
    ni, nj = sum(ci), sum(cj)
    probs = None
    if null == "pooled":
        pooled = [a + b for a, b in zip(ci, cj)]
        probs = [Fraction(v, sum(pooled)) for v in pooled]
    m = abs((ci[2] - ci[1]) * nj - (cj[2] - cj[1]) * ni)
    li, lj = _law(ni, probs), _law(nj, probs)
    return sum(p * q for x, p in li.items() for y, q in lj.items() if abs(x * nj - y * ni) >= m)


cm_st = st.tuples(*[st.integers(0, 2)] * 4).filter(lambda c: sum(c) > 0)
probs_st = st.tuples(*[st.integers(0, 4)] * 4).filter(lambda c: sum(c) > 0).map(
    lambda c: [Fraction(v, sum(c)) for v in c])


# ---------------------------------------------------------------------------- valid inputs


@SETTINGS
@given(n=st.integers(1, 6), probs=st.one_of(st.none(), probs_st))
def test_marginal_benefit_pmf_equals_enumeration(mode, n, probs):
    pmf = D.marginal_benefit_pmf(n, None if probs is None else [float(p) for p in probs])
    law = _law(n, probs)
    ref = np.array([float(law.get(d, 0)) for d in range(-n, n + 1)])
    assert np.allclose(pmf.probs, ref, rtol=1e-12, atol=1e-15)
    if probs is None:
        assert pmf.exact_probs() == [law.get(d, Fraction(0)) for d in range(-n, n + 1)]


@SETTINGS
@given(ci=cm_st, cj=cm_st, null=st.sampled_from(["uniform", "pooled"]))
def test_ofi_test_and_engine_equal_fraction_reference(mode, ci, cj, null):
    ref = float(_pvalue_ref(ci, cj, null))
    t = A.ofi_test(ci, cj, null=null)
    assert t.p_value == pytest.approx(ref, rel=1e-12, abs=1e-300) and t.method == "exact"
    assert t.ofi == pytest.approx(float(Fraction(ci[2] - ci[1], sum(ci)) - Fraction(cj[2] - cj[1], sum(cj))))
    r = D.ofi_pvalue_cms(ci, cj, null=null)
    assert float(r.p_value) == pytest.approx(ref, rel=1e-12) and not bool(r.approximate)
    # the observed-OFI entry point hits the same lattice point, from a float32 OFI too
    ref_null = "uniform" if null == "uniform" else np.add(ci, cj)
    o32 = float(np.float32(t.ofi))
    assert D.ofi_pvalue(o32, sum(ci), sum(cj), null=ref_null) == pytest.approx(ref, rel=1e-12)


@SETTINGS
@given(cms=st.lists(cm_st, min_size=2, max_size=4), null=st.sampled_from(["uniform", "pooled"]))
def test_pairwise_is_symmetric_and_equals_single_tests(mode, cms, null):
    P = A.pairwise_ofi_test(cms, null=null)
    k = len(cms)
    assert P.shape == (k, k) and np.allclose(P, P.T) and np.all(np.diag(P) == 1.0)
    for i in range(k):
        for j in range(i + 1, k):
            assert P[i, j] == pytest.approx(A.ofi_test(cms[i], cms[j], null=null).p_value, rel=1e-12)
    # order does not matter
    perm = np.arange(k)[::-1]
    assert np.allclose(A.pairwise_ofi_test(np.asarray(cms)[perm], null=null), P[np.ix_(perm, perm)])


@SETTINGS
@given(ni=st.integers(1, 8), nj=st.integers(1, 8), probs=st.one_of(st.none(), probs_st))
def test_ofi_moments_equal_enumeration(mode, ni, nj, probs):
    null = "uniform" if probs is None else [int(p * 840) for p in probs]
    mom = D.ofi_moments(ni, nj, null=null)
    li, lj = _law(ni, probs), _law(nj, probs)
    mean = sum(Fraction(x, ni) * p for x, p in li.items()) - sum(Fraction(y, nj) * q for y, q in lj.items())
    second = sum((Fraction(x, ni) - Fraction(y, nj)) ** 2 * p * q for x, p in li.items() for y, q in lj.items())
    assert float(mom.mean) == pytest.approx(float(mean), abs=1e-12)
    assert float(mom.var) == pytest.approx(float(second - mean**2), rel=1e-12)


@settings(SETTINGS, max_examples=4)
@given(n=st.sampled_from([7, 2**24 + 3, 2**31 - 4]), seed=st.integers(0, 2**32),
       which=st.sampled_from(["uniform", "multinomial", "dirichlet"]))
def test_samplers_rows_are_exact_confusion_matrices(mode, n, seed, which):
    if which == "uniform":
        x = D.sample_uniform(seed, n, (5,))
    elif which == "multinomial":
        x = D.sample_multinomial(seed, n, [0.1, 0.2, 0.3, 0.4], (5,))
    else:
        x = D.sample_dirichlet_multinomial(seed, n, [1, 2, 1, 2], (5,))
    x = np.asarray(x).astype(np.int64)
    assert x.shape == (5, 4) and x.min() >= 0 and np.all(x.sum(-1) == n)
    again = np.asarray(D.sample_uniform(jax.random.key(seed % 2**63), 5, (3,)))
    assert np.array_equal(again, np.asarray(D.sample_uniform(seed % 2**63, 5, (3,))))


@settings(SETTINGS, max_examples=3)
@given(cms=st.lists(st.tuples(*[st.integers(0, 6)] * 4).filter(lambda c: sum(c) > 0), min_size=2, max_size=3),
       seed=st.integers(0, 1000))
def test_bootstrap_intervals_are_ordered_and_reproducible(mode, cms, seed):
    b = A.ofi_bootstrap(seed, cms, num_samples=50, confidence=0.9)
    k = len(cms)
    assert b.low.shape == (k, k) and np.all(b.low <= b.high + 1e-12)
    assert np.allclose(np.diag(b.low), 0) and np.allclose(b.low, -b.high.T)
    again = A.ofi_bootstrap(jax.random.key(seed), cms, num_samples=50, confidence=0.9)
    assert np.array_equal(again.low, b.low)


# ---------------------------------------------------------------------------- invalid inputs

bad_n = st.sampled_from([0, -3, 2.5, "7", None, True, float("nan"), 2**40])


def _raises_naming(call, name):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert str(info.value).startswith(name), str(info.value)


@SETTINGS
@given(n=bad_n)
def test_bad_sizes_name_the_argument(mode, n):
    _raises_naming(lambda: D.marginal_benefit_pmf(n), "n")
    _raises_naming(lambda: D.sample_uniform(0, n), "n")
    _raises_naming(lambda: D.sample_multinomial(0, n, [0.25] * 4), "n")
    if n != 2**40:  # moments are closed forms: any size is fine
        _raises_naming(lambda: D.ofi_moments(n, 3), "n_i")
    _raises_naming(lambda: D.ofi_pvalue(0.1, 3, n), "n_j")
    _raises_naming(lambda: D.ofi_pvalue(0.1, n, 3), "n_i")


@SETTINGS
@given(obs=st.sampled_from([2.5, -3.0, float("inf"), float("nan"), "x", None]))
def test_bad_observed_ofi(mode, obs):
    _raises_naming(lambda: D.ofi_pvalue(obs, 3, 4), "ofi_observed")


@SETTINGS
@given(num=st.sampled_from([0, -1, 1.5, "100", None, True, 2.0]))
def test_bad_num_samples(mode, num):
    _raises_naming(lambda: A.ofi_test([1, 0, 0, 1], [0, 1, 1, 0], num_samples=num), "num_samples")
    _raises_naming(lambda: A.ofi_test([1, 0, 0, 1], [0, 1, 1, 0], method="monte_carlo", key=0,
                                      num_samples=num), "num_samples")
    _raises_naming(lambda: A.pairwise_ofi_test([[1, 0, 0, 1], [0, 1, 1, 0]], num_samples=num), "num_samples")
    _raises_naming(lambda: A.ofi_bootstrap(0, [[1, 0, 0, 1], [0, 1, 1, 0]], num_samples=num), "num_samples")


@SETTINGS
@given(q=st.sampled_from([[1.5], [float("nan")], [-0.1], ["a"]]))
def test_bad_quantiles(mode, q):
    _raises_naming(lambda: D.monte_carlo(0, lambda c: c[..., 0], D.uniform_sampler(3), 8, quantiles=q),
                   "quantiles")


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: D.ofi_pvalue_cms([1, 0, 0, 0], [0, 0, 0, 0]), "cm_j"),
        (lambda: D.ofi_pvalue_cms([1, -1, 0, 2], [1, 0, 0, 0]), "cm_i"),
        (lambda: D.ofi_pvalue_cms([1, 0, 0, 0], [1, 0, 0, 0], null="bogus"), "null"),
        (lambda: D.ofi_pvalue_cms([1, 0, 0, 0], [1, 0, 0, 0], method="fft"), "method"),
        (lambda: D.ofi_pvalue(0.1, 3, 4, null=[1, 2, -1, 0]), "null"),
        (lambda: A.ofi_test([1, 0, 0, 1], [0, 1, 1, 0], null="cm"), "null"),
        (lambda: A.ofi_test([1, 0, 0, 1], [0, 1, 1, 0], method="monte_carlo"), "key"),
        (lambda: A.ofi_test([1, 0, 0, 1], [0, 1, 1, 0], method="monte_carlo", key="seed"), "key"),
        (lambda: A.ofi_bootstrap("seed", [[1, 0, 0, 1], [0, 1, 1, 0]]), "key"),
        (lambda: A.ofi_bootstrap(0, [[1, 0, 0, 1], [0, 1, 1, 0]], confidence="high"), "confidence"),
        (lambda: A.pairwise_ofi_test([[1, 0, 0, 1], [0, 0, 0, 0]]), "cms"),
        (lambda: D.merge_summaries([1, 2]), "parts"),
        (lambda: D.sample_dirichlet_multinomial(0, 2**31, [1, 1, 1, 1]), "n"),
        (lambda: D.sample_uniform(0, 3, (-1,)), "shape"),
    ],
)
def test_bad_inputs_name_the_argument(mode, call, name):
    _raises_naming(call, name)


@pytest.mark.parametrize("observed", ["5", "inf", "nan", "-2.5"])
def test_cli_simulate_refuses_an_impossible_observed_ofi(observed, capsys):
    from ofijax.cli import main

    assert main(["simulate", "--n", "6", "18", "--samples", "100", "--observed", observed]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--observed" in err[0]
