"""Terminal view of a `json` task result document (`JsonResult.to_dict()`)."""

from __future__ import annotations

from typing import Any

from extracteval.report.terminal import colour, percent, table

__all__ = ["render_json"]


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def render_json(doc: dict[str, Any], *, use_colour: bool = False, max_fields: int = 40) -> str:
    models = doc["models"]
    ranking = doc["ranking"]
    cfg = doc["config"]
    sem = cfg.get("similarity", {}).get("semantic", {})
    out = [
        f"extracteval · json · {len(ranking)} model(s) · {doc['n_records']} records · {len(doc['fields'])} "
        + ("paths" if cfg.get("flatten") else "keys"),
        f"SEMANTIC fields: `{sem.get('name', '?')}` backend ({sem.get('description', sem.get('kind', ''))}), "
        f"threshold {cfg['semantic_threshold']}; FUZZY: rapidfuzz {cfg['fuzzy_scorer']} ≥ {cfg['fuzzy_threshold']}",
        "",
    ]
    rows, cols = [], []
    for m in ranking:
        r = models[m]
        q = r["rqs"]
        rows.append([
            f"#{r['rank']}", m, _num(q["mean"]), _num(q["median"]), f"{_num(q['min'])}–{_num(q['max'])}",
            percent(r["accuracy"]), percent(r["completeness"]), percent(r["hallucination"]),
            r["tier"].replace("_", " "),
        ])

        cols.append([None, "bold", None, None, None, None, None, None, r["tier_colour"]])
    out.append(table(["Rank", "Model", "RQS mean", "median", "min–max", "Accuracy", "Completeness", "Hallucination", "Tier"],
                     rows, align="llrrrrrrl", colours=cols, use_colour=use_colour))
    out.append(f"(RQS at most {cfg.get('rqs_best_attainable', 1.0):g} with these weights; tier by the share of that maximum)")
    out.append("")
    out.append("Key buckets (summed over records):")
    brows = []
    for m in ranking:
        b = models[m]["buckets"]
        r = models[m]
        brows.append([m, str(b["gt_non_null"]), str(b["both_non_null"]), str(b["aio_missing_or_null"]), str(b["extra_keys"]),
                      str(b["gt_null_aio_has_value"]), f"{r['matched']}/{r['scored']}", str(r["invalid_predictions"] + r["missing_records"])])
    out.append(table(["Model", "gt_non_null", "both_non_null", "aio_missing_or_null", "extra_keys", "gt_null_aio_has_value",
                      "matched/scored", "empty/invalid"], brows, align="lrrrrrrr"))
    out.append("")
    fields = list(doc["fields"])
    shown = fields[:max_fields]
    out.append("Per field (accuracy on keys present in both; +Nh = N hallucinated values; strategy):")
    frows = []
    for f in shown:
        cells = [f]
        strategies: set[str] = set()
        for m in ranking:
            fa = models[m]["fields"].get(f)
            if fa is None:
                cells.append("-")
                continue
            strategies.update(fa["strategies"])
            invented = fa["extra_keys"] + fa["gt_null_aio_has_value"]
            if fa["scored"]:
                cells.append(percent(fa["accuracy"]) + (f" +{invented}h" if invented else ""))
            elif fa["ignored"]:
                cells.append("ignored" + (f" +{invented}h" if invented else ""))
            elif invented:
                cells.append(f"+{invented}h")
            else:
                cells.append("-")
        cells.append("+".join(sorted(strategies)) or "-")
        frows.append(cells)
    out.append(table(["Field", *ranking, "Strategy"], frows, align="l" + "r" * len(ranking) + "l"))
    if len(fields) > max_fields:
        out.append(f"… {len(fields) - max_fields} more fields in --json / --output")
    for w in doc.get("warnings", []):
        out.append(colour(f"warning: {w}", "yellow", use_colour))
    return "\n".join(out)
