r"""The result of an audit: :class:`AuditFrame` and its fairlearn-style views.

An :class:`AuditFrame` holds what :func:`ofijax.audit` (or :func:`ofijax.auditing.audit_from_counts`)
computed: per-group confusion matrices and metrics, the k × k OFI/DI/TE and p-value tables,
bootstrap intervals, one row per pair with its verdict and reading, settings and notes. This
module owns its views: the vocabulary of fairlearn's ``MetricFrame`` (``.by_group``, ``.overall``,
``.difference(method="between_groups" | "to_overall")``, ``.ratio(...)``, ``.group_min()``,
``.group_max()``), ``.pairwise(metric)`` for k × k tables, ``.to_dict()`` and ``.summary()``.
Arrays in, pandas out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax import metrics as mt
from ofijax.auditing._report import group_label, render_report, to_jsonable
from ofijax.auditing._rules import GROUP_METRICS
from ofijax.auditing._verdicts import VERDICTS

__all__ = ["AuditFrame", "PAIR_METRICS"]

#: Accepted short names for the per-group metrics.
_ALIASES = {
    "b": "benefit",
    "E[b]": "expected_benefit",
    "B": "marginal_benefit",
    "selection_rate": "benefit",
    "base_rate": "expected_benefit",
    "group_size": "n",
    "tpr": "true_positive_rate",
    "fpr": "false_positive_rate",
    "fnr": "false_negative_rate",
    "tnr": "true_negative_rate",
    "ppv": "positive_predictive_value",
}

#: Pairwise tables offered by ``AuditFrame.pairwise`` besides per-group metric differences.
PAIR_METRICS = ("ofi", "di", "impact_ratio", "te", "p_value", "p_adjusted", "ci_low", "ci_high")

_DIFF_METHODS = ("between_groups", "to_overall")


def _metric_name(metric: str) -> str:
    name = _ALIASES.get(metric, metric)
    if name not in GROUP_METRICS:
        opts = ", ".join(list(GROUP_METRICS) + list(_ALIASES))
        raise ValueError(f"metric: unknown per-group metric {metric!r}; choose one of {opts}.")
    return name


class AuditFrame(NamedTuple):
    """Result of :func:`audit`: per-group metrics, pairwise OFI/DI/TE, significance and verdicts.

    Attributes:
        cms: ``(k, 4)`` confusion matrices (TP, FN, FP, TN) of the groups, in ``groups`` order.
        groups: the ``k`` group labels (tuples when several sensitive columns were given).
        names: names of the sensitive columns.
        by_group: per-group metrics (rows = groups): n, tp, fn, fp, tn, benefit b, expected_benefit
            E[b], marginal_benefit B and the rates (NaN where a rate's denominator is 0).
        overall: the same metrics on the pooled confusion matrix of all groups.
        ofi: ``(k, k)`` OFI(i, j) = B_i − B_j.
        di: ``(k, k)`` disparate impact of i relative to j (variant in ``settings``): the paper's
            directional r_i / r_j, NaN when group j selects no one.
        impact_ratio: ``(k, k)`` min(r_i, r_j) / max(r_i, r_j) (symmetric; NaN only when both
            rates are 0): the ratio the four-fifths readings and verdicts use.
        te: ``(k, k)`` treatment equality FN_i/FP_i − FN_j/FP_j.
        p_value: ``(k, k)`` two-sided p-values of OFI under ``settings["null"]`` (NaN when the
            counts are not integers, e.g. with fractional sample weights).
        p_adjusted: ``(k, k)`` p-values adjusted over the k(k−1)/2 pairs (``settings["correction"]``).
        ci_low: ``(k, k)`` lower bootstrap bounds of OFI(i, j).
        ci_high: ``(k, k)`` upper bounds.
        pairs: one row per unordered pair (i before j in group order): OFI, interval (per pair,
            ``ci_low``/``ci_high``, and simultaneous over all pairs by Bonferroni,
            ``ci_low_simultaneous``/``ci_high_simultaneous``), p-values with ``p_method``, the
            method that produced each: ``"exact"``, or the approximate ``"saddlepoint"`` (relative
            error ≤ 2e-3), ``"bracketed"`` (uniform null, very large groups; ≤ 2e-4),
            ``"truncated"`` (an exact window with its bound) and ``"monte_carlo"`` (an estimate from
            ``num_samples`` draws); with fractional weights ``"n/a (bootstrap interval)"``),
            ``p_error_bound`` (a bound on the relative error |p̂ − p|/p: 0.0 where exact, NaN for
            Monte Carlo estimates and bootstrap-only pairs), DI,
            ``impact_ratio`` and the four-fifths reading, TE, the verdict, who is disadvantaged
            and the reading in words.
        settings: the options used (alpha, null, method, correction, confidence, …).
        scan: the worst subgroups found by FPR-/TPR-/IJDI-Scan (``audit(..., scan=True)``; each scan's
            ``top`` lists its ``scan_top_k`` worst, see :func:`run_scans`), or None.
        notes: remarks worth reading (undefined metrics, fallbacks).
    """

    cms: np.ndarray
    groups: tuple
    names: tuple
    by_group: pd.DataFrame
    overall: pd.Series
    ofi: np.ndarray
    di: np.ndarray
    te: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    pairs: pd.DataFrame
    settings: dict
    scan: dict | None
    notes: tuple

    @property
    def impact_ratio(self) -> np.ndarray:
        """``(k, k)`` impact ratios min(r_i, r_j) / max(r_i, r_j) of the selection rates (the
        ``di_variant``'s rates; symmetric, NaN only when both are 0): the four-fifths rule's ratio."""
        variant = self.settings.get("di_variant", "paper")
        return np.asarray(mt.pairwise(functools.partial(mt.impact_ratio, variant=variant),
                                      np.asarray(self.cms, np.float64)), np.float64)

    # ---------------------------------------------------------------- indexes ----------------
    def _frame(self, matrix: np.ndarray) -> pd.DataFrame:
        idx = self.by_group.index
        df = pd.DataFrame(np.asarray(matrix, dtype=np.float64), index=idx, columns=idx.copy())
        return df

    # ---------------------------------------------------------------- fairlearn vocabulary -----
    def _metric_columns(self, metric: str | None) -> pd.DataFrame:
        df = self.by_group.astype(np.float64)
        if metric is None:
            return df
        return df[[_metric_name(metric)]]

    @staticmethod
    def _squeeze(result: pd.Series, metric: str | None):
        return float(result.iloc[0]) if metric is not None else result

    def group_min(self, metric: str | None = None):
        """Smallest per-group value (NaN if any group's value is undefined).

        Args:
            metric: a :data:`GROUP_METRICS` name or alias; ``None`` gives a Series of all metrics.
        """
        return self._squeeze(self._metric_columns(metric).min(skipna=False), metric)

    def group_max(self, metric: str | None = None):
        """Largest per-group value (NaN if any group's value is undefined)."""
        return self._squeeze(self._metric_columns(metric).max(skipna=False), metric)

    def difference(self, metric: str | None = None, method: str = "between_groups"):
        """fairlearn's difference: ``max − min`` over groups (``"between_groups"``), or the largest
        ``|group − overall|`` (``"to_overall"``).

        ``difference("marginal_benefit")`` (between groups) is the largest |OFI| over all pairs.
        """
        v.check_choice(method, "method", _DIFF_METHODS)
        df = self._metric_columns(metric)
        if method == "between_groups":
            res = df.max(skipna=False) - df.min(skipna=False)
        else:
            ov = self.overall[df.columns].astype(np.float64)
            res = (df - ov).abs().max(skipna=False)
        return self._squeeze(res, metric)

    def ratio(self, metric: str | None = None, method: str = "between_groups"):
        """fairlearn's ratio: ``min / max`` over groups (``"between_groups"``), or the smallest
        ``min(group/overall, overall/group)`` (``"to_overall"``). Meaningful for non-negative
        metrics (rates); for the signed marginal benefit use :meth:`difference`."""
        v.check_choice(method, "method", _DIFF_METHODS)
        df = self._metric_columns(metric)
        with np.errstate(divide="ignore", invalid="ignore"):
            if method == "between_groups":
                res = df.min(skipna=False) / df.max(skipna=False)
            else:
                ov = self.overall[df.columns].astype(np.float64)
                r = df / ov
                res = np.minimum(r, 1.0 / r).min(skipna=False)
        res = res.replace([np.inf, -np.inf], np.nan)
        return self._squeeze(res, metric)

    def pairwise(self, metric: str | Callable = "ofi") -> pd.DataFrame:
        """k × k table ``M[i, j]`` (rows i, columns j).

        Args:
            metric: ``"ofi"`` (B_i − B_j), ``"di"``, ``"impact_ratio"``, ``"te"``, ``"p_value"``,
                ``"p_adjusted"``,
                ``"ci_low"``, ``"ci_high"``; a per-group metric name (its difference m_i − m_j);
                or a callable two-group metric ``f(cm_i, cm_j)`` such as :func:`ofijax.ofi`.
        """
        if callable(metric):
            return self._frame(np.asarray(mt.pairwise(metric, jnp.asarray(self.cms))))
        tables = {
            "ofi": self.ofi, "di": self.di, "impact_ratio": self.impact_ratio, "te": self.te,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted, "ci_low": self.ci_low, "ci_high": self.ci_high,
        }
        if metric in tables:
            return self._frame(tables[metric])
        try:
            name = _metric_name(metric)
        except ValueError:
            opts = ", ".join(PAIR_METRICS)
            raise ValueError(
                f"metric: unknown pairwise metric {metric!r}; choose one of {opts}, a per-group "
                f"metric ({', '.join(GROUP_METRICS)}) or a callable f(cm_i, cm_j)."
            ) from None
        col = self.by_group[name].to_numpy(dtype=np.float64)
        return self._frame(col[:, None] - col[None, :])

    # ---------------------------------------------------------------- reports ----------------
    @property
    def verdicts(self) -> pd.DataFrame:
        """The verdict columns of :attr:`pairs` (group_i, group_j, verdict, disadvantaged, reading)."""
        return self.pairs[["group_i", "group_j", "verdict", "disadvantaged", "reading"]]

    def to_dict(self) -> dict:
        """JSON-ready dictionary (NaN → None) of every table, the settings and the notes."""
        labels = [group_label(g) for g in self.groups]
        bg = self.by_group.reset_index(drop=True)
        bg.insert(0, "group", labels)
        pairs = self.pairs.copy()
        pairs["group_i"] = [group_label(g) for g in pairs["group_i"]]
        pairs["group_j"] = [group_label(g) for g in pairs["group_j"]]
        pw = {m: to_jsonable(np.asarray(getattr(self, m), np.float64).tolist()) for m in PAIR_METRICS}
        return {
            "groups": labels,
            "group_columns": [str(nm) for nm in self.names],
            "settings": to_jsonable(dict(self.settings)),
            "verdict_counts": {v_: int((self.pairs["verdict"] == v_).sum()) for v_ in VERDICTS},
            "overall": to_jsonable(dict(self.overall.items())),
            "by_group": to_jsonable(bg.to_dict("records")),
            "pairs": to_jsonable(pairs.to_dict("records")),
            "pairwise": pw,
            "scan": to_jsonable(self.scan),
            "notes": list(self.notes),
        }

    def summary(self, digits: int = 3, *, explain: bool = False) -> str:
        """A readable plain-text report: verdict counts, findings in words (most severe first),
        the groups' and pairs' tables, scans and notes (:func:`ofijax.auditing.render_report`).

        Args:
            digits: decimals of the rates.
            explain: append "How to read this report" (every column and verdict defined).
        """
        return render_report(self, "text", digits=digits, explain=explain)

    def __repr__(self) -> str:  # the default NamedTuple repr would dump every array
        k = len(self.groups)
        counts = self.pairs["verdict"].value_counts().to_dict()
        verdicts = ", ".join(f"{n} {v_}" for v_, n in counts.items())
        return f"AuditFrame({k} groups, {len(self.pairs)} pairs: {verdicts}; null={self.settings['null']!r})"
