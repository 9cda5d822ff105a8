"""The terminal view of a `fields` result document (its `to_dict()`)."""

from __future__ import annotations

from typing import Any

from extracteval.core.ranking import format_wins
from extracteval.report.terminal import colour, comparison_line, percent, table

__all__ = ["render_fields"]


def render_fields(doc: dict[str, Any], *, use_colour: bool = False) -> str:
    """The terminal view of a `fields` result document (`FieldsResult.to_dict()`)."""
    models = doc["models"]
    ranking = doc["ranking"]
    out = [
        f"extracteval · {doc['task']} · {len(ranking)} model(s) · {doc['n_records']} records · {len(doc['fields'])} fields",
        "",
    ]
    rows, cols = [], []
    show_ci = any(models[m]["ci"] for m in ranking)
    for m in ranking:
        r = models[m]
        o = r["overall"]
        row = [f"#{r['rank']}", m, percent(o["precision"]), percent(o["recall"]), percent(o["f1"]), percent(o["accuracy"]), percent(r["micro"]["f1"])]
        if show_ci:
            ci = r["ci"]["overall_f1"] if r["ci"] else None
            row.append(f"[{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]" if ci else "-")
        row += [r["tier"].replace("_", " "), r["wins_label"]]
        rows.append(row)
        cols.append([None, "bold", None, None, None, None, None] + ([None] if show_ci else []) + [r["tier_colour"], None])
    headers = ["Rank", "Model", "Precision", "Recall", "F1", "Accuracy", "Micro F1"] + (["F1 95% CI"] if show_ci else []) + ["Tier", "Field wins"]
    align = "llrrrrr" + ("l" if show_ci else "") + "ll"
    out.append(table(headers, rows, align=align, colours=cols, use_colour=use_colour))
    if doc.get("comparisons"):
        out.append("")
        out.append("Adjacent ranks (paired bootstrap of the overall F1 difference):")
        out += ["  " + comparison_line(c) for c in doc["comparisons"]]
    out.append("")
    out.append("Per field (F1; winner):")
    frows, fcols = [], []
    for f in doc["fields"]:
        w = doc["field_winners"].get(f)
        cells = [f]
        for m in ranking:
            fm = models[m]["fields"][f]
            cells.append("n/a" if "no_valid_classifications" in fm["flags"] else percent(fm["f1"]))
        if w is None:
            label, badge = "-", None
        elif w["kind"] in ("sole", "shared"):
            each = f" ({w['kind']}, {format_wins(w['win_share'])} win{'s' if w['win_share'] != 1 else ''} each)"
            label = ", ".join(w["winners"]) + each if w["kind"] == "shared" else w["winners"][0] + " (sole)"
            badge = w["badge"]
        elif w["kind"] == "universal":
            label, badge = "all tie (no wins)", w["badge"]
        else:
            label, badge = "no winner (best F1 is 0)", None
        cells.append(label)
        frows.append(cells)
        fcols.append([None] * (1 + len(ranking)) + [badge])
    out.append(table(["Field", *ranking, "Winner"], frows, align="l" + "r" * len(ranking) + "l", colours=fcols, use_colour=use_colour))
    failed = [c for c in doc["checks"] if not c["passed"]]
    cons = [c for c in doc["checks"] if c["kind"] == "consistency"]
    out.append("")
    out.append(
        f"Checks: {sum(c['passed'] for c in cons)}/{len(cons)} consistency checks passed"
        + ("" if not failed else "; " + "; ".join(f"{c['name']} ({c['kind']}): {c['detail']}" for c in failed))
    )
    for w in doc.get("warnings", []):
        out.append(colour(f"warning: {w}", "yellow", use_colour))
    return "\n".join(out)
