"""`extracteval score json`: 4-phase JSON comparison and Response Quality Score."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_normalization_arguments, add_result_arguments, add_similarity_arguments

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
