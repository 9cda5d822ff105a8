"""The `json` task on the chunk driver (`extracteval.chunked.run_chunks`) and the Spark engine.

Each chunk of records is scored by the in-memory core (`tasks.json.semantics.score_json`: every
record's phases depend on that record only) into a `JsonLedger` of counts: per model and field the
bucket / scored / matched / strategy counts, per model the bucket totals, and the ids named by
the warnings (the first five of each kind). Ledgers add up in chunk order.

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

__all__ = ["JsonLedger", "JsonTask", "ChunkedJsonResult", "score_json_files", "json_chunk_job"]

_KEEP_IDS = 5  # ids a warning names
_PER_RECORD = ("rqs", "completeness", "hallucination", "accuracy", "safety")


@dataclass(frozen=True)
class _ModelLedger:
    source: str
    fields: Mapping[str, Any]  # field → FieldAccuracy (mergeable by +)
    buckets: Mapping[str, int]
    scored: int
    matched: int
    similarity_failures: int
    safety_given: int
    missing: tuple[int, tuple[str, ...]]  # count, first ids
    invalid: tuple[int, tuple[tuple[str, str], ...]]  # count, first (id, type)
    excluded: tuple[int, tuple[str, ...]]

    def __add__(self, o: _ModelLedger) -> _ModelLedger:
        from extracteval.tasks.json.semantics import _add_counts

        fields = dict(self.fields)
        for f, c in o.fields.items():
            fields[f] = fields[f] + c if f in fields else c

        def cat(a: tuple[int, tuple[Any, ...]], b: tuple[int, tuple[Any, ...]]) -> tuple[int, tuple[Any, ...]]:
            return a[0] + b[0], (a[1] + b[1])[:_KEEP_IDS]

        return _ModelLedger(
            source=self.source,
            fields=fields,
            buckets=_add_counts(self.buckets, o.buckets),
            scored=self.scored + o.scored,
            matched=self.matched + o.matched,
            similarity_failures=self.similarity_failures + o.similarity_failures,
            safety_given=self.safety_given + o.safety_given,
            missing=cat(self.missing, o.missing),
            invalid=cat(self.invalid, o.invalid),
            excluded=cat(self.excluded, o.excluded),
        )


@dataclass(frozen=True)
class JsonLedger:
    """Counts of the records of some chunks (see the module doc). `records` holds the `--json`
    per-record listing while it is wanted and small (None once it is not)."""

    n_records: int
    fields: frozenset[str]
    models: Mapping[str, _ModelLedger]
    unused_strategies: frozenset[str]
    config: Mapping[str, Any]
    records: Mapping[str, tuple[dict[str, Any], ...]] | None
    records_limit: int | None  # None: keep every record (--records all)

    def __add__(self, o: JsonLedger) -> JsonLedger:
        records = None
        if self.records is not None and o.records is not None:
            n = self.n_records + o.n_records
            if self.records_limit is None or n * max(1, len(self.models)) <= self.records_limit:
                records = {m: self.records[m] + o.records[m] for m in self.records}
        return JsonLedger(
            n_records=self.n_records + o.n_records,
            fields=self.fields | o.fields,
            models={m: self.models[m] + o.models[m] for m in self.models},
            unused_strategies=self.unused_strategies & o.unused_strategies,
            config=self.config,
            records=records,
            records_limit=self.records_limit,
        )


def _sorted_fields(names: frozenset[str], flatten: bool) -> tuple[str, ...]:
    """The in-memory order: paths by numpy string order; flattened patterns by pandas' sort."""
    if not names:
        return ()
    arr = np.asarray(sorted(names), dtype=object)
    if flatten:
        return tuple(str(x) for x in pd.factorize(arr, sort=True)[1])
    return tuple(str(x) for x in arr[np.argsort(arr.astype(str), kind="stable")])


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
        from extracteval.tasks.json.semantics import _RECORD_LIMIT, score_json

        res = score_json(
            chunk.truth, chunk.predictions, config=self.config, similarity=self.similarity, fuzzy_similarity=self.fuzzy,
            truth_source=chunk.truth_source,
        )
        names = sorted(res.models)
        n = res.n_records
        limit = None if self.records_mode == "all" else _RECORD_LIMIT
        want = self.records_mode == "all" or (self.records_mode == "auto" and n * max(1, len(names)) <= _RECORD_LIMIT)
        models = {}
        rows = np.empty((n, 6 * len(names)), dtype=np.float64)
        for j, name in enumerate(names):
            m = res.models[name]
            flags = m._flags
            ids = m._record_ids
            missing = [r for r, f in flags.items() if "missing_prediction" in f]
            invalid = [(r, f[0].split(":", 1)[1]) for r, f in flags.items() if f[0].startswith("invalid_prediction")]
            excluded = [r for r in ids if any(x.startswith("excluded:") for x in flags.get(r, ()))]
            models[name] = _ModelLedger(
                source=m.source,
                fields=dict(m.fields),
                buckets=dict(m.buckets),
                scored=m.scored,
                matched=m.matched,
                similarity_failures=m.similarity_failures,
                safety_given=m.safety_scores_given,
                missing=(len(missing), tuple(missing[:_KEEP_IDS])),
                invalid=(len(invalid), tuple(invalid[:_KEEP_IDS])),
                excluded=(len(excluded), tuple(excluded[:_KEEP_IDS])),
            )
            pr = m._per_record
            for k, key in enumerate(_PER_RECORD):
                rows[:, 6 * j + k] = pr[key]
            excl = set(excluded)
            rows[:, 6 * j + 5] = [0.0 if r in excl else 1.0 for r in ids]
        ledger = JsonLedger(
            n_records=n,
            fields=frozenset(res.fields),
            models=models,
            unused_strategies=frozenset(res.unused_strategies),
            config=res.config,
            records={name: tuple(r.to_dict() for r in res.models[name].records()) for name in names} if want else None,
            records_limit=limit,
        )
        records = None
        if self.keep_records:
            records = {"records": _text_columns(res.records_frame()), "buckets": _text_columns(res.cells_frame())}
        return ChunkScore(ledger=ledger, records=records, rows=rows)

    def finalise(self, ledger: JsonLedger, *, record_rows: Callable[[], np.ndarray] | None) -> ChunkedJsonResult:
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
        from extracteval.tasks.json.semantics import _RECORD_LIMIT

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


def finalise_json(ledger: JsonLedger, cfg: Any, record_rows: Callable[[], np.ndarray] | None) -> ChunkedJsonResult:
    """Ratios, ranking and warnings from the merged ledger, as `score_json` computes them."""
    from extracteval.tasks.json.semantics import _STRATEGIES, TIER_COLOURS, FieldAccuracy, JsonResult, ModelJsonResult, rank_models, rqs_summary

    names = sorted(ledger.models)
    n = ledger.n_records
    rows = row_matrix(record_rows()) if record_rows is not None else np.zeros((0, 6 * len(names)))
    if rows.shape[0] != n:
        raise RuntimeError(f"expected {n} per-record rows, read {rows.shape[0]}")
    warnings: list[str] = []

    def shown(ids: tuple[Any, ...], count: int, fmt: Callable[[Any], str] = repr) -> str:
        return ", ".join(fmt(x) for x in ids) + (" …" if count > _KEEP_IDS else "")

    for name in names:
        m = ledger.models[name]
        if m.missing[0]:
            warnings.append(
                f"model {name!r}: {m.missing[0]} ground-truth record(s) have no prediction and count as empty predictions: "
                + shown(m.missing[1], m.missing[0])
            )
        if m.invalid[0]:
            warnings.append(
                f"model {name!r}: {m.invalid[0]} prediction(s) are not JSON objects and count as empty predictions: "
                + shown(m.invalid[1], m.invalid[0], lambda x: f"{x[0]!r} ({x[1]})")
            )
        if m.excluded[0]:
            warnings.append(
                f"model {name!r}: {m.excluded[0]} record(s) are pending or failed (status) and are left out of its aggregates: "
                + shown(m.excluded[1], m.excluded[0])
            )
    if ledger.unused_strategies:
        warnings.append(f"strategies given for fields that appear in no record: {sorted(ledger.unused_strategies)}")
    for name in names:
        f = ledger.models[name].similarity_failures
        if f:
            warnings.append(
                f"model {name!r}: the similarity backend failed on {f} value(s); they count as not matched "
                "(see similarity_failures per field)."
            )

    field_names = _sorted_fields(ledger.fields, cfg.flatten)
    order = {s.value: i for i, s in enumerate(_STRATEGIES)}
    per: dict[str, dict[str, np.ndarray]] = {}
    keep: dict[str, np.ndarray] = {}
    fields: dict[str, dict[str, FieldAccuracy]] = {}
    for j, name in enumerate(names):
        per[name] = {k: rows[:, 6 * j + i] for i, k in enumerate(_PER_RECORD)}
        keep[name] = rows[:, 6 * j + 5] == 1.0
        mf = ledger.models[name].fields
        fields[name] = {f: replace(mf[f], strategies=dict(sorted(mf[f].strategies.items(), key=lambda kv: order[kv[0]])))
                        for f in field_names if f in mf}

    # the same calls as `score_json` on the same contiguous arrays: the same floats
    means = {
        m: {k: float(np.mean(np.ascontiguousarray(per[m][k])[keep[m]])) if keep[m].any() else 0.0 for k in _PER_RECORD}
        for m in names
    }
    ranked, _ = rank_models(means, cfg)
    models = {}
    for r, tier_name in ranked:
        ml = ledger.models[r.model]
        models[r.model] = ModelJsonResult(
            name=r.model,
            rank=r.rank,
            tier=tier_name,
            tier_colour=TIER_COLOURS[tier_name],
            rqs=rqs_summary(np.ascontiguousarray(per[r.model]["rqs"])[keep[r.model]]),
            completeness=means[r.model]["completeness"],
            hallucination=means[r.model]["hallucination"],
            accuracy=means[r.model]["accuracy"],
            safety=means[r.model]["safety"],
            buckets=dict(ml.buckets),
            scored=ml.scored,
            matched=ml.matched,
            ignored=sum(f.ignored for f in fields[r.model].values()),
            similarity_failures=ml.similarity_failures,
            missing_records=ml.missing[0],
            invalid_predictions=ml.invalid[0],
            excluded_records=ml.excluded[0],
            safety_scores_given=ml.safety_given,
            fields=fields[r.model],
            source=ml.source,
        )
    result = JsonResult(
        task="json",
        models=models,
        ranking=tuple(r.model for r, _ in ranked),
        n_records=n,
        fields=field_names,
        warnings=tuple(warnings),
        config=dict(ledger.config),
        unused_strategies=tuple(sorted(ledger.unused_strategies)),
    )
    return ChunkedJsonResult(result=result, records=ledger.records)


def score_json_files(
    truth: str | None,
    predictions: list[str],
    *,
    config: Any,
    similarity: Any,
    chunk_size: int,
    workers: int = 1,
    id_key: str = "id",
    records_mode: str = "auto",
    output: str | None = None,
) -> tuple[ChunkedJsonResult, dict[str, Any]]:
    """`extracteval score json --chunk-size N [--workers W]`: JSONL files streamed by id, chunks
    scored (in `workers` processes), per-record rows streamed to `output`/records.parquet and
    buckets.parquet. Returns the result and the `inputs` entry of the document."""
    from extracteval.chunked import run_chunks
    from extracteval.io.outputs import make_output_folder

    job = json_chunk_job(truth, predictions, config=config, similarity=similarity, chunk_size=chunk_size, workers=workers, id_key=id_key,
                         records_mode=records_mode)
    task = job.task
    paths = None
    if output:
        out = make_output_folder(output)
        paths = {"records": out / "records.parquet", "buckets": out / "buckets.parquet"}
        task = replace(task, keep_records=True)
    result, _ = run_chunks(task, job.chunks, workers=workers, records_path=paths)
    return result, job.inputs


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

    stream = open_json_stream(truth, predictions, chunk_size=chunk_size, id_key=id_key, safety_key=config.safety_key)
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
