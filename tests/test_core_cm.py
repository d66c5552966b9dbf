"""Confusion-matrix builders and layout conversions."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import ofijax

sk_metrics = pytest.importorskip("sklearn.metrics")

Y = [1, 1, 0, 0, 0]
YHAT = [1, 0, 1, 1, 0]


def test_layout_trap_label_route_and_sklearn_route():
    """ofi_notes §2: TP 1, FN 1, FP 2, TN 1 so B = +1/5 both ways; the wrong reading gives −1/5."""
    cm = ofijax.confusion_matrix(Y, YHAT)
    assert cm.tolist() == [1, 1, 2, 1]
    assert abs(float(ofijax.marginal_benefit(cm)) - 0.2) < 1e-7
    sk = sk_metrics.confusion_matrix(Y, YHAT, labels=[0, 1])
    assert abs(float(ofijax.marginal_benefit(ofijax.from_sklearn(sk))) - 0.2) < 1e-7
    wrong = np.asarray(sk).reshape(4)  # read [[TN, FP], [FN, TP]] as if it were TP, FN, FP, TN
    assert abs(float(ofijax.marginal_benefit(wrong)) + 0.2) < 1e-7


def test_flip_is_independent_sign_change():
    cm = ofijax.confusion_matrix(Y, YHAT)
    flipped = ofijax.flip(cm)
    assert flipped.tolist() == [1, 2, 1, 1]
    assert abs(float(ofijax.marginal_benefit(flipped)) + 0.2) < 1e-7
    # flipping labels and predictions gives the flipped matrix
    cm2 = ofijax.confusion_matrix(1 - np.array(Y), 1 - np.array(YHAT))
    assert cm2.tolist() == flipped.tolist()
    assert ofijax.confusion_matrix(Y, YHAT, beneficial_label=0).tolist() == flipped.tolist()
    assert ofijax.flip(ofijax.flip(cm)).tolist() == cm.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_from_sklearn_roundtrip_random(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 50)
    p = rng.integers(0, 2, 50)
    sk = sk_metrics.confusion_matrix(y, p, labels=[0, 1])
    ours = ofijax.confusion_matrix(y, p)
    assert ofijax.from_sklearn(sk).tolist() == ours.tolist()
    assert ofijax.to_sklearn(ours).tolist() == sk.tolist()
    tn, fp, fn, tp = sk.ravel()
    assert float(ofijax.marginal_benefit(ours)) == pytest.approx(float(Fraction(fp - fn, 50)))


def test_from_sklearn_leading_axes():
    stack = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
    out = ofijax.from_sklearn(stack)
    assert out.tolist() == [[4, 3, 2, 1], [8, 7, 6, 5]]
    with pytest.raises(ValueError, match=r"\(\.\.\., 2, 2\)"):
        ofijax.from_sklearn([1, 2, 3, 4])


def _loop_reference(y, yp, groups, w=None):
    labels = sorted(set(groups))
    out = []
    for g in labels:
        m = np.array([x == g for x in groups])
        ww = np.ones(len(y)) if w is None else np.asarray(w)
        yy, pp, wm = np.asarray(y)[m], np.asarray(yp)[m], ww[m]
        out.append([
            (wm * (yy == 1) * (pp == 1)).sum(), (wm * (yy == 1) * (pp == 0)).sum(),
            (wm * (yy == 0) * (pp == 1)).sum(), (wm * (yy == 0) * (pp == 0)).sum(),
        ])
    return labels, np.array(out)


@pytest.mark.parametrize("seed", range(3))
def test_group_confusion_matrices_equals_loop(seed):
    rng = np.random.default_rng(seed)
    n = 300
    y, yp = rng.integers(0, 2, n), rng.integers(0, 2, n)
    groups = rng.choice(["b", "a", "c", "d"], n)
    r = ofijax.group_confusion_matrices(y, yp, groups)
    labels, ref = _loop_reference(y, yp, list(groups))
    assert list(r.groups) == labels
    np.testing.assert_array_equal(np.asarray(r.cms), ref)
    w = rng.random(n)
    rw = ofijax.group_confusion_matrices(y, yp, pd.Series(groups, name="g"), sample_weight=w)
    np.testing.assert_allclose(np.asarray(rw.cms), _loop_reference(y, yp, list(groups), w)[1],
                               rtol=1e-5)
    assert rw.names == ("g",)


def test_intersections_of_several_columns():
    rng = np.random.default_rng(1)
    n = 200
    df = pd.DataFrame({"race": rng.choice(["x", "y"], n), "sex": rng.choice(["F", "M", "O"], n)})
    y, yp = rng.integers(0, 2, n), rng.integers(0, 2, n)
    r = ofijax.group_confusion_matrices(y, yp, df)
    combos = list(zip(df.race, df.sex))
    labels, ref = _loop_reference(y, yp, combos)
    assert list(r.groups) == labels
    assert r.names == ("race", "sex")
    np.testing.assert_array_equal(np.asarray(r.cms), ref)
    # the same through a 2-D array and a list of columns
    r2 = ofijax.group_confusion_matrices(y, yp, [df.race.to_numpy(), df.sex.to_numpy()])
    np.testing.assert_array_equal(np.asarray(r2.cms), ref)


def test_batched_predictions_equal_loop():
    rng = np.random.default_rng(3)
    n = 120
    y = rng.integers(0, 2, n)
    g = rng.integers(0, 5, n)
    yp = rng.integers(0, 2, (2, 3, n))
    r = ofijax.group_confusion_matrices(y, yp, g)
    assert r.cms.shape == (2, 3, 5, 4)
    for a in range(2):
        for b in range(3):
            single = ofijax.group_confusion_matrices(y, yp[a, b], g).cms
            np.testing.assert_array_equal(np.asarray(r.cms[a, b]), np.asarray(single))
    cm = ofijax.confusion_matrix(y, yp)
    assert cm.shape == (2, 3, 4)
    np.testing.assert_array_equal(np.asarray(cm[1, 2]), np.asarray(ofijax.confusion_matrix(y, yp[1, 2])))


def test_threshold_sweep_equals_loop():
    rng = np.random.default_rng(4)
    n = 400
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)  # ties on purpose
    g = rng.choice(["p", "q", "r"], n)
    th = np.array([0.5, 0.0, 0.25, 1.1, 0.73, 0.25, 0.5])
    r = ofijax.threshold_sweep(y, s, g, th)
    assert r.cms.shape == (len(th), 3, 4)
    for t_idx, t in enumerate(th):
        ref = ofijax.group_confusion_matrices(y, (s >= t).astype(int), g).cms
        np.testing.assert_array_equal(np.asarray(r.cms[t_idx]), np.asarray(ref))
    w = rng.random(n)
    rw = ofijax.threshold_sweep(y, s, g, th, sample_weight=w)
    ref = ofijax.group_confusion_matrices(y, (s >= 0.25).astype(int), g, sample_weight=w).cms
    np.testing.assert_allclose(np.asarray(rw.cms[2]), np.asarray(ref), rtol=1e-5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ofijax.confusion_matrix([1, 0, 2], [1, 0, 1]), r"y_true: must be binary.*\[0, 1, 2\]"),
        (lambda: ofijax.confusion_matrix([1, 0, 1], [1, 0, 0.5]), r"y_pred: must be binary.*0\.5"),
        (lambda: ofijax.confusion_matrix(["yes", "no"], [1, 0]), r"y_true: must be binary.*'no'"),
        (lambda: ofijax.confusion_matrix([1, 0, 1], [1, 0]), "length mismatch"),
        (lambda: ofijax.confusion_matrix([1, float("nan")], [1, 0]), "NaN"),
        (lambda: ofijax.confusion_matrix([], []), "n = 0"),
        (lambda: ofijax.confusion_matrix([1, 0], [1, 0], sample_weight=[1, -1]), "sample_weight"),
        (lambda: ofijax.confusion_matrix([1, 0], [1, 0], beneficial_label=2), "beneficial_label"),
        (lambda: ofijax.group_confusion_matrices([1, 0], [1, 0], ["a"]), "length mismatch"),
        (lambda: ofijax.group_confusion_matrices([1, 0], [1, 0], ["a", None]), "missing group"),
        (lambda: ofijax.threshold_sweep([1, 0], [0.5, np.nan], [0, 0], [0.5]), "scores"),
        (lambda: ofijax.threshold_sweep([1, 0], [0.5, 0.1], [0, 0], []), "thresholds"),
        (lambda: ofijax.from_counts(tp=1, fn=-1, fp=0, tn=0), "fn: counts must be non-negative"),
        (lambda: ofijax.flip([1, 2, 3]), "length 4"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_main_prints_table1(capsys):
    from ofijax.__main__ import main

    assert main([]) == 0  # a bare `ofijax` prints help and names the commands
    assert "table1" in capsys.readouterr().out
    assert main(["table1"]) == 0
    out = capsys.readouterr().out
    assert "-0.06" in out and "0.22" in out and "2.71" in out and "-7/18" in out
    assert main(["--bogus"]) == 2


# ------------------------------------------------------------------ exact counts (issue 12) ------
BIG = 2**31  # int32 wraps here


def test_from_counts_and_flip_keep_int64_counts_beyond_int32():
    cm = ofijax.from_counts(tp=BIG + 3, fn=BIG, fp=BIG + 2, tn=1)
    assert cm.dtype == np.int64
    assert cm.tolist() == [BIG + 3, BIG, BIG + 2, 1]
    assert ofijax.flip(cm).tolist() == [1, BIG + 2, BIG, BIG + 3]
    assert ofijax.flip(np.array([BIG, 0, 0, 2**40], np.int64)).tolist() == [2**40, 0, 0, BIG]
    sk = ofijax.from_sklearn(np.array([[1, BIG + 1], [BIG, 7]], np.int64))
    assert sk.tolist() == [7, BIG, BIG + 1, 1]
    assert ofijax.to_sklearn(sk).tolist() == [[1, BIG + 1], [BIG, 7]]


def test_integer_weights_beyond_float32_are_counted_exactly():
    w = [2**24 + 1, 1, 2**40 + 3, 5]
    cm = ofijax.confusion_matrix([1, 1, 0, 0], [1, 1, 1, 0], sample_weight=w)
    assert cm.dtype == np.float64
    assert cm.tolist() == [2**24 + 2, 0, 2**40 + 3, 5]
    g = ofijax.group_confusion_matrices([1, 1, 0, 0], [1, 1, 1, 0], ["a", "b", "a", "b"],
                                        sample_weight=w)
    assert g.cms.tolist() == [[2**24 + 1, 0, 2**40 + 3, 0], [1, 0, 0, 5]]
    with pytest.raises(ValueError, match="^sample_weight"):
        ofijax.confusion_matrix([1, 0], [1, 0], sample_weight=[2**52, 2**52])


def test_unweighted_counts_are_int64():
    assert ofijax.confusion_matrix([1, 0], [1, 1]).dtype == np.int64
    assert ofijax.group_confusion_matrices([1, 0], [1, 1], [0, 1]).cms.dtype == np.int64


def test_threshold_sweep_compares_like_numpy_float64():
    # 1e-9 below a threshold is below it (float32 rounds it onto the threshold)
    r = ofijax.threshold_sweep([1, 0], [0.5 - 1e-9, 0.5 + 1e-9], [0, 0], [0.5])
    assert r.cms[0, 0].tolist() == [0, 1, 1, 0]
    # integer scores above 2**24 (float32 rounds 2**24 + 1 to 2**24)
    r = ofijax.threshold_sweep([1, 1], [2**24, 2**24 + 2], [0, 0], [2**24 + 1])
    assert r.cms[0, 0].tolist() == [1, 1, 0, 0]
    rng = np.random.default_rng(0)
    th = np.array([0.3, 0.3 + 1e-12, 0.7, 1e8 + 1])
    s = np.concatenate([th - 1e-12, th, th + 1e-12, rng.random(20)])
    y = rng.integers(0, 2, s.size)
    g = rng.integers(0, 3, s.size)
    got = np.asarray(ofijax.threshold_sweep(y, s, g, th).cms)
    for t_i, t in enumerate(th):
        for k in range(3):
            m = g == k
            ref = ofijax.confusion_matrix(y[m], (s[m] >= t).astype(int))
            assert got[t_i, k].tolist() == ref.tolist()


def test_threshold_sweep_and_builders_name_bad_shapes():
    with pytest.raises(ValueError, match="^y_true"):
        ofijax.threshold_sweep([[1, 0], [0, 1]], [0.1, 0.2], [0, 0], [0.5])
    with pytest.raises(ValueError, match="^scores"):
        ofijax.threshold_sweep([1, 0, 1], [0.1, 0.2], [0, 0, 0], [0.5])
    with pytest.raises(ValueError, match="^sensitive_features"):
        ofijax.threshold_sweep([1, 0], [0.1, 0.2], [0, 0, 0], [0.5])
    with pytest.raises(ValueError, match="^thresholds"):
        ofijax.threshold_sweep([1, 0], [0.1, 0.2], [0, 0], [[0.5, 0.1]])
    with pytest.raises(ValueError, match="^fn"):
        ofijax.from_counts(tp=[1, 2], fn=[1, 2, 3], fp=0, tn=0)
    with pytest.raises(ValueError, match="^beneficial_label"):
        ofijax.confusion_matrix([1, 0], [1, 0], beneficial_label=2)


# ------------------------------------------------------------------ pandas alignment -------------
def test_pandas_permuted_index_is_aligned_not_matched_by_position():
    y = pd.Series([1, 1, 0, 0, 0], index=list("abcde"))
    yhat = pd.Series([1, 0, 1, 1, 0], index=list("abcde")).sample(frac=1, random_state=1)
    assert list(yhat.index) != list("abcde")
    assert ofijax.confusion_matrix(y, yhat).tolist() == [1, 1, 2, 1]
    g = pd.Series(["u", "v", "u", "v", "u"], index=list("abcde")).iloc[::-1]
    w = pd.Series([1.0, 2, 3, 4, 5], index=list("abcde")).iloc[[2, 0, 4, 1, 3]]
    got = ofijax.group_confusion_matrices(y, yhat, g, sample_weight=w)
    ref = ofijax.group_confusion_matrices(
        [1, 1, 0, 0, 0], [1, 0, 1, 1, 0], ["u", "v", "u", "v", "u"], sample_weight=[1, 2, 3, 4, 5]
    )
    assert got.cms.tolist() == ref.cms.tolist()
    s = pd.Series([0.9, 0.2, 0.8, 0.7, 0.1], index=list("abcde")).iloc[::-1]
    sw = ofijax.threshold_sweep(y, s, g, [0.5])
    ref = ofijax.threshold_sweep([1, 1, 0, 0, 0], [0.9, 0.2, 0.8, 0.7, 0.1],
                                 ["u", "v", "u", "v", "u"], [0.5])
    assert sw.cms.tolist() == ref.cms.tolist()


@pytest.mark.parametrize("other_index", [list("abcdx"), list("bcdef"), list("aabcd")])
def test_pandas_partially_overlapping_index_is_refused(other_index):
    y = pd.Series([1, 1, 0, 0, 0], index=list("abcde"))
    yhat = pd.Series([1, 0, 1, 1, 0], index=other_index)
    with pytest.raises(ValueError, match="^y_pred: its pandas index .*reset_index"):
        ofijax.confusion_matrix(y, yhat)
    g = pd.Series(list("uvuvu"), index=other_index)
    with pytest.raises(ValueError, match="^sensitive_features: its pandas index"):
        ofijax.group_confusion_matrices(y, y, g)
    # matching by position on purpose
    ok = ofijax.confusion_matrix(y.reset_index(drop=True), yhat.reset_index(drop=True))
    assert ok.tolist() == [1, 1, 2, 1]
