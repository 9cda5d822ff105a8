"""`extracteval demo` run three times against one store: every run logged by an earlier demo keeps
its metrics, metric histories and tags exactly, and each demo's leaderboard ranks one run per model
(the latest), listing the earlier ones as superseded. The first demo is the session's (every
example, `demo_run` in tests/fixtures/tracking.py), on a copy of its database; the next two run two
of its examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.fixtures.tracking import REPO

EXAMPLES = {"contracts": "extracteval-demo-contracts", "customers": "extracteval-demo-customers"}  # fields and json, 3 models each


def _snapshot(client: MlflowClient, experiment_ids: list[str]) -> dict[str, dict]:
    """run id → its metric histories (value, timestamp, step), latest values and tags."""
    out = {}
    for run in client.search_runs(experiment_ids, max_results=1000):
        rid = run.info.run_id
        out[rid] = {
            "history": {k: [(m.value, m.timestamp, m.step) for m in client.get_metric_history(rid, k)] for k in run.data.metrics},
            "latest": dict(run.data.metrics),
            "tags": dict(run.data.tags),
            "role": run.data.tags.get("extracteval.role"),
            "experiment": run.info.experiment_id,
        }
    return out


@pytest.fixture(scope="module")
def three_demos(tmp_path_factory, demo_run):
    """Three demos into one SQLite store (the session's, then two of its examples twice); a
    snapshot after each."""
    import contextlib
    import io

    from extracteval.cli import main

    from .test_demo_full import _copy_store

    assert demo_run.code == 0, demo_run.err[-3000:]
    tmp = tmp_path_factory.mktemp("demo-thrice")
    _copy_store(demo_run.root / "mlflow.db", tmp / "mlflow.db")  # the later runs' artifacts go beside the session's, under new run ids
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    argv = ["demo", "--experiments", str(REPO / "experiments"), "--tracking-uri", uri, "--experiment-prefix", "extracteval-demo"]
    for name in EXAMPLES:
        argv += ["--only", name]
    client = MlflowClient(uri)
    ids = [client.get_experiment_by_name(e).experiment_id for e in EXAMPLES.values()]
    snapshots, outputs = [_snapshot(client, ids)], [demo_run.out]
    for _ in range(2):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(argv) == 0
        outputs.append(buf.getvalue())
        snapshots.append(_snapshot(client, ids))
    return client, snapshots, outputs


SUPERSEDED_TAGS = ("extracteval.superseded_by", "extracteval.superseded_in")


def test_earlier_runs_keep_every_metric_history_and_tag(three_demos):
    _, snapshots, _ = three_demos
    for k in (1, 2):
        before, after = snapshots[k - 1], snapshots[k]
        assert set(before) < set(after)  # the demo added runs...
        for rid, was in before.items():  # ...and changed none of the earlier ones, but to say which run superseded a model run
            now = after[rid]
            assert now["history"] == was["history"], (k, rid, was["role"])
            assert now["latest"] == was["latest"]
            assert {t: v for t, v in now["tags"].items() if t not in SUPERSEDED_TAGS} == {t: v for t, v in was["tags"].items() if t not in SUPERSEDED_TAGS}
            if was["role"] == "model":
                by = now["tags"]["extracteval.superseded_by"]
                assert by in after and by not in before and after[by]["tags"]["extracteval.model"] == was["tags"]["extracteval.model"]
            else:
                assert not set(SUPERSEDED_TAGS) & set(now["tags"])
    # within a demo, each model run has one value per key: nothing was logged twice
    for snap in snapshots:
        for run in snap.values():
            assert all(len(h) == 1 for h in run["history"].values()), run["role"]


def test_the_runs_of_each_demo_have_names_of_their_own(three_demos):
    _, snapshots, _ = three_demos
    final = snapshots[-1]
    for role in ("comparison", "leaderboard"):
        for exp_id in {r["experiment"] for r in final.values()}:
            names = [r["tags"]["mlflow.runName"] for r in final.values() if r["role"] == role and r["experiment"] == exp_id]
            assert len(names) == 3 and len(set(names)) == 3, names


def test_each_demo_ranks_one_run_per_model_the_latest(three_demos, tmp_path):
    client, snapshots, outputs = three_demos
    seen: set[str] = set()
    for k, snap in enumerate(snapshots, start=1):
        new = {rid: r for rid, r in snap.items() if rid not in seen}
        seen |= set(snap)
        for exp_name in EXAMPLES.values():
            exp_id = client.get_experiment_by_name(exp_name).experiment_id
            models = {rid for rid, r in new.items() if r["experiment"] == exp_id and r["role"] == "model"}
            (lb_id,) = [rid for rid, r in new.items() if r["experiment"] == exp_id and r["role"] == "leaderboard"]
            lb = new[lb_id]
            assert set(lb["tags"]["extracteval.compared_runs"].split(",")) == models and len(models) == 3
            assert lb["tags"]["extracteval.compared_count"] == "3" and lb["tags"]["extracteval.leaderboard_step"] == str(k)
            assert len(lb["latest"]) <= 10 and "Main/best" in lb["latest"] and "Main/margin" in lb["latest"]
            key = lb["tags"]["extracteval.leaderboard_key"]
            assert [x[2] for rid in models for x in new[rid]["history"][f"{key}/rank"]] == [k] * 3  # step k: the k-th leaderboard
            ranks = sorted(new[rid]["latest"][f"{key}/rank"] for rid in models)
            assert ranks == [1, 2, 3]
            for rid in models:  # the leaderboard's wins equal the demo's own (same three models)
                assert new[rid]["latest"][f"{key}/field_wins"] == pytest.approx(new[rid]["latest"]["wins/field_wins"])
            local = client.download_artifacts(lb_id, "leaderboard/leaderboard.json", dst_path=str(tmp_path / lb_id))
            doc = json.loads(Path(local).read_text(encoding="utf-8"))
            assert {s["superseded_by"] for s in doc["superseded"]} <= models and len(doc["superseded"]) == 3 * (k - 1)
        # the printed leaderboard: one row per model, no run-id suffixes, the earlier runs listed
        text = outputs[k - 1].split("== leaderboard of extracteval-demo-contracts", 1)[1]
        table = text.split("\n\n")[1]
        assert table.count("#") == 3 and "(" not in table
        if k > 1:
            assert f"3 of {3 * k} runs ranked (latest run per model; {3 * (k - 1)} earlier runs superseded)" in text
            assert f"superseded runs ({3 * (k - 1)}) — not ranked" in text

