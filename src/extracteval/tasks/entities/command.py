"""`extracteval score entities`: lists of entities per record, optimally aligned."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_normalization_arguments, add_result_arguments, add_similarity_arguments
from extracteval.tasks.entities.options import build_config, judge_counts, streaming_similarity  # noqa: F401
from extracteval.report.console import print_result

HELP = "multi-entity extraction: optimal entity alignment, entity P/R/F1, per-feature metrics"
DESCRIPTION = """\
Score one or more models' entity lists (invoice line items, parties, products) against ground
truth. Per record, predicted and gold entities are aligned by optimal one-to-one assignment on
a weighted per-field similarity (pairs below --match-threshold stay unmatched). Reported:

  entity_detection_summary  predicted_count, gold_count, matched_count, extra_predictions_count,
                            missed_gold_count, precision_entities, recall_entities, f1_entities
  matched                   per-feature metrics and row accuracy on matched pairs only
  strict                    the same with every missed or extra entity counted as an error

Models are ranked on the strict view, so matching few entities well cannot win.

Inputs: JSONL, one record per line: {"id": "INV-1", "entities": [{"description": …}, …]}
(also a JSON array of such records, a JSON object {id: [entities]}, or Parquet).

--weights FILE is JSON/YAML, either {field: weight} or {"weights": {…}, "strategies":
{"description": "FUZZY"}, "types": {…}, "key_fields": […], "match_threshold": 0.5,
"fuzzy_threshold": 0.85, "semantic_threshold": 0.8, "similarity": "lexical"}.

SEMANTIC fields use the `json` task's similarity backends: the offline `lexical` one by default
(TF-IDF character n-grams: lexical, not semantic). `--similarity llm_judge` needs
--judge-base-url/--judge-model (or EXTRACTEVAL_JUDGE_BASE_URL / EXTRACTEVAL_JUDGE_MODEL, key in
EXTRACTEVAL_JUDGE_API_KEY); `--similarity embedding` needs --embedding-model (a local
sentence-transformers folder).

example:
  extracteval score entities --truth truth.jsonl --predictions gpt=gpt.jsonl \\
      --predictions llama=llama.jsonl --key-fields description,amount --weights weights.yaml --json
"""

def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="ground-truth entities (JSONL/JSON/Parquet)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's predicted entities (repeat per model); a bare FILE is named after its file name")
    p.add_argument("--key-fields", metavar="A,B", help="fields the alignment similarity uses (default: weighted fields, else all)")
    p.add_argument("--weights", metavar="FILE", help="JSON/YAML alignment weights and options (see above)")
    p.add_argument("--strategies", metavar="FILE", help='JSON/YAML: {"field": "EXACT|FUZZY|SEMANTIC|IGNORE", …}')
    p.add_argument("--features", metavar="A,B", help="score only these entity fields (default: every field of a gold entity)")
    p.add_argument("--match-threshold", type=float, metavar="X", help="minimum weighted similarity of a matched pair (default 0.5)")
    p.add_argument("--fuzzy-threshold", type=float, metavar="X", help="FUZZY value counts as correct at ≥ X (default 0.85)")
    p.add_argument("--semantic-threshold", type=float, metavar="X", help="SEMANTIC value counts as correct at ≥ X (default 0.80)")
    add_similarity_arguments(p)
    p.add_argument("--entities-key", default="entities", metavar="NAME", help="key of the entity list in each record (default: entities)")
    p.add_argument("--id-column", default="id", metavar="NAME", help="record id key (default: id)")
    add_normalization_arguments(p, null_meaning="missing")
    p.add_argument("--zero-division", type=float, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_result_arguments(p, writes="result.json and feature_metrics.csv")


def score(args: argparse.Namespace, *, records_path: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """The result and its document; with --chunk-size/--workers (`chunked(args)`) per-record rows
    are streamed to `records_path` while scoring."""
    from extracteval.tasks.entities.semantics import score_entities
    from extracteval.core.similarity import get_similarity
    from extracteval.tasks.entities.inputs import load_entities_inputs

    from extracteval.io.scale_options import scale_engine

    config, sim_name, sim_opts = build_config(args)
    engine = scale_engine(args)
    # an unknown name or option lists the valid ones
    backend = get_similarity(sim_name, **sim_opts) if engine == "memory" else streaming_similarity(sim_name, sim_opts)
    if engine == "spark":
        from extracteval.io.scale_options import spark_session
        from extracteval.tasks.entities.spark import entities_spark_job

        job = entities_spark_job(spark_session(args), args.truth, args.predictions, config=config, similarity=backend, id_column=args.id_column,
                                 entities_key=args.entities_key, partitions=args.spark_partitions)
        result = job.run().result
        doc = result.to_dict()
        doc["inputs"] = job.inputs
        return result, doc
    if engine == "chunked":
        from extracteval.tasks.entities.chunked import score_entities_files

        chunk_size = getattr(args, "chunk_size", None)
        result, inputs = score_entities_files(
            args.truth, args.predictions, config=config, similarity=backend, chunk_size=100_000 if chunk_size is None else chunk_size,
            workers=args.workers, id_column=args.id_column, entities_key=args.entities_key, records_path=records_path,
        )
        doc = result.to_dict()
        doc["inputs"] = inputs
        return result, doc
    truth, preds, truth_source = load_entities_inputs(args.truth, args.predictions, id_column=args.id_column, entities_key=args.entities_key)
    result = score_entities(truth, preds, config=config, truth_source=truth_source, similarity=backend)
    doc = result.to_dict()
    judge_counts(doc, backend)
    doc["inputs"] = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
    return result, doc


def chunked(args: argparse.Namespace) -> bool:
    """A streaming engine was asked for (docs/scale.md): --chunk-size / --workers, or --engine
    spark (which writes no records.parquet: --output is refused with it)."""
    from extracteval.io.scale_options import scale_engine
    from extracteval.errors import InputError

    engine = scale_engine(args)
    if engine == "spark" and getattr(args, "output", None):
        raise InputError("--output with --engine spark is not supported for the entities task (no per-record rows from Spark); drop --output.")
    return engine != "memory"


def run(args: argparse.Namespace) -> int:
    from extracteval.tasks.labels.command import write_files
    from extracteval.io.outputs import staged_folder

    if chunked(args):
        if args.output:
            # records.parquet is streamed into the staging folder: an interrupted run leaves none in --output
            with staged_folder(Path(args.output)) as staging:
                result, doc = score(args, records_path=staging / "records.parquet")
                write_files(doc, staging, views=("matched", "strict"), safe_csv=getattr(args, "safe_csv", True))
        else:
            result, doc = score(args)
    else:
        result, doc = score(args)
        if args.output:
            with staged_folder(Path(args.output)) as staging:
                write_files(doc, staging, views=("matched", "strict"), safe_csv=getattr(args, "safe_csv", True))
                _write_records(result, staging)
    from extracteval.tasks.entities.report import render_entities

    print_result(doc, as_json=args.json, render=lambda d: render_entities(d, use_colour=sys.stdout.isatty()), output=args.output,
                 written=("result.json", "feature_metrics.csv", "records.parquet"), default=str)
    return 0


def _write_records(result: Any, out: Path) -> None:
    """records.parquet: per model and record, gold / predicted / matched / fully correct pairs."""
    import pandas as pd

    frames = [result.models[m].records_frame().assign(model=m) for m in result.ranking]
    pd.concat(frames, ignore_index=True).to_parquet(out / "records.parquet", index=False)
