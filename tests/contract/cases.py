"""Each task's example cases, for the tests over the registry (this folder).

A task brings its own cases: `tests/tasks/<task>/cases.py` defines `CASE`, a `TaskCase`. The tests
here read them for every task of `extracteval.tasks.TASKS` (`task_cases()`), so a task added to the
registry is tested by every engine and door once its folder holds its cases, and a task without
them fails `test_every_task_brings_its_cases` (tests/contract/test_capabilities.py).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from extracteval.tasks import TASKS

__all__ = ["TaskCase", "Rescore", "task_cases", "example_spec", "models", "first_csv_row", "first_json_line", "set_at"]

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = REPO / "experiments"

Edit = Callable[[Path, Path], None]  # an edit of a truth file: (source, destination)


@dataclass(frozen=True)
class Rescore:
    """`extracteval rescore` of one model run: the example's truth file and one model's predictions
    file (relative to the example's folder: `experiments/<folder>/<track>` for a track), the
    options of `evaluate` (a file of that folder named by its name), and an edit of the truth that
    changes the model's scores."""

    truth: str
    model: str
    predictions: str
    options: Sequence[str]
    edit: Edit


@dataclass(frozen=True)
class TaskCase:
    """What the tests over the registry need of one task.

    Attributes:
        example: the example evaluation: a folder of `experiments/` (`folder` or `folder/track`),
            or a folder path, holding `experiment.yaml` (truth, predictions and the options).
        score_args: `score <task>` / `evaluate <task>` arguments of a small run with two models
            (every engine: in memory, in chunks, with workers, on Spark).
        evaluator_config: the example's options as `mlflow.models.evaluate` evaluator_config keys
            (`config_file`: a YAML file of the example's folder whose keys are added).
        cells: how a user builds a DataFrame's target and prediction cells from the example's
            files: `rows` (one `row.to_dict()` per record, without the id), or (truth column,
            prediction column) holding the record's value.
        rescore: the `rescore` case.
        genai_rows: (truth, output) rows for the `mlflow.genai` scorer (a right row, a partly wrong
            one, a malformed output), and `genai_primary`, the feedback the scorer gives first;
            empty for a task whose scorer is tested on its own.
    """

    example: str | Path
    score_args: Sequence[str]
    evaluator_config: Mapping[str, Any]
    cells: str | tuple[str, str]
    rescore: Rescore
    genai_rows: Sequence[tuple[Any, Any]] = ()
    genai_primary: str = ""


def task_cases() -> dict[str, TaskCase]:
    """Task → its cases, for every registered task whose test folder brings them (registry order)."""
    out: dict[str, TaskCase] = {}
    for task in TASKS:
        try:
            module = import_module(f"tests.tasks.{task}.cases")
        except ModuleNotFoundError as e:
            if e.name not in (f"tests.tasks.{task}", f"tests.tasks.{task}.cases"):
                raise
            continue
        out[task] = module.CASE
    return out


def example_folder(example: str | Path) -> tuple[Path, str]:
    """(the folder holding experiment.yaml, the track or "")."""
    if isinstance(example, Path):
        return example, ""
    folder, _, track = example.partition("/")
    return EXPERIMENTS / folder, track


def example_spec(example: str | Path) -> tuple[Path, dict[str, Any]]:
    """The example's folder and its experiment.yaml (the track's part of it, for `folder/track`)."""
    folder, track = example_folder(example)
    spec = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
    return folder, dict(spec["tracks"][track]) if track else spec


def models(folder: Path, names: Mapping[str, str]) -> list[str]:
    """`--predictions NAME=FILE` arguments, files relative to `folder`."""
    out: list[str] = []
    for name, path in names.items():
        out += ["--predictions", f"{name}={folder / path}"]
    return out


def first_json_line(edit: Callable[[dict[str, Any]], None]) -> Edit:
    """An edit of a JSONL truth: `edit` changes the first record in place."""

    def run(src: Path, dst: Path) -> None:
        lines = src.read_text(encoding="utf-8").splitlines()
        rec = json.loads(lines[0])
        edit(rec)
        dst.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n", encoding="utf-8")

    return run


def first_csv_row(column: str, value: str) -> Edit:
    """An edit of a CSV truth: the first record's `column` becomes `value`."""

    def run(src: Path, dst: Path) -> None:
        rows = list(csv.reader(src.open(encoding="utf-8", newline="")))
        rows[1][rows[0].index(column)] = value
        with dst.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows(rows)

    return run


def set_at(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of one record: the value at `path` (keys and list indexes) becomes `value`."""

    def edit(rec: dict[str, Any]) -> None:
        obj: Any = rec
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value

    return edit
