"""Slices of a scored evaluation, for every task alike, through its adapter.

Each model's per-record counts are those the run logs as `records.parquet` (handed over by the
task in memory, `record_table`, or read back by its `record_counts` from the rows a streaming
engine wrote), and each metric comes from the task's map of summed counts to metrics
(`count_metric`): the counts and maps of the intervals of `leaderboard` and `compare`, so a
slice's numbers are those of scoring its records alone, for every task.
`core.slices` does the slicing, the intervals and the rankings.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from extracteval.errors import InputError
from extracteval.io.common_options import slice_config_keys
from extracteval.io.config import SIZE  # the built-in slicing, named here too

__all__ = ["SIZE", "clustered_intervals", "slice_options", "slice_scored", "metadata_for", "record_tables", "slice_config_keys", "slicing_for",
           "attach_slices", "frame_slicing", "SLICE_REPORT", "SLICE_RECORDS"]

SLICE_REPORT = "slices"  # Scored.cache: the evaluation's `SliceReport`
SLICE_RECORDS = "slice_records"  # Scored.cache: the metadata of the scored records (record id → columns, as read)


def _edges(values: Sequence[str]) -> tuple[int | None, dict[str, tuple[float, ...]]]:
    """`--slice-bins`: N (quantile bins of every numeric column) and/or COLUMN=E1,E2,… (edges)."""
    bins: int | None = None
    edges: dict[str, tuple[float, ...]] = {}
    for v in values:
        text = str(v).strip()
        if "=" not in text:
            try:
                bins = int(text)
            except ValueError:
                raise InputError(f"--slice-bins: expected a number of bins or COLUMN=E1,E2,…, but found {text!r}.") from None
            if bins < 1:
                raise InputError(f"--slice-bins: expected at least 1 bin, but found {bins}.")
            continue
        col, _, rest = text.partition("=")
        try:
            cuts = tuple(float(x) for x in rest.split(",") if x.strip())
        except ValueError:
            raise InputError(f"--slice-bins {col.strip()}=…: expected numbers separated by commas, but found {rest!r}.") from None
        if len(cuts) < 2 or list(cuts) != sorted(set(cuts)):
            raise InputError(f"--slice-bins {col.strip()}=…: expected at least two increasing edges, but found {rest!r}.")
        edges[col.strip()] = cuts
    return bins, edges


def slice_options(args: argparse.Namespace | Mapping[str, Any]) -> Any:
    """The `SliceOptions` of the command line's (or a config mapping's) slicing options, or None
    when neither slices nor clusters were asked for (`--cluster-by` alone gives the whole
    evaluation's clustered intervals)."""
    from extracteval.core.slices import SliceOptions
    from extracteval.io.config import slicings

    get = args.get if isinstance(args, Mapping) else (lambda k, d=None: getattr(args, k, d))
    by = slicings(get("slice_by"))
    cluster = get("cluster_by") or None
    if not by and not cluster:
        return None
    bins_raw = get("slice_bins") or ()
    if isinstance(bins_raw, Mapping):
        bins, edges = None, {str(k): tuple(float(x) for x in v) for k, v in bins_raw.items()}
    else:
        bins, edges = _edges([bins_raw] if isinstance(bins_raw, (str, int)) else list(bins_raw))
    min_size = get("slice_min_size")
    kw: dict[str, Any] = {}
    for key in ("resamples", "seed", "confidence"):
        v = get(key)
        if v is not None and not isinstance(v, bool):
            kw[key] = v
    if get("no_ci") is True or get("bootstrap") == 0:  # intervals off: the slices' values and rankings, without intervals
        kw["resamples"] = 0
    if kw.get("resamples", 1000) < 0:
        raise InputError(f"--resamples: expected a number of resamples (0 or more), but found {kw['resamples']}.")
    opts = SliceOptions(by=by, bins=bins or 4, edges=edges, min_size=int(min_size) if min_size is not None else 20,
                        cluster_by=str(cluster) if cluster else None, **kw)
    if opts.min_size < 1:
        raise InputError(f"--slice-min-size: expected at least 1 record, but found {opts.min_size}.")
    return opts


def _metadata_columns(options: Any) -> list[str]:
    """The columns the options read from the metadata (the built-in `@size` is no column of it)."""
    return [c for c in options.columns if c != SIZE]


def metadata_for(args: argparse.Namespace | Mapping[str, Any], options: Any) -> Any:
    """The metadata rows (record id → the options' columns): `--metadata FILE` when given, else
    the ground truth's own columns. Through the Python API, `metadata` and the truth may be
    tables held in memory (a DataFrame, a list of dicts) as well as files."""
    from extracteval.io.metadata import frame_metadata, read_metadata

    import pandas as pd

    get = args.get if isinstance(args, Mapping) else (lambda k, d=None: getattr(args, k, d))
    columns = _metadata_columns(options)
    if not columns:  # the built-in size alone: no metadata to read
        return pd.DataFrame(index=pd.Index([], dtype=object, name="record_id"))
    id_column = str(get("metadata_id") or get("id_column") or get("id_key") or "id")
    source = get("metadata")
    option = "--metadata" if isinstance(args, argparse.Namespace) else "metadata"
    if source is None or (isinstance(source, str) and not source):
        source, option = get("truth"), ("--truth" if isinstance(args, argparse.Namespace) else "truth")
        if isinstance(source, (list, tuple)) and source and all(isinstance(p, (str, Path)) for p in source):
            if len(source) > 1:  # ground truth in several files (a task that takes --truth more than once): their records together
                return pd.concat([read_metadata(p, columns, id_column=id_column, option=option) for p in source])
            source = source[0]
        if source is None or isinstance(source, (list, tuple)):
            raise InputError("--slice-by needs record metadata: pass --metadata FILE (a table keyed by record id) — the ground truth "
                             "was not given as a file.")
    if isinstance(source, (str, Path)):
        return read_metadata(source, columns, id_column=id_column, option=option, delimiter=get("delimiter") if option.endswith("truth") else None)
    value = getattr(source, "value", source)  # a table the API already wrapped for the readers
    return frame_metadata(value, columns, id_column=id_column, name=option, option="slice_by")


def record_tables(scored: Any, *, sizes: bool = False) -> tuple[dict[str, Any], Any]:
    """Each model's per-record counts (`RecordCountTable`) of a scored evaluation: read by the
    task's reader of the per-record rows a streaming engine wrote while scoring, else handed over
    by the task from the in-memory result (`TaskAdapter.record_table`, equal to reading the rows
    its run logs). With `sizes`, also each record's size as the task counts it (the largest any
    model's rows give: a record a model skipped still has its truth), else None."""
    import pandas as pd

    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter(scored.task)
    streamed = scored.cache.get("streamed_files") or {}
    params = adapter.params(scored) if streamed else {}
    tables: dict[str, Any] = {}
    found: list[Any] = []
    for m in scored.models:
        path = streamed.get((m, "records.parquet"))
        if path is not None:
            table = adapter.record_counts(path, params) if Path(path).is_file() else None
            size = adapter.record_sizes(path, params) if sizes and table is not None else None
        else:
            table, size = adapter.record_table(scored, m, sizes=sizes)
        if table is None:
            raise InputError(f"--slice-by: the {scored.task} task keeps no per-record counts for model {m!r}, so its metrics cannot be "
                             "broken down by record.")
        tables[m] = table
        if sizes:
            if size is None:
                raise InputError(f"--slice-by {SIZE}: the {scored.task} task's per-record rows of model {m!r} do not give record sizes.")
            found.append(size)
    if not sizes:
        return tables, None
    joined = pd.concat(found, axis=1).max(axis=1)  # a record one model lacks is NaN there: the others' size
    if len(joined) and joined.notna().all():
        joined = joined.astype("int64")  # a count: `6`, not `6.0`
    joined.name = found[0].name
    return tables, joined


def slice_scored(scored: Any, options: Any, metadata: Any) -> Any:
    """The `SliceReport` of a scored evaluation (models in its ranking order)."""
    return _sliced(scored, options, metadata)[0]


def _sliced(scored: Any, options: Any, metadata: Any) -> tuple[Any, Any]:
    """(the `SliceReport`, the metadata rows of the scored records in their order)."""
    from extracteval.core.record_counts import paired_counts
    from extracteval.core.slices import slice_report
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.run_slices import count_metrics
    from extracteval.tasks import ranking_spec

    adapter = get_adapter(scored.task)
    params = adapter.params(scored)
    tables, sizes = record_tables(scored, sizes=SIZE in options.columns)
    rec, cols, arrays = paired_counts(tables)
    spec = ranking_spec(scored.task)
    metrics = count_metrics(scored.task, [spec.primary, *spec.tie_breaks, *adapter.interval_metrics], cols, params)
    if spec.primary not in metrics:
        raise InputError(f"--slice-by: the {scored.task} task's per-record counts do not determine its primary metric {spec.primary!r}.")
    at = metadata.index.get_indexer(rec)  # each scored record's metadata row, -1 where it has none
    if len(metadata.columns) and not (at >= 0).any():
        raise InputError(f"--slice-by: no record id of the metadata matches a scored record (metadata ids such as "
                         f"{', '.join(map(repr, list(metadata.index[:3])))}; scored ids such as {', '.join(map(repr, rec[:3]))}).")
    rows = metadata.reindex(rec)
    if sizes is not None:
        rows[SIZE] = sizes.reindex(rec).to_numpy(dtype=object)
    report = slice_report({m: arrays[m] for m in scored.models}, rows, metrics, spec, options, present=_present(tables, rec))
    if sizes is not None:
        report.extra["size"] = str(sizes.name)
    return report, rows


def _present(tables: Mapping[str, Any], rec: Sequence[str]) -> dict[str, Any]:
    """For each model whose table lacks some of the lined-up records `rec` (another model's extra
    predictions), which records it has rows for; models that have them all are left out."""
    import numpy as np
    import pandas as pd

    out: dict[str, Any] = {}
    index = None
    for m, t in tables.items():
        if len(t.record_ids) != len(rec):
            index = pd.Index(rec, dtype=object) if index is None else index
            out[m] = index.isin(np.asarray(t.record_ids, dtype=object).astype(str).tolist())
    return out


def clustered_intervals(doc: dict[str, Any], report: Any, task: str) -> None:
    """With `--cluster-by`, the result's own intervals become the cluster bootstrap's: `intervals`
    (each model's primary metric), `comparisons` (each adjacent pair of the ranking) and, where the
    task keeps one per model (`PRIMARY_CI` in its contract: `models/<m>/ci/<key>`), that one too,
    all taken from the slice of all records; nothing without clusters."""
    from extracteval.core.bootstrap import Interval, comparison_entry
    from extracteval.core.slices import ALL
    from extracteval.tasks import present

    o = report.options
    if not o.cluster_by or o.resamples <= 0:
        return
    rows = [r for r in report.rows if r["slice"] == ALL]
    if not rows:
        return
    if rows[0]["low"] is None:
        raise InputError(f"--cluster-by {o.cluster_by}: the records fall in {rows[0]['clusters']} cluster(s); a cluster bootstrap needs at "
                         "least two.")
    resamples = o.resamples if rows[0]["records"] else 0
    per = {r["model"]: Interval(estimate=r["estimate"], low=r["low"], high=r["high"], confidence=o.confidence, resamples=resamples) for r in rows}
    method = f"cluster bootstrap over {o.cluster_by!r} ({rows[0]['clusters']} clusters)"
    doc["intervals"] = {"metric": report.metric, "method": method, "seed": o.seed, "clusters": rows[0]["clusters"],
                        "models": {m: iv.to_dict() for m, iv in per.items()}}
    doc["comparisons"] = [comparison_entry(g["higher"], g["lower"], Interval(**g["difference"])) for g in report.gaps if g["slice"] == ALL]
    contract = present(task, "contract")
    key = getattr(contract, "PRIMARY_CI", None) if contract is not None else None
    models = doc.get("models")
    if key and isinstance(models, dict):
        for m, iv in per.items():
            if isinstance(models.get(m), dict):
                models[m]["ci"] = {**(models[m].get("ci") or {}), key: iv.to_dict()}


def slicing_for(args: argparse.Namespace | Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(SliceOptions, metadata rows) of the slicing options (`--slice-by`, `--cluster-by`, or the
    same evaluator_config / API / experiment keys), read before scoring so that a wrong column
    fails fast; None without them."""
    options = slice_options(args)
    if options is None:
        return None
    return options, metadata_for(args, options)


def attach_slices(scored: Any, slicing: tuple[Any, Any]) -> Any:
    """Slice a scored evaluation (`slice_scored`) and keep the result with it: its document gets
    `slices` (`SliceReport.to_dict()`: the `--json` document, `result.json`, the API's
    `to_dict()`), its cache the `SliceReport` and the scored records' metadata, which the runs
    log. Returns the `SliceReport`."""
    options, metadata = slicing
    report, rows = _sliced(scored, options, metadata)
    scored.doc["slices"] = report.to_dict()
    clustered_intervals(scored.doc, report, scored.task)
    scored.cache[SLICE_REPORT] = report
    scored.cache[SLICE_RECORDS] = rows
    return report


def frame_slicing(config: Mapping[str, Any], features: Any, ids: Sequence[str]) -> tuple[Any, Any] | None:
    """The slicing of `mlflow.models.evaluate(..., evaluator_config=config)`: (SliceOptions,
    metadata rows) or None. The metadata is the `metadata` key's file or DataFrame (keyed by
    `metadata_id`, else `id_column`, else `id`), else the named columns of the evaluated data
    itself (`features`: its columns other than the targets and predictions), one row per record
    of `ids`; only the targets are scored, so such a column never is."""
    from extracteval.io.metadata import frame_metadata

    options = slice_options(config)
    if options is None:
        return None
    if config.get("metadata") is not None:
        return options, metadata_for(config, options)
    return options, frame_metadata(features, _metadata_columns(options), ids=ids, name="the evaluated data", option="evaluator_config `slice_by`")
