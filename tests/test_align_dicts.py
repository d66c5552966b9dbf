"""A dict of pandas columns (group columns, candidates' predictions) is aligned column by column
on the reference index, or refused naming ``name[key]`` — never matched by position
(``ofijax._validation.align_pandas``, used by ``cm``, the audits and the scans)."""

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax._validation import align_pandas


def _frame(seed=0, n=40):
    rng = np.random.default_rng(seed)
    idx = [f"r{i}" for i in rng.permutation(n)]
    return pd.DataFrame({"y": rng.integers(0, 2, n), "p": rng.integers(0, 2, n),
                         "g": rng.choice(["a", "b", "c"], n), "h": rng.choice(["u", "v"], n)},
                        index=idx)


def _reference_cms(df):
    """Per-(g, h) confusion matrices TP, FN, FP, TN by a pandas groupby: the independent reference."""
    cell = np.select([(df.y == 1) & (df.p == 1), (df.y == 1) & (df.p == 0), (df.y == 0) & (df.p == 1)],
                     [0, 1, 2], 3)
    tab = pd.crosstab([df.g, df.h], cell).reindex(columns=range(4), fill_value=0)
    return {k: list(v) for k, v in zip(tab.index, tab.to_numpy(), strict=True)}


def test_group_confusion_matrices_aligns_a_dict_of_shuffled_series():
    df = _frame()
    shuffled = df.sample(frac=1.0, random_state=3)
    got = ofijax.group_confusion_matrices(df.y, df.p, {"g": shuffled.g, "h": shuffled.h.iloc[::-1]})
    ref = _reference_cms(df)
    groups = [tuple(g) for g in np.asarray(got.groups, dtype=object)]
    assert {g: list(np.asarray(c)) for g, c in zip(groups, np.asarray(got.cms), strict=True)} == ref
    # the position-matched answer would differ (so this test can fail)
    pos = ofijax.group_confusion_matrices(df.y.to_numpy(), df.p.to_numpy(),
                                          {"g": shuffled.g.to_numpy(), "h": shuffled.h.to_numpy()[::-1]})
    assert np.asarray(pos.cms).tolist() != np.asarray(got.cms).tolist()


def test_a_dict_column_with_other_rows_is_refused_naming_it():
    df = _frame()
    with pytest.raises(ValueError, match=r"^sensitive_features\['h'\]: its pandas index"):
        ofijax.group_confusion_matrices(df.y, df.p, {"g": df.g, "h": df.h.iloc[:-1]})


def test_align_pandas_returns_dicts_with_their_keys_in_order():
    a = pd.Series([1, 0, 1], index=["x", "y", "z"])
    b = pd.Series([0, 1, 1], index=["z", "x", "y"])
    out = align_pandas(y_true=a, groups={"k2": b, "k1": np.array([5, 6, 7])}, w=None)
    assert list(out) == ["y_true", "groups", "w"]
    assert list(out["groups"]) == ["k2", "k1"]
    assert out["groups"]["k2"].tolist() == [1, 1, 0]
    assert out["groups"]["k1"].tolist() == [5, 6, 7]
    assert out["w"] is None


def test_a_dict_first_sets_the_reference_index():
    a = pd.Series([1, 0, 1], index=["x", "y", "z"])
    b = pd.Series([0, 1, 1], index=["z", "x", "y"])
    out = align_pandas(sensitive_features={"g": a}, y_pred=b)
    assert out["y_pred"].index.tolist() == ["x", "y", "z"]
    assert out["y_pred"].tolist() == [1, 1, 0]
