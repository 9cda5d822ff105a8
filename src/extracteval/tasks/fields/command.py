"""`extracteval score fields`: document metadata extraction, field by field."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_bootstrap_arguments, add_normalization_arguments, add_result_arguments
from extracteval.io.scale_options import spark_session
from extracteval.report.console import json_default, print_result

HELP = "field-level P/R/F1/accuracy per model, field winners and ranking"
DESCRIPTION = """\
Score one or more models' field extractions against ground truth.

Inputs are CSV/TSV, JSONL, JSON or Parquet, wide (id + one column per field, optional
`status` ok/pending/error) or long (id, field, value[, model][, status]); Kleister
key=value TSV files are read as well (pass --keys in.tsv.xz for the keys asked).

example:
  extracteval score fields --truth truth.csv \\
      --predictions gpt=gpt.csv --predictions llama=llama.csv --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="ground-truth file")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's predictions (repeat for several models); a bare FILE takes names from its `model` column or file name")
    p.add_argument("--strategies", metavar="FILE", help='JSON/YAML: {"field": "EXACT|FUZZY|IGNORE", …} or {"strategies": {…}, "fuzzy_threshold": …}')
    p.add_argument("--id-column", default="id", metavar="NAME", help="record id column (default: id)")
    p.add_argument("--delimiter", metavar="CHAR", help="CSV delimiter (default: ',' for .csv, tab for .tsv)")
    p.add_argument("--keys", metavar="FILE", help="Kleister in.tsv(.xz): document names and the keys asked of each")
    p.add_argument("--fields", metavar="A,B", help="score only these fields")
    p.add_argument("--fuzzy-threshold", type=float, metavar="X", help="FUZZY match threshold (default 0.85)")
    add_normalization_arguments(p)
    p.add_argument("--zero-division", type=float, metavar="X", help="value of an undefined ratio (default 0.0)")
    p.add_argument("--no-ci", action="store_true", help="skip bootstrap confidence intervals")
    add_bootstrap_arguments(p, defaults=False)
    add_result_arguments(p, writes="result.json, per-field CSV and per-record Parquet")




def run(args: argparse.Namespace) -> int:
    from extracteval.tasks.fields.options import build_config, chosen_fields, load_inputs
    from extracteval.tasks.fields.semantics import score_fields
    from extracteval.errors import InputError

    config = build_config(args)
    fields = chosen_fields(args)
    engine = getattr(args, "engine", "local")
    chunk_size = getattr(args, "chunk_size", None)
    workers = getattr(args, "workers", 1)
    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    safe_csv = getattr(args, "safe_csv", True)
    if engine == "spark" or chunk_size is not None or workers > 1:
        # these engines stream records.parquet while scoring: into the staging folder, so an
        # interrupted run leaves no half-written Parquet in --output
        with _staged(args.output) as staging:
            records_path = staging / "records.parquet" if staging is not None else None
            if engine == "spark":
                result, inputs = _score_spark(args, records_path)
            else:
                result, inputs = _score_chunked(args, 100_000 if chunk_size is None else chunk_size, workers, records_path)
            doc = result.to_dict()
            doc["inputs"] = inputs
            if staging is not None:
                write_files(result, doc, staging, records_written=True, safe_csv=safe_csv)
    else:
        truth, preds, truth_source = load_inputs(args)
        result = score_fields(truth, preds, config=config, fields=fields, truth_source=truth_source)
        doc = result.to_dict()
        doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
        if args.output:
            write_outputs(result, doc, Path(args.output), safe_csv=safe_csv)
    from extracteval.tasks.fields.report import render_fields

    print_result(doc, as_json=args.json, render=lambda d: render_fields(d, use_colour=sys.stdout.isatty()), output=args.output,
                 written=("result.json", "field_metrics.csv", "records.parquet"))
    return 0


@contextmanager
def _staged(output: str | None) -> Iterator[Path | None]:
    if not output:
        yield None
        return
    from extracteval.io.outputs import staged_folder

    with staged_folder(Path(output)) as staging:
        yield staging


def _score_chunked(args: argparse.Namespace, chunk_size: int, workers: int, records_path: Path | None) -> tuple[Any, dict[str, Any]]:
    """The chunked engine: files streamed by id, chunks scored (in `workers` processes), ledgers
    merged, per-record rows streamed to --output/records.parquet."""
    from dataclasses import replace

    from extracteval.chunked import run_chunks
    from extracteval.tasks.fields.chunks import args_chunk_job

    job = args_chunk_job(args, chunk_size=chunk_size)
    result, _ = run_chunks(replace(job.task, keep_records=records_path is not None), job.chunks, workers=workers, records_path=records_path)
    return result, job.inputs


def _score_spark(args: argparse.Namespace, records_path: Path | None) -> tuple[Any, dict[str, Any]]:
    """The Spark engine; the per-record rows written to --output/records.parquet by Spark."""
    from extracteval.tasks.fields.spark import args_spark_job

    job = args_spark_job(args, spark_session(args))
    run = job.run()
    if records_path is not None:
        run.records.write.mode("overwrite").parquet(str(records_path))
    return run.result, job.inputs


def write_outputs(result: Any, doc: dict[str, Any], out: Path, *, safe_csv: bool = True) -> None:
    """result.json, field_metrics.csv (one row per model and field) and records.parquet, written
    to a staging folder and moved into `out` only when complete."""
    from extracteval.io.outputs import staged_folder

    with staged_folder(out) as staging:
        write_files(result, doc, staging, safe_csv=safe_csv)


def write_files(result: Any, doc: dict[str, Any], out: Path, *, records_written: bool = False, safe_csv: bool = True) -> None:
    """The output files, into an existing (staging) folder; records.parquet is skipped when the
    chunked and Spark engines already streamed it there (`records_written`)."""
    import pandas as pd

    from extracteval.io.outputs import write_csv

    (out / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=json_default), encoding="utf-8")
    rows = []
    for m in result.ranking:
        for f, fm in result.models[m].fields.items():
            d = fm.to_dict()
            d.pop("examples")
            d["flags"] = ";".join(d["flags"])
            rows.append({"model": m, "field": f, **d})
    write_csv(pd.DataFrame(rows), out / "field_metrics.csv", safe=safe_csv)
    if result.records is not None and not records_written:
        result.records.to_frame().to_parquet(out / "records.parquet", index=False)
