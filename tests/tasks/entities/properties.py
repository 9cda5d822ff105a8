"""The `entities` task's row of the properties every task must have (tests/contract/test_properties.py):
its records as a Hypothesis strategy and the accessors that read its result."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, score_entities

from tests.contract.properties import Truth, Pred, PropertyCase, _shuffled, _NORM, _ids

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


PROPERTIES = PropertyCase(
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


