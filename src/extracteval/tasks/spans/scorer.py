"""The `spans` task as an `mlflow.genai` scorer: one row's feedback (`f1`, `precision`, `recall` (exact match), `tp fp fn`; afterwards `spans/exact/micro/…`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import RowSpec, Row, Columns, model_of


def _spans_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {k: m[f"spans/exact/micro/{k}"] for k in ("f1", "precision", "recall")}
    out.update({k: int(m[f"spans/exact/micro/{k}"]) for k in ("tp", "fp", "fn")})
    return out


def _spans_rationale(scored: Any) -> str:
    ms = model_of(scored)
    c = ms.exact.micro
    errs = ", ".join(f"{k.replace('_', '+')} {v}" for k, v in ms.errors.counts.items() if v)
    return f"exact match: {c.tp} correct, {c.fp} spurious, {c.fn} missed" + (f"; errors: {errs}" if errs else "")


def _spans_aggregate(col: Columns, zd: float) -> dict[str, float]:
    from extracteval.tasks.spans.metrics import spans_metrics

    s = {k: float(col[k].sum()) for k in ("tp", "fp", "fn")}
    micro = spans_metrics([s["tp"]], [s["fp"]], [s["fn"]], which=("micro/precision", "micro/recall", "micro/f1"), zero_division=zd)
    return {**{f"spans/exact/{k}": float(v) for k, v in micro.items()}, **{f"spans/exact/micro/{k}": v for k, v in s.items()}}


ROWS = RowSpec(_spans_row, _spans_rationale, ("tp", "fp", "fn"), _spans_aggregate)
