"""Slices: every model's metrics on the records that share a property, with honest intervals.

A slice is the records whose metadata column (or crossed columns) holds one value — scanned
contracts, German tickets, one vendor, the longest quarter of the documents. Every task's metric
is a function of counts summed over records (`core.record_counts`), so a slice's metric is that
function of the counts summed over the slice's records: exactly what scoring those records alone
gives. Per slice each model gets its primary metric with a paired-bootstrap interval (records, or
whole clusters of records, resampled: `cluster_sums`), the task's other main metrics, its rank
inside the slice; adjacent models get the interval of their gap and a two-sided bootstrap p-value,
Holm-corrected over the gaps of the slices ranked under one `--slice-by`. Slices smaller than the
minimum size are reported but not ranked. Per model, its weakest slices: the largest drops of
the slice's upper bound below the model's overall value, so a small, noisy slice does not top the
list on chance alone.

The first slice is every record (`(all records)`): the whole evaluation with the same intervals,
clustered when records come in clusters.

Values: a column with numbers (every present value a number, more distinct values than bins) is
cut into quantile bins, or at the edges given for it; anything else is taken as it is; records
without a value form the slice `(missing)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from extracteval.core.bootstrap import bootstrap_samples, cluster_sums, percentile_intervals
from extracteval.core.ranking import RankingSpec, rank_by_metrics
from extracteval.core.significance import significance

__all__ = ["value_text", "cluster_labels", "MISSING", "ALL", "CROSS", "SliceOptions", "slice_values", "SliceReport", "slice_report", "holm", "bootstrap_p_value"]

MISSING = "(missing)"
ALL = "(all records)"  # the slicing (and value) of every record: the whole evaluation
CROSS = " × "  # joins crossed columns' names, and their values


@dataclass(frozen=True, kw_only=True)
class SliceOptions:
    """How records are sliced and how slices are judged.

    Attributes:
        by: the slicings, each a tuple of metadata columns (one column, or several crossed).
        bins: quantile bins of a numeric column.
        edges: column → bin edges (ascending) for that column instead of quantiles.
        min_size: records a slice needs to be ranked (smaller ones are reported, not ranked).
        cluster_by: metadata column whose values group records that are not independent
            (a customer, a source document): intervals resample whole clusters.
        min_clusters: below this many clusters in a slice its intervals carry a warning.
        weakest: slices listed per model as its weakest.
    """

    by: tuple[tuple[str, ...], ...] = ()
    bins: int = 4
    edges: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    min_size: int = 20
    cluster_by: str | None = None
    min_clusters: int = 20
    weakest: int = 5
    resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0

    @property
    def columns(self) -> tuple[str, ...]:
        """Every metadata column these options read (slice columns, then the cluster column)."""
        cols = dict.fromkeys(c for spec in self.by for c in spec)
        if self.cluster_by:
            cols[self.cluster_by] = None
        return tuple(cols)


def _edge_labels(edges: Sequence[float]) -> list[str]:
    """Each edge as text: six significant digits, or as many more as it takes to read back as the
    edge itself — so a bin's label names its exact edges (`leaderboard --slice` reads them)."""
    out = []
    for e in edges:
        e = float(e)
        out.append(next((t for d in range(6, 18) if float(t := f"{e:.{d}g}") == e), repr(e)))
    return out


def _bins(values: np.ndarray, edges: Sequence[float]) -> tuple[np.ndarray, list[str]]:
    """Codes and labels of the bins [e0, e1], (e1, e2], … (the first closed on both sides), then
    `< e0` and `> en` for values outside them; NaN (no value) → -1."""
    uniq = sorted(set(float(e) for e in edges))
    if len(uniq) == 1:
        uniq = [uniq[0], uniq[0]]
    text = _edge_labels(uniq)
    inner = len(uniq) - 1
    names = [("[" if k == 0 else "(") + f"{text[k]}, {text[k + 1]}]" for k in range(inner)]
    codes = np.full(len(values), -1, dtype=np.int64)
    present = ~np.isnan(values)
    v = values[present]
    # bin k holds (e_k, e_k+1]; the first also e_0 itself
    k = np.searchsorted(np.asarray(uniq), v, side="left") - 1
    k = np.where(v == uniq[0], 0, k)
    out = np.where(v < uniq[0], inner, np.where(v > uniq[-1], inner + 1, k))
    codes[present] = out
    return codes, [*names, f"< {text[0]}", f"> {text[-1]}"]


def _distinct(raw: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values) of a column, -1 for no value: its distinct values when equal
    values are sure to read alike (all text, or all integers: a column read from a file), else
    every record a value of its own (`1`, `1.0` and `True` are equal objects with other texts)."""
    import pandas as pd

    raw = np.asarray(raw, dtype=object)
    if pd.api.types.infer_dtype(raw, skipna=True) in ("string", "integer", "empty"):
        codes, uniq = pd.factorize(raw, sort=False)
        return codes, np.asarray(uniq, dtype=object)
    return np.arange(len(raw), dtype=np.int64), raw


def _column_codes(raw: Any, name: str, bins: int, edges: Sequence[float] | None) -> tuple[np.ndarray, list[str]]:
    """Each record's value of one metadata column as a code into the labels (-1: no value), and
    the labels in display order: bins in order (below and above the edges last), other values in
    natural order of their text. Each distinct value is read once (its text, its number)."""
    import pandas as pd

    from extracteval.core.id_order import natural_key

    codes, uniq = _distinct(raw)
    u = pd.Series(uniq, dtype=object)
    u_missing = u.isna().to_numpy(dtype=bool)
    u_text = u.where(~u_missing, "").astype(str).str.strip().to_numpy(dtype=object)
    u_present = u_text != ""
    u_nums = pd.to_numeric(u.where(u_present), errors="coerce").to_numpy(dtype=np.float64)
    has = codes >= 0
    at = np.where(has, codes, 0)
    present = has & u_present[at] if len(uniq) else np.zeros(len(codes), dtype=bool)
    used = np.zeros(len(uniq), dtype=bool)
    used[codes[present]] = True  # distinct values some record holds
    is_bool = any(isinstance(v, (bool, np.bool_)) for v in uniq[used].tolist())
    numeric = bool(used.any()) and bool(np.isfinite(u_nums[used]).all()) and not is_bool
    if edges is not None and not numeric:
        from extracteval.errors import InputError

        bad = next((t for t, n, k in zip(u_text, u_nums, used) if k and not np.isfinite(n)), None)
        raise InputError(f"metadata column {name!r}: bin edges were given, so every value must be a finite number, but found {bad!r}.")
    if numeric and (edges is not None or len(np.unique(u_nums[used])) > bins):
        values = np.where(present, u_nums[at] if len(uniq) else np.nan, np.nan)
        cuts = list(edges) if edges is not None else np.quantile(values[present], np.linspace(0, 1, bins + 1)).tolist()
        bcodes, labels = _bins(values, cuts)
        kept = sorted(set(bcodes[bcodes >= 0].tolist()))
        remap = np.full(len(labels), -1, dtype=np.int64)
        remap[kept] = np.arange(len(kept))
        return np.where(bcodes >= 0, remap[np.maximum(bcodes, 0)], -1), [labels[c] for c in kept]
    texts = sorted(dict.fromkeys(t for t, k in zip(u_text.tolist(), used.tolist()) if k), key=natural_key)  # ties: first seen first
    where = {t: k for k, t in enumerate(texts)}
    rank = np.array([where.get(t, -1) if k else -1 for t, k in zip(u_text.tolist(), used.tolist())], dtype=np.int64)
    return np.where(present, rank[at] if len(uniq) else -1, -1), texts


def _slice_codes(metadata: Any, by: Sequence[str], options: SliceOptions) -> tuple[np.ndarray, list[str]]:
    """Each record's code of the slicing `by` (one column or crossed ones) and the values' labels
    in display order (`(missing)` last: a record without a value in any of the columns)."""
    parts = [_column_codes(metadata[col].to_numpy(dtype=object), col, options.bins, options.edges.get(col)) for col in by]
    if len(parts) == 1:
        codes, labels = parts[0]
    else:
        stacked = np.stack([c for c, _ in parts], axis=1)
        missing_any = (stacked < 0).any(axis=1)
        combos, inverse = np.unique(stacked[~missing_any], axis=0, return_inverse=True)  # lexicographic: each column's order
        codes = np.full(len(stacked), -1, dtype=np.int64)
        codes[~missing_any] = inverse.reshape(-1)
        labels = [CROSS.join(lab[c] for (_, lab), c in zip(parts, combo)) for combo in combos.tolist()]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels = [*labels, MISSING]
    return codes, labels


def slice_values(metadata: Any, by: Sequence[str], options: SliceOptions) -> tuple[list[str], list[str]]:
    """Each record's value of the slicing `by` (one column or crossed ones) and the values in
    display order. `metadata`: a DataFrame, one row per record, holding the columns."""
    codes, labels = _slice_codes(metadata, by, options)
    return [labels[c] for c in codes.tolist()], labels


@dataclass(frozen=True, kw_only=True)
class SliceReport:
    """Slices of one evaluation: `rows` (one per slicing, value and model), `gaps` (adjacent
    models inside each ranked slice), `weakest` (model → its weakest slices) and notes."""

    metric: str
    label: str
    rate: bool
    options: SliceOptions
    rows: list[dict[str, Any]]
    gaps: list[dict[str, Any]]
    weakest: dict[str, list[dict[str, Any]]]
    notes: list[str]
    extra: dict[str, Any] = field(default_factory=dict)  # what the caller adds (`size`: what the built-in size counts)
    model_notes: dict[str, list[str]] = field(default_factory=dict)  # notes about one model (a slice without its records), after `notes`

    def notes_of(self, models: Sequence[str]) -> list[str]:
        """The notes a view of these models shows: the general ones, then those about them."""
        return [*self.notes, *(n for m in models for n in self.model_notes.get(m, ()))]

    def frame(self) -> Any:
        """The rows as a DataFrame (the `slices` table): one row per slicing, value and model."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict[str, Any]:
        o = self.options
        return {
            "metric": self.metric, "label": self.label, "rate": self.rate, "by": [CROSS.join(b) for b in o.by], "min_size": o.min_size, "cluster_by": o.cluster_by,
            "confidence": o.confidence, "resamples": o.resamples, "seed": o.seed, "correction": "holm",
            "rows": self.rows, "gaps": self.gaps, "weakest": self.weakest, "notes": self.notes_of(list(self.model_notes)), **self.extra,
        }


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a difference being zero: twice the smaller share of
    resampled differences on either side of zero, each counted with the observed sample
    ((k + 1) / (B + 1)), at most 1."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[~np.isnan(d)]  # an undefined resample (a ratio of nothing, under zero_division "nan") says nothing either way
    b = len(d)
    if b == 0:
        return 1.0
    below, above = (np.count_nonzero(d <= 0) + 1) / (b + 1), (np.count_nonzero(d >= 0) + 1) / (b + 1)
    return float(min(1.0, 2.0 * min(below, above)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the k-th smallest is multiplied
    by (m - k + 1), made non-decreasing, capped at 1.

    Example:
        >>> holm([0.25, 0.5, 0.125])
        [0.5, 0.5, 0.375]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * float(p_values[i])))
        out[i] = running
    return out


Metric = Callable[[np.ndarray], np.ndarray]


def slice_report(arrays: Mapping[str, np.ndarray], metadata: Any, metrics: Mapping[str, Metric], spec: RankingSpec, options: SliceOptions, *,
                 present: Mapping[str, np.ndarray] | None = None) -> SliceReport:
    """Slice every model's per-record counts (`arrays`: model → (records, columns), the same
    records in the same order for every model, in ranking order of the whole evaluation) by the
    metadata rows of the same records. `metrics`: metric key → function of summed counts, the
    primary metric of `spec` first; `spec`'s tie-breaks among them rank the models inside a slice
    (exact ties keep the evaluation's order). The slice of all records keeps the evaluation's
    ranking (the order of `arrays`) and is always ranked; a slice's ranking is compared with it.
    A slice is ranked when it has `min_size` records and at least two resampling units (records,
    or clusters); with fewer than two units it has no interval. `present`: for a model that has
    rows for only some of the records (others' extra predictions), which ones (a boolean per
    record); in a slice where it has none, its metrics are undefined (NaN: `n/a`) and it is
    neither ranked nor resampled there, as `leaderboard --slice` leaves out a run without records.
    """
    models = list(arrays)
    primary = spec.primary
    names = [primary, *[k for k in metrics if k != primary]]
    spec = replace(spec, tie_breaks=tuple(k for k in spec.tie_breaks if k in metrics))
    overall = {m: _values(metrics, names, arrays[m]) for m in models}
    n_records = len(next(iter(arrays.values()))) if arrays else 0
    notes: list[str] = []
    model_notes: dict[str, list[str]] = {}
    clusters = _clusters(metadata, options, n_records, notes)
    rows: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    for by in ((), *options.by):
        label = CROSS.join(by) if by else ALL
        codes, labels = _slice_codes(metadata, by, options) if by else (np.zeros(n_records, dtype=np.int64), [ALL])
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
        family: list[dict[str, Any]] = []
        for code, value in enumerate(labels):
            idx = np.sort(order[bounds[code] : bounds[code + 1]])
            absent = frozenset(m for m, p in (present or {}).items() if by and m in arrays and not np.asarray(p)[idx].any())
            got = _one_slice(arrays, idx, clusters, metrics, names, spec, options, whole=None if by else (models, overall), absent=absent)
            for m in sorted(absent, key=models.index):
                model_notes.setdefault(m, []).append(f"{label} = {value}: no record of {m!r}; its metrics there are undefined (n/a).")
            ranked = not by or (len(idx) >= options.min_size and got["units"] >= 2)
            rows.extend(_rows(label, value, idx, got, ranked, primary, names, overall, models))
            if ranked:
                for g in got["gaps"]:
                    g.update({"slice": label, "value": value})
                    family.append(g)
                if clusters is not None and got["clusters"] < options.min_clusters:
                    where = "all records" if label == ALL else f"{label} = {value}"
                    n = got["clusters"]
                    notes.append(f"{where}: {n} cluster{'' if n == 1 else 's'} of {options.cluster_by!r}, fewer than {options.min_clusters}; "
                                 "its interval may be too narrow.")
        _correct(family, options, label, notes)
        gaps.extend(family)
    weakest = _weakest(rows, models, spec, options)
    return SliceReport(metric=primary, label=spec.label, rate=spec.primary_is_rate, options=options, rows=rows, gaps=gaps, weakest=weakest, notes=notes,
                       model_notes={m: model_notes[m] for m in models if m in model_notes})


def value_text(v: Any) -> str:
    """A metadata value as slices and clusters compare it: its text, stripped; "" for none."""
    return "" if v is None or (isinstance(v, float) and v != v) else str(v).strip()


def cluster_labels(values: Sequence[Any], record_ids: Sequence[Any]) -> np.ndarray:
    """Each record's cluster label: `v<value>`, or `r<record id>` for a record without a value (a
    cluster of its own, never one block of unrelated records). One rule for every door, so that
    the clusters line up alike wherever they are resampled."""
    out = np.empty(len(values), dtype=object)
    for k, (v, rid) in enumerate(zip(values, record_ids)):
        text = value_text(v)
        out[k] = f"v{text}" if text else f"r{rid}"
    return out


def _clusters(metadata: Any, options: SliceOptions, n_records: int, notes: list[str]) -> np.ndarray | None:
    """Each record's cluster label (None without `cluster_by`; see `cluster_labels`)."""
    if not options.cluster_by:
        return None
    raw = metadata[options.cluster_by].to_numpy(dtype=object) if n_records else np.zeros(0, dtype=object)
    labels = cluster_labels(raw, np.asarray(metadata.index, dtype=object))
    alone = int(sum(1 for x in labels if x.startswith("r")))
    if alone:
        notes.append(f"{alone} record(s) without a value of {options.cluster_by!r}: each is a cluster of its own.")
    return labels


def _rows(label: str, value: str, idx: np.ndarray, got: Mapping[str, Any], ranked: bool, primary: str, names: Sequence[str],
          overall: Mapping[str, Mapping[str, float]], models: Sequence[str]) -> list[dict[str, Any]]:
    """The table rows of one slice: one per model, in the slice's ranking order."""
    absent = got.get("absent", frozenset())
    order_in = [r["model"] for r in got["ranking"] if r["model"] not in absent]
    differs = bool(label != ALL and ranked and order_in != [m for m in models if m not in absent])
    out = []
    for r in got["ranking"]:
        m = r["model"]
        iv = got["intervals"].get(m)
        out.append({"slice": label, "value": value, "model": m, "records": int(len(idx)), "clusters": got["clusters"],
                    "ranked": ranked and m not in absent, "rank": r["rank"] if ranked and m not in absent else None,
                    "winner": ranked and m not in absent and r["rank"] == 1,
                    "ranking_differs": differs, "metric": primary, "estimate": got["values"][m][primary],
                    "low": iv.low if iv is not None else None, "high": iv.high if iv is not None else None,
                    "overall": overall[m][primary], **{f"metrics/{k}": got["values"][m][k] for k in names}})
    return out


def _correct(family: list[dict[str, Any]], options: SliceOptions, label: str, notes: list[str]) -> None:
    """Holm's correction over the leads of one slicing; a note when the resamples are too few for
    any lead to pass it (the smallest bootstrap p-value is 2 / (resamples + 1))."""
    alpha = 1.0 - options.confidence
    for g, p in zip(family, holm([g["p_value"] for g in family])):
        g["p_holm"] = p
        g["significant"] = p < alpha
    m = len(family)
    if m and m * 2.0 / (options.resamples + 1) >= alpha:
        need = int(math.ceil(2.0 * m / alpha))
        where = "all records" if label == ALL else f"by {label}"
        notes.append(f"{where}: with {m} leads and {options.resamples} resamples no lead can be significant after Holm's correction; "
                     f"use --resamples {need} or more.")


def _values(metrics: Mapping[str, Metric], names: Sequence[str], rows: np.ndarray) -> dict[str, float]:
    summed = np.asarray(rows).sum(axis=0)
    return {k: float(metrics[k](summed)) for k in names}


def _ranking(spec: RankingSpec, values: Mapping[str, Mapping[str, float]], order: Sequence[str]) -> list[dict[str, Any]]:
    """The models ranked by `spec` on `values`; exact ties keep their place in `order`."""
    place = {m: f"{k:09d}" for k, m in enumerate(order)}
    back = {v: m for m, v in place.items()}
    return [{"model": back[r.model], "rank": r.rank} for r in rank_by_metrics(spec, {place[m]: v for m, v in values.items()})]


def _one_slice(arrays: Mapping[str, np.ndarray], idx: np.ndarray, clusters: np.ndarray | None, metrics: Mapping[str, Metric], names: Sequence[str],
               spec: RankingSpec, options: SliceOptions, *, whole: tuple[Sequence[str], Mapping[str, Mapping[str, float]]] | None = None,
               absent: frozenset[str] = frozenset()) -> dict[str, Any]:
    """One slice: every model's values (exact, from the slice's summed counts), its ranking (by
    `spec`; for the slice of all records, `whole`: the evaluation's order and the values already
    summed), the primary metric's paired interval per model and per adjacent gap with the gaps'
    p-values — none with fewer than two resampling units. `absent`: models without a record in
    the slice: undefined values, ranked after the others, no interval and no lead."""
    models = list(arrays)
    if whole is None:
        sub = {m: np.asarray(arrays[m])[idx] for m in models if m not in absent}
        values = {m: {k: math.nan for k in names} if m in absent else _values(metrics, names, sub[m]) for m in models}
        ranking = _ranking(spec, values, models)
    else:  # every record: the arrays as they are, not copied, and their sums already taken
        sub, values = {m: np.asarray(arrays[m]) for m in models}, whole[1]
        ranking = [{"model": m, "rank": k} for k, m in enumerate(whole[0], start=1)]
    rows = sub
    n_clusters = units = len(idx)
    if clusters is not None:
        labels = clusters[idx]
        rows = _cluster_rows(sub, labels)
        n_clusters = units = len(next(iter(rows.values()))) if rows else 0
    done = {"values": values, "ranking": ranking, "intervals": {}, "gaps": [], "clusters": int(n_clusters), "units": units, "absent": absent}
    if units < 2 or options.resamples <= 0 or not rows:  # nothing to resample, or intervals off
        return done
    draws = bootstrap_samples(rows, metrics[spec.primary], resamples=options.resamples, seed=options.seed)
    ordered = [r["model"] for r in ranking if r["model"] not in absent]
    pairs = list(zip(ordered[:-1], ordered[1:]))
    assert draws is not None
    estimates = np.array([values[m][spec.primary] for m in draws.models])
    per, diffs = percentile_intervals(draws.models, estimates, draws.samples, pairs, draws.n, options.confidence, options.resamples)
    col = {m: k for k, m in enumerate(draws.models)}
    gaps = []
    for a, b in pairs:
        d = draws.samples[:, col[a]] - draws.samples[:, col[b]]
        iv = diffs[(a, b)]
        gaps.append({"higher": a, "lower": b, "difference": iv.to_dict(), "p_value": bootstrap_p_value(d), "verdict": significance(iv.low, iv.high)})
    return {**done, "intervals": per, "gaps": gaps}


def _cluster_rows(sub: Mapping[str, np.ndarray], labels: np.ndarray) -> dict[str, np.ndarray]:
    """Every model's rows summed per cluster in one pass (the labels factorised once), in natural
    order of the labels: lined up as tables keyed by cluster are."""
    models = list(sub)
    widths = [np.asarray(sub[m]).shape[1] for m in models]
    joined = np.concatenate([np.asarray(sub[m]) for m in models], axis=1) if models else np.zeros((len(labels), 0))
    sums = cluster_sums(joined, labels, natural=True)
    cuts = np.cumsum([0, *widths])
    return {m: sums[:, cuts[k] : cuts[k + 1]] for k, m in enumerate(models)}


def _weakest(rows: Sequence[Mapping[str, Any]], models: Sequence[str], spec: RankingSpec, options: SliceOptions) -> dict[str, list[dict[str, Any]]]:
    """Per model, its ranked slices whose value falls below its overall value, by the drop that
    the slice's interval still supports (overall − upper bound; for a lower-is-better metric,
    lower bound − overall), largest first."""
    lower = spec.primary in spec.lower_is_better
    out: dict[str, list[dict[str, Any]]] = {}
    for m in models:
        mine = []
        for r in rows:
            if r["model"] != m or not r["ranked"] or r["slice"] == ALL or (r["high"] is None and options.resamples > 0):
                continue
            drop = r["estimate"] - r["overall"] if lower else r["overall"] - r["estimate"]
            if not drop > 0:  # not below the overall value, or undefined
                continue
            if r["high"] is None:  # intervals off: ordered by the drop itself
                supported = None
            else:
                supported = r["low"] - r["overall"] if lower else r["overall"] - r["high"]
            mine.append({"slice": r["slice"], "value": r["value"], "records": r["records"], "estimate": r["estimate"], "low": r["low"],
                         "high": r["high"], "overall": r["overall"], "drop": drop, "supported_drop": supported})
        mine.sort(key=lambda w: (-(w["drop"] if w["supported_drop"] is None else w["supported_drop"]), -w["drop"], w["slice"], w["value"]))
        out[m] = mine[: options.weakest]
    return out
