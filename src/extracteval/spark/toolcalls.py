"""The `toolcalls` task (generic checker) on Spark: JSONL lines read as text (Spark's JSON schema
inference would reshape arbitrary call arguments), ids and keys parsed on the executors, truth and
each model's outputs joined by id, every partition scored by the local core inside `mapInPandas`
(`chunked_toolcalls.ToolCallsTask`, the chunked engine's task) and the ledgers reduced and
finalised once on the driver: the same counts, so the same numbers as the local engine.

The inputs need not be sorted. Duplicated ids are an `InputError` naming the file and ids;
outputs for ids the truth does not have are listed as `extra_ids`, as locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.errors import InputError

__all__ = ["score_toolcalls_spark_files"]

_ID = "__extracteval_id"


def _parse_lines(source: str, keys: tuple[str, ...], what: str):  # type: ignore[no-untyped-def]
    """mapInPandas function: text lines → (id, key, line); blank lines dropped."""
    from extracteval.io.json_inputs import _loads

    def run(batches):  # type: ignore[no-untyped-def]
        for pdf in batches:
            ids, found, lines = [], [], []
            for line in pdf["value"].tolist():
                if line is None or not line.strip():
                    continue
                try:
                    rec = _loads(line)
                except ValueError as e:
                    raise InputError(f"{source}: a line is not valid JSON ({e}): {line[:80]!r}") from None
                if not isinstance(rec, dict) or "id" not in rec:
                    raise InputError(f"{source}: expected JSON objects with \"id\" and one of {', '.join(keys)}, but found {line[:80]!r}.")
                key = next((k for k in keys if k in rec), None)
                if key is None:
                    raise InputError(f"{source}: id {rec['id']}: no {what} key; expected one of {', '.join(keys)} (found keys {sorted(rec)[:8]}).")
                ids.append(str(rec["id"]))
                found.append(key)
                lines.append(line)
            yield pd.DataFrame({_ID: ids, "key": found, "line": lines})

    return run


def _value(line: str, key: str) -> Any:
    from extracteval.io.json_inputs import _loads

    return _loads(line)[key]


def _guard(action):  # type: ignore[no-untyped-def]
    """Run a Spark action; an `InputError` raised on an executor comes back as itself."""
    from extracteval.spark.engine import _input_error

    try:
        return action()
    except Exception as e:  # Py4J / PythonException wrap executor failures
        err = _input_error(e)
        if err is not None:
            raise err from None
        raise


def score_toolcalls_spark_files(
    truth: str, predictions: Sequence[str], *, config: Any, possible_answer: bool = False, master: str | None = None,
    partitions: int | None = None,
) -> tuple[Any, dict[str, Any]]:
    """`extracteval score toolcalls --engine spark`: files (local paths or cluster URIs) → the
    local engine's `ToolCallResult` (without per-record rows) and the `inputs` entry."""
    from extracteval.spark import require_pyspark

    require_pyspark()  # a clear message, not an ImportError, when the extra is not installed
    from pyspark.sql import functions as F

    from extracteval.chunked_toolcalls import ToolCallsTask
    from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.io.config import model_files
    from extracteval.io.keyed_chunks import KeyedChunk
    from extracteval.io.toolcall_inputs import OUTPUT_KEYS
    from extracteval.spark import get_session
    from extracteval.spark.engine import run_on_spark

    spark = get_session(master, shuffle_partitions=partitions or 8)
    schema = f"{_ID} string, key string, line string"

    def read(path: str, keys: tuple[str, ...], what: str) -> Any:
        if not Path(path).exists() and "://" not in path:
            raise InputError(f"{path}: file not found.")
        df = spark.read.text(path).mapInPandas(_parse_lines(path, keys, what), schema=schema)
        dups = _guard(lambda: [r[0] for r in df.groupBy(_ID).count().filter("count > 1").orderBy(_ID).limit(6).collect()])
        if dups:
            raise InputError(f"{path}: ids must be unique; found duplicated: {', '.join(repr(d) for d in dups[:5])}{' …' if len(dups) > 5 else ''}.")
        return df

    tdf = read(truth, TRUTH_KEYS, "reference")
    if not possible_answer:  # as in memory: one possible-answer record makes the whole file possible answers
        possible_answer = bool(_guard(lambda: tdf.filter(F.col("key").isin("ground_truth", "possible_answer")).limit(1).count()))
    joined = tdf.select(F.col(_ID), F.col("key").alias("tk"), F.col("line").alias("tl"))
    models: dict[str, str] = {}
    extras: dict[str, dict[str, Any]] = {}
    for i, (name, path) in enumerate(model_files(predictions).items()):
        models[name] = str(path)
        pdf = read(str(path), OUTPUT_KEYS, "output")
        # outputs for ids the truth lacks are only listed (extra_ids): collect just those
        extra = _guard(lambda: pdf.join(tdf.select(_ID), on=_ID, how="left_anti").collect())
        extras[name] = {r[_ID]: _value(r["line"], r["key"]) for r in extra}
        joined = joined.join(pdf.select(F.col(_ID), F.col("key").alias(f"k{i}"), F.col("line").alias(f"l{i}")), on=_ID, how="left")
    if partitions:
        joined = joined.repartition(partitions, _ID)
    names = list(models)

    def to_chunk(pdf: pd.DataFrame) -> KeyedChunk:
        ids = pdf[_ID].tolist()
        truth_map = {rid: _value(line, k) for rid, k, line in zip(ids, pdf["tk"].tolist(), pdf["tl"].tolist())}
        preds = {}
        for j, m in enumerate(names):
            preds[m] = {rid: _value(line, k) for rid, k, line in zip(ids, pdf[f"k{j}"].tolist(), pdf[f"l{j}"].tolist()) if isinstance(line, str)}
        return KeyedChunk(truth=truth_map, predictions=preds)

    task = ToolCallsTask(config=config, possible_answer=possible_answer)
    # outputs for ids the truth lacks join the reduced ledger on the driver (a chunk without
    # truth records lists them as extra_ids)
    extra = task.score_chunk(KeyedChunk(truth={}, predictions={m: extras[m] for m in names})).ledger
    run = run_on_spark(_WithExtra(task, extra), joined, to_chunk, empty_chunk=lambda: KeyedChunk(truth={}, predictions={m: {} for m in names}))
    return run.result, {"truth": truth, "predictions": models}


@dataclass(frozen=True)
class _WithExtra:
    """The task, with a ledger added on the driver before finalising."""

    task: Any
    extra: Any

    def score_chunk(self, chunk: Any) -> Any:
        return self.task.score_chunk(chunk)

    def finalise(self, ledger: Any, *, record_rows: Any) -> Any:
        return self.task.finalise(ledger + self.extra, record_rows=record_rows)
