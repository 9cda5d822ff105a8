"""JSONL entity files → chunks of records aligned by id, in bounded memory (the chunked
`entities` engine).

Each line is read as `tasks.entities.inputs.read_entity_records` reads it (id in `--id-column`,
stripped; the list under `--entities-key`; malformed predicted lists are data). Only JSONL
(`.jsonl`, `.ndjson`): a JSON array or object, or Parquet, is read whole by the in-memory engine.

Every file must be **sorted by id** (ascending by code point, `LC_ALL=C sort`); the first id not
greater than the one before it stops the run naming the file, line and both ids. A chunk holds
`chunk_size` truth records and every predicted record met while it was open, so predictions for
ids the truth lacks travel with a chunk (their entities are extra predictions, as in memory).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.io.id_order import check_id_order
from extracteval.tasks.entities.inputs import _entity_list
from extracteval.io.json_text import jsonl_values
from extracteval.io.keyed_chunks import _check_jsonl, jsonl_stream_files, merge_by_id

__all__ = ["EntitiesChunk", "entity_record_id", "iter_entity_records", "EntitiesStream", "open_entities_stream"]


@dataclass(frozen=True)
class EntitiesChunk:
    truth: dict[str, list[Any]]
    predictions: dict[str, dict[str, list[Any]]]  # model → record id → entities


def entity_record_id(p: str | Path, where: str, rec: Any, *, id_column: str, entities_key: str, truth: bool) -> str:
    """The id of one parsed record (a truth record must hold its list), or an `InputError`
    naming the file and `where` (a line)."""
    if not isinstance(rec, dict):
        raise InputError(f"{p}: {where}: expected a JSON object with {id_column!r} and {entities_key!r}, but found {type(rec).__name__}.")
    rid = rec.get(id_column)
    if rid is None or (isinstance(rid, str) and not rid.strip()) or isinstance(rid, (dict, list)):
        raise InputError(f"{p}: {where}: expected a record id in {id_column!r} (pass --id-column NAME if it is elsewhere), "
                         f"but found {'nothing' if rid is None else repr(rid)}; keys: {sorted(rec)[:10]}.")
    rid = str(rid).strip()
    if entities_key not in rec and truth:
        raise InputError(f"{p}: {where}: record {rid!r}: no {entities_key!r} key (keys: {sorted(rec)[:10]}); "
                         "pass --entities-key NAME if the list is under another key.")
    return rid


def iter_entity_records(path: str | Path, *, truth: bool, id_column: str, entities_key: str) -> Iterator[tuple[str, list[Any]]]:
    """(record id, entities) per line, ids checked to ascend strictly."""
    p = Path(path)
    _check_jsonl(p)
    last: tuple[str, int] | None = None
    for i, rec in jsonl_values(p, unique_keys=True):
        rid = entity_record_id(p, f"line {i}", rec, id_column=id_column, entities_key=entities_key, truth=truth)
        if last is not None:
            check_id_order(p, f"line {i}", rid, last[0], f"line {last[1]}")
        last = (rid, i)
        yield rid, _entity_list(p, f"line {i}", rid, rec.get(entities_key), entities_key, truth=truth)
    if last is None:
        raise InputError(f"{p}: the file has no records.")


@dataclass(frozen=True)
class EntitiesStream:
    truth: str
    models: dict[str, str]  # name → file, in the order given
    chunk_size: int
    id_column: str
    entities_key: str

    def gold_fields(self) -> list[str]:
        """The fields of every gold entity (one streaming pass over the truth): the default
        features and what the options are checked against."""
        from extracteval.tasks.entities.semantics import gold_fields_of

        fields: set[str] = set()
        for _, ents in iter_entity_records(self.truth, truth=True, id_column=self.id_column, entities_key=self.entities_key):
            fields.update(gold_fields_of(ents))
        return sorted(fields)

    def chunks(self) -> Iterator[EntitiesChunk]:
        names = list(self.models)
        streams = [iter_entity_records(self.truth, truth=True, id_column=self.id_column, entities_key=self.entities_key)]
        streams += [iter_entity_records(self.models[m], truth=False, id_column=self.id_column, entities_key=self.entities_key) for m in names]
        for truth, preds in merge_by_id(streams, names, self.chunk_size):
            yield EntitiesChunk(truth=truth, predictions=preds)

def open_entities_stream(truth: str, predictions: Sequence[str], *, chunk_size: int, id_column: str = "id",
                         entities_key: str = "entities") -> EntitiesStream:
    models = jsonl_stream_files(truth, predictions, chunk_size)
    return EntitiesStream(truth=str(truth), models=models, chunk_size=chunk_size, id_column=id_column, entities_key=entities_key)
