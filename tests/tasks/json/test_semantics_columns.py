"""The column walk (`_gather_columns`, by batches in `_leaves`) gives exactly the leaves and
canonical-key codes of the per-object walk (`_gather`): booleans next to 1 and 1.0, NaN and
infinities, big integers, empty objects and lists, tuples, other mappings, non-string keys, mixed
types in one field, with and without flattening."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.normalize import Normalizer
from extracteval.tasks.json import leaves  # the walk of objects, its tuning constants included
from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json
from extracteval.tasks.json.leaves import _gather, _gather_columns, _leaves
from extracteval.tasks.json.paths import _KeyTable, _PathTable

# keys as JSON gives them, plus the integer 1 (whose path name "1" collides with the key "1"); not
# True next to 1: equal as dict keys, both walks name such a key by whichever they meet first
KEYS = st.sampled_from(["a", "b", "c.d", "e[0]", "", "name", "1", 1])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([2**53, 2**60, -(2**70), 1.0, 0.0, -0.0, 2.0**60]),
    st.floats(allow_nan=True, allow_infinity=True, width=16),
    st.sampled_from(["x", "X ", "1", "01", "N/A", "true", "2024-01-05", "January 5, 2024", "", "12345", "a@b.co"]),
)


def _values(inner):
    return st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=3),
        st.dictionaries(KEYS, inner, max_size=2).map(MappingProxyType),
    )


VALUES = st.recursive(SCALARS, _values, max_leaves=8)
OBJECTS = st.one_of(st.dictionaries(KEYS, VALUES, max_size=5), st.dictionaries(KEYS, VALUES, max_size=3).map(MappingProxyType))


def _by_object(objs, flatten, table, keys):
    paths, kcodes = array("q"), array("q")
    counts = _gather(objs, flatten, table, keys, paths, kcodes)
    return np.repeat(np.arange(len(objs)), counts), list(paths), list(kcodes)


def _named(table, keys, rec, path, kc) -> list[tuple[int, str, str | None]]:
    return sorted((int(r), table.names[p], keys.keys[k] if k >= 0 else "") for r, p, k in zip(rec, path, kc))


def _mappings(values):
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, Mapping):
            yield v
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


@settings(max_examples=400, deadline=None)
@given(st.lists(OBJECTS, min_size=1, max_size=12), st.booleans())
def test_the_column_walk_gives_the_leaves_of_the_object_walk(objs: list[Mapping], flatten: bool) -> None:
    t1, k1 = _PathTable(), _KeyTable(Normalizer())
    t2, k2 = _PathTable(), _KeyTable(Normalizer())
    expected = _named(t1, k1, *_by_object(objs, flatten, t1, k1))
    # as score_json calls it: by batches (the per-object walk where columns would be tiny)
    assert _named(t2, k2, *_leaves([objs], flatten, t2, k2)[0]) == expected
    # the column walk itself, however small its columns
    slack, leaves._SLACK = leaves._SLACK, 10**9
    try:
        t3, k3 = _PathTable(), _KeyTable(Normalizer())
        found = _gather_columns(objs, flatten, t3, k3)
    finally:
        leaves._SLACK = slack
    if found is None:  # two keys of one object share a path name: `_leaves` walks object by object
        assert any(len(set(map(str, o))) < len(o) for o in _mappings(objs))
        return
    assert _named(t3, k3, *found) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(OBJECTS, min_size=1, max_size=6), min_size=2, max_size=5), st.booleans())
def test_successive_batches_through_the_same_tables(batches: list[list[Mapping]], flatten: bool) -> None:
    # as `_leaves` walks a chunk: one table for every batch, so a field's column is first new, then
    # known whole (looked up at once), then partly new again, in any order
    t1, k1 = _PathTable(), _KeyTable(Normalizer())
    t2, k2 = _PathTable(), _KeyTable(Normalizer())
    slack, leaves._SLACK = leaves._SLACK, 10**9
    try:
        for objs in batches:
            expected = _named(t1, k1, *_by_object(objs, flatten, t1, k1))
            found = _gather_columns(objs, flatten, t2, k2)
            if found is None:
                found = _by_object(objs, flatten, t2, k2)
            assert _named(t2, k2, *found) == expected
    finally:
        leaves._SLACK = slack


def test_a_known_column_then_new_values_then_known_again() -> None:
    table, keys = _PathTable(), _KeyTable(Normalizer())
    # each round's values, and how many fields (f and g.h) then have a column with new values, whose
    # next column is looked up value by value
    rounds = [(["x", "y"], 2), (["y", "x", "x"], 0), (["x", "z", "x"], 2), (["z", "y"], 0), (["y", "z"], 0),
              ([1, 2], 2), ([2, 1], 0), ([2, 3.5], 0)]
    for values, missed in rounds:
        objs = [{"f": v, "g": {"h": v}} for v in values]
        rec, path, kc = _gather_columns(objs, True, table, keys)
        got = sorted((int(r), table.names[p], keys.keys[k]) for r, p, k in zip(rec, path, kc))
        want = sorted((i, name, Normalizer().key(v)) for i, v in enumerate(values) for name in ("f", "g.h"))
        assert got == want, values
        assert len(keys.missed) == missed, values


def test_batches_and_colliding_names(monkeypatch) -> None:
    monkeypatch.setattr(leaves, "_BATCH", 2)
    truth = {f"r{i}": {"a": i % 3 == 0, "b": [1, 1.0, True, None, float("nan")], "c": {"x": i}} for i in range(7)}
    truth["r5"] = {1: "one", "1": "uno", "a": True}  # both keys are the path "1"
    pred = {k: {**v, "a": 1} for k, v in truth.items()}
    cfg = JsonConfig(flatten=True)
    res = score_json(truth, [JsonPredictions(name="m", records=pred)], config=cfg)
    monkeypatch.setattr(leaves, "_BATCH", 1_000)
    ref = score_json(truth, [JsonPredictions(name="m", records=pred)], config=cfg)
    a, b = res.models["m"].records_frame(), ref.models["m"].records_frame()
    assert a.equals(b)
    assert res.models["m"].cells_frame().equals(ref.models["m"].cells_frame())
    assert not math.isnan(res.models["m"].rqs["mean"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.from_regex(r"\A[0-9]{1,20}\Z") | st.sampled_from(["0", "007", "²", "١٢", "1e3", "12 "]), max_size=10),
       st.booleans(), st.booleans())
def test_digit_strings_get_the_normaliser_keys(values: list[str], detect_types: bool, zero_is_null: bool) -> None:
    from extracteval.core.normalize import DEFAULT_NULL_TOKENS, NormalizationConfig

    cfg = NormalizationConfig(detect_types=detect_types, null_tokens=DEFAULT_NULL_TOKENS | ({"0"} if zero_is_null else set()))
    table, reference = _KeyTable(Normalizer(cfg)), Normalizer(cfg)
    for v in values:
        c = table.code(v)
        assert (table.keys[c] if c >= 0 else None) == reference.key(v), v


# keyed by (type, value): True, 1 and 1.0 are one key of a plain dict
SWAPS = {(bool, True): 1, (int, 1): 1.0, (float, 1.0): True, (bool, False): 0.0, (int, 2**60): 2.0**60}


class _List(list):
    """A list subclass: one leaf (its JSON text), not a list of leaves."""


def _twin(value):
    """A copy of `value` equal to it by `==`, with some leaves of another type (True ↔ 1 ↔ 1.0,
    2**60 ↔ 2.0**60, a list ↔ a list subclass), which must not count as the same leaves."""
    if isinstance(value, Mapping):
        return {k: _twin(v) for k, v in value.items()}
    if type(value) is list:
        return _List(_twin(v) for v in value)
    if isinstance(value, (list, tuple)):
        return type(value)(_twin(v) for v in value)
    return SWAPS.get((type(value), value), value) if type(value) in (bool, int, float) else value


@settings(max_examples=200, deadline=None)
@given(st.lists(OBJECTS, min_size=1, max_size=8), st.lists(st.integers(0, 2), min_size=8, max_size=8), st.booleans())
def test_predictions_equal_to_their_truth_score_as_if_walked(objs, kinds, flatten) -> None:
    """A prediction `==` its truth takes the truth's codes only when its leaves have the same types:
    the scores are those of walking every prediction."""
    truth = {f"r{i}": o for i, o in enumerate(objs)}
    pred = {f"r{i}": (o if k == 0 else _twin(o) if k == 1 else {"z": 1}) for (i, o), k in zip(enumerate(objs), kinds)}
    _assert_scored_as_if_walked(truth, pred, flatten)


def _assert_scored_as_if_walked(truth, pred, flatten) -> None:
    cfg = JsonConfig(flatten=flatten)
    fast = score_json(truth, [JsonPredictions(name="m", records=pred)], config=cfg).models["m"]
    saved = leaves._dumps
    leaves._dumps = None  # every prediction walked
    try:
        walked = score_json(truth, [JsonPredictions(name="m", records=pred)], config=cfg).models["m"]
    finally:
        leaves._dumps = saved
    assert fast.records_frame().equals(walked.records_frame())
    assert fast.cells_frame().equals(walked.cells_frame())


STR_KEYS = st.sampled_from(["a", "b", "c.d", "", "name", "1"])
STR_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(STR_KEYS, inner, max_size=3),
                            st.dictionaries(STR_KEYS, inner, max_size=2).map(MappingProxyType)),
    max_leaves=8,
)
STR_OBJECTS = st.dictionaries(STR_KEYS, STR_VALUES, max_size=5)


def _partly(obj, choices):
    """A prediction that keeps some of its truth's top-level values as they are (the same objects
    or equal copies), twins others (equal by `==`, other types inside), replaces or drops some, adds
    a key, and may list its keys in another order."""
    out = {}
    for (k, v), c in zip(obj.items(), choices):
        if c == 0:
            out[k] = v
        elif c == 1:
            out[k] = _twin(v)
        elif c == 2:
            out[k] = [v, 1] if v is not None else {"x": 1}
        elif c == 3:
            out[k] = {kk: vv for kk, vv in v.items()} if isinstance(v, Mapping) else list(v) if isinstance(v, (list, tuple)) else v
        # 4: dropped
    if choices[-1] % 2:
        out["added"] = {"n": [1, None]}
    return dict(reversed(out.items())) if choices[0] % 2 else out


@settings(max_examples=300, deadline=None)
@given(st.lists(STR_OBJECTS | OBJECTS, min_size=1, max_size=8),
       st.lists(st.lists(st.integers(0, 4), min_size=6, max_size=6), min_size=8, max_size=8), st.booleans())
def test_predictions_partly_equal_to_their_truth_score_as_if_walked(objs, choices, flatten) -> None:
    """A prediction's top-level objects and lists exactly its truth's take the truth's leaves
    (the rest is walked): the scores are those of walking every prediction whole."""
    truth = {f"r{i}": o for i, o in enumerate(objs)}
    pred = {f"r{i}": _partly(o, c) for (i, o), c in zip(enumerate(objs), choices)}
    _assert_scored_as_if_walked(truth, pred, flatten)


def test_objects_and_lists_equal_to_the_truths_are_taken_from_them() -> None:
    """Which top-level values `_leaves` takes from the truth rather than walking: equal objects and
    lists of the same types, not a twin with 1 for true, nor anything after a key that is not a string."""
    truth = [{"a": {"x": 1, "y": [True, "s"]}, "b": [1.5, {"z": None}], "c": "same", "d": {"k": 1}}] * 40
    pred = [{"a": {"x": 1, "y": [True, "s"]}, "b": [1.5, {"z": None}], "c": "other", "d": {"k": True}}] * 40
    table, keys = _PathTable(), _KeyTable(Normalizer())
    leaves._walk(truth, True, table, keys)
    kept: list = []
    rec, path, kc = leaves._walk(pred, True, table, keys, truth, kept)
    assert sorted(table.names[cc] for _, cc in kept) == ["a", "b"]
    assert all(len(at) == 40 for at, _ in kept)
    assert sorted({table.names[p] for p in path}) == ["c", "d.k"]  # only these are walked
    t2, k2 = _PathTable(), _KeyTable(Normalizer())
    t2.odd_keys = True  # a key that is not a string was met: nothing is taken
    leaves._walk(truth, True, t2, k2)
    kept.clear()
    leaves._walk(pred, True, t2, k2, truth, kept)
    assert kept == []
    # and the whole: the same leaves as walking the predictions object by object
    t3, k3 = _PathTable(), _KeyTable(Normalizer())
    got = _leaves([truth, pred], True, t3, k3)[1]
    t4, k4 = _PathTable(), _KeyTable(Normalizer())
    assert _named(t3, k3, *got) == _named(t4, k4, *_by_object(pred, True, t4, k4))


def test_long_lists_deep_nesting_and_many_shapes_are_walked_object_by_object() -> None:
    """Where columns would hold a value or two (long lists, deep nesting, objects of many shapes),
    the batch is walked object by object: the same leaves either way."""
    deep: dict = {"v": True}
    for _ in range(300):
        deep = {"a": deep, "b": [1, None]}
    batches = [
        [{"xs": list(range(i, 3 * i + 40)), "n": i} for i in range(30)],
        [{f"k{i}": i, f"k{i + 1}": [i, {"x": None}]} for i in range(40)],
        [deep, {"a": 1}],
    ]
    for objs in batches:
        t1, k1 = _PathTable(), _KeyTable(Normalizer())
        t2, k2 = _PathTable(), _KeyTable(Normalizer())
        assert _gather_columns(objs, True, _PathTable(), _KeyTable(Normalizer())) is None
        assert _named(t2, k2, *_leaves([objs], True, t2, k2)[0]) == _named(t1, k1, *_by_object(objs, True, t1, k1))
