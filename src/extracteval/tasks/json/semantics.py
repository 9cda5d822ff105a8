"""The `json` task: 4-phase JSON comparison and the Response Quality Score (RQS).

Per record, every key of the union of the ground truth (GT) and the model output (AIO) is sorted
into the key buckets (phase 0); completeness (phase 1), hallucination (phase 2) and accuracy with
per-field EXACT / FUZZY / SEMANTIC / IGNORE strategies (phase 3) follow, and RQS combines them
(phase 4). Per model, the per-record values are averaged and the bucket counts summed.

Pipeline: flatten every object once into (path, value) leaves (iteratively: no recursion limit)
→ canonicalise each *distinct* value once → join GT and AIO leaves on (record, path) with sorted
integer ids → buckets, strategies and EXACT matches as vectorised comparisons of integer codes →
FUZZY / SEMANTIC similarity once per distinct (truth, prediction) pair, in one batch per backend
→ per-record scores by `bincount` → aggregates, per-field table, ranking.
"""

from __future__ import annotations

import gc
import json
from array import array
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
import operator
from operator import itemgetter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.json.contract import RANKING
from extracteval.core.ledger import Ledger, add_counts, by_key, counted_first, intersection, keep, merge, union, whole
from extracteval.core.normalize import NormalizationConfig, Normalizer, float_key, int_key
from extracteval.core.ranking import TIER_COLOURS, rank_by_metrics, tier
from extracteval.core.similarity import FuzzySimilarity, SimilarityBackend, describe_similarity
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError

try:  # a dependency: the typed comparison of a prediction with its truth (`_same_leaves`)
    import orjson as _orjson

    _dumps = _orjson.dumps
    # subclasses (a list subclass is one leaf, not a list), dataclasses and datetimes are not
    # written: such a prediction is walked
    _TYPED = _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
except ImportError:  # pragma: no cover - without orjson every prediction is walked
    _dumps = None
    _TYPED = 0

__all__ = [
    "BUCKETS",
    "RQSWeights",
    "JsonConfig",
    "JsonPredictions",
    "RecordScore",
    "FieldAccuracy",
    "ModelJsonResult",
    "JsonResult",
    "score_json",
    "compare_json",
    "flatten_json",
    "auto_strategy",
]

BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")
# Primary class of one key (cell); gt_non_null is the union of MISSING and BOTH.
_EXTRA, _GT_NULL_HAS, _NULL_BOTH, _MISSING, _BOTH = 0, 1, 2, 3, 4
_STRATEGIES = (Strategy.EXACT, Strategy.FUZZY, Strategy.SEMANTIC, Strategy.IGNORE)
_S_EXACT, _S_FUZZY, _S_SEMANTIC, _S_IGNORE = 0, 1, 2, 3
_STRATEGY_CODE = {s: i for i, s in enumerate(_STRATEGIES)}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_INDEX = re.compile(r"\[\d+\]")
_NO_RECORD = object()
_CHUNK = 10_000  # records scored together: bounds the memory of the vectorised steps
_BATCH = 1_000  # objects walked column by column together (see `_leaves`)
_SLACK = 64  # columns beyond two per object, shapes beyond one per eight objects: then walk object by object
_RECORD_LIMIT = 10_000  # per-record rows in to_dict() by default up to this many (model × record) rows


def _unit(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
        raise InputError(f"Expected `{name}` to be a number in [0, 1], but got {v!r}.")
    return float(v)


@dataclass(frozen=True, kw_only=True)
class RQSWeights:
    """Weights of phase 4: rqs = a·accuracy + c·completeness + s·safety − h·hallucination."""

    accuracy: float = 0.45
    completeness: float = 0.25
    hallucination: float = 0.15
    safety: float = 0.15

    def __post_init__(self) -> None:
        for name in ("accuracy", "completeness", "hallucination", "safety"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"Expected RQS weight `{name}` to be a finite number ≥ 0, but got {v!r}.")

    def to_dict(self) -> dict[str, float]:
        return {"accuracy": self.accuracy, "completeness": self.completeness, "hallucination": self.hallucination, "safety": self.safety}


@dataclass(frozen=True, kw_only=True)
class JsonConfig:
    """Options of the `json` task.

    Attributes:
        strategies: per-field strategy (a top-level key; with `flatten`, a path such as
            `address.city`, a pattern `items[*].price`, or an ancestor `address` applying to every
            leaf below it). Fields not listed are auto-detected (see `auto_strategy`).
        fuzzy_threshold: FUZZY match when rapidfuzz similarity ≥ this (0–1, default 0.85).
        semantic_threshold: SEMANTIC match when the similarity backend scores ≥ this (0–1, default 0.80).
        fuzzy_scorer: rapidfuzz scorer name.
        weights: RQS weights (default 0.45 / 0.25 / 0.15 / 0.15).
        clamp: RQS is clamped to this interval (default [0, 1]).
        flatten: classify nested paths (`a.b`, `items[0]`) instead of top-level keys.
        normalization: null tokens, day-first dates, currency stripping.
        default_safety: safety score of a record without one (default 1.0).
        safety_key: the per-record key / column holding the safety score (recorded in the config).
    """

    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    fuzzy_threshold: float = 0.85
    semantic_threshold: float = 0.80
    fuzzy_scorer: str = "ratio"
    weights: RQSWeights = field(default_factory=RQSWeights)
    clamp: tuple[float, float] = (0.0, 1.0)
    flatten: bool = False
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    default_safety: float = 1.0
    safety_key: str = "safety_score"

    def __post_init__(self) -> None:
        for name in ("fuzzy_threshold", "semantic_threshold", "default_safety"):
            object.__setattr__(self, name, _unit(name, getattr(self, name)))
        if not isinstance(self.strategies, Mapping):
            raise InputError(f"Expected `strategies` to be a mapping of field to strategy, but got {type(self.strategies).__name__}.")
        object.__setattr__(
            self, "strategies", {str(k): get_strategy(v, where=f"strategy of field {k!r}") for k, v in self.strategies.items()}
        )
        if isinstance(self.weights, Mapping):
            object.__setattr__(self, "weights", RQSWeights(**self.weights))
        try:
            lo, hi = (float(x) for x in self.clamp)
        except (TypeError, ValueError):
            raise InputError(f"Expected `clamp` to be two numbers (low, high), but got {self.clamp!r}.") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise InputError(f"Expected `clamp` to be (low, high) with low ≤ high, but got {self.clamp!r}.")
        object.__setattr__(self, "clamp", (lo, hi))

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategies": {k: v.value for k, v in sorted(self.strategies.items())},
            "fuzzy_threshold": self.fuzzy_threshold,
            "semantic_threshold": self.semantic_threshold,
            "fuzzy_scorer": self.fuzzy_scorer,
            "weights": self.weights.to_dict(),
            "clamp": list(self.clamp),
            "flatten": self.flatten,
            "normalization": self.normalization.to_dict(),
            "safety_score": {"key": self.safety_key, "default": self.default_safety},
        }


@dataclass(frozen=True, kw_only=True)
class JsonPredictions:
    """One model's outputs: `records[id]` is the predicted JSON object of that record.

    A value that is not an object (a string, a list, None…) is *invalid*: the record is scored as
    an empty prediction (every truth key missing) and counted in `invalid_predictions`.
    `safety` holds optional per-record safety scores in [0, 1]; `status` optional per-record
    `ok` / `pending` / `error`: pending and error records are *excluded* from the model's
    aggregates (counted in `excluded_records`, flagged, still listed per record).
    """

    name: str
    records: Mapping[str, Any]
    safety: Mapping[str, float] = field(default_factory=dict)
    status: Mapping[str, str] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class RecordScore:
    """The four phases for one record."""

    record_id: str
    buckets: Mapping[str, tuple[str, ...]]
    completeness: float
    hallucination: float
    accuracy: float
    safety_score: float
    rqs: float
    total_keys: int
    scored: int
    matched: int
    strategies: Mapping[str, str]
    scores: Mapping[str, float | None]
    mismatched: tuple[str, ...]
    flags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "rqs": self.rqs,
            "completeness": self.completeness,
            "hallucination": self.hallucination,
            "accuracy": self.accuracy,
            "safety_score": self.safety_score,
            "total_keys": self.total_keys,
            "scored": self.scored,
            "matched": self.matched,
            "buckets": {b: list(self.buckets[b]) for b in BUCKETS},
            "mismatched": list(self.mismatched),
            "flags": list(self.flags),
        }


_add_counts = by_key(add_counts)  # two mappings of counts summed key by key


@dataclass(frozen=True, kw_only=True)
class FieldAccuracy(Ledger):
    """One field (key or path pattern) of one model, summed over records."""

    field: str = merge(keep)
    counts: Mapping[str, int] = merge(_add_counts)
    scored: int
    matched: int
    ignored: int
    similarity_failures: int
    strategies: Mapping[str, int] = merge(_add_counts)

    @property
    def accuracy(self) -> float | None:
        return self.matched / self.scored if self.scored else None

    @property
    def completeness(self) -> float | None:
        g = self.counts["gt_non_null"]
        return self.counts["both_non_null"] / g if g else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "completeness": self.completeness,
            "scored": self.scored,
            "matched": self.matched,
            "ignored": self.ignored,
            "similarity_failures": self.similarity_failures,
            "strategies": dict(self.strategies),
            **{b: int(self.counts[b]) for b in BUCKETS},
        }


@dataclass(frozen=True, kw_only=True)
class _Cells:
    """Every (record, key) cell of one model, sorted by record then path (internal)."""

    rec: np.ndarray  # int64 record index
    path: np.ndarray  # int64 path code (paths sorted by name)
    cls: np.ndarray  # int8 primary class (_EXTRA … _BOTH)
    strategy: np.ndarray  # int8 strategy code, -1 when the cell is not both_non_null
    score: np.ndarray  # float64 similarity (1/0 for EXACT), NaN = backend failure or not scored
    matched: np.ndarray  # bool


@dataclass(frozen=True, kw_only=True)
class ModelJsonResult:
    """Aggregates of one model: means of per-record values and summed bucket counts."""

    name: str
    rank: int
    tier: str
    tier_colour: str
    rqs: Mapping[str, float]
    completeness: float
    hallucination: float
    accuracy: float
    safety: float
    buckets: Mapping[str, int]
    scored: int
    matched: int
    ignored: int
    similarity_failures: int
    missing_records: int
    invalid_predictions: int
    excluded_records: int
    safety_scores_given: int
    fields: Mapping[str, FieldAccuracy]
    source: str
    _record_ids: tuple[str, ...] = field(repr=False, default=())
    _paths: tuple[str, ...] = field(repr=False, default=())
    _per_record: Mapping[str, np.ndarray] = field(repr=False, default_factory=dict)
    _cells: _Cells | None = field(repr=False, default=None)
    _flags: Mapping[str, tuple[str, ...]] = field(repr=False, default_factory=dict)

    def record(self, record_id: str) -> RecordScore:
        """The four phases and bucket listing for one record."""
        try:
            i = self._record_ids.index(str(record_id))
        except ValueError:
            raise InputError(f"record {record_id!r} is not in the ground truth.") from None
        return self._record_at(i, *self._bounds())

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        assert self._cells is not None
        n = len(self._record_ids)
        return np.searchsorted(self._cells.rec, np.arange(n)), np.searchsorted(self._cells.rec, np.arange(n), side="right")

    def _record_at(self, i: int, starts: np.ndarray, ends: np.ndarray) -> RecordScore:
        c = self._cells
        assert c is not None
        sl = np.arange(int(starts[i]), int(ends[i]))
        sl = sl[np.argsort(c.path[sl], kind="stable")]  # keys in name order
        paths = [self._paths[p] for p in c.path[sl]]
        cls = c.cls[sl]
        strat = c.strategy[sl]
        score = c.score[sl]
        matched = c.matched[sl]
        lists: dict[str, list[str]] = {b: [] for b in BUCKETS}
        strategies: dict[str, str] = {}
        scores: dict[str, float | None] = {}
        mismatched: list[str] = []
        for p, k, s, sc, ok in zip(paths, cls, strat, score, matched):
            if k == _EXTRA:
                lists["extra_keys"].append(p)
            elif k == _GT_NULL_HAS:
                lists["gt_null_aio_has_value"].append(p)
            elif k == _MISSING:
                lists["gt_non_null"].append(p)
                lists["aio_missing_or_null"].append(p)
            elif k == _BOTH:
                lists["gt_non_null"].append(p)
                lists["both_non_null"].append(p)
                strategies[p] = _STRATEGIES[s].value
                if s != _S_IGNORE:
                    scores[p] = None if math.isnan(sc) else float(sc)
                    if not ok:
                        mismatched.append(p)
        r = self._per_record
        return RecordScore(
            record_id=self._record_ids[i],
            buckets={b: tuple(v) for b, v in lists.items()},
            completeness=float(r["completeness"][i]),
            hallucination=float(r["hallucination"][i]),
            accuracy=float(r["accuracy"][i]),
            safety_score=float(r["safety"][i]),
            rqs=float(r["rqs"][i]),
            total_keys=int(r["total_keys"][i]),
            scored=int(r["scored"][i]),
            matched=int(r["matched"][i]),
            strategies=strategies,
            scores=scores,
            mismatched=tuple(mismatched),
            flags=self._flags.get(self._record_ids[i], ()),
        )

    def records(self) -> list[RecordScore]:
        """Every record's phases and buckets, in record-id order."""
        starts, ends = self._bounds()
        return [self._record_at(i, starts, ends) for i in range(len(self._record_ids))]

    def records_frame(self) -> pd.DataFrame:
        """One row per record: record_id, rqs, completeness, hallucination, accuracy, safety_score,
        the five bucket counts, scored, matched, flags."""
        r = self._per_record
        frame = pd.DataFrame(
            {
                "model": self.name,
                "record_id": list(self._record_ids),
                "rqs": r["rqs"],
                "completeness": r["completeness"],
                "hallucination": r["hallucination"],
                "accuracy": r["accuracy"],
                "safety_score": r["safety"],
                **{b: r[b] for b in BUCKETS},
                "total_keys": r["total_keys"],
                "scored": r["scored"],
                "matched": r["matched"],
                "flags": [";".join(self._flags.get(x, ())) for x in self._record_ids],
            }
        )
        return frame

    def cells_frame(self) -> pd.DataFrame:
        """The per-record bucket listing: one row per (record, key) with its bucket, strategy,
        similarity score and match; `gt_non_null` keys appear under their finer bucket
        (`aio_missing_or_null` or `both_non_null`), keys null on both sides as `null_both`."""
        c = self._cells
        assert c is not None
        o = np.lexsort((c.path, c.rec))
        c = _Cells(rec=c.rec[o], path=c.path[o], cls=c.cls[o], strategy=c.strategy[o], score=c.score[o], matched=c.matched[o])
        names = np.array(["extra_keys", "gt_null_aio_has_value", "null_both", "aio_missing_or_null", "both_non_null"], dtype=object)
        strat = np.array([s.value for s in _STRATEGIES] + [None], dtype=object)
        return pd.DataFrame(
            {
                "model": self.name,
                "record_id": np.asarray(self._record_ids, dtype=object)[c.rec] if len(c.rec) else np.array([], dtype=object),
                "key": np.asarray(self._paths, dtype=object)[c.path] if len(c.path) else np.array([], dtype=object),
                "bucket": names[c.cls],
                "strategy": strat[c.strategy],
                "score": c.score,
                "matched": np.where(c.strategy >= 0, c.matched, False),
            }
        )

    def to_dict(self, *, include_records: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rank": self.rank,
            "tier": self.tier,
            "tier_colour": self.tier_colour,
            "source": self.source,
            "n_records": len(self._record_ids),
            "rqs": dict(self.rqs),
            "completeness": self.completeness,
            "hallucination": self.hallucination,
            "accuracy": self.accuracy,
            "safety": self.safety,
            "buckets": dict(self.buckets),
            "scored": self.scored,
            "matched": self.matched,
            "ignored": self.ignored,
            "similarity_failures": self.similarity_failures,
            "missing_records": self.missing_records,
            "invalid_predictions": self.invalid_predictions,
            "excluded_records": self.excluded_records,
            "safety_scores_given": self.safety_scores_given,
            "fields": {k: v.to_dict() for k, v in self.fields.items()},
        }
        if include_records:
            d["records"] = [r.to_dict() for r in self.records()]
        return d


@dataclass(frozen=True, kw_only=True)
class JsonResult:
    task: str
    models: Mapping[str, ModelJsonResult]
    ranking: tuple[str, ...]
    n_records: int
    fields: tuple[str, ...]
    warnings: tuple[str, ...]
    config: Mapping[str, Any]
    # configured strategy keys no path matched (the chunked engine intersects them across chunks)
    unused_strategies: tuple[str, ...] = ()

    def to_dict(self, *, include_records: bool | None = None) -> dict[str, Any]:
        """The `--json` document. Per-record rows are included when `include_records` is True, or
        by default (None) when there are at most 10,000 (model, record) rows; use
        `records_frame()` / `cells_frame()` for artifacts of any size."""
        if include_records is None:
            include_records = self.n_records * max(1, len(self.models)) <= _RECORD_LIMIT
        return {
            "task": self.task,
            "n_records": self.n_records,
            "fields": list(self.fields),
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict(include_records=include_records) for m in self.ranking},
            "records_included": include_records,
            "warnings": list(self.warnings),
            "config": dict(self.config),
        }

    def records_frame(self) -> pd.DataFrame:
        """Per-record scores of every model (one row per model and record)."""
        return pd.concat([self.models[m].records_frame() for m in self.ranking], ignore_index=True)

    def cells_frame(self) -> pd.DataFrame:
        """Per-record bucket listing of every model (one row per model, record and key)."""
        return pd.concat([self.models[m].cells_frame() for m in self.ranking], ignore_index=True)

    def fields_frame(self) -> pd.DataFrame:
        """Per-field accuracy table: one row per model and field."""
        rows = [{"model": m, "field": f, **fa.to_dict()} for m in self.ranking for f, fa in self.models[m].fields.items()]
        for r in rows:
            r["strategies"] = ";".join(f"{k}:{v}" for k, v in sorted(r["strategies"].items()))
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# flattening and canonical keys


def _segment(key: Any, cache: dict[Any, str]) -> str:
    s = cache.get(key)
    if s is None:
        k = str(key)
        s = cache[key] = k if k and not any(c in k for c in '.[]"') else "[" + json.dumps(k, ensure_ascii=False) + "]"
    return s


def _join(prefix: str, seg: str) -> str:
    if not prefix:
        return seg
    return prefix + seg if seg[0] == "[" else prefix + "." + seg


def flatten_json(obj: Mapping[str, Any], *, flatten: bool = True) -> dict[str, Any]:
    """Leaves of a JSON object by path: `{"a": {"b": 1}, "items": [5]}` → `{"a.b": 1, "items[0]": 5}`.

    Iterative (an explicit stack), so a 10,000-deep nesting is fine. Empty objects and lists are
    leaves (absent values). Keys containing `.`, `[`, `]` or `"` are written `["a.b"]`. With
    `flatten=False` the top-level keys are returned as they are.

    Examples:
        >>> flatten_json({"a": {"b": 1, "c.d": 2}, "items": [{"x": 1}, []]})
        {'a.b': 1, 'a["c.d"]': 2, 'items[0].x': 1, 'items[1]': []}
    """
    if not flatten:
        return {str(k): v for k, v in obj.items()}
    seg_cache: dict[Any, str] = {}
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [(_segment(k, seg_cache), v) for k, v in reversed(list(obj.items()))]
    while stack:
        p, v = stack.pop()
        if isinstance(v, dict) and v:
            stack.extend((_join(p, _segment(k, seg_cache)), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)) and v:
            stack.extend((f"{p}[{i}]", v[i]) for i in range(len(v) - 1, -1, -1))
        else:
            out[p] = v
    return out


class _PathTable:
    """Path names and integer codes, shared by the truth and every model. A child's code is
    looked up by (parent code, key) so each distinct path string is built once, not per record."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.by_key: dict[tuple[int, Any], int] = {}
        self.by_index: dict[tuple[int, int], int] = {}
        self.seg_cache: dict[Any, str] = {}
        self.shapes: dict[tuple[int, tuple[Any, ...]], list[int]] = {}
        self.list_shapes: dict[tuple[int, int], list[int]] = {}
        self.fields: dict[int, int] = {}  # path code → field code (its `[*]` pattern)
        self.field_ids: dict[str, int] = {}
        self.tops: list[int] = []  # path code → the code of its top-level key
        self.odd_keys = False  # a key that is not a string was met: two keys may share a path name
        self._tops_array = np.zeros(0, dtype=np.int64)

    def code(self, parent: int, key: Any, index: bool) -> int:
        if index:
            name = f"{self.names[parent]}[{key}]"
        else:
            if type(key) is not str:
                self.odd_keys = True
            seg = _segment(key, self.seg_cache)
            name = seg if parent < 0 else _join(self.names[parent], seg)
        c = self.ids.get(name)
        if c is None:
            c = self.ids[name] = len(self.names)
            self.names.append(name)
            self.tops.append(c if parent < 0 else self.tops[parent])
        (self.by_index if index else self.by_key)[(parent, key)] = c
        return c

    def top_codes(self) -> np.ndarray:
        """`tops` as an array (made again only when paths were added)."""
        arr = self._tops_array
        if len(arr) != len(self.tops):
            arr = self._tops_array = np.asarray(self.tops, dtype=np.int64)
        return arr

    def field(self, code: int) -> int:
        """Code of a path's field: its pattern (`items[*].price`), shared by every index."""
        f = self.fields.get(code)
        if f is None:
            name = _pattern(self.names[code])
            f = self.fields[code] = self.field_ids.setdefault(name, len(self.field_ids))
        return f

    def top(self, key: Any) -> int:
        """Code of an unflattened top-level key (used as it is, no escaping)."""
        t = (-2, key)
        c = self.by_key.get(t)
        if c is None:
            if type(key) is not str:
                self.odd_keys = True
            name = key if type(key) is str else str(key)
            c = self.ids.get(name)
            if c is None:
                c = self.ids[name] = len(self.names)
                self.names.append(name)
                self.tops.append(c)
            self.by_key[t] = c
        return c


class _KeyTable:
    """Canonical-key codes of leaf values (-1 = absent), cached per (type, value): the type
    keeps `True`, `1` and `1.0` apart, and the normaliser runs once per distinct value."""

    def __init__(self, normalizer: Normalizer) -> None:
        self.normalizer = normalizer
        self.digits_are_numbers = normalizer.config.detect_types
        self.null_tokens = normalizer.config.null_tokens
        self.keys: list[str] = []
        self.ids: dict[str, int] = {}
        self.by_type: dict[type, dict[Any, int]] = {}
        # the same codes again per (field, type), for `_gather_columns`: small dicts stay in cache
        self.by_field: dict[tuple[int, type], dict[Any, int]] = {}
        self.missed: set[tuple[int, type]] = set()  # (field, type) whose last column held new values

    def _key_code(self, key: str | None) -> int:
        if key is None:
            return -1
        c = self.ids.get(key)
        if c is None:
            c = self.ids[key] = len(self.keys)
            self.keys.append(key)
        return c

    def code_new_strs(self, vals: list[str]) -> None:
        """`code` of each of these distinct strings (exact type `str`) not seen before, in this
        order — the same keys and codes as one `code` call each, for fewer calls per value: most
        new values are such strings (ids, zip codes, names), coded once each."""
        joined = "".join(vals)
        if (self.digits_are_numbers and joined.isdigit() and joined.isascii() and min(map(len, vals)) > 0
                and max(map(len, vals)) <= 15 and not any(map(self.null_tokens.__contains__, vals))
                and "\n0" not in "\n" + "\n".join(vals)):
            # all plain ASCII digits without a leading zero (zip codes, ids): their own decimal text
            ks = list(map("n:".__add__, vals))
        else:
            ks = list(map(self._str_key, vals))
        ids, keys = self.ids, self.keys
        new = [k for k in dict.fromkeys(ks) if k is not None and k not in ids]  # first appearances, in order
        if new:
            ids.update(zip(new, range(len(keys), len(keys) + len(new))))
            keys.extend(new)
        self.by_type.setdefault(str, {}).update(zip(vals, map(ids.get, ks, repeat(-1))))

    def _str_key(self, v: str) -> str | None:
        """The canonical key of a string (exact type `str`)."""
        if v.isdigit() and v.isascii() and len(v) <= 15 and self.digits_are_numbers and v not in self.null_tokens:
            # plain ASCII digits (ids, codes, zip codes): what `_string_key` makes of them (no
            # space, case or currency to strip; a number before any date shape), exactly, as such
            # a float is an integer below 1e16
            return "n:" + str(int(v))
        return self.normalizer._string_key(v)

    def code(self, v: Any) -> int:
        """Slow path: a value not seen before (or not hashable)."""
        tv = type(v)
        if tv is str or tv is int or tv is float:
            # The plain JSON scalars (most new values): `Normalizer.key` without its generic
            # dispatch (ABC isinstance checks, hash probe, its own per-value cache, which this
            # table already is). Same rules as `Normalizer._compute` for these exact types.
            if tv is str:
                key = self._str_key(v)
            elif tv is int:
                key = int_key(v)
            elif v != v:  # NaN is absent, and never cached (it is not equal to itself)
                return -1
            else:
                key = float_key(v)
            c = self._key_code(key)
            self.by_type.setdefault(tv, {})[v] = c
            return c
        if isinstance(v, (Mapping, list, tuple, set)):
            return self._key_code(_structured_key(self.normalizer, v))
        try:
            hash(v)
        except TypeError:
            return self._key_code(self.normalizer.key(v))
        c = self._key_code(self.normalizer.key(v))
        if v == v:  # NaN is never equal to itself: do not fill the cache with NaN objects
            self.by_type.setdefault(tv, {})[v] = c
        return c


def _gather(
    objs: Sequence[Mapping[str, Any]],
    flatten: bool,
    table: _PathTable,
    keys: _KeyTable,
    codes: array,
    kcodes: array,
) -> np.ndarray:
    """Append every leaf's path code and canonical-key code; returns the number of leaves per object.

    The hot loop of the task: one pass over each object with an explicit stack (no recursion).
    An object's child path codes are cached by (parent code, tuple of keys), so records of the
    same shape cost one look-up per object; a leaf costs one look-up of its value's key code; the
    normaliser runs only for values never seen before."""
    counts: list[int] = []
    shapes: dict[tuple[int, tuple[Any, ...]], list[int]] = table.shapes
    list_shapes: dict[tuple[int, int], list[int]] = table.list_shapes
    new_code, top = table.code, table.top
    key_code = keys.code
    str_get = keys.by_type.setdefault(str, {}).get
    int_get = keys.by_type.setdefault(int, {}).get
    float_get = keys.by_type.setdefault(float, {}).get
    bool_get = keys.by_type.setdefault(bool, {}).get
    append_c, append_k = codes.append, kcodes.append
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived tuples and no cycles: collection passes would dominate
    try:
        for obj in objs:
            n0 = len(codes)
            stack: list[tuple[int, Any]] = [(-1, obj)]
            push, pop = stack.append, stack.pop
            while stack:
                c, v = pop()
                tv = type(v)
                if tv is list or tv is tuple:  # non-empty (flatten only)
                    lshape = (c, len(v))
                    child = list_shapes.get(lshape)
                    if child is None:
                        child = list_shapes[lshape] = [new_code(c, j, True) for j in range(len(v))]
                    items = zip(child, v)
                else:  # a mapping
                    if not v:
                        if c >= 0:
                            append_c(c)
                            append_k(-1)  # an empty object is an absent value
                        continue
                    shape = (c, tuple(v))
                    child = shapes.get(shape)
                    if child is None:
                        child = shapes[shape] = [new_code(c, k, False) if flatten or c >= 0 else top(k) for k in shape[1]]
                    items = zip(child, v.values())
                for cc, x in items:
                    tx = type(x)
                    if tx is str:
                        kc = str_get(x)
                    elif x is None:
                        kc = -1
                    elif tx is int:
                        kc = int_get(x)
                    elif tx is float:
                        kc = float_get(x)
                    elif tx is bool:
                        kc = bool_get(x)
                    elif not flatten:
                        kc = None
                    elif tx is dict or tx is list or tx is tuple or isinstance(x, Mapping):
                        if x:
                            push((cc, x))
                        else:
                            append_c(cc)
                            append_k(-1)
                        continue
                    else:
                        kc = None
                    append_c(cc)
                    append_k(key_code(x) if kc is None else kc)
            counts.append(len(codes) - n0)
    finally:
        if gc_was_enabled:
            gc.enable()
    return np.asarray(counts, dtype=np.int64)


def _take(seq: Sequence[Any], idx: np.ndarray) -> Sequence[Any]:
    """The items of `seq` at the positions `idx` (one C-level call, not a Python loop)."""
    if len(idx) == 1:
        return (seq[int(idx[0])],)
    return itemgetter(*idx.tolist())(seq)


def _groups(labels: list[Any]) -> list[tuple[Any, np.ndarray | None]]:
    """Positions of each distinct label, in order of first appearance (None: every position)."""
    if labels.count(labels[0]) == len(labels):  # the usual case: one label (compared, not hashed)
        return [(labels[0], None)]
    first: dict[Any, int] = {}
    ids = np.asarray(list(map(first.setdefault, labels, range(len(labels)))), dtype=np.int64)  # a label's first position
    order = np.argsort(ids, kind="stable")
    cuts = np.flatnonzero(ids[order][1:] != ids[order][:-1]) + 1
    return [(labels[int(part[0])], part) for part in np.split(order, cuts)]


_NONE_NEW = np.zeros(0, dtype=np.int64)


def _column_codes(keys: _KeyTable, fkey: tuple[int, type], col: Sequence[Any]) -> tuple[dict[Any, int], np.ndarray, np.ndarray]:
    """A column's codes in the dict of its field and type (`keys.by_field[fkey]`, made when new):
    that dict, the codes (-3 where the dict does not hold the value yet) and the positions of those
    values. A column whose every value the dict holds is looked up whole, by one C-level call (no
    default per value); after a column with new values (or an unhashable one) the field goes value
    by value until one of its columns is all known again."""
    fd = keys.by_field.get(fkey)
    if fd is None:
        fd = keys.by_field[fkey] = {}
    m = len(col)
    if m > 1 and fkey not in keys.missed:
        try:
            return fd, np.fromiter(itemgetter(*col)(fd), dtype=np.int64, count=m), _NONE_NEW
        except (KeyError, TypeError):
            keys.missed.add(fkey)
    try:
        kc = np.fromiter(map(fd.get, col, repeat(-3, m)), dtype=np.int64, count=m)
    except TypeError:  # an unhashable value (kept whole when not flattening): sorted out by type
        kc = np.full(m, -3, dtype=np.int64)
    miss = np.flatnonzero(kc == -3)
    if not len(miss):
        keys.missed.discard(fkey)
    return fd, kc, miss


def _shapes(objs: Sequence[Mapping[str, Any]]) -> list[tuple[Any, np.ndarray | None]]:
    """`_groups` of the objects' key tuples. The usual case, every object with the same keys in the
    same order, is told from the key columns (each one key throughout), without a tuple per object."""
    n = len(objs)
    lens = list(map(len, objs))
    if lens.count(lens[0]) == n and all(ks.count(ks[0]) == n for ks in zip(*objs)):
        return [(tuple(objs[0]), None)]
    return _groups(list(map(tuple, objs)))


_NOTHING = object()
_CONTAINERS = frozenset({dict, list})


def _truths_objects(
    child: list[int], shape: tuple[Any, ...], rs: np.ndarray, cols: Iterable[Sequence[Any]], truths: Sequence[Any],
    kept: list[tuple[np.ndarray, int]],
) -> Iterable[tuple[int, np.ndarray, Sequence[Any]]]:
    """The top-level columns of predictions of one shape (`rs`: their positions, and their truths'
    in `truths`) without the objects and lists that are exactly their truth's — equal, of the same
    type and with the same JSON text (true / 1 / 1.0 apart), all of a column checked at once —:
    those are noted in `kept` as (positions, path code), for the caller to take the truth's leaves
    under them instead of walking them again. Scalar columns are left whole (looking them up costs
    no more than comparing them)."""
    tsub = _take(truths, rs)
    if set(map(type, tsub)) != {dict}:
        return zip(child, repeat(rs), cols)
    m = len(rs)
    out: list[tuple[int, np.ndarray, Sequence[Any]]] = []
    for cc, k, col in zip(child, shape, cols):
        kinds = tuple(map(type, col))
        if _CONTAINERS.isdisjoint(kinds):
            out.append((cc, rs, col))
            continue
        tcol = tuple(map(dict.get, tsub, repeat(k, m), repeat(_NOTHING, m)))
        try:
            hit = np.fromiter(map(operator.eq, col, tcol), dtype=bool, count=m)
        except Exception:  # too deep for ==, or a value whose == is not a truth value
            out.append((cc, rs, col))
            continue
        hit &= np.fromiter(map(operator.is_, kinds, map(type, tcol)), dtype=bool, count=m)
        hit &= np.fromiter(map(_CONTAINERS.__contains__, kinds), dtype=bool, count=m)
        idx = np.flatnonzero(hit)
        if len(idx):
            hit[idx] = _same_texts(_take(col, idx), _take(tcol, idx))
            idx = np.flatnonzero(hit)
        if not len(idx):
            out.append((cc, rs, col))
            continue
        kept.append((rs[idx], cc))
        if len(idx) < m:
            miss = np.flatnonzero(~hit)
            out.append((cc, rs[miss], _take(col, miss)))
    return out


def _gather_columns(
    objs: Sequence[Mapping[str, Any]], flatten: bool, table: _PathTable, keys: _KeyTable,
    truths: Sequence[Any] | None = None, kept: list[tuple[np.ndarray, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every leaf of `objs` as (object index, path code, canonical-key code) arrays, walked by
    column rather than object by object: the objects of one shape (the same keys in the same order
    under the same path) are taken together, each key's values form one column, and a column of
    one type is coded by one C-level dict look-up per value (`map`), so Python runs once per
    column and shape, not once per leaf. Nested objects and lists go on as further columns.

    The same leaves and codes as `_gather`, in another order (callers index cells by (object,
    path), so order is immaterial) — except where two keys of one object have the same path name
    (`1` and `"1"`): there the per-object walk's order decides which leaf a cell keeps, so None is
    returned and the caller walks object by object. So it is too when the columns come out much
    more numerous than the objects (long lists, deep nesting, objects of many shapes): a column
    costs a few numpy calls, which only pay off over many values.

    Given `truths` (aligned with `objs`) and `kept`, a top-level object or list exactly its
    truth's is not walked but noted in `kept` (`_truths_objects`); no key that is not a string
    may have been met (`table.odd_keys`), as two keys could then share a path name."""
    n = len(objs)
    budget = 2 * n + _SLACK  # columns before the per-object walk is the cheaper one
    fast = {t: keys.by_type.setdefault(t, {}).get for t in (str, int, float, bool)}
    key_code, new_code, top = keys.code, table.code, table.top
    shapes, list_shapes = table.shapes, table.list_shapes
    recs: list[np.ndarray] = []
    kcodes: list[np.ndarray] = []
    pcodes: list[int] = []
    counts: list[int] = []
    # work: (is a list group, parent path code, object indices, non-empty mappings or lists)
    work: list[tuple[bool, int, np.ndarray, Sequence[Any]]] = [(False, -1, np.arange(n, dtype=np.int64), objs)]
    columns: list[tuple[int, np.ndarray, Sequence[Any]]] = []
    none_type = type(None)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # many short-lived tuples and no cycles, as in `_gather`
    try:
        while work or columns:
            if columns:
                budget -= 1
                if budget < 0:
                    return None
                cc, ri, col = columns.pop()
                if type(col[0]) is str:
                    # most leaf columns hold strings: look the whole column up in the field's
                    # dict of strings first (no other type is equal to a string, so a hit is a
                    # string), then sort out by type only the values it does not hold yet
                    m = len(col)
                    _, kc, miss = _column_codes(keys, (table.field(cc), str), col)
                    if len(miss) < m:
                        if len(miss):
                            hit = np.flatnonzero(kc != -3)
                            recs.append(ri[hit])
                            kcodes.append(kc[hit])
                        else:
                            recs.append(ri)
                            kcodes.append(kc)
                        pcodes.append(cc)
                        counts.append(m - len(miss))
                        if not len(miss):
                            continue
                        ri, col = ri[miss], _take(col, miss)
                tset = set(map(type, col))
                if len(tset) == 1:
                    parts: list[tuple[type, np.ndarray, Sequence[Any]]] = [(tset.pop(), ri, col)]
                else:  # split the column by type
                    tid = {t: i for i, t in enumerate(tset)}
                    ti = np.fromiter(map(tid.__getitem__, map(type, col)), dtype=np.int64, count=len(col))
                    parts = []
                    for t, i in tid.items():
                        idx = np.flatnonzero(ti == i)
                        parts.append((t, ri[idx], _take(col, idx)))
                for t, rs, vs in parts:
                    m = len(vs)
                    get = fast.get(t)
                    if get is not None:
                        # a small dict per field (path pattern) and type: look-ups stay in cache
                        fd, kc, miss = _column_codes(keys, (table.field(cc), t), vs)
                        if len(miss):  # values new to this field: each distinct one is coded once
                            fresh = _take(vs, miss)
                            if t is str:  # the usual case: coded together, the field's dict filled at once
                                distinct = list(set(fresh))
                                todo = [v for v, c in zip(distinct, map(get, distinct)) if c is None]
                                if todo:
                                    keys.code_new_strs(todo)
                                fd.update(zip(distinct, map(get, distinct)))
                                distinct = ()
                            else:
                                distinct = set(fresh)
                            for v in distinct:
                                c = get(v)
                                if c is None:
                                    c = key_code(v)
                                if v == v:  # NaN (absent) is never cached
                                    fd[v] = c
                            kc[miss] = np.fromiter(map(fd.get, fresh, repeat(-1, len(miss))), dtype=np.int64, count=len(miss))
                    elif t is none_type:
                        kc = np.full(m, -1, dtype=np.int64)
                    elif flatten and (t is dict or t is list or t is tuple or issubclass(t, Mapping)):
                        lens = np.fromiter(map(len, vs), dtype=np.int64, count=m)
                        full = lens > 0
                        if full.all():
                            work.append((t is list or t is tuple, cc, rs, vs))
                            continue
                        if full.any():
                            idx = np.flatnonzero(full)
                            work.append((t is list or t is tuple, cc, rs[idx], _take(vs, idx)))
                        rs = rs[~full]
                        m = len(rs)
                        kc = np.full(m, -1, dtype=np.int64)  # an empty object or list is an absent value
                    else:
                        kc = np.fromiter(map(key_code, vs), dtype=np.int64, count=m)
                    recs.append(rs)
                    kcodes.append(kc)
                    pcodes.append(cc)
                    counts.append(m)
                continue
            is_list, c, ri, vals = work.pop()
            groups = _groups(list(map(len, vals))) if is_list else _shapes(vals)
            if len(groups) > len(vals) // 8 + _SLACK // 8:
                return None  # a few objects per shape: columns of a few values
            if is_list:
                for length, idx in groups:
                    sub = vals if idx is None else _take(vals, idx)
                    rs = ri if idx is None else ri[idx]
                    child = list_shapes.get((c, length))
                    if child is None:
                        child = list_shapes[(c, length)] = [new_code(c, j, True) for j in range(length)]
                    columns.extend(zip(child, repeat(rs), zip(*sub)))
                continue
            for shape, idx in groups:
                if not shape:
                    continue  # an empty record (only records reach here empty)
                sub = vals if idx is None else _take(vals, idx)
                rs = ri if idx is None else ri[idx]
                child = shapes.get((c, shape))
                if child is None:
                    child = shapes[(c, shape)] = [new_code(c, k, False) if flatten or c >= 0 else top(k) for k in shape]
                if len(set(child)) < len(child):
                    return None
                rows = map(dict.values, sub) if set(map(type, sub)) == {dict} else [list(v.values()) for v in sub]
                if c == -1 and truths is not None and kept is not None and not table.odd_keys:
                    columns.extend(_truths_objects(child, shape, rs, zip(*rows), truths, kept))
                else:
                    columns.extend(zip(child, repeat(rs), zip(*rows)))
    finally:
        if gc_was_enabled:
            gc.enable()
    if not recs:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    rec = np.concatenate(recs)
    path = np.repeat(np.asarray(pcodes, dtype=np.int64), counts)
    return rec, path, np.concatenate(kcodes)


def _same_leaves(objs: Sequence[Any], truths: Sequence[Any]) -> np.ndarray:
    """Which predictions have exactly their truth's leaves, so their codes can be copied instead
    of walked. `==` alone would hide a type (`True == 1 == 1.0`, a big integer equal to a float),
    so an equal pair must also serialise to the same JSON text (true / 1 / 1.0 apart); a value
    orjson does not write (a non-string key, a set, an integer beyond 64 bits, a subclass of
    list, dict, str or int…) is walked."""
    n = len(objs)
    if _dumps is None or n == 0:
        return np.zeros(n, dtype=bool)
    try:
        eq = np.fromiter(map(operator.eq, objs, truths), dtype=bool, count=n)
    except Exception:  # too deep for ==, or a value whose == is not a truth value: pair by pair
        eq = np.zeros(n, dtype=bool)
        for i, (a, b) in enumerate(zip(objs, truths)):
            try:
                eq[i] = bool(a == b)
            except Exception:
                pass
    idx = np.flatnonzero(eq)
    if len(idx):
        eq[idx] = _same_texts(_take(objs, idx), _take(truths, idx))
    return eq


def _same_texts(mine: Sequence[Any], theirs: Sequence[Any]) -> np.ndarray:
    """Whether each pair (equal by `==`) has the same JSON text, a value orjson does not write
    never. The usual case first: the two lists as two texts (the text of a JSON array determines
    each item's text); pair by pair only when those differ or one is not written."""
    whole = _typed_text(list(mine))
    if whole is not None and whole == _typed_text(list(theirs)):
        return np.ones(len(mine), dtype=bool)
    return np.fromiter((a is not None and a == b for a, b in zip(map(_typed_text, mine), map(_typed_text, theirs))), dtype=bool, count=len(mine))


def _typed_text(value: Any) -> bytes | None:
    try:
        return _dumps(value, option=_TYPED)  # type: ignore[misc]
    except TypeError:  # orjson's JSONEncodeError included
        return None


def _leaves(
    sides: Sequence[Sequence[Mapping[str, Any]]], flatten: bool, table: _PathTable, keys: _KeyTable
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per side (the truth, then each model, for the same records): (object index, path code, key
    code) of every leaf. Walked by column in batches of `_BATCH` records (see `_gather_columns`;
    object by object where path names collide or columns would be tiny); a prediction with exactly its truth's leaves
    (`_same_leaves`) takes the truth's codes instead of being walked."""
    parts: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in sides]
    n = len(sides[0]) if sides else 0
    for b0 in range(0, n, _BATCH):
        truth = sides[0][b0:b0 + _BATCH]
        t_rec, t_path, t_key = _walk(truth, flatten, table, keys)
        parts[0].append((t_rec + b0, t_path, t_key))
        for objs, out in zip(sides[1:], parts[1:]):
            batch = objs[b0:b0 + _BATCH]
            same = _same_leaves(batch, truth)
            other = np.flatnonzero(~same)
            kept: list[tuple[np.ndarray, int]] = []
            if len(other) == len(batch):
                rec, path, kc = _walk(batch, flatten, table, keys, truth, kept)
            else:
                rec, path, kc = _walk(_take(batch, other), flatten, table, keys, _take(truth, other), kept) if len(other) else (_NONE_NEW,) * 3
            if kept or len(other) < len(batch):
                copied = same[t_rec]
                if kept:  # the truth's leaves under the top-level keys whose value was exactly the truth's
                    t_top = table.top_codes()[t_path]
                    by_code: dict[int, list[np.ndarray]] = {}
                    for at, cc in kept:
                        by_code.setdefault(cc, []).append(other[at])
                    for cc, ats in by_code.items():
                        mark = np.zeros(len(batch), dtype=bool)
                        for at in ats:
                            mark[at] = True
                        copied |= (t_top == cc) & mark[t_rec]
                rec = np.concatenate([t_rec[copied], other[rec]])
                path = np.concatenate([t_path[copied], path])
                kc = np.concatenate([t_key[copied], kc])
            out.append((rec + b0, path, kc))
    empty = np.zeros(0, dtype=np.int64)
    return [
        (out[0] if len(out) == 1 else tuple(np.concatenate(x) for x in zip(*out))) if out else (empty, empty.copy(), empty.copy())
        for out in parts
    ]  # type: ignore[misc]


def _walk(
    objs: Sequence[Mapping[str, Any]], flatten: bool, table: _PathTable, keys: _KeyTable,
    truths: Sequence[Any] | None = None, kept: list[tuple[np.ndarray, int]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(object index, path code, key code) of every leaf of `objs`: by column, else object by
    object. With `truths` and `kept`: see `_gather_columns` (nothing is kept object by object)."""
    found = _gather_columns(objs, flatten, table, keys, truths if _dumps is not None else None, kept) if len(objs) else None
    if found is None and kept:
        kept.clear()
    if found is None:
        paths, kcodes = array("q"), array("q")
        counts = _gather(objs, flatten, table, keys, paths, kcodes)
        found = np.repeat(np.arange(len(objs), dtype=np.int64), counts), np.array(paths, dtype=np.int64), np.array(kcodes, dtype=np.int64)
    return found


def _dumps_iterative(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False)` without recursion (any depth)."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, x = stack.pop()
        if literal:
            out.append(x)
        elif isinstance(x, dict):
            seq: list[tuple[bool, Any]] = [(True, "{")]
            for i, (k, v) in enumerate(sorted(x.items())):
                seq.append((True, (", " if i else "") + json.dumps(k, ensure_ascii=False) + ": "))
                seq.append((False, v))
            seq.append((True, "}"))
            stack.extend(reversed(seq))
        elif isinstance(x, (list, tuple)):
            seq = [(True, "[")]
            for i, v in enumerate(x):
                if i:
                    seq.append((True, ", "))
                seq.append((False, v))
            seq.append((True, "]"))
            stack.extend(reversed(seq))
        else:
            out.append(json.dumps(x, ensure_ascii=False))
    return "".join(out)


def _structured_key(normalizer: Normalizer, v: Any) -> str | None:
    try:
        return normalizer.key(v)
    except RecursionError:  # json.dumps recurses: a very deep value takes the iterative path
        from extracteval.core.normalize import _canonical_json

        return None if len(v) == 0 else "j:" + _dumps_iterative(_canonical_json(v, normalizer))


def auto_strategy(canonical_key: str) -> Strategy:
    """Auto-detected strategy from the truth value's type: numeric, boolean, date, email,
    array and object → EXACT; any other text → SEMANTIC."""
    t = canonical_key[0]
    if t != "t":
        return Strategy.EXACT
    return Strategy.EXACT if _EMAIL.match(canonical_key[2:]) else Strategy.SEMANTIC


def _pattern(path: str) -> str:
    return _INDEX.sub("[*]", path)


def _configured_strategy(path: str, strategies: Mapping[str, Strategy], flatten: bool) -> tuple[str, Strategy] | None:
    """The configured strategy of a path: the longest config key that is the path itself, its
    `[*]` pattern, or an ancestor of either (the exact path wins over the pattern at equal length).
    Linear in the path length for each config key, so 10,000-deep paths stay cheap."""
    hit = strategies.get(path)
    if hit is not None or not flatten:
        return None if hit is None else (path, hit)
    pattern = _pattern(path)
    best: tuple[int, int, str] | None = None
    for key in strategies:
        n = len(key)
        for rank, candidate in ((1, path), (0, pattern)):
            if n <= len(candidate) and candidate.startswith(key) and (n == len(candidate) or candidate[n] in ".["):
                if best is None or (n, rank) > best[:2]:
                    best = (n, rank, key)
    return None if best is None else (best[2], strategies[best[2]])


# ---------------------------------------------------------------------------------------------
# scoring


def _similarity_scores(
    backend: SimilarityBackend, pair_ids: np.ndarray, key_list: Sequence[str], n_keys: int, what: str
) -> np.ndarray:
    """Similarity of every distinct (truth key, prediction key) pair, one batched call."""
    upairs, inv = np.unique(pair_ids, return_inverse=True)
    gi, ai = np.divmod(upairs, n_keys)
    texts_a = [key_list[i][2:] for i in gi]
    texts_b = [key_list[i][2:] for i in ai]
    raw = np.asarray(backend.similarity(texts_a, texts_b), dtype=np.float64).ravel()
    if raw.shape[0] != len(upairs):
        raise InputError(
            f"{what} similarity backend {getattr(backend, 'name', backend)!r} returned {raw.shape[0]} scores for {len(upairs)} pairs."
        )
    return raw[inv]


class _Positions(Mapping[str, int]):
    """Record id → position in the sorted ids, built on first use (safety scores, statuses and
    unknown ids need it; plain predictions do not)."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self._pos: dict[str, int] | None = None

    @property
    def pos(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = dict(zip(self.order, range(len(self.order))))
        return self._pos

    def __getitem__(self, rid: str) -> int:
        return self.pos[rid]

    def __contains__(self, rid: object) -> bool:
        return rid in self.pos

    def __iter__(self) -> Iterator[str]:
        return iter(self.pos)

    def __len__(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class _ModelInput:
    """One model's predictions aligned to the sorted truth ids (internal)."""

    meta: JsonPredictions
    objs: list[Mapping[str, Any]]
    safety: np.ndarray
    given: int
    flags: dict[str, tuple[str, ...]]
    excluded: np.ndarray


def _model_input(p: JsonPredictions, order: list[str], pos: Mapping[str, int], cfg: JsonConfig, truth_source: str) -> _ModelInput:
    """Align one model's records to the truth: empty objects for missing or invalid predictions
    (flagged), validated safety scores and statuses."""
    n = len(order)
    what = p.source or f"predictions of model {p.name!r}"
    records = p.records
    if type(records) is dict and set(map(type, records)) <= {str}:
        recs: Mapping[str, Any] = records  # the usual case: the ids are strings already
    else:
        recs = {str(k): v for k, v in records.items()}
    objs: list[Mapping[str, Any]]
    in_order = len(recs) == n and list(recs) == order
    if in_order:  # the predictions in id order already (every truth id found): no look-up per id
        objs = list(recs.values())
    else:
        objs = list(map(recs.get, order, repeat(_NO_RECORD)))
    # every prediction id is a truth id when as many truth ids found one as there are predictions
    if not in_order and n - sum(map(operator.is_, objs, repeat(_NO_RECORD))) != len(recs):
        extra = sorted(recs.keys() - pos.keys())
        shown = ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else "")
        raise InputError(
            f"{what}: {len(extra)} record id(s) are not in the ground truth ({truth_source}): {shown}. "
            "Every prediction must have a ground-truth record."
        )
    flags: dict[str, list[str]] = {}
    if set(map(type, objs)) != {dict}:  # some record is missing, or not an object
        for i, (rid, obj) in enumerate(zip(order, objs)):
            if obj is _NO_RECORD:
                objs[i] = {}
                flags[rid] = ["missing_prediction"]
            elif type(obj) is not dict and not isinstance(obj, Mapping):
                objs[i] = {}
                flags[rid] = [f"invalid_prediction:{type(obj).__name__}"]
    safety = np.full(n, cfg.default_safety)
    given = 0
    for rid, s in (p.safety or {}).items():
        rid = str(rid)
        if rid not in pos:
            continue
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) or not 0.0 <= float(s) <= 1.0:
            raise InputError(f"{what}: record {rid!r}: `{cfg.safety_key}` must be a number in [0, 1], but found {s!r}.")
        safety[pos[rid]] = float(s)
        given += 1
    excluded = np.zeros(n, dtype=bool)
    for rid, st in (p.status or {}).items():
        rid = str(rid)
        key = "" if st is None else str(st).strip().lower()
        if key not in ("", "ok", "pending", "error"):
            raise InputError(f"{what}: record {rid!r}: `status` must be one of ok, pending, error (or empty), but found {st!r}.")
        if key in ("pending", "error") and rid in pos:
            excluded[pos[rid]] = True
            flags.setdefault(rid, []).append(f"excluded:{key}")
    return _ModelInput(meta=p, objs=objs, safety=safety, given=given, flags={k: tuple(v) for k, v in flags.items()}, excluded=excluded)


def _score_chunk(
    t_id: np.ndarray,
    t_key: np.ndarray,
    a_id: np.ndarray,
    a_key: np.ndarray,
    *,
    nc: int,
    n_paths: int,
    keys: list[str],
    override: np.ndarray,
    auto: np.ndarray,
    key_type: np.ndarray,
    safety: np.ndarray,
    excluded: np.ndarray,
    cfg: JsonConfig,
    fuzzy: SimilarityBackend,
    similarity: SimilarityBackend,
) -> tuple[dict[str, np.ndarray], tuple[Any, ...], int, _Cells]:
    """Phases 0–4 for one chunk of `nc` records of one model.

    Leaves are identified by `record * n_paths + path code` (truth `t_*`, prediction `a_*`).
    Returns the per-record arrays, the per-path-code counts (excluded records left out), the
    number of similarity failures and the per-cell listing (record index local to the chunk).
    """
    n_keys = max(1, len(keys))
    w = cfg.weights
    lo, hi = cfg.clamp
    if nc * n_paths <= 4 * (len(t_id) + len(a_id)) + 1024:
        # dense id space (the usual case): scatter both sides, no sort needed
        gk_all = np.full(nc * n_paths, -2, dtype=np.int64)
        ak_all = np.full(nc * n_paths, -2, dtype=np.int64)
        gk_all[t_id] = t_key
        ak_all[a_id] = a_key
        u = np.flatnonzero((gk_all != -2) | (ak_all != -2))
        gk, ak = gk_all[u], ak_all[u]
        del gk_all, ak_all
    else:  # sparse (e.g. long lists flattened): ids are unique within each side, sort and merge
        u = np.concatenate([t_id, a_id])
        u.sort()
        if len(u) > 1:
            u = u[np.concatenate([[True], u[1:] != u[:-1]])]
        gk = np.full(len(u), -2, dtype=np.int64)
        ak = np.full(len(u), -2, dtype=np.int64)
        gk[np.searchsorted(u, t_id)] = t_key
        ak[np.searchsorted(u, a_id)] = a_key
    rec, pc = np.divmod(u, n_paths)
    del u
    g_in, a_in = gk != -2, ak != -2
    g_val, a_val = gk >= 0, ak >= 0
    cls = np.full(len(rec), _NULL_BOTH, dtype=np.int8)
    cls[~g_in & a_in] = _EXTRA
    cls[g_in & ~g_val & a_val] = _GT_NULL_HAS
    cls[g_val & ~a_val] = _MISSING
    both = g_val & a_val
    cls[both] = _BOTH

    strat = np.full(len(rec), -1, dtype=np.int8)
    ov = override[pc[both]]
    strat[both] = np.where(ov >= 0, ov, auto[gk[both]])
    score = np.full(len(rec), np.nan)
    equal = both & (gk == ak)
    score[equal] = 1.0
    score[both & ~equal & (strat == _S_EXACT)] = 0.0
    for code, backend, label in ((_S_FUZZY, fuzzy, "FUZZY"), (_S_SEMANTIC, similarity, "SEMANTIC")):
        cand = both & ~equal & (strat == code)
        if not cand.any():
            continue
        idx = np.flatnonzero(cand)
        g_t, a_t = key_type[gk[idx]], key_type[ak[idx]]
        # numbers, booleans and dates are never "nearly" equal: only text or JSON goes to a backend
        textual = np.isin(g_t, ("t", "j")) | np.isin(a_t, ("t", "j"))
        score[idx[~textual]] = 0.0
        ti = idx[textual]
        if len(ti):
            score[ti] = _similarity_scores(backend, gk[ti] * n_keys + ak[ti], keys, n_keys, label)
    thr = np.where(strat == _S_SEMANTIC, cfg.semantic_threshold, np.where(strat == _S_FUZZY, cfg.fuzzy_threshold, 1.0))
    with np.errstate(invalid="ignore"):
        matched = both & (score >= thr - 1e-12)
    del thr
    scorable = both & (strat != _S_IGNORE)
    failures = scorable & np.isnan(score)

    # one bincount per grouping: (record, class), then the scored / matched subsets
    by_cls = np.bincount(rec * 5 + cls, minlength=nc * 5).reshape(nc, 5)
    cnt = {
        "extra_keys": by_cls[:, _EXTRA],
        "gt_null_aio_has_value": by_cls[:, _GT_NULL_HAS],
        "gt_non_null": by_cls[:, _MISSING] + by_cls[:, _BOTH],
        "aio_missing_or_null": by_cls[:, _MISSING],
        "both_non_null": by_cls[:, _BOTH],
    }
    total = by_cls.sum(axis=1)
    n_scored = np.bincount(rec[scorable], minlength=nc)
    n_matched = np.bincount(rec[scorable & matched], minlength=nc)
    completeness = np.divide(cnt["both_non_null"], cnt["gt_non_null"], out=np.ones(nc), where=cnt["gt_non_null"] > 0)
    halluc = np.divide(cnt["extra_keys"] + cnt["gt_null_aio_has_value"], total, out=np.zeros(nc), where=total > 0)
    accuracy = np.divide(n_matched, n_scored, out=np.ones(nc), where=n_scored > 0)
    rqs = np.clip(w.accuracy * accuracy + w.completeness * completeness + w.safety * safety - w.hallucination * halluc, lo, hi)
    # 12 decimals: the worked example's 0.45 + 0.1875 + 0.15 − 0.05 is 0.7375, not 0.73749999999999993
    rqs = np.round(rqs, 12)
    per_record = {
        "rqs": rqs, "completeness": completeness, "hallucination": halluc, "accuracy": accuracy,
        "total_keys": total, "scored": n_scored, "matched": n_matched, **cnt,
    }

    # per raw path code (mapped to fields once all paths are known); excluded records left out
    keep = ~excluded[rec] if excluded.any() else np.ones(len(rec), dtype=bool)
    kb = both & keep
    fields = (
        n_paths,
        np.bincount((pc * 5 + cls)[keep], minlength=n_paths * 5).reshape(n_paths, 5),
        np.bincount(pc[scorable & keep], minlength=n_paths),
        np.bincount(pc[scorable & matched & keep], minlength=n_paths),
        np.bincount(pc[failures & keep], minlength=n_paths),
        np.bincount(pc[kb] * 4 + strat[kb], minlength=n_paths * 4).reshape(n_paths, 4),
    )
    cells = _Cells(
        rec=rec.astype(np.int32),
        path=pc.astype(np.int32),
        cls=cls,
        strategy=strat,
        score=np.where(both, score, np.nan),
        matched=matched,
    )
    return per_record, fields, int((failures & keep).sum()), cells


def rqs_summary(x: np.ndarray) -> dict[str, float]:
    """Mean, median, min and max of per-record RQS (zeros when no record is scored)."""
    if len(x) == 0:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {"mean": float(np.mean(x)), "median": float(np.median(x)), "min": float(np.min(x)), "max": float(np.max(x))}


def _best_attainable(cfg: JsonConfig) -> float:
    """a + c + s (hallucination only subtracts), clamped: 0.85 with the default weights."""
    w = cfg.weights
    lo, hi = cfg.clamp
    return min(hi, max(lo, w.accuracy + w.completeness + w.safety))


def rank_models(means: Mapping[str, Mapping[str, float]], cfg: JsonConfig) -> tuple[list[tuple[Any, str]], float]:
    """The models ranked by the task's declaration (mean RQS, accuracy, completeness, lower
    hallucination, name), each with its tier, and the best attainable RQS the tier is taken on.

    The best attainable RQS is a + c + s (hallucination only subtracts), clamped: 0.85 with the
    default weights, so the tier (excellent ≥ 90%, good ≥ 70%) is the share of that maximum."""
    ranked = rank_by_metrics(RANKING, {m: {"rqs/mean": v["rqs"], "json/accuracy": v["accuracy"], "json/completeness": v["completeness"],
                                          "json/hallucination": v["hallucination"]} for m, v in means.items()})
    best = _best_attainable(cfg)
    return [(r, tier(means[r.model]["rqs"] / best if best > 0 else means[r.model]["rqs"])) for r in ranked], best


def score_json(
    truth: Mapping[str, Any],
    predictions: Sequence[JsonPredictions],
    *,
    config: JsonConfig | None = None,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    truth_source: str = "truth",
) -> JsonResult:
    """Score models' JSON outputs against golden JSON with the four phases and RQS.

    Args:
        truth: record id → golden JSON object.
        predictions: one `JsonPredictions` per model (names unique).
        config: options (strategies, thresholds, weights, flatten…).
        similarity: backend for SEMANTIC fields (default: `LexicalSimilarity`, labelled "lexical").
        fuzzy_similarity: backend for FUZZY fields (default: rapidfuzz with `config.fuzzy_scorer`).
        truth_source: name of the truth input, used in messages.

    Examples:
        >>> gt = {"r1": {"name": "John Smith", "email": "john@example.com", "status": "active"}}
        >>> aio = {"r1": {"name": "John Smyth", "email": "JOHN@example.com", "extra": "x"}}
        >>> r = score_json(gt, [JsonPredictions(name="m", records=aio)], config=JsonConfig(strategies={"name": "FUZZY"}))
        >>> m = r.models["m"]
        >>> m.completeness, m.hallucination, m.accuracy
        (0.6666666666666666, 0.25, 1.0)
    """
    cfg = config or JsonConfig()
    result = count_json(truth, predictions, config=cfg, similarity=similarity, fuzzy_similarity=fuzzy_similarity,
                        truth_source=truth_source).result(cfg)
    if result.n_records == 0:
        result = replace(result, warnings=(*result.warnings, f"{truth_source}: the ground truth has no records."))
    return result


def count_json(
    truth: Mapping[str, Any],
    predictions: Sequence[JsonPredictions],
    *,
    config: JsonConfig,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    truth_source: str = "truth",
) -> JsonCount:
    """The four phases of every record of `truth` for every model (the arguments of `score_json`):
    per-record and per-cell scores and the per-field counts, before any mean or ranking. The
    in-memory score reduces the count of all records; the chunked and Spark engines add up the
    ledgers of the counts of their chunks and reduce them the same way (`json_result`)."""
    cfg = config
    if not predictions:
        raise InputError("no predictions: give at least one model's predictions.")
    seen: set[str] = set()
    for p in predictions:
        if not isinstance(p.name, str) or not p.name.strip():
            raise InputError(f"{p.source or 'predictions'}: a model name must not be empty.")
        if p.name in seen:
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)
    if not isinstance(truth, Mapping):
        raise InputError(f"{truth_source}: expected a mapping of record id to JSON object, but got {type(truth).__name__}.")
    if set(map(type, truth)) <= {str}:  # the usual case: the ids are strings already
        order = sorted(truth)
        # in id order already (a sorted file): the values as they are, no look-up per id
        truth_objs: list[Mapping[str, Any]] = (
            list(truth.values()) if type(truth) is dict and list(truth) == order else list(map(truth.__getitem__, order))
        )
    else:
        truth_ids = {str(k): k for k in truth}
        if len(truth_ids) != len(truth):
            raise InputError(f"{truth_source}: record ids must be unique as strings.")
        order = sorted(truth_ids)
        truth_objs = [truth[truth_ids[rid]] for rid in order]
    n = len(order)
    if set(map(type, truth_objs)) - {dict}:
        for rid, obj in zip(order, truth_objs):
            if type(obj) is not dict and not isinstance(obj, Mapping):
                raise InputError(f"{truth_source}: record {rid!r}: the ground truth must be a JSON object, but found {type(obj).__name__}.")

    normalizer = Normalizer(cfg.normalization)
    if similarity is None:
        from extracteval.core.similarity import LexicalSimilarity

        similarity = LexicalSimilarity()
    fuzzy = fuzzy_similarity or FuzzySimilarity(scorer=cfg.fuzzy_scorer)
    pos = _Positions(order)

    models_in = [_model_input(p, order, pos, cfg, truth_source) for p in sorted(predictions, key=lambda x: x.name)]

    table = _PathTable()
    keytab = _KeyTable(normalizer)
    # per path code: configured strategy (-1 = auto); per key code: auto strategy and type letter.
    # Both grow as new paths and values appear, chunk after chunk.
    override = np.zeros(0, dtype=np.int8)
    auto = np.zeros(0, dtype=np.int8)
    key_type = np.zeros(0, dtype="<U1")
    used_config: set[str] = set()

    def extend_tables() -> None:
        nonlocal override, auto, key_type
        k0 = len(override)
        if len(table.names) > k0:
            new = np.full(len(table.names) - k0, -1, dtype=np.int8)
            if cfg.strategies:
                for i, pth in enumerate(table.names[k0:]):
                    found = _configured_strategy(pth, cfg.strategies, cfg.flatten)
                    if found is not None:
                        used_config.add(found[0])
                        new[i] = _STRATEGY_CODE[found[1]]
            override = np.concatenate([override, new])
        a0 = len(auto)
        if len(keytab.keys) > a0:
            fresh = keytab.keys[a0:]
            letters = np.asarray([k[0] for k in fresh], dtype="<U1")
            new_auto = np.full(len(fresh), _S_EXACT, dtype=np.int8)  # `auto_strategy`: EXACT but for text
            for i in np.flatnonzero(letters == "t").tolist():
                new_auto[i] = _STRATEGY_CODE[auto_strategy(fresh[i])]
            auto = np.concatenate([auto, new_auto])
            key_type = np.concatenate([key_type, letters])

    per_record_keys = ("rqs", "completeness", "hallucination", "accuracy", "total_keys", "scored", "matched", *BUCKETS)
    acc: dict[str, dict[str, Any]] = {
        mi.meta.name: {"per_record": {k: [] for k in per_record_keys}, "cells": [], "fields": [], "failures": 0} for mi in models_in
    }

    # Records are scored in chunks: every array below is bounded by the chunk, so memory stays
    # flat however many records there are; only per-record results and per-cell listings grow.
    for c0 in range(0, n, _CHUNK):
        c1 = min(n, c0 + _CHUNK)
        nc = c1 - c0
        (t_rec, t_path, t_key), *sides = _leaves([truth_objs[c0:c1], *(mi.objs[c0:c1] for mi in models_in)], cfg.flatten, table, keytab)
        extend_tables()
        n_paths = max(1, len(table.names))
        t_id = t_rec * n_paths + t_path
        del t_rec, t_path

        for mi, (a_rec, a_path, a_key) in zip(models_in, sides):
            a_id = a_rec * n_paths + a_path
            del a_rec, a_path
            per_record, fields, n_fail, cells = _score_chunk(
                t_id, t_key, a_id, a_key, nc=nc, n_paths=n_paths, keys=keytab.keys, override=override, auto=auto,
                key_type=key_type, safety=mi.safety[c0:c1], excluded=mi.excluded[c0:c1], cfg=cfg, fuzzy=fuzzy,
                similarity=similarity,
            )
            a = acc[mi.meta.name]
            for k, v in per_record.items():
                a["per_record"][k].append(v)
            a["fields"].append(fields)
            a["failures"] += n_fail
            a["cells"].append(_Cells(rec=cells.rec + np.int32(c0), path=cells.path, cls=cells.cls, strategy=cells.strategy,
                                     score=cells.score, matched=cells.matched))
        del sides, t_id, t_key

    # path names in name order (listings and tables never depend on input order); containers
    # (parents of leaves) have codes but are not keys themselves
    n_codes = len(table.names)
    used = np.zeros(n_codes, dtype=bool)
    for a in acc.values():
        for c in a["cells"]:
            used[c.path] = True
    leaf_codes = np.flatnonzero(used)
    names = np.asarray(table.names, dtype=object)[leaf_codes] if n_codes else np.zeros(0, dtype=object)
    order_idx = np.argsort(names.astype(str), kind="stable") if len(names) else np.zeros(0, dtype=np.int64)
    rank = np.full(max(1, n_codes), -1, dtype=np.int64)
    rank[leaf_codes[order_idx]] = np.arange(len(names))
    path_names = tuple(str(x) for x in names[order_idx])
    unused = sorted(set(cfg.strategies) - used_config)

    # per-field table keys: the path pattern (items[*].price) when flattening
    if cfg.flatten:
        fcodes_u, funiq = pd.factorize(np.asarray([_pattern(x) for x in path_names], dtype=object), sort=True)
        field_of_rank, field_names = fcodes_u.astype(np.int64), tuple(str(x) for x in funiq)
    else:
        field_of_rank, field_names = np.arange(len(path_names), dtype=np.int64), path_names
    n_fields = len(field_names)
    field_of_code = np.full(max(1, n_codes), 0, dtype=np.int64)
    field_of_code[leaf_codes[order_idx]] = field_of_rank

    def to_fields(arr: np.ndarray) -> np.ndarray:
        """Sum rows of a per-code array into per-field rows (only leaf codes carry counts)."""
        out = np.zeros((n_fields, *arr.shape[1:]), dtype=np.int64)
        if len(leaf_codes):
            np.add.at(out, field_of_code[leaf_codes], arr[leaf_codes])
        return out

    models_out: dict[str, _ModelCount] = {}
    for mi in models_in:
        p, a = mi.meta, acc[mi.meta.name]
        pr: dict[str, np.ndarray] = {
            k: (np.concatenate(v) if v else np.zeros(0, dtype=np.float64 if k in ("rqs", "completeness", "hallucination", "accuracy") else np.int64))
            for k, v in a["per_record"].items()
        }
        pr["safety"] = mi.safety
        sums = [np.zeros((max(1, n_codes), 5), dtype=np.int64), *(np.zeros(max(1, n_codes), dtype=np.int64) for _ in range(3)),
                np.zeros((max(1, n_codes), 4), dtype=np.int64)]
        for chunk_paths, *arrays in a["fields"]:
            for total_arr, arr in zip(sums, arrays):
                total_arr[:chunk_paths] += arr
        f_cls, f_scored, f_matched, f_fail, f_st = (to_fields(x) for x in sums)
        fields_out: dict[str, FieldAccuracy] = {}
        for j, fname in enumerate(field_names):
            counts_j = {
                "extra_keys": int(f_cls[j, _EXTRA]),
                "gt_null_aio_has_value": int(f_cls[j, _GT_NULL_HAS]),
                "gt_non_null": int(f_cls[j, _MISSING] + f_cls[j, _BOTH]),
                "aio_missing_or_null": int(f_cls[j, _MISSING]),
                "both_non_null": int(f_cls[j, _BOTH]),
            }
            if counts_j["extra_keys"] + counts_j["gt_null_aio_has_value"] + counts_j["gt_non_null"] == 0:
                continue  # null on both sides everywhere for this model: nothing to report
            fields_out[fname] = FieldAccuracy(
                field=fname,
                counts=counts_j,
                scored=int(f_scored[j]),
                matched=int(f_matched[j]),
                ignored=int(f_st[j, _S_IGNORE]),
                similarity_failures=int(f_fail[j]),
                strategies={_STRATEGIES[c].value: int(f_st[j, c]) for c in range(len(_STRATEGIES)) if f_st[j, c]},
            )
        # the chunks' cells end to end, column by column, each chunk's column released once copied:
        # the peak is one more column, not a second copy of every cell
        cells = a.pop("cells")
        parts = {name: [getattr(c, name) for c in cells] for name in ("rec", "path", "cls", "strategy", "score", "matched")}
        cells.clear()
        merged = _Cells(
            rec=_end_to_end(parts["rec"], np.int32),
            path=_end_to_end(parts["path"], np.int32, via=rank.astype(np.int32)),
            cls=_end_to_end(parts["cls"], np.int8),
            strategy=_end_to_end(parts["strategy"], np.int8),
            score=_end_to_end(parts["score"], np.float64),
            matched=_end_to_end(parts["matched"], np.bool_),
        )
        models_out[p.name] = _ModelCount(meta=p, per_record=pr, cells=merged, fields=fields_out, given=mi.given, flags=mi.flags,
                                         keep=~mi.excluded, failures=a["failures"])

    cfg_dict = cfg.to_dict()
    sem = describe_similarity(similarity)
    cfg_dict["similarity"] = {"semantic": sem, "fuzzy": describe_similarity(fuzzy)}
    cfg_dict["semantic_backend"] = sem.get("name", "custom")
    cfg_dict["rqs_best_attainable"] = _best_attainable(cfg)
    cfg_dict["null_tokens"] = sorted(cfg.normalization.null_tokens)
    return JsonCount(order=tuple(order), paths=path_names, fields=field_names, models=models_out, config=cfg_dict, unused=tuple(unused))


def _end_to_end(parts: list[np.ndarray | None], dtype: Any, *, via: np.ndarray | None = None) -> np.ndarray:
    """`np.concatenate(parts)` (of `via[part]` when given) into one array, releasing each part
    from the list once it is copied, so the memory of both is never held at once."""
    out = np.empty(sum(len(p) for p in parts if p is not None), dtype=dtype)
    at = 0
    for i, part in enumerate(parts):
        assert part is not None
        n = len(part)
        out[at:at + n] = part if via is None else via[part]
        at += n
        parts[i] = None
    return out


# ---------------------------------------------------------------------------------------------
# the count of a set of records, its mergeable ledger, and the one reduction to a result


@dataclass(frozen=True, kw_only=True)
class _ModelCount:
    """One model's scores of a set of records, per record and per cell (internal)."""

    meta: JsonPredictions
    per_record: Mapping[str, np.ndarray]
    cells: _Cells
    fields: Mapping[str, FieldAccuracy]
    given: int
    flags: Mapping[str, tuple[str, ...]]
    keep: np.ndarray  # records in the model's aggregates (not pending or failed)
    failures: int


_PER_RECORD = ("rqs", "completeness", "hallucination", "accuracy", "safety")


@dataclass(frozen=True, kw_only=True)
class JsonCount:
    """`count_json` of a set of records: every model's per-record and per-cell scores. `ledger()`
    is its mergeable summary, `rows()` its per-record scores, `result()` the task's result of
    these records alone (the ledger's reduction, with the per-record listing attached)."""

    order: tuple[str, ...]  # record ids, sorted
    paths: tuple[str, ...]  # the cells' path names, sorted
    fields: tuple[str, ...]
    models: Mapping[str, _ModelCount]  # by model name, sorted
    config: Mapping[str, Any]
    unused: tuple[str, ...]

    def ledger(self, *, records: Mapping[str, tuple[dict[str, Any], ...]] | None = None, records_limit: int | None = None) -> JsonLedger:
        models = {}
        for name, m in self.models.items():
            pr, keep, flags = m.per_record, m.keep, m.flags
            missing = [r for r, f in flags.items() if "missing_prediction" in f]
            invalid = [(r, f[0].split(":", 1)[1]) for r, f in flags.items() if f[0].startswith("invalid_prediction")]
            excluded = [self.order[i] for i in np.flatnonzero(~keep)]
            models[name] = _ModelLedger(
                source=m.meta.source,
                fields=dict(m.fields),
                buckets={b: int(pr[b][keep].sum()) for b in BUCKETS},
                scored=int(pr["scored"][keep].sum()),
                matched=int(pr["matched"][keep].sum()),
                similarity_failures=m.failures,
                safety_given=m.given,
                missing=(len(missing), tuple(missing[:_KEEP_IDS])),
                invalid=(len(invalid), tuple(invalid[:_KEEP_IDS])),
                excluded=(len(excluded), tuple(excluded[:_KEEP_IDS])),
            )
        return JsonLedger(n_records=len(self.order), fields=frozenset(self.fields), models=models, unused_strategies=frozenset(self.unused),
                          config=self.config, records=records, records_limit=records_limit)

    def rows(self) -> np.ndarray:
        """Per record, per model (by name) its five scores and 1.0 / 0.0 for kept / left out."""
        rows = np.empty((len(self.order), 6 * len(self.models)), dtype=np.float64)
        for j, m in enumerate(self.models.values()):
            for k, key in enumerate(_PER_RECORD):
                rows[:, 6 * j + k] = m.per_record[key]
            rows[:, 6 * j + 5] = m.keep
        return rows

    def result(self, cfg: JsonConfig, *, ledger: JsonLedger | None = None, rows: np.ndarray | None = None) -> JsonResult:
        """`ledger` and `rows`: this count's own, when the caller has made them already."""
        res = json_result(self.ledger() if ledger is None else ledger, cfg, self.rows() if rows is None else rows)
        models = {
            name: replace(mr, _record_ids=self.order, _paths=self.paths, _per_record=self.models[name].per_record,
                          _cells=self.models[name].cells, _flags=self.models[name].flags)
            for name, mr in res.models.items()
        }
        return replace(res, models=models)


_KEEP_IDS = 5  # ids a warning names


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    source: str = merge(keep)
    fields: Mapping[str, FieldAccuracy] = merge(by_key())
    buckets: Mapping[str, int] = merge(_add_counts)
    scored: int
    matched: int
    similarity_failures: int
    safety_given: int
    missing: tuple[int, tuple[str, ...]] = merge(counted_first(_KEEP_IDS))  # count, first ids
    invalid: tuple[int, tuple[tuple[str, str], ...]] = merge(counted_first(_KEEP_IDS))  # count, first (id, type)
    excluded: tuple[int, tuple[str, ...]] = merge(counted_first(_KEEP_IDS))


def _kept_records(a: JsonLedger, b: JsonLedger) -> dict[str, tuple[dict[str, Any], ...]] | None:
    """The per-record listing of both parts while both keep one and it stays within the limit."""
    if a.records is None or b.records is None:
        return None
    n = a.n_records + b.n_records
    if a.records_limit is not None and n * max(1, len(a.models)) > a.records_limit:
        return None
    return {m: a.records[m] + b.records[m] for m in a.records}


@dataclass(frozen=True)
class JsonLedger(Ledger):
    """Counts of some records, mergeable by `+` in record order: per model and field the bucket /
    scored / matched / strategy counts, per model the bucket totals (over the records in its
    aggregates), and the ids named by the warnings (the first five of each kind). `records`
    holds the per-record listing of the document while it is wanted and small (None once it is
    not). The per-record scores the means are taken over travel beside it (`JsonCount.rows`)."""

    n_records: int
    fields: frozenset[str] = merge(union)
    models: Mapping[str, _ModelLedger] = merge(by_key())
    unused_strategies: frozenset[str] = merge(intersection)
    config: Mapping[str, Any] = merge(keep)
    records: Mapping[str, tuple[dict[str, Any], ...]] | None = merge(whole(lambda a, b, _: _kept_records(a, b)), default=None)
    records_limit: int | None = merge(keep, default=None)  # None: keep every record (--records all)


def _sorted_fields(names: frozenset[str], flatten: bool) -> tuple[str, ...]:
    """Field names in the order of the per-field table: paths by numpy string order; flattened
    patterns by pandas' sort (as `count_json` orders them)."""
    if not names:
        return ()
    arr = np.asarray(sorted(names), dtype=object)
    if flatten:
        return tuple(str(x) for x in pd.factorize(arr, sort=True)[1])
    return tuple(str(x) for x in arr[np.argsort(arr.astype(str), kind="stable")])


def json_result(ledger: JsonLedger, cfg: JsonConfig, rows: np.ndarray) -> JsonResult:
    """Ratios, ranking and warnings of a ledger: the means, median, min and max of the per-record
    scores in `rows` (`JsonCount.rows`, every record of the ledger in id order), summed counts,
    the per-field table. The in-memory score and every engine end here."""
    names = sorted(ledger.models)
    n = ledger.n_records
    if rows.shape[0] != n:
        raise RuntimeError(f"expected {n} per-record rows, read {rows.shape[0]}")
    warnings: list[str] = []

    def shown(ids: tuple[Any, ...], count: int, fmt: Any = repr) -> str:
        return ", ".join(fmt(x) for x in ids) + (" …" if count > _KEEP_IDS else "")

    for name in names:
        m = ledger.models[name]
        if m.missing[0]:
            warnings.append(
                f"model {name!r}: {m.missing[0]} ground-truth record(s) have no prediction and count as empty predictions: "
                + shown(m.missing[1], m.missing[0])
            )
        if m.invalid[0]:
            warnings.append(
                f"model {name!r}: {m.invalid[0]} prediction(s) are not JSON objects and count as empty predictions: "
                + shown(m.invalid[1], m.invalid[0], lambda x: f"{x[0]!r} ({x[1]})")
            )
        if m.excluded[0]:
            warnings.append(
                f"model {name!r}: {m.excluded[0]} record(s) are pending or failed (status) and are left out of its aggregates: "
                + shown(m.excluded[1], m.excluded[0])
            )
    if ledger.unused_strategies:
        warnings.append(f"strategies given for fields that appear in no record: {sorted(ledger.unused_strategies)}")
    for name in names:
        f = ledger.models[name].similarity_failures
        if f:
            warnings.append(
                f"model {name!r}: the similarity backend failed on {f} value(s); they count as not matched "
                "(see similarity_failures per field)."
            )

    field_names = _sorted_fields(ledger.fields, cfg.flatten)
    order = {s.value: i for i, s in enumerate(_STRATEGIES)}
    per: dict[str, dict[str, np.ndarray]] = {}
    keep: dict[str, np.ndarray] = {}
    fields: dict[str, dict[str, FieldAccuracy]] = {}
    for j, name in enumerate(names):
        per[name] = {k: np.ascontiguousarray(rows[:, 6 * j + i]) for i, k in enumerate(_PER_RECORD)}
        keep[name] = rows[:, 6 * j + 5] == 1.0
        mf = ledger.models[name].fields
        fields[name] = {f: replace(mf[f], strategies=dict(sorted(mf[f].strategies.items(), key=lambda kv: order[kv[0]])))
                        for f in field_names if f in mf}

    means = {m: {k: float(np.mean(per[m][k][keep[m]])) if keep[m].any() else 0.0 for k in _PER_RECORD} for m in names}
    ranked, _ = rank_models(means, cfg)
    models = {}
    for r, tier_name in ranked:
        ml = ledger.models[r.model]
        models[r.model] = ModelJsonResult(
            name=r.model,
            rank=r.rank,
            tier=tier_name,
            tier_colour=TIER_COLOURS[tier_name],
            rqs=rqs_summary(per[r.model]["rqs"][keep[r.model]]),
            completeness=means[r.model]["completeness"],
            hallucination=means[r.model]["hallucination"],
            accuracy=means[r.model]["accuracy"],
            safety=means[r.model]["safety"],
            buckets=dict(ml.buckets),
            scored=ml.scored,
            matched=ml.matched,
            ignored=sum(f.ignored for f in fields[r.model].values()),
            similarity_failures=ml.similarity_failures,
            missing_records=ml.missing[0],
            invalid_predictions=ml.invalid[0],
            excluded_records=ml.excluded[0],
            safety_scores_given=ml.safety_given,
            fields=fields[r.model],
            source=ml.source,
        )
    return JsonResult(
        task="json",
        models=models,
        ranking=tuple(r.model for r, _ in ranked),
        n_records=n,
        fields=field_names,
        warnings=tuple(warnings),
        config=dict(ledger.config),
        unused_strategies=tuple(sorted(ledger.unused_strategies)),
    )


def compare_json(
    truth: Mapping[str, Any],
    prediction: Any,
    *,
    config: JsonConfig | None = None,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    safety_score: float | None = None,
) -> RecordScore:
    """The four phases and RQS for one (golden, predicted) pair of JSON objects.

    Example (with the default *lexical* backend: the bio paraphrase shares too little spelling
    to pass 0.80, so accuracy is 2/3 here; an LLM judge scoring it 0.88 would pass it):
        >>> gt = {"name": "John Smith", "email": "john@example.com",
        ...       "bio": "Senior engineer with 10 years of experience...", "internal_id": None, "status": "active"}
        >>> aio = {"name": "John Smyth", "email": "john@example.com",
        ...        "bio": "Experienced senior engineer, 10+ years...", "internal_id": "abc123", "extra_field": "surprise"}
        >>> r = compare_json(gt, aio, config=JsonConfig(strategies={"name": "FUZZY", "bio": "SEMANTIC"}))
        >>> r.completeness, r.hallucination, r.accuracy, r.buckets["gt_null_aio_has_value"]
        (0.75, 0.3333333333333333, 0.6666666666666666, ('internal_id',))
    """
    res = score_json(
        {"record": truth},
        [JsonPredictions(name="model", records={"record": prediction}, safety={} if safety_score is None else {"record": safety_score})],
        config=config,
        similarity=similarity,
        fuzzy_similarity=fuzzy_similarity,
    )
    return res.models["model"].record("record")
