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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from extracteval.errors import InputError

__all__ = ["count_metrics", "METADATA_ARTIFACT", "SliceSelector", "parse_slice", "read_run_metadata", "sliced_table", "clustered_table", "table_metrics"]

METADATA_ARTIFACT = "extracteval/record_metadata.parquet"


@dataclass(frozen=True)
class SliceSelector:
    """`COLUMN=VALUE`: the records whose metadata column holds this value (as text)."""

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


def _values(metadata: Any, column: str, ids: Sequence[Any]) -> list[str]:
    """The column's value (text; "" for none) of each of `ids`."""
    from extracteval.core.slices import value_text

    return [value_text(v) for v in metadata[column].reindex([str(i) for i in ids]).tolist()]


def sliced_table(table: Any, metadata: Any, selector: SliceSelector) -> Any:
    """The run's per-record counts restricted to the records of the slice."""
    import numpy as np

    keep = np.array([v == selector.value for v in _values(metadata, selector.column, table.record_ids)], dtype=bool)
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
