"""Randomization tests: calibration under true nulls (both null kinds), planted effects, the Bias
Scan hook against serial scans, chunk/device independence."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from ofijax import scan
from ofijax._jaxcache import compiler_options
from ofijax.scan import bias_scan
from ofijax.scan._api import _arrays, _prepare
from ofijax.scan._randomization import (
    bias_scan_null_scores,
    null_draw,
    p_value,
    pad_problem,
    replicate_key,
)

# The IJDI paper's harm orientation (label 1 = harmful), as in tests/test_ijdi.py.
fpr_scan = partial(scan.fpr_scan, beneficial_label=0)
ijdi_scan = partial(scan.ijdi_scan, beneficial_label=0)

# The covariates of tests/test_ijdi.py (3 attributes, 18 cells × 10 rows): shared compilations.
_CELLS = np.array([(a, b, c) for a in range(3) for b in range(3) for c in range(2)])
CODES = np.repeat(_CELLS, 10, axis=0)
N = len(CODES)
DF = pd.DataFrame(CODES, columns=["a", "b", "c"])
NEG = np.zeros(N, int)


@partial(jax.jit, compiler_options=compiler_options())
def _calibration(keys, is_perm):
    """For each key: a data set from H0 (ŷ ~ Bernoulli(0.3) on every negative), its FPR-Scan score
    and the scores of 9 null replicates ("bernoulli" or "permutation"). The observed and replicate
    data sets are drawn first and scanned as one batch, so the program holds one copy of the scan
    (compiled with the small-scan options, as ofijax's own replicate programs)."""
    from ofijax.scan._alg1 import make_params
    from ofijax.scan._engine import make_problem
    from ofijax.scan._randomization import NullSpec, procedure

    data = pad_problem(make_problem(CODES.astype(np.int32), np.array([3, 3, 2])),
                       np.zeros(N), np.zeros(N))
    spec = NullSpec("rate", "bernoulli", 10, None, t_bounds=(0.0, math.log(1e6)))
    params = make_params(penalty=0.0)

    def run(k, y, rc):
        return procedure(spec, k, y, data.p, data.valid, rc, data.problem, None, params).score

    def draw(key):
        k_data, k_obs, k_rep = jax.random.split(key, 3)
        y = ((jax.random.uniform(k_data, data.y.shape) < 0.3) & data.valid).astype(jnp.float64)
        p_null = jnp.where(data.valid, jnp.sum(y) / N, 0.0)

        def replicate(k):
            k_null, k_scan = jax.random.split(k)
            yb, _ = null_draw("bernoulli", k_null, y, p_null, data.valid, data.row_cell)
            _, rcp = null_draw("permutation", k_null, y, p_null, data.valid, data.row_cell)
            return k_scan, jnp.where(is_perm, y, yb), jnp.where(is_perm, rcp, data.row_cell)

        ks, ys, rcs = jax.vmap(replicate)(jax.random.split(k_rep, 9))
        return (jnp.concatenate([k_obs[None], ks]), jnp.concatenate([y[None], ys]),
                jnp.concatenate([data.row_cell[None], rcs]))

    ks, ys, rcs = jax.vmap(draw)(keys)  # (runs, 1 + 9, ...): the observed set first
    runs = keys.shape[0]
    flat = [a.reshape((runs * 10,) + a.shape[2:]) for a in (ks, ys, rcs)]
    scores = jax.vmap(run)(*flat).reshape(runs, 10)
    return scores[:, 0], scores[:, 1:]


@pytest.mark.parametrize("null", ["bernoulli", "permutation"])
def test_pvalues_uniform_under_the_null(null):
    runs = 50
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.key(11), runs)
        observed, nulls = map(np.asarray, _calibration(keys, null == "permutation"))
    assert nulls.shape == (runs, 9)
    pv = np.array([p_value(o, n) for o, n in zip(observed, nulls)])
    assert np.all(observed > 0)  # penalty 0: continuous scores, no ties at 0
    k = int(np.sum(pv <= 0.1))  # P(p ≤ 0.1) = 1/10 exactly when calibrated
    sd = math.sqrt(runs * 0.1 * 0.9)
    assert abs(k - 0.1 * runs) <= 3 * sd, (k, pv)
    # E p = (R + 2) / (2(R + 1)) = 0.55; Var p = (R² + 2R) / (12 (R + 1)²) ≈ 0.0825
    assert abs(pv.mean() - 0.55) <= 3 * math.sqrt(0.0825 / runs), pv.mean()


def test_ijdi_replicates_equal_serial_algorithm1():
    """Slot-refilled batched replicates, and serial slots in worker threads (the CPU default),
    give the serial Algorithm 1 result per replicate (to float64 round-off: the vmapped and the
    one-slot programs sum in different orders, ~1e-14 relative)."""
    from ofijax._progress import Progress
    from ofijax.scan._alg1 import make_params
    from ofijax.scan._basis import make_basis
    from ofijax.scan._engine import make_problem
    from ofijax.scan._ijdi import _HISTORY
    from ofijax.scan._randomization import PROCEDURE, NullSpec, ijdi_null_scores, null_scores

    _run = PROCEDURE.default  # Algorithm 1 with XLA's default options, as the slots run it

    rng = np.random.default_rng(2)
    p = np.clip(0.3 + 0.15 * CODES[:, 0] + rng.uniform(-0.1, 0.1, N), 0, 1)
    yhat = (rng.uniform(size=N) < np.clip(0.3 + 1.5 * (p - p.mean()), 0, 1)).astype(float)
    R = 12  # more replicates than the 9 slots: slots are refilled
    with jax.enable_x64(True):
        data = pad_problem(make_problem(CODES.astype(np.int32), np.array([3, 3, 2])), yhat, p)
        basis = make_basis("chebyshev", direction="positive", q_bounds=(1e-6, 1e6))
        params = make_params(1.5, 0.1, 1e-6, False, 100)
        spec = NullSpec("ijdi", "bernoulli", 10, None, history=_HISTORY,
                        t_bounds=(0.0, math.log(1e6)))
        key = jax.random.key(4)
        p_null = jnp.clip(yhat.mean() + 1.5 * (data.p - p.mean()), 0, 1) * data.valid
        batched, bad = null_scores(key, spec, data, p_null, num_replicates=R, basis=basis,
                                   params=params, replicate_chunk=9)
        # the CPU layout: one serial slot per worker thread, replicates from a shared queue
        bar = Progress(R, "test", enabled=False)
        threaded, _ = ijdi_null_scores(jax.random.split(key, R), spec, data, p_null, basis,
                                       params, 1, bar, workers=3)
        np.testing.assert_allclose(threaded, batched, rtol=1e-12, atol=1e-12)
        auto, _ = null_scores(key, spec, data, p_null, num_replicates=R, basis=basis,
                              params=params)  # default: threads on a CPU backend
        np.testing.assert_array_equal(auto, threaded)  # same one-slot program: bit for bit
        np.testing.assert_allclose(auto, batched, rtol=1e-12, atol=1e-12)
        scans = []
        for r, k in enumerate(jax.random.split(key, R)):
            k_null, k_scan = jax.random.split(k)
            y_r, rc = null_draw("bernoulli", k_null, data.y, p_null, data.valid, data.row_cell)
            out = _run(spec, k_scan, y_r, data.p, data.valid, rc, data.problem, basis, params)
            assert batched[r] == pytest.approx(float(out.score), abs=1e-12)
            scans.append(int(out.num_scans))
    assert bad == 0 and max(scans) > 1  # some replicate needed a rescan


def test_planted_effect_gives_minimal_pvalue():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.2, 0.8, N)
    planted = (CODES[:, 0] == 1) & (CODES[:, 2] == 0)
    rate = np.where(planted, 0.9, 0.2)
    yhat = (rng.uniform(size=N) < rate).astype(int)
    R = 9
    res = ijdi_scan(DF, NEG, yhat, p, lam=0.5, num_samples=R, key=0, num_restarts=10)
    assert res.subset == {"a": (1,), "c": (0,)}
    assert res.p_value == pytest.approx(1 / (R + 1)) and res.null_scores.max() < res.score
    # FPR-Scan, permutation null (the rate code path)
    fres = fpr_scan(DF, NEG, yhat, num_samples=R, null="permutation", key=0)
    assert fres.subset == {"a": (1,), "c": (0,)}
    assert fres.p_value == pytest.approx(1 / (R + 1))
    assert fres.null_scores.shape == (R,) and np.all(fres.null_scores >= 0)
    # the observed run does not depend on whether a test is run
    plain = fpr_scan(DF, NEG, yhat)
    assert plain.score == fres.score and math.isnan(plain.p_value) and plain.null_scores is None
    # a replicate draw under "permutation" keeps (y, p) and permutes the cells of real rows only
    with jax.enable_x64(True):
        y_r, rc = null_draw("permutation", jax.random.key(1), jnp.arange(6.0), jnp.zeros(6),
                            jnp.arange(6) < 4, jnp.asarray([0, 0, 1, 2, 9, 9]))
        assert y_r.tolist() == list(range(6)) and rc[4:].tolist() == [9, 9]
        assert sorted(rc[:4].tolist()) == [0, 0, 1, 2]


def test_p_value_formula():
    assert math.isnan(p_value(3.0, np.zeros(0)))
    assert p_value(3.0, np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(3 / 5)
    assert p_value(0.0, np.zeros(4)) == 1.0  # ties at "nothing found" are not evidence


def test_bias_scan_hook_matches_serial_scans():
    """Each replicate (the CPU default: serial scans in threads) equals a bias_scan on the same
    null data and scan key, and a vmapped batch (explicit replicate_chunk) of the same replicates
    to float64 round-off."""
    rng = np.random.default_rng(3)
    p = np.full(N, 0.3)  # constant: the exact basis (shares compilations with tests/test_ijdi.py)
    y = (rng.uniform(size=N) < p).astype(int)
    key = jax.random.key(7)
    obs = bias_scan(DF, y, p, penalty=0.1, key=key, search="coordinate_ascent")
    enc, y_np, p_np = _prepare(DF, y, p, None)
    R = 6
    with jax.enable_x64(True):
        problem, Phi, Y, basis = _arrays(enc, y_np, p_np, "auto", "positive", (1e-6, 1e6))
        rt = bias_scan_null_scores(key, problem, basis, y_np, p_np, penalty=0.1, num_restarts=10,
                                   max_steps=None, num_replicates=R, observed_score=obs.score)
        data = pad_problem(problem, y_np, p_np)
        keys = jax.random.split(replicate_key(key), R)
        for r in range(3):
            k_null, k_scan = jax.random.split(keys[r])
            y_r, _ = null_draw("bernoulli", k_null, data.y, data.p, data.valid, data.row_cell)
            y_r = np.asarray(y_r[:N]).astype(int)
            serial = bias_scan(DF, y_r, p, penalty=0.1, key=k_scan, search="coordinate_ascent")
            assert rt.null_scores[r] == pytest.approx(serial.score, abs=1e-9)
        batched = bias_scan_null_scores(key, problem, basis, y_np, p_np, penalty=0.1,
                                        num_restarts=10, max_steps=None, num_replicates=R,
                                        observed_score=obs.score, replicate_chunk=R)
    np.testing.assert_allclose(batched.null_scores, rt.null_scores, rtol=1e-12, atol=1e-12)
    assert batched.p_value == rt.p_value
    assert rt.num_unconverged == 0
    assert rt.p_value == p_value(obs.score, rt.null_scores)


def test_bias_scan_replicates_same_with_either_search_program(monkeypatch):
    """Few replicates on a small table run the observed scan's own (fast-compiling) search
    program, more run scan_arrays' throughput program: the same null scores to float64
    round-off, the same p-value."""
    from ofijax.scan import _randomization as RZ

    rng = np.random.default_rng(4)
    p = rng.uniform(0.1, 0.6, N)
    y = (rng.uniform(size=N) < p).astype(int)
    obs = bias_scan(DF, y, p, penalty=0.1, key=3, search="coordinate_ascent", num_samples=5)
    monkeypatch.setattr(RZ, "FAST_BIAS_REPLICATES", 0)  # every test: the throughput program
    other = bias_scan(DF, y, p, penalty=0.1, key=3, search="coordinate_ascent", num_samples=5)
    np.testing.assert_allclose(obs.null_scores, other.null_scores, rtol=1e-12, atol=1e-12)
    assert obs.p_value == other.p_value and obs.score == other.score


_SHARDED = textwrap.dedent(
    """
    import json
    import jax, numpy as np, pandas as pd
    from ofijax.scan import fpr_scan
    assert jax.device_count() == 2, jax.devices()
    codes = np.repeat(np.array([(a, b, c) for a in range(3) for b in range(3) for c in range(2)]),
                      10, axis=0)
    yhat = (np.random.default_rng(0).uniform(size=len(codes)) < 0.3).astype(int)
    df = pd.DataFrame(codes, columns=["a", "b", "c"])
    res = fpr_scan(df, np.zeros(len(codes), int), yhat, num_samples=9, replicate_chunk=3,
                   null="permutation", key=0, beneficial_label=0)
    print(json.dumps(res.null_scores.tolist()))
    """
)


def test_replicates_independent_of_chunking_and_devices():
    yhat = (np.random.default_rng(0).uniform(size=N) < 0.3).astype(int)
    res = fpr_scan(DF, NEG, yhat, num_samples=9, null="permutation", key=0)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu", OFIJAX_PROGRESS="0")
    out = subprocess.run([sys.executable, "-c", _SHARDED], env=env, capture_output=True,
                         text=True, timeout=600, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr[-2000:]
    sharded = np.array(json.loads(out.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(sharded, res.null_scores, rtol=0, atol=1e-9)


def test_rescan_keys_fold_in_the_scan_index():
    """Scan 0 of Algorithm 1 uses the key itself; rescan i uses fold_in(key, i) (fresh restarts);
    the last scan of a run with rescans is reproduced by clamped_scan with that key."""
    from ofijax.scan._alg1 import make_params, rescan_key
    from ofijax.scan._basis import make_basis
    from ofijax.scan._engine import make_problem, outcome_counts
    from ofijax.scan._ijdi import _HISTORY
    from ofijax.scan._procedures import clamped_scan
    from ofijax.scan._randomization import PROCEDURE, NullSpec

    _run = PROCEDURE.default

    key = jax.random.key(3)
    kd = lambda k: np.asarray(jax.random.key_data(k)).tolist()  # noqa: E731
    assert kd(rescan_key(key, 0)) == kd(key)
    assert kd(rescan_key(key, 2)) == kd(jax.random.fold_in(key, 2)) != kd(key)
    assert kd(rescan_key(key, 1)) != kd(rescan_key(key, 2))
    rng = np.random.default_rng(2)
    p = np.clip(0.3 + 0.15 * CODES[:, 0] + rng.uniform(-0.1, 0.1, N), 0, 1)
    with jax.enable_x64(True):
        data = pad_problem(make_problem(CODES.astype(np.int32), np.array([3, 3, 2])),
                           np.zeros(N), p)
        basis = make_basis("chebyshev", direction="positive", q_bounds=(1e-6, 1e6))
        params = make_params(1.5, 0.1, 1e-6, False, 100)
        spec = NullSpec("ijdi", "bernoulli", 10, None, history=_HISTORY,
                        t_bounds=(0.0, math.log(1e6)))
        found = False
        for seed in range(12):  # find outcomes whose run needs a rescan
            yh = (np.random.default_rng(seed).uniform(size=N)
                  < np.clip(0.3 + 1.5 * (p - p.mean()), 0, 1)).astype(float)
            y = jnp.concatenate([jnp.asarray(yh), jnp.zeros(data.y.shape[0] - N)])
            out = _run(spec, key, y, data.p, data.valid, data.row_cell, data.problem, basis,
                       params)
            last = int(out.num_scans) - 1
            if last == 0:
                continue
            found = True
            Y = outcome_counts(y, data.row_cell, data.problem.num_cells)
            again = clamped_scan(rescan_key(key, last), data.problem, out.state.p_scan, Y,
                                 data.row_cell, basis, params, 10, None)
            assert float(again.score) == pytest.approx(float(out.scores[last]), abs=1e-12)
            assert np.array_equal(np.asarray(again.mask), np.asarray(out.masks[last]))
            break
    assert found


def test_bias_randomization_does_not_run_algorithm1():
    """Layering (#13): the generic procedures and plain Bias Scan's replicates never touch _alg1;
    the replicate engine's public ``procedure`` dispatches to them."""
    import ast
    from pathlib import Path

    from ofijax.scan import _procedures, _randomization

    src = Path(_procedures.__file__).read_text()
    imported = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"_alg1", "_randomization", "_ijdi", "_api"}
    rsrc = Path(_randomization.__file__).read_text()
    assert "_scan" not in {a.name for n in ast.walk(ast.parse(rsrc))
                           if isinstance(n, ast.ImportFrom) for a in n.names}


def test_replicates_report_progress(monkeypatch):
    """Replicate runs count their progress through ofijax._progress.Progress."""
    from ofijax.scan import _randomization

    seen = []

    class Recorder:
        def __init__(self, total, desc, **kw):
            seen.append([total, desc, 0, False])

        def update(self, n=1):
            seen[-1][2] += n

        def close(self):
            seen[-1][3] = True

    monkeypatch.setattr(_randomization, "Progress", Recorder)
    yhat = (np.random.default_rng(0).uniform(size=N) < 0.3).astype(int)
    # two chunks of 9: the program of the permutation tests above (compiled once per worker)
    fpr_scan(DF, NEG, yhat, num_samples=18, key=0, replicate_chunk=9, null="permutation")
    assert seen == [[18, "randomization test", 18, True]]
