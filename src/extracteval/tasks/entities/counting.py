"""The `entities` task's reading of records: each side's entities flattened into columns and encoded, and the plan
and prepared inputs every chunk of records is counted from."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from extracteval.core.feature_views import (
    _MISSING_KEY,
    LabelEncoder,
    check_model_names,
    display_labels,
)
from extracteval.core.normalize import key_text, key_type
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError
from extracteval.tasks.entities.config import EntitiesConfig, ModelEntities


@dataclass
class _Side:
    """All entities of one side (truth or one model), flattened and canonically ordered."""

    record: np.ndarray  # record index per entity, ascending
    start: np.ndarray  # (n_records + 1,) offsets into the entity arrays
    valid: np.ndarray  # False for a predicted entity that is not an object
    raw: list[Any]  # the entities themselves in input order, for examples (see `entity`)
    orig: np.ndarray  # position of each entity in its record's input list
    perm: np.ndarray | None = None  # canonical position → index into `raw`
    codes: dict[str, np.ndarray] = field(default_factory=dict)  # feature → label codes

    def entity(self, i: int) -> Any:
        return self.raw[int(self.perm[i]) if self.perm is not None else i]


def _strict_label_rows(out: list[list[tuple[str, str, int, int, int]]], feature: str, keys: Sequence[str], rec: np.ndarray, a: np.ndarray,
                       b: np.ndarray, miss_rec: np.ndarray, miss: np.ndarray, extra_rec: np.ndarray, extra: np.ndarray) -> None:
    """Append to `out[record]` the (feature, label, tp, fp, fn) counts of one feature's strict
    view, record by record: a matched pair is a tp of its label when right, else an fn of the
    gold label and an fp of the predicted one; a missed gold entity an fn, an extra one an fp."""
    right = a == b
    wrong = ~right
    r_all = np.concatenate([rec[right], rec[wrong], rec[wrong], miss_rec, extra_rec]).astype(np.int64)
    c_all = np.concatenate([a[right], a[wrong], b[wrong], miss, extra]).astype(np.int64)
    kind = np.concatenate([np.zeros(int(right.sum()), dtype=np.int64), np.full(int(wrong.sum()), 2), np.full(int(wrong.sum()), 1),
                           np.full(len(miss), 2), np.full(len(extra), 1)])  # 0 tp, 1 fp, 2 fn
    width = max(len(keys), 1)
    pairs, inv = np.unique(r_all * width + c_all, return_inverse=True)
    counts = np.zeros((len(pairs), 3), dtype=np.int64)
    np.add.at(counts, (inv.ravel(), kind), 1)
    for pair, (tp, fp, fn) in zip(pairs.tolist(), counts.tolist()):
        r, code = divmod(pair, width)
        out[r].append((feature, keys[code], tp, fp, fn))


def _flatten(records: Mapping[str, Sequence[Any]], order: Sequence[str], *, what: str, strict: bool) -> tuple[np.ndarray, list[Any], np.ndarray]:
    """Entities of every record in `order`, their record index and their position in the record."""
    ents: list[Any] = []
    sizes: list[int] = []
    for rid in order:
        items = records.get(rid)
        if items is None:
            sizes.append(0)
            continue
        # `type(...) is list` first: the ABC checks cost more than the rest of the loop
        if type(items) is not list and (isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence)):
            raise InputError(f"{what}: record {rid!r}: expected a list of entity objects, but found {type(items).__name__}.")
        ents.extend(items)
        sizes.append(len(items))
    lens = np.array(sizes, dtype=np.int64)
    rec_idx = np.repeat(np.arange(len(order), dtype=np.int64), lens)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]) if len(order) else np.zeros(0, dtype=np.int64)
    pos = np.arange(len(ents), dtype=np.int64) - np.repeat(starts, lens)
    if strict and not set(map(type, ents)) <= {dict}:
        for i, e in enumerate(ents):
            if not isinstance(e, Mapping):
                raise InputError(
                    f"{what}: record {order[rec_idx[i]]!r}: entities[{pos[i]}]: expected an object (a JSON object of fields), "
                    f"but found {type(e).__name__} {_short(e)}."
                )
    return rec_idx, ents, pos


def _columns(view: list[dict[str, Any]], fields: Sequence[str], *, fast: bool = True) -> np.ndarray:
    """(entities × fields) object array of the fields' values, None or NaN where absent (both
    read as missing). pandas' `dicts_to_array` reads each dict once for all fields, 3–4× faster
    than one pass per field over 100k+ scattered dicts; its plain-Python equivalent stands in if
    a pandas version lacks it."""
    try:
        from pandas._libs.lib import dicts_to_array
    except ImportError:  # pragma: no cover (present in pandas 1.x-3.x)
        dicts_to_array = None
    if not fast:
        dicts_to_array = None
    if dicts_to_array is not None:
        try:
            return np.asarray(dicts_to_array(view, list(fields)), dtype=object).reshape(len(view), len(fields))
        except (TypeError, ValueError):  # pragma: no cover (a changed private signature)
            pass
    out = np.empty((len(view), len(fields)), dtype=object)
    for j, f in enumerate(fields):
        out[:, j] = list(map(dict.get, view, repeat(f, len(view))))
    return out


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "…"


def _offsets(record: np.ndarray, n_records: int) -> np.ndarray:
    counts = np.bincount(record, minlength=n_records) if len(record) else np.zeros(n_records, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@dataclass
class _Prepared:
    order: list[str]
    truth: dict[str, Sequence[Any]]
    pred_records: list[dict[str, Sequence[Any]]]
    gold: _Side
    sides: list[_Side]
    tables: dict[str, _FieldTable]
    features_all: list[str]
    scored: list[str]
    key_fields: list[str]
    weights: dict[str, float]
    warnings: list[str]
    fields_needed: list[str]
    invalid_first: dict[str, str]  # model → where its first non-object entity is (the warning's text)
    unknown_keys: dict[str, frozenset[str]]  # model → predicted fields no gold entity has
    gold_missing: dict[str, int]  # field → gold entities without it


@dataclass(frozen=True)
class EntitiesPlan:
    """What the options resolve to, given the fields of every ground-truth entity: features,
    key fields, weights (checked once, against the whole truth)."""

    gold_fields: tuple[str, ...]
    features_all: tuple[str, ...]
    scored: tuple[str, ...]
    key_fields: tuple[str, ...]
    weights: Mapping[str, float]
    fields_needed: tuple[str, ...]


def gold_fields_of(entities: Any) -> list[str]:
    """The sorted names of every field of these gold entities (dicts)."""
    return sorted({str(k) for k in set(chain.from_iterable(entities))})


def plan_entities(gold_fields: Sequence[str], cfg: EntitiesConfig, truth_source: str) -> EntitiesPlan:
    gold_fields = list(gold_fields)
    if not gold_fields:
        raise InputError(f"{truth_source}: there is no ground-truth entity to score: every record's list of entities is empty (or its "
                         "entities have no fields). Entities are scored by their fields, so at least one record needs an entity such as "
                         '{"description": "Bolt", "quantity": 2}; records with an empty list beside it are scored as having none.')

    def unknown(names: Sequence[str], what: str) -> None:
        bad = [f for f in names if f not in gold_fields]
        if bad:
            raise InputError(f"unknown {what} {bad}: not a field of any ground-truth entity in {truth_source} "
                             f"(fields found: {gold_fields}).")

    if cfg.features is not None:
        unknown(cfg.features, "feature(s)")
    features_all = list(cfg.features) if cfg.features is not None else gold_fields
    unknown(sorted(cfg.strategies), "field(s) in strategies")
    unknown(sorted(cfg.types), "field(s) in types")
    if cfg.key_fields is not None:
        unknown(cfg.key_fields, "key field(s)")
    if cfg.weights is not None:
        unknown(sorted(cfg.weights), "field(s) in weights")
    scored = [f for f in features_all if cfg.strategy_for(f) is not Strategy.IGNORE]
    if cfg.key_fields is not None:
        key_fields = list(cfg.key_fields)
        if cfg.weights is not None:
            extra_w = sorted(set(cfg.weights) - set(key_fields))
            if extra_w:
                raise InputError(f"weights given for fields {extra_w} that are not key fields (key fields: {key_fields}).")
    elif cfg.weights is not None:
        key_fields = sorted(cfg.weights)
    else:
        key_fields = list(scored)
    ignored_keys = [f for f in key_fields if cfg.strategy_for(f) is Strategy.IGNORE]
    if ignored_keys:
        raise InputError(f"key fields {ignored_keys} have strategy IGNORE; align on EXACT, FUZZY or SEMANTIC fields only.")
    weights = {f: (cfg.weights or {}).get(f, 1.0) for f in key_fields}
    if sum(weights.values()) <= 0:
        raise InputError(f"weights: the key fields' weights {weights} sum to 0; expected a positive sum.")
    if not scored:
        raise InputError("no feature to score: every feature has strategy IGNORE.")
    return EntitiesPlan(gold_fields=tuple(gold_fields), features_all=tuple(features_all), scored=tuple(scored),
                        key_fields=tuple(key_fields), weights=weights, fields_needed=tuple(dict.fromkeys(scored + key_fields)))


def _missing_everywhere(f: str, truth_source: str) -> InputError:
    return InputError(
        f"{truth_source}: feature {f!r} is missing in every ground-truth entity; there is nothing to score or "
        "align on: fill it, or leave it out of --features/--key-fields."
    )


def _prepare(truth: Mapping[str, Sequence[Any]], preds: Sequence[ModelEntities], cfg: EntitiesConfig, truth_source: str,
             plan: EntitiesPlan | None = None) -> _Prepared:
    """Validate, flatten, encode every needed field once, and order entities canonically.

    With `plan` (resolved from the whole truth) these records are a part of the data set: a
    field missing from every gold entity *here* is counted (`gold_missing`), not refused."""
    check_model_names(preds)
    truth = {str(k): v for k, v in truth.items()}
    pred_records = [{str(k): v for k, v in p.records.items()} for p in preds]
    order = sorted(set(truth).union(*[set(r) for r in pred_records]))
    n_rec = len(order)
    warnings: list[str] = []

    g_arr, g_ents, g_pos = _flatten(truth, order, what=truth_source, strict=True)
    whole = plan is None
    if plan is None:
        plan = plan_entities(gold_fields_of(g_ents), cfg, truth_source)
    gold_fields, features_all, scored = list(plan.gold_fields), list(plan.features_all), list(plan.scored)
    key_fields, weights, fields_needed = list(plan.key_fields), dict(plan.weights), list(plan.fields_needed)

    gold = _Side(record=g_arr, start=_offsets(g_arr, n_rec), valid=np.ones(len(g_ents), dtype=bool), raw=g_ents, orig=g_pos)
    sides, invalid_first, unknown_keys = _pred_sides(preds, pred_records, order, features_all, gold_fields)
    tables, gold_missing = _encode_fields(gold, sides, fields_needed, cfg, whole=whole, truth_source=truth_source)
    _canonical(gold, tables, fields_needed, n_rec)
    for s in sides:
        _canonical(s, tables, fields_needed, n_rec)
    return _Prepared(order=order, truth=truth, pred_records=pred_records, gold=gold, sides=sides, tables=tables,
                     features_all=features_all, scored=scored, key_fields=key_fields, weights=weights, warnings=warnings,
                     fields_needed=fields_needed, invalid_first=invalid_first, unknown_keys=unknown_keys, gold_missing=gold_missing)


def _pred_sides(preds: Sequence[ModelEntities], pred_records: Sequence[Mapping[str, Sequence[Any]]], order: Sequence[str],
                features_all: Sequence[str], gold_fields: Sequence[str]) -> tuple[list[_Side], dict[str, str], dict[str, frozenset[str]]]:
    """Each model's entities flattened (non-objects marked invalid), where its first non-object entity is, and the
    predicted fields no gold entity has."""
    n_rec = len(order)
    invalid_first: dict[str, str] = {}
    unknown_keys: dict[str, frozenset[str]] = {}
    sides: list[_Side] = []
    for p, recs in zip(preds, pred_records):
        arr, p_ents, p_pos = _flatten(recs, order, what=p.source or f"predictions of model {p.name!r}", strict=False)
        valid = (np.ones(len(p_ents), dtype=bool) if set(map(type, p_ents)) <= {dict}
                 else np.fromiter((isinstance(e, Mapping) for e in p_ents), dtype=bool, count=len(p_ents)))
        sides.append(_Side(record=arr, start=_offsets(arr, n_rec), valid=valid, raw=p_ents, orig=p_pos))
        if (~valid).any():
            first = int(np.flatnonzero(~valid)[0])
            invalid_first[p.name] = f"record {order[arr[first]]!r}, entities[{p_pos[first]}] = {_short(p_ents[first])}"
        keys_seen = set(chain.from_iterable(p_ents)) if valid.all() else set(chain.from_iterable(e for e, ok in zip(p_ents, valid.tolist()) if ok))
        unknown_keys[p.name] = frozenset({str(k) for k in keys_seen} - set(features_all) - set(gold_fields))
    return sides, invalid_first, unknown_keys


def _encode_fields(gold: _Side, sides: Sequence[_Side], fields_needed: Sequence[str], cfg: EntitiesConfig, *, whole: bool,
                   truth_source: str) -> tuple[dict[str, _FieldTable], dict[str, int]]:
    """Encode every needed field across truth and all models once (sets each side's codes): the fields' key tables,
    and per field the gold entities without it."""
    tables: dict[str, _FieldTable] = {}
    gold_missing: dict[str, int] = {}
    # plain dicts only (a non-object prediction reads as an empty entity), so that dict.get can
    # be mapped over a column at C speed
    empty: dict[str, Any] = {}
    views = [[e if type(e) is dict else dict(e) if ok else empty for e, ok in zip(side.raw, side.valid.tolist())]
             for side in [gold, *sides]]
    columns = [_columns(view, fields_needed) for view in views]
    for j, f in enumerate(fields_needed):
        enc = LabelEncoder(cfg.types.get(f, "auto"), cfg.normalization)
        codes, table = enc.encode([c[:, j] for c in columns])
        miss = table.index(_MISSING_KEY) if _MISSING_KEY in table else -1
        gold_missing[f] = int((codes[0] == miss).sum()) if miss >= 0 else 0
        if whole and len(codes[0]) and gold_missing[f] == len(codes[0]):
            raise _missing_everywhere(f, truth_source)
        gold.codes[f] = codes[0]
        for s, c in zip(sides, codes[1:]):
            s.codes[f] = c
        is_text = np.array([k != _MISSING_KEY and key_type(k) == "t" for k in table] + [False], dtype=bool)
        tables[f] = _FieldTable(keys=table, labels=display_labels(table), missing=miss, is_text=is_text,
                                texts=[key_text(k) if k != _MISSING_KEY else "" for k in table])
    return tables, gold_missing


def _canonical(side: _Side, tables: Mapping[str, _FieldTable], fields_needed: Sequence[str], n_rec: int) -> None:
    """Order one side's entities canonically within each record (in place), so that shuffling entities cannot change
    a tie's outcome."""
    if not len(side.record):
        return
    # sort by (record, invalid last, codes of the needed fields): one stable argsort of a
    # mixed-radix key when it fits in int64 (the same permutation as lexsort, ~20× faster)
    radix = [len(tables[f].keys) + 1 for f in fields_needed]
    if n_rec * 2 * math.prod(radix) < _RADIX_LIMIT:
        key = side.record * 2 + (~side.valid)
        for f, r in zip(fields_needed, radix):
            key = key * r + side.codes[f]
        perm = np.argsort(key, kind="stable")
    else:
        perm = np.lexsort([side.codes[f] for f in reversed(fields_needed)] + [~side.valid, side.record])
    side.record = side.record[perm]
    side.valid = side.valid[perm]
    side.orig = side.orig[perm]
    side.perm = perm
    for f in fields_needed:
        side.codes[f] = side.codes[f][perm]


@dataclass
class _FieldTable:
    """Per-feature key table: label keys, their display labels, text per key for FUZZY."""

    keys: list[str]
    labels: list[str]
    missing: int  # code of <MISSING>, or -1
    is_text: np.ndarray
    texts: list[str]


_RADIX_LIMIT = 2**62  # mixed-radix sort keys must fit in int64
