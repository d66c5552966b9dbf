"""ofijax's compilation cache: kept executables of its first-call programs (:func:`aot_jit`), the
fast-compiling options of small scan programs (:func:`compiler_options`), and an opt-in switch for
JAX's persistent compilation cache.

**Importing ofijax changes no JAX setting.** ofijax's cache holds ofijax's programs only: the
first-call programs of the scans and the audit go through :func:`aot_jit`, which keeps their
compiled executables under ``<cache dir>/ofijax-aot/``, so a later process loads them instead of
tracing, lowering and compiling them. Everything else, and every program of the user's own, is
left to JAX's configuration as the user set it (JAX's persistent cache is off unless the user
turns it on). Switching JAX's process-wide cache on at import would also cache the user's own
programs into ofijax's folder and change the settings of their process; what it would save on a
cache-warm first scan is measured in ``experiments/notes/suite_and_cache.md``.
Settings (read once, at import):

* ``OFIJAX_CACHE=0`` (or ``false``/``no``/``off``): keep no executables (every process compiles).
* ``OFIJAX_CACHE_DIR``: the cache folder (default ``$XDG_CACHE_HOME/ofijax/jax``, i.e.
  ``~/.cache/ofijax/jax``), created on the first write, not at import.
* ``OFIJAX_JAX_CACHE=1`` (opt-in): also switch JAX's persistent compilation cache on for the whole
  process, in the same folder (unless ``jax_compilation_cache_dir`` is already set: the user's
  folder wins), so the small programs outside :func:`aot_jit` are cached too; this changes the
  process's JAX configuration, and caches the user's programs as well.
  ``OFIJAX_CACHE_MIN_COMPILE_SECS`` is then the minimum compile time of a program JAX writes
  (default :data:`MIN_COMPILE_SECS`).
* ``OFIJAX_FAST_COMPILE=0``: compile small scans with XLA's default options too (see
  :func:`compiler_options`; read when ``ofijax.scan`` is imported).
* ``OFIJAX_AOT=0``: do not keep compiled executables of :func:`aot_jit` programs (below).

Ahead-of-time executables. :func:`aot_jit` wraps a function like ``jax.jit`` and also writes the
*compiled executable* (``jax.experimental.serialize_executable``) under ``<cache dir>/ofijax-aot/``,
keyed by the argument shapes and dtypes, the static arguments, the ofijax source (a digest of
every ``.py`` file of the package), the JAX/jaxlib versions, the devices, the JAX configuration and
the compiler options; a later process with the same key loads it and skips tracing, lowering and
compiling (JAX's own persistent cache would still trace and lower every program to compute its
key). It is the same executable, so results are the same bit for bit. A file that cannot be read
(or written) is ignored: the call then runs through ``jax.jit``. Like JAX's own cache, the folder
must be trusted: loading an executable runs its code. Kept executables are compiled bypassing
JAX's persistent cache when that cache is on (see ``_fresh_compile``); files of other ofijax
sources or JAX versions are never read again and not removed (delete the folder to reclaim the
space; ~1 MB per scan shape). An executable XLA refuses to serialize is not kept: a ``<key>.skip``
marker sends that program through ``jax.jit`` from then on.

A kept executable is the same executable XLA would build, so results do not depend on whether the
cache is warm. A folder that cannot be written is ignored silently (every call still runs).

>>> from ofijax._jaxcache import cache_settings
>>> sorted(cache_settings({"OFIJAX_CACHE": "0"}))
['dir', 'enabled', 'jax_cache', 'min_compile_secs']
>>> cache_settings({"OFIJAX_CACHE": "0"})["enabled"], cache_settings({})["jax_cache"]
(False, False)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FAST_COMPILE", "MIN_COMPILE_SECS", "AOTFunction", "aot_enabled", "aot_jit",
           "cache_settings", "compiler_options", "enable", "enabled_dir", "kept_array"]

#: With ``OFIJAX_JAX_CACHE=1``: JAX writes every program (the many small programs of a first call
#: add up; see experiments/notes/suite_and_cache.md).
MIN_COMPILE_SECS = 0.0

_ENABLED_DIR: str | None = None

#: XLA options for the programs of small problems, where compile time dominates run time (each
#: chosen by ``experiments/bench_scan.py --cold-only``; measurements in
#: ``experiments/notes/suite_and_cache.md``):
#:
#: * ``xla_cpu_use_fusion_emitters=False``: the older (non-MLIR) CPU fusion emitters compile a
#:   scan's many fusions faster, with the same results; at large cell counts the default emitters
#:   run faster. A CPU flag; other backends ignore it.
#: * ``xla_backend_optimization_level=1`` (LLVM -O1 instead of -O3): LLVM is about half of a
#:   scan's compile time; -O1 runs small problems as fast, large ones slower (so small problems
#:   only). The results agree to rounding, not bit for bit, with the default level's; a given
#:   option set always builds the same program, so a result does not depend on whether the
#:   executable came from a cache.
#: * ``xla_disable_hlo_passes=while-loop-invariant-code-motion``: XLA re-runs this hoisting on
#:   every loop at each round of its simplification pipeline, while the loops' invariants are
#:   already hoisted by hand (e.g. the step's ``_prepare``). Only an optimisation: the arithmetic,
#:   and so every result, is the same.
#:
#: ``ofijax.scan`` uses these options only below a cell count and replicate count (jaxlib
#: 0.10.2; ``scan._engine.Programs``); the audit's metric tables and bootstrap always (counts and
#: IEEE divisions: the same results bit for bit).
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1,
                "xla_disable_hlo_passes": "while-loop-invariant-code-motion"}

#: jaxlib versions whose XLA is known to accept every :data:`FAST_COMPILE` flag (an unknown flag
#: is a compile error, so other versions get plain ``jax.jit``).
_FAST_COMPILE_JAXLIB = ((0, 6), (0, 11))


def _flag(env: Mapping[str, str], name: str, default: str) -> bool:
    """An on/off environment variable: ``0``/``false``/``no``/``off`` is off; unset or empty is
    ``default``; anything else is on."""
    value = env.get(name, "").strip().lower() or default
    return value not in ("0", "false", "no", "off")


def cache_settings(environ: Mapping[str, str] | None = None) -> dict:
    """The cache settings the environment asks for: ``{"enabled", "dir", "jax_cache",
    "min_compile_secs"}`` (``jax_cache``: the opt-in ``OFIJAX_JAX_CACHE=1``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = env.get("OFIJAX_CACHE_DIR") or os.path.join(base, "ofijax", "jax")
    try:
        secs = float(env.get("OFIJAX_CACHE_MIN_COMPILE_SECS", MIN_COMPILE_SECS))
    except ValueError:
        secs = MIN_COMPILE_SECS
    enabled = _flag(env, "OFIJAX_CACHE", "1")
    return {"enabled": enabled, "dir": folder,
            "jax_cache": enabled and _flag(env, "OFIJAX_JAX_CACHE", "0"),
            "min_compile_secs": max(secs, 0.0)}


def enable(environ: Mapping[str, str] | None = None) -> str | None:
    """Set ofijax's cache folder from the environment (idempotent); returns it, or None when off.

    Changes no JAX setting, except with the opt-in ``OFIJAX_JAX_CACHE=1``: then JAX's persistent
    compilation cache is switched on in that folder, unless ``jax_compilation_cache_dir`` is
    already set (the user's folder is kept)."""
    global _ENABLED_DIR
    s = cache_settings(environ)
    if not s["enabled"]:
        _ENABLED_DIR = None
        return None
    _ENABLED_DIR = s["dir"]
    if s["jax_cache"]:
        import jax

        if not jax.config.jax_compilation_cache_dir:
            try:
                os.makedirs(s["dir"], exist_ok=True)
            except OSError:
                return _ENABLED_DIR
            jax.config.update("jax_compilation_cache_dir", s["dir"])
            jax.config.update("jax_persistent_cache_min_compile_time_secs",
                              s["min_compile_secs"])
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return _ENABLED_DIR


def compiler_options(version: str | None = None) -> dict:
    """``compiler_options`` for ``jax.jit`` of the big scan programs (:data:`FAST_COMPILE`).

    Empty when ``OFIJAX_FAST_COMPILE=0`` or when jaxlib (``version``, default the installed one)
    is outside the versions known to accept the flags.

    >>> compiler_options("0.10.2") == FAST_COMPILE, compiler_options("0.4.30")
    (True, {})
    """
    if not _flag(os.environ, "OFIJAX_FAST_COMPILE", "1"):
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
    """The folder ofijax's kept executables go to (under ``ofijax-aot/``; None when off)."""
    return _ENABLED_DIR


# ------------------------------------------------------------------------------------------------
# Ahead-of-time executables (see the module docstring)

#: Bumped when the file format or the key changes.
_AOT_FORMAT = 1
#: JAX options that only change logging or ofijax's own cache settings: left out of the key.
_CONFIG_IGNORED = frozenset({
    "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes", "jax_log_compiles", "jax_explain_cache_misses",
    "jax_logging_level", "jax_debug_log_modules", "jax_enable_compilation_cache",
})
_SOURCE_DIGEST: str | None = None
_SINGLE_DEVICE: bool | None = None
#: key (full or fast, see ``AOTFunction._fast_key``) → loaded executable, for the process.
_LOADED: dict[Any, Any] = {}

try:  # the flags jax.jit keys its own caches on (private; without it every call digests fully)
    from jax._src.config import trace_context as _trace_context
except ImportError:  # pragma: no cover - other JAX versions
    _trace_context = None


def aot_enabled() -> bool:
    """Whether :func:`aot_jit` programs keep executables: the cache is on, ``OFIJAX_AOT`` is not
    ``0`` and JAX sees one device (a loaded executable is placed on every device of the backend,
    so hosts with several are left to ``jax.jit``)."""
    global _SINGLE_DEVICE
    if _ENABLED_DIR is None or not _flag(os.environ, "OFIJAX_AOT", "1"):
        return False
    if _SINGLE_DEVICE is None:
        import jax

        _SINGLE_DEVICE = jax.device_count() == 1
    return _SINGLE_DEVICE


def _source_digest() -> str:
    """Digest of every ``.py`` file of the ofijax package (read once per process)."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        _SOURCE_DIGEST = h.hexdigest()
    return _SOURCE_DIGEST


def _environment_key() -> tuple:
    import jax
    import jaxlib

    devices = tuple((d.platform, d.device_kind, d.client.platform_version) for d in jax.devices())
    config = tuple(sorted((k, repr(v)) for k, v in jax.config.values.items()
                          if k not in _CONFIG_IGNORED))
    return (jax.__version__, jaxlib.__version__, devices, config,
            bool(jax.config.jax_enable_x64))  # the context value inside ``jax.enable_x64``


class AOTFunction:
    """A ``jax.jit``-ed function whose compiled executables persist across processes.

    Called with concrete arguments it looks its executable up (this process, then the disk
    folder), else lowers and compiles it and writes it; called under a trace (inside another
    ``jit``/``vmap``) it is the plain jitted function. Static arguments must be hashable values
    with a stable ``repr`` (ints, bools, strings, tuples of them).
    """

    def __init__(self, fun: Callable, name: str, static_argnums: Sequence[int] = (),
                 compiler_options: Mapping[str, Any] | None = None,
                 static_argnames: Sequence[str] = ()):
        import functools

        import jax

        self.name = name
        self._lock = threading.Lock()  # one compile when threads make the first call together
        self.static_argnums = tuple(sorted(static_argnums))
        self.static_argnames = tuple(static_argnames)
        self.compiler_options = dict(compiler_options or {})
        self.jitted = jax.jit(fun, static_argnums=self.static_argnums,
                              static_argnames=self.static_argnames or None,
                              compiler_options=self.compiler_options or None)
        functools.update_wrapper(self, fun)

    def _split(self, args: tuple, kwargs: Mapping[str, Any]):
        """``(static arguments, dynamic leaves, their tree)``; None if a leaf is a tracer."""
        import jax

        static = (tuple(args[i] for i in self.static_argnums), tuple(sorted(kwargs.items())))
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return None
        return static, leaves, tree

    def key(self, args: tuple, kwargs: Mapping[str, Any] | None = None) -> str | None:
        """The executable's key for ``args`` and static keyword arguments ``kwargs`` (None: some
        argument is a tracer)."""
        import jax

        split = self._split(args, kwargs or {})
        if split is None:
            return None
        static, leaves, tree = split
        avals = [str(jax.typeof(leaf)) for leaf in leaves]
        text = repr((_AOT_FORMAT, self.name, _source_digest(), _environment_key(),
                     sorted(self.compiler_options.items()), static, str(tree), avals))
        return hashlib.sha256(text.encode()).hexdigest()

    def _fast_key(self, args: tuple, kwargs: Mapping[str, Any]):
        """A cheap in-process key for repeated calls (the full :meth:`key` digests the JAX
        configuration and the source, about 50 times slower): static arguments, tree, shapes/dtypes/weak types and JAX's
        trace context (the flags ``jax.jit`` itself keys on, x64 included). None when it cannot
        be formed (then the full key is used)."""
        import jax

        split = None if _trace_context is None else self._split(args, kwargs)
        if split is None:
            return None
        static, leaves, tree = split
        sig = []
        for leaf in leaves:
            if isinstance(leaf, (np.ndarray, jax.Array)):
                sig.append((leaf.shape, leaf.dtype, getattr(leaf, "weak_type", False)))
            else:
                sig.append(str(jax.typeof(leaf)))
        try:
            fast = (self, static, tree, tuple(sig), _trace_context())
            hash(fast)
        except TypeError:
            return None
        return fast

    def __call__(self, *args, **kwargs):
        if not aot_enabled() or not set(kwargs) <= set(self.static_argnames):
            return self.jitted(*args, **kwargs)
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        fast = self._fast_key(args, kwargs)
        compiled = _LOADED.get(fast) if fast is not None else None
        if compiled is not None:
            return compiled(*dynamic)
        with self._lock:  # a miss: threads calling at once wait for one load or compile
            return self._miss(args, kwargs, dynamic, fast)

    def _miss(self, args, kwargs, dynamic, fast):
        """:meth:`__call__` without an executable in the fast in-process memo."""
        compiled = _LOADED.get(fast) if fast is not None else None
        if compiled is not None:  # another thread loaded or compiled it meanwhile
            return compiled(*dynamic)
        key = self.key(args, kwargs)
        if key is None:
            return self.jitted(*args, **kwargs)
        compiled = _LOADED.get(key)
        if compiled is not None:
            if fast is not None:
                _LOADED[fast] = compiled
            return compiled(*dynamic)
        compiled = _load(key)
        if compiled is not None:  # first run of a loaded executable: checked, else compiled anew
            try:
                out = compiled(*dynamic)
                jax_block(out)
            except Exception:
                _discard(key)
                return self.jitted(*args, **kwargs)
            _LOADED[key] = compiled
            if fast is not None:
                _LOADED[fast] = compiled
            return out
        if os.path.exists(_skip_path(key)):  # not serializable: through jax.jit
            return self._plain(key, fast, args, kwargs)
        with _gc_paused():
            compiled = _fresh_compile(self.jitted.lower(*args, **kwargs))
        if not _store(key, compiled):
            _mark_unserializable(key)
            return self._plain(key, fast, args, kwargs)
        _LOADED[key] = compiled
        if fast is not None:
            _LOADED[fast] = compiled
        return compiled(*dynamic)

    def _plain(self, key, fast, args, kwargs):
        """The call through ``jax.jit`` (and JAX's persistent cache where the user or
        ``OFIJAX_JAX_CACHE=1`` turned it on), remembered for ``key``."""
        with _gc_paused():
            compiled = self.jitted.lower(*args, **kwargs).compile()
        _LOADED[key] = compiled
        if fast is not None:
            _LOADED[fast] = compiled
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        return compiled(*dynamic)


_GC_LOCK = threading.Lock()
_GC_PAUSE = [0, False]  # [nested pauses in progress, whether the collector was enabled]


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector paused while a program is traced, lowered and compiled,
    then restored as it was: tracing allocates tens of thousands of short-lived objects, and the
    collections they trigger walk the whole heap (JAX's modules included) without freeing
    anything (the saving is in ``experiments/notes/suite_and_cache.md``). Its objects are freed
    by reference counting as usual, and anything cyclic at the next collection. Pauses in several
    threads nest (the last one out restores)."""
    import gc

    with _GC_LOCK:
        if _GC_PAUSE[0] == 0:
            _GC_PAUSE[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSE[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSE[0] -= 1
            if _GC_PAUSE[0] == 0 and _GC_PAUSE[1]:
                gc.enable()


def jax_block(out) -> None:
    import jax

    jax.block_until_ready(out)


def _fresh_compile(lowered):
    """``lowered.compile()``, bypassing JAX's persistent cache when it is on: an XLA:CPU
    executable read back from that cache and serialized again can miss its kernels ("Function ...
    not found" when run in the next process, jaxlib 0.10.2), so kept executables are always
    compiled here. With JAX's cache off (the default) no setting is touched."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cc

    if not (jax.config.jax_compilation_cache_dir and jax.config.jax_enable_compilation_cache):
        return lowered.compile()
    jax.config.update("jax_enable_compilation_cache", False)
    cc.reset_cache()
    try:
        return lowered.compile()
    finally:
        jax.config.update("jax_enable_compilation_cache", True)
        cc.reset_cache()


def _discard(key: str) -> None:
    try:
        os.remove(_aot_path(key))
    except OSError:
        pass


def aot_jit(fun: Callable | None = None, *, name: str | None = None,
            static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
            compiler_options: Mapping[str, Any] | None = None):
    """``jax.jit`` with compiled executables kept on disk (see :class:`AOTFunction`).

    Usable as ``aot_jit(f, static_argnums=...)`` or as a decorator ``@aot_jit(...)``; ``name``
    (default the function's module and qualified name) is part of the key.

    >>> import jax.numpy as jnp
    >>> f = aot_jit(lambda x, n: x * n, name="demo", static_argnums=(1,))
    >>> int(f(jnp.arange(3), 2)[2])
    4
    """
    def wrap(f):
        label = name or f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', repr(f))}"
        return AOTFunction(f, label, static_argnums, compiler_options, static_argnames)

    return wrap if fun is None else wrap(fun)


def _aot_path(key: str, ext: str = "aot") -> str:
    return os.path.join(_ENABLED_DIR or "", "ofijax-aot", f"{key}.{ext}")


def _load(key: str):
    """The executable stored under ``key``, or None (absent, unreadable, other format)."""
    path = _aot_path(key)
    if not os.path.exists(path):
        return None
    try:
        from jax.experimental.serialize_executable import deserialize_and_load

        with open(path, "rb") as fh:
            fmt, stored, payload, in_tree, out_tree = pickle.load(fh)
        if fmt != _AOT_FORMAT or stored != key:
            return None
        return deserialize_and_load(payload, in_tree, out_tree)
    except Exception:  # a truncated or foreign file: compile instead
        return None


def _skip_path(key: str) -> str:
    return _aot_path(key, "skip")


def _mark_unserializable(key: str) -> None:
    """An empty ``<key>.skip`` file: later processes call this program through ``jax.jit``."""
    try:
        os.makedirs(os.path.dirname(_skip_path(key)), exist_ok=True)
        open(_skip_path(key), "wb").close()
    except OSError:
        pass


def _store(key: str, compiled) -> bool:
    """Write ``compiled`` under ``key`` atomically. False when the executable cannot be
    serialized (XLA:CPU refuses some, e.g. "`LessThan` is not serializable", seen when the same
    program was compiled before in the process); an unwritable folder is ignored (True)."""
    try:
        from jax.experimental.serialize_executable import serialize

        payload, in_tree, out_tree = serialize(compiled)
        data = pickle.dumps((_AOT_FORMAT, key, payload, in_tree, out_tree),
                            protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # serialization unsupported (this executable, some backends)
        return False
    try:
        folder = os.path.dirname(_aot_path(key))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:  # read-only folder
        return True
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, _aot_path(key))
    except OSError:  # disk full
        try:
            os.remove(tmp)
        except OSError:
            pass
    return True



def kept_array(name: str, parts: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """``compute()``, kept on disk next to the kept executables: a NumPy result that depends only
    on ``parts`` and ofijax's source (e.g. a basis built by an SVD) is computed once, and later
    processes read it back (``.npy``, lossless: the same array bit for bit). Computed every time
    when the cache or kept executables are off (``OFIJAX_CACHE=0``, ``OFIJAX_AOT=0``); an
    unreadable or unwritable file is ignored.

    >>> import numpy as np
    >>> kept_array("demo", (3,), lambda: np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    if _ENABLED_DIR is None or not _flag(os.environ, "OFIJAX_AOT", "1"):
        return compute()
    import platform

    text = repr((_AOT_FORMAT, "array", name, _source_digest(), np.__version__,
                 platform.machine(), parts))
    path = _aot_path(hashlib.sha256(text.encode()).hexdigest(), "npy")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        pass
    out = compute()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, out, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:  # read-only folder, disk full
        pass
    return out

enable()
