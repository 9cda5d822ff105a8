"""The `json` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import strategies as st

from extracteval.tasks.json.semantics import BUCKETS, JsonConfig, JsonPredictions, RQSWeights, score_json

from tests.contract.properties import Truth, Pred, PropertyCase, _shuffled, _ids

# ---------------------------------------------------------------------------------------------
# json: truth/pred = id → JSON object

JKEYS = st.sampled_from(["name", "email", "age", "city", "notes", "tags"])
JSCALARS = st.one_of(
    st.none(), st.just(""), st.just("N/A"), st.integers(-3, 3), st.booleans(),
    st.sampled_from(["Paris", "paris ", "Berlin", "2024-01-05", "January 5, 2024", "a@b.co", "Acme Corp"]),
)
JVALUES = st.recursive(JSCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(JKEYS, inner, max_size=3)), max_leaves=5)
JOBJECTS = st.dictionaries(JKEYS, JVALUES, max_size=5)


class Halfway:
    """A deterministic similarity backend for SEMANTIC keys (no model in the property loop)."""

    name = "halfway"

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        return np.array([1.0 if x == y else (0.9 if x[:3] == y[:3] else 0.1) for x, y in zip(a, b)])


@st.composite
def _json_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 8))
    ids = _ids(n)
    truth = {i: draw(JOBJECTS) for i in ids}
    pred: Pred = {}
    for i in ids:
        kind = draw(st.integers(0, 9))
        if kind == 0:
            continue  # no prediction for this record
        if kind == 1:
            pred[i] = draw(st.sampled_from([None, "not an object", [1]]))  # invalid: scored as empty
        else:
            pred[i] = {**{k: v for k, v in truth[i].items() if draw(st.booleans())}, **draw(JOBJECTS)}
    return truth, pred


def _score_json(truth: Truth, pred: Pred) -> Any:
    return score_json(truth, [JsonPredictions(name="m", records=pred)], config=JsonConfig(), similarity=Halfway()).models["m"]


def _json_bounded(m: Any) -> dict[str, float]:
    out = {k: getattr(m, k) for k in ("completeness", "hallucination", "accuracy", "safety")}
    out |= {f"rqs.{k}": v for k, v in m.rqs.items()}
    for f, fa in m.fields.items():
        out |= {f"{f}.{k}": v for k, v in (("accuracy", fa.accuracy), ("completeness", fa.completeness)) if v is not None}
    for r in m.records():
        out |= {f"{r.record_id}.{k}": getattr(r, k) for k in ("completeness", "hallucination", "accuracy", "rqs")}
    return out


def _json_recall(m: Any) -> dict[str, tuple[float, int]]:
    # Recall of the json task is completeness: truth keys with a value that the prediction also
    # has / truth keys with a value — per record, per field and (through the buckets) in total.
    # Accuracy is not recall-like: it is taken over keys present on both sides, so with nothing
    # predicted nothing is scored and it is 1.0 by convention (`found` checks scored = 0).
    out = {f"{f}.completeness": (fa.completeness, fa.counts["gt_non_null"]) for f, fa in m.fields.items() if fa.completeness is not None}
    out |= {f"{r.record_id}.completeness": (r.completeness, len(r.buckets["gt_non_null"])) for r in m.records()}
    g = m.buckets["gt_non_null"]
    out["buckets.completeness"] = (m.buckets["both_non_null"] / g if g else 1.0, g)
    return out


def _json_perfect(m: Any, truth: Truth) -> dict[str, float]:
    w = RQSWeights()
    best = w.accuracy + w.completeness + w.safety  # hallucination only subtracts
    return {
        "completeness": m.completeness,
        "accuracy": m.accuracy,
        "1 - hallucination": 1.0 - m.hallucination,
        "rqs / best attainable": m.rqs["min"] / best,
    }


PROPERTIES = PropertyCase(
    name="json",
    records=_json_records(),
    score=_score_json,
    ledger=lambda m: {
        "buckets": dict(m.buckets), "scored": m.scored, "matched": m.matched, "ignored": m.ignored,
        "missing_records": m.missing_records, "invalid_predictions": m.invalid_predictions,
        "fields": {f: {**{b: int(fa.counts[b]) for b in BUCKETS}, "scored": fa.scored, "matched": fa.matched} for f, fa in m.fields.items()},
    },
    bounded=_json_bounded,
    prf=lambda m: {},  # the json task reports no P/R/F1 (seed 001: completeness, accuracy, RQS)
    perfect=lambda t: json.loads(json.dumps(t)),
    perfect_metrics=_json_perfect,
    empties=(lambda t: {i: {} for i in t}, lambda t: {i: None for i in t}, lambda t: {}),
    recall=_json_recall,
    found=lambda m: m.buckets["both_non_null"] + m.scored + m.matched,
    canonical=lambda m: m.to_dict(include_records=True),
    shuffle_item=lambda obj, rnd: dict(_shuffled(list(obj.items()), rnd)) if isinstance(obj, dict) else obj,
)


