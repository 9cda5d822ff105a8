"""The `records` task as an `mlflow.genai` scorer: one row's feedback (`correct`, `records`;
afterwards `records/accuracy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import Columns, Row, RowSpec, rate, model_of


def _row(scored: Any, m: Mapping[str, float]) -> Row:
    r = model_of(scored)
    return {"correct": r.correct == r.records, "records": r.records}


def _rationale(scored: Any) -> str:
    r = model_of(scored)
    wrong = [f for f, a in r.fields.items() if a < 1.0]
    return "every field is right" if not wrong else f"wrong or missing: {', '.join(wrong)}"


def _aggregate(col: Columns, zd: float) -> dict[str, float]:
    correct, records = float(col["correct"].sum()), float(col["records"].sum())
    return {"records/accuracy": rate(correct, records, zd), "records/correct": correct, "records/records": records}


ROWS = RowSpec(_row, _rationale, ("correct", "records"), _aggregate)
