"""Plain-text tables for the terminal (colour only when writing to a TTY)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TextIO


__all__ = ["table", "percent", "signed_points", "UNDEFINED", "colour", "comparison_line", "terminal_safe", "SafeStream"]

# C0 and C1 control characters but the line break and the tab; a colour sequence (SGR: ESC [ n m)
# is let through where colours are (they only colour text), any other escape sequence is not
_CONTROL = re.compile(r"\x1b\[[0-9;]{0,16}m|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str, *, colours: bool = True) -> str:
    """`text` with every control character a name or value could carry written out (`\\u001b`), so
    that no file, model or field name can move the cursor, retitle the window, set the clipboard
    or hide a line; colour sequences are kept where `colours`."""
    def shown(m: re.Match[str]) -> str:
        s = m.group()
        if len(s) > 1:  # a colour sequence
            return s if colours else "\\u001b" + s[1:]
        return f"\\u{ord(s):04x}"  # as JSON writes it: a `--json` document stays valid and exact

    return _CONTROL.sub(shown, text)


class SafeStream:
    """A text stream that writes `terminal_safe` text to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_safe(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

_ANSI = {"green": "32", "yellow": "33", "red": "31", "blue": "34", "bold": "1", "dim": "2"}


def count_of(n: int, word: str, plural: str | None = None) -> str:
    """`1 run`, `3 runs`, `0 groups`: a count with its noun in the right number.

    >>> count_of(1, "run"), count_of(3, "run"), count_of(2, "entry", "entries")
    ('1 run', '3 runs', '2 entries')
    """
    return f"{n} {word if n == 1 else plural or word + 's'}"


UNDEFINED = "n/a"  # how every report shows an undefined number (NaN: a ratio over nothing under `zero_division="nan"`)


def percent(x: float | None) -> str:
    """Percentages with one decimal, as every report shows them; `-` for no value, `n/a` for an undefined one."""
    return "-" if x is None else UNDEFINED if x != x else f"{100.0 * x:.1f}%"


def signed_points(x: float | None) -> str:
    """A difference of ratios in percentage points with its sign (`+1.5`); `n/a` when undefined."""
    return UNDEFINED if x is None or x != x else f"{100 * x:+.1f}"


def colour(text: str, name: str | None, enabled: bool) -> str:
    if not enabled or not name or name not in _ANSI:
        return text
    return f"\x1b[{_ANSI[name]}m{text}\x1b[0m"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, align: str | None = None, colours: Sequence[Sequence[str | None]] | None = None,
          use_colour: bool = False) -> str:
    """A left/right aligned text table. `align` has one letter per column: `l` or `r`."""
    align = align or "l" * len(headers)
    # names and values written out before the columns are measured (the stream would lengthen them after)
    headers = [terminal_safe(str(h), colours=False) for h in headers]
    rows = [[terminal_safe(str(c), colours=False) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], len(cell))

    def fmt(cells: Sequence[str], cols: Sequence[str | None] | None = None) -> str:
        out = []
        for i, c in enumerate(cells):
            padded = c.rjust(widths[i]) if align[i] == "r" else c.ljust(widths[i])
            out.append(colour(padded, cols[i] if cols else None, use_colour))
        return "  ".join(out).rstrip()

    lines = [fmt(headers), "  ".join("-" * w for w in widths)]
    for k, r in enumerate(rows):
        lines.append(fmt(r, colours[k] if colours else None))
    return "\n".join(lines)


def comparison_line(c: Any, *, confidence: bool = True) -> str:
    """One adjacent-rank comparison of a result document (`comparisons`): the F1 difference in
    points, its interval (with its confidence level when asked) and the verdict."""
    d = c["difference"]
    level = f"{int(round(100 * d['confidence']))}% " if confidence else ""
    return (f"{c['higher']} vs {c['lower']}: ΔF1 {signed_points(d['estimate'])} points, "
            f"{level}CI [{signed_points(d['low'])}, {signed_points(d['high'])}] — {c['verdict']}")
