"""`extracteval score labels`: per-feature one-vs-rest classification metrics."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_normalization_arguments, add_result_arguments
from extracteval.tasks.labels.options import build_config
from extracteval.tasks.labels.options import chosen_features as _features
from extracteval.report.console import print_result

HELP = "per-feature one-vs-rest P/R/F1/specificity, micro accuracy and row accuracy"
DESCRIPTION = """\
Score one or more models' per-record labels (categories, text, numbers, dates), feature by
feature: one-vs-rest precision, recall, F1 and specificity per observed label, macro-averaged
(or one --positive-label per feature for binary reporting), micro accuracy, totals = mean over
features, and row accuracy (every feature right). Missing values are their own class <MISSING>.

Two views are always reported: `aligned` (rows present in truth and predictions) and `strict`
(a row missing on either side counts as an error). Models are ranked on the strict view.

Inputs: CSV/TSV, JSONL, JSON or Parquet with an `id` column and one column per feature (the
same tables as `score fields`).

example:
  extracteval score labels --truth truth.csv --predictions a=a.csv --predictions b=b.csv \\
      --type amount=number --positive-label is_fraud=yes --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="ground-truth table")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's predictions (repeat per model); a bare FILE is named after its `model` column or file name")
    p.add_argument("--id-column", default="id", metavar="NAME", help="record id column (default: id)")
    p.add_argument("--delimiter", metavar="CHAR", help="CSV delimiter (default: ',' for .csv, tab for .tsv)")
    p.add_argument("--features", metavar="A,B", help="score only these features (default: every truth column)")
    p.add_argument("--type", action="append", default=[], metavar="FEATURE=TYPE",
                   help="value type of a feature: auto (default), category, text, number, date (repeatable)")
    p.add_argument("--positive-label", action="append", default=[], metavar="FEATURE=LABEL",
                   help="report this label's one-vs-rest metrics for the feature (binary) instead of the macro average")
    p.add_argument("--config", metavar="FILE", help='JSON/YAML: {"types": {…}, "positive_labels": {…}, "null_tokens": […], "dayfirst": …, "zero_division": …}')
    add_normalization_arguments(p, null_meaning="missing")
    p.add_argument("--zero-division", type=float, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_result_arguments(p, writes="result.json and feature_metrics.csv")


def score(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from extracteval.tasks.labels.semantics import score_labels
    from extracteval.tasks.entities.inputs import load_labels_inputs

    chunked = _score_chunked(args)
    if chunked is not None:
        result, notes, inputs = chunked
    else:
        truth, preds, truth_source, notes = load_labels_inputs(args.truth, args.predictions, id_column=args.id_column, delimiter=args.delimiter)
        result = score_labels(truth, preds, config=build_config(args), features=_features(args), truth_source=truth_source)
        inputs = {"truth": truth_source, "predictions": {p.name: p.source for p in preds}}
    doc = result.to_dict()
    doc["warnings"] = notes + doc["warnings"]
    doc["inputs"] = inputs
    return result, doc


def _score_chunked(args: argparse.Namespace) -> tuple[Any, list[str], dict[str, Any]] | None:
    """--chunk-size / --workers or --engine spark (docs/scale.md): (result, notes, inputs), or
    None for the in-memory engine."""
    from extracteval.io.scale_options import scale_engine, spark_session

    engine = scale_engine(args)
    if engine == "memory":
        return None
    if engine == "spark":
        from extracteval.tasks.labels.spark import labels_spark_job

        job = labels_spark_job(spark_session(args), args.truth, args.predictions, config=build_config(args), features=_features(args),
                               id_column=args.id_column, delimiter=args.delimiter, partitions=args.spark_partitions)
        result, notes = job.run().result
        return result, notes, job.inputs
    from extracteval.tasks.labels.chunked import score_labels_files

    chunk_size = getattr(args, "chunk_size", None)
    return score_labels_files(args.truth, args.predictions, config=build_config(args), features=_features(args),
                              chunk_size=100_000 if chunk_size is None else chunk_size, workers=args.workers,
                              id_column=args.id_column, delimiter=args.delimiter)


def run(args: argparse.Namespace) -> int:
    result, doc = score(args)
    if args.output:
        write_outputs(doc, Path(args.output), safe_csv=getattr(args, "safe_csv", True))
    from extracteval.tasks.labels.report import render_labels

    print_result(doc, as_json=args.json, render=lambda d: render_labels(d, use_colour=sys.stdout.isatty()), output=args.output,
                 written=("result.json", "feature_metrics.csv"), default=str)
    return 0


def feature_rows(doc: dict[str, Any], views: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per model, view, feature and label (label `*` = the feature's headline metrics)."""
    rows = []
    for m in doc["ranking"]:
        for view in views:
            for f, fm in doc["models"][m][view]["features"].items():
                base = {"model": m, "view": view, "feature": f}
                rows.append({**base, "label": "*", "mode": fm["mode"], **{k: fm[k] for k in ("precision", "recall", "f1", "specificity", "micro_accuracy", "rows", "correct")}})
                for label, v in fm["labels"].items():
                    rows.append({**base, "label": label, "mode": "one-vs-rest", **v})
    return rows


def write_outputs(doc: dict[str, Any], out: Path, *, views: tuple[str, ...] = ("aligned", "strict"), safe_csv: bool = True) -> None:
    """result.json and feature_metrics.csv, moved into `out` only when both are complete."""
    from extracteval.io.outputs import staged_folder

    with staged_folder(out) as staging:
        write_files(doc, staging, views=views, safe_csv=safe_csv)


def write_files(doc: dict[str, Any], out: Path, *, views: tuple[str, ...] = ("aligned", "strict"), safe_csv: bool = True) -> None:
    import pandas as pd

    from extracteval.io.outputs import write_csv

    (out / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    write_csv(pd.DataFrame(feature_rows(doc, views)), out / "feature_metrics.csv", safe=safe_csv)
