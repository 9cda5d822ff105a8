"""The count ledger and the one reducer from counts to ratios.

Counts first, ratios last: every task produces integer counts that add up across chunks, records
or machines; precision, recall, F1 and accuracy are computed once, at the end, by `ratios`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.core.ledger import Ledger
from extracteval.errors import InputError

__all__ = ["Counts", "Ratios", "ratios", "macro_f1", "item_metrics", "RATIO_KINDS", "rate_metrics", "NAN_TASKS", "is_undefined", "checked_zero_division",
           "zero_division_text"]

# the tasks whose `zero_division` may be NaN (scikit-learn's `zero_division=np.nan`: an undefined ratio is left out of the averages)
NAN_TASKS = ("labels", "entities")


def is_undefined(value: Any) -> bool:
    """Whether `value` is a float NaN: an undefined ratio under `zero_division="nan"`, or that setting itself."""
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def checked_zero_division(value: Any, *, allow_nan: bool = False, name: str = "zero_division") -> Any:
    """A `zero_division` option: a number in [0, 1], as given; where `allow_nan` (the `NAN_TASKS`)
    also NaN, given as a float NaN or as the text `nan` (any case), returned as `math.nan`.
    Anything else is an `InputError` naming what was expected."""
    if allow_nan and (is_undefined(value) or (isinstance(value, str) and value.strip().lower() == "nan")):
        return math.nan
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
        note = "" if allow_nan else f' ("nan" is offered for the {" and ".join(NAN_TASKS)} tasks only)'
        expected = 'a number in [0, 1] or "nan"' if allow_nan else "a number in [0, 1]"
        raise InputError(f"Expected `{name}` to be {expected}{note}, but got {value!r}.")
    return value


def zero_division_text(value: Any) -> Any:
    """`zero_division` as a JSON document or a parameter holds it: the text `nan` for NaN, the number otherwise."""
    return "nan" if is_undefined(value) else value


@dataclass(frozen=True, kw_only=True)
class Counts(Ledger):
    """Mergeable confusion counts for one (model, field) or any larger group.

    Attributes:
        tp, fp, fn, tn: confusion counts. A wrong value counts one FP and one FN.
        excluded: cells left out because the prediction was `pending` or `error`.
        cells: valid (not excluded) cells.
        exact: valid cells that were fully correct (TP or TN, nothing else).

    Examples:
        >>> a = Counts(tp=1, fp=1, fn=1, tn=1, cells=3, exact=2)
        >>> (a + a).tp
        2
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    excluded: int = 0
    cells: int = 0
    exact: int = 0


    def ratios(self, *, zero_division: float = 0.0) -> Ratios:
        r = ratios(self.tp, self.fp, self.fn, self.tn, zero_division=zero_division)
        emr = self.exact / self.cells if self.cells else zero_division
        return Ratios(
            precision=float(r["precision"]),
            recall=float(r["recall"]),
            f1=float(r["f1"]),
            accuracy=float(r["accuracy"]),
            exact_match_rate=float(emr),
        )

    @property
    def no_valid_classifications(self) -> bool:
        return self.tp + self.fp + self.fn + self.tn == 0

    def to_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class Ratios:
    precision: float
    recall: float
    f1: float
    accuracy: float
    exact_match_rate: float

    def to_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


def _safe_div(num: np.ndarray, den: np.ndarray, zero_division: float) -> np.ndarray:
    out = np.full(np.broadcast(num, den).shape, float(zero_division))
    nz = den != 0
    np.divide(num, den, out=out, where=nz)
    return out


def ratios(tp: Any, fp: Any, fn: Any, tn: Any, *, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and accuracy from counts; scalars or arrays of any shape.

    A zero denominator gives `zero_division` (NaN too: the ratio is undefined), except the
    all-true-negatives rule: when tp = fp = fn = 0 and tn > 0 (a field correctly left empty
    everywhere) precision = recall = f1 = 1.0.
    F1 is 2·tp / (2·tp + fp + fn), which equals 2PR/(P+R) whenever P + R > 0.

    Examples:
        >>> r = ratios(1, 1, 1, 1)
        >>> float(r["f1"]), float(r["accuracy"])
        (0.5, 0.5)
    """
    if not (0.0 <= zero_division <= 1.0 or is_undefined(zero_division)):
        raise ValueError(f"Expected `zero_division` to be a float in [0, 1] or NaN, but got {zero_division!r}.")
    tp, fp, fn, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    precision = _safe_div(tp, tp + fp, zero_division)
    recall = _safe_div(tp, tp + fn, zero_division)
    f1 = _safe_div(2 * tp, 2 * tp + fp + fn, zero_division)
    accuracy = _safe_div(tp + tn, tp + fp + fn + tn, zero_division)
    all_tn = (tp == 0) & (fp == 0) & (fn == 0) & (tn > 0)
    precision = np.where(all_tn, 1.0, precision)
    recall = np.where(all_tn, 1.0, recall)
    f1 = np.where(all_tn, 1.0, f1)
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": accuracy}


def macro_f1(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray, *, zero_division: float) -> np.ndarray:
    """Macro F1 over the last axis from tp, fp, fn, tn arrays of shape (..., fields).

    F1 only, with the arithmetic of `counts.ratios` (2·tp / (2·tp + fp + fn) in float64, the
    all-true-negative rule), so the values are the same bit for bit; computing all four ratios
    for every resample of every model was most of a leaderboard's bootstrap. Inputs may be
    float32 sums of integer counts (exact): each is widened to float64 inside the first
    operation that uses it, without a float64 copy of its own."""
    if not 0.0 <= zero_division <= 1.0:
        raise ValueError(f"Expected `zero_division` to be a float in [0, 1], but got {zero_division!r}.")
    num = np.multiply(tp, 2, dtype=np.float64)
    den = np.add(num, fp, dtype=np.float64)
    den += fn
    f1 = np.full(den.shape, float(zero_division))
    nz = den != 0
    np.divide(num, den, out=f1, where=nz)
    if not nz.all():
        # the all-true-negatives rule (tp = fp = fn = 0, tn > 0 → 1.0) can only apply where den is 0
        f1[~nz & (tp == 0) & (fp == 0) & (fn == 0) & (tn > 0)] = 1.0
    total_counts = np.add(tp, fp, dtype=np.float64)
    total_counts += fn
    total_counts += tn
    valid = total_counts > 0
    n_valid = valid.sum(axis=-1)
    f1[~valid] = 0.0
    total = f1.sum(axis=-1)
    return np.divide(total, n_valid, out=np.zeros_like(total, dtype=np.float64), where=n_valid > 0)


RATIO_KINDS = ("f1", "precision", "recall", "accuracy")


def item_metrics(counts: Any, *, which: tuple[str, ...] | None = None, zero_division: float = 0.0, empty: float = 0.0) -> dict[str, np.ndarray]:
    """The macro and micro averages of items' confusion counts: `counts` (..., items, 4) holds each
    item's tp, fp, fn, tn (leading axes: models, resamples…), or is the four (..., items) arrays
    tp, fp, fn, tn; `macro/<kind>` is the mean over the
    items with any count of each item's ratio (`empty` when no item has one; over leading axes the
    sum of the counted items' ratios over their number, which may differ from a single set's
    `np.mean` in the last bit), `weighted/<kind>` their mean weighted by support (tp + fn; the plain
    mean when no counted item has support), `micro/<kind>` the ratio
    of the counts summed over items, for each kind of `RATIO_KINDS` (`which`: only these keys).
    The one reduction behind the `fields` task's overall and micro metrics and the `spans` task's
    macro and micro ones, wherever they are computed: a result, a resample, a row of feedback.

    Examples:
        >>> c = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 2]])
        >>> m = item_metrics(c)
        >>> float(m["macro/precision"]), float(m["micro/recall"])
        (0.75, 0.6666666666666666)
    """
    keys = which if which is not None else tuple(f"{v}/{k}" for v in ("macro", "micro") for k in RATIO_KINDS)
    if isinstance(counts, tuple):
        tp, fp, fn, tn = counts
    else:
        c = np.asarray(counts)
        tp, fp, fn, tn = (c[..., k] for k in range(4))
    out: dict[str, np.ndarray] = {}
    if any(k.startswith("micro/") for k in keys):
        micro = ratios(tp.sum(axis=-1), fp.sum(axis=-1), fn.sum(axis=-1), tn.sum(axis=-1), zero_division=zero_division)
        out.update({k: np.asarray(micro[k.split("/")[1]], dtype=np.float64) for k in keys if k.startswith("micro/")})
    weighted = [k for k in keys if k.startswith("weighted/")]
    if weighted:
        out.update(_weighted(tp, fp, fn, tn, weighted, zero_division=zero_division, empty=empty))
    macro = [k for k in keys if k.startswith("macro/")]
    if macro and np.ndim(tp) == 1:  # one set of items (a result): the mean of the counted items' ratios, as np.mean sums them
        r = ratios(tp, fp, fn, tn, zero_division=zero_division)
        valid = (np.add(tp, fp, dtype=np.float64) + fn + tn) > 0
        for k in macro:
            out[k] = np.float64(np.mean(r[k.split("/")[1]][valid])) if valid.any() else np.float64(empty)
    elif macro == ["macro/f1"]:  # F1 alone: the leaderboard's hot path (all four ratios cost four times as much)
        out["macro/f1"] = macro_f1(tp, fp, fn, tn, zero_division=zero_division)
        if empty != 0.0:
            none = ~((np.add(tp, fp, dtype=np.float64) + fn + tn) > 0).any(axis=-1)
            out["macro/f1"] = np.where(none, float(empty), out["macro/f1"])
    elif macro:
        r = ratios(tp, fp, fn, tn, zero_division=zero_division)
        valid = (np.add(tp, fp, dtype=np.float64) + fn + tn) > 0
        n = valid.sum(axis=-1)
        for k in macro:
            total = np.where(valid, r[k.split("/")[1]], 0.0).sum(axis=-1)
            out[k] = np.divide(total, n, out=np.full(total.shape, float(empty)), where=n > 0)
    return {k: out[k] for k in keys}


def _weighted(tp: Any, fp: Any, fn: Any, tn: Any, keys: Sequence[str], *, zero_division: float, empty: float) -> dict[str, np.ndarray]:
    """`weighted/<kind>`: the items' ratios averaged with their support (tp + fn) as weights, over
    the items with any count; the plain mean of those when none has support; `empty` when no item
    has a count."""
    r = ratios(tp, fp, fn, tn, zero_division=zero_division)
    valid = (np.add(tp, fp, dtype=np.float64) + fn + tn) > 0
    w = np.where(valid, np.add(tp, fn, dtype=np.float64), 0.0)
    wsum, n = w.sum(axis=-1), valid.sum(axis=-1)
    out: dict[str, np.ndarray] = {}
    for k in keys:
        v = np.where(valid, r[k.split("/")[1]], 0.0)
        plain = np.divide(v.sum(axis=-1), n, out=np.full(np.shape(n), float(empty)), where=n > 0)
        out[k] = np.divide(np.multiply(v, w).sum(axis=-1), wsum, out=np.asarray(plain, dtype=np.float64), where=wsum > 0)
    return out


def rate_metrics(counts: Mapping[str, Any], *, rates: Mapping[str, tuple[str, str]], prf: Mapping[str, str], which: Sequence[str],
                 zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Metrics of named counts (scalars or arrays of one shape: models, resamples…): a rate
    `rates[metric]` = (numerator, denominator) count names, `zero_division` when the denominator
    is 0; a ratio of the counts `tp`, `fp`, `fn` (no true negatives) named by `prf[metric]`
    (`precision`, `recall`, `f1`). A `KeyError` names a count the metric needs that `counts` lacks.

    Examples:
        >>> m = rate_metrics({"records": 4, "exact": 3, "tp": 2, "fp": 1, "fn": 1}, rates={"exact_rate": ("exact", "records")},
        ...                  prf={"f1": "f1"}, which=("exact_rate", "f1"))
        >>> float(m["exact_rate"]), float(m["f1"])
        (0.75, 0.6666666666666666)
    """
    out: dict[str, np.ndarray] = {}
    r: dict[str, np.ndarray] | None = None  # the P/R/F1 of tp, fp, fn: computed once, for every such metric asked
    for metric in which:
        if metric in rates:
            num, den = (np.asarray(counts[k], dtype=np.float64) for k in rates[metric])
            value = np.full(np.broadcast(num, den).shape, float(zero_division))
            np.divide(num, den, out=value, where=den != 0)
            out[metric] = value
        else:
            if r is None:
                tp, fp, fn = (np.asarray(counts[k], dtype=np.float64) for k in ("tp", "fp", "fn"))
                r = ratios(tp, fp, fn, np.zeros_like(tp), zero_division=zero_division)
            out[metric] = np.asarray(r[prf[metric]], dtype=np.float64)
    return out
