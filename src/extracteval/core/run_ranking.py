"""Cross-run leaderboards: rank already-scored runs from their logged metrics.

Pure: the MLflow layer turns tracking-store runs into `RunSummary` objects (metrics by their
logged key) and per-record tables; this module groups runs by the digests of their truth and config,
refuses unfair comparisons, finds item winners (fields, tags, features…), ranks by the task's
ranking declaration (`rankings`: the registry's `RANKING_SPECS`, as the task ranks its own models), and attaches
paired-bootstrap intervals when per-record results are available.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cmp_to_key
from typing import Any

import numpy as np

from extracteval.core.bootstrap import Interval
from extracteval.core.ranking import (
    TIER_COLOURS,
    FieldWinner,
    RankingSpec,
    Score,
    _cmp_desc,
    field_winners,
    field_wins,
    format_wins,
    ranking_key,
    tier,
)
from extracteval.errors import InputError

__all__ = [
    "RunSummary", "RankingSpec", "LeaderboardEntry", "SupersededRun", "LeaderboardGroup", "Leaderboard", "build_leaderboard",
    "latest_per_model",
    "RecordCounts", "as_record_counts", "paired_record_matrix", "with_intervals",
]


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    run_id: str
    model: str
    task: str
    truth_digest: str
    config_digest: str
    metrics: Mapping[str, float]
    run_name: str = ""
    start_time: int = 0  # ms since the epoch, as the tracking store records it
    end_time: int = 0


@dataclass(frozen=True, kw_only=True)
class SupersededRun:
    """A run left out of the ranking because a later run of the same model (same truth and
    config) was ranked instead."""

    run_id: str
    model: str
    run_name: str
    start_time: int
    superseded_by: str  # the run id ranked in its place
    superseded_by_start_time: int

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "model": self.model, "run_name": self.run_name, "start_time": self.start_time,
                "status": "superseded", "superseded_by": self.superseded_by, "superseded_by_start_time": self.superseded_by_start_time}


@dataclass(frozen=True, kw_only=True)
class LeaderboardEntry:
    run_id: str
    model: str
    rank: int
    score: float
    tie_breaks: Mapping[str, float]
    item_wins: float
    items_scored: int
    item_label: str = "fields"
    tier: str
    tier_colour: str
    overall: Mapping[str, float]
    micro: Mapping[str, float]
    ci: Interval | None = None

    @property
    def wins_label(self) -> str:
        return f"Won {format_wins(self.item_wins)} of {self.items_scored} {self.item_label}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "model": self.model,
            "rank": self.rank,
            "score": self.score,
            "tie_breaks": dict(self.tie_breaks),
            "overall": dict(self.overall),
            "micro": dict(self.micro),
            "field_wins": self.item_wins,
            "items_scored": self.items_scored,
            "wins_label": self.wins_label,
            "tier": self.tier,
            "tier_colour": self.tier_colour,
            "ci": None if self.ci is None else self.ci.to_dict(),
        }


@dataclass(frozen=True, kw_only=True)
class LeaderboardGroup:
    truth_digest: str
    config_digest: str
    entries: tuple[LeaderboardEntry, ...]
    item_winners: Mapping[str, FieldWinner]
    comparisons: tuple[Mapping[str, Any], ...] = ()
    superseded: tuple[SupersededRun, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "truth_digest": self.truth_digest,
            "config_digest": self.config_digest,
            "ranking": [e.to_dict() for e in self.entries],
            "superseded": [s.to_dict() for s in self.superseded],
            "field_winners": {k: v.to_dict() for k, v in self.item_winners.items()},
            "comparisons": [dict(c) for c in self.comparisons],
        }


@dataclass(frozen=True, kw_only=True)
class Leaderboard:
    task: str
    spec: RankingSpec
    groups: tuple[LeaderboardGroup, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    all_runs: bool = False

    def to_dict(self) -> dict[str, Any]:
        one = self.groups[0] if len(self.groups) == 1 else None
        doc: dict[str, Any] = {
            "task": self.task,
            "primary_metric": self.spec.primary,
            "item_label": self.spec.item_label,
            "primary_label": self.spec.label,
            "ranking_rule": self.spec.rule(),
            "tie_breaks": [*self.spec.tie_breaks, *(["field_wins"] if self.spec.item_wins else []), "model"],
            "run_selection": "all runs" if self.all_runs else "latest run per model",
            "n_ranked": sum(len(g.entries) for g in self.groups),
            "n_superseded": sum(len(g.superseded) for g in self.groups),
            "groups": [g.to_dict() for g in self.groups],
            "warnings": list(self.warnings),
        }
        if one is not None:
            doc["ranking"] = [e.to_dict() for e in one.entries]
            doc["superseded"] = [s.to_dict() for s in one.superseded]
            doc["field_winners"] = {k: v.to_dict() for k, v in one.item_winners.items()}
            doc["comparisons"] = [dict(c) for c in one.comparisons]
        return doc


def _items(metrics: Mapping[str, float], spec: RankingSpec) -> dict[str, Score]:
    """Per-item scores from keys `<prefix><item>/<key>`; the first item key is the winner metric."""
    if not spec.item_prefix:
        return {}
    keys = spec.item_keys
    found: dict[str, dict[str, float]] = {}
    for k, v in metrics.items():
        if not k.startswith(spec.item_prefix):
            continue
        item, _, leaf = k[len(spec.item_prefix) :].rpartition("/")
        if item and leaf in keys and item not in spec.item_exclude:
            found.setdefault(item, {})[leaf] = float(v)
    out = {}
    for item, vals in found.items():
        if keys[0] not in vals:
            continue
        rest = [vals.get(k, 0.0) for k in keys[1:3]] + [0.0, 0.0]
        out[item] = Score(f1=vals[keys[0]], precision=rest[0], recall=rest[1])
    return out


def _distinct_names(runs: Sequence[RunSummary]) -> dict[str, str]:
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.model] = counts.get(r.model, 0) + 1
    return {r.run_id: (r.model if counts[r.model] == 1 else f"{r.model} ({r.run_id[:8]})") for r in runs}


def _recency(r: RunSummary) -> tuple[int, int, str]:
    # start time first; equal start times (one upload of several bundles within a millisecond)
    # fall back to the end time, then the run id, so the choice never depends on input order
    return (r.start_time, r.end_time, r.run_id)


def latest_per_model(runs: Sequence[RunSummary]) -> tuple[list[RunSummary], list[SupersededRun]]:
    """The latest run of each model name (by start time) and the earlier runs it supersedes.

    Callers pass the runs of one (truth digest, config digest) group: a model re-run against
    other truth or config is a different comparison, not a newer run of this one. The kept runs
    keep their input order; the superseded ones are listed newest first, per model name.

    >>> a = RunSummary(run_id="r1", model="m", task="fields", truth_digest="T", config_digest="C", metrics={}, start_time=1)
    >>> b = RunSummary(run_id="r2", model="m", task="fields", truth_digest="T", config_digest="C", metrics={}, start_time=2)
    >>> kept, old = latest_per_model([a, b])
    >>> [r.run_id for r in kept], [(s.run_id, s.superseded_by) for s in old]
    (['r2'], [('r1', 'r2')])
    """
    latest: dict[str, RunSummary] = {}
    for r in runs:
        if r.model not in latest or _recency(r) > _recency(latest[r.model]):
            latest[r.model] = r
    keep = {r.run_id for r in latest.values()}
    superseded = [
        SupersededRun(run_id=r.run_id, model=r.model, run_name=r.run_name, start_time=r.start_time,
                      superseded_by=latest[r.model].run_id, superseded_by_start_time=latest[r.model].start_time)
        for r in sorted(runs, key=lambda x: (x.model, -x.start_time, -x.end_time, x.run_id))
        if r.run_id not in keep
    ]
    return [r for r in runs if r.run_id in keep], superseded


def build_leaderboard(
    runs: Sequence[RunSummary],
    *,
    rankings: Mapping[str, RankingSpec],
    task: str | None = None,
    group_by_truth: bool = False,
    intervals: Mapping[str, Interval] | None = None,
    pair_intervals: Mapping[tuple[str, str], Interval] | None = None,
    metric: str | None = None,
    all_runs: bool = False,
) -> Leaderboard:
    """Rank runs of one task.

    By default only the latest run of each model name within each (truth digest, config digest)
    group is ranked (by start time); the earlier ones are listed as superseded, each with the run
    id that replaced it. So re-running an evaluation (a nightly job, the demo twice) does not rank
    a model against its own earlier runs nor dilute its item wins.

    Args:
        runs: the runs to compare (one model each).
        rankings: task → its ranking declaration (`extracteval.tasks.RANKING_SPECS`).
        task: the task to rank; required when the runs hold several tasks.
        group_by_truth: rank each (truth digest, config digest) group separately instead of
            refusing to compare runs scored against different truth or config.
        intervals: run id → interval of its primary metric.
        pair_intervals: (higher run id, lower run id) → interval of the difference.
        metric: rank by this metric key instead of the task's primary metric (the task's
            tie-break keys follow, without this one).
        all_runs: rank every run, earlier runs of the same model too (a model name repeated
            within a group then gets the first 8 characters of its run id).

    Raises:
        InputError: no runs, mixed tasks without `task`, or mixed digests without `group_by_truth`.
    """
    task, runs, spec = _task_runs(runs, rankings, task, metric)
    warnings = []
    groups: dict[tuple[str, str], list[RunSummary]] = {}
    for r in runs:
        groups.setdefault((r.truth_digest, r.config_digest), []).append(r)
    selected = {k: (list(g), []) if all_runs else latest_per_model(g) for k, g in groups.items()}
    # only the runs to be ranked need the metric (an old superseded run may predate it)
    missing = [r.run_name or r.run_id for kept, _ in selected.values() for r in kept if spec.primary not in r.metrics]
    if missing:
        raise InputError(f"runs without the primary metric {spec.primary!r}: {', '.join(missing[:10])}.")
    if len(groups) > 1 and not group_by_truth:
        desc = "; ".join(
            f"truth {t[:12]}… config {c[:12]}…: {', '.join(sorted(x.run_name or x.model for x in kept))}"
            + (f" (and {len(old)} earlier run(s) of these models)" if old else "")
            for (t, c), (kept, old) in sorted(selected.items())
        )
        raise InputError(
            f"refusing to rank runs scored against different ground truth or config ({len(groups)} groups: {desc}). "
            "Rank each group separately with --group-by-truth, or filter the runs."
        )
    out_groups = []
    ranked = 0
    for (t, c), (members, superseded) in sorted(selected.items()):
        ranked += len(members)
        # with --all-runs a model name repeated within a group gets its run id; groups are ranked apart
        group = _rank_group(members, spec, _distinct_names(members), t, c, intervals or {}, pair_intervals or {})
        out_groups.append(replace(group, superseded=tuple(superseded)))
    if ranked == 1:
        warnings.append("only one run ranked: every item is a universal tie, so no wins are awarded.")
    warnings += _one_name_warnings(runs, [s for _, superseded in selected.values() for s in superseded])
    return Leaderboard(task=task, spec=spec, groups=tuple(out_groups), warnings=tuple(warnings), all_runs=all_runs)


def _task_runs(runs: Sequence[RunSummary], rankings: Mapping[str, RankingSpec], task: str | None,
               metric: str | None) -> tuple[str, list[RunSummary], RankingSpec]:
    """The task to rank, its runs and its ranking declaration (led by `metric` when given);
    InputError for no runs, several tasks without `task`, a task without ranking, an unknown metric."""
    if not runs:
        raise InputError("no runs to rank: the experiment has no extracteval runs matching the filter.")
    tasks = sorted({r.task for r in runs})
    if task is None:
        if len(tasks) > 1:
            raise InputError(f"the runs hold several tasks ({', '.join(tasks)}); choose one with --task.")
        task = tasks[0]
    runs = [r for r in runs if r.task == task]
    if not runs:
        raise InputError(f"no runs of task {task!r} (tasks found: {', '.join(tasks)}).")
    spec = rankings.get(task)
    if spec is None:
        raise InputError(f"task {task!r} has no ranking; expected one of {', '.join(sorted(rankings))}.")
    if metric is not None and metric != spec.primary:
        known = sorted({k for r in runs for k in r.metrics if not spec.item_prefix or not k.startswith(spec.item_prefix)})
        if not any(metric in r.metrics for r in runs):
            raise InputError(f"--metric {metric!r}: no run of task {task!r} has this metric; run-level metrics are {', '.join(known[:40])}.")
        spec = replace(spec, primary=metric, label=metric, lower_is_better=spec.lower_is_better - {metric}, tie_breaks=tuple(k for k in spec.tie_breaks if k != metric))
    return task, runs, spec


def _one_name_warnings(runs: Sequence[RunSummary], superseded: Sequence[SupersededRun]) -> list[str]:
    """A warning for each superseded run named differently from the run that replaced it while
    both log one model name: perhaps two models logged under a default name."""
    by_id = {r.run_id: r for r in runs}
    out = []
    for s in superseded:
        newer = by_id[s.superseded_by]
        if s.run_name and newer.run_name and s.run_name != newer.run_name and s.model not in (s.run_name, newer.run_name):
            out.append(f"runs {s.run_name!r} and {newer.run_name!r} both score a model named {s.model!r}: the later one is ranked and "
                       f"the earlier one shown as superseded. If they are different models, give each its name "
                       f"(evaluator_config model_name, or --predictions NAME=FILE), or rank every run with --all-runs.")
    return out


def _rank_group(
    members: Sequence[RunSummary],
    spec: RankingSpec,
    names: Mapping[str, str],
    truth: str,
    config: str,
    intervals: Mapping[str, Interval],
    pair_intervals: Mapping[tuple[str, str], Interval],
) -> LeaderboardGroup:
    by_name = {names[r.run_id]: r for r in members}
    items: dict[str, dict[str, Score]] = {}
    for n, r in by_name.items():
        for item, s in _items(r.metrics, spec).items():
            items.setdefault(item, {})[n] = s
    if spec.shared_items_only:
        items = {i: s for i, s in items.items() if len(s) == len(by_name)}
    winners = field_winners(items)
    wins = field_wins(winners, list(by_name))

    def key(n: str) -> tuple[float, ...]:
        return ranking_key(spec, by_name[n].metrics, wins[n])

    def cmp(a: str, b: str) -> int:
        c = _cmp_desc(key(a), key(b))
        return c if c else (-1 if a < b else (1 if a > b else 0))

    order = sorted(by_name, key=cmp_to_key(cmp))
    entries = []
    for i, n in enumerate(order, start=1):
        r = by_name[n]
        m = r.metrics
        t = tier(float(m[spec.primary]))
        entries.append(
            LeaderboardEntry(
                run_id=r.run_id,
                model=n,
                rank=i,
                score=float(m[spec.primary]),
                tie_breaks={k: float(m.get(k, 0.0)) for k in spec.tie_breaks},
                item_wins=wins[n],
                items_scored=sum(1 for s in items.values() if n in s),
                item_label=spec.item_label,
                tier=t,
                tier_colour=TIER_COLOURS[t],
                overall={k.split("/", 1)[1]: float(v) for k, v in m.items() if k.startswith("overall/") and k.count("/") == 1 and not k.endswith(("/ci_low", "/ci_high"))},
                micro={k.split("/", 1)[1]: float(v) for k, v in m.items() if k.startswith("micro/") and k.count("/") == 1},
                ci=intervals.get(r.run_id),
            )
        )
    return LeaderboardGroup(truth_digest=truth, config_digest=config, entries=tuple(entries), item_winners=winners,
                            comparisons=_comparisons(entries, pair_intervals))


def _comparisons(entries: Sequence[LeaderboardEntry], pair_intervals: Mapping[tuple[str, str], Interval]) -> tuple[dict[str, Any], ...]:
    """The verdict of each adjacent pair that has an interval (`core.bootstrap.significance`)."""
    from extracteval.core.bootstrap import comparison_entry

    return tuple(comparison_entry(hi.model, lo.model, iv) for hi, lo in zip(entries[:-1], entries[1:])
                 if (iv := pair_intervals.get((hi.run_id, lo.run_id))) is not None)


def with_intervals(lb: Leaderboard, intervals: Mapping[str, Interval], pair_intervals: Mapping[tuple[str, str], Interval]) -> Leaderboard:
    """`lb` with intervals attached: what `build_leaderboard(..., intervals=, pair_intervals=)`
    returns for the same runs (intervals never change the ranking), without ranking again —
    the intervals are computed after ranking, since the pairs compared are adjacent ranks."""
    groups = []
    for g in lb.groups:
        entries = tuple(replace(e, ci=intervals.get(e.run_id)) for e in g.entries)
        groups.append(replace(g, entries=entries, comparisons=_comparisons(entries, pair_intervals)))
    return replace(lb, groups=tuple(groups))


COUNT_COLUMNS = ("tp", "fp", "fn", "tn")


@dataclass(frozen=True, kw_only=True)
class RecordCounts:
    """One run's per-record counts, coded: each row's record id and item as a position in a
    table of distinct names, and its (tp, fp, fn, tn).

    Matching hundreds of runs' rows by their id strings was most of a leaderboard's interval
    time; coded, only the few distinct names are looked up and rows move as integer arrays. The
    MLflow layer builds this straight from Parquet dictionary columns; `from_frame` from a
    DataFrame with columns record_id, field, tp, fp, fn, tn.
    """

    ids: np.ndarray  # distinct record ids (str)
    id_codes: np.ndarray  # (rows,) position in ids
    items: np.ndarray  # distinct items (str)
    item_codes: np.ndarray  # (rows,) position in items
    counts: np.ndarray  # (rows, 4) int64: tp, fp, fn, tn

    @classmethod
    def from_frame(cls, frame: Any) -> RecordCounts:
        import pandas as pd

        # a missing value stays a value of its own (as matching the strings themselves did)
        id_codes, ids = pd.factorize(frame["record_id"].astype(str).to_numpy(dtype=object), use_na_sentinel=False)
        item_codes, items = pd.factorize(frame["field"].astype(str).to_numpy(dtype=object), use_na_sentinel=False)
        counts = np.column_stack([frame[c].to_numpy().astype(np.int64) for c in COUNT_COLUMNS]) if len(frame) else np.zeros((0, 4), dtype=np.int64)
        return cls(ids=np.asarray(ids, dtype=object), id_codes=id_codes, items=np.asarray(items, dtype=object), item_codes=item_codes, counts=counts)

    @property
    def n_records(self) -> int:
        """Distinct record ids that have a row."""
        return int(np.count_nonzero(np.bincount(self.id_codes, minlength=len(self.ids)))) if len(self.id_codes) else 0


def as_record_counts(frame: Any) -> RecordCounts:
    return frame if isinstance(frame, RecordCounts) else RecordCounts.from_frame(frame)


def paired_record_matrix(frames: Mapping[str, Any], items: Sequence[str] | None = None) -> tuple[list[str], dict[str, np.ndarray]]:
    """Per-run per-record counts (`RecordCounts`, or DataFrames with record_id, field, tp, fp, fn,
    tn) → arrays (records, items, 4) on the record ids and items every run shares (sorted), for
    a paired bootstrap.

    Vectorised per run: a run's distinct ids and items are mapped to positions in the first
    run's with one `get_indexer` each (shared ones are a subset of those; a run whose name
    tables equal the previous run's reuses its mapping), rows follow by integer indexing, and
    counts are put in place (summed with `bincount` when a (record, item) pair repeats). No
    Python-level set of ids per run."""
    import pandas as pd

    if not frames:
        return [], {}
    coded = {k: as_record_counts(f) for k, f in frames.items()}
    first = coded[next(iter(coded))]
    base_r = pd.Index(first.ids[np.unique(first.id_codes)])
    base_i = pd.Index(first.items[np.unique(first.item_codes)])
    keep_r = np.ones(len(base_r), dtype=bool)
    keep_i = np.ones(len(base_i), dtype=bool)
    positions = {}
    prev: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    for k, c in coded.items():
        if prev is not None and _same_names(prev[0], c.ids) and _same_names(prev[1], c.items):
            map_r, map_i = prev[2], prev[3]
        else:
            map_r, map_i = base_r.get_indexer(c.ids), base_i.get_indexer(c.items)
            prev = (c.ids, c.items, map_r, map_i)
        r = map_r[c.id_codes]
        i = map_i[c.item_codes]
        seen_r = np.zeros(len(base_r), dtype=bool)
        seen_r[r[r >= 0]] = True
        seen_i = np.zeros(len(base_i), dtype=bool)
        seen_i[i[i >= 0]] = True
        keep_r &= seen_r
        keep_i &= seen_i
        positions[k] = (r, i)
    rec = sorted(base_r[keep_r])
    shared_items = set(base_i[keep_i])
    its_sorted = sorted(shared_items) if items is None else [x for x in items if x in shared_items]
    n_r, n_i = len(rec), len(its_sorted)
    # first-run position → position in the output (-1: not shared / not asked for)
    new_r = np.full(len(base_r) + 1, -1, dtype=np.int64)
    new_r[base_r.get_indexer(rec)] = np.arange(n_r)
    new_i = np.full(len(base_i) + 1, -1, dtype=np.int64)
    new_i[base_i.get_indexer(its_sorted)] = np.arange(n_i)
    out = {}
    for run_id, c in coded.items():
        r, i = positions[run_id]
        rr, ii = new_r[r], new_i[i]  # -1 stays -1 (index -1 is the extra slot)
        keep = (rr >= 0) & (ii >= 0)
        flat = rr[keep] * n_i + ii[keep]
        arr = np.zeros((n_r * n_i, 4), dtype=np.int64)
        if n_r * n_i and len(flat):
            vals = c.counts[keep]
            if np.bincount(flat, minlength=n_r * n_i).max() <= 1:
                arr[flat] = vals  # each (record, item) once: the usual case
            else:
                for k in range(4):
                    arr[:, k] = np.bincount(flat, weights=vals[:, k], minlength=n_r * n_i).astype(np.int64)
        out[run_id] = arr.reshape(n_r, n_i, 4)
    return rec, out


def _same_names(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (len(a) == len(b) and bool(np.array_equal(a, b)))
