"""The `structured` task's count of a set of records (`count_structured`: the ledger, the per-record results) and
the result of a merged ledger: rates and field metrics, then the ranking."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

import numpy as np

from extracteval.core.counts import ratios
from extracteval.core.decision_track import _EXAMPLES, ExtendedScores, canonical_text, extended_scores, paused_gc
from extracteval.io.id_order import natural_ids, natural_sorted
from extracteval.tasks.structured.config import (StructuredConfig, StructuredCounts, StructuredModelResult, StructuredRecord, StructuredRecords,
                                                 StructuredResult, _COUNT_FIELDS)
from extracteval.tasks.structured.contract import RANKING
from extracteval.tasks.structured.counting import _missing_record, _Scorer
from extracteval.tasks.structured.ledger import StructuredLedger, _ModelLedger
from extracteval.tasks.structured.model_counts import _preview, _References, _RunningRates, _score_model_exact


def structured_result(ledger: StructuredLedger, config: StructuredConfig, *, records: Mapping[str, Sequence[StructuredRecord]] | None = None,
                      extended: Mapping[str, dict[str, ExtendedScores]] | None = None) -> StructuredResult:
    """Ratios, per-path rows, winners and ranking of a ledger: where the in-memory score and the
    chunk engine end."""
    zd = config.zero_division
    results = {
        m: StructuredModelResult(
            model=m, counts=ml.counts, metrics=ml.counts.metrics(zero_division=zd), fields=field_rows(ml.fields, zd),
            missing_ids=natural_ids(ml.missing) if ml.merged else ml.missing, extra_ids=natural_ids(ml.extra), invalid_examples=ml.invalid_examples,
            extended=dict((extended or {}).get(m, {})),
        )
        for m, ml in ledger.models.items()
    }
    return ranked_result(results, config=config, n_records=ledger.n_records, records=records or {})


def field_rows(per_field: Mapping[str, Sequence[int]], zero_division: float) -> dict[str, dict[str, Any]]:
    """Per flattened path, its (tp, fp, fn) and their precision, recall and F1 (one vectorised
    call over every path: per-path calls made 100k paths take ~10 s)."""
    names = sorted(per_field)
    tps, fps, fns = (np.array([per_field[g][k] for g in names], dtype=np.int64) for k in range(3))
    rr = ratios(tps, fps, fns, np.zeros_like(tps), zero_division=zero_division)
    return {g: {"tp": int(tps[i]), "fp": int(fps[i]), "fn": int(fns[i]), "precision": float(rr["precision"][i]), "recall": float(rr["recall"][i]),
                "f1": float(rr["f1"][i])} for i, g in enumerate(names)}


def ranked_result(results: Mapping[str, StructuredModelResult], *, config: StructuredConfig, n_records: int,
                  records: Mapping[str, Sequence[StructuredRecord]]) -> StructuredResult:
    """The result of every model's counts: the winner of each path (F1 over the paths every
    model has), the ranking (the task's declaration, then path wins) and each model's place."""
    from extracteval.core.ranking import Score, field_winners, field_wins, rank_by_metrics

    models = sorted(results)
    field_scores: dict[str, dict[str, Score]] = {}
    for m in models:
        for g, v in results[m].fields.items():
            field_scores.setdefault(g, {})[m] = Score(f1=v["f1"], precision=v["precision"], recall=v["recall"])
    winners = field_winners({g: s for g, s in field_scores.items() if len(s) == len(models)})
    wins = field_wins(winners, models)
    overall = {m: {f"structured/{k}": float(v) for k, v in results[m].metrics.items()} for m in models}
    ranked = rank_by_metrics(RANKING, overall, wins)
    placed = {r.model: replace(results[r.model], rank=r.rank, tier=r.tier, field_wins=r.field_wins) for r in ranked}
    return StructuredResult(
        task="structured",
        config=config,
        n_records=n_records,
        ranking=tuple(r.model for r in ranked),
        models={m: placed[m] for m in models},
        records=dict(records),
        field_winners={g: {"kind": w.kind, "winners": list(w.winners)} for g, w in sorted(winners.items())},
    )


def _score_model_general(ids: Sequence[str], truth: Mapping[str, Any], preds: Mapping[str, Any], ref_keys: Mapping[str, Any], scorer: Any,
                         per_field: dict[str, list[int]], progress: Callable[[int, int, str, dict[str, float]], None] | None,
                         model: str) -> list[StructuredRecord]:
    """Every record of one model scored by the options' general scorer (similar leaves, aligned
    lists…), a record without output as missing; `progress` told the running rates."""
    recs = []
    running = [0] * 8
    for k, i in enumerate(ids, start=1):
        if i not in preds:
            rec = _missing_record(i, ref_keys[i], "no output for this id", per_field)
        else:
            rec = scorer.record(i, truth[i], preds[i], ref_keys[i], per_field)
        recs.append(rec)
        if progress is not None:
            running[0] += 1
            running[1] += rec.valid
            running[4] += rec.exact
            progress(k, len(ids), model, _RunningRates(running))
    return recs


def _summed(recs: Sequence[StructuredRecord]) -> StructuredCounts:
    return StructuredCounts(
        records=len(recs),
        valid=sum(r.valid for r in recs),
        strict_valid=sum(r.valid and not r.extracted for r in recs),
        extracted=sum(r.extracted for r in recs),
        exact=sum(r.exact for r in recs),
        tp=sum(r.tp for r in recs),
        fp=sum(r.fp for r in recs),
        fn=sum(r.fn for r in recs),
    )


def _texts(recs: Sequence[StructuredRecord], truth: Mapping[str, Any], preds: Mapping[str, Any], scorer: Any) -> tuple[list[str], list[str]]:
    """Each record's output and reference as the extended (similarity) scores compare them: canonical JSON text, or
    the raw output when it holds no JSON."""
    pred_texts, ref_texts = [], []
    for r in recs:
        raw = preds.get(r.id)
        parsed = scorer.parse(raw)
        pred_texts.append(canonical_text(parsed.value) if parsed.ok else ("" if raw is None else str(raw)))
        ref_texts.append(canonical_text(truth[r.id]))
    return pred_texts, ref_texts


def count_structured(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    config: StructuredConfig,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> StructuredCount:
    """Every record of every model scored (the arguments of `score_structured`): its ledger, the
    per-record results and the extended metrics. The in-memory score reduces the count of all
    records; the chunk engine adds up the ledgers of its chunks and reduces them the same way
    (`structured_result`)."""
    ids = natural_sorted(truth)
    scorer = _Scorer(config)
    # the default options (canonical leaves, positional lists) take the loop built for them
    fast = config.value_match == "exact" and config.list_matching == "positional"
    with paused_gc():
        if fast:
            fast_refs = _References(truth, ids)
        else:
            ref_keys = {i: scorer.reference_keys(truth[i]) for i in ids}
    models = sorted(predictions)
    ledgers: dict[str, _ModelLedger] = {}
    extended_of: dict[str, dict[str, ExtendedScores]] = {}
    records: dict[str, Sequence[StructuredRecord]] = {}
    for m in models:
        preds = predictions[m]
        recs = []
        running = [0] * 8  # StructuredCounts fields, summed as plain ints in the hot loop
        n_missing = -1  # not counted
        per_field: dict[str, list[int]] = {}
        with paused_gc():
            if fast:
                recs, running, n_missing = _score_model_exact(ids, preds, fast_refs, per_field, progress, m)
            else:
                recs = _score_model_general(ids, truth, preds, ref_keys, scorer, per_field, progress, m)
        total = StructuredCounts(**dict(zip(_COUNT_FIELDS, running))) if fast else _summed(recs)
        extended = {metric: extended_scores(backend, *_texts(recs, truth, preds, scorer), threshold=config.pass_threshold)[0]
                    for metric, backend in sorted((similarity or {}).items())}
        bad = recs.invalid() if isinstance(recs, StructuredRecords) else ((r.id, r.error) for r in recs if not r.valid)
        invalid = tuple(islice(({"id": i, "error": e, "output": _preview(preds.get(i))} for i, e in bad), _EXAMPLES))
        ledgers[m] = _ModelLedger(
            counts=total,
            fields={g: (v[0], v[1], v[2]) for g, v in per_field.items()},
            missing=() if n_missing == 0 else tuple(i for i in ids if i not in preds),
            # every output key is a truth id when there are as many keys as ids with an output
            extra=() if n_missing >= 0 and len(preds) == len(ids) - n_missing else tuple(str(i) for i in preds if i not in truth),
            invalid_examples=invalid,
        )
        extended_of[m] = extended
        records[m] = recs if isinstance(recs, StructuredRecords) else tuple(recs)
    return StructuredCount(ledger=StructuredLedger(n_records=len(ids), models=ledgers), records=records, extended=extended_of)


@dataclass(frozen=True)
class StructuredCount:
    """`count_structured` of a set of records: its ledger, per model the per-record results and
    the extended metrics (means over every record, so never merged across chunks)."""

    ledger: StructuredLedger
    records: Mapping[str, Sequence[StructuredRecord]]
    extended: Mapping[str, dict[str, ExtendedScores]]

    def result(self, config: StructuredConfig) -> StructuredResult:
        return structured_result(self.ledger, config, records=self.records, extended=self.extended)
