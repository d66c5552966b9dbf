"""Tests for ofijax.diff: soft confusion matrices, penalties, EMA, train step and sweep."""

from __future__ import annotations

import itertools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.test_util import check_grads

from ofijax import diff
from ofijax.cm import group_confusion_matrices
from ofijax.diff import (
    Batch,
    di_penalty,
    ema_confusion_matrices,
    equalized_odds_penalty,
    evaluate,
    init_penalty_state,
    logistic_model,
    make_train_step,
    mlp_model,
    ofi_penalty,
    one_hot_groups,
    rate_parity_penalty,
    soft_confusion_matrices,
    tradeoff_sweep,
)
from ofijax.metrics import marginal_benefit, ofi, pairwise

# ---------------------------------------------------------------------------------------------
# shared tiny data and one compiled sweep (compile once for the whole module)
# ---------------------------------------------------------------------------------------------

N = 200
STRENGTHS = (0.0, 1.0, 2.0, 4.0)
NUM_SEEDS = 2
NUM_STEPS = 120
TEMP = 0.3
OPT = optax.adam(0.05)
MODEL = logistic_model(2)


def _penalty(cms):
    return ofi_penalty(cms, reduction="max_gap")


def _synthetic(seed: int = 0, n: int = N):
    """Two groups; the label depends on group membership, which the features only half see."""
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.4).astype(int)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n) + 0.5 * g
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * x1 + 1.5 * g - 0.5)))).astype(np.int32)
    x = np.stack([x1, x2], 1).astype(np.float32)
    return Batch(jnp.asarray(x), jnp.asarray(y), one_hot_groups(g).weights), g


DATA, GROUP_LABELS = _synthetic()


@pytest.fixture(scope="module")
def sweep():
    return tradeoff_sweep(
        jax.random.key(3),
        MODEL.init,
        MODEL.apply,
        DATA,
        STRENGTHS,
        num_seeds=NUM_SEEDS,
        num_steps=NUM_STEPS,
        optimizer=OPT,
        penalty_fn=_penalty,
        surrogate_temperature=TEMP,
    )


# ---------------------------------------------------------------------------------------------
# soft confusion matrices
# ---------------------------------------------------------------------------------------------


def _random_case(seed=0, n=30, g=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    labels = rng.integers(0, g, n)
    p = rng.random(n)
    w = rng.random(n) + 0.5
    return y, labels, p, w


@pytest.mark.parametrize("weighted", [False, True])
def test_soft_equals_hard_at_binary_probabilities(weighted):
    y, labels, _, w = _random_case(1)
    yhat = np.random.default_rng(2).integers(0, 2, y.size)
    sw = w if weighted else None
    hard = group_confusion_matrices(y, yhat, labels, sample_weight=sw)
    gw = one_hot_groups(labels)
    assert tuple(gw.groups) == tuple(hard.groups)
    soft = soft_confusion_matrices(y, yhat.astype(np.float32), gw.weights, sample_weight=sw)
    np.testing.assert_allclose(np.asarray(soft), np.asarray(hard.cms), rtol=1e-6, atol=1e-5)
    # and every core metric agrees
    np.testing.assert_allclose(
        np.asarray(pairwise(ofi, soft)), np.asarray(pairwise(ofi, hard.cms)), atol=1e-6
    )


def test_soft_cms_reference_and_batch_axes():
    y, labels, p, w = _random_case(3)
    gw = np.asarray(one_hot_groups(labels).weights)
    ps = np.stack([p, p**2, 1 - p])
    got = np.asarray(soft_confusion_matrices(y, ps, gw, sample_weight=w))
    assert got.shape == (3, 3, 4)
    for b in range(3):
        q = ps[b]
        for g in range(3):
            m = w * gw[:, g]
            ref = [
                np.sum(m * y * q),
                np.sum(m * y * (1 - q)),
                np.sum(m * (1 - y) * q),
                np.sum(m * (1 - y) * (1 - q)),
            ]
            np.testing.assert_allclose(got[b, g], ref, rtol=1e-5)


def test_marginal_benefit_identity_exact():
    """Soft B = mean(p) - mean(y) = E[B] of the randomized classifier, by exact enumeration."""
    y = [1, 0, 1, 1, 0, 0]
    grp = [0, 0, 0, 1, 1, 1]
    p = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1, 8), Fraction(7, 8), 0]
    expected = []
    for g in (0, 1):
        rows = [i for i in range(6) if grp[i] == g]
        e_b = Fraction(0)
        for yhat in itertools.product((0, 1), repeat=len(rows)):
            prob = Fraction(1)
            fp = fn = 0
            for r, yh in zip(rows, yhat):
                prob *= p[r] if yh else 1 - p[r]
                fp += int(yh == 1 and y[r] == 0)
                fn += int(yh == 0 and y[r] == 1)
            e_b += prob * Fraction(fp - fn, len(rows))
        mean_p_minus_y = sum(p[r] for r in rows) / len(rows) - Fraction(sum(y[r] for r in rows), 3)
        assert e_b == mean_p_minus_y
        expected.append(e_b)
    with jax.enable_x64(True):
        cms = soft_confusion_matrices(
            np.array(y), np.array([float(v) for v in p]), one_hot_groups(grp).weights
        )
        b = marginal_benefit(cms)
        assert b.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(b), [float(e) for e in expected], rtol=1e-14)


def test_subgroup_mask_and_jit():
    y, labels, p, _ = _random_case(4)
    mask = labels == 1
    got = soft_confusion_matrices(y, p, mask)
    assert got.shape == (1, 4)
    ref = soft_confusion_matrices(y, p, np.asarray(one_hot_groups(labels).weights)[:, 1:2])
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)
    jitted = jax.jit(soft_confusion_matrices)(jnp.asarray(y), jnp.asarray(p), jnp.asarray(mask))
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), rtol=1e-6)


def test_one_hot_groups_union_and_intersect():
    race = ["a", "b", "a", "b"]
    sex = [0, 0, 1, 1]
    table = np.array([race, [str(s) for s in sex]], dtype=object).T
    inter = one_hot_groups(table)
    assert inter.groups == (("a", "0"), ("a", "1"), ("b", "0"), ("b", "1"))
    np.testing.assert_array_equal(np.asarray(inter.weights), np.eye(4)[[0, 2, 1, 3]])
    union = one_hot_groups(table, combine="union")
    assert union.groups == ((0, "a"), (0, "b"), (1, "0"), (1, "1"))
    np.testing.assert_array_equal(np.asarray(union.weights).sum(1), [2, 2, 2, 2])


def test_float32_default_and_float64_preserved():
    y, labels, p, _ = _random_case(5)
    gw = one_hot_groups(labels).weights
    assert soft_confusion_matrices(y, p.astype(np.float32), gw).dtype == jnp.float32
    with jax.enable_x64(True):
        gw64 = one_hot_groups(labels).weights
        cms = soft_confusion_matrices(y, p, gw64)
        assert cms.dtype == jnp.float64
        assert ofi_penalty(cms).dtype == jnp.float64


# ---------------------------------------------------------------------------------------------
# gradients (float64)
# ---------------------------------------------------------------------------------------------


def test_check_grads_soft_cms():
    y, labels, p, w = _random_case(6, n=12)
    with jax.enable_x64(True):
        gw = jnp.asarray(one_hot_groups(labels).weights) * 0.7 + 0.1  # continuous weights

        @jax.jit
        def f(p, gw, w):
            return soft_confusion_matrices(jnp.asarray(y), p, gw, sample_weight=w)

        check_grads(f, (jnp.asarray(p), gw, jnp.asarray(w)), order=1, modes=("fwd", "rev"))


PENALTIES = [
    ("ofi max_gap", lambda c: ofi_penalty(c)),
    ("ofi to_overall", lambda c: ofi_penalty(c, reduction="to_overall")),
    ("ofi l2", lambda c: ofi_penalty(c, reduction="l2")),
    ("ofi lse", lambda c: ofi_penalty(c, reduction="lse", temperature=0.1)),
    ("ofi hinge l2", lambda c: ofi_penalty(c, reduction="l2", threshold=0.01)),
    ("di", lambda c: di_penalty(c, reduction="lse")),
    ("eo", lambda c: equalized_odds_penalty(c, reduction="l2")),
    ("dp", lambda c: rate_parity_penalty(c, rates="selection", reduction="to_overall")),
]


def test_check_grads_penalties_and_empty_group():
    """All penalties at once (one compile): check_grads, and an empty group changes nothing."""
    y, labels, p, _ = _random_case(7, n=24)
    with jax.enable_x64(True):
        gw = one_hot_groups(labels).weights
        gw_empty = jnp.concatenate([gw, jnp.zeros((gw.shape[0], 1))], axis=1)
        yj, pj = jnp.asarray(y), jnp.asarray(p)

        def all_penalties(p, gw):
            cms = soft_confusion_matrices(yj, p, gw)
            return jnp.stack([pen(cms) for _, pen in PENALTIES])

        f = jax.jit(lambda p: all_penalties(p, gw))
        check_grads(f, (pj,), order=1, modes=("rev",))
        # an empty group (zero weight column) is masked: same values, same finite gradients
        cot = jnp.linspace(1.0, 2.0, len(PENALTIES))
        val_e, g_empty = jax.jit(
            jax.value_and_grad(lambda p: cot @ all_penalties(p, gw_empty))
        )(pj)
        assert np.all(np.isfinite(np.asarray(g_empty)))
        values, f_vjp = jax.vjp(f, pj)
        np.testing.assert_allclose(float(val_e), float(cot @ values), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g_empty), np.asarray(f_vjp(cot)[0]), atol=1e-12)


def test_penalty_zero_and_finite_with_fewer_than_two_groups():
    one = jnp.array([[[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]]])
    none = jnp.zeros((1, 2, 4))
    cms = jnp.concatenate([one, none])  # batch axis: one usable group / no usable group

    @jax.jit
    def all_reductions(c):
        return jnp.stack([ofi_penalty(c, reduction=r).sum() for r in diff.REDUCTIONS])

    np.testing.assert_array_equal(np.asarray(all_reductions(cms)), 0.0)
    g = jax.jit(jax.jacrev(all_reductions))(cms)
    assert np.all(np.isfinite(np.asarray(g)))


# ---------------------------------------------------------------------------------------------
# penalty values against exact references
# ---------------------------------------------------------------------------------------------

CMS = [(1, 1, 0, 5), (1, 7, 0, 11), (4, 2, 3, 1), (0, 0, 0, 0)]  # last group empty


def _b(cm):
    tp, fn, fp, tn = cm
    return Fraction(fp - fn, tp + fn + fp + tn)


def test_penalty_values_exact():
    bs = [_b(c) for c in CMS[:3]]
    gaps = [abs(bs[i] - bs[j]) for i in range(3) for j in range(i + 1, 3)]
    tot = [sum(c[k] for c in CMS) for k in range(4)]
    to_over = max(abs(b - _b(tot)) for b in bs)
    t, tau = 0.05, 0.2
    fgaps = np.array([float(g) for g in gaps])
    lme = t * np.log(np.mean(np.exp(fgaps / t)))
    hinge = [max(Fraction(0), g - Fraction(1, 5)) for g in gaps]
    sel = [Fraction(c[0] + c[2], sum(c)) for c in CMS[:3]]
    log_di = max(abs(np.log(float(a) / float(b))) for a, b in itertools.combinations(sel, 2))
    expected = {
        "max_gap": float(max(gaps)),
        "l2": float(sum(g * g for g in gaps) / 3),
        "to_overall": float(to_over),
        "lse": lme,
        "hinge": float(max(hinge)),
        "di": log_di,
    }
    assert fgaps.mean() <= lme <= fgaps.max()

    @jax.jit
    def values(cms):
        return {
            "max_gap": ofi_penalty(cms),
            "l2": ofi_penalty(cms, reduction="l2"),
            "to_overall": ofi_penalty(cms, reduction="to_overall"),
            "lse": ofi_penalty(cms, reduction="lse", temperature=t),
            "hinge": ofi_penalty(cms, threshold=tau),
            "di": di_penalty(cms, eps=0.0),
        }

    with jax.enable_x64(True):
        cms = jnp.asarray(CMS, dtype=jnp.float64)
        got = values(cms)
        for k, v in expected.items():
            assert float(got[k]) == pytest.approx(v, rel=1e-12), k
        # leading batch axes: one value per batch item
        batched = jnp.stack([cms, cms[::-1], cms * 2, cms.at[0].set(0.0)])
        got_b = values(batched)
        for i in range(4):
            got_i = values(batched[i])
            for k in expected:
                assert float(got_b[k][i]) == pytest.approx(float(got_i[k]), rel=1e-12), k


def test_rate_parity_matches_fairlearn():
    fl = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 80)
    yhat = rng.integers(0, 2, 80)
    s = rng.integers(0, 3, 80)
    cms = group_confusion_matrices(y, yhat, s).cms
    eo = fl.equalized_odds_difference(y, yhat, sensitive_features=s)
    dp = fl.demographic_parity_difference(y, yhat, sensitive_features=s)
    assert float(equalized_odds_penalty(cms)) == pytest.approx(eo, rel=1e-5)
    assert float(rate_parity_penalty(cms, rates=("selection",))) == pytest.approx(dp, rel=1e-5)


# ---------------------------------------------------------------------------------------------
# running estimate
# ---------------------------------------------------------------------------------------------


def test_ema_matches_recursion_and_gradient_only_through_batch():
    rng = np.random.default_rng(9)
    batches = rng.random((4, 3, 4)).astype(np.float32)
    est = ema_confusion_matrices(0.8)
    state = est.init(batches[0])
    m = np.zeros((3, 4))
    for t, c in enumerate(batches, start=1):
        out, state = est.update(c, state)
        m = 0.8 * m + 0.2 * c
        np.testing.assert_allclose(np.asarray(out), m / (1 - 0.8**t), rtol=1e-5)
    # decay 0: identity; gradient of the estimate wrt the batch is (1-d)/(1-d^t)
    est0 = ema_confusion_matrices(0.0)
    out0, _ = est0.update(batches[0], est0.init(batches[0]))
    np.testing.assert_allclose(np.asarray(out0), batches[0])
    g = jax.grad(lambda c: jnp.sum(est.update(c, state)[0]))(jnp.asarray(batches[0]))
    np.testing.assert_allclose(np.asarray(g), 0.2 / (1 - 0.8**5), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# training: one compiled sweep, checked against single runs and plain training
# ---------------------------------------------------------------------------------------------


def test_sweep_equals_python_loop_of_single_runs(sweep):
    keys = jax.random.split(jax.random.key(3), NUM_SEEDS)
    from ofijax.diff._evaluate import _evaluate

    evaluate = jax.jit(_evaluate, static_argnums=0)
    for si, r in ((0, 0), (len(STRENGTHS) - 1, NUM_SEEDS - 1)):  # both ends of both axes
        s = STRENGTHS[si]
        step = make_train_step(MODEL.apply, OPT, _penalty, strength=s, surrogate_temperature=TEMP)
        params = MODEL.init(keys[r])
        opt_state = OPT.init(params)
        for _ in range(NUM_STEPS):
            params, opt_state, metrics = step(params, opt_state, DATA)
        got = jax.tree.map(lambda a, si=si, r=r: a[si, r], sweep.params)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(params)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-3)
        ev = evaluate(MODEL.apply, params, DATA)
        assert abs(float(ev.accuracy) - float(sweep.accuracy[si, r])) <= 2 / N
        assert abs(float(ev.max_abs_ofi) - float(sweep.max_abs_ofi[si, r])) <= 0.02
        np.testing.assert_allclose(
            float(metrics.penalty), float(sweep.history.penalty[si, r, -1]), atol=2e-3
        )


def test_strength_zero_equals_plain_training(sweep):
    key = jax.random.split(jax.random.key(3), NUM_SEEDS)[0]

    @jax.jit
    def plain(params, opt_state):
        def loss(p):
            return jnp.mean(optax.sigmoid_binary_cross_entropy(MODEL.apply(p, DATA.x), DATA.y))

        g = jax.grad(loss)(params)
        u, opt_state = OPT.update(g, opt_state, params)
        return optax.apply_updates(params, u), opt_state

    params = MODEL.init(key)
    opt_state = OPT.init(params)
    for _ in range(NUM_STEPS):
        params, opt_state = plain(params, opt_state)
    got = jax.tree.map(lambda a: a[0, 0], sweep.params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_max_ofi_falls_with_strength(sweep):
    mean_ofi = np.asarray(sweep.max_abs_ofi).mean(axis=1)
    # Plain training is clearly biased on this data; the penalty removes most of it.
    assert mean_ofi[0] > 0.1
    assert mean_ofi[-1] < 0.5 * mean_ofi[0]
    # Monotone within noise: each step may rise by at most 0.02 (one row in a group of ~80 is
    # 0.0125 of B), and the training-objective penalty itself falls strictly.
    assert np.all(np.diff(mean_ofi) <= 0.02), mean_ofi
    pen = np.asarray(sweep.history.penalty[:, :, -1]).mean(axis=1)
    assert np.all(np.diff(pen) < 0), pen
    # the accuracy cost is real but bounded
    acc = np.asarray(sweep.accuracy).mean(axis=1)
    assert acc[0] >= acc[-1]


def test_sweep_compiles_once(sweep):
    from ofijax.diff._evaluate import _sweep

    before = _sweep._cache_size()
    again = tradeoff_sweep(
        jax.random.key(3),
        MODEL.init,
        MODEL.apply,
        DATA,
        STRENGTHS,
        num_seeds=NUM_SEEDS,
        num_steps=NUM_STEPS,
        optimizer=OPT,
        penalty_fn=_penalty,
        surrogate_temperature=TEMP,
    )
    assert _sweep._cache_size() == before
    np.testing.assert_array_equal(np.asarray(again.accuracy), np.asarray(sweep.accuracy))
    assert sweep.ofi.shape == (len(STRENGTHS), NUM_SEEDS, 2, 2)
    assert sweep.cms.shape == (len(STRENGTHS), NUM_SEEDS, 2, 4)
    assert sweep.di.shape == (len(STRENGTHS), NUM_SEEDS, 2, 2)
    assert sweep.history.loss.shape == (len(STRENGTHS), NUM_SEEDS, NUM_STEPS)
    np.testing.assert_allclose(np.asarray(sweep.cms.sum(axis=(-2, -1))), N)


def test_lagrangian_dual_ascent_and_estimator():
    step = make_train_step(
        MODEL.apply,
        OPT,
        _penalty,
        strength=10.0,
        lagrangian=True,
        dual_lr=0.5,
        threshold=0.01,
        estimator=ema_confusion_matrices(0.5),
        surrogate_temperature=TEMP,
    )
    params = MODEL.init(jax.random.key(0))
    opt_state = OPT.init(params)
    state = init_penalty_state(2, estimator=ema_confusion_matrices(0.5))
    mults = []
    for _ in range(60):
        params, opt_state, new_state, m = step(params, opt_state, DATA, state)
        expect = np.clip(float(state.multiplier) + 0.5 * (float(m.penalty) - 0.01), 0, 10)
        assert float(new_state.multiplier) == pytest.approx(expect, rel=1e-5, abs=1e-6)
        state = new_state
        mults.append(float(state.multiplier))
    assert max(mults) > 0  # the constraint was active at the start
    assert int(state.cm_state.count) == 60
    ev = diff.evaluate(0, MODEL.apply, params, DATA, num_samples=200)
    assert float(ev.max_abs_ofi) < 0.1


def test_mlp_model_trains_in_step():
    model = mlp_model(2, hidden=(4,))
    step = make_train_step(model.apply, OPT, strength=0.5)
    params = model.init(jax.random.key(1))
    params, _, m = step(params, OPT.init(params), DATA)
    assert np.isfinite(float(m.loss))


# ---------------------------------------------------------------------------------------------
# bad inputs: one ValueError naming the argument
# ---------------------------------------------------------------------------------------------

Y = np.array([0, 1, 1, 0])
P = np.array([0.1, 0.5, 0.9, 0.3])
GW = np.eye(2)[[0, 1, 0, 1]]


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: soft_confusion_matrices([0, 2, 1, 0], P, GW), "y_true"),
        (lambda: soft_confusion_matrices(Y, [0.1, 1.5, 0.2, 0.3], GW), "probs"),
        (lambda: soft_confusion_matrices(Y, P[:3], GW), "probs"),
        (lambda: soft_confusion_matrices(Y, P, [0, 1, 0, 1]), "group_weights"),
        (lambda: soft_confusion_matrices(Y, P, -GW), "group_weights"),
        (lambda: soft_confusion_matrices(Y, P, GW[:3]), "group_weights"),
        (lambda: soft_confusion_matrices(Y, P, GW, sample_weight=[1, 1, -1, 1]), "sample_weight"),
        (lambda: ofi_penalty(np.ones((2, 3))), "cms"),
        (lambda: ofi_penalty(-np.ones((2, 4))), "cms"),
        (lambda: ofi_penalty(np.ones((2, 4)), reduction="mean"), "reduction"),
        (lambda: ofi_penalty(np.ones((2, 4)), reduction="lse", temperature=0.0), "temperature"),
        (lambda: ofi_penalty(np.ones((2, 4)), threshold=-0.1), "threshold"),
        (lambda: di_penalty(np.ones((2, 4)), eps=-1.0), "eps"),
        (lambda: rate_parity_penalty(np.ones((2, 4)), rates=("tpr", "f1")), "rates"),
        (lambda: ema_confusion_matrices(1.0), "decay"),
        (lambda: one_hot_groups([0, 1], combine="both"), "combine"),
        (lambda: make_train_step(MODEL.apply, OPT, strength=-1.0), "strength"),
        (lambda: make_train_step(MODEL.apply, OPT, strength=1.0, loss="mse"), "loss"),
        (lambda: make_train_step(MODEL.apply, OPT, strength=1.0, dual_lr=0.0), "dual_lr"),
        (lambda: tradeoff_sweep(jax.random.key(0), MODEL.init, MODEL.apply, DATA, []), "strengths"),
        (
            lambda: tradeoff_sweep(
                jax.random.key(0), MODEL.init, MODEL.apply, DATA, [1.0], num_seeds=0
            ),
            "num_seeds",
        ),
        (
            lambda: tradeoff_sweep(
                jax.random.key(0), MODEL.init, MODEL.apply, DATA._replace(y=DATA.y + 1), [1.0]
            ),
            "data.y",
        ),
    ],
)
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}"):
        call()


def test_public_api_matches_all():
    public = {n for n in dir(diff) if not n.startswith(("_", "@"))}
    assert set(diff.__all__) == public
    for n in diff.__all__:
        if n not in ("RATES", "REDUCTIONS"):
            assert getattr(diff, n).__module__.startswith("ofijax")


# ------------------------------------------------------------------ bad input (issue 12) ---------
def _tiny_step():
    model = logistic_model(2)
    params = model.init(jax.random.key(0))
    opt = optax.sgd(0.1)
    return model, params, opt, make_train_step(model.apply, opt, strength=1.0)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("y", np.array([1, 2, 1, 2]), "^batch.y: must be binary"),
        ("x", np.array([[np.nan, 1.0], [1, 1], [1, 1], [1, 1]]), "^batch.x: 1 value"),
        ("x", np.ones((4, 3)), "^batch.x: the model cannot take features"),
        ("groups", np.eye(2)[[0, 1, 0]], "^batch.groups: has 3 rows but batch.y has 4"),
        ("weight", np.ones(3), "^batch.weight"),
    ],
)
def test_train_step_refuses_bad_batches_with_a_named_error(field, value, match):
    _, params, opt, step = _tiny_step()
    good = dict(x=np.ones((4, 2)), y=np.array([1, 0, 1, 0]), groups=np.eye(2)[[0, 1, 0, 1]])
    good[field] = value
    with pytest.raises(ValueError, match=match):
        step(params, opt.init(params), Batch(**good))


def test_train_step_rejects_infinite_strength_in_penalty_mode():
    model = logistic_model(2)
    with pytest.raises(ValueError, match="^strength: must be finite"):
        make_train_step(model.apply, optax.sgd(0.1), strength=float("inf"))
    make_train_step(model.apply, optax.sgd(0.1), strength=float("inf"), lagrangian=True)
    with pytest.raises(ValueError, match="^strength"):
        make_train_step(model.apply, optax.sgd(0.1), strength="strong")


def test_train_step_checks_skip_traced_batches_and_can_be_disabled():
    model, params, opt, step = _tiny_step()
    batch = Batch(jnp.ones((4, 2)), jnp.array([1, 0, 1, 0]), jnp.eye(2)[jnp.array([0, 1, 0, 1])])
    fast = make_train_step(model.apply, opt, strength=1.0, check_inputs=False)
    a = step(params, opt.init(params), batch)[2].loss
    b = fast(params, opt.init(params), batch)[2].loss
    c = jax.jit(step)(params, opt.init(params), batch)[2].loss
    assert float(a) == float(b) == float(c)


@pytest.mark.parametrize("bad", [None, "abc", [None, "a"], ["a", float("nan")]])
def test_one_hot_groups_refuses_missing_or_none(bad):
    with pytest.raises(ValueError, match="^sensitive_features"):
        one_hot_groups(bad)


def test_model_init_and_sweep_take_an_int_seed():
    model = logistic_model(2)
    a = model.init(3)["w"]
    b = model.init(jax.random.key(3))["w"]
    assert np.array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(TypeError, match="^key"):
        model.init(1.5)


def test_evaluate_and_sweep_name_a_wrong_feature_count():
    model = logistic_model(2)
    params = model.init(0)
    data = Batch(np.ones((4, 3)), np.array([1, 0, 1, 0]), np.eye(2)[[0, 1, 0, 1]])
    with pytest.raises(ValueError, match="^data.x: the model cannot take features"):
        evaluate(0, model.apply, params, data)
    with pytest.raises(ValueError, match="^data.x: the model cannot take features"):
        tradeoff_sweep(0, model.init, model.apply, data, [0.0], num_steps=1)
