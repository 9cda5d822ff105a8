"""The local copy of an evaluation, written in full before anything is uploaded.

A bundle is a folder holding everything the tracking store will receive: the plan of runs
(one run, or a parent comparison run and one child per model), each run's metrics, params,
tags, artifacts, tables and figures, and the ground-truth dataset description. Uploading
reads only the bundle, so a failed upload can be completed later with
`extracteval evaluate --resume-from DIR` without scoring again.

Layout::

    DIR/manifest.json                 plan: experiment, runs (key, role, parent, name, tags, params)
    DIR/state.json                    upload progress: run ids created, status, last error
    DIR/runs/<key>/metrics.json       {metric key: value}
    DIR/runs/<key>/artifacts/…        uploaded as is, in one call (extracteval/result.json,
                                      report.html, CSV, Parquet, figures/*.png)
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.core import strict_json
from extracteval import __version__
from extracteval.errors import InputError
from extracteval.io.config import safe_file_name
from extracteval.io.outputs import check_output_folder, staged_folder, write_csv
from extracteval.mlflow.early import settled
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.significance import ensure_significance, logged_doc
from extracteval.core.ranking import RankingSpec
from extracteval.tasks import ranking_spec
from extracteval.mlflow.adapters import Scored, Section, TaskAdapter
from extracteval.report.console import json_default

__all__ = ["Bundle", "RunPlan", "COMPARISON_FIGURES", "write_bundle", "load_bundle", "truth_digest", "config_digest", "BUNDLE_FORMAT"]

BUNDLE_FORMAT = "extracteval-mlflow-bundle/1"
NOTE_TAG = "mlflow.note.content"  # the run description shown by the MLflow UI
MAX_PARAM_LENGTH = 6000
MAX_TAG_LENGTH = 8000
SINGLE_RUN_UNRANKED = "ranking/rank"  # the task's rank among the models scored together: not logged for a run of one model


def _dumps(obj: Any, **kw: Any) -> str:
    return strict_json.dumps(obj, ensure_ascii=False, default=json_default, **kw)


def truth_digest(truth: Any, *, known: Mapping[str, tuple[Any, Any]] | None = None) -> str:
    """SHA-256 of the ground truth's canonical content: rows sorted by id, columns by name, each
    cell absent, text or JSON (`extracteval.core.digest` defines it). Independent of row and
    column order in the input file, and the same when computed from chunks streamed in id order."""
    from extracteval.core.digest import truth_digest as digest

    return digest(truth, known=known)


def config_digest(config: Mapping[str, Any]) -> str:
    """SHA-256 of the configuration as canonical JSON (sorted keys)."""
    return hashlib.sha256(_dumps(config, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    key: str  # `single`, `parent`, `model-1`, …
    role: str  # `single`, `comparison`, `model`
    run_name: str
    parent: str | None
    model: str | None
    tags: Mapping[str, str]
    params: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "role": self.role, "run_name": self.run_name, "parent": self.parent, "model": self.model,
                "tags": dict(self.tags), "params": dict(self.params)}


@dataclass(frozen=True, kw_only=True)
class Bundle:
    path: Path
    manifest: Mapping[str, Any]

    @property
    def runs(self) -> list[RunPlan]:
        return [RunPlan(**r) for r in self.manifest["runs"]]

    def run_dir(self, key: str) -> Path:
        return self.path / "runs" / key

    def metrics(self, key: str) -> dict[str, float]:
        """The run's metrics; an undefined one (`null` in metrics.json) is NaN, as MLflow logs it."""
        got = json.loads((self.run_dir(key) / "metrics.json").read_text(encoding="utf-8"))
        return {k: strict_json.from_json_number(v) for k, v in got.items()}

    def read_state(self) -> dict[str, Any]:
        p = self.path / "state.json"
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {"runs": {}, "status": "PENDING"}

    def write_state(self, state: Mapping[str, Any]) -> None:
        tmp = self.path / "state.json.tmp"
        tmp.write_text(_dumps(state, indent=2), encoding="utf-8")
        tmp.replace(self.path / "state.json")


def _bounded(value: Any, limit: int) -> str:
    s = str(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"


_SCHEMA_TYPES = {"integer": "long", "floating": "double", "boolean": "boolean", "datetime64": "datetime", "datetime": "datetime", "date": "datetime"}


def truth_summary(frame: Any, *, num_rows: int | None = None) -> dict[str, Any]:
    """What the dataset input says of the truth besides its digest: the column types (from
    pandas' inference over the first 1000 rows) and the size. `frame` may be just the first rows
    of a truth streamed in chunks; `num_rows` then gives the full count."""
    import pandas as pd

    head = frame.head(1000)
    n = len(frame) if num_rows is None else num_rows
    cols = [(str(c), _SCHEMA_TYPES.get(pd.api.types.infer_dtype(head.iloc[:, j], skipna=True), "string")) for j, c in enumerate(head.columns)]
    return {"columns": cols, "num_rows": int(n), "num_elements": int(n * (len(cols) + 1))}


def _dataset_entity(scored: Scored, digest: str) -> dict[str, Any]:
    """The ground truth as an MLflow dataset (name, digest, source, schema, profile), in the form
    `mlflow.data.from_pandas(...)` produces. The column types come from pandas' type inference
    (MLflow's own inference visits every cell in Python: seconds for a few hundred columns)."""
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.types import ColSpec, Schema

    summary = scored.cache.get("truth_summary") or truth_summary(scored.truth)
    cols = [("id", "string"), *summary["columns"]]
    schema = Schema([ColSpec(type=t, name=n, required=False) for n, t in cols])
    try:
        with warnings.catch_warnings():  # "can be interpreted in multiple ways": a local file either way
            warnings.simplefilter("ignore")
            source = resolve_dataset_source(str(scored.truth_source))
    except Exception:  # not a path or URI MLflow knows (e.g. "dataset"): recorded as code
        from mlflow.data.code_dataset_source import CodeDatasetSource

        source = CodeDatasetSource(tags={"extracteval.truth_source": str(scored.truth_source)})
    return {
        "name": f"{scored.task}-truth",
        "digest": digest[:32],
        "source_type": source._get_source_type(),
        "source": source.to_json(),
        "schema": json.dumps({"mlflow_colspec": schema.to_dict()}),
        "profile": json.dumps({"num_rows": summary["num_rows"], "num_elements": summary["num_elements"]}),
    }


def metric_keys(scored: Scored, adapter: TaskAdapter) -> KeyMap:
    """The metric-key segments of an evaluation's items and models (one map for all its runs)."""
    return KeyMap.build([*adapter.item_names(scored), *scored.models])


def model_run_metrics(scored: Scored, adapter: TaskAdapter, model: str, keys: KeyMap) -> dict[str, float]:
    """The metrics of one model's run: the task's own, and `invalid_outputs/count` (model outputs
    that could not be read, for every task under one key; 0 when none)."""
    from extracteval.mlflow.significance import interval_metrics, logged_doc

    met = adapter.metrics(scored, model, keys)
    doc = logged_doc(scored)
    for k, v in interval_metrics(doc, model, ranking_spec(scored.task).primary).items():
        if _clustered(doc):  # --cluster-by: the document's cluster bootstrap replaces the task's own record bootstrap
            met[k] = v
        else:
            met.setdefault(k, v)
    met.setdefault("invalid_outputs/count", float(((scored.doc.get("invalid_outputs") or {}).get(model) or {}).get("count", 0)))
    return met


def _clustered(doc: Mapping[str, Any]) -> bool:
    """The document's intervals and comparisons come from the cluster bootstrap (`--cluster-by`)."""
    return str((doc.get("intervals") or {}).get("method", "")).startswith("cluster bootstrap")


def alone(metrics: Mapping[str, float]) -> dict[str, float]:
    """A run of one model, ranked against nothing: no `ranking/rank` (a rank of 1 would claim a
    win it never had; a cross-run leaderboard writes the run's rank under its own key)."""
    return {k: v for k, v in metrics.items() if k != SINGLE_RUN_UNRANKED}


def write_bundle(
    scored: Scored,
    adapter: TaskAdapter,
    out: Path,
    *,
    experiment: str | None,
    run_name: str | None = None,
    tracking_uri: str | None = None,
    extra_tags: Mapping[str, str] | None = None,
    figures: bool = True,
    safe_csv: bool = True,
) -> Bundle:
    """Write the complete local copy of an evaluation to `out` and return it.

    One model → one run (`single`); several → a `parent` comparison run and one `model-i` child
    per model (ranking order). Raises InputError when `out` holds something that is not a bundle.

    The bundle is written to a temporary sibling folder and swapped into `out` only when complete:
    an interrupt or a full disk leaves the previous bundle (or nothing), never a bundle that
    `--resume-from` would upload half of (OutputError, exit code 1). `safe_csv`: neutralise
    spreadsheet-formula cells in the CSV tables.
    """
    out = Path(out)
    check_output_folder(out, whole=True)  # before the work: staged_folder checks again when writing
    w = _BundleWriter(scored, adapter, experiment=experiment, extra_tags=extra_tags or {}, figures=figures, safe_csv=safe_csv)
    plans = w.plans(run_name)
    with staged_folder(out, replace=True) as staging, ThreadPoolExecutor(max_workers=2) as pool:
        # Adapters that write their Parquet files straight from their counts or codes (fields:
        # per model, 20M rows of per-record counts and 20M of predictions at 100k × 200, ≈ 1–2 s
        # of Arrow encoding per file) do it in threads while this thread builds the metrics,
        # tables, figures and reports: Arrow releases the GIL. The pool's exit waits for them,
        # also on an error, before the staging folder goes.
        file_jobs = w.start_files(plans, staging, pool)
        for plan in plans:
            w.write_run(plan, staging, file_jobs)
        w.finish_files(plans, staging, file_jobs)
        manifest = {
            "format": BUNDLE_FORMAT,
            "extracteval_version": __version__,
            "task": scored.task,
            "created_ms": w.created_ms,
            "experiment": experiment,
            "tracking_uri": tracking_uri,
            "truth_digest": w.t_digest,
            "config_digest": w.c_digest,
            "dataset": _dataset_entity(scored, w.t_digest),
            "runs": [p.to_dict() for p in plans],
        }
        (staging / "manifest.json").write_text(_dumps(manifest, indent=2), encoding="utf-8")
        # written with the rest, so that the folder's marker lists it as extracteval's
        (staging / "state.json").write_text(_dumps({"runs": {}, "status": "PENDING", "error": None}, indent=2), encoding="utf-8")
    w.record_bytes.clear()  # written: the evaluation need not hold its per-record tables any longer
    return Bundle(path=out, manifest=manifest)


class _BundleWriter:
    """What every run of one evaluation's bundle shares (digests, tags, params, the logged
    document, each model's metrics and standing), and the stages that write it: the run plans
    with their descriptions, the Parquet files started in threads, each run's files, the files a
    thread found it had nothing to write."""

    def __init__(self, scored: Scored, adapter: TaskAdapter, *, experiment: str | None, extra_tags: Mapping[str, str], figures: bool,
                 safe_csv: bool) -> None:
        self.scored, self.adapter, self.experiment, self.figures, self.safe_csv = scored, adapter, experiment, figures, safe_csv
        self.created_ms = int(time.time() * 1000)
        # a streaming engine digested the truth chunk by chunk while scoring (never held whole); the
        # in-memory `evaluate` digests it in the background while the bootstrap runs (a future)
        self.t_digest = settled(scored.cache.get("truth_digest")) or truth_digest(scored.truth)
        self.c_digest = config_digest(scored.config)
        self.models = list(scored.models)
        self.keys = metric_keys(scored, adapter)
        self.spec = ranking_spec(scored.task)
        self.item_name = getattr(adapter, "item_table_name", "item_metrics")
        self.base_tags = {
            "mlflow.loggedArtifacts": json.dumps([{"path": f"extracteval/{self.item_name}_table.json", "type": "table"}]),
            "extracteval.task": scored.task,
            "extracteval.version": __version__,
            "extracteval.truth_digest": self.t_digest,
            "extracteval.config_digest": self.c_digest,
            **extra_tags,
            "extracteval.primary_metric": self.spec.primary,
        }
        self.base_params = {k: _bounded(v, MAX_PARAM_LENGTH) for k, v in adapter.params(scored).items()}
        # Parquet files a streaming engine wrote while scoring, (model, file name) → path: linked
        # into the bundle instead of built from per-record counts held in memory
        self.streamed: Mapping[tuple[str | None, str], Path] = scored.cache.get("streamed_files", {})
        # Parquet files that `evaluate` started writing while the scoring ran (see mlflow/early.py),
        # (model, file name) → future of the path (None: nothing to write)
        self.early: Mapping[tuple[str, str], Future[Path | None]] = scored.cache.get("early_files", {})
        # the paired bootstrap of a task that does not resample while scoring; each model's
        # per-record table it read, as Parquet bytes, is then the run's `records.parquet`
        self.record_bytes = ensure_significance(scored, adapter)
        # the large JSON files are written without indentation: `json` only uses its C encoder
        # when `indent` is None, and the indented result.json of a 200-field evaluation took
        # longer to encode than all the other artifacts to write (JSON viewers indent it anyway)
        self.doc = logged_doc(scored)
        self.doc_text = _dumps(self.doc)
        self._metrics: dict[str, dict[str, float]] = {}  # each model's metrics, built once (descriptions, parent and child use them)
        # each model's rank and gaps to the ranks next to it (a comparison of several models)
        from extracteval.mlflow.descriptions import standings

        comparisons = self.doc.get("comparisons") if isinstance(self.doc.get("comparisons"), list) else []
        self.standing: dict[str, Any] = standings(self.models, {m: self.metrics_of(m).get(self.spec.primary) for m in self.models},
                                                  comparisons) if len(self.models) > 1 else {}

    def metrics_of(self, m: str) -> dict[str, float]:
        if m not in self._metrics:
            self._metrics[m] = model_run_metrics(self.scored, self.adapter, m, self.keys)
        return self._metrics[m]

    def _tier(self, m: str) -> str | None:
        doc_models = self.scored.doc.get("models") if isinstance(self.scored.doc.get("models"), dict) else {}
        t = (doc_models.get(m) or {}).get("tier") if isinstance(doc_models.get(m), dict) else None
        return t if isinstance(t, str) else None

    def plans(self, run_name: str | None) -> list[RunPlan]:
        """The runs, each with its tags (its description among them) and params."""
        from extracteval.mlflow import descriptions as notes

        scored, adapter, spec, models, doc = self.scored, self.adapter, self.spec, self.models, self.doc
        names = {seg: name for name, seg in self.keys.segments.items()}  # key segment → item name, for the descriptions
        base_tags, base_params, metrics_of = self.base_tags, self.base_params, self.metrics_of
        n = len(models)

        def note(text: str) -> str:
            return _bounded(text, MAX_TAG_LENGTH)

        if n == 1:
            m = models[0]
            return [RunPlan(key="single", role="single", run_name=run_name or m, parent=None, model=m,
                            tags={**base_tags, "extracteval.role": "single", "extracteval.model": _bounded(m, MAX_TAG_LENGTH),
                                  NOTE_TAG: note(notes.single_note(task=scored.task, spec=spec, model=m, metrics=alone(metrics_of(m)),
                                                                   names=names, tier_name=self._tier(m)))},
                            params={**base_params, **_model_params(adapter, scored, m), **_generation(scored, m)})]
        comparisons = doc.get("comparisons") if isinstance(doc.get("comparisons"), list) else []
        decision = scored.doc.get("decision") if isinstance(scored.doc.get("decision"), dict) else None
        n_records = scored.doc.get("n_records", scored.doc.get("n_documents"))
        # the time tells a re-run's parent from the earlier ones in the runs table
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.created_ms / 1000))
        plans = [RunPlan(key="parent", role="comparison", run_name=run_name or f"{scored.task}: {n} models · {stamp}",
                         parent=None, model=None,
                         tags={**base_tags, "extracteval.role": "comparison", "extracteval.ranking": _bounded(", ".join(models), MAX_TAG_LENGTH),
                               "extracteval.winner": _bounded(models[0], MAX_TAG_LENGTH),
                               NOTE_TAG: note(notes.comparison_note(task=scored.task, spec=spec, models=models, metrics_of=metrics_of,
                                                                    tiers={m: t for m in models if (t := self._tier(m))},
                                                                    comparisons=comparisons, decision=decision, n_records=n_records))},
                         params=base_params)]
        for i, m in enumerate(models, start=1):
            plans.append(RunPlan(key=f"model-{i}", role="model", run_name=f"{run_name}/{m}" if run_name else m, parent="parent", model=m,
                                 tags={**base_tags, "extracteval.role": "model", "extracteval.model": _bounded(m, MAX_TAG_LENGTH),
                                       "extracteval.rank": str(i),
                                       NOTE_TAG: note(notes.model_note(task=scored.task, spec=spec, model=m, rank=i, n=n, metrics=metrics_of(m),
                                                                       names=names, tier_name=self._tier(m), standing=self.standing[m]))},
                                 params={**base_params, "model": _bounded(m, MAX_PARAM_LENGTH), **_model_params(adapter, scored, m),
                                         **_generation(scored, m)}))
        return plans

    def start_files(self, plans: Sequence[RunPlan], staging: Path, pool: ThreadPoolExecutor) -> dict[tuple[str, str], Future[bool]]:
        """The model runs' Parquet files an adapter writes itself, or `evaluate` started early,
        submitted to `pool`: (run key, file name) → a future that is False when there was
        nothing to write."""
        file_writers = {"records.parquet": getattr(self.adapter, "write_records", None),  # per-record classifications
                        "predictions.parquet": getattr(self.adapter, "write_predictions", None)}  # as scored, for `extracteval rescore`
        jobs: dict[tuple[str, str], Future[bool]] = {}
        for plan in plans:
            for fname, writer in file_writers.items():
                if plan.role == "comparison" or (plan.model, fname) in self.streamed:
                    continue
                adir = staging / "runs" / plan.key / "artifacts" / "extracteval"
                adir.mkdir(parents=True, exist_ok=True)
                if (plan.model, fname) in self.early:  # linked in once written
                    jobs[(plan.key, fname)] = pool.submit(_place_early, self.early[(plan.model, fname)], adir / fname)
                elif writer is not None:
                    jobs[(plan.key, fname)] = pool.submit(writer, self.scored, plan.model, adir / fname)
        return jobs

    def _run_metrics(self, plan: RunPlan, adir: Path) -> dict[str, float]:
        from extracteval.mlflow import descriptions as notes

        if plan.role == "comparison":
            # charted: the winner, its margin and whether it is real; the rest of the
            # comparison's figures (per model, per pair, counts, decision, item winners) in JSON
            _write_comparison_figures(adir / "comparison_metrics.json", self.scored, self.adapter, self.keys, self.models, self.metrics_of,
                                      self.spec)
            return notes.summary_metrics(self.spec, self.models, self.metrics_of, self.standing)
        from extracteval.mlflow.slice_logging import slice_metrics

        metrics = self.metrics_of(plan.model)
        if plan.role == "single":
            metrics = alone(metrics)
        return {**notes.headline_metrics(self.spec, metrics, None if plan.role == "single" else self.standing[plan.model]), **metrics,
                **slice_metrics(self.scored, plan.model, self.keys)}

    def _record_files(self, plan: RunPlan, adir: Path, file_jobs: Mapping[tuple[str, str], Future[bool]]) -> None:
        """A model run's Parquet files that no thread writes: linked from the streaming engine,
        the bytes the paired bootstrap read, or the adapter's per-record frame."""
        for fname in ("records.parquet", "predictions.parquet"):
            if (plan.model, fname) in self.streamed:
                _place(self.streamed[(plan.model, fname)], adir / fname)
        if plan.model in self.record_bytes:
            (adir / "records.parquet").write_bytes(memoryview(self.record_bytes[plan.model]))
        elif (plan.model, "records.parquet") not in self.streamed and (plan.key, "records.parquet") not in file_jobs:
            rec = self.adapter.records_frame(self.scored, plan.model)
            if rec is not None:
                rec.to_parquet(adir / "records.parquet", index=False)

    def write_run(self, plan: RunPlan, staging: Path, file_jobs: Mapping[tuple[str, str], Future[bool]]) -> None:
        """One run's metrics, result document, tables, Parquet files, key map, figures and report."""
        from extracteval.mlflow.slice_logging import slice_sections, write_slice_files
        from extracteval.report.figures import png_bytes
        from extracteval.report.html import render_report

        scored, adapter, keys = self.scored, self.adapter, self.keys
        rdir = staging / "runs" / plan.key
        adir = rdir / "artifacts" / "extracteval"
        adir.mkdir(parents=True, exist_ok=True)
        run_models = self.models if plan.role == "comparison" else [plan.model]
        metrics = self._run_metrics(plan, adir)
        (rdir / "metrics.json").write_text(_dumps(metrics, sort_keys=True), encoding="utf-8")
        (adir / "result.json").write_text(self.doc_text, encoding="utf-8")
        item = adapter.item_table(scored, None if plan.role == "comparison" else plan.model)
        write_csv(item, adir / f"{self.item_name}.csv", safe=self.safe_csv)
        # an MLflow table, exactly as `log_table` writes it (registered by the tag set below)
        item.to_json(adir / f"{self.item_name}_table.json", orient="split", index=False, date_format="iso")
        if plan.role == "comparison":
            for tname, table in adapter.comparison_tables(scored).items():
                write_csv(table, adir / f"{safe_file_name(tname)}.csv", safe=self.safe_csv)
        else:
            self._record_files(plan, adir, file_jobs)
        slices_png = write_slice_files(scored, plan.role, adir, figures=self.figures)
        used = {k: v for k, v in keys.originals.items() if k in metrics}
        (adir / "metric_keys.json").write_text(
            _dumps({"names": keys.names_table(), "metrics": [{"key": k, "original": used.get(k, k)} for k in sorted(metrics)]}),
            encoding="utf-8",
        )
        pngs: dict[str, bytes] = {}
        if self.figures:
            # a run's figures are of the models its report's tables show: every model on the
            # parent, the model itself on a child (its peers appear in the ranking summary)
            pngs = {fname: png_bytes(fig) for fname, fig in adapter.figures(scored, run_models).items()}
            fdir = rdir / "artifacts" / "figures"
            fdir.mkdir(exist_ok=True)
            for fname, png in pngs.items():
                (fdir / fname).write_bytes(png)
        # the task's own interval level (fields and spans take `confidence`; the others resample at 95%)
        lead = _ranking_sections(self.spec, plan, self.models, self.metrics_of, self.standing, scored.config.get("confidence") or 0.95,
                                 tier_name=self._tier(plan.model) if plan.model else None)
        title = f"extracteval · {scored.task} · " + (", ".join(run_models) if plan.role != "comparison" else f"{len(self.models)} models compared")
        html = render_report(
            title=title,
            subtitle=_subtitle(scored),
            sections=_with_slices([*lead, *_own_sections(adapter.sections(scored, run_models), plan, self.models)], slice_sections(scored, run_models)),
            figures_after=len(lead) + 1,
            figures={**pngs, "slices.png": slices_png} if slices_png else pngs,
            meta={"extracteval version": __version__, "truth digest (SHA-256)": self.t_digest, "config digest (SHA-256)": self.c_digest,
                  "experiment": self.experiment or "", "run": plan.run_name},
        )
        (adir / "report.html").write_text(html, encoding="utf-8")

    def finish_files(self, plans: Sequence[RunPlan], staging: Path, file_jobs: Mapping[tuple[str, str], Future[bool]]) -> None:
        """Wait for the threads' files; raises what a thread raised. A writer that found nothing
        to write (False) leaves the per-record counts to the adapter's frame, if it has one."""
        for (key, fname), job in file_jobs.items():
            if not job.result() and fname == "records.parquet":
                plan = next(p for p in plans if p.key == key)
                rec = self.adapter.records_frame(self.scored, plan.model)
                if rec is not None:
                    rec.to_parquet(staging / "runs" / key / "artifacts" / "extracteval" / "records.parquet", index=False)


COMPARISON_FIGURES = "extracteval/comparison_metrics.json"


def _write_comparison_figures(path: Path, scored: Scored, adapter: TaskAdapter, keys: KeyMap, models: Sequence[str],
                              metrics_of: Callable[[str], Mapping[str, float]], spec: RankingSpec) -> None:
    """The comparison's figures that are not charted (`COMPARISON_FIGURES`), under the keys they
    would have as metrics: the task's comparison metrics (models/…, ranking/<m>/rank,
    wins/<m>/field_wins, comparison/<a> vs <b>/…, decision/…, <items>_winners/…, <items>/count) and
    each model's headline numbers under `models/<m>/<key>`; `original_keys`: the unsanitised
    name behind each key whose model or item name had to be changed to be a metric key."""
    figures = dict(adapter.comparison_metrics(scored, keys))
    if _clustered(scored.doc):  # the adjacent pairs' intervals of the cluster bootstrap, where the task logs its own
        for c in scored.doc.get("comparisons") or []:
            pair = f"comparison/{keys.segment(c['higher'])} vs {keys.segment(c['lower'])}"
            if f"{pair}/ci_low" in figures:
                figures[f"{pair}/ci_low"], figures[f"{pair}/ci_high"] = float(c["difference"]["low"]), float(c["difference"]["high"])
    for m in models:
        child = metrics_of(m)
        for k in dict.fromkeys((*spec.keys, "overall/f1", "overall/precision", "overall/recall", "micro/f1")):
            if k in child:
                figures[keys.key("models", m, k)] = child[k]
    originals = {k: v for k, v in keys.originals.items() if any(f == k or f.startswith(k + "/") for f in figures)}
    path.write_text(_dumps({"metrics": dict(sorted(figures.items())), "original_keys": originals}, indent=1), encoding="utf-8")


def _subtitle(scored: Scored) -> str:
    """`60 records · truth: <source>` (documents for the spans task, which counts them so)."""
    doc = scored.doc
    if doc.get("n_records") is not None:
        count = f"{doc['n_records']} records · "
    elif doc.get("n_documents") is not None:
        count = f"{doc['n_documents']} documents · "
    else:
        count = ""
    return f"{count}truth: {scored.truth_source}"


def _ranking_sections(spec: RankingSpec, plan: RunPlan, models: Sequence[str], metrics_of: Callable[[str], Mapping[str, float]],
                      standing: Mapping[str, Any], confidence: Any = 0.95, tier_name: str | None = None) -> list[Section]:
    """The report's first block, above the figures: the verdict (the description's first two
    lines, then rank, model, score, interval and the verdict against the next rank; on a model
    run titled with where this model stands, since its other figures and tables are of itself
    only) and how the task ranks models (the declaration the leaderboard and `compare` read)."""
    from extracteval.mlflow import descriptions as notes

    rule = Section(title="How models are ranked", text=f"Models are {spec.rule()}.")
    if plan.role == "single":
        return [rule]
    level = f"{int(round(100 * float(confidence)))}%"
    legend = (f"score: {spec.label} ({spec.primary}); {level} CI: its bootstrap interval over records; vs next rank: the lead over the "
              f"model ranked just below, and whether the paired {level} interval of that lead excludes zero (at exactly zero: borderline).")
    this = plan.model if plan.role == "model" else None
    table = notes.verdict_table(spec, models, metrics_of, standing, this=this, level=level)
    lines = notes.verdict_lines(spec, models, metrics_of, standing, model=this, tier_name=tier_name)
    if this is None:
        return [Section(title="Verdict", items=[*lines, legend], table=table), rule]
    title = f"Comparison summary: {this} is ranked {models.index(this) + 1} of {len(models)}"
    return [Section(title=title, items=[*lines, legend, "This run's report shows this model's tables and figures; every model's are on "
                                        "the parent (comparison) run."], table=table), rule]


def _with_slices(sections: list[Section], slices: list[Section]) -> list[Section]:
    """The report's sections with the slices' before its closing ones (warnings, configuration)."""
    if not slices:
        return sections
    at = len(sections)
    while at > 0 and sections[at - 1].title in ("Warnings", "Configuration"):
        at -= 1
    return [*sections[:at], *slices, *sections[at:]]


def _own_sections(sections: Sequence[Section], plan: RunPlan, models: Sequence[str]) -> list[Section]:
    """On a model run, the listed notes (warnings) about the other models are left out: the
    evaluation's warnings name their model (`model 'x': …` or `x: …`), and the parent run has all."""
    if plan.role != "model":
        return list(sections)
    from dataclasses import replace

    others = [m for m in models if m != plan.model]

    def mine(item: str) -> bool:
        return not any(f"model {o!r}" in item or item.startswith(f"{o}: ") for o in others)

    out = []
    for s in sections:
        if s.items:
            kept = [i for i in s.items if mine(str(i))]
            if not kept and s.table is None and not s.text:
                continue
            s = replace(s, items=kept)
        out.append(s)
    return out


def _place_early(job: "Future[Path | None]", dst: Path) -> bool:
    """Wait for a file written early and link it into the bundle; False when it had nothing to write."""
    path = job.result()
    if path is None:
        return False
    _place(path, dst)
    return True


def _place(src: Path, dst: Path) -> None:
    """A streamed file into the bundle: a hard link when on the same file system (no copy of a
    file that can be gigabytes), else a copy."""
    import os
    import shutil

    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _model_params(adapter: Any, scored: Scored, model: str) -> dict[str, str]:
    """Params that differ between the models of one evaluation (an adapter's optional `model_params`)."""
    fn = getattr(adapter, "model_params", None)
    return {k: _bounded(v, MAX_PARAM_LENGTH) for k, v in fn(scored, model).items()} if fn is not None else {}


def _generation(scored: Scored, model: str) -> dict[str, str]:
    g = scored.generation.get(model) or {}
    return {f"generation.{safe_file_name(str(k))}": _bounded(v, MAX_PARAM_LENGTH) for k, v in sorted(g.items())}


def load_bundle(path: str | Path) -> Bundle:
    """Read a bundle written by `write_bundle` (for `--resume-from`)."""
    p = Path(path)
    mf = p / "manifest.json"
    if not mf.is_file():
        raise InputError(f"{p}: not an extracteval results folder (no manifest.json); pass the folder printed by the failed `extracteval evaluate`.")
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except ValueError as e:
        raise InputError(f"{mf}: not valid JSON ({e}).") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise InputError(f"{mf}: format {found!r} is not {BUNDLE_FORMAT!r}.")
    _check_runs(p, mf, manifest.get("runs"))
    return Bundle(path=p, manifest=manifest)


# the run keys `write_bundle` gives: a results folder may come from anyone, so nothing else names
# a folder to read (`../x` or an absolute path would send another folder's files to the store)
_RUN_KEY = re.compile(r"single|parent|model-[1-9][0-9]{0,5}")
_ROLES = {"single", "comparison", "model"}


def _check_runs(p: Path, mf: Path, runs: Any) -> None:
    """The manifest's runs as `write_bundle` writes them, each folder a real one inside the bundle."""
    if not isinstance(runs, list) or not runs:
        raise InputError(f"{mf}: \"runs\" must be a non-empty list of runs, but found {type(runs).__name__}.")
    keys = [r.get("key") if isinstance(r, dict) else None for r in runs]
    for i, (r, key) in enumerate(zip(runs, keys)):
        where = f"{mf}: runs[{i}]"
        if not isinstance(key, str) or not _RUN_KEY.fullmatch(key):
            raise InputError(f"{where}: the run key {key!r} is not one extracteval writes (single, parent, model-1, …); "
                             "the folder was changed after it was written.")
        if r.get("role") not in _ROLES or (r.get("parent") is not None and r.get("parent") not in keys):
            raise InputError(f"{where}: role {r.get('role')!r} / parent {r.get('parent')!r} do not describe a run of this folder.")
        for name in ("run_name", "tags", "params"):
            want = str if name == "run_name" else dict
            if not isinstance(r.get(name), want):
                raise InputError(f"{where}: {name!r} must be a {'text' if want is str else 'JSON object'}.")
        run_dir = p / "runs" / key
        if not (run_dir / "metrics.json").is_file():
            raise InputError(f"{p}: run {key!r} has no metrics.json; the folder is incomplete.")
        for q in [run_dir, *run_dir.rglob("*")]:
            if q.is_symlink():
                raise InputError(f"{q}: a symbolic link in a results folder; extracteval writes none, and would upload what it points to.")
    if len(set(keys)) != len(keys):
        raise InputError(f"{mf}: a run key appears twice.")
