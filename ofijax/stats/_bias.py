"""Bias Scan from statistics: per-cell row counts, outcome sums and Chebyshev features.

Bias Scan's score of a subgroup S is ``max_t Y_S·t − Σ_{i∈S} log(1 − p_i + p_i e^t)``; the second
term is ``Φ_S · φ(t)`` with per-cell Chebyshev features Φ (``ofijax.scan._basis``), linear in the
rows, so Φ, Y and n sum over batches like counts. The basis is fixed by the direction and the q
bracket, which are therefore chosen before the pass. Features are float64 sums: merging batches
in another order changes them by round-off only (≈1e-16 relative per row; the basis's own bound
is ρ^{-K} + 4·K·T·ε per row, see ``ofijax.scan``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from .._progress import Progress
from .._validation import as_key
from ..scan import DEFAULT_Q_BOUNDS, ScanResult, chebyshev_cell_features, scan_cells
from ._frames import check_batch
from ._stream import DEFAULT_BATCH_SIZE, na_value_tuple, source_batches

__all__ = ["BiasCells", "collect_bias", "bias_scan_cells"]


class BiasCells(NamedTuple):
    """Per-cell statistics of Bias Scan (mergeable).

    Attributes:
      columns: the M attribute names.
      values: per attribute, the ``(C,)`` values of each cell.
      n: ``(C,)`` int64 rows; positives: ``(C,)`` int64 outcome sums.
      features: ``(C, K)`` float64 Chebyshev features of the expectations.
      direction, q_bounds: the basis they were computed for.
    """

    columns: tuple
    values: tuple
    n: np.ndarray
    positives: np.ndarray
    features: np.ndarray
    direction: str
    q_bounds: tuple

    def merge(self, other: BiasCells) -> BiasCells:
        """Statistics of the union (counts exact; features summed in float64)."""
        if (tuple(self.columns), self.direction, tuple(self.q_bounds)) != (
                tuple(other.columns), other.direction, tuple(other.q_bounds)):
            raise ValueError("other: computed for other columns, direction or q_bounds.")
        return _reduce([self, other])


def _reduce(parts: list[BiasCells]) -> BiasCells:
    first = parts[0]
    m = len(first.columns)
    k = first.features.shape[1]
    frames = []
    for p in parts:
        d = {f"a{j}": v for j, v in enumerate(p.values)}
        d.update(n=p.n, y=p.positives)
        f = pd.DataFrame(p.features, columns=[f"f{i}" for i in range(k)])
        frames.append(pd.concat([pd.DataFrame(d), f], axis=1))
    g = pd.concat(frames, ignore_index=True).groupby(
        [f"a{j}" for j in range(m)], sort=False, dropna=False).sum().reset_index()
    return BiasCells(tuple(first.columns), tuple(g[f"a{j}"].to_numpy() for j in range(m)),
                     g["n"].to_numpy(np.int64), g["y"].to_numpy(np.int64),
                     g[[f"f{i}" for i in range(k)]].to_numpy(np.float64), first.direction,
                     tuple(first.q_bounds))


def collect_bias(
    source: Any,
    *,
    outcome: str,
    expectations: str,
    attrs: Any,
    direction: str = "positive",
    q_bounds: tuple[float, float] = DEFAULT_Q_BOUNDS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool | None = None,
    as_strings: bool = False,
    na_values: Any = None,
) -> BiasCells:
    """One bounded-memory pass computing :class:`BiasCells` (sources as in :func:`collect`).

    Args:
      outcome: column of the binary outcomes y; expectations: column of p in [0, 1].
      attrs: the categorical attribute columns.
      direction, q_bounds: the scan's direction and q bracket (fix the feature basis).
      as_strings, na_values: as in :func:`collect`: attribute columns read as the strings in the
        file (parts that store a column with different types merge: integer ``1``, float ``1.0``
        and text ``"1"`` are the one label ``"1"``), and the strings that mean missing. Without
        ``as_strings`` a column stored as a number in one part and as text in another is one
        ``ValueError`` naming both parts (before, ``1`` and ``"1"`` became two values); integer
        and float parts merge as numbers (Arrow's promotion, as :func:`collect`: ``1.0``).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> a = pd.DataFrame({"g": [1, 2] * 4, "y": [1, 0] * 4, "p": [0.5] * 8})
      >>> b = a.assign(g=a["g"].astype(str))                  # the same codes stored as text
      >>> collect_bias([a, b], outcome="y", expectations="p", attrs="g",
      ...              as_strings=True).values
      (array(['1', '2'], dtype=object),)
    """
    if direction not in ("positive", "negative"):
        raise ValueError(f"direction: must be 'positive' or 'negative'; got {direction!r}.")
    attrs_l = [attrs] if isinstance(attrs, str) else list(attrs)
    keys = list(dict.fromkeys(attrs_l + [outcome, expectations]))
    na = na_value_tuple(na_values)
    batches, total = source_batches(source, keys, batch_size,
                                    strings=tuple(attrs_l) if as_strings else (), na_values=na)
    parts, offset = [], 0
    types: dict = {}
    floats: set = set()  # attribute columns stored as floats in some part
    with Progress(total, "rows", unit="rows", enabled=progress) as bar:
        for where, tbl, locate in batches:
            n = tbl.num_rows
            if n == 0:
                continue
            tbl = check_batch(tbl, binary=(outcome,), categorical=tuple(attrs_l),
                              probabilities=(expectations,), where=where, offset=offset,
                              locate=locate, as_strings=as_strings, na_values=na, types=types)
            floats.update(a for a in attrs_l if pa.types.is_floating(tbl.column(a).type))
            df = tbl.to_pandas()
            codes, uniq = [], []
            for a in attrs_l:
                c, u = pd.factorize(df[a], sort=False)
                codes.append(c.astype(np.int64))
                uniq.append(np.asarray(u))
            key = np.zeros(n, np.int64)
            for c, u in zip(codes, uniq):
                key = key * max(len(u), 1) + c
            cells, first, inv = np.unique(key, return_index=True, return_inverse=True)
            inv = inv.ravel()
            nc = cells.size
            p = df[expectations].to_numpy(np.float64)
            y = df[outcome].to_numpy(np.int64)
            parts.append(BiasCells(
                tuple(attrs_l), tuple(u[c[first]] for c, u in zip(codes, uniq)),
                np.bincount(inv, minlength=nc).astype(np.int64),
                np.bincount(inv, weights=y, minlength=nc).astype(np.int64),
                chebyshev_cell_features(p, inv, nc, direction=direction, q_bounds=q_bounds),
                direction, tuple(float(q) for q in q_bounds)))
            if len(parts) > 8:
                parts = [_reduce(parts)]
            offset += n
            bar.update(n)
    if not parts:
        raise ValueError("data: has no rows.")
    out = _reduce(parts)
    if floats:  # numbers of int and float parts as one type (Arrow's promotion), in any order
        out = out._replace(values=tuple(
            np.asarray(v, np.float64) if a in floats else v
            for a, v in zip(out.columns, out.values)))
        out = _reduce([out])  # 1 and 1.0 of two parts: one cell
    return out


def bias_scan_cells(
    cells: BiasCells,
    *,
    penalty: float = 1e-17,
    num_restarts: int = 10,
    key: Any = None,
    max_steps: int | None = None,
    search: str = "auto",
) -> ScanResult:
    r"""Bias Scan (:func:`ofijax.scan.bias_scan`, Chebyshev basis) from :class:`BiasCells`.

    The score of a subgroup S is ``max_q Σ_{i∈S} [y_i log q − log(1 − p_i + q p_i)] − penalty ·
    (#values listed)``, computed from the cells' outcome sums and Chebyshev features. Same
    subgroup and score (to float round-off) as ``bias_scan(data, y, p, basis="chebyshev",
    search=search)`` with the same direction, q bracket, penalty and key (``key=None``:
    ``jax.random.key(0)``; it only breaks ties of the restarts). ``mask`` is ``(C,)`` over the
    cells.

    ``search``: ``"auto"`` (default, the rule of :func:`ofijax.scan.bias_scan`: every subgroup
    scored when there are at most 1e6 and subgroups × occupied cells × (features + attributes)
    ≤ 4e9, else coordinate ascent), ``"exhaustive"`` (the global optimum; a ``ValueError`` naming
    ``search`` beyond 1e6 subgroups) or ``"coordinate_ascent"`` (a local optimum).
    ``result.search`` says which ran and ``result.certified`` whether the result is the global
    optimum. No randomization test runs from these statistics (run Bias Scan's test on rows).

    Examples:
      >>> import numpy as np, pandas as pd
      >>> df = pd.DataFrame({"g": list("ab") * 50, "y": [1, 1, 0, 0] * 25, "p": [0.3] * 100})
      >>> df.loc[df["g"] == "a", "y"] = (np.arange(50) % 5 != 0).astype(int)  # 80% vs 30%
      >>> bc = collect_bias(df, outcome="y", expectations="p", attrs="g")
      >>> r = bias_scan_cells(bc, penalty=0.1)
      >>> r.subset, r.size, r.search, r.certified
      ({'g': ('a',)}, 50, 'exhaustive', True)
    """
    if not isinstance(cells, BiasCells):
        raise TypeError(f"cells: must be a BiasCells; got {type(cells).__name__}.")
    if search not in ("auto", "exhaustive", "coordinate_ascent"):
        raise ValueError(f"search: must be 'auto', 'exhaustive' or 'coordinate_ascent'; got "
                         f"{search!r}.")
    codes, labels = [], []
    for vals in cells.values:
        try:
            c, u = pd.factorize(pd.Series(vals), sort=True)
        except TypeError:
            c, u = pd.factorize(pd.Series(vals), sort=False)
        codes.append(c.astype(np.int64))
        labels.append(np.asarray(u))
    codes = np.stack(codes, 1)
    order = np.lexsort(codes.T[::-1])
    nv = np.array([len(u) for u in labels], np.int64)
    r = scan_cells(codes[order], nv, cells.n[order], cells.positives[order], kind="bias",
                   features=cells.features[order], direction=cells.direction,
                   q_bounds=cells.q_bounds, penalty=penalty, num_restarts=num_restarts,
                   key=None if key is None else as_key(key), max_steps=max_steps,
                   search=search)

    def sub(normalize):
        out = {}
        for m, name in enumerate(cells.columns):
            row = np.asarray(r.mask[m, : len(labels[m])])
            if not r.listed[m] or (normalize and row.all()):
                continue
            out[name] = tuple(v.item() if isinstance(v, np.generic) else v
                              for v in labels[m][row])
        return out

    in_cells = np.zeros(len(order), bool)
    in_cells[order] = r.cells
    return ScanResult(subset=sub(True), score=r.score, q=r.q,
                      size=int(cells.n[in_cells].sum()), mask=in_cells, converged=r.converged,
                      listed=sub(False), search=r.search)
