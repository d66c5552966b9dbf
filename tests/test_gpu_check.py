"""``experiments/gpu_check.py --quick`` runs on a CPU and reports every workload (slow tier: it runs
every workload of the GPU check end to end in a subprocess)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ["montecarlo", "bias_rows", "bias_wide", "fpr_randomization", "bias_randomization",
             "ijdi_randomization", "batch_audit"]


@pytest.mark.slow
def test_gpu_check_quick(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OFIJAX_PROGRESS="0")
    out = subprocess.run([sys.executable, str(ROOT / "experiments" / "gpu_check.py"), "--quick",
                          "--out", str(tmp_path)], env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    assert lines["mode"] == "quick" and lines["device"]
    for name in WORKLOADS:
        assert float(lines[f"{name}_warm_s"]) > 0
        with open(tmp_path / f"{name}.csv") as fh:
            (row,) = list(csv.DictReader(fh))
        assert row["workload"] == name and row["device"] == lines["device"]
    assert lines["bias_rows_found_planted"] == "True"
    assert lines["montecarlo_samples"] == "1000000"
