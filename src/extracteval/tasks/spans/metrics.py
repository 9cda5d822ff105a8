"""The `spans` task's one map from counts to metrics: each tag's tp, fp, fn in one matching mode →
`micro/<kind>` (the ratio of the counts summed over tags), `macro/<kind>` (the mean over the tags
in the gold spans or the predictions; `zero_division` when there are none) and `weighted/<kind>`
(that mean weighted by each tag's gold spans; the plain mean when there is no gold span) for
precision, recall and F1. The result reads each mode's metrics from it, the leaderboard and `compare` their
intervals (per resample of the per-document counts), and the `mlflow.genai` scorer its run
metrics (the rows' summed counts)."""

from __future__ import annotations

from typing import Any

import numpy as np

from extracteval.core.counts import item_metrics

__all__ = ["METRICS", "spans_metrics"]

# the metrics of one matching mode (logged as `spans/<mode>/<metric>`)
METRICS = ("micro/f1", "micro/precision", "micro/recall", "macro/f1", "macro/precision", "macro/recall",
           "weighted/f1", "weighted/precision", "weighted/recall")


def spans_metrics(tp: Any, fp: Any, fn: Any, *, which: tuple[str, ...] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Per-tag counts (..., tags) of one mode → the metrics `which` (of `METRICS`), each of the
    leading axes' shape. Spans have no true negatives."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    return item_metrics((tp, fp, fn, np.zeros_like(tp)), which=which, zero_division=zero_division, empty=zero_division)
