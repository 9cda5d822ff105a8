"""Field winners, field wins and model ranking, for any task.

Inputs are plain numbers, so the same functions rank models scored in one process and runs read
back from an MLflow tracking store.

A `RankingSpec` is a task's one declaration of its primary metric and tie-breaks (`RANKING` in the
task's `contract` module, read through the registry: `extracteval.tasks.RANKING_SPECS`): the
task's own ranking (`score`, the report, the parent run), `extracteval leaderboard`, the default
metric of `extracteval compare` / `compare-models` / `--baseline --candidate`, and the run
descriptions all read it. `rank_by_metrics` ranks a task's models by it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

__all__ = [
    "TOLERANCE",
    "RankingSpec",
    "ranking_key",
    "rank_by_metrics",
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
    """Compare two key tuples, larger first, treating values within `tol` as equal. An undefined
    value (NaN: a ratio over nothing under `zero_division="nan"`) comes after every number, and
    two undefined values tie."""
    for x, y in zip(a, b):
        if x != x or y != y:
            if (x != x) != (y != y):
                return 1 if x != x else -1
        elif abs(x - y) > tol:
            return -1 if x > y else 1
    return 0


@dataclass(frozen=True, kw_only=True)
class FieldWinner:
    """Who won one field.

    kind: `sole` (one best model, 1 win), `shared` (k best of n > k, 1/k win each),
    `universal` (all models tie, 0 wins), `none` (best F1 is 0 or undefined, 0 wins).
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
        if not best_score.f1 > tol:  # 0, or undefined (NaN): nobody won the field
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


@dataclass(frozen=True, kw_only=True)
class RankingSpec:
    """How one task's models are ranked, wherever they are ranked.

    primary: metric key (as logged to MLflow) of the main score, named `label` for people;
    tie_breaks: further keys in order (larger is better, unless listed in `lower_is_better`);
    then, when `item_wins` is true, total item wins; then the model name ascending.
    item_prefix/item_keys: per-item metric keys (`<prefix><item>/<key>`) whose first key picks
    item winners, the others break ties. item_exclude: item names that are not items (a
    catch-all row). shared_items_only: only items every model has a score for are won and
    counted (a structured path one model invents is not a field the others could win).
    primary_is_rate: the primary metric is a rate in [0, 1], shown as a percentage.
    """

    task: str
    primary: str
    label: str
    tie_breaks: tuple[str, ...]
    lower_is_better: frozenset[str] = frozenset()
    item_wins: bool = True
    item_prefix: str | None = None
    item_keys: tuple[str, ...] = ("f1", "precision", "recall")
    item_label: str = "fields"
    item_exclude: frozenset[str] = frozenset()
    shared_items_only: bool = False
    primary_is_rate: bool = True  # the primary metric is a rate (shown as a percentage), not a score like RQS

    @property
    def keys(self) -> tuple[str, ...]:
        """Every metric key the ranking reads, primary first."""
        return (self.primary, *self.tie_breaks)

    def rule(self) -> str:
        """The ranking rule as one sentence, e.g. for a report or a run description."""
        then = [f"{k} (lower is better)" if k in self.lower_is_better else k for k in self.tie_breaks]
        if self.item_wins:
            then.append(f"{self.item_label[:-1] if self.item_label.endswith('s') else self.item_label} wins")
        then.append("model name")
        return f"ranked by {self.label} ({self.primary}), then {', '.join(then)}"

    def to_dict(self) -> dict[str, Any]:
        return {"primary": self.primary, "label": self.label, "tie_breaks": list(self.tie_breaks),
                "lower_is_better": sorted(self.lower_is_better), "item_wins": self.item_wins, "rule": self.rule()}


def ranking_key(spec: RankingSpec, metrics: Mapping[str, float], wins: float = 0.0) -> tuple[float, ...]:
    """The comparison key of one model (larger is better at every position)."""
    key = [float(metrics[spec.primary])]
    for k in spec.tie_breaks:
        v = float(metrics.get(k, 0.0))
        key.append(-v if k in spec.lower_is_better else v)
    if spec.item_wins:
        key.append(float(wins))
    return tuple(key)


def rank_by_metrics(
    spec: RankingSpec, metrics: Mapping[str, Mapping[str, float]], wins: Mapping[str, float] | None = None, *, tol: float = TOLERANCE
) -> list[RankedModel]:
    """Rank models by the task's declaration: `metrics[model][key]` for the declared keys.

    `RankedModel.f1` holds the primary metric (the tier is taken on it), `precision` and
    `recall` the first two tie-breaks (0.0 when the task has fewer).

    Example:
        >>> spec = RankingSpec(task="fields", primary="overall/f1", label="F1", tie_breaks=("overall/precision", "overall/recall"))
        >>> ms = {"A": {"overall/f1": 0.5, "overall/precision": 0.5, "overall/recall": 0.5},
        ...       "B": {"overall/f1": 0.8, "overall/precision": 2/3, "overall/recall": 1.0}}
        >>> [r.model for r in rank_by_metrics(spec, ms)]
        ['B', 'A']
    """
    wins = wins or {}
    for m, vals in metrics.items():
        missing = [k for k in spec.keys if k not in vals]
        if missing:
            raise KeyError(f"ranking {spec.task}: model {m!r} has no {', '.join(missing)}")
    keys = {m: ranking_key(spec, vals, wins.get(m, 0.0)) for m, vals in metrics.items()}

    def cmp(a: str, b: str) -> int:
        c = _cmp_desc(keys[a], keys[b], tol)
        return c if c else (-1 if a < b else (1 if a > b else 0))

    out = []
    for i, m in enumerate(sorted(metrics, key=cmp_to_key(cmp)), start=1):
        vals = metrics[m]
        extra = [float(vals[k]) for k in spec.tie_breaks[:2]] + [0.0, 0.0]
        t = tier(float(vals[spec.primary]))
        out.append(RankedModel(model=m, rank=i, f1=float(vals[spec.primary]), precision=extra[0], recall=extra[1],
                               field_wins=float(wins.get(m, 0.0)), tier=t, tier_colour=TIER_COLOURS[t]))
    return out
