"""The terminal view of a `labels` result document (its `to_dict()`); the per-feature table and
the warnings are `report.feature_views`, shared with the `entities` view."""

from __future__ import annotations

from typing import Any

from extracteval.report.terminal import percent, table
from extracteval.report.feature_views import feature_table, warning_lines

__all__ = ["render_labels"]


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
            percent(s["totals"]["weighted"]["f1"]), percent(s["totals"]["specificity"]), percent(s["totals"]["micro_accuracy"]), percent(s["row_accuracy"]),
            percent(a["totals"]["f1"]), percent(a["row_accuracy"]),
            r["tier"].replace("_", " "), f"{r['feature_wins_display']} of {len(doc['features'])}",
        ])
        cols.append([None, "bold"] + [None] * 10 + [r["tier_colour"], None])
    head = ["Rank", "Model", "Rows ok/miss/extra", "Strict P", "Strict R", "Strict F1", "Strict weighted F1", "Strict spec",
            "Strict micro acc", "Strict row acc", "Aligned F1", "Aligned row acc", "Tier", "Feature wins"]
    out.append(table(head, rows, align="llrrrrrrrrrrll", colours=cols, use_colour=use_colour))
    out += ["", "Per feature (macro over labels unless [positive label]):", feature_table(doc, "aligned", "strict", use_colour)]
    out += warning_lines(doc, use_colour)
    return "\n".join(out)
