"""The `entities` task's ledger: per model and feature, the counts keyed by canonical label, the gold entities
missing each field, the value pairs a SEMANTIC field's backend scored and the exact sum of match similarities —
what chunks of records merge.

Alignment is per record, so a set of records can be scored on its own; what depends on the whole
data set is kept mergeable: per-feature counts keyed by *canonical* label key (display labels are
resolved at the end), the gold entities missing each field, the distinct value pairs a SEMANTIC
field's backend scored, the sum of match similarities as an exact integer."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.ledger import Ledger, by_key, first_each, first_given, keep, merge, smallest, sorted_union, union, updated
from extracteval.core.counts import Counts
from extracteval.core.feature_views import (
    FeatureLedger,
    ledger_from_codes,
)
from extracteval.core.similarity import SimilarityBackend
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError
from extracteval.tasks.entities.config import EntitiesConfig, ModelEntities
from extracteval.tasks.entities.counting import EntitiesPlan, _Prepared, _Side, _prepare, _strict_label_rows, gold_fields_of
from extracteval.tasks.entities.matching import _Matches, _SemanticTable, _align_all, _backend, _fuzzy_scores, _semantic_scores


_SHOWN_IDS = 5


_SIM_UNIT = 1130  # sums of similarities are kept exactly, as whole numbers of 2**-_SIM_UNIT


def _exact_sum(x: np.ndarray) -> int:
    """Σx without rounding, in units of 2**-_SIM_UNIT (every float64 ≥ 2**-1074 is a whole
    number of them): sums of parts add up to the sum of the whole, bit for bit."""
    if not len(x):
        return 0
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    mant = (m * 2.0**53).astype(np.int64)  # exact: a float64 has 53 significant bits
    total = 0
    for ex in np.unique(e).tolist():
        sel = mant[e == ex]
        # in two 26/27-bit halves so that int64 sums cannot overflow
        hi, lo = int((sel >> 26).sum()), int((sel & ((1 << 26) - 1)).sum())
        total += ((hi << 26) + lo) << (ex - 53 + _SIM_UNIT)
    return total


@dataclass(frozen=True, kw_only=True)
class EntitiesModelLedger(Ledger):
    """One model's counts over a set of records (see `EntitiesLedger`)."""

    matched: Mapping[str, FeatureLedger] = merge(by_key())  # feature → counts keyed by canonical label key
    strict: Mapping[str, FeatureLedger] = merge(by_key())
    presence: Counts  # tp matched, fp extra, fn missed, tn records both empty, cells records
    invalid: int
    correct_rows: int
    sim_sum: int  # Σ similarity of matched pairs, exactly (`_exact_sum`)
    missing_recs: int
    missing_ids: tuple[str, ...] = merge(smallest(_SHOWN_IDS))  # the smallest few
    extra_recs: int
    extra_ids: tuple[str, ...] = merge(smallest(_SHOWN_IDS))
    examples: Mapping[str, tuple[Any, ...]] = merge(first_each("max_examples"))  # the first few, in record order
    invalid_first: str | None = merge(first_given)
    unknown_keys: frozenset[str] = merge(union)
    max_examples: int = merge(keep)


@dataclass(frozen=True, kw_only=True)
class EntitiesLedger(Ledger):
    """Counts of a set of records, mergeable with `+` (disjoint sets of record ids, added in id
    order so that the first examples stay the first)."""

    n_records: int  # ground-truth records
    gold_fields: tuple[str, ...] = merge(sorted_union)  # fields of the gold entities (sorted)
    gold_entities: int
    keys: Mapping[str, frozenset[str]] = merge(by_key(union))  # field → canonical keys seen on any side
    gold_missing: Mapping[str, int] = merge(by_key())  # field → gold entities without it
    # SEMANTIC field → distinct key pair scored → the backend failed
    semantic: Mapping[str, Mapping[tuple[str, str], bool]] = merge(by_key(updated))
    models: Mapping[str, EntitiesModelLedger] = merge(by_key())


def entities_ledger(
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Sequence[ModelEntities],
    *,
    config: EntitiesConfig,
    truth_source: str = "truth",
    similarity: SimilarityBackend | None = None,
    plan: EntitiesPlan | None = None,
) -> tuple[EntitiesLedger, dict[str, pd.DataFrame]]:
    """The ledger of these records (aligned and scored), and per model the per-record frame.

    `plan`: resolved from the fields of the whole truth when these records are a part of it
    (the chunked engine); without it these records are the whole data set."""
    cfg = config
    if not predictions:
        raise InputError("no predictions: give at least one model's predictions.")
    preds = sorted(predictions, key=lambda x: x.name)
    prep = _prepare(truth, preds, cfg, truth_source, plan=plan)
    gold, tables = prep.gold, prep.tables
    backend = _backend(similarity)
    all_matches, sem = _align_all(prep, cfg, backend)
    models: dict[str, EntitiesModelLedger] = {}
    per_record: dict[str, pd.DataFrame] = {}
    for p, side, recs, matches in zip(preds, prep.sides, prep.pred_records, all_matches):
        models[p.name], per_record[p.name] = _model_ledger(prep, p, side, recs, matches, cfg, sem)
    ledger = EntitiesLedger(
        n_records=len(prep.truth), gold_fields=tuple(gold_fields_of(gold.raw)), gold_entities=len(gold.record),
        keys={f: frozenset(tables[f].keys) for f in prep.fields_needed}, gold_missing=prep.gold_missing,
        semantic=_semantic_pairs(prep, cfg, sem), models=models,
    )
    return ledger, per_record


def _field_ledgers(prep: _Prepared, side: _Side, cfg: EntitiesConfig, sem: Mapping[str, _SemanticTable], mg: np.ndarray, mp: np.ndarray,
                   un_g: np.ndarray, un_p: np.ndarray) -> tuple[dict[str, dict[str, FeatureLedger]], np.ndarray, list[list[tuple[str, str, int, int, int]]]]:
    """One model's count of each scored field: the matched and strict views' ledgers, which matched pairs agree
    on every field, and each record's strict one-vs-rest label rows."""
    gold, tables = prep.gold, prep.tables
    ledgers: dict[str, dict[str, FeatureLedger]] = {"matched": {}, "strict": {}}
    ok = np.ones(len(mg), dtype=bool)
    label_rows: list[list[tuple[str, str, int, int, int]]] = [[] for _ in range(len(prep.order))]
    for f in prep.scored:
        t = tables[f]
        a, b = gold.codes[f][mg], side.codes[f][mp]
        strategy = cfg.strategy_for(f)
        if strategy is Strategy.FUZZY:
            correct = _fuzzy_scores(a, b, t, cfg.fuzzy_scorer) >= cfg.fuzzy_threshold
            b = np.where(correct, a, b)  # a fuzzy-equal value predicts the gold label
        elif strategy is Strategy.SEMANTIC:
            sc, scored_pair = _semantic_scores(a, b, t, sem[f])
            with np.errstate(invalid="ignore"):  # NaN (backend failure) is never correct
                correct = (a == b) | (scored_pair & (sc >= cfg.semantic_threshold - 1e-12))
            b = np.where(correct, a, b)  # a semantically equal value predicts the gold label
        ok &= a == b
        ledgers["matched"][f] = ledger_from_codes(a, b, t.keys)
        ledgers["strict"][f] = ledger_from_codes(a, b, t.keys, missing_truth=gold.codes[f][un_g], extra_pred=side.codes[f][un_p])
        _strict_label_rows(label_rows, f, t.keys, gold.record[mg], a, b, gold.record[un_g], gold.codes[f][un_g], side.record[un_p], side.codes[f][un_p])
    return ledgers, ok, label_rows


def _model_examples(prep: _Prepared, side: _Side, mg: np.ndarray, mp: np.ndarray, matched_s: list[float],
                    un_g: np.ndarray, un_p: np.ndarray, ok: np.ndarray, k: int) -> dict[str, tuple[Any, ...]]:
    """One model's first `k` missed, extra and wrongly valued entities, in record order."""
    order, gold = prep.order, prep.gold
    return {
        "missed": tuple({"record_id": order[gold.record[i]], "index": int(gold.orig[i]), "gold": _plain(gold.entity(i))} for i in un_g[:k]),
        "extra": tuple({"record_id": order[side.record[i]], "index": int(side.orig[i]), "predicted": _plain(side.entity(i))} for i in un_p[:k]),
        "wrong_values": tuple(
            {"record_id": order[gold.record[mg[i]]], "gold": _plain(gold.entity(mg[i])), "predicted": _plain(side.entity(mp[i])),
             "similarity": matched_s[i]}
            for i in np.flatnonzero(~ok)[:k].tolist()
        ),
    }


def _model_ledger(prep: _Prepared, p: ModelEntities, side: _Side, recs: Mapping[str, Any], matches: _Matches, cfg: EntitiesConfig,
                  sem: Mapping[str, _SemanticTable]) -> tuple[EntitiesModelLedger, pd.DataFrame]:
    """One model's ledger from its matches, and its per-record frame."""
    order, gold = prep.order, prep.gold
    n_rec = len(order)
    k = cfg.max_examples
    mg, mp, matched_s = matches
    un_g = _unmatched(len(gold.record), mg)
    un_p = _unmatched(len(side.record), mp)
    ledgers, ok, label_rows = _field_ledgers(prep, side, cfg, sem, mg, mp, un_g, un_p)
    g_n, p_n = np.diff(gold.start), np.diff(side.start)
    both_empty = int(((g_n == 0) & (p_n == 0) & _present(order, prep.truth, recs)).sum())
    missing_recs = sorted(set(prep.truth) - set(recs))
    extra_recs = sorted(set(recs) - set(prep.truth))
    examples = _model_examples(prep, side, mg, mp, matched_s, un_g, un_p, ok, k)
    ledger = EntitiesModelLedger(
        matched=ledgers["matched"], strict=ledgers["strict"],
        presence=Counts(tp=len(mg), fp=len(un_p), fn=len(un_g), tn=both_empty, cells=n_rec),
        invalid=int((~side.valid).sum()), correct_rows=int(ok.sum()), sim_sum=_exact_sum(np.asarray(matched_s, dtype=np.float64)),
        missing_recs=len(missing_recs), missing_ids=tuple(missing_recs[:_SHOWN_IDS]),
        extra_recs=len(extra_recs), extra_ids=tuple(extra_recs[:_SHOWN_IDS]), examples=examples,
        invalid_first=prep.invalid_first.get(p.name), unknown_keys=prep.unknown_keys[p.name], max_examples=k,
    )
    frame = pd.DataFrame({
        "record_id": order,
        "gold": g_n,
        "predicted": p_n,
        "matched": np.bincount(gold.record[mg], minlength=n_rec),
        "correct_pairs": np.bincount(gold.record[mg][ok], minlength=n_rec),
        "in_truth": np.fromiter((rid in prep.truth for rid in order), dtype=bool, count=n_rec),
        "in_predictions": np.fromiter((rid in recs for rid in order), dtype=bool, count=n_rec),
        # the strict view's one-vs-rest counts of this record, [feature, label, tp, fp, fn]
        # rows as JSON: summed over records they are the strict ledgers (resampled by intervals)
        "strict_label_counts": [json.dumps(x, ensure_ascii=False) for x in label_rows],
    })
    return ledger, frame


def _semantic_pairs(prep: _Prepared, cfg: EntitiesConfig, sem: Mapping[str, _SemanticTable]) -> dict[str, dict[tuple[str, str], bool]]:
    """Per SEMANTIC field, the distinct key pairs its backend scored and whether it failed on each."""
    semantic: dict[str, dict[tuple[str, str], bool]] = {}
    for f in prep.fields_needed:
        if cfg.strategy_for(f) is Strategy.SEMANTIC:
            keys = prep.tables[f].keys
            ua, ub = np.divmod(sem[f].ids, sem[f].width)
            semantic[f] = {(keys[x], keys[y]): bool(np.isnan(v)) for x, y, v in zip(ua.tolist(), ub.tolist(), sem[f].scores.tolist())}
    return semantic


def _unmatched(n: int, matched: np.ndarray) -> np.ndarray:
    free = np.ones(n, dtype=bool)
    free[matched] = False
    return np.flatnonzero(free)


def _present(order: Sequence[str], truth: Mapping[str, Any], pred: Mapping[str, Any]) -> np.ndarray:
    """Records present on both sides (a record absent from one side is never a true negative)."""
    return np.fromiter((rid in truth and rid in pred for rid in order), dtype=bool, count=len(order))


def _plain(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
