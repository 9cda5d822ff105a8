"""Every task of the registry gives the chunked engine and Spark their job through its adapter
(`chunk_job`, `spark_job`): the entry points `score <task> --chunk-size/--workers` and
`--engine spark` run. A task whose adapter lacks them fails here."""

from __future__ import annotations

import json
import pickle

import pytest

from extracteval.chunked import ChunkJob, run_chunks
from extracteval.cli import build_parser
from extracteval.mlflow.adapters import TASKS, get_adapter
from tests.contract.engine_cases import TASK_ARGS


@pytest.mark.parametrize("task", list(TASKS))
def test_the_adapters_chunk_job_scores_what_score_in_memory_scores(cli, task):
    adapter = get_adapter(task)
    assert callable(getattr(adapter, "spark_job", None)), f"{task}: the adapter has no spark_job"
    args = build_parser().parse_args(["score", task, *TASK_ARGS[task]])
    job = adapter.chunk_job(args, chunk_size=3)
    assert isinstance(job, ChunkJob)
    pickle.loads(pickle.dumps(job.task))  # travels to worker processes
    result, stats = run_chunks(job.task, job.chunks, workers=1)
    assert stats.chunks > 1
    want = json.loads(cli("score", task, *TASK_ARGS[task], "--json").out)
    if "inputs" in want:  # the documents that name their inputs name the job's
        assert job.inputs == want["inputs"]
    result = result[0] if isinstance(result, tuple) else result  # a task may finalise to (result, notes)
    while not hasattr(result, "to_dict") and hasattr(result, "result"):  # or wrap it with what its evaluate logs
        result = result.result
    assert list(result.to_dict()["ranking"]) == list(want["ranking"])
