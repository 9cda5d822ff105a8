"""The Spark test modules' shared session: `local[2]`, one per module (each module skips itself
when pyspark or Java is missing, before this fixture is ever asked for); and each task's in-memory
`evaluate` store, which the engine tests compare theirs with."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    from extracteval.spark import get_session

    session = get_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()


@pytest.fixture
def spark_never_starts(monkeypatch):
    """Fail any start of a Spark session (the engines start theirs through `get_session`); the
    masters asked for, for the failure message."""
    import extracteval.spark

    started: list[str | None] = []

    def refuse(master=None, **_kw):  # type: ignore[no-untyped-def]
        started.append(master)
        raise AssertionError("a Spark session was started before the inputs were checked")

    monkeypatch.setattr(extracteval.spark, "get_session", refuse)
    return started


@pytest.fixture(scope="session")
def memory_store(tmp_path_factory):
    """task → the URI of a SQLite store holding `evaluate <task> TASK_ARGS[task]` run in memory
    (tests.scale.stores.evaluate_task, store name `memory`), made once per session on first use:
    the engine tests of test_engines_registry.py and test_spark_registry.py compare their store
    with it (they only read it)."""
    import os

    from tests.conftest import run_cli as cli
    from tests.scale.engine_cases import TASK_ARGS
    from tests.scale.stores import evaluate_task

    made: dict[str, str] = {}

    def get(task: str) -> str:
        if task not in made:
            folder = tmp_path_factory.mktemp(f"memory-{task}")
            cwd = os.getcwd()
            os.chdir(folder)  # as the tests that used to make it ran: from the folder of the store
            try:
                made[task] = evaluate_task(cli, task, TASK_ARGS[task], folder, "memory")
            finally:
                os.chdir(cwd)
        return made[task]

    return get
