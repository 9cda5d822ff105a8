"""The `json` task's vocabulary: its options (RQS weights included), a model's predictions, the leaf buckets and
strategies, and the result types."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.ledger import Ledger, add_counts, by_key, keep, merge
from extracteval.core.normalize import NormalizationConfig
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError


BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")


# Primary class of one key (cell); gt_non_null is the union of MISSING and BOTH.
_EXTRA, _GT_NULL_HAS, _NULL_BOTH, _MISSING, _BOTH = 0, 1, 2, 3, 4


_STRATEGIES = (Strategy.EXACT, Strategy.FUZZY, Strategy.SEMANTIC, Strategy.IGNORE)


_S_EXACT, _S_FUZZY, _S_SEMANTIC, _S_IGNORE = 0, 1, 2, 3


_STRATEGY_CODE = {s: i for i, s in enumerate(_STRATEGIES)}


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
        metadata: top-level keys that describe a record (the keys slices and clusters are read
            from): taken out of every truth and prediction object before it is scored.
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
    metadata: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", tuple(str(k) for k in self.metadata))
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
            **({"metadata": list(self.metadata)} if self.metadata else {}),
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


def without_keys(objects: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """Record id → object, without these top-level keys (an object that is not a dict as it is)."""
    if not keys:
        return dict(objects)
    drop = set(keys)
    return {rid: {k: v for k, v in obj.items() if k not in drop} if isinstance(obj, dict) else obj for rid, obj in objects.items()}
