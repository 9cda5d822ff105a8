"""Numbers keep their exact value on every task that reads them.

For random integers up to 10^40 and random decimal texts, written as the files are written (CSV
cells, JSON numbers and JSON strings), two texts of one value score equal and two different
values score different: never a float in between that rounds `9007199254740993` to
`9007199254740992` or makes `1e400` equal `9e999`. Each example is one column (fields, labels)
or one key (json, structured) of a single record, so one scoring call checks a whole draw.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import extracteval
from extracteval.core.decision_track import leaf_key
from extracteval.core.jsonparse import loads_fast

# a number as text: an integer up to 10^40, or a decimal with up to 25 significant digits and an
# exponent that may leave a float's range
integers = st.integers(min_value=-(10**40), max_value=10**40).map(str)
decimals = st.builds(
    lambda digits, point, exp: (digits[:point] + "." + digits[point:] if 0 < point < len(digits) else digits) + (f"e{exp}" if exp else ""),
    st.text("0123456789", min_size=1, max_size=25).filter(lambda d: d[0] != "0"),
    st.integers(min_value=0, max_value=25),
    st.integers(min_value=-400, max_value=400) | st.just(0),
)
numbers = integers | decimals


def _same_value(a: str, b: str) -> bool:
    return Decimal(a) == Decimal(b)


def _other_text(text: str) -> str:
    """The same value, written otherwise (trailing zeros, an exponent)."""
    d = Decimal(text)
    return f"{d:E}" if d != 0 else "0.0"


pairs = st.lists(
    st.one_of(
        numbers.map(lambda a: (a, a)),  # the same text on both sides
        numbers.map(lambda a: (a, _other_text(a))),  # the same value written otherwise
        st.tuples(numbers, numbers),  # (almost always) different values
        integers.map(lambda a: (a, str(int(a) + 1))),  # neighbours: one apart at any size
    ),
    min_size=1, max_size=12,
)

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@SETTINGS
@given(pairs)
def test_fields_csv_cells_compare_at_their_exact_value(tmp_path_factory, ps):
    d = tmp_path_factory.mktemp("fields")
    cols = [f"f{i}" for i in range(len(ps))]
    truth = _write(d / "t.csv", "id," + ",".join(cols) + "\n1," + ",".join(a for a, _ in ps) + "\n")
    pred = _write(d / "p.csv", "id," + ",".join(cols) + "\n1," + ",".join(b for _, b in ps) + "\n")
    doc = extracteval.score("fields", truth, {"m": pred}, bootstrap=0).to_dict()
    for c, (a, b) in zip(cols, ps):
        assert (doc["models"]["m"]["fields"][c]["tp"] == 1) is _same_value(a, b), (a, b)


@SETTINGS
@given(pairs)
def test_labels_classes_compare_at_their_exact_value(tmp_path_factory, ps):
    d = tmp_path_factory.mktemp("labels")
    cols = [f"f{i}" for i in range(len(ps))]
    # under `number` a value is its number: 1.10 = 1.1 (under `auto` a zero ending a fraction makes a code)
    types = {c: "number" for c in cols}
    truth = _write(d / "t.csv", "id," + ",".join(cols) + "\n1," + ",".join(a for a, _ in ps) + "\n")
    pred = _write(d / "p.csv", "id," + ",".join(cols) + "\n1," + ",".join(b for _, b in ps) + "\n")
    doc = extracteval.score("labels", truth, {"m": pred}, types=types).to_dict()
    for c, (a, b) in zip(cols, ps):
        assert (doc["models"]["m"]["strict"]["features"][c]["correct"] == 1) is _same_value(a, b), (a, b)


@SETTINGS
@given(pairs, st.booleans())
def test_json_numbers_compare_at_their_exact_value(tmp_path_factory, ps, quoted):
    """JSON numbers against JSON numbers, or (quoted) against strings holding a number: one rule."""
    d = tmp_path_factory.mktemp("json")
    keys = [f"k{i}" for i in range(len(ps))]
    t_obj = ", ".join(f'"{k}": {a}' for k, (a, _) in zip(keys, ps))
    p_obj = ", ".join(f'"{k}": ' + (json.dumps(b) if quoted else b) for k, (_, b) in zip(keys, ps))
    truth = _write(d / "t.jsonl", '{"id": "1", ' + t_obj + "}\n")
    pred = _write(d / "p.jsonl", '{"id": "1", "prediction": {' + p_obj + "}}\n")
    doc = extracteval.score("json", truth, {"m": pred}).to_dict()
    for k, (a, b) in zip(keys, ps):
        assert (doc["models"]["m"]["fields"][k]["matched"] == 1) is _same_value(a, b), (a, b, quoted)


@SETTINGS
@given(pairs)
def test_structured_fields_compare_at_their_exact_value(tmp_path_factory, ps):
    d = tmp_path_factory.mktemp("structured")
    keys = [f"k{i}" for i in range(len(ps))]
    t_obj = "{" + ", ".join(f'"{k}": {a}' for k, (a, _) in zip(keys, ps)) + "}"
    p_obj = "{" + ", ".join(f'"{k}": {b}' for k, (_, b) in zip(keys, ps)) + "}"
    truth = _write(d / "t.jsonl", '{"id": "1", "reference": ' + t_obj + "}\n")
    pred = _write(d / "p.jsonl", json.dumps({"id": "1", "output": p_obj}) + "\n")
    doc = extracteval.score("structured", truth, {"m": pred}).to_dict()
    fields = doc["models"]["m"]["fields"]
    for k, (a, b) in zip(keys, ps):
        assert (fields[k]["tp"] == 1) is _same_value(a, b), (a, b, fields[k])


@settings(max_examples=300, deadline=None)
@given(numbers, numbers)
def test_tool_call_arguments_compare_at_their_exact_value(a, b):
    """A tool call's argument values are keyed by value, as read from the model's JSON text."""
    ka, kb = leaf_key(loads_fast(f"[{a}]")[0]), leaf_key(loads_fast(f"[{b}]")[0])
    assert (ka == kb) is _same_value(a, b), (a, b, ka, kb)


@pytest.mark.parametrize("a,b,same", [
    ("9007199254740993", "9007199254740992", False), ("1e400", "9e999", False), ("1.00000000000000001", "1", False),
    ("12", "12.0", True), ("1E+2", "100", True), (str(10**40), str(10**40 + 1), False),
])
def test_tool_calls_score_exact_numbers(tmp_path: Path, a: str, b: str, same: bool) -> None:
    truth = _write(tmp_path / "t.jsonl", '{"id": "1", "calls": [{"name": "pay", "arguments": {"amount": ' + a + "}}]}\n")
    pred = _write(tmp_path / "p.jsonl", json.dumps({"id": "1", "output": '[{"name": "pay", "arguments": {"amount": ' + b + "}}]"}) + "\n")
    doc = extracteval.score("toolcalls", truth, {"m": pred}).to_dict()
    assert (doc["models"]["m"]["args_exact_rate"] == 1.0) is same, json.dumps(doc["models"]["m"])[:600]


# ---- rules that merged different values without a word ------------------------------------------


def _labels_doc(tmp_path: Path, truth: list[str], pred: list[str], **config) -> dict:
    rows = lambda vs: "id,kind\n" + "".join(f"{i},{v}\n" for i, v in enumerate(vs))  # noqa: E731
    t, p = _write(tmp_path / "t.csv", rows(truth)), _write(tmp_path / "p.csv", rows(pred))
    return extracteval.score("labels", t, {"m": p}, **config).to_dict()["models"]["m"]["strict"]["features"]["kind"]


def test_labels_codes_written_as_numbers_stay_classes_of_their_own(tmp_path: Path) -> None:
    """Under `auto`, `1.10` (a version) is not `1.1` and `007` is not `7`; `1.0` is `1`."""
    got = _labels_doc(tmp_path, ["1.10", "007", "1.0", "2.5"], ["1.1", "7", "1", "2.50"])
    assert got["correct"] == 1 and set(got["labels"]) >= {"1.10", "1.1", "007", "7", "2.50", "2.5"}
    assert _labels_doc(tmp_path, ["1.10", "007"], ["1.1", "7"], types={"kind": "number"})["correct"] == 2  # as numbers, they are equal


def test_category_values_that_look_like_null_tokens_are_classes(tmp_path: Path) -> None:
    """`None`, `NA` and `-` are classes of a category; only the tokens the user lists mean missing."""
    truth, pred = ["None", "NA", "-", "x"], ["NA", "None", "-", "x"]
    got = _labels_doc(tmp_path, truth, pred, types={"kind": "category"})
    assert got["correct"] == 2 and {"none", "na", "-"} <= set(got["labels"]) and "<MISSING>" not in got["labels"]
    auto = _labels_doc(tmp_path, truth, pred)  # under `auto` the default tokens still mean missing
    assert auto["correct"] == 4 and "<MISSING>" in auto["labels"]
    listed = _labels_doc(tmp_path, truth, pred, types={"kind": "category"}, null_tokens=["-"])
    assert listed["correct"] == 2 and "<MISSING>" in listed["labels"] and "none" in listed["labels"]


@pytest.mark.parametrize("kind,pairs", [
    ("auto", {("007", "7"): True, ("$5", "5.00"): True, ("AB-7", "ab-7"): True, ("N/A", ""): True}),
    ("text", {("007", "7"): False, ("$5", "5.00"): False, ("AB-7", "ab-7"): True, ("N/A", ""): True, ("1,000", "1000"): False}),
    ("id", {("007", "7"): False, ("$5", "5.00"): False, ("AB-7", "ab-7"): False, (" AB-7 ", "AB-7"): True, ("N/A", ""): True}),
])
def test_a_field_can_opt_out_of_the_number_rules(tmp_path: Path, kind: str, pairs: dict) -> None:
    """`types` in the strategies file: `text` keeps text rules only, `id` compares as written."""
    cols = [f"f{i}" for i in range(len(pairs))]
    strategies = _write(tmp_path / "s.yaml", "strategies: {}\ntypes:\n" + "".join(f"  {c}: {kind}\n" for c in cols))
    line = lambda vs: "1," + ",".join(json.dumps(v) for v in vs) + "\n"  # noqa: E731
    truth = _write(tmp_path / "t.csv", "id," + ",".join(cols) + "\n" + line([a for a, _ in pairs]))
    pred = _write(tmp_path / "p.csv", "id," + ",".join(cols) + "\n" + line([b for _, b in pairs]))
    doc = extracteval.score("fields", truth, {"m": pred}, strategies=strategies, bootstrap=0).to_dict()
    fields = doc["models"]["m"]["fields"]
    for c, ((a, b), same) in zip(cols, pairs.items()):
        assert (fields[c]["fp"] == 0 and fields[c]["fn"] == 0) is same, (kind, a, b, fields[c])
    assert doc["config"]["types"] == {c: kind for c in cols}


def test_an_unknown_field_type_is_refused(tmp_path: Path, cli) -> None:
    strategies = _write(tmp_path / "s.json", '{"strategies": {}, "types": {"acct": "bignum"}}')
    _write(tmp_path / "t.csv", "id,acct\n1,5\n")
    r = cli("score", "fields", "--truth", str(tmp_path / "t.csv"), "--predictions", f"m={tmp_path / 't.csv'}", "--strategies", strategies)
    assert r.code == 2 and "'bignum'" in r.err and "auto, text, id" in r.err and "Traceback" not in r.err
