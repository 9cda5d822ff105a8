"""The `fields` task's count: records aligned by id, then each field's values dictionary-encoded across the truth
and every model together, each distinct value canonicalised once, and every cell classified (TP, FP, FN, TN) by
vectorised comparisons of integer codes (distinct pairs only for FUZZY and multi-valued cells)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.matching import max_matching
from extracteval.core.normalize import Normalizer, key_text, key_type
from extracteval.core.similarity import FuzzySimilarity
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError
from extracteval.tasks.fields.config import STATUSES, _STATUS_CODE


def _str_index(index: pd.Index) -> pd.Index:
    return index if index.dtype == object and pd.api.types.infer_dtype(index) == "string" else index.astype(str)


def _sorted_ids(index: pd.Index) -> np.ndarray:
    return np.sort(np.asarray(index.to_numpy(dtype=object), dtype=object))


def _check_unique(ids: pd.Index, what: str) -> None:
    if ids.has_duplicates:
        dup = sorted({str(x) for x in ids[ids.duplicated()]})
        shown = ", ".join(repr(d) for d in dup[:5]) + (" …" if len(dup) > 5 else "")
        raise InputError(f"{what}: record ids must be unique; found {len(dup)} duplicated: {shown}.")


def _column_codes(
    frame: pd.DataFrame, column: str, indexer: np.ndarray, keep: dict[str, tuple[np.ndarray, Any]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary-encode one column in its own row order (fast for Arrow-backed strings), then
    align the codes to the sorted record order. Returns (codes, uniques); code -1 = missing.
    `keep`: receives `keep[column] = (codes in the frame's row order as int32, uniques)` when the
    column's cells were factorised as they are (not spelled out or made hashable first)."""
    if column not in frame.columns:
        return np.full(len(indexer), -1, dtype=np.int64), np.zeros(0, dtype=object)
    col = frame[column]
    plain = True
    if pd.api.types.infer_dtype(col, skipna=True) in ("boolean", "mixed", "mixed-integer", "mixed-integer-float"):
        # hashing makes True == 1 == 1.0; spell booleans out so they stay distinct values
        col = col.map(lambda v: ("true" if v else "false") if isinstance(v, (bool, np.bool_)) else v)
        plain = False
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:  # lists or dicts in the cells: make them hashable first
        hashed = np.fromiter((_hashable(v) for v in col.to_numpy(dtype=object)), dtype=object, count=len(col))
        codes, uniques = pd.factorize(hashed, use_na_sentinel=True)
        plain = False
    if keep is not None and plain and isinstance(col, pd.Series):
        keep[column] = (np.asarray(codes, dtype=np.int32), uniques)
    codes = np.asarray(codes, dtype=np.int64)
    aligned = np.where(indexer >= 0, codes[np.maximum(indexer, 0)], -1) if len(codes) else np.full(len(indexer), -1, dtype=np.int64)
    return aligned, np.asarray(uniques, dtype=object)


def _status_codes(status: pd.Series | pd.DataFrame | None, order: np.ndarray, fields: Sequence[str], what: str) -> np.ndarray:
    """(records, fields) array of status codes; records missing from the predictions are `ok`."""
    n, f = len(order), len(fields)
    out = np.zeros((n, f), dtype=np.int8)
    if status is None:
        return out

    def encode(values: pd.Series) -> np.ndarray:
        raw = values.reindex(order).to_numpy(dtype=object, na_value="")
        codes, uniques = pd.factorize(raw)
        lut = np.empty(len(uniques), dtype=np.int8)
        for i, u in enumerate(uniques):
            key = str(u).strip().lower()
            if key not in _STATUS_CODE:
                bad = order[np.flatnonzero(codes == i)[0]]
                raise InputError(
                    f"{what}: record {bad!r}: column 'status' must be one of {', '.join(STATUSES)} (or empty), but found {u!r}."
                )
            lut[i] = _STATUS_CODE[key]
        return lut[codes] if len(codes) else np.zeros(0, dtype=np.int8)

    if isinstance(status, pd.DataFrame):
        for j, fname in enumerate(fields):
            if fname in status.columns:
                out[:, j] = encode(status[fname])
    else:
        out[:] = encode(status)[:, None]
    return out


@dataclass
class _Encoded:
    """A field's values dictionary-encoded across truth and every model."""

    codes: np.ndarray  # (1 + n_models, n) codes into `uniques`, -1 = missing
    uniques: list[Any]
    canon: np.ndarray  # per unique: index into `keys`, -1 = absent; last entry is -1 (for code -1)
    keys: list[str]  # distinct canonical keys of scalar uniques
    multi: np.ndarray  # per unique (+1): True when the unique is a list/tuple/set of values
    elements: dict[int, tuple[str, ...]]  # multi unique index → distinct canonical element keys


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, set):
        return tuple(sorted((_hashable(x) for x in v), key=repr))
    if isinstance(v, dict):
        return ("__dict__", tuple(sorted((str(k), _hashable(x)) for k, x in v.items())))
    return v


def _encode(columns: list[tuple[np.ndarray, np.ndarray]], normalizer: Normalizer) -> _Encoded:
    """Merge per-column dictionaries into one, then canonicalise each distinct value once."""
    all_uniques = np.concatenate([u for _, u in columns]) if columns else np.zeros(0, dtype=object)
    gcodes, uniques_arr = pd.factorize(all_uniques, use_na_sentinel=True) if len(all_uniques) else (np.zeros(0, dtype=np.int64), [])
    gcodes = np.append(np.asarray(gcodes, dtype=np.int64), -1)  # local code -1 → global -1
    rows = []
    offset = 0
    for codes, u in columns:
        local_to_global = np.concatenate([gcodes[offset : offset + len(u)], [-1]])
        rows.append(local_to_global[codes])  # codes of -1 pick the trailing -1
        offset += len(u)
    uniques = list(uniques_arr)
    n_u = len(uniques)
    canon_keys: list[str | None] = []
    multi = np.zeros(n_u + 1, dtype=bool)
    elements: dict[int, tuple[str, ...]] = {}
    scalar_idx: list[int] = []
    for i, u in enumerate(uniques):
        if isinstance(u, tuple) and not (len(u) == 2 and u[0] == "__dict__"):
            multi[i] = True
            elems = {normalizer.key(_unhash(x)) for x in u}
            elems.discard(None)
            elements[i] = tuple(sorted(elems))
            canon_keys.append(None)
        else:
            canon_keys.append(None)
            scalar_idx.append(i)
    for i, k in zip(scalar_idx, normalizer.keys([_unhash(uniques[i]) for i in scalar_idx])):
        canon_keys[i] = k
    kcodes, kuniq = pd.factorize(np.asarray(canon_keys, dtype=object), use_na_sentinel=True)
    canon = np.append(np.asarray(kcodes, dtype=np.int64), -1)
    return _Encoded(
        codes=np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.int64),
        uniques=uniques,
        canon=canon,
        keys=list(kuniq),
        multi=multi,
        elements=elements,
    )


def _unhash(v: Any) -> Any:
    if isinstance(v, tuple):
        if len(v) == 2 and v[0] == "__dict__":
            return {k: _unhash(x) for k, x in v[1]}
        return [_unhash(x) for x in v]
    return v


def _set_counts(t: tuple[str, ...], p: tuple[str, ...], strategy: Strategy, sim: FuzzySimilarity, threshold: float) -> tuple[int, int, int, int]:
    """tp, fp, fn, tn of one multi-valued cell: optimal one-to-one matching of the two sets."""
    if not t and not p:
        return 0, 0, 0, 1
    if strategy is Strategy.EXACT:
        matched = len(set(t) & set(p))
    else:
        score = np.zeros((len(t), len(p)))
        for i, a in enumerate(t):
            for j, b in enumerate(p):
                score[i, j] = _pair_similarity(a, b, sim)
        matched = len(max_matching(score, threshold))
    return matched, len(p) - matched, len(t) - matched, 0


def _pair_similarity(a: str, b: str, sim: FuzzySimilarity) -> float:
    if a == b:
        return 1.0
    if key_type(a) != "t" or key_type(b) != "t":
        return 0.0  # numbers, dates and booleans are equal only when their canonical forms are
    return float(sim.similarity([key_text(a)], [key_text(b)])[0])


def _classify_field(
    enc: _Encoded, strategy: Strategy, sim: FuzzySimilarity, threshold: float
) -> np.ndarray:
    """(n_models, n, 4) counts tp, fp, fn, tn for every model's cell of one field."""
    codes = enc.codes
    t_codes = codes[0]
    n_models = codes.shape[0] - 1
    n = codes.shape[1]
    out = np.zeros((n_models, n, 4), dtype=np.int32)
    t = enc.canon[t_codes]
    t_multi = enc.multi[t_codes]
    for m in range(n_models):
        p_codes = codes[m + 1]
        p = enc.canon[p_codes]
        scalar = ~(t_multi | enc.multi[p_codes])
        t_abs, p_abs = t < 0, p < 0
        equal = (t == p) & ~t_abs
        if strategy is Strategy.FUZZY:
            cand = scalar & ~t_abs & ~p_abs & ~equal
            if cand.any():
                pair = t[cand] * (len(enc.keys) + 1) + p[cand]
                upairs, inv = np.unique(pair, return_inverse=True)
                ti, pi = np.divmod(upairs, len(enc.keys) + 1)
                ok = np.fromiter(
                    (_pair_similarity(enc.keys[a], enc.keys[b], sim) >= threshold for a, b in zip(ti, pi)),
                    dtype=bool,
                    count=len(upairs),
                )
                idx = np.flatnonzero(cand)
                equal[idx] = ok[inv]
        out[m, :, 0] = equal
        out[m, :, 1] = ~p_abs & ~equal
        out[m, :, 2] = ~t_abs & ~equal
        out[m, :, 3] = t_abs & p_abs
        if not scalar.all():
            idx = np.flatnonzero(~scalar)
            u = len(enc.uniques) + 1
            # codes are ≥ -1: shift by one so the pair key is unique and decodes back
            pair = (t_codes[idx].astype(np.int64) + 1) * (u + 1) + (p_codes[idx] + 1)
            upairs, inv = np.unique(pair, return_inverse=True)
            per_pair = np.empty((len(upairs), 4), dtype=np.int32)
            for k, up in enumerate(upairs):
                tc, pc = divmod(int(up), u + 1)
                tc, pc = tc - 1, pc - 1
                per_pair[k] = _set_counts(_elements(enc, tc), _elements(enc, pc), strategy, sim, threshold)
            out[m, idx, :] = per_pair[inv]
    return out


def _elements(enc: _Encoded, code: int) -> tuple[str, ...]:
    if code < 0 or code >= len(enc.uniques):
        return ()
    if enc.multi[code]:
        return enc.elements[code]
    k = enc.canon[code]
    return () if k < 0 else (enc.keys[k],)


def _display(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, tuple):
        return [_display(x) for x in v]
    return v


def _examples(c: np.ndarray, excl: np.ndarray, enc: _Encoded, mi: int, order: np.ndarray, k: int) -> dict[str, list[dict[str, Any]]]:
    """Up to k examples of each classification kind, first record ids first (deterministic)."""
    tp, fp, fn, tn = c[:, 0] > 0, c[:, 1] > 0, c[:, 2] > 0, c[:, 3] > 0
    masks = {
        "tp": tp & ~fp & ~fn,
        "fp": fp & ~fn,
        "fn": fn & ~fp,
        "tn": tn,
        "wrong": fp & fn,
        "excluded": excl,
    }
    out: dict[str, list[dict[str, Any]]] = {}
    t_codes, p_codes = enc.codes[0], enc.codes[mi + 1]
    for kind, mask in masks.items():
        idx = np.flatnonzero(mask)[:k]
        if len(idx) == 0:
            continue
        out[kind] = [
            {
                "record_id": str(order[i]),
                "truth": _display(enc.uniques[t_codes[i]]) if t_codes[i] >= 0 else None,
                "prediction": _display(enc.uniques[p_codes[i]]) if p_codes[i] >= 0 else None,
            }
            for i in idx
        ]
    return out
