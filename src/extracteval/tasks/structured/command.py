"""`extracteval score structured`: JSON generation track: raw outputs vs reference JSON."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_result_arguments

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


def add_track_arguments(p: argparse.ArgumentParser) -> None:
    """The options `score structured` and `score toolcalls` share: zero division, the extended
    metrics, progress, the baseline-vs-candidate decision, output and scale."""
    from extracteval.io.decision_options import add_decision_arguments
    from extracteval.report.live_progress import add_progress_argument

    p.add_argument("--zero-division", type=float, default=0.0, metavar="X", help="value of an undefined ratio (default 0.0)")
    add_extended_arguments(p)
    add_progress_argument(p)
    add_decision_arguments(p)
    add_result_arguments(p, writes="result.json and records.jsonl (per-record counts)", safe_csv=False)


def add_extended_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantic-similarity", action="store_true", help="also score with the `embedding` similarity backend (pass ≥ threshold)")
    p.add_argument("--llm-judge", action="store_true", help="also score with the `llm_judge` backend (1–7 rubric / 7, pass ≥ threshold)")
    p.add_argument("--similarity-option", action="append", default=[], metavar="KEY=VALUE", help="option passed to the similarity backends (repeatable)")
    p.add_argument("--pass-threshold", type=float, default=0.85, metavar="X", help="pass mark of the extended metrics (default 0.85)")
