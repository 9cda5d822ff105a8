"""The `structured` task (structured JSON track): raw model outputs vs reference JSON.

Per record:

* **Parsing.** The output string is parsed as JSON. If that fails, a fenced block
  (```` ```json … ``` ````) or the first JSON object/array after leading prose is tried; success
  there counts as valid *and* extracted. Anything else is invalid: counted, never raised.
  Nesting of any depth is handled (an iterative parser takes over where `json` would recurse).
* **Flattening.** Objects become `path → leaf` maps (`user.name`, `items[0]`, `items[1].sku`)
  with an explicit stack, so a 10,000-deep document is fine. Leaves are compared by canonical
  JSON (`30` ≠ `"30"`, `1.0` = `1`); with `value_match="normalized"` by the shared
  `Normalizer` keys instead (case, whitespace, number and date formats).
  `null`, `{}` and `[]` leaves are *absent* for field counting (the absent-value rule of every task) but still part of the
  exact-match comparison.
* **Counts.** For each path: both present and equal → TP; both present and different → FP
  **and** FN; only predicted → FP; only in the reference → FN. An invalid output makes every
  reference leaf a FN. `exact` = the whole canonical document equals the reference.
* **Lists.** `list_matching="positional"` (default) compares `items[i]` with
  `items[i]`; `"optimal"` first aligns the predicted items of each list to the reference items
  by the one-to-one assignment that maximises the leaves they share (maximum-weight assignment,
  never greedy), so a reordered list is not penalised.

Counts first, ratios last: `StructuredCounts` add up over records, chunks and machines; rates and
P/R/F1 are computed once from the sums.

The stages, each in its module: `config` (options, counts, result types) → `alignment`
(references, generic paths, list alignment) → `counting` (one record) and `model_counts` (a
model's outputs at once) → `ledger` (what chunks merge) → `result` (the count of a set of records,
and the rates, field metrics and ranking of a merged ledger); this module is their entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from extracteval.core.decision_track import (  # noqa: F401 - the task's API too
    PASS_THRESHOLD,
    _key_part,
    leaf_key,
    flatten,
    _HOLE,
    flat_keys,
    _REF_BOOL,
    _REF_NO_SHORTCUT,
    _REF_ABSENT,
    _CHILD_PATHS_MAX,
    _LossyNumber,
    _flat_walk,
    ExtendedScores,
    extended_scores,
    canonical_text,
    _EXAMPLES,
    paused_gc,
)
from extracteval.io.model_output import ParsedOutput, loads_any_depth, parse_json_output
from extracteval.tasks.structured.config import StructuredConfig, StructuredCounts, StructuredModelResult, StructuredRecord, StructuredRecords, StructuredResult, record_columns
from extracteval.tasks.structured.alignment import align_lists, generic_path
from extracteval.tasks.structured.counting import score_structured_record
from extracteval.tasks.structured.result import count_structured

__all__ = [
    "ParsedOutput",
    "parse_json_output",
    "loads_any_depth",
    "flatten",
    "generic_path",
    "StructuredConfig",
    "StructuredCounts",
    "StructuredRecord",
    "StructuredRecords",
    "record_columns",
    "score_structured_record",
    "StructuredModelResult",
    "StructuredResult",
    "score_structured",
    "align_lists",
    "leaf_key",
    "ExtendedScores",
    "extended_scores",
]


# --------------------------------------------------------------------------------------------
# references


# --------------------------------------------------------------------------------------------
# flattening


# --------------------------------------------------------------------------------------------
# optimal list alignment


# --------------------------------------------------------------------------------------------
# counting


# --------------------------------------------------------------------------------------------
# extended metrics (opt-in)


# --------------------------------------------------------------------------------------------
# a whole run


def score_structured(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    config: StructuredConfig | None = None,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> StructuredResult:
    """Score every model's raw outputs against the reference JSON documents.

    Args:
        truth: record id → reference JSON value (object, array or scalar).
        predictions: model → record id → raw output (string, or an already parsed value). A
            record with no output counts as invalid (and is listed in `missing_ids`).
        similarity: optional extended metrics: metric name (`semantic_similarity`,
            `judge_score`) → any object with `similarity(a, b) -> array` (SimilarityBackend).
        progress: called after each record with (done, total, model, running metrics).
    """
    config = config or StructuredConfig()
    return count_structured(truth, predictions, config=config, similarity=similarity, progress=progress).result(config)


