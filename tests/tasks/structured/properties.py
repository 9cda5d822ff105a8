"""The `structured` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.structured.semantics import score_structured

from tests.contract.properties import Truth, Pred, PropertyCase, _ids

# ---------------------------------------------------------------------------------------------
# structured: truth = id → JSON value, pred = id → raw model output (text)

SLEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "y", "Paris"]))
SDOC = st.recursive(SLEAF, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), c, max_size=3)), max_leaves=6)
SOBJ = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), SDOC, max_size=4)


@st.composite
def _structured_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 6))
    ids = _ids(n)
    truth = {i: draw(SOBJ) for i in ids}
    pred: Pred = {}
    for i in ids:
        kind = draw(st.integers(0, 7))
        if kind == 0:
            continue  # no output: an invalid record
        obj = truth[i] if kind < 3 else draw(SOBJ)
        text = json.dumps(obj)
        pred[i] = {3: text[: len(text) // 2], 4: f"```json\n{text}\n```", 5: f"Here it is: {text}"}.get(kind, text)
    return truth, pred


def _score_structured(truth: Truth, pred: Pred) -> Any:
    return score_structured(truth, {"m": pred}).models["m"]


def _structured_perfect(m: Any, truth: Truth) -> dict[str, float]:
    # json_extracted_rate is a diagnostic (outputs whose JSON had to be dug out of prose), 0 here
    out = {k: m.metrics[k] for k in ("json_valid_rate", "strict_json_valid_rate", "exact_match_rate")}
    if m.counts.tp + m.counts.fn:  # P/R/F1 are defined only when the truth has leaves
        out |= {k: m.metrics[k] for k in ("field_precision", "field_recall", "field_f1")}
    return out


PROPERTIES = PropertyCase(
    name="structured",
    records=_structured_records(),
    score=_score_structured,
    ledger=lambda m: m.counts,
    bounded=lambda m: dict(m.metrics),
    prf=lambda m: {"field": (m.metrics["field_precision"], m.metrics["field_recall"], m.metrics["field_f1"])},
    perfect=lambda t: {i: json.dumps(v) for i, v in t.items()},
    perfect_metrics=_structured_perfect,
    empties=(lambda t: {i: "" for i in t}, lambda t: {i: "{}" for i in t}, lambda t: {}),
    # recall: reference leaves reproduced / reference leaves
    recall=lambda m: {"field_recall": (m.metrics["field_recall"], m.counts.tp + m.counts.fn)},
    found=lambda m: m.counts.tp,
    canonical=lambda m: m.to_dict(),
)


