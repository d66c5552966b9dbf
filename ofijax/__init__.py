"""ofijax: a pure-functional JAX toolkit for legally grounded fairness auditing.

Confusion matrices are arrays of shape ``(..., 4)`` ordered **TP, FN, FP, TN**, the positive
prediction being the beneficial one. Every metric broadcasts over leading axes, so ``jit``,
``vmap`` and ``grad`` come for free.

Example (the OFI paper's Table 1, scenario B):

>>> import ofijax
>>> round(float(ofijax.ofi([0, 1, 0, 5], [0, 7, 0, 11])), 4)
0.2222
"""

from ofijax import _jaxcache as _jaxcache  # ofijax's cache folder; changes no JAX setting
from ofijax import auditing as auditing
from ofijax import cm as cm
from ofijax import datasets as datasets
from ofijax import diff as diff
from ofijax import distributions as distributions
from ofijax import metrics as metrics
from ofijax import scan as scan
from ofijax.auditing import AuditFrame as AuditFrame
from ofijax.auditing import BatchAudit as BatchAudit
from ofijax.auditing import OFIBootstrap as OFIBootstrap
from ofijax.auditing import OFITest as OFITest
from ofijax.auditing import audit as audit
from ofijax.auditing import audit_batch as audit_batch
from ofijax.auditing import impact_ratios as impact_ratios
from ofijax.auditing import ofi_bootstrap as ofi_bootstrap
from ofijax.auditing import ofi_test as ofi_test
from ofijax.auditing import pairwise_ofi_test as pairwise_ofi_test
from ofijax.auditing import pareto_frontier as pareto_frontier
from ofijax.auditing import select_candidates as select_candidates
from ofijax.cm import GroupConfusionMatrices as GroupConfusionMatrices
from ofijax.cm import confusion_matrix as confusion_matrix
from ofijax.cm import flip as flip
from ofijax.cm import from_counts as from_counts
from ofijax.cm import from_sklearn as from_sklearn
from ofijax.cm import group_confusion_matrices as group_confusion_matrices
from ofijax.cm import threshold_sweep as threshold_sweep
from ofijax.cm import to_sklearn as to_sklearn
from ofijax.metrics import Table1Scenario as Table1Scenario
from ofijax.metrics import accuracy as accuracy
from ofijax.metrics import base_rate as base_rate
from ofijax.metrics import benefit as benefit
from ofijax.metrics import disparate_impact as disparate_impact
from ofijax.metrics import expected_benefit as expected_benefit
from ofijax.metrics import false_negative_rate as false_negative_rate
from ofijax.metrics import false_positive_rate as false_positive_rate
from ofijax.metrics import four_fifths_pair as four_fifths_pair
from ofijax.metrics import four_fifths_rule as four_fifths_rule
from ofijax.metrics import group_size as group_size
from ofijax.metrics import impact_ratio as impact_ratio
from ofijax.metrics import marginal_benefit as marginal_benefit
from ofijax.metrics import ofi as ofi
from ofijax.metrics import ofi_flag as ofi_flag
from ofijax.metrics import pairwise as pairwise
from ofijax.metrics import paper_table1 as paper_table1
from ofijax.metrics import positive_predictive_value as positive_predictive_value
from ofijax.metrics import selection_rate as selection_rate
from ofijax.metrics import treatment_equality as treatment_equality
from ofijax.metrics import true_negative_rate as true_negative_rate
from ofijax.metrics import true_positive_rate as true_positive_rate

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # sub-packages
    "datasets",
    "diff",
    "scan",
    "distributions",
    "cm",
    "metrics",
    "auditing",
    # confusion matrices
    "GroupConfusionMatrices",
    "confusion_matrix",
    "group_confusion_matrices",
    "threshold_sweep",
    "from_counts",
    "from_sklearn",
    "to_sklearn",
    "flip",
    # OFI-paper metrics
    "benefit",
    "expected_benefit",
    "marginal_benefit",
    "ofi",
    "disparate_impact",
    "treatment_equality",
    "impact_ratio",
    "four_fifths_rule",
    "four_fifths_pair",
    "ofi_flag",
    "pairwise",
    # rates
    "group_size",
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "true_negative_rate",
    "positive_predictive_value",
    "selection_rate",
    "base_rate",
    "accuracy",
    # audit and OFI significance
    "audit",
    "AuditFrame",
    "ofi_test",
    "pairwise_ofi_test",
    "ofi_bootstrap",
    "OFITest",
    "OFIBootstrap",
    # batch audits
    "audit_batch",
    "impact_ratios",
    "BatchAudit",
    "pareto_frontier",
    "select_candidates",
    # paper examples
    "Table1Scenario",
    "paper_table1",
]
