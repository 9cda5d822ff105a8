"""Seeded bootstrap over records of any metric of summed per-record counts, and of paired differences.

Per-record counts are rows (records × models × count columns: tp, fp, fn, tn per field for
macro F1, or any task's counts, `core.record_counts`); a metric is a function of the counts
summed over a resample (`bootstrap_counts`, `macro_f1_statistic`); one resample is a
vector of record multiplicities, so the resampled counts of every model are one matrix product.
Few distinct rows: a resample is a multinomial draw over them. Many: the records are resampled
in a streaming pass over blocks of records (`_resample_records`), so memory stays bounded
whatever their number, and rows may come from disk one chunk at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.core.counts import macro_f1

from extracteval.core.significance import BORDERLINE, NOT_SIGNIFICANT, SIGNIFICANT, significance

__all__ = [
    "Interval", "PairComparison", "significance", "comparison_entry", "SIGNIFICANT", "BORDERLINE", "NOT_SIGNIFICANT",
    "bootstrap_counts", "bootstrap_samples", "cluster_sums", "Draws", "percentile_intervals",
    "bootstrap_patterns", "macro_f1_statistic", "bootstrap_macro_f1", "bootstrap_macro_f1_patterns",
    "record_patterns", "merge_patterns",
    "field_patterns", "merge_field_patterns",
]

_BLOCK = 64
_DRAW_ENTRIES = 1 << 22  # per-record path: drawn indices, and row entries, per block of records
_TOTAL_ENTRIES = 1 << 24  # per-record path: resampled totals held at once (resamples × width)
# Distinct per-record patterns are kept (in a ledger, for the multinomial shortcut) only while
# patterns × width stays below this: on data where nearly every record is distinct they would be
# as large as the records themselves, and the shortcut would not be taken anyway.
PATTERN_ENTRIES = 1 << 23


@dataclass(frozen=True, kw_only=True)
class Interval:
    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int

    @property
    def contains_zero(self) -> bool:
        """Whether 0 lies inside; an undefined interval (NaN bounds) excludes nothing, so it does."""
        return not (self.low > 0.0 or self.high < 0.0)

    @property
    def significant(self) -> bool:
        """Read as a difference: the interval lies wholly on one side of zero."""
        return significance(self.low, self.high) == SIGNIFICANT

    @property
    def verdict(self) -> str:
        """Read as a difference: `significantly different`, `borderline` or `not significantly different`."""
        return significance(self.low, self.high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
        }


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


def _capped(patterns: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    if patterns.shape[0] * max(patterns.shape[1], 1) > PATTERN_ENTRIES:
        return None, None
    return patterns, freq


def record_patterns(rows: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Distinct rows of a per-record count matrix (records, width) and how often each occurs,
    or (None, None) when they are too many to keep (see `PATTERN_ENTRIES`).

    Patterns are stored in the smallest integer type that holds them (1 byte per count in
    practice), so a ledger's patterns stay small; merge them with `merge_patterns`.
    """
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise ValueError(f"Expected a 2-d (records, width) count matrix, but got shape {rows.shape}.")
    prefix = 2 * PATTERN_ENTRIES // max(rows.shape[1], 1)
    if len(rows) <= prefix:
        return _capped(*_distinct(_compact(rows)))
    # the first rows alone may have too many: then there is no need to sort them all
    head = _capped(*_distinct(_compact(rows[:prefix])))
    if head[0] is None:
        return None, None
    return merge_patterns([head, _distinct(_compact(rows[prefix:]))])


def merge_patterns(patterns: Sequence[tuple[np.ndarray | None, np.ndarray | None]]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Add pattern frequencies of several chunks: the same set of distinct rows and frequencies
    `record_patterns` gives for all their records together (frequencies merge by addition), or
    (None, None) when they are too many to keep — as `record_patterns` would say of them all,
    since the distinct rows of a union are at least those of each part."""
    if any(p is None or f is None for p, f in patterns):
        return None, None
    parts = [(p, f) for p, f in patterns if len(f)]  # type: ignore[arg-type]
    if not parts:
        width = patterns[0][0].shape[1] if patterns else 0  # type: ignore[union-attr]
        return np.zeros((0, width), dtype=np.int8), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    dtype = np.result_type(*[p.dtype for p, _ in parts])
    rows = np.ascontiguousarray(np.concatenate([p.astype(dtype, copy=False) for p, _ in parts]))
    return _capped(*_distinct(rows, np.concatenate([f for _, f in parts])))


def field_patterns(counts: Sequence[np.ndarray], *, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (model, field, tp, fp, fn, tn) rows of per-record counts and how many records
    have each: `counts[m]` is (records, fields, ≥ 4) for model m. What per-field intervals
    resample (one field of one model at a time), a few rows per field whatever the records.
    Counted `block` records of one model at a time, so temporaries stay small."""
    if not counts or counts[0].shape[0] == 0:
        return np.zeros((0, 6), dtype=np.int64), np.zeros(0, dtype=np.int64)
    n, f = counts[0].shape[:2]
    base = max(int(c[:, :, :4].max(initial=0)) for c in counts) + 1
    space = len(counts) * f * base**4  # a Python int: no overflow in the test below
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    tally = np.zeros(space, dtype=np.int64) if space <= 1 << 22 else None
    for mi, c in enumerate(counts):
        for lo in range(0, n, block):
            part = c[lo : lo + block, :, :4]
            if space < 2**62:  # one integer per (model, field, counts): count them
                code = (mi * f + np.arange(f, dtype=np.int64))[None, :]
                for k in range(4):
                    code = code * base + part[:, :, k]
                if tally is not None:  # small code space (counts of a few per record): one counting pass
                    tally += np.bincount(code.ravel(), minlength=space)
                else:
                    parts.append(_decode(*np.unique(code, return_counts=True), base, f))
            else:  # huge counts: distinct rows as such
                rows = np.empty((part.shape[0], f, 6), dtype=np.int64)
                rows[:, :, 0] = mi
                rows[:, :, 1] = np.arange(f)
                rows[:, :, 2:] = part
                parts.append(_distinct(rows.reshape(-1, 6)))
    if tally is not None:
        uniq = np.flatnonzero(tally)
        return _decode(uniq, tally[uniq], base, f)
    return merge_field_patterns(parts)


def _decode(codes: np.ndarray, freq: np.ndarray, base: int, f: int) -> tuple[np.ndarray, np.ndarray]:
    """(model, field, tp, fp, fn, tn) rows of `field_patterns` codes."""
    rows = np.empty((len(codes), 6), dtype=np.int64)
    rest = np.asarray(codes, dtype=np.int64)
    for k in range(5, 1, -1):
        rows[:, k] = rest % base
        rest = rest // base
    rows[:, 0], rows[:, 1] = np.divmod(rest, f)
    return rows, np.asarray(freq, dtype=np.int64)


def merge_field_patterns(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """`field_patterns` of several chunks' records together (frequencies add)."""
    rows = np.ascontiguousarray(np.concatenate([p for p, _ in parts]), dtype=np.int64)
    return _distinct(rows, np.concatenate([f for _, f in parts]).astype(np.int64))


def _canonical(patterns: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Patterns as int64 (float64 for per-record values), ordered by their bytes: the order the bootstrap draws in,
    whatever type they were stored in and however they were merged."""
    wide = np.ascontiguousarray(patterns, dtype=np.float64 if np.asarray(patterns).dtype.kind == "f" else np.int64)
    if len(wide) == 0:
        return wide, np.asarray(freq, dtype=np.int64)
    view = wide.view(np.dtype((np.void, 8 * wide.shape[1]))).ravel()
    order = np.argsort(view, kind="stable")
    return wide[order], np.asarray(freq, dtype=np.int64)[order]


def _reblock(parts: np.ndarray | Iterable[np.ndarray], size: int) -> Iterator[np.ndarray]:
    """Consecutive blocks of `size` rows (the last one shorter) of rows given as one matrix or
    as consecutive parts of any sizes."""
    if isinstance(parts, np.ndarray):
        parts = (parts,)
    buf: list[np.ndarray] = []
    have = 0
    for part in parts:
        part = np.asarray(part)
        start = 0
        while start < len(part):
            take = min(size - have, len(part) - start)
            buf.append(part[start : start + take])
            have += take
            start += take
            if have == size:
                yield buf[0] if len(buf) == 1 else np.concatenate(buf)
                buf, have = [], 0
    if have:
        yield buf[0] if len(buf) == 1 else np.concatenate(buf)


def _resample_records(
    records: Callable[[], np.ndarray | Iterable[np.ndarray]] | None,
    n: int,
    width: int,
    cols: np.ndarray,
    resamples: int,
    rng: np.random.Generator,
    fill: Callable[[int, np.ndarray], None],
) -> np.ndarray:
    """Resample n records (rows of `width` counts) with replacement, in one streaming pass over
    consecutive blocks of records per group of resamples; returns the rows' int64 column sums.

    A resample draws n records uniformly. Split the records into consecutive blocks: how many
    of a resample's n draws land in each block is multinomial over the block sizes, drawn block
    after block as binomials of the draws left (the exact conditional distribution), and which
    records of a block they hit is uniform within it. So each block of records is read once,
    for every resample of the group at once, and only (group, block) draws and the group's
    (group, width) totals are ever held: memory does not grow with the records, which may come
    from disk one chunk at a time. Block and group sizes depend only on the resamples and the
    width, never on how the rows were split, so every engine draws the same.
    """
    assert records is not None
    group = max(1, min(resamples, _TOTAL_ENTRIES // max(width, 1)))
    size = max(1, min(_DRAW_ENTRIES // group, _DRAW_ENTRIES // max(width, 1)))
    sums: np.ndarray | None = None
    done = 0
    while done < resamples:
        g = min(group, resamples - done)
        totals = np.zeros((g, width))
        left_draws = np.full(g, n, dtype=np.int64)
        left_records = n
        seen = 0
        for block in _reblock(records(), size):
            s = len(block)
            if block.ndim != 2 or block.shape[1] != width or s > left_records:
                raise ValueError(f"Expected {n} records of {width} counts, but got more rows or a row of shape {block.shape[1:]}.")
            k = left_draws if s == left_records else rng.binomial(left_draws, s / left_records)
            left_draws = left_draws - k
            left_records -= s
            idx = rng.integers(0, s, size=int(k.sum()))
            idx += np.repeat(np.arange(g, dtype=np.int64) * s, k)
            weights = np.bincount(idx, minlength=g * s).reshape(g, s)
            floating = block.dtype.kind == "f"  # per-record values (a score's sum): float64 throughout
            if done == 0:
                part = block.sum(axis=0, dtype=np.float64 if floating else np.int64)
                sums = part if sums is None else sums + part
            top = int(np.abs(block).max(initial=0)) if block.size and not floating else 0
            # float32 products of integer counts are exact below 2**24; summed in float64
            dtype = np.float32 if not floating and n * max(top, 1) < 2**24 else np.float64
            totals += weights.astype(dtype) @ np.ascontiguousarray(block[:, cols], dtype=dtype)
            seen += s
        if seen != n:
            raise ValueError(f"Expected {n} records, but got {seen}.")
        fill(done, totals)
        done += g
    return np.zeros(width, dtype=np.int64) if sums is None else sums


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
    shape = tuple(per_record[models[0]].shape[1:])
    width = int(np.prod(shape))
    blocks = {m: np.asarray(per_record[m]).reshape(n, width) for m in models}
    blocks = {m: b if b.dtype.kind in "iu" else b.astype(np.int64) for m, b in blocks.items()}
    return bootstrap_counts(blocks, macro_f1_statistic(shape, zero_division), pairs, resamples=resamples, confidence=confidence, seed=seed)


def macro_f1_statistic(shape: Sequence[int], zero_division: float = 0.0) -> Callable[[np.ndarray], np.ndarray]:
    """Summed counts (..., prod(shape)), laid out as (fields, tp/fp/fn/tn), → macro F1 (...)."""
    if not 0.0 <= zero_division <= 1.0:
        raise ValueError(f"Expected `zero_division` to be a float in [0, 1], but got {zero_division!r}.")
    shape = tuple(shape)

    def statistic(totals: np.ndarray) -> np.ndarray:
        t = totals.reshape(*totals.shape[:-1], *shape)
        return macro_f1(*(t[..., k] for k in range(4)), zero_division=zero_division)

    return statistic


def bootstrap_macro_f1_patterns(
    models: Sequence[str],
    shape: tuple[int, ...],
    patterns: np.ndarray | None,
    freq: np.ndarray | None,
    pairs: Sequence[tuple[str, str]] = (),
    *,
    records: Callable[[], np.ndarray | Iterable[np.ndarray]] | None = None,
    n_records: int | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    zero_division: float = 0.0,
) -> tuple[dict[str, Interval], dict[tuple[str, str], Interval]]:
    """`bootstrap_macro_f1` from distinct per-record patterns and their frequencies.

    `patterns` is (K, models × prod(shape)) as `record_patterns` returns it, the models' blocks
    side by side in `models` order, or None when they were too many to keep (`PATTERN_ENTRIES`);
    then `n_records` gives the number of records. See `bootstrap_patterns`.
    """
    return bootstrap_patterns(models, int(np.prod(shape)), patterns, freq, pairs, statistic=macro_f1_statistic(shape, zero_division), records=records, n_records=n_records,
                              resamples=resamples, confidence=confidence, seed=seed)


def bootstrap_counts(
    per_record: Mapping[Any, np.ndarray],
    statistic: Callable[[np.ndarray], np.ndarray],
    pairs: Sequence[tuple[Any, Any]] = (),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[dict[Any, Interval], dict[tuple[Any, Any], Interval]]:
    """Percentile intervals of a metric of summed per-record counts, per model and for the
    difference of each pair: a paired bootstrap (every resample takes the same records, with the
    same multiplicities, for every model), the metric recomputed from each resample's sums.

    Args:
        per_record: model → (records, columns) counts, the same records in the same order for
            every model; integers, or floats for per-record values (summed in float64). For the
            cluster bootstrap, pass each cluster's summed rows (`cluster_sums`).
        statistic: summed counts (..., columns) → metric (...), vectorised over leading axes.
        pairs: (a, b) model pairs whose difference `metric[a] - metric[b]` gets an interval.

    Example:
        >>> per = {"a": np.array([[1, 1], [1, 1], [0, 1]]), "b": np.array([[0, 1], [1, 1], [0, 1]])}
        >>> rate = lambda s: s[..., 0] / s[..., 1]
        >>> est, diffs = bootstrap_counts(per, rate, [("a", "b")], resamples=200)
        >>> round(est["a"].estimate, 4), round(diffs[("a", "b")].estimate, 4)
        (0.6667, 0.3333)
    """
    draws = bootstrap_samples(per_record, statistic, resamples=resamples, seed=seed)
    if draws is None:
        return {}, {}
    return percentile_intervals(draws.models, draws.estimates, draws.samples, pairs, draws.n, confidence, resamples)


@dataclass(frozen=True, kw_only=True)
class Draws:
    """A bootstrap's raw draws: the models, each one's metric on the full sample (`estimates`),
    the metric of every resample (`samples`: resamples × models) and the number of rows resampled."""

    models: list[Any]
    estimates: np.ndarray
    samples: np.ndarray
    n: int


def bootstrap_samples(per_record: Mapping[Any, np.ndarray], statistic: Callable[[np.ndarray], np.ndarray], *, resamples: int = 1000,
                      seed: int = 0) -> Draws | None:
    """The draws behind `bootstrap_counts` (the same resamples for the same seed), for callers
    that need more than percentile intervals (a p-value for a multiple-comparison correction);
    None when there are no models."""
    models = list(per_record)
    if not models:
        return None
    n, width = np.asarray(per_record[models[0]]).shape
    blocks = [np.asarray(per_record[m]) for m in models]
    if any(b.shape != (n, width) for b in blocks):
        raise ValueError(f"Expected per-record counts of {n} records × {width} columns for every model, but got {[b.shape for b in blocks]}.")
    if any(b.dtype.kind == "f" for b in blocks):
        joined = np.concatenate(blocks, axis=1, dtype=np.float64) if blocks else np.zeros((n, 0))
    else:
        # joined straight into the smallest type that holds the counts (1 byte in practice): a
        # 500-model leaderboard's int64 copies were ~50 MB each
        top = max((int(np.abs(b.astype(np.int64, copy=False)).max(initial=0)) for b in blocks), default=0)
        dt = next((t for t in (np.int8, np.int16, np.int32) if top <= np.iinfo(t).max), np.int64)
        joined = np.concatenate(blocks, axis=1, dtype=dt, casting="unsafe")  # values fit: checked above
    patterns, freq = _capped(*_distinct(joined))
    return _draw(models, width, patterns, freq, statistic=statistic, records=lambda: joined, n_records=n, resamples=resamples, seed=seed)


def cluster_sums(rows: np.ndarray, clusters: Any, *, natural: bool = False) -> np.ndarray:
    """Per-record rows (records, columns) summed per cluster (`clusters`: one label per record):
    the rows a cluster bootstrap resamples, one per cluster in order of first appearance, or in
    natural order of the labels (`natural`: the order record ids are lined up in, so a table
    keyed by cluster label resamples alike). A metric of summed counts is the same on these rows
    as on the records'; resampling them draws whole clusters, so records that share a customer, a
    document or an annotator move together.

    Example:
        >>> cluster_sums(np.array([[1, 0], [0, 1], [1, 1]]), ["b", "a", "b"]).tolist()
        [[2, 1], [0, 1]]
        >>> cluster_sums(np.array([[1, 0], [0, 1], [1, 1]]), ["b", "a", "b"], natural=True).tolist()
        [[0, 1], [2, 1]]
    """
    import pandas as pd

    rows = np.asarray(rows)
    labels = np.asarray(clusters, dtype=object)
    if len(labels) != len(rows):
        raise ValueError(f"Expected one cluster label per record ({len(rows)}), but got {len(labels)}.")
    codes, uniques = pd.factorize(labels, sort=False)
    if natural and len(uniques):
        from extracteval.core.id_order import natural_key

        order = sorted(range(len(uniques)), key=lambda k: natural_key(str(uniques[k])))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[codes]
    out = np.zeros((len(uniques), rows.shape[1]), dtype=np.float64 if rows.dtype.kind == "f" else np.int64)
    np.add.at(out, codes, rows)
    return out


def bootstrap_patterns(
    models: Sequence[Any],
    width: int,
    patterns: np.ndarray | None,
    freq: np.ndarray | None,
    pairs: Sequence[tuple[Any, Any]] = (),
    *,
    statistic: Callable[[np.ndarray], np.ndarray],
    records: Callable[[], np.ndarray | Iterable[np.ndarray]] | None = None,
    n_records: int | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[dict[Any, Interval], dict[tuple[Any, Any], Interval]]:
    """`bootstrap_counts` from distinct per-record patterns (K, models × width) and their
    frequencies, the models' blocks side by side in `models` order, or None when they were too
    many to keep; then `n_records` gives the number of records.

    When the patterns are kept and few (4·K ≤ records) a resample is a multinomial draw over them
    and the records themselves are never needed; otherwise `records()` must give the (records,
    models × width) rows in record order — one matrix, or consecutive blocks of any sizes (e.g.
    read back from disk one chunk at a time): the records are resampled in a streaming pass
    (`_resample_records`) whose draws do not depend on how the rows were split, so every engine
    gets the same intervals. `statistic` maps summed counts (..., width) to the metric (...); it
    is called once per block of resamples for all models together.
    """
    draws = _draw(models, width, patterns, freq, statistic=statistic, records=records, n_records=n_records, resamples=resamples, seed=seed)
    if draws is None:
        return {}, {}
    return percentile_intervals(draws.models, draws.estimates, draws.samples, pairs, draws.n, confidence, resamples)


def _draw(models: Sequence[Any], width: int, patterns: np.ndarray | None, freq: np.ndarray | None, *, statistic: Callable[[np.ndarray], np.ndarray],
          records: Callable[[], np.ndarray | Iterable[np.ndarray]] | None, n_records: int | None, resamples: int, seed: int) -> Draws | None:
    """The resamples of `bootstrap_patterns`: each model's estimate and the metric of every resample."""
    models = list(models)
    if not models:
        return None
    m_count = len(models)
    n, use_patterns = _bootstrap_size(patterns, freq, n_records)
    # resample × model: filled block by block, then all percentiles in one call per side
    samples = np.empty((resamples, m_count))

    def fill(done: int, totals: np.ndarray) -> None:
        """samples of resamples done … done + len(totals) from their totals: one statistic call
        for all models (a leaderboard has hundreds: a call per model dominated)."""
        samples[done : done + len(totals)] = statistic(totals.reshape(len(totals), m_count, width))

    if use_patterns:
        assert patterns is not None and freq is not None
        totals_all = _resample_patterns(patterns, np.asarray(freq, dtype=np.int64), n, m_count * width, resamples, seed, fill)
    else:
        if n > 0 and records is None:
            raise ValueError("many distinct per-record patterns: the bootstrap needs `records` (the per-record rows).")
        totals_all = _resample_records(
            records, n, m_count * width, np.arange(m_count * width), resamples, np.random.default_rng(seed), fill,
        ) if n > 0 else np.zeros(m_count * width, dtype=np.int64)
    estimates = np.asarray(statistic(np.asarray(totals_all).reshape(m_count, width)), dtype=np.float64)
    return Draws(models=models, estimates=estimates, samples=samples, n=n)


def _bootstrap_size(patterns: np.ndarray | None, freq: np.ndarray | None, n_records: int | None) -> tuple[int, bool]:
    """The number of records (checked against the patterns' frequencies), and whether a resample is a multinomial
    draw over the patterns (kept, and few: 4·K ≤ records) rather than over the records."""
    if patterns is not None and freq is not None:
        freq = np.asarray(freq, dtype=np.int64)
        n = int(freq.sum())
        if n_records is not None and n_records != n:
            raise ValueError(f"Expected pattern frequencies summing to {n_records} records, but got {n}.")
        return n, len(freq) * 4 <= n
    if n_records is None:
        raise ValueError("without patterns the bootstrap needs `n_records`.")
    return int(n_records), False


def _resample_patterns(patterns: np.ndarray, freq: np.ndarray, n: int, width: int, resamples: int, seed: int,
                       fill: Callable[[int, np.ndarray], None]) -> np.ndarray:
    """Resample n records as multinomial draws over their distinct patterns (`fill` gets each block of resampled
    totals); returns the patterns' exact column sums."""
    floating = np.asarray(patterns).dtype.kind == "f"
    # exact integer sums (float64 for per-record values), whatever the order of the patterns
    exact = np.float64 if floating else np.int64
    totals_all = freq @ np.asarray(patterns).astype(exact, copy=False) if len(freq) else np.zeros(width, dtype=exact)
    if n > 0:
        # float32 sums of integer counts are exact below 2**24
        dtype = np.float32 if not floating and n * max(int(np.abs(patterns).max(initial=0)), 1) < 2**24 else np.float64
        rng = np.random.default_rng(seed)
        # Records with the same counts for every model are interchangeable: drawing n records
        # and counting each distinct pattern is a multinomial draw over the patterns, so the
        # work scales with the number of distinct patterns, not of records. The draw is over
        # the patterns in canonical order (only this path depends on their order).
        patterns, freq = _canonical(patterns, freq)
        matrix = np.ascontiguousarray(patterns.astype(dtype))
        done = 0
        while done < resamples:
            b = min(_BLOCK, resamples - done)
            fill(done, rng.multinomial(n, freq / n, size=b).astype(dtype) @ matrix)
            done += b
    return totals_all


def percentile_intervals(models: list[Any], estimates: np.ndarray, samples: np.ndarray, pairs: Sequence[tuple[Any, Any]], n: int,
                          confidence: float, resamples: int) -> tuple[dict[Any, Interval], dict[tuple[Any, Any], Interval]]:
    """Each model's percentile interval around its estimate, and each pair's interval of the difference."""
    point = {m: float(estimates[k]) for k, m in enumerate(models)}
    alpha = (1.0 - confidence) / 2.0
    q = [100 * alpha, 100 * (1 - alpha)]

    def bounds(s: np.ndarray) -> np.ndarray:
        """(2, columns) percentiles of each column: per column the same values as one call per column.
        An undefined (NaN) resample is left out of its column's percentiles; a column with fewer
        than half its resamples defined has undefined bounds."""
        if n == 0 or s.shape[1] == 0:
            return np.zeros((2, s.shape[1]))
        undefined = np.isnan(s)
        if not undefined.any():
            return np.percentile(s, q, axis=0)
        out = np.full((2, s.shape[1]), np.nan)
        for j in range(s.shape[1]):
            defined = s[~undefined[:, j], j]
            if 2 * len(defined) >= len(s):
                out[:, j] = np.percentile(defined, q)
        return out

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


@dataclass(frozen=True, kw_only=True)
class PairComparison:
    """The difference of a primary metric (F1) between two adjacent models of a ranking, with its
    paired-bootstrap interval."""

    higher: str
    lower: str
    difference: Interval

    @property
    def significant(self) -> bool:
        return self.difference.significant

    def to_dict(self) -> dict[str, Any]:
        return comparison_entry(self.higher, self.lower, self.difference)


def comparison_entry(higher: str, lower: str, difference: Interval) -> dict[str, Any]:
    """An adjacent pair as every result document, leaderboard and run description has it: the
    two models, the interval of their difference, `significant` and the verdict in words."""
    return {"higher": higher, "lower": lower, "difference": difference.to_dict(), "significant": difference.significant,
            "verdict": difference.verdict}
