"""MLflow adapter of the `entities` task (lists of entities per record).

Metric keys (one run per model; `<f>` = an entity field, sanitised by `KeyMap`)::

    entities/predicted_count|gold_count|matched_count|extra_predictions_count|missed_gold_count
    entities/precision_entities|recall_entities|f1_entities        entity presence (no view)
    entities/records_both_empty|invalid_predictions_count|mean_match_similarity
    entities/records_missing_prediction|records_not_in_truth
    entities/macro/precision|recall|f1|specificity, entities/weighted/precision|recall|f1, entities/micro_accuracy,
    entities/row_accuracy, entities/rows, entities/correct_rows    strict view
    feature/<f>/precision|recall|f1|specificity|micro_accuracy|rows|correct   strict view
    feature/<f>/weighted_precision|weighted_recall|weighted_f1    strict view, labels weighted by support
    matched/entities/…, matched/feature/<f>/…                      the same for matched pairs only
    wins/field_wins, wins/features_scored, ranking/rank

The unprefixed per-feature keys are the strict view, the one the task ranks on and picks feature
winners with; the leaderboard reads `entities/f1_entities` (then precision, recall) and
`feature/<f>/f1|precision|recall`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from extracteval.errors import InputError
from extracteval.io.cells import record_object
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.predictions_file import prediction_cells_frame, write_prediction_cells
from extracteval.mlflow.adapter_parts import closing_sections, frame_ids, rescore_options, build_config, logged_record_table
from extracteval.mlflow.feature_views import FeatureViewsAdapter, _short, is_blank, json_param, label_count_table
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys, ZERO_DIVISION_NAN
from extracteval.tasks.entities.metrics import entities_metrics

__all__ = ["ADAPTER", "EntitiesAdapter", "truth_frame"]


def truth_frame(truth: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """The ground truth as a DataFrame (index = record id, column `entities` = the record's
    entities as canonical JSON, sorted: entity order inside a record does not change the score,
    so it does not change the truth digest either)."""
    ids = sorted(str(k) for k in truth)
    by_id = {str(k): v for k, v in truth.items()}
    cells = [
        "[" + ",".join(sorted(json.dumps(e, sort_keys=True, ensure_ascii=False, default=str) for e in by_id[i])) + "]"
        for i in ids
    ]
    return pd.DataFrame({"entities": cells}, index=pd.Index(ids, name="id"))


def _decode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays from Parquet
        return value.tolist()
    return value


class EntitiesAdapter(FeatureViewsAdapter):
    task = "entities"
    prefix = "entities"
    other_view = "matched"
    other_view_note = "matched pairs"
    metric_map = staticmethod(entities_metrics)
    record_is_value = True
    model_type = "extraction-entities"
    about = "lists of entities per record: optimal alignment, entity P/R/F1, per-feature metrics"  # what the task scores (`extracteval tasks`)
    item_table_name = "feature_metrics"
    interval_metrics = ("entities/macro/f1", "entities/macro/precision", "entities/macro/recall", "entities/micro_accuracy")

    record_table = logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: its gold entities."""
        from extracteval.mlflow.intervals import record_sizes_of

        return record_sizes_of(path, ("gold",), "gold entities")

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: the strict view's one-vs-rest tp, fp, fn of every feature and label
        (`strict_label_counts` of the per-record artifact) and the rows of each feature (matched
        pairs, missed gold and extra predicted entities)."""
        import numpy as np

        from extracteval.mlflow.intervals import read_records

        frame = read_records(path, ["record_id", "gold", "predicted", "matched", "strict_label_counts"])
        if frame is None:
            return None
        entries = [(rid, f, lab, k, c) for rid, text in zip(frame["record_id"].astype(str), frame["strict_label_counts"])
                   for f, lab, *counts in json.loads(text or "[]") for k, c in zip(("tp", "fp", "fn"), counts) if c]
        ids, feats, labels, kinds, values = (np.asarray(x, dtype=object) for x in (zip(*entries) if entries else ((),) * 5))
        features = json.loads(params.get("features") or "[]")
        n_rows = (frame["gold"] + frame["predicted"] - frame["matched"]).to_numpy(dtype=np.int64)
        rid = frame["record_id"].astype(str).to_numpy(dtype=object)
        row_ids = np.repeat(np.tile(rid, len(features)), np.tile(n_rows, len(features)))
        row_feats = np.repeat(np.repeat(np.asarray(features, dtype=object), len(rid)), np.tile(n_rows, len(features)))
        table = label_count_table(ids, feats, labels, kinds, values.astype(np.int64), rows=(row_ids, row_feats))
        # records without entities on either side are resampled too (rows of zeros)
        have = set(table.record_ids)
        missing = [r for r in dict.fromkeys(rid) if r not in have]
        if missing:
            from extracteval.core.record_counts import RecordCountTable

            table = RecordCountTable(record_ids=np.concatenate([table.record_ids, np.asarray(missing, dtype=object)]), columns=table.columns,
                                     counts=np.concatenate([table.counts, np.zeros((len(missing), len(table.columns)), dtype=table.counts.dtype)]))
        return table

    config_keys: Mapping[str, str] = {
        "features": "score only these entity fields (list)",
        "key_fields": "fields the alignment similarity uses (list; default: weighted fields, else all)",
        "weights": "alignment weight per key field: mapping {field: weight}, or a JSON/YAML weights file (read as `--weights FILE` reads it, with every option it holds)",
        "strategies": "per-field strategy: mapping {field: EXACT|FUZZY|SEMANTIC|IGNORE} or a JSON/YAML file path",
        "types": "per-field value type: mapping {field: auto|category|text|number|date}",
        "match_threshold": "minimum weighted similarity of a matched pair (0.5)",
        "fuzzy_threshold": "FUZZY value counts as correct at ≥ this (0.85)",
        "semantic_threshold": "SEMANTIC value counts as correct at ≥ this (0.80)",
        "similarity": "backend of SEMANTIC fields: lexical (default), fuzzy, embedding, llm_judge",
        "similarity_options": "options of the similarity backend (mapping; no API keys)",
        "entities_key": "key of the entity list when a cell is an object such as {\"entities\": […]} (`entities`)",
        "null_tokens": "strings meaning missing (list or comma-separated)",
        **shared_config_keys("default_strategy", "fuzzy_scorer", "dayfirst", "zero_division"),
        "zero_division": ZERO_DIVISION_NAN,
    }

    # ---- scoring ---------------------------------------------------------------------------

    def _scored(self, result: Any, doc: dict[str, Any], truth: Mapping[str, Sequence[Any]], truth_source: str, preds: Sequence[Any]) -> Scored:
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=lambda: truth_frame(truth),
                        truth_source=truth_source, config=doc["config"])
        scored.cache["predictions"] = {p.name: p.records for p in preds}  # logged for `extracteval rescore`
        return scored

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per record, the model's list of entities as scored (a malformed output is the one
        invalid entity it was scored as)."""
        records = scored.cache.get("predictions", {}).get(model)
        if records is None:
            return False
        write_prediction_cells({str(r): list(v) for r, v in records.items()}, path)
        return True

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options

    def score_args(self, args: argparse.Namespace) -> Scored:
        # the steps of `score_entities.score`, keeping the truth records for the digest and dataset
        from extracteval.tasks.entities.options import build_config
        from extracteval.core.similarity import get_similarity
        from extracteval.tasks.entities.inputs import load_entities_inputs

        config, sim_name, sim_opts = build_config(args)
        backend = get_similarity(sim_name, **sim_opts)
        truth, preds, truth_source = load_entities_inputs(args.truth, args.predictions, id_column=args.id_column, entities_key=args.entities_key)
        return self._score_loaded(truth, preds, truth_source, config, backend)

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The truth and each model's predictions (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door."""
        from extracteval.core.similarity import get_similarity
        from extracteval.tasks.entities.inputs import load_entities_inputs

        cfg, sim_name, sim_opts = self.build_config(config)
        backend = get_similarity(sim_name, **sim_opts)
        truth_map, preds, truth_source = load_entities_inputs(truth, predictions, id_column=id_column,
                                                              entities_key=str(config.get("entities_key") or "entities"))
        return self._score_loaded(truth_map, preds, truth_source, cfg, backend)

    def _score_loaded(self, truth: Any, preds: Sequence[Any], truth_source: str, config: Any, backend: Any) -> Scored:
        from extracteval.tasks.entities.options import judge_counts
        from extracteval.tasks.entities.semantics import score_entities

        result = score_entities(truth, preds, config=config, truth_source=truth_source, similarity=backend)
        doc = result.to_dict()
        judge_counts(doc, backend)
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        return self._scored(result, doc, truth, truth_source, preds)

    # ---- streaming engines (mlflow/stream.py) ----------------------------------------------

    def _streaming_options(self, args: argparse.Namespace) -> tuple[Any, Any]:
        from extracteval.tasks.entities.options import build_config, streaming_similarity

        config, sim_name, sim_opts = build_config(args)
        return config, streaming_similarity(sim_name, sim_opts)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        from dataclasses import replace

        from extracteval.tasks.entities.chunked import entities_chunk_job

        config, backend = self._streaming_options(args)
        job = entities_chunk_job(args.truth, args.predictions, config=config, similarity=backend, chunk_size=chunk_size,
                                 id_column=args.id_column, entities_key=args.entities_key)
        return replace(job, task=replace(job.task, keep_records=True))

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from dataclasses import replace

        from extracteval.tasks.entities.spark import entities_spark_job

        config, backend = self._streaming_options(args)
        job = entities_spark_job(spark, args.truth, args.predictions, config=config, similarity=backend, id_column=args.id_column,
                                 entities_key=args.entities_key, partitions=args.spark_partitions)
        return replace(job, task=replace(job.task, keep_records=True))

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, pd.DataFrame | None]]:
        """The chunk's truth rows and the task's own per-record rows, split by model (as `records_frame`)."""
        rec = score.records
        out: dict[str, pd.DataFrame | None] = {}
        for m in task.sources:
            frame = rec.loc[rec["model"] == m].reset_index(drop=True) if rec is not None else None
            if frame is not None:
                frame = frame[["model", *[c for c in frame.columns if c != "model"]]]
                frame["model"] = frame["model"].astype(object).astype("category")
                frame["record_id"] = frame["record_id"].astype(object)
            out[m] = frame
        preds = {m: prediction_cells_frame({str(r): list(v) for r, v in chunk.predictions.get(m, {}).items()}) for m in task.sources}
        return truth_frame(chunk.truth), {"records": out, "predictions": preds}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.mlflow.stream import stream_scored

        return stream_scored(self.task, result, result.to_dict(), streamed)

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        from extracteval.tasks.entities.options import experiment_args

        ns = experiment_args(folder, spec)
        return self.score_args(ns)

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str
    ) -> Scored:
        """Targets: per record a list of entity objects (or its JSON string, or an object holding
        the list under `entities_key`). A model output that is not such a list is data: an
        unparsable string or a non-list value is one invalid entity (an extra prediction that
        matches nothing, so every gold entity of the record is missed), an empty cell is no output
        (the record has no prediction, as when a file lacks it; `[]` is a record with no
        entities); unreadable outputs are listed under `invalid_outputs`."""
        from extracteval.tasks.entities.options import judge_counts
        from extracteval.tasks.entities.semantics import ModelEntities, score_entities
        from extracteval.core.similarity import get_similarity

        cfg, sim_name, sim_opts = self.build_config(config)
        backend = get_similarity(sim_name, **sim_opts)
        key = str(config.get("entities_key") or "entities")
        ids = frame_ids(ids, targets, predictions, truth_source, nonempty=True)
        truth: dict[str, list[Any]] = {}
        for r, v in zip(ids, targets):
            parsed = self._cell(v, key)
            if not isinstance(parsed, list):
                what = "invalid JSON" if parsed is _INVALID_JSON else f"{type(_decode(v)).__name__} {_short(v)}"
                raise InputError(f"{truth_source}: record {r!r}: expected a list of entity objects (or its JSON string), but found {what}.")
            truth[r] = parsed
        preds = []
        invalid: dict[str, list[str]] = {}
        for name, cells in predictions.items():
            records: dict[str, list[Any]] = {}
            for r, v in zip(ids, cells):
                parsed = self._cell(v, key)
                if isinstance(parsed, list):
                    records[r] = parsed
                    continue
                if parsed is None:
                    continue  # no output: the record has no prediction, as when a file lacks it
                invalid.setdefault(name, []).append(r)
                records[r] = [_decode(v) if parsed is _INVALID_JSON else parsed]
            preds.append(ModelEntities(name=name, records=records, source=f"predictions of model {name!r}"))
        result = score_entities(truth, preds, config=cfg, truth_source=truth_source, similarity=backend)
        doc = result.to_dict()
        judge_counts(doc, backend)
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        doc["invalid_outputs"] = {m: {"count": len(v), "record_ids": v[:20]} for m, v in sorted(invalid.items())}
        if invalid:
            doc["warnings"] = [
                f"model {m!r}: {len(v)} output(s) are not a list of entities; each counts as one invalid (extra) entity"
                for m, v in sorted(invalid.items())
            ] + list(doc["warnings"])
        return self._scored(result, doc, truth, truth_source, preds)

    @staticmethod
    def _cell(value: Any, key: str) -> Any:
        """A cell → list of entities; None for an empty cell; `_INVALID_JSON`; else the value
        itself (a single object is returned as is: one entity)."""
        value = _decode(value)
        if isinstance(value, str):
            if not value.strip():
                return None
            value, _problem = record_object(value)  # JSON text, also fenced or after prose
            if _problem is not None:
                return _INVALID_JSON
        if is_blank(value):
            return None
        if isinstance(value, Mapping) and key in value:
            inner = _decode(value[key])
            return inner if isinstance(inner, list) else ([] if inner is None else inner)
        if isinstance(value, tuple):
            return list(value)
        return value

    # ---- metrics ---------------------------------------------------------------------------

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        m = scored.result.models[model]
        out: dict[str, float] = {f"entities/{k}": float(v) for k, v in m.presence.to_dict().items()}
        out["entities/mean_match_similarity"] = float(m.mean_match_similarity)
        out["entities/records_missing_prediction"] = float(m.records_missing_prediction)
        out["entities/records_not_in_truth"] = float(m.records_not_in_truth)
        out.update(self.view_metrics(scored, model, keys))
        return out

    def parent_model_metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        mr = scored.result.models[model]
        return {keys.key("models", model, "entities", "f1_entities"): float(mr.presence.to_dict()["f1_entities"]),
                keys.key("models", model, "entities", "macro", "f1"): float(mr.strict.totals["f1"])}

    # ---- tables ----------------------------------------------------------------------------

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        rows = []
        for m in models:
            mr = r.models[m]
            e = mr.presence.to_dict()
            rows.append({
                "rank": mr.rank, "model": m,
                "gold": e["gold_count"], "predicted": e["predicted_count"], "matched": e["matched_count"],
                "extra": e["extra_predictions_count"], "missed": e["missed_gold_count"],
                "precision": e["precision_entities"], "recall": e["recall_entities"], "f1": e["f1_entities"],
                "strict_f1": mr.strict.totals["f1"], "strict_row_accuracy": mr.strict.row_accuracy,
                "matched_f1": mr.matched.totals["f1"], "matched_row_accuracy": mr.matched.row_accuracy,
                "mean_match_similarity": mr.mean_match_similarity, "tier": mr.tier, "feature_wins": mr.feature_wins,
            })
        return pd.DataFrame(rows)

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id, gold, predicted, matched, correct_pairs, in_truth, in_predictions —
        per model and record, the entity-presence ledger (`matched` = tp, `predicted - matched` =
        fp, `gold - matched` = fn; `correct_pairs` = matched pairs right in every feature)."""
        r = scored.result
        models = list(scored.models) if model is None else [model]
        frames = [r.models[m].records_frame().assign(model=m) for m in models]
        if not frames:
            return None
        out = pd.concat(frames, ignore_index=True)
        out = out[["model", *[c for c in out.columns if c != "model"]]]
        out["model"] = out["model"].astype("category")
        return out

    # ---- figures and report ----------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap

        figs = super().figures(scored, models)
        # entity presence: one row per model; TP = matched, FP = extra, FN = missed entities
        pres = pd.DataFrame([
            {"model": "matched / extra / missed", "run": m, "tp": e["matched_count"], "fp": e["extra_predictions_count"], "fn": e["missed_gold_count"]}
            for m in models for e in [scored.result.models[m].presence.to_dict()]
        ])
        figs["entity_counts.png"] = confusion_heatmap(pres, item="run", title="entity presence", counts=("tp", "fp", "fn"))
        return figs

    def params(self, scored: Scored) -> dict[str, str]:
        cfg = dict(scored.config)
        r = scored.result
        return run_params(scored, counts={"n_records": r.n_records, "n_features": len(r.features)},
                          config_keys=("default_strategy", "match_threshold", "fuzzy_threshold", "semantic_threshold", "semantic_backend",
                                       "fuzzy_scorer", "zero_division"),
                          normalization=True, ranked_by="strict view: mean F1 over features",
                          features=json_param(list(r.features), what="features"), key_fields=json_param(list(r.key_fields), what="key fields"),
                          weights=json_param(dict(r.weights), what="weights"),
                          strategies=json_param(cfg.get("strategies_used", {}), what="strategies"),
                          types=json_param(cfg.get("types_used", {}), what="types"))

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.entities.report import render_entities

        return render_entities(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        doc = scored.doc
        out = self.view_sections(scored, models, Section(
            title="Ranking", table=self.ranking_table(scored, models),
            text=f"Ranked by {doc['ranked_by']}. Entity precision/recall/F1 count matched, extra and missed entities."))
        ex = []
        for m in models:
            for kind, items in doc["models"][m]["examples"].items():
                for e in items:
                    ex.append({"model": m, "kind": kind, "record_id": e["record_id"],
                               "gold": json.dumps(e.get("gold"), ensure_ascii=False, default=str) if "gold" in e else "",
                               "predicted": json.dumps(e.get("predicted"), ensure_ascii=False, default=str) if "predicted" in e else ""})
        if ex:
            out.append(Section(title="Examples (missed, extra, wrong values)", table=pd.DataFrame(ex)))
        return out + closing_sections(doc.get("warnings") or [], doc["config"])


class _InvalidJson:
    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "<invalid JSON>"


_INVALID_JSON = _InvalidJson()

ADAPTER = EntitiesAdapter()
