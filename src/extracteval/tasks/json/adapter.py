"""MLflow adapter of the `json` task: RQS, completeness, hallucination, accuracy,
bucket totals and per-field accuracy as metrics; per-record scores and bucket listings as
Parquet; the RQS histogram and per-field accuracy as figures.

Metric keys (one model's run): `rqs/mean|median|min|max`, `json/completeness|hallucination|
accuracy|safety`, `json/buckets/<bucket>` (summed over records), `json/scored|matched|ignored|
similarity_failures|missing_records|invalid_predictions|excluded_records`,
`field/<name>/accuracy|completeness|scored|matched|<bucket>`, `wins/field_wins`,
`wins/fields_scored`, `ranking/rank`. The task computes no intervals, so there are no CI bounds.
Field winners are decided on per-field accuracy, exactly as the cross-run leaderboard decides
them from `field/<name>/accuracy` (`RANKING` in `contract.py`).
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.cells import is_empty, is_missing, record_object, status_text
from extracteval.mlflow.adapter_parts import (closing_sections, frame_ids, is_winner, parent_head, rank_metrics, winner_kind_metrics, winners_table, rescore_options, build_config,
                                            logged_record_table)
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.predictions_file import CellPredictions, write_prediction_cells
from extracteval.tasks.json.metrics import METRICS, SCORES, count_metrics
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys, strategies_param

__all__ = ["ADAPTER", "JsonAdapter"]

_BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")
_MODEL_COUNTS = ("scored", "matched", "ignored", "similarity_failures", "missing_records", "invalid_predictions", "excluded_records")
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```\s*$", re.DOTALL)


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _truth_frame(truth: Mapping[str, Any]) -> pd.DataFrame:
    """The ground truth as a table for the dataset input and its digest: one row per record id,
    the object as canonical JSON (key order and file layout do not change the digest)."""
    ids = sorted(str(k) for k in truth)
    by_id = {str(k): v for k, v in truth.items()}
    return pd.DataFrame({"truth": [_canonical(by_id[i]) for i in ids]}, index=pd.Index(ids, name="id"))


def _parse_object(value: Any, *, what: str, record: str, strict: bool) -> Any:
    """A cell → a JSON object. Truth must be one (strict: InputError naming the record); a model
    output that is not one is returned as is, and the scorer counts it as an invalid prediction."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        text = value
        fenced = _FENCE.match(text)  # LLM outputs often wrap the object in a ```json fence
        if fenced:
            text = fenced.group(1)
        try:
            obj = json.loads(text)
        except ValueError as e:
            if strict:
                raise InputError(f"{what}: record {record!r}: expected a JSON object, but found invalid JSON ({e}).") from None
            return value
        if isinstance(obj, dict) or not strict:
            return obj
        raise InputError(f"{what}: record {record!r}: expected a JSON object, but found a JSON {type(obj).__name__}.")
    if strict:
        if is_missing(value):
            raise InputError(f"{what}: record {record!r}: the ground truth is empty; expected a JSON object (dict or JSON string).")
        raise InputError(f"{what}: record {record!r}: expected a JSON object (dict or JSON string), but found {type(value).__name__}.")
    return value


def _prediction_cells(p: Any, safety_key: str) -> dict[str, Any]:
    """One model's predictions (`JsonPredictions`) as the cells `write_predictions` logs."""
    cells: dict[str, Any] = {}
    for rid in dict.fromkeys([*p.records, *p.status]):
        cell: dict[str, Any] = {"prediction": p.records.get(rid)}
        if p.status.get(rid):
            cell["status"] = p.status[rid]
        if rid in p.safety:
            cell[safety_key] = p.safety[rid]
        cells[str(rid)] = cell
    return cells


_LISTED = ("extra_keys", "gt_null_aio_has_value", "aio_missing_or_null", "both_non_null")
_LOWEST = 10  # lowest-scoring records the report lists per model
_LOWEST_COLUMNS = ["record_id", "rqs", "completeness", "hallucination", "accuracy", "flags", "keys_aio_missing_or_null", "keys_mismatched",
                   "keys_extra_keys", "keys_gt_null_aio_has_value"]


def record_listing(rec: pd.DataFrame, cells: pd.DataFrame, *, text_arrays: bool = False) -> pd.DataFrame:
    """`rec` (one model's per-record scores, `records_frame()`) with the bucket listing of each
    record: `keys_<bucket>` and `keys_mismatched`, lists of keys / paths, from `cells` (its
    `cells_frame()`, sorted by record, then key). Adds the columns to `rec` and returns it.
    `text_arrays`: numpy text arrays instead of lists, which Arrow types list<string> even when
    empty (so a streamed chunk whose lists are all empty has the file's schema)."""
    n = len(rec)
    code = pd.Index(rec["record_id"]).get_indexer(cells["record_id"])
    keys = cells["key"].to_numpy(dtype=object)
    bucket = cells["bucket"].to_numpy(dtype=object)
    both = bucket == "both_non_null"
    masks = {b: bucket == b for b in _LISTED}
    masks["mismatched"] = both & (cells["strategy"].to_numpy(dtype=object, na_value=None) != "IGNORE") & ~cells["matched"].to_numpy(dtype=bool)
    for name, mask in masks.items():
        counts = np.bincount(code[mask], minlength=n)
        parts = np.split(keys[mask].astype(str) if text_arrays else keys[mask], np.cumsum(counts)[:-1]) if n else []
        rec[f"keys_{name}"] = parts if text_arrays else [part.tolist() for part in parts]
    return rec


def _lowest(frame: pd.DataFrame, n: int = _LOWEST) -> pd.DataFrame:
    return frame.sort_values(["rqs", "record_id"], kind="stable").head(n)


_NO_OUTPUT = object()
_PAIR_KEYS = frozenset({"prediction", "truth", "model", "status", "id"})


def read_prediction(value: Any, safety_key: str) -> tuple[Any, str, float | None]:
    """A model's prediction cell → (object, status, safety score), as the file readers read a
    record. An empty cell is no output (`_NO_OUTPUT`). Text is parsed as JSON (also inside a
    ```json fence or after prose); what is not readable is returned as it is (an invalid
    prediction, counted by the scorer). A record of the pairs layout, `{"prediction": …,
    "status"?, "<safety key>"?, "truth"?, "id"?, "model"?}` (a row of a pairs file as pandas
    reads it), is unwrapped; a numeric `<safety key>` of the object is its safety score."""
    if is_empty(value):
        return _NO_OUTPUT, "", None
    obj, _problem = record_object(value)
    if obj is None:
        return value, "", None
    status, safety = "", None
    if isinstance(obj, dict) and "prediction" in obj and set(obj) - {safety_key} <= _PAIR_KEYS:
        status = status_text(obj.get("status"))
        safety = obj.get(safety_key)
        inner = obj["prediction"]
        if is_missing(inner):
            return _NO_OUTPUT, status, None
        obj, _problem = record_object(inner)
        if obj is None:
            return inner, status, None
    if isinstance(obj, dict) and safety_key in obj:
        obj = dict(obj)
        safety = obj.pop(safety_key)
    if safety is not None and is_missing(safety):
        safety = None
    return obj, status, safety


def _safety_cell(value: Any, rid: str, own: float | None) -> float | None:
    """A record's cell of the evaluator's `safety_column`: its score, a number in [0, 1]; an
    empty cell leaves the prediction object's own score (`own`)."""
    if is_empty(value) or is_missing(value):
        return own
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, numbers.Real) or not math.isfinite(float(number)) or not 0.0 <= float(number) <= 1.0:
        raise InputError(f"evaluator_config `safety_column`: record {rid!r}: expected a safety score, a number in [0, 1], but found {value!r}.")
    return float(number)


class JsonAdapter(CellPredictions):
    task = "json"
    record_is_value = False
    model_type = "extraction-json"
    about = "JSON objects: completeness, hallucination, accuracy with per-field strategies, RQS"  # what the task scores (`extracteval tasks`)
    item_table_name = "field_accuracy"  # artifacts extracteval/field_accuracy.csv and field_accuracy_table.json
    # means over the records the model is scored on (pending / error records are excluded)
    _MEANS = SCORES  # metric → the per-record score it is the mean of
    interval_metrics = METRICS

    record_table = logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: its truth keys holding a value."""
        from extracteval.mlflow.intervals import record_sizes_of

        return record_sizes_of(path, ("gt_non_null",), "non-null truth keys")

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: `records` (1 for a record the means count, 0 for an excluded one) and its
        RQS and phase scores (0 for an excluded record): each mean is a sum over `records`."""
        from extracteval.core.record_counts import RecordCountTable
        from extracteval.mlflow.intervals import read_records

        values = list(dict.fromkeys(self._MEANS.values()))
        frame = read_records(path, ["record_id", "flags", *values])
        if frame is None:
            return None
        keep = ~frame["flags"].fillna("").astype(str).str.contains("excluded:", regex=False).to_numpy(dtype=bool)
        cols = {"records": keep.astype(np.int64), **{v: np.where(keep, frame[v].to_numpy(dtype=np.float64, na_value=0.0), 0.0) for v in values}}
        return RecordCountTable.from_columns(frame["record_id"].astype(str).to_numpy(dtype=object), cols)

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        if metric not in self._MEANS or self._MEANS[metric] not in columns:
            return None
        # a model with no scored record has means of 0.0, as its logged metrics
        return lambda summed: count_metrics({c: summed[..., k] for k, c in enumerate(columns)}, which=(metric,))[metric]
    config_keys: Mapping[str, str] = {
        "strategies": "per-field strategy: mapping {field or path: EXACT|FUZZY|SEMANTIC|IGNORE} or a JSON/YAML file path",
        "fuzzy_threshold": "FUZZY match threshold in [0, 1] (0.85)",
        "semantic_threshold": "SEMANTIC match threshold in [0, 1] (0.80)",
        "weights": "RQS weights {accuracy, completeness, hallucination, safety} (0.45/0.25/0.15/0.15); added to a strategies file's weights",
        "clamp": "RQS interval [low, high] ([0, 1])",
        "flatten": "classify nested paths (a.b, items[0]) instead of top-level keys (false)",
        "default_safety": "safety score of a record without one (1.0)",
        "safety_key": "key of a prediction object holding its safety score (safety_score)",
        "similarity": "backend of SEMANTIC fields: lexical (default), fuzzy, embedding, llm_judge",
        "similarity_options": "options of the similarity backend (mapping; no API keys)",
        "status_column": "column holding each record's status: ok, pending or error; pending and error are excluded (default: `status` when present)",
        "safety_column": "column holding each record's safety score in [0, 1], over one inside the prediction object (default: a column named as `safety_key` when present)",
        **shared_config_keys("fuzzy_scorer", "null_tokens", "dayfirst"),
    }

    # ---- scoring -------------------------------------------------------------------------------

    def score_args(self, args: argparse.Namespace) -> Scored:
        """`extracteval score json` in memory (its command runs this), keeping the ground truth
        for the dataset input."""
        from extracteval.tasks.json.options import build_config
        from extracteval.core.normalize import Normalizer
        from extracteval.core.similarity import get_similarity
        from extracteval.tasks.json.inputs import load_json_inputs

        config, sim_name, sim_opts = build_config(args)
        backend = get_similarity(sim_name, **sim_opts)
        normalizer = Normalizer(config.normalization)
        truth, preds, truth_source, notes = load_json_inputs(
            args.truth, args.predictions, id_key=args.id_key, safety_key=config.safety_key, is_absent=normalizer.is_absent,
            metadata=config.metadata,
        )
        include = {"auto": None, "all": True, "none": False}[getattr(args, "records", "auto") or "auto"]
        return self._scored(truth, preds, config, backend, truth_source, notes, include_records=include,
                            inputs={"truth": truth_source, "predictions": {p.name: p.source for p in preds}})

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The truth and each model's predictions (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door."""
        from extracteval.core.normalize import Normalizer
        from extracteval.core.similarity import get_similarity
        from extracteval.tasks.json.inputs import load_json_inputs

        cfg, sim_name, sim_opts = self.build_config(config)
        backend = get_similarity(sim_name, **sim_opts)
        truth_map, preds, truth_source, notes = load_json_inputs(truth, predictions, id_key=id_column, safety_key=cfg.safety_key,
                                                                 is_absent=Normalizer(cfg.normalization).is_absent, metadata=cfg.metadata)
        return self._scored(truth_map, preds, cfg, backend, truth_source, notes, include_records=None,
                            inputs={"truth": truth_source, "predictions": {p.name: p.source for p in preds}})

    # ---- streaming engines (mlflow/stream.py) ----------------------------------------------

    def _streaming_options(self, args: argparse.Namespace) -> dict[str, Any]:
        """What `score json --chunk-size` / `--engine spark` score with: the configuration, the
        similarity backend, the `--records` mode."""
        from extracteval.tasks.json.options import build_config
        from extracteval.core.similarity import get_similarity

        config, sim_name, sim_opts = build_config(args)
        return {"config": config, "similarity": get_similarity(sim_name, **sim_opts), "id_key": args.id_key,
                "records_mode": getattr(args, "records", "auto") or "auto"}

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        from extracteval.tasks.json.chunked import json_chunk_job

        return json_chunk_job(args.truth, args.predictions, chunk_size=chunk_size, workers=getattr(args, "workers", 1), keep_records=True,
                              **self._streaming_options(args))

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from extracteval.tasks.json.spark import json_spark_job

        return json_spark_job(spark, args.truth, args.predictions, partitions=args.spark_partitions, keep_records=True,
                              **self._streaming_options(args))

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, dict[str, pd.DataFrame]]]:
        """The chunk's truth rows and, per model, its records.parquet rows (the per-record scores
        the chunk task kept, with their bucket listing) and its predictions.parquet rows."""
        from extracteval.mlflow.predictions_file import prediction_cells_frame

        rec, cells = score.records["records"], score.records["buckets"]
        records = {}
        for p in chunk.predictions:
            records[p.name] = record_listing(rec[rec["model"] == p.name].reset_index(drop=True), cells[cells["model"] == p.name], text_arrays=True)
        safety_key = str(getattr(task, "task", task).config.safety_key)  # Spark wraps the chunk task (`RowsInLedger`)
        return _truth_frame(chunk.truth), {"records": records,
                                           "predictions": {p.name: prediction_cells_frame(_prediction_cells(p, safety_key)) for p in chunk.predictions}}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.tasks.json.options import with_judge as _with_judge
        from extracteval.mlflow.stream import scored_of_stream

        doc = result.to_dict(include_records={"auto": None, "all": True, "none": False}[result.records_mode])
        doc = _with_judge(doc, result.similarity)
        doc["inputs"] = dict(streamed.inputs)
        scored = Scored(task=self.task, result=result.result, doc=doc, models=tuple(result.result.ranking), truth=streamed.truth_head,
                        truth_source=str(streamed.inputs["truth"]), config=doc["config"])
        return scored_of_stream(scored, streamed)

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """Score one `experiments/<name>/experiment.yaml` (the demo)."""
        ns = argparse.Namespace(
            truth=str(folder / spec["truth"]) if spec.get("truth") else None,
            predictions=[f"{name}={folder / path}" for name, path in spec["predictions"].items()],
            strategies=str(folder / spec["strategies"]) if spec.get("strategies") else None,
            similarity=spec.get("similarity"), embedding_model=None, judge_base_url=None, judge_model=None,
            fuzzy_threshold=None, semantic_threshold=None, weights=None, flatten=bool(spec.get("flatten", False)),
            id_key=spec.get("id_key", "id"), safety_key=None, default_safety=None, null_tokens=None,
            dayfirst=bool(spec.get("dayfirst", False)), records="none",
        )
        return self.score_args(ns)

    def _scored(self, truth: Mapping[str, Any], preds: Sequence[Any], config: Any, backend: Any, truth_source: str, notes: Sequence[str],
                *, include_records: bool | None, inputs: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> Scored:
        from extracteval.tasks.json.options import with_judge
        from extracteval.tasks.json.semantics import score_json

        result = score_json(truth, preds, config=config, similarity=backend, truth_source=truth_source)
        doc = result.to_dict(include_records=include_records)
        doc["warnings"] = [*notes, *doc["warnings"]]
        with_judge(doc, backend)
        doc["inputs"] = dict(inputs)
        if extra:
            doc.update(extra)
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=lambda: _truth_frame(truth),
                        truth_source=truth_source, config=doc["config"])
        scored.cache["predictions"] = {p.name: p for p in preds}  # logged for `extracteval rescore`
        return scored

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per record, the prediction as scored in the pairs layout `read_prediction` unwraps:
        `{"prediction": …, "status"?: …, "<safety key>"?: …}` (prediction null: no output)."""
        p = scored.cache.get("predictions", {}).get(model)
        if p is None:
            return False
        write_prediction_cells(_prediction_cells(p, str((scored.config.get("safety_score") or {}).get("key") or "safety_score")), path)
        return True

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options
    logged_keys = {"safety_score.default": "default_safety", "safety_score.key": "safety_key"}

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str,
        status: Mapping[str, Sequence[Any]] | None = None, safety: Mapping[str, Sequence[Any]] | None = None,
    ) -> Scored:
        """One target cell and one prediction cell per record, each a JSON object (dict) or a JSON
        string (in a ```json fence or after prose, as raw model output often is). A prediction
        is read by `read_prediction` (a pairs-layout record is unwrapped); one that is not a JSON
        object is counted as an invalid prediction, never raised. `status`: per model, one status
        per record (the evaluator's `status_column`); `safety`: per model, one safety score per
        record (the evaluator's `safety_column`; an empty cell leaves the object's own score)."""
        from extracteval.tasks.json.config import without_keys
        from extracteval.tasks.json.semantics import JsonPredictions
        from extracteval.core.similarity import get_similarity

        cfg, sim_name, sim_opts = self.build_config(config)
        backend = get_similarity(sim_name, **sim_opts)
        ids = frame_ids(ids, targets, predictions, truth_source, status=status)
        truth = {rid: _parse_object(v, what=truth_source, record=rid, strict=True) for rid, v in zip(ids, targets)}
        truth = without_keys(truth, cfg.metadata)  # keys that describe a record: no part of its truth, as the file reader reads it
        preds = []
        for name, cells in predictions.items():
            given = (status or {}).get(name)
            scores = (safety or {}).get(name)
            records: dict[str, Any] = {}
            given_safety: dict[str, float] = {}
            statuses: dict[str, str] = {}
            for i, (rid, v) in enumerate(zip(ids, cells)):
                obj, st, s = read_prediction(v, cfg.safety_key)
                if given is not None and status_text(given[i]):
                    st = status_text(given[i])
                if st:
                    statuses[rid] = st
                if obj is _NO_OUTPUT:
                    continue  # no output: a missing prediction (every truth key missing), flagged by the scorer
                if scores is not None:
                    cell = _safety_cell(scores[i], rid, s)  # checked in every row
                    s = cell if isinstance(obj, dict) else s  # counted, as a file's, only beside an object
                if s is not None:
                    given_safety[rid] = s
                records[rid] = obj
            preds.append(JsonPredictions(name=name, records=records, safety=given_safety, status=statuses, source=f"predictions of model {name!r}"))
        return self._scored(truth, preds, cfg, backend, truth_source, (), include_records=None,
                            inputs={"truth": truth_source, "predictions": {p.name: p.source for p in preds}})

    # ---- metrics -------------------------------------------------------------------------------

    def item_names(self, scored: Scored) -> Sequence[str]:
        return list(scored.result.fields)

    def _winners(self, scored: Scored) -> tuple[dict[str, Any], dict[str, float], dict[str, int]]:
        """Field winners on per-field accuracy (the leaderboard's rule), each model's wins, and
        how many fields each model was scored on."""
        if "winners" not in scored.cache:
            from extracteval.core.ranking import Score, field_winners, field_wins

            r = scored.result
            by_field: dict[str, dict[str, Any]] = {}
            for m in r.ranking:
                for f, fa in r.models[m].fields.items():
                    if fa.accuracy is not None:
                        by_field.setdefault(f, {})[m] = Score(f1=fa.accuracy, precision=0.0, recall=0.0)
            winners = field_winners(by_field) if len(r.ranking) > 1 else {}
            scored.cache["winners"] = (winners, field_wins(winners, list(r.ranking)),
                                       {m: sum(1 for s in by_field.values() if m in s) for m in r.ranking})
        return scored.cache["winners"]

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        m = scored.result.models[model]
        out: dict[str, float] = {f"rqs/{k}": float(m.rqs[k]) for k in ("mean", "median", "min", "max")}
        for k in ("completeness", "hallucination", "accuracy", "safety"):
            out[f"json/{k}"] = float(getattr(m, k))
        for b in _BUCKETS:
            out[f"json/buckets/{b}"] = float(m.buckets[b])
        for k in _MODEL_COUNTS:
            out[f"json/{k}"] = float(getattr(m, k))
        out["invalid_outputs/count"] = float(m.invalid_predictions)  # outputs that are not JSON objects
        _, wins, scored_fields = self._winners(scored)
        out.update(rank_metrics(rank=m.rank, wins=wins.get(model, 0.0), items_scored=scored_fields.get(model, 0), items="fields"))
        for fname, fa in m.fields.items():
            if fa.accuracy is not None:
                out[keys.key("field", fname, "accuracy")] = float(fa.accuracy)
            if fa.completeness is not None:
                out[keys.key("field", fname, "completeness")] = float(fa.completeness)
            out[keys.key("field", fname, "scored")] = float(fa.scored)
            out[keys.key("field", fname, "matched")] = float(fa.matched)
            for b in _BUCKETS:
                out[keys.key("field", fname, b)] = float(fa.counts[b])
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        r = scored.result
        winners, wins, _ = self._winners(scored)
        out = parent_head(keys, ranking=r.ranking, ranks={m: r.models[m].rank for m in r.ranking}, wins=wins, items="fields", n_items=len(r.fields))
        for m in r.ranking:
            mr = r.models[m]
            out[keys.key("ranking", m, "rqs_mean")] = float(mr.rqs["mean"])
            # each model's headline numbers on the parent too, so the parent sorts in the runs table
            out[keys.key("models", m, "rqs/mean")] = float(mr.rqs["mean"])
            for k in ("accuracy", "completeness", "hallucination"):
                out[keys.key("models", m, f"json/{k}")] = float(getattr(mr, k))
        out.update(winner_kind_metrics((w.kind for w in winners.values()), "field_winners"))
        return out

    # ---- tables --------------------------------------------------------------------------------

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        """One row per model and field: accuracy, completeness, scored/matched/ignored, the five
        bucket counts, strategies used, and whether the model won the field."""
        r = scored.result
        winners, _, _ = self._winners(scored)
        rows = []
        for m in (r.ranking if model is None else (model,)):
            for fname, fa in r.models[m].fields.items():
                d = fa.to_dict()
                d["strategies"] = ";".join(f"{k}:{v}" for k, v in sorted(d["strategies"].items()))
                w = winners.get(fname)
                rows.append({"model": m, "field": fname, **d, "winner": is_winner(w, m)})
        columns = ["model", "field", "accuracy", "completeness", "scored", "matched", "ignored", "similarity_failures", "strategies", *_BUCKETS, "winner"]
        return pd.DataFrame(rows, columns=columns)

    def counts_frame(self, scored: Scored, model: str) -> pd.DataFrame:
        """One row per record: the scores and flags `record_counts` reads (the paired bootstrap of
        `mlflow.significance`), without the bucket listings that make `records_frame` slow."""
        return scored.result.models[model].records_frame()

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """One row per model and record: RQS and the phases, the five bucket counts, flags, and
        the bucket listing itself (`keys_<bucket>`: the keys / paths in that bucket, a list)."""
        r = scored.result
        frames = [self._records(scored, m) for m in (r.ranking if model is None else (model,))]
        return pd.concat(frames, ignore_index=True) if frames else None

    def _records(self, scored: Scored, model: str) -> pd.DataFrame:
        if ("records", model) not in scored.cache:
            mr = scored.result.models[model]
            scored.cache[("records", model)] = record_listing(mr.records_frame(), mr.cells_frame())
        return scored.cache[("records", model)]

    def _streamed_records(self, scored: Scored, model: str) -> Any:
        """The records.parquet a streaming engine wrote for `model` (None: scored in memory)."""
        return scored.cache.get("streamed_files", {}).get((model, "records.parquet"))

    def _rqs(self, scored: Scored, model: str) -> pd.DataFrame:
        """model, rqs: one row per record (the RQS histogram)."""
        path = self._streamed_records(scored, model)
        if path is None:
            return scored.result.models[model].records_frame()[["model", "rqs"]]
        rqs = pd.read_parquet(path, columns=["rqs"])["rqs"]
        return pd.DataFrame({"model": model, "rqs": rqs})

    def _lowest_records(self, scored: Scored, model: str) -> pd.DataFrame:
        """The lowest-scoring records (by RQS, then id); from a streamed file batch by batch."""
        path = self._streamed_records(scored, model)
        if path is None:
            return _lowest(self._records(scored, model))
        import pyarrow.parquet as pq

        best = None
        for batch in pq.ParquetFile(path).iter_batches(columns=_LOWEST_COLUMNS):
            part = batch.to_pandas()
            best = _lowest(part if best is None else pd.concat([best, part], ignore_index=True))
        return best if best is not None else pd.DataFrame(columns=_LOWEST_COLUMNS)

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        """The parent run's CSV artifacts: the leaderboard and the winner of every field."""
        winners, _, _ = self._winners(scored)
        return {"leaderboard": self.ranking_table(scored, scored.models), "field_winners": winners_table(winners, "field", best="best_accuracy")}

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        _, wins, _ = self._winners(scored)
        rows = []
        for m in models:
            mr = r.models[m]
            rows.append({
                "rank": mr.rank, "model": m, "tier": mr.tier,
                "rqs_mean": mr.rqs["mean"], "rqs_median": mr.rqs["median"], "rqs_min": mr.rqs["min"], "rqs_max": mr.rqs["max"],
                "accuracy": mr.accuracy, "completeness": mr.completeness, "hallucination": mr.hallucination, "safety": mr.safety,
                "field_wins": wins.get(m, 0.0), "invalid_predictions": mr.invalid_predictions, "missing_records": mr.missing_records,
                "excluded_records": mr.excluded_records,
            })
        return pd.DataFrame(rows)

    # ---- figures and report --------------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap, item_f1_bars, score_histogram

        suffix = f" — {models[0]}" if len(models) == 1 else ""
        rec = pd.concat([self._rqs(scored, m) for m in models], ignore_index=True)
        table = pd.concat([self.item_table(scored, m) for m in models], ignore_index=True)
        bars = table[table["accuracy"].notna()].rename(columns={"accuracy": "f1"})
        acc = item_f1_bars(bars, item="field", title=f"json: accuracy per field (matched / scored){suffix}")
        acc.axes[0].set_xlabel("accuracy (matched / scored, both non-null)")
        return {
            "rqs_histogram.png": score_histogram(rec, column="rqs", title=f"json: RQS per record{suffix}"),
            "field_accuracy.png": acc,
            # short column labels: the heatmap prints them upper-cased under narrow columns
            "bucket_counts.png": confusion_heatmap(
                table.rename(columns={"both_non_null": "both", "aio_missing_or_null": "missing", "gt_null_aio_has_value": "invented", "extra_keys": "extra"}),
                item="field", title="json: key buckets per field (both non-null, missing, invented for a null, extra key)",
                counts=("both", "missing", "invented", "extra")),
        }

    def params(self, scored: Scored) -> dict[str, str]:
        cfg = dict(scored.config)
        safety = cfg.get("safety_score", {})
        return run_params(scored, counts={"n_records": scored.result.n_records, "n_fields": len(scored.result.fields)},
                          config_keys=("fuzzy_threshold", "semantic_threshold", "fuzzy_scorer", "semantic_backend", "flatten"),
                          normalization=True, clamp=json.dumps(cfg.get("clamp")), safety_key=str(safety.get("key")),
                          default_safety=str(safety.get("default")), **{f"weights.{k}": str(v) for k, v in cfg.get("weights", {}).items()},
                          strategies=strategies_param(cfg))

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.json.terminal import render_json

        return render_json(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        r = scored.result
        doc = scored.doc
        w = r.config["weights"]
        out = [
            Section(title="Ranking (mean RQS, then accuracy, completeness, lower hallucination)", table=self.ranking_table(scored, models)),
            Section(title="Response Quality Score", text=(
                f"RQS per record = {w['accuracy']:g}·accuracy + {w['completeness']:g}·completeness + {w['safety']:g}·safety "
                f"− {w['hallucination']:g}·hallucination, clamped to [{r.config['clamp'][0]:g}, {r.config['clamp'][1]:g}]; "
                f"best attainable {r.config['rqs_best_attainable']:g}. Model values are means over records; bucket counts are sums."
            )),
        ]
        winners, _, _ = self._winners(scored)
        if len(models) > 1 and winners:
            out.append(Section(title="Field winners (per-field accuracy)", table=winners_table(winners, "field", best=None, separator=", ")))
        out.append(Section(title="Key buckets (summed over records)", table=pd.DataFrame(
            [{"model": m, **{b: r.models[m].buckets[b] for b in _BUCKETS}} for m in models])))
        frames = [self.item_table(scored, m) for m in models]
        out.append(Section(title="Per-field accuracy", table=pd.concat(frames, ignore_index=True) if frames else None))
        worst = []
        for m in models:
            for _, row in self._lowest_records(scored, m).iterrows():
                worst.append({"model": m, "record_id": row["record_id"], "rqs": row["rqs"], "completeness": row["completeness"],
                              "hallucination": row["hallucination"], "accuracy": row["accuracy"],
                              "missing": ", ".join(row["keys_aio_missing_or_null"]), "mismatched": ", ".join(row["keys_mismatched"]),
                              "hallucinated": ", ".join([*row["keys_extra_keys"], *row["keys_gt_null_aio_has_value"]]), "flags": row["flags"]})
        if worst:
            out.append(Section(title="Lowest-scoring records (up to ten per model)", table=pd.DataFrame(worst)))
        return out + closing_sections(doc.get("warnings") or [], doc["config"])


ADAPTER = JsonAdapter()
