"""Shared fixtures: PRNG keys, an x64 switch and the small embedded data sets.

Environment: tests run on CPU and quietly; helpers force several host devices in subprocesses only.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("OFIJAX_PROGRESS", "0")
os.environ.setdefault("OFIJAX_CACHE", "0")  # no persistent compilation cache in tests

import jax  # noqa: E402
import pytest  # noqa: E402


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
