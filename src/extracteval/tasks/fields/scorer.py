"""The `fields` task as an `mlflow.genai` scorer: one row's feedback (`f1`, `exact`, `tp fp fn tn`; afterwards `micro/precision…accuracy`, `total/tp…`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import RowSpec, Row, Columns


COUNT_FEEDBACK = ("tp", "fp", "fn", "tn")  # the count feedback of a row

def _fields_row(scored: Any, m: Mapping[str, float]) -> Row:
    c = {k: int(m.get(f"totals/{k}", 0)) for k in COUNT_FEEDBACK}
    return {"f1": float(m["micro/f1"]), "exact": c["fp"] == 0 and c["fn"] == 0, **c}


def _fields_rationale(scored: Any) -> str:
    from extracteval.tasks.fields.adapter import ADAPTER

    return ADAPTER.row_rationale(scored, "output")


def _fields_aggregate(col: Columns, zd: float) -> dict[str, float]:
    import numpy as np

    from extracteval.tasks.fields.metrics import fields_metrics

    s = {k: float(col[k].sum()) for k in COUNT_FEEDBACK}
    micro = fields_metrics(np.array([[s[k] for k in COUNT_FEEDBACK]]), which=tuple(f"micro/{k}" for k in ("precision", "recall", "f1", "accuracy")), zero_division=zd)
    return {**{k: float(v) for k, v in micro.items()}, **{f"total/{k}": v for k, v in s.items()}}


ROWS = RowSpec(_fields_row, _fields_rationale, COUNT_FEEDBACK, _fields_aggregate)
