"""The properties every task must have, written once over a registry of tasks.

In the spirit of scikit-learn's `tests/test_common.py`: each task (`fields`, `json`, `labels`,
`entities`, `spans`, `structured`, `toolcalls`) is one row of `TASKS` — a Hypothesis strategy
for (truth, prediction) pairs keyed by record id, and accessors that read its result — and each
property below is written once and run over every row:

- counts merge: the ledger of a ∪ b is the ledger of a plus the ledger of b (records split in two);
- order independence: shuffling records, and items inside a record where their order has no
  meaning (entities, spans, tool calls), changes nothing in the output;
- bounds: every reported ratio is in [0, 1];
- F1 identity: F1 = 2PR/(P+R) wherever a task reports P, R and F1 of the same counts;
- a perfect prediction scores 1.0 on every metric that is defined for it;
- an empty prediction has recall 0 (what "recall" means per task is in each `recall` accessor);
- idempotence of normalisation: replacing predicted values by their normalised form changes no
  count (tasks that compare values through the shared `Normalizer`).

Each property checks that it is not vacuous (something was compared), so that it can fail.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, score_entities
from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields
from extracteval.tasks.json.semantics import BUCKETS, JsonConfig, JsonPredictions, RQSWeights, score_json
from extracteval.tasks.labels.semantics import MISSING, ModelLabels, score_labels
from extracteval.core.normalize import Normalizer, key_text
from extracteval.tasks.spans.semantics import SpanCorpus, SpansConfig, score_spans, span_counts
from extracteval.tasks.structured.semantics import score_structured
from extracteval.tasks.toolcalls.semantics import score_toolcalls
from tests.tasks.spans.helpers import spanset

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

Truth = dict[str, Any]
Pred = dict[str, Any]


@dataclass(frozen=True)
class TaskCase:
    """One task as the common properties see it. `score(truth, pred)` returns the result of the
    single model `m`; the accessors read that result."""

    name: str
    records: st.SearchStrategy[tuple[Truth, Pred]]
    score: Callable[[Truth, Pred], Any]
    ledger: Callable[[Any], Any]  # mergeable counts: Counts-like objects, or dicts of them
    bounded: Callable[[Any], dict[str, float]]  # every ratio the task reports
    prf: Callable[[Any], dict[str, tuple[float, float, float]]]  # (P, R, F1) of the same counts
    perfect: Callable[[Truth], Pred]
    perfect_metrics: Callable[[Any, Truth], dict[str, float]]  # must all be 1.0
    empties: tuple[Callable[[Truth], Pred], ...]
    recall: Callable[[Any], dict[str, tuple[float, int]]]  # recall-like metric → (value, support)
    found: Callable[[Any], int]  # things found right (true positives): 0 for an empty prediction
    canonical: Callable[[Any], Any]  # the whole output, for order independence
    shuffle_item: Callable[[Any, random.Random], Any] = lambda item, rnd: item
    scorable: Callable[[Truth], bool] = bool  # inputs the task accepts (else an InputError)
    normalise: Callable[[Pred], Pred] | None = None


# ---------------------------------------------------------------------------------------------
# helpers


def _add(a: Any, b: Any) -> Any:
    """Ledger merge: dicts by key (a key on one side only is taken as it is), leaves with `+`."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return {k: _add(a[k], b[k]) if k in a and k in b else (a[k] if k in a else b[k]) for k in a.keys() | b.keys()}
    return a + b


def _plain(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if hasattr(x, "to_dict"):
        return x.to_dict()
    return x


def _shuffled(items: list, rnd: random.Random) -> list:
    return rnd.sample(items, len(items))


_NORM = Normalizer()


def _renormalised(v: Any) -> Any:
    """A value replaced by the text of its canonical key: the same key if normalisation is
    idempotent (None stays None)."""
    k = _NORM.key(v)
    return None if k is None else key_text(k)


def _ids(n: int) -> list[str]:
    return [f"r{i:02d}" for i in range(n)]


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


def _frame(d: Mapping[str, Mapping[str, Any]], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame([[d[i].get(c) for c in columns] for i in d], index=list(d), columns=columns, dtype=object)


def _score_fields(truth: Truth, pred: Pred) -> Any:
    return score_fields(_frame(truth, FIELDS), [ModelPredictions(name="m", values=_frame(pred, FIELDS))],
                        config=FieldsConfig(bootstrap=0)).models["m"]


def _fields_bounded(m: Any) -> dict[str, float]:
    out = {f"overall.{k}": v for k, v in m.overall.items()} | {f"micro.{k}": v for k, v in m.micro.items()}
    for f, fm in m.fields.items():
        out |= {f"{f}.{k}": getattr(fm, k) for k in ("precision", "recall", "f1", "accuracy", "exact_match_rate")}
    return out


FIELDS_TASK = TaskCase(
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


JSON_TASK = TaskCase(
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


# ---------------------------------------------------------------------------------------------
# labels: truth/pred = id → {feature: label}; predictions may miss truth ids and add others

LABELS = ["cat", "dog", "bird", "7", "7.0", None]
FEATURES = ["colour", "size"]


@st.composite
def _labels_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 12))
    label = st.sampled_from(LABELS)
    row = st.fixed_dictionaries({f: label for f in FEATURES})
    ids = _ids(n)
    truth = dict(zip(ids, draw(st.lists(row, min_size=n, max_size=n))))
    pred = {i: {f: (truth[i][f] if draw(st.booleans()) else draw(label)) for f in FEATURES} for i in ids if draw(st.integers(0, 5))}
    for j in range(draw(st.integers(0, 2))):
        pred[f"x{j}"] = draw(row)  # a prediction for a record the truth does not have
    return truth, pred


def _score_labels(truth: Truth, pred: Pred) -> Any:
    return score_labels(_frame(truth, FEATURES), [ModelLabels(name="m", values=_frame(pred, FEATURES))]).models["m"]


def _labels_views(m: Any) -> dict[str, Any]:
    return {"aligned": m.aligned, "strict": m.strict}


def _labels_bounded(m: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for vn, v in _labels_views(m).items():
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": x for k, x in v.totals.items()}
        for f, fm in v.features.items():
            out |= {f"{vn}.{f}.{k}": getattr(fm, k) for k in ("precision", "recall", "f1", "specificity", "micro_accuracy")}
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1", "specificity")}
    return out


def _labels_prf(m: Any) -> dict[str, tuple[float, float, float]]:
    # per label only: a feature's P, R and F1 are macro averages, and a mean of F1s is not the F1
    # of the mean P and R
    return {f"{vn}.{f}.{lab}": (d["precision"], d["recall"], d["f1"])
            for vn, v in _labels_views(m).items() for f, fm in v.features.items() for lab, d in fm.labels.items()}


def _labels_perfect(m: Any, truth: Truth) -> dict[str, float]:
    out: dict[str, float] = {}
    for vn, v in _labels_views(m).items():
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": v.totals[k] for k in ("precision", "recall", "f1", "micro_accuracy")}
        for f, fm in v.features.items():
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1")}
                if d["tn"] + d["fp"]:  # specificity is undefined for a label on every row
                    out[f"{vn}.{f}.{lab}.specificity"] = d["specificity"]
    return out


def _labels_recall(m: Any) -> dict[str, tuple[float, int]]:
    # Recall of a label: rows whose truth is that label and that were predicted with it / rows
    # whose truth is that label, in the strict view (rows without a prediction count). An empty
    # prediction (no row, or every value missing) finds no label; "<MISSING>" is left out, as a
    # prediction of nothing is right about a truth of nothing.
    fms = m.strict.features
    return {f"strict.{f}.{lab}.recall": (d["recall"], d["support"]) for f, fm in fms.items() for lab, d in fm.labels.items() if lab != MISSING}


def _labels_found(m: Any) -> int:
    return sum(d["tp"] for fm in m.strict.features.values() for lab, d in fm.labels.items() if lab != MISSING)


def _labels_scorable(truth: Truth) -> bool:
    # a feature missing in every truth record is refused (nothing to score)
    return bool(truth) and all(any(_NORM.key(r[f]) is not None for r in truth.values()) for f in FEATURES)


LABELS_TASK = TaskCase(
    name="labels",
    records=_labels_records(),
    score=_score_labels,
    ledger=lambda m: {"ledgers": {v: dict(fs) for v, fs in m.ledgers.items()},
                      "rows": {"aligned": m.aligned_rows, "missing": m.missing_rows, "extra": m.extra_rows}},
    bounded=_labels_bounded,
    prf=_labels_prf,
    perfect=lambda t: {i: dict(row) for i, row in t.items()},
    perfect_metrics=_labels_perfect,
    empties=(lambda t: {}, lambda t: {i: {f: None for f in FEATURES} for i in t}),
    recall=_labels_recall,
    found=_labels_found,
    canonical=lambda m: m.to_dict(),
    scorable=_labels_scorable,
    normalise=lambda p: {i: {f: _renormalised(v) for f, v in row.items()} for i, row in p.items()},
)


# ---------------------------------------------------------------------------------------------
# entities: truth/pred = id → list of entity objects

ENTITY = st.fixed_dictionaries({"item": st.sampled_from(["bolt", "nut", "washer", "bolt m8", None]), "qty": st.sampled_from([1, 2, "2", "2.0", 10, None])})
ENTITIES_CFG = EntitiesConfig(features=["item", "qty"], strategies={"item": "FUZZY"})


@st.composite
def _entities_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 6))
    ids = _ids(n)
    truth = {i: draw(st.lists(ENTITY, max_size=4)) for i in ids}
    pred: Pred = {}
    for i in ids:
        if draw(st.integers(0, 5)):
            pred[i] = [e for e in truth[i] if draw(st.booleans())] + draw(st.lists(ENTITY, max_size=2))
    if draw(st.booleans()):
        pred["x0"] = draw(st.lists(ENTITY, max_size=2))
    return truth, pred


def _score_entities(truth: Truth, pred: Pred) -> Any:
    return score_entities(truth, [ModelEntities(name="m", records=pred)], config=ENTITIES_CFG).models["m"]


def _entities_views(m: Any) -> dict[str, Any]:
    return {"matched": m.matched, "strict": m.strict}


def _entities_bounded(m: Any) -> dict[str, float]:
    p = m.presence.to_dict()
    out = {k: p[k] for k in ("precision_entities", "recall_entities", "f1_entities")}
    for vn, v in _entities_views(m).items():
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": x for k, x in v.totals.items()}
        for f, fm in v.features.items():
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1", "specificity")}
    return out


def _entities_prf(m: Any) -> dict[str, tuple[float, float, float]]:
    p = m.presence.to_dict()
    out = {"presence": (p["precision_entities"], p["recall_entities"], p["f1_entities"])}
    for vn, v in _entities_views(m).items():
        out |= {f"{vn}.{f}.{lab}": (d["precision"], d["recall"], d["f1"]) for f, fm in v.features.items() for lab, d in fm.labels.items()}
    return out


def _entities_perfect(m: Any, truth: Truth) -> dict[str, float]:
    out: dict[str, float] = {}
    p = m.presence.to_dict()
    if p["gold_count"]:
        out |= {k: p[k] for k in ("precision_entities", "recall_entities", "f1_entities")}
    for vn, v in _entities_views(m).items():
        if not v.rows:
            continue
        out |= {f"{vn}.row_accuracy": v.row_accuracy} | {f"{vn}.totals.{k}": v.totals[k] for k in ("precision", "recall", "f1", "micro_accuracy")}
        for f, fm in v.features.items():
            for lab, d in fm.labels.items():
                out |= {f"{vn}.{f}.{lab}.{k}": d[k] for k in ("precision", "recall", "f1")}
    return out


def _entities_recall(m: Any) -> dict[str, tuple[float, int]]:
    # Recall of entities: gold entities matched by a predicted one / gold entities; and in the
    # strict view (unmatched gold entities count) the recall of every value of every feature.
    p = m.presence.to_dict()
    out = {"recall_entities": (p["recall_entities"], p["gold_count"])}
    out |= {f"strict.{f}.{lab}.recall": (d["recall"], d["support"]) for f, fm in m.strict.features.items() for lab, d in fm.labels.items()}
    return out


def _entities_scorable(truth: Truth) -> bool:
    # a feature missing in every gold entity is refused (nothing to score)
    ents = [e for v in truth.values() for e in v]
    return all(any(_NORM.key(e[f]) is not None for e in ents) for f in ("item", "qty"))


def _entities_canonical(m: Any) -> Any:
    d = m.to_dict()
    # which of two entities identical on every field is shown as an example may differ
    d.pop("examples")
    return d


ENTITIES_TASK = TaskCase(
    name="entities",
    records=_entities_records(),
    score=_score_entities,
    ledger=lambda m: {"presence": m.presence.counts, "ledgers": {v: dict(fs) for v, fs in m.ledgers.items()},
                      "records": {"missing": m.records_missing_prediction, "not_in_truth": m.records_not_in_truth}},
    bounded=_entities_bounded,
    prf=_entities_prf,
    perfect=lambda t: {i: [dict(e) for e in v] for i, v in t.items()},
    perfect_metrics=_entities_perfect,
    empties=(lambda t: {i: [] for i in t}, lambda t: {}),
    recall=_entities_recall,
    found=lambda m: m.presence.counts.tp,
    canonical=_entities_canonical,
    shuffle_item=lambda ents, rnd: _shuffled(list(ents), rnd),
    scorable=_entities_scorable,
)


# ---------------------------------------------------------------------------------------------
# spans: truth = id → (text, [(start, end, tag)]), pred = id → [(start, end, tag)]

SPAN_TAGS = ["A", "B", "C"]
TEXT_LEN = 30


@st.composite
def _spans(draw: st.DrawFn, max_size: int = 4) -> list[tuple[int, int, str]]:
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        s = draw(st.integers(0, TEXT_LEN - 2))
        out.append((s, draw(st.integers(s + 1, TEXT_LEN)), draw(st.sampled_from(SPAN_TAGS))))
    return out


@st.composite
def _spans_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 4))
    ids = _ids(n)
    truth = {i: (draw(st.text(alphabet="ab ", min_size=TEXT_LEN, max_size=TEXT_LEN)), draw(_spans())) for i in ids}
    pred = {}
    for i in ids:
        # some gold spans copied, some with a boundary slip, plus spurious ones
        kept = [(s, min(TEXT_LEN, e + draw(st.integers(0, 2))), t) for s, e, t in truth[i][1] if draw(st.booleans())]
        pred[i] = kept + draw(_spans(max_size=2))
    return truth, pred


SPANS_CFG = SpansConfig(bootstrap=0)


def _span_corpus(truth: Truth, pred: Pred) -> SpanCorpus:
    ids = list(truth)
    tags = sorted(SPAN_TAGS)
    return SpanCorpus(
        doc_ids=tuple(ids), tags=tuple(tags), unit="char", texts=tuple(truth[i][0] for i in ids),
        gold=spanset([truth[i][1] for i in ids], tags), predictions={"m": spanset([pred.get(i, []) for i in ids], tags)},
    )


@dataclass(frozen=True)
class SpansRun:
    model: Any
    ledger: Any


def _score_spans(truth: Truth, pred: Pred) -> SpansRun:
    corpus = _span_corpus(truth, pred)
    return SpansRun(model=score_spans(corpus, config=SPANS_CFG).models["m"], ledger=span_counts(corpus, "m", config=SPANS_CFG))


def _span_results(r: SpansRun) -> dict[str, Any]:
    return {"exact": r.model.exact, **r.model.relaxed}


def _spans_tag_metrics(r: SpansRun) -> dict[str, Any]:
    out = {}
    for mode, res in _span_results(r).items():
        out[f"{mode}.micro"] = res.micro
        out |= {f"{mode}.{t}": tm for t, tm in res.per_tag.items()}
    out |= {f"curve@{p.threshold}": p for p in r.model.curve}
    return out


def _spans_bounded(r: SpansRun) -> dict[str, float]:
    out = {f"{mode}.macro_f1": res.macro_f1 for mode, res in _span_results(r).items()}
    for name, tm in _spans_tag_metrics(r).items():
        out |= {f"{name}.{k}": getattr(tm, k) for k in ("precision", "recall", "f1")}
    return out


def _spans_perfect(r: SpansRun, truth: Truth) -> dict[str, float]:
    if not any(spans for _, spans in truth.values()):
        return {}  # nothing to find: P/R/F1 are 0/0
    out = {f"{mode}.macro_f1": res.macro_f1 for mode, res in _span_results(r).items()}
    for name, tm in _spans_tag_metrics(r).items():
        out |= {f"{name}.{k}": getattr(tm, k) for k in ("precision", "recall", "f1")}
    return out


def _spans_canonical(r: SpansRun) -> Any:
    d = r.model.to_dict()
    # error examples are the first few in document order (the order of the input file), so a
    # shuffle of documents may show others; their counts and confusions must not change
    d["errors"].pop("examples")
    return d


SPANS_TASK = TaskCase(
    name="spans",
    records=_spans_records(),
    score=_score_spans,
    ledger=lambda r: r.ledger,
    bounded=_spans_bounded,
    prf=lambda r: {name: (tm.precision, tm.recall, tm.f1) for name, tm in _spans_tag_metrics(r).items()},
    perfect=lambda t: {i: list(spans) for i, (_, spans) in t.items()},
    perfect_metrics=_spans_perfect,
    empties=(lambda t: {i: [] for i in t},),
    # recall: gold spans matched / gold spans, exact and relaxed, micro and per tag, every curve point
    recall=lambda r: {f"{name}.recall": (tm.recall, tm.tp + tm.fn) for name, tm in _spans_tag_metrics(r).items()},
    found=lambda r: sum(tm.tp for tm in _spans_tag_metrics(r).values()),
    canonical=_spans_canonical,
    shuffle_item=lambda item, rnd: (item[0], _shuffled(item[1], rnd)) if isinstance(item, tuple) else _shuffled(item, rnd),
)


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


STRUCTURED_TASK = TaskCase(
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


# ---------------------------------------------------------------------------------------------
# toolcalls: truth/pred = id → list of {name, arguments}

TNAMES = st.sampled_from(["f", "g", "h"])
TVALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "Paris"]), st.booleans())
CALL = st.fixed_dictionaries({"name": TNAMES, "arguments": st.dictionaries(st.sampled_from(["x", "y", "z"]), TVALUES, max_size=3)})


@st.composite
def _toolcalls_records(draw: st.DrawFn) -> tuple[Truth, Pred]:
    n = draw(st.integers(1, 6))
    ids = _ids(n)
    truth = {i: draw(st.lists(CALL, max_size=3)) for i in ids}
    pred: Pred = {}
    for i in ids:
        if draw(st.integers(0, 5)):
            pred[i] = [c for c in truth[i] if draw(st.booleans())] + draw(st.lists(CALL, max_size=2))
    return truth, pred


def _score_toolcalls(truth: Truth, pred: Pred) -> Any:
    return score_toolcalls(truth, {"m": pred}).models["m"]


def _toolcalls_perfect(m: Any, truth: Truth) -> dict[str, float]:
    out = {k: m.metrics[k] for k in ("valid_call_rate", "call_accuracy")}
    if m.counts.ref_calls:
        out |= {k: m.metrics[k] for k in ("name_match_rate", "args_exact_rate")}
    if m.counts.tp + m.counts.fn:  # P/R/F1 are defined only when reference calls have arguments
        out |= {k: m.metrics[k] for k in ("args_precision", "args_recall", "args_f1")}
    return out


TOOLCALLS_TASK = TaskCase(
    name="toolcalls",
    records=_toolcalls_records(),
    score=_score_toolcalls,
    ledger=lambda m: m.counts,
    bounded=lambda m: dict(m.metrics),
    prf=lambda m: {"args": (m.metrics["args_precision"], m.metrics["args_recall"], m.metrics["args_f1"])},
    perfect=lambda t: {i: [dict(c) for c in v] for i, v in t.items()},
    perfect_metrics=_toolcalls_perfect,
    empties=(lambda t: {i: [] for i in t}, lambda t: {}),
    # recall: reference calls matched by name / reference calls, and reference arguments
    # reproduced / reference arguments
    recall=lambda m: {"name_match_rate": (m.metrics["name_match_rate"], m.counts.ref_calls),
                      "args_recall": (m.metrics["args_recall"], m.counts.tp + m.counts.fn)},
    found=lambda m: m.counts.tp + m.counts.name_matches,
    canonical=lambda m: m.to_dict(),
    shuffle_item=lambda calls, rnd: _shuffled(list(calls), rnd),
)


TASKS = [FIELDS_TASK, JSON_TASK, LABELS_TASK, ENTITIES_TASK, SPANS_TASK, STRUCTURED_TASK, TOOLCALLS_TASK]
BY_NAME = {t.name: t for t in TASKS}
NORMALISING = [t.name for t in TASKS if t.normalise is not None]


def test_the_registry_covers_every_task() -> None:
    assert sorted(BY_NAME) == sorted(["fields", "json", "labels", "entities", "spans", "structured", "toolcalls"])


def _draw_scorable(data: st.DataObject, task: TaskCase) -> tuple[Truth, Pred]:
    truth, pred = data.draw(task.records, label="records")
    assume(task.scorable(truth))
    return truth, pred


# ---------------------------------------------------------------------------------------------
# the properties, once over every task


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_ledger_of_a_union_is_the_sum_of_the_ledgers(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    ids = sorted(truth.keys() | pred.keys())
    assume(len(ids) >= 2)
    cut = data.draw(st.integers(1, len(ids) - 1), label="cut")
    parts = [set(ids[:cut]), set(ids[cut:])]

    def part(sel: set[str]) -> tuple[Truth, Pred]:
        return {i: v for i, v in truth.items() if i in sel}, {i: v for i, v in pred.items() if i in sel}

    a, b = part(parts[0]), part(parts[1])
    assume(task.scorable(a[0]) and task.scorable(b[0]))
    whole = task.ledger(task.score(truth, pred))
    merged = _add(task.ledger(task.score(*a)), task.ledger(task.score(*b)))
    assert _plain(merged) == _plain(whole)


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data(), rnd=st.randoms(use_true_random=False))
def test_shuffling_records_and_items_changes_nothing(name: str, data: st.DataObject, rnd: random.Random) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    base = task.canonical(task.score(truth, pred))
    t2 = {i: task.shuffle_item(truth[i], rnd) for i in _shuffled(list(truth), rnd)}
    p2 = {i: task.shuffle_item(pred[i], rnd) for i in _shuffled(list(pred), rnd)}
    assert task.canonical(task.score(t2, p2)) == base


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_metrics_are_in_the_unit_interval_and_f1_is_2pr_over_p_plus_r(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, pred = _draw_scorable(data, task)
    r = task.score(truth, pred)
    bounded = task.bounded(r)
    assert bounded
    out = {k: v for k, v in bounded.items() if not 0.0 <= v <= 1.0}
    assert not out, out
    for what, (p, rec, f1) in task.prf(r).items():
        if p + rec > 0:
            assert f1 == pytest.approx(2 * p * rec / (p + rec), abs=1e-12), what
        else:
            assert f1 == 0.0, what


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_a_perfect_prediction_scores_one_on_every_metric(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, _ = _draw_scorable(data, task)
    r = task.score(truth, task.perfect(truth))
    metrics = task.perfect_metrics(r, truth)
    if name != "spans":  # a spans truth without a span defines no metric; every other task has some
        assert metrics
    below = {k: v for k, v in metrics.items() if v != pytest.approx(1.0, abs=1e-12)}
    assert not below, below


@pytest.mark.parametrize("name", sorted(BY_NAME))
@SETTINGS
@given(data=st.data())
def test_an_empty_prediction_has_recall_zero(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    truth, _ = _draw_scorable(data, task)
    empty = task.empties[data.draw(st.integers(0, len(task.empties) - 1), label="empty")](truth)
    r = task.score(truth, empty)
    recall = task.recall(r)
    supported = {k: v for k, (v, support) in recall.items() if support > 0}
    assume(supported)  # the truth has something to find
    assert task.found(r) == 0
    assert all(v == 0.0 for v in supported.values()), supported


@pytest.mark.parametrize("name", NORMALISING)
@SETTINGS
@given(data=st.data())
def test_normalising_predicted_values_again_changes_no_count(name: str, data: st.DataObject) -> None:
    task = BY_NAME[name]
    assert task.normalise is not None
    truth, pred = _draw_scorable(data, task)
    a, b = task.score(truth, pred), task.score(truth, task.normalise(pred))
    assert _plain(task.ledger(b)) == _plain(task.ledger(a))
    assert task.bounded(b) == task.bounded(a)
