"""Exact laws over M(n): counts, enumeration and ranks, the PMFs of B and OFI, exact moments.

Owns :class:`PMF` (a law on a rational lattice, with exact counts under the uniform null) and
:class:`Moments`, N(n), C(x; n), #{FP − FN = d} (:func:`num_confusion_matrices`,
:func:`cell_value_count`, :func:`marginal_benefit_count`), all of M(n) and its ranks
(:func:`enumerate_confusion_matrices`, :func:`rank_confusion_matrix`,
:func:`unrank_confusion_matrix`), the O(n) PMF of B (:func:`marginal_benefit_pmf`, uniform or
multinomial null), the PMF of OFI for two independent groups (:func:`ofi_pmf`, a convolution on
the lattice 1/lcm(n_i, n_j)) and exact moments (:func:`marginal_benefit_moments`,
:func:`ofi_moments`). Documented with the package in :mod:`ofijax.distributions`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ofijax import _validation as _v

from . import _combinatorics as _C
from . import _pvalue as _P
from . import _sampling as _S
from ._args import check_n as _check_n
from ._args import check_num_samples as _check_num_samples  # noqa: F401 (deprecated alias)
from ._args import check_probs as _check_probs
from ._args import one_null_probs as _null_probs
from ._reduce import RankGen as _RankGen  # noqa: F401 (deprecated alias)
from ._summary import SCHEMA_VERSION as _SCHEMA_VERSION
from ._summary import check_saved

# _check_num_samples and _RankGen are read from this module by tests under their old home:
# deprecated here for one release (their homes are _args and _reduce).

_MAX_ENUM = 50_000_000  # matrices materialised by enumerate_confusion_matrices (~1.6 GB int64)
_MAX_PAIRS = 40_000_000  # support pairs in the exact OFI convolution (~320 MB per float64 pass)
#: Rows × support points per step of the OFI convolution on unequal lattices (~32 MB of indices).
_GRID_BLOCK = 1 << 22
#: Exact integer counts while N(n_i) N(n_j) < 2^62 (int64 products and sums cannot overflow).
_INT64_TOTAL = 2**62


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
        return {"schema_version": _SCHEMA_VERSION, "kind": "ofijax.PMF",
                "numerators": [int(a) for a in self.numerators],
                "denominator": int(self.denominator),
                "probs": [float(p) for p in self.probs],
                "counts": None if self.counts is None else [str(c) for c in self.counts],
                "total": None if self.total is None else str(self.total)}

    @classmethod
    def from_dict(cls, d: dict) -> PMF:
        """Inverse of :meth:`to_dict` (big counts travel as decimal strings)."""
        check_saved(d, "PMF")
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
        if exact and pi.total * pj.total < _INT64_TOTAL:  # exact int64 counts (n ≲ 1600 each)
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
    rows = max(1, _GRID_BLOCK // dj.size)
    use_int = exact and pi.total * pj.total < _INT64_TOTAL
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
