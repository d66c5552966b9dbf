"""Worker of the jax.distributed tests in tests/test_stats.py (one of two processes).

Runs, under ``jax.distributed`` with two local CPU processes: the cell scan's randomization
replicates, ``monte_carlo`` (one block: the second process's share is padding) and the streaming
engine with several rounds of blocks (5 blocks over 2 processes, the last round half empty).
``reference()`` computes the same in one process, for the test to compare.
"""

import json
import sys


def _uniform_chunk(key, cid):
    import jax

    return jax.random.uniform(jax.random.fold_in(key, cid), (256,)) * 2.0 - 1.0


def run() -> dict:
    import jax
    import numpy as np

    import ofijax
    from ofijax.distributions import _montecarlo, monte_carlo, uniform_sampler
    from ofijax.distributions._montecarlo import stream
    from ofijax.scan import scan_cells

    gathers = []
    real = _montecarlo._allgather
    _montecarlo._allgather = lambda st: gathers.append(1) or real(st)  # count the rounds
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    r = scan_cells(codes, [2, 2], np.array([50, 60, 70, 80]), np.array([30, 10, 12, 15]),
                   key=jax.random.key(5), num_samples=7)
    out = {"null": r.null_scores.tolist(), "p": r.p_value}
    n0 = len(gathers)
    mc = monte_carlo(jax.random.key(3), ofijax.marginal_benefit, uniform_sampler(12), 5000,
                     chunk_size=1024, bins=20)
    n1 = len(gathers)
    st = stream(jax.random.key(4), _uniform_chunk, lambda x: x, 2200, chunk_size=256, bins=16,
                range=(-1.0, 1.0), chunks_per_block=2)
    _montecarlo._allgather = real
    rounds = {"mc": n1 - n0, "stream": len(gathers) - n1}
    for name, s in (("mc", mc), ("stream", st)):
        out[name] = {"count": s.count, "undefined": s.undefined, "mean": s.mean, "var": s.var,
                     "min": s.min, "max": s.max, "hist": s.hist.tolist(), "below": s.below,
                     "above": s.above, "rounds": rounds[name]}
    return out


def main(rank: int, port: str) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                               process_id=rank)
    out = run()
    out.update(rank=jax.process_index(), count=jax.process_count())
    print(json.dumps(out), flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
