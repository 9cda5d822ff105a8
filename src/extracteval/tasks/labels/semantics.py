"""The `labels` task: per-feature one-vs-rest classification metrics.

Each record has several features (categorical, text, number or date). Per feature and per
observed label the one-vs-rest confusion counts tp/fp/fn/tn are the ledger (mergeable with `+`);
precision, recall, F1 and specificity come from them once, through `counts.ratios`.

Pitfalls of common per-feature scoring code, avoided here:
- a missing value (None, NaN, empty, a null token) is its own class `<MISSING>`, never the
  string "none";
- a value that does not parse as the feature's type stays normalised text, so two *different*
  unparsable values are never equal (treating both as "missing" would make them equal);
- rows present on one side only are never silently dropped: the `aligned` view scores the rows
  present on both sides, the `strict` view counts every unaligned row as an error.

Pipeline per feature: dictionary-encode truth and every model's column together → one canonical
key per *distinct* value → integer label codes → one `bincount` confusion matrix per model and
view → counts → ratios.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from extracteval.tasks.labels.contract import RANKING
from extracteval.core.ledger import Ledger, by_key, merge, smallest, union
from extracteval.core.normalize import NormalizationConfig, key_text
from extracteval.errors import InputError
from extracteval.core.counts import checked_zero_division, zero_division_text
from extracteval.core.feature_views import (  # noqa: F401 - the task's API too
    MISSING,
    FEATURE_TYPES,
    VIEWS,
    _MISSING_KEY,
    checked_types,
    ModelLabels,
    LabelEncoder,
    display_labels,
    FeatureLedger,
    ledger_from_codes,
    ledger_from_sets,
    FeatureMetrics,
    feature_metrics,
    ViewMetrics,
    view_metrics,
    RankedFeatures,
    ONE_MODEL_NOTE,
    rank_on_strict_view,
    FeatureViewsResult,
    check_model_names,
)

__all__ = [
    "MISSING",
    "FEATURE_TYPES",
    "VIEWS",
    "LabelsConfig",
    "ModelLabels",
    "FeatureLedger",
    "FeatureMetrics",
    "ViewMetrics",
    "LabelsModelResult",
    "LabelsResult",
    "LabelEncoder",
    "feature_ledger",
    "feature_metrics",
    "view_metrics",
    "score_labels",
    "check_models",
    "resolve_features",
    "ModelLedger",
    "LabelsLedger",
    "labels_ledger",
    "labels_result",
]


# ---------------------------------------------------------------------------------------------
# configuration and inputs


@dataclass(frozen=True, kw_only=True)
class LabelsConfig:
    """Options of the `labels` task.

    Attributes:
        types: per-feature type: `auto` (numbers, booleans and dates detected; the default;
            a number written as a code, `007` or `1.10`, stays a class of its own),
            `category`/`text` (text rules only: NFKC, casefold, whitespace; only the null tokens
            the user listed mean missing), `number`, `date` (values that do not parse stay text
            and are counted as `unparsable`).
        positive_labels: per-feature label whose one-vs-rest metrics become the feature's
            headline metrics (binary reporting); other features are macro-averaged over labels.
        classes: per-feature declared classes (the `labels` option): the feature's macro and
            weighted averages are taken over exactly these, a class that occurs nowhere with
            no support (scikit-learn's `labels=`); other labels still count as errors.
        normalization: null tokens, day-first dates, currency stripping.
        zero_division: value of a ratio whose denominator is 0: a number in [0, 1], or NaN (the
            text `nan` too): the ratio is undefined and left out of every average.
        multi_label: per-feature separator of the features whose cells are label sets (None: `;`):
            a list cell is the set of its items, a text cell is split on the separator, a
            missing cell is the empty set; each item is a label keyed by the feature's type rules.
    """

    types: Mapping[str, str] = field(default_factory=dict)
    positive_labels: Mapping[str, Any] = field(default_factory=dict)
    classes: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0
    multi_label: Mapping[str, str | None] = field(default_factory=dict)
    metadata: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", tuple(str(c) for c in self.metadata))
        object.__setattr__(self, "zero_division", checked_zero_division(self.zero_division, allow_nan=True))
        object.__setattr__(self, "types", checked_types(self.types, "feature"))
        object.__setattr__(self, "positive_labels", {str(k): v for k, v in self.positive_labels.items()})
        classes = {}
        for k, v in self.classes.items():
            listed = [v] if isinstance(v, (str, int, float, bool)) else list(v) if isinstance(v, (list, tuple)) else None
            if not listed:
                raise InputError(f"labels of feature {k!r}: expected a non-empty list of classes, but got {v!r}.")
            classes[str(k)] = tuple(listed)
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "multi_label", _separators(self.multi_label))
        for what, mapping in (("positive label", self.positive_labels), ("labels", self.classes)):
            both = sorted(set(mapping) & set(self.multi_label))
            if both:
                raise InputError(f"{what} given for multi-label features {both}: a multi-label feature is averaged over all its labels.")

    def type_of(self, feature: str) -> str:
        return self.types.get(feature, "auto")

    def to_dict(self) -> dict[str, Any]:
        return {
            "types": dict(sorted(self.types.items())),
            "positive_labels": {k: _plain(v) for k, v in sorted(self.positive_labels.items())},
            "labels": {k: [_plain(x) for x in v] for k, v in sorted(self.classes.items())},
            "normalization": self.normalization.to_dict(),
            "zero_division": zero_division_text(self.zero_division),
            "missing_label": MISSING,
            **({"multi_label": dict(sorted(self.multi_label.items()))} if self.multi_label else {}),
            **({"metadata": list(self.metadata)} if self.metadata else {}),
        }


def _separators(given: Any) -> dict[str, str]:
    """{feature: separator} of the multi-label features: a mapping (None: `;`) or a list of features."""
    from extracteval.tasks.labels.sets import DEFAULT_SEPARATOR

    if isinstance(given, (list, tuple)):
        given = dict.fromkeys(given)
    if not isinstance(given, Mapping):
        raise InputError(f"multi_label: expected a mapping of feature to separator (or null), but got {given!r}.")
    out = {}
    for k, v in given.items():
        if v is None:
            v = DEFAULT_SEPARATOR
        if not isinstance(v, str) or not v.strip() or any(c in v for c in "[]\n\r"):
            raise InputError(f"multi_label of feature {k!r}: the separator must be non-blank text without brackets or line breaks, but got {v!r}.")
        out[str(k)] = v
    return out


def feature_ledger(
    truth: Sequence[Any],
    pred: Sequence[Any],
    *,
    type: str = "auto",
    normalization: NormalizationConfig | None = None,
    missing_truth: Sequence[Any] = (),
    extra_pred: Sequence[Any] = (),
) -> FeatureLedger:
    """The ledger of raw aligned values (plus unaligned rows); a convenience over `ledger_from_codes`."""
    enc = LabelEncoder(type, normalization or NormalizationConfig())
    (t, p, m, e), table = enc.encode([np.asarray(list(x), dtype=object) for x in (truth, pred, missing_truth, extra_pred)])
    return ledger_from_codes(t, p, display_labels(table), missing_truth=m, extra_pred=e)


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, kw_only=True)
class LabelsModelResult(RankedFeatures):
    name: str
    aligned: ViewMetrics
    strict: ViewMetrics
    ledgers: Mapping[str, Mapping[str, FeatureLedger]]  # view → feature → ledger
    aligned_rows: int
    missing_rows: int
    extra_rows: int
    unparsable: Mapping[str, int]
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ranking_dict(),
            "source": self.source,
            "alignment": {
                "aligned_rows": self.aligned_rows,
                "missing_rows": self.missing_rows,
                "extra_rows": self.extra_rows,
            },
            "unparsable_predictions": dict(self.unparsable),
            "aligned": self.aligned.to_dict(),
            "strict": self.strict.to_dict(),
        }


@dataclass(frozen=True, kw_only=True)
class LabelsResult(FeatureViewsResult):
    unparsable_truth: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return self.document(VIEWS, after={"unparsable_truth": dict(self.unparsable_truth)})


# ---------------------------------------------------------------------------------------------
# the public entry point


def _str_ids(index: pd.Index) -> pd.Index:
    # ids 1 and "1" are the same record; a string index is used as it is (no per-id conversion)
    return index if pd.api.types.is_string_dtype(index.dtype) and index.inferred_type == "string" else index.astype(str)


def _ids(index: pd.Index, what: str) -> pd.Index:
    return _check_unique(_str_ids(index), what)


def _check_unique(ids: pd.Index, what: str) -> pd.Index:
    if ids.has_duplicates:
        dup = sorted(set(ids[ids.duplicated()]))
        shown = ", ".join(repr(d) for d in dup[:5]) + (" …" if len(dup) > 5 else "")
        raise InputError(f"{what}: record ids must be unique; found {len(dup)} duplicated: {shown}.")
    return ids


def check_models(predictions: Sequence[ModelLabels]) -> None:
    if not predictions:
        raise InputError("no predictions: give at least one model's predictions.")
    check_model_names(predictions)


def resolve_features(columns: Sequence[str], features: Sequence[str] | None, cfg: LabelsConfig, truth_source: str) -> list[str]:
    """The features to score: `features` (checked against the truth columns) or every column."""
    columns = list(columns)
    if features is not None:
        unknown = [f for f in features if f not in columns]
        if unknown:
            raise InputError(f"{truth_source}: features {unknown} are not columns of the ground truth (columns: {columns}).")
        meta = [f for f in features if f in cfg.metadata]
        if meta:
            raise InputError(f"{truth_source}: {meta} are named as features and as record metadata (--slice-by / --cluster-by); "
                             "a metadata column is not scored.")
        feats = list(dict.fromkeys(features))
    else:
        feats = [c for c in columns if c not in cfg.metadata]
    if not feats:
        raise InputError(f"{truth_source}: no feature columns; expected an id column and at least one feature column.")
    for what, mapping in (("type", cfg.types), ("positive label", cfg.positive_labels), ("labels", cfg.classes), ("multi_label", cfg.multi_label)):
        unknown = sorted(set(mapping) - set(feats) - set(cfg.metadata))  # a metadata column keeps its declarations unused
        if unknown:
            raise InputError(f"{what} given for features {unknown} that are not scored (features: {feats}).")
    return feats


def score_labels(
    truth: pd.DataFrame,
    predictions: Sequence[ModelLabels],
    *,
    config: LabelsConfig | None = None,
    features: Sequence[str] | None = None,
    truth_source: str = "truth",
) -> LabelsResult:
    """Score one or more models' per-feature labels against the truth.

    Args:
        truth: index = record id, one column per feature.
        predictions: one `ModelLabels` per model (names unique). Ids not in the truth and truth
            ids without a prediction are reported and counted as errors in the `strict` view.
        config: feature types, positive labels, normalisation, zero_division.
        features: features to score (default: every truth column, in order).
        truth_source: name of the truth input, used in messages.

    Examples:
        >>> import pandas as pd
        >>> t = pd.DataFrame({"colour": ["red", "blue", None]}, index=["1", "2", "3"])
        >>> p = pd.DataFrame({"colour": ["red", "red"]}, index=["1", "2"])
        >>> r = score_labels(t, [ModelLabels(name="m", values=p)])
        >>> m = r.models["m"]
        >>> m.aligned.row_accuracy, round(m.strict.row_accuracy, 4), m.missing_rows
        (0.5, 0.3333, 1)
    """
    cfg = config or LabelsConfig()
    check_models(predictions)
    # set_axis is lazy under copy-on-write: no copy of the caller's data
    truth = truth.set_axis(_ids(truth.index, truth_source), axis=0)
    columns = [str(c) for c in truth.columns]
    truth = truth.set_axis(columns, axis=1)
    feats = resolve_features(columns, features, cfg, truth_source)

    ledger = labels_ledger(truth, predictions, config=cfg, features=feats)
    return labels_result(ledger, config=cfg, features=feats, truth_source=truth_source,
                         sources={p.name: p.source for p in predictions})


# ---------------------------------------------------------------------------------------------
# the mergeable ledger of a set of records, and the result computed once from it
#
# Ledgers are keyed by *canonical* label key, never by display label: the display label of a
# key depends on every other key of the feature (a clash keeps the type prefix), so it can only
# be resolved once the whole data set has been seen. The chunked engine (`tasks.labels.chunked`)
# scores chunks into these ledgers and adds them up; `score_labels` is one chunk.

_SHOWN_IDS = 5


def _smallest(ids: Any) -> tuple[str, ...]:
    return tuple(heapq.nsmallest(_SHOWN_IDS, ids))


@dataclass(frozen=True, kw_only=True)
class ModelLedger(Ledger):
    """One model's counts over a set of records: per view and feature a `FeatureLedger` keyed by
    canonical label key, the row counts, the smallest unaligned ids (for the warnings), predicted
    values that do not parse (number/date features) and the feature columns the predictions have."""

    aligned: Mapping[str, FeatureLedger] = merge(by_key())
    strict: Mapping[str, FeatureLedger] = merge(by_key())
    aligned_rows: int
    missing_rows: int
    extra_rows: int
    correct_rows: int
    missing_ids: tuple[str, ...] = merge(smallest(_SHOWN_IDS))
    extra_ids: tuple[str, ...] = merge(smallest(_SHOWN_IDS))
    unparsable: Mapping[str, int] = merge(by_key())
    columns: frozenset[str] = merge(union)


@dataclass(frozen=True, kw_only=True)
class LabelsLedger(Ledger):
    """Counts of a set of truth records and predicted rows, mergeable with `+` (disjoint sets).

    `keys` holds per feature every canonical label key seen on any side (the label table),
    `truth_missing` the truth rows whose label is `<MISSING>`: the "missing in every record"
    check and the display labels are resolved from them once, in `labels_result`.
    """

    n_records: int
    keys: Mapping[str, frozenset[str]] = merge(by_key(union))
    truth_missing: Mapping[str, int] = merge(by_key())
    unparsable_truth: Mapping[str, int] = merge(by_key())
    models: Mapping[str, ModelLedger] = merge(by_key())


def labels_ledger(
    truth: pd.DataFrame,
    predictions: Sequence[ModelLabels],
    *,
    config: LabelsConfig,
    features: Sequence[str],
) -> LabelsLedger:
    """The ledger of these truth records and predicted rows (`features` already checked; a
    feature column absent from a frame is `<MISSING>` on every row of it)."""
    cfg = config
    feats = list(features)
    truth_index = _ids(truth.index, "truth")
    truth = truth.set_axis(truth_index, axis=0)
    truth = truth.set_axis([str(c) for c in truth.columns], axis=1)
    aligned_inputs = _ledger_align(truth, predictions)
    counted = _ledger_count(truth, aligned_inputs, feats, cfg)
    models = _ledger_models(truth, aligned_inputs, feats, counted)
    return LabelsLedger(n_records=len(truth_index), keys=counted.keys, truth_missing=counted.truth_missing,
                        unparsable_truth=counted.unparsable_truth, models=models)


# one model's aligned predictions: the model, its values (string ids and columns), the (truth, predicted)
# positions of the rows on both sides, the truth rows it lacks and its rows the truth lacks
_LedgerInput = tuple[ModelLabels, pd.DataFrame, tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray]


def _ledger_align(truth: pd.DataFrame, predictions: Sequence[ModelLabels]) -> list[_LedgerInput]:
    """`labels_ledger`'s alignment: each model's rows (in name order) matched to the truth's by id."""
    truth_index = truth.index
    # Alignment by position: one hash lookup of every predicted id in the truth index, per model.
    t_index: pd.Index | None = None  # built only when some model's ids come in another order
    n_truth = len(truth_index)

    aligned_inputs: list[_LedgerInput] = []
    for p in sorted(predictions, key=lambda x: x.name):
        what = p.source or f"predictions of model {p.name!r}"
        p_index = _str_ids(p.values.index)
        # the usual case, the predictions' ids in the truth's order: unique because the truth's
        # are, and aligned row by row (no hash look-up of each id)
        same_order = p_index.equals(truth_index)
        if not same_order:
            _check_unique(p_index, what)
        values = p.values.set_axis(p_index, axis=0)
        values = values.set_axis([str(c) for c in values.columns], axis=1)
        if same_order:
            loc = np.arange(n_truth, dtype=np.intp)
        else:
            if t_index is None:
                t_index = pd.Index(truth.index.to_numpy(dtype=object))
            loc = t_index.get_indexer(values.index.to_numpy(dtype=object))
        in_truth = loc >= 0
        both_p = np.flatnonzero(in_truth)
        both_t = loc[in_truth]
        hit = np.zeros(n_truth, dtype=bool)
        hit[both_t] = True
        missing_t = np.flatnonzero(~hit)
        extra_p = np.flatnonzero(~in_truth)
        aligned_inputs.append((p, values, (both_t, both_p), missing_t, extra_p))
    return aligned_inputs


@dataclass
class _LedgerCounts:
    """`labels_ledger`'s counts: per model the views' feature ledgers, which aligned rows are right on every feature,
    unparsable predictions and which features it predicts a value for; per feature the label keys, the truth's
    missing and unparsable labels."""

    ledgers: dict[str, dict[str, dict[str, FeatureLedger]]]
    row_ok: dict[str, np.ndarray]
    keys: dict[str, frozenset[str]]
    truth_missing: dict[str, int]
    unparsable_truth: dict[str, int]
    unparsable_pred: dict[str, dict[str, int]]
    has_value: dict[str, dict[str, bool]]


def _ledger_column(frame: pd.DataFrame, f: str) -> np.ndarray:
    """A feature's cells as an object array (all None when the frame lacks the column)."""
    if f not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    # missing cells (None, NaN, NA, NaT) are told apart by the encoder, once per distinct value
    return frame[f].to_numpy(dtype=object, copy=False)


def _ledger_count(truth: pd.DataFrame, aligned_inputs: Sequence[_LedgerInput], feats: Sequence[str], cfg: LabelsConfig) -> _LedgerCounts:
    """`labels_ledger`'s count: each feature encoded across the truth and every model once, then one confusion
    ledger per model and view."""
    names = [a[0].name for a in aligned_inputs]
    out = _LedgerCounts(
        ledgers={m: {"aligned": {}, "strict": {}} for m in names},
        row_ok={m: np.ones(len(a[2][0]), dtype=bool) for m, a in zip(names, aligned_inputs)},
        keys={}, truth_missing={}, unparsable_truth={},
        unparsable_pred={m: {} for m in names}, has_value={m: {} for m in names},
    )
    ledgers, row_ok, has_value = out.ledgers, out.row_ok, out.has_value
    for f in feats:
        if f in cfg.multi_label:
            _count_sets(out, f, truth, aligned_inputs, cfg)
            continue
        enc = LabelEncoder(cfg.type_of(f), cfg.normalization)
        codes, table = enc.encode([_ledger_column(truth, f)] + [_ledger_column(values, f) for _, values, *_ in aligned_inputs])
        t_codes = codes[0]
        out.keys[f] = frozenset(table)
        missing_code = table.index(_MISSING_KEY) if _MISSING_KEY in table else -1
        out.truth_missing[f] = int((t_codes == missing_code).sum()) if missing_code >= 0 else 0
        unp = [i for i, k in enumerate(table) if k in enc.unparsable]
        if cfg.type_of(f) in ("number", "date"):
            out.unparsable_truth[f] = int(np.isin(t_codes, unp).sum()) if unp else 0
        for mi, (p, values, (both_t, both_p), missing_t, extra_p) in enumerate(aligned_inputs):
            pc = codes[mi + 1]
            if not has_value[p.name].get(f):
                has_value[p.name][f] = bool((pc != missing_code).any())
            t_both, p_both = t_codes[both_t], pc[both_p]
            ledgers[p.name]["aligned"][f] = ledger_from_codes(t_both, p_both, table)
            ledgers[p.name]["strict"][f] = ledger_from_codes(t_both, p_both, table, missing_truth=t_codes[missing_t], extra_pred=pc[extra_p])
            row_ok[p.name] &= t_both == p_both
            if cfg.type_of(f) in ("number", "date"):
                out.unparsable_pred[p.name][f] = int(np.isin(pc, unp).sum()) if unp else 0
    return out


def _count_sets(out: _LedgerCounts, f: str, truth: pd.DataFrame, aligned_inputs: Sequence[_LedgerInput], cfg: LabelsConfig) -> None:
    """`_ledger_count` of a multi-label feature: its cells as label sets, one set ledger per model and view; an empty truth
    set stands for the feature's missing value (a feature empty in every truth record is refused as a missing one is)."""
    from extracteval.tasks.labels.sets import encode_sets

    enc = LabelEncoder(cfg.type_of(f), cfg.normalization)
    pairs, table = encode_sets([_ledger_column(truth, f)] + [_ledger_column(values, f) for _, values, *_ in aligned_inputs], cfg.multi_label[f], enc)
    n_truth = len(truth)
    (t_rows, t_codes) = pairs[0]
    empty = n_truth - len(np.unique(t_rows))
    out.keys[f] = frozenset(table) | ({_MISSING_KEY} if empty else frozenset())
    out.truth_missing[f] = empty
    unp = [i for i, k in enumerate(table) if k in enc.unparsable]
    typed = cfg.type_of(f) in ("number", "date")
    if typed:
        out.unparsable_truth[f] = int(np.isin(t_codes, unp).sum()) if unp else 0
    for mi, (p, values, (both_t, both_p), missing_t, extra_p) in enumerate(aligned_inputs):
        p_rows, p_codes = pairs[mi + 1]
        if not out.has_value[p.name].get(f):
            out.has_value[p.name][f] = bool(len(p_rows))
        n_al, n_miss = len(both_t), len(missing_t)
        for view, t_at, p_at, rows in (("aligned", (both_t,), (both_p,), n_al),
                                       ("strict", (both_t, missing_t), (both_p, extra_p), n_al + n_miss + len(extra_p))):
            # each side's rows renumbered into the view's: aligned rows first, then the truth's missing rows, then extra rows
            t_pos = np.full(n_truth, -1, dtype=np.int64)
            t_pos[np.concatenate(t_at)] = np.arange(sum(len(x) for x in t_at))
            p_pos = np.full(len(values), -1, dtype=np.int64)
            p_pos[np.concatenate(p_at)] = np.concatenate([np.arange(n_al), n_al + n_miss + np.arange(len(p_at[1]) if len(p_at) > 1 else 0)])
            tr, pr = t_pos[t_rows], p_pos[p_rows]
            led, equal = ledger_from_sets((tr[tr >= 0], t_codes[tr >= 0]), (pr[pr >= 0], p_codes[pr >= 0]), table, rows, aligned=n_al)
            out.ledgers[p.name][view][f] = led
            if view == "aligned":
                out.row_ok[p.name] &= equal
        if typed:
            out.unparsable_pred[p.name][f] = int(np.isin(p_codes, unp).sum()) if unp else 0


def _ledger_models(truth: pd.DataFrame, aligned_inputs: Sequence[_LedgerInput], feats: Sequence[str],
                   counted: _LedgerCounts) -> dict[str, ModelLedger]:
    """`labels_ledger`'s per-model ledgers: the views' counts, row counts, the smallest unaligned ids, columns."""
    models = {}
    for p, values, (both, _), missing, extra in aligned_inputs:
        models[p.name] = ModelLedger(
            aligned=counted.ledgers[p.name]["aligned"], strict=counted.ledgers[p.name]["strict"],
            aligned_rows=len(both), missing_rows=len(missing), extra_rows=len(extra),
            correct_rows=int(counted.row_ok[p.name].sum()),
            missing_ids=_smallest(truth.index[missing].tolist()), extra_ids=_smallest(values.index[extra].tolist()),
            # a feature is among the model's columns when some row predicts a value for it: the
            # same set whether the rows come whole or in chunks (a chunk may lack a column)
            # (a label other than <MISSING> is a value; only a column of <MISSING> labels needs the check)
            unparsable=counted.unparsable_pred[p.name],
            columns=frozenset(f for f in feats if f in values.columns and (counted.has_value[p.name].get(f) or values[f].notna().any())),
        )
    return models


def _shown(ids: Sequence[str], n: int) -> str:
    return ", ".join(repr(x) for x in ids) + (" …" if n > len(ids) else "")


def _relabel(ledger: FeatureLedger, display: Mapping[str, str]) -> FeatureLedger:
    return replace(ledger, per_label=dict(sorted((display[k], c) for k, c in ledger.per_label.items())))


def _row_warnings(ledger: LabelsLedger, names: list[str], feats: list[str]) -> list[str]:
    """Per model: rows without a prediction, rows without a truth, features it does not predict."""
    warnings: list[str] = []
    for m in names:
        led = ledger.models[m]
        if led.missing_rows:
            warnings.append(
                f"model {m!r}: {led.missing_rows} ground-truth row(s) have no prediction; counted as errors in the strict view: "
                + _shown(led.missing_ids, led.missing_rows)
            )
        if led.extra_rows:
            warnings.append(
                f"model {m!r}: {led.extra_rows} predicted row(s) have no ground truth; counted as errors in the strict view: "
                + _shown(led.extra_ids, led.extra_rows)
            )
        absent = [f for f in feats if f not in led.columns]
        if absent:
            warnings.append(f"model {m!r}: features missing from the predictions are predicted as {MISSING}: {absent}")
    return warnings


def _as_displayed(value: Any, f: str, cfg: LabelsConfig, display: Mapping[str, str]) -> tuple[str, bool]:
    """A label the user named (a positive label, a declared class) as the results display it, and whether it occurs."""
    k = LabelEncoder(cfg.type_of(f), cfg.normalization).key(value)
    return (display[k], True) if k in display else (MISSING if k == _MISSING_KEY else key_text(k), False)


def _declared_classes(cfg: LabelsConfig, feats: list[str], display: Mapping[str, Mapping[str, str]], warnings: list[str]) -> dict[str, list[str]]:
    """Per feature with declared classes: those classes as displayed; labels that occur outside them are named in `warnings`."""
    declared: dict[str, list[str]] = {}
    for f in feats:
        if f in cfg.classes:
            declared[f] = list(dict.fromkeys(_as_displayed(v, f, cfg, display[f])[0] for v in cfg.classes[f]))
            if f in cfg.positive_labels and _as_displayed(cfg.positive_labels[f], f, cfg, display[f])[0] not in declared[f]:
                raise InputError(f"feature {f!r}: the positive label {cfg.positive_labels[f]!r} is not one of its declared classes "
                                 f"({', '.join(map(repr, cfg.classes[f]))}); declare it, or drop one of the two options.")
            # missing values are the class <MISSING>, outside the averages unless declared (as a null token)
            outside = sorted(set(display[f].values()) - set(declared[f]) - {MISSING})
            if outside:
                shown = ", ".join(repr(x) for x in outside[:10]) + (f" and {len(outside) - 10} more" if len(outside) > 10 else "")
                warnings.append(f"feature {f!r}: labels outside the declared classes occur ({shown}); they are left out of the feature's "
                                "averages, and a row where one stands against a declared class counts as that class's false positive "
                                "or false negative.")
    return declared


def _display_labels(ledger: LabelsLedger, cfg: LabelsConfig, feats: list[str], truth_source: str,
                    warnings: list[str]) -> tuple[dict[str, dict[str, str]], dict[str, str | None]]:
    """Per feature: each label key's display label, and the positive label as displayed (a positive label that occurs
    nowhere is added to `warnings`); a feature missing in every truth record is an error."""
    display: dict[str, dict[str, str]] = {}
    positive: dict[str, str | None] = {}
    for f in feats:
        table = sorted(ledger.keys[f])
        if _MISSING_KEY in table and ledger.truth_missing[f] == ledger.n_records:
            raise InputError(
                f"{truth_source}: feature {f!r} is missing ({MISSING}) in every ground-truth record; "
                "there is nothing to score: fill it or leave it out with --features."
            )
        labels = display_labels(table)
        display[f] = dict(zip(table, labels))
        if f in cfg.positive_labels:
            positive[f], found = _as_displayed(cfg.positive_labels[f], f, cfg, display[f])
            if not found:
                warnings.append(f"feature {f!r}: positive label {cfg.positive_labels[f]!r} occurs in no truth or prediction.")
    return display, positive


def labels_result(
    ledger: LabelsLedger,
    *,
    config: LabelsConfig,
    features: Sequence[str],
    truth_source: str = "truth",
    sources: Mapping[str, str] | None = None,
) -> LabelsResult:
    """Display labels, checks over the whole data set, ratios, feature winners and the ranking,
    once, from the ledger of every record."""
    cfg = config
    feats = list(features)
    names = sorted(ledger.models)
    sources = sources or {}
    warnings = _row_warnings(ledger, names, feats)
    display, positive = _display_labels(ledger, cfg, feats, truth_source, warnings)
    declared = _declared_classes(cfg, feats, display, warnings)

    for f, k in ledger.unparsable_truth.items():
        if k:
            warnings.append(f"{truth_source}: feature {f!r} ({cfg.type_of(f)}): {k} ground-truth value(s) do not parse and are compared as text.")
    for m in names:
        for f, k in ledger.models[m].unparsable.items():
            if k:
                warnings.append(f"model {m!r}: feature {f!r} ({cfg.type_of(f)}): {k} predicted value(s) do not parse and are compared as text.")
    zd = cfg.zero_division
    sets = [f for f in feats if f in cfg.multi_label]
    views: dict[str, dict[str, ViewMetrics]] = {}
    shown_ledgers: dict[str, dict[str, dict[str, FeatureLedger]]] = {}
    for m in names:
        led = ledger.models[m]
        shown_ledgers[m] = {v: {f: _relabel(x, display[f]) for f, x in getattr(led, v).items()} for v in ("aligned", "strict")}
        ok_rows = led.correct_rows if led.aligned_rows else 0
        views[m] = {
            "aligned": view_metrics("aligned", shown_ledgers[m]["aligned"], correct_rows=ok_rows, rows=led.aligned_rows, positive_labels=positive,
                                    zero_division=zd, classes=declared, sets=sets),
            "strict": view_metrics("strict", shown_ledgers[m]["strict"], correct_rows=ok_rows,
                                   rows=led.aligned_rows + led.missing_rows + led.extra_rows, positive_labels=positive, zero_division=zd,
                                   classes=declared, sets=sets),
        }

    winners, ranked = rank_on_strict_view(RANKING, {m: views[m]["strict"] for m in names}, feats)
    models: dict[str, LabelsModelResult] = {}
    for m, place in ranked:
        led = ledger.models[m]
        models[m] = LabelsModelResult(
            **vars(place), name=m, aligned=views[m]["aligned"], strict=views[m]["strict"], ledgers=shown_ledgers[m],
            aligned_rows=led.aligned_rows, missing_rows=led.missing_rows, extra_rows=led.extra_rows,
            unparsable=led.unparsable, source=sources.get(m, ""),
        )
    if len(names) == 1:
        warnings.append(ONE_MODEL_NOTE)
    cfg_dict = cfg.to_dict()
    cfg_dict["types_used"] = {f: cfg.type_of(f) for f in feats}
    cfg_dict["labels_used"] = declared  # the declared classes as the results display them
    cfg_dict["positive_labels_used"] = positive  # the positive labels as the results display them
    return LabelsResult(
        task="labels", features=tuple(feats), n_records=ledger.n_records, models=models,
        ranking=tuple(m for m, _ in ranked), feature_winners=winners, unparsable_truth=dict(ledger.unparsable_truth),
        warnings=tuple(warnings), config=cfg_dict,
    )


def _plain(v: Any) -> Any:
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)
