"""The `toolcalls` task's direct path for plain references (not BFCL possible answers): a reference is the flat
tuple (name, keys, name, keys, …) computed once, an output read by orjson where it agrees, and the comparison
reduced to agreeing paths; outputs with an invalid call keep the general path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extracteval.tasks.toolcalls.bfcl.decoding import _simple_calls
from extracteval.core.jsonparse import loads_fast, may_misread_numbers
from extracteval.core.decision_track import leaf_key

try:  # orjson reads the usual outputs; where it could read other values than json.loads, `loads_fast` decides
    from orjson import JSONDecodeError as _OrjsonError
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - exercised only without orjson installed
    _orjson_loads = None
from extracteval.tasks.toolcalls.parsing import ParsedCalls, _CLOSING, _LOOKS_LIKE_CALL, _NOT_WHOLE, _NO_VALUE, _ORJSON_REFUSED, _calls_after_json, _new, _python_call_list
from extracteval.tasks.toolcalls.references import RefCall, _NO_OPTIONAL, _present_keys, _scalar_keys, reference_calls
from extracteval.tasks.toolcalls.config import ToolCallCounts, ToolCallRecord
from extracteval.tasks.toolcalls.counting import _PAIR_00, _ParsedEntry, _RECORD_SET, _counts, _group_pairs, _make_record, _score_parsed


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
