"""Wide tables on Spark — the truth and each model's table, one row per record id — as the
`fields` and `labels` tasks read them: files read as Spark DataFrames (`read_spark_tables`),
joined by id with the ids checked on the cluster (`join_tables`), and each joined batch rebuilt
as the local readers give it (`chunk_inputs`), so a chunk task scores it as it scores a file's
chunk. pyspark is imported when a function is called."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.wide_tables import ModelPredictions

__all__ = ["ModelColumns", "TableSpec", "chunk_inputs", "join_tables", "read_spark_table", "read_spark_tables"]

_ID = "__extracteval_id"


@dataclass(frozen=True)
class ModelColumns:
    name: str
    columns: tuple[str, ...]  # the predictions' value columns, in order (for the column warnings)
    carried: tuple[tuple[str, str], ...]  # (field, Spark column) of the scored fields it has
    status: str | None  # Spark column of `status`
    present: str  # Spark column that is non-null when the model has the record


@dataclass(frozen=True)
class TableSpec:
    """Everything an executor needs to rebuild the local engine's inputs from a joined batch."""

    truth: tuple[tuple[str, str], ...]  # (field, Spark column)
    models: tuple[ModelColumns, ...]
    text: frozenset[str]  # Spark columns read from CSV: null means an empty cell
    integral: frozenset[str]  # Spark columns of integer type: keep integers integers
    sources: Mapping[str, str]
    truth_present: str | None = None  # Spark column non-null when the truth has the record (joins that keep extra ids)


def _fix(col: pd.Series, name: str, spec: TableSpec) -> pd.Series:
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


def chunk_inputs(pdf: pd.DataFrame, spec: TableSpec) -> tuple[pd.DataFrame, list[ModelPredictions]]:
    """One joined batch as the local readers give its records: the truth (index = id) and each
    model's predictions (the records it has)."""
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
) -> tuple[Any, TableSpec]:
    """Truth (its `columns`) and each model's predictions (the same columns; with `carry_all`
    every column it has) joined by id, with the ids checked (blank, duplicated; ids the truth
    lacks are an `InputError` unless `keep_extra`), and the `TableSpec` that `chunk_inputs` rebuilds each
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
        model_specs.append(ModelColumns(name=name, columns=value_cols, carried=carried, status=status, present=f"m{i}p"))
    if partitions:
        joined = joined.repartition(partitions, _ID)
    return joined, TableSpec(truth=tuple(t_cols), models=tuple(model_specs), text=frozenset(text), integral=frozenset(integral),
                         sources=dict(sources), truth_present="tp" if keep_extra else None)


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
