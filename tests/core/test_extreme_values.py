"""Values at the edges of what Python writes or compares: each is scored as data, alike whatever
order it comes in, never a crash."""

from __future__ import annotations

import pytest

import extracteval.tasks.structured.model_counts as structured  # where a model's outputs are parsed
from extracteval.core.normalize import int_key
from extracteval.tasks.json.semantics import JsonPredictions, score_json
from extracteval.tasks.structured.semantics import flat_keys, leaf_key, score_structured
from extracteval.tasks.toolcalls.semantics import parse_calls, score_toolcalls


def test_int_key_keys_any_integer_once() -> None:
    big = 10**5000  # beyond the 4,300 digits Python writes in decimal
    assert int_key(12345) == "n:12345" and int_key(-7) == "n:-7"
    assert int_key(big) == "n:1e+5000" and int_key(-big) == "n:-1e+5000"
    assert int_key(big) != int_key(big + 1) and int_key(big + 1) != int_key(big - 1)


def test_a_call_with_an_integer_literal_too_long_to_write_is_scored_not_a_crash() -> None:
    truth = {"1": [{"name": "f", "arguments": {"a": 1}}], "2": [{"name": "f", "arguments": {"a": 1}}]}
    out = {"1": "f(a=0x" + "f" * 4000 + ")", "2": "f(a=1)"}
    r = score_toolcalls(truth, {"m": out})
    recs = {x.id: x for x in r.records["m"]}
    assert recs["1"].valid and not recs["1"].correct and recs["2"].correct
    assert r.models["m"].metrics["call_accuracy"] == 0.5


def test_huge_integers_in_python_values_are_compared_by_value() -> None:
    big = 10**5000
    s = score_structured({"1": {"a": big}, "2": {"a": big}}, {"m": {"1": {"a": big}, "2": {"a": big + 1}}})
    assert s.models["m"].metrics["exact_match_rate"] == 0.5
    j = score_json({"1": {"a": big}}, [JsonPredictions(name="m", records={"1": {"a": big}})])
    assert j.models["m"].accuracy == 1.0


def test_keys_equal_across_types_name_their_own_paths_in_any_order() -> None:
    docs = [{True: "x"}, {1: "x"}, {1.0: "y"}]
    forward = [flat_keys(d, leaf_key) for d in docs]
    backward = [flat_keys(d, leaf_key) for d in reversed(docs)][::-1]
    assert forward == backward
    assert len({next(iter(k)) for k in forward}) == 3


def test_a_python_call_holding_a_nul_is_read_as_python_reads_it() -> None:
    # Python refuses source text with a NUL byte: no call is read from it
    assert parse_calls("f(a='\x00')").calls == ()
    assert parse_calls("f(a='x')").calls


@pytest.mark.parametrize("output", ['{"a": 1, "b": "y"}', '{"a": [1, 1], "b": "x"}', '{"b": "x", "a": 1}', "[1]", '```json\n{"a": 1}\n```'])
def test_structured_scores_alike_without_the_fast_json_library(monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    truth = {"1": {"a": 1, "b": "x"}, "2": {"a": [1, True], "b": "x"}}
    preds = {"m": {"1": output, "2": output}}
    with_fast = score_structured(truth, preds).to_dict()
    monkeypatch.setattr(structured, "_orjson", None)
    assert score_structured(truth, preds).to_dict() == with_fast
