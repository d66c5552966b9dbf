"""OFI paper, Scenario α made systematic: how much can ONE individual move OFI, DI and TE?

The paper's Table 1 shows that adding one qualified, correctly promoted person to each group of
Scenario B moves DI from "1 by context" (0/0) to 2.71 while OFI moves from 0.222 to 0.226. This
script checks that claim exhaustively: for every pair of confusion matrices
(cm_i, cm_j) in M(n_i) x M(n_j) (all CMs with n_i and n_j samples) and every single-person change

* ``add``  -- one more person in any cell of either group (8 neighbours), or
* ``move`` -- one person of either group changes cell (a label or a prediction flips; 24),

it records, per metric (OFI, DI paper eq. 1, DI P̂/P as in the authors' code, TE):

* how often the metric is undefined at the pair (mathematical zero denominators; NaN);
* the largest |change| over the neighbours where the metric is defined before and after;
* whether some neighbour switches the metric between defined and undefined;
* whether some neighbour flips the verdict: OFI beyond ±0.3 (``ofijax.ofi_flag``), DI's
  four-fifths rule (``ofijax.four_fifths_rule``), TE's sign.

For OFI the largest change is bounded by 2/min(n_i, n_j) for moves and 2/(min(n)+1) for additions
(one person shifts FP - FN by at most 2, resp. 1 with n growing by one); DI and TE have no such
bound. Everything is vectorised with ``jax.numpy`` over chunks of cm_i rows (all cm_j at once).

Writes ``experiments/results/ofi_robustness_summary.csv``, ``ofi_robustness_table1.csv`` and
``ofi_robustness.png``. Usage: ``python experiments/ofi_robustness.py [--quick]``
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE), str(_HERE.parent)]  # _ofi_common and the repo's ofijax

from _ofi_common import RESULTS_DIR, print_key_numbers  # noqa: E402

import ofijax  # noqa: E402

METRICS = ("ofi", "di_paper", "di_pp_over_p", "te")
KINDS = ("add", "move")
FULL_SIZES = ((6, 18), (7, 19), (10, 10), (20, 20))
QUICK_SIZES = ((6, 18),)


def enumerate_cms(n: int) -> np.ndarray:
    """All of M(n) as an int array (|M(n)|, 4) in TP, FN, FP, TN order."""
    rows = [
        (tp, fn, fp, n - tp - fn - fp)
        for tp in range(n + 1)
        for fn in range(n + 1 - tp)
        for fp in range(n + 1 - tp - fn)
    ]
    return np.asarray(rows, dtype=np.int32)


def deltas(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Changes (d_i, d_j), each (D, 4): one person added to / moved within one group."""
    eye = np.eye(4, dtype=np.int32)
    if kind == "add":
        one = list(eye)
    else:
        one = [eye[b] - eye[a] for a, b in itertools.permutations(range(4), 2)]
    zero = np.zeros(4, np.int32)
    d_i = np.array([d for d in one] + [zero] * len(one))
    d_j = np.array([zero] * len(one) + [d for d in one])
    return d_i, d_j


def _metric(name: str, a, b):
    if name == "ofi":
        return ofijax.ofi(a, b)
    if name == "di_paper":
        return ofijax.disparate_impact(a, b, variant="paper")
    if name == "di_pp_over_p":
        return ofijax.disparate_impact(a, b, variant="pp_over_p")
    return ofijax.treatment_equality(a, b)


def _verdict(name: str, v):
    if name == "ofi":
        return ofijax.ofi_flag(v, 0.3)
    if name.startswith("di"):
        return ofijax.four_fifths_rule(v)
    return jnp.sign(v)


@functools.partial(jax.jit, static_argnames=("name",))
def _chunk(ci, cj, d_i, d_j, *, name):
    """Per pair of a chunk: (undefined, max |change|, definedness switch, verdict flip)."""
    dtype = jnp.result_type(float)  # float64 when jax_enable_x64 is on (main() turns it on)
    ci, cj, d_i, d_j = (x.astype(dtype) for x in (ci, cj, d_i, d_j))
    a = ci[:, None, None, :] + d_i[None, None, :, :]  # (C, 1, D, 4)
    b = cj[None, :, None, :] + d_j[None, None, :, :]  # (1, K, D, 4)
    ok = jnp.all(a >= 0, -1) & jnp.all(b >= 0, -1)  # (C, K, D): a valid neighbour
    v0 = _metric(name, ci[:, None, :], cj[None, :, :])  # (C, K)
    v1 = _metric(name, a, b)  # (C, K, D)
    def0 = jnp.isfinite(v0)[..., None]
    def1 = jnp.isfinite(v1)
    both = ok & def0 & def1
    change = jnp.where(both, jnp.abs(v1 - v0[..., None]), -jnp.inf).max(-1)
    change = jnp.where(jnp.isfinite(change), change, jnp.nan)
    switch = jnp.any(ok & (def0 != def1), -1)
    w0 = _verdict(name, v0)[..., None]
    w1 = _verdict(name, v1)
    flip = jnp.any(ok & ((def0 != def1) | (both & (w0 != w1))), -1)
    return ~jnp.isfinite(v0), change, switch, flip


def pair_study(n_i: int, n_j: int, kind: str, name: str, chunk: int = 48):
    """Exhaustive study over M(n_i) x M(n_j); returns arrays over all pairs (flattened)."""
    mi, mj = enumerate_cms(n_i), enumerate_cms(n_j)
    d_i, d_j = (jnp.asarray(d) for d in deltas(kind))
    cj = jnp.asarray(mj)
    out = [[], [], [], []]
    pad = (-len(mi)) % chunk
    mi_p = np.concatenate([mi, np.repeat(mi[:1], pad, 0)]) if pad else mi
    for s in range(0, len(mi_p), chunk):
        res = _chunk(jnp.asarray(mi_p[s : s + chunk]), cj, d_i, d_j, name=name)
        for k, r in enumerate(res):
            out[k].append(np.asarray(r))
    return tuple(np.concatenate(o)[: len(mi)].reshape(-1) for o in out)


def te_undefined_pairs(n_i: int, n_j: int) -> int:
    """Exact count of pairs with FP = 0 in either group (inclusion-exclusion, ofi_notes §10)."""
    from math import comb

    zi, zj = comb(n_i + 2, 2), comb(n_j + 2, 2)
    return zi * comb(n_j + 3, 3) + comb(n_i + 3, 3) * zj - zi * zj


def summarise(sizes, quick: bool = False) -> tuple[pd.DataFrame, dict]:
    rows, dists = [], {}
    for (n_i, n_j), kind, name in itertools.product(sizes, KINDS, METRICS):
        undefined, change, switch, flip = pair_study(n_i, n_j, kind, name)
        pairs = undefined.size
        fin = change[np.isfinite(change)]
        dists[(n_i, n_j, kind, name)] = fin
        bound = 2.0 / min(n_i, n_j) if kind == "move" else 2.0 / (min(n_i, n_j) + 1)
        rows.append(
            {
                "n_i": n_i,
                "n_j": n_j,
                "change": kind,
                "metric": name,
                "pairs": pairs,
                "undefined_pairs": int(undefined.sum()),
                "undefined_share": float(undefined.mean()),
                "median_max_change": float(np.median(fin)) if fin.size else np.nan,
                "p95_max_change": float(np.quantile(fin, 0.95)) if fin.size else np.nan,
                "max_max_change": float(fin.max()) if fin.size else np.nan,
                "ofi_bound": bound if name == "ofi" else np.nan,
                "share_definedness_switch": float(switch.mean()),
                "share_verdict_flip": float(flip.mean()),
            }
        )
    return pd.DataFrame(rows), dists


def table1_alpha() -> pd.DataFrame:
    """Scenario B -> α of the paper (one TP added to each group), computed with the core API."""
    sc = {s.name: s for s in ofijax.paper_table1()}
    rows = []
    for s in ("B", "alpha"):
        ci, cj = sc[s].cm_i, sc[s].cm_j
        rows.append(
            {
                "scenario": s,
                "ofi": float(ofijax.ofi(ci, cj)),
                "di_paper": float(ofijax.disparate_impact(ci, cj)),
                "di_paper_undefined_one": float(ofijax.disparate_impact(ci, cj, undefined="one")),
                "di_pp_over_p": float(ofijax.disparate_impact(ci, cj, variant="pp_over_p")),
                "te": float(ofijax.treatment_equality(ci, cj)),
            }
        )
    return pd.DataFrame(rows)


def plot(dists, sizes, path: Path, dpi: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(KINDS), len(sizes), figsize=(4 * len(sizes), 6.5), squeeze=False)
    bins = np.logspace(-4, 3, 57)
    for (r, kind), (c, (n_i, n_j)) in itertools.product(enumerate(KINDS), enumerate(sizes)):
        ax = axes[r, c]
        for name in METRICS:
            v = dists[(n_i, n_j, kind, name)]
            v = np.clip(v[v > 0], bins[0], bins[-1])
            if v.size:
                ax.hist(v, bins=bins, histtype="step", label=name, density=False)
        bound = 2.0 / min(n_i, n_j) if kind == "move" else 2.0 / (min(n_i, n_j) + 1)
        ax.axvline(bound, color="k", ls=":", lw=1, label="OFI bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(
            f"n_i={n_i}, n_j={n_j}: one person {'added' if kind == 'add' else 'moved'}", fontsize=9
        )
        ax.set_xlabel("largest |change| over single-person changes")
        if c == 0:
            ax.set_ylabel("CM pairs")
        if r == 0 and c == 0:
            ax.legend(fontsize=7)
    fig.suptitle("Sensitivity to one individual, all CM pairs in M(n_i) x M(n_j)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def run(out_dir: Path = RESULTS_DIR, quick: bool = False) -> dict[str, object]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = QUICK_SIZES if quick else FULL_SIZES
    summary, dists = summarise(sizes, quick)
    summary.to_csv(out_dir / "ofi_robustness_summary.csv", index=False, float_format="%.6g")
    t1 = table1_alpha()
    t1.to_csv(out_dir / "ofi_robustness_table1.csv", index=False, float_format="%.6f")
    plot(dists, sizes, out_dir / "ofi_robustness.png", dpi=60 if quick else 90)
    numbers: dict[str, object] = {}
    for n_i, n_j in sizes:
        s = summary[(summary.n_i == n_i) & (summary.n_j == n_j)]
        for _, r in s.iterrows():
            tag = f"{r.metric}_{r.change}_{n_i}x{n_j}"
            numbers[f"max_change_{tag}"] = float(r.max_max_change)
            numbers[f"verdict_flip_share_{tag}"] = float(r.share_verdict_flip)
        te = s[(s.metric == "te") & (s.change == "add")].iloc[0]
        numbers[f"te_undefined_pairs_{n_i}x{n_j}"] = int(te.undefined_pairs)
        numbers[f"te_undefined_pairs_formula_{n_i}x{n_j}"] = te_undefined_pairs(n_i, n_j)
    numbers["table1_ofi_B_to_alpha_change"] = float(t1.ofi[1] - t1.ofi[0])
    numbers["table1_di_B_to_alpha"] = f"{t1.di_paper_undefined_one[0]:.4g} -> {t1.di_paper[1]:.4g}"
    return numbers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one size pair (6, 18)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    numbers = run(args.out, quick=args.quick)
    numbers["runtime_s"] = round(time.perf_counter() - t0, 2)
    print_key_numbers(numbers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
