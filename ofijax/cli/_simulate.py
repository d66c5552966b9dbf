"""``ofijax simulate``: Monte Carlo of B and OFI under a null, next to the exact values.

Everything comes from :mod:`ofijax.distributions`: the samplers, the one Monte Carlo loop
(:func:`~ofijax.distributions.monte_carlo`, fixed memory, progress through ``ofijax._progress``),
the exact PMFs and moments, the one p-value engine (:func:`~ofijax.distributions.ofi_pvalue`)
and thresholds. Monte Carlo numbers carry intervals: the mean ± 1.96 stderr, tail probabilities
with Wilson intervals, quantiles with order-statistic intervals (95 %).

Histograms are lattice-exact: one bin per attainable value (B = d/n; OFI on 1/lcm(n_i, n_j))
where that lattice has at most ``_LATTICE_MAX`` points, else ``--bins`` equal bins.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import distributions as D
from ofijax.cli._output import PLOT_DPI, report_dir
from ofijax.cm import FN, FP

__all__ = ["simulate_report", "simulate_run", "SIMULATE_SCHEMA_VERSION"]

#: Version of results.json written by ``ofijax simulate --out``.
SIMULATE_SCHEMA_VERSION = 1

_LATTICE_MAX = 20_001  # lattice points of one histogram (memory: chunks × points per block)
_EXACT_PMF_MAX = 4 * 10**7  # most support points of an exact PMF computed for the plots and tails
_Z95 = 1.959963984540054  # the standard normal's 0.975 quantile: 95% Wilson intervals

_NULL_TEXT = {
    "uniform": "uniform over M(n)",
    "multinomial": "Multinomial(n, p = {p})",
    "subsample": "subsample n rows without replacement from the CM {cm} (hypergeometric)",
}


@dataclass(frozen=True)
class _Benefit:
    """B = (FP − FN)/n of group ``g`` of a (chunk, 2, 4) pair stack."""

    g: int

    def __call__(self, cms):
        c = cms[..., self.g, :].astype(jnp.result_type(float))
        return (c[..., FP] - c[..., FN]) / c.sum(-1)


@dataclass(frozen=True)
class _Exceeds:
    """1 where |D_i n_j − D_j n_i| ≥ k g (g = gcd), else 0: |OFI| ≥ k / lcm(n_i, n_j).

    Integer-exact: traced in float64 by the Monte Carlo loop (|D| n < 2^53).
    """

    a: int  # n_j / g
    b: int  # n_i / g
    k: int

    def __call__(self, cms):
        dt = jnp.result_type(float)
        d = (cms[..., FP] - cms[..., FN]).astype(dt)
        t = jnp.abs(d[..., 0] * self.a - d[..., 1] * self.b)
        return (t > self.k - 0.5).astype(dt)


def _check_observed(observed, ns) -> float | None:
    if observed is None:
        return None
    o = float(observed)
    if not math.isfinite(o) or abs(o) > 2.0:
        raise ValueError(
            f"--observed: an OFI lies in [-2, 2] (OFI = B_i − B_j, each B in [-1, 1]); got {observed!r}."
        )
    if len(ns) != 2:
        raise ValueError("--observed: an OFI needs two group sizes; pass --n n_i n_j (one size "
                         "simulates B only).")
    return o


def _check_quantiles(q) -> tuple[float, ...]:
    q = (0.025, 0.975) if q is None else tuple(float(v) for v in q)
    if not q or any(not 0.0 < v < 1.0 for v in q):
        raise ValueError(f"--quantiles: levels must lie strictly between 0 and 1, e.g. 0.025 0.975; got {list(q)}.")
    return q


def _subsample_moments(n: int, cm) -> D.Moments:
    """Exact mean and variance of B = (FP − FN)/n for n rows drawn without replacement.

    E B = (c_FP − c_FN)/M; Var(FP − FN) = n (M − n)/(M − 1) [(p_FP + p_FN) − (p_FP − p_FN)²],
    p = c / M (multivariate hypergeometric covariances).
    """
    c = [Fraction(int(round(x))) for x in cm]
    m = sum(c)
    pfp, pfn = c[2] / m, c[1] / m
    mean = pfp - pfn
    fpc = Fraction(m - n, m - 1) if m > 1 else Fraction(0)
    return D.Moments(mean, fpc * ((pfp + pfn) - mean * mean) / n)


def simulate_run(ns, *, null: str, cm, num_samples: int, seed: int, observed: float | None = None,
                 bins: int = 400, quantiles=None) -> dict:
    """All numbers of ``ofijax simulate`` as a dict (what results.json holds, plus the summaries).

    Keys: ``settings``, ``rows`` (one per quantity: Monte Carlo Summary, exact moments, exact PMF
    or None), ``tails`` (tail probabilities, Monte Carlo with Wilson interval and exact through
    :func:`ofijax.distributions.ofi_pvalue`, or the reason there is none), ``threshold``, ``notes``.
    """
    ns = [int(n) for n in ns]
    observed = _check_observed(observed, ns)
    levels = _check_quantiles(quantiles)
    if isinstance(bins, bool) or int(bins) < 1:
        raise ValueError(f"--bins: must be a positive integer; got {bins!r}.")
    if any(n >= 2**31 for n in ns):
        raise ValueError(f"--n: group sizes must be below 2**31; got {ns}.")
    probs = None
    if null != "uniform":
        c = np.asarray(cm, dtype=float)
        probs = c / c.sum()

    def sampler(n):
        if null == "uniform":
            return D.uniform_sampler(n)
        if null == "multinomial":
            return D.multinomial_sampler(n, probs)
        return D.subsample_sampler([int(round(x)) for x in cm], n)

    ni, nj = (ns[0], ns[1]) if len(ns) == 2 else (ns[0], ns[0])
    pair = D.pair_sampler(sampler(ni), sampler(nj))
    key = jax.random.key(seed)
    null_arg = "uniform" if probs is None else [float(x) for x in cm]

    def run(statistic, rng, q):
        lat = q if q and (rng[1] - rng[0]) * q + 1 <= _LATTICE_MAX else None
        return D.monte_carlo(key, statistic, pair, num_samples, bins=int(bins), range=rng,
                             quantiles=levels, lattice=lat)

    def b_exact(n):
        if null == "subsample":
            return _subsample_moments(n, cm), None
        pmf = D.marginal_benefit_pmf(n, probs) if 2 * n + 1 <= _EXACT_PMF_MAX else None
        return D.marginal_benefit_moments(n, probs), pmf

    rows = []
    mom, pmf = b_exact(ni)
    rows.append({"name": f"B, n = {ni}", "key": "b_i", "n": ni, "mc": run(_Benefit(0), (-1.0, 1.0), ni),
                 "moments": mom, "pmf": pmf})
    tails, threshold, notes = [], None, []
    if len(ns) == 2:
        mom, pmf = b_exact(nj)
        rows.append({"name": f"B, n = {nj}", "key": "b_j", "n": nj,
                     "mc": run(_Benefit(1), (-1.0, 1.0), nj), "moments": mom, "pmf": pmf})
        g = math.gcd(ni, nj)
        lcm = ni // g * nj
        if null == "subsample":
            om = D.Moments(rows[0]["moments"].mean - rows[1]["moments"].mean,
                           rows[0]["moments"].var + rows[1]["moments"].var)
            opmf = None
        else:
            om = D.ofi_moments(ni, nj, null=null_arg)
            opmf = (D.ofi_pmf(ni, nj, null=null_arg)
                    if (2 * ni + 1) * (2 * nj + 1) <= _EXACT_PMF_MAX else None)
        ofi_s = run(D.pair_statistic(), (-2.0, 2.0), lcm)
        rows.append({"name": f"OFI, n = {ni}, {nj}", "key": "ofi", "n": [ni, nj], "mc": ofi_s,
                     "moments": om, "pmf": opmf})
        checks = [("P(|OFI| >= 0.3)", math.ceil(Fraction(3, 10) * lcm))]
        if observed is not None:  # the nearest attainable |OFI|
            checks.append((f"P(|OFI| >= |{observed:+.4f}|)", int(round(abs(observed) * lcm))))
        for label, k in checks:
            t = k / lcm
            if ofi_s.lattice:
                est, lo, hi = ofi_s.tail_probability(Fraction(k, lcm).__float__(), "abs")
            else:
                s = D.monte_carlo(key, _Exceeds(nj // g, ni // g, k), pair, num_samples,
                                  bins=2, range=(0.0, 1.0))
                cnt = int(round(s.mean * s.count))
                est = cnt / s.count
                lo, hi = _wilson(cnt, s.count)
            if null == "subsample":
                ex, why = None, ("the exact p-value engine covers the uniform and multinomial nulls; "
                                 "the subsample (hypergeometric) null has Monte Carlo only")
            else:
                ex, why = float(D.ofi_pvalue(t, ni, nj, null=null_arg)), None
            tails.append({"label": label, "t": t, "lattice_k": k, "lcm": lcm, "mc": est,
                          "mc_low": lo, "mc_high": hi, "exact": ex, "exact_missing": why})
        if null == "subsample":
            notes.append("exact 95% threshold: not available under the subsample null")
        elif (2 * ni + 1) * (2 * nj + 1) > _EXACT_PMF_MAX:
            notes.append("exact 95% threshold: skipped (the exact OFI PMF is limited to "
                         "(2 n_i + 1)(2 n_j + 1) ≤ 4e7; see ofijax.distributions.ofi_threshold)")
        else:
            threshold = D.ofi_threshold(ni, nj, null=null_arg)
    settings = {"n": ns, "null": null, "cm": None if cm is None else [float(x) for x in cm],
                "num_samples": int(num_samples), "seed": int(seed), "observed": observed,
                "bins": int(bins), "quantiles": list(levels), "confidence": 0.95}
    return {"settings": settings, "rows": rows, "tails": tails, "threshold": threshold,
            "notes": notes, "probs": None if probs is None else probs.tolist()}


def _wilson(k: int, n: int) -> tuple[float, float]:
    z = _Z95
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (0.0 if k == 0 else max(0.0, c - h), 1.0 if k == n else min(1.0, c + h))


def _fmt_q(v: float) -> str:
    return f"{v:.4f}" if math.isfinite(v) else ("-inf" if v < 0 else "+inf")


def format_report(res: dict) -> str:
    """The text table of :func:`simulate_run`'s result."""
    st = res["settings"]
    p_txt = None if res["probs"] is None else np.round(res["probs"], 4).tolist()
    cm_txt = None if st["cm"] is None else [int(x) if float(x).is_integer() else x for x in st["cm"]]
    null_txt = _NULL_TEXT[st["null"]].format(p=p_txt, cm=cm_txt)
    lines = [f"ofijax simulate: {st['num_samples']} draws, null = {null_txt}, seed {st['seed']}",
             "Monte Carlo 95% intervals: mean ± 1.96 stderr; quantiles [order-statistic interval]; "
             "tail probabilities [Wilson]", ""]
    qhead = "".join(f"{'q' + format(100 * q, 'g') + '%':>28}" for q in st["quantiles"])
    lines.append(f"{'quantity':<22}{'MC mean':>10}{'MC sd':>10}{'exact mean':>12}{'exact sd':>10}"
                 f"{'MC mean 95% CI':>22}" + qhead)
    for r in res["rows"]:
        s, mom = r["mc"], r["moments"]
        em, es = ("n/a", "n/a") if mom is None else (f"{float(mom.mean):.4f}", f"{math.sqrt(float(mom.var)):.4f}")
        lo, hi = s.mean_interval()
        qi = s.quantile_intervals()
        qs = "".join(f"{_fmt_q(q) + ' [' + _fmt_q(a) + ', ' + _fmt_q(b) + ']':>28}"
                     for q, (a, b) in zip(s.quantiles, qi))
        ci = f"[{lo:.4f}, {hi:.4f}]"
        lines.append(f"{r['name']:<22}{s.mean:>10.4f}{s.std:>10.4f}{em:>12}{es:>10}{ci:>22}" + qs)
    if res["tails"]:
        lines.append("")
    for t in res["tails"]:
        ex = f"{t['exact']:.4f}" if t["exact"] is not None else f"n/a ({t['exact_missing']})"
        lines.append(f"{t['label']}: Monte Carlo {t['mc']:.4f}, 95% CI [{t['mc_low']:.4f}, {t['mc_high']:.4f}], "
                     f"exact {ex}")
    th = res["threshold"]
    if th is not None:
        lines.append(
            f"exact 95% two-sided OFI threshold under this null: {th.threshold:.4f} "
            f"(sd of OFI {th.sigma_ofi:.4f}; the paper's 0.3 approximates the sd of B for ONE group, "
            f"here {th.sigma_b_i:.4f} and {th.sigma_b_j:.4f})"
        )
    lines.extend(res["notes"])
    if st["null"] == "uniform":
        for n in dict.fromkeys(st["n"]):
            lines.append(f"exact Var(B) under the uniform null = (n + 4)/(10 n) = {(n + 4) / (10 * n):.5f} (n = {n})")
    return "\n".join(lines)


def simulate_report(ns, *, null: str, cm, num_samples: int, seed: int, observed: float | None,
                    bins: int = 400, quantiles=None) -> str:
    """Monte Carlo of B (and OFI for two sizes) under a null, next to the exact values.

    Ties in |OFI| ≥ t are decided on the lattice 1/lcm(n_i, n_j).
    """
    return format_report(simulate_run(ns, null=null, cm=cm, num_samples=num_samples, seed=seed,
                                      observed=observed, bins=bins, quantiles=quantiles))


def _frac(x):
    return str(x) if isinstance(x, Fraction) else float(x)


def results_json(res: dict) -> dict:
    """results.json: settings, per quantity the Monte Carlo Summary (``Summary.to_dict``), its
    intervals, the exact moments and PMF (``PMF.to_dict``, None where not computed), the tails
    and the threshold; ``schema_version`` first."""
    out = {"schema_version": SIMULATE_SCHEMA_VERSION, "kind": "ofijax.simulate",
           "settings": res["settings"], "quantities": {}}
    for r in res["rows"]:
        s = r["mc"]
        mom = r["moments"]
        out["quantities"][r["key"]] = {
            "name": r["name"], "n": r["n"], "monte_carlo": s.to_dict(),
            "mean_interval": list(s.mean_interval()), "stderr": s.stderr,
            "quantile_intervals": s.quantile_intervals().tolist(),
            "exact_mean": None if mom is None else _frac(mom.mean),
            "exact_var": None if mom is None else _frac(mom.var),
            "exact_pmf": None if r["pmf"] is None else r["pmf"].to_dict(),
        }
    out["tails"] = res["tails"]
    th = res["threshold"]
    out["threshold"] = None if th is None else {"threshold": th.threshold, "level": th.level,
                                                "sigma_ofi": th.sigma_ofi, "sigma_b_i": th.sigma_b_i,
                                                "sigma_b_j": th.sigma_b_j}
    out["notes"] = res["notes"]
    return out


def _plot(row: dict, path: str) -> None:
    from matplotlib.figure import Figure

    s, pmf = row["mc"], row["pmf"]
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    if s.lattice:
        ax.bar(s.values, s.hist / max(s.count, 1), width=1.0 / s.lattice, color="#9ecae1",
               label=f"Monte Carlo ({s.count:,} draws)")
        if pmf is not None:
            ax.plot(pmf.values, pmf.probs, "k.-", ms=3, lw=0.8, label="exact PMF")
        ax.set_ylabel("probability")
    else:
        width = np.diff(s.edges)
        ax.bar(s.edges[:-1], s.hist / max(s.count, 1) / width, width=width, align="edge",
               color="#9ecae1", label=f"Monte Carlo ({s.count:,} draws)")
        if pmf is not None:  # exact density on the same bins
            ex = np.histogram(pmf.values, bins=s.edges, weights=pmf.probs)[0] / width
            ax.step(s.edges[:-1], ex, where="post", color="k", lw=0.8, label="exact (binned)")
        ax.set_ylabel("density")
    for x in (-0.3, 0.3):
        ax.axvline(x, color="#d62728", ls="--", lw=1)
    ax.axvspan(-0.3, 0.3, color="#d62728", alpha=0.06, label="the paper's ±0.3 band")
    ax.set_xlabel(row["name"].split(",")[0])
    ax.set_title(row["name"])
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=PLOT_DPI)


def write_results(res: dict, out: str, force: bool) -> list[str]:
    """results.json and one PNG per quantity into ``out`` (atomically; refuses an existing folder
    without ``force``). Returns the file names."""
    names = ["results.json"]
    with report_dir(out, force) as tmp:
        with open(os.path.join(tmp, "results.json"), "w") as f:
            json.dump(results_json(res), f, indent=1)
        for r in res["rows"]:
            name = f"{r['key']}.png"
            _plot(r, os.path.join(tmp, name))
            names.append(name)
    return names
