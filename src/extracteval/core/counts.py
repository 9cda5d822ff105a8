"""The count ledger and the one reducer from counts to ratios.

Counts first, ratios last: every task produces integer counts that add up across chunks, records
or machines; precision, recall, F1 and accuracy are computed once, at the end, by `ratios`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from extracteval.core.ledger import Ledger

__all__ = ["Counts", "Ratios", "ratios"]


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

    A zero denominator gives `zero_division`, except the all-true-negatives rule: when tp = fp = fn = 0 and
    tn > 0 (a field correctly left empty everywhere) precision = recall = f1 = 1.0.
    F1 is 2·tp / (2·tp + fp + fn), which equals 2PR/(P+R) whenever P + R > 0.

    Examples:
        >>> r = ratios(1, 1, 1, 1)
        >>> float(r["f1"]), float(r["accuracy"])
        (0.5, 0.5)
    """
    if not 0.0 <= zero_division <= 1.0:
        raise ValueError(f"Expected `zero_division` to be a float in [0, 1], but got {zero_division!r}.")
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
