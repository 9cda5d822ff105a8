"""Baseline run vs candidate run, read from the tracking store (SPEC §8 decision, §10).

gap = metric(baseline) − metric(candidate) from the runs' logged metrics; the verdict bands of
seed 004 (`core.decision.verdict_for`); the paired-bootstrap interval of the gap from the runs'
per-record Parquet artifacts, resampling the record ids both runs share:
- `fields` runs compared on overall/f1 (macro) or micro/f1: from the per-record tp/fp/fn/tn of
  every field (`core.bootstrap.bootstrap_macro_f1`);
- runs whose per-record artifact holds the count columns of a `core.decision` metric
  (`call_accuracy`, `exact_match_rate`, `args_f1`, …, matched by the metric key's last part;
  boolean flags such as `correct`/`exact` are read as 0/1 counts, see `_decision_counts`):
  `core.decision.decide` on those counts.
Otherwise the gap and verdict are reported without an interval, with a note saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from extracteval.core.decision import DecisionThresholds, verdict_for
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
        iv = self.interval_verdicts
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_run_id": self.baseline_run_id,
            "candidate_run_id": self.candidate_run_id,
            "baseline_value": self.baseline_value,
            "candidate_value": self.candidate_value,
            "gap": self.gap,
            "verdict": self.verdict,
            "fine_tuning_recommended": self.verdict == "fine-tuning recommended",
            "candidate_better": self.gap < 0,
            "ci": None if self.ci_low is None else {"low": self.ci_low, "high": self.ci_high, "confidence": self.confidence,
                                                     "resamples": self.resamples, "seed": self.seed},
            "significant": None if self.ci_low is None else not (self.ci_low <= 0.0 <= self.ci_high),
            "verdict_settled": None if iv is None else iv[0] == iv[1],
            "verdict_range": None if iv is None else list(iv),
            "n_records": self.n_records,
            "thresholds": self.thresholds.to_dict(),
            "notes": list(self.notes),
        }

    def sentence(self) -> str:
        pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
        ci = "" if self.ci_low is None else f", {int(round(100 * self.confidence))}% CI [{pct(self.ci_low)}, {pct(self.ci_high)}]"
        iv = self.interval_verdicts
        spans = "" if iv is None or iv[0] == iv[1] else f" (the interval spans {' → '.join(iv)})"
        better = "; the candidate is better" if self.gap < 0 else ""
        return (f"{self.metric}: {self.baseline} {pct(self.baseline_value)}% vs {self.candidate} {pct(self.candidate_value)}%, "
                f"gap {pct(self.gap)} points{ci} → {self.verdict}{spans}{better}")


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
    from extracteval.mlflow.leaderboard import _quote, search_model_runs

    found = search_model_runs(client, exp.experiment_id, filter_string=f"attributes.run_name = {_quote(ref)}")
    if not found:
        found = search_model_runs(client, exp.experiment_id, filter_string=f"tags.`extracteval.model` = {_quote(ref)}")
    if len(found) != 1:
        raise InputError(f"{ref!r}: {'no' if not found else len(found)} model runs of experiment {experiment!r} have this run name or model"
                         + ("" if not found else f" ({', '.join(r.info.run_id for r in found[:5])}); give a run id") + ".")
    return found[0]


def _records(run: Any, uri: str) -> Any:
    import tempfile

    import pandas as pd

    from extracteval.mlflow.leaderboard import RECORDS_ARTIFACT, _download

    with tempfile.TemporaryDirectory(prefix="extracteval-compare-") as d:
        p = _download(run.info.artifact_uri, RECORDS_ARTIFACT, uri, d)
        if p is None or not p.is_file():
            return None
        return pd.read_parquet(p)


def _is_count(col: Any) -> bool:
    """A numeric, non-boolean column. Pandas' own test: under pandas 3 text columns are
    `StringDtype`, which `np.issubdtype` cannot interpret (it raised a TypeError here)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return is_numeric_dtype(col.dtype) and not is_bool_dtype(col.dtype)


# per-record flag column of the records artifact → the `core.decision` count column(s) it makes
# (toolcalls: valid/correct per record; structured: valid/extracted/exact per record)
_FLAG_COUNTS = {"valid": ("valid", "valid_records"), "correct": ("correct_records",), "exact": ("exact",), "extracted": ("extracted",)}


def _decision_counts(frame: Any) -> Any:
    """The per-record count columns `core.decision` recomputes its metrics from: the artifact's
    numeric columns as they are, `records` (1 per row) and its boolean flags as 0/1 counts under
    the decision's names (`correct` → `correct_records`, …; `strict_valid` = valid and not
    extracted). Without these, rates like call_accuracy and exact_match_rate had no interval."""
    import pandas as pd
    from pandas.api.types import is_bool_dtype

    cols: dict[str, Any] = {c: frame[c].to_numpy() for c in frame.columns if c != "record_id" and _is_count(frame[c])}
    cols["records"] = 1
    flags = {c: frame[c].to_numpy(dtype=bool) for c in _FLAG_COUNTS if c in frame.columns and is_bool_dtype(frame[c].dtype)}
    for c, arr in flags.items():
        for name in _FLAG_COUNTS[c]:
            cols.setdefault(name, arr.astype("int64"))
    if "valid" in flags and "extracted" in flags:
        cols.setdefault("strict_valid", (flags["valid"] & ~flags["extracted"]).astype("int64"))
    return pd.DataFrame(cols, index=frame.index)


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
) -> RunComparison:
    """The seed-004 decision for two tracked runs; see the module docstring."""
    from mlflow.tracking import MlflowClient

    from extracteval.core.leaderboard import RANKING_SPECS
    from extracteval.mlflow.upload import default_tracking_uri

    thresholds = thresholds or DecisionThresholds()
    uri = tracking_uri or default_tracking_uri()
    client = MlflowClient(tracking_uri=uri)
    b, c = _resolve(client, baseline, experiment), _resolve(client, candidate, experiment)
    if b.info.run_id == c.info.run_id:
        raise InputError(f"--baseline and --candidate are the same run ({b.info.run_id}); pick two different runs.")
    tb, tc = b.data.tags, c.data.tags
    task_b, task_c = tb.get("extracteval.task"), tc.get("extracteval.task")
    if task_b != task_c:
        raise InputError(f"the runs are of different tasks ({task_b!r} and {task_c!r}); compare runs of one task.")
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
    spec = RANKING_SPECS.get(str(task_b))
    metric = metric or (spec.primary if spec else "overall/f1")
    for run in (b, c):
        if metric not in run.data.metrics:
            keys = sorted(k for k in run.data.metrics if k.count("/") <= 2)[:40]
            raise InputError(f"--metric {metric!r}: run {run.info.run_id} has no such metric; it has {', '.join(keys)}.")
    bv, cv = float(b.data.metrics[metric]), float(c.data.metrics[metric])
    gap = bv - cv
    name = lambda r: r.data.tags.get("extracteval.model") or r.info.run_name or r.info.run_id  # noqa: E731
    out = dict(metric=metric, baseline=name(b), candidate=name(c), baseline_run_id=b.info.run_id, candidate_run_id=c.info.run_id,
               baseline_value=bv, candidate_value=cv, gap=gap, verdict=verdict_for(gap, thresholds), thresholds=thresholds,
               confidence=confidence, seed=seed)
    if notes and "no paired interval" in notes[-1]:
        return RunComparison(**out, notes=tuple(notes))
    fb, fc = _records(b, uri), _records(c, uri)
    if fb is None or fc is None:
        notes.append("no paired interval: a run has no per-record artifact (extracteval/records.parquet).")
        return RunComparison(**out, notes=tuple(notes))
    zd = 0.0
    try:
        zd = float(b.data.params.get("zero_division", 0.0))
    except ValueError:
        pass
    if task_b == "fields" and metric in ("overall/f1", "micro/f1") and {"record_id", "field", "tp", "fp", "fn", "tn"} <= set(fb.columns) & set(fc.columns):
        from extracteval.core.bootstrap import bootstrap_macro_f1
        from extracteval.core.leaderboard import paired_record_matrix

        rec, arrays = paired_record_matrix({"b": fb, "c": fc})
        if metric == "micro/f1":
            arrays = {k: a.sum(axis=1, keepdims=True) for k, a in arrays.items()}
        _, diffs = bootstrap_macro_f1(arrays, [("b", "c")], resamples=resamples, confidence=confidence, seed=seed, zero_division=zd)
        iv = diffs[("b", "c")]
        if not math.isclose(iv.estimate, gap, abs_tol=1e-9):
            notes.append(f"the per-record artifacts give a gap of {iv.estimate:.6f} on the {len(rec)} shared records "
                         f"(logged metrics: {gap:.6f}); the interval is of the shared records.")
        return RunComparison(**out, ci_low=iv.low, ci_high=iv.high, resamples=iv.resamples, n_records=len(rec), notes=tuple(notes))
    from extracteval.core.decision import METRICS, decide

    leaf = metric.rsplit("/", 1)[-1]
    if leaf not in METRICS or "record_id" not in fb.columns or "record_id" not in fc.columns:
        notes.append(f"no paired interval: {metric!r} cannot be recomputed from the runs' per-record artifacts.")
        return RunComparison(**out, notes=tuple(notes))
    cb, cc = _decision_counts(fb), _decision_counts(fc)
    num = [col for col in cb.columns if col in cc.columns]
    gb = cb.groupby(fb["record_id"].astype(str))[num].sum()
    gc = cc.groupby(fc["record_id"].astype(str))[num].sum()
    shared = sorted(set(gb.index) & set(gc.index))
    try:
        d = decide(tuple(num), gb.loc[shared].to_numpy(), gc.loc[shared].to_numpy(), metric=leaf, baseline=out["baseline"], candidate=out["candidate"],
                   thresholds=thresholds, resamples=resamples, seed=seed, confidence=confidence, zero_division=zd)
    except InputError as e:
        notes.append(f"no paired interval: {e}")
        return RunComparison(**out, notes=tuple(notes))
    if not math.isclose(d.gap, gap, abs_tol=1e-9):
        notes.append(f"the per-record artifacts give a gap of {d.gap:.6f} on the {d.n_records} shared records "
                     f"(logged metrics: {gap:.6f}); the interval is of the shared records.")
    return RunComparison(**out, ci_low=d.ci_low, ci_high=d.ci_high, resamples=d.resamples, n_records=d.n_records, notes=tuple(notes))
