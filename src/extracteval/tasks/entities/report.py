"""The terminal view of an `entities` result document (its `to_dict()`)."""

from __future__ import annotations

from typing import Any

from extracteval.report.terminal import percent, table
from extracteval.report.feature_views import feature_table, warning_lines

__all__ = ["render_entities"]


def render_entities(doc: dict[str, Any], *, use_colour: bool = False) -> str:
    """Ranking with entity presence, matched-pairs and strict metrics side by side, then per feature."""
    ranking = doc["ranking"]
    kf = ", ".join(f"{f}×{doc['weights'][f]:g}" for f in doc["key_fields"])
    out = [
        f"extracteval · entities · {len(ranking)} model(s) · {doc['n_records']} records · {len(doc['features'])} features · "
        f"aligned on {kf} (match ≥ {doc['config']['match_threshold']:g})",
        "matched = " + doc["views"]["matched"],
        "strict  = " + doc["views"]["strict"],
    ]
    sem = doc["config"].get("similarity", {}).get("semantic", {})
    if sem.get("fields"):
        # name the backend itself: the default `lexical` one compares spelling, not meaning
        out.append(f"SEMANTIC fields {', '.join(sem['fields'])}: `{sem.get('name', '?')}` backend "
                   f"({sem.get('description', sem.get('kind', ''))}), value correct at ≥ {doc['config']['semantic_threshold']:g}")
    out.append("")
    rows, cols = [], []
    for m in ranking:
        r = doc["models"][m]
        e, mt, s = r["entity_detection_summary"], r["matched"], r["strict"]
        low_recall = e["gold_count"] > 0 and mt["totals"]["f1"] - e["recall_entities"] > 0.15
        rows.append([
            f"#{r['rank']}", m, f"{e['matched_count']}/{e['gold_count']}", str(e["extra_predictions_count"]),
            percent(e["precision_entities"]), percent(e["recall_entities"]), percent(e["f1_entities"]),
            percent(mt["totals"]["f1"]), percent(mt["row_accuracy"]),
            percent(s["totals"]["f1"]), percent(s["row_accuracy"]),
            r["tier"].replace("_", " "), f"{r['feature_wins_display']} of {len(doc['features'])}",
        ])
        cols.append([None, "bold", None, None, None, "red" if low_recall else None, None,
                     "yellow" if low_recall else None, None, None, None, r["tier_colour"], None])
    head = ["Rank", "Model", "Matched/gold", "Extra", "Entity P", "Entity R", "Entity F1",
            "Matched-pairs F1", "Matched row acc", "Strict F1", "Strict row acc", "Tier", "Feature wins"]
    out.append(table(head, rows, align="llrrrrrrrrrll", colours=cols, use_colour=use_colour))
    out += ["", "Per feature (macro F1 over labels):", feature_table(doc, "matched", "strict", use_colour)]
    out += warning_lines(doc, use_colour)
    return "\n".join(out)
