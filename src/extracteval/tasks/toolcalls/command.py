"""`extracteval score toolcalls`: tool-call track, generic or BFCL-compatible."""

from __future__ import annotations

import argparse

HELP = "predicted tool calls vs reference calls; BFCL-compatible checker with --checker bfcl"
DESCRIPTION = """\
Score predicted function calls against reference calls.

generic checker (default): JSONL records keyed by `id`. Truth: `calls` (or `reference`,
`expected`) holding {"name","arguments"} objects or lists of them, or `ground_truth` holding
BFCL possible answers ({func: {param: [acceptable values]}}, "" = may be omitted). Predictions:
`output` (or `result`, `response`) in any format: {"name","arguments"} (arguments an object or a
JSON string), OpenAI tool_calls, BFCL {func: {args}} / {func: "<json>"}, Python call strings
`[f(a=1), g(b="x")]` (parsed with ast, never evaluated), fenced or after prose.
Metrics: valid_call_rate, name_match_rate, args_exact_rate, args P/R/F1 over flattened argument
paths, call_accuracy; parallel calls are matched order-free by optimal assignment.

bfcl checker: the verdicts of the official BFCL AST checker on BFCL question, possible-answer
and result files (v1 and v4 layouts); repeat --questions/--truth pairs for several categories.
Irregular entries (an answer naming a function the question does not describe, a parameter map
that is not an object, …) are scored as BFCL's checker scores them and listed as warnings.
Function-calling models whose API forbids '.' in names call `a.b` as `a_b`: name them with
--underscore-to-dot NAME, so prompt and function-calling models are scored in one run.
With --chunk-size N [--workers K] the entries are checked N at a time (the same verdicts).

examples:
  extracteval score toolcalls --truth calls.jsonl --predictions llm=llm.jsonl --predictions slm=slm.jsonl
  extracteval score toolcalls --checker bfcl --questions BFCL_v4_simple_python.json \\
      --truth possible_answer/BFCL_v4_simple_python.json \\
      --predictions mymodel=BFCL_v4_simple_python_result.json --json
  extracteval score toolcalls --checker bfcl --questions simple.json --truth possible_answer/simple.json \\
      --predictions gpt=gpt_simple.json --predictions prompted=prompted_simple.json --underscore-to-dot gpt
"""


def configure(p: argparse.ArgumentParser) -> None:
    from extracteval.io.decision_track import add_track_arguments

    p.add_argument("--checker", choices=("generic", "bfcl"), default="generic", help="generic metrics (default) or BFCL-compatible verdicts")
    p.add_argument("--truth", action="append", required=True, metavar="FILE",
                   help="reference calls (generic) or a BFCL possible-answer file (bfcl; repeat with --questions for several categories)")
    p.add_argument("--questions", action="append", metavar="FILE", help="BFCL question file with the function specs (bfcl checker)")
    p.add_argument("--predictions", action="append", required=True, metavar="NAME=FILE",
                   help="a model's outputs; repeat per model (bfcl: repeat the same NAME for each category's result file)")
    p.add_argument("--underscore-to-dot", action="append", nargs="?", const="*", metavar="NAME",
                   help="bfcl: look for a described function `a.b` under the name `a_b` in the calls of model NAME (repeat per "
                        "model; without NAME: every model). Use it for models whose API forbids dots in function names, e.g. "
                        "function-calling models, and leave it off for prompt models")
    p.add_argument("--possible-answer", action="store_true", help="generic: read the truth as BFCL possible answers (automatic for a `ground_truth` key)")
    p.add_argument("--value-match", choices=("exact", "normalized"), default="exact", help="generic: compare argument leaves as canonical JSON (default) or normalised values")
    add_track_arguments(p)
