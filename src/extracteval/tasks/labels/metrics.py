"""The `labels` task's one map from counts to metrics: one view's per-feature, per-label
one-vs-rest counts (tp, fp, fn of each label, the rows of each feature, the rows right in every
feature) → `labels/macro/<kind>` (the mean over features of each feature's macro average over its
observed labels, or of its positive label's value) for precision, recall, F1 and specificity,
`labels/micro_accuracy` (the mean over features of right rows / rows) and `labels/row_accuracy`.
The result reads both views' metrics from it (`core.feature_views.view_metrics`), the leaderboard
and `compare` their intervals (per resample of the per-record counts), and the `mlflow.genai`
scorer its run metrics (the rows' summed counts, every feature's cells pooled)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.feature_views import VIEW_METRICS, LabelLayout, view_count_metrics

__all__ = ["METRICS", "labels_metrics"]

# every metric the map gives, as the model runs log them (the strict view; the aligned view's under `aligned/`)
METRICS = tuple(f"labels/{m}" for m in VIEW_METRICS)


def labels_metrics(counts: Mapping[str, Any], layout: LabelLayout, *, which: Sequence[str] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """One view's counts (see `view_count_metrics`) → the metrics `which` (of `METRICS`)."""
    got = view_count_metrics(counts, layout, which=[k.removeprefix("labels/") for k in which], zero_division=zero_division)
    return {f"labels/{k}": v for k, v in got.items()}
