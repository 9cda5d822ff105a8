"""The shortcuts `score_toolcalls` takes for speed never change a verdict.

It parses each distinct output string once, reads each distinct reference once (keyed by
`repr`), reuses the verdict of an output already scored against the same reference, flattens
plain argument objects without the generic walker and skips `ast` on text that cannot be a
Python call. Each test compares against the plain per-record path.
"""

from __future__ import annotations

import random
from dataclasses import asdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.structured.semantics import flat_keys, leaf_key
from extracteval.tasks.toolcalls import parsing as tc  # the reading of outputs, internals included
from extracteval.tasks.toolcalls.semantics import ToolCallConfig, parse_calls, reference_calls, score_toolcall_record, score_toolcalls
from extracteval.tasks.toolcalls.references import _present_keys
from extracteval.errors import InputError

OUTPUTS = [
    '{"name": "f", "arguments": {"a": 1}}',
    '{"name": "f", "arguments": {"a": 1.0}}',
    "f(a=1)",
    "[f(a=1), g(b='x')]",
    "[g(b='x'), f(a=1)]",
    '{"name": "f", "arguments": "{\\"a\\": ',
    "",
    "[]",
    "```\n```",
    "no tool needed",
    None,
    {"name": "f", "arguments": {"a": 1}},
]
REFERENCES = [
    {"name": "f", "arguments": {"a": 1}},
    {"name": "f", "arguments": {"a": "1"}},
    {"name": "f", "arguments": {"a": True}},
    [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {"b": "x"}}],
    [],
    "f(a=1)",
]


def test_repeated_outputs_and_references_score_as_one_by_one() -> None:
    rng = random.Random(7)
    truth, preds = {}, {}
    for k in range(600):
        truth[f"r{k}"] = rng.choice(REFERENCES)
        out = rng.choice(OUTPUTS)
        if out is not None or rng.random() < 0.5:
            preds[f"r{k}"] = out
    res = score_toolcalls(truth, {"m": preds})
    for rec in res.records["m"]:
        alone = score_toolcall_record(reference_calls(truth[rec.id]), preds.get(rec.id), rid=rec.id)
        expected = asdict(alone) | ({"error": "no output for this id"} if rec.id not in preds else {})
        assert asdict(rec) == expected, rec.id
    total = {f: sum(getattr(r.counts, f) for r in res.records["m"]) for f in res.models["m"].counts.to_dict()}
    assert res.models["m"].counts.to_dict() == total


def test_references_equal_as_text_but_not_as_values_are_not_confused() -> None:
    # `1`, `1.0`, `True` and `"1"` print alike in JSON or str() but are different references.
    truth = {"a": {"name": "f", "arguments": {"a": 1}}, "b": {"name": "f", "arguments": {"a": "1"}}, "c": {"name": "f", "arguments": {"a": True}}}
    res = score_toolcalls(truth, {"m": {k: "f(a=1)" for k in truth}})
    assert [r.correct for r in res.records["m"]] == [True, False, False]


def test_a_bad_reference_is_named_even_when_an_equal_good_one_came_first() -> None:
    truth = {"1": {"name": "f", "arguments": {"a": 1}}, "2": {"name": "f", "arguments": [1]}}
    with pytest.raises(InputError, match="reference 2"):
        score_toolcalls(truth, {"m": {}})


_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3), st.just({}), st.just([]), st.just({"x": [1, None]}))
_key = st.one_of(st.text(max_size=4), st.integers(-2, 2))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_key, _leaf, max_size=6))
def test_plain_arguments_flatten_like_the_generic_walker(args) -> None:
    assert list(_present_keys(args, leaf_key).items()) == list(flat_keys(args, leaf_key, present_only=True).items())


def _python_calls_without_shortcut(text: str):
    """`_python_calls` as it was before the `(`-free shortcut: always both `ast` attempts."""
    body = tc._strip_fences(text)
    for candidate in (body, f"[{body}]"):
        try:
            calls = tc.parse_python_calls(candidate, keep_positional=True)
        except SyntaxError:
            calls = tc._parse_with_keyword_names(candidate)
            if calls is None:
                continue
        except (ValueError, TypeError, RecursionError, MemoryError):
            continue
        return tc.ParsedCalls(tuple(tc.Call(next(iter(c)), next(iter(c.values()))) for c in calls), "python")
    return None


_PIECES = list("[]()#\\ \t\n\r\x0c\x0b,=ax1'\"`:{}.") + ["\u00a0", "```", "```json\n", "f(", "\\\n", "# c\n", "[]", "[ ]"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join))
def test_python_shortcut_agrees_with_always_parsing(text: str) -> None:
    assert tc._python_calls(text) == _python_calls_without_shortcut(text)


@pytest.mark.parametrize("text", ["```\n```", "```\n[ ]\n```"])
def test_call_free_python_that_parses_is_still_a_valid_empty_answer(text: str) -> None:
    # `(`-free, yet Python reads an empty list of calls: the shortcut must not skip these
    p = parse_calls(text)
    assert p.valid and p.calls == () and p.format == "python", p


@pytest.mark.parametrize("text", ['{"name": "f", "arguments": "{\\"a\\": ', "sure, here it is", "[1, 2", "# nothing\n"])
def test_text_without_a_call_is_unreadable(text: str) -> None:
    p = parse_calls(text)
    assert not p.valid and p.format == "unknown"


_names = st.sampled_from(["f", "get_weather", " g ", "", "  "])
_args = st.dictionaries(st.sampled_from(["a", "b", "city", "x.y", ""]), st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(), st.just([1, {"k": None}])),
                        max_size=4)
_call = st.one_of(
    st.fixed_dictionaries({"name": _names, "arguments": _args}),
    st.fixed_dictionaries({"name": _names, "arguments": st.one_of(st.none(), st.just("{}"), st.just([]))}),
    st.fixed_dictionaries({"name": _names, "parameters": _args}),
)


def _as_ordered(obj):
    # A call object that is an OrderedDict (not `dict` by type) takes reference_calls' general
    # path; the arguments stay plain dicts, as both paths flatten those alike.
    from collections import OrderedDict

    if isinstance(obj, list):
        return [OrderedDict(x) for x in obj]
    return OrderedDict(obj)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_call, st.lists(_call, max_size=3)))
def test_plain_references_read_like_the_general_path(obj) -> None:
    def read(o):
        try:
            return [(r.name, list(r.accept.items()), r.optional, r.whole) for r in reference_calls(o)]
        except InputError as e:
            return str(e)

    assert read(obj) == read(_as_ordered(obj))


# The direct reading of the usual outputs (orjson, no Call objects, keys compared as plain dicts)
# against the general path: every shape near the usual ones, with the values where orjson and
# json.loads part ways (integers beyond 64 bits, NaN, fractions, nested values).
_arg_value = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63 - 2, max_value=2**66), st.floats(allow_nan=False),
    st.text(max_size=3), st.just([1, {"k": None}]), st.just({}), st.just(1.0), st.just(10**20),
)
_arg_obj = st.dictionaries(st.sampled_from(["a", "b", "city", "x.y", "", "days"]), _arg_value, max_size=3)
_fname = st.sampled_from(["f", "g", "get_weather", " ", ""])
_call = st.tuples(_fname, _arg_obj)
_ODD_ARGS = ["", None, "[1]", '{"a": NaN}', '{"a": ', '{"a": 1e400}', 3, '{"a": 100000000000000000000}']


def _render(calls, shape, args_as):
    import json

    calls = [(n, a if k == 0 else json.dumps(a) if k == 1 else " " + json.dumps(a) + " " if k == 2 else _ODD_ARGS[k - 3]) for (n, a), k in zip(calls, args_as)]
    if shape == "name_arguments":
        items = [{"name": n, "arguments": a} for n, a in calls]
        return json.dumps(items[0] if len(items) == 1 else items)
    if shape == "openai":
        return json.dumps({"tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]})
    if shape == "openai_extra":
        return json.dumps({"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": n, "arguments": a, "x": 1}} for n, a in calls]})
    if shape == "three_keys":
        return json.dumps([{"name": n, "arguments": a, "id": 1} for n, a in calls])
    if shape == "python":
        def call(n: str, a: object) -> str:
            return f"{n.strip() or 'f'}(" + ", ".join(f"{k}={v!r}" for k, v in (a if isinstance(a, dict) else {}).items() if k.isidentifier()) + ")"

        return "[" + ", ".join(call(n, a) for n, a in calls) + "]"
    return json.dumps({"choices": [{"message": {"tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls]}}]})


_SHAPES = st.sampled_from(["name_arguments", "openai", "openai_extra", "three_keys", "python", "choices"])
_ODD_OUTPUTS = ['{"tool_calls": null}', "[]", '{"tool_calls": 3}', '"{\\"name\\": \\"f\\", \\"arguments\\": {}}"', "  ", "{}",
                '{"name": "f", "arguments": {"a": NaN}}', '{"name": "f", "arguments": "{\\"a\\": NaN}"}', '[{"name": "f", "arguments": {"a": 1e400}}]',
                '{"name": "f", "arguments": {"a": 100000000000000000000}}', '{"name": "f", "arguments": "[1]"}', '{"name": 3, "arguments": {}}',
                '{"tool_calls": [{"function_call": {"name": "g", "arguments": {}}, "function": {"name": "f", "arguments": {}}}]}',
                '{"tool_calls": [{"name": "g", "arguments": {}, "function": {"name": "f", "arguments": {}}}]}',
                '{"tool_calls": [{"tool_calls": [], "function": {"name": "f", "arguments": {}}}]}']


@st.composite
def _case(draw):
    """(reference, output): the output's calls are the reference's, often with other arguments."""
    calls = draw(st.lists(_call, max_size=3))
    ref = [{"name": n.strip() or "f", "arguments": a} for n, a in calls]
    if draw(st.booleans()):
        calls = [(n, draw(_arg_obj)) if draw(st.booleans()) else (n, a) for n, a in calls]
    if draw(st.integers(0, 9)) == 0:
        return ref, draw(st.sampled_from(_ODD_OUTPUTS))
    out = _render(calls, draw(_SHAPES), draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, *range(3, 3 + len(_ODD_ARGS))]), min_size=len(calls), max_size=len(calls))))
    return ref, out


@settings(max_examples=600, deadline=None)
@given(st.lists(_case(), min_size=1, max_size=6), st.sampled_from(["exact", "normalized"]))
def test_the_direct_reading_scores_as_the_general_path(cases, value_match) -> None:
    truth = {str(k): ref for k, (ref, _) in enumerate(cases)}
    preds = {str(k): out for k, (_, out) in enumerate(cases)}
    config = ToolCallConfig(value_match=value_match)
    key_fn = config.key_fn()
    res = score_toolcalls(truth, {"m": preds}, config=config)
    for rec in res.records["m"]:
        alone = score_toolcall_record(reference_calls(truth[rec.id], key_fn=key_fn), preds[rec.id], rid=rec.id, key_fn=key_fn)
        assert asdict(rec) == asdict(alone), (truth[rec.id], preds[rec.id])


_TEXT_PIECES = ['{', '}', '[', ']', '"name": "f"', '"arguments": {}', ', ', "```json\n", "```", "f(a=1)", "NaN", "1e400", '"\\ud800"',
                "Sure: ", "\n", " ", '{"name": "f", "arguments": {"a": 1}}', "[1, 2", "100000000000000000000", ":", "x"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_TEXT_PIECES), min_size=1, max_size=7).map("".join).map(str.strip).filter(bool))
def test_a_text_read_in_part_reads_as_parse_json_output_reads_it(text) -> None:
    # what `_calls_after_json` is told instead of a value (orjson refused the text; it opens an
    # object or array it does not close) leads where parse_json_output's own reading does
    import orjson

    whole = tc._calls_after_json(text, tc._NO_VALUE, python_read=False)
    if tc._cut_short(text):
        assert tc._calls_after_json(text, tc._NOT_WHOLE, python_read=False) == whole
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        assert tc._calls_after_json(text, tc._ORJSON_REFUSED, python_read=False) == whole
