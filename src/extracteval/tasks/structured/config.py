"""The `structured` task's vocabulary: its options, a record's counts and outcome, and the result types."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from extracteval.core.ledger import Ledger
from extracteval.core.counts import checked_zero_division
from extracteval.errors import InputError
from extracteval.core.decision_track import PASS_THRESHOLD, ExtendedScores


LIST_MATCHING = ("positional", "optimal")


VALUE_MATCH = ("exact", "normalized")


_ABSENT = object()


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
        checked_zero_division(self.zero_division)
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
        from extracteval.tasks.structured.metrics import count_metrics

        return {k: float(v) for k, v in count_metrics(self.to_dict(), zero_division=zero_division).items()}

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


_COUNT_FIELDS = tuple(f.name for f in fields(StructuredCounts))
