"""MLflow adapter of the `structured` task (JSON generation track).

Per model run: `structured/json_valid_rate`, `structured/strict_json_valid_rate`,
`structured/json_extracted_rate`, `structured/exact_match_rate`, `structured/field_precision`,
`structured/field_recall`, `structured/field_f1`, the ledger `structured/tp|fp|fn` and record
counts, per flattened path `field/<path>/tp|fp|fn|precision|recall|f1` (`items[].sku`: list
indices folded), `wins/field_wins`, `ranking/rank`, and the opt-in extended scores
`structured/<semantic_similarity|judge_score>/mean|pass_rate`. The parent run of a comparison
keeps each model's headline numbers, the field winners and, when a baseline and a candidate are
named, the baseline-vs-candidate decision (`decision/gap`, `decision/ci_low`, `decision/ci_high`) in
`extracteval/comparison_metrics.json`, with `decision.verdict` (param) and `decision.csv` (artifact).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.mlflow.adapter_parts import closing_sections, frame_ids, worst_items, parent_head, rank_metrics, winner_kind_metrics, rescore_options, build_config
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.decision_track import (  # noqa: F401 - the task's API too
    track_spec,
    decision_namespace,
    decision_metrics,
    decision_params,
    decision_table,
    decision_sections,
    percent_table,
    plain,
    write_raw_outputs,
    DecisionTrackAdapter,
)
from extracteval.mlflow.predictions_file import prediction_cells_frame
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys

__all__ = ["ADAPTER", "StructuredAdapter", "track_spec", "decision_metrics", "decision_params", "decision_table", "percent_table"]

RATES = ("json_valid_rate", "strict_json_valid_rate", "json_extracted_rate", "exact_match_rate", "field_precision", "field_recall", "field_f1")
_COUNTS = {"records": "records", "valid": "valid_count", "strict_valid": "strict_valid_count", "extracted": "extracted_count", "exact": "exact_count",
           "tp": "tp", "fp": "fp", "fn": "fn"}
_FIELD_KEYS = ("tp", "fp", "fn", "precision", "recall", "f1")
_RATE_LABELS = {
    "json_valid_rate": "JSON valid", "strict_json_valid_rate": "JSON valid (strict)", "json_extracted_rate": "JSON extracted",
    "exact_match_rate": "exact match", "field_precision": "field precision", "field_recall": "field recall", "field_f1": "field F1",
}


# ---- helpers shared with the toolcalls adapter ------------------------------------------------


# ---- the adapter ---------------------------------------------------------------------------


class StructuredAdapter(DecisionTrackAdapter):
    task = "structured"
    model_type = "structured-output"
    about = "raw JSON output vs reference: validity, extraction, exact match, field P/R/F1"  # what the task scores (`extracteval tasks`)
    record_is_value = True
    item_table_name = "field_metrics"  # per flattened path (list indices folded: items[].sku)
    interval_metrics = tuple(f"structured/{m}" for m in ("field_f1", "field_precision", "field_recall", "exact_match_rate", "json_valid_rate",
                                                        "strict_json_valid_rate", "json_extracted_rate"))

    # per record: tp, fp, fn over the flattened paths, and valid / extracted / exact as 0/1
    count_sums = ("tp", "fp", "fn")
    count_flags = ("valid", "extracted", "exact")
    size_counts = (("tp", "fn"), "reference leaves")

    counts_class = ("extracteval.tasks.structured.semantics", "StructuredCounts")

    config_keys: Mapping[str, str] = {
        "list_matching": "positional (default) or optimal: align list items by optimal assignment before flattening",
        "value_match": "exact (canonical JSON leaves, default) or normalized (case, whitespace, number and date formats)",
        **shared_config_keys("zero_division"),
    }

    # ---- scoring -------------------------------------------------------------------------------

    def score_args(self, args: argparse.Namespace) -> Scored:
        from extracteval.tasks.structured.pipeline import score_files

        result, doc, truth, preds, backends = score_files(args)
        return self._scored(result, doc, truth, args.truth, sorted(backends), preds)

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The reference and each model's outputs (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door."""
        from extracteval.tasks.structured.pipeline import score_inputs

        result, doc, ref, preds = score_inputs(truth, list(predictions), self.build_config(config), id_key=id_column)
        return self._scored(result, doc, ref, str(truth), [], preds)

    # ---- streaming engines (mlflow/stream.py) ----------------------------------------------

    def _streaming_config(self, args: argparse.Namespace) -> Any:
        from extracteval.tasks.structured.pipeline import streaming_config

        return streaming_config(args)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        from extracteval.tasks.structured.chunked import structured_chunk_job

        return structured_chunk_job(args.truth, args.predictions, config=self._streaming_config(args), chunk_size=chunk_size)

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from extracteval.tasks.structured.spark import structured_spark_job

        return structured_spark_job(spark, args.truth, args.predictions, config=self._streaming_config(args), partitions=args.spark_partitions)

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, pd.DataFrame | None]]:
        """The chunk's truth rows and per-record rows, from the in-memory scoring of the chunk."""
        from extracteval.tasks.structured.semantics import score_structured

        result = score_structured(chunk.truth, chunk.predictions, config=task.config)
        scored = self._scored(result, {"config": {}}, chunk.truth, "", [], chunk.predictions)
        return scored.truth, {"records": {m: self.records_frame(scored, m) for m in result.models},
                              "predictions": {m: prediction_cells_frame({str(r): v for r, v in out.items()}) for m, out in chunk.predictions.items()}}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.tasks.structured.pipeline import chunked_document
        from extracteval.mlflow.stream import scored_of_stream

        doc = chunked_document(result, streamed.inputs)
        config = {**doc["config"], "extended": []}
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=streamed.truth_head,
                        truth_source=str(streamed.inputs["truth"]), config=config)
        return scored_of_stream(scored, streamed)

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """One experiment.yaml: a `structured` experiment, or the `structured` track of a
        `structured+toolcalls` one (with the experiment's baseline-vs-candidate decision)."""
        from extracteval.tasks.structured.pipeline import load_truth, load_predictions, result_document
        from extracteval.tasks.structured.semantics import StructuredConfig, score_structured

        folder = Path(folder)
        sub = track_spec(folder, spec, self.task)
        truth_path = str(folder / sub["truth"])
        truth = load_truth(truth_path)
        preds, sources = load_predictions([f"{n}={folder / p}" for n, p in sub["predictions"].items()])
        config = StructuredConfig(list_matching=sub.get("list_matching", "positional"), value_match=sub.get("value_match", "exact"))
        result = score_structured(truth, preds, config=config)
        doc = result_document(result, decision_namespace(sub.get("decision") or {}), sources, truth_path)
        return self._scored(result, doc, truth, truth_path, [], preds)

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str
    ) -> Scored:
        """Per record: the reference JSON (object, array or JSON text; must parse) and each
        model's raw output (string or object; malformed output is counted invalid, never raised)."""
        from extracteval.tasks.structured.semantics import score_structured
        from extracteval.tasks.structured.alignment import reference_value

        cfg = self.build_config(config)
        ids = frame_ids(ids, targets, predictions, truth_source)
        truth: dict[str, Any] = {}
        for rid, v in zip(ids, targets):
            v = plain(v)
            if isinstance(v, (bytes, bytearray)):
                v = bytes(v).decode("utf-8", errors="replace")
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise InputError(f"{truth_source}: record {rid!r}: the reference is empty; expected a JSON value (object, array or JSON text).")
            truth[rid] = reference_value(v, f"{truth_source}: record {rid!r}")
        preds: dict[str, dict[str, Any]] = {}
        for name, cells in predictions.items():
            preds[name] = {rid: plain(v) for rid, v in zip(ids, cells)}
        result = score_structured(truth, preds, config=cfg)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {m: f"predictions of model {m!r}" for m in preds}}
        return self._scored(result, doc, truth, truth_source, [], preds)

    def _scored(self, result: Any, doc: dict[str, Any], truth: Mapping[str, Any], truth_source: str, extended: Sequence[str],
                preds: Mapping[str, Mapping[str, Any]]) -> Scored:
        from extracteval.tasks.structured.semantics import canonical_text

        def frame() -> pd.DataFrame:
            ids = [r.id for r in result.records[result.ranking[0]]] if result.ranking else sorted(truth)
            return pd.DataFrame({"reference": [canonical_text(truth[i]) for i in ids]}, index=pd.Index(ids, name="id"))

        config = {**doc["config"], "extended": list(extended)}
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=frame, truth_source=str(truth_source), config=config)
        scored.cache["predictions"] = preds  # logged for `extracteval rescore`
        return scored

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per record, the model's raw output as scored (text or object)."""
        return write_raw_outputs(scored.cache.get("predictions", {}).get(model), path)

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options

    # ---- metrics -------------------------------------------------------------------------------

    def item_names(self, scored: Scored) -> Sequence[str]:
        # every path any model has counts for (a path only one model invents is an item too)
        return sorted({g for m in scored.result.models.values() for g in m.fields})

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        m = scored.result.models[model]
        out: dict[str, float] = {f"structured/{k}": float(m.metrics[k]) for k in RATES}
        c = m.counts
        for attr, name in _COUNTS.items():
            out[f"structured/{name}"] = float(getattr(c, attr))
        out["invalid_outputs/count"] = float(c.records - c.valid)  # outputs with no JSON to read
        for ext, s in m.extended.items():
            out[f"structured/{ext}/mean"] = float(s.mean)
            out[f"structured/{ext}/pass_rate"] = float(s.pass_rate)
        out.update(rank_metrics(rank=m.rank, wins=m.field_wins, items_scored=len(scored.result.field_winners), items="fields"))
        for path, fm in m.fields.items():
            for k in _FIELD_KEYS:
                out[keys.key("field", path, k)] = float(fm[k])
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        r = scored.result
        out = parent_head(keys, ranking=r.ranking, ranks={m: r.models[m].rank for m in r.ranking},
                          wins={m: r.models[m].field_wins for m in r.ranking}, items="fields", n_items=len(self.item_names(scored)))
        out["records/count"] = float(r.n_records)
        for name in r.ranking:
            for k in ("field_f1", "exact_match_rate", "json_valid_rate"):
                out[keys.key("models", name, "structured", k)] = float(r.models[name].metrics[k])
        out.update(winner_kind_metrics((w["kind"] for w in r.field_winners.values()), "field_winners"))
        out.update(decision_metrics(scored.doc))
        return out

    # ---- tables --------------------------------------------------------------------------------

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        rows = []
        for name in models:
            m = r.models[name]
            rows.append({"rank": m.rank, "model": name, "tier": m.tier, "field_wins": m.field_wins, **{k: m.metrics[k] for k in RATES},
                         **{f"{e}_mean": s.mean for e, s in m.extended.items()}, **{f"{e}_pass_rate": s.pass_rate for e, s in m.extended.items()},
                         "records": m.counts.records, "invalid": m.counts.records - m.counts.valid})
        return pd.DataFrame(rows)

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        r = scored.result
        rows = []
        for name in (r.ranking if model is None else (model,)):
            for path, fm in r.models[name].fields.items():
                w = r.field_winners.get(path)
                rows.append({"model": name, "field": path, **{k: fm[k] for k in _FIELD_KEYS},
                             "winner": bool(w is not None and w["kind"] != "universal" and name in w["winners"])})
        return pd.DataFrame(rows, columns=["model", "field", *_FIELD_KEYS, "winner"])

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id, valid, extracted, exact, tp, fp, fn, error — one row per model and record."""
        from extracteval.tasks.structured.semantics import record_columns

        r = scored.result
        cols: dict[str, list[Any]] = {c: [] for c in ("model", "record_id", "valid", "extracted", "exact", "tp", "fp", "fn", "error")}
        for name in (r.ranking if model is None else (model,)):
            got = record_columns(r.records[name])
            cols["model"] += [name] * len(got["id"])
            cols["record_id"] += got.pop("id")
            for c, values in got.items():
                cols[c] += values
        frame = pd.DataFrame(cols)
        # `error` is text even when no record has one (else a null column, of another type than a
        # chunk's with errors in the streamed files)
        return frame.astype({"valid": bool, "extracted": bool, "exact": bool, "tp": np.int64, "fp": np.int64, "fn": np.int64,
                             "error": "string[pyarrow]"})

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        winners = pd.DataFrame([{"field": f, "kind": w["kind"], "winners": ";".join(w["winners"])} for f, w in scored.result.field_winners.items()],
                               columns=["field", "kind", "winners"])
        out = {"leaderboard": self.ranking_table(scored, scored.models), "field_winners": winners}
        dec = decision_table(scored.doc)
        if dec is not None:
            out["decision"] = dec
        return out

    # ---- figures and report --------------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap, item_f1_bars
        from extracteval.report.rate_figures import rate_bars

        suffix = f" — {models[0]}" if len(models) == 1 else ""
        table = pd.concat([self.item_table(scored, m) for m in models], ignore_index=True) if models else self.item_table(scored, None)
        table, note = worst_items(table, "field")
        rates = self.ranking_table(scored, models)
        return {
            "structured_rates.png": rate_bars(rates, rates=list(RATES), labels=_RATE_LABELS, title=f"structured: rates per model{suffix}"),
            "field_f1.png": item_f1_bars(table, item="field", title=f"structured: F1 per flattened path{note}{suffix}"),
            "confusion_counts.png": confusion_heatmap(table, item="field", title=f"structured: TP / FP / FN per path{note}", counts=("tp", "fp", "fn")),
        }

    def params(self, scored: Scored) -> dict[str, str]:
        return run_params(scored, counts={"n_records": scored.result.n_records, "n_fields": len(self.item_names(scored))},
                          config_keys=("list_matching", "value_match", "zero_division", "pass_threshold"),
                          extended=",".join(scored.config.get("extended", [])) or "none", **decision_params(scored.doc))

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.structured.pipeline import render

        return render(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        doc = scored.doc
        rate_cols = [*RATES, *[c for c in self.ranking_table(scored, models).columns if c.endswith(("_mean", "_pass_rate"))]]
        out = [Section(title="Ranking (structured JSON track)", table=percent_table(self.ranking_table(scored, models), rate_cols))]
        if len(models) > 1:
            out += decision_sections(doc)
            if doc.get("field_winners"):
                out.append(Section(title="Field winners (F1 per flattened path)", table=self.comparison_tables(scored)["field_winners"]))
        frames = [self.item_table(scored, m) for m in models]
        out.append(Section(title="Per-path metrics (list indices folded: items[].sku)", table=pd.concat(frames, ignore_index=True) if frames else None))
        invalid = [{"model": m, "record_id": ex["id"], "error": ex["error"], "output (first 160 characters)": ex["output"]}
                   for m in models for ex in doc["models"][m]["invalid_examples"]]
        if invalid:
            out.append(Section(title="Invalid outputs (up to five per model)", table=pd.DataFrame(invalid)))
        warnings = []
        for m in models:
            md = doc["models"][m]
            if md.get("missing_ids"):
                warnings.append(f"{m}: no output for {len(md['missing_ids'])} record(s), counted invalid (e.g. {', '.join(md['missing_ids'][:5])})")
            if md.get("extra_ids"):
                warnings.append(f"{m}: {len(md['extra_ids'])} output(s) for ids not in the truth were ignored (e.g. {', '.join(md['extra_ids'][:5])})")
        return out + closing_sections(warnings, scored.config)


ADAPTER = StructuredAdapter()
