"""Core metrics: Table 1, exact references, broadcasting, gradients, input errors."""

import functools
import math
from fractions import Fraction

import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ofijax

TABLE1 = {
    # scenario: (cm_i, cm_j, OFI exact, DI paper exact or None for 0/0, DI P^/P exact or None)
    "A": ((1, 0, 0, 5), (7, 0, 1, 10), Fraction(-1, 18), Fraction(3, 8), Fraction(7, 8)),
    "B": ((0, 1, 0, 5), (0, 7, 0, 11), Fraction(2, 9), None, None),
    "alpha": ((1, 1, 0, 5), (1, 7, 0, 11), Fraction(30, 133), Fraction(19, 7), Fraction(4)),
}


# ------------------------------------------------------------------ exact references ------------
def ref_B(cm):
    tp, fn, fp, tn = cm
    return Fraction(fp - fn, tp + fn + fp + tn)


def ref_div(a, b):
    return None if b == 0 else Fraction(a, b) if isinstance(a, int) else a / b


def ref_di(ci, cj, variant):
    if variant == "paper":
        ri = ref_div(ci[0] + ci[2], sum(ci))
        rj = ref_div(cj[0] + cj[2], sum(cj))
    else:
        ri = ref_div(ci[0] + ci[2], ci[0] + ci[1])
        rj = ref_div(cj[0] + cj[2], cj[0] + cj[1])
    if ri is None or rj is None or rj == 0:
        return None
    return ri / rj


def ref_te(ci, cj):
    if ci[2] == 0 or cj[2] == 0:
        return None
    return Fraction(ci[1], ci[2]) - Fraction(cj[1], cj[2])


def close(x, ref, tol=1e-5):
    if ref is None:
        return math.isnan(float(x))
    return abs(float(x) - float(ref)) <= tol * max(1.0, abs(float(ref)))


# ------------------------------------------------------------------ Table 1 ---------------------
@pytest.mark.parametrize("name", list(TABLE1))
def test_table1(name):
    ci, cj, ofi_ref, di_ref, di_pp_ref = TABLE1[name]
    assert close(ofijax.ofi(ci, cj), ofi_ref)
    assert close(ofijax.disparate_impact(ci, cj), di_ref)
    assert close(ofijax.disparate_impact(ci, cj, variant="pp_over_p"), di_pp_ref)
    for cm in (ci, cj):
        tp, fn, fp, tn = cm
        n = sum(cm)
        assert close(ofijax.benefit(cm), Fraction(tp + fp, n))
        assert close(ofijax.expected_benefit(cm), Fraction(tp + fn, n))
        assert close(ofijax.marginal_benefit(cm), Fraction(fp - fn, n))
    # printed, rounded values of the paper
    printed = {"A": (-0.06, 0.38), "B": (0.22, None), "alpha": (0.23, 2.71)}[name]
    assert round(float(ofijax.ofi(ci, cj)), 2) == printed[0]
    if printed[1] is not None:
        assert round(float(ofijax.disparate_impact(ci, cj)), 2) == printed[1]


def test_table1_di_undefined_policy():
    ci, cj = TABLE1["B"][:2]
    assert math.isnan(float(ofijax.disparate_impact(ci, cj)))
    assert float(ofijax.disparate_impact(ci, cj, undefined="one")) == 1.0
    # x/0 stays undefined even with "one"
    assert math.isnan(float(ofijax.disparate_impact((1, 0, 0, 5), cj, undefined="one")))


def test_paper_table1_helper_matches():
    for s in ofijax.paper_table1():
        key = s.name
        assert tuple(int(x) for x in s.cm_i) == TABLE1[key][0]
        assert tuple(int(x) for x in s.cm_j) == TABLE1[key][1]


# ------------------------------------------------------------------ property tests --------------
cm_strategy = st.tuples(*[st.integers(0, 30)] * 4).filter(lambda c: sum(c) > 0)


@settings(max_examples=60, deadline=None)
@given(ci=cm_strategy, cj=cm_strategy)
def test_metrics_match_fractions(ci, cj):
    assert close(ofijax.marginal_benefit(ci), ref_B(ci))
    assert close(ofijax.ofi(ci, cj), ref_B(ci) - ref_B(cj))
    for variant in ("paper", "pp_over_p"):
        assert close(ofijax.disparate_impact(ci, cj, variant=variant), ref_di(ci, cj, variant))
    assert close(ofijax.treatment_equality(ci, cj), ref_te(ci, cj))
    tp, fn, fp, tn = ci
    rates = {
        ofijax.true_positive_rate: ref_div(tp, tp + fn),
        ofijax.false_positive_rate: ref_div(fp, fp + tn),
        ofijax.false_negative_rate: ref_div(fn, tp + fn),
        ofijax.true_negative_rate: ref_div(tn, fp + tn),
        ofijax.positive_predictive_value: ref_div(tp, tp + fp),
        ofijax.selection_rate: ref_div(tp + fp, sum(ci)),
        ofijax.base_rate: ref_div(tp + fn, sum(ci)),
        ofijax.accuracy: ref_div(tp + tn, sum(ci)),
    }
    for fn_, ref in rates.items():
        assert close(fn_(ci), ref), fn_.__name__


@settings(max_examples=15, deadline=None)
@given(cms=hnp.arrays(np.int64, st.sampled_from([(7, 4), (3, 5, 4)]), elements=st.integers(1, 20)))
def test_batched_shapes_and_pairwise(cms):
    B = ofijax.marginal_benefit(cms)
    assert B.shape == cms.shape[:-1]
    flat = cms.reshape(-1, 4)
    np.testing.assert_allclose(
        np.asarray(B).reshape(-1), [float(ref_B(tuple(c))) for c in flat], rtol=1e-5, atol=1e-6
    )
    M = ofijax.pairwise(ofijax.ofi, cms)
    k = cms.shape[-2]
    assert M.shape == cms.shape[:-2] + (k, k)
    lead = cms.reshape(-1, k, 4)
    Mf = np.asarray(M).reshape(-1, k, k)
    for b in range(lead.shape[0]):
        for i in range(k):
            for j in range(k):
                ref = ref_B(tuple(lead[b, i])) - ref_B(tuple(lead[b, j]))
                assert abs(Mf[b, i, j] - float(ref)) < 1e-5
    # antisymmetry and zero diagonal
    np.testing.assert_allclose(Mf, -np.swapaxes(Mf, -1, -2), atol=1e-6)
    di = ofijax.pairwise(functools.partial(ofijax.disparate_impact, variant="pp_over_p"), cms)
    assert di.shape == M.shape


def test_flags():
    np.testing.assert_array_equal(
        np.asarray(ofijax.four_fifths_rule([0.79, 0.8, 1.25, 1.26])), [-1, 0, 0, 1]
    )
    np.testing.assert_array_equal(
        np.asarray(ofijax.ofi_flag([-0.31, -0.3, 0.3, 0.31, 0.05], threshold=0.3)), [-1, 0, 0, 1, 0]
    )
    assert math.isnan(float(ofijax.ofi_flag(float("nan"))))
    # exact ties computed from counts are not flagged, in float32 and float64
    tie = ofijax.ofi([0, 1, 0, 9], [0, 4, 0, 6])  # exactly 3/10
    assert float(ofijax.ofi_flag(tie)) == 0.0
    assert float(ofijax.four_fifths_rule(ofijax.disparate_impact([5, 0, 0, 0], [4, 0, 0, 1]))) == 0
    with jax.enable_x64(True):
        assert float(ofijax.ofi_flag(ofijax.ofi([0, 1, 0, 9], [0, 4, 0, 6]))) == 0.0
        assert float(ofijax.ofi_flag(ofijax.ofi([0, 1, 0, 9], [0, 5, 0, 6]))) == 1.0
    with pytest.raises(ValueError, match="threshold"):
        ofijax.ofi_flag(0.1, threshold=-1)


# ------------------------------------------------------------------ autodiff / jit --------------
def test_grad_finite_at_zero_cells():
    g = jax.grad(lambda c: ofijax.marginal_benefit(c))(jnp.array([0.0, 0.0, 0.0, 3.0]))
    assert np.all(np.isfinite(np.asarray(g)))
    go = jax.grad(lambda a, b: ofijax.ofi(a, b), argnums=(0, 1))(
        jnp.array([0.0, 0.0, 0.0, 3.0]), jnp.array([1.0, 0.0, 0.0, 0.0])
    )
    assert all(np.all(np.isfinite(np.asarray(x))) for x in go)
    # an empty group under tracing gives NaN values but finite gradients
    gz = jax.grad(lambda c: jnp.nan_to_num(ofijax.marginal_benefit(c)))(jnp.zeros(4))
    assert np.all(np.isfinite(np.asarray(gz)))
    gdi = jax.grad(lambda a: jnp.nan_to_num(ofijax.disparate_impact(a, jnp.array([0.0, 1, 0, 1]))))(
        jnp.array([0.0, 1.0, 0.0, 1.0])
    )
    assert np.all(np.isfinite(np.asarray(gdi)))


def test_grad_matches_formula():
    cm = jnp.array([2.0, 3.0, 5.0, 7.0])
    n = 17.0
    g = jax.grad(ofijax.marginal_benefit)(cm)
    fp, fn = 5.0, 3.0
    expected = np.array([-(fp - fn) / n**2, -1 / n - (fp - fn) / n**2, 1 / n - (fp - fn) / n**2,
                         -(fp - fn) / n**2])
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5)


def test_jit_vmap_parity_and_float64():
    cms = jnp.array([[1, 0, 0, 5], [0, 7, 0, 11], [1, 1, 0, 5]])
    np.testing.assert_allclose(
        jax.jit(ofijax.marginal_benefit)(cms), ofijax.marginal_benefit(cms), rtol=1e-6
    )
    np.testing.assert_allclose(
        jax.vmap(ofijax.marginal_benefit)(cms), ofijax.marginal_benefit(cms), rtol=1e-6
    )
    # concrete inputs: float64 whatever the x64 flag; traced inputs: the traced default float
    assert ofijax.marginal_benefit(cms).dtype == jnp.float64
    assert jax.jit(ofijax.marginal_benefit)(cms).dtype == jnp.float32
    with jax.enable_x64(True):
        b = ofijax.ofi([1, 1, 0, 5], [1, 7, 0, 11])
        assert b.dtype == jnp.float64
        assert abs(float(b) - 30 / 133) < 1e-15


# ------------------------------------------------------------------ bad input -------------------
@pytest.mark.parametrize(
    "bad, match",
    [
        ([1, 2, 3], "last axis must have length 4"),
        ([1, -1, 0, 2], "non-negative"),
        ([0, 0, 0, 0], "n = 0"),
        ([1, float("nan"), 0, 2], "NaN"),
        (["a", "b", "c", "d"], "numeric"),
    ],
)
def test_metric_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        ofijax.marginal_benefit(bad)


def test_metric_bad_options():
    with pytest.raises(ValueError, match="variant"):
        ofijax.disparate_impact([1, 0, 0, 1], [1, 0, 0, 1], variant="ratio")
    with pytest.raises(ValueError, match="undefined"):
        ofijax.disparate_impact([1, 0, 0, 1], [1, 0, 0, 1], undefined="zero")
    with pytest.raises(ValueError, match="cms"):
        ofijax.pairwise(ofijax.ofi, [1, 0, 0, 1])
    with pytest.raises(ValueError, match=r"cm_j.*n = 0"):
        ofijax.ofi([1, 0, 0, 1], [[1, 0, 0, 1], [0, 0, 0, 0]])


def test_public_api_is_curated():
    for name in ofijax.__all__:
        assert hasattr(ofijax, name), name
    public = {n for n in dir(ofijax) if not n.startswith("_")}
    modules = {"scan", "distributions", "diff", "datasets", "audit", "cli", "stats"}
    assert public - set(ofijax.__all__) - modules == set()


# ------------------------------------------------------------------ exact numbers (issue 12) -----
def test_int64_counts_beyond_int32_keep_the_sign_of_b():
    big = 2**31
    cm = np.array([0, big, big + 2, 0], np.int64)  # FP > FN: B = 2 / (2**32 + 2) > 0
    b = ofijax.marginal_benefit(cm)
    assert b.dtype == jnp.float64
    assert float(b) == float(Fraction(2, 2**32 + 2))
    ci = np.array([[3 * big, big, big + 5, 7]], np.int64)
    cj = np.array([[1, 2, 3, 4]], np.int64)
    ref = Fraction(big + 5 - big, 5 * big + 12) - Fraction(3 - 2, 10)
    assert abs(float(ofijax.ofi(ci, cj)[0]) - float(ref)) <= 1e-15
    di = float(ofijax.disparate_impact(ci[0], cj[0]))
    assert abs(di - float(Fraction(4 * big + 5, 5 * big + 12) / Fraction(4, 10))) <= 1e-15
    # flip / from_counts output feeds the metrics exactly
    cm2 = ofijax.from_counts(tp=big, fn=0, fp=0, tn=big + 1)
    assert float(ofijax.benefit(cm2)) == float(Fraction(big, 2 * big + 1))
    assert float(ofijax.marginal_benefit(ofijax.flip(cm))) == -float(b)


def test_float16_counts_are_promoted():
    cm16 = np.array([2048, 0, 1, 0], np.float16)  # n = 2049 is not a float16
    assert float(ofijax.marginal_benefit(cm16)) == float(Fraction(1, 2049))
    traced = jax.jit(ofijax.marginal_benefit)(jnp.asarray(cm16))
    assert traced.dtype == jnp.float32
    assert abs(float(traced) - 1 / 2049) < 1e-9


def test_shape_mismatch_and_bad_flag_inputs_name_the_argument():
    with pytest.raises(ValueError, match="^cm_j: shape"):
        ofijax.ofi([[1, 0, 0, 5]] * 3, [[1, 0, 0, 5]] * 2)
    with pytest.raises(ValueError, match="^cm_j: shape"):
        ofijax.disparate_impact([[1, 0, 0, 5]] * 3, [[1, 0, 0, 5]] * 2)
    with pytest.raises(ValueError, match="^di: must be numeric"):
        ofijax.four_fifths_rule(["a", "b"])
    with pytest.raises(ValueError, match="^di: disparate impact"):
        ofijax.four_fifths_rule([-0.5])
    with pytest.raises(ValueError, match="^ofi_value: must be numeric"):
        ofijax.ofi_flag("x")
    with pytest.raises(ValueError, match="^ofi_value: OFI lies in"):
        ofijax.ofi_flag(3.0)
    with pytest.raises(ValueError, match="^ofi_value"):
        ofijax.ofi_flag([0.1, float("inf")])
    for bad in (3.0, "a", True, float("nan"), -0.1):
        with pytest.raises(ValueError, match="^threshold"):
            ofijax.ofi_flag(0.1, threshold=bad)
    with pytest.raises(TypeError, match="^metric"):
        ofijax.pairwise("ofi", [[1, 0, 0, 5], [1, 0, 0, 5]])
    # float32 ties keep float32's slack; NaN stays NaN
    assert float(ofijax.ofi_flag(np.float32(0.3))) == 0.0
    assert math.isnan(float(ofijax.four_fifths_rule(float("nan"))))
