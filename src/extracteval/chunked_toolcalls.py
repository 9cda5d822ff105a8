"""The `toolcalls` task (generic checker) on the chunk driver and the Spark engine.

Each chunk is scored by the in-memory core (`core.toolcalls.score_toolcalls`: a record's calls are
paired and counted on their own) into a `ToolCallsLedger`: per model the `ToolCallCounts` (the
core's own mergeable counts: every metric is a ratio of them), the output formats, and the ids
the document lists (failed, missing, extra — the document lists all of them — and the five first
invalid examples in natural id order). Ledgers add up; the metrics and the ranking are computed
once from the merged counts, so they are the in-memory numbers exactly.

Not streamed (refused with --chunk-size): the BFCL checker, the extended similarity metrics
(their means are over per-record scores) and --baseline/--candidate (the paired bootstrap needs
every record's counts in memory). `--output` writes records.parquet (per-record counts, streamed)
instead of records.jsonl.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.core.ranking import rank_by_metrics

__all__ = ["ToolCallsLedger", "ToolCallsTask", "score_toolcalls_files"]

_EXAMPLES = 5


def _natural(ids: tuple[str, ...]) -> tuple[str, ...]:
    from extracteval.core.structured import natural_key

    # ties of the natural key (r01, r1) in byte order: the order the in-memory engine gives for
    # the sorted files the chunked engine reads, and one order whatever Spark's partitions are
    return tuple(sorted(ids, key=lambda i: (natural_key(i), i)))


@dataclass(frozen=True)
class _ModelLedger:
    counts: Any  # ToolCallCounts
    formats: Mapping[str, int]
    failed: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    invalid_examples: tuple[dict[str, Any], ...]  # the first few in natural id order

    def __add__(self, o: _ModelLedger) -> _ModelLedger:
        from extracteval.core.structured import natural_key

        formats = dict(self.formats)
        for k, v in o.formats.items():
            formats[k] = formats.get(k, 0) + v
        examples = sorted(self.invalid_examples + o.invalid_examples, key=lambda e: (natural_key(e["id"]), e["id"]))[:_EXAMPLES]
        return _ModelLedger(
            counts=self.counts + o.counts,
            formats=formats,
            failed=self.failed + o.failed,
            missing=self.missing + o.missing,
            extra=self.extra + o.extra,
            invalid_examples=tuple(examples),
        )


@dataclass(frozen=True)
class ToolCallsLedger:
    n_records: int
    models: Mapping[str, _ModelLedger]

    def __add__(self, o: ToolCallsLedger) -> ToolCallsLedger:
        return ToolCallsLedger(n_records=self.n_records + o.n_records, models={m: self.models[m] + o.models[m] for m in self.models})


@dataclass(frozen=True)
class ToolCallsTask:
    """Attributes: config (`ToolCallConfig`), possible_answer (read the truth as BFCL possible
    answers), keep_records (per-record counts for Parquet)."""

    config: Any
    possible_answer: bool = False
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.core.toolcalls import ToolCallCounts, score_toolcalls

        res = score_toolcalls(chunk.truth, chunk.predictions, possible_answer=self.possible_answer, config=self.config)
        models = {}
        for m, r in res.models.items():
            models[m] = _ModelLedger(
                counts=r.counts, formats=dict(r.formats), failed=r.failed_ids, missing=r.missing_ids, extra=r.extra_ids,
                invalid_examples=tuple(r.invalid_examples),
            )
        records = None
        if self.keep_records:
            cols = [f.name for f in fields(ToolCallCounts)]
            rows = [
                {"model": m, "id": rec.id, **{c: int(getattr(rec.counts, c)) for c in cols}, "correct": bool(rec.correct),
                 "format": rec.format, "error": rec.error}
                for m in sorted(res.records) for rec in res.records[m]
            ]
            records = pd.DataFrame(rows, columns=["model", "id", *cols, "correct", "format", "error"])
            for c in ("model", "id", "format", "error"):
                records[c] = records[c].astype("string[pyarrow]")
        return ChunkScore(ledger=ToolCallsLedger(n_records=res.n_records, models=models), records=records)

    def finalise(self, ledger: ToolCallsLedger, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        from extracteval.core.toolcalls import ToolCallModelResult, ToolCallResult

        results = {}
        for m in sorted(ledger.models):
            ml = ledger.models[m]
            results[m] = ToolCallModelResult(
                model=m,
                counts=ml.counts,
                metrics=ml.counts.metrics(zero_division=self.config.zero_division),
                missing_ids=_natural(ml.missing),
                extra_ids=_natural(ml.extra),
                failed_ids=_natural(ml.failed),
                formats=dict(sorted(ml.formats.items())),
                invalid_examples=ml.invalid_examples,
                extended={},
            )
        order = [r.model for r in rank_by_metrics("toolcalls", {m: {f"toolcalls/{k}": float(v) for k, v in results[m].metrics.items()} for m in results})]
        for rank, m in enumerate(order, start=1):
            results[m] = replace(results[m], rank=rank)
        return ToolCallResult(task="toolcalls", config=self.config, n_records=ledger.n_records, ranking=tuple(order), models=results, records={})


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


def score_toolcalls_files(
    truth: str, predictions: list[str], *, config: Any, possible_answer: bool, chunk_size: int, workers: int = 1, output: str | None = None,
) -> tuple[Any, dict[str, Any]]:
    """`extracteval score toolcalls --chunk-size N [--workers W]` (generic checker): the result
    (`ToolCallResult` without per-record rows) and the `inputs` entry of the document."""
    from extracteval.chunked import run_chunks
    from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.io.keyed_chunks import open_keyed_stream
    from extracteval.io.outputs import make_output_folder
    from extracteval.io.toolcall_inputs import OUTPUT_KEYS

    reader = _Truth(TRUTH_KEYS, possible_answer)
    stream = open_keyed_stream(truth, predictions, chunk_size=chunk_size, truth_keys=TRUTH_KEYS, output_keys=OUTPUT_KEYS, truth_value=reader)
    if not possible_answer:
        # the layout is the first truth record's: peek at it before any chunk is scored
        from extracteval.io.keyed_chunks import iter_keyed

        first = next(iter_keyed(truth, TRUTH_KEYS, "reference"))
        reader = _Truth(TRUTH_KEYS, first[3] in ("ground_truth", "possible_answer"))
        stream.truth_value = reader
    records_path = None
    if output:
        out = make_output_folder(output)
        records_path = out / "records.parquet"
    task = ToolCallsTask(config=config, possible_answer=reader.possible, keep_records=records_path is not None)
    result, _ = run_chunks(task, stream.chunks(), workers=workers, records_path=records_path)
    return result, {"truth": truth, "predictions": dict(stream.models)}
