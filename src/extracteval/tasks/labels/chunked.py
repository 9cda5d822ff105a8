"""The `labels` task on the chunk driver.

Each chunk (truth records and the predicted rows aligned to them by id, `tasks.fields.chunks`) is
scored by the in-memory core (`tasks.labels.semantics.labels_ledger`) into a `LabelsLedger`: per model,
view and feature the one-vs-rest counts keyed by *canonical* label key, the label keys seen, the
truth rows missing a label, the unaligned row counts and their smallest ids. Ledgers add up;
`tasks.labels.semantics.labels_result` then resolves, once, what depends on the whole data set: the
display labels (a clash between two keys' texts keeps the type prefix), the "missing in every
ground-truth record" check, the positive labels and every warning. `score_labels` is the same
two steps over one chunk, so the document is the in-memory one exactly.

Rows with status pending/error are dropped chunk by chunk and counted for the note, as the
in-memory reader does. Predicted ids the truth does not have (strict-view errors) arrive in the
chunk open when they are met, or after the last truth id in chunks without truth rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.ledger import Ledger, by_key, merge
from extracteval.io.scale_options import check_chunk_size
from extracteval.chunked import ChunkScore

__all__ = ["LabelsChunkLedger", "LabelsTask", "labels_chunk_job"]


@dataclass(frozen=True)
class LabelsChunkLedger(Ledger):
    labels: Any  # tasks.labels.semantics.LabelsLedger
    dropped: Mapping[str, int] = merge(by_key())  # model → rows with status pending/error (not predictions)

    @property
    def n_records(self) -> int:
        return self.labels.n_records


@dataclass(frozen=True)
class LabelsTask:
    config: Any  # LabelsConfig
    features: tuple[str, ...]
    truth_source: str
    sources: Mapping[str, str]  # model → file, in the order given

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.labels.semantics import ModelLabels, labels_ledger
        from extracteval.tasks.labels.inputs import not_predictions

        chunk = chunk.materialised()
        models, dropped = [], {}
        for p in chunk.predictions:
            values, n_bad = p.values, 0
            if p.status is not None:
                bad = not_predictions(p.status, p.source)
                n_bad = int(bad.sum())
                if n_bad:
                    values = values.loc[~bad.reindex(values.index, fill_value=False)]
            dropped[p.name] = n_bad
            models.append(ModelLabels(name=p.name, values=values, source=p.source))
        ledger = labels_ledger(chunk.truth, models, config=self.config, features=self.features)
        return ChunkScore(ledger=LabelsChunkLedger(labels=ledger, dropped=dropped))

    def finalise(self, ledger: LabelsChunkLedger, *, record_rows: Callable[[], np.ndarray] | None) -> tuple[Any, list[str]]:
        """(LabelsResult, the reader's notes)."""
        from extracteval.tasks.labels.semantics import labels_result

        result = labels_result(ledger.labels, config=self.config, features=self.features, truth_source=self.truth_source, sources=self.sources)
        notes = [
            f"model {m!r}: {ledger.dropped[m]} row(s) with status pending/error are not predictions (counted as missing in the strict view)"
            for m in self.sources if ledger.dropped[m]
        ]
        return result, notes


def labels_document(result: Any, notes: list[str], inputs: dict[str, Any]) -> dict[str, Any]:
    """The result document: the reading notes before the scoring warnings, and the inputs."""
    doc = result.to_dict()
    doc["warnings"] = notes + doc["warnings"]
    doc["inputs"] = inputs
    return doc


def labels_chunk_job(truth: str, predictions: list[str], *, config: Any, features: list[str] | None, chunk_size: int,
                     id_column: str = "id", delimiter: str | None = None) -> Any:
    """The `ChunkJob` of `score labels --chunk-size`: wide files sorted by id, merged by id."""
    from extracteval.chunked import ChunkJob
    from extracteval.tasks.labels.semantics import resolve_features
    from extracteval.io.wide_tables import open_table_stream

    check_chunk_size(chunk_size)
    stream = open_table_stream(truth, predictions, chunk_size=chunk_size, id_column=id_column, delimiter=delimiter, trailing_extras=True)
    feats = resolve_features(stream.truth_fields, features, config, stream.truth_source)
    task = LabelsTask(config=config, features=tuple(feats), truth_source=stream.truth_source, sources=dict(stream.models))
    return ChunkJob(task=task, chunks=stream.chunks(), inputs={"truth": stream.truth_source, "predictions": dict(stream.models)})
