"""`extracteval compare-models`: baseline vs candidate decision on a scored result.

Reads an output folder written by `extracteval score structured|toolcalls … --output DIR`
(`result.json` + `records.jsonl`, the per-record counts), computes the gap
baseline − candidate on a metric, the verdict and a paired-bootstrap interval of the gap.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extracteval.core import strict_json
from extracteval.io.decision_options import add_decision_arguments, make_decision, read_records

HELP = "baseline vs candidate: metric gap, fine-tuning verdict and its bootstrap interval"
DESCRIPTION = """\
Decide whether a candidate model (e.g. a small local model) needs fine-tuning to match a
baseline (e.g. a large hosted model): gap = baseline − candidate on a metric (default: the
task's primary metric, field_f1 for structured, call_accuracy for toolcalls);
gap > 0.15 → "fine-tuning recommended", 0.05–0.15 → "moderate", < 0.05 → "minimal"
(thresholds configurable), with the paired-bootstrap 95% interval of the gap. The verdict is
settled when both ends of the interval fall in the gap's band; otherwise it reads "not settled
— leaning … (…)", and fine-tuning is recommended only when the verdict is settled.

The input is an output folder of `extracteval score structured|toolcalls … --output DIR`.
The same decision is available directly with `--baseline/--candidate` on those commands.

example:
  extracteval score toolcalls --truth calls.jsonl --predictions llm=llm.jsonl \\
      --predictions slm=slm.jsonl --output out/
  extracteval compare-models --result out/ --baseline llm --candidate slm --metric call_accuracy
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--result", required=True, metavar="DIR", help="output folder of `extracteval score … --output DIR`")
    add_decision_arguments(p, required=True)
    p.add_argument("--json", action="store_true", help="print the decision as one JSON document")




def run(args: argparse.Namespace) -> int:
    from extracteval.core.decision import render_decision

    task, columns, matrices, zero_division = read_records(Path(args.result))
    d = make_decision(task, columns, matrices, args, zero_division=zero_division)
    if args.json:
        sys.stdout.write(strict_json.dumps({"task": task, "decision": d.to_dict()}, indent=2, ensure_ascii=False))
        sys.stdout.write("\n")
    else:
        print(render_decision(d.to_dict()))
    return 0
