"""Differentiable fairness: train models against the bias that OFI measures.

For one group the marginal benefit is :math:`\\mathcal{B} = (FP - FN)/n = \\hat b - \\bar y`,
the predicted-positive rate minus the base rate. Given probabilities :math:`p` the soft
confusion matrices of :func:`soft_confusion_matrices` give
:math:`\\mathcal{B} = \\bar p - \\bar y`, which is exactly the expected marginal benefit of the
randomized classifier :math:`\\hat y \\sim \\mathrm{Bernoulli}(p)`; every core metric runs on
soft CMs unchanged and gives the hard result at :math:`p \\in \\{0, 1\\}`.

Contents:

* soft CMs: :func:`soft_confusion_matrices`, :func:`one_hot_groups`;
* penalties (pure, NaN-safe, finite gradients with empty groups): :func:`ofi_penalty`,
  :func:`di_penalty`, :func:`rate_parity_penalty`, :func:`equalized_odds_penalty`;
* running estimate for mini-batches: :func:`ema_confusion_matrices` (optax-style pair);
* training: :func:`make_train_step` (penalty or Lagrangian mode), :func:`tradeoff_sweep`
  (strengths × seeds in one compiled program), :func:`evaluate` (held-out intervals and the
  noise floor), and two small models :func:`logistic_model`, :func:`mlp_model`;
* a scikit-learn estimator: :class:`OFIClassifier` (mini-batch training, ``fit(X, y,
  sensitive_features=...)``, ``evaluate(key, X, y, sensitive_features=...)``).

Dtypes: this is a throughput path. Soft CMs and penalties compute in the float dtype of their
inputs — float32 by default, float64 under ``jax_enable_x64`` — with integer (even int64 ≥ 2³¹)
and float16 counts converted on the host to that float, so they are rounded (relative error
≲ 1e-7 in float32), never wrapped. For exact audit numbers use :mod:`ofijax.metrics` on hard
counts from :mod:`ofijax.cm`.
"""

from ofijax.diff._cm import GroupWeights as GroupWeights
from ofijax.diff._cm import one_hot_groups as one_hot_groups
from ofijax.diff._cm import soft_confusion_matrices as soft_confusion_matrices
from ofijax.diff._estimator import OFIClassifier as OFIClassifier
from ofijax.diff._evaluate import Evaluation as Evaluation
from ofijax.diff._evaluate import SweepResult as SweepResult
from ofijax.diff._evaluate import evaluate as evaluate
from ofijax.diff._evaluate import tradeoff_sweep as tradeoff_sweep
from ofijax.diff._penalty import RATES as RATES
from ofijax.diff._penalty import REDUCTIONS as REDUCTIONS
from ofijax.diff._penalty import CMEstimator as CMEstimator
from ofijax.diff._penalty import EMAState as EMAState
from ofijax.diff._penalty import di_penalty as di_penalty
from ofijax.diff._penalty import ema_confusion_matrices as ema_confusion_matrices
from ofijax.diff._penalty import equalized_odds_penalty as equalized_odds_penalty
from ofijax.diff._penalty import ofi_penalty as ofi_penalty
from ofijax.diff._penalty import rate_parity_penalty as rate_parity_penalty
from ofijax.diff._postprocess import OFIThresholdOptimizer as OFIThresholdOptimizer
from ofijax.diff._train import Batch as Batch
from ofijax.diff._train import Model as Model
from ofijax.diff._train import PenaltyState as PenaltyState
from ofijax.diff._train import StepMetrics as StepMetrics
from ofijax.diff._train import init_penalty_state as init_penalty_state
from ofijax.diff._train import logistic_model as logistic_model
from ofijax.diff._train import make_train_step as make_train_step
from ofijax.diff._train import mlp_model as mlp_model

__all__ = [
    "soft_confusion_matrices",
    "one_hot_groups",
    "GroupWeights",
    "ofi_penalty",
    "di_penalty",
    "rate_parity_penalty",
    "equalized_odds_penalty",
    "REDUCTIONS",
    "RATES",
    "ema_confusion_matrices",
    "CMEstimator",
    "EMAState",
    "Batch",
    "StepMetrics",
    "PenaltyState",
    "init_penalty_state",
    "make_train_step",
    "tradeoff_sweep",
    "SweepResult",
    "evaluate",
    "Evaluation",
    "Model",
    "logistic_model",
    "mlp_model",
    "OFIClassifier",
    "OFIThresholdOptimizer",
]
