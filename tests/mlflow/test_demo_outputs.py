"""`extracteval demo` ends by listing the HTML reports and PNG figures it logged and what to look at
in the MLflow UI, and builds each experiment's cross-run leaderboard when the command exists."""

from __future__ import annotations

import re
from pathlib import Path

from mlflow.tracking import MlflowClient

from extracteval.cli import COMMANDS



def test_demo_lists_reports_and_figures_and_says_what_to_look_at(contracts_demo):
    # `extracteval demo --experiments experiments --only contracts` from the empty folder
    # contracts_demo.root, without MLFLOW_TRACKING_URI (the default store there)
    code, out, err, tmp_path = contracts_demo.code, contracts_demo.out, contracts_demo.err, contracts_demo.root
    assert code == 0, err
    listed = re.findall(r"^  contracts: (\S+)$", out, re.M)
    assert any(p.endswith("/extracteval/report.html") for p in listed)
    assert any(p.endswith("/figures/field_f1.png") for p in listed)
    for path in listed:  # the local store keeps the artifacts as files: every listed one exists
        assert Path(path).is_file() and Path(path).stat().st_size > 0
        assert Path(path).resolve().is_relative_to(tmp_path.resolve())
    # the hint names the headline keys every task has, then the example task's own keys
    assert "In the MLflow UI" in out and "Main/rank" in out and "Main/gap_to_next" in out and "overall/f1" in out
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("extracteval-demo-contracts")
    runs = client.search_runs([exp.experiment_id])
    if "leaderboard" in COMMANDS:  # issue 8: one leaderboard run besides the parent and three children
        assert "== leaderboard of extracteval-demo-contracts" in out
        assert len(runs) >= 5
    else:
        assert "`extracteval leaderboard` is not in this version" in out
        assert len(runs) == 4

