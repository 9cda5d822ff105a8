"""The `fields` task on Spark: truth and predictions joined by id on the cluster, every partition
scored by the local core (`fields_ledger`) inside `mapInPandas`, the ledgers reduced on the
driver and finalised once by `fields_result` — the same functions, so the same numbers.

The driver checks the inputs first (blank, duplicated and unknown ids) with Spark jobs, so bad
input is an `InputError` naming the input and the ids, not an executor stack trace.

Per-record results (model, record_id, field, tp, fp, fn, tn, excluded) are a Spark DataFrame,
computed only when used (written with `records.write.parquet(...)`).

Bootstrap intervals need only the distinct per-record count patterns, which travel inside the
ledgers. When they are many (more than a quarter of the records) the bootstrap resamples records
one by one, as the local engine does, and the driver collects the per-record counts (records ×
models × fields × 4 small integers); `--no-ci` avoids that on very large inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.fields.semantics import FieldsConfig, FieldsLedger, FieldsResult, ModelPredictions, plan_fields
from extracteval.errors import InputError
from extracteval.spark.tables import chunk_inputs, join_tables, read_spark_tables

__all__ = ["SparkFieldsResult", "score_fields_spark", "fields_frames_job", "fields_spark_job", "score_fields_files"]

_RECORD_SCHEMA = "model string, record_id string, field string, tp int, fp int, fn int, tn int, excluded int"


@dataclass(frozen=True)
class SparkFieldsResult:
    """`result`: the same `FieldsResult` the local engine gives (without `records`);
    `records`: per-record counts as a Spark DataFrame (lazy)."""

    result: FieldsResult
    records: Any
    ledger: FieldsLedger | None = None  # merged (its distinct per-record patterns: the per-field intervals)


def score_fields_spark(
    truth: Any,
    predictions: Mapping[str, Any],
    *,
    config: FieldsConfig | None = None,
    fields: Sequence[str] | None = None,
    id_column: str = "id",
    truth_source: str = "truth",
    sources: Mapping[str, str] | None = None,
    text_columns: Mapping[str, bool] | None = None,
    partitions: int | None = None,
) -> SparkFieldsResult:
    """Score Spark DataFrames: `truth` (id + one column per field) and one predictions DataFrame
    per model (id + field columns + optional `status`).

    Args:
        sources: model → where its predictions came from (for messages).
        text_columns: input name ("" for the truth, else the model) → True when it was read from
            CSV, whose empty cells Spark reads as null and the local reader as "".
        partitions: repartition the joined records into this many partitions by id.

    Returns the local engine's `FieldsResult` (same `to_dict()`) and the per-record DataFrame.
    """
    run = fields_frames_job(truth, predictions, config, fields, id_column, truth_source, sources, text_columns, partitions).run()
    return SparkFieldsResult(result=run.result, records=run.records, ledger=run.ledger)


def fields_frames_job(truth: Any, predictions: Mapping[str, Any], config: FieldsConfig | None, fields: Sequence[str] | None, id_column: str,
                      truth_source: str, sources: Mapping[str, str] | None, text_columns: Mapping[str, bool] | None, partitions: int | None,
                      *, evaluate: bool = False) -> Any:
    """The `spark.engine.SparkJob` of `score_fields_spark` (same arguments): `FieldsTask` over
    the joined records, with the per-record rows and the bootstrap rows read from them. With
    `evaluate`, every column is carried, as the local readers read the files (the truth digest
    and the logged predictions cover them all), and the id-ordered pass keeps what `evaluate`
    logs (`EvaluateFieldsTask`); only the scored fields are carried otherwise."""
    from extracteval.tasks.fields.chunked import EvaluateFieldsTask, FieldsTask
    from extracteval.io.wide_tables import TableChunk
    from extracteval.spark.engine import SparkJob

    sources = dict(sources or {})
    text_columns = dict(text_columns or {})
    if not predictions:
        raise InputError("no predictions: give at least one model's predictions.")
    tcols = [c for c in truth.columns if c != id_column]
    if id_column not in truth.columns:
        raise InputError(f"{truth_source}: no {id_column!r} column; columns found: {list(truth.columns)[:20]}.")
    if "status" in tcols:
        raise InputError(f"{truth_source}: the ground truth must not have a `status` column; status belongs to predictions.")
    plan = plan_fields(tcols, {m: sources.get(m, "") for m in predictions}, config=config, fields=fields, truth_source=truth_source)
    scored = list(plan.scored)

    carried = tcols if evaluate else scored
    joined, spec = join_tables(truth, predictions, columns=carried, models=plan.models, id_column=id_column, truth_source=truth_source,
                               carry_all=evaluate, sources={**sources, **plan.sources}, text_columns=text_columns, partitions=partitions)
    model_specs = spec.models

    def to_chunk(pdf: pd.DataFrame) -> TableChunk:
        t, preds = chunk_inputs(pdf, spec)
        return TableChunk(truth=t, predictions=preds)

    def empty_chunk() -> TableChunk:
        return TableChunk(
            truth=pd.DataFrame({f: [] for f in carried}, dtype=object),
            predictions=[
                ModelPredictions(name=m.name, values=pd.DataFrame(columns=list(m.columns), dtype=object), source=plan.sources.get(m.name, ""))
                for m in model_specs
            ],
        )

    def record_rows(records_df: Any, ledger: FieldsLedger) -> np.ndarray:
        return _collect_rows(records_df, plan.models, scored, ledger.n_records)

    return SparkJob(task=FieldsTask(plan), df=joined, to_chunk=to_chunk, empty_chunk=empty_chunk,
                    inputs={"truth": str(truth_source), "predictions": dict(sources)},
                    records_schema=_RECORD_SCHEMA, record_rows=record_rows, evaluate_task=EvaluateFieldsTask(plan) if evaluate else None)


def fields_spark_job(
    spark: Any, truth: str | Path, predictions: Sequence[str], *, config: FieldsConfig | None = None, fields: Sequence[str] | None = None,
    id_column: str = "id", delimiter: str | None = None, partitions: int | None = None, evaluate: bool = False,
) -> Any:
    """The `SparkJob` of `score fields --engine spark` (with `evaluate`, of `evaluate fields
    --engine spark`): the files (local paths or cluster URIs) read by `read_spark_tables`, scored
    by `fields_frames_job`."""
    tdf, preds, sources, text = read_spark_tables(spark, truth, predictions, delimiter=delimiter)
    return fields_frames_job(tdf, preds, config, fields, id_column, str(truth), sources, text, partitions, evaluate=evaluate)


def args_spark_job(args: Any, spark: Any, *, evaluate: bool = False) -> Any:
    """`fields_spark_job` of `score fields` / `evaluate fields` command-line arguments."""
    from extracteval.tasks.fields.options import build_config, chosen_fields

    if getattr(args, "keys", None):
        raise InputError("--keys (Kleister files) cannot be read by --engine spark; drop --engine spark.")
    return fields_spark_job(spark, args.truth, args.predictions, config=build_config(args), fields=chosen_fields(args), id_column=args.id_column,
                            delimiter=args.delimiter, partitions=getattr(args, "spark_partitions", None), evaluate=evaluate)


def _collect_rows(records_df: Any, models: Sequence[str], fields: Sequence[str], n: int) -> np.ndarray:
    """Per-record bootstrap rows (records in id order × models × fields × tp/fp/fn/tn)."""
    pdf = records_df.toPandas()
    ids = np.sort(pdf["record_id"].unique().astype(object))
    if len(ids) != n:
        raise RuntimeError(f"expected {n} records, collected {len(ids)}")
    r = pd.Index(ids).get_indexer(pdf["record_id"])
    mi = pd.Index(list(models)).get_indexer(pdf["model"])
    fi = pd.Index(list(fields)).get_indexer(pdf["field"])
    arr = np.zeros((n, len(models), len(fields), 4), dtype=np.int64)
    arr[r, mi, fi, :] = pdf[["tp", "fp", "fn", "tn"]].to_numpy(dtype=np.int64)
    return arr.reshape(n, len(models) * len(fields) * 4)


def score_fields_files(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    config: FieldsConfig | None = None,
    fields: Sequence[str] | None = None,
    id_column: str = "id",
    delimiter: str | None = None,
    master: str | None = None,
    partitions: int | None = None,
    records_path: str | Path | None = None,
) -> tuple[FieldsResult, dict[str, Any]]:
    """`extracteval score fields --engine spark`: files (local paths or cluster URIs) → result."""
    from extracteval.spark import get_session

    job = fields_spark_job(get_session(master, shuffle_partitions=partitions or 8), truth, predictions, config=config, fields=fields,
                           id_column=id_column, delimiter=delimiter, partitions=partitions)
    run = job.run()
    if records_path is not None:
        run.records.write.mode("overwrite").parquet(str(records_path))
    return run.result, job.inputs
