"""Re-score a logged run against edited ground truth (SPEC §10, seed 000 "Recalculation Triggers").

A `fields` model run logs its predictions as scored (`extracteval/predictions.parquet`: id,
field, value as JSON text, status) and its configuration (`extracteval/result.json`). Rescoring
reads both, scores them against the new truth with the same configuration and logs a new run in
the same experiment tagged `extracteval.rescored_from = <run id>`. When the new truth has the
digest the run was scored against, nothing is done.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.errors import InputError

__all__ = ["PREDICTIONS_ARTIFACT", "RESULT_ARTIFACT", "RescoreResult", "predictions_to_frame", "frame_to_predictions", "fields_config_from_dict", "rescore_run"]

PREDICTIONS_ARTIFACT = "extracteval/predictions.parquet"
RESULT_ARTIFACT = "extracteval/result.json"


def _plain(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return _plain(v.item())
        except (ValueError, AttributeError):
            pass
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return _plain(v.tolist())
    if isinstance(v, (str, int, float, bool)):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def predictions_to_frame(preds: Any) -> Any:
    """`ModelPredictions` → long DataFrame (id, field, value = JSON text or None, status)."""
    import numpy as np
    import pandas as pd

    values = preds.values
    ids = [str(i) for i in values.index]
    cols = [str(c) for c in values.columns]
    flat = values.to_numpy(dtype=object).ravel()
    cache: dict[Any, str | None] = {}

    def enc(v: Any) -> str | None:
        try:
            return cache[v]
        except (KeyError, TypeError):
            p = _plain(v)
            out = None if p is None else json.dumps(p, ensure_ascii=False, sort_keys=True)
            try:
                cache[v] = out
            except TypeError:
                pass
            return out

    status = None
    if preds.status is not None:
        st = preds.status
        if isinstance(st, pd.DataFrame):
            st = st.reindex(index=values.index, columns=values.columns)
            status = [None if (s is None or (isinstance(s, float) and math.isnan(s))) else str(s) for s in st.to_numpy(dtype=object).ravel()]
        else:
            per = st.reindex(values.index).to_numpy(dtype=object)
            status = [None if (s is None or (isinstance(s, float) and math.isnan(s))) else str(s) for s in np.repeat(per, len(cols))]
    return pd.DataFrame({
        "id": np.repeat(np.array(ids, dtype=object), len(cols)),
        "field": np.tile(np.array(cols, dtype=object), len(ids)),
        "value": [enc(v) for v in flat],
        "status": status if status is not None else [None] * len(flat),
    })


def frame_to_predictions(frame: Any, *, name: str, source: str) -> Any:
    """The long predictions frame → `ModelPredictions` (values decoded from JSON, per-cell status)."""
    import pandas as pd

    from extracteval.core.fields import ModelPredictions

    missing = {"id", "field", "value"} - set(frame.columns)
    if missing:
        raise InputError(f"{source}: expected columns id, field, value, status; missing {sorted(missing)}.")
    cache: dict[str, Any] = {}

    def dec(v: Any) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if v not in cache:
            cache[v] = json.loads(v)
        return cache[v]

    f = frame.assign(id=frame["id"].astype(str), field=frame["field"].astype(str))
    f = f.assign(value=[dec(v) for v in f["value"]])
    ids = list(dict.fromkeys(f["id"]))
    fields = list(dict.fromkeys(f["field"]))
    values = f.pivot(index="id", columns="field", values="value").reindex(index=ids, columns=fields)
    values = values.astype(object).where(values.notna(), None)
    values.index.name = "id"
    values.columns.name = None
    status = None
    if "status" in f and f["status"].notna().any():
        status = f.pivot(index="id", columns="field", values="status").reindex(index=ids, columns=fields).fillna("ok")
        status.index.name = "id"
        status.columns.name = None
    return ModelPredictions(name=name, values=values, status=status, source=source)


def fields_config_from_dict(cfg: dict[str, Any]) -> Any:
    """The `FieldsConfig` whose `to_dict()` is `cfg` (the `config` of a logged result.json)."""
    from extracteval.core.fields import FieldsConfig
    from extracteval.core.normalize import NormalizationConfig

    try:
        norm = dict(cfg.get("normalization") or {})
        if "null_tokens" in norm:
            norm["null_tokens"] = frozenset(norm["null_tokens"])
        opts = {k: cfg[k] for k in ("strategies", "default_strategy", "fuzzy_threshold", "fuzzy_scorer", "zero_division", "min_records",
                                     "bootstrap", "confidence", "seed") if k in cfg}
        return FieldsConfig(**opts, normalization=NormalizationConfig(**norm))
    except TypeError as e:
        raise InputError(f"the run's logged configuration cannot be rebuilt ({e}); it was logged by another extracteval version.") from None


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
    """Re-score run `run_id`'s logged predictions against `truth`; see the module docstring."""
    import shutil
    import tempfile

    import pandas as pd
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from extracteval.core.fields import score_fields
    from extracteval.io.fields_inputs import load_fields_inputs
    from extracteval.mlflow.bundle import truth_digest, write_bundle
    from extracteval.mlflow.leaderboard import _download
    from extracteval.mlflow.tasks import Scored, get_adapter
    from extracteval.mlflow.upload import UploadError, default_tracking_uri, upload_bundle

    uri = tracking_uri or default_tracking_uri()
    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except MlflowException as e:
        raise InputError(f"--run {run_id!r}: no such run at {uri} ({' '.join(str(e).split())[:200]}).") from None
    tags = run.data.tags
    task = tags.get("extracteval.task")
    role = tags.get("extracteval.role")
    if task is None:
        raise InputError(f"--run {run_id}: not an extracteval run (no extracteval.task tag).")
    if role not in ("single", "model"):
        raise InputError(f"--run {run_id}: a {role!r} run; rescore a model run (a child of the comparison run, or a single-model run).")
    if task != "fields":
        raise InputError(f"--run {run_id}: rescoring {task!r} runs is not available in this version (fields runs only).")
    truth_frame, _, truth_source = load_fields_inputs(truth, [], id_column=id_column, delimiter=delimiter)
    new_digest = truth_digest(truth_frame)
    old_digest = tags.get("extracteval.truth_digest", "")
    if new_digest == old_digest:
        return RescoreResult(source_run_id=run_id, skipped=True, truth_digest=new_digest, previous_truth_digest=old_digest,
                             message=f"{truth}: the ground truth is unchanged (SHA-256 {new_digest[:12]}…, as run {run_id} was scored); nothing to rescore.")
    tmp = Path(tempfile.mkdtemp(prefix="extracteval-rescore-"))
    try:
        p = _download(run.info.artifact_uri, PREDICTIONS_ARTIFACT, uri, str(tmp))
        if p is None or not p.is_file():
            raise InputError(f"--run {run_id}: the run has no {PREDICTIONS_ARTIFACT} artifact (it was logged by an extracteval version that did not "
                             "keep predictions); evaluate the model again to make it rescorable.")
        r = _download(run.info.artifact_uri, RESULT_ARTIFACT, uri, str(tmp))
        if r is None or not r.is_file():
            raise InputError(f"--run {run_id}: the run has no {RESULT_ARTIFACT} artifact; its configuration is unknown.")
        doc = json.loads(r.read_text(encoding="utf-8"))
        model = tags.get("extracteval.model") or run.info.run_name or run_id
        preds = frame_to_predictions(pd.read_parquet(p), name=model, source=f"run {run_id} {PREDICTIONS_ARTIFACT}")
        config = fields_config_from_dict(doc.get("config") or {})
        fields = list(doc.get("fields") or []) or None
        fields = [f for f in fields if f in truth_frame.columns or f in preds.values.columns] if fields else None
        result = score_fields(truth_frame, [preds], config=config, fields=fields, truth_source=truth_source)
        rdoc = result.to_dict()
        rdoc["inputs"] = {"truth": truth_source, "predictions": {model: f"run {run_id}"}, "rescored_from": run_id}
        scored = Scored(task="fields", result=result, doc=rdoc, models=tuple(result.ranking), truth=truth_frame, truth_source=truth_source, config=rdoc["config"])
        scored.cache["predictions"] = {model: preds}
        adapter = get_adapter("fields")
        exp = client.get_experiment(run.info.experiment_id)
        out = Path(output) if output else tmp / "bundle"
        bundle = write_bundle(scored, adapter, out, experiment=exp.name, run_name=f"{run.info.run_name or model} (rescored)", tracking_uri=uri,
                              extra_tags={"extracteval.rescored_from": run_id, "extracteval.previous_truth_digest": old_digest}, figures=figures)
        try:
            up = upload_bundle(bundle, tracking_uri=uri, experiment=exp.name)
        except UploadError as e:
            raise InputError(str(e)) from None
        new_id = next(iter(up.run_ids.values()))
        keys = ("overall/f1", "overall/precision", "overall/recall", "micro/f1")
        old_m = {k: float(run.data.metrics[k]) for k in keys if k in run.data.metrics}
        mr = result.models[model]
        new_m = {"overall/f1": mr.overall["f1"], "overall/precision": mr.overall["precision"], "overall/recall": mr.overall["recall"], "micro/f1": mr.micro["f1"]}
        return RescoreResult(source_run_id=run_id, skipped=False, new_run_id=new_id, old_metrics=old_m, new_metrics=new_m, truth_digest=new_digest,
                             previous_truth_digest=old_digest, message=f"rescored run {run_id} against {truth}: new run {new_id} (tag extracteval.rescored_from)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
