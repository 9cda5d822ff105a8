"""`extracteval score structured` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# the Spark job gives no per-record rows: `score --engine spark --output` is refused before any work
SPARK_OUTPUT = False


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score structured --chunk-size/--workers`: JSONL files sorted by id, streamed
    `chunk_size` records at a time, scored in `workers` processes; per-record counts streamed
    to `folder`/records.parquet."""
    from extracteval.chunked import run_chunk_job
    from extracteval.tasks.structured.chunked import structured_chunk_job
    from extracteval.tasks.structured.pipeline import chunked_document, streaming_config

    job = structured_chunk_job(args.truth, args.predictions, config=streaming_config(args), chunk_size=chunk_size)
    result, inputs = run_chunk_job(job, workers=workers, folder=folder)
    return result, chunked_document(result, inputs)


def spark(args: Any, spark: Any, *, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score structured --engine spark` (no per-record rows: --output is refused)."""
    from extracteval.tasks.structured.pipeline import chunked_document, streaming_config
    from extracteval.tasks.structured.spark import structured_spark_job

    job = structured_spark_job(spark, args.truth, args.predictions, config=streaming_config(args), partitions=args.spark_partitions)
    result = job.run().result
    return result, chunked_document(result, job.inputs)
