"""The `structured` task's ledger: a model's summed counts and per-field counts, what chunks of records merge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extracteval.core.ledger import Ledger, add_counts, always, by_key, merge
from extracteval.core.decision_track import _EXAMPLES
from extracteval.io.id_order import first_by_id
from extracteval.tasks.structured.config import StructuredCounts


@dataclass(frozen=True)
class _ModelLedger(Ledger):
    counts: StructuredCounts
    fields: Mapping[str, tuple[int, int, int]] = merge(by_key(add_counts))  # path → (tp, fp, fn)
    missing: tuple[str, ...]  # in the order of the parts (put in natural order once, at the end)
    extra: tuple[str, ...]
    # the first few in natural id order
    invalid_examples: tuple[dict[str, Any], ...] = merge(lambda a, b: first_by_id(a + b, _EXAMPLES))
    merged: bool = merge(always(True), default=False)  # added up from several counts: the ids are put in natural order once, at the end


@dataclass(frozen=True)
class StructuredLedger(Ledger):
    """Counts of some records, mergeable by `+`: per model the `StructuredCounts`, the per-path
    (tp, fp, fn), and the ids the result lists (missing, extra, the first invalid examples)."""

    n_records: int
    models: Mapping[str, _ModelLedger] = merge(by_key())


