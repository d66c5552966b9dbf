"""IJDI-Scan on the real COMPAS covariates with the simulated outcomes of Experiment 1 (spec §7.2):
the planted subgroup is detected below the theoretical cutoff λ* = 50 (k = 0) and nothing above it."""

from __future__ import annotations

import numpy as np

from ofijax import datasets
from ofijax.scan import estimate_true_probabilities, ijdi_scan

FEATURES = ["Sex", "Race", "Prior Offenses", "Under 25", "ChargeDegree"]


def _compas():
    return datasets.load_compas(variant="ijdi")


def test_experiment1_recovers_planted_subgroup_below_lambda_star():
    df = _compas()
    assert len(df) == 7214
    X = df[FEATURES]
    S = ((df["Race"] == "African-American") & (df["Sex"] == "Male") & ~df["Under 25"]).to_numpy()
    assert S.sum() == 2293
    rng = np.random.default_rng(0)
    k = 0
    p = np.where(S, rng.uniform(0.51 - 0.01 * k, 0.51 + 0.01 * k, len(df)),
                 rng.uniform(0.49 - 0.01 * k, 0.49 + 0.01 * k, len(df)))
    y = (rng.uniform(size=len(df)) < p).astype(int)
    # The audited classifier is the truth itself (p̂_0 = p, θ = 0.5); IJDI uses the same p.
    planted = S & (y == 0)
    for lam in (0.0, 4.0):
        res = ijdi_scan(X, y, p, p, lam=lam, beneficial_label=0, threshold=0.5)  # y: 1 = reoffends
        assert res.converged
        assert res.subset == {"Race": ("African-American",), "Sex": ("Male",),
                              "Under 25": (False,)}
        np.testing.assert_array_equal(res.mask, planted)  # IoU = 1 over D_N
    # Above λ* = 50, S's p_scan is clipped to 1 and nothing is insufficiently justified.
    res = ijdi_scan(X, y, p, p, lam=80.0, beneficial_label=0, threshold=0.5)
    assert res.score == 0.0 and res.subset == {} and not res.mask.any() and res.converged


def test_reference_probability_model_on_compas():
    """The reference's p model (one-hot, one level dropped per column except race, C = 1)."""
    df = _compas()
    drop = {"Sex": "Female", "Prior Offenses": "None", "ChargeDegree": "M", "Under 25": False}
    p = estimate_true_probabilities(df[FEATURES], df["ReoffendedWithinTwoYears"], drop_first=drop)
    assert p.shape == (7214,) and np.all((p > 0) & (p < 1))
    # in-sample logistic regression with an intercept reproduces the base rate closely
    assert abs(p.mean() - df["ReoffendedWithinTwoYears"].mean()) < 1e-3
    # priors raise the predicted risk: "Over 5" > "1 to 5" > "None" on average
    m = {lev: p[(df["Prior Offenses"] == lev).to_numpy()].mean()
         for lev in ("None", "1 to 5", "Over 5")}
    assert m["Over 5"] > m["1 to 5"] > m["None"]
