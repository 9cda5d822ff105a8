"""The `structured` task on Spark: the JSONL glue of `spark.engine.lines_job` (files read as text,
ids parsed on the executors as the chunked reader parses them, joined by id in id order, outputs
for ids the truth lacks kept: they are listed as `extra_ids`) and the chunked engine's
`StructuredTask`, so the document is the local engine's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["structured_spark_job"]


def structured_spark_job(spark: Any, truth: str, predictions: Sequence[str], *, config: Any, partitions: int | None = None) -> Any:
    """The `SparkJob` of `score structured --engine spark` (its `run().result`: `StructuredResult`)."""
    from extracteval.chunked_structured import StructuredTask, _truth_value
    from extracteval.io.record_keys import STRUCTURED_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.io.config import model_files
    from extracteval.io.json_inputs import _loads
    from extracteval.io.keyed_chunks import KeyedChunk, keyed_record
    from extracteval.io.toolcall_inputs import OUTPUT_KEYS
    from extracteval.spark.engine import lines_job

    def keys(is_truth: bool) -> tuple[tuple[str, ...], str]:
        return (TRUTH_KEYS, "reference") if is_truth else (OUTPUT_KEYS, "output")

    def id_of(source: str, rec: Any, is_truth: bool) -> str:
        return keyed_record(source, "a line", rec, *keys(is_truth))[0]

    def chunk_of(ids: list[str], truth_lines: list[str | None], model_lines: dict[str, list[str | None]]) -> KeyedChunk:
        gt = {}
        for rid, line in zip(ids, truth_lines):
            if line is not None:
                rec = _loads(line)
                gt[rid] = _truth_value(Path(truth), 0, rid, rec, keyed_record(truth, "a line", rec, *keys(True))[1])
        preds = {}
        for m, lines in model_lines.items():
            preds[m] = {}
            for rid, line in zip(ids, lines):
                if line is not None:
                    rec = _loads(line)
                    preds[m][rid] = rec[keyed_record(models[m], "a line", rec, *keys(False))[1]]
        return KeyedChunk(truth=gt, predictions=preds)

    models = {name: str(path) for name, path in model_files(predictions).items()}
    return lines_job(spark, StructuredTask(config=config), str(truth), models, id_of=id_of, chunk_of=chunk_of, keep_extra=True,
                     partitions=partitions)
