"""OFIClassifier (scikit-learn protocol, training, groups) and held-out evaluation with intervals.

References are independent: NumPy recomputations of B and OFI from predictions, NumPy's
multinomial for the noise floor, and a coverage simulation for the intervals. Sizes are tiny and
shared (one compiled training program per setting) so the file runs in seconds.
"""

from __future__ import annotations

import pickle
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

from ofijax import diff
from ofijax.diff import Batch, OFIClassifier, evaluate, one_hot_groups

N = 200
FAST = {"epochs": 5, "batch_size": 64, "learning_rate": 0.05}


def _data(seed=0, n=N, shift=0.8, noise=0.7):
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1], n // 2)
    x = np.c_[rng.normal(size=n) + shift * g, rng.normal(size=n)]
    y = (x[:, 0] + noise * rng.normal(size=n) > 0.4).astype(int)
    return x, y, g


X, Y, G = _data()


def _signs(params, x):
    """A "model" whose logits are the first feature (one function object: one compilation)."""
    return x[:, 0]


def _b_numpy(y, pred, groups, beneficial=1):
    """B_g = (FP − FN)/n_g per group, positive = beneficial (NumPy reference)."""
    out = {}
    for g in np.unique(groups):
        m = groups == g
        yp, pp = y[m] == beneficial, pred[m] == beneficial
        out[g] = (np.sum(~yp & pp) - np.sum(yp & ~pp)) / m.sum()
    return out


@pytest.fixture(scope="module")
def fitted():
    return OFIClassifier(**FAST).fit(X, Y, sensitive_features=G)


# ------------------------------------------------------------------- scikit-learn protocol


def test_params_are_stored_unchanged_and_clone_works():
    from sklearn.base import clone

    clf = OFIClassifier(strength=2.5, hidden_layer_sizes=[3], model="mlp")
    p = clf.get_params()
    assert p["strength"] == 2.5 and p["hidden_layer_sizes"] == [3] and p["model"] == "mlp"
    c2 = clone(clf)
    assert c2.get_params() == p and c2 is not clf
    assert clf.set_params(strength=1.0) is clf and clf.strength == 1.0
    with pytest.raises(ValueError, match="^nope: not a parameter"):
        clf.set_params(nope=1)
    assert repr(OFIClassifier(strength=3.0)) == "OFIClassifier(strength=3.0)"
    assert repr(OFIClassifier()) == "OFIClassifier()"


def test_predict_proba_decision_function_and_predict_agree(fitted):
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    pred = fitted.predict(X)
    dec = fitted.decision_function(X)
    np.testing.assert_array_equal(pred, np.where(dec > 0, fitted.classes_[1], fitted.classes_[0]))
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-dec)), rtol=1e-10)
    assert fitted.score(X, Y) == pytest.approx(np.mean(pred == Y))
    assert fitted.n_features_in_ == 2 and fitted.groups_ == (0, 1)


def test_string_labels_and_beneficial_label_orient_everything():
    labels = np.where(Y == 1, "good", "bad")
    clf = OFIClassifier(beneficial_label="good", **FAST).fit(X, labels, sensitive_features=G)
    ref = OFIClassifier(**FAST).fit(X, Y, sensitive_features=G)
    assert clf.classes_.tolist() == ["bad", "good"]
    np.testing.assert_array_equal(clf.predict(X) == "good", ref.predict(X) == 1)
    # beneficial = classes_[0]: decision_function still scores classes_[1]
    flipped = OFIClassifier(beneficial_label=0, **FAST).fit(X, 1 - Y, sensitive_features=G)
    np.testing.assert_allclose(flipped.decision_function(X), -ref.decision_function(X),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(flipped.predict(X), 1 - ref.predict(X))
    with pytest.raises(ValueError, match="^beneficial_label: 2 is not one of"):
        OFIClassifier(beneficial_label=2, **FAST).fit(X, Y, sensitive_features=G)


def test_same_seed_same_model_and_pickle_round_trip(fitted):
    again = OFIClassifier(**FAST).fit(X, Y, sensitive_features=G)
    for a, b in zip(jax.tree.leaves(fitted.params_), jax.tree.leaves(again.params_)):
        np.testing.assert_array_equal(a, b)
        assert isinstance(a, np.ndarray)
    other = OFIClassifier(random_state=1, **FAST).fit(X, Y, sensitive_features=G)
    assert not np.array_equal(other.params_["w"], fitted.params_["w"])
    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))


def test_bad_input_names_the_argument(fitted):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(ValueError, match="^sensitive_features: required"):
        OFIClassifier(**FAST).fit(X, Y)
    with pytest.raises(ValueError, match="^penalty: must be one of"):
        OFIClassifier(penalty="gini").fit(X, Y, sensitive_features=G)
    with pytest.raises(ValueError, match="^strength: must be a finite number"):
        OFIClassifier(strength=-1.0).fit(X, Y, sensitive_features=G)
    with pytest.raises(TypeError, match="^random_state:"):
        OFIClassifier(random_state=None).fit(X, Y, sensitive_features=G)
    with pytest.raises(ValueError, match="^y: OFIClassifier is binary"):
        OFIClassifier(**FAST).fit(X, np.arange(N) % 3, sensitive_features=G)
    with pytest.raises(ValueError, match="^X: has 3 features"):
        fitted.predict(np.ones((2, 3)))
    with pytest.raises(NotFittedError):
        OFIClassifier().predict(X)
    with pytest.raises(ValueError, match="^sensitive_features: group label"):
        fitted.evaluate(0, X, Y, sensitive_features=np.where(G == 1, 2, 0))


def test_pandas_inputs_are_aligned_on_the_index():
    df = pd.DataFrame(X, columns=["a", "b"], index=np.arange(N) + 1000)
    ys = pd.Series(Y, index=df.index)[::-1]  # same labels, reversed order
    gs = pd.Series(G, index=df.index).sample(frac=1.0, random_state=0)
    clf = OFIClassifier(**FAST).fit(df, ys, sensitive_features=gs)
    ref = OFIClassifier(**FAST).fit(X, Y, sensitive_features=G)
    np.testing.assert_array_equal(clf.params_["w"], ref.params_["w"])
    assert clf.feature_names_in_.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="^y: its pandas index"):
        OFIClassifier(**FAST).fit(df, pd.Series(Y), sensitive_features=G)
    with pytest.raises(ValueError, match="^X: its column names differ"):
        clf.predict(df.rename(columns={"a": "z"}))


def test_collapse_to_one_class_warns():
    y = np.ones(N, dtype=int)
    y[:4] = 0  # 98% one class, features pure noise
    x = np.random.default_rng(1).normal(size=(N, 2))
    with pytest.warns(UserWarning, match="collapsed to one class"):
        OFIClassifier(strength=0.0, **FAST).fit(x, y, sensitive_features=G)


@pytest.mark.parametrize(("penalty", "model"), [("di", "mlp"), ("equalized_odds", "logistic")])
def test_other_penalties_and_mlp_train(penalty, model):
    clf = OFIClassifier(penalty=penalty, model=model, hidden_layer_sizes=(4,), strength=0.5,
                        **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # DI can equalize by selecting everyone
        clf.fit(X, Y, sensitive_features=G)
    assert np.all(np.isfinite(clf.loss_curve_)) and clf.loss_curve_.shape == (5,)
    assert clf.predict(X).shape == (N,)


def test_the_penalty_lowers_training_ofi_against_a_numpy_reference():
    x, y, g = _data(3, n=400, shift=1.0, noise=1.0)
    kw = {"epochs": 30, "batch_size": 400, "learning_rate": 0.05}
    plain = OFIClassifier(strength=0.0, **kw).fit(x, y, sensitive_features=g)
    fair = OFIClassifier(strength=4.0, surrogate_temperature=0.1, **kw).fit(
        x, y, sensitive_features=g)

    def gap(clf):
        b = _b_numpy(y, clf.predict(x), g)
        return abs(b[0] - b[1])

    assert gap(plain) > 0.1
    assert gap(fair) < 0.5 * gap(plain)


def test_pipeline_and_grid_search_pass_sensitive_features():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = Pipeline([("scale", StandardScaler()), ("clf", OFIClassifier(**FAST))])
    pipe.fit(X, Y, clf__sensitive_features=G)
    assert pipe.predict(X).shape == (N,)
    search = GridSearchCV(OFIClassifier(**FAST), {"strength": [0.0, 2.0]}, cv=2)
    search.fit(X, Y, sensitive_features=G)
    assert search.best_params_["strength"] in (0.0, 2.0)
    assert search.best_estimator_.groups_ == (0, 1)
    # with metadata routing on: sensitive_features is requested by default, sample_weight on
    # request (set_fit_request survives clone)
    import sklearn
    from sklearn.base import clone

    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(OFIClassifier(**FAST), {"strength": [0.0, 2.0]}, cv=2)
        routed.fit(X, Y, sensitive_features=G)
        assert routed.best_params_ == search.best_params_
        est = clone(OFIClassifier(**FAST).set_fit_request(sample_weight=True))
        GridSearchCV(est, {"strength": [2.0]}, cv=2).fit(
            X, Y, sensitive_features=G, sample_weight=np.ones(N))


# ------------------------------------------------------------------------------ evaluation


def test_evaluate_matches_numpy_and_noise_floor_matches_numpy_multinomial(fitted):
    ev = fitted.evaluate(0, X, Y, sensitive_features=G, num_samples=4000)
    pred = fitted.predict(X)
    b = _b_numpy(Y, pred, G)
    assert float(ev.accuracy) == pytest.approx(np.mean(pred == Y), abs=1e-6)
    assert float(ev.ofi[0, 1]) == pytest.approx(b[0] - b[1], abs=1e-6)
    lo, hi = ev.ofi_interval[0, 1]
    assert lo <= b[0] - b[1] <= hi
    np.testing.assert_allclose(ev.ofi_interval[1, 0], [-hi, -lo])
    mlo, mhi = ev.max_abs_ofi_interval
    assert mlo <= abs(b[0] - b[1]) <= mhi
    # the noise floor: NumPy multinomial draws at the pooled cell probabilities
    cells = np.stack([(Y == 1) & (pred == 1), (Y == 1) & (pred == 0),
                      (Y == 0) & (pred == 1), (Y == 0) & (pred == 0)], 1)
    pooled = cells.sum(0) / N
    rng = np.random.default_rng(0)
    draws = [rng.multinomial(n, pooled, size=20000) for n in (100, 100)]
    bb = [(d[:, 2] - d[:, 1]) / 100 for d in draws]
    ref = np.quantile(np.abs(bb[0] - bb[1]), 0.95)
    assert float(ev.noise_floor) == pytest.approx(ref, abs=0.012)
    assert ev.below_noise_floor == (float(ev.max_abs_ofi) <= float(ev.noise_floor))
    assert 1 / 4001 <= ev.noise_p_value <= 1
    assert "noise floor" in ev.describe()


def test_evaluate_does_not_depend_on_group_order():
    rng = np.random.default_rng(5)
    sizes = (40, 60, 80)
    g = np.repeat([0, 1, 2], sizes)
    y = rng.integers(0, 2, g.size)
    pred = np.where(rng.random(g.size) < 0.8, y, 1 - y)
    x = (2.0 * pred - 1)[:, None]
    gw = np.eye(3)[g]
    perm = [2, 0, 1]
    a = evaluate(7, _signs, None, Batch(x, y, gw), num_samples=300)
    b = evaluate(7, _signs, None, Batch(x, y, gw[:, perm]), num_samples=300)
    np.testing.assert_array_equal(a.max_abs_ofi_interval, b.max_abs_ofi_interval)
    np.testing.assert_array_equal(a.noise_samples, b.noise_samples)
    np.testing.assert_array_equal(a.ofi_interval[np.ix_(perm, perm)], b.ofi_interval)


def test_max_ofi_interval_covers_by_simulation():
    """Coverage of the max|OFI| interval at n = 40, 60, 80 (nominal 95%), with and without a gap.

    A percentile bootstrap of the maximum never covers 0 (its lower quantile is > 0 whenever the
    groups differ at all), which is why the interval comes from simultaneous per-pair intervals.
    """
    sizes = np.array([40, 60, 80])
    g = np.repeat([0, 1, 2], sizes)
    gw = np.eye(3)[g]
    rng = np.random.default_rng(11)
    scenarios = {  # cell probabilities (TP, FN, FP, TN) per group
        "equal": [[0.3, 0.1, 0.1, 0.5]] * 3,
        "gap": [[0.3, 0.1, 0.1, 0.5], [0.3, 0.15, 0.05, 0.5], [0.25, 0.05, 0.15, 0.55]],
    }
    reps = 120
    for name, probs in scenarios.items():
        probs = np.asarray(probs)
        b_true = probs[:, 2] - probs[:, 1]
        true_max = b_true.max() - b_true.min()
        hits = naive_hits = 0
        for r in range(reps):
            rows = []
            for k, n in enumerate(sizes):
                cells = rng.choice(4, size=n, p=probs[k])
                rows.append(cells)
            cells = np.concatenate(rows)
            y = (cells <= 1).astype(int)
            pred = np.isin(cells, (0, 2)).astype(int)
            ev = evaluate(r, _signs, None,
                          Batch((2.0 * pred - 1)[:, None], y, gw), num_samples=400)
            lo, hi = ev.max_abs_ofi_interval
            hits += lo - 1e-12 <= true_max <= hi + 1e-12
            # naive percentile bootstrap of the maximum (NumPy)
            boot = []
            for k, n in enumerate(sizes):
                c = np.bincount(cells[g == k], minlength=4)
                d = rng.multinomial(n, c / n, size=400)
                boot.append((d[:, 2] - d[:, 1]) / n)
            boot = np.stack(boot, 1)
            m = boot.max(1) - boot.min(1)
            naive_hits += np.quantile(m, 0.025) <= true_max <= np.quantile(m, 0.975)
        assert hits / reps >= 0.9, (name, hits / reps)
        if name == "equal":
            assert naive_hits / reps <= 0.1, naive_hits / reps


def test_evaluate_without_key_is_deprecated_and_refuses_overlapping_groups():
    data = Batch(X, Y, np.eye(2)[G])
    with pytest.warns(DeprecationWarning, match="without a key is deprecated"):
        ev = evaluate(_signs, None, data)
    assert ev.noise_floor is None and ev.ofi_interval is None
    assert "pass a key" in ev.describe()
    overlapping = Batch(X, Y, np.ones((N, 2)))
    with pytest.raises(ValueError, match="^data.groups: intervals and the noise floor need"):
        evaluate(0, _signs, None, overlapping)
    with pytest.raises(ValueError, match="^num_samples:"):
        evaluate(0, _signs, None, data, num_samples=10)


def test_tradeoff_sweep_refuses_evaluation_groups_that_mean_other_groups():
    model = diff.logistic_model(2)
    race = np.array(["a", "b"] * (N // 2))
    train = Batch(X, Y, one_hot_groups(race))
    swapped = Batch(X, Y, one_hot_groups(np.where(race == "a", "c", "b")))
    with pytest.raises(ValueError, match="^eval_data.groups: its columns are the groups"):
        diff.tradeoff_sweep(0, model.init, model.apply, train, [0.0], num_steps=1,
                            eval_data=swapped)
    three = Batch(X, Y, np.eye(3)[np.arange(N) % 3])
    with pytest.raises(ValueError, match="^eval_data.groups: has 3 groups"):
        diff.tradeoff_sweep(0, model.init, model.apply, train, [0.0], num_steps=1,
                            eval_data=three)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = diff.tradeoff_sweep(0, model.init, model.apply, train, [0.0], num_steps=2,
                                  eval_data=Batch(X, Y, one_hot_groups(race)))
    assert res.accuracy.shape == (1, 1)


@pytest.mark.slow
def test_diff_defaults_quick_runs(tmp_path):
    """experiments/diff_defaults.py --quick (round 3): selection on validation, check on test."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(root / "experiments" / "diff_defaults.py"), "--quick",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=root,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in out.stdout.splitlines()
                 if ": " in line and " " not in line.split(": ", 1)[0])
    assert 0.5 < float(lines["test_lr_acc_median"]) < 0.8
    assert float(lines["test_chosen_noise_floor_median"]) > 0
    csv = pd.read_csv(tmp_path / "diff_defaults_round3_quick.csv")
    assert set(csv.stage) == {"reference", "candidate", "test"}
    assert set(csv.seed) == {900, 901}  # never round 3's seeds (100-115)


def test_evaluate_with_sample_weight_uses_kish_sizes():
    """Weights all 2: the same proportions and Kish sizes, so the same intervals and noise floor."""
    data = Batch(X, Y, np.eye(2)[G])
    plain = evaluate(3, _signs, None, data, num_samples=300)
    doubled = evaluate(3, _signs, None, data._replace(weight=np.full(N, 2.0)), num_samples=300)
    np.testing.assert_array_equal(np.asarray(doubled.cms), 2 * np.asarray(plain.cms))
    np.testing.assert_allclose(doubled.max_abs_ofi_interval, plain.max_abs_ofi_interval,
                               rtol=1e-12)
    np.testing.assert_allclose(doubled.noise_samples, plain.noise_samples, rtol=1e-12)
