"""Task adapters: what the MLflow layer needs to know about each task, behind one small table.

The evaluator, the `evaluate` command, the bundle writer and the uploader are task-agnostic:
they ask an adapter to score (from CLI arguments or from a DataFrame), to turn a result into
MLflow metrics under the documented metric keys, into a per-item table (per field / tag / feature), a
per-record table for Parquet, figures and report sections. Adding a task is one adapter module
and one line in `TASKS`; nothing else changes. Adapters are imported when first asked for, so
`import extracteval.mlflow.adapters` is cheap.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from extracteval.errors import InputError
from extracteval.io.common_options import slice_config_keys
from extracteval.tasks import TASKS, TaskSpec, parts, present

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import pandas as pd

    from extracteval.core.record_counts import CountMetric, RecordCountTable

    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.predictions_file import LoggedPredictions

__all__ = ["COMMON_CONFIG_KEYS", "shared_config_keys", "ZERO_DIVISION_NAN", "check_config", "TaskSpec", "TASKS", "MODEL_TYPES", "Scored", "TaskAdapter", "Section",
           "get_adapter", "task_for_model_type", "available_tasks", "run_params", "strategies_param"]


# the exact model_types of the MLflow contract; the first task listed for a model_type is its default
MODEL_TYPES: tuple[str, ...] = tuple(dict.fromkeys(s.model_type for s in TASKS.values()))


@dataclass(frozen=True, kw_only=True)
class Scored:
    """One scored evaluation, task-agnostic.

    Attributes:
        task: task name (`fields`, …).
        result: the task's result object (frozen dataclass with `to_dict()`).
        doc: `result.to_dict()` plus `inputs`; the `--json` document and `result.json`.
        models: model names in ranking order (best first).
        truth: the ground truth as a DataFrame (logged as the MLflow dataset input, digested);
            given as a function making it, it is made when first read (`score` never reads it).
        truth_source: where the truth came from (a path, or `dataframe`).
        config: the task's effective configuration (becomes params and the config digest).
        generation: decoding settings per model when predictions came from a model.
    """

    task: str
    result: Any
    doc: dict[str, Any]
    models: tuple[str, ...]
    truth: "pd.DataFrame"
    truth_source: str
    config: Mapping[str, Any]
    generation: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # derived values computed once per evaluation (e.g. per-item intervals), keyed by the adapter
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)


def _truth(self: Scored) -> "pd.DataFrame":
    value = self.__dict__["_truth"]
    if callable(value):
        value = value()
        self.__dict__["_truth"] = value
    return value


def _set_truth(self: Scored, value: Any) -> None:  # the dataclass's __init__ (and `replace`) only
    self.__dict__["_truth"] = value


def _state(self: Scored) -> dict[str, Any]:  # pickled with the truth made (a function made here may not pickle)
    return {**self.__dict__, "_truth": self.truth}


# `Scored.truth`: a DataFrame, or a function making one when it is first read (the dataclass's
# __init__ assigns the field through this property)
Scored.truth = property(_truth, _set_truth)  # type: ignore[assignment,method-assign]
Scored.__getstate__ = _state  # type: ignore[method-assign]


@dataclass(frozen=True, kw_only=True)
class Section:
    """One block of the HTML report: a heading and a table (DataFrame), a paragraph or a list."""

    title: str
    table: "pd.DataFrame | None" = None
    text: str | None = None
    items: Sequence[str] = ()
    status_column: str | None = None  # a column whose value `False`/`failed` marks the row red


class TaskAdapter(Protocol):
    """What one task provides to the MLflow layer: every member below, on every task's adapter
    (`tasks/<task>/adapter.py`; `tests/contract/test_capabilities.py` holds each adapter to this list).

    Optional class attributes: `starts_early = True` (see `score_args`), `logged_keys`
    ({where in a logged document: option}, read by `adapter_parts.rescore_options`), and
    `counts_frame(scored, model)`: the per-record columns `record_counts` reads, when building
    them is much cheaper than `records_frame` (the paired bootstrap of `mlflow.significance`)."""

    task: str
    model_type: str
    about: str  # one line: what the task scores (`extracteval tasks`, `extracteval.tasks()`)
    item_table_name: str  # `field_metrics`, `tag_metrics`, … (CSV and MLflow table artifact names)
    # evaluator_config keys this task accepts (beyond the common ones), with a one-line meaning
    config_keys: Mapping[str, str]
    # a record is one value (a list of spans / entities / calls, a raw output) rather than a row
    # of fields: a table with one column besides the id gives that column's cell (rescore's truth)
    record_is_value: bool

    def score_args(self, args: argparse.Namespace) -> Scored:
        """Score from the `extracteval evaluate <task>` arguments (same as `score <task>`).

        An adapter whose class sets `starts_early = True` also takes `score_args(args, early=…)`
        (an `early.EarlyWork`) and starts its big artifacts there while it still scores; see
        the `fields` adapter and mlflow/early.py."""

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """Score one `experiments/<name>/experiment.yaml` (the demo)."""

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """Score the truth and each model's predictions — file paths, or tables held in memory
        (`io.memory.InMemoryTable`; predictions as `NAME=FILE` specs or (name, source) pairs) —
        read by the task's command-line reader, with `config` in evaluator_config keys: the door
        of the Python API (`extracteval.score`), which therefore gives the command line's numbers."""

    def build_config(self, config: Mapping[str, Any]) -> Any:
        """The task's config object from evaluator_config-style options (validates them)."""

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str
    ) -> Scored:
        """Score per-record targets and per-model predictions (one cell per record) from a DataFrame."""

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Write the model's predictions as scored to Parquet at `path`: the
        `extracteval/predictions.parquet` artifact that `extracteval rescore` reads back with
        `read_predictions` (layouts in mlflow/predictions_file.py). False when there is nothing a
        rescore could read (the predictions were not kept, or their layout has no record cells)."""

    def read_predictions(self, path: Any, *, source: str) -> "LoggedPredictions":
        """The artifact `write_predictions` wrote, as one prediction cell per record id that
        `score_frame` reads to the same predictions (plus statuses for its `status` argument
        when the task keeps them beside the cell); `source` names the file in errors."""

    def rescore_options(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """evaluator_config options that rebuild, through `build_config` / `score_frame`, the
        configuration a logged `result.json` document (`doc`, its `config` in particular) was
        scored with."""

    # ---- the streamed `evaluate` (`--chunk-size`, `--engine spark`; mlflow/stream.py)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        """The `chunked.ChunkJob` of `evaluate <task> --chunk-size N`: the chunk task and the
        chunks of the files of `args`, as `score <task> --chunk-size` reads them."""

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        """The `spark.engine.SparkJob` of `evaluate <task> --engine spark`."""

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> Any:
        """What `evaluate` logs of one chunk: (its truth rows, {artifact: {model: rows}}), the
        rows exactly as the in-memory run writes them."""

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        """The `Scored` of a streamed evaluation, from the merged result and what was streamed."""

    # ---- results

    def item_names(self, scored: Scored) -> Sequence[str]:
        """Names that appear inside metric keys (fields / tags / features)."""

    def metrics(self, scored: Scored, model: str, keys: "KeyMap") -> dict[str, float]:
        """MLflow metrics of one model (documented keys), keys built with `keys.key(...)` or fixed strings."""

    def comparison_metrics(self, scored: Scored, keys: "KeyMap") -> dict[str, float]:
        """Metrics of the parent (comparison) run of a multi-model evaluation."""

    def comparison_tables(self, scored: Scored) -> dict[str, "pd.DataFrame"]:
        """CSV artifacts of the parent run (`leaderboard`, `field_winners`, …), name → table."""

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> "pd.DataFrame":
        """The `leaderboard` table of these models: one row each, in ranking order."""

    def item_table(self, scored: Scored, model: str | None) -> "pd.DataFrame":
        """Per-item metrics (one row per model and item); `model=None` for every model."""

    def records_frame(self, scored: Scored, model: str | None) -> "pd.DataFrame | None":
        """Per-record classifications for Parquet; `model=None` for every model."""

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        """Artifact file name (`field_f1.png`) → matplotlib Figure."""

    def params(self, scored: Scored) -> dict[str, str]:
        """The configuration as flat string params (each value ≤ 6000 characters)."""

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        """HTML report blocks for these models."""

    def summary(self, scored: Scored) -> str:
        """Terminal leaderboard text."""

    # ---- intervals of tracked runs (`leaderboard`, `compare`; generic code in mlflow/intervals.py)
    # metric keys whose value the per-record counts determine: these get bootstrap intervals
    interval_metrics: tuple[str, ...]

    def record_counts(self, path: "Path", params: Mapping[str, str]) -> "RecordCountTable | None":
        """One model run's per-record counts (`core.record_counts.RecordCountTable`: one row per
        record id, one column per count), read from its per-record Parquet artifact at `path`;
        None when the artifact lacks what they need (a run logged by an earlier version).
        `params` are the run's params. Summed over all records they give the logged metrics."""

    def record_table(self, scored: Scored, model: str, *, sizes: bool = False) -> "tuple[RecordCountTable | None, pd.Series | None]":
        """One model's per-record counts of a scored evaluation held in memory: the table
        `record_counts` reads from the rows `records_frame(scored, model)` gives (and with
        `sizes`, what `record_sizes` reads, else None), equal to them (tested over the registry).
        A task hands its own counts over without writing rows, or reads them back through
        `mlflow.adapter_parts.logged_record_table`. (None, None) when the result keeps no per-record
        counts. Slices are taken from it."""

    def record_sizes(self, path: "Path", params: Mapping[str, str]) -> "pd.Series | None":
        """Each record's size as the task counts it (non-empty truth fields, gold spans, gold
        entities, reference calls…), read from a model run's per-record artifact at `path`: a
        Series indexed by record id, named by what it counts; None when the artifact lacks it.
        The built-in slicing `@size` bins it (`--slice-by @size`)."""

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> "CountMetric | None":
        """The function from summed counts (..., len(columns)) to `metric` (...), vectorised over
        leading axes, for a metric of `interval_metrics`; None for any other metric. `columns`
        are those of the runs' tables lined up together (a column a run lacks is zero there)."""


def available_tasks() -> list[str]:
    """Tasks whose adapter is present in this installation."""
    return list(parts("adapter"))


def get_adapter(task: str) -> TaskAdapter:
    """The adapter of `task`; a clear error for unknown or not-yet-available tasks."""
    spec = TASKS.get(task)
    if spec is None:
        raise InputError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}.")
    mod = present(task, "adapter")
    if mod is None:
        raise InputError(
            f"task {task!r} (model_type {spec.model_type!r}) is not available in this version of extracteval; "
            f"available: {', '.join(available_tasks())}."
        )
    return mod.ADAPTER


def task_for_model_type(model_type: str, requested: str | None = None) -> str:
    """The task for an MLflow `model_type` (`requested` picks among tasks sharing one)."""
    if model_type not in MODEL_TYPES:
        raise InputError(f"model_type {model_type!r} is not an extracteval model type; expected one of {', '.join(MODEL_TYPES)}.")
    candidates = [t for t, s in TASKS.items() if s.model_type == model_type]
    if requested is None:
        return candidates[0]
    if requested not in candidates:
        raise InputError(f"evaluator_config `task`={requested!r} does not go with model_type {model_type!r}; expected one of {candidates}.")
    return requested


# evaluator_config keys every task accepts (the MLflow evaluator's own; the Python API refuses
# the ones about MLflow)
COMMON_CONFIG_KEYS: Mapping[str, str] = {
    "task": "task among those sharing the model_type (`labels` for extraction-entities)",
    "id_column": "feature column holding record ids (default: `id` when present, else the row number)",
    "model_name": "name of the model in results and reports (default: the MLflow run's name, else the model URI or the predictions column, else `model`)",
    "batch_size": "rows per model call when predicting (default 64)",
    "generation": "decoding settings of the model (temperature, top_p, …), logged as params",
    "output": "folder for the local copy of the results (default: a temporary folder, removed after upload)",
    "figures": "log figures (default true)",
    "col_mapping": "MLflow's column renaming (handled by mlflow.models.evaluate)",
    **slice_config_keys(),
}


# evaluator_config keys that several tasks accept, with the one meaning they have in each
_SHARED_CONFIG_KEYS: Mapping[str, str] = dict(
    zero_division="value of an undefined ratio (0.0)",
    null_tokens="strings meaning absent (list or comma-separated)",
    dayfirst="read 01/02/2024 as 1 February (false)",
    fuzzy_scorer="rapidfuzz scorer name (ratio)",
    default_strategy="strategy of fields not listed (EXACT)",
)


# `zero_division` of the tasks that also take "nan" (`core.counts.NAN_TASKS`: labels, entities)
ZERO_DIVISION_NAN = 'value of an undefined ratio: a number in [0, 1] (0.0), or "nan": undefined, left out of every average'


def shared_config_keys(*names: str) -> dict[str, str]:
    """These keys of the evaluator_config keys several tasks accept, with their meaning (for a
    task adapter's `config_keys`)."""
    return {n: _SHARED_CONFIG_KEYS[n] for n in names}


def check_config(config: Mapping[str, Any], task_keys: Mapping[str, str], task: str, *, where: str = "evaluator_config",
                 common: Mapping[str, str] = COMMON_CONFIG_KEYS) -> None:
    """Reject unknown evaluator_config keys by name, listing the valid ones."""
    valid = {**common, **task_keys}
    unknown = sorted(set(config) - set(valid))
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)} for task {task!r}; "
            f"valid keys: {', '.join(sorted(valid))}."
        )


def run_params(scored: Scored, *, counts: Mapping[str, Any], config_keys: Sequence[str] = (), normalization: bool = False,
               **extra: str) -> dict[str, str]:
    """The MLflow params every task's run gets — `task`, `truth`, the counts of what was scored
    (`n_records`, `n_fields`, …), `models` — then the listed keys of the task's configuration as
    text, the normalization's `null_tokens` and `dayfirst` when asked, and `extra` as given."""
    cfg = dict(scored.config)
    out = {"task": scored.task, "truth": str(scored.truth_source), **{k: str(v) for k, v in counts.items()}, "models": ",".join(scored.models)}
    out.update({k: str(cfg.get(k)) for k in config_keys})
    if normalization:
        norm = cfg.get("normalization", {})
        out["null_tokens"] = ",".join(norm.get("null_tokens", []))
        out["dayfirst"] = str(norm.get("dayfirst"))
    out.update(extra)
    return out


def strategies_param(config: Mapping[str, Any]) -> str:
    """The per-field strategies as one param: their JSON, or a pointer to result.json when long."""
    import json

    strategies = config.get("strategies", {})
    text = json.dumps(strategies, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 5000 else f"{len(strategies)} per-field strategies; see extracteval/result.json (config)"
