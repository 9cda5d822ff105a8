"""The `fields` task's vocabulary: its options, the statuses and kinds of a cell, and the result types."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.bootstrap import Interval, PairComparison
from extracteval.core.counts import Counts, checked_zero_division
from extracteval.core.feature_views import checked_types
from extracteval.core.normalize import NormalizationConfig
from extracteval.core.ranking import FieldWinner, Score, format_wins
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError


# `skipped`: the cell is not part of the evaluation (a Kleister key not asked for that document)
STATUSES = ("ok", "pending", "error", "skipped")
KINDS = ("tp", "fp", "fn", "tn", "wrong")  # "wrong" = a wrong value, counted FP and FN
_OK, _PENDING, _ERROR, _SKIPPED = 0, 1, 2, 3
VALUE_TYPES = ("auto", "text", "id")  # how a field's values are read (FieldsConfig.types)
_STATUS_CODE = {"ok": _OK, "": _OK, "pending": _PENDING, "error": _ERROR, "skipped": _SKIPPED}


@dataclass(frozen=True, kw_only=True)
class FieldsConfig:
    """Options of the `fields` task.

    Attributes:
        strategies: per-field strategy; fields not listed use `default_strategy` (EXACT).
        types: per-field value type: `auto` (the default: numbers, booleans, dates and currency
            recognised, so `007` = `7` and `$5` = `5.00`), `text` (text rules only: NFKC, case,
            white space) or `id` (compared exactly as written, white space around it aside). The
            null tokens mean missing under every type.
        fuzzy_threshold: FUZZY match when rapidfuzz similarity ≥ this (0–1).
        fuzzy_scorer: rapidfuzz scorer name (`ratio`, `token_sort_ratio`, …).
        normalization: null tokens, day-first dates, currency stripping.
        zero_division: value of a ratio whose denominator is 0 (except the all-TN rule).
        min_records: warn when a metric rests on fewer valid records than this.
        bootstrap: resamples for confidence intervals; 0 turns them off.
        confidence: interval coverage (0.95).
        seed: random seed of the bootstrap.
        max_examples: examples kept per classification kind, per model and field.
        metadata: ground-truth columns that describe a record (the columns slices and clusters are
            read from): never fields, whatever the strategies say.
    """

    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    default_strategy: Strategy = Strategy.EXACT
    fuzzy_threshold: float = 0.85
    fuzzy_scorer: str = "ratio"
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0
    min_records: int = 30
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0
    max_examples: int = 5
    metadata: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", tuple(str(c) for c in self.metadata))
        checked_zero_division(self.zero_division)
        for name in ("fuzzy_threshold",):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise InputError(f"Expected `{name}` to be a number in [0, 1], but got {v!r}.")
        if not 0.0 < self.confidence < 1.0:
            raise InputError(f"Expected `confidence` to be in (0, 1), but got {self.confidence!r}.")
        if self.bootstrap < 0:
            raise InputError(f"Expected `bootstrap` to be ≥ 0 resamples, but got {self.bootstrap!r}.")
        object.__setattr__(self, "strategies", {str(k): get_strategy(v, where=f"strategy of field {k!r}") for k, v in self.strategies.items()})
        object.__setattr__(self, "default_strategy", get_strategy(self.default_strategy, where="default_strategy"))
        if not isinstance(self.types, Mapping):
            raise InputError(f"Expected `types` to be a mapping of field to type ({', '.join(VALUE_TYPES)}), but got {type(self.types).__name__}.")
        object.__setattr__(self, "types", checked_types(self.types, "field", VALUE_TYPES))
        for fname, s in self.strategies.items():
            if s is Strategy.SEMANTIC:
                raise InputError(
                    f"strategy of field {fname!r}: SEMANTIC needs a similarity backend, which the `fields` task "
                    "does not take; use EXACT, FUZZY or IGNORE (or the `json` task for SEMANTIC)."
                )

    def strategy_for(self, fname: str) -> Strategy:
        return self.strategies.get(fname, self.default_strategy)

    def normalization_for(self, fname: str) -> NormalizationConfig:
        """The value rules of one field, by its type."""
        t = self.types.get(fname, "auto")
        if t == "auto":
            return self.normalization
        return replace(self.normalization, detect_types=False, fold_text=t != "id")

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategies": {k: v.value for k, v in sorted(self.strategies.items())},
            "types": dict(sorted(self.types.items())),
            "default_strategy": self.default_strategy.value,
            "fuzzy_threshold": self.fuzzy_threshold,
            "fuzzy_scorer": self.fuzzy_scorer,
            "normalization": self.normalization.to_dict(),
            "zero_division": self.zero_division,
            "min_records": self.min_records,
            "bootstrap": self.bootstrap,
            "confidence": self.confidence,
            "seed": self.seed,
            **({"metadata": list(self.metadata)} if self.metadata else {}),
        }


@dataclass(frozen=True, kw_only=True)
class FieldMetrics:
    counts: Counts
    precision: float
    recall: float
    f1: float
    accuracy: float
    exact_match_rate: float
    strategy: str
    flags: tuple[str, ...] = ()
    examples: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.counts.no_valid_classifications

    def score(self) -> Score:
        return Score(f1=self.f1, precision=self.precision, recall=self.recall)

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        return {
            "tp": c.tp,
            "fp": c.fp,
            "fn": c.fn,
            "tn": c.tn,
            "excluded": c.excluded,
            "valid_records": c.cells,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "accuracy": self.accuracy,
            "exact_match_rate": self.exact_match_rate,
            "strategy": self.strategy,
            "flags": list(self.flags),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
        }


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    name: str
    fields: Mapping[str, FieldMetrics]
    overall: Mapping[str, float]
    micro: Mapping[str, float]
    totals: Counts
    rank: int
    tier: str
    tier_colour: str
    field_wins: float
    fields_won: tuple[str, ...]
    fields_scored: int
    missing_records: int
    source: str = ""
    overall_f1_ci: Interval | None = None

    @property
    def wins_label(self) -> str:
        return f"Won {format_wins(self.field_wins)} of {self.fields_scored} fields"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "tier": self.tier,
            "tier_colour": self.tier_colour,
            "field_wins": self.field_wins,
            "field_wins_display": format_wins(self.field_wins),
            "wins_label": self.wins_label,
            "fields_won": list(self.fields_won),
            "fields_scored": self.fields_scored,
            "missing_records": self.missing_records,
            "source": self.source,
            "overall": dict(self.overall),
            "micro": dict(self.micro),
            "totals": self.totals.to_dict(),
            "ci": None if self.overall_f1_ci is None else {"overall_f1": self.overall_f1_ci.to_dict()},
            "fields": {k: v.to_dict() for k, v in self.fields.items()},
        }


@dataclass(frozen=True, kw_only=True)
class Check:
    """One validation check: `consistency` checks failing means a bug in the scorer;
    `data_quality` checks describe the input."""

    name: str
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, kw_only=True)
class RecordLedger:
    """Per-record classifications: `counts[model]` is int32 (records, fields, 5) holding
    tp, fp, fn, tn, excluded. Not part of `to_dict()` (it can be large); see `to_frame()`."""

    record_ids: tuple[str, ...]
    fields: tuple[str, ...]
    counts: Mapping[str, np.ndarray]

    def bootstrap_rows(self) -> np.ndarray:
        """(records, models × fields × 4) int64: tp, fp, fn, tn side by side for the models in
        `counts` order — the rows the bootstrap resamples."""
        n, f = len(self.record_ids), len(self.fields)
        if not self.counts:
            return np.zeros((n, 0), dtype=np.int64)
        return np.ascontiguousarray(
            np.concatenate([arr[:, :, :4].reshape(n, f * 4) for arr in self.counts.values()], axis=1), dtype=np.int64
        )

    def bootstrap_row_blocks(self, size: int = 1 << 16) -> Iterator[np.ndarray]:
        """`bootstrap_rows()` in consecutive blocks of `size` records: the bootstrap reads them
        in one pass, without the whole int64 matrix (1M records × 3 models × 20 fields: 1.9 GB)."""
        n, f = len(self.record_ids), len(self.fields)
        for lo in range(0, n, size):
            parts = [arr[lo : lo + size, :, :4].reshape(-1, f * 4) for arr in self.counts.values()]
            yield np.concatenate(parts, axis=1, dtype=np.int64) if parts else np.zeros((min(size, n - lo), 0), dtype=np.int64)

    def to_frame(self) -> pd.DataFrame:
        """Long table: model, record_id, field, tp, fp, fn, tn, excluded."""
        frames = []
        n, f = len(self.record_ids), len(self.fields)
        rid = np.repeat(np.asarray(self.record_ids, dtype=object), f)
        fld = np.tile(np.asarray(self.fields, dtype=object), n)
        for m, arr in self.counts.items():
            flat = arr.reshape(n * f, 5)
            frames.append(
                pd.DataFrame(
                    {
                        "model": m,
                        "record_id": rid,
                        "field": fld,
                        "tp": flat[:, 0],
                        "fp": flat[:, 1],
                        "fn": flat[:, 2],
                        "tn": flat[:, 3],
                        "excluded": flat[:, 4],
                    }
                )
            )
        if not frames:
            return pd.DataFrame(columns=["model", "record_id", "field", "tp", "fp", "fn", "tn", "excluded"])
        return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True, kw_only=True)
class FieldsResult:
    task: str
    models: Mapping[str, ModelResult]
    ranking: tuple[str, ...]
    field_winners: Mapping[str, FieldWinner]
    comparisons: tuple[PairComparison, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    fields: tuple[str, ...]
    n_records: int
    config: Mapping[str, Any]
    records: RecordLedger | None = None
    # the ledger's per-field patterns (`FieldsLedger.field_patterns`, `field_freq`) when intervals
    # are on: what per-field intervals resample, already counted while scoring
    field_patterns: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "n_records": self.n_records,
            "fields": list(self.fields),
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
            "field_winners": {k: v.to_dict() for k, v in self.field_winners.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "checks": [c.to_dict() for c in self.checks],
            "warnings": list(self.warnings),
            "config": dict(self.config),
        }
