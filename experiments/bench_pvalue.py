"""Benchmark: the one OFI p-value engine (ofijax.distributions) vs a direct NumPy peer.

Peer: the O(n²) trinomial PMF of D = FP − FN (``_combinatorics.trinomial_diff_pmf``, what the
engine replaced) combined by the same integer-threshold sum. Both run in the same process, so the
*ratio* is what counts on a shared machine. Cold = first call (includes PMF construction),
warm = a repeated call (cached PMFs). Also times the vectorized batch (``ofi_pvalue_cms`` over P
pairs, exact or saddlepoint), the batched exact path against the same pairs one call at a time
(ratio and largest difference), and reports the saddlepoint's relative error against the exact engine.

Usage: ``python experiments/bench_pvalue.py [--quick]``.

``--accuracy`` (issue #36) writes the accuracy table instead: every approximate path of the
engine against an exact reference where one is feasible, per regime (random pairs, p-values from
~0.8 down to the far tail): the saddlepoint with all cells ≥ 0.005, with small cells (0 < p <
0.005), at the edge of its domain (n_s(p_FN + p_FP) ∈ [200, 400) or n_s(p_TP + p_TN) ∈ [10, 20)),
the hybrid (exact small group × saddlepoint tails of a large one), the uniform null's block
bracket against its exact closed-form sum, and the closed-form sum against the classic exact
engine. Writes experiments/results/bench_pvalue_accuracy.csv and .md (the table in
experiments/RESULTS.md) and ends with ``name: value`` lines.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo's ofijax, uninstalled too
from ofijax import distributions as D  # noqa: E402
from ofijax.distributions import _combinatorics as C  # noqa: E402
from ofijax.distributions import _pvalue as P  # noqa: E402


def peer_pvalue(ci, cj):
    """Direct float64 sum on O(n²) trinomial PMFs (pooled null)."""
    pooled = (np.add(ci, cj)) / (sum(ci) + sum(cj))
    ni, nj = sum(ci), sum(cj)
    pi = C.trinomial_diff_pmf(ni, pooled[2], pooled[1])
    pj = C.trinomial_diff_pmf(nj, pooled[2], pooled[1])
    m = abs((ci[2] - ci[1]) * nj - (cj[2] - cj[1]) * ni)
    x = np.arange(-ni, ni + 1, dtype=np.int64)
    lo_cdf = np.concatenate([[0.0], np.cumsum(pj)])
    up_sf = np.concatenate([np.cumsum(pj[::-1])[::-1], [0.0]])
    lo = lo_cdf[np.clip(np.floor_divide(x * nj - m, ni) + nj + 1, 0, 2 * nj + 1)]
    hi = up_sf[np.clip(-np.floor_divide(-(x * nj + m), ni) + nj, 0, 2 * nj + 1)]
    return float(np.sum(pi * (lo + hi)))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


ZS = (0.2, 1.0, 2.5, 5.0, 10.0, 20.0, 35.0)


def _ms(ni, nj, a, b, zs=ZS):
    g = math.gcd(ni, nj)
    sd = math.sqrt(ni * nj * (ni + nj) * ((a + b) - (b - a) ** 2))
    ms = sorted({int(z * sd) // g * g + g for z in zs})
    return np.array([m for m in ms if m < 2 * ni * nj], np.int64)


def _saddle_case(rng, regime):
    """(n_s, n_l, a, b, c) of one random pair in a saddlepoint regime."""
    while True:
        ns = int(rng.integers(P.SADDLE_MIN_N, 8000))
        nl = int(rng.integers(ns, 3 * ns)) if rng.random() < 0.7 else ns
        if regime == "moderate":
            p = rng.dirichlet([4, 1, 1, 4])
            a, b, c = p[1], p[2], p[0] + p[3]
            if min(a, b, c) < 0.005 or ns * (a + b) < P.SADDLE_MIN_COUNT:
                continue
        elif regime == "small":
            small = 10 ** rng.uniform(-5, math.log10(0.005))
            big = rng.uniform(0.01, 0.4)
            a, b = (small, big) if rng.random() < 0.5 else (big, small)
            if rng.random() < 0.3:  # both small
                a, b = small, 10 ** rng.uniform(-4, math.log10(0.005))
                ns = int(rng.integers(40000, 80000))
                nl = ns + int(rng.integers(0, 5000))
            c = 1.0 - a - b
        else:  # edge of the domain
            if rng.random() < 0.5:
                s = rng.uniform(P.SADDLE_MIN_COUNT, 2 * P.SADDLE_MIN_COUNT) / ns
                f = rng.uniform(0.05, 0.95)
                a, b, c = s * f, s * (1 - f), 1.0 - s
            else:
                c = rng.uniform(P.SADDLE_MIN_CORRECT, 2 * P.SADDLE_MIN_CORRECT) / ns
                f = rng.uniform(0.2, 0.8)
                a, b = (1 - c) * f, (1 - c) * (1 - f)
        if ns * (a + b) >= P.SADDLE_MIN_COUNT and ns * c >= P.SADDLE_MIN_CORRECT:
            return ns, nl, float(a), float(b), float(c)


def accuracy(quick: bool) -> None:
    """The accuracy table: approximate vs exact, max relative error per regime."""
    import csv

    rng = np.random.default_rng(36)
    per = 6 if quick else 24
    rows = []

    def add(regime, method, errs, logs, bound, note):
        errs, logs = np.asarray(errs), np.asarray(logs)
        rows.append({"regime": regime, "method": method, "p_values": int(errs.size),
                     "min_log10_p": round(float(logs.min()) / math.log(10), 1),
                     "max_rel_error": float(errs.max()), "median_rel_error": float(np.median(errs)),
                     "stated_bound": bound, "note": note})

    for regime, note in (("moderate", "every cell probability >= 0.005"),
                         ("small", "a cell probability in (1e-5, 0.005); n_s(p_FN+p_FP) >= 200"),
                         ("edge", "n_s(p_FN+p_FP) in [200, 400) or n_s(p_TP+p_TN) in [10, 20)")):
        errs, logs = [], []
        for _ in range(per):
            ns, nl, a, b, c = _saddle_case(rng, regime)
            ms = _ms(ns, nl, a, b)
            ex = P.log_tail_exact(P.log_diff_pmf(ns, (a, b, c)), P.log_diff_pmf(nl, (a, b, c)), ns, nl, ms)
            k = ms.size
            sa = P.log_tail_saddle(ms.astype(float), np.full(k, ns), np.full(k, nl), np.full(k, a),
                                   np.full(k, b), np.full(k, c))
            errs += np.abs(np.expm1(sa - ex)).tolist()
            logs += ex.tolist()
        add(f"saddlepoint, {regime} cells", "saddlepoint", errs, logs, P.SADDLE_REL_ERROR, note)

    errs, logs = [], []
    for _ in range(per // 2):
        ns = int(rng.integers(50, 800))
        s = rng.uniform(1.0, min(P.SADDLE_MIN_COUNT, 0.5 * ns)) / ns  # small group: no saddlepoint
        nl = int(rng.integers(max(P.SADDLE_MIN_N, int(2 * P.SADDLE_MIN_COUNT / s)), 60000))
        f = rng.uniform(0.1, 0.9)
        a, b, c = s * f, s * (1 - f), 1.0 - s
        ms = _ms(ns, nl, a, b)
        lp_s, lp_l = P.log_diff_pmf(ns, (a, b, c)), P.log_diff_pmf(nl, (a, b, c))
        ex = P.log_tail_exact(lp_s, lp_l, ns, nl, ms)
        hy = P._log_tail_hybrid(lp_s, -ns, ms, ns, nl, a, b, c)
        errs += np.abs(np.expm1(hy - ex)).tolist()
        logs += ex.tolist()
    add("hybrid: exact small group x saddlepoint large group", "saddlepoint", errs, logs,
        P.SADDLE_REL_ERROR, "n_s < 2000 or n_s(p_FN+p_FP) < 200 <= n_l(p_FN+p_FP)")

    errs, logs, bounds = [], [], []
    sizes = [(20000, 20000), (20001, 55000), (150000, 150001)] if quick else         [(20000, 20000), (20001, 55000), (150000, 150001), (400000, 1_000_003), (1_000_000, 1_000_000)]
    for ns, nl in sizes:
        g = math.gcd(ns, nl)
        for frac in (0.01, 0.2, 0.6, 1.0, 1.4, 1.8, 1.99, 1.9999):
            m = int(frac * ns * nl) // g * g
            ex = P._uniform_log_tail_sum(m, ns, nl)
            br, bd = P._uniform_log_tail_bracket(m, ns, nl)
            errs.append(abs(math.expm1(br - ex)))
            logs.append(ex)
            bounds.append(bd)
    add("uniform null, block bracket", "bracketed", errs, logs, float(max(bounds)),
        "bound computed per p-value (rigorous); max shown")

    errs, logs = [], []
    for ns, nl in [(40, 40), (41, 97), (300, 7), (1000, 1001), (2500, 6000)]:
        g = math.gcd(ns, nl)
        ms = np.unique(np.linspace(g, 2 * ns * nl, 25).astype(np.int64) // g * g)
        ms = ms[ms > 0]
        ref = P.log_tail_exact(P.log_diff_pmf(ns, None), P.log_diff_pmf(nl, None), ns, nl, ms)
        got = np.array([P._uniform_log_tail_sum(int(m), min(ns, nl), max(ns, nl)) for m in ms])
        errs += np.abs(np.expm1(got - ref)).tolist()
        logs += ref.tolist()
    add("uniform null, closed-form sum (exact) vs classic exact", "exact", errs, logs, 0.0,
        "two exact methods: float rounding only")

    # huge groups (counts only): against the large-n limits; these "errors" include the limits'
    # own O(1/sqrt(n)) (normal) and O(1/n) (density) departures from the lattice
    from scipy import integrate
    from scipy.stats import norm

    def limit_p(cc):
        def cdf(y):
            return 0.0 if y <= -1 else 1.0 if y >= 1 else (0.5 * (1 + y) ** 3 if y <= 0 else 1 - 0.5 * (1 - y) ** 3)
        v, _ = integrate.quad(lambda x: 1.5 * (1 - abs(x)) ** 2 * cdf(x - cc), -1, 1,
                              points=[0, cc - 1, cc], limit=200, epsabs=0, epsrel=1e-12)
        return 2 * v

    timings = {}
    for n in (20_000_000, 2**31 - 1):
        a, b = 0.1, 0.12
        V = (a + b) - (b - a) ** 2
        sd = math.sqrt(n * (n - 1) * (2 * n - 1) * V)
        z = np.array([0.5, 1.0, 2.0, 3.0])
        t0 = time.perf_counter()
        r = P._ofi_pvalue_result(z * sd / (n * (n - 1.0)), n, n - 1, null=[0.4, a, b, 0.38], method="auto")
        timings[f"pooled_{n}"] = (time.perf_counter() - t0) / z.size
        add(f"pooled null, n = {n:,} vs normal limit (z <= 3)", str(r.method[0]),
            np.abs(r.p_value / (2 * norm.sf(z)) - 1), r.log_p_value, P.SADDLE_REL_ERROR,
            "reference: 2Q(z); its own error ~ skewness/sqrt(n)")
        ofi = np.array([0.05, 0.5, 1.0, 1.6])
        t0 = time.perf_counter()
        r = P._ofi_pvalue_result(ofi, n, n - 1, null="uniform", method="auto")
        timings[f"uniform_{n}"] = (time.perf_counter() - t0) / ofi.size
        add(f"uniform null, n = {n:,} vs limit density", str(r.method[0]),
            np.abs(r.p_value / np.array([limit_p(c) for c in ofi]) - 1), r.log_p_value,
            float(r.error_bound.max()), "reference: (3/2)(1-|x|)^2 convolved (scipy quad); O(1/n)")

    out = ROOT / "experiments" / "results"
    with open(out / "bench_pvalue_accuracy.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["| regime | method | p-values | smallest p (log10) | max relative error | median | stated bound | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['regime']} | {r['method']} | {r['p_values']} | {r['min_log10_p']} | "
                     f"{r['max_rel_error']:.1e} | {r['median_rel_error']:.1e} | {r['stated_bound']:.1e} | {r['note']} |")
    (out / "bench_pvalue_accuracy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print()
    keys = ["saddle_moderate", "saddle_small_cells", "saddle_edge", "hybrid", "uniform_bracket",
            "uniform_closed_form_vs_exact", "pooled_2e7_vs_normal", "uniform_2e7_vs_limit",
            "pooled_2p31_vs_normal", "uniform_2p31_vs_limit"]
    for k, v in timings.items():
        print(f"seconds_per_pvalue[{k}]: {v:.3f}")
    for key, r in zip(keys, rows):
        print(f"max_rel_error[{key}]: {r['max_rel_error']:.2e}")
        print(f"min_log10_p[{key}]: {r['min_log10_p']}")
    print(f"saddlepoint_bound: {P.SADDLE_REL_ERROR}")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only (< 1 min)")
    ap.add_argument("--accuracy", action="store_true", help="the accuracy table (issue #36)")
    args = ap.parse_args(argv)
    if args.accuracy:
        accuracy(args.quick)
        return
    n = 1500 if args.quick else 6000
    ci, cj = [n // 2, n // 8, n // 8, n // 4], [n // 2, n // 5, n // 20, n // 4]
    ref, t_peer = timed(lambda: peer_pvalue(ci, cj))
    r, t_cold = timed(lambda: D.ofi_pvalue_cms(ci, cj, null="pooled", method="exact"))
    _, t_warm = timed(lambda: D.ofi_pvalue_cms(ci, cj, null="pooled", method="exact"))
    print(f"pair n={sum(ci)}: p = {float(r.p_value):.4e} (peer {ref:.4e}); engine cold {t_cold:.3f} s, "
          f"warm {t_warm:.3f} s, peer {t_peer:.3f} s")
    print(f"pvalue_speedup_cold: {t_peer / t_cold:.1f}")
    print(f"pvalue_speedup_warm: {t_peer / t_warm:.1f}")
    _, t_big = timed(lambda: D.ofi_pvalue(0.1, 20_000, 20_000, null=[1, 2, 3, 4]))
    print(f"ofi_pvalue_20000_multinomial_s: {t_big:.3f}")
    _, t_pmf = timed(lambda: D.ofi_pmf(3000 if args.quick else 6000, 3000 if args.quick else 6000))
    print(f"ofi_pmf_equal_n_s: {t_pmf:.3f}")

    rng = np.random.default_rng(0)
    pairs = 200 if args.quick else 2000
    size = 2500 if args.quick else 16000
    p = np.maximum(rng.dirichlet([5, 1, 1, 5], pairs), 0.02)
    p /= p.sum(-1, keepdims=True)
    cm_i = np.stack([rng.multinomial(int(s), q) for s, q in zip(rng.integers(size, size + 500, pairs), p)])
    cm_j = np.stack([rng.multinomial(int(s), q) for s, q in zip(rng.integers(size, size + 500, pairs), p)])
    sad, t_sad = timed(lambda: D.ofi_pvalue_cms(cm_i, cm_j, null="pooled", method="saddlepoint"))
    print(f"batch {pairs} pairs, n ~ {size}: saddlepoint {t_sad:.2f} s ({1e3 * t_sad / pairs:.2f} ms/pair)")
    print(f"saddlepoint_ms_per_pair: {1e3 * t_sad / pairs:.3f}")
    k = min(pairs, 40)
    ex, t_ex = timed(lambda: D.ofi_pvalue_cms(cm_i[:k], cm_j[:k], null="pooled", method="exact"))
    err = np.abs(np.expm1(sad.log_p_value[:k] - ex.log_p_value))
    print(f"exact_ms_per_pair: {1e3 * t_ex / k:.3f}")
    P.log_diff_pmf.cache_clear()  # per-pair calls, cold like the batch: one PMF build per group

    def one_at_a_time():
        return [D.ofi_pvalue_cms(cm_i[q], cm_j[q], null="pooled", method="exact").log_p_value
                for q in range(k)]

    single, t_single = timed(one_at_a_time)
    print(f"exact_per_pair_loop_ms_per_pair: {1e3 * t_single / k:.3f}")
    print(f"exact_batch_speedup_vs_per_pair_loop: {t_single / t_ex:.1f}")
    print(f"exact_batch_max_rel_diff_vs_per_pair: {np.abs(np.expm1(np.array(single) - ex.log_p_value)).max():.1e}")
    print(f"saddlepoint_max_rel_error: {err.max():.2e}")


if __name__ == "__main__":
    main()
