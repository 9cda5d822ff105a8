"""Chunked readers: CSV/TSV (pandas `chunksize`), JSONL (line batches) and Parquet (pyarrow
`iter_batches`), and a merge join that aligns truth and predictions by record id, chunk by chunk.

Memory is bounded by the chunk size, not the file size, because nothing is indexed: every
input must be **sorted by record id** (ascending, by code point — `LC_ALL=C sort` order for
UTF-8). Each reader checks the order as it streams and stops with an `InputError` naming the
file, line and both ids at the first id that is not greater than the one before it (which also
catches duplicates across chunks). A truth chunk of N records takes, from each predictions
file, the rows whose ids are ≤ its last id; a prediction id that falls between truth ids is an
id the truth does not have, reported as such.

Values are read exactly as `tables.read_table` reads them (CSV cells as strings with JSON lists
parsed, JSON values as parsed, Parquet through `tables.parquet_frame`), so the chunked engine
scores the same values as the in-memory one. Only the wide layout is streamed (one row per
record); the long layout and Kleister files need every row of a record together and are read
whole by the in-memory engine.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.io.scale_options import check_chunk_size
from extracteval.errors import InputError
from extracteval.io.id_order import check_id_order
from extracteval.io.json_text import jsonl_values
from extracteval.io.tables import _parse_json_lists, header_duplicates, json_records_frame, parquet_frame
from extracteval.io.text_files import check_regular_file, text_encoding

__all__ = ["FrameChunk", "materialise_text", "iter_frames", "iter_records", "table_columns", "RecordChunk", "SortedIdMerge"]


@dataclass(frozen=True)
class FrameChunk:
    """Rows of one file: `frame` as read, `first_line` the 1-based line (row for Parquet) of its
    first row, for messages."""

    frame: pd.DataFrame
    first_line: int


def _suffix(p: Path) -> str:
    return p.suffix.lower()


def _check_file(p: Path) -> None:
    check_regular_file(p)
    if _suffix(p) not in (".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".parquet", ".pq"):
        raise InputError(
            f"{p}: --chunk-size streams CSV/TSV, JSONL and Parquet files; {p.suffix!r} is not one of them "
            "(JSON arrays and Kleister files are read whole: drop --chunk-size)."
        )


def iter_frames(path: str | Path, *, chunk_size: int, delimiter: str | None = None) -> Iterator[FrameChunk]:
    """Yield a file's rows `chunk_size` at a time, with the values `read_table` would give."""
    check_chunk_size(chunk_size)
    p = Path(path)
    _check_file(p)
    suffix = _suffix(p)
    if suffix in (".parquet", ".pq"):
        yield from _parquet_frames(p, chunk_size)
    elif suffix in (".jsonl", ".ndjson"):
        yield from _jsonl_frames(p, chunk_size)
    else:
        yield from _csv_frames(p, chunk_size, delimiter or ("\t" if suffix == ".tsv" else ","))


def _csv_frames(p: Path, chunk_size: int, delim: str) -> Iterator[FrameChunk]:
    line = 2
    encoding = text_encoding(p)
    try:
        with p.open(encoding=encoding, newline="") as fh:
            header_duplicates(p, next(csv.reader(fh, delimiter=delim), []))
    except (UnicodeDecodeError, csv.Error):
        pass  # reported by the reader below, with its line
    try:
        # Arrow-backed string columns: cheap to send to a worker process; `materialise_text`
        # turns them into the values `read_table` gives, wherever the chunk is scored
        reader = pd.read_csv(
            p, sep=delim, dtype="string[pyarrow]", keep_default_na=False, na_filter=False, engine="c",
            chunksize=chunk_size, encoding=encoding,
        )
        with reader:
            for frame in reader:
                _no_nul(p, frame, line)
                yield FrameChunk(frame=frame, first_line=line)
                line += len(frame)
    except pd.errors.ParserError as e:
        msg = str(e).replace("Error tokenizing data. C error: ", "")
        raise InputError(f"{p}: not a valid {'TSV' if delim == chr(9) else 'CSV'} table: {msg}.") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{p}: the file is empty; expected a header line with an 'id' column.") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: near line {line}: expected UTF-8 text, but found byte 0x{e.object[e.start]:02x}; save the file as UTF-8.") from None


def _no_nul(p: Path, frame: pd.DataFrame, first_line: int) -> None:
    """The streaming reader's form of read_text's rule: text holding a NUL byte is refused."""
    for c in frame.columns:
        has = frame[c].str.contains("\x00", regex=False)
        if has.any():
            row = first_line + int(np.flatnonzero(has.fillna(False).to_numpy(dtype=bool))[0])
            raise InputError(
                f"{p}: line {row}: found a NUL byte, which text files do not hold (a binary file, or UTF-16 text saved "
                "without a byte-order mark); save the file as UTF-8."
            )
    if any("\x00" in str(c) for c in frame.columns):
        raise InputError(f"{p}: line 1: found a NUL byte in the header; save the file as UTF-8 text.")


def _jsonl_frames(p: Path, chunk_size: int) -> Iterator[FrameChunk]:
    rows: list[dict[str, Any]] = []
    first = 0
    seen_any = False
    for i, obj in jsonl_values(p, records=True):
        if not isinstance(obj, dict):
            raise InputError(f"{p}: line {i}: expected a JSON object, but found {type(obj).__name__}.")
        if not rows:
            first = i
        rows.append(obj)
        if len(rows) >= chunk_size:
            yield FrameChunk(frame=json_records_frame(rows), first_line=first)
            seen_any = True
            rows = []
    if rows:
        yield FrameChunk(frame=json_records_frame(rows), first_line=first)
    elif not seen_any:
        raise InputError(f"{p}: the file has no records.")


def _parquet_frames(p: Path, chunk_size: int) -> Iterator[FrameChunk]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(p)
    except Exception as e:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"{p}: not a readable Parquet file ({type(e).__name__}: {e}).") from None
    header_duplicates(p, pf.schema_arrow.names, "Parquet schema")
    row = 1
    for batch in pf.iter_batches(batch_size=chunk_size):
        frame = parquet_frame(pa.Table.from_batches([batch]))
        yield FrameChunk(frame=frame, first_line=row)
        row += len(frame)


def materialise_text(frame: pd.DataFrame) -> pd.DataFrame:
    """CSV text columns (Arrow strings, as `iter_frames` yields them) → the object values
    `tables.read_table` gives (strings, JSON lists parsed); other columns unchanged."""
    text = [c for c in frame.columns if isinstance(frame[c].dtype, pd.StringDtype)]
    if not text:
        return frame
    frame = frame.copy(deep=False)
    for c in text:
        frame[c] = _parse_json_lists(frame[c].astype(object))
    return frame


def table_columns(path: str | Path, *, delimiter: str | None = None) -> list[str]:
    """The columns of a file without reading its values (CSV header, Parquet schema); for JSONL
    every key of every line, in order of first appearance (one streaming pass)."""
    p = Path(path)
    _check_file(p)
    suffix = _suffix(p)
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            return [str(c) for c in pq.ParquetFile(p).schema_arrow.names]
        except Exception as e:
            raise InputError(f"{p}: not a readable Parquet file ({type(e).__name__}: {e}).") from None
    if suffix in (".jsonl", ".ndjson"):
        cols: dict[str, None] = {}
        for chunk in _jsonl_frames(p, 50_000):
            cols.update(dict.fromkeys(str(c) for c in chunk.frame.columns))
        return list(cols)
    for chunk in _csv_frames(p, 1, delimiter or ("\t" if suffix == ".tsv" else ",")):
        return [str(c) for c in chunk.frame.columns]
    return []


@dataclass(frozen=True)
class RecordChunk:
    """Wide records of one file: `values` indexed by id (ascending), `status` or None."""

    values: pd.DataFrame
    status: pd.Series | None
    first_line: int

    def ids(self) -> np.ndarray:
        return self.values.index.to_numpy(dtype=object)


def iter_records(
    path: str | Path, *, chunk_size: int, id_column: str = "id", delimiter: str | None = None, allow_status: bool = True
) -> Iterator[RecordChunk]:
    """Wide records, `chunk_size` rows at a time, ids checked to be strictly ascending."""
    p = Path(path)
    last: str | None = None
    any_rows = False
    for chunk in iter_frames(p, chunk_size=chunk_size, delimiter=delimiter):
        frame = chunk.frame
        frame.columns = [str(c) for c in frame.columns]
        if id_column not in frame.columns:
            cols = [str(c) for c in frame.columns][:20]
            raise InputError(f"{p}: no {id_column!r} column; columns found: {cols}. Pass --id-column NAME if the ids are in another column.")
        if {"field", "value"} <= set(frame.columns):
            raise InputError(
                f"{p}: long layout (id, field, value rows): --chunk-size streams wide files only (one row per record); "
                "drop --chunk-size, or pivot the file to one row per record."
            )
        if "model" in frame.columns:
            raise InputError(f"{p}: a `model` column holds several models; with --chunk-size give one file per model (NAME=FILE).")
        if "status" in frame.columns and not allow_status:
            raise InputError(f"{p}: the ground truth must not have a `status` column; status belongs to predictions.")
        raw = frame[id_column]
        blank = raw.isna().to_numpy() | (raw.astype(str).str.strip() == "").to_numpy()
        if blank.any():
            row = chunk.first_line + int(np.flatnonzero(blank)[0])
            raise InputError(f"{p}: line {row}: column {id_column!r} is empty; every record needs an id.")
        ids = np.asarray([str(x).strip() for x in _parse_json_lists(raw.astype(object)).to_numpy(dtype=object)], dtype=object)
        if len(ids):
            prev = np.concatenate([np.asarray([last if last is not None else ids[0]], dtype=object), ids[:-1]])
            bad = ids <= prev
            if last is None:
                bad[0] = False
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                check_id_order(p, f"line {chunk.first_line + k}", ids[k], prev[k])
            last = ids[-1]
            any_rows = True
        values = frame.drop(columns=[id_column])
        values.index = pd.Index(ids, dtype=object, name=id_column)
        status = None
        if "status" in values.columns:
            status = values["status"]
            values = values.drop(columns=["status"])
        yield RecordChunk(values=values, status=status, first_line=chunk.first_line)
    if not any_rows:
        raise InputError(f"{p}: the file has a header but no records.")


class SortedIdMerge:
    """Align a sorted truth stream with sorted prediction streams, one truth chunk at a time.

    `chunks()` yields (truth chunk, {model: predictions chunk or None}); each predictions chunk
    holds that model's rows whose ids are ≤ the truth chunk's last id (and > the previous one's).
    Rows left over after the last truth chunk are ids the truth does not have: an `InputError`,
    or with `trailing_extras` further chunks whose truth chunk is None.
    Memory: one truth chunk plus, per model, at most one read-ahead chunk.
    """

    def __init__(self, truth: Iterator[RecordChunk], predictions: dict[str, tuple[str, Iterator[RecordChunk]]], truth_source: str,
                 *, trailing_extras: bool = False):
        self._trailing_extras = trailing_extras
        self._truth = truth
        self._preds = predictions
        self._buffers: dict[str, list[RecordChunk]] = {m: [] for m in predictions}
        self._done: dict[str, bool] = {m: False for m in predictions}
        self._truth_source = truth_source

    def _take(self, model: str, hi: str | None) -> RecordChunk | None:
        """Rows of `model` with id ≤ hi (all remaining rows when hi is None)."""
        source, it = self._preds[model]
        buf = self._buffers[model]
        # with hi None (after the last truth chunk) one chunk is enough to report the extra ids
        while not self._done[model] and (not buf or (hi is not None and buf[-1].ids()[-1] <= hi)):
            try:
                nxt = next(it)
            except StopIteration:
                self._done[model] = True
                break
            if len(nxt.values):
                buf.append(nxt)
        if not buf:
            return None
        taken: list[RecordChunk] = []
        while buf:
            head = buf[0]
            ids = head.ids()
            cut = len(ids) if hi is None else int(np.searchsorted(ids, hi, side="right"))
            if cut == len(ids):
                taken.append(buf.pop(0))
                continue
            if cut > 0:
                taken.append(_slice(head, 0, cut))
                buf[0] = _slice(head, cut, len(ids))
            break
        if not taken:
            return None
        if len(taken) == 1:
            return taken[0]
        status = None
        if any(t.status is not None for t in taken):
            status = pd.concat([t.status if t.status is not None else pd.Series("", index=t.values.index, dtype=object) for t in taken])
        return RecordChunk(values=pd.concat([t.values for t in taken]), status=status, first_line=taken[0].first_line)

    def chunks(self) -> Iterator[tuple[RecordChunk | None, dict[str, RecordChunk | None]]]:
        for t in self._truth:
            if not len(t.values):
                continue
            hi = t.ids()[-1]
            yield t, {m: self._take(m, hi) for m in self._preds}
        if self._trailing_extras:
            # tasks that count predictions without truth (labels' strict view) get them as
            # chunks without a truth chunk (None), one read-ahead chunk per model at a time
            while True:
                rest = {m: self._take(m, None) for m in self._preds}
                if all(r is None for r in rest.values()):
                    return
                yield None, rest
        for m, (source, _) in self._preds.items():
            rest = self._take(m, None)
            if rest is not None and len(rest.values):
                extra = rest.ids()
                shown = ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else "")
                raise InputError(
                    f"{source}: record id(s) after the last ground-truth id are not in the ground truth ({self._truth_source}): "
                    f"{shown}. Every prediction must have a ground-truth record."
                )


def _slice(c: RecordChunk, a: int, b: int) -> RecordChunk:
    return RecordChunk(
        values=c.values.iloc[a:b],
        status=None if c.status is None else c.status.iloc[a:b],
        first_line=c.first_line + a,
    )

