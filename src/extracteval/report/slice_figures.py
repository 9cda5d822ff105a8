"""The slices of an evaluation as a heat map: one row per slice (slicing and value), one column
per model, each cell the task's primary metric in that slice, printed, and coloured by how far it
lies from the model's value over all records (red below, blue above), so that the weakest slices
stand out. Rows go weakest first within each slicing (by the models' mean value), `all records`
on top; a slice too small to be ranked is marked, and a value whose whole interval lies below the
model's overall value carries `*`. Takes the `slices` document (`SliceReport.to_dict()`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extracteval.report.figures import _escape, _margins, _pyplot, _row_labels, _short
from extracteval.report.slices import ordered_values, value_text

__all__ = ["slices_heatmap", "MAX_FIGURE_SLICES"]

MIN_SPAN = 0.05  # the colour scale's least half-width (5 points of a rate)
MAX_FIGURE_SLICES = 40  # rows of the heat map: the weakest slices are kept (every slice is in slices.parquet)


def _rows(doc: Mapping[str, Any]) -> tuple[list[tuple[str, str]], str]:
    """The (slicing, value) rows drawn, and a title note when some were left out."""
    rows = list(doc.get("rows", []))
    order = [(s, v) for s, values in ordered_values(rows) for v in values]
    if len(order) <= MAX_FIGURE_SLICES:
        return order, ""
    mean: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        mean.setdefault((r["slice"], r["value"]), []).append(float(r["estimate"]))
    head = [k for k in order if k[0] == "(all records)"]
    rest = sorted((k for k in order if k[0] != "(all records)"), key=lambda k: sum(mean[k]) / len(mean[k]))[: MAX_FIGURE_SLICES - len(head)]
    keep = set(head) | set(rest)
    return [k for k in order if k in keep], f" ({len(keep)} weakest of {len(order)} slices)"


def slices_heatmap(doc: Mapping[str, Any], models: Sequence[str] | None = None) -> Any:
    """The heat map (a matplotlib Figure) of the slices of `models` (default: every model)."""
    import numpy as np

    Figure = _pyplot()
    rate = bool(doc.get("rate", True))
    rows = list(doc.get("rows", []))
    models = list(models or dict.fromkeys(r["model"] for r in rows))
    by = {(r["slice"], r["value"], r["model"]): r for r in rows}
    keys, note = _rows(doc)
    est = np.full((max(len(keys), 1), max(len(models), 1)), np.nan)
    delta = np.zeros_like(est)
    for i, (s, v) in enumerate(keys):
        for j, m in enumerate(models):
            r = by.get((s, v, m))
            if r is not None and r["estimate"] is not None:
                est[i, j] = float(r["estimate"])
                delta[i, j] = float(r["estimate"]) - float(r["overall"])
    labels = []
    for s, v in keys:
        first = next((by[(s, v, m)] for m in models if (s, v, m) in by), None)
        small = "" if first is None or first["ranked"] else " (not ranked)"
        labels.append("all records" if s == "(all records)" else f"{_short(s, 24)} = {_short(v, 28)}{small}")
    height = min(2.2 + 0.28 * max(len(keys), 1), 30.0)
    width = min(5.5 + 1.3 * len(models), 24.0)
    fig = Figure(figsize=(width, height), dpi=72)
    ax = fig.add_subplot()
    _margins(fig, labels, width=width, height=height)
    # the scale spans the largest gap to the overall value, at least 5 points: a slice a point
    # below its model's overall value is not painted as a failure
    span = max(float(np.nanmax(np.abs(delta))) if np.isfinite(delta).any() else 0.0, MIN_SPAN)
    im = ax.imshow(delta, aspect="auto", cmap="RdBu", vmin=-span, vmax=span, interpolation="nearest")
    cbar = fig.colorbar(im, ax=ax, fraction=min(0.15, 0.9 / width), pad=0.01)
    cbar.ax.tick_params(labelsize=7)
    cbar.set_label("vs the model's value over all records" + (" (points)" if rate else ""), fontsize=8)
    if rate:
        cbar.ax.yaxis.set_major_formatter(lambda x, _pos: f"{100 * x:+.0f}")
    ax.set_xticks(range(len(models)), [_escape(_short(m, 24)) for m in models], fontsize=8)
    ax.xaxis.tick_top()
    _row_labels(ax, labels, 8 if len(keys) <= 30 else 7)
    for i, (s, v) in enumerate(keys):
        for j, m in enumerate(models):
            r = by.get((s, v, m))
            if r is None:
                continue
            below = r.get("high") is not None and r["high"] == r["high"] and r["high"] < r["overall"]
            text = value_text(r["estimate"], rate) + ("*" if below and s != "(all records)" else "")
            strong = abs(delta[i, j]) > 0.6 * span
            ax.text(j, i, _escape(text), ha="center", va="center", fontsize=7, color="white" if strong else "black")
    label = doc.get("label") or doc.get("metric") or "primary metric"
    ax.set_title(_escape(f"{label} per slice{note}; * interval below the overall value"), pad=22, fontsize=10)
    return fig
