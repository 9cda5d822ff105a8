"""`extracteval leaderboard`: rank the model runs of an MLflow experiment (latest run per model by default)."""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from extracteval.core import strict_json
from extracteval.io.common_options import experiment_name, add_bootstrap_arguments, add_tracking_uri_argument
from extracteval.io.outputs import add_safe_csv_argument

HELP = "rank the model runs of an MLflow experiment (latest per model): tie-breaks, field winners, fairness, intervals"
DESCRIPTION = """\
Rank the model runs of an MLflow experiment from the tracking store (runs logged by
`extracteval evaluate`, the evaluator plugin or `extracteval demo`, on any day and machine).
Runs are read with one search_runs call; parent comparison runs and earlier leaderboard runs are
skipped. Runs scored against different ground truth or config (different truth/config digests)
are not ranked together: the command refuses, naming the groups, unless --group-by-truth.

Repeated runs: within each truth/config group only the latest run of each model name (the
run's extracteval.model tag, else its run name; latest by start time) is ranked, so a model
evaluated every night is ranked once, not against its own earlier runs. The earlier runs are
listed as superseded, with the run id of the run ranked in their place. --all-runs ranks every
run (a repeated model name then gets the first 8 characters of its run id).

Ranking keys (fields): overall (macro) F1, overall precision, overall recall, total field wins,
model name. Other tasks use their primary metric and tie-breaks (see the documentation: Leaderboard). Intervals:
paired bootstrap over the shared record ids of the runs' per-record Parquet artifacts; adjacent
runs whose difference interval lies wholly above 0 are "significantly different", those whose
interval has a bound of exactly 0 "borderline", the others "not significantly different".

Unless --no-log, the CSV/JSON/HTML/PNG outputs are logged to a new leaderboard run in the same
experiment (tagged with the compared run ids; its metrics: the winner's score and interval,
Main/best…, and its margin over the runner-up, Main/margin… and Main/significant), and every
ranked run gets its rank and item wins as leaderboard/rank and leaderboard/field_wins: one column
in the MLflow runs table, whose metric history holds the run's rank in every leaderboard (step n
= the experiment's n-th leaderboard). A run left out because a later run of the same model
superseded it gets the tag extracteval.superseded_by (that run's id); its metrics stay as they were.

examples:
  extracteval leaderboard --experiment contracts
  extracteval leaderboard --experiment contracts --filter "params.fuzzy_threshold = '0.85'" --json
  extracteval leaderboard --experiment contracts --group-by-truth --output out/lb --no-log
  extracteval leaderboard --experiment contracts --all-runs --no-log
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experiment", type=experiment_name, required=True, metavar="NAME", help="MLflow experiment whose runs are ranked")
    p.add_argument("--filter", metavar="EXPR", help="MLflow search filter AND-ed to the run selection (e.g. \"params.seed = '0'\")")
    p.add_argument("--task", metavar="TASK", help="rank runs of this task only (needed when the experiment holds several)")
    p.add_argument("--metric", metavar="KEY", help="rank by this metric key instead of the task's primary metric (e.g. micro/f1)")
    p.add_argument("--group-by-truth", action="store_true", help="rank each (truth digest, config digest) group separately instead of refusing")
    p.add_argument("--all-runs", action="store_true",
                   help="rank every run, not only the latest run of each model per truth/config group (earlier runs are otherwise listed as superseded)")
    p.add_argument("--json", action="store_true", help="print the leaderboard as one JSON document")
    p.add_argument("--output", metavar="DIR", help="write leaderboard.csv, field_winners.csv, leaderboard.json, leaderboard.html, figures/*.png here")
    p.add_argument("--no-log", action="store_true", help="do not create a leaderboard run nor write ranks and wins to the ranked runs")
    p.add_argument("--no-ci", action="store_true", help="skip the bootstrap intervals (no artifact downloads)")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG charts")
    p.add_argument("--slice", metavar="COLUMN=VALUE",
                   help="rank on the records of one slice (runs logged with --slice-by: their metrics recomputed from the per-record counts); "
                        "printed, not logged")
    p.add_argument("--cluster-by", dest="cluster_by", metavar="COLUMN",
                   help="intervals resample whole clusters of this record-metadata column (runs logged with it as metadata)")
    add_safe_csv_argument(p)
    add_bootstrap_arguments(p)
    add_tracking_uri_argument(p)


def run(args: argparse.Namespace) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    from extracteval.errors import InputError
    from extracteval.io.outputs import staged_folder
    from extracteval.mlflow.tracking_leaderboard import build_tracking_leaderboard, log_leaderboard, write_outputs
    from extracteval.report.leaderboard_views import render_terminal

    if args.resamples < 1:
        raise InputError(f"--resamples: expected a positive integer, but got {args.resamples}.")
    from extracteval.mlflow.run_slices import parse_slice

    selector = parse_slice(getattr(args, "slice", None))
    if selector is not None:  # a slice's ranking is a view: the runs' leaderboard ranks stay those of the whole evaluation
        args.no_log = True
    result = build_tracking_leaderboard(
        experiment=args.experiment, tracking_uri=args.tracking_uri, filter_string=args.filter, task=args.task, metric=args.metric,
        group_by_truth=args.group_by_truth, ci=not args.no_ci, resamples=args.resamples, seed=args.seed, all_runs=args.all_runs,
        slice_on=selector, cluster_by=getattr(args, "cluster_by", None),
    )
    temporary = args.output is None and not args.no_log
    out = Path(args.output) if args.output else (Path(tempfile.mkdtemp(prefix="extracteval-leaderboard-")) if temporary else None)
    try:
        if out is not None:
            write_outputs(result, out, figures=not args.no_figures, safe_csv=args.safe_csv)
        if not args.json:  # the table first: it is computed whatever happens to the logging
            print(render_terminal(result.to_dict(), use_colour=sys.stdout.isatty()))
            if args.output:
                print(f"\noutputs: {args.output}")
        if not args.no_log:
            try:
                result = log_leaderboard(result, out)
            except Exception as e:  # noqa: BLE001 - the store failed; the ranking itself is done
                from extracteval.mlflow.upload import diagnose

                reason, advice = diagnose(e, result.tracking_uri or "")
                print(f"extracteval: error: Logging the leaderboard to {result.tracking_uri} failed: {reason}. "
                      "The ranking above is complete" + (f" (outputs kept in {args.output})" if args.output else "") + ". "
                      + advice.replace("run: {cmd}", "run the same command again, or pass --no-log to skip the logging") + ".",
                      file=sys.stderr)
                return 1
            if args.output:  # the local copy carries the run id too
                with staged_folder(out) as staging:  # replaces leaderboard.json only, and whole
                    (staging / "leaderboard.json").write_text(strict_json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    finally:
        if temporary and out is not None:
            shutil.rmtree(out, ignore_errors=True)
    if args.json:
        sys.stdout.write(strict_json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
        sys.stdout.write("\n")
    elif result.leaderboard_run_id:
        n_sup = sum(len(g.superseded) for g in result.leaderboard.groups)
        print(f"leaderboard run {result.leaderboard_run_id} in experiment {args.experiment!r}; "
              f"{result.leaderboard_key}/rank and {result.leaderboard_key}/field_wins written to the "
              f"{sum(len(g.entries) for g in result.leaderboard.groups)} ranked run(s) at step {result.leaderboard_step}"
              + (f", {n_sup} superseded run(s) tagged extracteval.superseded_by" if n_sup else "") + "; no earlier value changed")
    return 0


# how `run` names the leaderboard run it logged: the closing line of the table, or the JSON document's key
_LEADERBOARD_RUN_PRINTED = re.compile(r"^leaderboard run ([0-9a-f]{32}) in experiment |\"leaderboard_run_id\": \"([0-9a-f]{32})\"", re.M)


@dataclass(frozen=True, kw_only=True)
class LeaderboardCall:
    """Exit code of one `extracteval leaderboard …` and the leaderboard run it logged (None when none)."""

    exit_code: int
    leaderboard_run_id: str | None


def call_leaderboard(argv: Sequence[str]) -> LeaderboardCall:
    """Run `extracteval leaderboard ARGV…` exactly as the command line does (its output shown as it
    comes) and read the id of the leaderboard run from what it prints."""
    from contextlib import redirect_stdout

    from extracteval.commands.runner import main

    echo = _Echo(sys.stdout)
    with redirect_stdout(echo):
        code = main(["leaderboard", *argv])
    found = _LEADERBOARD_RUN_PRINTED.search(echo.text())
    return LeaderboardCall(exit_code=code, leaderboard_run_id=next((g for g in found.groups() if g), None) if found and code == 0 else None)


class _Echo(io.TextIOBase):
    """A stdout that writes through and keeps a copy; a terminal stays a terminal (colours)."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._copy = io.StringIO()

    def write(self, s: str) -> int:
        self._copy.write(s)
        return self._target.write(s)

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def text(self) -> str:
        return self._copy.getvalue()
