"""Scans from per-cell statistics (no rows): the hook :mod:`ofijax.stats` builds on.

FPR-/TPR-Scan and Bias Scan are functions of additive per-cell statistics of the attribute
cross-product: for each occupied cell c its row count ``n_c``, its outcome sum ``Y_c`` and (Bias
Scan) the basis features ``Phi_c`` of ``q ↦ Σ_{i∈c} log(1 − p_i + q p_i)`` (see ``_basis``). This
module runs the same engine as :func:`~ofijax.scan.fpr_scan` / :func:`~ofijax.scan.bias_scan` on
those arrays: cells in lexicographic code order, padded to :func:`~._engine.cell_bucket` sizes, the
same key, so the subgroup and score equal the row-level scan's (to float round-off).

Search. Rate scans and Bias Scan take ``search="auto" | "exhaustive" | "coordinate_ascent"``:
the exhaustive path scores every subgroup from the same cell arrays
(:func:`~._exhaustive.exhaustive_arrays`, the global optimum, ``certified``); ``"auto"`` follows
the row scans' rule (rate scans: :func:`~._exhaustive.rate_exhaustive_feasible`; Bias Scan:
:func:`~._exhaustive.exhaustive_feasible` with the basis's feature count).

Randomization test (Bernoulli null). For FPR-/TPR-Scan every row of the scanned side has the same
null rate p̄_b, so the replicate outcome sum of cell c is ``Y*_c ~ Binomial(n_c, p̄_b)``: exactly the
distribution of a row-level Bernoulli draw summed over the cell, drawn here from the counts. The
row scans draw one Bernoulli per row instead, so the two engines' replicates are different draws of
the same null law: their p-values are Monte Carlo estimates of the same exact randomization
p-value, each bracketed by its ``p_value_interval`` (95% Clopper-Pearson), so they differ by
Monte Carlo error (overlapping intervals), not digit for digit. Bias Scan's test is not drawn here: with the exact basis ``Y*_c`` would be a sum of
Binomials over the cell's (p value, count) pairs, with continuous p the replicate sums must be
generated in the data pass (R sums per cell); neither is implemented, so ``num_samples`` with
``kind="bias"`` raises.

Under ``jax.distributed`` (several processes, e.g. hosts) each process runs an equal share of the
replicates and the shares are gathered (``process_allgather``): replicate r uses the same key
whatever the number of processes, so the p-value does not depend on it.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validation import align_pandas
from ._basis import Basis, make_basis
from ._checks import DEFAULT_Q_BOUNDS
from ._engine import Problem, RawScan, cell_bucket, cell_mask, scan_arrays
from ._exhaustive import (
    chunk_size,
    exhaustive_arrays,
    exhaustive_feasible,
    make_enumeration,
    num_subgroups,
    resolve_search,
)
from ._randomization import p_value, p_value_interval, replicate_key

__all__ = ["CellScan", "scan_cells", "chebyshev_cell_features"]

#: Rows per chunk of :func:`chebyshev_cell_features` (bounds its (chunk, K) NumPy temporary to
#: ~36 MB at K = 68).
_ROWS_CHUNK = 1 << 16


class CellScan(NamedTuple):
    """The array-level output of :func:`scan_cells` (the public scans, :func:`~ofijax.scan.
    rate_scan_cells` and ``ofijax.stats``' cell scans, turn it into a
    :class:`~ofijax.scan.ScanResult`).

    Attributes:
      mask: ``(M, V_max)`` bool, allowed values of each attribute (where listed).
      listed: ``(M,)`` bool, constrained attributes.
      score: penalised score (0.0 when nothing scores above 0 for rate scans).
      q: fitted odds multiplier.
      cells: ``(C,)`` bool, the cells in the subgroup.
      converged: every restart reached a local optimum.
      p_value: randomization p-value ``(1 + #{F* ≥ F}) / (R + 1)``, a Monte Carlo estimate of
        the exact randomization p-value (NaN without replicates).
      null_scores: ``(R,)`` replicate scores (None without replicates).
      search: ``"coordinate_ascent"`` or ``"exhaustive"`` (the global optimum).
      top: with ``top_k=k`` (rate scans): the k finds, each a :class:`CellScan` of the cells left
        after the earlier finds' cells were removed (``top[0]`` is this result; fewer when a step
        finds nothing), with family-wise p-values; ``()`` otherwise.
      p_value_interval: 95% Clopper-Pearson interval for the exact randomization p-value
        (:func:`~._randomization.p_value_interval`); ``(NaN, NaN)`` without replicates.

    The property ``certified`` is ``search == "exhaustive"``.
    """

    mask: np.ndarray
    listed: np.ndarray
    score: float
    q: float
    cells: np.ndarray
    converged: bool
    p_value: float = math.nan
    null_scores: Any = None
    top: tuple = ()
    search: str = "coordinate_ascent"
    p_value_interval: tuple = (math.nan, math.nan)

    @property
    def certified(self) -> bool:
        """Whether the result is the global optimum (every subgroup scored: ``search ==
        "exhaustive"``); otherwise a local optimum of coordinate ascent."""
        return self.search == "exhaustive"


def _problem(cell_codes, n_values, n):
    c = int(cell_codes.shape[0])
    pad = cell_bucket(c)
    m = cell_codes.shape[1]
    codes = np.zeros((pad, m), np.int32)
    codes[:c] = cell_codes
    nc = np.zeros(pad, np.float64)
    nc[:c] = n
    return Problem(
        cell_codes=jnp.asarray(codes), n_values=jnp.asarray(np.asarray(n_values, np.int32)),
        row_cell=jnp.arange(pad, dtype=jnp.int32), n_cells=jnp.asarray(nc), num_cells=pad,
        v_max=int(np.max(n_values)),
    ), pad


def _pad(a, pad):
    a = np.asarray(a, np.float64)
    out = np.zeros((pad,) + a.shape[1:], np.float64)
    out[: a.shape[0]] = a
    return jnp.asarray(out)


def chebyshev_cell_features(p_rows, cell_index, num_cells: int, *, direction: str = "positive",
                            q_bounds=DEFAULT_Q_BOUNDS) -> np.ndarray:
    """Chebyshev cell features ``(num_cells, K)`` of rows with expectations ``p_rows`` (NumPy).

    The same features :func:`~ofijax.scan.bias_scan` computes with ``basis="chebyshev"``; linear
    in the rows, so sums over batches are the features of the union. pandas ``p_rows`` and
    ``cell_index`` are aligned on their index (or refused), never matched by position.
    """
    with jax.enable_x64(True):
        b = make_basis("chebyshev", direction=direction, q_bounds=q_bounds, reduced=False)
        k = b.num_features
        e = np.expm1(np.asarray(b.values))
    p_rows, cell_index = align_pandas(p_rows=p_rows, cell_index=cell_index).values()
    p = np.asarray(p_rows, np.float64)
    idx = np.asarray(cell_index, np.int64)
    vals = np.zeros((num_cells, k), np.float64)
    for s in range(0, p.size, _ROWS_CHUNK):
        g = np.log1p(p[s:s + _ROWS_CHUNK, None] * e[None, :])
        _segment_add(vals, idx[s:s + _ROWS_CHUNK], g)
    j = np.arange(k)
    m = np.cos(np.pi * np.outer(np.arange(k), j + 0.5) / k) * (2.0 / k)
    m[0] *= 0.5
    return vals @ m.T


def _segment_add(acc, idx, g):
    order = np.argsort(idx, kind="stable")
    si = idx[order]
    starts = np.flatnonzero(np.r_[True, si[1:] != si[:-1]])
    acc[si[starts]] += np.add.reduceat(g[order], starts, axis=0)


def _uniform(n, y):
    """Every row of the cells has the same outcome (all 0 or all 1): no subgroup can score."""
    total, pos = jnp.sum(n), jnp.sum(y)
    return (pos <= 0) | (pos >= total)


def _rate_step(key, problem, n, y, t_bounds, penalty, eps, num_restarts, max_steps,
               throughput=False, enum=None, num=0, chunk=0):
    """One rate scan of the cells ``(n, y)`` (cells with n = 0 take no part): ``(RawScan with
    score ≤ 0 → 0 and uniform outcomes → 0, cells in S)``; with ``enum`` every subgroup is scored
    (:func:`~._exhaustive.exhaustive_arrays`, the global optimum)."""
    problem = dataclasses.replace(problem, n_cells=n)  # as the row scans' top-k steps count them
    pbar = jnp.clip(y.sum() / jnp.maximum(n.sum(), 1.0), eps, 1.0 - eps)
    basis = Basis("exact", jnp.asarray(t_bounds[0]), jnp.asarray(t_bounds[1]), pbar[None])
    if enum is not None:
        mask, listed, score, t = exhaustive_arrays(problem, n[:, None], y, basis, enum, penalty,
                                                   num=num, chunk=chunk)
        r = RawScan(mask, listed, score, t, jnp.asarray(True), jnp.zeros(1, jnp.int32))
    else:
        r = scan_arrays(key, problem, n[:, None], y, basis, penalty=penalty,
                        num_restarts=num_restarts, max_steps=max_steps, throughput=throughput)
    ok = (r.score > 0) & ~_uniform(n, y)
    r = r._replace(score=jnp.where(ok, r.score, 0.0), log_q=jnp.where(ok, r.log_q, 0.0))
    inside = cell_mask(problem, r.mask, r.listed) & ok & (n > 0)
    return r, inside


def _rate_replicates(keys, problem, n_pad, pbar_null, t_bounds, penalty, eps, num_restarts,
                     max_steps, k=1, enum=None, num=0, chunk=0):
    """Replicate scores (the largest of the ``k`` steps' scores: the family-wise statistic of
    top-k) and convergence flags; uniform replicate outcomes score 0. With ``enum`` each replicate
    scores every subgroup, as the observed exhaustive scan."""
    def one(key):
        k_null, k_scan = jax.random.split(key)
        y_star = jax.random.binomial(k_null, n_pad, pbar_null).astype(jnp.float64)
        y_star = jnp.where(n_pad > 0, y_star, 0.0)
        if k == 1 and enum is None:
            pbar = jnp.clip(y_star.sum() / n_pad.sum(), eps, 1.0 - eps)
            basis = Basis("exact", t_bounds[0], t_bounds[1], pbar[None])
            r = scan_arrays(k_scan, problem, n_pad[:, None], y_star, basis, penalty=penalty,
                            num_restarts=num_restarts, max_steps=max_steps, throughput=True)
            return jnp.where(_uniform(n_pad, y_star), 0.0, r.score), r.converged
        n_j, y_j = n_pad, y_star
        best, conv = jnp.asarray(0.0, jnp.float64), jnp.asarray(True)
        for _ in range(k):  # top-k: each step without the cells of the earlier finds
            r, inside = _rate_step(k_scan, problem, n_j, y_j, t_bounds, penalty, eps,
                                   num_restarts, max_steps, throughput=True, enum=enum, num=num,
                                   chunk=chunk)
            best, conv = jnp.maximum(best, r.score), conv & r.converged
            n_j, y_j = jnp.where(inside, 0.0, n_j), jnp.where(inside, 0.0, y_j)
        return best, conv

    return jax.vmap(one)(keys)


_rate_replicates_jit = jax.jit(_rate_replicates, static_argnums=(7, 8, 9, 11, 12))


def scan_cells(
    cell_codes,
    n_values,
    n,
    positives,
    *,
    kind: str = "rate",
    features=None,
    p_values=None,
    direction: str = "positive",
    key: jax.Array | None = None,
    penalty: float = 0.1,
    num_restarts: int = 10,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    max_steps: int | None = None,
    p_epsilon: float = 1e-6,
    num_samples: int = 0,
    replicate_chunk: int | None = None,
    num_replicates: int | None = None,
    top_k: int | None = None,
    search: str = "coordinate_ascent",
) -> CellScan:
    r"""Run FPR-/TPR-Scan (``kind="rate"``) or Bias Scan (``kind="bias"``) on cell statistics.

    Args:
      cell_codes: ``(C, M)`` integer codes of the occupied cells, each row distinct, sorted
        lexicographically (the order :func:`~ofijax.scan.bias_scan` uses).
      n_values: ``(M,)`` number of values per attribute.
      n: ``(C,)`` rows per cell; positives: ``(C,)`` outcome sums.
      kind: ``"rate"``: the null rate is p̄_b = ΣY/Σn clamped into [ε, 1 − ε] (FPR-/TPR-Scan on
        their side's cells); ``"bias"``: Bias Scan with ``features`` ``(C, K)``: counts per distinct
        expectation (``p_values`` given: the exact basis) or Chebyshev features
        (:func:`chebyshev_cell_features` for ``direction`` and ``q_bounds``).
      key: as in the row-level scans (default ``jax.random.key(0)``); replicates use keys derived
        from it, and their null outcome sums are Binomial draws from the counts.
      num_samples: Bernoulli-null replicates (rate scans only; Bias Scan raises).
      num_replicates: deprecated name of ``num_samples`` (``DeprecationWarning``).
      top_k: k ≥ 1 (rate scans): also the next finds, each by rescanning without the cells of the
        earlier ones (the row scans' ``top_k``: the same subgroups, since a subgroup is a union of
        cells), in ``result.top``; each replicate runs all k steps and its statistic is the
        largest of its k scores (family-wise p-values). ``None``: one subgroup.

      search: ``"coordinate_ascent"`` (default here), ``"exhaustive"`` (every subgroup scored:
        the global optimum; refused beyond 1e6 subgroups) or ``"auto"`` (exhaustive when the row
        scans' ``search="auto"`` would be: rate scans
        :func:`~._exhaustive.rate_exhaustive_feasible`, Bias Scan
        :func:`~._exhaustive.exhaustive_feasible` with the basis's feature count);
        ``result.search`` says which ran and ``result.certified`` whether it is the global
        optimum.

    Uniform outcomes (every row's outcome the same) of a rate scan score 0: no subgroup.

    Replicates (rate scans) draw ``Y*_c ~ Binomial(n_c, p̄_b)`` per cell: the law of the row
    scans' per-row Bernoulli draws summed over the cell, not the same draws, so ``p_value`` and the
    row scans' estimate the same exact p-value, each within its ``p_value_interval``, and differ
    by Monte Carlo error, not digit for digit.

    Returns:
      :class:`CellScan`.

    Examples:
      >>> import numpy as np
      >>> r = scan_cells(np.array([[0], [1]]), [2], np.array([100, 100]), np.array([88, 10]))
      >>> r.cells.tolist(), round(r.score, 3)
      ([True, False], 34.062)
    """
    if num_replicates is not None:
        warnings.warn(
            "scan_cells: num_replicates is deprecated; use num_samples (the library-wide name "
            "for the number of random draws).", DeprecationWarning, stacklevel=2)
        if num_samples not in (None, 0) and num_samples != num_replicates:
            raise ValueError(
                "num_samples: given together with the deprecated num_replicates; pass only "
                "num_samples.")
        num_samples = num_replicates
    num_replicates = num_samples
    cell_codes = np.asarray(cell_codes, np.int32)
    n = np.asarray(n, np.float64)
    pos = np.asarray(positives, np.float64)
    c = cell_codes.shape[0]
    if num_replicates and key is None:
        raise ValueError(
            "key: the randomization test draws random replicates; pass a key explicitly.")
    max_steps_ = None if max_steps is None else int(max_steps)
    with jax.enable_x64(True):
        key = jax.random.key(0) if key is None else key
        problem, pad = _problem(cell_codes, n_values, n)
        n_pad, y_pad = _pad(n, pad), _pad(pos, pad)
        if kind == "rate":
            t_bounds = (0.0, math.log(q_bounds[1]))
            pbar = jnp.clip(y_pad.sum() / n_pad.sum(), p_epsilon, 1.0 - p_epsilon)
            basis = Basis("exact", jnp.asarray(t_bounds[0]), jnp.asarray(t_bounds[1]), pbar[None])
            phi = n_pad[:, None]
        else:
            if p_values is not None:
                basis = make_basis("exact", direction=direction, q_bounds=q_bounds,
                                   p_values=p_values)
            else:
                basis = make_basis("chebyshev", direction=direction, q_bounds=q_bounds, reduced=False,
                                   num_features=int(np.shape(features)[1]))
            phi = _pad(features, pad)
        if search not in ("auto", "exhaustive", "coordinate_ascent"):
            raise ValueError(f"search: must be 'auto', 'exhaustive' or 'coordinate_ascent'; got "
                             f"{search!r}.")
        nv = np.asarray(n_values, np.int64)
        if kind != "rate" and search == "auto":
            # bias_scan's rule on the same numbers: occupied (unpadded) cells, and the feature
            # count of the rows' basis (their Chebyshev basis is the reduced one)
            k_rows = basis.num_features if p_values is not None else make_basis(
                "chebyshev", direction=direction, q_bounds=q_bounds).num_features
            search = ("exhaustive" if exhaustive_feasible(nv, c, k_rows)
                      else "coordinate_ascent")
        search = resolve_search(search, nv, problem.num_cells)
        ex = {}
        if search == "exhaustive":
            num = num_subgroups(nv)
            width = 1 if kind == "rate" else basis.num_features  # features per cell
            ex = dict(enum=make_enumeration(nv, problem.v_max), num=num,
                      chunk=chunk_size(num, problem.num_cells, len(nv), width))
            mask, listed, sc, t = exhaustive_arrays(problem, phi, y_pad, basis, ex["enum"],
                                                    float(penalty), num=ex["num"],
                                                    chunk=ex["chunk"])
            r = RawScan(mask, listed, sc, t, jnp.asarray(True), jnp.zeros(1, jnp.int32))
        else:
            r = scan_arrays(key, problem, phi, y_pad, basis, penalty=float(penalty),
                            num_restarts=int(num_restarts), max_steps=max_steps_)
        cells = np.asarray(cell_mask(problem, r.mask, r.listed))[:c]
        score, log_q = float(r.score), float(r.log_q)
        if kind == "rate" and (score <= 0 or bool(_uniform(n_pad, y_pad))):
            score, log_q = 0.0, 0.0
        out = CellScan(np.asarray(r.mask), np.asarray(r.listed), score, float(np.exp(log_q)),
                       cells, bool(r.converged), search=search)
        k_top = 1 if top_k is None else int(top_k)
        if top_k is not None:
            if kind != "rate":
                raise ValueError("top_k: from cell statistics only FPR-/TPR-Scan take top_k.")
            if isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1:
                raise ValueError(f"top_k: must be an integer ≥ 1 or None; got {top_k!r}.")
            finds = [out]
            n_j, y_j = n_pad, y_pad
            for _ in range(1, k_top):
                if not finds[-1].score > 0:
                    break
                gone = jnp.asarray(np.r_[finds[-1].cells, np.zeros(pad - c, bool)])
                n_j, y_j = jnp.where(gone, 0.0, n_j), jnp.where(gone, 0.0, y_j)
                r_j, inside = _rate_step(key, problem, n_j, y_j, t_bounds, float(penalty),
                                         float(p_epsilon), int(num_restarts), max_steps_, **ex)
                if not float(r_j.score) > 0:
                    break
                finds.append(CellScan(np.asarray(r_j.mask), np.asarray(r_j.listed),
                                      float(r_j.score), float(np.exp(float(r_j.log_q))),
                                      np.asarray(inside)[:c], bool(r_j.converged),
                                      search=search))
            out = out._replace(top=tuple(finds))
        if num_replicates:
            if kind != "rate":
                raise ValueError(
                    "num_samples: from cell statistics only FPR-/TPR-Scan replicates are "
                    "drawn here; run Bias Scan's test on rows.")
            r_total = int(num_replicates)
            keys = jax.random.split(replicate_key(key), r_total)
            # under jax.distributed each process runs an equal share of the replicates (replicate
            # r always uses keys[r]) and the shares are gathered: same scores for any process count
            n_proc, rank = jax.process_count(), jax.process_index()
            share = -(-r_total // n_proc)
            mine = keys[min(rank * share, r_total - 1):min((rank + 1) * share, r_total)]
            if mine.shape[0] < share:
                mine = jnp.concatenate([mine, jnp.repeat(keys[-1:], share - mine.shape[0], 0)])
            chunk = int(replicate_chunk or min(share, 64))
            pnull = y_pad.sum() / n_pad.sum()
            scores = []
            for s in range(0, share, chunk):
                ks = mine[s:s + chunk]
                if ks.shape[0] < chunk:
                    ks = jnp.concatenate([ks, jnp.repeat(ks[-1:], chunk - ks.shape[0], axis=0)])
                sc, _ = _rate_replicates_jit(ks, problem, n_pad, pnull, t_bounds,
                                             float(penalty), float(p_epsilon), int(num_restarts),
                                             max_steps_, k_top, ex.get("enum"),
                                             ex.get("num", 0), ex.get("chunk", 0))
                scores.append(np.asarray(sc))
            local = np.concatenate(scores)[:share]
            if n_proc > 1:
                from jax.experimental import multihost_utils

                local = np.asarray(multihost_utils.process_allgather(local)).reshape(-1)
            null = np.maximum(local[:r_total], 0.0)

            def tested(f):
                p = p_value(f.score, null)
                return f._replace(p_value=p, null_scores=null,
                                  p_value_interval=p_value_interval(p, r_total))

            out = tested(out)
            if out.top:
                out = out._replace(top=tuple(tested(f) for f in out.top))
        return out
