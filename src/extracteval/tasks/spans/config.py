"""The `spans` task's vocabulary: its options and the result types (per-tag metrics, match results, the
threshold curve, the error breakdown, a model's spans)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


from extracteval.core.bootstrap import Interval, PairComparison
from extracteval.core.counts import Counts, checked_zero_division, ratios
from extracteval.core.ranking import TIER_COLOURS, format_wins


ERROR_KINDS = ("boundary", "type", "boundary_type", "missed", "spurious")


_EPS = 1e-9  # scores within this of a threshold pass it (0.65·IoU + 0.35·TextSim is not exact in binary)


def curve_thresholds(step: float = 0.05) -> tuple[float, ...]:
    """0.00, step, …, 1.00 (rounded so that 0.05·k prints as written)."""
    n = int(round(1.0 / step))
    if not math.isclose(n * step, 1.0, abs_tol=1e-9):
        raise ValueError(f"Expected `curve_step` to divide 1.0 (e.g. 0.05, 0.1), but got {step!r}.")
    return tuple(round(k * step, 10) for k in range(n + 1))


def _threshold_key(t: float) -> str:
    return f"relaxed@{t:g}"


@dataclass(frozen=True, kw_only=True)
class SpansConfig:
    """Options of the `spans` task.

    Attributes:
        threshold: the main relaxed threshold (default 0.5); relaxed results are also reported at
            every value of `report_thresholds`.
        report_thresholds: extra relaxed thresholds always reported (default: 0.5 and 0.8).
        iou_weight, text_weight: weights of IoU and TextSim in the relaxed score; ≥ 0, sum 1.
        curve_step: spacing of the F1-vs-threshold curve (0.05 → 21 points from 0 to 1).
        scheme: tagging scheme used to decode token files (recorded in the config).
        zero_division: value of a ratio whose denominator is 0.
        max_examples: examples kept per error kind and model.
        relaxed: False skips relaxed matching and the curve (exact results and errors only).
        bootstrap: resamples of documents for the confidence interval of each model's exact
            micro F1 and of the F1 difference of adjacent ranks (paired); 0 turns them off.
        confidence: interval coverage (0.95).
        seed: random seed of the bootstrap.
        min_overlap: for the SemEval-2013 schemas (`nervaluate` in the result): the percentage of
            a gold span's length that a predicted span must overlap to pair with it, 1–100 (1).
    """

    threshold: float = 0.5
    report_thresholds: tuple[float, ...] = (0.5, 0.8)
    iou_weight: float = 0.65
    text_weight: float = 0.35
    curve_step: float = 0.05
    scheme: str | None = None
    zero_division: float = 0.0
    max_examples: int = 5
    relaxed: bool = True
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0
    min_overlap: float = 1.0

    def __post_init__(self) -> None:
        v = self.min_overlap
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1.0 <= float(v) <= 100.0:
            raise ValueError(f"Expected `min_overlap` to be a percentage in the [1, 100] range, but got {v!r}.")
        checked_zero_division(self.zero_division)
        for name in ("threshold", "iou_weight", "text_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"Expected `{name}` to be a float in the [0, 1] range, but got {v!r}.")
        for v in self.report_thresholds:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"Expected every report threshold to be in the [0, 1] range, but got {v!r}.")
        if not math.isclose(self.iou_weight + self.text_weight, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"Expected `iou_weight` + `text_weight` = 1 (so scores stay in [0, 1]), but got "
                f"{self.iou_weight!r} + {self.text_weight!r}."
            )
        curve_thresholds(self.curve_step)
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, int) or self.bootstrap < 0:
            raise ValueError(f"Expected `bootstrap` to be an int ≥ 0 (resamples), but got {self.bootstrap!r}.")
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"Expected `confidence` to be in the (0, 1) range, but got {self.confidence!r}.")
        if not isinstance(self.max_examples, int) or self.max_examples < 0:
            raise ValueError(f"Expected `max_examples` to be an int ≥ 0, but got {self.max_examples!r}.")

    @property
    def thresholds(self) -> tuple[float, ...]:
        """Every relaxed threshold reported, ascending, without duplicates."""
        return tuple(sorted({round(float(t), 10) for t in (self.threshold, *self.report_thresholds)}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "report_thresholds": list(self.thresholds),
            "iou_weight": self.iou_weight,
            "text_weight": self.text_weight,
            "text_similarity": "rapidfuzz fuzz.ratio / 100",
            "curve_step": self.curve_step,
            "scheme": self.scheme,
            "zero_division": self.zero_division,
            "max_examples": self.max_examples,
            "relaxed": self.relaxed,
            "bootstrap": self.bootstrap,
            "confidence": self.confidence,
            "seed": self.seed,
            "min_overlap": self.min_overlap,
        }


@dataclass(frozen=True, kw_only=True)
class TagMetrics:
    """Counts and ratios for one tag (or the micro total)."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    @property
    def support(self) -> int:
        return self.tp + self.fn

    @property
    def predicted(self) -> int:
        return self.tp + self.fp

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def _metrics(c: Counts, zero_division: float) -> TagMetrics:
    r = ratios(c.tp, c.fp, c.fn, 0, zero_division=zero_division)
    return TagMetrics(tp=c.tp, fp=c.fp, fn=c.fn, precision=float(r["precision"]), recall=float(r["recall"]), f1=float(r["f1"]))


@dataclass(frozen=True, kw_only=True)
class MatchResult:
    """Micro, macro and per-tag results of one matching mode (`exact` or `relaxed@t`).

    `macro` holds the means of per-tag F1, precision and recall over every tag that occurs in the
    gold spans or in this model's predictions (a tag the model invents counts with F1 = 0);
    `weighted` the same means weighted by each tag's gold spans (its support), as seqeval's and
    scikit-learn's "weighted avg".
    """

    mode: str
    threshold: float | None
    micro: TagMetrics
    macro: Mapping[str, float]
    weighted: Mapping[str, float]
    per_tag: Mapping[str, TagMetrics]

    @property
    def macro_f1(self) -> float:
        return self.macro["f1"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "micro": self.micro.to_dict(),
            "macro": dict(self.macro),
            "weighted": dict(self.weighted),
            "per_tag": {t: m.to_dict() for t, m in self.per_tag.items()},
        }


@dataclass(frozen=True, kw_only=True)
class CurvePoint:
    threshold: float
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


@dataclass(frozen=True, kw_only=True)
class ErrorBreakdown:
    """Errors of the exact matching by kind (see the module docstring), with examples.

    `confusions` counts (gold tag, predicted tag) of `type` and `boundary_type` errors.
    """

    counts: Mapping[str, int]
    examples: Mapping[str, Sequence[Mapping[str, Any]]]
    confusions: Sequence[Mapping[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
            "confusions": [dict(c) for c in self.confusions],
        }


@dataclass(frozen=True, kw_only=True)
class ModelSpans:
    """Everything computed for one model."""

    model: str
    exact: MatchResult
    relaxed: Mapping[str, MatchResult]
    curve: Sequence[CurvePoint]
    errors: ErrorBreakdown
    token_accuracy: float | None
    token_correct: int | None
    ill_formed: int
    rank: int = 0
    tier: str = ""
    tag_wins: float = 0.0
    ci: Interval | None = None
    nervaluate: Mapping[str, Any] = field(default_factory=dict)  # `semeval.schema_result`: the four SemEval-2013 schemas

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rank": self.rank,
            "tier": self.tier,
            "tier_colour": TIER_COLOURS.get(self.tier),
            "tag_wins": self.tag_wins,
            "wins_label": format_wins(self.tag_wins),
            "exact": self.exact.to_dict(),
        }
        for k, v in self.relaxed.items():
            d[k] = v.to_dict()
        d["curve"] = [p.to_dict() for p in self.curve]
        d["errors"] = self.errors.to_dict()
        if self.token_accuracy is not None:
            d["token_accuracy"] = self.token_accuracy
            d["token_correct"] = self.token_correct
        d["ill_formed_chunks"] = self.ill_formed
        d["ci"] = {"exact_micro_f1": self.ci.to_dict()} if self.ci is not None else None
        d["nervaluate"] = {k: {**v, "per_type": {t: dict(x) for t, x in v["per_type"].items()}} for k, v in self.nervaluate.items()}
        return d


@dataclass(frozen=True, kw_only=True)
class SpansResult:
    """The whole `spans` result; `to_dict()` is the `--json` document."""

    config: SpansConfig
    unit: str
    n_documents: int
    n_tokens: int | None
    n_gold: int
    gold_ill_formed: int
    tags: tuple[str, ...]
    models: Mapping[str, ModelSpans]
    ranking: tuple[str, ...]
    tag_winners: Mapping[str, Any]
    warnings: tuple[str, ...]
    comparisons: tuple[PairComparison, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": "spans",
            "unit": self.unit,
            "n_documents": self.n_documents,
            "n_tokens": self.n_tokens,
            "n_gold_spans": self.n_gold,
            "gold_ill_formed_chunks": self.gold_ill_formed,
            "tags": list(self.tags),
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
            "tag_winners": {t: w.to_dict() for t, w in self.tag_winners.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "warnings": list(self.warnings),
            "config": self.config.to_dict(),
        }
