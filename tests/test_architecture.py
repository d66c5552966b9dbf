"""The package's architecture rules (CONTRIBUTING.md), checked on the source.

Walks every module of ``ofijax`` with :mod:`ast` and asserts: no import cycles, no import of
another package's private module or of another module's private names, every facade
(``__init__.py``) only re-exports and its ``__all__`` equals its public names, and every public
function that draws random numbers takes ``key`` first.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib

import pytest

import ofijax

ROOT = pathlib.Path(ofijax.__file__).parent
SHARED_INTERNALS = {"ofijax._validation", "ofijax._progress", "ofijax._jaxcache"}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _package_of(name: str) -> str:
    return name if _is_package(name) else name.rsplit(".", 1)[0]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = _package_of(module).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str):
    """Yield (target module, imported name or None, lineno) for every ofijax import."""
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "ofijax":
                    yield a.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if target.split(".")[0] != "ofijax":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    yield sub, None, node.lineno
                else:
                    yield target, a.name, node.lineno


def _private_parts(name: str) -> list[str]:
    return [p for p in name.split(".") if p.startswith("_") and not p.startswith("__")]


def test_no_cross_package_private_imports():
    bad = []
    for mod in MODULES:
        own_pkg = _package_of(mod)
        for target, name, line in _imports(mod):
            if name is not None and name.startswith("_") and not name.startswith("__"):
                bad.append(f"{mod}:{line} imports private name {name} from {target}")
            if target in SHARED_INTERNALS or not _private_parts(target):
                continue
            # a private module may be imported only from inside its own package
            tgt_pkg = target.rsplit(".", 1)[0] if not _is_package(target) else target
            if not (own_pkg == tgt_pkg or own_pkg.startswith(tgt_pkg + ".")):
                bad.append(f"{mod}:{line} imports private module {target}")
    assert bad == [], "\n".join(bad)


def test_no_import_cycles():
    graph = {m: set() for m in MODULES}
    for mod in MODULES:
        for target, _name, _line in _imports(mod):
            if target in MODULES and target != mod:
                # a package importing its own submodules is how facades work, not a cycle
                graph[mod].add(target)
    # Tarjan's strongly connected components
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    assert comps == [], comps


FACADES = sorted(m for m in MODULES if _is_package(m))


@pytest.mark.parametrize("name", FACADES)
def test_facades_only_reexport(name):
    tree = ast.parse(MODULES[name].read_text())
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        ok = isinstance(node, (ast.Import, ast.ImportFrom))
        ok |= isinstance(node, (ast.Assign, ast.AugAssign)) and any(
            getattr(t, "id", None) in ("__all__", "__version__")
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        assert ok, f"{name}: line {node.lineno} is not an import or __all__"
    mod = importlib.import_module(name)
    public = {
        n for n, v in vars(mod).items()
        if not n.startswith("_") and not (inspect.ismodule(v) and v.__name__.startswith(name + "."))
    }
    allowed_modules = {n for n, v in vars(mod).items() if inspect.ismodule(v)}
    assert set(mod.__all__) - set(vars(mod)) == set(), f"{name}.__all__ names missing objects"
    assert public - set(mod.__all__) - allowed_modules == set(), f"{name}: public names not in __all__"


def _public_callables():
    for name in FACADES:
        mod = importlib.import_module(name)
        for attr in mod.__all__:
            obj = getattr(mod, attr)
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj


#: Functions whose default result is deterministic; ``key`` only breaks ties of a search
#: (restarts) or drives an optional random part that needs an explicit key when requested.
KEYWORD_KEY_OK = {
    "ofijax.scan.bias_scan",
    "ofijax.scan.fpr_scan",
    "ofijax.scan.tpr_scan",
    "ofijax.scan.ijdi_scan",
    "ofijax.auditing.ofi_test",
    "ofijax.auditing.pairwise_ofi_test",
    "ofijax.auditing.audit_batch",  # key only for method="monte_carlo"; default deterministic
    "ofijax.distributions.ofi_threshold",
    "ofijax.scan.scan_cells",  # key breaks ties of the restarts; replicates need one
    "ofijax.stats.fpr_scan_cells",
    "ofijax.stats.tpr_scan_cells",
    "ofijax.stats.bias_scan_cells",
}


def test_random_functions_take_key_first():
    bad = []
    for qual, fn in _public_callables():
        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params]
        if "key" not in names:
            continue
        short = qual.replace("ofijax.auditing.", "ofijax.auditing.")
        if short in KEYWORD_KEY_OK or qual.rsplit(".", 1)[-1] in {
            q.rsplit(".", 1)[-1] for q in KEYWORD_KEY_OK
        }:
            continue
        first = params[0]
        if first.name != "key" or first.default is not inspect.Parameter.empty:
            bad.append(f"{qual}{inspect.signature(fn)}")
    assert bad == [], "\n".join(bad)


#: Public modules that are not packages: re-export modules for ofijax's own plumbing,
#: documented as not a stable API. ``__main__`` is the ``python -m ofijax`` entry point.
PLUMBING_MODULES = sorted(
    m for m in MODULES
    if not _is_package(m) and not _private_parts(m) and m.rsplit(".", 1)[-1] != "__main__"
)


def test_plumbing_modules_only_reexport_and_say_so():
    assert "ofijax.auditing.reporting" in PLUMBING_MODULES
    for name in PLUMBING_MODULES:
        tree = ast.parse(MODULES[name].read_text())
        doc = ast.get_docstring(tree) or ""
        assert "not a stable API" in doc, f"{name}: the docstring must say it is not a stable API"
        for node in tree.body[1:]:
            ok = isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"])
            assert ok, f"{name}: line {node.lineno} is not an import or __all__"
        mod = importlib.import_module(name)
        public = {n for n in vars(mod) if not n.startswith("_")}
        assert set(mod.__all__) == public, f"{name}: __all__ must equal its public names"


def test_names_moved_out_of_a_facade_still_resolve_with_a_warning():
    """A facade's module ``__getattr__`` (PEP 562) serves the names that left its ``__all__`` for a
    release; everything it serves must exist in its new home and be absent from ``__all__``."""
    import warnings

    for name in FACADES:
        mod = importlib.import_module(name)
        moved = getattr(importlib.import_module(f"{name}._deprecated"), "MOVED", {}) if (
            ROOT.parent / name.replace(".", "/") / "_deprecated.py").exists() else {}
        for attr, home in moved.items():
            assert attr not in mod.__all__, f"{name}.{attr} moved but is still in __all__"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                obj = getattr(mod, attr)
            assert obj is getattr(home, attr)
            assert any(issubclass(w.category, DeprecationWarning) and home.__name__ in str(w.message)
                       for w in caught), f"{name}.{attr}: no DeprecationWarning naming {home.__name__}"
