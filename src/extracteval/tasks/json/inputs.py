"""Files → inputs of the `json` task: golden objects and each model's predicted objects.

Layouts (per file, decided by its first record):

| layout | one record |
|---|---|
| records (JSONL / JSON array) | `{"id": "r1", "name": "…", "address": {…}}`: the object minus `id` (and, for predictions, minus the safety key) |
| pairs (JSONL / JSON array) | `{"id": "r1", "truth": {…}, "prediction": {…}}`, optional `model` (several models in one file), `status` (ok / pending / error) and safety key |
| table (CSV / TSV / Parquet, wide or long as in the `fields` task) | one row per record, one column per key |

A `.json` file may also be an object mapping id → record. Every error names the file and the line
(JSONL), record number (JSON) or record id, what was expected and what was found. A prediction
that is valid JSON but not an object (pairs layout) is *data*: it is passed on and counted as an
invalid prediction by the scorer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.tasks.json.config import without_keys
from extracteval.tasks.json.semantics import JsonPredictions
from extracteval.errors import InputError
from extracteval.io.config import models_in_file, parse_model_spec
from extracteval.io.memory import is_in_memory, memory_frame, memory_records
from extracteval.io.json_text import loads as _loads, check_json_file_keys, jsonl_text_values
from extracteval.io.tables import load_fields_table
from extracteval.io.text_files import read_text

__all__ = ["LoadedJson", "read_json_records", "load_json_inputs"]

_JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
_TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
_PAIR_KEYS = {"truth", "prediction"}
_PAIR_EXTRA = {"model", "status"}


@dataclass
class LoadedJson:
    """One file: `truth[id]` (records / table layout read as truth, or pairs with `truth`),
    `predictions[model][id]` ("" = unnamed model), `safety[model][id]`."""

    source: str
    layout: str
    truth: dict[str, Any] | None = None
    predictions: dict[str, dict[str, Any]] = field(default_factory=dict)
    safety: dict[str, dict[str, float]] = field(default_factory=dict)
    status: dict[str, dict[str, str]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # id → "line 3" (for messages)


def _iter_json_records(p: Path) -> list[tuple[str, Any]]:
    """(location, parsed value) per record of a JSONL file or a JSON array/object."""
    text = read_text(p)
    if not text.strip():
        raise InputError(f"{p}: the file is empty; expected one JSON object per line with an 'id' key.")
    if p.suffix.lower() == ".json":
        try:
            obj = _loads(text)
        except ValueError as e:
            raise InputError(f"{p}: not valid JSON ({e}).") from None
        wrapped = isinstance(obj, dict) and isinstance(obj.get("records"), list)
        if wrapped:
            obj = obj["records"]
        check_json_file_keys(p, text, obj, wrapped=wrapped)
        if isinstance(obj, list):
            if not obj:
                raise InputError(f"{p}: the file has no records (an empty JSON array).")
            return [(f"record {i}", r) for i, r in enumerate(obj, start=1)]
        if isinstance(obj, dict):  # id → record
            if not obj:
                raise InputError(f"{p}: the file has no records (an empty JSON object).")
            return [(f"record {k!r}", {"id": k, **v} if isinstance(v, dict) and "id" not in v else {"id": k, "__value__": v})
                    for k, v in obj.items()]
        raise InputError(f"{p}: expected a JSON array of records (or an object mapping id → record), but found {type(obj).__name__}.")
    out = [(f"line {i}", value) for i, value in jsonl_text_values(p, text, unique_keys=True)]
    if not out:
        raise InputError(f"{p}: the file has no records.")
    return out


def _memory_records(table: Any, id_key: str, safety_key: str) -> list[tuple[str, Any]] | None:
    """(location, record) of each record of a table held in memory that is read record by record
    (a list of dicts; a DataFrame in the pairs layout); None for a DataFrame read as a table."""
    if not isinstance(table.value, list):
        keys = {str(c) for c in memory_frame(table).columns} - {id_key, safety_key}
        if not (keys & _PAIR_KEYS and keys <= _PAIR_KEYS | _PAIR_EXTRA):
            return None
        # its rows as JSON lines: an empty `truth` / `prediction` cell is a null (a null
        # prediction is counted invalid), an empty optional cell (model, status, safety) no key
        return [(where, {k: v for k, v in row.items() if v is not None or k in _PAIR_KEYS}) for where, row in memory_records(table)]
    return memory_records(table)


def check_pair_keys(p: Path | str, where: str, obj: dict[str, Any], id_key: str, safety_key: str, metadata: Sequence[str] = ()) -> None:
    """Refuse a record of a pairs-layout file that has keys the layout does not know (its metadata
    keys aside: they describe the record)."""
    extra = sorted(set(obj) - _PAIR_KEYS - _PAIR_EXTRA - {id_key, safety_key} - set(metadata))
    if extra:
        raise InputError(
            f"{p}: {where}: this file is in the pairs layout ({{\"{id_key}\", \"truth\", \"prediction\"}}, decided by its "
            f"first record), but this record has other keys: {extra}."
        )


def _record_id(p: Path, where: str, obj: dict[str, Any], id_key: str) -> str:
    if id_key not in obj:
        raise InputError(f"{p}: {where}: no {id_key!r} key; every record needs an id (keys found: {sorted(obj)[:10]}).")
    rid = obj[id_key]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or not str(rid).strip():
        raise InputError(f"{p}: {where}: {id_key!r} must be a non-empty string or integer, but found {rid!r}.")
    return str(rid).strip()


def _safety_value(p: Path, where: str, rid: str, key: str, v: Any) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip()):
        return None
    try:
        x = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if not 0.0 <= x <= 1.0:
        raise InputError(f"{p}: {where} (record {rid!r}): {key!r} must be a number in [0, 1], but found {v!r}.")
    return x


def read_json_records(path: str | Path, *, role: str, id_key: str = "id", safety_key: str = "safety_score", metadata: Sequence[str] = ()) -> LoadedJson:
    """Read one truth (`role="truth"`) or predictions (`role="predictions"`) file, any layout.
    A table held in memory (`io.memory.InMemoryTable`) is read as the same records written as a
    file: a list of dicts as a JSON array, a DataFrame as a table — or, when its columns are
    those of the pairs layout (`truth`, `prediction`…), as its rows written as JSON lines."""
    if is_in_memory(path):
        p: Any = path
        items = _memory_records(path, id_key, safety_key)
        if items is None:
            return _read_table(path, role=role, id_key=id_key, safety_key=safety_key)
    else:
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix in _TABLE_SUFFIXES:
            return _read_table(p, role=role, id_key=id_key, safety_key=safety_key)
        if suffix not in _JSON_SUFFIXES:
            raise InputError(f"{p}: unsupported file type {p.suffix!r}; expected .jsonl, .json, .csv, .tsv or .parquet.")
        items = _iter_json_records(p)
    first_where, first = items[0]
    if not isinstance(first, dict):
        raise InputError(f"{p}: {first_where}: expected a JSON object with an {id_key!r} key, but found {type(first).__name__}.")
    # the first record that holds more than its id decides the layout (a record holding only its
    # id is a record of either layout)
    keys = next((k for k in (set(obj) - {id_key, safety_key} - set(metadata) for _, obj in items if isinstance(obj, dict)) if k), set())
    pairs = bool(keys & _PAIR_KEYS) and keys <= _PAIR_KEYS | _PAIR_EXTRA
    if not pairs:
        return _read_records_layout(p, items, role=role, id_key=id_key, safety_key=safety_key, owned=not is_in_memory(path))
    out = LoadedJson(source=str(p), layout="pairs")
    seen: dict[tuple[str, str], str] = {}
    for where, obj in items:
        if not isinstance(obj, dict):
            raise InputError(f"{p}: {where}: expected a JSON object with an {id_key!r} key, but found {type(obj).__name__}.")
        rid = _record_id(p, where, obj, id_key)
        if "__value__" in obj:
            raise InputError(f"{p}: {where}: expected a JSON object as the record, but found {type(obj['__value__']).__name__}.")
        model = ""
        check_pair_keys(p, where, obj, id_key, safety_key, metadata)
        if "model" in obj:
            model = str(obj["model"])
        dup = seen.get((model, rid))
        if dup:
            raise InputError(f"{p}: {where}: record id {rid!r} appears twice (first at {dup})" + (f" for model {model!r}." if model else "."))
        seen[(model, rid)] = where
        out.where[rid] = where
        if role == "truth" or "truth" in obj:
            if "truth" not in obj:
                raise InputError(f"{p}: {where}: record {rid!r} has no 'truth' key; the ground truth needs one per record.")
            if not isinstance(obj["truth"], dict):
                raise InputError(f"{p}: {where}: record {rid!r}: 'truth' must be a JSON object, but found {type(obj['truth']).__name__}.")
            if out.truth is None:
                out.truth = {}
            prev = out.truth.get(rid)
            if prev is not None and _canon(prev) != _canon(obj["truth"]):
                raise InputError(f"{p}: {where}: record {rid!r}: its 'truth' differs between models of the same file.")
            out.truth[rid] = obj["truth"]
        if role == "predictions":
            # no `prediction` key: no output for this record (a missing prediction); a value
            # that is not an object (null included) is passed on and counted invalid
            recs = out.predictions.setdefault(model, {})
            if "prediction" in obj:
                recs[rid] = obj["prediction"]
            if obj.get("status") is not None:
                out.status.setdefault(model, {})[rid] = str(obj["status"])
            if safety_key in obj:
                s = _safety_value(p, where, rid, safety_key, obj[safety_key])
                if s is not None:
                    out.safety.setdefault(model, {})[rid] = s
    if role == "predictions" and not out.predictions:
        out.predictions[""] = {}
    return out


_ABSENT = object()


def _read_records_layout(p: Any, items: list[tuple[str, Any]], *, role: str, id_key: str, safety_key: str, owned: bool) -> LoadedJson:
    """The records layout: each record the object minus its id (and a prediction's safety score),
    in key order. `owned`: the objects were parsed here and are taken as they are (their id
    popped); a caller's objects are copied."""
    out = LoadedJson(source=str(p), layout="records")
    records: dict[str, Any] = {}
    safety: dict[str, float] = {}
    where_of = out.where
    truth = role == "truth"
    for where, obj in items:
        if not isinstance(obj, dict):
            raise InputError(f"{p}: {where}: expected a JSON object with an {id_key!r} key, but found {type(obj).__name__}.")
        rid = obj.get(id_key, _ABSENT)
        if not (type(rid) is str and rid and not rid[0].isspace() and not rid[-1].isspace()):  # else the usual id, as it is
            rid = _record_id(p, where, obj, id_key)
        if "__value__" in obj:
            raise InputError(f"{p}: {where}: expected a JSON object as the record, but found {type(obj['__value__']).__name__}.")
        dup = where_of.get(rid)
        if dup:
            raise InputError(f"{p}: {where}: record id {rid!r} appears twice (first at {dup}).")
        where_of[rid] = where
        record = obj if owned else dict(obj)
        del record[id_key]
        if not truth:
            v = record.pop(safety_key, _ABSENT)
            if v is not _ABSENT:
                s = _safety_value(p, where, rid, safety_key, v)
                if s is not None:
                    safety[rid] = s
        records[rid] = record
    if truth:
        out.truth = records
    else:
        out.predictions[""] = records
        if safety:
            out.safety[""] = safety
    return out


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)


def _cell(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        try:
            return v.item()
        except (AttributeError, ValueError):
            return v
    return v


def _read_table(p: Path, *, role: str, id_key: str, safety_key: str) -> LoadedJson:
    t = load_fields_table(p, id_column=id_key)
    out = LoadedJson(source=str(p), layout="table")
    if role == "truth":
        if len(t.values) != 1 or "" not in t.values:
            raise InputError(f"{p}: the ground truth must not have a `model` column (found models {sorted(t.values)}).")
        frame = t.values[""]
        out.truth = {str(rid): {str(c): _cell(v) for c, v in row.items()} for rid, row in zip(frame.index, frame.to_dict("records"))}
        return out
    for model, frame in t.values.items():
        st = t.status.get(model)
        if isinstance(st, pd.DataFrame):
            raise InputError(
                f"{p}: per-cell `status` (long layout) is not supported by the json task; give one status per record "
                "(a `status` column in the wide layout)."
            )
        if st is not None:
            out.status[model] = {str(k): str(v) for k, v in st.items() if v is not None and str(v).strip()}
        recs: dict[str, Any] = {}
        for rid, row in zip(frame.index, frame.to_dict("records")):
            rid = str(rid)
            rec = {str(c): _cell(v) for c, v in row.items()}
            if safety_key in rec:
                s = _safety_value(p, f"record {rid!r}", rid, safety_key, rec.pop(safety_key))
                if s is not None:
                    out.safety.setdefault(model, {})[rid] = s
            recs[rid] = rec
        out.predictions[model] = recs
    return out


def load_json_inputs(
    truth: str | Path | None,
    predictions: Sequence[str],
    *,
    id_key: str = "id",
    safety_key: str = "safety_score",
    is_absent: Callable[[Any], bool] | None = None,
    metadata: Sequence[str] = (),
) -> tuple[dict[str, Any], list[JsonPredictions], str, list[str]]:
    """Read the truth and each `NAME=FILE` (or bare `FILE`) spec → (truth, models, truth source, notes).

    `metadata`: top-level keys of the truth file's records that describe the record (the keys
    slices and clusters are read from), taken out of its ground truth: they are not scored.

    Without `truth`, the ground truth comes from pairs-layout prediction files (which must agree).
    With both, a pairs file's `truth` must equal the ground truth record for record.
    Table predictions: a column that is not a key of the record's truth counts only where its
    cell holds a value (an empty cell of an extra column is not an output key).
    """
    if not predictions:
        raise InputError("no predictions: give at least one --predictions NAME=FILE.")
    notes: list[str] = []
    truth_map: dict[str, Any] | None = None
    truth_source = ""
    if truth is not None:
        t = read_json_records(truth, role="truth", id_key=id_key, safety_key=safety_key, metadata=metadata)
        if t.truth is None:
            raise InputError(f"{truth}: no ground truth found; a pairs-layout truth file needs a 'truth' key per record.")
        truth_map, truth_source = without_keys(t.truth, metadata), str(truth)
    loaded: list[tuple[str | None, Path, LoadedJson]] = []
    for spec in predictions:
        name, path = parse_model_spec(spec)
        lj = read_json_records(path, role="predictions", id_key=id_key, safety_key=safety_key, metadata=metadata)
        if metadata:  # metadata keys are no part of a truth or a prediction object
            lj.truth = None if lj.truth is None else without_keys(lj.truth, metadata)
            lj.predictions = {k: without_keys(recs, metadata) for k, recs in lj.predictions.items()}
        loaded.append((name, path, lj))
        if lj.truth is not None:
            if truth_map is None:
                truth_map, truth_source = dict(lj.truth), str(path)
            else:
                for rid, obj in lj.truth.items():
                    if rid in truth_map and _canon(truth_map[rid]) != _canon(obj):
                        raise InputError(
                            f"{path}: {lj.where.get(rid, 'record ' + repr(rid))}: record {rid!r}: its 'truth' differs from the "
                            f"ground truth in {truth_source}."
                        )
                    if rid not in truth_map and truth is None:
                        truth_map[rid] = obj
    if truth_map is None:
        raise InputError(
            "no ground truth: pass --truth FILE, or prediction files in the pairs layout "
            '({"id", "truth", "prediction"} per line).'
        )
    absent = is_absent or (lambda v: v is None or (isinstance(v, str) and not v.strip()))
    models: list[JsonPredictions] = []
    names: dict[str, str] = {}
    for name, path, lj in loaded:
        items = models_in_file(name, path, lj.predictions, names, column="`model` key/column")
        for model_name, key in items:
            recs = lj.predictions[key]
            if lj.layout == "table":
                recs = {
                    rid: {k: v for k, v in rec.items() if k in truth_map.get(rid, {}) or not absent(v)} for rid, rec in recs.items()
                }
            models.append(
                JsonPredictions(
                    name=model_name, records=recs, safety=lj.safety.get(key, {}), status=lj.status.get(key, {}), source=str(path)
                )
            )
    return truth_map, models, truth_source, notes
