"""The `toolcalls` task (tool-call track): predicted function calls vs reference calls.

**Predicted formats** (each record's output may be a string or an already parsed value):

* `{"name": …, "arguments": {…}}` — arguments an object or a JSON string (also `parameters`,
  `args`, `input`); a list of these for parallel calls;
* OpenAI `{"tool_calls": [{"type": "function", "function": {"name", "arguments"}}]}`, a bare
  tool-call item, a chat message, or a whole `choices[0].message` response;
* BFCL `{func: {args}}` / `{func: "<json>"}` and lists of them;
* Python call strings `f(a=1)` / `[f(a=1), g(b="x")]`, parsed with `ast` (never evaluated);
  positional arguments are kept as `*0`, `*1`, …;
* any of the above inside a fenced block or after leading prose.

A call whose name is missing or whose arguments are not an object (malformed argument JSON
included) is an *invalid call*: counted, never raised. A record is *valid* when every call in it
is valid (an empty list of calls is a valid "no call" answer).

**References:** the same `{"name","arguments"}` shapes, or BFCL `possible_answer` items
`{func: {param: [acceptable values]}}` where `""` marks a parameter that may be omitted.

**Matching.** Predicted and reference calls of one record are paired one-to-one by optimal
assignment (`core.matching.max_matching`): only same-name pairs are admissible; the number of
pairs is maximised first, then their argument agreement. Call order never matters.

**Metrics** (counts first; rates from summed counts):

* `valid_call_rate` = valid records / records;
* `name_match_rate` = reference calls paired with a same-name predicted call / reference calls;
* `args_exact_rate` = reference calls whose partner has exactly the right arguments / reference calls;
* `args_precision`, `args_recall`, `args_f1` over flattened argument paths (`city`,
  `filters.max_price`, `ids[0]`): a right value TP, a wrong value FP + FN, a missing required
  value FN, an extra value FP; every leaf of an unpaired reference call is FN, of an unpaired
  predicted call FP. For BFCL references each parameter is one path compared whole against its
  acceptable values;
* `call_accuracy` = records whose calls are all correct (same count, every reference call paired
  with exactly right arguments, all predicted calls valid) / records.

The stages, each in its module: `config` (options, counts, result types) → `parsing` (a model's
output into calls) and `references` (the expected calls, keyed) → `counting` (one record, the
general path) and `plain` (the direct path for plain references) → `ledger` (what chunks merge)
→ `result` (the count of a set of records, and the result of a merged ledger); this module is
their entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from extracteval.tasks.toolcalls.parsing import Call, ParsedCalls, parse_calls
from extracteval.tasks.toolcalls.references import RefCall, reference_calls
from extracteval.tasks.toolcalls.config import ToolCallConfig, ToolCallCounts, ToolCallModelResult, ToolCallRecord, ToolCallResult
from extracteval.tasks.toolcalls.counting import score_toolcall_record
from extracteval.tasks.toolcalls.result import count_toolcalls

__all__ = [
    "Call",
    "ParsedCalls",
    "parse_calls",
    "RefCall",
    "reference_calls",
    "ToolCallConfig",
    "ToolCallCounts",
    "ToolCallRecord",
    "score_toolcall_record",
    "ToolCallModelResult",
    "ToolCallResult",
    "score_toolcalls",
]


def score_toolcalls(
    truth: Mapping[str, Any],
    predictions: Mapping[str, Mapping[str, Any]],
    *,
    possible_answer: bool = False,
    config: ToolCallConfig | None = None,
    similarity: Mapping[str, Any] | None = None,
    progress: Callable[[int, int, str, dict[str, float]], None] | None = None,
) -> ToolCallResult:
    """Score every model's tool calls against the reference calls.

    Args:
        truth: record id → reference calls (any supported shape; BFCL possible answers when
            `possible_answer=True`).
        predictions: model → record id → raw output. A missing output is an invalid record.
        similarity: optional extended metrics: name → SimilarityBackend, fed the canonical text
            of the predicted and the reference calls.
        progress: called after each record with (done, total, model, running metrics).
    """
    config = config or ToolCallConfig()
    return count_toolcalls(truth, predictions, possible_answer=possible_answer, config=config, similarity=similarity,
                           progress=progress).result(config)


