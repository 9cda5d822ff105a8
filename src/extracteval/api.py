"""The Python API, for notebooks: `extracteval.score(task, truth, predictions, **config)`.

Every task, one call, the numbers `extracteval score` gives::

    >>> import extracteval                                                       # doctest: +SKIP
    >>> r = extracteval.score("fields", "experiments/contracts/truth.csv",
    ...                       {"gpt-4o-mini": "experiments/contracts/predictions/gpt-4o-mini.csv"},
    ...                       strategies="experiments/contracts/strategies.yaml")
    >>> r.metrics("gpt-4o-mini")["overall/f1"]                                   # doctest: +SKIP
    >>> r.items()            # one row per model and field / tag / feature        # doctest: +SKIP
    >>> r.records()          # per-record counts                                   # doctest: +SKIP
    >>> r.log_to_mlflow(experiment="contracts")                                    # doctest: +SKIP

Inputs: the truth and each model's predictions as a DataFrame, a list of dicts (one per record)
or a file path (CSV/TSV, JSONL, JSON, Parquet with one row per record). Records are matched by
`id_column` (default `id`). A record is a row (`fields`, `json`, `labels`: one column per field,
feature or key) or, for the tasks whose record is one value (`spans`, `entities`, `structured`,
`toolcalls`), the row's only other column (a list of spans, of entities, of calls, or the raw
output), or the whole row as an object when it has several (e.g. `{"text", "spans"}`). Each cell
is read exactly as `mlflow.models.evaluate(..., evaluators="extracteval")` reads it, and so as the
command line reads the file (JSON lists in text cells, ```json fences, `status` values…).
`config`: the task's `evaluator_config` keys (`strategies`, thresholds, `status_column`…).

Importing this module imports neither mlflow nor matplotlib; `log_to_mlflow` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extracteval.errors import InputError

__all__ = ["score", "tasks", "read_truth", "ScoreResult"]

def tasks() -> list[dict[str, str]]:
    """The tasks of this installation: name, MLflow model type and what the task scores."""
    from extracteval.tasks import listing

    return listing()


@dataclass(frozen=True)
class ScoreResult:
    """One scored evaluation: the `--json` document, per-model metrics (the MLflow keys), per-item
    and per-record tables, and `log_to_mlflow`."""

    task: str
    models: tuple[str, ...]  # ranking order, best first
    scored: Any = field(repr=False)
    adapter: Any = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable document (what `extracteval score <task> --json` prints)."""
        return dict(self.scored.doc)

    @property
    def warnings(self) -> list[str]:
        return list(self.scored.doc.get("warnings", []))

    def metrics(self, model: str | None = None) -> dict[str, float]:
        """The metrics a model's MLflow run gets (keys as logged); `model=None`: the best one."""
        from extracteval.core.ranking import ranking_spec
        from extracteval.mlflow.bundle import alone, metric_keys, model_run_metrics
        from extracteval.mlflow.descriptions import headline_metrics

        met = model_run_metrics(self.scored, self.adapter, self._model(model), metric_keys(self.scored, self.adapter))
        met = alone(met) if len(self.models) == 1 else met
        return {**headline_metrics(ranking_spec(self.task), met), **met}  # the run's `Main/…` headline keys too

    def items(self, model: str | None = None) -> Any:
        """Per-item metrics (one row per model and field / tag / feature) as a DataFrame."""
        return self.adapter.item_table(self.scored, None if model is None else self._model(model))

    def records(self, model: str | None = None) -> Any:
        """Per-record classifications (what `records.parquet` holds) as a DataFrame."""
        return self.adapter.records_frame(self.scored, None if model is None else self._model(model))

    def summary(self) -> str:
        """The terminal leaderboard text."""
        return self.adapter.summary(self.scored)

    def log_to_mlflow(self, *, experiment: str | None = None, run_name: str | None = None, tracking_uri: str | None = None,
                      figures: bool = True) -> dict[str, Any]:
        """Log as `extracteval evaluate` does (one run per model, a parent run for several) and
        return what was logged: experiment id and run ids."""
        import shutil
        import tempfile

        from extracteval.mlflow.bundle import write_bundle
        from extracteval.mlflow.upload import default_tracking_uri, upload_bundle

        uri = tracking_uri or default_tracking_uri()
        out = Path(tempfile.mkdtemp(prefix="extracteval-"))
        try:
            bundle = write_bundle(self.scored, self.adapter, out / "bundle", experiment=experiment, run_name=run_name,
                                  tracking_uri=uri, figures=figures)
            return upload_bundle(bundle, tracking_uri=uri, experiment=experiment).to_dict()
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def _model(self, model: str | None) -> str:
        if model is None:
            return self.models[0]
        if model not in self.models:
            raise InputError(f"no model {model!r} in this result; models: {', '.join(self.models)}.")
        return model


def score(task: str, truth: Any, predictions: Any, *, id_column: str = "id", **config: Any) -> ScoreResult:
    """Score `predictions` against `truth` with `task`'s engine.

    Args:
        task: one of `extracteval.tasks()` (`fields`, `json`, `spans`, `labels`, `entities`,
            `structured`, `toolcalls`).
        truth: DataFrame, list of dicts (one per record) or file path.
        predictions: a mapping model name → DataFrame / list of dicts / file path, or one of
            those alone (named after the file, or `model`).
        id_column: the column (key) holding record ids.
        config: the task's options, as in `evaluator_config` (e.g. `strategies`, `bootstrap`,
            `status_column`); an unknown key is an error naming the valid ones.

    A prediction for an id not in the truth is ignored with a warning (the result's `warnings`);
    a truth record without prediction is a missing output, as in the command line.
    """
    from extracteval.mlflow.tasks import check_config, get_adapter

    adapter = get_adapter(task)
    check_config(config, adapter.config_keys, task, where="extracteval.score", common={})
    if isinstance(predictions, Mapping):
        named = {str(k): v for k, v in predictions.items()}
    else:
        named = {Path(predictions).stem if isinstance(predictions, (str, Path)) else "model": predictions}
    if not named:
        raise InputError("extracteval.score: no predictions; give {model name: predictions}.")
    ids, targets, t_source = read_truth(truth, adapter, id_column=id_column)
    cells: dict[str, list[Any]] = {}
    notes: list[str] = []
    known = set(ids)
    status_column = config.get("status_column")
    status: dict[str, list[Any]] | None = {} if status_column is not None else None
    for name, given in named.items():
        p_frame, p_source = _frame(given, f"predictions of model {name!r}", id_column)
        p_ids = _unique_ids(p_frame, p_source, id_column)
        if status is not None:
            if status_column not in p_frame.columns:
                raise InputError(f"`status_column`: {p_source} has no column {status_column!r}.")
            by_status = dict(zip(p_ids, p_frame[status_column]))
            status[name] = [by_status.get(i) for i in ids]
            p_frame = p_frame.drop(columns=[status_column])
        by_id = dict(zip(p_ids, _cells(p_frame, adapter, id_column)))
        extra = [i for i in p_ids if i not in known]
        if extra:
            notes.append(f"model {name!r}: {len(extra)} prediction(s) for ids not in the truth were ignored: "
                         + ", ".join(repr(x) for x in extra[:5]) + (" …" if len(extra) > 5 else ""))
        cells[name] = [by_id.get(i) for i in ids]
    options = {k: v for k, v in config.items() if k != "status_column"}
    extra_kw = {"status": status} if status is not None else {}
    scored = adapter.score_frame(ids=ids, targets=targets, predictions=cells, config=options, truth_source=t_source, **extra_kw)
    if notes:
        scored.doc["warnings"] = [*notes, *scored.doc.get("warnings", [])]
    return ScoreResult(task=task, models=tuple(scored.models), scored=scored, adapter=adapter)


def read_truth(value: Any, adapter: Any, *, id_column: str = "id", delimiter: str | None = None) -> tuple[list[str], list[Any], str]:
    """(record ids, one target cell per record, where the truth came from): a ground truth
    (DataFrame, list of dicts or file path) read as `score` reads it; ids must be unique."""
    frame, source = _frame(value, "truth", id_column, delimiter=delimiter)
    return _unique_ids(frame, source, id_column), _cells(frame, adapter, id_column), source


def _unique_ids(frame: Any, source: str, id_column: str) -> list[str]:
    """The frame's record ids as text; duplicates refused as the file readers refuse them."""
    from extracteval.io.tables import _dup_error

    ids = [str(i) for i in frame[id_column]]
    if len(set(ids)) != len(ids):
        _dup_error(source, ids)
    return ids


def _frame(value: Any, what: str, id_column: str, *, delimiter: str | None = None) -> tuple[Any, str]:
    """A DataFrame of records with `id_column`, and where it came from."""
    import pandas as pd

    if isinstance(value, (str, Path)):
        from extracteval.io.tables import read_table

        frame, source = read_table(value, delimiter=delimiter), str(value)
    elif isinstance(value, pd.DataFrame):
        frame, source = value, what
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(isinstance(r, Mapping) for r in value):
        frame, source = pd.DataFrame([dict(r) for r in value], dtype=object), what
    else:
        raise InputError(f"{what}: expected a DataFrame, a list of dicts (one per record) or a file path, but found {type(value).__name__}.")
    if id_column not in frame.columns:
        cols = [str(c) for c in frame.columns][:20]
        raise InputError(f"{source}: no {id_column!r} column; columns found: {cols}. Pass id_column=NAME if the ids are elsewhere.")
    return frame, source


def _cells(frame: Any, adapter: Any, id_column: str) -> list[Any]:
    """One cell per record: the row as an object, or, for a task whose record is one value
    (`adapter.record_is_value`) and a row with one other column than the id, that column's cell."""
    rest = [c for c in frame.columns if c != id_column]
    if adapter.record_is_value and len(rest) == 1:
        return list(frame[rest[0]])
    return frame[rest].to_dict(orient="records")
