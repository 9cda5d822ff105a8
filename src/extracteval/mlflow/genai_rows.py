"""The per-row pieces of the `mlflow.genai` scorers, shared by the tasks' `scorer` modules: the
row spec each task declares, and the small helpers its row functions use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RowSpec", "Row", "Columns", "ratios", "rate", "model_of", "cell_counts", "feature_verdicts"]

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


def ratios(tp: float, fp: float, fn: float, tn: float, zd: float) -> dict[str, float]:
    from extracteval.core.counts import ratios as count_ratios

    return {k: float(v) for k, v in count_ratios(int(tp), int(fp), int(fn), int(tn), zero_division=zd).items()}


def rate(a: float, b: float, zd: float) -> float:
    return float(a / b) if b else float(zd)


def model_of(scored: Any) -> Any:
    return scored.result.models["output"]


def cell_counts(view: Any) -> tuple[int, int]:
    """(correct, cells) of a view: feature values right / feature values compared."""
    return sum(int(f.correct) for f in view.features.values()), sum(int(f.rows) for f in view.features.values())


def feature_verdicts(view: Any) -> str:
    return "; ".join(f"{f}: {'correct' if fm.correct == fm.rows else 'wrong'}" for f, fm in view.features.items())
