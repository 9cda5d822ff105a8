"""The `structured` task on the chunk driver.

Each chunk is counted by the task's one count (`tasks.structured.result.count_structured`) into a ledger:
per model the `StructuredCounts` (the core's own mergeable counts) and the per-field (tp, fp, fn)
counts, plus the ids the document lists (missing, extra, and the five first invalid examples in
natural id order). Ledgers add up; ratios, field winners and the ranking are computed once from
the merged counts by `structured_result`, where the in-memory score ends too.

Refused with --chunk-size (they need every record in memory): the extended similarity metrics
and --baseline/--candidate. `--output` writes records.parquet (streamed) instead of records.jsonl.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.chunked import ChunkScore

__all__ = ["StructuredTask", "structured_chunk_job"]


@dataclass(frozen=True)
class StructuredTask:
    config: Any  # StructuredConfig
    keep_records: bool = False

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.tasks.structured.semantics import StructuredCounts, record_columns
        from extracteval.tasks.structured.result import count_structured

        count = count_structured(chunk.truth, chunk.predictions, config=self.config)
        records = None
        if self.keep_records:
            res = count.result(self.config)
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
        return ChunkScore(ledger=count.ledger, records=records)

    def finalise(self, ledger: Any, *, record_rows: Callable[[], np.ndarray] | None) -> Any:
        """The result of the merged counts, by the same `structured_result` as the in-memory score."""
        from extracteval.tasks.structured.result import structured_result

        return structured_result(ledger, self.config)


def _truth_value(p: Path, line: int, rid: str, rec: dict[str, Any], key: str) -> Any:
    """As `score structured` reads a reference: a string holding JSON is parsed."""
    from extracteval.tasks.structured.alignment import reference_value

    return reference_value(rec[key], f"{p}: id {rid}")


def structured_chunk_job(truth: str, predictions: list[str], *, config: Any, chunk_size: int) -> Any:
    """The `ChunkJob` of `score structured --chunk-size`: JSONL files sorted by id, merged by id."""
    from extracteval.chunked import ChunkJob
    from extracteval.io.record_keys import STRUCTURED_TRUTH_KEYS as TRUTH_KEYS
    from extracteval.io.keyed_chunks import open_keyed_stream
    from extracteval.io.record_keys import OUTPUT_KEYS

    stream = open_keyed_stream(truth, predictions, chunk_size=chunk_size, truth_keys=TRUTH_KEYS, output_keys=OUTPUT_KEYS, truth_value=_truth_value)
    return ChunkJob(task=StructuredTask(config=config), chunks=stream.chunks(), inputs={"truth": truth, "predictions": dict(stream.models)})
