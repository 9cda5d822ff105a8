"""The terminal view of a `labels` result document (its `to_dict()`), and the per-feature table
and warnings the `entities` view shares with it."""

from __future__ import annotations

from typing import Any

from extracteval.core.ranking import format_wins
from extracteval.report.terminal import colour, percent, table

__all__ = ["render_labels", "feature_table", "warning_lines"]


def _winner_label(w: dict[str, Any] | None) -> tuple[str, str | None]:
    if w is None:
        return "-", None
    if w["kind"] == "sole":
        return w["winners"][0] + " (sole)", w["badge"]
    if w["kind"] == "shared":
        return ", ".join(w["winners"]) + f" (shared, {format_wins(w['win_share'])} each)", w["badge"]
    if w["kind"] == "universal":
        return "all tie (no wins)", w["badge"]
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


def render_labels(doc: dict[str, Any], *, use_colour: bool = False) -> str:
    """Ranking with both views side by side, then per-feature F1 (aligned / strict) and winners."""
    ranking = doc["ranking"]
    out = [
        f"extracteval · labels · {len(ranking)} model(s) · {doc['n_records']} records · {len(doc['features'])} features",
        "aligned = " + doc["views"]["aligned"] + "; strict = " + doc["views"]["strict"],
        "",
    ]
    rows, cols = [], []
    for m in ranking:
        r = doc["models"][m]
        a, s, al = r["aligned"], r["strict"], r["alignment"]
        rows.append([
            f"#{r['rank']}", m, f"{al['aligned_rows']}/{al['missing_rows']}/{al['extra_rows']}",
            percent(s["totals"]["precision"]), percent(s["totals"]["recall"]), percent(s["totals"]["f1"]),
            percent(s["totals"]["specificity"]), percent(s["totals"]["micro_accuracy"]), percent(s["row_accuracy"]),
            percent(a["totals"]["f1"]), percent(a["row_accuracy"]),
            r["tier"].replace("_", " "), f"{r['feature_wins_display']} of {len(doc['features'])}",
        ])
        cols.append([None, "bold"] + [None] * 9 + [r["tier_colour"], None])
    head = ["Rank", "Model", "Rows ok/miss/extra", "Strict P", "Strict R", "Strict F1", "Strict spec",
            "Strict micro acc", "Strict row acc", "Aligned F1", "Aligned row acc", "Tier", "Feature wins"]
    out.append(table(head, rows, align="llrrrrrrrrrll", colours=cols, use_colour=use_colour))
    out += ["", "Per feature (macro over labels unless [positive label]):", feature_table(doc, "aligned", "strict", use_colour)]
    out += warning_lines(doc, use_colour)
    return "\n".join(out)
