"""Row groups of the record-major Parquet files the MLflow layer writes (per-record counts,
logged predictions): their size and their id column, shared by every writer of such files."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ROW_GROUP", "row_group_ids"]

# Arrow's default largest row group (rows) in `pq.write_table`, which `to_parquet` uses: the direct
# writers write row groups of this size so that the files have the same row groups. Read at call
# time (a test makes it small).
ROW_GROUP = 1 << 20


def row_group_ids(ids: Any, start: int, stop: int, per_id: int, index_dtype: Any = np.int32) -> Any:
    """The id column of rows [start, stop) of a record-major table (`per_id` rows per id, ids in
    row order) as a dictionary array over the ids of these rows only, codes from 0.

    Each row group writes its dictionary page in full: the whole 100k-id dictionary in each of the
    20 row groups of a 100k × 200 file was half of its 20 MB. Readers put the row groups'
    dictionaries together (pandas: the same categories, in record order)."""
    import pyarrow as pa

    per = max(per_id, 1)  # no fields: no rows either
    first = start // per
    used = ids.slice(first, (stop - 1) // per + 1 - first) if stop > start else ids.slice(0, 0)
    codes = (np.arange(start, stop, dtype=np.int64) // per - first).astype(index_dtype)
    return pa.DictionaryArray.from_arrays(codes, used)
