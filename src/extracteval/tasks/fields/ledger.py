"""The `fields` task's ledger: what a chunk of records leaves to be merged (per model and field, the summed counts,
the distinct per-record count patterns with their frequencies, the first examples of each kind), and the plan
every chunk is counted by."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.bootstrap import field_patterns, merge_field_patterns, merge_patterns, record_patterns
from extracteval.core.ledger import Ledger, by_key, joint, keep, merge, ordered_union, same, smallest, whole
from extracteval.core.normalize import NormalizationConfig, Normalizer
from extracteval.core.similarity import FuzzySimilarity
from extracteval.core.strategies import Strategy
from extracteval.errors import InputError
from extracteval.io.wide_tables import ModelPredictions
from extracteval.tasks.fields.config import FieldsConfig, KINDS, RecordLedger, _OK
from extracteval.tasks.fields.counting import _check_unique, _classify_field, _column_codes, _encode, _examples, _sorted_ids, _status_codes, _str_index


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
        meta = [f for f in fields if f in cfg.metadata]
        if meta:
            raise InputError(f"{truth_source}: {meta} are named as fields and as record metadata (--slice-by / --cluster-by); "
                             "a metadata column is not scored.")
        all_fields = list(fields)
    else:
        all_fields = [f for f in all_fields if f not in cfg.metadata]
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


def _check_models(predictions: Sequence[ModelPredictions], plan: FieldsPlan) -> None:
    """Each model given once, and exactly the plan's models."""
    given = sorted(p.name for p in predictions)
    if len(set(given)) != len(given):
        dup = sorted({m for m in given if given.count(m) > 1})[0]
        raise InputError(f"model {dup!r} is given twice; each --predictions needs a unique NAME.")
    if tuple(given) != plan.models:
        raise ValueError(f"predictions are for models {given}, but the plan has {list(plan.models)}.")


@dataclass
class _Aligned:
    """The models' predictions aligned to the truth's sorted ids: per model (in name order) its predictions,
    values frame (string index) and status codes, its indexer into the sorted ids, and its missing records."""

    models: list[tuple[ModelPredictions, pd.DataFrame, np.ndarray]]
    indexers: list[np.ndarray]
    missing: dict[str, int]
    missing_ids: dict[str, tuple[str, ...]]


def _align_predictions(predictions: Sequence[ModelPredictions], order: np.ndarray, order_index: pd.Index,
                       scored: list[str], plan: FieldsPlan) -> _Aligned:
    """Read each model's predictions against the sorted truth ids: unique ids, all in the truth; which truth
    records it lacks; its status codes per scored field."""
    out = _Aligned(models=[], indexers=[], missing={}, missing_ids={})
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
        out.missing[p.name] = len(miss)
        out.missing_ids[p.name] = tuple(str(x) for x in sorted(miss)[:5])
        status = p.status
        if status is not None:
            status = status.copy(deep=False)
            status.index = _str_index(status.index)
        codes = _status_codes(status, order, scored, what)
        out.models.append((p, values, codes))
        out.indexers.append(model_indexer)
    return out


def _count_fields(
    truth: pd.DataFrame, aligned: _Aligned, order: np.ndarray, order_index: pd.Index, scored: list[str], cfg: FieldsConfig,
    keep_codes: dict[str | None, dict[str, tuple[np.ndarray, Any]]] | None,
) -> tuple[dict[str, np.ndarray], dict[tuple[str, str], dict[str, tuple[Mapping[str, Any], ...]]]]:
    """Classify every cell, field by field (values encoded across the truth and all models together): per model
    the (records, fields, tp/fp/fn/tn/excluded) int32 counts, and per (model, field) the examples of each kind."""
    normalizers: dict[NormalizationConfig, Normalizer] = {}
    sim = FuzzySimilarity(scorer=cfg.fuzzy_scorer)
    n = len(order)
    per_record = {a[0].name: np.zeros((n, len(scored), 5), dtype=np.int32) for a in aligned.models}
    examples: dict[tuple[str, str], dict[str, tuple[Mapping[str, Any], ...]]] = {}
    truth_indexer = truth.index.get_indexer(order_index)

    for j, fname in enumerate(scored):
        cols = [_column_codes(truth, fname, truth_indexer, None if keep_codes is None else keep_codes.setdefault(None, {}))] + [
            _column_codes(v, fname, idx, None if keep_codes is None else keep_codes.setdefault(p.name, {}))
            for (p, v, _), idx in zip(aligned.models, aligned.indexers)
        ]
        rules = cfg.normalization_for(fname)
        normalizer = normalizers.get(rules) or normalizers.setdefault(rules, Normalizer(rules))
        enc = _encode(cols, normalizer)
        counts = _classify_field(enc, cfg.strategy_for(fname), sim, cfg.fuzzy_threshold)
        for mi, (p, _, status_codes) in enumerate(aligned.models):
            excl = status_codes[:, j] != _OK
            c = counts[mi]
            c[excl] = 0
            per_record[p.name][:, j, :4] = c
            per_record[p.name][:, j, 4] = excl
            ex = _examples(c, excl, enc, mi, order, cfg.max_examples)
            examples[(p.name, fname)] = {kind: tuple(v) for kind, v in ex.items()}
    return per_record, examples


def _summed_counts(per_record: Mapping[str, np.ndarray], model_names: list[str], n_fields: int) -> np.ndarray:
    """The ledger's (models, fields, 7) int64 sums: tp, fp, fn, tn, excluded, cells (not excluded), exact."""
    ledger_counts = np.zeros((len(model_names), n_fields, len(_LEDGER_COLUMNS)), dtype=np.int64)
    for mi, m in enumerate(model_names):
        arr = per_record[m]
        ledger_counts[mi, :, :5] = arr.sum(axis=0)
        ledger_counts[mi, :, 5] = (arr[:, :, 4] == 0).sum(axis=0)
        ledger_counts[mi, :, 6] = ((arr[:, :, 4] == 0) & (arr[:, :, 1] == 0) & (arr[:, :, 2] == 0)).sum(axis=0)
    return ledger_counts


def _bootstrap_patterns(records: RecordLedger, per_record: Mapping[str, np.ndarray], model_names: list[str], n_fields: int,
                        bootstrap: int) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray]:
    """The distinct per-record and per-field count patterns with their frequencies (empty when no intervals)."""
    if bootstrap > 0:
        patterns, freq = record_patterns(records.bootstrap_rows())
        fpat, ffreq = field_patterns([per_record[m] for m in model_names])
    else:  # no intervals: no patterns to keep
        patterns, freq = np.zeros((0, len(model_names) * n_fields * 4), dtype=np.int8), np.zeros(0, dtype=np.int64)
        fpat, ffreq = np.zeros((0, 6), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return patterns, freq, fpat, ffreq


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
    _check_models(predictions, plan)
    scored = list(plan.scored)
    truth = truth.copy(deep=False)
    truth.index = _str_index(truth.index)
    _check_unique(truth.index, plan.truth_source)
    order = _sorted_ids(truth.index)
    order_index = pd.Index(order)
    aligned = _align_predictions(predictions, order, order_index, scored, plan)
    model_names = [a[0].name for a in aligned.models]
    per_record, examples = _count_fields(truth, aligned, order, order_index, scored, cfg, keep_codes)
    ledger_counts = _summed_counts(per_record, model_names, len(scored))
    records = RecordLedger(record_ids=tuple(order), fields=tuple(scored), counts=per_record)
    if on_records is not None:
        on_records(records)
    patterns, freq, fpat, ffreq = _bootstrap_patterns(records, per_record, model_names, len(scored), cfg.bootstrap)
    ledger = FieldsLedger(
        models=tuple(model_names),
        fields=tuple(scored),
        counts=ledger_counts,
        examples=examples,
        missing=aligned.missing,
        missing_ids=aligned.missing_ids,
        columns={p.name: tuple(v.columns) for p, v, _ in aligned.models},
        n_records=len(order),
        patterns=patterns,
        freq=freq,
        field_patterns=fpat,
        field_freq=ffreq,
        max_examples=cfg.max_examples,
    )
    return ledger, records
