"""The chunked `fields` engine's job: wide files sorted by id, merged into chunks by
`io.wide_tables.open_table_stream` (see `io.chunks` for what the chunked readers require)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extracteval.io.scale_options import check_chunk_size
from extracteval.errors import InputError
from extracteval.io.wide_tables import open_table_stream

__all__ = ["args_chunk_job", "fields_chunk_job"]


def args_chunk_job(args: Any, *, chunk_size: int) -> Any:
    """The `ChunkJob` of `score fields --chunk-size N` from its command-line arguments."""
    from extracteval.tasks.fields.options import build_config, chosen_fields

    if getattr(args, "keys", None):
        raise InputError("--keys (Kleister files) cannot be streamed; drop --chunk-size/--workers.")
    return fields_chunk_job(args.truth, args.predictions, config=build_config(args), fields=chosen_fields(args), chunk_size=chunk_size,
                            id_column=args.id_column, delimiter=args.delimiter)


def fields_chunk_job(truth: str, predictions: Sequence[str], *, config: Any, fields: Sequence[str] | None, chunk_size: int,
                     id_column: str = "id", delimiter: str | None = None) -> Any:
    """The `ChunkJob` of `score fields --chunk-size`: wide files sorted by id, merged by id
    (`tasks.fields.chunks`), scored by `FieldsTask`."""
    from extracteval.chunked import ChunkJob
    from extracteval.tasks.fields.chunked import FieldsTask
    from extracteval.tasks.fields.semantics import plan_fields

    check_chunk_size(chunk_size)
    stream = open_table_stream(truth, predictions, chunk_size=chunk_size, id_column=id_column, delimiter=delimiter)
    plan = plan_fields(stream.truth_fields, stream.models, config=config, fields=list(fields) if fields else None, truth_source=stream.truth_source)
    return ChunkJob(task=FieldsTask(plan), chunks=stream.chunks(), inputs={"truth": stream.truth_source, "predictions": dict(stream.models)})
