"""The `toolcalls` task as an `mlflow.genai` scorer: one row's feedback (`call_correct`, `valid_call`, `args_f1/precision/recall`,
counts; afterwards `toolcalls/call_accuracy`, rates, args P/R/F1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.mlflow.genai_rows import RowSpec, Row, Columns


_TC_COUNTS = ("ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")


def _toolcalls_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {"call_correct": m["toolcalls/correct_records"] > 0, "valid_call": m["toolcalls/valid_records"] > 0}
    out.update({k: m[f"toolcalls/{k}"] for k in ("args_f1", "args_precision", "args_recall")})
    out.update({k: int(m[f"toolcalls/{k}"]) for k in _TC_COUNTS})
    return out


def _toolcalls_rationale(scored: Any) -> str:
    c = scored.result.generic.models["output"].counts
    if not c.valid_records:
        return "the output holds no readable tool call (counted as invalid)"
    return (f"{'every call correct' if c.correct_records else 'not every call correct'}: {c.name_matches} of {c.ref_calls} reference "
            f"call(s) matched by name, {c.args_exact} with exactly the right arguments; {c.pred_calls} predicted call(s)")


def _toolcalls_aggregate(col: Columns, zd: float) -> dict[str, float]:
    from extracteval.tasks.toolcalls.semantics import ToolCallCounts

    counts = ToolCallCounts(records=len(col["tp"]), valid_records=int(col["valid_call"].sum()), correct_records=int(col["call_correct"].sum()),
                            **{k: int(col[k].sum()) for k in _TC_COUNTS})
    out = {f"toolcalls/{k}": float(v) for k, v in counts.metrics(zero_division=zd).items()}
    out.update({f"toolcalls/{k}": float(v) for k, v in counts.to_dict().items()})
    return out


ROWS = RowSpec(_toolcalls_row, _toolcalls_rationale, ("call_correct", "valid_call", *_TC_COUNTS), _toolcalls_aggregate)
