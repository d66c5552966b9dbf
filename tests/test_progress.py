"""Progress on stderr (``ofijax._progress``): counters, one-off notices, the scans' first-call notice."""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest

import ofijax._progress as prog
from ofijax.scan import bias_scan


def test_notice_shows_after_delay_and_reports_done():
    out = io.StringIO()
    with prog.Notice("compiling x", enabled=True, delay=0.0, stream=out):
        time.sleep(0.2)
    text = out.getvalue()
    assert text.startswith("compiling x…") and " done (" in text and text.endswith(" s)\n")


@pytest.mark.parametrize("enabled, delay", [(False, 0.0), (True, 30.0)])
def test_notice_silent_when_off_or_quick(enabled, delay):
    out = io.StringIO()
    with prog.Notice("compiling x", enabled=enabled, delay=delay, stream=out):
        time.sleep(0.05)
    assert out.getvalue() == ""


def test_progress_enabled_by_environment(monkeypatch):
    monkeypatch.setenv("OFIJAX_PROGRESS", "1")
    assert prog.progress_enabled() and prog.Notice("x").enabled
    monkeypatch.setenv("OFIJAX_PROGRESS", "0")
    assert not prog.progress_enabled() and not prog.Notice("x").enabled


def _scan_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n)})
    p = rng.uniform(0.1, 0.9, n)
    y = (rng.uniform(size=n) < p).astype(int)
    return df, y, p


@pytest.mark.parametrize("setting", ["1", "0"])
def test_scan_notice_follows_ofijax_progress(monkeypatch, capsys, setting):
    """A coordinate-ascent scan running past DELAY says so on stderr, only when progress is on."""
    monkeypatch.setenv("OFIJAX_PROGRESS", setting)
    monkeypatch.setattr(prog, "DELAY", 0.0)
    df, y, p = _scan_data()
    res = bias_scan(df, y, p, penalty=0.1, search="coordinate_ascent", num_restarts=2)
    err = capsys.readouterr().err
    assert np.isfinite(res.score)
    if setting == "1":
        assert "scan: " in err and "cells × 2 attributes" in err and " done (" in err
    else:
        assert "scan: " not in err


def test_progress_draws_a_first_line_while_nothing_is_counted():
    """A counter whose first update is late (a first call compiling) still says it started."""
    out = io.StringIO()
    p = prog.Progress(19, "replicates", unit="replicates", enabled=True, delay=0.0, stream=out)
    time.sleep(0.2)
    assert "replicates: 0/19 replicates (starting" in out.getvalue()
    p.update(19)
    p.close()
    text = out.getvalue()
    assert "19/19 replicates" in text and text.endswith("\n")
    quiet = io.StringIO()
    q = prog.Progress(19, "replicates", enabled=False, delay=0.0, stream=quiet)
    time.sleep(0.05)
    q.close()
    assert quiet.getvalue() == ""


def test_exhaustive_scan_notice(monkeypatch, capsys):
    monkeypatch.setenv("OFIJAX_PROGRESS", "1")
    monkeypatch.setattr(prog, "DELAY", 0.0)
    df, y, p = _scan_data()
    res = bias_scan(df, y, p, penalty=0.1, search="exhaustive")
    err = capsys.readouterr().err
    assert res.search == "exhaustive"
    assert "scan: exhaustive search over" in err and " done (" in err
