"""The one set of argument checks of the public scans (:mod:`ofijax.scan`).

Every public scan validates its options here, once, before any encoding or compilation; each
check raises one ``ValueError``/``TypeError`` whose message starts with the argument's name.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from .._validation import as_key, check_choice, check_nonnegative_scalar

__all__ = [
    "ScanOptions",
    "RandomOptions",
    "check_scan_options",
    "check_random_options",
    "check_int",
    "check_beneficial_label",
    "resolve_data_alias",
    "DEFAULT_Q_BOUNDS",
    "DEFAULT_P_EPSILON",
    "NULL_KINDS",
]

#: Default bracket for the odds multiplier q (the IJDI reference's); AIF360 uses (1e-3, 1e3).
DEFAULT_Q_BOUNDS = (1e-6, 1e6)
#: Default clamp of null rates into [ε, 1 − ε] where they enter FPR-/TPR-/IJDI-Scan.
DEFAULT_P_EPSILON = 1e-6
#: The scans' null models (randomization tests).
NULL_KINDS = ("bernoulli", "permutation")


class ScanOptions(NamedTuple):
    """Validated search options."""

    penalty: float
    q_bounds: tuple[float, float]
    num_restarts: int
    max_steps: int | None
    p_epsilon: float
    top_k: int | None


class RandomOptions(NamedTuple):
    """Validated randomization options: ``key`` is a PRNG key (``jax.random.key(0)`` when the
    caller gave none and only restarts' tie-breaking uses it)."""

    key: Any
    num_samples: int
    null: str
    replicate_chunk: int | None


def check_int(value: Any, name: str, minimum: int, allow_none: bool = False) -> int | None:
    """``value`` as an int ≥ ``minimum`` (``None`` passes when ``allow_none``), else ValueError."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        extra = " or None" if allow_none else ""
        raise ValueError(f"{name}: must be an integer ≥ {minimum}{extra}; got {value!r}.")
    return int(value)


def check_scan_options(*, penalty: Any, q_bounds: Any, num_restarts: Any, max_steps: Any,
                       p_epsilon: Any = DEFAULT_P_EPSILON, top_k: Any = None) -> ScanOptions:
    """Validate the options every scan shares (see :func:`~ofijax.scan.bias_scan`)."""
    pen = check_nonnegative_scalar(penalty, "penalty")
    try:
        lo, hi = float(q_bounds[0]), float(q_bounds[1])
        if len(q_bounds) != 2:
            raise ValueError
    except Exception as exc:
        raise ValueError(f"q_bounds: must be a pair (q_lo, q_hi); got {q_bounds!r}.") from exc
    if not (0 < lo < 1 < hi < math.inf):
        raise ValueError(
            f"q_bounds: must satisfy 0 < q_lo < 1 < q_hi < inf; got {q_bounds!r} "
            "(default (1e-6, 1e6); AIF360 uses (1e-3, 1e3))."
        )
    restarts = check_int(num_restarts, "num_restarts", 1)
    steps = check_int(max_steps, "max_steps", 1, allow_none=True)
    eps = check_nonnegative_scalar(p_epsilon, "p_epsilon")
    if eps >= 0.5:
        raise ValueError(f"p_epsilon: must be in [0, 0.5); got {p_epsilon!r}.")
    k = check_int(top_k, "top_k", 1, allow_none=True)
    return ScanOptions(pen, (lo, hi), restarts, steps, eps, k)


def check_random_options(*, key: Any, num_samples: Any, num_replicates: Any, null: Any,
                         replicate_chunk: Any, stacklevel: int = 3) -> RandomOptions:
    """Validate the randomization options; map the deprecated ``num_replicates``.

    ``key=None`` is allowed only without replicates (then ``jax.random.key(0)`` breaks the
    restarts' ties, a deterministic default); a requested randomization test needs an explicit
    key (a ``jax.random.key`` or an int seed, see :func:`ofijax._validation.as_key`).
    """
    if num_replicates is not None:
        warnings.warn(
            "num_replicates is deprecated; use num_samples (the library-wide name for the number "
            "of random draws).", DeprecationWarning, stacklevel=stacklevel)
        if num_samples not in (None, 0) and num_samples != num_replicates:
            raise ValueError(
                "num_samples: given together with the deprecated num_replicates; pass only "
                "num_samples."
            )
        num_samples = num_replicates
    r = check_int(0 if num_samples is None else num_samples, "num_samples", 0)
    check_choice(null, "null", NULL_KINDS)
    chunk = check_int(replicate_chunk, "replicate_chunk", 1, allow_none=True)
    if key is None:
        if r > 0:
            raise TypeError(
                f"key: required when num_samples > 0 (the randomization test draws {r} random "
                "null data sets); pass key=jax.random.key(0) or an int seed."
            )
        key = as_key(0, "key")  # jax.random.key(0), without compiling a program
    else:
        key = as_key(key, "key")
        if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.wrap_key_data(np.asarray(key))
        if key.shape != ():
            raise TypeError(f"key: must be a single key, not a batch of shape {key.shape}.")
    return RandomOptions(key, r, null, chunk)


def check_beneficial_label(value: Any) -> int:
    """0 or 1 (which label value of ``y_true``/``y_pred`` is the beneficial outcome)."""
    if isinstance(value, bool) or value not in (0, 1):
        raise ValueError(
            f"beneficial_label: must be 1 (label 1 = the beneficial outcome, the default) or 0 "
            f"(the data's 1 is the harmful outcome, e.g. COMPAS recidivism); got {value!r}."
        )
    return int(value)


def resolve_data_alias(data: Any, group: Any) -> Any:
    """``data`` or its alias ``group`` (exactly one of them)."""
    if group is not None:
        if data is not None:
            raise ValueError("group: an alias of data; pass only one of data and group.")
        return group
    if data is None:
        raise ValueError(
            "data: required; pass a DataFrame (or 2-D array) of the attribute columns to scan "
            "(`group=` is accepted as an alias)."
        )
    return data
