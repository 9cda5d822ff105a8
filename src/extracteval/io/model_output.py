"""A model's raw output read as JSON: the whole text, else the first ```json fence that holds JSON,
else the first balanced JSON value in the prose around it, at any nesting depth. Never raises on
model output: a failure is a `ParsedOutput` with `ok=False` and the reason. Every task reads
model output cells through `parse_json_output` (`io.cells.record_object`), `structured` and
`toolcalls` their raw outputs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extracteval.io.json_text import _loads_iterative, loads
from extracteval.core.jsonparse import loads_exact
from extracteval.core.normalize import exact_float

__all__ = ["ParsedOutput", "parse_json_output", "parse_json_text", "first_fence_body", "loads_any_depth", "loads_std_any_depth", "JSON_START"]


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    """A parsed model output: `ok` (JSON found), `extracted` (only after dropping fences/prose)."""

    ok: bool
    value: Any = None
    extracted: bool = False
    error: str | None = None


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)


def loads_any_depth(text: str) -> Any:
    """`json.loads` at any depth (`io.json_text.loads`: orjson, then `json`, then an iterative
    parser for documents nested deeper than the recursion limit); `ValueError` for text that is
    not one JSON document."""
    return loads(text)


def _first_json(text: str) -> Any:
    """The first JSON object or array inside `text` (prose before/after allowed)."""
    skip_until = -1
    # an object or array ends with a closing bracket after its start: none after a position, no
    # document from there on (a truncated output is given up at once, not tried at every bracket)
    last_close = max(text.rfind("}"), text.rfind("]"))
    if last_close < 0:
        raise ValueError("no JSON object or array found")
    dec = json.JSONDecoder(parse_float=exact_float)
    for m in re.finditer(r"[\[{]", text):
        if m.start() >= last_close:
            break
        if m.start() < skip_until:
            continue
        try:
            value, _ = dec.raw_decode(text, m.start())
            return value
        except RecursionError:
            span = _balanced_span(text, m.start())
            try:
                return _loads_iterative(span)
            except ValueError:
                # the brackets nested inside a failed deep span fail too: retrying each of
                # them made a 10,000-bracket output cost O(n²) (minutes for one record)
                skip_until = m.start() + len(span)
                continue
        except ValueError:
            continue
    raise ValueError("no JSON object or array found")


def _balanced_span(text: str, start: int) -> str:
    depth, i, in_str, esc = 0, start, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def parse_json_output(raw: Any) -> ParsedOutput:
    """Parse one model output. Never raises: failures come back as `ok=False` with a reason.

    Examples:
        >>> parse_json_output('Here you go:\\n```json\\n{"a": 1}\\n```').extracted
        True
        >>> parse_json_output('{"a": ').ok
        False
    """
    if raw is None:
        return ParsedOutput(ok=False, error="no output")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return ParsedOutput(ok=False, error="output is not UTF-8 text")
    if not isinstance(raw, str):
        if isinstance(raw, float) and math.isnan(raw):
            return ParsedOutput(ok=False, error="no output")
        return ParsedOutput(ok=True, value=raw)  # already an object (a JSONL value, a dict)
    text = raw.strip()
    if not text:
        return ParsedOutput(ok=False, error="empty output")
    return parse_json_text(text, loads_any_depth)


def first_fence_body(text: str) -> str | None:
    """The body of the first ``` fence in `text`, stripped (None where there is no fence): what
    `parse_json_text` reads first of a text that does not start as JSON."""
    m = _FENCE.search(text)
    return None if m is None else m.group(2).strip()


def loads_std_any_depth(text: str) -> Any:
    """`loads_any_depth` for a text orjson has already refused: `json` straight away."""
    try:
        return loads_exact(text) if not text.startswith("\ufeff") else json.loads(text)
    except RecursionError:
        return _loads_iterative(text)


def parse_json_text(text: str, loads: Callable[[str], Any]) -> ParsedOutput:
    """`parse_json_output` of a stripped, non-empty text; `loads` reads the whole text."""
    first_error = None
    if text[0] in JSON_START:
        try:
            return ParsedOutput(ok=True, value=loads(text))
        except (ValueError, RecursionError, MemoryError) as e:
            first_error = str(e)
    # else no JSON document starts there: the parser's message is asked for only if nothing is found
    for m in _FENCE.finditer(text):
        body = m.group(2).strip()
        if not body:
            continue
        try:
            return ParsedOutput(ok=True, value=loads_any_depth(body), extracted=True)
        except (ValueError, RecursionError, MemoryError):
            continue
    try:
        return ParsedOutput(ok=True, value=_first_json(text), extracted=True)
    except (ValueError, RecursionError, MemoryError):
        pass
    if first_error is None:
        try:
            json.loads(text)
            first_error = "not one JSON document"  # unreachable: no JSON value starts with text[0]
        except ValueError as e:
            first_error = str(e)
    return ParsedOutput(ok=False, error=f"not valid JSON ({first_error[:120]})")


# The first character of every text `json.loads` reads (after the whitespace `strip` removes):
# a string, object, array, literal (true, false, null, NaN, Infinity) or number.
JSON_START = frozenset('"{[tfnNI-0123456789')
