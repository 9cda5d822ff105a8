"""The paired bootstrap of an evaluation whose task does not compute one while scoring.

`fields` and `spans` resample records while they score and put each model's interval and each
adjacent pair's difference in their result document. For every other task, an evaluation logged
to MLflow gets them here, by the very code a cross-run leaderboard uses on the logged runs: each
model's per-record counts as its task reads them from the per-record artifact
(`TaskAdapter.record_counts`), its primary metric recomputed from each resample's sums
(`TaskAdapter.count_metric`), 1,000 resamples drawn with the same seed for every model
(`mlflow.intervals.paired_intervals`). So the parent run, its model runs and a later leaderboard of
the same runs give the same intervals and the same verdicts (`core.bootstrap.significance`).

What it adds to the document a run logs (`result.json`, `evaluate --json`; `score` prints the
task's own document):

- `intervals`: `{"metric": <primary>, "models": {model: {estimate, low, high, confidence, resamples}}}`;
- `comparisons`: one entry per adjacent pair of the ranking, as `fields` writes them
  (`higher`, `lower`, `difference`, `significant`, `verdict`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

__all__ = ["needs_significance", "records_source", "add_significance", "ensure_significance", "logged_doc", "interval_metrics"]

RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 0


def needs_significance(doc: Mapping[str, Any]) -> bool:
    """True when the result document has neither adjacent-rank comparisons nor intervals yet."""
    return "comparisons" not in doc and "intervals" not in doc


def records_source(frame: Any) -> Any:
    """A per-record table as the Parquet bytes its artifact holds (`pyarrow.Buffer`): what a
    task's `record_counts` reads, and what is then written to the run's `records.parquet`."""
    import pyarrow as pa

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return pa.py_buffer(buf.getvalue())


def add_significance(doc: dict[str, Any], task: str, adapter: Any, models: list[str], sources: Mapping[str, Any],
                     params: Mapping[str, str]) -> bool:
    """Add `intervals` and `comparisons` to `doc` from each model's per-record artifact
    (`sources`: model → path or Parquet bytes); False, leaving `doc` as it was, when a model has
    no per-record counts or they do not determine the task's primary metric."""
    from extracteval.core.bootstrap import comparison_entry
    from extracteval.mlflow.intervals import paired_intervals
    from extracteval.tasks import ranking_spec

    if not models or set(models) - set(sources):
        return False
    tables = {m: adapter.record_counts(sources[m], params) for m in models}
    if any(t is None for t in tables.values()):
        return False
    metric = ranking_spec(task).primary
    pairs = list(zip(models[:-1], models[1:]))
    res = paired_intervals(task, metric, tables, pairs, params, resamples=RESAMPLES, confidence=CONFIDENCE, seed=SEED)
    if res is None:
        return False
    doc["intervals"] = {"metric": metric, "method": "paired bootstrap over records", "seed": SEED,
                        "models": {m: res.per_run[m].to_dict() for m in models}}
    doc["comparisons"] = [comparison_entry(a, b, res.pairs[(a, b)]) for a, b in pairs]
    return True


def ensure_significance(scored: Any, adapter: Any) -> dict[str, Any]:
    """Resample the records of an evaluation whose task did not while scoring (once per
    evaluation; every door that logs it, or gives the metrics its runs get, calls this), from each
    model's per-record table: the file a streaming engine wrote, else the task's `counts_frame`,
    else its `records_frame` as Parquet bytes. The result is kept with the evaluation
    (`logged_doc` adds it to the logged document); returns the Parquet bytes by model of the
    tables that are the runs' `records.parquet`."""
    cached = scored.cache.get(_BYTES)
    if cached is not None:
        return cached
    record_bytes: dict[str, Any] = {}
    scored.cache[_BYTES] = record_bytes
    if not needs_significance(scored.doc):  # fields and spans: their engines resampled (or were told not to)
        return record_bytes
    streamed = scored.cache.get("streamed_files", {})
    # a task may give just the columns its `record_counts` reads, cheaper than its whole artifact
    counts_frame = getattr(adapter, "counts_frame", None)
    sources: dict[str, Any] = {}
    for m in scored.models:
        if (m, "records.parquet") in streamed:
            sources[m] = streamed[(m, "records.parquet")]
            continue
        if counts_frame is not None:
            sources[m] = records_source(counts_frame(scored, m))
            continue
        frame = adapter.records_frame(scored, m)
        if frame is None:
            return record_bytes
        sources[m] = record_bytes[m] = records_source(frame)
    found: dict[str, Any] = {}
    if add_significance(found, scored.task, adapter, list(scored.models), sources, adapter.params(scored)):
        scored.cache[_FOUND] = found
    return record_bytes


def logged_doc(scored: Any) -> dict[str, Any]:
    """The evaluation's document as its runs log it: the task's, with the `intervals` and
    `comparisons` of `ensure_significance` when it found them."""
    found = scored.cache.get(_FOUND)
    return {**scored.doc, **found} if found else scored.doc


_BYTES = "significance_record_bytes"
_FOUND = "significance"


def interval_metrics(doc: Mapping[str, Any], model: str, primary: str) -> dict[str, float]:
    """`<folder of the primary metric>/ci_low|ci_high` of `model` from the document's `intervals`
    (`structured/ci_low` for `structured/field_f1`), as `fields` logs `overall/ci_low`; empty
    when the document has none for it."""
    import posixpath

    iv = ((doc.get("intervals") or {}).get("models") or {}).get(model)
    if not isinstance(iv, Mapping) or (doc.get("intervals") or {}).get("metric") != primary:
        return {}
    base = posixpath.dirname(primary)
    return {f"{base}/ci_low": float(iv["low"]), f"{base}/ci_high": float(iv["high"])}
