"""`extracteval score toolcalls`: tool-call track, generic or BFCL-compatible."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from extracteval.tasks.toolcalls.pipeline import chunked_document, render, run_bfcl, run_generic, streaming_config
from extracteval.report.console import print_result

HELP = "predicted tool calls vs reference calls; BFCL-compatible checker with --checker bfcl"
DESCRIPTION = """\
Score predicted function calls against reference calls.

generic checker (default): JSONL records keyed by `id`. Truth: `calls` (or `reference`,
`expected`) holding {"name","arguments"} objects or lists of them, or `ground_truth` holding
BFCL possible answers ({func: {param: [acceptable values]}}, "" = may be omitted). Predictions:
`output` (or `result`, `response`) in any format: {"name","arguments"} (arguments an object or a
JSON string), OpenAI tool_calls, BFCL {func: {args}} / {func: "<json>"}, Python call strings
`[f(a=1), g(b="x")]` (parsed with ast, never evaluated), fenced or after prose.
Metrics: valid_call_rate, name_match_rate, args_exact_rate, args P/R/F1 over flattened argument
paths, call_accuracy; parallel calls are matched order-free by optimal assignment.

bfcl checker: the verdicts of the official BFCL AST checker on BFCL question, possible-answer
and result files (v1 and v4 layouts); repeat --questions/--truth pairs for several categories.
Irregular entries (an answer naming a function the question does not describe, a parameter map
that is not an object, …) are scored as BFCL's checker scores them and listed as warnings.
Function-calling models whose API forbids '.' in names call `a.b` as `a_b`: name them with
--underscore-to-dot NAME, so prompt and function-calling models are scored in one run.
With --chunk-size N [--workers K] the entries are checked N at a time (the same verdicts).

examples:
  extracteval score toolcalls --truth calls.jsonl --predictions llm=llm.jsonl --predictions slm=slm.jsonl
  extracteval score toolcalls --checker bfcl --questions BFCL_v4_simple_python.json \\
      --truth possible_answer/BFCL_v4_simple_python.json \\
      --predictions mymodel=BFCL_v4_simple_python_result.json --json
  extracteval score toolcalls --checker bfcl --questions simple.json --truth possible_answer/simple.json \\
      --predictions gpt=gpt_simple.json --predictions prompted=prompted_simple.json --underscore-to-dot gpt
"""


def configure(p: argparse.ArgumentParser) -> None:
    from extracteval.tasks.structured.command import add_track_arguments

    p.add_argument("--checker", choices=("generic", "bfcl"), default="generic", help="generic metrics (default) or BFCL-compatible verdicts")
    p.add_argument("--truth", action="append", required=True, metavar="FILE",
                   help="reference calls (generic) or a BFCL possible-answer file (bfcl; repeat with --questions for several categories)")
    p.add_argument("--questions", action="append", metavar="FILE", help="BFCL question file with the function specs (bfcl checker)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's outputs; repeat per model (bfcl: repeat the same NAME for each category's result file)")
    p.add_argument("--underscore-to-dot", action="append", nargs="?", const="*", metavar="NAME",
                   help="bfcl: look for a described function `a.b` under the name `a_b` in the calls of model NAME (repeat per "
                        "model; without NAME: every model). Use it for models whose API forbids dots in function names, e.g. "
                        "function-calling models, and leave it off for prompt models")
    p.add_argument("--possible-answer", action="store_true", help="generic: read the truth as BFCL possible answers (automatic for a `ground_truth` key)")
    p.add_argument("--value-match", choices=("exact", "normalized"), default="exact", help="generic: compare argument leaves as canonical JSON (default) or normalised values")
    add_track_arguments(p)


def run(args: argparse.Namespace) -> int:
    chunked = _run_chunked(args)
    if chunked is not None:
        doc = chunked
    else:
        doc, result, records = (run_bfcl(args) if args.checker == "bfcl" else run_generic(args))
    if args.output and chunked is not None:  # records.parquet was streamed while scoring
        _write_output(Path(args.output), doc, None)
    elif args.output:
        _write_output(Path(args.output), doc, records)
    print_result(doc, as_json=args.json, render=render, output=args.output,
                 written=("result.json", "records.parquet" if chunked is not None else "records.jsonl"), default=None)
    return 0


def _run_chunked(args: argparse.Namespace) -> dict[str, Any] | None:
    """--chunk-size / --workers (docs/scale.md): the generic checker's document, or None (in
    memory, or the BFCL checker, whose `run_bfcl` scores in chunks itself)."""
    from extracteval.errors import InputError

    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    spark = getattr(args, "engine", "local") == "spark"
    if chunk_size is None and workers == 1 and not spark:
        return None
    if args.checker == "bfcl":  # read whole, scored in chunks by `run_bfcl`
        if spark:
            raise InputError("--checker bfcl runs on the local engine; drop --engine spark (--chunk-size/--workers score it in chunks).")
        return None
    config = streaming_config(args)
    from extracteval.tasks.toolcalls.chunked import score_toolcalls_files

    if spark:
        if chunk_size is not None or workers != 1:
            raise InputError("--chunk-size/--workers are for the local engine; with --engine spark use --spark-partitions N.")
        if args.output:
            raise InputError("--output with --engine spark is not supported for toolcalls yet (no per-record rows); drop --output.")
        from extracteval.io.scale_options import spark_session
        from extracteval.tasks.toolcalls.spark import toolcalls_spark_job

        job = toolcalls_spark_job(spark_session(args), args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer,
                                  partitions=args.spark_partitions)
        return chunked_document(job.run().result, job.inputs, possible_answer=job.task.possible_answer)
    result, inputs, possible = score_toolcalls_files(
        args.truth[0], args.predictions, config=config, possible_answer=args.possible_answer,
        chunk_size=100_000 if chunk_size is None else chunk_size, workers=workers, output=args.output,
    )
    return chunked_document(result, inputs, possible_answer=possible)




def _write_output(out: Path, doc: dict[str, Any], records: dict[str, Any] | None) -> None:
    from extracteval.io.decision_options import write_records
    from extracteval.io.outputs import staged_folder

    with staged_folder(out) as staging:
        (staging / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        if records is not None:  # else the chunked engine streamed records.parquet while scoring
            write_records(staging, tuple(records["columns"]), records["matrices"], records["ids"], records["extra"])
