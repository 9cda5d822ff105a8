"""`extracteval score entities`: lists of entities per record, optimally aligned."""

from __future__ import annotations

import argparse

from extracteval.io.common_options import add_normalization_arguments, add_result_arguments, add_similarity_arguments

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
    p.add_argument("--zero-division", type=float, metavar="X",
                   help="value of an undefined ratio (a denominator of 0): a number in [0, 1], or nan: undefined, left out of every average (default 0.0)")
    add_result_arguments(p, writes="result.json and feature_metrics.csv")
