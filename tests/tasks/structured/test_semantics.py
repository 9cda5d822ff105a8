"""The structured task: parsing tolerance, flattening, field counts, list matching, properties."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.structured.semantics import (
    StructuredConfig,
    StructuredCounts,
    flatten,
    parse_json_output,
    score_structured,
    score_structured_record,
)
from extracteval.errors import InputError


def test_seed_004_flattening_example() -> None:
    doc = {"user": {"name": "Alice", "age": 30}, "items": ["a", "b"]}
    assert flatten(doc) == {"user.name": "Alice", "user.age": 30, "items[0]": "a", "items[1]": "b"}


def test_wrong_value_counts_fp_and_fn() -> None:
    r = score_structured_record({"user": {"name": "Alice", "age": 30}}, '{"user": {"name": "Alice", "age": 31}}')
    assert (r.tp, r.fp, r.fn, r.exact, r.valid) == (1, 1, 1, False, True)


def test_missing_and_extra_fields() -> None:
    r = score_structured_record({"a": 1, "b": 2}, '{"a": 1, "c": 3}')
    assert (r.tp, r.fp, r.fn) == (1, 1, 1)
    assert r.fields == {"a": (1, 0, 0), "b": (0, 0, 1), "c": (0, 1, 0)}


def test_invalid_json_is_counted_never_raised() -> None:
    r = score_structured_record({"a": 1, "b": {"c": 2}}, '{"a": 1, "b": ')
    assert (r.valid, r.tp, r.fp, r.fn, r.exact) == (False, 0, 0, 2, False)
    assert r.error and "not valid JSON" in r.error


@pytest.mark.parametrize("raw", [
    '```json\n{"a": 1}\n```',
    'Here is the JSON you asked for:\n{"a": 1}',
    'Sure!\n```\n{"a": 1}\n```\nLet me know if you need more.',
    '{"a": 1} I hope this helps',
])
def test_fences_and_prose_are_tolerated_and_reported(raw: str) -> None:
    p = parse_json_output(raw)
    assert p.ok and p.extracted and p.value == {"a": 1}
    r = score_structured_record({"a": 1}, raw)
    assert r.valid and r.extracted and r.exact


def test_exact_match_is_on_canonical_json() -> None:
    assert score_structured_record({"a": 1, "b": [1, 2]}, '{"b": [1, 2.0], "a": 1.0}').exact
    assert not score_structured_record({"a": 1}, '{"a": "1"}').exact
    assert not score_structured_record({"a": 1}, '{"a": 1, "b": null}').exact  # structure differs…
    r = score_structured_record({"a": 1}, '{"a": 1, "b": null}')
    assert (r.tp, r.fp, r.fn) == (1, 0, 0)  # …but a null leaf is absent for field counting


def test_ten_thousand_deep_nesting_does_not_raise() -> None:
    depth = 10_000
    text = '{"a": ' * depth + "1" + "}" * depth
    obj = {"a": 1}
    for _ in range(depth - 1):
        obj = {"a": obj}
    r = score_structured_record(obj, text)
    assert (r.valid, r.exact, r.tp, r.fp, r.fn) == (True, True, 1, 0, 0)
    lists = "[" * depth + "]" * depth
    assert parse_json_output(lists).ok
    assert score_structured_record([[1]], lists).valid
    deep_fenced = parse_json_output("```json\n" + text + "\n```")
    assert deep_fenced.ok and deep_fenced.extracted


def test_positional_vs_optimal_list_matching() -> None:
    ref = {"items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]}
    out = json.dumps({"items": [{"sku": "B", "qty": 2}, {"sku": "A", "qty": 1}]})
    pos = score_structured_record(ref, out)
    assert (pos.tp, pos.fp, pos.fn) == (0, 4, 4)
    opt = score_structured_record(ref, out, config=StructuredConfig(list_matching="optimal"))
    assert (opt.tp, opt.fp, opt.fn) == (4, 0, 0)
    extra = json.dumps({"items": [{"sku": "C", "qty": 9}, {"sku": "B", "qty": 2}, {"sku": "A", "qty": 1}]})
    r = score_structured_record(ref, extra, config=StructuredConfig(list_matching="optimal"))
    assert (r.tp, r.fp, r.fn) == (4, 2, 0)
    nested = {"orders": [{"lines": ["x", "y"]}, {"lines": ["z"]}]}
    r = score_structured_record(nested, json.dumps({"orders": [{"lines": ["z"]}, {"lines": ["y", "x"]}]}), config=StructuredConfig(list_matching="optimal"))
    assert (r.tp, r.fp, r.fn) == (3, 0, 0)


def test_normalized_value_match() -> None:
    cfg = StructuredConfig(value_match="normalized")
    r = score_structured_record({"name": "Alice Smith", "total": 1000, "date": "2024-01-05"}, '{"name": "alice  smith", "total": "1,000", "date": "January 5, 2024"}', config=cfg)
    assert (r.tp, r.fp, r.fn) == (3, 0, 0)


def test_config_validation_lists_allowed_values() -> None:
    with pytest.raises(InputError, match="positional, optimal"):
        StructuredConfig(list_matching="greedy")


def test_run_metrics_and_missing_outputs() -> None:
    truth = {"1": {"a": 1}, "2": {"a": 2, "b": 3}, "3": {"a": 3}}
    preds = {"m": {"1": '{"a": 1}', "2": '```json\n{"a": 2, "b": 4}\n```'}}
    res = score_structured(truth, preds)
    m = res.models["m"].metrics
    assert m["json_valid_rate"] == pytest.approx(2 / 3)
    assert m["json_extracted_rate"] == pytest.approx(1 / 3)
    assert m["exact_match_rate"] == pytest.approx(1 / 3)
    assert (m["field_precision"], m["field_recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 4))
    assert res.models["m"].missing_ids == ("3",)


class HalfBackend:
    name = "half"

    def similarity(self, a: list[str], b: list[str]) -> np.ndarray:
        return np.array([1.0 if x == y else 0.5 for x, y in zip(a, b)])


def test_extended_metrics_with_an_injected_backend() -> None:
    truth = {"1": {"a": 1}, "2": {"a": 2}}
    res = score_structured(truth, {"m": {"1": '{"a": 1}', "2": '{"a": 3}'}}, similarity={"semantic_similarity": HalfBackend()})
    e = res.models["m"].extended["semantic_similarity"]
    assert (e.mean, e.pass_rate, e.scored) == (0.75, 0.5, 2)


def test_progress_callback_sees_running_metrics() -> None:
    seen = []
    score_structured({"1": {"a": 1}, "2": {"a": 2}}, {"m": {"1": '{"a": 1}', "2": "nope"}}, progress=lambda *a: seen.append(a))
    assert [(d, n, m) for d, n, m, _ in seen] == [(1, 2, "m"), (2, 2, "m")]
    assert seen[-1][3]["json_valid_rate"] == 0.5 and seen[-1][3]["exact_match_rate"] == 0.5


# --------------------------------------------------------------------------------------------
# properties

leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y", "Paris"]))
doc = st.recursive(leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), c, max_size=3)), max_leaves=8)
obj = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), doc, max_size=4)


def _mutate(o, rnd: random.Random):
    s = json.dumps(o)
    k = rnd.random()
    if k < 0.2:
        return s[: rnd.randint(0, len(s))]
    if k < 0.4:
        return f"```json\n{s}\n```"
    return s


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(obj, obj), min_size=1, max_size=6), st.sampled_from(["positional", "optimal"]), st.randoms(use_true_random=False))
def test_counts_merge_bounded_f1_order_independent(pairs, lm, rnd) -> None:
    cfg = StructuredConfig(list_matching=lm)
    truth = {str(i): t for i, (t, _) in enumerate(pairs)}
    preds = {str(i): _mutate(p, rnd) for i, (_, p) in enumerate(pairs)}
    res = score_structured(truth, {"m": preds}, config=cfg)
    total = res.models["m"].counts
    assert sum((score_structured_record(truth[i], preds[i], config=cfg).counts() for i in truth), StructuredCounts()) == total
    m = res.models["m"].metrics
    assert all(0.0 <= v <= 1.0 for v in m.values())
    if m["field_precision"] + m["field_recall"] > 0:
        assert m["field_f1"] == pytest.approx(2 * m["field_precision"] * m["field_recall"] / (m["field_precision"] + m["field_recall"]))
    items = list(preds.items())
    rnd.shuffle(items)
    res2 = score_structured(dict(reversed(list(truth.items()))), {"m": dict(items)}, config=cfg)
    assert res2.models["m"].counts == total and res2.to_dict() == res.to_dict()


@settings(max_examples=50, deadline=None)
@given(st.lists(obj, min_size=1, max_size=5), st.sampled_from(["positional", "optimal"]))
def test_perfect_prediction_scores_one(docs, lm) -> None:
    truth = {str(i): d for i, d in enumerate(docs)}
    res = score_structured(truth, {"m": {k: json.dumps(v) for k, v in truth.items()}}, config=StructuredConfig(list_matching=lm))
    m = res.models["m"].metrics
    assert m["json_valid_rate"] == m["exact_match_rate"] == 1.0
    if res.models["m"].counts.tp:
        assert m["field_f1"] == 1.0


def test_optimal_prefers_more_shared_leaves_over_more_pairs() -> None:
    ref = {"items": [{"a": 1, "b": 2, "c": 3, "d": 4}, {"e": 5}]}
    # pred[0] shares 4 leaves with ref[0]; pairing both items (ref0-pred1, ref1-pred0) would share 2
    pred = {"items": [{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}, {"a": 1}]}
    r = score_structured_record(ref, json.dumps(pred), config=StructuredConfig(list_matching="optimal"))
    assert r.tp == 4


flat_item = st.fixed_dictionaries({}, optional={"sku": st.sampled_from(["A", "B"]), "qty": st.integers(1, 3), "ok": st.booleans()})


@settings(max_examples=80, deadline=None)
@given(st.lists(flat_item, max_size=5), st.lists(flat_item, max_size=5), st.randoms(use_true_random=False))
def test_optimal_list_counts_do_not_depend_on_item_order(ref_items, pred_items, rnd) -> None:
    cfg = StructuredConfig(list_matching="optimal")
    a = score_structured_record({"items": ref_items}, json.dumps({"items": pred_items}), config=cfg)
    shuffled = list(pred_items)
    rnd.shuffle(shuffled)
    b = score_structured_record({"items": ref_items}, json.dumps({"items": shuffled}), config=cfg)
    assert (a.tp, a.fp, a.fn) == (b.tp, b.fp, b.fn)
