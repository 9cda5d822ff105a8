"""The `structured` task's count of one record: the reference's flat keys (cached per shape) compared with the
output's, leaf by leaf."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import count
from typing import Any

from extracteval.core.decision_track import (
    leaf_key,
    flat_keys,
    _REF_BOOL,
    _REF_NO_SHORTCUT,
    _REF_ABSENT,
    _CHILD_PATHS_MAX,
    _flat_walk,
)
from extracteval.io.model_output import ParsedOutput, parse_json_output
from extracteval.tasks.structured.config import StructuredConfig, StructuredRecord
from extracteval.tasks.structured.alignment import align_lists, generic_path


_REF_IRREGULAR = 8  # a leaf whose presence depends on more than its type, or a key that is not `str` (`_shape_walk` only)


def reference_walk(reference: Any) -> tuple[dict[str, str], int]:
    """`flat_keys(reference)` and the `_REF_*` flags of what it holds. A reference that is not a
    non-empty dict or list, or nests too deeply, takes no shortcut."""
    t = type(reference)
    if (t is dict or t is list) and reference:
        out: dict[str, str] = {}
        try:
            return out, _flat_walk(out, "", reference, False)
        except RecursionError:
            pass
    keys = flat_keys(reference)
    return keys, _REF_NO_SHORTCUT | (_REF_ABSENT if any(k[0] == "\x00" for k in keys.values()) else 0)


# (keys of an object, or a list's length; the types of its items) → (plan number, keys or
# indices of the numbers, keys or indices of the containers, `_REF_*` flags its types alone
# decide): the cache of `_shape_walk`. Plan numbers are never reused (profile keys made of them
# stay unique across a clearing of the cache).
_SHAPE_PLANS: dict[tuple[Any, ...], tuple[int, tuple[Any, ...], tuple[Any, ...], int]] = {}


_PLAN_NUMBERS = count()


_NONE_TYPE = type(None)


# plan number → the position of each key among the plan's numbers and among its containers, made
# the first time a NaN or an empty container is met under the plan (not by a search per item)
_PLAN_POSITIONS: dict[int, tuple[dict[Any, int], dict[Any, int]]] = {}


def _positions(plan: tuple[int, tuple[Any, ...], tuple[Any, ...], int]) -> tuple[dict[Any, int], dict[Any, int]]:
    pos = _PLAN_POSITIONS.get(plan[0])
    if pos is None:
        pos = _PLAN_POSITIONS[plan[0]] = ({k: p for p, k in enumerate(plan[1])}, {k: p for p, k in enumerate(plan[2])})
    return pos


def _shape_plan(sk: tuple[Any, ...]) -> tuple[int, tuple[Any, ...], tuple[Any, ...], int]:
    """The plan of a container's shape key (see `_shape_walk`): its number, the keys (or
    positions) of its numbers and of its containers, and its `_REF_*` flags."""
    n = sk[0]
    if n >= 0:  # an object: n keys, then their values' types
        keys = sk[1:1 + n]
        at: Iterable[Any] = keys
        types = sk[1 + n:]
        flags = _REF_IRREGULAR if any(type(k) is not str for k in keys) else 0
    else:  # a list or tuple of -1 - n items: their types
        at, types, flags = range(-1 - n), sk[1:], 0
    nums: list[Any] = []
    conts: list[Any] = []
    for k, t in zip(at, types):
        if t is int or t is float:
            nums.append(k)
        elif t is dict or t is list or t is tuple:
            conts.append(k)
        elif t is bool:
            flags |= _REF_BOOL
        elif t is _NONE_TYPE:
            flags |= _REF_ABSENT
        elif t is not str:
            flags |= _REF_IRREGULAR
    if len(_SHAPE_PLANS) >= _CHILD_PATHS_MAX:
        _SHAPE_PLANS.clear()
        _PLAN_POSITIONS.clear()
    plan = _SHAPE_PLANS[sk] = (next(_PLAN_NUMBERS), tuple(nums), tuple(conts), flags)
    return plan


def _shape_walk(v: Any, parts: list[int]) -> int:
    """A reference's profile key, without its flattened keys: appends to `parts` the plan number
    of each non-empty container (keys or length, and the types of the items) in document order,
    a mark `-1 - 2p` after it for a NaN at its `p`-th number and `-2 - 2p` in place of its `p`-th
    container when empty; returns the `_REF_*` flags. Two references with the same parts have the
    same paths and the same absent leaves. `_REF_IRREGULAR` (a leaf of another type, a key that
    is not a `str`) asks for the flattening walk instead."""
    # one flat tuple per container: an object's key count, keys and value types; a list's
    # -1 - length and item types (the sign tells them apart)
    if type(v) is dict:
        sk: tuple[Any, ...] = (len(v), *v, *map(type, v.values()))
    else:
        sk = (-1 - len(v), *map(type, v))
    plan = _SHAPE_PLANS.get(sk)
    if plan is None:
        plan = _shape_plan(sk)
    number, nums, conts, flags = plan
    parts.append(number)
    for k in nums:
        x = v[k]
        if not -1e16 < x < 1e16:
            if x != x:
                parts.append(-1 - 2 * _positions(plan)[0][k])
                flags |= _REF_ABSENT
            else:
                flags |= _REF_NO_SHORTCUT
    for k in conts:
        x = v[k]
        if x:
            flags |= _shape_walk(x, parts)
        else:
            parts.append(-2 - 2 * _positions(plan)[1][k])
            flags |= _REF_ABSENT
    return flags


def compare_flat(
    ref: Mapping[str, str], pred: Mapping[str, str], acc: dict[str, list[int]] | None = None
) -> tuple[int, int, int, dict[str, tuple[int, int, int]]]:
    """TP/FP/FN of two `path → key` maps (wrong value = FP + FN), with per generic path counts.

    With `acc`, the per-path counts are added into it (a run's running table) and the returned
    per-path dict is empty.
    """
    tp = fp = fn = 0
    per: dict[str, list[int]] = {} if acc is None else acc
    for p, k in ref.items():
        if k[0] == "\x00":
            continue
        g = per.setdefault(generic_path(p), [0, 0, 0])
        pk = pred.get(p)
        if pk is None or pk[0] == "\x00":
            fn += 1
            g[2] += 1
        elif pk == k:
            tp += 1
            g[0] += 1
        else:
            fp += 1
            fn += 1
            g[1] += 1
            g[2] += 1
    for p, k in pred.items():
        if k[0] == "\x00":
            continue
        rk = ref.get(p)
        if rk is None or rk[0] == "\x00":
            fp += 1
            per.setdefault(generic_path(p), [0, 0, 0])[1] += 1
    if acc is not None:
        return tp, fp, fn, {}
    return tp, fp, fn, {g: (c[0], c[1], c[2]) for g, c in per.items()}


def _missing_record(rid: str, ref_keys: Mapping[str, str], error: str, acc: dict[str, list[int]] | None = None) -> StructuredRecord:
    tp, fp, fn, per = compare_flat(ref_keys, {}, acc)
    return StructuredRecord(id=rid, valid=False, extracted=False, exact=False, tp=tp, fp=fp, fn=fn, error=error, fields=per)


class _Scorer:
    """Per-model scoring state: caches parses and flattenings per distinct output / reference."""

    def __init__(self, config: StructuredConfig) -> None:
        self.config = config
        if config.value_match == "normalized":
            from extracteval.core.normalize import Normalizer

            norm = Normalizer()

            def key_fn(v: Any) -> str | None:
                return norm.key(v)

            self.key_fn: Callable[[Any], str | None] = key_fn
        else:
            self.key_fn = leaf_key

    def parse(self, raw: Any) -> ParsedOutput:
        # No cache: model outputs are nearly all distinct, and caching 100k parsed documents
        # would hold them all in memory for nothing.
        return parse_json_output(raw)

    def reference_keys(self, reference: Any) -> dict[str, str]:
        return flat_keys(reference, self.key_fn)

    def record(self, rid: str, reference: Any, raw: Any, ref_keys: Mapping[str, str] | None = None, acc: dict[str, list[int]] | None = None) -> StructuredRecord:
        ref_keys = self.reference_keys(reference) if ref_keys is None else ref_keys
        parsed = self.parse(raw)
        if not parsed.ok:
            return _missing_record(rid, ref_keys, parsed.error or "not valid JSON", acc)
        value = parsed.value
        if self.config.list_matching == "optimal":
            value = align_lists(reference, value)
        pred_keys = flat_keys(value, self.key_fn)
        tp, fp, fn, per = compare_flat(ref_keys, pred_keys, acc)
        if self.config.value_match == "exact":
            exact = fp == 0 and fn == 0 and pred_keys == ref_keys
        else:
            exact = fp == 0 and fn == 0
        return StructuredRecord(id=rid, valid=True, extracted=parsed.extracted, exact=exact, tp=tp, fp=fp, fn=fn, fields=per)


def score_structured_record(reference: Any, output: Any, *, config: StructuredConfig | None = None, rid: str = "") -> StructuredRecord:
    """Score one output against one reference (see the module docstring).

    Examples:
        >>> r = score_structured_record({"user": {"name": "Alice", "age": 30}}, '{"user": {"name": "Alice", "age": 31}}')
        >>> (r.tp, r.fp, r.fn, r.exact)
        (1, 1, 1, False)
    """
    return _Scorer(config or StructuredConfig()).record(rid, reference, output)
