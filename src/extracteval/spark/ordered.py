"""Running a chunk task whose ledger depends on record order (per-record scores kept for exact
means and medians, first examples, per-document bootstrap rows) on Spark.

`in_id_order` range-partitions the joined DataFrame by id and sorts each partition, so partition
after partition the records come in id order, which is the order the driver merges the partition
ledgers in (`run_on_spark` collects them in partition order). `RowsInLedger` carries a task's
per-record rows inside its ledger (concatenated in that order) instead of a spill file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.chunked import ChunkScore
from extracteval.core.ledger import Ledger, merge

__all__ = ["in_id_order", "RowsInLedger"]


def in_id_order(df: Any, id_column: str, partitions: int | None) -> Any:
    parts = partitions or df.sparkSession.sparkContext.defaultParallelism
    return df.repartitionByRange(parts, id_column).sortWithinPartitions(id_column)


def _concatenated(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """Per-record rows in record order; None once a part has none."""
    return None if a is None or b is None else np.concatenate([a, b])


@dataclass(frozen=True)
class _Rows(Ledger):
    ledger: Any
    rows: np.ndarray | None = merge(_concatenated)

    @property
    def n_records(self) -> int:
        return int(getattr(self.ledger, "n_records", 0))


@dataclass(frozen=True)
class RowsInLedger:
    """A chunk task whose `ChunkScore.rows` travel in its ledger (for `run_on_spark`)."""

    task: Any

    def score_chunk(self, chunk: Any) -> ChunkScore:
        s = self.task.score_chunk(chunk)
        return ChunkScore(ledger=_Rows(s.ledger, s.rows), records=s.records)

    def finalise(self, ledger: _Rows, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        rows = ledger.rows
        return self.task.finalise(ledger.ledger, record_rows=None if rows is None else (lambda: rows))
