"""Figures of a `spans` result (matplotlib, imported only when a figure is drawn)."""

from __future__ import annotations

from typing import Any

__all__ = ["curve_figure"]


def curve_figure(doc: dict[str, Any]) -> Any:
    """F1 (solid), precision and recall (dotted) against the relaxed threshold, one colour per
    model; the exact F1 of each model is the value at 1.00. Returns a matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.2), dpi=120)
    ax = fig.add_subplot(1, 1, 1)
    for k, model in enumerate(doc["ranking"]):
        pts = doc["models"][model].get("curve") or []
        if not pts:
            continue
        t = [p["threshold"] for p in pts]
        colour = f"C{k % 10}"
        ax.plot(t, [p["f1"] for p in pts], color=colour, lw=2, label=f"{model} F1")
        ax.plot(t, [p["precision"] for p in pts], color=colour, lw=1, ls=":", alpha=0.7)
        ax.plot(t, [p["recall"] for p in pts], color=colour, lw=1, ls="--", alpha=0.7)
    cfg = doc["config"]
    for x in cfg.get("report_thresholds", []):
        ax.axvline(x, color="0.8", lw=0.8, zorder=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"relaxed threshold ({cfg['iou_weight']:g}·IoU + {cfg['text_weight']:g}·TextSim)")
    ax.set_ylabel("micro F1 (dotted: precision, dashed: recall)")
    ax.set_title("Span F1 vs relaxed-match threshold (1.00 = exact)")
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
