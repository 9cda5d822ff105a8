"""The `fields` task: document metadata extraction scored field by field — its public entry point.

The stages, each in its module: `config` (the options and result types) → `counting` (records
aligned by id; each field's values encoded across the truth and every model together, each
*distinct* value canonicalised once, every cell classified with vectorised comparisons of integer
codes) → `ledger` (per-record count arrays summed, patterns and examples kept; what the chunk and
Spark engines merge) → `result` (ratios once → winners, ranking, intervals, checks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.core.bootstrap import PairComparison
from extracteval.errors import InputError
from extracteval.io.wide_tables import ModelPredictions
from extracteval.tasks.fields.config import Check, FieldMetrics, FieldsConfig, FieldsResult, ModelResult, RecordLedger, STATUSES
from extracteval.tasks.fields.ledger import FieldsLedger, FieldsPlan, fields_ledger, plan_fields
from extracteval.tasks.fields.result import fields_result

__all__ = [
    "FieldsConfig",
    "ModelPredictions",
    "FieldMetrics",
    "ModelResult",
    "Check",
    "PairComparison",
    "FieldsResult",
    "RecordLedger",
    "FieldsPlan",
    "FieldsLedger",
    "plan_fields",
    "fields_ledger",
    "fields_result",
    "score_fields",
    "STATUSES",
]


def score_fields(
    truth: pd.DataFrame,
    predictions: Sequence[ModelPredictions],
    *,
    config: FieldsConfig | None = None,
    fields: Sequence[str] | None = None,
    truth_source: str = "truth",
    keep_codes: dict[str | None, dict[str, tuple[np.ndarray, Any]]] | None = None,
    on_records: Callable[[RecordLedger], None] | None = None,
) -> FieldsResult:
    """Score one or more models' field extractions against the truth.

    Args:
        truth: index = record id, one column per field.
        predictions: one `ModelPredictions` per model (names unique).
        config: options; defaults: EXACT everywhere, zero_division 0.
        fields: fields to score (default: every truth column, in order).
        truth_source: name of the truth input, used in messages.
        keep_codes: receives, per model and scored field, the factorisation of the model's column
            (`pd.factorize` codes in the frame's row order, as int32, and the distinct values)
            when its cells were factorised as they are: what logging the predictions as scored
            needs, without hashing 20M cells a second time at 100k × 200. `keep_codes[None]`
            receives the truth's columns the same way (for its digest).
        on_records: called with the per-record counts as soon as they are final, before the
            bootstrap patterns and intervals are computed (`keep_codes` is complete by then):
            `extracteval evaluate` starts writing its Parquet artifacts there, on the core that
            the rest of the scoring leaves idle.

    The work is `plan_fields` (what is scored) → `fields_ledger` (records → mergeable counts) →
    `fields_result` (ratios, winners, ranking, intervals, checks, once). The chunked and Spark
    engines call the same three functions with the records split into chunks.

    Examples:
        >>> import pandas as pd
        >>> truth = pd.DataFrame({"type": ["Service Agreement", "NDA", "Not Present"]}, index=["1", "2", "3"])
        >>> a = pd.DataFrame({"type": ["Service Agreement", "License Agreement", "Not Present"]}, index=["1", "2", "3"])
        >>> b = pd.DataFrame({"type": ["Service Agreement", "NDA", "Employment Agreement"]}, index=["1", "2", "3"])
        >>> r = score_fields(truth, [ModelPredictions(name="A", values=a), ModelPredictions(name="B", values=b)],
        ...                  config=FieldsConfig(bootstrap=0))
        >>> r.models["B"].fields["type"].f1, r.field_winners["type"].winners
        (0.8, ('B',))
    """
    seen: set[str] = set()
    for p in predictions:
        if p.name in seen and p.name and str(p.name).strip():
            raise InputError(f"model {p.name!r} is given twice; each --predictions needs a unique NAME.")
        seen.add(p.name)
    plan = plan_fields(
        [str(c) for c in truth.columns],
        {p.name: p.source for p in predictions},
        config=config,
        fields=fields,
        truth_source=truth_source,
    )
    ledger, records = fields_ledger(truth, predictions, plan=plan, keep_codes=keep_codes, on_records=on_records)
    return fields_result(ledger, plan, records=records)


