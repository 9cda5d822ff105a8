"""The `json` task: 4-phase JSON comparison and the Response Quality Score (RQS).

Per record, every key of the union of the ground truth (GT) and the model output (AIO) is sorted
into the key buckets (phase 0); completeness (phase 1), hallucination (phase 2) and accuracy with
per-field EXACT / FUZZY / SEMANTIC / IGNORE strategies (phase 3) follow, and RQS combines them
(phase 4). Per model, the per-record values are averaged and the bucket counts summed.

Pipeline: flatten every object once into (path, value) leaves (iteratively: no recursion limit)
→ canonicalise each *distinct* value once → join GT and AIO leaves on (record, path) with sorted
integer ids → buckets, strategies and EXACT matches as vectorised comparisons of integer codes →
FUZZY / SEMANTIC similarity once per distinct (truth, prediction) pair, in one batch per backend
→ per-record scores by `bincount` → aggregates, per-field table, ranking.

The stages, each in its module: `config` (options, result types) → `paths` (flattening, path and
key tables, strategies) → `leaves` (the walk that codes every leaf) → `counting` (chunks of
records bucketed, compared and scored) → `result` (the count's ledger and its one reduction to a
result); this module is their entry point, and `compare_json` compares two models record by record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from extracteval.core.similarity import SimilarityBackend
from extracteval.tasks.json.config import BUCKETS, FieldAccuracy, JsonConfig, JsonPredictions, JsonResult, ModelJsonResult, RQSWeights, RecordScore
from extracteval.tasks.json.paths import auto_strategy, flatten_json
from extracteval.tasks.json.counting import count_json

__all__ = [
    "BUCKETS",
    "RQSWeights",
    "JsonConfig",
    "JsonPredictions",
    "RecordScore",
    "FieldAccuracy",
    "ModelJsonResult",
    "JsonResult",
    "score_json",
    "compare_json",
    "flatten_json",
    "auto_strategy",
]


# ---------------------------------------------------------------------------------------------
# flattening and canonical keys


# ---------------------------------------------------------------------------------------------
# scoring


def score_json(
    truth: Mapping[str, Any],
    predictions: Sequence[JsonPredictions],
    *,
    config: JsonConfig | None = None,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    truth_source: str = "truth",
) -> JsonResult:
    """Score models' JSON outputs against golden JSON with the four phases and RQS.

    Args:
        truth: record id → golden JSON object.
        predictions: one `JsonPredictions` per model (names unique).
        config: options (strategies, thresholds, weights, flatten…).
        similarity: backend for SEMANTIC fields (default: `LexicalSimilarity`, labelled "lexical").
        fuzzy_similarity: backend for FUZZY fields (default: rapidfuzz with `config.fuzzy_scorer`).
        truth_source: name of the truth input, used in messages.

    Examples:
        >>> gt = {"r1": {"name": "John Smith", "email": "john@example.com", "status": "active"}}
        >>> aio = {"r1": {"name": "John Smyth", "email": "JOHN@example.com", "extra": "x"}}
        >>> r = score_json(gt, [JsonPredictions(name="m", records=aio)], config=JsonConfig(strategies={"name": "FUZZY"}))
        >>> m = r.models["m"]
        >>> m.completeness, m.hallucination, m.accuracy
        (0.6666666666666666, 0.25, 1.0)
    """
    cfg = config or JsonConfig()
    result = count_json(truth, predictions, config=cfg, similarity=similarity, fuzzy_similarity=fuzzy_similarity,
                        truth_source=truth_source).result(cfg)
    if result.n_records == 0:
        result = replace(result, warnings=(*result.warnings, f"{truth_source}: the ground truth has no records."))
    return result


# ---------------------------------------------------------------------------------------------
# the count of a set of records, its mergeable ledger, and the one reduction to a result


def compare_json(
    truth: Mapping[str, Any],
    prediction: Any,
    *,
    config: JsonConfig | None = None,
    similarity: SimilarityBackend | None = None,
    fuzzy_similarity: SimilarityBackend | None = None,
    safety_score: float | None = None,
) -> RecordScore:
    """The four phases and RQS for one (golden, predicted) pair of JSON objects.

    Example (with the default *lexical* backend: the bio paraphrase shares too little spelling
    to pass 0.80, so accuracy is 2/3 here; an LLM judge scoring it 0.88 would pass it):
        >>> gt = {"name": "John Smith", "email": "john@example.com",
        ...       "bio": "Senior engineer with 10 years of experience...", "internal_id": None, "status": "active"}
        >>> aio = {"name": "John Smyth", "email": "john@example.com",
        ...        "bio": "Experienced senior engineer, 10+ years...", "internal_id": "abc123", "extra_field": "surprise"}
        >>> r = compare_json(gt, aio, config=JsonConfig(strategies={"name": "FUZZY", "bio": "SEMANTIC"}))
        >>> r.completeness, r.hallucination, r.accuracy, r.buckets["gt_null_aio_has_value"]
        (0.75, 0.3333333333333333, 0.6666666666666666, ('internal_id',))
    """
    res = score_json(
        {"record": truth},
        [JsonPredictions(name="model", records={"record": prediction}, safety={} if safety_score is None else {"record": safety_score})],
        config=config,
        similarity=similarity,
        fuzzy_similarity=fuzzy_similarity,
    )
    return res.models["model"].record("record")
