"""The natural order of record ids — `r2` before `r10`, numbers and text never compared directly —
in which every result lists ids (missing, extra, failed ids; examples; per-record tables)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["natural_key", "natural_sorted", "natural_ids", "first_by_id"]


_DIGITS = re.compile(r"(\d+)")


def natural_sorted(ids: Any) -> list[Any]:
    """`sorted(ids, key=natural_key)`; ids that are all ASCII digits (the usual record numbers)
    sort by their integer value, which is the same order (equal numbers tie, as there)."""
    ids = list(ids)
    try:
        joined = "".join(ids)
    except TypeError:  # not all strings
        return sorted(ids, key=natural_key)
    if joined.isascii() and joined.isdigit() and all(ids):
        return sorted(ids, key=int)
    return sorted(ids, key=natural_key)


_PREFIX_NUMBER = re.compile(r"(\D*)(\d+)")


def natural_ids(ids: Any) -> tuple[Any, ...]:
    """Ids in natural order with ties of the natural key (`r01`, `r1`) in byte order: one order
    whatever order the ids came in (the listings of missing, extra and failed ids)."""
    return tuple(sorted(ids, key=_natural_then_bytes))


def first_by_id(items: Any, n: int) -> tuple[Any, ...]:
    """The first `n` of these mappings by their `"id"`, in `natural_ids` order (the examples a
    result shows, whichever chunks they came from)."""
    return tuple(sorted(items, key=lambda e: _natural_then_bytes(e["id"]))[:n])


def _natural_then_bytes(rid: Any) -> tuple[Any, Any]:
    return natural_key(rid), rid


def natural_key(rid: Any) -> tuple[Any, ...]:
    """Sort key for record ids: `r2` before `r10`; numbers and text never compared directly."""
    s = rid if type(rid) is str else str(rid)
    m = _PREFIX_NUMBER.fullmatch(s)
    if m is not None:  # the usual id, `123` or `rec-123`: the general rule below, in one match
        prefix, digits = m.groups()
        if not prefix:
            return ((0, int(digits), ""),)
        if not prefix.isdigit():
            return ((1, 0, prefix), (0, int(digits), ""))
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(str(rid)) if part)
