"""Hypothesis properties of the `json` task."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.json.semantics import BUCKETS, JsonConfig, JsonPredictions, compare_json, score_json

KEYS = st.sampled_from(["name", "email", "age", "city", "notes", "tags", "addr"])
SCALARS = st.one_of(
    st.none(), st.just(""), st.just("N/A"), st.integers(-5, 5), st.booleans(),
    st.sampled_from(["Paris", "paris ", "Berlin", "2024-01-05", "January 5, 2024", "a@b.co", "Acme Corp", "ACME corp."]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=6)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=6)
STRATS = st.dictionaries(KEYS, st.sampled_from(["EXACT", "FUZZY", "SEMANTIC", "IGNORE"]), max_size=3)


class Halfway:
    """A deterministic stand-in for a similarity backend (no sklearn import in the property loop)."""

    name = "halfway"

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        return np.array([1.0 if x == y else (0.9 if x[:3] == y[:3] else 0.1) for x, y in zip(a, b)])


SIM = Halfway()


@settings(max_examples=150, deadline=None)
@given(OBJECTS, OBJECTS, st.booleans(), STRATS)
def test_metrics_in_unit_interval(gt, aio, flatten, strategies) -> None:
    r = compare_json(gt, aio, config=JsonConfig(flatten=flatten, strategies=strategies), similarity=SIM)
    for v in (r.completeness, r.hallucination, r.accuracy, r.rqs):
        assert 0.0 <= v <= 1.0
    # bucket identities of seed 001
    assert set(r.buckets["gt_non_null"]) == set(r.buckets["both_non_null"]) | set(r.buckets["aio_missing_or_null"])
    assert not set(r.buckets["both_non_null"]) & set(r.buckets["aio_missing_or_null"])
    halluc = len(r.buckets["extra_keys"]) + len(r.buckets["gt_null_aio_has_value"])
    assert r.hallucination == (halluc / r.total_keys if r.total_keys else 0.0)


@settings(max_examples=150, deadline=None)
@given(OBJECTS, OBJECTS, st.booleans())
def test_perfect_prediction(gt, _unused, flatten) -> None:
    r = compare_json(gt, gt, config=JsonConfig(flatten=flatten), similarity=SIM)
    assert (r.completeness, r.hallucination, r.accuracy) == (1.0, 0.0, 1.0)
    assert r.rqs == 0.85  # 0.45 + 0.25 + 0.15 · safety 1.0


@settings(max_examples=150, deadline=None)
@given(OBJECTS, OBJECTS, st.text(min_size=1, max_size=5), VALUES, st.booleans())
def test_extra_predicted_key_never_lowers_hallucination(gt, aio, extra_key, extra_value, flatten) -> None:
    extra_key = "zz_" + extra_key  # not a truth key
    before = compare_json(gt, aio, config=JsonConfig(flatten=flatten), similarity=SIM).hallucination
    after = compare_json(gt, {**aio, extra_key: extra_value}, config=JsonConfig(flatten=flatten), similarity=SIM).hallucination
    assert after >= before


@settings(max_examples=150, deadline=None)
@given(OBJECTS, OBJECTS, KEYS, VALUES, VALUES, st.booleans())
def test_ignore_fields_never_change_accuracy(gt, aio, key, v1, v2, flatten) -> None:
    cfg = JsonConfig(flatten=flatten, strategies={key: "IGNORE"})
    a = compare_json({**gt, key: v1}, {**aio, key: v1}, config=cfg, similarity=SIM)
    b = compare_json({**gt, key: v1}, {**aio, key: v2}, config=cfg, similarity=SIM)
    assert a.accuracy == b.accuracy
    # and equals the accuracy with the field removed on both sides
    c = compare_json({k: v for k, v in gt.items() if k != key}, {k: v for k, v in aio.items() if k != key}, config=cfg, similarity=SIM)
    assert a.accuracy == c.accuracy


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(OBJECTS, OBJECTS), min_size=2, max_size=8), st.integers(1, 7), st.booleans())
def test_bucket_counts_merge_across_chunks(pairs, cut, flatten) -> None:
    """score(a ∪ b) = score(a) + score(b) at the ledger level: summed bucket counts add up and
    per-record values do not depend on which other records are scored with them."""
    cut = min(cut, len(pairs) - 1)
    truth = {f"r{i}": gt for i, (gt, _) in enumerate(pairs)}
    preds = {f"r{i}": aio for i, (_, aio) in enumerate(pairs)}
    cfg = JsonConfig(flatten=flatten)

    def run(ids: list[str]):
        return score_json({i: truth[i] for i in ids}, [JsonPredictions(name="m", records={i: preds[i] for i in ids})],
                          config=cfg, similarity=SIM).models["m"]

    ids = sorted(truth)
    whole, a, b = run(ids), run(ids[:cut]), run(ids[cut:])
    for bucket in BUCKETS:
        assert whole.buckets[bucket] == a.buckets[bucket] + b.buckets[bucket]
    assert whole.scored == a.scored + b.scored and whole.matched == a.matched + b.matched
    merged = {r.record_id: r.rqs for r in a.records() + b.records()}
    assert {r.record_id: r.rqs for r in whole.records()} == merged
