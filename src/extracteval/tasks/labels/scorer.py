"""The `labels` task as an `mlflow.genai` scorer: one row's feedback (`accuracy`, `row_correct`, `correct`, `cells`; afterwards `labels/micro_accuracy`, `labels/row_accuracy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.core.feature_views import LabelLayout
from extracteval.mlflow.genai_rows import RowSpec, Row, Columns, rate, model_of, cell_counts, feature_verdicts, pooled_counts
from extracteval.tasks.labels.metrics import labels_metrics


def _labels_row(scored: Any, m: Mapping[str, float]) -> Row:
    v = model_of(scored).strict
    correct, cells = cell_counts(v)
    return {"accuracy": rate(correct, cells, 0.0), "row_correct": v.rows > 0 and v.correct_rows == v.rows, "correct": correct, "cells": cells}


def _labels_aggregate(col: Columns, zd: float) -> dict[str, float]:
    correct, cells, rows = float(col["correct"].sum()), float(col["cells"].sum()), len(col["correct"])
    ok = float(col["row_correct"].sum())
    got = labels_metrics(pooled_counts(correct, cells, ok, rows), LabelLayout.pooled(), which=("labels/micro_accuracy", "labels/row_accuracy"), zero_division=zd)
    return {**{k: float(v) for k, v in got.items()},
            "labels/rows": float(rows), "labels/correct_rows": ok, "labels/correct": correct, "labels/cells": cells}


ROWS = RowSpec(_labels_row, lambda s: feature_verdicts(model_of(s).strict), ("correct", "cells", "row_correct"), _labels_aggregate)
