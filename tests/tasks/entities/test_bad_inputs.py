"""Bad-input catalogue: `extracteval score entities` (JSONL/JSON entity readers, weights, options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, deep, drop_first, duplicate_first, header_only, ids, json_text_edit, latin1, raw,
    rows, run_case, wide, wrong_delimiter,
)


def _truth() -> list[dict]:
    return [
        {"id": "INV-1", "entities": [{"description": "Steel bolt", "amount": "12.00"}, {"description": "Hex nut", "amount": "5.00"}]},
        {"id": "INV-2", "entities": [{"description": "Consulting", "amount": "1500"}]},
        {"id": "INV-3", "entities": [{"description": "Paper", "amount": "3"}]},
        {"id": "INV-4", "entities": [{"description": "Toner", "amount": "40"}]},
    ]


def _pred() -> list[dict]:
    rs = _truth()
    rs[1] = {"id": "INV-2", "entities": [{"description": "Consulting", "amount": "1499"}]}
    return rs


def _argv(truth: Path, pred: Path) -> list[str]:
    return ["score", "entities", "--truth", str(truth), "--predictions", f"m={pred}", "--json"]


SPEC = TaskSpec("entities", "jsonl", _truth, _pred, _argv)


def _summary(doc: dict) -> dict:
    return doc["models"]["m"]["entity_detection_summary"]


def _check(**expected):
    def check(doc: dict) -> None:
        s = _summary(doc)
        for k, v in expected.items():
            assert (v(s[k]) if callable(v) else s[k] == v), f"{k}: {s[k]!r}"

    return check


def _first_entity(side: str, fn):
    def edit(rs: list[dict]) -> list[dict]:
        rs[0]["entities"][0] = fn(rs[0]["entities"][0])
        return rs

    return rows(side, edit)


def _not_in_truth_reported(doc: dict) -> None:
    assert doc["models"]["m"]["alignment"]["records_not_in_truth"] == 1
    assert _summary(doc)["gold_count"] == 3  # the other records scored as usual


def _strict_below_clean(doc: dict) -> None:
    assert doc["models"]["m"]["strict"]["correct_rows"] < 4  # clean: 4 of 5 entities right


CASES = [
    Case("empty truth", raw("truth", b""), Bad("{truth}", "empty")),
    Case("empty predictions", raw("pred", b""), Bad("{pred}", "empty")),
    Case("no records truth", header_only("truth"), Bad("truth.json", "no records")),
    Case("no records predictions", header_only("pred"), Bad("pred.json", "no records")),
    Case("two records on one line", wrong_delimiter("truth"), Bad("{truth}", "line 1")),
    Case("BOM", bom("truth"), Ok(same=True)),
    Case("CRLF", crlf("pred"), Ok(same=True)),
    Case("non-UTF-8 bytes", latin1("pred"), Bad("{pred}", "line 3", "UTF-8")),
    Case("duplicate ids truth", rows("truth", duplicate_first), Bad("{truth}", "line 5", "INV-1", "repeats line 1")),
    Case("duplicate ids predictions", rows("pred", duplicate_first), Bad("{pred}", "line 5", "INV-1", "repeats line 1")),
    Case("id missing in predictions", rows("pred", drop_first), Ok(_check(missed_gold_count=lambda n: n >= 2))),
    Case("id missing in truth", rows("truth", drop_first), Ok(_not_in_truth_reported),
         behaviour="counted under records_not_in_truth, not scored"),
    Case("NaN in prediction", _first_entity("pred", lambda e: {**e, "amount": float("nan")}), Ok(_strict_below_clean)),
    Case("Infinity in prediction", _first_entity("pred", lambda e: {**e, "amount": float("inf")}), Ok(_strict_below_clean)),
    Case("1 MB string", _first_entity("pred", lambda e: {**e, "description": "x" * 1_000_000}), Ok(_strict_below_clean)),
    Case("100k keys in a predicted entity", _first_entity("pred", lambda e: {**e, **wide()}), Ok(),
         behaviour="keys the gold entities lack are not scored"),
    Case("10,000-deep nesting in prediction", json_text_edit("pred", lambda t: t.replace('"Steel bolt"', deep(), 1)), Ok(_strict_below_clean)),
    Case("10,000-deep nesting in truth", json_text_edit("truth", lambda t: t.replace('"Steel bolt"', deep(), 1)), Ok(_strict_below_clean)),
    Case("duplicate keys in prediction", json_text_edit("pred", lambda t: t.replace('"description": "Steel bolt"', '"description": "Steel bolt", "description": "Nail"', 1)),
         Ok(_strict_below_clean), behaviour="last key wins (as in json.loads)"),
    Case("entities not a list in prediction", rows("pred", lambda rs: [{**r, "entities": "none"} if i == 0 else r for i, r in enumerate(rs)]),
         Ok(_check(invalid_predictions_count=lambda n: n >= 1))),
    Case("entities not a list in truth", rows("truth", lambda rs: [{**r, "entities": "none"} if i == 0 else r for i, r in enumerate(rs)]),
         Bad("{truth}", "INV-1", "list")),
    Case("no truth record has an entity", rows("truth", lambda rs: [{**r, "entities": []} for r in rs]),
         Bad("{truth}", "no ground-truth entity to score", "every record's list of entities is empty")),
    Case("match threshold above 1", None, Bad("match", "1.5"), extra=("--match-threshold", "1.5")),
    Case("match threshold below 0", None, Bad("match", "-0.1"), extra=("--match-threshold", "-0.1")),
    Case("fuzzy threshold NaN", None, Bad("fuzzy", "nan"), extra=("--fuzzy-threshold", "nan")),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_entities_bad_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, SPEC, case, tmp_path)


WEIGHTS_CASES = [
    ("unknown strategy name", '{"weights": {"description": 1}, "strategies": {"description": "BOGUS"}}', ".json", ("BOGUS",)),
    ("YAML python tag", "description: !!python/object/apply:os.system ['echo pwned > PWNED']\n", ".yaml", ("weights.yaml",)),
    ("threshold in file outside [0,1]", '{"weights": {"description": 1}, "match_threshold": 3}', ".json", ("match", "3")),
]


@pytest.mark.parametrize("name,text,suffix,needles", WEIGHTS_CASES, ids=[c[0].replace(" ", "-") for c in WEIGHTS_CASES])
def test_entities_bad_weights(cli, tmp_path: Path, monkeypatch, name, text, suffix, needles) -> None:
    monkeypatch.chdir(tmp_path)
    weights = tmp_path / f"weights{suffix}"
    weights.write_text(text, encoding="utf-8")
    run_case(cli, SPEC, Case(name, None, Bad(*needles), extra=("--weights", str(weights))), tmp_path)
    assert not (tmp_path / "PWNED").exists()
