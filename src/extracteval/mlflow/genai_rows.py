"""The per-row pieces of the `mlflow.genai` scorers, shared by the tasks' `scorer` modules: the
row spec each task declares, and the small helpers its row functions use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RowSpec", "Row", "Columns", "rate", "model_of", "cell_counts", "pooled_counts", "feature_verdicts"]

Row = dict[str, Any]  # feedback suffix → value (float, int or bool)
Columns = Mapping[str, np.ndarray]  # feedback suffix → per-row values (float)


@dataclass(frozen=True)
class RowSpec:
    """How one task's one-record evaluation becomes feedback, and the rows' feedback run metrics.

    `row(scored, metrics)` → feedback values, first the primary one (carries the rationale);
    `rationale(scored)` → that row's verdict in words; `columns` → the feedback `aggregate`
    needs; `aggregate(columns, zero_division)` → run metrics (without the `<name>/` prefix).
    """

    row: Callable[[Any, Mapping[str, float]], Row]
    rationale: Callable[[Any], str]
    columns: tuple[str, ...]
    aggregate: Callable[[Columns, float], dict[str, float]]


def rate(a: float, b: float, zd: float) -> float:
    return float(a / b) if b else float(zd)


def model_of(scored: Any) -> Any:
    return scored.result.models["output"]


def cell_counts(view: Any) -> tuple[int, int]:
    """(correct, cells) of a view: feature values right / feature values compared."""
    return sum(int(f.correct) for f in view.features.values()), sum(int(f.rows) for f in view.features.values())


def pooled_counts(correct: float, cells: float, correct_rows: float, rows: float) -> dict[str, Any]:
    """The rows' summed cell counts as the counts of one view of a single pooled feature
    (`LabelLayout.pooled()`), for the task's map: its `micro_accuracy` is correct / cells, which is
    the mean over features of each feature's accuracy since a view's features share its rows."""
    return {"tp": [correct], "fp": [0.0], "fn": [0.0], "rows": [cells], "correct_rows": correct_rows, "view_rows": rows}


def feature_verdicts(view: Any) -> str:
    return "; ".join(f"{f}: {'correct' if fm.correct == fm.rows else 'wrong'}" for f, fm in view.features.items())
