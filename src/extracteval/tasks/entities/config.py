"""The `entities` task's vocabulary: its options, a model's entities, and the result types."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


from extracteval.core.counts import Counts, checked_zero_division, zero_division_text
from extracteval.core.feature_views import (
    FeatureLedger,
    FeatureViewsResult,
    RankedFeatures,
    ViewMetrics,
    checked_types,
)
from extracteval.core.normalize import NormalizationConfig
from extracteval.core.similarity import FUZZY_SCORERS
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError
from extracteval.tasks.entities.metrics import PRESENCE, entities_metrics


ENTITY_VIEWS = {
    "matched": "matched entity pairs only; missed and extra entities are not counted",
    "strict": "every entity; a missed gold entity or an extra prediction counts as an error in every feature",
}


PRESENCE_KEYS = (
    "predicted_count", "gold_count", "matched_count", "extra_predictions_count", "missed_gold_count",
    "precision_entities", "recall_entities", "f1_entities",
)


@dataclass(frozen=True, kw_only=True)
class EntitiesConfig:
    """Options of the `entities` task.

    Attributes:
        features: fields scored per entity (default: every field of any ground-truth entity).
        key_fields: fields the alignment similarity is computed on (default: the fields of
            `weights` when given, else every scored feature).
        weights: alignment weight per key field (default 1.0 each); must be ≥ 0, sum > 0.
        strategies: per-field `EXACT` (default) / `FUZZY` / `SEMANTIC` / `IGNORE` (not scored,
            not aligned on). EXACT similarity is 1 for equal canonical keys, else 0; FUZZY is the
            rapidfuzz similarity of two texts and SEMANTIC the similarity backend's score of two
            texts (the `json` task's backends, `score_entities(similarity=…)`, default `lexical`);
            numbers and dates still compare exactly under both. A matched pair's value is
            *correct* when its score is ≥ `fuzzy_threshold` (FUZZY) or `semantic_threshold`
            (SEMANTIC).
        types: per-feature value type, as in the `labels` task (`auto`, `category`, `text`,
            `number`, `date`).
        match_threshold: pairs whose weighted similarity is below this stay unmatched.
    """

    features: Sequence[str] | None = None
    key_fields: Sequence[str] | None = None
    weights: Mapping[str, float] | None = None
    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    default_strategy: Strategy = Strategy.EXACT
    types: Mapping[str, str] = field(default_factory=dict)
    match_threshold: float = 0.5
    fuzzy_threshold: float = 0.85
    semantic_threshold: float = 0.80
    fuzzy_scorer: str = "ratio"
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0
    max_examples: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "zero_division", checked_zero_division(self.zero_division, allow_nan=True))
        for name in ("match_threshold", "fuzzy_threshold", "semantic_threshold"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise InputError(f"Expected `{name}` to be a number in [0, 1], but got {v!r}.")
        if self.fuzzy_scorer not in FUZZY_SCORERS:
            raise InputError(f"fuzzy scorer: expected one of {', '.join(FUZZY_SCORERS)}, but got {self.fuzzy_scorer!r}.")
        strategies = {str(k): get_strategy(v, where=f"strategy of field {k!r}") for k, v in self.strategies.items()}
        default = get_strategy(self.default_strategy, where="default_strategy")
        object.__setattr__(self, "strategies", strategies)
        object.__setattr__(self, "default_strategy", default)
        if self.weights is not None:
            weights: dict[str, float] = {}
            for k, v in self.weights.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or float(v) < 0:
                    raise InputError(f"weight of field {k!r}: expected a finite number ≥ 0, but got {v!r}.")
                weights[str(k)] = float(v)
            if not weights or sum(weights.values()) <= 0:
                raise InputError(
                    f"weights: expected weights that sum to a positive number, but got {weights or 'no weights'} "
                    f"(sum {sum(weights.values()):g}); give at least one key field a weight > 0."
                )
            object.__setattr__(self, "weights", weights)
        for name in ("features", "key_fields"):
            v = getattr(self, name)
            if v is not None:
                if isinstance(v, str) or not all(isinstance(x, str) and x.strip() for x in v):
                    raise InputError(f"Expected `{name}` to be a list of field names, but got {v!r}.")
                object.__setattr__(self, name, tuple(dict.fromkeys(x.strip() for x in v)))
        if self.key_fields is not None and not self.key_fields:
            raise InputError("key_fields: expected at least one field to align entities on, but got none.")
        object.__setattr__(self, "types", checked_types(self.types, "field"))
        if self.max_examples < 0:
            raise InputError(f"Expected `max_examples` ≥ 0, but got {self.max_examples!r}.")

    def strategy_for(self, fname: str) -> Strategy:
        return self.strategies.get(fname, self.default_strategy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": None if self.features is None else list(self.features),
            "key_fields": None if self.key_fields is None else list(self.key_fields),
            "weights": None if self.weights is None else dict(sorted(self.weights.items())),
            "strategies": {k: v.value for k, v in sorted(self.strategies.items())},
            "default_strategy": self.default_strategy.value,
            "types": dict(sorted(self.types.items())),
            "match_threshold": self.match_threshold,
            "fuzzy_threshold": self.fuzzy_threshold,
            "semantic_threshold": self.semantic_threshold,
            "fuzzy_scorer": self.fuzzy_scorer,
            "normalization": self.normalization.to_dict(),
            "zero_division": zero_division_text(self.zero_division),
        }


@dataclass(frozen=True, kw_only=True)
class ModelEntities:
    """One model's predicted entities: record id → list of entity dicts.

    A predicted entity that is not an object (malformed model output) is counted as an extra
    prediction that matches nothing, never raised.
    """

    name: str
    records: Mapping[str, Sequence[Any]]
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class EntityPresence:
    """Entity detection summary (`entity_detection_summary`): based on which entities
    were matched, not on the values inside them. `records_both_empty` are records with no gold and
    no predicted entity (true negatives; a model right about "no line items" everywhere scores 1.0)."""

    counts: Counts
    invalid_predictions: int
    zero_division: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        r = entities_metrics({"matched": c.tp, "extra": c.fp, "missed": c.fn, "both_empty": c.tn}, which=[f"entities/{k}" for k in PRESENCE],
                             zero_division=self.zero_division)
        return {
            "predicted_count": c.tp + c.fp,
            "gold_count": c.tp + c.fn,
            "matched_count": c.tp,
            "extra_predictions_count": c.fp,
            "missed_gold_count": c.fn,
            **{k: float(r[f"entities/{k}"]) for k in PRESENCE},
            "records_both_empty": c.tn,
            "invalid_predictions_count": self.invalid_predictions,
        }


@dataclass(frozen=True, kw_only=True)
class EntitiesModelResult(RankedFeatures):
    name: str
    presence: EntityPresence
    matched: ViewMetrics
    strict: ViewMetrics
    ledgers: Mapping[str, Mapping[str, FeatureLedger]]  # view → feature → ledger
    mean_match_similarity: float
    records_missing_prediction: int
    records_not_in_truth: int
    examples: Mapping[str, Sequence[Mapping[str, Any]]]
    source: str = ""
    per_record: Any = None  # pandas DataFrame, see `records_frame`; not part of to_dict() (it can be large)

    def records_frame(self) -> Any:
        """One row per record: record_id, gold, predicted, matched, correct_pairs (all features
        right), in_truth, in_predictions — the presence ledger record by record."""
        return self.per_record

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ranking_dict(),
            "source": self.source,
            "entity_detection_summary": self.presence.to_dict(),
            "mean_match_similarity": self.mean_match_similarity,
            "alignment": {
                "records_missing_prediction": self.records_missing_prediction,
                "records_not_in_truth": self.records_not_in_truth,
            },
            "matched": self.matched.to_dict(),
            "strict": self.strict.to_dict(),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
        }


@dataclass(frozen=True, kw_only=True)
class EntitiesResult(FeatureViewsResult):
    key_fields: tuple[str, ...]
    weights: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return self.document(ENTITY_VIEWS, before={"key_fields": list(self.key_fields), "weights": dict(self.weights)})
