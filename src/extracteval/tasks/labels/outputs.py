"""What `extracteval score labels` shows and writes: the terminal report, and `--output`'s
result.json and feature_metrics.csv (one row per model, view, feature and label)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def render(doc: dict[str, Any]) -> str:
    from extracteval.tasks.labels.report import render_labels

    return render_labels(doc, use_colour=sys.stdout.isatty())


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    write_files(doc, out, safe_csv=safe_csv)
    return ("result.json", "feature_metrics.csv")


def feature_rows(doc: dict[str, Any], views: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per model, view, feature and label (label `*` = the feature's headline metrics)."""
    rows = []
    for m in doc["ranking"]:
        for view in views:
            for f, fm in doc["models"][m][view]["features"].items():
                base = {"model": m, "view": view, "feature": f}
                rows.append({**base, "label": "*", "mode": fm["mode"], **{k: fm[k] for k in ("precision", "recall", "f1", "specificity", "micro_accuracy", "rows", "correct")}})
                for label, v in fm["labels"].items():
                    rows.append({**base, "label": label, "mode": "one-vs-rest", **v})
    return rows


def write_files(doc: dict[str, Any], out: Path, *, views: tuple[str, ...] = ("aligned", "strict"), safe_csv: bool = True) -> None:
    import pandas as pd

    from extracteval.io.outputs import write_csv

    (out / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    write_csv(pd.DataFrame(feature_rows(doc, views)), out / "feature_metrics.csv", safe=safe_csv)
