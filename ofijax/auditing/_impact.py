r"""Regulator-style impact-ratio tables (NYC Local Law 144; EEOC 29 CFR 1607.4(D)), label-free.

For each attribute (each sensitive column alone and, with two or more, their full intersection
``"sex x race"``) and each category c of it:

* n_c people with a known value of the attribute (an empty value, None or NaN is *unknown*:
  counted in ``attrs["unknown"]`` and left out of that attribute's table only);
* s_c of them selected (prediction = the beneficial outcome), or, for the **scoring** variant,
  scoring strictly above the median score of the full sample (ties at the median are not above;
  ``lower_is_better=True`` counts strictly below);
* the rate r_c = s_c / n_c and the **impact ratio** r_c / r_ref, where the reference is the
  category with the highest rate (ties: the larger one; equal counts are interchangeable, so the
  result does not depend on names or order); the reference gets 1.00;
* the **2 % rule**: a category with fewer than ``min_share`` (2 %) of the people with a known
  value is left out of the impact-ratio calculation only (``excluded``; listed with its count and
  rate, never the reference). On by default; ``exclude_small=False`` (CLI ``--keep-small``)
  turns it off;
* a **significance test** of r_c − r_ref (the 2 × 2 table c vs the reference): Fisher's exact
  test (two-sided, the sum of the tables no more likely than the observed one) when an expected
  cell count is below 5, else the pooled two-proportion z-test,
  z = (r_c − r_ref) / sqrt(p̂(1 − p̂)(1/n_c + 1/n_ref)), p = erfc(|z|/√2) (the EEOC's "two or
  three standard deviations"; a normal approximation, said so in ``test``).

Counts are exact int64; rates and ratios are float64 from the integer counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MIN_SHARE", "impact_ratios", "impact_from_counts", "impact_section", "scoring_from_batches",
           "fisher_exact_two_sided", "two_proportion_z"]

#: Categories under this share of the people with a known value are left out of the ratios.
MIN_SHARE = 0.02

#: Fisher's exact test is used when an expected cell of the 2 × 2 table is below this.
FISHER_BELOW = 5.0

_RELTOL = 1 + 1e-7  # tables "no more likely" than the observed one, as R and scipy compare them


def fisher_exact_two_sided(a: int, b: int, c: int, d: int) -> float:
    r"""Two-sided p-value of Fisher's exact test of the 2 × 2 table [[a, b], [c, d]].

    p = Σ P(X = x) over the x with P(X = x) ≤ P(X = a), X hypergeometric with the table's
    margins: P(X = x) = C(a + c, x) C(b + d, a + b − x) / C(n, a + b); summed in log space.

    >>> from ofijax.auditing._impact import fisher_exact_two_sided
    >>> round(fisher_exact_two_sided(3, 1, 1, 3), 4)
    0.4857
    """
    from scipy.special import gammaln

    a, b, c, d = (int(x) for x in (a, b, c, d))
    n1, col1, n = a + b, a + c, a + b + c + d
    lo, hi = max(0, n1 + col1 - n), min(n1, col1)
    x = np.arange(lo, hi + 1, dtype=np.float64)

    def lchoose(m, k):
        return gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0)

    logp = lchoose(col1, x) + lchoose(n - col1, n1 - x) - lchoose(float(n), float(n1))
    obs = logp[a - lo]
    keep = logp <= obs + math.log(_RELTOL)
    m = float(np.max(logp[keep]))
    return float(min(1.0, math.exp(m) * float(np.sum(np.exp(logp[keep] - m)))))


def two_proportion_z(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float]:
    r"""Pooled two-proportion z-test: z = (s1/n1 − s2/n2) / sqrt(p̂(1 − p̂)(1/n1 + 1/n2)),
    p̂ = (s1 + s2)/(n1 + n2), two-sided p = erfc(|z|/√2) (accurate in the far tail). Equal rates
    with p̂ ∈ {0, 1} give z = 0, p = 1.

    >>> from ofijax.auditing._impact import two_proportion_z
    >>> z, p = two_proportion_z(30, 100, 50, 100)
    >>> round(z, 3), round(p, 5)
    (-2.887, 0.00389)
    """
    s1, n1, s2, n2 = int(s1), int(n1), int(s2), int(n2)
    ph = (s1 + s2) / (n1 + n2)
    var = ph * (1.0 - ph) * (1.0 / n1 + 1.0 / n2)
    diff = (s1 * n2 - s2 * n1) / (n1 * n2)  # exact numerator, one division
    if var <= 0.0:
        return 0.0, 1.0
    z = diff / math.sqrt(var)
    return z, math.erfc(abs(z) / math.sqrt(2.0))


def _is_unknown(values: pd.Series) -> np.ndarray:
    miss = values.isna().to_numpy().copy()
    if values.dtype == object or pd.api.types.is_string_dtype(values):
        miss |= values.astype(object).map(lambda x: isinstance(x, str) and x.strip() == "").to_numpy(bool)
    return miss


def _as_frame(sensitive_features: Any, data: Any, name: str = "sensitive_features") -> pd.DataFrame:
    if isinstance(sensitive_features, str) or (
        isinstance(sensitive_features, (list, tuple)) and sensitive_features
        and all(isinstance(x, str) for x in sensitive_features) and data is not None
    ):
        if data is None:
            raise ValueError(f"{name}: a column name needs data=DataFrame; pass the values or data=.")
        cols = [sensitive_features] if isinstance(sensitive_features, str) else list(sensitive_features)
        missing = [c for c in cols if c not in data.columns]
        if missing:
            raise ValueError(f"{name}: column {missing[0]!r} not in data; columns: {list(data.columns)[:20]}")
        return data[cols]
    if isinstance(sensitive_features, pd.DataFrame):
        if sensitive_features.columns.duplicated().any():
            raise ValueError(f"{name}: duplicate column names; name each column once.")
        return sensitive_features
    if isinstance(sensitive_features, pd.Series):
        return sensitive_features.to_frame(sensitive_features.name if sensitive_features.name is not None
                                           else "group")
    if isinstance(sensitive_features, dict):
        return pd.DataFrame(dict(sensitive_features))
    arr = np.asarray(sensitive_features, dtype=object)
    if arr.ndim == 1:
        return pd.DataFrame({"group": arr})
    if arr.ndim == 2:
        return pd.DataFrame({f"sensitive_feature_{j}": arr[:, j] for j in range(arr.shape[1])})
    raise ValueError(f"{name}: expected one column of group values or a table of them; got shape {arr.shape}.")


def _column(x: Any, data: Any, name: str) -> Any:
    if isinstance(x, str):
        if data is None:
            raise ValueError(f"{name}: a column name needs data=DataFrame; pass the values or data=.")
        if x not in data.columns:
            raise ValueError(f"{name}: column {x!r} not in data; columns: {list(data.columns)[:20]}")
        return data[x]
    return x


def _selected(y_pred: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """0/1 selections and the mask of rows with a known prediction."""
    s = pd.Series(y_pred.to_numpy() if isinstance(y_pred, pd.Series) else np.asarray(y_pred, dtype=object))
    if len(s) != n:
        raise ValueError(f"y_pred: has {len(s)} rows, sensitive_features {n}; pass one value per person.")
    known = ~s.isna().to_numpy()
    vals = s[known]
    if vals.map(lambda v: isinstance(v, (bool, np.bool_))).all():
        out = vals.astype(bool).to_numpy()
    else:
        try:
            num = pd.to_numeric(vals.map(lambda v: v.strip() if isinstance(v, str) else v))
        except (ValueError, TypeError):
            num = None
        if num is None or not set(np.unique(np.asarray(num, dtype=np.float64)).tolist()) <= {0.0, 1.0}:
            seen = sorted({str(v) for v in vals.tolist()})[:10]
            raise ValueError(f"y_pred: must be 0/1 predictions (1 = selected, the beneficial outcome); "
                             f"values seen {seen}. Map them to 0/1, or pass scores= for the scoring rate.")
        out = np.asarray(num, dtype=np.float64) == 1.0
    sel = np.zeros(n, dtype=np.int64)
    sel[known] = out.astype(np.int64)
    return sel, known


def _scored(scores: Any, n: int, lower_is_better: bool) -> tuple[np.ndarray, np.ndarray, float]:
    s = pd.to_numeric(pd.Series(scores.to_numpy() if isinstance(scores, pd.Series) else np.asarray(scores)),
                      errors="coerce")
    if len(s) != n:
        raise ValueError(f"scores: has {len(s)} rows, sensitive_features {n}; pass one score per person.")
    v = s.to_numpy(dtype=np.float64)
    known = np.isfinite(v)
    if not known.any():
        raise ValueError("scores: no finite numeric score; pass a numeric column of scores.")
    med = float(np.median(v[known]))
    hit = (v < med) if lower_is_better else (v > med)
    return (hit & known).astype(np.int64), known, med


def _better(s1: int, n1: int, s2: int, n2: int) -> bool:
    """Is rate s1/n1 (then size n1) larger than s2/n2 (then n2)? Exact in integers."""
    a, b = s1 * n2, s2 * n1
    return a > b or (a == b and n1 > n2)


def impact_ratios(
    y_pred: Any = None,
    sensitive_features: Any = None,
    *,
    scores: Any = None,
    lower_is_better: bool = False,
    data: Any = None,
    exclude_small: bool = True,
    min_share: float = MIN_SHARE,
    alpha: float = 0.05,
) -> pd.DataFrame:
    r"""Impact-ratio tables as published bias audits lay them out (NYC LL144, EEOC four-fifths).

    No label is needed. For each attribute (each column of ``sensitive_features`` alone and, with
    two or more, their full intersection, named ``"a x b"``) and each category c:
    rate r_c = s_c / n_c (selected, or scoring strictly above the full sample's median with
    ``scores=``), impact ratio r_c / r_ref (r_ref: the highest rate among categories not
    excluded; the reference reads 1.0), and a two-sided test of r_c − r_ref: Fisher's exact
    test where an expected cell count is below 5, the pooled two-proportion z-test otherwise.

    Unknown values (None, NaN, an empty string) are counted per attribute in
    ``result.attrs["unknown"]`` and left out of that attribute's table only (a row with unknown
    sex still counts in the race table). Rows with an unknown prediction/score are left out of
    every table (``attrs["unknown_outcome"]``). A category with fewer than ``min_share`` of the
    attribute's known rows is ``excluded`` from the ratios (listed with count and rate, never the
    reference) unless ``exclude_small=False``.

    Args:
        y_pred: 0/1 predictions (1 = selected, the beneficial outcome), or a column name of
            ``data``. Exactly one of ``y_pred`` and ``scores``.
        sensitive_features: group values (a Series, a DataFrame/dict of columns, or column
            name(s) of ``data``).
        scores: numeric scores for the scoring rate (share above the full sample's median).
        lower_is_better: with ``scores``: a lower score is favourable (count strictly below).
        data: a DataFrame when the arguments are column names.
        exclude_small: apply the 2 % rule (default on).
        min_share: the share below which a category is excluded (default 0.02).
        alpha: level of the ``significant`` column (unadjusted p < alpha).

    Returns:
        DataFrame with columns attribute, category, n, selected (``scored_above``),
        selection_rate (``scoring_rate``), impact_ratio, excluded, reference, share, z,
        p_value, test, significant. ``attrs``: ``kind``, ``unknown``, ``unknown_outcome``,
        ``median`` (scoring), ``min_share``, ``exclude_small``, ``alpha``.

    Example:
        >>> import ofijax
        >>> t = ofijax.impact_ratios([1, 1, 0, 1, 0, 0, 0, 1], ["a", "a", "a", "a", "b", "b", "b", "b"])
        >>> t[["category", "n", "selected", "selection_rate", "test"]]
          category  n  selected  selection_rate          test
        0        a  4         3            0.75     reference
        1        b  4         1            0.25  Fisher exact
        >>> t["impact_ratio"].round(4).tolist(), round(float(t["p_value"][1]), 4)
        ([1.0, 0.3333], 0.4857)
    """
    if (y_pred is None) == (scores is None):
        raise ValueError("y_pred: pass exactly one of y_pred (0/1 selections) and scores= (the scoring rate).")
    if sensitive_features is None:
        raise ValueError("sensitive_features: required (the group column(s)).")
    if not (isinstance(min_share, (int, float)) and 0.0 <= float(min_share) < 1.0):
        raise ValueError(f"min_share: must be a number in [0, 1); got {min_share!r}.")
    from ofijax._validation import check_fraction

    alpha = check_fraction(alpha, "alpha", "0.05")
    from ofijax._validation import align_pandas

    sf = _as_frame(sensitive_features, data)
    oname = "scores" if scores is not None else "y_pred"
    outcome = _column(scores if scores is not None else y_pred, data, oname)
    aligned = align_pandas(**{"sensitive_features": sf, oname: outcome})
    sf, outcome = aligned["sensitive_features"], aligned[oname]
    n = len(sf)
    median = None
    if scores is not None:
        sel, known_out, median = _scored(outcome, n, bool(lower_is_better))
    else:
        sel, known_out = _selected(outcome, n)
    cols = [str(c) for c in sf.columns]
    codes_of, cats_of, known_of = [], [], []
    for j in range(len(cols)):
        col = sf.iloc[:, j]
        unknown_j = _is_unknown(col)
        codes, uniq = pd.factorize(col.astype(object).where(~unknown_j, None), use_na_sentinel=True)
        labels = np.asarray([str(u) for u in uniq], dtype=object)
        names, inverse = np.unique(labels, return_inverse=True) if len(labels) else (labels, np.arange(0))
        codes = np.where(codes >= 0, inverse.reshape(-1)[np.maximum(codes, 0)] if len(labels) else 0, -1)
        codes_of.append(codes.astype(np.int64))
        cats_of.append([str(x) for x in names])
        known_of.append(codes >= 0)
    attrs: list[tuple[str, np.ndarray, np.ndarray, list]] = [
        (c, known_of[j], codes_of[j], cats_of[j]) for j, c in enumerate(cols)]
    if len(cols) >= 2:
        known_all = np.logical_and.reduce(known_of)
        combo = np.zeros(n, dtype=np.int64)
        for j in range(len(cols)):
            combo = combo * max(len(cats_of[j]), 1) + np.maximum(codes_of[j], 0)
        ucombo, inv = np.unique(combo[known_all], return_inverse=True)
        full = np.full(n, -1, dtype=np.int64)
        full[known_all] = inv.reshape(-1)
        labels = []
        for v in ucombo.tolist():
            parts = []
            for j in reversed(range(len(cols))):
                k = max(len(cats_of[j]), 1)
                parts.append(cats_of[j][v % k])
                v //= k
            labels.append(" & ".join(reversed(parts)))
        attrs.append((" x ".join(cols), known_all, full, labels))
    rows = []
    unknown: dict[str, int] = {}
    for name, known, codes_all, cats in attrs:
        unknown[name] = int((~known & known_out).sum())
        use = known & known_out
        codes = codes_all[use]
        s_use = sel[use]
        nc = np.bincount(codes, minlength=len(cats)).astype(np.int64)
        sc = np.bincount(codes[s_use == 1], minlength=len(cats)).astype(np.int64)
        present = nc > 0
        if not present.all():  # categories seen only with an unknown outcome
            cats = [c for c, keep in zip(cats, present) if keep]
            nc, sc = nc[present], sc[present]
        rows += _attribute_rows(name, cats, nc, sc, float(min_share), bool(exclude_small))
    return _finish(rows, scoring=scores is not None, unknown=unknown, unknown_outcome=int((~known_out).sum()),
                   median=median, lower_is_better=lower_is_better, min_share=min_share,
                   exclude_small=exclude_small, alpha=alpha)


def _attribute_rows(name: str, cats: list, nc: np.ndarray, sc: np.ndarray, min_share: float,
                    exclude_small: bool) -> list[dict]:
    """The rows of one attribute's table from its categories' exact counts."""
    rows = []
    total = int(nc.sum())
    share = nc / total if total else np.zeros(len(cats))
    excluded = (share < float(min_share)) if exclude_small else np.zeros(len(cats), bool)
    ref = None
    for k in range(len(cats)):
        if not excluded[k] and (ref is None or _better(int(sc[k]), int(nc[k]), int(sc[ref]), int(nc[ref]))):
            ref = k
    for k in range(len(cats)):
        row = {"attribute": name, "category": str(cats[k]), "n": int(nc[k]), "selected": int(sc[k]),
               "selection_rate": int(sc[k]) / int(nc[k]), "impact_ratio": math.nan,
               "excluded": bool(excluded[k]), "reference": k == ref, "share": float(share[k]),
               "z": math.nan, "p_value": math.nan, "test": ""}
        if excluded[k]:
            row["test"] = f"excluded (< {100 * float(min_share):g}% of known)"
        elif k == ref:
            row["test"] = "reference"
            row["impact_ratio"] = 1.0 if sc[k] > 0 else math.nan
        else:
            s1, n1, s2, n2 = int(sc[k]), int(nc[k]), int(sc[ref]), int(nc[ref])
            if s2 > 0:
                row["impact_ratio"] = (s1 * n2) / (n1 * s2)
            z, pz = two_proportion_z(s1, n1, s2, n2)
            row["z"] = z
            col1, col0, nn = s1 + s2, (n1 - s1) + (n2 - s2), n1 + n2
            exp_min = min(n1 * col1, n1 * col0, n2 * col1, n2 * col0) / nn
            if exp_min < FISHER_BELOW:
                row["p_value"] = fisher_exact_two_sided(s1, n1 - s1, s2, n2 - s2)
                row["test"] = "Fisher exact"
            else:
                row["p_value"] = pz
                row["test"] = "z-test (normal approximation)"
        rows.append(row)
    return rows


def _finish(rows, *, scoring, unknown, unknown_outcome, median, lower_is_better, min_share, exclude_small,
            alpha) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=["attribute", "category", "n", "selected", "selection_rate", "impact_ratio",
                                      "excluded", "reference", "share", "z", "p_value", "test"])
    out["n"] = out["n"].astype(np.int64)
    out["selected"] = out["selected"].astype(np.int64)
    out["significant"] = out["p_value"].to_numpy(dtype=np.float64) < float(alpha)
    if scoring:
        out = out.rename(columns={"selected": "scored_above", "selection_rate": "scoring_rate"})
    out.attrs.update({
        "kind": "scoring" if scoring else "selection", "unknown": unknown,
        "unknown_outcome": unknown_outcome, "median": median,
        "lower_is_better": bool(lower_is_better) if scoring else None,
        "min_share": float(min_share), "exclude_small": bool(exclude_small), "alpha": float(alpha),
    })
    return out


def _attribute_specs(names: list) -> list:
    """``(attribute, column indices)``: each column alone, then (with two or more) their full
    intersection, named ``"a x b"``: the tables every impact-ratio report has."""
    specs = [(c, [j]) for j, c in enumerate(names)]
    if len(names) >= 2:
        specs.append((" x ".join(names), list(range(len(names)))))
    return specs


def impact_from_counts(
    groups: Any,
    names: Any,
    n: Any,
    selected: Any,
    *,
    exclude_small: bool = True,
    min_share: float = MIN_SHARE,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """:func:`impact_ratios` from per-group counts of the intersectional groups (every value
    known), as the streaming audit has them: each attribute's table sums the intersections.

    >>> from ofijax.auditing._impact import impact_from_counts
    >>> t = impact_from_counts([("F", "A"), ("F", "B"), ("M", "A")], ["sex", "race"], [10, 20, 30], [5, 5, 15])
    >>> t[t["attribute"] == "sex"][["category", "n", "selected"]].values.tolist()
    [['F', 30, 10], ['M', 30, 15]]
    """
    groups = [g if isinstance(g, tuple) else (g,) for g in groups]
    names = [str(x) for x in names]
    n = np.asarray(n, dtype=np.int64)
    selected = np.asarray(selected, dtype=np.int64)
    rows: list[dict] = []
    unknown: dict[str, int] = {}
    specs = _attribute_specs(names)
    for name, idx in specs:
        keys = [" & ".join(str(g[j]) for j in idx) for g in groups]
        cats = sorted(set(keys))
        pos = {c: k for k, c in enumerate(cats)}
        nc = np.zeros(len(cats), np.int64)
        sc = np.zeros(len(cats), np.int64)
        for key_, a, b in zip(keys, n.tolist(), selected.tolist()):
            nc[pos[key_]] += a
            sc[pos[key_]] += b
        unknown[name] = 0
        rows += _attribute_rows(name, cats, nc, sc, float(min_share), bool(exclude_small))
    return _finish(rows, scoring=False, unknown=unknown, unknown_outcome=0, median=None, lower_is_better=False,
                   min_share=min_share, exclude_small=exclude_small, alpha=alpha)


_BIN_SHIFT = 48  # 2**16 bins over the order-preserving 64-bit keys of float64 scores


def _keys(v: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of finite float64 values (−0.0 is read as 0.0)."""
    u = (np.asarray(v, dtype=np.float64) + 0.0).view(np.uint64)
    neg = (u >> np.uint64(63)).astype(bool)
    return np.where(neg, ~u, u | np.uint64(1 << 63))


def scoring_from_batches(
    make_batches: Any,
    group_names: Any,
    score: str,
    *,
    lower_is_better: bool = False,
    exclude_small: bool = True,
    min_share: float = MIN_SHARE,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """:func:`impact_ratios` with ``scores=`` over data read in batches, in two passes, exactly.

    ``make_batches()`` returns a fresh iterable of DataFrames holding ``group_names`` (None/NaN or
    an empty string = unknown) and ``score``. Pass 1 counts, per combination of group values, the
    finite scores in 2^16 bins of their order-preserving 64-bit keys; the median's ranks fall in at
    most two bins, whose values pass 2 collects (with their group combination). The median is then
    exact (the mean of the two middle values, as numpy.median), and so is every count above (or
    below) it: bins beyond the median's bin count whole, its own bin value by value.

    >>> import pandas as pd
    >>> from ofijax.auditing._impact import scoring_from_batches
    >>> df = pd.DataFrame({"g": list("aaaaabbbbb"), "s": [1, 2, 3, 3, 3, 4, 5, 9, 3, 0]})
    >>> t = scoring_from_batches(lambda: [df.iloc[:4], df.iloc[4:]], ["g"], "s")
    >>> t.attrs["median"], t["scored_above"].tolist()
    (3.0, [0, 3])
    """
    names = [str(c) for c in group_names]
    combos: dict = {}
    hist: list[np.ndarray] = []
    unknown_outcome = 0

    def codes_of(frame: pd.DataFrame) -> np.ndarray:
        """Global codes of the rows' combinations (one dictionary lookup per distinct one)."""
        n = len(frame)
        combo = np.zeros(n, dtype=np.int64)
        uniqs = []
        for c in names:
            unk = _is_unknown(frame[c])
            codes, uniq = pd.factorize(frame[c].astype(object).where(~unk, None), use_na_sentinel=True)
            uniqs.append([None] + [str(u) for u in uniq])
            combo = combo * (len(uniq) + 1) + (codes + 1)
        present, inverse = np.unique(combo, return_inverse=True)
        glob = np.empty(present.size, dtype=np.int64)
        for i, v in enumerate(present.tolist()):
            parts = []
            for u in reversed(uniqs):
                parts.append(u[v % len(u)])
                v //= len(u)
            key = tuple(reversed(parts))
            c = combos.get(key)
            if c is None:
                c = combos[key] = len(combos)
                hist.append(np.zeros(1 << (64 - _BIN_SHIFT), dtype=np.int64))
            glob[i] = c
        return glob[inverse.reshape(-1)]

    for frame in make_batches():  # pass 1: per-combination histograms of the keys
        v = pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(v)
        unknown_outcome += int((~ok).sum())
        codes = codes_of(frame)[ok]
        bins = (_keys(v[ok]) >> np.uint64(_BIN_SHIFT)).astype(np.int64)
        for c in np.unique(codes):
            hist[c] += np.bincount(bins[codes == c], minlength=hist[c].size)
    total = np.sum(hist, axis=0) if hist else np.zeros(1 << (64 - _BIN_SHIFT), np.int64)
    n_all = int(total.sum())
    if n_all == 0:
        raise ValueError(f"scores: column {score!r} has no finite numeric score.")
    cum = np.cumsum(total)
    k_lo, k_hi = (n_all - 1) // 2, n_all // 2
    b_lo, b_hi = int(np.searchsorted(cum, k_lo + 1)), int(np.searchsorted(cum, k_hi + 1))
    vals, vcodes = [], []
    for frame in make_batches():  # pass 2: the values of the median's bins
        v = pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.isfinite(v)
        bins = np.full(v.size, -1, dtype=np.int64)
        bins[ok] = (_keys(v[ok]) >> np.uint64(_BIN_SHIFT)).astype(np.int64)
        hit = (bins == b_lo) | (bins == b_hi)
        if hit.any():
            vals.append(v[hit] + 0.0)
            vcodes.append(codes_of(frame)[hit])
    vals_a = np.concatenate(vals) if vals else np.zeros(0)
    codes_a = np.concatenate(vcodes) if vcodes else np.zeros(0, np.int64)
    order = np.argsort(vals_a, kind="stable")
    before = int(cum[b_lo - 1]) if b_lo > 0 else 0
    srt = vals_a[order]
    median = float(np.mean([srt[k_lo - before], srt[k_hi - before]]))
    mb = int(_keys(np.array([median]))[0] >> np.uint64(_BIN_SHIFT))
    in_mb = (_keys(vals_a) >> np.uint64(_BIN_SHIFT)).astype(np.int64) == mb if vals_a.size else np.zeros(0, bool)
    beyond = (vals_a < median) if lower_is_better else (vals_a > median)
    k = len(combos)
    n_c = np.array([int(h.sum()) for h in hist], dtype=np.int64)
    hit_c = np.array([int(h[:mb].sum() if lower_is_better else h[mb + 1:].sum()) for h in hist], dtype=np.int64)
    hit_c += np.bincount(codes_a[in_mb & beyond], minlength=k).astype(np.int64)
    keys_ = list(combos)  # code order
    rows: list[dict] = []
    unknown: dict[str, int] = {}
    specs = _attribute_specs(names)
    for name, idx in specs:
        acc: dict = {}
        unknown[name] = 0
        for code, key in enumerate(keys_):
            parts = [key[j] for j in idx]
            if any(p is None for p in parts):
                unknown[name] += int(n_c[code])
                continue
            label = " & ".join(parts)
            a = acc.setdefault(label, [0, 0])
            a[0] += int(n_c[code])
            a[1] += int(hit_c[code])
        cats = sorted(c for c, (nn, _) in acc.items() if nn > 0)
        rows += _attribute_rows(name, cats, np.array([acc[c][0] for c in cats], np.int64),
                                np.array([acc[c][1] for c in cats], np.int64), float(min_share), bool(exclude_small))
    return _finish(rows, scoring=True, unknown=unknown, unknown_outcome=unknown_outcome, median=median,
                   lower_is_better=lower_is_better, min_share=min_share, exclude_small=exclude_small, alpha=alpha)


def impact_section(table: pd.DataFrame) -> dict:
    """The ``impact_ratios`` section of report.json: the rows, the unknown counts and the rules."""
    a = table.attrs
    rows = []
    for r in table.to_dict("records"):
        rows.append({k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()})
    kind = a.get("kind", "selection")
    rule = (f"Categories under {100 * a.get('min_share', MIN_SHARE):g}% of the rows with a known value are "
            "left out of the impact ratios (listed, never the reference); --keep-small turns this off"
            if a.get("exclude_small", True) else "no category excluded (--keep-small)")
    return {
        "kind": kind, "rows": rows, "unknown": dict(a.get("unknown", {})),
        "unknown_outcome": a.get("unknown_outcome", 0), "median": a.get("median"),
        "lower_is_better": a.get("lower_is_better"), "exclusion": rule,
        "min_share": a.get("min_share"), "exclude_small": a.get("exclude_small"),
        "alpha": a.get("alpha"),
        "test": ("per row, the rate's difference from the reference category: Fisher's exact test "
                 f"(two-sided) when an expected cell is below {FISHER_BELOW:g}, else the pooled "
                 "two-proportion z-test (normal approximation); unadjusted"),
        "reference": "the category with the highest rate among those not excluded (impact ratio 1.00)",
    }
