"""BFCL's checker: a decoded call against a function description and its possible answers (types, strings
normalised, lists, dicts, optional parameters), and which description each expected call is checked against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extracteval.tasks.toolcalls.bfcl.vocabulary import Decoded, Verdict, _OK, _PY_TYPES, _SEQUENCE_TYPES, _fail, normalize_text


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


def _check_arg(name: str, p: str, value: Any, prop: Mapping[str, Any], acceptable_by_param: Mapping[str, Any]) -> Verdict | None:
    """One argument `p` of the call against its description `prop` and its possible answer's
    acceptable values (`acceptable_by_param[p]`): the failing verdict, or None when it passes."""
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
            return None if v.valid else v
    try:
        found = value in acceptable
    except TypeError:
        found = False
    if not found:
        return _fail("value_error:others", f"Invalid value for parameter {p!r}: {value!r:.200}. Expected one of {list(acceptable)!r:.300}.")
    return None


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
        v = _check_arg(name, p, value, prop, acceptable_by_param)
        if v is not None:
            return v
    for p, acceptable in acceptable_by_param.items():
        if p not in args and not _acceptable_list(acceptable)[1]:
            return _fail("simple_function_checker:missing_optional", f"Optional parameter {p!r} not provided and not marked as optional.")
    return _OK


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
