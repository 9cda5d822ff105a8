"""The `fields` task: document metadata extraction scored field by field.

Pipeline: validate and align inputs → for each field, dictionary-encode the truth and every
model's column together, canonicalise each *distinct* value once, classify every cell with
vectorised comparisons of integer codes (distinct pairs only for FUZZY and multi-valued cells)
→ per-record count arrays → summed ledgers → ratios once → winners, ranking, intervals, checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.fields.contract import RANKING
from extracteval.core.bootstrap import (
    Interval, PairComparison, bootstrap_macro_f1_patterns, field_patterns, merge_field_patterns, merge_patterns, record_patterns,
)
from extracteval.core.counts import Counts, ratios
from extracteval.core.ledger import Ledger, by_key, joint, keep, merge, ordered_union, same, smallest, whole
from extracteval.core.matching import max_matching
from extracteval.core.normalize import NormalizationConfig, Normalizer, key_text, key_type
from extracteval.core.ranking import FieldWinner, Score, field_winners, field_wins, format_wins, rank_by_metrics
from extracteval.core.similarity import FuzzySimilarity
from extracteval.core.strategies import Strategy, get_strategy
from extracteval.errors import InputError
from extracteval.io.wide_tables import ModelPredictions

__all__ = [
    "FieldsConfig",
    "ModelPredictions",
    "FieldMetrics",
    "ModelResult",
    "Check",
    "PairComparison",
    "FieldsResult",
    "RecordLedger",
    "FieldsPlan",
    "FieldsLedger",
    "plan_fields",
    "fields_ledger",
    "fields_result",
    "score_fields",
    "STATUSES",
]

# `skipped`: the cell is not part of the evaluation (a Kleister key not asked for that document)
STATUSES = ("ok", "pending", "error", "skipped")
KINDS = ("tp", "fp", "fn", "tn", "wrong")  # "wrong" = a wrong value, counted FP and FN
_OK, _PENDING, _ERROR, _SKIPPED = 0, 1, 2, 3
def _some(names: list[Any], limit: int = 20) -> str:
    """A list of names for a warning: all of a short one, else the first `limit` and how many more."""
    if len(names) <= limit:
        return repr(names)
    return f"{names[:limit]!r} and {len(names) - limit:,} more"


VALUE_TYPES = ("auto", "text", "id")  # how a field's values are read (FieldsConfig.types)
_STATUS_CODE = {"ok": _OK, "": _OK, "pending": _PENDING, "error": _ERROR, "skipped": _SKIPPED}


@dataclass(frozen=True, kw_only=True)
class FieldsConfig:
    """Options of the `fields` task.

    Attributes:
        strategies: per-field strategy; fields not listed use `default_strategy` (EXACT).
        types: per-field value type: `auto` (the default: numbers, booleans, dates and currency
            recognised, so `007` = `7` and `$5` = `5.00`), `text` (text rules only: NFKC, case,
            white space) or `id` (compared exactly as written, white space around it aside). The
            null tokens mean missing under every type.
        fuzzy_threshold: FUZZY match when rapidfuzz similarity ≥ this (0–1).
        fuzzy_scorer: rapidfuzz scorer name (`ratio`, `token_sort_ratio`, …).
        normalization: null tokens, day-first dates, currency stripping.
        zero_division: value of a ratio whose denominator is 0 (except the all-TN rule).
        min_records: warn when a metric rests on fewer valid records than this.
        bootstrap: resamples for confidence intervals; 0 turns them off.
        confidence: interval coverage (0.95).
        seed: random seed of the bootstrap.
        max_examples: examples kept per classification kind, per model and field.
    """

    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    default_strategy: Strategy = Strategy.EXACT
    fuzzy_threshold: float = 0.85
    fuzzy_scorer: str = "ratio"
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0
    min_records: int = 30
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0
    max_examples: int = 5

    def __post_init__(self) -> None:
        for name in ("fuzzy_threshold", "zero_division"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= float(v) <= 1.0:
                raise InputError(f"Expected `{name}` to be a number in [0, 1], but got {v!r}.")
        if not 0.0 < self.confidence < 1.0:
            raise InputError(f"Expected `confidence` to be in (0, 1), but got {self.confidence!r}.")
        if self.bootstrap < 0:
            raise InputError(f"Expected `bootstrap` to be ≥ 0 resamples, but got {self.bootstrap!r}.")
        object.__setattr__(self, "strategies", {str(k): get_strategy(v, where=f"strategy of field {k!r}") for k, v in self.strategies.items()})
        object.__setattr__(self, "default_strategy", get_strategy(self.default_strategy, where="default_strategy"))
        if not isinstance(self.types, Mapping):
            raise InputError(f"Expected `types` to be a mapping of field to type ({', '.join(VALUE_TYPES)}), but got {type(self.types).__name__}.")
        types = {}
        for fname, t in self.types.items():
            name = str(t).strip().lower() if isinstance(t, str) else t
            if name not in VALUE_TYPES:
                raise InputError(f"type of field {fname!r}: expected one of {', '.join(VALUE_TYPES)}, but got {t!r}.")
            types[str(fname)] = name
        object.__setattr__(self, "types", types)
        for fname, s in self.strategies.items():
            if s is Strategy.SEMANTIC:
                raise InputError(
                    f"strategy of field {fname!r}: SEMANTIC needs a similarity backend, which the `fields` task "
                    "does not take; use EXACT, FUZZY or IGNORE (or the `json` task for SEMANTIC)."
                )

    def strategy_for(self, fname: str) -> Strategy:
        return self.strategies.get(fname, self.default_strategy)

    def normalization_for(self, fname: str) -> NormalizationConfig:
        """The value rules of one field, by its type."""
        t = self.types.get(fname, "auto")
        if t == "auto":
            return self.normalization
        return replace(self.normalization, detect_types=False, fold_text=t != "id")

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategies": {k: v.value for k, v in sorted(self.strategies.items())},
            "types": dict(sorted(self.types.items())),
            "default_strategy": self.default_strategy.value,
            "fuzzy_threshold": self.fuzzy_threshold,
            "fuzzy_scorer": self.fuzzy_scorer,
            "normalization": self.normalization.to_dict(),
            "zero_division": self.zero_division,
            "min_records": self.min_records,
            "bootstrap": self.bootstrap,
            "confidence": self.confidence,
            "seed": self.seed,
        }


@dataclass(frozen=True, kw_only=True)
class FieldMetrics:
    counts: Counts
    precision: float
    recall: float
    f1: float
    accuracy: float
    exact_match_rate: float
    strategy: str
    flags: tuple[str, ...] = ()
    examples: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.counts.no_valid_classifications

    def score(self) -> Score:
        return Score(f1=self.f1, precision=self.precision, recall=self.recall)

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        return {
            "tp": c.tp,
            "fp": c.fp,
            "fn": c.fn,
            "tn": c.tn,
            "excluded": c.excluded,
            "valid_records": c.cells,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "accuracy": self.accuracy,
            "exact_match_rate": self.exact_match_rate,
            "strategy": self.strategy,
            "flags": list(self.flags),
            "examples": {k: [dict(e) for e in v] for k, v in self.examples.items()},
        }


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    name: str
    fields: Mapping[str, FieldMetrics]
    overall: Mapping[str, float]
    micro: Mapping[str, float]
    totals: Counts
    rank: int
    tier: str
    tier_colour: str
    field_wins: float
    fields_won: tuple[str, ...]
    fields_scored: int
    missing_records: int
    source: str = ""
    overall_f1_ci: Interval | None = None

    @property
    def wins_label(self) -> str:
        return f"Won {format_wins(self.field_wins)} of {self.fields_scored} fields"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "tier": self.tier,
            "tier_colour": self.tier_colour,
            "field_wins": self.field_wins,
            "field_wins_display": format_wins(self.field_wins),
            "wins_label": self.wins_label,
            "fields_won": list(self.fields_won),
            "fields_scored": self.fields_scored,
            "missing_records": self.missing_records,
            "source": self.source,
            "overall": dict(self.overall),
            "micro": dict(self.micro),
            "totals": self.totals.to_dict(),
            "ci": None if self.overall_f1_ci is None else {"overall_f1": self.overall_f1_ci.to_dict()},
            "fields": {k: v.to_dict() for k, v in self.fields.items()},
        }


@dataclass(frozen=True, kw_only=True)
class Check:
    """One validation check: `consistency` checks failing means a bug in the scorer;
    `data_quality` checks describe the input."""

    name: str
    kind: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, kw_only=True)
class RecordLedger:
    """Per-record classifications: `counts[model]` is int32 (records, fields, 5) holding
    tp, fp, fn, tn, excluded. Not part of `to_dict()` (it can be large); see `to_frame()`."""

    record_ids: tuple[str, ...]
    fields: tuple[str, ...]
    counts: Mapping[str, np.ndarray]

    def bootstrap_rows(self) -> np.ndarray:
        """(records, models × fields × 4) int64: tp, fp, fn, tn side by side for the models in
        `counts` order — the rows the bootstrap resamples."""
        n, f = len(self.record_ids), len(self.fields)
        if not self.counts:
            return np.zeros((n, 0), dtype=np.int64)
        return np.ascontiguousarray(
            np.concatenate([arr[:, :, :4].reshape(n, f * 4) for arr in self.counts.values()], axis=1), dtype=np.int64
        )

    def bootstrap_row_blocks(self, size: int = 1 << 16) -> Iterator[np.ndarray]:
        """`bootstrap_rows()` in consecutive blocks of `size` records: the bootstrap reads them
        in one pass, without the whole int64 matrix (1M records × 3 models × 20 fields: 1.9 GB)."""
        n, f = len(self.record_ids), len(self.fields)
        for lo in range(0, n, size):
            parts = [arr[lo : lo + size, :, :4].reshape(-1, f * 4) for arr in self.counts.values()]
            yield np.concatenate(parts, axis=1, dtype=np.int64) if parts else np.zeros((min(size, n - lo), 0), dtype=np.int64)

    def to_frame(self) -> pd.DataFrame:
        """Long table: model, record_id, field, tp, fp, fn, tn, excluded."""
        frames = []
        n, f = len(self.record_ids), len(self.fields)
        rid = np.repeat(np.asarray(self.record_ids, dtype=object), f)
        fld = np.tile(np.asarray(self.fields, dtype=object), n)
        for m, arr in self.counts.items():
            flat = arr.reshape(n * f, 5)
            frames.append(
                pd.DataFrame(
                    {
                        "model": m,
                        "record_id": rid,
                        "field": fld,
                        "tp": flat[:, 0],
                        "fp": flat[:, 1],
                        "fn": flat[:, 2],
                        "tn": flat[:, 3],
                        "excluded": flat[:, 4],
                    }
                )
            )
        if not frames:
            return pd.DataFrame(columns=["model", "record_id", "field", "tp", "fp", "fn", "tn", "excluded"])
        return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True, kw_only=True)
class FieldsResult:
    task: str
    models: Mapping[str, ModelResult]
    ranking: tuple[str, ...]
    field_winners: Mapping[str, FieldWinner]
    comparisons: tuple[PairComparison, ...]
    checks: tuple[Check, ...]
    warnings: tuple[str, ...]
    fields: tuple[str, ...]
    n_records: int
    config: Mapping[str, Any]
    records: RecordLedger | None = None
    # the ledger's per-field patterns (`FieldsLedger.field_patterns`, `field_freq`) when intervals
    # are on: what per-field intervals resample, already counted while scoring
    field_patterns: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "n_records": self.n_records,
            "fields": list(self.fields),
            "ranking": list(self.ranking),
            "models": {m: self.models[m].to_dict() for m in self.ranking},
            "field_winners": {k: v.to_dict() for k, v in self.field_winners.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "checks": [c.to_dict() for c in self.checks],
            "warnings": list(self.warnings),
            "config": dict(self.config),
        }


# ---------------------------------------------------------------------------------------------
# input validation and alignment


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


# ---------------------------------------------------------------------------------------------
# classification of one field for every model


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


# ---------------------------------------------------------------------------------------------
# the public entry point


def score_fields(
    truth: pd.DataFrame,
    predictions: Sequence[ModelPredictions],
    *,
    config: FieldsConfig | None = None,
    fields: Sequence[str] | None = None,
    truth_source: str = "truth",
    keep_codes: dict[str | None, dict[str, tuple[np.ndarray, Any]]] | None = None,
    on_records: Callable[[RecordLedger], None] | None = None,
) -> FieldsResult:
    """Score one or more models' field extractions against the truth.

    Args:
        truth: index = record id, one column per field.
        predictions: one `ModelPredictions` per model (names unique).
        config: options; defaults: EXACT everywhere, zero_division 0.
        fields: fields to score (default: every truth column, in order).
        truth_source: name of the truth input, used in messages.
        keep_codes: receives, per model and scored field, the factorisation of the model's column
            (`pd.factorize` codes in the frame's row order, as int32, and the distinct values)
            when its cells were factorised as they are: what logging the predictions as scored
            needs, without hashing 20M cells a second time at 100k × 200. `keep_codes[None]`
            receives the truth's columns the same way (for its digest).
        on_records: called with the per-record counts as soon as they are final, before the
            bootstrap patterns and intervals are computed (`keep_codes` is complete by then):
            `extracteval evaluate` starts writing its Parquet artifacts there, on the core that
            the rest of the scoring leaves idle.

    The work is `plan_fields` (what is scored) → `fields_ledger` (records → mergeable counts) →
    `fields_result` (ratios, winners, ranking, intervals, checks, once). The chunked and Spark
    engines call the same three functions with the records split into chunks.

    Examples:
        >>> import pandas as pd
        >>> truth = pd.DataFrame({"type": ["Service Agreement", "NDA", "Not Present"]}, index=["1", "2", "3"])
        >>> a = pd.DataFrame({"type": ["Service Agreement", "License Agreement", "Not Present"]}, index=["1", "2", "3"])
        >>> b = pd.DataFrame({"type": ["Service Agreement", "NDA", "Employment Agreement"]}, index=["1", "2", "3"])
        >>> r = score_fields(truth, [ModelPredictions(name="A", values=a), ModelPredictions(name="B", values=b)],
        ...                  config=FieldsConfig(bootstrap=0))
        >>> r.models["B"].fields["type"].f1, r.field_winners["type"].winners
        (0.8, ('B',))
    """
    seen: set[str] = set()
    for p in predictions:
        if p.name in seen and p.name and str(p.name).strip():
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)
    plan = plan_fields(
        [str(c) for c in truth.columns],
        {p.name: p.source for p in predictions},
        config=config,
        fields=fields,
        truth_source=truth_source,
    )
    ledger, records = fields_ledger(truth, predictions, plan=plan, keep_codes=keep_codes, on_records=on_records)
    return fields_result(ledger, plan, records=records)


@dataclass(frozen=True, kw_only=True)
class FieldsPlan:
    """What a `fields` evaluation scores, fixed before any record is read: the config, the truth
    fields, the scored (non-IGNORE) fields and the models. Picklable, so worker processes and
    Spark executors get it with each chunk."""

    config: FieldsConfig
    fields: tuple[str, ...]
    scored: tuple[str, ...]
    models: tuple[str, ...]  # sorted
    sources: Mapping[str, str]
    truth_source: str
    fields_given: bool


def plan_fields(
    truth_columns: Sequence[str],
    models: Mapping[str, str],
    *,
    config: FieldsConfig | None = None,
    fields: Sequence[str] | None = None,
    truth_source: str = "truth",
) -> FieldsPlan:
    """Validate the model names and the field selection once.

    Args:
        truth_columns: the ground truth's field columns, in order.
        models: model name → source (file name, for messages), in the order given.
    """
    cfg = config or FieldsConfig()
    if not models:
        raise InputError("no predictions: give at least one model's predictions.")
    for name, source in models.items():
        if not name or not str(name).strip():
            raise InputError(f"{source or 'predictions'}: a model name must not be empty.")
    all_fields = [str(c) for c in truth_columns]
    if fields is not None:
        unknown = [f for f in fields if f not in all_fields]
        if unknown:
            raise InputError(f"{truth_source}: fields {unknown} are not columns of the ground truth (columns: {all_fields}).")
        all_fields = list(fields)
    scored = tuple(f for f in all_fields if cfg.strategy_for(f) is not Strategy.IGNORE)
    return FieldsPlan(
        config=cfg,
        fields=tuple(all_fields),
        scored=scored,
        models=tuple(sorted(models)),
        sources=dict(models),
        truth_source=truth_source,
        fields_given=fields is not None,
    )


_LEDGER_COLUMNS = ("tp", "fp", "fn", "tn", "excluded", "cells", "exact")


def _merged_examples(a: FieldsLedger, b: FieldsLedger) -> dict[tuple[str, str], dict[str, tuple[Mapping[str, Any], ...]]]:
    """Per (model, field) and kind, the examples of the smallest record ids, as many as kept."""
    out: dict[tuple[str, str], dict[str, tuple[Mapping[str, Any], ...]]] = {}
    for key in a.examples.keys() | b.examples.keys():
        x, y = a.examples.get(key, {}), b.examples.get(key, {})
        kinds = {}
        for kind in (*KINDS, "excluded"):
            both = [*x.get(kind, ()), *y.get(kind, ())]
            if both:
                kinds[kind] = tuple(sorted(both, key=lambda e: e["record_id"])[: a.max_examples])
        out[key] = kinds
    return out


# the distinct per-record count rows and their frequencies, merged together (frequencies added)
_PATTERNS = joint(lambda a, b: merge_patterns([(a.patterns, a.freq), (b.patterns, b.freq)]), "patterns", "freq")
_FIELD_PATTERNS = joint(lambda a, b: merge_field_patterns([(a.field_patterns, a.field_freq), (b.field_patterns, b.field_freq)]),
                        "field_patterns", "field_freq")


@dataclass(frozen=True, kw_only=True)
class FieldsLedger(Ledger):
    """Everything `fields_result` needs from a set of records, mergeable with `+`.

    Attributes:
        models, fields: the plan's models (sorted) and scored fields.
        counts: int64 (models, fields, 7): tp, fp, fn, tn, excluded, cells, exact.
        examples: (model, field) → kind → up to `max_examples` examples, smallest record ids.
        missing: model → records of the truth without a prediction; `missing_ids` the smallest 5.
        columns: model → prediction columns seen (for the ignored/missing-column warnings).
        n_records: truth records.
        patterns, freq: distinct per-record count rows (models × fields × tp/fp/fn/tn, int64)
            and how many records have each — what the bootstrap resamples. Bounded by the
            number of distinct patterns, not of records; merged by adding frequencies. None
            when too many to keep (nearly every record distinct): the bootstrap then
            resamples the records themselves.
        field_patterns, field_freq: distinct (model, field, tp, fp, fn, tn) rows and how many
            records have each (a few per field): what the per-field intervals resample.
    """

    models: tuple[str, ...] = merge(same)
    fields: tuple[str, ...] = merge(same)
    counts: np.ndarray
    examples: Mapping[tuple[str, str], Mapping[str, tuple[Mapping[str, Any], ...]]] = merge(whole(lambda a, b, _: _merged_examples(a, b)))
    missing: Mapping[str, int] = merge(by_key())
    missing_ids: Mapping[str, tuple[str, ...]] = merge(by_key(smallest(5, distinct=True)))
    columns: Mapping[str, tuple[Any, ...]] = merge(by_key(ordered_union))
    n_records: int
    patterns: np.ndarray | None = merge(_PATTERNS)
    freq: np.ndarray | None = merge(_PATTERNS)
    field_patterns: np.ndarray = merge(_FIELD_PATTERNS)
    field_freq: np.ndarray = merge(_FIELD_PATTERNS)
    max_examples: int = merge(keep)


def fields_ledger(
    truth: pd.DataFrame, predictions: Sequence[ModelPredictions], *, plan: FieldsPlan,
    keep_codes: dict[str | None, dict[str, tuple[np.ndarray, Any]]] | None = None,
    on_records: Callable[[RecordLedger], None] | None = None,
) -> tuple[FieldsLedger, RecordLedger]:
    """Score a set of records (all of them, or one chunk) into a mergeable ledger.

    Every prediction id must be in `truth`; truth records with no prediction count as empty
    predictions. Returns the ledger and the per-record counts of these records (which a caller
    may stream to disk and drop). `keep_codes`, `on_records`: see `score_fields`.
    """
    cfg = plan.config
    given = sorted(p.name for p in predictions)
    if len(set(given)) != len(given):
        dup = sorted({m for m in given if given.count(m) > 1})[0]
        raise InputError(f"model {dup!r} is given twice; each --predictions needs a unique NAME.")
    if tuple(given) != plan.models:
        raise ValueError(f"predictions are for models {given}, but the plan has {list(plan.models)}.")
    scored = list(plan.scored)
    truth = truth.copy(deep=False)
    truth.index = _str_index(truth.index)
    _check_unique(truth.index, plan.truth_source)
    order = _sorted_ids(truth.index)
    n = len(order)
    order_index = pd.Index(order)

    aligned: list[tuple[ModelPredictions, pd.DataFrame, np.ndarray]] = []
    model_indexers: list[np.ndarray] = []
    missing: dict[str, int] = {}
    missing_ids: dict[str, tuple[str, ...]] = {}
    for p in sorted(predictions, key=lambda x: x.name):
        what = p.source or f"predictions of model {p.name!r}"
        values = p.values.copy(deep=False)
        values.index = _str_index(values.index)
        _check_unique(values.index, what)
        extra = sorted(str(x) for x in values.index[order_index.get_indexer(values.index) < 0])
        if extra:
            shown = ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else "")
            raise InputError(
                f"{what}: {len(extra)} record id(s) are not in the ground truth ({plan.truth_source}): {shown}. "
                "Every prediction must have a ground-truth record."
            )
        model_indexer = values.index.get_indexer(order_index)
        miss = order[model_indexer < 0]
        missing[p.name] = len(miss)
        missing_ids[p.name] = tuple(str(x) for x in sorted(miss)[:5])
        status = p.status
        if status is not None:
            status = status.copy(deep=False)
            status.index = _str_index(status.index)
        codes = _status_codes(status, order, scored, what)
        aligned.append((p, values, codes))
        model_indexers.append(model_indexer)

    normalizers: dict[NormalizationConfig, Normalizer] = {}
    sim = FuzzySimilarity(scorer=cfg.fuzzy_scorer)
    model_names = [a[0].name for a in aligned]
    per_record = {m: np.zeros((n, len(scored), 5), dtype=np.int32) for m in model_names}
    examples: dict[tuple[str, str], dict[str, tuple[Mapping[str, Any], ...]]] = {}
    truth_indexer = truth.index.get_indexer(order_index)

    for j, fname in enumerate(scored):
        cols = [_column_codes(truth, fname, truth_indexer, None if keep_codes is None else keep_codes.setdefault(None, {}))] + [
            _column_codes(v, fname, idx, None if keep_codes is None else keep_codes.setdefault(p.name, {}))
            for (p, v, _), idx in zip(aligned, model_indexers)
        ]
        rules = cfg.normalization_for(fname)
        normalizer = normalizers.get(rules) or normalizers.setdefault(rules, Normalizer(rules))
        enc = _encode(cols, normalizer)
        counts = _classify_field(enc, cfg.strategy_for(fname), sim, cfg.fuzzy_threshold)
        for mi, (p, _, status_codes) in enumerate(aligned):
            excl = status_codes[:, j] != _OK
            c = counts[mi]
            c[excl] = 0
            per_record[p.name][:, j, :4] = c
            per_record[p.name][:, j, 4] = excl
            ex = _examples(c, excl, enc, mi, order, cfg.max_examples)
            examples[(p.name, fname)] = {kind: tuple(v) for kind, v in ex.items()}

    ledger_counts = np.zeros((len(model_names), len(scored), len(_LEDGER_COLUMNS)), dtype=np.int64)
    for mi, m in enumerate(model_names):
        arr = per_record[m]
        ledger_counts[mi, :, :5] = arr.sum(axis=0)
        ledger_counts[mi, :, 5] = (arr[:, :, 4] == 0).sum(axis=0)
        ledger_counts[mi, :, 6] = ((arr[:, :, 4] == 0) & (arr[:, :, 1] == 0) & (arr[:, :, 2] == 0)).sum(axis=0)
    records = RecordLedger(record_ids=tuple(order), fields=tuple(scored), counts=per_record)
    if on_records is not None:
        on_records(records)
    if cfg.bootstrap > 0:
        patterns, freq = record_patterns(records.bootstrap_rows())
        fpat, ffreq = field_patterns([per_record[m] for m in model_names])
    else:  # no intervals: no patterns to keep
        patterns, freq = np.zeros((0, len(model_names) * len(scored) * 4), dtype=np.int8), np.zeros(0, dtype=np.int64)
        fpat, ffreq = np.zeros((0, 6), dtype=np.int64), np.zeros(0, dtype=np.int64)
    ledger = FieldsLedger(
        models=tuple(model_names),
        fields=tuple(scored),
        counts=ledger_counts,
        examples=examples,
        missing=missing,
        missing_ids=missing_ids,
        columns={p.name: tuple(v.columns) for p, v, _ in aligned},
        n_records=n,
        patterns=patterns,
        freq=freq,
        field_patterns=fpat,
        field_freq=ffreq,
        max_examples=cfg.max_examples,
    )
    return ledger, records


def fields_result(
    ledger: FieldsLedger,
    plan: FieldsPlan,
    *,
    records: RecordLedger | None = None,
    record_rows: Callable[[], np.ndarray | Iterable[np.ndarray]] | None = None,
) -> FieldsResult:
    """Ratios, winners, ranking, intervals and checks, computed once from a (merged) ledger.

    Args:
        records: the per-record counts, attached to the result (in-memory engine only).
        record_rows: returns `RecordLedger.bootstrap_rows()` of all records in id order, as one
            matrix or as consecutive blocks (read back one chunk at a time); the bootstrap asks
            for it only when distinct per-record patterns are many (more than a quarter of the
            records, or too many to keep). Defaults to `records`, block by block.
    """
    cfg = plan.config
    scored = list(plan.scored)
    all_fields = list(plan.fields)
    model_names = list(ledger.models)
    n = ledger.n_records
    n_models = len(model_names)
    warnings: list[str] = []
    unknown_strat = sorted(set(cfg.strategies) - set(all_fields))
    if unknown_strat:
        warnings.append(f"strategies given for fields that are not in the ground truth: {unknown_strat}")
    for m in model_names:
        if ledger.missing[m]:
            shown = ", ".join(repr(x) for x in ledger.missing_ids[m]) + (" …" if ledger.missing[m] > 5 else "")
            warnings.append(
                f"model {m!r}: {ledger.missing[m]} ground-truth record(s) have no prediction and count as empty predictions: {shown}"
            )
        columns = ledger.columns[m]
        known, present = set(all_fields), set(columns)  # sets: a file of 100,000 columns is not 10^10 comparisons
        unknown_cols = [c for c in columns if str(c) not in known]
        if unknown_cols and not plan.fields_given:
            warnings.append(f"model {m!r}: columns not in the ground truth are ignored: {_some(unknown_cols)}")
        absent_cols = [f for f in scored if f not in present]
        if absent_cols:
            warnings.append(f"model {m!r}: fields missing from the predictions count as empty predictions: {_some(absent_cols)}")

    # ledgers and ratios
    zd = cfg.zero_division
    model_fields: dict[str, dict[str, FieldMetrics]] = {}
    totals: dict[str, Counts] = {}
    for mi, m in enumerate(model_names):
        sums = ledger.counts[mi]  # (fields, 7)
        r = ratios(sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3], zero_division=zd)
        fm: dict[str, FieldMetrics] = {}
        for j, fname in enumerate(scored):
            c = Counts(**{k: int(sums[j, i]) for i, k in enumerate(_LEDGER_COLUMNS)})
            flags: list[str] = []
            if c.no_valid_classifications:
                flags.append("no_valid_classifications")
                p_, r_, f_, a_, e_ = 0.0, 0.0, 0.0, 0.0, 0.0
            else:
                p_, r_, f_, a_ = (float(r[k][j]) for k in ("precision", "recall", "f1", "accuracy"))
                e_ = c.exact / c.cells if c.cells else zd
                if c.cells < cfg.min_records:
                    flags.append("small_sample")
            if c.tp == c.fp == c.fn == 0 and c.tn > 0:
                flags.append("all_true_negative")
            ex = ledger.examples.get((m, fname), {})
            fm[fname] = FieldMetrics(
                counts=c, precision=p_, recall=r_, f1=f_, accuracy=a_, exact_match_rate=e_,
                strategy=cfg.strategy_for(fname).value, flags=tuple(flags),
                examples={kind: [dict(e) for e in v] for kind, v in ex.items()},
            )
        model_fields[m] = fm
        totals[m] = sum((f.counts for f in fm.values()), Counts())

    overall: dict[str, dict[str, float]] = {}
    micro: dict[str, dict[str, float]] = {}
    for m in model_names:
        valid = [f for f in model_fields[m].values() if f.valid]
        if valid:
            overall[m] = {k: float(np.mean([getattr(f, k) for f in valid])) for k in ("precision", "recall", "f1", "accuracy")}
        else:
            overall[m] = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "accuracy": 0.0}
        t = totals[m]
        mr = ratios(t.tp, t.fp, t.fn, t.tn, zero_division=zd)
        micro[m] = {k: float(mr[k]) for k in ("precision", "recall", "f1", "accuracy")}

    winners = field_winners({f: {m: model_fields[m][f].score() for m in model_names} for f in scored})
    wins = field_wins(winners, model_names)
    ranked = rank_by_metrics(RANKING, {m: {f"overall/{k}": overall[m][k] for k in ("f1", "precision", "recall")} for m in model_names}, wins)
    ranking = tuple(r.model for r in ranked)

    intervals: dict[str, Interval] = {}
    comparisons: tuple[PairComparison, ...] = ()
    if cfg.bootstrap > 0 and n > 0:
        pairs = list(zip(ranking[:-1], ranking[1:]))
        if record_rows is None and records is not None:
            record_rows = records.bootstrap_row_blocks
        intervals, diffs = bootstrap_macro_f1_patterns(
            model_names,
            (len(scored), 4),
            ledger.patterns,
            ledger.freq,
            pairs,
            records=record_rows,
            n_records=n,
            resamples=cfg.bootstrap,
            confidence=cfg.confidence,
            seed=cfg.seed,
            zero_division=zd,
        )
        comparisons = tuple(PairComparison(higher=a, lower=b, difference=diffs[(a, b)]) for a, b in pairs)

    sources = {m: plan.sources.get(m, "") for m in model_names}
    missing_counts = dict(ledger.missing)
    models: dict[str, ModelResult] = {}
    for r in ranked:
        models[r.model] = ModelResult(
            name=r.model,
            fields=model_fields[r.model],
            overall=overall[r.model],
            micro=micro[r.model],
            totals=totals[r.model],
            rank=r.rank,
            tier=r.tier,
            tier_colour=r.tier_colour,
            field_wins=wins[r.model],
            fields_won=tuple(f for f, w in winners.items() if w.win_share > 0 and r.model in w.winners),
            fields_scored=sum(1 for f in model_fields[r.model].values() if f.valid),
            missing_records=missing_counts[r.model],
            source=sources[r.model],
            overall_f1_ci=intervals.get(r.model),
        )

    checks = tuple(_checks(models, scored, n, cfg))
    for m, res in models.items():
        small = [f for f, v in res.fields.items() if "small_sample" in v.flags]
        if small:
            warnings.append(
                f"model {m!r}: fewer than {cfg.min_records} valid records support the metrics of {len(small)} field(s) "
                f"({', '.join(small[:8])}{' …' if len(small) > 8 else ''}); intervals will be wide."
            )
    if n_models == 1:
        warnings.append("only one model: every field is a universal tie, so no field wins are awarded.")

    cfg_dict = cfg.to_dict()
    cfg_dict["strategies_used"] = {f: cfg.strategy_for(f).value for f in all_fields}
    return FieldsResult(
        task="fields",
        models=models,
        ranking=ranking,
        field_winners=winners,
        comparisons=comparisons,
        checks=checks,
        warnings=tuple(warnings),
        fields=tuple(scored),
        n_records=n,
        config=cfg_dict,
        records=records,
        field_patterns=(ledger.field_patterns, ledger.field_freq) if cfg.bootstrap > 0 and n else None,
    )


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


def _checks(models: Mapping[str, ModelResult], fields: Sequence[str], n: int, cfg: FieldsConfig) -> list[Check]:
    """Mathematical-consistency and data-quality checks."""
    tol = 1e-9
    f1_bad, impossible, not_present_bad, macro_bad, range_bad = [], [], [], [], []
    for m, res in models.items():
        valid = [(f, v) for f, v in res.fields.items() if v.valid]
        for f, v in valid:
            c = v.counts
            if v.precision + v.recall > 0 and abs(v.f1 - 2 * v.precision * v.recall / (v.precision + v.recall)) > tol:
                f1_bad.append(f"{m}/{f}")
            if (v.precision >= 1 - tol and c.fp != 0) or (v.recall >= 1 - tol and c.fn != 0):
                impossible.append(f"{m}/{f}")
            if c.tp == c.fp == c.fn == 0 and c.tn > 0 and not (v.precision == v.recall == v.f1 == 1.0):
                not_present_bad.append(f"{m}/{f}")
        if valid:
            for k in ("precision", "recall", "f1", "accuracy"):
                vals = [getattr(v, k) for _, v in valid]
                if abs(res.overall[k] - float(np.mean(vals))) > tol:
                    macro_bad.append(f"{m}/{k}")
                if res.overall[k] > max(vals) + tol or res.overall[k] < min(vals) - tol:
                    range_bad.append(f"{m}/{k}")
    no_valid = [f"{m}/{f}" for m, res in models.items() for f, v in res.fields.items() if not v.valid]
    missing = {m: res.missing_records for m, res in models.items() if res.missing_records}
    small = [f"{m}/{f}" for m, res in models.items() for f, v in res.fields.items() if v.valid and v.counts.cells < cfg.min_records]

    def listing(items: list[str]) -> str:
        return ", ".join(items[:10]) + (f" … ({len(items)} in all)" if len(items) > 10 else "")

    return [
        Check(name="f1_formula", kind="consistency", passed=not f1_bad,
              detail="F1 = 2PR/(P+R) holds for every field" if not f1_bad else f"violated for {listing(f1_bad)}"),
        Check(name="impossible_metrics", kind="consistency", passed=not impossible,
              detail="precision 100% ⇒ FP = 0 and recall 100% ⇒ FN = 0" if not impossible else f"violated for {listing(impossible)}"),
        Check(name="perfect_not_present", kind="consistency", passed=not not_present_bad,
              detail="all-TN fields score 100%" if not not_present_bad else f"violated for {listing(not_present_bad)}"),
        Check(name="macro_average", kind="consistency", passed=not macro_bad,
              detail="overall metrics are the mean over fields with valid classifications" if not macro_bad else f"violated for {listing(macro_bad)}"),
        Check(name="overall_within_field_range", kind="consistency", passed=not range_bad,
              detail="overall metrics lie between the field minimum and maximum" if not range_bad else f"violated for {listing(range_bad)}"),
        Check(name="equal_length", kind="data_quality", passed=not missing,
              detail=f"every model has a prediction for all {n} records" if not missing else
              "records without a prediction: " + ", ".join(f"{m}: {k}" for m, k in sorted(missing.items()))),
        Check(name="valid_classifications", kind="data_quality", passed=not no_valid,
              detail="every field has valid classifications" if not no_valid else f"no valid classifications (all pending/error): {listing(no_valid)}"),
        Check(name="sample_size", kind="data_quality", passed=not small,
              detail=f"every field rests on ≥ {cfg.min_records} valid records" if not small else f"fewer than {cfg.min_records} valid records: {listing(small)}"),
    ]
