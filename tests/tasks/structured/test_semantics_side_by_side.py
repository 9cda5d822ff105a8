"""A run under the default options reads each reference's shape once and compares an output with
its reference side by side, flattening only the items that differ; it keeps the records as
columns. None of that changes a verdict: every record of a run equals the per-record path's
(`score_structured_record`, which flattens both documents whole), and so do the summed counts
and the per-field table."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.structured.semantics import (StructuredConfig, StructuredCounts, StructuredRecords, record_columns, flat_keys, generic_path,
                                                    score_structured, score_structured_record)
from extracteval.tasks.structured.counting import compare_flat, reference_walk

_leaf = st.one_of(
    st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, -0.0, 0.5, 1e16, 10**16, 2**63, 2**70, float("nan"), float("inf")]),
    st.sampled_from(["", "a", "true", "1", "x\"y", "é"]), st.none(), st.just({}), st.just([]),
)
_keys = st.sampled_from(["a", "b", "c.d", "e f", "1"])
_doc = st.recursive(_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(_keys, c, max_size=3), max_leaves=10)


def _mutate(draw, doc):
    """The document with a few of its items changed, dropped, added or retyped."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            act = draw(st.integers(0, 6))
            if act == 0:
                continue  # dropped
            out[k] = draw(_leaf) if act == 1 else _mutate(draw, v) if act == 2 else v
        if draw(st.booleans()):
            out[draw(_keys)] = draw(_doc)
        return out
    if isinstance(doc, list):
        out_l = [_mutate(draw, v) if draw(st.integers(0, 3)) == 0 else v for v in doc]
        act = draw(st.integers(0, 5))
        if act == 0 and out_l:
            out_l.pop()
        elif act == 1:
            out_l.append(draw(_doc))
        elif act == 2:
            out_l.reverse()
        return out_l
    act = draw(st.integers(0, 5))
    if act == 0:
        return draw(_leaf)
    if act == 1 and isinstance(doc, bool):
        return int(doc)
    if act == 2 and type(doc) is int and doc in (0, 1):
        return bool(doc)
    if act == 3 and type(doc) in (int, float) and not math.isnan(doc) and not math.isinf(doc) and abs(doc) < 1e300:
        return float(doc)
    return doc


@st.composite
def _runs(draw):
    shapes = draw(st.lists(_doc, min_size=1, max_size=3))
    truth, outputs = {}, {}
    for n in range(draw(st.integers(1, 8))):
        ref = shapes[n % len(shapes)] if draw(st.booleans()) else draw(_doc)
        out = ref if draw(st.integers(0, 3)) == 0 else _mutate(draw, ref)
        text = json.dumps(out, indent=draw(st.sampled_from([None, 1])))
        wrap = draw(st.integers(0, 9))
        if wrap == 0:
            text = f"```json\n{text}\n```"
        elif wrap == 1:
            text = text[: len(text) // 2]
        elif wrap == 2:
            text = f"Here it is: {text} — done"
        truth[str(n)] = ref
        if wrap != 3:
            outputs[str(n)] = text
    return truth, outputs


def _check(truth, outputs) -> None:
    res = score_structured(truth, {"m": outputs})
    recs = res.records["m"]
    assert isinstance(recs, StructuredRecords) and len(recs) == len(truth)
    total = StructuredCounts()
    for rec in recs:
        want = (score_structured_record(truth[rec.id], outputs[rec.id], rid=rec.id) if rec.id in outputs else None)
        got = (rec.valid, rec.extracted, rec.exact, rec.tp, rec.fp, rec.fn)
        if want is None:
            assert got == (False, False, False, 0, 0, sum(1 for k in flat_keys(truth[rec.id]).values() if k[0] != "\x00"))
            assert rec.error == "no output for this id"
        else:
            assert got == (want.valid, want.extracted, want.exact, want.tp, want.fp, want.fn), (truth[rec.id], outputs[rec.id])
            assert rec.error == want.error
        total = total + rec.counts()
    assert res.models["m"].counts == total
    cols, mat = res.count_matrix("m")
    assert mat.tolist() == [[getattr(r.counts(), c) for c in cols] for r in recs]
    assert res.per_record("exact")["m"].tolist() == [float(r.exact) for r in recs]
    assert res.per_record("valid")["m"].tolist() == [float(r.valid) for r in recs]
    names = ("id", "valid", "extracted", "exact", "tp", "fp", "fn", "error")
    assert record_columns(recs) == record_columns(tuple(recs)) == {n: [getattr(r, n) for r in recs] for n in names}


@settings(max_examples=400, deadline=None)
@given(_runs())
def test_random_runs_agree_with_the_per_record_path(run) -> None:
    truth, outputs = run
    _check(truth, outputs)


@settings(max_examples=150, deadline=None)
@given(_runs())
def test_random_runs_count_the_same_fields(run) -> None:
    truth, outputs = run
    got = {g: [v["tp"], v["fp"], v["fn"]] for g, v in score_structured(truth, {"m": outputs}).models["m"].fields.items()}
    want: dict[str, list[int]] = {}
    for i, ref in truth.items():
        rec = score_structured_record(ref, outputs.get(i), rid=i) if i in outputs else None
        acc: dict[str, list[int]] = {}
        if rec is None or not rec.valid:
            compare_flat(flat_keys(ref), {}, acc)
        else:
            acc = {g: list(c) for g, c in rec.fields.items()}
        for g, c in acc.items():
            slot = want.setdefault(g, [0, 0, 0])
            for k in range(3):
                slot[k] += c[k]
    assert {g: c for g, c in got.items() if any(c)} == {g: c for g, c in want.items() if any(c)}


SHARED_SHAPE = [
    # references of one shape, outputs differing in one item each
    ({"a": {"b": True, "c": [1, 2]}, "d": "x"}, '{"a": {"b": 1, "c": [1, 2]}, "d": "x"}'),
    ({"a": {"b": True, "c": [1, 2]}, "d": "y"}, '{"a": {"b": true, "c": [1, 2.0]}, "d": "y"}'),
    ({"a": {"b": False, "c": [3, 4]}, "d": "z"}, '{"a": {"b": false, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": False, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 0, "c": [3, 4]}, "d": "z", "e": null}'),
    ({"a": {"b": None, "c": [3, 4]}, "d": "z"}, '{"a": {"c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": float("nan"), "c": [3, 4]}, "d": "z"}, '{"a": {"b": null, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": float("nan"), "c": [3, 4]}, "d": "z"}, '{"a": {"b": NaN, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": 1.5, "c": []}, "d": "z"}, '{"a": {"b": 1.5, "c": {}}, "d": "z"}'),
    ({"a": {"b": 1.5, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 1.5, "c": [4, 3]}, "d": "z"}'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 123456789012345678901234567890, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": 1e15, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 1000000000000000, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": 2**70, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 1180591620717411303424, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": float("inf"), "c": [3, 4]}, "d": "z"}, '{"a": {"b": null, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": None, "c": [3, 4]}, "d": "z"}, '{"a": {"b": Infinity, "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": None, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": Infinity, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": (1, 2), "c": [3, 4]}, "d": "z"}, '{"a": {"b": [1, 2], "c": [3, 4]}, "d": "z"}'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '[{"a": 1}]'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '"text"'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, "{}"),
    ([{"b": True}, {"b": 2}], '[{"b": 1}, {"b": 2}, {"b": 3}]'),
    ([{"b": True}, {"b": 2}], '[{"b": true}]'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '{"a": {"b": 1, "c": [3, 4]}, "d": "z", "d": "y"}'),
    # fenced outputs: the first fence orjson reads, else every rule of `parse_json_output`
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": 1, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": 123456789012345678901234567890, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": 2**70, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": 1180591620717411303424, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": 2**70, "c": [3, 4]}, "d": "z"}, '```\n1180591620717411303424\n```'),
    ({"a": {"b": None, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": NaN, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```\n\n```\n```json\n{"a": {"b": 1, "c": [3, 4]}, "d": "z"}\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n{"a": {"b": 1\n```\n```json\n{"d": "z"}\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n{"a": 1} trailing\n``` then {"d": "z"}'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n[1, 2\n``` then {"d": "z"}'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n"z"\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '```json\n```'),
    ({"a": {"b": 1, "c": [3, 4]}, "d": "z"}, '``` {"d": "z"}'),
]


def test_references_of_one_shape_agree() -> None:
    truth = {str(n): ref for n, (ref, _) in enumerate(SHARED_SHAPE)}
    outputs = {str(n): raw for n, (_, raw) in enumerate(SHARED_SHAPE)}
    _check(truth, outputs)


@pytest.mark.parametrize("depth", [300, 700, 3000])
def test_deep_documents_differing_deep_down_agree(depth) -> None:
    ref: object = {"flag": True, "n": 1}
    for _ in range(depth):
        ref = {"a": ref, "b": [1, "x"]}
    raw = '{"a": ' * depth + '{"flag": true, "n": 2}' + ', "b": [1, "x"]}' * depth
    _check({"1": ref, "2": ref}, {"1": raw, "2": raw.replace('"n": 2', '"n": 1')})


def test_records_read_as_records() -> None:
    res = score_structured({"1": {"a": 1}, "2": {"a": 2}, "3": {"a": 3}}, {"m": {"1": '{"a": 1}', "2": '{"a": 5}'}})
    recs = res.records["m"]
    assert [r.id for r in recs] == ["1", "2", "3"] and recs[-1].id == "3" and [r.id for r in recs[1:]] == ["2", "3"]
    assert recs[0].exact and not recs[1].exact and recs[2].error == "no output for this id"
    assert recs == tuple(recs) and recs == list(recs) and recs != tuple(recs)[:2]
    with pytest.raises(IndexError):
        recs[3]
    assert res.models["m"].invalid_examples == ({"id": "3", "error": "no output for this id", "output": "None"},)


def test_progress_counts_the_records() -> None:
    seen = []
    score_structured({"1": {"a": 1}, "2": {"a": 2}, "3": {"a": 3}}, {"m": {"1": '{"a": 1}', "2": '{"a": 5}'}},
                     progress=lambda done, total, model, rates: seen.append((done, total, model, dict(rates))))
    assert [s[:3] for s in seen] == [(1, 3, "m"), (2, 3, "m"), (3, 3, "m")]
    assert seen[-1][3] == {"json_valid_rate": 2 / 3, "exact_match_rate": 1 / 3}


def test_reference_walk_flags_and_keys() -> None:
    for ref in ({"a": True}, {"a": 10**16}, {"a": None}, {1: "x"}, {"a": [1.5, {"b": []}]}, [float("nan")]):
        keys, flags = reference_walk(ref)
        assert keys == flat_keys(ref)
    assert reference_walk({"a": True})[1] & 1 and reference_walk({"a": 10**16})[1] & 2 and reference_walk({"a": None})[1] & 4


def test_other_options_keep_their_records() -> None:
    res = score_structured({"1": {"a": [1, 2]}}, {"m": {"1": '{"a": [2, 1]}'}}, config=StructuredConfig(list_matching="optimal"))
    assert isinstance(res.records["m"], tuple) and res.records["m"][0].exact
    assert np.array_equal(res.count_matrix("m")[1], [[1, 1, 1, 0, 1, 2, 0, 0]])
    assert generic_path("a[1]") == "a[]"
