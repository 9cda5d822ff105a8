"""The `fields` task's per-record counts as a table: shared by the adapter (in memory) and the
chunked `evaluate` (chunk by chunk), which must write the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["records_frame_of"]

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
