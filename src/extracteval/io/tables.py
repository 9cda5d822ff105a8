"""Readers for tabular inputs: CSV/TSV, JSONL, JSON, Parquet and Kleister `key=value` TSV.

Every error is an `InputError` naming the file, the line or record id, the column, what was
expected and what was found.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.cells import is_empty
from extracteval.io.memory import (  # noqa: F401 - readers' API
    arrow_text_column, arrow_texts, is_in_memory, json_list_cells, json_list_text, json_records_frame, memory_frame, option, parquet_frame, text_starts,
)
from extracteval.io.json_text import jsonl_text_values, loads, repeated_key_error, repeated_keys
from extracteval.io.text_files import check_regular_file, read_text, text_encoding

__all__ = [
    "text_encoding",
    "check_regular_file",
    "header_duplicates",
    "read_table",
    "read_kleister",
    "read_kleister_keys",
    "is_kleister",
    "LoadedTable",
    "load_fields_table",
]

_TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".json", ".parquet", ".pq")
_KLEISTER_TOKEN = re.compile(r"^[^=\s]+=\S*$")


def header_duplicates(p: Path, names: Iterable[Any], where: str = "header") -> None:
    """Refuse a table whose header names one column twice (readers would rename or drop one
    silently) or leaves a column unnamed."""
    seen: set[str] = set()
    dups: list[str] = []
    for i, name in enumerate(names, start=1):
        n = str(name)
        if not n.strip():
            raise InputError(f"{p}: column {i} of the {where} has no name; every column needs a unique name.")
        if n in seen and n not in dups:
            dups.append(n)
        seen.add(n)
    if dups:
        shown = ", ".join(repr(d) for d in dups[:5]) + (" …" if len(dups) > 5 else "")
        raise InputError(f"{p}: the {where} names the same column more than once ({shown}); column names must be unique, "
                         "so rename or drop the repeated column.")


def csv_header(text: str, delim: str) -> list[str]:
    """The header row of CSV/TSV text, as written (the csv module's quoting rules)."""
    import csv

    return next(csv.reader(_lines(text), delimiter=delim), [])


_LINE_END = re.compile(r"\r\n|\r|\n")


def _lines(text: str) -> Iterator[str]:
    """The lines of `text` with their endings (LF, CRLF or a lone CR), one at a time: the csv
    module reads as many as the first row needs, with no copy of the whole text."""
    start = 0
    for m in _LINE_END.finditer(text):
        yield text[start : m.end()]
        start = m.end()
    if start < len(text):
        yield text[start:]


def is_kleister(path: str | Path, text: str | None = None) -> bool:
    """True when a .tsv file holds space-separated `key=value` tokens (Kleister's gold format)."""
    p = Path(path)
    if p.suffix not in (".tsv", ".xz") or p.name.endswith(".csv.xz"):
        return False
    text = read_text(p) if text is None else text
    for line in text.splitlines():
        tokens = line.split()
        if tokens:
            return all(_KLEISTER_TOKEN.match(t) for t in tokens) and "\t" not in line
    return False


def read_kleister(path: str | Path, *, ids: list[str] | None = None, text: str | None = None) -> pd.DataFrame:
    """Kleister `expected.tsv` / `out.tsv`: one line per document, `key=value` tokens, `_` for spaces.

    Repeated keys (`party=A party=B`) become a list. Ids are the 1-based line numbers, or `ids`
    (e.g. file names from `in.tsv`) when given. An empty line is a document with no values.
    """
    p = Path(path)
    text = read_text(p) if text is None else text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if ids is not None and len(ids) != len(lines):
        raise InputError(f"{p}: expected {len(ids)} lines (one per document of the keys file), but found {len(lines)}.")
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(lines, start=1):
        rec: dict[str, Any] = {}
        for tok in line.split():
            if "=" not in tok:
                raise InputError(f"{p}: line {i}: expected space-separated key=value tokens, but found {tok!r}.")
            k, v = tok.split("=", 1)
            v = v.replace("_", " ")
            if k in rec:
                prev = rec[k]
                rec[k] = [*prev, v] if isinstance(prev, list) else [prev, v]
            else:
                rec[k] = v
        rows.append(rec)
    index = ids if ids is not None else [str(i) for i in range(1, len(rows) + 1)]
    frame = pd.DataFrame.from_records(rows, index=pd.Index(index, name="id")) if rows else pd.DataFrame(index=pd.Index([], name="id"))
    return frame.astype(object).where(frame.notna(), None)


def read_kleister_keys(path: str | Path) -> tuple[list[str], list[set[str]]]:
    """Kleister `in.tsv(.xz)`: column 1 the document file name, column 2 the keys asked."""
    p = Path(path)
    text = read_text(p)
    ids: list[str] = []
    asked: list[set[str]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        cols = line.split("\t")
        if len(cols) < 2:
            raise InputError(f"{p}: line {i}: expected tab-separated columns 'filename<TAB>keys…', but found {len(cols)} column(s).")
        ids.append(cols[0])
        asked.append(set(cols[1].split()))
    return ids, asked


def _sniff_wrong_delimiter(p: Path, columns: list[str], expected: str) -> None:
    if len(columns) == 1:
        name = columns[0]
        for delim, label in ((";", "';'"), ("\t", "tab"), ("|", "'|'"), (",", "','")):
            if delim != expected and delim in name:
                raise InputError(
                    f"{p}: expected {'comma' if expected == ',' else repr(expected)}-separated columns, but the header "
                    f"{name!r} looks {label}-separated; pass --delimiter {delim!r} or convert the file."
                )


def read_table(path: str | Path, *, delimiter: str | None = None) -> pd.DataFrame:
    """Read a CSV/TSV, JSONL, JSON (array of objects) or Parquet file into a DataFrame.

    CSV cells are kept as strings (no NA guessing: absent-value rules are the scorer's), and a
    cell holding a JSON list (`["A", "B"]`) becomes a list (a multi-valued cell).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return _read_parquet(p)
    text = read_text(p)
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(p, text)  # an empty file has no records, as the chunked reader says
    if not text.strip():
        raise InputError(f"{p}: the file is empty; expected a header line with an 'id' column, then one line per record.")
    if suffix == ".json":
        return _read_json(p, text)
    delim = delimiter or ("\t" if suffix == ".tsv" else ",")
    fast = _arrow_csv(text, delim)
    if fast is not None:
        _sniff_wrong_delimiter(p, list(fast.columns), delim)
        return fast
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delim, dtype=object, keep_default_na=False, na_filter=False, engine="c")
    except pd.errors.ParserError as e:
        msg = str(e).replace("Error tokenizing data. C error: ", "")
        raise InputError(f"{p}: not a valid {'TSV' if delim == chr(9) else 'CSV'} table: {msg}.") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{p}: the file is empty; expected a header line with an 'id' column.") from None
    _sniff_wrong_delimiter(p, [str(c) for c in frame.columns], delim)
    header_duplicates(p, csv_header(text, delim))
    # a cell holding a JSON list is a list: looked for column by column among the cells that
    # start with '[', each distinct one parsed once (one object block: per-column pandas work made
    # a 100k-column file take minutes)
    values = frame.to_numpy(dtype=object)
    starts = [text_starts(values[:, j], "[") for j in range(values.shape[1])]
    if any(m.any() for m in starts):
        values = values.copy()
        for j, m in enumerate(starts):
            if m.any():
                values[:, j] = json_list_text(values[:, j], m)
    return pd.DataFrame(values, columns=frame.columns, index=frame.index, dtype=object)


# the widest header read by Arrow's CSV reader; wider tables (one object block) by pandas'
_ARROW_MAX_COLUMNS = 2000


def _arrow_csv(text: str, delim: str) -> pd.DataFrame | None:
    """CSV/TSV text read by Arrow's multi-threaded reader, with the rules of the pandas reader
    below: every cell the text as written ('' for an empty one), a JSON-list cell a list. A column
    of text alone stays Arrow's strings (pandas' Arrow-backed string dtype: the scorers factorise
    it in Arrow, with no Python object per cell); a column with JSON-list cells is Python values,
    one text object per distinct text. None
    when the text is not a plain rectangle under a header of distinct, non-empty names (a ragged
    row, a repeated or blank column name, no data row…): the pandas reader then reads it, and its
    checks and messages stay those of every other irregular file."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = csv_header(text, delim)
    if len(header) < 2 or len(header) > _ARROW_MAX_COLUMNS or len(set(header)) != len(header) or not all(h.strip() for h in header):
        return None
    try:
        table = pacsv.read_csv(
            pa.py_buffer(text.encode("utf-8")),
            parse_options=pacsv.ParseOptions(delimiter=delim, newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(header, pa.string()), strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False, null_values=[]),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.column_names != header or table.num_rows == 0 or any(not pa.types.is_string(t) for t in table.schema.types):
        return None
    # Arrow reads a quote left open as a field running to the end of the text, where pandas
    # refuses the file: that field is the last row's last one, the text ends with `"` and it
    last = table.column(table.num_columns - 1)[-1].as_py()
    if "\n" in last or "\r" in last or text.rstrip("\r\n").endswith('"' + last):
        return None
    columns = {}
    for name, col in zip(header, table.columns):
        columns[name] = arrow_text_column(col, text_starts(col, "["))
    return pd.DataFrame(columns, columns=header)


def _parse_json_lists(col: pd.Series) -> pd.Series:
    values = col.to_numpy(dtype=object)
    out = json_list_text(values, text_starts(values, "["))
    return col if out is values else pd.Series(out, index=col.index, dtype=object)


def _read_jsonl(p: Path, text: str) -> pd.DataFrame:
    rows = []
    for i, obj in jsonl_text_values(p, text, records=True):
        if not isinstance(obj, dict):
            raise InputError(f"{p}: line {i}: expected a JSON object, but found {type(obj).__name__}.")
        rows.append(obj)
    if not rows:
        raise InputError(f"{p}: the file has no records.")
    return json_records_frame(rows)


def _read_json(p: Path, text: str) -> pd.DataFrame:
    try:
        obj = loads(text)
    except ValueError as e:
        raise InputError(f"{p}: not valid JSON ({e}).") from None
    wrapped = isinstance(obj, dict) and "records" in obj
    if wrapped:
        obj = obj["records"]
    if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
        raise InputError(f"{p}: expected a JSON array of objects (one per record), but found {type(obj).__name__}.")
    if not obj:
        raise InputError(f"{p}: the file has no records.")
    for i, key in repeated_keys(text, obj, wrapped=wrapped).items():
        raise repeated_key_error(p, f"record {i + 1}", key)
    return json_records_frame(obj)


def _read_parquet(p: Path) -> pd.DataFrame:
    check_regular_file(p)
    try:
        import pyarrow.parquet as pq

        header_duplicates(p, pq.ParquetFile(p).schema_arrow.names, "Parquet schema")
        table = pq.read_table(p)
    except InputError:
        raise
    except Exception as e:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"{p}: not a readable Parquet file ({type(e).__name__}: {e}).") from None
    return parquet_frame(table)


@dataclass(frozen=True)
class LoadedTable:
    """A fields-task input: wide values indexed by record id, optional status, for one model or
    (long format with a `model` column) several."""

    values: dict[str, pd.DataFrame]  # model name ("" for truth / unnamed) → wide values
    status: dict[str, pd.Series | pd.DataFrame | None]
    source: str
    layout: str  # "wide", "long" or "kleister"


def _id_texts(p: Any, frame: pd.DataFrame, id_column: str) -> np.ndarray:
    """The frame's ids as stripped text; a missing id column or a blank id is an `InputError`."""
    if id_column not in frame.columns:
        cols = [str(c) for c in frame.columns][:20]
        raise InputError(f"{p}: no {id_column!r} column; columns found: {cols}. Pass {option(p, '--id-column')} if the ids are in another column.")
    raw = frame[id_column].to_numpy(dtype=object)
    if pd.api.types.infer_dtype(raw, skipna=False) == "string":
        text = np.array([v.strip() for v in raw], dtype=object)
    else:  # numbers, missing values: each cell's text ("" for a missing id)
        text = np.array(["" if is_empty(v) else str(v).strip() for v in raw], dtype=object)
    blank = text == ""
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        where = f"row {row + 1}" if is_in_memory(p) else f"line {row + 2}"
        raise InputError(f"{p}: {where}: column {id_column!r} is empty; every record needs an id.")
    return text


@functools.cache
def _arrow_id_rules() -> tuple[str, Any]:
    """(what `str.strip()` strips: every character Python counts as whitespace, the dtype a column
    of Python texts takes: pandas' Arrow-backed `str` from pandas 3 on), worked out once, when
    first needed."""
    return "".join(chr(c) for c in range(0x3001) if chr(c).isspace()), pd.Series(np.array(["a"], dtype=object)).dtype


def _arrow_ids(frame: pd.DataFrame, id_column: str) -> Any:
    """The id column as `_id_texts` gives it, computed in Arrow, when it is a column of Arrow
    text with no missing, blank or repeated id (the usual file): None otherwise, and the
    cell-by-cell reading then finds what is wrong and says so."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = frame.get(id_column)
    arr = getattr(getattr(col, "array", None), "_pa_array", None)
    if not isinstance(arr, pa.ChunkedArray) or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or arr.null_count:
        return None
    whitespace, dtype = _arrow_id_rules()
    stripped = pc.utf8_trim(arr, characters=whitespace)
    n = len(stripped)
    if n == 0 or pc.any(pc.equal(stripped, "")).as_py():
        return None
    # each id once: at once where they ascend (a sorted file), else by counting the distinct ones
    ascending = n == 1 or pc.all(pc.greater(stripped.slice(1), stripped.slice(0, n - 1))).as_py()
    if not ascending and pc.count_distinct(stripped).as_py() != n:
        return None
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return pd.arrays.ArrowStringArray(stripped, dtype=dtype)
    return stripped.to_numpy()


def _dup_error(p: Any, ids: Iterable[Any], what: str = "record ids") -> None:
    s = pd.Series(ids if isinstance(ids, (pd.Series, np.ndarray, list)) else list(ids), dtype=object)
    if pd.api.types.infer_dtype(s, skipna=False) != "string":
        s = pd.Series([str(x) for x in s], dtype=object)
    repeated = s.duplicated()
    if not repeated.any():
        return
    dups = sorted(set(s[repeated]))
    shown = ", ".join(repr(d) for d in dups[:5]) + (" …" if len(dups) > 5 else "")
    raise InputError(f"{p}: {what} must be unique; found {len(dups)} duplicated: {shown}.")


def load_fields_table(
    path: str | Path,
    *,
    id_column: str = "id",
    delimiter: str | None = None,
    kleister_ids: list[str] | None = None,
    kleister_asked: list[set[str]] | None = None,
) -> LoadedTable:
    """Load a truth or predictions file for the `fields` task, wide or long.

    Wide: one row per record, `id` plus one column per field, optional `status` (ok / pending /
    error). Long: columns `id, field, value` with optional `model` and `status`, one row per cell;
    repeated (id, field) rows form a multi-valued cell. Kleister TSV: see `read_kleister`.
    """
    if is_in_memory(path):
        frame = path.frame()
        if not len(frame.columns):
            raise InputError(f"{path}: the table has no columns; expected an {id_column!r} column and one column per field.")
        if not len(frame):
            raise InputError(f"{path}: the table has columns but no records.")
        return _loaded(path, frame, id_column)
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: file not found.")
    if p.is_dir():
        raise InputError(f"{p}: is a directory; expected a file.")
    if p.suffix.lower() not in _TABLE_SUFFIXES and p.suffix != ".xz":
        raise InputError(f"{p}: unsupported file type {p.suffix!r}; expected one of {', '.join(_TABLE_SUFFIXES)} or Kleister .tsv.")
    if p.suffix in (".tsv", ".xz"):
        text = read_text(p)
        if not text.strip():
            raise InputError(f"{p}: the file is empty.")
        if is_kleister(p, text):
            frame = read_kleister(p, ids=kleister_ids, text=text)
            status = None
            if kleister_asked is not None:
                # a key not asked for a document is not part of its evaluation
                cols = sorted(set().union(*kleister_asked) | set(frame.columns))
                frame = frame.reindex(columns=cols)
                st = pd.DataFrame(
                    [["ok" if c in asked else "skipped" for c in cols] for asked in kleister_asked],
                    index=frame.index,
                    columns=cols,
                )
                status = st
            return LoadedTable(values={"": frame}, status={"": status}, source=str(p), layout="kleister")
    frame = read_table(p, delimiter=delimiter)
    if frame.empty and len(frame.columns):
        raise InputError(f"{p}: the file has a header but no records.")
    return _loaded(p, frame, id_column)


def _loaded(p: Any, frame: pd.DataFrame, id_column: str) -> LoadedTable:
    """A parsed table (a file's, or one given in memory) → wide values and status per model."""
    frame.columns = [str(c) for c in frame.columns]
    ids = _arrow_ids(frame, id_column)
    if ids is not None:  # text ids in Arrow, each once: checked and stripped there
        frame[id_column] = ids
    else:
        frame[id_column] = _id_texts(p, frame, id_column)
    if {"field", "value"} <= set(frame.columns):
        return _long(p, frame, id_column)
    if "model" in frame.columns:  # several models in one wide file: ids repeat once per model
        _dup_error(p, frame["model"].astype(str) + " / " + frame[id_column], "(model, record id) pairs")
    elif ids is None:
        _dup_error(p, frame[id_column])
    frame = frame.set_index(id_column)
    status = None
    if "status" in frame.columns:
        status = frame["status"]
        frame = frame.drop(columns=["status"])
    if "model" in frame.columns:
        models = {}
        stats = {}
        for name, g in frame.groupby("model", sort=True):
            models[str(name)] = g.drop(columns=["model"])
            stats[str(name)] = None if status is None else status.loc[g.index]
        return LoadedTable(values=models, status=stats, source=str(p), layout="wide")
    return LoadedTable(values={"": frame}, status={"": status}, source=str(p), layout="wide")


def _long(p: Path, frame: pd.DataFrame, id_column: str) -> LoadedTable:
    has_model = "model" in frame.columns
    if has_model:
        frame["model"] = frame["model"].map(str)
    frame["field"] = frame["field"].map(str)
    values: dict[str, pd.DataFrame] = {}
    statuses: dict[str, pd.DataFrame | None] = {}
    groups = frame.groupby("model", sort=True) if has_model else [("", frame)]
    for name, g in groups:
        cells: dict[tuple[str, str], Any] = {}
        st: dict[tuple[str, str], str] = {}
        for rid, fld, val, status in zip(
            g[id_column], g["field"], g["value"], g["status"] if "status" in g.columns else [""] * len(g)
        ):
            k = (rid, fld)
            if k in cells:
                prev = cells[k]
                cells[k] = [*prev, val] if isinstance(prev, list) else [prev, val]
                if st.get(k, "") != (status or ""):
                    raise InputError(
                        f"{p}: record {rid!r}, field {fld!r}{' (model ' + repr(name) + ')' if name else ''}: "
                        f"repeated rows must have the same status, but found {st.get(k)!r} and {status!r}."
                    )
            else:
                cells[k] = val
                st[k] = status or ""
        rows: dict[str, dict[str, Any]] = {}
        srows: dict[str, dict[str, str]] = {}
        for (rid, fld), v in cells.items():
            rows.setdefault(rid, {})[fld] = v
            srows.setdefault(rid, {})[fld] = st[(rid, fld)]
        cols = list(dict.fromkeys(k[1] for k in cells))
        wide = pd.DataFrame.from_dict(rows, orient="index", dtype=object).reindex(columns=cols)
        wide.index.name = id_column
        swide = pd.DataFrame.from_dict(srows, orient="index", dtype=object).reindex(columns=cols).fillna("")
        values[str(name)] = wide
        statuses[str(name)] = swide if "status" in g.columns else None
    return LoadedTable(values=values, status=statuses, source=str(p), layout="long")
