"""The task-agnostic part of the Spark engine: score every partition of a DataFrame with a chunk
task (`extracteval.chunked.ChunkTask`) inside `mapInPandas`, reduce the ledgers on the driver,
finalise once. A task plugs in with the same object it gives the local chunk driver, plus a
function turning a pandas batch of the joined DataFrame into one of its chunks.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError

__all__ = ["SparkRun", "run_on_spark", "guard", "read_keyed_lines", "unmatched_ids", "join_lines", "batch_lines", "SparkJob", "lines_job", "ID"]


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


def arrow_ipc(frame: pd.DataFrame) -> bytes:
    """A pandas frame as Arrow IPC stream bytes (how executors send frames to the driver)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


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


# ---------------------------------------------------------------------------------------------
# what the JSONL tasks share: files read as text lines (Spark's JSON schema inference would
# reshape arbitrary objects), ids parsed on the executors, one DataFrame per file, joined by id


ID = "__extracteval_id"


def guard(action: Callable[[], Any]) -> Any:
    """Run a Spark action; an `InputError` raised on an executor comes back as itself."""
    try:
        return action()
    except Exception as e:  # Py4J / PythonException wrap executor failures
        err = _input_error(e)
        if err is not None:
            raise err from None
        raise


def _keyed(source: str, id_of: Callable[[str, Any], str]):  # type: ignore[no-untyped-def]
    """mapInPandas: text lines → (id, line), blank lines dropped; `id_of(source, record)` gives
    the id as the task's local reader does (or raises its `InputError`)."""

    def run(batches):  # type: ignore[no-untyped-def]
        from extracteval.io.json_text import loads as _loads

        for pdf in batches:
            ids, lines = [], []
            for line in pdf["value"].tolist():
                if line is None or not line.strip():
                    continue
                try:
                    rec = _loads(line)
                except ValueError as e:
                    raise InputError(f"{source}: a line is not valid JSON ({e}): {line[:80]!r}") from None
                ids.append(id_of(source, rec))
                lines.append(line)
            yield pd.DataFrame({ID: ids, "line": lines})

    return run


def read_keyed_lines(spark: Any, path: str, id_of: Callable[[str, Any], str], *, what: str = "record id") -> Any:
    """A JSONL file (local path or cluster URI) as a DataFrame `(__extracteval_id, line)`;
    duplicated ids are an `InputError` naming the file and the ids."""
    from pathlib import Path

    if not Path(path).exists() and "://" not in path:
        raise InputError(f"{path}: file not found.")
    df = spark.read.text(path).mapInPandas(_keyed(path, id_of), schema=f"{ID} string, line string")
    dups = guard(lambda: [r[0] for r in df.groupBy(ID).count().filter("count > 1").orderBy(ID).limit(6).collect()])
    if dups:
        raise InputError(f"{path}: {what} {dups[0]!r} appears twice; ids must be unique (found duplicated: {', '.join(map(repr, dups[:5]))}).")
    return df


def unmatched_ids(a: Any, b: Any, limit: int = 6) -> list[str]:
    """Up to `limit` ids of `a` that `b` lacks, smallest first."""
    return guard(lambda: [r[0] for r in a.select(ID).join(b.select(ID), on=ID, how="left_anti").orderBy(ID).limit(limit).collect()])


def join_lines(truth: Any, models: Sequence[Any], *, how: str = "left") -> Any:
    """`(id, tl, l0, l1, …)`: the truth's line and each model's line per id. `how="full"` keeps
    the models' ids the truth lacks (their `tl` is null), for tasks that report them."""
    from pyspark.sql import functions as F

    joined = truth.select(F.col(ID), F.col("line").alias("tl"))
    for i, df in enumerate(models):
        joined = joined.join(df.select(F.col(ID), F.col("line").alias(f"l{i}")), on=ID, how=how)
    return joined


def batch_lines(pdf: pd.DataFrame, n_models: int) -> tuple[list[str], list[str | None], list[list[str | None]]]:
    """A batch of `join_lines`: ids, the truth's lines and each model's lines (None: absent)."""

    def col(name: str) -> list[str | None]:
        return [v if isinstance(v, str) else None for v in pdf[name].tolist()]

    return pdf[ID].tolist(), col("tl"), [col(f"l{i}") for i in range(n_models)]



@dataclass(frozen=True)
class SparkJob:
    """A task's inputs on Spark, ready to score: its chunk task, the joined DataFrame (one row per
    record), the batch → chunk function, a chunk of no records, and the `inputs` entry of the
    document. `run()` scores it; `extracteval evaluate --engine spark` also walks `df` in id order
    to log per-record rows."""

    task: Any
    df: Any
    to_chunk: Callable[[pd.DataFrame], Any]
    empty_chunk: Callable[[], Any]
    inputs: dict[str, Any]
    # a task that gives per-record rows: their Spark schema, and how `finalise` gets its bootstrap
    # rows from them (`run_on_spark`)
    records_schema: str | None = None
    record_rows: Callable[[Any, Any], np.ndarray] | None = None
    # the chunk task of `evaluate`'s id-ordered pass, when it keeps more of each chunk than
    # `task` does (default: `task`)
    evaluate_task: Any = None

    def run(self) -> SparkRun:
        return run_on_spark(self.task, self.df, self.to_chunk, empty_chunk=self.empty_chunk, records_schema=self.records_schema,
                            record_rows=self.record_rows)


def lines_job(
    spark: Any,
    task: Any,
    truth: str,
    models: Mapping[str, str],
    *,
    id_of: Callable[[str, Any, bool], str],
    chunk_of: Callable[[list[str], list[str | None], dict[str, list[str | None]]], Any],
    keep_extra: bool,
    partitions: int | None,
    what: str = "record id",
) -> SparkJob:
    """The `SparkJob` of a JSONL task: every file read by `read_keyed_lines` (`id_of(source,
    record, is_truth)`), the models' lines joined to the truth's by id — with `keep_extra`, ids the
    truth lacks too (the task reports them), else they are an `InputError` — in id order, and
    `chunk_of(ids, truth lines, {model: lines})` (None where a file has no such id) building each
    batch's chunk on the executors."""
    from extracteval.spark.ordered import in_id_order

    tdf = read_keyed_lines(spark, truth, lambda s, r: id_of(s, r, True), what=what)
    names = list(models)
    dfs = [read_keyed_lines(spark, models[m], lambda s, r: id_of(s, r, False), what=what) for m in names]
    if not keep_extra:
        for m, df in zip(names, dfs):
            shown = unmatched_ids(df, tdf)
            if shown:
                raise InputError(
                    f"{models[m]}: {what}(s) not in the ground truth ({truth}): {', '.join(map(repr, shown[:5]))}"
                    f"{' …' if len(shown) > 5 else ''}. Every prediction must have a ground-truth record."
                )
    joined = in_id_order(join_lines(tdf, dfs, how="full" if keep_extra else "left"), ID, partitions)

    def to_chunk(pdf: pd.DataFrame) -> Any:
        ids, t, preds = batch_lines(pdf, len(names))
        return chunk_of(ids, t, dict(zip(names, preds)))

    return SparkJob(task=task, df=joined, to_chunk=to_chunk, empty_chunk=lambda: chunk_of([], [], {m: [] for m in names}),
                    inputs={"truth": str(truth), "predictions": dict(models)})
