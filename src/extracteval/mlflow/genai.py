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
in its package (`ROWS` in `tasks/<task>/scorer.py`); until then `extraction_scorer` refuses it by name.

Examples:
    >>> import mlflow                                               # doctest: +SKIP
    >>> from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics
    >>> s = extraction_scorer("fields", {"strategies": {"vendor": "FUZZY"}})
    >>> result = mlflow.genai.evaluate(data=rows, scorers=[s])      # rows: inputs/outputs/expectations
    >>> log_micro_metrics(result)                                   # micro P/R/F1 on the same run
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from extracteval.errors import InputError
from extracteval.mlflow.genai_rows import RowSpec

__all__ = ["extraction_scorer", "log_micro_metrics", "scorer_tasks"]

_TASK_META = "extracteval.task"
_ZD_META = "extracteval.zero_division"

def _row_specs() -> dict[str, RowSpec]:
    """Task → its row spec (`ROWS` in the task's `scorer` module); a task without one has no
    per-row meaning and is refused by name."""
    from extracteval.tasks import parts

    return {task: module.ROWS for task, module in parts("scorer").items()}




def scorer_tasks() -> list[str]:
    """Tasks usable as `mlflow.genai` scorers (those with a per-row meaning)."""
    from extracteval.mlflow.adapters import available_tasks

    return [t for t in available_tasks() if t in _row_specs()]


def _row_spec(task: str) -> RowSpec:
    spec = _row_specs().get(task)
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
    from extracteval.mlflow.adapters import get_adapter

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
        meta = {_TASK_META: task, _ZD_META: _zd_text(zd)}
        out = []
        # an undefined value (NaN under zero_division "nan": a ratio over nothing in this row) is no
        # feedback: MLflow's mean of that feedback is then over the rows where it is defined
        defined = {k: v for k, v in values.items() if not (isinstance(v, float) and v != v)}
        for i, (k, v) in enumerate(defined.items()):
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


def _zd_text(zd: Any) -> str:
    """The scorer's zero_division as its feedback metadata holds it: `nan`, or the number as a float's text."""
    return "nan" if isinstance(zd, str) and zd.strip().lower() == "nan" or isinstance(zd, float) and zd != zd else str(float(zd or 0.0))


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
