"""Files → chunks of the `fields` task, aligned by record id (see `io.chunks` for what the
chunked readers require: wide files sorted by id)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.io.scale_options import check_chunk_size
from extracteval.tasks.fields.semantics import ModelPredictions
from extracteval.errors import InputError
from extracteval.io.chunks import SortedIdMerge, iter_records, table_columns
from extracteval.io.config import model_files

__all__ = ["FieldsStream", "open_fields_stream", "fields_chunk_job"]


@dataclass(frozen=True)
class FieldsStream:
    """What the chunked `fields` engine needs before reading any record, and the chunks."""

    truth_source: str
    truth_fields: list[str]
    models: dict[str, str]  # name → source file
    chunk_size: int
    id_column: str
    delimiter: str | None
    trailing_extras: bool = False  # predictions after the last truth id: chunks with no truth rows, not an error

    def chunks(self) -> Iterator[object]:
        from extracteval.tasks.fields.chunked import FieldsChunk

        truth = iter_records(self.truth_source, chunk_size=self.chunk_size, id_column=self.id_column,
                             delimiter=self.delimiter, allow_status=False)
        preds = {
            name: (src, iter_records(src, chunk_size=self.chunk_size, id_column=self.id_column, delimiter=self.delimiter))
            for name, src in self.models.items()
        }
        header = {name: _header(src, self.id_column, self.delimiter) for name, src in self.models.items()}
        no_truth = pd.DataFrame(index=pd.Index([], dtype=object, name=self.id_column), columns=self.truth_fields, dtype=object)
        for t, per_model in SortedIdMerge(truth, preds, self.truth_source, trailing_extras=self.trailing_extras).chunks():
            models = []
            for name, src in self.models.items():
                c = per_model[name]
                if c is None:  # no prediction for any record of this chunk
                    values = pd.DataFrame(index=pd.Index([], dtype=object), columns=header[name], dtype=object)
                    models.append(ModelPredictions(name=name, values=values, status=None, source=src))
                else:
                    header[name] = list(dict.fromkeys([*header[name], *map(str, c.values.columns)]))
                    models.append(ModelPredictions(name=name, values=c.values, status=c.status, source=src))
            yield FieldsChunk(truth=no_truth if t is None else t.values, predictions=models)


def _header(path: str, id_column: str, delimiter: str | None) -> list[str]:
    if Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        return []  # JSONL keys are learnt chunk by chunk; no extra pass for predictions
    return [c for c in table_columns(path, delimiter=delimiter) if c not in (id_column, "status")]


def open_fields_stream(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    chunk_size: int,
    id_column: str = "id",
    delimiter: str | None = None,
    trailing_extras: bool = False,
) -> FieldsStream:
    """Check the files and learn the truth fields (CSV header, Parquet schema, JSONL keys)."""
    truth = str(truth)
    cols = table_columns(truth, delimiter=delimiter)
    if id_column not in cols:
        raise InputError(f"{truth}: no {id_column!r} column; columns found: {cols[:20]}. Pass --id-column NAME if the ids are in another column.")
    if "status" in cols:
        raise InputError(f"{truth}: the ground truth must not have a `status` column; status belongs to predictions.")
    if "model" in cols:
        raise InputError(f"{truth}: the ground truth must not have a `model` column.")
    models = {name: str(path) for name, path in model_files(predictions).items()}
    for path in models.values():
        if not Path(path).exists():
            raise InputError(f"{path}: file not found.")
    return FieldsStream(
        truth_source=truth,
        truth_fields=[c for c in cols if c != id_column],
        models=models,
        chunk_size=chunk_size,
        id_column=id_column,
        delimiter=delimiter,
        trailing_extras=trailing_extras,
    )


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
    stream = open_fields_stream(truth, predictions, chunk_size=chunk_size, id_column=id_column, delimiter=delimiter)
    plan = plan_fields(stream.truth_fields, stream.models, config=config, fields=list(fields) if fields else None, truth_source=stream.truth_source)
    return ChunkJob(task=FieldsTask(plan), chunks=stream.chunks(), inputs={"truth": stream.truth_source, "predictions": dict(stream.models)})
