"""Inputs held in memory, read by the same readers as files.

`extracteval.score(...)` and the evaluator plugin receive DataFrames, pyarrow Tables, polars
DataFrames or lists of dicts. Each is wrapped in an `InMemoryTable` and handed to the task's own
file reader in place of a path, so a record is read by one set of rules whatever brought it: the
ids, the duplicate and blank-id checks, the `status` column, the `model` column, the long layout,
extra and missing ids — everything after the parse of the file's bytes is the same code.

What the parse of a file would give is made here, column by column (never row by row):
object columns; NumPy, pandas and Arrow scalars as Python values; every missing value (None, NaN,
pandas' NA, NaT) as None; a text cell holding a JSON list as that list (a multi-valued cell, as
the CSV reader reads it); a NumPy array or tuple in a cell as a list. A column of Arrow strings
with no JSON-list cell stays Arrow's strings (missing cells null), as the CSV reader keeps a
column of text alone: the scorers factorise it without one Python object per cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from extracteval.io.cells import json_list_value
from extracteval.io.json_text import cap_depth

__all__ = ["InMemoryTable", "in_memory", "is_in_memory", "option", "renamed", "memory_frame", "memory_records", "reader_columns",
           "json_list_text", "arrow_text_column", "arrow_texts", "text_starts", "json_list_cells", "json_records_frame", "parquet_frame"]


@dataclass(frozen=True, eq=False)
class InMemoryTable:
    """A table given in memory, named for messages (`truth`, `predictions of model 'm'`)."""

    value: Any = field(repr=False)  # DataFrame, pyarrow Table, polars DataFrame, or list of dicts
    name: str
    model: str = "model"  # the model's name when the table is given without one (a file's is its stem)

    def __str__(self) -> str:
        return self.name

    @property
    def stem(self) -> str:
        return self.model

    @property
    def suffix(self) -> str:
        return ""

    def frame(self) -> Any:
        """The table as a file reader's frame: object columns, plain values (module docstring)."""
        return memory_frame(self)


def is_in_memory(value: Any) -> bool:
    return isinstance(value, InMemoryTable)


def in_memory(value: Any, name: str) -> InMemoryTable | None:
    """`value` wrapped for the readers when it is a table in memory; None for anything else."""
    if isinstance(value, InMemoryTable):
        return value
    if isinstance(value, pd.DataFrame) or _is_arrow_table(value) or _is_polars(value):
        return InMemoryTable(value, name)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(isinstance(r, Mapping) for r in value):
        return InMemoryTable(list(value), name)
    return None


def renamed(table: InMemoryTable, old: str, new: str, *, what: str) -> InMemoryTable:
    """`table` as a table (a list of dicts: its records as rows) with its column `old` named `new`,
    as the readers expect it (`what`: the option that named it, for messages). A table without
    `old`, or that has `new` too (which would be meant?), is an `InputError`."""
    from extracteval.errors import InputError

    frame = memory_frame(table)
    if old not in frame.columns:
        raise InputError(f"`{what}`: {table} has no column {old!r}; columns: {[str(c) for c in frame.columns][:20]}.")
    if new in frame.columns:
        raise InputError(f"`{what}`: {table} has both columns {old!r} and {new!r}; give one of them.")
    return InMemoryTable(frame.rename(columns={old: new}), table.name, table.model)


def option(source: Any, flag: str) -> str:
    """How a message names an option for an input from `source`: the command line's flag
    (`--id-column NAME`), or, for a table held in memory (the Python API), its keyword
    (`id_column=NAME`)."""
    return flag.lstrip("-").replace("-", "_") + "=NAME" if is_in_memory(source) else flag + " NAME"


def _is_arrow_table(value: Any) -> bool:
    mod = type(value).__module__
    return mod.startswith("pyarrow") and hasattr(value, "schema") and hasattr(value, "to_pandas")


def _is_polars(value: Any) -> bool:
    return type(value).__module__.startswith("polars") and type(value).__name__ == "DataFrame" and hasattr(value, "to_arrow")


def memory_frame(table: InMemoryTable) -> pd.DataFrame:
    """A DataFrame of object columns holding what a file reader would hold (module docstring)."""
    value, name = table.value, table.name

    if isinstance(value, list):
        frame = json_records_frame([dict(r) for r in value]) if value else pd.DataFrame()
    elif _is_polars(value):
        frame = parquet_frame(value.to_arrow())
    elif _is_arrow_table(value):
        frame = parquet_frame(value)
    else:
        frame = value
    if frame.columns.has_duplicates:
        from extracteval.errors import InputError

        dup = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise InputError(f"{name}: column names must be unique; found {len(dup)} repeated: {', '.join(repr(d) for d in dup[:5])}.")
    return reader_columns(frame)


def memory_records(table: InMemoryTable) -> list[tuple[str, Any]]:
    """(where, record) of each record of a table held in memory, for the readers of records
    (JSON lines): a list of dicts as a JSON array (`record N`; NumPy values made Python ones), a
    DataFrame as its rows written as JSON lines (`row N`; cells as `memory_frame` gives them, an
    empty cell None). No record is an `InputError`, as an empty file is."""
    from extracteval.errors import InputError
    from extracteval.io.cells import plain

    if isinstance(table.value, list):
        rows = [(f"record {i}", plain(dict(r)) if isinstance(r, Mapping) else r) for i, r in enumerate(table.value, start=1)]
    else:
        rows = [(f"row {i}", {str(k): v for k, v in r.items()}) for i, r in enumerate(memory_frame(table).to_dict("records"), start=1)]
    if not rows:
        raise InputError(f"{table}: no records.")
    return rows


def reader_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`'s columns as a reader gives them (module docstring), as a new frame of object
    columns (Arrow strings for a column of text alone) on a fresh row index; the column names
    must be unique."""
    columns: dict[Any, Any] = {}
    for j, c in enumerate(frame.columns):
        values = _column_values(frame.iloc[:, j])
        columns[c] = values.reset_index(drop=True) if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(frame)), columns=list(frame.columns))


def _column_values(col: Any) -> Any:
    """One column's cells as a reader gives them (module docstring), decided by the column's type:
    numbers and text column-wide; a column of mixed values cell by cell."""
    dt = col.dtype
    if isinstance(dt, np.dtype) and dt.kind in "iub":  # cannot hold a missing value
        return col.to_numpy(dtype=object)
    if isinstance(dt, np.dtype) and dt.kind == "f":
        raw = col.to_numpy()
        values = raw.astype(object)
        values[np.isnan(raw)] = None
        return values
    if isinstance(dt, pd.StringDtype):  # text or missing: the column's own string kernels
        starts = col.str.startswith("[").fillna(False).to_numpy(dtype=bool)
        if dt.storage == "pyarrow":
            import pyarrow as pa

            return arrow_text_column(pa.array(col.array), starts)
        return json_list_text(col.to_numpy(dtype=object, na_value=None), starts)
    values = col.to_numpy(dtype=object)
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "empty":
        return np.full(len(values), None, dtype=object)
    if kind != "string":
        return _mixed_column(values)
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return json_list_text(values, text_starts(values, "["))


def arrow_text_column(column: Any, starts: np.ndarray) -> pd.Series:
    """An Arrow text column as a reader gives it (`starts`: its cells starting with `[`): text
    alone stays Arrow's strings (missing cells null); a column with JSON-list cells is Python
    values, one text object per distinct text."""
    import pyarrow as pa

    if not starts.any():  # the column's own buffers, chunks and all: no copy of its text
        return pd.Series(pd.arrays.ArrowStringArray(column if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column)))
    return pd.Series(json_list_text(arrow_texts(column), starts), dtype=object)


def arrow_texts(column: Any) -> np.ndarray:
    """An Arrow text column as an object array of its texts (None where null). A column of few
    distinct texts (a currency, a date, a name) makes one text object per distinct text, shared
    by its cells, instead of one per cell: the memory of the cells as a file's bytes hold them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if len(arr) >= 1024:
        encoded = pc.dictionary_encode(arr)
        distinct = len(encoded.dictionary)
        if distinct <= len(arr) // 2:
            texts = np.empty(distinct + 1, dtype=object)
            texts[:distinct] = encoded.dictionary.to_pylist()
            texts[distinct] = None
            return texts.take(encoded.indices.fill_null(distinct).to_numpy())
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)


def text_starts(values: Any, prefix: str) -> np.ndarray:
    """Which cells of a column (an object array, or an Arrow text column) are text starting with
    `prefix`: Arrow's kernel over the column; cell by cell when it is not text and missing values
    alone."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values
    else:
        try:
            arr = pa.array(values, type=pa.string(), from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            return np.fromiter((type(v) is str and v.startswith(prefix) for v in values), dtype=bool, count=len(values))
    return pc.starts_with(arr, prefix).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)


def json_list_text(values: Any, starts: Any) -> Any:
    """Text cells holding a JSON list → that list, parsed once per distinct text; `starts`: the
    cells whose text starts with `[` (the only ones that can)."""
    cand = np.flatnonzero(starts)
    if not len(cand):
        return values
    mapping = json_list_cells(pd.unique(values[cand]))
    if not mapping:
        return values
    out = values.copy()
    out[cand] = [mapping.get(v, v) for v in values[cand]]
    return out


def _mixed_column(values: Any) -> Any:
    """A column of mixed values, cell by cell: missing → None, NumPy values → Python ones,
    JSON-list text → lists."""
    from extracteval.io.cells import is_empty, plain

    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # a text cell is never missing here: the CSV reader keeps '' as ''
        out[i] = json_list_value(v) if isinstance(v, str) else None if is_empty(v) else plain(v)
    return out


# ---- parsed values → the frame a reader gives (for files and tables in memory alike)


def json_list_cells(uniq: Any) -> dict[Any, Any]:
    """Distinct cell → its list, for the distinct cells that hold a JSON list (the rule of
    `cells.json_list_value`, which the evaluator applies to DataFrame cells)."""
    mapping: dict[Any, Any] = {}
    for u in uniq:
        if isinstance(u, str):
            parsed = json_list_value(u)
            if parsed is not u:
                mapping[u] = parsed
    return mapping


def json_records_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """JSON objects → a frame of the values as parsed: object columns from the start, so an
    integer stays an integer when other records lack the key (no detour through float64, which
    turned 7 into 7.0 and rounded integers above 2**53). A value nested deeper than
    `json_text.MAX_VALUE_DEPTH` becomes its marker string (the scorers recurse into values)."""
    return pd.DataFrame([{k: cap_depth(v) for k, v in r.items()} for r in rows], dtype=object)


def parquet_frame(table: Any) -> pd.DataFrame:
    """A pyarrow Table (or record batch) → object columns. Integers with nulls stay integers
    (not float64), so a value reads the same whether or not other rows of its batch are null."""
    import pyarrow as pa

    frame = table.to_pandas(integer_object_nulls=True).astype(object)
    for name, typ in zip(table.schema.names, table.schema.types):
        # list cells (multi-valued) arrive as numpy arrays; decide by the schema, not by sampling
        if name in frame.columns and (pa.types.is_list(typ) or pa.types.is_large_list(typ)):
            frame[name] = [list(v) if isinstance(v, np.ndarray) else v for v in frame[name]]
    return frame
