"""The exact-document shortcut of `score_structured` never changes a verdict.

Under the default options a run calls an output exact without flattening it when it equals the
reference by Python's `==` — except where `==` equates values whose canonical keys differ
(`True == 1`, `1e16 == 10**16`, `Decimal("1.5") == 1.5`, numpy scalars). Each test compares the
run's records with the per-record path (`score_structured_record`), which always flattens.
"""

from __future__ import annotations

import decimal
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.structured.semantics import flat_keys, score_structured, score_structured_record
from extracteval.tasks.structured.counting import reference_walk

# (reference, raw output) pairs where `==` and the canonical keys may disagree
HAZARDS = [
    ({"a": True}, '{"a": 1}'),
    ({"a": 1}, '{"a": true}'),
    ({"a": False}, '{"a": 0.0}'),
    ({"a": 0}, '{"a": false}'),
    ({"a": True, "b": 2}, '{"a": true, "b": 2}'),
    ({"a": 1e16}, '{"a": 10000000000000000}'),
    ({"a": 10**16}, '{"a": 1e16}'),
    ({"a": 1e19}, '{"a": 10000000000000000000}'),
    ({"a": 10**19}, '{"a": 1e19}'),
    ({"a": 2**70}, '{"a": 1180591620717411303424}'),
    ({"a": decimal.Decimal("1.5")}, '{"a": 1.5}'),
    ({"a": np.int64(1)}, '{"a": 1}'),
    ({"a": np.bool_(True)}, '{"a": 1}'),
    ({"a": np.float64(2.0)}, '{"a": 2}'),
    ({"a": float("inf")}, '{"a": Infinity}'),
    ({"a": float("nan")}, '{"a": NaN}'),
    ({"a": float("nan")}, '{"a": null}'),
    ({"a": None}, '{"a": null}'),
    ({"a": 1.0}, '{"a": 1}'),
    ({"a": -0.0}, '{"a": 0}'),
    ({"a": (1, 2)}, '{"a": [1, 2]}'),
    ({1: "x"}, '{"1": "x"}'),
    ({"a": 1, "b": 2}, '{"b": 2, "a": 1}'),
    ({"a": [True, 1]}, '{"a": [1, true]}'),
    ({"a": "true"}, '{"a": "true"}'),
    ({"a": {}}, '{"a": {}}'),
    ([1, True], "[1, 1]"),
    ({"a": 1}, '```json\n{"a": true}\n```'),
    ({"a": 1}, '```json\n{"a": 1}\n```'),
    ({"a": True}, 'Sure: {"a": 1} done'),
]


def _as_run(reference, raw):
    res = score_structured({"1": reference}, {"m": {"1": raw}})
    return res.records["m"][0]


@pytest.mark.parametrize(("reference", "raw"), HAZARDS)
def test_run_agrees_with_the_per_record_path(reference, raw) -> None:
    got, want = _as_run(reference, raw), score_structured_record(reference, raw, rid="1")
    assert (got.valid, got.extracted, got.exact, got.tp, got.fp, got.fn, got.error) == (
        want.valid, want.extracted, want.exact, want.tp, want.fp, want.fn, want.error)


def test_reference_walk_gives_flat_keys() -> None:
    for reference, _ in HAZARDS:
        assert reference_walk(reference)[0] == flat_keys(reference)


_leaf = st.one_of(
    st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, -0.0, 0.5, 1e16, 10**16, 2**63, float("nan")]),
    st.sampled_from(["", "a", "true", "1"]), st.none(),
)
_doc = st.recursive(_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c.d"]), c, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_doc, _doc, st.booleans())
def test_random_documents_agree(reference, other, same) -> None:
    # an output of the same document or of another one, serialised by json (NaN as NaN)
    raw = json.dumps(reference if same else other)
    got, want = _as_run(reference, raw), score_structured_record(reference, raw, rid="1")
    assert (got.valid, got.exact, got.tp, got.fp, got.fn) == (want.valid, want.exact, want.tp, want.fp, want.fn)


@pytest.mark.parametrize("depth", [300, 2000])
def test_deep_documents_with_a_boolean_agree(depth) -> None:
    # deeper than orjson writes (255 levels) or than Python's recursion limit
    reference: object = {"flag": True}
    for _ in range(depth):
        reference = {"a": reference}
    raw = '{"a": ' * depth + '{"flag": true}' + "}" * depth
    got, want = _as_run(reference, raw), score_structured_record(reference, raw, rid="1")
    assert (got.valid, got.exact, got.tp, got.fp, got.fn) == (want.valid, want.exact, want.tp, want.fp, want.fn)
    assert got.exact
