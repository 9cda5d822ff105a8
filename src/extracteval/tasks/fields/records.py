"""The `fields` task's per-record counts as a table: shared by the adapter (in memory) and the
chunked `evaluate` (chunk by chunk), which must write the same rows; and as the count table
slices are taken from (`record_count_table`), handed over without writing the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["records_frame_of", "record_count_table"]

_COUNT_KEYS = ("tp", "fp", "fn", "tn", "excluded")


def records_frame_of(rec: Any, models: Sequence[str]) -> pd.DataFrame:
    """model, record_id, field, tp, fp, fn, tn, excluded of a `RecordLedger` — one row per model,
    record and field, with dictionary-encoded (categorical) id columns: no per-row string
    objects, and Parquet stores each id once."""
    n, f = len(rec.record_ids), len(rec.fields)
    models = list(models)
    rid_codes = np.repeat(np.arange(n, dtype=np.int32), f)
    fld_codes = np.tile(np.arange(f, dtype=np.int32), n)
    rid_cat = pd.Categorical.from_codes(np.tile(rid_codes, len(models)), categories=pd.Index(rec.record_ids, dtype=object))
    fld_cat = pd.Categorical.from_codes(np.tile(fld_codes, len(models)), categories=pd.Index(rec.fields, dtype=object))
    mdl_cat = pd.Categorical.from_codes(np.repeat(np.arange(len(models), dtype=np.int32), n * f), categories=pd.Index(models, dtype=object))
    flat = np.concatenate([rec.counts[m].reshape(n * f, 5) for m in models]) if models else np.zeros((0, 5), dtype=np.int32)
    return pd.DataFrame({
        "model": mdl_cat, "record_id": rid_cat, "field": fld_cat,
        **{k: flat[:, i] for i, k in enumerate(_COUNT_KEYS)},
    })


def record_count_table(rec: Any, model: str, *, sizes: bool = False) -> tuple[Any, Any]:
    """One model's per-record counts of a `RecordLedger`: the `RecordCountTable` (columns (field,
    tp|fp|fn|tn), in the ledger's integer type) and with `sizes` each record's non-empty truth
    fields (tp + fn) — what the adapter's `record_counts` and `record_sizes` read from the rows of
    `records_frame_of`, taken from the ledger's array itself. (None, None) for a model the ledger
    lacks."""
    from extracteval.core.record_counts import RecordCountTable, column
    from extracteval.core.run_ranking import COUNT_COLUMNS

    arr = rec.counts.get(model)
    if arr is None:
        return None, None
    n, f = len(rec.record_ids), len(rec.fields)
    ids = np.asarray(rec.record_ids, dtype=object) if f else np.zeros(0, dtype=object)  # no fields: no rows, no records
    counts = np.empty((n if f else 0, f * 4), dtype=arr.dtype)
    if f:
        counts.reshape(n, f, 4)[...] = arr[:, :, :4]  # one copy of tp, fp, fn, tn, in the ledger's integer type (sums are int64)
    table = RecordCountTable(record_ids=ids, columns=tuple(column(i, k) for i in rec.fields for k in COUNT_COLUMNS), counts=counts)
    if not sizes:
        return table, None
    size = pd.Series((arr[:, :, 0].astype(np.int64) + arr[:, :, 2]).sum(axis=1) if f else np.zeros(0, dtype=np.int64), index=ids,
                     name="non-empty truth fields")
    return table, size
