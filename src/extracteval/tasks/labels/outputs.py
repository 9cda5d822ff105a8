"""What `extracteval score labels` shows and writes: the terminal report, and `--output`'s
result.json and feature_metrics.csv (one row per model, view, feature and label)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from extracteval.io.outputs import write_feature_view_files


def render(doc: dict[str, Any]) -> str:
    from extracteval.tasks.labels.report import render_labels

    return render_labels(doc, use_colour=sys.stdout.isatty())


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    write_feature_view_files(doc, out, safe_csv=safe_csv)
    return ("result.json", "feature_metrics.csv")


