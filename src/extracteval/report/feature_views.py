"""How a feature-views result (`core.feature_views`) is shown and written, for the tasks whose
results carry per-feature `aligned` and `strict` views (`labels`, `entities`): the terminal
tables, the warning lines, and the rows of `--output`'s feature_metrics.csv (one row per model,
view, feature and label; written by `io.outputs.write_feature_view_files`)."""

from __future__ import annotations

from typing import Any

from extracteval.core.ranking import format_wins
from extracteval.report.terminal import colour, percent, table

__all__ = ["feature_table", "warning_lines", "feature_rows"]


def _winner_label(w: dict[str, Any] | None) -> tuple[str, str | None]:
    if w is None:
        return "-", None
    if w["kind"] == "sole":
        return w["winners"][0] + " (sole)", w["badge"]
    if w["kind"] == "shared":
        return ", ".join(w["winners"]) + f" (shared, {format_wins(w['win_share'])} each)", w["badge"]
    if w["kind"] == "universal":
        return "all tie (no wins)", w["badge"]
    best = (w.get("best") or {}).get("f1")
    if best is not None and best != best:  # undefined (NaN)
        return "no winner (best F1 undefined)", None
    return "no winner (best F1 is 0)", None


def feature_table(doc: dict[str, Any], first: str, second: str, use_colour: bool) -> str:
    ranking = doc["ranking"]
    rows, cols = [], []
    for f in doc["features"]:
        cells = [f]
        for m in ranking:
            a = doc["models"][m][first]["features"][f]
            b = doc["models"][m][second]["features"][f]
            tag = "" if a["mode"] == "macro" else f" [{a['positive_label']}]"
            cells.append(f"{percent(a['f1'])} / {percent(b['f1'])}{tag}  acc {percent(a['micro_accuracy'])} / {percent(b['micro_accuracy'])}")
        label, badge = _winner_label(doc["feature_winners"].get(f))
        cells.append(label)
        rows.append(cells)
        cols.append([None] * (1 + len(ranking)) + [badge])
    head = ["Feature", *[f"{m}: F1 {first} / {second}, micro accuracy" for m in ranking], "Winner (strict)"]
    return table(head, rows, align="l" + "r" * len(ranking) + "l", colours=cols, use_colour=use_colour)


def warning_lines(doc: dict[str, Any], use_colour: bool) -> list[str]:
    return [colour(f"warning: {w}", "yellow", use_colour) for w in doc.get("warnings", [])]


def feature_rows(doc: dict[str, Any], views: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per model, view, feature and label (label `*` = the feature's headline metrics)."""
    rows = []
    for m in doc["ranking"]:
        for view in views:
            for f, fm in doc["models"][m][view]["features"].items():
                base = {"model": m, "view": view, "feature": f}
                rows.append({**base, "label": "*", "mode": fm["mode"], **{k: fm[k] for k in ("precision", "recall", "f1", "specificity", "micro_accuracy", "rows", "correct")},
                             **{f"weighted_{k}": v for k, v in fm.get("weighted", {}).items()}})
                for label, v in fm["labels"].items():
                    rows.append({**base, "label": label, "mode": "one-vs-rest", **v})
    return rows
