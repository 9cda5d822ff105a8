"""The `toolcalls` task (tool-call track): predicted function calls vs reference calls.

**Predicted formats** (each record's output may be a string or an already parsed value):

* `{"name": …, "arguments": {…}}` — arguments an object or a JSON string (also `parameters`,
  `args`, `input`); a list of these for parallel calls;
* OpenAI `{"tool_calls": [{"type": "function", "function": {"name", "arguments"}}]}`, a bare
  tool-call item, a chat message, or a whole `choices[0].message` response;
* BFCL `{func: {args}}` / `{func: "<json>"}` and lists of them;
* Python call strings `f(a=1)` / `[f(a=1), g(b="x")]`, parsed with `ast` (never evaluated);
  positional arguments are kept as `*0`, `*1`, …;
* any of the above inside a fenced block or after leading prose.

A call whose name is missing or whose arguments are not an object (malformed argument JSON
included) is an *invalid call*: counted, never raised. A record is *valid* when every call in it
is valid (an empty list of calls is a valid "no call" answer).

**References:** the same `{"name","arguments"}` shapes, or BFCL `possible_answer` items
`{func: {param: [acceptable values]}}` where `""` marks a parameter that may be omitted.

**Matching.** Predicted and reference calls of one record are paired one-to-one by optimal
assignment (`core.matching.max_matching`): only same-name pairs are admissible; the number of
pairs is maximised first, then their argument agreement. Call order never matters.

**Metrics** (counts first; rates from summed counts):

* `valid_call_rate` = valid records / records;
* `name_match_rate` = reference calls paired with a same-name predicted call / reference calls;
* `args_exact_rate` = reference calls whose partner has exactly the right arguments / reference calls;
* `args_precision`, `args_recall`, `args_f1` over flattened argument paths (`city`,
  `filters.max_price`, `ids[0]`): a right value TP, a wrong value FP + FN, a missing required
  value FN, an extra value FP; every leaf of an unpaired reference call is FN, of an unpaired
  predicted call FP. For BFCL references each parameter is one path compared whole against its
  acceptable values;
* `call_accuracy` = records whose calls are all correct (same count, every reference call paired
  with exactly right arguments, all predicted calls valid) / records.
"""

from __future__ import annotations

import json
import keyword
import marshal
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import islice
from operator import attrgetter
from typing import Any

import numpy as np

from extracteval.tasks.toolcalls.contract import RANKING
from extracteval.core.ledger import Ledger, add_counts, always, by_key, merge, union
from extracteval.tasks.toolcalls.bfcl import _simple_calls, parse_python_calls
from extracteval.core.counts import ratios
from extracteval.core.jsonparse import loads_fast, may_misread_numbers
from extracteval.core.matching import max_matching
from extracteval.core.ranking import rank_by_metrics
from extracteval.core.decision_track import (
    PASS_THRESHOLD,
    _PLAIN_INT,
    _EXAMPLES,
    ExtendedScores,
    extended_scores,
    _key_part,
    flat_keys,
    leaf_key,
    paused_gc,
)
from extracteval.io.id_order import first_by_id, natural_ids, natural_sorted
from extracteval.io.model_output import ParsedOutput, loads_std_any_depth, parse_json_output, parse_json_text
from extracteval.errors import InputError

__all__ = [
    "Call",
    "ParsedCalls",
    "parse_calls",
    "RefCall",
    "reference_calls",
    "ToolCallConfig",
    "ToolCallCounts",
    "ToolCallRecord",
    "score_toolcall_record",
    "ToolCallModelResult",
    "ToolCallResult",
    "score_toolcalls",
]

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


# --------------------------------------------------------------------------------------------
# references


_NO_OPTIONAL: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class RefCall:
    """A reference call: acceptable leaf keys per argument path, and paths that may be omitted.

    `whole=True` (BFCL possible answers) compares each top-level parameter as a whole value.
    """

    name: str
    accept: dict[str, tuple[str, ...]]
    optional: frozenset[str]
    whole: bool


_REFCALL_SET = tuple(RefCall.__dict__[f].__set__ for f in ("name", "accept", "optional", "whole"))


def _whole_key(v: Any, key_fn: Callable[[Any], str | None]) -> str:
    return json.dumps(sorted(flat_keys(v, key_fn).items()), ensure_ascii=False)




# argument name → its path part (`_key_part`): the names repeat from call to call
_KEY_PARTS: dict[str, str] = {}
_KEY_PARTS_MAX = 1 << 14  # bounded: names that never repeat must not fill memory


def _new_key_part(k: str) -> str:
    if len(_KEY_PARTS) >= _KEY_PARTS_MAX:
        _KEY_PARTS.clear()
    kp = _KEY_PARTS[k] = _key_part(k)
    return kp


def _present_keys(args: Mapping[str, Any], key_fn: Callable[[Any], str | None]) -> dict[str, str]:
    """Flattened argument paths with a value (null / {} / [] leaves are absent)."""
    if key_fn is leaf_key and type(args) is dict:
        # the usual arguments object, text names and scalar values: same keys, values and order
        # (`flat_keys` pops its stack, so the last argument comes first) without the stack
        out = _scalar_keys(args, floats=True, last_first=True)
        if out is not None:
            return out
    return flat_keys(args, key_fn, present_only=True)


def _scalar_keys(args: dict[str, Any], *, floats: bool = False, last_first: bool = False) -> dict[str, str] | None:
    """`_present_keys(args, leaf_key)` of an object whose values are all text, integers, booleans
    or null (and numbers with a fraction or exponent when `floats`), as a dict equal to it (in
    `flat_keys`' order when `last_first`, else in the object's); None for any other object (a
    nested value, a name that is not text)."""
    out: dict[str, str] = {}
    parts = _KEY_PARTS
    for k, v in (reversed(args.items()) if last_first else args.items()):
        t = type(v)
        if t is str:
            lk = "s:" + v
        elif t is int:
            lk = "n:" + str(v) if -_PLAIN_INT < v < _PLAIN_INT else leaf_key(v)
        elif t is bool:
            lk = "b:1" if v else "b:0"
        elif t is float and floats:
            lk = leaf_key(v)
            if lk[0] == "\x00":  # NaN: absent
                continue
        elif v is None:
            continue
        else:
            return None
        kp = parts.get(k)  # only text is kept there, and text equal to a name has its path
        if kp is None:
            if type(k) is not str:
                return None
            kp = _new_key_part(k)
        out[kp] = lk
    return out


def reference_calls(obj: Any, *, possible_answer: bool = False, key_fn: Callable[[Any], str | None] = leaf_key, where: str = "reference") -> tuple[RefCall, ...]:
    """Read reference calls; a malformed reference is an `InputError` naming `where`."""
    if possible_answer:
        items = obj if isinstance(obj, list) else [{k: v} for k, v in obj.items()] if isinstance(obj, dict) else None
        if items is None:
            raise InputError(f"{where}: a BFCL possible answer must be a list of {{function: {{param: [values]}}}} objects, but found {type(obj).__name__}.")
        out = []
        for k, item in enumerate(items):
            if not isinstance(item, dict) or len(item) != 1:
                raise InputError(f"{where}[{k}]: expected an object with exactly one function name, but found {json.dumps(item)[:80]}.")
            name, params = next(iter(item.items()))
            if not isinstance(params, dict):
                raise InputError(f"{where}[{k}].{name}: expected {{param: [acceptable values]}}, but found {type(params).__name__}.")
            accept, optional = {}, set()
            for p, values in params.items():
                if not isinstance(values, list):
                    raise InputError(f"{where}[{k}].{name}.{p}: expected a list of acceptable values, but found {json.dumps(values)[:60]}.")
                if "" in values:
                    optional.add(p)
                accept[p] = tuple(sorted({_whole_key(v, key_fn) for v in values if v != ""}))
            out.append(RefCall(name=str(name), accept=accept, optional=frozenset(optional), whole=True))
        return tuple(out)
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            parsed = parse_calls(obj)
            if not parsed.valid:
                raise InputError(f"{where}: the reference is neither JSON nor a Python call ({parsed.error}).") from None
            obj = [{"name": c.name, "arguments": c.args} for c in parsed.calls]
    items = obj if type(obj) is list else (obj,) if type(obj) is dict else None
    if items is not None:
        # the usual reference, `{"name", "arguments": {…}}` or a list of them: the same RefCalls
        # as the general path below, without building a Call per item first
        usual: list[RefCall] = []
        set_name, set_accept, set_optional, set_whole = _REFCALL_SET
        for x in items:
            if type(x) is not dict or len(x) != 2:
                break
            name, args = x.get("name"), x.get("arguments")
            if type(name) is not str or type(args) is not dict or not name.strip():
                break
            r = _new(RefCall)
            set_name(r, name)
            set_accept(r, {p: (k,) for p, k in _present_keys(args, key_fn).items()})
            set_optional(r, _NO_OPTIONAL)
            set_whole(r, False)
            usual.append(r)
        else:
            return tuple(usual)
    try:
        calls, _ = _calls_from_object(obj)
    except _NotCalls as e:
        raise InputError(f"{where}: not a reference call or list of calls ({e}).") from None
    out = []
    for k, c in enumerate(calls):
        if not c.valid:
            raise InputError(f"{where}[{k}]: {c.error}.")
        assert c.args is not None and c.name is not None
        accept = {p: (k,) for p, k in _present_keys(c.args, key_fn).items()}
        out.append(RefCall(name=c.name, accept=accept, optional=_NO_OPTIONAL, whole=False))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# scoring


@dataclass(frozen=True, kw_only=True)
class ToolCallConfig:
    """Options of the generic tool-call scoring.

    Attributes:
        value_match: `exact` (canonical JSON leaves) or `normalized` (shared normaliser).
        zero_division: value of an undefined ratio.
        pass_threshold: pass mark for extended similarity / judge scores (default 0.85).
    """

    value_match: str = "exact"
    zero_division: float = 0.0
    pass_threshold: float = PASS_THRESHOLD

    def __post_init__(self) -> None:
        if self.value_match not in ("exact", "normalized"):
            raise InputError(f"value_match: expected one of exact, normalized, but got {self.value_match!r}.")
        if not 0.0 <= self.zero_division <= 1.0:
            raise InputError(f"zero_division: expected a number in [0, 1], but got {self.zero_division!r}.")
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise InputError(f"pass_threshold: expected a number in [0, 1], but got {self.pass_threshold!r}.")

    def key_fn(self) -> Callable[[Any], str | None]:
        if self.value_match == "exact":
            return leaf_key
        from extracteval.core.normalize import Normalizer

        norm = Normalizer()
        return lambda v: leaf_key(v) if isinstance(v, (dict, list)) else norm.key(v)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallCounts(Ledger):
    """Mergeable counts of the tool-call task."""

    records: int = 0
    valid_records: int = 0
    correct_records: int = 0
    ref_calls: int = 0
    pred_calls: int = 0
    invalid_calls: int = 0
    name_matches: int = 0
    args_exact: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0


    def metrics(self, *, zero_division: float = 0.0) -> dict[str, float]:
        def rate(a: int, b: int) -> float:
            return a / b if b else float(zero_division)

        r = ratios(self.tp, self.fp, self.fn, 0, zero_division=zero_division)
        return {
            "valid_call_rate": rate(self.valid_records, self.records),
            "name_match_rate": rate(self.name_matches, self.ref_calls),
            "args_exact_rate": rate(self.args_exact, self.ref_calls),
            "args_precision": float(r["precision"]),
            "args_recall": float(r["recall"]),
            "args_f1": float(r["f1"]),
            "call_accuracy": rate(self.correct_records, self.records),
        }

    def to_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    id: str
    valid: bool
    correct: bool
    format: str
    pairs: tuple[tuple[int, int], ...]
    counts: ToolCallCounts
    error: str | None = None


def _pred_keys(call: Call, ref: RefCall, key_fn: Callable[[Any], str | None]) -> dict[str, str]:
    if not call.valid or call.args is None:
        return {}
    if ref.whole:
        return {p: _whole_key(v, key_fn) for p, v in call.args.items()}
    return _present_keys(call.args, key_fn)


def _compare(ref: RefCall, pred: Mapping[str, str]) -> tuple[int, int, int]:
    tp = fp = fn = 0
    for p, ok in ref.accept.items():
        k = pred.get(p)
        if k is None:
            if p not in ref.optional:
                fn += 1
        elif k in ok:
            tp += 1
        elif not ok and p in ref.optional:  # only "" acceptable: the parameter must be left out
            fp += 1
        else:
            fp += 1
            fn += 1
    fp += sum(1 for p in pred if p not in ref.accept)
    return tp, fp, fn


def _pair_score(c: tuple[int, int, int]) -> float:
    """0.5 for a same-name pair plus half its argument agreement (Dice of tp, fp, fn)."""
    tp, fp, fn = c
    return 0.5 + 0.5 * (2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else 1.0)


def score_toolcall_record(refs: Sequence[RefCall], output: Any, *, rid: str = "", key_fn: Callable[[Any], str | None] = leaf_key) -> ToolCallRecord:
    """Score one record's output against its reference calls (see the module docstring)."""
    return _score_parsed(refs, _ParsedEntry(parse_calls(output), key_fn), rid, {})


class _ParsedEntry:
    """One parsed output plus its calls' flattened argument keys, computed on first use.

    `score_toolcalls` keeps one entry per distinct raw output string, so repeated outputs (the
    same call answered to many questions, "no call", a refusal) are parsed and canonicalised
    once; the keys are a pure function of the call's arguments and `key_fn`.
    """

    __slots__ = ("parsed", "key_fn", "_present", "_whole")

    def __init__(self, parsed: ParsedCalls, key_fn: Callable[[Any], str | None]) -> None:
        self.parsed = parsed
        self.key_fn = key_fn
        self._present: list[dict[str, str] | None] = [None] * len(parsed.calls)
        self._whole: list[dict[str, str] | None] | None = None

    def keys(self, j: int, whole: bool) -> dict[str, str]:
        """`_pred_keys` of call j (whole-parameter keys for BFCL references)."""
        if whole:
            if self._whole is None:
                self._whole = [None] * len(self.parsed.calls)
            cache = self._whole
        else:
            cache = self._present
        k = cache[j]
        if k is None:
            c = self.parsed.calls[j]
            if not c.valid or c.args is None:
                k = {}
            elif whole:
                k = {p: _whole_key(v, self.key_fn) for p, v in c.args.items()}
            else:
                k = _present_keys(c.args, self.key_fn)
            cache[j] = k
        return k


_RECORD_SET = tuple(ToolCallRecord.__dict__[f].__set__ for f in ("id", "valid", "correct", "format", "pairs", "counts", "error"))
_PAIR_00 = ((0, 0),)


def _make_record(rid: str, valid: bool, correct: bool, fmt: str, pairs: tuple[tuple[int, int], ...], counts: ToolCallCounts, error: str | None) -> ToolCallRecord:
    r = _new(ToolCallRecord)
    s_id, s_valid, s_correct, s_format, s_pairs, s_counts, s_error = _RECORD_SET
    s_id(r, rid)
    s_valid(r, valid)
    s_correct(r, correct)
    s_format(r, fmt)
    s_pairs(r, pairs)
    s_counts(r, counts)
    s_error(r, error)
    return r


# Counts are immutable and few distinct tuples occur: share one instance per tuple (a frozen
# dataclass costs more to build than a dict lookup).
_COUNT_FIELDS = ("records", "valid_records", "correct_records", "ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")


def _counts(interned: dict[tuple[int, ...], ToolCallCounts], values: tuple[int, ...]) -> ToolCallCounts:
    c = interned.get(values)
    if c is None:
        c = interned[values] = ToolCallCounts(**dict(zip(_COUNT_FIELDS, values)))
    return c


def _score_parsed(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts]) -> ToolCallRecord:
    parsed = entry.parsed
    preds = parsed.calls
    n_ref, n_pred = len(refs), len(preds)
    pairs: list[tuple[int, int]] = []
    if n_ref == 1 and n_pred == 1:
        p0, r0 = preds[0], refs[0]
        if p0.name == r0.name:
            tp, fp, fn = _compare(r0, entry.keys(0, r0.whole))
            ok = fp == 0 and fn == 0 and p0.valid
            valid = parsed.valid
            return _make_record(rid, valid, valid and ok, parsed.format, _PAIR_00,
                                _counts(interned, (1, int(valid), int(valid and ok), 1, 1, int(not p0.valid), 1, int(ok), tp, fp, fn)),
                                parsed.error or p0.error)
    cmp: Any
    by_name = {c.name: j for j, c in enumerate(preds)}
    if len(by_name) == n_pred and len({r.name for r in refs}) == n_ref:
        # no name repeats on either side: each same-name pair is the only one its calls can form,
        # so the assignment below would pair exactly these (in reference order)
        cmp = {}
        for i, r in enumerate(refs):
            j = by_name.get(r.name)
            if j is not None:
                pairs.append((i, j))
                cmp[i, j] = _compare(r, entry.keys(j, r.whole))
        return _tally(refs, entry, rid, interned, pairs, lambda i, j: cmp[i, j])
    # argument comparison only where the names agree (the only admissible pairs)
    cmp = [[_compare(r, entry.keys(j, r.whole)) if c.name == r.name else (0, 0, 0) for j, c in enumerate(preds)] for r in refs]
    if n_ref and n_pred and not (n_ref == 1 and n_pred == 1):
        pairs = _group_pairs([r.name for r in refs], [c.name for c in preds], cmp)
    return _tally(refs, entry, rid, interned, pairs, lambda i, j: cmp[i][j])


def _group_pairs(ref_names: Sequence[str | None], pred_names: Sequence[str | None], cmp: Sequence[Sequence[tuple[int, int, int]]]) -> list[tuple[int, int]]:
    """The optimal one-to-one pairing (sorted) of calls whose names repeat; `cmp[i][j]` is the
    (tp, fp, fn) of reference call i and predicted call j where their names agree."""
    # Only same-name pairs are admissible, so the assignment splits into one independent
    # problem per function name; most are 1×1 or 1×k and need no solver.
    pairs: list[tuple[int, int]] = []
    groups: dict[str | None, tuple[list[int], list[int]]] = {}
    for i, name in enumerate(ref_names):
        groups.setdefault(name, ([], []))[0].append(i)
    for j, name in enumerate(pred_names):
        if name in groups:
            groups[name][1].append(j)
    for ri, pj in groups.values():
        if not pj:
            continue
        if len(ri) == 1 and len(pj) == 1:
            pairs.append((ri[0], pj[0]))
            continue
        score = [[_pair_score(cmp[i][j]) for j in pj] for i in ri]
        if len(ri) == 1 or len(pj) == 1:
            # a single row or column: the optimum is its best cell (the first on ties)
            flat = [x for row in score for x in row]
            k = max(range(len(flat)), key=flat.__getitem__)
            pairs.append((ri[0], pj[k]) if len(ri) == 1 else (ri[k], pj[0]))
        else:
            pairs += [(ri[a], pj[b]) for a, b in max_matching(np.array(score), 0.5)]
    pairs.sort()
    return pairs


def _tally(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts],
           pairs: list[tuple[int, int]], cmp: Callable[[int, int], tuple[int, int, int]]) -> ToolCallRecord:
    """The record of a pairing: `cmp(i, j)` is the (tp, fp, fn) of paired calls i and j."""
    parsed = entry.parsed
    preds = parsed.calls
    n_ref, n_pred = len(refs), len(preds)
    tp = fp = fn = exact = 0
    paired_ref = {i for i, _ in pairs}
    paired_pred = {j for _, j in pairs}
    for i, j in pairs:
        a, b, c = cmp(i, j)
        tp, fp, fn = tp + a, fp + b, fn + c
        if b == 0 and c == 0 and preds[j].valid:
            exact += 1
    for i in range(n_ref):
        if i not in paired_ref:
            fn += sum(1 for p in refs[i].accept if p not in refs[i].optional)
    for j in range(n_pred):
        if j not in paired_pred and preds[j].valid and preds[j].args is not None:
            fp += len(entry.keys(j, False))
    valid = parsed.valid
    correct = valid and n_pred == n_ref and exact == n_ref
    counts = _counts(interned, (1, int(valid), int(correct), n_ref, n_pred, sum(1 for c in preds if not c.valid), len(pairs), exact, tp, fp, fn))
    error = parsed.error or next((c.error for c in preds if not c.valid), None)
    return _make_record(rid, valid, correct, parsed.format, tuple(pairs), counts, error)


# --------------------------------------------------------------------------------------------
# plain references (not BFCL possible answers): the scoring loop's direct path
#
# A plain reference call accepts exactly one key per argument path and may omit none, so it is
# its name and its `_present_keys`; a plain reference is the flat tuple (name, keys, name, keys,
# …). An output whose calls are all valid is `(format, error, names, keys)`, the keys of each call
# computed once. Compared with a reference call, `_compare` then reduces to tp = the agreeing
# paths, fp = len(pred) - tp, fn = len(ref) - tp, and a whole argument object that agrees is one
# dict comparison. Outputs with an invalid call keep the general path (`_ParsedEntry`,
# `_score_parsed`).

try:  # orjson reads the usual outputs; where it could read other values than json.loads, `loads_fast` decides
    from orjson import JSONDecodeError as _OrjsonError
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson_loads = None

_RECHECK = object()  # orjson's reading may differ from json.loads' here: read the text exactly


def _plain_refs(obj: Any, key_fn: Callable[[Any], str | None], rid: str) -> tuple[Any, ...]:
    """`reference_calls(obj, where=f"reference {rid}")` (not a possible answer) as the flat tuple
    (name, keys, name, keys, …)."""
    items = obj if type(obj) is list else (obj,) if type(obj) is dict else None
    out: list[Any] = []
    if items is not None:
        # the usual reference, `{"name", "arguments": {…}}` or a list of them (as in reference_calls)
        scalar = key_fn is leaf_key
        if len(items) == 1 and scalar:  # one call: its pair straight away
            x = items[0]
            if type(x) is dict and len(x) == 2:
                name, args = x.get("name"), x.get("arguments")
                if type(name) is str and type(args) is dict and name.strip():
                    keys = _scalar_keys(args)
                    return (name, _present_keys(args, key_fn) if keys is None else keys)
        for x in items:
            if type(x) is not dict or len(x) != 2:
                break
            name, args = x.get("name"), x.get("arguments")
            if type(name) is not str or type(args) is not dict or not name.strip():
                break
            keys = _scalar_keys(args) if scalar else None
            out.append(name)
            out.append(_present_keys(args, key_fn) if keys is None else keys)
        else:
            return tuple(out)
        out = []
    for r in reference_calls(obj, key_fn=key_fn, where=f"reference {rid}"):
        out.append(r.name)
        out.append({p: ok[0] for p, ok in r.accept.items()})
    return tuple(out)


def _ref_calls(ref: tuple[Any, ...]) -> tuple[RefCall, ...]:
    """The `RefCall`s of a plain reference (what `reference_calls` gives)."""
    return tuple(RefCall(name=ref[i], accept={p: (k,) for p, k in ref[i + 1].items()}, optional=_NO_OPTIONAL, whole=False)
                 for i in range(0, len(ref), 2))


def _args_keys(raw: Any, key_fn: Callable[[Any], str | None], fast: bool) -> Any:
    """The keys of the arguments `_args_value` reads from `raw` when it reads an object, else
    None. `fast`: `raw` and any JSON text in it are read by orjson, and any value orjson may read
    otherwise than json.loads (a number with a fraction or exponent, which may have been an
    integer too long for orjson) or any text it refuses gives `_RECHECK`."""
    if type(raw) is dict:
        if fast:
            keys = _scalar_keys(raw)
            return _RECHECK if keys is None else keys
        return _present_keys(raw, key_fn)
    if raw is None:
        return {}
    if type(raw) is str:
        text = raw.strip()
        if not text:
            return {}
        if fast:
            try:
                raw = _orjson_loads(text)
            except _OrjsonError:
                return _RECHECK
            if type(raw) is dict:
                keys = _scalar_keys(raw)
                return _RECHECK if keys is None else keys
            return None
        try:
            raw = loads_fast(text)
        except (ValueError, RecursionError):
            return None
        if type(raw) is dict:
            return _present_keys(raw, key_fn)
    return None


def _call_keys(call: dict[str, Any], key_fn: Callable[[Any], str | None], fast: bool) -> Any:
    """The argument keys of a call object holding `arguments` (`_args_keys`), or None when its
    `name` is not a non-blank string."""
    name = call.get("name")
    if type(name) is not str or not name.strip():
        return None
    return _args_keys(call["arguments"], key_fn, fast)


def _plain_value(value: Any, key_fn: Callable[[Any], str | None], fast: bool) -> Any:
    """The entry of the usual JSON shapes, read as `_calls_from_object` reads them: a
    `{"name", "arguments"}` object or a list of them, or `{"tool_calls": [{"function": …}]}`;
    None for any other value or a call `_args_value` finds invalid (`_RECHECK`: see `_args_keys`)."""
    if type(value) is dict:
        if "name" not in value:
            if "tool_calls" not in value or "choices" in value:
                return None
            items = value["tool_calls"]
            if items is None:
                return ("openai", None, (), ())
            if type(items) is not list:
                return None
            names, keys = [], []
            for item in items:
                # the checks `_calls_from_object` makes before it reads `function`
                if type(item) is not dict or "name" in item or "choices" in item or "tool_calls" in item or "function_call" in item:
                    return None
                f = item.get("function")
                if type(f) is not dict or "arguments" not in f:
                    return None
                k = _call_keys(f, key_fn, fast)
                if k is None or k is _RECHECK:
                    return k
                names.append(f["name"])
                keys.append(k)
            return ("openai", None, tuple(names), tuple(keys))
        if len(value) != 2 or "arguments" not in value:
            return None
        k = _call_keys(value, key_fn, fast)
        return k if k is None or k is _RECHECK else ("name_arguments", None, (value["name"],), (k,))
    if type(value) is list:
        if not value:
            return ("list", None, (), ())
        names, keys = [], []
        for x in value:
            if type(x) is not dict or len(x) != 2 or "arguments" not in x:
                return None
            k = _call_keys(x, key_fn, fast)
            if k is None or k is _RECHECK:
                return k
            names.append(x["name"])
            keys.append(k)
        return ("list[name_arguments]", None, tuple(names), tuple(keys))
    return None


def _orjson_args(raw: Any) -> Any:
    """`_args_keys(raw, leaf_key, fast=True)`, the usual arguments read inline."""
    if type(raw) is str:
        # orjson skips only JSON's blanks around the document, where `_args_value` strips any:
        # text with others around it is refused here and read exactly
        try:
            raw = _orjson_loads(raw)
        except _OrjsonError:
            return _RECHECK
        if type(raw) is not dict:
            return None
    elif type(raw) is not dict:
        return {} if raw is None else None
    keys = _scalar_keys(raw)
    return _RECHECK if keys is None else keys


def _orjson_value(value: Any) -> Any:
    """`_plain_value(value, leaf_key, fast=True)`, the two commonest shapes first."""
    if type(value) is dict:
        if len(value) == 1 and "tool_calls" in value:
            items = value["tool_calls"]
            if type(items) is list and len(items) == 1:
                item = items[0]
                # the checks `_calls_from_object` makes before it reads `function`
                if type(item) is dict and "name" not in item and "choices" not in item and "tool_calls" not in item and "function_call" not in item:
                    f = item.get("function")
                    if type(f) is dict and "arguments" in f:
                        name = f.get("name")
                        if type(name) is str and name.strip():
                            args = f["arguments"]
                            if type(args) is str:  # the usual: JSON text (`_orjson_args`, inline)
                                try:
                                    args = _orjson_loads(args)
                                except _OrjsonError:
                                    return _RECHECK
                                if type(args) is not dict:
                                    return None
                                k = _scalar_keys(args)
                                return _RECHECK if k is None else ("openai", None, (name,), (k,))
                            k = _orjson_args(args)
                            return k if k is None or k is _RECHECK else ("openai", None, (name,), (k,))
        elif len(value) == 2 and "arguments" in value:
            name = value.get("name")
            if type(name) is str and name.strip():
                args = value["arguments"]
                if type(args) is dict:  # the usual: an object (`_orjson_args`, inline)
                    k = _scalar_keys(args)
                    return _RECHECK if k is None else ("name_arguments", None, (name,), (k,))
                k = _orjson_args(args)
                return k if k is None or k is _RECHECK else ("name_arguments", None, (name,), (k,))
    return _plain_value(value, leaf_key, True)


def _plain_entry(parsed: ParsedCalls, key_fn: Callable[[Any], str | None]) -> Any:
    """The entry of parsed calls: plain when every call is valid, else a `_ParsedEntry`."""
    calls = parsed.calls
    for c in calls:
        if c.error is not None:
            return _ParsedEntry(parsed, key_fn)
    return (parsed.format, parsed.error, tuple(c.name for c in calls), tuple(_present_keys(c.args, key_fn) for c in calls))  # type: ignore[arg-type]


def _output_entry(raw: str, key_fn: Callable[[Any], str | None]) -> Any:
    """`_plain_entry(parse_calls(raw))` of an output string, the usual shapes read directly."""
    text = raw.strip()
    if not text:
        return ("none", "empty output", (), ())
    looks_like_call = text[0] != "{" and _LOOKS_LIKE_CALL.match(text) is not None
    if looks_like_call:
        # without a fence (no backtick at either end) `_python_call_list` reads the text itself,
        # the simple reader first
        calls_py = _simple_calls(text) if text[0] != "`" and text[-1] != "`" else None
        if calls_py is None:
            calls_py = _python_call_list(text)
        if calls_py is not None:
            scalar = key_fn is leaf_key
            names, keys = [], []
            for c in calls_py:
                for name, args in c.items():
                    names.append(name)
                    k = _scalar_keys(args) if scalar else None
                    keys.append(_present_keys(args, key_fn) if k is None else k)
            return ("python", None, tuple(names), tuple(keys))
    closing = _CLOSING.get(text[0])
    if closing is not None and text[-1] != closing:  # `_cut_short`
        return _plain_entry(_calls_after_json(text, _NOT_WHOLE, python_read=looks_like_call), key_fn)
    value = _NO_VALUE
    if _orjson_loads is not None and key_fn is leaf_key:
        try:
            fast = _orjson_loads(text)
        except _OrjsonError:
            return _plain_entry(_calls_after_json(text, _ORJSON_REFUSED, python_read=looks_like_call), key_fn)
        got = _orjson_value(fast)
        if type(got) is tuple:
            return got
        if not may_misread_numbers(text):
            value = fast  # what loads_fast reads: orjson's value
    if value is _NO_VALUE:
        try:
            value = loads_fast(text)
        except (ValueError, RecursionError, MemoryError):
            pass
    if value is not _NO_VALUE and type(value) is not str:
        got = _plain_value(value, key_fn, False)
        if got is not None:
            return got
    return _plain_entry(_calls_after_json(text, value, python_read=looks_like_call), key_fn)


def _score_plain(refs: tuple[Any, ...], entry: tuple[Any, ...], rid: str, interned: dict[tuple[int, ...], ToolCallCounts],
                 pair_cache: dict[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]) -> ToolCallRecord:
    """`_score_parsed` of a plain reference and an output entry, which is plain when its calls are
    all valid (else the general path scores it)."""
    if type(entry) is not tuple:
        return _score_parsed(_ref_calls(refs), entry, rid, interned)
    fmt, error, names, keys = entry
    n_pred = len(names)
    valid = error is None
    if n_pred == 1 and len(refs) == 2 and names[0] == refs[0]:
        rk, pk = refs[1], keys[0]
        if pk == rk:
            counts = interned.get(key := (1, 1, 1, 1, 1, 0, 1, 1, len(rk), 0, 0) if valid else (1, 0, 0, 1, 1, 0, 1, 1, len(rk), 0, 0))
            if counts is None:
                counts = _counts(interned, key)
            rec = _new(ToolCallRecord)
            s_id, s_valid, s_correct, s_format, s_pairs, s_counts, s_error = _RECORD_SET
            s_id(rec, rid)
            s_valid(rec, valid)
            s_correct(rec, valid)
            s_format(rec, fmt)
            s_pairs(rec, _PAIR_00)
            s_counts(rec, counts)
            s_error(rec, error)
            return rec
        tp = 0
        for p, k in rk.items():
            if pk.get(p) == k:
                tp += 1
        return _make_record(rid, valid, False, fmt, _PAIR_00, _counts(interned, (1, int(valid), 0, 1, 1, 0, 1, 0, tp, len(pk) - tp, len(rk) - tp)), error)
    n_ref = len(refs) >> 1
    ref_names = refs[::2]
    tp = fp = fn = exact = 0
    pairs: list[tuple[int, int]] = []
    if len(set(names)) == n_pred and len(set(ref_names)) == n_ref:
        # no name repeats on either side: each same-name pair is the only one its calls can form,
        # so the assignment would pair exactly these (in reference order)
        fp = sum(map(len, keys))  # less the keys of each paired predicted call below
        for i in range(n_ref):
            rk = refs[2 * i + 1]
            name = ref_names[i]
            if name not in names:
                fn += len(rk)
                continue
            j = names.index(name)
            pairs.append((i, j))
            pk = keys[j]
            fp -= len(pk)
            if pk == rk:
                tp += len(rk)
                exact += 1
                continue
            a, b, c = _plain_compare(rk, pk)
            tp, fp, fn = tp + a, fp + b, fn + c
    else:
        cmp = [[_plain_compare(refs[2 * i + 1], keys[j]) if names[j] == ref_names[i] else (0, 0, 0) for j in range(n_pred)] for i in range(n_ref)]
        if n_ref and n_pred:
            pairs = _group_pairs(ref_names, names, cmp)
        paired_ref, paired_pred = set(), set()
        for i, j in pairs:
            a, b, c = cmp[i][j]
            tp, fp, fn = tp + a, fp + b, fn + c
            if b == 0 and c == 0:
                exact += 1
            paired_ref.add(i)
            paired_pred.add(j)
        fn += sum(len(refs[2 * i + 1]) for i in range(n_ref) if i not in paired_ref)
        fp += sum(len(keys[j]) for j in range(n_pred) if j not in paired_pred)
    correct = valid and n_pred == n_ref and exact == n_ref
    counts = _counts(interned, (1, int(valid), int(correct), n_ref, n_pred, 0, len(pairs), exact, tp, fp, fn))
    pair_key = tuple(pairs)
    return _make_record(rid, valid, correct, fmt, pair_cache.setdefault(pair_key, pair_key), counts, error)


def _plain_compare(rk: dict[str, str], pk: dict[str, str]) -> tuple[int, int, int]:
    """`_compare` of a plain reference call's keys and a predicted call's keys."""
    if pk == rk:
        return len(rk), 0, 0
    tp = 0
    for p, k in rk.items():
        if pk.get(p) == k:
            tp += 1
    return tp, len(pk) - tp, len(rk) - tp


@dataclass(frozen=True, kw_only=True)
class ToolCallModelResult:
    model: str
    counts: ToolCallCounts
    metrics: dict[str, float]
    missing_ids: tuple[str, ...]
    extra_ids: tuple[str, ...]
    failed_ids: tuple[str, ...]
    formats: dict[str, int]
    invalid_examples: tuple[dict[str, Any], ...]
    extended: dict[str, ExtendedScores]
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            **self.metrics,
            **{f"{k}_mean": v.mean for k, v in self.extended.items()},
            **{f"{k}_pass_rate": v.pass_rate for k, v in self.extended.items()},
            "correct_count": self.counts.correct_records,
            "total_count": self.counts.records,
            "failed_ids": list(self.failed_ids),
            "missing_ids": list(self.missing_ids),
            "extra_ids": list(self.extra_ids),  # outputs for ids the truth does not have: ignored
            "counts": self.counts.to_dict(),
            "formats": dict(self.formats),
            "invalid_examples": list(self.invalid_examples),
            "extended": {k: v.to_dict() for k, v in self.extended.items()},
        }


@dataclass(frozen=True, kw_only=True)
class ToolCallResult:
    task: str
    config: ToolCallConfig
    n_records: int
    ranking: tuple[str, ...]
    models: dict[str, ToolCallModelResult]
    records: dict[str, tuple[ToolCallRecord, ...]]

    def per_record(self, metric: str) -> dict[str, np.ndarray]:
        """model → per-record values in record-id order (for the paired bootstrap)."""
        out = {}
        for m, recs in self.records.items():
            if metric == "call_accuracy":
                out[m] = np.array([r.correct for r in recs], dtype=np.float64)
            elif metric == "valid_call_rate":
                out[m] = np.array([r.valid for r in recs], dtype=np.float64)
            else:
                raise KeyError(metric)
        return out

    def count_matrix(self, model: str) -> tuple[tuple[str, ...], np.ndarray]:
        """(count column names, int array records × columns) of one model, in record-id order."""
        cols = tuple(f.name for f in fields(ToolCallCounts))
        rows = [[getattr(r.counts, c) for c in cols] for r in self.records[model]]
        return cols, np.array(rows, dtype=np.int64).reshape(len(rows), len(cols))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "checker": "generic",
            "config": self.config.to_dict(),
            "n_records": self.n_records,
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
        }


def _calls_text(calls: Sequence[tuple[str | None, Any]]) -> str:
    items = sorted(json.dumps({"name": n, "arguments": a}, sort_keys=True, ensure_ascii=False, default=str) for n, a in calls)
    return "[" + ",".join(items) + "]"


def score_toolcalls(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    possible_answer: bool = False,
    config: ToolCallConfig | None = None,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> ToolCallResult:
    """Score every model's tool calls against the reference calls.

    Args:
        truth: record id → reference calls (any supported shape; BFCL possible answers when
            `possible_answer=True`).
        predictions: model → record id → raw output. A missing output is an invalid record.
        similarity: optional extended metrics: name → SimilarityBackend, fed the canonical text
            of the predicted and the reference calls.
        progress: called after each record with (done, total, model, running metrics).
    """
    config = config or ToolCallConfig()
    return count_toolcalls(truth, predictions, possible_answer=possible_answer, config=config, similarity=similarity,
                           progress=progress).result(config)


def count_toolcalls(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    possible_answer: bool = False,
    config: ToolCallConfig,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> ToolCallsCount:
    """Every record of every model scored (the arguments of `score_toolcalls`): its ledger, the
    per-record results and the extended metrics. The in-memory score reduces the count of all
    records; the chunk engine adds up the ledgers of its chunks and reduces them the same way
    (`toolcalls_result`)."""
    key_fn = config.key_fn()
    ids = natural_sorted(truth)
    plain = not possible_answer  # plain references: the direct path (`_score_plain`)
    with paused_gc():
        ref_list, ref_slots, _ = _reference_slots(truth, ids, possible_answer, key_fn, plain=plain)
    refs = dict(zip(ids, map(_ref_calls, ref_list) if plain else ref_list)) if similarity else {}
    # an output's entry and the scoring of an entry against a reference
    read: Callable[[str, Callable[[Any], str | None]], Any] = _output_entry if plain else _general_entry
    score: Callable[..., ToolCallRecord] = _score_plain if plain else _score_general
    entry_of: Callable[[ParsedCalls, Callable[[Any], str | None]], Any] = _plain_entry if plain else _ParsedEntry
    pair_cache: dict[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = {}
    ledgers: dict[str, _ModelLedger] = {}
    extended_of: dict[str, dict[str, ExtendedScores]] = {}
    records: dict[str, tuple[ToolCallRecord, ...]] = {}
    interned: dict[tuple[int, ...], ToolCallCounts] = {}
    missing = _MISSING
    for m in sorted(predictions):
        preds = predictions[m]
        get = preds.get
        recs: list[ToolCallRecord] = []
        append = recs.append
        running = [0, 0, 0]  # records, valid, correct: what the progress line shows
        # per model: the reading of each output string met again with another reference
        # (bounded: outputs that never repeat must not hold every parsed output in memory)
        parsed_cache: dict[str, Any] = {}
        # output string → the record it first got and the reference tuple it was scored against
        # (the tuples are shared per distinct reference): the same output against the same
        # reference has the same verdict. An output met again with another reference goes to
        # `other`, keyed by (output, that reference's number). Both are left, as the reference
        # cache is, when few of the first outputs repeat (`_CACHE_PROBE`): each output is then
        # read and scored on its own.
        cached, repeats, probe_at = True, 0, _CACHE_PROBE
        seen_rec: dict[str, ToolCallRecord] = {}
        seen_ref: dict[str, Any] = {}
        other: dict[tuple[str, int], ToolCallRecord] = {}
        failed: list[str] = []
        missing_ids: list[str] = []
        new, s_id, s_valid, s_correct, s_format, s_pairs, s_counts, s_error = (_new, *_RECORD_SET)
        with paused_gc():
            for k, (i, ref, slot) in enumerate(zip(ids, ref_list, ref_slots), start=1):
                raw = get(i, missing)
                if type(raw) is str:
                    if not cached:
                        rec = score(ref, read(raw, key_fn), i, interned, pair_cache)
                        seen = None
                    elif (seen := seen_rec.get(raw)) is None:
                        # first met: read here; `parsed_cache` keeps the reading only for an
                        # output met again with another reference
                        rec = seen_rec[raw] = score(ref, read(raw, key_fn), i, interned, pair_cache)
                        seen_ref[raw] = ref
                        if k >= probe_at:
                            probe_at = len(ids) + 1
                            if repeats < _CACHE_PROBE // _CACHE_PROBE_HITS:
                                cached = False
                                seen_rec.clear()
                                seen_ref.clear()
                    else:
                        repeats += 1
                        if seen_ref[raw] is not ref:
                            seen = other.get((raw, slot))
                            if seen is None:
                                rec = other[raw, slot] = score(ref, _parsed_entry(parsed_cache, raw, key_fn, read), i, interned, pair_cache)
                    if seen is not None:
                        rec = new(ToolCallRecord)
                        s_id(rec, i)
                        s_valid(rec, seen.valid)
                        s_correct(rec, seen.correct)
                        s_format(rec, seen.format)
                        s_pairs(rec, seen.pairs)
                        s_counts(rec, seen.counts)
                        s_error(rec, seen.error)
                elif raw is missing:
                    rec = replace(score(ref, entry_of(parse_calls(None), key_fn), i, interned, pair_cache), error="no output for this id")
                    missing_ids.append(i)
                else:
                    rec = score(ref, entry_of(parse_calls(raw), key_fn), i, interned, pair_cache)
                if not rec.correct:
                    failed.append(i)
                append(rec)
                if progress is not None:
                    running[0] += 1
                    running[1] += rec.valid
                    running[2] += rec.correct
                    n = running[0]
                    progress(k, len(ids), m, {"valid_call_rate": running[1] / n, "call_accuracy": running[2] / n})
            del parsed_cache, seen_rec, seen_ref, other
        # sum each distinct (shared, from `interned`) counts object once, weighted by how many
        # records hold it
        distinct = {id(c): c for c in interned.values()}
        multiplicity = Counter(map(id, map(_COUNTS_OF, recs)))
        formats = Counter(map(_FORMAT_OF, recs))
        total = ToolCallCounts(**{f: sum(getattr(distinct[c], f) * n for c, n in multiplicity.items()) for f in _COUNT_FIELDS})
        extended = {}
        for metric, backend in sorted((similarity or {}).items()):
            pred_texts, ref_texts = [], []
            for r in recs:
                pc = parse_calls(preds.get(r.id))
                pred_texts.append(_calls_text([(c.name, c.args) for c in pc.calls]) if pc.calls else str(preds.get(r.id) or ""))
                ref_texts.append(_calls_text([(c.name, {p: sorted(v) for p, v in c.accept.items()}) for c in refs[r.id]]) if possible_answer else
                                 _calls_text([(c.name, c2) for c, c2 in zip(refs[r.id], [_ref_args(truth[r.id], n) for n in range(len(refs[r.id]))])]))
            extended[metric], _ = extended_scores(backend, pred_texts, ref_texts, threshold=config.pass_threshold)
        ledgers[m] = _ModelLedger(
            counts=total,
            formats=dict(formats),
            failed=tuple(failed),
            missing=tuple(missing_ids),
            # every output key is a truth id when as many keys as matched ids
            extra=() if len(preds) == len(ids) - len(missing_ids) else tuple(str(i) for i in preds if i not in truth),
            invalid_examples=tuple(islice(({"id": r.id, "error": r.error, "output": _preview(preds.get(r.id))} for r in recs if not r.valid), _EXAMPLES)),
        )
        extended_of[m] = extended
        records[m] = tuple(recs)
    return ToolCallsCount(ledger=ToolCallsLedger(n_records=len(ids), models=ledgers), records=records, extended=extended_of)


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    counts: ToolCallCounts
    formats: Mapping[str, int] = merge(by_key())
    failed: tuple[str, ...]  # in the order of the parts (put in natural order once, at the end)
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    # the first few in natural id order
    invalid_examples: tuple[dict[str, Any], ...] = merge(lambda a, b: first_by_id(a + b, _EXAMPLES))
    # `named_function_counts` (evaluate only)
    functions: Mapping[str | None, tuple[int, ...]] = merge(by_key(add_counts), default_factory=dict)
    merged: bool = merge(always(True), default=False)  # added up from several counts: the ids are put in natural order once, at the end


# the per-name counts of two sets of records (`functions.named_function_counts`), added
add_function_counts = by_key(add_counts)


@dataclass(frozen=True)
class ToolCallsLedger(Ledger):
    """Counts of some records, mergeable by `+`: per model the `ToolCallCounts` (every metric is a
    ratio of them), the output formats, the ids the result lists (failed, missing, extra, the
    first invalid examples) and, for `evaluate`, the counts per function name."""

    n_records: int
    models: Mapping[str, _ModelLedger] = merge(by_key())
    function_names: frozenset[str] = merge(union, default=frozenset())  # the reference's function names (evaluate only)


@dataclass(frozen=True)
class ToolCallsCount:
    """`count_toolcalls` of a set of records: its ledger, per model the per-record results and
    the extended metrics (means over every record, so never merged across chunks)."""

    ledger: ToolCallsLedger
    records: Mapping[str, tuple[ToolCallRecord, ...]]
    extended: Mapping[str, dict[str, ExtendedScores]]

    def result(self, config: ToolCallConfig) -> ToolCallResult:
        return toolcalls_result(self.ledger, config, records=self.records, extended=self.extended)


def toolcalls_result(ledger: ToolCallsLedger, config: ToolCallConfig, *, records: Mapping[str, tuple[ToolCallRecord, ...]] | None = None,
                     extended: Mapping[str, dict[str, ExtendedScores]] | None = None) -> ToolCallResult:
    """Ratios and ranking of a ledger: where the in-memory score and the chunk engine end."""
    results = {
        m: ToolCallModelResult(
            model=m,
            counts=ml.counts,
            metrics=ml.counts.metrics(zero_division=config.zero_division),
            # one count lists its ids in id order already
            missing_ids=natural_ids(ml.missing) if ml.merged else ml.missing,
            extra_ids=natural_ids(ml.extra),
            failed_ids=natural_ids(ml.failed) if ml.merged else ml.failed,
            formats=dict(sorted(ml.formats.items())),
            invalid_examples=ml.invalid_examples,
            extended=dict((extended or {}).get(m, {})),
        )
        for m, ml in sorted(ledger.models.items())
    }
    return ranked_result(results, config=config, n_records=ledger.n_records, records=records or {})


def ranked_result(results: Mapping[str, ToolCallModelResult], *, config: ToolCallConfig, n_records: int,
                  records: Mapping[str, tuple[Any, ...]]) -> ToolCallResult:
    """The result of every model's counts, ranked by the task's declaration (call accuracy first),
    each model with its rank: the in-memory score and the chunk engine's finalisation end here."""
    order = [r.model for r in rank_by_metrics(RANKING, {m: {f"toolcalls/{k}": float(v) for k, v in results[m].metrics.items()} for m in results})]
    ranked = {m: replace(results[m], rank=rank) for rank, m in enumerate(order, start=1)}
    return ToolCallResult(task="toolcalls", config=config, n_records=n_records, ranking=tuple(order), models={m: ranked[m] for m in results},
                          records=dict(records))


def _read_references(truth: Mapping[str, Any], ids: Sequence[str], possible_answer: bool, key_fn: Callable[[Any], str | None]) -> dict[str, tuple[RefCall, ...]]:
    """`reference_calls` of every record, read once per distinct reference value (see
    `_reference_slots`)."""
    ref_list, _, _ = _reference_slots(truth, ids, possible_answer, key_fn)
    return dict(zip(ids, ref_list))


_MISSING = object()
_PARSED_CACHE_MAX = 1 << 13


_COUNTS_OF = attrgetter("counts")
_FORMAT_OF = attrgetter("format")


def _parsed_entry(cache: dict[str, Any], raw: str, key_fn: Callable[[Any], str | None], read: Callable[[str, Callable[[Any], str | None]], Any]) -> Any:
    """The entry `read(raw, key_fn)` from the per-model cache, read on first use. The cache is
    emptied when full: outputs that never repeat must not hold every parse in memory."""
    entry = cache.get(raw)
    if entry is None:
        if len(cache) >= _PARSED_CACHE_MAX:
            cache.clear()
        entry = cache[raw] = read(raw, key_fn)
    return entry


def _general_entry(raw: str, key_fn: Callable[[Any], str | None]) -> _ParsedEntry:
    return _ParsedEntry(parse_calls(raw), key_fn)


def _score_general(refs: Sequence[RefCall], entry: _ParsedEntry, rid: str, interned: dict[tuple[int, ...], ToolCallCounts], pair_cache: Any) -> ToolCallRecord:
    return _score_parsed(refs, entry, rid, interned)


def _reference_slots(
    truth: Mapping[str, Any], ids: Sequence[str], possible_answer: bool, key_fn: Callable[[Any], str | None], *, plain: bool = False
) -> tuple[list[Any], list[int], int]:
    """`reference_calls` of every record in `ids` order, each distinct reference value read once,
    with the number of that distinct reference (0, 1, …) per record and how many there are.

    References repeat (the same expected call for many questions); the cache key is the value's
    `marshal` bytes, which exist only for values made of the built-in types themselves (no
    subclass) and tell apart everything `reference_calls` tells apart (`1` / `1.0` / `True` /
    `"1"`, lists / tuples, int / str keys); any other value is keyed by its `repr`, as before. A
    reference that raises is never cached, so each bad record is still named in its own error. A
    value nested too deeply for `repr` is read uncached, so `reference_calls` reports it as it
    would without the cache. With `plain` (never with `possible_answer`) each reference is
    `_plain_refs`' reading of it instead of its `RefCall`s.

    The cache costs more than it saves when references seldom repeat (a key per record, to look
    up and keep): when fewer than one in `_CACHE_PROBE_HITS` of the first `_CACHE_PROBE`
    references was met before, the rest are read one by one, each its own number.
    """
    cache: dict[str | bytes, int] = {}  # key → the number of its distinct reference
    distinct: list[Any] = []  # number → reading
    out: list[Any] = []

    def read(obj: Any, rid: str) -> Any:
        if plain:
            return _plain_refs(obj, key_fn, rid)
        return reference_calls(obj, possible_answer=possible_answer, key_fn=key_fn, where=f"reference {rid}")

    slots: list[int] = []
    n_slots = 0
    dumps = marshal.dumps
    for n, i in enumerate(ids):
        obj = truth[i]
        if n == _CACHE_PROBE and n - n_slots < _CACHE_PROBE // _CACHE_PROBE_HITS:
            break  # the rest below, uncached
        try:
            key: str | bytes = dumps(obj)
        except ValueError:  # a subclass or another type marshal does not write, or too deep
            try:
                key = repr(obj)
            except RecursionError:
                distinct.append(read(obj, i))  # a number of its own, never looked up
                out.append(distinct[n_slots])
                slots.append(n_slots)
                n_slots += 1
                continue
        got = cache.get(key)
        if got is None:
            distinct.append(read(obj, i))
            got = cache[key] = n_slots
            n_slots += 1
        out.append(distinct[got])
        slots.append(got)
    else:
        return out, slots, n_slots
    del cache, distinct
    if plain:
        out += [_plain_refs(truth[i], key_fn, i) for i in ids[len(out):]]
    else:
        out += [read(truth[i], i) for i in ids[len(out):]]
    n_read = len(out) - len(slots)
    slots += range(n_slots, n_slots + n_read)
    return out, slots, n_slots + n_read


# A cache of readings keyed by value is left once the first `_CACHE_PROBE` values show fewer
# than one repeat in `_CACHE_PROBE_HITS`.
_CACHE_PROBE = 4096
_CACHE_PROBE_HITS = 8


def _ref_args(obj: Any, n: int) -> Any:
    try:
        calls, _ = _calls_from_object(json.loads(obj) if isinstance(obj, str) else obj)
        return calls[n].args
    except (ValueError, _NotCalls, IndexError):
        return None


def _preview(raw: Any, limit: int = 160) -> str:
    s = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str) if raw is not None else ""
    return s if len(s) <= limit else s[:limit] + "…"


