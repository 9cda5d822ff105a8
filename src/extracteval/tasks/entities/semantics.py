"""The `entities` task: lists of entities per record, aligned optimally, then scored.

Each record holds a list of entities (dicts): invoice line items, parties, products. Per record,
predicted and gold entities are aligned by optimal one-to-one assignment (`max_matching`: most
pairs at or above `match_threshold`, then the highest total similarity; never greedy, never
dependent on input order) on a weighted per-field similarity. Then:

- entity presence: matched / extra / missed entities → `precision_entities`, `recall_entities`,
  `f1_entities` (counts first, `counts.ratios` last);
- per-feature one-vs-rest metrics and row accuracy (the `labels` kernel), in two views that are
  always both reported: `matched` (matched pairs only, as entity scoring usually reports them) and
  `strict` (every missed gold entity and every extra prediction counts as an error, so a model
  cannot look good by matching few entities).

Pipeline: flatten every record's entities into columns → dictionary-encode each feature across
truth and all models once (`LabelEncoder`, canonical keys per distinct value) → all candidate
pairs of all records as index arrays → per-field similarity vectorised over pairs (rapidfuzz
`cpdist` over *distinct* text pairs for FUZZY; for SEMANTIC one batched call of the similarity
backend per field over the distinct text pairs of the whole input, every model included) →
weighted mean → one `max_matching` per record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.entities.contract import RANKING
from extracteval.core.ledger import Ledger, by_key, first_each, first_given, keep, merge, smallest, sorted_union, union, updated
from extracteval.core.counts import Counts, ratios
from extracteval.core.feature_views import (
    _MISSING_KEY,
    FeatureLedger,
    FeatureViewsResult,
    ONE_MODEL_NOTE,
    LabelEncoder,
    RankedFeatures,
    ViewMetrics,
    check_model_names,
    checked_types,
    display_labels,
    ledger_from_codes,
    rank_on_strict_view,
    view_metrics,
)
from extracteval.core.matching import max_matching
from extracteval.core.normalize import NormalizationConfig, key_text, key_type
from extracteval.core.similarity import FUZZY_SCORERS, SimilarityBackend, describe_similarity
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError

__all__ = [
    "ENTITY_VIEWS",
    "PRESENCE_KEYS",
    "EntitiesConfig",
    "ModelEntities",
    "EntityPresence",
    "EntitiesModelResult",
    "EntitiesResult",
    "align_entities",
    "score_entities",
    "EntitiesPlan",
    "plan_entities",
    "gold_fields_of",
    "EntitiesModelLedger",
    "EntitiesLedger",
    "entities_ledger",
    "entities_result",
]

ENTITY_VIEWS = {
    "matched": "matched entity pairs only; missed and extra entities are not counted",
    "strict": "every entity; a missed gold entity or an extra prediction counts as an error in every feature",
}
_TIE_EPS = 1e-6
PRESENCE_KEYS = (
    "predicted_count", "gold_count", "matched_count", "extra_predictions_count", "missed_gold_count",
    "precision_entities", "recall_entities", "f1_entities",
)


# ---------------------------------------------------------------------------------------------
# configuration and inputs


@dataclass(frozen=True, kw_only=True)
class EntitiesConfig:
    """Options of the `entities` task.

    Attributes:
        features: fields scored per entity (default: every field of any ground-truth entity).
        key_fields: fields the alignment similarity is computed on (default: the fields of
            `weights` when given, else every scored feature).
        weights: alignment weight per key field (default 1.0 each); must be ≥ 0, sum > 0.
        strategies: per-field `EXACT` (default) / `FUZZY` / `SEMANTIC` / `IGNORE` (not scored,
            not aligned on). EXACT similarity is 1 for equal canonical keys, else 0; FUZZY is the
            rapidfuzz similarity of two texts and SEMANTIC the similarity backend's score of two
            texts (the `json` task's backends, `score_entities(similarity=…)`, default `lexical`);
            numbers and dates still compare exactly under both. A matched pair's value is
            *correct* when its score is ≥ `fuzzy_threshold` (FUZZY) or `semantic_threshold`
            (SEMANTIC).
        types: per-feature value type, as in the `labels` task (`auto`, `category`, `text`,
            `number`, `date`).
        match_threshold: pairs whose weighted similarity is below this stay unmatched.
    """

    features: Sequence[str] | None = None
    key_fields: Sequence[str] | None = None
    weights: Mapping[str, float] | None = None
    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    default_strategy: Strategy = Strategy.EXACT
    types: Mapping[str, str] = field(default_factory=dict)
    match_threshold: float = 0.5
    fuzzy_threshold: float = 0.85
    semantic_threshold: float = 0.80
    fuzzy_scorer: str = "ratio"
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0
    max_examples: int = 5

    def __post_init__(self) -> None:
        for name in ("match_threshold", "fuzzy_threshold", "semantic_threshold", "zero_division"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise InputError(f"Expected `{name}` to be a number in [0, 1], but got {v!r}.")
        if self.fuzzy_scorer not in FUZZY_SCORERS:
            raise InputError(f"fuzzy scorer: expected one of {', '.join(FUZZY_SCORERS)}, but got {self.fuzzy_scorer!r}.")
        strategies = {str(k): get_strategy(v, where=f"strategy of field {k!r}") for k, v in self.strategies.items()}
        default = get_strategy(self.default_strategy, where="default_strategy")
        object.__setattr__(self, "strategies", strategies)
        object.__setattr__(self, "default_strategy", default)
        if self.weights is not None:
            weights: dict[str, float] = {}
            for k, v in self.weights.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or float(v) < 0:
                    raise InputError(f"weight of field {k!r}: expected a finite number ≥ 0, but got {v!r}.")
                weights[str(k)] = float(v)
            if not weights or sum(weights.values()) <= 0:
                raise InputError(
                    f"weights: expected weights that sum to a positive number, but got {weights or 'no weights'} "
                    f"(sum {sum(weights.values()):g}); give at least one key field a weight > 0."
                )
            object.__setattr__(self, "weights", weights)
        for name in ("features", "key_fields"):
            v = getattr(self, name)
            if v is not None:
                if isinstance(v, str) or not all(isinstance(x, str) and x.strip() for x in v):
                    raise InputError(f"Expected `{name}` to be a list of field names, but got {v!r}.")
                object.__setattr__(self, name, tuple(dict.fromkeys(x.strip() for x in v)))
        if self.key_fields is not None and not self.key_fields:
            raise InputError("key_fields: expected at least one field to align entities on, but got none.")
        object.__setattr__(self, "types", checked_types(self.types, "field"))
        if self.max_examples < 0:
            raise InputError(f"Expected `max_examples` ≥ 0, but got {self.max_examples!r}.")

    def strategy_for(self, fname: str) -> Strategy:
        return self.strategies.get(fname, self.default_strategy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": None if self.features is None else list(self.features),
            "key_fields": None if self.key_fields is None else list(self.key_fields),
            "weights": None if self.weights is None else dict(sorted(self.weights.items())),
            "strategies": {k: v.value for k, v in sorted(self.strategies.items())},
            "default_strategy": self.default_strategy.value,
            "types": dict(sorted(self.types.items())),
            "match_threshold": self.match_threshold,
            "fuzzy_threshold": self.fuzzy_threshold,
            "semantic_threshold": self.semantic_threshold,
            "fuzzy_scorer": self.fuzzy_scorer,
            "normalization": self.normalization.to_dict(),
            "zero_division": self.zero_division,
        }


@dataclass(frozen=True, kw_only=True)
class ModelEntities:
    """One model's predicted entities: record id → list of entity dicts.

    A predicted entity that is not an object (malformed model output) is counted as an extra
    prediction that matches nothing, never raised.
    """

    name: str
    records: Mapping[str, Sequence[Any]]
    source: str = ""


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, kw_only=True)
class EntityPresence:
    """Entity detection summary (`entity_detection_summary`): based on which entities
    were matched, not on the values inside them. `records_both_empty` are records with no gold and
    no predicted entity (true negatives; a model right about "no line items" everywhere scores 1.0)."""

    counts: Counts
    invalid_predictions: int
    zero_division: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        r = ratios(c.tp, c.fp, c.fn, c.tn, zero_division=self.zero_division)
        return {
            "predicted_count": c.tp + c.fp,
            "gold_count": c.tp + c.fn,
            "matched_count": c.tp,
            "extra_predictions_count": c.fp,
            "missed_gold_count": c.fn,
            "precision_entities": float(r["precision"]),
            "recall_entities": float(r["recall"]),
            "f1_entities": float(r["f1"]),
            "records_both_empty": c.tn,
            "invalid_predictions_count": self.invalid_predictions,
        }


@dataclass(frozen=True, kw_only=True)
class EntitiesModelResult(RankedFeatures):
    name: str
    presence: EntityPresence
    matched: ViewMetrics
    strict: ViewMetrics
    ledgers: Mapping[str, Mapping[str, FeatureLedger]]  # view → feature → ledger
    mean_match_similarity: float
    records_missing_prediction: int
    records_not_in_truth: int
    examples: Mapping[str, Sequence[Mapping[str, Any]]]
    source: str = ""
    per_record: Any = None  # pandas DataFrame, see `records_frame`; not part of to_dict() (it can be large)

    def records_frame(self) -> Any:
        """One row per record: record_id, gold, predicted, matched, correct_pairs (all features
        right), in_truth, in_predictions — the presence ledger record by record."""
        return self.per_record

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ranking_dict(),
            "source": self.source,
            "entity_detection_summary": self.presence.to_dict(),
            "mean_match_similarity": self.mean_match_similarity,
            "alignment": {
                "records_missing_prediction": self.records_missing_prediction,
                "records_not_in_truth": self.records_not_in_truth,
            },
            "matched": self.matched.to_dict(),
            "strict": self.strict.to_dict(),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
        }


@dataclass(frozen=True, kw_only=True)
class EntitiesResult(FeatureViewsResult):
    key_fields: tuple[str, ...]
    weights: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return self.document(ENTITY_VIEWS, before={"key_fields": list(self.key_fields), "weights": dict(self.weights)})


# ---------------------------------------------------------------------------------------------
# flattening and encoding


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


# ---------------------------------------------------------------------------------------------
# alignment


def _pairs(gold: _Side, pred: _Side, n_records: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (gold, pred) candidate pair of every record, gold-major within a record.

    Returns pair_gold, pair_pred and the (n_records + 1,) offsets of each record's block."""
    g_n = np.diff(gold.start)
    p_n = np.diff(pred.start)
    per_rec = g_n * p_n
    pstart = np.concatenate([[0], np.cumsum(per_rec)]).astype(np.int64)
    total = int(pstart[-1])
    if total == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, pstart
    # for each gold entity: P_r partners, the pred entities of its record
    g_idx = np.arange(len(gold.record), dtype=np.int64)
    reps = p_n[gold.record]
    pair_gold = np.repeat(g_idx, reps)
    first = np.repeat(pred.start[gold.record], reps)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    pair_pred = first + within
    return pair_gold, pair_pred, pstart


@dataclass
class _FieldTable:
    """Per-feature key table: label keys, their display labels, text per key for FUZZY."""

    keys: list[str]
    labels: list[str]
    missing: int  # code of <MISSING>, or -1
    is_text: np.ndarray
    texts: list[str]


_DENSE_PAIRS = 1 << 22  # pair tables up to 4M entries (4 MB + 32 MB) are dense
_RADIX_LIMIT = 2**62  # mixed-radix sort keys must fit in int64


def _distinct_pairs(ids: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(ids, return_inverse=True)` for pair ids `a * width + b`. With few keys per field
    (the usual case) a dense presence table does it in linear time, instead of sorting millions
    of candidate pairs."""
    if width * width > _DENSE_PAIRS:
        u, inv = np.unique(ids, return_inverse=True)
        return u, inv.ravel()
    present = np.zeros(width * width, dtype=bool)
    present[ids] = True
    u = np.flatnonzero(present)
    lut = np.zeros(width * width, dtype=np.int64)
    lut[u] = np.arange(len(u), dtype=np.int64)
    return u, lut[ids]


def _fuzzy_scores(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable, scorer: str) -> np.ndarray:
    """Similarity of code pairs: 1 for equal keys, rapidfuzz score/100 for two different texts,
    0 otherwise; computed once per *distinct* pair, in one batched `cpdist` call."""
    out = (code_a == code_b).astype(np.float64)
    cand = (code_a != code_b) & table.is_text[code_a] & table.is_text[code_b]
    if not cand.any():
        return out
    width = len(table.keys) + 1
    upairs, inv = _distinct_pairs(code_a[cand] * width + code_b[cand], width)
    ua, ub = np.divmod(upairs, width)
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    texts = table.texts
    scores = cpdist([texts[a] for a in ua.tolist()], [texts[b] for b in ub.tolist()], scorer=getattr(fuzz, scorer), workers=1)
    out[cand] = (np.asarray(scores, dtype=np.float64) / 100.0)[inv]
    return out


@dataclass
class _SemanticTable:
    """Similarity-backend scores of the distinct (gold code, predicted code) text pairs of one
    SEMANTIC field, gathered over the whole input (every record, every model) so the backend is
    called once per field, never per record."""

    ids: np.ndarray  # sorted distinct pair ids: gold code * width + predicted code
    scores: np.ndarray  # backend score per id in [0, 1]; NaN = the backend could not score the pair
    width: int

    @property
    def failures(self) -> int:
        return int(np.isnan(self.scores).sum())


def _semantic_candidates(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable) -> np.ndarray:
    # as for FUZZY: only two different texts go to the backend; numbers and dates compare exactly
    return (code_a != code_b) & table.is_text[code_a] & table.is_text[code_b]


def _semantic_table(
    backend: SimilarityBackend, table: _FieldTable, code_pairs: Sequence[tuple[np.ndarray, np.ndarray]], fname: str
) -> _SemanticTable:
    width = len(table.keys) + 1
    ids = [a[c] * width + b[c] for a, b in code_pairs for c in [_semantic_candidates(a, b, table)]]
    u = _distinct_pairs(np.concatenate(ids), width)[0] if ids else np.zeros(0, dtype=np.int64)
    if not len(u):
        return _SemanticTable(ids=u, scores=np.zeros(0), width=width)
    ua, ub = np.divmod(u, width)
    texts = table.texts
    raw = np.asarray(backend.similarity([texts[i] for i in ua.tolist()], [texts[i] for i in ub.tolist()]), dtype=np.float64).ravel()
    if raw.shape[0] != len(u):
        raise InputError(
            f"SEMANTIC field {fname!r}: similarity backend {getattr(backend, 'name', backend)!r} returned "
            f"{raw.shape[0]} scores for {len(u)} pairs; expected one score per pair."
        )
    return _SemanticTable(ids=u, scores=np.clip(raw, 0.0, 1.0), width=width)


def _semantic_scores(code_a: np.ndarray, code_b: np.ndarray, table: _FieldTable, sem: _SemanticTable) -> tuple[np.ndarray, np.ndarray]:
    """Scores of code pairs (1 for equal keys, the backend's score for two different texts — NaN
    when it failed —, 0 otherwise) and the mask of pairs the backend scored."""
    out = (code_a == code_b).astype(np.float64)
    cand = _semantic_candidates(code_a, code_b, table)
    if cand.any():
        q = code_a[cand] * sem.width + code_b[cand]
        pos = np.minimum(np.searchsorted(sem.ids, q), max(len(sem.ids) - 1, 0))
        if not len(sem.ids) or not bool((sem.ids[pos] == q).all()):  # pragma: no cover (tables hold every pair asked for)
            raise RuntimeError("entities: a SEMANTIC pair was not scored in advance")
        out[cand] = sem.scores[pos]
    return out, cand


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
        raise InputError(f"{truth_source}: no ground-truth entity has any field; expected lists of objects such as "
                         '{"description": "Bolt", "quantity": 2}.')

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
    invalid_first: dict[str, str] = {}
    unknown_keys: dict[str, frozenset[str]] = {}
    gold_missing: dict[str, int] = {}

    gold = _Side(record=g_arr, start=_offsets(g_arr, n_rec), valid=np.ones(len(g_ents), dtype=bool), raw=g_ents, orig=g_pos)
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

    # encode every needed field across truth and all models once
    tables: dict[str, _FieldTable] = {}
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

    # canonical order within each record, so that shuffling entities cannot change a tie's outcome
    def canonical(side: _Side) -> None:
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

    canonical(gold)
    for s in sides:
        canonical(s)
    return _Prepared(order=order, truth=truth, pred_records=pred_records, gold=gold, sides=sides, tables=tables,
                     features_all=features_all, scored=scored, key_fields=key_fields, weights=weights, warnings=warnings,
                     fields_needed=fields_needed, invalid_first=invalid_first, unknown_keys=unknown_keys, gold_missing=gold_missing)


_Matches = tuple[np.ndarray, np.ndarray, list[float]]


def _align_all(prep: _Prepared, cfg: EntitiesConfig, backend: SimilarityBackend) -> tuple[list[_Matches], dict[str, _SemanticTable]]:
    """Every model's matches, and the SEMANTIC score tables, each filled by one backend call:
    key fields over every candidate pair of every model before aligning, the other SEMANTIC
    features over the matched pairs after."""
    gold, n_rec = prep.gold, len(prep.order)
    semantic = [f for f in prep.fields_needed if cfg.strategy_for(f) is Strategy.SEMANTIC]
    sem: dict[str, _SemanticTable] = {}
    sem_keys = [f for f in semantic if f in prep.key_fields]
    # candidate pairs are kept for every model only when a SEMANTIC key field needs them all at once
    pairs = [_pairs(gold, side, n_rec) for side in prep.sides] if sem_keys else [None] * len(prep.sides)
    for f in sem_keys:
        sem[f] = _semantic_table(backend, prep.tables[f],
                                 [(gold.codes[f][pg], side.codes[f][pp]) for side, (pg, pp, _) in zip(prep.sides, pairs)], f)  # type: ignore[misc]
    matches = []
    for i, side in enumerate(prep.sides):
        matches.append(_match(prep, side, cfg, sem, pairs[i]))
        pairs[i] = None  # free it
    for f in semantic:
        if f not in sem:
            sem[f] = _semantic_table(backend, prep.tables[f],
                                     [(gold.codes[f][mg], side.codes[f][mp]) for side, (mg, mp, _) in zip(prep.sides, matches)], f)
    return matches, sem


def _match(
    prep: _Prepared, side: _Side, cfg: EntitiesConfig, sem: Mapping[str, _SemanticTable],
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> _Matches:
    """Matched (gold, pred) entity indices and their similarity, one optimal assignment per record."""
    gold, n_rec = prep.gold, len(prep.order)
    pair_g, pair_p, pstart = pairs if pairs is not None else _pairs(gold, side, n_rec)
    num = np.zeros(len(pair_g))
    den = np.zeros(len(pair_g))
    scored = set(prep.scored)
    equal: dict[str, np.ndarray] = {}  # kept for the tie-break below, which would gather them again
    for f in prep.key_fields:
        t = prep.tables[f]
        a, b = gold.codes[f][pair_g], side.codes[f][pair_p]
        considered = (a != t.missing) | (b != t.missing)  # both absent: the field says nothing
        eq = a == b
        if f in scored:
            equal[f] = eq
        strategy = cfg.strategy_for(f)
        if strategy is Strategy.FUZZY:
            s = _fuzzy_scores(a, b, t, cfg.fuzzy_scorer)
        elif strategy is Strategy.SEMANTIC:
            s = np.nan_to_num(_semantic_scores(a, b, t, sem[f])[0], nan=0.0)  # a failed pair is no evidence of a match
        else:
            s = eq.astype(np.float64)
        s[a == t.missing] = 0.0
        num += prep.weights[f] * s * considered
        den += prep.weights[f] * considered
    # Two entities absent on every key field disagree on nothing: similarity 1, not 0/0 = 0, or
    # a gold entity such as {"item": null} copied verbatim would stay unmatched.
    sim = np.divide(num, den, out=np.ones(len(pair_g)), where=den > 0)
    sim[~side.valid[pair_p]] = 0.0
    thr = float(cfg.match_threshold)
    # Ties on the key fields (two gold lines with the same description) go to the pair that agrees
    # on more of the scored fields: admissible scores are squeezed into [thr, 1] with a tiny share
    # for that agreement, which keeps them admissible and never reorders different similarities
    # by more than _TIE_EPS.
    rank = sim.copy()
    if thr < 1.0 and len(pair_g):
        ok = np.flatnonzero(sim >= thr)  # only admissible pairs get the tie-break share
        agree = np.zeros(len(ok))
        for f in prep.scored:
            agree += equal[f][ok] if f in equal else gold.codes[f][pair_g[ok]] == side.codes[f][pair_p[ok]]
        agree /= max(len(prep.scored), 1)
        rank[ok] = thr + (1.0 - thr) * ((1.0 - _TIE_EPS) * (sim[ok] - thr) / (1.0 - thr) + _TIE_EPS * agree)

    g_n, p_n = np.diff(gold.start), np.diff(side.start)
    out_g: list[np.ndarray] = []
    out_p: list[np.ndarray] = []
    active = np.flatnonzero((g_n > 0) & (p_n > 0))
    # Records of one shape (G gold × P predicted) are checked together for an *evident* optimal
    # assignment: on the smaller side, every entity's best partner is admissible and no two share
    # one. Those pairs match min(G, P) entities (the most possible) with the sum of the row maxima
    # (the highest possible total), exactly what `max_matching` maximises, for one argmax instead
    # of an assignment. Only the other records go through the solver, one by one.
    shape = g_n[active] * (int(p_n.max(initial=0)) + 1) + p_n[active]
    for key in np.unique(shape).tolist():
        recs = active[shape == key]
        gn, pn = int(g_n[recs[0]]), int(p_n[recs[0]])
        idx = pstart[recs][:, None] + np.arange(gn * pn)[None, :]
        blocks = rank[idx].reshape(len(recs), gn, pn)
        if gn <= pn:
            best = blocks.argmax(axis=2)  # (k, G): first maximum, entities are canonically ordered
            val = np.take_along_axis(blocks, best[:, :, None], axis=2)[:, :, 0]
            rows = np.broadcast_to(np.arange(gn), best.shape)
            cols = best
        else:
            best = blocks.argmax(axis=1)  # (k, P)
            val = np.take_along_axis(blocks, best[:, None, :], axis=1)[:, 0, :]
            rows = best
            cols = np.broadcast_to(np.arange(pn), best.shape)
        distinct = (np.diff(np.sort(best, axis=1), axis=1) != 0).all(axis=1)
        evident = (val >= thr).all(axis=1) & distinct
        if evident.any():
            out_g.append((gold.start[recs[evident]][:, None] + rows[evident]).ravel())
            out_p.append((side.start[recs[evident]][:, None] + cols[evident]).ravel())
        if gn == 1 or pn == 1:
            # one candidate per entity on the smaller side: admissible best pairs are the matching
            ok = ~evident[:, None] & (val >= thr)
            if ok.any():
                out_g.append((gold.start[recs][:, None] + rows)[ok])
                out_p.append((side.start[recs][:, None] + cols)[ok])
            continue
        for k in np.flatnonzero(~evident).tolist():
            r = int(recs[k])
            pairs = max_matching(blocks[k], thr)
            if pairs:
                ij = np.asarray(pairs, dtype=np.int64)
                out_g.append(gold.start[r] + ij[:, 0])
                out_p.append(side.start[r] + ij[:, 1])
    if not out_g:
        z = np.zeros(0, dtype=np.int64)
        return z, z, []
    mg = np.concatenate(out_g).astype(np.int64)
    mp = np.concatenate(out_p).astype(np.int64)
    order = np.argsort(mg, kind="stable")
    mg, mp = mg[order], mp[order]
    # the reported similarity of a pair is the weighted field similarity, not the tie-break score
    r_of = gold.record[mg]
    sims = sim[pstart[r_of] + (mg - gold.start[r_of]) * p_n[r_of] + (mp - side.start[r_of])]
    return mg, mp, sims.tolist()


def align_entities(
    gold: Sequence[Mapping[str, Any]],
    pred: Sequence[Any],
    *,
    config: EntitiesConfig | None = None,
    similarity: SimilarityBackend | None = None,
) -> list[tuple[int, int, float]]:
    """Optimal alignment of one record's entities: sorted `(gold index, pred index, similarity)`.

    `similarity` is the backend of SEMANTIC fields (default `LexicalSimilarity`).

    Examples:
        >>> gold = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
        >>> pred = [{"sku": "B", "qty": 2}, {"sku": "A", "qty": 5}]
        >>> [(g, p) for g, p, _ in align_entities(gold, pred)]
        [(0, 1), (1, 0)]
    """
    cfg = config or EntitiesConfig()
    prep = _prepare({"r": list(gold)}, [ModelEntities(name="m", records={"r": list(pred)})], cfg, "gold")
    side = prep.sides[0]
    [(mg, mp, sims)], _ = _align_all(prep, cfg, _backend(similarity))
    return sorted((int(prep.gold.orig[g]), int(side.orig[p]), s) for g, p, s in zip(mg.tolist(), mp.tolist(), sims))


def _backend(similarity: SimilarityBackend | None) -> SimilarityBackend:
    if similarity is not None:
        return similarity
    from extracteval.core.similarity import LexicalSimilarity

    return LexicalSimilarity()  # offline, and labelled "lexical" in every report, never "semantic"


# ---------------------------------------------------------------------------------------------
# the public entry point


def score_entities(
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Sequence[ModelEntities],
    *,
    config: EntitiesConfig | None = None,
    truth_source: str = "truth",
    similarity: SimilarityBackend | None = None,
) -> EntitiesResult:
    """Align and score one or more models' entity lists against the truth.

    Args:
        truth: record id → list of gold entities (dicts). A non-object entity is an `InputError`.
        predictions: one `ModelEntities` per model (unique names). A truth record without a
            prediction has all its entities missed; a predicted record not in the truth has all
            its entities extra (both reported in warnings and `alignment`).
        config: features, key fields, weights, strategies, thresholds.
        truth_source: name of the truth input, used in messages.
        similarity: backend of SEMANTIC fields (`extracteval.core.similarity`: any object with
            `name` and batched `similarity(a, b)`; default `LexicalSimilarity`, offline). It is
            called once per SEMANTIC field over the distinct value pairs of the whole input.

    Examples:
        >>> truth = {"inv1": [{"item": "bolt", "qty": 2}, {"item": "nut", "qty": 4}]}
        >>> pred = {"inv1": [{"item": "bolt", "qty": 2}]}
        >>> r = score_entities(truth, [ModelEntities(name="m", records=pred)])
        >>> s = r.models["m"].presence.to_dict()
        >>> s["matched_count"], s["missed_gold_count"], s["recall_entities"]
        (1, 1, 0.5)
        >>> r.models["m"].matched.row_accuracy, r.models["m"].strict.row_accuracy
        (1.0, 0.5)
    """
    cfg = config or EntitiesConfig()
    backend = _backend(similarity)
    ledger, per_record = entities_ledger(truth, predictions, config=cfg, truth_source=truth_source, similarity=backend)
    plan = plan_entities(ledger.gold_fields, cfg, truth_source)
    return entities_result(ledger, config=cfg, plan=plan, truth_source=truth_source, similarity=backend,
                           sources={p.name: p.source for p in predictions}, per_record=per_record)


# ---------------------------------------------------------------------------------------------
# the mergeable ledger of a set of records, and the result computed once from it
#
# Alignment is per record, so a set of records can be scored on its own; what depends on the
# whole data set is kept mergeable: per-feature counts keyed by *canonical* label key (display
# labels are resolved at the end), the gold entities missing each field, the distinct value pairs
# a SEMANTIC field's backend scored, the sum of match similarities as an exact integer.

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
    order, gold, tables, scored = prep.order, prep.gold, prep.tables, prep.scored
    n_rec = len(order)
    backend = _backend(similarity)
    all_matches, sem = _align_all(prep, cfg, backend)
    k = cfg.max_examples
    models: dict[str, EntitiesModelLedger] = {}
    per_record: dict[str, pd.DataFrame] = {}
    for p, side, recs, (mg, mp, matched_s) in zip(preds, prep.sides, prep.pred_records, all_matches):
        un_g = _unmatched(len(gold.record), mg)
        un_p = _unmatched(len(side.record), mp)

        ledgers: dict[str, dict[str, FeatureLedger]] = {"matched": {}, "strict": {}}
        ok = np.ones(len(mg), dtype=bool)
        label_rows: list[list[tuple[str, str, int, int, int]]] = [[] for _ in range(n_rec)]
        for f in scored:
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
        g_n, p_n = np.diff(gold.start), np.diff(side.start)
        both_empty = int(((g_n == 0) & (p_n == 0) & _present(order, prep.truth, recs)).sum())
        missing_recs = sorted(set(prep.truth) - set(recs))
        extra_recs = sorted(set(recs) - set(prep.truth))
        examples = {
            "missed": tuple({"record_id": order[gold.record[i]], "index": int(gold.orig[i]), "gold": _plain(gold.entity(i))} for i in un_g[:k]),
            "extra": tuple({"record_id": order[side.record[i]], "index": int(side.orig[i]), "predicted": _plain(side.entity(i))} for i in un_p[:k]),
            "wrong_values": tuple(
                {"record_id": order[gold.record[mg[i]]], "gold": _plain(gold.entity(mg[i])), "predicted": _plain(side.entity(mp[i])),
                 "similarity": matched_s[i]}
                for i in np.flatnonzero(~ok)[:k].tolist()
            ),
        }
        models[p.name] = EntitiesModelLedger(
            matched=ledgers["matched"], strict=ledgers["strict"],
            presence=Counts(tp=len(mg), fp=len(un_p), fn=len(un_g), tn=both_empty, cells=n_rec),
            invalid=int((~side.valid).sum()), correct_rows=int(ok.sum()), sim_sum=_exact_sum(np.asarray(matched_s, dtype=np.float64)),
            missing_recs=len(missing_recs), missing_ids=tuple(missing_recs[:_SHOWN_IDS]),
            extra_recs=len(extra_recs), extra_ids=tuple(extra_recs[:_SHOWN_IDS]), examples=examples,
            invalid_first=prep.invalid_first.get(p.name), unknown_keys=prep.unknown_keys[p.name], max_examples=k,
        )
        per_record[p.name] = pd.DataFrame({
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
    semantic: dict[str, dict[tuple[str, str], bool]] = {}
    for f in prep.fields_needed:
        if cfg.strategy_for(f) is Strategy.SEMANTIC:
            keys = tables[f].keys
            ua, ub = np.divmod(sem[f].ids, sem[f].width)
            semantic[f] = {(keys[x], keys[y]): bool(np.isnan(v)) for x, y, v in zip(ua.tolist(), ub.tolist(), sem[f].scores.tolist())}
    ledger = EntitiesLedger(
        n_records=len(prep.truth), gold_fields=tuple(gold_fields_of(gold.raw)), gold_entities=len(gold.record),
        keys={f: frozenset(tables[f].keys) for f in prep.fields_needed}, gold_missing=prep.gold_missing,
        semantic=semantic, models=models,
    )
    return ledger, per_record


def entities_result(
    ledger: EntitiesLedger,
    *,
    config: EntitiesConfig,
    plan: EntitiesPlan,
    truth_source: str = "truth",
    similarity: SimilarityBackend | None = None,
    sources: Mapping[str, str] | None = None,
    per_record: Mapping[str, pd.DataFrame] | None = None,
) -> EntitiesResult:
    """Display labels, the checks over the whole data set, ratios, winners, ranking and warnings,
    once, from the ledger of every record."""
    cfg = config
    backend = _backend(similarity)
    sources = sources or {}
    zd = cfg.zero_division
    for f in plan.fields_needed:
        if ledger.gold_entities and ledger.gold_missing[f] == ledger.gold_entities:
            raise _missing_everywhere(f, truth_source)
    display = {f: dict(zip(sorted(ledger.keys[f]), display_labels(sorted(ledger.keys[f])))) for f in plan.scored}
    names = sorted(ledger.models)
    warnings: list[str] = []
    for m in names:
        led = ledger.models[m]
        if led.invalid:
            n = led.invalid
            warnings.append(
                f"model {m!r}: {n} predicted entit{'y is' if n == 1 else 'ies are'} not an object and {'counts' if n == 1 else 'count'} as extra "
                f"predictions (first: {led.invalid_first})"
            )
        unknown_keys = sorted(led.unknown_keys)
        if unknown_keys:
            warnings.append(f"model {m!r}: predicted fields not in any ground-truth entity are ignored: {unknown_keys[:10]}")
    results: dict[str, dict[str, Any]] = {}
    for m in names:
        led = ledger.models[m]
        shown = {v: {f: replace(x, per_label=dict(sorted((display[f][key], c) for key, c in x.per_label.items())))
                     for f, x in getattr(led, v).items()} for v in ("matched", "strict")}
        n_match, n_un_g, n_un_p = led.presence.tp, led.presence.fn, led.presence.fp
        presence = EntityPresence(counts=led.presence, invalid_predictions=led.invalid, zero_division=zd)
        views = {
            "matched": view_metrics("matched", shown["matched"], correct_rows=led.correct_rows, rows=n_match,
                                    zero_division=zd, description=ENTITY_VIEWS["matched"]),
            "strict": view_metrics("strict", shown["strict"], correct_rows=led.correct_rows, rows=n_match + n_un_g + n_un_p,
                                   zero_division=zd, description=ENTITY_VIEWS["strict"]),
        }
        if led.missing_recs:
            warnings.append(f"model {m!r}: {led.missing_recs} ground-truth record(s) have no prediction; their "
                            f"entities count as missed: " + ", ".join(repr(x) for x in led.missing_ids) + (" …" if led.missing_recs > 5 else ""))
        if led.extra_recs:
            warnings.append(f"model {m!r}: {led.extra_recs} predicted record(s) are not in the ground truth; their "
                            f"entities count as extra predictions: " + ", ".join(repr(x) for x in led.extra_ids) + (" …" if led.extra_recs > 5 else ""))
        results[m] = {
            "views": views, "ledgers": shown, "presence": presence,
            # the exact sum over the exact count, rounded once (int / int is correctly rounded)
            "mean_sim": led.sim_sum / (n_match << _SIM_UNIT) if n_match else 0.0,
            "examples": {n: [dict(e) for e in x] for n, x in led.examples.items()},
        }

    winners, ranked = rank_on_strict_view(RANKING, {m: results[m]["views"]["strict"] for m in names}, plan.scored)
    models: dict[str, EntitiesModelResult] = {}
    for m, place in ranked:
        d = results[m]
        led = ledger.models[m]
        models[m] = EntitiesModelResult(
            **vars(place), name=m, presence=d["presence"], matched=d["views"]["matched"], strict=d["views"]["strict"], ledgers=d["ledgers"],
            mean_match_similarity=d["mean_sim"], records_missing_prediction=led.missing_recs,
            records_not_in_truth=led.extra_recs, examples=d["examples"], source=sources.get(m, ""),
            per_record=None if per_record is None else per_record.get(m),
        )
        pres = d["presence"].to_dict()
        gap = d["views"]["matched"].totals["f1"] - pres["recall_entities"]
        if pres["gold_count"] and gap > 0.15:
            warnings.append(
                f"model {m!r}: {100 * d['views']['matched'].totals['f1']:.1f}% F1 on matched pairs but only "
                f"{100 * pres['recall_entities']:.1f}% of gold entities found ({pres['missed_gold_count']} missed); "
                f"the strict view ({100 * d['views']['strict'].totals['f1']:.1f}% F1) counts them."
            )
    if len(names) == 1:
        warnings.append(ONE_MODEL_NOTE)
    semantic_fields = [f for f in plan.fields_needed if cfg.strategy_for(f) is Strategy.SEMANTIC]
    failures = {f: sum(ledger.semantic[f].values()) for f in semantic_fields}
    failed = {f: n for f, n in failures.items() if n}
    if failed:
        warnings.append(
            f"similarity backend {getattr(backend, 'name', 'custom')!r} could not score "
            + ", ".join(f"{n} distinct value pair(s) of {f!r}" for f, n in failed.items())
            + "; they score 0 in the alignment and count as wrong values."
        )
    cfg_dict = cfg.to_dict()
    desc = describe_similarity(backend)
    desc["fields"] = semantic_fields
    desc["pairs_scored"] = {f: len(ledger.semantic[f]) for f in semantic_fields}
    desc["failures"] = failures
    cfg_dict["similarity"] = {"semantic": desc}
    cfg_dict["semantic_backend"] = desc.get("name", "custom")
    cfg_dict["strategies_used"] = {f: cfg.strategy_for(f).value for f in plan.features_all}
    cfg_dict["types_used"] = {f: cfg.types.get(f, "auto") for f in plan.fields_needed}
    return EntitiesResult(
        task="entities", n_records=ledger.n_records, features=tuple(plan.scored), key_fields=tuple(plan.key_fields), weights=dict(plan.weights),
        models=models, ranking=tuple(m for m, _ in ranked), feature_winners=winners, warnings=tuple(warnings),
        config=cfg_dict,
    )


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
