"""Scans round 2 (#43): degenerate cases, one binning rule, one scan pipeline for every engine,
the global optimum where the space is enumerable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ofijax.auditing import run_scans
from ofijax.scan import fpr_scan, ijdi_scan, tpr_scan

# ---------------------------------------------------------------------------------------------
# (a) degenerate cases: uniform predictions, every row in one class


def _frame(n=20):
    return pd.DataFrame({"a": list("abcab" * (n // 5)), "b": list("xyyxy" * (n // 5))})


@pytest.mark.parametrize("pred", [0, 1])
def test_uniform_predictions_detect_nothing(pred):
    d = _frame()
    n = len(d)
    yp = np.full(n, pred)
    for fn in (fpr_scan, tpr_scan):
        yt = np.ones(n, int) if fn is fpr_scan else np.zeros(n, int)
        r = fn(d, yt, yp)
        assert (r.subset, r.score, r.q, r.size, r.total_size) == ({}, 0.0, 1.0, 0, 0)
        assert "no subgroup" in r.description
        # the randomization test and top-k agree: nothing found, p = 1
        r = fn(d, yt, yp, key=1, num_samples=9, top_k=2)
        assert r.score == 0.0 and r.p_value == 1.0 and len(r.top) == 1
    r = ijdi_scan(d, np.ones(n, int), yp, np.linspace(0.2, 0.8, n), lam=1.0)
    assert r.subset == {} and r.score == 0.0
    assert [s.edge_case for s in r.history] == ["no_subgroup"]


def test_uniform_predictions_in_mixed_labels_still_scan_the_other_class():
    # uniform predictions within the scanned class only: nothing on that side
    d = _frame()
    n = len(d)
    yt = np.tile([1, 0], n // 2)
    yp = np.where(yt == 1, 0, (np.arange(n) % 3 == 0).astype(int))
    assert fpr_scan(d, yt, yp).score == 0.0


def test_run_scans_one_class_is_no_subgroup():
    d = _frame()
    n = len(d)
    res = run_scans(0, np.ones(n, int), np.zeros(n, int), d, num_samples=0)
    for name in ("fpr_scan", "tpr_scan"):
        r = res[name]
        assert r["subgroup"] == {} and r["score"] == 0.0 and r["size"] == 0
        assert "no subgroup" in r["description"] and "nan" not in r["description"]
        assert r["top"][0]["score"] == 0.0


# ---------------------------------------------------------------------------------------------
# (b) one binning rule: (e_j, e_{j+1}], the first bin [e_0, e_1], for audits, scans and the CLI


def test_bin_codes_match_pandas_cut_right_closed():
    from ofijax.scan import bin_codes, bin_labels
    rng = np.random.default_rng(3)
    x = rng.integers(18, 80, 500).astype(float)
    edges = np.unique(np.quantile(x, np.linspace(0, 1, 5)))
    ref = pd.cut(x, edges, labels=False, include_lowest=True, right=True)
    np.testing.assert_array_equal(bin_codes(x, edges), ref)
    assert bin_codes([edges[0] - 1, np.nan], edges).tolist() == [-1, -1]
    assert bin_labels([18, 25, 40]) == ["[18, 25]", "(25, 40]"]


def test_scan_and_audit_bins_put_the_same_people_in_the_same_bin():
    from ofijax.auditing import bin_features
    from ofijax.scan import bias_scan, score_subset
    rng = np.random.default_rng(0)
    n = 2000
    age = rng.integers(18, 80, n)
    df = pd.DataFrame({"age": age})
    binned, edges_a = bin_features(df, bins=4)
    y = (rng.random(n) < 0.3).astype(int)
    p = np.full(n, 0.3)
    res = bias_scan(df, y, p, bins={"age": 4}, penalty=0.5)
    assert list(res.bins["age"]) == edges_a["age"]
    e = np.asarray(edges_a["age"])
    on_inner = np.isin(age, e[1:-1])
    assert on_inner.sum() > 50  # integer ages on the quantile edges: the closed side matters
    # the scan's bin label names the same interval as the audit's, minus its number
    audit_labels = sorted(set(binned["age"]))
    for lab in audit_labels:
        interval = lab.split(": ", 1)[1]
        r = score_subset(df, y, p, {"age": [interval]}, bins={"age": 4}, penalty=0.0)
        assert r.size == int((binned["age"] == lab).sum())
    # and both equal pandas.cut(right=True, include_lowest=True), an independent reference
    ref = pd.cut(age, e, labels=False, include_lowest=True, right=True)
    counts = np.bincount(ref, minlength=len(e) - 1)
    assert sorted(binned["age"].value_counts().sort_index().tolist()) == sorted(counts.tolist())


def test_close_edges_get_distinct_labels():
    # item 9: edges that print alike at 6 significant digits
    from ofijax.auditing import bin_features
    from ofijax.scan import bias_scan, bin_labels
    edges = [1.0, 1.0000005, 1.000001]
    assert len(set(bin_labels(edges))) == 2
    t0 = 1.7e9
    ts = [t0, t0 + 1, t0 + 2, t0 + 3]
    assert len(set(bin_labels(ts))) == 3
    x = np.array([1.0, 1.0000002, 1.0000007, 1.000001] * 10)
    df = pd.DataFrame({"x": x})
    rng = np.random.default_rng(1)
    y = (rng.random(40) < 0.5).astype(int)
    res = bias_scan(df, y, np.full(40, 0.4), bins={"x": edges})
    assert res.bins["x"] == tuple(edges)
    binned, _ = bin_features(df, bins={"x": edges})
    assert binned["x"].nunique() == 2


# ---------------------------------------------------------------------------------------------
# (c) one scan pipeline: pandas, stream and Spark give the same scan output


def _cli(args):
    import contextlib
    import io

    from ofijax.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def _same(a, b, path="") -> None:
    """Equal structures; floats equal to 1e-12 relative (the engines' programs may round the last
    bit of a score differently; every count, subgroup and word must be equal)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {set(a) ^ set(b)}"
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=0), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _scan_table(n=900, seed=0):
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"race": rng.choice(["a", "b", "zz"], n), "age": rng.integers(18, 80, n),
                      "sex": rng.choice(["F", "M"], n)})
    d["label"] = (rng.random(n) < 0.6).astype(int)
    d["pred"] = (rng.random(n) < np.where(d.race == "zz", 0.4, 0.7)).astype(int)
    return d


def test_scan_same_output_pandas_stream_spark(tmp_path, spark):
    import json
    import os

    d = _scan_table()
    d.to_csv(tmp_path / "all.csv", index=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        d.iloc[i * 300:(i + 1) * 300].to_csv(parts / f"p{i}.csv", index=False)
    opts = ["--label", "label", "--pred", "pred", "--attr", "race", "age", "sex", "--bins", "4",
            "--top", "2", "--samples", "0", "--quiet"]
    got, printed = {}, {}
    for engine, src in (("pandas", tmp_path / "all.csv"), ("stream", parts), ("spark", parts)):
        out = tmp_path / f"out_{engine}"
        rc, so, se = _cli(["scan", "--data", os.path.abspath(src), "--engine", engine,
                           "--out", str(out), *opts])
        assert rc == 0, se
        got[engine] = json.loads((out / "scan.json").read_text())
        printed[engine] = so
        assert got[engine].pop("engine") == engine
        got[engine].pop("data")
        prov = got[engine].pop("provenance")  # paths, command, date differ; rows do not
        assert prov["rows_read"] == prov["rows_used"] == len(d)
        assert (out / "report.html").exists()
        # --force: an existing folder is refused without it, by every engine
        rc, so, se = _cli(["scan", "--data", os.path.abspath(src), "--engine", engine,
                           "--out", str(out), *opts])
        assert rc == 2 and se.count("\n") == 1 and "--force" in se
    _same(got["pandas"], got["stream"])
    _same(got["pandas"], got["spark"])
    assert printed["pandas"] == printed["stream"] == printed["spark"]
    res = got["pandas"]
    assert res["top_k"] == 2 and len(res["results"]["fpr_scan"]["top"]) == 2
    assert list(res["bins"]) == ["age"]
    keys = {"side", "subgroup", "size", "scanned_size", "rate", "rate_rest", "score", "q",
            "p_value", "num_samples", "converged", "description", "top_k", "top"}
    assert keys <= set(res["results"]["fpr_scan"])
    # the counts the report states, against a direct count of the rows
    first = res["results"]["fpr_scan"]["top"][0]
    inside = np.ones(len(d), bool)
    for c, vals in first["subgroup"].items():
        inside &= d[c].astype(str).isin(vals).to_numpy()
    assert first["size"] == int(inside.sum())
    assert first["scanned_size"] == int((inside & (d.label == 1)).sum())


def test_stream_scan_options_refused_or_applied_by_name(tmp_path):
    import os

    d = _scan_table(300)
    parts = tmp_path / "parts"
    parts.mkdir()
    d.to_csv(parts / "p0.csv", index=False)
    base = ["scan", "--data", os.path.abspath(parts), "--engine", "stream", "--label", "label",
            "--pred", "pred", "--samples", "0"]
    rc, so, se = _cli([*base, "--attr", "race", "age"])  # 62 ages: refused unless binned
    assert rc == 2 and se.count("\n") == 1 and "--bins" in se and "--max-levels" in se
    rc, so, se = _cli([*base, "--attr", "race", "age", "--max-levels", "100"])
    assert rc == 0
    rc, so, se = _cli([*base, "--attr", "race", "--threshold", "0.5"])
    assert rc == 2 and se.count("\n") == 1 and "--threshold" in se


def test_audit_scan_section_same_pandas_stream_spark(tmp_path, spark):
    import json
    import os

    d = _scan_table(600, seed=1)
    d.to_csv(tmp_path / "all.csv", index=False)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(2):
        d.iloc[i * 300:(i + 1) * 300].to_csv(parts / f"p{i}.csv", index=False)
    scans = {}
    for engine, src in (("pandas", tmp_path / "all.csv"), ("stream", parts), ("spark", parts)):
        out = tmp_path / f"a_{engine}"
        rc, so, se = _cli(["audit", "--data", os.path.abspath(src), "--engine", engine,
                           "--label", "label", "--pred", "pred", "--group", "race", "--scan",
                           "--attr", "race", "sex", "--top", "2", "--scan-samples", "0",
                           "--samples", "0", "--no-plots", "--out", str(out)])
        assert rc == 0, se
        scans[engine] = json.loads((out / "report.json").read_text())["scan"]
    _same(scans["pandas"], scans["stream"])
    _same(scans["pandas"], scans["spark"])
    assert scans["pandas"]["fpr_scan"]["top_k"] == 2
    assert scans["pandas"]["fpr_scan"]["certified"]  # race x sex: every subgroup scored


# ---------------------------------------------------------------------------------------------
# (d) the global optimum where it can be had: exhaustive FPR-/TPR-Scan, certified


def _brute_rate(frame, y, penalty, q_hi=1e6, eps=1e-6):
    """The best FPR-/TPR-Scan score over every subgroup, in plain Python floats."""
    import itertools
    import math

    pbar = min(max(float(np.mean(y)), eps), 1 - eps)
    if y.sum() in (0, len(y)):
        return 0.0, {}
    t_hi = math.log(q_hi)
    cols = list(frame.columns)
    options = []
    for c in cols:
        vals = sorted(frame[c].unique())
        subs = [(None, 0)]
        for r in range(1, len(vals)):
            subs += [(frozenset(s), r) for s in itertools.combinations(vals, r)]
        options.append(subs)
    best, arg = 0.0, {}
    for combo in itertools.product(*options):
        inside = np.ones(len(y), bool)
        pen = 0
        for c, (s, r) in zip(cols, combo):
            if s is not None:
                inside &= frame[c].isin(list(s)).to_numpy()
                pen += r
        n_s = int(inside.sum())
        if n_s == 0:
            continue
        y_s = float(y[inside].sum())
        rate = y_s / n_s
        if rate <= pbar:
            continue
        t = t_hi if rate >= 1 else min(t_hi, math.log(rate * (1 - pbar) / (pbar * (1 - rate))))
        score = y_s * t - n_s * math.log1p(pbar * math.expm1(t)) - penalty * pen
        if score > best:
            best, arg = score, {c: s for c, (s, _) in zip(cols, combo) if s is not None}
    return best, arg


def _small_table(seed, n):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"a{j}": rng.choice(["u", "v", "w"], n) for j in range(3)})
    planted = frame["a0"].eq("u").to_numpy() & frame["a1"].isin(["v", "w"]).to_numpy()
    y = (rng.random(n) < np.where(planted, 0.7, 0.25)).astype(int)
    return frame, y


@pytest.mark.parametrize("seed", range(4))
def test_rate_scans_exhaustive_equal_brute_force(seed):
    n = (14, 20, 40, 80)[seed % 4]
    penalty = (0.1, 1.0)[seed % 2]
    frame, harm = _small_table(seed, n)
    best, arg = _brute_rate(frame, harm.astype(float), penalty)
    for fn, y_true in ((fpr_scan, np.ones(n, int)), (tpr_scan, np.zeros(n, int))):
        r = fn(frame, y_true, 1 - harm, penalty=penalty)  # 1 = benefit; harm = 1 - prediction
        assert r.search == "exhaustive" and r.certified
        assert r.score == pytest.approx(best, rel=1e-9, abs=1e-12)
        if best > 0:
            got = {c: frozenset(v) for c, v in r.subset.items()}
            b_s, _ = _brute_rate(frame[list(got)] if got else frame, harm.astype(float), 0.0)
            assert got == arg or r.score == pytest.approx(best, rel=1e-12)
        ca = fn(frame, y_true, 1 - harm, penalty=penalty, search="coordinate_ascent")
        assert not ca.certified and ca.score <= r.score + 1e-9 * max(1.0, abs(r.score))


def test_issue_example_small_two_constraint_optimum_is_found():
    # a small subgroup defined by two attributes that random restarts rarely reach: the
    # exhaustive path finds it whatever the restarts
    frame = pd.DataFrame({"a": list("xxyyzzxxyyzzxy"), "b": list("pqpqpqqpqpqppq")})
    harm = np.zeros(14, int)
    harm[(frame.a == "x") & (frame.b == "p")] = 1
    harm[3] = 1
    best, _ = _brute_rate(frame, harm.astype(float), 1.0)
    assert best > 0
    for restarts in (1, 10):
        r = tpr_scan(frame, np.zeros(14, int), 1 - harm, penalty=1.0, num_restarts=restarts)
        assert r.certified and r.score == pytest.approx(best, rel=1e-9)


def test_exhaustive_rows_equal_cells_and_randomization_runs_the_same_search():
    from ofijax.scan import rate_scan_cells

    frame, harm = _small_table(11, 80)
    rng = np.random.default_rng(5)
    y_true = (rng.random(80) < 0.6).astype(int)
    y_pred = 1 - harm
    g = (pd.DataFrame({**{c: frame[c] for c in frame}, "label": y_true, "pred": y_pred})
         .groupby(list(frame.columns) + ["label"]).agg(n=("pred", "size"), pos=("pred", "sum"))
         .reset_index())
    for fn, side in ((fpr_scan, "negative"), (tpr_scan, "positive")):
        r = fn(frame, y_true, y_pred, key=3, top_k=2)
        c = rate_scan_cells(3, list(frame.columns), [g[col].to_numpy() for col in frame.columns],
                            g.label.to_numpy(), g.n.to_numpy(), g.pos.to_numpy(), side=side,
                            top_k=2)
        assert [t.search for t in c.top] == ["exhaustive"] * len(c.top)
        _same([(t.subset, t.score, t.q, t.size, t.total_size, t.observed_rate,
                t.expected_rate, t.description) for t in r.top],
              [(t.subset, t.score, t.q, t.size, t.total_size, t.observed_rate,
                t.expected_rate, t.description) for t in c.top])
    r = fpr_scan(frame, y_true, y_pred, key=1, num_samples=19)
    assert r.certified and r.null_scores.shape == (19,) and np.all(r.null_scores >= 0)
    assert r.p_value == (1 + np.sum(r.null_scores >= r.score)) / 20


# ---------------------------------------------------------------------------------------------
# (e) items 6, 7, 10: collect_bias over parts typed differently, polars LazyFrame


def test_collect_bias_mixed_type_parts(tmp_path):
    from ofijax import stats

    rng = np.random.default_rng(0)
    a = pd.DataFrame({"code": [1, 2] * 20, "y": rng.integers(0, 2, 40), "e": rng.random(40)})
    b = a.assign(code=a["code"].astype(str))
    c = a.assign(code=a["code"].astype(float))
    (tmp_path / "mix").mkdir()
    a.to_parquet(tmp_path / "mix" / "a.parquet")
    b.to_parquet(tmp_path / "mix" / "b.parquet")
    kw = dict(outcome="y", expectations="e", attrs="code")
    # number in one part, text in another: one ValueError naming both files and the fix
    with pytest.raises(ValueError, match=r"^data: column 'code' has type .*b\.parquet.*a\.parquet.*as_strings"):
        stats.collect_bias(str(tmp_path / "mix"), **kw)
    merged = stats.collect_bias(str(tmp_path / "mix"), as_strings=True, **kw)
    assert sorted(merged.values[0].tolist()) == ["1", "2"]
    assert merged.n.tolist() == [40, 40]
    # int and float parts: one number per value, whatever the order of the parts
    for parts in ([a, c], [c, a]):
        v = stats.collect_bias(parts, **kw)
        assert sorted(v.values[0].tolist()) == [1.0, 2.0] and v.n.tolist() == [40, 40]


def test_polars_lazyframe_is_refused_with_the_fix():
    pl = pytest.importorskip("polars")
    from ofijax import stats

    lf = pl.DataFrame({"y": [1, 0], "p": [1, 0], "g": ["a", "b"], "e": [0.5, 0.5]}).lazy()
    with pytest.raises(TypeError, match=r"^data: a polars LazyFrame .*collect\(\)"):
        stats.collect(lf, label="y", pred="p", group="g")
    with pytest.raises(TypeError, match=r"^data: a polars LazyFrame .*collect\(\)"):
        stats.collect_bias(lf, outcome="y", expectations="e", attrs="g")
