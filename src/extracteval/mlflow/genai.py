"""The scoring engine as `mlflow.genai` scorers: per-row feedback, micro metrics afterwards.

For users on `mlflow.genai.evaluate`, each row's model output is scored against its
expectations with exactly the task's engine, and returned as feedback: the row's F1, whether the
row is fully correct, and its confusion counts (with a rationale naming each item's verdict).
`mlflow.genai.evaluate` averages each feedback over rows; the micro metrics — ratios of the
*summed* counts, which an average of per-row F1 is not — are logged to the run afterwards by
`log_micro_metrics`.

Example:
    >>> import mlflow                                               # doctest: +SKIP
    >>> from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics
    >>> s = extraction_scorer("fields", {"strategies": {"vendor": "FUZZY"}})
    >>> result = mlflow.genai.evaluate(data=rows, scorers=[s])      # rows: inputs/outputs/expectations
    >>> log_micro_metrics(result)                                   # micro P/R/F1 on the same run
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extracteval.errors import InputError

__all__ = ["extraction_scorer", "log_micro_metrics", "COUNT_FEEDBACK"]

COUNT_FEEDBACK = ("tp", "fp", "fn", "tn")


def _row_truth(expectations: Any, key: str | None) -> Any:
    if key is not None:
        if not isinstance(expectations, Mapping) or key not in expectations:
            raise InputError(f"expectations: key {key!r} is missing (found {sorted(expectations) if isinstance(expectations, Mapping) else type(expectations).__name__}).")
        return expectations[key]
    if isinstance(expectations, Mapping) and len(expectations) == 1:
        (only,) = expectations.values()
        if isinstance(only, (Mapping, str)):
            return only  # {"expected_response": {...}} style
    return expectations


def extraction_scorer(task: str = "fields", config: Mapping[str, Any] | None = None, *, name: str = "extracteval", expectation_key: str | None = None) -> Any:
    """An `mlflow.genai` scorer running extracteval's `task` engine on each row.

    Args:
        task: task name (`fields`, …).
        config: the task's options, as for `evaluator_config` (unknown keys are rejected by name).
        name: feedback name prefix: `<name>/f1`, `<name>/exact`, `<name>/tp`, ….
        expectation_key: the key of `expectations` holding the truth; default: the only key, or
            the whole mapping (field → value).
    """
    from mlflow.entities import Feedback
    from mlflow.genai.scorers import scorer

    from extracteval.mlflow.evaluator import check_config
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.tasks import get_adapter

    adapter = get_adapter(task)
    cfg = dict(config or {})
    check_config(cfg, adapter.config_keys, task)
    cfg.setdefault("bootstrap", 0)  # one row: intervals mean nothing
    adapter.build_config(cfg)  # validate once, here, not on every row

    @scorer(name=name)
    def extracteval_scorer(outputs: Any, expectations: Any) -> list[Any]:
        truth = _row_truth(expectations, expectation_key)
        scored = adapter.score_frame(ids=["row"], targets=[truth], predictions={"output": [outputs]}, config=cfg, truth_source="expectations")
        keys = KeyMap.build(adapter.item_names(scored))
        m = adapter.metrics(scored, "output", keys)
        rationale = adapter.row_rationale(scored, "output") if hasattr(adapter, "row_rationale") else ""
        counts = {k: int(m.get(f"totals/{k}", 0)) for k in COUNT_FEEDBACK}
        exact = counts["fp"] == 0 and counts["fn"] == 0
        out = [
            Feedback(name=f"{name}/f1", value=float(m["micro/f1"]), rationale=rationale, metadata={k: str(v) for k, v in counts.items()}),
            Feedback(name=f"{name}/exact", value=exact, rationale="every item correct" if exact else "at least one item wrong or missing"),
        ]
        out += [Feedback(name=f"{name}/{k}", value=v) for k, v in counts.items()]
        return out

    return extracteval_scorer


def log_micro_metrics(result: Any, *, name: str = "extracteval", run_id: str | None = None, tracking_uri: str | None = None) -> dict[str, float]:
    """Sum each row's counts from an `mlflow.genai.evaluate` result and log micro
    precision/recall/F1 (and the summed counts) to its run with one `log_batch`.

    Returns the metrics logged (`<name>/micro/precision`, …, `<name>/total/tp`, …).
    """
    import time

    import numpy as np
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from extracteval.core.counts import ratios

    df = result.result_df
    cols = {k: f"{name}/{k}/value" for k in COUNT_FEEDBACK}
    missing = [c for c in cols.values() if df is None or c not in df.columns]
    if missing:
        raise InputError(f"the evaluation result has no {', '.join(missing)} column(s); was it run with extraction_scorer(name={name!r})?")
    sums = {k: int(np.nansum(df[c].to_numpy(dtype=float))) for k, c in cols.items()}
    r = ratios(sums["tp"], sums["fp"], sums["fn"], sums["tn"])
    metrics = {f"{name}/micro/{k}": float(r[k]) for k in ("precision", "recall", "f1", "accuracy")}
    metrics.update({f"{name}/total/{k}": float(v) for k, v in sums.items()})
    metrics[f"{name}/rows"] = float(len(df))
    rid = run_id or result.run_id
    ts = int(time.time() * 1000)
    MlflowClient(tracking_uri).log_batch(rid, metrics=[Metric(k, v, ts, 0) for k, v in sorted(metrics.items())])
    return metrics
