"""MLflow adapter of the `labels` task (per-feature classification).

Metric keys (one run per model; `<f>` = a feature name, sanitised by `KeyMap`)::

    labels/macro/precision|recall|f1|specificity   strict view, mean over features
    labels/weighted/precision|recall|f1            strict view, mean over features of the support-weighted mean over labels
    labels/micro_accuracy                          strict view, mean over features of feature micro accuracy
    labels/row_accuracy                            strict view, rows whose every feature is right
    labels/rows|correct_rows|aligned_rows|missing_rows|extra_rows
    feature/<f>/precision|recall|f1|specificity|micro_accuracy|rows|correct     strict view
    feature/<f>/weighted_precision|weighted_recall|weighted_f1   strict view, labels weighted by support
    labels/samples/precision|recall|f1             strict view, mean over features of each feature's mean over rows
    feature/<f>/micro_precision|micro_recall|micro_f1|samples_precision|samples_recall|samples_f1|hamming_loss
                                                   strict view, a multi-label feature (its micro_accuracy: subset accuracy)
    aligned/labels/…, aligned/feature/<f>/…       the same keys for the aligned view
    wins/field_wins, wins/features_scored, ranking/rank

The unprefixed keys are the strict view because the task ranks on it (a model cannot look good
by answering few rows), and the leaderboard (`RANKING` in `contract.py`) reads
`labels/macro/f1`, `labels/micro_accuracy`, `labels/row_accuracy` and `feature/<f>/f1|precision|recall`.

The view helpers (`view_metrics_keys`, `feature_item_rows`, …) and the adapters' base
`FeatureViewsAdapter` are `mlflow.feature_views`, shared with the `entities` adapter, whose
results carry the same per-feature views.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.errors import InputError
from extracteval.io.cells import is_empty, record_object, status_text
from extracteval.mlflow.adapter_parts import (closing_sections, frame_ids, rescore_options, build_config, logged_record_table)
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.feature_views import FeatureViewsAdapter, _short, is_blank, json_param, label_count_table, label_rows
from extracteval.mlflow.predictions_file import prediction_cells_frame, write_prediction_cells
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys, ZERO_DIVISION_NAN
from extracteval.tasks.labels.metrics import labels_metrics

__all__ = ["ADAPTER", "LabelsAdapter"]


# ---- cells of a DataFrame --------------------------------------------------------------------


def _object_cell(value: Any) -> dict[str, Any] | None:
    """A dict, or the text of a JSON object (also in a ```json fence or after prose) → dict of
    plain values; anything else → None."""
    if not isinstance(value, (Mapping, str, bytes, bytearray)):
        return None
    obj, _problem = record_object(value)
    return {str(k): v for k, v in obj.items()} if isinstance(obj, dict) else None


def _scalar_cell(value: Any) -> tuple[bool, Any]:
    """(valid, label) of a one-label-per-record cell: a string, number, bool or empty."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", errors="replace")
    if hasattr(value, "item") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if is_blank(value) or isinstance(value, (str, int, float, bool)):
        return True, None if is_blank(value) else value
    return False, None


# ---- the adapter -----------------------------------------------------------------------------


class LabelsAdapter(FeatureViewsAdapter):
    task = "labels"
    prefix = "labels"
    other_view = "aligned"
    other_view_note = "aligned view"
    metric_map = staticmethod(labels_metrics)
    record_is_value = False
    model_type = "extraction-entities"  # shares the model_type with `entities`; evaluator_config {"task": "labels"}
    about = "one label per feature per record: one-vs-rest P/R/F1/specificity"  # what the task scores (`extracteval tasks`)
    item_table_name = "feature_metrics"
    interval_metrics = ("labels/macro/f1", "labels/macro/precision", "labels/macro/recall", "labels/micro_accuracy")

    record_table = logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per row: its features holding a truth value (a multi-label feature: its true labels)."""
        import numpy as np
        import pandas as pd

        from extracteval.mlflow.intervals import read_records

        frame = read_records(path, ["record_id", "truth"])
        if frame is None:
            return None

        def size(v: Any) -> int:
            if v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip()):
                return 0
            return len(v) if isinstance(v, (list, tuple, np.ndarray)) else 1

        sizes = pd.Series([size(v) for v in frame["truth"].to_numpy(dtype=object)], index=frame["record_id"].astype(str).to_numpy(dtype=object))
        sizes = sizes.groupby(level=0, sort=False).sum()
        sizes.name = "truth values"
        return sizes

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: the strict view's one-vs-rest tp, fp, fn of every feature and label
        (columns (feature, label, count)) and the rows of each feature (a missing row is an fn
        of its truth label, an extra row an fp of its predicted label; a multi-label row one tp,
        fp or fn per label of its sets)."""
        from extracteval.mlflow.intervals import read_records

        frame = read_records(path, ["record_id", "feature", "truth", "predicted", "correct", "status"])
        if frame is None:
            return None
        try:
            multi = set(json.loads(params.get("multi_label") or "{}"))
        except ValueError:  # a parameter too long to log whole: the counts cannot be read back
            return None
        if multi:
            return _set_record_counts(frame, multi)
        status = frame["status"].astype(str).to_numpy(dtype=object)
        right = frame["correct"].fillna(False).to_numpy(dtype=bool)
        has_t, has_p = status != "extra", status != "missing"
        obj = lambda c: frame[c].astype(object).to_numpy(dtype=object)  # noqa: E731
        feature, truth, pred, ids = obj("feature"), obj("truth"), obj("predicted"), frame["record_id"].astype(str).to_numpy(dtype=object)
        tp, fn, fp = right, has_t & ~right, has_p & ~right
        return label_count_table(
            np.concatenate([ids[tp], ids[fn], ids[fp]]), np.concatenate([feature[tp], feature[fn], feature[fp]]),
            np.concatenate([truth[tp], truth[fn], pred[fp]]), np.repeat(np.array(["tp", "fn", "fp"], dtype=object), [tp.sum(), fn.sum(), fp.sum()]),
            rows=(ids, feature))

    config_keys: Mapping[str, str] = {
        "types": "per-feature type: mapping {feature: auto|category|text|number|date}",
        "positive_labels": "per-feature label reported one-vs-rest instead of the macro average: mapping {feature: label}",
        "labels": "per-feature declared classes, the only ones the macro and weighted averages take (absent ones with no support): mapping {feature: [classes]}",
        "multi_label": "features whose cells are sets of labels (a list, or text split on the separator; missing = empty set): mapping {feature: separator or null for `;`}",
        "features": "score only these features (list)",
        "label_name": "feature name when each record holds one label instead of an object (`label`)",
        "status_column": "column holding each record's status: ok, pending or error; pending and error rows are not predictions (default: `status` when present)",
        "null_tokens": "strings meaning missing (list or comma-separated)",
        **shared_config_keys("dayfirst", "zero_division"),
        "zero_division": ZERO_DIVISION_NAN,
    }

    # ---- scoring ---------------------------------------------------------------------------

    def _scored(self, result: Any, doc: dict[str, Any], truth: pd.DataFrame, truth_source: str, preds: Sequence[Any]) -> Scored:
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=truth,
                        truth_source=truth_source, config=doc["config"])
        scored.cache["inputs"] = {p.name: p.values for p in preds}
        return scored

    def score_args(self, args: argparse.Namespace) -> Scored:
        # the steps of `score_labels.score`, keeping the truth frame for the digest and dataset
        from extracteval.tasks.labels.options import build_config
        from extracteval.tasks.labels.options import chosen_features as _features
        from extracteval.tasks.labels.inputs import load_labels_inputs

        truth, preds, truth_source, notes = load_labels_inputs(args.truth, args.predictions, id_column=args.id_column, delimiter=args.delimiter)
        return self._score_loaded(truth, preds, truth_source, notes, build_config(args), _features(args))

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The truth and each model's predictions (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door."""
        from extracteval.tasks.labels.inputs import load_labels_inputs
        from extracteval.tasks.labels.options import chosen_features as _features

        truth_frame, preds, truth_source, notes = load_labels_inputs(truth, predictions, id_column=id_column)
        return self._score_loaded(truth_frame, preds, truth_source, notes, self.build_config(config), _features(config))

    def _score_loaded(self, truth: Any, preds: Sequence[Any], truth_source: str, notes: list[str], config: Any, features: list[str] | None) -> Scored:
        from extracteval.tasks.labels.chunked import labels_document
        from extracteval.tasks.labels.semantics import score_labels

        result = score_labels(truth, preds, config=config, features=features, truth_source=truth_source)
        doc = labels_document(result, notes, {"truth": truth_source, "predictions": {p.name: p.source for p in preds}})
        return self._scored(result, doc, truth, truth_source, preds)

    # ---- streaming engines (mlflow/stream.py) ----------------------------------------------

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        from extracteval.tasks.labels.chunked import labels_chunk_job
        from extracteval.tasks.labels.options import build_config
        from extracteval.tasks.labels.options import chosen_features as _features

        return labels_chunk_job(args.truth, args.predictions, config=build_config(args), features=_features(args), chunk_size=chunk_size,
                                id_column=args.id_column, delimiter=args.delimiter)

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from extracteval.tasks.labels.options import build_config
        from extracteval.tasks.labels.options import chosen_features as _features
        from extracteval.tasks.labels.spark import labels_spark_job

        return labels_spark_job(spark, args.truth, args.predictions, config=build_config(args), features=_features(args),
                                id_column=args.id_column, delimiter=args.delimiter, partitions=args.spark_partitions)

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, pd.DataFrame | None]]:
        """The chunk's truth rows and per-record rows: `records_frame` over the chunk's inputs
        (pending/error rows dropped as `LabelsTask` drops them), which needs of a result only the
        configuration and the features."""
        from types import SimpleNamespace

        from extracteval.tasks.labels.semantics import ModelLabels
        from extracteval.tasks.labels.inputs import not_predictions

        chunk = chunk.materialised()
        preds = []
        for p in chunk.predictions:
            values = p.values
            if p.status is not None:
                bad = not_predictions(p.status, p.source)
                values = values.loc[~bad.reindex(values.index, fill_value=False)]
            preds.append(ModelLabels(name=p.name, values=values, source=p.source))
        result = SimpleNamespace(config=task.config.to_dict(), features=list(task.features), ranking=list(task.sources))
        scored = self._scored(result, {"config": {}}, chunk.truth, task.truth_source, preds)
        return chunk.truth, {"records": {m: self.records_frame(scored, m) for m in task.sources},
                             "predictions": {p.name: prediction_cells_frame(_label_cells(p.values)) for p in preds}}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.mlflow.stream import stream_scored

        result, notes = result
        doc = result.to_dict()
        doc["warnings"] = notes + doc["warnings"]
        return stream_scored(self.task, result, doc, streamed)

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        ns = argparse.Namespace(
            truth=str(folder / spec["truth"]),
            predictions=[f"{name}={folder / path}" for name, path in spec["predictions"].items()],
            id_column=spec.get("id_column", "id"), delimiter=None, features=None, types=[], positive_labels=[], labels=[],
            multi_label=spec.get("multi_label") or [],
            config=str(folder / spec["config"]) if spec.get("config") else None,
            null_tokens=None, dayfirst=bool(spec.get("dayfirst", False)), zero_division=spec.get("zero_division"),
        )
        return self.score_args(ns)

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per record the model predicted, its object of feature labels as scored (rows that were
        not predictions, pending or error, are absent as they were)."""
        values = scored.cache.get("inputs", {}).get(model)
        if values is None:
            return False
        write_prediction_cells(_label_cells(values), path)
        return True

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options
    logged_keys = {"/features": "features"}  # the features the run scored (a `--features` choice too)

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str,
        status: Mapping[str, Sequence[Any]] | None = None,
    ) -> Scored:
        """Targets: per record an object {feature: label} (dict or JSON string), or one label per
        record (then the feature is `label_name`). A model output that is not of that shape is not a
        prediction: the row is left out of the model's predictions, so the strict view counts it
        as an error, and it is listed under `invalid_outputs`. With objects, an empty cell is no
        output (the record has no prediction, as when a file lacks it); with one label per record
        it is the label "missing"; a row whose status (a `status` key of the
        object, or `status` per model: the evaluator's `status_column`) is pending or error is not
        a prediction."""
        from extracteval.tasks.labels.semantics import ModelLabels, score_labels

        cfg = self.build_config(config)
        label_name = str(config.get("label_name") or "label")
        ids = frame_ids(ids, targets, predictions, truth_source, status=status, nonempty=True)
        objects = [_object_cell(v) for v in targets]
        per_object = objects[0] is not None
        truth = _truth_frame(ids, targets, objects, per_object=per_object, label_name=label_name, truth_source=truth_source)
        preds = []
        invalid: dict[str, list[str]] = {}
        not_predicted: dict[str, list[str]] = {}
        for name, cells in predictions.items():
            frame, invalid_ids, pending = _model_rows(name, ids, cells, (status or {}).get(name), per_object=per_object, label_name=label_name)
            if invalid_ids:
                invalid[name] = invalid_ids
            if pending:
                not_predicted[name] = pending
            preds.append(ModelLabels(name=name, values=frame, source=f"predictions of model {name!r}"))
        features = config.get("features")
        if features is not None and (isinstance(features, str) or not all(isinstance(f, str) for f in features)):
            raise InputError(f"evaluator_config `features`: expected a list of feature names, but got {features!r}.")
        result = score_labels(truth, preds, config=cfg, features=list(features) if features else None, truth_source=truth_source)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        doc["invalid_outputs"] = {m: {"count": len(v), "record_ids": v[:20]} for m, v in sorted(invalid.items())}
        if not_predicted:
            doc["warnings"] = [
                f"model {m!r}: {len(v)} row(s) with status pending/error are not predictions (counted as missing in the strict view)"
                for m, v in sorted(not_predicted.items())
            ] + list(doc["warnings"])
        if invalid:
            shape = "an object of feature labels" if per_object else "a single label"
            doc["warnings"] = [
                f"model {m!r}: {len(v)} output(s) are not {shape}; those rows are not predictions (errors in the strict view)"
                for m, v in sorted(invalid.items())
            ] + list(doc["warnings"])
        return self._scored(result, doc, truth, truth_source, preds)

    # ---- metrics ---------------------------------------------------------------------------

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        m = scored.result.models[model]
        out = self.view_metrics(scored, model, keys)
        out["labels/aligned_rows"] = float(m.aligned_rows)
        out["labels/missing_rows"] = float(m.missing_rows)
        out["labels/extra_rows"] = float(m.extra_rows)
        for fname, n in m.unparsable.items():
            out[keys.key("feature", fname, "unparsable_predictions")] = float(n)
        return out

    def parent_model_metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        mr = scored.result.models[model]
        return {keys.key("models", model, "labels", "macro", "f1"): float(mr.strict.totals["f1"]),
                keys.key("models", model, "labels", "row_accuracy"): float(mr.strict.row_accuracy)}

    # ---- tables ----------------------------------------------------------------------------

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        rows = []
        for m in models:
            mr = r.models[m]
            s, a = mr.strict, mr.aligned
            rows.append({
                "rank": mr.rank, "model": m,
                "precision": s.totals["precision"], "recall": s.totals["recall"], "f1": s.totals["f1"],
                "specificity": s.totals["specificity"], "micro_accuracy": s.totals["micro_accuracy"], "row_accuracy": s.row_accuracy,
                "aligned_f1": a.totals["f1"], "aligned_row_accuracy": a.row_accuracy,
                "aligned_rows": mr.aligned_rows, "missing_rows": mr.missing_rows, "extra_rows": mr.extra_rows,
                "tier": mr.tier, "feature_wins": mr.feature_wins,
            })
        return pd.DataFrame(rows)

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id, feature, truth, predicted, correct, status — one row per model, record
        (of either side) and feature. `truth`/`predicted` are the labels as scored (canonical
        display labels, `<MISSING>` for absent; a multi-label feature's set as the JSON list of its
        labels, sorted); `status` is `aligned`, `missing` (no prediction) or `extra` (no ground
        truth); `correct` is true only for an aligned row with equal labels (equal sets)."""
        if ("records", model) in scored.cache:
            return scored.cache[("records", model)]
        from extracteval.tasks.labels.semantics import LabelEncoder, display_labels

        r = scored.result
        cfg = self.build_config({"types": r.config["types"], "zero_division": r.config["zero_division"], "multi_label": r.config.get("multi_label") or {}})
        norm = _normalization(r.config)
        inputs: Mapping[str, pd.DataFrame] = scored.cache["inputs"]
        truth = scored.truth
        t_ids = truth.index.astype(str)
        frames = []
        # encode each feature over truth and *every* model, as the scorer does, so labels agree
        names = sorted(inputs)
        values = {m: inputs[m].set_axis(inputs[m].index.astype(str), axis=0) for m in names}
        chosen = names if model is None else [model]
        for f in r.features:
            def col(frame: pd.DataFrame) -> np.ndarray:
                return frame[f].to_numpy(dtype=object, na_value=None) if f in frame.columns else np.full(len(frame), None, dtype=object)

            if f in cfg.multi_label:
                frames.extend(_set_records(f, [col(truth)] + [col(values[m]) for m in names], cfg, norm, t_ids, {m: values[m].index for m in names}, chosen))
                continue
            enc = LabelEncoder(cfg.type_of(f), norm)
            codes, table = enc.encode([col(truth)] + [col(values[m]) for m in names])
            labels = np.asarray(display_labels(table) + [None], dtype=object)  # index -1 → None (no row on that side)
            t_codes = codes[0]
            for m in chosen:
                p_codes = codes[names.index(m) + 1]
                p_ids = values[m].index
                all_ids = t_ids.union(p_ids, sort=False)
                ti = t_ids.get_indexer(all_ids)
                pi = p_ids.get_indexer(all_ids)
                tc, pc = _take(t_codes, ti), _take(p_codes, pi)
                frames.append(pd.DataFrame({
                    "model": m, "record_id": np.asarray(all_ids, dtype=object), "feature": f,
                    "truth": labels[tc], "predicted": labels[pc],
                    "correct": (ti >= 0) & (pi >= 0) & (tc == pc),
                    "status": np.where((ti >= 0) & (pi >= 0), "aligned", np.where(ti >= 0, "missing", "extra")),
                }))
        out = pd.concat(frames, ignore_index=True) if frames else None
        if out is not None:
            out = out.sort_values(["model", "record_id", "feature"], kind="stable", ignore_index=True)
            for c in ("model", "record_id", "feature", "status"):
                out[c] = out[c].astype("category")
        scored.cache[("records", model)] = out
        return out

    # ---- figures and report ----------------------------------------------------------------

    def params(self, scored: Scored) -> dict[str, str]:
        cfg = dict(scored.config)
        return run_params(scored, counts={"n_records": scored.result.n_records, "n_features": len(scored.result.features)},
                          config_keys=("zero_division", "missing_label"), normalization=True,
                          ranked_by="strict view: mean F1 over features",
                          types=json_param(cfg.get("types_used", cfg.get("types", {})), what="feature types"),
                          positive_labels=json_param(cfg.get("positive_labels_used", cfg.get("positive_labels", {})), what="positive labels"),
                          labels=json_param(cfg.get("labels_used", {}), what="features with declared classes"),
                          **({"multi_label": json_param(cfg["multi_label"], what="multi-label features")} if cfg.get("multi_label") else {}))

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.labels.report import render_labels

        return render_labels(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        out = self.view_sections(scored, models, Section(title="Ranking (strict view)", table=self.ranking_table(scored, models)))
        labels = label_rows(scored.result, models, ("strict",))
        if len(labels):
            out.append(Section(title="Per-label one-vs-rest metrics (strict view)", table=labels))
        return out + closing_sections(scored.doc.get("warnings") or [], scored.doc["config"])


def _truth_frame(ids: Sequence[str], targets: Sequence[Any], objects: Sequence[dict[str, Any] | None], *, per_object: bool, label_name: str,
                 truth_source: str) -> pd.DataFrame:
    """The targets as a frame of feature labels indexed by id: objects like the first record's, or one label each."""
    rows: list[dict[str, Any]] = []
    for r, v, obj in zip(ids, targets, objects):
        if per_object:
            if obj is None:
                raise InputError(f"{truth_source}: record {r!r}: expected an object of feature labels like the first record, "
                                 f"but found {type(v).__name__} {_short(v)}.")
            rows.append(obj)
        else:
            ok, label = _scalar_cell(v)
            if obj is not None or not ok:
                raise InputError(f"{truth_source}: record {r!r}: expected one label (text, number or empty) like the first record, "
                                 f"but found {type(v).__name__} {_short(v)}.")
            rows.append({label_name: label})
    return pd.DataFrame.from_records(rows, index=pd.Index(ids, name="id"))


def _model_rows(name: str, ids: Sequence[str], cells: Sequence[Any], given: Sequence[Any] | None, *, per_object: bool,
                label_name: str) -> tuple[pd.DataFrame, list[str], list[str]]:
    """One model's cells as its frame of predicted labels (the rows that are predictions), the ids of
    outputs that are not of the records' shape, and the ids whose status is pending or error."""
    keep, prow, invalid, not_predicted = [], [], [], []
    for i, (r, v) in enumerate(zip(ids, cells)):
        obj = _object_cell(v) if per_object else None
        st = status_text(obj.pop("status", None)) if obj is not None else ""
        if given is not None and status_text(given[i]):
            st = status_text(given[i])
        if st.lower() not in ("", "ok", "pending", "error"):
            raise InputError(f"status of model {name!r}: record {r!r}: status must be one of ok, pending, error (or empty), but found {st!r}.")
        if st.lower() in ("pending", "error"):
            not_predicted.append(r)
            continue  # not a prediction, as a pending or error row of a file
        if per_object and is_empty(v):
            continue  # no output: the record has no prediction, as when a file lacks it
            # (one label per record: an empty cell is the label "missing", a value)
        if per_object:
            if obj is None:
                invalid.append(r)
                continue
            prow.append(obj)
        else:
            ok, label = _scalar_cell(v)
            if not ok:
                invalid.append(r)
                continue
            prow.append({label_name: label})
        keep.append(r)
    frame = pd.DataFrame.from_records(prow, index=pd.Index(keep, name="id")) if prow else pd.DataFrame(index=pd.Index([], name="id", dtype=object))
    return frame, invalid, not_predicted


def _set_records(f: str, columns: list[np.ndarray], cfg: Any, norm: Any, t_ids: pd.Index, p_ids: Mapping[str, pd.Index],
                 chosen: Sequence[str]) -> list[pd.DataFrame]:
    """`records_frame`'s rows of a multi-label feature: each side's set as the JSON list of its display labels, sorted."""
    from extracteval.tasks.labels.semantics import LabelEncoder, display_labels
    from extracteval.tasks.labels.sets import encode_sets

    pairs, table = encode_sets(columns, cfg.multi_label[f], LabelEncoder(cfg.type_of(f), norm))
    shown = np.asarray(display_labels(table), dtype=object)

    def texts(rows: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
        out = np.full(n + 1, "[]", dtype=object)  # index -1 (no row on that side): None below
        if len(rows):
            listed = pd.Series(shown[codes]).groupby(rows).agg(lambda x: json.dumps(sorted(set(x)), ensure_ascii=False))
            out[listed.index.to_numpy()] = listed.to_numpy(dtype=object)
        out[n] = None
        return out

    t_text = texts(*pairs[0], len(t_ids))
    names = list(p_ids)
    frames = []
    for m in chosen:
        i = names.index(m)
        p_text = texts(*pairs[i + 1], len(p_ids[m]))
        all_ids = t_ids.union(p_ids[m], sort=False)
        ti, pi = t_ids.get_indexer(all_ids), p_ids[m].get_indexer(all_ids)
        tt, pt = t_text[np.where(ti >= 0, ti, len(t_ids))], p_text[np.where(pi >= 0, pi, len(p_ids[m]))]
        frames.append(pd.DataFrame({
            "model": m, "record_id": np.asarray(all_ids, dtype=object), "feature": f, "truth": tt, "predicted": pt,
            "correct": (ti >= 0) & (pi >= 0) & (tt == pt),
            "status": np.where((ti >= 0) & (pi >= 0), "aligned", np.where(ti >= 0, "missing", "extra")),
        }))
    return frames


def _set_record_counts(frame: pd.DataFrame, multi: set[str]) -> Any:
    """`record_counts` when some features are multi-label: their truth and predicted cells (JSON lists) exploded
    into labels, a label in both sets a tp, in the truth's only an fn, in the prediction's only an fp."""
    status = frame["status"].astype(str).to_numpy(dtype=object)
    feature = frame["feature"].astype(object).to_numpy(dtype=object)
    is_set = np.isin(feature, list(multi))

    def sides(col: str, present: np.ndarray) -> pd.DataFrame:
        cells = frame[col].astype(object).to_numpy(dtype=object)
        items = np.where(is_set, None, cells).astype(object)
        out = pd.DataFrame({"row": np.arange(len(frame)), "label": items})
        if is_set.any():
            codes, uniques = pd.factorize(pd.Series(cells[is_set], dtype=object), use_na_sentinel=True)
            parsed = [json.loads(u) if isinstance(u, str) else [] for u in uniques]
            lists = pd.Series([parsed[c] if c >= 0 else [] for c in codes], index=np.flatnonzero(is_set), dtype=object).explode().dropna()
            out = pd.concat([out[~is_set], pd.DataFrame({"row": lists.index.to_numpy(), "label": lists.to_numpy(dtype=object)})])
        return out[present[out["row"].to_numpy()]]

    t = sides("truth", status != "extra")
    p = sides("predicted", status != "missing")
    right = frame["correct"].fillna(False).to_numpy(dtype=bool)
    single_tp = t[~is_set[t["row"].to_numpy()] & right[t["row"].to_numpy()]]
    t_set, p_set = t[is_set[t["row"].to_numpy()]], p[is_set[p["row"].to_numpy()]]
    both = t_set.merge(p_set, on=["row", "label"], how="outer", indicator=True)
    tp = pd.concat([single_tp, both.loc[both["_merge"] == "both", ["row", "label"]]])
    fn = pd.concat([t[~is_set[t["row"].to_numpy()] & ~right[t["row"].to_numpy()]], both.loc[both["_merge"] == "left_only", ["row", "label"]]])
    fp = pd.concat([p[~is_set[p["row"].to_numpy()] & ~right[p["row"].to_numpy()]], both.loc[both["_merge"] == "right_only", ["row", "label"]]])
    ids = frame["record_id"].astype(str).to_numpy(dtype=object)
    parts = (tp, fn, fp)
    at = np.concatenate([x["row"].to_numpy(dtype=np.int64) for x in parts])
    return label_count_table(ids[at], feature[at], np.concatenate([x["label"].to_numpy(dtype=object) for x in parts]),
                             np.repeat(np.array(["tp", "fn", "fp"], dtype=object), [len(x) for x in parts]), rows=(ids, feature),
                             correct=(ids[right], feature[right]))


def _label_cells(values: pd.DataFrame) -> dict[str, Any]:
    """Record id → its object of feature labels (the predictions file's cells)."""
    return dict(zip((str(i) for i in values.index), values.to_dict(orient="records")))


def _take(codes: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`codes[at]`, -1 where `at` is -1 (no row on that side; also when that side has no rows at all)."""
    return np.where(at >= 0, codes[np.maximum(at, 0)], -1) if len(codes) else np.full(len(at), -1, dtype=np.int64)


def _normalization(config: Mapping[str, Any]) -> Any:
    """The NormalizationConfig of a result's `config["normalization"]` (its `to_dict()`)."""
    import dataclasses

    from extracteval.core.normalize import NormalizationConfig

    d = dict(config.get("normalization") or {})
    names = {f.name for f in dataclasses.fields(NormalizationConfig)}
    kw: dict[str, Any] = {}
    for k, v in d.items():
        if k in names:
            kw[k] = frozenset(v) if isinstance(v, (list, tuple, set, frozenset)) else v
    return NormalizationConfig(**kw)


ADAPTER = LabelsAdapter()
