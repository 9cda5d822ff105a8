"""`extracteval score json` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# the Spark job gives no per-record rows: `score --engine spark --output` is refused before any work
SPARK_OUTPUT = False


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score json --chunk-size/--workers`: JSONL files streamed by id, chunks scored (in
    `workers` processes); per-record rows streamed to `folder`/records.parquet and buckets.parquet."""
    from dataclasses import replace

    from extracteval.chunked import run_chunks
    from extracteval.core.similarity import get_similarity
    from extracteval.tasks.json.chunked import json_chunk_job, scaled_document
    from extracteval.tasks.json.options import build_config

    config, sim_name, sim_opts = build_config(args)
    backend = get_similarity(sim_name, **sim_opts)
    records_mode = getattr(args, "records", "auto") or "auto"
    job = json_chunk_job(args.truth, args.predictions, config=config, similarity=backend, chunk_size=chunk_size, workers=workers, id_key=args.id_key,
                         records_mode=records_mode)
    task, paths = job.task, None
    if folder is not None:
        paths = {"records": folder / "records.parquet", "buckets": folder / "buckets.parquet"}
        task = replace(task, keep_records=True)
    result, _ = run_chunks(task, job.chunks, workers=workers, records_path=paths)
    return result, scaled_document(result, job.inputs, records_mode, backend)


def spark(args: Any, spark: Any, *, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score json --engine spark` (no per-record files: --output is refused)."""
    from extracteval.core.similarity import get_similarity
    from extracteval.tasks.json.chunked import scaled_document
    from extracteval.tasks.json.options import build_config
    from extracteval.tasks.json.spark import json_spark_job

    config, sim_name, sim_opts = build_config(args)
    backend = get_similarity(sim_name, **sim_opts)
    records_mode = getattr(args, "records", "auto") or "auto"
    job = json_spark_job(spark, args.truth, args.predictions, config=config, similarity=backend, id_key=args.id_key, records_mode=records_mode,
                         partitions=args.spark_partitions)
    result = job.run().result
    return result, scaled_document(result, job.inputs, records_mode, backend)
