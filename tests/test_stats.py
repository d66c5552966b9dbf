"""ofijax.stats: the statistics path equals the in-memory path (audit and FPR-/TPR-Scan), for
frames of every kind, streamed files and Spark local mode; merges are exact; bad input at scale
names the file, batch and row."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ofijax
from ofijax import stats
from ofijax.datasets import load_compas
from ofijax.scan import fpr_scan, tpr_scan

ATTRS = ["race", "sex", "age_cat", "c_charge_degree"]


@pytest.fixture(scope="module")
def compas():
    df = load_compas("violent", filtered=True)
    cols = ["label_not_recid", "pred_low_risk"] + ATTRS
    return pd.DataFrame({c: df[c].to_numpy() for c in cols})


@pytest.fixture(scope="module")
def random_df():
    rng = np.random.default_rng(15)
    n = 5000
    df = pd.DataFrame({
        "a": rng.choice(["x", "y", "z"], n), "b": rng.integers(0, 4, n),
        "c": rng.choice(["u", "v"], n), "d": rng.integers(0, 3, n),
    })
    df["y"] = rng.integers(0, 2, n)
    planted = (df.a == "x") & (df.c == "u")
    df["yhat"] = (rng.random(n) < 0.3 + 0.25 * planted).astype(np.int64)
    return df


def _same_audit(af, bf):
    np.testing.assert_array_equal(af.cms, bf.cms)
    assert af.groups == bf.groups
    for name in ("ofi", "di", "te", "p_value", "p_adjusted", "ci_low", "ci_high"):
        np.testing.assert_allclose(getattr(af, name), getattr(bf, name), rtol=1e-12, atol=0,
                                   equal_nan=True, err_msg=name)
    assert af.pairs["verdict"].tolist() == bf.pairs["verdict"].tolist()
    assert af.pairs["reading"].tolist() == bf.pairs["reading"].tolist()
    pd.testing.assert_frame_equal(af.by_group, bf.by_group)


def _write_parts(df, tmp_path, parts=3):
    d = tmp_path / "parts"
    d.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(df)), parts)):
        pq.write_table(pa.Table.from_pandas(df.iloc[chunk], preserve_index=False),
                       d / f"part-{i}.parquet")
    return d


def test_compas_audit_all_sources_equal_in_memory(compas, tmp_path):
    af = ofijax.audit(0, compas.label_not_recid, compas.pred_low_risk,
                      sensitive_features=compas.race, num_samples=200)
    import polars as pl

    d = _write_parts(compas, tmp_path)
    sources = {
        "pandas": compas, "polars": pl.from_pandas(compas), "arrow": pa.Table.from_pandas(compas),
        "batches": pa.Table.from_pandas(compas).to_batches(max_chunksize=700),
        "dir": str(d), "glob": str(d / "*.parquet"),
    }
    first = None
    for name, src in sources.items():
        st = stats.collect(src, label="label_not_recid", pred="pred_low_risk", group="race",
                           batch_size=500)
        assert st.rows == len(compas), name
        if first is None:  # audit_counts is a function of the counts: audit them once
            first = st.counts
            _same_audit(af, stats.audit_counts(jax.random.key(0), st.counts, num_samples=200))
        assert st.counts.groups == first.groups and st.counts.names == first.names, name
        np.testing.assert_array_equal(st.counts.cms, first.cms, err_msg=name)
        assert st.counts.cms.dtype == np.int64


def test_random_audit_multi_column_harmful_label(random_df):
    df = random_df
    af = ofijax.audit(3, df.y, df.yhat, sensitive_features=df[["a", "d"]], beneficial_label=0,
                      num_samples=100)
    st = stats.collect(df, label="y", pred="yhat", group=["a", "d"], beneficial_label=0)
    _same_audit(af, stats.audit_counts(3, st.counts, num_samples=100))


def test_merge_is_exact_and_order_free(random_df):
    df = random_df
    whole = stats.collect(df, label="y", pred="yhat", group="b", attrs=["a", "c"])
    halves = [stats.collect(df.iloc[s], label="y", pred="yhat", group="b", attrs=["a", "c"])
              for s in (slice(3100, None), slice(0, 3100))]
    merged = halves[0].merge(halves[1])
    assert merged.rows == whole.rows == len(df)
    assert merged.counts.groups == whole.counts.groups
    np.testing.assert_array_equal(merged.counts.cms, whole.counts.cms)
    key = lambda c: pd.DataFrame({"a": c.values[0], "c": c.values[1], "l": c.label,  # noqa: E731
                                  "n": c.n, "p": c.positives}).sort_values(["a", "c", "l"])
    pd.testing.assert_frame_equal(key(merged.cells).reset_index(drop=True),
                                  key(whole.cells).reset_index(drop=True))
    import polars as pl

    for other in (pl.from_pandas(df), pa.Table.from_pandas(df)):
        again = stats.collect(other, label="y", pred="yhat", group="b", attrs=["a", "c"])
        pd.testing.assert_frame_equal(key(again.cells).reset_index(drop=True),
                                      key(whole.cells).reset_index(drop=True))
    with pytest.raises(ValueError, match="other: holds different parts"):
        whole.merge(stats.collect(df, label="y", pred="yhat", group="b"))
    # brute force: the cells are plain group-by sums
    ref = df.groupby(["a", "c", "y"]).agg(n=("yhat", "size"), p=("yhat", "sum")).reset_index()
    got = key(whole.cells).reset_index(drop=True)
    np.testing.assert_array_equal(got[["n", "p"]].to_numpy(), ref[["n", "p"]].to_numpy())


@pytest.mark.parametrize("which", ["compas", "random"])
def test_rate_scans_from_cells_equal_row_scans(which, compas, random_df, tmp_path):
    if which == "compas":
        df, y, yh, attrs = compas, "label_not_recid", "pred_low_risk", ATTRS
        df = df.assign(**{y: 1 - df[y], yh: 1 - df[yh]})  # harm orientation, as audit's scans
    else:
        df, y, yh, attrs = random_df, "y", "yhat", ["a", "b", "c", "d"]
    src = _write_parts(df, tmp_path)
    st = stats.collect(str(src), label=y, pred=yh, attrs=attrs, batch_size=1000)
    for row_fn, cell_fn in ((fpr_scan, stats.fpr_scan_cells), (tpr_scan, stats.tpr_scan_cells)):
        r = row_fn(df[attrs], df[y].to_numpy(), df[yh].to_numpy(), key=jax.random.key(7))
        c = cell_fn(st.cells, key=7)  # the same search="auto" (exhaustive where small, #43)
        assert c.subset == r.subset
        assert c.listed == r.listed
        assert c.size == r.size
        assert abs(c.score - r.score) <= 1e-6
        assert abs(c.q - r.q) <= 1e-6 * max(1.0, r.q)


def test_cell_randomization_test_finds_planted_and_is_reproducible(random_df):
    st = stats.collect(random_df, label="y", pred="yhat", attrs=["a", "b", "c", "d"])
    r1 = stats.fpr_scan_cells(st.cells, num_samples=19, key=1, beneficial_label=0)
    r2 = stats.fpr_scan_cells(st.cells, num_samples=19, key=1, beneficial_label=0)
    assert r1.subset == {"a": ("x",), "c": ("u",)}
    assert r1.p_value == pytest.approx(0.05)  # every null replicate scores below the planted one
    np.testing.assert_array_equal(r1.null_scores, r2.null_scores)
    # the null replicates are on the scale of the row-level test's (same distribution)
    rr = fpr_scan(random_df[["a", "b", "c", "d"]], random_df.y, random_df.yhat,
                  num_samples=19, key=jax.random.key(1), beneficial_label=0)
    assert 0.2 < np.median(r1.null_scores) / np.median(rr.null_scores) < 5


def _bad_parts(df, tmp_path, mutate):
    d = _write_parts(df, tmp_path)
    last = d / "part-2.parquet"
    t = pq.read_table(last).to_pandas()
    t = mutate(t)
    pq.write_table(pa.Table.from_pandas(t, preserve_index=False), last)
    return d


@pytest.mark.parametrize("case", ["nan_group", "non_binary", "missing_column"])
def test_bad_input_in_a_later_file_names_file_and_row(case, random_df, tmp_path):
    df = random_df.assign(g=random_df.a.astype(object))

    def mutate(t):
        if case == "nan_group":
            t.loc[5, "g"] = None
        elif case == "non_binary":
            t.loc[7, "y"] = 2
        else:
            t = t.drop(columns=["yhat"])
        return t

    d = _bad_parts(df, tmp_path, mutate)
    with pytest.raises(ValueError) as ei:
        stats.collect(str(d), label="y", pred="yhat", group="g", batch_size=400)
    msg = str(ei.value)
    assert msg.startswith("data: ") and "part-2.parquet" in msg
    # #37 item 16: a Parquet file's 0-based row, within that file
    if case == "nan_group":
        assert "row 5 (0-based) of" in msg and "'g'" in msg
    elif case == "non_binary":
        assert "row 7 (0-based) of" in msg and "not binary" in msg
    else:
        assert "no column 'yhat'" in msg


def test_csv_stream_equals_parquet(random_df, tmp_path):
    p = tmp_path / "d.csv"
    random_df.to_csv(p, index=False)
    a = stats.collect(str(p), label="y", pred="yhat", group="a")
    b = stats.collect(random_df, label="y", pred="yhat", group="a")
    np.testing.assert_array_equal(a.counts.cms, b.counts.cms)


def test_spark_local_equals_in_memory(spark, compas):
    sdf = spark.createDataFrame(compas)
    st = stats.from_spark(sdf, label="label_not_recid", pred="pred_low_risk", group="race",
                          attrs=ATTRS)
    ref = stats.collect(compas, label="label_not_recid", pred="pred_low_risk", group="race",
                        attrs=ATTRS)
    assert st.counts.groups == ref.counts.groups
    np.testing.assert_array_equal(st.counts.cms, ref.counts.cms)
    af = ofijax.audit(0, compas.label_not_recid, compas.pred_low_risk,
                      sensitive_features=compas.race, num_samples=100)
    _same_audit(af, stats.audit_counts(0, st.counts, num_samples=100))
    r = fpr_scan(compas[ATTRS], compas.label_not_recid.to_numpy(),
                 compas.pred_low_risk.to_numpy())
    c = stats.fpr_scan_cells(st.cells)
    assert c.subset == r.subset and abs(c.score - r.score) <= 1e-6
    bad = spark.createDataFrame(compas.assign(label_not_recid=compas.label_not_recid * 2))
    with pytest.raises(ValueError, match="not binary"):
        stats.from_spark(bad, label="label_not_recid", pred="pred_low_risk", group="race")


# ---- CLI: `ofijax audit|scan --data DIR` equals the in-memory CLI on the same rows

def _cli(*argv):
    from ofijax.cli import main

    return main([str(a) for a in argv])


def _report(out):
    import json

    with open(out / "report.json", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def compas_files(compas, tmp_path_factory):
    base = tmp_path_factory.mktemp("compas")
    single = base / "compas.parquet"
    compas.to_parquet(single, index=False)
    d = base / "parts"
    d.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(compas)), 3)):
        compas.iloc[chunk].to_parquet(d / f"part-{i}.parquet", index=False)
    return single, d


AUDIT_ARGS = ("--label", "label_not_recid", "--pred", "pred_low_risk", "--group", "race",
              "--samples", "200", "--no-plots", "--quiet")


def test_cli_stream_audit_and_scan_equal_in_memory(compas_files, tmp_path, capsys):
    single, d = compas_files
    assert _cli("audit", "--data", single, *AUDIT_ARGS, "--out", tmp_path / "mem") == 0
    assert _cli("audit", "--data", d / "*.parquet", *AUDIT_ARGS, "--batch-size", "1000",
                "--out", tmp_path / "stream") == 0
    a, b = _report(tmp_path / "mem"), _report(tmp_path / "stream")
    for k in ("groups", "by_group", "pairs", "pairwise", "overall"):
        assert a[k] == b[k], k
    assert b["data"]["rows"] == a["data"]["rows"]
    scan = ("--label", "label_not_recid", "--pred", "pred_low_risk", "--attr", *ATTRS,
            "--samples", "0")
    assert _cli("scan", "--data", single, *scan, "--out", tmp_path / "smem") == 0
    assert _cli("scan", "--data", d, "--engine", "stream", *scan, "--out", tmp_path / "sst") == 0
    import json

    ra = json.loads((tmp_path / "smem" / "scan.json").read_text())["results"]
    rb = json.loads((tmp_path / "sst" / "scan.json").read_text())["results"]
    assert ra.keys() == rb.keys() == {"fpr_scan", "tpr_scan"}
    for name in ra:
        assert ra[name]["subgroup"] == rb[name]["subgroup"]
        assert ra[name]["scanned_size"] == rb[name]["scanned_size"]  # the same fields (#37)
        assert ra[name]["size"] == rb[name]["size"]
        assert abs(ra[name]["score"] - rb[name]["score"]) <= 1e-6


def test_cli_bad_later_file_exits_2_and_writes_nothing(compas, tmp_path, capsys):
    d = tmp_path / "bad"
    d.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(compas)), 3)):
        part = compas.iloc[chunk].copy()
        if i == 2:
            part.iloc[10, part.columns.get_loc("pred_low_risk")] = 3
        part.to_parquet(d / f"part-{i}.parquet", index=False)
    out = tmp_path / "report"
    assert _cli("audit", "--data", d, *AUDIT_ARGS, "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "part-2.parquet" in err[0] and "not binary" in err[0]
    assert "row 10 (0-based) of" in err[0]  # the 11th row of part-2 (#37 item 16)
    assert not out.exists()


@pytest.mark.slow  # end to end: the CLI through Spark jobs (from_spark is checked above)
def test_cli_spark_engine_equals_in_memory(spark, compas_files, tmp_path):
    # runs on the session's SparkSession (getOrCreate), so the suite starts Spark once
    single, d = compas_files
    assert _cli("audit", "--data", single, *AUDIT_ARGS, "--out", tmp_path / "mem") == 0
    assert _cli("audit", "--data", d, "--engine", "spark", "--spark-master", "local[2]",
                *AUDIT_ARGS, "--out", tmp_path / "spark") == 0
    a, b = _report(tmp_path / "mem"), _report(tmp_path / "spark")
    for k in ("groups", "by_group", "pairs", "pairwise", "overall"):
        assert a[k] == b[k], k


@pytest.mark.slow  # end to end: eight CLI audits, four through Spark jobs
def test_cli_spark_engine_reads_labels_and_missing_values_as_the_others(spark, tmp_path, capsys,
                                                                       monkeypatch):
    """#37 items 4, 5, 10: codes '01'/'1'/'1.0' are three groups, 'NA' is a label (missing only with
    --na-values), an empty field is missing, Parquet parts typed int64/string/double merge as
    labels; the Spark engine's report equals the stream engine's (session SparkSession)."""

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(37)
    g = np.array(["01"] * 21 + ["1"] * 39 + ["1.0"] * 30 + ["NA"] * 20, dtype=object)
    df = pd.DataFrame({"y": rng.integers(0, 2, 110), "p": rng.integers(0, 2, 110), "g": g})
    df.to_csv("codes.csv", index=False)
    df.assign(g=df.g.where(df.index != 7, None)).to_csv("empty.csv", index=False)
    d = tmp_path / "parts"
    d.mkdir()
    pd.DataFrame({"y": [1, 0, 1, 0], "p": [1, 1, 0, 0], "g": [1, 2, 1, 2]}).to_parquet(d / "a.parquet")
    pd.DataFrame({"y": [0, 1, 1], "p": [0, 1, 1], "g": ["1", "x", "x"]}).to_parquet(d / "b.parquet")
    pd.DataFrame({"y": [0, 1], "p": [1, 1], "g": [1.0, 2.5]}).to_parquet(d / "c.parquet")
    base = ("--label", "y", "--pred", "p", "--group", "g", "--samples", "0", "--no-plots", "--quiet",
            "--spark-master", "local[2]")
    reps = {}
    for data, want in (("codes.csv", {"01": 21, "1": 39, "1.0": 30, "NA": 20}),
                       (str(d), {"1": 4, "2": 2, "2.5": 1, "x": 2})):
        for engine in ("stream", "spark"):
            out = tmp_path / f"{engine}-{len(reps)}"
            assert _cli("audit", "--data", data, "--engine", engine, *base, "--out", out) == 0
            reps[engine] = _report(out)
            assert {r["group"]: r["n"] for r in reps[engine]["by_group"]} == want, engine
        for k in ("groups", "by_group", "pairs", "pairwise", "overall", "settings"):
            assert reps["stream"][k] == reps["spark"][k], (data, k)
    capsys.readouterr()
    for data, extra in (("empty.csv", ()), ("codes.csv", ("--na-values", "NA"))):
        assert _cli("audit", "--data", data, "--engine", "spark", *base, *extra,
                    "--out", tmp_path / "no") == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "column 'g'" in err[0] and "missing" in err[0], err
        assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("basis", ["chebyshev", "exact"])
def test_bias_scan_from_cell_features_equals_row_scan(basis, random_df):
    from ofijax.scan import bias_scan, chebyshev_cell_features, scan_cells

    df = random_df[["a", "b", "c", "d"]]
    rng = np.random.default_rng(1)
    n = len(df)
    if basis == "chebyshev":
        p = rng.uniform(0.05, 0.95, n)
    else:
        p = rng.choice([0.2, 0.4, 0.6], n)
    planted = ((df.a == "x") & (df.c == "u")).to_numpy()
    y = (rng.random(n) < np.where(planted, np.minimum(p * 1.6, 0.99), p)).astype(int)
    r = bias_scan(df, y, p, penalty=0.1, key=jax.random.key(3))
    codes = np.stack([pd.factorize(df[c], sort=True)[0] for c in df], 1)
    labels = [np.asarray(pd.factorize(df[c], sort=True)[1]) for c in df]
    cell_codes, cell = np.unique(codes, axis=0, return_inverse=True)
    cell = cell.ravel()
    c = cell_codes.shape[0]
    n_c = np.bincount(cell, minlength=c)
    y_c = np.bincount(cell, weights=y, minlength=c)
    if basis == "chebyshev":
        feats, pv = chebyshev_cell_features(p, cell, c), None
    else:
        pv = np.unique(p)
        feats = np.stack([np.bincount(cell, weights=(p == v), minlength=c) for v in pv], 1)
    s = scan_cells(cell_codes, codes.max(0) + 1, n_c, y_c, kind="bias", features=feats,
                   p_values=pv, penalty=0.1, key=jax.random.key(3))
    sub = {}
    for m, name in enumerate(df.columns):
        row = s.mask[m, : len(labels[m])]
        if s.listed[m] and not row.all():
            sub[name] = tuple(v.item() if hasattr(v, "item") else v for v in labels[m][row])
    assert sub == r.subset
    assert abs(s.score - r.score) <= 1e-6
    assert int(n_c[s.cells].sum()) == r.size


def test_bias_scan_streamed_equals_row_scan(random_df, tmp_path):
    from ofijax.scan import bias_scan

    attrs = ["a", "b", "c", "d"]
    rng = np.random.default_rng(2)
    n = len(random_df)
    p = rng.uniform(0.05, 0.95, n)
    planted = ((random_df.a == "x") & (random_df.c == "u")).to_numpy()
    y = (rng.random(n) < np.where(planted, np.minimum(p * 1.6, 0.99), p)).astype(int)
    df = random_df[attrs].assign(y=y, p=p)
    r = bias_scan(df[attrs], y, p, penalty=0.1, key=jax.random.key(3))
    d = _write_parts(df, tmp_path)
    bc = stats.collect_bias(str(d), outcome="y", expectations="p", attrs=attrs, batch_size=700)
    s = stats.bias_scan_cells(bc, penalty=0.1, key=jax.random.key(3))
    assert s.subset == r.subset and s.listed == r.listed and s.size == r.size
    assert abs(s.score - r.score) <= 1e-6
    assert bc.n.sum() == n and bc.positives.sum() == y.sum()


@pytest.fixture(scope="module")
def distributed_runs():
    """Two local CPU processes under jax.distributed (tests/_dist_worker.py) and the same work in
    this one process: ``(per-process results, single-process reference)``."""
    import json
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve()
    sys.path.insert(0, str(here.parent))
    try:
        import _dist_worker
    finally:
        sys.path.remove(str(here.parent))
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(here.parents[1]))
    env.pop("XLA_FLAGS", None)  # one CPU device per process, as in this process
    procs = [subprocess.Popen([sys.executable, str(here.with_name("_dist_worker.py")), str(i),
                               str(port)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    assert len(jax.local_devices()) == 1  # the reference runs blocks of the same shape
    ref = _dist_worker.run()  # while the two workers start up and wait on each other
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    res = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    return res, ref


@pytest.mark.slow  # end to end: two more JAX processes under jax.distributed
def test_replicates_under_jax_distributed_equal_one_process(distributed_runs):
    """Two local CPU processes under jax.distributed split the replicates; same null scores."""
    res, ref = distributed_runs
    assert sorted(r["rank"] for r in res) == [0, 1]
    for r in res:
        assert r["count"] == 2
        np.testing.assert_allclose(r["null"], ref["null"], rtol=1e-12, atol=1e-12)
        assert r["p"] == ref["p"]


@pytest.mark.slow  # end to end: two more JAX processes under jax.distributed
@pytest.mark.parametrize("which", ["mc", "stream"])
def test_monte_carlo_under_jax_distributed_equals_one_process(distributed_runs, which):
    """monte_carlo / the streaming engine under jax.distributed: each process evaluates its share
    of the blocks, the block summaries are gathered and merged in block order, so both processes
    return the single-process Summary bit for bit (counts, histogram, min/max, mean, variance)."""
    res, ref = distributed_runs
    want = ref[which]
    assert want["count"] == {"mc": 5000, "stream": 2200}[which]
    assert sum(want["hist"]) + want["below"] + want["above"] == want["count"]
    # the reference ran in one process (no gathers); each worker gathered once per round
    assert want.pop("rounds") == 0
    for r in res:
        assert r[which].pop("rounds") == {"mc": 1, "stream": 3}[which]
        assert r[which] == want


# ---- bad input in a late batch (issue 15): one error naming the file, the batch and the row


@pytest.mark.parametrize("case", ["nan_group", "nan_attr", "non_binary", "nan_label"])
def test_bad_value_in_a_late_batch_of_one_file(case, tmp_path):
    rng = np.random.default_rng(3)
    n = 5000
    df = pd.DataFrame({"g": rng.choice(["a", "b"], n).astype(object), "h": rng.integers(0, 3, n),
                       "y": rng.integers(0, 2, n), "yhat": rng.integers(0, 2, n)})
    col, value = {"nan_group": ("g", None), "nan_attr": ("h", np.nan), "non_binary": ("y", 2),
                  "nan_label": ("yhat", np.nan)}[case]
    df[col] = df[col].astype(object if col == "g" else float)
    df.loc[3456, col] = value
    path = tmp_path / "preds.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=1000)
    # through a file and through an iterator of polars batches: same batch and row
    pl = pytest.importorskip("polars")
    batches = [pl.from_pandas(df.iloc[i:i + 1000]) for i in range(0, n, 1000)]
    # #37 item 16: 0-based rows (of the file, or over the batches), and the batch
    for source, where in ((str(path), f"at row 3,456 (0-based) of '{path}' (batch 4);"),
                          (batches, "at row 3,456 (0-based; batch 4);")):
        with pytest.raises(ValueError) as ei:
            stats.collect(source, label="y", pred="yhat", group="g", attrs=["g", "h"],
                          batch_size=1000)
        msg = str(ei.value)
        assert msg.startswith(f"data: column {col!r} ") and where in msg, msg
        expect = "value 2" if case == "non_binary" else "missing (null/NaN/empty) value"
        assert expect in msg, msg


def test_missing_column_in_a_late_batch_and_bad_expectation(tmp_path):
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 3000), "y": rng.integers(0, 2, 3000),
                       "yhat": rng.integers(0, 2, 3000), "p": rng.random(3000)})
    parts = [df.iloc[:1000], df.iloc[1000:2000], df.iloc[2000:].drop(columns=["yhat"])]
    with pytest.raises(ValueError, match=r"^data: batch 3 has no column 'yhat'"):
        stats.collect(iter(parts), label="y", pred="yhat", group="g")
    bad = df.copy()
    bad.loc[2500, "p"] = 1.5
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pandas(bad, preserve_index=False), path, row_group_size=1000)
    with pytest.raises(ValueError, match=r"column 'p' must hold probabilities .* row 2,500 \(0-based\) of .* \(batch 3\)"):
        stats.collect_bias(str(path), outcome="y", expectations="p", attrs=["g"], batch_size=1000)


def test_cli_scan_nan_group_in_late_batch_exits_2_and_writes_nothing(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 4000
    df = pd.DataFrame({"race": rng.choice(["a", "b", "c"], n).astype(object),
                       "sex": rng.choice(["F", "M"], n), "y": rng.integers(0, 2, n),
                       "yhat": rng.integers(0, 2, n)})
    df.loc[3999, "race"] = None
    d = tmp_path / "parts"
    d.mkdir()
    for i in range(2):
        df.iloc[i * 2000:(i + 1) * 2000].to_parquet(d / f"part-{i}.parquet", index=False)
    for cmd, extra in (("scan", ("--attr", "race", "sex", "--samples", "0")),
                       ("audit", ("--group", "race", "--no-plots", "--quiet"))):
        out = tmp_path / f"out-{cmd}"
        assert _cli(cmd, "--data", d, "--label", "y", "--pred", "yhat", *extra,
                    "--batch-size", "500", "--out", out) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "part-1.parquet" in err[0] and "batch 4" in err[0], err
        assert "'race'" in err[0] and "row 1,999 (0-based) of" in err[0], err
        assert not out.exists()
