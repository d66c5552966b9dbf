r"""Batch audits: many candidate models or decision thresholds audited at once.

:func:`audit_batch` audits C candidates (the rows of a ``(C, n)`` prediction array, the columns
of a DataFrame of predictions, or the thresholds of a score) in one pass: per-group confusion
matrices for every candidate (one segment-sum, or :func:`ofijax.threshold_sweep` without a pass
over rows per threshold), every pairwise OFI, DI and four-fifths screen as ``(C, k, k)`` arrays,
and the p-value of every (candidate, pair) from one vectorized call of the one OFI p-value engine,
:func:`ofijax.distributions.ofi_pvalue_cms` (exact in log space, so small p-values keep their
digits; where groups are very large or the batch's exact work is, approximations with a stated
relative error bound, flagged with their bound in ``pairs["p_error_bound"]``).
Each candidate's numbers and verdicts come from the audit's own rules
(:func:`ofijax.auditing._rules.apply_rules`, of which :func:`ofijax.audit` is the one-candidate
case), and its arguments pass the audit's own checks (same refusals, same messages):

* adjusted p (Holm over the candidate's k(k−1)/2 pairs, as ``audit``) < ``alpha`` →
  **algorithmic bias**;
* otherwise the impact ratio (lower selection rate over the higher) below 4/5 →
  **selection-rate disparity**;
* otherwise → **no evidence**.

**Picking the best of many candidates is itself a selection.** Each candidate's own verdicts are
corrected only over its pairs, as in a one-model audit. When you then *choose* among hundreds of
candidates the one that looks fairest, you have made hundreds of comparisons: some candidate will
look clean by chance and some will look biased by chance. ``across`` therefore also adjusts the
p-values over **all** candidates × pairs (``"holm"``: family-wise error over the whole batch;
``"bh"``: Benjamini–Hochberg false-discovery rate; ``"none"``), reported as ``p_across`` and
``significant_across``. Neither correction makes the *chosen* candidate's numbers unbiased: the
winner's |OFI| and accuracy are optimistic on the data used to choose it. Confirm the choice on
held-out data with a one-model :func:`ofijax.audit`.

This module owns :func:`audit_batch`, :class:`BatchAudit`, the candidates' inputs and utilities
and the batch's p-values; the frontier helpers that read its per-candidate summary
(:func:`pareto_frontier`, :func:`select_candidates`, :func:`plot_frontier`) live in ``_frontier``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax import distributions as _dist
from ofijax.auditing import _significance as sig
from ofijax.auditing._frontier import (
    FAIRNESS_COSTS,
    pareto_frontier,
    plot_frontier,
    select_candidates,
)
from ofijax.auditing._groups import MAX_LEVELS
from ofijax.auditing._report import group_label
from ofijax.auditing._rules import apply_rules, check_groups, check_options, prepare_rows
from ofijax.auditing._significance import benjamini_hochberg, holm
from ofijax.auditing._verdicts import VERDICTS, adjust_pvalues
from ofijax.cm import FN, FP, TN, TP, group_confusion_matrices, threshold_sweep

__all__ = [
    "BatchAudit",
    "audit_batch",
    "pareto_frontier",
    "select_candidates",
    "plot_frontier",
    "ACROSS",
    "UTILITIES",
    "FAIRNESS_COSTS",
]

#: Corrections across candidates offered by :func:`audit_batch`.
ACROSS = ("holm", "bh", "none")

#: Named utilities of a candidate, functions of its pooled ``(C, 4)`` confusion matrices.
UTILITIES: dict[str, Callable[[np.ndarray], np.ndarray]] = {}

_MAX_CANDIDATES = 1_000_000


def _rate(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _u_accuracy(c):
    return _rate(c[..., TP] + c[..., TN], c.sum(-1))


def _u_balanced(c):
    return 0.5 * (_rate(c[..., TP], c[..., TP] + c[..., FN]) + _rate(c[..., TN], c[..., TN] + c[..., FP]))


UTILITIES.update({
    "accuracy": _u_accuracy,
    "balanced_accuracy": _u_balanced,
    "true_positive_rate": lambda c: _rate(c[..., TP], c[..., TP] + c[..., FN]),
    "positive_predictive_value": lambda c: _rate(c[..., TP], c[..., TP] + c[..., FP]),
    "selection_rate": lambda c: _rate(c[..., TP] + c[..., FP], c.sum(-1)),
})


class BatchAudit(NamedTuple):
    """Result of :func:`audit_batch`: tidy tables over candidates, groups and pairs.

    Attributes:
        cms: ``(C, k, 4)`` int64 confusion matrices (TP, FN, FP, TN) of every candidate and group.
        groups: the ``k`` group labels (sorted, as :func:`ofijax.audit`).
        names: names of the sensitive columns.
        candidate_ids: the ``C`` candidate labels (column names, indices or thresholds).
        thresholds: ``(C,)`` thresholds for a score sweep, else ``None``.
        by_group: one row per (candidate, group): n, tp, fn, fp, tn, selection_rate, accuracy,
            true/false positive rates, marginal_benefit B.
        pairs: one row per (candidate, unordered pair i < j): OFI, p_value (two-sided; 0.0 only
            below 1e-308, where ``log10_p_value`` keeps its digits; ``approximate`` is True where
            it came from an approximate path of the engine or is a Monte Carlo estimate;
            ``p_method`` names the method: ``"exact"``, ``"saddlepoint"``, ``"bracketed"``,
            ``"truncated"`` or ``"monte_carlo"``; ``"exact"`` also where M = 0 gives p = 1
            exactly; ``p_error_bound`` bounds the relative error |p̂ − p|/p: 0.0 where exact, NaN
            for Monte Carlo estimates),
            p_adjusted (within the candidate, ``correction``), p_across (over all candidates ×
            pairs, ``across``), di (directional r_i / r_j), impact_ratio (min/max, symmetric),
            four_fifths (read from the impact ratio), verdict (``audit``'s rules, within-candidate
            p-values), significant_across, disadvantaged group, selection rates and accuracies.
        candidates: one row per candidate: utility, accuracy, selection_rate, max_abs_ofi,
            worst_pair, worst_ofi, di_ratio (min/max selection rate over groups), di_min,
            di_max, four_fifths_pass, n_significant (within), n_significant_across, n_systemic,
            verdict (the most severe over its pairs), sorted as given (see :meth:`by_severity`).
        settings: the options used (alpha, null, correction, across, utility, …).
        notes: remarks worth reading (the selection caveat, undefined DIs).
    """

    cms: np.ndarray
    groups: tuple
    names: tuple
    candidate_ids: tuple
    thresholds: np.ndarray | None
    by_group: pd.DataFrame
    pairs: pd.DataFrame
    candidates: pd.DataFrame
    settings: dict
    notes: tuple

    def by_severity(self) -> pd.DataFrame:
        """The per-candidate table, most severe first: significant pairs across candidates, then
        within, then systemic disparities, then max |OFI|."""
        c = self.candidates
        return c.sort_values(
            ["n_significant_across", "n_significant", "n_systemic", "max_abs_ofi"],
            ascending=False, kind="stable",
        )

    def frontier(self, fairness: str = "max_abs_ofi") -> pd.DataFrame:
        """:func:`pareto_frontier` of this batch (utility vs ``fairness``)."""
        return pareto_frontier(self, fairness=fairness)

    def select(self, **constraints: Any) -> pd.DataFrame:
        """:func:`select_candidates` of this batch."""
        return select_candidates(self, **constraints)

    def plot(self, **kwargs: Any):
        """:func:`plot_frontier` of this batch; returns the matplotlib figure."""
        return plot_frontier(self, **kwargs)


# ------------------------------------------------------------------------------------------------
# The p-value engine (one vectorized call over every candidate × pair)
# ------------------------------------------------------------------------------------------------


def _batch_pvalues(cms: np.ndarray, null: str, method: str, key: Any = None,
                   num_samples: int = 10_000) -> tuple[np.ndarray, ...]:
    """``(C, P)`` two-sided p-values of every candidate's pairs i < j (upper-triangle order), their
    natural logs (digits kept below 1e-308, where the p-value itself underflows to 0),
    ``(C, P)`` booleans: True where the engine took an approximate path or the p-value is a
    Monte Carlo estimate (approximate), the ``(C, P)`` method names and the ``(C, P)`` bounds on
    the relative error (0.0 where exact, NaN for Monte Carlo estimates).

    One call of the vectorized engine :func:`ofijax.distributions.ofi_pvalue_cms` on the
    distinct tests: a test depends only on (n_i, n_j, the pair's pooled counts, M = |D_i n_j −
    D_j n_i|) — the uniform null only on (n_i, n_j, M) — so a threshold grid finer than the
    scores' resolution, or models that agree on a pair, cost one test. M = 0 gives p = 1 exactly.
    """
    c = np.asarray(cms, np.int64)
    k = c.shape[-2]
    iu, ju = np.triu_indices(k, 1)
    n = c.sum(-1)
    d = c[..., FP] - c[..., FN]
    ni, nj = n[:, iu], n[:, ju]
    m = np.abs(d[:, iu] * nj - d[:, ju] * ni)
    cols = [ni, nj, m]
    if null == "pooled":
        pooled = c[:, iu, :] + c[:, ju, :]
        cols += [pooled[..., q] for q in range(4)]
    tests = np.stack([x.reshape(-1) for x in cols], -1)
    p = np.ones(tests.shape[0])
    log_p = np.zeros(tests.shape[0])
    approx = np.zeros(tests.shape[0], dtype=bool)
    how = np.full(tests.shape[0], "exact", dtype=object)  # M = 0: p = 1 exactly
    err = np.zeros(tests.shape[0])
    todo = np.flatnonzero(tests[:, 2] > 0)
    if todo.size:
        _, first, inv = np.unique(tests[todo], axis=0, return_index=True, return_inverse=True)
        rep = todo[first]  # one representative (candidate, pair) per distinct test
        cand, pair = np.divmod(rep, iu.size)
        inv = inv.reshape(-1)
        ci, cj = c[cand, iu[pair]], c[cand, ju[pair]]
        if method == "monte_carlo":
            # each test's key is folded from the test's own numbers (see _monte_carlo_pvalues): the
            # estimate of a pair does not depend on its position, nor on group or candidate order
            pv = sig._monte_carlo_pvalues(key, ci, cj, null, num_samples)
            p[todo] = pv[inv]
            log_p[todo] = np.log(pv[inv])
            approx[todo] = True
            how[todo] = "monte_carlo"
            err[todo] = np.nan
        else:
            r = _dist.ofi_pvalue_cms(ci, cj, null=null, method=method)
            p[todo] = np.clip(np.asarray(r.p_value, np.float64)[inv], 0.0, 1.0)
            log_p[todo] = np.minimum(np.asarray(r.log_p_value, np.float64)[inv], 0.0)
            approx[todo] = np.asarray(r.approximate, bool)[inv]
            how[todo] = np.asarray(r.method, dtype=object).reshape(-1)[inv]
            err[todo] = np.asarray(r.error_bound, np.float64).reshape(-1)[inv]
    shape = m.shape
    return (p.reshape(shape), log_p.reshape(shape), approx.reshape(shape), how.reshape(shape),
            err.reshape(shape))


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------


def _candidate_predictions(y_pred: Any, candidates: Any) -> tuple[np.ndarray, tuple]:
    """``(C, n)`` int8 predictions and C candidate labels from an array, DataFrame or dict."""
    if isinstance(y_pred, dict):
        if not y_pred:
            raise ValueError("y_pred: the dict of candidates is empty; pass at least one prediction column.")
        ids = tuple(y_pred)
        arr = np.stack([v.check_binary(y_pred[c], f"y_pred[{c!r}]") for c in ids])
    elif isinstance(y_pred, pd.DataFrame):
        if y_pred.shape[1] == 0:
            raise ValueError("y_pred: the DataFrame has no columns; one column per candidate.")
        ids = tuple(y_pred.columns)
        arr = v.check_binary(y_pred.to_numpy().T, "y_pred")
    else:
        arr = v.check_binary(y_pred, "y_pred")
        if arr.ndim < 2:
            raise ValueError(
                f"y_pred: audit_batch needs candidates along leading axes, shape (C, n); got shape "
                f"{arr.shape}. Use ofijax.audit for one prediction vector, or y_pred[None]."
            )
        lead = arr.shape[:-1]
        arr = arr.reshape(-1, arr.shape[-1])
        ids = tuple(range(arr.shape[0])) if len(lead) == 1 else tuple(np.ndindex(*lead))
    if candidates is not None:
        names = tuple(candidates)
        if len(names) != arr.shape[0]:
            raise ValueError(f"candidates: {len(names)} names for {arr.shape[0]} candidates; pass one per candidate.")
        if len(set(names)) != len(names):
            raise ValueError("candidates: names must be distinct.")
        ids = names
    if arr.shape[0] > _MAX_CANDIDATES:
        raise ValueError(f"y_pred: {arr.shape[0]} candidates exceed the limit of {_MAX_CANDIDATES}; split the batch.")
    return arr, ids


# ------------------------------------------------------------------------------------------------
# audit_batch
# ------------------------------------------------------------------------------------------------


def audit_batch(
    y_true: Any,
    y_pred: Any = None,
    *,
    sensitive_features: Any,
    data: Any = None,
    scores: Any = None,
    thresholds: Any = None,
    candidates: Any = None,
    sample_weight: Any = None,
    beneficial_label: int = 1,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "auto",
    key: Any = None,
    num_samples: int = 10_000,
    correction: str = "holm",
    across: str = "holm",
    di_variant: str = "paper",
    utility: str | Callable = "accuracy",
    min_group_size: int | None = None,
    bins: Any = None,
    max_levels: int = MAX_LEVELS,
) -> BatchAudit:
    r"""Audit many candidates (models, seeds or decision thresholds) at once, with exact tests.

    For every candidate c and pair of groups i < j: OFI(i, j) = B_i − B_j with B = (FP − FN)/n,
    its two-sided p-value under ``null`` (the test of :func:`ofijax.ofi_test`, from the one engine
    :func:`ofijax.distributions.ofi_pvalue_cms`, deduplicated and computed for all candidates ×
    pairs in one vectorized call; exact, or an approximation with a stated relative error bound
    where ``method`` allows it, flagged in ``pairs["approximate"]`` and
    ``pairs["p_error_bound"]``), the p-value
    adjusted within the candidate (``correction``, as :func:`ofijax.audit`) and across the whole
    batch (``across``), DI and the four-fifths screen, and :func:`ofijax.audit`'s verdict. Per
    candidate: a utility, max |OFI|, the worst pair, DI range and counts of significant pairs.

    Selection caveat: choosing the fairest (or most accurate) of many candidates is itself a
    selection among many noisy comparisons. ``across="holm"`` bounds the chance of *any* false
    "algorithmic bias" finding over the whole batch, ``"bh"`` the expected share of false ones;
    neither removes the optimism of the chosen candidate's own numbers. Confirm on held-out data.

    Args:
        y_true: ``(n,)`` labels in {0, 1} (or the text labels ``"0"``/``"1"``); 1 = the beneficial
            outcome (see ``beneficial_label``). A column name when ``data`` is given.
        y_pred: candidates' predictions in {0, 1}: an array ``(C, n)`` (or ``(..., n)``; leading
            axes are flattened), a DataFrame with one column per candidate, or a dict name → ``(n,)``;
            with ``data``, a list of column names (one candidate each).
            Leave ``None`` when auditing a threshold grid.
        sensitive_features: ``(n,)`` group labels, or several columns whose intersections are groups;
            with ``data``, a column name or a list of them.
        data: optional DataFrame whose columns ``y_true``, ``y_pred``, ``sensitive_features``,
            ``scores`` and ``sample_weight`` may name, as in :func:`ofijax.audit`.
        scores: ``(n,)`` scores for a threshold grid: candidate t predicts 1 where score ≥ t
            (higher = more likely the beneficial prediction, in ``beneficial_label``'s coding).
        thresholds: ``(T,)`` thresholds for ``scores``.
        candidates: optional names of the C candidates (default: column names, dict keys, indices,
            or the thresholds).
        sample_weight: optional ``(n,)`` non-negative **integer** frequency weights (exact tests
            need integer counts; for fractional weights audit each candidate with ``audit``).
        beneficial_label: 1 (default) or 0 when label/prediction 1 is the harmful outcome.
        min_group_size: smallest group given a verdict (default: :func:`ofijax.auditing.min_group_size`
            of ``alpha``, as in :func:`ofijax.audit`); smaller groups' pairs read "too small to judge".
        bins: cut numeric group columns into quantile bins, as in :func:`ofijax.audit` (an int, or
            ``{column: count or edges}``; edges in ``settings["bins"]``).
        max_levels: most distinct values of an unbinned group column (default 20), as in
            :func:`ofijax.audit`: a column with more is refused unless ``bins`` cuts it.
        alpha: significance level of the verdicts.
        null: ``"pooled"`` (default) or ``"uniform"``, as in :func:`ofijax.ofi_test`.
        method: p-values from :func:`ofijax.distributions.ofi_pvalue_cms`: ``"auto"`` (default:
            exact in log space — the numbers of :func:`ofijax.audit` — unless the batch's exact
            work is very large or a group is beyond the exact engine, then the saddlepoint for
            pairs whose smaller group s has ≥ 2,000 rows, n_s(p_FN + p_FP) ≥ 200 and
            n_s(p_TP + p_TN) ≥ 10, relative error ≤ 2e-3, or the engine's other bounded
            approximations; flagged in ``pairs["approximate"]`` with the bound in
            ``pairs["p_error_bound"]``; it never refuses a size), ``"exact"``, ``"saddlepoint"`` or
            ``"monte_carlo"`` (``num_samples`` draws per distinct test with ``key``, which it
            requires; each test's key is folded from its own counts, so an estimate does not
            depend on the order of candidates or groups). ``pairs["p_method"]`` names the method
            of each p-value.
        key: PRNG key or int seed, used (and required) only by ``method="monte_carlo"``.
        num_samples: Monte Carlo draws per test (an integer ≥ 1).
        correction: within-candidate correction over its pairs: ``"holm"`` (default, as ``audit``),
            ``"bonferroni"`` or ``"none"``.
        across: correction over all candidates × pairs: ``"holm"`` (family-wise, default),
            ``"bh"`` (Benjamini–Hochberg false-discovery rate) or ``"none"`` (= ``p_adjusted``).
        di_variant: ``"paper"`` (default) or ``"pp_over_p"``, as in :func:`ofijax.audit`.
        utility: the frontier's utility: a name in :data:`UTILITIES` (``"accuracy"`` default,
            ``"balanced_accuracy"``, ``"true_positive_rate"``, ``"positive_predictive_value"``,
            ``"selection_rate"``) or a callable of the pooled ``(C, 4)`` int64 counts → ``(C,)``.

    Returns:
        :class:`BatchAudit`.

    Raises:
        ValueError: as :func:`ofijax.audit` (the same checks and messages: non-binary labels,
            length mismatches, misaligned pandas indexes, missing or continuous group values,
            fewer than two or more than 200 groups, bad options), and both or neither of
            ``y_pred`` and ``scores``, or fractional weights. TypeError: as :func:`ofijax.audit`.

    Examples:
        Two candidates on six rows; the second predicts everyone positive. (Groups of 3 are below
        the minimum-evidence size at alpha = 0.05, so the example lowers ``min_group_size``.)

        >>> import numpy as np
        >>> from ofijax.auditing import audit_batch
        >>> y = [1, 0, 1, 0, 1, 0]
        >>> g = ["a", "a", "a", "b", "b", "b"]
        >>> ba = audit_batch(y, np.array([[1, 0, 1, 0, 1, 0], [1, 1, 1, 1, 1, 1]]), sensitive_features=g,
        ...                  min_group_size=1)
        >>> ba.pairs[["candidate", "group_i", "group_j", "ofi", "p_value", "verdict"]].round(3)
           candidate group_i group_j    ofi  p_value                   verdict
        0          0       a       b  0.000    1.000  selection-rate disparity
        1          1       a       b -0.333    0.688               no evidence
        >>> ba.candidates[["accuracy", "max_abs_ofi", "n_significant"]].round(3)
                   accuracy  max_abs_ofi  n_significant
        candidate
        0               1.0        0.000              0
        1               0.5        0.333              0
    """
    y_true, y_pred, sensitive_features, scores, sample_weight = v.columns_from_data(
        data, lists=("sensitive_features", "y_pred"), y_true=y_true, y_pred=y_pred,
        sensitive_features=sensitive_features, scores=scores, sample_weight=sample_weight).values()
    a, min_n = check_options(null=null, method=method, correction=correction, di_variant=di_variant,
                             alpha=alpha, min_group_size=min_group_size, beneficial_label=beneficial_label)
    v.check_choice(across, "across", ACROSS)
    mc_key, mc_num = None, 0
    if method == "monte_carlo":
        mc_key = v.as_key(sig._require_key(key))
        mc_num = sig._num_draws(num_samples)
    util_fn, util_name = _utility(utility)
    # the audit's one conversion, alignment and check of the row-wise arguments (groups binned)
    rows, bin_edges = prepare_rows(bins=bins, max_levels=max_levels, y_true=y_true, y_pred=y_pred,
                                   sensitive_features=sensitive_features, scores=scores,
                                   sample_weight=sample_weight)
    y_true, y_pred, sensitive_features, scores, sample_weight = rows.values()
    if sample_weight is not None:  # the audit refuses negative, missing and non-numeric weights
        w = v.as_numpy(sample_weight, "sample_weight")
        if w.dtype.kind in "biuf" and np.any(np.isfinite(w) & (w != np.round(w))):
            raise ValueError(
                "sample_weight: audit_batch needs non-negative integer (frequency) weights, since the "
                "exact tests need integer counts; audit each candidate with ofijax.audit instead."
            )
    gcm, ids, th = _candidate_counts(y_true, y_pred, sensitive_features, scores, thresholds, candidates,
                                     sample_weight, beneficial_label)
    groups = gcm.groups
    names = check_groups(groups, gcm.names)  # two to MAX_GROUPS groups, as in the audit
    k = len(groups)
    cms = np.rint(np.asarray(gcm.cms, np.float64)).astype(np.int64).reshape(-1, k, 4)

    # p-values of every (candidate, pair), adjusted within each candidate and across the batch
    p_raw, log_p, approx, p_how, p_err = _batch_pvalues(cms, null, method, mc_key, mc_num)  # (C, P)
    p_adj = adjust_pvalues(p_raw, correction)
    if across == "holm":
        p_acr = holm(p_raw.reshape(-1)).reshape(p_raw.shape)
    elif across == "bh":
        p_acr = benjamini_hochberg(p_raw).reshape(p_raw.shape)
    else:
        p_acr = p_adj.copy()
    pv = _PValues(p_raw, log_p, approx, p_how, p_err, p_adj, p_acr)

    # the audit's rules on every candidate: rates, OFI, DI, impact ratio, four-fifths, verdicts
    rules = apply_rules(cms, p_adj < a, di_variant=di_variant, min_group_size=min_n, with_te=False)
    glabels = [group_label(g) for g in groups]
    by_group, pairs = _group_and_pair_tables(cms, rules, pv, ids, glabels, alpha=a)
    summary = _candidate_table(cms, rules, pv, ids, glabels, th, util_fn, alpha=a)
    notes = _batch_notes(rules, pv, bin_edges, correction=correction, across=across, method=method,
                         mc_num=mc_num, null=null)
    settings = {
        "alpha": a, "null": null, "method": method, "num_samples": mc_num, "correction": correction,
        "across": across,
        "di_variant": di_variant, "beneficial_label": int(beneficial_label), "utility": util_name,
        "num_candidates": cms.shape[0], "num_pairs": p_raw.shape[1], "weighted": sample_weight is not None,
        "bins": bin_edges,
    }
    return BatchAudit(
        cms=cms, groups=tuple(groups), names=tuple(names), candidate_ids=tuple(ids), thresholds=th,
        by_group=by_group, pairs=pairs, candidates=summary, settings=settings, notes=tuple(notes),
    )


def _utility(utility: Any) -> tuple[Callable, str]:
    """The utility function and its name (a name in :data:`UTILITIES` or a callable)."""
    if isinstance(utility, str):
        v.check_choice(utility, "utility", tuple(UTILITIES))
        return UTILITIES[utility], utility
    if callable(utility):
        return utility, getattr(utility, "__name__", "utility")
    raise TypeError(f"utility: must be a name in {tuple(UTILITIES)} or a callable; got {type(utility).__name__}.")


def _candidate_counts(y_true, y_pred, sensitive_features, scores, thresholds, candidates, sample_weight,
                      beneficial_label):
    """Per-group confusion matrices of every candidate (predictions, or a score's thresholds),
    the candidates' labels and the thresholds (None for predictions)."""
    th = None
    if scores is not None or thresholds is not None:
        if y_pred is not None:
            raise ValueError("y_pred: pass either y_pred (candidate predictions) or scores + thresholds, not both.")
        if scores is None or thresholds is None:
            raise ValueError("thresholds: a threshold grid needs both scores and thresholds.")
        th = np.asarray(v.as_numpy(thresholds, "thresholds")).reshape(-1)
        sc = np.asarray(v.as_numpy(scores, "scores"))
        for name, x in (("thresholds", th), ("scores", sc)):
            if x.dtype.kind not in "biuf":
                raise ValueError(f"{name}: must be numeric, got dtype {x.dtype}.")
            v.check_finite(x, name)
        if th.size == 0:
            raise ValueError("thresholds: is empty; pass at least one threshold.")
        th = th.astype(np.float64)
        # Compare in float64 here, whatever jax_enable_x64 says: a score's rank among the sorted
        # distinct thresholds (score >= t  <=>  rank(score) >= rank(t)) is a small exact integer.
        uniq = np.unique(th)
        rank_s = np.searchsorted(uniq, sc.astype(np.float64), side="right") if sc.ndim == 1 else sc
        rank_t = np.searchsorted(uniq, th, side="left") + 1
        gcm = threshold_sweep(
            y_true, rank_s, sensitive_features, rank_t,
            sample_weight=sample_weight, beneficial_label=beneficial_label,
        )
        ids = tuple(float(t) for t in th)
        if candidates is not None:
            ids = tuple(candidates)
            if len(ids) != th.size or len(set(ids)) != len(ids):
                raise ValueError(f"candidates: need {th.size} distinct names, one per threshold.")
    else:
        if y_pred is None:
            raise ValueError("y_pred: pass the candidates' predictions, or scores= and thresholds=.")
        preds, ids = _candidate_predictions(y_pred, candidates)
        gcm = group_confusion_matrices(
            y_true, preds, sensitive_features, sample_weight=sample_weight, beneficial_label=beneficial_label
        )
    return gcm, ids, th


class _PValues(NamedTuple):
    """``(C, P)`` p-values of the batch: raw, natural log, approximate?, method, error bound,
    adjusted within each candidate and across the batch."""

    raw: np.ndarray
    log: np.ndarray
    approx: np.ndarray
    how: np.ndarray
    err: np.ndarray
    adjusted: np.ndarray
    across: np.ndarray


def _group_and_pair_tables(cms, rules, pv, ids, glabels, *, alpha):
    """The batch's per-(candidate, group) and per-(candidate, pair) tables."""
    n_c, k = cms.shape[:2]
    iu, ju = np.triu_indices(k, 1)
    n_p = iu.size
    pg = rules.per_group
    n = cms.sum(-1)
    sel, acc = pg["benefit"], pg["accuracy"]
    cand_rep = np.repeat(np.arange(n_c), k)
    grp_rep = np.tile(np.arange(k), n_c)
    by_group = pd.DataFrame({
        "candidate": [ids[i] for i in cand_rep],
        "group": [glabels[j] for j in grp_rep],
        "n": n.reshape(-1),
        "tp": cms[..., TP].reshape(-1), "fn": cms[..., FN].reshape(-1),
        "fp": cms[..., FP].reshape(-1), "tn": cms[..., TN].reshape(-1),
        "selection_rate": sel.reshape(-1),
        "accuracy": acc.reshape(-1),
        "true_positive_rate": pg["true_positive_rate"].reshape(-1),
        "false_positive_rate": pg["false_positive_rate"].reshape(-1),
        "marginal_benefit": pg["marginal_benefit"].reshape(-1),
    })
    ff = rules.four_fifths[:, iu, ju]
    li, lj = np.asarray(glabels, dtype=object)[iu], np.asarray(glabels, dtype=object)[ju]
    side = rules.disadvantaged
    dis = np.where(side > 0, lj[None, :], np.where(side < 0, li[None, :], None))
    four = np.where(np.isnan(ff), "undefined", np.where(ff > 0, "fails: j selected less",
                                                        np.where(ff < 0, "fails: i selected less", "passes")))
    pair_cand = np.repeat(np.arange(n_c), n_p)
    pairs = pd.DataFrame({
        "candidate": [ids[i] for i in pair_cand],
        "group_i": np.tile(li, n_c), "group_j": np.tile(lj, n_c),
        "n_i": n[:, iu].reshape(-1), "n_j": n[:, ju].reshape(-1),
        "selection_rate_i": sel[:, iu].reshape(-1), "selection_rate_j": sel[:, ju].reshape(-1),
        "accuracy_i": acc[:, iu].reshape(-1), "accuracy_j": acc[:, ju].reshape(-1),
        "ofi": rules.ofi[:, iu, ju].reshape(-1),
        "p_value": pv.raw.reshape(-1), "p_adjusted": pv.adjusted.reshape(-1), "p_across": pv.across.reshape(-1),
        "log10_p_value": pv.log.reshape(-1) / np.log(10.0),
        "approximate": pv.approx.reshape(-1), "p_method": pv.how.reshape(-1),
        "p_error_bound": pv.err.reshape(-1),
        "di": rules.di[:, iu, ju].reshape(-1), "impact_ratio": rules.impact_ratio[:, iu, ju].reshape(-1),
        "four_fifths": four.reshape(-1),
        "verdict": np.asarray(VERDICTS, dtype=object)[rules.verdict].reshape(-1),
        "significant_across": (pv.across < alpha).reshape(-1),
    })
    pairs["disadvantaged"] = pd.Series(list(dis.reshape(-1)), dtype=object)
    return by_group, pairs


def _candidate_table(cms, rules, pv, ids, glabels, th, util_fn, *, alpha):
    """One row per candidate: utility, accuracy, the worst pair, DI range, counts of findings."""
    n_c, k = cms.shape[:2]
    iu, ju = np.triu_indices(k, 1)
    total = cms.sum(-2)
    util = np.asarray(util_fn(total), np.float64).reshape(-1)
    if util.shape != (n_c,):
        raise ValueError(f"utility: must return one value per candidate ({n_c}); got shape {util.shape}.")
    o = rules.ofi[:, iu, ju]
    abs_o = np.abs(o)
    worst = np.argmax(np.where(np.isnan(abs_o), -np.inf, abs_o), axis=1)
    rows = np.arange(n_c)
    di_all = rules.di[:, np.r_[iu, ju], np.r_[ju, iu]]  # every ordered pair
    with np.errstate(invalid="ignore"):
        di_min = np.where(np.isnan(di_all).any(1), np.nan, di_all.min(1, initial=np.inf))
        di_max = np.where(np.isnan(di_all).any(1), np.nan, di_all.max(1, initial=-np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        smax = rules.rate.max(1)
        di_ratio = np.where(smax > 0, rules.rate.min(1) / np.where(smax > 0, smax, 1.0), np.nan)
    n_sig = (rules.verdict == 0).sum(1)
    n_sys = (rules.verdict == 1).sum(1)
    li, lj = np.asarray(glabels, dtype=object)[iu], np.asarray(glabels, dtype=object)[ju]
    summary = pd.DataFrame({
        "utility": util,
        "accuracy": rules.overall["accuracy"],
        "selection_rate": rules.overall["benefit"],
        "max_abs_ofi": abs_o.max(1),
        "worst_pair": [f"{li[w]} vs {lj[w]}" for w in worst],
        "worst_ofi": o[rows, worst],
        "worst_p_adjusted": pv.adjusted[rows, worst],
        "min_p_adjusted": pv.adjusted.min(1),
        "min_p_across": pv.across.min(1),
        "di_ratio": di_ratio,
        "di_min": di_min,
        "di_max": di_max,
        "four_fifths_pass": (np.nan_to_num(rules.four_fifths[:, iu, ju], nan=1.0) == 0).all(1),
        "n_significant": n_sig,
        "n_significant_across": (pv.across < alpha).sum(1),
        "n_systemic": n_sys,
        "verdict": np.where(n_sig > 0, VERDICTS[0], np.where(n_sys > 0, VERDICTS[1], VERDICTS[3])),
    }, index=pd.Index(list(ids), name="candidate", tupleize_cols=False))
    if th is not None:
        summary.insert(0, "threshold", th)
    return summary


def _batch_notes(rules, pv, bin_edges, *, correction, across, method, mc_num, null) -> list[str]:
    """Remarks worth reading: the selection caveat, undefined DIs, approximate p-values, bins."""
    n_c, n_p = pv.raw.shape
    k = rules.ofi.shape[-1]
    iu, ju = np.triu_indices(k, 1)
    notes = [
        f"Selection: {n_c} candidates x {n_p} pairs = {n_c * n_p} tests. Verdicts use the p-values "
        f"adjusted within each candidate ({correction}), as a one-model audit; choosing among the "
        "candidates is itself a selection, so read p_across / significant_across "
        f"({across} over all tests) for the batch, and confirm the chosen candidate on held-out data.",
    ]
    n_undef = int(np.isnan(rules.di[:, iu, ju]).sum() + np.isnan(rules.di[:, ju, iu]).sum())
    if n_undef:
        n_ir = int(np.isnan(rules.impact_ratio[:, iu, ju]).sum())
        notes.append(
            f"DI (the directional ratio r_i / r_j) is undefined (0 positive predictions in the reference "
            f"group) for {n_undef} ordered candidate-pair(s); the four-fifths readings use the impact "
            f"ratio min/max, undefined only when neither group is selected ({n_ir}).")
    if method == "monte_carlo":
        notes.append(
            f"p-values are Monte Carlo estimates ({mc_num} draws per test, p = (1 + hits)/(1 + draws); "
            "column 'approximate'); pass method='auto' or 'exact' for exact ones.")
    elif pv.approx.any():
        notes.append(
            f"{int(pv.approx.sum())} of {pv.approx.size} p-values come from an approximate path of the engine "
            f"({', '.join(sorted(set(pv.how[pv.approx].tolist())))}; large groups or a large batch): "
            f"relative error ≤ {float(np.nanmax(pv.err)):.1e} "
            "(columns 'approximate', 'p_method', 'p_error_bound'); method='exact' gives exact ones "
            "where the groups are small enough."
        )
    if null == "uniform":
        notes.append("the uniform null ignores the data and is very permissive (the OFI paper's null).")
    for col, edges in bin_edges.items():
        notes.append(f"{col} was cut into {len(edges) - 1} bins at {', '.join(f'{e:g}' for e in edges)}.")
    return notes
