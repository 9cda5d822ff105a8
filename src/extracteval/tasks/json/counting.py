"""The `json` task's count: chunks of records scored together — every leaf bucketed (extra, truth null, both
present …), compared by its strategy (EXACT on key codes, FUZZY and SEMANTIC on distinct text pairs), and RQS per
record — into a `JsonCount`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import repeat
import operator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.normalize import Normalizer
from extracteval.core.similarity import FuzzySimilarity, SimilarityBackend, describe_similarity
from extracteval.errors import InputError

from extracteval.tasks.json.config import (without_keys, BUCKETS, FieldAccuracy, JsonConfig, JsonPredictions, _BOTH, _Cells, _EXTRA, _GT_NULL_HAS, _MISSING, _NULL_BOTH,
                                           _STRATEGIES, _STRATEGY_CODE, _S_EXACT, _S_FUZZY, _S_IGNORE, _S_SEMANTIC)
from extracteval.tasks.json.paths import _KeyTable, _PathTable, _configured_strategy, _pattern, auto_strategy
from extracteval.tasks.json.leaves import _leaves
from extracteval.tasks.json.result import JsonCount, _ModelCount, _best_attainable


_NO_RECORD = object()


_CHUNK = 10_000  # records scored together: bounds the memory of the vectorised steps


def _similarity_scores(
    backend: SimilarityBackend, pair_ids: np.ndarray, key_list: Sequence[str], n_keys: int, what: str
) -> np.ndarray:
    """Similarity of every distinct (truth key, prediction key) pair, one batched call."""
    upairs, inv = np.unique(pair_ids, return_inverse=True)
    gi, ai = np.divmod(upairs, n_keys)
    texts_a = [key_list[i][2:] for i in gi]
    texts_b = [key_list[i][2:] for i in ai]
    raw = np.asarray(backend.similarity(texts_a, texts_b), dtype=np.float64).ravel()
    if raw.shape[0] != len(upairs):
        raise InputError(
            f"{what} similarity backend {getattr(backend, 'name', backend)!r} returned {raw.shape[0]} scores for {len(upairs)} pairs."
        )
    return raw[inv]


class _Positions(Mapping[str, int]):
    """Record id → position in the sorted ids, built on first use (safety scores, statuses and
    unknown ids need it; plain predictions do not)."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self._pos: dict[str, int] | None = None

    @property
    def pos(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = dict(zip(self.order, range(len(self.order))))
        return self._pos

    def __getitem__(self, rid: str) -> int:
        return self.pos[rid]

    def __contains__(self, rid: object) -> bool:
        return rid in self.pos

    def __iter__(self) -> Iterator[str]:
        return iter(self.pos)

    def __len__(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class _ModelInput:
    """One model's predictions aligned to the sorted truth ids (internal)."""

    meta: JsonPredictions
    objs: list[Mapping[str, Any]]
    safety: np.ndarray
    given: int
    flags: dict[str, tuple[str, ...]]
    excluded: np.ndarray


def _model_input(p: JsonPredictions, order: list[str], pos: Mapping[str, int], cfg: JsonConfig, truth_source: str) -> _ModelInput:
    """Align one model's records to the truth: empty objects for missing or invalid predictions
    (flagged), validated safety scores and statuses."""
    n = len(order)
    what = p.source or f"predictions of model {p.name!r}"
    records = p.records
    if type(records) is dict and set(map(type, records)) <= {str}:
        recs: Mapping[str, Any] = records  # the usual case: the ids are strings already
    else:
        recs = {str(k): v for k, v in records.items()}
    objs: list[Mapping[str, Any]]
    in_order = len(recs) == n and list(recs) == order
    if in_order:  # the predictions in id order already (every truth id found): no look-up per id
        objs = list(recs.values())
    else:
        objs = list(map(recs.get, order, repeat(_NO_RECORD)))
    # every prediction id is a truth id when as many truth ids found one as there are predictions
    if not in_order and n - sum(map(operator.is_, objs, repeat(_NO_RECORD))) != len(recs):
        extra = sorted(recs.keys() - pos.keys())
        shown = ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else "")
        raise InputError(
            f"{what}: {len(extra)} record id(s) are not in the ground truth ({truth_source}): {shown}. "
            "Every prediction must have a ground-truth record."
        )
    flags: dict[str, list[str]] = {}
    if set(map(type, objs)) != {dict}:  # some record is missing, or not an object
        for i, (rid, obj) in enumerate(zip(order, objs)):
            if obj is _NO_RECORD:
                objs[i] = {}
                flags[rid] = ["missing_prediction"]
            elif type(obj) is not dict and not isinstance(obj, Mapping):
                objs[i] = {}
                flags[rid] = [f"invalid_prediction:{type(obj).__name__}"]
    safety = np.full(n, cfg.default_safety)
    given = 0
    for rid, s in (p.safety or {}).items():
        rid = str(rid)
        if rid not in pos:
            continue
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) or not 0.0 <= float(s) <= 1.0:
            raise InputError(f"{what}: record {rid!r}: `{cfg.safety_key}` must be a number in [0, 1], but found {s!r}.")
        safety[pos[rid]] = float(s)
        given += 1
    excluded = np.zeros(n, dtype=bool)
    for rid, st in (p.status or {}).items():
        rid = str(rid)
        key = "" if st is None else str(st).strip().lower()
        if key not in ("", "ok", "pending", "error"):
            raise InputError(f"{what}: record {rid!r}: `status` must be one of ok, pending, error (or empty), but found {st!r}.")
        if key in ("pending", "error") and rid in pos:
            excluded[pos[rid]] = True
            flags.setdefault(rid, []).append(f"excluded:{key}")
    return _ModelInput(meta=p, objs=objs, safety=safety, given=given, flags={k: tuple(v) for k, v in flags.items()}, excluded=excluded)


def _align(
    t_id: np.ndarray, t_key: np.ndarray, a_id: np.ndarray, a_key: np.ndarray, nc: int, n_paths: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read and align: every leaf id met on either side, as (record, path code, truth key code,
    prediction key code) in id order; -2 where a side has no such leaf."""
    if nc * n_paths <= 4 * (len(t_id) + len(a_id)) + 1024:
        # dense id space (the usual case): scatter both sides, no sort needed
        gk_all = np.full(nc * n_paths, -2, dtype=np.int64)
        ak_all = np.full(nc * n_paths, -2, dtype=np.int64)
        gk_all[t_id] = t_key
        ak_all[a_id] = a_key
        u = np.flatnonzero((gk_all != -2) | (ak_all != -2))
        gk, ak = gk_all[u], ak_all[u]
        del gk_all, ak_all
    else:  # sparse (e.g. long lists flattened): ids are unique within each side, sort and merge
        u = np.concatenate([t_id, a_id])
        u.sort()
        if len(u) > 1:
            u = u[np.concatenate([[True], u[1:] != u[:-1]])]
        gk = np.full(len(u), -2, dtype=np.int64)
        ak = np.full(len(u), -2, dtype=np.int64)
        gk[np.searchsorted(u, t_id)] = t_key
        ak[np.searchsorted(u, a_id)] = a_key
    rec, pc = np.divmod(u, n_paths)
    return rec, pc, gk, ak


def _classify(gk: np.ndarray, ak: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each aligned leaf's primary class (extra, truth null, missing, both present, null on both
    sides) and the mask of those present on both sides."""
    g_in, a_in = gk != -2, ak != -2
    g_val, a_val = gk >= 0, ak >= 0
    cls = np.full(len(gk), _NULL_BOTH, dtype=np.int8)
    cls[~g_in & a_in] = _EXTRA
    cls[g_in & ~g_val & a_val] = _GT_NULL_HAS
    cls[g_val & ~a_val] = _MISSING
    both = g_val & a_val
    cls[both] = _BOTH
    return cls, both


def _compare(
    gk: np.ndarray, ak: np.ndarray, pc: np.ndarray, both: np.ndarray, *, keys: list[str], override: np.ndarray, auto: np.ndarray,
    key_type: np.ndarray, cfg: JsonConfig, fuzzy: SimilarityBackend, similarity: SimilarityBackend,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compare the leaves present on both sides by their strategy: EXACT on key codes, FUZZY and
    SEMANTIC on the distinct text pairs. Returns the strategy code (-1 elsewhere), the score (NaN
    where not scored or the backend failed) and whether the leaf matched."""
    n_keys = max(1, len(keys))
    strat = np.full(len(gk), -1, dtype=np.int8)
    ov = override[pc[both]]
    strat[both] = np.where(ov >= 0, ov, auto[gk[both]])
    score = np.full(len(gk), np.nan)
    equal = both & (gk == ak)
    score[equal] = 1.0
    score[both & ~equal & (strat == _S_EXACT)] = 0.0
    for code, backend, label in ((_S_FUZZY, fuzzy, "FUZZY"), (_S_SEMANTIC, similarity, "SEMANTIC")):
        cand = both & ~equal & (strat == code)
        if not cand.any():
            continue
        idx = np.flatnonzero(cand)
        g_t, a_t = key_type[gk[idx]], key_type[ak[idx]]
        # numbers, booleans and dates are never "nearly" equal: only text or JSON goes to a backend
        textual = np.isin(g_t, ("t", "j")) | np.isin(a_t, ("t", "j"))
        score[idx[~textual]] = 0.0
        ti = idx[textual]
        if len(ti):
            score[ti] = _similarity_scores(backend, gk[ti] * n_keys + ak[ti], keys, n_keys, label)
    thr = np.where(strat == _S_SEMANTIC, cfg.semantic_threshold, np.where(strat == _S_FUZZY, cfg.fuzzy_threshold, 1.0))
    with np.errstate(invalid="ignore"):
        matched = both & (score >= thr - 1e-12)
    return strat, score, matched


def _record_scores(
    rec: np.ndarray, cls: np.ndarray, scorable: np.ndarray, matched: np.ndarray, nc: int, safety: np.ndarray, cfg: JsonConfig
) -> dict[str, np.ndarray]:
    """Per record of the chunk: the bucket counts, the scored and matched leaves and the four
    phases (accuracy, completeness, hallucination, RQS)."""
    w = cfg.weights
    lo, hi = cfg.clamp
    # one bincount per grouping: (record, class), then the scored / matched subsets
    by_cls = np.bincount(rec * 5 + cls, minlength=nc * 5).reshape(nc, 5)
    cnt = {
        "extra_keys": by_cls[:, _EXTRA],
        "gt_null_aio_has_value": by_cls[:, _GT_NULL_HAS],
        "gt_non_null": by_cls[:, _MISSING] + by_cls[:, _BOTH],
        "aio_missing_or_null": by_cls[:, _MISSING],
        "both_non_null": by_cls[:, _BOTH],
    }
    total = by_cls.sum(axis=1)
    n_scored = np.bincount(rec[scorable], minlength=nc)
    n_matched = np.bincount(rec[scorable & matched], minlength=nc)
    completeness = np.divide(cnt["both_non_null"], cnt["gt_non_null"], out=np.ones(nc), where=cnt["gt_non_null"] > 0)
    halluc = np.divide(cnt["extra_keys"] + cnt["gt_null_aio_has_value"], total, out=np.zeros(nc), where=total > 0)
    accuracy = np.divide(n_matched, n_scored, out=np.ones(nc), where=n_scored > 0)
    rqs = np.clip(w.accuracy * accuracy + w.completeness * completeness + w.safety * safety - w.hallucination * halluc, lo, hi)
    # 12 decimals: the worked example's 0.45 + 0.1875 + 0.15 − 0.05 is 0.7375, not 0.73749999999999993
    rqs = np.round(rqs, 12)
    return {
        "rqs": rqs, "completeness": completeness, "hallucination": halluc, "accuracy": accuracy,
        "total_keys": total, "scored": n_scored, "matched": n_matched, **cnt,
    }


def _path_counts(
    rec: np.ndarray, pc: np.ndarray, cls: np.ndarray, strat: np.ndarray, both: np.ndarray, scorable: np.ndarray,
    matched: np.ndarray, failures: np.ndarray, n_paths: int, excluded: np.ndarray,
) -> tuple[tuple[Any, ...], np.ndarray]:
    """Per raw path code (mapped to fields once all paths are known), excluded records left out:
    (n_paths, class counts, scored, matched, failures, strategy counts), and the mask of the
    leaves kept."""
    keep = ~excluded[rec] if excluded.any() else np.ones(len(rec), dtype=bool)
    kb = both & keep
    fields = (
        n_paths,
        np.bincount((pc * 5 + cls)[keep], minlength=n_paths * 5).reshape(n_paths, 5),
        np.bincount(pc[scorable & keep], minlength=n_paths),
        np.bincount(pc[scorable & matched & keep], minlength=n_paths),
        np.bincount(pc[failures & keep], minlength=n_paths),
        np.bincount(pc[kb] * 4 + strat[kb], minlength=n_paths * 4).reshape(n_paths, 4),
    )
    return fields, keep


def _score_chunk(
    t_id: np.ndarray,
    t_key: np.ndarray,
    a_id: np.ndarray,
    a_key: np.ndarray,
    *,
    nc: int,
    n_paths: int,
    keys: list[str],
    override: np.ndarray,
    auto: np.ndarray,
    key_type: np.ndarray,
    safety: np.ndarray,
    excluded: np.ndarray,
    cfg: JsonConfig,
    fuzzy: SimilarityBackend,
    similarity: SimilarityBackend,
) -> tuple[dict[str, np.ndarray], tuple[Any, ...], int, _Cells]:
    """Phases 0–4 for one chunk of `nc` records of one model: align (`_align`), class
    (`_classify`), compare (`_compare`), count per record (`_record_scores`) and per path
    (`_path_counts`).

    Leaves are identified by `record * n_paths + path code` (truth `t_*`, prediction `a_*`).
    Returns the per-record arrays, the per-path-code counts (excluded records left out), the
    number of similarity failures and the per-cell listing (record index local to the chunk).
    """
    rec, pc, gk, ak = _align(t_id, t_key, a_id, a_key, nc, n_paths)
    cls, both = _classify(gk, ak)
    strat, score, matched = _compare(gk, ak, pc, both, keys=keys, override=override, auto=auto, key_type=key_type, cfg=cfg,
                                     fuzzy=fuzzy, similarity=similarity)
    scorable = both & (strat != _S_IGNORE)
    failures = scorable & np.isnan(score)
    per_record = _record_scores(rec, cls, scorable, matched, nc, safety, cfg)
    fields, keep = _path_counts(rec, pc, cls, strat, both, scorable, matched, failures, n_paths, excluded)
    cells = _Cells(
        rec=rec.astype(np.int32),
        path=pc.astype(np.int32),
        cls=cls,
        strategy=strat,
        score=np.where(both, score, np.nan),
        matched=matched,
    )
    return per_record, fields, int((failures & keep).sum()), cells


def _truth_in_order(
    truth: Mapping[str, Any], predictions: Sequence[JsonPredictions], truth_source: str
) -> tuple[list[str], list[Mapping[str, Any]]]:
    """Read and check the inputs: the models' names (given, unique) and the truth (a mapping of
    record id to object). Returns the sorted record ids and their truth objects in that order."""
    if not predictions:
        raise InputError("no predictions: give at least one model's predictions.")
    seen: set[str] = set()
    for p in predictions:
        if not isinstance(p.name, str) or not p.name.strip():
            raise InputError(f"{p.source or 'predictions'}: a model name must not be empty.")
        if p.name in seen:
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)
    if not isinstance(truth, Mapping):
        raise InputError(f"{truth_source}: expected a mapping of record id to JSON object, but got {type(truth).__name__}.")
    if set(map(type, truth)) <= {str}:  # the usual case: the ids are strings already
        order = sorted(truth)
        # in id order already (a sorted file): the values as they are, no look-up per id
        truth_objs: list[Mapping[str, Any]] = (
            list(truth.values()) if type(truth) is dict and list(truth) == order else list(map(truth.__getitem__, order))
        )
    else:
        truth_ids = {str(k): k for k in truth}
        if len(truth_ids) != len(truth):
            raise InputError(f"{truth_source}: record ids must be unique as strings.")
        order = sorted(truth_ids)
        truth_objs = [truth[truth_ids[rid]] for rid in order]
    if set(map(type, truth_objs)) - {dict}:
        for rid, obj in zip(order, truth_objs):
            if type(obj) is not dict and not isinstance(obj, Mapping):
                raise InputError(f"{truth_source}: record {rid!r}: the ground truth must be a JSON object, but found {type(obj).__name__}.")
    return order, truth_objs


class _Strategies:
    """Per path code the configured strategy (-1 = auto); per key code the auto strategy and type
    letter. Both grow as new paths and values appear, chunk after chunk (`extend`)."""

    def __init__(self, cfg: JsonConfig) -> None:
        self.cfg = cfg
        self.override = np.zeros(0, dtype=np.int8)
        self.auto = np.zeros(0, dtype=np.int8)
        self.key_type = np.zeros(0, dtype="<U1")
        self.used_config: set[str] = set()  # the configured patterns some path took its strategy from

    def extend(self, table: _PathTable, keytab: _KeyTable) -> None:
        """Add the paths and key codes met since the last call."""
        cfg = self.cfg
        k0 = len(self.override)
        if len(table.names) > k0:
            new = np.full(len(table.names) - k0, -1, dtype=np.int8)
            if cfg.strategies:
                for i, pth in enumerate(table.names[k0:]):
                    found = _configured_strategy(pth, cfg.strategies, cfg.flatten)
                    if found is not None:
                        self.used_config.add(found[0])
                        new[i] = _STRATEGY_CODE[found[1]]
            self.override = np.concatenate([self.override, new])
        a0 = len(self.auto)
        if len(keytab.keys) > a0:
            fresh = keytab.keys[a0:]
            letters = np.asarray([k[0] for k in fresh], dtype="<U1")
            new_auto = np.full(len(fresh), _S_EXACT, dtype=np.int8)  # `auto_strategy`: EXACT but for text
            for i in np.flatnonzero(letters == "t").tolist():
                new_auto[i] = _STRATEGY_CODE[auto_strategy(fresh[i])]
            self.auto = np.concatenate([self.auto, new_auto])
            self.key_type = np.concatenate([self.key_type, letters])


_PER_RECORD_KEYS = ("rqs", "completeness", "hallucination", "accuracy", "total_keys", "scored", "matched", *BUCKETS)


def _count_chunks(
    truth_objs: list[Mapping[str, Any]], models_in: list[_ModelInput], cfg: JsonConfig, table: _PathTable, keytab: _KeyTable,
    strategies: _Strategies, fuzzy: SimilarityBackend, similarity: SimilarityBackend,
) -> dict[str, dict[str, Any]]:
    """Count every model's records chunk by chunk (`_count_chunk`). Returns per model name its
    per-chunk per-record arrays, per-path counts and cells, and its number of similarity failures."""
    n = len(truth_objs)
    acc: dict[str, dict[str, Any]] = {
        mi.meta.name: {"per_record": {k: [] for k in _PER_RECORD_KEYS}, "cells": [], "fields": [], "failures": 0} for mi in models_in
    }
    # Records are scored in chunks: every array below is bounded by the chunk, so memory stays
    # flat however many records there are; only per-record results and per-cell listings grow.
    for c0 in range(0, n, _CHUNK):
        _count_chunk(truth_objs, models_in, c0, min(n, c0 + _CHUNK), acc, cfg, table, keytab, strategies, fuzzy, similarity)
    return acc


def _count_chunk(
    truth_objs: list[Mapping[str, Any]], models_in: list[_ModelInput], c0: int, c1: int, acc: dict[str, dict[str, Any]],
    cfg: JsonConfig, table: _PathTable, keytab: _KeyTable, strategies: _Strategies, fuzzy: SimilarityBackend,
    similarity: SimilarityBackend,
) -> None:
    """Records `c0:c1` of every model: their leaves gathered (`_leaves`), scored (`_score_chunk`)
    and added to each model's accumulator in `acc`."""
    nc = c1 - c0
    (t_rec, t_path, t_key), *sides = _leaves([truth_objs[c0:c1], *(mi.objs[c0:c1] for mi in models_in)], cfg.flatten, table, keytab)
    strategies.extend(table, keytab)
    n_paths = max(1, len(table.names))
    t_id = t_rec * n_paths + t_path
    del t_rec, t_path

    for mi, (a_rec, a_path, a_key) in zip(models_in, sides):
        a_id = a_rec * n_paths + a_path
        del a_rec, a_path
        per_record, fields, n_fail, cells = _score_chunk(
            t_id, t_key, a_id, a_key, nc=nc, n_paths=n_paths, keys=keytab.keys, override=strategies.override, auto=strategies.auto,
            key_type=strategies.key_type, safety=mi.safety[c0:c1], excluded=mi.excluded[c0:c1], cfg=cfg, fuzzy=fuzzy,
            similarity=similarity,
        )
        a = acc[mi.meta.name]
        for k, v in per_record.items():
            a["per_record"][k].append(v)
        a["fields"].append(fields)
        a["failures"] += n_fail
        a["cells"].append(_Cells(rec=cells.rec + np.int32(c0), path=cells.path, cls=cells.cls, strategy=cells.strategy,
                                 score=cells.score, matched=cells.matched))
    del sides, t_id, t_key


@dataclass(frozen=True)
class _PathOrder:
    """The leaf paths in name order and the fields they fall in (internal)."""

    paths: tuple[str, ...]  # leaf path names, sorted
    fields: tuple[str, ...]  # per-field table keys, sorted
    n_codes: int  # path codes met (containers included)
    leaf_codes: np.ndarray  # the path codes of leaves, ascending
    rank: np.ndarray  # path code → position in `paths` (-1: not a leaf)
    field_of_code: np.ndarray  # path code → position in `fields`


def _path_order(table: _PathTable, acc: Mapping[str, Mapping[str, Any]], flatten: bool) -> _PathOrder:
    """Path names in name order (listings and tables never depend on input order); containers
    (parents of leaves) have codes but are not keys themselves. Per-field table keys: the path
    pattern (items[*].price) when flattening."""
    n_codes = len(table.names)
    used = np.zeros(n_codes, dtype=bool)
    for a in acc.values():
        for c in a["cells"]:
            used[c.path] = True
    leaf_codes = np.flatnonzero(used)
    names = np.asarray(table.names, dtype=object)[leaf_codes] if n_codes else np.zeros(0, dtype=object)
    order_idx = np.argsort(names.astype(str), kind="stable") if len(names) else np.zeros(0, dtype=np.int64)
    rank = np.full(max(1, n_codes), -1, dtype=np.int64)
    rank[leaf_codes[order_idx]] = np.arange(len(names))
    path_names = tuple(str(x) for x in names[order_idx])

    if flatten:
        fcodes_u, funiq = pd.factorize(np.asarray([_pattern(x) for x in path_names], dtype=object), sort=True)
        field_of_rank, field_names = fcodes_u.astype(np.int64), tuple(str(x) for x in funiq)
    else:
        field_of_rank, field_names = np.arange(len(path_names), dtype=np.int64), path_names
    field_of_code = np.full(max(1, n_codes), 0, dtype=np.int64)
    field_of_code[leaf_codes[order_idx]] = field_of_rank
    return _PathOrder(paths=path_names, fields=field_names, n_codes=n_codes, leaf_codes=leaf_codes, rank=rank, field_of_code=field_of_code)


def _to_fields(arr: np.ndarray, po: _PathOrder) -> np.ndarray:
    """Sum rows of a per-code array into per-field rows (only leaf codes carry counts)."""
    out = np.zeros((len(po.fields), *arr.shape[1:]), dtype=np.int64)
    if len(po.leaf_codes):
        np.add.at(out, po.field_of_code[po.leaf_codes], arr[po.leaf_codes])
    return out


def _field_accuracies(chunk_fields: list[tuple[Any, ...]], po: _PathOrder) -> dict[str, FieldAccuracy]:
    """Ledger per field: the chunks' per-path counts added up, summed into fields; a field null on
    both sides everywhere is left out."""
    n_codes = po.n_codes
    sums = [np.zeros((max(1, n_codes), 5), dtype=np.int64), *(np.zeros(max(1, n_codes), dtype=np.int64) for _ in range(3)),
            np.zeros((max(1, n_codes), 4), dtype=np.int64)]
    for chunk_paths, *arrays in chunk_fields:
        for total_arr, arr in zip(sums, arrays):
            total_arr[:chunk_paths] += arr
    f_cls, f_scored, f_matched, f_fail, f_st = (_to_fields(x, po) for x in sums)
    fields_out: dict[str, FieldAccuracy] = {}
    for j, fname in enumerate(po.fields):
        counts_j = {
            "extra_keys": int(f_cls[j, _EXTRA]),
            "gt_null_aio_has_value": int(f_cls[j, _GT_NULL_HAS]),
            "gt_non_null": int(f_cls[j, _MISSING] + f_cls[j, _BOTH]),
            "aio_missing_or_null": int(f_cls[j, _MISSING]),
            "both_non_null": int(f_cls[j, _BOTH]),
        }
        if counts_j["extra_keys"] + counts_j["gt_null_aio_has_value"] + counts_j["gt_non_null"] == 0:
            continue  # null on both sides everywhere for this model: nothing to report
        fields_out[fname] = FieldAccuracy(
            field=fname,
            counts=counts_j,
            scored=int(f_scored[j]),
            matched=int(f_matched[j]),
            ignored=int(f_st[j, _S_IGNORE]),
            similarity_failures=int(f_fail[j]),
            strategies={_STRATEGIES[c].value: int(f_st[j, c]) for c in range(len(_STRATEGIES)) if f_st[j, c]},
        )
    return fields_out


def _merged_cells(a: dict[str, Any], rank: np.ndarray) -> _Cells:
    """The chunks' cells end to end, column by column, each chunk's column released once copied:
    the peak is one more column, not a second copy of every cell. Path codes become name ranks."""
    cells = a.pop("cells")
    parts = {name: [getattr(c, name) for c in cells] for name in ("rec", "path", "cls", "strategy", "score", "matched")}
    cells.clear()
    return _Cells(
        rec=_end_to_end(parts["rec"], np.int32),
        path=_end_to_end(parts["path"], np.int32, via=rank.astype(np.int32)),
        cls=_end_to_end(parts["cls"], np.int8),
        strategy=_end_to_end(parts["strategy"], np.int8),
        score=_end_to_end(parts["score"], np.float64),
        matched=_end_to_end(parts["matched"], np.bool_),
    )


def _model_count(mi: _ModelInput, a: dict[str, Any], po: _PathOrder) -> _ModelCount:
    """One model's result: its per-record arrays joined, its field ledger and its cells."""
    p = mi.meta
    pr: dict[str, np.ndarray] = {
        k: (np.concatenate(v) if v else np.zeros(0, dtype=np.float64 if k in ("rqs", "completeness", "hallucination", "accuracy") else np.int64))
        for k, v in a["per_record"].items()
    }
    pr["safety"] = mi.safety
    fields_out = _field_accuracies(a["fields"], po)
    merged = _merged_cells(a, po.rank)
    return _ModelCount(meta=p, per_record=pr, cells=merged, fields=fields_out, given=mi.given, flags=mi.flags,
                       keep=~mi.excluded, failures=a["failures"])


def _config_dict(cfg: JsonConfig, similarity: SimilarityBackend, fuzzy: SimilarityBackend) -> dict[str, Any]:
    """The configuration as reported: the options, the backends and the best attainable RQS."""
    cfg_dict = cfg.to_dict()
    sem = describe_similarity(similarity)
    cfg_dict["similarity"] = {"semantic": sem, "fuzzy": describe_similarity(fuzzy)}
    cfg_dict["semantic_backend"] = sem.get("name", "custom")
    cfg_dict["rqs_best_attainable"] = _best_attainable(cfg)
    cfg_dict["null_tokens"] = sorted(cfg.normalization.null_tokens)
    return cfg_dict


def count_json(
    truth: Mapping[str, Any],
    predictions: Sequence[JsonPredictions],
    *,
    config: JsonConfig,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    truth_source: str = "truth",
) -> JsonCount:
    """The four phases of every record of `truth` for every model (the arguments of `score_json`):
    per-record and per-cell scores and the per-field counts, before any mean or ranking. The
    in-memory score reduces the count of all records; the chunked and Spark engines add up the
    ledgers of the counts of their chunks and reduce them the same way (`json_result`).

    Stages: read and align (`_truth_in_order`, `_model_input`), count chunk by chunk
    (`_count_chunks`), order the paths (`_path_order`), one result per model (`_model_count`)."""
    cfg = config
    if cfg.metadata:  # keys that describe the record are no part of its truth or of a prediction
        truth = without_keys(truth, cfg.metadata)
        predictions = [replace(p, records=without_keys(p.records, cfg.metadata)) for p in predictions]
    order, truth_objs = _truth_in_order(truth, predictions, truth_source)
    normalizer = Normalizer(cfg.normalization)
    if similarity is None:
        from extracteval.core.similarity import LexicalSimilarity

        similarity = LexicalSimilarity()
    fuzzy = fuzzy_similarity or FuzzySimilarity(scorer=cfg.fuzzy_scorer)
    pos = _Positions(order)

    models_in = [_model_input(p, order, pos, cfg, truth_source) for p in sorted(predictions, key=lambda x: x.name)]

    table = _PathTable()
    keytab = _KeyTable(normalizer)
    strategies = _Strategies(cfg)
    acc = _count_chunks(truth_objs, models_in, cfg, table, keytab, strategies, fuzzy, similarity)

    po = _path_order(table, acc, cfg.flatten)
    unused = sorted(set(cfg.strategies) - strategies.used_config)
    models_out: dict[str, _ModelCount] = {mi.meta.name: _model_count(mi, acc[mi.meta.name], po) for mi in models_in}
    return JsonCount(order=tuple(order), paths=po.paths, fields=po.fields, models=models_out, config=_config_dict(cfg, similarity, fuzzy),
                     unused=tuple(unused))


def _end_to_end(parts: list[np.ndarray | None], dtype: Any, *, via: np.ndarray | None = None) -> np.ndarray:
    """`np.concatenate(parts)` (of `via[part]` when given) into one array, releasing each part
    from the list once it is copied, so the memory of both is never held at once."""
    out = np.empty(sum(len(p) for p in parts if p is not None), dtype=dtype)
    at = 0
    for i, part in enumerate(parts):
        assert part is not None
        n = len(part)
        out[at:at + n] = part if via is None else via[part]
        at += n
        parts[i] = None
    return out
