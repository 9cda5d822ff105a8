"""The `structured` task on the chunk driver.

Each chunk is scored by the in-memory core (`tasks.structured.semantics.score_structured`) into a ledger:
per model the `StructuredCounts` (the core's own mergeable counts) and the per-field (tp, fp, fn)
counts, plus the ids the document lists (missing, extra, and the five first invalid examples in
natural id order). Ledgers add up; ratios, field winners and the ranking are computed once from
the merged counts, with the core's own functions, so the document is the in-memory one exactly.

Refused with --chunk-size (they need every record in memory): the extended similarity metrics
and --baseline/--candidate. `--output` writes records.parquet (streamed) instead of records.jsonl.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.tasks.toolcalls.chunked import _EXAMPLES, _natural

__all__ = ["StructuredLedger", "StructuredTask", "score_structured_files", "structured_chunk_job"]


@dataclass(frozen=True)
class _ModelLedger:
    counts: Any  # StructuredCounts
    fields: Mapping[str, tuple[int, int, int]]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    invalid_examples: tuple[dict[str, Any], ...]

    def __add__(self, o: _ModelLedger) -> _ModelLedger:
        from extracteval.io.id_order import natural_key

        f = dict(self.fields)
        for g, (tp, fp, fn) in o.fields.items():
            a = f.get(g, (0, 0, 0))
            f[g] = (a[0] + tp, a[1] + fp, a[2] + fn)
        return _ModelLedger(
            counts=self.counts + o.counts, fields=f, missing=self.missing + o.missing, extra=self.extra + o.extra,
            invalid_examples=tuple(sorted(self.invalid_examples + o.invalid_examples, key=lambda e: (natural_key(e["id"]), e["id"]))[:_EXAMPLES]),
        )


@dataclass(frozen=True)
class StructuredLedger:
    n_records: int
    models: Mapping[str, _ModelLedger]

    def __add__(self, o: StructuredLedger) -> StructuredLedger:
        return StructuredLedger(n_records=self.n_records + o.n_records, models={m: self.models[m] + o.models[m] for m in self.models})


@dataclass(frozen=True)
class StructuredTask:
    config: Any  # StructuredConfig
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.structured.semantics import StructuredCounts, record_columns, score_structured

        res = score_structured(chunk.truth, chunk.predictions, config=self.config)
        models = {
            m: _ModelLedger(
                counts=r.counts, fields={g: (v["tp"], v["fp"], v["fn"]) for g, v in r.fields.items()},
                missing=r.missing_ids, extra=r.extra_ids, invalid_examples=tuple(r.invalid_examples),
            )
            for m, r in res.models.items()
        }
        records = None
        if self.keep_records:
            cols = [f.name for f in fields(StructuredCounts)]
            rows = []
            for m in sorted(res.records):
                _, mat = res.count_matrix(m)
                got = record_columns(res.records[m])
                for rid, error, counts in zip(got["id"], got["error"], mat):
                    rows.append({"model": m, "id": rid, **dict(zip(cols, map(int, counts))), "error": error})
            records = pd.DataFrame(rows, columns=["model", "id", *cols, "error"])
            for c in ("model", "id", "error"):
                records[c] = records[c].astype("string[pyarrow]")
        return ChunkScore(ledger=StructuredLedger(n_records=res.n_records, models=models), records=records)

    def finalise(self, ledger: StructuredLedger, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        """The result of the merged counts, by the same `ranked_result` as the in-memory score."""
        from extracteval.tasks.structured.semantics import StructuredModelResult, field_rows, ranked_result

        zd = self.config.zero_division
        results = {
            m: StructuredModelResult(
                model=m, counts=ml.counts, metrics=ml.counts.metrics(zero_division=zd), fields=field_rows(ml.fields, zd),
                missing_ids=_natural(ml.missing), extra_ids=_natural(ml.extra), invalid_examples=ml.invalid_examples, extended={},
            )
            for m, ml in ledger.models.items()
        }
        return ranked_result(results, config=self.config, n_records=ledger.n_records, records={})


def _truth_value(p: Path, line: int, rid: str, rec: dict[str, Any], key: str) -> Any:
    """As `score structured` reads a reference: a string holding JSON is parsed."""
    from extracteval.tasks.structured.semantics import reference_value

    return reference_value(rec[key], f"{p}: id {rid}")


def score_structured_files(
    truth: str, predictions: list[str], *, config: Any, chunk_size: int, workers: int = 1, output: str | None = None,
) -> tuple[Any, dict[str, Any]]:
    from extracteval.chunked import run_chunk_job

    return run_chunk_job(structured_chunk_job(truth, predictions, config=config, chunk_size=chunk_size), workers=workers, output=output)


def structured_chunk_job(truth: str, predictions: list[str], *, config: Any, chunk_size: int) -> Any:
    """The `ChunkJob` of `score structured --chunk-size`: JSONL files sorted by id, merged by id."""
    from extracteval.chunked import ChunkJob
    from extracteval.io.record_keys import STRUCTURED_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.io.keyed_chunks import open_keyed_stream
    from extracteval.io.record_keys import OUTPUT_KEYS

    stream = open_keyed_stream(truth, predictions, chunk_size=chunk_size, truth_keys=TRUTH_KEYS, output_keys=OUTPUT_KEYS, truth_value=_truth_value)
    return ChunkJob(task=StructuredTask(config=config), chunks=stream.chunks(), inputs={"truth": truth, "predictions": dict(stream.models)})
