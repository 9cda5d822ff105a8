"""`extracteval evaluate fields --chunk-size N [--workers K]`: the chunked engine, feeding the MLflow
logging path with what the in-memory `evaluate` logs, in memory bounded by the chunk size.

Per chunk (in this process or a worker) the `fields` core scores the records into a mergeable
ledger, as for `score fields --chunk-size`, and also returns: the chunk's per-record counts of
each model (streamed to one Parquet file per model: the runs' `extracteval/records.parquet`), its
predictions as scored (one Parquet file per model: `extracteval/predictions.parquet`, for
`extracteval rescore`), and its truth rows encoded for the truth digest, which this process
hashes in chunk (= id) order. The first 1000 truth rows give the dataset's column types.

Per-field F1 intervals come from the merged ledger's distinct per-field count patterns and their
frequencies: the multinomial bootstrap of the in-memory path draws over exactly those, so the
intervals are the same numbers.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.chunked import ChunkScore
from extracteval.tasks.fields.chunked import FieldsChunk, FieldsTask
from extracteval.mlflow.stream import HEAD_ROWS, Streamed, scored_of_stream
from extracteval.mlflow.tasks import Scored

__all__ = ["EvaluateFieldsTask", "score_fields_streamed", "scored_from_stream"]



@dataclass(frozen=True)
class EvaluateFieldsTask(FieldsTask):
    """`FieldsTask` plus what `evaluate` logs of each chunk.

    Attributes:
        headers: model → its prediction columns, in file order (the columns of the in-memory
            predictions frame, so that predictions.parquet has the same rows).
    """

    headers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def score_chunk(self, chunk: FieldsChunk) -> ChunkScore:
        from extracteval.core.digest import encode_truth
        from extracteval.tasks.fields.semantics import ModelPredictions, fields_ledger
        from extracteval.tasks.fields.records import records_frame_of
        from extracteval.mlflow.predictions_file import predictions_to_frame

        chunk = chunk.materialised()
        ledger, records = fields_ledger(chunk.truth, chunk.predictions, plan=self.plan)
        rows = records.bootstrap_rows() if self.plan.config.bootstrap > 0 else None
        frames: dict[str, pd.DataFrame] = {}
        for m in self.plan.models:
            frames[f"records/{m}"] = records_frame_of(records, [m])
        for p in chunk.predictions:
            cols = self.headers.get(p.name)
            values = p.values if cols is None else p.values.reindex(columns=list(cols))
            frames[f"predictions/{p.name}"] = predictions_to_frame(
                ModelPredictions(name=p.name, values=values, status=p.status, source=p.source))
        return ChunkScore(ledger=ledger, records=frames, rows=rows, side=encode_truth(chunk.truth))


def scored_from_stream(s: Streamed) -> Scored:
    """The `Scored` the bundle writer takes, from a streamed `fields` evaluation."""
    result = s.result
    doc = result.to_dict()
    doc["inputs"] = s.inputs
    scored = Scored(task="fields", result=result, doc=doc, models=tuple(result.ranking), truth=s.truth_head,
                    truth_source=s.inputs["truth"], config=doc["config"])
    return scored_of_stream(scored, s)


def score_fields_streamed(args: argparse.Namespace, *, chunk_size: int, workers: int, workdir_parent: Path | None = None) -> Streamed:
    """Score `evaluate fields` arguments with the chunked engine (see the module docstring)."""
    from extracteval.chunked import run_chunks
    from extracteval.core.digest import TruthDigest
    from extracteval.io.chunks import materialise_text, table_columns
    from extracteval.mlflow.tasks import get_adapter

    job = get_adapter("fields").chunk_job(args, chunk_size=chunk_size)  # what `score fields --chunk-size` runs
    plan = job.task.plan
    models: dict[str, str] = job.inputs["predictions"]
    headers = {
        name: tuple(c for c in table_columns(src, delimiter=args.delimiter) if c not in (args.id_column, "status"))
        for name, src in models.items()
    }
    task = EvaluateFieldsTask(plan, keep_records=True, headers=headers)
    workdir = Path(tempfile.mkdtemp(prefix="extracteval-stream-", dir=workdir_parent))
    files: dict[tuple[str, str], Path] = {}
    paths: dict[str, Path] = {}
    for i, m in enumerate(plan.models):
        for kind in ("records", "predictions"):
            paths[f"{kind}/{m}"] = files[(m, f"{kind}.parquet")] = workdir / f"{kind}-{i}.parquet"
    digest = TruthDigest()
    heads: list[pd.DataFrame] = []
    head_rows = 0

    def chunks() -> Iterator[Any]:
        nonlocal head_rows
        for chunk in job.chunks:
            if head_rows < HEAD_ROWS:  # the first rows as read, for the dataset schema
                part = materialise_text(chunk.truth.head(HEAD_ROWS - head_rows))
                heads.append(part)
                head_rows += len(part)
            yield chunk

    try:
        result, _ = run_chunks(task, chunks(), workers=workers, records_path=paths, spill_dir=str(workdir), on_side=digest.update)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    head = pd.concat(heads) if heads else pd.DataFrame(columns=[c for c in table_columns(job.inputs["truth"], delimiter=args.delimiter)
                                                                 if c != args.id_column])
    return Streamed(
        result=result, truth_digest=digest.hexdigest(), truth_head=head, truth_rows=result.n_records,
        inputs=job.inputs,
        files={k: v for k, v in files.items() if v.exists()}, workdir=workdir,
    )
