"""Confusion matrices: builders and conversions.

Layout ``(..., 4)`` ordered **TP, FN, FP, TN**, positive prediction = beneficial outcome. Convert
scikit-learn's ``[[TN, FP], [FN, TP]]`` with :func:`from_sklearn`. Counts are exact whatever
``jax_enable_x64`` says: int64 (float64 with weights), computed under a local x64 context or in
NumPy. pandas inputs are aligned on their index or refused, never matched by position.

Example:
    >>> from ofijax import cm
    >>> cm.confusion_matrix([1, 0, 1, 0], [1, 1, 0, 0]).tolist()
    [1, 1, 1, 1]
"""

from ofijax.cm._build import FN as FN
from ofijax.cm._build import FP as FP
from ofijax.cm._build import TN as TN
from ofijax.cm._build import TP as TP
from ofijax.cm._build import GroupConfusionMatrices as GroupConfusionMatrices
from ofijax.cm._build import confusion_matrix as confusion_matrix
from ofijax.cm._build import encode_groups as encode_groups
from ofijax.cm._build import flip as flip
from ofijax.cm._build import from_counts as from_counts
from ofijax.cm._build import from_sklearn as from_sklearn
from ofijax.cm._build import group_confusion_matrices as group_confusion_matrices
from ofijax.cm._build import prepare_labels as prepare_labels
from ofijax.cm._build import prepare_weights as prepare_weights
from ofijax.cm._build import threshold_sweep as threshold_sweep
from ofijax.cm._build import to_sklearn as to_sklearn

__all__ = [
    "TP",
    "FN",
    "FP",
    "TN",
    "GroupConfusionMatrices",
    "confusion_matrix",
    "group_confusion_matrices",
    "threshold_sweep",
    "from_counts",
    "from_sklearn",
    "to_sklearn",
    "flip",
    "encode_groups",
    "prepare_labels",
    "prepare_weights",
]
