"""Files of `{"id": …, "<key>": value}` records (the `toolcalls` and `structured` tasks): read
whole (`load_records`), or, for JSONL, as chunks aligned by id, in bounded memory.

Each record of a chunk is read as `load_records` reads it (the value of the first present
key among the task's keys, the id as `str(record["id"])`). Only JSONL streams (`.jsonl`,
`.ndjson`): a JSON array, CSV or Parquet file is read whole by the in-memory engine.

Every file must be **sorted by id** (ascending by code point, `LC_ALL=C sort`; the tasks report
ids in natural order — `r2` before `r10` — whatever the file order, so byte order is all that is
asked). The first id not greater than the one before it stops the run with an `InputError`
naming the file, line and both ids. Predictions for ids the truth does not have are not an error
for these tasks: they travel with the chunk that is open when they are met and are listed as
`extra_ids`, as in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.io.scale_options import check_chunk_size
from extracteval.errors import InputError
from extracteval.io.id_order import check_id_order
from extracteval.io.config import model_files
from extracteval.io.json_text import jsonl_values, read_record_file
from extracteval.io.text_files import check_regular_file

__all__ = ["load_records", "KeyedChunk", "keyed_record", "iter_keyed", "KeyedStream", "jsonl_stream_files", "open_keyed_stream"]


@dataclass(frozen=True)
class KeyedChunk:
    """truth: id → reference value (ascending ids); predictions: model → id → output (ids of
    this chunk, plus ids the truth does not have met while it was open)."""

    truth: dict[str, Any]
    predictions: dict[str, dict[str, Any]]


def _check_jsonl(p: Path) -> None:
    if p.suffix.lower() not in (".jsonl", ".ndjson"):
        raise InputError(
            f"{p}: --chunk-size streams JSONL files (one record per line); {p.suffix!r} is not one "
            "(JSON arrays, CSV and Parquet are read whole: drop --chunk-size)."
        )
    check_regular_file(p)


def keyed_record(p: str | Path, where: str, rec: Any, keys: Sequence[str], what: str, *, id_key: str = "id") -> tuple[str, str]:
    """(id, the first of `keys` the record has) of one parsed record, or an `InputError` naming
    the file and `where` (a line)."""
    if not isinstance(rec, dict):
        raise InputError(f"{p}: {where}: expected a JSON object with \"{id_key}\" and one of {', '.join(keys)}, but found {type(rec).__name__}.")
    if id_key not in rec:
        raise InputError(f"{p}: {where}: the record has no \"{id_key}\" key (found keys {sorted(rec)[:8]}).")
    raw = rec[id_key]
    rid = "" if raw is None or (isinstance(raw, float) and raw != raw) else str(raw).strip()  # as every reader: ' 1' is the id '1'
    if not rid:
        raise InputError(f"{p}: {where}: \"{id_key}\" is empty; every record needs an id.")
    key = next((k for k in keys if k in rec), None)
    if key is None:
        raise InputError(f"{p}: {where} (id {rid}): no {what} key; expected one of {', '.join(keys)} (found keys {sorted(rec)[:8]}).")
    return rid, key


def iter_keyed(path: str | Path, keys: Sequence[str], what: str, *, id_key: str = "id") -> Iterator[tuple[int, str, dict[str, Any], str]]:
    """(line, id, record, key found) per record, ids checked to ascend strictly."""
    p = Path(path)
    _check_jsonl(p)
    last: tuple[str, int] | None = None
    seen = False
    for line, rec in jsonl_values(p, unique_keys=True):
        rid, key = keyed_record(p, f"line {line}", rec, keys, what, id_key=id_key)
        if last is not None:
            check_id_order(p, f"line {line}", rid, last[0], f"line {last[1]}")
        last = (rid, line)
        seen = True
        yield line, rid, rec, key
    if not seen:
        raise InputError(f"{p}: the file has no records.")


def merge_by_id(streams: Sequence[Iterator[tuple[str, Any]]], names: Sequence[str], chunk_size: int) -> Iterator[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
    """Merge join of id-sorted `(id, value)` streams — the truth's first, then one per model in
    `names` — into chunks of `chunk_size` truth records: `(truth by id, {model: value by id})`.
    A model's ids without truth travel in the chunk where their id falls (the scorer reports them)."""
    heads = [next(s, None) for s in streams]
    truth: dict[str, Any] = {}
    preds: dict[str, dict[str, Any]] = {m: {} for m in names}
    pending = False
    while True:
        live = [h[0] for h in heads if h is not None]
        if not live:
            break
        rid = min(live)
        for k, s in enumerate(streams):
            h = heads[k]
            if h is None or h[0] != rid:
                continue
            if k == 0:
                truth[rid] = h[1]
            else:
                preds[names[k - 1]][rid] = h[1]
            pending = True
            heads[k] = next(s, None)
        if len(truth) >= chunk_size:
            yield truth, preds
            truth, preds, pending = {}, {m: {} for m in names}, False
    if pending:
        yield truth, preds


@dataclass
class KeyedStream:
    truth: str
    models: dict[str, str]  # name → file, in the order given
    chunk_size: int
    truth_keys: tuple[str, ...]
    output_keys: tuple[str, ...]
    truth_value: Callable[[Path, int, str, dict[str, Any], str], Any]  # (file, line, id, record, key) → value

    def chunks(self) -> Iterator[KeyedChunk]:
        t = Path(self.truth)
        names = list(self.models)
        streams: list[Iterator[tuple[str, Any]]] = [
            ((rid, self.truth_value(t, line, rid, rec, key)) for line, rid, rec, key in iter_keyed(t, self.truth_keys, "reference"))]
        streams += [((rid, rec[key]) for _, rid, rec, key in iter_keyed(self.models[m], self.output_keys, "output")) for m in names]
        for truth, preds in merge_by_id(streams, names, self.chunk_size):
            yield KeyedChunk(truth=truth, predictions=preds)

def jsonl_stream_files(truth: str, predictions: Sequence[str], chunk_size: int) -> dict[str, str]:
    """Model name → file of the `NAME=FILE` specs, once the chunk size and every file (the
    truth's too) are checked as JSONL files a stream can read."""
    check_chunk_size(chunk_size)
    _check_jsonl(Path(truth))
    models = {name: str(path) for name, path in model_files(predictions).items()}
    for path in models.values():
        _check_jsonl(Path(path))
    return models


def open_keyed_stream(
    truth: str, predictions: Sequence[str], *, chunk_size: int, truth_keys: Sequence[str], output_keys: Sequence[str],
    truth_value: Callable[[Path, int, str, dict[str, Any], str], Any],
) -> KeyedStream:
    models = jsonl_stream_files(truth, predictions, chunk_size)
    return KeyedStream(truth=str(truth), models=models, chunk_size=chunk_size, truth_keys=tuple(truth_keys),
                       output_keys=tuple(output_keys), truth_value=truth_value)


def load_records(path: str | Path, keys: Iterable[str], what: str, *, id_key: str = "id") -> dict[str, Any]:
    """id → value of the first present key among `keys`, from JSONL / JSON / CSV / Parquet.

    Values are kept as read: strings stay strings (a structured model's raw output), objects stay
    objects. Missing keys and duplicate ids are errors naming the file and line.
    """
    from extracteval.io.memory import is_in_memory, memory_records

    keys = tuple(keys)
    recs: Iterable[tuple[str, Any]]
    if is_in_memory(path):
        p: Any = path
        recs = memory_records(path)
    else:
        p = Path(path)
        if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
            recs = ((f"line {line}", rec) for line, rec in read_record_file(p))
        else:
            from extracteval.io.tables import read_table

            frame = read_table(p)
            recs = [(f"line {i + 2}", row) for i, row in enumerate(frame.to_dict(orient="records"))]
    out: dict[str, Any] = {}
    for where, rec in recs:
        rid, key = keyed_record(p, where, rec, keys, what, id_key=id_key)
        if rid in out:
            raise InputError(f"{p}: {where}: id {rid!r} appears twice.")
        out[rid] = rec[key]
    return out
