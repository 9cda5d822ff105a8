"""Spark engine: score Spark DataFrames with the same core as the local engine.

Needs `pip install 'extracteval[spark]'` (pyspark and a Java 17+ runtime). Nothing here is
imported by `import extracteval`; `extracteval.tasks.fields.spark` imports pyspark when called.
"""

from __future__ import annotations

__all__ = ["get_session", "require_pyspark"]


def require_pyspark() -> None:
    """Raise a clear `InputError` when pyspark is not installed."""
    from extracteval.errors import InputError

    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError(
            "--engine spark needs pyspark: pip install 'extracteval[spark]' (and a Java 17+ runtime)."
        ) from None


def get_session(master: str | None = None, *, app_name: str = "extracteval", shuffle_partitions: int | None = None):  # type: ignore[no-untyped-def]
    """The active SparkSession, or a new one on `master` (default `local[*]`; under
    `spark-submit` the master comes from the submit command and `master` should be None)."""
    require_pyspark()
    from pyspark.sql import SparkSession

    import os
    import sys

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    # launched by spark-submit: the gateway exists and the master is the submit command's
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not submitted:
        master = "local[*]"
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        # local executors run this interpreter, which has extracteval (a cluster's executors
        # need extracteval installed: see the spark-submit example in docs/scale.md)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true").config("spark.ui.showConsoleProgress", "false")
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
