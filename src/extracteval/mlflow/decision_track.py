"""The MLflow side the `structured` and `toolcalls` adapters share: one experiment's track settings
(`track_spec`), the baseline-vs-candidate decision as metrics, params, a table and report
sections, raw outputs written for rescore, and `DecisionTrackAdapter`, the base of both adapters
(per-record count sums and verdicts from which every interval metric is computed again)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.mlflow.predictions_file import CellPredictions, write_prediction_cells
from extracteval.mlflow.adapter_parts import logged_record_table
from extracteval.mlflow.adapters import Section

__all__ = ["track_spec", "decision_namespace", "decision_metrics", "decision_params", "decision_table", "decision_sections", "percent_table",
           "plain", "write_raw_outputs", "DecisionTrackAdapter"]


def track_spec(folder: Path, spec: Mapping[str, Any], track: str) -> dict[str, Any]:
    """The settings of one track (`structured` or `toolcalls`) from an experiment.yaml.

    A `structured+toolcalls` experiment has `tracks: {structured: {…}, toolcalls: {…}}` and one
    `decision:` (baseline, candidate, `metrics: {track: metric}`) for both; an experiment of a
    single task has its settings at the top level. Returns the track's settings with its
    `decision` (metric chosen for this track).
    """
    tracks = spec.get("tracks")
    if tracks is None:
        return dict(spec)
    if not isinstance(tracks, Mapping) or track not in tracks:
        raise InputError(f"{folder}/experiment.yaml: no `tracks: {track}:` entry; found {sorted(tracks) if isinstance(tracks, Mapping) else type(tracks).__name__}.")
    sub = dict(tracks[track])
    dec = dict(spec.get("decision") or {})
    metrics = dec.pop("metrics", None) or {}
    if track in metrics:
        dec["metric"] = metrics[track]
    sub.setdefault("decision", dec)
    return sub


def decision_namespace(dec: Mapping[str, Any]) -> argparse.Namespace:
    """The `--baseline/--candidate/…` arguments from an experiment's `decision:` block."""
    return argparse.Namespace(
        baseline=dec.get("baseline"), candidate=dec.get("candidate"), decision_metric=dec.get("metric"),
        recommend_threshold=float(dec.get("recommend_threshold", 0.15)), moderate_threshold=float(dec.get("moderate_threshold", 0.05)),
        resamples=int(dec.get("resamples", 1000)), seed=int(dec.get("seed", 0)),
    )


def decision_metrics(doc: Mapping[str, Any]) -> dict[str, float]:
    """`decision/…` metrics of the parent run (empty when no baseline/candidate was named)."""
    from extracteval.core.decision import decision_metrics as metrics

    d = doc.get("decision")
    return metrics(d) if d else {}


def decision_params(doc: Mapping[str, Any]) -> dict[str, str]:
    d = doc.get("decision")
    if not d:
        return {}
    return {
        "decision.baseline": str(d["baseline"]),
        "decision.candidate": str(d["candidate"]),
        "decision.metric": str(d["metric"]),
        "decision.verdict": str(d["verdict"]),
        "decision.recommend_threshold": str(d["thresholds"]["recommend"]),
        "decision.moderate_threshold": str(d["thresholds"]["moderate"]),
        "decision.resamples": str(d["ci"]["resamples"]),
        "decision.seed": str(d["ci"]["seed"]),
    }


def decision_table(doc: Mapping[str, Any]) -> pd.DataFrame | None:
    d = doc.get("decision")
    if not d:
        return None
    return pd.DataFrame([{
        "metric": d["metric"], "baseline": d["baseline"], "candidate": d["candidate"], "baseline_value": d["baseline_value"],
        "candidate_value": d["candidate_value"], "gap": d["gap"], "ci_low": d["ci"]["low"], "ci_high": d["ci"]["high"],
        "confidence": d["ci"]["confidence"], "verdict": d["verdict"], "gap_band": d["gap_band"], "verdict_settled": d["verdict_settled"],
        "fine_tuning_recommended": d["fine_tuning_recommended"],
        "verdict_range": " → ".join(d["verdict_range"]), "recommend_threshold": d["thresholds"]["recommend"],
        "moderate_threshold": d["thresholds"]["moderate"], "n_records": d["n_records"],
    }])


def decision_sections(doc: Mapping[str, Any]) -> list[Section]:
    d = doc.get("decision")
    if not d:
        return []
    from extracteval.core.decision import render_decision

    return [Section(title="Baseline vs candidate decision", items=render_decision(d).splitlines())]


def percent_table(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """A copy with these ratio columns as `97.1%` text (for the HTML report)."""
    out = frame.copy()
    for c in columns:
        if c in out.columns:
            out[c] = [None if v is None or (isinstance(v, float) and np.isnan(v)) else f"{100 * float(v):.1f}%" for v in out[c]]
    return out


def plain(value: Any) -> Any:
    """A DataFrame cell as plain Python (numpy arrays and scalars from Parquet become lists /
    numbers). A document nested deeper than the recursion limit is returned as it is (the
    scorers walk it iteratively)."""
    try:
        return _plain(value)
    except RecursionError:
        return value


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_raw_outputs(outputs: Mapping[str, Any] | None, path: Any) -> bool:
    """Write one model's raw outputs (record id → output as scored) as prediction cells; False
    when they were not kept."""
    if outputs is None:
        return False
    write_prediction_cells({str(r): v for r, v in outputs.items()}, path)
    return True


class DecisionTrackAdapter(CellPredictions):
    """What the `structured` and `toolcalls` adapters share: per record, counts summed over the
    record (`count_sums`) and 0/1 verdicts (`count_flags`) in the order of the task's counts
    class (`counts_class`: module and name, imported when needed), from which every metric of
    `interval_metrics` is computed again."""

    count_sums: tuple[str, ...]
    count_flags: tuple[str, ...]
    counts_class: tuple[str, str]

    def counts_order(self) -> list[str]:
        from dataclasses import fields
        from importlib import import_module

        module, name = self.counts_class
        return [f.name for f in fields(getattr(import_module(module), name))]

    # the per-record count (or counts, summed) that is a record's size, and what it counts
    size_counts: tuple[tuple[str, ...], str] = (("tp", "fn"), "reference fields")

    record_table = logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: its size as `size_counts` declares it."""
        from extracteval.mlflow.intervals import record_sizes_of

        return record_sizes_of(path, self.size_counts[0], self.size_counts[1])

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        from extracteval.mlflow.intervals import decision_count_table

        return decision_count_table(path, self.count_sums, self.count_flags, order=self.counts_order())

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        from extracteval.mlflow.intervals import decision_count_metric

        from extracteval.tasks import task_module

        if metric not in self.interval_metrics:
            return None
        return decision_count_metric(f"{self.task}/", metric, columns, params, count_map=task_module(self.task, "metrics"))
