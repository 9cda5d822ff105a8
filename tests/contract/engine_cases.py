"""One small example per task, as `score <task>` / `evaluate <task>` arguments, for the tests that
run every engine over the task registry: each task's `score_args` (tests/tasks/<task>/cases.py).
A task added to the registry without its cases fails those tests."""

from __future__ import annotations

from tests.contract.cases import task_cases

__all__ = ["TASK_ARGS"]

TASK_ARGS: dict[str, list[str]] = {task: list(case.score_args) for task, case in task_cases().items()}
