"""Ledgers: the counts of a set of records, merged by `+` with one implementation.

A ledger is a frozen dataclass deriving from `Ledger` whose fields each say how the values of two
disjoint sets of records combine: `a + b` is the ledger of both, and every engine (in memory, in
chunks, on Spark) merges with it. A field without a rule is added (`+`: counts, arrays,
sub-ledgers, tuples of ids kept in record order); any other rule is declared where the field is:

    @dataclass(frozen=True, kw_only=True)
    class ModelLedger(Ledger):
        records: int                                        # added
        formats: Mapping[str, int] = merge(by_key())        # key by key
        missing_ids: tuple[str, ...] = merge(smallest(5))   # the five smallest ids
        source: str = merge(keep)                           # the same on every part

A rule is a function of the two values (`rule(mine, theirs)`), or, made with `whole`, of the two
ledgers and the field's name, for a field whose merge reads others (a limit, row totals); `joint`
merges several fields at once. The merge is associative (the property tests hold every task's
ledger to it): splitting records anywhere, in order, and adding the parts gives the ledger of the
whole.
"""

from __future__ import annotations

import dataclasses
import heapq
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "Ledger", "merge", "whole", "joint", "add", "add_counts", "keep", "same", "union", "intersection", "either", "first_given",
    "always", "by_key", "first", "first_each", "counted_first", "smallest", "ordered", "ordered_union", "sorted_union", "updated", "elementwise",
]

Rule = Callable[[Any, Any], Any]


def merge(rule: Rule | _Whole | _Joint, **kwargs: Any) -> Any:
    """A ledger field merged by `rule` (`dataclasses.field` arguments pass through)."""
    return dataclasses.field(metadata={"merge": rule}, **kwargs)


class _Whole:
    """A rule reading the two ledgers: `fn(left, right, name)`."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any, Any, str], Any]) -> None:
        self.fn = fn


class _Joint:
    """Several fields merged at once: `fn(left, right)` gives their values, in `names` order."""

    __slots__ = ("fn", "names")

    def __init__(self, fn: Callable[[Any, Any], tuple[Any, ...]], names: tuple[str, ...]) -> None:
        self.fn, self.names = fn, names


def whole(fn: Callable[[Any, Any, str], Any]) -> _Whole:
    """A rule that reads both ledgers (`fn(left, right, field name)`), for a field whose merge
    depends on other fields of the ledger."""
    return _Whole(fn)


def joint(fn: Callable[[Any, Any], tuple[Any, ...]], *names: str) -> _Joint:
    """The fields `names` merged together by `fn(left, right)` → their values (declare the same
    rule object on each of them)."""
    return _Joint(fn, names)


class Ledger:
    """Base of every ledger: `+` merges field by field by the rules the fields declare."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        cls = type(self)
        if type(other) is not cls:
            return NotImplemented
        plan = _PLANS.get(cls)
        if plan is None:
            plan = _PLANS[cls] = tuple((f.name, f.metadata.get("merge", add)) for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for name, rule in plan:
            if name in values:
                continue
            if type(rule) is _Whole:
                values[name] = rule.fn(self, other, name)
            elif type(rule) is _Joint:
                values.update(zip(rule.names, rule.fn(self, other)))
            else:
                values[name] = rule(getattr(self, name), getattr(other, name))
        return cls(**values)

    def __radd__(self, other: Any) -> Any:
        """`0 + ledger` is the ledger: `sum(ledgers)` starts from 0."""
        if type(other) is int and other == 0:
            return self
        return NotImplemented


_PLANS: dict[type, tuple[tuple[str, Any], ...]] = {}


# ---- rules --------------------------------------------------------------------------------------


def add(a: Any, b: Any) -> Any:
    """`a + b`: counts, arrays, sub-ledgers; tuples of ids in record order, concatenated."""
    return a + b


def add_counts(a: Any, b: Any) -> Any:
    """Counts given as a number or as a tuple of numbers (added element by element)."""
    if type(a) is tuple:
        return tuple(x + y for x, y in zip(a, b))
    return a + b


def elementwise(rule: Rule) -> Rule:
    """Tuples of values merged position by position with `rule`."""
    return lambda a, b: tuple(rule(x, y) for x, y in zip(a, b))


def keep(a: Any, b: Any) -> Any:
    """The first part's value: what every part holds alike (a source, a configuration, a limit)."""
    return a


def same(a: Any, b: Any) -> Any:
    """A value both parts must hold alike (the models, the fields scored)."""
    if a != b:
        raise ValueError(f"cannot merge ledgers that count different things: {reprlib.repr(a)} and {reprlib.repr(b)}.")
    return a


def union(a: Any, b: Any) -> Any:
    return a | b


def intersection(a: Any, b: Any) -> Any:
    return a & b


def either(a: Any, b: Any) -> Any:
    """True where either part is (a flag)."""
    return a or b


def first_given(a: Any, b: Any) -> Any:
    """The first part's value, or the next part's where the first has none (None)."""
    return a if a is not None else b


def always(value: Any) -> Rule:
    """The same value whatever the parts hold (a merged ledger says it was merged)."""
    return lambda a, b: value


def by_key(rule: Rule = add, *, sort: bool = False) -> Rule:
    """Mappings merged key by key: a key both hold by `rule`, a key one holds as it is; the
    first part's keys first (`sort`: keys in sorted order)."""

    def merge_maps(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> dict[Any, Any]:
        out = dict(a)
        for k, v in b.items():
            out[k] = rule(out[k], v) if k in out else v
        return {k: out[k] for k in sorted(out)} if sort else out

    return merge_maps


def _first(a: Sequence[Any], b: Sequence[Any], n: int) -> tuple[Any, ...]:
    return (tuple(a) + tuple(b))[:n]


def _limited(merge_with: Callable[[Any, Any, int], Any], n: int | str) -> Any:
    """A rule `merge_with(mine, theirs, limit)`, the limit a number or the name of the ledger's
    field holding it."""
    if isinstance(n, str):
        return whole(lambda left, right, name: merge_with(getattr(left, name), getattr(right, name), getattr(left, n)))
    return lambda a, b: merge_with(a, b, n)


def first(n: int | str) -> Any:
    """The first `n` items in record order (`n`: a number, or the name of the ledger's field
    holding it)."""
    return _limited(_first, n)


def first_each(n: int | str) -> Any:
    """Mappings of kind → items in record order: each kind's first `n` (a number, or the name of
    the ledger's field holding it), a kind one part lacks as the other holds it."""
    return _limited(lambda a, b, limit: by_key(lambda x, y: _first(x, y, limit))(a, b), n)


def counted_first(n: int) -> Rule:
    """(how many, the first `n` of them) pairs: the counts added, the items in record order."""
    return lambda a, b: (a[0] + b[0], (a[1] + b[1])[:n])


def smallest(n: int, *, distinct: bool = False) -> Rule:
    """The `n` smallest items of both parts (record ids), in order (`distinct`: each once)."""
    if distinct:
        return lambda a, b: tuple(sorted({*a, *b})[:n])
    return lambda a, b: tuple(heapq.nsmallest(n, (*a, *b)))


def ordered(key: Callable[[Any], Any]) -> Rule:
    """Every item of both parts, sorted by `key`."""
    return lambda a, b: tuple(sorted((*a, *b), key=key))


def ordered_union(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, ...]:
    """Each item once, in the order first seen."""
    return tuple(dict.fromkeys((*a, *b)))


def sorted_union(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, ...]:
    """Each item once, sorted."""
    return tuple(sorted({*a, *b}))


def updated(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> dict[Any, Any]:
    """The first part's mapping updated with the next part's (a later key's value wins)."""
    return {**a, **b}
