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

from extracteval.core.bootstrap import Interval, percentile_intervals, bootstrap_samples, cluster_sums
from extracteval.core.ranking import RankingSpec, rank_by_metrics
from extracteval.core.significance import significance

__all__ = ["MISSING", "ALL", "CROSS", "SliceOptions", "slice_values", "SliceReport", "slice_report", "holm", "bootstrap_p_value"]

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


def _number_label(x: float) -> str:
    return f"{x:.6g}"


def _bin_labels(values: Any, edges: Sequence[float]) -> list[str]:
    """Labels of the bins [e0, e1], (e1, e2], … (the first closed on both sides)."""
    import pandas as pd

    codes = pd.cut(values, bins=list(edges), include_lowest=True, labels=False, duplicates="drop")
    uniq = list(dict.fromkeys(float(e) for e in edges))
    names = [("[" if k == 0 else "(") + f"{_number_label(uniq[k])}, {_number_label(uniq[k + 1])}]" for k in range(len(uniq) - 1)]
    below, above = f"< {_number_label(uniq[0])}", f"> {_number_label(uniq[-1])}"
    out = []
    for v, c in zip(values, codes):
        if v != v:  # NaN: no value
            out.append(MISSING)
        elif c == c:
            out.append(names[int(c)])
        else:
            out.append(below if v < uniq[0] else above)
    return out


def _column_values(raw: Any, name: str, bins: int, edges: Sequence[float] | None) -> tuple[list[str], list[str]]:
    """(each record's slice value, the values in display order) of one metadata column.

    A column of texts with few distinct ones (a region, a channel) is read once per distinct text
    and the labels are spread back over the records: the same labels, since a record's label
    depends on its text alone — unless the column is cut into bins, whose edges depend on every
    record, and then every record is read. Only texts: other values that compare equal (1, 1.0,
    True) would share one reading where each has its own label."""
    import pandas as pd

    raw = np.asarray(raw, dtype=object)
    try:
        codes, uniques = pd.factorize(raw)
    except TypeError:  # a value that cannot be hashed (a list from a JSON record): read record by record
        codes, uniques = None, None
    if uniques is not None and 4 * len(uniques) <= len(raw) and all(type(u) is str for u in uniques):
        got = _column_labels(uniques, name, bins, edges, whole=False)
        if got is not None:
            per, order = got
            labels = np.asarray(per + [MISSING], dtype=object)[codes].tolist()  # code -1 (no value): the last, MISSING
            if MISSING in labels and MISSING not in order:
                order.append(MISSING)
            return labels, order
    got = _column_labels(raw, name, bins, edges, whole=True)
    assert got is not None
    return got


def _column_labels(raw: Any, name: str, bins: int, edges: Sequence[float] | None, *, whole: bool) -> tuple[list[str], list[str]] | None:
    """`_column_values` of these values; None when they are a column's distinct values only
    (`whole` false) and it would be cut into bins, which needs every record's value."""
    import pandas as pd

    from extracteval.core.id_order import natural_key

    s = pd.Series(raw, dtype=object)
    present = s.notna() & (s.astype(str).str.strip() != "")
    nums = pd.to_numeric(s.where(present), errors="coerce")
    numeric = bool(present.any()) and bool(nums[present].notna().all()) and not s[present].map(lambda v: isinstance(v, bool)).any()
    if edges is not None and not numeric:
        from extracteval.errors import InputError

        bad = s[present & nums.isna()].iloc[0] if (present & nums.isna()).any() else None
        raise InputError(f"metadata column {name!r}: bin edges were given, so every value must be a number, but found {bad!r}.")
    if numeric and (edges is not None or nums[present].nunique() > bins):
        if not whole:
            return None
        values = nums.where(present).to_numpy(dtype=np.float64)
        if edges is None:
            qs = np.quantile(values[~np.isnan(values)], np.linspace(0, 1, bins + 1))
            cuts: Sequence[float] = sorted(set(qs.tolist()))
            if len(cuts) < 2:
                cuts = [cuts[0], cuts[0]]
        else:
            cuts = list(edges)
        labels = _bin_labels(values, cuts)
        order = [v for v in dict.fromkeys(sorted(set(labels) - {MISSING}, key=lambda lab: _bin_start(lab)))]
    else:
        labels = [(_number_label(float(n)) if numeric else str(v).strip()) if p else MISSING for v, n, p in zip(s, nums, present)]
        order = sorted(set(labels) - {MISSING}, key=natural_key)
    if MISSING in labels:
        order.append(MISSING)
    return labels, order


def _bin_start(label: str) -> tuple[int, float]:
    if label.startswith("<"):
        return (0, -math.inf)
    if label.startswith(">"):
        return (2, math.inf)
    return (1, float(label[1:].split(",")[0]))


def slice_values(metadata: Any, by: Sequence[str], options: SliceOptions) -> tuple[list[str], list[str]]:
    """Each record's value of the slicing `by` (one column or crossed ones) and the values in
    display order. `metadata`: a DataFrame, one row per record, holding the columns."""
    per, orders = [], []
    for col in by:
        labels, order = _column_values(metadata[col].to_numpy(dtype=object), col, options.bins, options.edges.get(col))
        per.append(labels)
        orders.append(order)
    if len(by) == 1:
        return per[0], orders[0]
    values = [CROSS.join(t) for t in zip(*per)]
    rank = [{v: k for k, v in enumerate(o)} for o in orders]
    seen = sorted(set(values), key=lambda v: tuple(r[p] for r, p in zip(rank, v.split(CROSS))))
    return values, seen


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

    def frame(self) -> Any:
        """The rows as a DataFrame (the `slices` table): one row per slicing, value and model."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict[str, Any]:
        o = self.options
        return {
            "metric": self.metric, "label": self.label, "rate": self.rate, "by": [CROSS.join(b) for b in o.by], "min_size": o.min_size, "cluster_by": o.cluster_by,
            "confidence": o.confidence, "resamples": o.resamples, "seed": o.seed, "correction": "holm",
            "rows": self.rows, "gaps": self.gaps, "weakest": self.weakest, "notes": self.notes,
        }


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a difference being zero: twice the smaller share of
    resampled differences on either side of zero, each counted with the observed sample
    ((k + 1) / (B + 1)), at most 1."""
    d = np.asarray(differences, dtype=np.float64)
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


def slice_report(arrays: Mapping[str, np.ndarray], metadata: Any, metrics: Mapping[str, Metric], spec: RankingSpec, options: SliceOptions) -> SliceReport:
    """Slice every model's per-record counts (`arrays`: model → (records, columns), the same
    records in the same order for every model, in ranking order of the whole evaluation) by the
    metadata rows of the same records. `metrics`: metric key → function of summed counts, the
    primary metric of `spec` first; `spec`'s tie-breaks among them rank the models inside a slice.
    """
    models = list(arrays)
    primary = spec.primary
    names = [primary, *[k for k in metrics if k != primary]]
    spec = replace(spec, tie_breaks=tuple(k for k in spec.tie_breaks if k in metrics))
    overall = {m: _values(metrics, names, arrays[m]) for m in models}
    overall_order = [r.model for r in rank_by_metrics(spec, overall)]
    clusters = None
    notes: list[str] = []
    if options.cluster_by:
        import pandas as pd

        cl = metadata[options.cluster_by].to_numpy(dtype=object)
        clusters = np.where(pd.isna(cl), MISSING, cl.astype(str))
    rows: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    n_records = len(next(iter(arrays.values()))) if arrays else 0
    for by in ((), *options.by):
        label = CROSS.join(by) if by else ALL
        if by:
            values, order = slice_values(metadata, by, options)
        else:  # every record: the whole evaluation, with the same (clustered) intervals
            values, order = [ALL] * n_records, [ALL]
        members = _members(np.asarray(values, dtype=object), order)
        family: list[dict[str, Any]] = []
        for value in order:
            idx = members[value]
            got = _one_slice(arrays, idx, clusters, metrics, names, spec, options, whole=overall if not by else None)
            ranked = len(idx) >= options.min_size
            order_in = [r["model"] for r in got["ranking"]]
            differs = ranked and order_in != overall_order
            for r in got["ranking"]:
                m = r["model"]
                iv: Interval = got["intervals"][m]
                rows.append({"slice": label, "value": value, "model": m, "records": int(len(idx)), "clusters": got["clusters"],
                             "ranked": ranked, "rank": r["rank"] if ranked else None, "winner": ranked and r["rank"] == 1,
                             "ranking_differs": differs, "metric": primary, "estimate": iv.estimate, "low": iv.low, "high": iv.high,
                             "overall": overall[m][primary], **{f"metrics/{k}": got["values"][m][k] for k in names}})
            if ranked:
                for g in got["gaps"]:
                    g.update({"slice": label, "value": value})
                    family.append(g)
            if clusters is not None and got["clusters"] < options.min_clusters:
                where = "all records" if label == ALL else f"{label} = {value}"
                notes.append(f"{where}: {got['clusters']} clusters of {options.cluster_by!r}, fewer than {options.min_clusters}; "
                             "its interval may be too narrow.")
        for g, p in zip(family, holm([g["p_value"] for g in family])):
            g["p_holm"] = p
            g["significant"] = p < 1.0 - options.confidence
        gaps.extend(family)
    weakest = _weakest(rows, models, spec, options)
    return SliceReport(metric=primary, label=spec.label, rate=spec.primary_is_rate, options=options, rows=rows, gaps=gaps, weakest=weakest, notes=notes)


def _values(metrics: Mapping[str, Metric], names: Sequence[str], rows: np.ndarray) -> dict[str, float]:
    summed = np.asarray(rows).sum(axis=0)
    return {k: float(metrics[k](summed)) for k in names}


def _members(values: np.ndarray, order: Sequence[str]) -> dict[str, np.ndarray]:
    """Each value's records (their positions, ascending): one grouping pass over the records
    instead of comparing every record with every value (50 values × 150k records: 0.1 s)."""
    import pandas as pd

    codes, uniques = pd.factorize(values, sort=False)
    if len(codes) and codes.min() < 0:  # not from slice_values (which names a missing value): as compared one by one
        return {v: np.flatnonzero(values == v) for v in order}
    grouped = np.split(np.argsort(codes, kind="stable"), np.cumsum(np.bincount(codes, minlength=len(uniques)))[:-1])
    found = dict(zip(uniques.tolist(), grouped))
    return {v: found.get(v, np.zeros(0, dtype=np.intp)) for v in order}


def _one_slice(arrays: Mapping[str, np.ndarray], idx: np.ndarray, clusters: np.ndarray | None, metrics: Mapping[str, Metric], names: Sequence[str],
               spec: RankingSpec, options: SliceOptions, *, whole: Mapping[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """One slice: every model's values (exact, from the slice's summed counts), its ranking, the
    primary metric's paired interval per model and per adjacent gap, with the gaps' p-values.

    `whole`: the slice is every record in order (`idx` is 0 … n-1) and these are the models'
    values over all of them: a model's array laid out in rows (C order) is then used as it is,
    with those values, instead of a copy of all its rows summed again — the same numbers, since
    the copy would hold the same rows in the same layout."""
    models = list(arrays)
    sub, values = {}, {}
    for m in models:
        a = np.asarray(arrays[m])
        if whole is not None and a.flags.c_contiguous:
            sub[m], values[m] = a, dict(whole[m])
        else:
            sub[m] = a[idx]
            values[m] = _values(metrics, names, sub[m])
    ranking = [{"model": r.model, "rank": r.rank} for r in rank_by_metrics(spec, values)]
    rows = sub
    n_clusters = len(idx)
    if clusters is not None:
        labels = clusters[idx]
        rows = {m: cluster_sums(sub[m], labels) for m in models}
        n_clusters = len(set(labels.tolist()))
    draws = bootstrap_samples(rows, metrics[spec.primary], resamples=options.resamples, seed=options.seed)
    ordered = [r["model"] for r in ranking]
    pairs = list(zip(ordered[:-1], ordered[1:]))
    assert draws is not None
    estimates = np.array([values[m][spec.primary] for m in draws.models])
    per, diffs = percentile_intervals(draws.models, estimates, draws.samples, pairs, draws.n, options.confidence, options.resamples)
    col = {m: k for k, m in enumerate(draws.models)}
    gaps = []
    for a, b in pairs:
        d = draws.samples[:, col[a]] - draws.samples[:, col[b]] if draws.n else np.zeros(0)
        iv = diffs[(a, b)]
        gaps.append({"higher": a, "lower": b, "difference": iv.to_dict(), "p_value": bootstrap_p_value(d), "verdict": significance(iv.low, iv.high)})
    return {"values": values, "ranking": ranking, "intervals": per, "gaps": gaps, "clusters": int(n_clusters)}


def _weakest(rows: Sequence[Mapping[str, Any]], models: Sequence[str], spec: RankingSpec, options: SliceOptions) -> dict[str, list[dict[str, Any]]]:
    """Per model, its ranked slices whose value falls below its overall value, by the drop that
    the slice's interval still supports (overall − upper bound; for a lower-is-better metric,
    lower bound − overall), largest first."""
    lower = spec.primary in spec.lower_is_better
    out: dict[str, list[dict[str, Any]]] = {}
    for m in models:
        mine = []
        for r in rows:
            if r["model"] != m or not r["ranked"] or r["slice"] == ALL:
                continue
            drop = r["estimate"] - r["overall"] if lower else r["overall"] - r["estimate"]
            if drop <= 0:
                continue
            supported = r["low"] - r["overall"] if lower else r["overall"] - r["high"]
            mine.append({"slice": r["slice"], "value": r["value"], "records": r["records"], "estimate": r["estimate"], "low": r["low"],
                         "high": r["high"], "overall": r["overall"], "drop": drop, "supported_drop": supported})
        mine.sort(key=lambda w: (-w["supported_drop"], -w["drop"], w["slice"], w["value"]))
        out[m] = mine[: options.weakest]
    return out
