"""Slices and clusters of tracked runs: `leaderboard --slice COLUMN=VALUE` and `compare --slice`,
and `--cluster-by COLUMN` for their intervals.

A model run logged with slicing keeps its records' metadata (`extracteval/record_metadata.parquet`:
`record_id` and each metadata column as text) beside its per-record counts (`records.parquet`).
A slice of a run is its per-record counts restricted to the records whose metadata column holds
the value; its metrics are the task's map of those summed counts (`count_metric`), exactly the
slice's numbers at evaluation time. Clusters: each run's rows summed per value of the cluster
column, so that the paired bootstrap resamples whole clusters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from extracteval.errors import InputError

__all__ = ["count_metrics", "METADATA_ARTIFACT", "SliceSelector", "parse_slice", "read_run_metadata", "slice_metadata", "sliced_table", "clustered_table",
           "table_metrics"]

METADATA_ARTIFACT = "extracteval/record_metadata.parquet"


@dataclass(frozen=True)
class SliceSelector:
    """`COLUMN=VALUE`: the records whose metadata column holds this value (as text), or whose
    number falls in it when the value is a bin label of a numeric column (`length=(5, 12]`);
    `@size=…`: the records of that size (or size bin)."""

    column: str
    value: str

    def __str__(self) -> str:
        return f"{self.column}={self.value}"


def parse_slice(text: str | None) -> SliceSelector | None:
    """`--slice COLUMN=VALUE` (None when not given); a clear error for anything else."""
    if text is None:
        return None
    column, sep, value = str(text).partition("=")
    if not sep or not column.strip():
        raise InputError(f"--slice: expected COLUMN=VALUE (a metadata column the runs were sliced by, and one of its values), but found {text!r}.")
    return SliceSelector(column.strip(), value.strip())


def read_run_metadata(artifact_uri: str, tracking_uri: str) -> Any:
    """A run's record metadata (DataFrame indexed by record id, text columns), or None when the
    run has none (it was logged without slicing, or by an earlier version)."""
    import pandas as pd

    from extracteval.mlflow.intervals import read_run_artifact

    def read(path: Any) -> Any:
        try:
            frame = pd.read_parquet(path)
        except Exception:  # noqa: BLE001 - an unreadable artifact is treated like an absent one
            return None
        if "record_id" not in frame.columns:
            return None
        frame = frame.astype(object).where(frame.notna(), None)
        frame.index = frame.pop("record_id").astype(str).to_numpy(dtype=object)
        return frame

    return read_run_artifact(artifact_uri, METADATA_ARTIFACT, tracking_uri, read)


def slice_metadata(task: str, run: Any, tracking_uri: str, columns: Sequence[str], *, sizes: Any = None) -> Any:
    """A run's record metadata holding `columns`: those of its `record_metadata.parquet`, and the
    built-in `@size` (each record's size as the task counts it, read from its per-record counts:
    a run logged without slicing has it too). `run`: an MLflow `Run` or a tracked run (its
    artifact URI and params); `sizes`: its record sizes when already read. None when the run lacks
    what the columns need."""
    import pandas as pd

    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.intervals import RECORDS_ARTIFACT, read_run_artifact
    from extracteval.io.config import SIZE

    info = getattr(run, "info", None)
    uri = info.artifact_uri if info is not None else run.artifact_uri
    params = run.data.params if info is not None else run.params
    named = [c for c in columns if c != SIZE]
    meta = read_run_metadata(uri, tracking_uri) if named else None
    if named and meta is None:
        return None
    if SIZE not in columns:
        return meta
    if sizes is None:
        adapter = get_adapter(task)
        sizes = read_run_artifact(uri, RECORDS_ARTIFACT, tracking_uri, lambda p: adapter.record_sizes(p, params))
    if sizes is None:
        return None
    sizes = sizes.set_axis(sizes.index.astype(str))  # a copy: the caller's sizes stay as they were
    frame = pd.DataFrame(index=sizes.index) if meta is None else meta.reindex(meta.index.union(sizes.index, sort=False))
    frame[SIZE] = [None if pd.isna(v) else str(int(v)) for v in sizes.reindex(frame.index).tolist()]
    return frame


_BIN = re.compile(r"^([\[(])\s*([^,\s]+)\s*,\s*([^\]\s]+)\s*\]$")
_OUTSIDE = re.compile(r"^([<>])\s*(\S+)$")


def _bin_range(value: str) -> tuple[float, float, bool, bool] | None:
    """The range of a bin label as `score` prints it (`[1, 5]`, `(5, 12]`, `< 1`, `> 40`): (low,
    high, low included, high included); None for any other text."""
    try:
        m = _BIN.match(value)
        if m:
            return float(m.group(2)), float(m.group(3)), m.group(1) == "[", True
        m = _OUTSIDE.match(value)
        if m:
            edge = float(m.group(2))
            return (-math.inf, edge, False, False) if m.group(1) == "<" else (edge, math.inf, False, False)
    except ValueError:
        return None
    return None


def _in_slice(texts: Sequence[str], value: str) -> list[bool]:
    """Which of these metadata values (text) are in the slice `value`: the same text, or — for a
    number or a bin label, in a numeric column (every value a number) — a number equal to it or
    inside the bin."""
    same = [t == value for t in texts]
    rng = _bin_range(value)
    if rng is None:
        try:
            rng = (float(value),) * 2 + (True, True)  # a number: the records holding it, however written (`6`, `6.0`)
        except ValueError:
            return same
    if any(same):
        return same
    numbers = []
    for t in texts:
        if t == "":
            numbers.append(None)
            continue
        try:
            numbers.append(float(t))
        except ValueError:
            return same  # a text column: its values as they are
    low, high, low_in, high_in = rng
    return [n is not None and (low < n or (low_in and n == low)) and (n < high or (high_in and n == high)) for n in numbers]


def _values(metadata: Any, column: str, ids: Sequence[Any]) -> list[str]:
    """The column's value (text; "" for none) of each of `ids`."""
    from extracteval.core.slices import value_text

    return [value_text(v) for v in metadata[column].reindex([str(i) for i in ids]).tolist()]


def sliced_table(table: Any, metadata: Any, selector: SliceSelector) -> Any:
    """The run's per-record counts restricted to the records of the slice."""
    import numpy as np

    keep = np.array(_in_slice(_values(metadata, selector.column, table.record_ids), selector.value), dtype=bool)
    return replace(table, record_ids=table.record_ids[keep], counts=table.counts[keep])


def clustered_table(table: Any, metadata: Any, column: str) -> Any:
    """The run's per-record counts summed per cluster (the column's value; a record without one
    is a cluster of its own): rows the paired bootstrap resamples as whole clusters."""
    import numpy as np

    from extracteval.core.bootstrap import cluster_sums

    from extracteval.core.slices import cluster_labels

    labels = cluster_labels(_values(metadata, column, table.record_ids), table.record_ids)
    sums = cluster_sums(table.counts, labels)
    ids = np.asarray(list(dict.fromkeys(labels.tolist())), dtype=object)
    return replace(table, record_ids=ids, counts=sums)


def count_metrics(task: str, keys: Sequence[str], columns: Sequence[str], params: Mapping[str, str]) -> dict[str, Any]:
    """Metric key → the task's function of summed counts (`count_metric`), for the keys among
    `keys` that counts in these `columns` determine, in the order given."""
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter(task)
    out: dict[str, Any] = {}
    for key in dict.fromkeys(keys):
        f = adapter.count_metric(key, columns, params)
        if f is not None:
            out[key] = f
    return out


def table_metrics(task: str, table: Any, keys: Sequence[str], params: Mapping[str, str]) -> dict[str, float]:
    """The metrics among `keys` that the run's per-record counts determine, on these records."""
    summed = table.counts.sum(axis=0)
    return {k: float(f(summed)) for k, f in count_metrics(task, keys, table.columns, params).items()}


def check_column(metadata: Any, column: str, what: str) -> None:
    """A clear error when a run's record metadata lacks the column."""
    if column not in metadata.columns:
        raise InputError(f"{what}: the run's record metadata has no column {column!r}; it has {', '.join(map(repr, metadata.columns)) or 'none'} "
                         "(the columns it was sliced and clustered by).")
