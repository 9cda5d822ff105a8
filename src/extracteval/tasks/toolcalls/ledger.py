"""The `toolcalls` task's ledger: per model the summed counts, the per-function counts and the ids the result
lists — what chunks of records merge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extracteval.core.ledger import Ledger, add_counts, always, by_key, merge, union
from extracteval.core.decision_track import _EXAMPLES
from extracteval.io.id_order import first_by_id

from extracteval.tasks.toolcalls.config import ToolCallCounts


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    counts: ToolCallCounts
    formats: Mapping[str, int] = merge(by_key())
    failed: tuple[str, ...]  # in the order of the parts (put in natural order once, at the end)
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    # the first few in natural id order
    invalid_examples: tuple[dict[str, Any], ...] = merge(lambda a, b: first_by_id(a + b, _EXAMPLES))
    # `named_function_counts` (evaluate only)
    functions: Mapping[str | None, tuple[int, ...]] = merge(by_key(add_counts), default_factory=dict)
    merged: bool = merge(always(True), default=False)  # added up from several counts: the ids are put in natural order once, at the end


# the per-name counts of two sets of records (`functions.named_function_counts`), added
add_function_counts = by_key(add_counts)


@dataclass(frozen=True)
class ToolCallsLedger(Ledger):
    """Counts of some records, mergeable by `+`: per model the `ToolCallCounts` (every metric is a
    ratio of them), the output formats, the ids the result lists (failed, missing, extra, the
    first invalid examples) and, for `evaluate`, the counts per function name."""

    n_records: int
    models: Mapping[str, _ModelLedger] = merge(by_key())
    function_names: frozenset[str] = merge(union, default=frozenset())  # the reference's function names (evaluate only)
