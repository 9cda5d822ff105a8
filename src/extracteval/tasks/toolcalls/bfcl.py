"""A BFCL-compatible AST checker: the verdicts of the Berkeley Function Calling Leaderboard.

This is our own implementation of the rules the BFCL AST checker documents and applies to the
Python AST categories (`simple`, `multiple`, `parallel`, `parallel_multiple`, v1 and v4 layouts).
The goal is verdict-for-verdict agreement with the official checker, quirks included, because
users compare our numbers with the published leaderboard:

* **Decoding.** A result is either a list of `{function: arguments}` items, where `arguments` is a
  JSON string (function-calling models) or an object, or a string of Python calls
  `[f(a=1), g(b="x")]` (prompting models), read with `ast` (never evaluated). A result that cannot
  be decoded fails with `ast_decoder:decoder_failed`; one that decodes to anything other than a
  list of one-key `{name: {args}}` dicts fails with `ast_decoder:decoder_wrong_output_format`.
* **Category.** `parallel` in the category → the model's calls are matched to the expected calls
  in any order (each expected call, in order, takes the first unused model call that passes);
  `multiple` → exactly one call, checked against the one expected call; otherwise (simple)
  exactly one call. A count mismatch fails with `…:wrong_count`.
* **One call.** Function name must match (optionally with `.` mangled to `_`, as BFCL does for
  models whose API forbids dots); every `required` parameter present; no parameter absent from
  the function spec or from the possible answer; each value type-checked against the spec
  (`integer`, `float` — an int is accepted for a float —, `string`, `boolean`, `array`/`tuple`
  with a one-level item-type check, `dict`, `any`); strings compared after BFCL's normalisation
  (drop spaces and `,./-_*^`, lowercase, `'`→`"`); lists element-wise with the same
  normalisation on string items; dicts key by key; everything else by Python equality against
  the list of acceptable values. A parameter left out must have `""` among its acceptable values.
* **Variables.** When the possible answer's values have another type than the spec declares, the
  answer is taken to name a variable: a value of the answer's type passes the type check and is
  compared by plain equality.
* **Which description.** `answer_targets` applies BFCL's lookup: a single-call entry uses the
  described function whatever the answer's key says; v4 list answers look the key up exactly; v1
  object answers take one described object as is (except in `parallel_function`) and otherwise the
  first function whose name occurs inside the key. None found → `…:cannot_find_description`.
* **Irregular answers** never raise: a parameter map that is not an object accepts no argument;
  acceptable values that are a bare string are iterated by character (and may be left out); any
  other non-list value never matches; an empty answer fails a single-call entry. An unknown type
  in a description fails the call that uses it (`type_error:unknown_type`).

Example:
    >>> spec = [{"name": "math.factorial", "parameters": {"type": "dict",
    ...          "properties": {"number": {"type": "integer"}}, "required": ["number"]}}]
    >>> answer = [{"math.factorial": {"number": [5]}}]
    >>> check_entry(spec, decode_result([{"math.factorial": '{"number": 5}'}]), answer, "simple").valid
    True
    >>> check_entry(spec, decode_result("[math.factorial(number=5)]"), answer, "simple").valid
    True
    >>> check_entry(spec, decode_result("[math.factorial(number='5')]"), answer, "simple").error_type
    'type_error:simple'
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extracteval.tasks.toolcalls.contract import RANKING
from extracteval.core.ledger import Ledger, add_counts, by_key, keep, merge, ordered


__all__ = [
    "Verdict",
    "Decoded",
    "decode_result",
    "check_entry",
    "check_call",
    "answer_targets",
    "normalize_text",
    "category_of",
    "entry_sort_key",
    "parse_python_calls",
    "BfclEntry",
    "BfclCategoryScore",
    "BfclModelScore",
    "score_bfcl",
]

# BFCL type names → the Python type a decoded value must have
_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_SEQUENCE_TYPES = frozenset({"array", "tuple"})
_NORMALIZE_DROP = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The checker's verdict on one entry (or one call): valid, else an error type and message.

    `error_type` uses BFCL's names (`value_error:string`, `type_error:nested`,
    `simple_function_checker:missing_optional`, …) so verdicts can be compared with its score files.
    """

    valid: bool
    error_type: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "error_type": self.error_type, "error": self.error}


_OK = Verdict(valid=True)


def _fail(error_type: str, error: str) -> Verdict:
    return Verdict(valid=False, error_type=error_type, error=error)


@dataclass(frozen=True, kw_only=True)
class Decoded:
    """A decoded model result: `calls` as `[{name: {args}}]`, or the decoding failure."""

    calls: list[dict[str, Any]] | None
    failure: Verdict | None = None
    raw_kind: str = field(default="")


def normalize_text(s: str) -> str:
    """BFCL's string normalisation: drop spaces and `,./-_*^`, lowercase, `'` → `"`.

    >>> normalize_text("April 1, 2024") == normalize_text("april 1 2024")
    True
    """
    return _NORMALIZE_DROP.sub("", s).lower().replace("'", '"')


def category_of(entry_id: str) -> str:
    """`parallel_multiple_12` → `parallel_multiple`; `live_simple_3-1-0` → `live_simple`."""
    return entry_id.rsplit("_", 1)[0] if "_" in entry_id else entry_id


def entry_sort_key(entry_id: str) -> tuple[str, int, str]:
    """Natural order of BFCL ids: by category, then by the numeric index (`simple_2` < `simple_10`)."""
    cat, _, idx = entry_id.rpartition("_")
    head = idx.split("-", 1)[0]
    return (cat, int(head), entry_id) if head.isdigit() else (entry_id, -1, entry_id)


# --------------------------------------------------------------------------------------------
# decoding


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


# --------------------------------------------------------------------------------------------
# checking


def _answer_type(acceptable: Sequence[Any]) -> type | None:
    """The type of the first acceptable value that is not the optional marker `""`."""
    for a in acceptable:
        if a != "":
            return type(a)
    return None


@dataclass(frozen=True)
class _TypeCheck:
    verdict: Verdict
    is_variable: bool


def _type_check(param: str, value: Any, acceptable: Any, type_name: str, expected: type, inner: type | None) -> _TypeCheck:
    # One level of item-type checking for arrays, exactly as deep as BFCL goes.
    answer_type = _answer_type(acceptable) if isinstance(acceptable, (list, tuple, str)) else None
    is_variable = answer_type is not None and answer_type is not expected
    nested_failed = False
    if type(value) is expected:
        if inner is None:
            return _TypeCheck(_OK, is_variable)
        for option in acceptable:
            # An acceptable value that is not a list (the optional marker "") passes the item check.
            if type(option) is not list or all(
                _type_check(param, item, option, inner.__name__, inner, None).verdict.valid for item in value
            ):
                return _TypeCheck(_OK, is_variable)
        nested_failed = True
    if answer_type is not None and type(value) is answer_type:
        if nested_failed:
            return _TypeCheck(
                _fail("type_error:nested", f"Nested type check failed for parameter {param!r}: expected {type_name} of {inner.__name__ if inner else '?'}, got {value!r:.200}."),
                True,
            )
        return _TypeCheck(_OK, True)
    return _TypeCheck(
        _fail("type_error:simple", f"Incorrect type for parameter {param!r}: expected {type_name}, got {type(value).__name__} ({value!r:.200})."),
        is_variable,
    )


def _norm_if_str(v: Any) -> Any:
    return normalize_text(v) if type(v) is str else v


def _check_string(param: str, value: str, acceptable: Sequence[Any]) -> Verdict:
    options = [normalize_text(a) for a in acceptable if type(a) is str]
    if normalize_text(value) in options:
        return _OK
    return _fail("value_error:string", f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(acceptable)!r} (case-insensitive).")


def _check_list(param: str, value: list[Any], acceptable: Sequence[Any]) -> Verdict:
    normalized = [_norm_if_str(v) for v in value]
    options = []
    for option in acceptable:
        if isinstance(option, (list, tuple, str)):
            # the optional marker "" behaves as an empty list of options here, as in BFCL
            options.append([_norm_if_str(x) for x in option])
    if normalized in options:
        return _OK
    return _fail("value_error:list/tuple", f"Invalid value for parameter {param!r}: {value!r:.200}. Expected one of {list(acceptable)!r:.300}.")


def _check_dict(param: str, value: Mapping[str, Any], acceptable: Sequence[Any]) -> Verdict:
    verdict = _fail("dict_checker:unclear", f"No acceptable dictionary for parameter {param!r}.")
    for option in acceptable:
        if type(option) is str and option == "":
            continue
        if not isinstance(option, Mapping):
            verdict = _fail("dict_checker:unclear", f"No acceptable dictionary for parameter {param!r}.")
            continue
        verdict = _dict_against(param, value, option)
        if verdict.valid:
            return _OK
    return verdict


def _dict_against(param: str, value: Mapping[str, Any], option: Mapping[str, Any]) -> Verdict:
    for key, v in value.items():
        if key not in option:
            return _fail("value_error:dict_key", f"Unexpected dict key in parameter {param!r}: {key!r}.")
        choices = option[key]
        choices = [_norm_if_str(c) for c in choices] if isinstance(choices, (list, tuple)) else []
        if _norm_if_str(v) not in choices:
            return _fail("value_error:dict_value", f"Invalid value for key {key!r} of parameter {param!r}: {v!r:.200}.")
    for key, choices in option.items():
        if key not in value and "" not in (choices if isinstance(choices, (list, tuple)) else [choices]):
            return _fail("value_error:dict_key", f"Missing dict key in parameter {param!r}: {key!r}.")
    return _OK


def _check_list_of_dicts(param: str, value: list[Any], acceptable: Sequence[Any]) -> Verdict:
    verdict = _fail("list_dict_checker:unclear", f"No acceptable list of dictionaries for parameter {param!r}.")
    for option in acceptable:
        if not isinstance(option, (list, tuple, str)):
            continue
        if len(value) != len(option):
            verdict = _fail("value_error:list_dict_count", f"Wrong number of dictionaries in parameter {param!r}.")
            continue
        ok = True
        for item, expected in zip(value, option):
            verdict = _check_dict(param, item, [expected]) if isinstance(item, Mapping) else _fail(
                "value_error:dict_value", f"Parameter {param!r}: expected a dictionary, got {item!r:.100}."
            )
            if not verdict.valid:
                ok = False
                break
        if ok:
            return _OK
    return verdict


def _spec_type(type_name: Any) -> type | None:
    try:
        return _PY_TYPES[type_name]
    except (KeyError, TypeError):
        return None


def _unknown_type(name: str, param: str, type_name: Any) -> Verdict:
    # BFCL's checker stops with a KeyError here; we fail the call instead of the whole run
    return _fail("type_error:unknown_type", f"Function {name!r}, parameter {param!r}: the description declares the type {type_name!r}, "
                 f"which the checker does not know ({', '.join(_PY_TYPES)}).")


def _acceptable_list(acceptable: Any) -> tuple[list[Any] | None, bool]:
    """The acceptable values as BFCL iterates them, and whether leaving the parameter out is allowed.

    A list is used as is. A bare string is iterated character by character by BFCL's checker
    (and `"" in text` is always true, so the parameter may be left out). Any other value (a
    number, an object, null) can never be matched.
    """
    if isinstance(acceptable, list):
        return acceptable, "" in acceptable
    if isinstance(acceptable, str):
        return list(acceptable), True
    return None, False


def check_call(
    spec: Mapping[str, Any],
    call: Mapping[str, Any],
    answer: Mapping[str, Any],
    *,
    underscore_to_dot: bool = False,
    entry_id: str = "",
) -> Verdict:
    """Check one decoded call `{name: {args}}` against one possible answer `{name: {param: [ok values]}}`.

    Args:
        spec: the function description (`name`, `parameters.properties`, `parameters.required`).
        answer: one expected call; its parameter map is used whatever its key says (the caller
            chose `spec` by BFCL's rules). An irregular map (not an object) or acceptable values
            that are not a list are scored as BFCL scores them: such a call can never pass.
        underscore_to_dot: BFCL's name mangling for models whose API forbids `.` in function
            names: the expected name `a.b` is looked for as `a_b`.
    """
    acceptable_by_param = next(iter(answer.values())) if answer else None
    name = str(spec.get("name", ""))
    if underscore_to_dot and "." in name:
        name = name.replace(".", "_")
    if name not in call:
        return _fail("simple_function_checker:wrong_func_name", f"Function name {name!r} not found in model output.")
    args = call[name]
    parameters = spec.get("parameters")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    props = parameters.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = parameters.get("required")
    for p in required if isinstance(required, list) else []:
        if p not in args:
            return _fail("simple_function_checker:missing_required", f"Missing required parameter: {p!r}.")
    if not isinstance(acceptable_by_param, Mapping):
        # the possible answer's parameter map is not an object: no argument can be expected by it
        if args:
            return _fail("simple_function_checker:unexpected_param", f"Unexpected parameter: {next(iter(args))!r} (the possible answer has no parameter map).")
        if acceptable_by_param in ([], "", None):
            return _OK
        return _fail("simple_function_checker:missing_optional", "The possible answer's parameters are not an object; no call can match them.")
    for p, value in args.items():
        prop = props.get(p) if p in acceptable_by_param else None
        if not isinstance(prop, Mapping):
            return _fail("simple_function_checker:unexpected_param", f"Unexpected parameter: {p!r}.")
        type_name = prop.get("type")
        expected = _spec_type(type_name)
        if expected is None:
            return _unknown_type(name, p, type_name)
        inner = None
        if type_name in _SEQUENCE_TYPES:
            items = prop.get("items")
            if isinstance(items, Mapping) and "type" in items:
                inner = _spec_type(items["type"])
                if inner is None:
                    return _unknown_type(name, f"{p}[]", items["type"])
        if type_name == "tuple" and type(value) is tuple:
            value = list(value)
        if type_name == "float" and type(value) is int:  # Python's implicit int → float
            value = float(value)
        acceptable, _ = _acceptable_list(acceptable_by_param[p])
        if acceptable is None:
            return _fail("value_error:others", f"Invalid value for parameter {p!r}: {value!r:.200}. The possible answer's acceptable values "
                         f"are not a list ({acceptable_by_param[p]!r:.100}); no value can match them.")
        tc = _type_check(p, value, acceptable, str(type_name), expected, inner)
        if not tc.verdict.valid:
            return tc.verdict
        if not tc.is_variable:
            if expected is dict:
                v = _check_dict(p, value, acceptable)
            elif expected is list and inner is dict:
                v = _check_list_of_dicts(p, value, acceptable)
            elif expected is str:
                v = _check_string(p, value, acceptable)
            elif expected is list:
                v = _check_list(p, value, acceptable)
            else:
                v = None
            if v is not None:
                if not v.valid:
                    return v
                continue
        try:
            found = value in acceptable
        except TypeError:
            found = False
        if not found:
            return _fail("value_error:others", f"Invalid value for parameter {p!r}: {value!r:.200}. Expected one of {list(acceptable)!r:.300}.")
    for p, acceptable in acceptable_by_param.items():
        if p not in args and not _acceptable_list(acceptable)[1]:
            return _fail("simple_function_checker:missing_optional", f"Optional parameter {p!r} not provided and not marked as optional.")
    return _OK


# --------------------------------------------------------------------------------------------
# which function description each expected call is checked against


def answer_targets(
    functions: Sequence[Mapping[str, Any]],
    answer_keys: Sequence[str],
    category: str,
    *,
    layout: str = "v4",
    function_was_object: bool = False,
) -> tuple[int | None, ...]:
    """The index in `functions` of the description each expected call is checked against (None: none).

    BFCL's rules, per layout of the possible answer:

    * a single-call (`simple`) entry is checked against the (first) function the question
      describes, whatever name the possible answer gives;
    * v4 (list answers): the described function whose name equals the answer's key;
    * v1 (object answers): when the question's `function` is one object it is the description,
      except in `parallel_function`, where it is looked up like a list; in a list, the first
      function whose name occurs inside the answer key (so `spotify.play_1` finds `spotify.play`).
    """
    simple = "parallel" not in category and "multiple" not in category
    if simple or (function_was_object and not (layout == "v1" and category == "parallel_function")):
        return tuple(0 if functions else None for _ in answer_keys)
    names = [str(f.get("name", "")) if isinstance(f, Mapping) else "" for f in functions]
    out: list[int | None] = []
    for key in answer_keys:
        if layout == "v1":
            out.append(next((i for i, n in enumerate(names) if n in key), None))
        else:
            out.append(next((i for i, n in enumerate(names) if n == key), None))
    return tuple(out)


def check_entry(
    specs: Sequence[Mapping[str, Any]],
    decoded: Decoded,
    answers: Sequence[Mapping[str, Any]],
    category: str,
    *,
    underscore_to_dot: bool = False,
    entry_id: str = "",
    targets: Sequence[int | None] | None = None,
    layout: str = "v4",
) -> Verdict:
    """The verdict on one BFCL entry.

    Args:
        specs: the question's function descriptions (a list; v1's single object wrapped).
        decoded: `decode_result(raw)`.
        answers: the possible answer, a list of `{name: {param: [acceptable values]}}`.
        category: the test category; `parallel` / `multiple` in it select BFCL's checkers.
        targets: per expected call, the index of its description in `specs` (see
            `answer_targets`; computed with exact names when omitted).
        layout: `v1` (object possible answers, 2024): every `parallel` or `multiple` entry goes
            through the order-free checker, as BFCL's checker of that time did; `v4`: `multiple`
            entries go through the one-call checker.
    """
    if decoded.calls is None:
        assert decoded.failure is not None
        return decoded.failure
    calls = decoded.calls
    if targets is None:
        targets = answer_targets(specs, [next(iter(a), "") if isinstance(a, Mapping) else "" for a in answers], category, layout=layout)
    opts = {"underscore_to_dot": underscore_to_dot, "entry_id": entry_id}
    no_order = "parallel" in category or (layout == "v1" and "multiple" in category)
    if no_order:
        checker = "parallel_function_checker_no_order"
        if len(calls) != len(answers):
            return _fail(f"{checker}:wrong_count", "Wrong number of functions.")
        used: set[int] = set()
        for i, (answer, t) in enumerate(zip(answers, targets)):
            if t is None:
                return _no_description(checker, answer)
            spec = specs[t]
            last: Verdict | None = None
            for j, call in enumerate(calls):
                if j in used:
                    continue
                last = check_call(spec, call, answer, **opts)
                if last.valid:
                    used.add(j)
                    break
            if last is None or not last.valid:
                left = [j for j in range(len(calls)) if j not in used]
                detail = f" Last error: {last.error}" if last is not None else ""
                return _fail(
                    f"{checker}:cannot_find_match",
                    f"Could not find a matching function among index {left} of model output for index {i} of possible answers.{detail}",
                )
        return _OK
    if "multiple" in category:
        if len(calls) != len(answers):
            return _fail("multiple_function_checker:wrong_count", "Wrong number of functions.")
        if not answers:
            return _OK
        if targets[0] is None:
            return _no_description("multiple_function_checker", answers[0])
        return check_call(specs[targets[0]], calls[0], answers[0], **opts)
    if len(calls) != 1:
        return _fail("simple_function_checker:wrong_count", "Wrong number of functions.")
    if not answers:
        return _fail("simple_function_checker:empty_possible_answer", "The possible answer lists no expected call; no call can match it.")
    if not specs or targets[0] is None:
        return _no_description("simple_function_checker", answers[0])
    return check_call(specs[targets[0]], calls[0], answers[0], **opts)


def _no_description(checker: str, answer: Mapping[str, Any]) -> Verdict:
    name = next(iter(answer), "") if isinstance(answer, Mapping) else ""
    return _fail(f"{checker}:cannot_find_description", f"Function doc description not found for function name: {name!r}.")


# --------------------------------------------------------------------------------------------
# scoring a whole file


@dataclass(frozen=True, kw_only=True)
class BfclCategoryScore(Ledger):
    """Accuracy of one model on one BFCL category, as BFCL's score file states it."""

    category: str = merge(keep)
    correct_count: int
    total_count: int
    failed_ids: tuple[str, ...] = merge(ordered(entry_sort_key))

    @property
    def accuracy(self) -> float:
        return self.correct_count / self.total_count if self.total_count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "correct_count": self.correct_count,
            "total_count": self.total_count,
            "failed_ids": list(self.failed_ids),
        }


@dataclass(frozen=True, kw_only=True)
class BfclModelScore(Ledger):
    """One model's BFCL verdicts: overall `call_accuracy`, per category, and each failure's reason.

    `dotted_name_entries` / `underscored_name_entries`: entries where the model called a described
    `a.b` function by that name, or by `a_b` (the name with `.` replaced by `_`, as APIs that
    forbid dots make it); they tell whether `underscore_to_dot` fits the model.
    """

    model: str = merge(keep)
    correct_count: int
    total_count: int
    failed_ids: tuple[str, ...] = merge(ordered(entry_sort_key))
    categories: dict[str, BfclCategoryScore] = merge(by_key(sort=True))
    failures: dict[str, Verdict] = merge(lambda a, b: {i: v for i, v in sorted({**a, **b}.items(), key=lambda kv: entry_sort_key(kv[0]))})
    missing_ids: tuple[str, ...] = merge(ordered(entry_sort_key))
    error_types: dict[str, int] = merge(by_key(add_counts, sort=True))
    underscore_to_dot: bool = merge(keep, default=False)
    dotted_name_entries: int = 0
    underscored_name_entries: int = 0

    @property
    def call_accuracy(self) -> float:
        return self.correct_count / self.total_count if self.total_count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_accuracy": self.call_accuracy,
            "correct_count": self.correct_count,
            "total_count": self.total_count,
            "failed_ids": list(self.failed_ids),
            "missing_ids": list(self.missing_ids),
            "error_types": dict(self.error_types),
            "underscore_to_dot": self.underscore_to_dot,
            "name_forms": {"dotted_name_entries": self.dotted_name_entries, "underscored_name_entries": self.underscored_name_entries},
            "categories": {c: s.to_dict() for c, s in self.categories.items()},
            "failures": {i: {"error_type": v.error_type, "error": v.error} for i, v in self.failures.items()},
        }


@dataclass(frozen=True, kw_only=True)
class BfclEntry:
    """What the checker needs about one test entry.

    `targets`: per expected call, the index in `functions` of the description it is checked
    against (`answer_targets`; None when BFCL's rules find none); computed from exact names when
    not given. `layout`: `v1` for object possible answers (2024 files), else `v4`.
    """

    id: str
    category: str
    functions: Sequence[Mapping[str, Any]]
    answers: Sequence[Mapping[str, Any]]
    targets: tuple[int | None, ...] | None = None
    layout: str = "v4"


def _name_forms(entry: BfclEntry) -> tuple[frozenset[str], frozenset[str]]:
    """(dotted names the question describes, their `_` forms that are not described names)."""
    names = {str(f.get("name", "")) for f in entry.functions if isinstance(f, Mapping)}
    dotted = frozenset(n for n in names if "." in n)
    return dotted, frozenset(n.replace(".", "_") for n in dotted) - names


def score_bfcl(
    entries: Sequence[BfclEntry],
    results: Mapping[str, Any],
    *,
    model: str = "model",
    underscore_to_dot: bool = False,
) -> BfclModelScore:
    """Check every entry; an entry with no result fails with `missing_result`.

    `total_count` is the number of entries, `failed_ids` sorted in BFCL's natural id order, so the
    numbers line up with BFCL's `*_score.json` files.
    """
    failures: dict[str, Verdict] = {}
    per_cat_total: dict[str, int] = {}
    per_cat_failed: dict[str, list[str]] = {}
    missing = []
    dotted_entries = underscored_entries = 0
    for e in entries:
        per_cat_total[e.category] = per_cat_total.get(e.category, 0) + 1
        per_cat_failed.setdefault(e.category, [])
        if e.id not in results:
            missing.append(e.id)
            v = _fail("missing_result", "The result file has no entry with this id.")
        else:
            decoded = decode_result(results[e.id])
            v = check_entry(e.functions, decoded, e.answers, e.category, underscore_to_dot=underscore_to_dot, entry_id=e.id,
                            targets=e.targets, layout=e.layout)
            if decoded.calls:
                dotted, underscored = _name_forms(e)
                if dotted:
                    called = {next(iter(c)) for c in decoded.calls}
                    dotted_entries += bool(called & dotted)
                    underscored_entries += bool(called & underscored)
        if not v.valid:
            failures[e.id] = v
            per_cat_failed[e.category].append(e.id)
    order = sorted(failures, key=entry_sort_key)
    cats = {
        c: BfclCategoryScore(
            category=c,
            correct_count=per_cat_total[c] - len(per_cat_failed[c]),
            total_count=per_cat_total[c],
            failed_ids=tuple(sorted(per_cat_failed[c], key=entry_sort_key)),
        )
        for c in sorted(per_cat_total)
    }
    types: dict[str, int] = {}
    for v in failures.values():
        types[str(v.error_type)] = types.get(str(v.error_type), 0) + 1
    return BfclModelScore(
        model=model,
        correct_count=len(entries) - len(failures),
        total_count=len(entries),
        failed_ids=tuple(order),
        categories=cats,
        failures={i: failures[i] for i in order},
        missing_ids=tuple(sorted(missing, key=entry_sort_key)),
        error_types=dict(sorted(types.items())),
        underscore_to_dot=underscore_to_dot,
        dotted_name_entries=dotted_entries,
        underscored_name_entries=underscored_entries,
    )


def underscore_to_dot_models(option: Any, models: list[str]) -> set[str]:
    """The models whose expected `a.b` function names are looked for as `a_b`.

    `option` is what `--underscore-to-dot` collected: `*` (the flag without a name: every model),
    model names, True/False (an experiment file's boolean), or nothing.
    """
    from extracteval.errors import InputError

    if option is None or option is False:
        return set()
    if option is True:
        return set(models)
    names = [option] if isinstance(option, str) else list(option)
    if "*" in names:
        return set(models)
    unknown = sorted(set(names) - set(models))
    if unknown:
        raise InputError(f"--underscore-to-dot {unknown[0]}: no model of that name; the models are {', '.join(models)} "
                         "(give the flag without a name to apply it to every model).")
    return set(names)


def mangling_warning(score: Any) -> str | None:
    """A note when a model's calls fit the described `a.b` names only with the other mangling setting."""
    dotted, underscored = score.dotted_name_entries, score.underscored_name_entries
    if not score.underscore_to_dot and underscored > dotted:
        return (f"{score.model}: in {underscored} entries its calls name functions with '.' replaced by '_' (a_b for a.b), which match "
                f"the question's functions only with name mangling; if its API forbids dots, score it with --underscore-to-dot {score.model}")
    if score.underscore_to_dot and dotted > underscored:
        return (f"{score.model}: scored with --underscore-to-dot, but in {dotted} entries its calls use the dotted names as described "
                f"(a.b), which fail under name mangling; score it without --underscore-to-dot {score.model}")
    return None


def generic_answers(entry: Any) -> list[dict[str, Any]]:
    """The possible answer of an entry as the generic checker reads it: irregular shapes made regular
    (a parameter map that is not an object → no parameters; acceptable values that are not a list → a list of one)."""
    out = []
    for item in entry.answers:
        name, params = next(iter(item.items()))
        params = params if isinstance(params, dict) else {}
        out.append({name or "(no function)": {k: v if isinstance(v, list) else [v] for k, v in params.items()}})
    return out


def generic_view(metrics: Mapping[str, float]) -> dict[str, Any]:
    """The generic checker's metrics shown next to BFCL's verdicts."""
    keys = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")
    return {k: metrics[k] for k in keys} | {"note": "generic checker on the same files (optimal pairing, exact values); BFCL's verdicts are above"}


def bfcl_document(
    entries: Sequence[BfclEntry], scores: Mapping[str, BfclModelScore], generic_metrics: Mapping[str, Mapping[str, float]], *,
    data_warnings: Sequence[Any], mangled: set[str], inputs: Mapping[str, Any],
) -> dict[str, Any]:
    """The `--json` document of the BFCL checker: models ranked by the task's ranking declaration
    (the generic metrics, call accuracy being BFCL's), the files' warnings then the models' name
    mangling notes, and their counts per kind."""
    from extracteval.core.ranking import rank_by_metrics

    ranked = rank_by_metrics(RANKING, {m: {**{f"toolcalls/{k}": float(v) for k, v in generic_metrics[m].items()},
                                               "toolcalls/call_accuracy": float(scores[m].call_accuracy)} for m in scores})
    ranking = [r.model for r in ranked]
    warnings = [w.to_dict() for w in data_warnings] + [{"kind": "name_mangling", "model": m, "message": msg}
                                                        for m in sorted(scores) if (msg := mangling_warning(scores[m]))]
    kinds: dict[str, int] = {}
    for w in warnings:
        kinds[w["kind"]] = kinds.get(w["kind"], 0) + 1
    return {
        "task": "toolcalls",
        "checker": "bfcl",
        "config": {"underscore_to_dot": sorted(mangled)},
        "n_records": len(entries),
        "categories": sorted({e.category for e in entries}),
        "ranking": ranking,
        "models": {m: {"rank": k, **scores[m].to_dict(), "generic": generic_view(generic_metrics[m])} for k, m in enumerate(ranking, start=1)},
        "inputs": dict(inputs),
        "count_columns": ["records", "correct_records"],
        "warnings": warnings,
        "warning_counts": dict(sorted(kinds.items())),
    }
