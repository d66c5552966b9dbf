"""``ofijax simulate``: Monte Carlo of B and OFI under a null, next to the exact values.

Everything comes from :mod:`ofijax.distributions`: the samplers, the one Monte Carlo loop
(:func:`~ofijax.distributions.monte_carlo`, fixed memory, progress through ``ofijax._progress``),
the exact moments (:func:`~ofijax.distributions.ofi_moments`), the exact p-value engine
(:func:`~ofijax.distributions.ofi_pvalue`) and thresholds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import distributions as D
from ofijax.cm import FN, FP

__all__ = ["simulate_report"]

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

    Computed as |D_i (n_j/g) − D_j (n_i/g)| > k − ½ in the default float (exact while
    2 lcm < 2^24 in float32, always in x64 mode; otherwise draws within ~1e-7 relative of the
    threshold may fall on either side).
    """

    a: int  # n_j / g
    b: int  # n_i / g
    k: int

    def __call__(self, cms):
        dt = jnp.result_type(float)
        d = (cms[..., FP] - cms[..., FN]).astype(dt)
        t = jnp.abs(d[..., 0] * self.a - d[..., 1] * self.b)
        return (t > self.k - 0.5).astype(dt)


def _check_observed(observed) -> float | None:
    if observed is None:
        return None
    o = float(observed)
    if not math.isfinite(o) or abs(o) > 2.0:
        raise ValueError(
            f"--observed: an OFI lies in [-2, 2] (OFI = B_i − B_j, each B in [-1, 1]); got {observed!r}."
        )
    return o


def simulate_report(ns, *, null: str, cm, num_samples: int, seed: int, observed: float | None) -> str:
    """Monte Carlo of B (and OFI for two sizes) under a null, next to the exact values.

    Ties in |OFI| ≥ t are decided on the lattice 1/lcm(n_i, n_j) (see :class:`_Exceeds`).
    """
    observed = _check_observed(observed)
    if any(int(n) >= 2**31 for n in ns):
        raise ValueError(f"--n: group sizes must be below 2**31; got {list(ns)}.")
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

    def run(statistic, rng=(-2.0, 2.0)):
        return D.monte_carlo(key, statistic, pair, num_samples, bins=4000, range=rng,
                             quantiles=(0.025, 0.975))

    null_arg = "uniform" if probs is None else [float(x) for x in cm]
    p_txt = None if probs is None else np.round(probs, 4).tolist()
    lines = [f"ofijax simulate: {num_samples} draws, null = {_NULL_TEXT[null].format(p=p_txt, cm=cm)}, seed {seed}", ""]
    lines.append(f"{'quantity':<22}{'MC mean':>10}{'MC sd':>10}{'exact mean':>12}{'exact sd':>10}"
                 f"{'q2.5%':>9}{'q97.5%':>9}")

    def row(name, s, mom):
        em, es = ("n/a", "n/a") if mom is None else (f"{float(mom.mean):.4f}", f"{math.sqrt(float(mom.var)):.4f}")
        q = s.quantiles
        lines.append(f"{name:<22}{s.mean:>10.4f}{s.std:>10.4f}{em:>12}{es:>10}{q[0]:>9.3f}{q[1]:>9.3f}")

    def b_moments(n):
        return None if null == "subsample" else D.marginal_benefit_moments(n, probs)

    row(f"B, n = {ni}", run(_Benefit(0), (-1.0, 1.0)), b_moments(ni))
    if len(ns) == 2:
        row(f"B, n = {nj}", run(_Benefit(1), (-1.0, 1.0)), b_moments(nj))
        mom = None if null == "subsample" else D.ofi_moments(ni, nj, null=null_arg)
        row(f"OFI, n = {ni}, {nj}", run(D.pair_statistic()), mom)
        g = math.gcd(ni, nj)
        lcm = ni // g * nj
        checks = [("P(|OFI| >= 0.3)", math.ceil(Fraction(3, 10) * lcm))]
        if observed is not None:  # the nearest attainable |OFI|
            checks.append((f"P(|OFI| >= |{observed:+.4f}|)", int(round(abs(observed) * lcm))))
        lines.append("")
        for label, k in checks:
            mc = run(_Exceeds(nj // g, ni // g, k), (0.0, 1.0)).mean
            ex = "n/a" if null == "subsample" else f"{D.ofi_pvalue(k / lcm, ni, nj, null=null_arg):.4f}"
            lines.append(f"{label}: Monte Carlo {mc:.4f}, exact {ex}")
        if null != "subsample" and (2 * ni + 1) * (2 * nj + 1) > 4 * 10**7:
            lines.append("exact 95% threshold: skipped (the exact OFI PMF is limited to "
                         "(2 n_i + 1)(2 n_j + 1) ≤ 4e7; see ofijax.distributions.ofi_threshold)")
        elif null != "subsample":
            t = D.ofi_threshold(ni, nj, null=null_arg)
            lines.append(
                f"exact 95% two-sided OFI threshold under this null: {t.threshold:.4f} "
                f"(sd of OFI {t.sigma_ofi:.4f}; the paper's 0.3 approximates the sd of B for ONE group, "
                f"here {t.sigma_b_i:.4f} and {t.sigma_b_j:.4f})"
            )
    if null == "uniform":
        lines.append(f"exact Var(B) under the uniform null = (n + 4)/(10 n) = {(ni + 4) / (10 * ni):.5f} (n = {ni})")
    return "\n".join(lines)
