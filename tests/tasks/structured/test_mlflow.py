"""The `structured` task in MLflow: `extracteval evaluate structured`, the evaluator plugin
(model_type `structured-output`) and the demo's two seed-004 tracks, logged to the embedded
SQLite store and read back with MlflowClient."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.tasks import RANKING_SPECS
from extracteval.errors import InputError
from extracteval.mlflow.bundle import load_bundle
from extracteval.mlflow.keys import is_valid_key

from tests.fixtures.tracking import REPO, comparison_figures

SLM = REPO / "experiments" / "slm-vs-llm"
MODELS = ("gpt-4o", "llama-3.1-8b", "qwen2.5-1.5b")
RUN_LINE = re.compile(r"run ([0-9a-f]{32})  (comparison \(parent\)|model (.+))")
RATES = ("json_valid_rate", "strict_json_valid_rate", "json_extracted_rate", "exact_match_rate", "field_precision", "field_recall", "field_f1")


_TEMPLATE: dict[str, Path] = {}


def _initialised_db(factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store with MLflow's tables, created once per session: creating the tables
    (dozens of migrations) is most of the cost of a fresh store."""
    if "db" not in _TEMPLATE:
        db = factory.mktemp("mlflow-template") / "mlflow.db"
        MlflowClient(f"sqlite:///{db}").search_experiments()
        _TEMPLATE["db"] = db
    return _TEMPLATE["db"]


@pytest.fixture(scope="module")
def sqlite_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The embedded SQLite store of this module (a copy of the session's initialised store)."""
    db = tmp_path_factory.mktemp("mlflow-sqlite") / "mlflow.db"
    shutil.copyfile(_initialised_db(tmp_path_factory), db)
    return f"sqlite:///{db}"


def _runs(out: str) -> tuple[str | None, dict[str, str]]:
    parent, children = None, {}
    for m in RUN_LINE.finditer(out):
        if m.group(3) is None:
            parent = m.group(1)
        else:
            children[m.group(3)] = m.group(1)
    return parent, children


def _artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> set[str]:
    out: set[str] = set()
    for a in client.list_artifacts(run_id, path):
        out |= _artifacts(client, run_id, a.path) if a.is_dir else {a.path}
    return out


def _structured_args() -> list[str]:
    args = ["--truth", str(SLM / "structured" / "truth.jsonl")]
    for m in MODELS:
        args += ["--predictions", f"{m}={SLM / 'structured' / f'{m}.jsonl'}"]
    return args + ["--baseline", "gpt-4o", "--candidate", "qwen2.5-1.5b", "--decision-metric", "exact_match_rate", "--resamples", "300"]


def test_evaluate_structured_example_logs_what_score_prints(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("score", "structured", *_structured_args(), "--json")
    assert code == 0, err
    expected = json.loads(out)
    kept = tmp_path / "kept"
    code, out, err = cli("evaluate", "structured", *_structured_args(), "--experiment", "slm-structured", "--tracking-uri", sqlite_uri,
                         "--output", str(kept))
    assert code == 0, err
    parent, children = _runs(out)
    assert parent and set(children) == set(MODELS)
    client = MlflowClient(sqlite_uri)
    bundle = load_bundle(kept)

    # every run: exactly the local copy's metrics, params, tags and artifacts
    run_ids = json.loads((kept / "state.json").read_text())["runs"]
    for plan in bundle.runs:
        run = client.get_run(run_ids[plan.key])
        assert run.info.status == "FINISHED"
        assert run.data.metrics == bundle.metrics(plan.key)
        assert run.data.params == dict(plan.params)
        assert dict(plan.tags).items() <= run.data.tags.items()
        assert all(is_valid_key(k) for k in run.data.metrics)
        local = {p.relative_to(bundle.run_dir(plan.key) / "artifacts").as_posix() for p in (bundle.run_dir(plan.key) / "artifacts").rglob("*") if p.is_file()}
        assert _artifacts(client, run.info.run_id) == local
        assert run.data.tags["extracteval.task"] == "structured"
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == "structured-truth" and json.loads(inp.dataset.profile)["num_rows"] == 60

    spec = RANKING_SPECS["structured"]
    for model, rid in children.items():
        run = client.get_run(rid)
        md, exp = run.data.metrics, expected["models"][model]
        for key in (spec.primary, *spec.tie_breaks):  # what the leaderboard ranks by
            assert md[key] == pytest.approx(exp[key.split("/", 1)[1]]), key
        for k in RATES:
            assert md[f"structured/{k}"] == pytest.approx(exp[k])
        for k in ("tp", "fp", "fn"):
            assert md[f"structured/{k}"] == exp["counts"][k]
        assert md["structured/records"] == 60 and md["structured/exact_count"] == exp["counts"]["exact"]
        assert md["wins/field_wins"] == pytest.approx(exp["field_wins"]) and md["ranking/rank"] == exp["rank"]
        assert run.data.tags["mlflow.parentRunId"] == parent
        assert run.data.params["list_matching"] == "positional" and run.data.params["model"] == model
        assert {"extracteval/records.parquet", "extracteval/field_metrics.csv", "extracteval/report.html", "figures/structured_rates.png",
                "figures/field_f1.png", "figures/confusion_counts.png"} <= _artifacts(client, rid)
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{model}")))
        # per flattened path; `items[].sku` is not a valid MLflow key: metric_keys.json maps it
        key = {e["original"]: e["key"] for e in json.loads((local / "metric_keys.json").read_text())["metrics"]}
        assert key["field/items[].sku/f1"] == "field/items_.sku/f1"
        for path, fm in exp["fields"].items():
            for k in ("tp", "fp", "fn", "precision", "recall", "f1"):
                assert md[key[f"field/{path}/{k}"]] == pytest.approx(fm[k]), (model, path, k)
        table = pd.read_csv(local / "field_metrics.csv")
        assert set(table["field"]) == set(exp["fields"]) and table["fn"].sum() == exp["counts"]["fn"]
        rec = pd.read_parquet(local / "records.parquet")
        assert len(rec) == 60 and set(rec["model"]) == {model}
        assert int(rec["exact"].sum()) == exp["counts"]["exact"] and int((~rec["valid"]).sum()) == 60 - exp["counts"]["valid"]
        assert int(rec["tp"].sum()) == exp["counts"]["tp"]
        assert {e["id"] for e in exp["invalid_examples"]} <= set(rec.loc[~rec["valid"], "record_id"])

    # the parent: the comparison and the seed-004 decision
    prun = client.get_run(parent)
    pm, dec = comparison_figures(client, parent), expected["decision"]
    assert pm["decision/gap"] == pytest.approx(dec["gap"]) == pytest.approx(0.5)
    assert (pm["decision/ci_low"], pm["decision/ci_high"]) == (pytest.approx(dec["ci"]["low"]), pytest.approx(dec["ci"]["high"]))
    assert prun.data.params["decision.verdict"] == dec["verdict"] == "fine-tuning recommended"  # settled: CI [33.3, 65.0]
    assert pm["decision/fine_tuning_recommended"] == 1.0 and pm["decision/verdict_settled"] == 1.0
    assert prun.data.params["decision.baseline"] == "gpt-4o" and prun.data.params["decision.candidate"] == "qwen2.5-1.5b"
    assert prun.data.tags["extracteval.role"] == "comparison" and prun.data.tags["extracteval.winner"] == expected["ranking"][0]
    for m in MODELS:
        assert pm[f"models/{m}/structured/field_f1"] == pytest.approx(expected["models"][m]["field_f1"])
        assert pm[f"ranking/{m}/rank"] == expected["models"][m]["rank"]
    local = Path(client.download_artifacts(parent, "extracteval", str(tmp_path / "dl-parent")))
    table = pd.read_csv(local / "decision.csv")
    assert table.loc[0, "verdict"] == dec["verdict"] and table.loc[0, "gap"] == pytest.approx(dec["gap"])
    assert json.loads((local / "result.json").read_text())["decision"] == dec
    assert set(pd.read_csv(local / "leaderboard.csv")["model"]) == set(MODELS)
    assert "fine-tuning recommended" in (local / "report.html").read_text(encoding="utf-8")


def _frame(objects: bool = False) -> pd.DataFrame:
    """12 records; `objects`: some cells are dicts / bytes (what a Python caller passes; MLflow's
    own dataset hashing in `mlflow.models.evaluate` only takes hashable cells, so strings there)."""
    evil = '<script>alert(1)</script>'
    rows = []
    for i in range(12):
        ref = {"user": {"name": f"User {i}", "age": 20 + i}, "tags": ["a", "b"]}
        out: object = json.dumps(ref)
        if i == 1:
            out = "Sure! Here it is:\n```json\n" + json.dumps(ref) + "\n```"  # extracted
        elif i == 2:
            out = '{"user": {"name": "User 2", "age": '  # truncated: invalid, counted
        elif i == 3:
            out = {"user": {"name": "User 3", "age": "23"}, "tags": ["a", "b"]}  # "23" ≠ 23
            out = out if objects else json.dumps(out)
        elif i == 4:
            out = evil + '{"user": {"name": "' + evil + '"}}'  # hostile text around JSON
        elif i == 5:
            out = None  # no output
        elif i == 6:
            out = b"\xff\xfe not utf-8" if objects else "\x00\x01 binary garbage {"
        rows.append({"id": f"r{i:02d}", "prompt": f"p{i}", "reference": ref if objects and i % 2 else json.dumps(ref), "output": out})
    return pd.DataFrame(rows)


def _use_experiment(name: str, tmp_path: Path) -> None:
    import mlflow

    exp = mlflow.get_experiment_by_name(name)
    exp_id = exp.experiment_id if exp else mlflow.create_experiment(name, artifact_location=(tmp_path / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp_id)


def test_evaluator_plugin_counts_malformed_outputs(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.tasks.structured.semantics import score_structured

    df = _frame()
    evil = "<script>alert(1)</script>"
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("structured-plugin", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(data=df, targets="reference", predictions="output", model_type="structured-output",
                                            evaluators="extracteval", evaluator_config={"id_column": "id", "model_name": evil, "figures": False})
    finally:
        mlflow.set_tracking_uri("")
    truth = {r: (json.loads(v) if isinstance(v, str) else v) for r, v in zip(df["id"], df["reference"])}
    direct = score_structured(truth, {"m": dict(zip(df["id"], df["output"]))}).models["m"]
    for k in RATES:
        assert result.metrics[f"structured/{k}"] == pytest.approx(direct.metrics[k]), k
    assert direct.counts.valid == 9 and direct.counts.extracted == 2 and direct.counts.exact == 7
    logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
    assert logged.data.metrics["structured/json_valid_rate"] == pytest.approx(9 / 12)
    assert logged.data.metrics["field/user.age/fp"] == 1 and logged.data.metrics["field/tags_/f1"] == pytest.approx(0.8)  # 16 TP, 8 FN (3 invalid outputs, 1 without tags)
    assert logged.data.tags["extracteval.model"] == evil and logged.data.tags["extracteval.task"] == "structured"
    local = Path(MlflowClient(sqlite_uri).download_artifacts(run.info.run_id, "extracteval", str(tmp_path / "dl")))
    rec = pd.read_parquet(local / "records.parquet")
    assert sorted(rec.loc[~rec["valid"], "record_id"]) == ["r02", "r05", "r06"]
    html = (local / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_score_frame_takes_objects_and_bytes():
    """A Python caller's cells: reference dicts or JSON text; outputs as dicts, text, bytes, None."""
    from extracteval.tasks.structured.adapter import ADAPTER

    df = _frame(objects=True)
    scored = ADAPTER.score_frame(ids=list(df["id"]), targets=list(df["reference"]), predictions={"m": list(df["output"])}, config={},
                                 truth_source="frame")
    c = scored.result.models["m"].counts
    assert (c.records, c.valid, c.extracted, c.exact) == (12, 9, 2, 7)
    rec = ADAPTER.records_frame(scored, "m")
    assert sorted(rec.loc[~rec["valid"], "record_id"]) == ["r02", "r05", "r06"]
    assert list(scored.truth.columns) == ["reference"] and len(scored.truth) == 12


def test_evaluator_optimal_list_matching_option(sqlite_uri, tmp_path):
    import mlflow

    df = pd.DataFrame({"id": ["a", "b"], "reference": ['{"items": [1, 2, 3]}', '{"items": ["x", "y"]}'],
                       "output": ['{"items": [3, 2, 1]}', '{"items": ["y", "x"]}']})
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("structured-optimal", tmp_path)
        metrics = {}
        for mode in ("positional", "optimal"):
            with mlflow.start_run():
                r = mlflow.models.evaluate(data=df, targets="reference", predictions="output", model_type="structured-output",
                                           evaluators="extracteval", evaluator_config={"list_matching": mode, "figures": False})
            metrics[mode] = r.metrics
    finally:
        mlflow.set_tracking_uri("")
    assert metrics["optimal"]["structured/field_f1"] == 1.0
    assert metrics["positional"]["structured/field_f1"] == pytest.approx(1 / 5)  # only items[1]=2 agrees


def test_bad_inputs_are_clear_errors(cli, sqlite_uri, tmp_path, monkeypatch):
    import mlflow

    from extracteval.tasks.structured.adapter import ADAPTER

    with pytest.raises(InputError, match=r"dataset: record 'r2': the reference is text that is not valid JSON"):
        ADAPTER.score_frame(ids=["r1", "r2"], targets=[{"a": 1}, '{"a": '], predictions={"m": ["{}", "{}"]}, config={}, truth_source="dataset")
    with pytest.raises(InputError, match=r"record id 'r1' appears twice"):
        ADAPTER.score_frame(ids=["r1", "r1"], targets=[{"a": 1}, {"a": 2}], predictions={"m": ["{}", "{}"]}, config={}, truth_source="dataset")
    with pytest.raises(InputError, match=r"list_matching: expected one of positional, optimal, but got 'greedy'"):
        ADAPTER.build_config({"list_matching": "greedy"})
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("structured-bad", tmp_path)
        with pytest.raises(InputError, match=r"unknown key\(s\) 'list_match'.*valid keys: .*list_matching"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=_frame(), targets="reference", predictions="output", model_type="structured-output",
                                       evaluators="extracteval", evaluator_config={"list_match": "optimal"})
    finally:
        mlflow.set_tracking_uri("")
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a", "reference": {"x": 1}}\n{"id": "b", "reference": {"x": 2}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("evaluate", "structured", "--truth", str(truth), "--predictions", f"m={truth}", "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "truth.jsonl: line 2: not valid JSON" in err and "Traceback" not in err


def test_demo_logs_both_seed_004_tracks_with_their_decisions(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("demo", "--experiments", str(REPO / "experiments"), "--only", "slm-vs-llm", "--tracking-uri", sqlite_uri)
    assert code == 0, err
    assert "-- structured track" in out and "-- toolcalls track" in out and "not logged" not in out
    client = MlflowClient(sqlite_uri)
    # one experiment per track, so that each holds the runs of one task (and ranks on its own)
    exps = {t: client.get_experiment_by_name(f"extracteval-demo-slm-vs-llm-{t}") for t in ("structured", "toolcalls")}
    runs = client.search_runs([e.experiment_id for e in exps.values()])
    assert all(r.data.tags["extracteval.task"] == t for t, e in exps.items() for r in client.search_runs([e.experiment_id]))
    parents = {r.data.tags["extracteval.task"]: r for r in runs if r.data.tags.get("extracteval.role") == "comparison"}
    children = [r for r in runs if r.data.tags.get("extracteval.role") == "model"]
    assert set(parents) == {"structured", "toolcalls"} and len(children) == 6
    assert set(re.findall(r"run ([0-9a-f]{32})", out)) == {r.info.run_id for r in runs}
    for task, metric in (("structured", "exact_match_rate"), ("toolcalls", "call_accuracy")):
        p = parents[task]
        assert p.data.params["decision.metric"] == metric and p.data.params["decision.baseline"] == "gpt-4o"
        d = comparison_figures(client, p.info.run_id)
        settled = d["decision/verdict_settled"] == 1.0
        assert p.data.params["decision.verdict"] in ("fine-tuning recommended", "moderate", "minimal") if settled \
            else p.data.params["decision.verdict"].startswith("not settled — leaning ")
        # a recommendation only when settled
        assert d["decision/fine_tuning_recommended"] == float(settled and p.data.params["decision.verdict"] == "fine-tuning recommended")
        assert d["decision/ci_low"] <= d["decision/gap"] <= d["decision/ci_high"]
        kids = [c for c in children if c.data.tags["mlflow.parentRunId"] == p.info.run_id]
        assert {c.data.tags["extracteval.model"] for c in kids} == set(MODELS)
        spec = RANKING_SPECS[task]
        assert all({spec.primary, *spec.tie_breaks} <= set(c.data.metrics) for c in kids)
    assert comparison_figures(client, parents["structured"].info.run_id)["decision/gap"] == pytest.approx(0.5)


def test_score_frame_deep_and_numpy_cells():
    """A 10,000-deep reference object and numpy cells (as Parquet gives them) are scored, not raised."""
    import numpy as np

    from extracteval.tasks.structured.adapter import ADAPTER

    deep: object = 1
    for _ in range(10_000):
        deep = {"a": deep}
    text = '{"a": ' * 10_000 + "1" + "}" * 10_000
    scored = ADAPTER.score_frame(ids=["deep", "np"], targets=[deep, {"xs": np.array([1, 2]), "n": np.int64(3)}],
                                 predictions={"m": [text, {"xs": np.array([1, 2]), "n": np.float64(3.0)}]}, config={}, truth_source="frame")
    c = scored.result.models["m"].counts
    assert (c.valid, c.exact, c.tp, c.fp, c.fn) == (2, 2, 4, 0, 0)
