"""Re-score a logged run against edited ground truth: a changed truth digest triggers recalculation.

Every task's model run logs its predictions as scored (`extracteval/predictions.parquet`, written
by the task's adapter: mlflow/predictions_file.py) and its configuration
(`extracteval/result.json`). Rescoring reads both back through the adapter (`read_predictions`,
`rescore_options`), reads the new truth as `extracteval.score` reads a truth file, scores them
with the adapter's `score_frame` and logs a new run in the same experiment tagged
`extracteval.rescored_from = <run id>`. When the new truth has the digest the run was scored
against, nothing is logged. One path for every task: nothing here knows a task by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.mlflow.predictions_file import PREDICTIONS_ARTIFACT

__all__ = ["PREDICTIONS_ARTIFACT", "RESULT_ARTIFACT", "RescoreResult", "rescore_run"]

RESULT_ARTIFACT = "extracteval/result.json"


@dataclass(frozen=True, kw_only=True)
class RescoreResult:
    source_run_id: str
    skipped: bool
    message: str
    new_run_id: str | None = None
    old_metrics: dict[str, float] | None = None
    new_metrics: dict[str, float] | None = None
    truth_digest: str = ""
    previous_truth_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_run_id": self.source_run_id, "skipped": self.skipped, "message": self.message, "new_run_id": self.new_run_id,
            "previous_truth_digest": self.previous_truth_digest, "truth_digest": self.truth_digest,
            "old": self.old_metrics, "new": self.new_metrics,
        }


def rescore_run(
    *,
    run_id: str,
    truth: str | Path,
    tracking_uri: str | None = None,
    id_column: str = "id",
    delimiter: str | None = None,
    figures: bool = True,
    output: str | Path | None = None,
) -> RescoreResult:
    """Re-score run `run_id`'s logged predictions against `truth`; see the module docstring.

    `old` / `new` of the result are the task's ranking metrics (primary first) of the run and
    of the new run."""
    import shutil
    import tempfile

    from mlflow.tracking import MlflowClient

    from extracteval.tasks import ranking_spec
    from extracteval.mlflow.bundle import truth_digest, write_bundle
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.upload import UploadError, store_uri, upload_bundle

    uri = store_uri(tracking_uri)
    client = MlflowClient(tracking_uri=uri)
    run = _model_run(client, run_id, uri)
    tags = run.data.tags
    task = tags["extracteval.task"]
    adapter = get_adapter(task)
    model = tags.get("extracteval.model") or run.info.run_name or run_id
    tmp = Path(tempfile.mkdtemp(prefix="extracteval-rescore-"))
    try:
        p, doc = _logged_inputs(run, uri, tmp)
        logged = adapter.read_predictions(p, source=f"run {run_id} {PREDICTIONS_ARTIFACT}")
        ids, targets, truth_source = read_truth(str(truth), adapter, id_column=id_column, delimiter=delimiter)
        cells, status, extra = logged.for_ids(ids)
        scored = adapter.score_frame(ids=ids, targets=targets, predictions={model: cells}, config=adapter.rescore_options(doc),
                                     truth_source=truth_source, **({} if status is None else {"status": {model: status}}))
        new_digest = truth_digest(scored.truth)
        old_digest = tags.get("extracteval.truth_digest", "")
        if new_digest == old_digest:
            return RescoreResult(source_run_id=run_id, skipped=True, truth_digest=new_digest, previous_truth_digest=old_digest,
                                 message=f"{truth}: the ground truth is unchanged (SHA-256 {new_digest[:12]}…, as run {run_id} was scored); nothing to rescore.")
        scored.doc["inputs"] = {"truth": truth_source, "predictions": {model: f"run {run_id}"}, "rescored_from": run_id}
        if extra:
            scored.doc["warnings"] = [f"model {model!r}: {len(extra)} logged prediction(s) for ids not in the new truth were ignored: "
                                      + ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else ""), *scored.doc.get("warnings", [])]
        exp = client.get_experiment(run.info.experiment_id)
        out = Path(output) if output else tmp / "bundle"
        bundle = write_bundle(scored, adapter, out, experiment=exp.name, run_name=f"{run.info.run_name or model} (rescored)", tracking_uri=uri,
                              extra_tags={"extracteval.rescored_from": run_id, "extracteval.previous_truth_digest": old_digest}, figures=figures)
        try:
            up = upload_bundle(bundle, tracking_uri=uri, experiment=exp.name)
        except UploadError as e:
            raise InputError(str(e)) from None
        new_id = next(iter(up.run_ids.values()))
        keys = ranking_spec(task).keys
        new_all = bundle.metrics(bundle.runs[0].key)
        old_m = {k: float(run.data.metrics[k]) for k in keys if k in run.data.metrics}
        new_m = {k: float(new_all[k]) for k in keys if k in new_all}
        return RescoreResult(source_run_id=run_id, skipped=False, new_run_id=new_id, old_metrics=old_m, new_metrics=new_m, truth_digest=new_digest,
                             previous_truth_digest=old_digest, message=f"rescored run {run_id} against {truth}: new run {new_id} (tag extracteval.rescored_from)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _model_run(client: Any, run_id: str, uri: str) -> Any:
    """Run `run_id`, once it is an extracteval model run (or a single-model run); InputError
    naming what it is otherwise."""
    from mlflow.exceptions import MlflowException

    try:
        run = client.get_run(run_id)
    except MlflowException as e:
        raise InputError(f"--run {run_id!r}: no such run at {uri} ({' '.join(str(e).split())[:200]}).") from None
    tags = run.data.tags
    role = tags.get("extracteval.role")
    if tags.get("extracteval.task") is None:
        raise InputError(f"--run {run_id}: not an extracteval run (no extracteval.task tag).")
    if role not in ("single", "model"):
        raise InputError(f"--run {run_id}: a {role!r} run; rescore a model run (a child of the comparison run, or a single-model run).")
    return run


def _logged_inputs(run: Any, uri: str, tmp: Path) -> tuple[Path, dict[str, Any]]:
    """The run's logged predictions (downloaded into `tmp`) and its result document (whose
    `config` is read back); InputError saying which is missing or unreadable."""
    from extracteval.mlflow.tracking_leaderboard import _download

    run_id = run.info.run_id
    p = _download(run.info.artifact_uri, PREDICTIONS_ARTIFACT, uri, str(tmp))
    if p is None or not p.is_file():
        raise InputError(f"--run {run_id}: the run has no {PREDICTIONS_ARTIFACT} artifact, so its predictions cannot be scored again: it was "
                         "logged by an extracteval version that did not keep predictions, or from inputs that are not one record per "
                         "line (token files, BFCL question files). Evaluate the model again against the new truth instead.")
    r = _download(run.info.artifact_uri, RESULT_ARTIFACT, uri, str(tmp))
    if r is None or not r.is_file():
        raise InputError(f"--run {run_id}: the run has no {RESULT_ARTIFACT} artifact; its configuration is unknown.")
    try:
        doc = json.loads(r.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"--run {run_id}: the run's {RESULT_ARTIFACT} artifact is not valid JSON ({e}); its configuration "
                         "cannot be read back. Evaluate the model again against the new truth instead.") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise InputError(f"--run {run_id}: the run's {RESULT_ARTIFACT} artifact is not an extracteval result (expected a JSON "
                         "object with a `config` object).")
    return p, doc


def read_truth(path: str, adapter: Any, *, id_column: str = "id", delimiter: str | None = None) -> tuple[list[str], list[Any], str]:
    """(record ids, one target cell per record, where the truth came from) of the new ground
    truth file: its rows as the cells `score_frame` reads (the logged predictions are cells);
    ids must be unique."""
    from extracteval.io.tables import _dup_error, read_table

    frame = read_table(path, delimiter=delimiter)
    if id_column not in frame.columns:
        cols = [str(c) for c in frame.columns][:20]
        raise InputError(f"{path}: no {id_column!r} column; columns found: {cols}. Pass --id-column NAME if the ids are elsewhere.")
    ids = [str(i) for i in frame[id_column]]
    _dup_error(path, ids)
    return ids, _cells(frame, adapter, id_column), str(path)


def _cells(frame: Any, adapter: Any, id_column: str) -> list[Any]:
    """One cell per record: the row as an object, or, for a task whose record is one value
    (`adapter.record_is_value`) and a row with one other column than the id, that column's cell."""
    rest = [c for c in frame.columns if c != id_column]
    if adapter.record_is_value and len(rest) == 1:
        return list(frame[rest[0]])
    return frame[rest].to_dict(orient="records")
