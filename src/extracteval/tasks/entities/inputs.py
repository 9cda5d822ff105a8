"""Files → inputs of the `entities` task: one record per line (JSONL), a JSON array of records or a JSON object
`{record id: [entities]}`, or Parquet with an id column and a list-of-struct column. Each record
has an id and a list of entity objects under `entities` (configurable):

    {"id": "INV-001", "entities": [{"description": "Bolt M8", "quantity": 100, "amount": "12.00"}]}

Errors name the file, line, record id and JSON path. Malformed *predictions* are data: a
predicted entity that is not an object, or an `entities` value that is not a list, is passed on
to be counted as an extra prediction; a missing or null `entities` means "no entities found".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.io.json_text import cap_depth, check_json_file_keys, jsonl_text_values, loads
from extracteval.io.config import model_files
from extracteval.io.memory import is_in_memory, memory_records, option
from extracteval.io.tables import read_table
from extracteval.io.text_files import read_text

__all__ = ["read_entity_records", "load_entities_inputs", "ENTITY_SUFFIXES"]

ENTITY_SUFFIXES = (".jsonl", ".ndjson", ".json", ".parquet", ".pq")


def _capped(entity: Any) -> Any:
    """An entity with every too-deep value replaced by its marker (json_text.cap_depth)."""
    if isinstance(entity, dict):
        return {k: cap_depth(v) for k, v in entity.items()}
    return cap_depth(entity)


def _entity_list(p: Path, where: str, rid: str, value: Any, key: str, *, truth: bool) -> list[Any]:
    if isinstance(value, list):
        value = [_capped(e) for e in value]
    else:
        value = _capped(value)
    if value is None:
        if truth:
            raise InputError(f"{p}: {where}: record {rid!r}: expected a list of entity objects under {key!r}, but found null.")
        return []
    if not isinstance(value, list):
        if truth:
            raise InputError(f"{p}: {where}: record {rid!r}: {key}: expected a list of entity objects, but found {type(value).__name__}.")
        return [value]  # malformed model output: one invalid entity, counted as an extra prediction
    if truth:
        for k, e in enumerate(value):
            if not isinstance(e, dict):
                shown = repr(e) if len(repr(e)) <= 60 else repr(e)[:57] + "…"
                raise InputError(
                    f"{p}: {where}: record {rid!r}: {key}[{k}]: expected an object (the entity's fields), "
                    f"but found {type(e).__name__} {shown}."
                )
    return value


def read_entity_records(
    path: str | Path,
    *,
    truth: bool,
    id_column: str = "id",
    entities_key: str = "entities",
) -> dict[str, list[Any]]:
    """Record id → list of entities from a JSONL, JSON or Parquet file (see the module docstring),
    or from a table held in memory (`io.memory.InMemoryTable`): a list of dicts read as a JSON
    array, a DataFrame as a Parquet file."""
    rows: list[tuple[str, dict[str, Any]]] = []  # (where, record)
    if is_in_memory(path):
        return _entity_records(path, memory_records(path), truth=truth, id_column=id_column, entities_key=entities_key)
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in ENTITY_SUFFIXES:
        raise InputError(f"{p}: unsupported file type {p.suffix!r} for entities; expected one of {', '.join(ENTITY_SUFFIXES)}.")
    if suffix in (".parquet", ".pq"):
        frame = read_table(p)
        rows = [(f"row {i + 1}", {str(k): _from_arrow(v) for k, v in rec.items()}) for i, rec in enumerate(frame.to_dict("records"))]
    else:
        text = read_text(p)
        if not text.strip():
            raise InputError(f"{p}: the file is empty; expected one JSON record per line with {id_column!r} and {entities_key!r}.")
        if suffix == ".json":
            try:
                obj = loads(text)
            except ValueError as e:
                raise InputError(f"{p}: not valid JSON ({e}).") from None
            wrapped = isinstance(obj, dict) and "records" in obj and isinstance(obj["records"], list)
            if wrapped:
                obj = obj["records"]
            check_json_file_keys(p, text, obj, lambda i: f"record [{i}]", wrapped=wrapped)
            if isinstance(obj, dict):  # {record id: [entities]}
                return {str(k): _entity_list(p, f"key {k!r}", str(k), v, entities_key, truth=truth) for k, v in obj.items()}
            if not isinstance(obj, list):
                raise InputError(f"{p}: expected a JSON array of records or an object {{id: [entities]}}, but found {type(obj).__name__}.")
            for i, rec in enumerate(obj):
                if not isinstance(rec, dict):
                    raise InputError(f"{p}: record [{i}]: expected a JSON object with {id_column!r} and {entities_key!r}, but found {type(rec).__name__}.")
                rows.append((f"record [{i}]", rec))
        else:
            for i, rec in jsonl_text_values(p, text, unique_keys=True):
                if not isinstance(rec, dict):
                    raise InputError(f"{p}: line {i}: expected a JSON object with {id_column!r} and {entities_key!r}, but found {type(rec).__name__}.")
                rows.append((f"line {i}", rec))
    return _entity_records(p, rows, truth=truth, id_column=id_column, entities_key=entities_key)


def _entity_records(p: Any, rows: list[tuple[str, dict[str, Any]]], *, truth: bool, id_column: str, entities_key: str) -> dict[str, list[Any]]:
    """(where, record) pairs → record id → list of entities, each record checked."""
    if not rows:
        raise InputError(f"{p}: {'no records' if is_in_memory(p) else 'the file has no records'}.")
    out: dict[str, list[Any]] = {}
    first_seen: dict[str, str] = {}
    for where, rec in rows:
        rid = rec.get(id_column)
        if rid is None or (isinstance(rid, str) and not rid.strip()) or isinstance(rid, (dict, list)):
            raise InputError(f"{p}: {where}: expected a record id in {id_column!r} (pass {option(p, '--id-column')} if it is elsewhere), "
                             f"but found {'nothing' if rid is None else repr(rid)}; keys: {sorted(rec)[:10]}.")
        rid = str(rid).strip()
        if rid in out:
            raise InputError(f"{p}: {where}: record id {rid!r} repeats {first_seen[rid]}; record ids must be unique.")
        if entities_key not in rec and truth:
            raise InputError(f"{p}: {where}: record {rid!r}: no {entities_key!r} key (keys: {sorted(rec)[:10]}); "
                             f"pass {option(p, '--entities-key')} if the list is under another key.")
        out[rid] = _entity_list(p, where, rid, rec.get(entities_key), entities_key, truth=truth)
        first_seen[rid] = where
    return out


def _from_arrow(v: Any) -> Any:
    """Parquet list-of-struct cells come back as numpy arrays of dicts; make plain lists."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, list):
        return [_from_arrow(x) for x in v]
    if isinstance(v, dict):
        return {k: _from_arrow(x) for k, x in v.items()}
    return v


def load_entities_inputs(
    truth: str | Path,
    predictions: Sequence[str],
    *,
    id_column: str = "id",
    entities_key: str = "entities",
) -> tuple[dict[str, list[Any]], list[Any], str]:
    """Truth records, one `ModelEntities` per `NAME=FILE` (a bare FILE is named after its stem)."""
    from extracteval.tasks.entities.semantics import ModelEntities

    t = read_entity_records(truth, truth=True, id_column=id_column, entities_key=entities_key)
    models = []
    names: dict[str, str] = {}
    for name, path in model_files(predictions).items():
        names[name] = str(path)
        recs = read_entity_records(path, truth=False, id_column=id_column, entities_key=entities_key)
        models.append(ModelEntities(name=name, records=recs, source=str(path)))
    return t, models, str(truth)
