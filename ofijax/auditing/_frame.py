r"""The audit front door: :func:`audit` and :class:`AuditFrame`.

One call turns labels, predictions and sensitive features into per-group confusion matrices, the
OFI paper's metrics, the significance of every pairwise OFI under a named null, bootstrap intervals,
and a verdict per pair following the paper's reading (§2.3, §4):

* OFI significantly ≠ 0 → **algorithmic bias**. OFI(i, j) = B_i − B_j > 0 means group i receives more
  unjust benefit than j: the model is biased against j (and for i).
* OFI not significant but DI fails the four-fifths rule → **systemic disparity** outside the model.
* neither → **no evidence**.

The vocabulary follows fairlearn's ``MetricFrame``: ``.by_group``, ``.overall``,
``.difference(method="between_groups" | "to_overall")``, ``.ratio(...)``, ``.group_min()``,
``.group_max()``, plus ``.pairwise(metric)`` for k × k tables. Arrays in, pandas out.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax import metrics as mt
from ofijax.auditing import _significance as sig
from ofijax.cm import FN, FP, TN, TP, encode_groups, group_confusion_matrices

__all__ = ["AuditFrame", "audit", "GROUP_METRICS", "PAIR_METRICS", "VERDICTS"]

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
PAIR_METRICS = ("ofi", "di", "te", "p_value", "p_adjusted", "ci_low", "ci_high")

#: The three verdicts, in the paper's reading.
VERDICTS = ("algorithmic bias", "systemic disparity", "no evidence")

_CORRECTIONS = ("holm", "bonferroni", "none")
_DIFF_METHODS = ("between_groups", "to_overall")


def _progress(iterable, desc: str):
    """Wrap ``iterable`` in a tqdm bar when tqdm is installed, stderr is a terminal and
    ``OFIJAX_PROGRESS`` is not ``0``; otherwise return it unchanged."""
    if os.environ.get("OFIJAX_PROGRESS", "1") == "0" or not sys.stderr.isatty():
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional dependency
        return iterable
    return tqdm(iterable, desc=desc, leave=False, file=sys.stderr)


@functools.partial(jax.jit, static_argnames=("di_variant",))
def _tables(cms, *, di_variant):
    """Every per-group, overall and pairwise metric of an audit in one compiled call."""
    per_group = {name: f(cms) for name, f in GROUP_METRICS.items()}
    total = cms.sum(0)
    overall = {name: f(total) for name, f in GROUP_METRICS.items()}
    ofi_m = mt.pairwise(mt.ofi, cms)
    di_m = mt.pairwise(functools.partial(mt.disparate_impact, variant=di_variant), cms)
    te_m = mt.pairwise(mt.treatment_equality, cms)
    return per_group, overall, ofi_m, di_m, te_m, mt.four_fifths_rule(di_m)


def _label(group: Any) -> str:
    if isinstance(group, tuple):
        return " & ".join(str(g) for g in group)
    return str(group)


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
        di: ``(k, k)`` disparate impact of i relative to j (variant in ``settings``).
        te: ``(k, k)`` treatment equality FN_i/FP_i − FN_j/FP_j.
        p_value: ``(k, k)`` two-sided p-values of OFI under ``settings["null"]`` (NaN when the
            counts are not integers, e.g. with fractional sample weights).
        p_adjusted: ``(k, k)`` p-values adjusted over the k(k−1)/2 pairs (``settings["correction"]``).
        ci_low: ``(k, k)`` lower bootstrap bounds of OFI(i, j).
        ci_high: ``(k, k)`` upper bounds.
        pairs: one row per unordered pair (i before j in group order): OFI, interval, p-values,
            DI and its four-fifths reading, TE, the verdict and who is disadvantaged.
        settings: the options used (alpha, null, method, correction, confidence, …).
        scan: the worst subgroups found by FPR-/TPR-/IJDI-Scan (``audit(..., scan=True)``), or None.
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
            metric: ``"ofi"`` (B_i − B_j), ``"di"``, ``"te"``, ``"p_value"``, ``"p_adjusted"``,
                ``"ci_low"``, ``"ci_high"``; a per-group metric name (its difference m_i − m_j);
                or a callable two-group metric ``f(cm_i, cm_j)`` such as :func:`ofijax.ofi`.
        """
        if callable(metric):
            return self._frame(np.asarray(mt.pairwise(metric, jnp.asarray(self.cms))))
        tables = {
            "ofi": self.ofi, "di": self.di, "te": self.te, "p_value": self.p_value,
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
        labels = [_label(g) for g in self.groups]
        bg = self.by_group.reset_index(drop=True)
        bg.insert(0, "group", labels)
        pairs = self.pairs.copy()
        pairs["group_i"] = [_label(g) for g in pairs["group_i"]]
        pairs["group_j"] = [_label(g) for g in pairs["group_j"]]
        pw = {m: _clean(np.asarray(getattr(self, m), np.float64).tolist()) for m in PAIR_METRICS}
        return {
            "groups": labels,
            "group_columns": [str(nm) for nm in self.names],
            "settings": _clean(dict(self.settings)),
            "overall": _clean({k: _py(v_) for k, v_ in self.overall.items()}),
            "by_group": _clean([{k: _py(v_) for k, v_ in r.items()} for r in bg.to_dict("records")]),
            "pairs": _clean([{k: _py(v_) for k, v_ in r.items()} for r in pairs.to_dict("records")]),
            "pairwise": pw,
            "scan": _clean(self.scan),
            "notes": list(self.notes),
        }

    def summary(self, digits: int = 3) -> str:
        """A readable plain-text report: groups, pairs and verdicts."""
        s = self.settings
        bg = self.by_group.copy()
        bg.index = [_label(g) for g in self.groups]
        cols = ["n", "tp", "fn", "fp", "tn", "benefit", "expected_benefit", "marginal_benefit"]
        shown = bg[cols].rename(columns={"benefit": "b", "expected_benefit": "E[b]", "marginal_benefit": "B"})
        lines = [
            f"Groups ({', '.join(map(str, self.names))}); B = (FP - FN)/n, positive = beneficial",
            shown.to_string(float_format=lambda x: f"{x:.{digits}f}"),
            "",
            f"Pairs: OFI(i, j) = B_i - B_j; p-value under the {s['null']!r} null ({s['method']}), "
            f"{s['correction']} correction over {len(self.pairs)} pair(s), alpha = {s['alpha']}; "
            f"{100 * s['confidence']:.0f}% bootstrap interval ({s['num_bootstrap']} replicates)",
        ]
        p = self.pairs
        tab = pd.DataFrame({
            "i": [_label(g) for g in p["group_i"]],
            "j": [_label(g) for g in p["group_j"]],
            "OFI": p["ofi"].map(lambda x: f"{x:+.{digits}f}"),
            "interval": [f"[{a:+.{digits}f}, {b:+.{digits}f}]" for a, b in zip(p["ci_low"], p["ci_high"])],
            "p": p["p_value"].map(_fmt_p),
            "p_adj": p["p_adjusted"].map(_fmt_p),
            "DI": p["di"].map(lambda x: "undef." if np.isnan(x) else f"{x:.{digits}f}"),
            "verdict": p["verdict"],
        })
        lines.append(tab.to_string(index=False))
        lines.append("")
        lines.append("Verdicts:")
        flagged = p[p["verdict"] != "no evidence"]
        lines.extend(f"  - {r}" for r in flagged["reading"])
        quiet = len(p) - len(flagged)
        if quiet:
            lines.append(
                f"  - {'the other ' if len(flagged) else ''}{quiet} pair(s): no evidence of bias "
                "(OFI not significant, DI within the four-fifths band or undefined)."
            )
        if self.scan:
            lines.append("")
            lines.append("Worst subgroups (scan):")
            for name, r in self.scan.items():
                lines.append(f"  - {name}: {r.get('description', r)}")
        if self.notes:
            lines.append("")
            lines.extend(f"Note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __repr__(self) -> str:  # the default NamedTuple repr would dump every array
        k = len(self.groups)
        counts = self.pairs["verdict"].value_counts().to_dict()
        verdicts = ", ".join(f"{n} {v_}" for v_, n in counts.items())
        return f"AuditFrame({k} groups, {len(self.pairs)} pairs: {verdicts}; null={self.settings['null']!r})"


def _fmt_p(p: float) -> str:
    if p is None or np.isnan(p):
        return "n/a"
    if p < 1e-12:
        return "<1e-12"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def _py(x: Any) -> Any:
    if isinstance(x, (np.generic,)):
        return x.item()
    if isinstance(x, tuple):
        return _label(x)
    return x


def _clean(obj: Any) -> Any:
    """Recursively replace NaN/inf with None and NumPy scalars with Python ones (valid JSON)."""
    if isinstance(obj, dict):
        return {str(k): _clean(x) for k, x in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(x) for x in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ------------------------------------------------------------------------------------------------
# Verdicts
# ------------------------------------------------------------------------------------------------


def _reading(gi: str, gj: str, o: float, sig_: bool, evidence: str, di: float, verdict: str) -> tuple:
    """(favoured, disadvantaged, sentence) for one pair."""
    if verdict == "algorithmic bias":
        fav, dis = (gi, gj) if o > 0 else (gj, gi)
        text = (
            f"{gi} vs {gj}: algorithmic bias against {dis} — the model gives {fav} "
            f"{abs(o):.3f} more unjust benefit per person (OFI = {o:+.3f}, {evidence})."
        )
        return fav, dis, text
    if verdict == "systemic disparity":
        fav, dis = (gi, gj) if di > 1 else (gj, gi)
        text = (
            f"{gi} vs {gj}: systemic disparity outside the model — OFI = {o:+.3f} is not significant "
            f"({evidence}) but DI = {di:.3f} fails the four-fifths rule ({fav} selected more often "
            f"than {dis})."
        )
        return fav, dis, text
    di_txt = "undefined (no positive predictions in the reference group)" if np.isnan(di) else f"{di:.3f}"
    text = (
        f"{gi} vs {gj}: no evidence of bias — OFI = {o:+.3f} is not significant ({evidence}) "
        f"and DI = {di_txt}"
        + (" passes the four-fifths rule." if not np.isnan(di) else "; the four-fifths rule cannot be read.")
    )
    return None, None, text


# ------------------------------------------------------------------------------------------------
# audit
# ------------------------------------------------------------------------------------------------


def _default_names(names: tuple | None, ncols: int) -> tuple:
    if names is None or any(nm is None for nm in names):
        return ("group",) if ncols == 1 else tuple(f"sensitive_feature_{j}" for j in range(ncols))
    return tuple(names)


def audit(
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    sample_weight: Any = None,
    beneficial_label: int = 1,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "exact",
    correction: str = "holm",
    confidence: float = 0.95,
    num_bootstrap: int = 2000,
    num_null_samples: int = 10_000,
    key: Any = None,
    di_variant: str = "paper",
    scan: bool = False,
    scan_features: Any = None,
    scan_probabilities: Any = None,
    scan_lam: float = 0.0,
    scan_side: str = "both",
    num_replicates: int = 100,
) -> AuditFrame:
    r"""Audit a binary classifier for algorithmic bias and systemic disparity between groups.

    For every pair of groups (i, j) it computes OFI(i, j) = B_i − B_j with B = (FP − FN)/n, the
    two-sided p-value of |OFI| under a named null, a percentile bootstrap interval, DI and TE, and
    a verdict in the OFI paper's reading:

    * OFI significant (adjusted p < ``alpha``) → ``"algorithmic bias"``; OFI > 0 means group i
      receives more unjust benefit than j, i.e. the model is biased against j;
    * otherwise, DI outside [4/5, 5/4] → ``"systemic disparity"`` (outside the model);
    * otherwise → ``"no evidence"``.

    Args:
        y_true: ``(n,)`` labels in {0, 1}; 1 = the beneficial outcome (see ``beneficial_label``).
        y_pred: ``(n,)`` predictions in {0, 1}.
        sensitive_features: ``(n,)`` group labels, or several columns (DataFrame, dict, 2-D array)
            whose observed intersections are the groups.
        sample_weight: optional ``(n,)`` non-negative weights. Integer weights act as frequency
            weights in the exact tests; with fractional weights the p-values are NaN and the
            verdict uses the bootstrap interval (rows resampled within groups, weights kept).
        beneficial_label: 1 (default) or 0 when label/prediction 1 is the harmful outcome
            (COMPAS: 1 = recidivist); 0 flips the matrices so the positive cell is beneficial.
        alpha: significance level of the verdicts.
        null: ``"pooled"`` (default; both groups of a pair drawn from Multinomial(n_g, p) with p
            their pooled confusion matrix) or ``"uniform"`` (each matrix uniform over M(n_g), the
            OFI paper's null; very permissive). See :func:`ofijax.ofi_test`.
        method: ``"exact"`` (default) or ``"monte_carlo"`` p-values (``num_null_samples`` draws).
        correction: ``"holm"`` (default), ``"bonferroni"`` or ``"none"``, over the k(k−1)/2 pairs.
        confidence: coverage of the bootstrap intervals.
        num_bootstrap: bootstrap replicates (0 skips the intervals: NaN).
        num_null_samples: Monte Carlo draws for ``method="monte_carlo"``.
        key: PRNG key for the bootstrap (and Monte Carlo); ``None`` uses ``jax.random.key(0)`` so
            the report is reproducible; an int is a seed.
        di_variant: ``"paper"`` (P̂/n ratio, default) or ``"pp_over_p"`` (the authors' 2024 code).
        scan: also run FPR-Scan and TPR-Scan (and IJDI-Scan when ``scan_probabilities`` is given)
            over ``scan_features`` and report the most disadvantaged subgroup with its
            randomization p-value (:attr:`AuditFrame.scan`). Needs :mod:`ofijax.scan`; slow.
        scan_features: the columns to scan over (default: ``sensitive_features``).
        scan_probabilities: ``(n,)`` estimated P(y = 1 | x) for IJDI-Scan (optional).
        scan_lam: λ of IJDI-Scan.
        scan_side: ``"both"``, ``"negative"`` (FPR-Scan only: wrongly denied benefit) or
            ``"positive"`` (TPR-Scan only); the scans run in the harm orientation (see
            :func:`_run_scans`).
        num_replicates: randomization replicates of each scan's p-value (0: no test).

    Returns:
        :class:`AuditFrame`.

    Raises:
        ValueError: on non-binary labels, length mismatches, NaN, an empty input, fewer than two
            groups, or bad options.

    Examples:
        The paper's Table 1, scenario B, as rows: the test is discarded, nobody is promoted.

        >>> import numpy as np
        >>> from ofijax.auditing._frame import audit
        >>> y = np.r_[[0] * 5, 1, [1] * 7, [0] * 11]
        >>> g = ["i"] * 6 + ["j"] * 18
        >>> af = audit(y, np.zeros(24, int), sensitive_features=g, null="uniform")
        >>> af.by_group[["n", "fn", "marginal_benefit"]].round(4)
            n  fn  marginal_benefit
        group
        i   6   1           -0.1667
        j  18   7           -0.3889
        >>> round(float(af.pairwise("ofi").loc["i", "j"]), 4)
        0.2222
        >>> af.pairs.loc[0, "verdict"]
        'no evidence'
    """
    v.check_choice(null, "null", sig.NULLS)
    v.check_choice(method, "method", ("exact", "monte_carlo"))
    v.check_choice(correction, "correction", _CORRECTIONS)
    v.check_choice(di_variant, "di_variant", ("paper", "pp_over_p"))
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha: must lie strictly between 0 and 1, e.g. 0.05; got {alpha!r}.")
    conf = sig._check_confidence(confidence)
    nboot = int(num_bootstrap)
    if nboot < 0 or nboot == 1:
        raise ValueError(f"num_bootstrap: must be 0 (skip) or ≥ 2; got {num_bootstrap!r}.")
    if key is None:
        key = jax.random.key(0)
    elif isinstance(key, (int, np.integer)):
        key = jax.random.key(int(key))
    k_boot, k_null, k_scan = jax.random.split(key, 3)

    gcm = group_confusion_matrices(
        y_true, y_pred, sensitive_features, sample_weight=sample_weight, beneficial_label=beneficial_label
    )
    cms_j = gcm.cms
    if cms_j.ndim != 2:
        raise ValueError(f"y_pred: must be 1-D (one prediction per row) for an audit; got {cms_j.shape[:-2]} leading axes.")
    groups = gcm.groups
    k = len(groups)
    if k < 2:
        raise ValueError(
            f"sensitive_features: only one group ({_label(groups[0])!r}) is present; an audit "
            "compares at least two groups."
        )
    ncols = len(groups[0]) if isinstance(groups[0], tuple) else 1
    names = _default_names(gcm.names, ncols)
    cms = np.asarray(cms_j, dtype=np.float64)
    integer = bool(np.all(cms == np.round(cms)))
    notes: list[str] = []

    per_group, overall, ofi_m, di_m, te_m, ff = jax.tree_util.tree_map(
        lambda x: np.asarray(x, np.float64), _tables(jnp.asarray(cms_j), di_variant=di_variant)
    )
    index = (
        pd.MultiIndex.from_tuples(list(groups), names=list(names)) if ncols > 1
        else pd.Index(list(groups), name=names[0])
    )
    by_group = pd.DataFrame({c: per_group[c] for c in GROUP_METRICS}, index=index)
    overall_s = pd.Series({c: float(overall[c]) for c in GROUP_METRICS}, name="overall")
    if integer:
        for c in ("n", "tp", "fn", "fp", "tn"):
            by_group[c] = np.rint(by_group[c]).astype(np.int64)

    iu, ju = np.triu_indices(k, 1)
    # ---- p-values
    if integer:
        p_m = sig.pairwise_ofi_test(
            cms.astype(np.int64), null=null, method=method, key=k_null,
            num_samples=num_null_samples, progress=lambda it: _progress(it, "OFI p-values"),
        )
    else:
        p_m = np.full((k, k), np.nan)
        notes.append(
            "fractional sample weights: exact OFI tests need integer counts, so p-values are n/a and "
            "significance is read from the bootstrap interval (does it exclude 0?)."
        )
    raw = p_m[iu, ju]
    if correction == "holm":
        adj = sig.holm(raw)
    elif correction == "bonferroni":
        adj = np.minimum(raw * raw.size, 1.0)
    else:
        adj = raw.copy()
    padj_m = np.ones((k, k))
    if not integer:
        padj_m[:] = np.nan
    padj_m[iu, ju] = adj
    padj_m[ju, iu] = adj

    # ---- bootstrap intervals
    lo_m = np.full((k, k), np.nan)
    hi_m = np.full((k, k), np.nan)
    if nboot:
        if sample_weight is None:
            samples = sig._bootstrap_ofi(k_boot, cms, num_samples=nboot)
        else:
            samples = _weighted_bootstrap(k_boot, y_true, y_pred, sensitive_features, sample_weight,
                                          beneficial_label, nboot, k)
        lo_m, hi_m = sig._percentiles(samples, conf)
    elif not integer:
        raise ValueError("num_bootstrap: fractional weights need the bootstrap for significance; use ≥ 2.")

    # ---- verdicts
    b_all = per_group["marginal_benefit"]
    rows = []
    test_name = f"{null} null, {method}"
    for i, j in zip(iu.tolist(), ju.tolist()):
        gi, gj = _label(groups[i]), _label(groups[j])
        o, d = float(ofi_m[i, j]), float(di_m[i, j])
        if integer:
            significant = bool(padj_m[i, j] < a)
            p_txt = f"p = {_fmt_p(p_m[i, j])}"
            if correction != "none":
                p_txt += f", {correction}-adjusted {_fmt_p(padj_m[i, j])}"
            evidence = f"{p_txt}, {test_name}"
        else:
            significant = bool(lo_m[i, j] > 0 or hi_m[i, j] < 0)
            evidence = f"{100 * conf:.0f}% bootstrap interval [{lo_m[i, j]:+.3f}, {hi_m[i, j]:+.3f}]"
        if significant:
            verdict = "algorithmic bias"
        elif not np.isnan(d) and ff[i, j] != 0:
            verdict = "systemic disparity"
        else:
            verdict = "no evidence"
        fav, dis, text = _reading(gi, gj, o, significant, evidence, d, verdict)
        four = {1.0: "bias for i", -1.0: "bias for j", 0.0: "pass"}.get(float(ff[i, j]), "undefined")
        rows.append({
            "group_i": groups[i], "group_j": groups[j],
            "n_i": cms[i].sum(), "n_j": cms[j].sum(),
            "marginal_benefit_i": float(b_all[i]), "marginal_benefit_j": float(b_all[j]),
            "ofi": o, "ci_low": float(lo_m[i, j]), "ci_high": float(hi_m[i, j]),
            "p_value": float(p_m[i, j]), "p_adjusted": float(padj_m[i, j]), "null": null,
            "di": d, "four_fifths": four, "te": float(te_m[i, j]),
            "verdict": verdict, "favoured": fav, "disadvantaged": dis, "reading": text,
        })
    pairs = pd.DataFrame(rows)
    if integer:
        pairs["n_i"] = pairs["n_i"].astype(np.int64)
        pairs["n_j"] = pairs["n_j"].astype(np.int64)

    n_undef_di = int(np.isnan(di_m[iu, ju]).sum() + np.isnan(di_m[ju, iu]).sum())
    if n_undef_di:
        notes.append(f"DI is undefined (0 positive predictions in the reference group) for {n_undef_di} ordered pair(s).")
    n_undef_te = int(np.isnan(te_m[iu, ju]).sum())
    if n_undef_te:
        notes.append(f"TE is undefined (FP = 0 in a group) for {n_undef_te} of {iu.size} pair(s).")
    if null == "uniform":
        notes.append(
            "the uniform null treats every confusion matrix of M(n) as equally likely; it ignores the "
            "data and is very permissive (its sd of B is about 0.3, the paper's threshold)."
        )

    settings = {
        "alpha": a, "null": null, "method": method, "correction": correction, "confidence": conf,
        "num_bootstrap": nboot, "di_variant": di_variant, "beneficial_label": int(beneficial_label),
        "weighted": sample_weight is not None,
    }
    if method == "monte_carlo":
        settings["num_null_samples"] = int(num_null_samples)

    scan_res = None
    if scan:
        scan_res = _run_scans(
            k_scan, y_true, y_pred, sensitive_features if scan_features is None else scan_features,
            beneficial_label, scan_probabilities, float(scan_lam), int(num_replicates), side=scan_side,
        )
    return AuditFrame(
        cms=cms if not integer else cms.astype(np.int64), groups=tuple(groups), names=names,
        by_group=by_group, overall=overall_s,
        ofi=ofi_m, di=di_m, te=te_m, p_value=p_m, p_adjusted=padj_m, ci_low=lo_m, ci_high=hi_m,
        pairs=pairs, settings=settings, scan=scan_res, notes=tuple(notes),
    )


def _weighted_bootstrap(key, y_true, y_pred, sensitive_features, sample_weight, beneficial_label, nboot, k):
    from ofijax.cm._build import _prepare_labels, _prepare_weights

    yt, yp = _prepare_labels(y_true, y_pred)
    n = yt.shape[0]
    w = _prepare_weights(sample_weight, n)
    codes, _, _ = encode_groups(sensitive_features, n)
    if beneficial_label == 0:
        yt, yp = 1 - yt, 1 - yp
    cell = 2 * (1 - yt.astype(np.int32)) + (1 - yp.astype(np.int32))
    order = np.argsort(codes, kind="stable").astype(np.int32)
    sizes = np.bincount(codes, minlength=k).astype(np.int32)
    starts = (np.cumsum(sizes) - sizes).astype(np.int32)
    return sig._bootstrap_rows(
        key, jnp.asarray(cell, jnp.int32), jnp.asarray(codes), jnp.asarray(order), jnp.asarray(starts),
        jnp.asarray(sizes), jnp.asarray(w), num_samples=nboot, num_groups=k,
    )


_SCAN_TEXT = {
    "fpr_scan": ("negative", "wrongly denied the benefit: raised rate of the harmful prediction among "
                 "people whose true outcome is beneficial (FPR-Scan in the harm orientation, i.e. a "
                 "raised false-negative rate of the beneficial prediction)"),
    "tpr_scan": ("positive", "least often given an unjust benefit: raised rate of the harmful prediction "
                 "among people whose true outcome is harmful (TPR-Scan in the harm orientation)"),
}


def _run_scans(key, y_true, y_pred, features, beneficial_label, probabilities, lam, num_replicates,
               side="both", rate_scans=True):
    """Worst subgroups by FPR-/TPR-Scan (and IJDI-Scan with ``probabilities``); needs :mod:`ofijax.scan`.

    The scans run in the *harm orientation* (label and prediction 1 = the harmful outcome), as
    the IJDI paper runs COMPAS, so the subgroups found are the disadvantaged ones:

    * ``fpr_scan`` (side "negative"): among people whose true outcome is beneficial, the subgroup
      most significantly over-predicted harmful (wrongly denied the benefit: the FN of OFI's B);
    * ``tpr_scan`` (side "positive"): among people whose true outcome is harmful, the subgroup most
      significantly predicted harmful (fewest unjust benefits: the FP of OFI's B);
    * ``ijdi_scan_<side>``: the same with the disparity allowed by λ × the raised true risk
      (``probabilities`` = P(beneficial label | x), turned into P(harmful label | x)).
    """
    try:
        from ofijax import scan as scan_mod
    except ImportError as exc:
        raise ImportError(
            "scan=True needs ofijax.scan (FPR-/TPR-/IJDI-Scan), which is not part of this build."
        ) from exc
    missing = [f for f in ("fpr_scan", "tpr_scan", "ijdi_scan") if not hasattr(scan_mod, f)]
    if missing:
        raise ImportError(f"scan=True needs ofijax.scan.{missing[0]}, which is not part of this build.")
    v.check_choice(side, "side", ("negative", "positive", "both"))
    n_rep = int(num_replicates)
    if n_rep < 0:
        raise ValueError(f"num_replicates: must be ≥ 0; got {num_replicates!r}.")
    yt = v.check_binary(y_true, "y_true").astype(np.int64)
    yp = v.check_binary(y_pred, "y_pred").astype(np.int64)
    if int(beneficial_label) == 1:
        y_harm, yhat_harm = 1 - yt, 1 - yp
    else:
        y_harm, yhat_harm = yt, yp
    if isinstance(features, pd.DataFrame):
        data = features
    elif isinstance(features, pd.Series):
        data = features.to_frame(name=features.name if features.name is not None else "group")
    elif isinstance(features, dict):
        data = pd.DataFrame(features)
    else:
        arr = np.asarray(features)
        data = pd.DataFrame({"group": arr}) if arr.ndim == 1 else pd.DataFrame(arr)
    runs = []
    for name, (sd, _) in _SCAN_TEXT.items():
        if rate_scans and side in (sd, "both"):
            runs.append((name, sd))
    if probabilities is not None:
        p = v.check_probabilities(probabilities, "scan_probabilities")
        p_harm = 1.0 - p if int(beneficial_label) == 1 else p
        runs += [(f"ijdi_scan_{sd}", sd) for sd in ("negative", "positive") if side in (sd, "both")]
    keys = jax.random.split(key, len(runs))
    out = {}
    for (name, sd), k in zip(_progress(runs, "scans"), keys):
        if name.startswith("ijdi"):
            r = scan_mod.ijdi_scan(data, y_harm, yhat_harm, p_harm, lam=lam, side=sd, key=k,
                                   num_replicates=n_rep)
            what = (f"IJDI-Scan (lambda = {lam:g}) on the {sd} side: the disparity not justified by "
                    "the raised true risk")
        else:
            fn = getattr(scan_mod, name)
            r = fn(data, y_harm, yhat_harm, key=k, num_replicates=n_rep)
            what = _SCAN_TEXT[name][1]
        sub = {str(c): [_py(x) for x in vals] for c, vals in r.subset.items()}
        sub_txt = " and ".join(f"{c} in {{{', '.join(map(str, vals))}}}" for c, vals in sub.items())
        p_txt = "no randomization test" if math.isnan(r.p_value) else f"p = {_fmt_p(r.p_value)} ({n_rep} replicates)"
        if r.score > 0:
            desc = f"{sub_txt} ({r.size} rows): {what}; odds x{r.q:.2f}, score {r.score:.2f}, {p_txt}"
        else:
            desc = f"no subgroup detected ({what})"
        out[name] = {
            "side": sd, "subgroup": sub, "size": int(r.size), "score": float(r.score), "q": float(r.q),
            "p_value": float(r.p_value), "num_replicates": n_rep, "converged": bool(r.converged),
            "description": desc,
        }
    return out
