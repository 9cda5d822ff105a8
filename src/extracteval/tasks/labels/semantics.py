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

from extracteval.core.counts import Counts, ratios
from extracteval.core.normalize import NormalizationConfig, Normalizer, key_text, key_type
from extracteval.core.ranking import FieldWinner, Score, field_winners, field_wins, format_wins, rank_by_metrics
from extracteval.errors import InputError

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

MISSING = "<MISSING>"
FEATURE_TYPES = ("auto", "category", "text", "number", "date")
# the two views every result carries, with the sentence that says what each one is
VIEWS = {
    "aligned": "rows present in both truth and predictions only",
    "strict": "every row of either side; a row missing from one side counts as an error",
}
_MISSING_KEY = "\x00missing"  # sorts first; cannot collide with a canonical key (those start "t:", "n:", …)


# ---------------------------------------------------------------------------------------------
# configuration and inputs


def checked_types(types: Mapping[Any, Any], item: str) -> dict[str, str]:
    """Per-`item` value types (`auto`, `category`, …) with names as text and types in lower
    case; an unknown type is refused by name."""
    out = {}
    for k, v in types.items():
        t = str(v).strip().lower()
        if t not in FEATURE_TYPES:
            raise InputError(f"type of {item} {k!r}: expected one of {', '.join(FEATURE_TYPES)}, but got {v!r}.")
        out[str(k)] = t
    return out


@dataclass(frozen=True, kw_only=True)
class LabelsConfig:
    """Options of the `labels` task.

    Attributes:
        types: per-feature type: `auto` (numbers, booleans and dates detected; the default),
            `category`/`text` (text rules only: NFKC, casefold, whitespace), `number`, `date`
            (values that do not parse stay text and are counted as `unparsable`).
        positive_labels: per-feature label whose one-vs-rest metrics become the feature's
            headline metrics (binary reporting); other features are macro-averaged over labels.
        normalization: null tokens, day-first dates, currency stripping.
        zero_division: value of a ratio whose denominator is 0.
    """

    types: Mapping[str, str] = field(default_factory=dict)
    positive_labels: Mapping[str, Any] = field(default_factory=dict)
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    zero_division: float = 0.0

    def __post_init__(self) -> None:
        zd = self.zero_division
        if not isinstance(zd, (int, float)) or isinstance(zd, bool) or not 0.0 <= float(zd) <= 1.0:
            raise InputError(f"Expected `zero_division` to be a number in [0, 1], but got {zd!r}.")
        object.__setattr__(self, "types", checked_types(self.types, "feature"))
        object.__setattr__(self, "positive_labels", {str(k): v for k, v in self.positive_labels.items()})

    def type_of(self, feature: str) -> str:
        return self.types.get(feature, "auto")

    def to_dict(self) -> dict[str, Any]:
        return {
            "types": dict(sorted(self.types.items())),
            "positive_labels": {k: _plain(v) for k, v in sorted(self.positive_labels.items())},
            "normalization": self.normalization.to_dict(),
            "zero_division": self.zero_division,
            "missing_label": MISSING,
        }


@dataclass(frozen=True, kw_only=True)
class ModelLabels:
    """One model's predictions, wide: index = record id, one column per feature."""

    name: str
    values: pd.DataFrame
    source: str = ""


# ---------------------------------------------------------------------------------------------
# label encoding: values → canonical label keys → display labels


@dataclass
class LabelEncoder:
    """Canonical label keys of one feature, cached per distinct value.

    `auto` uses the shared normaliser (numbers, booleans, dates detected); `category`/`text` apply
    text rules only; `number`/`date` keep a value that does not parse as normalised text and
    remember it as unparsable. Absent values get the key of `<MISSING>`.

    Examples:
        >>> enc = LabelEncoder("number")
        >>> enc.key("1,000") == enc.key(1000.0), enc.key("abc") == enc.key("xyz"), enc.key(None) == enc.key("n/a")
        (True, False, True)
    """

    type: str = "auto"
    normalization: NormalizationConfig = field(default_factory=NormalizationConfig)
    unparsable: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.type not in FEATURE_TYPES:
            raise InputError(f"feature type: expected one of {', '.join(FEATURE_TYPES)}, but got {self.type!r}.")
        typed = self.type not in ("category", "text")
        self._norm = Normalizer(replace(self.normalization, detect_types=typed))
        self._text = Normalizer(replace(self.normalization, detect_types=False))

    def key(self, value: Any) -> str:
        k = self._norm.key(value)
        if k is None:
            return _MISSING_KEY
        want = {"number": "n", "date": "d"}.get(self.type)
        if want is not None and key_type(k) != want:
            # Not a number/date: compare as text, so two different unparsable values differ.
            tk = self._text.key(value if not isinstance(value, (list, dict, tuple)) else str(value))
            k = tk if tk is not None else _MISSING_KEY
            if k != _MISSING_KEY:
                self.unparsable.add(k)
        return k

    def encode(self, columns: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[str]]:
        """Label codes of several aligned or unaligned columns into one shared, sorted key table."""
        sizes = [len(c) for c in columns]
        stacked = np.concatenate([np.asarray(c, dtype=object) for c in columns]) if columns else np.zeros(0, dtype=object)
        try:
            codes, uniques = _factorize(stacked)
        except TypeError:  # lists/dicts in cells: key them one by one
            stacked = np.where(pd.isna(stacked), None, stacked)
            keys_per_cell = [self.key(v) for v in stacked]
            codes, uniques = pd.factorize(np.asarray(keys_per_cell, dtype=object))
            ukeys = [str(u) for u in uniques]
        else:
            # a missing cell of any kind (None, NaN, pd.NA, NaT) is <MISSING>; the columns come
            # as they are (no per-cell replacement), so missing values left as distinct values
            # by the factorisation are found here, once per distinct value
            na = np.fromiter((pd.isna(u) is True for u in uniques), dtype=bool, count=len(uniques))
            if na.any():
                keep = np.flatnonzero(~na)
                renumber = np.full(len(uniques) + 1, -1, dtype=np.int64)  # the last slot: code -1 stays -1
                renumber[keep] = np.arange(len(keep))
                codes = renumber[codes]
                uniques = [uniques[k] for k in keep]
            ukeys = [self.key(u) for u in uniques]
        table = sorted(set(ukeys) | ({_MISSING_KEY} if (codes < 0).any() else set()))
        pos = {k: i for i, k in enumerate(table)}
        lut = np.array([pos[k] for k in ukeys] + [pos.get(_MISSING_KEY, -1)], dtype=np.int64)
        label_codes = lut[codes]  # code -1 (NaN/None) picks the last entry: <MISSING>
        out, start = [], 0
        for s in sizes:
            out.append(label_codes[start : start + s])
            start += s
        return out, table


# values of one of these kinds that compare equal have the same canonical key
_ONE_KIND = frozenset({"string", "empty", "integer", "floating", "boolean", "bytes"})


def _factorize(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """`pd.factorize`, except that values of different Python types never share a code.

    `True == 1` and `1e20 == 10**20` in Python, so a plain factorize gives them one code, keyed
    by whichever came first (`b:true` or `n:1`): the labels then depended on the row order, and
    a chunk of the data could label a value differently from the whole.
    """
    if pd.api.types.infer_dtype(values, skipna=True) in _ONE_KIND:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return codes, list(uniques)
    kinds = pd.factorize(np.fromiter((type(v).__qualname__ for v in values), dtype=object, count=len(values)))[0]
    codes = np.full(len(values), -1, dtype=np.int64)
    uniques: list[Any] = []
    for k in range(int(kinds.max()) + 1 if len(kinds) else 0):
        idx = np.flatnonzero(kinds == k)
        c, u = pd.factorize(values[idx], use_na_sentinel=True)
        codes[idx] = np.where(c >= 0, c + len(uniques), -1)
        uniques.extend(u)
    return codes, uniques


def display_labels(keys: Sequence[str]) -> list[str]:
    """Human labels of canonical keys: the text after the type prefix, `<MISSING>` for absent;
    a key whose text clashes with another's keeps its type prefix so labels stay distinct."""
    texts = [MISSING if k == _MISSING_KEY else key_text(k) for k in keys]
    seen: dict[str, int] = {}
    for t in texts:
        seen[t] = seen.get(t, 0) + 1
    return [t if seen[t] == 1 or k == _MISSING_KEY else k for t, k in zip(texts, keys)]


# ---------------------------------------------------------------------------------------------
# the ledger: one-vs-rest counts per label


@dataclass(frozen=True, kw_only=True)
class FeatureLedger:
    """One-vs-rest counts of one feature in one view: per label tp, fp, fn, tn (a `Counts`,
    `cells` = rows of the view, `exact` = rows whose prediction equals the truth), plus the row
    totals. Mergeable: `a + b` scores the union of two disjoint sets of rows.

    Examples:
        >>> a = feature_ledger(["x", "y"], ["x", "x"])
        >>> b = feature_ledger(["z"], ["z"])
        >>> (a + b).per_label["x"].tn, (a + b).rows, (a + b).correct
        (1, 3, 2)
    """

    per_label: Mapping[str, Counts]
    rows: int
    correct: int

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.per_label)

    def __add__(self, other: FeatureLedger) -> FeatureLedger:
        if not isinstance(other, FeatureLedger):
            return NotImplemented
        merged: dict[str, Counts] = {}
        for label in sorted(set(self.per_label) | set(other.per_label)):
            # a label unseen in one part is a true negative for every row of that part
            a = self.per_label.get(label, Counts(tn=self.rows, cells=self.rows, exact=self.correct))
            b = other.per_label.get(label, Counts(tn=other.rows, cells=other.rows, exact=other.correct))
            merged[label] = a + b
        return FeatureLedger(per_label=merged, rows=self.rows + other.rows, correct=self.correct + other.correct)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "correct": self.correct, "per_label": {k: v.to_dict() for k, v in self.per_label.items()}}


def ledger_from_codes(
    truth: np.ndarray,
    pred: np.ndarray,
    labels: Sequence[str],
    *,
    missing_truth: np.ndarray | None = None,
    extra_pred: np.ndarray | None = None,
) -> FeatureLedger:
    """The ledger from integer label codes (into `labels`).

    `truth`/`pred` are aligned pairs. `missing_truth` holds the truth labels of rows that have no
    prediction (each: an FN of its label, never a TP), `extra_pred` the predicted labels of rows
    that have no truth (each: an FP of its label). Labels that occur in none of these are left
    out (the "observed labels" of scikit-learn).
    """
    n_lab = len(labels)
    t = np.asarray(truth, dtype=np.int64)
    p = np.asarray(pred, dtype=np.int64)
    miss = np.zeros(0, dtype=np.int64) if missing_truth is None else np.asarray(missing_truth, dtype=np.int64)
    extra = np.zeros(0, dtype=np.int64) if extra_pred is None else np.asarray(extra_pred, dtype=np.int64)
    cm = np.bincount(t * n_lab + p, minlength=n_lab * n_lab).reshape(n_lab, n_lab) if n_lab else np.zeros((0, 0), dtype=np.int64)
    tp = np.diag(cm).copy()
    fp = cm.sum(axis=0) - tp + np.bincount(extra, minlength=n_lab)
    fn = cm.sum(axis=1) - tp + np.bincount(miss, minlength=n_lab)
    rows = len(t) + len(miss) + len(extra)
    tn = rows - tp - fp - fn
    correct = int(tp.sum())
    observed = np.flatnonzero((tp + fp + fn) > 0)
    per_label = {
        labels[i]: Counts(tp=int(tp[i]), fp=int(fp[i]), fn=int(fn[i]), tn=int(tn[i]), cells=rows, exact=correct)
        for i in observed
    }
    return FeatureLedger(per_label=dict(sorted(per_label.items())), rows=rows, correct=correct)


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
# metrics


@dataclass(frozen=True, kw_only=True)
class FeatureMetrics:
    """Metrics of one feature in one view.

    `precision`, `recall`, `f1`, `specificity` are the macro average over observed labels, or
    the positive label's one-vs-rest values when `positive_label` is set (`mode` says which);
    `micro_accuracy` = rows whose prediction equals the truth / rows of the view.
    """

    mode: str
    positive_label: str | None
    precision: float
    recall: float
    f1: float
    specificity: float
    micro_accuracy: float
    rows: int
    correct: int
    labels: Mapping[str, Mapping[str, float | int]]
    flags: tuple[str, ...] = ()

    def score(self) -> Score:
        return Score(f1=self.f1, precision=self.precision, recall=self.recall)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "positive_label": self.positive_label,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "specificity": self.specificity,
            "micro_accuracy": self.micro_accuracy,
            "rows": self.rows,
            "correct": self.correct,
            "labels": {k: dict(v) for k, v in self.labels.items()},
            "flags": list(self.flags),
        }


def feature_metrics(ledger: FeatureLedger, *, positive_label: str | None = None, zero_division: float = 0.0) -> FeatureMetrics:
    """Per-label one-vs-rest ratios, their macro average (or the positive label's) and micro accuracy.

    Examples:
        >>> m = feature_metrics(feature_ledger(["cat", "dog", "dog"], ["cat", "cat", "dog"]))
        >>> round(m.f1, 4), round(m.micro_accuracy, 4)
        (0.6667, 0.6667)
    """
    labels = list(ledger.per_label)
    c = [ledger.per_label[k] for k in labels]
    tp, fp, fn, tn = (np.array([getattr(x, a) for x in c], dtype=np.int64) for a in ("tp", "fp", "fn", "tn"))
    r = ratios(tp, fp, fn, tn, zero_division=zero_division)
    neg = tn + fp  # specificity = tn / (tn + fp); undefined for a label present in every row
    spec = np.divide(tn, neg, out=np.full(len(labels), float(zero_division)), where=neg > 0)
    per = {
        k: {
            "tp": int(tp[i]), "fp": int(fp[i]), "fn": int(fn[i]), "tn": int(tn[i]), "support": int(tp[i] + fn[i]),
            "precision": float(r["precision"][i]), "recall": float(r["recall"][i]),
            "f1": float(r["f1"][i]), "specificity": float(spec[i]),
        }
        for i, k in enumerate(labels)
    }
    micro = ledger.correct / ledger.rows if ledger.rows else float(zero_division)
    flags: list[str] = []
    if ledger.rows == 0:
        flags.append("no_rows")
    if positive_label is not None:
        if positive_label in per:
            v = per[positive_label]
            p_, r_, f_, s_ = v["precision"], v["recall"], v["f1"], v["specificity"]
        else:
            # the positive label occurs nowhere in this view: nothing to find, nothing found wrongly
            flags.append("positive_label_not_observed")
            z = float(zero_division)
            p_, r_, f_, s_ = z, z, z, (1.0 if ledger.rows else z)
        return FeatureMetrics(
            mode="binary", positive_label=positive_label, precision=p_, recall=r_, f1=f_, specificity=s_,
            micro_accuracy=micro, rows=ledger.rows, correct=ledger.correct, labels=per, flags=tuple(flags),
        )
    if not labels:
        z = float(zero_division)
        return FeatureMetrics(mode="macro", positive_label=None, precision=z, recall=z, f1=z, specificity=z,
                              micro_accuracy=micro, rows=ledger.rows, correct=ledger.correct, labels={}, flags=tuple(flags))
    return FeatureMetrics(
        mode="macro", positive_label=None,
        precision=float(np.mean(r["precision"])), recall=float(np.mean(r["recall"])),
        f1=float(np.mean(r["f1"])), specificity=float(np.mean(spec)),
        micro_accuracy=micro, rows=ledger.rows, correct=ledger.correct, labels=per, flags=tuple(flags),
    )


@dataclass(frozen=True, kw_only=True)
class ViewMetrics:
    """One view (`aligned` or `strict`): per-feature metrics, totals = mean over features, and
    `row_accuracy` = rows whose every feature is correct / rows of the view (0.0 with no rows)."""

    name: str
    description: str
    features: Mapping[str, FeatureMetrics]
    totals: Mapping[str, float]
    row_accuracy: float
    rows: int
    correct_rows: int

    def score(self) -> Score:
        return Score(f1=self.totals["f1"], precision=self.totals["precision"], recall=self.totals["recall"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "rows": self.rows,
            "correct_rows": self.correct_rows,
            "row_accuracy": self.row_accuracy,
            "totals": dict(self.totals),
            "features": {k: v.to_dict() for k, v in self.features.items()},
        }


_TOTAL_KEYS = ("precision", "recall", "f1", "specificity", "micro_accuracy")


def view_metrics(
    name: str,
    ledgers: Mapping[str, FeatureLedger],
    *,
    correct_rows: int,
    rows: int,
    positive_labels: Mapping[str, str | None] | None = None,
    zero_division: float = 0.0,
    description: str | None = None,
) -> ViewMetrics:
    """Feature metrics of every feature, totals (arithmetic mean over features) and row accuracy."""
    pos = positive_labels or {}
    feats = {f: feature_metrics(led, positive_label=pos.get(f), zero_division=zero_division) for f, led in ledgers.items()}
    if feats:
        totals = {k: float(np.mean([getattr(m, k) for m in feats.values()])) for k in _TOTAL_KEYS}
    else:
        totals = {k: float(zero_division) for k in _TOTAL_KEYS}
    return ViewMetrics(
        name=name, description=description or VIEWS.get(name, name), features=feats, totals=totals,
        row_accuracy=correct_rows / rows if rows else 0.0, rows=rows, correct_rows=correct_rows,
    )


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, kw_only=True)
class RankedFeatures:
    """A model's place among the others on the strict view (the `labels` and `entities` results
    rank the same way): its rank and tier, and the features it won."""

    rank: int
    tier: str
    tier_colour: str
    feature_wins: float
    features_won: tuple[str, ...]

    def ranking_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "tier": self.tier, "tier_colour": self.tier_colour, "feature_wins": self.feature_wins,
                "feature_wins_display": format_wins(self.feature_wins), "features_won": list(self.features_won)}


ONE_MODEL_NOTE = "only one model: every feature is a universal tie, so no feature wins are awarded."


def rank_on_strict_view(task: str, strict: Mapping[str, ViewMetrics], features: Sequence[str]) -> tuple[dict[str, FieldWinner], list[tuple[str, RankedFeatures]]]:
    """The feature winners on the strict view's per-feature F1 (then precision, recall), and the
    models in rank order with their `RankedFeatures`: ranked on the strict view's macro F1, then
    precision, recall and feature wins."""
    names = sorted(strict)
    winners = field_winners({f: {m: strict[m].features[f].score() for m in names} for f in features})
    wins = field_wins(winners, names)
    ranked = rank_by_metrics(task, {m: {f"{task}/macro/{k}": float(strict[m].totals[k]) for k in ("f1", "precision", "recall")} for m in names}, wins)
    return winners, [(r.model, RankedFeatures(rank=r.rank, tier=r.tier, tier_colour=r.tier_colour, feature_wins=wins[r.model],
                                              features_won=tuple(f for f, w in winners.items() if w.win_share > 0 and r.model in w.winners)))
                     for r in ranked]


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
class FeatureViewsResult:
    """What the `labels` and `entities` results share: models ranked on the strict view of
    per-feature metrics, with feature winners, warnings and the configuration."""

    task: str
    n_records: int
    features: tuple[str, ...]
    models: Mapping[str, Any]  # model → its result (a `RankedFeatures` with `to_dict()`)
    ranking: tuple[str, ...]
    feature_winners: Mapping[str, FieldWinner]
    warnings: tuple[str, ...]
    config: Mapping[str, Any]

    def document(self, views: Mapping[str, str], *, before: Mapping[str, Any] | None = None,
                 after: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The `--json` document: `before` goes after the features, `after` after the winners."""
        return {
            "task": self.task, "n_records": self.n_records, "features": list(self.features), **(before or {}),
            "views": dict(views), "ranked_by": "strict view: mean F1 over features, then precision, recall, feature wins, name",
            "ranking": list(self.ranking), "models": {m: self.models[m].to_dict() for m in self.ranking},
            "feature_winners": {k: v.to_dict() for k, v in self.feature_winners.items()}, **(after or {}),
            "warnings": list(self.warnings), "config": dict(self.config),
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


def check_model_names(predictions: Sequence[Any]) -> None:
    """Refuse an empty model name and a name given twice (each model's `name` and `source`)."""
    seen: set[str] = set()
    for p in predictions:
        if not p.name or not str(p.name).strip():
            raise InputError(f"{p.source or 'predictions'}: a model name must not be empty.")
        if p.name in seen:
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)


def resolve_features(columns: Sequence[str], features: Sequence[str] | None, cfg: LabelsConfig, truth_source: str) -> list[str]:
    """The features to score: `features` (checked against the truth columns) or every column."""
    columns = list(columns)
    if features is not None:
        unknown = [f for f in features if f not in columns]
        if unknown:
            raise InputError(f"{truth_source}: features {unknown} are not columns of the ground truth (columns: {columns}).")
        feats = list(dict.fromkeys(features))
    else:
        feats = columns
    if not feats:
        raise InputError(f"{truth_source}: no feature columns; expected an id column and at least one feature column.")
    for what, mapping in (("type", cfg.types), ("positive label", cfg.positive_labels)):
        unknown = sorted(set(mapping) - set(feats))
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


def _smallest(ids: Any, more: Sequence[str] = ()) -> tuple[str, ...]:
    return tuple(heapq.nsmallest(_SHOWN_IDS, [*more, *ids]))


@dataclass(frozen=True, kw_only=True)
class ModelLedger:
    """One model's counts over a set of records: per view and feature a `FeatureLedger` keyed by
    canonical label key, the row counts, the smallest unaligned ids (for the warnings), predicted
    values that do not parse (number/date features) and the feature columns the predictions have."""

    aligned: Mapping[str, FeatureLedger]
    strict: Mapping[str, FeatureLedger]
    aligned_rows: int
    missing_rows: int
    extra_rows: int
    correct_rows: int
    missing_ids: tuple[str, ...]
    extra_ids: tuple[str, ...]
    unparsable: Mapping[str, int]
    columns: frozenset[str]

    def __add__(self, o: ModelLedger) -> ModelLedger:
        return ModelLedger(
            aligned={f: led + o.aligned[f] for f, led in self.aligned.items()},
            strict={f: led + o.strict[f] for f, led in self.strict.items()},
            aligned_rows=self.aligned_rows + o.aligned_rows, missing_rows=self.missing_rows + o.missing_rows,
            extra_rows=self.extra_rows + o.extra_rows, correct_rows=self.correct_rows + o.correct_rows,
            missing_ids=_smallest(o.missing_ids, self.missing_ids), extra_ids=_smallest(o.extra_ids, self.extra_ids),
            unparsable={f: k + o.unparsable[f] for f, k in self.unparsable.items()}, columns=self.columns | o.columns,
        )


@dataclass(frozen=True, kw_only=True)
class LabelsLedger:
    """Counts of a set of truth records and predicted rows, mergeable with `+` (disjoint sets).

    `keys` holds per feature every canonical label key seen on any side (the label table),
    `truth_missing` the truth rows whose label is `<MISSING>`: the "missing in every record"
    check and the display labels are resolved from them once, in `labels_result`.
    """

    n_records: int
    keys: Mapping[str, frozenset[str]]
    truth_missing: Mapping[str, int]
    unparsable_truth: Mapping[str, int]
    models: Mapping[str, ModelLedger]

    def __add__(self, o: LabelsLedger) -> LabelsLedger:
        return LabelsLedger(
            n_records=self.n_records + o.n_records,
            keys={f: k | o.keys[f] for f, k in self.keys.items()},
            truth_missing={f: k + o.truth_missing[f] for f, k in self.truth_missing.items()},
            unparsable_truth={f: k + o.unparsable_truth[f] for f, k in self.unparsable_truth.items()},
            models={m: led + o.models[m] for m, led in self.models.items()},
        )


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
    # Alignment by position: one hash lookup of every predicted id in the truth index, per model.
    t_index: pd.Index | None = None  # built only when some model's ids come in another order
    n_truth = len(truth_index)

    aligned_inputs = []
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

    names = [a[0].name for a in aligned_inputs]
    ledgers: dict[str, dict[str, dict[str, FeatureLedger]]] = {m: {"aligned": {}, "strict": {}} for m in names}
    row_ok: dict[str, np.ndarray] = {m: np.ones(len(a[2][0]), dtype=bool) for m, a in zip(names, aligned_inputs)}
    keys: dict[str, frozenset[str]] = {}
    truth_missing: dict[str, int] = {}
    unparsable_truth: dict[str, int] = {}
    unparsable_pred: dict[str, dict[str, int]] = {m: {} for m in names}
    has_value: dict[str, dict[str, bool]] = {m: {} for m in names}

    def column(frame: pd.DataFrame, f: str) -> np.ndarray:
        if f not in frame.columns:
            return np.full(len(frame), None, dtype=object)
        # missing cells (None, NaN, NA, NaT) are told apart by the encoder, once per distinct value
        return frame[f].to_numpy(dtype=object, copy=False)

    for f in feats:
        enc = LabelEncoder(cfg.type_of(f), cfg.normalization)
        codes, table = enc.encode([column(truth, f)] + [column(values, f) for _, values, *_ in aligned_inputs])
        t_codes = codes[0]
        keys[f] = frozenset(table)
        missing_code = table.index(_MISSING_KEY) if _MISSING_KEY in table else -1
        truth_missing[f] = int((t_codes == missing_code).sum()) if missing_code >= 0 else 0
        unp = [i for i, k in enumerate(table) if k in enc.unparsable]
        if cfg.type_of(f) in ("number", "date"):
            unparsable_truth[f] = int(np.isin(t_codes, unp).sum()) if unp else 0
        for mi, (p, values, (both_t, both_p), missing_t, extra_p) in enumerate(aligned_inputs):
            pc = codes[mi + 1]
            if not has_value[p.name].get(f):
                has_value[p.name][f] = bool((pc != missing_code).any())
            t_both, p_both = t_codes[both_t], pc[both_p]
            ledgers[p.name]["aligned"][f] = ledger_from_codes(t_both, p_both, table)
            ledgers[p.name]["strict"][f] = ledger_from_codes(t_both, p_both, table, missing_truth=t_codes[missing_t], extra_pred=pc[extra_p])
            row_ok[p.name] &= t_both == p_both
            if cfg.type_of(f) in ("number", "date"):
                unparsable_pred[p.name][f] = int(np.isin(pc, unp).sum()) if unp else 0

    models = {}
    for p, values, (both, _), missing, extra in aligned_inputs:
        models[p.name] = ModelLedger(
            aligned=ledgers[p.name]["aligned"], strict=ledgers[p.name]["strict"],
            aligned_rows=len(both), missing_rows=len(missing), extra_rows=len(extra),
            correct_rows=int(row_ok[p.name].sum()),
            missing_ids=_smallest(truth.index[missing].tolist()), extra_ids=_smallest(values.index[extra].tolist()),
            # a feature is among the model's columns when some row predicts a value for it: the
            # same set whether the rows come whole or in chunks (a chunk may lack a column)
            # (a label other than <MISSING> is a value; only a column of <MISSING> labels needs the check)
            unparsable=unparsable_pred[p.name],
            columns=frozenset(f for f in feats if f in values.columns and (has_value[p.name].get(f) or values[f].notna().any())),
        )
    return LabelsLedger(n_records=n_truth, keys=keys, truth_missing=truth_missing, unparsable_truth=unparsable_truth, models=models)


def _shown(ids: Sequence[str], n: int) -> str:
    return ", ".join(repr(x) for x in ids) + (" …" if n > len(ids) else "")


def _relabel(ledger: FeatureLedger, display: Mapping[str, str]) -> FeatureLedger:
    return replace(ledger, per_label=dict(sorted((display[k], c) for k, c in ledger.per_label.items())))


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
            pk = LabelEncoder(cfg.type_of(f), cfg.normalization).key(cfg.positive_labels[f])
            positive[f] = display[f][pk] if pk in display[f] else (MISSING if pk == _MISSING_KEY else key_text(pk))
            if pk not in display[f]:
                warnings.append(f"feature {f!r}: positive label {cfg.positive_labels[f]!r} occurs in no truth or prediction.")

    for f, k in ledger.unparsable_truth.items():
        if k:
            warnings.append(f"{truth_source}: feature {f!r} ({cfg.type_of(f)}): {k} ground-truth value(s) do not parse and are compared as text.")
    for m in names:
        for f, k in ledger.models[m].unparsable.items():
            if k:
                warnings.append(f"model {m!r}: feature {f!r} ({cfg.type_of(f)}): {k} predicted value(s) do not parse and are compared as text.")
    zd = cfg.zero_division
    views: dict[str, dict[str, ViewMetrics]] = {}
    shown_ledgers: dict[str, dict[str, dict[str, FeatureLedger]]] = {}
    for m in names:
        led = ledger.models[m]
        shown_ledgers[m] = {v: {f: _relabel(x, display[f]) for f, x in getattr(led, v).items()} for v in ("aligned", "strict")}
        ok_rows = led.correct_rows if led.aligned_rows else 0
        views[m] = {
            "aligned": view_metrics("aligned", shown_ledgers[m]["aligned"], correct_rows=ok_rows, rows=led.aligned_rows, positive_labels=positive, zero_division=zd),
            "strict": view_metrics("strict", shown_ledgers[m]["strict"], correct_rows=ok_rows,
                                   rows=led.aligned_rows + led.missing_rows + led.extra_rows, positive_labels=positive, zero_division=zd),
        }

    winners, ranked = rank_on_strict_view("labels", {m: views[m]["strict"] for m in names}, feats)
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
