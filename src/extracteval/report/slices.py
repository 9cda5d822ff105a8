"""The slices of an evaluation as terminal text: one compact table per slicing, weakest slice
first, then each model's weakest slices and the slices whose ranking differs from the overall one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.report.terminal import count_of, table, terminal_safe

__all__ = ["render_slices", "value_text", "slices_table", "weakest_lines", "ordered_values", "grouped"]


def value_text(x: float | None, rate: bool) -> str:
    """A metric as every slice table shows it: a percentage for a rate, else three decimals."""
    if x is None or x != x:
        return "n/a"
    return f"{100.0 * x:.1f}%" if rate else f"{x:.3f}"


def _interval(row: Mapping[str, Any], rate: bool) -> str:
    if row.get("low") is None or row["low"] != row["low"]:
        return value_text(row["estimate"], rate)
    lo, hi = ((f"{100.0 * row[k]:.1f}" if rate else f"{row[k]:.3f}") for k in ("low", "high"))
    return f"{value_text(row['estimate'], rate)} [{lo}, {hi}]"


def _gap_text(gap: Mapping[str, Any] | None, rate: bool) -> str:
    if gap is None:
        return ""
    d = gap["difference"]["estimate"]
    size = f"{100.0 * d:+.1f} pts" if rate else f"{d:+.3f}"
    word = "significant" if gap.get("significant") else "not significant"
    return f"{size}, {word} (Holm p = {gap['p_holm']:.3g})"


def grouped(rows: list[Mapping[str, Any]]) -> list[tuple[str, list[tuple[str, dict[str, Mapping[str, Any]]]]]]:
    """The rows by slicing, then value (weakest first: by the models' mean value in the slice),
    then model: one pass over the rows; the `(all records)` slicing first, as the rows have it."""
    by: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for r in rows:
        by.setdefault(r["slice"], {}).setdefault(r["value"], {})[r["model"]] = r
    return [(slicing, sorted(per.items(), key=lambda kv: sum(r["estimate"] for r in kv[1].values()) / max(len(kv[1]), 1)))
            for slicing, per in by.items()]


def ordered_values(rows: list[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Each slicing with its values, weakest first (see `grouped`)."""
    return [(slicing, [v for v, _ in values]) for slicing, values in grouped(rows)]


def slices_table(doc: Mapping[str, Any], models: list[str] | None = None) -> Any:
    """The slices as one table for a report: a row per slicing and value (weakest value first
    within each slicing), the records, each model's value with its interval, the winner and
    whether the ranking differs from the overall one. `models`: the columns (default: all); for
    some of the models only (a model run's report) each one's rank in the slice instead of the
    winner and lead, so that the table names no other model."""
    import pandas as pd

    rate = bool(doc.get("rate", True))
    rows = list(doc.get("rows", []))
    every = list(dict.fromkeys(r["model"] for r in rows))
    models = models or every
    subset = set(models) != set(every)
    gaps = {(g["slice"], g["value"], g["higher"]): g for g in doc.get("gaps", [])}
    body = []
    for slicing, values in grouped(rows):
        for v, per in values:
            mine = list(per.values())
            first = mine[0]
            row = {"slice": "all records" if slicing == "(all records)" else slicing, "value": v, "records": first["records"],
                   "ranked": "yes" if first["ranked"] else "no (too few records)",
                   **{m: _interval(per[m], rate) if m in per else "" for m in models}}
            if subset:
                row.update({f"rank of {m}": (f"{per[m]['rank']} of {len(mine)}" if m in per and per[m].get("rank") else "-") for m in models})
            else:
                winner = next((r["model"] for r in mine if r.get("rank") == 1), None)
                row.update({"winner": winner or "-", "lead over the next model": _gap_text(gaps.get((slicing, v, winner)) if winner else None, rate)})
            row["ranking"] = "differs from overall" if first.get("ranking_differs") else ""
            body.append(row)
    tail = [f"rank of {m}" for m in models] if subset else ["winner", "lead over the next model"]
    return pd.DataFrame(body, columns=["slice", "value", "records", "ranked", *models, *tail, "ranking"])


def slicing_name(doc: Mapping[str, Any], slicing: str) -> str:
    """A slicing as the reports name it: the built-in `@size` by what it counts."""
    size = f"size ({doc['size']})" if doc.get("size") else "size"
    return " × ".join(size if part == "@size" else part for part in slicing.split(" × "))


def shown(text: Any) -> str:
    """A name or value from the data, safe on a terminal and on one line: every control character
    (line breaks and tabs too, and the escape that starts a colour) written out."""
    return terminal_safe(str(text), colours=False).replace("\n", "\\n").replace("\t", "\\t")


def weakest_lines(doc: Mapping[str, Any], models: list[str] | None = None, limit: int = 3) -> list[str]:
    """Per model, its weakest slices as one line (`model: slice = value* 71.2% [..] vs 84.0% (40 records); …`)."""
    rate = bool(doc.get("rate", True))
    out = []
    for m, items in (doc.get("weakest") or {}).items():
        if not items or (models is not None and m not in models):
            continue
        parts = []
        for w in items[:limit]:
            sure = "*" if (w.get("supported_drop") or 0) > 0 else ""
            parts.append(f"{shown(slicing_name(doc, w['slice']))} = {shown(w['value'])}{sure} {_interval(w, rate)} vs "
                         f"{value_text(w['overall'], rate)} ({count_of(int(w['records']), 'record')})")
        out.append(f"{shown(m)}: " + "; ".join(parts))
    return out


def render_slices(doc: Mapping[str, Any]) -> str:
    """The `slices` part of a result document as text."""
    def name(slicing: str) -> str:
        return shown(slicing_name(doc, slicing))

    rate = bool(doc.get("rate", True))
    rows = doc.get("rows", [])
    models = list(dict.fromkeys(r["model"] for r in rows))
    conf = f"{100 * float(doc.get('confidence', 0.95)):g}%"
    clusters = f"; whole clusters of {shown(repr(doc['cluster_by']))} resampled" if doc.get("cluster_by") else ""
    out = [f"Slices — {doc.get('label') or doc['metric']} per slice, {conf} intervals ({doc.get('resamples')} resamples{clusters}); "
           f"slices under {count_of(int(doc.get('min_size', 0)), 'record')} are shown but not ranked"]
    gaps = {(g["slice"], g["value"], g["higher"]): g for g in doc.get("gaps", [])}
    for slicing, values in grouped(rows):
        body = []
        for v, per in values:
            first = next(iter(per.values()))
            winner = next((m for m, r in per.items() if r.get("rank") == 1), None)
            lead = gaps.get((slicing, v, winner)) if winner else None
            flag = " ≠ overall" if first.get("ranking_differs") else ""
            body.append([shown(v), str(first["records"]) + ("" if first["ranked"] else " (not ranked)"),
                         *[_interval(per[m], rate) if m in per else "" for m in models],
                         (shown(winner) if winner else "-") + flag, _gap_text(lead, rate)])
        out.append("")
        out.append(f"By {name(slicing)}:" if slicing != "(all records)" else "All records:")
        out.append(table(["value", "records", *(shown(m) for m in models), "winner", "lead over the next model"], body))
    weak = weakest_lines(doc)
    if weak:
        out.append("")
        out.append("Weakest slices (below the model's overall value, the largest drop its interval still supports first; "
                   "* where the whole interval lies below the overall value):")
        out.extend(f"  {line}" for line in weak)
    flips = sorted({(r["slice"], r["value"]) for r in rows if r.get("ranking_differs")})
    if flips:
        out.append("")
        out.append("The ranking differs from the overall one in: " + "; ".join(f"{name(s)} = {shown(v)}" for s, v in flips))
    for note in doc.get("notes", []):
        out.append(f"note: {shown(note)}")
    return "\n".join(out)
