"""The chunk driver: score chunks of records into mergeable ledgers, in this process or in worker
processes, stream per-record rows to Parquet, merge the ledgers, compute the result once.

A task plugs in with an object (picklable, so it can travel to worker processes) that has:

- `score_chunk(chunk) -> ChunkScore`: pure scoring of one chunk of independent records into a
  ledger (anything with `+` that is associative and whose merge does not depend on how the records
  were split), plus optionally the chunk's per-record rows (a DataFrame to stream to Parquet) and
  its bootstrap rows (an int array, one row per record, in record-id order);
- `finalise(ledger, *, record_rows) -> result`: ratios, winners, intervals… from the merged
  ledger; `record_rows()` gives back every chunk's bootstrap rows (`SpilledRows`: one chunk at a
  time, or `row_matrix` of it all at once), for a task whose bootstrap needs them (the `fields`
  task asks only when distinct per-record patterns are many, and streams through them).

Each task's object is in its package (`FieldsTask` in `extracteval.tasks.fields.chunked`,
`JsonTask` in `extracteval.tasks.json.chunked`, `SpansTask` in `extracteval.tasks.spans.semantics`, …). The Spark engine (`extracteval.spark`) calls the same two methods on
executors and the driver.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = ["ChunkScore", "ChunkTask", "ChunkJob", "run_chunk_job", "ChunkStats", "SpilledRows", "row_matrix", "run_chunks"]


@dataclass(frozen=True)
class ChunkScore:
    ledger: Any
    records: pd.DataFrame | None = None
    rows: np.ndarray | None = None
    rows_file: str | None = None  # a worker's rows, saved by the worker (see `_score`)
    side: Any = None  # anything else the caller wants of each chunk, handed to `on_side` in chunk order


class ChunkTask(Protocol):
    def score_chunk(self, chunk: Any) -> ChunkScore: ...

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any: ...


@dataclass(frozen=True)
class ChunkJob:
    """A task's chunked run over its files: its chunk task, the chunks of its inputs (read
    lazily), the document's `inputs` entry."""

    task: Any
    chunks: Iterable[Any]
    inputs: dict[str, Any]


def run_chunk_job(job: ChunkJob, *, workers: int = 1, folder: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """`score <task> --chunk-size N [--workers W]` of a task whose chunk task has `keep_records`:
    the result and the document's `inputs` entry; with `folder` (`--output`'s staging folder),
    the per-record rows streamed to `folder`/records.parquet."""
    from dataclasses import replace

    records_path = None if folder is None else folder / "records.parquet"
    result, _ = run_chunks(replace(job.task, keep_records=records_path is not None), job.chunks, workers=workers, records_path=records_path)
    return result, job.inputs


@dataclass(frozen=True)
class ChunkStats:
    chunks: int
    records_rows: int
    workers: int


def _score(task: ChunkTask, chunk: Any, spill_dir: str) -> ChunkScore:
    """In a worker: score, and save the bootstrap rows to a file there rather than sending them
    back through a pipe (they are the bulk of the reply)."""
    score = task.score_chunk(chunk)
    if score.rows is None:
        return score
    fd, path = tempfile.mkstemp(prefix="extracteval-rows-", suffix=".npy", dir=spill_dir)
    with os.fdopen(fd, "wb") as fh:
        np.save(fh, _narrow(score.rows))
    return ChunkScore(ledger=score.ledger, records=score.records, rows=None, rows_file=path, side=score.side)


def _narrow(rows: np.ndarray) -> np.ndarray:
    if not np.issubdtype(rows.dtype, np.integer):
        return rows  # per-record scores (the json task's floats) are kept bit for bit
    if rows.size and int(np.abs(rows).max()) >= 2**31:
        raise OverflowError("per-record counts exceed int32")
    return rows.astype(np.int32)


class SpilledRows:
    """Every chunk's bootstrap rows, read back from disk in chunk order: iterating gives one
    chunk's rows at a time (what the `fields` bootstrap streams through); `matrix()` all of them
    at once, integers widened to int64, for a task that needs them side by side."""

    def __init__(self, files: Sequence[str]) -> None:
        self.files = list(files)

    def __iter__(self) -> Iterator[np.ndarray]:
        for f in self.files:
            yield np.load(f)

    def matrix(self) -> np.ndarray:
        rows = np.concatenate(list(self))
        return rows.astype(np.int64) if np.issubdtype(rows.dtype, np.integer) else rows


def row_matrix(rows: np.ndarray | Iterable[np.ndarray]) -> np.ndarray:
    """The rows `record_rows()` gave as one matrix (a task that needs them all at once)."""
    if isinstance(rows, np.ndarray):
        return rows
    if isinstance(rows, SpilledRows):
        return rows.matrix()
    return np.concatenate(list(rows))


class _RowSpill:
    """Bootstrap rows kept on disk as int32 (in this process's file, or in the files workers
    saved), in chunk order; read back only if the task asks for them."""

    def __init__(self, folder: str | None) -> None:
        self.folder = tempfile.mkdtemp(prefix="extracteval-spill-", dir=folder)
        self.files: list[str] = []
        self.width: int | None = None

    def add(self, score: ChunkScore) -> None:
        if score.rows_file is not None:
            self.files.append(score.rows_file)
        elif score.rows is not None:
            fd, path = tempfile.mkstemp(prefix="extracteval-rows-", suffix=".npy", dir=self.folder)
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, _narrow(score.rows))
            self.files.append(path)
        else:
            return
        self.width = 0

    def read(self) -> SpilledRows:
        return SpilledRows(self.files)

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


class _PartialFiles:
    """Parquet files written chunk by chunk through temporary siblings (`.NAME.partial-PID`),
    renamed into place by `commit`; `discard` closes and removes what was not committed, so a
    final path never holds a truncated file."""

    def __init__(self) -> None:
        self.writers: dict[str, Any] = {}  # key → ParquetWriter of its partial file
        self.partials: dict[str, tuple[Path, Path]] = {}  # key → (partial file, final file)

    def write(self, key: str, path: str | Path, frame: pd.DataFrame) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if key not in self.writers:
            final = Path(path)
            partial = final.with_name(f".{final.name}.partial-{os.getpid()}")
            self.partials[key] = (partial, final)
            self.writers[key] = pq.ParquetWriter(str(partial), table.schema)
        self.writers[key].write_table(table.cast(self.writers[key].schema))

    def commit(self) -> None:
        for key, (partial, final) in list(self.partials.items()):
            self.writers.pop(key).close()
            os.replace(partial, final)
            del self.partials[key]

    def discard(self) -> None:
        for w in self.writers.values():
            w.close()
        for partial, _ in self.partials.values():
            if partial.exists():
                partial.unlink()


def run_chunks(
    task: ChunkTask,
    chunks: Iterable[Any],
    *,
    workers: int = 1,
    records_path: str | Path | Mapping[str, str | Path] | None = None,
    spill_dir: str | None = None,
    on_chunk: Callable[[int], None] | None = None,
    on_side: Callable[[Any], None] | None = None,
) -> tuple[Any, ChunkStats]:
    """Score `chunks` with `task`, merge the ledgers in chunk order, finalise once.

    Args:
        workers: processes scoring chunks; 1 scores in this process. The chunks are read here
            and at most 2 × workers of them are in flight, so memory stays bounded.
        records_path: stream every chunk's per-record rows to this Parquet file (through a
            temporary sibling renamed into place at the end: never a truncated file there); a task
            whose `ChunkScore.records` is a mapping of name → DataFrame gives one file per name.
        spill_dir: folder for the temporary file of bootstrap rows (default: the system's).
        on_chunk: called with the number of records of each chunk scored (progress).
        on_side: called with each chunk's `ChunkScore.side`, in chunk order (e.g. to digest the
            truth as it streams past).
    """
    if workers < 1:
        raise ValueError(f"Expected workers ≥ 1, but got {workers}.")
    files = _PartialFiles()
    write = files.write
    spill = _RowSpill(spill_dir)
    ledger = None
    n_chunks = 0
    n_rows = 0

    def consume(score: ChunkScore) -> None:
        nonlocal ledger, n_chunks, n_rows
        ledger = score.ledger if ledger is None else ledger + score.ledger
        n_chunks += 1
        spill.add(score)
        if on_side is not None:
            on_side(score.side)
        if records_path is not None and score.records is not None:
            if isinstance(score.records, Mapping):
                assert isinstance(records_path, Mapping)
                for key, frame in score.records.items():
                    if len(frame):
                        write(key, records_path[key], frame)
                n_rows += sum(len(f) for f in score.records.values())
            elif len(score.records):
                write("", records_path, score.records)  # type: ignore[arg-type]
                n_rows += len(score.records)
        if on_chunk is not None:
            on_chunk(getattr(score.ledger, "n_records", 0))

    try:
        if workers == 1:
            for chunk in chunks:
                consume(task.score_chunk(chunk))
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                pending: deque[Future[ChunkScore]] = deque()
                for chunk in chunks:
                    pending.append(pool.submit(_score, task, chunk, spill.folder))
                    if len(pending) >= 2 * workers:
                        consume(pending.popleft().result())
                while pending:
                    consume(pending.popleft().result())
        files.commit()
        if ledger is None:
            raise ValueError("no chunks to score")
        result = task.finalise(ledger, record_rows=spill.read if spill.width is not None else None)
    finally:
        files.discard()
        spill.close()
    return result, ChunkStats(chunks=n_chunks, records_rows=n_rows, workers=workers)
