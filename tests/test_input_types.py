"""polars and pyarrow inputs (issue 15, item 5): every entry point that takes a pandas
DataFrame/Series takes a polars DataFrame/Series and a pyarrow Table/Array/ChunkedArray, through
the one conversion point (``ofijax._validation.convert_inputs``), with results identical to the
pandas input; a wrong type is one TypeError naming the argument."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax import scan

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

N = 240


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(515)
    df = pd.DataFrame({"race": rng.choice(["a", "b", "c"], N), "sex": rng.choice(["F", "M"], N)})
    y = rng.integers(0, 2, N)
    planted = ((df.race == "a") & (df.sex == "F")).to_numpy()
    yhat = (rng.random(N) < 0.3 + 0.4 * planted).astype(np.int64)
    prob = np.clip(0.25 + 0.5 * rng.random(N), 0.01, 0.99)
    return df, y, yhat, prob


def _as(kind, df, *cols):
    """``df`` and the 1-D columns as polars / pyarrow objects (kind), or pandas."""
    if kind == "pandas":
        return (df, *[pd.Series(c, name=f"c{j}") for j, c in enumerate(cols)])
    if kind == "polars":
        return (pl.from_pandas(df), *[pl.Series(f"c{j}", c) for j, c in enumerate(cols)])
    if kind == "arrow":
        return (pa.Table.from_pandas(df, preserve_index=False), *[pa.array(c) for c in cols])
    if kind == "arrow_chunked":
        half = len(df) // 2
        return (pa.Table.from_pandas(df, preserve_index=False).to_batches()[0],
                *[pa.chunked_array([c[:half], c[half:]]) for c in cols])
    raise AssertionError(kind)


KINDS = ["polars", "arrow", "arrow_chunked"]


@pytest.mark.parametrize("kind", KINDS)
def test_audit_and_builders_equal_pandas(rows, kind):
    df, y, yhat, prob = rows
    def run(d, yy, yp, pp):
        return dict(
            audit=ofijax.audit(0, yy, yp, sensitive_features=d, num_samples=50),
            gcm=ofijax.group_confusion_matrices(yy, yp, d),
            sweep=ofijax.threshold_sweep(yy, pp, d, [0.3, 0.5, 0.7]),
            batch=ofijax.audit_batch(yy, scores=pp, thresholds=[0.4, 0.6], sensitive_features=d),
        )

    r = run(*_as("pandas", df, y, yhat, prob))
    res = run(*_as(kind, df, y, yhat, prob))
    a, b = r["audit"], res["audit"]
    pd.testing.assert_frame_equal(a.by_group, b.by_group)
    pd.testing.assert_frame_equal(a.pairs, b.pairs)
    for name in ("gcm", "sweep"):
        np.testing.assert_array_equal(np.asarray(r[name].cms), np.asarray(res[name].cms))
        assert r[name].groups == res[name].groups and r[name].names == res[name].names == ("race", "sex")
    pd.testing.assert_frame_equal(r["batch"].by_group, res["batch"].by_group)
    pd.testing.assert_frame_equal(r["batch"].pairs, res["batch"].pairs)


@pytest.mark.parametrize("kind", KINDS)
def test_series_group_keeps_its_name(rows, kind):
    df, y, yhat, _ = rows
    g = {"polars": pl.Series("race", df.race.to_numpy()),
         "arrow": pa.array(df.race.to_numpy()),
         "arrow_chunked": pa.chunked_array([df.race.to_numpy()])}[kind]
    r = ofijax.group_confusion_matrices(y, yhat, g)
    ref = ofijax.group_confusion_matrices(y, yhat, df.race.to_numpy() if kind != "polars" else df.race)
    np.testing.assert_array_equal(np.asarray(r.cms), np.asarray(ref.cms))
    assert r.names == ref.names  # ("race",) from polars; None from unnamed Arrow arrays, as NumPy


def test_audit_batch_polars_candidate_frame(rows):
    df, y, yhat, _ = rows
    cand = pd.DataFrame({"m1": yhat, "m2": 1 - yhat})
    ref = ofijax.audit_batch(y, cand, sensitive_features=df)
    got = ofijax.audit_batch(pl.Series(y), pl.from_pandas(cand), sensitive_features=pl.from_pandas(df))
    pd.testing.assert_frame_equal(ref.candidates, got.candidates)
    pd.testing.assert_frame_equal(ref.pairs, got.pairs)


def test_scans_equal_pandas(rows):
    """One test over the kinds, so the scans compile once (shapes are equal)."""
    df, y, yhat, prob = rows
    results = {}
    for k in ("pandas", "polars", "arrow"):
        d, yy, yp, pp = _as(k, df, y, yhat, prob)
        results[k] = dict(
            fpr=scan.fpr_scan(d, yy, yp, key=0, num_restarts=2),
            tpr=scan.tpr_scan(d, yy, yp, key=0, num_restarts=2),
            bias=scan.bias_scan(d, yy, pp, key=0, num_restarts=2),
            ijdi=scan.ijdi_scan(d, yy, yp, pp, lam=1.0, key=0, num_restarts=2),
            etp=scan.estimate_true_probabilities(d, yy),
        )
    ref = results.pop("pandas")
    assert ref["fpr"].subset  # a non-trivial result to compare
    for kind, got in results.items():
        for name in ("fpr", "tpr", "bias", "ijdi"):
            assert got[name].subset == ref[name].subset, (kind, name)
            assert got[name].score == ref[name].score, (kind, name)
            np.testing.assert_array_equal(got[name].mask, ref[name].mask)
        np.testing.assert_array_equal(got["etp"], ref["etp"])


def test_polars_and_arrow_match_pandas_by_position(rows):
    """No row labels: a polars/Arrow argument next to a pandas one is matched by position."""
    df, y, yhat, _ = rows
    idx = pd.Index(np.arange(N)[::-1] + 1000)
    yt = pd.Series(y, index=idx)
    ref = ofijax.group_confusion_matrices(y, yhat, df)
    got = ofijax.group_confusion_matrices(yt, pa.array(yhat), pl.from_pandas(df))
    np.testing.assert_array_equal(np.asarray(got.cms), np.asarray(ref.cms))
    with pytest.raises(ValueError, match=r"^y_pred: length mismatch \(y_pred has 239 rows, y_true has 240\)"):
        ofijax.group_confusion_matrices(yt, pl.Series(yhat[:-1]), df)


def test_nulls_from_polars_and_arrow_are_refused(rows):
    df, y, yhat, _ = rows
    race = df.race.to_numpy().astype(object)
    race[7] = None
    with pytest.raises(ValueError, match=r"^sensitive_features.*missing group value"):
        ofijax.group_confusion_matrices(y, yhat, pl.Series("race", race))
    y_null = pa.array([None if i == 3 else int(v) for i, v in enumerate(y)])
    with pytest.raises(ValueError, match=r"^y_true: 1 value\(s\) are NaN"):
        ofijax.audit(0, y_null, yhat, sensitive_features=df.race, num_samples=0)


def test_wrong_types_raise_typeerror_naming_the_argument(rows):
    df, y, yhat, prob = rows
    lazy = pl.from_pandas(df).lazy()
    with pytest.raises(TypeError, match=r"^sensitive_features: a polars LazyFrame .*\.collect\(\)"):
        ofijax.audit(0, y, yhat, sensitive_features=lazy)
    with pytest.raises(TypeError, match=r"^data: a polars LazyFrame"):
        scan.fpr_scan(lazy, y, yhat, key=0)
    with pytest.raises(TypeError, match=r"^y_true: a set has no row order"):
        ofijax.group_confusion_matrices(set(y.tolist()), yhat, df)
    with pytest.raises(TypeError, match=r"^y_pred: got an iterator"):
        ofijax.audit(0, y, (int(v) for v in yhat), sensitive_features=df)
    with pytest.raises(TypeError, match=r"^scores: got a object, which is not array-like"):
        ofijax.threshold_sweep(y, object(), df, [0.5])
    with pytest.raises(TypeError, match=r"^observations: a polars Expr"):
        scan.bias_scan(df, pl.col("y"), prob, key=0)
    with pytest.raises(TypeError, match=r"^data: a pyarrow .*ofijax\.stats\.collect"):
        scan.estimate_true_probabilities(pa.schema([("a", pa.int8())]), y)
    with pytest.raises(TypeError, match=r"^y_true: a polars LazyFrame"):
        ofijax.audit_batch(lazy, yhat[None], sensitive_features=df)


@pytest.mark.parametrize("values", [
    np.array([3, 1, 1, 7, 3], np.int64), np.array([-128, 127, 0, -128], np.int8),
    np.array([250, 255, 250], np.uint8), np.array([True, False, True]),
    np.array([0, 2**20, 5]),  # range too wide for the counting pass: pandas path
    np.array([2**64 - 1, 3], np.uint64),
])
def test_integer_column_codes_match_sorted_factorize(values):
    """The counting-pass encoder for integer columns gives pd.factorize(sort=True)'s codes and
    labels (dtype included), and the scans' encoding of a frame uses them."""
    from ofijax.scan import _encode

    col = pd.Series(values)
    ref_codes, ref_labels = pd.factorize(col, sort=True)
    codes, labels = _encode._encode_column(col, "a")
    np.testing.assert_array_equal(codes, ref_codes)
    np.testing.assert_array_equal(labels, np.asarray(ref_labels))
    assert labels.dtype == np.asarray(ref_labels).dtype
    enc = _encode.encode_data(pd.DataFrame({"a": values}), max_values=None)
    np.testing.assert_array_equal(enc.codes[:, 0], ref_codes)


def test_distinct_count_refuses_wide_integer_columns():
    from ofijax.scan import _encode

    col = pd.Series(np.arange(40) * 3)  # 40 distinct values over a range of 118
    assert _encode._distinct_at_most(col, 50) == 40
    assert _encode._distinct_at_most(pd.Series([5, 9, 5]), 50) <= 50
    with pytest.raises(ValueError, match="max_values"):
        _encode.encode_data(pd.DataFrame({"a": col}), max_values=20)


@pytest.mark.parametrize("n_values", [(5, 5, 5), (50, 50, 50, 50), (3000, 3000, 3000)])
def test_build_cells_matches_numpy_unique_rows(n_values):
    """build_cells (bincount for small key spaces, a radix argsort below 2^32 keys, np.unique
    above) equals np.unique over the code rows: cells in lexicographic order, each row's cell,
    the row counts and a row of each cell."""
    from ofijax.scan import _encode

    rng = np.random.default_rng(len(n_values))
    n = 20_000
    codes = np.stack([rng.integers(0, v, n) for v in n_values], 1).astype(np.int32)
    codes[: n // 4] = codes[n // 4: n // 2]  # repeated rows: cells of several rows
    row_cell, cell_codes, n_cells = _encode.build_cells(codes, np.asarray(n_values))
    ref, inv, cnt = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(cell_codes, ref)
    np.testing.assert_array_equal(row_cell, inv.reshape(-1))
    np.testing.assert_array_equal(n_cells, cnt)
    assert row_cell.dtype == np.int32 and cell_codes.dtype == np.int32
    np.testing.assert_array_equal(np.sort(_encode.stable_argsort(row_cell.astype(np.int64))),
                                  np.arange(n))
