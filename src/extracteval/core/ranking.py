"""Field winners, field wins and model ranking (seed 000), for any task.

Inputs are plain numbers, so the same functions rank models scored in one process and runs read
back from an MLflow tracking store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

__all__ = [
    "TOLERANCE",
    "Score",
    "FieldWinner",
    "RankedModel",
    "field_winners",
    "field_wins",
    "rank_models",
    "tier",
    "TIER_COLOURS",
    "format_wins",
]

TOLERANCE = 1e-9
TIERS = (("excellent", 0.90), ("good", 0.70))
TIER_COLOURS = {"excellent": "green", "good": "yellow", "needs_improvement": "red"}
BADGE_COLOURS = {"sole": "green", "shared": "blue", "universal": "blue", "none": None}


@dataclass(frozen=True, kw_only=True)
class Score:
    """The three numbers a field winner is chosen by, in order of precedence."""

    f1: float
    precision: float
    recall: float

    def key(self) -> tuple[float, float, float]:
        return (self.f1, self.precision, self.recall)


def _cmp_desc(a: Sequence[float], b: Sequence[float], tol: float = TOLERANCE) -> int:
    """Compare two key tuples, larger first, treating values within `tol` as equal."""
    for x, y in zip(a, b):
        if abs(x - y) > tol:
            return -1 if x > y else 1
    return 0


@dataclass(frozen=True, kw_only=True)
class FieldWinner:
    """Who won one field.

    kind: `sole` (one best model, 1 win), `shared` (k best of n > k, 1/k win each),
    `universal` (all models tie, 0 wins), `none` (best F1 is 0, 0 wins).
    """

    field: str
    kind: str
    winners: tuple[str, ...]
    best: Score | None
    badge: str | None = None

    @property
    def win_share(self) -> float:
        if self.kind in ("sole", "shared"):
            return 1.0 / len(self.winners)
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "winners": list(self.winners),
            "win_share": self.win_share,
            "badge": self.badge,
            "best": None if self.best is None else {"f1": self.best.f1, "precision": self.best.precision, "recall": self.best.recall},
        }


def field_winners(scores: Mapping[str, Mapping[str, Score]], *, tol: float = TOLERANCE) -> dict[str, FieldWinner]:
    """Winner of each field from `scores[field][model]`.

    Example:
        >>> s = {"type": {"A": Score(f1=0.5, precision=0.5, recall=0.5),
        ...               "B": Score(f1=0.8, precision=2/3, recall=1.0)}}
        >>> field_winners(s)["type"].winners
        ('B',)
    """
    out: dict[str, FieldWinner] = {}
    for fname, per_model in scores.items():
        if not per_model:
            continue
        models = sorted(per_model)
        best_key = max((per_model[m].key() for m in models), key=cmp_to_key(lambda a, b: -_cmp_desc(a, b, tol)))
        best = [m for m in models if _cmp_desc(per_model[m].key(), best_key, tol) == 0]
        best_score = per_model[best[0]]
        if best_score.f1 <= tol:
            kind = "none"
        elif len(best) == len(models):
            kind = "universal"
        elif len(best) == 1:
            kind = "sole"
        else:
            kind = "shared"
        out[fname] = FieldWinner(
            field=fname,
            kind=kind,
            winners=tuple(best) if kind != "none" else (),
            best=best_score,
            badge=BADGE_COLOURS[kind],
        )
    return out


def field_wins(winners: Mapping[str, FieldWinner], models: Sequence[str]) -> dict[str, float]:
    """Total field wins per model: 1 for a sole win, 1/k for a k-way shared win, else 0."""
    wins = {m: 0.0 for m in models}
    for w in winners.values():
        share = w.win_share
        for m in w.winners:
            if m in wins:
                wins[m] += share
    return wins


def tier(f1: float) -> str:
    """`excellent` (≥ 0.90), `good` (≥ 0.70) or `needs_improvement`, by overall F1."""
    for name, threshold in TIERS:
        if f1 + TOLERANCE >= threshold:
            return name
    return "needs_improvement"


def format_wins(wins: float) -> str:
    """Whole numbers when whole ("2"), otherwise up to two decimals ("1.5", "0.33")."""
    if abs(wins - round(wins)) < 1e-9:
        return str(int(round(wins)))
    return f"{wins:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, kw_only=True)
class RankedModel:
    model: str
    rank: int
    f1: float
    precision: float
    recall: float
    field_wins: float
    tier: str
    tier_colour: str = field(default="")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "rank": self.rank,
            "f1": self.f1,
            "precision": self.precision,
            "recall": self.recall,
            "field_wins": self.field_wins,
            "tier": self.tier,
            "tier_colour": self.tier_colour,
        }


def rank_models(overall: Mapping[str, Score], wins: Mapping[str, float], *, tol: float = TOLERANCE) -> list[RankedModel]:
    """Rank models by overall F1, precision, recall, total field wins, then name ascending.

    Ranks are 1..n with no shared ranks: the name is the last tie-break.
    """

    def cmp(a: str, b: str) -> int:
        ka = (*overall[a].key(), wins.get(a, 0.0))
        kb = (*overall[b].key(), wins.get(b, 0.0))
        c = _cmp_desc(ka, kb, tol)
        if c:
            return c
        return -1 if a < b else (1 if a > b else 0)

    order = sorted(overall, key=cmp_to_key(cmp))
    ranked = []
    for i, m in enumerate(order, start=1):
        t = tier(overall[m].f1)
        ranked.append(
            RankedModel(
                model=m,
                rank=i,
                f1=overall[m].f1,
                precision=overall[m].precision,
                recall=overall[m].recall,
                field_wins=wins.get(m, 0.0),
                tier=t,
                tier_colour=TIER_COLOURS[t],
            )
        )
    return ranked
