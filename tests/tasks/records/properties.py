"""The `records` task's row of the properties every task must have (tests/contract/test_properties.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extracteval.io.wide_tables import ModelPredictions

from tests.contract.properties import Pred, PropertyCase, Truth, _frame, _ids
from tests.tasks.records.semantics import RecordsConfig, score_records

VALUES = ["A", "B", "a", " A ", "1", "1.0"]  # never absent: a record always has something to get right
FIELDS = ["f0", "f1"]


@st.composite
def _records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 10))
    cell = st.sampled_from(VALUES)
    ids = _ids(n)
    truth = {i: {f: draw(cell) for f in FIELDS} for i in ids}
    pred = {i: {f: (truth[i][f] if draw(st.booleans()) else draw(cell)) for f in FIELDS} for i in ids if draw(st.integers(0, 5))}
    pred.update({f"x{i}": {f: draw(cell) for f in FIELDS} for i in range(draw(st.integers(0, 2)))})  # records the truth lacks
    return truth, pred


def _score(truth: Truth, pred: Pred) -> Any:
    return score_records(_frame(truth, FIELDS), [ModelPredictions(name="m", values=_frame(pred, FIELDS))], RecordsConfig()).models["m"]


def _counts(m: Any) -> dict[str, Any]:
    return {"records": m.records, "correct": m.correct, "missing": m.missing, "extra": m.extra,
            "fields": {f: round(a * m.records) for f, a in m.fields.items()}}


PROPERTIES = PropertyCase(
    name="records",
    records=_records(),
    score=_score,
    ledger=_counts,
    bounded=lambda m: {"accuracy": m.accuracy, **{f"field.{f}": a for f, a in m.fields.items()}},
    prf=lambda m: {},
    perfect=lambda t: {i: dict(v) for i, v in t.items()},
    perfect_metrics=lambda m, t: {"accuracy": m.accuracy, **m.fields},
    empties=(lambda t: {}, lambda t: {i: {} for i in t}),
    recall=lambda m: {"accuracy": (m.accuracy, m.records)},
    found=lambda m: m.correct,
    canonical=lambda m: m.to_dict(),
)
