"""The natural order of record ids: the fast path for ids of one prefix and a number gives
exactly `sorted(ids, key=natural_key)`, ties in the order given."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.core.id_order import natural_key, natural_sorted

_DIGITS = st.text(alphabet="0123456789", min_size=0, max_size=22)
_PREFIXES = st.sampled_from(["", "doc-", "r", "a1", "é-", "x y", "٣", "-"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_PREFIXES, _DIGITS), max_size=40), st.booleans())
def test_natural_sorted_is_sorted_by_the_natural_key(parts: list[tuple[str, str]], one_prefix: bool) -> None:
    ids = [(parts[0][0] if one_prefix and parts else p) + d for p, d in parts]
    assert natural_sorted(ids) == sorted(ids, key=natural_key)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab-01²٣9", max_size=6), max_size=30))
def test_any_ids_keep_the_natural_order(ids: list[str]) -> None:
    assert natural_sorted(ids) == sorted(ids, key=natural_key)


def test_the_usual_ids() -> None:
    assert natural_sorted(["doc-10", "doc-2", "doc-02", "doc-1"]) == ["doc-1", "doc-2", "doc-02", "doc-10"]
    assert natural_sorted(["10", "9", "0010"]) == ["9", "10", "0010"]
    big = ["r" + "9" * 25, "r" + "1" + "0" * 24, "r3"]
    assert natural_sorted(big) == ["r3", "r" + "1" + "0" * 24, "r" + "9" * 25]
    assert natural_sorted(["b1", "a2", 3]) == sorted(["b1", "a2", 3], key=natural_key)
    assert natural_sorted([]) == []


def test_ids_that_are_not_utf8_text_keep_the_general_rule() -> None:
    """A lone surrogate (valid in JSON text, not UTF-8) takes the general rule, not the vectorised path."""
    ids = ["r2\ud800", "r10", "r1"]
    assert natural_sorted(ids) == sorted(ids, key=natural_key) == ["r1", "r2\ud800", "r10"]
