"""Shared data preparation, simulation designs and output helpers for the IJDI-paper experiments.

Reference: ``shared/reference/ijdi_algorithm.md`` (§7.1 data preparation, §7.2-§7.4 designs).
Everything here is plain NumPy/pandas/scikit-learn; the scans themselves live in
:mod:`ofijax.scan` and are called from the experiment scripts.

Data preparation (§7.1):

* COMPAS (the IJDI authors' 7,214-row file): scan features ``sex, race, under_25,
  charge_degree, prior_offenses``; the audited probability ``proba_compas`` maps the COMPAS
  decile to the empirical reoffence rate of that decile over all rows (checked against the
  reference table to 4 decimals); ``proba_lr`` is the "true" probability p_i, an in-sample
  logistic regression on the one-hot scan features with the reference's encoding (reference
  levels dropped for sex, prior offences, charge degree and under_25; every race dummy kept).
* German credit (1,000 rows): the 9 binned features of the §7.1 table (category counts are
  checked), p_i from a random forest (sklearn defaults, ``random_state=0``, in sample) and the
  audited classifier a logistic regression (in sample), both on the reference's one-hot encoding
  (one reference level dropped for every feature but purpose).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:  # the repo's ofijax when run as a script
    sys.path.insert(0, str(_REPO))

from ofijax.datasets import load_compas, load_german  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# ---------------------------------------------------------------------------------------------
# Constants of the reference set-up (§7.1)

COMPAS_FEATURES = ("sex", "race", "under_25", "charge_degree", "prior_offenses")
GERMAN_FEATURES = (
    "under_25", "sex", "job", "housing", "savings", "checking", "credit_amt", "duration", "purpose",
)
THRESHOLD = 0.5
PENALTY = 0.1  # the reference's complexity penalty per included value
NUM_RESTARTS = 10  # the reference's MDSS restarts

#: Reference table of §7.1: empirical reoffence rate per COMPAS decile, to 4 decimals.
DECILE_TABLE = {
    1: 0.2139, 2: 0.3114, 3: 0.3762, 4: 0.4343, 5: 0.4787,
    6: 0.5585, 7: 0.5912, 8: 0.6836, 9: 0.6988, 10: 0.7728,
}

#: Expected category counts of the German-credit features (§7.1 table).
GERMAN_COUNTS = {
    "under_25": {True: 149, False: 851},
    "sex": {"Male": 690, "Female": 310},
    "job": {"None": 22, "1 Job": 200, "Multiple Jobs": 778},
    "housing": {"Own": 713, "Rent": 179, "Free": 108},
    "savings": {"Little": 603, "Moderate": 103, "Quite rich": 63, "Rich": 48, "N/A": 183},
    "checking": {"Little": 274, "Moderate": 269, "Rich": 63, "N/A": 394},
    "credit_amt": {"Low": 116, "Moderate": 504, "High": 340, "Very High": 40},
    "duration": {"Very Short": 7, "Short": 173, "Moderate": 406, "Long": 350, "Very Long": 64},
    "purpose": {
        "Car": 337, "Radio/TV": 280, "Furniture/Equipment": 181, "Business": 97,
        "Education": 59, "Repairs": 22, "Domestic appliances": 12, "Vacation/Others": 12,
    },
}

#: Dummies dropped (reference level) in the reference's COMPAS logistic regression; race keeps all.
_COMPAS_DROPPED = {
    "sex": "sex_Female",
    "under_25": "under_25_False",
    "prior_offenses": "prior_offenses_None",
    "charge_degree": "charge_degree_M",
}

#: Dummies dropped in the reference's German-credit models (RF and LR); purpose keeps all.
GERMAN_DROPPED = (
    "under_25_False", "sex_Female", "job_None", "housing_Free", "savings_N/A", "checking_N/A",
    "credit_amt_Low", "duration_Short",
)


# ---------------------------------------------------------------------------------------------
# COMPAS


def one_hot(df: pd.DataFrame, columns: Sequence[str], drop: Iterable[str] = ()) -> pd.DataFrame:
    """One-hot encode ``columns`` (sorted levels, as ``pandas.get_dummies`` on categories), float64.

    ``drop`` lists dummy names to remove (reference levels).
    """
    parts = []
    for c in columns:
        d = pd.get_dummies(df[c].astype("category"), prefix=c, prefix_sep="_", dtype=np.float64)
        parts.append(d)
    X = pd.concat(parts, axis=1)
    drop = [d for d in drop if d in X.columns]
    return X.drop(columns=drop)


def fit_logistic(X: pd.DataFrame | np.ndarray, y: np.ndarray) -> np.ndarray:
    """In-sample Pr(y=1) from scikit-learn's default logistic regression (L2, C=1, lbfgs, rs 0)."""
    from sklearn.linear_model import LogisticRegression

    # tol/max_iter: fit to the optimum; the reference's stored probabilities agree with the
    # converged fit to ~1e-4, sklearn 1.9's default stopping rule leaves ~1e-3 differences.
    lr = LogisticRegression(random_state=0, tol=1e-10, max_iter=10_000)
    lr.fit(np.asarray(X, dtype=np.float64), np.asarray(y))
    return lr.predict_proba(np.asarray(X, dtype=np.float64))[:, 1]


def compas_lr_probabilities(df: pd.DataFrame, y: np.ndarray | None = None,
                            features: Sequence[str] = COMPAS_FEATURES) -> np.ndarray:
    """p_i for COMPAS: logistic regression on the one-hot ``features`` with [ref]'s encoding.

    ``y`` defaults to the real outcomes; the experiments pass simulated outcomes to "learn" p_i.
    """
    X = one_hot(df, features, drop=[_COMPAS_DROPPED[f] for f in features if f in _COMPAS_DROPPED])
    return fit_logistic(X, df["outcomes"].to_numpy() if y is None else y)


def decile_probabilities(decile: np.ndarray, outcomes: np.ndarray) -> dict[int, float]:
    """Empirical reoffence rate per COMPAS decile (the paper's "maximum likelihood" mapping)."""
    s = pd.Series(np.asarray(outcomes, dtype=np.float64)).groupby(np.asarray(decile)).mean()
    return {int(k): float(v) for k, v in s.items()}


@functools.cache
def _compas_cached() -> pd.DataFrame:
    raw = load_compas("ijdi")
    df = pd.DataFrame({
        "sex": raw["Sex"].astype(str),
        "race": raw["Race"].astype(str),
        "under_25": raw["Under 25"].astype(bool),
        "charge_degree": raw["ChargeDegree"].astype(str),
        "prior_offenses": raw["Prior Offenses"].astype(str),
        "outcomes": raw["ReoffendedWithinTwoYears"].astype(np.int64),
        "decile": raw["COMPASPredictedDecileScore"].astype(np.int64),
    })
    if len(df) != 7214 or int(df["outcomes"].sum()) != 3251:
        raise AssertionError(f"COMPAS: expected 7,214 rows / 3,251 reoffenders, got {len(df)}")
    table = decile_probabilities(df["decile"].to_numpy(), df["outcomes"].to_numpy())
    for d, ref in DECILE_TABLE.items():
        if round(table[d], 4) != ref:
            raise AssertionError(f"COMPAS decile {d}: rate {table[d]:.6f} != reference {ref}")
    df["proba_compas"] = df["decile"].map(table).astype(np.float64)
    df["proba_lr"] = compas_lr_probabilities(df)
    return df


def compas() -> pd.DataFrame:
    """The prepared COMPAS frame (7,214 rows, a fresh copy).

    Columns: the 5 scan features, ``outcomes`` (1 = reoffended), ``decile``, ``proba_compas``
    (audited p̂_0: the decile's empirical reoffence rate) and ``proba_lr`` (p_i).
    """
    return _compas_cached().copy()


# ---------------------------------------------------------------------------------------------
# German credit


def _cap_parts(x: str) -> str:
    return "/".join(a if a == "TV" else a.capitalize() for a in x.split("/"))


def german_features(raw: pd.DataFrame) -> pd.DataFrame:
    """The 9 binned German-credit features of §7.1 (left-closed bins) plus ``outcomes``."""
    credit = np.digitize(raw["Credit amount"].to_numpy(), [1000, 3000, 10000])
    duration = np.digitize(raw["Duration"].to_numpy(), [6, 12, 24, 48])
    jobs = {0: "None", 1: "1 Job", 2: "Multiple Jobs", 3: "Multiple Jobs"}
    return pd.DataFrame({
        "under_25": raw["Age"].to_numpy() < 25,
        "sex": raw["Sex"].astype(str).str.capitalize(),
        "job": raw["Job"].map(jobs).astype(str),
        "housing": raw["Housing"].astype(str).str.capitalize(),
        "savings": raw["Saving accounts"].map(lambda v: "N/A" if pd.isna(v) else v.capitalize()),
        "checking": raw["Checking account"].map(lambda v: "N/A" if pd.isna(v) else v.capitalize()),
        "credit_amt": np.array(["Low", "Moderate", "High", "Very High"])[credit],
        "duration": np.array(["Very Short", "Short", "Moderate", "Long", "Very Long"])[duration],
        "purpose": raw["Purpose"].astype(str).map(_cap_parts),
        "outcomes": (raw["Risk"] == "bad").astype(np.int64).to_numpy(),
    })


def check_german_counts(df: pd.DataFrame) -> None:
    """Raise AssertionError unless every category count matches the §7.1 table."""
    for col, expected in GERMAN_COUNTS.items():
        got = {k: int(v) for k, v in df[col].value_counts().items()}
        if got != expected:
            raise AssertionError(f"German credit {col}: counts {got} != reference {expected}")


@functools.cache
def _german_cached() -> pd.DataFrame:
    from sklearn.ensemble import RandomForestClassifier

    df = german_features(load_german("ijdi"))
    if len(df) != 1000 or int(df["outcomes"].sum()) != 300:
        raise AssertionError("German credit: expected 1,000 rows with 300 bad risks")
    check_german_counts(df)
    X = one_hot(df, GERMAN_FEATURES, drop=GERMAN_DROPPED).to_numpy()
    y = df["outcomes"].to_numpy()
    rf = RandomForestClassifier(random_state=0).fit(X, y)
    df["proba_rf"] = rf.predict_proba(X)[:, 1]  # p_i (in sample, as in [ref])
    df["proba_lr"] = fit_logistic(X, y)  # the audited classifier's probability
    return df


def german() -> pd.DataFrame:
    """The prepared German-credit frame (1,000 rows, a fresh copy).

    Columns: the 9 scan features, ``outcomes`` (1 = bad risk), ``proba_rf`` (p_i, random forest)
    and ``proba_lr`` (audited p̂_0, logistic regression).
    """
    return _german_cached().copy()


# ---------------------------------------------------------------------------------------------
# Subgroups, IoU


def subgroup_mask(df: pd.DataFrame, subset: Mapping[str, Iterable] | None) -> np.ndarray:
    """Rows of ``df`` inside ``subset`` ({column: allowed values}; empty/None = everyone)."""
    mask = np.ones(len(df), dtype=bool)
    for col, vals in (subset or {}).items():
        mask &= df[col].isin(list(vals)).to_numpy()
    return mask


def iou(detected: np.ndarray | None, truth: np.ndarray) -> float:
    """Jaccard index |A ∩ B| / |A ∪ B| of two boolean masks; 0 when nothing is detected."""
    truth = np.asarray(truth, dtype=bool)
    if detected is None:
        return 0.0
    detected = np.asarray(detected, dtype=bool)
    if detected.shape != truth.shape:
        raise ValueError(f"detected: shape {detected.shape} != truth shape {truth.shape}")
    union = int(np.sum(detected | truth))
    if not detected.any() or union == 0:
        return 0.0
    return int(np.sum(detected & truth)) / union


def format_subset(subset: Mapping | None) -> str:
    """A compact, stable text form of a subgroup dict: ``a=x|y; b=z`` (``<none>`` if empty)."""
    if not subset:
        return "<none>"
    parts = []
    for col in sorted(subset, key=str):
        vals = sorted(str(v) for v in subset[col])
        parts.append(f"{col}={'|'.join(vals)}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Experiment 1 (§7.2)

EXP1_SUBGROUP = {"race": ["African-American"], "sex": ["Male"], "under_25": [False]}
EXP1_KS = (0, 1, 3, 10)
EXP1_LAMBDAS = (0.0, 4.0, 8.0, 12.0, 16.0, 20.0, 42.0, 46.0, 50.0, 54.0, 80.0)


def exp1_lambda_star(k: float) -> float:
    """Theoretical cutoff λ*(k) of Experiment 1 (§7.2): 50 for k = 0, else (75/k)(4999-k²)/(7497-k²)."""
    if k == 0:
        return 50.0
    return (75.0 / k) * (4999.0 - k * k) / (7497.0 - k * k)


def exp1_lambda_star_numeric(k: float, n: int = 200_001) -> float:
    """λ*(k) by direct numerical integration (midpoint rule), to check the closed form.

    Within D_N the density of p is uniform reweighted by (1 - p); FPR = Pr(p >= 0.5 | y = 0).
    """
    def moments(mu):
        if k == 0:
            return mu, float(mu >= 0.5)
        lo, hi = mu - 0.01 * k, mu + 0.01 * k
        x = lo + (np.arange(n) + 0.5) * (hi - lo) / n
        w = 1.0 - x
        return float(np.sum(w * x) / np.sum(w)), float(np.sum(w * (x >= 0.5)) / np.sum(w))

    p_s, f_s = moments(0.51)
    p_o, f_o = moments(0.49)
    return (f_s - f_o) / (p_s - p_o)


def exp1_simulate(rng: np.random.Generator, in_s: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    """Draw (p, y): p ~ U(0.51 ± 0.01k) in S, U(0.49 ± 0.01k) outside; y ~ Bernoulli(p)."""
    in_s = np.asarray(in_s, dtype=bool)
    mu = np.where(in_s, 0.51, 0.49)
    p = rng.uniform(mu - 0.01 * k, mu + 0.01 * k)
    y = (rng.uniform(size=p.shape) < p).astype(np.int64)
    return p, y


# ---------------------------------------------------------------------------------------------
# Experiment 2 (§7.3)

EXP2_EPSILONS = (0.0, 0.3, 1.0, 3.0)
EXP2_LAMBDAS = (0.0, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
EXP2_S_ATTRIBUTES = ("sex", "race", "under_25")
#: The true p_i of Experiment 2 leaves out every attribute that can define S ([open] in §7.3).
EXP2_P_FEATURES = ("charge_degree", "prior_offenses")


def exp2_true_probabilities(df: pd.DataFrame) -> np.ndarray:
    """True p_i of Experiment 2: LR on the real outcomes without the S-defining attributes."""
    return compas_lr_probabilities(df, features=EXP2_P_FEATURES)


def exp2_random_subgroup(rng: np.random.Generator, df: pd.DataFrame,
                         attributes: Sequence[str] = EXP2_S_ATTRIBUTES) -> dict:
    """A random subgroup: per attribute a uniform random non-empty value subset, kept only if strict.

    Redrawn until at least one attribute is constrained.
    """
    while True:
        subset = {}
        for a in attributes:
            values = sorted(df[a].unique().tolist(), key=str)
            while True:
                keep = rng.uniform(size=len(values)) < 0.5
                if keep.any():
                    break
            if not keep.all():
                subset[a] = [v for v, kk in zip(values, keep) if kk]
        if subset:
            return subset


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def logit(p):
    p = np.asarray(p, dtype=np.float64)
    return np.log(p) - np.log1p(-p)


def exp2_inject(p: np.ndarray, in_s: np.ndarray, eps: float, kind: str,
                threshold: float = THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """Audited (p̂_0, θ) under an injection of log-odds size ``eps`` in S.

    ``kind="proba"``: p̂_0 = sigmoid(logit p + eps) in S, θ = 0.5. ``kind="threshold"``: p̂_0 = p,
    θ = sigmoid(logit 0.5 - eps) = sigmoid(-eps) in S.
    """
    in_s = np.asarray(in_s, dtype=bool)
    p = np.asarray(p, dtype=np.float64)
    theta = np.full(p.shape, threshold)
    if kind == "proba":
        return np.where(in_s, sigmoid(logit(p) + eps), p), theta
    if kind == "threshold":
        return p.copy(), np.where(in_s, sigmoid(logit(threshold) - eps), theta)
    raise ValueError(f"kind: must be 'proba' or 'threshold'; got {kind!r}")


# ---------------------------------------------------------------------------------------------
# Output helpers


def results_path(name: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    return RESULTS_DIR / name


def write_csv(df: pd.DataFrame, name: str, float_format: str = "%.6g") -> Path:
    path = results_path(name)
    df.to_csv(path, index=False, float_format=float_format)
    return path


def markdown_table(df: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A GitHub-markdown table of ``df`` (no tabulate dependency)."""
    def cell(v):
        if isinstance(v, float | np.floating):
            return "NaN" if not math.isfinite(float(v)) else format(float(v), floatfmt)
        return str(v).replace("|", "\\|")

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)


def write_markdown(text: str, name: str) -> Path:
    path = results_path(name)
    path.write_text(text if text.endswith("\n") else text + "\n")
    return path


def print_key_values(values: Mapping[str, object]) -> None:
    """End a script's output with ``name: value`` lines."""
    for k, v in values.items():
        if isinstance(v, float | np.floating):
            v = f"{float(v):.6g}"
        print(f"{k}: {v}")


def base_parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="a small run (seconds to a minute)")
    ap.add_argument("--seed", type=int, default=0, help="master seed (NumPy + JAX keys)")
    ap.add_argument("--no-plot", action="store_true", help="skip the PNG output")
    return ap


class Timer:
    """Wall-clock timer (``with Timer() as t: ...; t.seconds``)."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


def cpu_count_note() -> str:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        n = os.cpu_count() or 1
    return f"{n} CPU cores visible"


def grid(*axes):
    """itertools.product as a list (for readable loops)."""
    return list(itertools.product(*axes))


# ---------------------------------------------------------------------------------------------
# RESULTS.md (IJDI section): tables are included verbatim from the files the scripts write

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"
_INCLUDE = __import__("re").compile(
    r"(<!-- begin (?P<name>results/[\w.\-]+) -->\n)(?P<body>.*?)(<!-- end (?P=name) -->)",
    __import__("re").S,
)


def assemble_results(text: str) -> str:
    """Replace every ``<!-- begin results/X -->…<!-- end results/X -->`` block by file X."""
    def repl(m):
        body = (Path(__file__).resolve().parent / m.group("name")).read_text()
        return m.group(1) + body.rstrip("\n") + "\n" + m.group(4)

    return _INCLUDE.sub(repl, text)


if __name__ == "__main__":  # python experiments/ijdi_common.py: refresh the IJDI tables of RESULTS.md
    RESULTS_MD.write_text(assemble_results(RESULTS_MD.read_text()))
    print(f"updated: {RESULTS_MD}")
