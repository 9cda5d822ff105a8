"""The `spans` task (JSONL documents) on Spark: lines read as text, each document validated on the
executors by the chunked reader's parser (`tasks.spans.chunks`, the local reader's checks), truth and
predictions joined by document id, range-partitioned and sorted by id so that partition ledgers
merge in document order (first error examples, per-document bootstrap rows), every partition
scored by the chunked engine's `SpansTask` inside `mapInPandas`, finalised once on the driver:
the local engine's document, byte for byte, bootstrap intervals included.

Token (CoNLL) files are not served (their chunks depend on neighbouring lines). Duplicated ids
and ids present on one side only are `InputError`s naming the file and ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from extracteval.errors import InputError
from extracteval.spark import require_pyspark

__all__ = ["spans_spark_job"]

_ID = "__extracteval_id"


def _id_of(source: str, rec: Any) -> str:
    """A document's id (for `spark.engine.read_keyed_lines`)."""
    if not isinstance(rec, dict) or "id" not in rec or rec["id"] is None or str(rec["id"]).strip() == "":
        raise InputError(f"{source}: expected a JSON object with an \"id\" key naming the document, but found {str(rec)[:80]!r}.")
    return str(rec["id"]).strip()


def spans_spark_job(spark: Any, args: Any) -> Any:
    """The `SparkJob` of `score spans` / `evaluate spans --engine spark` (`args`: their parsed
    options; `run().result` is the `SpansResult`)."""
    from extracteval.tasks.spans.options import check_token_inputs, named_files, build_config, spans_inputs

    if check_token_inputs(args):
        raise InputError("--engine spark reads JSONL span files; score token files with --chunk-size/--workers, or in memory.")
    return _spans_job(spark, args.truth, named_files(args.predictions or [], "--predictions"), config=build_config(args, "char"),
                      partitions=args.spark_partitions, inputs=spans_inputs(args))


def _spans_job(spark: Any, truth: str, predictions: Sequence[tuple[str, Path]], *, config: Any, partitions: int | None,
               inputs: dict[str, Any]) -> Any:
    require_pyspark()  # the install hint, not an ImportError, without pyspark
    from pyspark.sql import functions as F

    from extracteval.tasks.spans.ledger import SpansTask
    from extracteval.tasks.spans.chunks import _doc, chunk_corpus
    from extracteval.tasks.spans.inputs import is_jsonl
    from extracteval.spark.engine import SparkJob
    from extracteval.spark.engine import guard as _guard
    from extracteval.spark.engine import read_keyed_lines
    from extracteval.spark.ordered import RowsInLedger, in_id_order

    models: dict[str, str] = {}
    for name, p in predictions:
        if name in models:
            raise InputError(f"--predictions: model name {name!r} is given twice.")
        models[name] = str(p)
    inline = not models
    if inline:
        models = {Path(truth).stem: str(truth)}
    for p in [truth, *models.values()]:
        if not is_jsonl(p):
            raise InputError(f"{p}: --engine spark reads JSONL span files; token (CoNLL) files are scored in memory (drop --engine spark).")
        if not Path(p).exists() and "://" not in p:
            raise InputError(f"{p}: file not found.")

    def read(path: str) -> Any:
        return read_keyed_lines(spark, path, _id_of, what="document id")

    tdf = read(truth)
    joined = tdf.select(F.col(_ID), F.col("line").alias("tl"))
    names = list(models)
    for i, m in enumerate(names):
        pdf = tdf if inline else read(models[m])
        for a, b, what in ((tdf, pdf, "truth document(s) have no prediction"), (pdf, tdf, "predicted document(s) are not in the truth")):
            shown = _guard(lambda: [r[0] for r in a.select(_ID).join(b.select(_ID), on=_ID, how="left_anti").orderBy(_ID).limit(6).collect()])
            if shown:
                raise InputError(
                    f"{models[m]}: document ids do not match {truth}: {what}: {', '.join(map(repr, shown[:5]))}{' …' if len(shown) > 5 else ''}. "
                    "Every truth document needs one line (an empty list for no spans)."
                )
        joined = joined.join(pdf.select(F.col(_ID), F.col("line").alias(f"l{i}")), on=_ID, how="left")
    joined = in_id_order(joined, _ID, partitions)
    pred_keys = ("pred",) if inline else ("pred", "spans")

    def to_chunk(pdf: pd.DataFrame) -> Any:
        import json

        gold = [_doc(Path(truth), f"document {rid!r}", json.loads(line), ("gold", "spans")) for rid, line in zip(pdf[_ID].tolist(), pdf["tl"].tolist())]
        preds = {}
        for i, m in enumerate(names):
            docs = []
            for g, line in zip(gold, pdf[f"l{i}"].tolist()):
                d = _doc(Path(models[m]), f"document {g.id!r}", json.loads(line), pred_keys)
                if g.text is not None:
                    for j, (s, e, _, own) in enumerate(d.spans):
                        if e > len(g.text):
                            raise InputError(f"{models[m]}: document {d.id!r}: pred[{j}]: span [{s}, {e}) lies outside the truth text ({len(g.text)} characters).")
                        if own is not None and g.text[s:e] != own:
                            raise InputError(f"{models[m]}: document {d.id!r}: pred[{j}].text: {own!r} differs from the truth text at [{s}, {e}), {g.text[s:e]!r}.")
                docs.append(d)
            preds[m] = docs
        return chunk_corpus(gold, preds)

    def empty() -> Any:
        raise InputError(f"{truth}: no documents found; expected one JSON object per line.")

    return SparkJob(task=RowsInLedger(SpansTask(config=config)), df=joined, to_chunk=to_chunk, empty_chunk=empty, inputs=inputs)
