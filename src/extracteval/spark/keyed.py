"""The Spark glue of the tasks whose JSONL records hold an id and one value under the first of a
few keys (`structured`, `toolcalls`): `spark.engine.lines_job` with the chunked reader's own record
checks (`io.keyed_chunks.keyed_record`), outputs for ids the truth lacks kept (they are listed as
`extra_ids`), and each batch turned into the chunked engine's `KeyedChunk`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["keyed_spark_job"]


def keyed_spark_job(
    spark: Any, task: Any, truth: str, predictions: Sequence[str], *, truth_keys: Sequence[str],
    truth_value: Callable[[str, str, dict[str, Any], str], Any], partitions: int | None = None,
) -> Any:
    """The `SparkJob` of `task` over these files; `truth_value(file, id, record, key)` is a truth
    record's value (a model's is `record[key]`)."""
    from extracteval.io.config import model_files
    from extracteval.io.json_text import loads as _loads
    from extracteval.io.keyed_chunks import KeyedChunk, keyed_record
    from extracteval.io.record_keys import OUTPUT_KEYS
    from extracteval.spark.engine import lines_job

    def keys(is_truth: bool) -> tuple[tuple[str, ...], str]:
        return (tuple(truth_keys), "reference") if is_truth else (OUTPUT_KEYS, "output")

    def id_of(source: str, rec: Any, is_truth: bool) -> str:
        return keyed_record(source, "a line", rec, *keys(is_truth))[0]

    def chunk_of(ids: list[str], truth_lines: list[str | None], model_lines: dict[str, list[str | None]]) -> KeyedChunk:
        gt = {}
        for rid, line in zip(ids, truth_lines):
            if line is not None:
                rec = _loads(line)
                gt[rid] = truth_value(truth, rid, rec, keyed_record(truth, "a line", rec, *keys(True))[1])
        preds: dict[str, dict[str, Any]] = {}
        for m, lines in model_lines.items():
            preds[m] = {}
            for rid, line in zip(ids, lines):
                if line is not None:
                    rec = _loads(line)
                    preds[m][rid] = rec[keyed_record(models[m], "a line", rec, *keys(False))[1]]
        return KeyedChunk(truth=gt, predictions=preds)

    models = {name: str(path) for name, path in model_files(predictions).items()}
    return lines_job(spark, task, str(truth), models, id_of=id_of, chunk_of=chunk_of, keep_extra=True, partitions=partitions)
