"""Audits and scans from statistics: :func:`audit_counts`, :func:`fpr_scan_cells`, :func:`tpr_scan_cells`.

``audit_counts`` computes exactly what :func:`ofijax.audit` computes from rows (without weights
or scans): the per-group table, the pairwise OFI/DI/TE, the exact (or Monte Carlo) p-values with
the same correction, the bootstrap intervals (resampling a group's rows *is* a multinomial on its
confusion matrix, so the same draws) and the verdicts, all from the ``(k, 4)`` counts.
The scans run the engine of :mod:`ofijax.scan` on the cells (:func:`ofijax.scan.scan_cells`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ofijax import metrics as mt
from ofijax._validation import as_key
from ofijax.auditing import GROUP_METRICS, AuditFrame, holm, ofi_bootstrap, pairwise_ofi_test
from ofijax.scan import DEFAULT_Q_BOUNDS, scan_cells

from ._stats import CellStats, GroupCounts

__all__ = ["audit_counts", "fpr_scan_cells", "tpr_scan_cells", "CellScanResult"]


@functools.partial(jax.jit, static_argnames=("di_variant",))
def _tables(cms, *, di_variant):
    per_group = {name: f(cms) for name, f in GROUP_METRICS.items()}
    total = cms.sum(0)
    overall = {name: f(total) for name, f in GROUP_METRICS.items()}
    ofi_m = mt.pairwise(mt.ofi, cms)
    di_m = mt.pairwise(functools.partial(mt.disparate_impact, variant=di_variant), cms)
    te_m = mt.pairwise(mt.treatment_equality, cms)
    return per_group, overall, ofi_m, di_m, te_m, mt.four_fifths_rule(di_m)


def _label(group: Any) -> str:
    return " & ".join(str(g) for g in group) if isinstance(group, tuple) else str(group)


def _fmt_p(p: float) -> str:
    if p is None or np.isnan(p):
        return "n/a"
    if p < 1e-12:
        return "<1e-12"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def _reading(gi, gj, o, verdict, evidence, di):
    if verdict == "algorithmic bias":
        fav, dis = (gi, gj) if o > 0 else (gj, gi)
        return fav, dis, (
            f"{gi} vs {gj}: algorithmic bias against {dis} — the model gives {fav} "
            f"{abs(o):.3f} more unjust benefit per person (OFI = {o:+.3f}, {evidence}).")
    if verdict == "systemic disparity":
        fav, dis = (gi, gj) if di > 1 else (gj, gi)
        return fav, dis, (
            f"{gi} vs {gj}: systemic disparity outside the model — OFI = {o:+.3f} is not "
            f"significant ({evidence}) but DI = {di:.3f} fails the four-fifths rule ({fav} "
            f"selected more often than {dis}).")
    di_txt = ("undefined (no positive predictions in the reference group)" if np.isnan(di)
              else f"{di:.3f}")
    return None, None, (
        f"{gi} vs {gj}: no evidence of bias — OFI = {o:+.3f} is not significant ({evidence}) "
        f"and DI = {di_txt}"
        + (" passes the four-fifths rule." if not np.isnan(di)
           else "; the four-fifths rule cannot be read."))


def audit_counts(
    key: Any,
    counts: GroupCounts,
    *,
    alpha: float = 0.05,
    null: str = "pooled",
    method: str = "exact",
    correction: str = "holm",
    confidence: float = 0.95,
    num_bootstrap: int = 2000,
    num_null_samples: int = 10_000,
    di_variant: str = "paper",
    beneficial_label: int | None = None,
) -> AuditFrame:
    r"""The audit of :func:`ofijax.audit` from per-group confusion matrices alone.

    Same tables, p-values, intervals and verdicts as ``ofijax.audit(y_true, y_pred,
    sensitive_features=..., key=key)`` on the rows the counts were built from (the bootstrap is
    the per-group multinomial on the counts in both, so the same key gives the same intervals). OFI(i, j) = B_i − B_j with
    B = (FP − FN)/n; verdicts as in :func:`ofijax.audit`.

    Args:
      key: PRNG key or int seed (bootstrap, Monte Carlo); ``ofijax.audit``'s default is
        ``jax.random.key(0)``.
      counts: :class:`GroupCounts` (already oriented: positive = beneficial).
      alpha, null, method, correction, confidence, num_bootstrap, num_null_samples,
        di_variant: as in :func:`ofijax.audit`.
      beneficial_label: recorded in ``settings`` only (the counts carry the orientation).

    Examples:
      >>> import numpy as np
      >>> gc = GroupCounts(("i", "j"), ("group",), np.array([[0, 1, 0, 5], [0, 7, 0, 11]]))
      >>> af = audit_counts(0, gc, null="uniform")
      >>> round(float(af.ofi[0, 1]), 4), af.pairs.loc[0, "verdict"]
      (0.2222, 'no evidence')
    """
    if not isinstance(counts, GroupCounts):
        raise TypeError(f"counts: must be a GroupCounts; got {type(counts).__name__}.")
    for name, val, opts in (("null", null, ("pooled", "uniform")),
                            ("method", method, ("exact", "monte_carlo")),
                            ("correction", correction, ("holm", "bonferroni", "none")),
                            ("di_variant", di_variant, ("paper", "pp_over_p"))):
        if val not in opts:
            raise ValueError(f"{name}: must be one of {opts}; got {val!r}.")
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha: must lie strictly between 0 and 1, e.g. 0.05; got {alpha!r}.")
    conf = float(confidence)
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence: must lie strictly between 0 and 1; got {confidence!r}.")
    nboot = int(num_bootstrap)
    if nboot < 0 or nboot == 1:
        raise ValueError(f"num_bootstrap: must be 0 (skip) or ≥ 2; got {num_bootstrap!r}.")
    key = as_key(key)
    k_boot, k_null, _ = jax.random.split(key, 3)
    groups = tuple(counts.groups)
    k = len(groups)
    if k < 2:
        raise ValueError(
            f"counts: only {k} group(s) present; an audit compares at least two groups.")
    cms = np.asarray(counts.cms, np.int64)
    ncols = len(groups[0]) if isinstance(groups[0], tuple) else 1
    names = tuple(counts.names)
    if len(names) != ncols:
        names = ("group",) if ncols == 1 else tuple(f"sensitive_feature_{j}" for j in range(ncols))
    cms_f = cms.astype(np.float64)
    per_group, overall, ofi_m, di_m, te_m, ff = jax.tree_util.tree_map(
        lambda x: np.asarray(x, np.float64), _tables(jnp.asarray(cms_f), di_variant=di_variant))
    index = (pd.MultiIndex.from_tuples(list(groups), names=list(names)) if ncols > 1
             else pd.Index(list(groups), name=names[0]))
    by_group = pd.DataFrame({c: per_group[c] for c in GROUP_METRICS}, index=index)
    overall_s = pd.Series({c: float(overall[c]) for c in GROUP_METRICS}, name="overall")
    for c in ("n", "tp", "fn", "fp", "tn"):
        by_group[c] = np.rint(by_group[c]).astype(np.int64)
    iu, ju = np.triu_indices(k, 1)
    p_m = pairwise_ofi_test(cms, null=null, method=method, key=k_null,
                            num_samples=num_null_samples)
    raw = p_m[iu, ju]
    adj = holm(raw) if correction == "holm" else (
        np.minimum(raw * raw.size, 1.0) if correction == "bonferroni" else raw.copy())
    padj_m = np.ones((k, k))
    padj_m[iu, ju] = adj
    padj_m[ju, iu] = adj
    lo_m = np.full((k, k), np.nan)
    hi_m = np.full((k, k), np.nan)
    if nboot:
        bs = ofi_bootstrap(k_boot, cms_f, num_samples=nboot, confidence=conf)
        lo_m, hi_m = np.asarray(bs.low, np.float64), np.asarray(bs.high, np.float64)
    b_all = per_group["marginal_benefit"]
    rows = []
    test_name = f"{null} null, {method}"
    for i, j in zip(iu.tolist(), ju.tolist()):
        gi, gj = _label(groups[i]), _label(groups[j])
        o, d = float(ofi_m[i, j]), float(di_m[i, j])
        significant = bool(padj_m[i, j] < a)
        p_txt = f"p = {_fmt_p(p_m[i, j])}"
        if correction != "none":
            p_txt += f", {correction}-adjusted {_fmt_p(padj_m[i, j])}"
        evidence = f"{p_txt}, {test_name}"
        if significant:
            verdict = "algorithmic bias"
        elif not np.isnan(d) and ff[i, j] != 0:
            verdict = "systemic disparity"
        else:
            verdict = "no evidence"
        fav, dis, text = _reading(gi, gj, o, verdict, evidence, d)
        four = {1.0: "bias for i", -1.0: "bias for j", 0.0: "pass"}.get(float(ff[i, j]),
                                                                         "undefined")
        rows.append({
            "group_i": groups[i], "group_j": groups[j],
            "n_i": int(cms[i].sum()), "n_j": int(cms[j].sum()),
            "marginal_benefit_i": float(b_all[i]), "marginal_benefit_j": float(b_all[j]),
            "ofi": o, "ci_low": float(lo_m[i, j]), "ci_high": float(hi_m[i, j]),
            "p_value": float(p_m[i, j]), "p_adjusted": float(padj_m[i, j]), "null": null,
            "di": d, "four_fifths": four, "te": float(te_m[i, j]),
            "verdict": verdict, "favoured": fav, "disadvantaged": dis, "reading": text,
        })
    pairs = pd.DataFrame(rows)
    pairs["n_i"] = pairs["n_i"].astype(np.int64)
    pairs["n_j"] = pairs["n_j"].astype(np.int64)
    notes = []
    n_undef_di = int(np.isnan(di_m[iu, ju]).sum() + np.isnan(di_m[ju, iu]).sum())
    if n_undef_di:
        notes.append(f"DI is undefined (0 positive predictions in the reference group) for "
                     f"{n_undef_di} ordered pair(s).")
    n_undef_te = int(np.isnan(te_m[iu, ju]).sum())
    if n_undef_te:
        notes.append(f"TE is undefined (FP = 0 in a group) for {n_undef_te} of {iu.size} pair(s).")
    if null == "uniform":
        notes.append(
            "the uniform null treats every confusion matrix of M(n) as equally likely; it ignores "
            "the data and is very permissive (its sd of B is about 0.3, the paper's threshold).")
    settings = {
        "alpha": a, "null": null, "method": method, "correction": correction, "confidence": conf,
        "num_bootstrap": nboot, "di_variant": di_variant,
        "beneficial_label": 1 if beneficial_label is None else int(beneficial_label),
        "weighted": False,
    }
    if method == "monte_carlo":
        settings["num_null_samples"] = int(num_null_samples)
    return AuditFrame(
        cms=cms, groups=groups, names=names, by_group=by_group, overall=overall_s,
        ofi=ofi_m, di=di_m, te=te_m, p_value=p_m, p_adjusted=padj_m, ci_low=lo_m, ci_high=hi_m,
        pairs=pairs, settings=settings, scan=None, notes=tuple(notes),
    )


class CellScanResult(NamedTuple):
    """Result of :func:`fpr_scan_cells` / :func:`tpr_scan_cells` (the fields of
    :class:`ofijax.scan.IJDIResult` that do not need rows).

    Attributes:
      subset: detected subgroup ``{column: values}`` (``{}``: nothing detected).
      score: penalised score (0.0 when nothing is detected).
      q: fitted odds multiplier (1.0 when nothing is detected).
      size: rows of the scanned side in the subgroup.
      converged: every restart reached a local optimum.
      listed: the un-normalised subgroup.
      p_value: Bernoulli-null randomization p-value (NaN without a test).
      null_scores: ``(R,)`` replicate scores (None without a test).
      rate: the side's overall rate p̄_b (FPR or TPR).
    """

    subset: dict
    score: float
    q: float
    size: int
    converged: bool
    listed: dict
    p_value: float
    null_scores: Any
    rate: float


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _encode(cells: CellStats, label: int):
    sel = np.asarray(cells.label) == label
    if not sel.any():
        side = "negative" if label == 0 else "positive"
        raise ValueError(
            f"cells: the {side} side has no rows (no label == {label}); scan the other side.")
    n = np.asarray(cells.n, np.int64)[sel]
    pos = np.asarray(cells.positives, np.int64)[sel]
    codes, labels = [], []
    for vals in cells.values:
        v = pd.Series(np.asarray(vals)[sel])
        try:
            c, u = pd.factorize(v, sort=True)
        except TypeError:
            c, u = pd.factorize(v, sort=False)
        codes.append(c.astype(np.int64))
        labels.append(np.asarray(u))
    codes = np.stack(codes, 1)
    # the same (attribute values, label) entry can occur twice only if values compare equal after
    # conversion; aggregate by code to be safe, in lexicographic code order
    nv = np.array([len(u) for u in labels], np.int64)
    key = np.zeros(codes.shape[0], np.int64)
    for j in range(codes.shape[1]):
        key = key * nv[j] + codes[:, j]
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    n_c = np.bincount(inv.ravel(), weights=n, minlength=uk.size).astype(np.int64)
    y_c = np.bincount(inv.ravel(), weights=pos, minlength=uk.size).astype(np.int64)
    return codes[first], nv, n_c, y_c, labels


def _subset(columns, labels, mask, listed, normalize):
    out = {}
    for m, name in enumerate(columns):
        if not listed[m]:
            continue
        row = np.asarray(mask[m, : len(labels[m])])
        if normalize and row.all():
            continue
        out[name] = tuple(_py(v) for v in labels[m][row])
    return out


def _rate_scan(cells, label, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
               num_replicates, replicate_chunk):
    if not isinstance(cells, CellStats):
        raise TypeError(f"cells: must be a CellStats; got {type(cells).__name__}.")
    codes, nv, n_c, y_c, labels = _encode(cells, label)
    if num_replicates and key is None:
        raise ValueError(
            "key: the randomization test draws random replicates; pass a key (or an int seed).")
    key = None if key is None else as_key(key)
    r = scan_cells(codes, nv, n_c, y_c, kind="rate", key=key, penalty=penalty,
                   num_restarts=num_restarts, q_bounds=q_bounds, max_steps=max_steps,
                   p_epsilon=p_epsilon, num_replicates=num_replicates,
                   replicate_chunk=replicate_chunk)
    detected = r.score > 0
    return CellScanResult(
        subset=_subset(cells.columns, labels, r.mask, r.listed, True) if detected else {},
        score=r.score, q=r.q if detected else 1.0,
        size=int(n_c[r.cells].sum()) if detected else 0, converged=r.converged,
        listed=_subset(cells.columns, labels, r.mask, r.listed, False) if detected else {},
        p_value=r.p_value, null_scores=r.null_scores,
        rate=float(y_c.sum() / n_c.sum()) if n_c.sum() else math.nan,
    )


def fpr_scan_cells(
    cells: CellStats,
    *,
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: Any = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = 1e-6,
    num_replicates: int = 0,
    replicate_chunk: int | None = None,
) -> CellScanResult:
    r"""FPR-Scan (:func:`ofijax.scan.fpr_scan`) from cell statistics.

    Scans the label-0 cells with outcome = positive predictions and null rate p̄_b = the overall
    FPR; the subgroup and score equal ``fpr_scan(data, y_true, y_pred)`` on the rows (same
    ``key``; ``key=None`` means ``jax.random.key(0)``, which only breaks ties of the restarts,
    while a randomization test needs an explicit key). The Bernoulli-null test draws each replicate's cell sums as
    Binomial(n_c, p̄_b), the distribution of the row-level draws summed over the cell (so the
    p-value agrees in distribution, not draw for draw, with the row-level test).

    Examples:
      >>> import numpy as np
      >>> cs = CellStats(("g",), (np.array(["a", "b"]),), np.array([0, 0], np.int8),
      ...                np.array([100, 100]), np.array([88, 10]))
      >>> r = fpr_scan_cells(cs)
      >>> r.subset, r.size, round(r.score, 3)
      ({'g': ('a',)}, 100, 34.062)
    """
    return _rate_scan(cells, 0, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
                      num_replicates, replicate_chunk)


def tpr_scan_cells(
    cells: CellStats,
    *,
    penalty: float = 0.1,
    num_restarts: int = 10,
    key: Any = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = 1e-6,
    num_replicates: int = 0,
    replicate_chunk: int | None = None,
) -> CellScanResult:
    """TPR-Scan (:func:`ofijax.scan.tpr_scan`) from cell statistics: the label-1 cells.

    Arguments as in :func:`fpr_scan_cells`.
    """
    return _rate_scan(cells, 1, penalty, num_restarts, key, q_bounds, max_steps, p_epsilon,
                      num_replicates, replicate_chunk)
