r"""Distributions of confusion matrices and of the OFI paper's marginal benefit B.

Everything the OFI paper's appendices B–D derive over :math:`\mathcal M(n)` (all confusion
matrices with n samples), made exact, streaming or sampled:

* **Exact results** (Python ints and :class:`fractions.Fraction` where exact):
  :func:`num_confusion_matrices` N(n) = C(n + 3, 3), :func:`cell_value_count` C(x; n),
  :func:`enumerate_confusion_matrices`, the O(n) PMF of B (:func:`marginal_benefit_pmf`,
  uniform or multinomial null), the PMF of OFI for two independent groups (:func:`ofi_pmf`),
  exact moments (Var B = (n + 4) / (10 n); the paper's Corollary D.4 drops the n).
* **Streaming reductions** over all of M(n) for any metric (:func:`reduce_all`) and
  **Monte Carlo** for any sampler and statistic (:func:`monte_carlo`) in fixed memory,
  mergeable (:func:`merge_summaries`) and sharded over all devices; exact histograms on lattices
  (``lattice=q``), several statistics per pass, intervals and JSON save/load on :class:`Summary`;
  :func:`sweep` runs many group sizes with one compiled program.
* **Samplers** (key first, any batch shape, int32 TP, FN, FP, TN): :func:`sample_uniform`
  (exactly uniform on M(n)), :func:`sample_multinomial`, :func:`sample_dirichlet_multinomial`,
  :func:`subsample` (multivariate hypergeometric).
* **Thresholds and p-values** for OFI under an explicit null: :func:`ofi_threshold`,
  :func:`ofi_pvalue` (observed OFIs) and :func:`ofi_pvalue_cms` (pairs of confusion matrices,
  vectorized, :class:`PValue` with the method used and its relative error bound): the one
  p-value engine, at every group size up to 2^31 − 1 under every null: exact in log space where
  that is cheap, otherwise a saddlepoint (relative error ≤ 2e-3) or, for the uniform null, a
  rigorous block bracket (~1e-4), flagged ``approximate`` with ``error_bound`` per entry.

Null models (ofi_notes §8): "uniform" means every matrix of M(n) equally likely (the paper's
setting); a reference CM means Multinomial(n, p = cm / Σ cm). A fixed p = (¼, ¼, ¼, ¼) multinomial
is **not** uniform: Var B = 0.5 / n → 0 there, but → 1/10 under the uniform null.

Example:
    >>> from ofijax import distributions as D
    >>> D.num_confusion_matrices(10), D.marginal_benefit_moments(10).var
    (286, Fraction(7, 50))
"""

from ofijax.distributions._exact import PMF as PMF
from ofijax.distributions._exact import Moments as Moments
from ofijax.distributions._exact import cell_value_count as cell_value_count
from ofijax.distributions._exact import enumerate_confusion_matrices as enumerate_confusion_matrices
from ofijax.distributions._exact import marginal_benefit_count as marginal_benefit_count
from ofijax.distributions._exact import marginal_benefit_moments as marginal_benefit_moments
from ofijax.distributions._exact import marginal_benefit_pmf as marginal_benefit_pmf
from ofijax.distributions._exact import num_confusion_matrices as num_confusion_matrices
from ofijax.distributions._exact import ofi_moments as ofi_moments
from ofijax.distributions._exact import ofi_pmf as ofi_pmf
from ofijax.distributions._exact import rank_confusion_matrix as rank_confusion_matrix
from ofijax.distributions._exact import unrank_confusion_matrix as unrank_confusion_matrix
from ofijax.distributions._pvalue import PValue as PValue
from ofijax.distributions._pvalue import ofi_pvalue as ofi_pvalue
from ofijax.distributions._pvalue import ofi_pvalue_cms as ofi_pvalue_cms
from ofijax.distributions._reduce import monte_carlo as monte_carlo
from ofijax.distributions._reduce import reduce_all as reduce_all
from ofijax.distributions._reduce import sweep as sweep
from ofijax.distributions._samplers import (
    dirichlet_multinomial_sampler as dirichlet_multinomial_sampler,
)
from ofijax.distributions._samplers import multinomial_sampler as multinomial_sampler
from ofijax.distributions._samplers import pair_sampler as pair_sampler
from ofijax.distributions._samplers import pair_statistic as pair_statistic
from ofijax.distributions._samplers import (
    sample_dirichlet_multinomial as sample_dirichlet_multinomial,
)
from ofijax.distributions._samplers import sample_multinomial as sample_multinomial
from ofijax.distributions._samplers import sample_uniform as sample_uniform
from ofijax.distributions._samplers import subsample as subsample
from ofijax.distributions._samplers import subsample_sampler as subsample_sampler
from ofijax.distributions._samplers import uniform_sampler as uniform_sampler
from ofijax.distributions._summary import Summary as Summary
from ofijax.distributions._summary import merge_summaries as merge_summaries
from ofijax.distributions._threshold import PAPER_THRESHOLD as PAPER_THRESHOLD
from ofijax.distributions._threshold import Threshold as Threshold
from ofijax.distributions._threshold import ofi_threshold as ofi_threshold

__all__ = [
    "PMF",
    "Moments",
    "Summary",
    "Threshold",
    "num_confusion_matrices",
    "cell_value_count",
    "marginal_benefit_count",
    "enumerate_confusion_matrices",
    "rank_confusion_matrix",
    "unrank_confusion_matrix",
    "marginal_benefit_pmf",
    "marginal_benefit_moments",
    "ofi_pmf",
    "ofi_moments",
    "reduce_all",
    "sample_uniform",
    "sample_multinomial",
    "sample_dirichlet_multinomial",
    "subsample",
    "uniform_sampler",
    "multinomial_sampler",
    "dirichlet_multinomial_sampler",
    "subsample_sampler",
    "pair_sampler",
    "pair_statistic",
    "monte_carlo",
    "sweep",
    "merge_summaries",
    "ofi_threshold",
    "ofi_pvalue",
    "ofi_pvalue_cms",
    "PValue",
    "PAPER_THRESHOLD",
]
