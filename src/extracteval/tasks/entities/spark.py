"""The `entities` task on Spark: the JSONL glue of `spark.engine.lines_job` (ids parsed on the
executors as the chunked reader parses them, joined by id in id order; predicted records the
truth lacks kept: their entities are extra predictions), the fields of every gold entity gathered
on the cluster (the chunked engine's first pass over the truth), and the chunked engine's
`EntitiesTask`, so the document is the local engine's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["entities_spark_job"]


def entities_spark_job(
    spark: Any, truth: str, predictions: Sequence[str], *, config: Any, similarity: Any, id_column: str = "id",
    entities_key: str = "entities", partitions: int | None = None,
) -> Any:
    """The `SparkJob` of `score entities --engine spark` (its `run().result`: `EntitiesResult`)."""
    from extracteval.tasks.entities.chunked import EntitiesTask
    from extracteval.tasks.entities.semantics import gold_fields_of, plan_entities
    from extracteval.io.config import model_files
    from extracteval.tasks.entities.chunks import EntitiesChunk, entity_record_id
    from extracteval.tasks.entities.inputs import _entity_list
    from extracteval.io.json_text import loads as _loads
    from extracteval.spark.engine import ID, guard, lines_job

    def id_of(source: str, rec: Any, is_truth: bool) -> str:
        return entity_record_id(source, "a line", rec, id_column=id_column, entities_key=entities_key, truth=is_truth)

    def entities(source: str, rid: str, line: str, is_truth: bool) -> list[Any]:
        return _entity_list(Path(source), f"record {rid!r}", rid, _loads(line).get(entities_key), entities_key, truth=is_truth)

    def chunk_of(ids: list[str], truth_lines: list[str | None], model_lines: dict[str, list[str | None]]) -> EntitiesChunk:
        gt = {rid: entities(truth, rid, line, True) for rid, line in zip(ids, truth_lines) if line is not None}
        preds = {m: {rid: entities(models[m], rid, line, False) for rid, line in zip(ids, lines) if line is not None}
                 for m, lines in model_lines.items()}
        return EntitiesChunk(truth=gt, predictions=preds)

    models = {name: str(path) for name, path in model_files(predictions).items()}
    truth = str(truth)
    job = lines_job(spark, None, truth, models, id_of=id_of, chunk_of=chunk_of, keep_extra=True, partitions=partitions)

    def fields_of(batches):  # type: ignore[no-untyped-def]
        for pdf in batches:
            found: set[str] = set()
            for rid, line in zip(pdf[ID].tolist(), pdf["tl"].tolist()):
                if isinstance(line, str):
                    found.update(gold_fields_of(entities(truth, rid, line, True)))
            yield pd.DataFrame({"field": sorted(found)})

    gold = guard(lambda: sorted(r[0] for r in job.df.mapInPandas(fields_of, schema="field string").distinct().collect()))
    plan = plan_entities(gold, config, truth)
    task = EntitiesTask(config=config, plan=plan, truth_source=truth, sources=dict(models), similarity=similarity)
    from dataclasses import replace

    return replace(job, task=task)
