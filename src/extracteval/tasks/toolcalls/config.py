"""The `toolcalls` task's vocabulary: its options, the counts of a record, and the result types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from extracteval.core.ledger import Ledger
from extracteval.core.decision_track import PASS_THRESHOLD, ExtendedScores, leaf_key
from extracteval.core.counts import checked_zero_division
from extracteval.errors import InputError


@dataclass(frozen=True, kw_only=True)
class ToolCallConfig:
    """Options of the generic tool-call scoring.

    Attributes:
        value_match: `exact` (canonical JSON leaves) or `normalized` (shared normaliser).
        zero_division: value of an undefined ratio.
        pass_threshold: pass mark for extended similarity / judge scores (default 0.85).
    """

    value_match: str = "exact"
    zero_division: float = 0.0
    pass_threshold: float = PASS_THRESHOLD

    def __post_init__(self) -> None:
        if self.value_match not in ("exact", "normalized"):
            raise InputError(f"value_match: expected one of exact, normalized, but got {self.value_match!r}.")
        checked_zero_division(self.zero_division)
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise InputError(f"pass_threshold: expected a number in [0, 1], but got {self.pass_threshold!r}.")

    def key_fn(self) -> Callable[[Any], str | None]:
        if self.value_match == "exact":
            return leaf_key
        from extracteval.core.normalize import Normalizer

        norm = Normalizer()
        return lambda v: leaf_key(v) if isinstance(v, (dict, list)) else norm.key(v)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallCounts(Ledger):
    """Mergeable counts of the tool-call task."""

    records: int = 0
    valid_records: int = 0
    correct_records: int = 0
    ref_calls: int = 0
    pred_calls: int = 0
    invalid_calls: int = 0
    name_matches: int = 0
    args_exact: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0


    def metrics(self, *, zero_division: float = 0.0) -> dict[str, float]:
        from extracteval.tasks.toolcalls.metrics import count_metrics

        return {k: float(v) for k, v in count_metrics(self.to_dict(), zero_division=zero_division).items()}

    def to_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    id: str
    valid: bool
    correct: bool
    format: str
    pairs: tuple[tuple[int, int], ...]
    counts: ToolCallCounts
    error: str | None = None


# Counts are immutable and few distinct tuples occur: share one instance per tuple (a frozen
# dataclass costs more to build than a dict lookup).
_COUNT_FIELDS = ("records", "valid_records", "correct_records", "ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")


@dataclass(frozen=True, kw_only=True)
class ToolCallModelResult:
    model: str
    counts: ToolCallCounts
    metrics: dict[str, float]
    missing_ids: tuple[str, ...]
    extra_ids: tuple[str, ...]
    failed_ids: tuple[str, ...]
    formats: dict[str, int]
    invalid_examples: tuple[dict[str, Any], ...]
    extended: dict[str, ExtendedScores]
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            **self.metrics,
            **{f"{k}_mean": v.mean for k, v in self.extended.items()},
            **{f"{k}_pass_rate": v.pass_rate for k, v in self.extended.items()},
            "correct_count": self.counts.correct_records,
            "total_count": self.counts.records,
            "failed_ids": list(self.failed_ids),
            "missing_ids": list(self.missing_ids),
            "extra_ids": list(self.extra_ids),  # outputs for ids the truth does not have: ignored
            "counts": self.counts.to_dict(),
            "formats": dict(self.formats),
            "invalid_examples": list(self.invalid_examples),
            "extended": {k: v.to_dict() for k, v in self.extended.items()},
        }


@dataclass(frozen=True, kw_only=True)
class ToolCallResult:
    task: str
    config: ToolCallConfig
    n_records: int
    ranking: tuple[str, ...]
    models: dict[str, ToolCallModelResult]
    records: dict[str, tuple[ToolCallRecord, ...]]

    def per_record(self, metric: str) -> dict[str, np.ndarray]:
        """model → per-record values in record-id order (for the paired bootstrap)."""
        out = {}
        for m, recs in self.records.items():
            if metric == "call_accuracy":
                out[m] = np.array([r.correct for r in recs], dtype=np.float64)
            elif metric == "valid_call_rate":
                out[m] = np.array([r.valid for r in recs], dtype=np.float64)
            else:
                raise KeyError(metric)
        return out

    def count_matrix(self, model: str) -> tuple[tuple[str, ...], np.ndarray]:
        """(count column names, int array records × columns) of one model, in record-id order."""
        cols = tuple(f.name for f in fields(ToolCallCounts))
        rows = [[getattr(r.counts, c) for c in cols] for r in self.records[model]]
        return cols, np.array(rows, dtype=np.int64).reshape(len(rows), len(cols))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "checker": "generic",
            "config": self.config.to_dict(),
            "n_records": self.n_records,
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
        }
