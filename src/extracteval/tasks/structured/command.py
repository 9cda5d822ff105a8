"""`extracteval score structured`: JSON generation track: raw outputs vs reference JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_result_arguments
from extracteval.report.console import print_result
from extracteval.tasks.structured.pipeline import (
    chunked_document,
    config_of,
    render,
    score_files,
    streaming_config,
    write_output,
)

HELP = "JSON outputs vs reference JSON: validity, exact match, flattened field P/R/F1"
DESCRIPTION = """\
Score raw model outputs (strings) against reference JSON documents.

Inputs are JSONL (or JSON array / CSV / Parquet) records keyed by `id`: the truth file holds the
reference in `reference` (or `expected`, `truth`), given as an object or a JSON string; each
prediction file holds the raw output in `output` (or `prediction`, `response`).

Metrics: json_valid_rate (fenced ```json blocks and leading prose tolerated, reported as
json_extracted_rate), exact_match_rate (canonical JSON), field_precision/recall/f1 over flattened
paths (user.name, items[0]); a wrong value counts FP + FN.

example:
  extracteval score structured --truth truth.jsonl \\
      --predictions llm=llm.jsonl --predictions slm=slm.jsonl \\
      --baseline llm --candidate slm --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="reference JSON per record (id + reference)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE", help="a model's raw outputs (id + output); repeat per model")
    p.add_argument("--list-matching", choices=("positional", "optimal"), default="positional", help="align list items by position (default) or by optimal assignment")
    p.add_argument("--value-match", choices=("exact", "normalized"), default="exact", help="compare leaves as canonical JSON (default) or normalised values")
    add_track_arguments(p)


def add_track_arguments(p: argparse.ArgumentParser) -> None:
    """The options `score structured` and `score toolcalls` share: zero division, the extended
    metrics, progress, the baseline-vs-candidate decision, output and scale."""
    from extracteval.io.decision_options import add_decision_arguments
    from extracteval.report.live_progress import add_progress_argument

    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_extended_arguments(p)
    add_progress_argument(p)
    add_decision_arguments(p)
    add_result_arguments(p, writes="result.json and records.jsonl (per-record counts)", safe_csv=False)


def add_extended_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantic-similarity", action="store_true", help="also score with the `embedding` similarity backend (pass ≥ threshold)")
    p.add_argument("--llm-judge", action="store_true", help="also score with the `llm_judge` backend (1–7 rubric / 7, pass ≥ threshold)")
    p.add_argument("--similarity-option", action="append", default=[], metavar="KEY=VALUE", help="option passed to the similarity backends (repeatable)")
    p.add_argument("--pass-threshold", type=float, default=0.85, metavar="X", help="pass mark of the extended metrics (default 0.85)")


def run(args: argparse.Namespace) -> int:
    doc = _run_chunked(args, config_of(args))
    streamed = doc is not None
    if doc is None:
        result, doc, *_ = score_files(args)
        if args.output:
            write_output(Path(args.output), result, doc)
    elif args.output:  # records.parquet was streamed while scoring
        from extracteval.io.outputs import staged_folder

        with staged_folder(Path(args.output)) as staging:
            (staging / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    print_result(doc, as_json=args.json, render=render, output=args.output,
                 written=("result.json", "records.parquet" if streamed else "records.jsonl"), default=None)
    return 0


def _run_chunked(args: argparse.Namespace, config: Any) -> dict[str, Any] | None:
    """--chunk-size / --workers or --engine spark (docs/scale.md): the document, or None for the
    in-memory engine."""
    from extracteval.io.scale_options import scale_engine, spark_session
    from extracteval.errors import InputError

    chunk_size = getattr(args, "chunk_size", None)
    engine = scale_engine(args)
    if engine == "memory":
        return None
    config = streaming_config(args)
    if engine == "spark":
        if args.output:
            raise InputError("--output with --engine spark is not supported for the structured task (no per-record rows from Spark); drop --output.")
        from extracteval.tasks.structured.spark import structured_spark_job

        job = structured_spark_job(spark_session(args), args.truth, args.predictions, config=config, partitions=args.spark_partitions)
        result, inputs = job.run().result, job.inputs
    else:
        from extracteval.tasks.structured.chunked import score_structured_files

        result, inputs = score_structured_files(args.truth, args.predictions, config=config, chunk_size=100_000 if chunk_size is None else chunk_size,
                                                workers=args.workers, output=args.output)
    return chunked_document(result, inputs)
