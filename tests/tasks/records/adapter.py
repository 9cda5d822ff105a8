"""What the MLflow layer (the `evaluate` command, the evaluator plugin, the bundle, `leaderboard`,
`compare`, `rescore`) needs of the `records` task.

Metric keys of a model run: `records/accuracy`, `records/records|correct|missing|extra`, and per
field `field/<f>/accuracy`."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.cells import is_empty, record_object
from extracteval.io.wide_tables import ModelPredictions
from extracteval.mlflow import adapter_parts
from extracteval.mlflow.adapters import Scored, Section, run_params
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.predictions_file import CellPredictions, prediction_cells_frame, write_prediction_cells

from tests.tasks.records import engines
from tests.tasks.records.metrics import METRICS
from tests.tasks.records.semantics import RecordsResult, document, record_rows, score_records

_RECORD_COLUMNS = ["model", "record_id", "status", "correct"]


def _cells(values: pd.DataFrame) -> dict[str, Any]:
    """Record id → its prediction as the predictions file keeps it (an object of fields)."""
    return dict(zip((str(i) for i in values.index), values.to_dict(orient="records")))


def _object(value: Any) -> dict[str, Any] | None:
    obj, _why = record_object(value)
    return {str(k): v for k, v in obj.items()} if isinstance(obj, dict) else None


class RecordsAdapter(CellPredictions):
    task = "records"
    model_type = "extraction-fields"  # shared with `fields`: evaluator_config {"task": "records"}
    about = "whole-record exact match: a record is right when every field is"
    item_table_name = "field_metrics"
    record_is_value = False
    config_keys: Mapping[str, str] = {"zero_division": "accuracy when there are no truth records (0.0)"}
    interval_metrics = METRICS  # the metrics the per-record counts determine: intervals for each

    # ---- scoring

    def _scored(self, result: RecordsResult, truth: pd.DataFrame, truth_source: str, preds: Sequence[ModelPredictions],
                inputs: Mapping[str, Any], doc: dict[str, Any] | None = None) -> Scored:
        doc = document(result, inputs) if doc is None else doc
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=truth, truth_source=truth_source, config=doc["config"])
        scored.cache["inputs"] = {p.name: p.values for p in preds}
        return scored

    def _score(self, truth: Any, preds: Sequence[ModelPredictions], truth_source: str, config: Any) -> Scored:
        result = score_records(truth, preds, config)
        return self._scored(result, truth, truth_source, preds, {"truth": truth_source, "predictions": {p.name: p.source for p in preds}})

    def score_args(self, args: argparse.Namespace) -> Scored:
        from tests.tasks.records.inputs import load_inputs

        truth, preds, source = load_inputs(args.truth, args.predictions, id_column=args.id_column, delimiter=args.delimiter)
        return self._score(_without_metadata(truth, args), preds, source, self.build_config(args))

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        return self.score_args(argparse.Namespace(truth=str(folder / spec["truth"]), id_column=spec.get("id_column", "id"), delimiter=None,
                                                  predictions=[f"{m}={folder / p}" for m, p in spec["predictions"].items()],
                                                  zero_division=spec.get("zero_division")))

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        from tests.tasks.records.inputs import load_inputs

        frame, preds, source = load_inputs(truth, predictions, id_column=id_column)
        return self._score(_without_metadata(frame, config), preds, source, self.build_config(config))

    def build_config(self, config: Any) -> Any:
        from tests.tasks.records.options import build_config

        return build_config(config)

    def score_frame(self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any],
                    truth_source: str, status: Mapping[str, Sequence[Any]] | None = None) -> Scored:
        """Targets: per record an object of fields (a dict or its JSON text). A prediction cell is
        such an object; an empty one is no prediction, and one that is not an object is counted
        under `invalid_outputs` and scored as no prediction. (`status` is not read: this task has
        no `status_column`, so the evaluator never passes one.)"""
        ids = adapter_parts.frame_ids(ids, targets, predictions, truth_source, nonempty=True)
        rows = []
        for rid, v in zip(ids, targets):
            obj = _object(v)
            if obj is None:
                raise InputError(f"{truth_source}: record {rid!r}: expected an object of fields, but found {type(v).__name__}.")
            rows.append(obj)
        truth = pd.DataFrame.from_records(rows, index=pd.Index(ids, name="id"))
        preds, invalid = [], {}
        for name, cells in predictions.items():
            keep, objs = [], []
            for rid, v in zip(ids, cells):
                if is_empty(v):
                    continue
                obj = _object(v)
                if obj is None:
                    invalid.setdefault(name, []).append(rid)
                    continue
                keep.append(rid)
                objs.append(obj)
            values = pd.DataFrame.from_records(objs, index=pd.Index(keep, name="id")) if objs else pd.DataFrame(index=pd.Index([], name="id", dtype=object))
            preds.append(ModelPredictions(name=name, values=values, source=f"predictions of model {name!r}"))
        result = score_records(truth, preds, self.build_config(config))
        doc = document(result, {"truth": truth_source, "predictions": {p.name: p.source for p in preds}})
        doc["invalid_outputs"] = {m: {"count": len(v), "record_ids": v[:20]} for m, v in sorted(invalid.items())}
        return self._scored(result, truth, truth_source, preds, doc["inputs"], doc)

    # ---- `rescore`

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        values = scored.cache.get("inputs", {}).get(model)
        if values is None:
            return False
        write_prediction_cells(_cells(values), path)
        return True

    def rescore_options(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return adapter_parts.rescore_options(self, doc)

    # ---- the streaming engines

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        return engines.chunk_job(args, chunk_size=chunk_size)

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        return engines.spark_job(args, spark)

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
        chunk = chunk.materialised()
        records = {p.name: self._record_frame(p.name, chunk.truth, p.values, task.fields) for p in chunk.predictions}
        return chunk.truth, {"records": records, "predictions": {p.name: prediction_cells_frame(_cells(p.values)) for p in chunk.predictions}}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.mlflow.stream import stream_scored

        return stream_scored(self.task, result, result.to_dict(), streamed)

    # ---- metrics and tables

    def item_names(self, scored: Scored) -> Sequence[str]:
        return list(scored.result.fields)

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        r = scored.result.models[model]
        out = {f"records/{k}": float(getattr(r, k)) for k in ("accuracy", "records", "correct", "missing", "extra")}
        out.update({keys.key("field", f, "accuracy"): float(a) for f, a in r.fields.items()})
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        return {keys.key("models", m, "records", "accuracy"): float(r.accuracy) for m, r in scored.result.models.items()}

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        return {"leaderboard": self.ranking_table(scored, scored.models)}

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        rows = [{"rank": (r := scored.result.models[m]).rank, "model": m, "accuracy": r.accuracy, "correct": r.correct, "records": r.records,
                 "missing": r.missing, "extra": r.extra, "tier": r.tier} for m in models]
        return pd.DataFrame(rows, columns=["rank", "model", "accuracy", "correct", "records", "missing", "extra", "tier"])

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        models = scored.models if model is None else [model]
        return pd.DataFrame([{"model": m, "field": f, "accuracy": a} for m in models for f, a in scored.result.models[m].fields.items()],
                            columns=["model", "field", "accuracy"])

    @staticmethod
    def _record_frame(model: str, truth: pd.DataFrame, values: pd.DataFrame, fields: Sequence[str]) -> pd.DataFrame:
        rows = record_rows(truth, values, fields)
        return pd.DataFrame({"model": model, "record_id": rows["record_id"].astype(str), "status": rows["status"].astype(str),
                             "correct": rows["correct"].astype(bool)}, columns=_RECORD_COLUMNS)

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id, status (`aligned`, `missing`, `extra`), correct: one row per model and record."""
        inputs = scored.cache.get("inputs")
        if inputs is None:
            return None
        models = scored.models if model is None else [model]
        frames = [self._record_frame(m, scored.truth, inputs[m], scored.result.fields) for m in models]
        return pd.concat(frames, ignore_index=True) if frames else None

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from tests.tasks.records.outputs import field_figure

        table = self.item_table(scored, None)
        return {"field_accuracy.png": field_figure(table[table["model"].isin(list(models))])}

    def params(self, scored: Scored) -> dict[str, str]:
        return run_params(scored, counts={"n_records": scored.result.n_records, "n_fields": len(scored.result.fields)}, config_keys=("zero_division",))

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        return [Section(title="Ranking", table=self.ranking_table(scored, models))] + adapter_parts.closing_sections(scored.doc.get("warnings") or [],
                                                                                                                     scored.doc["config"])

    def summary(self, scored: Scored) -> str:
        from tests.tasks.records.outputs import render

        return render(scored.doc)

    # ---- intervals of tracked runs

    record_table = adapter_parts.logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: its fields (every record has them all: one size)."""
        import pyarrow.parquet as pq

        names = pq.ParquetFile(path).schema_arrow.names
        frame = pq.read_table(path, columns=["record_id"]).to_pandas()
        sizes = pd.Series(sum(1 for n in names if n.startswith("f:")), index=frame["record_id"].astype(str).to_numpy(dtype=object))
        sizes = sizes.groupby(level=0, sort=False).first()
        sizes.name = "fields"
        return sizes

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: `records` (1 for a truth record) and `correct`."""
        from extracteval.core.record_counts import RecordCountTable
        from extracteval.mlflow.intervals import read_records

        frame = read_records(path, ["record_id", "status", "correct"])
        if frame is None:
            return None
        truth = (frame["status"].astype(str) != "extra").to_numpy()
        return RecordCountTable.from_columns(frame["record_id"].astype(str).to_numpy(dtype=object),
                                             {"records": truth.astype(np.int64), "correct": (truth & frame["correct"].to_numpy(dtype=bool)).astype(np.int64)})

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        from extracteval.mlflow.intervals import zero_division_param

        from tests.tasks.records.metrics import count_metrics

        if metric not in self.interval_metrics:
            return None
        zd = zero_division_param(params)
        return lambda summed: count_metrics({c: summed[..., k] for k, c in enumerate(columns)}, which=(metric,), zero_division=zd)[metric]


ADAPTER = RecordsAdapter()


def _without_metadata(truth: pd.DataFrame, options: Any) -> pd.DataFrame:
    """The truth without the columns the options make record metadata (`--slice-by`, `--cluster-by`): they are not fields."""
    from extracteval.io.config import metadata_columns

    drop = [c for c in metadata_columns(options) if c in truth.columns]
    return truth.drop(columns=drop) if drop else truth
