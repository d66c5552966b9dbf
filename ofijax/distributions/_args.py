"""The distributions package's argument checks and its one null rule.

Owns the checks every public function of :mod:`ofijax.distributions` applies to its arguments
(group sizes, the samplers' int32 limit, ``num_samples``, shapes, probabilities, Dirichlet
concentrations, a reference CM), each raising one ValueError that starts with the argument's
name, and :func:`null_probs`: ``null`` ("uniform", "pooled" or a reference CM) as cell
probabilities p = cm / Σ cm, the one reading of ``null`` for PMFs, thresholds, sweeps and
p-values.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from ofijax import _validation as _v


def check_n(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise ValueError(
            f"{name}: must be a positive Python integer (a number of samples); got {n!r} "
            f"of type {type(n).__name__}."
        )
    n = int(n)
    if n <= 0:
        raise ValueError(f"{name}: must be a positive integer (n ≥ 1); got {n}.")
    return n


#: Largest n the samplers draw (int32 counts); larger n is refused with a clear error.
SAMPLER_MAX_N = 2**31 - 4  # stars and bars draws positions in [0, n + 3)


def check_sampler_n(n: Any) -> int:
    n = check_n(n)
    if n > SAMPLER_MAX_N:
        raise ValueError(
            f"n: the samplers return int32 counts, so n must be at most 2**31 − 4 = {SAMPLER_MAX_N:,}; got {n:,}. "
            "Draw smaller groups (B = (FP − FN)/n is scale-free) or use the exact/saddlepoint tools."
        )
    return n


def check_num_samples(num: Any) -> int:
    if isinstance(num, bool) or not isinstance(num, Real):
        raise ValueError(f"num_samples: must be a positive integer; got {num!r}.")
    if isinstance(num, Integral):
        val = int(num)
    else:
        f = float(num)
        if not math.isfinite(f) or f != math.floor(f):
            raise ValueError(f"num_samples: must be a whole number; got {num!r}.")
        val = int(f)
    if val <= 0:
        raise ValueError(f"num_samples: must be ≥ 1; got {num!r}.")
    return val


def check_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, Integral):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError as exc:
        raise ValueError(f"shape: must be a tuple of non-negative ints; got {shape!r}.") from exc
    if any(s < 0 for s in out) or any(
        isinstance(s, bool) or not isinstance(s, Integral) for s in shape
    ):
        raise ValueError(f"shape: must be a tuple of non-negative ints; got {shape!r}.")
    return out


def _check_four(x: Any, name: str) -> np.ndarray:
    arr = _v.as_numpy(x, name)
    if arr.shape != (4,):
        raise ValueError(
            f"{name}: must hold exactly 4 values in TP, FN, FP, TN order; got shape {arr.shape}."
        )
    return arr


def check_probs(probs: Any, name: str = "probs") -> tuple[float, ...]:
    arr = _check_four(probs, name)
    arr = _v.check_probabilities(arr, name)
    if abs(arr.sum() - 1.0) > 1e-6:
        raise ValueError(
            f"{name}: the 4 probabilities must sum to 1; they sum to {arr.sum():.8g}. "
            "Normalise them (p / p.sum())."
        )
    return tuple(float(v) for v in arr / arr.sum())


def check_alpha(alpha: Any) -> tuple[float, ...]:
    arr = _check_four(alpha, "alpha")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"alpha: must be 4 positive concentrations; got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    _v.check_finite(arr, "alpha")
    if np.any(arr <= 0):
        raise ValueError(
            f"alpha: Dirichlet concentrations must all be > 0; got {arr.tolist()}. "
            "Use alpha = (1, 1, 1, 1) for the uniform distribution on M(n)."
        )
    return tuple(float(v) for v in arr)


def check_cm(cm: Any, name: str = "cm") -> tuple[int, ...]:
    arr = _check_four(cm, name)
    arr = _v.check_counts(arr, name)
    total = sum(int(v) for v in arr)  # Python ints: int64 sums of huge counts wrap
    if total <= 0:
        raise ValueError(f"{name}: the confusion matrix is empty (all four counts are 0).")
    if total > 2**63 - 1:
        raise ValueError(f"{name}: the four counts must sum to at most 2**63 − 1; got {total:,}.")
    return tuple(int(v) for v in arr)


def one_null_probs(null: Any) -> tuple[float, ...] | None:
    """None for the uniform null, else p = cm / Σ cm from ONE reference CM (or probabilities)."""
    p = null_probs(null, "null")
    if p is None:
        return None
    if p.shape != (4,):
        raise ValueError(f"null: must be one reference CM of 4 counts here; got shape {p.shape[:-1] + (4,)}.")
    return tuple(float(v) for v in p)


def null_probs(null, name: str = "null", pooled=None):
    """(..., 4) float64 p = cm / Σ cm of a reference CM (or of ``pooled`` for "pooled"); None = uniform."""
    if isinstance(null, str):
        _v.check_choice(null, name, ("uniform",) if pooled is None else ("uniform", "pooled"))
        if null == "uniform":
            return None
        arr = np.asarray(pooled, dtype=np.float64)
    else:
        arr = _v.as_numpy(null, name)
        if arr.dtype.kind not in "biuf" or arr.ndim < 1 or arr.shape[-1] != 4:
            raise ValueError(
                f"{name}: must be 'uniform' or a reference CM of 4 non-negative counts (TP, FN, FP, TN) "
                f"along the last axis; got {arr.dtype} of shape {arr.shape}."
            )
        arr = arr.astype(np.float64)
        _v.check_finite(arr, name)
        if np.any(arr < 0) or np.any(arr.sum(-1) <= 0):
            raise ValueError(
                f"{name}: a reference CM must hold 4 non-negative counts with a positive total."
            )
    return arr / arr.sum(-1, keepdims=True)
