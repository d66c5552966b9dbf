"""The shared internals of ofijax._validation: the PRNG-key policy and the pandas policy."""

import jax
import numpy as np
import pandas as pd
import pytest

from ofijax._validation import align_pandas, as_key, device_array


def _data(k):
    return np.asarray(jax.random.key_data(k))


@pytest.mark.parametrize("x64", [False, True])
def test_as_key_accepts_keys_and_int_seeds(x64):
    with jax.enable_x64(x64):
        typed = jax.random.key(7)
        assert as_key(typed) is typed
        raw = jax.random.PRNGKey(7)
        assert as_key(raw) is raw
        batch = jax.random.split(jax.random.key(0), 3)
        assert as_key(batch).shape == (3,)
        for seed in (7, np.int64(7), np.uint32(7), np.int8(7)):
            assert np.array_equal(_data(as_key(seed)), _data(jax.random.key(7)))
        # all 64 bits count, in both modes: seeds 2**32 apart differ
        assert not np.array_equal(_data(as_key(2**32 + 5)), _data(as_key(5)))
        assert _data(as_key(2**32 + 5)).tolist() == [1, 5]
        assert _data(as_key(2**64 - 1)).tolist() == [2**32 - 1, 2**32 - 1]


@pytest.mark.parametrize(
    "bad", [True, np.bool_(False), 1.0, np.float32(2), 2**70, -1, "0", None, [0, 1],
            np.array([1, 2, 3], np.uint32), np.zeros(2, np.float32)]
)
def test_as_key_refuses_everything_else_with_a_type_error_naming_key(bad):
    with pytest.raises(TypeError, match="^key"):
        as_key(bad)
    with pytest.raises(TypeError, match="^seed"):
        as_key(bad, "seed")


def test_align_pandas_passes_through_and_aligns_a_permuted_index():
    a = pd.Series([1, 0, 1], index=["x", "y", "z"])
    b = pd.Series([0, 1, 1], index=["z", "x", "y"])
    arr = np.array([5, 6, 7])
    out = align_pandas(y_true=a, y_pred=b, weights=arr, none=None)
    assert list(out) == ["y_true", "y_pred", "weights", "none"]
    assert out["y_true"] is a and out["weights"] is arr and out["none"] is None
    assert out["y_pred"].tolist() == [1, 1, 0] and list(out["y_pred"].index) == ["x", "y", "z"]
    df = pd.DataFrame({"g": ["u", "v", "w"]}, index=["y", "z", "x"])
    assert align_pandas(y=a, groups=df)["groups"]["g"].tolist() == ["w", "u", "v"]
    # the first pandas argument is the reference even after plain arrays
    assert align_pandas(p=arr, q=b, r=a)["r"].tolist() == [1, 1, 0]


@pytest.mark.parametrize(
    "index", [["x", "y", "w"], ["x", "y"], ["x", "y", "z", "w"], ["x", "x", "y"]]
)
def test_align_pandas_refuses_a_mismatch(index):
    a = pd.Series([1, 0, 1], index=["x", "y", "z"])
    b = pd.Series(np.zeros(len(index)), index=index)
    with pytest.raises(ValueError, match="^y_pred: its pandas index .*y_true's index"):
        align_pandas(y_true=a, y_pred=b)


def test_device_array_keeps_dtype_and_values():
    with jax.enable_x64(True):
        for x, dt in [(np.arange(5, dtype=np.int32), None), ([1, 2], np.float64),
                      (np.float64(0.25), np.float64), (np.arange(3), np.int64)]:
            a = device_array(x, dt)
            ref = np.asarray(x, dtype=dt)
            assert isinstance(a, jax.Array) and a.dtype == ref.dtype and a.shape == ref.shape
            np.testing.assert_array_equal(np.asarray(a), ref)
