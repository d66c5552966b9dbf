"""Exact PMFs, moments, samplers' public wrappers, Monte Carlo and thresholds (documented in
:mod:`ofijax.distributions`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as _v
from ofijax.metrics import ofi as _ofi

from . import _combinatorics as _C
from . import _montecarlo as _MC
from . import _pvalue as _P
from . import _sampling as _S
from ._montecarlo import Summary as Summary

#: The OFI paper's fixed flag threshold (≈ σ of B for ONE group under the uniform null).
PAPER_THRESHOLD = 0.3

_MAX_ENUM = 50_000_000  # matrices materialised by enumerate_confusion_matrices
_MAX_PAIRS = 40_000_000  # support pairs in the exact OFI convolution


# ----------------------------------------------------------------------------- validation


def _check_n(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, Integral):
        raise ValueError(
            f"{name}: must be a positive Python integer (a number of samples); got {n!r} "
            f"of type {type(n).__name__}."
        )
    n = int(n)
    if n <= 0:
        raise ValueError(f"{name}: must be a positive integer (n ≥ 1); got {n}.")
    return n


#: Largest n the samplers draw (int32 counts); larger n is refused with a clear error.
_SAMPLER_MAX_N = 2**31 - 4  # stars and bars draws positions in [0, n + 3)


def _check_sampler_n(n: Any) -> int:
    n = _check_n(n)
    if n > _SAMPLER_MAX_N:
        raise ValueError(
            f"n: the samplers return int32 counts, so n must be at most 2**31 − 4 = {_SAMPLER_MAX_N:,}; got {n:,}. "
            "Draw smaller groups (B = (FP − FN)/n is scale-free) or use the exact/saddlepoint tools."
        )
    return n


def _check_num_samples(num: Any) -> int:
    if isinstance(num, bool) or not isinstance(num, Real):
        raise ValueError(f"num_samples: must be a positive integer; got {num!r}.")
    if isinstance(num, Integral):
        val = int(num)
    else:
        f = float(num)
        if not math.isfinite(f) or f != math.floor(f):
            raise ValueError(f"num_samples: must be a whole number; got {num!r}.")
        val = int(f)
    if val <= 0:
        raise ValueError(f"num_samples: must be ≥ 1; got {num!r}.")
    return val


def _check_shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, Integral):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError as exc:
        raise ValueError(f"shape: must be a tuple of non-negative ints; got {shape!r}.") from exc
    if any(s < 0 for s in out) or any(
        isinstance(s, bool) or not isinstance(s, Integral) for s in shape
    ):
        raise ValueError(f"shape: must be a tuple of non-negative ints; got {shape!r}.")
    return out


def _check_four(x: Any, name: str) -> np.ndarray:
    arr = _v.as_numpy(x, name)
    if arr.shape != (4,):
        raise ValueError(
            f"{name}: must hold exactly 4 values in TP, FN, FP, TN order; got shape {arr.shape}."
        )
    return arr


def _check_probs(probs: Any, name: str = "probs") -> tuple[float, ...]:
    arr = _check_four(probs, name)
    arr = _v.check_probabilities(arr, name)
    if abs(arr.sum() - 1.0) > 1e-6:
        raise ValueError(
            f"{name}: the 4 probabilities must sum to 1; they sum to {arr.sum():.8g}. "
            "Normalise them (p / p.sum())."
        )
    return tuple(float(v) for v in arr / arr.sum())


def _check_alpha(alpha: Any) -> tuple[float, ...]:
    arr = _check_four(alpha, "alpha")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"alpha: must be 4 positive concentrations; got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    _v.check_finite(arr, "alpha")
    if np.any(arr <= 0):
        raise ValueError(
            f"alpha: Dirichlet concentrations must all be > 0; got {arr.tolist()}. "
            "Use alpha = (1, 1, 1, 1) for the uniform distribution on M(n)."
        )
    return tuple(float(v) for v in arr)


def _check_cm(cm: Any, name: str = "cm") -> tuple[int, ...]:
    arr = _check_four(cm, name)
    arr = _v.check_counts(arr, name)
    if arr.sum() <= 0:
        raise ValueError(f"{name}: the confusion matrix is empty (all four counts are 0).")
    return tuple(int(v) for v in arr)


def _null_probs(null: Any) -> tuple[float, ...] | None:
    """None for the uniform null, else p = cm / Σ cm from ONE reference CM (or probabilities)."""
    p = _P.null_probs(null, "null")
    if p is None:
        return None
    if p.shape != (4,):
        raise ValueError(f"null: must be one reference CM of 4 counts here; got shape {p.shape[:-1] + (4,)}.")
    return tuple(float(v) for v in p)


# ------------------------------------------------------------------------------ exact results


class PMF(NamedTuple):
    """A probability mass function on the rational support ``numerators / denominator``.

    Attributes:
        values: float64 support points (``numerators / denominator``), increasing.
        probs: float64 probabilities.
        numerators: int64 numerators (FP − FN for B; d_i n_j/g − d_j n_i/g for OFI).
        denominator: the common denominator (n for B; lcm(n_i, n_j) for OFI), a Python int.
        counts: exact numbers of matrices (tuple of Python ints) under the uniform null, else None.
        total: the number of matrices the counts add to (N(n) or N(n_i) N(n_j)), else None.
    """

    values: np.ndarray
    probs: np.ndarray
    numerators: np.ndarray
    denominator: int
    counts: tuple[int, ...] | None
    total: int | None

    def exact_values(self) -> list[Fraction]:
        """The support as Fractions."""
        return [Fraction(int(a), self.denominator) for a in self.numerators]

    def exact_probs(self) -> list[Fraction]:
        """The probabilities as Fractions (uniform null only)."""
        if self.counts is None:
            raise ValueError("exact_probs: only the uniform null has exact (counting) probabilities.")
        return [Fraction(c, self.total) for c in self.counts]

    def quantile(self, levels: Any) -> np.ndarray:
        r"""Inverse CDF on the lattice: the smallest support value v with P(X ≤ v) ≥ level.

        .. math:: Q(p) = \min\{v : F(v) ≥ p\}

        Compared exactly (Fractions of the counts) under the uniform null, else on the float64
        cumulative sum with a 1e-12 allowance. The same definition as the quantiles of a
        ``lattice`` :class:`Summary`.

        Example:
            >>> from ofijax.distributions import marginal_benefit_pmf
            >>> marginal_benefit_pmf(2).quantile([0.1, 0.3, 0.5, 0.7, 1.0]).tolist()
            [-1.0, -0.5, 0.0, 0.0, 1.0]
        """
        lv = np.asarray(levels, dtype=np.float64)
        if lv.size and not np.all((lv >= 0) & (lv <= 1)):
            raise ValueError(f"levels: must lie in [0, 1]; got {levels!r}.")
        out = np.empty(lv.shape)
        pos = np.flatnonzero(np.asarray(self.probs) > 0)
        if self.counts is not None:
            cum = np.cumsum(np.array(self.counts, dtype=object))
            for i, q in enumerate(lv.ravel()):
                need = Fraction(repr(float(q))) * self.total
                j = next(k for k in range(len(cum)) if cum[k] >= need and self.counts[k] > 0)
                out.flat[i] = self.values[j]
            return out
        cum = np.cumsum(self.probs)
        for i, q in enumerate(lv.ravel()):
            j = int(np.searchsorted(cum, q - 1e-12, side="left"))
            j = max(j, int(pos[0]))
            out.flat[i] = self.values[min(j, self.values.size - 1)]
        return out

    def tail_probability(self, t: float, side: str = "abs", exact: bool = False) -> Any:
        """P(|X| ≥ |t|) (``side="abs"``), P(X ≥ t) (``"above"``) or P(X ≤ t) (``"below"``).

        ``exact=True`` returns a Fraction (uniform null only). The point t is compared exactly
        with the rational support.

        Example:
            >>> from ofijax.distributions import marginal_benefit_pmf
            >>> pmf = marginal_benefit_pmf(10)
            >>> pmf.tail_probability(0.3, exact=True), pmf.tail_probability(0.4, exact=True)
            (Fraction(70, 143), Fraction(50, 143))

        (On the lattice d/10, P(|B| > 0.3) = P(|B| ≥ 0.4).)
        """
        if side not in ("abs", "above", "below"):
            raise ValueError(f"side: must be 'abs', 'above' or 'below'; got {side!r}.")
        ft = Fraction(repr(float(t))) * self.denominator
        num = [int(a) for a in self.numerators]
        if side == "abs":
            sel = [abs(a) >= abs(ft) for a in num]
        elif side == "above":
            sel = [a >= ft for a in num]
        else:
            sel = [a <= ft for a in num]
        if exact:
            if self.counts is None:
                raise ValueError("exact: only the uniform null has exact (counting) probabilities.")
            return Fraction(sum(c for c, s in zip(self.counts, sel) if s), self.total)
        if self.counts is not None:
            return sum(c for c, s in zip(self.counts, sel) if s) / self.total
        return math.fsum(float(p) for p, s in zip(self.probs, sel) if s)

    def to_dict(self) -> dict:
        """A JSON-ready dict with ``schema_version``; :meth:`from_dict` inverts it."""
        return {"schema_version": _MC.SCHEMA_VERSION, "kind": "ofijax.PMF",
                "numerators": [int(a) for a in self.numerators],
                "denominator": int(self.denominator),
                "probs": [float(p) for p in self.probs],
                "counts": None if self.counts is None else [str(c) for c in self.counts],
                "total": None if self.total is None else str(self.total)}

    @classmethod
    def from_dict(cls, d: dict) -> PMF:
        """Inverse of :meth:`to_dict` (big counts travel as decimal strings)."""
        if not isinstance(d, dict) or d.get("kind") != "ofijax.PMF":
            raise ValueError("d: not a saved ofijax PMF (expected kind 'ofijax.PMF').")
        if d.get("schema_version") != _MC.SCHEMA_VERSION:
            raise ValueError(f"d: schema_version {d.get('schema_version')!r} is not supported "
                             f"(this ofijax reads version {_MC.SCHEMA_VERSION}).")
        num = np.asarray(d["numerators"], dtype=np.int64)
        den = int(d["denominator"])
        counts = None if d["counts"] is None else tuple(int(c) for c in d["counts"])
        total = None if d["total"] is None else int(d["total"])
        return cls(num / den, np.asarray(d["probs"], dtype=np.float64), num, den, counts, total)


class Moments(NamedTuple):
    """Mean and variance; Fractions when the inputs are exact."""

    mean: Fraction | float
    var: Fraction | float


def num_confusion_matrices(n: int) -> int:
    r"""|M(n)|, the number of confusion matrices with n samples (Corollary B.2).

    .. math:: \mathcal N(n) = \binom{n+3}{3} = \frac{(n+1)(n+2)(n+3)}{6}

    Example:
        >>> from ofijax.distributions import num_confusion_matrices
        >>> [num_confusion_matrices(n) for n in (1, 2, 10, 100, 1000)]
        [4, 10, 286, 176851, 167668501]
    """
    return _C.num_cms(_check_n(n))


def cell_value_count(x: int, n: int) -> int:
    r"""C(x; n): the number of matrices of M(n) in which a given cell equals x (Theorem B.1).

    .. math:: C(x; n) = \binom{n - x + 2}{2} = \tfrac12 (n - x + 1)(n - x + 2),\quad 0 ≤ x ≤ n

    Example:
        >>> from ofijax.distributions import cell_value_count
        >>> [cell_value_count(x, 2) for x in (2, 1, 0)]
        [1, 3, 6]
    """
    n = _check_n(n)
    if isinstance(x, bool) or not isinstance(x, Integral) or not 0 <= int(x) <= n:
        raise ValueError(f"x: must be an integer cell value in [0, n] = [0, {n}]; got {x!r}.")
    return _C.cell_count(int(x), n)


def marginal_benefit_count(d: int, n: int) -> int:
    r"""Number of matrices of M(n) with FP − FN = d, i.e. with B = d / n.

    .. math:: \#\{FP - FN = d\} = \sum_{j=0}^{\lfloor r/2 \rfloor} (r - 2j + 1)
              = \left\lfloor \frac{(r + 2)^2}{4} \right\rfloor,\quad r = n - |d|

    (FN = j, FP = j + |d| or mirrored, and TP + TN = r − 2j has r − 2j + 1 splits.)

    Example:
        >>> from ofijax.distributions import marginal_benefit_count
        >>> [marginal_benefit_count(d, 2) for d in (-2, -1, 0, 1, 2)]
        [1, 2, 4, 2, 1]
    """
    n = _check_n(n)
    if isinstance(d, bool) or not isinstance(d, Integral):
        raise ValueError(f"d: must be an integer FP − FN; got {d!r}.")
    return _C.diff_count(int(d), n)


def enumerate_confusion_matrices(n: int) -> np.ndarray:
    """All of M(n), int64 (N(n), 4) in TP, FN, FP, TN layout, in rank order.

    Rank order: TP descending, then FP descending, then FN ascending (see
    :func:`rank_confusion_matrix`). Refused above 5e7 matrices (n ≈ 665).

    Example:
        >>> from ofijax.distributions import enumerate_confusion_matrices
        >>> enumerate_confusion_matrices(1).tolist()
        [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]]
    """
    n = _check_n(n)
    if _C.num_cms(n) > _MAX_ENUM:
        raise ValueError(
            f"n: M({n}) has {_C.num_cms(n):,} matrices, too many to materialise; use "
            "reduce_all(n, fn) to stream over them."
        )
    return _C.enumerate_cms(n)


def rank_confusion_matrix(cm: Any) -> np.ndarray:
    r"""Rank of each matrix of a (..., 4) integer stack within M(n), n = its total (int64).

    .. math:: \operatorname{rank} = \mathcal N(m - 1) + T(k - 1) + FN,\quad m = n - TP,\;
              k = m - FP + 1,\; T(k) = k (k + 1) / 2

    Example:
        >>> from ofijax.distributions import rank_confusion_matrix
        >>> rank_confusion_matrix([[1, 0, 0, 0], [0, 1, 0, 0]]).tolist()
        [0, 3]
    """
    arr = _v.check_counts(cm, "cm")
    if arr.ndim < 1 or arr.shape[-1] != 4:
        raise ValueError(f"cm: last axis must have length 4 (TP, FN, FP, TN); got {arr.shape}.")
    return _C.rank_cms(arr.astype(np.int64))


def unrank_confusion_matrix(rank: Any, n: int) -> jax.Array:
    """Inverse of :func:`rank_confusion_matrix` in JAX: int32 (..., 4) from ranks in [0, N(n)).

    Closed form (cube root, square root, integer corrections); needs N(n) < 2^32 (n ≤ 2949).

    Example:
        >>> import jax.numpy as jnp
        >>> from ofijax.distributions import unrank_confusion_matrix
        >>> unrank_confusion_matrix(jnp.arange(4), 1).tolist()
        [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]]
    """
    n = _check_n(n)
    if n > _S.UNRANK_MAX_N:
        raise ValueError(f"n: unranking needs N(n) < 2^32, i.e. n ≤ {_S.UNRANK_MAX_N}; got {n}.")
    if not _v.is_tracer(rank):
        r = _v.check_counts(rank, "rank")
        if r.size and r.max() >= _C.num_cms(n):
            raise ValueError(f"rank: must lie in [0, N(n)) = [0, {_C.num_cms(n)}).")
        rank = jnp.asarray(r.astype(np.uint32))
    return _S.unrank_cms_jit(rank, np.int32(n))


def marginal_benefit_pmf(n: int, probs: Any = None) -> PMF:
    r"""Exact PMF of B = (FP − FN) / n in O(n) (uniform or multinomial null).

    * ``probs=None``: every matrix of M(n) equally likely;
      P(B = d/n) = ⌊(n − |d| + 2)² / 4⌋ / N(n) (see :func:`marginal_benefit_count`).
    * ``probs`` (4 probabilities, TP, FN, FP, TN): CM ~ Multinomial(n, probs), with the trinomial
      sum P(FP − FN = d) = Σ_FN n! / (FP! FN! R!) p_FP^FP p_FN^FN (p_TP + p_TN)^R, FP = FN + d,
      computed in O(n) by the positive three-term recurrence of the coefficients of
      (p_FN/z + p_TP + p_TN + p_FP z)^n (relative error ≈ n·1e-16 even in the far tails).

    Example:
        >>> from ofijax.distributions import marginal_benefit_pmf
        >>> pmf = marginal_benefit_pmf(2)
        >>> pmf.numerators.tolist(), pmf.counts, pmf.total
        ([-2, -1, 0, 1, 2], (1, 2, 4, 2, 1), 10)
    """
    n = _check_n(n)
    if n > _P.EXACT_MAX_N:
        raise ValueError(
            f"n: the PMF of B has 2n + 1 = {2 * n + 1:,} support points; n up to {_P.EXACT_MAX_N:,} "
            "is supported (use marginal_benefit_moments or Monte Carlo for larger groups)."
        )
    num = np.arange(-n, n + 1, dtype=np.int64)
    if probs is None:
        counts = _C.diff_counts(n)
        total = _C.num_cms(n)
        return PMF(num / n, counts / total, num, n, tuple(int(c) for c in counts), total)
    p = _check_probs(probs)
    pr = np.exp(_P.log_diff_pmf(n, (p[1], p[2], p[0] + p[3])))
    return PMF(num / n, pr, num, n, None, None)


def marginal_benefit_moments(n: int, probs: Any = None) -> Moments:
    r"""Exact mean and variance of B.

    * Uniform null: computed from the exact counts (Fractions); equal to mean 0 and
      Var B = (n + 4) / (10 n) (Theorem D.2; Corollary D.4's (n + 4)/10 is a typo).
    * Multinomial(n, p): mean p_FP − p_FN, Var B = [(p_FP + p_FN) − (p_FP − p_FN)²] / n
      (Fractions when the probabilities are Fractions or ints, else floats).

    Example:
        >>> from fractions import Fraction
        >>> from ofijax.distributions import marginal_benefit_moments
        >>> marginal_benefit_moments(1)
        Moments(mean=Fraction(0, 1), var=Fraction(1, 2))
        >>> marginal_benefit_moments(4, [Fraction(1, 4)] * 4).var
        Fraction(1, 8)
    """
    n = _check_n(n)
    if probs is None:  # Theorem D.2 (checked against the exact counts in the tests)
        return Moments(Fraction(0), Fraction(n + 4, 10 * n))
    _check_probs(probs)  # validates
    raw = list(probs)
    pfp, pfn = _C.fraction_or_float(raw[2]), _C.fraction_or_float(raw[1])
    mean = pfp - pfn
    return Moments(mean, ((pfp + pfn) - mean * mean) / n)


def _pair_grid_pmf(pi: PMF, pj: PMF, exact: bool) -> PMF:
    """PMF of X − Y for independent X ~ pi, Y ~ pj on rational lattices."""
    ni, nj = pi.denominator, pj.denominator
    L = math.lcm(ni, nj)
    a, b = L // ni, L // nj
    if pi.numerators.size * pj.numerators.size > _MAX_PAIRS and ni != nj:
        raise ValueError(
            f"n_i: the exact OFI distribution for n_i={ni}, n_j={nj} has up to "
            f"{pi.numerators.size * pj.numerators.size:,} support points; use "
            "ofi_threshold(..., method='monte_carlo') instead."
        )
    off = 2 * L  # lattice −2L..2L → 0..4L
    if ni == nj:  # common lattice: a plain convolution
        if exact and pi.total * pj.total < 2**62:  # exact int64 counts (n ≲ 1600 each)
            cnt = np.convolve(np.asarray(pi.counts, dtype=np.int64),
                              np.asarray(pj.counts[::-1], dtype=np.int64))
            num = np.arange(-2 * ni, 2 * ni + 1, dtype=np.int64)
            counts = [int(c) for c in cnt]
            total = pi.total * pj.total
            return PMF(num / ni, np.array([c / total for c in counts]), num, ni, tuple(counts), total)
        pr = np.convolve(pi.probs, pj.probs[::-1])
        num = np.arange(-2 * ni, 2 * ni + 1, dtype=np.int64)
        return PMF(num / ni, pr, num, ni, None, None)
    width = 4 * L + 1
    dj = pj.numerators * b
    rows = max(1, (1 << 22) // dj.size)
    use_int = exact and pi.total * pj.total < 2**62
    acc = np.zeros(width, dtype=np.int64 if use_int else np.float64)
    ci = np.asarray(pi.counts, dtype=np.int64) if use_int else None
    cj = np.asarray(pj.counts, dtype=np.int64) if use_int else None
    for s in range(0, pi.numerators.size, rows):
        di = pi.numerators[s : s + rows, None] * a
        idx = (di - dj[None, :] + off).ravel()
        if use_int:
            np.add.at(acc, idx, (ci[s : s + rows, None] * cj[None, :]).ravel())
        else:
            acc += np.bincount(
                idx, weights=(pi.probs[s : s + rows, None] * pj.probs[None, :]).ravel(),
                minlength=width,
            )
    nz = np.flatnonzero(acc)
    num = nz.astype(np.int64) - off
    if use_int:
        total = pi.total * pj.total
        counts = tuple(int(c) for c in acc[nz])
        return PMF(num / L, acc[nz] / total, num, L, counts, total)
    return PMF(num / L, acc[nz], num, L, None, None)


def ofi_pmf(n_i: int, n_j: int, *, null: Any = "uniform") -> PMF:
    r"""Exact PMF of OFI = B_i − B_j for independent groups of sizes n_i and n_j.

    The convolution of the two B PMFs on the common lattice 1 / lcm(n_i, n_j). ``null`` is
    ``"uniform"`` (each group uniform on its M(n); exact integer counts out of N(n_i) N(n_j)) or a
    reference CM (4 counts) giving p = cm / Σ cm for both groups' Multinomial(n, p).

    Example:
        >>> from ofijax.distributions import ofi_pmf
        >>> pmf = ofi_pmf(1, 1)
        >>> pmf.numerators.tolist(), pmf.counts
        ([-2, -1, 0, 1, 2], (1, 4, 6, 4, 1))
    """
    n_i, n_j = _check_n(n_i, "n_i"), _check_n(n_j, "n_j")
    p = _null_probs(null)
    pi = marginal_benefit_pmf(n_i, p)
    pj = marginal_benefit_pmf(n_j, p)
    return _pair_grid_pmf(pi, pj, exact=p is None)


def ofi_moments(n_i: int, n_j: int, *, null: Any = "uniform") -> Moments:
    """Exact mean and variance of OFI for independent groups: Var = Var B_i + Var B_j.

    Example:
        >>> from ofijax.distributions import ofi_moments
        >>> ofi_moments(10, 10).var  # 2 × 7/50
        Fraction(7, 25)
    """
    n_i, n_j = _check_n(n_i, "n_i"), _check_n(n_j, "n_j")
    if isinstance(null, str):
        _null_probs(null)
        mi, mj = marginal_benefit_moments(n_i), marginal_benefit_moments(n_j)
    else:
        _null_probs(null)  # validates
        vals = np.asarray(null, dtype=object).tolist() if isinstance(null, np.ndarray) else list(null)
        if all(isinstance(v, (Integral, Fraction)) and not isinstance(v, bool) for v in vals):
            total = sum(Fraction(v) for v in vals)
            probs = [Fraction(v) / total for v in vals]
        else:
            total = float(sum(float(v) for v in vals))
            probs = [float(v) / total for v in vals]
        mi = marginal_benefit_moments(n_i, probs)
        mj = marginal_benefit_moments(n_j, probs)
    return Moments(mi.mean - mj.mean, mi.var + mj.var)


# ------------------------------------------------------------------------------------ samplers


def sample_uniform(key: jax.Array, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Exactly uniform draws from M(n): int32 (*shape, 4), TP, FN, FP, TN.

    One random 32-bit word per matrix: an integer r uniform on [0, N(n)) (rejection of the top
    2^32 mod N(n) words, refilled until none is left, so exactly uniform), unranked in closed form
    (TP from the cumulative C(x; n) by a cube root, FP from triangular numbers by a square root,
    then FN) — see :func:`unrank_confusion_matrix`. For n ≥ 2950 (N(n) ≥ 2^32) it uses stars and
    bars instead: three distinct sorted positions among n + 3, exact by rejection.

    This is NOT Multinomial(n, ¼, ¼, ¼, ¼), which concentrates near n/4 per cell.

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_uniform
        >>> cms = sample_uniform(jax.random.key(0), 10, (3,))
        >>> cms.shape, cms.dtype, cms.sum(-1).tolist()
        ((3, 4), dtype('int32'), [10, 10, 10])
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    return _S.uniform_cms(key, n, _check_shape(shape))


@functools.partial(jax.jit, static_argnums=(3,))
def _binomial_chain(key, n, p, shape):
    """:func:`_binomial_chain_core`, jitted: n is an argument, so every n shares one program."""
    return _binomial_chain_core(key, n, p, shape)


def _binomial_chain_core(key, n, p, shape):
    """Sequential binomials for large n (p: (..., 4) float).

    The remainders n − TP, … are kept in the default integer dtype (int32 holds every n < 2^31),
    so rows sum to n exactly; each binomial count is drawn in the default float (float32: its
    trial count is n rounded to 24 bits, a relative change below 6e-8) and clipped to the
    remainder.
    """
    k0, k1, k2 = jax.random.split(key, 3)
    it = jnp.result_type(int)
    ft = jnp.result_type(float)
    rest1 = p[..., 1] + p[..., 2] + p[..., 3]
    q1 = jnp.where(rest1 > 0, p[..., 1] / jnp.where(rest1 > 0, rest1, 1), 0.0)
    rest2 = p[..., 2] + p[..., 3]
    q2 = jnp.where(rest2 > 0, p[..., 2] / jnp.where(rest2 > 0, rest2, 1), 0.0)

    def draw(k, total, prob):
        x = jax.random.binomial(k, total.astype(ft), jnp.broadcast_to(prob, shape), shape)
        return jnp.clip(jnp.round(x).astype(it), 0, total)

    m0 = jnp.broadcast_to(jnp.asarray(n, dtype=it), shape)
    tp = draw(k0, m0, p[..., 0])
    m1 = m0 - tp
    fn = draw(k1, m1, q1)
    m2 = m1 - fn
    fp = draw(k2, m2, q2)
    return jnp.stack([tp, fn, fp, m2 - fp], axis=-1).astype(jnp.int32)


def sample_multinomial(key: jax.Array, n: int, probs: Any, shape: Sequence[int] = ()) -> jax.Array:
    """CM ~ Multinomial(n, probs), int32 (*shape, 4); ``probs`` in TP, FN, FP, TN order.

    Drawn as TP ~ Bin(n, p_TP), FN | TP ~ Bin(n − TP, p_FN / (1 − p_TP)),
    FP | TP, FN ~ Bin(rest, p_FP / (p_FP + p_TN)), each by inverse CDF on a float64-built table
    (three uniforms per matrix, probabilities resolved to 2^-24) for n ≤ 2048; above that by
    ``jax.random.binomial``.

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_multinomial
        >>> cms = sample_multinomial(jax.random.key(0), 50, [0.1, 0.2, 0.3, 0.4], (2, 3))
        >>> cms.shape, bool((cms.sum(-1) == 50).all())
        ((2, 3, 4), True)
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    p = _check_probs(probs)
    shape = _check_shape(shape)
    if n > _S.TABLE_MAX_N:
        return _binomial_chain(key, n, jnp.asarray(p, jnp.result_type(float)), shape)
    t = _tables(n, "multinomial", p)
    return _S.table_sample(key, n, *t, shape)


def sample_dirichlet_multinomial(
    key: jax.Array, n: int, alpha: Any, shape: Sequence[int] = ()
) -> jax.Array:
    """CM ~ Dirichlet-multinomial(n, alpha), int32 (*shape, 4).

    p ~ Dirichlet(alpha), CM | p ~ Multinomial(n, p), drawn without p as conditional
    beta-binomials: TP ~ BB(n, α_TP, α_FN + α_FP + α_TN), FN | TP ~ BB(n − TP, α_FN, α_FP + α_TN),
    FP | TP, FN ~ BB(rest, α_FP, α_TN) (inverse CDF tables for n ≤ 2048, else Dirichlet then
    binomials). alpha = (1, 1, 1, 1) is the uniform distribution on M(n).

    Example:
        >>> import jax
        >>> from ofijax.distributions import sample_dirichlet_multinomial
        >>> sample_dirichlet_multinomial(jax.random.key(1), 7, [1, 1, 1, 1], (4,)).sum(-1).tolist()
        [7, 7, 7, 7]
    """
    key = _v.as_key(key)
    n = _check_sampler_n(n)
    a = _check_alpha(alpha)
    shape = _check_shape(shape)
    if n > _S.TABLE_MAX_N:
        k0, k1 = jax.random.split(key)
        p = jax.random.dirichlet(k0, jnp.asarray(a, jnp.result_type(float)), shape)
        return _binomial_chain(k1, n, p, shape)
    t = _tables(n, "dirichlet", a)
    return _S.table_sample(key, n, *t, shape)


def subsample(key: jax.Array, cm: Any, n: int, shape: Sequence[int] = ()) -> jax.Array:
    """Confusion matrices of n rows drawn without replacement from a real group with counts ``cm``.

    Multivariate hypergeometric, drawn as TP ~ HG(M, cm_TP, n), FN | TP ~ HG(M − cm_TP, cm_FN,
    n − TP), FP | … ~ HG(cm_FP + cm_TN, cm_FP, rest), M = Σ cm, by inverse CDF tables
    (n ≤ 2048). int32 (*shape, 4).

    Example:
        >>> import jax
        >>> from ofijax.distributions import subsample
        >>> subsample(jax.random.key(0), [5, 0, 0, 5], 10, (2,)).tolist()
        [[5, 0, 0, 5], [5, 0, 0, 5]]
    """
    key = _v.as_key(key)
    c = _check_cm(cm)
    n = _check_n(n)
    if n > sum(c):
        raise ValueError(
            f"n: cannot draw {n} rows without replacement from a group of {sum(c)} rows; "
            "use n ≤ the group size (or sample_multinomial for draws with replacement)."
        )
    if n > _S.TABLE_MAX_N:
        raise ValueError(
            f"n: subsample supports up to {_S.TABLE_MAX_N} draws; got {n}. For larger samples "
            "the multinomial approximation sample_multinomial(key, n, cm / sum(cm)) is accurate."
        )
    shape = _check_shape(shape)
    t = _tables(n, "hypergeom", c)
    return _S.table_sample(key, n, *t, shape)


_TABLE_CACHE: dict = {}


def _tables(n: int, kind: str, params: tuple) -> tuple[jax.Array, ...]:
    k = (n, kind, params)
    hit = _TABLE_CACHE.get(k)
    if hit is None:
        if len(_TABLE_CACHE) > 16:
            _TABLE_CACHE.clear()
        hit = tuple(np.asarray(t) for t in _S.conditional_tables(n, kind, params))
        _TABLE_CACHE[k] = hit
    return hit


# Hashable sampler objects, so that jitted Monte Carlo blocks are cached across calls.


@dataclass(frozen=True)
class _Sampler:
    kind: str
    n: int
    params: tuple = ()

    def operands(self) -> tuple:
        """Arrays the sampler reads (passed as jit arguments by :func:`monte_carlo`)."""
        if self.kind == "uniform" and self.n <= _S.LUT_MAX_N:
            return (_S.packed_table(self.n),)
        return ()

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            table = operands[0] if operands else None
            return _S.uniform_cms(key, self.n, _check_shape(shape), table)
        return self(key, shape)

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        if self.kind == "uniform":
            return sample_uniform(key, self.n, shape)
        if self.kind == "multinomial":
            return sample_multinomial(key, self.n, self.params, shape)
        if self.kind == "dirichlet":
            return sample_dirichlet_multinomial(key, self.n, self.params, shape)
        return subsample(key, self.params, self.n, shape)


def _operands(sampler: Callable) -> tuple:
    """Arrays a library sampler reads (empty for user samplers)."""
    return sampler.operands() if isinstance(sampler, (_Sampler, _PairSampler)) else ()


def _draw(sampler: Callable, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
    if isinstance(sampler, (_Sampler, _PairSampler)):
        return sampler.draw(operands, key, shape)
    return sampler(key, shape)


@dataclass(frozen=True)
class _PairSampler:
    first: Callable
    second: Callable

    def operands(self) -> tuple:
        return (_operands(self.first), _operands(self.second))

    def draw(self, operands: tuple, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        k0, k1 = jax.random.split(key)
        return jnp.stack(
            [_draw(self.first, operands[0], k0, shape), _draw(self.second, operands[1], k1, shape)],
            axis=-2,
        )

    def __call__(self, key: jax.Array, shape: Sequence[int]) -> jax.Array:
        return self.draw(self.operands(), key, shape)


@dataclass(frozen=True)
class _PairStatistic:
    metric: Callable

    def __call__(self, cms: jax.Array) -> jax.Array:
        return self.metric(cms[..., 0, :], cms[..., 1, :])


def uniform_sampler(n: int) -> Callable:
    """``sampler(key, shape)`` drawing uniformly from M(n) (for :func:`monte_carlo`)."""
    return _Sampler("uniform", _check_sampler_n(n))


def multinomial_sampler(n: int, probs: Any) -> Callable:
    """``sampler(key, shape)`` drawing Multinomial(n, probs) matrices."""
    return _Sampler("multinomial", _check_sampler_n(n), _check_probs(probs))


def dirichlet_multinomial_sampler(n: int, alpha: Any) -> Callable:
    """``sampler(key, shape)`` drawing Dirichlet-multinomial(n, alpha) matrices."""
    return _Sampler("dirichlet", _check_sampler_n(n), _check_alpha(alpha))


def subsample_sampler(cm: Any, n: int) -> Callable:
    """``sampler(key, shape)`` drawing n rows without replacement from a group with counts ``cm``."""
    c = _check_cm(cm)
    n = _check_n(n)
    if n > sum(c):
        raise ValueError(f"n: cannot draw {n} rows without replacement from {sum(c)} rows.")
    return _Sampler("hypergeom", n, c)


def pair_sampler(sampler_i: Callable, sampler_j: Callable) -> Callable:
    """``sampler(key, shape) -> (*shape, 2, 4)``: two independent groups (i first).

    Use with :func:`pair_statistic` for two-group metrics such as OFI.
    """
    return _PairSampler(sampler_i, sampler_j)


def pair_statistic(metric: Callable = _ofi) -> Callable:
    """Turn ``metric(cm_i, cm_j)`` (default :func:`ofijax.ofi`) into a statistic of (..., 2, 4)."""
    return _PairStatistic(metric)


# --------------------------------------------------------------------- streaming / Monte Carlo


@dataclass(frozen=True)
class _SampleGen:
    sampler: Callable
    chunk: int

    def operands(self) -> tuple:
        return _operands(self.sampler)

    def __call__(self, key, cid, operands=()):
        return _draw(self.sampler, operands, jax.random.fold_in(key, cid), (self.chunk,))


@dataclass(frozen=True)
class _RankGen:
    n: int
    chunk: int

    def operands(self) -> tuple:
        return (_S.packed_table(self.n),) if self.n <= _S.LUT_MAX_N else ()

    def __call__(self, key, cid, operands=()):
        del key
        base = cid.astype(jnp.uint32) * jnp.uint32(self.chunk)
        if operands:
            ranks = jnp.minimum(base + jnp.arange(self.chunk, dtype=jnp.uint32),
                                jnp.uint32(_C.num_cms(self.n) - 1))  # tail rows are masked
            return _S.lookup_cms(ranks, operands[0])
        return _S.unrank_range(base, self.chunk, self.n)


def _check_hist(bins: Any, range: Any, chunk_size: Any) -> tuple[int, tuple[float, float], int]:
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
        raise ValueError(f"bins: must be a positive integer; got {bins!r}.")
    try:
        lo, hi = (float(range[0]), float(range[1]))
    except (TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"range: must be a pair (low, high); got {range!r}.") from exc
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"range: must be finite with low < high; got {range!r}.")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
        raise ValueError(f"chunk_size: must be a positive integer; got {chunk_size!r}.")
    return int(bins), (lo, hi), int(chunk_size)


def _check_quantiles(quantiles: Any) -> tuple[float, ...] | None:
    if quantiles is None:
        return None
    try:
        q = np.asarray(quantiles, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"quantiles: must be numbers in [0, 1]; got {quantiles!r}.") from exc
    if not np.all((q >= 0.0) & (q <= 1.0)):  # also refuses NaN
        raise ValueError(f"quantiles: levels must lie in [0, 1] (e.g. 0.025, 0.975); got {quantiles!r}.")
    return tuple(float(v) for v in q)


_MAX_LATTICE_BINS = 1_000_000


def _check_lattice(lattice: Any, rng: tuple[float, float]) -> int | None:
    if lattice is None:
        return None
    if isinstance(lattice, bool) or not isinstance(lattice, Integral) or lattice < 1:
        raise ValueError(f"lattice: must be a positive integer denominator q (values k/q), e.g. n "
                         f"for B or lcm(n_i, n_j) for OFI; got {lattice!r}.")
    width = (rng[1] - rng[0]) * int(lattice)
    if width > _MAX_LATTICE_BINS:
        raise ValueError(f"lattice: {int(lattice)} over range {rng} needs {width:,.0f} bins (at most "
                         f"{_MAX_LATTICE_BINS:,}); narrow range or use bins.")
    q = int(lattice)
    if math.floor(Fraction(repr(rng[1])) * q) < math.ceil(Fraction(repr(rng[0])) * q):
        raise ValueError(f"lattice: range {rng} holds no multiple of 1/{int(lattice)}; widen range.")
    return int(lattice)


def reduce_all(
    n: int,
    fn: Callable[[jax.Array], jax.Array],
    *,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    chunk_size: int = 1 << 16,
    quantiles: Sequence[float] | None = None,
    lattice: int | None = None,
) -> Any:
    """Summarise ``fn`` over every matrix of M(n), streaming, in fixed memory.

    Ranks 0 … N(n) − 1 are cut into chunks of ``chunk_size``; each chunk is unranked in closed
    form (int32 (chunk, 4)), passed to ``fn`` (any metric of a CM stack, e.g.
    ``ofijax.marginal_benefit``) and summarised; chunks are merged exactly on the host (see
    :class:`Summary`). NaN values are counted in ``undefined`` and excluded elsewhere. Chunks are
    spread over all devices when several exist. Needs n ≤ 2949.

    The values and every sum are float64 whatever ``jax_enable_x64`` says, and the bins are
    decided exactly on lattices ([a, b), the last bin closed, as numpy.histogram; see
    :class:`Summary`), so the histogram is the exact count of matrices per bin.
    ``lattice=q`` gives one bin per attainable value k/q in ``range`` (``bins`` is then ignored)
    and exact inverse-CDF quantiles (``lattice=n`` for B). A statistic returning (chunk, k)
    values (or a pytree of arrays) gives k summaries (a list, or the same pytree), in one pass.

    Example:
        >>> import ofijax
        >>> from ofijax.distributions import reduce_all
        >>> s = reduce_all(10, ofijax.marginal_benefit, bins=4)
        >>> s.count, abs(s.mean) < 1e-15, round(s.var, 12), s.hist.tolist()
        (286, True, 0.14, [22, 103, 127, 34])
        >>> reduce_all(10, ofijax.marginal_benefit, bins=20).hist.tolist()[:6]
        [1, 2, 4, 6, 9, 12]
        >>> e = reduce_all(2, ofijax.marginal_benefit, lattice=2)
        >>> e.values.tolist(), e.hist.tolist(), float(e.quantiles[4])  # median
        ([-1.0, -0.5, 0.0, 0.5, 1.0], [1, 2, 4, 2, 1], 0.0)
    """
    n = _check_n(n)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if n > _S.UNRANK_MAX_N:
        raise ValueError(f"n: reduce_all supports n ≤ {_S.UNRANK_MAX_N} (N(n) < 2^32); got {n}.")
    total = _C.num_cms(n)
    chunk_size = min(chunk_size, 1 << max(6, (total - 1).bit_length()))
    return _MC.stream(
        jax.random.key(0), _RankGen(n, chunk_size), fn, total,
        chunk_size=chunk_size, bins=bins, range=rng, quantiles=_check_quantiles(quantiles),
        desc=f"reduce_all(n={n})", lattice=_check_lattice(lattice, rng),
    )


def monte_carlo(
    key: jax.Array,
    statistic: Callable[[jax.Array], jax.Array],
    sampler: Callable[[jax.Array, tuple[int, ...]], jax.Array],
    num_samples: int,
    *,
    chunk_size: int = 1 << 16,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    quantiles: Sequence[float] | None = None,
    lattice: int | None = None,
) -> Any:
    """Monte Carlo summary of ``statistic(sampler(key_c, (chunk_size,)))`` in fixed memory.

    Chunk c uses ``key_c = fold_in(key, c)``, so the result for a fixed key depends on
    ``chunk_size`` but not on the number of devices or on how chunks are grouped. Chunks are
    evaluated in blocks of about 2^24 samples: one jitted call per block runs a ``lax.map`` over
    the block's chunks (sharded with ``jax.shard_map`` over a 1-D mesh of all devices when there
    are several) and returns one small summary per chunk; the host merges them with exact integer
    counts and float64 Chan–Welford moments. Memory is O(chunk_size + bins) for any
    ``num_samples`` (1e10 works; it is a loop). A one-line stderr progress counter appears when a
    run exceeds ~2 s (:mod:`ofijax._progress`; ``OFIJAX_PROGRESS=0`` switches it off).
    The program is compiled per sampler (its n) and block shape: for many group sizes use
    :func:`sweep`, which compiles once for all of them.

    Multi-host: call ``jax.distributed.initialize()`` in every process first, then the same
    call with the same key in every process. The blocks are dealt out over the processes (each
    runs its share on its local devices), the small per-block summaries are gathered and merged
    in block order, so every process gets the Summary of a single-process run with the same
    local device count, bit for bit (tested with two local CPU processes).

    Args:
        key: a JAX PRNG key.
        statistic: maps an int32 CM stack (chunk, ..., 4) to values with the chunk as leading axis
            (any core metric, e.g. ``ofijax.marginal_benefit``; :func:`pair_statistic` for two
            groups). NaN values count as undefined.
        sampler: ``sampler(key, shape) -> (*shape, ..., 4)``, e.g. :func:`uniform_sampler`.
        num_samples: number of draws, ≥ 1.
        chunk_size: draws per chunk (memory bound).
            A statistic returning (chunk, k) values, or a pytree of arrays, gives k summaries
            (a list, or the same pytree of summaries) from one pass over the samples.
        bins, range: histogram over [range[0], range[1]] (use (-2, 2) for OFI): bin k is
            [e_k, e_{k+1}), the last bin closed; decided exactly on lattices (see
            :class:`Summary`). Values and sums are float64 whatever ``jax_enable_x64`` says.
        quantiles: levels read off the histogram.
        lattice: q: one bin per attainable value k/q in ``range`` (``bins`` ignored), exact
            inverse-CDF quantiles (the definition of :meth:`PMF.quantile`); ``n`` for B,
            ``lcm(n_i, n_j)`` for OFI. Values off the lattice make the run fail (ValueError).

    Returns:
        A :class:`Summary` (or several, see ``statistic``); merge with :func:`merge_summaries`.
        Its intervals: :meth:`Summary.mean_interval`, :meth:`Summary.tail_probability`,
        :meth:`Summary.quantile_intervals`.

    Example:
        >>> import jax, ofijax
        >>> from ofijax.distributions import monte_carlo, uniform_sampler
        >>> s = monte_carlo(jax.random.key(0), ofijax.marginal_benefit, uniform_sampler(10), 4096,
        ...                 chunk_size=1024)
        >>> s.count, abs(s.mean) < 0.05, abs(s.var - 0.14) < 0.02
        (4096, True, True)
    """
    key = _v.as_key(key)
    num = _check_num_samples(num_samples)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if not callable(statistic):
        raise ValueError("statistic: must be a callable mapping a CM stack to values.")
    if not callable(sampler):
        raise ValueError("sampler: must be a callable sampler(key, shape), e.g. uniform_sampler(n).")
    chunk_size = min(chunk_size, 1 << max(6, (num - 1).bit_length()))
    return _MC.stream(
        key, _SampleGen(sampler, chunk_size), statistic, num,
        chunk_size=chunk_size, bins=bins, range=rng, quantiles=_check_quantiles(quantiles),
        desc="monte_carlo", lattice=_check_lattice(lattice, rng),
    )


@dataclass(frozen=True)
class _SweepGen:
    """Draws for one size of a sweep; the sizes and probabilities are jit arguments (operands),
    not part of the program, so every size shares one compiled block."""

    kind: str  # "uniform" or "multinomial"
    chunk: int
    groups: int
    ns: tuple = field(default=(), compare=False)
    probs: tuple = field(default=(), compare=False)

    def operands(self) -> tuple:
        return (np.asarray(self.ns, dtype=np.int32), np.asarray(self.probs, dtype=np.float32))

    def __call__(self, key, cid, operands=()):
        ns, p = operands
        k = jax.random.fold_in(key, cid)
        out = []
        for g in range(self.groups):
            kg = jax.random.fold_in(k, g)
            if self.kind == "uniform":
                out.append(_S.uniform_cms_traced(kg, ns[g], self.chunk))
            else:
                out.append(_binomial_chain_core(kg, ns[g], p, (self.chunk,)))
        return out[0] if self.groups == 1 else jnp.stack(out, axis=-2)


def sweep(
    key: jax.Array,
    statistic: Callable[[jax.Array], Any],
    ns: Sequence[Any],
    num_samples: Any,
    *,
    null: Any = "uniform",
    chunk_size: int = 1 << 14,
    chunks_per_block: int = 16,
    bins: int = 100,
    range: tuple[float, float] = (-1.0, 1.0),
    quantiles: Sequence[float] | None = None,
) -> list:
    """Monte Carlo of ``statistic`` at many group sizes with ONE compiled program.

    The sizes (and the null's probabilities) are arguments of the jitted block, not constants,
    and every block has the same shape (``chunks_per_block`` chunks of ``chunk_size`` draws; the
    last block of a size is padded), so a sweep over any sizes and sample counts compiles once
    per (statistic, chunk_size, histogram): a second sweep over new sizes compiles nothing.

    Args:
        key: PRNG key (or int seed); size n uses ``fold_in(fold_in(key, n_i), n_j)``, so its
            summary does not depend on the other sizes of the sweep.
        statistic: as in :func:`monte_carlo`: of (chunk, 4) matrices when ``ns`` holds ints, of
            (chunk, 2, 4) pairs (group i first) when it holds pairs ``(n_i, n_j)`` (e.g.
            :func:`pair_statistic`).
        ns: group sizes (ints ≥ 1, or pairs of them).
        num_samples: draws per size (an int, or one per size).
        null: ``"uniform"`` (exactly uniform on M(n), any n < 2^31 − 3) or a reference CM / 4
            probabilities (Multinomial(n, p) by the binomial chain, n < 2^24 exact).
        chunk_size, chunks_per_block: the block shape (memory O(chunk_size)).
        bins, range, quantiles: the histogram, as in :func:`monte_carlo`.

    Returns:
        A list with one :class:`Summary` (or the statistic's structure of them) per size.
        The draws follow the same laws as :func:`uniform_sampler` / :func:`multinomial_sampler`
        but are another stream than :func:`monte_carlo` with those samplers.

    Example:
        >>> import ofijax
        >>> from ofijax.distributions import sweep
        >>> out = sweep(0, ofijax.marginal_benefit, [5, 50], 20_000, chunk_size=4096)
        >>> [(s.count, round(s.var, 2)) for s in out]  # Var B = (n + 4)/(10 n): 0.18, 0.108
        [(20000, 0.18), (20000, 0.11)]
    """
    key = _v.as_key(key)
    if not callable(statistic):
        raise ValueError("statistic: must be a callable mapping a CM stack to values.")
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or len(ns) == 0:
        raise ValueError(f"ns: must be a non-empty list of group sizes (or pairs); got {ns!r}.")
    pairs = [tuple(x) if isinstance(x, (tuple, list)) else (x,) for x in ns]
    groups = len(pairs[0])
    if groups not in (1, 2) or any(len(x) != groups for x in pairs):
        raise ValueError("ns: give all sizes as ints or all as pairs (n_i, n_j).")
    pairs = [tuple(_check_sampler_n(v) for v in x) for x in pairs]
    if isinstance(num_samples, Sequence) and not isinstance(num_samples, (str, bytes)):
        nums = [_check_num_samples(v) for v in num_samples]
        if len(nums) != len(pairs):
            raise ValueError(f"num_samples: give one count or one per size ({len(pairs)}); got "
                             f"{len(nums)}.")
    else:
        nums = [_check_num_samples(num_samples)] * len(pairs)
    bins, rng, chunk_size = _check_hist(bins, range, chunk_size)
    if isinstance(chunks_per_block, bool) or not isinstance(chunks_per_block, Integral) \
            or chunks_per_block < 1:
        raise ValueError(f"chunks_per_block: must be a positive integer; got {chunks_per_block!r}.")
    p = _null_probs(null)
    kind = "uniform" if p is None else "multinomial"
    levels = _check_quantiles(quantiles)
    out = []
    for sizes, num in zip(pairs, nums):
        gen = _SweepGen(kind, chunk_size, groups, sizes, p or (0.25,) * 4)
        k = key
        for v in sizes:
            k = jax.random.fold_in(k, v)
        out.append(_MC.stream(k, gen, statistic, num, chunk_size=chunk_size, bins=bins, range=rng,
                              quantiles=levels, chunks_per_block=int(chunks_per_block),
                              desc=f"sweep(n={sizes[0] if groups == 1 else sizes})",
                              balance=False))
    return out


# ----------------------------------------------------------------------- thresholds, p-values


class Threshold(NamedTuple):
    """A two-sided OFI threshold under an explicit null.

    Attributes:
        threshold: t with P(|OFI| ≤ t) ≥ level under the null (smallest such support point for
            ``method="exact"``; for ``"monte_carlo"`` the same inverse CDF of the draws on the
            lattice 1/lcm(n_i, n_j), or a histogram quantile when that lattice has over 2e5 points).
        level: the two-sided level.
        sigma_ofi: σ of OFI under the null (√(Var B_i + Var B_j)).
        sigma_b_i: σ of B for group i alone (what the paper's 0.3 approximates, n → ∞).
        sigma_b_j: σ of B for group j alone.
        paper_threshold: the paper's fixed 0.3, for comparison.
        method: "exact" or "monte_carlo".
        null: "uniform" or the multinomial probabilities used.
    """

    threshold: float
    level: float
    sigma_ofi: float
    sigma_b_i: float
    sigma_b_j: float
    paper_threshold: float
    method: str
    null: Any


def ofi_threshold(
    n_i: int,
    n_j: int,
    *,
    null: Any = "uniform",
    level: float = 0.95,
    method: str = "exact",
    key: jax.Array | None = None,
    num_samples: int = 1_000_000,
) -> Threshold:
    r"""Two-sided threshold for |OFI| at ``level`` under an explicit null, next to the paper's 0.3.

    The paper flags |OFI| > 0.3 and motivates 0.3 as "the standard deviation". That number is
    σ of B **for one group** under the uniform null, σ(B; n) = √((n + 4)/(10 n)) → 1/√10 ≈ 0.316
    (Theorem D.2). OFI = B_i − B_j is a difference of two independent B's, so under the same null
    σ(OFI) = √(σ²(B; n_i) + σ²(B; n_j)) → √(2/10) ≈ 0.447: ±0.3 is not a 1σ band for OFI, and
    about half of all pairs of uniformly random classifiers exceed it. This function returns the
    level-quantile of |OFI| under the null instead, with both σ's for reference. Under a
    multinomial null (a reference CM, e.g. the pooled data) B concentrates (σ ∝ 1/√n), so the
    threshold shrinks with group size, as the paper suggests for better-than-uniform classifiers.

    Args:
        n_i, n_j: group sizes.
        null: ``"uniform"`` or a reference CM (4 counts, TP, FN, FP, TN) → Multinomial(n, cm/Σcm).
        level: two-sided level, e.g. 0.95 → P(|OFI| ≤ threshold) ≥ 0.95.
        method: ``"exact"`` (convolution PMF) or ``"monte_carlo"`` (needs ``key``).
        key: PRNG key for ``method="monte_carlo"``.
        num_samples: Monte Carlo draws.

    Example:
        >>> from ofijax.distributions import ofi_threshold
        >>> t = ofi_threshold(20, 20)
        >>> round(t.threshold, 4), round(t.sigma_ofi, 4), round(t.sigma_b_i, 4), t.paper_threshold
        (0.95, 0.4899, 0.3464, 0.3)
    """
    n_i, n_j = _check_n(n_i, "n_i"), _check_n(n_j, "n_j")
    lv = _v.check_fraction(level, "level")
    _v.check_choice(method, "method", ("exact", "monte_carlo"))
    p = _null_probs(null)
    mi = marginal_benefit_moments(n_i, p)
    mj = marginal_benefit_moments(n_j, p)
    s_i, s_j = math.sqrt(float(mi.var)), math.sqrt(float(mj.var))
    s_ofi = math.sqrt(float(mi.var) + float(mj.var))
    label = "uniform" if p is None else p
    if method == "exact":
        pmf = ofi_pmf(n_i, n_j, null=null)
        absnum = np.abs(pmf.numerators)
        uniq, inv = np.unique(absnum, return_inverse=True)
        cdf = np.cumsum(np.bincount(inv, weights=pmf.probs, minlength=uniq.size))
        j = int(np.searchsorted(cdf, lv - 1e-12, side="left"))
        t = float(uniq[min(j, uniq.size - 1)] / pmf.denominator)
        return Threshold(t, lv, s_ofi, s_i, s_j, PAPER_THRESHOLD, method, label)
    if key is None:
        raise ValueError("key: method='monte_carlo' needs a PRNG key, e.g. jax.random.key(0).")
    num = _check_num_samples(num_samples)
    if p is None:
        si, sj = uniform_sampler(n_i), uniform_sampler(n_j)
    else:
        si, sj = multinomial_sampler(n_i, p), multinomial_sampler(n_j, p)
    lcm = math.lcm(n_i, n_j)
    lat = lcm if 2 * lcm + 1 <= 200_001 else None  # exact inverse CDF on the lattice
    summ = monte_carlo(
        key, _AbsOfi(), pair_sampler(si, sj), num, bins=8000, range=(0.0, 2.0), quantiles=(lv,),
        lattice=lat,
    )
    return Threshold(float(summ.quantiles[0]), lv, s_ofi, s_i, s_j, PAPER_THRESHOLD, method, label)


@dataclass(frozen=True)
class _AbsOfi:
    def __call__(self, cms):
        return jnp.abs(_ofi(cms[..., 0, :], cms[..., 1, :]))
