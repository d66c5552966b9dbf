"""Worker of tests/test_stats.py::test_replicates_under_jax_distributed (one of two processes)."""

import json
import sys


def main(rank: int, port: str) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                               process_id=rank)
    import numpy as np

    from ofijax.scan import scan_cells

    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    r = scan_cells(codes, [2, 2], np.array([50, 60, 70, 80]), np.array([30, 10, 12, 15]),
                   key=jax.random.key(5), num_replicates=7)
    print(json.dumps({"rank": jax.process_index(), "count": jax.process_count(),
                      "null": r.null_scores.tolist(), "p": r.p_value}), flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
