"""Ledgers merge with one implementation, by the rules their fields declare.

Every rule is associative (Hypothesis, over values of the kind it merges): with every ledger built
from these rules, splitting records anywhere in order and adding the parts gives the ledger of
the whole, however the additions are grouped. The task-level merges (a ledger of a union of
records is the sum of the ledgers) are held per task in the property tests over the registry.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core import ledger as L

SRC = Path(__file__).resolve().parents[2] / "src" / "extracteval"

ints = st.integers(min_value=0, max_value=50)
ids = st.lists(st.text(alphabet="abc019", min_size=1, max_size=3), max_size=6).map(tuple)
counts = st.dictionaries(st.sampled_from("xyz"), ints, max_size=3)
triples = st.dictionaries(st.sampled_from("xyz"), st.tuples(ints, ints, ints), max_size=3)
sets = st.frozensets(st.sampled_from("abcde"), max_size=4)

RULES = {
    "add": (L.add, ints),
    "add (ids in record order)": (L.add, ids),
    "add_counts": (L.add_counts, st.tuples(ints, ints, ints)),
    "keep": (L.keep, ints),
    "union": (L.union, sets),
    "intersection": (L.intersection, sets),
    "either": (L.either, st.booleans()),
    "first_given": (L.first_given, st.none() | st.text(max_size=2)),
    "always": (L.always(True), st.booleans()),
    "by_key": (L.by_key(), counts),
    "by_key, sorted": (L.by_key(L.add_counts, sort=True), triples),
    "by_key of by_key": (L.by_key(L.by_key(L.add_counts)), st.dictionaries(st.sampled_from("pq"), triples, max_size=2)),
    "by_key(union)": (L.by_key(L.union), st.dictionaries(st.sampled_from("pq"), sets, max_size=2)),
    "by_key(updated)": (L.by_key(L.updated), st.dictionaries(st.sampled_from("pq"), counts, max_size=2)),
    "first": (L.first(3), ids),
    "first_each": (L.first_each(2), st.dictionaries(st.sampled_from("pq"), ids, max_size=2)),
    "counted_first": (L.counted_first(3), st.tuples(ints, ids)),
    "smallest": (L.smallest(3), ids),
    "smallest, distinct": (L.smallest(3, distinct=True), ids),
    "ordered": (L.ordered(lambda x: (len(x), x)), ids),
    "ordered_union": (L.ordered_union, ids),
    "sorted_union": (L.sorted_union, ids),
    "updated": (L.updated, counts),
    "elementwise": (L.elementwise(L.add_counts), st.tuples(st.tuples(ints, ints), st.tuples(ints, ints))),
}


@pytest.mark.parametrize("name", RULES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_rule_is_associative(name: str, data: st.DataObject) -> None:
    rule, values = RULES[name]
    a, b, c = data.draw(values), data.draw(values), data.draw(values)
    assert rule(rule(a, b), c) == rule(a, rule(b, c))


@dataclass(frozen=True, kw_only=True)
class _Example(L.Ledger):
    n: int
    ids: tuple[str, ...] = L.merge(L.smallest(2))
    per: Mapping[str, int] = L.merge(L.by_key())
    k: int = L.merge(L.keep)
    shown: tuple[str, ...] = L.merge(L.first("k"))
    rows: np.ndarray
    total: int = L.merge(L.joint(lambda a, b: (a.total + b.total, a.doubled + b.doubled), "total", "doubled"))
    doubled: int = L.merge(L.joint(lambda a, b: (a.total + b.total, a.doubled + b.doubled), "total", "doubled"))
    name: str = L.merge(L.same)


def _part(i: int) -> _Example:
    return _Example(n=1, ids=(f"r{i}",), per={"x": i}, k=2, shown=(f"r{i}",), rows=np.array([i]), total=i, doubled=2 * i, name="m")


def test_a_ledger_merges_by_its_declared_rules_whatever_the_grouping() -> None:
    parts = [_part(i) for i in (3, 1, 2)]
    left, right = (parts[0] + parts[1]) + parts[2], parts[0] + (parts[1] + parts[2])
    for got in (left, right):
        assert (got.n, got.ids, dict(got.per), got.k, got.shown, got.total, got.doubled, got.name) == (
            3, ("r1", "r2"), {"x": 6}, 2, ("r3", "r1"), 6, 12, "m")
        assert got.rows.tolist() == [6]  # arrays of counts add element by element
    assert sum(parts).n == 3  # sum() starts from 0


def test_parts_of_different_things_or_types_do_not_merge() -> None:
    with pytest.raises(ValueError, match="count different things"):
        _part(1) + dataclasses.replace(_part(2), name="other")
    with pytest.raises(TypeError):
        _part(1) + 1  # type: ignore[operator]


def test_no_ledger_writes_its_own_merge() -> None:
    """Every `+` in the package is the one ledger merge: a class that adds its own `__add__`
    would merge by rules nobody declared."""
    own = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "core" / "ledger.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("__add__", "__radd__", "__iadd__"):
                own.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert own == []
