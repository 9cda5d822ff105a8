"""The task-agnostic part of the Spark engine: score every partition of a DataFrame with a chunk
task (`extracteval.chunked.ChunkTask`) inside `mapInPandas`, reduce the ledgers on the driver,
finalise once. A task plugs in with the same object it gives the local chunk driver, plus a
function turning a pandas batch of the joined DataFrame into one of its chunks.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError

__all__ = ["SparkRun", "run_on_spark"]


@dataclass(frozen=True)
class SparkRun:
    """`result` from `task.finalise`; `records` the per-record rows as a lazy Spark DataFrame."""

    result: Any
    records: Any
    ledger: Any = None  # the merged ledger `result` was finalised from


def _input_error(e: Exception) -> InputError | None:
    """An `InputError` raised on an executor comes back wrapped; recover its message."""
    m = re.search(r"extracteval\.errors\.InputError: (.*?)(?:\n|$)", str(e))
    return InputError(m.group(1)) if m else None


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as plain objects: pandas 3 string columns do not convert to Arrow in PySpark 4.x."""
    frame = frame.copy(deep=False)
    for c in frame.columns:
        if isinstance(frame[c].dtype, pd.StringDtype) or frame[c].dtype == object:
            frame[c] = np.asarray(frame[c].to_numpy(dtype=object), dtype=object)
    return frame


def run_on_spark(
    task: Any,
    df: Any,
    to_chunk: Callable[[pd.DataFrame], Any],
    *,
    empty_chunk: Callable[[], Any],
    records_schema: str | None = None,
    record_rows: Callable[[Any, Any], np.ndarray] | None = None,
) -> SparkRun:
    """Score `df` (one row per record, everything a record needs joined in) with `task`.

    Args:
        task: has `score_chunk(chunk) -> ChunkScore` and `finalise(ledger, *, record_rows)`;
            a dataclass with a `keep_records` field when `records_schema` is given.
        to_chunk: a pandas batch of `df` → the task's chunk (runs on executors).
        empty_chunk: a chunk of no records, scored on the driver when `df` is empty.
        records_schema: Spark schema of `ChunkScore.records`; the per-record DataFrame.
        record_rows: (records DataFrame, merged ledger) → the bootstrap rows in record-id order,
            collected only if `finalise` asks for them.
    """

    def ledgers(batches):  # type: ignore[no-untyped-def]
        total = None
        for pdf in batches:
            ledger = task.score_chunk(to_chunk(pdf)).ledger
            total = ledger if total is None else total + ledger
        if total is not None:
            # our own ledger, from our own executor code, back to the driver (never user input)
            yield pd.DataFrame({"ledger": [pickle.dumps(total, protocol=pickle.HIGHEST_PROTOCOL)]})

    try:
        parts = df.mapInPandas(ledgers, schema="ledger binary").collect()
    except Exception as e:  # executor failures come back as Py4J/PythonException
        err = _input_error(e)
        if err is not None:
            raise err from None
        raise
    merged = None
    for row in parts:
        part = pickle.loads(row["ledger"])  # noqa: S301 - produced by `ledgers` above
        merged = part if merged is None else merged + part
    if merged is None:  # no records at all
        merged = task.score_chunk(empty_chunk()).ledger

    records_df = None
    if records_schema is not None:
        keeper = replace(task, keep_records=True)

        def records(batches):  # type: ignore[no-untyped-def]
            for pdf in batches:
                frame = keeper.score_chunk(to_chunk(pdf)).records
                if frame is not None and len(frame):
                    yield _plain(frame)

        records_df = df.mapInPandas(records, schema=records_schema)

    rows = None
    if record_rows is not None and records_df is not None:
        final = merged

        def rows() -> np.ndarray:  # type: ignore[misc]
            return record_rows(records_df, final)

    return SparkRun(result=task.finalise(merged, record_rows=rows), records=records_df, ledger=merged)
