"""Feature views: per-feature one-vs-rest classification counts and metrics, in an `aligned` and
a `strict` view, shared by the tasks that score features of records (`labels`: the columns of a
table; `entities`: the features of matched entities).

Each feature's values are dictionary-encoded (truth and every model's column together), one
canonical label key per *distinct* value, integer label codes, one `bincount` confusion matrix
per model and view → counts (tp/fp/fn/tn per label, mergeable with `+`) → ratios. A missing value
is its own class `<MISSING>`; a value that does not parse as the feature's type stays normalised
text, so two different unparsable values are never equal.
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.counts import Counts, ratios
from extracteval.core.ledger import Ledger, by_key, merge, whole
from extracteval.core.normalize import NormalizationConfig, Normalizer, key_text, key_type
from extracteval.core.ranking import FieldWinner, RankingSpec, Score, field_winners, field_wins, format_wins, rank_by_metrics
from extracteval.errors import InputError

__all__ = ["MISSING", "FEATURE_TYPES", "VIEWS", "checked_types", "ModelLabels", "LabelEncoder", "display_labels", "FeatureLedger",
           "ledger_from_codes", "ledger_from_sets", "samples_sums",
           "VIEW_METRICS", "LabelLayout", "view_count_metrics", "FeatureMetrics", "feature_metrics", "ViewMetrics", "view_metrics",
           "RankedFeatures", "ONE_MODEL_NOTE",
           "rank_on_strict_view", "FeatureViewsResult", "check_model_names"]


MISSING = "<MISSING>"


FEATURE_TYPES = ("auto", "category", "text", "number", "date")


# the two views every result carries, with the sentence that says what each one is
VIEWS = {
    "aligned": "rows present in both truth and predictions only",
    "strict": "every row of either side; a row missing from one side counts as an error",
}


# a number written with a leading zero (`007`, `00.5`) or a zero ending its fraction (`1.10`): under
# `auto` a class of its own, as written, not the number it reads as
_CODE = re.compile(r"^\s*[+-]?(?:0\d+(?:\.\d*)?|\d+\.\d*[1-9]0+)\s*$")

_MISSING_KEY = "\x00missing"  # sorts first; cannot collide with a canonical key (those start "t:", "n:", …)


def checked_types(types: Mapping[Any, Any], item: str, allowed: Sequence[str] = FEATURE_TYPES) -> dict[str, str]:
    """Per-`item` value types (`auto`, `category`, …, one of `allowed`) with names as text and
    types in lower case; an unknown type is refused by name."""
    out = {}
    for k, v in types.items():
        t = str(v).strip().lower()
        if t not in allowed:
            raise InputError(f"type of {item} {k!r}: expected one of {', '.join(allowed)}, but got {v!r}.")
        out[str(k)] = t
    return out


@dataclass(frozen=True, kw_only=True)
class ModelLabels:
    """One model's predictions, wide: index = record id, one column per feature."""

    name: str
    values: pd.DataFrame
    source: str = ""


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
        if typed:
            self._norm = Normalizer(self.normalization)
        else:  # a class may well be called `None` or `-`: only the tokens the user listed mean missing
            self._norm = Normalizer(replace(self.normalization, detect_types=False, null_tokens=self.normalization.listed_null_tokens))
        self._text = Normalizer(replace(self.normalization, detect_types=False))

    def key(self, value: Any) -> str:
        if self.type == "auto" and type(value) is str and _CODE.match(value):
            # `007` or `1.10` is a code (a version, a postcode), not the number 7 or 1.1
            k = self._text.key(value)
            return _MISSING_KEY if k is None else k
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


def _per_label(a: FeatureLedger, b: FeatureLedger) -> dict[str, Counts]:
    """Per label of either part: a label unseen in one part is a true negative for each of its rows."""
    out: dict[str, Counts] = {}
    for label in sorted(set(a.per_label) | set(b.per_label)):
        x = a.per_label.get(label, Counts(tn=a.rows, cells=a.rows, exact=a.correct))
        y = b.per_label.get(label, Counts(tn=b.rows, cells=b.rows, exact=b.correct))
        out[label] = x + y
    return out


@dataclass(frozen=True, kw_only=True)
class FeatureLedger(Ledger):
    """One-vs-rest counts of one feature in one view: per label tp, fp, fn, tn (a `Counts`,
    `cells` = rows of the view, `exact` = rows whose prediction equals the truth), plus the row
    totals. Mergeable: `a + b` scores the union of two disjoint sets of rows.

    Examples:
        >>> a = FeatureLedger(per_label={"x": Counts(tp=1, cells=1, exact=1)}, rows=1, correct=1)
        >>> b = FeatureLedger(per_label={"z": Counts(tp=1, cells=1, exact=1)}, rows=1, correct=1)
        >>> (a + b).per_label["x"].tn, (a + b).per_label["z"].tn, (a + b).rows, (a + b).correct
        (1, 1, 2, 2)
    """

    per_label: Mapping[str, Counts] = merge(whole(lambda a, b, _: _per_label(a, b)))
    rows: int
    correct: int
    # rows by (|T∩P|, |T|, |P|), the sizes of the truth's and the prediction's label sets (one-element sets, or
    # none for a row missing on one side, when a cell holds one label): the `samples` averages read them
    sets: Mapping[tuple[int, int, int], int] = merge(by_key(sort=True), default_factory=dict)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.per_label)


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
    sets = {(1, 1, 1): correct, (0, 1, 1): len(t) - correct, (0, 1, 0): len(miss), (0, 0, 1): len(extra)}
    return FeatureLedger(per_label=dict(sorted(per_label.items())), rows=rows, correct=correct, sets={k: v for k, v in sorted(sets.items()) if v})


def ledger_from_sets(truth: tuple[np.ndarray, np.ndarray], pred: tuple[np.ndarray, np.ndarray], labels: Sequence[str],
                     rows: int, *, aligned: int | None = None) -> tuple[FeatureLedger, np.ndarray]:
    """The ledger of label sets, and per row whether its two sets are equal. `truth` and `pred`
    are (row, label code) pairs (a pair twice counts once; a row without pairs is the empty set)
    over `rows` rows: per label tp = rows holding it in both sets, fp = in the predicted set only,
    fn = in the truth's only, tn = in neither; `correct` = rows whose sets are equal. Rows from
    `aligned` on are present on one side only (a missing prediction, an extra row): never correct,
    even where the side present holds the empty set, as a single label's missing row never is."""
    n_lab = max(len(labels), 1)
    tk, pk = (np.unique(np.asarray(r, dtype=np.int64) * n_lab + np.asarray(c, dtype=np.int64)) for r, c in (truth, pred))
    both = np.intersect1d(tk, pk, assume_unique=True)
    tp, t_sum, p_sum = (np.bincount(x % n_lab, minlength=n_lab) for x in (both, tk, pk))
    fp, fn = p_sum - tp, t_sum - tp
    tn = rows - tp - fp - fn
    inter, t_size, p_size = (np.bincount(x // n_lab, minlength=rows) for x in (both, tk, pk))
    equal = (t_size == inter) & (p_size == inter)
    if aligned is not None:
        equal[aligned:] = False
    correct = int(equal.sum())
    observed = np.flatnonzero((tp + fp + fn) > 0)
    per_label = {labels[i]: Counts(tp=int(tp[i]), fp=int(fp[i]), fn=int(fn[i]), tn=int(tn[i]), cells=rows, exact=correct) for i in observed}
    sizes, n = np.unique(np.stack([inter, t_size, p_size], axis=1), axis=0, return_counts=True) if rows else (np.zeros((0, 3), dtype=np.int64), [])
    sets = {(int(a), int(b), int(c)): int(k) for (a, b, c), k in zip(sizes, n)}
    return FeatureLedger(per_label=dict(sorted(per_label.items())), rows=rows, correct=correct, sets=dict(sorted(sets.items()))), equal


def samples_sums(sets: Mapping[tuple[int, int, int], int], zero_division: float) -> dict[str, float]:
    """Σ over rows of each row's precision |T∩P|/|P|, recall |T∩P|/|T| and F1 2|T∩P|/(|T|+|P|),
    `zero_division` for a zero denominator (scikit-learn's `average="samples"` before its mean).
    With `zero_division` NaN a row's undefined value is left out of the sum, and `rows_<kind>`
    counts the rows whose value is defined (the mean's denominator)."""
    zd = float(zero_division)
    if not sets:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, **({f"rows_{k}": 0.0 for k in _WEIGHTED} if np.isnan(zd) else {})}
    k = np.array(sorted(sets), dtype=np.float64)
    n = np.array([sets[x] for x in sorted(sets)], dtype=np.float64)
    inter, t, p = k[:, 0], k[:, 1], k[:, 2]
    dens = {"precision": p, "recall": t, "f1": t + p}
    nums = {"precision": inter, "recall": inter, "f1": 2 * inter}
    if np.isnan(zd):
        out = {kind: float(np.sum(np.where(d > 0, n * np.divide(nums[kind], d, out=np.zeros(d.shape), where=d > 0), 0.0))) for kind, d in dens.items()}
        return {**out, **{f"rows_{kind}": float(np.sum(n[d > 0])) for kind, d in dens.items()}}
    return {kind: float(np.sum(n * np.divide(nums[kind], d, out=np.full(d.shape, zd), where=d > 0))) for kind, d in dens.items()}


# the metrics of one view the map gives, as a model run logs them under its task's prefix
VIEW_METRICS = ("macro/precision", "macro/recall", "macro/f1", "macro/specificity", "weighted/precision", "weighted/recall", "weighted/f1",
                "micro_accuracy", "row_accuracy")
_KINDS = ("precision", "recall", "f1", "specificity")
_WEIGHTED = ("precision", "recall", "f1")


@dataclass(frozen=True)
class LabelLayout:
    """Where one view's one-vs-rest counts sit: the `features` in order; per label column its
    feature (`member`, an index into `features`) and whether it is that feature's positive label
    (`positive`); per feature whether one is set (`binary`: the feature is reported one-vs-rest
    on that label rather than as the macro average over its labels). A feature with declared
    classes (`closed`) averages over exactly those (`declared`), observed or not, as
    scikit-learn's `labels=`; another averages over its observed labels."""

    features: tuple[str, ...]
    member: np.ndarray
    positive: np.ndarray
    binary: np.ndarray
    declared: np.ndarray | None = None
    closed: np.ndarray | None = None

    @classmethod
    def of(cls, labels: Sequence[tuple[str, str]], features: Sequence[str] = (), positive_labels: Mapping[str, str | None] | None = None,
           classes: Mapping[str, Sequence[str]] | None = None) -> LabelLayout:
        """Label columns given as (feature, label); `features` lists the features first (with or
        without labels); `classes` the declared classes of some features (each must be a column)."""
        pos, declared = positive_labels or {}, classes or {}
        feats = tuple(dict.fromkeys([*features, *(f for f, _ in labels)]))
        index = {f: i for i, f in enumerate(feats)}
        sets = {f: set(v) for f, v in declared.items()}
        return cls(features=feats, member=np.array([index[f] for f, _ in labels], dtype=np.int64),
                   positive=np.array([pos.get(f) is not None and pos.get(f) == lab for f, lab in labels], dtype=bool),
                   binary=np.array([pos.get(f) is not None for f in feats], dtype=bool),
                   declared=np.array([lab in sets.get(f, ()) for f, lab in labels], dtype=bool) if declared else None,
                   closed=np.array([f in sets for f in feats], dtype=bool) if declared else None)

    @cached_property
    def onto(self) -> np.ndarray:
        """(labels, features): 1 where a label column belongs to a feature; `values @ onto` sums each feature's labels."""
        out = np.zeros((len(self.member), len(self.features)))
        out[np.arange(len(self.member)), self.member] = 1.0
        return out

    @classmethod
    def pooled(cls) -> LabelLayout:
        """Every feature's cells as one: its `micro_accuracy` is right cells / cells, which is the
        mean over features of each feature's when, as in every view, the features share the rows."""
        return cls.of([("", "")])


def _by_feature(values: np.ndarray, weight: np.ndarray, layout: LabelLayout, empty: np.ndarray) -> np.ndarray:
    """The mean of each feature's weighted label values (..., labels) → (..., features); `empty`
    where a feature has none. One set of values: `np.mean` over each feature's labels in order.
    An undefined (NaN) value is left out of its feature's mean, which is NaN when all its values
    are (scikit-learn's `_nanaverage` under `zero_division=np.nan`)."""
    n_feat = len(layout.features)
    undefined = np.isnan(values)
    if values.ndim == 1:
        out = np.array(empty, dtype=np.float64)
        for f in range(n_feat):
            sel = weight & (layout.member == f)
            if sel.any():
                defined = sel & ~undefined
                out[f] = np.mean(values[defined]) if defined.any() else np.nan
        return out
    if undefined.any():
        held = weight.astype(np.float64) @ layout.onto
        weight = weight & ~undefined
        empty = np.where(held > 0, np.nan, empty)  # values held, none defined: undefined
    total, n = np.where(weight, values, 0.0) @ layout.onto, weight.astype(np.float64) @ layout.onto
    return np.divide(total, n, out=np.array(np.broadcast_to(empty, total.shape), dtype=np.float64), where=n > 0)


def _weighted_by_feature(values: np.ndarray, observed: np.ndarray, support: np.ndarray, layout: LabelLayout, empty: np.ndarray) -> np.ndarray:
    """Each feature's observed label values (..., labels) averaged with their support as weights →
    (..., features); the plain mean where the feature's labels have no support, `empty` where it
    has no observed label. One set of values: as `np.average` computes it. An undefined (NaN)
    value is left out with its weight (then the plain mean when the weights left sum to 0, NaN
    when no value is defined), as scikit-learn's `_nanaverage`."""
    undefined = np.isnan(values)
    if values.ndim == 1:
        out = np.array(empty, dtype=np.float64)
        for f in range(len(layout.features)):
            sel = observed & (layout.member == f)
            if sel.any():
                sel = sel & ~undefined
                w = support[sel]
                out[f] = np.nan if not sel.any() else np.multiply(values[sel], w).sum() / w.sum() if w.sum() > 0 else np.mean(values[sel])
        return out
    plain = _by_feature(values, observed, layout, empty)
    w = np.where(observed & ~undefined, support, 0.0)
    total, w_sum = _by_feature_sum(np.multiply(np.where(undefined, 0.0, values), w), layout), _by_feature_sum(w, layout)
    return np.divide(total, w_sum, out=plain, where=w_sum > 0)


def _mean_over_features(per: np.ndarray) -> np.ndarray:
    """The mean over the last axis (features), an undefined (NaN) feature left out; NaN where every
    feature is undefined."""
    undefined = np.isnan(per)
    if not undefined.any():
        return np.mean(per) if per.ndim == 1 else per.mean(axis=-1)
    if per.ndim == 1:
        return np.float64(np.mean(per[~undefined])) if not undefined.all() else np.float64(np.nan)
    n = (~undefined).sum(axis=-1)
    return np.divide(np.where(undefined, 0.0, per).sum(axis=-1), n, out=np.full(n.shape, np.nan), where=n > 0)


def view_count_metrics(counts: Mapping[str, Any], layout: LabelLayout, *, which: Sequence[str] = VIEW_METRICS, zero_division: float = 0.0,
                       per_feature: bool = False) -> dict[str, np.ndarray]:
    """The one map from one view's counts to its metrics (`labels` and `entities` alike).

    `counts`: `tp`, `fp`, `fn` (..., label columns of `layout`) and `rows` (..., features), the
    rows each feature was counted over; for `row_accuracy` also `correct_rows` and `view_rows`.
    Per feature: the mean over its observed labels (tp + fp + fn > 0) of precision, recall, F1
    and specificity (tn / (tn + fp), tn = rows - tp - fp - fn), or its positive label's values
    (`zero_division` when that label is not observed, specificity then 1.0 if the feature has
    rows); `weighted/<kind>` (precision, recall, F1) the mean over its observed labels weighted by
    each label's support (tp + fn; the plain mean when no label has support), as scikit-learn's
    `average="weighted"`; `micro_accuracy` = right rows (its labels' tp) / rows. The view's
    `macro/<kind>`, `weighted/<kind>` and `micro_accuracy` are the means over features
    (`zero_division` without a feature);
    `row_accuracy` = correct_rows / view_rows (0.0 without rows). With `zero_division` NaN
    (`"nan"`) a ratio over nothing is undefined and every average (per feature, and the view's over
    features) leaves it out, NaN when nothing is defined; `row_accuracy` without rows is NaN too
    (scikit-learn's `zero_division=np.nan` and `_nanaverage`). The leading axes (models,
    resamples) are kept. With `per_feature` also `feature/<kind>`, `feature/weighted/<kind>`,
    `feature/micro_accuracy` (..., features) and `label/<kind>` (..., labels).

    Label sets (a cell holding several labels): `correct` (..., features), the rows whose sets
    are equal, makes `micro_accuracy` the subset accuracy; `samples_precision|recall|f1`
    (..., features), the sums over rows of each row's values, give `feature/samples/<kind>` (their
    mean over rows, scikit-learn's `average="samples"`) and the view's `samples/<kind>`; every
    feature also has `feature/micro/<kind>` (ratios of its labels' summed counts, `average="micro"`)
    and `feature/hamming_loss` (Σ(fp + fn) / (rows × observed labels)).

    Examples:
        >>> lay = LabelLayout.of([("c", "cat"), ("c", "dog")])  # truth cat, dog, dog; predicted cat, cat, dog
        >>> m = view_count_metrics({"tp": [1, 1], "fp": [1, 0], "fn": [0, 1], "rows": [3]}, lay, which=("macro/f1", "micro_accuracy"))
        >>> round(float(m["macro/f1"]), 4), round(float(m["micro_accuracy"]), 4)
        (0.6667, 0.6667)
    """
    zd = float(zero_division)
    tp, fp, fn = (np.asarray(counts[k], dtype=np.float64) for k in ("tp", "fp", "fn"))
    rows = np.asarray(counts["rows"], dtype=np.float64)
    kinds = [k for k in _KINDS if per_feature or f"macro/{k}" in which or f"weighted/{k}" in which]
    out: dict[str, np.ndarray] = {}
    if kinds:
        tn = rows[..., layout.member] - tp - fp - fn
        r = ratios(tp, fp, fn, tn, zero_division=zd)
        if "specificity" in kinds:
            neg = tn + fp  # undefined for a label present in every row
            r["specificity"] = np.divide(tn, neg, out=np.full(neg.shape, zd), where=neg > 0)
        observed = (tp + fp + fn) > 0
        counted = observed
        if layout.declared is not None:  # declared classes: exactly those, an absent one with `zero_division` ratios
            counted = np.where(layout.closed[layout.member], layout.declared, observed)
            for k in _WEIGHTED:
                r[k] = np.where(observed, r[k], zd)
        weight = np.where(layout.binary[layout.member], layout.positive & observed, counted)
        for k in kinds:
            empty = np.where(layout.binary & (rows > 0), 1.0, zd) if k == "specificity" else np.full(rows.shape, zd)
            out[f"feature/{k}"] = _by_feature(np.asarray(r[k], dtype=np.float64), weight, layout, empty)
            out[f"label/{k}"] = np.asarray(r[k], dtype=np.float64)
            if k in _WEIGHTED and (per_feature or f"weighted/{k}" in which):
                out[f"feature/weighted/{k}"] = _weighted_by_feature(out[f"label/{k}"], counted, tp + fn, layout, np.full(rows.shape, zd))
    if per_feature or "micro_accuracy" in which:
        # right rows: the sets equal (`correct`, when given), which for one label per cell is the labels' tp
        right = np.asarray(counts["correct"], dtype=np.float64) if "correct" in counts else _by_feature_sum(tp, layout)
        out["feature/micro_accuracy"] = np.divide(right, rows, out=np.full(rows.shape, zd), where=rows > 0)
    if per_feature or any(k.startswith("samples/") for k in which):
        out.update(_set_metrics(tp, fp, fn, rows, counts, layout, zd))
    for k in which:
        if k == "row_accuracy":
            good, n = np.asarray(counts["correct_rows"], dtype=np.float64), np.asarray(counts["view_rows"], dtype=np.float64)
            # 0.0 without rows, but undefined under `zero_division="nan"`
            out[k] = np.divide(good, n, out=np.full(np.broadcast(good, n).shape, zd if np.isnan(zd) else 0.0), where=n > 0)
        elif k not in out:
            per = out[f"feature/{k.removeprefix('macro/')}"]  # `weighted/<kind>` → `feature/weighted/<kind>`, `samples/<kind>` likewise
            out[k] = _mean_over_features(per) if layout.features else np.full(per.shape[:-1], zd)
    return out if per_feature else {k: out[k] for k in which}


def _set_metrics(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, rows: np.ndarray, counts: Mapping[str, Any], layout: LabelLayout,
                 zd: float) -> dict[str, np.ndarray]:
    """Per feature `feature/micro/<kind>` (precision, recall, F1 of its labels' summed counts),
    `feature/hamming_loss` (Σ(fp + fn) / (rows × observed labels); 0.0 without any) and, given the
    sums of the rows' values (`samples_<kind>`), `feature/samples/<kind>` = their mean over rows."""
    t, f_p, f_n = (_by_feature_sum(x, layout) for x in (tp, fp, fn))
    micro = ratios(t, f_p, f_n, np.zeros_like(t), zero_division=zd)  # no true negatives: the all-true-negative rule never applies
    out = {f"feature/micro/{k}": np.asarray(micro[k], dtype=np.float64) for k in _WEIGHTED}
    cells = rows * _by_feature_sum(((tp + fp + fn) > 0).astype(np.float64), layout)
    out["feature/hamming_loss"] = np.divide(f_p + f_n, cells, out=np.zeros(t.shape), where=cells > 0)
    for k in _WEIGHTED:
        if f"samples_{k}" in counts:
            total = np.asarray(counts[f"samples_{k}"], dtype=np.float64)
            n = np.asarray(counts.get(f"samples_rows_{k}", rows), dtype=np.float64)  # under NaN: the rows whose value is defined
            out[f"feature/samples/{k}"] = np.divide(total, n, out=np.full(rows.shape, zd), where=n > 0)
    return out


def _by_feature_sum(values: np.ndarray, layout: LabelLayout) -> np.ndarray:
    """The sum of each feature's label values (..., labels) → (..., features)."""
    return values @ layout.onto


@dataclass(frozen=True, kw_only=True)
class FeatureMetrics:
    """Metrics of one feature in one view.

    `precision`, `recall`, `f1`, `specificity` are the macro average over observed labels, or
    the positive label's one-vs-rest values when `positive_label` is set (`mode` says which);
    `micro_accuracy` = rows whose prediction equals the truth / rows of the view; `weighted` the
    precision, recall and F1 averaged over the observed labels with their support as weights.
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
    weighted: Mapping[str, float] = field(default_factory=dict)
    samples: Mapping[str, float] = field(default_factory=dict)  # mean over rows of each row's P/R/F1 (given for `labels`)
    micro: Mapping[str, float] = field(default_factory=dict)  # label sets: P/R/F1 of the summed label counts
    hamming_loss: float | None = None  # label sets: Σ(fp + fn) / (rows × labels)

    def score(self) -> Score:
        return Score(f1=self.f1, precision=self.precision, recall=self.recall)

    def _set_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"samples": dict(self.samples)} if self.samples else {}
        if self.mode == "multi_label":
            out.update(micro=dict(self.micro), subset_accuracy=self.micro_accuracy, hamming_loss=self.hamming_loss)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "positive_label": self.positive_label,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "specificity": self.specificity,
            "micro_accuracy": self.micro_accuracy,
            "weighted": dict(self.weighted),
            **self._set_dict(),
            "rows": self.rows,
            "correct": self.correct,
            "labels": {k: dict(v) for k, v in self.labels.items()},
            "flags": list(self.flags),
        }


def feature_metrics(ledger: FeatureLedger, *, positive_label: str | None = None, zero_division: float = 0.0) -> FeatureMetrics:
    """Per-label one-vs-rest ratios, their macro average (or the positive label's) and micro accuracy.

    Examples:
        >>> cat = Counts(tp=1, fp=1, tn=1, cells=3, exact=2)  # truth cat, dog, dog; predicted cat, cat, dog
        >>> dog = Counts(tp=1, fn=1, tn=1, cells=3, exact=2)
        >>> m = feature_metrics(FeatureLedger(per_label={"cat": cat, "dog": dog}, rows=3, correct=2))
        >>> round(m.f1, 4), round(m.micro_accuracy, 4)
        (0.6667, 0.6667)
    """
    return _features_metrics({"": ledger}, {"": positive_label}, zero_division)[0][""]


def _features_metrics(ledgers: Mapping[str, FeatureLedger], positive: Mapping[str, str | None], zd: float,
                      view: Mapping[str, int] | None = None, classes: Mapping[str, Sequence[str]] | None = None,
                      sets: Sequence[str] | None = None) -> tuple[dict[str, FeatureMetrics], dict[str, np.ndarray]]:
    """Each feature's `FeatureMetrics` read from the view's map (`view_count_metrics`), and the
    map's values (with the view's totals; `row_accuracy` too given `view`'s `correct_rows` and
    `view_rows`). A declared class (`classes`) that occurs nowhere is a label with no count.
    Given `sets` (the features whose cells are label sets; may be empty), every feature also has
    its `samples` averages and the view its `samples` totals; those features are `multi_label`."""
    classes = classes or {}
    labels = [(f, k) for f, led in ledgers.items() for k in [*led.per_label, *sorted(set(classes.get(f, ())) - set(led.per_label))]]
    c = [ledgers[f].per_label.get(k) or Counts(tn=ledgers[f].rows, cells=ledgers[f].rows, exact=ledgers[f].correct) for f, k in labels]
    tp, fp, fn, tn = (np.array([getattr(x, a) for x in c], dtype=np.int64) for a in ("tp", "fp", "fn", "tn"))
    layout = LabelLayout.of(labels, list(ledgers), positive, classes)
    rows = np.array([led.rows for led in ledgers.values()], dtype=np.int64)
    which = VIEW_METRICS if view else VIEW_METRICS[:-1]
    extra: dict[str, Any] = {"correct": np.array([led.correct for led in ledgers.values()], dtype=np.int64)}
    if sets is not None:
        sums = [samples_sums(led.sets, zd) for led in ledgers.values()]
        extra.update({f"samples_{k}": np.array([x[k] for x in sums], dtype=np.float64) for k in _WEIGHTED})
        if np.isnan(zd):
            extra.update({f"samples_rows_{k}": np.array([x[f"rows_{k}"] for x in sums], dtype=np.float64) for k in _WEIGHTED})
        which = (*which, *(f"samples/{k}" for k in _WEIGHTED))
    got = view_count_metrics({"tp": tp, "fp": fp, "fn": fn, "rows": rows, **(view or {}), **extra}, layout, which=which, zero_division=zd,
                             per_feature=True)
    out = {}
    for i, (f, led) in enumerate(ledgers.items()):
        cols = np.flatnonzero(layout.member == i)
        per = {
            labels[j][1]: {
                "tp": int(tp[j]), "fp": int(fp[j]), "fn": int(fn[j]), "tn": int(tn[j]), "support": int(tp[j] + fn[j]),
                **{k: float(got[f"label/{k}"][j]) for k in _KINDS},
            }
            for j in cols
        }
        flags = (["no_rows"] if led.rows == 0 else []) + (["positive_label_not_observed"] if positive.get(f) is not None and positive[f] not in led.per_label else [])
        if f in classes and set(led.per_label) - set(classes[f]) - {MISSING}:
            flags.append("labels_outside_declared_classes")
        multi = sets is not None and f in sets
        mode = "multi_label" if multi else "binary" if positive.get(f) is not None else "macro"
        out[f] = FeatureMetrics(mode=mode, positive_label=positive.get(f), **{k: float(got[f"feature/{k}"][i]) for k in (*_KINDS, "micro_accuracy")},
                                rows=led.rows, correct=led.correct, labels=per, flags=tuple(flags),
                                weighted={k: float(got[f"feature/weighted/{k}"][i]) for k in _WEIGHTED},
                                samples={k: float(got[f"feature/samples/{k}"][i]) for k in _WEIGHTED} if sets is not None else {},
                                micro={k: float(got[f"feature/micro/{k}"][i]) for k in _WEIGHTED} if multi else {},
                                hamming_loss=float(got["feature/hamming_loss"][i]) if multi else None)
    return out, got


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
    weighted: Mapping[str, float] = field(default_factory=dict)  # mean over features of each feature's weighted P/R/F1
    samples: Mapping[str, float] = field(default_factory=dict)  # mean over features of each feature's samples P/R/F1 (`labels`)

    def score(self) -> Score:
        return Score(f1=self.totals["f1"], precision=self.totals["precision"], recall=self.totals["recall"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "rows": self.rows,
            "correct_rows": self.correct_rows,
            "row_accuracy": self.row_accuracy,
            "totals": {**self.totals, "weighted": dict(self.weighted), **({"samples": dict(self.samples)} if self.samples else {})},
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
    classes: Mapping[str, Sequence[str]] | None = None,
    sets: Sequence[str] | None = None,
) -> ViewMetrics:
    """Feature metrics of every feature, totals (arithmetic mean over features) and row accuracy,
    all read from the view's map (`view_count_metrics`); a feature with declared `classes` is
    averaged over exactly those. Given `sets` (the features whose cells are label sets, maybe
    none), the `samples` averages too and those features' set metrics."""
    feats, got = _features_metrics(ledgers, positive_labels or {}, float(zero_division), {"correct_rows": correct_rows, "view_rows": rows}, classes,
                                   sets)
    totals = {k: float(got[k if k == "micro_accuracy" else f"macro/{k}"]) for k in _TOTAL_KEYS}
    return ViewMetrics(name=name, description=description or VIEWS.get(name, name), features=feats, totals=totals,
                       row_accuracy=float(got["row_accuracy"]), rows=rows, correct_rows=correct_rows,
                       weighted={k: float(got[f"weighted/{k}"]) for k in _WEIGHTED},
                       samples={k: float(got[f"samples/{k}"]) for k in _WEIGHTED} if sets is not None else {})


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


def rank_on_strict_view(spec: RankingSpec, strict: Mapping[str, ViewMetrics], features: Sequence[str]) -> tuple[dict[str, FieldWinner], list[tuple[str, RankedFeatures]]]:
    """The feature winners on the strict view's per-feature F1 (then precision, recall), and the
    models in rank order with their `RankedFeatures`: ranked on the strict view's macro F1, then
    precision, recall and feature wins."""
    names = sorted(strict)
    winners = field_winners({f: {m: strict[m].features[f].score() for m in names} for f in features})
    wins = field_wins(winners, names)
    ranked = rank_by_metrics(spec, {m: {f"{spec.task}/macro/{k}": float(strict[m].totals[k]) for k in ("f1", "precision", "recall")} for m in names}, wins)
    return winners, [(r.model, RankedFeatures(rank=r.rank, tier=r.tier, tier_colour=r.tier_colour, feature_wins=wins[r.model],
                                              features_won=tuple(f for f, w in winners.items() if w.win_share > 0 and r.model in w.winners)))
                     for r in ranked]


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


def check_model_names(predictions: Sequence[Any]) -> None:
    """Refuse an empty model name and a name given twice (each model's `name` and `source`)."""
    seen: set[str] = set()
    for p in predictions:
        if not p.name or not str(p.name).strip():
            raise InputError(f"{p.source or 'predictions'}: a model name must not be empty.")
        if p.name in seen:
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)
