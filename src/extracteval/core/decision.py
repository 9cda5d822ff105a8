"""Baseline vs candidate decision (seed 004 "Comparison Decision Threshold").

gap = metric(baseline) − metric(candidate), for a metric where higher is better. With the default
thresholds: gap > 0.15 → "fine-tuning recommended", 0.05 ≤ gap ≤ 0.15 → "moderate",
gap < 0.05 → "minimal" (a negative gap — the candidate is better — is minimal too, and flagged).
The verdict comes with a paired-bootstrap interval of the gap: records are resampled with the same
multiplicities for both models, and each resample's metric is recomputed from its summed counts
(never an average of per-record ratios).

Example:
    >>> import numpy as np
    >>> cols = ("records", "exact")
    >>> base = np.array([[1, 1]] * 9 + [[1, 0]])      # 90% exact
    >>> cand = np.array([[1, 1]] * 6 + [[1, 0]] * 4)  # 60% exact
    >>> d = decide(cols, base, cand, metric="exact_match_rate", resamples=200)
    >>> round(d.gap, 2), d.verdict
    (0.3, 'fine-tuning recommended')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.counts import ratios
from extracteval.errors import InputError

__all__ = ["DecisionThresholds", "Decision", "decide", "METRICS", "metric_from_counts", "verdict_for"]

# metric → (numerator column, denominator column) for rates, or ("prf", prefix-free name) for P/R/F1
_RATES = {
    "json_valid_rate": ("valid", "records"),
    "strict_json_valid_rate": ("strict_valid", "records"),
    "json_extracted_rate": ("extracted", "records"),
    "exact_match_rate": ("exact", "records"),
    "valid_call_rate": ("valid_records", "records"),
    "call_accuracy": ("correct_records", "records"),
    "name_match_rate": ("name_matches", "ref_calls"),
    "args_exact_rate": ("args_exact", "ref_calls"),
}
_PRF = {
    "field_precision": "precision",
    "field_recall": "recall",
    "field_f1": "f1",
    "args_precision": "precision",
    "args_recall": "recall",
    "args_f1": "f1",
}
METRICS = tuple(sorted({*_RATES, *_PRF}))
VERDICTS = ("fine-tuning recommended", "moderate", "minimal")


@dataclass(frozen=True, kw_only=True)
class DecisionThresholds:
    """Gap thresholds: above `recommend` → fine-tuning recommended; from `moderate` → moderate."""

    recommend: float = 0.15
    moderate: float = 0.05

    def __post_init__(self) -> None:
        if not (0.0 <= self.moderate <= self.recommend <= 1.0):
            raise InputError(
                f"decision thresholds: expected 0 ≤ moderate ≤ recommend ≤ 1, but got moderate={self.moderate!r}, recommend={self.recommend!r}."
            )

    def to_dict(self) -> dict[str, float]:
        return {"recommend": self.recommend, "moderate": self.moderate}


def verdict_for(gap: float, thresholds: DecisionThresholds = DecisionThresholds()) -> str:
    """Seed 004's three bands (boundaries belong to "moderate")."""
    if gap > thresholds.recommend + 1e-12:
        return "fine-tuning recommended"
    if gap >= thresholds.moderate - 1e-12:
        return "moderate"
    return "minimal"


def metric_from_counts(metric: str, columns: Sequence[str], summed: np.ndarray, *, zero_division: float = 0.0) -> np.ndarray:
    """A metric from summed counts; `summed` has shape (..., len(columns))."""
    idx = {c: k for k, c in enumerate(columns)}

    def col(name: str) -> np.ndarray:
        try:
            return summed[..., idx[name]].astype(np.float64)
        except KeyError:
            raise InputError(f"metric {metric!r} needs the count {name!r}, which this result does not have (it has {', '.join(columns)}).") from None

    if metric in _RATES:
        num, den = (col(c) for c in _RATES[metric])
        out = np.full(num.shape, float(zero_division))
        np.divide(num, den, out=out, where=den != 0)
        return out
    if metric in _PRF:
        tp, fp, fn = col("tp"), col("fp"), col("fn")
        return np.asarray(ratios(tp, fp, fn, np.zeros_like(tp), zero_division=zero_division)[_PRF[metric]], dtype=np.float64)
    raise InputError(f"decision metric: expected one of {', '.join(METRICS)}, but got {metric!r}.")


@dataclass(frozen=True, kw_only=True)
class Decision:
    metric: str
    baseline: str
    candidate: str
    baseline_value: float
    candidate_value: float
    gap: float
    verdict: str
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    seed: int
    n_records: int
    thresholds: DecisionThresholds

    @property
    def candidate_better(self) -> bool:
        return self.gap < 0

    @property
    def interval_verdicts(self) -> tuple[str, str]:
        """Verdicts at the two ends of the interval: equal when the data settle the verdict."""
        return verdict_for(self.ci_low, self.thresholds), verdict_for(self.ci_high, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        lo_v, hi_v = self.interval_verdicts
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_value": self.baseline_value,
            "candidate_value": self.candidate_value,
            "gap": self.gap,
            "verdict": self.verdict,
            "fine_tuning_recommended": self.verdict == "fine-tuning recommended",
            "candidate_better": self.candidate_better,
            "ci": {"low": self.ci_low, "high": self.ci_high, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed},
            "verdict_settled": lo_v == hi_v,
            "verdict_range": [lo_v, hi_v],
            "n_records": self.n_records,
            "thresholds": self.thresholds.to_dict(),
        }

    def sentence(self) -> str:
        pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
        settled = "" if self.interval_verdicts[0] == self.interval_verdicts[1] else f" (the interval spans {' → '.join(self.interval_verdicts)})"
        better = "; the candidate is better" if self.candidate_better else ""
        return (
            f"{self.metric}: {self.baseline} {pct(self.baseline_value)}% vs {self.candidate} {pct(self.candidate_value)}%, "
            f"gap {pct(self.gap)} points, {int(round(100 * self.confidence))}% CI [{pct(self.ci_low)}, {pct(self.ci_high)}] "
            f"→ {self.verdict}{settled}{better}"
        )


def decide(
    columns: Sequence[str],
    baseline_counts: np.ndarray,
    candidate_counts: np.ndarray,
    *,
    metric: str,
    baseline: str = "baseline",
    candidate: str = "candidate",
    thresholds: DecisionThresholds | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    zero_division: float = 0.0,
) -> Decision:
    """The decision from per-record counts of both models (same records, same order).

    Args:
        columns: names of the count columns (e.g. `StructuredCounts` fields).
        baseline_counts, candidate_counts: int arrays (records, len(columns)).
        metric: one of `METRICS` (higher is better for all of them).
    """
    thresholds = thresholds or DecisionThresholds()
    b = np.asarray(baseline_counts, dtype=np.float64)
    c = np.asarray(candidate_counts, dtype=np.float64)
    if b.shape != c.shape or b.ndim != 2 or b.shape[1] != len(columns):
        raise InputError(f"decision: baseline and candidate need per-record counts of the same records; got shapes {b.shape} and {c.shape}.")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"decision confidence: expected a number in (0, 1), but got {confidence!r}.")
    if resamples < 1:
        raise InputError(f"decision resamples: expected a positive integer, but got {resamples!r}.")
    n = b.shape[0]
    bv = float(metric_from_counts(metric, columns, b.sum(axis=0), zero_division=zero_division))
    cv = float(metric_from_counts(metric, columns, c.sum(axis=0), zero_division=zero_division))
    gap = bv - cv
    lo = hi = gap
    if n > 0:
        rng = np.random.default_rng(seed)
        gaps = np.empty(resamples)
        done = 0
        while done < resamples:
            k = min(64, resamples - done)
            idx = rng.integers(0, n, size=(k, n))
            offsets = (np.arange(k, dtype=np.int64) * n)[:, None]
            w = np.bincount((idx + offsets).ravel(), minlength=k * n).reshape(k, n).astype(np.float64)
            gb = metric_from_counts(metric, columns, w @ b, zero_division=zero_division)
            gc = metric_from_counts(metric, columns, w @ c, zero_division=zero_division)
            gaps[done : done + k] = gb - gc
            done += k
        alpha = (1.0 - confidence) / 2.0
        lo, hi = (float(x) for x in np.percentile(gaps, [100 * alpha, 100 * (1 - alpha)]))
    return Decision(
        metric=metric,
        baseline=baseline,
        candidate=candidate,
        baseline_value=bv,
        candidate_value=cv,
        gap=gap,
        verdict=verdict_for(gap, thresholds),
        ci_low=lo,
        ci_high=hi,
        confidence=confidence,
        resamples=resamples if n > 0 else 0,
        seed=seed,
        n_records=n,
        thresholds=thresholds,
    )
