"""Wide tables — one row per record id, one column per field (or feature) — of the truth and of
each model, as the `fields` and `labels` tasks read them: a model's predictions
(`ModelPredictions`), a chunk of records aligned by id (`TableChunk`, which pickles compactly to
worker processes), and the stream of chunks read from files sorted by id (`open_table_stream`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.chunks import SortedIdMerge, iter_records, table_columns
from extracteval.io.config import model_files

__all__ = ["ModelPredictions", "TableChunk", "TableStream", "open_table_stream"]


@dataclass(frozen=True, kw_only=True)
class ModelPredictions:
    """One model's predictions, wide: index = record id, one column per field.

    Attributes:
        name: model name, unique among the models compared.
        values: cell values; lists/tuples are multi-valued cells.
        status: per-record (Series) or per-cell (DataFrame) `ok` / `pending` / `error`; None = all ok.
        source: where the predictions came from (a file name), used in messages.
    """

    name: str
    values: pd.DataFrame
    status: pd.Series | pd.DataFrame | None = None
    source: str = ""


@dataclass(frozen=True)
class TableChunk:
    """Records of one chunk: truth (index = id) and each model's predictions for those ids.

    Pickles (to a worker process) with its text columns as Arrow string arrays: pickling
    100,000 rows of Python strings took as long as parsing them, which left `--workers` no
    time to gain.
    """

    truth: pd.DataFrame
    predictions: Sequence[Any]  # ModelPredictions

    def materialised(self) -> TableChunk:
        """The chunk with CSV text columns turned into the values the in-memory reader gives."""
        from extracteval.io.chunks import materialise_text

        def status(st: Any) -> Any:
            if isinstance(st, pd.Series) and isinstance(st.dtype, pd.StringDtype):
                return materialise_text(st.to_frame("s"))["s"]
            return materialise_text(st) if isinstance(st, pd.DataFrame) else st

        return TableChunk(
            truth=materialise_text(self.truth),
            predictions=[
                ModelPredictions(name=p.name, values=materialise_text(p.values), status=status(p.status), source=p.source)
                for p in self.predictions
            ],
        )

    def __getstate__(self) -> dict[str, Any]:
        return {
            "truth": _pack_frame(self.truth),
            "predictions": [
                (p.name, _pack_frame(p.values), _pack_status(p.status), p.source)
                for p in self.predictions
            ],
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        preds = []
        for name, values, status, source in state["predictions"]:
            st = _unpack_status(status)
            preds.append(ModelPredictions(name=name, values=_unpack_frame(values), status=st, source=source))
        object.__setattr__(self, "truth", _unpack_frame(state["truth"]))
        object.__setattr__(self, "predictions", preds)


def _pack_status(status: pd.Series | pd.DataFrame | None) -> tuple[str, Any] | None:
    if status is None:
        return None
    if isinstance(status, pd.DataFrame):  # per-cell status
        return "cells", _pack_frame(status)
    return "records", _pack_frame(status.to_frame("__status__"))


def _unpack_status(packed: tuple[str, Any] | None) -> pd.Series | pd.DataFrame | None:
    if packed is None:
        return None
    kind, frame = packed
    return _unpack_frame(frame) if kind == "cells" else _unpack_frame(frame)["__status__"]


def _pack_column(values: Any) -> tuple[str, Any]:
    import pyarrow as pa

    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
        return "text", values.array.__arrow_array__()  # CSV text as read: no conversion here
    if isinstance(values, pd.Series):
        values = values.to_numpy(dtype=object)
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("string", "empty"):
        # NaN and None both become null and come back as None: both are an absent cell
        return "arrow", pa.array(values, type=pa.string(), from_pandas=True)
    return "object", values


def _unpack_column(packed: tuple[str, Any]) -> Any:
    kind, payload = packed
    if kind == "text":
        return pd.arrays.ArrowStringArray(payload)
    if kind == "arrow":
        return np.asarray(payload.to_numpy(zero_copy_only=False), dtype=object)
    return payload


def _pack_frame(frame: pd.DataFrame) -> dict[str, Any]:
    return {
        "columns": list(frame.columns),
        "index": _pack_column(frame.index.to_numpy(dtype=object)),
        "index_name": frame.index.name,
        "data": [_pack_column(frame.iloc[:, j]) for j in range(frame.shape[1])],
    }


def _unpack_frame(packed: dict[str, Any]) -> pd.DataFrame:
    index = pd.Index(_unpack_column(packed["index"]), dtype=object, name=packed["index_name"])
    cols = {}
    for j, c in enumerate(packed["data"]):
        values = _unpack_column(c)
        # object stays object: pandas 3 would otherwise infer its string dtype, which marks CSV text
        cols[j] = pd.Series(values, index=index, dtype=None if c[0] == "text" else object, copy=False)
    frame = pd.DataFrame(cols, index=index)
    frame.columns = packed["columns"]
    return frame


@dataclass(frozen=True)
class TableStream:
    """What a chunked engine of wide tables needs before reading any record, and the chunks."""

    truth_source: str
    truth_fields: list[str]
    models: dict[str, str]  # name → source file
    chunk_size: int
    id_column: str
    delimiter: str | None
    trailing_extras: bool = False  # predictions after the last truth id: chunks with no truth rows, not an error

    def chunks(self) -> Iterator[object]:
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
            yield TableChunk(truth=no_truth if t is None else t.values, predictions=models)


def _header(path: str, id_column: str, delimiter: str | None) -> list[str]:
    if Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        return []  # JSONL keys are learnt chunk by chunk; no extra pass for predictions
    return [c for c in table_columns(path, delimiter=delimiter) if c not in (id_column, "status")]


def open_table_stream(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    chunk_size: int,
    id_column: str = "id",
    delimiter: str | None = None,
    trailing_extras: bool = False,
) -> TableStream:
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
    return TableStream(
        truth_source=truth,
        truth_fields=[c for c in cols if c != id_column],
        models=models,
        chunk_size=chunk_size,
        id_column=id_column,
        delimiter=delimiter,
        trailing_extras=trailing_extras,
    )
