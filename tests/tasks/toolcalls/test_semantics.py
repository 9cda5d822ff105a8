"""Generic tool-call scoring: every predicted format, the hand-made error cases, properties."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.toolcalls.semantics import ToolCallCounts, parse_calls, reference_calls, score_toolcall_record, score_toolcalls
from extracteval.errors import InputError

REF = reference_calls({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})
ARGS = {"city": "Paris", "unit": "celsius"}

FORMATS = {
    "name_arguments_object": {"name": "get_weather", "arguments": ARGS},
    "name_arguments_json_string": json.dumps({"name": "get_weather", "arguments": json.dumps(ARGS)}),
    "name_parameters": {"name": "get_weather", "parameters": ARGS},
    "openai_tool_calls": {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]},
    "openai_response": {"choices": [{"message": {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]}}]},
    "openai_item": {"type": "function", "function": {"name": "get_weather", "arguments": ARGS}},
    "bfcl_object": {"get_weather": ARGS},
    "bfcl_json_string": [{"get_weather": json.dumps(ARGS)}],
    "python_call": 'get_weather(city="Paris", unit="celsius")',
    "python_call_list": "[get_weather(city='Paris', unit='celsius')]",
    "fenced_json": '```json\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n```',
    "prose_then_json": 'I will call the tool: {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
    "fenced_python": "```python\nget_weather(city='Paris', unit='celsius')\n```",
    "json_string_twice": json.dumps(json.dumps({"name": "get_weather", "arguments": ARGS})),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_predicted_format_is_read_and_scores_perfect(fmt: str) -> None:
    r = score_toolcall_record(REF, FORMATS[fmt])
    assert r.valid and r.correct, (fmt, r)
    c = r.counts
    assert (c.tp, c.fp, c.fn, c.name_matches, c.args_exact) == (2, 0, 0, 1, 1)


def test_reserved_word_argument_names_in_python_calls() -> None:
    ref = reference_calls({"name": "convert", "arguments": {"from": "EUR", "to": "USD"}})
    assert score_toolcall_record(ref, "convert(from='EUR', to='USD')").correct


def test_name_mismatch() -> None:
    r = score_toolcall_record(REF, {"name": "get_forecast", "arguments": ARGS})
    assert r.valid and not r.correct
    assert (r.counts.name_matches, r.counts.tp, r.counts.fp, r.counts.fn) == (0, 0, 2, 2)


def test_missing_required_argument() -> None:
    r = score_toolcall_record(REF, {"name": "get_weather", "arguments": {"city": "Paris"}})
    assert (r.counts.tp, r.counts.fp, r.counts.fn, r.counts.args_exact, r.correct) == (1, 0, 1, 0, False)


def test_extra_argument() -> None:
    r = score_toolcall_record(REF, {"name": "get_weather", "arguments": {**ARGS, "days": 3}})
    assert (r.counts.tp, r.counts.fp, r.counts.fn, r.correct) == (2, 1, 0, False)


def test_wrong_type_is_a_wrong_value() -> None:
    ref = reference_calls({"name": "book", "arguments": {"seats": 3}})
    r = score_toolcall_record(ref, {"name": "book", "arguments": {"seats": "3"}})
    assert (r.counts.tp, r.counts.fp, r.counts.fn, r.correct) == (0, 1, 1, False)
    assert score_toolcall_record(ref, {"name": "book", "arguments": {"seats": 3.0}}).correct  # same number


def test_optional_argument_omitted_and_acceptable_alternative_with_possible_answers() -> None:
    refs = reference_calls([{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["celsius", ""]}}], possible_answer=True)
    assert score_toolcall_record(refs, {"get_weather": {"city": "Paris"}}).correct  # optional omitted
    assert score_toolcall_record(refs, {"get_weather": {"city": "Paris, France", "unit": "celsius"}}).correct  # alternative
    r = score_toolcall_record(refs, {"get_weather": {"city": "Lyon"}})
    assert (r.correct, r.counts.fp, r.counts.fn) == (False, 1, 1)


def test_parallel_calls_in_another_order() -> None:
    refs = reference_calls([{"name": "w", "arguments": {"city": "Paris"}}, {"name": "w", "arguments": {"city": "Oslo"}}, {"name": "t", "arguments": {"tz": "CET"}}])
    out = '[t(tz="CET"), w(city="Oslo"), w(city="Paris")]'
    r = score_toolcall_record(refs, out)
    assert r.correct and r.counts.name_matches == 3 and r.counts.args_exact == 3
    assert sorted(r.pairs) == [(0, 2), (1, 1), (2, 0)]


def test_duplicate_calls() -> None:
    refs = reference_calls([{"name": "w", "arguments": {"city": "Paris"}}, {"name": "w", "arguments": {"city": "Oslo"}}])
    r = score_toolcall_record(refs, '[w(city="Paris"), w(city="Paris")]')
    assert not r.correct
    assert (r.counts.name_matches, r.counts.args_exact, r.counts.tp, r.counts.fp, r.counts.fn) == (2, 1, 1, 1, 1)
    r3 = score_toolcall_record(refs, '[w(city="Paris"), w(city="Oslo"), w(city="Oslo")]')
    assert not r3.correct and r3.counts.fp == 1 and r3.counts.args_exact == 2


def test_malformed_argument_json_is_counted_invalid_not_raised() -> None:
    r = score_toolcall_record(REF, '{"name": "get_weather", "arguments": "{\\"city\\": \\"Par"}')
    assert not r.valid and not r.correct
    assert "not valid JSON" in (r.error or "")
    assert (r.counts.invalid_calls, r.counts.name_matches, r.counts.fn, r.counts.args_exact) == (1, 1, 2, 0)


def test_unreadable_output_is_invalid() -> None:
    for out in ["", None, "Sorry, I cannot help with that.", "{", 42, ["x"], {"a": 1, "b": 2}]:
        r = score_toolcall_record(REF, out)
        assert not r.valid and not r.correct and r.counts.fn == 2


def test_no_call_expected_and_none_made() -> None:
    r = score_toolcall_record((), "[]")
    assert r.valid and r.correct


def test_optimal_pairing_beats_greedy() -> None:
    # greedy by order would pair ref0 with pred0 (1 of 2 args right) and leave ref1 with pred1 (0 right)
    refs = reference_calls([{"name": "f", "arguments": {"a": 1, "b": 2}}, {"name": "f", "arguments": {"a": 1, "b": 3}}])
    r = score_toolcall_record(refs, '[f(a=1, b=3), f(a=1, b=2)]')
    assert r.correct and r.counts.tp == 4


def test_metrics_definitions_on_a_small_run() -> None:
    truth = {"1": {"name": "f", "arguments": {"x": 1}}, "2": [{"name": "g", "arguments": {"y": "a"}}, {"name": "g", "arguments": {"y": "b"}}]}
    preds = {"m": {"1": "f(x=1)", "2": '[g(y="a"), h(y="b")]'}}
    res = score_toolcalls(truth, preds)
    m = res.models["m"].metrics
    assert m["valid_call_rate"] == 1.0
    assert m["name_match_rate"] == pytest.approx(2 / 3)
    assert m["args_exact_rate"] == pytest.approx(2 / 3)
    assert m["call_accuracy"] == 0.5
    assert (m["args_precision"], m["args_recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert res.models["m"].failed_ids == ("2",)


def test_missing_prediction_counts_as_invalid() -> None:
    res = score_toolcalls({"1": {"name": "f", "arguments": {"x": 1}}}, {"m": {}})
    assert res.models["m"].metrics["valid_call_rate"] == 0.0
    assert res.models["m"].missing_ids == ("1",)


def test_bad_reference_is_an_input_error_naming_the_record() -> None:
    with pytest.raises(InputError, match="reference 7"):
        score_toolcalls({"7": {"name": "f", "arguments": "{oops"}}, {"m": {}})


class FixedBackend:
    """A deterministic similarity backend for the extended metrics: share of equal characters."""

    name = "test-backend"

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        return np.array([1.0 if x == y else 0.5 for x, y in zip(a, b)])


def test_extended_metrics_use_any_similarity_backend() -> None:
    truth = {"1": {"name": "f", "arguments": {"x": 1}}, "2": {"name": "f", "arguments": {"x": 2}}}
    preds = {"m": {"1": '{"name": "f", "arguments": {"x": 1}}', "2": '{"name": "f", "arguments": {"x": 3}}'}}
    res = score_toolcalls(truth, preds, similarity={"semantic_similarity": FixedBackend(), "judge_score": FixedBackend()})
    ext = res.models["m"].extended["semantic_similarity"]
    assert (ext.mean, ext.pass_rate, ext.threshold, ext.backend) == (0.75, 0.5, 0.85, "test-backend")
    assert res.models["m"].to_dict()["judge_score_pass_rate"] == 0.5


# --------------------------------------------------------------------------------------------
# properties

names = st.sampled_from(["f", "g", "h"])
values = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "Paris"]), st.booleans())
call = st.fixed_dictionaries({"name": names, "arguments": st.dictionaries(st.sampled_from(["x", "y", "z"]), values, max_size=3)})
calls = st.lists(call, min_size=0, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(calls, calls), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_counts_merge_metrics_bounded_order_independent(pairs, rnd) -> None:
    truth = {str(i): t for i, (t, _) in enumerate(pairs)}
    preds = {str(i): p for i, (_, p) in enumerate(pairs)}
    res = score_toolcalls(truth, {"m": preds})
    total = res.models["m"].counts
    parts = [score_toolcall_record(reference_calls(t), p).counts for t, p in pairs]
    assert sum(parts, ToolCallCounts()) == total
    for v in res.models["m"].metrics.values():
        assert 0.0 <= v <= 1.0
    m = res.models["m"].metrics
    if m["args_precision"] + m["args_recall"] > 0:
        assert m["args_f1"] == pytest.approx(2 * m["args_precision"] * m["args_recall"] / (m["args_precision"] + m["args_recall"]))
    # shuffling records and the order of calls inside each output changes nothing
    items = list(preds.items())
    rnd.shuffle(items)
    shuffled = {k: list(reversed(v)) for k, v in items}
    res2 = score_toolcalls(dict(reversed(list(truth.items()))), {"m": shuffled})
    assert res2.models["m"].counts == total


@settings(max_examples=40, deadline=None)
@given(st.lists(calls, min_size=1, max_size=5))
def test_perfect_prediction_scores_one(refs) -> None:
    truth = {str(i): t for i, t in enumerate(refs)}
    res = score_toolcalls(truth, {"m": {k: random.Random(0).sample(v, len(v)) for k, v in truth.items()}})
    m = res.models["m"].metrics
    assert m["call_accuracy"] == 1.0 and m["valid_call_rate"] == 1.0
    if any(c["arguments"] for t in refs for c in t):
        assert m["args_f1"] == 1.0


def test_parse_calls_reports_format() -> None:
    assert parse_calls(FORMATS["openai_tool_calls"]).format == "openai"
    assert parse_calls(FORMATS["python_call"]).format == "python"
    assert parse_calls(FORMATS["fenced_json"]).format.startswith("extracted:")
