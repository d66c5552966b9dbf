"""Exhaustive search: score every subgroup of a small attribute space, keep the global optimum.

Owns the enumeration of subgroups, the chunked scoring program (:func:`exhaustive_arrays`, used by
Bias Scan, FPR-/TPR-Scan and IJDI-Scan's Algorithm 1) and the one ``search="auto"`` rule
(:func:`resolve_search`, :func:`exhaustive_feasible`, :func:`rate_exhaustive_feasible`).

A subgroup picks, for each attribute m, a non-empty subset of its V_m values (the full set means
"unconstrained", penalty 0), so there are ``Π_m (2^{V_m} − 1)`` of them (COMPAS's 5 IJDI
attributes: 3·7·3·3·63 = 11,907). Each one's score needs only the sums of the per-cell features
``Φ_S = Σ_{c∈S} Φ_c`` and outcome counts ``Y_S`` over its cells, then one concave 1-D maximisation
over q (the engine's solver, :func:`~._solve.maximize`):

    score(S) = max_t (Y_S t − Φ_S·φ(t)) − penalty · Σ_{m constrained} |S_m|.

Subgroups are enumerated by a mixed-radix index (attribute 0 most significant; per attribute index
0 is "unconstrained", then the proper subsets by size) and scored in fixed-size chunks inside one
``lax.fori_loop``: cell membership is a gather of the chunk's value masks at each cell's codes, and
``Φ_S`` a ``(chunk, C) @ (C, K)`` product. Work is ``O(G·C·(K + M))`` for G subgroups and C occupied
cells; ties go to the lowest index (fewest constraints first).
"""

from __future__ import annotations

import itertools
import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validation import device_array
from ._basis import Basis
from ._engine import Problem
from ._solve import maximize

__all__ = [
    "Enumeration",
    "EXHAUSTIVE_MAX_SUBGROUPS",
    "EXHAUSTIVE_MAX_WORK",
    "num_subgroups",
    "exhaustive_feasible",
    "rate_exhaustive_feasible",
    "RATE_EXHAUSTIVE_MAX_WORK",
    "make_enumeration",
    "exhaustive_arrays",
]

#: ``search="auto"`` enumerates when there are at most this many subgroups ...
EXHAUSTIVE_MAX_SUBGROUPS = 10**6
#: ... and the work ``G·C·(K + M)`` (multiply-adds) is at most this (a few seconds on one core).
EXHAUSTIVE_MAX_WORK = 4e9
#: Elements of a chunk's ``(chunk, C, M)`` temporaries (~4M: at most 32 MB even as float64, so
#: a chunk's working set stays small next to the table while each chunk is large enough to
#: amortise the loop's per-iteration cost).
CHUNK_ELEMENTS = 1 << 22


class Enumeration(NamedTuple):
    """Static description of every subgroup (arrays are pytree leaves, ``num``/``chunk`` static).

    Attributes:
      tables: ``(M, S_max, V_max)`` bool: value mask of subset index s of attribute m.
      counts: ``(M, S_max)`` float: values listed (penalty count); 0 for index 0 (unconstrained).
      radices: ``(M,)`` int32: ``2^{V_m} − 1``.
    """

    tables: jax.Array
    counts: jax.Array
    radices: jax.Array


def num_subgroups(n_values) -> int:
    """``Π_m (2^{V_m} − 1)`` as a Python int (exact, however large)."""
    out = 1
    for v in np.asarray(n_values).tolist():
        out *= (1 << int(v)) - 1
    return out


def exhaustive_feasible(n_values, num_cells: int, num_features: int) -> bool:
    """Whether ``search="auto"`` enumerates: ≤ 1e6 subgroups and ≤ 4e9 multiply-adds."""
    g = num_subgroups(n_values)
    m = len(np.asarray(n_values))
    return g <= EXHAUSTIVE_MAX_SUBGROUPS and g * num_cells * (num_features + m) <= EXHAUSTIVE_MAX_WORK


#: FPR-/TPR-Scan (``search="auto"``) enumerate when the work ``G·C·(1 + M)`` is at most this:
#: each randomization replicate repeats the search, so the budget is that of a scan run hundreds
#: of times (COMPAS's 5 IJDI attributes, 11,907 subgroups × ~400 cells: ~3e7).
RATE_EXHAUSTIVE_MAX_WORK = 1e8


def rate_exhaustive_feasible(n_values, num_cells: int) -> bool:
    """Whether FPR-/TPR-Scan's ``search="auto"`` enumerates every subgroup (the global optimum,
    certified): ≤ 1e6 subgroups and ``G·C·(1 + M)`` ≤ :data:`RATE_EXHAUSTIVE_MAX_WORK`."""
    g = num_subgroups(n_values)
    m = len(np.asarray(n_values))
    return g <= EXHAUSTIVE_MAX_SUBGROUPS and g * num_cells * (1 + m) <= RATE_EXHAUSTIVE_MAX_WORK


def resolve_search(search: str, n_values, num_cells: int, hint: str = "") -> str:
    """The search a rate scan runs: ``"auto"`` → exhaustive where
    :func:`rate_exhaustive_feasible`, else coordinate ascent; ``"exhaustive"`` refused (a
    ``ValueError`` naming ``search``) beyond :data:`EXHAUSTIVE_MAX_SUBGROUPS` subgroups."""
    nv = np.asarray(n_values, np.int64)
    if search == "auto":
        return "exhaustive" if rate_exhaustive_feasible(nv, num_cells) else "coordinate_ascent"
    if search == "exhaustive" and num_subgroups(nv) > EXHAUSTIVE_MAX_SUBGROUPS:
        raise ValueError(
            f"search: 'exhaustive' enumerates every subgroup; these attributes have "
            f"{num_subgroups(nv):.3g} (more than {EXHAUSTIVE_MAX_SUBGROUPS:g}). Use "
            f"search='coordinate_ascent' (or 'auto'){hint}.")
    return search


def make_enumeration(n_values, v_max: int) -> Enumeration:
    """Subset tables of each attribute (index 0 = unconstrained, then subsets by size, bitmask)."""
    n_values = [int(v) for v in np.asarray(n_values).tolist()]
    s_max = max((1 << v) - 1 for v in n_values)
    m = len(n_values)
    tables = np.zeros((m, s_max, v_max), bool)
    counts = np.zeros((m, s_max))
    for a, v in enumerate(n_values):
        tables[a, 0, :v] = True
        s = 1
        for r in range(1, v):
            for combo in itertools.combinations(range(v), r):
                tables[a, s, list(combo)] = True
                counts[a, s] = r
                s += 1
    radices = np.array([(1 << v) - 1 for v in n_values], np.int32)
    # device_array: a plain transfer (jnp.asarray compiles a program per dtype in every process)
    return Enumeration(device_array(tables), device_array(counts, np.float64), device_array(radices))


def _digits(g, radices, m):
    out = []
    for a in reversed(range(m)):
        out.append(g % radices[a])
        g = g // radices[a]
    return jnp.stack(out[::-1], axis=-1)  # (..., M)


def chunk_size(num: int, num_cells: int, m: int, k: int) -> int:
    """Subgroups per chunk: keeps the ``(chunk, C, M)`` temporaries near
    :data:`CHUNK_ELEMENTS` elements."""
    c = 1 << max(4, int(math.log2(max(1, CHUNK_ELEMENTS // max(1, num_cells * max(m, k))))))
    return int(min(c, 1 << 13, 1 << max(4, math.ceil(math.log2(max(num, 1))))))


@partial(jax.jit, static_argnames=("num", "chunk"))
def exhaustive_arrays(problem: Problem, Phi, Y, basis: Basis, enum: Enumeration, penalty, *,
                      num: int, chunk: int):
    """The best of all ``num`` subgroups: ``(mask (M, V), listed (M,), score, log_q)``.

    Cells with zero features and counts (padding, removed rows) contribute nothing.
    """
    m = problem.cell_codes.shape[1]
    v = problem.v_max
    penalty = jnp.asarray(penalty, Phi.dtype)
    ends = basis.endpoints()
    flat = problem.cell_codes + (jnp.arange(m, dtype=jnp.int32) * v)[None, :]  # (C, M)
    idx_m = jnp.arange(m)
    n_chunks = -(-num // chunk)

    def body(i, best):
        b_score, b_index, b_t = best
        g = (i * chunk + jnp.arange(chunk)).astype(jnp.int64)
        d = _digits(jnp.minimum(g, num - 1), enum.radices, m)  # (chunk, M)
        masks = enum.tables[idx_m[None, :], d]  # (chunk, M, V)
        listed = d != 0
        ok = (masks | ~listed[..., None]).reshape(chunk, m * v)
        w = jnp.all(ok[:, flat], axis=-1).astype(Phi.dtype)  # (chunk, C)
        gain, t = maximize(basis, w @ Phi, w @ Y, ends)
        score = gain - penalty * jnp.sum(enum.counts[idx_m[None, :], d], axis=1)
        score = jnp.where(g < num, score, -jnp.inf)
        j = jnp.argmax(score)
        better = score[j] > b_score
        return (jnp.where(better, score[j], b_score), jnp.where(better, g[j], b_index),
                jnp.where(better, t[j], b_t))

    init = (jnp.asarray(-jnp.inf, Phi.dtype), jnp.asarray(0, jnp.int64), jnp.asarray(0.0, Phi.dtype))
    score, index, t = jax.lax.fori_loop(0, n_chunks, body, init)
    d = _digits(index, enum.radices, m)
    mask = enum.tables[idx_m, d]
    return mask, d != 0, score, t
