"""The `json` task's one map from counts to metrics: the sums of the per-record scores over the
records a model's means count (`records`; an excluded record counts in none) → the model's means:
`rqs/mean` and the phase scores `json/accuracy`, `json/completeness`, `json/hallucination`,
`json/safety` (0.0 for a model with no record counted). The result's means, the leaderboard and
`compare` intervals (per resample of the per-record scores) and the `mlflow.genai` scorer's run
metrics all read it. (The median, minimum and maximum of the RQS are order statistics, not sums.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.counts import rate_metrics

__all__ = ["METRICS", "SCORES", "count_metrics"]

# metric → the per-record score it is the mean of (as the per-record table names it)
SCORES = {"rqs/mean": "rqs", "json/accuracy": "accuracy", "json/completeness": "completeness", "json/hallucination": "hallucination",
          "json/safety": "safety_score"}
METRICS = tuple(SCORES)


def count_metrics(sums: Mapping[str, Any], *, which: Sequence[str] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Sums of per-record scores (named as `SCORES` names them) and `records` → the means `which`."""
    return rate_metrics(sums, rates={k: (v, "records") for k, v in SCORES.items()}, prf={}, which=which, zero_division=zero_division)
