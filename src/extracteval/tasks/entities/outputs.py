"""What `extracteval score entities` shows and writes: the terminal report, and `--output`'s
result.json, feature_metrics.csv (one row per model, view, entity field and label) and
records.parquet (per model and record: gold, predicted, matched and fully correct pairs)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def render(doc: dict[str, Any]) -> str:
    from extracteval.tasks.entities.report import render_entities

    return render_entities(doc, use_colour=sys.stdout.isatty())


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    """The files, into an existing (staging) folder; records.parquet is left to the chunked
    engine (`scored` None), which streamed it there while scoring."""
    from extracteval.io.outputs import write_feature_view_files

    write_feature_view_files(doc, out, views=("matched", "strict"), safe_csv=safe_csv)
    if scored is not None:
        _write_records(result, out)
    return ("result.json", "feature_metrics.csv", "records.parquet")


def _write_records(result: Any, out: Path) -> None:
    """records.parquet: per model and record, gold / predicted / matched / fully correct pairs."""
    import pandas as pd

    frames = [result.models[m].records_frame().assign(model=m) for m in result.ranking]
    pd.concat(frames, ignore_index=True).to_parquet(out / "records.parquet", index=False)
