"""Simulation studies (#41): exact lattice histograms, float64 summaries, several statistics per
pass, Monte Carlo intervals, saved results. References: Fractions, brute force, NumPy."""

import json
import math
from fractions import Fraction

import jax
import numpy as np
import pytest

import ofijax
from ofijax import distributions as D
from ofijax.distributions import _summary as MC


def exact_bins(values, bins, lo, hi):
    """Exact numpy.histogram convention on rationals: [E_k, E_k+1), last bin closed."""
    flo, fhi = Fraction(repr(lo)), Fraction(repr(hi))  # the decimals the user wrote
    w = (fhi - flo) / bins
    hist, below, above = [0] * bins, 0, 0
    for v, c in values:
        if v < flo:
            below += c
        elif v > fhi:
            above += c
        elif v == fhi:
            hist[-1] += c
        else:
            hist[math.floor((v - flo) / w)] += c
    return hist, below, above


def b_values(n):
    pmf = D.marginal_benefit_pmf(n)
    return [(Fraction(int(d), n), c) for d, c in zip(pmf.numerators, pmf.counts)]


# the cases (n = 10, 20 bins; n = 100 with the defaults) and edges on the lattice
CASES = [(10, 20, (-1.0, 1.0)), (100, 100, (-1.0, 1.0)), (7, 7, (-1.0, 1.0)),
         (30, 50, (-0.5, 0.5)), (12, 4, (0.0, 1.0)), (20, 10, (-0.3, 0.7)), (9, 3, (-1.0005, 1.0005))]


@pytest.mark.parametrize("n,bins,rng", CASES)
def test_reduce_all_histogram_is_exact_against_fractions(n, bins, rng):
    s = D.reduce_all(n, ofijax.marginal_benefit, bins=bins, range=rng)
    hist, below, above = exact_bins(b_values(n), bins, *rng)
    assert s.hist.tolist() == hist
    assert (s.below, s.above) == (below, above)
    assert s.count == D.num_confusion_matrices(n)
    if n == 10 and bins == 20:
        assert hist[:6] == [1, 2, 4, 6, 9, 12]  # the exact counts


def test_reduce_all_moments_are_float64():
    s = D.reduce_all(10, ofijax.marginal_benefit, bins=20)
    assert abs(s.mean) < 1e-15
    assert math.isclose(s.var, 0.14, rel_tol=1e-14)


def test_monte_carlo_histogram_exact_on_lattice_edges():
    key, n, chunk, num, bins = jax.random.key(9), 10, 256, 1000, 20
    vals = []
    for c in range(-(-num // chunk)):
        cms = np.asarray(D.sample_uniform(jax.random.fold_in(key, c), n, (chunk,)))
        vals.append(cms[:, 2] - cms[:, 1])
    d = np.concatenate(vals)[:num]
    hist, below, above = exact_bins([(Fraction(int(x), n), 1) for x in d], bins, -1.0, 1.0)
    s = D.monte_carlo(key, ofijax.marginal_benefit, D.uniform_sampler(n), num, chunk_size=chunk,
                      bins=bins)
    assert s.hist.tolist() == hist and (s.below, s.above) == (below, above)
    # lattice histogram: one bin per value d/n, counts equal to a bincount of d
    lat = D.monte_carlo(key, ofijax.marginal_benefit, D.uniform_sampler(n), num, chunk_size=chunk,
                        lattice=n)
    assert lat.hist.tolist() == np.bincount(d + n, minlength=2 * n + 1).tolist()
    np.testing.assert_array_equal(lat.values, np.arange(-n, n + 1) / n)


def brute_quantile(pairs, total, q):
    """Smallest value whose CDF ≥ q (Fractions)."""
    cum = 0
    for v, c in pairs:
        cum += c
        if c and cum >= Fraction(repr(q)) * total:
            return v
    raise AssertionError


@pytest.mark.parametrize("n", [3, 10])
def test_lattice_quantiles_equal_pmf_inverse_cdf(n):
    levels = (0.0, 0.005, 0.1, 0.25, 0.5, 0.75, 0.9, 0.995, 1.0)
    pmf = D.marginal_benefit_pmf(n)
    s = D.reduce_all(n, ofijax.marginal_benefit, lattice=n, quantiles=levels)
    pairs = b_values(n)
    want = [float(brute_quantile(pairs, pmf.total, q)) for q in levels]
    assert s.quantiles.tolist() == want
    assert pmf.quantile(levels).tolist() == want
    assert s.hist.tolist() == list(pmf.counts)


def test_pmf_tail_probability_and_quantile_against_fractions():
    pmf = D.ofi_pmf(4, 6)
    vals = pmf.exact_values()
    for t in (0.0, 0.25, 0.3, 1 / 3, 0.5, 1.0):
        ft = Fraction(repr(t))
        want = Fraction(sum(c for v, c in zip(vals, pmf.counts) if abs(v) >= ft), pmf.total)
        assert pmf.tail_probability(t, exact=True) == want
        assert math.isclose(pmf.tail_probability(t), float(want), rel_tol=1e-12)
    mpmf = D.marginal_benefit_pmf(8, [0.1, 0.2, 0.3, 0.4])
    cdf = np.cumsum(mpmf.probs)
    for q in (0.05, 0.5, 0.95):
        assert mpmf.quantile([q])[0] == mpmf.values[np.searchsorted(cdf, q - 1e-12)]


def test_several_statistics_in_one_pass():
    ni, nj, num, chunk = 5, 8, 1500, 512
    pair = D.pair_sampler(D.uniform_sampler(ni), D.uniform_sampler(nj))
    key = jax.random.key(2)
    tree = D.monte_carlo(key, lambda c: {"b": ofijax.marginal_benefit(c)[:, 0],
                                         "both": jax.numpy.stack([ofijax.marginal_benefit(c)[:, 0],
                                                                  D.pair_statistic()(c)], -1)},
                         pair, num, chunk_size=chunk, bins=8, range=(-2, 2))
    s_b, s_ofi = tree["both"]  # a (chunk, 2) statistic gives two summaries, not one pooled
    # reference: the same draws by hand (chunk c uses fold_in(key, c)), NumPy float64
    cms = np.concatenate([np.asarray(pair(jax.random.fold_in(key, c), (chunk,)))
                          for c in range(-(-num // chunk))])[:num]
    b = (cms[..., 2] - cms[..., 1]) / cms.sum(-1)
    for got, vals in ((s_b, b[:, 0]), (s_ofi, b[:, 0] - b[:, 1]), (tree["b"], b[:, 0])):
        ref = MC.summary_from_values(vals, bins=8, range=(-2.0, 2.0))
        assert got.count == num and got.hist.tolist() == ref.hist.tolist()
        assert math.isclose(got.mean, ref.mean, rel_tol=1e-12, abs_tol=1e-15)
        assert math.isclose(got.var, ref.var, rel_tol=1e-12)
    merged = D.merge_summaries([s_b, s_ofi], [s_b, s_ofi])
    assert [m.count for m in merged] == [2 * num, 2 * num]


def test_off_lattice_values_are_refused():
    with pytest.raises(ValueError, match="^lattice:"):
        D.reduce_all(6, ofijax.marginal_benefit, lattice=4)
    with pytest.raises(ValueError, match="^lattice:"):
        D.reduce_all(6, ofijax.marginal_benefit, lattice=0)


def wilson_ref(k, n, z):
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def test_intervals_tail_and_quantiles():
    from scipy import stats

    n, num, key = 10, 1000, jax.random.key(4)  # the shapes (programs) of the test above
    s = D.monte_carlo(key, ofijax.marginal_benefit, D.uniform_sampler(n), num, lattice=n,
                      chunk_size=256)
    pmf = D.marginal_benefit_pmf(n)
    k = s.tail_count(0.4)  # |B| ≥ 0.4
    counts = s.hist
    assert k == int(counts[:7].sum() + counts[-7:].sum())
    p, lo, hi = s.tail_probability(0.4)
    z = stats.norm.ppf(0.975)
    assert p == k / num
    np.testing.assert_allclose((lo, hi), wilson_ref(k, num, z), rtol=1e-12)
    assert lo < float(pmf.tail_probability(0.4)) < hi  # 50/143 inside (seed fixed)
    m_lo, m_hi = s.mean_interval()
    assert math.isclose(m_hi - m_lo, 2 * z * s.stderr, rel_tol=1e-12)
    qi = s.quantile_intervals()
    exact_q = pmf.quantile(s.quantile_levels)
    assert np.all(qi[:, 0] <= s.quantiles) and np.all(s.quantiles <= qi[:, 1])
    assert np.all((qi[:, 0] <= exact_q) & (exact_q <= qi[:, 1]))
    assert s.tail_count(0.45) == s.tail_count(0.5)  # on the lattice d/10 any t is exact
    b = D.monte_carlo(key, ofijax.marginal_benefit, D.uniform_sampler(n), num, bins=20,
                      chunk_size=256)
    assert b.tail_count(0.4, "above") == s.tail_count(0.4, "above")  # 0.4 is a bin edge
    with pytest.raises(ValueError, match="^t:"):
        b.tail_count(0.45, "above")  # inside a bin: the histogram cannot tell


def test_summary_and_pmf_round_trip_json():
    s = D.reduce_all(5, ofijax.marginal_benefit, lattice=5)
    back = D.Summary.from_json(json.dumps(json.loads(s.to_json())))
    assert back.lattice == 5 and back.hist.tolist() == s.hist.tolist()
    assert (back.count, back.mean, back.var) == (s.count, s.mean, s.var)
    np.testing.assert_array_equal(back.edges, s.edges)
    np.testing.assert_array_equal(back.quantiles, s.quantiles)
    pmf = D.ofi_pmf(3, 5)
    p2 = D.PMF.from_dict(json.loads(json.dumps(pmf.to_dict())))
    assert p2.counts == pmf.counts and p2.total == pmf.total
    np.testing.assert_array_equal(p2.values, pmf.values)
    key = jax.random.key(7)
    saved = json.loads(s.to_json({"n": 5, "num_samples": 21, "key": key}))
    assert saved["settings"]["n"] == 5 and saved["settings"]["num_samples"] == 21
    k2 = jax.random.wrap_key_data(np.asarray(saved["settings"]["key"]["key_data"], np.uint32))
    assert np.array_equal(jax.random.key_data(k2), jax.random.key_data(key))
    with pytest.raises(TypeError, match="^settings:"):
        s.to_dict({"f": object()})
    bad = s.to_dict() | {"schema_version": 99}
    with pytest.raises(ValueError, match="^d: schema_version"):
        D.Summary.from_dict(bad)


def test_exact_under_x64_too():
    with jax.enable_x64(True):
        s = D.reduce_all(10, ofijax.marginal_benefit, bins=20)
    assert s.hist.tolist() == exact_bins(b_values(10), 20, -1.0, 1.0)[0]


def test_sweep_compiles_once_for_all_sizes_and_counts():
    events, calls = [], []
    jax.monitoring.register_event_duration_secs_listener(
        lambda name, *a, **k: events.append(name) if "jaxpr_trace" in name else None)

    def stat(c):  # a fresh statistic: its block program cannot have been compiled before
        calls.append(1)
        return ofijax.marginal_benefit(c)

    a = D.sweep(0, stat, [3, 7, 20, 300, 3000], 3000, chunk_size=1024, chunks_per_block=4)
    before = len(events)
    b = D.sweep(1, stat, [4, 9, 51, 1000, 100_000], [7000, 3000, 100, 9000, 20_000],
                chunk_size=1024, chunks_per_block=4)
    assert len(calls) == 1  # the statistic was traced once for ten sizes and six sample counts
    assert len(events) == before  # and the second sweep traced (compiled) nothing
    assert [s.count for s in a] == [3000] * 5
    assert [s.count for s in b] == [7000, 3000, 100, 9000, 20_000]
    for n, s in zip([4, 9, 51, 1000, 100_000], b):
        var = (n + 4) / (10 * n)
        assert abs(s.var - var) < 6 * var * math.sqrt(2 / s.count), n
    # uniform at n = 3: the 7 values d/3 fall in 7 distinct bins of width 0.02; chi-square
    pmf = D.marginal_benefit_pmf(3)
    expect = np.array(pmf.counts) / pmf.total * a[0].count
    chi2 = float(((a[0].hist[a[0].hist > 0] - expect) ** 2 / expect).sum())
    assert (a[0].hist > 0).sum() == 7 and chi2 < 30  # 6 d.o.f.: P(chi2 > 30) ≈ 4e-5
    # the same size gives the same summary whatever else is in the sweep
    c = D.sweep(1, stat, [51], 100, chunk_size=1024, chunks_per_block=4)[0]
    assert c.hist.tolist() == b[2].hist.tolist() and c.mean == b[2].mean


def test_sweep_multinomial_pairs():
    p = [0.4, 0.1, 0.2, 0.3]
    out = D.sweep(5, D.pair_statistic(), [(20, 30), (200, 50)], 20_000, null=p,
                  chunk_size=4096, chunks_per_block=2, range=(-2, 2))
    for (ni, nj), o in zip([(20, 30), (200, 50)], out):
        m = D.ofi_moments(ni, nj, null=p)
        assert abs(o.mean - float(m.mean)) < 5 * math.sqrt(float(m.var) / o.count)
        assert abs(o.var / float(m.var) - 1) < 0.06


def test_cli_simulate_out_writes_results_and_plots(tmp_path, capsys):
    from ofijax.cli import main

    out = tmp_path / "sim"
    args = ["simulate", "--n", "6", "9", "--samples", "4000", "--observed", "0.25",
            "--quantiles", "0.1", "0.9", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "95% CI" in text and "MC mean 95% CI" in text
    assert sorted(p.name for p in out.iterdir()) == ["b_i.png", "b_j.png", "ofi.png", "results.json"]
    res = json.loads((out / "results.json").read_text())
    assert res["schema_version"] == 1 and res["settings"]["quantiles"] == [0.1, 0.9]
    ofi_s = D.Summary.from_dict(res["quantities"]["ofi"]["monte_carlo"])
    assert ofi_s.lattice == 18 and ofi_s.count == 4000
    pmf = D.PMF.from_dict(res["quantities"]["ofi"]["exact_pmf"])
    assert pmf.counts == D.ofi_pmf(6, 9).counts
    for t in res["tails"]:  # exact tails through the one p-value engine; MC inside [0, 1]
        assert t["exact"] == pytest.approx(float(D.ofi_pvalue(t["t"], 6, 9)), rel=1e-12)
        assert t["mc_low"] <= t["mc"] <= t["mc_high"]
        assert t["mc"] == ofi_s.tail_count(t["t"]) / 4000
    assert res["quantities"]["b_i"]["exact_var"] == str(Fraction(10, 60))
    # refused in one line, exit 2, nothing written
    assert main(args) == 2 and "--out" in capsys.readouterr().err
    assert main(["simulate", "--n", "10", "--observed", "0.2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_simulate_subsample_exact_moments(capsys):
    from ofijax.cli import main

    assert main(["simulate", "--n", "20", "30", "--null", "subsample", "--cm", "40", "10", "20", "30",
                 "--samples", "3000"]) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("B, n = 20"))
    # E B = (20 − 10)/100; Var = (M − n)/(M − 1) [(p_FP + p_FN) − (p_FP − p_FN)²]/n
    var = Fraction(80, 99) * (Fraction(30, 100) - Fraction(10, 100) ** 2) / 20
    assert float(line.split()[6]) == pytest.approx(0.1, abs=1e-4)
    assert float(line.split()[7]) == pytest.approx(math.sqrt(var), abs=1e-4)
    assert abs(float(line.split()[5]) / math.sqrt(var) - 1) < 0.08  # Monte Carlo sd agrees
    assert "n/a (the exact p-value engine covers" in text


def test_eager_metrics_large_integer_arrays_are_float64_exact():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1000, size=(70_000, 4))  # above the jitted eager path's size
    b = rng.integers(1, 1000, size=(70_000, 4)).astype(np.uint16)
    bb = (b[:, 2].astype(np.int64) - b[:, 1]) / b.sum(1, dtype=np.int64)
    a[a.sum(1) == 0] = 1
    ba = (a[:, 2] - a[:, 1]) / a.sum(1)
    got = ofijax.marginal_benefit(a)
    assert got.dtype == np.float64 and np.array_equal(np.asarray(got), ba)
    assert np.array_equal(np.asarray(ofijax.ofi(a, b)), ba - bb)
    bad = a.copy()
    bad[7] = 0
    with pytest.raises(ValueError, match=r"^cm: a confusion matrix has n = 0 \(at index \(7,\)\)"):
        ofijax.marginal_benefit(bad)
    bad[7] = [-1, 0, 0, 2]
    with pytest.raises(ValueError, match="^cm_j: counts must be non-negative"):
        ofijax.ofi(a, bad)
    with pytest.raises(ValueError, match="^cm_j:"):
        ofijax.ofi(a, b[:5])


def test_eager_metrics_on_jax_draws_take_the_jitted_path():
    """A sampler's int32 JAX draws passed eagerly (the jitted eager path since #41): the float64
    values of NumPy's arithmetic, mixed with NumPy too, and the exact path's errors."""
    rng = np.random.default_rng(2)
    a = rng.integers(0, 1000, size=(70_000, 4)).astype(np.int32)
    a[a.sum(1) == 0] = 1
    b = rng.integers(1, 1000, size=(70_000, 4)).astype(np.int32)
    ja, jb = jax.device_put(a), jax.device_put(b)
    ba = (a[:, 2].astype(np.int64) - a[:, 1]) / a.sum(1, dtype=np.int64)
    bb = (b[:, 2].astype(np.int64) - b[:, 1]) / b.sum(1, dtype=np.int64)
    got = ofijax.ofi(ja, jb)
    assert got.dtype == np.float64 and np.array_equal(np.asarray(got), ba - bb)
    assert np.array_equal(np.asarray(ofijax.marginal_benefit(ja)), ba)
    assert np.array_equal(np.asarray(ofijax.ofi(ja, b)), ba - bb)  # JAX and NumPy mixed
    bad = a.copy()
    bad[3] = [-1, 0, 0, 2]
    with pytest.raises(ValueError, match="^cm_j: counts must be non-negative"):
        ofijax.ofi(ja, jax.device_put(bad))
