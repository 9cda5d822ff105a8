"""What `extracteval score structured` shows and writes: the terminal report, and `--output`'s
result.json and the per-record counts (records.jsonl in memory; records.parquet, streamed
while scoring, with --chunk-size/--workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.tasks.structured.pipeline import render

__all__ = ["render", "write"]


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    if scored is None:  # the chunked engine streamed records.parquet while scoring
        return ("result.json", "records.parquet")
    from extracteval.io.decision_options import write_records
    from extracteval.tasks.structured.semantics import record_columns

    matrices = {m: result.count_matrix(m)[1] for m in result.ranking}
    ids = record_columns(result.records[result.ranking[0]])["id"] if result.ranking else []
    extra = {m: [{"error": e} for e in record_columns(result.records[m])["error"]] for m in result.ranking}
    write_records(out, tuple(doc["count_columns"]), matrices, ids, extra)
    return ("result.json", "records.jsonl")
