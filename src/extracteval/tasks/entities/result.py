"""The `entities` task's result: a merged ledger reduced to per-feature metrics in both views, presence metrics,
ranking and checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from extracteval.tasks.entities.contract import RANKING
from extracteval.core.feature_views import (
    ONE_MODEL_NOTE,
    display_labels,
    rank_on_strict_view,
    view_metrics,
)
from extracteval.core.similarity import SimilarityBackend, describe_similarity
from extracteval.core.strategies import Strategy
from extracteval.tasks.entities.config import ENTITY_VIEWS, EntitiesConfig, EntitiesModelResult, EntitiesResult, EntityPresence
from extracteval.tasks.entities.counting import EntitiesPlan, _missing_everywhere
from extracteval.tasks.entities.matching import _backend
from extracteval.tasks.entities.ledger import EntitiesLedger, _SIM_UNIT


def _reading_warnings(ledger: EntitiesLedger, names: list[str]) -> list[str]:
    """Predicted entities that are not objects, predicted fields no truth entity has, model by model."""
    warnings: list[str] = []
    for m in names:
        led = ledger.models[m]
        if led.invalid:
            n = led.invalid
            warnings.append(
                f"model {m!r}: {n} predicted entit{'y is' if n == 1 else 'ies are'} not an object and {'counts' if n == 1 else 'count'} as extra "
                f"predictions (first: {led.invalid_first})"
            )
        unknown_keys = sorted(led.unknown_keys)
        if unknown_keys:
            warnings.append(f"model {m!r}: predicted fields not in any ground-truth entity are ignored: {unknown_keys[:10]}")
    return warnings


def _model_entry(m: str, led: Any, display: Mapping[str, Mapping[str, str]], zd: float, warnings: list[str]) -> dict[str, Any]:
    """One model's views (matched, strict) with display labels, presence, mean match similarity and examples; its
    records without a prediction or not in the truth are added to `warnings`."""
    shown = {v: {f: replace(x, per_label=dict(sorted((display[f][key], c) for key, c in x.per_label.items())))
                 for f, x in getattr(led, v).items()} for v in ("matched", "strict")}
    n_match, n_un_g, n_un_p = led.presence.tp, led.presence.fn, led.presence.fp
    presence = EntityPresence(counts=led.presence, invalid_predictions=led.invalid, zero_division=zd)
    views = {
        "matched": view_metrics("matched", shown["matched"], correct_rows=led.correct_rows, rows=n_match,
                                zero_division=zd, description=ENTITY_VIEWS["matched"]),
        "strict": view_metrics("strict", shown["strict"], correct_rows=led.correct_rows, rows=n_match + n_un_g + n_un_p,
                               zero_division=zd, description=ENTITY_VIEWS["strict"]),
    }
    if led.missing_recs:
        warnings.append(f"model {m!r}: {led.missing_recs} ground-truth record(s) have no prediction; their "
                        f"entities count as missed: " + ", ".join(repr(x) for x in led.missing_ids) + (" …" if led.missing_recs > 5 else ""))
    if led.extra_recs:
        warnings.append(f"model {m!r}: {led.extra_recs} predicted record(s) are not in the ground truth; their "
                        f"entities count as extra predictions: " + ", ".join(repr(x) for x in led.extra_ids) + (" …" if led.extra_recs > 5 else ""))
    return {
        "views": views, "ledgers": shown, "presence": presence,
        # the exact sum over the exact count, rounded once (int / int is correctly rounded)
        "mean_sim": led.sim_sum / (n_match << _SIM_UNIT) if n_match else 0.0,
        "examples": {n: [dict(e) for e in x] for n, x in led.examples.items()},
    }


def _config_document(cfg: EntitiesConfig, plan: EntitiesPlan, ledger: EntitiesLedger, backend: Any, warnings: list[str]) -> dict[str, Any]:
    """The configuration as the document gives it: with the similarity backend's description, its pairs scored and
    failures (a failure is added to `warnings`), the strategies and types used."""
    semantic_fields = [f for f in plan.fields_needed if cfg.strategy_for(f) is Strategy.SEMANTIC]
    failures = {f: sum(ledger.semantic[f].values()) for f in semantic_fields}
    failed = {f: n for f, n in failures.items() if n}
    if failed:
        warnings.append(
            f"similarity backend {getattr(backend, 'name', 'custom')!r} could not score "
            + ", ".join(f"{n} distinct value pair(s) of {f!r}" for f, n in failed.items())
            + "; they score 0 in the alignment and count as wrong values."
        )
    cfg_dict = cfg.to_dict()
    desc = describe_similarity(backend)
    desc["fields"] = semantic_fields
    desc["pairs_scored"] = {f: len(ledger.semantic[f]) for f in semantic_fields}
    desc["failures"] = failures
    cfg_dict["similarity"] = {"semantic": desc}
    cfg_dict["semantic_backend"] = desc.get("name", "custom")
    cfg_dict["strategies_used"] = {f: cfg.strategy_for(f).value for f in plan.features_all}
    cfg_dict["types_used"] = {f: cfg.types.get(f, "auto") for f in plan.fields_needed}
    return cfg_dict


def entities_result(
    ledger: EntitiesLedger,
    *,
    config: EntitiesConfig,
    plan: EntitiesPlan,
    truth_source: str = "truth",
    similarity: SimilarityBackend | None = None,
    sources: Mapping[str, str] | None = None,
    per_record: Mapping[str, pd.DataFrame] | None = None,
) -> EntitiesResult:
    """Display labels, the checks over the whole data set, ratios, winners, ranking and warnings,
    once, from the ledger of every record."""
    cfg = config
    backend = _backend(similarity)
    sources = sources or {}
    zd = cfg.zero_division
    for f in plan.fields_needed:
        if ledger.gold_entities and ledger.gold_missing[f] == ledger.gold_entities:
            raise _missing_everywhere(f, truth_source)
    display = {f: dict(zip(sorted(ledger.keys[f]), display_labels(sorted(ledger.keys[f])))) for f in plan.scored}
    names = sorted(ledger.models)
    warnings = _reading_warnings(ledger, names)
    results = {m: _model_entry(m, ledger.models[m], display, zd, warnings) for m in names}

    winners, ranked = rank_on_strict_view(RANKING, {m: results[m]["views"]["strict"] for m in names}, plan.scored)
    models: dict[str, EntitiesModelResult] = {}
    for m, place in ranked:
        d = results[m]
        led = ledger.models[m]
        models[m] = EntitiesModelResult(
            **vars(place), name=m, presence=d["presence"], matched=d["views"]["matched"], strict=d["views"]["strict"], ledgers=d["ledgers"],
            mean_match_similarity=d["mean_sim"], records_missing_prediction=led.missing_recs,
            records_not_in_truth=led.extra_recs, examples=d["examples"], source=sources.get(m, ""),
            per_record=None if per_record is None else per_record.get(m),
        )
        pres = d["presence"].to_dict()
        gap = d["views"]["matched"].totals["f1"] - pres["recall_entities"]
        if pres["gold_count"] and gap > 0.15:
            warnings.append(
                f"model {m!r}: {100 * d['views']['matched'].totals['f1']:.1f}% F1 on matched pairs but only "
                f"{100 * pres['recall_entities']:.1f}% of gold entities found ({pres['missed_gold_count']} missed); "
                f"the strict view ({100 * d['views']['strict'].totals['f1']:.1f}% F1) counts them."
            )
    if len(names) == 1:
        warnings.append(ONE_MODEL_NOTE)
    cfg_dict = _config_document(cfg, plan, ledger, backend, warnings)
    return EntitiesResult(
        task="entities", n_records=ledger.n_records, features=tuple(plan.scored), key_fields=tuple(plan.key_fields), weights=dict(plan.weights),
        models=models, ranking=tuple(m for m, _ in ranked), feature_winners=winners, warnings=tuple(warnings),
        config=cfg_dict,
    )
