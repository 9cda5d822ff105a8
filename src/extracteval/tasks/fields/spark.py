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

__all__ = ["SparkFieldsResult", "join_tables", "score_fields_spark", "fields_frames_job", "fields_spark_job", "score_fields_files", "read_spark_table"]

_ID = "__extracteval_id"
_RECORD_SCHEMA = "model string, record_id string, field string, tp int, fp int, fn int, tn int, excluded int"


@dataclass(frozen=True)
class SparkFieldsResult:
    """`result`: the same `FieldsResult` the local engine gives (without `records`);
    `records`: per-record counts as a Spark DataFrame (lazy)."""

    result: FieldsResult
    records: Any
    ledger: FieldsLedger | None = None  # merged (its distinct per-record patterns: the per-field intervals)


@dataclass(frozen=True)
class _ModelSpec:
    name: str
    columns: tuple[str, ...]  # the predictions' value columns, in order (for the column warnings)
    carried: tuple[tuple[str, str], ...]  # (field, Spark column) of the scored fields it has
    status: str | None  # Spark column of `status`
    present: str  # Spark column that is non-null when the model has the record


@dataclass(frozen=True)
class _Spec:
    """Everything an executor needs to rebuild the local engine's inputs from a joined batch."""

    truth: tuple[tuple[str, str], ...]  # (field, Spark column)
    models: tuple[_ModelSpec, ...]
    text: frozenset[str]  # Spark columns read from CSV: null means an empty cell
    integral: frozenset[str]  # Spark columns of integer type: keep integers integers
    sources: Mapping[str, str]
    truth_present: str | None = None  # Spark column non-null when the truth has the record (joins that keep extra ids)


def _fix(col: pd.Series, name: str, spec: _Spec) -> pd.Series:
    """A batch column as the local readers would have given it."""
    from extracteval.io.tables import _parse_json_lists

    values = col.astype(object)
    if name in spec.text:
        values = values.where(values.notna(), "")
        return _parse_json_lists(values)
    if name in spec.integral:
        return pd.Series([None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v) for v in values], index=col.index, dtype=object)
    if len(values) and any(isinstance(v, np.ndarray) for v in values):
        return pd.Series([list(v) if isinstance(v, np.ndarray) else v for v in values], index=col.index, dtype=object)
    return values


def _inputs(pdf: pd.DataFrame, spec: _Spec) -> tuple[pd.DataFrame, list[ModelPredictions]]:
    ids = pd.Index(pdf[_ID].astype(object).to_numpy(), dtype=object)
    t_rows = pdf if spec.truth_present is None else pdf.loc[pdf[spec.truth_present].notna().to_numpy()]
    truth = pd.DataFrame({f: _fix(t_rows[c], c, spec).to_numpy() for f, c in spec.truth}, index=ids if t_rows is pdf else
                         pd.Index(t_rows[_ID].astype(object).to_numpy(), dtype=object), dtype=object)
    preds = []
    for m in spec.models:
        present = pdf[m.present].notna().to_numpy()
        sub = pdf.loc[present]
        carried = dict(m.carried)
        values = pd.DataFrame(
            {col: (_fix(sub[carried[col]], carried[col], spec).to_numpy() if col in carried else np.full(len(sub), None, dtype=object)) for col in m.columns},
            index=ids[present],
            dtype=object,
        )
        values = values.reindex(columns=list(m.columns))
        status = None
        if m.status is not None:
            status = pd.Series(_fix(sub[m.status], m.status, spec).to_numpy(), index=ids[present], dtype=object)
        preds.append(ModelPredictions(name=m.name, values=values, status=status, source=spec.sources.get(m.name, "")))
    return truth, preds


def join_tables(
    truth: Any, predictions: Mapping[str, Any], *, columns: Sequence[str], models: Sequence[str], id_column: str, truth_source: str,
    sources: Mapping[str, str], text_columns: Mapping[str, bool], partitions: int | None = None, keep_extra: bool = False,
    carry_all: bool = False,
) -> tuple[Any, _Spec]:
    """Truth (its `columns`) and each model's predictions (the same columns; with `carry_all`
    every column it has) joined by id, with the ids checked (blank, duplicated; ids the truth
    lacks are an `InputError` unless `keep_extra`), and the `_Spec` that `_inputs` rebuilds each
    batch's local inputs with."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    def normalised(df: Any, what: str) -> Any:
        if id_column not in df.columns:
            raise InputError(f"{what}: no {id_column!r} column; columns found: {list(df.columns)[:20]}. Pass --id-column NAME if the ids are in another column.")
        if "model" in df.columns:
            raise InputError(f"{what}: a `model` column holds several models; give one input per model (NAME=FILE).")
        df = df.withColumn(_ID, F.regexp_replace(F.col(id_column).cast("string"), r"^\s+|\s+$", ""))
        blank = df.filter(F.col(_ID).isNull() | (F.col(_ID) == "")).limit(1).count()
        if blank:
            raise InputError(f"{what}: column {id_column!r} is empty in some rows; every record needs an id.")
        dups = [r[0] for r in df.groupBy(_ID).count().filter("count > 1").orderBy(_ID).limit(6).collect()]
        if dups:
            shown = ", ".join(repr(d) for d in dups[:5]) + (" …" if len(dups) > 5 else "")
            raise InputError(f"{what}: record ids must be unique; found duplicated: {shown}.")
        return df

    integral: set[str] = set()
    text: set[str] = set()

    def carry(df: Any, col: str, alias: str, is_text: bool) -> Any:
        if isinstance(df.schema[col].dataType, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            integral.add(alias)
        if is_text:
            text.add(alias)
        return F.col(col).alias(alias)

    truth_n = normalised(truth, truth_source)
    t_cols = [(f, f"t{j}") for j, f in enumerate(columns)]
    joined = truth_n.select(F.col(_ID), *[carry(truth_n, f, c, text_columns.get("", False)) for f, c in t_cols],
                            *([F.lit(True).alias("tp")] if keep_extra else []))
    model_specs = []
    for i, name in enumerate(models):
        what = sources.get(name) or f"predictions of model {name!r}"
        p = normalised(predictions[name], what)
        value_cols = tuple(c for c in p.columns if c not in (id_column, _ID, "status"))
        carried = tuple((f, f"m{i}c{j}") for j, f in enumerate(value_cols if carry_all else columns) if f in value_cols)
        status = f"m{i}s" if "status" in p.columns else None
        is_text = text_columns.get(name, False)
        sel = [F.col(_ID), F.lit(True).alias(f"m{i}p"), *[carry(p, f, c, is_text) for f, c in carried]]
        if status:
            sel.append(carry(p, "status", status, is_text))
        p = p.select(*sel)
        extra = p.select(_ID).join(truth_n.select(_ID), on=_ID, how="left_anti")
        shown_ids = [] if keep_extra else [r[0] for r in extra.orderBy(_ID).limit(6).collect()]
        if shown_ids:
            n_extra = extra.count()
            shown = ", ".join(repr(x) for x in shown_ids[:5]) + (" …" if n_extra > 5 else "")
            raise InputError(
                f"{what}: {n_extra} record id(s) are not in the ground truth ({truth_source}): {shown}. "
                "Every prediction must have a ground-truth record."
            )
        joined = joined.join(p, on=_ID, how="full" if keep_extra else "left")
        model_specs.append(_ModelSpec(name=name, columns=value_cols, carried=carried, status=status, present=f"m{i}p"))
    if partitions:
        joined = joined.repartition(partitions, _ID)
    return joined, _Spec(truth=tuple(t_cols), models=tuple(model_specs), text=frozenset(text), integral=frozenset(integral),
                         sources=dict(sources), truth_present="tp" if keep_extra else None)


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
    from extracteval.tasks.fields.chunked import EvaluateFieldsTask, FieldsChunk, FieldsTask
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

    def to_chunk(pdf: pd.DataFrame) -> FieldsChunk:
        t, preds = _inputs(pdf, spec)
        return FieldsChunk(truth=t, predictions=preds)

    def empty_chunk() -> FieldsChunk:
        return FieldsChunk(
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


def read_spark_table(spark: Any, path: str | Path, *, delimiter: str | None = None) -> tuple[Any, bool]:
    """A CSV/TSV, JSONL or Parquet file (or Parquet folder) as a Spark DataFrame; True when it is
    CSV text. CSV cells are read as strings, like the local reader."""
    p = str(path)
    suffix = Path(p).suffix.lower()
    if not Path(p).exists() and "://" not in p:
        raise InputError(f"{p}: file not found.")
    if suffix in (".csv", ".tsv", ".txt"):
        delim = delimiter or ("\t" if suffix == ".tsv" else ",")
        df = spark.read.csv(p, header=True, sep=delim, quote='"', escape='"', inferSchema=False, multiLine=True, encoding="UTF-8")
        df = df.toDF(*[c.lstrip("\ufeff") for c in df.columns])
        return df, True
    if suffix in (".jsonl", ".ndjson", ".json"):
        return spark.read.json(p), False
    if suffix in (".parquet", ".pq") or Path(p).is_dir():
        return spark.read.parquet(p), False
    raise InputError(f"{p}: --engine spark reads CSV/TSV, JSONL and Parquet; {suffix!r} is not one of them.")


def read_spark_tables(spark: Any, truth: str | Path, predictions: Sequence[str], *, delimiter: str | None = None
                      ) -> tuple[Any, dict[str, Any], dict[str, str], dict[str, bool]]:
    """The truth and each model's table (`NAME=FILE` specs): (truth DataFrame, model → DataFrame,
    model → file, input → read as CSV text: "" for the truth, else the model)."""
    from extracteval.io.config import model_files

    tdf, t_text = read_spark_table(spark, truth, delimiter=delimiter)
    preds: dict[str, Any] = {}
    sources: dict[str, str] = {}
    text: dict[str, bool] = {"": t_text}
    for name, path in model_files(predictions).items():
        preds[name], text[name] = read_spark_table(spark, path, delimiter=delimiter)
        sources[name] = str(path)
    return tdf, preds, sources, text


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
