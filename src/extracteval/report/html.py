"""A self-contained HTML report: inline CSS, figures as base64 PNG, no script, no external request.

It must render inside the MLflow UI's sandboxed artifact viewer (an iframe without scripts), so
it uses no JavaScript at all. Every string that comes from the user — field names, model names,
values, record ids, file names, warnings — goes through `html.escape`, including attribute
values; nothing user-supplied is ever written raw.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_report"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;margin-bottom:16px}table{border-collapse:collapse;font-size:12.5px;margin:4px 0 8px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f4f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}tr.bad td{background:#fde8e8}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%;height:auto;border:1px solid #eee}
.scroll{max-width:100%;overflow-x:auto}.scroll table{margin:0}th{position:sticky;top:0;white-space:nowrap}
td.num,td:nth-child(-n+2){white-space:nowrap}
.note{color:#555;font-size:12px}ul{margin:4px 0 8px 18px;padding:0}
.tier-excellent{color:#0a7d28;font-weight:600}.tier-good{color:#9a6b00;font-weight:600}.tier-needs_improvement{color:#b3261e;font-weight:600}
"""

MAX_ROWS = 2000


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


# ratio columns are shown as percentages with one decimal, as everywhere else
PERCENT_COLUMNS = frozenset({
    "precision", "recall", "f1", "accuracy", "micro_f1", "micro_precision", "micro_recall", "f1_ci_low", "f1_ci_high",
    "exact_match_rate", "best_f1", "ci_low", "ci_high",
})


_RATE_SUFFIXES = ("_rate", "_f1", "_precision", "_recall", "_accuracy", "completeness", "hallucination")


def _is_rate_column(column: str) -> bool:
    """Ratio columns (shown as percentages): the listed names and any `…_rate`, `…_f1`, … column."""
    return column in PERCENT_COLUMNS or column.endswith(_RATE_SUFFIXES)


def _cell(v: Any, column: str = "") -> tuple[str, bool]:
    """(escaped text, numeric?) of one table cell."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        # an undefined ratio (NaN under `zero_division="nan"`) reads `n/a`; no value at all stays blank
        return ("n/a", True) if v is not None and _is_rate_column(column) else ("", False)
    if isinstance(v, bool):
        return _e("yes" if v else "no"), False
    if isinstance(v, float):
        if _is_rate_column(column):
            return _e(f"{100.0 * v:.1f}%"), True
        return _e(str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.4f}".rstrip("0").rstrip(".")), True
    if isinstance(v, int):
        return _e(v), True
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return _cell(v.item(), column)
        except (ValueError, AttributeError):
            pass
    return _e(v), False


def _table(frame: Any, status_column: str | None = None) -> str:
    cols = [str(c) for c in frame.columns]
    out = ['<div class="scroll"><table><thead><tr>', *(f"<th>{_e(c)}</th>" for c in cols), "</tr></thead><tbody>"]
    if status_column is not None and status_column in frame.columns and len(frame):
        # the failed rows first (they are what a reader looks for), in their order; then the rest
        bad_rows = frame[status_column].isin([False, "failed", "FAILED"]).to_numpy()
        frame = frame.iloc[(~bad_rows).argsort(kind="stable")]
    shown = frame.iloc[:MAX_ROWS]
    # cells are formatted column by column from plain Python lists: `to_dict("records")`
    # boxes every cell one at a time (slow for Arrow-backed strings: a third of a second for a
    # 200-field report, three reports per evaluation)
    cells = []
    for c, name in zip(shown.columns, cols):
        formatted = [_cell(v, name) for v in shown[c].tolist()]
        if name == "tier":
            cells.append([f'<td class="tier-{_e(t)}">{t.replace("_", " ")}</td>' if t else "<td></td>" for t, _ in formatted])
        else:
            cells.append([f'<td class="num">{t}</td>' if num else f"<td>{t}</td>" for t, num in formatted])
    status = shown[status_column].tolist() if status_column is not None and status_column in shown.columns else None
    for i in range(len(shown)):
        bad = status is not None and status[i] in (False, "failed", "FAILED")
        out.append('<tr class="bad">' if bad else "<tr>")
        out.extend(col[i] for col in cells)
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if len(frame) > MAX_ROWS:
        out.append(f'<p class="note">{len(frame) - MAX_ROWS} more rows in the CSV artifact.</p>')
    return "".join(out)


def render_report(
    *,
    title: str,
    subtitle: str = "",
    sections: Sequence[Any] = (),
    figures: Mapping[str, bytes] | None = None,
    meta: Mapping[str, Any] | None = None,
    figures_after: int = 1,
) -> str:
    """The report as one HTML string: the first `figures_after` sections, the figures, the rest.

    Args:
        title: page heading (escaped).
        subtitle: one line under it (escaped).
        sections: `extracteval.mlflow.adapters.Section` objects (title + table / text / items).
        figures: name → PNG bytes, embedded as data: URIs.
        meta: key → value lines shown at the end under "Run details" (run ids, digests, version).
    """
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        # the report needs nothing from outside: forbid it outright
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    if subtitle:
        parts.append(f'<div class="sub">{_e(subtitle)}</div>')
    sections = list(sections)
    for s in sections[:figures_after]:
        parts.append(_section(s))
    for name, png in (figures or {}).items():
        data = base64.b64encode(png).decode("ascii")
        label = name.rsplit(".", 1)[0].replace("_", " ")
        width = _display_width(png)
        size = f' width="{width}"' if width else ""
        parts.append(f"<h2>Figure: {_e(label)}</h2><img alt=\"{_e(label)}\"{size} src=\"data:image/png;base64,{data}\">")
    for s in sections[figures_after:]:
        parts.append(_section(s))
    if meta:  # run ids, digests and version: a footnote, so that the verdict is the first thing in the viewer
        parts.append('<h2>Run details</h2><table class="meta">' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in meta.items())
                     + "</table>")
    parts.append('<p class="note">Generated by extracteval.</p></body></html>')
    return "".join(parts)


def _display_width(png: bytes) -> int | None:
    """Half the PNG's pixel width (figures are drawn at twice their size for sharp high-density
    screens, shown at their nominal size); None when the bytes are not a PNG."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return max(1, int.from_bytes(png[16:20], "big") // 2)


def _section(s: Any) -> str:
    out = [f"<h2>{_e(s.title)}</h2>"]
    if s.text:
        out.append(f"<pre>{_e(s.text)}</pre>")
    if s.items:
        out.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in s.items) + "</ul>")
    if s.table is not None and len(s.table):
        out.append(_table(s.table, s.status_column))
    return "".join(out)
