"""The scoring engine as `mlflow.genai` scorers: per-row feedback, micro metrics afterwards.

For users on `mlflow.genai.evaluate`, each row's model output is scored against its
expectations with exactly the task's engine (the same adapter the evaluator plugin uses, on a
one-record evaluation), and returned as feedback. What a row's feedback is depends on the task:

| task | per-row feedback (`<name>/…`) | logged afterwards by `log_micro_metrics` |
|---|---|---|
| fields | `f1`, `exact`, `tp fp fn tn` | `micro/precision…accuracy`, `total/tp…` |
| json | `rqs`, `completeness`, `hallucination`, `accuracy`, `safety`, bucket counts | `rqs/mean…max`, `json/…` means, `json/buckets/…` sums |
| structured | `field_f1/precision/recall`, `json_valid`, `exact_match`, … counts | `structured/…_rate`, field P/R/F1 |
| toolcalls | `call_correct`, `valid_call`, `args_f1/precision/recall`, counts | `toolcalls/call_accuracy`, rates, args P/R/F1 |
| spans | `f1`, `precision`, `recall` (exact match), `tp fp fn` | `spans/exact/micro/…` |
| labels | `accuracy`, `row_correct`, `correct`, `cells` | `labels/micro_accuracy`, `labels/row_accuracy` |
| entities | `entity_f1/precision/recall`, `accuracy`, counts | `entities/…_entities`, `entities/micro_accuracy` |

`mlflow.genai.evaluate` averages each feedback over rows; the task's own aggregate metrics —
ratios of the *summed* counts, which an average of per-row ratios is not — are computed from the
per-row counts and logged to the run afterwards by `log_micro_metrics`, which reads the task
from the feedback's metadata. A task added to `TASKS` is a scorer only once it has a row spec
here (`_ROW_SPECS`); until then `extraction_scorer` refuses it by name.

Examples:
    >>> import mlflow                                               # doctest: +SKIP
    >>> from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics
    >>> s = extraction_scorer("fields", {"strategies": {"vendor": "FUZZY"}})
    >>> result = mlflow.genai.evaluate(data=rows, scorers=[s])      # rows: inputs/outputs/expectations
    >>> log_micro_metrics(result)                                   # micro P/R/F1 on the same run
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from extracteval.errors import InputError

__all__ = ["extraction_scorer", "log_micro_metrics", "scorer_tasks", "COUNT_FEEDBACK"]

COUNT_FEEDBACK = ("tp", "fp", "fn", "tn")  # the fields task's count feedback
_TASK_META = "extracteval.task"
_ZD_META = "extracteval.zero_division"

Row = dict[str, Any]  # feedback suffix → value (float, int or bool)
Columns = Mapping[str, np.ndarray]  # feedback suffix → per-row values (float)


@dataclass(frozen=True)
class _RowSpec:
    """How one task's one-record evaluation becomes feedback, and the rows' feedback run metrics.

    `row(scored, metrics)` → feedback values, first the primary one (carries the rationale);
    `rationale(scored)` → that row's verdict in words; `columns` → the feedback `aggregate`
    needs; `aggregate(columns, zero_division)` → run metrics (without the `<name>/` prefix).
    """

    row: Callable[[Any, Mapping[str, float]], Row]
    rationale: Callable[[Any], str]
    columns: tuple[str, ...]
    aggregate: Callable[[Columns, float], dict[str, float]]


def _ratios(tp: float, fp: float, fn: float, tn: float, zd: float) -> dict[str, float]:
    from extracteval.core.counts import ratios

    return {k: float(v) for k, v in ratios(int(tp), int(fp), int(fn), int(tn), zero_division=zd).items()}


def _rate(a: float, b: float, zd: float) -> float:
    return float(a / b) if b else float(zd)


def _model(scored: Any) -> Any:
    return scored.result.models["output"]


# ---- fields --------------------------------------------------------------------------------


def _fields_row(scored: Any, m: Mapping[str, float]) -> Row:
    c = {k: int(m.get(f"totals/{k}", 0)) for k in COUNT_FEEDBACK}
    return {"f1": float(m["micro/f1"]), "exact": c["fp"] == 0 and c["fn"] == 0, **c}


def _fields_rationale(scored: Any) -> str:
    from extracteval.tasks.fields.adapter import ADAPTER

    return ADAPTER.row_rationale(scored, "output")


def _fields_aggregate(col: Columns, zd: float) -> dict[str, float]:
    s = {k: float(col[k].sum()) for k in COUNT_FEEDBACK}
    r = _ratios(s["tp"], s["fp"], s["fn"], s["tn"], zd)
    return {**{f"micro/{k}": r[k] for k in ("precision", "recall", "f1", "accuracy")}, **{f"total/{k}": v for k, v in s.items()}}


# ---- json ----------------------------------------------------------------------------------

_JSON_SCORES = ("rqs", "completeness", "hallucination", "accuracy", "safety")
_JSON_BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")
_JSON_COUNTS = ("scored", "matched", "invalid_predictions")


def _json_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {"rqs": m["rqs/mean"], **{k: m[f"json/{k}"] for k in _JSON_SCORES[1:]}}
    out.update({f"buckets/{b}": int(m[f"json/buckets/{b}"]) for b in _JSON_BUCKETS})
    out.update({k: int(m[f"json/{k}"]) for k in _JSON_COUNTS})
    return out


def _json_rationale(scored: Any) -> str:
    m = _model(scored)
    b = m.buckets
    invalid = "the output is not a JSON object (counted as invalid); " if m.invalid_predictions else ""
    return invalid + (f"{b['both_non_null']} of {b['gt_non_null']} expected values present; {b['gt_null_aio_has_value']} value(s) for "
            f"null keys and {b['extra_keys']} extra key(s) (hallucination); {m.matched} of {m.scored} compared values match")


def _json_aggregate(col: Columns, zd: float) -> dict[str, float]:
    rqs = col["rqs"]
    out = {f"rqs/{k}": float(f(rqs)) if rqs.size else 0.0 for k, f in (("mean", np.mean), ("median", np.median), ("min", np.min), ("max", np.max))}
    # the task's model-level scores are means of the per-record scores
    out.update({f"json/{k}": float(col[k].mean()) if col[k].size else 0.0 for k in _JSON_SCORES[1:]})
    out.update({f"json/buckets/{b}": float(col[f"buckets/{b}"].sum()) for b in _JSON_BUCKETS})
    out.update({f"json/{k}": float(col[k].sum()) for k in _JSON_COUNTS})
    return out


# ---- structured ----------------------------------------------------------------------------

# feedback suffix → StructuredCounts field; the bool ones are the row's verdicts
_STRUCT_FLAGS = {"json_valid": "valid", "strict_json_valid": "strict_valid", "json_extracted": "extracted", "exact_match": "exact"}


def _structured_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {f"field_{k}": m[f"structured/field_{k}"] for k in ("f1", "precision", "recall")}
    c = _model(scored).counts
    out.update({k: bool(getattr(c, attr)) for k, attr in _STRUCT_FLAGS.items()})
    out.update({k: int(getattr(c, k)) for k in ("tp", "fp", "fn")})
    return out


def _structured_rationale(scored: Any) -> str:
    c = _model(scored).counts
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


# ---- toolcalls -----------------------------------------------------------------------------

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


# ---- spans ---------------------------------------------------------------------------------


def _spans_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {k: m[f"spans/exact/micro/{k}"] for k in ("f1", "precision", "recall")}
    out.update({k: int(m[f"spans/exact/micro/{k}"]) for k in ("tp", "fp", "fn")})
    return out


def _spans_rationale(scored: Any) -> str:
    ms = _model(scored)
    c = ms.exact.micro
    errs = ", ".join(f"{k.replace('_', '+')} {v}" for k, v in ms.errors.counts.items() if v)
    return f"exact match: {c.tp} correct, {c.fp} spurious, {c.fn} missed" + (f"; errors: {errs}" if errs else "")


def _spans_aggregate(col: Columns, zd: float) -> dict[str, float]:
    s = {k: float(col[k].sum()) for k in ("tp", "fp", "fn")}
    r = _ratios(s["tp"], s["fp"], s["fn"], 0, zd)
    return {**{f"spans/exact/micro/{k}": r[k] for k in ("precision", "recall", "f1")}, **{f"spans/exact/micro/{k}": v for k, v in s.items()}}


# ---- labels and entities ---------------------------------------------------------------------


def _cells(view: Any) -> tuple[int, int]:
    """(correct, cells) of a view: feature values right / feature values compared."""
    return sum(int(f.correct) for f in view.features.values()), sum(int(f.rows) for f in view.features.values())


def _verdicts(view: Any) -> str:
    return "; ".join(f"{f}: {'correct' if fm.correct == fm.rows else 'wrong'}" for f, fm in view.features.items())


def _labels_row(scored: Any, m: Mapping[str, float]) -> Row:
    v = _model(scored).strict
    correct, cells = _cells(v)
    return {"accuracy": _rate(correct, cells, 0.0), "row_correct": v.rows > 0 and v.correct_rows == v.rows, "correct": correct, "cells": cells}


def _labels_aggregate(col: Columns, zd: float) -> dict[str, float]:
    correct, cells, rows = float(col["correct"].sum()), float(col["cells"].sum()), len(col["correct"])
    ok = float(col["row_correct"].sum())
    return {"labels/micro_accuracy": _rate(correct, cells, zd), "labels/row_accuracy": _rate(ok, rows, 0.0),
            "labels/rows": float(rows), "labels/correct_rows": ok, "labels/correct": correct, "labels/cells": cells}


def _entities_row(scored: Any, m: Mapping[str, float]) -> Row:
    out: Row = {f"entity_{k}": m[f"entities/{k}_entities"] for k in ("f1", "precision", "recall")}
    correct, cells = _cells(_model(scored).strict)
    out["accuracy"] = _rate(correct, cells, 0.0)
    out.update({k: int(m[f"entities/{k}_count"]) for k in ("matched", "predicted", "gold")})
    out.update({"both_empty": int(m["entities/records_both_empty"]), "correct": correct, "cells": cells})
    return out


def _entities_rationale(scored: Any) -> str:
    p = _model(scored).presence.to_dict()
    head = f"{p['matched_count']} of {p['gold_count']} gold entities matched, {p['extra_predictions_count']} extra prediction(s)"
    verdicts = _verdicts(_model(scored).strict)
    return head + (f"; values (unmatched entities count as wrong) — {verdicts}" if verdicts else "")


def _entities_aggregate(col: Columns, zd: float) -> dict[str, float]:
    s = {k: float(col[k].sum()) for k in ("matched", "predicted", "gold", "both_empty", "correct", "cells")}
    r = _ratios(s["matched"], s["predicted"] - s["matched"], s["gold"] - s["matched"], s["both_empty"], zd)
    out = {f"entities/{k}_entities": r[k] for k in ("precision", "recall", "f1")}
    out.update({f"entities/{k}_count": s[k] for k in ("matched", "predicted", "gold")})
    out.update({"entities/records_both_empty": s["both_empty"], "entities/micro_accuracy": _rate(s["correct"], s["cells"], zd),
                "entities/correct": s["correct"], "entities/cells": s["cells"]})
    return out


# task → row spec. A task with no per-row meaning has no entry and is refused by name.
_ROW_SPECS: dict[str, _RowSpec] = {
    "fields": _RowSpec(_fields_row, _fields_rationale, ("tp", "fp", "fn", "tn"), _fields_aggregate),
    "json": _RowSpec(_json_row, _json_rationale, (*_JSON_SCORES, *(f"buckets/{b}" for b in _JSON_BUCKETS), *_JSON_COUNTS), _json_aggregate),
    "structured": _RowSpec(_structured_row, _structured_rationale, (*_STRUCT_FLAGS, "tp", "fp", "fn"), _structured_aggregate),
    "toolcalls": _RowSpec(_toolcalls_row, _toolcalls_rationale, ("call_correct", "valid_call", *_TC_COUNTS), _toolcalls_aggregate),
    "spans": _RowSpec(_spans_row, _spans_rationale, ("tp", "fp", "fn"), _spans_aggregate),
    "labels": _RowSpec(_labels_row, lambda s: _verdicts(_model(s).strict), ("correct", "cells", "row_correct"), _labels_aggregate),
    "entities": _RowSpec(_entities_row, _entities_rationale, ("matched", "predicted", "gold", "both_empty", "correct", "cells"), _entities_aggregate),
}


def scorer_tasks() -> list[str]:
    """Tasks usable as `mlflow.genai` scorers (those with a per-row meaning)."""
    from extracteval.mlflow.tasks import available_tasks

    return [t for t in available_tasks() if t in _ROW_SPECS]


def _row_spec(task: str) -> _RowSpec:
    spec = _ROW_SPECS.get(task)
    if spec is None:
        raise InputError(f"task {task!r} has no per-row meaning and cannot be an mlflow.genai scorer; supported tasks: {', '.join(scorer_tasks())}.")
    return spec


def _row_truth(expectations: Any, key: str | None) -> Any:
    if key is not None:
        if not isinstance(expectations, Mapping) or key not in expectations:
            raise InputError(f"expectations: key {key!r} is missing (found {sorted(expectations) if isinstance(expectations, Mapping) else type(expectations).__name__}).")
        return expectations[key]
    if isinstance(expectations, Mapping) and len(expectations) == 1:
        (only,) = expectations.values()
        if isinstance(only, (Mapping, str, list)):
            return only  # {"expected_response": {...}} style
    return expectations


def extraction_scorer(task: str = "fields", config: Mapping[str, Any] | None = None, *, name: str = "extracteval", expectation_key: str | None = None) -> Any:
    """An `mlflow.genai` scorer running extracteval's `task` engine on each row.

    Args:
        task: one of `scorer_tasks()` (`fields`, `json`, `structured`, `toolcalls`, `spans`,
            `labels`, `entities`); the feedback of each is listed in this module's docstring.
        config: the task's options, as for `evaluator_config` (unknown keys are rejected by name).
        name: feedback name prefix: `<name>/f1`, `<name>/exact`, `<name>/tp`, ….
        expectation_key: the key of `expectations` holding the truth; default: the only key, or
            the whole mapping (field → value).

    Raises:
        InputError: unknown task, a task without a per-row meaning, or a bad config.
    """
    from mlflow.entities import Feedback
    from mlflow.genai.scorers import scorer

    from extracteval.mlflow.evaluator import check_config
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.tasks import get_adapter

    adapter = get_adapter(task)
    spec = _row_spec(task)
    cfg = dict(config or {})
    check_config(cfg, adapter.config_keys, task)
    if "bootstrap" in adapter.config_keys:
        cfg.setdefault("bootstrap", 0)  # one row: intervals mean nothing
    adapter.build_config(cfg)  # validate once, here, not on every row

    @scorer(name=name)
    def extracteval_scorer(outputs: Any, expectations: Any) -> list[Any]:
        truth = _row_truth(expectations, expectation_key)
        scored = adapter.score_frame(ids=["row"], targets=[truth], predictions={"output": [outputs]}, config=cfg, truth_source="expectations")
        m = adapter.metrics(scored, "output", KeyMap.build(adapter.item_names(scored)))
        values = spec.row(scored, m)
        zd = scored.config.get("zero_division") if isinstance(scored.config, Mapping) else None
        # the task and zero_division travel with the primary feedback so that
        # log_micro_metrics computes the task's own aggregates without being told
        meta = {_TASK_META: task, _ZD_META: str(float(zd or 0.0))}
        out = []
        for i, (k, v) in enumerate(values.items()):
            v = bool(v) if isinstance(v, (bool, np.bool_)) else float(v) if isinstance(v, float) else int(v)
            if i == 0:
                counts = {c: str(values[c]) for c in spec.columns if c in values and not isinstance(values[c], float)}
                out.append(Feedback(name=f"{name}/{k}", value=v, rationale=spec.rationale(scored), metadata={**counts, **meta}))
            elif isinstance(v, bool):
                out.append(Feedback(name=f"{name}/{k}", value=v, rationale="yes" if v else "no"))
            else:
                out.append(Feedback(name=f"{name}/{k}", value=v))
        return out

    return extracteval_scorer


def _task_of(df: Any, name: str) -> tuple[str | None, float]:
    """The task and zero_division recorded by `extraction_scorer(name=…)` in the feedback metadata."""
    if df is None or "assessments" not in getattr(df, "columns", ()):
        return None, 0.0
    for assessments in df["assessments"]:
        for a in assessments if isinstance(assessments, list) else ():
            meta = a.get("metadata") or {} if isinstance(a, Mapping) else {}
            if str(a.get("assessment_name", "")).startswith(f"{name}/") and _TASK_META in meta:
                return str(meta[_TASK_META]), float(meta.get(_ZD_META, 0.0))
    return None, 0.0


def log_micro_metrics(result: Any, *, name: str = "extracteval", task: str | None = None, run_id: str | None = None,
                      tracking_uri: str | None = None) -> dict[str, float]:
    """Aggregate each row's feedback from an `mlflow.genai.evaluate` result into the task's
    own micro metrics and log them to its run with one `log_batch`.

    Args:
        result: what `mlflow.genai.evaluate` returned.
        name: the scorer's `name`.
        task: the scorer's task; default: read from the feedback metadata.

    Returns the metrics logged, each `<name>/<metric>` (fields: `<name>/micro/precision`, …,
    `<name>/total/tp`, …; see the module docstring for the other tasks), plus `<name>/rows` and
    `<name>/rows_scored` (rows whose scorer gave every value).
    """
    import time

    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    df = result.result_df
    found, zd = _task_of(df, name)
    task = task or found or "fields"
    spec = _row_spec(task)
    cols = {k: f"{name}/{k}/value" for k in spec.columns}
    missing = [c for c in cols.values() if df is None or c not in df.columns]
    if missing:
        raise InputError(f"the evaluation result has no {', '.join(missing)} column(s); was it run with extraction_scorer({task!r}, name={name!r})?")
    values = {k: df[c].astype(float).to_numpy(dtype=float) for k, c in cols.items()}
    # a row whose scorer failed (MLflow records the error, no value) is left out of the
    # aggregates rather than counted as zeros; `<name>/rows_scored` says how many remain
    ok = np.logical_and.reduce([np.isfinite(v) for v in values.values()]) if len(df) else np.zeros(0, dtype=bool)
    values = {k: v[ok] for k, v in values.items()}
    metrics = {f"{name}/{k}": float(v) for k, v in spec.aggregate(values, zd).items()}
    metrics[f"{name}/rows"] = float(len(df))
    metrics[f"{name}/rows_scored"] = float(ok.sum())
    rid = run_id or result.run_id
    ts = int(time.time() * 1000)
    MlflowClient(tracking_uri).log_batch(rid, metrics=[Metric(k, v, ts, 0) for k, v in sorted(metrics.items())])
    return metrics
