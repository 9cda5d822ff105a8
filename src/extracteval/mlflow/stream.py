"""`extracteval evaluate <task> --chunk-size N [--workers K]` and `--engine spark`, for every task:
one streaming path over the task adapters, feeding the bundle writer the `Scored` it would get
from the in-memory `evaluate`.

What a task adapter provides (see `tasks.TaskAdapter`):

- `chunk_job(args, chunk_size=N)` → `ChunkJob`: its chunk task (`chunked.ChunkTask`) and its
  chunk reader over the files of `args` (as `score <task> --chunk-size` reads them);
- `spark_job(args, spark)` → `spark.engine.SparkJob`: its chunk task, its inputs joined by id as a
  Spark DataFrame and the batch → chunk function (as `score <task> --engine spark` reads them),
  and optionally the chunk task of the id-ordered pass (`evaluate_task`);
- `chunk_outputs(task, chunk, score)` → what `evaluate` logs of one chunk (`score` is the
  task's `ChunkScore` of it): its truth rows as `Scored.truth` holds them (hashed into the truth
  digest; the first rows give the dataset schema) and, per artifact (`records`, `predictions`)
  and model, the chunk's rows exactly as the in-memory run writes them to
  `records.parquet` / `predictions.parquet`;
- `scored_from_chunks(result, streamed)` → the `Scored` of the whole evaluation, from the merged
  ledger's result and what was streamed (`Streamed`).

The per-record rows and the truth pieces are computed beside the ledger of each chunk (in a
worker, or on a Spark executor in a second, id-ordered pass) and written here chunk by chunk, in
id order, so memory is bounded by the chunk size.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.chunked import ChunkJob, ChunkScore
from extracteval.mlflow.adapters import Scored

__all__ = ["HEAD_ROWS", "ChunkJob", "Streamed", "EvaluateChunks", "score_streamed", "scored_of_stream", "stream_scored"]

HEAD_ROWS = 1000  # truth rows the dataset schema is inferred from (as `truth_summary` does in memory)
_FILES = ("records", "predictions")  # the per-model Parquet artifacts a streaming engine may write


@dataclass
class Streamed:
    """What a streaming engine hands to `scored_from_chunks`."""

    result: Any  # the chunk task's `finalise` result
    inputs: dict[str, Any]
    truth_digest: str
    truth_head: pd.DataFrame  # the first HEAD_ROWS truth rows, as `Scored.truth` holds them
    truth_rows: int
    files: dict[tuple[str, str], Path]  # (model, artifact file name) → streamed file
    workdir: Path  # holds `files`; removed by the caller once the bundle is written


def scored_of_stream(scored: Scored, s: Streamed) -> Scored:
    """`scored` with what the bundle writer takes from a stream instead of a whole truth frame
    and result: the truth digest, the dataset summary, the streamed Parquet files."""
    from extracteval.mlflow.bundle import truth_summary

    scored.cache["truth_digest"] = s.truth_digest
    scored.cache["truth_summary"] = truth_summary(s.truth_head, num_rows=s.truth_rows)
    scored.cache["streamed_files"] = dict(s.files)
    scored.cache["stream_workdir"] = s.workdir
    return scored


def stream_scored(task: str, result: Any, doc: dict[str, Any], s: Streamed, *, truth_source: str | None = None) -> Scored:
    """The `Scored` of a streamed evaluation whose document is `doc` (the result's, with the
    stream's `inputs` put in): the truth's first rows, the models in `result.ranking`."""
    doc["inputs"] = dict(s.inputs)
    scored = Scored(task=task, result=result, doc=doc, models=tuple(result.ranking), truth=s.truth_head,
                    truth_source=str(s.inputs["truth"]) if truth_source is None else truth_source, config=doc["config"])
    return scored_of_stream(scored, s)


@dataclass(frozen=True)
class EvaluateChunks:
    """A chunk task plus what `evaluate` logs of each chunk: its per-record rows and predictions
    per model (`ChunkScore.records`, `records/<model>` / `predictions/<model>` → frame) and its truth, encoded for the digest, with
    its first rows (`ChunkScore.side`)."""

    task: Any
    adapter: Any

    def score_chunk(self, chunk: Any) -> ChunkScore:
        from extracteval.core.digest import encode_truth

        s = self.task.score_chunk(chunk)
        truth, files = self.adapter.chunk_outputs(self.task, chunk, s)
        records = {f"{kind}/{m}": frame for kind, per_model in files.items() for m, frame in per_model.items() if frame is not None}
        return ChunkScore(ledger=s.ledger, records=records, rows=s.rows, side=(encode_truth(truth), truth.head(HEAD_ROWS)))

    def finalise(self, ledger: Any, *, record_rows: Callable[[], Any] | None) -> Any:
        return self.task.finalise(ledger, record_rows=record_rows)


class _Truth:
    """The truth digest and the first rows, fed `EvaluateChunks` sides in id order."""

    def __init__(self) -> None:
        from extracteval.core.digest import TruthDigest

        self.digest = TruthDigest()
        self.heads: list[pd.DataFrame] = []
        self.head_rows = 0

    def __call__(self, side: tuple[Any, pd.DataFrame]) -> None:
        piece, head = side
        self.digest.update(piece)
        if self.head_rows < HEAD_ROWS and len(head):
            part = head.head(HEAD_ROWS - self.head_rows)
            self.heads.append(part)
            self.head_rows += len(part)

    def head(self) -> pd.DataFrame:
        return pd.concat(self.heads) if self.heads else pd.DataFrame()


def score_streamed(adapter: Any, args: argparse.Namespace, *, engine: str, chunk_size: int, workers: int,
                   workdir_parent: Path | None = None) -> Scored:
    """Score `evaluate <task>` arguments with the chunked engine (`engine="chunked"`) or Spark
    (`"spark"`), streaming per-record rows and the truth digest; the `Scored` for the bundle."""
    if not all(hasattr(adapter, m) for m in ("chunk_job", "spark_job", "chunk_outputs", "scored_from_chunks")):
        from extracteval.errors import InputError

        raise InputError(f"evaluate {adapter.task} scores in memory: --chunk-size/--workers/--engine spark do not stream its evaluation yet; "
                         f"drop them (or stream the scores alone with `extracteval score {adapter.task} --chunk-size N --output DIR`).")
    if workdir_parent is not None:
        workdir_parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="extracteval-stream-", dir=workdir_parent))
    try:
        streamed = (_spark if engine == "spark" else _chunked)(adapter, args, workdir, chunk_size=chunk_size, workers=workers)
        return adapter.scored_from_chunks(streamed.result, streamed)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _streamed(result: Any, inputs: dict[str, Any], truth: _Truth, paths: Mapping[str, Path], workdir: Path) -> Streamed:
    files = {}
    for key, path in paths.items():
        if path.exists():
            kind, model = key.split("/", 1)
            files[(model, f"{kind}.parquet")] = path
    return Streamed(result=result, inputs=inputs, truth_digest=truth.digest.hexdigest(), truth_head=truth.head(),
                    truth_rows=truth.digest.rows, files=files, workdir=workdir)


class _Paths(dict):  # type: ignore[type-arg]
    """`records/<model>` → a file in the work folder, made when first asked for."""

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = workdir

    def __missing__(self, key: str) -> Path:
        kind = key.split("/", 1)[0]
        path = self[key] = self.workdir / f"{kind}-{len(self)}.parquet"
        return path


def _chunked(adapter: Any, args: argparse.Namespace, workdir: Path, *, chunk_size: int, workers: int) -> Streamed:
    from extracteval.chunked import run_chunks

    job = adapter.chunk_job(args, chunk_size=chunk_size)
    truth = _Truth()
    paths = _Paths(workdir)
    result, _ = run_chunks(EvaluateChunks(job.task, adapter), job.chunks, workers=workers, records_path=paths,
                           spill_dir=str(workdir), on_side=truth)
    return _streamed(result, job.inputs, truth, paths, workdir)


def _spark(adapter: Any, args: argparse.Namespace, workdir: Path, *, chunk_size: int, workers: int) -> Streamed:
    """The ledgers as `score <task> --engine spark` reduces them; then one pass over the joined
    records in id order (range partitions, each sorted; `toLocalIterator` fetches one partition
    at a time) that sends each batch's per-record rows and truth piece to the driver."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from extracteval.spark import session_for
    from extracteval.spark.engine import ID, _input_error, arrow_ipc

    job = adapter.spark_job(args, session_for(args))
    result = job.run().result
    task = EvaluateChunks(job.evaluate_task or job.task, adapter)
    to_chunk = job.to_chunk

    def batches(frames):  # type: ignore[no-untyped-def]
        for pdf in frames:
            s = task.score_chunk(to_chunk(pdf))
            keys = ["side", *s.records]
            payloads = [pickle.dumps(s.side, protocol=pickle.HIGHEST_PROTOCOL), *(arrow_ipc(f) for f in s.records.values())]
            yield pd.DataFrame({"key": keys, "payload": payloads})

    parts = getattr(args, "spark_partitions", None) or job.df.sparkSession.sparkContext.defaultParallelism
    ordered = job.df.repartitionByRange(parts, ID).sortWithinPartitions(ID).mapInPandas(batches, schema="key string, payload binary")
    truth = _Truth()
    paths = _Paths(workdir)
    writers: dict[str, Any] = {}
    try:
        for row in ordered.toLocalIterator():
            if row["key"] == "side":
                truth(pickle.loads(row["payload"]))  # noqa: S301 - produced by `batches` above, from our own executor code
                continue
            table = pa.ipc.open_stream(row["payload"]).read_all()
            if row["key"] not in writers:
                writers[row["key"]] = pq.ParquetWriter(str(paths[row["key"]]), table.schema)
            writers[row["key"]].write_table(table.cast(writers[row["key"]].schema))
    except Exception as e:  # executor failures come back as Py4J/PythonException
        err = _input_error(e)
        if err is not None:
            raise err from None
        raise
    finally:
        for w in writers.values():
            w.close()
    return _streamed(result, job.inputs, truth, paths, workdir)
