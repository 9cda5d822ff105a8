"""MLflow adapter of the `spans` task: exact and relaxed span matching as metrics,
per-tag tables, per-document ledgers as Parquet, the F1-vs-threshold curve as a figure.

Metric keys (one model's run), `<mode>` being `exact`, `relaxed_0.5`, `relaxed_0.8` (and the
main threshold when it is another): `spans/<mode>/micro/precision|recall|f1|tp|fp|fn`,
`spans/<mode>/macro|weighted/precision|recall|f1` (means over tags, plain and weighted by gold spans),
`spans/exact/micro/ci_low|ci_high` (bootstrap over documents),
`spans/errors/boundary|type|boundary_type|missed|spurious`,
`spans/nervaluate/<schema>/precision|recall|f1|correct|incorrect|partial|missed|spurious` for the
SemEval-2013 schemas `strict`, `exact`, `partial`, `ent_type` (overall), `spans/token_accuracy` (token
files), `spans/ill_formed_chunks`, `tag/<TAG>/precision|recall|f1|support|tp|fp|fn` (exact),
`wins/field_wins` (per-tag wins), `wins/tags_scored`, `ranking/rank`.

MLflow metric names may not contain `@`, so the task's mode `relaxed@0.5` becomes the key
segment `relaxed_0.5` (the sanitiser's rule for every name); `metric_keys.json` maps each key
back to its `relaxed@0.5` original.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from extracteval.io.cells import is_missing
from extracteval.errors import InputError
from extracteval.mlflow.adapter_parts import (adjacent_ranks_section, closing_sections, comparison_metrics, frame_ids, is_winner, parent_head,
                                              rank_metrics, winner_kind_metrics, winners_table, rescore_options, build_config)
from extracteval.mlflow.adapter_parts import logged_record_table
from extracteval.mlflow.keys import KeyMap, sanitize_segment
from extracteval.mlflow.predictions_file import CellPredictions, prediction_cells_frame, write_prediction_cells
from extracteval.tasks.spans.records import COUNTS as _COUNTS
from extracteval.tasks.spans.records import chunk_rows, count_frame, expand_chunk_rows
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys

__all__ = ["ADAPTER", "SpansAdapter"]

_RATIOS = ("precision", "recall", "f1")
_ERRORS = ("boundary", "type", "boundary_type", "missed", "spurious")
_NO_SPANS = object()
_SCHEMA_KEYS = ("precision", "recall", "f1", "correct", "incorrect", "partial", "missed", "spurious")  # `spans/nervaluate/<schema>/…`


def _mode_segment(mode: str) -> str:
    """`exact` → `exact`, `relaxed@0.5` → `relaxed_0.5` (MLflow keys allow no `@`)."""
    return sanitize_segment(mode)


def _truth_frame(corpus: Any) -> pd.DataFrame:
    """The gold annotation as a table for the dataset input and its digest: one row per
    document, its text (or tokens) and its gold spans as canonical JSON, offsets within the document."""
    gold = corpus.gold.canonical()
    n = len(corpus.doc_ids)
    offsets = corpus.doc_offsets if corpus.unit == "token" else np.zeros(n, dtype=np.int64)
    per_doc: list[list[list[Any]]] = [[] for _ in range(n)]
    for d, s, e, t in zip(gold.doc.tolist(), gold.start.tolist(), gold.end.tolist(), gold.tag.tolist()):
        off = int(offsets[d])
        per_doc[d].append([s - off, e - off, corpus.tags[t]])
    data: dict[str, list[Any]] = {"spans": [json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in per_doc]}
    if corpus.unit == "token":
        bounds = [*corpus.doc_offsets.tolist(), int(corpus.n_tokens or 0)]
        toks = corpus.tokens
        data["tokens"] = [None if toks is None else json.dumps(toks[bounds[i]:bounds[i + 1]].tolist(), ensure_ascii=False) for i in range(n)]
    else:
        texts = corpus.texts or ()
        data["text"] = [texts[i] if i < len(texts) else None for i in range(n)]
    return pd.DataFrame(data, index=pd.Index(list(corpus.doc_ids), name="id"))


def _prediction_cells(corpus: Any, model: str) -> dict[str, list[dict[str, Any]]]:
    """Per document (in corpus order), the model's spans as scored: `{"start", "end", "tag", "text"?}`."""
    sp = corpus.predictions[model]
    by_doc: dict[str, list[dict[str, Any]]] = {str(d): [] for d in corpus.doc_ids}
    texts = sp.text if sp.text is not None else [None] * len(sp.doc)
    for d, s0, e0, t, own in zip(sp.doc.tolist(), sp.start.tolist(), sp.end.tolist(), sp.tag.tolist(), texts):
        span = {"start": s0, "end": e0, "tag": corpus.tags[t]}
        if own is not None:
            span["text"] = own
        by_doc[str(corpus.doc_ids[d])].append(span)
    return by_doc


def _parse_json(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str):
        return json.loads(value)
    return value


def _cell_spans(value: Any, list_keys: Sequence[str]) -> tuple[str | None, Any]:
    """(document text or None, raw list of spans) of one cell: a list of spans, or an object
    {"text"?, "<list key>": [...]}, either possibly as a JSON string. Raises ValueError."""
    if is_missing(value):
        return None, _NO_SPANS
    obj = _parse_json(value)
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, Mapping):
        key = next((k for k in list_keys if k in obj), None)
        if key is None:
            raise ValueError(f"expected a list of spans or an object with a {' or '.join(repr(k) for k in list_keys)} list, but found keys {sorted(obj)}")
        text = obj.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError(f'"text": expected a string, but found {type(text).__name__}')
        spans = obj[key] if obj[key] is not None else []
        if isinstance(spans, np.ndarray):
            spans = spans.tolist()
        if not isinstance(spans, (list, tuple)):
            raise ValueError(f"{key!r}: expected a list of spans, but found {type(spans).__name__}")
        return text, spans
    if isinstance(obj, (list, tuple)):
        return None, obj
    raise ValueError(f"expected a list of spans (or a JSON string of one), but found {type(obj).__name__}")


def _span(sp: Any, text: str | None) -> tuple[int, int, str, str | None]:
    """One span {start, end, tag (or label), text?} or [start, end, tag] → tuple. Raises ValueError."""
    if isinstance(sp, Mapping):
        start, end, tag, own = sp.get("start"), sp.get("end"), sp.get("tag", sp.get("label")), sp.get("text")
    elif isinstance(sp, (list, tuple)) and len(sp) == 3:
        (start, end, tag), own = sp, None
    else:
        raise ValueError(f'expected an object {{"start", "end", "tag"}} or [start, end, tag], but found {sp!r}')
    out = []
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{name}: expected an integer character offset, but found {v!r}")
        out.append(int(v))
    s, e = out
    if not isinstance(tag, str) or not tag.strip():
        raise ValueError(f"tag: expected a non-empty string, but found {tag!r}")
    if s < 0 or e <= s:
        raise ValueError(f"expected 0 ≤ start < end (end exclusive), but found [{s}, {e})")
    if text is not None and e > len(text):
        raise ValueError(f"span [{s}, {e}) lies outside the document text ({len(text)} characters)")
    if own is not None and not isinstance(own, str):
        raise ValueError(f"text: expected a string, but found {type(own).__name__}")
    return s, e, tag.strip(), own


def _id_renamed(source: Any, id_column: str) -> Any:
    """A source (a file, a table in memory, or a (name, source) pair) with its `id_column` named
    `id`, as spans documents name their id; a file's documents must use `id` already."""
    from extracteval.io.memory import is_in_memory, renamed

    if isinstance(source, tuple):
        return source[0], _id_renamed(source[1], id_column)
    if not is_in_memory(source):
        raise InputError(f"{source}: spans documents name their id under \"id\" in a file; id_column={id_column!r} applies to tables in memory.")
    return renamed(source, id_column, "id", what="id_column")


_Span = tuple[int, int, str, str | None]  # start, end (exclusive), tag, the span's own text when given


def _gold_rows(ids: Sequence[str], targets: Sequence[Any], truth_source: str) -> dict[str, tuple[str | None, list[_Span]]]:
    """Each record's document text (or None) and gold spans, checked: an unreadable or empty truth cell, an
    ill-formed span or a span whose text differs from the document is an error naming the record."""
    gold_rows: dict[str, tuple[str | None, list[_Span]]] = {}
    for rid, cell in zip(ids, targets):
        try:
            text, raw = _cell_spans(cell, ("spans", "gold"))
        except ValueError as e:
            raise InputError(f"{truth_source}: record {rid!r}: {e}.") from None
        if raw is _NO_SPANS:
            raise InputError(f"{truth_source}: record {rid!r}: the ground truth is empty; expected a list of spans ([] for none).")
        spans = []
        for j, sp in enumerate(raw):
            try:
                s, e, tag, own = _span(sp, text)
            except ValueError as err:
                raise InputError(f"{truth_source}: record {rid!r}: span {j}: {err}.") from None
            if own is not None and text is not None and text[s:e] != own:
                raise InputError(f"{truth_source}: record {rid!r}: span {j}: text {own!r} differs from the document text at [{s}, {e}), {text[s:e]!r}.")
            spans.append((s, e, tag, own))
        gold_rows[rid] = (text, spans)
    return gold_rows


def _predicted_rows(ids: Sequence[str], cells: Sequence[Any], gold_rows: Mapping[str, tuple[str | None, list[_Span]]]) -> tuple[dict[str, list[_Span]], list[str], int]:
    """One model's spans per record, the records whose output is not a list of spans (predicting none), and how many
    ill-formed spans were dropped."""
    rows: dict[str, list[_Span]] = {}
    bad_outputs: list[str] = []
    bad_spans = 0
    for rid, cell in zip(ids, cells):
        text = gold_rows[rid][0]
        try:
            _, raw = _cell_spans(cell, ("spans", "pred"))
        except ValueError:
            bad_outputs.append(rid)
            raw = []
        if raw is _NO_SPANS:
            bad_outputs.append(rid)
            raw = []
        keep = []
        for sp in raw:
            try:
                keep.append(_span(sp, text))
            except ValueError:
                bad_spans += 1
        rows[rid] = keep
    return rows, bad_outputs, bad_spans


class SpansAdapter(CellPredictions):
    task = "spans"
    record_is_value = True
    model_type = "extraction-spans"
    about = "character or token spans: exact (= conlleval) and relaxed matching, error taxonomy"  # what the task scores (`extracteval tasks`)
    item_table_name = "tag_metrics"  # artifacts extracteval/tag_metrics.csv and tag_metrics_table.json
    # and the same for every relaxed mode (`spans/relaxed_0.5/…`)
    interval_metrics = ("spans/exact/micro/f1", "spans/exact/micro/precision", "spans/exact/micro/recall", "spans/exact/macro/f1")

    record_table = logged_record_table  # the per-record counts in memory: read back from the rows the run logs

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per document: its gold spans (tp + fn of the exact matching mode)."""
        from extracteval.mlflow.intervals import record_sizes_of

        return record_sizes_of(path, ("tp", "fn"), "gold spans", where=("mode", "exact"))

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per document: tp, fp, fn of every matching mode and tag (columns (mode, tag, count))."""
        from extracteval.core.record_counts import RecordCountTable, column
        from extracteval.mlflow.intervals import read_records

        frame = read_records(path, ["record_id", "mode", "tag", *_COUNTS])
        if frame is None:
            return None
        ids = frame["record_id"].astype(str).to_numpy(dtype=object)
        mode, tag = frame["mode"].astype(str).to_numpy(dtype=object), frame["tag"].astype(str).to_numpy(dtype=object)
        names = np.concatenate([[column(m, t, k) for m, t in zip(mode, tag)] for k in _COUNTS]) if len(frame) else np.zeros(0, dtype=object)
        values = np.concatenate([frame[k].to_numpy(dtype=np.int64) for k in _COUNTS])
        return RecordCountTable.from_long(np.tile(ids, len(_COUNTS)), names, values)

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        from extracteval.core.record_counts import item_count_columns, parts
        from extracteval.mlflow.intervals import zero_division_param
        from extracteval.tasks.spans.metrics import METRICS, spans_metrics

        seg, _, rest = metric.removeprefix("spans/").partition("/")
        modes = {sanitize_segment(p[0]): p[0] for p in map(parts, columns) if len(p) == 3}
        if not metric.startswith("spans/") or seg not in modes or rest not in METRICS:
            return None
        zd = zero_division_param(params)
        _tags, counts = item_count_columns(columns, prefix=(modes[seg],))

        def value(summed: np.ndarray) -> np.ndarray:
            tp, fp, fn, _tn = counts(summed)
            return spans_metrics(tp, fp, fn, which=(rest,), zero_division=zd)[rest]

        return value
    config_keys: Mapping[str, str] = {
        "threshold": "main relaxed threshold in [0, 1] (0.5; 0.5 and 0.8 are always reported)",
        "iou_weight": "weight of IoU in the relaxed score; TextSim gets 1 − w (0.65)",
        "examples": "examples kept per error kind (5)",
        "bootstrap": "bootstrap resamples of documents for intervals; 0 = off (1000)",
        "confidence": "interval coverage (0.95)",
        "seed": "bootstrap seed (0)",
        "min_overlap": "SemEval-2013 schemas: % of a gold span's length a predicted span must overlap to pair with it, 1–100 (1)",
        **shared_config_keys("zero_division"),
    }

    # ---- scoring -------------------------------------------------------------------------------

    def score_args(self, args: argparse.Namespace) -> Scored:
        """`extracteval score spans` in memory (its command runs this)."""
        from extracteval.tasks.spans.options import load_corpus as load
        from extracteval.tasks.spans.options import build_config
        from extracteval.tasks.spans.options import spans_inputs, truth_source

        corpus = load(args)
        scored = self._scored(corpus, build_config(args, corpus.unit), truth_source(args), inputs=spans_inputs(args))
        scored.cache["report_style"] = getattr(args, "report_style", "default")
        return scored

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The truth and each model's predictions (`NAME=FILE` specs, or (name, documents held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door. JSONL documents (ids under `id`), or token (CoNLL) files
        in the command line's default scheme (conlleval)."""
        from dataclasses import replace

        from extracteval.tasks.spans.inputs import is_jsonl, load_jsonl_corpus, load_token_corpus
        from extracteval.tasks.spans.options import named_files

        if id_column != "id":  # documents name their id under `id`: a table in memory is renamed, a file must say `id`
            truth, predictions = _id_renamed(truth, id_column), [_id_renamed(p, id_column) for p in predictions]
        preds = named_files(list(predictions), "predictions")
        cfg = self.build_config(config)
        if is_jsonl(truth):
            corpus = load_jsonl_corpus(truth, preds)
        else:
            corpus = load_token_corpus(scheme="conlleval", truth=truth, predictions=preds, suffix=False)
            cfg = replace(cfg, scheme="conlleval")
        return self._scored(corpus, cfg, str(truth), inputs={"truth": str(truth), "conll": [], "predictions": [f"{n}={p}" for n, p in preds]})

    # ---- streaming engines (`evaluate spans --chunk-size N` / `--engine spark`, mlflow/stream.py)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        """JSONL documents sorted by id (token files: an `InputError`; the truth digest reads
        documents in id order, and token files name theirs by line, `line N`, in file order)."""
        from extracteval.tasks.spans.chunked import spans_chunk_job
        from extracteval.tasks.spans.options import check_token_inputs

        if check_token_inputs(args):
            raise InputError("evaluate spans streams JSONL documents only: a streamed evaluation reads documents in id order, and token "
                             "(CoNLL) files name theirs by line (`line N`) in file order. Drop --chunk-size/--workers to evaluate token "
                             "files in memory, or stream their scores alone with `extracteval score spans --chunk-size N`.")
        return spans_chunk_job(args, chunk_size=chunk_size)

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        from extracteval.tasks.spans.spark import spans_spark_job

        return spans_spark_job(spark, args)

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, dict[str, pd.DataFrame | None]]]:
        """The chunk's truth rows, its per-document counts in the compact layout of
        `records.chunk_rows` (`scored_from_chunks` expands them to every tag of the
        evaluation) and its predictions as scored. `chunk` is a `SpanCorpus` of JSONL documents."""
        from extracteval.tasks.spans.semantics import document_counts

        config = getattr(task, "task", task).config  # the `SpansTask`, inside `RowsInLedger` on Spark
        models = sorted(chunk.predictions)
        records = {m: chunk_rows(chunk.doc_ids, chunk.tags, document_counts(chunk, m, config=config)) for m in models}
        preds = {m: prediction_cells_frame(_prediction_cells(chunk, m)) for m in models}
        return _truth_frame(chunk), {"records": records, "predictions": preds}

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        """The `Scored` of the merged result; each model's compact per-document counts rewritten
        as the in-memory `records.parquet` (every tag of the evaluation, mode by mode)."""
        from extracteval.tasks.spans.options import truth_source
        from extracteval.mlflow.stream import stream_scored

        for m in result.ranking:
            src = streamed.files.get((m, "records.parquet"))
            if src is not None:
                dst = src.with_name(f"expanded-{src.name}")
                expand_chunk_rows(src, dst, model=m, modes=[mode for mode, _ in self._modes(result.models[m])], tags=result.tags)
                src.unlink()
                streamed.files[(m, "records.parquet")] = dst
        return stream_scored(self.task, result, result.to_dict(), streamed, truth_source=truth_source(argparse.Namespace(**streamed.inputs)))

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """Score one `experiments/<name>/experiment.yaml` (the demo)."""
        from extracteval.tasks.spans.options import scheme_name as _scheme

        ns = argparse.Namespace(
            conll=[f"{n}={folder / p}" for n, p in spec["conll"].items()] if spec.get("conll") else None,
            truth=str(folder / spec["truth"]) if spec.get("truth") else None,
            predictions=[f"{name}={folder / path}" for name, path in (spec.get("predictions") or {}).items()] or None,
            scheme=_scheme(str(spec.get("scheme", "conlleval"))), suffix=bool(spec.get("suffix", False)),
            threshold=float(spec.get("threshold", 0.5)), iou_weight=float(spec.get("iou_weight", 0.65)),
            zero_division=0.0, examples=5, no_ci=False, resamples=1000, seed=0, min_overlap=float(spec.get("min_overlap", 1.0)),
        )
        return self.score_args(ns)

    def _scored(self, corpus: Any, config: Any, truth_source: str, *, inputs: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> Scored:
        from extracteval.tasks.spans.semantics import score_spans

        result = score_spans(corpus, config=config)
        doc = result.to_dict()
        doc["inputs"] = dict(inputs)
        if extra:
            for k, v in extra.items():
                doc[k] = [*doc[k], *v] if k == "warnings" else v
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=lambda: _truth_frame(corpus),
                        truth_source=truth_source, config=doc["config"])
        scored.cache["corpus"] = corpus
        return scored

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Per document, the model's spans as scored: `[{"start", "end", "tag", "text"?}]`
        (character offsets). Spans of token files are token positions inside a file that holds
        the gold tags too: not written (False), they cannot be scored against another truth."""
        corpus = scored.cache.get("corpus")
        if corpus is None or corpus.unit != "char" or model not in corpus.predictions:
            return False
        write_prediction_cells(_prediction_cells(corpus, model), path)
        return True

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options
    logged_keys = {"max_examples": "examples"}

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str
    ) -> Scored:
        """One target cell and one prediction cell per record (document): a list of spans
        `{"start", "end", "tag", "text"?}` (character offsets, end exclusive), or an object
        `{"text": …, "spans": [...]}` giving the document text too, either as a JSON string or
        as Python objects. The truth must be valid (InputError naming the record and span); a
        model output that cannot be read counts as predicting no spans, and an ill-formed span
        inside one is dropped; both are counted in `invalid_outputs` and warned about."""
        from extracteval.tasks.spans.semantics import SpanCorpus, SpanSet

        cfg = self.build_config(config)
        ids = frame_ids(ids, targets, predictions, truth_source)
        gold_rows = _gold_rows(ids, targets, truth_source)
        pred_rows: dict[str, dict[str, list[tuple[int, int, str, str | None]]]] = {}
        invalid: dict[str, dict[str, Any]] = {}
        for name, cells in predictions.items():
            pred_rows[name], bad_outputs, bad_spans = _predicted_rows(ids, cells, gold_rows)
            if bad_outputs or bad_spans:
                invalid[name] = {"count": len(bad_outputs), "record_ids": bad_outputs[:20], "invalid_spans": bad_spans}
        order = sorted(ids)
        index = {rid: k for k, rid in enumerate(order)}
        tags = sorted({s[2] for _, sp in gold_rows.values() for s in sp} | {s[2] for rows in pred_rows.values() for sp in rows.values() for s in sp})
        code = {t: i for i, t in enumerate(tags)}

        def spanset(by_doc: Mapping[str, list[tuple[int, int, str, str | None]]]) -> Any:
            rows = [(index[rid], s, e, code[t], own) for rid in order for (s, e, t, own) in by_doc[rid]]
            if not rows:
                return SpanSet.empty()
            doc, st, en, tg, own = zip(*rows)
            return SpanSet(doc=np.asarray(doc, dtype=np.int64), start=np.asarray(st, dtype=np.int64), end=np.asarray(en, dtype=np.int64),
                           tag=np.asarray(tg, dtype=np.int32), text=np.asarray(own, dtype=object) if any(o is not None for o in own) else None)

        corpus = SpanCorpus(doc_ids=tuple(order), tags=tuple(tags), unit="char", texts=tuple(gold_rows[r][0] for r in order),
                            gold=spanset({r: v[1] for r, v in gold_rows.items()}), predictions={m: spanset(v) for m, v in pred_rows.items()})
        warnings = []
        for m, v in sorted(invalid.items()):
            if v["count"]:
                warnings.append(f"model {m!r}: {v['count']} output(s) are not a list of spans and count as predicting none: "
                                + ", ".join(repr(x) for x in v["record_ids"][:5]) + (" …" if v["count"] > 5 else ""))
            if v["invalid_spans"]:
                warnings.append(f"model {m!r}: {v['invalid_spans']} ill-formed span(s) (bad offsets or tag) were dropped.")
        return self._scored(corpus, cfg, truth_source, inputs={"truth": truth_source, "predictions": {m: f"predictions of model {m!r}" for m in pred_rows}},
                            extra={"invalid_outputs": dict(sorted(invalid.items())), "warnings": warnings})

    # ---- metrics -------------------------------------------------------------------------------

    def item_names(self, scored: Scored) -> Sequence[str]:
        return list(scored.result.tags)

    @staticmethod
    def _modes(ms: Any) -> list[tuple[str, Any]]:
        return [("exact", ms.exact), *ms.relaxed.items()]

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        ms = scored.result.models[model]
        out: dict[str, float] = {}
        for mode, res in self._modes(ms):
            seg = _mode_segment(mode)
            for k in (*_RATIOS, *_COUNTS):
                out[f"spans/{seg}/micro/{k}"] = float(getattr(res.micro, k))
            for avg in ("macro", "weighted"):
                out.update({f"spans/{seg}/{avg}/{k}": float(getattr(res, avg)[k]) for k in _RATIOS})
            if seg != mode:
                for k in [*(f"micro/{x}" for x in (*_RATIOS, *_COUNTS)), *(f"{a}/{x}" for a in ("macro", "weighted") for x in _RATIOS)]:
                    keys.originals[f"spans/{seg}/{k}"] = f"spans/{mode}/{k}"
        if ms.ci is not None:
            # intervals of the exact micro F1, beside it (`…/f1/ci_low` would make `…/f1` a folder too)
            out["spans/exact/micro/ci_low"] = float(ms.ci.low)
            out["spans/exact/micro/ci_high"] = float(ms.ci.high)
        for k in _ERRORS:
            out[f"spans/errors/{k}"] = float(ms.errors.counts[k])
        for schema, d in ms.nervaluate.items():
            out.update({f"spans/nervaluate/{schema}/{k}": float(d[k]) for k in _SCHEMA_KEYS})
        if ms.token_accuracy is not None:
            out["spans/token_accuracy"] = float(ms.token_accuracy)
        out["spans/ill_formed_chunks"] = float(ms.ill_formed)
        out.update(rank_metrics(rank=ms.rank, wins=ms.tag_wins, items_scored=len(ms.exact.per_tag), items="tags"))
        for tag, tm in ms.exact.per_tag.items():
            for k in (*_RATIOS, *_COUNTS):
                out[keys.key("tag", tag, k)] = float(getattr(tm, k))
            out[keys.key("tag", tag, "support")] = float(tm.support)
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        r = scored.result
        out = parent_head(keys, ranking=r.ranking, ranks={m: r.models[m].rank for m in r.ranking},
                          wins={m: r.models[m].tag_wins for m in r.ranking}, items="tags", n_items=len(r.tags))
        for m in r.ranking:
            ms = r.models[m]
            out[keys.key("ranking", m, "exact_f1")] = float(ms.exact.micro.f1)
            # each model's headline numbers on the parent too, so the parent sorts in the runs table
            out[keys.key("models", m, "spans/exact/micro/f1")] = float(ms.exact.micro.f1)
            for mode, res in ms.relaxed.items():
                k = keys.key("models", m, f"spans/{_mode_segment(mode)}/micro/f1")
                out[k] = float(res.micro.f1)
                keys.originals[k] = f"models/{m}/spans/{mode}/micro/f1"
        out.update(winner_kind_metrics((w.kind for w in r.tag_winners.values()), "tag_winners"))
        out.update(comparison_metrics(r.comparisons, keys))
        return out

    # ---- tables --------------------------------------------------------------------------------

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        """One row per model, matching mode and tag (as `score spans --output` writes
        tag_metrics.csv), plus whether the model won the tag (exact F1, per-tag winners)."""
        r = scored.result
        rows = []
        for m in (r.ranking if model is None else (model,)):
            for mode, res in self._modes(r.models[m]):
                for tag, tm in res.per_tag.items():
                    w = r.tag_winners.get(tag)
                    rows.append({"model": m, "mode": mode, "tag": tag, **{k: getattr(tm, k) for k in _RATIOS}, "support": tm.support,
                                 **{k: getattr(tm, k) for k in _COUNTS},
                                 "winner": mode == "exact" and is_winner(w, m)})
        return pd.DataFrame(rows, columns=["model", "mode", "tag", *_RATIOS, "support", *_COUNTS, "winner"])

    def _document_counts(self, scored: Scored, model: str) -> dict[str, np.ndarray]:
        if ("doc_counts", model) not in scored.cache:
            from extracteval.tasks.spans.semantics import SpansConfig, document_counts

            cfg = scored.result.config
            assert isinstance(cfg, SpansConfig)
            scored.cache[("doc_counts", model)] = document_counts(scored.cache["corpus"], model, config=cfg)
        return scored.cache[("doc_counts", model)]

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id (document), mode, tag, tp, fp, fn: one row per model, document,
        matching mode and tag, zeros included (every document is a resampling unit). The ids
        are dictionary-encoded; summed over documents the counts equal the per-tag metrics."""
        r = scored.result
        if "corpus" not in scored.cache:
            return None
        corpus = scored.cache["corpus"]
        frames = [count_frame(m, corpus.doc_ids, corpus.tags, mode, arr)
                  for m in (r.ranking if model is None else (model,)) for mode, arr in self._document_counts(scored, m).items()]
        if not frames:
            return None
        out = pd.concat(frames, ignore_index=True)
        for c in ("model", "mode"):  # concat of categoricals with different categories gives objects
            out[c] = out[c].astype("category")
        return out

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        """The parent run's CSV artifacts: the leaderboard, the winner of every tag, the curves."""
        r = scored.result
        return {"leaderboard": self.ranking_table(scored, scored.models), "tag_winners": winners_table(r.tag_winners, "tag"),
                "f1_vs_threshold": self.curve_table(scored, scored.models)}

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        rows = []
        for m in models:
            ms = r.models[m]
            row: dict[str, Any] = {"rank": ms.rank, "model": m, "tier": ms.tier,
                                   **{f"exact_{k}": getattr(ms.exact.micro, k) for k in _RATIOS},
                                   "exact_f1_ci_low": None if ms.ci is None else ms.ci.low, "exact_f1_ci_high": None if ms.ci is None else ms.ci.high,
                                   "exact_macro_f1": ms.exact.macro_f1}
            for mode, res in ms.relaxed.items():
                row.update({f"{mode}_{k}": getattr(res.micro, k) for k in _RATIOS})
            row.update({"tag_wins": ms.tag_wins, **{f"errors_{k}": ms.errors.counts[k] for k in _ERRORS}})
            if ms.token_accuracy is not None:
                row["token_accuracy"] = ms.token_accuracy
            rows.append(row)
        return pd.DataFrame(rows)

    def curve_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        rows = [{"model": m, **p.to_dict()} for m in models for p in scored.result.models[m].curve]
        return pd.DataFrame(rows, columns=["model", "threshold", *_RATIOS, *_COUNTS])

    # ---- figures and report --------------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap, f1_threshold_curve, item_f1_bars

        suffix = f" — {models[0]}" if len(models) == 1 else ""
        table = self.item_table(scored, None)
        exact = table[(table["mode"] == "exact") & table["model"].isin(list(models))]
        exact = pd.concat([exact[exact["model"] == m] for m in models], ignore_index=True)  # model order as asked
        out = {
            "tag_f1.png": item_f1_bars(exact, item="tag", title=f"spans: exact F1 per tag{suffix}"),
            "tag_counts.png": confusion_heatmap(exact, item="tag", title="spans: exact TP / FP / FN per tag", counts=_COUNTS),
        }
        curve = self.curve_table(scored, models)
        if len(curve):
            cfg = scored.result.config
            out["f1_vs_threshold.png"] = f1_threshold_curve(
                curve, title=f"spans: micro F1 vs relaxed threshold ({cfg.iou_weight:g}·IoU + {cfg.text_weight:g}·TextSim){suffix}")
        return out

    def params(self, scored: Scored) -> dict[str, str]:
        r = scored.result
        return run_params(scored, counts={"unit": r.unit, "n_documents": r.n_documents, "n_gold_spans": r.n_gold, "n_tags": len(r.tags)},
                          config_keys=("threshold", "iou_weight", "text_weight", "text_similarity", "curve_step", "scheme", "zero_division",
                                       "max_examples", "relaxed", "bootstrap", "confidence", "seed", "min_overlap"),
                          report_thresholds=",".join(f"{t:g}" for t in scored.config.get("report_thresholds", [])))

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.spans.report import render_spans

        return render_spans(scored.doc, style=scored.cache.get("report_style", "default"))

    @staticmethod
    def _schemas_section(scored: Scored, models: Sequence[str]) -> Section:
        """The SemEval-2013 schemas of each model, overall (`spans/nervaluate/…`) and per type."""
        cols = ("correct", "incorrect", "partial", "missed", "spurious", "possible", "actual", *_RATIOS)
        rows = []
        for m in models:
            for schema, d in scored.result.models[m].nervaluate.items():
                rows.append({"model": m, "schema": schema, "type": "(all)", **{k: d[k] for k in cols}})
                rows += [{"model": m, "schema": schema, "type": t, **{k: x[k] for k in cols}} for t, x in d["per_type"].items()]
        cfg = scored.result.config
        return Section(title=f"SemEval-2013 schemas (nervaluate; min overlap {cfg.min_overlap:g}% of the gold span)",
                       table=pd.DataFrame(rows, columns=["model", "schema", "type", *cols]))

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        r = scored.result
        doc = scored.doc
        cfg = r.config
        out = [
            Section(title="Ranking (exact micro F1, then precision, recall, tag wins)", table=self.ranking_table(scored, models)),
            Section(title="Matching", text=(
                f"exact: same start, end and tag. relaxed@t: same tag, overlapping, {cfg.iou_weight:g}·IoU + {cfg.text_weight:g}·TextSim ≥ t "
                "(TextSim = rapidfuzz fuzz.ratio / 100 of the span texts). Both one-to-one by optimal assignment. "
                f"Units: {'characters' if r.unit == 'char' else 'tokens'}; {r.n_documents} documents, {r.n_gold} gold spans."
            )),
        ]
        if len(models) > 1 and doc.get("comparisons"):
            out.append(adjacent_ranks_section(doc["comparisons"], "exact micro F1"))
        if len(models) > 1 and r.tag_winners:
            out.append(Section(title="Tag winners (exact F1)", table=winners_table(r.tag_winners, "tag", best=None, separator=", ")))
        table = self.item_table(scored, None)
        out.append(Section(title="Per-tag metrics", table=table[table["model"].isin(list(models))].reset_index(drop=True)))
        out.append(Section(title="Error breakdown (relative to exact matching)", table=pd.DataFrame(
            [{"model": m, **r.models[m].errors.counts} for m in models])))
        out.append(self._schemas_section(scored, models))
        conf = [{"model": m, **c} for m in models for c in r.models[m].errors.confusions]
        if conf:
            out.append(Section(title="Tag confusions (type and boundary+type errors)", table=pd.DataFrame(conf)))
        ex = []
        for m in models:
            for kind, items in r.models[m].errors.examples.items():
                for e in items:
                    g, p = e.get("gold"), e.get("pred")
                    ex.append({"model": m, "kind": kind, "document": e["doc"],
                               "gold": None if g is None else f"[{g['start']}, {g['end']}) {g['tag']} {g['text']!r}",
                               "predicted": None if p is None else f"[{p['start']}, {p['end']}) {p['tag']} {p['text']!r}"})
        if ex:
            out.append(Section(title=f"Error examples (up to {cfg.max_examples} per kind)", table=pd.DataFrame(ex)))
        curve = self.curve_table(scored, models)
        if len(curve):
            wide = curve.pivot(index="threshold", columns="model", values="f1").reindex(columns=list(models)).reset_index()
            wide.columns = ["threshold", *(f"F1 {m}" for m in models)]
            out.append(Section(title="Micro F1 vs relaxed threshold", table=wide))
        return out + closing_sections(doc.get("warnings") or [], doc["config"])


ADAPTER = SpansAdapter()
