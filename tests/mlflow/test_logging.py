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
from extracteval.mlflow.descriptions import HEADLINE_KEYS
from extracteval.mlflow.keys import is_valid_key

from tests.fixtures.tracking import CONTRACTS, REPO, comparison_figures

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
    from extracteval.tasks.fields.inputs import load_fields_inputs

    truth, _, _ = load_fields_inputs(CONTRACTS / "truth.csv", [f"x={CONTRACTS / 'predictions' / 'gpt-4o-mini.csv'}"])
    assert t["extracteval.truth_digest"] == truth_digest(truth)  # SHA-256 of the truth as scored
    assert re.fullmatch(r"[0-9a-f]{64}", t["extracteval.config_digest"])
    # parent: ranking and wins of every model
    pm = comparison_figures(client, parent)
    assert set(prun.data.metrics) <= set(HEADLINE_KEYS) and len(prun.data.metrics) <= 10  # charted: the verdict only
    for m in expected["ranking"]:
        seg = m  # these model names need no sanitising
        assert pm[f"ranking/{seg}/rank"] == expected["models"][m]["rank"]
        assert pm[f"wins/{seg}/field_wins"] == pytest.approx(expected["models"][m]["field_wins"])
    assert {"extracteval/leaderboard.csv", "extracteval/field_winners.csv", "extracteval/result.json", "extracteval/report.html", "figures/field_f1.png",
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


def _example_tasks() -> list:
    """(experiment.yaml, task) for every example; a `structured+toolcalls` example gives one per track."""
    from extracteval.io.config import load_mapping

    out = []
    for spec in sorted((REPO / "experiments").glob("*/experiment.yaml")):
        tasks = str(load_mapping(spec)["task"]).split("+")
        out += [pytest.param(spec, t, id=spec.parent.name if len(tasks) == 1 else f"{spec.parent.name}-{t}") for t in tasks]
    return out


@pytest.mark.parametrize(("spec", "task"), _example_tasks())
def test_every_example_round_trips_through_the_store(spec, task, tracking_uri, tmp_path):
    """For every task built so far (each example under experiments/ whose task has an adapter):
    everything in the local copy arrives in the store — metrics, params, tags, every artifact,
    the dataset input."""
    from extracteval.io.config import load_mapping
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.adapters import available_tasks, get_adapter
    from extracteval.mlflow.upload import upload_bundle

    cfg = load_mapping(spec)
    if task not in available_tasks():
        pytest.skip(f"task {task!r} has no MLflow adapter in this version")
    adapter = get_adapter(task)
    scored = adapter.score_experiment(spec.parent, cfg)
    bundle = write_bundle(scored, adapter, tmp_path / "b", experiment=f"roundtrip-{spec.parent.name}")
    result = upload_bundle(bundle, tracking_uri=tracking_uri)
    client = MlflowClient(tracking_uri)
    ds = bundle.manifest["dataset"]
    for plan in bundle.runs:
        run = client.get_run(result.run_ids[plan.key])
        assert run.info.status == "FINISHED" and run.info.run_name == plan.run_name
        assert run.data.metrics == bundle.metrics(plan.key)
        assert run.data.params == dict(plan.params)
        assert dict(plan.tags).items() <= run.data.tags.items()
        if plan.parent:
            assert run.data.tags["mlflow.parentRunId"] == result.run_ids[plan.parent]
        local = {p.relative_to(bundle.run_dir(plan.key) / "artifacts").as_posix()
                 for p in (bundle.run_dir(plan.key) / "artifacts").rglob("*") if p.is_file()}
        assert _artifact_paths(client, run.info.run_id) == local
        (inp,) = run.inputs.dataset_inputs
        assert (inp.dataset.name, inp.dataset.digest, inp.dataset.schema, inp.dataset.profile) == (ds["name"], ds["digest"], ds["schema"], ds["profile"])
        assert json.loads(run.data.tags["mlflow.loggedArtifacts"])[0]["type"] == "table"


def test_single_model_is_one_run(cli, tracking_uri, contracts_args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = contracts_args[:4] + ["--strategies", str(CONTRACTS / "strategies.yaml")]
    code, out, err = cli("evaluate", "fields", *args, "--experiment", "contracts-single", "--tracking-uri", tracking_uri, "--no-ci", "--json")
    assert code == 0, err
    assert out.lstrip().startswith("{"), out[:300]
    doc = json.loads(out)  # --json: the result document plus where it was logged
    assert doc["ranking"] == ["gpt-4o-mini"] and list(doc["mlflow"]["run_ids"]) == ["single"]
    run = MlflowClient(tracking_uri).get_run(doc["mlflow"]["models"]["gpt-4o-mini"])
    assert run.data.metrics["overall/f1"] == pytest.approx(doc["models"]["gpt-4o-mini"]["overall"]["f1"])
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


def _use_experiment(name: str, tmp_path: Path) -> None:
    """Set the active experiment, with its artifacts in tmp (never ./mlruns of the checkout)."""
    import mlflow

    exp = mlflow.get_experiment_by_name(name)
    exp_id = exp.experiment_id if exp else mlflow.create_experiment(name, artifact_location=(tmp_path / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp_id)


def _direct(df: pd.DataFrame, outputs: list) -> dict:
    from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

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


def test_mlflow_evaluate_static_dataset(tracking_uri, tmp_path):
    import mlflow

    df = _frame()
    mlflow.set_tracking_uri(tracking_uri)
    try:
        _use_experiment("static", tmp_path)
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


def test_mlflow_evaluate_callable_model_in_batches(tracking_uri, tmp_path):
    import mlflow

    df = _frame()
    calls: list[int] = []

    def model(batch: pd.DataFrame) -> list[str]:
        calls.append(len(batch))
        rows = df.set_index("document").loc[batch["document"], "output"]
        return list(rows)

    mlflow.set_tracking_uri(tracking_uri)
    try:
        _use_experiment("callable", tmp_path)
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


def test_unknown_evaluator_config_key_is_rejected_by_name(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.errors import InputError

    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("rejected", tmp_path)
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


# ---------------------------------------------------------------------------------------------
# request counting, HTML escaping, failure and resume


def _wide(tmp_path: Path, n_fields: int, n_records: int = 40, field_name=lambda j: f"f{j:03d}", value=lambda i, j: f"v{i}-{j}") -> tuple[Path, list[Path]]:
    truth = pd.DataFrame({"id": [f"r{i}" for i in range(n_records)], **{field_name(j): [value(i, j) for i in range(n_records)] for j in range(n_fields)}})
    tp = tmp_path / "truth.csv"
    truth.to_csv(tp, index=False)
    preds = []
    for k in range(2):
        p = truth.copy()
        for j in range(n_fields):
            col = field_name(j)
            p.loc[p.index % (3 + k + j % 4) == 0, col] = "wrong"
        pp = tmp_path / f"model{k}.csv"
        p.to_csv(pp, index=False)
        preds.append(pp)
    return tp, preds


def _server_log(url: str) -> Path:
    from tests.fixtures.tracking import SERVERS

    return SERVERS[url].log


def test_metric_requests_are_batched_for_200_fields(cli, tracking_uri, tmp_path, monkeypatch):
    """≤ ⌈metrics/1000⌉ metric-logging requests per run, counted at the client, and no
    single-metric endpoint in the server's access log."""
    import math

    from mlflow.store.tracking.rest_store import RestStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    calls: dict[str, list[int]] = {}
    for store in (RestStore, SqlAlchemyStore):
        original = store.log_batch

        def counting(self, run_id, metrics=(), params=(), tags=(), _original=original):
            if metrics:
                calls.setdefault(run_id, []).append(len(metrics))
            return _original(self, run_id, metrics=metrics, params=params, tags=tags)

        monkeypatch.setattr(store, "log_batch", counting)
    truth, preds = _wide(tmp_path, 200)
    code, out, err = cli("evaluate", "fields", "--truth", str(truth), "--predictions", f"a={preds[0]}", "--predictions", f"b={preds[1]}",
                         "--experiment", "wide-200", "--tracking-uri", tracking_uri, "--output", str(tmp_path / "out"), "--no-figures")
    assert code == 0, err
    parent, children = _runs(out)
    client = MlflowClient(tracking_uri)
    for rid in [parent, *children.values()]:
        n = len(client.get_run(rid).data.metrics)
        assert sum(calls[rid]) == n
        assert len(calls[rid]) <= math.ceil(n / 1000), (n, calls[rid])
    assert len(client.get_run(children["a"]).data.metrics) > 2000  # 200 fields × 12 metrics: really several batches
    if tracking_uri.startswith("http"):  # the server's own access log agrees: batches only
        text = _server_log(tracking_uri).read_text(errors="replace")
        assert "/runs/log-batch" in text and "/runs/log-metric" not in text


def test_html_report_escapes_user_strings(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evil = "<script>alert(1)</script>"
    value = '"><img src=x onerror=alert(2)>'
    truth, preds = _wide(tmp_path, 3, field_name=lambda j: evil if j == 0 else f"f{j}", value=lambda i, j: value if j == 0 else f"v{i}")
    code, out, err = cli("evaluate", "fields", "--truth", str(truth), "--predictions", f"{evil}={preds[0]}", "--predictions", f"b={preds[1]}",
                         "--experiment", "escaping", "--tracking-uri", sqlite_uri, "--output", str(tmp_path / "out"), "--no-ci")
    assert code == 0, err
    parent, children = _runs(out)
    client = MlflowClient(sqlite_uri)
    for rid in [parent, *children.values()]:
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        html = (local / "report.html").read_text(encoding="utf-8")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<script" not in html.lower() and "<img src=x" not in html and "onerror=alert" not in html.replace("onerror=alert(2)&gt;", "")
        assert "&lt;img src=x onerror=alert(2)&gt;" in html  # the value shows up, inert
        assert "http://" not in html and "https://" not in html  # self-contained: nothing fetched
        keys = json.loads((local / "metric_keys.json").read_text(encoding="utf-8"))
        assert {"name": evil, "key": "_script_alert_1_script_"} in keys["names"]
        metrics = client.get_run(rid).data.metrics
        assert all(is_valid_key(k) for k in metrics)
    child = client.get_run(children[evil])
    assert child.data.metrics["field/_script_alert_1_script_/f1"] >= 0
    assert child.data.tags["extracteval.model"] == evil


def test_failed_upload_marks_run_failed_and_resume_completes_it(cli, sqlite_uri, contracts_args, tmp_path, monkeypatch):
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

    def broken(self, *a, **k):
        raise OSError("No space left on device")

    monkeypatch.setattr(LocalArtifactRepository, "log_artifacts", broken)
    out_dir = tmp_path / "kept"
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "fail-artifacts", "--tracking-uri", sqlite_uri,
                         "--output", str(out_dir), "--no-ci")
    assert code == 1
    assert "No space left on device" in err and f"--resume-from {out_dir}" in err and "Traceback" not in err
    state = json.loads((out_dir / "state.json").read_text())
    assert state["status"] == "FAILED"
    client = MlflowClient(sqlite_uri)
    first = client.get_run(state["runs"]["parent"])
    assert first.info.status == "FAILED"
    monkeypatch.undo()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    # the folder names its store, but a folder may come from anyone: the user says where to log
    code, out, err = cli("evaluate", "--resume-from", str(out_dir))
    assert code == 2 and f"--tracking-uri {sqlite_uri}" in err and "Traceback" not in err
    code, out, err = cli("evaluate", "--resume-from", str(out_dir), "--tracking-uri", sqlite_uri)
    assert code == 0, err
    state2 = json.loads((out_dir / "state.json").read_text())
    assert state2["status"] == "UPLOADED" and state2["runs"]["parent"] == state["runs"]["parent"]
    for key, rid in state2["runs"].items():
        run = client.get_run(rid)
        assert run.info.status == "FINISHED"
        assert run.data.metrics == json.loads((out_dir / "runs" / key / "metrics.json").read_text())
        assert len(run.inputs.dataset_inputs) == 1  # logged before the failure and again on resume: still one
        assert all(len(client.get_metric_history(rid, k)) == 1 for k in ("overall/f1", "micro/f1") if k in run.data.metrics)
    code, out, _ = cli("evaluate", "--resume-from", str(out_dir))
    assert code == 0 and "nothing to do" in out
    # the same results into another store: fresh runs there, in the experiment of the manifest
    other = f"sqlite:///{tmp_path / 'other.db'}"
    code, out, err = cli("evaluate", "--resume-from", str(out_dir), "--tracking-uri", other)
    assert code == 0, err
    oclient = MlflowClient(other)
    runs = oclient.search_runs([oclient.get_experiment_by_name("fail-artifacts").experiment_id])
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    assert not set(r.info.run_id for r in runs) & set(state2["runs"].values())


def test_server_stopped_mid_evaluation_then_resume(cli, mlflow_server, contracts_args, tmp_path, monkeypatch):
    """Kept last in the module: it stops the shared server and starts it again."""
    from mlflow.tracking import MlflowClient as Client

    code, score_out, _ = cli("score", "fields", *contracts_args, "--json")
    expected = json.loads(score_out)
    original = Client.log_batch
    stopped = []

    def stop_then_log(self, run_id, metrics=(), params=(), tags=(), **kw):
        if metrics and not stopped:
            mlflow_server.stop()  # the server dies between two writes of the upload
            stopped.append(run_id)
        return original(self, run_id, metrics=metrics, params=params, tags=tags, **kw)

    monkeypatch.setattr(Client, "log_batch", stop_then_log)
    out_dir = tmp_path / "kept"
    try:
        code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "fault", "--tracking-uri", mlflow_server.url,
                             "--output", str(out_dir))
    finally:
        monkeypatch.setattr(Client, "log_batch", original)
    assert stopped and code == 1
    assert "not reachable" in err and f"extracteval evaluate --resume-from {out_dir}" in err and "Traceback" not in err
    # the local copy is complete: every run's metrics and artifacts, the same document `score` prints
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert [r["key"] for r in manifest["runs"]] == ["parent", "model-1", "model-2", "model-3"]
    for r in manifest["runs"]:
        rdir = out_dir / "runs" / r["key"]
        assert json.loads((rdir / "metrics.json").read_text())
        names = {p.relative_to(rdir / "artifacts").as_posix() for p in (rdir / "artifacts").rglob("*") if p.is_file()}
        assert {"extracteval/result.json", "extracteval/report.html", "extracteval/field_metrics.csv", "figures/field_f1.png"} <= names
        if r["role"] == "model":
            assert "extracteval/records.parquet" in names
        doc = json.loads((rdir / "artifacts" / "extracteval" / "result.json").read_text())
        assert doc["models"] == expected["models"] and doc["ranking"] == expected["ranking"]
    state = json.loads((out_dir / "state.json").read_text())
    assert state["status"] == "FAILED" and state["runs"]["parent"] == stopped[0]

    mlflow_server.start()
    code, out, err = cli("evaluate", "--resume-from", str(out_dir), "--tracking-uri", mlflow_server.url)
    assert code == 0, err
    client = MlflowClient(mlflow_server.url)
    state = json.loads((out_dir / "state.json").read_text())
    assert state["status"] == "UPLOADED" and state["runs"]["parent"] == stopped[0]  # the same parent run, completed
    runs = client.search_runs([client.get_experiment_by_name("fault").experiment_id])
    assert len(runs) == 4  # no duplicates
    for key, rid in state["runs"].items():
        run = client.get_run(rid)
        assert run.info.status == "FINISHED"
        assert run.data.metrics == json.loads((out_dir / "runs" / key / "metrics.json").read_text())
    m1 = client.get_run(state["runs"]["model-1"])
    assert m1.data.metrics["overall/f1"] == pytest.approx(expected["models"][expected["ranking"][0]]["overall"]["f1"])


def test_mlflow_evaluate_pyfunc_model_logs_its_decoding_settings(sqlite_uri, tmp_path):
    """A real pyfunc model (saved and loaded); its model_config's temperature becomes a param."""
    import mlflow
    import mlflow.pyfunc

    df = _frame(20)
    outputs = dict(zip(df["document"], df["output"]))

    class Extractor(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return [outputs[d] for d in model_input["document"]]

    path = tmp_path / "model"
    mlflow.pyfunc.save_model(str(path), python_model=Extractor(), pip_requirements=[], model_config={"temperature": 0.2, "top_p": 0.9})
    model = mlflow.pyfunc.load_model(str(path))
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("pyfunc", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(model=model, data=df.drop(columns=["output"]), targets="truth",
                                            model_type="extraction-fields", evaluators="extracteval",
                                            evaluator_config={"bootstrap": 0, "batch_size": 8, "model_name": "extractor-v2"})
    finally:
        mlflow.set_tracking_uri("")
    assert result.metrics["overall/f1"] == pytest.approx(_direct(df, list(df["output"]))["overall"]["f1"])
    logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
    assert logged.data.params["generation.temperature"] == "0.2" and logged.data.params["generation.top_p"] == "0.9"
    assert logged.data.tags["extracteval.model"] == "extractor-v2"


def test_interrupted_upload_keeps_the_copy_and_says_how_to_resume(cli, sqlite_uri, contracts_args, tmp_path, monkeypatch):
    from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository

    def interrupt(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalArtifactRepository, "log_artifacts", interrupt)
    code, out, err = cli("evaluate", "fields", *contracts_args, "--experiment", "interrupted", "--tracking-uri", sqlite_uri, "--no-ci")
    assert code == 130 and "interrupted" in err and "--resume-from" in err
    kept = Path(re.search(r"--resume-from (\S+)", err).group(1))
    state = json.loads((kept / "state.json").read_text())
    assert state["status"] == "INTERRUPTED"
    assert MlflowClient(sqlite_uri).get_run(state["runs"]["parent"]).info.status == "KILLED"
    monkeypatch.undo()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = cli("evaluate", "--resume-from", str(kept), "--tracking-uri", sqlite_uri)
    assert code == 0, err
    assert MlflowClient(sqlite_uri).get_run(state["runs"]["parent"]).info.status == "FINISHED"


def test_fields_with_names_too_long_or_colliding_for_mlflow_are_logged(cli, sqlite_uri, tmp_path, monkeypatch):
    """A field name of 200 characters and two names that sanitise alike are logged under keys
    MLflow accepts, each with its own; `metric_keys.json` maps each key back to its name."""
    monkeypatch.chdir(tmp_path)
    long_name, odd = "Vertragsparteien " * 12 + "und Dritte", ("a(b)", "a[b]")
    header = ",".join(["id", f'"{long_name}"', *odd])
    (tmp_path / "t.csv").write_text(f"{header}\n1,x,1,2\n2,y,3,4\n", encoding="utf-8")
    (tmp_path / "p.csv").write_text(f"{header}\n1,x,1,9\n2,z,3,4\n", encoding="utf-8")
    code, out, err = cli("evaluate", "fields", "--truth", "t.csv", "--predictions", "m=p.csv", "--no-ci", "--experiment", "long-names",
                         "--tracking-uri", sqlite_uri)
    assert code == 0, err
    run_id = _runs(out)[1]["m"]
    client = MlflowClient(sqlite_uri)
    metrics = client.get_run(run_id).data.metrics
    field_keys = {k.split("/")[1] for k in metrics if k.startswith("field/") and k.endswith("/f1")}
    assert len(field_keys) == 3 and all(is_valid_key(f"field/{k}/f1") for k in field_keys)
    names = json.loads(Path(client.download_artifacts(run_id, "extracteval/metric_keys.json", str(tmp_path))).read_text())["names"]
    assert {n["name"] for n in names} >= {long_name, *odd} and {n["key"] for n in names} >= field_keys


def test_plugin_runs_of_different_models_rank_as_those_models(cli, sqlite_uri, tmp_path, capsys):
    """Without `model_name`, a plugin run's model is named after the run: two runs of two models
    rank as two models (not one model "output" whose better run is superseded by the weaker one),
    and a single-model call prints no universal-tie warning."""
    import mlflow

    df = _frame()
    worse = df.assign(output=[json.dumps({**json.loads(t), "vendor": "?"}) if i % 2 else o
                              for i, (t, o) in enumerate(zip(df["truth"], df["output"]))])
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("plugin-names", tmp_path)
        for name, data in (("strong-llm", df), ("weak-llm", worse)):
            with mlflow.start_run(run_name=name):
                mlflow.models.evaluate(data=data, targets="truth", predictions="output", model_type="extraction-fields",
                                       evaluators="extracteval", evaluator_config={"id_column": "id", "bootstrap": 0})
    finally:
        mlflow.set_tracking_uri("")
    assert "universal tie" not in capsys.readouterr().err
    code, out, err = cli("leaderboard", "--experiment", "plugin-names", "--tracking-uri", sqlite_uri, "--json", "--no-log", "--no-ci")
    assert code == 0, err
    doc = json.loads(out)
    assert [m["model"] for m in doc["ranking"]] == ["strong-llm", "weak-llm"] and doc.get("n_superseded", 0) == 0, doc["ranking"]


def test_runs_of_one_model_name_but_different_run_names_are_said_to_be_ranked_as_one(cli, sqlite_uri, tmp_path):
    """Runs logged under one model name (as plugin runs were before: "output") by runs named
    differently: the leaderboard says which run it ranked and how to tell them apart."""
    import mlflow

    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("one-name", tmp_path)
        for run_name in ("first-model", "second-model"):
            with mlflow.start_run(run_name=run_name):
                mlflow.models.evaluate(data=_frame(), targets="truth", predictions="output", model_type="extraction-fields",
                                       evaluators="extracteval", evaluator_config={"id_column": "id", "bootstrap": 0, "model_name": "output"})
    finally:
        mlflow.set_tracking_uri("")
    code, out, err = cli("leaderboard", "--experiment", "one-name", "--tracking-uri", sqlite_uri, "--json", "--no-log", "--no-ci")
    assert code == 0, err
    said = [w for w in json.loads(out)["warnings"] if "both score a model named 'output'" in w]
    assert said and "'first-model'" in said[0] and "'second-model'" in said[0] and "model_name" in said[0], json.loads(out)["warnings"]
