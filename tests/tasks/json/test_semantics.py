"""The `json` task core: seed 001's walkthrough and edge cases, EXACT semantics, strategies,
flattening, RQS, aggregation and ranking."""

from __future__ import annotations

import random

import numpy as np
import pytest

from extracteval.tasks.json.semantics import (
    BUCKETS,
    JsonConfig,
    JsonPredictions,
    RQSWeights,
    auto_strategy,
    compare_json,
    flatten_json,
    score_json,
)
from extracteval.core.normalize import Normalizer
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError

SEED_GT = {
    "name": "John Smith",
    "email": "john@example.com",
    "bio": "Senior engineer with 10 years of experience...",
    "internal_id": None,
    "status": "active",
}
SEED_AIO = {
    "name": "John Smyth",
    "email": "john@example.com",
    "bio": "Experienced senior engineer, 10+ years...",
    "internal_id": "abc123",
    "extra_field": "surprise",
}
SEED_CONFIG = {"name": "FUZZY", "bio": "SEMANTIC"}


class StubBackend:
    """A similarity backend returning fixed scores per pair and recording every call."""

    def __init__(self, scores: dict[tuple[str, str], float], default: float = 0.0, name: str = "stub") -> None:
        self.scores = scores
        self.default = default
        self.name = name
        self.calls: list[tuple[list[str], list[str]]] = []

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        self.calls.append((list(a), list(b)))
        return np.array([self.scores.get((x, y), self.default) for x, y in zip(a, b)], dtype=float)


def seed_backends() -> tuple[StubBackend, StubBackend]:
    # the seed's "LLM" scores: name 0.92 (FUZZY, ≥ 0.85), bio 0.88 (SEMANTIC, ≥ 0.80)
    fuzzy = StubBackend({("john smith", "john smyth"): 0.92}, name="seed-fuzzy")
    semantic = StubBackend(
        {("senior engineer with 10 years of experience...", "experienced senior engineer, 10+ years..."): 0.88}, name="seed-llm"
    )
    return fuzzy, semantic


# --- seed 001 walkthrough ---------------------------------------------------------------------


def test_seed_001_walkthrough_exactly() -> None:
    fuzzy, semantic = seed_backends()
    r = compare_json(SEED_GT, SEED_AIO, config=JsonConfig(strategies=SEED_CONFIG), similarity=semantic, fuzzy_similarity=fuzzy)
    assert sorted(r.buckets["gt_non_null"]) == ["bio", "email", "name", "status"]
    assert sorted(r.buckets["both_non_null"]) == ["bio", "email", "name"]
    assert r.buckets["aio_missing_or_null"] == ("status",)
    assert r.buckets["extra_keys"] == ("extra_field",)
    assert r.buckets["gt_null_aio_has_value"] == ("internal_id",)
    assert r.completeness == 0.75
    assert r.total_keys == 6
    assert r.hallucination == 2 / 6
    assert r.strategies == {"name": "FUZZY", "email": "EXACT", "bio": "SEMANTIC"}
    assert r.scores == {"name": 0.92, "email": 1.0, "bio": 0.88}
    assert r.accuracy == 1.0
    assert r.rqs == 0.7375
    # each backend saw exactly its own distinct pair, once
    assert fuzzy.calls == [(["john smith"], ["john smyth"])]
    assert len(semantic.calls) == 1 and len(semantic.calls[0][0]) == 1


def test_seed_001_walkthrough_below_threshold_changes_accuracy_only() -> None:
    fuzzy = StubBackend({}, default=0.84)  # just below 0.85
    semantic = StubBackend({}, default=0.88)
    r = compare_json(SEED_GT, SEED_AIO, config=JsonConfig(strategies=SEED_CONFIG), similarity=semantic, fuzzy_similarity=fuzzy)
    assert r.accuracy == 2 / 3
    assert r.mismatched == ("name",)
    assert r.completeness == 0.75 and r.hallucination == 2 / 6
    assert r.rqs == pytest.approx(0.45 * 2 / 3 + 0.1875 + 0.15 - 0.05, abs=1e-12)


def test_seed_001_default_rapidfuzz_matches_name() -> None:
    # without an injected FUZZY backend, rapidfuzz ratio("john smith", "john smyth") = 0.9 ≥ 0.85
    _, semantic = seed_backends()
    r = compare_json(SEED_GT, SEED_AIO, config=JsonConfig(strategies=SEED_CONFIG), similarity=semantic)
    assert r.scores["name"] == pytest.approx(0.9)
    assert r.accuracy == 1.0 and r.rqs == 0.7375


# --- seed 001 "Edge Cases Handled" ------------------------------------------------------------


@pytest.mark.parametrize(
    "gt, aio, bucket, completeness, hallucination",
    [
        # GT null, not in AIO → skipped: no completeness impact, no hallucination
        ({"a": "x", "k": None}, {"a": "x"}, None, 1.0, 0.0),
        # GT null, AIO null → skipped
        ({"a": "x", "k": None}, {"a": "x", "k": None}, None, 1.0, 0.0),
        # GT null, AIO value → hallucination
        ({"a": "x", "k": None}, {"a": "x", "k": "v"}, "gt_null_aio_has_value", 1.0, 0.5),
        # not in GT, in AIO → hallucination (extra_keys)
        ({"a": "x"}, {"a": "x", "k": "v"}, "extra_keys", 1.0, 0.5),
        # GT value, not in AIO → completeness loss
        ({"a": "x", "k": "v"}, {"a": "x"}, "aio_missing_or_null", 0.5, 0.0),
        # GT value, AIO null → completeness loss
        ({"a": "x", "k": "v"}, {"a": "x", "k": None}, "aio_missing_or_null", 0.5, 0.0),
    ],
)
def test_seed_001_edge_cases(gt, aio, bucket, completeness, hallucination) -> None:
    r = compare_json(gt, aio)
    placed = [b for b in BUCKETS if "k" in r.buckets[b]]
    if bucket is None:
        assert placed == []
    elif bucket == "aio_missing_or_null":
        assert placed == ["gt_non_null", "aio_missing_or_null"]
    else:
        assert placed == [bucket]
    assert r.completeness == completeness
    assert r.hallucination == hallucination
    assert r.accuracy == 1.0


@pytest.mark.parametrize("null", [None, "", "   ", "N/A", "null", "Not Present", float("nan"), [], {}])
def test_null_values_are_null_on_either_side(null) -> None:
    r = compare_json({"a": "x", "k": null}, {"a": "x", "k": "v"})
    assert r.buckets["gt_null_aio_has_value"] == ("k",)
    r = compare_json({"a": "x", "k": "v"}, {"a": "x", "k": null})
    assert r.buckets["aio_missing_or_null"] == ("k",)


def test_empty_truth_and_prediction() -> None:
    r = compare_json({}, {})
    assert (r.completeness, r.hallucination, r.accuracy, r.rqs) == (1.0, 0.0, 1.0, 0.85)
    r = compare_json({"a": None}, {})  # nothing expected, nothing hallucinated
    assert (r.completeness, r.hallucination, r.accuracy) == (1.0, 0.0, 1.0)


# --- EXACT semantics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gt, aio, equal",
    [
        (1, 1.0, True),
        (1, "1", True),
        ("1.0", 1, True),
        ("1,000", 1000, True),
        (1, 2, False),
        (True, "yes", True),
        (True, 1, False),  # a boolean is not the number 1
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, True),  # key order irrelevant
        ([1, 2], [2, 1], False),  # list order relevant
        ([{"x": 1}], [{"x": "1"}], True),  # leaves normalised inside objects
        ("2024-01-05", "January 5, 2024", True),
        ("2024-01-05", "01/05/2024", True),
        ("2024-01-05", "2024-01-06", False),
        ("john@example.com", "JOHN@Example.com", True),
        ("john@example.com", "jon@example.com", False),
    ],
)
def test_exact_semantics(gt, aio, equal) -> None:
    r = compare_json({"f": gt}, {"f": aio}, config=JsonConfig(strategies={"f": "EXACT"}))
    assert r.accuracy == (1.0 if equal else 0.0)


@pytest.mark.parametrize(
    "value, strategy",
    [(42, Strategy.EXACT), (3.5, Strategy.EXACT), ("42", Strategy.EXACT), (True, Strategy.EXACT), ("2024-01-05", Strategy.EXACT),
     ("a@b.co", Strategy.EXACT), ([1], Strategy.EXACT), ({"a": 1}, Strategy.EXACT), ("Acme Corp", Strategy.SEMANTIC)],
)
def test_auto_detection(value, strategy) -> None:
    assert auto_strategy(Normalizer().key(value)) is strategy
    r = compare_json({"f": value}, {"f": value})
    assert r.strategies["f"] == strategy.value


def test_numbers_dates_never_nearly_equal_under_fuzzy_or_semantic() -> None:
    always = StubBackend({}, default=1.0)
    cfg = JsonConfig(strategies={"n": "FUZZY", "d": "SEMANTIC"})
    r = compare_json({"n": 100, "d": "2024-01-05"}, {"n": 1000, "d": "2024-01-06"}, config=cfg, similarity=always, fuzzy_similarity=always)
    assert r.accuracy == 0.0
    assert always.calls == []


def test_similarity_failure_counts_as_not_matched_and_is_reported() -> None:
    failing = StubBackend({}, default=float("nan"))
    res = score_json({"r": {"bio": "a long text"}}, [JsonPredictions(name="m", records={"r": {"bio": "other words"}})], similarity=failing)
    m = res.models["m"]
    assert m.accuracy == 0.0 and m.similarity_failures == 1
    assert m.fields["bio"].similarity_failures == 1
    assert m.record("r").scores["bio"] is None
    assert any("failed on 1 value" in w for w in res.warnings)


# --- strategies -------------------------------------------------------------------------------


def test_ignore_leaves_accuracy_denominator() -> None:
    gt = {"a": "x", "notes": "internal"}
    aio = {"a": "x", "notes": "something else entirely"}
    r = compare_json(gt, aio, config=JsonConfig(strategies={"notes": "IGNORE"}))
    assert (r.accuracy, r.scored) == (1.0, 1)
    assert r.strategies["notes"] == "IGNORE" and "notes" in r.buckets["both_non_null"]
    r = compare_json({"notes": "x"}, {"notes": "y"}, config=JsonConfig(strategies={"notes": "ignore"}))
    assert (r.accuracy, r.scored) == (1.0, 0)  # nothing to score → perfect (seed 001)


def test_unknown_strategy_lists_valid_ones() -> None:
    with pytest.raises(InputError, match=r"field 'a'.*EXACT, FUZZY, SEMANTIC, IGNORE.*'CLOSE'"):
        JsonConfig(strategies={"a": "CLOSE"})


@pytest.mark.parametrize("name", ["fuzzy_threshold", "semantic_threshold", "default_safety"])
@pytest.mark.parametrize("bad", [1.5, -0.1, "0.8", True])
def test_threshold_outside_unit_interval(name, bad) -> None:
    with pytest.raises(InputError, match=rf"`{name}` to be a number in \[0, 1\], but got"):
        JsonConfig(**{name: bad})


def test_weights_and_clamp_validation() -> None:
    with pytest.raises(InputError, match="weight `safety`"):
        RQSWeights(safety=-1)
    with pytest.raises(InputError, match="clamp"):
        JsonConfig(clamp=(1.0, 0.0))


def test_weights_and_clamp_apply() -> None:
    cfg = JsonConfig(weights=RQSWeights(accuracy=1, completeness=0, hallucination=2, safety=0), clamp=(0.0, 1.0))
    r = compare_json({"a": "x"}, {"a": "x", "b": "y", "c": "z"}, config=cfg)  # 1 − 2·(2/3) < 0 → clamped
    assert r.rqs == 0.0
    cfg = JsonConfig(weights={"accuracy": 1, "completeness": 1, "hallucination": 0, "safety": 0}, clamp=(0.0, 2.0))
    assert compare_json({"a": "x"}, {"a": "x"}, config=cfg).rqs == 2.0


def test_safety_score_default_and_given() -> None:
    # a perfect record scores 0.45 + 0.25 + 0.15 · safety (the hallucination weight only subtracts)
    assert compare_json({"a": "x"}, {"a": "x"}).rqs == 0.85
    assert compare_json({"a": "x"}, {"a": "x"}, safety_score=0.0).rqs == 0.7
    res = score_json({"r": {"a": 1}}, [JsonPredictions(name="m", records={"r": {"a": 1}})], config=JsonConfig(default_safety=0.5))
    assert res.models["m"].rqs["mean"] == 0.775 and res.config["safety_score"] == {"key": "safety_score", "default": 0.5}
    with pytest.raises(InputError, match=r"record 'r'.*safety_score.*\[0, 1\].*1.5"):
        score_json({"r": {"a": 1}}, [JsonPredictions(name="m", records={"r": {"a": 1}}, safety={"r": 1.5})])


# --- flattening -------------------------------------------------------------------------------


def test_flatten_paths() -> None:
    obj = {"a": {"b": 1, "c": {"d": None}}, "items": [{"sku": "X"}, {"sku": "Y", "qty": 2}], "e": [], "k.y": 3}
    assert flatten_json(obj) == {
        "a.b": 1, "a.c.d": None, "items[0].sku": "X", "items[1].sku": "Y", "items[1].qty": 2, "e": [], '["k.y"]': 3
    }
    assert flatten_json(obj, flatten=False) == obj


def test_flatten_buckets_apply_to_nested_paths() -> None:
    gt = {"customer": {"name": "Ann Lee", "phone": None}, "items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}]}
    aio = {"customer": {"name": "Ann Lee", "phone": "555"}, "items": [{"sku": "A1", "qty": 3}], "note": "x"}
    r = compare_json(gt, aio, config=JsonConfig(flatten=True))
    assert r.buckets["gt_null_aio_has_value"] == ("customer.phone",)
    assert r.buckets["extra_keys"] == ("note",)
    assert r.buckets["aio_missing_or_null"] == ("items[1].qty", "items[1].sku")
    assert r.buckets["both_non_null"] == ("customer.name", "items[0].qty", "items[0].sku")
    assert r.mismatched == ("items[0].qty",)
    assert (r.completeness, r.hallucination, r.accuracy) == (3 / 5, 2 / 7, 2 / 3)
    # without flattening the same objects are compared key by key
    r = compare_json(gt, aio)
    assert r.buckets["both_non_null"] == ("customer", "items") and r.accuracy == 0.0


def test_flatten_strategy_by_path_pattern_and_ancestor() -> None:
    gt = {"items": [{"desc": "Blue cotton shirt", "sku": "A1"}], "address": {"city": "Springfield", "zip": "12345"}}
    aio = {"items": [{"desc": "blue cotton shirts", "sku": "A1"}], "address": {"city": "Springfeld", "zip": "99999"}}
    cfg = JsonConfig(flatten=True, strategies={"items[*].desc": "FUZZY", "address": "IGNORE", "address.city": "FUZZY"})
    r = compare_json(gt, aio, config=cfg)
    assert r.strategies == {"items[0].desc": "FUZZY", "items[0].sku": "SEMANTIC", "address.city": "FUZZY", "address.zip": "IGNORE"}
    assert r.accuracy == 1.0


def test_ten_thousand_deep_nesting() -> None:
    deep: dict = {"leaf": "v"}
    for _ in range(10_000):
        deep = {"a": deep}
    other: dict = {"leaf": "w"}
    for _ in range(10_000):
        other = {"a": other}
    flat = flatten_json(deep)
    assert len(flat) == 1 and next(iter(flat.values())) == "v"
    r = compare_json(deep, other, config=JsonConfig(flatten=True))
    assert r.accuracy == 0.0 and r.completeness == 1.0
    r = compare_json(deep, deep)  # unflattened: the whole object is one EXACT value
    assert r.accuracy == 1.0
    assert compare_json(deep, other).accuracy == 0.0


# --- invalid predictions, aggregation, ranking ------------------------------------------------


def test_prediction_not_an_object_counts_as_all_missing() -> None:
    truth = {"r1": {"a": 1, "b": "x"}, "r2": {"a": 2}}
    res = score_json(truth, [JsonPredictions(name="m", records={"r1": "garbage", "r2": [1, 2]})])
    m = res.models["m"]
    assert m.invalid_predictions == 2 and m.missing_records == 0
    assert m.buckets == {"extra_keys": 0, "gt_null_aio_has_value": 0, "gt_non_null": 3, "aio_missing_or_null": 3, "both_non_null": 0}
    assert m.record("r1").flags == ("invalid_prediction:str",)
    assert m.record("r1").completeness == 0.0
    assert any("not JSON objects" in w for w in res.warnings)


def test_missing_prediction_and_unknown_ids() -> None:
    res = score_json({"r1": {"a": 1}, "r2": {"a": 2}}, [JsonPredictions(name="m", records={"r1": {"a": 1}})])
    assert res.models["m"].missing_records == 1
    with pytest.raises(InputError, match=r"record id\(s\) are not in the ground truth.*'zz'"):
        score_json({"r1": {"a": 1}}, [JsonPredictions(name="m", records={"zz": {}})])
    with pytest.raises(InputError, match=r"record 'r1': the ground truth must be a JSON object"):
        score_json({"r1": [1]}, [JsonPredictions(name="m", records={})])


def _three_models() -> tuple[dict, list[JsonPredictions]]:
    truth = {f"r{i}": {"name": f"Person {i}", "age": 20 + i, "city": "Paris" if i % 2 else None} for i in range(6)}
    good = {k: dict(v) for k, v in truth.items()}
    sloppy = {k: {**v, "age": v["age"] + 1} for k, v in truth.items()}
    halluc = {k: {**v, "city": "Berlin", "ssn": "000"} for k, v in truth.items()}
    return truth, [JsonPredictions(name="sloppy", records=sloppy), JsonPredictions(name="halluc", records=halluc),
                   JsonPredictions(name="good", records=good)]


def test_aggregates_and_ranking() -> None:
    truth, preds = _three_models()
    res = score_json(truth, preds)
    # sloppy: every age wrong → accuracy 2/3 (odd records: name, age, city) or 1/2 (even: name, age)
    # halluc: city wrong on odd records, hallucinated on even ones, plus an extra key everywhere
    assert res.ranking == ("good", "halluc", "sloppy")
    good, halluc, sloppy = (res.models[m] for m in res.ranking)
    assert good.rqs == {"mean": 0.85, "median": 0.85, "min": 0.85, "max": 0.85} and good.rank == 1
    assert sloppy.accuracy == pytest.approx((2 / 3 + 1 / 2) / 2) and sloppy.fields["age"].accuracy == 0.0
    assert sloppy.rqs["mean"] == pytest.approx(0.45 * 7 / 12 + 0.25 + 0.15)
    assert halluc.hallucination == pytest.approx((1 / 4 + 2 / 4) / 2)
    assert sloppy.fields["name"].accuracy == 1.0
    per = [halluc.record(f"r{i}").rqs for i in range(6)]
    assert halluc.rqs["mean"] == pytest.approx(float(np.mean(per)))
    assert halluc.rqs["median"] == pytest.approx(float(np.median(per)))
    assert (halluc.rqs["min"], halluc.rqs["max"]) == (min(per), max(per))
    assert halluc.buckets["extra_keys"] == 6 and halluc.buckets["gt_null_aio_has_value"] == 3
    assert sum(r.hallucination for r in halluc.records()) / 6 == pytest.approx(halluc.hallucination)
    d = res.to_dict()
    assert list(d["models"]) == ["good", "halluc", "sloppy"]
    assert d["models"]["halluc"]["buckets"]["extra_keys"] == 6
    assert len(d["models"]["good"]["records"]) == 6 and d["records_included"]
    assert "records" not in res.to_dict(include_records=False)["models"]["good"]


def test_ranking_tie_breaks_on_accuracy_completeness_hallucination_then_name() -> None:
    truth = {"r": {"a": "x"}}
    same = {"r": {"a": "x"}}
    res = score_json(truth, [JsonPredictions(name="b", records=same), JsonPredictions(name="a", records=same)])
    assert res.ranking == ("a", "b")
    # equal RQS (clamped to 1.0 for both) but different hallucination → lower hallucination first
    cfg = JsonConfig(weights=RQSWeights(accuracy=1, completeness=1, hallucination=0.1, safety=1))
    res = score_json(truth, [JsonPredictions(name="a", records={"r": {"a": "x", "z": 1}}), JsonPredictions(name="b", records=same)], config=cfg)
    assert res.models["a"].rqs["mean"] == res.models["b"].rqs["mean"] == 1.0
    assert res.ranking == ("b", "a")


def test_order_independence() -> None:
    truth, preds = _three_models()
    base = score_json(truth, preds).to_dict()
    rng = random.Random(3)
    for _ in range(3):
        items = list(truth.items())
        rng.shuffle(items)
        t2 = {k: dict(rng.sample(list(v.items()), len(v))) for k, v in items}
        p2 = []
        for p in rng.sample(preds, len(preds)):
            recs = list(p.records.items())
            rng.shuffle(recs)
            p2.append(JsonPredictions(name=p.name, records={k: dict(rng.sample(list(v.items()), len(v))) for k, v in recs}))
        assert score_json(t2, p2).to_dict() == base


def test_frames_for_artifacts() -> None:
    fuzzy, semantic = seed_backends()
    res = score_json({"w": SEED_GT}, [JsonPredictions(name="m", records={"w": SEED_AIO})], config=JsonConfig(strategies=SEED_CONFIG),
                     similarity=semantic, fuzzy_similarity=fuzzy)
    cells = res.cells_frame()
    assert dict(zip(cells["key"], cells["bucket"])) == {
        "bio": "both_non_null", "email": "both_non_null", "extra_field": "extra_keys",
        "internal_id": "gt_null_aio_has_value", "name": "both_non_null", "status": "aio_missing_or_null",
    }
    recs = res.records_frame()
    assert recs.loc[0, "rqs"] == 0.7375 and recs.loc[0, "extra_keys"] == 1
    fields = res.fields_frame()
    assert set(fields["field"]) == {"bio", "email", "extra_field", "internal_id", "name", "status"}
    assert res.config["semantic_backend"] == "seed-llm"


def test_default_semantic_backend_is_labelled_lexical() -> None:
    res = score_json({"r": {"bio": "a"}}, [JsonPredictions(name="m", records={"r": {"bio": "b"}})])
    assert res.config["semantic_backend"] == "lexical"
    assert res.config["similarity"]["semantic"]["kind"] == "lexical"
    assert "not semantic" in res.config["similarity"]["semantic"]["description"]
    assert res.config["null_tokens"] == sorted(Normalizer().config.null_tokens)


@pytest.mark.parametrize("flatten", [False, True])
def test_equal_by_python_but_different_types_are_not_equal(flatten) -> None:
    # True == 1 and False == 0 in Python, so the shortcut for predictions equal to their truth
    # must still see that a boolean is not a number
    gt = {"a": True, "b": 1, "c": {"d": [0, False]}, "e": 1.0, "f": "x"}
    aio = {"a": 1, "b": True, "c": {"d": [False, 0]}, "e": 1, "f": "x"}
    assert gt == aio
    r = compare_json(gt, aio, config=JsonConfig(flatten=flatten))
    if flatten:
        assert r.mismatched == ("a", "b", "c.d[0]", "c.d[1]")
        assert r.scored == 6
    else:
        assert r.mismatched == ("a", "b", "c")
    assert compare_json(gt, dict(gt), config=JsonConfig(flatten=flatten)).accuracy == 1.0


def test_pending_and_error_records_are_excluded_from_aggregates() -> None:
    truth = {"r1": {"a": 1}, "r2": {"a": 2}, "r3": {"a": 3}}
    preds = {"r1": {"a": 1}, "r2": {"b": 9}, "r3": {}}
    res = score_json(truth, [JsonPredictions(name="m", records=preds, status={"r2": "pending", "r3": "ERROR", "r1": "ok"})])
    m = res.models["m"]
    assert m.excluded_records == 2
    assert m.rqs == {"mean": 0.85, "median": 0.85, "min": 0.85, "max": 0.85}
    assert m.buckets["extra_keys"] == 0 and m.fields["a"].scored == 1
    assert m.record("r2").flags == ("excluded:pending",) and m.record("r3").flags == ("excluded:error",)
    assert any("left out of its aggregates" in w for w in res.warnings)
    with pytest.raises(InputError, match=r"record 'r1': `status` must be one of ok, pending, error"):
        score_json(truth, [JsonPredictions(name="m", records=preds, status={"r1": "done"})])


def test_chunked_scoring_equals_one_chunk(monkeypatch) -> None:
    import extracteval.tasks.json.counting as jc  # where records are cut into chunks

    rng = random.Random(9)
    truth, preds_a, preds_b = {}, {}, {}
    for i in range(23):
        t = {"name": f"N{i % 4}", "age": i % 3, "ok": i % 2 == 0, "addr": {"city": ["Paris", "Lyon"][i % 2]}}
        if i > 15:  # paths that only appear in later chunks
            t["late"] = {"items": [{"sku": f"S{i}"}, {"sku": None}]}
        truth[f"r{i:02d}"] = t
        preds_a[f"r{i:02d}"] = dict(t) if rng.random() < 0.5 else {**t, "age": i, "extra": [1], "ok": 1}
        preds_b[f"r{i:02d}"] = {"name": f"n{i % 4}x"} if i % 5 else "refused"
    preds = [JsonPredictions(name="a", records=preds_a, status={"r03": "error"}), JsonPredictions(name="b", records=preds_b)]
    for flatten in (False, True):
        cfg = JsonConfig(flatten=flatten, strategies={"name": "FUZZY", "late.items[*].sku": "EXACT"})
        whole = score_json(truth, preds, config=cfg)
        monkeypatch.setattr(jc, "_CHUNK", 4)
        chunked = score_json(truth, preds, config=cfg)
        monkeypatch.setattr(jc, "_CHUNK", 10_000)
        assert chunked.to_dict(include_records=True) == whole.to_dict(include_records=True)
        assert chunked.cells_frame().equals(whole.cells_frame())
        assert chunked.fields_frame().equals(whole.fields_frame())
