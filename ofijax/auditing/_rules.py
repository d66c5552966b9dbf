r"""The audit's rules on confusion matrices of any leading shape, and the checks of their inputs.

One place for what :func:`ofijax.audit` (one candidate: ``(k, 4)`` counts) and
:func:`ofijax.audit_batch` (C candidates: ``(C, k, 4)``) both report: :func:`apply_rules` turns
per-group confusion matrices (TP, FN, FP, TN; positive = beneficial) into every per-group rate
(:data:`GROUP_METRICS`), the pooled ("overall") rates, and for every pair of groups i, j the OFI
B_i − B_j with B = (FP − FN)/n, the disparate impact (both variants), the symmetric impact ratio,
the four-fifths reading, treatment equality and the verdict of the pair
(:func:`ofijax.auditing._verdicts.verdict_codes`). Counts are int64 and rates float64 whatever
``jax_enable_x64`` says. :func:`check_options` and :func:`prepare_rows` are the one validation of
the options and row-wise arguments (labels, predictions, groups, weights) the two audits share,
so both refuse the same input with the same message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as v
from ofijax import metrics as mt
from ofijax._jaxcache import aot_jit, compiler_options
from ofijax.auditing import _significance as sig
from ofijax.auditing._groups import MAX_LEVELS, bin_features, check_group_count
from ofijax.auditing._report import group_label
from ofijax.auditing._verdicts import min_group_size as _rule_min_group_size
from ofijax.auditing._verdicts import verdict_codes
from ofijax.cm import FN, FP, TN, TP

__all__ = ["GROUP_METRICS", "CORRECTIONS", "DI_VARIANTS", "Rules", "apply_rules", "check_count", "check_groups",
           "check_options", "prepare_rows", "tables_one", "tables_many"]

#: Per-group metrics of ``AuditFrame.by_group`` (column name → function of a ``(..., 4)`` CM).
GROUP_METRICS: dict[str, Callable] = {
    "n": mt.group_size,
    "tp": lambda c: jnp.asarray(c)[..., TP],
    "fn": lambda c: jnp.asarray(c)[..., FN],
    "fp": lambda c: jnp.asarray(c)[..., FP],
    "tn": lambda c: jnp.asarray(c)[..., TN],
    "benefit": mt.benefit,
    "expected_benefit": mt.expected_benefit,
    "marginal_benefit": mt.marginal_benefit,
    "true_positive_rate": mt.true_positive_rate,
    "false_positive_rate": mt.false_positive_rate,
    "false_negative_rate": mt.false_negative_rate,
    "true_negative_rate": mt.true_negative_rate,
    "positive_predictive_value": mt.positive_predictive_value,
    "accuracy": mt.accuracy,
}

#: Multiplicity corrections within one audit (over its k(k−1)/2 pairs).
CORRECTIONS = ("holm", "bonferroni", "none")
#: Disparate-impact variants: the paper's P̂/n ratio, or the authors' 2024 code's P̂/P.
DI_VARIANTS = ("paper", "pp_over_p")


def _tables_body(cms, *, di_variant, with_te=True):
    """Every per-group, overall and pairwise number of an audit; leading axes are candidates."""
    per_group = {name: f(cms) for name, f in GROUP_METRICS.items()}
    total = cms.sum(-2)
    overall = {name: f(total) for name, f in GROUP_METRICS.items()}
    ofi_m = mt.pairwise(mt.ofi, cms)
    di_m = mt.pairwise(functools.partial(mt.disparate_impact, variant=di_variant), cms)
    ir_m = mt.pairwise(functools.partial(mt.impact_ratio, variant=di_variant), cms)
    ff_m = mt.pairwise(functools.partial(mt.four_fifths_pair, variant=di_variant), cms)
    te_m = mt.pairwise(mt.treatment_equality, cms) if with_te else None
    num = cms[..., TP] + cms[..., FP]
    den = num + cms[..., FN] + cms[..., TN] if di_variant == "paper" else cms[..., TP] + cms[..., FN]
    rate = jnp.where(den > 0, num / jnp.where(den > 0, den, 1), jnp.nan)  # r of the DI variant
    return per_group, overall, ofi_m, di_m, ir_m, te_m, ff_m, rate


# One candidate: a small program a user meets on a first audit, its executable kept on disk and
# compiled with the fast-compiling options. Many candidates: one plain jit per padded shape.
tables_one = aot_jit(_tables_body, name="ofijax.auditing.tables", static_argnames=("di_variant", "with_te"),
                      compiler_options=compiler_options())
tables_many = jax.jit(_tables_body, static_argnames=("di_variant", "with_te"))


class Rules(NamedTuple):
    """Result of :func:`apply_rules` for counts of shape ``(..., k, 4)`` (float64 NumPy arrays).

    Attributes:
        per_group: :data:`GROUP_METRICS` name → ``(..., k)``.
        overall: the same metrics of the pooled counts, name → ``(...)``.
        rate: ``(..., k)`` the rate r that DI and the impact ratio compare: the selection rate
            (TP + FP)/n for ``di_variant="paper"``, (TP + FP)/(TP + FN) for ``"pp_over_p"``;
            NaN where the denominator is 0.
        ofi: ``(..., k, k)`` OFI(i, j) = B_i − B_j.
        di: ``(..., k, k)`` directional disparate impact r_i / r_j (the ``di_variant``'s rates).
        impact_ratio: ``(..., k, k)`` min(r_i, r_j) / max(r_i, r_j).
        four_fifths: ``(..., k, k)`` the four-fifths reading (+1: j selected less, −1: i, 0: pass,
            NaN: undefined).
        te: ``(..., k, k)`` treatment equality FN_i/FP_i − FN_j/FP_j, or None when not asked for.
        small: ``(..., P)`` whether a group of pair p (i < j, ``np.triu_indices(k, 1)`` order) has
            fewer than ``min_group_size`` people.
        verdict: ``(..., P)`` index into :data:`ofijax.auditing.VERDICTS`.
        disadvantaged: ``(..., P)`` +1 group j, −1 group i, 0 none.
    """

    per_group: dict
    overall: dict
    rate: np.ndarray
    ofi: np.ndarray
    di: np.ndarray
    impact_ratio: np.ndarray
    four_fifths: np.ndarray
    te: np.ndarray | None
    small: np.ndarray
    verdict: np.ndarray
    disadvantaged: np.ndarray


def apply_rules(cms: Any, significant: Any, *, di_variant: str, min_group_size: int,
                with_te: bool = True) -> Rules:
    r"""Rates, pairwise OFI/DI/impact ratio/four-fifths/TE and verdicts of ``(..., k, 4)`` counts.

    For each group g: n_g = TP + FN + FP + TN, the selection rate b = (TP + FP)/n, B = (FP − FN)/n
    and the rates of :data:`GROUP_METRICS` (NaN where a denominator is 0); for each pair
    OFI(i, j) = B_i − B_j, DI(i, j) = r_i / r_j, impact ratio min(r_i, r_j)/max(r_i, r_j) and its
    four-fifths reading (r = b for ``di_variant="paper"``, (TP + FP)/(TP + FN) for
    ``"pp_over_p"``); the verdict of each pair i < j from ``significant`` (the caller's test:
    adjusted p < alpha, or an interval that excludes 0), the group sizes and the four-fifths
    reading (:func:`ofijax.auditing._verdicts.verdict_codes`). Computed in float64 (int64 counts)
    under ``jax.enable_x64``, whatever the global flag; leading axes are candidates.

    Args:
        cms: ``(..., k, 4)`` counts (NumPy or JAX; integer, or float for fractional weights).
        significant: ``(..., P)`` booleans, P = k(k−1)/2 pairs in ``np.triu_indices(k, 1)`` order.
        di_variant: ``"paper"`` or ``"pp_over_p"``.
        min_group_size: the smallest group given a verdict.
        with_te: also compute treatment equality (``Rules.te``; None otherwise).

    Returns:
        :class:`Rules`.

    Example:
        >>> import numpy as np
        >>> from ofijax.auditing._rules import apply_rules
        >>> r = apply_rules(np.array([[0, 1, 0, 5], [0, 7, 0, 11]]), [False], di_variant="paper",
        ...                 min_group_size=5)
        >>> round(float(r.ofi[0, 1]), 4), r.verdict.tolist()  # OFI = 2/9; verdict 3 = no evidence
        (0.2222, [3])
    """
    shape = np.shape(cms)
    if len(shape) < 2 or shape[-1] != 4:
        raise ValueError(f"cms: must have shape (..., k, 4) with counts TP, FN, FP, TN; got {shape}.")
    k = shape[-2]
    lead = shape[:-2]
    with jax.enable_x64(True):  # exact counts and float64 metrics whatever the global mode
        if not lead:
            out = tables_one(jnp.asarray(cms), di_variant=di_variant, with_te=with_te)
        else:
            # pad the candidates to a power of two so that batches of similar sizes share a program
            c = np.asarray(cms).reshape(-1, k, 4)
            n_c = c.shape[0]
            n_pad = 1 << max(0, (n_c - 1).bit_length())
            if n_pad > n_c:
                c = np.concatenate([c, np.ones((n_pad - n_c, k, 4), c.dtype)])
            if c.dtype.kind in "iu" and c.max(initial=0) >= 2**31 - 1:
                c = c.astype(np.float64)  # a count beyond int32: rates computed from float64 counts
            out = tables_many(jnp.asarray(c), di_variant=di_variant, with_te=with_te)
            out = jax.tree_util.tree_map(lambda x: np.asarray(x)[:n_c].reshape(lead + x.shape[1:]), out)
        per_group, overall, ofi_m, di_m, ir_m, te_m, ff_m, rate = jax.tree_util.tree_map(
            lambda x: np.asarray(x, np.float64), out)
    iu, ju = np.triu_indices(k, 1)
    n = per_group["n"]
    sig_ = np.asarray(significant, dtype=bool)
    if sig_.shape != lead + (iu.size,):
        raise ValueError(f"significant: must have shape {lead + (iu.size,)} (one per pair i < j); got {sig_.shape}.")
    small = (n[..., iu] < min_group_size) | (n[..., ju] < min_group_size)
    code, side = verdict_codes(small, sig_, ff_m[..., iu, ju], ofi_m[..., iu, ju])
    return Rules(per_group, overall, rate, ofi_m, di_m, ir_m, ff_m, te_m, small, code, side)


# ------------------------------------------------------------------------------------------------
# The one validation of the audits' options and rows
# ------------------------------------------------------------------------------------------------


def check_groups(groups: Any, names: Any) -> tuple:
    """Refuse a single group or more than :data:`ofijax.auditing.MAX_GROUPS` (before any pairwise
    work) and return the group columns' names (``("group",)``, or ``sensitive_feature_j`` for
    unnamed intersections)."""
    if len(groups) < 2:
        raise ValueError(
            f"sensitive_features: only one group ({group_label(groups[0])!r}) is present; an audit "
            "compares at least two groups."
        )
    check_group_count(len(groups))
    ncols = len(groups[0]) if isinstance(groups[0], tuple) else 1
    if names is None or any(nm is None for nm in names):
        return ("group",) if ncols == 1 else tuple(f"sensitive_feature_{j}" for j in range(ncols))
    return tuple(names)


def check_count(value: Any, name: str, *, allow_zero: bool = True) -> int:
    """``value`` as a checked integer count (``TypeError`` unless an integer; ``ValueError`` below
    0, or below 1 with ``allow_zero=False``), the message starting with ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: must be an integer; got {value!r} ({type(value).__name__}).")
    n = int(value)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{name}: must be ≥ {0 if allow_zero else 1}; got {n}.")
    return n


def check_options(*, null: Any, method: Any, correction: Any, di_variant: Any, alpha: Any,
                  min_group_size: Any, beneficial_label: Any) -> tuple[float, int]:
    """The options every audit shares, checked in one order with one wording; returns
    ``(alpha, min_group_size)`` as numbers (the default minimum-evidence size of ``alpha`` when
    ``min_group_size`` is None)."""
    v.check_choice(null, "null", sig.NULLS)
    v.check_choice(method, "method", sig.METHODS)
    v.check_choice(correction, "correction", CORRECTIONS)
    v.check_choice(di_variant, "di_variant", DI_VARIANTS)
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise TypeError(f"alpha: must be a number strictly between 0 and 1, e.g. 0.05; got {alpha!r}.") from None
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha: must lie strictly between 0 and 1, e.g. 0.05; got {alpha!r}.")
    min_n = (_rule_min_group_size(a) if min_group_size is None
             else check_count(min_group_size, "min_group_size", allow_zero=False))
    if beneficial_label not in (0, 1) or isinstance(beneficial_label, bool):
        raise ValueError(f"beneficial_label: must be 1 or 0; got {beneficial_label!r}.")
    return a, min_n


def prepare_rows(*, bins: Any = None, max_levels: int = MAX_LEVELS, **named: Any) -> tuple[dict, dict]:
    """The row-wise arguments of an audit (``y_true``, ``y_pred``, ``sensitive_features``,
    ``sample_weight`` and any other named ones, already resolved from ``data``), converted
    (polars/pyarrow → pandas), aligned on the first pandas argument's index or refused
    (:func:`ofijax._validation.align_pandas`; the columns of a dict argument, such as a dict of
    candidates' predictions or of group columns, one by one, named ``name[key]``), complex numbers
    refused, and the group columns checked and binned (:func:`bin_features`). Returns
    ``(arguments, bin edges)``; the binned groups replace ``sensitive_features``."""
    named = v.align_pandas(**named)
    for name in ("y_true", "y_pred", "sample_weight"):
        arr = named.get(name)
        if arr is not None and not isinstance(arr, dict) and np.iscomplexobj(np.asarray(arr)):
            raise TypeError(f"{name}: complex values are not labels, predictions or weights; pass real numbers.")
    named["sensitive_features"], edges = bin_features(named["sensitive_features"], bins=bins,
                                                      max_levels=max_levels)
    return named, edges
