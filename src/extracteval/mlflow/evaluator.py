"""The `extracteval` MLflow evaluator plugin (entry-point group `mlflow.model_evaluator`).

Usage with a static dataset (one row per record; the targets cell is an object of field values,
as a dict or JSON string, and so is the prediction cell — typically an LLM's raw JSON output)::

    mlflow.models.evaluate(
        data=df, targets="truth", predictions="output", model_type="extraction-fields",
        evaluators="extracteval", evaluator_config={"id_column": "id", "strategies": {"party": "FUZZY"}},
    )

or with a model (a pyfunc model or any Python callable taking a DataFrame of the feature columns
and returning one output per row); predictions are made in batches of `batch_size` rows with a
progress bar on stderr when it is a terminal.

The evaluator keeps no state between calls: everything it needs travels in the arguments.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlflow.models.evaluation.base import EvaluationResult, ModelEvaluator

from extracteval.errors import InputError
from extracteval.mlflow.adapters import COMMON_CONFIG_KEYS, MODEL_TYPES, check_config, get_adapter, task_for_model_type

__all__ = ["ExtractevalEvaluator", "COMMON_CONFIG_KEYS", "check_config", "predict_in_batches"]

# decoding settings picked up from a pyfunc model's model_config when present
_GENERATION_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "max_new_tokens", "seed", "do_sample", "n", "frequency_penalty", "presence_penalty")


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self.enabled = sys.stderr.isatty() and total > 0

    def update(self, n: int) -> None:
        self.done += n
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _outputs(result: Any, n: int, column: str | None) -> list[Any]:
    """A model's output for a batch → one cell per row."""
    import numpy as np
    import pandas as pd

    if isinstance(result, pd.DataFrame):
        if column is not None and column in result.columns:
            return list(result[column])
        if result.shape[1] == 1:
            return list(result.iloc[:, 0])
        return result.to_dict(orient="records")  # wide: one column per field
    if isinstance(result, pd.Series):
        return list(result)
    if isinstance(result, np.ndarray):
        return list(result.ravel()) if result.ndim <= 1 or result.shape[1] == 1 else [list(r) for r in result]
    if isinstance(result, (list, tuple)):
        return list(result)
    if n == 1:
        return [result]
    raise InputError(f"the model returned {type(result).__name__} for {n} rows; expected a list, Series or DataFrame with one output per row.")


def predict_in_batches(model: Any, features: Any, *, batch_size: int = 64, column: str | None = None) -> list[Any]:
    """Call `model.predict` (or the callable) on consecutive batches of rows; one output per row."""
    predict = getattr(model, "predict", model)
    n = len(features)
    out: list[Any] = []
    bar = _Progress(n, "predicting")
    try:
        for start in range(0, n, batch_size):
            batch = features.iloc[start : start + batch_size]
            cells = _outputs(predict(batch), len(batch), column)
            if len(cells) != len(batch):
                raise InputError(f"the model returned {len(cells)} outputs for a batch of {len(batch)} rows (rows {start}–{start + len(batch) - 1}).")
            out.extend(cells)
            bar.update(len(batch))
    finally:
        bar.close()
    return out


def _generation_settings(model: Any, config: Mapping[str, Any]) -> dict[str, Any]:
    g: dict[str, Any] = {}
    mc = getattr(model, "model_config", None)
    if isinstance(mc, Mapping):
        g.update({k: mc[k] for k in _GENERATION_KEYS if k in mc})
    given = config.get("generation")
    if given is not None:
        if not isinstance(given, Mapping):
            raise InputError(f"evaluator_config `generation`: expected a mapping such as {{'temperature': 0}}, but got {type(given).__name__}.")
        g.update(dict(given))
    return g


class ExtractevalEvaluator(ModelEvaluator):
    """Scores extraction outputs with extracteval and logs metrics, tables, figures and a report."""

    name = "extracteval"

    @classmethod
    def can_evaluate(cls, *, model_type: str, evaluator_config: Mapping[str, Any] | None = None, **kwargs: Any) -> bool:
        """True for extracteval's model types only. One exception: when MLflow is about to run the
        evaluators the user named and `extracteval` is among them, True for any model type, so
        that `evaluate` refuses with a message naming the accepted model types instead of
        MLflow's "could not be evaluated by any of the registered evaluators". While MLflow
        picks the evaluators of `evaluators=None` (every installed one is asked), any other
        model type is not ours and the other evaluators go on."""
        if model_type in MODEL_TYPES:
            return True
        return _running_named_evaluators()

    def evaluate(
        self,
        *,
        model_type: str,
        dataset: Any,
        run_id: str,
        evaluator_config: Mapping[str, Any] | None = None,
        model: Any = None,
        extra_metrics: Any = None,
        custom_artifacts: Any = None,
        predictions: str | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        import mlflow

        from extracteval.mlflow.bundle import write_bundle
        from extracteval.mlflow.upload import upload_bundle

        config = dict(evaluator_config or {})
        if model_type not in MODEL_TYPES:
            raise InputError(unsupported_model_type(model_type))
        task = task_for_model_type(model_type, config.get("task"))
        adapter = get_adapter(task)
        check_config(config, adapter.config_keys, task)
        if extra_metrics or custom_artifacts:
            warnings.warn("the extracteval evaluator ignores extra_metrics and custom_artifacts; add the `default` evaluator for them", stacklevel=2)
        if not dataset.has_targets:
            raise InputError("mlflow.models.evaluate(..., targets=COLUMN) is required: the column holding each record's ground truth.")
        features = dataset.features_data
        id_column = _named_column(config, "id_column", features)
        if id_column is None and "id" in features.columns:
            id_column = "id"
        ids = [str(x) for x in features[id_column]] if id_column else [str(i) for i in range(len(features))]
        if model is None:
            if not dataset.has_predictions:
                raise InputError("give either a model or predictions=COLUMN (the column holding each record's model output).")
            cells = list(dataset.predictions_data)
            default_name = _run_name(run_id) or dataset.predictions_name or "predictions"
        else:
            batch_size = int(config.get("batch_size", 64))
            if batch_size < 1:
                raise InputError(f"evaluator_config `batch_size`: expected a positive integer, but got {batch_size}.")
            cells = predict_in_batches(model, features, batch_size=batch_size, column=predictions)
            default_name = _run_name(run_id) or _model_uri(model) or "model"
        name = str(config.get("model_name") or default_name)
        task_config = {k: v for k, v in config.items() if k in adapter.config_keys and k not in ("status_column", "safety_column")}
        extra: dict[str, Any] = {}
        status_column = _status_column(config, features, adapter, task)
        if status_column is not None:
            extra["status"] = {name: list(features[status_column])}
        safety_column = _safety_column(config, features, adapter)
        if safety_column is not None:
            extra["safety"] = {name: list(features[safety_column])}
        from extracteval.core.collector import bulk_work
        from extracteval.mlflow.slicing import attach_slices, frame_slicing

        slicing = frame_slicing(config, features, ids)  # before scoring: a wrong column fails fast
        with bulk_work():
            scored = adapter.score_frame(ids=ids, targets=list(dataset.labels_data), predictions={name: cells}, config=task_config,
                                         truth_source=_truth_source(dataset), **extra)
            if slicing is not None:
                attach_slices(scored, slicing)
        for w in scored.doc.get("warnings", []):  # what `extracteval score` prints, said here too (and in the report)
            if not w.startswith("only one model:"):  # one model per plugin call: that tie is no news here
                print(f"extracteval: warning: {w}", file=sys.stderr)
        if model is not None:
            gen = _generation_settings(model, config)
            if gen:
                scored = dataclasses.replace(scored, generation={name: gen})
        keep = config.get("output") is not None
        out = Path(config["output"]) if keep else Path(tempfile.mkdtemp(prefix="extracteval-"))
        bundle = write_bundle(scored, adapter, out, experiment=None, tracking_uri=mlflow.get_tracking_uri(),
                              figures=bool(config.get("figures", True)))
        upload_bundle(bundle, tracking_uri=mlflow.get_tracking_uri(), into_run=run_id)
        metrics = bundle.metrics("single")
        artifacts = _artifacts(run_id, bundle)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)


def _run_name(run_id: str | None) -> str | None:
    """The name of the MLflow run being evaluated (what the user called it), None when it has none."""
    if not run_id:
        return None
    try:
        from mlflow.tracking import MlflowClient

        return MlflowClient().get_run(run_id).info.run_name or None
    except Exception:  # noqa: BLE001 - a store that cannot say: the next default
        return None


def _model_uri(model: Any) -> str | None:
    """Where a logged model was loaded from (`runs:/…/model`, `models:/name/1`), when it says."""
    meta = getattr(model, "metadata", None)
    uri = getattr(meta, "model_uri", None) or getattr(model, "model_uri", None)
    return str(uri) if uri else None


def _running_named_evaluators() -> bool:
    """Whether MLflow is about to run the evaluators the user named (its `_evaluate` loop asks
    `can_evaluate` once more before each). Choosing the evaluators of `evaluators=None` happens
    elsewhere (`resolve_evaluators_and_configs`), and a direct call is neither."""
    frame = sys._getframe(1)
    for _ in range(6):
        frame = frame.f_back
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        if name.startswith("mlflow."):
            return frame.f_code.co_name == "_evaluate"
    return False


def unsupported_model_type(model_type: Any) -> str:
    """The refusal of a model type extracteval does not score: the accepted ones, the task
    each one scores, and how to pass options beside other evaluators."""
    from extracteval.mlflow.adapters import TASKS

    def tasks_of(mt: str) -> str:
        names = [t for t, spec in TASKS.items() if spec.model_type == mt]
        return names[0] + "".join(f', or {t} with evaluator_config={{"task": "{t}"}}' for t in names[1:])

    kinds = "; ".join(f'"{mt}" ({tasks_of(mt)})' for mt in MODEL_TYPES)
    given = "no model_type" if model_type is None else f"model_type {model_type!r}"
    return (
        f"the extracteval evaluator cannot score {given}. Pass one of its model types: {kinds}; "
        'for example mlflow.models.evaluate(data=df, targets="truth", predictions="output", '
        'model_type="extraction-fields", evaluators="extracteval", evaluator_config={"id_column": "id"}). '
        'Beside other evaluators, give extracteval\'s options under its name: evaluators=["default", "extracteval"], '
        'evaluator_config={"extracteval": {"id_column": "id"}}.'
    )


def _named_column(config: Mapping[str, Any], key: str, features: Any) -> str | None:
    """The data column an evaluator_config `key` names (None when it names none); a name that
    is not a column of the data is refused, the columns listed."""
    column = config.get(key)
    if column is None:
        return None
    if column not in features.columns:
        raise InputError(f"evaluator_config `{key}`: column {column!r} is not in the data (columns: {list(features.columns)}).")
    return column


def _status_column(config: Mapping[str, Any], features: Any, adapter: Any, task: str) -> str | None:
    """The feature column holding each record's status (`ok`, `pending`, `error`): the
    `status_column` key, else a column named `status` when the task reads statuses."""
    reads_status = "status_column" in adapter.config_keys
    column = _named_column(config, "status_column", features)
    if column is not None:
        return column
    if "status" in features.columns:
        if reads_status:
            return "status"
        print(f"extracteval: warning: column 'status' is ignored: the {task} task has no per-record status.", file=sys.stderr)
    return None


def _safety_column(config: Mapping[str, Any], features: Any, adapter: Any) -> str | None:
    """The feature column holding each record's safety score, for a task that reads one: the
    `safety_column` key, else a column named as the task's `safety_key` (`safety_score`)."""
    if "safety_column" not in adapter.config_keys:
        return None
    column = _named_column(config, "safety_column", features)
    if column is not None:
        return column
    default = str(config.get("safety_key") or "safety_score")
    return default if default in features.columns else None


def _artifacts(run_id: str, bundle: Any) -> dict[str, Any]:
    from mlflow.models.evaluation.artifacts import (
        CsvEvaluationArtifact,
        ImageEvaluationArtifact,
        JsonEvaluationArtifact,
        ParquetEvaluationArtifact,
        TextEvaluationArtifact,
    )
    from mlflow.tracking.artifact_utils import get_artifact_uri

    kinds = {".json": JsonEvaluationArtifact, ".csv": CsvEvaluationArtifact, ".parquet": ParquetEvaluationArtifact, ".html": TextEvaluationArtifact,
             ".png": ImageEvaluationArtifact}
    out: dict[str, Any] = {}
    rdir = bundle.run_dir("single")
    for p in sorted((rdir / "artifacts").rglob("*")):
        if p.is_file() and p.suffix in kinds:
            rel = p.relative_to(rdir / "artifacts").as_posix()
            # named by the file's stem; files of one stem (slices.json, slices.parquet, slices.png): the first by it, the others by name
            out[p.stem if p.stem not in out else p.name] = kinds[p.suffix](uri=get_artifact_uri(run_id, rel))
    return out


def _truth_source(dataset: Any) -> str:
    """How reports name the truth: `dataset <name>`, or `dataset` for MLflow's default name (which
    is "dataset": "dataset dataset" says nothing twice)."""
    name = str(getattr(dataset, "name", "") or "").strip()
    return f"dataset {name}" if name and name != "dataset" else "dataset"
