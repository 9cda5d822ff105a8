"""What every `extracteval score <task>` prints at the end: the result as one JSON document
(`--json`), or the task's terminal view followed by the files written to `--output`."""

from __future__ import annotations

import sys
from extracteval.core import strict_json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["json_default", "print_result"]


def json_default(o: Any) -> Any:
    """JSON for the values a result document may hold besides JSON's own: numpy scalars as
    numbers, sets and tuples as lists, anything else as its text."""
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def print_result(doc: dict[str, Any], *, as_json: bool, render: Callable[[dict[str, Any]], str], output: str | None = None,
                 written: Sequence[str] = (), default: Callable[[Any], Any] | None = json_default) -> None:
    """Print `doc` as JSON (`as_json`), else `render(doc)` and, when `output` is set, the line
    naming the files written there."""
    if as_json:
        sys.stdout.write(strict_json.dumps(doc, indent=2, ensure_ascii=False, default=default))
        sys.stdout.write("\n")
        return
    print(render(doc))
    if output:
        print(f"\nwrote {output}/{', '.join(written)}")
