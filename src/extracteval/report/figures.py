"""Matplotlib figures of a result (task-agnostic: they take tidy tables).

matplotlib is imported inside each function, with the non-interactive Agg backend, so importing
this module (or extracteval) never loads it and nothing tries to open a window.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["item_f1_bars", "confusion_heatmap", "f1_threshold_curve", "score_histogram", "png_bytes"]

_MAX_PRINTED_COUNTS = 2000  # heatmap cells (40 fields × 10 models × 5 counts) beyond which the colour alone carries the counts
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    return Figure


def _margins(fig: Any, labels: list[Any], *, width: float, height: float, wspace: float | None = None) -> None:
    """Fixed margins sized for the longest tick label. (Constrained layout measures every tick
    label's extent and costs seconds for a few hundred fields.)"""
    longest = max((len(_short(x)) for x in labels), default=4)
    left = min(0.6, (0.35 + 0.075 * longest) / width)
    top = 1.0 - min(0.3, 0.55 / height)
    bottom = min(0.3, 0.6 / height)
    fig.subplots_adjust(left=left, right=0.97, top=top, bottom=bottom, wspace=wspace)


def _row_labels(ax: Any, labels: list[Any], fontsize: float) -> None:
    """Item names beside the rows, as plain texts: a y tick is four artists (two marks, two
    labels) and costs seconds for a few hundred fields."""
    ax.set_yticks([])
    transform = ax.get_yaxis_transform()  # x in axes fraction, y in data
    for i, label in enumerate(labels):
        ax.text(-0.01, i, _escape(_short(label)), transform=transform, ha="right", va="center", fontsize=fontsize)


def _short(label: Any, n: int = 40) -> str:
    s = str(label)
    return s if len(s) <= n else s[: n - 1] + "…"


def item_f1_bars(table: "pd.DataFrame", *, item: str = "field", title: str = "F1 per field") -> Any:
    """Horizontal F1 bars per item (grouped by model) with confidence-interval whiskers.

    `table` columns: `model`, `<item>`, `f1`, and optionally `f1_ci_low`, `f1_ci_high`.
    Text is drawn as text (matplotlib never interprets it as markup: `usetex` is off and `$` is escaped).
    """
    import numpy as np

    Figure = _pyplot()
    models = list(dict.fromkeys(table["model"])) if len(table) else []
    items = list(dict.fromkeys(table[item])) if len(table) else []
    n_items, n_models = max(len(items), 1), max(len(models), 1)
    per_item = 0.28 if n_items <= 60 else 0.16  # many fields: thinner bars, same labels
    height = min(2.0 + per_item * n_items * max(1.0, 0.6 * n_models), 60.0)
    fig = Figure(figsize=(9.0, height), dpi=72)
    ax = fig.add_subplot()
    _margins(fig, items, width=9.0, height=height)
    bar_h = 0.8 / n_models
    whiskers = False
    pos = {it: i for i, it in enumerate(items)}
    for k, m in enumerate(models):
        sub = table[table["model"] == m]
        y = np.array([pos[it] for it in sub[item]], dtype=float) + (k - (n_models - 1) / 2) * bar_h
        f1 = sub["f1"].to_numpy(dtype=float)
        xerr = None
        if "f1_ci_low" in sub and "f1_ci_high" in sub:
            lo = sub["f1_ci_low"].to_numpy(dtype=float, na_value=np.nan)
            hi = sub["f1_ci_high"].to_numpy(dtype=float, na_value=np.nan)
            if not np.all(np.isnan(lo)):
                xerr = np.vstack([np.clip(f1 - np.nan_to_num(lo, nan=f1), 0, None), np.clip(np.nan_to_num(hi, nan=f1) - f1, 0, None)])
        whiskers = whiskers or xerr is not None
        ax.barh(y, f1, height=bar_h, color=_COLOURS[k % len(_COLOURS)], label=_escape(_short(m)), xerr=xerr,
                error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
    ax.set_ylim(len(items) - 0.5, -0.5)  # first item on top, no empty margin rows
    _row_labels(ax, items, 8 if n_items <= 60 else 6)
    ax.set_xlim(0, 1.05)
    # the whiskers are promised only where drawn (intervals exist for fields, not for tags or functions)
    ax.set_xlabel("F1 (whiskers: bootstrap 95% interval)" if whiskers else "F1")
    ax.grid(axis="x", alpha=0.3)
    legend_rows = (len(models) + 3) // 4
    if models:  # above the plot: never over the last bars
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(models), 4), fontsize=8, frameon=False)
    ax.set_title(_escape(title), pad=8 + 14 * legend_rows if models else 6)
    # room above the plot for the title and the legend's rows (a fixed fraction of a tall figure is not)
    fig.subplots_adjust(top=1.0 - min(0.45, (0.45 + 0.2 * legend_rows) / height))
    return fig


def confusion_heatmap(table: "pd.DataFrame", *, item: str = "field", title: str = "confusion counts", counts: tuple[str, ...] = ("tp", "fp", "fn", "tn", "excluded")) -> Any:
    """A heatmap of confusion counts: rows = items, one block of count columns per model.
    Colour is the share of the row's cells within the model's block (so large and small fields
    are comparable); the number printed is the count (up to 60 items and 300 cells; the
    counts are in the per-item table either way)."""
    import numpy as np

    Figure = _pyplot()
    models = list(dict.fromkeys(table["model"])) if len(table) else []
    items = list(dict.fromkeys(table[item])) if len(table) else []
    cols = [c for c in counts if c in table.columns]
    k = len(cols)
    blocks, shares = [], []
    for m in models:
        sub = table[table["model"] == m].set_index(item).reindex(items)
        v = sub[cols].to_numpy(dtype=float, na_value=0.0)
        tot = v.sum(axis=1, keepdims=True)
        blocks.append(v)
        shares.append(np.divide(v, tot, out=np.zeros_like(v), where=tot > 0))
    values = np.hstack(blocks) if blocks else np.zeros((max(len(items), 1), k))
    share = np.hstack(shares) if shares else np.zeros_like(values)
    height = min(2.2 + 0.2 * max(len(items), 1), 60.0)
    width = min(4.0 + 0.45 * values.shape[1], 36.0)
    fig = Figure(figsize=(width, height), dpi=72)
    ax = fig.add_subplot()
    _margins(fig, items, width=width, height=height)
    # a single-hue sequential scale (colour-blind safe), in percent
    im = ax.imshow(100.0 * share, aspect="auto", cmap="Blues", vmin=0, vmax=100, interpolation="nearest")
    cbar = fig.colorbar(im, ax=ax, fraction=min(0.15, 0.9 / width), pad=0.01)
    cbar.ax.tick_params(labelsize=7)
    cbar.set_label("share of the row's cells, this model (%)", fontsize=8)
    labels = [c.upper() if c != "excluded" else "excl." for c in cols]
    ax.set_xticks(range(values.shape[1]), [labels[j % k] for j in range(values.shape[1])], fontsize=8)
    for i in range(1, len(models)):
        ax.axvline(i * k - 0.5, color="black", linewidth=1.5)
    for i, m in enumerate(models):
        ax.text(i * k + (k - 1) / 2, -0.6, _escape(_short(m, 24)), ha="center", va="bottom", fontsize=9)
    _row_labels(ax, items, 8 if len(items) <= 60 else 6)
    # the counts are printed while they stay legible and cheap: each is a text artist, and
    # 400 of them (40 fields × 2 models × 5 counts) cost ~0.3 s of CPU per figure
    if len(items) <= 60 and values.size <= _MAX_PRINTED_COUNTS:
        fs = 7 if values.size <= 300 else 6
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                ax.text(j, i, f"{int(values[i, j])}", ha="center", va="center", fontsize=fs,
                        color="white" if share[i, j] > 0.6 else "black")
    ax.set_title(_escape(title), pad=18)
    return fig


def f1_threshold_curve(curves: "pd.DataFrame", *, title: str = "F1 vs threshold") -> Any:
    """F1 against a matching threshold, one line per model (`model`, `threshold`, `f1`)."""
    Figure = _pyplot()
    fig = Figure(figsize=(7.0, 4.5), dpi=80, layout="constrained")
    ax = fig.add_subplot()
    for k, (m, sub) in enumerate(curves.groupby("model", sort=False)):
        ax.plot(sub["threshold"], sub["f1"], marker="o", ms=3, color=_COLOURS[k % len(_COLOURS)], label=_escape(_short(m)))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("threshold")
    ax.set_ylabel("F1")
    ax.set_title(_escape(title))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def score_histogram(scores: "pd.DataFrame", *, column: str = "rqs", title: str = "RQS per record", bins: int = 20) -> Any:
    """Histogram of a per-record score in [0, 1], one outline per model (`model`, `<column>`)."""
    import numpy as np

    Figure = _pyplot()
    fig = Figure(figsize=(7.0, 4.5), dpi=80, layout="constrained")
    ax = fig.add_subplot()
    edges = np.linspace(0, 1, bins + 1)
    for k, (m, sub) in enumerate(scores.groupby("model", sort=False)):
        ax.hist(sub[column].to_numpy(dtype=float), bins=edges, histtype="step", linewidth=1.5, color=_COLOURS[k % len(_COLOURS)], label=_escape(_short(m)))
    ax.set_xlabel(column)
    ax.set_ylabel("records")
    ax.set_title(_escape(title))
    ax.legend(fontsize=8)
    return fig


def _escape(text: str) -> str:
    # `$…$` would switch matplotlib to mathtext; user text is shown literally
    return str(text).replace("$", r"\$")


MAX_PIXELS = 24_000_000  # a very tall figure (hundreds of items) is drawn at less than twice


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes (what `log_figure` writes and the HTML report embeds), at twice
    its nominal resolution so that it stays sharp on high-density screens (the report shows it
    at its nominal size)."""
    w, h = fig.get_size_inches()
    dpi = min(2 * fig.dpi, (MAX_PIXELS / max(w * h, 1e-9)) ** 0.5)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()
