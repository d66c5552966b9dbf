"""Streaming reductions and Monte Carlo of ofijax.distributions."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction

import jax
import numpy as np
import pytest

import ofijax
from ofijax import distributions as D
from ofijax.distributions import _combinatorics as C
from ofijax.distributions import _exact as DX
from ofijax.distributions import _montecarlo as MC

# Bin edges that avoid every lattice point d/n of the small n used below.
RANGE = (-1.0005, 1.0005)


def reference_summary(values: np.ndarray, bins: int) -> MC.Summary:
    return MC.summary_from_values(values, bins=bins, range=RANGE)


@pytest.mark.parametrize("n", [1, 7, 40])
def test_reduce_all_matches_enumeration(n):
    m = C.enumerate_cms(n)
    b = (m[:, 2] - m[:, 1]) / n
    ref = reference_summary(b, 16)
    s = D.reduce_all(n, ofijax.marginal_benefit, bins=16, range=RANGE, chunk_size=256)
    assert s.count == len(m) == D.num_confusion_matrices(n)
    assert s.undefined == 0
    assert s.hist.tolist() == ref.hist.tolist()
    assert (s.below, s.above) == (0, 0)
    assert s.min == -1.0 and s.max == 1.0
    assert abs(s.mean) < 1e-6
    assert math.isclose(s.var, (n + 4) / (10 * n), rel_tol=1e-5)


def test_reduce_all_counts_undefined_values():
    # TPR = TP / (TP + FN) is undefined exactly when TP = FN = 0: n + 1 matrices (ofi_notes §10)
    n = 9
    s = D.reduce_all(n, ofijax.true_positive_rate, bins=10, range=(0.0, 1.0), chunk_size=64)
    assert s.undefined == n + 1
    assert s.count == D.num_confusion_matrices(n) - (n + 1)
    m = C.enumerate_cms(n)
    tpr = m[:, 0] / np.maximum(m[:, 0] + m[:, 1], 1)
    ok = (m[:, 0] + m[:, 1]) > 0
    assert math.isclose(s.mean, tpr[ok].mean(), rel_tol=1e-5)


def test_reduce_all_any_metric_and_local_lambda():
    n = 12
    local = jax.jit(lambda cm: (cm[..., 2] - cm[..., 1]) / cm.sum(-1))
    a = D.reduce_all(n, local, bins=8, range=RANGE)
    b = D.reduce_all(n, ofijax.marginal_benefit, bins=8, range=RANGE)
    assert a.hist.tolist() == b.hist.tolist() and math.isclose(a.var, b.var, rel_tol=1e-6)


def exact_b_moment4(n: int) -> float:
    pmf = D.marginal_benefit_pmf(n)
    return float(sum(Fraction(int(d) ** 4, n**4) * c for d, c in zip(pmf.numerators, pmf.counts))
                 / pmf.total)


def test_monte_carlo_uniform_matches_theorem_d2():
    n, num = 10, 200_000
    s = D.monte_carlo(jax.random.key(42), ofijax.marginal_benefit, D.uniform_sampler(n), num,
                      chunk_size=1 << 14)
    var = (n + 4) / (10 * n)
    assert s.count == num and s.undefined == 0
    assert abs(s.mean) < 4.5 * math.sqrt(var / num)
    sd_var = math.sqrt((exact_b_moment4(n) - var**2) / num)
    assert abs(s.var - var) < 4.5 * sd_var
    assert s.hist.sum() == num
    # histogram-based quantiles agree with the exact PMF's quantiles to a bin
    pmf = D.marginal_benefit_pmf(n)
    cdf = np.cumsum(pmf.probs)
    for lv, q in zip(s.quantile_levels, s.quantiles):
        exact = pmf.values[np.searchsorted(cdf, lv)]
        assert abs(q - exact) <= 0.1 + 0.03, (lv, q, exact)


def test_monte_carlo_quarter_multinomial_is_not_uniform():
    n = 100
    s = D.monte_carlo(jax.random.key(1), ofijax.marginal_benefit,
                      D.multinomial_sampler(n, [0.25] * 4), 50_000, chunk_size=1 << 14)
    assert abs(s.var / 0.005 - 1) < 0.05  # Var B = 0.5/n, not (n+4)/(10n) ≈ 0.104


def test_monte_carlo_partial_chunks_and_determinism():
    f = ofijax.marginal_benefit
    a = D.monte_carlo(jax.random.key(3), f, D.uniform_sampler(5), 1000, chunk_size=128)
    b = D.monte_carlo(jax.random.key(3), f, D.uniform_sampler(5), 1000, chunk_size=128)
    assert a.count == 1000 and a.hist.sum() == 1000
    assert (a.mean, a.var, a.hist.tolist()) == (b.mean, b.var, b.hist.tolist())
    c = D.monte_carlo(jax.random.key(4), f, D.uniform_sampler(5), 1000, chunk_size=128)
    assert c.mean != a.mean
    one = D.monte_carlo(jax.random.key(3), f, D.uniform_sampler(5), 1, chunk_size=128)
    assert one.count == 1 and one.var == 0.0


def test_monte_carlo_equals_explicit_chunks():
    # chunk c uses fold_in(key, c): reproduce the stream by hand and compare with NumPy
    key, n, chunk, num = jax.random.key(9), 8, 256, 1000
    vals = []
    for c in range(-(-num // chunk)):
        cms = np.asarray(D.sample_uniform(jax.random.fold_in(key, c), n, (chunk,)))
        vals.append((cms[:, 2] - cms[:, 1]) / n)
    vals = np.concatenate(vals)[:num]
    ref = reference_summary(vals, 20)
    s = D.monte_carlo(key, ofijax.marginal_benefit, D.uniform_sampler(n), num,
                      chunk_size=chunk, bins=20, range=RANGE)
    assert s.hist.tolist() == ref.hist.tolist()
    assert math.isclose(s.mean, ref.mean, abs_tol=1e-6)
    assert math.isclose(s.var, ref.var, rel_tol=1e-5)
    assert (s.min, s.max) == (ref.min, ref.max)


def test_merge_summaries_is_exact_merge():
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000)
    x[::50] = np.nan
    parts = [MC.summary_from_values(x[a:b], bins=10, range=(-3, 3))
             for a, b in ((0, 100), (100, 650), (650, 1000))]
    m = D.merge_summaries(*parts)
    ref = MC.summary_from_values(x, bins=10, range=(-3, 3))
    assert (m.count, m.undefined, m.below, m.above) == (ref.count, ref.undefined, ref.below,
                                                        ref.above)
    assert m.hist.tolist() == ref.hist.tolist()
    assert math.isclose(m.mean, ref.mean, rel_tol=1e-12)
    assert math.isclose(m.var, ref.var, rel_tol=1e-12)
    assert (m.min, m.max) == (ref.min, ref.max)
    np.testing.assert_allclose(m.quantiles, ref.quantiles)
    with pytest.raises(ValueError, match="parts:"):
        D.merge_summaries(parts[0], MC.summary_from_values(x, bins=5, range=(-3, 3)))


def test_monte_carlo_merge_of_two_runs():
    f, s5 = ofijax.marginal_benefit, D.uniform_sampler(5)
    a = D.monte_carlo(jax.random.key(0), f, s5, 1000, chunk_size=128)  # same plan as below:
    b = D.monte_carlo(jax.random.key(1), f, s5, 1000, chunk_size=128)  # no new compilation
    m = D.merge_summaries(a, b)
    assert m.count == 2000 and m.hist.sum() == 2000
    assert math.isclose(m.mean, (a.mean + b.mean) / 2, rel_tol=1e-9, abs_tol=1e-12)
    pooled = (a.var + (a.mean - m.mean) ** 2) + (b.var + (b.mean - m.mean) ** 2)
    assert math.isclose(m.var, pooled / 2, rel_tol=1e-9)


def test_monte_carlo_ofi_pairs_and_threshold():
    ni, nj = 6, 9
    stat = D.pair_statistic(ofijax.ofi)
    s = D.monte_carlo(jax.random.key(5), stat, D.pair_sampler(D.uniform_sampler(ni),
                                                               D.uniform_sampler(nj)),
                      60_000, chunk_size=1 << 14, range=(-2, 2))
    var = float(D.ofi_moments(ni, nj).var)
    assert abs(s.mean) < 4.5 * math.sqrt(var / s.count)
    assert abs(s.var / var - 1) < 0.04
    exact = D.ofi_threshold(ni, nj, level=0.9)
    mc = D.ofi_threshold(ni, nj, level=0.9, method="monte_carlo", key=jax.random.key(0),
                         num_samples=60_000)
    assert abs(mc.threshold - exact.threshold) < 0.06
    assert mc.sigma_ofi == exact.sigma_ofi


def test_progress_goes_through_the_one_helper(monkeypatch, capsys):
    import ofijax._progress as prog

    assert MC.Progress is prog.Progress  # no second progress helper
    monkeypatch.setenv("OFIJAX_PROGRESS", "1")
    p = MC.Progress(100, "demo", delay=0.0)
    p.update(50)
    p.close()
    assert "demo: 50/100" in capsys.readouterr().err
    monkeypatch.setenv("OFIJAX_PROGRESS", "0")
    q = MC.Progress(100, "quiet", delay=0.0)
    q.update(50)
    q.close()
    assert capsys.readouterr().err == ""


_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    import jax, ofijax
    from ofijax import distributions as D
    assert len(jax.devices()) == int(sys.argv[1]), jax.devices()
    out = {}
    s = D.monte_carlo(jax.random.key(7), ofijax.marginal_benefit, D.uniform_sampler(9), 50_000,
                      chunk_size=4096, bins=12)
    out["mc"] = [s.count, s.undefined, s.mean, s.var, s.min, s.max, s.hist.tolist()]
    r = D.reduce_all(30, ofijax.marginal_benefit, bins=12, chunk_size=1024)
    out["all"] = [r.count, r.undefined, r.mean, r.var, r.min, r.max, r.hist.tolist()]
    print(json.dumps(out))
    """
)


def _run(devices: int) -> dict:
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["JAX_PLATFORMS"] = "cpu"
    env["OFIJAX_PROGRESS"] = "0"
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", _SUBPROCESS, str(devices)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_sharded_equals_single_device():
    one, four = _run(1), _run(4)
    for name in ("mc", "all"):
        a, b = one[name], four[name]
        assert a[0] == b[0] and a[1] == b[1] and a[6] == b[6]  # counts and histogram exact
        assert a[4] == b[4] and a[5] == b[5]  # min, max exact
        assert math.isclose(a[2], b[2], rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(a[3], b[3], rel_tol=1e-9)
    assert one["all"][0] == D.num_confusion_matrices(30)


@pytest.mark.parametrize(
    "kwargs,arg",
    [
        (dict(num_samples=0), "num_samples:"),
        (dict(num_samples=-5), "num_samples:"),
        (dict(num_samples=2.5), "num_samples:"),
        (dict(num_samples=10, bins=0), "bins:"),
        (dict(num_samples=10, range=(1, -1)), "range:"),
        (dict(num_samples=10, chunk_size=0), "chunk_size:"),
    ],
)
def test_monte_carlo_bad_inputs(kwargs, arg):
    num = kwargs.pop("num_samples")
    with pytest.raises(ValueError, match=arg):
        D.monte_carlo(jax.random.key(0), ofijax.marginal_benefit, D.uniform_sampler(3), num,
                      **kwargs)


def test_reduce_all_bad_inputs():
    with pytest.raises(ValueError, match="n:"):
        D.reduce_all(0, ofijax.marginal_benefit)
    with pytest.raises(ValueError, match="n:"):
        D.reduce_all(4000, ofijax.marginal_benefit)
    with pytest.raises(ValueError, match="statistic:"):
        D.monte_carlo(jax.random.key(0), None, D.uniform_sampler(3), 10)
    with pytest.raises(ValueError, match="sampler:"):
        D.monte_carlo(jax.random.key(0), ofijax.marginal_benefit, 3, 10)


def test_num_samples_accepts_whole_floats():
    assert DX._check_num_samples(1e10) == 10**10
    assert DX._check_num_samples(np.int64(7)) == 7
