"""The `fields` task's one map from counts to metrics: each field's tp, fp, fn, tn → `overall/<kind>`
(the mean over fields with any count of each field's ratio) and `micro/<kind>` (the ratio of the
counts summed over fields), for precision, recall, F1 and accuracy. The result reads its overall
and micro metrics from it, the leaderboard and `compare` their intervals (per resample of the
per-record counts), and the `mlflow.genai` scorer its run metrics (the rows' summed counts)."""

from __future__ import annotations

from typing import Any

import numpy as np

from extracteval.core.counts import RATIO_KINDS, item_metrics

__all__ = ["METRICS", "fields_metrics", "CountMetrics"]

# every metric the map gives, as the model runs log them
METRICS = tuple(f"{view}/{kind}" for view in ("overall", "micro") for kind in RATIO_KINDS)
_VIEW = {"overall": "macro", "micro": "micro"}


def fields_metrics(counts: Any, *, which: tuple[str, ...] = METRICS, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Counts (..., fields, 4) of tp, fp, fn, tn (or those four arrays) → the metrics `which`
    (keys of `METRICS`), each of the leading axes' shape."""
    inner = {k: f"{_VIEW[k.split('/')[0]]}/{k.split('/')[1]}" for k in which}
    got = item_metrics(counts, which=tuple(inner.values()), zero_division=zero_division)
    return {k: got[v] for k, v in inner.items()}


class CountMetrics:
    """The metrics of one layout of per-record count columns (field, tp|fp|fn|tn) as functions of
    summed counts (`TaskAdapter.count_metric`). One summed vector's metrics are all computed at
    once and kept until the next vector: a slice asks each of its metrics in turn. A batch of
    vectors (a bootstrap's resamples) computes the one metric asked. The values are those of
    `fields_metrics(..., which=(metric,))` either way: each metric's arithmetic is its own."""

    _layouts: dict[tuple[tuple[str, ...], float], CountMetrics] = {}

    def __init__(self, columns: tuple[str, ...], zero_division: float) -> None:
        from extracteval.core.record_counts import item_count_columns

        self.counts = item_count_columns(columns)[1]
        self.zero_division = zero_division
        self._last: tuple[bytes, dict[str, np.ndarray]] | None = None

    @classmethod
    def of(cls, columns: tuple[str, ...], zero_division: float) -> CountMetrics:
        key = (columns, zero_division)
        found = cls._layouts.get(key)
        if found is None:
            if len(cls._layouts) > 64:  # a handful of layouts per process in practice
                cls._layouts.clear()
            found = cls._layouts[key] = cls(columns, zero_division)
        return found

    def metric(self, name: str) -> Any:
        def value(summed: Any) -> Any:
            a = np.asarray(summed)
            if a.ndim != 1:
                return fields_metrics(self.counts(a), which=(name,), zero_division=self.zero_division)[name]
            key = a.dtype.str.encode() + a.tobytes()
            last = self._last
            if last is None or last[0] != key:
                last = self._last = (key, fields_metrics(self.counts(a), zero_division=self.zero_division))
            return last[1][name]

        return value
