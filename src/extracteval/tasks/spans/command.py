"""`extracteval score spans`: span / NER evaluation, exact and relaxed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from extracteval.io.common_options import add_bootstrap_arguments, add_result_arguments
from extracteval.tasks.spans.options import load_corpus, scheme_name, spans_config
from extracteval.report.console import print_result

HELP = "span/NER P/R/F1: exact (conlleval-equal) and relaxed matching, curve, error breakdown"
DESCRIPTION = """\
Score one or more models' spans against gold spans.

Inputs:
  --conll [NAME=]FILE   token file, one token per line, last two columns gold and predicted tag,
                        blank line = sentence break, -DOCSTART- ignored (repeat for several models)
  --truth FILE --predictions NAME=FILE …
                        JSONL: {"id", "text"?, "gold": [{"start","end","tag"}]} and
                        {"id", "pred": [...]} (character offsets, end exclusive); or token files
                        whose last column is the gold / predicted tag

Matching: exact (same start, end, tag; equals conlleval.pl in the default conlleval scheme) and
relaxed (same tag, overlapping, 0.65·IoU + 0.35·TextSim ≥ threshold; TextSim = rapidfuzz
fuzz.ratio / 100 of the span texts), both one-to-one by optimal assignment.

--chunk-size N [--workers K] streams the inputs: JSONL documents sorted by id, N at a time, or
token files N sentences at a time (cut only at sentence breaks); the result is the in-memory one.

example:
  extracteval score spans --conll output.txt
  extracteval score spans --truth gold.jsonl --predictions gpt=gpt.jsonl --predictions llama=llama.jsonl --json
"""

def configure(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("inputs")
    src.add_argument("--conll", action="append", metavar="[NAME=]FILE", help="token file with gold and predicted tags in the last two columns (repeatable)")
    src.add_argument("--truth", metavar="FILE", help="gold spans: JSONL, or a token file whose last column is the gold tag")
    src.add_argument("--predictions", action="append", metavar="NAME=FILE", help="a model's predictions, same format as --truth (repeatable)")
    p.add_argument("--scheme", default="conlleval", metavar="NAME", type=scheme_name,
                   help="tag decoding for token files: conlleval (default; reproduces conlleval.pl), IOB2, IOE2, IOBES, BILOU (strict: ill-formed chunks dropped and counted)")
    p.add_argument("--suffix", action="store_true", help="token tags are TYPE-PREFIX (NP-B) instead of PREFIX-TYPE (B-NP)")
    p.add_argument("--threshold", type=float, default=0.5, metavar="X", help="main relaxed threshold (default 0.5; 0.5 and 0.8 are always reported)")
    p.add_argument("--iou-weight", type=float, default=0.65, metavar="W", help="weight of IoU in the relaxed score (default 0.65; TextSim gets 1 − W)")
    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    p.add_argument("--examples", type=int, default=5, metavar="N", help="examples kept per error kind (default 5)")
    p.add_argument("--no-ci", action="store_true", help="skip bootstrap confidence intervals")
    add_bootstrap_arguments(p, resampled=" of documents")
    add_result_arguments(p, writes="result.json, tag_metrics.csv and f1_vs_threshold.png")


def score(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from extracteval.tasks.spans.semantics import score_spans

    chunk_size, workers = getattr(args, "chunk_size", None), getattr(args, "workers", 1)
    if chunk_size is not None or workers != 1 or getattr(args, "engine", "local") != "local":
        return _score_chunked(args, chunk_size, workers)
    corpus = load_corpus(args)
    result = score_spans(corpus, config=spans_config(args, corpus.unit))
    return result, result.to_dict()


def _score_chunked(args: argparse.Namespace, chunk_size: int | None, workers: int) -> tuple[Any, dict[str, Any]]:
    """--chunk-size / --workers (docs/scale.md): JSONL documents streamed by id, token files
    streamed N sentences at a time; --engine spark: JSONL documents. The same jobs `evaluate spans`
    streams (`tasks.spans.chunked.spans_chunk_job`, `tasks.spans.spark.spans_spark_job`)."""
    from extracteval.errors import InputError

    if workers < 1:
        raise InputError(f"Expected --workers to be ≥ 1, but got {workers}.")
    if getattr(args, "engine", "local") == "spark":
        from extracteval.tasks.spans.options import check_token_inputs

        if check_token_inputs(args):
            raise InputError("--engine spark reads JSONL span files; score token files with --chunk-size/--workers, or in memory.")
        if chunk_size is not None or workers != 1:
            raise InputError("--chunk-size/--workers are for the local engine; with --engine spark use --spark-partitions N.")
        from extracteval.io.scale_options import spark_session
        from extracteval.tasks.spans.spark import spans_spark_job

        result = spans_spark_job(spark_session(args), args).run().result
        return result, result.to_dict()
    from extracteval.chunked import run_chunks
    from extracteval.tasks.spans.chunked import spans_chunk_job

    job = spans_chunk_job(args, chunk_size=100_000 if chunk_size is None else chunk_size)
    result, _ = run_chunks(job.task, job.chunks, workers=workers)
    return result, result.to_dict()


def run(args: argparse.Namespace) -> int:
    from extracteval.tasks.spans.report import render_spans

    result, doc = score(args)
    if args.output:
        write_outputs(result, doc, Path(args.output), safe_csv=getattr(args, "safe_csv", True))
    print_result(doc, as_json=args.json, render=lambda d: render_spans(d, use_colour=sys.stdout.isatty()), output=args.output,
                 written=("result.json", "tag_metrics.csv", "f1_vs_threshold.png"), default=None)
    return 0


def write_outputs(result: Any, doc: dict[str, Any], out: Path, *, safe_csv: bool = True) -> None:
    """result.json, tag_metrics.csv (one row per model, mode and tag) and f1_vs_threshold.png."""
    import csv

    from extracteval.io.outputs import safe_csv_row, staged_folder

    with staged_folder(out) as staging:
        (staging / "result.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        with open(staging / "tag_metrics.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            row = safe_csv_row if safe_csv else list
            w.writerow(["model", "mode", "tag", "precision", "recall", "f1", "support", "tp", "fp", "fn"])
            for m in result.ranking:
                ms = result.models[m]
                for mode in [ms.exact, *ms.relaxed.values()]:
                    for tag, tm in mode.per_tag.items():
                        w.writerow(row([m, mode.mode, tag, tm.precision, tm.recall, tm.f1, tm.support, tm.tp, tm.fp, tm.fn]))
                    mi = mode.micro
                    w.writerow(row([m, mode.mode, "(micro)", mi.precision, mi.recall, mi.f1, mi.support, mi.tp, mi.fp, mi.fn]))
        if any(doc["models"][m].get("curve") for m in doc["ranking"]):
            from extracteval.tasks.spans.figures import curve_figure

            curve_figure(doc).savefig(staging / "f1_vs_threshold.png")
