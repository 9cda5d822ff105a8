"""`extracteval compare`: baseline run vs candidate run from the tracking store."""

from __future__ import annotations

import argparse
import sys

from extracteval.core import strict_json
from extracteval.io.common_options import experiment_name, add_bootstrap_arguments, add_tracking_uri_argument

HELP = "baseline run vs candidate run from the tracking store: gap, verdict, paired interval"
DESCRIPTION = """\
Decide between two logged runs: gap = baseline − candidate on a metric (default: the task's
primary metric, the one the leaderboard ranks by, e.g. overall/f1 for fields);
gap > 0.15 → "fine-tuning recommended", 0.05–0.15 → "moderate", < 0.05 → "minimal"
(thresholds configurable). The paired-bootstrap 95% interval of the gap is computed from the
runs' per-record Parquet artifacts over the record ids both runs share. The verdict is settled
when both ends of the interval fall in the gap's band; otherwise it reads "not settled —
leaning … (…)", and fine-tuning is recommended only when the verdict is settled. Runs scored
against different ground truth are refused (unless --allow-different-truth).

RUN is a run id, or a run name / model name with --experiment.

examples:
  extracteval compare --baseline 5c1e…0a --candidate 9f3b…d2
  extracteval compare --experiment contracts --baseline gpt-4o-mini --candidate llama-3.1-8b --metric micro/f1 --json
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", required=True, metavar="RUN", help="the reference run (e.g. the hosted LLM)")
    p.add_argument("--candidate", required=True, metavar="RUN", help="the run under decision (e.g. the local SLM)")
    p.add_argument("--metric", metavar="KEY", help="metric key of the gap (default: the task's primary metric)")
    p.add_argument("--experiment", type=experiment_name, metavar="NAME", help="look RUN up by run name or model name in this experiment")
    p.add_argument("--recommend-threshold", type=float, default=0.15, metavar="X", help="gap above which fine-tuning is recommended (default 0.15)")
    p.add_argument("--moderate-threshold", type=float, default=0.05, metavar="X", help="gap from which the difference is moderate (default 0.05)")
    add_bootstrap_arguments(p)
    p.add_argument("--allow-different-truth", action="store_true", help="compare runs scored against different ground truth (no interval)")
    p.add_argument("--json", action="store_true", help="print the decision as one JSON document")
    p.add_argument("--slice", metavar="COLUMN=VALUE", help="the gap on one slice's records (runs logged with --slice-by), recomputed from their per-record counts")
    p.add_argument("--cluster-by", dest="cluster_by", metavar="COLUMN", help="the interval resamples whole clusters of this record-metadata column")
    add_tracking_uri_argument(p)


def run(args: argparse.Namespace) -> int:
    from extracteval.core.decision import DecisionThresholds
    from extracteval.errors import InputError
    from extracteval.mlflow.compare import compare_runs
    from extracteval.mlflow.run_slices import parse_slice

    if args.resamples < 1:
        raise InputError(f"--resamples: expected a positive integer, but got {args.resamples}.")
    res = compare_runs(
        baseline=args.baseline, candidate=args.candidate, metric=args.metric, experiment=args.experiment, tracking_uri=args.tracking_uri,
        thresholds=DecisionThresholds(recommend=args.recommend_threshold, moderate=args.moderate_threshold),
        resamples=args.resamples, seed=args.seed, allow_different_truth=args.allow_different_truth,
        slice_on=parse_slice(getattr(args, "slice", None)), cluster_by=getattr(args, "cluster_by", None),
    )
    if args.json:
        sys.stdout.write(strict_json.dumps(res.to_dict(), indent=2, ensure_ascii=False))
        sys.stdout.write("\n")
        return 0
    from extracteval.core.decision import render_decision

    print(render_decision(res.to_dict()))
    for n in res.notes:
        print(f"note: {n}")
    return 0
