"""`extracteval score json`: 4-phase JSON comparison and Response Quality Score."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_normalization_arguments, add_result_arguments, add_similarity_arguments
from extracteval.tasks.json.options import CONFIG_KEYS, build_config, strategy_file_options  # noqa: F401
from extracteval.tasks.json.options import with_judge as _with_judge
from extracteval.report.console import json_default, print_result

HELP = "JSON outputs vs golden JSON: key buckets, completeness, hallucination, accuracy, RQS"
DESCRIPTION = """\
Score one or more models' JSON outputs against golden JSON, record by record, in
four phases (key buckets, completeness, hallucination, accuracy with per-field EXACT / FUZZY /
SEMANTIC / IGNORE strategies) and the Response Quality Score; models are ranked by mean RQS.

Inputs: JSONL with {"id", ...object...} per line, or {"id", "truth", "prediction"} per line
(then --truth may be omitted), a JSON array of such records, or the wide/long tables of the
`fields` task (CSV/TSV/Parquet). A per-record `safety_score` key/column (0-1) is optional.

SEMANTIC fields use the offline `lexical` backend by default (TF-IDF character n-grams: lexical,
not semantic). `--similarity llm_judge` needs --judge-base-url/--judge-model (or
EXTRACTEVAL_JUDGE_BASE_URL / EXTRACTEVAL_JUDGE_MODEL, key in EXTRACTEVAL_JUDGE_API_KEY);
`--similarity embedding` needs --embedding-model (a local sentence-transformers folder).

example:
  extracteval score json --truth truth.jsonl --predictions gpt=gpt.jsonl \\
      --predictions llama=llama.jsonl --strategies strategies.yaml --json
"""

def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", metavar="FILE", help="golden JSON (optional when the predictions are {id, truth, prediction} files)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's outputs (repeat per model); a bare FILE is named after its `model` key or file name")
    p.add_argument("--strategies", metavar="FILE",
                   help='JSON/YAML: {"field": "EXACT|FUZZY|SEMANTIC|IGNORE", …} or {"strategies": {…}, "fuzzy_threshold": …, "weights": {…}, …}')
    add_similarity_arguments(p)
    p.add_argument("--fuzzy-threshold", type=float, metavar="X", help="FUZZY match threshold (default 0.85)")
    p.add_argument("--semantic-threshold", type=float, metavar="X", help="SEMANTIC match threshold (default 0.80)")
    p.add_argument("--weights", metavar="K=V,…", help="RQS weights, e.g. accuracy=0.45,completeness=0.25,hallucination=0.15,safety=0.15")
    p.add_argument("--flatten", action="store_true", help="classify nested paths (a.b, items[0]) instead of top-level keys")
    p.add_argument("--id-key", default="id", metavar="NAME", help="record id key/column (default: id)")
    p.add_argument("--safety-key", metavar="NAME", help="per-record safety score key/column (default: safety_score)")
    p.add_argument("--default-safety", type=float, metavar="X", help="safety score of records without one (default 1.0)")
    add_normalization_arguments(p)
    p.add_argument("--records", choices=("auto", "all", "none"), default="auto",
                   help="per-record rows in --json: auto (up to 10,000 model×record rows), all, none")
    add_result_arguments(p, writes="result.json, field_accuracy.csv, records.parquet, buckets.parquet")


def score(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """Load, score and build the `--json` document."""
    from extracteval.tasks.json.semantics import score_json
    from extracteval.core.normalize import Normalizer
    from extracteval.core.similarity import get_similarity
    from extracteval.tasks.json.inputs import load_json_inputs

    config, sim_name, sim_opts = build_config(args)
    backend = get_similarity(sim_name, **sim_opts)
    chunked = _chunked(args, config, backend)
    if chunked is not None:
        result, doc = chunked
        return result, _with_judge(doc, backend)
    normalizer = Normalizer(config.normalization)
    truth, preds, truth_source, notes = load_json_inputs(
        args.truth, args.predictions, id_key=args.id_key, safety_key=config.safety_key, is_absent=normalizer.is_absent
    )
    result = score_json(truth, preds, config=config, similarity=backend, truth_source=truth_source)
    include = {"auto": None, "all": True, "none": False}[getattr(args, "records", "auto") or "auto"]
    doc = result.to_dict(include_records=include)
    doc["warnings"] = [*notes, *doc["warnings"]]
    doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
    return result, _with_judge(doc, backend)


def _chunked(args: argparse.Namespace, config: Any, backend: Any) -> tuple[Any, dict[str, Any]] | None:
    """--chunk-size / --workers: the chunked engine (docs/scale.md); None for the in-memory one."""
    from extracteval.errors import InputError

    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    records_mode = getattr(args, "records", "auto") or "auto"
    if getattr(args, "engine", "local") == "spark":
        if chunk_size is not None or workers != 1:
            raise InputError("--chunk-size/--workers are for the local engine; with --engine spark use --spark-partitions N.")
        if getattr(args, "output", None):
            raise InputError("--output with --engine spark is not supported for the json task yet (no per-record files); drop --output.")
        from extracteval.io.scale_options import spark_session
        from extracteval.tasks.json.spark import json_spark_job

        job = json_spark_job(spark_session(args), args.truth, args.predictions, config=config, similarity=backend, id_key=args.id_key,
                             records_mode=records_mode, partitions=args.spark_partitions)
        result, inputs = job.run().result, job.inputs
    elif chunk_size is None and workers == 1:
        return None
    else:
        from extracteval.tasks.json.chunked import score_json_files

        result, inputs = score_json_files(
            args.truth, args.predictions, config=config, similarity=backend, chunk_size=100_000 if chunk_size is None else chunk_size,
            workers=workers, id_key=args.id_key, records_mode=records_mode, output=getattr(args, "output", None),
        )
    include = {"auto": None, "all": True, "none": False}[getattr(args, "records", "auto") or "auto"]
    doc = result.to_dict(include_records=include)
    doc["inputs"] = inputs
    return result, doc


def run(args: argparse.Namespace) -> int:
    result, doc = score(args)
    if args.output:
        write_outputs(result, doc, Path(args.output), safe_csv=getattr(args, "safe_csv", True))
    from extracteval.tasks.json.terminal import render_json

    print_result(doc, as_json=args.json, render=lambda d: render_json(d, use_colour=sys.stdout.isatty()), output=args.output,
                 written=("result.json", "field_accuracy.csv", "records.parquet", "buckets.parquet"))
    return 0


def write_outputs(result: Any, doc: dict[str, Any], out: Path, *, safe_csv: bool = True) -> None:
    """result.json, field_accuracy.csv, records.parquet (per-record scores) and buckets.parquet
    (the per-record bucket listing: one row per model, record and key)."""
    from extracteval.io.outputs import staged_folder, write_csv

    with staged_folder(out) as staging:
        (staging / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=json_default), encoding="utf-8")
        write_csv(result.fields_frame(), staging / "field_accuracy.csv", safe=safe_csv)
        if hasattr(result, "records_frame"):  # else the chunked engine streamed them while scoring
            result.records_frame().to_parquet(staging / "records.parquet", index=False)
            result.cells_frame().to_parquet(staging / "buckets.parquet", index=False)
