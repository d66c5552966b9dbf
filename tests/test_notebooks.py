"""Execute every notebook under notebooks/ with nbclient (kernel "python3" = this interpreter)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHECK_EXE = "import sys; print(sys.executable)"


def test_python3_kernel_runs_this_interpreter():
    """jupyter_client swaps a kernelspec argv[0] of 'python' for sys.executable; make sure."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    exe = spec.argv[0]
    assert exe in {"python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"} or (
        os.path.realpath(exe) == os.path.realpath(sys.executable)
    ), f"kernel python3 runs {exe!r}, not {sys.executable!r}"


@pytest.mark.slow  # a kernel per notebook, every cell end to end
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    # Stored without heavy outputs: keep the repository small.
    stored = sum(
        len(str(o)) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert stored < 50_000, f"{path.name}: clear the outputs before committing"
    nb.cells.append(nbformat.v4.new_code_cell(CHECK_EXE))
    env_before = os.environ.get("JAX_PLATFORMS")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        client = nbclient.NotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(ROOT)}},  # cwd = repo root: imports this ofijax
        )
        t0 = time.perf_counter()
        client.execute()
        elapsed = time.perf_counter() - t0
    finally:
        if env_before is None:
            os.environ.pop("JAX_PLATFORMS", None)
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    assert os.path.realpath(out.strip()) == os.path.realpath(sys.executable)
    assert elapsed < 90, f"{path.name} took {elapsed:.0f} s"
