"""End to end over HTTP against a real `mlflow server`: evaluate → leaderboard (logged, written
back) → compare → rescore, everything read back with MlflowClient."""

from __future__ import annotations

import csv
import json
import re

import pytest
from mlflow.tracking import MlflowClient

from tests.fixtures.tracking import CONTRACTS

RUN_LINE = re.compile(r"run ([0-9a-f]{32})  (comparison \(parent\)|model (.+))")


def _artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for a in client.list_artifacts(run_id, path):
        out |= _artifact_paths(client, run_id, a.path) if a.is_dir else {a.path}
    return out


@pytest.fixture(scope="module")
def evaluated(mlflow_server, tmp_path_factory):
    """The contracts example (3 models) logged to the server once for the module."""
    from extracteval.cli import main

    tmp = tmp_path_factory.mktemp("lb-server")
    argv = [
        "evaluate", "fields", "--truth", str(CONTRACTS / "truth.csv"),
        "--predictions", f"gpt-4o-mini={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}",
        "--predictions", f"llama-3.1-8b={CONTRACTS / 'predictions' / 'llama-3.1-8b.csv'}",
        "--predictions", f"regex-baseline={CONTRACTS / 'predictions' / 'regex-baseline.csv'}",
        "--strategies", str(CONTRACTS / "strategies.yaml"), "--resamples", "100", "--no-figures",
        "--experiment", "lb-server", "--tracking-uri", mlflow_server.url, "--output", str(tmp / "bundle"),
    ]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    children = {m.group(3): m.group(1) for m in RUN_LINE.finditer(buf.getvalue()) if m.group(3)}
    assert len(children) == 3
    return mlflow_server.url, children, tmp


def test_leaderboard_logged_and_written_back(cli, evaluated, tmp_path):
    url, children, _ = evaluated
    code, out, err = cli("leaderboard", "--experiment", "lb-server", "--tracking-uri", url, "--json", "--resamples", "200")
    assert code == 0, err
    doc = json.loads(out)
    ranking = doc["ranking"]
    assert {e["model"]: e["run_id"] for e in ranking} == children
    assert [e["rank"] for e in ranking] == [1, 2, 3]
    assert all(e["ci"] is not None for e in ranking) and len(doc["comparisons"]) == 2  # from the runs' records.parquet
    lb_run = doc["leaderboard_run_id"]
    client = MlflowClient(url)
    key = doc["leaderboard_key"]
    for e in ranking:
        run = client.get_run(e["run_id"])
        assert run.data.metrics[f"{key}/rank"] == e["rank"]
        assert run.data.metrics[f"{key}/field_wins"] == pytest.approx(e["field_wins"])
        # the evaluation's own wins (the same three models scored together) are left as logged
        assert [m.value for m in client.get_metric_history(e["run_id"], "wins/field_wins")] == [pytest.approx(e["field_wins"])]
        assert run.data.tags["extracteval.leaderboard_run"] == lb_run and run.data.tags["extracteval.leaderboard_step"] == str(doc["leaderboard_step"])
    lb = client.get_run(lb_run)
    assert lb.info.status == "FINISHED"
    assert lb.data.tags["extracteval.role"] == "leaderboard"
    assert set(lb.data.tags["extracteval.compared_runs"].split(",")) == set(children.values())
    assert lb.data.tags["extracteval.winner"] == ranking[0]["model"]
    arts = _artifact_paths(client, lb_run)
    assert {"leaderboard/leaderboard.csv", "leaderboard/field_winners.csv", "leaderboard/leaderboard.json", "leaderboard/leaderboard.html",
            "leaderboard/figures/overall.png", "leaderboard/figures/item_heatmap.png"} <= arts
    assert not [a for a in arts if ".extracteval-output" in a]  # the folder's marker stays local
    # a second leaderboard skips the first leaderboard run and the parent comparison run
    code, out, err = cli("leaderboard", "--experiment", "lb-server", "--tracking-uri", url, "--json", "--no-log", "--no-ci")
    assert code == 0, err
    again = json.loads(out)
    assert again["n_runs"] == 3 and [e["model"] for e in again["ranking"]] == [e["model"] for e in ranking]


def test_compare_two_logged_runs(cli, evaluated):
    url, children, _ = evaluated
    code, out, err = cli("compare", "--baseline", children["gpt-4o-mini"], "--candidate", children["llama-3.1-8b"], "--tracking-uri", url,
                         "--json", "--resamples", "200")
    assert code == 0, err
    d = json.loads(out)
    assert d["baseline"] == "gpt-4o-mini" and d["ci"] is not None and d["n_records"] == 60
    assert d["ci"]["low"] <= d["gap"] <= d["ci"]["high"]


def test_rescore_creates_linked_run(cli, evaluated, tmp_path):
    url, children, _ = evaluated
    rid = children["gpt-4o-mini"]
    code, out, err = cli("rescore", "--run", rid, "--truth", str(CONTRACTS / "truth.csv"), "--tracking-uri", url)
    assert code == 0, err
    assert "unchanged" in out and "nothing to rescore" in out
    rows = list(csv.reader((CONTRACTS / "truth.csv").open(encoding="utf-8")))
    header = rows[0]
    col = header.index("contract_type")
    rows[1][col] = "Edited Agreement"  # the truth of one record is corrected
    edited = tmp_path / "truth-edited.csv"
    with edited.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    code, out, err = cli("rescore", "--run", rid, "--truth", str(edited), "--tracking-uri", url, "--json", "--no-figures")
    assert code == 0, err
    res = json.loads(out)
    assert not res["skipped"] and res["new_run_id"]
    client = MlflowClient(url)
    new = client.get_run(res["new_run_id"])
    old = client.get_run(rid)
    assert new.data.tags["extracteval.rescored_from"] == rid
    assert new.data.tags["extracteval.truth_digest"] != old.data.tags["extracteval.truth_digest"]
    assert new.data.tags["extracteval.config_digest"] == old.data.tags["extracteval.config_digest"]  # same configuration
    assert new.info.experiment_id == old.info.experiment_id
    assert res["new"]["overall/f1"] == pytest.approx(new.data.metrics["overall/f1"])
    # gpt predicted the original contract type of that record: one TP became FP+FN
    assert new.data.metrics["field/contract_type/tp"] == old.data.metrics["field/contract_type/tp"] - 1
    assert new.data.metrics["field/contract_type/fp"] == old.data.metrics["field/contract_type/fp"] + 1
    # the rescored run is scored against other truth: the leaderboard refuses to mix it in
    code, out, err = cli("leaderboard", "--experiment", "lb-server", "--tracking-uri", url, "--no-log", "--no-ci")
    assert code == 2 and "refusing to rank" in err and "(rescored)" in err
