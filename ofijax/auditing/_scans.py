r"""The scans of an audit: the most disadvantaged subgroups by FPR-/TPR-/IJDI-Scan, in words.

The audit's labels are passed to the scans as they are, with ``beneficial_label`` (the one label
orientation of ofijax); the subgroups found are the disadvantaged ones:

* ``fpr_scan`` (side "negative"): among people whose true outcome is beneficial, the subgroup
  most significantly predicted harmful (wrongly denied the benefit: the FN of OFI's B);
* ``tpr_scan`` (side "positive"): among people whose true outcome is harmful, the subgroup most
  significantly predicted harmful (fewest unjust benefits: the FP of OFI's B);
* ``ijdi_scan_<side>``: the same with the disparity allowed by λ × the raised true risk.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import jax
import numpy as np
import pandas as pd

from ofijax import _validation as v
from ofijax._progress import track
from ofijax.auditing._report import format_p

__all__ = ["run_scans"]

_SCANS = {
    "fpr_scan": ("negative", "the beneficial true outcome", "wrongly denied the benefit (predicted harmful)"),
    "tpr_scan": ("positive", "the harmful true outcome", "predicted harmful (given the fewest unjust benefits)"),
}


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _frame(features: Any) -> pd.DataFrame:
    if isinstance(features, pd.DataFrame):
        return features
    if isinstance(features, pd.Series):
        return features.to_frame(name=features.name if features.name is not None else "group")
    if isinstance(features, dict):
        return pd.DataFrame(features)
    arr = np.asarray(features)
    return pd.DataFrame({"group": arr}) if arr.ndim == 1 else pd.DataFrame(arr)


def _draws_kw(fn: Any, n: int) -> dict:
    params = inspect.signature(fn).parameters
    return {"num_samples": n} if "num_samples" in params else {"num_replicates": n}


def _check_top_k(top_k: Any, name: str = "top_k") -> int:
    if isinstance(top_k, (bool, np.bool_)) or not isinstance(top_k, (int, np.integer)):
        raise TypeError(f"{name}: must be an integer ≥ 1 (how many subgroups to report); got {top_k!r}.")
    if int(top_k) < 1:
        raise ValueError(f"{name}: must be an integer ≥ 1 (how many subgroups to report); got {top_k!r}.")
    return int(top_k)


class _NoSubgroup:
    """The result of a scan with no rows of its class: no subgroup, score 0 (as a scan reports)."""

    subset: dict = {}
    score = 0.0
    q = 1.0
    p_value = math.nan
    expected_rate = math.nan
    unbounded = False
    converged = True
    search = "exhaustive"  # nothing to search: certified
    description = "no subgroup detected: no rows of the scanned class"


_NONE = _NoSubgroup()


def _find(r: Any, j: int, k: int, data: pd.DataFrame, scanned: np.ndarray, yhat_harm: np.ndarray,
          earlier: np.ndarray, *, klass: str, what: str, lam_txt: str, n_rep: int,
          weight: np.ndarray | None = None) -> dict:
    """One subgroup found by a scan (find ``j`` of ``k``), in words; ``earlier``: rows of finds 1..j.

    The units are rows (``weight`` None) or cells of counts (``weight``: rows per cell,
    ``yhat_harm``: harmful predictions per cell): the same numbers either way."""
    sub = {str(c): [_py(x) for x in vals] for c, vals in r.subset.items()}
    inside = np.ones(len(data), dtype=bool)
    for c, vals in r.subset.items():
        inside &= data[c].isin(list(vals)).to_numpy()
    detected = r.score > 0
    inside &= ~earlier & detected
    in_cls, out_cls = inside & scanned, ~inside & ~earlier & scanned
    w = np.ones(len(data), np.int64) if weight is None else np.asarray(weight, np.int64)
    n_in, n_out = int(w[in_cls].sum()), int(w[out_cls].sum())
    rate = float(np.asarray(yhat_harm)[in_cls].sum() / n_in) if n_in else math.nan
    rest = float(np.asarray(yhat_harm)[out_cls].sum() / n_out) if n_out else math.nan
    size = int(w[inside].sum())
    sub_txt = " and ".join(f"{c} in {{{', '.join(map(str, vals))}}}" for c, vals in sub.items()) or "everyone"
    if j:
        sub_txt += f" (not counting the people of subgroup{'s' if j > 1 else ''} " \
                   f"{', '.join(f'#{i + 1}' for i in range(j))})"
    others = f"the other people with {klass}" + (" not in an earlier subgroup" if j else "")
    p_lo, p_hi = (float(b) for b in getattr(r, "p_value_interval", (math.nan, math.nan)))
    lo_txt = "0" if p_lo == 0 else format_p(p_lo)  # a bound of 0 is exact, not "< 1e-12"
    mc = (f"{n_rep} randomization replicates; a Monte Carlo estimate, exact p in "
          f"[{lo_txt}, {format_p(p_hi)}] (95%)")
    if math.isnan(r.p_value):
        p_txt = "no randomization test"
    elif k > 1:
        p_txt = f"family-wise p = {format_p(r.p_value)} over the top {k} ({mc})"
    else:
        p_txt = f"p = {format_p(r.p_value)} ({mc})"
    rank = f"#{j + 1}: " if k > 1 else ""
    if detected:
        desc = (f"{rank}{sub_txt}: {size:,} people, {n_in:,} of them with "
                f"{klass}; among those, {100 * rate:.1f}% were {what}, vs {100 * rest:.1f}% of {others}"
                f"{lam_txt}; odds x{r.q:.2f}, score {r.score:.2f}, {p_txt}")
        if r.unbounded:
            desc += ("; every one of them was predicted harmful, so the score measures the scan's "
                     "q cap, not the size of the effect")
    else:
        desc = f"{rank}no {'further ' if j else ''}subgroup detected among people with {klass}{lam_txt}"
    return {
        "rank": j + 1, "subgroup": sub if detected else {}, "size": size,
        "scanned_size": n_in, "rate": rate, "rate_rest": rest,
        "expected_rate": float(r.expected_rate), "score": float(r.score), "q": float(r.q),
        "p_value": float(r.p_value), "p_value_interval": [p_lo, p_hi],
        "unbounded": bool(r.unbounded), "converged": bool(r.converged),
        "search": str(getattr(r, "search", "coordinate_ascent")),
        "certified": bool(getattr(r, "search", "") == "exhaustive"),
        "description": desc, "scan_description": r.description, "rows": inside,
    }


def run_scans(
    key: Any,
    y_true: Any = None,
    y_pred: Any = None,
    features: Any = None,
    *,
    beneficial_label: int = 1,
    probabilities: Any = None,
    lam: float = 0.0,
    num_samples: int = 100,
    side: str = "both",
    rate_scans: bool = True,
    top_k: int = 1,
    cells: Any = None,
) -> dict:
    """Worst subgroups by FPR-/TPR-Scan (and IJDI-Scan with ``probabilities``), described in words.

    With ``top_k=k`` each scan reports its k highest-scoring subgroups: the first is the scan's
    result, each next one is found by rescanning without the people of the earlier ones (so the k
    subgroups share no one), and each gets a **family-wise** p-value from the same randomization
    replicates (each replicate reruns all k steps; its statistic is the largest of its k scores):
    the chance that *any* of the k subgroups would score that high if the predictions were equally
    accurate for everyone. A scan that finds nothing more stops early (fewer than k subgroups).

    Args:
        key: PRNG key or int seed (restarts and randomization replicates).
        y_true, y_pred: ``(n,)`` 0/1 labels and predictions, 1 = beneficial unless
            ``beneficial_label=0``.
        features: the attribute columns to scan over (DataFrame, Series, dict or array).
        beneficial_label: 1, or 0 when 1 is the harmful outcome.
        probabilities: ``(n,)`` estimated P(label = 1 | x) for IJDI-Scan, in the labels' own orientation (optional).
        lam: IJDI's λ.
        num_samples: randomization replicates of each p-value (0: no test).
        side: ``"negative"``, ``"positive"`` or ``"both"``.
        rate_scans: run FPR-/TPR-Scan (False: only IJDI-Scan).
        top_k: how many subgroups to report per scan (default 1: the worst one, plain p-value).
        cells: cell statistics instead of rows (``ofijax.stats.CellStats``: counts per attribute
            values and true label, as the stream and Spark engines collect them); pass
            ``y_true``, ``y_pred`` and ``features`` as None. FPR-/TPR-Scan only; the output is
            the one the rows give (same subgroups, sizes, rates, scores and words; p-values from
            Binomial draws of the cells' counts, equal in distribution).

    Returns:
        ``{scan name: dict}`` with ``side``, ``subgroup`` ({column: values}), ``size`` (people in
        the subgroup), ``scanned_size`` (of them, with the scanned true outcome), ``rate`` and
        ``rate_rest`` (share predicted harmful among the scanned class inside and outside the
        subgroup), ``score``, ``q``, ``p_value`` (a Monte Carlo estimate from ``num_samples``
        replicates), ``p_value_interval`` (its 95% Clopper-Pearson interval for the exact
        randomization p-value; engines that draw replicates per row or per cell differ by this
        Monte Carlo error), ``num_samples``, ``converged``, ``search``
        (``"exhaustive"`` or ``"coordinate_ascent"``), ``certified`` (the global optimum: every
        subgroup scored), ``description``
        — all of the first subgroup — and ``top_k`` and ``top``: the list of the (up to k)
        subgroups, each a dict with ``rank``, ``subgroup``, ``size``, ``scanned_size``, ``rate``,
        ``rate_rest`` (the scanned class outside it and outside the earlier subgroups),
        ``expected_rate`` (the scan's null rate), ``score``, ``q``, ``p_value`` (family-wise when
        k > 1), ``p_value_interval``, ``unbounded``, ``converged``, ``search``, ``certified``, ``description`` (in
        words) and ``scan_description``
        (the scan result's own wording). ``size`` counts everyone in the subgroup not already in
        an earlier one.

    Examples:
        >>> import numpy as np, pandas as pd
        >>> from ofijax.auditing import run_scans
        >>> df = pd.DataFrame({"g": ["a", "b", "c", "d"] * 50})
        >>> y = np.ones(200, int)                                     # all truly deserving
        >>> pred = np.where(df.g.isin(["a", "b"]), np.arange(200) % 5 != 0, 1)
        >>> pred = np.where(df.g == "a", np.arange(200) % 8 > 4, pred)  # a: most denied, b: some
        >>> res = run_scans(0, y, pred, df, side="negative", num_samples=0, top_k=2)
        >>> [(t["subgroup"], t["size"]) for t in res["fpr_scan"]["top"]]
        [({'g': ['a']}, 50), ({'g': ['b']}, 50)]
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
    key = v.as_key(key)
    v.check_choice(side, "side", ("negative", "positive", "both"))
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 0:
        raise ValueError(f"num_samples: must be an integer ≥ 0; got {num_samples!r}.")
    n_rep = int(num_samples)
    k_top = _check_top_k(top_k)
    weight = None
    if cells is not None:  # cell statistics (the stream and Spark engines): the same scans
        if any(a is not None for a in (y_true, y_pred, features)):
            raise ValueError("cells: pass either cells or y_true, y_pred and features (rows), not both.")
        if probabilities is not None:
            raise ValueError("scan_probabilities: IJDI-Scan needs rows; cell statistics give "
                             "FPR-/TPR-Scan only.")
        try:
            columns, values = list(cells.columns), list(cells.values)
            label = np.asarray(cells.label, np.int64)
            weight = np.asarray(cells.n, np.int64)
            pos = np.asarray(cells.positives, np.int64)
        except AttributeError:
            raise TypeError("cells: must be cell statistics with columns, values, label, n and "
                            f"positives (ofijax.stats.CellStats); got {type(cells).__name__}.") from None
        data = pd.DataFrame({c: np.asarray(x, dtype=object) for c, x in zip(columns, values)})
        if int(beneficial_label) == 1:
            y_harm, yhat_harm = 1 - label, weight - pos
        else:
            y_harm, yhat_harm = label, pos
    else:
        yt = v.check_binary(y_true, "y_true").astype(np.int64)
        yp = v.check_binary(y_pred, "y_pred").astype(np.int64)
        if int(beneficial_label) == 1:
            y_harm, yhat_harm = 1 - yt, 1 - yp
        else:
            y_harm, yhat_harm = yt, yp
        data = _frame(features)
    runs = [(name, sd) for name, (sd, _, _) in _SCANS.items() if rate_scans and side in (sd, "both")]
    p_in = None
    if probabilities is not None:
        # P(label 1 | x) in the caller's orientation: the scans flip with beneficial_label themselves
        p_in = v.check_probabilities(probabilities, "scan_probabilities")
        runs += [(f"ijdi_scan_{sd}", sd) for sd in ("negative", "positive") if side in (sd, "both")]
    keys = jax.random.split(key, max(len(runs), 1))
    out = {}
    for (name, sd), k in zip(track(runs, "scans", unit="scans"), keys):
        top_kw = {"top_k": k_top} if k_top > 1 else {}  # k = 1: the plain scan, plain p-value
        scanned = (y_harm == (0 if sd == "negative" else 1)) & (
            True if weight is None else weight > 0)
        klass, what = _SCANS["fpr_scan" if sd == "negative" else "tpr_scan"][1:]
        lam_txt = f" (IJDI-Scan, lambda = {lam:g}: beyond what the raised true risk justifies)" if name.startswith("ijdi") else ""
        if not scanned.any():  # every row in the other class: nothing to scan, no subgroup
            f = _find(_NONE, 0, k_top, data, scanned, yhat_harm, np.zeros(len(data), bool),
                      klass=klass, what=what, lam_txt=lam_txt, n_rep=n_rep, weight=weight)
            f.pop("rows")
            f["description"] += " (no one has it)"
            out[name] = {"side": sd, **{key_: f[key_] for key_ in (
                "subgroup", "size", "scanned_size", "rate", "rate_rest", "score", "q", "p_value",
                "p_value_interval")},
                "num_samples": n_rep, "converged": True, "search": f["search"],
                "certified": f["certified"], "description": f["description"],
                "top_k": k_top, "top": [f]}
            continue
        if cells is not None:
            r = scan_mod.rate_scan_cells(k, columns, values, label, weight, pos, side=sd,
                                         beneficial_label=int(beneficial_label),
                                         num_samples=n_rep, **top_kw)
        elif name.startswith("ijdi"):
            fn = scan_mod.ijdi_scan
            r = fn(data, yt, yp, p_in, lam=lam, side=sd, key=k, beneficial_label=int(beneficial_label),
                   **_draws_kw(fn, n_rep), **top_kw)
        else:
            fn = getattr(scan_mod, name)
            r = fn(data, yt, yp, key=k, beneficial_label=int(beneficial_label), **_draws_kw(fn, n_rep),
                   **top_kw)
        earlier = np.zeros(len(data), dtype=bool)
        top = []
        for j, rj in enumerate(r.top or (r,)):
            f = _find(rj, j, k_top, data, scanned, yhat_harm, earlier, klass=klass, what=what,
                      lam_txt=lam_txt, n_rep=n_rep, weight=weight)
            earlier |= f.pop("rows")
            top.append(f)
        first = top[0]
        out[name] = {
            "side": sd, **{key_: first[key_] for key_ in ("subgroup", "size", "scanned_size", "rate",
                                                          "rate_rest", "score", "q", "p_value",
                                                          "p_value_interval")},
            "num_samples": n_rep, "converged": first["converged"], "search": first["search"],
            "certified": first["certified"], "description": first["description"],
            "top_k": k_top, "top": top,
        }
    return out
