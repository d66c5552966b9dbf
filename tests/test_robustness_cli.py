"""Contract of the command line and of ``ofijax.audit`` on invalid input.

CLI: every invalid input gives exit status 2, exactly one line on stderr (no traceback, no usage
block) that names the option at fault, and writes nothing (no report folder, no temporary folder,
an existing folder untouched). API: invalid parameters of ``ofijax.audit`` raise ``ValueError`` or
``TypeError`` whose message starts with the argument's name.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ofijax
from ofijax.cli import main


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with valid and broken input files; the CLI runs inside it."""
    rng = np.random.default_rng(0)
    n = 120
    y = rng.integers(0, 2, n)
    df = pd.DataFrame({
        "y": y, "pred": rng.integers(0, 2, n), "score": rng.random(n), "g": rng.choice(["a", "b", "c"], n),
        "age": rng.integers(17, 90, n), "w": [10**30] * n, "wneg": -np.ones(n), "ok_w": np.ones(n),
    })
    df.to_csv(tmp_path / "data.csv", index=False)
    with open(tmp_path / "data.csv", "rb") as fh:
        blob = gzip.compress(fh.read())
    (tmp_path / "broken.csv.gz").write_bytes(blob[: len(blob) // 2])
    (tmp_path / "notgzip.csv.gz").write_bytes(b"this is not gzip")
    (tmp_path / "afile").write_text("x")
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFIJAX_PROGRESS", "0")
    return tmp_path


def _snapshot(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = os.path.getsize(p)
    return out


D = ["--data", "data.csv", "--label", "y"]
AUDIT = ["audit", *D, "--pred", "pred", "--group", "g", "--out", "rep"]
SCAN = ["scan", *D, "--pred", "pred", "--attr", "g", "--replicates", "0", "--out", "rep"]

INVALID = [
    # (argv, text the one stderr line must contain)
    (["audit", "--data", "missing.csv", "--label", "y", "--pred", "pred", "--group", "g"], "--data"),
    (["audit", "--data", "broken.csv.gz", "--label", "y", "--pred", "pred", "--group", "g"], "--data"),
    (["audit", "--data", "notgzip.csv.gz", "--label", "y", "--pred", "pred", "--group", "g"], "--data"),
    (["audit", "--data", ".", "--label", "y", "--pred", "pred", "--group", "g"], "--data"),
    ([*AUDIT[:-1], "afile"], "--out"),
    ([*AUDIT[:-1], "existing"], "--force"),
    ([*AUDIT[:-1], "nodir/rep"], "--out"),
    ([*AUDIT, "--seed", str(2**70)], "--seed"),
    ([*AUDIT, "--seed", "-1"], "--seed"),
    ([*AUDIT, "--seed", "1.5"], "--seed"),
    ([*AUDIT, "--group", "g"], "--group"),
    ([*AUDIT, "--weight", "w"], "--weight"),
    ([*AUDIT, "--weight", "wneg"], "--weight"),
    ([*AUDIT, "--weight", "nope"], "--weight"),
    ([*AUDIT, "--alpha", "2"], "--alpha"),
    ([*AUDIT, "--alpha", "nan"], "--alpha"),
    ([*AUDIT, "--alpha", "x"], "--alpha"),
    ([*AUDIT, "--confidence", "1"], "--confidence"),
    ([*AUDIT, "--bootstrap", "1"], "--bootstrap"),
    ([*AUDIT, "--null", "bogus"], "--null"),
    ([*AUDIT, "--bogus"], "--bogus"),
    ([*AUDIT, "--attr", "g"], "--attr"),
    ([*AUDIT, "--bins", "1"], "--bins"),
    ([*AUDIT, "--max-levels", "1"], "--max-levels"),
    (["audit", *D, "--pred", "score", "--group", "g", "--out", "rep"], "--threshold"),
    (["audit", *D, "--pred", "pred", "--group", "g", "--threshold", "inf", "--out", "rep"], "--threshold"),
    (["audit", *D, "--pred", "pred", "--group", "age", "--out", "rep"], "--bins"),
    (["audit", *D, "--pred", "pred", "--group", "nope", "--out", "rep"], "--group"),
    # without --label the audit now writes the label-free impact-ratio report (#42)
    (["audit", "--data", "data.csv", "--pred", "pred", "--group", "g", "--lower-is-better", "--out", "rep"],
     "--lower-is-better"),
    ([*SCAN, "--prob", "zz"], "--prob"),
    (["scan", *D, "--pred", "pred", "--group", "nope", "--out", "rep"], "--attr"),
    (["scan", *D, "--pred", "pred", "--group", "age", "--out", "rep"], "--attr"),
    ([*SCAN, "--lam", "nan"], "--lam"),
    ([*SCAN, "--lam", "-1"], "--lam"),
    ([*SCAN[:-2], "--replicates", "-1"], "--replicates"),
    ([*SCAN[:-1], "afile"], "--out"),
    ([*SCAN, "--seed", str(2**70)], "--seed"),
    (["scan", *D, "--pred", "pred", "--out", "rep"], "--attr"),
    (["simulate", "--n", "5", "--observed", "inf"], "--observed"),
    (["simulate", "--n", "0"], "--n"),
    (["simulate", "--n", "1", "2", "3"], "--n"),
    (["simulate", "--n", "5", "--samples", "0"], "--samples"),
    (["simulate", "--n", "5", "--seed", str(2**70)], "--seed"),
    (["simulate", "--n", "5", "--null", "multinomial"], "--cm"),
    (["simulate"], "--n"),
    (["table1", "--bogus"], "--bogus"),
    (["bogus"], "invalid choice"),
]


@pytest.mark.parametrize("argv,needle", INVALID, ids=[" ".join(a[:1] + a[-2:]) for a, _ in INVALID])
def test_invalid_cli_input_one_line_exit_2_nothing_written(workdir, capsys, argv, needle):
    before = _snapshot(workdir)
    rc = main(argv)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, (argv, out, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err and "usage:" not in err
    assert lines[0].startswith("ofijax") and "error:" in lines[0]
    assert needle in lines[0], lines[0]
    assert _snapshot(workdir) == before  # nothing written, nothing overwritten


_NUMERIC_AUDIT = ("--alpha", "--confidence", "--bootstrap", "--seed", "--replicates")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(_NUMERIC_AUDIT),
       value=st.one_of(st.text(min_size=1, max_size=8).filter(lambda s: not s.startswith("-")),
                       st.sampled_from(["-1", "1e400", "nan", "inf", "-inf", "1", "2", "0", str(2**64)])))
def test_numeric_options_never_traceback(workdir, capsys, option, value):
    # Values that happen to be valid run no audit: --out is an existing folder (refused, exit 2).
    before = _snapshot(workdir)
    rc = main(["audit", *D, "--pred", "pred", "--group", "g", "--out", "existing", option, value])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err
    assert _snapshot(workdir) == before


def test_existing_report_replaced_only_with_force_and_atomically(workdir, capsys):
    args = [*AUDIT[:-1], "existing", "--bootstrap", "0", "--no-plots", "--quiet"]
    assert main(args) == 2
    assert (workdir / "existing" / "keep.txt").exists()
    assert main([*args, "--force"]) == 0
    assert not (workdir / "existing" / "keep.txt").exists()
    assert (workdir / "existing" / "report.json").exists() and (workdir / "existing" / "report.md").exists()
    assert not [p for p in os.listdir(workdir) if p.startswith(".existing")]  # no temporary folder left
    capsys.readouterr()


def test_bare_command_prints_help(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("usage: ofijax")


def test_threshold_matches_numpy_float64(workdir, capsys):
    df = pd.read_csv(workdir / "data.csv")
    df["score"] = np.where(np.arange(len(df)) % 2 == 0, 0.5, 0.5 - 1e-12)  # 1e-12 below the threshold
    df.to_csv(workdir / "s.csv", index=False)
    assert main(["audit", "--data", "s.csv", "--label", "y", "--pred", "score", "--threshold", "0.5",
                 "--group", "g", "--out", "t", "--bootstrap", "0", "--no-plots", "--quiet"]) == 0
    import json

    rep = json.loads((workdir / "t" / "report.json").read_text())
    yhat = (df["score"].to_numpy(np.float64) >= 0.5).astype(int)
    ref = ofijax.audit(0, df["y"], yhat, sensitive_features=df[["g"]], num_samples=0).to_dict()
    assert rep["by_group"] == ref["by_group"] and rep["data"]["threshold"] == 0.5
    capsys.readouterr()


# ------------------------------------------------------------------ the API ---------------------
Y6 = [1, 0, 1, 0, 1, 1] * 2
P6 = [1, 1, 0, 0, 1, 0] * 2
G6 = list("aabbab") * 2

API_INVALID = [
    (dict(num_samples=2.5), TypeError, "num_samples"),
    (dict(num_samples="100"), TypeError, "num_samples"),
    (dict(num_samples=-3), ValueError, "num_samples"),
    (dict(num_samples=1), ValueError, "num_samples"),
    (dict(scan_num_samples=1.5), TypeError, "scan_num_samples"),
    (dict(sensitive_features=pd.DataFrame(index=range(12))), ValueError, "sensitive_features"),
    (dict(sensitive_features={}), ValueError, "sensitive_features"),
    (dict(y_true=np.array(Y6, dtype=complex)), TypeError, "y_true"),
    (dict(y_pred=np.array(P6, dtype=complex)), TypeError, "y_pred"),
    (dict(sample_weight=np.ones(12, dtype=complex)), TypeError, "sample_weight"),
    (dict(alpha=1.5), ValueError, "alpha"),
    (dict(alpha="x"), TypeError, "alpha"),
    (dict(null="bogus"), ValueError, "null"),
    (dict(method="bogus"), ValueError, "method"),
    (dict(correction="fdr"), ValueError, "correction"),
    (dict(confidence=1.5), ValueError, "confidence"),
    (dict(di_variant="x"), ValueError, "di_variant"),
    (dict(bins=1.5), TypeError, "bins"),
    (dict(bins={"nope": 3}), ValueError, "bins"),
    (dict(max_levels=1), ValueError, "max_levels"),
    (dict(min_group_size=0), ValueError, "min_group_size"),
    (dict(min_group_size=2.5), TypeError, "min_group_size"),
    (dict(beneficial_label=2), ValueError, "beneficial_label"),
    (dict(key="seed"), TypeError, "key"),
    (dict(key=2**70), TypeError, "key"),
]


@pytest.mark.parametrize("kwargs,exc,name", API_INVALID, ids=[n for _, _, n in API_INVALID])
def test_audit_invalid_params_name_the_argument(kwargs, exc, name):
    kw = dict(kwargs)
    key = kw.pop("key", 0)
    y = kw.pop("y_true", Y6)
    p = kw.pop("y_pred", P6)
    kw.setdefault("sensitive_features", G6)
    kw.setdefault("num_samples", 0)
    with pytest.raises(exc) as info:
        ofijax.audit(key, y, p, **kw)
    assert str(info.value).startswith(name), str(info.value)


def test_closed_stdout_stops_quietly():
    """``ofijax simulate ... | head -0``: the reader is gone before the report is printed; the
    command stops with status 1 and nothing on stderr (it printed "error: [Errno 32] Broken
    pipe")."""
    import subprocess
    import sys

    code = ("from ofijax.cli import main; raise SystemExit(main(['simulate', '--n', '12', "
            "'--samples', '2000']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, OFIJAX_PROGRESS="0"))
    proc.stdout.close()  # before the child writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and err == "", err
