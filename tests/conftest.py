import os

# Keep tests deterministic and quiet; helpers force several host devices in subprocesses only.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("OFIJAX_PROGRESS", "0")


# ---- Spark local mode (issue 15): ONE session for the whole test session (startup is slow)
import pytest  # noqa: E402


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
