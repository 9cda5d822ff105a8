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

Inputs: the truth and each model's predictions as a file path, a DataFrame (pandas, pyarrow or
polars) or a list of dicts (one per record). They go through the reader of `extracteval score
<task>` — a file as it is; a table in memory in the place of a file holding the same records — and
the same engine, so the API gives the command line's numbers: the same ids checks, `status`
values, JSON lists in text cells, missing and extra records. `config`: the task's
`evaluator_config` keys (`strategies`, thresholds, `status_column`…).

Importing this module imports neither mlflow nor matplotlib; `log_to_mlflow` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extracteval.errors import InputError

__all__ = ["score", "tasks", "ScoreResult"]

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
    def slices(self) -> Any:
        """The slices (`slice_by` / `cluster_by`) as a DataFrame: one row per slicing, value and
        model (`score --json`'s `slices.rows`); None when the evaluation was not sliced. The
        whole document (gaps, weakest slices, notes) is `to_dict()["slices"]`."""
        from extracteval.mlflow.slicing import SLICE_REPORT

        report = self.scored.cache.get(SLICE_REPORT)
        return None if report is None else report.frame()

    @property
    def warnings(self) -> list[str]:
        return list(self.scored.doc.get("warnings", []))

    def metrics(self, model: str | None = None) -> dict[str, float]:
        """The metrics a model's MLflow run gets (keys as logged); `model=None`: the best one."""
        from extracteval.tasks import ranking_spec
        from extracteval.mlflow.bundle import alone, metric_keys, model_run_metrics
        from extracteval.mlflow.descriptions import headline_metrics, standings
        from extracteval.mlflow.significance import ensure_significance, logged_doc

        spec, keys, name = ranking_spec(self.task), metric_keys(self.scored, self.adapter), self._model(model)
        ensure_significance(self.scored, self.adapter)  # the intervals and verdicts the runs get, where the task has none of its own
        met = model_run_metrics(self.scored, self.adapter, name, keys)
        if len(self.models) == 1:
            return {**headline_metrics(spec, alone(met)), **alone(met)}  # the run's `Main/…` headline keys too
        scores = {m: met.get(spec.primary) if m == name else model_run_metrics(self.scored, self.adapter, m, keys).get(spec.primary)
                  for m in self.models}
        doc = logged_doc(self.scored)
        comparisons = doc.get("comparisons") if isinstance(doc.get("comparisons"), list) else []
        return {**headline_metrics(spec, met, standings(list(self.models), scores, comparisons)[name]), **met}

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
            those alone: then named as `--predictions FILE` names it (after the file, or `model`
            for data in memory), or by its `model` column when it holds several models.
        id_column: the column (key) holding record ids.
        config: the task's options, as in `evaluator_config` (e.g. `strategies`, `bootstrap`,
            `status_column`), and the slicing keys (`slice_by`, `metadata`, `metadata_id`,
            `slice_bins`, `slice_min_size`, `cluster_by`: docs/slices.md); an unknown key is an
            error naming the valid ones. A column named by `slice_by` or `cluster_by` is read
            from `metadata` (a file or a DataFrame keyed by record id) when it is given — the
            truth is then scored whole, as on the command line — or else from the truth itself,
            where it is not scored.

    Every input is read by the reader `extracteval score <task>` uses and scored by the same
    engine, so the result is the command line's for the same records: a file path is read as
    that file; a DataFrame, pyarrow Table or polars DataFrame as the same table in a file; a
    list of dicts as a JSON array of those records. Predictions for ids outside the truth, truth
    records without prediction and `status` values are treated as the command line treats them
    for the task.
    """
    from extracteval.mlflow.adapters import check_config, get_adapter
    from extracteval.mlflow.slicing import attach_slices, slice_config_keys, slicing_for

    adapter = get_adapter(task)
    slice_keys = slice_config_keys()
    check_config(config, adapter.config_keys, task, where="extracteval.score", common=slice_keys)
    status_column = config.get("status_column")
    # the command line's reader and scorer: files as they are, tables in memory in their place
    t_in = _source(truth, "truth", None)
    slicing = slicing_for({**config, "truth": t_in, "id_column": id_column})  # before scoring: a wrong column fails fast
    if isinstance(predictions, Mapping):
        p_in: list[Any] = [(str(k), _source(v, f"predictions of model {str(k)!r}", status_column)) for k, v in predictions.items()]
    else:  # unnamed, as `--predictions FILE`: named after the file, or by its `model` column
        p_in = [_source(predictions, "predictions", status_column)]
    if not p_in:
        raise InputError("extracteval.score: no predictions; give {model name: predictions}.")
    from extracteval.core.collector import bulk_work

    with bulk_work():
        # the slicing keys go to the task too: a column of the truth they name is metadata, which its configuration leaves unscored
        scored = adapter.score_inputs(t_in, p_in, {k: v for k, v in config.items() if k != "status_column"}, id_column=id_column)
        if slicing is not None:
            attach_slices(scored, slicing)
    return ScoreResult(task=task, models=tuple(scored.models), scored=scored, adapter=adapter)


def _source(value: Any, what: str, status_column: str | None) -> Any:
    """What the task's reader takes: a file path as it is, or a table in memory wrapped for the
    readers. With `status_column`, the input is read as a table whose column `status_column` is
    the `status` column the readers know (records as rows: a status per record, in every task)."""
    from extracteval.io.memory import InMemoryTable, in_memory, renamed

    if isinstance(value, (str, Path)):
        if status_column in (None, "status"):
            return Path(value)
        path = Path(value)
        if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
            from extracteval.io.json_text import read_record_file

            table = InMemoryTable([rec for _, rec in read_record_file(path)], str(path))
        else:
            from extracteval.io.tables import read_table

            table = InMemoryTable(read_table(path), str(path))
    else:
        table = in_memory(value, what)
        if table is None:
            raise InputError(f"{what}: expected a DataFrame, a list of dicts (one per record) or a file path, but found {type(value).__name__}.")
    if status_column in (None, "status"):
        return table
    return renamed(table, status_column, "status", what="status_column")
