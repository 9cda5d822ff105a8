"""The `structured` task (structured JSON track): raw model outputs vs reference JSON.

Per record:

* **Parsing.** The output string is parsed as JSON. If that fails, a fenced block
  (```` ```json … ``` ````) or the first JSON object/array after leading prose is tried; success
  there counts as valid *and* extracted. Anything else is invalid: counted, never raised.
  Nesting of any depth is handled (an iterative parser takes over where `json` would recurse).
* **Flattening.** Objects become `path → leaf` maps (`user.name`, `items[0]`, `items[1].sku`)
  with an explicit stack, so a 10,000-deep document is fine. Leaves are compared by canonical
  JSON (`30` ≠ `"30"`, `1.0` = `1`); with `value_match="normalized"` by the shared
  `Normalizer` keys instead (case, whitespace, number and date formats).
  `null`, `{}` and `[]` leaves are *absent* for field counting (the absent-value rule of every task) but still part of the
  exact-match comparison.
* **Counts.** For each path: both present and equal → TP; both present and different → FP
  **and** FN; only predicted → FP; only in the reference → FN. An invalid output makes every
  reference leaf a FN. `exact` = the whole canonical document equals the reference.
* **Lists.** `list_matching="positional"` (default) compares `items[i]` with
  `items[i]`; `"optimal"` first aligns the predicted items of each list to the reference items
  by the one-to-one assignment that maximises the leaves they share (maximum-weight assignment,
  never greedy), so a reordered list is not penalised.

Counts first, ratios last: `StructuredCounts` add up over records, chunks and machines; rates and
P/R/F1 are computed once from the sums.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from itertools import count, islice, repeat
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from extracteval.tasks.structured.contract import RANKING
from extracteval.core.counts import ratios
from extracteval.core.ledger import Ledger, add_counts, always, by_key, merge
from extracteval.core.jsonparse import _orjson, may_misread_numbers
from extracteval.errors import InputError
from extracteval.core.decision_track import (  # noqa: F401 - the task's API too
    PASS_THRESHOLD,
    _key_part,
    leaf_key,
    flatten,
    _HOLE,
    flat_keys,
    _REF_BOOL,
    _REF_NO_SHORTCUT,
    _REF_ABSENT,
    _CHILD_PATHS_MAX,
    _LossyNumber,
    _flat_walk,
    ExtendedScores,
    extended_scores,
    canonical_text,
    _EXAMPLES,
    paused_gc,
)
from extracteval.io.id_order import first_by_id, natural_ids, natural_sorted
from extracteval.io.model_output import JSON_START, ParsedOutput, first_fence_body, loads_any_depth, loads_std_any_depth, parse_json_output, parse_json_text

__all__ = [
    "ParsedOutput",
    "parse_json_output",
    "loads_any_depth",
    "flatten",
    "generic_path",
    "StructuredConfig",
    "StructuredCounts",
    "StructuredRecord",
    "StructuredRecords",
    "record_columns",
    "score_structured_record",
    "StructuredModelResult",
    "StructuredResult",
    "score_structured",
    "align_lists",
    "leaf_key",
    "ExtendedScores",
    "extended_scores",
]

LIST_MATCHING = ("positional", "optimal")
VALUE_MATCH = ("exact", "normalized")

_ABSENT = object()


# --------------------------------------------------------------------------------------------
# references


def reference_value(value: Any, where: str) -> Any:
    """A reference as the task reads it: text holding JSON is parsed (at any depth), any other
    value is the reference itself; text that is not JSON is an `InputError` naming `where`."""
    if not isinstance(value, str):
        return value
    try:
        return loads_any_depth(value)
    except ValueError as e:
        raise InputError(f"{where}: the reference is text that is not valid JSON ({e}); give the reference as a JSON value.") from None


# --------------------------------------------------------------------------------------------
# flattening


_INDEX = re.compile(r"\[\d+\]")


@lru_cache(maxsize=1 << 16)
def generic_path(path: str) -> str:
    """`items[3].sku` → `items[].sku`: the field a path belongs to, for per-field tables."""
    return _INDEX.sub("[]", path)


# --------------------------------------------------------------------------------------------
# optimal list alignment


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


# --------------------------------------------------------------------------------------------
# counting


@dataclass(frozen=True, kw_only=True)
class StructuredConfig:
    """Options of the `structured` task.

    Attributes:
        list_matching: `positional` (default) or `optimal`.
        value_match: `exact` (canonical JSON leaves, default) or `normalized` (shared normaliser:
            case, whitespace, number and date formats, null tokens).
        zero_division: value of an undefined precision/recall/F1.
        pass_threshold: pass mark for the extended similarity / judge scores (default 0.85).
    """

    list_matching: str = "positional"
    value_match: str = "exact"
    zero_division: float = 0.0
    pass_threshold: float = PASS_THRESHOLD

    def __post_init__(self) -> None:
        if self.list_matching not in LIST_MATCHING:
            raise InputError(f"list_matching: expected one of {', '.join(LIST_MATCHING)}, but got {self.list_matching!r}.")
        if self.value_match not in VALUE_MATCH:
            raise InputError(f"value_match: expected one of {', '.join(VALUE_MATCH)}, but got {self.value_match!r}.")
        if not 0.0 <= self.zero_division <= 1.0:
            raise InputError(f"zero_division: expected a number in [0, 1], but got {self.zero_division!r}.")
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise InputError(f"pass_threshold: expected a number in [0, 1], but got {self.pass_threshold!r}.")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class StructuredCounts(Ledger):
    """Mergeable counts of the structured task (records and flattened-field confusion counts)."""

    records: int = 0
    valid: int = 0
    strict_valid: int = 0
    extracted: int = 0
    exact: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0


    def metrics(self, *, zero_division: float = 0.0) -> dict[str, float]:
        n = self.records
        r = ratios(self.tp, self.fp, self.fn, 0, zero_division=zero_division)
        rate = (lambda k: k / n) if n else (lambda k: float(zero_division))
        return {
            "json_valid_rate": rate(self.valid),
            "strict_json_valid_rate": rate(self.strict_valid),
            "json_extracted_rate": rate(self.extracted),
            "exact_match_rate": rate(self.exact),
            "field_precision": float(r["precision"]),
            "field_recall": float(r["recall"]),
            "field_f1": float(r["f1"]),
        }

    def to_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class StructuredRecord:
    """One record's verdict and counts; `fields` maps generic paths to (tp, fp, fn) (filled by
    `score_structured_record`; a whole run keeps one per-field table instead)."""

    id: str
    valid: bool
    extracted: bool
    exact: bool
    tp: int
    fp: int
    fn: int
    error: str | None = None
    fields: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def counts(self) -> StructuredCounts:
        return StructuredCounts(
            records=1,
            valid=int(self.valid),
            strict_valid=int(self.valid and not self.extracted),
            extracted=int(self.extracted),
            exact=int(self.exact),
            tp=self.tp,
            fp=self.fp,
            fn=self.fn,
        )


class StructuredRecords(Sequence[StructuredRecord]):
    """One model's records of a run, in record-id order, kept as columns: the ids, one code per
    record (1 valid, 2 extracted, 4 exact), the tp, fp and fn counts, and the errors of the invalid
    records by position. A `StructuredRecord` is made when one is read; `column` gives a whole
    column as an array."""

    __slots__ = ("ids", "codes", "tp", "fp", "fn", "errors")

    def __init__(self, ids: Sequence[str], codes: list[int], tp: list[int], fp: list[int], fn: list[int], errors: Mapping[int, str]) -> None:
        self.ids, self.codes, self.tp, self.fp, self.fn, self.errors = ids, codes, tp, fp, fn, errors

    def __len__(self) -> int:
        return len(self.codes)

    def _record(self, k: int) -> StructuredRecord:
        c = self.codes[k]
        return StructuredRecord(id=self.ids[k], valid=bool(c & 1), extracted=bool(c & 2), exact=bool(c & 4), tp=self.tp[k], fp=self.fp[k], fn=self.fn[k],
                                error=self.errors.get(k))

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return tuple(map(self._record, range(*k.indices(len(self)))))
        k = operator.index(k)
        n = len(self.codes)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("record index out of range")
        return self._record(k)

    def __iter__(self) -> Iterator[StructuredRecord]:
        return map(self._record, range(len(self.codes)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StructuredRecords):
            return (list(self.ids[: len(self)]), self.codes, self.tp, self.fp, self.fn, dict(self.errors)) == (
                list(other.ids[: len(other)]), other.codes, other.tp, other.fp, other.fn, dict(other.errors))
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StructuredRecords({len(self)} records)"

    def as_columns(self) -> dict[str, list[Any]]:
        """`record_columns` of these records, from the columns themselves."""
        codes = self.codes
        return {"id": list(self.ids[: len(codes)]), "valid": [bool(c & 1) for c in codes], "extracted": [bool(c & 2) for c in codes],
                "exact": [bool(c & 4) for c in codes], "tp": list(self.tp), "fp": list(self.fp), "fn": list(self.fn),
                "error": [self.errors.get(k) for k in range(len(codes))] if self.errors else [None] * len(codes)}

    def invalid(self) -> Iterator[tuple[str, str]]:
        """(id, error) of each invalid record, in order."""
        return ((self.ids[k], e) for k, e in self.errors.items())

    def column(self, name: str) -> np.ndarray:
        """A `StructuredCounts` field (`records`, `valid`, `strict_valid`, `extracted`, `exact`,
        `tp`, `fp`, `fn`) per record, as an int64 array."""
        if name in ("tp", "fp", "fn"):
            return np.array(getattr(self, name), dtype=np.int64)
        codes = np.array(self.codes, dtype=np.int64)
        if name == "records":
            return np.ones(len(codes), dtype=np.int64)
        if name == "strict_valid":
            return ((codes & 3) == 1).astype(np.int64)
        bit = {"valid": 1, "extracted": 2, "exact": 4}[name]
        return ((codes & bit) > 0).astype(np.int64)


def record_columns(records: Sequence[StructuredRecord]) -> dict[str, list[Any]]:
    """id, valid, extracted, exact, tp, fp, fn and error of each record, as one list each."""
    if isinstance(records, StructuredRecords):
        return records.as_columns()
    names = ("id", "valid", "extracted", "exact", "tp", "fp", "fn", "error")
    return {n: [getattr(r, n) for r in records] for n in names}


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


# --------------------------------------------------------------------------------------------
# extended metrics (opt-in)


# --------------------------------------------------------------------------------------------
# a whole run


@dataclass(frozen=True, kw_only=True)
class StructuredModelResult:
    model: str
    counts: StructuredCounts
    metrics: dict[str, float]
    fields: dict[str, dict[str, Any]]
    missing_ids: tuple[str, ...]
    extra_ids: tuple[str, ...]
    invalid_examples: tuple[dict[str, Any], ...]
    extended: dict[str, ExtendedScores]
    rank: int = 0
    tier: str = ""
    field_wins: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "tier": self.tier,
            "field_wins": self.field_wins,
            **self.metrics,
            **{f"{k}_mean": v.mean for k, v in self.extended.items()},
            **{f"{k}_pass_rate": v.pass_rate for k, v in self.extended.items()},
            "counts": self.counts.to_dict(),
            "fields": self.fields,
            "missing_ids": list(self.missing_ids),
            "extra_ids": list(self.extra_ids),  # outputs for ids the truth does not have: ignored
            "invalid_examples": list(self.invalid_examples),
            "extended": {k: v.to_dict() for k, v in self.extended.items()},
        }


@dataclass(frozen=True, kw_only=True)
class StructuredResult:
    task: str
    config: StructuredConfig
    n_records: int
    ranking: tuple[str, ...]
    models: dict[str, StructuredModelResult]
    records: dict[str, Sequence[StructuredRecord]]
    field_winners: dict[str, dict[str, Any]]

    def per_record(self, metric: str) -> dict[str, np.ndarray]:
        """model → per-record 0/1 (or counts) array in record-id order, for paired bootstraps."""
        out = {}
        for m, recs in self.records.items():
            if isinstance(recs, StructuredRecords) and metric in ("exact_match_rate", "exact", "json_valid_rate", "valid"):
                out[m] = recs.column("exact" if metric.startswith("exact") else "valid").astype(np.float64)
            elif metric in ("exact_match_rate", "exact"):
                out[m] = np.array([r.exact for r in recs], dtype=np.float64)
            elif metric in ("json_valid_rate", "valid"):
                out[m] = np.array([r.valid for r in recs], dtype=np.float64)
            else:
                raise KeyError(metric)
        return out

    def count_matrix(self, model: str) -> tuple[tuple[str, ...], np.ndarray]:
        """(count column names, int array records × columns) of one model, in record-id order."""
        cols = tuple(f.name for f in fields(StructuredCounts))
        recs = self.records[model]
        if isinstance(recs, StructuredRecords):
            return cols, np.column_stack([recs.column(c) for c in cols]).reshape(len(recs), len(cols))
        rows = [[getattr(r.counts(), c) for c in cols] for r in recs]
        return cols, np.array(rows, dtype=np.int64).reshape(len(rows), len(cols))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "config": self.config.to_dict(),
            "n_records": self.n_records,
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
            "field_winners": self.field_winners,
        }


def score_structured(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    config: StructuredConfig | None = None,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> StructuredResult:
    """Score every model's raw outputs against the reference JSON documents.

    Args:
        truth: record id → reference JSON value (object, array or scalar).
        predictions: model → record id → raw output (string, or an already parsed value). A
            record with no output counts as invalid (and is listed in `missing_ids`).
        similarity: optional extended metrics: metric name (`semantic_similarity`,
            `judge_score`) → any object with `similarity(a, b) -> array` (SimilarityBackend).
        progress: called after each record with (done, total, model, running metrics).
    """
    config = config or StructuredConfig()
    return count_structured(truth, predictions, config=config, similarity=similarity, progress=progress).result(config)


def count_structured(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    config: StructuredConfig,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> StructuredCount:
    """Every record of every model scored (the arguments of `score_structured`): its ledger, the
    per-record results and the extended metrics. The in-memory score reduces the count of all
    records; the chunk engine adds up the ledgers of its chunks and reduces them the same way
    (`structured_result`)."""
    ids = natural_sorted(truth)
    scorer = _Scorer(config)
    # the default options (canonical leaves, positional lists) take the loop built for them
    fast = config.value_match == "exact" and config.list_matching == "positional"
    with paused_gc():
        if fast:
            fast_refs = _References(truth, ids)
        else:
            ref_keys = {i: scorer.reference_keys(truth[i]) for i in ids}
    models = sorted(predictions)
    ledgers: dict[str, _ModelLedger] = {}
    extended_of: dict[str, dict[str, ExtendedScores]] = {}
    records: dict[str, Sequence[StructuredRecord]] = {}
    for m in models:
        preds = predictions[m]
        recs = []
        running = [0] * 8  # StructuredCounts fields, summed as plain ints in the hot loop
        n_missing = -1  # not counted
        per_field: dict[str, list[int]] = {}
        with paused_gc():
            if fast:
                recs, running, n_missing = _score_model_exact(ids, preds, fast_refs, per_field, progress, m)
            else:
                for k, i in enumerate(ids, start=1):
                    if i not in preds:
                        rec = _missing_record(i, ref_keys[i], "no output for this id", per_field)
                    else:
                        rec = scorer.record(i, truth[i], preds[i], ref_keys[i], per_field)
                    recs.append(rec)
                    if progress is not None:
                        running[0] += 1
                        running[1] += rec.valid
                        running[4] += rec.exact
                        progress(k, len(ids), m, _RunningRates(running))
        if fast:
            total = StructuredCounts(**dict(zip(_COUNT_FIELDS, running)))
        else:
            total = StructuredCounts(
                records=len(recs),
                valid=sum(r.valid for r in recs),
                strict_valid=sum(r.valid and not r.extracted for r in recs),
                extracted=sum(r.extracted for r in recs),
                exact=sum(r.exact for r in recs),
                tp=sum(r.tp for r in recs),
                fp=sum(r.fp for r in recs),
                fn=sum(r.fn for r in recs),
            )
        extended = {}
        for metric, backend in sorted((similarity or {}).items()):
            pred_texts, ref_texts = [], []
            for r in recs:
                raw = preds.get(r.id)
                parsed = scorer.parse(raw)
                pred_texts.append(canonical_text(parsed.value) if parsed.ok else ("" if raw is None else str(raw)))
                ref_texts.append(canonical_text(truth[r.id]))
            extended[metric], _ = extended_scores(backend, pred_texts, ref_texts, threshold=config.pass_threshold)
        bad = recs.invalid() if isinstance(recs, StructuredRecords) else ((r.id, r.error) for r in recs if not r.valid)
        invalid = tuple(islice(({"id": i, "error": e, "output": _preview(preds.get(i))} for i, e in bad), _EXAMPLES))
        ledgers[m] = _ModelLedger(
            counts=total,
            fields={g: (v[0], v[1], v[2]) for g, v in per_field.items()},
            missing=() if n_missing == 0 else tuple(i for i in ids if i not in preds),
            # every output key is a truth id when there are as many keys as ids with an output
            extra=() if n_missing >= 0 and len(preds) == len(ids) - n_missing else tuple(str(i) for i in preds if i not in truth),
            invalid_examples=invalid,
        )
        extended_of[m] = extended
        records[m] = recs if isinstance(recs, StructuredRecords) else tuple(recs)
    return StructuredCount(ledger=StructuredLedger(n_records=len(ids), models=ledgers), records=records, extended=extended_of)


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    counts: StructuredCounts
    fields: Mapping[str, tuple[int, int, int]] = merge(by_key(add_counts))  # path → (tp, fp, fn)
    missing: tuple[str, ...]  # in the order of the parts (put in natural order once, at the end)
    extra: tuple[str, ...]
    # the first few in natural id order
    invalid_examples: tuple[dict[str, Any], ...] = merge(lambda a, b: first_by_id(a + b, _EXAMPLES))
    merged: bool = merge(always(True), default=False)  # added up from several counts: the ids are put in natural order once, at the end


@dataclass(frozen=True)
class StructuredLedger(Ledger):
    """Counts of some records, mergeable by `+`: per model the `StructuredCounts`, the per-path
    (tp, fp, fn), and the ids the result lists (missing, extra, the first invalid examples)."""

    n_records: int
    models: Mapping[str, _ModelLedger] = merge(by_key())


@dataclass(frozen=True)
class StructuredCount:
    """`count_structured` of a set of records: its ledger, per model the per-record results and
    the extended metrics (means over every record, so never merged across chunks)."""

    ledger: StructuredLedger
    records: Mapping[str, Sequence[StructuredRecord]]
    extended: Mapping[str, dict[str, ExtendedScores]]

    def result(self, config: StructuredConfig) -> StructuredResult:
        return structured_result(self.ledger, config, records=self.records, extended=self.extended)


def structured_result(ledger: StructuredLedger, config: StructuredConfig, *, records: Mapping[str, Sequence[StructuredRecord]] | None = None,
                      extended: Mapping[str, dict[str, ExtendedScores]] | None = None) -> StructuredResult:
    """Ratios, per-path rows, winners and ranking of a ledger: where the in-memory score and the
    chunk engine end."""
    zd = config.zero_division
    results = {
        m: StructuredModelResult(
            model=m, counts=ml.counts, metrics=ml.counts.metrics(zero_division=zd), fields=field_rows(ml.fields, zd),
            missing_ids=natural_ids(ml.missing) if ml.merged else ml.missing, extra_ids=natural_ids(ml.extra), invalid_examples=ml.invalid_examples,
            extended=dict((extended or {}).get(m, {})),
        )
        for m, ml in ledger.models.items()
    }
    return ranked_result(results, config=config, n_records=ledger.n_records, records=records or {})


def field_rows(per_field: Mapping[str, Sequence[int]], zero_division: float) -> dict[str, dict[str, Any]]:
    """Per flattened path, its (tp, fp, fn) and their precision, recall and F1 (one vectorised
    call over every path: per-path calls made 100k paths take ~10 s)."""
    names = sorted(per_field)
    tps, fps, fns = (np.array([per_field[g][k] for g in names], dtype=np.int64) for k in range(3))
    rr = ratios(tps, fps, fns, np.zeros_like(tps), zero_division=zero_division)
    return {g: {"tp": int(tps[i]), "fp": int(fps[i]), "fn": int(fns[i]), "precision": float(rr["precision"][i]), "recall": float(rr["recall"][i]),
                "f1": float(rr["f1"][i])} for i, g in enumerate(names)}


def ranked_result(results: Mapping[str, StructuredModelResult], *, config: StructuredConfig, n_records: int,
                  records: Mapping[str, Sequence[StructuredRecord]]) -> StructuredResult:
    """The result of every model's counts: the winner of each path (F1 over the paths every
    model has), the ranking (the task's declaration, then path wins) and each model's place."""
    from extracteval.core.ranking import Score, field_winners, field_wins, rank_by_metrics

    models = sorted(results)
    field_scores: dict[str, dict[str, Score]] = {}
    for m in models:
        for g, v in results[m].fields.items():
            field_scores.setdefault(g, {})[m] = Score(f1=v["f1"], precision=v["precision"], recall=v["recall"])
    winners = field_winners({g: s for g, s in field_scores.items() if len(s) == len(models)})
    wins = field_wins(winners, models)
    overall = {m: {f"structured/{k}": float(v) for k, v in results[m].metrics.items()} for m in models}
    ranked = rank_by_metrics(RANKING, overall, wins)
    placed = {r.model: replace(results[r.model], rank=r.rank, tier=r.tier, field_wins=r.field_wins) for r in ranked}
    return StructuredResult(
        task="structured",
        config=config,
        n_records=n_records,
        ranking=tuple(r.model for r in ranked),
        models={m: placed[m] for m in models},
        records=dict(records),
        field_winners={g: {"kind": w.kind, "winners": list(w.winners)} for g, w in sorted(winners.items())},
    )


class _References:
    """The references of a run under the default options, read once for every model: per record
    (in id order) the reference, the `_REF_*` flags of what it holds and its profile id. A
    profile is the reference's generic paths with a value, counted (`items[].sku`: 2); references
    of one shape share one, so the per-field counts of exact and missing records are added once
    per profile at the end instead of path by path per record.

    A reference's shape is read by `_shape_walk` (one step per object or array, no path built);
    only the first reference of each shape is flattened, to count its profile. The flattened keys
    of any other reference are made when a record needs them (`keys`)."""

    __slots__ = ("values", "flags", "pids", "tables", "n_present", "_keys")

    def __init__(self, truth: Mapping[str, Any], ids: Sequence[str]) -> None:
        values = list(truth.values()) if isinstance(truth, dict) else None
        if values is None or len(values) != len(ids) or list(truth) != ids:  # ids not in the truth's order
            values = list(map(truth.__getitem__, ids))
        self.values = values
        self.flags: list[int] = []
        self.pids: list[int] = []
        self.tables: list[dict[str, int]] = []
        self.n_present: list[int] = []
        self._keys: dict[int, dict[str, str]] = {}  # position → flattened keys, once made
        profiles: dict[tuple[Any, ...], int] = {}
        add_flags, add_pid = self.flags.append, self.pids.append
        for n, v in enumerate(values):
            t = type(v)
            parts: list[int] = []
            flags = _REF_IRREGULAR
            if (t is dict or t is list) and v:
                try:
                    flags = _shape_walk(v, parts)
                except RecursionError:
                    flags = _REF_IRREGULAR
            if flags & _REF_IRREGULAR:
                # a scalar, a leaf of another type, a key that is not a `str`, a deep document:
                # the profile is the present paths themselves, and no shortcut is taken
                rk, flags = reference_walk(v)
                flags |= _REF_NO_SHORTCUT
                self._keys[n] = rk
                key: tuple[Any, ...] = ("", *[p for p, k in rk.items() if k[0] != "\x00"])
            else:
                key = tuple(parts)
            pid = profiles.get(key)
            if pid is None:
                pid = profiles[key] = len(self.tables)
                table: dict[str, int] = {}
                present = 0
                for p, k in self.keys(n).items():
                    if k[0] != "\x00":
                        g = generic_path(p)
                        table[g] = table.get(g, 0) + 1
                        present += 1
                self.tables.append(table)
                self.n_present.append(present)
            add_flags(flags)
            add_pid(pid)

    def keys(self, n: int) -> dict[str, str]:
        """The flattened keys of the reference at position `n` (`flat_keys`)."""
        rk = self._keys.get(n)
        if rk is None:
            rk = self._keys[n] = reference_walk(self.values[n])[0]
        return rk


def _put_keys(out: dict[str, str], path: str, x: Any) -> None:
    """The flattened keys of `x` under `path` into `out` (a leaf: its one key)."""
    t = type(x)
    if (t is dict or t is list or t is tuple) and x:
        _flat_walk(out, path, x, False)
    else:
        out[path] = leaf_key(x)


def _diff_keys(r: Any, p: Any, path: str, rd: dict[str, str], pd: dict[str, str], hazard: bool) -> None:
    """The flattened keys of a reference `r` and a parsed output `p` (both non-empty objects, or
    both non-empty arrays) where they differ, under `path`: the reference's into `rd`, the
    output's into `pd`. That is `flat_keys` of each less the items both share: an item equal in
    both is skipped whole, so the two maps are equal exactly when the documents' flattened keys
    are, and their differences are those of the whole documents.

    For a regular reference (`_shape_walk`: `str` keys, numbers of magnitude below 1e16, leaves
    of the JSON types only) Python's `==` on two items means equal keys, except where a boolean
    meets a number (`True == 1`): with `hazard` (a boolean in either document) equal leaves must
    also be of one type, and equal containers written alike by orjson. (An output float orjson
    made of an integer beyond 64 bits equals no key of such a reference, read either way.)"""
    dumps = _orjson.dumps  # type: ignore[union-attr]
    if type(r) is dict:
        get = p.get
        shared = 0
        for k, a in r.items():
            b = get(k, _ABSENT)
            if b is _ABSENT:
                _put_keys(rd, path + "." + _key_part(k) if path else _key_part(k), a)
                continue
            shared += 1
            if a == b and (not hazard or _typed_equal(a, b, dumps)):
                continue
            _diff_pair(a, b, path + "." + _key_part(k) if path else _key_part(k), rd, pd, hazard)
        if shared != len(p):  # keys only the output has
            for k, b in p.items():
                if k not in r:
                    _put_keys(pd, path + "." + _key_part(k) if path else _key_part(k), b)
        return
    for j, (a, b) in enumerate(zip(r, p)):
        if a == b and (not hazard or _typed_equal(a, b, dumps)):
            continue
        _diff_pair(a, b, f"{path}[{j}]", rd, pd, hazard)
    shared = min(len(r), len(p))
    for j in range(shared, len(r)):  # items only the reference has
        _put_keys(rd, f"{path}[{j}]", r[j])
    for j in range(shared, len(p)):  # items only the output has
        _put_keys(pd, f"{path}[{j}]", p[j])


def _typed_equal(a: Any, b: Any, dumps: Callable[..., bytes]) -> bool:
    """Two items `==` already equates are one JSON value: leaves of one type, containers written
    alike by orjson (`True == 1`, `[True] == [1]`)."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is not dict and ta is not list and ta is not tuple:
        return True
    try:
        return dumps(a) == dumps(b)
    except (TypeError, ValueError, RecursionError):
        return False


def _diff_pair(a: Any, b: Any, path: str, rd: dict[str, str], pd: dict[str, str], hazard: bool) -> None:
    """Two items that differ at `path`: side by side if both are non-empty objects or arrays,
    else the keys of each."""
    ta, tb = type(a), type(b)
    if ((ta is dict and tb is dict) or ((ta is list or ta is tuple) and (tb is list or tb is tuple))) and a and b:
        _diff_keys(a, b, path, rd, pd, hazard)
    else:
        _put_keys(rd, path, a)
        _put_keys(pd, path, b)


_COUNT_FIELDS = tuple(f.name for f in fields(StructuredCounts))


def _score_model_exact(
    ids: Sequence[str],
    preds: Mapping[str, Any],
    refs: _References,
    per_field: dict[str, list[int]],
    progress: Callable[[int, int, str, dict[str, float]], None] | None,
    model: str,
) -> tuple[StructuredRecords, list[int], int]:
    """One model's records under the default options (what `_Scorer.record` computes, faster),
    their summed counts in the order of `StructuredCounts`' fields and how many ids had no output.

    Each output string is parsed by orjson when it can be (`json` otherwise, with the fences and
    prose rules of `parse_json_output`). Against a regular reference (see `_diff_keys`) an output
    orjson writes as it writes the reference is exact; any other is compared with the reference
    side by side, flattening only the items that differ. Exact and missing or invalid outputs
    take their per-field counts from the reference's profile, once per profile; the others
    correct it by the paths where the two differ. The records are kept as columns
    (`StructuredRecords`)."""
    fast_loads = _orjson.loads if _orjson is not None else None
    fast_error = _orjson.JSONDecodeError if _orjson is not None else ValueError
    dumps = _orjson.dumps if _orjson is not None else None
    tables = refs.tables
    n_present = refs.n_present
    tp_mult = [0] * len(tables)
    fn_mult = [0] * len(tables)
    total = len(ids)
    # the columns of the records, written where not 0
    codes = [0] * total
    tps = [0] * total
    fps = [0] * total
    fns = [0] * total
    errors: dict[int, str] = {}
    n_valid = n_extracted = n_exact = sum_tp = sum_fp = sum_fn = n_missing = 0
    running = [0] * 8
    missing = _ABSENT
    # a reference `_diff_keys` may compare side by side (none without orjson)
    side_by_side = dumps is not None
    json_start = JSON_START
    # each id's output (`missing` where there is none): the outputs themselves when they are keyed
    # by the ids in their order
    outputs: Any = preds.values() if isinstance(preds, dict) and len(preds) == total and list(preds) == ids else map(preds.get, ids, repeat(missing))
    for n, (raw, ref, rflags, pid) in enumerate(zip(outputs, refs.values, refs.flags, refs.pids)):
        value: Any = missing
        extracted = from_orjson = False
        if type(raw) is str and fast_loads is not None:
            text = raw.strip()
            if text:
                c = text[0]
                # else no parser reads the text whole: a fence, prose, or an object or array cut
                # short (a truncated output: `json` gives the reason)
                if c in json_start:
                    if not ((c == "{" and text[-1] != "}") or (c == "[" and text[-1] != "]")):
                        try:
                            value = fast_loads(text)
                            from_orjson = True
                        except fast_error:
                            pass
                        if from_orjson and may_misread_numbers(text):  # a number a float would round: read exactly
                            value, from_orjson = missing, False
                elif c == "`":
                    # a fenced output: the body of its first fence, what `parse_json_text` reads
                    # first, read by orjson (else all of it by `parse_json_text`)
                    body = first_fence_body(text)
                    if body and body[0] in json_start and not ((body[0] == "{" and body[-1] != "}") or (body[0] == "[" and body[-1] != "]")):
                        try:
                            value = fast_loads(body)
                            from_orjson = extracted = True
                            text = body
                        except fast_error:
                            pass
                        if from_orjson and may_misread_numbers(body):  # a number a float would round: read exactly
                            value, from_orjson, extracted, text = missing, False, False, raw.strip()
        if not from_orjson:
            if raw is missing:
                error = "no output for this id"
                n_missing += 1
            else:
                # orjson has refused the text (if it was one): `json` reads it
                parsed = parse_json_text(text, loads_std_any_depth) if fast_loads is not None and type(raw) is str and text else parse_json_output(raw)
                if parsed.ok:
                    value, extracted = parsed.value, parsed.extracted
                else:
                    error = parsed.error or "not valid JSON"
            if value is missing:
                fn_mult[pid] += 1
                fn = n_present[pid]
                sum_fn += fn
                fns[n] = fn
                errors[n] = error
                if progress is not None:
                    running[0] += 1
                    progress(n + 1, total, model, _RunningRates(running))
                continue
        n_valid += 1
        tp_mult[pid] += 1
        tp = n_present[pid]
        exact = False
        rd: dict[str, str] | None = None
        pd: dict[str, str] | None = None
        if side_by_side and not rflags & _REF_NO_SHORTCUT and type(raw) is str:
            # a regular reference: written alike by orjson is the same document (`==` as well for
            # an output `json` read: orjson writes its NaN and Infinity as null); else the two are
            # compared side by side (orjson refuses to write a document nested deeper than 255
            # levels, or an integer beyond 64 bits)
            try:
                exact = dumps(value) == dumps(ref) and (from_orjson or value == ref)  # type: ignore[misc]
            except (TypeError, ValueError, RecursionError):
                exact = False
            if not exact:
                tv = type(value)
                if value and (tv is dict if type(ref) is dict else tv is list):
                    rd, pd = {}, {}
                    try:
                        _diff_keys(ref, value, "", rd, pd, bool(rflags & _REF_BOOL) or "true" in raw or "false" in raw)
                    except RecursionError:
                        rd = None
        else:
            tv = type(value)
            if from_orjson and (tv is dict or tv is list) and value:
                # orjson reads an integer beyond 64 bits as a float: such a document is read
                # again by `json`, which keeps it exact
                pd = {}
                try:
                    _flat_walk(pd, "", value, False, True)
                    rd = refs.keys(n)
                except (_LossyNumber, RecursionError):
                    value = loads_any_depth(text)
            elif from_orjson and tv is float and not -9.2e18 < value < 9.2e18:
                value = loads_any_depth(text)
        if not exact:
            if rd is None:
                rd, pd = refs.keys(n), flat_keys(value)
            assert pd is not None
            exact = rd == pd
        if exact:
            n_exact += 1
            sum_tp += tp
            tps[n] = tp
            codes[n] = 7 if extracted else 5
        else:
            # `compare_flat` by difference: the profile counts every present reference path as a
            # TP; only the items the two maps do not share are looked at one by one
            fp = fn = 0
            for p, k in rd.items() - pd.items():  # type: ignore[union-attr]
                if k[0] == "\x00":
                    continue
                slot = per_field.get(generic_path(p))
                if slot is None:
                    slot = per_field[generic_path(p)] = [0, 0, 0]
                q = pd.get(p)  # type: ignore[union-attr]
                tp -= 1
                slot[0] -= 1
                fn += 1
                slot[2] += 1
                if q is not None and q[0] != "\x00":
                    fp += 1
                    slot[1] += 1
            for p, q in pd.items() - rd.items():  # type: ignore[union-attr]
                if q[0] == "\x00":
                    continue
                k = rd.get(p)  # type: ignore[union-attr]
                if k is None or k[0] == "\x00":
                    fp += 1
                    slot = per_field.get(generic_path(p))
                    if slot is None:
                        slot = per_field[generic_path(p)] = [0, 0, 0]
                    slot[1] += 1
            sum_tp += tp
            sum_fp += fp
            sum_fn += fn
            tps[n] = tp
            fps[n] = fp
            fns[n] = fn
            codes[n] = 3 if extracted else 1
        n_extracted += extracted
        if progress is not None:
            running[0] += 1
            running[1] += 1
            running[4] += exact
            progress(n + 1, total, model, _RunningRates(running))
    for pid, table in enumerate(tables):
        a, b = tp_mult[pid], fn_mult[pid]
        if not a and not b:
            continue
        for g, c in table.items():
            slot = per_field.get(g)
            if slot is None:
                slot = per_field[g] = [0, 0, 0]
            slot[0] += a * c
            slot[2] += b * c
    recs = StructuredRecords(ids, codes, tps, fps, fns, errors)
    return recs, [total, n_valid, n_valid - n_extracted, n_extracted, n_exact, sum_tp, sum_fp, sum_fn], n_missing


class _RunningRates(Mapping[str, float]):
    """The running metrics a progress line shows, computed only when it is read."""

    def __init__(self, running: list[int]) -> None:
        self._r = running

    def _rates(self) -> dict[str, float]:
        n = self._r[0] or 1
        return {"json_valid_rate": self._r[1] / n, "exact_match_rate": self._r[4] / n}

    def __getitem__(self, key: str) -> float:
        return self._rates()[key]

    def __iter__(self) -> Any:
        return iter(("json_valid_rate", "exact_match_rate"))

    def __len__(self) -> int:
        return 2


def _preview(raw: Any, limit: int = 160) -> str:
    s = raw if isinstance(raw, str) else repr(raw)
    return s if len(s) <= limit else s[:limit] + "…"
