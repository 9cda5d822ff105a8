"""What `extracteval score toolcalls` shows and writes: the terminal report, and `--output`'s
result.json and the per-record counts (records.jsonl in memory; records.parquet, streamed while
scoring, with --chunk-size/--workers and the generic checker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.tasks.toolcalls.pipeline import render

__all__ = ["render", "write"]


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    if scored is None:  # the chunked engine streamed records.parquet while scoring
        return ("result.json", "records.parquet")
    from extracteval.io.decision_options import write_records

    records = scored.cache["score_records"]
    write_records(out, tuple(records["columns"]), records["matrices"], records["ids"], records["extra"])
    return ("result.json", "records.jsonl")
