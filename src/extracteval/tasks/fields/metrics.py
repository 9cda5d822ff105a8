"""The `fields` task's one map from counts to metrics: each field's tp, fp, fn, tn → `overall/<kind>`
(the mean over fields with any count of each field's ratio) and `micro/<kind>` (the ratio of the
counts summed over fields), for precision, recall, F1 and accuracy. The result reads its overall
and micro metrics from it, the leaderboard and `compare` their intervals (per resample of the
per-record counts), and the `mlflow.genai` scorer its run metrics (the rows' summed counts)."""

from __future__ import annotations

from typing import Any

import numpy as np

from extracteval.core.counts import RATIO_KINDS, item_metrics

__all__ = ["METRICS", "fields_metrics"]

# every metric the map gives, as the model runs log them
METRICS = tuple(f"{view}/{kind}" for view in ("overall", "micro") for kind in RATIO_KINDS)
_VIEW = {"overall": "macro", "micro": "micro"}


def fields_metrics(counts: Any, *, which: tuple[str, ...] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Counts (..., fields, 4) of tp, fp, fn, tn (or those four arrays) → the metrics `which`
    (keys of `METRICS`), each of the leading axes' shape."""
    inner = {k: f"{_VIEW[k.split('/')[0]]}/{k.split('/')[1]}" for k in which}
    got = item_metrics(counts, which=tuple(inner.values()), zero_division=zero_division)
    return {k: got[v] for k, v in inner.items()}
