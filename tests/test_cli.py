"""The ofijax command line: the default COMPAS audit end to end, report files, user errors (exit 2)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ofijax import audit
from ofijax.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _tmp_cwd(tmp_path, monkeypatch):
    """Every test runs in a fresh folder: nothing in the checkout (an ofijax-report/ left by a user's
    run) can change a result (#37 item 14)."""
    monkeypatch.chdir(tmp_path)


def run_cli(*args, cwd=None):
    env = dict(os.environ, JAX_PLATFORMS="cpu", OFIJAX_PROGRESS="0")
    return subprocess.run(
        [sys.executable, "-m", "ofijax", *args], cwd=cwd or os.getcwd(), env=env, capture_output=True,
        text=True, timeout=600
    )


def assert_close_json(got, want):
    """Compare a report.json fragment with the API's to_dict() (floats to 1e-12, NaN as None)."""
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert_close_json(got[k], want[k])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_close_json(a, b)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    else:
        assert got == want


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(1)
    n = 240
    grp = rng.choice(["north", "south", "west"], n)
    y = rng.integers(0, 2, n)
    # south is denied benefit: its positives are often predicted negative
    yh = np.where((grp == "south") & (y == 1) & (rng.random(n) < 0.6), 0, y)
    yh = np.where(rng.random(n) < 0.1, 1 - yh, yh)
    df = pd.DataFrame({"y": y, "pred": yh, "region": grp,
                       "outcome": np.where(y == 1, "hired", "rejected"), "x": rng.random(n)})
    path = tmp_path / "small.csv"
    df.to_csv(path, index=False)
    return path, df


# ------------------------------------------------------------------ subprocess (few: JAX import) ----
def test_default_audit_writes_reports_equal_to_the_api(tmp_path):
    out = tmp_path / "rep"
    r = run_cli("audit", "--out", str(out), "--bootstrap", "300")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "Algorithmic bias against African-American" in r.stdout
    assert "embedded COMPAS (violent" in r.stdout and "4020 rows" in r.stdout
    for name in ("report.json", "report.md", "ofi_heatmap.png", "di_heatmap.png"):
        assert (out / name).stat().st_size > 0, name
    report = json.loads((out / "report.json").read_text())
    assert report["data"]["rows"] == 4020 and report["data"]["label"] == "label_not_recid"

    from ofijax.datasets import load_compas

    d = load_compas("violent", filtered=True)
    af = audit(0, d["label_not_recid"], d["pred_low_risk"], sensitive_features=d[["race"]], num_samples=300)
    api = af.to_dict()
    for key in ("groups", "settings", "overall", "by_group", "pairs", "pairwise", "notes"):
        assert_close_json(report[key], api[key])
    aa_c = next(p for p in report["pairs"] if p["group_i"] == "African-American" and p["group_j"] == "Caucasian")
    assert aa_c["verdict"] == "algorithmic bias" and aa_c["disadvantaged"] == "African-American"
    md = (out / "report.md").read_text()
    assert "| African-American | Caucasian |" in md and "![ofi_heatmap.png](ofi_heatmap.png)" in md


def test_user_errors_exit_2_without_traceback(tmp_path, small_csv):
    path, _ = small_csv
    r = run_cli("audit", "--data", str(tmp_path / "nope.csv"), "--label", "y", "--pred", "pred", "--group", "g")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "not found" in r.stderr
    r = run_cli("audit", "--data", str(path), "--label", "y", "--pred", "pred", "--group", "regio")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "'regio' not found" in r.stderr and "columns: y, pred, region, outcome, x" in r.stderr


# ------------------------------------------------------------------ in process --------------------
def errline(capsys):
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_csv_audit_report_matches_api(tmp_path, small_csv, capsys):
    path, df = small_csv
    out = tmp_path / "o"
    rc = main(["audit", "--data", str(path), "--label", "y", "--pred", "pred", "--group", "region",
               "--out", str(out), "--bootstrap", "200", "--null", "uniform", "--correction", "none",
               "--seed", "7", "--no-plots"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "uniform" in text and "Wrote report.json, report.md" in text
    assert not (out / "ofi_heatmap.png").exists()
    report = json.loads((out / "report.json").read_text())
    af = audit(7, df["y"], df["pred"], sensitive_features=df[["region"]], num_samples=200, null="uniform",
               correction="none")
    api = af.to_dict()
    for key in ("groups", "by_group", "pairs", "pairwise", "settings"):
        assert_close_json(report[key], api[key])


def test_positive_maps_string_labels(tmp_path, small_csv, capsys):
    path, df = small_csv
    out = tmp_path / "o"
    rc = main(["audit", "--data", str(path), "--label", "outcome", "--pred", "pred", "--group", "region",
               "--positive", "hired", "--out", str(out), "--bootstrap", "0", "--no-plots", "--quiet"])
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    assert report["data"]["positive"] == {"outcome": ["hired"]}
    ref = audit(0, df["y"], df["pred"], sensitive_features=df[["region"]], num_samples=0).to_dict()
    assert_close_json(report["pairwise"]["ofi"], ref["pairwise"]["ofi"])
    capsys.readouterr()


def test_harmful_label_flips(tmp_path, small_csv, capsys):
    path, df = small_csv
    df2 = df.assign(y=1 - df["y"], pred=1 - df["pred"])
    p2 = tmp_path / "flipped.csv"
    df2.to_csv(p2, index=False)
    out = tmp_path / "o"
    assert main(["audit", "--data", str(p2), "--label", "y", "--pred", "pred", "--group", "region",
                 "--harmful-label", "--out", str(out), "--bootstrap", "0", "--no-plots", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    ref = audit(0, df["y"], df["pred"], sensitive_features=df[["region"]], num_samples=0).to_dict()
    assert_close_json(report["pairwise"]["ofi"], ref["pairwise"]["ofi"])
    capsys.readouterr()


def test_error_messages(tmp_path, small_csv, capsys):
    path, df = small_csv
    base = ["audit", "--data", str(path), "--pred", "pred", "--group", "region", "--out", str(tmp_path / "o"),
            "--force"]
    # non-binary label: lists the values and suggests --positive
    assert main(base + ["--label", "outcome"]) == 2
    err = errline(capsys)
    assert "not binary" in err and "'hired', 'rejected'" in err and "--positive" in err
    # --positive value absent
    assert main(base + ["--label", "outcome", "--positive", "yes"]) == 2
    assert "none of ['yes']" in errline(capsys)
    # no --label with --data: the label-free impact-ratio report (#42: OFI needs labels, ratios do not)
    assert main(base) == 0
    assert "no --label: impact ratios only" in capsys.readouterr().out
    # NaN rows: how many and where; --dropna drops them
    bad = df.copy()
    bad.loc[[3, 10], "y"] = np.nan
    bad.loc[10, "region"] = None
    p_nan = tmp_path / "nan.csv"
    bad.to_csv(p_nan, index=False)
    nan_args = ["audit", "--data", str(p_nan), "--label", "y", "--pred", "pred", "--group", "region",
                "--out", str(tmp_path / "o"), "--bootstrap", "0", "--no-plots", "--quiet", "--force"]
    assert main(nan_args) == 2
    err = errline(capsys)
    assert "2 row(s) have missing values" in err and "'y': 2 (lines 5, 12)" in err
    assert "'region': 1 (line 12)" in err and "--dropna" in err
    assert main(nan_args + ["--dropna"]) == 0
    assert "dropped 2 row(s)" in capsys.readouterr().err
    assert json.loads((tmp_path / "o" / "report.json").read_text())["data"]["rows"] == len(df) - 2
    # a group with zero rows
    assert main(base + ["--label", "y", "--groups", "north", "east"]) == 2
    err = errline(capsys)
    assert "group 'east' has zero rows" in err and "'north', 'south', 'west'" in err
    # a declared categorical group with zero rows (Parquet keeps categories)
    cat = df.assign(region=pd.Categorical(df["region"], categories=["north", "south", "west", "east"]))
    assert main(["audit", "--data", str(_parquet_or_skip(cat, tmp_path)), "--label", "y", "--pred", "pred",
                 "--group", "region", "--out", str(tmp_path / "o"), "--force"]) == 2
    assert "group 'east' of column 'region' has zero rows" in errline(capsys)
    # a single group
    assert main(base + ["--label", "y", "--groups", "north", "--bootstrap", "0"]) == 2
    assert "only one group" in errline(capsys)
    # bad options
    assert main(base + ["--label", "y", "--alpha", "2"]) == 2
    assert "--alpha" in errline(capsys)
    assert main(["audit", "--null", "bogus"]) == 2  # argparse usage error: one line
    err = errline(capsys)
    assert "invalid choice" in err and err.startswith("ofijax audit: error: --null:")


def _parquet_or_skip(df, tmp_path):
    pytest.importorskip("pyarrow")
    p = tmp_path / "cat.parquet"
    df.to_parquet(p)
    return p


def test_selected_groups_and_intersections(tmp_path, small_csv, capsys):
    path, df = small_csv
    df = df.assign(sex=np.where(np.arange(len(df)) % 2 == 0, "F", "M"))
    p = tmp_path / "two.csv"
    df.to_csv(p, index=False)
    out = tmp_path / "o"
    assert main(["audit", "--data", str(p), "--label", "y", "--pred", "pred", "--group", "region", "--group",
                 "sex", "--groups", "north & F", "south & M", "--out", str(out), "--bootstrap", "0",
                 "--no-plots", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["groups"] == ["north & F", "south & M"] and len(report["pairs"]) == 1
    capsys.readouterr()


def test_heatmaps_skipped_without_matplotlib(tmp_path, small_csv, capsys, monkeypatch):
    path, _ = small_csv
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "o"
    assert main(["audit", "--data", str(path), "--label", "y", "--pred", "pred", "--group", "region",
                 "--out", str(out), "--bootstrap", "0", "--quiet"]) == 0
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not list(out.glob("*.png")) and "matplotlib is not installed" in (out / "report.md").read_text()


def test_help_table1_and_no_arguments(capsys):
    assert main([]) == 0  # bare ofijax: the help
    out = capsys.readouterr().out
    assert "usage: ofijax" in out and "audit" in out and "simulate" in out
    assert main(["table1"]) == 0
    assert "2.71" in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "audit" in capsys.readouterr().out
    assert main(["audit", "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--data", "--label", "--pred", "--group", "--positive", "--harmful-label", "--scan", "--out",
                "--alpha", "--null", "--dropna"):
        assert opt in out
    assert main(["--bogus"]) == 2
    err = errline(capsys)
    assert "unrecognized arguments: --bogus" in err


def test_simulate(capsys):
    assert main(["simulate", "--n", "6", "18", "--samples", "20000", "--observed", "0.2222"]) == 0
    out = capsys.readouterr().out
    assert "uniform over M(n)" in out and "P(|OFI| >= 0.3)" in out and "exact Var(B)" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("B, n = 6"))
    mc_sd, exact_sd = float(line.split()[5]), float(line.split()[7])
    assert exact_sd == pytest.approx(np.sqrt(10 / 60), abs=1e-4)  # (n + 4)/(10 n) at n = 6
    assert abs(mc_sd - exact_sd) < 0.01
    obs = next(ln for ln in out.splitlines() if ln.startswith("P(|OFI| >= |+0.2222|)"))
    assert "exact 0.7160" in obs  # = ofi_test([0,1,0,5], [0,7,0,11], null="uniform")
    mc = float(obs.split("Monte Carlo ")[1].split(",")[0])
    assert abs(mc - 0.7160) < 4.5 * np.sqrt(0.716 * 0.284 / 20000)
    assert main(["simulate", "--n", "5", "--null", "multinomial"]) == 2
    assert "--cm" in errline(capsys)
    assert main(["simulate", "--n", "50", "--null", "subsample", "--cm", "10", "5", "5", "10"]) == 2
    assert "cannot draw 50 rows" in errline(capsys)


def test_scan_command_errors(tmp_path, small_csv, capsys, monkeypatch):
    path, _ = small_csv
    base = ["scan", "--data", str(path), "--label", "y", "--pred", "pred"]
    assert main(base) == 2
    assert "--attr: required with --data" in errline(capsys)
    assert main(base + ["--attr", "region", "--lam", "-1"]) == 2
    assert "--lam" in errline(capsys)
    assert main(base + ["--attr", "regio"]) == 2
    assert "'regio' not found" in errline(capsys)
    import ofijax

    monkeypatch.setitem(sys.modules, "ofijax.scan", None)
    monkeypatch.delattr(ofijax, "scan", raising=False)
    assert main(base + ["--attr", "region", "--replicates", "0"]) == 1
    assert "needs ofijax.scan" in errline(capsys)


def test_weight_column_matches_api(tmp_path, small_csv, capsys):
    path, df = small_csv
    df = df.assign(w=np.arange(len(df)) % 3 + 1)
    p = tmp_path / "w.csv"
    df.to_csv(p, index=False)
    out = tmp_path / "o"
    assert main(["audit", "--data", str(p), "--label", "y", "--pred", "pred", "--group", "region",
                 "--weight", "w", "--out", str(out), "--bootstrap", "50", "--no-plots", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    api = audit(0, df["y"], df["pred"], sensitive_features=df[["region"]], sample_weight=df["w"].to_numpy(float),
                num_samples=50).to_dict()
    assert report["settings"]["weighted"] is True
    for key in ("by_group", "pairs", "pairwise"):
        assert_close_json(report[key], api[key])
    capsys.readouterr()


# ------------------------------------------------------------------ top-k subgroups ---------------
def _two_planted(n=800, seed=1):
    """Rows with two planted subgroups wrongly denied the benefit: r2 & M and r4 & F."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"race": rng.choice(["r1", "r2", "r3", "r4"], n), "sex": rng.choice(["F", "M"], n)})
    y = rng.integers(0, 2, n)
    yh = np.where(rng.random(n) < 0.9, y, 1 - y)
    p1 = ((df.race == "r2") & (df.sex == "M")).to_numpy()
    p2 = ((df.race == "r4") & (df.sex == "F")).to_numpy()
    yh = np.where((p1 | p2) & (y == 1) & (rng.random(n) < 0.6), 0, yh)
    return df.assign(y=y, pred=yh), p1, p2


def test_scan_top_k_finds_both_planted_subgroups_api_and_cli(tmp_path, capsys):
    from ofijax.auditing import run_scans

    df, p1, p2 = _two_planted()
    y, yh = df["y"].to_numpy(), df["pred"].to_numpy()
    res = run_scans(0, y, yh, df[["race", "sex"]], side="negative", num_samples=19, top_k=3)
    f = res["fpr_scan"]
    top = f["top"]
    assert f["top_k"] == 3 and 2 <= len(top) <= 3 and [t["rank"] for t in top] == list(range(1, len(top) + 1))
    found = [t["subgroup"] for t in top[:2]]
    assert {"race": ["r2"], "sex": ["M"]} in found and {"race": ["r4"], "sex": ["F"]} in found
    # backward-compatible keys = the first find; sizes, rates against NumPy counts
    assert f["subgroup"] == top[0]["subgroup"] and f["p_value"] == top[0]["p_value"]
    earlier = np.zeros(len(df), bool)
    for t in top[:2]:
        rows = p1 if t["subgroup"]["race"] == ["r2"] else p2
        cls = rows & (y == 1)
        assert t["size"] == rows.sum() and t["scanned_size"] == cls.sum()
        assert t["rate"] == pytest.approx(np.mean(yh[cls] == 0), abs=1e-12)
        rest = ~rows & ~earlier & (y == 1)
        assert t["rate_rest"] == pytest.approx(np.mean(yh[rest] == 0), abs=1e-12)
        earlier |= rows
        # family-wise p from 19 replicates: both planted finds beat every replicate's maximum
        assert t["p_value"] == pytest.approx(1 / 20)
        assert "family-wise p = 0.050 over the top 3" in t["description"]
    assert "not counting the people of subgroup #1" in top[1]["description"]
    assert all(t["p_value"] >= top[0]["p_value"] - 1e-12 for t in top if t["score"] <= top[0]["score"])

    # the same through the CLI: printed in words and written to scan.json / scan.md
    path = tmp_path / "two.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "s"
    assert main(["scan", "--data", str(path), "--label", "y", "--pred", "pred", "--attr", "race", "sex",
                 "--side", "negative", "--replicates", "19", "--top", "3", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "top 3 subgroups per scan" in text and "family-wise p-value is the chance" in text
    assert "#1: race in {r2} and sex in {M}" in text or "#1: race in {r4} and sex in {F}" in text
    assert "race in {r2} and sex in {M}" in text and "race in {r4} and sex in {F}" in text
    js = json.loads((out / "scan.json").read_text())
    assert js["top_k"] == 3
    cli_top = js["results"]["fpr_scan"]["top"]
    assert [t["subgroup"] for t in cli_top] == [t["subgroup"] for t in top]
    assert [t["p_value"] for t in cli_top] == pytest.approx([t["p_value"] for t in top])
    md = (out / "scan.md").read_text()
    assert "## Worst subgroups" in md and "race in {r4} and sex in {F}" in md


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_scan_top_bad_values_one_line_exit_2(tmp_path, small_csv, capsys, bad):
    path, _ = small_csv
    out = tmp_path / "o"
    assert main(["scan", "--data", str(path), "--label", "y", "--pred", "pred", "--attr", "region",
                 "--top", bad, "--out", str(out)]) == 2
    err = errline(capsys)
    assert err.startswith("ofijax scan: error: --top: must be") and not out.exists()


def test_audit_top_needs_scan(tmp_path, small_csv, capsys):
    path, _ = small_csv
    out = tmp_path / "o"
    assert main(["audit", "--data", str(path), "--label", "y", "--pred", "pred", "--group", "region",
                 "--top", "2", "--out", str(out)]) == 2
    assert "--top: only used with --scan" in errline(capsys) and not out.exists()
    assert main(["audit", "--data", str(path), "--label", "y", "--pred", "pred", "--group", "region",
                 "--scan", "--top", "0", "--out", str(out)]) == 2
    assert errline(capsys).startswith("ofijax audit: error: --top: must be ≥ 1") and not out.exists()
