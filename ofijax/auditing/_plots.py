r"""Heatmaps of an audit (as the OFI paper's Figure 2), on fixed, documented colour scales.

* OFI(i, j) on a fixed symmetric scale [−0.5, 0.5] (``OFI_LIMIT``): blue = i receives less
  unjustified benefit than j, red = more; an OFI of 0.01 stays nearly white whatever else is shown.
* DI(i, j) on a log scale [1/4, 4] (``DI_LIMITS``) centred on 1; the four-fifths band
  [0.8, 1.25] is marked on the colour bar.
* Values beyond a scale take its end colour; ``*`` marks pairs significant after the multiplicity
  correction; numbers are white on dark cells. Labels are escaped so that ``$`` or ``\`` in a group
  name is shown as typed. More than ``MAX_HEATMAP_GROUPS`` groups are not drawn (see report.json).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ofijax import metrics as mt
from ofijax.auditing._report import group_label
from ofijax.auditing._verdicts import format_number

__all__ = ["DI_LIMITS", "MAX_HEATMAP_GROUPS", "OFI_LIMIT", "write_heatmaps"]

OFI_LIMIT = 0.5
DI_LIMITS = (0.25, 4.0)
MAX_HEATMAP_GROUPS = 30


def _escape(text: str) -> str:
    """Plain text for matplotlib: no mathtext (``$``), no TeX escapes."""
    return text.replace("$", r"\$")


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_heatmaps(af: Any, out_dir: str, *, dpi: int = 110) -> tuple[list[str], str | None]:
    """Write ``ofi_heatmap.png`` and ``di_heatmap.png`` for an audit into ``out_dir``.

    Returns:
        ``(file names written, note)``; the note says why nothing was drawn (no matplotlib, or
        more than ``MAX_HEATMAP_GROUPS`` groups), else None.
    """
    try:  # no pyplot (see experiments/notes/auditing.md): a Figure saved by the Agg canvas
        import matplotlib
        from matplotlib.colors import LogNorm, Normalize
        from matplotlib.figure import Figure
    except ImportError:
        return [], "matplotlib is not installed: heatmap PNGs skipped (pip install matplotlib)."
    k = len(af.groups)
    if k > MAX_HEATMAP_GROUPS:
        return [], (f"heatmaps skipped: {k} groups exceed the {MAX_HEATMAP_GROUPS} a readable heatmap "
                    "holds; every pair is in report.json.")
    min_n = af.settings.get("min_group_size", 0)
    sizes = np.asarray(af.cms).sum(-1)
    labels = [_escape(_short(group_label(g))) + (f" [n={n:g}: too small]" if n < min_n else "")
              for g, n in zip(af.groups, sizes)]
    padj = np.asarray(af.p_adjusted, dtype=float)
    if np.isnan(padj).all():  # fractional weights: significance read from the interval
        sig_mask = (np.asarray(af.ci_low) > 0) | (np.asarray(af.ci_high) < 0)
    else:
        sig_mask = padj < af.settings["alpha"]
    corr = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "unadjusted"}[af.settings["correction"]]
    # the symmetric impact ratio (lower rate over higher): the same cells fail whatever the order
    di_fails = np.nan_to_num(np.asarray(mt.four_fifths_rule(np.asarray(af.impact_ratio, dtype=float)))) != 0
    size = max(4.8, 0.62 * k + 2.8)
    fs = 9 if k <= 8 else (7 if k <= 16 else 5.5)
    files = []
    for name, mat, title in (
        ("ofi_heatmap.png", af.ofi,
         f"OFI(i, j) = B_i − B_j (fixed scale ±{OFI_LIMIT}); * = significant ({corr})\n"
         "red: i gets more unjustified benefit than j (bias against j)"),
        ("di_heatmap.png", af.di,
         f"DI(i, j) = selection-rate ratio ({af.settings['di_variant']}), log scale\n"
         "bold: outside [0.8, 1.25], fails the four-fifths rule"),
    ):
        m = np.asarray(mat, dtype=float)
        fig = Figure(figsize=(size, size * 0.86))
        ax = fig.subplots()
        cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="#dddddd")
        if name.startswith("ofi"):
            norm = Normalize(-OFI_LIMIT, OFI_LIMIT, clip=True)
            shown = m
        else:
            norm = LogNorm(*DI_LIMITS, clip=True)
            shown = np.where(m > 0, m, np.nan)
        im = ax.imshow(shown, cmap=cmap, norm=norm)
        cbar = fig.colorbar(im, ax=ax, shrink=0.8)
        if not name.startswith("ofi"):
            ticks = [0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0]
            cbar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
            cbar.minorticks_off()
            for t in (0.8, 1.25):
                cbar.ax.axhline(t, color="black", lw=0.8)
        for i in range(k):
            for j in range(k):
                val = m[i, j]
                if i == j:
                    txt = "—" if name.startswith("ofi") else "1"
                else:
                    txt = "undef." if math.isnan(val) else format_number(val, 2)
                    if bool(sig_mask[i, j]) and name.startswith("ofi"):
                        txt += "*"
                dark = False
                if not math.isnan(val) and i != j:
                    pos = float(norm(val)) if (name.startswith("ofi") or val > 0) else 0.5
                    dark = abs(pos - 0.5) > 0.3
                bold = (not name.startswith("ofi")) and i != j and bool(di_fails[i, j])
                ax.text(j, i, txt, ha="center", va="center", fontsize=fs,
                        color="white" if dark else "black", fontweight="bold" if bold else "normal")
        ax.set_xticks(range(k), labels, rotation=45, ha="right", fontsize=fs)
        ax.set_yticks(range(k), labels, fontsize=fs)
        ax.set_xlabel("group j")
        ax.set_ylabel("group i")
        ax.set_title(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name), dpi=dpi)
        files.append(name)
    return files, None
