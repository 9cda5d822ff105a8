"""`extracteval score structured`: JSON generation track: raw outputs vs reference JSON."""

from __future__ import annotations

import argparse

from extracteval.io.decision_track import add_track_arguments

HELP = "JSON outputs vs reference JSON: validity, exact match, flattened field P/R/F1"
DESCRIPTION = """\
Score raw model outputs (strings) against reference JSON documents.

Inputs are JSONL (or JSON array / CSV / Parquet) records keyed by `id`: the truth file holds the
reference in `reference` (or `expected`, `truth`), given as an object or a JSON string; each
prediction file holds the raw output in `output` (or `prediction`, `response`).

Metrics: json_valid_rate (fenced ```json blocks and leading prose tolerated, reported as
json_extracted_rate), exact_match_rate (canonical JSON), field_precision/recall/f1 over flattened
paths (user.name, items[0]); a wrong value counts FP + FN.

example:
  extracteval score structured --truth truth.jsonl \\
      --predictions llm=llm.jsonl --predictions slm=slm.jsonl \\
      --baseline llm --candidate slm --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", required=True, metavar="FILE", help="reference JSON per record (id + reference)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE", help="a model's raw outputs (id + output); repeat per model")
    p.add_argument("--list-matching", choices=("positional", "optimal"), default="positional", help="align list items by position (default) or by optimal assignment")
    p.add_argument("--value-match", choices=("exact", "normalized"), default="exact", help="compare leaves as canonical JSON (default) or normalised values")
    add_track_arguments(p)


