"""Robustness contract of ofijax.cm, ofijax.metrics and ofijax.diff (issue 12), in 32- and 64-bit mode.

Hypothesis draws random *valid* inputs and checks every number against an independent reference
(Python ``Fraction`` arithmetic or plain NumPy float64), and random *invalid* inputs — a valid
call with one argument corrupted — and checks that the error is one ``ValueError``/``TypeError``
raised by ofijax itself (not from inside JAX or NumPy) whose message starts with the argument's
name. Every test runs twice: with ``jax.enable_x64(False)`` (JAX's default) and ``True``.
Counts go up to 2**40 and weights up to 2**40, far past int32 and float32.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ofijax import cm as C
from ofijax import diff as D
from ofijax import metrics as M

pytestmark = pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

COUNT = st.one_of(st.integers(0, 6), st.integers(0, 2**40))
CM = st.lists(COUNT, min_size=4, max_size=4).filter(lambda c: sum(c) > 0)


def cms_strategy(min_k=1, max_k=4):
    return st.lists(CM, min_size=min_k, max_size=max_k)


def rows_of(row, sizes=(1, 7, 25)):
    """Lists of ``row`` of a few fixed lengths (each new length compiles the kernels again)."""
    return st.sampled_from(sizes).flatmap(lambda n: st.lists(row, min_size=n, max_size=n))


# ---------------------------------------------------------------------------------------------
# references (Fractions / NumPy), independent of ofijax
# ---------------------------------------------------------------------------------------------


def _div(a, b):
    return None if b == 0 else Fraction(a) / Fraction(b)


def ref_group(name, c):
    tp, fn, fp, tn = c
    n = tp + fn + fp + tn
    return {
        "group_size": Fraction(n),
        "benefit": _div(tp + fp, n),
        "expected_benefit": _div(tp + fn, n),
        "marginal_benefit": _div(fp - fn, n),
        "true_positive_rate": _div(tp, tp + fn),
        "false_positive_rate": _div(fp, fp + tn),
        "false_negative_rate": _div(fn, tp + fn),
        "true_negative_rate": _div(tn, fp + tn),
        "positive_predictive_value": _div(tp, tp + fp),
        "selection_rate": _div(tp + fp, n),
        "base_rate": _div(tp + fn, n),
        "accuracy": _div(tp + tn, n),
    }[name]


def ref_pair(name, ci, cj):
    if name == "ofi":
        return ref_group("marginal_benefit", ci) - ref_group("marginal_benefit", cj)
    if name == "di_paper":
        ri, rj = ref_group("benefit", ci), ref_group("benefit", cj)
        return None if rj == 0 else ri / rj
    if name == "di_pp_over_p":
        gi = _div(ci[0] + ci[2], ci[0] + ci[1])
        gj = _div(cj[0] + cj[2], cj[0] + cj[1])
        return None if gi is None or gj is None or gj == 0 else gi / gj
    if name == "te":
        a, b = _div(ci[1], ci[2]), _div(cj[1], cj[2])
        return None if a is None or b is None else a - b
    raise AssertionError(name)


def assert_close(got, ref, what=""):
    got = float(got)
    if ref is None:
        assert math.isnan(got), (what, got)
        return
    r = float(ref)
    assert abs(got - r) <= 1e-14 * max(1.0, abs(r)) + 1e-300, (what, got, ref)


def assert_named_error(fn, name):
    """``fn()`` raises ValueError/TypeError from ofijax's own code, message starting with ``name``."""
    with pytest.raises((ValueError, TypeError)) as info:
        fn()
    msg = str(info.value)
    assert msg.startswith(name), f"expected a message starting with {name!r}, got {msg!r}"
    origin = str(info.traceback[-1].path)
    assert "/ofijax/" in origin, f"raised inside {origin}, not by ofijax: {msg}"


GROUP_METRICS = [
    "group_size", "benefit", "expected_benefit", "marginal_benefit", "true_positive_rate",
    "false_positive_rate", "false_negative_rate", "true_negative_rate",
    "positive_predictive_value", "selection_rate", "base_rate", "accuracy",
]


# ---------------------------------------------------------------------------------------------
# valid inputs: numbers agree with the references
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(cms=cms_strategy(3, 3), dtype=st.sampled_from(["int64", "list", "float64"]))
def test_group_metrics_match_fractions(x64, cms, dtype):
    arr = cms if dtype == "list" else np.asarray(cms, dtype=dtype)
    if dtype == "float64" and max(max(c) for c in cms) >= 2**53:
        return
    with jax.enable_x64(x64):
        for name in GROUP_METRICS:
            got = getattr(M, name)(arr)
            assert got.dtype == np.float64, name  # concrete inputs: float64 in both modes
            assert got.shape == (len(cms),)
            for g, c in zip(np.asarray(got), cms):
                assert_close(g, ref_group(name, c), name)


@SETTINGS
@given(pairs=st.lists(st.tuples(CM, CM), min_size=3, max_size=3))
def test_pair_metrics_match_fractions(x64, pairs):
    ci = np.asarray([p[0] for p in pairs], np.int64)
    cj = np.asarray([p[1] for p in pairs], np.int64)
    with jax.enable_x64(x64):
        got = {
            "ofi": M.ofi(ci, cj),
            "di_paper": M.disparate_impact(ci, cj),
            "di_pp_over_p": M.disparate_impact(ci, cj, variant="pp_over_p"),
            "te": M.treatment_equality(ci, cj),
        }
        for name, vals in got.items():
            assert vals.dtype == np.float64
            for v, (a, b) in zip(np.asarray(vals), pairs):
                assert_close(v, ref_pair(name, a, b), name)
        one = M.disparate_impact(ci, cj, undefined="one")
        for v, (a, b) in zip(np.asarray(one), pairs):
            both_zero = a[0] + a[2] == 0 and b[0] + b[2] == 0
            assert_close(v, Fraction(1) if both_zero else ref_pair("di_paper", a, b))


@SETTINGS
@given(cms=cms_strategy(3, 3))
def test_pairwise_ofi_matches_fractions(x64, cms):
    with jax.enable_x64(x64):
        m = np.asarray(M.pairwise(M.ofi, np.asarray(cms, np.int64)))
    for i, a in enumerate(cms):
        for j, b in enumerate(cms):
            assert_close(m[i, j], ref_pair("ofi", a, b))


@SETTINGS
@given(cms=st.lists(st.lists(st.integers(0, 1000), min_size=4, max_size=4).filter(sum),
                    min_size=3, max_size=3))
def test_traced_metrics_within_float32_tolerance(x64, cms):
    arr = np.asarray(cms, np.float32)
    with jax.enable_x64(x64):
        b = jax.jit(M.marginal_benefit)(arr)
        assert b.dtype == np.float32  # traced: the traced float dtype (float32 input)
        o = jax.jit(M.ofi)(arr, arr[::-1])
    for g, c in zip(np.asarray(b), cms):
        assert abs(float(g) - float(ref_group("marginal_benefit", c))) <= 1e-6
    for v, a, c in zip(np.asarray(o), cms, cms[::-1]):
        assert abs(float(v) - float(ref_pair("ofi", a, c))) <= 2e-6


@SETTINGS
@given(
    values=st.lists(st.floats(-2, 2) | st.just(float("nan")), min_size=4, max_size=4),
    tau=st.floats(0, 2),
)
def test_flags_match_the_rule(x64, values, tau):
    with jax.enable_x64(x64):
        flags = np.asarray(M.ofi_flag(values, threshold=tau))
        ff = np.asarray(M.four_fifths_rule(np.abs(values)))
    for v, f, g in zip(values, flags, ff):
        if math.isnan(v):
            assert math.isnan(f) and math.isnan(g)
            continue
        if abs(abs(v) - tau) > 1e-12:
            assert f == (1.0 if v > tau else -1.0 if v < -tau else 0.0)
        d = abs(v)
        if abs(d - 1.25) > 1e-12 and abs(d - 0.8) > 1e-12:
            assert g == (1.0 if d > 1.25 else -1.0 if d < 0.8 else 0.0)


@SETTINGS
@given(
    rows=rows_of(st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from("abc"),
                           st.integers(0, 2**40))),
    weighted=st.booleans(),
    beneficial=st.sampled_from([0, 1]),
)
def test_builders_count_exactly(x64, rows, weighted, beneficial):
    y, yhat, g, w = (list(t) for t in zip(*rows))
    weights = w if weighted else None
    with jax.enable_x64(x64):
        cm = C.confusion_matrix(y, yhat, sample_weight=weights, beneficial_label=beneficial)
        gcm = C.group_confusion_matrices(y, yhat, g, sample_weight=weights,
                                         beneficial_label=beneficial)
    assert cm.dtype == (np.float64 if weighted else np.int64)

    def ref(sel):
        out = [0, 0, 0, 0]
        for yi, pi, gi, wi in rows:
            if sel(gi):
                if beneficial == 0:
                    yi, pi = 1 - yi, 1 - pi
                out[2 * (1 - yi) + (1 - pi)] += wi if weighted else 1
        return out

    assert cm.tolist() == ref(lambda _: True)
    assert gcm.groups == tuple(sorted(set(g)))
    for k, grp in enumerate(gcm.groups):
        assert gcm.cms[k].tolist() == ref(lambda gi, grp=grp: gi == grp)


SCORE = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-(2**40), 2**40),
    st.sampled_from([0.5, 0.5 - 1e-9, 0.5 + 1e-9, 2**24, 2**24 + 1, 2**24 + 2]),
)


@SETTINGS
@given(
    rows=rows_of(st.tuples(st.integers(0, 1), SCORE, st.sampled_from("xy"))),
    thresholds=st.lists(SCORE, min_size=1, max_size=5),
    nudge=st.sampled_from([0, 1, -1]),
)
def test_threshold_sweep_equals_numpy_float64(x64, rows, thresholds, nudge):
    y, s, g = (list(t) for t in zip(*rows))
    th = np.asarray(thresholds, np.float64)
    if nudge:  # thresholds one ulp away from a score
        th[0] = np.nextafter(np.float64(s[0]), np.inf if nudge > 0 else -np.inf)
    with jax.enable_x64(x64):
        r = C.threshold_sweep(y, s, g, th)
    assert r.cms.dtype == np.int64
    sv, yv, gv = np.asarray(s, np.float64), np.asarray(y), np.asarray(g)
    for t_i, t in enumerate(th):
        pred = sv >= t
        for k, grp in enumerate(r.groups):
            m = gv == grp
            ref = [int(np.sum(m & (yv == 1) & pred)), int(np.sum(m & (yv == 1) & ~pred)),
                   int(np.sum(m & (yv == 0) & pred)), int(np.sum(m & (yv == 0) & ~pred))]
            assert r.cms[t_i, k].tolist() == ref


@SETTINGS
@given(cells=st.lists(st.lists(st.integers(0, 2**62), min_size=4, max_size=4),
                      min_size=1, max_size=3))
def test_conversions_are_exact(x64, cells):
    arr = np.asarray(cells, np.int64)
    with jax.enable_x64(x64):
        cm = C.from_counts(tp=arr[:, 0], fn=arr[:, 1], fp=arr[:, 2], tn=arr[:, 3])
        assert cm.dtype == np.int64 and cm.tolist() == cells
        assert C.flip(cm).tolist() == [c[::-1] for c in cells]
        sk = C.to_sklearn(cm)
        assert sk.tolist() == [[[c[3], c[2]], [c[1], c[0]]] for c in cells]
        assert C.from_sklearn(sk).tolist() == cells


@SETTINGS
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 1), st.floats(0, 1), st.integers(0, 2),
                  st.integers(0, 40).map(lambda k: k / 8)),
        min_size=1, max_size=16,
    ),
    weighted=st.booleans(),
)
def test_soft_confusion_matrices_and_penalties_match_numpy(x64, rows, weighted):
    # pad to 16 rows that belong to no group (zero group weights): one shape, one compile
    pad = [(0, 0.0, -1, 0.0)] * (16 - len(rows))
    y, p, g, w = (np.asarray(t) for t in zip(*(rows + pad)))
    gw = np.where(g[:, None] >= 0, np.eye(3)[np.maximum(g, 0)], 0.0)
    sw = w if weighted else None
    with jax.enable_x64(x64):
        soft = np.asarray(D.soft_confusion_matrices(y, p, gw, sample_weight=sw), np.float64)
        pen = float(D.ofi_penalty(soft))
        pen_l2 = float(D.ofi_penalty(soft, reduction="l2"))
    ww = gw * (1.0 if sw is None else sw[:, None])
    cells = np.stack([y * p, y * (1 - p), (1 - y) * p, (1 - y) * (1 - p)], -1)
    ref = np.einsum("nk,ng->gk", cells, ww)
    tol = 1e-12 if x64 else 1e-5
    np.testing.assert_allclose(soft, ref, rtol=tol, atol=tol * 10)
    n = ref.sum(-1)
    bs = [(ref[k, 2] - ref[k, 1]) / n[k] for k in range(3) if n[k] > 0]
    gaps = [abs(a - b) for i, a in enumerate(bs) for b in bs[i + 1:]]
    assert abs(pen - (max(gaps) if gaps else 0.0)) <= tol * 10
    assert abs(pen_l2 - (np.mean(np.square(gaps)) if gaps else 0.0)) <= tol * 10


# ---------------------------------------------------------------------------------------------
# invalid inputs: one named ValueError/TypeError raised by ofijax
# ---------------------------------------------------------------------------------------------

BAD_CM = st.sampled_from([
    [1, -1, 0, 2],            # negative
    [1, float("nan"), 0, 2],  # NaN
    [1, float("inf"), 0, 2],  # inf
    [1, 2, 3],                # wrong last axis
    [1, 2, 3, 4, 5],
    [0, 0, 0, 0],             # empty group
    ["a", "b", "c", "d"],     # not numeric
    None,
    [[1, 2], [3, 4]],
])


@SETTINGS
@given(bad=BAD_CM, good=CM, side=st.sampled_from(["i", "j"]),
       name=st.sampled_from(GROUP_METRICS))
def test_metrics_refuse_bad_matrices_by_name(x64, bad, good, side, name):
    with jax.enable_x64(x64):
        assert_named_error(lambda: getattr(M, name)(bad), "cm")
        args = (bad, good) if side == "i" else (good, bad)
        for f in (M.ofi, M.disparate_impact, M.treatment_equality):
            assert_named_error(lambda f=f: f(*args), f"cm_{side}")
        assert_named_error(lambda: M.pairwise(M.ofi, [bad, bad]), "cms")


@SETTINGS
@given(
    k_i=st.integers(2, 4), k_j=st.integers(2, 4),
    bad_option=st.sampled_from([("variant", "ppv"), ("undefined", 1), ("variant", None)]),
)
def test_metrics_refuse_bad_shapes_and_options(x64, k_i, k_j, bad_option):
    ci, cj = [[1, 0, 0, 5]] * k_i, [[1, 0, 0, 5]] * k_j
    with jax.enable_x64(x64):
        if k_i != k_j:
            assert_named_error(lambda: M.ofi(ci, cj), "cm_j")
        opt, value = bad_option
        assert_named_error(lambda: M.disparate_impact(ci, ci, **{opt: value}), opt)
        assert_named_error(lambda: M.pairwise(None, ci), "metric")
        assert_named_error(lambda: M.pairwise(M.ofi, [1, 0, 0, 5]), "cms")


@SETTINGS
@given(
    ofi_value=st.sampled_from(["a", 3.0, -2.5, float("inf"), [0.1, 7.0], None]),
    threshold=st.sampled_from([-0.1, 2.5, float("nan"), float("inf"), "0.3", True, None]),
    di=st.sampled_from(["x", -0.5, [1.0, -1.0], None]),
)
def test_flags_refuse_bad_values(x64, ofi_value, threshold, di):
    with jax.enable_x64(x64):
        assert_named_error(lambda: M.ofi_flag(ofi_value), "ofi_value")
        assert_named_error(lambda: M.ofi_flag(0.1, threshold=threshold), "threshold")
        assert_named_error(lambda: M.four_fifths_rule(di), "di")


def _valid_rows(n):
    rng = np.random.default_rng(n)
    return dict(
        y_true=rng.integers(0, 2, n), y_pred=rng.integers(0, 2, n),
        sensitive_features=rng.choice(["a", "b"], n), sample_weight=rng.random(n),
    )


BAD_ROWS = {
    # (a length mismatch is blamed on the argument that differs from y_true, the reference)
    "y_true": [lambda n: np.full(n, 2), lambda n: np.array(["yes"] * n), lambda n: np.full(n, np.nan),
               lambda n: np.zeros((2, n), int)],
    "y_pred": [lambda n: np.full(n, -1), lambda n: np.zeros(n + 2, int), lambda n: 1],
    "sensitive_features": [lambda n: np.array(["a"] * (n + 1)), lambda n: None,
                           lambda n: np.array([np.nan] * n)],
    "sample_weight": [lambda n: -np.ones(n), lambda n: np.full(n, np.nan), lambda n: np.ones(n + 1),
                      lambda n: np.array(["w"] * n), lambda n: np.ones((n, 2))],
}


@SETTINGS
@given(n=st.integers(1, 8), arg=st.sampled_from(sorted(BAD_ROWS)), which=st.integers(0, 4))
def test_builders_refuse_one_bad_argument_by_name(x64, n, arg, which):
    kw = _valid_rows(n)
    kw[arg] = BAD_ROWS[arg][which % len(BAD_ROWS[arg])](n)
    with jax.enable_x64(x64):
        assert_named_error(lambda: C.group_confusion_matrices(**kw), arg)
        if arg != "sensitive_features":
            kw2 = {k: kw[k] for k in ("y_true", "y_pred", "sample_weight")}
            assert_named_error(lambda: C.confusion_matrix(**kw2), arg)
        sweep = dict(y_true=kw["y_true"], scores=np.linspace(0, 1, n),
                     sensitive_features=kw["sensitive_features"], thresholds=[0.5],
                     sample_weight=kw["sample_weight"])
        if arg != "y_pred":
            assert_named_error(lambda: C.threshold_sweep(**sweep), arg)
        assert_named_error(
            lambda: C.confusion_matrix(_valid_rows(n)["y_true"], _valid_rows(n)["y_pred"],
                                       beneficial_label=[2, "1", None, True, 0.5][which]),
            "beneficial_label",
        )


@SETTINGS
@given(
    n=st.integers(1, 8),
    bad_scores=st.sampled_from([lambda n: np.full(n, np.nan), lambda n: np.array(["s"] * n),
                                lambda n: np.zeros((n, 2)), lambda n: np.zeros(n + 1)]),
    bad_thresholds=st.sampled_from([[np.nan], [], ["t"], [[0.1, 0.2]], [np.inf]]),
)
def test_threshold_sweep_refuses_bad_scores_and_thresholds(x64, n, bad_scores, bad_thresholds):
    kw = dict(y_true=np.ones(n, int), scores=np.linspace(0, 1, n),
              sensitive_features=np.zeros(n, int), thresholds=[0.5])
    with jax.enable_x64(x64):
        assert_named_error(lambda: C.threshold_sweep(**{**kw, "scores": bad_scores(n)}), "scores")
        assert_named_error(
            lambda: C.threshold_sweep(**{**kw, "thresholds": bad_thresholds}), "thresholds"
        )


@SETTINGS
@given(
    cell=st.sampled_from(["tp", "fn", "fp", "tn"]),
    bad=st.sampled_from([-1, float("nan"), "3", [1, 2, 3], [[1, 2, 3]], None]),
)
def test_conversions_refuse_bad_cells_by_name(x64, cell, bad):
    kw = dict(tp=[1, 2], fn=[0, 1], fp=[3, 4], tn=[5, 6])
    kw[cell] = bad
    with jax.enable_x64(x64):
        assert_named_error(lambda: C.from_counts(**kw), cell)
        assert_named_error(lambda: C.flip([1, 2, 3]), "cm")
        assert_named_error(lambda: C.to_sklearn([[1, -2, 3, 4]]), "cm")
        assert_named_error(lambda: C.from_sklearn([1, 2, 3, 4]), "matrix")


SOFT_BAD = {
    "y_true": [lambda n: np.full(n, 2), lambda n: np.array(["y"] * n), lambda n: np.zeros((n, 2))],
    "probs": [lambda n: np.full(n, 1.5), lambda n: np.full(n, np.nan), lambda n: np.zeros(n + 1),
              lambda n: np.array(["p"] * n)],
    "group_weights": [lambda n: -np.ones((n, 2)), lambda n: np.ones((n + 1, 2)),
                      lambda n: np.ones(n), lambda n: np.full((n, 2), np.nan)],
    "sample_weight": [lambda n: -np.ones(n), lambda n: np.ones(n + 1), lambda n: np.full(n, np.inf)],
}


@SETTINGS
@given(n=st.integers(1, 6), arg=st.sampled_from(sorted(SOFT_BAD)), which=st.integers(0, 3))
def test_diff_refuses_one_bad_argument_by_name(x64, n, arg, which):
    kw = dict(y_true=np.ones(n, int), probs=np.full(n, 0.5), group_weights=np.ones((n, 2)),
              sample_weight=np.ones(n))
    kw[arg] = SOFT_BAD[arg][which % len(SOFT_BAD[arg])](n)
    with jax.enable_x64(x64):
        assert_named_error(
            lambda: D.soft_confusion_matrices(
                kw["y_true"], kw["probs"], kw["group_weights"], sample_weight=kw["sample_weight"]
            ),
            arg,
        )


@SETTINGS
@given(
    bad_cms=st.sampled_from([[[1, -1, 0, 2]], [1, 0, 0, 2], [["a", "b", "c", "d"]],
                             [[1, float("nan"), 0, 2]]]),
    option=st.sampled_from([("reduction", "mean"), ("threshold", -1.0), ("temperature", 0.0),
                            ("min_size", float("nan")), ("threshold", "x")]),
    penalty=st.sampled_from(["ofi_penalty", "di_penalty", "equalized_odds_penalty"]),
)
def test_penalties_refuse_bad_input_by_name(x64, bad_cms, option, penalty):
    f = getattr(D, penalty)
    good = [[1, 0, 0, 5], [1, 7, 0, 11]]
    with jax.enable_x64(x64):
        assert_named_error(lambda: f(bad_cms), "cms")
        assert_named_error(lambda: f(good, **{option[0]: option[1]}), option[0])


@SETTINGS
@given(bad=st.sampled_from([None, "abc", [None, "a"], ["a", float("nan")], [[["a"]]]]),
       combine=st.sampled_from(["both", 1]))
def test_one_hot_groups_refuses_bad_labels_by_name(x64, bad, combine):
    with jax.enable_x64(x64):
        assert_named_error(lambda: D.one_hot_groups(bad), "sensitive_features")
        assert_named_error(lambda: D.one_hot_groups(["a", "b"], combine=combine), "combine")
