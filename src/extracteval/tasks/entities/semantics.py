"""The `entities` task: lists of entities per record, aligned optimally, then scored.

Each record holds a list of entities (dicts): invoice line items, parties, products. Per record,
predicted and gold entities are aligned by optimal one-to-one assignment (`max_matching`: most
pairs at or above `match_threshold`, then the highest total similarity; never greedy, never
dependent on input order) on a weighted per-field similarity. Then:

- entity presence: matched / extra / missed entities → `precision_entities`, `recall_entities`,
  `f1_entities` (counts first, `counts.ratios` last);
- per-feature one-vs-rest metrics and row accuracy (the `labels` kernel), in two views that are
  always both reported: `matched` (matched pairs only, as entity scoring usually reports them) and
  `strict` (every missed gold entity and every extra prediction counts as an error, so a model
  cannot look good by matching few entities).

Pipeline: flatten every record's entities into columns → dictionary-encode each feature across
truth and all models once (`LabelEncoder`, canonical keys per distinct value) → all candidate
pairs of all records as index arrays → per-field similarity vectorised over pairs (rapidfuzz
`cpdist` over *distinct* text pairs for FUZZY; for SEMANTIC one batched call of the similarity
backend per field over the distinct text pairs of the whole input, every model included) →
weighted mean → one `max_matching` per record.

The stages, each in its module: `config` (options, inputs, result types) → `counting` (entities
flattened and encoded; the plan) → `matching` (candidate pairs, field scores, the matching) →
`ledger` (what chunks merge) → `result` (metrics, ranking, checks); this module is their entry point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extracteval.core.similarity import SimilarityBackend
from extracteval.tasks.entities.config import ENTITY_VIEWS, EntitiesConfig, EntitiesModelResult, EntitiesResult, EntityPresence, ModelEntities, PRESENCE_KEYS
from extracteval.tasks.entities.counting import EntitiesPlan, gold_fields_of, plan_entities
from extracteval.tasks.entities.matching import _backend, align_entities
from extracteval.tasks.entities.ledger import EntitiesLedger, EntitiesModelLedger, entities_ledger
from extracteval.tasks.entities.result import entities_result

__all__ = [
    "ENTITY_VIEWS",
    "PRESENCE_KEYS",
    "EntitiesConfig",
    "ModelEntities",
    "EntityPresence",
    "EntitiesModelResult",
    "EntitiesResult",
    "align_entities",
    "score_entities",
    "EntitiesPlan",
    "plan_entities",
    "gold_fields_of",
    "EntitiesModelLedger",
    "EntitiesLedger",
    "entities_ledger",
    "entities_result",
]












def score_entities(
    truth: Mapping[str, Sequence[Mapping[str, Any]]],
    predictions: Sequence[ModelEntities],
    *,
    config: EntitiesConfig | None = None,
    truth_source: str = "truth",
    similarity: SimilarityBackend | None = None,
) -> EntitiesResult:
    """Align and score one or more models' entity lists against the truth.

    Args:
        truth: record id → list of gold entities (dicts). A non-object entity is an `InputError`.
        predictions: one `ModelEntities` per model (unique names). A truth record without a
            prediction has all its entities missed; a predicted record not in the truth has all
            its entities extra (both reported in warnings and `alignment`).
        config: features, key fields, weights, strategies, thresholds.
        truth_source: name of the truth input, used in messages.
        similarity: backend of SEMANTIC fields (`extracteval.core.similarity`: any object with
            `name` and batched `similarity(a, b)`; default `LexicalSimilarity`, offline). It is
            called once per SEMANTIC field over the distinct value pairs of the whole input.

    Examples:
        >>> truth = {"inv1": [{"item": "bolt", "qty": 2}, {"item": "nut", "qty": 4}]}
        >>> pred = {"inv1": [{"item": "bolt", "qty": 2}]}
        >>> r = score_entities(truth, [ModelEntities(name="m", records=pred)])
        >>> s = r.models["m"].presence.to_dict()
        >>> s["matched_count"], s["missed_gold_count"], s["recall_entities"]
        (1, 1, 0.5)
        >>> r.models["m"].matched.row_accuracy, r.models["m"].strict.row_accuracy
        (1.0, 0.5)
    """
    cfg = config or EntitiesConfig()
    backend = _backend(similarity)
    ledger, per_record = entities_ledger(truth, predictions, config=cfg, truth_source=truth_source, similarity=backend)
    plan = plan_entities(ledger.gold_fields, cfg, truth_source)
    return entities_result(ledger, config=cfg, plan=plan, truth_source=truth_source, similarity=backend,
                           sources={p.name: p.source for p in predictions}, per_record=per_record)
