"""Shared fixtures. Reference data lives outside the repository in ../shared/data; tests that
need it skip with a clear reason when it is absent (a user's clone)."""

from __future__ import annotations

import os
from pathlib import Path

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from extracteval.tasks import TASKS, TaskSpec

# fixtures every test folder may use: tracking stores and servers, Spark sessions
pytest_plugins = ("tests.fixtures.tracking", "tests.fixtures.engines")

# the test suite's own task (tests/tasks/records/), registered only while the tests run: a task is
# one folder and this one line of the registry
TASKS["records"] = TaskSpec("records", "extraction-fields", package="tests.tasks.records")



@pytest.fixture
def product_tasks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry without the test suite's own tasks, for a test of what the product's users
    see of it (the docs' tables, the command's listing)."""
    from extracteval.tasks import RANKING_SPECS

    for task, spec in list(TASKS.items()):
        if "." in spec.package:
            monkeypatch.delitem(TASKS, task)
    monkeypatch.setattr(RANKING_SPECS, "_specs", None)  # read again from the registry as it is now


REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = REPO / "experiments"


def _shared_data() -> Path:
    env = os.environ.get("EXTRACTEVAL_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


SHARED_DATA = _shared_data()


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (or $EXTRACTEVAL_SHARED_DATA); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA} (set EXTRACTEVAL_SHARED_DATA to run the reference tests)")
    return SHARED_DATA



# MLflow reads these from the environment: a test must never log to (or resume a run in) the
# developer's own tracking store
AMBIENT_MLFLOW = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_RUN_ID")


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_mlflow_session() -> Any:
    """Also for module- and session-scoped fixtures, which run before the per-test one."""
    with pytest.MonkeyPatch.context() as mp:
        for name in AMBIENT_MLFLOW:
            mp.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Path | None]:
    """The path of an SQLite database holding exactly the tables MLflow's own schema migrations
    make (no experiment yet), made once per session at the first call (never to be written: copy
    it); None with an MLflow that has no such migration step to call."""
    import mlflow.store.db.utils as db_utils

    real = getattr(db_utils, "_initialize_tables", None)  # MLflow's, whatever patches a test applies later
    folder = tmp_path_factory.mktemp("mlflow-schema")
    template = folder / "template.db"

    def get() -> Path | None:
        if real is None:
            return None
        if not template.exists():
            import sqlalchemy

            partial = folder / "partial.db"  # renamed once complete: a failed migration leaves no template
            partial.unlink(missing_ok=True)
            maker = sqlalchemy.create_engine(f"sqlite:///{partial}")
            try:
                real(maker)
            finally:
                maker.dispose()
            partial.rename(template)
        return template

    return get


@pytest.fixture(scope="session", autouse=True)
def _new_sqlite_stores_from_a_migrated_copy(migrated_store: Callable[[], Path | None]) -> Any:
    """A new SQLite tracking store is made by MLflow running every schema migration (0.7–1.5 s on
    the development machine), and the suite makes hundreds. In this process a new store — a
    database with no table at all — gets the content of `migrated_store` through SQLite's backup
    API instead: the same tables, indexes and schema version (tests/mlflow/test_store_template.py).
    A database that holds tables of its own (an older MLflow schema, another program's) is left to
    MLflow. Everything after (MLflow's schema check, every read and write) is MLflow's own code on
    a real file. Stores made by other processes (`mlflow server`, commands run as subprocesses) are
    made the usual way — but for the default store of the documentation blocks' copies
    (tests/test_readme.py), copied from the same template."""
    import sqlite3

    import mlflow.store.db.utils as db_utils

    real = getattr(db_utils, "_initialize_tables", None)
    if real is None:  # an MLflow that makes its tables some other way: stores are made its way
        yield
        return

    def initialize(engine: Any) -> None:
        import sqlalchemy

        database = engine.url.database if engine.dialect.name == "sqlite" else None
        template = migrated_store()
        if not database or database == ":memory:" or template is None or sqlalchemy.inspect(engine).get_table_names():
            return real(engine)
        source = sqlite3.connect(f"{template.as_uri()}?mode=ro", uri=True)
        raw = engine.raw_connection()
        try:
            source.backup(raw.driver_connection)
        finally:
            raw.close()
            source.close()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(db_utils, "_initialize_tables", initialize)
        yield


@pytest.fixture(autouse=True)
def _no_ambient_mlflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without them, even after a test that set one without monkeypatch, and
    never waits minutes for MLflow's retries of a request to a store."""
    for name in AMBIENT_MLFLOW:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")


# What the default store of a test run from the checkout would leave there (MLflow's ./mlflow.db
# and ./mlartifacts). A developer may have them from `make demo`, so the check is "unchanged by
# this session", by a snapshot of their sizes and modification times.
STORE_LEFTOVERS = ("mlflow.db", "mlartifacts")


def _store_snapshot() -> dict[str, Any]:
    snap: dict[str, Any] = {}
    for name in STORE_LEFTOVERS:
        p = REPO / name
        if not p.exists():
            continue
        st = p.stat()
        entries = sorted((c.name, c.stat().st_mtime_ns) for c in p.iterdir()) if p.is_dir() else []
        snap[name] = (st.st_size if p.is_file() else None, st.st_mtime_ns, entries)
    return snap


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_SNAPSHOT] = _store_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_SNAPSHOT, None)
    if before is None:
        return
    after = _store_snapshot()
    changed = [n for n in STORE_LEFTOVERS if before.get(n) != after.get(n)]
    if changed:
        what = ", ".join(f"{REPO / n} ({'created' if n not in before else 'modified'})" for n in changed)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = (f"a test logged to MLflow's default store in the checkout: {what}. Tests must chdir to tmp_path "
               "or pass --tracking-uri into tmp_path.")
        if reporter is not None:
            reporter.write("\n")
            reporter.write_line("ERROR: " + msg, red=True, bold=True)
        else:
            print("ERROR: " + msg)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_SNAPSHOT = pytest.StashKey[dict]()


@dataclass
class CliResult:
    """What one `extracteval` command gave: `r.code`, `r.out`, `r.err`, `r.json()`, or unpacked
    as `code, out, err = r`."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.code, self.out, self.err))


def run_cli(*argv: str) -> CliResult:
    """Run the `extracteval` command in-process with its output captured (for fixtures of a wider
    scope than `cli`'s, which captures through pytest's `capsys`)."""
    import contextlib
    import io

    from extracteval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors and --help
            code = int(e.code or 0)
    return CliResult(code=code, out=out.getvalue(), err=err.getvalue())


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the `extracteval` command in-process: cli("score", "fields", ...) -> CliResult."""

    from extracteval.cli import main

    def run(*argv: str) -> CliResult:
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors and --help
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run


def hide_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this test's process look like one without pyspark: `import pyspark` (and of any of its
    modules) fails, the modules already loaded are hidden, all put back after the test."""
    import sys

    # what the commands import, imported first: a module imported for the first time while
    # pyspark is hidden could keep "no pyspark" after the test
    import extracteval.cli  # noqa: F401
    import mlflow.models  # noqa: F401

    for name in [n for n in sys.modules if n == "pyspark" or n.startswith("pyspark.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # makes `import pyspark` fail


@pytest.fixture
def no_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test runs as on a machine without pyspark (`hide_pyspark`)."""
    hide_pyspark(monkeypatch)


@pytest.fixture(params=["with pyspark", "without pyspark"])
def pyspark_or_not(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test twice: with pyspark importable (the `spark` extra, which `make test` installs)
    and as on a machine without it (`hide_pyspark`). A refusal of `--engine spark` that names the
    inputs or the options must read the same either way."""
    if request.param == "with pyspark":
        from tests.system import python_package

        python_package("pyspark", "spark")
    else:
        hide_pyspark(monkeypatch)
    return str(request.param)
