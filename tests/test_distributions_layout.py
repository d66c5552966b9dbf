"""The layout of ``ofijax.distributions`` (issue #38): what users call, where it lives, what the
old module names still hold, module sizes, and results bit for bit those of the code before the
split (values saved as float.hex from the pre-split modules, commit 4b240f7)."""

from __future__ import annotations

import ast
import importlib
import pathlib

import numpy as np
import pytest

from ofijax import distributions as D

PKG = pathlib.Path(D.__file__).parent

#: What users call: the facade's names before the split (none was plumbing, none removed).
PUBLIC = {
    "PMF", "Moments", "Summary", "Threshold", "num_confusion_matrices", "cell_value_count",
    "marginal_benefit_count", "enumerate_confusion_matrices", "rank_confusion_matrix",
    "unrank_confusion_matrix", "marginal_benefit_pmf", "marginal_benefit_moments", "ofi_pmf",
    "ofi_moments", "reduce_all", "sample_uniform", "sample_multinomial",
    "sample_dirichlet_multinomial", "subsample", "uniform_sampler", "multinomial_sampler",
    "dirichlet_multinomial_sampler", "subsample_sampler", "pair_sampler", "pair_statistic",
    "monte_carlo", "sweep", "merge_summaries", "ofi_threshold", "ofi_pvalue", "ofi_pvalue_cms",
    "PValue", "PAPER_THRESHOLD",
}

#: Names tests, experiments and other modules read from the old modules, and their new homes.
OLD_HOMES = {
    "_pvalue": {
        "log_diff_pmf": "_diffpmf", "log_diff_pmfs": "_diffpmf", "_log_binomial": "_diffpmf",
        "_running_sum": "_diffpmf", "log_tail_exact": "_tails", "_mixture_window": "_tails",
        "SMALL_ERRORS": "_tails", "log_tail_saddle": "_saddle", "_log_lower_saddle": "_saddle",
        "_log_tail_hybrid": "_saddle", "_q_sum": "_uniform_tail", "_uniform_cdf": "_uniform_tail",
        "_uniform_log_tail_sum": "_uniform_tail", "_uniform_log_tail_bracket": "_uniform_tail",
        "UNIFORM_SUM_MAX": "_uniform_tail", "null_probs": "_args",
        "PValue": "_pvalue", "engine": "_pvalue", "engine_bounds": "_pvalue",
        "EXACT_MAX_N": "_pvalue", "SADDLE_MIN_N": "_pvalue", "SADDLE_REL_ERROR": "_pvalue",
        "SADDLE_MIN_COUNT": "_pvalue", "SADDLE_MIN_CORRECT": "_pvalue", "_pmf_window": "_pvalue",
        "_ofi_pvalue_result": "_pvalue", "ofi_pvalue": "_pvalue", "ofi_pvalue_cms": "_pvalue",
    },
    "_exact": {"_RankGen": "_reduce", "_check_num_samples": "_args"},
    "_montecarlo": {
        "Summary": "_summary", "ChunkStats": "_summary", "merge_summaries": "_summary",
        "finalize": "_summary", "wilson_interval": "_summary", "summary_from_values": "_summary",
        "SCHEMA_VERSION": "_summary", "make_bins": "_summary", "stream": "_montecarlo",
        "_allgather": "_montecarlo", "Progress": "_montecarlo",
    },
}

#: New name of a moved private helper in its home (public there: other modules of the package
#: import it).
RENAMED = {"_log_binomial": "log_binomial", "_running_sum": "running_sum",
           "_mixture_window": "mixture_window", "_log_lower_saddle": "log_lower_saddle",
           "_log_tail_hybrid": "log_tail_hybrid", "_q_sum": "q_sum", "_uniform_cdf": "uniform_cdf",
           "_uniform_log_tail_sum": "uniform_log_tail_sum",
           "_uniform_log_tail_bracket": "uniform_log_tail_bracket", "_RankGen": "RankGen",
           "_check_num_samples": "check_num_samples"}


def _mod(name):
    return importlib.import_module(f"ofijax.distributions.{name}")


def test_facade_lists_what_users_call_from_private_modules():
    assert set(D.__all__) == PUBLIC and len(D.__all__) == len(PUBLIC)
    for name in D.__all__:
        obj = getattr(D, name)
        home = getattr(obj, "__module__", None)
        if callable(obj):
            assert home.startswith("ofijax.distributions._"), (name, home)


def test_private_modules_are_small_and_say_what_they_own():
    paths = sorted(PKG.glob("_*.py"))
    assert {p.stem for p in paths} >= {"_pvalue", "_exact", "_montecarlo", "_summary", "_tails"}
    for path in paths:
        text = path.read_text()
        assert text.count("\n") <= 700, path.name
        doc = ast.get_docstring(ast.parse(text))
        assert doc is not None and len(doc.split()) >= 20, path.name  # a title and what it owns


def test_old_module_names_still_hold_what_was_read_there():
    for old, names in OLD_HOMES.items():
        m = _mod(old)
        for name, home in names.items():
            assert hasattr(m, name), f"{old}.{name}"
            new = getattr(_mod(home), RENAMED.get(name, name))
            assert getattr(m, name) is new, f"{old}.{name} is not {home}.{RENAMED.get(name, name)}"


def test_exact_max_n_is_read_at_call_time_from_pvalue(monkeypatch):
    """tests/test_pvalue_scale.py lowers _pvalue.EXACT_MAX_N to reach the windows of huge groups:
    the window (not the full PMF) must then come back, and the full PMF without the patch."""
    P = _mod("_pvalue")
    q = (1e-4, 4e-4, 1 - 5e-4)
    off, lv, _ = P._pmf_window(4000, q)
    assert off == -4000 and lv.size == 8001
    monkeypatch.setattr(P, "EXACT_MAX_N", 1000)
    off, lv, drop = P._pmf_window(4000, q)
    assert off > -4000 and lv.size < 8001 and drop < -800


def test_every_huge_group_the_saddlepoint_declines_has_an_exact_window():
    """The routing rule's premise: a group above EXACT_MAX_N outside the saddlepoint's domain
    (rare errors or few correct predictions) is inside the windows' domain."""
    P = _mod("_pvalue")
    assert P.SMALL_ERRORS >= P.SADDLE_MIN_COUNT and P.SMALL_ERRORS >= P.SADDLE_MIN_CORRECT
    n = 10 * P.EXACT_MAX_N
    for a, b, c in [(P.SADDLE_MIN_COUNT / n / 2.1, P.SADDLE_MIN_COUNT / n / 2.1, 0.0),
                    (0.5, 0.5 - P.SADDLE_MIN_CORRECT / n, P.SADDLE_MIN_CORRECT / n * 0.99)]:
        c = 1.0 - a - b if c == 0.0 else c
        probs = np.array([[a, b, c]])
        assert not P._saddle_good(np.array([n]), probs)[0]
        assert P._windowable(n, (a, b, c))


# ----------------------------------------------------------- results saved before the split

BIG_I = [[4_000_000, 1_000_000, 1_500_000, 3_500_000], [10**9, 2 * 10**8, 3 * 10**8, 5 * 10**8],
         [9_000_000, 30, 40, 1_000_000], [10_000_000, 0, 5, 3], [100, 5_000_000, 5_000_000, 50],
         [300, 40, 30, 200], [5000, 800, 900, 3000], [10**7, 10**6, 10**6, 10**7]]
BIG_J = [[4_000_000, 1_010_000, 1_500_000, 3_500_000],
         [10**9, 2 * 10**8 + 150_000, 3 * 10**8, 5 * 10**8], [9_000_000, 45, 20, 1_000_000],
         [9_999_000, 3, 0, 10], [80, 4_000_000, 6_000_000, 10],
         [3_000_000, 400_000, 300_000, 2_000_000], [6000, 700, 1000, 3200],
         [10**7, 10**6 + 5000, 10**6, 10**7]]
BIG_LOGP = ['-0x1.9d59e3e780371p+3', '-0x1.ccbdd7d1fe26ep+3', '-0x1.7fad9ee89b455p+2',
            '-0x1.39162fc9ebd46p+2', '-0x1.8b404f932c899p+16', '0x0.0p+0', '-0x1.82b662ddc4e93p+2',
            '-0x1.1886dfcbcfe45p+2']
BIG_METHOD = ['saddlepoint', 'saddlepoint', 'exact', 'exact', 'saddlepoint', 'exact', 'saddlepoint',
              'saddlepoint']
SMALL_LOGP = {
    "pooled": ['-0x1.1da7fa1cf55c9p+2', '-0x1.eed9572a97062p+3', '-0x1.7d914b2ce6dc0p+1',
               '-0x1.aecf04797eaebp+3', '-0x1.f68e22f478b3dp+2', '-0x1.44e516e3305f2p+0',
               '-0x1.049639464c47ap+0', '-0x1.eeda9e65cb242p+1', '-0x1.eb62de125e27fp+1',
               '-0x1.82c6370a82fcdp+2', '-0x1.920582fb14b96p+1', '-0x1.deef0a5d187fap+1',
               '-0x1.3d5008c93bfb0p+0', '-0x1.63faaab9a9ab8p+2', '-0x1.19d279c980f65p+1',
               '-0x1.92a2a0fbbeb3cp+0', '-0x1.8f1e4869e4716p+0', '-0x1.286cdb87e2fd8p+0',
               '-0x1.41fcd144fa80cp+2', '-0x1.08af6b2d73ab5p+1', '-0x1.942b2caf34014p+2',
               '-0x1.684be40bc32f0p+2', '-0x1.8b837a75d3da9p+1', '-0x1.51ab38d97bdf0p-2',
               '-0x1.54290eb29c1c6p+4', '-0x1.65d17dab57900p-3', '-0x1.13875be03f1d8p+0',
               '-0x1.d1f4ae8089910p+0', '-0x1.68de8ff4d06a1p+1', '-0x1.4f72d208715afp+1'],
    "reference": ['-0x1.c0b7ebd05a863p+2', '-0x1.4ff978713ba2cp+4', '-0x1.6e6a26a0813bcp+2',
                  '-0x1.69d2ce656a639p+4', '-0x1.8552a72ca6719p+3', '-0x1.8f1d569a87192p+0',
                  '-0x1.7b0f96b8b27f6p+0', '-0x1.c54fa8719b398p+2', '-0x1.269e30fd7db20p+2',
                  '-0x1.f3ac8684043aap+2', '-0x1.3ab2a3a857419p+2', '-0x1.655498bc6e5cap+2',
                  '-0x1.7c4fcd0bf57f0p+0', '-0x1.5d6c3b46c9bf4p+3', '-0x1.69a4affe5d82ap+1',
                  '-0x1.8f71b3058ae6fp+1', '-0x1.3051c7a7b2610p+1', '-0x1.9cf59e4803f98p+0',
                  '-0x1.30120b1795b14p+2', '-0x1.13a3b078e246cp+1', '-0x1.35cabe96e4845p+3',
                  '-0x1.35d6e10f617a6p+3', '-0x1.63c364c72d64bp+2', '-0x1.d4e2cfa711ac0p-2',
                  '-0x1.f865be2ed2d7dp+4', '-0x1.164480a8181b8p-2', '-0x1.26c3364464d6ap+0',
                  '-0x1.ca0206751448ep+1', '-0x1.1c32dc5aa36d7p+2', '-0x1.f7eec70ef48f5p+1'],
}


def _hex(values):
    return [float(v).hex() for v in np.asarray(values, dtype=np.float64).ravel()]


def test_pvalues_at_every_size_are_those_saved_before_the_split():
    """Saddlepoint (2e9 rows a group), hybrid, windows of huge groups (rare errors, a zero cell),
    exact: the same log p-values to the last bit, the same methods and bounds."""
    r = D.ofi_pvalue_cms(BIG_I, BIG_J)
    assert _hex(r.log_p_value) == BIG_LOGP
    assert r.method.tolist() == BIG_METHOD
    assert r.error_bound.tolist() == [2e-3 if m == "saddlepoint" else 0.0 for m in BIG_METHOD]


@pytest.mark.parametrize("null", ["pooled", "reference"])
def test_exact_pvalues_of_small_tables_are_those_saved_before_the_split(null):
    rng = np.random.default_rng(1)
    ci, cj = rng.integers(0, 40, size=(30, 4)), rng.integers(0, 40, size=(30, 4))
    ci[:, 0] += 1
    cj[:, 3] += 1
    ref = [5, 3, 2, 7] if null == "reference" else "pooled"
    r = D.ofi_pvalue_cms(ci, cj, null=ref, method="auto" if null == "pooled" else "exact")
    assert _hex(r.log_p_value) == SMALL_LOGP[null]
    assert set(r.method.tolist()) == {"exact"}


def test_ofi_pvalue_pmf_and_threshold_are_those_saved_before_the_split():
    p = D.ofi_pvalue([0.0, 0.1, 0.5, 1.0, 2.0], [3, 10, 50, 200, 7], [4, 20, 50, 300, 9])
    assert _hex(p) == ['0x1.0000000000000p+0', '0x1.c3c16ba5665a7p-1', '0x1.2d1fe97c2fff0p-2',
                       '0x1.b05c3ffcc3e5fp-6', '0x1.3dc013dc013d1p-14']
    pmf = D.marginal_benefit_pmf(57, [0.4, 0.1, 0.2, 0.3])
    assert _hex(pmf.probs[::10]) == [
        '0x1.91bc08eac9a61p-190', '0x1.1e75dcbd5fa68p-126', '0x1.61a5e295d3902p-83',
        '0x1.221c0b4d8dd2fp-50', '0x1.15645f909f076p-26', '0x1.7d6e185cec039p-11',
        '0x1.436ec8798ca98p-4', '0x1.40acc662cc640p-6', '0x1.b4e0b5efc9e6dp-17',
        '0x1.970c684206cdep-36', '0x1.ff3f9478542dfp-65', '0x1.66110e359d655p-107']
    t = D.ofi_threshold(20, 30, null=[5, 1, 2, 6], level=0.9)
    assert (t.threshold, t.sigma_ofi, t.sigma_b_i, t.sigma_b_j) == (
        0.21666666666666667, 0.13203019650487402, 0.10227015045197395, 0.08350322817500086)
