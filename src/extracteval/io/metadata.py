"""Record metadata: the columns slices and clusters are read from.

Metadata is one row per record id: the columns `--slice-by` and `--cluster-by` name, read from
the ground-truth file itself (a CSV/TSV/Parquet column, or a top-level key of a JSON Lines
record) or from a separate `--metadata FILE` keyed by the same record ids. Only the named
columns are read; a record the metadata lacks has no value (its slice is `(missing)`); an id
given twice with different values is an error, since a record cannot sit in two slices.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extracteval.errors import InputError

__all__ = ["read_metadata", "frame_metadata", "TABLE_SUFFIXES", "JSON_SUFFIXES"]

TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")


def _suffix(path: Path) -> str:
    """The file's type by its name; `.xz` compression (the text readers open it) looked through."""
    s = path.suffix.lower()
    if s == ".xz":
        s = Path(path.stem).suffix.lower()
    return s


def read_metadata(path: str | Path, columns: Sequence[str], *, id_column: str = "id", option: str = "--metadata",
                  delimiter: str | None = None) -> Any:
    """A DataFrame indexed by record id (strings) with `columns` (objects), from `path`.

    `option` names where the file came from in errors (`--metadata`, `--truth`); `delimiter`: a
    CSV's delimiter when it is not the comma (a TSV's is the tab)."""
    from extracteval.io.text_files import check_regular_file

    p = Path(path)
    check_regular_file(p)
    suffix = _suffix(p)
    want = list(dict.fromkeys([id_column, *columns]))
    if suffix in (".csv", ".tsv"):
        frame = _read_delimited(p, want, id_column, option, delimiter or ("\t" if suffix == ".tsv" else ","))
    elif suffix in (".parquet", ".pq"):
        import pandas as pd
        import pyarrow.parquet as pq

        try:
            names = pq.ParquetFile(p).schema_arrow.names
        except Exception as e:  # noqa: BLE001 - a file that is not Parquet is the user's error
            raise InputError(f"{p}: {option}: expected a Parquet file, but it could not be read ({type(e).__name__}: {e}).") from None
        _check_columns(p, option, names, want, id_column)
        frame = pd.read_parquet(p, columns=want)
    elif suffix in JSON_SUFFIXES:
        frame = _read_json_records(p, want, id_column, option)
    else:
        raise InputError(f"{p}: {option}: metadata is read from a CSV, TSV, Parquet or JSON Lines file, but this one ends in {p.suffix!r} "
                         "(a CoNLL or text file has no columns: pass --metadata FILE with a record id column).")
    return _keyed(p, option, frame, id_column, list(columns))


def _read_delimited(p: Path, want: Sequence[str], id_column: str, option: str, sep: str) -> Any:
    """The named columns of a CSV or TSV file, as text (read as every text file is: UTF-8 or a
    byte-order mark, `.xz` opened)."""
    import io

    import pandas as pd

    from extracteval.io.text_files import read_text

    text = read_text(p)
    if not text.strip():
        raise InputError(f"{p}: {option}: expected a header row with {', '.join(map(repr, want))}, but the file is empty.")
    try:
        head = pd.read_csv(io.StringIO(text), sep=sep, nrows=0, dtype=str)
        _check_columns(p, option, list(head.columns), want, id_column)
        return pd.read_csv(io.StringIO(text), sep=sep, usecols=list(want), dtype=str, keep_default_na=False, na_values=[""])
    except InputError:
        raise
    except (pd.errors.ParserError, ValueError) as e:
        raise InputError(f"{p}: {option}: expected a table of rows separated by {sep!r}, but it could not be read ({e}).") from None


def _check_columns(p: Path, option: str, found: Sequence[str], want: Sequence[str], id_column: str) -> None:
    missing = [c for c in want if c not in found]
    if missing:
        shown = ", ".join(map(repr, list(found)[:30]))
        what = "record id column" if missing == [id_column] else ("columns" if len(missing) > 1 else "column")
        raise InputError(f"{p}: {option}: expected the {what} {', '.join(map(repr, missing))}, but its columns are {shown}.")


def _read_json_records(p: Path, want: Sequence[str], id_column: str, option: str) -> Any:
    import pandas as pd

    from extracteval.io.text_files import read_text

    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    text = read_text(p)
    stripped = text.lstrip()
    if _suffix(p) == ".json" and stripped.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{p}: {option}: expected a JSON array of records, but it is not valid JSON ({e.msg} at line {e.lineno}).") from None
        items = list(enumerate(records, start=1))
    else:
        items = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise InputError(f"{p}: line {n}: {option}: expected one JSON object per line, but found invalid JSON ({e.msg}).") from None
    for n, rec in items:
        if not isinstance(rec, dict):
            raise InputError(f"{p}: record {n}: {option}: expected a JSON object, but found {type(rec).__name__}.")
        if id_column not in rec:
            raise InputError(f"{p}: record {n}: {option}: expected a record id in {id_column!r}, but the record has keys {sorted(rec)[:20]}.")
        rows.append({c: _scalar(rec.get(c)) for c in want})
        seen.update(k for k in rec)
    missing = [c for c in want if c not in seen]
    if missing:
        raise InputError(f"{p}: {option}: expected the key(s) {', '.join(map(repr, missing))} in the records, but no record has them "
                         f"(keys found: {', '.join(map(repr, sorted(seen)[:30]))}).")
    return pd.DataFrame(rows, columns=list(want))


def _scalar(v: Any) -> Any:
    """A metadata value: numbers and strings as they are, anything nested as its JSON text."""
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)
    return v


def _keyed(p: Path, option: str, frame: Any, id_column: str, columns: list[str]) -> Any:
    raw = frame[id_column]
    empty = raw.isna().to_numpy(dtype=bool)
    if empty.any():
        row = int(empty.nonzero()[0][0]) + 1
        raise InputError(f"{p}: record {row}: {option}: expected a record id in {id_column!r}, but it is empty.")
    import numpy as np
    import pandas as pd

    if isinstance(raw.dtype, pd.StringDtype) or raw.dtype.kind in "iu":  # text, or integers: str() of each, vectorised
        text = raw.astype(str).str.strip().to_numpy(dtype=object)
    else:  # anything else (floats, bytes, dates, mixed objects): str() of each value, as written
        text = np.array([str(v).strip() for v in raw.astype(object).tolist()], dtype=object)
    values = frame[columns].astype(object).where(frame[columns].notna(), None)
    values.index = text
    dup = values.index.duplicated(keep=False)
    if dup.any():
        text = values[dup].map(lambda v: "" if v is None else str(v))  # an empty cell compared as "": one rule for every dtype
        for rid, g in text.groupby(level=0, sort=False):
            col = next((c for c in columns if g[c].nunique() > 1), None)
            if col is not None:
                raise InputError(f"{p}: record id {rid!r}: {option}: expected one value of {col!r} per record, but found "
                                 f"{', '.join(map(repr, g[col].unique()[:5]))}.")
        values = values[~values.index.duplicated(keep="first")]
    values.index.name = "record_id"
    return values


def frame_metadata(table: Any, columns: Sequence[str], *, id_column: str = "id", ids: Sequence[Any] | None = None,
                   name: str = "metadata", option: str = "slice_by") -> Any:
    """Metadata rows (as `read_metadata` gives them) from a table held in memory: a DataFrame,
    pyarrow or polars table or a list of dicts, keyed by its `id_column` — or by `ids`, one per
    row, when given (the rows of `mlflow.models.evaluate`'s data, whose ids may be row numbers).
    Nested values (lists, objects) become their JSON text, as in a JSON Lines file."""
    from extracteval.io.memory import in_memory, memory_frame

    t = in_memory(table, name)
    where = Path(name)  # how messages name the table
    if t is None:
        raise InputError(f"{name}: expected a file path, a DataFrame or a list of dicts (one per record), but found {type(table).__name__}.")
    frame = memory_frame(t)
    frame.columns = [str(c) for c in frame.columns]
    if ids is not None:
        _check_columns(where, option, list(frame.columns), list(columns), id_column)
        frame = frame[list(columns)].assign(**{id_column: [str(i) for i in ids]})
    else:
        _check_columns(where, option, list(frame.columns), list(dict.fromkeys([id_column, *columns])), id_column)
    want = list(dict.fromkeys([id_column, *columns]))
    frame = frame[want].copy()
    for c in columns:
        frame[c] = [_scalar(v) for v in frame[c].to_numpy(dtype=object)]
    return _keyed(where, option, frame, id_column, list(columns))
