"""The `structured` task as an `mlflow.genai` scorer: one row's feedback (`field_f1/precision/recall`, `json_valid`, `exact_match`,
… counts; afterwards `structured/…_rate`, field P/R/F1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import RowSpec, Row, Columns, model_of


# feedback suffix → StructuredCounts field; the bool ones are the row's verdicts
_STRUCT_FLAGS = {"json_valid": "valid", "strict_json_valid": "strict_valid", "json_extracted": "extracted", "exact_match": "exact"}


def _structured_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {f"field_{k}": m[f"structured/field_{k}"] for k in ("f1", "precision", "recall")}
    c = model_of(scored).counts
    out.update({k: bool(getattr(c, attr)) for k, attr in _STRUCT_FLAGS.items()})
    out.update({k: int(getattr(c, k)) for k in ("tp", "fp", "fn")})
    return out


def _structured_rationale(scored: Any) -> str:
    c = model_of(scored).counts
    if not c.valid:
        return "the output holds no JSON value (counted as invalid, every reference path missed)"
    how = "valid JSON" if c.strict_valid else "JSON extracted from surrounding text"
    return f"{how}; {'exact match' if c.exact else 'not an exact match'}; paths: {c.tp} correct, {c.fp} spurious or wrong, {c.fn} missed or wrong"


def _structured_aggregate(col: Columns, zd: float) -> dict[str, float]:
    from extracteval.tasks.structured.semantics import StructuredCounts

    n = len(col["tp"])
    counts = StructuredCounts(records=n, **{attr: int(col[k].sum()) for k, attr in _STRUCT_FLAGS.items()}, **{k: int(col[k].sum()) for k in ("tp", "fp", "fn")})
    out = {f"structured/{k}": float(v) for k, v in counts.metrics(zero_division=zd).items()}
    out.update({f"structured/{k}": float(getattr(counts, k)) for k in ("tp", "fp", "fn")})
    return out


ROWS = RowSpec(_structured_row, _structured_rationale, (*_STRUCT_FLAGS, "tp", "fp", "fn"), _structured_aggregate)
