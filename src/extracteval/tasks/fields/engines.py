"""`extracteval score fields` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from typing import Any


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score fields --chunk-size/--workers`: files streamed by id, chunks scored (in `workers`
    processes), ledgers merged; per-record rows streamed to `folder`/records.parquet."""
    from extracteval.chunked import run_chunk_job
    from extracteval.tasks.fields.chunks import args_chunk_job

    result, inputs = run_chunk_job(args_chunk_job(args, chunk_size=chunk_size), workers=workers, folder=folder)
    doc = result.to_dict()
    doc["inputs"] = inputs
    return result, doc


def spark(args: Any, spark: Any, *, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score fields --engine spark`; the per-record rows written to `folder`/records.parquet by Spark."""
    from extracteval.tasks.fields.spark import args_spark_job

    job = args_spark_job(args, spark)
    run = job.run()
    if folder is not None:
        run.records.write.mode("overwrite").parquet(str(folder / "records.parquet"))
    doc = run.result.to_dict()
    doc["inputs"] = job.inputs
    return run.result, doc
