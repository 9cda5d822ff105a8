"""What `extracteval score fields` shows and writes: the terminal report, and `--output`'s
result.json, field_metrics.csv (one row per model and field) and records.parquet."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval.report.console import json_default


def render(doc: dict[str, Any]) -> str:
    from extracteval.tasks.fields.report import render_fields

    return render_fields(doc, use_colour=sys.stdout.isatty())


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    """The files, into an existing (staging) folder; records.parquet is left to the chunked and
    Spark engines (`scored` None), which streamed it there while scoring."""
    import pandas as pd

    from extracteval.io.outputs import write_csv

    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=json_default), encoding="utf-8")
    rows = []
    for m in result.ranking:
        for f, fm in result.models[m].fields.items():
            d = fm.to_dict()
            d.pop("examples")
            d["flags"] = ";".join(d["flags"])
            rows.append({"model": m, "field": f, **d})
    write_csv(pd.DataFrame(rows), out / "field_metrics.csv", safe=safe_csv)
    if scored is not None and result.records is not None:
        result.records.to_frame().to_parquet(out / "records.parquet", index=False)
    return ("result.json", "field_metrics.csv", "records.parquet")
