"""Per-record count tables: what every task's intervals resample.

A task's metric is a function of counts summed over records (tp, fp, fn per field, tag or label;
valid / exact / correct flags as 0/1; per-record scores such as RQS with a record count beside
them, so a mean is their sum over the records' count). A `RecordCountTable` holds one model's
counts, one row per record; `paired_counts` lines several models' tables up on their record
ids, so that a bootstrap resamples the same records for all of them (`bootstrap_counts`),
and a metric function turns each resample's summed counts back into the metric. Summing is
order-free, so the tables, and the metric on the full sample, do not depend on record order.

Columns are named by their parts (item, label, count…), joined by `SEP`; `column` and `parts`
build and split such names; `rate_metric` builds a rate's metric function, and `item_count_columns`
and `label_count_columns` read the counts of items or of a view's labels out of summed counts for
the tasks' maps from counts to metrics.

Example:
    >>> t = RecordCountTable.from_columns(["r1", "r2", "r1"], {"exact": [1, 0, 1], "records": [1, 1, 1]})
    >>> t.record_ids.tolist(), t.counts.tolist()
    (['r1', 'r2'], [[2, 2], [0, 1]])
    >>> float(rate_metric(t.columns, "exact", "records")(t.counts.sum(axis=0)))
    0.6666666666666666
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


__all__ = [
    "SEP", "CountMetric", "RecordCountTable", "column", "parts", "paired_counts",
    "rate_metric", "item_count_columns", "label_count_columns",
]

SEP = "\x1f"  # joins the parts of a column name: no field, tag or label name holds it
# summed counts (..., columns) → metric values (...)
CountMetric = Callable[[np.ndarray], np.ndarray]


def column(*names: Any) -> str:
    """The column name of these parts (`column("amount", "tp")`)."""
    return SEP.join(str(n) for n in names)


def parts(name: str) -> list[str]:
    return name.split(SEP)


@dataclass(frozen=True, kw_only=True)
class RecordCountTable:
    """One model's per-record counts: `counts[i, j]` is count `columns[j]` of record
    `record_ids[i]` (distinct ids). Integer counts, or float64 when a column holds per-record
    values (a score summed into a mean)."""

    record_ids: np.ndarray
    columns: tuple[str, ...]
    counts: np.ndarray

    @classmethod
    def from_columns(cls, record_ids: Sequence[Any], values: Mapping[str, Any]) -> RecordCountTable:
        """From one row per (record, anything): each column's values summed per record id."""
        import pandas as pd

        codes, ids = pd.factorize(np.asarray(record_ids, dtype=object).astype(str), sort=False)
        cols = list(values)
        arrays = [np.broadcast_to(np.asarray(values[c]), (len(codes),)) for c in cols]
        floating = any(a.dtype.kind == "f" for a in arrays)
        out = np.zeros((len(ids), len(cols)), dtype=np.float64 if floating else np.int64)
        for j, a in enumerate(arrays):
            np.add.at(out[:, j], codes, a.astype(out.dtype))
        return cls(record_ids=np.asarray(ids, dtype=object), columns=tuple(cols), counts=out)

    @classmethod
    def from_long(cls, record_ids: Sequence[Any], names: Sequence[str], values: Any) -> RecordCountTable:
        """From rows (record id, column name, value): values summed per record and column."""
        import pandas as pd

        r, ids = pd.factorize(np.asarray(record_ids, dtype=object).astype(str), sort=False)
        c, cols = pd.factorize(np.asarray(names, dtype=object), sort=True)
        v = np.asarray(values)
        dtype = np.float64 if v.dtype.kind == "f" else np.int64
        out = np.zeros(len(ids) * len(cols), dtype=dtype)
        np.add.at(out, r * len(cols) + c, v.astype(dtype))
        return cls(record_ids=np.asarray(ids, dtype=object), columns=tuple(str(x) for x in cols), counts=out.reshape(len(ids), len(cols)))


def paired_counts(tables: Mapping[Hashable, RecordCountTable]) -> tuple[list[str], tuple[str, ...], dict[Hashable, np.ndarray]]:
    """Tables of several models → (record ids, columns, model → (records, columns) array).

    Records: the ids of any table, in natural order (`r2` before `r10`, the order `score`
    resamples in); a record a table lacks is a row of zeros there — it made no count for that
    model (an extra prediction of another one), so each model's sums, and its metric, stay its
    own. Columns: every table's, in first-seen order, zero where a table lacks one. Mapped with
    one `get_indexer` per distinct id / column list (hundreds of runs of one evaluation share
    theirs)."""
    import pandas as pd

    if not tables:
        return [], (), {}
    first = next(iter(tables.values())).record_ids
    if all(_same(first, t.record_ids) for t in tables.values()):  # every model scored the same records: one permutation
        return _paired_same_records(tables, [str(x) for x in np.asarray(first, dtype=object).tolist()])
    ids: dict[str, None] = {}
    cols: dict[str, None] = {}
    prev_ids: Any = None
    for t in tables.values():
        if prev_ids is None or not _same(prev_ids, t.record_ids):
            ids.update(dict.fromkeys(map(str, t.record_ids)))
            prev_ids = t.record_ids
        cols.update(dict.fromkeys(t.columns))
    from extracteval.core.id_order import natural_sorted

    rec = natural_sorted(ids)
    rec_index, col_index = pd.Index(rec, dtype=object), pd.Index(list(cols), dtype=object)
    out: dict[Hashable, np.ndarray] = {}
    prev: tuple[Any, Any, np.ndarray, np.ndarray] | None = None
    for k, t in tables.items():
        if prev is not None and _same(prev[0], t.record_ids) and prev[1] == t.columns:
            rows, where = prev[2], prev[3]
        else:
            rows = rec_index.get_indexer(pd.Index(np.asarray(t.record_ids, dtype=object).astype(str)))
            where = col_index.get_indexer(pd.Index(list(t.columns), dtype=object))
            prev = (t.record_ids, t.columns, rows, where)
        if len(rows) == len(rec) and np.array_equal(rows, np.arange(len(rec))) and np.array_equal(where, np.arange(len(cols))):
            out[k] = t.counts
        else:
            arr = np.zeros((len(rec), len(cols)), dtype=t.counts.dtype)
            arr[np.ix_(rows, where)] = t.counts
            out[k] = arr
    return rec, tuple(cols), out


def _paired_same_records(tables: Mapping[Hashable, RecordCountTable], ids: list[str]) -> tuple[list[str], tuple[str, ...], dict[Hashable, np.ndarray]]:
    """`paired_counts` of tables that all hold the records `ids` in one order: the natural order
    is one permutation of them, each table's rows moved by it (not copied when it is the identity)."""
    import pandas as pd

    from extracteval.core.id_order import natural_order

    perm = np.asarray(natural_order(ids), dtype=np.intp)
    identity = bool(np.array_equal(perm, np.arange(len(perm))))
    rec = ids if identity else [ids[i] for i in perm.tolist()]
    cols: dict[str, None] = {}
    for t in tables.values():
        cols.update(dict.fromkeys(t.columns))
    col_index = pd.Index(list(cols), dtype=object)
    out: dict[Hashable, np.ndarray] = {}
    for k, t in tables.items():
        counts = t.counts if identity else t.counts[perm]
        if t.columns != tuple(cols):
            arr = np.zeros((len(rec), len(cols)), dtype=t.counts.dtype)
            arr[:, col_index.get_indexer(pd.Index(list(t.columns), dtype=object))] = counts
            counts = arr
        out[k] = counts
    return rec, tuple(cols), out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (len(a) == len(b) and bool(np.array_equal(a, b)))


# ---- metric functions ---------------------------------------------------------------------------


def _index(columns: Sequence[str]) -> dict[str, int]:
    return {c: j for j, c in enumerate(columns)}


def rate_metric(columns: Sequence[str], numerator: str, denominator: str, *, zero_division: float = 0.0) -> CountMetric:
    """sum(numerator) / sum(denominator); `zero_division` when the denominator is 0."""
    idx = _index(columns)
    num, den = idx[numerator], idx[denominator]

    def metric(summed: np.ndarray) -> np.ndarray:
        n, d = np.asarray(summed[..., num], dtype=np.float64), np.asarray(summed[..., den], dtype=np.float64)
        return np.divide(n, d, out=np.full(n.shape, float(zero_division)), where=d != 0)

    return metric


def _groups(columns: Sequence[str], depth: int, prefix: tuple[str, ...] = ()) -> tuple[list[tuple[str, ...]], dict[str, np.ndarray]]:
    """Columns named (*prefix, group parts…, count) with `depth` group parts: the groups, and per
    count name the column of each group (-1 where a group lacks that count)."""
    groups: dict[tuple[str, ...], dict[str, int]] = {}
    for j, c in enumerate(columns):
        p = parts(c)
        if tuple(p[: len(prefix)]) != prefix:
            continue
        p = p[len(prefix) :]
        if len(p) == depth + 1:
            groups.setdefault(tuple(p[:depth]), {})[p[depth]] = j
    keys = list(groups)
    names = {n for g in groups.values() for n in g}
    return keys, {n: np.array([groups[g].get(n, -1) for g in keys], dtype=np.int64) for n in names}


def _take(summed: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """summed[..., cols] as float64, 0 where a column is -1 (absent)."""
    out = np.asarray(summed[..., np.maximum(cols, 0)], dtype=np.float64)
    if (cols < 0).any():
        out = np.where(cols >= 0, out, 0.0)
    return out


def item_count_columns(columns: Sequence[str], *, prefix: tuple[str, ...] = ()) -> tuple[list[str], Callable[[np.ndarray], tuple[np.ndarray, ...]]]:
    """The items of columns named (*prefix, item, tp|fp|fn[|tn]), and the function from summed
    counts (..., len(columns)) to their tp, fp, fn, tn arrays (..., items) (0 where an item lacks
    a count): what `core.counts.item_metrics` reduces."""
    keys, g = _groups(columns, 1, prefix)
    cols = [g.get(k, np.full(len(keys), -1, dtype=np.int64)) for k in ("tp", "fp", "fn", "tn")]
    return [k[0] for k in keys], lambda summed: tuple(_take(summed, c) for c in cols)


def label_count_columns(columns: Sequence[str]) -> tuple[list[tuple[str, str]], list[str], Callable[[np.ndarray], dict[str, np.ndarray]]]:
    """The labels (feature, label) of columns named (feature, label, tp|fp|fn), the features (those
    of columns (feature, `rows`), where a feature is listed even without a label, then those only
    labels name), and the function from summed counts (..., len(columns)) to `tp`, `fp`, `fn`
    (..., labels) and `rows` (..., features) (0 where a column is absent), and `correct` (..., features)
    given columns (feature, `correct`): the counts of one view
    of per-feature one-vs-rest counts, what `core.feature_views.view_count_metrics` reduces."""
    keys, g = _groups(columns, 2)
    rows_of = {p[0]: j for j, p in enumerate(map(parts, columns)) if len(p) == 2 and p[1] == "rows"}
    correct_of = {p[0]: j for j, p in enumerate(map(parts, columns)) if len(p) == 2 and p[1] == "correct"}
    features = list(dict.fromkeys([*rows_of, *(k[0] for k in keys)]))
    cols = {k: g.get(k, np.full(len(keys), -1, dtype=np.int64)) for k in ("tp", "fp", "fn")}
    row_cols = np.array([rows_of.get(f, -1) for f in features], dtype=np.int64)
    correct_cols = np.array([correct_of.get(f, -1) for f in features], dtype=np.int64)

    def counts(summed: np.ndarray) -> dict[str, np.ndarray]:
        got = {**{k: _take(summed, c) for k, c in cols.items()}, "rows": _take(summed, row_cols)}
        if correct_of:  # the rows right whole (label sets equal), per feature: `micro_accuracy` reads them
            got["correct"] = _take(summed, correct_cols)
        return got

    return [(k[0], k[1]) for k in keys], features, counts
