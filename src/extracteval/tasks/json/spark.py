"""The `json` task on Spark: JSONL lines read as text (Spark's JSON schema inference would
reshape arbitrary objects), parsed on the executors exactly as the local readers parse them
(`tasks.json.chunks.parse_record`), truth and each model's predictions joined by id, partitions in
id order scored by the chunked engine's `JsonTask` inside `mapInPandas`, and the ledgers (with
the per-record scores the exact means and medians need) reduced in id order and finalised once
on the driver: the local engine's document, byte for byte.

Inputs: `--truth` JSONL (records or pairs layout) and one JSONL file per model (records, or pairs
without a `model` key); without `--truth`, one pairs file whose `truth` is the ground truth. The
files need not be sorted. Duplicated ids, and predictions for ids the truth does not have, are
`InputError`s naming the file and ids, as locally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.errors import InputError
from extracteval.spark import require_pyspark

__all__ = ["json_spark_job"]

_ID = "__extracteval_id"


def _id_of(id_key: str):  # type: ignore[no-untyped-def]
    """A line's id as the local reader makes it (for `spark.engine.read_keyed_lines`)."""

    def id_of(source: str, obj: Any) -> str:
        from extracteval.tasks.json.inputs import _record_id

        if not isinstance(obj, dict):
            raise InputError(f"{source}: expected a JSON object with an {id_key!r} key, but found {type(obj).__name__}.")
        return _record_id(Path(source), "a line", obj, id_key)

    return id_of


def _read_lines(spark: Any, path: str, *, id_key: str, safety_key: str, metadata: Sequence[str] = ()) -> tuple[Any, bool]:
    """One JSONL file as (id, line) rows on Spark, and whether its records are in the pairs layout (read from its
    first line); a missing, empty or non-JSONL file is an error naming it."""
    from pyspark.sql import functions as F

    from extracteval.spark.engine import guard as _guard
    from extracteval.spark.engine import read_keyed_lines
    from extracteval.tasks.json.chunks import is_pairs
    from extracteval.tasks.json.inputs import _loads

    if not Path(path).exists() and "://" not in path:
        raise InputError(f"{path}: file not found.")
    if Path(path).suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError(f"{path}: --engine spark reads JSONL files for the json task; {Path(path).suffix!r} is not one.")
    text = spark.read.text(path)
    first = _guard(lambda: text.filter(F.trim(F.col("value")) != "").first())
    if first is None:
        raise InputError(f"{path}: the file is empty; expected one JSON object per line with an 'id' key.")
    try:
        obj = _loads(first["value"])
    except ValueError as e:
        raise InputError(f"{path}: the first line is not valid JSON ({e}).") from None
    pairs = isinstance(obj, dict) and is_pairs(obj, id_key, safety_key, metadata)
    return read_keyed_lines(spark, path, _id_of(id_key)), pairs


def _joined(tdf: Any, pred_dfs: Mapping[str, tuple[Any, bool]], specs: Sequence[str], models: Mapping[str, str], truth_source: str) -> Any:
    """The truth's lines (`tl`) and each model's (`l<i>`) joined by id; a predicted id the truth lacks is an error."""
    from pyspark.sql import functions as F

    from extracteval.spark.engine import guard as _guard

    joined = tdf.select(F.col(_ID), F.col("line").alias("tl"))
    for i, m in enumerate(specs):
        pdf, _ = pred_dfs[m]
        extra = pdf.select(_ID).join(tdf.select(_ID), on=_ID, how="left_anti")
        shown = _guard(lambda: [r[0] for r in extra.orderBy(_ID).limit(6).collect()])
        if shown:
            raise InputError(
                f"{models[m]}: record id(s) are not in the ground truth ({truth_source}): {', '.join(map(repr, shown[:5]))}"
                f"{' …' if len(shown) > 5 else ''}. Every prediction must have a ground-truth record."
            )
        joined = joined.join(pdf.select(F.col(_ID), F.col("line").alias(f"l{i}")), on=_ID, how="left")
    return joined


def json_spark_job(
    spark: Any, truth: str | None, predictions: Sequence[str], *, config: Any, similarity: Any, id_key: str = "id", records_mode: str = "auto",
    partitions: int | None = None, keep_records: bool = False,
) -> Any:
    """The `SparkJob` of `score json --engine spark` (its task: the chunked engine's `JsonTask`,
    its per-record scores carried in the ledger; `run().result`: `ChunkedJsonResult`)."""
    require_pyspark()  # the install hint, not an ImportError, without pyspark

    from extracteval.tasks.json.chunked import JsonTask
    from extracteval.io.config import model_files
    from extracteval.tasks.json.chunks import JsonChunk, parse_record
    from extracteval.tasks.json.inputs import _canon, _loads
    from extracteval.spark.engine import SparkJob
    from extracteval.spark.ordered import RowsInLedger, in_id_order

    safety_key = config.safety_key

    read = lambda path: _read_lines(spark, path, id_key=id_key, safety_key=safety_key, metadata=config.metadata)  # noqa: E731

    models = {name: str(path) for name, path in model_files(predictions).items()}
    specs = list(models)
    pred_dfs = {m: read(models[m]) for m in specs}
    if truth is not None:
        tdf, t_pairs = read(truth)
        truth_source, t_role = str(truth), "truth"
    elif len(specs) == 1 and pred_dfs[specs[0]][1]:
        (tdf, t_pairs), truth_source, t_role = pred_dfs[specs[0]], models[specs[0]], "predictions"
    else:
        raise InputError("--engine spark needs --truth FILE (or a single pairs-layout predictions file holding the truth).")
    joined = _joined(tdf, pred_dfs, specs, models, truth_source)
    joined = in_id_order(joined, _ID, partitions)
    layouts = {m: pred_dfs[m][1] for m in specs}

    def to_chunk(pdf: pd.DataFrame) -> JsonChunk:
        ids = pdf[_ID].tolist()
        gt: dict[str, Any] = {}
        for rid, line in zip(ids, pdf["tl"].tolist()):
            rec = parse_record(truth_source, f"record {rid!r}", _loads(line), role=t_role, pairs=t_pairs, id_key=id_key, safety_key=safety_key,
                               metadata=config.metadata)
            if not rec.has_truth:
                raise InputError(f"{truth_source}: record {rid!r} has no 'truth' key; the ground truth needs one per record.")
            gt[rid] = rec.truth
        preds = []
        for i, m in enumerate(specs):
            recs, safety, status = {}, {}, {}
            for rid, line in zip(ids, pdf[f"l{i}"].tolist()):
                if not isinstance(line, str):
                    continue
                rec = parse_record(models[m], f"record {rid!r}", _loads(line), role="predictions", pairs=layouts[m], id_key=id_key,
                                   safety_key=safety_key, metadata=config.metadata)
                if rec.has_truth and _canon(rec.truth) != _canon(gt[rid]):
                    raise InputError(f"{models[m]}: record {rid!r}: its 'truth' differs from the ground truth in {truth_source}.")
                recs[rid] = rec.prediction
                if rec.safety is not None:
                    safety[rid] = rec.safety
                if rec.status is not None:
                    status[rid] = rec.status
            from extracteval.tasks.json.semantics import JsonPredictions

            preds.append(JsonPredictions(name=m, records=recs, safety=safety, status=status, source=models[m]))
        return JsonChunk(truth=gt, predictions=preds, truth_source=truth_source)

    task = JsonTask(config=config, similarity=similarity, records_mode=records_mode, keep_records=keep_records)

    def empty() -> JsonChunk:
        raise InputError(f"{truth_source}: the file has no records.")

    return SparkJob(task=RowsInLedger(task), df=joined, to_chunk=to_chunk, empty_chunk=empty,
                    inputs={"truth": truth_source, "predictions": dict(models)})
