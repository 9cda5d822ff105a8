"""What `extracteval score json` shows and writes: the terminal report, and `--output`'s
result.json, field_accuracy.csv, records.parquet (per-record scores) and buckets.parquet (the
per-record bucket listing: one row per model, record and key)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.report.console import json_default


def render(doc: dict[str, Any]) -> str:
    from extracteval.tasks.json.terminal import render_json

    return render_json(doc, use_colour=sys.stdout.isatty())


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    """The files, into an existing (staging) folder; the per-record files are left to the
    chunked engine (`scored` None), which streamed them there while scoring."""
    from extracteval.io.outputs import write_csv

    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=json_default), encoding="utf-8")
    write_csv(result.fields_frame(), out / "field_accuracy.csv", safe=safe_csv)
    if scored is not None:
        result.records_frame().to_parquet(out / "records.parquet", index=False)
        result.cells_frame().to_parquet(out / "buckets.parquet", index=False)
    return ("result.json", "field_accuracy.csv", "records.parquet", "buckets.parquet")
