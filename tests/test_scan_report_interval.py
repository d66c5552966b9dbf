"""Scan findings in reports carry the Monte Carlo interval of their randomization p-value
(``auditing.run_scans``: ``p_value_interval`` beside ``p_value``, and in the words)."""

import math

import jax
import numpy as np
import pandas as pd
from scipy.stats import beta

from ofijax.auditing import run_scans


def _clopper_pearson(k, r, a=0.05):
    lo = 0.0 if k == 0 else beta.ppf(a / 2, k, r - k + 1)
    hi = 1.0 if k == r else beta.ppf(1 - a / 2, k + 1, r - k)
    return lo, hi


def test_run_scans_reports_the_interval_of_each_p_value():
    rng = np.random.default_rng(0)
    n = 400
    d = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("uv"), n)})
    yt = rng.integers(0, 2, n)
    yp = np.where(d.a.eq("x") & (yt == 1), 0, rng.integers(0, 2, n))  # a planted TPR gap
    r = 20
    out = run_scans(jax.random.key(0), yt, yp, d, num_samples=r, top_k=2)
    for res in out.values():
        for f in [res, *res["top"]]:
            p, (lo, hi) = f["p_value"], f["p_value_interval"]
            k = round(p * (r + 1)) - 1
            assert math.isclose(p, (1 + k) / (r + 1))
            want = _clopper_pearson(k, r)
            assert math.isclose(lo, want[0], abs_tol=1e-9) and math.isclose(hi, want[1], abs_tol=1e-9)
            assert lo <= p <= hi
    tpr = out["tpr_scan"]
    assert tpr["score"] > 0
    assert "Monte Carlo estimate, exact p in [" in tpr["description"]


def test_without_replicates_the_interval_is_nan():
    rng = np.random.default_rng(1)
    n = 200
    d = pd.DataFrame({"a": rng.choice(list("xy"), n)})
    out = run_scans(jax.random.key(0), rng.integers(0, 2, n), rng.integers(0, 2, n), d, num_samples=0)
    for res in out.values():
        assert math.isnan(res["p_value"]) and all(math.isnan(b) for b in res["p_value_interval"])
