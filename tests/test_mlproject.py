"""MLproject, python_env.yaml, conda.yaml and the `extracteval.mlproject` entry points.

The fast tests check that the three files agree with each other, with pyproject.toml and with the
argv each entry point builds; the slow ones run `mlflow run . -e demo|evaluate --env-manager local`
for real, offline, against a temporary tracking store, and look at what it logged.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from extracteval.errors import InputError
from extracteval.mlproject import (
    config_options,
    OPTIONAL_PARAMETERS,
    CreatedRuns,
    ProjectRun,
    _experiment,
    evaluate_argv,
    main,
    parse_entry_point,
    project_record,
    split_list,
)

REPO = Path(__file__).resolve().parents[1]
MLPROJECT = yaml.safe_load((REPO / "MLproject").read_text(encoding="utf-8"))
CONTRACTS = "experiments/contracts"


def _param_default(spec: object) -> str:
    return "" if not isinstance(spec, dict) else str(spec.get("default", ""))


def test_mlproject_declares_name_environment_and_the_three_entry_points() -> None:
    assert MLPROJECT["name"] == "extracteval"
    assert MLPROJECT["python_env"] == "python_env.yaml" and (REPO / "python_env.yaml").is_file()
    assert set(MLPROJECT["entry_points"]) == {"demo", "evaluate", "leaderboard"} == set(OPTIONAL_PARAMETERS)
    ev = MLPROJECT["entry_points"]["evaluate"]["parameters"]
    assert set(ev) == {"task", "truth", "predictions"}
    assert ev["truth"] == "path"  # MLflow resolves it to an absolute path


def test_no_declared_parameter_is_recorded_with_shell_quotes() -> None:
    """What `mlflow run` logs as the project run's params: MLflow's own computation, with each
    entry point's required parameters given and nothing else (an empty default logs as '')."""
    from mlflow.projects._project_spec import load_project

    project = load_project(str(REPO))
    for name, ep in MLPROJECT["entry_points"].items():
        required = {k: "x" for k, v in ep["parameters"].items() if not isinstance(v, dict) or "default" not in v}
        logged, _extra = project.get_entry_point(name).compute_parameters(required, storage_dir=None)
        assert all(shlex.split(v) == [v] and v for v in logged.values()), f"{name}: {logged}"
        assert not set(logged) & set(OPTIONAL_PARAMETERS[name]), f"{name}: an optional parameter is declared"


def test_mlproject_comment_lists_the_optional_parameters() -> None:
    text = (REPO / "MLproject").read_text(encoding="utf-8")
    listed: dict[str, list[str]] = {}
    entry = None
    for m in re.finditer(r"^#\s+(?:(demo|evaluate|leaderboard):)?\s+(\w+)\s{2,}", text, re.M):
        entry = m.group(1) or entry
        listed.setdefault(entry, []).append(m.group(2))
    assert listed == {k: list(v) for k, v in OPTIONAL_PARAMETERS.items()}


@pytest.mark.parametrize("name", ["demo", "evaluate", "leaderboard"])
def test_each_command_uses_exactly_its_parameters_and_parses(name: str) -> None:
    ep = MLPROJECT["entry_points"][name]
    used = set(re.findall(r"\{(\w+)\}", ep["command"]))
    assert used == set(ep["parameters"]), "a parameter declared but not used, or used but not declared"
    # the command, with every parameter at its default (or a sample value), is accepted by the module
    sample = {k: _param_default(v) or f"x-{k}" for k, v in ep["parameters"].items()}
    argv = shlex.split(ep["command"].format(**{k: shlex.quote(v) for k, v in sample.items()}))
    assert argv[:3] == ["python", "-m", "extracteval.mlproject"]
    args = parse_entry_point(argv[3:])
    assert args.entry_point == name


@pytest.mark.parametrize("name", ["demo", "evaluate", "leaderboard"])
def test_optional_parameters_reach_the_module_the_way_mlflow_run_appends_them(name: str) -> None:
    """MLflow's own command building: an undeclared -P NAME=VALUE becomes `--NAME VALUE`; each
    optional parameter lands on its attribute, also when its value starts with a dash."""
    from mlflow.projects._project_spec import load_project

    ep = MLPROJECT["entry_points"][name]
    params = {k: f"x-{k}" for k in ep["parameters"]}
    params.update({k: f"--value-of-{k} 'quoted part'" for k in OPTIONAL_PARAMETERS[name]})
    command = load_project(str(REPO)).get_entry_point(name).compute_command(params, storage_dir=None)
    args = parse_entry_point(shlex.split(command)[3:])
    for k in OPTIONAL_PARAMETERS[name]:
        assert getattr(args, k) == f"--value-of-{k} 'quoted part'"


def test_an_unknown_parameter_exits_2_naming_it_and_the_known_ones(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    assert main(["evaluate", "--task", "fields", "--truth", "t", "--predictions", "a=a", "--tsk", "x"]) == 2
    err = capsys.readouterr().err
    assert "-P tsk: not a parameter of the evaluate entry point" in err
    assert "experiment, options, predictions, run_name, strategies, task, truth" in err and "Traceback" not in err


def test_leaderboard_without_an_experiment_exits_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    assert main(["leaderboard"]) == 2
    assert "-P experiment: name the experiment whose runs are ranked" in capsys.readouterr().err


def test_the_experiment_is_the_parameter_else_the_one_chosen_for_mlflow_run() -> None:
    chosen = ProjectRun(run_id="r", experiment_id="7", experiment="mine")
    fallback = ProjectRun(run_id="r", experiment_id="0", experiment="Default")
    assert _experiment("given", chosen, entry_point="evaluate") == "given"
    assert _experiment("", chosen, entry_point="evaluate") == _experiment("", chosen, entry_point="leaderboard") == "mine"
    assert _experiment("", fallback, entry_point="evaluate") == _experiment("", None, entry_point="evaluate") == "extracteval"
    for project in (fallback, None):
        with pytest.raises(InputError, match="-P experiment"):
            _experiment("", project, entry_point="leaderboard")


def test_project_record_names_experiments_runs_and_best_models() -> None:
    created = [
        CreatedRuns(experiment="d-contracts", label="contracts", parent_run_id="p1", leaderboard_run_id="l1", experiment_id="2",
                    best_model="gpt", metric="overall/f1", value=0.9),
        CreatedRuns(experiment="d-tickets", label="tickets", parent_run_id="p2", leaderboard_run_id=None, experiment_id="3"),
    ]
    record = project_record(created, command=["demo", "--only", "contracts", "--only", "tickets"])
    assert record.metrics == {"contracts/best/overall/f1": 0.9}
    tags = dict(record.tags)
    note = tags.pop("mlflow.note.content")
    assert tags == {"extracteval.command": "extracteval demo --only contracts --only tickets",
                    "extracteval.experiment": "d-contracts,d-tickets", "extracteval.parent_run_ids": "p1,p2",
                    "extracteval.leaderboard_run_ids": "l1", "extracteval.best_model.contracts": "gpt"}
    assert "[p1](#/experiments/2/runs/p1) `runs:/p1`" in note and "[l1](#/experiments/2/runs/l1)" in note
    assert "| tickets | `d-tickets` |" in note and "overall/f1 = 0.9000" in note
    one = project_record([CreatedRuns(experiment="e", leaderboard_run_id="l", best_model="m", metric="rqs/mean", value=0.5)], command=["leaderboard"])
    assert one.metrics == {"best/rqs/mean": 0.5} and one.tags["extracteval.best_model"] == "m"
    assert "extracteval.parent_run_ids" not in one.tags


def test_python_env_and_conda_describe_the_same_environment() -> None:
    py_env = yaml.safe_load((REPO / "python_env.yaml").read_text(encoding="utf-8"))
    conda = yaml.safe_load((REPO / "conda.yaml").read_text(encoding="utf-8"))
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    conda_python = next(d for d in conda["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert conda_python == f"python={py_env['python']}"
    minimum = project["requires-python"].removeprefix(">=")
    assert tuple(map(int, py_env["python"].split("."))) >= tuple(map(int, minimum.split(".")))
    pip = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict))
    # both install this package (its dependencies come from pyproject.toml, listed once)
    assert py_env["dependencies"] == ["."] and pip == ["."]


def test_predictions_split_on_commas_and_whitespace() -> None:
    assert split_list("a=x.csv, b=y.csv,,c=z.csv  d=w.csv") == ["a=x.csv", "b=y.csv", "c=z.csv", "d=w.csv"]
    assert split_list("") == []


def test_evaluate_argv_is_what_a_user_would_type() -> None:
    argv = evaluate_argv(task="fields", truth="/t.csv", predictions="a=a.csv,b=b.csv", strategies="s.yaml",
                         experiment="exp", run_name="nightly", options="--no-ci --null-tokens 'not present,-'")
    assert argv == ["evaluate", "fields", "--truth", "/t.csv", "--predictions", "a=a.csv", "--predictions", "b=b.csv",
                    "--strategies", "s.yaml", "--experiment", "exp", "--run-name", "nightly",
                    "--no-ci", "--null-tokens", "not present,-"]
    assert evaluate_argv(task="entities", truth="t", predictions="a=a", strategies="w.yaml", experiment="e")[6:8] == ["--weights", "w.yaml"]
    assert evaluate_argv(task="labels", truth="t", predictions="a=a", strategies="c.yaml", experiment="e")[6:8] == ["--config", "c.yaml"]
    # the option each task's config file goes to really exists on that task's command
    from extracteval.cli import build_parser as cli_parser

    for task, option in config_options().items():
        out = io.StringIO()
        with redirect_stdout(out), pytest.raises(SystemExit):
            cli_parser().parse_args(["evaluate", task, "--help"])
        assert re.search(rf"^\s+{option} FILE", out.getvalue(), re.M), f"{task}: no {option} FILE option"


def test_bad_parameters_are_input_errors_naming_the_parameter() -> None:
    with pytest.raises(InputError, match="-P predictions"):
        evaluate_argv(task="fields", truth="t", predictions=" , ", experiment="e")
    with pytest.raises(InputError, match="-P strategies: task 'spans' takes no configuration file"):
        evaluate_argv(task="spans", truth="t", predictions="a=a", strategies="s.yaml", experiment="e")
    with pytest.raises(InputError, match="-P options"):
        evaluate_argv(task="fields", truth="t", predictions="a=a", experiment="e", options="--x 'unclosed")


def test_a_bad_parameter_exits_2_with_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate", "--task", "spans", "--truth", "t", "--predictions", "a=a", "--strategies", "s.yaml"])
    assert code == 2
    assert "takes no configuration file" in capsys.readouterr().err


def _mlflow_cli() -> str:
    candidate = Path(sys.executable).parent / "mlflow"
    found = str(candidate) if candidate.exists() else shutil.which("mlflow")
    if not found:
        pytest.skip("the mlflow command is not installed next to this Python")
    return found


def _runs(uri: str) -> dict[str, list]:
    """Experiment name → its runs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return {e.name: client.search_runs([e.experiment_id]) for e in client.search_experiments()}


def _best(runs: list, metric: str) -> tuple[str, float]:
    """The model with the highest `metric` among the model runs, and that value."""
    scored = [(r.data.metrics[metric], r.data.tags["extracteval.model"]) for r in runs if r.data.tags.get("extracteval.role") in ("model", "single")]
    value, model = max(scored)
    return model, value


def _project_run(runs: list, entry_point: str):  # noqa: ANN202 - an mlflow Run
    (run,) = [r for r in runs if r.data.tags.get("mlflow.project.entryPoint") == entry_point]
    return run


@pytest.mark.slow
def test_mlflow_run_records_what_each_entry_point_created_offline_against_a_temp_store(tmp_path: Path) -> None:
    """Real `mlflow run … --env-manager local` of the three entry points; then the project runs
    MLflow opened are checked against what the store holds: their experiment, their params
    (no shell quotes, optional ones only when given), the run ids and headline metrics recorded."""
    from extracteval.tasks import RANKING_SPECS

    project = tmp_path / "project"
    project.mkdir()
    for name in ("MLproject", "python_env.yaml", "conda.yaml"):
        shutil.copy(REPO / name, project / name)
    for example in ("contracts", "tickets"):
        shutil.copytree(REPO / "experiments" / example, project / "experiments" / example)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    # no MLFLOW_* of this process (an earlier test may have left MLFLOW_EXPERIMENT_ID set) reaches mlflow run
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}, "MLFLOW_TRACKING_URI": uri,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           # offline: no proxy or index lookups may be needed
           "PIP_NO_INDEX": "1", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    mlflow = _mlflow_cli()

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([mlflow, "run", ".", "--env-manager", "local", *args], cwd=project, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
        try:
            stdout, stderr = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return finish(start(*args))

    # the three that touch different experiments run at the same time (the evaluate → leaderboard
    # pair in order), as three users of one store would: the store's tables are made first, once
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=uri).search_experiments()
    demo_proc = start("-e", "demo", "--experiment-name", "demo-project", "-P", "only=contracts,tickets")
    fallback_proc = start("-e", "evaluate", "-P", "task=fields", "-P", f"truth={CONTRACTS}/truth.csv",
                          "-P", f"predictions=gpt-4o-mini={CONTRACTS}/predictions/gpt-4o-mini.csv")
    try:
        predictions = f"gpt-4o-mini={CONTRACTS}/predictions/gpt-4o-mini.csv,regex-baseline={CONTRACTS}/predictions/regex-baseline.csv"
        run("-e", "evaluate", "--experiment-name", "contracts-mlproject", "-P", "task=fields", "-P", f"truth={CONTRACTS}/truth.csv",
            "-P", f"predictions={predictions}", "-P", f"strategies={CONTRACTS}/strategies.yaml", "-P", "run_name=reproduced")
        run("-e", "leaderboard", "--experiment-name", "contracts-mlproject", "-P", "options=--no-ci")
    finally:
        demo, fallback = finish(demo_proc), finish(fallback_proc)
    assert "Won" in demo.stdout and "logged to MLflow experiment 'extracteval-demo-contracts'" in demo.stdout
    by_exp = _runs(uri)
    assert {r.info.status for runs in by_exp.values() for r in runs} == {"FINISHED"}

    # demo: the project run in the experiment passed, one parent and one leaderboard run per example
    demo_project = _project_run(by_exp["demo-project"], "demo")
    assert demo_project.data.params == {"only": "contracts,tickets", "experiment_prefix": "extracteval-demo"}
    tags = demo_project.data.tags
    examples = ("contracts", "tickets")
    assert tags["extracteval.experiment"] == "extracteval-demo-contracts,extracteval-demo-tickets"
    parents, boards, metrics = [], [], {}
    for example in examples:
        runs = by_exp[f"extracteval-demo-{example}"]
        (parent,) = [r for r in runs if r.data.tags["extracteval.role"] == "comparison"]
        (board,) = [r for r in runs if r.data.tags["extracteval.role"] == "leaderboard"]
        parents.append(parent.info.run_id)
        boards.append(board.info.run_id)
        primary = board.data.tags["extracteval.primary_metric"]
        model, value = _best(runs, primary)
        metrics[f"{example}/best/{primary}"] = pytest.approx(value)
        assert tags[f"extracteval.best_model.{example}"] == model
        assert f"[{parent.info.run_id}](#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}) `runs:/{parent.info.run_id}`" in tags["mlflow.note.content"]
    assert tags["extracteval.parent_run_ids"] == ",".join(parents)
    assert tags["extracteval.leaderboard_run_ids"] == ",".join(boards)
    assert demo_project.data.metrics == metrics
    assert tags["extracteval.command"] == "extracteval demo --experiment-prefix extracteval-demo --only contracts --only tickets"

    # evaluate: everything in the experiment passed to mlflow run; only the parameters given are recorded
    runs = by_exp["contracts-mlproject"]
    ev = {r.info.run_name: r for r in runs if r.data.tags.get("extracteval.role") in ("comparison", "model")}
    assert set(ev) == {"reproduced", "reproduced/gpt-4o-mini", "reproduced/regex-baseline"}
    child = ev["reproduced/gpt-4o-mini"]
    assert child.data.tags["mlflow.parentRunId"] == ev["reproduced"].info.run_id
    assert child.data.tags["extracteval.task"] == "fields" and 0 < child.data.metrics["overall/f1"] <= 1
    assert child.data.params["strategies"].count("FUZZY") == 1  # the strategies file was applied (parties)
    ev_project = _project_run(runs, "evaluate")
    assert ev_project.data.params == {"task": "fields", "truth": f"{CONTRACTS}/truth.csv", "predictions": predictions,
                                      "strategies": f"{CONTRACTS}/strategies.yaml", "run_name": "reproduced"}
    assert ev_project.data.tags["extracteval.experiment"] == "contracts-mlproject"
    assert ev_project.data.tags["extracteval.parent_run_ids"] == ev["reproduced"].info.run_id
    primary = RANKING_SPECS["fields"].primary
    model, value = _best([r for r in runs if r.data.tags.get("mlflow.parentRunId") == ev["reproduced"].info.run_id], primary)
    assert ev_project.data.metrics == {f"best/{primary}": pytest.approx(value)} and ev_project.data.tags["extracteval.best_model"] == model

    # leaderboard: ranks the two model runs (not the project runs beside them) and names its run
    (board,) = [r for r in runs if r.data.tags.get("extracteval.role") == "leaderboard"]
    assert board.data.tags["extracteval.compared_count"] == "2"
    lb_project = _project_run(runs, "leaderboard")
    assert lb_project.data.params == {"options": "--no-ci"}
    assert lb_project.data.tags["extracteval.leaderboard_run_ids"] == board.info.run_id
    assert lb_project.data.tags["extracteval.experiment"] == "contracts-mlproject"
    primary = board.data.tags["extracteval.primary_metric"]
    winner = MlflowClient(tracking_uri=uri).get_run(board.data.tags["extracteval.compared_runs"].split(",")[0])
    assert winner.data.tags["extracteval.model"] == board.data.tags["extracteval.winner"]
    assert lb_project.data.metrics == {f"best/{primary}": pytest.approx(winner.data.metrics[primary])}  # every digit
    assert board.data.metrics["Main/best"] == round(winner.data.metrics[primary], 4)

    # no --experiment-name: the project run is in MLflow's Default, the evaluation in `extracteval`, and the output says so
    fb_project = _project_run(by_exp["Default"], "evaluate")
    (single,) = by_exp["extracteval"]
    assert fb_project.data.tags["extracteval.experiment"] == "extracteval"
    assert fb_project.data.tags["extracteval.parent_run_ids"] == single.info.run_id
    assert f"project run {fb_project.info.run_id} is in experiment 'Default'; the runs it created are in 'extracteval'" in fallback.stderr
    assert "no --experiment-name was given" in fallback.stderr
    assert "extracteval.leaderboard_run_ids" not in fb_project.data.tags and "extracteval.parent_run_ids" not in lb_project.data.tags
