"""End-to-end check of experiments/diff_tradeoff.py --quick (slow: trains 8 small sweeps)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_diff_tradeoff_quick(tmp_path):
    pytest.importorskip("matplotlib")
    out = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "diff_tradeoff.py"), "--quick",
         "--datasets", "compas", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(
        line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line and " " not in
        line.split(": ", 1)[0]
    )
    for tag in ("compas_logistic", "compas_mlp"):
        assert float(lines[f"{tag}_loop_over_sweep_time_ratio"]) > 0
        assert float(lines[f"{tag}_loop_agrees_with_sweep_fraction"]) >= 0.5
        assert 0 <= float(lines[f"{tag}_plain_train_max_ofi"]) <= 2
    assert (tmp_path / "diff_tradeoff_quick.csv").stat().st_size > 0
    assert (tmp_path / "diff_tradeoff_quick.png").stat().st_size > 0
