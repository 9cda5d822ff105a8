"""Whole-file `.json` inputs (a JSON array of records, `{"records": [...]}`, or an object mapping
id → record) follow the JSONL rule for repeated keys: a record that names one of its own keys twice
is refused (exit 2, one line naming the file, the record and the key), as is an object naming
one record id twice; a key repeated inside a record's value (a model's output) keeps its last
value. Every task that reads `.json` records is run, each side."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bad_inputs import test_structured_toolcalls as st
from tests.tasks.entities import test_bad_inputs as test_entities
from tests.tasks.fields import test_bad_inputs as test_fields
from tests.tasks.json import test_bad_inputs as test_json
from tests.tasks.labels import test_bad_inputs as test_labels
from tests.tasks.spans import test_bad_inputs as test_spans
from tests.bad_inputs.harness import Bad, Case, Files, Ok, TaskSpec, run_case

SPECS = {
    "fields": test_fields.JSONL,
    "labels": test_labels.JSONL,
    "json": test_json.SPEC,
    "entities": test_entities.SPEC,
    "spans": test_spans.SPEC,
    "structured": st.STRUCTURED,
    "toolcalls": st.TOOLCALLS,
}
SIDES = {"truth": "{truth}", "pred": "{pred}"}
# the readers that take `{"records": [...]}` too
WRAPPED = ("fields", "labels", "json", "entities")


def as_json(side: str, edit: Callable[[str], str] | None = None, *, layout: str = "array") -> Callable[[Files], None]:
    """`side` written as a `.json` file: an array of its records, `{"records": [...]}` or an
    object id → record (the id left out of the record); `edit` changes the text."""

    def m(f: Files) -> None:
        rows = getattr(f, side)
        if layout == "by id":
            value: object = {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in rows}
        else:
            value = {"records": rows} if layout == "wrapped" else rows
        text = json.dumps(value)
        f.set_raw(side, edit(text) if edit else text)
        f.suffix[side] = ".json"

    return m


def repeat_first_id(text: str) -> str:
    """The first record names its `id` key twice (the same value)."""
    at = text.index("{", 1 if text.startswith("[") else text.index("["))  # the first record's brace
    value = json.loads(text)
    rid = (value["records"] if isinstance(value, dict) else value)[0]["id"]
    return text[:at + 1] + '"id": ' + json.dumps(rid) + ", " + text[at + 1:]


def _cases(task: str) -> list[Case]:
    cases = []
    for side, f in SIDES.items():
        first = "record [0]" if task == "entities" else "record 1"
        cases += [
            Case(f"{side}: JSON array", as_json(side), Ok()),
            Case(f"{side}: JSON array, a record names a key twice", as_json(side, repeat_first_id), Bad(f, first, "'id'", "more than once")),
        ]
        if task in WRAPPED:
            cases += [
                Case(f"{side}: records object", as_json(side, layout="wrapped"), Ok()),
                Case(f"{side}: records object, a record names a key twice", as_json(side, repeat_first_id, layout="wrapped"),
                     Bad(f, first, "'id'", "more than once")),
            ]
    return cases


CASES = [(task, c) for task in SPECS for c in _cases(task)]


@pytest.mark.parametrize("task,case", CASES, ids=[f"{t}:{c.id}" for t, c in CASES])
def test_json_file(cli, tmp_path: Path, task: str, case: Case) -> None:
    run_case(cli, SPECS[task], case, tmp_path)


def _json_matched(n: int) -> Callable[[dict], None]:
    def check(doc: dict) -> None:
        assert doc["models"]["m"]["records_matched"] == n, doc["models"]["m"]

    return check


# the `json` task also reads an object mapping id → record; `entities` an object id → entity list
BY_ID = [
    (test_json.SPEC, Case("json: object by id", as_json("truth", layout="by id"), Ok())),
    (test_json.SPEC, Case("json: object by id, a record names a key twice",
                          as_json("truth", lambda t: t.replace('"name": "Ada Lovelace"', '"name": "Ada Lovelace", "name": "Bob"', 1), layout="by id"),
                          Bad("{truth}", "record 'R1'", "'name'", "more than once"))),
    (test_json.SPEC, Case("json: object by id, an id named twice",
                          as_json("truth", lambda t: t.replace('"R2": {', '"R1": {"name": "Bob"}, "R2": {', 1), layout="by id"),
                          Bad("{truth}", "'R1'", "more than once"))),
    (test_json.SPEC, Case("json: a key repeated inside a prediction keeps the last",
                          as_json("pred", lambda t: t.replace('"name": "Ada Lovelace"', '"name": "Bob", "name": "Ada Lovelace"', 1)),
                          Ok())),
]


def _entities_by_id(side: str, edit: Callable[[str], str] | None = None) -> Callable[[Files], None]:
    def m(f: Files) -> None:
        text = json.dumps({r["id"]: r["entities"] for r in getattr(f, side)})
        f.set_raw(side, edit(text) if edit else text)
        f.suffix[side] = ".json"

    return m


BY_ID += [
    (test_entities.SPEC, Case("entities: object by id", _entities_by_id("pred"), Ok())),
    (test_entities.SPEC, Case("entities: object by id, an id named twice",
                              _entities_by_id("pred", lambda t: t.replace('"INV-2": [', '"INV-1": [], "INV-2": [', 1)),
                              Bad("{pred}", "'INV-1'", "more than once"))),
]


@pytest.mark.parametrize("spec,case", BY_ID, ids=[c.id for _, c in BY_ID])
def test_json_object_by_id(cli, tmp_path: Path, spec: TaskSpec, case: Case) -> None:
    run_case(cli, spec, case, tmp_path)
