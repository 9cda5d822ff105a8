"""The fast JSON parser gives exactly what `json.loads` gives, and steps aside where it would not.

orjson refuses NaN / Infinity literals, numbers beyond a float, lone surrogates and nesting
deeper than 1,024 levels (the standard parser then runs), and silently reads an integer beyond
64 bits as a float (such text never reaches it). These tests pin every one of those fall-backs,
through `loads_fast` and through the scoring paths that parse with orjson directly.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.jsonparse import FAST_PARSER, loads_fast, may_misread_numbers
from extracteval.core.normalize import ExactFloat, Normalizer
from extracteval.tasks.structured.semantics import StructuredConfig, parse_json_output, score_structured
from extracteval.tasks.toolcalls.semantics import parse_calls, score_toolcalls
from extracteval.io.json_text import loads


def _typed(v):
    """A comparable form that keeps types apart (`1` / `1.0` / `True`) and NaN equal to NaN."""
    if isinstance(v, dict):
        return ("dict", [(k, _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    if isinstance(v, float) and math.isnan(v):
        return ("float", "nan")
    if type(v) is ExactFloat:  # a float that also keeps its text: as a float, json.loads' value
        return ("float", float(v))
    return (type(v).__name__, v)


def _outcome(fn, text):
    try:
        return ("ok", _typed(fn(text)))
    except RecursionError:
        return ("recursion",)
    except ValueError as e:
        return ("error", type(e).__name__, str(e))


EDGE_CASES = [
    '{"a": 1, "a": 2}',  # duplicate key: the last value, at the first key's position
    '{"a": 1, "b": 2, "a": 3}',
    "NaN", "[Infinity]", "-Infinity", '{"x": NaN}',  # literals orjson refuses
    "1e400", "-1e400", "1.7976931348623159e308",  # beyond a float: json gives ±inf
    str(2**64), str(-(2**63) - 1), str(10**30), '{"n": 123456789012345678901234567890}',  # beyond 64 bits
    str(2**64 - 1), str(-(2**63)), "9223372036854775808",  # the edges orjson keeps exact
    '"\\ud800"', '"\\udc00x"', '["\\ud83d"]', '"\\ud83d\\ude00"',  # lone (escaped) surrogates, a valid pair
    "[" * 2000 + "]" * 2000,  # deeper than both parsers go
    "[" * 900 + "]" * 900,
    "-0", "-0.0", "1.0", "1E5", "0.1", "1e-400", "9007199254740993", "9007199254740993.0",
    " \n{\"a\" : [1 , 2]}\t", '"\\u0000"', '"\u2028"', '"\\/"',
    "", "nul", "01", "1.", ".5", "[1,]", '{"a":1,}', '"\x00"', '"a\tb"', "\ufeff{}", "1 2", '{"a":1}\x00',
]


@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_loads_fast_gives_what_json_loads_gives(text):
    assert _outcome(loads_fast, text) == _outcome(json.loads, text)
    # a record-sized text takes the other way to the C parser (scanned as bytes): the same answers
    padded = " " * 120 + text
    assert _outcome(loads_fast, padded) == _outcome(json.loads, padded)


@pytest.mark.parametrize("pad", [0, 50, 95, 96, 97, 400])
def test_a_long_number_is_found_in_short_and_long_texts(pad):
    cases = [("1" * 15, False), ("1" * 16, True), ("9" * 18 + "0", True), ("1" * 14 + "a1", False),
             ("1.23456789012345", True), ("1.2345678901234", False), ("1e400", True), ("1E-300", True), ("1e+99", False),
             ("2.5e12", False), ("0.000000000000001", True)]
    for digits, want in cases:
        text = " " * pad + f'{{"n": {digits}, "s": "\u00e9 é \ud800"}}'
        assert may_misread_numbers(text) is want, (pad, digits)
    assert may_misread_numbers("é" * 200 + "0" * 16) and not may_misread_numbers("\ud800" * 50 + "1" * 15)


@pytest.mark.parametrize("pad", [0, 120])
def test_numbers_a_float_cannot_hold_keep_their_exact_value(pad):
    """Two different decimals never read as one number, and each keeps its value to the digit."""
    n = Normalizer()
    pairs = [("1.00000000000000001", "1.0"), ("0.10000000000000000001", "0.1"), ("1e400", "9e999"),
             ("-1e400", "-1e401"), ("1e-400", "0"), ("9007199254740993.0", "9007199254740992.0"),
             ("123456789012345678.5", "123456789012345678.25")]
    for a, b in pairs:
        va, vb = loads_fast(" " * pad + f"[{a}]")[0], loads_fast(" " * pad + f"[{b}]")[0]
        assert isinstance(va, float) and va == float(a)  # still a float, equal to json.loads' value
        assert n.key(va) != n.key(vb), (a, b)
        assert n.key(va) == n.key(a), a  # the same key as the number's text
    plain = loads_fast(" " * pad + "[0.1, 2.5e12, 3.141592653589793]")
    assert [type(v) for v in plain] == [float, float, float]  # a float holds these exactly: plain floats


def test_lone_surrogate_character_and_big_integers_are_read_as_json_reads_them():
    assert FAST_PARSER  # the dependency is installed: these tests exercise the fall-backs
    raw = '"\ud800"'  # a lone surrogate character in the text itself (orjson refuses the str)
    assert loads_fast(raw) == json.loads(raw) == "\ud800"
    assert loads_fast(str(2**64)) == 2**64 and type(loads_fast(str(2**64))) is int
    assert loads_fast('[-9223372036854775809]') == [-(2**63) - 1]
    assert loads('{"n": 18446744073709551616}') == {"n": 2**64}  # the file readers' parser too
    with pytest.raises(RecursionError):
        loads_fast("[" * 5000 + "]" * 5000)
    assert loads("[" * 5000 + "]" * 5000) is not None  # the readers' iterative fall-back still runs


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats(allow_nan=True) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
    max_leaves=20,
))
def test_any_json_document_parses_the_same(value):
    text = json.dumps(value)
    assert _outcome(loads_fast, text) == _outcome(json.loads, text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(list('{}[]:,"\\ 0123456789.eE+-') + ["true", "null", "NaN", "Infinity", "\\ud800", "\x00", "é"]), max_size=14))
def test_any_text_gives_the_same_value_or_the_same_error(parts):
    text = "".join(parts)
    assert _outcome(loads_fast, text) == _outcome(json.loads, text)


def test_structured_scoring_reads_big_integers_and_literals_exactly():
    # outputs parsed by orjson in the scoring loop: a big integer must stay an integer (not
    # equal to the float reference), a NaN literal must still parse (json's rule)
    truth = {"1": {"n": 2**64}, "2": {"n": 1.8446744073709552e19}, "3": {"x": None}, "4": {"n": [2**70]}, "5": 10**25}
    out = {"1": '{"n": 18446744073709551616}', "2": '{"n": 18446744073709551616}', "3": '{"x": NaN}',
           "4": '{"n": [1180591620717411303424]}', "5": "10000000000000000000000000"}
    recs = {r.id: r for r in score_structured(truth, {"m": out}).records["m"]}
    assert recs["1"].exact and recs["4"].exact and recs["5"].exact
    assert not recs["2"].exact and recs["2"].fp == 1  # 2**64 (integer) is not the float 1.8446744073709552e19
    assert recs["3"].valid and recs["3"].exact  # NaN is an absent leaf, as null
    assert parse_json_output('{"x": Infinity}').value == {"x": math.inf}
    # the same answers through the general (per-record) path of other options
    recs_n = {r.id: r for r in score_structured(truth, {"m": out}, config=StructuredConfig(list_matching="optimal")).records["m"]}
    assert [(recs[i].exact, recs[i].fp) for i in truth] == [(recs_n[i].exact, recs_n[i].fp) for i in truth]


def test_toolcall_arguments_keep_big_integers_and_nan():
    calls = parse_calls('{"name": "f", "arguments": "{\\"id\\": 123456789012345678901, \\"x\\": NaN}"}').calls
    assert calls[0].args["id"] == 123456789012345678901 and type(calls[0].args["id"]) is int
    assert math.isnan(calls[0].args["x"])
    res = score_toolcalls({"1": {"name": "f", "arguments": {"id": 123456789012345678901}}},
                          {"m": {"1": '{"name": "f", "arguments": {"id": 123456789012345678901}}'}})
    assert res.models["m"].counts.args_exact == 1
