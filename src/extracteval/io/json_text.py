"""JSON text at any depth: `json.loads`, with an iterative fallback for nesting deeper than the
standard parser's recursion allows. Every reader of JSON input (records, JSONL tables, entity
lists, streamed chunks) parses through `loads`, so a 10,000-deep value is read, not a crash.

The fallback accepts what `json.loads` accepts (NaN/Infinity included; a repeated key keeps its
last value) and raises `ValueError` with a position on invalid text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from extracteval.core.normalize import exact_float
from extracteval.core.jsonparse import FAST_PARSER, loads_fast, may_misread_numbers
from extracteval.errors import InputError

__all__ = ["loads", "jsonl_values", "jsonl_text_values", "read_record_file", "cap_depth", "MAX_VALUE_DEPTH", "check_record_keys", "check_json_file_keys", "repeated_keys"]

_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_WS = re.compile(r"[ \t\n\r]*")
_CONSTANTS = {"true": True, "false": False, "null": None, "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def loads(text: str) -> Any:
    """`json.loads`, falling back to an iterative parser when the nesting is deeper than the
    standard parser's recursion allows (a 10,000-deep object is valid JSON)."""
    try:
        return loads_fast(text)
    except RecursionError:
        return _loads_iterative(text)


def jsonl_values(path: Path, *, records: bool = False, unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSONL file, streamed (UTF-8, a BOM
    dropped; UTF-16/32 with their BOM). The streaming readers' one way through a file: invalid JSON names the file and line,
    non-UTF-8 bytes and a file that may not be read are one clear message too. With `records`
    (each line a table row) a line naming one key twice or a key without a name is refused; with
    `unique_keys` (each line a record of named keys) a line naming one key twice."""
    from extracteval.io.text_files import check_regular_file, text_encoding

    check_regular_file(path)
    try:
        with path.open(encoding=text_encoding(path)) as fh:
            yield from _line_values(path, fh, records=records, unique_keys=unique_keys, streamed=True)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: expected UTF-8 text, but found byte 0x{e.object[e.start]:02x}; save the file as UTF-8.") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied; cannot read the file.") from None


def jsonl_text_values(path: Path, text: str, *, records: bool = False, unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of JSONL `text` read from `path`,
    checked as `jsonl_values` checks them (invalid JSON names the file and line)."""
    yield from _line_values(path, text.splitlines(), records=records, unique_keys=unique_keys, streamed=False)


def read_record_file(path: str | Path) -> list[tuple[int, Any]]:
    """(line number, value) for each record of a JSON Lines file, or (position, value) for each
    element of a file holding one JSON array; blank lines are skipped, a key named twice in a
    record is refused, and an empty file or one without records is an error naming the file."""
    from extracteval.io.text_files import read_text

    p = Path(path)
    text = read_text(p)
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{p}: the file is empty; expected JSON Lines records.")
    if stripped.startswith("["):
        try:
            obj = loads(text)
        except ValueError:
            obj = None  # a JSONL file whose first record is an array: read line by line
        if isinstance(obj, list):
            if not obj:
                raise InputError(f"{p}: the file has no records (an empty JSON array).")
            check_json_file_keys(p, text, obj)
            return list(enumerate(obj, start=1))
    out = list(_line_values(p, text.splitlines(), records=False, unique_keys=True, streamed=True))
    if not out:
        raise InputError(f"{p}: the file has no records.")
    return out


# lines whose repeated-key check is made at once (one count over their text, one serialisation)
_KEY_CHECK_BATCH = 4096


def _line_values(path: Path, lines: Iterable[str], *, records: bool, unique_keys: bool, streamed: bool) -> Iterator[tuple[int, Any]]:
    """(line number, value) per non-blank line, each checked (`records`: a table row; `unique_keys`:
    no key named twice). The lines are parsed and checked a batch at a time (the repeated-key
    check once for the batch, line by line only where the batch could hold a repeat) and handed
    on in order, each before a later line's problem is raised: the consumer sees what a check line
    by line would have shown it, and raises its own errors first."""
    it = iter(lines)
    first = 1
    while True:
        chunk = list(islice(it, _KEY_CHECK_BATCH))
        if not chunk:
            return
        whole = _parse_whole(chunk)
        if whole is None:  # a blank line, invalid JSON, or a text the C parser could read otherwise
            yield from _line_by_line(path, chunk, first, records=records, unique_keys=unique_keys, streamed=streamed)
        else:
            text, values = whole
            batch = list(zip(range(first, first + len(chunk)), chunk, values))
            yield from _checked(path, batch, records=records, unique_keys=unique_keys, text=text)
        first += len(chunk)


def _parse_whole(chunk: list[str]) -> tuple[str, list[Any]] | None:
    """(the lines joined, each line's value) when the C parser reads every line as `json.loads`
    would: no line blank or invalid, none holding a number orjson could read otherwise (checked
    once over the joined text); None otherwise."""
    if not FAST_PARSER:
        return None
    import orjson

    text = "\n".join(chunk)
    if may_misread_numbers(text):
        return None
    try:
        return text, [orjson.loads(line) for line in chunk]
    except orjson.JSONDecodeError:  # blank, invalid, NaN, a lone surrogate, deeper than orjson reads
        return None


def _line_by_line(path: Path, chunk: list[str], first: int, *, records: bool, unique_keys: bool, streamed: bool) -> Iterator[tuple[int, Any]]:
    batch: list[tuple[int, str, Any]] = []
    for i, line in enumerate(chunk, start=first):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except ValueError as e:
            yield from _checked(path, batch, records=records, unique_keys=unique_keys)
            problem = (f"not valid JSON ({e}); expected one JSON object per line" if streamed
                       else f"expected one JSON object per line, but the line is not valid JSON ({e})")
            raise InputError(f"{path}: line {i}: {problem}.") from None
        batch.append((i, line, value))
    yield from _checked(path, batch, records=records, unique_keys=unique_keys)


def _checked(path: Path, batch: list[tuple[int, str, Any]], *, records: bool, unique_keys: bool, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """The batch's (line number, value) in order, each after its checks. A parser drops a repeated
    key, so a batch can hold a repeat only where its text holds more than its values account for:
    checked once for the batch (`_could_repeat`; `text` the batch's lines joined, when known),
    line by line only then."""
    if (records or unique_keys) and _may_fail(batch, records=records, text=text):
        for i, line, value in batch:
            if isinstance(value, dict):
                if records:
                    check_table_record(path, f"line {i}", line, value)
                else:
                    check_record_keys(path, f"line {i}", line, value)
            yield i, value
        return
    for i, _, value in batch:
        yield i, value


def _may_fail(batch: list[tuple[int, str, Any]], *, records: bool, text: str | None = None) -> bool:
    if text is not None and all(type(v) is dict for _, _, v in batch):
        values = [v for _, _, v in batch]
    else:
        dicts = [(line, v) for _, line, v in batch if isinstance(v, dict)]
        values = [v for _, v in dicts]
        text = "\n".join(line for line, _ in dicts)
    if not values:
        return False
    if records and any("" in v for v in values):
        return True
    return _could_repeat(text, values, sum(len(v) for v in values))




def _keys_in(value: Any) -> int:
    """How many keys the objects in `value` have, nested ones included."""
    n, stack = 0, [value]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            n += len(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n


def _could_repeat(text: str, value: Any, own_keys: int, *, outer_keys: int = 0) -> bool:
    """Whether `text` could name a key twice (`value` parsed from it; `own_keys` a cheap count of
    the records' own keys; `outer_keys` the keys of a wrapper around `value`). A parser drops a
    repeated key's earlier pair, colon and all, so the text then holds more colons than the value
    accounts for: one per key plus those written inside its strings. Text scans and a C
    serialiser only: no Python work per value on the usual path. Where the text has `\\u`
    escapes (a colon or a quote may hide in one, leaving room for a repeat), its `"key":` pairs
    are counted against the value's keys instead."""
    if "\\u" in text:
        pairs = text.count('":') + len(_SPACED_KEY_COLON.findall(text)) - outer_keys
        return pairs > own_keys and pairs > _keys_in(value)
    colons = text.count(":") - outer_keys
    return colons > own_keys and colons > _colons_in_value(value)


_SPACED_KEY_COLON = re.compile(r'"[ \t\n\r]+:')


def _colons_in_value(value: Any) -> int:
    """The colons `value` written as JSON holds: one per key, plus those inside its strings (keys
    included). Serialised by orjson (C), which writes a colon as it is; walked where orjson does
    not write the value."""
    if FAST_PARSER:
        import orjson

        try:
            return orjson.dumps(value).count(b":")
        except (TypeError, ValueError):  # an integer beyond 64 bits, nesting deeper than orjson writes
            pass
    n, stack = 0, [value]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            n += x.count(":")
        elif isinstance(x, dict):
            n += len(x) + sum(k.count(":") for k in x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n


def _parse_keeping_repeats(text: str) -> tuple[Any, dict[int, str]]:
    """`text` parsed again, with id() of each object built with a repeated key → that key (the
    ids stay valid while the returned value is alive)."""
    repeated: dict[int, str] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(items)
        if len(d) != len(items):
            keys = [k for k, _ in items]
            repeated[id(d)] = next(k for k in keys if keys.count(k) > 1)
        return d

    try:
        return json.loads(text, object_pairs_hook=pairs), repeated
    except (ValueError, RecursionError):
        return None, {}


def repeated_keys(text: str, records: list[Any], *, wrapped: bool = False) -> dict[int, str]:
    """Position in `records` → a key that record's object names twice, for the records parsed
    from `text` (JSON parsers keep the last value of a repeated key and drop the others silently).
    Parsed a second time, keeping the key pairs, only when the text could hold a repeat: it has
    more `"key":` pairs than the records have keys (their own, then nested ones counted too).
    `text` holds one object (a JSONL line), an array of them, or with `wrapped` an object whose
    "records" key holds the array. Only a record's own keys count: a key repeated inside one of
    its values (a model's output) keeps its last value, as JSON parsers do."""
    if not _could_repeat(text, records, sum(len(r) for r in records if isinstance(r, dict)), outer_keys=1 if wrapped else 0):
        return {}
    again, repeated = _parse_keeping_repeats(text)
    if wrapped and isinstance(again, dict):
        again = again.get("records")
    again = again if isinstance(again, list) else [again]
    return {i: repeated[id(r)] for i, r in enumerate(again) if id(r) in repeated}


def repeated_keys_by_id(text: str, mapping: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """For a JSON object mapping record id → record, parsed from `text` as `mapping`: (an id the
    object names twice, or None; record id → a key that record names twice). Cheap unless the
    text could hold a repeat, as `repeated_keys`."""
    own = len(mapping) + sum(len(v) for v in mapping.values() if isinstance(v, dict))
    if not _could_repeat(text, mapping, own):
        return None, {}
    again, repeated = _parse_keeping_repeats(text)
    if not isinstance(again, dict):
        return None, {}
    return repeated.get(id(again)), {k: repeated[id(v)] for k, v in again.items() if id(v) in repeated}


def check_json_file_keys(p: Path, text: str, value: Any, label: Any = lambda i: f"record {i + 1}", *, wrapped: bool = False) -> None:
    """Refuse a whole-file JSON input (`value`, parsed from `text`) that names a key twice where
    a JSONL line may not: a record's own key (`label(position)` or the record's id names it), or
    a record id twice in an object mapping id → record. An array's non-object items and keys
    inside a record's values are left to the reader (a repeat there keeps the last value)."""
    if isinstance(value, list):
        for i, key in repeated_keys(text, value, wrapped=wrapped).items():
            raise repeated_key_error(p, label(i), key)
    elif isinstance(value, dict):
        twice, keys = repeated_keys_by_id(text, value)
        if twice is not None:
            raise InputError(f"{p}: the record id {twice!r} is named more than once; each record id must appear once.")
        for rid, key in keys.items():
            raise repeated_key_error(p, f"record {rid!r}", key)


def check_record_keys(p: Path, where: str, line: str, value: Any) -> None:
    """Refuse a JSONL record (a dict parsed from `line`) that names one key twice."""
    if isinstance(value, dict):
        for key in repeated_keys(line, [value]).values():
            raise repeated_key_error(p, where, key)


def check_table_record(p: Path, where: str, line: str, value: dict[str, Any]) -> None:
    """A JSONL line read as a table row: no key twice, no key without a name (a column needs one)."""
    if "" in value:
        raise InputError(f'{p}: {where}: the record has a key with no name (""); every key (column) needs a name.')
    check_record_keys(p, where, line, value)


def repeated_key_error(p: Path, where: str, key: str) -> InputError:
    return InputError(f"{p}: {where}: the record names the key {key!r} more than once; each key (column) must appear once per record.")


def _loads_iterative(s: str) -> Any:
    from json.decoder import scanstring

    n = len(s)
    stack: list[list[Any]] = []  # [container, pending key]

    def ws(i: int) -> int:
        return _WS.match(s, i).end()  # type: ignore[union-attr]

    def key_at(i: int, frame: list[Any]) -> int:
        i = ws(i)
        if i >= n or s[i] != '"':
            raise ValueError(f"Expecting property name enclosed in double quotes: char {i}")
        frame[1], i = scanstring(s, i + 1)
        i = ws(i)
        if i >= n or s[i] != ":":
            raise ValueError(f"Expecting ':' delimiter: char {i}")
        return i + 1

    i, expect_value, result = 0, True, None
    while True:
        i = ws(i)
        if expect_value:
            if i >= n:
                raise ValueError(f"Expecting value: char {i}")
            c = s[i]
            if c == "{" or c == "[":
                j = ws(i + 1)
                if j < n and s[j] == ("}" if c == "{" else "]"):
                    value, i = ({} if c == "{" else []), j + 1
                else:
                    stack.append([{} if c == "{" else [], None])
                    i = key_at(i + 1, stack[-1]) if c == "{" else i + 1
                    continue
            elif c == '"':
                value, i = scanstring(s, i + 1)
            else:
                m = _NUMBER.match(s, i)
                if m and m.end() > i:
                    value = exact_float(m.group()) if (m.group(2) or m.group(3)) else int(m.group())
                    i = m.end()
                else:
                    for lit, v in _CONSTANTS.items():
                        if s.startswith(lit, i):
                            value, i = v, i + len(lit)
                            break
                    else:
                        raise ValueError(f"Expecting value: char {i}")
        else:
            top = stack[-1]
            c = s[i] if i < n else ""
            if c == ",":
                i = key_at(i + 1, top) if isinstance(top[0], dict) else i + 1
                expect_value = True
                continue
            if c != ("}" if isinstance(top[0], dict) else "]"):
                raise ValueError(f"Expecting ',' delimiter: char {i}")
            value, i = stack.pop()[0], i + 1
        if not stack:
            result = value
            break
        top = stack[-1]
        if isinstance(top[0], dict):
            top[0][top[1]] = value
        else:
            top[0].append(value)
        expect_value = False
    if ws(i) != n:
        raise ValueError(f"Extra data: char {ws(i)}")
    return result


MAX_VALUE_DEPTH = 100


def cap_depth(value: Any, limit: int = MAX_VALUE_DEPTH) -> Any:
    """`value` unchanged, unless it is nested deeper than `limit` levels: then a marker string
    `<JSON nested N levels deep, sha256 …>` that stands for it.

    The scorers compare and normalise values recursively; a 10,000-deep list from a model would
    exhaust Python's stack there. The marker keeps such a value a single, comparable cell (two
    identical deep values still match; anything else differs), so it is counted, not raised.
    """
    if not isinstance(value, (list, dict)):
        return value
    depth = _depth(value)
    if depth <= limit:
        return value
    import hashlib

    digest = hashlib.sha256(_canonical_text(value).encode("utf-8")).hexdigest()[:16]
    return f"<JSON nested {depth} levels deep, sha256 {digest}>"


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        children = v.values() if isinstance(v, dict) else v
        stack.extend((c, d + 1) for c in children if isinstance(c, (list, dict)))
    return deepest


def _canonical_text(value: Any) -> str:
    """`json.dumps(value, sort_keys=True)` without recursion (for values of any depth)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, _Token):
            out.append(v.text)
        elif isinstance(v, dict):
            items = sorted(v.items(), key=lambda kv: str(kv[0]))
            stack.append(_Token("}"))
            for i, (k, c) in enumerate(reversed(items)):
                stack.append(c)
                stack.append(_Token(json.dumps(str(k)) + ":"))
                if i < len(items) - 1:
                    stack.append(_Token(","))
            stack.append(_Token("{"))
        elif isinstance(v, list):
            stack.append(_Token("]"))
            for i, c in enumerate(reversed(v)):
                stack.append(c)
                if i < len(v) - 1:
                    stack.append(_Token(","))
            stack.append(_Token("["))
        else:
            out.append(json.dumps(v, default=str))
    return "".join(out)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
