"""What `extracteval score spans` shows and writes: the terminal report, and `--output`'s
result.json, tag_metrics.csv (one row per model, mode and tag) and f1_vs_threshold.png."""

from __future__ import annotations

import sys
from extracteval.core import strict_json
from pathlib import Path
from collections.abc import Callable
from typing import Any


def render(doc: dict[str, Any], *, style: str = "default") -> str:
    from extracteval.tasks.spans.report import render_spans

    return render_spans(doc, use_colour=sys.stdout.isatty(), style=style)


def renderer(args: Any) -> Callable[[dict[str, Any]], str]:
    """`render` in the report style the options ask for (`--report-style`)."""
    style = getattr(args, "report_style", "default")
    return lambda doc: render(doc, style=style)


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    import csv

    from extracteval.io.outputs import safe_csv_row

    (out / "result.json").write_text(strict_json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    with open(out / "tag_metrics.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        row = safe_csv_row if safe_csv else list
        w.writerow(["model", "mode", "tag", "precision", "recall", "f1", "support", "tp", "fp", "fn"])
        for m in result.ranking:
            ms = result.models[m]
            for mode in [ms.exact, *ms.relaxed.values()]:
                for tag, tm in mode.per_tag.items():
                    w.writerow(row([m, mode.mode, tag, tm.precision, tm.recall, tm.f1, tm.support, tm.tp, tm.fp, tm.fn]))
                mi = mode.micro
                w.writerow(row([m, mode.mode, "(micro)", mi.precision, mi.recall, mi.f1, mi.support, mi.tp, mi.fp, mi.fn]))
    if any(doc["models"][m].get("curve") for m in doc["ranking"]):
        from extracteval.tasks.spans.figures import curve_figure

        curve_figure(doc).savefig(out / "f1_vs_threshold.png")
    return ("result.json", "tag_metrics.csv", "f1_vs_threshold.png")
