"""The `toolcalls` task's references: the expected calls read once, each argument keyed by path and value (or a
BFCL possible answer's accepted values)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from extracteval.core.decision_track import _PLAIN_INT, _key_part, flat_keys, leaf_key
from extracteval.errors import InputError

from extracteval.tasks.toolcalls.parsing import _NotCalls, _calls_from_object, _new, parse_calls


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
