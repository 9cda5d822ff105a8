"""Spark engine: score Spark DataFrames with the same core as the local engine.

Needs `pip install 'extracteval[spark]'` (pyspark and a Java 17+ runtime). Nothing here is
imported by `import extracteval`; `extracteval.tasks.fields.spark` imports pyspark when called.
"""

from __future__ import annotations

import argparse

__all__ = ["LazySession", "get_session", "session_for", "java_executable", "require_java", "require_pyspark"]


def require_pyspark() -> None:
    """Raise a clear `InputError` when pyspark is not installed."""
    from extracteval.errors import InputError

    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError(
            "--engine spark needs pyspark: pip install 'extracteval[spark]' (and a Java 17+ runtime)."
        ) from None


def java_executable() -> str | None:
    """The `java` Spark would start the driver's JVM with: `$JAVA_HOME/bin/java` whenever JAVA_HOME
    is set (None when it has none, whatever the PATH holds), else the PATH's `java`."""
    import os
    import shutil
    from pathlib import Path

    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        return str(java) if java.exists() else None
    return shutil.which("java")


def require_java() -> None:
    """Raise a clear `InputError` when `java_executable` finds none: pyspark starts the driver's
    JVM itself and would otherwise fail with its own gateway traceback."""
    import os

    from extracteval.errors import InputError

    if java_executable() is not None:
        return
    home = os.environ.get("JAVA_HOME")
    if home:
        raise InputError(f"--engine spark needs a Java 17+ runtime: $JAVA_HOME ({home}) has no bin/java; "
                         "set it to a Java installation, or unset it to use the `java` on the PATH.")
    raise InputError("--engine spark needs a Java 17+ runtime: no `java` command is on the PATH. "
                     "Install one (Debian/Ubuntu: apt-get install default-jre-headless) or set JAVA_HOME.")


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
    if not submitted:
        require_java()
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


class LazySession:
    """The session of `get_session(master, shuffle_partitions=…)`, started at its first use.

    Starting Spark takes seconds and prints the JVM's start-up lines; the command-line engines
    hand a task this stand-in, so everything the task checks before it reads a file with Spark
    (files that are not there, its configuration, options it cannot take) is reported at once,
    as the error alone. Every attribute is the started session's."""

    def __init__(self, master: str | None = None, *, shuffle_partitions: int | None = None) -> None:
        # pyspark is looked for at the first use too: a refusal that names the inputs or the
        # options (the more specific message) comes before the install hint
        self._master = master
        self._shuffle_partitions = shuffle_partitions
        self._session = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        # only for names this object lacks: the session's own attributes
        if name.startswith("_"):
            raise AttributeError(name)
        if self._session is None:
            self._session = get_session(self._master, shuffle_partitions=self._shuffle_partitions)
        return getattr(self._session, name)


def session_for(args: argparse.Namespace) -> object:
    """The Spark session `--spark-master` / `--spark-partitions` ask for (a clear error without
    pyspark), started when the task first uses it: a truth or predictions file that is not there,
    and whatever else the task checks before it reads with Spark, is reported before Spark starts
    (seconds, and the lines its JVM prints)."""
    from extracteval.io.scale_options import check_local_inputs

    check_local_inputs(args)
    return LazySession(getattr(args, "spark_master", None), shuffle_partitions=getattr(args, "spark_partitions", None) or 8)
