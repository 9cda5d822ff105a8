"""The `records` task as an `mlflow.genai` scorer: one row's feedback (`correct`, `records`;
afterwards `records/accuracy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import Columns, Row, RowSpec, model_of


def _row(scored: Any, m: Mapping[str, float]) -> Row:
    r = model_of(scored)
    return {"correct": r.correct == r.records, "records": r.records}


def _rationale(scored: Any) -> str:
    r = model_of(scored)
    wrong = [f for f, a in r.fields.items() if a < 1.0]
    return "every field is right" if not wrong else f"wrong or missing: {', '.join(wrong)}"


def _aggregate(col: Columns, zd: float) -> dict[str, float]:
    from tests.tasks.records.metrics import count_metrics

    counts = {"correct": float(col["correct"].sum()), "records": float(col["records"].sum())}
    return {**{k: float(v) for k, v in count_metrics(counts, which=("records/accuracy",), zero_division=zd).items()}, **{f"records/{k}": v for k, v in counts.items()}}


ROWS = RowSpec(_row, _rationale, ("correct", "records"), _aggregate)
