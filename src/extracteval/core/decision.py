"""Baseline vs candidate decision: does the candidate need fine-tuning?

gap = metric(baseline) − metric(candidate), for a metric where higher is better. With the default
thresholds the observed gap falls in a band: gap > 0.15 → "fine-tuning recommended",
0.05 ≤ gap ≤ 0.15 → "moderate", gap < 0.05 → "minimal" (a negative gap — the candidate is
better — is minimal too, and flagged). The gap comes with a paired-bootstrap interval: records
are resampled with the same multiplicities for both models, and each resample's metric is
recomputed from its summed counts (never an average of per-record ratios).

The verdict is settled when both ends of the interval fall in the band of the observed gap; it
is then that band ("fine-tuning recommended"), and only then is fine-tuning recommended.
Otherwise it reads "not settled — leaning <band> (the 95% interval spans <band> → <band>)", or
"not settled — leaning <band> (no interval)" when none could be computed: "not settled" first, so
that a verdict leaning to fine-tuning is never read as a recommendation. Every entry point (`score
--baseline/--candidate`, `compare-models`, `compare`, a logged parent run's `decision/…` figures and params,
the HTML report) takes its wording and its numbers from `decision_fields` and `decision_sentence`.

Example:
    >>> import numpy as np
    >>> cols = ("records", "exact")
    >>> base = np.array([[1, 1]] * 9 + [[1, 0]])      # 90% exact
    >>> cand = np.array([[1, 1]] * 6 + [[1, 0]] * 4)  # 60% exact
    >>> from extracteval.tasks.structured import metrics
    >>> d = decide(cols, base, cand, metric="exact_match_rate", resamples=200, count_map=metrics)
    >>> round(d.gap, 2), d.verdict
    (0.3, 'fine-tuning recommended')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from extracteval.errors import InputError

__all__ = ["DecisionThresholds", "Decision", "decide", "CountMap", "metric_from_counts", "verdict_for", "verdict_text", "decision_fields",
           "decision_sentence", "decision_metrics", "threshold_text", "render_decision"]

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
    """The three verdict bands (boundaries belong to "moderate")."""
    if gap > thresholds.recommend + 1e-12:
        return "fine-tuning recommended"
    if gap >= thresholds.moderate - 1e-12:
        return "moderate"
    return "minimal"


def _bands(gap: float, ci_low: float | None, ci_high: float | None, thresholds: DecisionThresholds) -> tuple[str, list[str] | None, bool | None]:
    band = verdict_for(gap, thresholds)
    if ci_low is None or ci_high is None:
        return band, None, None
    ends = [verdict_for(ci_low, thresholds), verdict_for(ci_high, thresholds)]
    return band, ends, ends[0] == ends[1] == band


def verdict_text(gap: float, ci_low: float | None, ci_high: float | None, thresholds: DecisionThresholds, confidence: float = 0.95) -> str:
    """The verdict as every entry point words it.

    Example:
        >>> verdict_text(0.30, 0.20, 0.40, DecisionThresholds())
        'fine-tuning recommended'
        >>> verdict_text(0.22, 0.08, 0.35, DecisionThresholds())
        'not settled — leaning fine-tuning recommended (the 95% interval spans moderate → fine-tuning recommended)'
    """
    band, ends, settled = _bands(gap, ci_low, ci_high, thresholds)
    if settled:
        return band
    if ends is None:
        return f"not settled — leaning {band} (no interval)"
    return f"not settled — leaning {band} (the {int(round(100 * confidence))}% interval spans {' → '.join(ends)})"


def decision_fields(
    *, gap: float, ci_low: float | None, ci_high: float | None, thresholds: DecisionThresholds, confidence: float = 0.95
) -> dict[str, Any]:
    """The verdict keys of a decision document: `verdict` (text), `gap_band` (band of the observed
    gap), `verdict_settled`, `verdict_range` (bands at the interval's ends), `fine_tuning_recommended`
    (only when settled), `candidate_better`."""
    band, ends, settled = _bands(gap, ci_low, ci_high, thresholds)
    return {
        "verdict": verdict_text(gap, ci_low, ci_high, thresholds, confidence),
        "gap_band": band,
        "verdict_settled": bool(settled),
        "verdict_range": ends,
        "fine_tuning_recommended": bool(settled) and band == VERDICTS[0],
        "candidate_better": gap < 0,
    }


def decision_sentence(d: Mapping[str, Any]) -> str:
    """One line from a decision document (`Decision.to_dict()` or `RunComparison.to_dict()`)."""
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    ci = d.get("ci")
    iv = "" if not ci else f", {int(round(100 * ci['confidence']))}% CI [{pct(ci['low'])}, {pct(ci['high'])}]"
    better = "; the candidate is better" if d["candidate_better"] else ""
    return (f"{d['metric']}: {d['baseline']} {pct(d['baseline_value'])}% vs {d['candidate']} {pct(d['candidate_value'])}%, "
            f"gap {pct(d['gap'])} points{iv} → {d['verdict']}{better}")


def threshold_text(thresholds: Mapping[str, float]) -> str:
    r, m = thresholds["recommend"], thresholds["moderate"]
    return f"thresholds: > {r:g} fine-tuning recommended, {m:g}–{r:g} moderate, < {m:g} minimal; recommended only when the interval settles it"


def decision_metrics(d: Mapping[str, Any]) -> dict[str, float]:
    """The `decision/…` metrics of a decision document (interval bounds only when there is one)."""
    out = {
        "decision/gap": float(d["gap"]),
        "decision/baseline_value": float(d["baseline_value"]),
        "decision/candidate_value": float(d["candidate_value"]),
        "decision/fine_tuning_recommended": float(bool(d["fine_tuning_recommended"])),
        "decision/verdict_settled": float(bool(d["verdict_settled"])),
        "decision/n_records": float(d["n_records"]),
    }
    if d.get("ci"):
        out["decision/ci_low"] = float(d["ci"]["low"])
        out["decision/ci_high"] = float(d["ci"]["high"])
    return out


class CountMap(Protocol):
    """A task's one map from named counts to metrics (`count_metrics` of its `metrics` module):
    `METRICS`, the metric names, and `count_metrics(counts, which=…, zero_division=…)`."""

    METRICS: Sequence[str]

    def count_metrics(self, counts: Mapping[str, Any], *, which: Sequence[str], zero_division: float) -> dict[str, np.ndarray]: ...


def metric_from_counts(metric: str, columns: Sequence[str], summed: np.ndarray, *, count_map: CountMap, zero_division: float = 0.0) -> np.ndarray:
    """A metric from summed counts (`summed` (..., len(columns))) by the task's map of counts to
    metrics; an error naming the metrics it has, or the count a metric needs that is missing."""
    if metric not in count_map.METRICS:
        raise InputError(f"decision metric: expected one of {', '.join(sorted(count_map.METRICS))}, but got {metric!r}.")
    counts = {c: summed[..., k] for k, c in enumerate(columns)}
    try:
        return np.asarray(count_map.count_metrics(counts, which=(metric,), zero_division=zero_division)[metric], dtype=np.float64)
    except KeyError as e:
        raise InputError(f"metric {metric!r} needs the count {e.args[0]!r}, which this result does not have (it has {', '.join(columns)}).") from None


@dataclass(frozen=True, kw_only=True)
class Decision:
    metric: str
    baseline: str
    candidate: str
    baseline_value: float
    candidate_value: float
    gap: float
    verdict: str  # the band of the observed gap; `to_dict()["verdict"]` is the worded verdict
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
        """Bands at the two ends of the interval: the verdict is settled when both are the gap's band."""
        return verdict_for(self.ci_low, self.thresholds), verdict_for(self.ci_high, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_value": self.baseline_value,
            "candidate_value": self.candidate_value,
            "gap": self.gap,
            **decision_fields(gap=self.gap, ci_low=self.ci_low, ci_high=self.ci_high, thresholds=self.thresholds, confidence=self.confidence),
            "ci": {"low": self.ci_low, "high": self.ci_high, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed},
            "n_records": self.n_records,
            "thresholds": self.thresholds.to_dict(),
        }

    def sentence(self) -> str:
        return decision_sentence(self.to_dict())


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
    count_map: CountMap,
) -> Decision:
    """The decision from per-record counts of both models (same records, same order).

    Args:
        columns: names of the count columns (e.g. `StructuredCounts` fields).
        baseline_counts, candidate_counts: int arrays (records, len(columns)).
        metric: one of the task's metrics (`count_map.METRICS`; higher is better for all of them).
        count_map: the task's map from counts to metrics (its `metrics` module).
    """
    thresholds = thresholds or DecisionThresholds()
    b, c = np.asarray(baseline_counts), np.asarray(candidate_counts)
    b, c = (x if x.dtype.kind in "iuf" else x.astype(np.float64) for x in (b, c))
    if b.shape != c.shape or b.ndim != 2 or b.shape[1] != len(columns):
        raise InputError(f"decision: baseline and candidate need per-record counts of the same records; got shapes {b.shape} and {c.shape}.")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"decision confidence: expected a number in (0, 1), but got {confidence!r}.")
    if resamples < 1:
        raise InputError(f"decision resamples: expected a positive integer, but got {resamples!r}.")
    n = b.shape[0]
    statistic = lambda summed: metric_from_counts(metric, columns, summed, count_map=count_map, zero_division=zero_division)  # noqa: E731
    bv = float(statistic(b.sum(axis=0)))
    cv = float(statistic(c.sum(axis=0)))
    gap = bv - cv
    lo = hi = gap
    if n > 0:
        # the one paired bootstrap of every task's intervals: the same resampled records for both
        from extracteval.core.bootstrap import bootstrap_counts

        _, diffs = bootstrap_counts({"b": b, "c": c}, statistic, [("b", "c")], resamples=resamples, confidence=confidence, seed=seed)
        lo, hi = diffs[("b", "c")].low, diffs[("b", "c")].high
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


def render_decision(d: Any) -> str:
    """The decision block of the terminal and the HTML report, from a decision document
    (`Decision.to_dict()`, `RunComparison.to_dict()` or the `decision` of a `--json` document):
    the same words wherever the decision was made."""
    lines = [
        f"Decision ({d['metric']}): baseline {d['baseline']} vs candidate {d['candidate']}",
        f"  {decision_sentence(d)}",
        f"  {threshold_text(d['thresholds'])}",
    ]
    return "\n".join(lines)
