"""Exact results of ofijax.distributions against brute force, Fractions and SymPy."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ofijax
from ofijax import distributions as D
from ofijax.distributions import _combinatorics as C
from ofijax.distributions import _exact as DX
from ofijax.distributions import _sampling as S

NS = range(1, 41)


def brute_force(n: int) -> np.ndarray:
    """M(n) by a plain triple loop (independent of the library's enumeration)."""
    rows = [
        (tp, fn, fp, n - tp - fn - fp)
        for tp in range(n + 1)
        for fn in range(n + 1 - tp)
        for fp in range(n + 1 - tp - fn)
    ]
    return np.array(rows, dtype=np.int64)


_BF = {n: brute_force(n) for n in NS}


@pytest.mark.parametrize("n", NS)
def test_counts_against_brute_force(n):
    m = _BF[n]
    assert D.num_confusion_matrices(n) == len(m) == math.comb(n + 3, 3)
    for cell in range(4):  # Theorem B.1 holds for every cell (they are exchangeable)
        hist = np.bincount(m[:, cell], minlength=n + 1)
        assert hist.tolist() == [D.cell_value_count(x, n) for x in range(n + 1)]
    # Corollary B.3: the counts of one cell add up to N(n)
    assert sum(D.cell_value_count(x, n) for x in range(n + 1)) == D.num_confusion_matrices(n)
    # Lemma C.1: C(x; n + 1) − C(x; n) = n − x + 2, checked on the brute-force counts
    nxt = np.bincount(brute_force(n + 1)[:, 0], minlength=n + 2) if n < 12 else None
    for x in range(n + 1):
        grow = (C.cell_count(x, n + 1) if nxt is None else int(nxt[x])) - D.cell_value_count(x, n)
        assert grow == n - x + 2
    # triangular numbers: C(x; n) = (n − x + 1)?
    assert all(D.cell_value_count(x, n) == C.tri(n - x + 1) for x in range(n + 1))


@pytest.mark.parametrize("n", NS)
def test_enumeration_and_rank_bijection(n):
    e = D.enumerate_confusion_matrices(n)
    assert sorted(map(tuple, e.tolist())) == sorted(map(tuple, _BF[n].tolist()))
    assert (D.rank_confusion_matrix(e) == np.arange(len(e))).all()
    if n <= 12:
        assert all(tuple(e[r]) == C.unrank_cms_np(r, n) for r in range(len(e)))


def test_jax_unranking_is_the_enumeration():
    ns = [1, 2, 3, 5, 17, 40, 120]
    ranks = np.concatenate([np.arange(C.num_cms(n)) for n in ns]).astype(np.uint32)
    nn = np.concatenate([np.full(C.num_cms(n), n) for n in ns]).astype(np.int32)
    got = np.asarray(S.unrank_cms_jit(jnp.asarray(ranks), jnp.asarray(nn)))
    assert got.dtype == np.int32
    ref = np.concatenate([D.enumerate_confusion_matrices(n) for n in ns])
    assert (got == ref).all()
    # the public wrapper
    assert D.unrank_confusion_matrix(np.arange(C.num_cms(7)), 7).tolist() == (
        D.enumerate_confusion_matrices(7).tolist()
    )


def test_jax_unranking_at_every_block_boundary():
    ranks, nn = [], []
    for n in (1000, 1621, S.UNRANK_MAX_N):
        rs = []
        for m in range(n + 1):
            lo = C.num_cms(m - 1)
            for r in (lo - 1, lo, lo + 1, lo + C.tri(m) // 2, lo + C.tri(m + 1) - 1):
                if 0 <= r < C.num_cms(n):
                    rs.append(r)
        rs = np.unique(np.array(rs, dtype=np.int64))
        ranks.append(rs)
        nn.append(np.full(rs.size, n))
    ranks, nn = np.concatenate(ranks), np.concatenate(nn)
    got = np.asarray(S.unrank_cms_jit(jnp.asarray(ranks.astype(np.uint32)), jnp.asarray(nn, jnp.int32)))
    ref = np.array([C.unrank_cms_np(int(r), int(k)) for r, k in zip(ranks, nn)])
    assert (got == ref).all()
    assert (D.rank_confusion_matrix(got) == ranks).all()
    assert (got.sum(-1) == nn).all()


def test_packed_lookup_table_is_the_enumeration():
    for n in (0, 1, 2, 5, 17, 40):
        table = S.packed_table(n)
        assert table.dtype == jnp.uint32 and table.shape == (C.num_cms(n),)
        got = np.asarray(S.lookup_cms(jnp.arange(C.num_cms(n), dtype=jnp.uint32), table))
        assert got.dtype == np.int32
        assert (got == C.enumerate_cms(n)).all()
        closed = np.asarray(S.unrank_cms_jit(jnp.arange(C.num_cms(n), dtype=jnp.uint32), np.int32(n)))
        assert (got == closed).all()
    # largest table: random ranks, both block ends and the last rank against the closed form
    n = S.LUT_MAX_N
    rng = np.random.default_rng(3)
    ranks = np.concatenate([rng.integers(0, C.num_cms(n), 20_000),
                            [C.num_cms(m) - d for m in (0, 100, n) for d in (1, 0) if C.num_cms(m) - d < C.num_cms(n)],
                            [0, C.num_cms(n) - 1]]).astype(np.uint32)
    got = np.asarray(S.lookup_cms(jnp.asarray(ranks), S.packed_table(n)))
    ref = np.asarray(S.unrank_cms_jit(jnp.asarray(ranks), np.int32(n)))
    assert (got == ref).all()
    assert (D.rank_confusion_matrix(got) == ranks).all()
    with pytest.raises(ValueError, match="n:"):
        S.packed_table_np(S.LUT_MAX_N + 1)


_unrank_range = jax.jit(S.unrank_range, static_argnums=(1, 2))


def test_unrank_range_equals_closed_form():
    # ranges inside one TP block (fast path) and across many blocks (general path)
    for n, size in ((40, 64), (300, 256), (1000, 4096)):
        N = C.num_cms(n)
        bases = [0, 1, 5, 100, N // 3, C.num_cms(n - 1) - size // 2, C.num_cms(n - 1), N - size]
        for base in bases:
            got = np.asarray(_unrank_range(jnp.uint32(base), size, n))
            ref = np.asarray(S.unrank_cms_jit(jnp.uint32(base) + jnp.arange(size, dtype=jnp.uint32),
                                              np.int32(n)))
            assert (got == ref).all(), (n, size, base)
            assert (D.rank_confusion_matrix(got) == base + np.arange(size)).all()
    # reduce_all's chunk generator: lookup table and closed form give the same chunks
    gen = DX._RankGen(40, 256)
    cids = jnp.arange(C.num_cms(40) // 256, dtype=jnp.int32)
    a = jax.jit(jax.vmap(lambda c, ops: gen(None, c, ops), (0, None)))(cids, gen.operands())
    b = jax.jit(jax.vmap(lambda c: gen(None, c)))(cids)
    assert (np.asarray(a) == np.asarray(b)).all()


@pytest.mark.parametrize("n", NS)
def test_marginal_benefit_pmf_and_theorem_d2(n):
    m = _BF[n]
    d = m[:, 2] - m[:, 1]
    pmf = D.marginal_benefit_pmf(n)
    assert pmf.numerators.tolist() == list(range(-n, n + 1))
    assert list(pmf.counts) == np.bincount(d + n, minlength=2 * n + 1).tolist()
    assert pmf.total == len(m)
    assert [D.marginal_benefit_count(k, n) for k in range(-n, n + 1)] == list(pmf.counts)
    assert sum(pmf.exact_probs()) == 1
    # Lemma D.1 and Theorem D.2 as exact rationals, from brute force
    N = len(m)
    mean_bf = Fraction(int(d.sum()), n * N)
    var_bf = Fraction(int((d * d).sum()), n * n * N) - mean_bf**2
    mom = D.marginal_benefit_moments(n)
    assert mom.mean == mean_bf == 0
    assert mom.var == var_bf == Fraction(n + 4, 10 * n)
    if n > 1:  # Corollary D.4 as printed, (n + 4)/10, is a typo
        assert var_bf != Fraction(n + 4, 10)
    np.testing.assert_allclose(pmf.values, pmf.numerators / n)


def test_paper_variance_values():
    assert D.marginal_benefit_moments(1).var == Fraction(1, 2)
    assert D.marginal_benefit_moments(10).var == Fraction(7, 50)


def test_theorem_d2_symbolically():
    sp = pytest.importorskip("sympy")
    n, tp, fp, fn = sp.symbols("n TP FP FN", integer=True, nonnegative=True)
    total = sp.summation((fp - fn) ** 2, (fn, 0, n - tp - fp), (fp, 0, n - tp), (tp, 0, n))
    # eq. (30): Σ ((FP − FN)/n)² = (n+1)(n+2)(n+3)(n+4) / (60 n)
    assert sp.simplify(total / n**2 - (n + 1) * (n + 2) * (n + 3) * (n + 4) / (60 * n)) == 0
    N = (n + 1) * (n + 2) * (n + 3) / 6
    var = sp.simplify(total / n**2 / N)
    assert sp.simplify(var - (n + 4) / (10 * n)) == 0  # Theorem D.2 / corrected Corollary D.4
    assert sp.simplify(var - (n + 4) / 10) != 0  # the printed Corollary D.4 is wrong
    assert sp.limit(var, n, sp.oo) == sp.Rational(1, 10)  # Corollary D.5
    assert sp.limit(sp.sqrt(var), n, sp.oo) == 1 / sp.sqrt(10)  # Corollary D.3
    # the O(n) count of FP − FN = d, summed in closed form, also gives N(n)
    r = sp.symbols("r", integer=True, nonnegative=True)
    q = sp.symbols("q", integer=True, nonnegative=True)
    # even r = 2q: Σ_{j≤q} (2q − 2j + 1) = (q + 1)²; odd r = 2q + 1: (q + 1)(q + 2)
    j = sp.symbols("j", integer=True, nonnegative=True)
    assert sp.expand(sp.summation(2 * q - 2 * j + 1, (j, 0, q)) - (q + 1) ** 2) == 0
    assert sp.expand(sp.summation(2 * q - 2 * j + 2, (j, 0, q)) - (q + 1) * (q + 2)) == 0
    del r


def multinomial_prob(cm, p):
    n = sum(cm)
    out = math.factorial(n)
    for c, pc in zip(cm, p):
        out = out / math.factorial(c) * pc**c
    return out


@pytest.mark.parametrize("probs", [(0.1, 0.2, 0.3, 0.4), (0.25,) * 4, (0.5, 0.0, 0.5, 0.0)])
@pytest.mark.parametrize("n", [1, 4, 9])
def test_multinomial_pmf_against_enumeration(n, probs):
    m = _BF[n]
    w = np.array([multinomial_prob(row, probs) for row in m.tolist()])
    ref = np.bincount(m[:, 2] - m[:, 1] + n, weights=w, minlength=2 * n + 1)
    pmf = D.marginal_benefit_pmf(n, probs)
    assert pmf.counts is None
    np.testing.assert_allclose(pmf.probs, ref, atol=1e-13)
    mom = D.marginal_benefit_moments(n, probs)
    mean = float((pmf.probs * pmf.values).sum())
    np.testing.assert_allclose(mom.mean, mean, atol=1e-12)
    np.testing.assert_allclose(mom.var, float((pmf.probs * pmf.values**2).sum()) - mean**2,
                               atol=1e-12)


def test_quarter_multinomial_is_not_uniform():
    # ofi_notes §8: Var B = 0.5/n under p = 1/4, (n+4)/(10n) under the uniform null
    q = D.marginal_benefit_moments(1000, [Fraction(1, 4)] * 4)
    assert q.var == Fraction(1, 2000)
    assert math.isclose(math.sqrt(q.var), 0.0224, abs_tol=1e-4)
    assert D.marginal_benefit_moments(1000).var == Fraction(1004, 10000)


def _pair_bruteforce(ni, nj, probs=None):
    mi, mj = _BF[ni], _BF[nj]
    if probs is None:
        wi, wj = np.ones(len(mi)), np.ones(len(mj))
    else:
        wi = np.array([multinomial_prob(r, probs) for r in mi.tolist()])
        wj = np.array([multinomial_prob(r, probs) for r in mj.tolist()])
    out: dict[Fraction, float] = {}
    for (a, x), (b, y) in itertools.product(zip(mi.tolist(), wi), zip(mj.tolist(), wj)):
        v = Fraction(a[2] - a[1], ni) - Fraction(b[2] - b[1], nj)
        out[v] = out.get(v, 0) + x * y
    return out


@pytest.mark.parametrize("ni,nj", [(1, 1), (3, 5), (4, 4), (2, 7), (6, 4)])
def test_ofi_pmf_against_pairs(ni, nj):
    ref = _pair_bruteforce(ni, nj)
    pmf = D.ofi_pmf(ni, nj)
    got = dict(zip(pmf.exact_values(), pmf.counts))
    assert got == {k: int(v) for k, v in ref.items()}
    assert pmf.total == D.num_confusion_matrices(ni) * D.num_confusion_matrices(nj)
    # matches the core metric on the same pairs
    mi, mj = _BF[ni], _BF[nj]
    vals = np.asarray(ofijax.ofi(mi[:, None, :], mj[None, :, :]), dtype=np.float64).ravel()
    assert np.allclose(np.sort(np.unique(np.round(vals, 5))), np.round(pmf.values, 5))
    mom = D.ofi_moments(ni, nj)
    assert mom.mean == 0
    assert mom.var == Fraction(ni + 4, 10 * ni) + Fraction(nj + 4, 10 * nj)
    ex = sum(v * c for v, c in zip(pmf.exact_values(), pmf.counts))
    ex2 = sum(v * v * c for v, c in zip(pmf.exact_values(), pmf.counts))
    assert Fraction(ex2, pmf.total) - Fraction(ex, pmf.total) ** 2 == mom.var


@pytest.mark.parametrize("ni,nj", [(3, 5), (4, 4)])
def test_ofi_pmf_multinomial_null(ni, nj):
    ref_cm = [2, 1, 3, 4]
    probs = [c / 10 for c in ref_cm]
    ref = _pair_bruteforce(ni, nj, probs)
    pmf = D.ofi_pmf(ni, nj, null=ref_cm)
    got = dict(zip(pmf.exact_values(), pmf.probs))
    assert set(got) == {k for k, v in ref.items() if v > 0}
    for k, v in got.items():
        assert math.isclose(v, ref[k], rel_tol=1e-9, abs_tol=1e-15)
    mom = D.ofi_moments(ni, nj, null=ref_cm)
    assert mom.mean == 0
    vi = (Fraction(4, 10) - Fraction(4, 100)) / ni
    vj = (Fraction(4, 10) - Fraction(4, 100)) / nj
    assert mom.var == vi + vj


def test_ofi_threshold_and_pvalue_exact():
    ni, nj = 4, 6
    ref = _pair_bruteforce(ni, nj)
    total = sum(ref.values())
    absmass: dict[Fraction, float] = {}
    for k, v in ref.items():
        absmass[abs(k)] = absmass.get(abs(k), 0) + v / total
    keys = sorted(absmass)
    cdf = np.cumsum([absmass[k] for k in keys])
    for level in (0.5, 0.9, 0.95, 0.99):
        t = D.ofi_threshold(ni, nj, level=level)
        i = keys.index(Fraction(t.threshold).limit_denominator(1000))
        assert cdf[i] >= level - 1e-12 and (i == 0 or cdf[i - 1] < level)
        assert t.paper_threshold == 0.3
        assert math.isclose(t.sigma_b_i, math.sqrt((ni + 4) / (10 * ni)))
        assert math.isclose(t.sigma_ofi, math.sqrt(t.sigma_b_i**2 + t.sigma_b_j**2))
    for k in keys:
        p = D.ofi_pvalue(float(k), ni, nj)
        assert math.isclose(p, sum(absmass[x] for x in keys if x >= k), rel_tol=1e-12)
        assert math.isclose(D.ofi_pvalue(-float(k), ni, nj), p)
    ps = D.ofi_pvalue(np.array([0.0, 0.05, 2.0]), ni, nj)
    assert ps.shape == (3,) and ps[0] == 1.0
    # OFI from real counts snaps to the lattice
    obs = float(ofijax.ofi([1, 0, 3, 0], [2, 2, 1, 1]))
    assert math.isclose(D.ofi_pvalue(obs, 4, 6), sum(absmass[x] for x in keys if x >= abs(
        Fraction(3, 4) - Fraction(-1, 6))))
    # the uniform-null threshold for two groups is far above the paper's one-group 0.3
    big = D.ofi_threshold(100, 100)
    assert big.threshold > 0.8 and big.sigma_ofi > 0.44


def test_multinomial_null_threshold_shrinks_with_n():
    ref = [30, 10, 10, 50]
    t_small = D.ofi_threshold(20, 20, null=ref).threshold
    t_big = D.ofi_threshold(500, 500, null=ref).threshold
    assert t_big < t_small
    assert math.isclose(D.ofi_pvalue(0.0, 30, 40, null=ref), 1.0)


# ------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "call,arg",
    [
        (lambda: D.num_confusion_matrices(0), "n:"),
        (lambda: D.num_confusion_matrices(-3), "n:"),
        (lambda: D.num_confusion_matrices(2.5), "n:"),
        (lambda: D.num_confusion_matrices(True), "n:"),
        (lambda: D.cell_value_count(5, 3), "x:"),
        (lambda: D.marginal_benefit_pmf(3.0), "n:"),
        (lambda: D.marginal_benefit_pmf(5, [0.5, 0.5, 0.5, 0.5]), "probs:"),
        (lambda: D.marginal_benefit_pmf(5, [1.5, -0.5, 0, 0]), "probs:"),
        (lambda: D.marginal_benefit_pmf(5, [0.5, 0.5]), "probs:"),
        (lambda: D.ofi_pmf(0, 3), "n_i:"),
        (lambda: D.ofi_pmf(3, -1), "n_j:"),
        (lambda: D.ofi_pmf(3, 3, null="flat"), "null:"),
        (lambda: D.ofi_pmf(3, 3, null=[1, -1, 0, 2]), "null:"),
        (lambda: D.ofi_threshold(3, 3, level=1.5), "level:"),
        (lambda: D.ofi_threshold(3, 3, method="approx"), "method:"),
        (lambda: D.ofi_threshold(3, 3, method="monte_carlo"), "key:"),
        (lambda: D.enumerate_confusion_matrices(1000), "n:"),
        (lambda: D.ofi_pvalue(float("nan"), 3, 3), "ofi_observed:"),
    ],
)
def test_bad_inputs(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
