"""`extracteval score toolcalls` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# the Spark job gives no per-record rows: `score --engine spark --output` is refused before any work
SPARK_OUTPUT = False


def reads_whole(args: Any) -> bool:
    """--checker bfcl reads its files whole and checks the entries --chunk-size at a time itself
    (the in-memory path); the generic checker streams them."""
    return getattr(args, "checker", "generic") == "bfcl"


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score toolcalls --chunk-size N [--workers W]` (generic checker): JSONL files sorted by
    id, streamed, scored in `workers` processes; per-record counts streamed to
    `folder`/records.parquet."""
    from extracteval.chunked import run_chunk_job
    from extracteval.tasks.toolcalls.chunked import toolcalls_chunk_job
    from extracteval.tasks.toolcalls.pipeline import chunked_document, streaming_config

    job = toolcalls_chunk_job(args.truth[0], args.predictions, config=streaming_config(args), possible_answer=args.possible_answer,
                              chunk_size=chunk_size)
    result, inputs = run_chunk_job(job, workers=workers, folder=folder)
    return result, chunked_document(result, inputs, possible_answer=job.task.possible_answer)


def spark(args: Any, spark: Any, *, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score toolcalls --engine spark` (generic checker; no per-record rows: --output is refused)."""
    from extracteval.tasks.toolcalls.pipeline import chunked_document, streaming_config
    from extracteval.tasks.toolcalls.spark import toolcalls_spark_job

    job = toolcalls_spark_job(spark, args.truth[0], args.predictions, config=streaming_config(args), possible_answer=args.possible_answer,
                              partitions=args.spark_partitions)
    result = job.run().result
    return result, chunked_document(result, job.inputs, possible_answer=job.task.possible_answer)


def refuse(args: Any, engine: str) -> None:
    """What the chosen engine cannot do, refused before any work."""
    if engine == "spark" and getattr(args, "checker", "generic") == "bfcl":
        from extracteval.errors import InputError

        raise InputError("--checker bfcl runs on the local engine; drop --engine spark (--chunk-size/--workers score it in chunks).")
