"""Every engine, for every task of the registry: `evaluate <task> --chunk-size N [--workers K]`
logs exactly what the in-memory `evaluate` logs (metrics, params, tags, dataset input, artifacts,
Parquet rows), read back from two real SQLite tracking stores. The Spark engine's share is in
`test_spark.py` (one SparkSession there)."""

from __future__ import annotations

import pytest

from extracteval.mlflow.adapters import TASKS
from tests.contract.engine_cases import TASK_ARGS
from tests.scale.stores import assert_same_stores, evaluate_task


def test_every_task_has_an_example():
    assert set(TASK_ARGS) == set(TASKS)


@pytest.mark.parametrize("task", list(TASKS))
def test_streamed_evaluate_logs_what_the_in_memory_one_logs(cli, tmp_path, monkeypatch, task, memory_store):
    monkeypatch.chdir(tmp_path)
    want = memory_store(task)  # evaluate_task(cli, task, TASK_ARGS[task], <its folder>, "memory"), once per session
    for extra in (["--chunk-size", "1"], ["--chunk-size", "7", "--workers", "2"], ["--chunk-size", "100000"]):
        name = "chunked-" + "-".join(extra).replace("--", "")
        got = evaluate_task(cli, task, TASK_ARGS[task], tmp_path, name, *extra)
        assert_same_stores(want, got, tmp_path / name)
    # the local copy holds no leftover of the streaming engine
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("extracteval-stream-")]
