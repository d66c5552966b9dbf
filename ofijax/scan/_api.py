"""Public Bias Scan entry points: :func:`bias_scan` and :func:`score_subset`."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._validation import (
    check_binary,
    check_choice,
    check_nonnegative_scalar,
    check_probabilities,
)
from ._basis import EXACT_MAX_VALUES, Basis, features, layout_group, make_basis, make_layout
from ._encode import Encoded, encode_data
from ._engine import (
    cell_bucket,
    make_problem,
    outcome_counts,
    pad_cells,
    row_mask,
    scan_arrays,
    score_arrays,
)
from ._randomization import bias_scan_null_scores, check_randomization_args

__all__ = ["ScanResult", "bias_scan", "score_subset", "DEFAULT_Q_BOUNDS"]

#: Default bracket for the odds multiplier q (the IJDI reference's); AIF360 uses (1e-3, 1e3).
DEFAULT_Q_BOUNDS = (1e-6, 1e6)


class ScanResult(NamedTuple):
    """Result of :func:`bias_scan` / :func:`score_subset`.

    Attributes:
      subset: the subgroup, normalised: ``{column: tuple of values}`` for each constrained attribute
        that excludes at least one observed value (sorted as encoded); ``{}`` is the whole data.
      score: penalised score ``max_q LLR(q) - penalty·(#values listed)`` (Python float).
      q: fitted odds multiplier (``exp`` of the maximising t; 1.0 when the score is 0).
      size: number of rows in the subgroup.
      mask: ``(N,)`` NumPy bool array, the rows in the subgroup.
      converged: every restart reached a local optimum within the step cap.
      listed: the un-normalised subgroup (attributes listed with all their values kept); the penalty
        counts the values listed here.
      p_value: randomization-test p-value (NaN: not computed by :func:`bias_scan`).
      null_scores: scores under the null (None: not computed by :func:`bias_scan`).
    """

    subset: dict
    score: float
    q: float
    size: int
    mask: np.ndarray
    converged: bool = True
    listed: dict | None = None
    p_value: float = math.nan
    null_scores: Any = None


# ---------------------------------------------------------------------------------------------
# Input checks


def _check_common(direction, penalty, q_bounds, basis):
    check_choice(direction, "direction", ("positive", "negative"))
    pen = check_nonnegative_scalar(penalty, "penalty")
    check_choice(basis, "basis", ("auto", "exact", "chebyshev"))
    try:
        lo, hi = (float(q_bounds[0]), float(q_bounds[1]))
    except Exception as exc:
        raise ValueError(f"q_bounds: must be a pair (q_lo, q_hi); got {q_bounds!r}.") from exc
    if not (0 < lo < 1 < hi < math.inf):
        raise ValueError(
            f"q_bounds: must satisfy 0 < q_lo < 1 < q_hi < inf; got {q_bounds!r} "
            "(default (1e-6, 1e6); AIF360 uses (1e-3, 1e3))."
        )
    return pen, (lo, hi)


def _prepare(data, observations, expectations, value_labels):
    enc = encode_data(data, value_labels)
    n = enc.codes.shape[0]
    y = check_binary(observations, "observations")
    p = check_probabilities(expectations, "expectations")
    if y.ndim != 1 or p.ndim != 1:
        raise ValueError(
            "observations, expectations: must be 1-D (one value per row); got shapes "
            f"{y.shape} and {p.shape}."
        )
    if not (y.shape[0] == p.shape[0] == n):
        raise ValueError(
            f"length mismatch: data has {n} rows, observations {y.shape[0]}, expectations "
            f"{p.shape[0]}; pass one value per row in each."
        )
    return enc, y, p


def _choose_basis(p: np.ndarray, kind: str, direction: str, q_bounds) -> Basis:
    if kind == "auto":
        many = np.unique(p[:4096]).size > EXACT_MAX_VALUES  # cheap early exit for continuous p
        kind = "chebyshev" if many or np.unique(p).size > EXACT_MAX_VALUES else "exact"
    if kind == "exact":
        distinct = np.unique(p)
        if distinct.size > 4096:
            raise ValueError(
                f"basis: 'exact' needs few distinct expectations; got {distinct.size}. "
                "Use basis='chebyshev' (or 'auto')."
            )
        return make_basis("exact", direction=direction, q_bounds=q_bounds, p_values=distinct)
    return make_basis("chebyshev", direction=direction, q_bounds=q_bounds)


def _subset_dict(enc: Encoded, mask: np.ndarray, listed: np.ndarray, normalize: bool) -> dict:
    out = {}
    for m, name in enumerate(enc.columns):
        if not listed[m]:
            continue
        nv = len(enc.labels[m])
        row = mask[m, :nv]
        if normalize and row.all():
            continue
        out[name] = tuple(_py(v) for v in enc.labels[m][row])
    return out


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _result(enc, problem, Phi, Y, basis, mask, listed, score, log_q, converged):
    mask_np = np.asarray(mask)
    listed_np = np.asarray(listed)
    rows = np.asarray(row_mask(problem, mask, listed))
    return ScanResult(
        subset=_subset_dict(enc, mask_np, listed_np, normalize=True),
        score=float(score),
        q=float(np.exp(float(log_q))),
        size=int(rows.sum()),
        mask=rows,
        converged=bool(converged),
        listed=_subset_dict(enc, mask_np, listed_np, normalize=False),
    )


def _arrays(enc: Encoded, y, p, kind, direction, q_bounds):
    n_values = np.array([len(lab) for lab in enc.labels], dtype=np.int32)
    problem = make_problem(enc.codes, n_values)
    basis = _choose_basis(p, kind, direction, q_bounds)
    layout = None
    if basis.kind == "chebyshev":
        layout = make_layout(np.asarray(problem.row_cell), problem.num_cells, layout_group(basis))
    Phi = features(jnp.asarray(p), problem.row_cell, problem.num_cells, basis, layout)
    Y = outcome_counts(jnp.asarray(y), problem.row_cell, problem.num_cells)
    return (*pad_cells(problem, Phi, Y, cell_bucket(problem.num_cells)), basis)


# ---------------------------------------------------------------------------------------------
# Public functions


def bias_scan(
    data,
    observations,
    expectations,
    *,
    direction: str = "positive",
    penalty: float = 1e-17,
    num_restarts: int = 10,
    key: jax.Array | None = None,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    basis: str = "auto",
    max_steps: int | None = None,
    value_labels=None,
    num_replicates: int = 0,
    null: str = "bernoulli",
    replicate_chunk: int | None = None,
) -> ScanResult:
    r"""Bias Scan (MDSS): the subgroup whose outcomes deviate most from their expectations.

    Each row i has categorical attributes, an outcome :math:`y_i \in \{0,1\}` and an expectation
    :math:`p_i \in [0,1]`. Under H1(S) the odds inside subgroup S are multiplied by q; the score is
    the Bernoulli log-likelihood ratio maximised over q on the requested side of 1, minus the
    penalty times the number of values listed over the constrained attributes:

    .. math::

        F(S) = \max_{q} \sum_{i \in S} \bigl[y_i \log q - \log(1 - p_i + q\,p_i)\bigr]
               - \lambda \sum_{m\ \mathrm{constrained}} |V_m(S)|

    with :math:`q \in [1, q_{hi}]` for ``direction="positive"`` (outcomes under-predicted;
    AIF360's ``overpredicted=False``) and :math:`q \in [q_{lo}, 1]` for ``"negative"``. The search
    is multi-start coordinate ascent with an exact penalised per-attribute step, restarts running
    as one batch (see :mod:`ofijax.scan._engine`). Computation is in float64 (inside
    ``jax.enable_x64(True)``) regardless of the global JAX setting.

    Args:
      data: DataFrame of categorical columns (string, category, int, bool, or integral float), or a
        2-D array (columns named 0..M-1; with ``value_labels`` its entries are integer codes).
      observations: binary outcomes y (0/1), one per row.
      expectations: probabilities p in [0, 1], one per row.
      direction: ``"positive"`` (q > 1) or ``"negative"`` (q < 1).
      penalty: λ ≥ 0 per listed value (AIF360 default 1e-17; the IJDI code uses 0.1).
      num_restarts: number of restarts (≥ 1); restart 0 starts from the whole data.
      key: PRNG key for the restarts (default ``jax.random.key(0)``); same key, same result.
      q_bounds: bracket for q (default (1e-6, 1e6); AIF360 parity: (1e-3, 1e3)). When every row
        of a subgroup has y = 1 the likelihood increases without bound and the bracket end is used.
      basis: ``"auto"`` (exact when p has ≤ 64 distinct values, else Chebyshev), ``"exact"`` or
        ``"chebyshev"``; the Chebyshev basis is accurate to ~1e-13 per row (see ``_basis``).
      max_steps: cap on coordinate-ascent steps per restart (default 20·M + 50).
      value_labels: optional labels per column for integer-coded array input.
      num_replicates: R ≥ 0 randomization replicates for a search-aware p-value (0: no test,
        ``p_value`` is NaN). Each replicate reruns the whole multi-start scan on null data and
        ``p_value = (1 + #{F* ≥ F}) / (R + 1)``; replicates run as vmapped batches.
      null: ``"bernoulli"`` (y* ~ Bernoulli(p), Bias Scan's parametric null) or ``"permutation"``
        (attribute rows permuted relative to (y, p); exact under exchangeability).
      replicate_chunk: replicates per batch (bounds memory; default chosen from the data size).

    Returns:
      :class:`ScanResult` (with ``p_value`` and ``null_scores`` when ``num_replicates > 0``).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import bias_scan
      >>> df = pd.DataFrame({"sex": ["F", "M"] * 100,
      ...                    "age": ["young", "old"] * 50 + ["old", "young"] * 50})
      >>> y = (np.arange(200) % 3 == 0).astype(int)          # base rate 1/3 ...
      >>> young_men = ((df["sex"] == "M") & (df["age"] == "young")).to_numpy()
      >>> y[young_men] = np.arange(50) % 4 != 0              # ... but 3/4 for young men
      >>> res = bias_scan(df, y, np.full(200, 1 / 3), penalty=0.1)
      >>> res.subset, res.size, round(res.score, 3), round(res.q, 2)
      ({'sex': ('M',), 'age': ('young',)}, 50, 17.067, 5.69)
    """
    pen, qb = _check_common(direction, penalty, q_bounds, basis)
    if isinstance(num_restarts, bool) or not isinstance(num_restarts, int | np.integer) or (
        num_restarts < 1
    ):
        raise ValueError(f"num_restarts: must be an integer ≥ 1; got {num_restarts!r}.")
    if max_steps is not None and (not isinstance(max_steps, int | np.integer) or max_steps < 1):
        raise ValueError(f"max_steps: must be an integer ≥ 1 or None; got {max_steps!r}.")
    check_randomization_args(num_replicates, null, replicate_chunk)
    enc, y, p = _prepare(data, observations, expectations, value_labels)
    with jax.enable_x64(True):
        key = jax.random.key(0) if key is None else key
        problem, Phi, Y, b = _arrays(enc, y, p, basis, direction, qb)
        raw = scan_arrays(
            key, problem, Phi, Y, b, penalty=pen, num_restarts=int(num_restarts),
            max_steps=None if max_steps is None else int(max_steps),
        )
        res = _result(enc, problem, Phi, Y, b, raw.mask, raw.listed, raw.score, raw.log_q,
                      raw.converged)
        if num_replicates:
            rt = bias_scan_null_scores(
                key, problem, b, y, p, penalty=pen, num_restarts=int(num_restarts),
                max_steps=None if max_steps is None else int(max_steps),
                num_replicates=num_replicates, null=null, replicate_chunk=replicate_chunk,
                observed_score=res.score,
            )
            res = res._replace(p_value=rt.p_value, null_scores=rt.null_scores)
        return res


def _subset_arrays(enc: Encoded, subset: dict, v_max: int):
    if not isinstance(subset, dict):
        raise ValueError(
            f"subset: must be a dict {{column: values}}; got {type(subset).__name__}."
        )
    m = len(enc.columns)
    mask = np.zeros((m, v_max), dtype=bool)
    listed = np.zeros(m, dtype=bool)
    for m_i, lab in enumerate(enc.labels):
        mask[m_i, : len(lab)] = True
    index = {c: i for i, c in enumerate(enc.columns)}
    for col, vals in subset.items():
        if col not in index:
            raise ValueError(f"subset: unknown column {col!r}; columns are {enc.columns!r}.")
        m_i = index[col]
        if isinstance(vals, str) or not hasattr(vals, "__iter__"):
            vals = [vals]
        vals = list(vals)
        if not vals:
            raise ValueError(f"subset: column {col!r} lists no values; list at least one.")
        labels = list(enc.labels[m_i])
        row = np.zeros(v_max, dtype=bool)
        for v in vals:
            hits = [j for j, lab in enumerate(labels) if lab == v]
            if not hits:
                raise ValueError(
                    f"subset: value {v!r} of column {col!r} does not occur in the data; "
                    f"observed values are {labels[:20]!r}."
                )
            row[hits[0]] = True
        mask[m_i] = row
        listed[m_i] = True
    return mask, listed


def score_subset(
    data,
    observations,
    expectations,
    subset: dict,
    *,
    direction: str = "positive",
    penalty: float = 1e-17,
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    basis: str = "auto",
    value_labels=None,
) -> ScanResult:
    """Score a given subgroup with the same score as :func:`bias_scan`.

    ``subset`` maps column → allowed values (a scalar means one value); unlisted columns are
    unconstrained; every listed value counts toward the penalty (also when all values are listed).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> from ofijax.scan import score_subset
      >>> df = pd.DataFrame({"g": ["a", "b"] * 50})
      >>> y = np.array([1, 0] * 50)
      >>> res = score_subset(df, y, np.full(100, 0.5), {"g": ["a"]}, penalty=0.0)
      >>> res.size, round(res.score, 4), round(res.q)   # all 50 positive: q at the bracket end
      (50, 34.6573, 1000000)
    """
    pen, qb = _check_common(direction, penalty, q_bounds, basis)
    enc, y, p = _prepare(data, observations, expectations, value_labels)
    with jax.enable_x64(True):
        problem, Phi, Y, b = _arrays(enc, y, p, basis, direction, qb)
        mask, listed = _subset_arrays(enc, subset, problem.v_max)
        mask, listed = jnp.asarray(mask), jnp.asarray(listed)
        score, t = score_arrays(problem, Phi, Y, b, mask, listed, penalty=pen)
        return _result(enc, problem, Phi, Y, b, mask, listed, score, t, True)
