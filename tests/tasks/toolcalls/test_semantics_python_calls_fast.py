"""Simple Python call strings are read without `ast`; the result must be what `ast` gives.

`[f(a='x', b=2), pkg.g(c=None)]`-style outputs (keyword arguments with plain literal values)
take a direct reader; anything else — escapes, positional arguments, reserved words, a repeated
argument, a trailing comma, non-ASCII text — must be left to `ast`. Random call strings built
from pieces that sit on both sides of that line are read both ways and compared, types included.
"""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.toolcalls.bfcl import decoding as bfcl  # the decoder, internals included
from extracteval.tasks.toolcalls.bfcl import parse_python_calls

VALUES = ["'x'", '"y z"', "''", "1", "-2", "0", "1.5", "-0.0", "1e5", "2E-3", "True", "False", "None", "'a\"b'", '"it\'s"',
          "123456789012345678901234567890", "-0", "'#'", "'(,)'", "'f(a=1)'", "01", "1_0", "x", "[1]", "'\\n'", "1.", "1j",
          "- 1", "'é'", "'x' 'y'", "1e999", "Truex"]
NAMES = ["f", "get_weather", "pkg.mod.fn", "if", "a.if", "_x", "x1", "__debug__", "True", "a . b"]
KEYS = ["a", "b", "city", "class", "_", "__debug__", "a1", "match"]
SPACE = st.sampled_from(["", "", "", " ", "  ", "\t", "\n"])


def _by_ast(text: str):
    tree = ast.parse(text.strip(), mode="eval")
    body = tree.body
    elems = [body] if isinstance(body, ast.Call) else body.elts if isinstance(body, (ast.List, ast.Tuple)) else None
    assert elems is not None
    out = []
    for e in elems:
        assert isinstance(e, ast.Call)
        args = {f"*{i}": bfcl._literal(a) for i, a in enumerate(e.args)}
        for kw in e.keywords:
            assert kw.arg is not None
            args[kw.arg] = bfcl._literal(kw.value)
        out.append({bfcl._call_name(e.func): args})
    return out


def _typed(calls):
    return [(name, [(k, type(v).__name__, repr(v)) for k, v in args.items()]) for c in calls for name, args in c.items()]


@st.composite
def call_texts(draw):
    calls = []
    for _ in range(draw(st.integers(1, 3))):
        keys = draw(st.lists(st.sampled_from(KEYS), max_size=3))
        args = ("," + draw(SPACE)).join(f"{k}{draw(SPACE)}={draw(SPACE)}{draw(st.sampled_from(VALUES))}" for k in keys)
        if draw(st.integers(0, 19)) == 0:
            args += ","
        calls.append(f"{draw(st.sampled_from(NAMES))}{draw(SPACE)}({draw(SPACE)}{args}{draw(SPACE)})")
    if len(calls) == 1 and draw(st.booleans()):
        return calls[0]
    return "[" + ", ".join(calls) + draw(st.sampled_from(["]", " ]", ",]", ""]))


@settings(max_examples=1500, deadline=None)
@given(call_texts())
def test_direct_reader_gives_what_ast_gives(text):
    fast = bfcl._simple_calls(text.strip())
    if fast is None:
        return  # left to ast
    assert _typed(fast) == _typed(_by_ast(text))
    assert _typed(parse_python_calls(text, keep_positional=True)) == _typed(fast)


def test_the_usual_outputs_take_the_direct_reader_and_the_rest_do_not():
    assert bfcl._simple_calls("[get_weather(city='Paris 3', days=2), get_time(tz=\"CET\")]") == [
        {"get_weather": {"city": "Paris 3", "days": 2}}, {"get_time": {"tz": "CET"}}]
    assert bfcl._simple_calls("f(a=-1.5e3, b=None, c=True)") == [{"f": {"a": -1500.0, "b": None, "c": True}}]
    for left_to_ast in ["f(1)", "f(a=1, a=2)", "f(class=1)", "f(a='x\\n')", "f(a=1,)", "[f(a=1),]", "f(a=[1])", "f(a='é')",
                        "f(a=01)", "(f(a=1), g())", "f(a=1) # note", "f(__debug__=1)", "f(a='x' 'y')", "f(**k)"]:
        assert bfcl._simple_calls(left_to_ast) is None, left_to_ast
