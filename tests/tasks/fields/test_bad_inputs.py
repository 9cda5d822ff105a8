"""Bad-input catalogue: `extracteval score fields` (CSV reader, strategies file, options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, deep, drop_first, duplicate_first, header_only, ids, json_text_edit, latin1, raw, rows,
    run_case, wide, wrong_delimiter,
)


def _truth() -> list[dict]:
    return [
        {"id": "R1", "name": "Acme GmbH", "amount": "100.50", "date": "2024-01-02"},
        {"id": "R2", "name": "Borealis SA", "amount": "20", "date": "2024-02-03"},
        {"id": "R3", "name": "Cobalt LLC", "amount": "3", "date": "2024-03-04"},
        {"id": "R4", "name": "Delta Ltd", "amount": "4000", "date": "2024-04-05"},
    ]


def _pred() -> list[dict]:
    rs = _truth()
    rs[1] = {**rs[1], "amount": "21"}
    return rs


def _argv(truth: Path, pred: Path) -> list[str]:
    return ["score", "fields", "--truth", str(truth), "--predictions", f"m={pred}", "--json", "--no-ci"]


SPEC = TaskSpec("fields", "csv", _truth, _pred, _argv)


def _model(doc: dict) -> dict:
    return doc["models"]["m"]


def _missing_counted(doc: dict) -> None:
    m = _model(doc)
    assert m["missing_records"] == 1
    assert m["totals"]["fn"] >= 3  # the missing record's three fields are misses


def _value_counted_wrong(field: str):
    def check(doc: dict) -> None:
        f = _model(doc)["fields"][field]
        assert f["fp"] + f["fn"] >= 1 and f["tp"] <= 3

    return check


def _set(side: str, field: str, value: str, row: int = 0):
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
    Case("id missing in truth", rows("truth", drop_first), Bad("{pred}", "not in the ground truth", "R1")),
    Case("NaN number", _set("pred", "amount", "NaN", 0), Ok(_value_counted_wrong("amount"))),
    Case("inf number", _set("pred", "amount", "inf", 0), Ok(_value_counted_wrong("amount"))),
    Case("1 MB string", _set("pred", "name", "x" * 1_000_000, 0), Ok(_value_counted_wrong("name"))),
    Case("10k columns", rows("pred", lambda rs: [{**r, **wide(10_000)} if i == 0 else r for i, r in enumerate(rs)]), Ok()),
    Case("fuzzy threshold above 1", None, Bad("fuzzy_threshold", "1.5"), extra=("--fuzzy-threshold", "1.5")),
    Case("fuzzy threshold below 0", None, Bad("fuzzy_threshold", "-0.1"), extra=("--fuzzy-threshold", "-0.1")),
    Case("fuzzy threshold NaN", None, Bad("fuzzy_threshold", "nan"), extra=("--fuzzy-threshold", "nan")),
    Case("missing id column", rows("truth", lambda rs: [{k: v for k, v in r.items() if k != "id"} for r in rs]), Bad("{truth}", "id")),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_fields_bad_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, SPEC, case, tmp_path)


STRATEGY_CASES = [
    ("unknown strategy name", '{"name": "BOGUS"}', ".json", ("BOGUS", "EXACT")),
    ("strategy file not a mapping", "[1, 2]", ".json", ("strategies",)),
    ("YAML python tag", "name: !!python/object/apply:os.system ['echo pwned > PWNED']\n", ".yaml", ("strategies.yaml",)),
    ("strategies file bad JSON", '{"name": ', ".json", ("strategies.json",)),
]


@pytest.mark.parametrize("name,text,suffix,needles", STRATEGY_CASES, ids=[c[0].replace(" ", "-") for c in STRATEGY_CASES])
def test_fields_bad_strategies(cli, tmp_path: Path, monkeypatch, name, text, suffix, needles) -> None:
    monkeypatch.chdir(tmp_path)
    strategies = tmp_path / f"strategies{suffix}"
    strategies.write_text(text, encoding="utf-8")
    case = Case(name, None, Bad(*needles), extra=("--strategies", str(strategies)))
    run_case(cli, SPEC, case, tmp_path)
    assert not (tmp_path / "PWNED").exists()


def _deep_jsonl(side: str):
    """A 10,000-deep JSON value in R1's `name` (JSONL input)."""
    return json_text_edit(side, lambda t: t.replace('"Acme GmbH"', deep(), 1))


def _as_parquet_with_deep_cell(side: str):
    """The side as Parquet, R1's `name` a string holding 10,000-deep JSON (read as a JSON list)."""

    def m(f) -> None:
        import io

        import pandas as pd

        rs = [dict(r) for r in getattr(f, side)]
        rs[0]["name"] = deep()
        buf = io.BytesIO()
        pd.DataFrame(rs).to_parquet(buf, index=False)
        f.set_raw(side, buf.getvalue())
        f.suffix[side] = ".parquet"

    return m


JSONL = TaskSpec("fields", "jsonl", _truth, _pred, _argv)
DEEP_CASES = [
    Case("10,000-deep nesting in JSONL prediction", _deep_jsonl("pred"), Ok(_value_counted_wrong("name"))),
    Case("10,000-deep nesting in JSONL truth", _deep_jsonl("truth"), Ok(_value_counted_wrong("name"))),
    Case("10,000-deep nesting in JSONL prediction, chunked", _deep_jsonl("pred"), Ok(_value_counted_wrong("name")), extra=("--chunk-size", "1")),
    Case("10,000-deep nesting in JSONL truth, chunked", _deep_jsonl("truth"), Ok(_value_counted_wrong("name")), extra=("--chunk-size", "1")),
    Case("10,000-deep JSON in a Parquet prediction cell", _as_parquet_with_deep_cell("pred"), Ok(_value_counted_wrong("name"))),
    Case("10,000-deep JSON in a Parquet prediction cell, chunked", _as_parquet_with_deep_cell("pred"), Ok(_value_counted_wrong("name")), extra=("--chunk-size", "1")),
    Case("duplicate keys in JSONL prediction", json_text_edit("pred", lambda t: t.replace('"name": "Acme GmbH"', '"name": "Acme GmbH", "name": "Bob"', 1)),
         Bad("{pred}", "line 1", "'name'", "more than once")),
    Case("duplicate keys in JSONL truth", json_text_edit("truth", lambda t: t.replace('"name": "Acme GmbH"', '"name": "Acme GmbH", "name": "Bob"', 1)),
         Bad("{truth}", "line 1", "'name'", "more than once")),
]


@pytest.mark.parametrize("case", DEEP_CASES, ids=ids(DEEP_CASES))
def test_fields_bad_jsonl_parquet_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, JSONL, case, tmp_path)
