r"""The audit front door: :func:`audit` and :func:`audit_from_counts`.

One call turns labels, predictions and sensitive features into per-group confusion matrices, the
OFI paper's metrics, the significance of every pairwise OFI under a named null, bootstrap intervals,
and a verdict per pair following the paper's reading (§2.3, §4):

* a group smaller than the minimum-evidence size → **too small to judge** (see
  :mod:`ofijax.auditing._verdicts`);
* OFI significantly ≠ 0 → **algorithmic bias**. OFI(i, j) = B_i − B_j > 0 means group i receives more
  unjust benefit than j: the model is biased against j (and for i).
* OFI not significant but the selection rates fail the four-fifths rule (impact ratio, the lower
  rate over the higher, < 4/5) → **selection-rate disparity**: a measured gap in selection rates
  with no significant evidence, at this sample size, that the model's errors cause it (the old
  name "systemic disparity" maps to it through :data:`VERDICT_RENAMES`).
* neither → **no evidence**.

No verdict depends on the groups' names or order: OFI is antisymmetric, the p-values symmetric,
and the four-fifths reading comes from the symmetric impact ratio (a group that selects no one
against one that selects someone fails, whichever is called i).

This module owns the audit's arguments (the key-first call, the audit-only options), its
p-values, bootstrap intervals, pair rows, notes and settings, and assembles the
:class:`~ofijax.auditing.AuditFrame` (``_auditframe``). The shared rules (rates, OFI, DI, four-fifths,
verdicts) and input checks are :mod:`ofijax.auditing._rules`, also used by
:func:`ofijax.audit_batch`; group columns and binning live in ``_groups``, multiplicity and the
reading in words in ``_verdicts``, the report in ``_report``, the scans in ``_scans``.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax._jaxcache import aot_jit
from ofijax._progress import track
from ofijax.auditing import _significance as sig
from ofijax.auditing._auditframe import AuditFrame
from ofijax.auditing._groups import MAX_LEVELS
from ofijax.auditing._report import format_p, group_label
from ofijax.auditing._rules import (
    GROUP_METRICS,
    apply_rules,
    check_count,
    check_groups,
    check_options,
    prepare_rows,
)
from ofijax.auditing._scans import run_scans
from ofijax.auditing._verdicts import (
    DETECTABLE_POWER,
    adjust_pvalues,
    detectable_ofi,
    format_number,
    pair_verdict,
)
from ofijax.cm import encode_groups, group_confusion_matrices

__all__ = ["audit", "audit_from_counts"]


@aot_jit(name="ofijax.auditing.split3")  # executable kept on disk (one program, not two)
def _split3(key):
    """``tuple(jax.random.split(key, 3))``."""
    return tuple(jax.random.split(key, 3))


# ------------------------------------------------------------------------------------------------
# audit
# ------------------------------------------------------------------------------------------------

_RENAMED = {"num_bootstrap": "num_samples", "num_null_samples": "num_samples",
            "num_replicates": "scan_num_samples"}


def _is_key_like(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    if isinstance(x, (jax.Array, np.ndarray)):
        dt = x.dtype
        return bool(jax.dtypes.issubdtype(dt, jax.dtypes.prng_key)) or (
            dt == np.uint32 and x.shape == (2,)
        )
    return False


def _resolve_call(key: Any, y_true: Any, y_pred: Any, deprecated: dict) -> tuple:
    """The key-first signature, with the deprecation path of the old ``audit(y_true, y_pred, ...)``."""
    if y_pred is None and not _is_key_like(key):
        warnings.warn(
            "audit(y_true, y_pred, ...) without a key is deprecated: pass the PRNG key first, "
            "audit(key, y_true, y_pred, ...), e.g. audit(0, y, y_hat, sensitive_features=g); "
            "using jax.random.key(0) for now.",
            FutureWarning, stacklevel=3,
        )
        key, y_true, y_pred = 0, key, y_true
    if y_true is None or y_pred is None:
        raise TypeError("audit: needs key, y_true and y_pred, e.g. audit(0, y, y_hat, sensitive_features=g).")
    out = {}
    for old, value in deprecated.items():
        if old not in _RENAMED:
            raise TypeError(f"audit() got an unexpected keyword argument {old!r}.")
        new = _RENAMED[old]
        warnings.warn(f"audit: {old} is deprecated; use {new}.", DeprecationWarning, stacklevel=3)
        out[new] = value
    return v.as_key(key), y_true, y_pred, out


def _check_options(*, null, method, correction, di_variant, alpha, confidence, num_samples,
                   min_group_size, beneficial_label) -> tuple[float, float, int, int]:
    """The audit's option checks (:func:`ofijax.auditing._rules.check_options`, shared with
    :func:`ofijax.audit_batch`, then the bootstrap's); returns ``(alpha, confidence,
    num_samples, min_group_size)`` as checked numbers."""
    a, min_n = check_options(null=null, method=method, correction=correction, di_variant=di_variant,
                             alpha=alpha, min_group_size=min_group_size, beneficial_label=beneficial_label)
    conf = sig.check_confidence(confidence)
    nboot = check_count(num_samples, "num_samples")
    if nboot == 1:
        raise ValueError("num_samples: must be 0 (skip the bootstrap) or ≥ 2; got 1.")
    return a, conf, nboot, min_n


def audit(
    key: Any,
    y_true: Any = None,
    y_pred: Any = None,
    *,
    sensitive_features: Any,
    data: Any = None,
    sample_weight: Any = None,
    beneficial_label: int = 1,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "auto",
    correction: str = "holm",
    confidence: float = 0.95,
    num_samples: int = 2000,
    di_variant: str = "paper",
    bins: Any = None,
    max_levels: int = MAX_LEVELS,
    min_group_size: int | None = None,
    scan: bool = False,
    scan_features: Any = None,
    scan_probabilities: Any = None,
    scan_lam: float = 0.0,
    scan_side: str = "both",
    scan_num_samples: int = 100,
    scan_top_k: int = 1,
    **deprecated: Any,
) -> AuditFrame:
    r"""Audit a binary classifier for algorithmic bias and systemic disparity between groups.

    For every pair of groups (i, j) it computes OFI(i, j) = B_i − B_j with B = (FP − FN)/n, the
    two-sided p-value of |OFI| under a named null, a percentile bootstrap interval, DI and TE, and
    a verdict (most severe first):

    * a group smaller than ``min_group_size`` → ``"too small to judge"`` (numbers shown, no
      verdict);
    * OFI significant (adjusted p < ``alpha``) → ``"algorithmic bias"``; OFI > 0 means group i
      receives more unjust benefit than j, i.e. the model is biased against j;
    * otherwise, the impact ratio min(b_i, b_j) / max(b_i, b_j) of the selection rates below 4/5
      (the four-fifths rule) → ``"selection-rate disparity"``: the rates differ and there is no
      significant evidence at this sample size that the model's errors cause it (the old name
      "systemic disparity" maps to it through :data:`VERDICT_RENAMES`);
    * otherwise → ``"no evidence"``.

    No verdict depends on the groups' names or their order.

    Args:
        key: PRNG key or int seed of the bootstrap (and Monte Carlo p-values and scans); first and
            required. The old call ``audit(y_true, y_pred, ...)`` still works for one release with
            a ``FutureWarning`` and ``jax.random.key(0)``.
        y_true: ``(n,)`` labels in {0, 1} (or the text labels ``"0"``/``"1"``); 1 = the
            beneficial outcome (see ``beneficial_label``). A column name when ``data`` is given.
        y_pred: ``(n,)`` predictions in {0, 1}, or a column name of ``data``.
        sensitive_features: ``(n,)`` group labels, or several columns (DataFrame, dict, 2-D array)
            whose observed intersections are the groups; with ``data``, a column name or a list
            of them. A column with more than ``max_levels`` distinct values is refused unless
            ``bins`` cuts it (see :func:`bin_features`); a column mixing text and other values
            (``1`` and ``"1"``) or a DataFrame with duplicate column names is refused.
        data: optional DataFrame (pandas, polars, pyarrow Table) whose columns ``y_true``,
            ``y_pred``, ``sensitive_features``, ``sample_weight``, ``scan_features`` and
            ``scan_probabilities`` may name, as in seaborn and fairlearn:
            ``audit(key, "label", "pred", sensitive_features="sex", data=df)``.
        sample_weight: optional ``(n,)`` non-negative weights. Integer weights act as frequency
            weights in the exact tests; with fractional weights the p-values are NaN and the
            verdict uses the bootstrap interval (rows resampled within groups, weights kept).
        beneficial_label: 1 (default) or 0 when label/prediction 1 is the harmful outcome
            (COMPAS: 1 = recidivist); 0 flips the matrices so the positive cell is beneficial.
        alpha: significance level of the verdicts.
        null: ``"pooled"`` (default; both groups of a pair drawn from Multinomial(n_g, p) with p
            their pooled confusion matrix) or ``"uniform"`` (each matrix uniform over M(n_g), the
            OFI paper's null; very permissive). See :func:`ofijax.ofi_test`.
        method: ``"auto"`` (default), ``"exact"``, ``"saddlepoint"`` or ``"monte_carlo"``, as in
            :func:`ofijax.ofi_test`: the first three go to the p-value engine
            :func:`ofijax.distributions.ofi_pvalue_cms`; ``"monte_carlo"`` draws ``num_samples``
            tables per pair with ``key``. ``pairs["p_method"]`` says which produced each p-value
            (every value but ``"exact"`` is an approximation or an estimate).
        correction: ``"holm"`` (default), ``"bonferroni"`` or ``"none"``, over the k(k−1)/2 pairs
            (:func:`adjust_pvalues`).
        confidence: coverage of the bootstrap intervals (unadjusted for multiplicity).
        num_samples: bootstrap resamples (0 skips the intervals: NaN) and Monte Carlo draws of
            ``method="monte_carlo"``. Replaces ``num_bootstrap`` and ``num_null_samples``.
        di_variant: ``"paper"`` (P̂/n ratio, default) or ``"pp_over_p"`` (the authors' 2024 code).
        bins: cut numeric group columns into quantile bins: an int for every column with more
            than ``max_levels`` values, or ``{column: count or edges}``; edges in ``settings``.
        max_levels: most distinct values of an unbinned group column (default 20).
        min_group_size: smallest group given a verdict; default :func:`min_group_size` of
            ``alpha`` (5 at α = 0.05: the smallest n whose own outcome can be significant).
        scan: also run FPR-Scan and TPR-Scan (and IJDI-Scan when ``scan_probabilities`` is given)
            over ``scan_features`` and report the most disadvantaged subgroup with its
            randomization p-value (:attr:`AuditFrame.scan`, :func:`run_scans`). Slow.
        scan_features: the columns to scan over (default: ``sensitive_features``).
        scan_probabilities: ``(n,)`` estimated P(y = 1 | x) for IJDI-Scan (optional).
        scan_lam: λ of IJDI-Scan.
        scan_side: ``"both"``, ``"negative"`` (FPR-Scan only: wrongly denied benefit) or
            ``"positive"`` (TPR-Scan only).
        scan_num_samples: randomization replicates of each scan's p-value (0: no test); replaces
            ``num_replicates``.
        scan_top_k: subgroups reported per scan (default 1); k > 1 adds the next ones, found by
            rescanning without the earlier ones' people, with family-wise p-values
            (:func:`run_scans`'s ``top_k``; each scan's ``top`` list).

    Returns:
        :class:`AuditFrame`.

    Raises:
        ValueError: on non-binary labels, length mismatches, NaN, an empty input, fewer than two
            groups, more than 200 groups, a continuous group column, or bad options (the message
            starts with the argument's name). TypeError: a bad ``key`` or a non-integer count.

    Examples:
        The paper's Table 1, scenario B, as rows: the test is discarded, nobody is promoted.

        >>> import numpy as np
        >>> from ofijax import audit
        >>> y = np.r_[[0] * 5, 1, [1] * 7, [0] * 11]
        >>> g = ["i"] * 6 + ["j"] * 18
        >>> af = audit(0, y, np.zeros(24, int), sensitive_features=g, null="uniform")
        >>> af.by_group[["n", "fn", "marginal_benefit"]].round(4)
            n  fn  marginal_benefit
        group
        i   6   1           -0.1667
        j  18   7           -0.3889
        >>> round(float(af.pairwise("ofi").loc["i", "j"]), 4)
        0.2222
        >>> af.pairs.loc[0, "verdict"]
        'no evidence'

        The same audit from the columns of a DataFrame, named as in seaborn and fairlearn:

        >>> import pandas as pd
        >>> df = pd.DataFrame({"label": y, "pred": np.zeros(24, int), "g": g})
        >>> af = audit(0, "label", "pred", sensitive_features="g", data=df, null="uniform")
        >>> round(float(af.pairs.loc[0, "ofi"]), 4), af.pairs.loc[0, "p_method"]
        (0.2222, 'exact')
    """
    key, y_true, y_pred, renamed = _resolve_call(key, y_true, y_pred, deprecated)
    y_true, y_pred, sensitive_features, sample_weight, scan_features, scan_probabilities = (
        v.columns_from_data(data, lists=("sensitive_features", "scan_features"), y_true=y_true,
                            y_pred=y_pred, sensitive_features=sensitive_features,
                            sample_weight=sample_weight, scan_features=scan_features,
                            scan_probabilities=scan_probabilities).values())
    num_samples = renamed.get("num_samples", num_samples)
    scan_num_samples = renamed.get("scan_num_samples", scan_num_samples)
    a, conf, nboot, min_n = _check_options(null=null, method=method, correction=correction,
                                           di_variant=di_variant, alpha=alpha, confidence=confidence,
                                           num_samples=num_samples, min_group_size=min_group_size,
                                           beneficial_label=beneficial_label)
    n_scan = check_count(scan_num_samples, "scan_num_samples")
    k_top = check_count(scan_top_k, "scan_top_k", allow_zero=False)
    k_boot, k_null, k_scan = _split3(key)

    # one conversion, alignment and check of every row-wise argument (the scans' columns included)
    rows, bin_edges = prepare_rows(bins=bins, max_levels=max_levels, y_true=y_true, y_pred=y_pred,
                                   sensitive_features=sensitive_features, sample_weight=sample_weight,
                                   scan_features=scan_features, scan_probabilities=scan_probabilities)
    y_true, y_pred, features, sample_weight, scan_features, scan_probabilities = rows.values()
    gcm = group_confusion_matrices(
        y_true, y_pred, features, sample_weight=sample_weight, beneficial_label=beneficial_label
    )
    cms_j = gcm.cms
    if cms_j.ndim != 2:
        raise ValueError(f"y_pred: must be 1-D (one prediction per row) for an audit; got {cms_j.shape[:-2]} leading axes.")
    groups = gcm.groups
    af = _audit_core(k_boot, k_null, cms_j, groups, gcm.names, alpha=a, null=null, method=method,
                     correction=correction, conf=conf, nboot=nboot, di_variant=di_variant,
                     beneficial_label=beneficial_label, min_n=min_n, bin_edges=bin_edges,
                     rows=(y_true, y_pred, features, sample_weight))
    settings = af.settings
    scan_res = None
    if scan:
        scan_res = run_scans(
            k_scan, y_true, y_pred, features if scan_features is None else scan_features,
            beneficial_label=beneficial_label, probabilities=scan_probabilities, lam=float(scan_lam),
            num_samples=n_scan, side=scan_side, top_k=k_top,
        )
        settings["scan_num_samples"] = n_scan
        settings["scan_top_k"] = k_top
    return af._replace(settings=settings, scan=scan_res)


def audit_from_counts(
    key: Any,
    cms: Any,
    groups: Any,
    *,
    names: Any = None,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "auto",
    correction: str = "holm",
    confidence: float = 0.95,
    num_samples: int = 2000,
    di_variant: str = "paper",
    beneficial_label: int = 1,
    min_group_size: int | None = None,
) -> AuditFrame:
    r"""The audit of :func:`audit` from per-group confusion matrices alone (no rows).

    Same tables, exact p-values, bootstrap intervals (the per-group multinomial on the counts, as
    :func:`audit` draws without weights: the same key gives the same intervals), verdicts and
    notes as ``audit(key, y_true, y_pred, sensitive_features=...)`` on the rows the counts came
    from. Used by :mod:`ofijax.stats` for data beyond memory.

    Args:
        key: PRNG key or int seed (bootstrap, Monte Carlo p-values).
        cms: ``(k, 4)`` integer counts TP, FN, FP, TN, already oriented (positive = beneficial).
        groups: the k group labels (tuples for intersections), in the order of ``cms``.
        names: the group column name(s) (default ``("group",)``).
        alpha, null, method, correction, confidence, num_samples, di_variant, beneficial_label,
            min_group_size: as in :func:`audit` (``beneficial_label`` is recorded only).

    Example:
        >>> from ofijax.auditing import audit_from_counts
        >>> af = audit_from_counts(0, [[0, 1, 0, 5], [0, 7, 0, 11]], ["i", "j"], null="uniform")
        >>> round(float(af.ofi[0, 1]), 4), af.pairs.loc[0, "verdict"]
        (0.2222, 'no evidence')
    """
    key = v.as_key(key)
    a, conf, nboot, min_n = _check_options(null=null, method=method, correction=correction,
                                           di_variant=di_variant, alpha=alpha, confidence=confidence,
                                           num_samples=num_samples, min_group_size=min_group_size,
                                           beneficial_label=beneficial_label)
    c = np.asarray(cms)
    if c.ndim != 2 or c.shape[-1] != 4 or not np.issubdtype(c.dtype, np.number):
        raise ValueError(f"cms: must be (k, 4) counts TP, FN, FP, TN; got shape {c.shape}.")
    if (c < 0).any() or not np.all(c == np.round(c)):
        raise ValueError("cms: counts must be non-negative integers.")
    groups = list(groups)
    if len(groups) != c.shape[0]:
        raise ValueError(f"groups: {len(groups)} labels for {c.shape[0]} confusion matrices.")
    if len(groups) < 2:
        raise ValueError("groups: an audit compares at least two groups.")
    if (c.sum(1) == 0).any():
        raise ValueError("cms: every group needs at least one row (n = 0 found).")
    k_boot, k_null, _ = _split3(key)
    return _audit_core(k_boot, k_null, c.astype(np.int64), groups, names, alpha=a, null=null,
                       method=method, correction=correction, conf=conf, nboot=nboot,
                       di_variant=di_variant, beneficial_label=beneficial_label, min_n=min_n,
                       bin_edges={})


def _audit_core(k_boot, k_null, cms_j, groups, names, *, alpha, null, method, correction, conf, nboot,
                di_variant, beneficial_label, min_n, bin_edges, rows=None) -> AuditFrame:
    """Everything of an audit that follows from the group confusion matrices (and, for weighted
    bootstraps only, the rows): tables, p-values, intervals, verdicts, notes, settings."""
    a = alpha
    k = len(groups)
    names = check_groups(groups, names)  # two to MAX_GROUPS groups; the columns' names
    ncols = len(groups[0]) if isinstance(groups[0], tuple) else 1
    cms = np.asarray(cms_j, dtype=np.float64)
    integer = bool(np.all(cms == np.round(cms)))
    notes: list[str] = []

    iu, ju = np.triu_indices(k, 1)
    if method == "monte_carlo" and nboot == 0 and integer:
        raise ValueError("num_samples: method='monte_carlo' needs ≥ 2 draws (it uses num_samples for "
                         "the draws); pass num_samples=2000, or method='auto'.")
    p_m, padj_m, how_m, approx_m, err_m = _pvalues(cms, integer, iu, ju, null=null, method=method, key=k_null,
                                                   num_samples=nboot if method == "monte_carlo" else 0,
                                                   correction=correction)
    if not integer:
        notes.append(
            "fractional sample weights: exact OFI tests need integer counts, so p-values are n/a and "
            "significance is read from the bootstrap interval (does it exclude 0?)."
        )
    m_pairs = k * (k - 1) // 2
    conf_sim = conf if correction == "none" else 1.0 - (1.0 - conf) / m_pairs
    y_true, y_pred, features, sample_weight = rows if rows is not None else (None, None, None, None)
    lo_m, hi_m, slo_m, shi_m = _intervals(k_boot, cms, nboot, conf, conf_sim, y_true, y_pred, features,
                                          sample_weight, beneficial_label, k)
    if not nboot and not integer:
        raise ValueError("num_samples: fractional weights need the bootstrap for significance; use ≥ 2.")
    # significance: the adjusted p-value, or (fractional weights) the simultaneous interval
    significant = (padj_m[iu, ju] < a) if integer else (slo_m[iu, ju] > 0) | (shi_m[iu, ju] < 0)
    rules = apply_rules(cms_j, significant, di_variant=di_variant, min_group_size=min_n)
    per_group, overall = rules.per_group, rules.overall
    ofi_m, di_m, ir_m, te_m, ff = rules.ofi, rules.di, rules.impact_ratio, rules.te, rules.four_fifths
    index = (
        pd.MultiIndex.from_tuples(list(groups), names=list(names)) if ncols > 1
        else pd.Index(list(groups), name=names[0])
    )
    by_group = pd.DataFrame({c: per_group[c] for c in GROUP_METRICS}, index=index)
    overall_s = pd.Series({c: float(overall[c]) for c in GROUP_METRICS}, name="overall")
    if integer:
        for c in ("n", "tp", "fn", "fp", "tn"):
            by_group[c] = np.rint(by_group[c]).astype(np.int64)

    pairs = _pairs(groups, cms, per_group, ofi_m, di_m, ir_m, te_m, ff, p_m, padj_m, how_m, approx_m,
                   lo_m, hi_m, slo_m, shi_m, significant, integer=integer, alpha=a, null=null,
                   correction=correction, conf=conf, min_n=min_n, nboot=nboot, err_m=err_m)

    n_undef_di = int(np.isnan(di_m[iu, ju]).sum() + np.isnan(di_m[ju, iu]).sum())
    if n_undef_di:
        n_undef_ir = int(np.isnan(ir_m[iu, ju]).sum())
        notes.append(
            f"DI (the directional ratio r_i / r_j) is undefined (0 positive predictions in the reference "
            f"group) for {n_undef_di} ordered pair(s); the four-fifths readings use the impact ratio "
            f"min/max, undefined only when neither group is selected ({n_undef_ir} pair(s)).")
    if integer and approx_m[iu, ju].any():
        kinds = sorted(set(how_m[iu, ju][approx_m[iu, ju]]))
        notes.append(
            f"{int(approx_m[iu, ju].sum())} of {iu.size} p-value(s) are approximate ({', '.join(kinds)}; "
            f"column p_method; column p_error_bound bounds each one's relative error |p̂ − p|/p, "
            f"largest {format_p(float(np.nanmax(np.append(err_m[iu, ju], 0.0))))}): the saddlepoint's "
            "relative error is ≤ 2e-3, the bracketed uniform-null sum's ≤ 2e-4, a Monte Carlo "
            "estimate's resolution is 1/(num_samples + 1); method='exact' gives exact ones where the "
            "groups are small enough.")
    n_undef_te = int(np.isnan(te_m[iu, ju]).sum())
    if n_undef_te:
        notes.append(f"TE is undefined (FP = 0 in a group) for {n_undef_te} of {iu.size} pair(s).")
    small = [group_label(g) for g, n in zip(groups, cms.sum(1)) if n < min_n]
    if small:
        shown = ", ".join(small[:10]) + (f", … ({len(small)} in all)" if len(small) > 10 else "")
        notes.append(f"too small to judge (fewer than {min_n} people): {shown}; their pairs get no verdict.")
    if null == "uniform":
        notes.append(
            "the uniform null treats every confusion matrix of M(n) as equally likely; it ignores the "
            "data and is very permissive (its sd of B is about 0.3, the paper's threshold)."
        )
    for col, edges in bin_edges.items():
        notes.append(f"{col} was cut into {len(edges) - 1} bins at {', '.join(f'{e:g}' for e in edges)}.")

    settings = {
        "alpha": a, "null": null, "method": method, "correction": correction, "confidence": conf,
        "num_samples": nboot, "di_variant": di_variant, "beneficial_label": int(beneficial_label),
        "weighted": sample_weight is not None, "min_group_size": min_n, "bins": bin_edges,
    }

    return AuditFrame(
        cms=cms if not integer else cms.astype(np.int64), groups=tuple(groups), names=names,
        by_group=by_group, overall=overall_s,
        ofi=ofi_m, di=di_m, te=te_m, p_value=p_m, p_adjusted=padj_m, ci_low=lo_m, ci_high=hi_m,
        pairs=pairs, settings=settings, scan=None, notes=tuple(notes),
    )


def _pvalues(cms, integer, iu, ju, *, null, method, key, num_samples, correction):
    """Raw and adjusted ``(k, k)`` p-values (NaN without integer counts), the method of each and
    whether it is approximate."""
    k = cms.shape[0]
    if integer:
        p_m, how_m, approx_m, err_m = sig.pairwise_pvalues(
            cms.astype(np.int64), null=null, method=method, key=key,
            num_samples=max(num_samples, 2),
            progress=lambda it: track(it, "OFI p-values", unit="pairs"),
        )
    else:
        p_m = np.full((k, k), np.nan)
        how_m = np.full((k, k), "bootstrap interval", dtype=object)
        approx_m = np.ones((k, k), dtype=bool)
        err_m = np.full((k, k), np.nan)
    adj = adjust_pvalues(p_m[iu, ju], correction)
    padj_m = np.ones((k, k)) if integer else np.full((k, k), np.nan)
    padj_m[iu, ju] = adj
    padj_m[ju, iu] = adj
    return p_m, padj_m, how_m, approx_m, err_m


def _intervals(key, cms, nboot, conf, conf_sim, y_true, y_pred, features, sample_weight, beneficial_label, k):
    """Percentile bootstrap intervals of every OFI(i, j) at ``conf`` (per pair) and at ``conf_sim``
    (simultaneous over the pairs, Bonferroni), from the same resamples (NaN when ``nboot`` is 0)."""
    if not nboot:
        nan = np.full((k, k), np.nan)
        return nan, nan.copy(), nan.copy(), nan.copy()
    # Resample the groups in a canonical order (by their counts), so that the intervals do not
    # depend on the groups' names or order: groups with equal counts are interchangeable.
    canon = np.lexsort(np.asarray(cms, np.float64).T[::-1])
    back = np.argsort(canon)
    if sample_weight is None:
        samples = sig.bootstrap_ofi(key, np.asarray(cms)[canon], num_samples=nboot)
    else:
        samples = _weighted_bootstrap(key, y_true, y_pred, features, sample_weight,
                                      beneficial_label, nboot, k, back)
    samples = np.asarray(samples)[:, back][:, :, back]
    lo, hi = sig.percentiles(samples, conf)
    slo, shi = sig.percentiles(samples, conf_sim)
    return lo, hi, slo, shi


_TEST_NAMES = {"exact": "exact test", "saddlepoint": "saddlepoint approximation (relative error ≤ 2e-3)",
               "bracketed": "bracketed exact sum (relative error ≤ 2e-4)",
               "truncated": "exact sum over a window (relative error bound in p_error_bound)",
               "monte_carlo": "Monte Carlo test"}


def _pairs(groups, cms, per_group, ofi_m, di_m, ir_m, te_m, ff, p_m, padj_m, how_m, approx_m, lo_m, hi_m,
           slo_m, shi_m, significant_p, *, integer, alpha, null, correction, conf, min_n, nboot, err_m=None) -> pd.DataFrame:
    """One row per unordered pair with its verdict and reading."""
    k = len(groups)
    iu, ju = np.triu_indices(k, 1)
    mb = per_group["marginal_benefit"]
    sel = per_group["benefit"]
    n = cms.sum(1)
    corr = {"holm": "Holm-adjusted", "bonferroni": "Bonferroni-adjusted", "none": "no multiplicity correction"}[correction]
    four = {1.0: "fails: j selected less", -1.0: "fails: i selected less", 0.0: "passes"}
    detect = detectable_ofi(cms[iu], cms[ju], alpha, null=null)
    detect_how = (f"{100 * DETECTABLE_POWER:.0f}% power at alpha = {alpha:g} unadjusted; normal approximation "
                  + ("under the uniform null's variance" if null == "uniform"
                     else "under the pooled null's cell probabilities"))
    rows = []
    for pos, (i, j) in enumerate(zip(iu.tolist(), ju.tolist())):
        gi, gj = group_label(groups[i]), group_label(groups[j])
        o = float(ofi_m[i, j])
        test_name = _TEST_NAMES.get(how_m[i, j], str(how_m[i, j]))
        if how_m[i, j] == "monte_carlo":
            test_name += f" ({max(nboot, 2)} draws)"
        test_name += f", {null} null"
        significant = bool(significant_p[pos])
        if integer:
            if correction == "none":
                evidence = f"p = {format_p(p_m[i, j])}, {corr}; {test_name}"
            else:
                evidence = (f"p = {format_p(padj_m[i, j])}, {corr} (unadjusted {format_p(p_m[i, j])}); "
                            f"{test_name}")
        else:
            adj = "unadjusted for multiplicity" if correction == "none" else (
                f"Bonferroni-simultaneous over {len(iu)} pair(s)")
            evidence = (f"{100 * conf:.0f}% bootstrap interval [{format_number(slo_m[i, j], 3, True)}, "
                        f"{format_number(shi_m[i, j], 3, True)}] "
                        f"{'excludes' if significant else 'includes'} 0, {adj}")
        res = pair_verdict(
            gi, gj, n_i=float(n[i]), n_j=float(n[j]), b_i=float(sel[i]), b_j=float(sel[j]),
            mb_i=float(mb[i]), mb_j=float(mb[j]), ofi=o, di_ij=float(di_m[i, j]), di_ji=float(di_m[j, i]),
            four_fifths=float(ff[i, j]), significant=significant, evidence=evidence, min_size=min_n,
            detectable=float(detect[pos]), detectable_how=detect_how,
        )
        ffv = float(ff[i, j])
        rows.append({
            "group_i": groups[i], "group_j": groups[j],
            "n_i": n[i], "n_j": n[j],
            "marginal_benefit_i": float(mb[i]), "marginal_benefit_j": float(mb[j]),
            "ofi": o, "ci_low": float(lo_m[i, j]), "ci_high": float(hi_m[i, j]),
            "ci_low_simultaneous": float(slo_m[i, j]), "ci_high_simultaneous": float(shi_m[i, j]),
            "p_value": float(p_m[i, j]), "p_adjusted": float(padj_m[i, j]), "null": null,
            "p_method": how_m[i, j] if integer else "n/a (bootstrap interval)",
            "p_error_bound": float(err_m[i, j]) if err_m is not None else float("nan"),
            "di": float(di_m[i, j]), "impact_ratio": float(ir_m[i, j]),
            "four_fifths": four.get(ffv, "undefined"), "te": float(te_m[i, j]),
            "detectable_ofi": float(detect[pos]), "detectable_method": detect_how,
            **res,
        })
    pairs = pd.DataFrame(rows)
    if integer:
        pairs["n_i"] = pairs["n_i"].astype(np.int64)
        pairs["n_j"] = pairs["n_j"].astype(np.int64)
    return pairs


def _weighted_bootstrap(key, y_true, y_pred, sensitive_features, sample_weight, beneficial_label, nboot, k,
                        relabel):
    """Row bootstrap of the weighted OFIs, groups numbered ``relabel[code]`` (the canonical order)."""
    yt = v.check_binary(y_true, "y_true").astype(np.int32)
    yp = v.check_binary(y_pred, "y_pred").astype(np.int32)
    n = yt.shape[0]
    w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
    codes, _, _ = encode_groups(sensitive_features, n)
    codes = np.asarray(relabel, np.int32)[codes]
    if beneficial_label == 0:
        yt, yp = 1 - yt, 1 - yp
    cell = 2 * (1 - yt) + (1 - yp)
    order = np.argsort(codes, kind="stable").astype(np.int32)
    sizes = np.bincount(codes, minlength=k).astype(np.int32)
    starts = (np.cumsum(sizes) - sizes).astype(np.int32)
    return sig.bootstrap_rows(
        key, jnp.asarray(cell, jnp.int32), jnp.asarray(codes), jnp.asarray(order), jnp.asarray(starts),
        jnp.asarray(sizes), jnp.asarray(w), num_samples=nboot, num_groups=k,
    )
