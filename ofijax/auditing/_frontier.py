r"""The frontier of a batch audit: which candidates are worth choosing, and a picture of them.

Functions of the per-candidate table of :func:`ofijax.audit_batch` (``BatchAudit.candidates``):
:func:`pareto_frontier` (the candidates no other candidate beats on both a utility and a fairness
cost), :func:`select_candidates` (those meeting stated constraints: significance, DI range,
max |OFI|, utility) and :func:`plot_frontier` (matplotlib; significance marked). Choosing among
many candidates is itself a selection: see :func:`ofijax.audit_batch` on ``across``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ofijax import _validation as v

__all__ = ["FAIRNESS_COSTS", "pareto_frontier", "select_candidates", "plot_frontier"]

#: Fairness axes of the frontier: column of ``BatchAudit.candidates`` and whether lower is better.
FAIRNESS_COSTS = {"max_abs_ofi": True, "di_ratio": False}


def _is_batch(batch: Any) -> bool:
    """Whether ``batch`` is a :class:`ofijax.auditing.BatchAudit` (read by its fields)."""
    return isinstance(batch, tuple) and hasattr(batch, "candidates") and hasattr(batch, "settings")


def _summary(batch: Any) -> pd.DataFrame:
    if _is_batch(batch):
        return batch.candidates
    if isinstance(batch, pd.DataFrame):
        return batch
    raise TypeError(f"batch: must be a BatchAudit or its candidates DataFrame; got {type(batch).__name__}.")


def pareto_frontier(batch: Any, *, fairness: str = "max_abs_ofi", utility: str = "utility") -> pd.DataFrame:
    """Candidates on the Pareto frontier of ``utility`` (higher is better) versus ``fairness``.

    A candidate is on the frontier when no other candidate has at least its utility and at most
    its fairness cost with one of the two strictly better. Fairness axes: ``"max_abs_ofi"``
    (lower is better) or ``"di_ratio"`` (min/max selection rate over groups, higher is better).
    Candidates with an undefined value are left out. Ties (same utility and cost) are all kept.

    Args:
        batch: a :class:`BatchAudit` (or its ``candidates`` table).
        fairness: ``"max_abs_ofi"`` or ``"di_ratio"``.
        utility: the utility column (default ``"utility"``, the one named in ``audit_batch``).

    Returns:
        the frontier rows of ``batch.candidates``, sorted by increasing utility.

    Examples:
        >>> import pandas as pd
        >>> from ofijax.auditing import pareto_frontier
        >>> c = pd.DataFrame({"utility": [0.6, 0.7, 0.65, 0.8], "max_abs_ofi": [0.01, 0.05, 0.06, 0.2]})
        >>> pareto_frontier(c).index.tolist()
        [0, 1, 3]
    """
    df = _summary(batch)
    if fairness not in FAIRNESS_COSTS:
        raise ValueError(f"fairness: must be one of {tuple(FAIRNESS_COSTS)}; got {fairness!r}.")
    if utility not in df.columns:
        raise ValueError(f"utility: no column {utility!r} in the candidates table.")
    u = df[utility].to_numpy(np.float64)
    cost = df[fairness].to_numpy(np.float64)
    if not FAIRNESS_COSTS[fairness]:
        cost = -cost
    ok = ~(np.isnan(u) | np.isnan(cost))
    # dominated[a] iff some b has u_b >= u_a, cost_b <= cost_a, one strictly (O(C log C) sweep).
    idx = np.flatnonzero(ok)
    order = idx[np.lexsort((-u[idx], cost[idx]))]  # cost ascending, utility descending
    keep = []
    best = -np.inf
    i = 0
    while i < order.size:  # groups of equal cost
        j = i
        while j < order.size and cost[order[j]] == cost[order[i]]:
            j += 1
        top = u[order[i]]
        if top > best:
            keep += [r for r in order[i:j] if u[r] == top]
            best = top
        i = j
    out = df.iloc[sorted(keep, key=lambda r: (u[r], -cost[r]))]
    return out


def select_candidates(
    batch: Any,
    *,
    max_significant: int = 0,
    significance: str = "within",
    di_range: tuple[float, float] | None = (0.8, 1.25),
    max_abs_ofi: float | None = None,
    min_utility: float | None = None,
) -> pd.DataFrame:
    """Candidates meeting stated constraints, best utility first.

    Default: no significant algorithmic bias (``max_significant=0`` pairs with adjusted p < alpha,
    read ``"within"`` each candidate as a one-model audit, or ``"across"`` the batch), and every
    pairwise DI within ``di_range`` = [0.8, 1.25] (the four-fifths rule both ways; a candidate
    with an undefined DI fails). The result is the *feasible set*; picking its first row is a
    selection among many candidates, whose numbers are optimistic (see :func:`audit_batch`).

    Args:
        batch: a :class:`BatchAudit` (or its ``candidates`` table).
        max_significant: the most significant pairs allowed (0 = none).
        significance: ``"within"`` (``n_significant``) or ``"across"`` (``n_significant_across``;
            weaker, since the batch correction is stricter).
        di_range: (low, high) bounds on every ordered pair's DI, or ``None`` for no DI constraint.
        max_abs_ofi: optional bound on max |OFI|.
        min_utility: optional lower bound on the utility.

    Returns:
        the rows of ``batch.candidates`` that qualify, sorted by decreasing utility.

    Examples:
        >>> import pandas as pd
        >>> from ofijax.auditing import select_candidates
        >>> c = pd.DataFrame({"utility": [0.6, 0.7, 0.8], "n_significant": [0, 0, 1],
        ...                   "di_min": [0.9, 0.7, 0.95], "di_max": [1.1, 1.4, 1.05]})
        >>> select_candidates(c).index.tolist()
        [0]
    """
    df = _summary(batch)
    v.check_choice(significance, "significance", ("within", "across"))
    ms = int(max_significant)
    if ms < 0 or ms != max_significant:
        raise ValueError(f"max_significant: must be a whole number ≥ 0; got {max_significant!r}.")
    col = "n_significant" if significance == "within" else "n_significant_across"
    keep = df[col].to_numpy() <= ms
    if di_range is not None:
        try:
            lo, hi = (float(x) for x in di_range)
        except (TypeError, ValueError):
            raise ValueError(f"di_range: must be (low, high) numbers, e.g. (0.8, 1.25); got {di_range!r}.") from None
        if not (0 <= lo <= 1 <= hi) or math.isnan(lo) or math.isnan(hi):
            raise ValueError(f"di_range: needs 0 ≤ low ≤ 1 ≤ high, e.g. (0.8, 1.25); got {di_range!r}.")
        tol = 1e-9  # exact ties with the bounds pass, as the four-fifths rule
        dmin = df["di_min"].to_numpy(np.float64)
        dmax = df["di_max"].to_numpy(np.float64)
        with np.errstate(invalid="ignore"):
            keep &= (dmin >= lo - tol) & (dmax <= hi + tol)
    if max_abs_ofi is not None:
        keep &= df["max_abs_ofi"].to_numpy(np.float64) <= float(max_abs_ofi)
    if min_utility is not None:
        keep &= df["utility"].to_numpy(np.float64) >= float(min_utility)
    return df[keep].sort_values("utility", ascending=False, kind="stable")


def plot_frontier(batch: Any, *, ax: Any = None, title: str | None = None, label_frontier: bool = True):
    """Two panels: utility vs max |OFI| and utility vs DI ratio, frontier drawn, significance marked.

    Markers: open circles = no significant pair; orange triangles = algorithmic bias within the
    candidate (Holm over its pairs); red crosses = significant after the correction across the
    batch. The grey band on the DI panel is the four-fifths region (DI ratio < 0.8).

    Args:
        batch: a :class:`BatchAudit`.
        ax: optional pair of matplotlib axes.
        title: optional figure title.
        label_frontier: annotate the frontier points with their candidate labels (≤ 25 points).

    Returns:
        the matplotlib figure.
    """
    if not _is_batch(batch):
        raise TypeError(f"batch: must be a BatchAudit; got {type(batch).__name__}.")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError("plot_frontier needs matplotlib (pip install matplotlib).") from exc
    c = batch.candidates
    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), sharey=True)
    else:
        axes = list(ax)
        fig = axes[0].figure
    util_name = batch.settings.get("utility", "utility")
    sig_w = c["n_significant"].to_numpy() > 0
    sig_a = c["n_significant_across"].to_numpy() > 0
    alpha = batch.settings["alpha"]

    def _fmt(x):
        return f"{x:g}" if isinstance(x, float) else str(x)

    for axis, fair, xlabel in zip(
        axes, ("max_abs_ofi", "di_ratio"),
        ("max |OFI| over pairs (lower = fairer)", "DI ratio: min / max selection rate (1 = parity)"),
    ):
        x = c[fair].to_numpy(np.float64)
        y = c["utility"].to_numpy(np.float64)
        none = ~sig_w & ~sig_a
        axis.scatter(x[none], y[none], s=22, facecolors="none", edgecolors="tab:blue",
                     label="no significant pair")
        only_w = sig_w & ~sig_a
        axis.scatter(x[only_w], y[only_w], s=26, marker="^", color="tab:orange",
                     label=f"algorithmic bias (within, p_adj < {alpha:g})")
        axis.scatter(x[sig_a], y[sig_a], s=30, marker="x", color="tab:red",
                     label=f"significant across the batch ({batch.settings['across']})")
        fr = pareto_frontier(batch, fairness=fair)
        fx, fy = fr[fair].to_numpy(np.float64), fr["utility"].to_numpy(np.float64)
        o = np.argsort(fx)
        axis.plot(fx[o], fy[o], "-", color="black", lw=1.2, label="Pareto frontier", zorder=1)
        if label_frontier and len(fr) <= 25:
            for name, xx, yy in zip(fr.index, fx, fy):
                axis.annotate(_fmt(name), (xx, yy), textcoords="offset points", xytext=(4, 3), fontsize=7)
        if fair == "di_ratio":
            axis.axvspan(0.0, 0.8, color="0.9", zorder=0, label="fails four-fifths (ratio < 0.8)")
            axis.set_xlim(left=max(0.0, min(0.75, np.nanmin(x) - 0.02) if np.isfinite(x).any() else 0.0),
                          right=1.01)
        axis.set_xlabel(xlabel)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel(util_name)
    axes[1].legend(fontsize=7, loc="lower left")
    fig.suptitle(title or f"{len(c)} candidates: {util_name} vs fairness (frontier in black)", fontsize=10)
    fig.tight_layout()
    return fig
