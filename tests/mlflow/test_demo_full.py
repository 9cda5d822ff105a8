"""`extracteval demo` end to end, every example, into a temp SQLite store: per experiment one
comparison (parent) run, one child per model, the leaderboard run, all FINISHED, and the printed
list of report.html and PNG files (each one a file of the store). Run a second time, every task's
earlier runs keep their metric histories and its leaderboard ranks the new runs only.

The first demo is the session's `demo_run` (tests/fixtures/tracking.py), which the run descriptions
and the browser test read too; the second runs on a copy of its database.

Measured on the shared 2-core development machine: 24 s in pytest (load average ~7), 69 s as a
fresh `extracteval demo` process under load average ~20 (13 s of CPU either way); hence `slow`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from extracteval.io.config import load_mapping

from tests.fixtures.tracking import REPO

pytestmark = pytest.mark.slow


def _expected() -> dict[str, tuple[str, int]]:
    """experiment name → (example, number of models), as the demo names them."""
    out = {}
    for spec_path in sorted((REPO / "experiments").glob("*/experiment.yaml")):
        spec = load_mapping(spec_path)
        name = spec.get("name", spec_path.parent.name)
        if "tracks" in spec:  # one experiment per track (structured+toolcalls)
            for track, t in spec["tracks"].items():
                out[f"extracteval-demo-{name}-{track}"] = (name, len(t["predictions"]))
        else:
            out[f"extracteval-demo-{name}"] = (name, len(spec["predictions"]))
    return out


def test_full_demo_logs_every_example_with_its_leaderboard(demo_run):
    # `extracteval demo --experiments experiments --tracking-uri URI`, run in demo_run.root
    code, out, err, uri, tmp_path = demo_run.code, demo_run.out, demo_run.err, demo_run.uri, demo_run.root
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    client = MlflowClient(uri)
    expected = _expected()
    found = {e.name for e in client.search_experiments()} - {"Default"}
    assert found == set(expected)
    for exp_name, (example, n_models) in expected.items():
        exp = client.get_experiment_by_name(exp_name)
        runs = client.search_runs([exp.experiment_id])
        by_role: dict[str, list] = {}
        for r in runs:
            by_role.setdefault(r.data.tags.get("extracteval.role"), []).append(r)
        assert set(by_role) == {"comparison", "model", "leaderboard"}, (exp_name, set(by_role))
        (parent,) = by_role["comparison"]
        assert len(by_role["model"]) == n_models
        assert {c.data.tags["mlflow.parentRunId"] for c in by_role["model"]} == {parent.info.run_id}
        assert len(by_role["leaderboard"]) >= 1
        assert all(r.info.status == "FINISHED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]
        leaderboard = by_role["leaderboard"][0]
        compared = set(leaderboard.data.tags["extracteval.compared_runs"].split(","))
        assert compared == {c.info.run_id for c in by_role["model"]}
        key = leaderboard.data.tags["extracteval.leaderboard_key"]
        assert all(c.data.metrics[f"{key}/rank"] >= 1 for c in by_role["model"])
        # the closing list: this example's report and figures, files of the store in tmp
        listed = [Path(p) for p in re.findall(rf"^  {re.escape(example)}(?: \([a-z]+\))?: (\S+)$", out, re.M)]
        listed = [p for p in listed if parent.info.run_id in p.parts]
        assert any(p.name == "report.html" for p in listed), (exp_name, listed)
        assert any(p.suffix == ".png" for p in listed), (exp_name, listed)
        for p in listed:
            assert p.is_file() and p.stat().st_size > 0 and p.resolve().is_relative_to(tmp_path.resolve())


def _copy_store(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite database (SQLite's own backup, not a file copy)."""
    import sqlite3

    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()


def test_full_demo_twice_leaves_the_first_runs_unchanged(cli, demo_run, tmp_path, monkeypatch):
    from .test_demo_repeated import _snapshot

    # the first demo: the session's, on a copy of its database (the second must not change the
    # store other tests read); the runs the second adds keep their artifacts beside that store,
    # in its experiments' artifact folders, under new run ids
    assert demo_run.code == 0, demo_run.err[-3000:]
    monkeypatch.chdir(tmp_path)
    _copy_store(demo_run.root / "mlflow.db", tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    snaps = [_snapshot(client, [e.experiment_id for e in client.search_experiments() if e.name != "Default"])]
    code, out, err = cli("demo", "--experiments", str(REPO / "experiments"), "--tracking-uri", uri)
    assert code == 0, err[-3000:]
    snaps.append(_snapshot(client, [e.experiment_id for e in client.search_experiments() if e.name != "Default"]))
    first, second = snaps
    assert {r["role"] for r in first.values()} == {"comparison", "model", "leaderboard"}
    superseded = ("extracteval.superseded_by", "extracteval.superseded_in")
    for rid, was in first.items():  # unchanged, but a model run is tagged with the run that superseded it
        now = second[rid]
        assert {**now, "tags": {k: v for k, v in now["tags"].items() if k not in superseded}} == was, (rid, was["role"])
        if was["role"] == "model":
            assert second[now["tags"]["extracteval.superseded_by"]]["tags"]["extracteval.model"] == was["tags"]["extracteval.model"]
    for rid, r in second.items():
        if rid in first or r["role"] != "leaderboard":
            continue
        compared = set(r["tags"]["extracteval.compared_runs"].split(","))
        fresh = {x for x, y in second.items() if x not in first and y["role"] == "model" and y["experiment"] == r["experiment"]}
        replaced = {x for x, y in second.items() if y["tags"].get("extracteval.superseded_in") == rid}
        assert compared == fresh and len(replaced) == len(fresh) and all(x in first for x in replaced)
