"""Mergeable additive statistics: per-group confusion matrices and per-cell scan statistics.

Both are sums over rows, so statistics of disjoint parts of the data (batches, files, Spark
partitions) merge by addition: ``a.merge(b)`` equals the statistics of the union, exactly (int64
counts; no floating point anywhere on the counting path).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ._frames import COUNT

__all__ = ["GroupCounts", "CellStats", "Statistics", "from_fine"]


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _sorted(keys: list) -> list:
    try:
        return sorted(keys)
    except TypeError:  # unorderable mixed labels: first-appearance order (as pandas.factorize)
        return list(keys)


class GroupCounts(NamedTuple):
    """Per-group confusion matrices ``(k, 4)`` = TP, FN, FP, TN (int64), groups sorted.

    Attributes:
      groups: the k group labels (tuples when several group columns were given), sorted as
        :func:`ofijax.audit` sorts them.
      names: the group column names.
      cms: ``(k, 4)`` int64 counts, already oriented so that the positive cell is beneficial.

    Examples:
      >>> import numpy as np
      >>> a = GroupCounts(("x",), ("g",), np.array([[1, 2, 3, 4]]))
      >>> b = GroupCounts(("w", "x"), ("g",), np.array([[0, 0, 1, 0], [1, 0, 0, 0]]))
      >>> m = a.merge(b)
      >>> m.groups, m.cms.tolist()
      (('w', 'x'), [[0, 0, 1, 0], [2, 2, 3, 4]])
    """

    groups: tuple
    names: tuple
    cms: np.ndarray

    def merge(self, other: GroupCounts) -> GroupCounts:
        """The counts of the union of the two data sets (exact int64 sums)."""
        if tuple(self.names) != tuple(other.names):
            raise ValueError(
                f"other: group columns differ ({list(self.names)} vs {list(other.names)}); "
                "merge counts of the same columns."
            )
        acc: dict = {}
        for gs, cms in ((self.groups, self.cms), (other.groups, other.cms)):
            for g, c in zip(gs, np.asarray(cms, np.int64)):
                acc[g] = acc.get(g, np.zeros(4, np.int64)) + c
        keys = _sorted(list(acc))
        cms = np.stack([acc[g] for g in keys]) if keys else np.zeros((0, 4), np.int64)
        return GroupCounts(tuple(keys), tuple(self.names), cms.astype(np.int64))

    @property
    def rows(self) -> int:
        return int(np.asarray(self.cms).sum())


class CellStats(NamedTuple):
    """Per-cell statistics of the attribute cross-product, split by the true label.

    One entry per occupied (attribute values, label) combination: its row count and the number of
    positive predictions. FPR-Scan reads the label-0 cells, TPR-Scan the label-1 cells (outcome =
    the prediction, null rate = the side's overall rate).

    Attributes:
      columns: the M attribute names.
      values: per attribute, a ``(C,)`` array of each entry's value.
      label: ``(C,)`` int8 true label of the entry (as given; not oriented).
      n: ``(C,)`` int64 rows.
      positives: ``(C,)`` int64 rows with prediction 1.

    Examples:
      >>> import numpy as np
      >>> a = CellStats(("g",), (np.array(["x"]),), np.array([0], np.int8), np.array([5]),
      ...               np.array([2]))
      >>> m = a.merge(a)
      >>> m.n.tolist(), m.positives.tolist()
      ([10], [4])
    """

    columns: tuple
    values: tuple
    label: np.ndarray
    n: np.ndarray
    positives: np.ndarray

    def _frame(self) -> pd.DataFrame:
        d = {f"a{j}": v for j, v in enumerate(self.values)}
        d.update(label=self.label, n=self.n, positives=self.positives)
        return pd.DataFrame(d)

    def merge(self, other: CellStats) -> CellStats:
        """The statistics of the union of the two data sets (exact int64 sums)."""
        if tuple(self.columns) != tuple(other.columns):
            raise ValueError(
                f"other: attribute columns differ ({list(self.columns)} vs "
                f"{list(other.columns)}); merge statistics of the same columns."
            )
        df = pd.concat([self._frame(), other._frame()], ignore_index=True)
        keys = [f"a{j}" for j in range(len(self.columns))] + ["label"]
        g = df.groupby(keys, sort=False, dropna=False)[["n", "positives"]].sum().reset_index()
        return CellStats(
            tuple(self.columns), tuple(g[f"a{j}"].to_numpy() for j in range(len(self.columns))),
            g["label"].to_numpy(np.int8), g["n"].to_numpy(np.int64),
            g["positives"].to_numpy(np.int64),
        )

    def flip(self) -> CellStats:
        """Swap the meaning of 0 and 1 in labels and predictions (e.g. into the harm orientation)."""
        return self._replace(label=(1 - self.label).astype(np.int8),
                             positives=(self.n - self.positives).astype(np.int64))

    @property
    def rows(self) -> int:
        return int(np.asarray(self.n).sum())


class Statistics(NamedTuple):
    """What one pass over the data returns: group counts, cell statistics (each optional), rows."""

    counts: GroupCounts | None
    cells: CellStats | None
    rows: int

    def merge(self, other: Statistics) -> Statistics:
        """Both parts merged (``None`` stays ``None``)."""
        if (self.counts is None) != (other.counts is None) or (
                (self.cells is None) != (other.cells is None)):
            raise ValueError(
                "other: holds different parts (group counts / cell statistics); collect both "
                "with the same group and attrs.")
        c = None if self.counts is None else self.counts.merge(other.counts)
        s = None if self.cells is None else self.cells.merge(other.cells)
        return Statistics(c, s, int(self.rows) + int(other.rows))


def _group_key(row: tuple, ncols: int):
    vals = tuple(_py(v) for v in row)
    return vals[0] if ncols == 1 else vals


def from_fine(fine: pd.DataFrame, *, label: str, pred: str, group: list | None,
              attrs: list | None, beneficial_label: int = 1) -> Statistics:
    """Group counts and cell statistics from a table of row counts per distinct
    (group columns, attribute columns, label, prediction) combination (column ``COUNT``)."""
    if beneficial_label not in (0, 1):
        raise ValueError(f"beneficial_label: must be 0 or 1; got {beneficial_label!r}.")
    y = fine[label].to_numpy(np.int64)
    yh = fine[pred].to_numpy(np.int64)
    cnt = fine[COUNT].to_numpy(np.int64)
    rows = int(cnt.sum())
    counts = None
    if group:
        cell = 2 * y + yh if beneficial_label == 0 else 2 * (1 - y) + (1 - yh)
        gdf = fine[list(group)].copy()
        gdf["__cell__"] = cell
        gdf[COUNT] = cnt
        agg = gdf.groupby(list(group) + ["__cell__"], sort=False, dropna=False)[COUNT].sum()
        acc: dict = {}
        for idx, c in agg.items():
            *gv, ci = idx if isinstance(idx, tuple) else (idx,)
            key = _group_key(tuple(gv), len(group))
            acc.setdefault(key, np.zeros(4, np.int64))[int(ci)] += int(c)
        keys = _sorted(list(acc))
        cms = np.stack([acc[k] for k in keys]) if keys else np.zeros((0, 4), np.int64)
        counts = GroupCounts(tuple(keys), tuple(group), cms)
    cells = None
    if attrs:
        adf = fine[list(attrs)].copy()
        adf.columns = [f"a{j}" for j in range(len(attrs))]
        adf["label"] = y
        adf["n"] = cnt
        adf["positives"] = cnt * yh
        g = adf.groupby([f"a{j}" for j in range(len(attrs))] + ["label"], sort=False,
                        dropna=False)[["n", "positives"]].sum().reset_index()
        cells = CellStats(tuple(attrs), tuple(g[f"a{j}"].to_numpy() for j in range(len(attrs))),
                          g["label"].to_numpy(np.int8), g["n"].to_numpy(np.int64),
                          g["positives"].to_numpy(np.int64))
    return Statistics(counts, cells, rows)
