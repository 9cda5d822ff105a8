"""The `json` task's count of a set of records, its mergeable ledger, and the one reduction to a result: RQS
summaries, the ranking, per-field accuracy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from extracteval.tasks.json.metrics import SCORES, count_metrics
import pandas as pd

from extracteval.tasks.json.contract import RANKING
from extracteval.core.ledger import Ledger, by_key, counted_first, intersection, keep, merge, union, whole
from extracteval.core.ranking import TIER_COLOURS, rank_by_metrics, tier

from extracteval.tasks.json.config import BUCKETS, FieldAccuracy, JsonConfig, JsonPredictions, JsonResult, ModelJsonResult, _Cells, _STRATEGIES, _add_counts


def rqs_summary(x: np.ndarray, mean: float) -> dict[str, float]:
    """Mean (the task's map of sums to means gives it), median, min and max of per-record RQS (zeros when no record
    is scored)."""
    if len(x) == 0:
        return {"mean": mean, "median": 0.0, "min": 0.0, "max": 0.0}
    return {"mean": mean, "median": float(np.median(x)), "min": float(np.min(x)), "max": float(np.max(x))}


def _best_attainable(cfg: JsonConfig) -> float:
    """a + c + s (hallucination only subtracts), clamped: 0.85 with the default weights."""
    w = cfg.weights
    lo, hi = cfg.clamp
    return min(hi, max(lo, w.accuracy + w.completeness + w.safety))


def rank_models(means: Mapping[str, Mapping[str, float]], cfg: JsonConfig) -> tuple[list[tuple[Any, str]], float]:
    """The models ranked by the task's declaration (mean RQS, accuracy, completeness, lower
    hallucination, name), each with its tier, and the best attainable RQS the tier is taken on.

    The best attainable RQS is a + c + s (hallucination only subtracts), clamped: 0.85 with the
    default weights, so the tier (excellent ≥ 90%, good ≥ 70%) is the share of that maximum."""
    ranked = rank_by_metrics(RANKING, {m: {"rqs/mean": v["rqs"], "json/accuracy": v["accuracy"], "json/completeness": v["completeness"],
                                          "json/hallucination": v["hallucination"]} for m, v in means.items()})
    best = _best_attainable(cfg)
    return [(r, tier(means[r.model]["rqs"] / best if best > 0 else means[r.model]["rqs"])) for r in ranked], best


@dataclass(frozen=True, kw_only=True)
class _ModelCount:
    """One model's scores of a set of records, per record and per cell (internal)."""

    meta: JsonPredictions
    per_record: Mapping[str, np.ndarray]
    cells: _Cells
    fields: Mapping[str, FieldAccuracy]
    given: int
    flags: Mapping[str, tuple[str, ...]]
    keep: np.ndarray  # records in the model's aggregates (not pending or failed)
    failures: int


_PER_RECORD = ("rqs", "completeness", "hallucination", "accuracy", "safety")


@dataclass(frozen=True, kw_only=True)
class JsonCount:
    """`count_json` of a set of records: every model's per-record and per-cell scores. `ledger()`
    is its mergeable summary, `rows()` its per-record scores, `result()` the task's result of
    these records alone (the ledger's reduction, with the per-record listing attached)."""

    order: tuple[str, ...]  # record ids, sorted
    paths: tuple[str, ...]  # the cells' path names, sorted
    fields: tuple[str, ...]
    models: Mapping[str, _ModelCount]  # by model name, sorted
    config: Mapping[str, Any]
    unused: tuple[str, ...]

    def ledger(self, *, records: Mapping[str, tuple[dict[str, Any], ...]] | None = None, records_limit: int | None = None) -> JsonLedger:
        models = {}
        for name, m in self.models.items():
            pr, keep, flags = m.per_record, m.keep, m.flags
            missing = [r for r, f in flags.items() if "missing_prediction" in f]
            invalid = [(r, f[0].split(":", 1)[1]) for r, f in flags.items() if f[0].startswith("invalid_prediction")]
            excluded = [self.order[i] for i in np.flatnonzero(~keep)]
            models[name] = _ModelLedger(
                source=m.meta.source,
                fields=dict(m.fields),
                buckets={b: int(pr[b][keep].sum()) for b in BUCKETS},
                scored=int(pr["scored"][keep].sum()),
                matched=int(pr["matched"][keep].sum()),
                similarity_failures=m.failures,
                safety_given=m.given,
                missing=(len(missing), tuple(missing[:_KEEP_IDS])),
                invalid=(len(invalid), tuple(invalid[:_KEEP_IDS])),
                excluded=(len(excluded), tuple(excluded[:_KEEP_IDS])),
            )
        return JsonLedger(n_records=len(self.order), fields=frozenset(self.fields), models=models, unused_strategies=frozenset(self.unused),
                          config=self.config, records=records, records_limit=records_limit)

    def rows(self) -> np.ndarray:
        """Per record, per model (by name) its five scores and 1.0 / 0.0 for kept / left out."""
        rows = np.empty((len(self.order), 6 * len(self.models)), dtype=np.float64)
        for j, m in enumerate(self.models.values()):
            for k, key in enumerate(_PER_RECORD):
                rows[:, 6 * j + k] = m.per_record[key]
            rows[:, 6 * j + 5] = m.keep
        return rows

    def result(self, cfg: JsonConfig, *, ledger: JsonLedger | None = None, rows: np.ndarray | None = None) -> JsonResult:
        """`ledger` and `rows`: this count's own, when the caller has made them already."""
        res = json_result(self.ledger() if ledger is None else ledger, cfg, self.rows() if rows is None else rows)
        models = {
            name: replace(mr, _record_ids=self.order, _paths=self.paths, _per_record=self.models[name].per_record,
                          _cells=self.models[name].cells, _flags=self.models[name].flags)
            for name, mr in res.models.items()
        }
        return replace(res, models=models)


_KEEP_IDS = 5  # ids a warning names


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    source: str = merge(keep)
    fields: Mapping[str, FieldAccuracy] = merge(by_key())
    buckets: Mapping[str, int] = merge(_add_counts)
    scored: int
    matched: int
    similarity_failures: int
    safety_given: int
    missing: tuple[int, tuple[str, ...]] = merge(counted_first(_KEEP_IDS))  # count, first ids
    invalid: tuple[int, tuple[tuple[str, str], ...]] = merge(counted_first(_KEEP_IDS))  # count, first (id, type)
    excluded: tuple[int, tuple[str, ...]] = merge(counted_first(_KEEP_IDS))


def _kept_records(a: JsonLedger, b: JsonLedger) -> dict[str, tuple[dict[str, Any], ...]] | None:
    """The per-record listing of both parts while both keep one and it stays within the limit."""
    if a.records is None or b.records is None:
        return None
    n = a.n_records + b.n_records
    if a.records_limit is not None and n * max(1, len(a.models)) > a.records_limit:
        return None
    return {m: a.records[m] + b.records[m] for m in a.records}


@dataclass(frozen=True)
class JsonLedger(Ledger):
    """Counts of some records, mergeable by `+` in record order: per model and field the bucket /
    scored / matched / strategy counts, per model the bucket totals (over the records in its
    aggregates), and the ids named by the warnings (the first five of each kind). `records`
    holds the per-record listing of the document while it is wanted and small (None once it is
    not). The per-record scores the means are taken over travel beside it (`JsonCount.rows`)."""

    n_records: int
    fields: frozenset[str] = merge(union)
    models: Mapping[str, _ModelLedger] = merge(by_key())
    unused_strategies: frozenset[str] = merge(intersection)
    config: Mapping[str, Any] = merge(keep)
    records: Mapping[str, tuple[dict[str, Any], ...]] | None = merge(whole(lambda a, b, _: _kept_records(a, b)), default=None)
    records_limit: int | None = merge(keep, default=None)  # None: keep every record (--records all)


def _sorted_fields(names: frozenset[str], flatten: bool) -> tuple[str, ...]:
    """Field names in the order of the per-field table: paths by numpy string order; flattened
    patterns by pandas' sort (as `count_json` orders them)."""
    if not names:
        return ()
    arr = np.asarray(sorted(names), dtype=object)
    if flatten:
        return tuple(str(x) for x in pd.factorize(arr, sort=True)[1])
    return tuple(str(x) for x in arr[np.argsort(arr.astype(str), kind="stable")])


# per-record score → the metric that is its mean (`metrics.SCORES`, the map from sums to means)
_MEAN_OF = {"rqs": "rqs/mean", "completeness": "json/completeness", "hallucination": "json/hallucination", "accuracy": "json/accuracy",
            "safety": "json/safety"}


def _means(per: Mapping[str, np.ndarray], keep: np.ndarray) -> dict[str, float]:
    """A model's means of its per-record scores over the records it counts, by the task's one map."""
    sums = {SCORES[_MEAN_OF[k]]: per[k][keep].sum() for k in _PER_RECORD}
    got = count_metrics({**sums, "records": int(keep.sum())})
    return {k: float(got[_MEAN_OF[k]]) for k in _PER_RECORD}


def _ledger_warnings(ledger: JsonLedger, names: list[str]) -> list[str]:
    """What a ledger warns of, model by model: records without a prediction, predictions that are not
    objects, records left out by their status; strategies of no field; similarity failures."""
    warnings: list[str] = []

    def shown(ids: tuple[Any, ...], count: int, fmt: Any = repr) -> str:
        return ", ".join(fmt(x) for x in ids) + (" …" if count > _KEEP_IDS else "")

    for name in names:
        m = ledger.models[name]
        if m.missing[0]:
            warnings.append(
                f"model {name!r}: {m.missing[0]} ground-truth record(s) have no prediction and count as empty predictions: "
                + shown(m.missing[1], m.missing[0])
            )
        if m.invalid[0]:
            warnings.append(
                f"model {name!r}: {m.invalid[0]} prediction(s) are not JSON objects and count as empty predictions: "
                + shown(m.invalid[1], m.invalid[0], lambda x: f"{x[0]!r} ({x[1]})")
            )
        if m.excluded[0]:
            warnings.append(
                f"model {name!r}: {m.excluded[0]} record(s) are pending or failed (status) and are left out of its aggregates: "
                + shown(m.excluded[1], m.excluded[0])
            )
    if ledger.unused_strategies:
        warnings.append(f"strategies given for fields that appear in no record: {sorted(ledger.unused_strategies)}")
    for name in names:
        f = ledger.models[name].similarity_failures
        if f:
            warnings.append(
                f"model {name!r}: the similarity backend failed on {f} value(s); they count as not matched "
                "(see similarity_failures per field)."
            )

    return warnings


def json_result(ledger: JsonLedger, cfg: JsonConfig, rows: np.ndarray) -> JsonResult:
    """Ratios, ranking and warnings of a ledger: the means, median, min and max of the per-record
    scores in `rows` (`JsonCount.rows`, every record of the ledger in id order), summed counts,
    the per-field table. The in-memory score and every engine end here."""
    names = sorted(ledger.models)
    n = ledger.n_records
    if rows.shape[0] != n:
        raise RuntimeError(f"expected {n} per-record rows, read {rows.shape[0]}")
    warnings = _ledger_warnings(ledger, names)
    field_names = _sorted_fields(ledger.fields, cfg.flatten)
    order = {s.value: i for i, s in enumerate(_STRATEGIES)}
    per: dict[str, dict[str, np.ndarray]] = {}
    keep: dict[str, np.ndarray] = {}
    fields: dict[str, dict[str, FieldAccuracy]] = {}
    for j, name in enumerate(names):
        per[name] = {k: np.ascontiguousarray(rows[:, 6 * j + i]) for i, k in enumerate(_PER_RECORD)}
        keep[name] = rows[:, 6 * j + 5] == 1.0
        mf = ledger.models[name].fields
        fields[name] = {f: replace(mf[f], strategies=dict(sorted(mf[f].strategies.items(), key=lambda kv: order[kv[0]])))
                        for f in field_names if f in mf}

    means = {m: _means(per[m], keep[m]) for m in names}
    ranked, _ = rank_models(means, cfg)
    models = {}
    for r, tier_name in ranked:
        ml = ledger.models[r.model]
        models[r.model] = ModelJsonResult(
            name=r.model,
            rank=r.rank,
            tier=tier_name,
            tier_colour=TIER_COLOURS[tier_name],
            rqs=rqs_summary(per[r.model]["rqs"][keep[r.model]], means[r.model]["rqs"]),
            completeness=means[r.model]["completeness"],
            hallucination=means[r.model]["hallucination"],
            accuracy=means[r.model]["accuracy"],
            safety=means[r.model]["safety"],
            buckets=dict(ml.buckets),
            scored=ml.scored,
            matched=ml.matched,
            ignored=sum(f.ignored for f in fields[r.model].values()),
            similarity_failures=ml.similarity_failures,
            missing_records=ml.missing[0],
            invalid_predictions=ml.invalid[0],
            excluded_records=ml.excluded[0],
            safety_scores_given=ml.safety_given,
            fields=fields[r.model],
            source=ml.source,
        )
    return JsonResult(
        task="json",
        models=models,
        ranking=tuple(r.model for r, _ in ranked),
        n_records=n,
        fields=field_names,
        warnings=tuple(warnings),
        config=dict(ledger.config),
        unused_strategies=tuple(sorted(ledger.unused_strategies)),
    )
