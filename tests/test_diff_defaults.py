"""OFIClassifier's penalty on the whole training set (``penalty_batch_size``), its tolerance,
and iterate averaging (``average``).

References are independent: the soft training OFI recomputed in NumPy from the fitted weights
(B_g = mean over the group of sigmoid(z/T) - y, hinged at the tolerance), bit-for-bit
equality with the unpenalized fit where the hinge makes the penalty identically 0, NumPy's mean
of the included iterates for the running mean, and the last iterate where the second half of
training is one step. Sizes are
tiny (200 rows, a few epochs) so the file runs in seconds.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ofijax.diff import OFIClassifier, _estimator, _train

N = 200
FAST = {"epochs": 5, "batch_size": 64, "learning_rate": 0.05}  # as test_diff_estimator: one program


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1], n // 2)
    x = np.c_[rng.normal(size=n) + 0.8 * g, rng.normal(size=n)]
    y = (x[:, 0] + 0.7 * rng.normal(size=n) > 0.4).astype(int)
    return x, y, g


X, Y, G = _data()


def _soft_gap_numpy(clf, x, y, g, temperature, tolerance):
    """max(0, |B_0 - B_1| - tolerance) with soft B_g = mean_g(sigmoid(z / T) - y) (label 1 good)."""
    z = ((x - clf.mean_) / clf.scale_) @ np.asarray(clf.params_["w"], np.float64)
    z = z + float(clf.params_["b"])
    p = 1.0 / (1.0 + np.exp(-z / temperature))
    b = [np.mean(p[g == k] - y[g == k]) for k in (0, 1)]
    return max(0.0, abs(b[0] - b[1]) - tolerance)


@pytest.mark.parametrize("tolerance", [0.0, 0.01])
def test_the_penalty_is_the_whole_training_sets_soft_gap(tolerance):
    """With a vanishing learning rate the weights stay at their start, so every step's penalty is
    the whole training set's soft gap at the fitted weights (mini-batches of 64)."""
    kw = {**FAST, "learning_rate": 1e-9, "surrogate_temperature": 0.3, "tolerance": tolerance}
    full = OFIClassifier(penalty_batch_size=4096, **kw).fit(X, Y, sensitive_features=G)
    ref = _soft_gap_numpy(full, X, Y, G, 0.3, tolerance)
    assert ref > 0.005  # the reference is not trivially 0
    np.testing.assert_allclose(full.penalty_curve_, ref, rtol=2e-4)


def test_a_tolerance_above_every_gap_is_the_plain_model_bit_for_bit():
    kw = FAST
    plain = OFIClassifier(strength=0.0, **kw).fit(X, Y, sensitive_features=G)
    hinged = OFIClassifier(strength=5.0, tolerance=2.0, **kw).fit(X, Y, sensitive_features=G)
    np.testing.assert_array_equal(hinged.params_["w"], plain.params_["w"])
    np.testing.assert_array_equal(hinged.params_["b"], plain.params_["b"])
    np.testing.assert_array_equal(hinged.penalty_curve_, 0.0)


def test_a_window_of_the_training_set_trains_and_repeats_with_the_seed():
    kw = {**FAST, "penalty_batch_size": 90}
    a = OFIClassifier(**kw).fit(X, Y, sensitive_features=G)
    b = OFIClassifier(**kw).fit(X, Y, sensitive_features=G)
    c = OFIClassifier(**{**kw, "penalty_batch_size": 4096}).fit(X, Y, sensitive_features=G)
    np.testing.assert_array_equal(a.params_["w"], b.params_["w"])
    assert np.all(np.isfinite(a.penalty_curve_))
    assert not np.array_equal(a.params_["w"], c.params_["w"])


def test_the_full_penalty_lowers_training_ofi_against_numpy():
    """Hard training max|OFI| (NumPy) falls under the defaults' whole-training-set penalty."""
    def hard_gap(clf):
        p = clf.predict(X)
        b = [np.mean((p[G == k] == 1) & (Y[G == k] == 0)) - np.mean((p[G == k] == 0) & (Y[G == k] == 1))
             for k in (0, 1)]
        return abs(b[0] - b[1])

    kw = FAST
    plain = OFIClassifier(strength=0.0, **kw).fit(X, Y, sensitive_features=G)
    fair = OFIClassifier(tolerance=0.0, **kw).fit(X, Y, sensitive_features=G)
    assert hard_gap(plain) > 0.05
    assert hard_gap(fair) < 0.5 * hard_gap(plain)


def test_new_parameters_are_checked_cloned_pickled_and_traced():
    from sklearn.base import clone

    with pytest.raises(ValueError, match="^tolerance: must be a finite number ≥ 0"):
        OFIClassifier(tolerance=-0.1).fit(X, Y, sensitive_features=G)
    for bad in (0, True, 2.5, "all"):
        with pytest.raises(ValueError, match="^penalty_batch_size: must be a positive integer"):
            OFIClassifier(penalty_batch_size=bad).fit(X, Y, sensitive_features=G)
    clf = OFIClassifier(tolerance=0.02, penalty_batch_size=None)
    p = clone(clf).get_params()
    assert p["tolerance"] == 0.02 and p["penalty_batch_size"] is None
    defaults = OFIClassifier().get_params()
    assert (defaults["strength"], defaults["surrogate_temperature"], defaults["tolerance"],
            defaults["penalty_batch_size"]) == (2.0, 0.1, 0.04, 4096)
    kw = FAST
    fitted = OFIClassifier(tolerance=0.01, **kw).fit(X, Y, sensitive_features=G)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(X), fitted.predict(X))
    # tolerance, strength and temperature are traced: another value compiles nothing new
    before = _estimator._fit_program._cache_size()
    OFIClassifier(tolerance=0.03, strength=1.5, surrogate_temperature=0.2, **kw).fit(
        X, Y, sensitive_features=G)
    assert _estimator._fit_program._cache_size() == before


# ------------------------------------------------------------ iterate averaging (average=...)


def test_the_running_mean_is_numpys_mean_of_the_included_iterates():
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    iterates = rng.normal(size=(9, 3))
    include = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1], bool)
    mean, count = {"w": jnp.asarray(iterates[0])}, jnp.zeros((), jnp.int32)
    for it, inc in zip(iterates, include, strict=True):
        mean, count = _train.running_mean(mean, {"w": jnp.asarray(it)}, count,
                                               jnp.asarray(inc))
    assert int(count) == 5
    np.testing.assert_allclose(np.asarray(mean["w"]), iterates[include].mean(axis=0), rtol=1e-6)


@pytest.mark.slow  # two programs of their own (about 1 CPU-s each to compile)
def test_polyak_averaging_of_one_iterate_is_the_last_iterate():
    """Two steps in all (one batch, two epochs): the second half is the last iterate alone."""
    kw = {**FAST, "epochs": 2, "batch_size": N}
    last = OFIClassifier(**kw).fit(X, Y, sensitive_features=G)
    avg = OFIClassifier(average="polyak", **kw).fit(X, Y, sensitive_features=G)
    np.testing.assert_allclose(avg.params_["w"], last.params_["w"], rtol=1e-6)
    np.testing.assert_allclose(avg.params_["b"], last.params_["b"], rtol=1e-6, atol=1e-9)


def test_polyak_averaging_trains_is_checked_cloned_and_pickled():
    from sklearn.base import clone

    for bad in ("ema", "Polyak", True, 1):
        with pytest.raises(ValueError, match="^average: must be None"):
            OFIClassifier(average=bad).fit(X, Y, sensitive_features=G)
    assert clone(OFIClassifier(average="polyak")).get_params()["average"] == "polyak"
    assert OFIClassifier().get_params()["average"] is None
    last = OFIClassifier(**FAST).fit(X, Y, sensitive_features=G)
    avg = OFIClassifier(average="polyak", **FAST).fit(X, Y, sensitive_features=G)
    assert not np.allclose(avg.params_["w"], last.params_["w"])
    assert np.mean(avg.predict(X) == Y) > 0.7
    again = pickle.loads(pickle.dumps(avg))
    np.testing.assert_array_equal(again.predict(X), avg.predict(X))
    # the penalty's numbers stay traced with averaging on: another value compiles nothing new
    before = _estimator._fit_program._cache_size()
    OFIClassifier(average="polyak", tolerance=0.01, strength=3.0, **FAST).fit(
        X, Y, sensitive_features=G)
    assert _estimator._fit_program._cache_size() == before

