"""The natural order of record ids — `r2` before `r10`, numbers and text never compared directly —
in which every result lists ids (missing, extra, failed ids; examples; per-record tables)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["natural_key", "natural_sorted", "natural_order", "natural_ids", "first_by_id"]


_DIGITS = re.compile(r"(\d+)")


def natural_sorted(ids: Any) -> list[Any]:
    """`sorted(ids, key=natural_key)`, ties in the order given. Ids that all share one ASCII text
    prefix followed by ASCII digits (`123`, `doc-000123`: the usual record ids) sort by the
    prefix's number, which is the same order, without a key per id."""
    ids = list(ids)
    return [ids[i] for i in natural_order(ids)]


def natural_order(ids: Sequence[Any]) -> list[int]:
    """The positions of `ids` in the order of `natural_sorted(ids)` (ties in the order given)."""
    ids = list(ids)
    order = _prefix_number_order(ids)
    return order if order is not None else sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))


def _prefix_number_order(ids: list[Any]) -> list[int] | None:
    """The positions of `ids` in natural order when every id is str, all of them one ASCII
    non-digit prefix then ASCII digits (read vectorised, numbers up to 18 digits in int64); else None."""
    if not ids or not all(type(i) is str for i in ids):
        return None
    prefix = _TEXT.match(ids[0]).group(0)  # type: ignore[union-attr]
    if not prefix.isascii():
        return None
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = pa.array(ids, type=pa.string())
    except (UnicodeError, pa.ArrowException):  # text that is not UTF-8 (a lone surrogate): the general rule
        return None
    if prefix and not pc.all(pc.starts_with(arr, prefix)).as_py():
        return None
    rest = pc.utf8_slice_codeunits(arr, len(prefix)) if prefix else arr
    width = pc.binary_length(rest)
    if pc.min(width).as_py() == 0 or not pc.all(pc.ascii_is_decimal(rest)).as_py():
        return None
    if pc.max(width).as_py() <= 18:
        numbers = pc.cast(rest, pa.int64()).to_numpy()
        if len(numbers) < 2 or bool((numbers[1:] >= numbers[:-1]).all()):  # already in order (ids sorted as they are written)
            return list(range(len(ids)))
        return np.argsort(numbers, kind="stable").tolist()
    numbers = [int(r) for r in rest.to_pylist()]
    return sorted(range(len(ids)), key=numbers.__getitem__)


_TEXT = re.compile(r"\D*")
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
    return tuple((0, int(part), "") if part.isdecimal() else (1, 0, part) for part in _DIGITS.split(str(rid)) if part)
