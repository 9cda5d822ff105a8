"""`extracteval score spans` on the streaming engines: `chunked` (--chunk-size/--workers) and
`spark` (--engine spark), each giving (result, result document); `commands/score.py` chooses
the engine, and scores in memory through the task's adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score spans --chunk-size/--workers`: JSONL documents streamed by id, token files N
    sentences at a time, scored in `workers` processes (spans write no per-record rows)."""
    from extracteval.chunked import run_chunks
    from extracteval.tasks.spans.chunked import spans_chunk_job
    from extracteval.tasks.spans.options import spans_inputs

    job = spans_chunk_job(args, chunk_size=chunk_size)
    result, _ = run_chunks(job.task, job.chunks, workers=workers)
    doc = result.to_dict()
    doc["inputs"] = spans_inputs(args)
    return result, doc


def spark(args: Any, spark: Any, *, folder: Path | None) -> tuple[Any, dict[str, Any]]:
    """`score spans --engine spark`: JSONL span files (token files are scored in memory or in chunks)."""
    from extracteval.tasks.spans.options import spans_inputs
    from extracteval.tasks.spans.spark import spans_spark_job

    result = spans_spark_job(spark, args).run().result
    doc = result.to_dict()
    doc["inputs"] = spans_inputs(args)
    return result, doc


def chunk_unit(args: Any) -> str:
    """What --chunk-size counts: sentences of token files, else documents (records)."""
    from extracteval.tasks.spans.options import check_token_inputs

    return "sentences" if check_token_inputs(args) else "records"


def refuse(args: Any, engine: str) -> None:
    """What the chosen engine cannot do, refused before any work."""
    from extracteval.tasks.spans.options import check_token_inputs

    if engine == "spark" and check_token_inputs(args):
        from extracteval.errors import InputError

        raise InputError("--engine spark reads JSONL span files; score token files with --chunk-size/--workers, or in memory.")
