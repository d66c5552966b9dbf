"""Shared helpers for the OFI-paper experiment scripts (plots, tables, key-number output)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

import ofijax  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: The pairwise metrics of the paper's heatmaps, M[i, j] = metric(group i, group j).
PAIR_METRICS = {
    "ofi": ofijax.ofi,
    "di_paper": functools.partial(ofijax.disparate_impact, variant="paper"),
    "di_pp_over_p": functools.partial(ofijax.disparate_impact, variant="pp_over_p"),
    "te": ofijax.treatment_equality,
}

PANEL_TITLES = {
    "te": "TE = FN_i/FP_i - FN_j/FP_j\n(larger = bias toward i; reversed colours)",
    "di_paper": "DI, paper eq. 1: (P̂_i/n_i)/(P̂_j/n_j)",
    "di_pp_over_p": "DI, authors' code: (P̂_i/P_i)/(P̂_j/P_j)\n(variant of the published heatmaps)",
    "ofi": "OFI = B_i - B_j",
}


def pair_tables(cms, groups: Sequence[str]) -> dict[str, pd.DataFrame]:
    """All pairwise metric matrices (rows = group i, columns = group j) as float64 frames."""
    out = {}
    for name, metric in PAIR_METRICS.items():
        m = np.asarray(ofijax.pairwise(metric, cms), dtype=np.float64)
        out[name] = pd.DataFrame(m, index=list(groups), columns=list(groups))
    return out


def cm_table(cms, groups: Sequence[str]) -> pd.DataFrame:
    """Per-group counts and the benefit quantities, computed with the core API."""
    c = np.asarray(cms)
    df = pd.DataFrame(c, index=list(groups), columns=["TP", "FN", "FP", "TN"])
    df.index.name = "group"
    df.insert(0, "n", c.sum(-1))
    df["b"] = np.asarray(ofijax.benefit(cms), dtype=np.float64)
    df["E[b]"] = np.asarray(ofijax.expected_benefit(cms), dtype=np.float64)
    df["B"] = np.asarray(ofijax.marginal_benefit(cms), dtype=np.float64)
    return df


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "NaN"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:.0f}"


def heatmaps(
    tables: dict[str, pd.DataFrame],
    title: str,
    path: Path,
    *,
    order: Sequence[str] = ("te", "di_paper", "di_pp_over_p", "ofi"),
    labels: Sequence[str] | None = None,
    dpi: int = 90,
) -> None:
    """Annotated heatmaps in the paper's style (rows = group i, columns = group j).

    OFI and TE are centred at 0 (TE with reversed colours, as in the paper), DI at 1. Undefined
    (NaN) cells are grey and annotated "NaN".
    """
    k = len(order)
    ncol = 2 if k > 1 else 1
    nrow = math.ceil(k / ncol)
    any_t = next(iter(tables.values()))
    size = 1.0 + 0.75 * len(any_t)
    fig, axes = plt.subplots(nrow, ncol, figsize=(ncol * size + 1.5, nrow * size + 0.6))
    axes = np.atleast_1d(axes).ravel()
    names = list(labels) if labels is not None else list(any_t.index)
    for ax, key in zip(axes, order):
        m = tables[key].to_numpy(dtype=float)
        finite = m[np.isfinite(m)]
        center = 1.0 if key.startswith("di") else 0.0
        span = float(np.max(np.abs(finite - center))) if finite.size else 1.0
        span = span or 1.0
        if key.startswith("di"):
            lo = max(min(finite.min() if finite.size else 0.0, center - 1e-9), 0.0)
            norm = TwoSlopeNorm(vcenter=center, vmin=min(lo, center - 1e-6), vmax=center + span)
        else:
            norm = TwoSlopeNorm(vcenter=center, vmin=center - span, vmax=center + span)
        cmap = plt.get_cmap("coolwarm_r" if key == "te" else "coolwarm").with_extremes(
            bad="lightgrey"
        )
        im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, norm=norm)
        for (i, j), val in np.ndenumerate(m):
            ax.text(j, i, _fmt(val), ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("group j")
        ax.set_ylabel("group i")
        ax.set_title(PANEL_TITLES.get(key, key), fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    for ax in axes[k:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def print_key_numbers(numbers: dict[str, object]) -> None:
    """End a script's output with ``name: value`` lines."""
    for k, val in numbers.items():
        if isinstance(val, float):
            print(f"{k}: {val:.6g}")
        else:
            print(f"{k}: {val}")
