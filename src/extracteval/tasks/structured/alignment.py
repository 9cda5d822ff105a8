"""The `structured` task's reading of a reference and alignment of lists: references checked, paths made generic,
and a predicted list's items put in the order that matches the reference's best."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from extracteval.errors import InputError
from extracteval.core.decision_track import _HOLE, flat_keys
from extracteval.io.model_output import loads_any_depth
from extracteval.tasks.structured.config import _ABSENT


def reference_value(value: Any, where: str) -> Any:
    """A reference as the task reads it: text holding JSON is parsed (at any depth), any other
    value is the reference itself; text that is not JSON is an `InputError` naming `where`."""
    if not isinstance(value, str):
        return value
    try:
        return loads_any_depth(value)
    except ValueError as e:
        raise InputError(f"{where}: the reference is text that is not valid JSON ({e}); give the reference as a JSON value.") from None


_INDEX = re.compile(r"\[\d+\]")


@lru_cache(maxsize=1 << 16)
def generic_path(path: str) -> str:
    """`items[3].sku` → `items[].sku`: the field a path belongs to, for per-field tables."""
    return _INDEX.sub("[]", path)


def _leaf_bag(v: Any) -> Counter[tuple[str, str]]:
    return Counter((generic_path(p), k) for p, k in flat_keys(v, present_only=True).items())


def _common_leaves(a: Counter[tuple[str, str]], b: Counter[tuple[str, str]]) -> int:
    """Leaves two items share as multisets of (path without indices, value): nested lists in
    another order still agree."""
    return sum((a & b).values())


def align_lists(reference: Any, prediction: Any) -> Any:
    """A copy of `prediction` whose lists are reordered to best match the reference's lists.

    Every list in the prediction that sits at the same path as a list in the reference has its
    items assigned one-to-one to reference items: the assignment that maximises the number of
    shared leaves (scipy's `linear_sum_assignment`, never greedy; pairs sharing nothing stay
    unmatched). Matched items take their partner's index, unmatched items follow after the last
    reference index. Nested lists inside matched items are aligned in turn.
    """
    from scipy.optimize import linear_sum_assignment

    root_holder: list[Any] = [None]
    # (reference node, prediction node, setter into the copy)
    stack: list[tuple[Any, Any, Callable[[Any], None]]] = [(reference, prediction, lambda v: root_holder.__setitem__(0, v))]
    while stack:
        ref, pred, put = stack.pop()
        if isinstance(pred, dict):
            new: dict[Any, Any] = {}
            put(new)
            for k, v in pred.items():
                r = ref.get(k, _ABSENT) if isinstance(ref, dict) else _ABSENT
                stack.append((r, v, lambda x, k=k, d=new: d.__setitem__(k, x)))
        elif isinstance(pred, (list, tuple)):
            items = list(pred)
            if isinstance(ref, (list, tuple)) and ref and items:
                # maximum-weight assignment on shared leaves: the pairing that maximises TP
                # (a matching that first maximises the number of pairs could trade one
                # well-matched item for two poorly matched ones)
                bags = [_leaf_bag(p) for p in items]
                common = np.array([[_common_leaves(rb, pb) for pb in bags] for rb in (_leaf_bag(r) for r in ref)], dtype=np.float64)
                rows, cols = linear_sum_assignment(common, maximize=True)
                pairs = [(int(i), int(j)) for i, j in zip(rows, cols) if common[i, j] > 0]
                slots: list[Any] = [_ABSENT] * len(ref)
                partner: list[Any] = [_ABSENT] * len(ref)
                used = set()
                for i, j in pairs:
                    slots[i] = items[j]
                    partner[i] = ref[i]
                    used.add(j)
                rest = [items[j] for j in range(len(items)) if j not in used]
                # Reference items left without a partner take the remaining predicted items in
                # order (they share no leaf with any of them, else the assignment would have
                # paired them, so the counts do not depend on which goes where); holes stay
                # empty and surplus predicted items go after the reference's length.
                ordered: list[tuple[Any, Any]] = []
                leftovers = iter(rest)
                for i in range(len(ref)):
                    if slots[i] is not _ABSENT:
                        ordered.append((partner[i], slots[i]))
                    else:
                        nxt = next(leftovers, _HOLE)
                        ordered.append((ref[i] if nxt is not _HOLE else _ABSENT, nxt))
                ordered += [(_ABSENT, x) for x in leftovers]
            else:
                ordered = [(ref[i] if isinstance(ref, (list, tuple)) and i < len(ref) else _ABSENT, x) for i, x in enumerate(items)]
            new_list: list[Any] = [None] * len(ordered)
            put(new_list)
            for i, (r, x) in enumerate(ordered):
                if x is _HOLE:
                    new_list[i] = _HOLE
                else:
                    stack.append((r, x, lambda v, i=i, lst=new_list: lst.__setitem__(i, v)))
        else:
            put(pred)
    return root_holder[0]
