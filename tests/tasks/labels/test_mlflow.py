"""The `labels` task in MLflow: `extracteval evaluate labels` on the tickets example read back from
the embedded SQLite store, the evaluator plugin on a static DataFrame, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.errors import InputError

from tests.fixtures.tracking import REPO, comparison_figures

TICKETS = REPO / "experiments" / "tickets"
RUN_LINE = re.compile(r"run ([0-9a-f]{32})  (comparison \(parent\)|model (.+))")


def _args() -> list[str]:
    return [
        "--truth", str(TICKETS / "truth.csv"),
        *[a for m in ("gpt-4o-mini", "distilbert-clf", "keyword-rules") for a in ("--predictions", f"{m}={TICKETS / 'predictions' / (m + '.csv')}")],
        "--config", str(TICKETS / "config.yaml"),
    ]


def _artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for a in client.list_artifacts(run_id, path):
        out |= _artifact_paths(client, run_id, a.path) if a.is_dir else {a.path}
    return out


def _use_experiment(name: str, tmp_path: Path) -> None:
    import mlflow

    exp = mlflow.get_experiment_by_name(name)
    exp_id = exp.experiment_id if exp else mlflow.create_experiment(name, artifact_location=(tmp_path / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp_id)


def test_evaluate_tickets_logs_the_score_numbers(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, score_out, err = cli("score", "labels", *_args(), "--json")
    assert code == 0, err
    expected = json.loads(score_out)
    code, out, err = cli("evaluate", "labels", *_args(), "--experiment", "tickets", "--tracking-uri", sqlite_uri, "--output", str(tmp_path / "out"))
    assert code == 0, err
    runs = {m.group(3): m.group(1) for m in RUN_LINE.finditer(out)}
    parent = runs.pop(None)
    assert set(runs) == set(expected["ranking"])
    client = MlflowClient(sqlite_uri)

    prun = client.get_run(parent)
    assert prun.data.tags["extracteval.task"] == "labels" and prun.data.tags["extracteval.winner"] == expected["ranking"][0]
    assert prun.data.params["positive_labels"] == '{"priority": "urgent"}'
    assert {"extracteval/leaderboard.csv", "extracteval/feature_winners.csv", "extracteval/label_metrics.csv",
            "figures/feature_f1.png", "figures/feature_f1_aligned.png"} <= _artifact_paths(client, parent)
    figures = comparison_figures(client, parent)
    for f, w in expected["feature_winners"].items():
        won = [m for m in expected["ranking"] if m in w["winners"] and w["win_share"] > 0]
        for m in won:
            assert figures[f"wins/{m}/field_wins"] >= w["win_share"]

    for model, rid in runs.items():
        run = client.get_run(rid)
        exp_m = expected["models"][model]
        mx = run.data.metrics
        strict, aligned = exp_m["strict"], exp_m["aligned"]
        # the leaderboard's keys, from the strict view (the view the task ranks on)
        assert mx["labels/macro/f1"] == pytest.approx(strict["totals"]["f1"])
        assert mx["labels/micro_accuracy"] == pytest.approx(strict["totals"]["micro_accuracy"])
        assert mx["labels/row_accuracy"] == pytest.approx(strict["row_accuracy"])
        assert mx["aligned/labels/row_accuracy"] == pytest.approx(aligned["row_accuracy"])
        assert mx["labels/missing_rows"] == exp_m["alignment"]["missing_rows"]
        for f in expected["features"]:
            for k in ("precision", "recall", "f1", "specificity", "micro_accuracy"):
                assert mx[f"feature/{f}/{k}"] == pytest.approx(strict["features"][f][k]), (model, f, k)
                assert mx[f"aligned/feature/{f}/{k}"] == pytest.approx(aligned["features"][f][k]), (model, f, k)
            assert mx[f"feature/{f}/correct"] == strict["features"][f]["correct"]
        assert mx["wins/field_wins"] == pytest.approx(exp_m["feature_wins"])
        assert mx["ranking/rank"] == exp_m["rank"]
        assert run.data.tags["extracteval.model"] == model and run.data.tags["mlflow.parentRunId"] == parent
        assert run.data.params["types"].startswith('{"category": "category"')
        paths = _artifact_paths(client, rid)
        assert {"extracteval/result.json", "extracteval/feature_metrics.csv", "extracteval/feature_metrics_table.json",
                "extracteval/records.parquet", "extracteval/report.html", "extracteval/metric_keys.json",
                "figures/feature_f1.png", "figures/feature_f1_aligned.png"} <= paths
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        assert json.loads((local / "result.json").read_text(encoding="utf-8"))["models"][model] == exp_m
        # per-record labels reproduce the strict ledger: correct rows and every label's TP
        rec = pd.read_parquet(local / "records.parquet")
        assert set(rec["model"]) == {model}
        for f, fm in strict["features"].items():
            sub = rec[rec["feature"] == f]
            assert len(sub) == fm["rows"] and int(sub["correct"].sum()) == fm["correct"]
            for label, v in fm["labels"].items():
                assert int(((sub["truth"] == label) & sub["correct"]).sum()) == v["tp"], (model, f, label)
        table = pd.read_csv(local / "feature_metrics.csv")
        assert list(table["feature"]) == expected["features"]
        assert "&lt;MISSING&gt;" in (local / "report.html").read_text(encoding="utf-8")  # the missing class, escaped


def test_leaderboard_from_logged_metrics_agrees_with_score():
    """RANKING_SPECS["labels"] reads keys the adapter logs, and ranks the example as `score` does."""
    from extracteval.core.run_ranking import RunSummary
    from extracteval.mlflow.tracking_leaderboard import rank_runs as build_leaderboard
    from extracteval.tasks import RANKING_SPECS
    from extracteval.io.config import load_mapping
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("labels")
    scored = adapter.score_experiment(TICKETS, load_mapping(TICKETS / "experiment.yaml"))
    keys = KeyMap.build([*adapter.item_names(scored), *scored.models])
    spec = RANKING_SPECS["labels"]
    runs = []
    for m in sorted(scored.models):
        metrics = adapter.metrics(scored, m, keys)
        assert {spec.primary, *spec.tie_breaks} <= set(metrics)
        assert all(f"{spec.item_prefix}{f}/{k}" in metrics for f in scored.result.features for k in spec.item_keys)
        runs.append(RunSummary(run_id=m, model=m, task="labels", truth_digest="t", config_digest="c", metrics=metrics))
    board = build_leaderboard(runs).to_dict()
    group = board["groups"][0] if "groups" in board else board
    assert [e["model"] for e in group["ranking"]] == list(scored.models)


def _tickets_frame() -> pd.DataFrame:
    rows = []
    for i in range(30):
        truth = {"category": ["billing", "bug", "refund"][i % 3], "priority": ["low", "high"][i % 2], "amount": None if i % 4 else f"{10 + i}.00"}
        out = dict(truth)
        if i % 5 == 0:
            out["category"] = "bug" if truth["category"] != "bug" else "billing"
        if i % 4 == 0:
            out["amount"] = f"${10 + i}"  # the same number, written differently
        rows.append({"id": f"t{i:02d}", "text": f"ticket {i}", "truth": json.dumps(truth), "output": json.dumps(out)})
    rows[7]["output"] = "I could not classify this ticket."
    return pd.DataFrame(rows)


def test_evaluator_plugin_static_dataset(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.tasks.labels.semantics import LabelsConfig, ModelLabels, score_labels

    df = _tickets_frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("labels-static", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                data=df, targets="truth", predictions="output", model_type="extraction-entities", evaluators="extracteval",
                evaluator_config={"task": "labels", "types": {"amount": "number"}, "model_name": "clf"},
            )
        truth = pd.DataFrame([json.loads(t) for t in df["truth"]], index=df["id"])
        ok = df.index != 7  # the prose answer is not a prediction: a missing row in the strict view
        pred = pd.DataFrame([json.loads(o) for o in df.loc[ok, "output"]], index=df.loc[ok, "id"])
        direct = score_labels(truth, [ModelLabels(name="clf", values=pred)], config=LabelsConfig(types={"amount": "number"})).models["clf"]
        assert direct.missing_rows == 1
        assert result.metrics["labels/macro/f1"] == pytest.approx(direct.strict.totals["f1"])
        assert result.metrics["aligned/labels/row_accuracy"] == pytest.approx(direct.aligned.row_accuracy)
        assert result.metrics["feature/amount/f1"] == pytest.approx(direct.strict.features["amount"].f1)
        assert direct.aligned.features["amount"].f1 == 1.0  # "$14" = "14.00" as numbers
        logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
        assert logged.data.tags["extracteval.task"] == "labels" and logged.data.tags["extracteval.model"] == "clf"
        assert logged.data.metrics["labels/missing_rows"] == 1
        doc = result.artifacts["result"].content
        assert doc["invalid_outputs"]["clf"]["record_ids"] == ["t07"]
        assert {"records", "feature_metrics", "report", "feature_f1"} <= set(result.artifacts)
    finally:
        mlflow.set_tracking_uri("")


def test_one_label_per_record():
    """A target that is one label (not an object) is scored as the feature `label_name`."""
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("labels")
    scored = adapter.score_frame(
        ids=["a", "b", "c", "d"], targets=["spam", "ham", "ham", None], predictions={"m": ["spam", "spam", "ham", float("nan")]},
        config={"label_name": "verdict"}, truth_source="dataset",
    )
    fm = scored.result.models["m"].strict.features["verdict"]
    assert (fm.rows, fm.correct) == (4, 3)  # missing = missing is right
    assert adapter.item_names(scored) == ["verdict"]


def test_model_type_default_is_entities_and_task_picks_labels():
    from extracteval.mlflow.adapters import task_for_model_type

    assert task_for_model_type("extraction-entities") == "entities"
    assert task_for_model_type("extraction-entities", "labels") == "labels"
    with pytest.raises(InputError, match="does not go with model_type"):
        task_for_model_type("extraction-fields", "labels")


def test_bad_input_names_the_record(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("labels")
    with pytest.raises(InputError, match=r"record 'b': expected an object of feature labels like the first record, but found str"):
        adapter.score_frame(ids=["a", "b"], targets=['{"x": 1}', "plain"], predictions={"m": ["{}", "{}"]}, config={}, truth_source="dataset")
    with pytest.raises(InputError, match=r"evaluator_config `types`: expected a mapping"):
        adapter.build_config({"types": ["number"]})
    df = _tickets_frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("labels-bad", tmp_path)
        with pytest.raises(InputError, match=r"unknown key\(s\) 'key_fields' for task 'labels'"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-entities",
                                       evaluators="extracteval", evaluator_config={"task": "labels", "key_fields": ["a"]})
    finally:
        mlflow.set_tracking_uri("")


def test_evaluate_cli_bad_input_exits_2(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "truth.csv"
    bad.write_text("id,category\nT-1,billing\nT-1,bug\n", encoding="utf-8")
    code, out, err = cli("evaluate", "labels", "--truth", str(bad), "--predictions", f"m={TICKETS / 'predictions' / 'gpt-4o-mini.csv'}",
                         "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "Traceback" not in err
    assert "truth.csv" in err and "T-1" in err


def test_odd_feature_names_are_sanitised_and_escaped(tmp_path):
    """A feature called `<script>…</script>` or `a/b`: valid metric keys mapped back to the name,
    and the name and values escaped in report.html."""
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.keys import is_valid_key
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("labels")
    odd = "<script>alert(1)</script>"
    targets = [{odd: "<b>yes</b>", "a/b": "x"}, {odd: "no", "a/b": "y"}, {odd: "no", "a/b": "x"}]
    scored = adapter.score_frame(ids=["1", "2", "3"], targets=targets, predictions={"m": [json.dumps(t) for t in targets[::-1]]},
                                 config={}, truth_source="dataset")
    bundle = write_bundle(scored, adapter, tmp_path / "b", experiment=None, figures=False)
    metrics = bundle.metrics("single")
    assert all(is_valid_key(k) for k in metrics)
    assert metrics["feature/a_b/f1"] == pytest.approx(scored.result.models["m"].strict.features["a/b"].f1)
    names = json.loads((bundle.run_dir("single") / "artifacts" / "extracteval" / "metric_keys.json").read_text(encoding="utf-8"))["names"]
    assert {"name": odd, "key": "_script_alert_1_script_"} in names
    html = (bundle.run_dir("single") / "artifacts" / "extracteval" / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;yes&lt;/b&gt;" in html


def test_row_order_does_not_change_metrics_or_records():
    import random

    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("labels")
    df = _tickets_frame()
    order = list(range(len(df)))
    random.Random(7).shuffle(order)
    runs = []
    for idx in (list(range(len(df))), order):
        sub = df.iloc[idx]
        scored = adapter.score_frame(ids=list(sub["id"]), targets=list(sub["truth"]), predictions={"m": list(sub["output"])},
                                     config={"types": {"amount": "number"}}, truth_source="dataset")
        keys = KeyMap.build([*adapter.item_names(scored), *scored.models])
        runs.append((adapter.metrics(scored, "m", keys), adapter.records_frame(scored, "m").astype(str).reset_index(drop=True)))
    assert runs[0][0] == runs[1][0]
    pd.testing.assert_frame_equal(runs[0][1], runs[1][1])


def test_declared_classes_reach_the_intervals(cli, sqlite_uri, tmp_path, monkeypatch):
    """With declared classes (one of them in no record), the per-record counts of each logged run
    give its logged macro and weighted F1 through the task's map (the leaderboard's intervals)."""
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.intervals import read_run_counts

    monkeypatch.chdir(tmp_path)
    code, out, err = cli("evaluate", "labels", *_args(), "--labels", "category=billing,refund request,no such class",
                         "--experiment", "tickets-declared", "--tracking-uri", sqlite_uri, "--output", str(tmp_path / "out"))
    assert code == 0, err
    runs = {m.group(3): m.group(1) for m in RUN_LINE.finditer(out)}
    runs.pop(None)
    client, adapter = MlflowClient(sqlite_uri), get_adapter("labels")
    for run_id in runs.values():
        run = client.get_run(run_id)
        assert json.loads(run.data.params["labels"]) == {"category": ["billing", "refund request", "no such class"]}
        table = read_run_counts("labels", run.info.artifact_uri, run.data.params, sqlite_uri)
        for metric in ("labels/macro/f1", "labels/macro/precision", "labels/weighted/f1"):
            value = float(adapter.count_metric(metric, table.columns, run.data.params)(table.counts.sum(axis=0)))
            assert value == pytest.approx(run.data.metrics[metric], abs=1e-12), metric
