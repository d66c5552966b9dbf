"""Fairness metrics on confusion matrices (pure, broadcasting over leading axes).

The OFI paper's benefit b = (TP + FP)/n, expected benefit E[b] = (TP + FN)/n, marginal benefit
B = b − E[b] = (FP − FN)/n, OFI = B_i − B_j, disparate impact and treatment equality, plus the
standard rates. NaN where a value is undefined; gradients stay finite.

Speed. Called eagerly on concrete counts, a metric validates them and returns float64. For
``marginal_benefit`` and ``ofi`` on large integer NumPy arrays (≥ 65,536 entries) that is one
jitted float64 program with the checks inside (measured ~10x faster than op by op on 2e6
matrices: ~50 ms against ~530 ms on a loaded 2-core machine, where NumPy takes ~22 ms: the copy of
the counts to the device dominates). For throughput keep the counts on the device and call the
metric inside ``jax.jit`` (traced inputs skip the checks and run in the default float: ~2 ms for
2e6 matrices), as :func:`ofijax.distributions.monte_carlo` does.

Example:
    >>> from ofijax import metrics
    >>> round(float(metrics.ofi([0, 1, 0, 5], [0, 7, 0, 11])), 4)
    0.2222
"""

from ofijax.metrics._core import accuracy as accuracy
from ofijax.metrics._core import base_rate as base_rate
from ofijax.metrics._core import benefit as benefit
from ofijax.metrics._core import disparate_impact as disparate_impact
from ofijax.metrics._core import expected_benefit as expected_benefit
from ofijax.metrics._core import false_negative_rate as false_negative_rate
from ofijax.metrics._core import false_positive_rate as false_positive_rate
from ofijax.metrics._core import four_fifths_pair as four_fifths_pair
from ofijax.metrics._core import four_fifths_rule as four_fifths_rule
from ofijax.metrics._core import group_size as group_size
from ofijax.metrics._core import impact_ratio as impact_ratio
from ofijax.metrics._core import marginal_benefit as marginal_benefit
from ofijax.metrics._core import ofi as ofi
from ofijax.metrics._core import ofi_flag as ofi_flag
from ofijax.metrics._core import pairwise as pairwise
from ofijax.metrics._core import positive_predictive_value as positive_predictive_value
from ofijax.metrics._core import safe_divide as safe_divide
from ofijax.metrics._core import selection_rate as selection_rate
from ofijax.metrics._core import treatment_equality as treatment_equality
from ofijax.metrics._core import true_negative_rate as true_negative_rate
from ofijax.metrics._core import true_positive_rate as true_positive_rate
from ofijax.metrics._examples import Table1Scenario as Table1Scenario
from ofijax.metrics._examples import paper_table1 as paper_table1

__all__ = [
    "group_size",
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
    "true_positive_rate",
    "false_positive_rate",
    "false_negative_rate",
    "true_negative_rate",
    "positive_predictive_value",
    "selection_rate",
    "base_rate",
    "accuracy",
    "safe_divide",
    "Table1Scenario",
    "paper_table1",
]
