"""`extracteval demo` logs every example to the local store (no server) and prints the leaderboard."""

from __future__ import annotations

import re

from mlflow.tracking import MlflowClient

from tests.fixtures.tracking import REPO


def test_demo_logs_each_example_as_parent_and_children(contracts_demo):
    # `extracteval demo --experiments experiments --only contracts`, run from the empty folder
    # contracts_demo.root: the default store is ./mlflow.db in the working directory
    code, out, err, tmp_path = contracts_demo.code, contracts_demo.out, contracts_demo.err, contracts_demo.root
    assert code == 0, err
    assert "#1" in out and "Won" in out  # the leaderboard
    assert "mlflow ui --backend-store-uri sqlite:///" in out
    assert (tmp_path / "mlflow.db").is_file() and (tmp_path / "mlartifacts").is_dir()
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("extracteval-demo-contracts")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("extracteval.role") == "comparison"]
    children = [r for r in runs if r.data.tags.get("extracteval.role") == "model"]
    assert len(parents) == 1 and len(children) == 3
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parents[0].info.run_id}
    ids = set(re.findall(r"run ([0-9a-f]{32})", out))
    assert ids == {r.info.run_id for r in runs}
    assert all("wins/field_wins" in c.data.metrics for c in children)
    # the experiment's description is the example's, as experiment.yaml gives it
    assert exp.tags["mlflow.note.content"].startswith("Contract metadata extraction (`fields` task): 60 contracts")


def test_demo_without_mlflow_logs_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("demo", "--experiments", str(REPO / "experiments"), "--no-mlflow")
    assert code == 0, err
    assert "#1" in out and not (tmp_path / "mlflow.db").exists()
