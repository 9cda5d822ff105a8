"""Intervals of tracked runs from their per-record counts, for every task (`leaderboard`, `compare`).

Each task's adapter says how to read a model run's per-record counts from its per-record
artifact (`TaskAdapter.record_counts`) and how each metric those counts determine is computed
from their sums (`TaskAdapter.count_metric`). This module knows no task: it reads the runs'
tables, lines them up on their record ids (`core.record_counts.paired_counts`) and
resamples records with the same multiplicities for every run (`core.bootstrap.bootstrap_counts`),
recomputing the metric from each resample's summed counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extracteval.core.bootstrap import Interval

__all__ = ["read_records", "zero_division_param", "read_run_counts", "PairedIntervals", "paired_intervals", "decision_count_table",
           "decision_count_metric"]

RECORDS_ARTIFACT = "extracteval/records.parquet"


def _download(artifact_uri: str, path: str, tracking_uri: str, dst: str) -> Path | None:
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    try:
        repo = get_artifact_repository(artifact_uri, tracking_uri=tracking_uri)
        return Path(repo.download_artifacts(path, dst_path=dst))
    except Exception:  # noqa: BLE001 - an absent or unreadable artifact: the caller notes and skips
        return None


def _local_artifact(artifact_uri: str, path: str) -> Path | None:
    """The file behind a `file:` (or plain path) artifact URI; None for remote stores."""
    from urllib.parse import unquote, urlparse

    u = urlparse(artifact_uri)
    if u.scheme == "file" and u.netloc in ("", "localhost"):
        return Path(unquote(u.path)) / path
    if u.scheme == "" and artifact_uri.startswith("/"):
        return Path(artifact_uri) / path
    return None


def read_records(path: Path, columns: Sequence[str]) -> Any:
    """These columns of a per-record Parquet file as a DataFrame; None when the file lacks one
    of them or cannot be read (a run logged before the column was written)."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        if not set(columns) <= set(pf.schema_arrow.names):
            return None
        return pf.read(columns=list(columns), use_threads=False).to_pandas()
    except Exception:  # noqa: BLE001 - an unreadable artifact is treated like an absent one
        return None


def record_sizes_of(path: Path, columns: Sequence[str], name: str, *, where: tuple[str, Any] | None = None) -> Any:
    """A per-record artifact's `columns` summed per record id (over the rows where column
    `where[0]` equals `where[1]`, when given): each record's size, a Series named `name`; None
    when the artifact lacks a column."""
    import numpy as np
    import pandas as pd

    frame = read_records(path, ["record_id", *columns, *([where[0]] if where else [])])
    if frame is None:
        return None
    if where is not None:
        frame = frame[frame[where[0]] == where[1]]
    total = np.zeros(len(frame), dtype=np.int64)
    for c in columns:
        total += frame[c].fillna(0).to_numpy(dtype=np.int64)
    sizes = pd.Series(total, index=frame["record_id"].astype(str).to_numpy(dtype=object)).groupby(level=0, sort=False).sum()
    sizes.name = name
    return sizes


def zero_division_param(params: Mapping[str, str]) -> float:
    """The run's `zero_division` param: a number in [0, 1], NaN for `nan` (the labels and entities
    tasks' undefined ratios, in any case), 0.0 when absent or unreadable."""
    text = str(params.get("zero_division", 0.0)).strip()
    if text.lower() == "nan":
        return math.nan
    try:
        value = float(text)
    except (TypeError, ValueError):
        return 0.0
    return value if 0.0 <= value <= 1.0 else 0.0


def read_run_counts(task: str, artifact_uri: str, params: Mapping[str, str], tracking_uri: str) -> Any:
    """A model run's per-record counts (`RecordCountTable`), or None when the run has no
    per-record artifact or its artifact lacks the counts."""
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter(task)
    return read_run_artifact(artifact_uri, RECORDS_ARTIFACT, tracking_uri, lambda p: adapter.record_counts(p, params))


def read_run_artifact(artifact_uri: str, name: str, tracking_uri: str, read: Any) -> Any:
    """`read(path)` of a run's artifact `name`: read in place from a local artifact store, else
    downloaded to a temporary folder removed afterwards; None when the run has no such file."""
    import tempfile

    direct = _local_artifact(artifact_uri, name)
    if direct is not None:  # a local artifact store: read in place, no copy
        return read(direct) if direct.is_file() else None
    with tempfile.TemporaryDirectory(prefix="extracteval-iv-") as d:
        p = _download(artifact_uri, name, tracking_uri, d)
        return read(p) if p is not None and p.is_file() else None


@dataclass(frozen=True, kw_only=True)
class PairedIntervals:
    """Per-run intervals, intervals of pair differences, the records resampled and the columns."""

    per_run: Mapping[str, Interval]
    pairs: Mapping[tuple[str, str], Interval]
    n_records: int
    sizes: Mapping[str, int]


def paired_intervals(
    task: str,
    metric: str,
    tables: Mapping[str, Any],
    pairs: Sequence[tuple[str, str]],
    params: Mapping[str, str],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedIntervals | None:
    """Paired-bootstrap intervals of `metric` for each run of `tables` (run key → table) and of
    each pair's difference, over the record ids of any run; None when the counts do not
    determine `metric`. `params`: the runs' params (zero_division, …; one evaluation's)."""
    from extracteval.core.bootstrap import bootstrap_counts
    from extracteval.core.record_counts import paired_counts
    from extracteval.mlflow.adapters import get_adapter

    rec, columns, arrays = paired_counts(tables)
    statistic = get_adapter(task).count_metric(metric, columns, params)
    if statistic is None:
        return None
    per, diffs = bootstrap_counts(arrays, statistic, list(pairs), resamples=resamples, confidence=confidence, seed=seed)
    return PairedIntervals(per_run=per, pairs=diffs, n_records=len(rec), sizes={k: len(t.record_ids) for k, t in tables.items()})


# ---- shared by the tasks whose metrics are `core.decision` rates and P/R/F1 (structured, toolcalls)

# per-record flag column → the `core.decision` count column(s) it makes
_FLAG_COUNTS = {"valid": ("valid", "valid_records"), "correct": ("correct_records",), "exact": ("exact",), "extracted": ("extracted",)}


def _numeric_columns(path: Path) -> list[str] | None:
    """The integer columns of a per-record Parquet file, in file order; None if unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception:  # noqa: BLE001 - an unreadable artifact is treated like an absent one
        return None
    return [f.name for f in schema if f.name != "record_id" and pa.types.is_integer(f.type)]


def decision_count_table(path: Path, count_columns: Sequence[str], flags: Sequence[str], order: Sequence[str] = ()) -> Any:
    """Per record, the counts `core.decision` recomputes its metrics from: the artifact's count
    columns as they are, `records` (1 per row) and its boolean flags as 0/1 counts under the
    decision's names (`correct` → `correct_records`, …; `strict_valid` = valid and not
    extracted). `order`: keep just these columns, in this order (the task's count columns, so the
    rows are those `score --baseline/--candidate` resamples). None when the artifact lacks one."""
    import numpy as np

    from extracteval.core.record_counts import RecordCountTable

    # every numeric column of the artifact, in its order (not only those the metrics read): the
    # same count rows as the in-process decision scores, so `compare` resamples exactly as
    # `score --baseline/--candidate` does and gives the same interval
    numeric = _numeric_columns(path)
    if numeric is None or not set(count_columns) <= set(numeric):
        return None
    frame = read_records(path, ["record_id", *flags, *numeric])
    if frame is None:
        return None
    cols: dict[str, Any] = {c: frame[c].to_numpy(dtype=np.int64) for c in numeric}
    cols["records"] = np.ones(len(frame), dtype=np.int64)
    fl = {c: frame[c].fillna(False).to_numpy(dtype=bool) for c in flags}
    for c, arr in fl.items():
        for name in _FLAG_COUNTS[c]:
            cols.setdefault(name, arr.astype(np.int64))
    if "valid" in fl and "extracted" in fl:
        cols["strict_valid"] = (fl["valid"] & ~fl["extracted"]).astype(np.int64)
    if order:  # the task's count columns, in its order: the rows the in-process decision resamples
        if not set(order) <= set(cols):
            return None
        cols = {c: cols[c] for c in order}
    return RecordCountTable.from_columns(frame["record_id"].astype(str).to_numpy(dtype=object), cols)


def decision_count_metric(prefix: str, metric: str, columns: Sequence[str], params: Mapping[str, str], *, count_map: Any) -> Any:
    """The task's map of counts to metrics (`count_map`, its `metrics` module) for `metric`
    (`<prefix><metric>`) as a count metric; None for another metric or when a count it needs is
    not among `columns`."""
    import numpy as np

    from extracteval.core.decision import metric_from_counts
    from extracteval.errors import InputError

    leaf = metric.removeprefix(prefix)
    if not metric.startswith(prefix) or leaf not in count_map.METRICS:
        return None
    zd = zero_division_param(params)
    try:  # every count it needs is there
        metric_from_counts(leaf, columns, np.zeros(len(columns)), count_map=count_map, zero_division=zd)
    except InputError:
        return None
    return lambda summed: metric_from_counts(leaf, columns, summed, count_map=count_map, zero_division=zd)
