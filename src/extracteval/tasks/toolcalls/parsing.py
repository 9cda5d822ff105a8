"""The `toolcalls` task's reading of a model's output: JSON in the usual shapes (OpenAI, Anthropic, a list of
name/arguments objects, fenced or in prose) or Python call syntax, into calls, each valid or not."""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extracteval.tasks.toolcalls.bfcl import parse_python_calls
from extracteval.core.jsonparse import loads_fast
from extracteval.io.model_output import ParsedOutput, loads_std_any_depth, parse_json_output, parse_json_text


_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")


@dataclass(frozen=True, slots=True)
class Call:
    """One predicted call; `args` is None when the call is invalid (see `error`)."""

    name: str | None
    args: dict[str, Any] | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class ParsedCalls:
    """All calls read from one output; `format` names the shape that was recognised."""

    calls: tuple[Call, ...]
    format: str
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.error is None and all(c.valid for c in self.calls)


class _NotCalls(ValueError):
    pass


_new = object.__new__


_CALL_SET = tuple(Call.__dict__[f].__set__ for f in ("name", "args", "error"))


def _valid_call(name: str, args: dict[str, Any]) -> Call:
    """`Call(name, args)`, built by setting its slots (the frozen dataclass's `__init__` costs
    three times as much, once per call of every output)."""
    c = _new(Call)
    set_name, set_args, set_error = _CALL_SET
    set_name(c, name)
    set_args(c, args)
    set_error(c, None)
    return c


def _args_value(name: Any, raw: Any) -> Call:
    name = name if isinstance(name, str) and name.strip() else None
    if name is None:
        return Call(None, None, "call without a function name")
    if raw is None:
        return Call(name, {})
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return Call(name, {})
        try:
            raw = loads_fast(text)
        except (ValueError, RecursionError) as e:
            return Call(name, None, f"arguments of {name!r} are not valid JSON ({str(e)[:80]})")
    if not isinstance(raw, dict):
        return Call(name, None, f"arguments of {name!r} are a {type(raw).__name__}, not an object")
    return _valid_call(name, raw)


def _first_args(obj: Mapping[str, Any]) -> Any:
    for k in _ARG_KEYS:
        if k in obj:
            return obj[k]
    return None


def _calls_from_object(obj: Any, depth: int = 0) -> tuple[list[Call], str]:
    if type(obj) is dict and len(obj) == 2 and type(obj.get("name")) is str and "arguments" in obj:
        return [_args_value(obj["name"], obj["arguments"])], "name_arguments"  # the common shape
    if depth > 8:
        raise _NotCalls("calls nested too deeply")
    if isinstance(obj, list):
        out: list[Call] = []
        fmt = "list"
        for item in obj:
            calls, f = _calls_from_object(item, depth + 1)
            out.extend(calls)
            fmt = f"list[{f}]"
        return out, fmt
    if not isinstance(obj, dict):
        raise _NotCalls(f"expected a call object or a list of calls, found {type(obj).__name__}")
    if "choices" in obj and isinstance(obj["choices"], list) and obj["choices"]:
        first = obj["choices"][0]
        if isinstance(first, dict) and isinstance(first.get("message"), dict):
            return _calls_from_object(first["message"], depth + 1)
    if "tool_calls" in obj:
        tc = obj["tool_calls"]
        if tc is None:
            return [], "openai"
        if not isinstance(tc, list):
            raise _NotCalls("`tool_calls` is not a list")
        calls = []
        for item in tc:
            sub, _ = _calls_from_object(item, depth + 1)
            calls.extend(sub)
        return calls, "openai"
    if "function_call" in obj and isinstance(obj["function_call"], dict):
        return _calls_from_object(obj["function_call"], depth + 1)
    if "function" in obj and isinstance(obj["function"], dict) and "name" in obj["function"]:
        f = obj["function"]
        return [_args_value(f.get("name"), _first_args(f))], "openai"
    if "name" in obj and (isinstance(obj["name"], str) or any(k in obj for k in _ARG_KEYS)):
        return [_args_value(obj.get("name"), _first_args(obj))], "name_arguments"
    if len(obj) == 1:
        name, args = next(iter(obj.items()))
        return [_args_value(name, args)], "bfcl"
    raise _NotCalls(f"an object with keys {sorted(obj)[:6]} is not a call")


def _strip_fences(text: str) -> str:
    if text[:1] != "`" and text[-1:] != "`" and not text[:1].isspace() and not text[-1:].isspace():
        return text  # what the steps below give for a stripped text without a backtick at either end
    t = text.strip()
    if t.startswith("```"):
        t = t[3:]
        nl = t.find("\n")
        if nl >= 0 and t[:nl].strip().isidentifier():
            t = t[nl + 1 :]
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip().strip("`").strip()


def parse_calls(raw: Any) -> ParsedCalls:
    """Read the calls of one model output in any supported format. Never raises.

    Examples:
        >>> [c.name for c in parse_calls('[get_weather(city="Paris"), get_time(tz="CET")]').calls]
        ['get_weather', 'get_time']
        >>> parse_calls('{"name": "f", "arguments": "{bad json"}').valid
        False
    """
    if raw is None or (isinstance(raw, float) and raw != raw):
        return ParsedCalls((), "none", "no output")
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return ParsedCalls((), "none", "output is not UTF-8 text")
    if not isinstance(raw, str):
        try:
            calls, fmt = _calls_from_object(raw)
            return ParsedCalls(tuple(calls), fmt)
        except (_NotCalls, RecursionError) as e:
            return ParsedCalls((), "unknown", str(e))
    text = raw.strip()
    if not text:
        return ParsedCalls((), "none", "empty output")
    looks_like_call = _LOOKS_LIKE_CALL.match(text) is not None
    if looks_like_call:
        # `name(`… or `[name(`…: Python call syntax first (JSON never starts like that)
        py = _python_calls(text)
        if py is not None:
            return py
    if _cut_short(text):
        return _calls_after_json(text, _NOT_WHOLE, python_read=looks_like_call)
    try:
        value = loads_fast(text)  # what parse_json_output finds first
    except (ValueError, RecursionError, MemoryError):
        value = _NO_VALUE
    return _calls_after_json(text, value, python_read=looks_like_call)


# what `_calls_after_json` is told instead of a value: nothing was read from the whole text
# (or nothing asked), orjson refused it, or it cannot be one JSON document (`_cut_short`)
_NO_VALUE, _ORJSON_REFUSED, _NOT_WHOLE = object(), object(), object()


_CLOSING = {"{": "}", "[": "]"}


def _cut_short(text: str) -> bool:
    """A stripped text that opens an object or array and does not close it (a truncated output):
    no JSON document as a whole, for any reader."""
    closing = _CLOSING.get(text[0])
    return closing is not None and text[-1] != closing


def _not_one_document(text: str) -> Any:
    raise ValueError("the text opens an object or array it does not close")


def _calls_after_json(text: str, value: Any, *, python_read: bool) -> ParsedCalls:
    """`parse_calls` of a stripped text, from the value `loads_fast` read from the whole text
    (`_NO_VALUE`: it read none, or was not asked: `parse_json_output` reads the whole text first
    as loads_fast does, and what it reads whole is scored as that value would be;
    `_ORJSON_REFUSED`: as `_NO_VALUE`, json.loads reading the whole text; `_NOT_WHOLE`: the text
    is no JSON document as a whole; the reason a reading failed is never part of the result);
    `python_read`: the text was already read as Python call syntax, to no avail (the reading is
    not repeated: it would fail again)."""
    json_error = None
    if value is _NO_VALUE:
        parsed = parse_json_output(text)
    elif value is _ORJSON_REFUSED:
        parsed = parse_json_text(text, loads_std_any_depth)  # json.loads straight away
    elif value is _NOT_WHOLE:
        parsed = parse_json_text(text, _not_one_document)  # fences and prose only
    elif type(value) is str:  # JSON-encoded twice
        parsed = ParsedOutput(ok=True, value=value)
    else:
        try:
            calls, fmt = _calls_from_object(value)
        except (_NotCalls, RecursionError) as e:
            # not calls: the same value is not read again below, only the Python reading is left
            json_error = str(e)
            parsed = None
        else:
            return _parsed_calls(tuple(calls), fmt)
    json_calls: ParsedCalls | None = None
    if parsed is not None and parsed.ok:
        value = parsed.value
        if isinstance(value, str):  # JSON-encoded twice
            inner = parse_json_output(value)
            value = inner.value if inner.ok else value
        try:
            calls, fmt = _calls_from_object(value)
            json_calls = ParsedCalls(tuple(calls), ("extracted:" if parsed.extracted else "") + fmt)
        except (_NotCalls, RecursionError) as e:
            json_error = str(e)
        if json_calls is not None and not parsed.extracted:
            return json_calls
    # Python call syntax before JSON found inside prose: `[f(a={"x": 1})]` holds a JSON object
    # that is an argument, not a call.
    py = None if python_read else _python_calls(text)
    if py is not None:
        return py
    if json_calls is not None:
        return json_calls
    return ParsedCalls((), "unknown", json_error or "neither JSON tool calls nor Python call syntax")


_PARSED_SET = tuple(ParsedCalls.__dict__[f].__set__ for f in ("calls", "format", "error"))


def _parsed_calls(calls: tuple[Call, ...], fmt: str) -> ParsedCalls:
    """`ParsedCalls(calls, fmt)`, built by setting its slots."""
    p = _new(ParsedCalls)
    set_calls, set_format, set_error = _PARSED_SET
    set_calls(p, calls)
    set_format(p, fmt)
    set_error(p, None)
    return p


_LOOKS_LIKE_CALL = re.compile(r"\[?\s*[A-Za-z_][\w.]*\s*\(")


def _python_calls(text: str) -> ParsedCalls | None:
    calls_py = _python_call_list(text)
    if calls_py is None:
        return None
    return _parsed_calls(tuple(_valid_call(name, args) for c in calls_py for name, args in c.items()), "python")


def _python_call_list(text: str) -> list[dict[str, dict[str, Any]]] | None:
    """The `{name: arguments}` of each call of `text` read as Python call syntax (fences dropped,
    a bare sequence of calls read as a list), or None when it is not that."""
    body = _strip_fences(text)
    if "(" not in body and "#" not in body and body.strip("[] \t\n\r\f\v\\"):
        # No call without "(", and the only call-free success, an empty list (`[]`, or a
        # blank body wrapped as `[…]`), needs nothing but brackets, blanks, comments or line
        # continuations: skip the two failing `ast.parse` attempts (truncated JSON, prose).
        return None
    for candidate in (body, f"[{body}]"):
        try:
            calls_py = parse_python_calls(candidate, keep_positional=True)
        except SyntaxError:
            calls_py = _parse_with_keyword_names(candidate)
            if calls_py is None:
                continue
        except (ValueError, TypeError, RecursionError, MemoryError):
            continue
        return calls_py
    return None


_KW_PREFIX = "_kw_arg_"


_KEYWORD_ARG = re.compile(r"\b(?:" + "|".join(keyword.kwlist) + r")\s*=(?!=)")


def _parse_with_keyword_names(text: str) -> list[dict[str, dict[str, Any]]] | None:
    """Python calls whose argument names are reserved words (`convert(from="EUR")`, which models
    do write): rename them with the tokenizer (strings untouched), parse, rename back."""
    import io
    import tokenize

    if not _KEYWORD_ARG.search(text):
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    lines = text.splitlines(keepends=True)
    edits = []
    for k, tok in enumerate(tokens[:-1]):
        nxt = tokens[k + 1]
        if tok.type == tokenize.NAME and keyword.iskeyword(tok.string) and nxt.type == tokenize.OP and nxt.string == "=":
            edits.append(tok.start)
    if not edits:
        return None
    for row, col in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + _KW_PREFIX + line[col:]
    try:
        calls = parse_python_calls("".join(lines), keep_positional=True)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None
    return [{n: {(a[len(_KW_PREFIX):] if a.startswith(_KW_PREFIX) else a): v for a, v in args.items()}} for c in calls for n, args in c.items()]
