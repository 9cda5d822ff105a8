"""End to end: `extracteval evaluate` and `mlflow.models.evaluate(..., evaluators="extracteval")`
logged to a real tracking server over HTTP and to the embedded SQLite store, read back with
MlflowClient: metrics, params, tags, every artifact, the dataset input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.mlflow.bundle import truth_digest
from extracteval.mlflow.keys import is_valid_key

from .conftest import CONTRACTS

RUN_LINE = re.compile(r"run ([0-9a-f]{32})  (comparison \(parent\)|model (.+))")


def _runs(out: str) -> tuple[str | None, dict[str, str]]:
    parent, children = None, {}
    for m in RUN_LINE.finditer(out):
        if m.group(3) is None:
            parent = m.group(1)
        else:
            children[m.group(3)] = m.group(1)
    return parent, children


def _artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for a in client.list_artifacts(run_id, path):
        out |= _artifact_paths(client, run_id, a.path) if a.is_dir else {a.path}
    return out


def test_evaluate_cli_logs_parent_and_children(cli, tracking_uri, contracts_args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, score_out, err = cli("score", "fields", *contracts_args, "--json")
    assert code == 0, err
    expected = json.loads(score_out)

    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "contracts-cli", "--run-name", "nightly",
                         "--tracking-uri", tracking_uri, "--output", str(tmp_path / "out"))
    assert code == 0, err
    assert "mlflow ui" in out or tracking_uri in out  # how to look at it
    parent, children = _runs(out)
    assert parent is not None and set(children) == set(expected["ranking"])

    client = MlflowClient(tracking_uri)
    prun = client.get_run(parent)
    assert prun.info.status == "FINISHED" and prun.info.run_name == "nightly"
    t = prun.data.tags
    assert t["extracteval.task"] == "fields" and t["extracteval.role"] == "comparison"
    assert t["extracteval.winner"] == expected["ranking"][0]
    truth = pd.read_csv(CONTRACTS / "truth.csv", dtype=str, keep_default_na=False).set_index("id")
    assert re.fullmatch(r"[0-9a-f]{64}", t["extracteval.truth_digest"])
    assert re.fullmatch(r"[0-9a-f]{64}", t["extracteval.config_digest"])
    # parent: ranking and wins of every model
    pm = prun.data.metrics
    for m in expected["ranking"]:
        seg = m  # these model names need no sanitising
        assert pm[f"ranking/{seg}/rank"] == expected["models"][m]["rank"]
        assert pm[f"wins/{seg}/field_wins"] == pytest.approx(expected["models"][m]["field_wins"])
    assert {"extracteval/leaderboard.csv", "extracteval/result.json", "extracteval/report.html", "figures/field_f1.png",
            "figures/confusion_counts.png", "extracteval/field_metrics.csv", "extracteval/field_metrics_table.json",
            "extracteval/metric_keys.json"} <= _artifact_paths(client, parent)

    for model, rid in children.items():
        run = client.get_run(rid)
        exp_m = expected["models"][model]
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parent
        assert run.data.tags["extracteval.model"] == model
        assert run.data.tags["extracteval.truth_digest"] == t["extracteval.truth_digest"]
        md = run.data.metrics
        assert all(is_valid_key(k) for k in md)
        for k in ("precision", "recall", "f1", "accuracy"):
            assert md[f"overall/{k}"] == pytest.approx(exp_m["overall"][k])
            assert md[f"micro/{k}"] == pytest.approx(exp_m["micro"][k])
        assert md["wins/field_wins"] == pytest.approx(exp_m["field_wins"])
        assert md["overall/ci_low"] <= md["overall/f1"] <= md["overall/ci_high"]
        for f, fm in exp_m["fields"].items():
            for k in ("tp", "fp", "fn", "tn", "excluded", "precision", "recall", "f1", "accuracy"):
                assert md[f"field/{f}/{k}"] == pytest.approx(fm[k]), (model, f, k)
        params = run.data.params
        assert params["task"] == "fields" and params["model"] == model and params["fuzzy_threshold"] == "0.85"
        assert json.loads(params["strategies"])["parties"] == "FUZZY"
        inputs = run.inputs.dataset_inputs
        assert len(inputs) == 1 and inputs[0].dataset.name == "fields-truth"
        assert inputs[0].dataset.digest == t["extracteval.truth_digest"][:32]
        assert json.loads(inputs[0].dataset.profile)["num_rows"] == len(truth)
        paths = _artifact_paths(client, rid)
        assert {"extracteval/result.json", "extracteval/field_metrics.csv", "extracteval/field_metrics_table.json",
                "extracteval/records.parquet", "extracteval/report.html", "extracteval/metric_keys.json",
                "figures/field_f1.png", "figures/confusion_counts.png"} <= paths
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        logged = json.loads((local / "result.json").read_text(encoding="utf-8"))
        assert logged["models"][model]["fields"] == exp_m["fields"]
        rec = pd.read_parquet(local / "records.parquet")
        assert set(rec["model"]) == {model} and len(rec) == expected["n_records"] * len(expected["fields"])
        assert rec["tp"].sum() == sum(fm["tp"] for fm in exp_m["fields"].values())
        table = pd.read_csv(local / "field_metrics.csv")
        assert list(table["field"]) == expected["fields"]
        assert (local / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # the local copy stays where --output asked
    assert json.loads((tmp_path / "out" / "state.json").read_text())["status"] == "UPLOADED"


def test_single_model_is_one_run(cli, tracking_uri, contracts_args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = contracts_args[:4] + contracts_args[-2:]
    code, out, err = cli("evaluate", "fields", *args, "--experiment", "contracts-single", "--tracking-uri", tracking_uri, "--no-ci")
    assert code == 0, err
    parent, children = _runs(out)
    assert parent is None and list(children) == ["gpt-4o-mini"]
    run = MlflowClient(tracking_uri).get_run(children["gpt-4o-mini"])
    assert run.data.tags["extracteval.role"] == "single" and "mlflow.parentRunId" not in run.data.tags
    assert "overall/ci_low" not in run.data.metrics  # --no-ci: no intervals
    assert run.data.params["bootstrap"] == "0"
    assert not any(tmp_path.glob("extracteval-*"))  # temporary local copy removed after success


def _frame(n: int = 40) -> pd.DataFrame:
    rows = []
    for i in range(n):
        truth = {"vendor": f"Vendor {i % 7}", "total": f"{100 + i}.00", "date": f"2024-01-{1 + i % 28:02d}"}
        out = dict(truth)
        if i % 5 == 0:
            out["vendor"] = "Someone Else"
        if i % 8 == 0:
            out["total"] = None
        rows.append({"id": f"doc-{i:03d}", "document": f"Invoice {i}", "truth": json.dumps(truth),
                     "output": "not json at all" if i == 39 else json.dumps(out)})
    return pd.DataFrame(rows)


def _direct(df: pd.DataFrame, outputs: list) -> dict:
    from extracteval.core.fields import FieldsConfig, ModelPredictions, score_fields

    truth = pd.DataFrame([json.loads(t) for t in df["truth"]], index=df["id"])
    preds = []
    for o in outputs:
        try:
            v = json.loads(o) if isinstance(o, str) else o
        except ValueError:
            v = {}
        preds.append(v if isinstance(v, dict) else {})
    pred = pd.DataFrame(preds, index=df["id"])
    r = score_fields(truth, [ModelPredictions(name="m", values=pred)], config=FieldsConfig(bootstrap=0))
    return r.to_dict()["models"]["m"]


def test_mlflow_evaluate_static_dataset(tracking_uri):
    import mlflow

    df = _frame()
    mlflow.set_tracking_uri(tracking_uri)
    try:
        mlflow.set_experiment("static")
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                data=df, targets="truth", predictions="output", model_type="extraction-fields",
                evaluators="extracteval", evaluator_config={"id_column": "id", "bootstrap": 0, "model_name": "llm-v1"},
            )
        expected = _direct(df, list(df["output"]))
        assert result.metrics["overall/f1"] == pytest.approx(expected["overall"]["f1"])
        assert result.metrics["field/vendor/fp"] == expected["fields"]["vendor"]["fp"] == 8
        logged = MlflowClient(tracking_uri).get_run(run.info.run_id)
        assert logged.data.metrics["field/total/fn"] == expected["fields"]["total"]["fn"]
        assert logged.data.tags["extracteval.model"] == "llm-v1"
        assert {"result", "report", "records", "field_f1"} <= set(result.artifacts)
        doc = result.artifacts["result"].content
        assert doc["invalid_outputs"]["llm-v1"]["record_ids"] == ["doc-039"]  # malformed output is counted, not raised
    finally:
        mlflow.set_tracking_uri("")


def test_mlflow_evaluate_callable_model_in_batches(tracking_uri):
    import mlflow

    df = _frame()
    calls: list[int] = []

    def model(batch: pd.DataFrame) -> list[str]:
        calls.append(len(batch))
        rows = df.set_index("document").loc[batch["document"], "output"]
        return list(rows)

    mlflow.set_tracking_uri(tracking_uri)
    try:
        mlflow.set_experiment("callable")
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                model=model, data=df.drop(columns=["output"]), targets="truth", model_type="extraction-fields",
                evaluators="extracteval",
                evaluator_config={"batch_size": 16, "bootstrap": 0, "generation": {"temperature": 0.0, "top_p": 1.0}},
            )
        assert calls == [16, 16, 8]
        expected = _direct(df, list(df["output"]))
        assert result.metrics["micro/f1"] == pytest.approx(expected["micro"]["f1"])
        params = MlflowClient(tracking_uri).get_run(run.info.run_id).data.params
        assert params["generation.temperature"] == "0.0" and params["generation.top_p"] == "1.0"
    finally:
        mlflow.set_tracking_uri("")


def test_unknown_evaluator_config_key_is_rejected_by_name(sqlite_uri):
    import mlflow

    from extracteval.errors import InputError

    mlflow.set_tracking_uri(sqlite_uri)
    try:
        with pytest.raises(InputError, match=r"unknown key\(s\) 'fuzzy_treshold'.*valid keys: .*fuzzy_threshold"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=_frame(5), targets="truth", predictions="output", model_type="extraction-fields",
                                       evaluators="extracteval", evaluator_config={"fuzzy_treshold": 0.9})
    finally:
        mlflow.set_tracking_uri("")


def test_can_evaluate_exactly_the_spec_model_types():
    from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

    ev = _model_evaluation_registry.get_evaluator("extracteval")  # found through the entry point
    for t in ("extraction-fields", "extraction-json", "extraction-spans", "extraction-entities", "structured-output", "tool-calling"):
        assert ev.can_evaluate(model_type=t, evaluator_config={})
    for t in ("classifier", "regressor", "text", None, "extraction-field"):
        assert not ev.can_evaluate(model_type=t, evaluator_config={})
