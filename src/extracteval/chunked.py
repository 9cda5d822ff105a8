"""The chunk driver: score chunks of records into mergeable ledgers, in this process or in worker
processes, stream per-record rows to Parquet, merge the ledgers, compute the result once.

A task plugs in with an object (picklable, so it can travel to worker processes) that has:

- `score_chunk(chunk) -> ChunkScore`: pure scoring of one chunk of independent records into a
  ledger (anything with `+` that is associative and whose merge does not depend on how the records
  were split), plus optionally the chunk's per-record rows (a DataFrame to stream to Parquet) and
  its bootstrap rows (an int array, one row per record, in record-id order);
- `finalise(ledger, *, record_rows) -> result`: ratios, winners, intervals… from the merged
  ledger; `record_rows()` gives back every chunk's bootstrap rows concatenated, for a task whose
  bootstrap needs them (the `fields` task asks only when distinct per-record patterns are many).

`FieldsTask` is the `fields` task's. The Spark engine (`extracteval.spark`) calls the same two
methods on executors and the driver.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = ["ChunkScore", "ChunkTask", "ChunkStats", "run_chunks", "FieldsChunk", "FieldsTask"]


@dataclass(frozen=True)
class ChunkScore:
    ledger: Any
    records: pd.DataFrame | None = None
    rows: np.ndarray | None = None


class ChunkTask(Protocol):
    def score_chunk(self, chunk: Any) -> ChunkScore: ...

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any: ...


@dataclass(frozen=True)
class ChunkStats:
    chunks: int
    records_rows: int
    workers: int


def _score(task: ChunkTask, chunk: Any) -> ChunkScore:
    return task.score_chunk(chunk)


class _RowSpill:
    """Bootstrap rows appended to a temporary file as int32, read back only if asked for."""

    def __init__(self, folder: str | None) -> None:
        fd, self.path = tempfile.mkstemp(prefix="extracteval-rows-", suffix=".bin", dir=folder)
        self._fh = os.fdopen(fd, "wb")
        self.width: int | None = None
        self.count = 0

    def add(self, rows: np.ndarray) -> None:
        if self.width is None:
            self.width = rows.shape[1]
        if rows.size and int(np.abs(rows).max()) >= 2**31:
            raise OverflowError("per-record counts exceed int32")
        rows.astype(np.int32).tofile(self._fh)
        self.count += len(rows)

    def read(self) -> np.ndarray:
        self._fh.flush()
        data = np.fromfile(self.path, dtype=np.int32)
        return data.reshape(self.count, self.width or 0).astype(np.int64)

    def close(self) -> None:
        self._fh.close()
        Path(self.path).unlink(missing_ok=True)


def run_chunks(
    task: ChunkTask,
    chunks: Iterable[Any],
    *,
    workers: int = 1,
    records_path: str | Path | None = None,
    spill_dir: str | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> tuple[Any, ChunkStats]:
    """Score `chunks` with `task`, merge the ledgers in chunk order, finalise once.

    Args:
        workers: processes scoring chunks; 1 scores in this process. The chunks are read here
            and at most 2 × workers of them are in flight, so memory stays bounded.
        records_path: stream every chunk's per-record rows to this Parquet file.
        spill_dir: folder for the temporary file of bootstrap rows (default: the system's).
        on_chunk: called with the number of records of each chunk scored (progress).
    """
    if workers < 1:
        raise ValueError(f"Expected workers ≥ 1, but got {workers}.")
    writer = None
    spill = _RowSpill(spill_dir)
    ledger = None
    n_chunks = 0
    n_rows = 0

    def consume(score: ChunkScore) -> None:
        nonlocal ledger, writer, n_chunks, n_rows
        ledger = score.ledger if ledger is None else ledger + score.ledger
        n_chunks += 1
        if score.rows is not None:
            spill.add(score.rows)
        if records_path is not None and score.records is not None and len(score.records):
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(score.records, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(str(records_path), table.schema)
            writer.write_table(table.cast(writer.schema))
            n_rows += len(score.records)
        if on_chunk is not None:
            on_chunk(score.rows.shape[0] if score.rows is not None else 0)

    try:
        if workers == 1:
            for chunk in chunks:
                consume(task.score_chunk(chunk))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                pending: deque[Future[ChunkScore]] = deque()
                for chunk in chunks:
                    pending.append(pool.submit(_score, task, chunk))
                    if len(pending) >= 2 * workers:
                        consume(pending.popleft().result())
                while pending:
                    consume(pending.popleft().result())
        if writer is not None:
            writer.close()
            writer = None
        if ledger is None:
            raise ValueError("no chunks to score")
        result = task.finalise(ledger, record_rows=spill.read if spill.width is not None else None)
    finally:
        if writer is not None:
            writer.close()
        spill.close()
    return result, ChunkStats(chunks=n_chunks, records_rows=n_rows, workers=workers)


# ---------------------------------------------------------------------------------------------
# the `fields` task


@dataclass(frozen=True)
class FieldsChunk:
    """Records of one chunk: truth (index = id) and each model's predictions for those ids."""

    truth: pd.DataFrame
    predictions: Sequence[Any]  # ModelPredictions


@dataclass(frozen=True)
class FieldsTask:
    """`fields` scoring for the chunk driver and the Spark engine.

    Attributes:
        plan: `core.fields.FieldsPlan` (config, fields, models).
        keep_records: return per-record rows (long table) for Parquet.
    """

    plan: Any
    keep_records: bool = False

    def score_chunk(self, chunk: FieldsChunk) -> ChunkScore:
        from extracteval.core.fields import fields_ledger

        ledger, records = fields_ledger(chunk.truth, chunk.predictions, plan=self.plan)
        rows = records.bootstrap_rows() if self.plan.config.bootstrap > 0 else None
        return ChunkScore(ledger=ledger, records=records.to_frame() if self.keep_records else None, rows=rows)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.core.fields import fields_result

        return fields_result(ledger, self.plan, record_rows=record_rows)
