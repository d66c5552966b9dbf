"""OFIClassifier(method="plugin"): the plug-in group-blind rule (ofijax.diff._plugin).

References are independent: the rule's score recomputed in NumPy from the fitted parameters,
the hard training B of each group as exact integer counts (fractions.Fraction against the
tolerance), and a brute-force search of the two-group multiplier over a fine grid in NumPy.
Sizes are tiny and shared (one compiled training program per model and group count).
"""

from __future__ import annotations

import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest

from ofijax.diff import OFIClassifier

N = 400
FAST = {"epochs": 5, "batch_size": 64, "learning_rate": 0.05}
PLAIN = {**FAST, "strength": 0.0, "penalty_batch_size": None}  # the plug-in's label model
TAU = 0.0301  # not a multiple of 1/(n_i n_j) at these sizes: no exact ties with a gap


def _data(groups=2, seed=0, n=N):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    x = np.c_[rng.normal(size=n) + 0.9 * g, rng.normal(size=n) - 0.3 * g]
    y = (x[:, 0] + 0.8 * rng.normal(size=n) > 0.6).astype(int)
    return x, y, g


X, Y, G = _data()


def _numpy_score(clf, x):
    """2 η − 1 + Σ_g c_g s_g from the fitted NumPy parameters (logistic label model)."""
    xs = (x - clf.mean_) / clf.scale_
    z = xs @ clf.params_["w"] + clf.params_["b"]
    eta = 1 / (1 + np.exp(-z))
    zg = xs @ clf.group_params_["w"] + clf.group_params_["b"]
    s = np.exp(zg - zg.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    return 2 * eta - 1 + s @ clf.group_coef_


def _exact_gap(pred, y, g):
    """max_g B_g − min_g B_g as a Fraction, B_g = (#pred 1 − #y 1)/n_g (label 1 beneficial)."""
    b = [Fraction(int(pred[g == k].sum()) - int(y[g == k].sum()), int((g == k).sum()))
         for k in np.unique(g)]
    return max(b) - min(b)


@pytest.fixture(scope="module")
def fitted():
    return OFIClassifier(method="plugin", tolerance=TAU, **FAST).fit(X, Y, sensitive_features=G)


def test_two_groups_multiplier_matches_a_brute_force_grid(fitted):
    pred = fitted.predict(X)
    plain = OFIClassifier(**PLAIN).fit(X, Y, sensitive_features=G).predict(X)
    assert _exact_gap(plain, Y, G) > Fraction(TAU)  # the constraint binds
    assert _exact_gap(pred, Y, G) <= Fraction(TAU)
    assert fitted.train_max_ofi_ == pytest.approx(float(_exact_gap(pred, Y, G)), abs=1e-12)
    share = np.bincount(G) / N
    c = fitted.group_coef_
    assert float(share @ c) == pytest.approx(0.0, abs=1e-12)  # Σ λ_g = 0
    lam_fit = c[0] * share[0]
    # brute force: coef(λ) = (λ/π_0, −λ/π_1) on a fine grid; the feasible λ nearest 0
    xs = (X - fitted.mean_) / fitted.scale_
    eta = 1 / (1 + np.exp(-(xs @ fitted.params_["w"] + fitted.params_["b"])))
    zg = xs @ fitted.group_params_["w"] + fitted.group_params_["b"]
    s = np.exp(zg - zg.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    d = s[:, 0] / share[0] - s[:, 1] / share[1]
    grid = np.concatenate([np.linspace(-3, 3, 60001), [0.0]])
    preds = (2 * eta - 1)[None, :] + grid[:, None] * d[None, :] > 0
    n0, n1 = (G == 0).sum(), (G == 1).sum()
    b0 = (preds[:, G == 0].sum(1) - Y[G == 0].sum()) * n1
    b1 = (preds[:, G == 1].sum(1) - Y[G == 1].sum()) * n0
    feasible = np.array([Fraction(abs(int(u) - int(v)), int(n0 * n1)) <= Fraction(TAU)
                         for u, v in zip(b0, b1)])
    k = np.flatnonzero(feasible)[np.argmin(np.abs(grid[feasible]))]
    # the grid's nearest feasible point is in the fitted interval, or beyond it
    assert np.array_equal(preds[k], pred == 1) or abs(grid[k]) >= abs(lam_fit)
    assert np.array_equal(preds[k], pred == 1)  # at this grid step it is in the interval
    # a tolerance above the plain gap leaves the label model alone (λ = 0)
    loose = OFIClassifier(method="plugin", tolerance=0.5, **FAST).fit(X, Y, sensitive_features=G)
    assert np.all(loose.group_coef_ == 0) and np.array_equal(loose.predict(X), plain)


def test_score_proba_and_predict_agree_with_numpy(fitted):
    score = _numpy_score(fitted, X)
    df = fitted.decision_function(X)
    np.testing.assert_allclose(df, score, atol=2e-5)
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], np.clip((df + 1) / 2, 0, 1), atol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    pred = fitted.predict(X)
    assert np.array_equal(pred, np.where(df > 0, 1, 0))
    assert np.array_equal(pred, fitted.classes_[np.argmax(proba, axis=1)])
    ev = fitted.evaluate(0, X, Y, sensitive_features=G, num_samples=200)
    assert float(ev.max_abs_ofi) == pytest.approx(float(_exact_gap(pred, Y, G)), abs=1e-6)


def test_beneficial_label_zero_is_the_mirror_image(fitted):
    flipped = OFIClassifier(method="plugin", tolerance=TAU, beneficial_label=0, **FAST).fit(
        X, 1 - Y, sensitive_features=G)
    np.testing.assert_array_equal(flipped.group_coef_, fitted.group_coef_)
    np.testing.assert_array_equal(flipped.predict(X), 1 - fitted.predict(X))
    np.testing.assert_allclose(flipped.decision_function(X), -fitted.decision_function(X))
    np.testing.assert_allclose(flipped.predict_proba(X), fitted.predict_proba(X)[:, ::-1])


def test_sample_weights_count_in_the_tolerance():
    w = np.random.default_rng(3).integers(0, 4, N)  # integer weights: exact weighted counts
    clf = OFIClassifier(method="plugin", tolerance=TAU, **FAST).fit(X, Y, sensitive_features=G,
                                                                   sample_weight=w)
    pred = clf.predict(X)
    b = [Fraction(int(w[G == k] @ (pred[G == k] - Y[G == k])), int(w[G == k].sum())) for k in (0, 1)]
    assert abs(b[0] - b[1]) <= Fraction(TAU)
    assert clf.train_max_ofi_ == pytest.approx(float(abs(b[0] - b[1])), abs=1e-12)


@pytest.mark.parametrize("model", ["logistic", pytest.param("mlp", marks=pytest.mark.slow)])
def test_three_groups_meet_the_tolerance_whatever_their_names(model):
    x, y, g = _data(groups=3, seed=1)
    kw = {"method": "plugin", "tolerance": TAU, "model": model, "hidden_layer_sizes": (4,), **FAST}
    clf = OFIClassifier(**kw).fit(x, y, sensitive_features=g)
    plain = OFIClassifier(**{**kw, **PLAIN, "method": "penalty"}).fit(x, y, sensitive_features=g)
    assert _exact_gap(plain.predict(x), y, g) > Fraction(TAU)
    assert _exact_gap(clf.predict(x), y, g) <= Fraction(TAU)
    share = np.bincount(g) / g.size
    assert float(share @ clf.group_coef_) == pytest.approx(0.0, abs=1e-12)
    # other names, another order of first appearance: the same rule
    names = np.array(["c", "a", "b"])[g]
    other = OFIClassifier(**kw).fit(x, y, sensitive_features=names)
    assert other.groups_ == ("a", "b", "c")
    np.testing.assert_array_equal(other.predict(x), clf.predict(x))


def test_pickle_and_clone(fitted):
    from sklearn.base import clone

    back = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(back.decision_function(X), fitted.decision_function(X))
    assert isinstance(back.group_coef_, np.ndarray)
    c = clone(fitted)
    assert c.get_params() == fitted.get_params() and c.get_params()["method"] == "plugin"
    assert repr(OFIClassifier(method="plugin")) == "OFIClassifier(method='plugin')"
    # refitting with the penalty drops the rule
    again = clone(fitted).set_params(**PLAIN, method="penalty").fit(X, Y, sensitive_features=G)
    assert again.group_coef_ is None


@pytest.mark.slow
def test_grid_search_over_the_tolerance():
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(OFIClassifier(method="plugin", **FAST), {"tolerance": [TAU, 0.5]},
                          cv=2).fit(X, Y, sensitive_features=G)
    assert search.best_params_["tolerance"] in (TAU, 0.5)
    assert search.best_estimator_.group_coef_.shape == (2,)


def test_bad_method_and_unmet_tolerance():
    with pytest.raises(ValueError, match="^method: must be 'penalty' or 'plugin'"):
        OFIClassifier(method="bayes").fit(X, Y, sensitive_features=G)
    with pytest.raises(ValueError, match="^method: .*penalty='ofi' only"):
        OFIClassifier(method="plugin", penalty="di").fit(X, Y, sensitive_features=G)
    # tolerance 0: met exactly, or a warning saying the best gap (never a silent miss)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = OFIClassifier(method="plugin", tolerance=0.0, **FAST).fit(
            X, Y, sensitive_features=G)
    warned = any("plug-in search reached" in str(w.message) for w in caught)
    assert warned == (_exact_gap(clf.predict(X), Y, G) > 0)
    assert clf.train_max_ofi_ == pytest.approx(float(_exact_gap(clf.predict(X), Y, G)),
                                               abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^sensitive_features: group label"):
            clf.evaluate(0, X, Y, sensitive_features=G + 5)


@pytest.mark.slow
def test_diff_defaults_round4_quick_runs(tmp_path):
    """experiments/diff_defaults.py --round 4 --quick: the plug-in candidates, off seeds 200-215."""
    import subprocess
    import sys
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(root / "experiments" / "diff_defaults.py"), "--round", "4",
         "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=root,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    csv = pd.read_csv(tmp_path / "diff_defaults_round4_quick.csv")
    assert set(csv.seed) == {900, 901}  # never round 4's seeds (200-215)
    cand = csv[csv.stage == "candidate"]
    assert set(cand.method) == {"penalty", "plugin"} and not cand.val_collapsed.any()
    assert set(csv[csv.stage == "test"].setting) >= {"chosen"}
