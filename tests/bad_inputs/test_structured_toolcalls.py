"""Bad-input catalogue: `extracteval score structured` and `score toolcalls`.

Their predictions are raw model output (a string): whatever a model wrote is data to be
counted (invalid JSON, a refusal, 10,000-deep nesting, a Python call with `__import__`), never
an exception. Structural problems of the files themselves (empty, undecodable, duplicate ids,
a truth that is not JSON) are the user's to fix: exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, deep, drop_first, duplicate_first, header_only, ids, json_text_edit, latin1,
    raw, rows, run_case, wide, wrong_delimiter,
)

REFS = [
    {"order_id": "A-1", "currency": "EUR", "items": [{"sku": "X", "qty": 1}]},
    {"order_id": "A-2", "currency": "USD", "items": [{"sku": "Y", "qty": 2}]},
    {"order_id": "A-3", "currency": "CHF", "items": []},
    {"order_id": "A-4", "currency": "GBP", "items": [{"sku": "Z", "qty": 3}, {"sku": "X", "qty": 1}]},
]
CALLS = [
    [{"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius"}}],
    [{"name": "convert", "arguments": {"amount": 25.5, "from": "GBP", "to": "EUR"}}],
    [{"name": "search", "arguments": {"query": "flights"}}, {"name": "book", "arguments": {"seat": "12A"}}],
    [{"name": "get_time", "arguments": {}}],
]


def _s_truth() -> list[dict]:
    return [{"id": f"R{i + 1}", "reference": r} for i, r in enumerate(REFS)]


def _s_pred() -> list[dict]:
    return [{"id": f"R{i + 1}", "output": json.dumps(r)} for i, r in enumerate(REFS)]


def _t_truth() -> list[dict]:
    return [{"id": f"R{i + 1}", "calls": c} for i, c in enumerate(CALLS)]


def _t_pred() -> list[dict]:
    return [{"id": f"R{i + 1}", "output": json.dumps(c)} for i, c in enumerate(CALLS)]


STRUCTURED = TaskSpec("structured", "jsonl", _s_truth, _s_pred,
                      lambda t, p: ["score", "structured", "--truth", str(t), "--predictions", f"m={p}", "--json"])
TOOLCALLS = TaskSpec("toolcalls", "jsonl", _t_truth, _t_pred,
                     lambda t, p: ["score", "toolcalls", "--truth", str(t), "--predictions", f"m={p}", "--json"])


def _output(text: str, row: int = 0):
    def fn(rs: list[dict]) -> list[dict]:
        rs[row]["output"] = text
        return rs

    return rows("pred", fn)


def _counts(**expected):
    def check(doc: dict) -> None:
        c = doc["models"]["m"]["counts"]
        for k, v in expected.items():
            assert c[k] == v, f"{k}: {c[k]!r} != {v!r} in {c}"

    return check


def _common(spec: TaskSpec) -> list[Case]:
    return [
        Case("empty truth", raw("truth", b""), Bad("{truth}", "empty")),
        Case("empty predictions", raw("pred", b""), Bad("{pred}", "empty")),
        Case("no records truth", header_only("truth"), Bad("truth.json", "no records")),
        Case("two records on one line", wrong_delimiter("truth"), Bad("{truth}", "line 1")),
        Case("BOM", bom("pred"), Ok(same=True)),
        Case("CRLF", crlf("truth"), Ok(same=True)),
        Case("non-UTF-8 bytes", latin1("truth"), Bad("{truth}", "line 3", "UTF-8")),
        Case("duplicate ids truth", rows("truth", duplicate_first), Bad("{truth}", "R1")),
        Case("duplicate ids predictions", rows("pred", duplicate_first), Bad("{pred}", "R1")),
        Case("id missing in predictions", rows("pred", drop_first), Ok(lambda d: d["models"]["m"]["missing_ids"] == ["R1"] or _no(d))),
        Case("id missing in truth", rows("truth", drop_first), Ok(lambda d: d["models"]["m"]["extra_ids"] == ["R1"] or _no(d))),
        Case("10,000-deep truth", json_text_edit("truth", lambda t: t.replace('"EUR"' if spec is STRUCTURED else '"Berlin"', deep(), 1)), Ok()),
        Case("1 MB output", _output("x" * 1_000_000), Ok(_counts(valid=3) if spec is STRUCTURED else _counts(valid_records=3))),
        Case("10,000-deep output", _output(deep()), Ok(_counts(valid=4, exact=3) if spec is STRUCTURED else _counts(valid_records=3))),
        Case("NaN in output", _output('{"order_id": NaN}' if spec is STRUCTURED else '[{"name": "get_weather", "arguments": {"city": NaN}}]'), Ok()),
        Case("output is not a string", _output(None), Ok()),
        Case("HTML in output", _output('<script>alert(1)</script>'), Ok()),
        Case("Python call with __import__", _output("get_weather(city=__import__('os').system('echo pwned > PWNED'))"), Ok()),
        Case("truth not JSON", json_text_edit("truth", lambda t: t.replace('{"id": "R1"', '{"id": "R1" oops', 1)), Bad("{truth}", "line 1")),
        Case("zero division outside [0,1]", None, Bad("zero", "5"), extra=("--zero-division", "5")),
    ]


def _no(doc: dict) -> None:
    raise AssertionError(json.dumps(doc["models"]["m"])[:2000])


STRUCTURED_CASES = [
    *_common(STRUCTURED),
    Case("duplicate keys in output", _output('{"order_id": "WRONG", "order_id": "A-1", "currency": "EUR", "items": [{"sku": "X", "qty": 1}]}'), Ok(_counts(exact=4)),
         behaviour="last key wins"),
    # 10k keys: 100k work (~11 s) but every key is a reported field and the indented --json dominates
    Case("10k keys in output", _output(json.dumps({**REFS[0], **wide(10_000)})), Ok(_counts(fp=10_000))),
    Case("pass threshold above 1", None, Bad("threshold", "1.5"), extra=("--pass-threshold", "1.5")),
]
TOOLCALL_CASES = [
    *_common(TOOLCALLS),
    Case("duplicate keys in arguments", _output('[{"name": "get_weather", "arguments": {"city": "Paris", "city": "Berlin", "unit": "celsius"}}]'), Ok(_counts(correct_records=4)),
         behaviour="last key wins"),
    Case("100k arguments", _output(json.dumps([{"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius", **wide()}}])), Ok(_counts(fp=100_000))),
    Case("unknown checker", None, Bad("checker", "bogus"), extra=("--checker", "bogus")),
]


@pytest.mark.parametrize("case", STRUCTURED_CASES, ids=ids(STRUCTURED_CASES))
def test_structured_bad_input(cli, tmp_path: Path, monkeypatch, case: Case) -> None:
    monkeypatch.chdir(tmp_path)
    run_case(cli, STRUCTURED, case, tmp_path)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("case", TOOLCALL_CASES, ids=ids(TOOLCALL_CASES))
def test_toolcalls_bad_input(cli, tmp_path: Path, monkeypatch, case: Case) -> None:
    monkeypatch.chdir(tmp_path)
    run_case(cli, TOOLCALLS, case, tmp_path)
    assert not (tmp_path / "PWNED").exists()
