"""`extracteval score fields`: document metadata extraction, field by field."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_delimiter_argument, add_bootstrap_arguments, add_normalization_arguments, add_result_arguments

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
    add_delimiter_argument(p, default="',' for .csv, tab for .tsv")
    p.add_argument("--keys", metavar="FILE", help="Kleister in.tsv(.xz): document names and the keys asked of each")
    p.add_argument("--fields", metavar="A,B", help="score only these fields")
    p.add_argument("--fuzzy-threshold", type=float, metavar="X", help="FUZZY match threshold (default 0.85)")
    add_normalization_arguments(p)
    p.add_argument("--zero-division", type=float, metavar="X", help="value of an undefined ratio (default 0.0)")
    p.add_argument("--no-ci", action="store_true", help="skip bootstrap confidence intervals")
    add_bootstrap_arguments(p, defaults=False)
    add_result_arguments(p, writes="result.json, per-field CSV and per-record Parquet")
