"""Every engine, for every task of the registry: `evaluate <task> --chunk-size N [--workers K]`
logs exactly what the in-memory `evaluate` logs (metrics, params, tags, dataset input, artifacts,
Parquet rows), read back from two real SQLite tracking stores. The Spark engine's share is in
`test_spark_registry.py` (one SparkSession there)."""

from __future__ import annotations


import pytest

from extracteval.mlflow.tasks import TASKS
from tests.scale.engine_cases import STREAMED_EVALUATE_MISSING, TASK_ARGS
from tests.scale.stores import assert_same_stores, evaluate_task


def _missing(task: str) -> list:
    return [pytest.mark.xfail(strict=True, reason=f"evaluate {task} does not stream yet")] if task in STREAMED_EVALUATE_MISSING else []


def test_every_task_has_an_example():
    assert set(TASK_ARGS) == set(TASKS)


@pytest.mark.parametrize("task", [pytest.param(t, marks=_missing(t)) for t in TASKS])
def test_streamed_evaluate_logs_what_the_in_memory_one_logs(cli, tmp_path, monkeypatch, task):
    monkeypatch.chdir(tmp_path)
    want = evaluate_task(cli, task, TASK_ARGS[task], tmp_path, "memory")
    for extra in (["--chunk-size", "1"], ["--chunk-size", "7", "--workers", "2"], ["--chunk-size", "100000"]):
        name = "chunked-" + "-".join(extra).replace("--", "")
        got = evaluate_task(cli, task, TASK_ARGS[task], tmp_path, name, *extra)
        assert_same_stores(want, got, tmp_path / name)
    # the local copy holds no leftover of the streaming engine
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("extracteval-stream-")]


@pytest.mark.parametrize("task", sorted(STREAMED_EVALUATE_MISSING))
def test_a_task_that_does_not_stream_refuses_the_options(cli, tmp_path, task):
    res = cli("evaluate", task, *TASK_ARGS[task], "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 'x.db'}", "--chunk-size", "5")
    assert res.code == 2 and f"evaluate {task}" in res.err and "Traceback" not in res.err, res.err
