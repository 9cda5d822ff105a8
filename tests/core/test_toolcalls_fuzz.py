"""Fuzz: random bytes, random text and truncated JSON as model outputs never raise.

Malformed model output is data to be counted: every scorer must return a verdict for it.
"""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.toolcalls.bfcl import check_entry, decode_result
from extracteval.tasks.structured.semantics import StructuredConfig, parse_json_output, score_structured_record
from extracteval.tasks.toolcalls.semantics import parse_calls, reference_calls, score_toolcall_record

REF_DOC = {"user": {"name": "Alice", "tags": ["a", "b"]}, "items": [{"sku": "A-1", "qty": 2}], "ok": True}
REF_CALLS = reference_calls([{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, {"name": "get_time", "arguments": {"tz": "CET"}}])
SPEC = [{"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                                             "tags": {"type": "array", "items": {"type": "float"}}}, "required": ["city"]}}]
ANSWER = [{"get_weather": {"city": ["Paris"], "days": [3, ""], "tags": [[1.0], ""]}}]
OPTIMAL = StructuredConfig(list_matching="optimal")
SAMPLES = [
    json.dumps(REF_DOC),
    json.dumps([{"name": "get_weather", "arguments": json.dumps({"city": "Paris", "days": 3})}, {"name": "get_time", "arguments": {"tz": "CET"}}]),
    json.dumps({"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
    '[get_weather(city="Paris", days=3), get_time(tz="CET")]',
    '```json\n[{"get_weather": "{\\"city\\": \\"Paris\\"}"}]\n```',
]


def _all_scorers(out: object) -> None:
    assert isinstance(parse_json_output(out).ok, bool)
    score_structured_record(REF_DOC, out)
    score_structured_record(REF_DOC, out, config=OPTIMAL)
    parse_calls(out)
    score_toolcall_record(REF_CALLS, out)
    d = decode_result(out)
    check_entry(SPEC, d, ANSWER, "simple")
    check_entry(SPEC, d, ANSWER, "parallel")


def test_ten_thousand_random_byte_strings_never_raise() -> None:
    rng = random.Random(2024)
    alphabet = b'{}[]":,.0123456789-eE truefalsnul\\\n`abcxyz()=\'_'
    for k in range(10_000):
        n = rng.randint(0, 64)
        if k % 2:
            raw = bytes(rng.getrandbits(8) for _ in range(n))
        else:
            raw = bytes(rng.choice(alphabet) for _ in range(n))
        _all_scorers(raw if k % 4 < 2 else raw.decode("utf-8", errors="replace"))


def test_every_truncation_of_valid_outputs_never_raises() -> None:
    for s in SAMPLES:
        for cut in range(len(s) + 1):
            _all_scorers(s[:cut])
            _all_scorers(s[cut:])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=80), st.text(max_size=80), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c, max_size=3)), max_leaves=10)))
def test_arbitrary_values_never_raise(out: object) -> None:
    _all_scorers(out)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), st.integers(0, 200), st.text(max_size=5))
def test_mutated_outputs_never_raise(sample: str, pos: int, insert: str) -> None:
    pos = min(pos, len(sample))
    _all_scorers(sample[:pos] + insert + sample[pos:])
    _all_scorers(sample[:pos] + sample[pos + 1 :])
