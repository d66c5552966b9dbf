"""Shared fixtures: PRNG keys, an x64 switch and the small embedded data sets.

Environment: tests run on CPU and quietly; helpers force several host devices in subprocesses only.
"""

import os
import shutil
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("OFIJAX_PROGRESS", "0")

# One ofijax compilation cache per test session, in a fresh temporary folder (never the user's
# ~/.cache): the controller creates it before the xdist workers start, so both workers and every
# subprocess they launch (CLI, notebooks, gpu_check, jax.distributed workers) inherit
# OFIJAX_CACHE_DIR and load ofijax's kept executables (aot_jit) that another process already
# compiled instead of compiling them again. The session also opts in to JAX's own persistent
# cache in that folder (OFIJAX_JAX_CACHE=1; a user's import of ofijax changes no JAX setting, and
# tests/test_jaxcache.py checks that in subprocesses without this variable), so the many small
# programs outside aot_jit are compiled once per session, not once per process. A kept executable is the executable XLA would build
# (tests/test_jaxcache.py checks that results do not depend on the cache), and the folder starts
# empty, so a run never depends on an earlier one. OFIJAX_CACHE=0 (or an OFIJAX_CACHE_DIR of your
# own) set outside still wins.
_SESSION_CACHE = None
if "PYTEST_XDIST_WORKER" not in os.environ and not os.environ.get("OFIJAX_CACHE_DIR"):
    _SESSION_CACHE = tempfile.mkdtemp(prefix="ofijax-test-jax-cache-")
    os.environ["OFIJAX_CACHE_DIR"] = _SESSION_CACHE
    os.environ.setdefault("OFIJAX_JAX_CACHE", "1")

import jax  # noqa: E402
import pytest  # noqa: E402


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:  # the process that made it (the controller under xdist)
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


@pytest.fixture
def key():
    """A fresh ``jax.random.key(0)``."""
    return jax.random.key(0)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64(request):
    """Run the test body in JAX's default 32-bit mode and again with ``jax_enable_x64``."""
    with jax.enable_x64(request.param):
        yield request.param


@pytest.fixture(scope="session")
def compas_violent():
    """ProPublica's violent two-year COMPAS file (4,020 rows), as the OFI paper used it."""
    from ofijax.datasets import load_compas

    return load_compas("violent")


@pytest.fixture(scope="session")
def compas_ijdi():
    """The IJDI reference's COMPAS table."""
    from ofijax.datasets import load_compas

    return load_compas("ijdi")


# ---- Spark local mode (issue 15): ONE session for the whole test session (startup is slow)


@pytest.fixture(scope="session")
def spark():
    """A local-mode SparkSession shared by every test that asks for it (pyspark: extra [spark])."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]").appName("ofijax-tests")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# ---- xdist scheduling (pyproject: --dist loadfile --no-loadscope-reorder): each file runs on one
# worker, so its tests share the programs they compile (module data and shapes are chosen for
# that), and files start longest first so that no long file is left for the end on one worker.
# Seconds of each file: CPU seconds of its tests in one worker (user + system, waited-for
# subprocesses included: load-independent, about the file's wall time on a quiet core; a Spark JVM
# is not a waited-for child, so test_stats.py adds ~40 s of JVM), from the quick tier's and the
# slow tier's runs of experiments/notes/suite_and_cache.md; only the order matters. Unlisted files
# take under ~6 s and keep their collection order after these.
_FILE_SECONDS = {
    "tests/test_scan_engine.py": 127,
    "tests/test_scan_basis.py": 85,
    "tests/test_contract.py": 74,
    "tests/test_stats.py": 66,
    "tests/test_notebooks.py": 63,
    "tests/test_ijdi_randomization.py": 51,
    "tests/test_scans_round2.py": 46,
    "tests/test_jaxcache.py": 40,
    "tests/test_simulation_studies.py": 38,
    "tests/test_diff_experiment.py": 38,
    "tests/test_distributions_sampling.py": 32,
    "tests/test_robustness_scan.py": 29,
    "tests/test_distributions_montecarlo.py": 27,
    "tests/test_diff_estimator.py": 26,
    "tests/test_diff_plugin.py": 10,
    "tests/test_dirichlet_bars.py": 10,
    "tests/test_alias_tables.py": 5,
    "tests/test_trust3_scan.py": 26,
    "tests/test_diff.py": 25,
    "tests/test_ofi_experiments.py": 24,
    "tests/test_scans_round3.py": 23,
    "tests/test_gpu_check.py": 23,
    "tests/test_cli.py": 22,
    "tests/test_readme.py": 21,
    "tests/test_scan_api.py": 20,
    "tests/test_audit_batch.py": 19,
    "tests/test_scan_seams.py": 17,
    "tests/test_robustness_distributions.py": 16,
    "tests/test_scan_search.py": 15,
    "tests/test_distributions.py": 15,
    "tests/test_scan_aif360.py": 12,
    "tests/test_report_html.py": 11,
    "tests/test_audit_frame.py": 11,
    "tests/test_ijdi.py": 10,
    "ofijax/distributions/_reduce.py": 9,
    "tests/test_input_types.py": 9,
    "tests/test_trust3_cli.py": 8,
    "tests/test_core_metrics.py": 7,
    "tests/test_robustness.py": 7,
    "tests/test_ijdi_experiments.py": 6,
    "tests/test_samplers_speed.py": 20,
    "tests/test_diff_defaults.py": 8,
    "tests/test_samplers_law.py": 20,
    "tests/test_hypergeometric.py": 8,
}


#: Files in the slow tier as a whole (``-m slow``; .ci/run runs it after the README's command):
#: they check that the scan engine's program variants (split searches on 1–3 threads, lane
#: groups, solver and basis variants, kept vs fresh executables) agree bit for bit, each variant a
#: compilation of its own — about a third of the quick tier's CPU time. The public scans'
#: brute-force oracles (test_robustness_scan, test_scan_api, test_trust3_scan, test_scans_round*,
#: test_contract) stay in the quick tier.
_SLOW_FILES = {
    "tests/test_scan_engine.py",
    "tests/test_scan_basis.py",
    "tests/test_scan_seams.py",
    "tests/test_jaxcache.py",
    "tests/test_ijdi_randomization.py",  # replicate programs vs serial Algorithm 1, chunkings
}

#: Single tests of the same kind (program variants compared bit for bit, each a compilation).
_SLOW_TESTS = {
    "tests/test_distributions_montecarlo.py::test_sharded_equals_single_device",
    "tests/test_scans_round2.py::test_exhaustive_rows_equal_cells_and_randomization_runs_the_same_search",
    "tests/test_trust3_scan.py::test_scan_cells_num_samples_alias",
    # the Dirichlet-multinomial chain's moments at n = 3000; its law and the chain's uniform case
    # stay in the quick tier (test_samplers_law.py, test_dirichlet_multinomial_large_n_is_uniform)
    "tests/test_samplers_speed.py::test_dirichlet_multinomial_large_n_moments",
    # the quick tier's largest single tests (5-11 CPU-s each on 2 busy cores), moved when the
    # README's command reached 5 min 02 s in a clean `.ci/run` (2026-12-05); CI runs them in the
    # slow tier, so nothing is skipped
    "tests/test_robustness_scan.py::test_rate_scans_match_brute_force",
    "tests/test_scan_search.py::test_seeded_lanes_are_added_after_the_restarts_and_never_make_a_search_worse",
    "tests/test_simulation_studies.py::test_sweep_multinomial_pairs",
    "tests/test_robustness_distributions.py::test_samplers_rows_are_exact_confusion_matrices",
    "tests/test_samplers_speed.py::test_pair_of_equal_multinomial_samplers_one_call",
    "tests/test_diff_estimator.py::test_max_ofi_interval_covers_by_simulation",
    "tests/test_distributions_sampling.py::test_uniform_sampler_table_paths_agree",
    # this session's additions (the README's command read 5 min 03 s in a clean `.ci/run` after
    # them, 2026-12-05 06:27): each compiles a program of its own; the slow tier runs them
    "ofijax/distributions/_samplers.py::ofijax.distributions._samplers.subsample",
    "tests/test_diff_plugin.py::test_three_groups_meet_the_tolerance_whatever_their_names",
    "tests/test_diff_plugin.py::test_score_proba_and_predict_agree_with_numpy",
    "tests/test_samplers_law.py::test_dirichlet_marginals_are_beta",
    "tests/test_samplers_law.py::test_window_that_does_not_fit_goes_to_the_chain",
    "tests/test_hypergeometric.py::test_log_ratio_matches_mpmath",
    # round 4 (2026-12-05): wide-row laws (2^16-2^18 draws) and a subprocess; the small-n law,
    # the tables' PMFs and the routes stay quick
    "tests/test_dirichlet_bars.py::test_large_n_marginals_and_covariance",
    "tests/test_alias_tables.py::test_draws_at_wide_rows",
    "tests/test_robustness_cli.py::test_closed_stdout_stops_quietly",
    # the README's command read 6 min 37 s in a clean `.ci/run` (2026-12-05 09:00, 1,532 passed;
    # the same code of round 3 also ran ~20 % slower on this machine today): the 37 largest quick
    # tests by `--durations` (213 CPU-s) join the slow tier, which CI runs
    "tests/test_samplers_law.py::test_dirichlet_chain_whole_law_small_n",
    "tests/test_contract.py::test_scans_rows_names_types",
    "tests/test_simulation_studies.py::test_cli_simulate_subsample_exact_moments",
    "tests/test_samplers_speed.py::test_dirichlet_multinomial_large_n_is_uniform",
    "tests/test_robustness_scan.py::test_bias_scan_and_score_subset_match_brute_force",
    "tests/test_scans_round2.py::test_uniform_predictions_detect_nothing",
    "tests/test_scans_round3.py::test_stats_rate_scans_return_the_one_result_type_with_certified_and_rate",
    "tests/test_samplers_speed.py::test_multinomial_cms_law_small_n",
    "tests/test_samplers_law.py::test_table_multinomial_marginals_are_binomial",
    "tests/test_report_html.py::test_report_html_in_headless_chromium",
    "tests/test_input_types.py::test_scans_equal_pandas",
    "tests/test_cli.py::test_simulate",
    "tests/test_scans_round2.py::test_stream_scan_options_refused_or_applied_by_name",
    "tests/test_distributions_sampling.py::test_sample_multinomial_large_n_moments",
    "tests/test_simulation_studies.py::test_cli_simulate_out_writes_results_and_plots",
    "tests/test_scan_api.py::test_bins_and_high_cardinality_columns",
    "tests/test_distributions.py::test_packed_lookup_table_is_the_enumeration",
    "tests/test_contract.py::test_audit_rows_permuted_and_groups_renamed",
    "ofijax/distributions/_reduce.py::ofijax.distributions._reduce.sweep",
    "tests/test_diff.py::test_check_grads_penalties_and_empty_group",
    "tests/test_robustness_scan.py::test_ijdi_scan_score_is_its_subgroups_score",
    "tests/test_ofi_experiments.py::test_employment_script_quick",
    "tests/test_cli.py::test_default_audit_writes_reports_equal_to_the_api",
    "ofijax/diff/_estimator.py::ofijax.diff._estimator.OFIClassifier",
    "tests/test_ofi_experiments.py::test_robustness_script_quick",
    "tests/test_stats.py::test_rate_scans_from_cells_equal_row_scans",
    "tests/test_simulation_studies.py::test_sweep_compiles_once_for_all_sizes_and_counts",
    "tests/test_contract.py::test_audit_randomized_outputs_keep_their_distribution",
    "tests/test_trust3_scan.py::test_shuffled_series_give_the_aligned_result_ijdi_and_bias",
    "tests/test_ofi_experiments.py::test_distributions_script_quick",
    "tests/test_scan_aif360.py::test_parity_with_aif360",
    "tests/test_stats.py::test_cell_randomization_test_finds_planted_and_is_reproducible",
    "tests/test_scan_search.py::test_top_k_finds_two_planted_subgroups_with_familywise_pvalues",
    "tests/test_diff_estimator.py::test_evaluate_does_not_depend_on_group_order",
    "tests/test_cells_round3.py::test_every_randomization_p_value_carries_its_interval",
    "tests/test_simulation_studies.py::test_several_statistics_in_one_pass",
    "tests/test_distributions_montecarlo.py::test_monte_carlo_ofi_pairs_and_threshold",
}


def _uses_spark(item) -> bool:
    """Tests that start Spark (the session fixture, or ``--engine spark`` CLI runs, each its own
    JVM) belong to the slow tier: Spark's start-up alone is tens of seconds of wall time."""
    return "spark" in getattr(item, "fixturenames", ()) or "spark" in item.nodeid.split("::", 1)[-1].lower()


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the marks below count
def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.nodeid.split("::", 1)[0] in _SLOW_FILES or item.nodeid.split("[", 1)[0] in _SLOW_TESTS
                or _uses_spark(item)):
            item.add_marker(pytest.mark.slow)

    def seconds(item):
        return _FILE_SECONDS.get(item.nodeid.split("::", 1)[0], 0)

    items[:] = sorted(items, key=lambda item: -seconds(item))  # stable: file order kept within
