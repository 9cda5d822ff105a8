"""The one map from counts to metrics: summed counts (of a model, a resample of records, or the
genai rows) → `records/accuracy`, read by the result, the intervals and the genai scorer alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.counts import rate_metrics

METRICS = ("records/accuracy",)
RATES = {"records/accuracy": ("correct", "records")}  # metric → (numerator, denominator) counts


def count_metrics(counts: Mapping[str, Any], *, which: Sequence[str] | None = None, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """`records/accuracy` = correct / records, and for each count `field/<f>` given (the records
    where that field is right) `field/<f>/accuracy` = it / records; `which`: only these."""
    rates = {**RATES, **{f"{k}/accuracy": (k, "records") for k in counts if k.startswith("field/")}}
    return rate_metrics(counts, rates=rates, prf={}, which=list(rates) if which is None else which, zero_division=zero_division)
