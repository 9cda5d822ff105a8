"""The `entities` task: optimal alignment, presence metrics, both views, bad inputs, properties."""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.entities.semantics import (
    PRESENCE_KEYS,
    EntitiesConfig,
    ModelEntities,
    align_entities,
    score_entities,
)
from extracteval.core.feature_views import MISSING, feature_metrics
from extracteval.tasks.labels.semantics import feature_ledger
from extracteval.errors import InputError


def _score(truth, pred, **cfg):
    return score_entities(truth, [ModelEntities(name="m", records=pred)], config=EntitiesConfig(**cfg))


# ---------------------------------------------------------------------------------------------
# alignment is optimal


def _greedy(score: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """What a greedy aligner does: take the best remaining pair until none is ≥ threshold."""
    s = score.copy()
    out = []
    while s.size and s.max() >= threshold:
        i, j = np.unravel_index(int(np.argmax(s)), s.shape)
        out.append((int(i), int(j)))
        s[i, :] = -1
        s[:, j] = -1
    return out


# Weighted similarities: G0–P0 0.9, G0–P1 0.5, G1–P0 0.5, G1–P1 0.0. Greedy takes G0–P0 first
# and strands G1; the optimal assignment matches both gold entities.
GOLD = [{"x": 1, "y": 1, "z": 1}, {"x": 2, "y": 1, "z": 9}]
PRED = [{"x": 1, "y": 1, "z": 0}, {"x": 1, "y": 0, "z": 1}]
WEIGHTS = {"x": 0.4, "y": 0.5, "z": 0.1}


def test_optimal_alignment_beats_greedy_on_a_hand_built_case():
    cfg = EntitiesConfig(weights=WEIGHTS)
    sims = np.array([[0.9, 0.5], [0.5, 0.0]])
    assert len(_greedy(sims, 0.5)) == 1
    pairs = align_entities(GOLD, PRED, config=cfg)
    assert [(g, p) for g, p, _ in pairs] == [(0, 1), (1, 0)]
    assert [s for *_, s in pairs] == pytest.approx([0.5, 0.5])
    r = score_entities({"inv": GOLD}, [ModelEntities(name="m", records={"inv": PRED})], config=cfg)
    assert r.models["m"].presence.to_dict()["matched_count"] == 2


def test_below_threshold_pairs_stay_unmatched():
    cfg = EntitiesConfig(weights=WEIGHTS, match_threshold=0.6)
    assert [(g, p) for g, p, _ in align_entities(GOLD, PRED, config=cfg)] == [(0, 0)]


def test_shuffling_entities_within_a_record_changes_nothing():
    # a tie on the key field: which gold line gets the prediction decides quantity correctness,
    # so an order-dependent aligner would give different per-feature metrics
    gold = [{"sku": "A", "qty": 1}, {"sku": "A", "qty": 2}, {"sku": "B", "qty": 3}]
    pred = [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 3}]
    base = _strip(_score({"r": gold}, {"r": pred}, key_fields=["sku"]).to_dict())
    rng = random.Random(0)
    for _ in range(20):
        g, p = gold[:], pred[:]
        rng.shuffle(g)
        rng.shuffle(p)
        assert _strip(_score({"r": g}, {"r": p}, key_fields=["sku"]).to_dict()) == base
    assert base["models"]["m"]["matched"]["row_accuracy"] == 1.0  # the tie resolved the same way each time


def _strip(doc):
    """Example entries carry the entity's input position, which a shuffle changes by design."""
    doc = copy.deepcopy(doc)
    for m in doc["models"].values():
        for kind in m["examples"].values():
            for e in kind:
                e.pop("index", None)
    return doc


# ---------------------------------------------------------------------------------------------
# presence metrics and the two views


INV_TRUTH = {
    "INV-1": [
        {"description": "Steel bolt M8", "quantity": 100, "unit_price": "0.12", "amount": "12.00"},
        {"description": "Hex nut M8", "quantity": 100, "unit_price": "0.05", "amount": "5.00"},
        {"description": "Washer 8mm", "quantity": 200, "unit_price": "0.02", "amount": "4.00"},
    ],
    "INV-2": [
        {"description": "Consulting hours", "quantity": 10, "unit_price": "150", "amount": "1,500.00"},
    ],
    "INV-3": [],
}


def test_presence_keys_and_views_on_an_invoice():
    pred = {
        "INV-1": [
            {"description": "steel bolt m8", "quantity": "100", "unit_price": 0.12, "amount": 12},
            {"description": "Washer 8 mm", "quantity": 200, "unit_price": "0.02", "amount": "4"},
            {"description": "Shipping", "quantity": 1, "unit_price": "9.99", "amount": "9.99"},  # hallucinated line
        ],
        "INV-2": [{"description": "Consulting hours", "quantity": 10, "unit_price": "1500", "amount": "150"}],  # swapped
        "INV-3": [],
    }
    r = _score(INV_TRUTH, pred, strategies={"description": "FUZZY"})
    m = r.models["m"]
    pres = m.presence.to_dict()
    assert list(pres)[: len(PRESENCE_KEYS)] == list(PRESENCE_KEYS)
    assert (pres["gold_count"], pres["predicted_count"], pres["matched_count"]) == (4, 4, 3)
    assert (pres["missed_gold_count"], pres["extra_predictions_count"]) == (1, 1)
    assert pres["precision_entities"] == pres["recall_entities"] == pres["f1_entities"] == 0.75
    assert pres["records_both_empty"] == 1
    # matched view: 3 pairs; INV-2's swapped prices are the only wrong values
    assert m.matched.rows == 3 and m.matched.correct_rows == 2
    assert m.matched.features["quantity"].micro_accuracy == 1.0
    assert m.matched.features["unit_price"].micro_accuracy == pytest.approx(2 / 3)
    # strict view: the missed hex nut and the extra shipping line are errors in every feature
    assert m.strict.rows == 5 and m.strict.row_accuracy == pytest.approx(2 / 5)
    assert m.strict.features["quantity"].micro_accuracy == pytest.approx(3 / 5)
    doc = json.loads(json.dumps(r.to_dict()))
    assert set(doc["models"]["m"]["entity_detection_summary"]) >= set(PRESENCE_KEYS)
    assert {"matched", "strict"} <= set(doc["models"]["m"]) and set(doc["views"]) == {"matched", "strict"}
    assert doc["models"]["m"]["examples"]["missed"][0]["gold"]["description"] == "Hex nut M8"
    assert doc["models"]["m"]["examples"]["extra"][0]["predicted"]["description"] == "Shipping"


def test_matched_view_can_look_perfect_while_strict_view_and_recall_do_not():
    few = {"INV-1": [INV_TRUTH["INV-1"][0]], "INV-2": INV_TRUTH["INV-2"], "INV-3": []}
    full = copy.deepcopy(INV_TRUTH)
    full["INV-1"][2] = dict(full["INV-1"][2], quantity=20, amount="0.40")  # one wrong line
    r = score_entities(INV_TRUTH, [ModelEntities(name="few", records=few), ModelEntities(name="full", records=full)])
    few_m = r.models["few"]
    assert few_m.matched.totals["f1"] == 1.0 and few_m.matched.row_accuracy == 1.0
    assert few_m.presence.to_dict()["recall_entities"] == 0.5
    assert few_m.strict.row_accuracy == 0.5
    assert r.ranking[0] == "full"  # ranked on the strict view
    assert any("'few'" in w and "of gold entities found" in w for w in r.warnings)


def test_per_feature_metrics_on_matched_pairs_equal_the_labels_kernel():
    pred = {k: [dict(e, quantity=(e["quantity"] if i else 7)) for i, e in enumerate(v)] for k, v in INV_TRUTH.items()}
    r = _score(INV_TRUTH, pred, key_fields=["description"])
    gold_q = [e["quantity"] for v in INV_TRUTH.values() for e in v]
    pred_q = [e["quantity"] for v in pred.values() for e in v]
    expected = feature_metrics(feature_ledger(gold_q, pred_q))
    got = r.models["m"].matched.features["quantity"]
    assert (got.precision, got.recall, got.f1, got.specificity, got.micro_accuracy) == pytest.approx(
        (expected.precision, expected.recall, expected.f1, expected.specificity, expected.micro_accuracy))


def test_missing_values_inside_entities_are_their_own_class():
    truth = {"r": [{"name": "a", "role": None}, {"name": "b", "role": "buyer"}]}
    pred = {"r": [{"name": "a", "role": "none"}, {"name": "b"}]}
    r = _score(truth, pred, key_fields=["name"])
    roles = r.models["m"].matched.features["role"].labels
    assert set(roles) == {MISSING, "buyer"}
    assert roles[MISSING]["tp"] == 1 and roles[MISSING]["fp"] == 1 and roles["buyer"]["fn"] == 1


def test_unaligned_records_are_counted_not_dropped():
    pred = {"INV-1": INV_TRUTH["INV-1"], "INV-9": [{"description": "x", "quantity": 1, "unit_price": "1", "amount": "1"}]}
    r = _score(INV_TRUTH, pred)
    m = r.models["m"]
    pres = m.presence.to_dict()
    assert (m.records_missing_prediction, m.records_not_in_truth) == (2, 1)  # INV-2, INV-3 missing; INV-9 extra
    assert pres["missed_gold_count"] == 1 and pres["extra_predictions_count"] == 1
    assert pres["records_both_empty"] == 0  # INV-3 has no prediction record: not a true negative
    assert any("no prediction" in w for w in r.warnings) and any("not in the ground truth" in w for w in r.warnings)


def test_malformed_predicted_entity_is_counted_as_an_extra_prediction():
    pred = {"INV-2": [INV_TRUTH["INV-2"][0], "Consulting hours x10"]}
    r = _score({"INV-2": INV_TRUTH["INV-2"]}, pred)
    pres = r.models["m"].presence.to_dict()
    assert (pres["matched_count"], pres["extra_predictions_count"], pres["invalid_predictions_count"]) == (1, 1, 1)
    assert any("not an object" in w for w in r.warnings)


def test_perfect_prediction_scores_one():
    r = _score(INV_TRUTH, copy.deepcopy(INV_TRUTH))
    m = r.models["m"]
    assert m.presence.to_dict()["f1_entities"] == 1.0
    for view in (m.matched, m.strict):
        assert view.row_accuracy == 1.0
        assert all(v == 1.0 for v in view.totals.values())



def test_an_entity_empty_on_every_key_field_matches_its_copy():
    """Found by the common properties (tests/contract/test_properties.py): {"item": null,
    "qty": null} copied verbatim had similarity 0/0 = 0 and stayed unmatched (recall 0.5)."""
    truth = {"r": [{"item": "bolt", "qty": 1}, {"item": None, "qty": None}]}
    m = _score(truth, copy.deepcopy(truth)).models["m"]
    pres = m.presence.to_dict()
    assert (pres["matched_count"], pres["missed_gold_count"], pres["extra_predictions_count"]) == (2, 0, 0)
    assert m.strict.row_accuracy == 1.0
    # it still matches nothing that has a value
    m = _score(truth, {"r": [{"item": "bolt", "qty": 1}, {"item": "nut", "qty": None}]}).models["m"]
    assert m.presence.to_dict()["matched_count"] == 1


# ---------------------------------------------------------------------------------------------
# bad inputs


@pytest.mark.parametrize(
    ("kwargs", "truth", "message"),
    [
        ({}, {"r": [{"a": 1}, "oops"]}, r"record 'r': entities\[1\]: expected an object .* found str"),
        ({}, {"r": {"a": 1}}, r"record 'r': expected a list of entity objects, but found dict"),
        ({"key_fields": ["sku"]}, {"r": [{"a": 1}]}, r"unknown key field\(s\) \['sku'\].*fields found: \['a'\]"),
        ({"features": ["a", "b"]}, {"r": [{"a": 1, "b": None}, {"a": 2}]}, r"feature 'b' is missing in every ground-truth entity"),
        ({"weights": {"a": 1, "zz": 1}}, {"r": [{"a": 1}]}, r"unknown field\(s\) in weights \['zz'\]"),
        ({"key_fields": ["a"], "weights": {"b": 1.0}}, {"r": [{"a": 1, "b": 2}]}, r"weights given for fields \['b'\] that are not key fields"),
    ],
)
def test_bad_inputs(kwargs, truth, message):
    with pytest.raises(InputError, match=message):
        score_entities(truth, [ModelEntities(name="m", records={})], config=EntitiesConfig(**kwargs))


@pytest.mark.parametrize("weights", [{"a": 0, "b": 0}, {}, {"a": -1, "b": 2}, {"a": "heavy"}, {"a": float("nan")}])
def test_weights_must_be_non_negative_and_sum_to_a_positive_number(weights):
    with pytest.raises(InputError, match="weight"):
        EntitiesConfig(weights=weights)


def test_config_rejects_bad_thresholds_and_strategies():
    with pytest.raises(InputError, match="match_threshold"):
        EntitiesConfig(match_threshold=1.5)
    with pytest.raises(InputError, match="semantic_threshold"):
        EntitiesConfig(semantic_threshold=-0.1)
    with pytest.raises(InputError, match="expected one of EXACT"):
        EntitiesConfig(strategies={"a": "CLOSE"})
    cfg = EntitiesConfig(strategies={"a": "SEMANTIC"})  # the task takes a similarity backend now
    assert cfg.strategy_for("a").value == "SEMANTIC" and cfg.to_dict()["semantic_threshold"] == 0.8


# ---------------------------------------------------------------------------------------------
# SEMANTIC fields: the `json` task's similarity backends


class TableBackend:
    """A meaning-level backend from a table of pairs (0.05 for pairs not in it); records each call."""

    name = "table"

    def __init__(self, table, default=0.05):
        self.table = {frozenset(k): v for k, v in table.items()}
        self.default = default
        self.calls = []

    def similarity(self, a, b):
        self.calls.append(list(zip(a, b)))
        return np.array([self.table.get(frozenset((x, y)), self.default) for x, y in zip(a, b)])


VEHICLES_GOLD = [{"item": "automobile", "qty": 1}, {"item": "bicycle", "qty": 2}]
VEHICLES_PRED = [{"item": "bike", "qty": 2}, {"item": "car", "qty": 1}]
VEHICLES = {("automobile", "car"): 0.95, ("bicycle", "bike"): 0.7}


def test_semantic_field_with_an_injected_backend_changes_alignment_and_correctness():
    exact = EntitiesConfig(key_fields=["item"])
    assert align_entities(VEHICLES_GOLD, VEHICLES_PRED, config=exact) == []  # no two spellings are equal
    backend = TableBackend(VEHICLES)
    sem = EntitiesConfig(key_fields=["item"], strategies={"item": "SEMANTIC"})
    pairs = align_entities(VEHICLES_GOLD, VEHICLES_PRED, config=sem, similarity=backend)
    assert pairs == [(0, 1, pytest.approx(0.95)), (1, 0, pytest.approx(0.7))]
    # correctness of a matched pair's value uses semantic_threshold, not the match threshold
    for thr, item_correct in ((0.8, 1), (0.6, 2)):
        r = score_entities({"r": VEHICLES_GOLD}, [ModelEntities(name="m", records={"r": VEHICLES_PRED})],
                           config=EntitiesConfig(key_fields=["item"], strategies={"item": "SEMANTIC"}, semantic_threshold=thr),
                           similarity=TableBackend(VEHICLES))
        m = r.models["m"]
        assert m.presence.to_dict()["matched_count"] == 2
        assert m.matched.features["item"].correct == item_correct
        assert m.matched.correct_rows == item_correct  # qty is right in both pairs
    assert r.config["semantic_backend"] == "table" and r.config["similarity"]["semantic"]["fields"] == ["item"]


def test_semantic_similarity_weighs_into_the_alignment():
    # qty alone ties both predictions for the first gold line; the item's score breaks the tie
    gold = [{"item": "automobile", "qty": 1}]
    pred = [{"item": "carpet", "qty": 1}, {"item": "car", "qty": 1}]
    cfg = EntitiesConfig(weights={"item": 3, "qty": 1}, strategies={"item": "SEMANTIC"})
    backend = TableBackend({("automobile", "car"): 0.9, ("automobile", "carpet"): 0.2})
    [(g, p, s)] = align_entities(gold, pred, config=cfg, similarity=backend)
    assert (g, p) == (0, 1) and s == pytest.approx((3 * 0.9 + 1) / 4)


def test_numbers_under_semantic_still_compare_exactly_and_never_reach_the_backend():
    backend = TableBackend({}, default=1.0)  # would call anything equal
    truth = {"r": [{"item": "bolt", "qty": 2}]}
    pred = {"r": [{"item": "bolt", "qty": 3}]}
    r = score_entities(truth, [ModelEntities(name="m", records=pred)],
                       config=EntitiesConfig(key_fields=["item"], strategies={"qty": "SEMANTIC"}), similarity=backend)
    assert r.models["m"].matched.features["qty"].correct == 0
    assert backend.calls == []


def test_one_backend_call_per_semantic_field_over_distinct_pairs_of_the_whole_input():
    words = ["automobile", "car", "bicycle", "bike", "truck", "lorry"]
    rng = random.Random(3)
    truth = {f"r{i}": [{"item": rng.choice(words), "colour": rng.choice(["red", "crimson", "blue"]), "qty": rng.randint(1, 3)}
                       for _ in range(rng.randint(1, 4))] for i in range(40)}
    preds = [ModelEntities(name=n, records={k: [dict(e, item=rng.choice(words), colour=rng.choice(["red", "crimson", "navy"]))
                                                 for e in v] for k, v in truth.items()}) for n in ("a", "b")]
    table = {("automobile", "car"): 0.9, ("bicycle", "bike"): 0.9, ("truck", "lorry"): 0.9, ("red", "crimson"): 0.85}
    backend = TableBackend(table)
    cfg = EntitiesConfig(key_fields=["item", "qty"], strategies={"item": "SEMANTIC", "colour": "SEMANTIC"})
    r = score_entities(truth, preds, config=cfg, similarity=backend)
    # one call for the key field (every candidate pair of both models), one for the non-key
    # feature (the matched pairs of both models); no pair asked twice, no equal pair asked at all
    assert len(backend.calls) == 2
    for call in backend.calls:
        assert len(call) == len(set(call)) and all(x != y for x, y in call)
    assert {x for x, _ in backend.calls[0]} <= set(words) and {x for x, _ in backend.calls[1]} <= {"red", "crimson", "blue"}
    # and the result equals scoring each model alone
    for p in preds:
        alone = score_entities(truth, [p], config=cfg, similarity=TableBackend(table))
        assert alone.models[p.name].to_dict()["matched"] == r.models[p.name].to_dict()["matched"]
        assert alone.models[p.name].presence.to_dict() == r.models[p.name].presence.to_dict()


def test_lexical_default_works_offline_and_is_named_lexical():
    from extracteval.core.similarity import LexicalSimilarity

    gold = [{"item": "stainless steel bolt", "qty": 2}, {"item": "copper washer", "qty": 4}]
    pred = [{"item": "Copper washers", "qty": 4}, {"item": "stainless-steel bolts", "qty": 2}]
    cfg = EntitiesConfig(key_fields=["item"], strategies={"item": "SEMANTIC"})
    r = score_entities({"r": gold}, [ModelEntities(name="m", records={"r": pred})], config=cfg)
    assert r.config["semantic_backend"] == "lexical" and r.config["similarity"]["semantic"]["kind"] == "lexical"
    pairs = align_entities(gold, pred, config=cfg)
    assert [(g, p) for g, p, _ in pairs] == [(0, 1), (1, 0)]
    expected = LexicalSimilarity().similarity(["stainless steel bolt", "copper washer"], ["stainless-steel bolts", "copper washers"])
    assert [s for *_, s in pairs] == pytest.approx(expected.tolist())
    assert r.models["m"].matched.features["item"].correct == int((expected >= 0.8).sum())


def test_backend_failures_are_counted_never_matched_and_warned():
    class Failing(TableBackend):
        def similarity(self, a, b):
            super().similarity(a, b)
            return np.full(len(a), np.nan)

    truth = {"r": [{"item": "automobile", "qty": 1}]}
    pred = {"r": [{"item": "car", "qty": 1}]}
    cfg = EntitiesConfig(weights={"item": 1, "qty": 1}, strategies={"item": "SEMANTIC"})
    r = score_entities(truth, [ModelEntities(name="m", records=pred)], config=cfg, similarity=Failing({}))
    m = r.models["m"]
    assert m.presence.to_dict()["matched_count"] == 1 and m.mean_match_similarity == pytest.approx(0.5)  # qty only
    assert m.matched.features["item"].correct == 0
    assert r.config["similarity"]["semantic"]["failures"] == {"item": 1}
    assert any("could not score 1 distinct value pair(s) of 'item'" in w for w in r.warnings)


def test_backend_returning_the_wrong_number_of_scores_is_an_error():
    class Short(TableBackend):
        def similarity(self, a, b):
            return np.zeros(len(a) - 1)

    with pytest.raises(InputError, match=r"SEMANTIC field 'item'.*returned 3 scores for 4 pairs"):
        align_entities(VEHICLES_GOLD, VEHICLES_PRED, config=EntitiesConfig(key_fields=["item"], strategies={"item": "SEMANTIC"}),
                       similarity=Short({}))


def test_shuffling_entities_changes_nothing_with_a_semantic_field():
    gold = [{"item": "automobile", "qty": 1}, {"item": "automobile", "qty": 2}, {"item": "bicycle", "qty": 3}]
    pred = [{"item": "car", "qty": 2}, {"item": "bike", "qty": 3}, {"item": "car", "qty": 9}]
    cfg = dict(key_fields=["item"], strategies={"item": "SEMANTIC"})
    base = _strip(score_entities({"r": gold}, [ModelEntities(name="m", records={"r": pred})], config=EntitiesConfig(**cfg),
                                 similarity=TableBackend(VEHICLES)).to_dict())
    rng = random.Random(1)
    for _ in range(10):
        g, p = gold[:], pred[:]
        rng.shuffle(g)
        rng.shuffle(p)
        doc = score_entities({"r": g}, [ModelEntities(name="m", records={"r": p})], config=EntitiesConfig(**cfg),
                             similarity=TableBackend(VEHICLES)).to_dict()
        assert _strip(doc) == base


# ---------------------------------------------------------------------------------------------
# properties

words = st.sampled_from(["bolt", "nut", "washer", "bolt m8", "nut m8", None])
qty = st.sampled_from([1, 2, "2", "2.0", 10, None])
entity = st.fixed_dictionaries({"item": words, "qty": qty})
record = st.lists(entity, max_size=4)
records = st.dictionaries(st.sampled_from([f"r{i}" for i in range(8)]), record, min_size=1, max_size=8)


def _with_item(recs):
    # at least one gold entity has an item and a qty, or the task rightly refuses the input
    out = dict(recs)
    out["r-anchor"] = [{"item": "bolt", "qty": 1}]
    return out


@settings(max_examples=40, deadline=None)
@given(records, records, st.randoms(use_true_random=False))
def test_order_independence_and_invariants(truth, pred, rnd):
    truth = _with_item(truth)
    cfg = EntitiesConfig(strategies={"item": "FUZZY"})
    r = score_entities(truth, [ModelEntities(name="m", records=pred)], config=cfg)
    shuffled_t = {k: rnd.sample(v, len(v)) for k, v in reversed(list(truth.items()))}
    shuffled_p = {k: rnd.sample(v, len(v)) for k, v in reversed(list(pred.items()))}
    r2 = score_entities(shuffled_t, [ModelEntities(name="m", records=shuffled_p)], config=cfg)
    d1, d2 = _strip(r.to_dict()), _strip(r2.to_dict())
    for d in (d1, d2):  # which of two entities identical on every field is shown may differ
        d["models"]["m"].pop("examples")
    assert d1 == d2
    pres = r.models["m"].presence.to_dict()
    assert pres["matched_count"] + pres["missed_gold_count"] == pres["gold_count"]
    assert pres["matched_count"] + pres["extra_predictions_count"] == pres["predicted_count"]
    for k in ("precision_entities", "recall_entities", "f1_entities"):
        assert 0.0 <= pres[k] <= 1.0
    p, rc = pres["precision_entities"], pres["recall_entities"]
    if p + rc > 0:
        assert pres["f1_entities"] == pytest.approx(2 * p * rc / (p + rc))
    m = r.models["m"]
    assert m.strict.row_accuracy <= m.matched.row_accuracy or m.matched.rows == 0


@settings(max_examples=40, deadline=None)
@given(records, records, records, records)
def test_counts_of_a_union_are_the_sum_of_counts(ta, pa, tb, pb):
    ta = {f"a-{k}": v for k, v in _with_item(ta).items()}
    tb = {f"b-{k}": v for k, v in _with_item(tb).items()}
    pa = {f"a-{k}": v for k, v in pa.items()}
    pb = {f"b-{k}": v for k, v in pb.items()}
    cfg = EntitiesConfig(features=["item", "qty"])

    def run(t, p):
        return score_entities(t, [ModelEntities(name="m", records=p)], config=cfg).models["m"]

    a, b, ab = run(ta, pa), run(tb, pb), run({**ta, **tb}, {**pa, **pb})
    assert (a.presence.counts + b.presence.counts).to_dict() == ab.presence.counts.to_dict()
    for view in ("matched", "strict"):
        for f in ("item", "qty"):
            merged = a.ledgers[view][f] + b.ledgers[view][f]
            assert merged.to_dict() == ab.ledgers[view][f].to_dict()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.fixed_dictionaries({"a": st.integers(0, 2), "b": st.integers(0, 2), "c": st.integers(0, 1)}), min_size=1, max_size=6),
       st.lists(st.fixed_dictionaries({"a": st.integers(0, 2), "b": st.integers(0, 2), "c": st.integers(0, 1)}), min_size=1, max_size=6),
       st.sampled_from([0.3, 0.5, 0.7]))
def test_alignment_equals_the_assignment_solver(gold, pred, thr):
    """The batched shortcut and the solver agree: same number of pairs, same total similarity."""
    from extracteval.core.matching import max_matching

    w = {"a": 0.5, "b": 0.3, "c": 0.2}
    sim = np.array([[sum(w[f] for f in w if g[f] == p[f]) for p in pred] for g in gold])
    expected = max_matching(sim, thr)
    got = align_entities(gold, pred, config=EntitiesConfig(weights=w, match_threshold=thr))
    assert len(got) == len(expected)
    assert sum(s for *_, s in got) == pytest.approx(sum(sim[i, j] for i, j in expected), abs=1e-4)
    for g, p, s in got:
        assert s == pytest.approx(sim[g, p]) and s >= thr - 1e-12


def test_records_with_no_entities_on_both_sides_are_true_negatives():
    truth = {"a": [], "b": [{"item": "bolt"}]}
    r = _score(truth, {"a": [], "b": [{"item": "bolt"}]})
    assert r.models["m"].presence.to_dict()["records_both_empty"] == 1
    # a record with no prediction at all is not a true negative, even when its truth is empty
    r = score_entities({"a": [], "c": [], "b": [{"item": "bolt"}]}, [ModelEntities(name="m", records={"a": []})])
    s = r.models["m"].presence.to_dict()
    assert s["missed_gold_count"] == 1 and s["recall_entities"] == 0.0 and s["records_both_empty"] == 1


def test_fast_paths_give_the_same_result_as_the_general_ones(monkeypatch):
    # the dense pair table and the mixed-radix sort key are shortcuts for few distinct values;
    # np.unique and lexsort are the general paths, taken when the tables or keys would be too big
    import extracteval.tasks.entities.counting as counting
    import extracteval.tasks.entities.matching as matching

    rng = random.Random(7)
    words = ["bolt", "nut", "washer", "bolt m8", "nut m8", "hex bolt", None]
    truth = {f"r{i}": [{"item": rng.choice(words), "qty": rng.choice([1, 2, "2", None]), "note": rng.choice(["a", "b", None])}
                       for _ in range(rng.randint(0, 5))] for i in range(60)}
    truth["anchor"] = [{"item": "bolt", "qty": 1, "note": "a"}]
    pred = {k: [dict(e, item=rng.choice(words)) if rng.random() < 0.4 else dict(e) for e in v] + [{"item": "extra"}] * rng.randint(0, 1)
            for k, v in truth.items()}
    cfg = EntitiesConfig(strategies={"item": "FUZZY", "note": "SEMANTIC"})
    fast = score_entities(truth, [ModelEntities(name="m", records=pred)], config=cfg).to_dict()
    monkeypatch.setattr(matching, "_DENSE_PAIRS", 0)
    monkeypatch.setattr(counting, "_RADIX_LIMIT", 0)
    assert score_entities(truth, [ModelEntities(name="m", records=pred)], config=cfg).to_dict() == fast


def test_field_columns_read_absent_fields_as_missing_on_both_paths():
    from extracteval.tasks.entities.counting import _columns

    view = [{"a": 1, "b": "x"}, {}, {"b": None, "c": [1, 2]}, {"a": float("nan")}]
    fast, slow = _columns(view, ["a", "b", "c"]), _columns(view, ["a", "b", "c"], fast=False)
    assert fast.shape == slow.shape == (4, 3) and _columns([], ["a"]).shape == (0, 1)
    for x, y in zip(fast.ravel().tolist(), slow.ravel().tolist()):
        absent = lambda v: v is None or (isinstance(v, float) and v != v)  # noqa: E731
        assert (absent(x) and absent(y)) or x == y
    assert fast[2, 2] == [1, 2] and fast[0, 1] == "x"
