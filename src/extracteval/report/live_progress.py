"""Live progress for long scoring runs: running metrics on one line while records are scored.

`[42/100] structured gpt-4o json_valid_rate=95.2% exact_match_rate=81.0%` on one line, rewritten
in place, on stderr, only when stderr is a terminal (`--progress auto`, the default) or when asked
for (`--progress always`, which also makes it testable with any stream).
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from extracteval.report.terminal import terminal_safe

__all__ = ["LiveProgress", "add_progress_argument"]


def add_progress_argument(p: Any) -> None:
    p.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="live progress on stderr: auto = only when stderr is a terminal (default)",
    )


class LiveProgress:
    """A callback `(done, total, model, metrics)` that prints throttled progress lines.

    Args:
        track: task name shown on the line (`structured`, `toolcalls`).
        keys: the running metrics to show, in order.
        mode: `auto` (only on a TTY), `always`, `never`.
        stream: where to write (default stderr).
        interval: minimum seconds between two updates (the last record always prints).
    """

    def __init__(self, track: str, keys: tuple[str, ...], *, mode: str = "auto", stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.track = track
        self.keys = keys
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = mode == "always" or (mode == "auto" and bool(isatty()))
        self.tty = bool(isatty())
        self.interval = interval
        self._last = 0.0
        self.lines = 0

    def line(self, done: int, total: int, model: str, metrics: dict[str, float]) -> str:
        shown = " ".join(f"{k}={100 * metrics[k]:.1f}%" for k in self.keys if k in metrics)
        return f"[{done}/{total}] {self.track} {model} {shown}"

    def __call__(self, done: int, total: int, model: str, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done != total and done != 1 and now - self._last < self.interval:
            return
        self._last = now
        text = terminal_safe(self.line(done, total, model, metrics), colours=False)  # a model name's escapes written out
        if self.tty:
            end = "\n" if done == total else ""
            self.stream.write("\r\x1b[2K" + text + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.lines += 1
