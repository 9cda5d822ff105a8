"""Seeded bootstrap over records for macro F1 and paired F1 differences.

Per-record counts are kept as a matrix (records × fields × [tp, fp, fn, tn]); one resample is a
vector of record multiplicities, so the resampled counts of every model are one matrix product.
Resamples are processed in blocks to bound memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Interval", "bootstrap_macro_f1", "bootstrap_macro_f1_patterns", "record_patterns", "merge_patterns"]

_BLOCK = 64
_DRAW_ENTRIES = 1 << 22  # drawn record indices per block of resamples on the per-record path


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
    return _macro_f1_parts(*(counts[..., k] for k in range(4)), zero_division=zero_division)


def _macro_f1_parts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray, *, zero_division: float) -> np.ndarray:
    """Macro F1 over the last axis from tp, fp, fn, tn arrays of shape (..., fields).

    F1 only, with the arithmetic of `counts.ratios` (2·tp / (2·tp + fp + fn) in float64, the
    all-true-negative rule), so the values are the same bit for bit; computing all four ratios
    for every resample of every model was most of a leaderboard's bootstrap. Inputs may be
    float32 sums of integer counts (exact): each is widened to float64 inside the first
    operation that uses it, without a float64 copy of its own."""
    if not 0.0 <= zero_division <= 1.0:
        raise ValueError(f"Expected `zero_division` to be a float in [0, 1], but got {zero_division!r}.")
    num = np.multiply(tp, 2, dtype=np.float64)
    den = np.add(num, fp, dtype=np.float64)
    den += fn
    f1 = np.full(den.shape, float(zero_division))
    nz = den != 0
    np.divide(num, den, out=f1, where=nz)
    if not nz.all():
        # seed 000's rule (tp = fp = fn = 0, tn > 0 → 1.0) can only apply where den is 0
        f1[~nz & (tp == 0) & (fp == 0) & (fn == 0) & (tn > 0)] = 1.0
    total_counts = np.add(tp, fp, dtype=np.float64)
    total_counts += fn
    total_counts += tn
    valid = total_counts > 0
    n_valid = valid.sum(axis=-1)
    f1[~valid] = 0.0
    total = f1.sum(axis=-1)
    return np.divide(total, n_valid, out=np.zeros_like(total, dtype=np.float64), where=n_valid > 0)


def _compact(rows: np.ndarray) -> np.ndarray:
    """Counts in the smallest signed integer type that holds them (per-record counts are tiny)."""
    top = int(np.abs(rows).max(initial=0)) if rows.size else 0
    for dt in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dt).max:
            return np.ascontiguousarray(rows, dtype=dt)
    return np.ascontiguousarray(rows, dtype=np.int64)


def _distinct(rows: np.ndarray, freq: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows (ordered by their bytes in `rows`' dtype) and their summed frequencies."""
    if len(rows) == 0:
        return rows, np.zeros(0, dtype=np.int64)
    view = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    if freq is None:
        _, first, counts = np.unique(view, return_index=True, return_counts=True)
        return rows[first], counts.astype(np.int64)
    _, first, inv = np.unique(view, return_index=True, return_inverse=True)
    return rows[first], np.bincount(inv.ravel(), weights=freq, minlength=len(first)).astype(np.int64)


def record_patterns(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a per-record count matrix (records, width) and how often each occurs.

    Patterns are stored in the smallest integer type that holds them (1 byte per count in
    practice), so a ledger's patterns stay small; merge them with `merge_patterns`.
    """
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError(f"Expected a 2-d (records, width) count matrix, but got shape {rows.shape}.")
    return _distinct(_compact(rows))


def merge_patterns(patterns: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Add pattern frequencies of several chunks: the same set of distinct rows and frequencies
    `record_patterns` gives for all their records together (frequencies merge by addition)."""
    parts = [(p, f) for p, f in patterns if len(f)]
    if not parts:
        width = patterns[0][0].shape[1] if patterns else 0
        return np.zeros((0, width), dtype=np.int8), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    dtype = np.result_type(*[p.dtype for p, _ in parts])
    rows = np.ascontiguousarray(np.concatenate([p.astype(dtype, copy=False) for p, _ in parts]))
    return _distinct(rows, np.concatenate([f for _, f in parts]))


def _canonical(patterns: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Patterns as int64, ordered by their int64 bytes: the order the bootstrap draws in,
    whatever type they were stored in and however they were merged."""
    wide = np.ascontiguousarray(patterns, dtype=np.int64)
    if len(wide) == 0:
        return wide, np.asarray(freq, dtype=np.int64)
    view = wide.view(np.dtype((np.void, 8 * wide.shape[1]))).ravel()
    order = np.argsort(view, kind="stable")
    return wide[order], np.asarray(freq, dtype=np.int64)[order]


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
    width = int(np.prod(shape))
    blocks = [np.asarray(per_record[m]).reshape(n, width) for m in models]
    blocks = [b if b.dtype.kind in "iu" else b.astype(np.int64) for b in blocks]
    # joined straight into the smallest type that holds the counts (1 byte in practice): a
    # 500-model leaderboard's int64 copies were ~50 MB each
    top = max((int(np.abs(b.astype(np.int64, copy=False)).max(initial=0)) for b in blocks), default=0)
    dt = next((t for t in (np.int8, np.int16, np.int32) if top <= np.iinfo(t).max), np.int64)
    joined = np.concatenate(blocks, axis=1, dtype=dt, casting="unsafe") if blocks else np.zeros((n, 0), dtype=dt)  # values fit: checked above
    patterns, freq = _distinct(joined)
    return bootstrap_macro_f1_patterns(
        models, tuple(shape), patterns, freq, pairs, records=lambda: joined,
        resamples=resamples, confidence=confidence, seed=seed, zero_division=zero_division,
    )


def bootstrap_macro_f1_patterns(
    models: Sequence[str],
    shape: tuple[int, ...],
    patterns: np.ndarray,
    freq: np.ndarray,
    pairs: Sequence[tuple[str, str]] = (),
    *,
    records: Callable[[], np.ndarray] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    zero_division: float = 0.0,
) -> tuple[dict[str, Interval], dict[tuple[str, str], Interval]]:
    """`bootstrap_macro_f1` from distinct per-record patterns and their frequencies.

    `patterns` is (K, models × prod(shape)) as `record_patterns` returns it, the models' blocks
    side by side in `models` order. When the patterns are few (4·K ≤ records) a resample is a
    multinomial draw over them and the records themselves are never needed; otherwise
    `records()` must return the full (records, width) matrix in record order, and records are
    resampled one by one — the same draws `bootstrap_macro_f1` makes for the same inputs.
    """
    models = list(models)
    if not models:
        return {}, {}
    width = int(np.prod(shape))
    freq = np.asarray(freq, dtype=np.int64)
    n = int(freq.sum())
    # exact integer sums, whatever the order of the patterns
    totals_all = freq @ np.asarray(patterns).astype(np.int64, copy=False) if len(freq) else np.zeros(len(models) * width, dtype=np.int64)
    point = {m: float(_macro_f1(totals_all[k * width : (k + 1) * width].reshape(shape), zero_division)) for k, m in enumerate(models)}
    # resample × model: filled block by block, then all percentiles in one call per side
    samples = np.empty((resamples, len(models)))
    if n > 0:
        # float32 sums of integer counts are exact below 2**24
        dtype = np.float32 if n * max(int(patterns.max(initial=0)), 1) < 2**24 else np.float64
        rng = np.random.default_rng(seed)
        if len(freq) * 4 <= n:
            # Records with the same counts for every model are interchangeable: drawing n records
            # and counting each distinct pattern is a multinomial draw over the patterns, so the
            # work scales with the number of distinct patterns, not of records. The draw is over
            # the patterns in canonical order (only this path depends on their order).
            patterns, freq = _canonical(patterns, freq)
            matrix = patterns.astype(dtype)

            def draw(b: int) -> np.ndarray:
                return rng.multinomial(n, freq / n, size=b).astype(dtype)

            block = _BLOCK
        else:
            if records is None:
                raise ValueError("many distinct per-record patterns: the bootstrap needs `records` (the per-record matrix).")
            matrix = np.asarray(records()).astype(dtype)
            if matrix.shape != (n, len(models) * width):
                raise ValueError(f"Expected records of shape {(n, len(models) * width)}, but got {matrix.shape}.")
            offsets_cache: dict[int, np.ndarray] = {}

            def draw(b: int) -> np.ndarray:
                idx = rng.integers(0, n, size=(b, n))
                offsets = offsets_cache.setdefault(b, (np.arange(b, dtype=np.int64) * n)[:, None])
                return np.bincount((idx + offsets).ravel(), minlength=b * n).reshape(b, n).astype(dtype)

            # a block of b resamples holds b × n drawn indices (and as many weights): fewer
            # resamples per block on many records keeps that bounded (64 × 1M records was ≈ 2 GB
            # of temporaries). Consecutive draws continue one random stream, so the resamples are
            # the same whatever the block size.
            block = max(1, min(_BLOCK, _DRAW_ENTRIES // n))

        # columns regrouped count-major (tp of every model and field, then fp, …) so each
        # count of a block's product is one contiguous (b, models, fields) slice
        cols = np.arange(len(models) * width).reshape(len(models), width // shape[-1], shape[-1]).transpose(2, 0, 1).ravel()
        matrix = np.ascontiguousarray(matrix[:, cols])
        done = 0
        while done < resamples:
            b = min(block, resamples - done)
            totals = (draw(b) @ matrix).reshape(b, shape[-1], len(models), *shape[:-1])  # one product for all models
            # one reduction for all models (a leaderboard has hundreds: a call per model dominated)
            samples[done : done + b] = _macro_f1_parts(*(totals[:, k] for k in range(4)), zero_division=zero_division)  # (b, models)
            done += b
    alpha = (1.0 - confidence) / 2.0
    q = [100 * alpha, 100 * (1 - alpha)]

    def bounds(s: np.ndarray) -> np.ndarray:
        """(2, columns) percentiles of each column: per column the same values as one call per column."""
        if n == 0 or s.shape[1] == 0:
            return np.zeros((2, s.shape[1]))
        return np.percentile(s, q, axis=0)

    def interval(est: float, lo: float, hi: float) -> Interval:
        if n == 0:
            return Interval(estimate=est, low=est, high=est, confidence=confidence, resamples=0)
        return Interval(estimate=est, low=float(lo), high=float(hi), confidence=confidence, resamples=resamples)

    col = {m: k for k, m in enumerate(models)}
    lo_hi = bounds(samples)
    per_model = {m: interval(point[m], lo_hi[0, k], lo_hi[1, k]) for k, m in enumerate(models)}
    pairs = list(pairs)
    d_lo_hi = bounds(samples[:, [col[a] for a, _ in pairs]] - samples[:, [col[b] for _, b in pairs]])
    diffs = {(a, b): interval(point[a] - point[b], d_lo_hi[0, j], d_lo_hi[1, j]) for j, (a, b) in enumerate(pairs)}
    return per_model, diffs
