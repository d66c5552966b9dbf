"""Benchmark: ofijax.distributions against the best vectorised NumPy for the same work.

Work: draw matrices uniformly from M(n) (n = 100), compute the marginal benefit B = (FP − FN)/n,
and stream count / mean / variance / min / max / a 100-bin histogram. ofijax is timed through the
public API, ``monte_carlo(key, marginal_benefit, uniform_sampler(100), num)`` (lookup-table
decoding for n ≤ 255). NumPy uses ``default_rng().integers`` (Lemire's exact bounded integers)
and, in chunks, the fastest of three decoders measured on a small run: the same packed lookup
table (one uint32 per matrix, FP and FN taken out by shifts), the closed-form cube-root
unranking and a searchsorted unranking; the chunk size (2^16 or 2^20) is picked the same way.
Every timing is the minimum over repeats (``--repeats``). Also times
``reduce_all(1000, marginal_benefit)`` (all 1.68e8 matrices) and measures the peak resident
memory of ``monte_carlo`` at two very different ``num_samples`` in fresh subprocesses.

Run:  python experiments/bench_distributions.py [--quick]
Writes experiments/results/bench_distributions.csv and ends with ``name: value`` lines.

``--over-n`` (#41) instead times, at n = 10 … 10^6, drawing two groups and computing OFI: ofijax
jitted (``sample_uniform`` / ``sample_multinomial`` + ``ofi`` in one ``jax.jit``, and the traced-n
uniform sampler of ``distributions.sweep``) against NumPy (uniform: stars and bars, three distinct
positions among n + 3 by ``Generator.integers`` with rows of repeated positions redrawn, sorted;
multinomial: ``Generator.multinomial``), interleaved, minimum of ``--repeats``; ofijax's multinomial
is ``sample_multinomial``: at these sizes (2^16 rows and more) O(1) table lookups above n = 32
(``distributions._bintables``, two binomial stages, 7 words per matrix) and inverse-CDF tables at
n ≤ 32; "one call" draws both
groups (same n and probabilities) as ``sample_multinomial(key, n, p, (2, pairs))``; writes
experiments/results/bench_distributions_n.csv and a table, then ``name: value`` lines.
Dirichlet-multinomial (alpha = ALPHA, integer: stars and bars above n = 255; and ALPHA_FRAC,
non-integer: Dirichlet probabilities, then binomial stages) is timed against ``rng.dirichlet`` +
``rng.multinomial`` (vectorized), subsample (any n, from a group of 10 n rows) against the fastest on a small
trial of ``Generator.multivariate_hypergeometric`` ("marginals" / "count") and the chain of
``Generator.hypergeometric``; cold first calls (trace + compile + run, fresh processes) at
n = 1e3 and 1e5 follow the table. ``--pair-forms`` times two multinomial groups in one program
five ways (two calls, two calls in order, one call of 2x rows, lax.map over two keys, one group).
The machine is shared: absolute times are noisy; compare the ratio measured in the same run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OFIJAX_PROGRESS", "0")
# One XLA host device per core: monte_carlo / reduce_all shard their chunks over all devices.
if "--single-device" not in sys.argv and "xla_force_host_platform_device_count" not in os.environ.get(
    "XLA_FLAGS", ""
):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + f" --xla_force_host_platform_device_count={os.cpu_count() or 1}"
    ).strip()

import jax  # noqa: E402

import ofijax  # noqa: E402
from ofijax import distributions as D  # noqa: E402
from ofijax.distributions._sampling import packed_table_np  # noqa: E402

RESULTS = ROOT / "experiments" / "results"


# ----------------------------------------------------------------------------- NumPy peer


def numpy_unrank_cbrt(s: np.ndarray, n: int, table: np.ndarray) -> tuple[np.ndarray, ...]:
    m = np.clip(np.floor(np.cbrt(6.0 * s + 1.0)).astype(np.int64) - 2, 0, n)
    m += (m < n) & (table[np.minimum(m + 1, n + 1)] <= s)
    m += (m < n) & (table[np.minimum(m + 1, n + 1)] <= s)
    m -= (m > 0) & (table[m] > s)
    s2 = s - table[m]
    k = np.floor((np.sqrt(8.0 * s2 + 1.0) - 1.0) * 0.5).astype(np.int64)
    k += (k * (k + 1)) // 2 <= s2
    k += (k * (k + 1)) // 2 <= s2
    k -= (k > 1) & (((k - 1) * k) // 2 > s2)
    fn = s2 - ((k - 1) * k) // 2
    fp = m + 1 - k
    return fp, fn


def numpy_unrank_search(s: np.ndarray, n: int, table: np.ndarray) -> tuple[np.ndarray, ...]:
    m = np.searchsorted(table, s, side="right") - 1  # table[m] = N(m − 1) ≤ s < N(m)
    s2 = s - table[m]
    tri = np.arange(n + 2, dtype=np.int64)
    tri = tri * (tri + 1) // 2
    k = np.searchsorted(tri, s2, side="right")  # T(k − 1) ≤ s2 < T(k)
    fn = s2 - tri[k - 1]
    fp = m + 1 - k
    return fp, fn


def numpy_unrank_lut(s: np.ndarray, n: int, table: np.ndarray) -> tuple[np.ndarray, ...]:
    w = table[s]  # packed TP | FN << 8 | FP << 16 | TN << 24 (ofijax.distributions._sampling.packed_table_np)
    return (w >> 16) & 0xFF, (w >> 8) & 0xFF


def numpy_run(num: int, n: int, seed: int, unrank, chunk: int = 1 << 20, bins: int = 100):
    rng = np.random.default_rng(seed)
    N = (n + 1) * (n + 2) * (n + 3) // 6
    if unrank is numpy_unrank_lut:
        table = packed_table_np(n).astype(np.int32)  # int32 so that the shifts stay signed
    else:
        table = np.array([(j) * (j + 1) * (j + 2) // 6 for j in range(n + 2)], dtype=np.int64)
    count, mean, m2 = 0, 0.0, 0.0
    lo, hi = np.inf, -np.inf
    hist = np.zeros(bins, dtype=np.int64)
    done = 0
    while done < num:
        k = min(chunk, num - done)
        s = rng.integers(0, N, size=k, dtype=np.int64)
        fp, fn = unrank(s, n, table)
        b = (fp - fn) / n
        cm, cv = b.mean(), ((b - b.mean()) ** 2).sum()
        delta = cm - mean
        tot = count + k
        mean += delta * k / tot
        m2 += cv + delta * delta * count * k / tot
        count = tot
        lo, hi = min(lo, b.min()), max(hi, b.max())
        idx = np.minimum(((b + 1.0) * (bins / 2.0)).astype(np.int64), bins - 1)
        hist += np.bincount(idx, minlength=bins)
        done += k
    return count, mean, m2 / count, lo, hi, hist


# --------------------------------------------------------------------------- helpers


CPU: dict[str, float] = {}


def timed(fn, *a, **k):
    """Wall time of fn(*a, **k); the process CPU time of the call is kept in CPU["last"]."""
    c = time.process_time()
    t = time.perf_counter()
    out = fn(*a, **k)
    CPU["last"] = time.process_time() - c
    return out, time.perf_counter() - t


_MEM_SCRIPT = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
os.environ["OFIJAX_PROGRESS"] = "0"
import jax, ofijax
from ofijax import distributions as D
num = int(sys.argv[1])
t = time.perf_counter()
s = D.monte_carlo(jax.random.key(0), ofijax.marginal_benefit, D.uniform_sampler(100), num)
dt = time.perf_counter() - t
print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "count": s.count, "seconds": dt}))
"""


def peak_memory(num: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", OFIJAX_PROGRESS="0")
    res = subprocess.run([sys.executable, "-c", _MEM_SCRIPT, str(num), str(ROOT)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------- sampler speed over n (#41)


def _np_uniform(rng: np.random.Generator, n: int, num: int) -> np.ndarray:
    """Stars and bars: three distinct sorted positions among n + 3 (exact rejection)."""
    pos = rng.integers(0, n + 3, size=(num, 3))
    while True:
        bad = (pos[:, 0] == pos[:, 1]) | (pos[:, 0] == pos[:, 2]) | (pos[:, 1] == pos[:, 2])
        k = int(bad.sum())
        if not k:
            break
        pos[bad] = rng.integers(0, n + 3, size=(k, 3))
    pos.sort(axis=1)
    return np.stack([pos[:, 0], pos[:, 1] - pos[:, 0] - 1, pos[:, 2] - pos[:, 1] - 1,
                     n + 2 - pos[:, 2]], axis=-1)


def _np_ofi(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return ((a[:, 2] - a[:, 1]) - (b[:, 2] - b[:, 1])) / n


PROBS = (0.4, 0.1, 0.2, 0.3)
ALPHA = (4.0, 1.0, 2.0, 3.0)
#: non-integer concentrations (integer ones take stars and bars above n = 255; these do not)
ALPHA_FRAC = (4.5, 1.5, 2.5, 3.5)
#: subsample's largest n in the table over n (it draws any n; the group is 10 n rows)
SUBSAMPLE_MAX_N = 10**6


def _colors(n: int) -> np.ndarray:
    """The real group subsample draws from: 10 n rows split as PROBS."""
    return np.round(10 * n * np.asarray(PROBS)).astype(np.int64)


def _np_dirichlet(rng: np.random.Generator, n: int, num: int, alpha=ALPHA) -> np.ndarray:
    """Dirichlet-multinomial: p ~ Dirichlet(alpha) per row, then Multinomial(n, p) (vectorized)."""
    return rng.multinomial(n, rng.dirichlet(alpha, num))


def _np_hyper_chain(rng: np.random.Generator, colors: np.ndarray, n: int, num: int) -> np.ndarray:
    """Multivariate hypergeometric as TP, then FN | TP, then FP | TP, FN (Generator.hypergeometric)."""
    total = int(colors.sum())
    tp = rng.hypergeometric(colors[0], total - colors[0], n, size=num)
    fn = rng.hypergeometric(colors[1], colors[2] + colors[3], n - tp)
    fp = rng.hypergeometric(colors[2], colors[3], n - tp - fn)
    return np.stack([tp, fn, fp, n - tp - fn - fp], axis=-1)


def _np_subsample_fastest(rng: np.random.Generator, n: int):
    """The fastest NumPy multivariate hypergeometric for this n (best of three 2^14-row trials):
    Generator.multivariate_hypergeometric ("marginals" or "count") or the hypergeometric chain."""
    colors = _colors(n)
    ways = {
        "chain": lambda num: _np_hyper_chain(rng, colors, n, num),
        "marginals": lambda num: rng.multivariate_hypergeometric(colors, n, size=num,
                                                                 method="marginals"),
    }
    if colors.sum() <= 10_000:  # "count" allocates the whole population per row (40x slower
        # than "marginals" at n = 1000 on 2^14 rows)
        ways["count"] = lambda num: rng.multivariate_hypergeometric(colors, n, size=num,
                                                                    method="count")
    trial = {}
    for _ in range(3):
        for name, f in ways.items():
            t = time.perf_counter()
            f(1 << 14)
            trial[name] = min(trial.get(name, float("inf")), time.perf_counter() - t)
    best = min(trial, key=trial.get)
    return best, ways[best]


def pair_ofi(kind: str, n: int, num: int):
    """``f(key)``: OFI of two groups of ``num`` matrices drawn by two calls of the ``kind``
    sampler ("uniform", "multinomial", "dirichlet" (ALPHA), "dirichlet_frac" (ALPHA_FRAC) or
    "subsample"), a key each (not jitted)."""
    if kind == "uniform":
        def draw(k):
            return D.sample_uniform(k, n, (num,))
    elif kind == "multinomial":
        def draw(k):
            return D.sample_multinomial(k, n, PROBS, (num,))
    elif kind in ("dirichlet", "dirichlet_frac"):
        alpha = ALPHA if kind == "dirichlet" else ALPHA_FRAC

        def draw(k):
            return D.sample_dirichlet_multinomial(k, n, alpha, (num,))
    else:
        colors = tuple(int(c) for c in _colors(n))

        def draw(k):
            return D.subsample(k, colors, n, (num,))

    def f(key):
        k0, k1 = jax.random.split(key)
        return ofijax.ofi(draw(k0), draw(k1))

    return f


def bench_over_n(num: int, repeats: int, ns) -> list[dict]:
    import jax.numpy as jnp

    from ofijax.distributions import _sampling as S

    rng = np.random.default_rng(0)

    def jx(kind, n):
        if kind == "uniform_traced":
            def f(key, nn):
                k0, k1 = jax.random.split(key)
                return ofijax.ofi(S.uniform_cms_traced(k0, nn, num), S.uniform_cms_traced(k1, nn, num))
            g = jax.jit(f)
            return lambda key: g(key, jnp.int32(n))
        elif kind == "multinomial_one_call":  # both groups (same n and p) in one call
            def f(key):
                cms = D.sample_multinomial(key, n, PROBS, (2, num))
                return ofijax.ofi(cms[0], cms[1])
        else:
            f = pair_ofi(kind, n, num)
        return jax.jit(f)

    rows = []
    for n in ns:
        fns = {
            "ofijax_uniform": jx("uniform", n),
            "ofijax_uniform_traced": jx("uniform_traced", n),
            "numpy_uniform": lambda key, n=n: _np_ofi(_np_uniform(rng, n, num), _np_uniform(rng, n, num), n),
            "ofijax_multinomial": jx("multinomial", n),
            "ofijax_multinomial_one_call": jx("multinomial_one_call", n),
            "numpy_multinomial": lambda key, n=n: _np_ofi(rng.multinomial(n, PROBS, size=num),
                                                          rng.multinomial(n, PROBS, size=num), n),
            "ofijax_dirichlet": jx("dirichlet", n),
            "numpy_dirichlet": lambda key, n=n: _np_ofi(_np_dirichlet(rng, n, num),
                                                        _np_dirichlet(rng, n, num), n),
            "ofijax_dirichlet_frac": jx("dirichlet_frac", n),
            "numpy_dirichlet_frac": lambda key, n=n: _np_ofi(_np_dirichlet(rng, n, num, ALPHA_FRAC),
                                                             _np_dirichlet(rng, n, num, ALPHA_FRAC), n),
        }
        if n <= SUBSAMPLE_MAX_N:
            way, hyper = _np_subsample_fastest(rng, n)
            print(f"n = {n:>8}: numpy subsample by {way}", flush=True)
            fns["ofijax_subsample"] = jx("subsample", n)
            fns["numpy_subsample"] = lambda key, n=n, hyper=hyper: _np_ofi(hyper(num), hyper(num), n)
        for f in fns.values():  # compile / warm up
            jax.block_until_ready(f(jax.random.key(1)))
        best = {k: float("inf") for k in fns}
        for r in range(repeats):  # interleaved
            for name, f in fns.items():
                t = time.perf_counter()
                jax.block_until_ready(f(jax.random.key(r + 2)))
                best[name] = min(best[name], time.perf_counter() - t)
        for name, sec in best.items():
            rows.append({"n": n, "method": name, "pairs": num, "seconds": sec})
        print(f"n = {n:>8}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in best.items()), flush=True)
    return rows


LOAD_AT_START = os.getloadavg()[0]
#: n of the cold runs (first call in a fresh process: trace + compile + run)
COLD_NS = (1000, 100_000)
COLD_KINDS = ("uniform", "multinomial", "dirichlet", "dirichlet_frac", "subsample")


def cold_one(kind: str, n: int, num: int) -> None:
    """In this (fresh) process: the first call of ofijax's jitted pair + OFI (trace, compile and
    run) and then the second (warm); prints one JSON line."""
    rng = np.random.default_rng(0)
    g = jax.jit(pair_ofi(kind, n, num))
    t = time.perf_counter()
    jax.block_until_ready(g(jax.random.key(0)))
    cold = time.perf_counter() - t
    t = time.perf_counter()
    jax.block_until_ready(g(jax.random.key(1)))
    warm = time.perf_counter() - t
    peer = {"uniform": lambda: _np_uniform(rng, n, num),
            "multinomial": lambda: rng.multinomial(n, PROBS, size=num),
            "dirichlet": lambda: _np_dirichlet(rng, n, num),
            "dirichlet_frac": lambda: _np_dirichlet(rng, n, num, ALPHA_FRAC)}.get(
        kind, lambda: _np_hyper_chain(rng, _colors(n), n, num))
    t = time.perf_counter()
    _np_ofi(peer(), peer(), n)
    np_first = time.perf_counter() - t
    print(json.dumps({"kind": kind, "n": n, "cold": cold, "warm": warm, "numpy_first": np_first}))


def bench_cold(num: int) -> list[dict]:
    rows = []
    for n in COLD_NS:
        for kind in COLD_KINDS:
            if kind == "subsample" and n > SUBSAMPLE_MAX_N:
                continue
            res = subprocess.run([sys.executable, __file__, "--cold-one", kind, str(n), str(num)],
                                 capture_output=True, text=True, check=True,
                                 env=dict(os.environ, OFIJAX_PROGRESS="0"))
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(f"cold n = {n:>7} {kind:>12}: first call {r['cold']:.2f} s, second {r['warm']:.3f} s,"
                  f" NumPy (first call) {r['numpy_first']:.3f} s", flush=True)
            for what in ("cold", "warm", "numpy_first"):
                rows.append({"n": n, "method": f"{what}_{kind}", "pairs": num, "seconds": r[what]})
    return rows


def main_pair_forms(args) -> None:
    """Two multinomial groups in one jitted program, five ways (n = 1e4, 2^20 rows each),
    interleaved with NumPy's two Generator.multinomial calls: is a pair dearer than two groups?"""
    import jax.numpy as jnp
    from jax import lax

    from ofijax.distributions import _samplers as S

    n, num = 10_000, 1 << (16 if args.quick else 20)
    p = np.asarray(PROBS)

    def chain(key, size):
        with jax.enable_x64(True):
            return S.multinomial_cms(key, jnp.int32(n), jnp.asarray(p, jnp.float64), size)

    def two(key):
        k0, k1 = jax.random.split(key)
        return ofijax.ofi(chain(k0, num), chain(k1, num))

    def two_in_order(key):  # the second group's key waits for the first group's draws
        k0, k1 = jax.random.split(key)
        a = chain(k0, num)
        a, k1 = lax.optimization_barrier((a, k1))
        return ofijax.ofi(a, chain(k1, num))

    def one_call(key):
        c = chain(key, 2 * num).reshape(2, num, 4)
        return ofijax.ofi(c[0], c[1])

    def mapped(key):  # one loop over the two groups' keys
        c = lax.map(lambda k: chain(k, num), jax.random.split(key))
        return ofijax.ofi(c[0], c[1])

    rng = np.random.default_rng(0)
    fns = {"one_group": jax.jit(lambda key: chain(key, num)), "two_calls": jax.jit(two),
           "two_calls_in_order": jax.jit(two_in_order), "one_call_2x": jax.jit(one_call),
           "lax_map_two": jax.jit(mapped),
           "numpy_two": lambda key: (rng.multinomial(n, p, size=num), rng.multinomial(n, p, size=num))}
    for f in fns.values():
        jax.block_until_ready(f(jax.random.key(0)))
    best = {k: float("inf") for k in fns}
    for r in range(args.repeats):
        for name, f in fns.items():
            t = time.perf_counter()
            jax.block_until_ready(f(jax.random.key(r + 1)))
            best[name] = min(best[name], time.perf_counter() - t)
    print(f"load_average_at_start_1min: {LOAD_AT_START:.2f}")
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")
    for name, sec in best.items():
        print(f"{name}_ms: {sec * 1e3:.1f}")


def main_over_n(args) -> None:
    num = 1 << (16 if args.quick else 20)
    ns = (10, 100, 1000, 10_000, 100_000, 1_000_000)
    rows = bench_over_n(num, args.repeats, ns)
    rows += bench_cold(num)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "bench_distributions_n.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["n", "method", "pairs", "seconds"])
        w.writeheader()
        w.writerows(rows)
    sec = {(r["n"], r["method"]): r["seconds"] for r in rows}
    print(f"\npairs of groups drawn + OFI, {num:,} pairs, minimum of {args.repeats} interleaved repeats"
          f" (speedup = numpy time / ofijax time)")
    kinds = (("uniform", "numpy_uniform"), ("uniform_traced", "numpy_uniform"),
             ("multinomial", "numpy_multinomial"), ("multinomial_one_call", "numpy_multinomial"),
             ("dirichlet", "numpy_dirichlet"), ("dirichlet_frac", "numpy_dirichlet_frac"),
             ("subsample", "numpy_subsample"))

    def ratio(n, kind, base):
        if (n, base) not in sec:
            return None
        return sec[(n, base)] / sec[(n, "ofijax_" + kind)]

    heads = ("uniform", "uniform traced", "multinomial", "(one call)", "Dirichlet-mult.",
             "DM frac. alpha", "subsample")
    print(f"{'n':>9} " + " ".join(f"{h:>15}" for h in heads))
    for n in ns:
        cells = [ratio(n, k, b) for k, b in kinds]
        print(f"{n:>9} " + " ".join(f"{'n/a':>15}" if c is None else f"{c:>14.2f}x" for c in cells))
    print()
    print(f"jax_devices: {len(jax.devices())}")
    print(f"cpu_count: {os.cpu_count()}")
    print(f"load_average_1min: {os.getloadavg()[0]:.2f}")
    print(f"load_average_at_start_1min: {LOAD_AT_START:.2f}")
    print(f"pairs: {num}")
    for n in ns:
        for kind, base in kinds:
            if ratio(n, kind, base) is not None:
                print(f"speedup_{kind}_n{n}: {ratio(n, kind, base):.2f}")
    for n in COLD_NS:
        for kind in COLD_KINDS:
            if (n, f"cold_{kind}") in sec:
                print(f"cold_s_{kind}_n{n}: {sec[(n, f'cold_{kind}')]:.3f}")
                print(f"warm_s_{kind}_n{n}: {sec[(n, f'warm_{kind}')]:.3f}")
                print(f"numpy_first_s_{kind}_n{n}: {sec[(n, f'numpy_first_{kind}')]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--single-device", action="store_true", help="do not force 1 device per core")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats (the minimum is kept)")
    ap.add_argument("--over-n", action="store_true",
                    help="time drawing two groups + OFI at n = 10 ... 1e6 against NumPy (#41)")
    ap.add_argument("--pair-forms", action="store_true",
                    help="time two multinomial groups in one program five ways (n = 1e4)")
    ap.add_argument("--cold-one", nargs=3, metavar=("KIND", "N", "PAIRS"),
                    help="internal: one cold run in this process (used by --over-n)")
    args = ap.parse_args()
    if args.cold_one:
        return cold_one(args.cold_one[0], int(args.cold_one[1]), int(args.cold_one[2]))
    if args.pair_forms:
        return main_pair_forms(args)
    if args.over_n:
        return main_over_n(args)
    n = 100
    draws = 2_000_000 if args.quick else 20_000_000
    rows = []

    # ofijax (public API): warm up (compile) on one block of the same shape, then time the run
    key = jax.random.key(0)
    sampler = D.uniform_sampler(n)
    _, t_compile = timed(D.monte_carlo, key, ofijax.marginal_benefit, sampler, draws)  # same shapes
    t_jax, cpu_jax = np.inf, np.inf
    for _ in range(args.repeats):
        s, t = timed(D.monte_carlo, jax.random.key(1), ofijax.marginal_benefit, sampler, draws)
        t_jax, cpu_jax = min(t_jax, t), min(cpu_jax, CPU["last"])
    load_jax = os.getloadavg()[0]
    jax_rate = draws / t_jax
    jax_cpu_rate = draws / cpu_jax
    rows.append(("ofijax_monte_carlo", draws, t_jax, jax_rate))

    # NumPy: pick the fastest decoder and chunk size on a small run, then time the full run
    small = min(draws, 2_000_000)
    trials = {}
    for dec in (numpy_unrank_lut, numpy_unrank_cbrt, numpy_unrank_search):
        for ch in (1 << 16, 1 << 20):
            trials[(dec, ch)] = timed(numpy_run, small, n, 0, dec, ch)[1]
    unrank, np_chunk = min(trials, key=trials.get)
    t_np, cpu_np = np.inf, np.inf
    for _ in range(args.repeats):
        ref, t = timed(numpy_run, draws, n, 1, unrank, np_chunk)
        t_np, cpu_np = min(t_np, t), min(cpu_np, CPU["last"])
    load_np = os.getloadavg()[0]
    np_rate = draws / t_np
    np_cpu_rate = draws / cpu_np
    rows.append((f"numpy_{unrank.__name__}_chunk{np_chunk}", draws, t_np, np_rate))
    var_exact = (n + 4) / (10 * n)
    print(f"ofijax  : {jax_rate / 1e6:8.1f} M matrices/s  (mean {s.mean:+.5f}, var {s.var:.5f})")
    print(f"numpy   : {np_rate / 1e6:8.1f} M matrices/s  (mean {ref[1]:+.5f}, var {ref[2]:.5f},"
          f" {unrank.__name__}, chunk {np_chunk})")
    print(f"exact var (n+4)/(10n) = {var_exact:.5f}; first-call compile+run {t_compile:.2f}s")

    # reduce_all over all of M(1000): cold (with compile) and warm
    n_all = 300 if args.quick else 1000
    r, t_cold = timed(D.reduce_all, n_all, ofijax.marginal_benefit)
    t_warm = min(timed(D.reduce_all, n_all, ofijax.marginal_benefit)[1] for _ in range(args.repeats))
    load_all = os.getloadavg()[0]
    rows.append((f"reduce_all_n{n_all}_warm", r.count, t_warm, r.count / t_warm))
    rows.append((f"reduce_all_n{n_all}_cold", r.count, t_cold, r.count / t_cold))
    print(f"reduce_all({n_all}): {r.count:,} matrices, warm {t_warm:.2f}s, cold {t_cold:.2f}s,"
          f" var {r.var:.6f} (exact {(n_all + 4) / (10 * n_all):.6f})")

    # peak memory of monte_carlo at two very different num_samples (fresh processes)
    small_n, big_n = (10**5, 10**7) if args.quick else (10**6, 10**8)
    m_small, m_big = peak_memory(small_n), peak_memory(big_n)
    rows.append(("maxrss_kb_small", small_n, m_small["seconds"], m_small["maxrss_kb"]))
    rows.append(("maxrss_kb_big", big_n, m_big["seconds"], m_big["maxrss_kb"]))
    print(f"monte_carlo peak RSS: {small_n:.0e} draws {m_small['maxrss_kb'] / 1024:.0f} MiB, "
          f"{big_n:.0e} draws {m_big['maxrss_kb'] / 1024:.0f} MiB")

    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "bench_distributions.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "items", "seconds", "rate_or_kb"])
        w.writerows(rows)

    print(f"jax_devices: {len(jax.devices())}")
    print(f"cpu_count: {os.cpu_count()}")
    print(f"load_average_1min_ofijax: {load_jax:.2f}")
    print(f"load_average_1min_numpy: {load_np:.2f}")
    print(f"load_average_1min_reduce_all: {load_all:.2f}")
    print(f"numpy_decoder: {unrank.__name__}")
    print(f"ofijax_matrices_per_s: {jax_rate:.4g}")
    print(f"numpy_matrices_per_s: {np_rate:.4g}")
    print(f"speedup_vs_numpy: {jax_rate / np_rate:.2f}")
    print(f"ofijax_matrices_per_cpu_s: {jax_cpu_rate:.4g}")
    print(f"numpy_matrices_per_cpu_s: {np_cpu_rate:.4g}")
    print(f"speedup_vs_numpy_per_cpu_s: {jax_cpu_rate / np_cpu_rate:.2f}")
    print(f"reduce_all_n{n_all}_warm_s: {t_warm:.3f}")
    print(f"reduce_all_n{n_all}_cold_s: {t_cold:.3f}")
    print(f"mc_peak_rss_mib_{small_n:.0e}: {m_small['maxrss_kb'] / 1024:.1f}")
    print(f"mc_peak_rss_mib_{big_n:.0e}: {m_big['maxrss_kb'] / 1024:.1f}")
    print(f"mc_peak_rss_ratio: {m_big['maxrss_kb'] / m_small['maxrss_kb']:.3f}")


if __name__ == "__main__":
    main()
