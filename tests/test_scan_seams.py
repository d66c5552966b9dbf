"""The scan engine's seams (#38): the plan's static choices, the lane search's
``init / step / terminate`` interface against the one-program search, and the split search of a
table whose steps sum by one-hot matmul (it crashed before: the turns read only the stacked
statistics)."""

from __future__ import annotations

import ast
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from ofijax import scan
from ofijax.scan import _engine as E
from ofijax.scan import _lanes, _plan, _programs, _sums
from ofijax.scan._basis import features, make_basis

SCAN = pathlib.Path(scan.__file__).parent
ENGINE_MODULES = ("_engine", "_plan", "_sums", "_step", "_lanes", "_programs")


@pytest.mark.parametrize("name", ENGINE_MODULES)
def test_engine_modules_are_short_and_say_what_they_own(name):
    """Each engine module is at most 700 lines and opens with a docstring of a paragraph."""
    text = (SCAN / f"{name}.py").read_text()
    assert len(text.splitlines()) <= 700
    doc = ast.get_docstring(ast.parse(text))
    assert doc and len(doc.split()) >= 25


def test_plan_choices_follow_the_named_constants(monkeypatch):
    """The plan's choices switch exactly at the named thresholds (and follow the module
    switches the tests use)."""
    small, grp, width = _plan.SMALL_CELLS, _plan.GROUP_MIN_CELLS, _plan.GROUP_WIDTH
    assert _plan.one_solver(small) and not _plan.one_solver(small + 1)
    assert not _plan.one_solver(16, throughput=True)
    assert _plan.group_width(grp - 1, 11) == 11 and _plan.group_width(grp, 11) == width
    assert _plan.group_width(grp, width) == width  # never wider than the lanes
    work = _plan.SEGMENT_MIN_WORK
    assert _plan.aggregation(work // 8, 8) == "segment"
    assert _plan.aggregation(work // 8 - 1, 8) == "onehot"
    assert _plan.fast_compile(small, _plan.FAST_REPLICATES)
    assert not _plan.fast_compile(small, _plan.FAST_REPLICATES + 1)
    assert _plan.default_max_steps(7) == _plan.STEPS_PER_ATTRIBUTE * 7 + _plan.STEPS_BASE == 190
    problem = E.make_problem(np.array([[0, 1], [1, 2], [2, 0]]))
    assert _plan.make_plan(problem, 11) == _plan.Plan("onehot", True, 11)
    assert _plan.make_plan(problem, 11, solver=False, width=2) == _plan.Plan("onehot", False, 2)
    monkeypatch.setattr(_plan, "AGGREGATE", "segment")
    assert _plan.make_plan(problem, 3).aggregation == "segment"
    # buckets: 2^k·{1, 1.25, 1.5, 1.75}, at least MIN_BUCKET, never below the count
    for c in (1, 16, 17, 100, 4096, 4097, 70_000):
        b = _plan.cell_bucket(c)
        assert c <= b <= max(_plan.MIN_BUCKET, 1.25 * c) and b >= _plan.MIN_BUCKET


def _small_inputs(seed=0, n=300, n_values=(3, 4, 2)):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, v, n) for v in n_values], axis=1)
    p = rng.uniform(0.1, 0.9, n)
    y = (rng.uniform(size=n) < np.where(codes[:, 0] == 1, np.minimum(1.7 * p, 1), p)).astype(float)
    problem = E.make_problem(codes, np.array(n_values))
    basis = make_basis("chebyshev", direction="positive")
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis)
    Y = E.outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
    return E.pad_cells(problem, Phi, Y, E.cell_bucket(problem.num_cells)) + (basis,)


def test_init_step_terminate_loop_equals_the_search():
    """Driving the lane search by hand (init, then step until terminate) reaches the state
    ``search`` reaches, bit for bit, lane by lane; ``search`` returns every lane's RawScan
    (fields in RawScan's order, read by name). (scan_arrays takes the best lane:
    tests/test_scan_engine.py.)"""
    with jax.enable_x64(True):
        problem, Phi, Y, basis = _small_inputs()
        restarts, max_steps, penalty = 4, 60, jnp.asarray(0.2)
        keys = jax.random.split(jax.random.key(5), restarts)
        ends = basis.endpoints()
        ref = jax.jit(lambda k: _lanes.search(k, problem, Phi, Y, basis, penalty, max_steps,
                                              True, ends))(keys)
        seeds = _lanes.num_seeds(problem)  # 3 × 4 values: 12 singles + 48 pairs
        assert seeds == 60
        assert isinstance(ref, _plan.RawScan) and ref.score.shape == (restarts + seeds + 1,)
        pairs = jax.vmap(jax.random.split)(_lanes.lane_keys(keys, problem))
        state = _lanes.init(pairs[:, 0], problem, Phi.dtype, max_steps, True, seeds=seeds)
        plan = _plan.make_plan(problem, restarts + seeds + 1)
        prepared = _sums.prepare(problem, Phi, Y)
        step = jax.jit(lambda s: _lanes.step(s, pairs[:, 1], problem, Phi, Y, basis, penalty,
                                             max_steps, True, ends, plan, prepared, False))
        iterations = 0
        while not bool(_lanes.terminate(state)):
            state = step(state)
            iterations += 1
        got = _lanes.lane_results(state)
        assert iterations == int(np.max(np.asarray(got.steps))) > 1
        for field in _plan.RawScan._fields:
            np.testing.assert_array_equal(np.asarray(getattr(got, field)),
                                          np.asarray(getattr(ref, field)), err_msg=field)


def _one_hot_table():
    """5,000 rows × 6 attributes × 6 values: ≥ GROUP_MIN_CELLS padded cells (grouped lanes,
    split over the cores) but C·V below SEGMENT_MIN_WORK (one-hot sums)."""
    rng = np.random.default_rng(2)
    n, m, v = 5000, 6, 6
    df = pd.DataFrame({f"a{j}": rng.integers(0, v, n).astype(str) for j in range(m)})
    p = rng.uniform(0.05, 0.95, n)
    bump = (df["a0"] == "1") & df["a1"].isin(["0", "2"])
    y = (rng.uniform(size=n) < np.where(bump, np.minimum(1.6 * p, 1), p)).astype(int)
    return df, y, p


def test_split_search_of_a_one_hot_table_equals_one_thread(monkeypatch):
    """bias_scan on a grouped table summed by one-hot matmul gives the same result on two
    threads as on one, bit for bit (it raised a TypeError from the turns before); search_parts
    given V_max keeps such a table on one program."""
    df, y, p = _one_hot_table()
    c = E.cell_bucket(E.make_problem(np.stack([df[k].astype(int) for k in df], 1)).num_cells)
    assert c >= _plan.GROUP_MIN_CELLS and _plan.aggregation(c, 6) == "onehot"
    monkeypatch.setenv("OFIJAX_SEARCH_THREADS", "2")
    assert _programs.search_parts(c, 10, True, 170, v_max=6) == 1
    assert _programs.search_parts(c, 10, True, 170, v_max=64) == 2  # segment sums: split
    results = []
    for threads in ("1", "2"):
        monkeypatch.setenv("OFIJAX_SEARCH_THREADS", threads)
        results.append(scan.bias_scan(df, y, p, key=3, search="coordinate_ascent", penalty=0.5,
                                      num_restarts=3))
    one, two = results
    assert two.subset == one.subset and two.size == one.size
    assert two.score.hex() == one.score.hex() and two.q.hex() == one.q.hex()
    assert two.converged == one.converged
    np.testing.assert_array_equal(two.mask, one.mask)
    assert one.score > 0 and one.subset
