"""Bad-input catalogue: `extracteval score labels` (the fields table reader, --type, options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, deep, drop_first, duplicate_first, header_only, ids, json_text_edit, latin1, raw,
    rows, run_case, wide, wrong_delimiter,
)


def _truth() -> list[dict]:
    return [
        {"id": "R1", "kind": "invoice", "amount": "100.5", "paid": "yes"},
        {"id": "R2", "kind": "receipt", "amount": "20", "paid": "no"},
        {"id": "R3", "kind": "invoice", "amount": "3", "paid": "yes"},
        {"id": "R4", "kind": "order", "amount": "4000", "paid": "no"},
    ]


def _pred() -> list[dict]:
    rs = _truth()
    rs[1] = {**rs[1], "paid": "yes"}
    return rs


def _argv(truth: Path, pred: Path) -> list[str]:
    return ["score", "labels", "--truth", str(truth), "--predictions", f"m={pred}", "--json"]


SPEC = TaskSpec("labels", "csv", _truth, _pred, _argv)
JSONL = TaskSpec("labels", "jsonl", _truth, _pred, _argv)


def _strict(doc: dict) -> dict:
    return doc["models"]["m"]["strict"]


def _missing_counted(doc: dict) -> None:
    m = doc["models"]["m"]
    assert m["alignment"]["missing_rows"] == 1
    assert _strict(doc)["correct_rows"] <= 2  # the missing row is an error in the strict view


def _extra_counted(doc: dict) -> None:
    assert doc["models"]["m"]["alignment"]["extra_rows"] == 1
    assert any("R1" in w for w in doc["warnings"])
    assert _strict(doc)["rows"] == 4


def _row_wrong(doc: dict) -> None:
    assert _strict(doc)["correct_rows"] <= 2  # R2 was already wrong; the damaged R1 is wrong too


def _set(side: str, field: str, value, row: int = 0):
    def fn(rs: list[dict]) -> list[dict]:
        rs[row][field] = value
        return rs

    return rows(side, fn)


CASES = [
    Case("empty truth", raw("truth", b""), Bad("{truth}", "empty")),
    Case("empty predictions", raw("pred", b""), Bad("{pred}", "empty")),
    Case("header only truth", header_only("truth"), Bad("{truth}", "no records")),
    Case("header only predictions", header_only("pred"), Bad("{pred}", "no records")),
    Case("wrong delimiter truth", wrong_delimiter("truth"), Bad("{truth}", "';'")),
    Case("wrong delimiter predictions", wrong_delimiter("pred"), Bad("{pred}", "';'")),
    Case("BOM", bom("truth"), Ok(same=True)),
    Case("CRLF", crlf("pred"), Ok(same=True)),
    Case("non-UTF-8 bytes", latin1("truth"), Bad("{truth}", "line 3", "UTF-8", "0xe9")),
    Case("duplicate ids truth", rows("truth", duplicate_first), Bad("{truth}", "R1", "duplicate")),
    Case("duplicate ids predictions", rows("pred", duplicate_first), Bad("{pred}", "R1", "duplicate")),
    Case("id missing in predictions", rows("pred", drop_first), Ok(_missing_counted)),
    Case("id missing in truth", rows("truth", drop_first), Ok(_extra_counted),
         behaviour="the prediction's extra row is an error in the strict view, with a warning naming it"),
    Case("NaN number", _set("pred", "amount", "NaN"), Ok(_row_wrong), extra=("--type", "amount=number")),
    Case("inf number", _set("pred", "amount", "inf"), Ok(_row_wrong), extra=("--type", "amount=number")),
    Case("1 MB string", _set("pred", "kind", "x" * 1_000_000), Ok(_row_wrong)),
    Case("10k features", rows("pred", lambda rs: [{**r, **wide(10_000)} if i == 0 else r for i, r in enumerate(rs)]), Ok()),
    Case("unknown type name", None, Bad("bogus", "number"), extra=("--type", "amount=bogus")),
    Case("type for a missing feature", None, Bad("nosuch"), extra=("--type", "nosuch=number")),
]

JSONL_CASES = [
    Case("10,000-deep nesting in prediction", json_text_edit("pred", lambda t: t.replace('"invoice"', deep(), 1)), Ok(_row_wrong)),
    Case("10,000-deep nesting in truth", json_text_edit("truth", lambda t: t.replace('"invoice"', deep(), 1)), Ok(_row_wrong)),
    Case("duplicate keys in prediction", json_text_edit("pred", lambda t: t.replace('"kind": "invoice"', '"kind": "invoice", "kind": "order"', 1)),
         Bad("{pred}", "line 1", "'kind'", "more than once")),
    Case("100k features in a prediction", rows("pred", lambda rs: [{**r, **wide()} if i == 0 else r for i, r in enumerate(rs)]), Ok(),
         behaviour="columns the truth lacks are ignored"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_labels_bad_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, SPEC, case, tmp_path)


@pytest.mark.parametrize("case", JSONL_CASES, ids=ids(JSONL_CASES))
def test_labels_bad_jsonl_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, JSONL, case, tmp_path)


def test_labels_bad_config(cli, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"types": {"amount": "BOGUS"}}', encoding="utf-8")
    run_case(cli, SPEC, Case("unknown type in config", None, Bad("BOGUS"), extra=("--config", str(config))), tmp_path)
