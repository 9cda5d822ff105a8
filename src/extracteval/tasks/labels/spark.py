"""The `labels` task on Spark: wide tables (CSV/TSV, JSONL, Parquet read by
`spark.tables.read_spark_tables`, joined by `spark.tables.join_tables`, each batch rebuilt as the
local readers give it), predicted ids the truth lacks kept (strict-view errors, as locally), and
the chunked engine's `LabelsTask`, so the document is the local engine's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["labels_spark_job"]


def labels_spark_job(
    spark: Any, truth: str, predictions: Sequence[str], *, config: Any, features: Sequence[str] | None, id_column: str = "id",
    delimiter: str | None = None, partitions: int | None = None,
) -> Any:
    """The `SparkJob` of `score labels --engine spark` (its `run().result`: (LabelsResult, notes))."""
    from extracteval.io.wide_tables import ModelPredictions, TableChunk
    from extracteval.tasks.labels.chunked import LabelsTask
    from extracteval.tasks.labels.semantics import resolve_features
    from extracteval.errors import InputError
    from extracteval.spark.engine import SparkJob
    from extracteval.spark.tables import chunk_inputs, join_tables, read_spark_tables

    truth = str(truth)
    tdf, preds, sources, text = read_spark_tables(spark, truth, predictions, delimiter=delimiter)
    if id_column not in tdf.columns:
        raise InputError(f"{truth}: no {id_column!r} column; columns found: {list(tdf.columns)[:20]}. Pass --id-column NAME if the ids are in another column.")
    feats = tuple(resolve_features([c for c in tdf.columns if c != id_column], list(features) if features else None, config, truth))
    joined, spec = join_tables(tdf, preds, columns=[c for c in tdf.columns if c != id_column], models=list(sources), id_column=id_column, truth_source=truth, sources=sources,
                               text_columns=text, partitions=partitions, keep_extra=True)

    def to_chunk(pdf: pd.DataFrame) -> TableChunk:
        t, p = chunk_inputs(pdf, spec)
        return TableChunk(truth=t, predictions=p)

    def empty_chunk() -> TableChunk:
        return TableChunk(truth=pd.DataFrame({f: [] for f in feats}, dtype=object),
                           predictions=[ModelPredictions(name=m.name, values=pd.DataFrame(columns=list(m.columns), dtype=object), source=sources[m.name])
                                        for m in spec.models])

    task = LabelsTask(config=config, features=feats, truth_source=truth, sources=sources)
    return SparkJob(task=task, df=joined, to_chunk=to_chunk, empty_chunk=empty_chunk, inputs={"truth": truth, "predictions": dict(sources)})
