"""Views of a cross-run leaderboard document (`TrackingLeaderboard.to_dict()`): terminal text,
CSV rows, a self-contained HTML page and two PNG charts.

Input is the plain `--json` document, so every view shows exactly what `--json` holds.
matplotlib is imported inside the figure functions only.
"""

from __future__ import annotations

import base64
import html
import time
from collections.abc import Mapping
from typing import Any

from extracteval.core.ranking import format_wins
from extracteval.core.significance import BORDERLINE, NOT_SIGNIFICANT, SIGNIFICANT
from extracteval.report.terminal import UNDEFINED, count_of, percent, signed_points, table

__all__ = ["render_terminal", "ranking_rows", "winner_rows", "render_html", "overall_chart", "item_heatmap"]

_TIER_LABEL = {"excellent": "excellent", "good": "good", "needs_improvement": "needs improvement"}
_TIER_HEX = {"green": "#0a7d28", "yellow": "#9a6b00", "red": "#b3261e"}
_BADGE_HEX = {"green": "#0a7d28", "blue": "#1f5fbf"}

# the verdict of a pair with the rank above, in the table's short words
_SIGNIFICANCE_CELL = {SIGNIFICANT: "significant", BORDERLINE: "borderline (bound at 0)", NOT_SIGNIFICANT: "≈ not significant"}


def _ci_text(ci: Mapping[str, Any] | None) -> str:
    if not ci:
        return "-"
    if ci["low"] is None or ci["high"] is None or ci["low"] != ci["low"] or ci["high"] != ci["high"]:
        return UNDEFINED  # fewer than half the resamples define the metric
    return f"[{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]"


def _groups(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(doc.get("groups") or [])


def _when(ms: Any) -> str:
    """A run's start time (ms since the epoch) as UTC text; '' when unknown."""
    if not ms:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(ms) / 1000))


def _selection(doc: Mapping[str, Any]) -> str:
    """'3 of 9 runs ranked (latest run per model; 6 earlier runs superseded)' or '9 runs ranked (all runs)'."""
    n_ranked = doc.get("n_ranked", doc["n_runs"])
    if doc.get("run_selection") == "all runs":
        return f"{count_of(n_ranked, 'run')} ranked (all runs)"
    sup = doc.get("n_superseded", 0)
    head = f"{n_ranked} of {count_of(doc['n_runs'], 'run')} ranked" if n_ranked != doc["n_runs"] else f"{count_of(n_ranked, 'run')} ranked"
    return f"{head} (latest run per model" + (f"; {sup} earlier {'run' if sup == 1 else 'runs'} superseded)" if sup else ")")


SUPERSEDED_NOTE = "not ranked: a later run of the same model, truth and config is ranked instead; --all-runs ranks every run"


def _columns(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(header, source) of the metric columns: `overall:<k>` or `metric:<key>`."""
    if doc["primary_metric"].startswith("overall/"):  # a macro score over items, shown with its P, R and accuracy
        return [("P", "overall:precision"), ("R", "overall:recall"), ("F1", "overall:f1"), ("Acc", "overall:accuracy")]
    cols = [(doc["primary_metric"], "score")]
    cols += [(k, f"tie:{k}") for k in doc["tie_breaks"] if k not in ("field_wins", "model")]
    return cols


def _value(entry: Mapping[str, Any], source: str) -> float | None:
    kind, _, key = source.partition(":")
    if kind == "score":
        return entry["score"]
    if kind == "overall":
        return entry["overall"].get(key)
    return entry["tie_breaks"].get(key)


def ranking_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One flat row per ranked run (every group), for the CSV."""
    rows = []
    for gi, g in enumerate(_groups(doc), start=1):
        sig = {c["lower"]: c for c in g.get("comparisons", ())}
        for e in g["ranking"]:
            row: dict[str, Any] = {
                "group": gi, "rank": e["rank"], "status": "ranked", "model": e["model"], "run_id": e["run_id"], "superseded_by": "",
                "score": e["score"],
            }
            for k, v in e["overall"].items():
                row[f"overall_{k}"] = v
            for k, v in e["micro"].items():
                row[f"micro_{k}"] = v
            for k, v in e["tie_breaks"].items():
                row[k] = v
            ci = e.get("ci")
            row.update({
                "field_wins": e["field_wins"], "wins": e["wins_label"], "tier": e["tier"],
                "ci_low": None if not ci else ci["low"], "ci_high": None if not ci else ci["high"],
                "vs_previous": sig[e["model"]]["verdict"] if e["model"] in sig else "",
                "truth_digest": g["truth_digest"], "config_digest": g["config_digest"],
            })
            rows.append(row)
        for s in g.get("superseded", ()):
            # listed, not ranked: no rank, score or wins, and the run that replaced it
            rows.append({"group": gi, "rank": None, "status": "superseded", "model": s["model"], "run_id": s["run_id"],
                         "superseded_by": s["superseded_by"], "started": _when(s["start_time"]),
                         "truth_digest": g["truth_digest"], "config_digest": g["config_digest"]})
    return rows


def winner_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for gi, g in enumerate(_groups(doc), start=1):
        for item, w in g["field_winners"].items():
            best = w.get("best") or {}
            rows.append({"group": gi, "item": item, "kind": w["kind"], "winners": ";".join(w["winners"]), "win_share": w["win_share"],
                         "badge": w["badge"] or "", "best": best.get("f1")})
    return rows


def render_terminal(doc: Mapping[str, Any], *, use_colour: bool = False) -> str:
    """Ranked table per group, the adjacent-pair verdicts and the item winners."""
    label = doc.get("item_label", "fields")
    cols = _columns(doc)
    out = [f"extracteval leaderboard · {doc.get('experiment', '')} · task {doc['task']} · {_selection(doc)} · ranked by {doc['primary_metric']}"]
    for gi, g in enumerate(_groups(doc), start=1):
        out.append("")
        if len(doc["groups"]) > 1:
            out.append(f"group {gi}: truth {g['truth_digest'][:12]}…  config {g['config_digest'][:12]}…")
        sig = {c["lower"]: c for c in g.get("comparisons", ())}
        headers = ["rank", "model", *(h for h, _ in cols), "tier", f"{label} won", "95% CI", "vs above"]
        rows, colours = [], []
        for e in g["ranking"]:
            c = sig.get(e["model"])
            rows.append([
                f"#{e['rank']}", e["model"], *(percent(_value(e, s)) for _, s in cols), _TIER_LABEL[e["tier"]],
                f"Won {format_wins(e['field_wins'])} of {e['items_scored']} {label}", _ci_text(e.get("ci")),
                "" if c is None else _SIGNIFICANCE_CELL.get(c.get("verdict"), "≈ not significant"),
            ])
            colours.append([None, None, *([None] * len(cols)), e["tier_colour"], None, None, None])
        out.append(table(headers, rows, align="rl" + "r" * len(cols) + "llrl", colours=colours, use_colour=use_colour))
        winners = g["field_winners"]
        if winners:
            kinds = [w["kind"] for w in winners.values()]
            out.append("")
            out.append(f"{label.rstrip('s')} winners: " + ", ".join(f"{kinds.count(k)} {k}" for k in ("sole", "shared", "universal", "none") if kinds.count(k)))
            shown = [(i, w) for i, w in winners.items() if w["kind"] in ("sole", "shared")]
            for item, w in shown[:30]:
                out.append(f"  {item}: {', '.join(w['winners'])}" + (" (shared)" if w["kind"] == "shared" else ""))
            if len(shown) > 30:
                out.append(f"  … {len(shown) - 30} more in field_winners.csv")
        superseded = g.get("superseded") or []
        if superseded:
            out.append("")
            out.append(f"superseded runs ({len(superseded)}) — {SUPERSEDED_NOTE}:")
            srows = [[s["model"], s["run_id"], _when(s["start_time"]), s["superseded_by"]] for s in superseded[:30]]
            out.append(table(["model", "run id", "started", "superseded by"], srows, align="llll"))
            if len(superseded) > 30:
                out.append(f"  … {len(superseded) - 30} more in leaderboard.csv")
    for note in doc.get("notes", ()):
        out.append(f"note: {note}")
    for w in doc.get("warnings", ()):
        out.append(f"warning: {w}")
    return "\n".join(out)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin-bottom:16px}table{border-collapse:collapse;font-size:12.5px;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f4f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}img{max-width:100%;border:1px solid #eee}
.badge{display:inline-block;border-radius:9px;padding:0 7px;color:#fff;font-size:11.5px;margin:0 2px}
.tier{font-weight:600}.note{color:#555;font-size:12px}
"""


def _badge(text: str, colour: str | None) -> str:
    if not colour:
        return _e(text)
    return f'<span class="badge" style="background:{_BADGE_HEX.get(colour, "#777")}">{_e(text)}</span>'


def render_html(doc: Mapping[str, Any], figures: Mapping[str, bytes] | None = None) -> str:
    """A self-contained page (inline CSS, PNGs as data URIs, no script); every string escaped."""
    label = doc.get("item_label", "fields")
    cols = _columns(doc)
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{_e('extracteval leaderboard · ' + str(doc.get('experiment', '')))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e('Leaderboard · ' + str(doc.get('experiment', '')))}</h1>",
        "<div class=\"sub\">" + _e(f"task {doc['task']} · {_selection(doc)} · ranked by {doc['primary_metric']}, then " + ", ".join(doc["tie_breaks"])) + "</div>",
    ]
    for gi, g in enumerate(_groups(doc), start=1):
        title = "Ranking" if len(doc["groups"]) == 1 else f"Ranking — group {gi}"
        parts.append(f"<h2>{_e(title)}</h2>")
        parts.append(f"<div class=\"note\">truth digest {_e(g['truth_digest'])} · config digest {_e(g['config_digest'])}</div>")
        sig = {c["lower"]: c for c in g.get("comparisons", ())}
        head = ["rank", "model", *(h for h, _ in cols), "tier", f"{label} won", "95% CI", "vs the run above", "run id"]
        parts.append("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>")
        for e in g["ranking"]:
            c = sig.get(e["model"])
            tier_colour = _TIER_HEX.get(e["tier_colour"], "#333")
            cells = [f"<td class=\"num\">#{_e(e['rank'])}</td>", f"<td>{_e(e['model'])}</td>"]
            cells += [f"<td class=\"num\">{_e(percent(_value(e, s)))}</td>" for _, s in cols]
            cells.append(f"<td class=\"tier\" style=\"color:{tier_colour}\">{_e(_TIER_LABEL[e['tier']])}</td>")
            wins = f"Won {format_wins(e['field_wins'])} of {e['items_scored']}"
            cells.append(f"<td>{_e(wins)}</td>")
            cells.append(f"<td class=\"num\">{_e(_ci_text(e.get('ci')))}</td>")
            d = None if c is None else c["difference"]
            cells.append("<td></td>" if c is None else
                         f"<td>{_e(c['verdict'])} (Δ {signed_points(d['estimate'])}, CI [{signed_points(d['low'])}, {signed_points(d['high'])}])</td>")
            cells.append(f"<td><code>{_e(e['run_id'])}</code></td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</table>")
        if g["field_winners"]:
            parts.append(f"<h2>{_e((label[:-1] if label.endswith('s') else label).capitalize() + ' winners')}</h2>")
            parts.append("<div class=\"note\">green: sole winner (1 win) · blue: shared (1/k each) or universal tie (no win)</div>")
            parts.append("<table><tr><th>" + _e(label[:-1] if label.endswith("s") else label) + "</th><th>winner(s)</th><th>kind</th><th>win share</th><th>best</th></tr>")
            for item, w in g["field_winners"].items():
                badges = " ".join(_badge(m, w["badge"]) for m in w["winners"]) or _e("—")
                best = (w.get("best") or {}).get("f1")
                parts.append(
                    f"<tr><td>{_e(item)}</td><td>{badges}</td><td>{_badge(w['kind'], w['badge'])}</td>"
                    f"<td class=\"num\">{_e(format_wins(w['win_share']))}</td><td class=\"num\">{_e(percent(best))}</td></tr>"
                )
            parts.append("</table>")
        superseded = g.get("superseded") or []
        if superseded:
            parts.append(f"<h2>{_e('Superseded runs' + ('' if len(doc['groups']) == 1 else f' — group {gi}'))}</h2>")
            parts.append(f"<div class=\"note\">{_e(SUPERSEDED_NOTE[0].upper() + SUPERSEDED_NOTE[1:])}.</div>")
            parts.append("<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in ("model", "status", "run id", "started", "superseded by")) + "</tr>")
            for s in superseded:
                parts.append(f"<tr><td>{_e(s['model'])}</td><td>superseded</td><td><code>{_e(s['run_id'])}</code></td>"
                             f"<td>{_e(_when(s['start_time']))}</td><td><code>{_e(s['superseded_by'])}</code></td></tr>")
            parts.append("</table>")
    for name, png in (figures or {}).items():
        parts.append(f"<h2>{_e(name)}</h2><img alt=\"{_e(name)}\" src=\"data:image/png;base64,{base64.b64encode(png).decode('ascii')}\">")
    notes = [*doc.get("notes", ()), *doc.get("warnings", ())]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>")
    return "".join(parts)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    return Figure


def _txt(s: Any, n: int = 40) -> str:
    s = str(s)
    s = s if len(s) <= n else s[: n - 1] + "…"
    return s.replace("$", r"\$")  # `$…$` would switch matplotlib to mathtext


def overall_chart(doc: Mapping[str, Any], group: int = 0) -> Any:
    """Horizontal bars of each run's primary metric in rank order, with bootstrap CI whiskers."""
    import numpy as np

    Figure = _pyplot()
    g = _groups(doc)[group]
    entries = g["ranking"]
    n = max(len(entries), 1)
    height = min(1.6 + 0.28 * n, 80.0)
    fig = Figure(figsize=(8.0, height), dpi=72)
    ax = fig.add_subplot()
    longest = max((len(_txt(e["model"])) for e in entries), default=4)
    fig.subplots_adjust(left=min(0.55, (0.35 + 0.075 * longest) / 8.0), right=0.97, top=1 - min(0.3, 0.5 / height), bottom=min(0.3, 0.55 / height))
    y = np.arange(len(entries))
    score = np.array([e["score"] for e in entries], dtype=float)
    colours = [_TIER_HEX.get(e["tier_colour"], "#777") for e in entries]
    lo = np.array([e["ci"]["low"] if e.get("ci") else np.nan for e in entries], dtype=float)
    hi = np.array([e["ci"]["high"] if e.get("ci") else np.nan for e in entries], dtype=float)
    xerr = None
    if len(entries) and not np.all(np.isnan(lo)):
        xerr = np.vstack([np.clip(score - np.nan_to_num(lo, nan=score), 0, None), np.clip(np.nan_to_num(hi, nan=score) - score, 0, None)])
    ax.barh(y, score, color=colours, xerr=xerr, error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
    ax.set_ylim(len(entries) - 0.5, -0.5)
    fs = 8 if len(entries) <= 60 else 5
    for i, e in enumerate(entries):
        ax.text(-0.01, i, _txt(f"#{e['rank']} {e['model']}"), transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=fs)
    ax.set_yticks([])
    ax.set_xlim(0, 1.05)
    ax.set_xlabel(_txt(f"{doc['primary_metric']} (colour: tier; whiskers: bootstrap 95% interval)", 90))
    ax.set_title(_txt(f"{doc.get('experiment', '')}: {doc['primary_metric']} by run", 90))
    ax.grid(axis="x", alpha=0.3)
    return fig


def _colour_range(pct: Any) -> tuple[float, float]:
    """The colour scale's ends for scores in percent: from the lowest score (down to a multiple
    of 5) to 100, at least 10 points wide; 0–100 when there is no score."""
    import numpy as np

    finite = pct[np.isfinite(pct)]
    if not finite.size:
        return 0.0, 100.0
    lo = 5.0 * np.floor(float(finite.min()) / 5.0)
    hi = max(100.0, float(finite.max()))
    return (min(lo, hi - 10.0), hi)


def item_heatmap(doc: Mapping[str, Any], item_scores: Mapping[str, Mapping[str, float]], group: int = 0) -> Any:
    """Models (rank order) × items heatmap of the per-item winner metric (F1 for fields).

    item_scores: run id → item → value."""
    import numpy as np

    Figure = _pyplot()
    g = _groups(doc)[group]
    models = [e["model"] for e in g["ranking"]]
    run_ids = [e["run_id"] for e in g["ranking"]]
    items = list(g["field_winners"]) or sorted({i for rid in run_ids for i in item_scores.get(rid, {})})
    grid = np.full((len(models), len(items)), np.nan)
    for r, rid in enumerate(run_ids):
        row = item_scores.get(rid, {})
        for c, it in enumerate(items):
            if it in row:
                grid[r, c] = row[it]
    # cells wide enough for a printed score (0.6 in) up to 40 items, narrower beyond; the item
    # names stand above the columns at 45°, so the top margin grows with the longest name
    n_items, n_models = max(len(items), 1), max(len(models), 1)
    cell_w = 0.6 if n_items <= 40 else 0.3
    longest = max((len(_txt(m)) for m in models), default=4)
    longest_item = max((len(_txt(it, 24)) for it in items), default=4)
    left_in = 0.4 + 0.08 * longest
    top_in = 0.7 + 0.06 * longest_item
    width = min(left_in + cell_w * n_items + 1.4, 60.0)
    height = min(top_in + 0.4 * n_models + 0.5, 80.0)
    fig = Figure(figsize=(max(width, 6.0), height), dpi=72)
    width = max(width, 6.0)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=min(0.5, left_in / width), right=1 - 1.3 / width, top=1 - min(0.6, top_in / height), bottom=min(0.3, 0.3 / height))
    fig.suptitle(_txt(f"{doc.get('experiment', '')}: per-{doc.get('item_label', 'fields').rstrip('s')} score by run (rank order)", 90), y=0.995, fontsize=10)
    # percent, on a colour-blind-safe sequential scale (viridis: dark → light, legible in grey too)
    # spread over the scores there are, so that 65 and 100 do not look alike
    pct = 100.0 * grid
    lo, hi = _colour_range(pct)
    im = ax.imshow(np.ma.masked_invalid(pct), aspect="auto", cmap="viridis", vmin=lo, vmax=hi, interpolation="nearest")
    cbar = fig.colorbar(im, ax=ax, fraction=0.9 / width, pad=0.15 / width)
    cbar.ax.tick_params(labelsize=7)
    cbar.set_label("score (%)", fontsize=8)
    fs = 9 if n_models <= 20 and n_items <= 40 else (7 if n_items <= 80 else 5)
    ax.set_xticks([])
    ax.set_yticks([])
    for c, it in enumerate(items):
        ax.text(c, -0.6, _txt(it, 24), rotation=45, ha="left", va="bottom", fontsize=fs)
    for r, m in enumerate(models):
        ax.text(-0.6, r, _txt(m), ha="right", va="center", fontsize=fs)
    if len(models) * len(items) <= 1000:
        for r in range(len(models)):
            for c in range(len(items)):
                if not np.isnan(pct[r, c]):
                    v = pct[r, c]
                    ax.text(c, r, f"{v:.0f}", ha="center", va="center", fontsize=max(fs - 1, 5),
                            color="white" if (v - lo) < 0.55 * (hi - lo) else "black")  # viridis is dark below the middle
    ax.set_xlim(-0.5, len(items) - 0.5)
    ax.set_ylim(len(models) - 0.5, -0.5)
    return fig
