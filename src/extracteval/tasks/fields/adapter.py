"""MLflow adapter of the `fields` task: metrics, tables, figures, report sections."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from extracteval.core.jsonparse import loads_fast
from extracteval.errors import InputError
from extracteval.tasks.fields.records import _COUNT_KEYS, records_frame_of  # noqa: F401 - records_frame_of is this module's API too
from extracteval.io import parquet_rows
from extracteval.io.cells import json_list_value, plain, record_object, status_text
from extracteval.io.parquet_rows import row_group_ids
from extracteval.mlflow.adapter_parts import (adjacent_ranks_section, closing_sections, comparison_metrics, frame_ids, is_winner,
                                              parent_head, rank_metrics, winner_kind_metrics, winners_table, rescore_options, build_config)
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.predictions_file import LoggedPredictions, write_predictions_parquet
from extracteval.tasks.fields.inputs import frame_to_predictions
from extracteval.tasks.fields.metrics import METRICS
from extracteval.mlflow.adapters import Scored, Section, run_params, shared_config_keys, strategies_param

if TYPE_CHECKING:  # pragma: no cover
    from extracteval.mlflow.early import EarlyWork

__all__ = ["ADAPTER", "FieldsAdapter"]

_RATIO_KEYS = ("precision", "recall", "f1", "accuracy")


def read_record(value: Any, *, what: str, record: str, strict: bool) -> tuple[dict[str, Any] | None, str, str | None]:
    """A record's cell → (field values, status, problem): the command line's reading of a row.

    The cell is an object of field values: a mapping, or its JSON text (a model output may wrap
    it in a ```json fence or prose). Inside, a text value holding a JSON list is a multi-valued
    cell (as the CSV reader reads it), NumPy values are plain values, and a `status` key is the
    record's status (`ok`, `pending` or `error`), not a field, as a `status` column is in a file.
    The truth must parse (strict: `InputError` naming the record) and has no status. A model
    output that cannot be read is data: (None, "", why), every field counted as not predicted;
    an empty cell is no output, (None, "", None), as a record missing from a predictions file."""
    obj, problem = record_object(value)
    if obj is None and problem == "no output":
        if strict:
            raise InputError(f"{what}: record {record!r}: the ground truth is empty; expected an object of field values.")
        return None, "", None
    if not isinstance(obj, dict):
        found = f"invalid JSON ({problem})" if obj is None else f"a JSON {type(obj).__name__}" if isinstance(value, (str, bytes)) else type(value).__name__
        if strict:
            raise InputError(f"{what}: record {record!r}: expected an object (dict or JSON string) of field values, but found {found}.")
        return None, "", f"not an object of field values ({found})"
    status = ""
    if "status" in obj:
        if strict:
            raise InputError(f"{what}: record {record!r}: the ground truth must not have a `status` key; status belongs to predictions.")
        status = status_text(obj.pop("status"))
    return {str(k): json_list_value(plain(v)) for k, v in obj.items()}, status, None


def _record_fields(value: Any, *, what: str, record: str, strict: bool) -> tuple[dict[str, Any] | None, str, str | None]:
    """`read_record` with a fast path for the common cells — a dict, or the text of a JSON
    object — whose field values are left as parsed: the frame built from the records is made
    plain column by column (`io.memory.reader_columns`: NumPy values, JSON-list text), which is
    what `read_record` does value by value. Any other cell takes `read_record` itself."""
    obj: Any = None
    if type(value) is str:
        try:
            obj = loads_fast(value)
        except (ValueError, RecursionError):
            obj = None
    elif type(value) is dict:
        obj = value if all(type(k) is str for k in value) else {str(k): v for k, v in value.items()}
        obj = dict(obj)  # its `status` is taken out below; the caller's dict stays as it is
    if type(obj) is not dict:
        return read_record(value, what=what, record=record, strict=strict)
    status = ""
    if "status" in obj:
        if strict:
            raise InputError(f"{what}: record {record!r}: the ground truth must not have a `status` key; status belongs to predictions.")
        status = status_text(obj.pop("status"))
    return obj, status, None


class _Columns:
    """Records (one dict of field values each) gathered straight into one column per field, so
    that no record's dict outlives its row: the memory held is the columns' cells, as when a file
    is read column by column. Columns come in the order their fields first appear, a field a
    record lacks is None there, and the values are made plain column by column at the end
    (`io.memory.reader_columns`: NumPy values, JSON-list text, missing values) — what
    `read_record` does value by value. Equal texts are kept once (a field holds few distinct
    values: currencies, dates, names), as a file's reader keeps them."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.columns: dict[str, list[Any]] = {}
        self.ids: list[str] = []
        self.texts: dict[str, str] = {}

    def add(self, record: str, values: Mapping[str, Any] | None) -> None:
        row = len(self.ids)
        self.ids.append(record)
        if not values:
            return
        columns, texts = self.columns, self.texts
        for name, value in values.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = [None] * self.capacity
            column[row] = texts.setdefault(value, value) if type(value) is str else value

    def frame(self) -> pd.DataFrame:
        """One plain object column per field, indexed by id."""
        from extracteval.io.memory import reader_columns

        n = len(self.ids)
        index = pd.Index(self.ids, name="id", dtype=object)
        cells = {}
        for name in list(self.columns):
            column = self.columns.pop(name)  # each column freed once it is a frame's
            cells[name] = np.fromiter(column[:n] if n < len(column) else column, dtype=object, count=n)
            del column
        if not cells:
            return pd.DataFrame(index=index)
        frame = reader_columns(pd.DataFrame(cells, dtype=object, copy=False))
        frame.index = index
        return frame


# the largest number of pattern codes (all fields together) counted at once by `_field_patterns`
# (8 bytes each); fields with larger counts per cell take the per-field path
_MAX_PATTERN_CODES = 1 << 20


def _cluster_column(scored: Scored) -> str | None:
    """The record-metadata column the evaluation's intervals resample by (`--cluster-by`), or None."""
    from extracteval.mlflow.slicing import SLICE_RECORDS, SLICE_REPORT

    report, meta = scored.cache.get(SLICE_REPORT), scored.cache.get(SLICE_RECORDS)
    options = getattr(report, "options", None)
    column = getattr(options, "cluster_by", None)
    return column if column and meta is not None and column in meta.columns and getattr(options, "resamples", 0) else None


def _clustered_ledger(scored: Scored, ids: Sequence[Any], ledger: np.ndarray) -> np.ndarray | None:
    """With `--cluster-by`, a model's per-record ledger (records `ids`, fields, 5) summed per cluster
    (natural order of the labels), so that the per-field intervals resample whole clusters as every
    other interval of the evaluation does; None without clusters."""
    from extracteval.core.bootstrap import cluster_sums
    from extracteval.core.slices import cluster_labels
    from extracteval.mlflow.slicing import SLICE_RECORDS

    column = _cluster_column(scored)
    if column is None:
        return None
    ids = list(ids)
    labels = cluster_labels(scored.cache[SLICE_RECORDS][column].reindex([str(i) for i in ids]).tolist(), ids)
    n, f = ledger.shape[0], ledger.shape[1]
    return cluster_sums(ledger.reshape(n, f * 5), labels, natural=True).reshape(-1, f, 5)


def _field_f1_intervals(ledger: np.ndarray, *, resamples: int, confidence: float, seed: int, zero_division: float) -> np.ndarray:
    """(fields, 2) percentile bootstrap interval of each field's F1, resampling records.

    A field's F1 depends on the records only through their (tp, fp, fn, tn) rows, and a field
    has few distinct rows (a single-valued cell is TP, FP, FN, FP+FN or TN). Resampling n records
    with replacement is then exactly a multinomial draw of n over the distinct rows with their
    observed frequencies, so each resample costs O(distinct rows) instead of O(records).

    ledger: (records, fields, 5) tp, fp, fn, tn, excluded (excluded records count nothing).
    """
    n, f = ledger.shape[0], ledger.shape[1]
    patterns = _field_patterns(ledger)
    if patterns is not None:
        # every field's distinct rows and their frequencies, counted in one pass over the ledger:
        # the same rows, in the same order, as `_draw_intervals` finds from the records, so the
        # same draws and intervals
        fields: Iterable[tuple[np.ndarray, np.ndarray | None]] = patterns
    else:
        # one field's rows at a time (all fields at once as int64 would be records × fields × 32 bytes)
        fields = ((ledger[:, j, :4].astype(np.int64), None) for j in range(f))
    return _draw_intervals(fields, f, n, resamples=resamples, confidence=confidence, seed=seed, zero_division=zero_division)


def _field_patterns(ledger: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Per field, its distinct (tp, fp, fn, tn) rows in increasing pattern-code order and how many
    records have each; None when the counts are too large for one table of codes.

    The code of a row is `_draw_intervals`' (((tp·b + fp)·b + fn)·b + tn with b = the field's
    largest count + 1), so a field has at most b⁴ codes: all fields' codes, each field's offset
    past the previous ones, are counted with one `bincount` per block of records. Reading the
    ledger field by field instead gathers rows 4 KB apart (200 fields): at 100k × 200 that and
    400 sorts of 100k codes took ≈ 2.3 s for two models, this ≈ 0.3 s."""
    n, f = ledger.shape[0], ledger.shape[1]
    if n == 0 or f == 0:
        return None
    # per field, its largest count + 1 (the max over rows of a (records, fields × 5) view reads
    # the ledger in order; over the strided [:, :, :4] view it took 20 times longer)
    base = ledger.reshape(n, -1).max(axis=0).reshape(f, -1)[:, :4].max(axis=1).astype(np.int64) + 1
    if np.any(base > 1 << 10):  # b⁴ would not fit the table
        return None
    size = base**4
    total = int(size.sum())
    if total > _MAX_PATTERN_CODES:
        return None
    offset = np.concatenate([[0], np.cumsum(size)[:-1]])
    # codes < total ≤ 2²⁰: int32 arithmetic on the int32 ledger, no int64 copy of it
    base32, offset32 = base.astype(np.int32), offset.astype(np.int32)
    freq = np.zeros(total, dtype=np.int64)
    step = max(1, (1 << 18) // f)  # ≈ 1 MB of codes per block: the temporaries stay in cache
    for s in range(0, n, step):
        b = ledger[s : s + step]
        codes = ((b[:, :, 0] * base32 + b[:, :, 1]) * base32 + b[:, :, 2]) * base32 + b[:, :, 3] + offset32
        freq += np.bincount(codes.ravel(), minlength=total)
    out = []
    for j in range(f):
        fj = freq[offset[j] : offset[j] + size[j]]
        code = np.flatnonzero(fj)
        bj = int(base[j])
        rows = np.stack([code // bj**3, code // bj**2 % bj, code // bj % bj, code % bj], axis=1).astype(np.int64)
        out.append((rows, fj[code]))
    return out


def field_f1_intervals_from_patterns(
    patterns: np.ndarray, freq: np.ndarray, model_index: int, n_fields: int, *, resamples: int, confidence: float, seed: int,
    zero_division: float,
) -> np.ndarray:
    """`_field_f1_intervals` of one model from a merged ledger's per-field patterns (distinct
    (model, field, tp, fp, fn, tn) rows and how many records have each, as the chunked and
    Spark engines keep them: `FieldsLedger.field_patterns` / `field_freq`): the same distinct
    rows and frequencies per field, so the same multinomial draws and the same intervals,
    without the per-record counts."""
    patterns = np.asarray(patterns, dtype=np.int64)
    freq = np.asarray(freq, dtype=np.int64)
    mine = patterns[:, 0] == model_index
    n = int(freq[mine & (patterns[:, 1] == 0)].sum()) if n_fields else 0
    fields = ((patterns[sel, 2:6], freq[sel]) for sel in (mine & (patterns[:, 1] == j) for j in range(n_fields)))
    return _draw_intervals(fields, n_fields, n, resamples=resamples, confidence=confidence, seed=seed, zero_division=zero_division)


def _draw_intervals(
    fields: Iterable[tuple[np.ndarray, np.ndarray | None]], n_fields: int, n: int, *, resamples: int, confidence: float, seed: int, zero_division: float
) -> np.ndarray:
    """fields: per field, (rows, weights): count rows (tp, fp, fn, tn) and how many records have
    each (None: one record per row)."""
    from extracteval.core.counts import ratios

    out = np.full((n_fields, 2), np.nan)
    if n == 0 or resamples <= 0:
        return out
    rng = np.random.default_rng(seed)
    alpha = (1.0 - confidence) / 2.0
    for j, (rows, weights) in enumerate(fields):
        base = int(rows.max()) + 1 if rows.size else 1
        codes = ((rows[:, 0] * base + rows[:, 1]) * base + rows[:, 2]) * base + rows[:, 3]  # one integer per row pattern
        if weights is None:
            _, first, freq = np.unique(codes, return_index=True, return_counts=True)
        else:
            _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
            freq = np.zeros(len(first), dtype=np.int64)
            np.add.at(freq, inverse.ravel(), weights)
        patterns = rows[first]
        draws = rng.multinomial(n, freq / n, size=resamples)  # (resamples, patterns)
        c = draws @ patterns  # (resamples, 4)
        f1 = ratios(c[:, 0], c[:, 1], c[:, 2], c[:, 3], zero_division=zero_division)["f1"]
        out[j] = np.percentile(f1, [100 * alpha, 100 * (1 - alpha)])
    return out


def _records_schema(rec: Any, model: str) -> Any:
    """The Arrow schema (with its pandas metadata) that `records_frame_of(rec, [model]).to_parquet`
    writes, taken from a zero-row frame of the same categories: the direct writer below must give
    a file that pandas and pyarrow read back exactly as before."""
    import pyarrow as pa

    z = np.zeros(0, dtype=np.int32)
    empty = pd.DataFrame({
        "model": pd.Categorical.from_codes(z, categories=pd.Index([model], dtype=object)),
        "record_id": pd.Categorical.from_codes(z, categories=pd.Index(rec.record_ids, dtype=object)),
        "field": pd.Categorical.from_codes(z, categories=pd.Index(rec.fields, dtype=object)),
        **{k: np.zeros(0, dtype=rec.counts[model].dtype) for k in _COUNT_KEYS},
    })
    return pa.Schema.from_pandas(empty, preserve_index=False)


def _count_columns(counts: np.ndarray) -> np.ndarray:
    """(rows, 5) → (5, rows), contiguous per column. Transposed in blocks that fit the CPU cache:
    five strided gathers over the whole ledger each read all of it."""
    out = np.empty((counts.shape[1], counts.shape[0]), dtype=counts.dtype)
    step = 1 << 16
    for s in range(0, counts.shape[0], step):
        out[:, s : s + step] = counts[s : s + step].T
    return out


_ids_lock = threading.Lock()


def write_records_parquet(rec: Any, model: str, path: Any, *, cache: dict[Any, Any] | None = None) -> None:
    """`records_frame_of(rec, [model]).to_parquet(path, index=False)` without the pandas frame:
    the same schema, pandas metadata, rows and row groups, built by Arrow from the integer ledger.

    For 100k records × 200 fields (20M rows per model) the frame and its conversion took ≈ 6 s
    per model. Here the id columns are dictionary arrays over codes, built once per ledger and
    shared between models (and threads) through `cache`, and the counts are copied out one row
    group at a time (≈ 20 MB, not the 400 MB of the whole model). Column statistics (min/max)
    are not written: nothing reads them, and on 20M rows of dictionary-encoded ids they cost
    ≈ 0.4 s per file. Thread-safe: `write_bundle` writes the models' files beside its other work."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = {} if cache is None else cache
    schema = _records_schema(rec, model)
    n, f = len(rec.record_ids), len(rec.fields)
    rid_t, fld_t = schema.field("record_id").type, schema.field("field").type
    key = ("records_ids", id(rec))
    with _ids_lock:
        if key not in cache:
            fld_codes = np.broadcast_to(np.arange(f, dtype=fld_t.index_type.to_pandas_dtype()), (n, f)).reshape(-1)
            cache[key] = (pa.array(rec.record_ids, type=rid_t.value_type),
                          pa.DictionaryArray.from_arrays(fld_codes, pa.array(rec.fields, type=fld_t.value_type)))
        ids, fld = cache[key]
    mdl_t = schema.field("model").type
    mdl = pa.DictionaryArray.from_arrays(np.zeros(min(n * f, parquet_rows.ROW_GROUP), dtype=mdl_t.index_type.to_pandas_dtype()), pa.array([model], type=mdl_t.value_type))
    flat = rec.counts[model].reshape(n * f, len(_COUNT_KEYS))
    with pq.ParquetWriter(path, schema, write_statistics=False) as writer:
        for s in range(0, n * f, parquet_rows.ROW_GROUP) if n * f else (0,):
            k = min(parquet_rows.ROW_GROUP, n * f - s)
            cols = _count_columns(flat[s : s + k])
            rid = row_group_ids(ids, s, s + k, f, rid_t.index_type.to_pandas_dtype())
            writer.write_table(
                pa.Table.from_arrays([mdl.slice(0, k), rid, fld.slice(s, k), *(cols[i] for i in range(len(_COUNT_KEYS)))], schema=schema),
                row_group_size=parquet_rows.ROW_GROUP,
            )


def _start_early(early: "EarlyWork", rec: Any, truth: pd.DataFrame, preds: Mapping[str, Any], codes: Mapping[str | None, Any]) -> None:
    """The background jobs of `score_args(early=…)`, given the final per-record counts: the truth
    digest (from the scoring's codes of the truth columns) and each model's records.parquet and
    predictions.parquet (the files `write_records` and `write_predictions` would write)."""
    from extracteval.mlflow.bundle import truth_digest

    ids: dict[Any, Any] = {}  # the id arrays, built once and shared by the models' records writers

    def records(model: str) -> Callable[[Any], bool]:
        return lambda path: write_records_parquet(rec, model, path, cache=ids) or True

    def predictions(model: str) -> Callable[[Any], bool]:
        return lambda path: write_predictions_parquet(preds[model], path, codes.get(model)) or True

    early.value("truth_digest", lambda: truth_digest(truth, known=codes.get(None)))
    for m in rec.counts:
        early.file(m, "records.parquet", records(m))
        if m in preds:
            early.file(m, "predictions.parquet", predictions(m))


class FieldsAdapter:
    task = "fields"
    record_is_value = False
    starts_early = True  # `score_args(args, early=…)`: see mlflow/early.py
    model_type = "extraction-fields"
    about = "document fields: one value or a set of values per field; per-field TP/FP/FN/TN, P/R/F1, winners, intervals"  # what the task scores (`extracteval tasks`)
    item_table_name = "field_metrics"  # artifacts extracteval/field_metrics.csv and field_metrics_table.json
    # overall = macro over fields with a valid classification; micro = from the summed counts
    interval_metrics = METRICS

    def record_table(self, scored: Scored, model: str, *, sizes: bool = False) -> Any:
        """From the in-memory ledger (`tasks.fields.records.record_count_table`)."""
        from extracteval.tasks.fields.records import record_count_table

        rec = scored.result.records
        return (None, None) if rec is None else record_count_table(rec, model, sizes=sizes)

    def record_sizes(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: its non-empty truth fields (tp + fn over the fields)."""
        from extracteval.mlflow.intervals import record_sizes_of

        return record_sizes_of(path, ("tp", "fn"), "non-empty truth fields")

    def record_counts(self, path: Any, params: Mapping[str, str]) -> Any:
        """Per record: tp, fp, fn, tn of every field (columns (field, count)), from the
        per-record artifact's dictionary-encoded rows (read without a pandas frame)."""
        from extracteval.core.run_ranking import COUNT_COLUMNS
        from extracteval.core.record_counts import RecordCountTable, column
        from extracteval.mlflow.tracking_leaderboard import _read_record_counts

        rc = _read_record_counts(Path(path))
        if rc is None:
            return None
        width = 4 * len(rc.items)
        flat = np.zeros(len(rc.ids) * width, dtype=np.int64)
        at = rc.id_codes.astype(np.int64) * width + rc.item_codes.astype(np.int64) * 4
        for k in range(4):
            np.add.at(flat, at + k, rc.counts[:, k])
        present = np.bincount(rc.id_codes, minlength=len(rc.ids)) > 0
        return RecordCountTable(record_ids=rc.ids[present], columns=tuple(column(i, k) for i in rc.items for k in COUNT_COLUMNS),
                                counts=flat.reshape(len(rc.ids), width)[present])

    def count_metric(self, metric: str, columns: Sequence[str], params: Mapping[str, str]) -> Any:
        from extracteval.mlflow.intervals import zero_division_param
        from extracteval.tasks.fields.metrics import CountMetrics

        if metric not in self.interval_metrics:
            return None
        return CountMetrics.of(tuple(columns), zero_division_param(params)).metric(metric)
    config_keys: Mapping[str, str] = {
        "strategies": "per-field strategy: mapping {field: EXACT|FUZZY|IGNORE} or a JSON/YAML file path",
        "types": "per-field value type: mapping {field: auto|text|id}; text: text rules only, id: exactly as written (auto)",
        "fuzzy_threshold": "FUZZY match threshold in [0, 1] (0.85)",
        "bootstrap": "bootstrap resamples for intervals; 0 = off (1000)",
        "confidence": "interval coverage (0.95)",
        "seed": "bootstrap seed (0)",
        "fields": "score only these fields (list)",
        "min_records": "warn below this many valid records (30)",
        "status_column": "column holding each record's status: ok, pending or error; pending and error are excluded (default: `status` when present)",
        **shared_config_keys("default_strategy", "fuzzy_scorer", "null_tokens", "dayfirst", "zero_division"),
    }

    # ---- scoring -------------------------------------------------------------------------------

    def score_args(self, args: argparse.Namespace, *, early: "EarlyWork | None" = None) -> Scored:
        """Score the CLI's inputs. `early`: start writing the per-record and predictions Parquet
        files and digesting the truth there as soon as the per-record counts are final, while
        the bootstrap still runs (see mlflow/early.py); `write_bundle` picks them up."""
        from extracteval.tasks.fields.options import build_config, chosen_fields, load_inputs

        truth, preds, truth_source = load_inputs(args)
        return self._score_loaded(truth, preds, truth_source, build_config(args), chosen_fields(args), early=early)

    def score_inputs(self, truth: Any, predictions: Sequence[Any], config: Mapping[str, Any], *, id_column: str = "id") -> Scored:
        """The truth and each model's predictions (`NAME=FILE` specs, or (name, table held in
        memory) pairs) read by the command line's reader, scored with `config` (evaluator_config
        keys): the Python API's door."""
        from extracteval.tasks.fields.inputs import load_fields_inputs
        from extracteval.tasks.fields.options import chosen_fields

        truth_frame, preds, truth_source = load_fields_inputs(truth, predictions, id_column=id_column)
        return self._score_loaded(truth_frame, preds, truth_source, self.build_config(config), chosen_fields(config))

    def _score_loaded(self, truth: Any, preds: Sequence[Any], truth_source: str, config: Any, fields: list[str] | None, *,
                      early: "EarlyWork | None" = None) -> Scored:
        from extracteval.tasks.fields.semantics import score_fields

        codes: dict[str | None, dict[str, Any]] = {}
        by_name = {p.name: p for p in preds}
        on_records = None if early is None else (lambda rec: _start_early(early, rec, truth, by_name, codes))
        result = score_fields(truth, preds, config=config, fields=fields, truth_source=truth_source, keep_codes=codes, on_records=on_records)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=truth, truth_source=truth_source, config=doc["config"])
        scored.cache["predictions"] = by_name  # logged for `extracteval rescore`
        scored.cache["prediction_codes"] = codes  # their columns as the scoring factorised them
        if early is not None:
            early.attach(scored.cache)
        return scored

    # ---- engines: `score fields --chunk-size/--workers`, `--engine spark` and the streamed
    # `evaluate` (mlflow/stream.py)

    def chunk_job(self, args: argparse.Namespace, *, chunk_size: int) -> Any:
        """`evaluate fields --chunk-size`'s job: the files as `score fields --chunk-size` reads
        them, the chunks scored by `EvaluateFieldsTask` (which keeps what `evaluate` logs of each:
        predictions in each file's column order)."""
        from dataclasses import replace

        from extracteval.io.chunks import table_columns
        from extracteval.tasks.fields.chunked import EvaluateFieldsTask
        from extracteval.tasks.fields.chunks import args_chunk_job

        job = args_chunk_job(args, chunk_size=chunk_size)
        headers = {name: tuple(c for c in table_columns(src, delimiter=args.delimiter) if c not in (args.id_column, "status"))
                   for name, src in job.inputs["predictions"].items()}
        return replace(job, task=EvaluateFieldsTask(job.task.plan, headers=headers))

    def spark_job(self, args: argparse.Namespace, spark: Any) -> Any:
        """`evaluate fields --engine spark`'s job: every column carried, the id-ordered pass
        scored by `EvaluateFieldsTask`."""
        from extracteval.tasks.fields.spark import args_spark_job

        return args_spark_job(args, spark, evaluate=True)

    def chunk_outputs(self, task: Any, chunk: Any, score: Any) -> tuple[pd.DataFrame, dict[str, dict[str, pd.DataFrame]]]:
        """The chunk's truth rows and, per model, its per-record counts and predictions as scored
        (by `EvaluateFieldsTask`, the evaluate jobs' chunk task)."""
        files: dict[str, dict[str, pd.DataFrame]] = {"records": {}, "predictions": {}}
        for key, frame in score.records.items():
            kind, model = key.split("/", 1)
            files[kind][model] = frame
        return score.side, files

    def scored_from_chunks(self, result: Any, streamed: Any) -> Scored:
        from extracteval.mlflow.stream import stream_scored

        return stream_scored(self.task, result, result.to_dict(), streamed)

    def score_experiment(self, folder: Any, spec: Mapping[str, Any]) -> Scored:
        """Score one `experiments/<name>/experiment.yaml` (the demo)."""
        ns = argparse.Namespace(
            truth=str(folder / spec["truth"]),
            predictions=[f"{name}={folder / path}" for name, path in spec["predictions"].items()],
            strategies=str(folder / spec["strategies"]) if spec.get("strategies") else None,
            id_column=spec.get("id_column", "id"), delimiter=None, keys=None, fields=None, fuzzy_threshold=None,
            null_tokens=None, dayfirst=bool(spec.get("dayfirst", False)), zero_division=spec.get("zero_division"), no_ci=False, resamples=None, seed=None,
        )
        return self.score_args(ns)

    # the task's configuration from evaluator_config options: its options.build_config, as the command line
    build_config = build_config

    def score_frame(
        self, *, ids: Sequence[str], targets: Sequence[Any], predictions: Mapping[str, Sequence[Any]], config: Mapping[str, Any], truth_source: str,
        status: Mapping[str, Sequence[Any]] | None = None,
    ) -> Scored:
        """One target cell and one prediction cell per record, each read by `read_record`;
        `status`: per model, one status per record (the evaluator's `status_column`), which
        overrides a `status` key inside the prediction."""
        from extracteval.tasks.fields.semantics import ModelPredictions, score_fields

        cfg = self.build_config(config)
        ids = frame_ids(ids, targets, predictions, truth_source, status=status)
        truth_columns = _Columns(len(ids))
        for r, v in zip(ids, targets):
            truth_columns.add(r, _record_fields(v, what=truth_source, record=r, strict=True)[0])
        truth = truth_columns.frame()
        del truth_columns
        preds = []
        invalid: dict[str, list[str]] = {}
        for name, cells in predictions.items():
            given = (status or {}).get(name)
            columns, statuses = _Columns(len(ids)), []
            for i, (r, v) in enumerate(zip(ids, cells)):
                parsed, st, problem = _record_fields(v, what=f"predictions of model {name!r}", record=r, strict=False)
                g = None if given is None else given[i]
                if isinstance(g, Mapping):  # per field (the long layout's per-cell status)
                    st = {str(k): status_text(v) or "ok" for k, v in g.items()}
                elif g is not None and status_text(g):
                    st = status_text(g)
                if problem is not None:
                    invalid.setdefault(name, []).append(r)
                    parsed = {}
                elif parsed is None and not st:
                    continue  # no output: the record has no prediction, as when a file lacks it
                columns.add(r, parsed)
                statuses.append(st)
            frame = columns.frame()
            del columns
            index = frame.index
            st_given: pd.Series | pd.DataFrame | None = pd.Series(statuses, index=index, dtype=object) if any(statuses) else None
            if any(isinstance(x, Mapping) for x in statuses):
                st_given = pd.DataFrame.from_records([x if isinstance(x, Mapping) else dict.fromkeys(frame.columns, x or "ok") for x in statuses],
                                                     index=index).reindex(columns=frame.columns).fillna("ok")
            preds.append(ModelPredictions(name=name, values=frame, status=st_given, source=f"predictions of model {name!r}"))
        fields = config.get("fields")
        result = score_fields(truth, preds, config=cfg, fields=list(fields) if fields else None, truth_source=truth_source)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        doc["invalid_outputs"] = {m: {"count": len(v), "record_ids": v[:20]} for m, v in sorted(invalid.items())}
        if invalid:
            doc["warnings"] = list(doc["warnings"]) + [
                f"model {m!r}: {len(v)} output(s) are not a JSON object of field values and count as empty predictions"
                for m, v in sorted(invalid.items())
            ]
        scored = Scored(task=self.task, result=result, doc=doc, models=tuple(result.ranking), truth=truth, truth_source=truth_source, config=doc["config"])
        scored.cache["predictions"] = {p.name: p for p in preds}  # logged for `extracteval rescore`
        return scored

    # ---- metrics -------------------------------------------------------------------------------

    def item_names(self, scored: Scored) -> Sequence[str]:
        return list(scored.result.fields)

    def _intervals(self, scored: Scored, model: str) -> np.ndarray:
        r = scored.result
        key = ("f1_ci", model, _cluster_column(scored))
        if key in scored.cache:
            return scored.cache[key]
        clustered = None
        if key[2]:
            clustered = _clustered_ledger(scored, r.records.record_ids, r.records.counts[model]) if r.records is not None \
                else self._clustered_streamed(scored, model)
        cfg = r.config
        kw = {"resamples": int(cfg.get("bootstrap") or 0), "confidence": float(cfg["confidence"]), "seed": int(cfg["seed"]),
              "zero_division": float(cfg["zero_division"])}
        if clustered is not None and cfg.get("bootstrap"):  # --cluster-by: whole clusters resampled
            ci = _field_f1_intervals(clustered, **kw)
        elif r.field_patterns is not None and cfg.get("bootstrap"):
            # counted while scoring: the same distinct rows and frequencies per field as the
            # per-record counts give, so the same intervals without reading those again
            ci = field_f1_intervals_from_patterns(*r.field_patterns, sorted(r.models).index(model), len(r.fields), **kw)
        elif r.records is None or not cfg.get("bootstrap"):
            return np.full((len(r.fields), 2), np.nan)
        else:
            ci = _field_f1_intervals(r.records.counts[model], **kw)
        scored.cache[key] = ci
        return ci

    def _clustered_streamed(self, scored: Scored, model: str) -> np.ndarray | None:
        """`_clustered_ledger` of a streamed evaluation (no ledger in memory): the model's per-record
        counts read back from the rows the engine streamed (`records.parquet`) as a ledger, each
        field's columns in the result's field order; None without those rows."""
        from extracteval.core.record_counts import column
        from extracteval.core.run_ranking import COUNT_COLUMNS

        path = (scored.cache.get("streamed_files") or {}).get((model, "records.parquet"))
        table = self.record_counts(path, self.params(scored)) if path is not None and Path(path).is_file() else None
        if table is None:
            return None
        fields = list(scored.result.fields)
        at = {c: j for j, c in enumerate(table.columns)}
        n = len(table.record_ids)
        rows = np.zeros((n, len(fields), 5), dtype=np.int64)
        for j, name in enumerate(fields):
            for k, count in enumerate(COUNT_COLUMNS):
                c = at.get(column(name, count))
                if c is not None:
                    rows[:, j, k] = table.counts[:, c]
        return _clustered_ledger(scored, table.record_ids, rows)

    def metrics(self, scored: Scored, model: str, keys: KeyMap) -> dict[str, float]:
        m = scored.result.models[model]
        out: dict[str, float] = {}
        for k in _RATIO_KEYS:
            out[f"overall/{k}"] = float(m.overall[k])
            out[f"micro/{k}"] = float(m.micro[k])
        t = m.totals
        for k in _COUNT_KEYS:
            out[f"totals/{k}"] = float(getattr(t, k))
        if m.overall_f1_ci is not None:
            # intervals are of F1; `…/f1/ci_low` would make `…/f1` both a metric and a folder in
            # MLflow's file store, so the bounds sit beside the metric
            out["overall/ci_low"] = float(m.overall_f1_ci.low)
            out["overall/ci_high"] = float(m.overall_f1_ci.high)
        out.update(rank_metrics(rank=m.rank, wins=m.field_wins, items_scored=m.fields_scored, items="fields"))
        ci = self._intervals(scored, model)
        for j, (fname, fm) in enumerate(m.fields.items()):
            c = fm.counts
            for k in _COUNT_KEYS:
                out[keys.key("field", fname, k)] = float(getattr(c, k))
            for k in _RATIO_KEYS:
                out[keys.key("field", fname, k)] = float(getattr(fm, k))
            out[keys.key("field", fname, "exact_match_rate")] = float(fm.exact_match_rate)
            if not np.isnan(ci[j, 0]) and fm.valid:
                out[keys.key("field", fname, "ci_low")] = float(ci[j, 0])
                out[keys.key("field", fname, "ci_high")] = float(ci[j, 1])
        return out

    def comparison_metrics(self, scored: Scored, keys: KeyMap) -> dict[str, float]:
        r = scored.result
        out = parent_head(keys, ranking=r.ranking, ranks={m: r.models[m].rank for m in r.ranking},
                          wins={m: r.models[m].field_wins for m in r.ranking}, items="fields", n_items=len(r.fields))
        for m in r.ranking:
            out[keys.key("ranking", m, "overall_f1")] = float(r.models[m].overall["f1"])
        out.update(winner_kind_metrics((w.kind for w in r.field_winners.values()), "field_winners"))
        out.update(comparison_metrics(r.comparisons, keys))
        return out

    # ---- tables --------------------------------------------------------------------------------

    def item_table(self, scored: Scored, model: str | None) -> pd.DataFrame:
        r = scored.result
        rows = []
        for m in (r.ranking if model is None else (model,)):
            ci = self._intervals(scored, m)
            for j, (fname, fm) in enumerate(r.models[m].fields.items()):
                d = fm.to_dict()
                d.pop("examples")
                d["flags"] = ";".join(d["flags"])
                w = r.field_winners.get(fname)
                rows.append({
                    "model": m, "field": fname, **d,
                    "f1_ci_low": None if np.isnan(ci[j, 0]) else float(ci[j, 0]),
                    "f1_ci_high": None if np.isnan(ci[j, 1]) else float(ci[j, 1]),
                    "winner": is_winner(w, m),
                })
        return pd.DataFrame(rows)

    def records_frame(self, scored: Scored, model: str | None) -> pd.DataFrame | None:
        """model, record_id, field, tp, fp, fn, tn, excluded — one row per model, record and field.

        The same table as `RecordLedger.to_frame()`, built with dictionary-encoded (categorical)
        id columns: no per-row string objects, and Parquet stores each id once."""
        rec = scored.result.records
        if rec is None:
            return None
        return records_frame_of(rec, list(rec.counts) if model is None else [model])

    def write_records(self, scored: Scored, model: str, path: Any) -> bool:
        """Write `records_frame(scored, model)` to Parquet at `path` directly from the ledger (see
        `write_records_parquet`); False when there are no per-record counts."""
        rec = scored.result.records
        if rec is None or model not in rec.counts:
            return False
        write_records_parquet(rec, model, path, cache=scored.cache)
        return True

    def write_predictions(self, scored: Scored, model: str, path: Any) -> bool:
        """Write the model's predictions as scored to Parquet at `path` (long: id, field, value as
        JSON text, status): the `extracteval/predictions.parquet` artifact that `extracteval
        rescore` scores again. False when the predictions were not kept."""
        preds = scored.cache.get("predictions", {}).get(model)
        if preds is None:
            return False
        write_predictions_parquet(preds, path, scored.cache.get("prediction_codes", {}).get(model))
        return True

    def read_predictions(self, path: Any, *, source: str) -> LoggedPredictions:
        """The long predictions file → one object of field values per record; statuses beside
        them, per record, or per field where the record's fields differ (long input files give
        each cell its own)."""
        preds = frame_to_predictions(pd.read_parquet(path), name="", source=source)
        values = preds.values
        cells = dict(zip((str(i) for i in values.index), values.to_dict(orient="records")))
        status = None
        if preds.status is not None:
            st = preds.status.reindex(index=values.index, columns=values.columns).fillna("ok")
            uniform = st.nunique(axis=1, dropna=False) <= 1
            status = {str(r): (row[0] if len(row) else "ok") if same else dict(zip(st.columns, row))
                      for r, same, row in zip(st.index, uniform, st.to_numpy(dtype=object).tolist())}
        return LoggedPredictions(cells=cells, status=status)

    # evaluator_config options from a logged run's result.json (`extracteval rescore`): written once
    rescore_options = rescore_options
    logged_keys = {"/fields": "fields"}  # the fields the run scored (a `--fields` choice too)

    def comparison_tables(self, scored: Scored) -> dict[str, pd.DataFrame]:
        """The parent run's CSV artifacts: the leaderboard and the winner of every field."""
        return {"leaderboard": self.ranking_table(scored, scored.models), "field_winners": winners_table(scored.result.field_winners, "field")}

    def ranking_table(self, scored: Scored, models: Sequence[str]) -> pd.DataFrame:
        r = scored.result
        rows = []
        for m in models:
            mr = r.models[m]
            ci = mr.overall_f1_ci
            rows.append({
                "rank": mr.rank, "model": m,
                **{k: mr.overall[k] for k in _RATIO_KEYS},
                "micro_f1": mr.micro["f1"],
                "f1_ci_low": None if ci is None else ci.low,
                "f1_ci_high": None if ci is None else ci.high,
                "tier": mr.tier, "field_wins": mr.field_wins, "wins": mr.wins_label,
            })
        return pd.DataFrame(rows)

    # ---- figures and report --------------------------------------------------------------------

    def figures(self, scored: Scored, models: Sequence[str]) -> dict[str, Any]:
        from extracteval.report.figures import confusion_heatmap, item_f1_bars

        from extracteval.mlflow.adapter_parts import worst_items

        frames = [self.item_table(scored, m) for m in models]
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        # Beyond FIGURE_ITEMS fields, the figures show the fields with the most errors (the
        # title says how many of how many): drawing a label per field for 200 fields cost
        # ~1.3 s of CPU, most of the logging overhead, for a figure no one reads row by row.
        # Every field stays in the metrics, field_metrics.csv, the MLflow table and report.html.
        table, note = worst_items(table, "field") if len(table) else (table, "")
        title = f"{scored.task}: per-field F1{note}" + (f" — {models[0]}" if len(models) == 1 else "")
        return {
            "field_f1.png": item_f1_bars(table, item="field", title=title),
            "confusion_counts.png": confusion_heatmap(table, item="field", title=f"{scored.task}: confusion counts per field{note}"),
        }

    def params(self, scored: Scored) -> dict[str, str]:
        cfg = dict(scored.config)
        norm = cfg.get("normalization", {})
        return run_params(scored, counts={"n_records": scored.result.n_records, "n_fields": len(scored.result.fields)},
                          config_keys=("default_strategy", "fuzzy_threshold", "fuzzy_scorer", "zero_division", "bootstrap", "confidence",
                                       "seed", "min_records"),
                          normalization=True, strip_currency=str(norm.get("strip_currency")), strategies=strategies_param(cfg))

    def row_rationale(self, scored: Scored, model: str) -> str:
        """One record's verdict per field (`vendor: wrong value (FP+FN)`), for per-row feedback."""
        labels = {"tp": "correct (TP)", "fp": "spurious value (FP)", "fn": "missed (FN)", "tn": "both empty (TN)", "wrong": "wrong value (FP+FN)", "excluded": "excluded"}
        parts = []
        for f, fm in scored.doc["models"][model]["fields"].items():
            kinds = [k for k in ("wrong", "tp", "fp", "fn", "tn", "excluded") if fm["examples"].get(k)]
            if kinds:
                parts.append(f"{f}: {labels[kinds[0]]}")
        return "; ".join(parts)

    def summary(self, scored: Scored) -> str:
        from extracteval.tasks.fields.report import render_fields

        return render_fields(scored.doc)

    def sections(self, scored: Scored, models: Sequence[str]) -> list[Section]:
        r = scored.result
        doc = scored.doc
        out = [Section(title="Ranking", table=self.ranking_table(scored, models))]
        if len(models) > 1 and doc.get("comparisons"):
            out.append(adjacent_ranks_section(doc["comparisons"], "overall F1"))
        if len(models) > 1:
            out.append(Section(title="Field winners", table=winners_table(r.field_winners, "field", best=None, separator=", ")))
        frames = [self.item_table(scored, m) for m in models]
        out.append(Section(title="Per-field metrics", table=pd.concat(frames, ignore_index=True) if frames else None))
        out.append(Section(title="Checks", table=pd.DataFrame(doc["checks"]), status_column="passed"))
        ex = []
        for m in models:
            for f, fm in doc["models"][m]["fields"].items():
                for kind, items in fm["examples"].items():
                    for e in items:
                        ex.append({"model": m, "field": f, "kind": kind, "correct": kind in ("tp", "tn"), "record_id": e["record_id"],
                                   "truth": e["truth"], "prediction": e["prediction"]})
        # the errors (fp, fn) first and marked; the correct examples after them
        examples = [Section(title="Examples (up to five per classification kind; errors first)", table=pd.DataFrame(ex), status_column="correct")] if ex else []
        return out + closing_sections(doc.get("warnings") or [], doc["config"], then=examples)


ADAPTER = FieldsAdapter()
