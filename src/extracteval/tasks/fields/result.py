"""The `fields` task's result: a merged ledger reduced to ratios once, then winners, ranking, intervals and the
checks every result passes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from extracteval.tasks.fields.contract import RANKING
from extracteval.core.bootstrap import Interval, PairComparison, bootstrap_macro_f1_patterns
from extracteval.core.counts import Counts, ratios
from extracteval.core.ranking import field_winners, field_wins, rank_by_metrics
from extracteval.tasks.fields.config import Check, FieldMetrics, FieldsConfig, FieldsResult, ModelResult, RecordLedger
from extracteval.tasks.fields.metrics import fields_metrics
from extracteval.tasks.fields.ledger import FieldsLedger, FieldsPlan, _LEDGER_COLUMNS


def _some(names: list[Any], limit: int = 20) -> str:
    """A list of names for a warning: all of a short one, else the first `limit` and how many more."""
    if len(names) <= limit:
        return repr(names)
    return f"{names[:limit]!r} and {len(names) - limit:,} more"


def _input_warnings(ledger: FieldsLedger, plan: FieldsPlan) -> list[str]:
    """What the inputs warn of: strategies of fields the truth lacks; per model, records without a prediction,
    columns the truth lacks (ignored), fields the predictions lack (empty predictions)."""
    cfg, scored, all_fields, model_names = plan.config, list(plan.scored), list(plan.fields), list(ledger.models)
    warnings: list[str] = []
    unknown_strat = sorted(set(cfg.strategies) - set(all_fields) - set(cfg.metadata))
    if unknown_strat:
        warnings.append(f"strategies given for fields that are not in the ground truth: {unknown_strat}")
    for m in model_names:
        if ledger.missing[m]:
            shown = ", ".join(repr(x) for x in ledger.missing_ids[m]) + (" …" if ledger.missing[m] > 5 else "")
            warnings.append(
                f"model {m!r}: {ledger.missing[m]} ground-truth record(s) have no prediction and count as empty predictions: {shown}"
            )
        columns = ledger.columns[m]
        known, present = set(all_fields) | set(cfg.metadata), set(columns)  # sets: a file of 100,000 columns is not 10^10 comparisons
        unknown_cols = [c for c in columns if str(c) not in known]
        if unknown_cols and not plan.fields_given:
            warnings.append(f"model {m!r}: columns not in the ground truth are ignored: {_some(unknown_cols)}")
        absent_cols = [f for f in scored if f not in present]
        if absent_cols:
            warnings.append(f"model {m!r}: fields missing from the predictions count as empty predictions: {_some(absent_cols)}")
    return warnings


def _field_metrics(ledger: FieldsLedger, mi: int, model: str, scored: Sequence[str], cfg: FieldsConfig) -> dict[str, FieldMetrics]:
    """One model's metrics of each field: its counts, ratios, exact-match rate, flags and examples."""
    zd = cfg.zero_division
    sums = ledger.counts[mi]  # (fields, 7)
    r = ratios(sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3], zero_division=zd)
    fm: dict[str, FieldMetrics] = {}
    for j, fname in enumerate(scored):
        c = Counts(**{k: int(sums[j, i]) for i, k in enumerate(_LEDGER_COLUMNS)})
        flags: list[str] = []
        if c.no_valid_classifications:
            flags.append("no_valid_classifications")
            p_, r_, f_, a_, e_ = 0.0, 0.0, 0.0, 0.0, 0.0
        else:
            p_, r_, f_, a_ = (float(r[k][j]) for k in ("precision", "recall", "f1", "accuracy"))
            e_ = c.exact / c.cells if c.cells else zd
            if c.cells < cfg.min_records:
                flags.append("small_sample")
        if c.tp == c.fp == c.fn == 0 and c.tn > 0:
            flags.append("all_true_negative")
        ex = ledger.examples.get((model, fname), {})
        fm[fname] = FieldMetrics(
            counts=c, precision=p_, recall=r_, f1=f_, accuracy=a_, exact_match_rate=e_,
            strategy=cfg.strategy_for(fname).value, flags=tuple(flags),
            examples={kind: [dict(e) for e in v] for kind, v in ex.items()},
        )
    return fm


def _intervals(ledger: FieldsLedger, plan: FieldsPlan, ranking: Sequence[str], *, records: RecordLedger | None,
               record_rows: Callable[[], np.ndarray | Iterable[np.ndarray]] | None) -> tuple[dict[str, Interval], tuple[PairComparison, ...]]:
    """Each model's bootstrap interval of its overall F1 and each adjacent pair's paired interval (none when the
    bootstrap is off or there are no records)."""
    cfg, scored, model_names, n, zd = plan.config, list(plan.scored), list(ledger.models), ledger.n_records, plan.config.zero_division
    intervals: dict[str, Interval] = {}
    comparisons: tuple[PairComparison, ...] = ()
    if cfg.bootstrap > 0 and n > 0:
        pairs = list(zip(ranking[:-1], ranking[1:]))
        if record_rows is None and records is not None:
            record_rows = records.bootstrap_row_blocks
        intervals, diffs = bootstrap_macro_f1_patterns(
            model_names,
            (len(scored), 4),
            ledger.patterns,
            ledger.freq,
            pairs,
            records=record_rows,
            n_records=n,
            resamples=cfg.bootstrap,
            confidence=cfg.confidence,
            seed=cfg.seed,
            zero_division=zd,
        )
        comparisons = tuple(PairComparison(higher=a, lower=b, difference=diffs[(a, b)]) for a, b in pairs)
    return intervals, comparisons


def _model_ratios(ledger: FieldsLedger, plan: FieldsPlan) -> tuple[
        dict[str, dict[str, FieldMetrics]], dict[str, Counts], dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Per model: its field metrics, its summed counts, and its overall (macro) and micro ratios."""
    cfg, scored, zd = plan.config, list(plan.scored), plan.config.zero_division
    model_fields: dict[str, dict[str, FieldMetrics]] = {}
    totals: dict[str, Counts] = {}
    overall: dict[str, dict[str, float]] = {}
    micro: dict[str, dict[str, float]] = {}
    for mi, m in enumerate(ledger.models):
        model_fields[m] = _field_metrics(ledger, mi, m, scored, cfg)
        totals[m] = sum((f.counts for f in model_fields[m].values()), Counts())
        got = fields_metrics(ledger.counts[mi][:, :4], zero_division=zd)
        overall[m] = {k: float(got[f"overall/{k}"]) for k in ("precision", "recall", "f1", "accuracy")}
        micro[m] = {k: float(got[f"micro/{k}"]) for k in ("precision", "recall", "f1", "accuracy")}
    return model_fields, totals, overall, micro


def _model_results(ledger: FieldsLedger, plan: FieldsPlan, ranked: Sequence[Any], winners: Mapping[str, Any], wins: Mapping[str, Any],
                   ratios_: tuple[Any, Any, Any, Any], intervals: Mapping[str, Interval]) -> dict[str, ModelResult]:
    """Each model's result, in ranking order: its metrics, rank, tier, field wins, missing records and interval."""
    model_fields, totals, overall, micro = ratios_
    sources = {m: plan.sources.get(m, "") for m in ledger.models}
    missing_counts = dict(ledger.missing)
    models: dict[str, ModelResult] = {}
    for r in ranked:
        models[r.model] = ModelResult(
            name=r.model,
            fields=model_fields[r.model],
            overall=overall[r.model],
            micro=micro[r.model],
            totals=totals[r.model],
            rank=r.rank,
            tier=r.tier,
            tier_colour=r.tier_colour,
            field_wins=wins[r.model],
            fields_won=tuple(f for f, w in winners.items() if w.win_share > 0 and r.model in w.winners),
            fields_scored=sum(1 for f in model_fields[r.model].values() if f.valid),
            missing_records=missing_counts[r.model],
            source=sources[r.model],
            overall_f1_ci=intervals.get(r.model),
        )
    return models


def _result_warnings(models: Mapping[str, ModelResult], cfg: FieldsConfig, n_models: int) -> list[str]:
    """What the results warn of: fields resting on few valid records (per model); a single model."""
    warnings: list[str] = []
    for m, res in models.items():
        small = [f for f, v in res.fields.items() if "small_sample" in v.flags]
        if small:
            warnings.append(
                f"model {m!r}: fewer than {cfg.min_records} valid records support the metrics of {len(small)} field(s) "
                f"({', '.join(small[:8])}{' …' if len(small) > 8 else ''}); intervals will be wide."
            )
    if n_models == 1:
        warnings.append("only one model: every field is a universal tie, so no field wins are awarded.")
    return warnings


def fields_result(
    ledger: FieldsLedger,
    plan: FieldsPlan,
    *,
    records: RecordLedger | None = None,
    record_rows: Callable[[], np.ndarray | Iterable[np.ndarray]] | None = None,
) -> FieldsResult:
    """Ratios, winners, ranking, intervals and checks, computed once from a (merged) ledger.

    Args:
        records: the per-record counts, attached to the result (in-memory engine only).
        record_rows: returns `RecordLedger.bootstrap_rows()` of all records in id order, as one
            matrix or as consecutive blocks (read back one chunk at a time); the bootstrap asks
            for it only when distinct per-record patterns are many (more than a quarter of the
            records, or too many to keep). Defaults to `records`, block by block.
    """
    cfg = plan.config
    scored = list(plan.scored)
    model_names = list(ledger.models)
    n = ledger.n_records
    warnings = _input_warnings(ledger, plan)

    ratios_ = _model_ratios(ledger, plan)
    model_fields, _, overall, _ = ratios_
    winners = field_winners({f: {m: model_fields[m][f].score() for m in model_names} for f in scored})
    wins = field_wins(winners, model_names)
    ranked = rank_by_metrics(RANKING, {m: {f"overall/{k}": overall[m][k] for k in ("f1", "precision", "recall")} for m in model_names}, wins)
    ranking = tuple(r.model for r in ranked)

    intervals, comparisons = _intervals(ledger, plan, ranking, records=records, record_rows=record_rows)
    models = _model_results(ledger, plan, ranked, winners, wins, ratios_, intervals)
    checks = tuple(_checks(models, scored, n, cfg))
    warnings += _result_warnings(models, cfg, len(model_names))

    cfg_dict = cfg.to_dict()
    cfg_dict["strategies_used"] = {f: cfg.strategy_for(f).value for f in plan.fields}
    return FieldsResult(
        task="fields",
        models=models,
        ranking=ranking,
        field_winners=winners,
        comparisons=comparisons,
        checks=checks,
        warnings=tuple(warnings),
        fields=tuple(scored),
        n_records=n,
        config=cfg_dict,
        records=records,
        field_patterns=(ledger.field_patterns, ledger.field_freq) if cfg.bootstrap > 0 and n else None,
    )


def _checks(models: Mapping[str, ModelResult], fields: Sequence[str], n: int, cfg: FieldsConfig) -> list[Check]:
    """Mathematical-consistency and data-quality checks."""
    tol = 1e-9
    f1_bad, impossible, not_present_bad, macro_bad, range_bad = [], [], [], [], []
    for m, res in models.items():
        valid = [(f, v) for f, v in res.fields.items() if v.valid]
        for f, v in valid:
            c = v.counts
            if v.precision + v.recall > 0 and abs(v.f1 - 2 * v.precision * v.recall / (v.precision + v.recall)) > tol:
                f1_bad.append(f"{m}/{f}")
            if (v.precision >= 1 - tol and c.fp != 0) or (v.recall >= 1 - tol and c.fn != 0):
                impossible.append(f"{m}/{f}")
            if c.tp == c.fp == c.fn == 0 and c.tn > 0 and not (v.precision == v.recall == v.f1 == 1.0):
                not_present_bad.append(f"{m}/{f}")
        if valid:
            for k in ("precision", "recall", "f1", "accuracy"):
                vals = [getattr(v, k) for _, v in valid]
                if abs(res.overall[k] - float(np.mean(vals))) > tol:
                    macro_bad.append(f"{m}/{k}")
                if res.overall[k] > max(vals) + tol or res.overall[k] < min(vals) - tol:
                    range_bad.append(f"{m}/{k}")
    no_valid = [f"{m}/{f}" for m, res in models.items() for f, v in res.fields.items() if not v.valid]
    missing = {m: res.missing_records for m, res in models.items() if res.missing_records}
    small = [f"{m}/{f}" for m, res in models.items() for f, v in res.fields.items() if v.valid and v.counts.cells < cfg.min_records]

    def listing(items: list[str]) -> str:
        return ", ".join(items[:10]) + (f" … ({len(items)} in all)" if len(items) > 10 else "")

    return [
        Check(name="f1_formula", kind="consistency", passed=not f1_bad,
              detail="F1 = 2PR/(P+R) holds for every field" if not f1_bad else f"violated for {listing(f1_bad)}"),
        Check(name="impossible_metrics", kind="consistency", passed=not impossible,
              detail="precision 100% ⇒ FP = 0 and recall 100% ⇒ FN = 0" if not impossible else f"violated for {listing(impossible)}"),
        Check(name="perfect_not_present", kind="consistency", passed=not not_present_bad,
              detail="all-TN fields score 100%" if not not_present_bad else f"violated for {listing(not_present_bad)}"),
        Check(name="macro_average", kind="consistency", passed=not macro_bad,
              detail="overall metrics are the mean over fields with valid classifications" if not macro_bad else f"violated for {listing(macro_bad)}"),
        Check(name="overall_within_field_range", kind="consistency", passed=not range_bad,
              detail="overall metrics lie between the field minimum and maximum" if not range_bad else f"violated for {listing(range_bad)}"),
        Check(name="equal_length", kind="data_quality", passed=not missing,
              detail=f"every model has a prediction for all {n} records" if not missing else
              "records without a prediction: " + ", ".join(f"{m}: {k}" for m, k in sorted(missing.items()))),
        Check(name="valid_classifications", kind="data_quality", passed=not no_valid,
              detail="every field has valid classifications" if not no_valid else f"no valid classifications (all pending/error): {listing(no_valid)}"),
        Check(name="sample_size", kind="data_quality", passed=not small,
              detail=f"every field rests on ≥ {cfg.min_records} valid records" if not small else f"fewer than {cfg.min_records} valid records: {listing(small)}"),
    ]
