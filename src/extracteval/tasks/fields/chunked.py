"""The `fields` task on the chunk driver and the Spark engine: a chunk of table records
(`FieldsChunk`, which pickles compactly to worker processes) and `FieldsTask`, which scores it
into the task's mergeable ledger. The `labels` task reads the same tables and uses `FieldsChunk`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore

__all__ = ["FieldsChunk", "FieldsTask"]


@dataclass(frozen=True)
class FieldsChunk:
    """Records of one chunk: truth (index = id) and each model's predictions for those ids.

    Pickles (to a worker process) with its text columns as Arrow string arrays: pickling
    100,000 rows of Python strings took as long as parsing them, which left `--workers` no
    time to gain.
    """

    truth: pd.DataFrame
    predictions: Sequence[Any]  # ModelPredictions

    def materialised(self) -> FieldsChunk:
        """The chunk with CSV text columns turned into the values the in-memory reader gives."""
        from extracteval.tasks.fields.semantics import ModelPredictions
        from extracteval.io.chunks import materialise_text

        def status(st: Any) -> Any:
            if isinstance(st, pd.Series) and isinstance(st.dtype, pd.StringDtype):
                return materialise_text(st.to_frame("s"))["s"]
            return materialise_text(st) if isinstance(st, pd.DataFrame) else st

        return FieldsChunk(
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
        from extracteval.tasks.fields.semantics import ModelPredictions

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
class FieldsTask:
    """`fields` scoring for the chunk driver and the Spark engine.

    Attributes:
        plan: `tasks.fields.semantics.FieldsPlan` (config, fields, models).
        keep_records: return per-record rows (long table) for Parquet.
    """

    plan: Any
    keep_records: bool = False

    def score_chunk(self, chunk: FieldsChunk) -> ChunkScore:
        _, ledger, records, rows = self._count(chunk)
        return ChunkScore(ledger=ledger, records=records.to_frame() if self.keep_records else None, rows=rows)

    def _count(self, chunk: FieldsChunk) -> tuple[FieldsChunk, Any, Any, np.ndarray | None]:
        """The chunk as scored (text columns read), its ledger, its per-record ledger and its
        bootstrap rows (None without intervals)."""
        from extracteval.tasks.fields.semantics import fields_ledger

        chunk = chunk.materialised()
        ledger, records = fields_ledger(chunk.truth, chunk.predictions, plan=self.plan)
        return chunk, ledger, records, records.bootstrap_rows() if self.plan.config.bootstrap > 0 else None

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.tasks.fields.semantics import fields_result

        return fields_result(ledger, self.plan, record_rows=record_rows)


@dataclass(frozen=True)
class EvaluateFieldsTask(FieldsTask):
    """`FieldsTask` plus what `evaluate` logs of each chunk (`FieldsAdapter.chunk_outputs`): per
    model its per-record counts (`records/<model>`) and its predictions as scored
    (`predictions/<model>`, the long layout of predictions.parquet) in `ChunkScore.records`, and
    the chunk's truth rows as read in `ChunkScore.side`.

    Attributes:
        headers: model → its prediction columns, in file order (the columns of the in-memory
            predictions frame, so that predictions.parquet has the same rows).
    """

    headers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def score_chunk(self, chunk: FieldsChunk) -> ChunkScore:
        from extracteval.mlflow.predictions_file import predictions_to_frame
        from extracteval.tasks.fields.records import records_frame_of
        from extracteval.tasks.fields.semantics import ModelPredictions

        chunk, ledger, records, rows = self._count(chunk)
        frames: dict[str, pd.DataFrame] = {f"records/{m}": records_frame_of(records, [m]) for m in self.plan.models}
        for p in chunk.predictions:
            cols = self.headers.get(p.name)
            values = p.values if cols is None else p.values.reindex(columns=list(cols))
            frames[f"predictions/{p.name}"] = predictions_to_frame(ModelPredictions(name=p.name, values=values, status=p.status, source=p.source))
        return ChunkScore(ledger=ledger, records=frames, rows=rows, side=chunk.truth)
