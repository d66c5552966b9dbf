"""ofijax's compilation cache (``ofijax._jaxcache``): kept executables, fast-compiling options, and
JAX's configuration left as the user set it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ofijax._jaxcache import MIN_COMPILE_SECS, cache_settings

ROOT = Path(__file__).resolve().parents[1]


def test_settings_from_environment(tmp_path):
    s = cache_settings({"OFIJAX_CACHE_DIR": str(tmp_path)})
    assert s == {"enabled": True, "dir": str(tmp_path), "jax_cache": False,
                 "min_compile_secs": MIN_COMPILE_SECS}
    assert cache_settings({"OFIJAX_CACHE": "0"})["enabled"] is False
    assert cache_settings({"OFIJAX_CACHE": "off"})["enabled"] is False
    assert cache_settings({"OFIJAX_CACHE": ""})["enabled"] is True  # empty: the default
    home = cache_settings({"XDG_CACHE_HOME": str(tmp_path)})["dir"]
    assert home == os.path.join(str(tmp_path), "ofijax", "jax")
    assert cache_settings({"OFIJAX_CACHE_MIN_COMPILE_SECS": "1.5"})["min_compile_secs"] == 1.5
    assert cache_settings({"OFIJAX_CACHE_MIN_COMPILE_SECS": "x"})["min_compile_secs"] == 0.0
    # JAX's process-wide cache only on request, and never when ofijax's cache is off
    assert cache_settings({"OFIJAX_JAX_CACHE": "1"})["jax_cache"] is True
    assert cache_settings({"OFIJAX_JAX_CACHE": "0"})["jax_cache"] is False
    assert cache_settings({"OFIJAX_JAX_CACHE": "1", "OFIJAX_CACHE": "0"})["jax_cache"] is False


# A fresh process: JAX's configuration before and after `import ofijax`, after an ofijax
# first-call program (aot_jit: compiled, kept) and after a program of the user's own.
_PROG = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    def config():
        return {k: repr(v) for k, v in jax.config.values.items()}
    before = config()
    import ofijax
    from ofijax import _jaxcache
    after_import = config()
    g = _jaxcache.aot_jit(lambda x: jnp.cumsum(x * 2.0), name="test.subprocess")
    g_value = float(g(np.arange(4.0, dtype=np.float32))[-1])
    f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 3.0))
    value = float(f(jnp.arange(5.0))[-1])
    after_calls = config()
    changed = lambda d: sorted(k for k in set(before) | set(d) if before.get(k) != d.get(k))
    print(json.dumps({"import_changed": changed(after_import), "calls_changed": changed(after_calls),
                      "jax_dir": jax.config.jax_compilation_cache_dir,
                      "ofijax_dir": _jaxcache.enabled_dir(), "value": repr(value),
                      "g_value": g_value}))
""")


def _run(env_extra):
    import json

    env = {k: v for k, v in os.environ.items()
           if k not in ("OFIJAX_CACHE", "OFIJAX_CACHE_DIR", "OFIJAX_JAX_CACHE",
                        "JAX_COMPILATION_CACHE_DIR")}
    env.update(env_extra, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _PROG], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_leaves_jax_configuration_alone_and_keeps_only_ofijax_programs(tmp_path):
    """By default `import ofijax` (and ofijax's calls) change no JAX setting: JAX's persistent
    cache stays off, the user's program is cached nowhere, and ofijax's folder holds only its
    kept executables (ofijax-aot/), which a second process loads; results never depend on it."""
    cache = tmp_path / "c"
    cold = _run({"OFIJAX_CACHE_DIR": str(cache)})  # compiles, keeps ofijax's executable
    assert cold["import_changed"] == [] and cold["calls_changed"] == []
    assert cold["jax_dir"] is None and cold["ofijax_dir"] == str(cache)
    assert sorted(p.name for p in cache.iterdir()) == ["ofijax-aot"]
    assert len(list((cache / "ofijax-aot").glob("*.aot"))) == 1  # g only; the user's f nowhere
    warm = _run({"OFIJAX_CACHE_DIR": str(cache)})  # loads it
    assert warm["import_changed"] == [] and warm["calls_changed"] == []
    off = _run({"OFIJAX_CACHE": "0", "OFIJAX_CACHE_DIR": str(tmp_path / "off")})
    assert off["ofijax_dir"] is None and not (tmp_path / "off").exists()
    assert off["import_changed"] == [] and off["calls_changed"] == []
    assert cold["value"] == warm["value"] == off["value"]
    assert cold["g_value"] == warm["g_value"] == off["g_value"] == 12.0


def test_jax_cache_on_request_and_the_users_own_folder_wins(tmp_path):
    """OFIJAX_JAX_CACHE=1 opts in to JAX's process-wide cache in ofijax's folder (the user's
    programs are written there too); a folder the user set for JAX is kept, and ofijax's kept
    executables still go to ofijax's folder."""
    cache = tmp_path / "c"
    on = _run({"OFIJAX_CACHE_DIR": str(cache), "OFIJAX_JAX_CACHE": "1"})
    assert on["jax_dir"] == str(cache)
    assert "jax_compilation_cache_dir" in on["import_changed"]
    assert on["calls_changed"] == on["import_changed"]  # compiles restore what they touch
    assert len([p for p in cache.iterdir() if p.name != "ofijax-aot"]) >= 1  # JAX's entries
    mine = tmp_path / "mine"
    user = _run({"OFIJAX_CACHE_DIR": str(cache), "OFIJAX_JAX_CACHE": "1",
                 "JAX_COMPILATION_CACHE_DIR": str(mine)})
    assert user["jax_dir"] == str(mine) and user["ofijax_dir"] == str(cache)
    assert user["import_changed"] == [] and user["calls_changed"] == []
    assert on["value"] == user["value"] and on["g_value"] == user["g_value"] == 12.0


def test_compiler_options_gated_by_version_and_environment(monkeypatch):
    from ofijax._jaxcache import FAST_COMPILE, compiler_options

    monkeypatch.delenv("OFIJAX_FAST_COMPILE", raising=False)
    assert compiler_options("0.10.2") == FAST_COMPILE
    assert compiler_options("0.4.30") == {} and compiler_options("1.0.0") == {}
    assert compiler_options("dev") == {}
    monkeypatch.setenv("OFIJAX_FAST_COMPILE", "0")
    assert compiler_options("0.10.2") == {}


def test_fast_compiled_scan_gives_the_default_programs_result():
    """The small-problem scan program (FAST_COMPILE options) and the default one agree."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from ofijax.scan import _engine as E
    from ofijax.scan import _programs as P
    from ofijax.scan._basis import features, make_basis

    rng = np.random.default_rng(3)
    codes = np.stack([rng.integers(0, 3, 200), rng.integers(0, 4, 200)], axis=1)
    p = rng.uniform(0.1, 0.9, 200)
    y = (rng.uniform(size=200) < np.where(codes[:, 0] == 1, 0.8, p)).astype(np.int8)
    with jax.enable_x64(True):
        problem = E.make_problem(codes, np.array([3, 4]))
        basis = make_basis("chebyshev", direction="positive")
        Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
        Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
        problem, Phi, Y = E.pad_cells(problem, Phi, Y, 16)
        args = (jax.random.key(0), problem, Phi, Y, basis, 0.1, 40, 3, True)
        small = P.search_cells_small(*args, True, False)  # fast options, one looped solver
        default = P.search_cells(*args, False, False)  # default options, three solves
    assert float(small.score) > 0
    for a, b in zip(small, default):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def _aot_on(monkeypatch, tmp_path):
    from ofijax import _jaxcache

    monkeypatch.setattr(_jaxcache, "_ENABLED_DIR", str(tmp_path))
    monkeypatch.delenv("OFIJAX_AOT", raising=False)
    monkeypatch.setattr(_jaxcache, "_LOADED", {})
    return _jaxcache


def test_aot_executables_are_written_loaded_and_keyed(monkeypatch, tmp_path):
    """aot_jit writes one executable per key, a cleared process memo loads it from disk with the
    same result, an unreadable file is recompiled, and shapes/static args/x64 change the key."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    jc = _aot_on(monkeypatch, tmp_path)
    f = jc.aot_jit(lambda x, n: jnp.cumsum(jnp.sin(x) * n), name="test.f", static_argnums=(1,))
    x = np.arange(5.0, dtype=np.float32)
    ref = np.asarray(jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 3))(x))
    assert np.array_equal(np.asarray(f(x, 3)), ref)
    files = list((tmp_path / "ofijax-aot").glob("*.aot"))
    assert len(files) == 1
    jc._LOADED.clear()
    assert jc._load(files[0].stem) is not None  # read back from disk
    assert np.array_equal(np.asarray(f(x, 3)), ref)
    files[0].write_bytes(b"not an executable")  # corrupt: compiled again, result unchanged
    jc._LOADED.clear()
    assert np.array_equal(np.asarray(f(x, 3)), ref)
    keys = {f.key((x, 3)), f.key((x, 4)), f.key((x[:4], 3))}
    with jax.enable_x64(True):
        keys.add(f.key((x, 3)))
        keys.add(f.key((x.astype(np.float64), 3)))
    assert len(keys) == 5
    assert f.key((x.astype(np.float64), 3)) == f.key((x, 3))  # canonicalized as jit does
    monkeypatch.setenv("OFIJAX_AOT", "0")
    assert not jc.aot_enabled()


def test_bias_scan_same_with_and_without_aot_executables(monkeypatch, tmp_path):
    """bias_scan's first-call path through kept executables (compiled, then loaded from disk)
    returns exactly what the plain jitted path returns."""
    import numpy as np
    import pandas as pd

    from ofijax.scan import bias_scan

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 3, 300), "b": rng.integers(0, 2, 300)})
    p = rng.uniform(0.1, 0.9, 300)
    y = (rng.uniform(size=300) < np.where(df["a"] == 1, 0.9, p)).astype(int)
    kw = dict(penalty=0.01, num_restarts=2, search="coordinate_ascent")
    monkeypatch.setenv("OFIJAX_AOT", "0")
    plain = bias_scan(df, y, p, **kw)  # the plain jitted path
    jc = _aot_on(monkeypatch, tmp_path)
    compiled = bias_scan(df, y, p, **kw)
    assert len(list((tmp_path / "ofijax-aot").glob("*.aot"))) == 2  # cells; search and its rows
    jc._LOADED.clear()
    loaded = bias_scan(df, y, p, **kw)
    for res in (compiled, loaded):
        assert (res.subset, res.score, res.q, res.size) == (plain.subset, plain.score, plain.q,
                                                            plain.size)
        assert np.array_equal(res.mask, plain.mask)


def test_aot_executable_failing_on_its_first_run_is_discarded(monkeypatch, tmp_path):
    """A loaded executable that fails when run (e.g. missing kernels) is deleted and the call
    runs through jax.jit instead."""
    import jax.numpy as jnp
    import numpy as np

    jc = _aot_on(monkeypatch, tmp_path)
    f = jc.aot_jit(lambda x: jnp.cos(x) + 1.0, name="test.broken")
    x = np.arange(3.0, dtype=np.float32)
    ref = np.asarray(f(x))
    (path,) = (tmp_path / "ofijax-aot").glob("*.aot")

    def broken(*args):
        raise RuntimeError("Function fusion not found")

    jc._LOADED.clear()
    monkeypatch.setattr(jc, "_load", lambda key: broken)
    assert np.array_equal(np.asarray(f(x)), ref)
    assert not path.exists() and jc._LOADED == {}


def test_unserializable_executable_runs_through_jit_and_is_marked(monkeypatch, tmp_path):
    """An executable that cannot be serialized is not kept: the call runs through jax.jit (so
    JAX's persistent cache serves later processes), and a ``.skip`` marker sends later calls
    there directly, without compiling it twice."""
    import jax.numpy as jnp
    import numpy as np

    jc = _aot_on(monkeypatch, tmp_path)
    f = jc.aot_jit(lambda x: jnp.tanh(x) * 2.0, name="test.unserializable")
    x = np.arange(4.0, dtype=np.float32)
    ref = np.tanh(x) * 2.0
    monkeypatch.setattr(jc, "_store", lambda key, compiled: False)
    assert np.allclose(np.asarray(f(x)), ref)
    assert not list((tmp_path / "ofijax-aot").glob("*.aot"))
    (marker,) = (tmp_path / "ofijax-aot").glob("*.skip")
    jc._LOADED.clear()
    compiles = []
    monkeypatch.setattr(jc, "_fresh_compile", lambda lowered: compiles.append(1))
    assert np.allclose(np.asarray(f(x)), ref) and not compiles


def test_programs_pick_the_fast_compiling_program_for_small_tables_and_few_replicates():
    """Programs.pick: the fast-compiling program for C ≤ SMALL_CELLS and R ≤ FAST_REPLICATES."""
    from ofijax.scan import _engine as E

    progs = E.Programs(lambda x: x + 1, "test.programs")
    assert progs.pick(E.SMALL_CELLS) is progs.small
    assert progs.pick(E.SMALL_CELLS, E.FAST_REPLICATES) is progs.small
    assert progs.pick(E.SMALL_CELLS + 1) is progs.default
    assert progs.pick(16, E.FAST_REPLICATES + 1) is progs.default
    assert progs.small.compiler_options == __import__("ofijax")._jaxcache.compiler_options()
    assert progs.default.compiler_options == {}
    # the k-step driver: an exhaustive search keeps the default options (its run dominates)
    from ofijax.scan._randomization import NullSpec
    from ofijax.scan._topk import StepSpec, _pick

    null = NullSpec("bias", "bernoulli", 10, None)
    assert _pick(progs, StepSpec(null, 1, "exhaustive", 8, 8), 16) is progs.default
    assert _pick(progs, StepSpec(null, 3), 16, 19) is progs.small
    assert _pick(progs, StepSpec(null, 3), 16, E.FAST_REPLICATES + 1) is progs.default


def _rate_inputs(n=400, values=(3, 4)):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    df = pd.DataFrame({c: rng.integers(0, v, n) for c, v in zip("abc", values)})
    y = (rng.uniform(size=n) < 0.5).astype(int)
    pred = (rng.uniform(size=n) < np.where((df["a"] == 1) & (y == 0), 0.3, 0.7)).astype(int)
    return df, y, pred


def test_rate_scan_replicate_programs_agree():
    """FPR-Scan's replicate batch compiled with the fast-compiling options (small tables, few
    replicates) gives the default program's null scores to float64 round-off (far inside the
    p-value's tie tolerance), and the same p-value."""
    import jax
    import numpy as np

    from ofijax.scan import _randomization as RZ
    from ofijax.scan import fpr_scan

    df, y, pred = _rate_inputs()
    calls = []
    pick = RZ._REPLICATES.pick

    def spy(num_cells, num_replicates=0):
        calls.append(pick(num_cells, num_replicates))
        return calls[-1]

    RZ._REPLICATES.pick = spy
    try:
        ca = {"search": "coordinate_ascent"}  # small tables enumerate by default (#43)
        res = fpr_scan(df, y, pred, num_samples=9, key=1, **ca)
        assert calls == [RZ._REPLICATES.small]
        # the same batch through the default-options program
        RZ._REPLICATES.pick = lambda num_cells, num_replicates=0: RZ._REPLICATES.default
        ref = fpr_scan(df, y, pred, num_samples=9, key=1, **ca)
    finally:
        RZ._REPLICATES.pick = pick
    assert res.p_value == ref.p_value and res.subset == ref.subset
    np.testing.assert_allclose(res.null_scores, ref.null_scores, rtol=1e-12, atol=1e-12)
    assert jax.numpy.all(jax.numpy.isfinite(jax.numpy.asarray(res.null_scores)))


def test_rate_scans_same_with_and_without_aot_executables(monkeypatch, tmp_path):
    """FPR-Scan with a randomization test, and with top_k, through kept executables (compiled,
    then loaded from disk) returns exactly what the plain jitted path returns."""
    import numpy as np

    from ofijax.scan import fpr_scan

    # shapes no other test uses: an executable compiled earlier in the process may not serialize
    df, y, pred = _rate_inputs(n=437, values=(3, 2, 5))

    def runs():
        return [fpr_scan(df, y, pred, num_samples=5, key=2),
                fpr_scan(df, y, pred, num_samples=5, key=2, top_k=2)]

    jc = _aot_on(monkeypatch, tmp_path)
    compiled = runs()
    # procedure + replicates, and observed steps + their replicates; and the set-up programs:
    # cell and row padding, the replicate keys, the row mask and the cells-in mask
    assert len(list((tmp_path / "ofijax-aot").glob("*.aot"))) == 4 + 5
    jc._LOADED.clear()
    loaded = runs()
    monkeypatch.setenv("OFIJAX_AOT", "0")
    plain = runs()  # the plain jitted path
    for got in (compiled, loaded):
        for res, ref in zip(got, plain):
            assert (res.subset, res.score, res.p_value) == (ref.subset, ref.score, ref.p_value)
            assert np.array_equal(res.null_scores, ref.null_scores)
            assert [t.subset for t in res.top] == [t.subset for t in ref.top]


def test_aot_first_calls_from_threads_compile_once(monkeypatch, tmp_path):
    """Threads that make an aot_jit program's first call together (IJDI's replicate workers)
    wait for one compile instead of each compiling it."""
    import threading

    import jax.numpy as jnp
    import numpy as np

    jc = _aot_on(monkeypatch, tmp_path)
    f = jc.aot_jit(lambda x: jnp.sinh(x) - 1.0, name="test.threads")
    fresh, compiles = jc._fresh_compile, []

    def counted(lowered):
        compiles.append(1)
        return fresh(lowered)

    monkeypatch.setattr(jc, "_fresh_compile", counted)
    x = np.arange(6.0, dtype=np.float32)
    start, out = threading.Barrier(4), [None] * 4

    def call(i):
        start.wait()
        out[i] = np.asarray(f(x))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(compiles) == 1
    for o in out:
        np.testing.assert_allclose(o, np.sinh(x) - 1.0, rtol=1e-6)


def test_fast_compiled_audit_programs_give_the_default_programs_results():
    """The audit's metric tables and bootstrap compile with the fast-compiling options: counts
    and IEEE divisions, so their results equal the default-option programs' bit for bit."""
    import jax
    import numpy as np

    from ofijax.auditing import _rules, _significance

    rng = np.random.default_rng(5)
    cms = rng.integers(0, 40, size=(4, 4))
    cms[2] = [0, 3, 0, 5]  # zero cells: NaN / inf paths
    fast = _rules.tables_one(cms, di_variant="paper")
    plain = jax.jit(_rules.tables_one.__wrapped__, static_argnames=("di_variant",))(
        cms, di_variant="paper")
    for a, b in zip(jax.tree.leaves(fast), jax.tree.leaves(plain)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    key = jax.random.key(3)
    groups = np.repeat(np.arange(4, dtype=np.int32), cms.sum(1))
    args = (key, cms, groups)
    fast_b = _significance._bootstrap_positions_jit(*args, num_samples=50)
    plain_b = jax.jit(_significance._bootstrap_ofi_positions, static_argnames=("num_samples",))(
        *args, num_samples=50)
    np.testing.assert_array_equal(np.asarray(fast_b), np.asarray(plain_b))
    assert _rules.tables_one.compiler_options == _significance._bootstrap_positions_jit.compiler_options


def test_compiles_pause_the_garbage_collector_and_restore_it(monkeypatch, tmp_path):
    """An aot_jit miss traces and compiles with Python's cyclic GC paused, then leaves it as it
    was (enabled or disabled by the caller), also when pauses in several threads overlap."""
    import gc
    import threading

    import jax.numpy as jnp
    import numpy as np

    jc = _aot_on(monkeypatch, tmp_path)
    fresh, seen = jc._fresh_compile, []

    def spy(lowered):
        seen.append(gc.isenabled())
        return fresh(lowered)

    monkeypatch.setattr(jc, "_fresh_compile", spy)
    was = gc.isenabled()
    try:
        gc.enable()
        jc.aot_jit(lambda x: jnp.cos(x) + 2.0, name="test.gc1")(np.arange(3.0))
        assert seen == [False] and gc.isenabled()
        gc.disable()  # a caller that disabled it keeps it disabled
        jc.aot_jit(lambda x: jnp.cos(x) + 3.0, name="test.gc2")(np.arange(3.0))
        assert seen == [False, False] and not gc.isenabled()
        gc.enable()
        inside, go = threading.Barrier(2), threading.Event()

        def pause():
            with jc._gc_paused():
                inside.wait()
                go.wait()

        t = threading.Thread(target=pause)
        t.start()
        with jc._gc_paused():
            inside.wait()
            go.set()
            t.join()  # the other pause ended first: still paused for this one
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


# The README's scan block (COMPAS, every scan kind, randomization tests and top-k), run in a
# process of its own; prints how many XLA programs it compiled and its results.
_SCANS = textwrap.dedent("""
    import json
    import jax, numpy as np
    compiled = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: compiled.append(event) if event.endswith("backend_compile_duration") else None)
    from ofijax import datasets, scan
    ij = datasets.load_compas("ijdi")
    attrs = ij[["Sex", "Race", "Prior Offenses", "Under 25", "ChargeDegree"]]
    y = 1 - ij.ReoffendedWithinTwoYears
    low = (ij.COMPASPredictedDecileScore <= 5).astype(int)
    p = scan.estimate_true_probabilities(attrs, y)
    fit = len(compiled)
    out = [float(p.sum())]
    r = scan.fpr_scan(attrs, y, low, num_samples=5, key=0)
    out += [r.score, r.p_value]
    out.append(scan.fpr_scan(attrs, y, low, top_k=2).top[-1].score)
    out.append(scan.ijdi_scan(attrs, y, low, p, lam=1.0, side="negative").score)
    out.append(scan.bias_scan(attrs, y, p, direction="negative", penalty=0.1).score)
    r = scan.bias_scan(attrs, y, p, search="coordinate_ascent", num_samples=3, key=1)
    out += [r.score, r.p_value]
    print(json.dumps({"fit": fit, "compiled": len(compiled), "out": out}))
""")


def test_cache_warm_scans_compile_only_the_probability_fit(tmp_path):
    """A second process runs the README's scans from kept executables: the only program it compiles
    is ``estimate_true_probabilities``' Newton fit (its LAPACK solve is not kept on disk), not the
    dozens of small set-up programs (padding, keys, row masks) each process used to compile."""
    import json

    env = {k: v for k, v in os.environ.items()
           if k not in ("OFIJAX_CACHE", "OFIJAX_JAX_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    env.update(OFIJAX_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))

    def run():
        out = subprocess.run([sys.executable, "-c", _SCANS], env=env, capture_output=True,
                             text=True, check=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["compiled"] > 5  # the first process compiles the scans' programs
    assert second["fit"] == 1 and second["compiled"] == 1
    assert second["out"] == first["out"]
