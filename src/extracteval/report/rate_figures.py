"""Matplotlib figures of rates per model (the `structured` and `toolcalls` tasks' headline numbers,
BFCL accuracy per category). Same conventions as `report.figures`: matplotlib imported inside
the function with the Agg backend, user text drawn literally, one `Figure` returned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from extracteval.report.figures import _COLOURS, _escape, _margins, _pyplot, _row_labels, _short

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["rate_bars"]


def rate_bars(
    table: "pd.DataFrame",
    *,
    rates: Sequence[str],
    labels: Mapping[str, str] | None = None,
    title: str = "rates per model",
    xlabel: str = "rate",
) -> Any:
    """Horizontal bars: one row per rate, one bar per model, the value printed at the bar's end.

    `table`: one row per model, a `model` column and one column per name in `rates` (values in
    [0, 1]; missing values are left out).
    """
    import numpy as np

    Figure = _pyplot()
    labels = dict(labels or {})
    models = list(table["model"]) if len(table) else []
    rows = [labels.get(r, r) for r in rates]
    n_rows, n_models = max(len(rows), 1), max(len(models), 1)
    height = min(1.8 + 0.3 * n_rows * max(1.0, 0.55 * n_models), 40.0)
    fig = Figure(figsize=(8.0, height), dpi=72)
    ax = fig.add_subplot()
    _margins(fig, rows, width=8.0, height=height)
    bar_h = 0.8 / n_models
    for k, (_, rec) in enumerate(table.iterrows()):
        values = np.array([rec[r] if r in rec and rec[r] is not None else np.nan for r in rates], dtype=float)
        y = np.arange(len(rates), dtype=float) + (k - (n_models - 1) / 2) * bar_h
        keep = ~np.isnan(values)
        ax.barh(y[keep], values[keep], height=bar_h, color=_COLOURS[k % len(_COLOURS)], label=_escape(_short(rec["model"])))
        if n_rows * n_models <= 80:
            for yy, v in zip(y[keep], values[keep]):
                ax.text(min(v, 1.0) + 0.01, yy, f"{100 * v:.1f}%", va="center", fontsize=7)
    ax.set_ylim(len(rates) - 0.5, -0.5)
    _row_labels(ax, rows, 8)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel(_escape(xlabel))
    ax.grid(axis="x", alpha=0.3)
    if models:  # above the plot: never over a bar or its value
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(models), 4), fontsize=8, frameon=False)
    ax.set_title(_escape(title), pad=8 + 14 * ((len(models) + 3) // 4) if models else 6)
    return fig
