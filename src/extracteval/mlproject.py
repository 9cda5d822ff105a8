"""Entry points of the `MLproject`: turn `mlflow run -P key=value` parameters into `extracteval` commands.

MLflow substitutes each parameter as one shell-quoted word, so a list of models or a handful of
extra options cannot be spelled as separate arguments in `MLproject`. This module receives them
as single strings, splits them, and calls `extracteval.cli.main` with the argv a user would type:

    python -m extracteval.mlproject evaluate --task fields --truth t.csv --predictions "a=a.csv,b=b.csv" ...
      → extracteval evaluate fields --truth t.csv --predictions a=a.csv --predictions b=b.csv ...

Under `mlflow run`, MLflow has opened a project run (`$MLFLOW_RUN_ID`) in its own experiment;
the evaluation runs go to the experiment named by the parameters, and the project run is tagged
`extracteval.experiment` with it so one leads to the other.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

# the option through which each task takes its configuration file (`-P strategies=FILE`)
CONFIG_OPTION = {
    "fields": "--strategies",
    "json": "--strategies",
    "entities": "--weights",
    "labels": "--config",
}


def split_list(value: str) -> list[str]:
    """`"a=x.csv, b=y.csv"` → `["a=x.csv", "b=y.csv"]` (commas or whitespace; empty items dropped)."""
    return [item for chunk in value.split(",") for item in chunk.split() if item]


def evaluate_argv(*, task: str, truth: str, predictions: str, strategies: str = "", experiment: str,
                  run_name: str = "", options: str = "") -> list[str]:
    """The `extracteval` argv of the `evaluate` entry point."""
    from extracteval.errors import InputError

    models = split_list(predictions)
    if not models:
        raise InputError("-P predictions: expected NAME=FILE items separated by commas, found nothing.")
    argv = ["evaluate", task, "--truth", truth]
    for m in models:
        argv += ["--predictions", m]
    if strategies:
        option = CONFIG_OPTION.get(task)
        if option is None:
            raise InputError(f"-P strategies: task {task!r} takes no configuration file; "
                             f"tasks that do: {', '.join(sorted(CONFIG_OPTION))}. Pass its options with -P options=\"…\".")
        argv += [option, strategies]
    argv += ["--experiment", experiment]
    if run_name:
        argv += ["--run-name", run_name]
    return argv + _options(options)


def _options(options: str) -> list[str]:
    from extracteval.errors import InputError

    try:
        return shlex.split(options)
    except ValueError as e:
        raise InputError(f"-P options: cannot split {options!r} into arguments ({e}).") from None


def _tag_project_run(experiment: str) -> None:
    """Point the `mlflow run` project run at the experiment holding the evaluation runs."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return
    from mlflow.tracking import MlflowClient

    try:
        MlflowClient().set_tag(run_id, "extracteval.experiment", experiment)
    except Exception as e:  # the evaluation itself is logged; a missing cross-reference is not fatal
        print(f"extracteval: warning: could not tag the project run {run_id}: {e}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m extracteval.mlproject", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="entry_point", required=True)
    d = sub.add_parser("demo")
    d.add_argument("--only", default="")
    d.add_argument("--experiment-prefix", default="extracteval-demo")
    e = sub.add_parser("evaluate")
    e.add_argument("--task", required=True)
    e.add_argument("--truth", required=True)
    e.add_argument("--predictions", required=True)
    e.add_argument("--strategies", default="")
    e.add_argument("--experiment", default="extracteval")
    e.add_argument("--run-name", default="")
    e.add_argument("--options", default="")
    lb = sub.add_parser("leaderboard")
    lb.add_argument("--experiment", required=True)
    lb.add_argument("--options", default="")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from extracteval.cli import main as cli_main
    from extracteval.errors import InputError

    args = build_parser().parse_args(argv)
    try:
        if args.entry_point == "demo":
            cli = ["demo", "--experiment-prefix", args.experiment_prefix]
            only = split_list(args.only)
            for name in only:
                cli += ["--only", name]
            experiment = ",".join(f"{args.experiment_prefix}-{n}" for n in only) or f"{args.experiment_prefix}-*"
        elif args.entry_point == "evaluate":
            cli = evaluate_argv(task=args.task, truth=args.truth, predictions=args.predictions, strategies=args.strategies,
                                experiment=args.experiment, run_name=args.run_name, options=args.options)
            experiment = args.experiment
        else:
            cli = ["leaderboard", "--experiment", args.experiment, *_options(args.options)]
            experiment = args.experiment
    except InputError as err:
        print(f"extracteval: error: {err}", file=sys.stderr)
        return 2
    print("extracteval " + shlex.join(cli), file=sys.stderr, flush=True)
    code = cli_main(cli)
    if code == 0:
        _tag_project_run(experiment)
    return code


if __name__ == "__main__":
    sys.exit(main())
