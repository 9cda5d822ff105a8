"""`extracteval rescore`: score a logged run's predictions again against edited ground truth."""

from __future__ import annotations

import argparse
import sys

from extracteval.core import strict_json
from extracteval.io.common_options import add_delimiter_argument, add_tracking_uri_argument

HELP = "re-score a logged run's predictions against edited ground truth (new linked run)"
DESCRIPTION = """\
Re-score the predictions a model run logged (extracteval/predictions.parquet), of any task,
against a new ground-truth file, with the run's own configuration (from its
extracteval/result.json), and log the result as a new run in the same experiment tagged
`extracteval.rescored_from = <run id>`. The new truth is read as `extracteval score` reads a
truth file of the run's task (CSV/TSV, JSONL, JSON or Parquet, one record per row). When it has
the same digest as the truth the run was scored against, nothing is logged. The original run is
left as it is. Runs whose inputs were not one record per row (token files, BFCL question
files) have no predictions artifact and are refused with a message saying so.

example:
  extracteval rescore --run 3f2a…c9 --truth truth-corrected.csv
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, metavar="RUN_ID", help="the model run to rescore")
    p.add_argument("--truth", required=True, metavar="FILE", help="the edited ground truth (the formats of the task's `score --truth`, one record per row)")
    p.add_argument("--id-column", default="id", metavar="NAME", help="record id column of the truth file (default: id)")
    add_delimiter_argument(p, default="detected")
    p.add_argument("--output", metavar="DIR", help="keep the local copy of the new run's results here")
    p.add_argument("--no-figures", action="store_true", help="skip the figures of the new run")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    add_tracking_uri_argument(p)


def run(args: argparse.Namespace) -> int:
    from extracteval.mlflow.rescore import rescore_run
    from extracteval.report.terminal import percent

    res = rescore_run(run_id=args.run, truth=args.truth, tracking_uri=args.tracking_uri, id_column=args.id_column, delimiter=args.delimiter,
                      figures=not args.no_figures, output=args.output)
    if args.json:
        sys.stdout.write(strict_json.dumps(res.to_dict(), indent=2, ensure_ascii=False))
        sys.stdout.write("\n")
        return 0
    print(res.message)
    if not res.skipped and res.old_metrics is not None and res.new_metrics is not None:
        width = max((len(k) for k in res.new_metrics), default=0)
        for k, new in res.new_metrics.items():
            old = res.old_metrics.get(k)
            print(f"  {k:<{width}} {percent(old):>7} → {percent(new):>7}")
    return 0
