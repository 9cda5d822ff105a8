"""What `extracteval score records` shows and writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.io.outputs import write_csv
from extracteval.report.console import json_default


def field_table(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per model and field: the share of truth records where the field is right."""
    return pd.DataFrame([{"model": m, "field": f, "accuracy": a} for m in doc["ranking"] for f, a in doc["models"][m]["fields"].items()],
                        columns=["model", "field", "accuracy"])


def field_figure(table: pd.DataFrame) -> Any:
    """Horizontal bars: per field, each model's share of records where the field is right."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    models, fields = list(dict.fromkeys(table["model"])), list(dict.fromkeys(table["field"]))
    fig = Figure(figsize=(7.0, 1.5 + 0.5 * len(fields)), dpi=72)
    ax = fig.add_subplot()
    height = 0.8 / max(len(models), 1)
    for k, m in enumerate(models):
        sub = table[table["model"] == m]
        ax.barh([fields.index(f) + k * height for f in sub["field"]], sub["accuracy"], height=height, label=m.replace("$", r"\$"))
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(fields))], [f.replace("$", r"\$") for f in fields])
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("records where the field is right")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def render(doc: dict[str, Any]) -> str:
    lines = [f"records: {doc['n_records']} truth records, {len(doc['fields'])} fields; {doc['ranking_rule']}", ""]
    for m in doc["ranking"]:
        r = doc["models"][m]
        lines.append(f"  {r['rank']}. {m}: accuracy {r['accuracy']:.1%} ({r['correct']}/{r['records']}), missing {r['missing']}, extra {r['extra']}")
    lines += [f"warning: {w}" for w in doc["warnings"]]
    return "\n".join(lines)


def write(result: Any, doc: dict[str, Any], out: Path, *, scored: Any = None, safe_csv: bool = True) -> tuple[str, ...]:
    (out / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=json_default), encoding="utf-8")
    write_csv(field_table(doc), out / "field_metrics.csv", safe=safe_csv)
    return ("result.json", "field_metrics.csv")
