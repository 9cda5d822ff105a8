"""Slices of an `experiments/<name>/experiment.yaml` (the demo, `mlflow run . -e demo`): the
file takes the slicing keys of the evaluator and the Python API (`slice_by`, `metadata`,
`metadata_id`, `slice_bins`, `slice_min_size`, `cluster_by`), at its top level or, for an
experiment of several tracks, in a track's settings.

The metadata is read from `metadata` (a file of the experiment's folder) or from the ground-truth
file. A column of the truth named by `slice_by` or `cluster_by` is metadata, never scored: the
task then scores a copy of the truth without it (made textually, so every other cell is read
as in the original), and the result names the original file.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from extracteval.io.common_options import slice_config_keys

__all__ = ["score_experiment"]


def _settings(spec: Mapping[str, Any], task: str) -> dict[str, Any]:
    tracks = spec.get("tracks")
    track = tracks.get(task) if isinstance(tracks, Mapping) else None
    return {**spec, **track} if isinstance(track, Mapping) else dict(spec)


def score_experiment(adapter: Any, folder: Path, spec: Mapping[str, Any]) -> Any:
    """`adapter.score_experiment(folder, spec)`, sliced when the experiment's settings ask."""
    from extracteval.mlflow.slicing import attach_slices, slicing_for

    settings = _settings(spec, adapter.task)
    if not any(settings.get(k) for k in ("slice_by", "cluster_by")):
        return adapter.score_experiment(folder, spec)
    truth = folder / str(settings["truth"]) if settings.get("truth") else None
    keys = {k: settings[k] for k in slice_config_keys() if k in settings}
    if keys.get("metadata"):
        keys["metadata"] = str(folder / str(keys["metadata"]))
    slicing = slicing_for({**settings, **keys, "truth": str(truth) if truth else None,
                           "id_column": settings.get("id_column") or settings.get("id_key")})
    assert slicing is not None
    with tempfile.TemporaryDirectory(prefix="extracteval-slices-") as d:
        id_column = settings.get("id_column") or settings.get("id_key") or "id"  # slicing by the id leaves it in place
        lean = _copy_without(truth, [c for c in slicing[0].columns if c != id_column], Path(d)) if truth is not None else None
        scored = adapter.score_experiment(folder, spec if lean is None else _with_truth(spec, adapter.task, lean))
        if lean is not None:
            _ = scored.truth  # made now, while the copy it may be read from is there
            scored = dataclasses.replace(scored, truth_source=str(truth))
            inputs = scored.doc.get("inputs")
            if isinstance(inputs, dict) and str(inputs.get("truth")) == str(lean):
                inputs["truth"] = str(truth)
    attach_slices(scored, slicing)
    return scored


def _with_truth(spec: Mapping[str, Any], task: str, path: Path) -> dict[str, Any]:
    """The experiment's settings with the ground truth at `path` (absolute: joined to the folder, it stays itself)."""
    out = dict(spec)
    tracks = spec.get("tracks")
    if isinstance(tracks, Mapping) and isinstance(tracks.get(task), Mapping) and tracks[task].get("truth"):
        out["tracks"] = {**tracks, task: {**tracks[task], "truth": str(path)}}
    else:
        out["truth"] = str(path)
    return out


def _copy_without(path: Path, columns: Sequence[str], folder: Path) -> Path | None:
    """A copy of the truth file in `folder` (same name) without `columns`; None when it holds none of them."""
    drop = set(columns)
    suffix = path.suffix.lower()
    dst = folder / path.name
    if suffix in (".csv", ".tsv"):
        delim = "\t" if suffix == ".tsv" else ","
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f, delimiter=delim))
        keep = [j for j, c in enumerate(rows[0] if rows else []) if c not in drop]
        if not rows or len(keep) == len(rows[0]):
            return None
        with dst.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f, delimiter=delim, lineterminator="\n").writerows([[r[j] for j in keep if j < len(r)] for r in rows])
        return dst
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        hit = [c for c in table.column_names if c in drop]
        if not hit:
            return None
        pq.write_table(table.drop(hit), dst)
        return dst
    if suffix in (".jsonl", ".ndjson"):
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) if line.strip() else None for line in lines]
        if not any(isinstance(r, dict) and drop & set(r) for r in records):
            return None
        dst.write_text("".join((json.dumps({k: v for k, v in r.items() if k not in drop}, ensure_ascii=False) if isinstance(r, dict)
                                else line) + "\n" for r, line in zip(records, lines)), encoding="utf-8")
        return dst
    return None
