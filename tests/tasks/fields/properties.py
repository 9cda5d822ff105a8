"""The `fields` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

from tests.contract.properties import Truth, Pred, PropertyCase, _renormalised, _ids, _frame

# ---------------------------------------------------------------------------------------------
# fields: truth/pred = id → {field: value}

FIELD_VALUES = ["A", "B", "c", "Not Present", "", "2024-01-01", "January 1, 2024", "1,000", "1000", None]
FIELDS = ["f0", "f1", "f2"]


@st.composite
def _fields_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 10))
    cell = st.sampled_from(FIELD_VALUES)
    row = st.fixed_dictionaries({f: cell for f in FIELDS})
    ids = _ids(n)
    truth = dict(zip(ids, draw(st.lists(row, min_size=n, max_size=n))))
    # mostly right: a copy of the truth cell or a random one
    pred = {i: {f: (truth[i][f] if draw(st.booleans()) else draw(cell)) for f in FIELDS} for i in ids}
    return truth, pred


def _score_fields(truth: Truth, pred: Pred) -> Any:
    return score_fields(_frame(truth, FIELDS), [ModelPredictions(name="m", values=_frame(pred, FIELDS))],
                        config=FieldsConfig(bootstrap=0)).models["m"]


def _fields_bounded(m: Any) -> dict[str, float]:
    out = {f"overall.{k}": v for k, v in m.overall.items()} | {f"micro.{k}": v for k, v in m.micro.items()}
    for f, fm in m.fields.items():
        out |= {f"{f}.{k}": getattr(fm, k) for k in ("precision", "recall", "f1", "accuracy", "exact_match_rate")}
    return out


PROPERTIES = PropertyCase(
    name="fields",
    records=_fields_records(),
    score=_score_fields,
    ledger=lambda m: {f: fm.counts for f, fm in m.fields.items()},
    bounded=_fields_bounded,
    prf=lambda m: {f: (fm.precision, fm.recall, fm.f1) for f, fm in m.fields.items()}
    | {"micro": (m.micro["precision"], m.micro["recall"], m.micro["f1"])},
    perfect=lambda t: {i: dict(row) for i, row in t.items()},
    # every field, even one null everywhere (all true negatives score 1.0)
    perfect_metrics=lambda m, t: {f"{f}.{k}": getattr(fm, k) for f, fm in m.fields.items() for k in ("precision", "recall", "f1", "accuracy", "exact_match_rate")}
    | {"overall.f1": m.overall["f1"]},
    empties=(lambda t: {i: {f: None for f in FIELDS} for i in t},),
    # recall of a field: truth values extracted right / truth values (support: tp + fn)
    recall=lambda m: {f"{f}.recall": (fm.recall, fm.counts.tp + fm.counts.fn) for f, fm in m.fields.items()}
    | {"micro.recall": (m.micro["recall"], m.totals.tp + m.totals.fn)},
    found=lambda m: m.totals.tp,
    canonical=lambda m: m.to_dict(),
    normalise=lambda p: {i: {f: _renormalised(v) for f, v in row.items()} for i, row in p.items()},
)


