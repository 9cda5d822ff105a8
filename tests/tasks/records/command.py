"""`extracteval score records`: whole-record exact match."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_delimiter_argument, add_result_arguments

HELP = "whole-record exact match: the share of records whose every field is right"
DESCRIPTION = """\
Score one or more models' records against the ground truth, whole records at a time: a model is
right on a record when every field of the truth record equals its prediction's (as text, white
space around it ignored, an empty cell absent). Reports the accuracy over truth records, per
field the share of records where the field is right, and the records without a prediction
(wrong) or without a truth record (not counted).

Inputs: CSV/TSV, JSONL, JSON or Parquet tables with an `id` column and one column per field.
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="ground-truth table")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE", help="a model's predictions (repeat per model)")
    p.add_argument("--id-column", default="id", metavar="NAME", help="record id column (default: id)")
    add_delimiter_argument(p, default="',' for .csv, tab for .tsv")
    p.add_argument("--zero-division", type=float, metavar="X", help="accuracy when there are no truth records (default 0.0)")
    add_result_arguments(p, writes="result.json and field_metrics.csv")
