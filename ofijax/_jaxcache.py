"""JAX's persistent compilation cache, switched on once when ofijax is imported.

A scan compiles a few large XLA programs (seconds each on CPU). With the persistent cache a second
process loads them from disk instead of compiling again. Settings (read once, at import):

* ``OFIJAX_CACHE=0`` (or ``false``/``no``/``off``): leave JAX's cache settings alone.
* ``OFIJAX_CACHE_DIR``: the cache folder (default ``$XDG_CACHE_HOME/ofijax/jax``, i.e.
  ``~/.cache/ofijax/jax``).
* ``OFIJAX_CACHE_MIN_COMPILE_SECS``: only programs that took at least this long to compile are
  written (default :data:`MIN_COMPILE_SECS` = 0: everything, since the many small programs of a
  first call add up).
* ``OFIJAX_FAST_COMPILE=0``: compile small scans with XLA's default options too (see
  :func:`compiler_options`; read when ``ofijax.scan`` is imported).

If the user already set ``jax_compilation_cache_dir`` (e.g. ``JAX_COMPILATION_CACHE_DIR``), that
folder is kept. A cached program is the same executable XLA would build, so results do not depend
on whether the cache is warm. A folder that cannot be created switches the cache off silently.

>>> from ofijax._jaxcache import cache_settings
>>> sorted(cache_settings({"OFIJAX_CACHE": "0"}))
['dir', 'enabled', 'min_compile_secs']
>>> cache_settings({"OFIJAX_CACHE": "0"})["enabled"]
False
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["FAST_COMPILE", "MIN_COMPILE_SECS", "cache_settings", "compiler_options", "enable",
           "enabled_dir"]

#: Default threshold 0: every program is written. A first 10k × 4 × 5 Bias Scan compiles 18
#: programs, most of them small (device transfers, the PRNG seed; 10–100 ms each on a loaded
#: 2-core machine; it was 45 before ``row_mask``/``pad_cells`` were jitted); caching them too
#: measured ~2× faster cache-warm first calls than a 0.2 s threshold (second process). All 18 are
#: cache hits in a second process.
MIN_COMPILE_SECS = 0.0

_ENABLED_DIR: str | None = None

#: XLA options for the scan programs of small problems: the older (non-MLIR) CPU fusion emitters
#: build the ~270 fusions of a Bias Scan program with ~40% less compile CPU time, with the same
#: results and run time at 10k × 4 × 5 (640 cells); at ~20k cells the default emitters ran
#: faster, so ``ofijax.scan`` uses these options only below a cell count (jaxlib 0.10.2; see
#: ``experiments/bench_scan.py --cold-only``). The flag is a CPU one; other backends ignore it.
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}

#: jaxlib versions whose XLA is known to accept every :data:`FAST_COMPILE` flag (an unknown flag
#: is a compile error, so other versions get plain ``jax.jit``).
_FAST_COMPILE_JAXLIB = ((0, 6), (0, 11))


def cache_settings(environ: Mapping[str, str] | None = None) -> dict:
    """The cache settings the environment asks for: ``{"enabled", "dir", "min_compile_secs"}``."""
    env = os.environ if environ is None else environ
    off = env.get("OFIJAX_CACHE", "1").strip().lower() in ("0", "false", "no", "off")
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = env.get("OFIJAX_CACHE_DIR") or os.path.join(base, "ofijax", "jax")
    try:
        secs = float(env.get("OFIJAX_CACHE_MIN_COMPILE_SECS", MIN_COMPILE_SECS))
    except ValueError:
        secs = MIN_COMPILE_SECS
    return {"enabled": not off, "dir": folder, "min_compile_secs": max(secs, 0.0)}


def enable(environ: Mapping[str, str] | None = None) -> str | None:
    """Switch JAX's persistent compilation cache on (idempotent); returns the folder or None."""
    global _ENABLED_DIR
    s = cache_settings(environ)
    if not s["enabled"]:
        return None
    import jax

    current = jax.config.jax_compilation_cache_dir
    if current:  # the user's own setting wins
        _ENABLED_DIR = current
        return current
    try:
        os.makedirs(s["dir"], exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", s["dir"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", s["min_compile_secs"])
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _ENABLED_DIR = s["dir"]
    return s["dir"]


def compiler_options(version: str | None = None) -> dict:
    """``compiler_options`` for ``jax.jit`` of the big scan programs (:data:`FAST_COMPILE`).

    Empty when ``OFIJAX_FAST_COMPILE=0`` or when jaxlib (``version``, default the installed one)
    is outside the versions known to accept the flags.

    >>> compiler_options("0.10.2") == FAST_COMPILE, compiler_options("0.4.30")
    (True, {})
    """
    if os.environ.get("OFIJAX_FAST_COMPILE", "1").strip().lower() in ("0", "false", "no", "off"):
        return {}
    if version is None:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as _version

        try:
            version = _version("jaxlib")
        except PackageNotFoundError:
            return {}
    try:
        v = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return {}
    lo, hi = _FAST_COMPILE_JAXLIB
    return dict(FAST_COMPILE) if lo <= v < hi else {}


def enabled_dir() -> str | None:
    """The folder the cache writes to (None when off)."""
    return _ENABLED_DIR


enable()
