"""The persistent compilation cache switched on by ``import ofijax`` (``ofijax._jaxcache``)."""

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
    assert s == {"enabled": True, "dir": str(tmp_path), "min_compile_secs": MIN_COMPILE_SECS}
    assert cache_settings({"OFIJAX_CACHE": "0"})["enabled"] is False
    assert cache_settings({"OFIJAX_CACHE": "off"})["enabled"] is False
    home = cache_settings({"XDG_CACHE_HOME": str(tmp_path)})["dir"]
    assert home == os.path.join(str(tmp_path), "ofijax", "jax")
    assert cache_settings({"OFIJAX_CACHE_MIN_COMPILE_SECS": "1.5"})["min_compile_secs"] == 1.5
    assert cache_settings({"OFIJAX_CACHE_MIN_COMPILE_SECS": "x"})["min_compile_secs"] == 0.0


_PROG = textwrap.dedent("""
    import jax, jax.numpy as jnp
    import ofijax
    f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 3.0))
    print(jax.config.jax_compilation_cache_dir)
    print(repr(float(f(jnp.arange(5.0))[-1])))
""")


def _run(env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OFIJAX_CACHE", "OFIJAX_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")}
    env.update(env_extra, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _PROG], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return out.stdout.split()


def test_import_enables_cache_and_results_do_not_depend_on_it(tmp_path):
    cache = tmp_path / "c"
    d1, v1 = _run({"OFIJAX_CACHE_DIR": str(cache)})  # cold: compiles, writes
    assert d1 == str(cache) and any(cache.iterdir())
    d2, v2 = _run({"OFIJAX_CACHE_DIR": str(cache)})  # warm: loads
    d3, v3 = _run({"OFIJAX_CACHE": "0"})  # off
    assert d3 == "None"
    assert v1 == v2 == v3


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
        small = E._scan_cells_small(*args)
        default = E._scan_cells(*args)
    assert float(small.score) > 0
    for a, b in zip(small, default):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
