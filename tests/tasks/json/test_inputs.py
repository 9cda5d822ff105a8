"""Readers of the `json` task."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.errors import InputError
from extracteval.tasks.json.inputs import load_json_inputs, read_json_records
from extracteval.io.json_text import _loads_iterative

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_iterative_parser_agrees_with_json_loads(value, indent) -> None:
    text = json.dumps(value, indent=2 if indent else None)
    assert _loads_iterative(text) == json.loads(text)


@pytest.mark.parametrize("bad", ["{", '{"a" 1}', "[1,]", "[1 2]", '{"a": 1}x', "", "tru", '{"a": 1,}'])
def test_iterative_parser_rejects_invalid_json(bad) -> None:
    with pytest.raises(ValueError):
        _loads_iterative(bad)


def test_ten_thousand_deep_jsonl_line(tmp_path: Path) -> None:
    line = '{"id": "1", "x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}\n"
    (tmp_path / "t.jsonl").write_text(line, encoding="utf-8")
    loaded = read_json_records(tmp_path / "t.jsonl", role="truth")
    node = loaded.truth["1"]["x"]
    depth = 0
    while isinstance(node, dict):
        node, depth = node["a"], depth + 1
    assert (depth, node) == (10_000, 1)


def test_json_array_and_id_mapping(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([{"id": 1, "x": 1}, {"id": 2, "x": 2}]), encoding="utf-8")
    (tmp_path / "m.json").write_text(json.dumps({"1": {"x": 1}, "2": {"x": 3}}), encoding="utf-8")
    assert read_json_records(tmp_path / "a.json", role="truth").truth == {"1": {"x": 1}, "2": {"x": 2}}
    assert read_json_records(tmp_path / "m.json", role="predictions").predictions == {"": {"1": {"x": 1}, "2": {"x": 3}}}
    (tmp_path / "bad.json").write_text(json.dumps({"1": [1]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"record '1': expected a JSON object as the record, but found list"):
        read_json_records(tmp_path / "bad.json", role="truth")


def test_parquet_table_with_safety_column(tmp_path: Path) -> None:
    pd.DataFrame({"id": ["1", "2"], "name": ["A", "B"]}).to_parquet(tmp_path / "t.parquet")
    pd.DataFrame({"id": ["1", "2"], "name": ["A", None], "safety_score": [0.5, None]}).to_parquet(tmp_path / "p.parquet")
    truth, models, _, _ = load_json_inputs(tmp_path / "t.parquet", [f"m={tmp_path / 'p.parquet'}"])
    assert truth == {"1": {"name": "A"}, "2": {"name": "B"}}
    assert models[0].records == {"1": {"name": "A"}, "2": {"name": None}}
    assert models[0].safety == {"1": 0.5}


def test_pairs_layout_rejects_stray_keys(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "1", "truth": {}, "prediction": {}}\n{"id": "2", "truth": {}, "prediction": {}, "oops": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2: this file is in the pairs layout .* other keys: \['oops'\]"):
        read_json_records(p, role="predictions")


def test_no_truth_anywhere(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "1", "a": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match="no ground truth: pass --truth FILE"):
        load_json_inputs(None, [f"m={p}"])


def test_unsupported_suffix(tmp_path: Path) -> None:
    p = tmp_path / "x.xml"
    p.write_text("<a/>", encoding="utf-8")
    with pytest.raises(InputError, match=r"unsupported file type '.xml'"):
        read_json_records(p, role="truth")


# the cheap pre-check of repeated keys must never hide a repeat: texts where a quote or a colon
# inside a string, an escape, whitespace before a colon, a wrapper or a value orjson cannot
# write could make the pair counts agree by accident
REPEATS = [
    ('[{"id": 1, "id": 1}]', False, {0: "id"}),
    ('[{"a": 1}, {"id": 2, "v": "x\\":y", "id": 2}]', False, {1: "id"}),
    ('[{"id": 1, "id": 1, "v": "\\u0022:"}]', False, {0: "id"}),  # an escaped quote the value writes as \":
    ('[{"id": 1, "v": "a\\u003a", "id": 1}]', False, {0: "id"}),
    ('[{"id" : 1,\n "id"\t: 1}]', False, {0: "id"}),
    ('[{"n": 123456789012345678901234567890, "n": 1}]', False, {0: "n"}),  # beyond 64 bits
    ('{"records": [{"id": 1, "id": 1}], "meta": {"a": 1}}', True, {0: "id"}),
    ('{"records": [{"id": 1}, {"id": 2, "k": "x", "k": "y"}]}', True, {1: "k"}),
    ('[{"id": 1, "v": {"k": 1, "k": 2}}]', False, {}),  # inside a value: the last key wins
    ('[{"id": 1, "v": "\\":\\":"}, {"id": 2}]', False, {}),
    ('[{"id": 1, "t": "12:30", "id": 1}]', False, {0: "id"}),  # colons inside strings
    ('[{"id": 1, "t": "a:b:c"}, {"id": 2, "t": ":", "t": ":"}]', False, {1: "t"}),
    ('[{"id": 1, "id": 2, "s": "\\u003a"}]', False, {0: "id"}),  # an escaped colon leaves room for a repeat
]


@pytest.mark.parametrize("text,wrapped,want", REPEATS)
def test_repeated_keys_of_records(text: str, wrapped: bool, want: dict) -> None:
    from extracteval.io.json_text import loads, repeated_keys

    value = loads(text)
    records = value["records"] if wrapped else value
    assert repeated_keys(text, records, wrapped=wrapped) == want


def test_repeated_keys_by_id() -> None:
    from extracteval.io.json_text import loads, repeated_keys_by_id

    for text, want in [
        ('{"R1": {"a": 1}, "R2": {"a": 2}}', (None, {})),
        ('{"R1": {"a": 1, "a": 2}, "R2": {"a": 2}}', (None, {"R1": "a"})),
        ('{"R1": {"a": 1}, "R1": {"a": 2}}', ("R1", {})),
        ('{"R1": [{"a": 1, "a": 2}]}', (None, {})),  # an entity list: not a record's own keys
        ('{"R1": {"a": "\\u0022:", "a": 2}}', (None, {"R1": "a"})),
    ]:
        assert repeated_keys_by_id(text, loads(text)) == want, text


@pytest.mark.parametrize("text,first", [
    ('{"id":"1","a":"x"}\n[1, 2]\n{"id":"3","a":"x","a":"y"}\n', "line 2: not an object"),  # the reader's own error first
    ('{"id":"1","a":"x"}\n[1, 2]\n{bad\n', "line 2: not an object"),
    ('{"id":"1","a":"x","a":1}\n[1, 2]\n', "line 1: the record names the key 'a' more than once"),
])
def test_lines_are_checked_in_batches_but_the_first_problem_is_reported_first(text: str, first: str) -> None:
    """JSON lines are parsed and checked for repeated keys a batch at a time, yet a reader sees
    them one by one, each before a later line's problem is raised."""
    from extracteval.io.json_text import jsonl_text_values

    def read() -> None:
        for i, v in jsonl_text_values(Path("f.jsonl"), text, unique_keys=True):
            if not isinstance(v, dict):
                raise InputError(f"line {i}: not an object")

    with pytest.raises(InputError) as e:
        read()
    assert first in str(e.value)


def test_thousands_of_lines_keep_their_numbers_exact_values_and_first_problem() -> None:
    """Lines are parsed a batch at a time by the C parser where it reads them as the standard
    parser would; a batch with a blank line, a number beyond 64 bits or a repeated key is still
    read line by line with its line numbers, and the first invalid line is the error."""
    from extracteval.io.json_text import jsonl_text_values

    lines = [f'{{"id": "r{i}", "a": "t:{i}"}}' for i in range(1, 9001)]
    lines[4499] = "   "  # line 4500: blank
    lines[4699] = '{"id": "r4700", "n": 123456789012345678901}'  # beyond 64 bits: an exact integer
    lines[6099] = '{"id": "r6100", "a": 1, "a": 2}'
    text = "\n".join(lines)
    got = []
    with pytest.raises(InputError) as e:
        for i, v in jsonl_text_values(Path("f.jsonl"), text, unique_keys=True):
            got.append((i, v))
    assert "line 6100: the record names the key 'a' more than once" in str(e.value)
    assert [i for i, _ in got] == [i for i in range(1, 6100) if i != 4500]
    assert dict(got)[4700]["n"] == 123456789012345678901 and type(dict(got)[4700]["n"]) is int
    assert dict(got)[8 * 512] == {"id": "r4096", "a": "t:4096"}
    lines[6099] = '{"id": "r6100", "a": 1}'
    lines[8999] = '{"id": "r9000", "a": NaN}'  # read as the standard parser reads it
    lines[8499] = '{"id": "r8500", "a": }'
    with pytest.raises(InputError) as e:
        list(jsonl_text_values(Path("f.jsonl"), "\n".join(lines), unique_keys=True))
    assert "f.jsonl: line 8500: expected one JSON object per line, but the line is not valid JSON" in str(e.value)
    lines[8499] = '{"id": "r8500"}'
    last = list(jsonl_text_values(Path("f.jsonl"), "\n".join(lines), unique_keys=True))[-1]
    assert last[0] == 9000 and math.isnan(last[1]["a"])
