"""The `toolcalls` task's one map from counts to metrics: a model's (or a resample's, or the genai
rows') summed counts → its rates (`valid_call_rate`, `call_accuracy` over records; `name_match_rate`,
`args_exact_rate` over reference calls) and the argument P/R/F1. The result's metrics
(`ToolCallCounts.metrics`), the leaderboard and `compare` intervals, the baseline-vs-candidate
decision and the `mlflow.genai` scorer's run metrics all read it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.counts import rate_metrics

__all__ = ["METRICS", "count_metrics"]

# metric → (numerator, denominator) counts
RATES = {
    "valid_call_rate": ("valid_records", "records"),
    "name_match_rate": ("name_matches", "ref_calls"),
    "args_exact_rate": ("args_exact", "ref_calls"),
    "call_accuracy": ("correct_records", "records"),
}
# metric → ratio of the argument counts tp, fp, fn
PRF = {"args_precision": "precision", "args_recall": "recall", "args_f1": "f1"}
METRICS = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")


def count_metrics(counts: Mapping[str, Any], *, which: Sequence[str] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Named counts (`ToolCallCounts` fields; scalars or arrays) → the metrics `which`."""
    return rate_metrics(counts, rates=RATES, prf=PRF, which=which, zero_division=zero_division)
