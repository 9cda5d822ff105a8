"""`extracteval score records` on the streaming engines: in chunks (`--chunk-size`, `--workers`)
and on Spark (`--engine spark`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd


def chunk_job(args: Any, *, chunk_size: int) -> Any:
    """The chunk engine's job: wide files sorted by id, merged by id, `chunk_size` records at a time."""
    from extracteval.chunked import ChunkJob
    from extracteval.io.scale_options import check_chunk_size
    from extracteval.io.wide_tables import open_table_stream

    from tests.tasks.records.options import build_config
    from tests.tasks.records.semantics import RecordsTask

    check_chunk_size(chunk_size)
    stream = open_table_stream(args.truth, args.predictions, chunk_size=chunk_size, id_column=args.id_column, delimiter=args.delimiter,
                               trailing_extras=True)
    from extracteval.io.config import metadata_columns

    fields = tuple(f for f in stream.truth_fields if f not in metadata_columns(args))  # record metadata is no field
    task = RecordsTask(config=build_config(args), fields=fields, truth_source=stream.truth_source, sources=dict(stream.models))
    return ChunkJob(task=task, chunks=stream.chunks(), inputs={"truth": stream.truth_source, "predictions": dict(stream.models)})


def spark_job(args: Any, spark: Any) -> Any:
    """The Spark job: the tables joined by id, each batch rebuilt as the local readers give it."""
    from extracteval.errors import InputError
    from extracteval.io.wide_tables import ModelPredictions, TableChunk
    from extracteval.spark.engine import SparkJob
    from extracteval.spark.tables import chunk_inputs, join_tables, read_spark_tables

    from tests.tasks.records.options import build_config
    from tests.tasks.records.semantics import RecordsTask

    truth, id_column = str(args.truth), args.id_column
    tdf, preds, sources, text = read_spark_tables(spark, truth, args.predictions, delimiter=args.delimiter)
    if id_column not in tdf.columns:
        raise InputError(f"{truth}: no {id_column!r} column; columns found: {list(tdf.columns)[:20]}.")
    from extracteval.io.config import metadata_columns

    fields: Sequence[str] = [c for c in tdf.columns if c != id_column and c not in metadata_columns(args)]
    joined, spec = join_tables(tdf, preds, columns=list(fields), models=list(sources), id_column=id_column, truth_source=truth, sources=sources,
                               text_columns=text, partitions=args.spark_partitions, keep_extra=True)

    def to_chunk(pdf: pd.DataFrame) -> TableChunk:
        t, p = chunk_inputs(pdf, spec)
        return TableChunk(truth=t, predictions=p)

    def empty_chunk() -> TableChunk:
        return TableChunk(truth=pd.DataFrame({f: [] for f in fields}, dtype=object),
                          predictions=[ModelPredictions(name=m.name, values=pd.DataFrame(columns=list(m.columns), dtype=object), source=sources[m.name])
                                       for m in spec.models])

    task = RecordsTask(config=build_config(args), fields=tuple(fields), truth_source=truth, sources=sources)
    return SparkJob(task=task, df=joined, to_chunk=to_chunk, empty_chunk=empty_chunk, inputs={"truth": truth, "predictions": dict(sources)})


def chunked(args: Any, *, chunk_size: int, workers: int, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score records --chunk-size N --workers W`: (result, document)."""
    from extracteval.chunked import run_chunks

    from tests.tasks.records.semantics import document

    job = chunk_job(args, chunk_size=chunk_size)
    result, _ = run_chunks(job.task, job.chunks, workers=workers)
    return result, document(result, job.inputs)


def spark(args: Any, spark: Any, *, folder: Any) -> tuple[Any, dict[str, Any]]:
    """`score records --engine spark`: (result, document)."""
    from tests.tasks.records.semantics import document

    job = spark_job(args, spark)
    result = job.run().result
    return result, document(result, job.inputs)
