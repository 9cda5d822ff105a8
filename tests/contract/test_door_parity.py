"""Every way into scoring gives the same result for the same inputs.

A user can score a task three ways: the command line (`extracteval score <task> ... --json`),
the Python API with file paths (`extracteval.score(task, "truth.csv", {"model": "pred.csv"})`)
and the Python API with the same files already in memory — read as a user reads them, with
`pd.read_csv` / `pd.read_json(lines=True)` into DataFrames, or into lists of dicts (`csv.DictReader`
rows, one `json.loads` per JSONL line). All three must give identical numbers and the same
document, and an input the command line refuses must be refused by the API too. (A DataFrame read
from JSON lines holds NaN for both a null and an absent key; it is compared with the command line
on the frame written back as JSON lines, which is how the API reads a DataFrame of records.)

For every task of the registry, the task's example under `experiments/` (its first model) is
scored as it is and with edge cases built from it: a prediction for an id outside the truth, a
truth record without prediction, `error` / `pending` records (tasks whose predictions carry a
status), an empty prediction, a null prediction and a record holding only its id (JSONL), and a
JSON-list cell in a CSV (a multi-valued cell). The command line's `--json` document is the
reference; `test_same_numbers` compares the per-model results (and the ranking) exactly,
`test_same_document` the rest of the document. Keys that name where the inputs came from (a file
path on one side, "predictions of model …" on the other) and the warnings' wording are left out
of both comparisons (`_without_source_names`).
"""

from __future__ import annotations

import csv
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import extracteval
from extracteval.errors import InputError
from extracteval.mlflow.adapters import get_adapter
from extracteval.report.console import json_default
from extracteval.tasks import TASKS
from tests.conftest import run_cli
from tests.contract.test_evaluator_parity import CASES, _models, _spec
from tests.mlflow.test_python_api import _config

# task → its example (the key of CASES: a folder of experiments/, or folder/track)
EXAMPLE = {task: name for name, (task, *_rest) in CASES.items()}
# experiment.yaml keys that are not scoring options
# the experiment's keys that are not the task's scoring options (the slicing keys: these doors are compared on the task's numbers)
NOT_OPTIONS = {"name", "task", "description", "truth", "predictions", "tracks", "decision", "metadata", "metadata_id", "slice_by", "slice_bins",
               "slice_min_size", "cluster_by"}
EXTRA_ID = "zz-extra"
DOORS = ("api-files", "api-dataframe", "api-dicts")


# ---------------------------------------------------------------- the example of each task


@dataclass(frozen=True)
class Example:
    task: str
    folder: Path
    truth: Path
    model: str
    predictions: Path
    cli_options: tuple[str, ...]  # the experiment's options as `extracteval score` flags
    config: dict[str, Any]  # the same options as `extracteval.score` keyword arguments

    @property
    def is_csv(self) -> bool:
        return self.predictions.suffix == ".csv"


@functools.cache
def _example(task: str) -> Example:
    name = EXAMPLE[task]
    folder, spec = _spec(name)
    model = _models(name)[0]
    options: list[str] = []
    for key, value in spec.items():
        if key in NOT_OPTIONS or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            options.append(flag)
        elif (folder / str(value)).is_file():  # strategies / weights / config files
            options += [flag, str(folder / str(value))]
        else:
            options += [flag, str(value)]
    return Example(task=task, folder=folder, truth=folder / spec["truth"], model=model,
                   predictions=folder / spec["predictions"][model], cli_options=tuple(options), config=_config(name))


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of a CSV (text cells, as written) or JSONL file, and the CSV's header."""
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            return list(reader), list(reader.fieldnames or [])
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()], []


def _write_rows(path: Path, rows: list[dict[str, Any]], header: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _value_key(rows: list[dict[str, Any]]) -> str:
    """The key holding a JSONL prediction record's value (`pred`, `entities`, `output`,
    `prediction`…): its only key besides the id and the optional safety score."""
    keys = [k for k in rows[0] if k not in ("id", "safety_score")]
    assert len(keys) == 1, keys
    return keys[0]


# ---------------------------------------------------------------- edge cases built from the example

Rows = list[dict[str, Any]]  # the prediction file's records (CSV: text cells as written)


def _extra_id(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    return [*rows, {**rows[0], "id": EXTRA_ID}], header


def _missing_record(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    return rows[1:], header


def _error_and_pending(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    statuses = ["error", "pending"]
    out = []
    for i, r in enumerate(rows):
        old = r.get("status") or "ok"
        out.append({**r, "status": statuses[i] if i < len(statuses) else old})
    return out, (header if not ex.is_csv or "status" in header else [*header, "status"])


def _empty(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    """CSV: every value cell of the first record blank; JSONL: its value an empty string / list /
    object (whichever its type is)."""
    first = dict(rows[0])
    if ex.is_csv:
        first.update({k: "" for k in first if k not in ("id", "status")})
    else:
        key = _value_key(rows)
        first[key] = type(first[key])()
    return [first, *rows[1:]], header


def _null(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    return [{**rows[0], _value_key(rows): None}, *rows[1:]], header


def _id_only(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    return [{"id": rows[0]["id"]}, *rows[1:]], header


def _list_cell(rows: Rows, header: list[str], ex: Example) -> tuple[Rows, list[str]]:
    """The first single-valued field of the first record holds a JSON list of two values."""
    first = dict(rows[0])
    key = next(k for k in header if k not in ("id", "status") and not first[k].startswith("["))
    first[key] = json.dumps([first[key], "Other"])
    return [first, *rows[1:]], header


def _has_status(ex: Example) -> bool:
    return "status_column" in get_adapter(ex.task).config_keys  # the tasks whose predictions carry a status


Build = Callable[[Rows, list[str], Example], tuple[Rows, list[str]]]
# variant → (does it apply to the task's example, how its predictions are made from the example's)
VARIANTS: dict[str, tuple[Callable[[Example], bool], Build | None]] = {
    "example": (lambda ex: True, None),
    "extra-id": (lambda ex: True, _extra_id),
    "missing-record": (lambda ex: True, _missing_record),
    "error-and-pending": (_has_status, _error_and_pending),
    "empty": (lambda ex: True, _empty),
    "null": (lambda ex: not ex.is_csv, _null),
    "id-only": (lambda ex: not ex.is_csv, _id_only),
    "list-cell": (lambda ex: ex.is_csv, _list_cell),
}


def _cases() -> list[Any]:
    out = []
    for task in TASKS:
        if task not in EXAMPLE:
            continue  # test_every_task_has_an_example fails instead
        ex = _example(task)
        for variant, (applies, _build) in VARIANTS.items():
            if applies(ex):
                out += [pytest.param(task, variant, door, id=f"{task}-{variant}-{door}") for door in DOORS]
    return out


# ---------------------------------------------------------------- scoring through each door


@dataclass(frozen=True)
class Outcome:
    doc: dict[str, Any] | None  # the result document, as JSON gives it back
    refusal: str | None = None  # the message of a refused input

    def describe(self) -> str:
        return f"refused: {self.refusal}" if self.refusal is not None else "scored"


def _as_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as the command line prints it (numpy scalars as numbers, tuples as lists)."""
    return json.loads(json.dumps(doc, default=json_default))


def _by_cli(ex: Example, predictions: Path) -> Outcome:
    r = run_cli("score", ex.task, "--truth", str(ex.truth), "--predictions", f"{ex.model}={predictions}", *ex.cli_options, "--json")
    if r.code == 2:
        return Outcome(None, r.err.strip())
    assert r.code == 0, f"the command line failed (exit code {r.code}):\n{r.err}"
    return Outcome(r.json())


def _user_read(path: Path, how: str) -> Any:
    """The file as a user reads it into memory."""
    if how == "api-dataframe":
        return pd.read_csv(path) if path.suffix == ".csv" else pd.read_json(path, lines=True)
    return _read_rows(path)[0]


def _by_api(ex: Example, predictions: Path, door: str) -> Outcome:
    if door == "api-files":
        truth, given = str(ex.truth), str(predictions)
    else:
        truth, given = _user_read(ex.truth, door), _user_read(predictions, door)
    try:
        result = extracteval.score(ex.task, truth, {ex.model: given}, **ex.config)
    except InputError as e:
        return Outcome(None, str(e))
    return Outcome(_as_json(result.to_dict()))


class Outcomes:
    """Inputs written and scored once per module: the command line once per (task, variant),
    each door once per (task, variant, door)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inputs: dict[tuple[str, str], tuple[Example, Path]] = {}
        self.cli: dict[tuple[str, str, str], Outcome] = {}
        self.api: dict[tuple[str, str, str], Outcome] = {}

    def _inputs(self, task: str, variant: str) -> tuple[Example, Path]:
        if (task, variant) not in self.inputs:
            ex = _example(task)
            build = VARIANTS[variant][1]
            path = ex.predictions
            if build is not None:
                rows, header = _read_rows(ex.predictions)
                rows, header = build(rows, header, ex)
                path = self.root / task / variant / ex.predictions.name
                _write_rows(path, rows, header)
            self.inputs[task, variant] = (ex, path)
        return self.inputs[task, variant]

    def get(self, task: str, variant: str, door: str) -> tuple[Outcome, Outcome]:
        ex, path = self._inputs(task, variant)
        ref = _reference_file(ex, path, door, self.root / task / variant / door)
        if (task, variant, str(ref)) not in self.cli:
            self.cli[task, variant, str(ref)] = _by_cli(ex, ref)
        if (task, variant, door) not in self.api:
            self.api[task, variant, door] = _by_api(ex, path, door)
        return self.cli[task, variant, str(ref)], self.api[task, variant, door]


def _reference_file(ex: Example, path: Path, door: str, folder: Path) -> Path:
    """The file the command line scores as the reference of a door. A DataFrame read from JSON
    lines cannot tell a null from an absent key (both are NaN), so its reference is the frame
    written back as JSON lines (what the API promises: a DataFrame reads as its rows written as
    JSON lines). Every other door's reference is the file itself."""
    if door != "api-dataframe" or ex.is_csv:
        return path
    out = folder / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    _user_read(path, door).to_json(out, orient="records", lines=True, force_ascii=False)
    return out


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    return Outcomes(tmp_path_factory.mktemp("doors"))


# ---------------------------------------------------------------- comparing documents


def _without_source_names(doc: dict[str, Any], model: str) -> dict[str, Any]:
    """The document without what names where the inputs came from, which legitimately differs
    between doors (a file path from the command line, "truth" / "predictions of model 'm'" for
    data passed in memory):
    - `inputs`: the truth and prediction sources (the spans task's command line has none);
    - `models.<model>.source`: the same prediction source, repeated in the model's entry;
    - `warnings`: free text that quotes those sources (what is warned about is the task's own
      wording, not a number).
    """
    doc = {k: v for k, v in doc.items() if k not in ("inputs", "warnings")}
    models = doc.get("models")
    if isinstance(models, dict) and isinstance(models.get(model), dict):
        doc["models"] = {**models, model: {k: v for k, v in models[model].items() if k != "source"}}
    return doc


def _without_examples(doc: Any) -> Any:
    """The document without its quoted example cells (`examples`). `pd.read_csv` turns some
    text of a CSV into NaN ('N/A', '', 'null'…): the DataFrame no longer holds the text the file
    holds, so a quoted cell shows None where the command line shows the file's text. Every count
    and metric is still compared."""
    if isinstance(doc, dict):
        return {k: _without_examples(v) for k, v in doc.items() if k != "examples"}
    if isinstance(doc, list):
        return [_without_examples(v) for v in doc]
    return doc


ABSENT = "<absent>"


def _differences(cli: Any, api: Any, path: str = "") -> dict[str, tuple[Any, Any]]:
    """path → (command line's value, API's value) for every leaf that differs; NaN equals NaN,
    numbers compare exactly (1 == 1.0)."""
    if isinstance(cli, dict) and isinstance(api, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for k in [*cli, *(k for k in api if k not in cli)]:
            out.update(_differences(cli.get(k, ABSENT), api.get(k, ABSENT), f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(cli, list) and isinstance(api, list) and len(cli) == len(api):
        out = {}
        for i, (a, b) in enumerate(zip(cli, api)):
            out.update(_differences(a, b, f"{path}[{i}]"))
        return out
    if isinstance(cli, float) and isinstance(api, float) and math.isnan(cli) and math.isnan(api):
        return {}
    if isinstance(cli, bool) != isinstance(api, bool) or cli != api:  # True == 1 in Python, not in a document
        return {path: (cli, api)}
    return {}


def _report(diff: dict[str, tuple[Any, Any]], limit: int = 40) -> str:
    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 160 else text[:157] + "..."

    lines = [f"  {p}: command line {short(a)} | API {short(b)}" for p, (a, b) in list(diff.items())[:limit]]
    if len(diff) > limit:
        lines.append(f"  … and {len(diff) - limit} more")
    return "\n".join(lines)


def _both_scored(cli: Outcome, api: Outcome) -> bool:
    """False when both refused the input; a failure when only one did."""
    if cli.refusal is None and api.refusal is None:
        return True
    if cli.refusal is not None and api.refusal is not None:
        return False
    pytest.fail(f"one door refuses the input, the other scores it:\n  command line: {cli.describe()}\n  API: {api.describe()}")


# ---------------------------------------------------------------- the tests


def test_every_task_has_an_example() -> None:
    """A task added to the registry is covered here once its example is in the CASES table."""
    assert sorted(set(TASKS) - set(EXAMPLE)) == []


@pytest.mark.parametrize("task,variant,door", _cases())
def test_same_numbers(outcomes: Outcomes, task: str, variant: str, door: str) -> None:
    """Both refuse the input, or both score it with identical per-model results and ranking."""
    cli, api = outcomes.get(task, variant, door)
    if not _both_scored(cli, api):
        return
    model = _example(task).model
    want, got = (_without_source_names(o.doc, model) for o in (cli, api))
    if door == "api-dataframe" and _example(task).is_csv:
        want, got = _without_examples(want), _without_examples(got)
    diff = _differences({k: want.get(k, ABSENT) for k in ("models", "ranking")},
                        {k: got.get(k, ABSENT) for k in ("models", "ranking")})
    if diff:
        pytest.fail(f"{len(diff)} value(s) differ from the command line's:\n{_report(diff)}")


@pytest.mark.parametrize("task,variant,door", _cases())
def test_same_document(outcomes: Outcomes, task: str, variant: str, door: str) -> None:
    """The rest of the document (record counts, configuration, winners, checks…) is the same."""
    cli, api = outcomes.get(task, variant, door)
    if (cli.refusal is None) != (api.refusal is None):
        pytest.skip("one door refuses the input: test_same_numbers reports it")
    if cli.refusal is not None:
        return
    model = _example(task).model
    want, got = (_without_source_names(o.doc, model) for o in (cli, api))
    rest = lambda d: {k: v for k, v in d.items() if k not in ("models", "ranking")}  # noqa: E731
    diff = _differences(rest(want), rest(got))
    if diff:
        pytest.fail(f"{len(diff)} value(s) differ from the command line's:\n{_report(diff)}")
