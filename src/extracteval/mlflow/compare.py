"""Baseline run vs candidate run, read from the tracking store: gap, fine-tuning verdict, paired interval.

gap = metric(baseline) − metric(candidate) from the runs' logged metrics (default metric: the
task's primary one, `extracteval.tasks.RANKING_SPECS`); the verdict and its wording of
`core.decision.decision_fields` (as `score --baseline/--candidate` and `compare-models`); the paired-bootstrap interval of the gap from the runs'
per-record Parquet artifacts, resampling the record ids of either run, for every metric the
task's per-record counts determine (`TaskAdapter.interval_metrics`; generic code in
mlflow/intervals.py). Otherwise the gap and verdict are reported without an interval, with a
note saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from extracteval.core.significance import SIGNIFICANT, significance
from extracteval.core.decision import DecisionThresholds, decision_fields, decision_sentence, verdict_for
from extracteval.errors import InputError

__all__ = ["RunComparison", "compare_runs"]


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    metric: str
    baseline: str
    candidate: str
    baseline_run_id: str
    candidate_run_id: str
    baseline_value: float
    candidate_value: float
    gap: float
    verdict: str
    thresholds: DecisionThresholds
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.95
    resamples: int = 0
    seed: int = 0
    n_records: int = 0
    notes: tuple[str, ...] = ()

    @property
    def interval_verdicts(self) -> tuple[str, str] | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return verdict_for(self.ci_low, self.thresholds), verdict_for(self.ci_high, self.thresholds)

    def to_dict(self) -> dict[str, Any]:
        """The decision document of `score --baseline/--candidate` and `compare-models` (same keys,
        same verdict wording), plus the run ids, `significant` and `notes`."""
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_run_id": self.baseline_run_id,
            "candidate_run_id": self.candidate_run_id,
            "baseline_value": self.baseline_value,
            "candidate_value": self.candidate_value,
            "gap": self.gap,
            **decision_fields(gap=self.gap, ci_low=self.ci_low, ci_high=self.ci_high, thresholds=self.thresholds, confidence=self.confidence),
            "ci": None if self.ci_low is None else {"low": self.ci_low, "high": self.ci_high, "confidence": self.confidence,
                                                     "resamples": self.resamples, "seed": self.seed},
            "significant": None if self.ci_low is None else significance(self.ci_low, self.ci_high) == SIGNIFICANT,
            "n_records": self.n_records,
            "thresholds": self.thresholds.to_dict(),
            "notes": list(self.notes),
        }

    def sentence(self) -> str:
        return decision_sentence(self.to_dict())


def _resolve(client: Any, ref: str, experiment: str | None) -> Any:
    """A run by id, or by run name / model tag within `experiment`."""
    import re

    from mlflow.exceptions import MlflowException

    if re.fullmatch(r"[0-9a-f]{32}", ref):
        try:
            return client.get_run(ref)
        except MlflowException as e:
            raise InputError(f"run {ref}: not found ({' '.join(str(e).split())[:200]}).") from None
    if experiment is None:
        raise InputError(f"{ref!r} is not a run id; give a run id, or --experiment NAME to look it up by run name or model.")
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise InputError(f"experiment {experiment!r} not found.")
    from extracteval.mlflow.tracking_leaderboard import _quote, search_model_runs

    found = search_model_runs(client, exp.experiment_id, filter_string=f"attributes.run_name = {_quote(ref)}")
    if not found:
        found = search_model_runs(client, exp.experiment_id, filter_string=f"tags.`extracteval.model` = {_quote(ref)}")
    if len(found) != 1:
        raise InputError(f"{ref!r}: {'no' if not found else len(found)} model runs of experiment {experiment!r} have this run name or model"
                         + ("" if not found else f" ({', '.join(r.info.run_id for r in found[:5])}); give a run id") + ".")
    return found[0]


def _logged_values(b: Any, c: Any, metric: str) -> tuple[float, float]:
    """The two runs' logged `metric`; refused when a run lacks it, or holds it undefined (NaN: a
    ratio over nothing under zero_division "nan"), since a gap to it means nothing."""
    for run in (b, c):
        if metric not in run.data.metrics:
            keys = sorted(k for k in run.data.metrics if k.count("/") <= 2)[:40]
            raise InputError(f"--metric {metric!r}: run {run.info.run_id} has no such metric; it has {', '.join(keys)}.")
    bv, cv = float(b.data.metrics[metric]), float(c.data.metrics[metric])
    undefined = [r.info.run_id for r, v in ((b, bv), (c, cv)) if math.isnan(v)]
    if undefined:
        raise InputError(f"--metric {metric!r} is undefined (NaN: a ratio whose denominator is 0, under zero_division \"nan\") in run "
                         f"{' and run '.join(undefined)}, so the gap is undefined; compare on a metric both runs define.")
    return bv, cv


def _pair_notes(b: Any, c: Any, allow_different_truth: bool) -> list[str]:
    """What the comparison of these two runs must say (different ground truth refused unless allowed)."""
    tb, tc = b.data.tags, c.data.tags
    notes: list[str] = []
    if tb.get("extracteval.truth_digest") != tc.get("extracteval.truth_digest"):
        msg = (f"the runs were scored against different ground truth (truth digests {str(tb.get('extracteval.truth_digest'))[:12]}… and "
               f"{str(tc.get('extracteval.truth_digest'))[:12]}…)")
        if not allow_different_truth:
            raise InputError(msg + "; the comparison would not be fair. Rescore one of them, or pass --allow-different-truth.")
        notes.append(msg + "; no paired interval.")
    if tb.get("extracteval.config_digest") != tc.get("extracteval.config_digest"):
        notes.append("the runs were scored with different configurations (config digests differ).")
    mb, mc = b.data.params.get("underscore_to_dot"), c.data.params.get("underscore_to_dot")
    if "true" in (mb, mc):  # BFCL toolcalls: a per-model setting, outside the config digest
        notes.append("'.' → '_' function-name mangling (param underscore_to_dot): "
                     f"baseline {'on' if mb == 'true' else 'off'}, candidate {'on' if mc == 'true' else 'off'}.")
    return notes


def _sliced_pair(task: str, runs: tuple[Any, Any], tables: tuple[Any, Any], uri: str, selector: Any, cluster_by: str | None, metric: str,
                 out: dict[str, Any], thresholds: DecisionThresholds) -> tuple[tuple[Any, Any], list[str]]:
    """The two runs' per-record counts on the slice's records (`out`'s values, gap and verdict
    recomputed from them) and summed per cluster; notes saying so."""
    from extracteval.mlflow.run_slices import check_column, clustered_table, slice_metadata, sliced_table, table_metrics

    what = f"--slice {selector}" if selector is not None else f"--cluster-by {cluster_by}"
    need = [c for c in (selector.column if selector is not None else None, cluster_by) if c]
    metas = [slice_metadata(task, r, uri, need) for r in runs]
    for r, t, meta in zip(runs, tables, metas):
        if t is None or meta is None:
            raise InputError(f"{what}: run {r.info.run_id} has no per-record counts and record metadata (it was logged without --slice-by "
                             "or --cluster-by); evaluate it again with them.")
        for col in (selector.column if selector is not None else None, cluster_by):
            if col:
                check_column(meta, col, f"{what}: run {r.info.run_id}")
    notes: list[str] = []
    if selector is not None:
        tables = tuple(sliced_table(t, meta, selector) for t, meta in zip(tables, metas))
        values = [table_metrics(task, t, [metric], r.data.params).get(metric) for r, t in zip(runs, tables)]
        if any(v is None for v in values):
            raise InputError(f"{what}: {metric!r} cannot be recomputed from the runs' per-record counts.")
        if not all(len(t.record_ids) for t in tables):
            raise InputError(f"{what}: a run has no record in this slice.")
        out.update(baseline_value=values[0], candidate_value=values[1], gap=values[0] - values[1], verdict=verdict_for(values[0] - values[1], thresholds))
        notes.append(f"on the slice {selector}: {len(tables[0].record_ids)} and {len(tables[1].record_ids)} records; values recomputed from the "
                     "runs' per-record counts.")
    if cluster_by:
        tables = tuple(clustered_table(t, meta, cluster_by) for t, meta in zip(tables, metas))
        notes.append(f"the interval resamples whole clusters of {cluster_by!r} ({max(len(t.record_ids) for t in tables)} clusters).")
    return (tables[0], tables[1]), notes


def compare_runs(
    *,
    baseline: str,
    candidate: str,
    metric: str | None = None,
    experiment: str | None = None,
    tracking_uri: str | None = None,
    thresholds: DecisionThresholds | None = None,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    allow_different_truth: bool = False,
    slice_on: Any = None,
    cluster_by: str | None = None,
) -> RunComparison:
    """The baseline-vs-candidate decision for two tracked runs; see the module docstring.
    `slice_on` (`run_slices.SliceSelector`): the gap on one slice's records, recomputed from the
    runs' per-record counts and record metadata; `cluster_by`: the interval resamples whole clusters."""
    from mlflow.tracking import MlflowClient

    from extracteval.tasks import RANKING_SPECS
    from extracteval.mlflow.upload import store_uri

    thresholds = thresholds or DecisionThresholds()
    uri = store_uri(tracking_uri)
    client = MlflowClient(tracking_uri=uri)
    b, c = _resolve(client, baseline, experiment), _resolve(client, candidate, experiment)
    if b.info.run_id == c.info.run_id:
        raise InputError(f"--baseline and --candidate are the same run ({b.info.run_id}); pick two different runs.")
    tb, tc = b.data.tags, c.data.tags
    task_b, task_c = tb.get("extracteval.task"), tc.get("extracteval.task")
    if task_b != task_c:
        raise InputError(f"the runs are of different tasks ({task_b!r} and {task_c!r}); compare runs of one task.")
    notes = _pair_notes(b, c, allow_different_truth)
    spec = RANKING_SPECS.get(str(task_b))
    metric = metric or (spec.primary if spec else "overall/f1")
    bv, cv = _logged_values(b, c, metric)
    gap = bv - cv
    name = lambda r: r.data.tags.get("extracteval.model") or r.info.run_name or r.info.run_id  # noqa: E731
    out = dict(metric=metric, baseline=name(b), candidate=name(c), baseline_run_id=b.info.run_id, candidate_run_id=c.info.run_id,
               baseline_value=bv, candidate_value=cv, gap=gap, verdict=verdict_for(gap, thresholds), thresholds=thresholds,
               confidence=confidence, seed=seed)
    if notes and "no paired interval" in notes[-1]:
        if slice_on is not None or cluster_by:
            raise InputError(notes[-1].replace("; no paired interval.", "") + ": a slice or clusters need the same records in both runs.")
        return RunComparison(**out, notes=tuple(notes))
    from extracteval.mlflow.intervals import paired_intervals, read_run_counts
    from extracteval.mlflow.adapters import get_adapter

    tb_, tc_ = (read_run_counts(str(task_b), r.info.artifact_uri, r.data.params, uri) for r in (b, c))
    if slice_on is not None or cluster_by:
        (tb_, tc_), more = _sliced_pair(str(task_b), (b, c), (tb_, tc_), uri, slice_on, cluster_by, metric, out, thresholds)
        notes += more
        gap = out["gap"]
    if tb_ is None or tc_ is None:
        notes.append("no paired interval: a run's per-record artifact (extracteval/records.parquet) is absent or lacks the per-record "
                     "counts (a run logged by an earlier version).")
        return RunComparison(**out, notes=tuple(notes))
    res = paired_intervals(str(task_b), metric, {"b": tb_, "c": tc_}, [("b", "c")], b.data.params, resamples=resamples, confidence=confidence, seed=seed)
    if res is None:
        notes.append(f"no paired interval: {metric!r} cannot be recomputed from per-record counts; for {task_b} runs these can: "
                     f"{', '.join(get_adapter(str(task_b)).interval_metrics)}.")
        return RunComparison(**out, notes=tuple(notes))
    iv = res.pairs[("b", "c")]
    if math.isnan(iv.low) or math.isnan(iv.high):
        notes.append(f"no paired interval: {metric!r} is undefined (NaN) in more than half of the resamples of one run.")
        return RunComparison(**out, n_records=res.n_records, notes=tuple(notes))
    if not math.isclose(iv.estimate, gap, abs_tol=1e-9):
        notes.append(f"the per-record counts give a gap of {iv.estimate:.6f} on {res.n_records} records "
                     f"(logged metrics: {gap:.6f}); the interval is of these counts.")
    return RunComparison(**out, ci_low=iv.low, ci_high=iv.high, resamples=iv.resamples, n_records=res.n_records, notes=tuple(notes))
