"""The `toolcalls` task on the chunk driver (generic and BFCL checkers) and the Spark engine (generic).

Each chunk is counted by the task's one count (`tasks.toolcalls.semantics.count_toolcalls`: a record's
calls are paired and counted on their own) into a `ToolCallsLedger`: per model the `ToolCallCounts` (the
core's own mergeable counts: every metric is a ratio of them), the output formats, and the ids
the document lists (failed, missing, extra — the document lists all of them — and the five first
invalid examples in natural id order). Ledgers add up; the metrics and the ranking are computed
once from the merged counts by `toolcalls_result`, where the in-memory score ends too.

`ToolCallsEvaluateTask` (what `evaluate toolcalls --chunk-size/--engine spark` runs) adds what
the MLflow run logs beyond the document: per model the counts per function name (every name apart,
pooled into "(other functions)" once the reference's names are all known) and each chunk's
per-record rows as `records.parquet` holds them (`record_table`).

Not streamed (refused with --chunk-size): the extended similarity metrics
(their means are over per-record scores) and --baseline/--candidate (the paired bootstrap needs
every record's counts in memory). `--output` writes records.parquet (per-record counts, streamed)
instead of records.jsonl.

The BFCL checker (`BfclTask`): its files are read whole by the in-memory readers (the same
warnings, in the same order), then the entries, in natural id order, are checked N at a time —
in worker processes with --workers — into `BfclModelScore`s (mergeable: counts per category,
failures by id) and the generic checker's counts; the document is built once from the merged
scores by the in-memory engine's own function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.core.ledger import Ledger, by_key, merge

__all__ = ["ToolCallsTask", "ToolCallsEvaluateTask", "ToolCallsEvaluation", "record_table", "toolcalls_chunk_job",
           "BfclLedger", "BfclTask", "score_bfcl_chunked"]

@dataclass(frozen=True)
class ToolCallsTask:
    """Attributes: config (`ToolCallConfig`), possible_answer (read the truth as BFCL possible
    answers), keep_records (per-record counts for Parquet)."""

    config: Any
    possible_answer: bool = False
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.toolcalls.semantics import ToolCallCounts
        from extracteval.tasks.toolcalls.result import count_toolcalls

        count = count_toolcalls(chunk.truth, chunk.predictions, possible_answer=self.possible_answer, config=self.config)
        records = None
        if self.keep_records:
            cols = [f.name for f in fields(ToolCallCounts)]
            rows = [
                {"model": m, "id": rec.id, **{c: int(getattr(rec.counts, c)) for c in cols}, "correct": bool(rec.correct),
                 "format": rec.format, "error": rec.error}
                for m in sorted(count.records) for rec in count.records[m]
            ]
            records = pd.DataFrame(rows, columns=["model", "id", *cols, "correct", "format", "error"])
            for c in ("model", "id", "format", "error"):
                records[c] = records[c].astype("string[pyarrow]")
        return ChunkScore(ledger=count.ledger, records=records)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.tasks.toolcalls.result import toolcalls_result

        return toolcalls_result(ledger, self.config)


def record_table(model: str, records: Any, verdicts: Mapping[str, list[Any]] | None = None) -> pd.DataFrame:
    """One row per record of a model (`ToolCallRecord`s): the generic checker's verdict
    (`correct`, `error`; or the given `verdicts` columns), `valid`, the call `format` found and
    the counts from `ref_calls` on, as `records.parquet` holds them."""
    from extracteval.tasks.toolcalls.semantics import ToolCallCounts

    data: dict[str, Any] = {"model": [model] * len(records), "record_id": [r.id for r in records]}
    data |= {"correct": [r.correct for r in records], "error": [r.error for r in records]} if verdicts is None else dict(verdicts)
    data["valid"] = [r.valid for r in records]
    data["format"] = [r.format for r in records]
    for k in [f.name for f in fields(ToolCallCounts)][3:]:
        data[k] = np.array([getattr(r.counts, k) for r in records], dtype=np.int64)
    frame = pd.DataFrame(data)
    # text typed as text even when every value is empty: one file schema whatever rows a chunk holds
    return frame.astype({c: "string[pyarrow]" for c in ("category", "error_type", "error", "generic_error", "format") if c in frame})


@dataclass(frozen=True)
class ToolCallsEvaluation:
    """What `ToolCallsEvaluateTask` gives: the run's result and, per model, the counts per
    function name (`tasks.toolcalls.functions.function_counts`)."""

    result: Any  # ToolCallResult
    functions: Mapping[str, Mapping[str, Mapping[str, int]]]
    possible_answer: bool  # the references were read as BFCL possible answers


@dataclass(frozen=True)
class ToolCallsEvaluateTask(ToolCallsTask):
    """`ToolCallsTask` plus the counts per function name in the ledger and the chunk's
    per-record rows (`record_table`, every model) as its records."""

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.io.id_order import natural_key
        from extracteval.tasks.toolcalls.functions import named_function_counts
        from extracteval.tasks.toolcalls.result import _read_references, count_toolcalls

        count = count_toolcalls(chunk.truth, chunk.predictions, possible_answer=self.possible_answer, config=self.config)
        key_fn = self.config.key_fn()
        refs = _read_references(chunk.truth, sorted(chunk.truth, key=natural_key), self.possible_answer, key_fn)
        models = {m: replace(ml, functions=named_function_counts(refs, chunk.predictions.get(m, {}), count.records[m], key_fn=key_fn))
                  for m, ml in count.ledger.models.items()}
        names = frozenset(c.name for calls in refs.values() for c in calls)
        frames = [record_table(m, count.records[m]) for m in sorted(count.records)]
        return ChunkScore(ledger=replace(count.ledger, models=models, function_names=names),
                          records=pd.concat(frames, ignore_index=True) if frames else None)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> ToolCallsEvaluation:
        from extracteval.tasks.toolcalls.functions import pool_functions

        result = super().finalise(ledger, record_rows=record_rows)
        return ToolCallsEvaluation(result=result, functions={m: pool_functions(ml.functions, ledger.function_names) for m, ml in ledger.models.items()},
                                   possible_answer=self.possible_answer)


class _Truth:
    """The generic checker's reference of one truth record, as `score toolcalls` reads it; the
    first record decides whether the file holds BFCL possible answers."""

    def __init__(self, keys: tuple[str, ...], possible: bool) -> None:
        self.keys, self.possible, self.decided = keys, possible, possible

    def __call__(self, p: Path, line: int, rid: str, rec: dict[str, Any], key: str) -> Any:
        is_possible = key in ("ground_truth", "possible_answer")
        if not self.decided:
            self.possible, self.decided = is_possible, True
        elif is_possible and not self.possible:
            from extracteval.errors import InputError

            raise InputError(
                f"{p}: line {line} (id {rid}): a `{key}` (BFCL possible answer) after records with plain calls; with --chunk-size "
                "the first record decides the layout: pass --possible-answer to read every record as possible answers."
            )
        return rec[key]


def toolcalls_chunk_job(truth: str, predictions: list[str], *, config: Any, possible_answer: bool, chunk_size: int) -> Any:
    """The `ChunkJob` of `score toolcalls --chunk-size` (generic checker): JSONL files sorted by
    id, merged by id; the first truth record decides whether they hold BFCL possible answers."""
    from extracteval.chunked import ChunkJob
    from extracteval.io.keyed_chunks import iter_keyed, open_keyed_stream
    from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.tasks.toolcalls.inputs import OUTPUT_KEYS

    reader = _Truth(TRUTH_KEYS, possible_answer)
    stream = open_keyed_stream(truth, predictions, chunk_size=chunk_size, truth_keys=TRUTH_KEYS, output_keys=OUTPUT_KEYS, truth_value=reader)
    if not possible_answer:
        # the layout is the first truth record's: peek at it before any chunk is scored
        first = next(iter_keyed(truth, TRUTH_KEYS, "reference"))
        reader = _Truth(TRUTH_KEYS, first[3] in ("ground_truth", "possible_answer"))
        stream.truth_value = reader
    return ChunkJob(task=ToolCallsTask(config=config, possible_answer=reader.possible), chunks=stream.chunks(),
                    inputs={"truth": truth, "predictions": dict(stream.models)})


# ---------------------------------------------------------------------------------------------
# the BFCL checker


@dataclass(frozen=True)
class BfclChunk:
    """Entries of one chunk and each model's results for their ids."""

    entries: tuple[Any, ...]  # tasks.toolcalls.bfcl.BfclEntry
    results: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class BfclLedger(Ledger):
    """Per model: BFCL's verdicts (`BfclModelScore`, mergeable) and the generic checker's counts."""

    scores: Mapping[str, Any] = merge(by_key())
    generic: Mapping[str, Any] = merge(by_key())  # ToolCallCounts
    n_records: int


@dataclass(frozen=True)
class BfclTask:
    """The BFCL checker on the chunk driver: every entry is checked on its own, so a chunk's
    verdicts are the whole run's for those entries. `mangled`: the models scored with `.` → `_`."""

    mangled: frozenset[str]
    models: tuple[str, ...]

    def score_chunk(self, chunk: BfclChunk) -> ChunkScore:
        from extracteval.tasks.toolcalls.bfcl import generic_answers, score_bfcl
        from extracteval.tasks.toolcalls.semantics import score_toolcalls

        entries = list(chunk.entries)
        scores = {m: score_bfcl(entries, chunk.results[m], model=m, underscore_to_dot=m in self.mangled) for m in self.models}
        generic = score_toolcalls({e.id: generic_answers(e) for e in entries}, chunk.results, possible_answer=True)
        return ChunkScore(ledger=BfclLedger(scores=scores, generic={m: generic.models[m].counts for m in self.models}, n_records=len(entries)))

    def finalise(self, ledger: BfclLedger, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.tasks.toolcalls.semantics import ToolCallConfig

        zd = ToolCallConfig().zero_division
        return dict(ledger.scores), {m: c.metrics(zero_division=zd) for m, c in ledger.generic.items()}


def score_bfcl_chunked(
    entries: list[Any], results: Mapping[str, Mapping[str, Any]], *, mangled: set[str], chunk_size: int, workers: int = 1,
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """`score toolcalls --checker bfcl --chunk-size N [--workers W]`: the entries (in natural id
    order) scored N at a time → (per model `BfclModelScore`, per model generic metrics), what the
    in-memory checker gives."""
    from extracteval.chunked import run_chunks
    from extracteval.errors import InputError

    if chunk_size < 1:
        raise InputError(f"Expected --chunk-size to be a positive number of records, but got {chunk_size}.")
    models = tuple(sorted(results))

    def chunks() -> Any:
        for a in range(0, len(entries), chunk_size):
            part = tuple(entries[a : a + chunk_size])
            yield BfclChunk(entries=part, results={m: {e.id: results[m][e.id] for e in part if e.id in results[m]} for m in models})

    (scores, generic), _ = run_chunks(BfclTask(mangled=frozenset(mangled), models=models), chunks(), workers=workers)
    return scores, generic
