"""Metrics of the OFI paper over confusion matrices ``(..., 4)`` = TP, FN, FP, TN.

Every metric is a pure function that broadcasts over leading axes, so ``jit``, ``vmap`` and
``grad`` are the caller's choice. Counts may be floats (soft confusion matrices). Undefined values
(a zero denominator) are NaN, never ±inf, and divisions use the double-``where`` so gradients stay
finite at zero cells.

On concrete inputs (outside ``jit``) the metrics check their argument: the last axis must have
length 4, counts must be finite and non-negative, and no group may be empty (n = 0). Under
``jit``/``vmap``/``grad`` these checks are skipped and an empty group gives NaN.

**Dtypes.** On concrete inputs every metric is computed in **float64** under a local
``jax.enable_x64(True)`` and returns a float64 array, whatever ``jax_enable_x64`` says, so int64
counts ≥ 2³¹ (or float16 counts) are never wrapped or rounded before the division: B, OFI and DI
are the correctly rounded float64 values of the exact fractions. On traced inputs (inside
``jit``/``vmap``/``grad``, e.g. soft confusion matrices in training) the metric runs in the traced
float dtype — float32 by default, float64 under x64 — with integer and float16/bfloat16 counts
promoted to at least float32; that throughput path is exact to float32 rounding (relative error
≲ 1e-7 per operation) for counts below 2²⁴.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as v
from ofijax.cm import FN, FP, TN, TP


def _is_concrete(*xs: Any) -> bool:
    return not any(v.is_tracer(x) for x in xs)


def _exact(fn: Callable) -> Callable:
    """Run ``fn`` under ``jax.enable_x64(True)`` when none of its array arguments is traced.

    Concrete inputs are then converted to float64 by :func:`_as_cm` and the result is a float64
    array whatever the global x64 flag; traced inputs run unchanged in the traced dtype.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        arrays = [a for a in (*args, *kwargs.values()) if not callable(a)]
        if _is_concrete(*arrays):
            with jax.enable_x64(True):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


#: Count arrays at least this large (entries) take the jitted eager path; smaller calls run op by
#: op (no compilation per new shape for the many small calls of audits and doctests).
_EAGER_JIT_MIN = 1 << 16


#: Rows per transfer of the jitted eager path: 8 MB of int64 per argument. One transfer of a
#: whole array above glibc's mmap threshold (≤ 32 MB) gets fresh pages on every call and the
#: page faults dominate (see experiments/notes/samplers.md).
_EAGER_CHUNK = 1 << 18


def _chunked(jitted: Callable, args: tuple) -> tuple[jax.Array, bool]:
    """``jitted`` over blocks of ``_EAGER_CHUNK`` rows of same-shaped (..., 4) arrays (the last
    block padded with valid rows), results gathered into one float64 array; same values."""
    flat = [a.reshape(-1, 4) for a in args]
    rows = flat[0].shape[0]
    out = np.empty(rows, np.float64)
    bad = False
    for start in range(0, rows, _EAGER_CHUNK):
        blocks = [f[start:start + _EAGER_CHUNK] for f in flat]
        m = blocks[0].shape[0]
        if m < _EAGER_CHUNK:  # one program for every call: pad with ones (n = 4, checks pass)
            blocks = [np.concatenate([b, np.ones((_EAGER_CHUNK - m, 4), b.dtype)]) for b in blocks]
        res, b_bad = jitted(*(v.device_array(b, np.int64) for b in blocks))
        out[start:start + m] = np.asarray(res)[:m]
        bad = bad or bool(b_bad)
    return v.device_array(out.reshape(args[0].shape[:-1])), bad


def _eager_jit(*names: str) -> Callable:
    """Large concrete integer count arrays, NumPy or JAX (the common eager calls: loaded data, a
    sampler's draws), run as ONE jitted float64 program (x64 switched on locally) that also
    checks them (negative, empty or ≥ 2^53 counts); only when a check fails does the call rerun
    on :func:`_exact`'s path, which raises its usual message. The same correctly rounded float64
    values (integers < 2^53 convert exactly; IEEE operations); 2e6 matrices: ~10x faster than
    op by op (2 × 2^20 JAX int32 draws: ~4.5 ms against ~210 ms). Other inputs take
    :func:`_exact`'s path."""

    def deco(fn: Callable) -> Callable:
        exact = _exact(fn)

        def checked(*cs):
            cs = [c.astype(jnp.int64) for c in cs]  # JAX int32 draws arrive as they are
            bad = jnp.zeros((), bool)
            for c in cs:
                n = c[..., TP] + c[..., FN] + c[..., FP] + c[..., TN]
                bad = bad | jnp.any(c < 0) | jnp.any(n <= 0) | jnp.any(c >= 2**53)
            return fn(*cs), bad

        jitted = jax.jit(checked)

        @functools.wraps(fn)
        def wrapper(*args):
            if (len(args) == len(names)
                    and all(isinstance(a, (np.ndarray, jax.Array)) and not v.is_tracer(a)
                            and np.dtype(a.dtype).kind in "iu" and a.ndim >= 1
                            and a.shape[-1] == 4 for a in args)
                    and max(a.size for a in args) >= _EAGER_JIT_MIN):
                try:
                    np.broadcast_shapes(*(a.shape for a in args))
                except ValueError:
                    return exact(*args)  # _pair's message
                numpy = all(isinstance(a, np.ndarray) for a in args)
                with jax.enable_x64(True):
                    if (numpy and len({a.shape for a in args}) == 1
                            and args[0].size // 4 > _EAGER_CHUNK):
                        out, bad = _chunked(jitted, args)
                    else:  # JAX arrays (e.g. a sampler's draws) stay where they are
                        out, bad = jitted(*(a if isinstance(a, jax.Array)
                                            else v.device_array(a, np.int64) for a in args))
                if not bool(bad):
                    return out
            return exact(*args)  # the checks and their messages (negative, empty, huge counts)

        return wrapper

    return deco


def _float_dtype(dtype: Any) -> Any:
    """The float dtype a traced metric computes in: at least float32, else the default float."""
    if jnp.issubdtype(dtype, jnp.floating):
        return jnp.promote_types(dtype, jnp.float32)
    return jnp.result_type(float)


def _as_cm(cm: Any, name: str = "cm") -> jax.Array:
    """Return ``cm`` as a float JAX array (float64 when concrete), validating concrete inputs."""
    if v.is_tracer(cm):
        return cm.astype(_float_dtype(cm.dtype))
    if cm is None:
        raise ValueError(f"{name}: must be (..., 4) counts TP, FN, FP, TN; got None.")
    raw = v.as_numpy(cm, name)
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"{name}: must be numeric counts, got dtype {raw.dtype}.")
    if raw.ndim < 1 or raw.shape[-1] != 4:
        raise ValueError(
            f"{name}: last axis must have length 4 (TP, FN, FP, TN); got shape {raw.shape}. "
            "Convert scikit-learn's [[TN, FP], [FN, TP]] with ofijax.from_sklearn."
        )
    raw = raw.astype(np.float64)
    v.check_finite(raw, name)
    if np.any(raw < 0):
        raise ValueError(f"{name}: counts must be non-negative; got a negative value.")
    n = raw.sum(-1)
    if np.any(n <= 0):
        idx = np.argwhere(np.atleast_1d(n <= 0))[0].tolist() if raw.ndim > 1 else []
        where = f" (at index {tuple(idx)})" if idx else ""
        raise ValueError(
            f"{name}: a confusion matrix has n = 0{where}; metrics of an empty group are "
            "undefined. Drop empty groups first."
        )
    # float64 inside the metrics' local x64 context; the default float when mixed with tracers.
    return jnp.asarray(raw.astype(jnp.result_type(float)))


def _pair(cm_i: Any, cm_j: Any) -> tuple[jax.Array, jax.Array]:
    """Validate two groups' confusion matrices and check that their leading axes broadcast."""
    ci, cj = _as_cm(cm_i, "cm_i"), _as_cm(cm_j, "cm_j")
    try:
        np.broadcast_shapes(ci.shape, cj.shape)
    except ValueError:
        raise ValueError(
            f"cm_j: shape {cj.shape} does not broadcast with cm_i's shape {ci.shape}; pass "
            "matrices with matching leading axes (or use pairwise(metric, cms) for all pairs)."
        ) from None
    return ci, cj


def _total(c: jax.Array) -> jax.Array:
    """n = TP + FN + FP + TN as explicit adds.

    ``c.sum(-1)`` over the length-4 minor axis compiles to a slow, unvectorised reduction on
    XLA's CPU backend (measured ~30x slower for float counts); four adds fuse into one loop.
    """
    return c[..., TP] + c[..., FN] + c[..., FP] + c[..., TN]


def safe_divide(num: jax.Array, den: jax.Array) -> jax.Array:
    """``num / den`` with NaN where ``den == 0`` and finite gradients everywhere (double ``where``)."""
    zero = den == 0
    den_safe = jnp.where(zero, jnp.ones_like(den), den)
    return jnp.where(zero, jnp.full_like(num / den_safe, jnp.nan), num / den_safe)


@_exact
def group_size(cm: Any) -> jax.Array:
    """n = TP + FN + FP + TN."""
    return _total(_as_cm(cm))


@_exact
def benefit(cm: Any) -> jax.Array:
    r"""Group benefit, the positive-prediction rate (paper eq. 2).

    .. math:: b = \hat P / n = (TP + FP) / n

    Examples:
        Table 1, scenario A, group j:

        >>> import ofijax
        >>> float(ofijax.benefit([7, 0, 1, 10]))  # 8/18
        0.4444...
    """
    c = _as_cm(cm)
    return safe_divide(c[..., TP] + c[..., FP], _total(c))


@_exact
def expected_benefit(cm: Any) -> jax.Array:
    r"""Expected benefit, the positive-label rate (paper eq. 3).

    .. math:: \mathbb{E}[b] = P / n = (TP + FN) / n

    Examples:
        >>> import ofijax
        >>> float(ofijax.expected_benefit([7, 0, 1, 10]))  # 7/18
        0.3888...
    """
    c = _as_cm(cm)
    return safe_divide(c[..., TP] + c[..., FN], _total(c))


@_eager_jit("cm")
def marginal_benefit(cm: Any) -> jax.Array:
    r"""Marginal benefit B (paper eq. 4): benefit minus expected benefit.

    .. math:: \mathcal{B} = b - \mathbb{E}[b] = (FP - FN) / n \in [-1, 1]

    B < 0 is an unjust lack of benefit, B > 0 an unjust surplus. Defined for every n > 0.

    Examples:
        Table 1, scenario B: group i gets −1/6, group j −7/18.

        >>> import ofijax
        >>> [round(x, 4) for x in ofijax.marginal_benefit([[0, 1, 0, 5], [0, 7, 0, 11]]).tolist()]
        [-0.1667, -0.3889]
    """
    c = _as_cm(cm)
    return safe_divide(c[..., FP] - c[..., FN], _total(c))


@_eager_jit("cm_i", "cm_j")
def ofi(cm_i: Any, cm_j: Any) -> jax.Array:
    r"""Objective Fairness Index (paper eq. 5): the difference of marginal benefits.

    .. math:: OFI = \mathcal{B}_i - \mathcal{B}_j
              = \frac{FP_i - FN_i}{n_i} - \frac{FP_j - FN_j}{n_j} \in [-2, 2]

    OFI > 0: group i gets more unjust benefit than j (bias for i); OFI < 0: bias for j.

    Examples:
        Table 1: scenario A gives −1/18 (paper −0.06), B gives 2/9 (0.22), α gives 30/133 (0.23).

        >>> import ofijax
        >>> cm_i = [[1, 0, 0, 5], [0, 1, 0, 5], [1, 1, 0, 5]]
        >>> cm_j = [[7, 0, 1, 10], [0, 7, 0, 11], [1, 7, 0, 11]]
        >>> [round(x, 4) for x in ofijax.ofi(cm_i, cm_j).tolist()]
        [-0.0556, 0.2222, 0.2256]
    """
    ci, cj = _pair(cm_i, cm_j)
    return marginal_benefit(ci) - marginal_benefit(cj)


_DI_VARIANTS = ("paper", "pp_over_p")
_UNDEFINED = ("nan", "one")


@_exact
def disparate_impact(
    cm_i: Any, cm_j: Any, *, variant: str = "paper", undefined: str = "nan"
) -> jax.Array:
    r"""Disparate impact of group i relative to group j.

    ``variant="paper"`` (default, paper eq. 1) compares positive-prediction rates:

    .. math:: DI = \frac{\hat P_i / n_i}{\hat P_j / n_j}

    ``variant="pp_over_p"`` is the authors' 2024 code (used for the published heatmaps):
    g = P̂ / P = (TP + FP) / (TP + FN) and DI = g_i / g_j. Use it only to reproduce figures.

    The ratio is directional; the four-fifths rule as regulators read it uses the symmetric
    :func:`impact_ratio` (lower rate over higher), which does not depend on which group is i.

    Undefined values: the paper variant is undefined when group j has no positive predictions;
    the code variant also when either group has no positive labels. They are NaN. With
    ``undefined="one"``, the 0/0 case (both ratios zero, "equal positive rates" — the paper's
    Scenario B, "1 by context") is 1; x/0 with x > 0 stays NaN.

    Examples:
        Table 1: A gives 0.375 (paper 0.38), B gives NaN (1 by context), α gives 19/7 ≈ 2.714.

        >>> import ofijax
        >>> cm_i = [[1, 0, 0, 5], [0, 1, 0, 5], [1, 1, 0, 5]]
        >>> cm_j = [[7, 0, 1, 10], [0, 7, 0, 11], [1, 7, 0, 11]]
        >>> [round(x, 3) for x in ofijax.disparate_impact(cm_i, cm_j).tolist()]
        [0.375, nan, 2.714]
        >>> [round(x, 3) for x in ofijax.disparate_impact(cm_i, cm_j, undefined="one").tolist()]
        [0.375, 1.0, 2.714]
    """
    v.check_choice(variant, "variant", _DI_VARIANTS)
    v.check_choice(undefined, "undefined", _UNDEFINED)
    ci, cj = _pair(cm_i, cm_j)
    if variant == "paper":
        ri = safe_divide(ci[..., TP] + ci[..., FP], _total(ci))
        rj = safe_divide(cj[..., TP] + cj[..., FP], _total(cj))
    else:
        ri = safe_divide(ci[..., TP] + ci[..., FP], ci[..., TP] + ci[..., FN])
        rj = safe_divide(cj[..., TP] + cj[..., FP], cj[..., TP] + cj[..., FN])
    di = safe_divide(ri, rj)
    if undefined == "one":
        di = jnp.where((ri == 0) & (rj == 0), jnp.ones_like(di), di)
    return di


def _cross_rates(ci: jax.Array, cj: jax.Array, variant: str) -> tuple[jax.Array, jax.Array]:
    """``(r_i d_i d_j, r_j d_i d_j)`` = ``(P̂_i d_j, P̂_j d_i)`` with d = n (``"paper"``) or P
    (``"pp_over_p"``): the two rates on one denominator, so their ratio is one rounding of the exact
    fraction (products of counts below 2⁵³ are exact); NaN where a rate is undefined (d = 0)."""
    if variant == "paper":
        di_, dj_ = _total(ci), _total(cj)
    else:
        di_, dj_ = ci[..., TP] + ci[..., FN], cj[..., TP] + cj[..., FN]
    a = (ci[..., TP] + ci[..., FP]) * dj_
    b = (cj[..., TP] + cj[..., FP]) * di_
    bad = (di_ == 0) | (dj_ == 0)
    nan = jnp.full_like(a, jnp.nan)
    return jnp.where(bad, nan, a), jnp.where(bad, nan, b)


@_exact
def impact_ratio(cm_i: Any, cm_j: Any, *, variant: str = "paper") -> jax.Array:
    r"""Impact ratio of two groups: the lower selection rate over the higher (symmetric).

    .. math:: IR = \frac{\min(r_i, r_j)}{\max(r_i, r_j)} \in [0, 1], \qquad r = \hat P / n

    computed as min(P̂_i n_j, P̂_j n_i) / max(...) (one rounding of the exact fraction on concrete
    counts).

    This is the ratio of the four-fifths rule as regulators define it (NYC Local Law 144: a
    category's selection rate over the most-selected category's rate): IR < 4/5 fails. It does
    not depend on which group is called i, so a group that selects no one against one that selects
    someone gives 0 (fails) whatever their names; it is NaN only when both rates are 0 (or, for
    ``variant="pp_over_p"`` with r = P̂/P, when a group has no positive labels). The directional
    :func:`disparate_impact` r_i / r_j is NaN whenever r_j = 0.

    Examples:
        >>> import ofijax
        >>> [round(x, 3) for x in ofijax.impact_ratio([[0, 5, 0, 20], [1, 0, 0, 5]],
        ...                                             [[3, 2, 2, 18], [7, 0, 1, 10]]).tolist()]
        [0.0, 0.375]
        >>> float(ofijax.impact_ratio([0, 1, 0, 5], [0, 7, 0, 11]))  # nobody selected in either
        nan
    """
    v.check_choice(variant, "variant", _DI_VARIANTS)
    ci, cj = _pair(cm_i, cm_j)
    ri, rj = _cross_rates(ci, cj, variant)
    return safe_divide(jnp.minimum(ri, rj), jnp.maximum(ri, rj))


@_exact
def four_fifths_pair(cm_i: Any, cm_j: Any, *, variant: str = "paper") -> jax.Array:
    r"""The four-fifths rule on a pair of groups, read from the symmetric :func:`impact_ratio`.

    .. math:: \text{fails} \iff \min(r_i, r_j) / \max(r_i, r_j) < 4/5

    +1: fails, j is selected less; −1: fails, i is selected less; 0: passes; NaN: undefined (both
    rates 0). Swapping i and j negates the result, and renaming groups changes nothing: 0 selected
    of 25 against any positive rate fails. Exact ties (IR = 4/5 up to rounding) pass.

    Examples:
        >>> import ofijax
        >>> ofijax.four_fifths_pair([[0, 5, 0, 20], [3, 2, 2, 18], [1, 1, 1, 1]],
        ...                         [[3, 2, 2, 18], [0, 5, 0, 20], [1, 1, 1, 1]])
        Array([-1.,  1.,  0.], dtype=float64)
    """
    v.check_choice(variant, "variant", _DI_VARIANTS)
    ci, cj = _pair(cm_i, cm_j)
    ri, rj = _cross_rates(ci, cj, variant)
    ir = safe_divide(jnp.minimum(ri, rj), jnp.maximum(ri, rj))
    tol = _tie_tolerance(ir.dtype)
    out = jnp.where(ir < 0.8 - tol, jnp.sign(ri - rj), jnp.zeros_like(ir))
    return jnp.where(jnp.isnan(ir), jnp.nan, out)


@_exact
def treatment_equality(cm_i: Any, cm_j: Any) -> jax.Array:
    r"""Treatment equality: the difference of FN/FP ratios.

    .. math:: TE = FN_i / FP_i - FN_j / FP_j

    A larger TE means bias *toward* i (the opposite reading from OFI and DI). Undefined (NaN)
    whenever either group has FP = 0.

    Examples:
        >>> import ofijax
        >>> float(ofijax.treatment_equality([1, 2, 1, 0], [1, 1, 2, 0]))  # 2/1 - 1/2
        1.5
        >>> import math
        >>> math.isnan(ofijax.treatment_equality([1, 0, 0, 5], [7, 0, 1, 10]))  # FP_i = 0
        True
    """
    ci, cj = _pair(cm_i, cm_j)
    return safe_divide(ci[..., FN], ci[..., FP]) - safe_divide(cj[..., FN], cj[..., FP])


def _tie_tolerance(dtype: Any) -> float:
    """Rounding slack for the strict inequalities of the flag rules.

    Values computed from counts carry rounding error (3/10 − 0 evaluates to 0.30000000000000004 in
    float64), so an exact tie with the threshold must not be flagged. The slack is 16 ulps at 1 of
    the float type the values were computed in (≈ 2e-6 for float32, 4e-15 for float64), far below
    any meaningful gap.
    """
    return 16 * float(jnp.finfo(dtype).eps)


def _flag_values(x: Any, name: str, *, bound: float | None, lower: float | None) -> tuple:
    """``(array, tolerance)`` for a flag rule; concrete values are checked and made float64.

    The tolerance follows the dtype the values came in (float32 values keep float32's slack).
    """
    if v.is_tracer(x):
        d = x.astype(_float_dtype(x.dtype))
        return d, _tie_tolerance(d.dtype)
    if x is None:
        raise ValueError(f"{name}: must be numeric values; got None.")
    raw = v.as_numpy(x, name)
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{name}: must be numeric values, got dtype {raw.dtype}.")
    src = raw.dtype if raw.dtype.kind == "f" and raw.dtype.itemsize < 8 else np.float64
    tol = _tie_tolerance(src)
    d = raw.astype(np.float64)
    ok = np.isnan(d)
    if bound is not None:
        bad = ~ok & ~(np.abs(d) <= bound + tol)
        if bad.any():
            raise ValueError(
                f"{name}: OFI lies in [-{bound:g}, {bound:g}] (or is NaN where undefined); got "
                f"{d[bad].reshape(-1)[0]!r}. Pass OFI values, e.g. ofijax.ofi(cm_i, cm_j)."
            )
    if lower is not None:
        bad = ~ok & ~(d >= lower)
        if bad.any():
            raise ValueError(
                f"{name}: disparate impact is a ratio ≥ 0 (or NaN where undefined); got "
                f"{d[bad].reshape(-1)[0]!r}. Pass DI values, e.g. ofijax.disparate_impact(...)."
            )
    return jnp.asarray(d), tol


@_exact
def four_fifths_rule(di: Any) -> jax.Array:
    """Four-fifths (80 %) rule on a DI value: +1 bias for i (DI > 5/4), −1 bias for j (DI < 4/5), 0 none.

    NaN (undefined DI) stays NaN so that undefined pairs are never read as "no bias". Exact ties
    (DI = 5/4 or 4/5 up to rounding) are not flagged. ``di`` must be numeric and ≥ 0 (or NaN).
    For a pair of groups read :func:`four_fifths_pair` (from the symmetric :func:`impact_ratio`):
    DI = r_i / r_j is NaN when j selects no one, so this reading of it depends on which group is j.

    Examples:
        >>> import ofijax
        >>> ofijax.four_fifths_rule([0.375, 1.0, 2.714, float("nan")])
        Array([-1.,  0.,  1., nan], dtype=float64)
    """
    d, tol = _flag_values(di, "di", bound=None, lower=0.0)
    out = jnp.where(d > 1.25 + tol, 1.0, jnp.where(d < 0.8 - tol, -1.0, 0.0)).astype(d.dtype)
    return jnp.where(jnp.isnan(d), jnp.nan, out)


def _check_threshold(threshold: Any) -> Any:
    if v.is_tracer(threshold):
        return threshold
    if isinstance(threshold, (bool, np.bool_, str, bytes)) or threshold is None:
        raise ValueError(f"threshold: must be a number in [0, 2]; got {threshold!r}.")
    tau = v.check_nonnegative_scalar(threshold, "threshold")
    if tau > 2:
        raise ValueError(
            f"threshold: must lie in [0, 2] (|OFI| ≤ 2, the paper uses 0.3); got {threshold!r}."
        )
    return tau


@_exact
def ofi_flag(ofi_value: Any, threshold: float = 0.3) -> jax.Array:
    """Flag an OFI value with the four-fifths coding: +1 bias for i (OFI > τ), −1 bias for j (OFI < −τ).

    The default τ = 0.3 is the paper's threshold, which is (roughly) the standard deviation of B for
    one group under the uniform distribution over confusion matrices. Exact ties (|OFI| = τ up to
    float rounding) are not flagged. ``ofi_value`` must be numeric in [−2, 2] (or NaN) and
    τ ∈ [0, 2]. See :func:`ofijax.distributions.ofi_threshold` for two-group thresholds.

    Examples:
        >>> import ofijax
        >>> ofijax.ofi_flag([-0.06, 0.22, 0.5, -0.31])
        Array([ 0.,  0.,  1., -1.], dtype=float64)
    """
    tau = _check_threshold(threshold)
    o, tol = _flag_values(ofi_value, "ofi_value", bound=2.0, lower=None)
    out = jnp.where(o > tau + tol, 1.0, jnp.where(o < -tau - tol, -1.0, 0.0)).astype(o.dtype)
    return jnp.where(jnp.isnan(o), jnp.nan, out)


@_exact
def pairwise(metric: Callable[[jax.Array, jax.Array], jax.Array], cms: Any) -> jax.Array:
    """All-pairs matrix ``M[..., i, j] = metric(cms[..., i, :], cms[..., j, :])``.

    Args:
        metric: a two-group metric such as :func:`ofi` (use ``functools.partial`` for options).
        cms: ``(..., k, 4)`` confusion matrices.

    Returns:
        ``(..., k, k)``.

    Examples:
        >>> import ofijax
        >>> M = ofijax.pairwise(ofijax.ofi, [[1, 0, 0, 5], [7, 0, 1, 10]])
        >>> M.shape
        (2, 2)
        >>> [[round(x, 4) for x in row] for row in M.tolist()]
        [[0.0, -0.0556], [0.0556, 0.0]]
    """
    if not callable(metric):
        raise TypeError(
            f"metric: must be a two-group metric such as ofijax.ofi; got {type(metric).__name__}."
        )
    c = _as_cm(cms, "cms")
    if c.ndim < 2:
        raise ValueError(f"cms: must have shape (..., k, 4) with k groups; got {c.shape}.")
    return metric(c[..., :, None, :], c[..., None, :, :])


def _rate(num_cells, den_cells):
    @_exact
    def rate(cm: Any) -> jax.Array:
        c = _as_cm(cm)
        num = sum(c[..., i] for i in num_cells)
        den = sum(c[..., i] for i in den_cells)
        return safe_divide(num, den)

    return rate


def _make_rate(name: str, num_cells, den_cells, formula: str, example: str):
    fn = _rate(num_cells, den_cells)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{formula} NaN where the denominator is 0.

    Examples:
        >>> import ofijax
        {example}
    """
    return fn


true_positive_rate = _make_rate(
    "true_positive_rate", (TP,), (TP, FN), "TPR = TP / (TP + FN).",
    ">>> float(ofijax.true_positive_rate([1, 1, 2, 1]))\n        0.5",
)
false_positive_rate = _make_rate(
    "false_positive_rate", (FP,), (FP, TN), "FPR = FP / (FP + TN).",
    ">>> round(float(ofijax.false_positive_rate([1, 1, 2, 1])), 4)\n        0.6667",
)
false_negative_rate = _make_rate(
    "false_negative_rate", (FN,), (TP, FN), "FNR = FN / (TP + FN).",
    ">>> float(ofijax.false_negative_rate([1, 1, 2, 1]))\n        0.5",
)
true_negative_rate = _make_rate(
    "true_negative_rate", (TN,), (FP, TN), "TNR = TN / (FP + TN).",
    ">>> round(float(ofijax.true_negative_rate([1, 1, 2, 1])), 4)\n        0.3333",
)
positive_predictive_value = _make_rate(
    "positive_predictive_value", (TP,), (TP, FP), "PPV (precision) = TP / (TP + FP).",
    ">>> round(float(ofijax.positive_predictive_value([1, 1, 2, 1])), 4)\n        0.3333",
)
selection_rate = _make_rate(
    "selection_rate", (TP, FP), (TP, FN, FP, TN), "Selection rate = (TP + FP) / n (= benefit b).",
    ">>> float(ofijax.selection_rate([1, 1, 2, 1]))\n        0.6",
)
base_rate = _make_rate(
    "base_rate", (TP, FN), (TP, FN, FP, TN), "Base rate = (TP + FN) / n (= expected benefit).",
    ">>> float(ofijax.base_rate([1, 1, 2, 1]))\n        0.4",
)
accuracy = _make_rate(
    "accuracy", (TP, TN), (TP, FN, FP, TN), "Accuracy = (TP + TN) / n.",
    ">>> float(ofijax.accuracy([1, 1, 2, 1]))\n        0.4",
)
