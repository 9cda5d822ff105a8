"""The `extracteval/predictions.parquet` artifact: a model run's predictions as scored, which
`extracteval rescore` reads back and scores again against edited ground truth.

Each task's adapter writes it (`TaskAdapter.write_predictions`) and reads it back
(`TaskAdapter.read_predictions`) in one of two layouts:

- **cells** (`write_prediction_cells`): one row per record: `id`, `prediction` (the record's
  prediction cell as JSON text, exactly what the adapter's `score_frame` reads; null = no
  output), `status` (null when the task keeps status inside the cell).
- **long** (`write_predictions_parquet`): one row per record and field: `id`, `field`, `value`
  (JSON text), `status`, written by Arrow from dictionary codes so that 20M cells are not 20M
  `json.dumps` calls (the `fields` task, which reads it back with
  `tasks.fields.inputs.frame_to_predictions`).

The long layout's row groups are those of the per-record counts file (`io.parquet_rows`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extracteval.errors import InputError
from extracteval.io import parquet_rows
from extracteval.io.parquet_rows import row_group_ids

__all__ = ["PREDICTIONS_ARTIFACT", "LoggedPredictions", "CellPredictions", "write_prediction_cells", "read_prediction_cells",
           "CodedPredictions", "code_predictions", "predictions_to_frame", "write_predictions_parquet"]

PREDICTIONS_ARTIFACT = "extracteval/predictions.parquet"

def _plain(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return _plain(v.item())
        except (ValueError, AttributeError):
            pass
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return _plain(v.tolist())
    if isinstance(v, (str, int, float, bool)):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def _exact_codes(col: Any) -> tuple[Any, Any] | None:
    """`pd.factorize(col)` when it keeps apart every two cells whose JSON texts differ, else None.
    Hashing makes 1 == 1.0 == True and 0.0 == -0.0: exact are strings (a column whose distinct
    values all are `str`: no str equals a value of another type), integers, booleans and floats
    without a negative zero."""
    import numpy as np
    import pandas as pd

    dtype = col.dtype
    if pd.api.types.is_float_dtype(dtype):
        a = col.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.any((a == 0) & np.signbit(a)):
            return None
    elif not (dtype == object or isinstance(dtype, pd.StringDtype) or pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_integer_dtype(dtype)):
        return None
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:  # unhashable cells (lists, dicts)
        return None
    if dtype == object and not all(type(u) is str for u in uniques):
        return None
    return np.asarray(codes), uniques


def _distinct_texts(col: Any, text_of: Callable[[Any], str | None]) -> tuple[Any, list[str | None]]:
    """(codes, texts): per cell an index into `texts` (-1 = missing), `text_of` called once per
    distinct value instead of once per cell."""
    import numpy as np
    import pandas as pd

    exact = _exact_codes(col)
    if exact is not None:
        return exact[0], [text_of(u) for u in exact[1]]
    cells = col.to_numpy(dtype=object)
    out = np.empty(len(cells), dtype=object)
    seen: dict[Any, str | None] = {}
    for i, v in enumerate(cells):
        t = type(v)
        if t is not str and t is not int and t is not bool:
            # floats (NaN, -0.0), tuples ((1,) == (1.0,) == (True,)), NumPy scalars: no cache
            out[i] = text_of(v)
            continue
        key = (t, v)
        try:
            out[i] = seen[key]
        except KeyError:
            out[i] = seen[key] = text_of(v)
    codes, uniques = pd.factorize(out, use_na_sentinel=True)
    return np.asarray(codes), list(uniques)


def _missing(v: Any) -> bool:
    """None, NaN, pandas' NA and NaT: a missing cell (null), however the column holds it."""
    import pandas as pd

    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


def _value_text(v: Any, *, sort_keys: bool = True) -> str | None:
    if _missing(v):
        return None
    p = _plain(v)
    return None if p is None else json.dumps(p, ensure_ascii=False, sort_keys=sort_keys)


def _status_text(s: Any) -> str | None:
    return None if _missing(s) else str(s)


class _Dictionary:
    """Texts → codes of one dictionary shared by every column."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def lookup(self, texts: list[str | None]) -> Any:
        """Code per text, plus a trailing -1 so that a column code of -1 (missing) maps to -1."""
        import numpy as np

        lut = np.empty(len(texts) + 1, dtype=np.int32)
        for i, t in enumerate(texts):
            lut[i] = -1 if t is None else self.codes.setdefault(t, len(self.codes))
        lut[-1] = -1
        return lut

    def array(self) -> Any:
        import pyarrow as pa

        return pa.array(list(self.codes), type=pa.large_string())  # free text can pass 2 GB


@dataclass(frozen=True)
class CodedPredictions:
    """A model's predictions in the long layout of `predictions.parquet`, one row per (record,
    field) in record-major order, held as codes: values and statuses index dictionaries of their
    JSON/status texts (-1 = null); the id and field of row r are ids[r // F] and fields[r % F]."""

    ids: Any  # pa.StringArray, in row order
    fields: list[str]
    values: Any  # (records × fields,) int32
    value_texts: Any  # pa.StringArray
    status: Any  # (records × fields,) int32, or None: no status
    status_texts: Any

    @property
    def n_rows(self) -> int:
        return len(self.ids) * len(self.fields)

    def arrays(self, start: int, stop: int) -> list[Any]:
        """Rows [start, stop) as Arrow arrays id, field, value, status (dictionary-encoded)."""
        import numpy as np
        import pyarrow as pa

        f = max(len(self.fields), 1)  # no fields: no rows either
        rid = row_group_ids(self.ids, start, stop, f)
        fld = pa.DictionaryArray.from_arrays((np.arange(start, stop, dtype=np.int64) % f).astype(np.int32), pa.array(self.fields, type=pa.string()))

        def coded(codes: Any, texts: Any) -> Any:
            if codes is None:
                return pa.nulls(stop - start, type=pa.string())
            c = codes[start:stop]
            if len(texts) > _COMPACT_ABOVE:
                # many distinct texts (free text): the ones of these rows only, as for the ids —
                # Arrow writes the dictionary it is given in full into every row group
                valid = c >= 0
                used, inverse = np.unique(c[valid], return_inverse=True)
                c = c.copy()
                c[valid] = inverse.ravel()
                texts = texts.take(pa.array(used))
            return pa.DictionaryArray.from_arrays(pa.array(c, mask=c < 0), texts)

        return [rid, fld, coded(self.values, self.value_texts), coded(self.status, self.status_texts)]


def code_predictions(preds: Any, known: Mapping[Any, tuple[Any, Any]] | None = None) -> CodedPredictions:
    """`ModelPredictions` → `CodedPredictions`: every column dictionary-encoded, and each distinct
    value turned into JSON text once (20M cells of 100k records × 200 fields were ≈ 20 s of
    per-cell Python).

    known: column → (codes, distinct values) of `pd.factorize(column)` done already (the scoring
    keeps them: `score_fields(keep_codes=…)`); taken when every distinct value is a `str`, so
    that no two cells with different JSON texts can share a code."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    values = preds.values
    n, f = values.shape
    ids = pa.array([str(i) for i in values.index], type=pa.string())
    fields = [str(c) for c in values.columns]
    vdict = _Dictionary()
    vcodes = np.empty((n, f), dtype=np.int32)
    known = known or {}
    for j, c in enumerate(values.columns):
        done = known.get(c) if isinstance(c, str) else None
        if done is not None and len(done[0]) == n and all(type(u) is str for u in done[1]):
            codes, texts = done[0], [_value_text(u) for u in done[1]]
        else:
            codes, texts = _distinct_texts(values.iloc[:, j], _value_text)
        vcodes[:, j] = vdict.lookup(texts)[codes]
    scodes = None
    sdict = _Dictionary()
    st = preds.status
    if st is not None:
        scodes = np.empty((n, f), dtype=np.int32)
        if isinstance(st, pd.DataFrame):
            st = st.reindex(index=values.index, columns=values.columns)
            for j in range(f):
                codes, texts = _distinct_texts(st.iloc[:, j], _status_text)
                scodes[:, j] = sdict.lookup(texts)[codes]
        else:
            codes, texts = _distinct_texts(st.reindex(values.index), _status_text)
            scodes[:] = sdict.lookup(texts)[codes][:, None]
    return CodedPredictions(ids=ids, fields=fields, values=vcodes.reshape(-1), value_texts=vdict.array(),
                            status=None if scodes is None else scodes.reshape(-1), status_texts=sdict.array())


_COLUMNS = ("id", "field", "value", "status")


def predictions_to_frame(preds: Any) -> Any:
    """`ModelPredictions` → long DataFrame (id, field, value = JSON text or missing, status), one
    row per record and field, record-major. Built by Arrow from the codes: no Python object per
    cell."""
    import pyarrow as pa

    coded = code_predictions(preds)
    cols = [a.dictionary_decode() if isinstance(a, pa.DictionaryArray) else a for a in coded.arrays(0, coded.n_rows)]
    return pa.Table.from_arrays(cols, names=list(_COLUMNS)).to_pandas()


# a value dictionary with more texts than this is cut down to each row group's own texts
_COMPACT_ABOVE = 4096


def write_predictions_parquet(preds: Any, path: Any, known: Mapping[Any, tuple[Any, Any]] | None = None) -> None:
    """`predictions_to_frame(preds).to_parquet(path, index=False)`, written by Arrow from the
    codes one row group at a time: the dictionaries go to the file as they are (Parquet stores
    these columns dictionary-encoded anyway) and no 20M-row string column is ever built. The
    file's schema says plain strings, so readers get the same frame as from the frame's file.
    `known`: see `code_predictions`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = parquet_rows.ROW_GROUP  # row groups as `to_parquet` (and the per-record counts) has them
    coded = code_predictions(preds, known)
    # the pandas metadata `to_parquet` writes for this frame (so pandas reads back the same dtypes)
    empty = dataclasses.replace(preds, values=preds.values.iloc[:0], status=None if preds.status is None else preds.status.iloc[:0])
    meta = pa.Schema.from_pandas(predictions_to_frame(empty), preserve_index=False).metadata
    writer = None
    try:
        for s in range(0, coded.n_rows, step) if coded.n_rows else (0,):
            table = pa.Table.from_arrays(coded.arrays(s, min(s + step, coded.n_rows)), names=list(_COLUMNS)).replace_schema_metadata(meta)
            if writer is None:
                # store_schema=False: no Arrow schema saying "dictionary" in the file, so the
                # columns read back as the strings they are, not as categoricals
                writer = pq.ParquetWriter(path, table.schema, store_schema=False, write_statistics=False)
            writer.write_table(table, row_group_size=step)
    finally:
        if writer is not None:
            writer.close()
# ---- the cells layout ------------------------------------------------------------------------

_CELL_COLUMNS = ("id", "prediction", "status")


@dataclass(frozen=True, kw_only=True)
class LoggedPredictions:
    """One model's logged predictions: per record id its prediction cell (None: no output) and,
    for tasks that keep status beside the cell, its status (a text, or per field a mapping)."""

    cells: Mapping[str, Any]
    status: Mapping[str, Any] | None = None

    def for_ids(self, ids: Sequence[str]) -> tuple[list[Any], list[Any] | None, list[str]]:
        """(cells, statuses, ids not among `ids`) in the order of `ids`: a record without a
        logged prediction is an empty cell (no output), as a record missing from a file."""
        known = set(ids)
        extra = [i for i in self.cells if i not in known]
        status = None if self.status is None else [self.status.get(i) for i in ids]
        return [self.cells.get(i) for i in ids], status, extra


def write_prediction_cells(cells: Mapping[str, Any], path: Any, status: Mapping[str, Any] | None = None) -> None:
    """Write one prediction cell per record id (the cells layout). Cells keep their key order:
    the file holds what the model answered, as scored."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids, texts, states = _cell_columns(cells, status)
    table = pa.table({
        "id": pa.array(ids, type=pa.string()),
        "prediction": pa.array(texts, type=pa.large_string()),
        "status": pa.array(states, type=pa.string()),
    })
    pq.write_table(table, path)


def _cell_columns(cells: Mapping[str, Any], status: Mapping[str, Any] | None) -> tuple[list[str], list[str | None], list[str | None]]:
    return ([str(i) for i in cells], [_value_text(cells[i], sort_keys=False) for i in cells],
            [None if status is None else _status_text(status.get(i)) for i in cells])


def prediction_cells_frame(cells: Mapping[str, Any], status: Mapping[str, Any] | None = None) -> Any:
    """The rows `write_prediction_cells` writes, as a DataFrame whose columns are text even when
    every cell is empty: what a streaming engine writes chunk by chunk into one file."""
    import pandas as pd

    return pd.DataFrame({k: pd.array(v, dtype="string[pyarrow]") for k, v in zip(("id", "prediction", "status"), _cell_columns(cells, status))})


def read_prediction_cells(path: Any, *, source: str) -> LoggedPredictions:
    """The cells layout back: each record's prediction cell decoded from its JSON text."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = sorted(set(_CELL_COLUMNS[:2]) - set(table.column_names))
    if missing:
        raise InputError(f"{source}: expected columns {', '.join(_CELL_COLUMNS)}; missing {missing}.")
    ids = [str(i) for i in table.column("id").to_pylist()]
    texts = table.column("prediction").to_pylist()
    try:
        cells = {i: None if t is None else json.loads(t) for i, t in zip(ids, texts)}
    except ValueError as e:
        raise InputError(f"{source}: a prediction is not JSON text ({e}).") from None
    status = None
    if "status" in table.column_names:
        st = table.column("status").to_pylist()
        if any(s is not None for s in st):
            status = {i: s for i, s in zip(ids, st) if s is not None}
    return LoggedPredictions(cells=cells, status=status)


class CellPredictions:
    """`read_predictions` of the adapters that log the cells layout."""

    def read_predictions(self, path: Any, *, source: str) -> LoggedPredictions:
        return read_prediction_cells(path, source=source)


