"""BFCL's decoding of a model's result: Python call syntax read with `ast` (never evaluated), a fast path for
plain keyword literals, and JSON call lists."""

from __future__ import annotations

import ast
import json
import keyword
import re
import warnings
from typing import Any

from extracteval.tasks.toolcalls.bfcl.vocabulary import Decoded, _fail


def _literal(node: ast.AST) -> Any:
    """A call argument as a value: literals, lists, dicts, negative numbers; a bare name or any
    other expression becomes its source text (BFCL reads variables as strings)."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
        v = node.operand.value
        if isinstance(v, (int, float, complex)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:  # `**spread` inside a dict literal: keep the text, never evaluate
                return ast.unparse(node)
            key = _literal(k)
            try:
                out[key] = _literal(v)
            except TypeError:  # unhashable key such as a list
                return ast.unparse(node)
        return out
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def _call_name(func: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    else:
        parts.append(ast.unparse(func))
    return ".".join(reversed(parts))


_PY_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


_PY_CALL_HEAD = re.compile(rf"[ \t]*({_PY_NAME}(?:\.{_PY_NAME})*)[ \t]*\([ \t]*")


# one keyword argument with a plain literal value, the blanks after it, and a comma with the
# blanks after that when one follows
_PY_KWARG = re.compile(
    rf"({_PY_NAME})[ \t]*=[ \t]*(?:'([^'\\\n\r\x00]*)'|\"([^\"\\\n\r\x00]*)\""
    rf"|(-?(?:0|[1-9][0-9]{{0,80}})(?:\.[0-9]{{1,80}})?(?:[eE][+-]?[0-9]{{1,3}})?)|(True|False|None))[ \t]*(,[ \t]*)?"
)


_PY_CONSTANTS = {"True": True, "False": False, "None": None}


_PY_RESERVED = frozenset(keyword.kwlist) | {"__debug__"}  # names no call or argument may have


def _simple_calls(text: str) -> list[dict[str, dict[str, Any]]] | None:
    """`f(a='x', b=2)` or `[f(a=1), pkg.g(b="y")]` with only keyword arguments whose values are
    plain literals (quoted text without escapes, decimal numbers, True/False/None), read without
    `ast`: exactly what `ast` gives for these, or None for anything else (other syntax, a
    reserved word as a name, a repeated argument, non-ASCII text), which `ast` then reads."""
    if not text.isascii():
        return None
    n = len(text)
    in_list = text.startswith("[")
    pos = 1 if in_list else 0
    calls: list[dict[str, dict[str, Any]]] = []
    head = _PY_CALL_HEAD.match
    kwarg = _PY_KWARG.match
    reserved = _PY_RESERVED
    while True:
        m = head(text, pos)
        if m is None:
            return None
        name = m.group(1)
        if (name in reserved) if "." not in name else not reserved.isdisjoint(name.split(".")):
            return None
        pos = m.end()
        args: dict[str, Any] = {}
        if pos < n and text[pos] != ")":
            while True:
                a = kwarg(text, pos)
                if a is None:
                    return None
                arg, s1, s2, num, const, comma = a.groups()
                if arg in args or arg in reserved:
                    return None
                if s1 is not None:
                    args[arg] = s1
                elif s2 is not None:
                    args[arg] = s2
                elif num is not None:
                    args[arg] = float(num) if "." in num or "e" in num or "E" in num else int(num)
                else:
                    args[arg] = _PY_CONSTANTS[const]
                pos = a.end()
                if comma is None:
                    break
                if pos < n and text[pos] == ")":  # a trailing comma: left to ast
                    return None
        if pos >= n or text[pos] != ")":
            return None
        pos += 1  # ")"
        calls.append({name: args})
        while pos < n and text[pos] in " \t":
            pos += 1
        if not in_list:
            return calls if pos == n else None
        if pos < n and text[pos] == ",":
            pos += 1
            continue
        if pos == n - 1 and text[pos] == "]":
            return calls
        return None


def parse_python_calls(text: str, *, keep_positional: bool = False) -> list[dict[str, dict[str, Any]]]:
    """`[f(a=1), pkg.g(b="x")]` or `f(a=1)` → `[{"f": {"a": 1}}, {"pkg.g": {"b": "x"}}]`.

    Parsed with `ast.parse(mode="eval")`, never evaluated (calls whose keyword arguments are all
    plain literals are read directly, to the same result: `_simple_calls`). Keyword arguments only, as BFCL
    reads them; with `keep_positional=True` positional arguments are kept under keys `"*0"`,
    `"*1"`, … Raises `SyntaxError` or `ValueError` on anything that is not a call or a list of
    calls.
    """
    simple = _simple_calls(text.strip())
    if simple is not None:
        return simple
    with warnings.catch_warnings():  # e.g. "invalid escape sequence" in model text: not our concern
        warnings.simplefilter("ignore")
        tree = ast.parse(text.strip(), mode="eval")
    body = tree.body
    elems = [body] if isinstance(body, ast.Call) else body.elts if isinstance(body, (ast.List, ast.Tuple)) else None
    if elems is None:
        raise ValueError(f"expected a call or a list of calls, found {type(body).__name__}")
    calls = []
    for e in elems:
        if not isinstance(e, ast.Call):
            raise ValueError(f"expected a call, found {type(e).__name__}")
        args: dict[str, Any] = {}
        if keep_positional:
            for i, a in enumerate(e.args):
                args[f"*{i}"] = _literal(a)
        for kw in e.keywords:
            if kw.arg is None:  # **kwargs spread: not a literal argument
                raise ValueError("`**` argument spread is not a literal call")
            args[kw.arg] = _literal(kw.value)
        calls.append({_call_name(e.func): args})
    return calls


def decode_result(raw: Any) -> Decoded:
    """Decode one BFCL `result` value the way BFCL's handlers do (see the module docstring)."""
    try:
        if isinstance(raw, str):
            text = raw.strip("`\n ")
            if not text.startswith("["):
                text = "[" + text
            if not text.endswith("]"):
                text = text + "]"
            calls: Any = parse_python_calls(text)
            kind = "python"
        elif isinstance(raw, list):
            calls = []
            for item in raw:
                if not isinstance(item, dict) or not item:
                    raise ValueError(f"expected a {{function: arguments}} object, found {item!r:.80}")
                name = next(iter(item))
                args = item[name]
                if isinstance(args, str):
                    args = json.loads(args)
                elif not isinstance(args, dict):
                    raise ValueError(f"arguments of {name!r} are neither a JSON string nor an object")
                calls.append({name: args})
            kind = "function_calling"
        else:
            raise ValueError(f"expected a list of calls or a string, found {type(raw).__name__}")
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as e:
        return Decoded(calls=None, failure=_fail("ast_decoder:decoder_failed", f"Invalid syntax. Failed to decode AST. {e}"))
    if not _is_call_list(calls):
        return Decoded(
            calls=None,
            failure=_fail("ast_decoder:decoder_wrong_output_format", "Did not output in the specified format."),
        )
    return Decoded(calls=calls, raw_kind=kind)


def _is_call_list(calls: Any) -> bool:
    if type(calls) is not list:
        return False
    return all(type(c) is dict and len(c) == 1 and type(next(iter(c.values()))) is dict for c in calls)
