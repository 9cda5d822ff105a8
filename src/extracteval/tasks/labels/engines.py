"""`extracteval score labels` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from typing import Any


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score labels --chunk-size/--workers`: wide CSV/TSV/JSONL/Parquet files sorted by id,
    streamed `chunk_size` records at a time (`io.chunks`), scored in `workers` processes."""
    from extracteval.chunked import run_chunks
    from extracteval.tasks.labels.chunked import labels_chunk_job, labels_document
    from extracteval.tasks.labels.options import build_config, chosen_features

    job = labels_chunk_job(args.truth, args.predictions, config=build_config(args), features=chosen_features(args), chunk_size=chunk_size,
                           id_column=args.id_column, delimiter=args.delimiter)
    (result, notes), _ = run_chunks(job.task, job.chunks, workers=workers)
    return result, labels_document(result, notes, job.inputs)


def spark(args: Any, spark: Any, *, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score labels --engine spark` (labels write no per-record rows: `folder` gets the tables only)."""
    from extracteval.tasks.labels.chunked import labels_document
    from extracteval.tasks.labels.options import build_config, chosen_features
    from extracteval.tasks.labels.spark import labels_spark_job

    job = labels_spark_job(spark, args.truth, args.predictions, config=build_config(args), features=chosen_features(args),
                           id_column=args.id_column, delimiter=args.delimiter, partitions=args.spark_partitions)
    result, notes = job.run().result
    return result, labels_document(result, notes, job.inputs)
