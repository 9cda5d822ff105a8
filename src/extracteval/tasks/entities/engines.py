"""`extracteval score entities` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# the Spark job gives no per-record rows: `score --engine spark --output` is refused before any work
SPARK_OUTPUT = False


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score entities --chunk-size/--workers`: JSONL files sorted by id, streamed `chunk_size`
    records at a time, scored in `workers` processes; per-record rows streamed to
    `folder`/records.parquet."""
    from extracteval.chunked import run_chunk_job
    from extracteval.tasks.entities.chunked import entities_chunk_job
    from extracteval.tasks.entities.options import build_config, streaming_similarity

    config, sim_name, sim_opts = build_config(args)
    job = entities_chunk_job(args.truth, args.predictions, config=config, similarity=streaming_similarity(sim_name, sim_opts),
                             chunk_size=chunk_size, id_column=args.id_column, entities_key=args.entities_key)
    result, inputs = run_chunk_job(job, workers=workers, folder=folder)
    doc = result.to_dict()
    doc["inputs"] = inputs
    return result, doc


def spark(args: Any, spark: Any, *, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score entities --engine spark` (no per-record rows: --output is refused)."""
    from extracteval.tasks.entities.options import build_config, streaming_similarity
    from extracteval.tasks.entities.spark import entities_spark_job

    config, sim_name, sim_opts = build_config(args)
    job = entities_spark_job(spark, args.truth, args.predictions, config=config, similarity=streaming_similarity(sim_name, sim_opts),
                             id_column=args.id_column, entities_key=args.entities_key, partitions=args.spark_partitions)
    result = job.run().result
    doc = result.to_dict()
    doc["inputs"] = job.inputs
    return result, doc
