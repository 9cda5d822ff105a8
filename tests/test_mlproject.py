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
from extracteval.mlproject import CONFIG_OPTION, build_parser, evaluate_argv, main, split_list

REPO = Path(__file__).resolve().parents[1]
MLPROJECT = yaml.safe_load((REPO / "MLproject").read_text(encoding="utf-8"))
CONTRACTS = "experiments/contracts"


def _param_default(spec: object) -> str:
    return "" if not isinstance(spec, dict) else str(spec.get("default", ""))


def test_mlproject_declares_name_environment_and_the_three_entry_points() -> None:
    assert MLPROJECT["name"] == "extracteval"
    assert MLPROJECT["python_env"] == "python_env.yaml" and (REPO / "python_env.yaml").is_file()
    assert set(MLPROJECT["entry_points"]) == {"demo", "evaluate", "leaderboard"}
    ev = MLPROJECT["entry_points"]["evaluate"]["parameters"]
    assert {"task", "truth", "predictions", "strategies", "experiment"} <= set(ev)
    assert ev["truth"] == "path"  # MLflow resolves it to an absolute path


@pytest.mark.parametrize("name", ["demo", "evaluate", "leaderboard"])
def test_each_command_uses_exactly_its_parameters_and_parses(name: str) -> None:
    ep = MLPROJECT["entry_points"][name]
    used = set(re.findall(r"\{(\w+)\}", ep["command"]))
    assert used == set(ep["parameters"]), "a parameter declared but not used, or used but not declared"
    # the command, with every parameter at its default (or a sample value), is accepted by the module
    sample = {k: _param_default(v) or f"x-{k}" for k, v in ep["parameters"].items()}
    argv = shlex.split(ep["command"].format(**{k: shlex.quote(v) for k, v in sample.items()}))
    assert argv[:3] == ["python", "-m", "extracteval.mlproject"]
    args = build_parser().parse_args(argv[3:])
    assert args.entry_point == name


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

    for task, option in CONFIG_OPTION.items():
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


def _runs(uri: str) -> list[tuple[str, object]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return [(e.name, r) for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]


@pytest.mark.slow
def test_mlflow_run_demo_and_evaluate_offline_against_a_temp_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("MLproject", "python_env.yaml", "conda.yaml"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(REPO / CONTRACTS, project / CONTRACTS)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    # no MLFLOW_* of this process (an earlier test may have left MLFLOW_EXPERIMENT_ID set) reaches mlflow run
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}, "MLFLOW_TRACKING_URI": uri, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           # offline: no proxy or index lookups may be needed
           "PIP_NO_INDEX": "1", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    mlflow = _mlflow_cli()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([mlflow, "run", ".", "--env-manager", "local", *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    demo = run("-e", "demo", "-P", "only=contracts")
    assert "Won" in demo.stdout and "logged to MLflow experiment 'extracteval-demo-contracts'" in demo.stdout
    run("-e", "evaluate", "-P", "task=fields", "-P", f"truth={CONTRACTS}/truth.csv",
        "-P", f"predictions=gpt-4o-mini={CONTRACTS}/predictions/gpt-4o-mini.csv,regex-baseline={CONTRACTS}/predictions/regex-baseline.csv",
        "-P", f"strategies={CONTRACTS}/strategies.yaml", "-P", "experiment=contracts-mlproject", "-P", "run_name=reproduced")

    run("-e", "leaderboard", "-P", "experiment=contracts-mlproject")

    runs = _runs(uri)
    by_exp: dict[str, list] = {}
    for exp, r in runs:
        by_exp.setdefault(exp, []).append(r)
    demo_runs = by_exp["extracteval-demo-contracts"]
    # the demo logs the example (a comparison run and one child per model) and then its cross-run leaderboard
    assert sorted(r.data.tags["extracteval.role"] for r in demo_runs) == ["comparison", "leaderboard", "model", "model", "model"]
    ev = {r.info.run_name: r for r in by_exp["contracts-mlproject"] if r.data.tags.get("extracteval.role") in ("comparison", "model")}
    assert set(ev) == {"reproduced", "reproduced/gpt-4o-mini", "reproduced/regex-baseline"}
    child = ev["reproduced/gpt-4o-mini"]
    assert child.data.tags["mlflow.parentRunId"] == ev["reproduced"].info.run_id
    assert child.data.tags["extracteval.task"] == "fields" and 0 < child.data.metrics["overall/f1"] <= 1
    assert child.data.params["strategies"].count("FUZZY") == 1  # the strategies file was applied (parties)
    # the two project runs MLflow opened are finished and point at the evaluation experiments
    project_runs = [r for r in by_exp["Default"]]
    expected = ["contracts-mlproject", "contracts-mlproject", "extracteval-demo-contracts"]
    assert sorted(r.data.tags.get("extracteval.experiment") for r in project_runs) == expected
    assert {r.info.status for _, r in runs} == {"FINISHED"}
