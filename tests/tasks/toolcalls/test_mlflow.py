"""The `toolcalls` task in MLflow: `extracteval evaluate toolcalls` (generic and `--checker bfcl`),
the evaluator plugin (model_type `tool-calling`), logged to the embedded SQLite store and read
back with MlflowClient."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.tasks import RANKING_SPECS
from extracteval.errors import InputError
from extracteval.mlflow.bundle import load_bundle
from extracteval.mlflow.keys import is_valid_key

from tests.fixtures.tracking import REPO, comparison_figures
from tests.tasks.structured.test_mlflow import _artifacts, _runs, _use_experiment

SLM = REPO / "experiments" / "slm-vs-llm"
MODELS = ("gpt-4o", "llama-3.1-8b", "qwen2.5-1.5b")
RATES = ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy")
COUNTS = ("records", "valid_records", "correct_records", "ref_calls", "pred_calls", "invalid_calls", "name_matches", "args_exact", "tp", "fp", "fn")


def _toolcall_args() -> list[str]:
    args = ["--truth", str(SLM / "toolcalls" / "truth.jsonl")]
    for m in MODELS:
        args += ["--predictions", f"{m}={SLM / 'toolcalls' / f'{m}.jsonl'}"]
    return args + ["--baseline", "gpt-4o", "--candidate", "qwen2.5-1.5b", "--resamples", "300"]


def test_evaluate_toolcalls_example_logs_what_score_prints(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("score", "toolcalls", *_toolcall_args(), "--json")
    assert code == 0, err
    expected = json.loads(out)
    kept = tmp_path / "kept"
    code, out, err = cli("evaluate", "toolcalls", *_toolcall_args(), "--experiment", "slm-toolcalls", "--tracking-uri", sqlite_uri,
                         "--output", str(kept), "--no-figures")
    assert code == 0, err
    parent, children = _runs(out)
    assert parent and set(children) == set(MODELS)
    client = MlflowClient(sqlite_uri)
    bundle = load_bundle(kept)
    run_ids = json.loads((kept / "state.json").read_text())["runs"]
    for plan in bundle.runs:  # the store holds exactly the local copy
        run = client.get_run(run_ids[plan.key])
        assert run.info.status == "FINISHED" and run.data.tags["extracteval.task"] == "toolcalls"
        assert run.data.metrics == bundle.metrics(plan.key) and run.data.params == dict(plan.params)
        assert dict(plan.tags).items() <= run.data.tags.items()
        assert all(is_valid_key(k) for k in run.data.metrics)
        local = {p.relative_to(bundle.run_dir(plan.key) / "artifacts").as_posix() for p in (bundle.run_dir(plan.key) / "artifacts").rglob("*") if p.is_file()}
        assert _artifacts(client, run.info.run_id) == local
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == "toolcalls-truth"

    spec = RANKING_SPECS["toolcalls"]
    for model, rid in children.items():
        run = client.get_run(rid)
        md, exp = run.data.metrics, expected["models"][model]
        for key in (spec.primary, *spec.tie_breaks):  # what the leaderboard ranks by
            assert md[key] == pytest.approx(exp[key.split("/", 1)[1]]), key
        for k in RATES:
            assert md[f"toolcalls/{k}"] == pytest.approx(exp[k])
        for k in COUNTS:
            assert md[f"toolcalls/{k}"] == exp["counts"][k], k
        assert md["ranking/rank"] == exp["rank"] and run.data.params["checker"] == "generic"
        # per function: the counts split the model's totals exactly
        functions = {k.split("/")[1] for k in md if k.startswith("function/")}
        assert {"get_weather", "search_flights", "convert_currency", "create_event"} <= functions
        for k in ("ref_calls", "name_matches", "args_exact", "tp", "fp", "fn"):
            assert sum(md[f"function/{f}/{k}"] for f in functions) == exp["counts"][k], k
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{model}")))
        rec = pd.read_parquet(local / "records.parquet")
        assert len(rec) == 60 and int(rec["correct"].sum()) == exp["correct_count"]
        assert sorted(rec.loc[~rec["correct"], "record_id"]) == sorted(exp["failed_ids"])
        assert int(rec["tp"].sum()) == exp["counts"]["tp"] and int((~rec["valid"]).sum()) == 60 - exp["counts"]["valid_records"]
        table = pd.read_csv(local / "function_metrics.csv")
        assert set(table["model"]) == {model} and table["fn"].sum() == exp["counts"]["fn"]
    prun = client.get_run(parent)
    pm, dec = comparison_figures(client, parent), expected["decision"]
    assert dec["metric"] == "call_accuracy"
    for k, v in (("gap", dec["gap"]), ("ci_low", dec["ci"]["low"]), ("ci_high", dec["ci"]["high"])):
        assert pm[f"decision/{k}"] == pytest.approx(v)
    assert prun.data.params["decision.verdict"] == dec["verdict"]
    for m in MODELS:
        assert pm[f"models/{m}/toolcalls/call_accuracy"] == pytest.approx(expected["models"][m]["call_accuracy"])
    assert {"extracteval/decision.csv", "extracteval/leaderboard.csv", "extracteval/function_winners.csv"} <= _artifacts(client, parent)


def test_evaluate_bfcl_simple_python(cli, sqlite_uri, shared_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    b = shared_data / "toolcalls" / "bfcl_v4"
    sub = b / "third_party_submission_glyphh-ada-1.1"
    code, out, err = cli("evaluate", "toolcalls", "--checker", "bfcl", "--questions", str(b / "BFCL_v4_simple_python.json"),
                         "--truth", str(b / "possible_answer" / "BFCL_v4_simple_python.json"),
                         "--predictions", f"glyphh={sub / 'result' / 'BFCL_v4_simple_python_result.json'}",
                         "--experiment", "bfcl", "--tracking-uri", sqlite_uri, "--json")
    assert code == 0, err
    doc = json.loads(out)
    rid = doc["mlflow"]["models"]["glyphh"]
    client = MlflowClient(sqlite_uri)
    run = client.get_run(rid)
    md = run.data.metrics
    assert md["bfcl/accuracy"] == 0.945 and md["bfcl/simple_python/accuracy"] == 0.945
    assert (md["bfcl/correct_count"], md["bfcl/total_count"]) == (378, 400)
    assert md["toolcalls/call_accuracy"] == 0.945  # BFCL's verdict, as in --json
    g = doc["models"]["glyphh"]["generic"]
    assert md["toolcalls/generic_call_accuracy"] == pytest.approx(g["call_accuracy"]) and md["toolcalls/args_f1"] == pytest.approx(g["args_f1"])
    assert md["bfcl/error_type/type_error_nested"] >= 1
    assert run.data.params["checker"] == "bfcl" and run.data.tags["extracteval.role"] == "single"
    published = [json.loads(line) for line in (sub / "score" / "BFCL_v4_simple_python_score.json").read_text().splitlines()[1:] if line.strip()]
    local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / "dl")))
    rec = pd.read_parquet(local / "records.parquet")
    assert set(rec.loc[~rec["correct"], "record_id"]) == {p["id"] for p in published}  # the failed ids, exactly
    assert dict(zip(rec["record_id"], rec["error_type"]))[published[0]["id"]] == published[0]["error_type"]
    assert {"figures/bfcl_accuracy.png", "figures/toolcalls_rates.png", "figures/function_f1.png"} <= _artifacts(client, rid)
    assert (run.inputs.dataset_inputs[0].dataset.name, json.loads(run.inputs.dataset_inputs[0].dataset.profile)["num_rows"]) == ("toolcalls-truth", 400)


def _frame() -> pd.DataFrame:
    ref = [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]
    outputs = [
        json.dumps(ref),  # right
        '[get_weather(city="Paris", unit="celsius")]',  # Python call syntax, right
        json.dumps({"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]}),
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Par',  # malformed argument JSON: invalid, counted
        "I cannot call tools <script>alert(1)</script>",  # prose: invalid
        json.dumps([{"name": "get_time", "arguments": {"tz": "CET"}}]),  # wrong (hallucinated) function
        json.dumps([{"name": "get_weather", "arguments": {"city": "Lyon", "unit": "celsius"}}]),  # wrong value
        "",
    ]
    return pd.DataFrame({"id": [f"q{i}" for i in range(len(outputs))], "prompt": ["weather?"] * len(outputs),
                         "calls": [json.dumps(ref)] * len(outputs), "output": outputs})


def test_evaluator_plugin_counts_malformed_calls(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.tasks.toolcalls.semantics import score_toolcalls

    df = _frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("toolcalls-plugin", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(data=df, targets="calls", predictions="output", model_type="tool-calling",
                                            evaluators="extracteval", evaluator_config={"id_column": "id", "model_name": "slm", "figures": False})
    finally:
        mlflow.set_tracking_uri("")
    direct = score_toolcalls({i: json.loads(c) for i, c in zip(df["id"], df["calls"])}, {"m": dict(zip(df["id"], df["output"]))}).models["m"]
    for k in RATES:
        assert result.metrics[f"toolcalls/{k}"] == pytest.approx(direct.metrics[k]), k
    assert result.metrics["toolcalls/call_accuracy"] == pytest.approx(3 / 8)
    assert result.metrics["toolcalls/valid_records"] == 5  # malformed JSON, prose and the empty output are invalid
    logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
    assert logged.data.metrics["function/get_weather/ref_calls"] == 8
    assert logged.data.metrics["function/_other functions_/fp"] == 1  # the hallucinated get_time(tz=…)
    assert logged.data.tags["extracteval.task"] == "toolcalls" and logged.data.params["possible_answer"] == "False"
    local = Path(MlflowClient(sqlite_uri).download_artifacts(run.info.run_id, "extracteval", str(tmp_path / "dl")))
    rec = pd.read_parquet(local / "records.parquet")
    assert sorted(rec.loc[rec["correct"], "record_id"]) == ["q0", "q1", "q2"]
    assert "<script" not in (local / "report.html").read_text(encoding="utf-8").lower()


def test_score_frame_possible_answers_and_objects():
    """A Python caller's cells: BFCL possible answers (`possible_answer`) and outputs as objects."""
    from extracteval.tasks.toolcalls.adapter import ADAPTER

    answers = [[{"calc_area": {"base": [10], "height": [5], "unit": ["", "cm"]}}], [{"calc_area": {"base": [3], "height": [4], "unit": [""]}}]]
    outputs = [[{"calc_area": {"base": 10, "height": 5}}], {"name": "calc_area", "arguments": {"base": 3, "height": 4, "unit": "m"}}]
    scored = ADAPTER.score_frame(ids=["a", "b"], targets=answers, predictions={"m": outputs}, config={"possible_answer": True}, truth_source="frame")
    m = scored.result.generic.models["m"]
    assert m.metrics["call_accuracy"] == 0.5 and scored.result.generic.models["m"].failed_ids == ("b",)  # unit must be left out in b
    assert list(scored.truth.columns) == ["ground_truth"]
    table = ADAPTER.item_table(scored, "m")
    assert list(table["function"]) == ["calc_area"] and int(table.loc[0, "args_exact"]) == 1


def test_bad_inputs_are_clear_errors(cli, sqlite_uri, shared_data, tmp_path, monkeypatch):
    from extracteval.tasks.toolcalls.adapter import ADAPTER

    with pytest.raises(InputError, match=r"frame: record 'r2'"):
        ADAPTER.score_frame(ids=["r1", "r2"], targets=['[{"name": "f", "arguments": {}}]', '{"unknown": 1, "shape": 2}'],
                            predictions={"m": ["[]", "[]"]}, config={}, truth_source="frame")
    with pytest.raises(InputError, match=r"frame: record 'r1': the reference is empty"):
        ADAPTER.score_frame(ids=["r1"], targets=[None], predictions={"m": ["[]"]}, config={}, truth_source="frame")
    with pytest.raises(InputError, match=r"possible_answer`: expected true or false"):
        ADAPTER.build_config({"possible_answer": "yes"})
    monkeypatch.chdir(tmp_path)
    b = shared_data / "toolcalls" / "bfcl_v4"
    code, out, err = cli("evaluate", "toolcalls", "--checker", "bfcl", "--truth", str(b / "possible_answer" / "BFCL_v4_simple_python.json"),
                         "--predictions", f"m={b / 'BFCL_v4_simple_python.json'}", "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "--checker bfcl needs --questions FILE" in err and "Traceback" not in err
    assert not (tmp_path / "mlruns").exists()


def test_evaluator_with_a_callable_model_returning_call_objects(sqlite_uri, tmp_path):
    """A model (Python callable) called in batches, answering with call objects, not text."""
    import mlflow

    df = _frame().drop(columns=["output"])
    batches: list[int] = []

    def model(batch: pd.DataFrame) -> list:
        batches.append(len(batch))
        return [[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius" if i % 2 else "kelvin"}}] for i in range(len(batch))]

    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("toolcalls-callable", tmp_path)
        with mlflow.start_run():
            result = mlflow.models.evaluate(model=model, data=df, targets="calls", model_type="tool-calling", evaluators="extracteval",
                                            evaluator_config={"batch_size": 3, "figures": False, "generation": {"temperature": 0}})
    finally:
        mlflow.set_tracking_uri("")
    assert batches == [3, 3, 2]
    assert result.metrics["toolcalls/valid_call_rate"] == 1.0 and result.metrics["toolcalls/name_match_rate"] == 1.0
    assert result.metrics["toolcalls/call_accuracy"] == pytest.approx(3 / 8)  # the row at position 1 of each batch
    assert result.metrics["function/get_weather/tp"] == 8 + 3 and result.metrics["function/get_weather/fp"] == 5


def test_bfcl_experiment_spec_scores_several_categories(shared_data, tmp_path):
    """An experiment.yaml with `checker: bfcl` (lists of question / answer / result files)."""
    from extracteval.mlflow.keys import KeyMap
    from extracteval.tasks.toolcalls.adapter import ADAPTER

    b = shared_data / "toolcalls" / "bfcl_v4"
    cats = ("simple_python", "multiple")
    spec = {"task": "toolcalls", "checker": "bfcl", "questions": [str(b / f"BFCL_v4_{c}.json") for c in cats],
            "truth": [str(b / "possible_answer" / f"BFCL_v4_{c}.json") for c in cats],
            "predictions": {"glyphh": [str(b / "third_party_submission_glyphh-ada-1.1" / "result" / f"BFCL_v4_{c}_result.json") for c in cats]}}
    scored = ADAPTER.score_experiment(tmp_path, spec)
    keys = KeyMap.build([*ADAPTER.item_names(scored), *scored.models])
    m = ADAPTER.metrics(scored, "glyphh", keys)
    assert m["bfcl/simple_python/accuracy"] == 0.945 and m["bfcl/multiple/accuracy"] == 0.945
    assert m["bfcl/total_count"] == 600 and m["toolcalls/call_accuracy"] == m["bfcl/accuracy"] == 0.945
    rec = ADAPTER.records_frame(scored, "glyphh")
    assert set(rec["category"]) == set(cats) and int((~rec["correct"]).sum()) == 600 - m["bfcl/correct_count"]
    assert list(scored.truth.columns) == ["category", "ground_truth", "functions"]


def _mangling_files(d: Path) -> dict[str, Path]:
    fn = {"name": "calc.area", "parameters": {"type": "dict", "properties": {"base": {"type": "integer"}}, "required": ["base"]}}
    def rows(path: Path, items: list) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
        return path

    return {
        "q": rows(d / "q.json", [{"id": f"simple_{i}", "function": fn} for i in range(4)]),
        # simple_3's answer names the function without its prefix: scored against the described one, with a warning
        "a": rows(d / "a.json", [{"id": f"simple_{i}", "ground_truth": {"area" if i == 3 else "calc.area": {"base": [i]}}} for i in range(4)]),
        "fc": rows(d / "fc.json", [{"id": f"simple_{i}", "result": [{"calc_area": json.dumps({"base": i})}]} for i in range(4)]),
        "prompt": rows(d / "prompt.json", [{"id": f"simple_{i}", "result": f"[calc.area(base={i if i else 9})]"} for i in range(4)]),
    }


def test_bfcl_mangling_per_model_through_evaluate_leaderboard_and_compare(cli, sqlite_uri, tmp_path, monkeypatch):
    """A function-calling model (needs '.' → '_') and a prompt model: scored in one evaluate run, or
    in two, they rank together; the per-model setting is a param of each model run."""
    monkeypatch.chdir(tmp_path)
    f = _mangling_files(tmp_path)
    common = ["evaluate", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--tracking-uri", sqlite_uri]
    code, out, err = cli(*common, "--predictions", f"fc={f['fc']}", "--predictions", f"prompt={f['prompt']}",
                         "--underscore-to-dot", "fc", "--experiment", "mangle-one", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["config"]["underscore_to_dot"] == ["fc"] and [w["kind"] for w in doc["warnings"]] == ["answer_names_other_function"]
    client = MlflowClient(sqlite_uri)
    runs = {m: client.get_run(doc["mlflow"]["models"][m]) for m in ("fc", "prompt")}
    assert {m: r.data.params["underscore_to_dot"] for m, r in runs.items()} == {"fc": "true", "prompt": "false"}
    assert runs["fc"].data.params["underscore_to_dot_models"] == "fc" and runs["fc"].data.params["bfcl_warnings"] == "1"
    assert (runs["fc"].data.metrics["bfcl/accuracy"], runs["prompt"].data.metrics["bfcl/accuracy"]) == (1.0, 0.75)
    # the same two models in two separate runs: the same config digest, so one leaderboard group
    for model, extra in (("fc", ["--underscore-to-dot", "fc"]), ("prompt", [])):
        code, out, err = cli(*common, "--predictions", f"{model}={f[model]}", *extra, "--experiment", "mangle-two", "--json")
        assert code == 0, err
    code, out, err = cli("leaderboard", "--experiment", "mangle-two", "--tracking-uri", sqlite_uri, "--no-log", "--no-ci", "--json")
    assert code == 0, err
    lb = json.loads(out)
    assert [e["model"] for e in lb["ranking"]] == ["fc", "prompt"] and len(lb["groups"]) == 1
    assert any("mangling" in n and "fc" in n for n in lb["notes"])
    code, out, err = cli("compare", "--experiment", "mangle-two", "--baseline", "fc", "--candidate", "prompt", "--tracking-uri", sqlite_uri, "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any("baseline on, candidate off" in n for n in notes) and not any("config digests differ" in n for n in notes)
