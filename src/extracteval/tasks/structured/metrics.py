"""The `structured` task's one map from counts to metrics: a model's (or a resample's, or the genai
rows') summed counts → its rates (`json_valid_rate` …, over records) and the field P/R/F1 (over
reference and predicted leaf paths). The result's metrics (`StructuredCounts.metrics`), the
leaderboard and `compare` intervals, the baseline-vs-candidate decision and the `mlflow.genai`
scorer's run metrics all read it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.counts import rate_metrics

__all__ = ["METRICS", "count_metrics"]

# metric → (numerator, denominator) counts
RATES = {
    "json_valid_rate": ("valid", "records"),
    "strict_json_valid_rate": ("strict_valid", "records"),
    "json_extracted_rate": ("extracted", "records"),
    "exact_match_rate": ("exact", "records"),
}
# metric → ratio of the leaf counts tp, fp, fn
PRF = {"field_precision": "precision", "field_recall": "recall", "field_f1": "f1"}
METRICS = (*RATES, *PRF)


def count_metrics(counts: Mapping[str, Any], *, which: Sequence[str] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Named counts (`StructuredCounts` fields; scalars or arrays) → the metrics `which`."""
    return rate_metrics(counts, rates=RATES, prf=PRF, which=which, zero_division=zero_division)
