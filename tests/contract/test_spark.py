"""Spark `local[2]`, for every task of the registry: `score <task> --engine spark` gives the
in-memory document, and `evaluate <task> --engine spark` logs what the in-memory `evaluate` logs
(two real SQLite tracking stores compared). One SparkSession for the module."""

from __future__ import annotations

import json

import pytest

from tests.system import require_spark

require_spark()  # pyspark and a Java runtime, or the skip that names what to install

from extracteval.mlflow.adapters import TASKS  # noqa: E402
from tests.contract.engine_cases import TASK_ARGS  # noqa: E402
from tests.scale.stores import assert_same_stores, evaluate_task  # noqa: E402

SPARK = ["--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "3"]


@pytest.mark.parametrize("task", list(TASKS))
def test_score_on_spark_gives_the_in_memory_document(cli, spark, task):
    want = cli("score", task, *TASK_ARGS[task], "--json")
    got = cli("score", task, *TASK_ARGS[task], "--json", *SPARK)
    assert want.code == 0 and got.code == 0, got.err
    assert json.loads(got.out) == json.loads(want.out)


@pytest.mark.parametrize("task", list(TASKS))
def test_evaluate_on_spark_logs_what_the_in_memory_one_logs(cli, spark, tmp_path, monkeypatch, task, memory_store):
    monkeypatch.chdir(tmp_path)
    want = memory_store(task)  # evaluate_task(cli, task, TASK_ARGS[task], <its folder>, "memory"), once per session
    got = evaluate_task(cli, task, TASK_ARGS[task], tmp_path, "spark", *SPARK)
    assert_same_stores(want, got, tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("extracteval-stream-")]


@pytest.mark.parametrize("task", list(TASKS))
def test_slices_on_spark_are_the_in_memory_ones(cli, spark, task, tmp_path):
    from tests.contract.test_slices import CASES, _metadata_file

    meta = _metadata_file(task, tmp_path)
    argv = ["score", task, *CASES[task].score_args, "--slice-by", "group", "--cluster-by", "customer", "--metadata", str(meta), "--json"]
    want, got = cli(*argv), cli(*argv, *SPARK)
    assert want.code == 0 and got.code == 0, got.err
    assert json.loads(got.out)["slices"] == json.loads(want.out)["slices"]
