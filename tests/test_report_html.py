"""The audit a person reads (#42): impact-ratio tables, the detectable effect, provenance, the
self-contained HTML report (checked in headless Chromium where one is installed)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import ofijax
from ofijax.cli import main

# ------------------------------------------------------------------------------------------------
# impact_ratios
# ------------------------------------------------------------------------------------------------


def _brute(sel, groups):
    """Independent reference: per category exact counts, rates and ratios as Fractions."""
    cats = sorted(set(groups))
    n = {c: sum(1 for g in groups if g == c) for c in cats}
    s = {c: sum(int(x) for x, g in zip(sel, groups) if g == c) for c in cats}
    rate = {c: Fraction(s[c], n[c]) for c in cats}
    best = max(rate.values())
    return n, s, rate, {c: rate[c] / best if best else None for c in cats}


def test_impact_ratios_counts_rates_ratios_against_fractions():
    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b", "c", "d"], size=400, p=[0.4, 0.3, 0.2, 0.1])
    sel = (rng.random(400) < np.select([g == "a", g == "b", g == "c"], [0.6, 0.4, 0.3], 0.5)).astype(int)
    t = ofijax.impact_ratios(sel, pd.Series(g, name="race"))
    n, s, rate, ratio = _brute(sel.tolist(), g.tolist())
    assert t["attribute"].eq("race").all()
    for r in t.itertuples():
        assert r.n == n[r.category] and r.selected == s[r.category]
        assert r.selection_rate == float(rate[r.category])
        assert r.impact_ratio == pytest.approx(float(ratio[r.category]), rel=1e-15)
    assert t["n"].dtype == np.int64 and t["selected"].dtype == np.int64
    assert t.loc[t["reference"], "impact_ratio"].tolist() == [1.0]


@pytest.mark.parametrize("a,b,c,d", [(3, 1, 1, 3), (0, 10, 4, 2), (1, 7, 9, 2), (12, 0, 3, 5), (2, 30, 0, 28)])
def test_fisher_matches_scipy(a, b, c, d):
    from ofijax.auditing._impact import fisher_exact_two_sided

    assert fisher_exact_two_sided(a, b, c, d) == pytest.approx(
        scipy.stats.fisher_exact([[a, b], [c, d]], alternative="two-sided").pvalue, rel=1e-9)


def test_row_tests_against_scipy():
    """Small counts: Fisher; large: the pooled z-test (scipy's normal tail of the same z)."""
    sel = [1] * 3 + [0] * 5 + [1] * 7 + [0] * 1 + [1] * 300 + [0] * 700 + [1] * 450 + [0] * 550
    grp = ["s1"] * 8 + ["s2"] * 8 + ["L1"] * 1000 + ["L2"] * 1000
    small = ofijax.impact_ratios(sel[:16], grp[:16]).set_index("category")
    assert small.loc["s1", "test"] == "Fisher exact"
    assert small.loc["s1", "p_value"] == pytest.approx(
        scipy.stats.fisher_exact([[3, 5], [7, 1]]).pvalue, rel=1e-9)
    big = ofijax.impact_ratios(sel[16:], grp[16:]).set_index("category")
    assert big.loc["L1", "test"].startswith("z-test")
    p1, p2, ph = 0.3, 0.45, 0.375
    z = (p1 - p2) / math.sqrt(ph * (1 - ph) * (2 / 1000))
    assert big.loc["L1", "z"] == pytest.approx(z, rel=1e-12)
    assert big.loc["L1", "p_value"] == pytest.approx(2 * scipy.stats.norm.sf(abs(z)), rel=1e-9)
    assert bool(big.loc["L1", "significant"])


def test_unknowns_two_percent_rule_and_intersection():
    df = pd.DataFrame({
        "sex": ["F"] * 60 + ["M"] * 38 + [None] * 2 + ["F"],
        "race": ["A"] * 50 + ["B"] * 40 + ["C"] * 1 + [""] * 9 + ["A"],
        "hired": [1] * 30 + [0] * 20 + [1] * 10 + [0] * 30 + [1] + [0] * 9 + [np.nan],
    })
    t = ofijax.impact_ratios("hired", ["sex", "race"], data=df)
    # the row with an unknown outcome is left out of every table
    assert t.attrs["unknown_outcome"] == 1
    assert t.attrs["unknown"] == {"sex": 2, "race": 9, "sex x race": 9}  # rows 98-99 unknown in both
    race = t[t["attribute"] == "race"].set_index("category")
    # a row with unknown sex still counts in the race table
    assert race["n"].sum() == 100 - 9
    # C is 1 of 91 < 2%: listed with count and rate, excluded, never the reference (rate 1.0)
    assert bool(race.loc["C", "excluded"]) and race.loc["C", "selection_rate"] == 1.0
    assert math.isnan(race.loc["C", "impact_ratio"]) and not race.loc["C", "reference"]
    assert bool(race.loc["A", "reference"])
    kept = ofijax.impact_ratios("hired", ["sex", "race"], data=df, exclude_small=False)
    assert kept.set_index(["attribute", "category"]).loc[("race", "C"), "reference"]
    inter = t[t["attribute"] == "sex x race"]
    assert set(inter["category"]) <= {f"{s} & {r}" for s in "FM" for r in "ABC"}
    assert inter["n"].sum() == 100 - 9


def test_three_columns_each_alone_and_full_intersection_only():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({c: rng.choice(list("xy"), 200) for c in ("a", "b", "c")})
    df["p"] = rng.integers(0, 2, 200)
    t = ofijax.impact_ratios("p", ["a", "b", "c"], data=df)
    assert list(dict.fromkeys(t["attribute"])) == ["a", "b", "c", "a x b x c"]
    full = t[t["attribute"] == "a x b x c"]
    ref = df.groupby(["a", "b", "c"])["p"].agg(["size", "sum"])
    for r in full.itertuples():
        key = tuple(r.category.split(" & "))
        assert (r.n, r.selected) == tuple(ref.loc[key])


def test_scoring_rate_exact_median_ties_not_above():
    scores = [1, 2, 3, 3, 3, 4, 5, 9, 3, 0]   # median 3: ties are not above
    grp = list("aaaaabbbbb")
    t = ofijax.impact_ratios(scores=scores, sensitive_features=grp).set_index("category")
    assert t.attrs["median"] == 3.0
    assert (t.loc["a", "scored_above"], t.loc["b", "scored_above"]) == (0, 3)
    low = ofijax.impact_ratios(scores=scores, sensitive_features=grp, lower_is_better=True).set_index("category")
    assert (low.loc["a", "scored_above"], low.loc["b", "scored_above"]) == (2, 1)


def test_no_dependence_on_names_or_order_and_pandas_aligned():
    rng = np.random.default_rng(2)
    g = pd.Series(rng.choice(["u", "v", "w"], 300), name="g")
    s = pd.Series(rng.integers(0, 2, 300))
    t = ofijax.impact_ratios(s, g)
    perm = rng.permutation(300)
    t2 = ofijax.impact_ratios(s.iloc[perm], g.iloc[perm[::-1]].sort_index())  # aligned on the index
    pd.testing.assert_frame_equal(t, t2)
    ren = ofijax.impact_ratios(s, g.map({"u": "z", "v": "y", "w": "x"}))
    a = t.drop(columns="category").sort_values(["n", "selected"]).reset_index(drop=True)
    b = ren.drop(columns="category").sort_values(["n", "selected"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ValueError, match="^y_pred"):
        ofijax.impact_ratios(pd.Series([1, 0], index=[5, 6]), pd.Series(["a", "b"], index=[0, 1]))


def test_bad_input_one_error_naming_the_argument():
    with pytest.raises(ValueError, match="^y_pred: pass exactly one"):
        ofijax.impact_ratios([1, 0], ["a", "b"], scores=[1, 2])
    with pytest.raises(ValueError, match="^y_pred: must be 0/1"):
        ofijax.impact_ratios([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="^min_share"):
        ofijax.impact_ratios([1, 0], ["a", "b"], min_share=2)
    with pytest.raises(ValueError, match="^sensitive_features"):
        ofijax.impact_ratios("p", "g")


# ------------------------------------------------------------------------------------------------
# detectable_ofi
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_i,n_j,p", [(300, 300, (0.4, 0.1, 0.1, 0.4)), (200, 500, (0.5, 0.15, 0.05, 0.3))])
def test_detectable_ofi_has_80_percent_power_by_monte_carlo(n_i, n_j, p):
    """Draw pairs whose true OFI is the stated detectable effect; the audit's own exact test
    (pooled null) rejects at alpha = 0.05 in about 80% of them."""
    from ofijax.distributions import ofi_pvalue_cms

    p = np.asarray(p)
    null_i, null_j = np.rint(p * n_i).astype(int), np.rint(p * n_j).astype(int)
    delta = float(ofijax.auditing._verdicts.detectable_ofi(null_i, null_j, 0.05))
    # independent formula: Var(FP - FN) = n[(pFP + pFN) - (pFP - pFN)^2] per group (ofi_notes §8)
    q = (null_i + null_j) / (n_i + n_j)
    var = ((q[2] + q[1]) - (q[2] - q[1]) ** 2) * (1 / n_i + 1 / n_j)
    assert delta == pytest.approx((scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)) * math.sqrt(var))
    # alternative: move delta/2 of the mass between FN and FP in each group, in opposite ways,
    # keeping the pooled error rates (B_i - B_j = delta in expectation)
    wi = n_j / (n_i + n_j)
    shift_i, shift_j = delta * wi / 2, -delta * (1 - wi) / 2
    pi = p + np.array([0, -shift_i, shift_i, 0])
    pj = p + np.array([0, -shift_j, shift_j, 0])
    rng = np.random.default_rng(7)
    m = 600
    ci, cj = rng.multinomial(n_i, pi, size=m), rng.multinomial(n_j, pj, size=m)
    assert np.mean((ci[:, 2] - ci[:, 1]) / n_i - (cj[:, 2] - cj[:, 1]) / n_j) == pytest.approx(delta, abs=0.01)
    pv = np.asarray(ofi_pvalue_cms(ci, cj, null="pooled").p_value)
    power = float(np.mean(pv < 0.05))
    assert abs(power - 0.8) < 0.06, power


def test_detectable_in_pairs_and_verdict_wording():
    df = ofijax.datasets.load_compas("violent", filtered=True)
    af = ofijax.audit(0, "label_not_recid", "pred_low_risk", sensitive_features="race", data=df, num_samples=0)
    p = af.pairs
    assert {"detectable_ofi", "detectable_method"} <= set(p.columns)
    assert p["detectable_method"].str.contains("pooled null's cell probabilities").all()
    ne = p[p["verdict"] == "no evidence"].iloc[0]
    assert f"no significant algorithmic bias; this test would detect |OFI| >= {ne['detectable_ofi']:.3f}" in ne["reading"]
    sr = p[p["verdict"] == "selection-rate disparity"].iloc[0]
    assert f"this test would detect |OFI| >= {sr['detectable_ofi']:.3f}" in sr["reading"]
    bias = p[p["verdict"] == "algorithmic bias"].iloc[0]
    assert "would detect" not in bias["reading"]
    # larger groups detect smaller effects; the value does not depend on which group is i
    from ofijax.auditing._verdicts import detectable_ofi

    a, b = np.array([40, 10, 12, 38]), np.array([30, 5, 9, 56])
    assert detectable_ofi(a, b, 0.05) == detectable_ofi(b, a, 0.05)
    assert detectable_ofi(10 * a, 10 * b, 0.05) < detectable_ofi(a, b, 0.05)
    uni = detectable_ofi(a, b, 0.05, null="uniform")
    z = scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)
    assert uni == pytest.approx(z * math.sqrt(104 / 1000 + 104 / 1000))


# ------------------------------------------------------------------------------------------------
# the CLI: report.json (schema, provenance, impact ratios), label-free and scoring audits
# ------------------------------------------------------------------------------------------------


def _frame(n=600, seed=3):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n), "race": rng.choice(["A", "B", "C"], n, p=[0.5, 0.4, 0.1]),
        "y": rng.integers(0, 2, n),
    })
    df["pred"] = np.where(rng.random(n) < np.where(df["race"] == "B", 0.35, 0.55), 1, 0)
    df["score"] = np.round(rng.normal(size=n) + (df["race"] == "A"), 1)
    return df


def _run(args, capsys=None):
    rc = main(args)
    return rc


def test_cli_report_json_schema_provenance_and_impact(tmp_path):
    import hashlib

    df = _frame()
    df.loc[[3, 8], "sex"] = np.nan  # unknown sex: kept in the race table, dropped from OFI (--dropna)
    f = tmp_path / "d.csv"
    df.to_csv(f, index=False)
    out = tmp_path / "r"
    assert main(["audit", "--data", str(f), "--label", "y", "--pred", "pred", "--group", "sex", "--group",
                 "race", "--samples", "0", "--no-plots", "--dropna", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert next(iter(rep)) == "schema_version" and rep["schema_version"] == "1.0"
    prov = rep["provenance"]
    assert prov["inputs"] == [{"path": str(f), "bytes": f.stat().st_size,
                               "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}]
    assert (prov["rows_read"], prov["rows_used"]) == (600, 598)
    assert prov["jax"] and prov["python"] and prov["seed"] == 0 and prov["date"].endswith("+00:00")
    raw = pd.read_csv(f, dtype={"sex": str, "race": str})
    ref = ofijax.impact_ratios("pred", ["sex", "race"], data=raw)
    rows = pd.DataFrame(rep["impact_ratios"]["rows"])
    assert rows[["attribute", "category", "n", "selected"]].values.tolist() == \
        ref[["attribute", "category", "n", "selected"]].values.tolist()
    assert rep["impact_ratios"]["unknown"] == {"sex": 2, "race": 0, "sex x race": 2}
    assert all("detectable_ofi" in p for p in rep["pairs"])
    page = (out / "report.html").read_text()
    assert "Impact ratios" in page and "sex x race" in page and prov["inputs"][0]["sha256"] in page
    assert "Impact ratios" in (out / "report.md").read_text()


def test_cli_label_free_and_scoring_rate(tmp_path, capsys):
    df = _frame()
    df.loc[5, "race"] = np.nan
    f = tmp_path / "d.csv"
    df.to_csv(f, index=False)
    out = tmp_path / "r"
    assert main(["audit", "--data", str(f), "--pred", "pred", "--group", "race", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert "pairs" not in rep and rep["impact_ratios"]["unknown"] == {"race": 1}
    assert "OFI" in rep["notes"][0] and "needs true labels" in rep["notes"][0]
    page = (out / "report.html").read_text()
    assert "OFI needs true labels" in page and page.count("<svg") == 1  # the DI heatmap only
    rate = {r["category"]: Fraction(r["selected"], r["n"]) for r in rep["impact_ratios"]["rows"]}
    for i, gi in enumerate(rep["groups"]):
        for j, gj in enumerate(rep["groups"]):
            assert rep["pairwise"]["di"][i][j] == pytest.approx(float(rate[gi] / rate[gj]), rel=1e-15)
    out2 = tmp_path / "s"
    assert main(["audit", "--data", str(f), "--scoring-rate", "score", "--lower-is-better", "--group", "race",
                 "--out", str(out2)]) == 0
    sec = json.loads((out2 / "report.json").read_text())["impact_ratios"]
    med = float(np.median(df["score"]))
    assert sec["kind"] == "scoring" and sec["median"] == med and sec["lower_is_better"] is True
    known = df[df["race"].notna()]
    for r in sec["rows"]:
        g = known[known["race"] == r["category"]]
        assert (r["n"], r["scored_above"]) == (len(g), int((g["score"] < med).sum()))
    capsys.readouterr()
    assert main(["audit", "--data", str(f), "--pred", "pred", "--group", "race", "--lower-is-better",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--lower-is-better" in err[0] and not (tmp_path / "x").exists()


def test_cli_stream_engine_impact_from_counts(tmp_path):
    df = _frame()
    d = tmp_path / "parts"
    d.mkdir()
    df.iloc[:300].to_csv(d / "a.csv", index=False)
    df.iloc[300:].to_csv(d / "b.csv", index=False)
    out = tmp_path / "r"
    assert main(["audit", "--data", str(d), "--label", "y", "--pred", "pred", "--group", "sex", "--group", "race",
                 "--samples", "0", "--no-plots", "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    ref = ofijax.impact_ratios(df["pred"], df[["sex", "race"]])
    rows = pd.DataFrame(rep["impact_ratios"]["rows"])
    assert rows[["attribute", "category", "n", "selected"]].values.tolist() == \
        ref[["attribute", "category", "n", "selected"]].values.tolist()
    assert np.allclose(rows["p_value"].astype(float), ref["p_value"], equal_nan=True, rtol=1e-12)
    assert [i["path"] for i in rep["provenance"]["inputs"]] == [str(d / "a.csv"), str(d / "b.csv")]
    assert (out / "report.html").exists()


# ------------------------------------------------------------------------------------------------
# report.html in a real browser (headless Chromium)
# ------------------------------------------------------------------------------------------------

CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if shutil.which(b)), None)


def _chromium(*args, timeout=60):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not found: install it with "
                    "`apt-get install -y chromium` (Debian/Ubuntu; .ci/run does) to run the browser test")
def test_report_html_in_headless_chromium(tmp_path):
    from PIL import Image

    out = tmp_path / "r"
    assert main(["audit", "--samples", "200", "--no-plots", "--out", str(out)]) == 0
    page = out / "report.html"
    text = page.read_text()
    # self-contained: no external reference of any kind (the SVG namespace is a name, not a load)
    assert not any(s in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
                   for s in ("http://", "https://", "src=", "<link", "<script"))
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    for section in ("summary", "verdicts", "groups", "pairs", "heatmaps", "impact", "provenance", "methods"):
        assert f'id="{section}"' in dom.stdout, section
    assert dom.stdout.count("<table") >= 4 and dom.stdout.count("<svg") == 2
    shot = tmp_path / "shot.png"
    res = _chromium("--window-size=1200,2400", f"--screenshot={shot}", page.as_uri())
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    assert [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln] == []
    img = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert img.shape == (2400, 1200)
    dark = (img < 128).mean()
    assert 0.005 < dark < 0.5 and img.std() > 20, (dark, img.std())  # text drawn, not blank
    # printable: Chromium prints it to a PDF of more than one page
    pdf = tmp_path / "report.pdf"
    res = _chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
    assert res.returncode == 0 and pdf.exists() and pdf.read_bytes().startswith(b"%PDF")
    assert pdf.read_bytes().count(b"/Type /Page") - pdf.read_bytes().count(b"/Type /Pages") >= 2
    # a page that breaks the rules is caught by the same checks (the test can fail)
    bad = tmp_path / "bad.html"
    bad.write_text(text.replace("<body>", '<body><img src="http://example.invalid/x.png">'))
    assert any(":CONSOLE" in ln for ln in _chromium("--dump-dom", bad.as_uri()).stderr.splitlines())


def test_batch_audit_writes_report_html_with_frontier(tmp_path):
    out = tmp_path / "b"
    assert main(["audit", "--score", "decile_score", "--thresholds", "2:8:2", "--harmful-label", "--quiet",
                 "--out", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert "Pareto frontier" in page and "data:image/png;base64," in page and 'id="provenance"' in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    rep = json.loads((out / "batch.json").read_text())
    assert rep["schema_version"] == "1.0" and rep["provenance"]["rows_used"] == 4020
    if CHROMIUM:
        res = _chromium("--dump-dom", (out / "report.html").as_uri())
        assert [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln] == []
        assert res.stdout.count("<table") >= 4


@pytest.mark.parametrize("engine", ["pandas", "stream"])
def test_scan_writes_report_html_and_provenance(tmp_path, engine):
    """``ofijax scan --out`` writes report.html beside scan.json (every engine), with the scan's
    findings in words and the input's SHA-256."""
    import hashlib

    df = _frame()
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    out = tmp_path / f"s_{engine}"
    assert main(["scan", "--data", str(data), "--label", "y", "--pred", "pred", "--attr", "race",
                 "sex", "--samples", "0", "--engine", engine, "--quiet", "--out", str(out)]) == 0
    rep = json.loads((out / "scan.json").read_text())
    page = (out / "report.html").read_text()
    assert rep["schema_version"] == "1.0" and rep["provenance"]["rows_used"] == len(df)
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    assert rep["provenance"]["inputs"][0]["sha256"] == sha and sha in page
    import html as _html

    for r in rep["results"].values():  # each scan's finding is on the page, in the CLI's words
        assert _html.escape(r["description"].split(":")[0], quote=False) in page
    assert "scanned" in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    if CHROMIUM:
        res = _chromium("--dump-dom", (out / "report.html").as_uri())
        assert [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln] == []


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lower", [False, True])
def test_scoring_two_passes_equal_in_memory(seed, lower):
    """The two-pass streaming scoring rate equals the in-memory one exactly: ties, negative
    scores, -0.0, NaN scores, unknown groups, odd and even counts, batches of any size."""
    from ofijax.auditing._impact import scoring_from_batches

    rng = np.random.default_rng(seed)
    n = 1001 + seed
    df = pd.DataFrame({"a": rng.choice(["x", "y", None], n, p=[0.5, 0.45, 0.05]),
                       "b": rng.choice(["p", "q", "r"], n)})
    s = rng.choice([-2.5, -0.0, 0.0, 1.0, 1.0 + 1e-12, 3.0, np.nan, 1e9], n) if seed else rng.normal(size=n)
    df["s"] = s
    ref = ofijax.impact_ratios(scores=df["s"], sensitive_features=df[["a", "b"]], lower_is_better=lower)
    sizes = [1, 7, 300, 10_000][seed:]

    def batches():
        start, i = 0, 0
        while start < n:
            step = sizes[i % len(sizes)]
            yield df.iloc[start:start + step]
            start, i = start + step, i + 1
    got = scoring_from_batches(batches, ["a", "b"], "s", lower_is_better=lower)
    assert got.attrs["median"] == ref.attrs["median"] == float(np.median(s[np.isfinite(s)]))
    assert got.attrs["unknown"] == ref.attrs["unknown"]
    assert got.attrs["unknown_outcome"] == ref.attrs["unknown_outcome"]
    pd.testing.assert_frame_equal(got, ref)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_stream_scoring_rate_exact(tmp_path, fmt):
    df = _frame(900, seed=9)
    df.loc[[4, 17], "score"] = np.nan
    d = tmp_path / "parts"
    d.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(df)), 3)):
        chunk = df.iloc[part]
        chunk.to_csv(d / f"p{i}.csv", index=False) if fmt == "csv" else chunk.to_parquet(d / f"p{i}.parquet",
                                                                                           index=False)
    out = tmp_path / "r"
    assert main(["audit", "--data", str(d), "--label", "y", "--pred", "pred", "--group", "sex", "--group", "race",
                 "--scoring-rate", "score", "--batch-size", "100", "--samples", "0", "--no-plots",
                 "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["data"]["engine"] == "stream"
    ref = ofijax.impact_ratios(scores=df["score"], sensitive_features=df[["sex", "race"]])
    sec = rep["impact_ratios"]
    assert sec["kind"] == "scoring" and sec["median"] == float(np.nanmedian(df["score"]))
    assert sec["unknown_outcome"] == 2
    rows = pd.DataFrame(sec["rows"])
    assert rows[["attribute", "category", "n", "scored_above"]].values.tolist() == \
        ref[["attribute", "category", "n", "scored_above"]].values.tolist()
