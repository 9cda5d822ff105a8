"""The `json` task as an `mlflow.genai` scorer: one row's feedback (`rqs`, `completeness`, `hallucination`, `accuracy`, `safety`,
bucket counts; afterwards `rqs/mean…max`, `json/…` means, `json/buckets/…` sums)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from extracteval.mlflow.genai_rows import RowSpec, Row, Columns, model_of


_JSON_SCORES = ("rqs", "completeness", "hallucination", "accuracy", "safety")
_JSON_BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")
_JSON_COUNTS = ("scored", "matched", "invalid_predictions")


def _json_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {"rqs": m["rqs/mean"], **{k: m[f"json/{k}"] for k in _JSON_SCORES[1:]}}
    out.update({f"buckets/{b}": int(m[f"json/buckets/{b}"]) for b in _JSON_BUCKETS})
    out.update({k: int(m[f"json/{k}"]) for k in _JSON_COUNTS})
    return out


def _json_rationale(scored: Any) -> str:
    m = model_of(scored)
    b = m.buckets
    invalid = "the output is not a JSON object (counted as invalid); " if m.invalid_predictions else ""
    return invalid + (f"{b['both_non_null']} of {b['gt_non_null']} expected values present; {b['gt_null_aio_has_value']} value(s) for "
            f"null keys and {b['extra_keys']} extra key(s) (hallucination); {m.matched} of {m.scored} compared values match")


def _json_aggregate(col: Columns, zd: float) -> dict[str, float]:
    from extracteval.tasks.json.metrics import SCORES, count_metrics

    rqs = col["rqs"]
    # the task's model-level scores are means of the per-record scores, by its one map from sums to means
    row_score = {"safety_score": "safety"}  # the feedback's name of a per-record score, where it differs
    sums = {v: col[row_score.get(v, v)].sum() for v in SCORES.values()}
    means = {k: float(v) for k, v in count_metrics({**sums, "records": rqs.size}).items()}
    out = {"rqs/mean": means.pop("rqs/mean")}
    out.update({f"rqs/{k}": float(f(rqs)) if rqs.size else 0.0 for k, f in (("median", np.median), ("min", np.min), ("max", np.max))})
    out.update({f"json/{k}": means[f"json/{k}"] for k in _JSON_SCORES[1:]})
    out.update({f"json/buckets/{b}": float(col[f"buckets/{b}"].sum()) for b in _JSON_BUCKETS})
    out.update({f"json/{k}": float(col[k].sum()) for k in _JSON_COUNTS})
    return out


ROWS = RowSpec(_json_row, _json_rationale, (*_JSON_SCORES, *(f"buckets/{b}" for b in _JSON_BUCKETS), *_JSON_COUNTS), _json_aggregate)
