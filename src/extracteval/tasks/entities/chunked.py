"""The `entities` task on the chunk driver.

Entities are aligned record by record, so a chunk of records (`tasks.entities.chunks`) is scored by
the in-memory core (`tasks.entities.semantics.entities_ledger`) on its own, with the options resolved once
from the fields of every gold entity (a first pass over the truth). The chunk ledgers add up
(`EntitiesLedger`): per-feature counts keyed by canonical label, gold entities missing each field,
the distinct value pairs each SEMANTIC field's backend scored, match similarities summed exactly,
the first examples and smallest unaligned ids. `tasks.entities.semantics.entities_result` finalises once,
as `score_entities` does over one chunk, so the document is the in-memory one exactly.

A SEMANTIC field's backend is called once per chunk (over that chunk's distinct pairs) instead of
once for the whole input: the scores are the same as long as the backend scores each pair on its
own (`lexical` does; an `llm_judge` is refused, see `tasks.entities.options`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore

__all__ = ["EntitiesTask", "entities_chunk_job"]


@dataclass(frozen=True)
class EntitiesTask:
    config: Any  # EntitiesConfig
    plan: Any  # EntitiesPlan
    truth_source: str
    sources: dict[str, str]  # model → file
    similarity: Any = None  # the SEMANTIC backend
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.entities.semantics import ModelEntities, entities_ledger

        preds = [ModelEntities(name=m, records=recs, source=self.sources[m]) for m, recs in chunk.predictions.items()]
        ledger, per_record = entities_ledger(chunk.truth, preds, config=self.config, truth_source=self.truth_source,
                                             similarity=_fresh(self.similarity), plan=self.plan)
        records = None
        if self.keep_records:
            records = pd.concat([per_record[m].assign(model=m) for m in sorted(per_record)], ignore_index=True)
            for c in ("record_id", "model"):
                records[c] = records[c].astype("string[pyarrow]")
        return ChunkScore(ledger=ledger, records=records)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.tasks.entities.semantics import entities_result

        return entities_result(ledger, config=self.config, plan=self.plan, truth_source=self.truth_source,
                               similarity=self.similarity, sources=self.sources)


def _fresh(backend: Any) -> Any:
    """The backend with an empty cache of scored pairs: a cache per chunk keeps memory bounded
    (scores are per pair, so a pair scored again scores the same)."""
    if backend is None or not isinstance(getattr(backend, "_cache", None), dict):
        return backend
    b = copy.copy(backend)
    b._cache = {}
    return b


def entities_chunk_job(truth: str, predictions: list[str], *, config: Any, similarity: Any, chunk_size: int, id_column: str = "id",
                       entities_key: str = "entities") -> Any:
    """The `ChunkJob` of `score entities --chunk-size`: the options planned from a first pass
    over the truth, then JSONL files sorted by id, merged by id."""
    from extracteval.chunked import ChunkJob
    from extracteval.tasks.entities.semantics import plan_entities
    from extracteval.tasks.entities.chunks import open_entities_stream

    stream = open_entities_stream(truth, predictions, chunk_size=chunk_size, id_column=id_column, entities_key=entities_key)
    plan = plan_entities(stream.gold_fields(), config, stream.truth)
    task = EntitiesTask(config=config, plan=plan, truth_source=stream.truth, sources=dict(stream.models), similarity=similarity)
    return ChunkJob(task=task, chunks=stream.chunks(), inputs={"truth": stream.truth, "predictions": dict(stream.models)})
