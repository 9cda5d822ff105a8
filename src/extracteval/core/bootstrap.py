"""Seeded bootstrap over records for macro F1 and paired F1 differences.

Per-record counts are kept as a matrix (records × fields × [tp, fp, fn, tn]); one resample is a
vector of record multiplicities, so the resampled counts of every model are one matrix product.
Resamples are processed in blocks to bound memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.counts import ratios

__all__ = ["Interval", "bootstrap_macro_f1"]

_BLOCK = 64


@dataclass(frozen=True, kw_only=True)
class Interval:
    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int

    @property
    def contains_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
        }


def _macro_f1(counts: np.ndarray, zero_division: float) -> np.ndarray:
    """counts: (..., fields, 4) → macro F1 over fields with any classification, shape (...)."""
    tp, fp, fn, tn = (counts[..., k] for k in range(4))
    f1 = ratios(tp, fp, fn, tn, zero_division=zero_division)["f1"]
    valid = (tp + fp + fn + tn) > 0
    n_valid = valid.sum(axis=-1)
    total = np.where(valid, f1, 0.0).sum(axis=-1)
    return np.divide(total, n_valid, out=np.zeros_like(total, dtype=np.float64), where=n_valid > 0)


def bootstrap_macro_f1(
    per_record: Mapping[str, np.ndarray],
    pairs: Sequence[tuple[str, str]] = (),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    zero_division: float = 0.0,
) -> tuple[dict[str, Interval], dict[tuple[str, str], Interval]]:
    """Percentile intervals for each model's macro F1 and for `f1[a] - f1[b]` of each pair.

    Args:
        per_record: model → int array (records, fields, 4) of tp, fp, fn, tn; the same records
            in the same order for every model (resampling is paired).
        pairs: (a, b) model pairs whose F1 difference gets an interval.
    """
    models = list(per_record)
    if not models:
        return {}, {}
    n = next(iter(per_record.values())).shape[0]
    shape = per_record[models[0]].shape[1:]
    point = {m: float(_macro_f1(per_record[m].sum(axis=0), zero_division)) for m in models}
    samples = {m: np.empty(resamples) for m in models}
    if n > 0:
        width = int(np.prod(shape))
        joined = np.ascontiguousarray(np.concatenate([per_record[m].reshape(n, width) for m in models], axis=1), dtype=np.int64)
        # float32 sums of integer counts are exact below 2**24
        dtype = np.float32 if n * max(int(joined.max(initial=0)), 1) < 2**24 else np.float64
        rows = joined.view(np.dtype((np.void, joined.dtype.itemsize * joined.shape[1]))).ravel()
        _, first, freq = np.unique(rows, return_index=True, return_counts=True)
        rng = np.random.default_rng(seed)
        if len(freq) * 4 <= n:
            # Records with the same counts for every model are interchangeable: drawing n records
            # and counting each distinct pattern is a multinomial draw over the patterns, so the
            # work scales with the number of distinct patterns, not of records.
            matrix = joined[first].astype(dtype)

            def draw(b: int) -> np.ndarray:
                return rng.multinomial(n, freq / n, size=b).astype(dtype)
        else:
            matrix = joined.astype(dtype)
            offsets_cache: dict[int, np.ndarray] = {}

            def draw(b: int) -> np.ndarray:
                idx = rng.integers(0, n, size=(b, n))
                offsets = offsets_cache.setdefault(b, (np.arange(b, dtype=np.int64) * n)[:, None])
                return np.bincount((idx + offsets).ravel(), minlength=b * n).reshape(b, n).astype(dtype)

        done = 0
        while done < resamples:
            b = min(_BLOCK, resamples - done)
            totals = (draw(b) @ matrix).astype(np.float64)  # (b, models × width): one product for all models
            # one reduction for all models (a leaderboard has hundreds: a call per model dominated)
            f1 = _macro_f1(totals.reshape(b, len(models), *shape), zero_division)  # (b, models)
            for k, m in enumerate(models):
                samples[m][done : done + b] = f1[:, k]
            done += b
    alpha = (1.0 - confidence) / 2.0
    q = [100 * alpha, 100 * (1 - alpha)]

    def interval(est: float, s: np.ndarray) -> Interval:
        if n == 0:
            return Interval(estimate=est, low=est, high=est, confidence=confidence, resamples=0)
        lo, hi = np.percentile(s, q)
        return Interval(estimate=est, low=float(lo), high=float(hi), confidence=confidence, resamples=resamples)

    per_model = {m: interval(point[m], samples[m]) for m in models}
    diffs = {(a, b): interval(point[a] - point[b], samples[a] - samples[b]) for a, b in pairs}
    return per_model, diffs
