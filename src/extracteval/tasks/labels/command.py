"""`extracteval score labels`: per-feature one-vs-rest classification metrics."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_delimiter_argument, add_normalization_arguments, add_result_arguments

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
    add_delimiter_argument(p, default="',' for .csv, tab for .tsv")
    p.add_argument("--features", metavar="A,B", help="score only these features (default: every truth column)")
    p.add_argument("--type", dest="types", action="append", default=[], metavar="FEATURE=TYPE",
                   help="value type of a feature: auto (default), category, text, number, date (repeatable)")
    p.add_argument("--positive-label", dest="positive_labels", action="append", default=[], metavar="FEATURE=LABEL",
                   help="report this label's one-vs-rest metrics for the feature (binary) instead of the macro average")
    p.add_argument("--labels", dest="labels", action="append", default=[], metavar="FEATURE=A,B,C",
                   help="the feature's declared classes: its macro and weighted averages are taken over exactly these (a class that occurs "
                        "nowhere counts with no support; other labels still count as errors) (repeatable)")
    p.add_argument("--multi-label", dest="multi_label", action="append", default=[], metavar="FEATURE[=SEP]",
                   help="the feature's cells are sets of labels: a list cell (a JSON list) is the set of its items, a text cell is split on SEP "
                        "(default ';'), a missing cell is the empty set; adds micro and samples averages, subset accuracy and Hamming loss (repeatable)")
    p.add_argument("--config", metavar="FILE",
                   help='JSON/YAML: {"types": {…}, "positive_labels": {…}, "labels": {feature: [classes]}, "multi_label": {feature: SEP or null}, '
                        '"null_tokens": […], "dayfirst": …, "zero_division": …}')
    add_normalization_arguments(p, null_meaning="missing")
    p.add_argument("--zero-division", type=float, metavar="X",
                   help="value of an undefined ratio (a denominator of 0): a number in [0, 1], or nan: undefined, left out of every average (default 0.0)")
    add_result_arguments(p, writes="result.json and feature_metrics.csv")
