"""ofijax: a pure-functional JAX toolkit for legally grounded fairness auditing.

Confusion matrices are arrays of shape ``(..., 4)`` ordered **TP, FN, FP, TN**, the positive
prediction being the beneficial one. Every metric broadcasts over leading axes, so ``jit``,
``vmap`` and ``grad`` come for free.

Example (the OFI paper's Table 1, scenario B):

>>> import ofijax
>>> round(float(ofijax.ofi([0, 1, 0, 5], [0, 7, 0, 11])), 4)
0.2222
"""

from ofijax import datasets as datasets
from ofijax import diff as diff
from ofijax import distributions as distributions
from ofijax import scan as scan
from ofijax._audit import AuditFrame as AuditFrame
from ofijax._audit import audit as audit
from ofijax._cm import GroupConfusionMatrices as GroupConfusionMatrices
from ofijax._cm import confusion_matrix as confusion_matrix
from ofijax._cm import flip as flip
from ofijax._cm import from_counts as from_counts
from ofijax._cm import from_sklearn as from_sklearn
from ofijax._cm import group_confusion_matrices as group_confusion_matrices
from ofijax._cm import threshold_sweep as threshold_sweep
from ofijax._cm import to_sklearn as to_sklearn
from ofijax._examples import Table1Scenario as Table1Scenario
from ofijax._examples import paper_table1 as paper_table1
from ofijax._metrics import accuracy as accuracy
from ofijax._metrics import base_rate as base_rate
from ofijax._metrics import benefit as benefit
from ofijax._metrics import disparate_impact as disparate_impact
from ofijax._metrics import expected_benefit as expected_benefit
from ofijax._metrics import false_negative_rate as false_negative_rate
from ofijax._metrics import false_positive_rate as false_positive_rate
from ofijax._metrics import four_fifths_rule as four_fifths_rule
from ofijax._metrics import group_size as group_size
from ofijax._metrics import marginal_benefit as marginal_benefit
from ofijax._metrics import ofi as ofi
from ofijax._metrics import ofi_flag as ofi_flag
from ofijax._metrics import pairwise as pairwise
from ofijax._metrics import positive_predictive_value as positive_predictive_value
from ofijax._metrics import selection_rate as selection_rate
from ofijax._metrics import treatment_equality as treatment_equality
from ofijax._metrics import true_negative_rate as true_negative_rate
from ofijax._metrics import true_positive_rate as true_positive_rate
from ofijax._significance import OFIBootstrap as OFIBootstrap
from ofijax._significance import OFITest as OFITest
from ofijax._significance import ofi_bootstrap as ofi_bootstrap
from ofijax._significance import ofi_test as ofi_test
from ofijax._significance import pairwise_ofi_test as pairwise_ofi_test

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # sub-packages
    "datasets",
    "diff",
    "scan",
    "distributions",
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
    "four_fifths_rule",
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
    # paper examples
    "Table1Scenario",
    "paper_table1",
]
