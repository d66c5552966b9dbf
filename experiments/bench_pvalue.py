"""Benchmark: the one OFI p-value engine (ofijax.distributions) vs a direct NumPy peer.

Peer: the O(n²) trinomial PMF of D = FP − FN (``_combinatorics.trinomial_diff_pmf``, what the
engine replaced) combined by the same integer-threshold sum. Both run in the same process, so the
*ratio* is what counts on a shared machine. Cold = first call (includes PMF construction),
warm = a repeated call (cached PMFs). Also times the vectorized batch (``ofi_pvalue_cms`` over P
pairs, exact or saddlepoint), the batched exact path against the same pairs one call at a time
(ratio and largest difference), and reports the saddlepoint's relative error against the exact engine.

Usage: ``python experiments/bench_pvalue.py [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's ofijax, uninstalled too
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only (< 1 min)")
    args = ap.parse_args(argv)
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
