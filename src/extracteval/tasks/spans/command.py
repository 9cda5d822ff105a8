"""`extracteval score spans`: span / NER evaluation, exact and relaxed."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_bootstrap_arguments, add_result_arguments
from extracteval.tasks.spans.options import REPORT_STYLES, min_overlap_percent, scheme_name

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

SemEval-2013 schemas (nervaluate's strict, exact, partial, ent_type; overall and per type) are
always in the result (`nervaluate`); --report-style nervaluate shows them.

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
                   help="tag decoding for token files: conlleval (default; reproduces conlleval.pl), IOB1, IOB2, IOE1, IOE2, IOBES, BILOU "
                        "(strict, as seqeval's strict mode: ill-formed chunks dropped and counted)")
    p.add_argument("--suffix", action="store_true", help="token tags are TYPE-PREFIX (NP-B) instead of PREFIX-TYPE (B-NP)")
    p.add_argument("--threshold", type=float, default=0.5, metavar="X", help="main relaxed threshold (default 0.5; 0.5 and 0.8 are always reported)")
    p.add_argument("--iou-weight", type=float, default=0.65, metavar="W", help="weight of IoU in the relaxed score (default 0.65; TextSim gets 1 − W)")
    p.add_argument("--min-overlap", type=min_overlap_percent, default=1.0, metavar="P",
                   help="SemEval-2013 schemas (the result's `nervaluate`): %% of a gold span's length a predicted span must overlap "
                        "to pair with it, 1–100 (default 1; nervaluate's min_overlap_percentage)")
    p.add_argument("--report-style", choices=REPORT_STYLES, default="default",
                   help="terminal report: default (conlleval layout, relaxed, curve, errors), nervaluate (the four SemEval-2013 "
                        "schemas, overall and per type) or classification (seqeval's classification_report of the exact match)")
    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    p.add_argument("--examples", type=int, default=5, metavar="N", help="examples kept per error kind (default 5)")
    p.add_argument("--no-ci", action="store_true", help="skip bootstrap confidence intervals")
    add_bootstrap_arguments(p, resampled=" of documents")
    add_result_arguments(p, writes="result.json, tag_metrics.csv and f1_vs_threshold.png")
