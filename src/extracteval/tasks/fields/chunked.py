"""The `fields` task on the chunk driver and the Spark engine: `FieldsTask` scores a chunk of
table records (`io.wide_tables.TableChunk`) into the task's mergeable ledger."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.io.wide_tables import TableChunk

__all__ = ["FieldsTask", "EvaluateFieldsTask"]


@dataclass(frozen=True)
class FieldsTask:
    """`fields` scoring for the chunk driver and the Spark engine.

    Attributes:
        plan: `tasks.fields.semantics.FieldsPlan` (config, fields, models).
        keep_records: return per-record rows (long table) for Parquet.
    """

    plan: Any
    keep_records: bool = False

    def score_chunk(self, chunk: TableChunk) -> ChunkScore:
        _, ledger, records, rows = self._count(chunk)
        return ChunkScore(ledger=ledger, records=records.to_frame() if self.keep_records else None, rows=rows)

    def _count(self, chunk: TableChunk) -> tuple[TableChunk, Any, Any, np.ndarray | None]:
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

    def score_chunk(self, chunk: TableChunk) -> ChunkScore:
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
