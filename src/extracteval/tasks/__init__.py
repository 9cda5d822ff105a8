"""The task registry: the one place that names the tasks.

Each task is one package, `extracteval.tasks.<task>`, holding everything about it: its semantics
(`semantics`), file readers (`inputs`, `chunks`), options (`options`), chunk engine (`chunked`),
Spark glue (`spark`), command-line glue (`command`), MLflow adapter (`adapter`) and report
sections. The engines, the MLflow layer, the leaderboard, `compare` and `rescore` know the tasks
only through `TASKS` below. Adding a task is one folder and one line here. Each task's ranking
declaration (`RANKING` in its `contract` module) is read here too: `RANKING_SPECS`, `ranking_spec`.

Importing this module is cheap: the task packages are imported when first asked for.

`extracteval.tasks` is also what notebooks call to list the tasks: `extracteval.tasks()` returns
each available task's name, MLflow model type and what it scores (`listing()`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from extracteval.core.ranking import RankingSpec

__all__ = ["TaskSpec", "TASKS", "task_module", "present", "parts", "listing", "RANKING_SPECS", "ranking_spec"]


@dataclass(frozen=True)
class TaskSpec:
    """One registered task.

    Attributes:
        task: its name on the command line (`extracteval score <task>`) and in MLflow tags.
        model_type: the MLflow `model_type` the evaluator plugin accepts for it.
        package: the package under `extracteval.tasks` that implements it (defaults to `task`),
            or the dotted name of a package elsewhere (`my_tasks.records`): a task kept outside
            extracteval, registered by the code that uses it (the test suite registers one).
    """

    task: str
    model_type: str
    package: str = ""

    def module(self, part: str) -> str:
        """The dotted name of one of the task's modules (`command`, `adapter`, `spark`, …)."""
        package = self.package or self.task
        return f"{package}.{part}" if "." in package else f"extracteval.tasks.{package}.{part}"


# task name → spec, in the order the command line and the capability matrix list them
TASKS: dict[str, TaskSpec] = {
    s.task: s
    for s in (
        TaskSpec("fields", "extraction-fields"),
        TaskSpec("json", "extraction-json"),
        TaskSpec("spans", "extraction-spans"),
        TaskSpec("entities", "extraction-entities"),
        TaskSpec("labels", "extraction-entities"),
        TaskSpec("structured", "structured-output"),
        TaskSpec("toolcalls", "tool-calling"),
    )
}


def task_module(task: str, part: str) -> ModuleType:
    """Import and return one module of a registered task (`KeyError` for an unknown task)."""
    return import_module(TASKS[task].module(part))


def present(task: str, part: str) -> ModuleType | None:
    """The module `part` of a registered task, or None when this installation lacks it (the
    task's package or that module is absent). The one rule for a missing part: every capability
    asks here, so a task without a part is left out the same way everywhere; any other import
    error is raised."""
    name = TASKS[task].module(part)
    try:
        return import_module(name)
    except ModuleNotFoundError as e:
        if e.name not in (name, name.rpartition(".")[0]):
            raise
        return None


def parts(part: str) -> dict[str, ModuleType]:
    """Task → its module `part`, for every registered task that has it, in registry order."""
    return {t: m for t in TASKS if (m := present(t, part)) is not None}


class _RegisteredRankings(Mapping[str, "RankingSpec"]):
    """Task → its `RankingSpec`, as each registered task declares it (`tasks/<task>/contract.py`),
    read when first used."""

    def __init__(self) -> None:
        self._specs: dict[str, RankingSpec] | None = None

    def _load(self) -> dict[str, RankingSpec]:
        if self._specs is None:
            self._specs = {t: m.RANKING for t, m in parts("contract").items()}
        return self._specs

    def __getitem__(self, task: str) -> RankingSpec:
        return self._load()[task]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


# task → its ranking declaration: the primary metric and tie-breaks wherever its models are ranked
RANKING_SPECS: Mapping[str, RankingSpec] = _RegisteredRankings()


def ranking_spec(task: str) -> RankingSpec:
    """The ranking declaration of `task`; an error listing the tasks that have one."""
    from extracteval.errors import InputError

    spec = RANKING_SPECS.get(task)
    if spec is None:
        raise InputError(f"task {task!r} has no ranking; expected one of {', '.join(sorted(RANKING_SPECS))}.")
    return spec


def listing() -> list[dict[str, str]]:
    """The tasks of this installation: name, MLflow model type and what the task scores (a task
    whose package is absent is left out)."""
    return [{"task": t, "model_type": TASKS[t].model_type, "scores": m.ADAPTER.about} for t, m in parts("adapter").items()]


class _Registry(ModuleType):
    """This module, callable: `extracteval.tasks()` lists the available tasks."""

    def __call__(self) -> list[dict[str, str]]:
        return listing()

    def __reduce__(self) -> tuple[object, tuple[str]]:  # pickled by name, as a plain module is
        return import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Registry
