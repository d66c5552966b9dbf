"""Summaries of a statistic's values: the :class:`Summary` type and the host side of streaming.

Owns :class:`Summary` (count, moments, histogram, quantiles; intervals; JSON save/load), the
histogram plan and its bin rule (:func:`make_bins`), the per-chunk partial results
(:class:`ChunkStats`), the exact host accumulator (:class:`Acc`: Python-int counts, float64
Chan–Welford moments), :func:`merge_summaries`, :func:`finalize` and the NumPy reference
:func:`summary_from_values`. The device side (jitted blocks over chunks) is :mod:`._montecarlo`.

Histogram convention (numpy.histogram's): bin k is [e_k, e_{k+1}), the last bin is closed
[e_{bins−1}, e_bins]; ``below``/``above`` count the defined values outside [e_0, e_bins]. The edges
are the exact rationals E_k = lo + k (hi − lo)/bins, with lo and hi read as the decimals they print
as (``range=(-0.3, 0.7)`` means −3/10 and 7/10), rounded once to float64 for display. The bin of a value
x is decided against E_k with a snap tolerance τ = 2^-40 max(|lo|, |hi|): x is taken to equal an
edge when |x − fl(E_k)| ≤ τ. **Proven rule**: if the true value is a rational a/q and the float64
value is within τ/2 of it (core metrics of CMs are within 1 ulp), and every edge E_k = u_k/v_k
satisfies q v_k < 1/(2τ) ≈ 5e11 / max(|lo|, |hi|) (two distinct rationals then differ by more than
2τ), the assignment equals the exact rational one. E.g. B = d/n with n ≤ 10^6 on 10^5 bins of
[−1, 1] is binned exactly, and so are the values d/n lying exactly on edges.

Lattice histograms (``lattice=q``): one bin per attainable value k/q in [lo, hi] (edges at
(k ± ½)/q); values are rounded to the nearest k/q and any value off that lattice by more than
1e-9 (in units of 1/q) makes the run fail with a ValueError naming ``lattice``. Quantiles are then
exact inverse CDFs: the smallest attainable value whose empirical CDF is ≥ the level (the same
definition as :meth:`ofijax.distributions.PMF.quantile`).
"""

from __future__ import annotations

import builtins
import json
import math
from fractions import Fraction
from statistics import NormalDist
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax._validation import check_fraction

__all__ = [
    "Summary", "ChunkStats", "merge_summaries", "finalize", "wilson_interval", "SCHEMA_VERSION", "check_saved",
    "summary_from_values", "make_bins",
]

#: Quantile levels of a Summary when none are asked for (the usual two-sided 99/95/90% ends,
#: quartiles and the median).
DEFAULT_QUANTILES = (0.005, 0.025, 0.05, 0.25, 0.5, 0.75, 0.95, 0.975, 0.995)

#: Version of the saved form of :class:`Summary` (``to_dict``/``to_json``).
SCHEMA_VERSION = 1

#: Relative snap tolerance τ of the bin rule (the proof in the module docstring needs it well
#: above float64 rounding of a metric, ~2^-52, and well below the spacing of distinct edges).
_SNAP = 2.0**-40
#: Off-lattice tolerance of lattice histograms, in units of 1/q.
LATTICE_TOL = 1e-9


def check_saved(d: Any, name: str) -> None:
    """Refuse (``ValueError`` naming ``d``) anything but a saved ofijax ``name`` ("Summary",
    "PMF") of this :data:`SCHEMA_VERSION`."""
    if not isinstance(d, dict) or d.get("kind") != f"ofijax.{name}":
        raise ValueError(f"d: not a saved ofijax {name} (expected kind 'ofijax.{name}').")
    if d.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"d: schema_version {d.get('schema_version')!r} is not supported "
                         f"(this ofijax reads version {SCHEMA_VERSION}).")


def _lattice_values(edges: np.ndarray, q: int) -> np.ndarray:
    """k/q for the bins of a lattice histogram (edges at (k ± ½)/q)."""
    k0 = int(round(float(edges[0]) * q + 0.5))
    return (k0 + np.arange(len(edges) - 1, dtype=np.float64)) / q


def wilson_interval(k: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    r"""Wilson score interval for a binomial proportion k / total.

    .. math:: \frac{\hat p + z^2/2N \pm z\sqrt{\hat p(1-\hat p)/N + z^2/4N^2}}{1 + z^2/N}

    (its ends are 0 and 1 at k = 0 and k = total). ``(nan, nan)`` when total is 0.

    Example:
        >>> from ofijax.distributions._summary import wilson_interval
        >>> [round(v, 4) for v in wilson_interval(5, 100)]
        [0.0215, 0.1118]
    """
    if total <= 0:
        return (math.nan, math.nan)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = k / total
    den = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / den
    half = z / den * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == total else min(1.0, centre + half)
    return (lo, hi)


class Summary(NamedTuple):
    """Streaming summary of a statistic's values.

    Attributes:
        count: number of defined (non-NaN) values, a Python int.
        undefined: number of NaN values (excluded from everything else), a Python int.
        mean: mean of the defined values (float64, NaN when ``count`` is 0).
        var: population variance (ddof = 0) of the defined values.
        min: smallest defined value.
        max: largest defined value.
        hist: int64 counts per bin over ``edges``: bin k is [e_k, e_{k+1}), the last bin closed
            (numpy.histogram's convention, decided exactly on lattices; see the module notes).
        edges: float64 bin edges, ``bins + 1`` of them.
        below: defined values below ``edges[0]``.
        above: defined values above ``edges[-1]``.
        quantile_levels: levels of ``quantiles``.
        quantiles: with ``lattice``: exact inverse-CDF quantiles (the smallest attainable value
            whose CDF ≥ level); otherwise interpolated linearly inside bins. NaN when the level
            falls in the mass below or above the histogram range.
        lattice: q when the histogram has one bin per attainable value k/q, else None.
    """

    count: int
    undefined: int
    mean: float
    var: float
    min: float
    max: float
    hist: np.ndarray
    edges: np.ndarray
    below: int
    above: int
    quantile_levels: np.ndarray
    quantiles: np.ndarray
    lattice: int | None = None

    @property
    def std(self) -> float:
        """Population standard deviation."""
        return math.sqrt(self.var) if self.var == self.var else math.nan

    @property
    def stderr(self) -> float:
        """Monte Carlo standard error of ``mean``: std / √count."""
        return self.std / math.sqrt(self.count) if self.count else math.nan

    @property
    def values(self) -> np.ndarray:
        """The attainable values k/q of a lattice histogram (correctly rounded), else the bin
        centres, float64."""
        if self.lattice:
            return _lattice_values(self.edges, self.lattice)
        return (self.edges[:-1] + self.edges[1:]) / 2

    def mean_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Normal interval mean ± z · stderr for the expectation of the statistic."""
        z = NormalDist().inv_cdf(0.5 + check_fraction(confidence, "confidence") / 2)
        return (self.mean - z * self.stderr, self.mean + z * self.stderr)

    def below_interval(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(estimate, low, high) of P(X < edges[0]) (Wilson interval)."""
        return (self.below / self.count if self.count else math.nan,
                *wilson_interval(self.below, self.count, check_fraction(confidence, "confidence")))

    def above_interval(self, confidence: float = 0.95) -> tuple[float, float, float]:
        """(estimate, low, high) of P(X > edges[-1]) (Wilson interval)."""
        return (self.above / self.count if self.count else math.nan,
                *wilson_interval(self.above, self.count, check_fraction(confidence, "confidence")))

    def tail_count(self, t: float, side: str = "abs") -> int:
        """Number of values with X ≥ t (``"above"``), X ≤ t (``"below"``) or |X| ≥ |t| (``"abs"``).

        Exact from the histogram where t is an attainable value (``lattice``) or a bin edge; any
        other t is refused (ValueError naming ``t``), since the histogram cannot tell.
        """
        if side not in ("above", "below", "abs"):
            raise ValueError(f"side: must be 'above', 'below' or 'abs'; got {side!r}.")
        if side == "abs":
            a = abs(float(t))
            if a == 0:
                return self.count
            return self.tail_count(a, "above") + self.tail_count(-a, "below")
        full = np.concatenate([[self.below], self.hist, [self.above]]).astype(np.int64)
        if self.lattice:
            q, nb = self.lattice, self.hist.size
            kmin = int(round(float(self.values[0]) * q))
            kmax = kmin + nb - 1
            ft = Fraction(repr(float(t))) * q
            if side == "above":  # values k/q ≥ t: k ≥ ceil(t q)
                k = math.ceil(ft)
                if k > kmax:
                    return 0 if self.above == 0 else self._refuse_t(t)
                if k < kmin:
                    return self.count if self.below == 0 else self._refuse_t(t)
                return int(full[1 + k - kmin:].sum())
            k = math.floor(ft)  # values k/q ≤ t: k ≤ floor(t q)
            if k < kmin:
                return 0 if self.below == 0 else self._refuse_t(t)
            if k > kmax:
                return self.count if self.above == 0 else self._refuse_t(t)
            return int(full[: 2 + k - kmin].sum())
        e = self.edges
        tau = _SNAP * max(abs(float(e[0])), abs(float(e[-1])))
        j = np.flatnonzero(np.abs(e - float(t)) <= tau)
        nb = self.hist.size
        if j.size == 0:
            return self._refuse_t(t)
        j = int(j[0])
        if side == "above" and j < nb:  # X ≥ e_j: bins j.. and above
            return int(full[j + 1:].sum())
        if side == "below" and j == nb:  # X ≤ e_bins: all but above
            return int(full[:-1].sum())
        # a value equal to e_j shares bin j (or the closed last bin) with larger values
        return self._refuse_t(t)

    def _refuse_t(self, t):
        raise ValueError(
            f"t: {t!r} is not a point where this histogram is exact (an attainable value of a "
            "lattice histogram, for side='above' a bin edge below the top one, for side='below' the "
            "top edge); rerun with "
            "lattice=q (q = n for B, lcm(n_i, n_j) for OFI) or with t on a bin edge.")

    def tail_probability(self, t: float, side: str = "abs",
                         confidence: float = 0.95) -> tuple[float, float, float]:
        """(estimate, low, high): the fraction of values in the tail of :meth:`tail_count`, with
        its Wilson interval."""
        k = self.tail_count(t, side)
        return (k / self.count if self.count else math.nan,
                *wilson_interval(k, self.count, check_fraction(confidence, "confidence")))

    def value_at_rank(self, r: int, upper: bool = False) -> float:
        """The r-th smallest defined value (1-based) read off the histogram: exact on a lattice,
        else the left (``upper=False``) or right edge of its bin; ∓inf below/above the range."""
        cum = np.cumsum(np.concatenate([[self.below], self.hist, [self.above]]))
        j = int(np.searchsorted(cum, r, side="left"))
        if j == 0:
            return -math.inf
        if j > self.hist.size:
            return math.inf
        if self.lattice:
            return float(self.values[j - 1])
        return float(self.edges[j] if upper else self.edges[j - 1])

    def quantile_intervals(self, confidence: float = 0.95) -> np.ndarray:
        """(levels, 2) distribution-free intervals for the quantiles: order statistics
        X_(l) ≤ ξ_p ≤ X_(u) with l, u = N p ∓ z √(N p (1 − p)) (normal approximation of the
        binomial rank), read off the histogram (:meth:`value_at_rank`)."""
        z = NormalDist().inv_cdf(0.5 + check_fraction(confidence, "confidence") / 2)
        out = np.full((len(self.quantile_levels), 2), np.nan)
        n = self.count
        for i, p in enumerate(np.asarray(self.quantile_levels, dtype=np.float64)):
            if n == 0:
                continue
            h = z * math.sqrt(n * p * (1 - p))
            lo = min(max(math.floor(n * p - h), 1), n)
            hi = min(max(math.ceil(n * p + h) + 1, 1), n)
            out[i] = (self.value_at_rank(lo), self.value_at_rank(hi, upper=True))
        return out

    def to_dict(self, settings: dict | None = None) -> dict:
        """A JSON-ready dict (``schema_version`` included); :meth:`from_dict` inverts it.

        ``settings`` (e.g. ``{"n": 10, "num_samples": 10**6, "key": key}``) is stored under
        ``"settings"``: numbers, strings, lists and dicts as they are, a JAX PRNG key as its
        ``jax.random.key_data`` words (``"key_data"``), NumPy values as lists.
        """
        def f(v):
            v = float(v)
            return v if math.isfinite(v) else repr(v)
        return {
            "schema_version": SCHEMA_VERSION, "kind": "ofijax.Summary",
            "count": int(self.count), "undefined": int(self.undefined),
            "mean": f(self.mean), "var": f(self.var), "min": f(self.min), "max": f(self.max),
            "hist": [int(v) for v in self.hist], "edges": [f(v) for v in self.edges],
            "below": int(self.below), "above": int(self.above),
            "quantile_levels": [float(v) for v in self.quantile_levels],
            "quantiles": [f(v) for v in self.quantiles],
            "lattice": None if self.lattice is None else int(self.lattice),
            "settings": _jsonable_settings(settings or {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Summary:
        """Inverse of :meth:`to_dict` (refuses another ``schema_version``)."""
        check_saved(d, "Summary")
        g = float
        return cls(int(d["count"]), int(d["undefined"]), g(d["mean"]), g(d["var"]), g(d["min"]),
                   g(d["max"]), np.asarray(d["hist"], dtype=np.int64),
                   np.asarray([g(v) for v in d["edges"]], dtype=np.float64), int(d["below"]),
                   int(d["above"]), np.asarray(d["quantile_levels"], dtype=np.float64),
                   np.asarray([g(v) for v in d["quantiles"]], dtype=np.float64),
                   None if d.get("lattice") is None else int(d["lattice"]))

    def to_json(self, settings: dict | None = None) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(settings))

    @classmethod
    def from_json(cls, text: str) -> Summary:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _jsonable_settings(x: Any) -> Any:
    """Settings as JSON values (a PRNG key as its key data, arrays as lists)."""
    if isinstance(x, dict):
        return {str(k): _jsonable_settings(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable_settings(v) for v in x]
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return {"key_data": np.asarray(jax.random.key_data(x)).tolist(),
                "impl": str(jax.random.key_impl(x))}
    if isinstance(x, (np.ndarray, jax.Array)):
        return np.asarray(x).tolist()
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"settings: cannot save {type(x).__name__} values; pass numbers, strings, "
                    "lists, dicts or a PRNG key.")


class ChunkStats(NamedTuple):
    """Per-chunk partial results (leading axis: chunks; then the statistic's columns)."""

    count: Any
    undefined: Any
    mean: Any
    m2: Any
    min: Any
    max: Any
    hist: Any  # (..., bins + 3): below, bins..., above, off-lattice


class Bins(NamedTuple):
    """The histogram plan (hashable): exact edges or a lattice."""

    bins: int
    lo: float
    hi: float
    lattice: int | None

    @property
    def kmin(self) -> int:
        return math.ceil(Fraction(repr(self.lo)) * self.lattice)

    @property
    def nbins(self) -> int:
        if self.lattice is None:
            return self.bins
        return math.floor(Fraction(repr(self.hi)) * self.lattice) - self.kmin + 1

    def edges(self) -> np.ndarray:
        if self.lattice is None:
            lo = Fraction(repr(self.lo))
            w = (Fraction(repr(self.hi)) - lo) / self.bins
            return np.array([float(lo + k * w) for k in builtins.range(self.bins + 1)])
        k = self.kmin + np.arange(self.nbins + 1, dtype=np.float64) - 0.5
        return k / self.lattice

    def tau(self) -> float:
        return _SNAP * max(abs(self.lo), abs(self.hi))


def make_bins(bins: int, lo: float, hi: float, lattice: int | None = None) -> Bins:
    """The histogram plan; refuses a lattice range without attainable values."""
    plan = Bins(int(bins), float(lo), float(hi), None if lattice is None else int(lattice))
    if plan.lattice is not None and plan.nbins < 1:
        raise ValueError(f"range: ({lo}, {hi}) holds no multiple of 1/{lattice}; widen it.")
    return plan




def _is_summary(x) -> bool:
    return isinstance(x, Summary)


def merge_summaries(*parts: Any, quantile_levels=None) -> Any:
    """Merge summaries of disjoint samples (same histogram edges) into one.

    Counts add; means and variances combine exactly (Chan et al.):
    mean = Σ n_i mean_i / n,  n var = Σ n_i var_i + Σ n_i (mean_i − mean)².
    Quantiles are recomputed from the merged histogram. Lists (or any pytrees) of summaries,
    as returned for statistics with several columns, merge entry by entry.

    Example:
        >>> import numpy as np
        >>> from ofijax.distributions._summary import summary_from_values
        >>> a = summary_from_values(np.array([0.0, 1.0]), bins=4, range=(0, 2))
        >>> b = summary_from_values(np.array([2.0]), bins=4, range=(0, 2))
        >>> m = merge_summaries(a, b)
        >>> (m.count, m.mean, round(m.var, 6), m.min, m.max, m.hist.tolist())
        (3, 1.0, 0.666667, 0.0, 2.0, [1, 0, 1, 1])
    """
    if not parts:
        raise ValueError("parts: pass at least one Summary to merge.")
    if all(isinstance(p, (list, tuple, dict)) and not _is_summary(p) for p in parts):
        try:
            return jax.tree.map(lambda *xs: merge_summaries(*xs, quantile_levels=quantile_levels),
                                *parts, is_leaf=_is_summary)
        except (ValueError, TypeError) as exc:
            if "parts:" in str(exc):
                raise
            raise TypeError("parts: summaries to merge must have the same structure (e.g. "
                            "lists of the same length).") from exc
    for p in parts:
        if not isinstance(p, Summary):
            raise TypeError(
                f"parts: each argument must be a Summary; got {type(p).__name__}. Unpack a list: "
                "merge_summaries(*summaries)."
            )
    edges = parts[0].edges
    for p in parts[1:]:
        if (p.edges.shape != edges.shape or not np.allclose(p.edges, edges)
                or p.lattice != parts[0].lattice):
            raise ValueError("parts: summaries must share the same histogram bins and range.")
    counts = np.array([p.count for p in parts], dtype=np.int64)
    means = np.array([p.mean if p.count else 0.0 for p in parts], dtype=np.float64)
    m2s = np.array([p.var * p.count if p.count else 0.0 for p in parts], dtype=np.float64)
    stats = ChunkStats(
        count=counts,
        undefined=np.array([p.undefined for p in parts]),
        mean=means,
        m2=m2s,
        min=np.array([p.min if p.count else np.inf for p in parts]),
        max=np.array([p.max if p.count else -np.inf for p in parts]),
        hist=np.stack([np.concatenate([[p.below], p.hist, [p.above], [0]]) for p in parts]),
    )
    levels = parts[0].quantile_levels if quantile_levels is None else quantile_levels
    return finalize(Acc.from_chunks(stats), edges, levels, parts[0].lattice)


class Acc:
    """Host accumulator: exact integer counts, float64 moments (one column)."""

    __slots__ = ("count", "undefined", "mean", "m2", "min", "max", "hist")

    def __init__(self, nbins: int):
        self.count = 0
        self.undefined = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.hist = np.zeros(nbins + 3, dtype=np.int64)  # below, bins, above, off-lattice

    @classmethod
    def from_chunks(cls, st: ChunkStats) -> Acc:
        acc = cls(np.shape(st.hist)[-1] - 3)
        acc.add_chunks(st)
        return acc

    def add_chunks(self, st: ChunkStats) -> None:
        cnt = np.asarray(st.count, dtype=np.int64)
        n_new = int(cnt.sum())
        self.undefined += int(np.asarray(st.undefined, dtype=np.int64).sum())
        self.hist += np.asarray(st.hist, dtype=np.int64).sum(axis=0)
        if n_new == 0:
            return
        w = cnt.astype(np.float64)
        means = np.asarray(st.mean, dtype=np.float64)
        mean_b = float(np.sum(w * means) / n_new)
        m2_b = float(np.sum(np.asarray(st.m2, dtype=np.float64)) + np.sum(w * (means - mean_b) ** 2))
        sel = cnt > 0
        self.min = min(self.min, float(np.min(np.asarray(st.min, dtype=np.float64)[sel])))
        self.max = max(self.max, float(np.max(np.asarray(st.max, dtype=np.float64)[sel])))
        n_a = self.count
        n = n_a + n_new
        delta = mean_b - self.mean
        self.mean += delta * (n_new / n)
        self.m2 += m2_b + delta * delta * (n_a * n_new / n)
        self.count = n


def _quantiles(hist: np.ndarray, edges: np.ndarray, below: int, total: int, levels,
               lattice: int | None = None) -> np.ndarray:
    levels = np.asarray(levels, dtype=np.float64)
    out = np.full(levels.shape, np.nan)
    if total == 0:
        return out
    cum = below + np.concatenate([[0], np.cumsum(hist)])  # mass at or below each edge
    for i, q in enumerate(levels.ravel()):
        if lattice:  # the smallest attainable value whose CDF ≥ q, compared exactly
            fq = Fraction(repr(float(q)))
            need = fq * total
            if need <= below and (below > 0 or q > 0):
                continue
            first = int(np.searchsorted(cum[1:], 1, side="left")) if q == 0 else None
            j = first if first is not None else next(
                (k for k in builtins.range(1, cum.size) if cum[k] >= need), None)
            if j is None or (first is None and j == 0):
                continue
            k = j if first is None else j + 1
            if k > hist.size:
                continue
            out.flat[i] = _lattice_values(edges, lattice)[k - 1]
            continue
        target = q * total
        if target < below or target > cum[-1]:
            continue
        j = int(np.searchsorted(cum, target, side="left"))
        if j == 0:
            out.flat[i] = edges[0]
            continue
        lo_c, hi_c = cum[j - 1], cum[j]
        frac = 0.0 if hi_c == lo_c else (target - lo_c) / (hi_c - lo_c)
        out.flat[i] = edges[j - 1] + frac * (edges[j] - edges[j - 1])
    return out


def finalize(acc: Acc, edges: np.ndarray, levels, lattice: int | None = None) -> Summary:
    """Turn a host accumulator into a :class:`Summary`."""
    below, above = int(acc.hist[0]), int(acc.hist[-2])
    hist = acc.hist[1:-2].copy()
    levels = np.asarray(DEFAULT_QUANTILES if levels is None else levels, dtype=np.float64)
    nan = math.nan
    return Summary(
        count=acc.count,
        undefined=acc.undefined,
        mean=acc.mean if acc.count else nan,
        var=acc.m2 / acc.count if acc.count else nan,
        min=acc.min if acc.count else nan,
        max=acc.max if acc.count else nan,
        hist=hist,
        edges=edges,
        below=below,
        above=above,
        quantile_levels=levels,
        quantiles=_quantiles(hist, edges, below, acc.count, levels, lattice),
        lattice=lattice,
    )


def summary_from_values(values, *, bins: int = 100, range=(-1.0, 1.0), quantiles=None,
                        lattice: int | None = None) -> Summary:
    """Summary of an in-memory array (reference implementation, NumPy float64).

    Bins with numpy.histogram on float64 ``np.linspace`` edges (no snapping), or, with
    ``lattice=q``, one bin per k/q by rounding.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    nan = np.isnan(x)
    ok = x[~nan]
    lo, hi = float(range[0]), float(range[1])
    plan = make_bins(bins, lo, hi, lattice)
    edges = np.linspace(lo, hi, bins + 1) if lattice is None else plan.edges()
    acc = Acc(plan.nbins)
    acc.undefined = int(nan.sum())
    acc.count = int(ok.size)
    if ok.size:
        acc.mean = float(ok.mean())
        acc.m2 = float(((ok - acc.mean) ** 2).sum())
        acc.min, acc.max = float(ok.min()), float(ok.max())
        if lattice is None:
            inside = (ok >= lo) & (ok <= hi)
            acc.hist[1:-2] = np.histogram(ok[inside], bins=bins, range=(lo, hi))[0]
            acc.hist[0] = int((ok < lo).sum())
            acc.hist[-2] = int((ok > hi).sum())
        else:
            k = np.round(ok * lattice).astype(np.int64) - plan.kmin
            acc.hist[0] = int((k < 0).sum())
            acc.hist[-2] = int((k >= plan.nbins).sum())
            acc.hist[1:-2] = np.bincount(k[(k >= 0) & (k < plan.nbins)], minlength=plan.nbins)
    return finalize(acc, edges, quantiles, lattice)

