"""Entry points of the `MLproject`: turn `mlflow run -P key=value` parameters into `extracteval` commands.

MLflow substitutes each parameter as one shell-quoted word, so a list of models or a handful of
extra options cannot be spelled as separate arguments in `MLproject`. This module receives them
as single strings, splits them, and runs the `extracteval` command a user would type:

    python -m extracteval.mlproject evaluate --task fields --truth t.csv --predictions "a=a.csv,b=b.csv" ...
      → extracteval evaluate fields --truth t.csv --predictions a=a.csv --predictions b=b.csv ...

MLflow records every parameter declared in `MLproject` as the word it substituted, so a declared
parameter with an empty default would read `''`. Optional parameters are therefore not declared:
`mlflow run` appends a parameter it does not know as `--name value` and records it only when it
is given (`OPTIONAL_PARAMETERS`).

Under `mlflow run`, MLflow has opened a project run (`$MLFLOW_RUN_ID`) before the command starts,
in the experiment of `--experiment-name` (else its `Default`). The evaluate and leaderboard entry
points log to that experiment unless `-P experiment=NAME` says otherwise, and when the command is
done the project run records what it created: the experiments, the parent and leaderboard run
ids, the best model's primary metric, and a description linking to those runs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def config_options() -> dict[str, str]:
    """Task → the option through which it takes its configuration file (`-P strategies=FILE`),
    for the tasks that declare one (`CONFIG_OPTION` in the task's `contract` module)."""
    from extracteval.tasks import parts

    return {task: m.CONFIG_OPTION for task, m in parts("contract").items() if getattr(m, "CONFIG_OPTION", None)}


# entry point → its parameters that MLproject does not declare (recorded only when given)
OPTIONAL_PARAMETERS = {
    "demo": ("only",),
    "evaluate": ("experiment", "strategies", "run_name", "options"),
    "leaderboard": ("experiment", "options"),
}
# where the evaluate entry point logs when neither -P experiment nor --experiment-name names an experiment
FALLBACK_EXPERIMENT = "extracteval"
# MLflow's experiment for runs whose experiment nobody chose
DEFAULT_EXPERIMENT_ID = "0"
_MAX_TAG = 8000  # MLflow's bound on a tag value


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
        declared = config_options()
        option = declared.get(task)
        if option is None:
            raise InputError(f"-P strategies: task {task!r} takes no configuration file; "
                             f"tasks that do: {', '.join(sorted(declared))}. Pass its options with -P options=\"…\".")
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


# ---------------------------------------------------------------------------------------------
# the project run


@dataclass(frozen=True, kw_only=True)
class ProjectRun:
    """The run `mlflow run` opened for this command, and the experiment it put it in."""

    run_id: str
    experiment_id: str
    experiment: str

    @property
    def experiment_chosen(self) -> bool:
        """False when MLflow fell back to its `Default` experiment (no --experiment-name given)."""
        return self.experiment_id != DEFAULT_EXPERIMENT_ID


@dataclass(frozen=True, kw_only=True)
class CreatedRuns:
    """What one entry point logged in one experiment: an example of the demo, the evaluation, or
    the leaderboard; with the best model's primary metric once read from the store."""

    experiment: str
    label: str | None = None  # the demo's example (experiment name after the prefix); None otherwise
    parent_run_id: str | None = None  # comparison run, or the only run of a one-model evaluation
    leaderboard_run_id: str | None = None
    models: Mapping[str, str] = field(default_factory=dict)  # model → run id, when known (evaluate)
    experiment_id: str | None = None
    best_model: str | None = None
    metric: str | None = None  # the primary metric key of the task
    value: float | None = None


@dataclass(frozen=True, kw_only=True)
class ProjectRecord:
    """Tags and metrics for the project run."""

    tags: Mapping[str, str]
    metrics: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"tags": dict(self.tags), "metrics": dict(self.metrics)}


def current_project_run() -> ProjectRun | None:
    """The project run of `mlflow run` ($MLFLOW_RUN_ID), or None outside `mlflow run`."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return None
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient()
        experiment_id = client.get_run(run_id).info.experiment_id
        name = client.get_experiment(experiment_id).name
    except Exception as e:  # noqa: BLE001 - the command can still run; only the cross-reference is lost
        print(f"extracteval: warning: cannot read the project run {run_id} ({' '.join(str(e).split())[:300]}); "
              "it will not record what this command creates.", file=sys.stderr)
        return None
    return ProjectRun(run_id=run_id, experiment_id=experiment_id, experiment=name)


def project_record(created: Sequence[CreatedRuns], *, command: Sequence[str]) -> ProjectRecord:
    """The project run's tags and metrics for what the command created (pure: no store access).

    Tags: `extracteval.command` (the command line run), `extracteval.experiment` (the
    experiments holding the runs, comma-separated), `extracteval.parent_run_ids` and
    `extracteval.leaderboard_run_ids` (comma-separated, when there are any),
    `extracteval.best_model` (per example for the demo: `extracteval.best_model.<example>`) and
    `mlflow.note.content` (the run's description: a table linking to each run). Metrics: the best
    model's primary metric as `best/<metric>` (demo: `<example>/best/<metric>`).
    """
    experiments = list(dict.fromkeys(c.experiment for c in created))
    tags = {"extracteval.command": shlex.join(["extracteval", *command])[:_MAX_TAG],
            "extracteval.experiment": ",".join(experiments)[:_MAX_TAG]}
    parents = [c.parent_run_id for c in created if c.parent_run_id]
    boards = [c.leaderboard_run_id for c in created if c.leaderboard_run_id]
    if parents:
        tags["extracteval.parent_run_ids"] = ",".join(parents)[:_MAX_TAG]
    if boards:
        tags["extracteval.leaderboard_run_ids"] = ",".join(boards)[:_MAX_TAG]
    metrics: dict[str, float] = {}
    for c in created:
        if c.best_model is not None:
            tags["extracteval.best_model" + (f".{c.label}" if c.label else "")] = c.best_model[:_MAX_TAG]
        if c.metric and c.value is not None:
            metrics[(f"{c.label}/" if c.label else "") + f"best/{c.metric}"] = float(c.value)
    if created:
        tags["mlflow.note.content"] = _description(created, command)[:_MAX_TAG]
    return ProjectRecord(tags=tags, metrics=metrics)


def _run_link(run_id: str | None, experiment_id: str | None) -> str:
    if not run_id:
        return "—"
    link = f"[{run_id}](#/experiments/{experiment_id}/runs/{run_id})" if experiment_id else run_id
    return f"{link} `runs:/{run_id}`"


def _description(created: Sequence[CreatedRuns], command: Sequence[str]) -> str:
    """Markdown for the run's description in the MLflow UI: one row per experiment written."""
    demo = any(c.label for c in created)
    head = (["example"] if demo else []) + ["experiment", "parent run", "leaderboard run", "best model", "primary metric"]
    lines = [f"`{shlex.join(['extracteval', *command])}` logged:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in created:
        score = f"{c.metric} = {c.value:.4f}" if c.metric and c.value is not None else "—"
        cells = ([c.label or ""] if demo else []) + [f"`{c.experiment}`", _run_link(c.parent_run_id, c.experiment_id),
                                                   _run_link(c.leaderboard_run_id, c.experiment_id), c.best_model or "—", score]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def read_headlines(created: Sequence[CreatedRuns], client: Any) -> list[CreatedRuns]:  # noqa: ANN401 - an MlflowClient
    """Each entry with its experiment id and best model read from the store: the leaderboard run's
    winner and best score when there is one, else the evaluation's winner and its primary metric.
    What cannot be read stays None."""
    from dataclasses import replace

    from extracteval.mlflow.descriptions import HEADLINE_WINNER
    from extracteval.tasks import RANKING_SPECS

    out = []
    for c in created:
        found: dict[str, Any] = {}
        try:
            if c.leaderboard_run_id:
                board = client.get_run(c.leaderboard_run_id)
                found["experiment_id"] = board.info.experiment_id
                found["best_model"] = board.data.tags.get("extracteval.winner")
                found["metric"] = board.data.tags.get("extracteval.primary_metric")
                # the winner's own metric, every digit (the board's `Main/best` keeps four)
                first = (board.data.tags.get("extracteval.compared_runs") or board.data.tags.get("extracteval.compared_runs.1") or "").split(",")[0]
                # several groups have no single winner (no tag): then no value either
                value = client.get_run(first).data.metrics.get(found["metric"]) if first and found["metric"] and found["best_model"] else None
                found["value"] = value if value is not None or not found["best_model"] else board.data.metrics.get(HEADLINE_WINNER)
            elif c.parent_run_id:
                parent = client.get_run(c.parent_run_id)
                found["experiment_id"] = parent.info.experiment_id
                model = parent.data.tags.get("extracteval.winner") or parent.data.tags.get("extracteval.model")
                spec = RANKING_SPECS.get(parent.data.tags.get("extracteval.task", ""))
                run_id = c.models.get(model) if model else None
                if spec is not None and run_id:
                    best = parent if run_id == c.parent_run_id else client.get_run(run_id)
                    found.update(best_model=model, metric=spec.primary, value=best.data.metrics.get(spec.primary))
        except Exception as e:  # noqa: BLE001 - a headline is a convenience: say why it is missing
            print(f"extracteval: warning: cannot read the results in experiment {c.experiment!r} ({' '.join(str(e).split())[:300]}).",
                  file=sys.stderr)
        out.append(replace(c, **{k: v for k, v in found.items() if v is not None}))
    return out


def record_on_project_run(project: ProjectRun, created: Sequence[CreatedRuns], command: Sequence[str]) -> ProjectRecord | None:
    """Write what the command created to the project run (one `log_batch`) and say where it all is."""
    import time

    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient()
        record = project_record(read_headlines(created, client), command=command)
        ts = int(time.time() * 1000)
        client.log_batch(project.run_id, metrics=[Metric(k, v, ts, 0) for k, v in record.metrics.items()],
                         tags=[RunTag(k, v) for k, v in record.tags.items()])
    except Exception as e:  # noqa: BLE001 - the evaluation itself is logged; a missing cross-reference is not fatal
        print(f"extracteval: warning: could not record on the project run {project.run_id}: {' '.join(str(e).split())[:300]}",
              file=sys.stderr)
        return None
    print(_where_message(project, record, list(dict.fromkeys(c.experiment for c in created))), file=sys.stderr)
    return record


def _where_message(project: ProjectRun, record: ProjectRecord, experiments: Sequence[str]) -> str:
    named = [k for k in ("extracteval.parent_run_ids", "extracteval.leaderboard_run_ids") if k in record.tags]
    msg = (f"mlflow run: project run {project.run_id} is in experiment {project.experiment!r}; the runs it created are in "
           + ", ".join(repr(e) for e in experiments)
           + f" (its tags {' and '.join(named) or 'extracteval.experiment'} name them; its description links to them).")
    if not project.experiment_chosen:
        msg += (f"\nmlflow run: {project.experiment!r} is MLflow's fallback because no --experiment-name was given; "
                "pass `mlflow run … --experiment-name NAME` to keep the project run in NAME "
                "(the evaluate and leaderboard entry points then log there too).")
    return msg


# ---------------------------------------------------------------------------------------------
# command line


class _EntryPointParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # a wrong -P: exit 2 with the parameter names, no traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"extracteval: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _EntryPointParser(prog="python -m extracteval.mlproject", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="entry_point", required=True, parser_class=_EntryPointParser)
    # each option also answers to the parameter's own name: `mlflow run` appends an undeclared
    # parameter as `--name value`
    d = sub.add_parser("demo")
    d.add_argument("--only", default="")
    d.add_argument("--experiment-prefix", "--experiment_prefix", default="extracteval-demo")
    e = sub.add_parser("evaluate")
    e.add_argument("--task", required=True)
    e.add_argument("--truth", required=True)
    e.add_argument("--predictions", required=True)
    e.add_argument("--strategies", default="")
    e.add_argument("--experiment", default="")
    e.add_argument("--run-name", "--run_name", default="")
    e.add_argument("--options", default="")
    lb = sub.add_parser("leaderboard")
    lb.add_argument("--experiment", default="")
    lb.add_argument("--options", default="")
    return p


def _value_options(parser: argparse.ArgumentParser, entry_point: str) -> set[str]:
    """The options of an entry point's sub-parser (each takes a value)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[entry_point]
    return {s for a in sub._actions if a.nargs is None and a.option_strings for s in a.option_strings}


def _glued(argv: Sequence[str], options: set[str]) -> list[str]:
    """`--options --no-ci` → `--options=--no-ci`: a parameter's value may start with a dash."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _unknown_parameters(argv: Sequence[str], options: set[str]) -> list[str]:
    """Parameters (`--name` words, after gluing) the entry point does not take."""
    names = {o.split("=", 1)[0] for o in argv if o.startswith("--")}
    return sorted(n[2:] for n in names - options - {"--help"})


def _experiment(given: str, project: ProjectRun | None, *, entry_point: str) -> str:
    """-P experiment, else the experiment of the project run when the user chose one."""
    from extracteval.errors import InputError

    if given:
        return given
    if project is not None and project.experiment_chosen:
        return project.experiment
    if entry_point == "evaluate":
        return FALLBACK_EXPERIMENT
    raise InputError("-P experiment: name the experiment whose runs are ranked (-P experiment=NAME), "
                     "or run `mlflow run … -e leaderboard --experiment-name NAME` to rank NAME.")


def parse_entry_point(argv: Sequence[str]) -> argparse.Namespace:
    """The arguments of an entry point's command as `mlflow run` spells it: the declared
    parameters where MLproject puts them, the optional ones appended as `--name value` (a value
    may start with a dash). A parameter the entry point does not take is an InputError naming it."""
    from extracteval.errors import InputError

    parser = build_parser()
    argv = list(argv)
    if argv and argv[0] in OPTIONAL_PARAMETERS:
        options = _value_options(parser, argv[0])
        argv = [argv[0], *_glued(argv[1:], options)]
        unknown = _unknown_parameters(argv[1:], options)
        if unknown:
            known = sorted({o[2:].replace("-", "_") for o in options})
            raise InputError(f"-P {', -P '.join(unknown)}: not a parameter of the {argv[0]} entry point; its parameters: {', '.join(known)}.")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run an entry point (argv as MLproject's command gives it); its exit code."""
    from extracteval.errors import InputError

    try:
        args = parse_entry_point(sys.argv[1:] if argv is None else argv)
    except InputError as err:
        print(f"extracteval: error: {err}", file=sys.stderr)
        return 2
    project = current_project_run()
    try:
        if args.entry_point == "demo":
            cli = ["demo", "--experiment-prefix", args.experiment_prefix]
            for name in split_list(args.only):
                cli += ["--only", name]
        elif args.entry_point == "evaluate":
            cli = evaluate_argv(task=args.task, truth=args.truth, predictions=args.predictions, strategies=args.strategies,
                                experiment=_experiment(args.experiment, project, entry_point="evaluate"),
                                run_name=args.run_name, options=args.options)
        else:
            cli = ["leaderboard", "--experiment", _experiment(args.experiment, project, entry_point="leaderboard"), *_options(args.options)]
    except InputError as err:
        print(f"extracteval: error: {err}", file=sys.stderr)
        return 2
    print("extracteval " + shlex.join(cli), file=sys.stderr, flush=True)
    created: list[CreatedRuns] = []
    code = RUNNERS[args.entry_point](cli, created)
    if project is not None and created:
        record_on_project_run(project, created, cli)
    return code


def _run_demo(cli: list[str], created: list[CreatedRuns]) -> int:
    """`extracteval demo …`; one entry per example (or track) logged."""
    from extracteval.cli import build_parser as cli_parser
    from extracteval.cli import run_command
    from extracteval.commands.demo import run_demo

    def run(a: argparse.Namespace) -> int:
        outcome = run_demo(a)
        created.extend(CreatedRuns(experiment=ex.experiment, label=ex.label, parent_run_id=ex.parent_run_id,
                                   leaderboard_run_id=ex.leaderboard_run_id) for ex in outcome.examples)
        return outcome.exit_code

    return run_command(run, cli_parser().parse_args(cli))


def _run_evaluate(cli: list[str], created: list[CreatedRuns]) -> int:
    """`extracteval evaluate <task> …`; the entry of its experiment once logged."""
    from extracteval.cli import build_parser as cli_parser
    from extracteval.cli import run_command
    from extracteval.commands.evaluate import evaluate_and_log

    def run(a: argparse.Namespace) -> int:
        result = evaluate_and_log(a)
        if result is None:  # the upload failed: said, local copy kept
            return 1
        created.append(CreatedRuns(experiment=a.experiment, parent_run_id=result.run_ids.get("parent") or result.run_ids.get("single"),
                                   models=dict(result.models)))
        return 0

    return run_command(run, cli_parser().parse_args(cli))


def _run_leaderboard(cli: list[str], created: list[CreatedRuns]) -> int:
    """`extracteval leaderboard …`; the entry of its leaderboard run when it logged one."""
    from extracteval.commands.leaderboard import call_leaderboard

    call = call_leaderboard(cli[1:])
    if call.leaderboard_run_id:
        created.append(CreatedRuns(experiment=cli[cli.index("--experiment") + 1], leaderboard_run_id=call.leaderboard_run_id))
    return call.exit_code


# entry point → runs its `extracteval` argv, appending what it logged
RUNNERS = {"demo": _run_demo, "evaluate": _run_evaluate, "leaderboard": _run_leaderboard}


if __name__ == "__main__":
    from extracteval.cli import leave

    leave(main())
