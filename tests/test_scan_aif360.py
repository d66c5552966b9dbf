"""Parity with AIF360's MDSS bias scan (the peer implementation), on small identical inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ofijax.scan import bias_scan, score_subset

pytestmark = pytest.mark.peers


def _aif360_scan(df, y, p, *, direction, penalty):
    mdss = pytest.importorskip("aif360.detectors.mdss_detector")
    state = np.random.get_state()  # noqa: NPY002 (AIF360 reseeds the global RNG; restore it)
    try:
        subset, score = mdss.bias_scan(
            data=df, observations=pd.Series(y), expectations=pd.Series(p),
            favorable_value="high", overpredicted=(direction == "negative"),
            scoring="Bernoulli", num_iters=10, penalty=penalty, mode="binary",
        )
    finally:
        np.random.set_state(state)  # noqa: NPY002
    return subset, float(score)


def _normalise(df, subset):
    out = {}
    for col, vals in subset.items():
        vals = tuple(sorted(v.item() if hasattr(v, "item") else v for v in vals))
        if set(vals) != set(df[col].unique().tolist()):
            out[col] = vals
    return out


def _data(n, seed, n_attr=4, n_val=4):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_val, size=(n, n_attr))
    df = pd.DataFrame(codes, columns=[f"a{j}" for j in range(n_attr)])
    p = rng.uniform(0.05, 0.95, n)
    inside = np.isin(codes[:, 0], [1, 2]) & (codes[:, 1] == 3)
    odds = p / (1 - p) * np.where(inside, 2.5, 1.0)
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(int)
    return df, y, p


@pytest.mark.parametrize(
    "seed, direction, penalty",
    [(0, "positive", 1e-17), (1, "positive", 1.0), (2, "negative", 1e-17), (3, "negative", 0.5)],
)
def test_parity_with_aif360(seed, direction, penalty):
    pytest.importorskip("aif360")
    df, y, p = _data(1500, seed)
    theirs, their_score = _aif360_scan(df, y, p, direction=direction, penalty=penalty)
    # Both are local searches from random restarts whose streams cannot be matched; ours are a
    # batch axis, so we run 32 (vs AIF360's 10) at little extra cost. With 10, seed 2 lands on a
    # 9.78 optimum while AIF360's restarts find 10.32 (and ours with 30+ find 10.90).
    ours = bias_scan(df, y, p, direction=direction, penalty=penalty, q_bounds=(1e-3, 1e3),
                     num_restarts=32)
    # never worse than AIF360 (whose score is rounded to 4 decimals and bisected to 1e-3 in q)
    assert ours.score >= their_score - 1e-3
    their_norm = _normalise(df, theirs)
    # their subset re-scored by us matches their score (same objective, same penalty counting)
    rescored = score_subset(df, y, p, {k: list(v) for k, v in theirs.items()},
                            direction=direction, penalty=penalty, q_bounds=(1e-3, 1e3))
    assert rescored.score == pytest.approx(their_score, abs=2e-3)
    if ours.score <= their_score + 1e-3:  # same local optimum: same normalised subgroup
        assert ours.subset == their_norm
