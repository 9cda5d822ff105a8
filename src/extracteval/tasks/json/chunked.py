"""The `json` task on the chunk driver (`extracteval.chunked.run_chunks`) and the Spark engine.

Each chunk of records is counted by the task's one count (`tasks.json.semantics.count_json`:
every record's phases depend on that record only) into a `JsonLedger`; ledgers add up in chunk
order and the merged one is reduced by `json_result`, where the in-memory score ends too.

The model aggregates are *means and the median of per-record scores*, which are not counts: to be
identical to the in-memory engine bit for bit (not just close) they are computed once, with the
same numpy calls, over the per-record scores of every record. Those scores (6 floats per record and
model) are spilled to a temporary file chunk by chunk and read back at the end only, so memory is
bounded by the chunk while scoring and is 48 bytes per record and model when finalising.
Per-record rows (`records.parquet`, `buckets.parquet`) are streamed to Parquet, not held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkJob, ChunkScore, row_matrix

__all__ = ["JsonTask", "ChunkedJsonResult", "json_chunk_job"]


def _text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns as Arrow strings, so every chunk's Parquet rows have one schema (a chunk
    whose column is all None would otherwise be typed `null`)."""
    frame = frame.copy(deep=False)
    for c in frame.columns:
        if frame[c].dtype == object:
            frame[c] = frame[c].astype("string[pyarrow]")
    return frame


@dataclass(frozen=True)
class JsonTask:
    """`json` scoring for the chunk driver and the Spark engine.

    Attributes:
        config: `JsonConfig`; similarity / fuzzy: the backends (`None`: the core's defaults).
        records_mode: the `--records` option: "auto" (per-record listing in the document up to
            10,000 model × record rows), "all", "none".
        keep_records: give per-record rows (`records` and `buckets` frames) for Parquet.
    """

    config: Any
    similarity: Any = None
    fuzzy: Any = None
    records_mode: str = "auto"
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.json.counting import count_json
        from extracteval.tasks.json.config import _RECORD_LIMIT

        count = count_json(chunk.truth, chunk.predictions, config=self.config, similarity=self.similarity, fuzzy_similarity=self.fuzzy,
                           truth_source=chunk.truth_source)
        n = len(count.order)
        limit = None if self.records_mode == "all" else _RECORD_LIMIT
        want = self.records_mode == "all" or (self.records_mode == "auto" and n * max(1, len(count.models)) <= _RECORD_LIMIT)
        ledger, rows = count.ledger(records_limit=limit), count.rows()
        res = count.result(self.config, ledger=ledger, rows=rows) if want or self.keep_records else None
        listing = {name: tuple(r.to_dict() for r in res.models[name].records()) for name in count.models} if want else None
        records = None
        if self.keep_records:
            records = {"records": _text_columns(res.records_frame()), "buckets": _text_columns(res.cells_frame())}
        return ChunkScore(ledger=replace(ledger, records=listing), records=records, rows=rows)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> ChunkedJsonResult:
        return replace(finalise_json(ledger, self.config, record_rows), records_mode=self.records_mode, similarity=self.similarity)


@dataclass(frozen=True)
class ChunkedJsonResult:
    """The chunked engine's result: `to_dict()` is the in-memory `JsonResult.to_dict()`;
    `result` a `JsonResult` without per-record data (for `fields_frame()` and reports)."""

    result: Any
    records: Mapping[str, tuple[dict[str, Any], ...]] | None = field(repr=False, default=None)
    records_mode: str = "auto"  # the task's `--records`: whether the document lists the records
    similarity: Any = field(repr=False, compare=False, default=None)  # the backend the records were scored with

    @property
    def n_records(self) -> int:
        return int(self.result.n_records)

    def to_dict(self, *, include_records: bool | None = None) -> dict[str, Any]:
        from extracteval.tasks.json.config import _RECORD_LIMIT

        r = self.result
        if include_records is None:
            include_records = r.n_records * max(1, len(r.models)) <= _RECORD_LIMIT
        if include_records and self.records is None:
            raise ValueError("the per-record listing was not kept; score with records_mode='all'")
        doc = r.to_dict(include_records=False)
        doc["records_included"] = include_records
        for m, d in doc["models"].items():
            d["n_records"] = r.n_records
            if include_records:
                d["records"] = list(self.records[m])  # type: ignore[index]
        return doc

    def fields_frame(self) -> pd.DataFrame:
        return self.result.fields_frame()


def finalise_json(ledger: Any, cfg: Any, record_rows: Callable[[], np.ndarray] | None) -> ChunkedJsonResult:
    """The merged ledger's result (`json_result`, as the in-memory score ends), with the
    per-record listing the ledger kept."""
    from extracteval.tasks.json.result import json_result

    rows = row_matrix(record_rows()) if record_rows is not None else np.zeros((0, 6 * len(ledger.models)))
    return ChunkedJsonResult(result=json_result(ledger, cfg, rows), records=ledger.records)


def scaled_document(result: Any, inputs: dict[str, Any], records_mode: str, backend: Any) -> dict[str, Any]:
    """The document of the chunked and Spark engines (per-record entries as `--records` asks)."""
    from extracteval.tasks.json.options import with_judge

    doc = result.to_dict(include_records={"auto": None, "all": True, "none": False}[records_mode])
    doc["inputs"] = inputs
    return with_judge(doc, backend)


def json_chunk_job(
    truth: str | None, predictions: list[str], *, config: Any, similarity: Any, chunk_size: int, workers: int = 1, id_key: str = "id",
    records_mode: str = "auto", keep_records: bool = False,
) -> ChunkJob:
    """The `ChunkJob` of `score json --chunk-size`: JSONL files sorted by id, merged by id. Its
    `inputs` name the truth's source once the chunks are read (without `--truth`, the first
    pairs file holding a truth)."""
    import pickle

    from extracteval.errors import InputError
    from extracteval.tasks.json.chunks import open_json_stream

    stream = open_json_stream(truth, predictions, chunk_size=chunk_size, id_key=id_key, safety_key=config.safety_key, metadata=config.metadata)
    task = JsonTask(config=config, similarity=similarity, records_mode=records_mode, keep_records=keep_records)
    if workers > 1:
        try:
            pickle.dumps(task)
        except Exception:  # a backend holding a model or a client cannot travel to a worker
            raise InputError(
                f"--workers: the similarity backend {getattr(similarity, 'name', similarity)!r} cannot be copied to worker "
                "processes; use --workers 1 (chunks are still streamed) or the lexical / fuzzy backend."
            ) from None
    inputs: dict[str, Any] = {"truth": "" if truth is None else str(truth), "predictions": dict(stream.models)}

    def chunks() -> Iterator[Any]:
        yield from stream.chunks()
        inputs["truth"] = stream.truth_source

    return ChunkJob(task=task, chunks=chunks(), inputs=inputs)
