"""`extracteval evaluate fields --engine spark`: the Spark engine feeding the MLflow logging path
with what the in-memory `evaluate` logs.

The numbers come from `score_fields_spark` (partition ledgers reduced on the driver). What the
bundle needs beyond them is produced on the executors and streamed to the driver in record-id
order (`in_id_order`: range partitions, each sorted; `toLocalIterator` fetches one partition at a
time), each batch as Arrow IPC bytes, so the driver holds one batch, never the data set:

- the truth, encoded for the truth digest (`core.digest`), hashed in id order;
- per model, the per-record counts → `records.parquet`, and the predictions as scored →
  `predictions.parquet`, written batch by batch.

The per-record counts are computed again for this (Spark recomputes the lazy per-record
DataFrame), which costs a second scoring pass: Spark is for data beyond one machine, not for
speed on one (docs/scale.md).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.errors import InputError
from extracteval.mlflow.stream import HEAD_ROWS, Streamed

__all__ = ["score_fields_spark_streamed"]

_ID = "__extracteval_id"


def _ordered_frames(df: Any, fn: Callable[[pd.DataFrame], pd.DataFrame], partitions: int | None, then: tuple[str, ...] = ()) -> Iterator[pd.DataFrame]:
    """`fn` of every batch of `df`, batches in record-id order (then by the `then` columns), one
    at a time on the driver."""
    import pyarrow as pa

    from extracteval.spark.engine import _input_error, arrow_ipc

    def encode(batches):  # type: ignore[no-untyped-def]
        for pdf in batches:
            yield pd.DataFrame({"payload": [arrow_ipc(fn(pdf))]})

    parts = partitions or df.sparkSession.sparkContext.defaultParallelism
    ordered = df.repartitionByRange(parts, _ID).sortWithinPartitions(_ID, *then).mapInPandas(encode, schema="payload binary")
    try:
        for row in ordered.toLocalIterator():
            yield pa.ipc.open_stream(row["payload"]).read_all().to_pandas()
    except Exception as e:  # executor failures come back as Py4J/PythonException
        err = _input_error(e)
        if err is not None:
            raise err from None
        raise


def _write(frames: Iterator[pd.DataFrame], path: Path, categorical: tuple[str, ...] = (), schema: Any = None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for frame in frames:
            if not len(frame):
                continue
            for c in categorical:  # as the in-memory per-record table: ids dictionary-encoded
                frame[c] = frame[c].astype("category")
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(str(path), schema or table.schema)
            writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()


def score_fields_spark_streamed(args: argparse.Namespace, *, workdir_parent: Path | None = None) -> Streamed:
    """Score `evaluate fields --engine spark` arguments (see the module docstring)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from extracteval.tasks.fields.options import build_config, chosen_fields
    from extracteval.core.digest import TruthDigest, encode_truth
    from extracteval.tasks.fields.semantics import ModelPredictions
    from extracteval.io.config import model_files
    from extracteval.mlflow.predictions_file import predictions_to_frame
    from extracteval.spark import get_session
    from extracteval.tasks.fields.spark import _fix, _Spec, read_spark_table, score_fields_spark

    if getattr(args, "keys", None):
        raise InputError("--keys (Kleister files) cannot be read by --engine spark; drop --engine spark.")
    config = build_config(args)
    fields = chosen_fields(args)
    partitions = args.spark_partitions
    spark = get_session(args.spark_master, shuffle_partitions=partitions or 8)
    id_column = args.id_column
    tdf, t_text = read_spark_table(spark, args.truth, delimiter=args.delimiter)
    preds: dict[str, Any] = {}
    sources: dict[str, str] = {}
    text: dict[str, bool] = {"": t_text}
    for name, path in model_files(args.predictions).items():
        preds[name], text[name] = read_spark_table(spark, path, delimiter=args.delimiter)
        sources[name] = str(path)
    out = score_fields_spark(tdf, preds, config=config, fields=fields, id_column=id_column, truth_source=str(args.truth),
                             sources=sources, text_columns=text, partitions=partitions)
    result = out.result
    models = sorted(preds)

    def fixer(df: Any, is_text: bool) -> _Spec:
        from pyspark.sql import types as T

        integral = {c for c in df.columns if isinstance(df.schema[c].dataType, (T.ByteType, T.ShortType, T.IntegerType, T.LongType))}
        return _Spec(truth=(), models=(), text=frozenset(df.columns if is_text else ()), integral=frozenset(integral), sources={})

    def keyed(df: Any) -> Any:  # the id as the engine reads it (text, trimmed)
        return df.withColumn(_ID, F.regexp_replace(F.col(id_column).cast("string"), r"^\s+|\s+$", ""))

    t_cols = [c for c in tdf.columns if c != id_column]
    t_spec = fixer(tdf, t_text)

    def truth_frame(pdf: pd.DataFrame) -> pd.DataFrame:
        ids = pd.Index(pdf[_ID].astype(object).to_numpy(), dtype=object)
        return pd.DataFrame({c: _fix(pdf[c], c, t_spec).to_numpy() for c in t_cols}, index=ids, dtype=object).reindex(columns=t_cols)

    def digest_batch(pdf: pd.DataFrame) -> pd.DataFrame:
        piece = encode_truth(truth_frame(pdf), presorted=True)
        names = list(piece.columns)
        return pd.DataFrame({"name": names, "meta": [piece.columns[n].meta for n in names], "data": [piece.columns[n].data for n in names],
                             "rows": piece.rows, "first": piece.first_id, "last": piece.last_id})

    from extracteval.core.digest import ColumnPiece, TruthPiece

    digest = TruthDigest()
    for frame in _ordered_frames(keyed(tdf), digest_batch, partitions):
        if len(frame):
            r = frame.iloc[0]
            digest.update(TruthPiece(rows=int(r["rows"]), first_id=r["first"], last_id=r["last"],
                                     columns={n: ColumnPiece(meta=bytes(m), data=bytes(d)) for n, m, d in zip(frame["name"], frame["meta"], frame["data"])}))
    head_pdf = keyed(tdf).limit(HEAD_ROWS).toPandas()
    head = truth_frame(head_pdf)

    workdir = Path(tempfile.mkdtemp(prefix="extracteval-stream-", dir=workdir_parent))
    files: dict[tuple[str, str], Path] = {}
    try:
        fields_order = F.array_position(F.array(*[F.lit(f) for f in result.fields]), F.col("field"))
        for i, m in enumerate(models):
            rec = out.records.filter(F.col("model") == m).withColumn(_ID, F.col("record_id")).withColumn("__pos", fields_order)

            def records_batch(pdf: pd.DataFrame) -> pd.DataFrame:
                return pdf.drop(columns=[_ID, "__pos"]).reset_index(drop=True)

            path = workdir / f"records-{i}.parquet"
            _write(_ordered_frames(rec, records_batch, partitions, then=("__pos",)), path, categorical=("model", "record_id", "field"),
                   schema=pa.schema([*[(c, pa.dictionary(pa.int32(), pa.string())) for c in ("model", "record_id", "field")],
                                     *[(c, pa.int32()) for c in ("tp", "fp", "fn", "tn", "excluded")]]))
            files[(m, "records.parquet")] = path

            p = keyed(preds[m])
            p_spec = fixer(preds[m], text[m])
            value_cols = [c for c in preds[m].columns if c not in (id_column, "status")]
            has_status = "status" in preds[m].columns

            def predictions_batch(pdf: pd.DataFrame, m: str = m, p_spec: _Spec = p_spec, value_cols: list[str] = value_cols,
                                  has_status: bool = has_status) -> pd.DataFrame:
                ids = pd.Index(pdf[_ID].astype(object).to_numpy(), dtype=object)
                values = pd.DataFrame({c: _fix(pdf[c], c, p_spec).to_numpy() for c in value_cols}, index=ids, dtype=object).reindex(columns=value_cols)
                status = pd.Series(_fix(pdf["status"], "status", p_spec).to_numpy(), index=ids, dtype=object) if has_status else None
                return predictions_to_frame(ModelPredictions(name=m, values=values, status=status, source=sources[m]))

            path = workdir / f"predictions-{i}.parquet"
            _write(_ordered_frames(p, predictions_batch, partitions), path, schema=pa.schema([(c, pa.string()) for c in ("id", "field", "value", "status")]))
            files[(m, "predictions.parquet")] = path
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return Streamed(
        result=result, truth_digest=digest.hexdigest(), truth_rows=result.n_records,
        truth_head=head, inputs={"truth": str(args.truth), "predictions": sources},
        files={k: v for k, v in files.items() if v.exists()}, workdir=workdir,
    )
