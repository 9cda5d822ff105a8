"""extracteval: score structured-extraction models against ground truth, log to MLflow.

Importing the package is cheap: it imports neither mlflow, scikit-learn nor matplotlib, and the
scoring entry points load pandas only when first used. For notebooks: `extracteval.score(task,
truth, predictions, **config)` scores any task, `extracteval.tasks()` lists them.

Example:
    >>> import extracteval
    >>> extracteval.__version__
    '0.1.0'
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "score": "extracteval.api",
    "ScoreResult": "extracteval.api",
    "score_fields": "extracteval.tasks.fields.semantics",
    "FieldsConfig": "extracteval.tasks.fields.semantics",
    "FieldsResult": "extracteval.tasks.fields.semantics",
    "ModelPredictions": "extracteval.tasks.fields.semantics",
    "Counts": "extracteval.core.counts",
    "InputError": "extracteval.errors",
}

__all__ = ["__version__", "tasks", *_LAZY]


def __getattr__(name: str) -> Any:
    if name == "tasks":  # the task registry, callable: `extracteval.tasks()` lists the tasks
        return import_module("extracteval.tasks")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'extracteval' has no attribute {name!r}")
    return getattr(import_module(module), name)
