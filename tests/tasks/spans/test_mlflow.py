"""The `spans` task in MLflow: `extracteval evaluate spans` on the requirements example and on a
token file, and `mlflow.models.evaluate(..., model_type="extraction-spans",
evaluators="extracteval")` on a static DataFrame, logged to the embedded SQLite store and read
back with MlflowClient."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.tasks import RANKING_SPECS
from extracteval.errors import InputError
from extracteval.mlflow.keys import is_valid_key

from tests.fixtures.tracking import REPO, comparison_figures
from tests.mlflow.test_logging import _artifact_paths, _runs, _use_experiment

REQUIREMENTS = REPO / "experiments" / "requirements"
MODELS = ("qwen3-4b-pipeline", "llama-3.1-8b", "keyword-baseline")
RATIOS = ("precision", "recall", "f1")
COUNTS = ("tp", "fp", "fn")


@pytest.fixture
def requirements_args() -> list[str]:
    return [
        "--truth", str(REQUIREMENTS / "truth.jsonl"),
        *(a for m in MODELS for a in ("--predictions", f"{m}={REQUIREMENTS / 'predictions' / f'{m}.jsonl'}")),
        "--resamples", "200",
    ]


def test_evaluate_requirements_logs_the_score_numbers(cli, sqlite_uri, requirements_args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("score", "spans", *requirements_args, "--json")
    assert code == 0, err
    expected = json.loads(out)
    code, out, err = cli("evaluate", "spans", *requirements_args, "--experiment", "requirements", "--tracking-uri", sqlite_uri,
                         "--output", str(tmp_path / "out"))
    assert code == 0, err
    parent, children = _runs(out)
    assert parent is not None and set(children) == set(MODELS)
    client = MlflowClient(sqlite_uri)
    prun = client.get_run(parent)
    tags = prun.data.tags
    assert tags["extracteval.task"] == "spans" and tags["extracteval.winner"] == expected["ranking"][0]
    assert re.fullmatch(r"[0-9a-f]{64}", tags["extracteval.truth_digest"]) and re.fullmatch(r"[0-9a-f]{64}", tags["extracteval.config_digest"])
    pm = comparison_figures(client, parent)
    for c in expected["comparisons"]:
        pair = f"comparison/{c['higher']} vs {c['lower']}"
        assert pm[f"{pair}/f1_diff"] == pytest.approx(c["difference"]["estimate"])
        assert pm[f"{pair}/ci_low"] == pytest.approx(c["difference"]["low"])
    for m in MODELS:
        assert pm[f"models/{m}/spans/relaxed_0.5/micro/f1"] == pytest.approx(expected["models"][m]["relaxed@0.5"]["micro"]["f1"])
        assert pm[f"wins/{m}/field_wins"] == pytest.approx(expected["models"][m]["tag_wins"])
    assert {"extracteval/leaderboard.csv", "extracteval/tag_winners.csv", "extracteval/f1_vs_threshold.csv", "extracteval/report.html",
            "figures/f1_vs_threshold.png", "figures/tag_f1.png"} <= _artifact_paths(client, parent)

    spec = RANKING_SPECS["spans"]
    for model, rid in children.items():
        run = client.get_run(rid)
        exp = expected["models"][model]
        md = run.data.metrics
        assert run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parent
        assert all(is_valid_key(k) for k in md)
        for mode, seg in (("exact", "exact"), ("relaxed@0.5", "relaxed_0.5"), ("relaxed@0.8", "relaxed_0.8")):
            for k in (*RATIOS, *COUNTS):
                assert md[f"spans/{seg}/micro/{k}"] == pytest.approx(exp[mode]["micro"][k]), (model, mode, k)
            assert md[f"spans/{seg}/macro/f1"] == pytest.approx(exp[mode]["macro"]["f1"])
        assert md["spans/exact/micro/ci_low"] == pytest.approx(exp["ci"]["exact_micro_f1"]["low"])
        assert md["spans/exact/micro/ci_high"] == pytest.approx(exp["ci"]["exact_micro_f1"]["high"])
        for k, v in exp["errors"]["counts"].items():
            assert md[f"spans/errors/{k}"] == v
        for schema, d in exp["nervaluate"].items():  # the SemEval-2013 schemas, overall
            for k in ("precision", "recall", "f1", "correct", "incorrect", "partial", "missed", "spurious"):
                assert md[f"spans/nervaluate/{schema}/{k}"] == pytest.approx(d[k]), (model, schema, k)
        for tag, tm in exp["exact"]["per_tag"].items():
            for k in (*RATIOS, "support", *COUNTS):
                assert md[f"tag/{tag}/{k}"] == pytest.approx(tm[k]), (model, tag, k)
        assert md["wins/field_wins"] == pytest.approx(exp["tag_wins"]) and md["ranking/rank"] == exp["rank"]
        # everything the leaderboard ranks by is there
        assert {spec.primary, *spec.tie_breaks} <= set(md)
        assert all(f"tag/{t}/{k}" in md for t in exp["exact"]["per_tag"] for k in spec.item_keys)
        params = run.data.params
        assert params["task"] == "spans" and params["threshold"] == "0.5" and params["bootstrap"] == "200" and params["unit"] == "char"
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == "spans-truth" and json.loads(inp.dataset.profile)["num_rows"] == expected["n_documents"]
        assert {"extracteval/result.json", "extracteval/tag_metrics.csv", "extracteval/tag_metrics_table.json", "extracteval/records.parquet",
                "extracteval/report.html", "extracteval/metric_keys.json", "figures/f1_vs_threshold.png", "figures/tag_f1.png",
                "figures/tag_counts.png"} <= _artifact_paths(client, rid)
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        logged = json.loads((local / "result.json").read_text(encoding="utf-8"))
        assert logged["models"][model] == exp
        keymap = {x["key"]: x["original"] for x in json.loads((local / "metric_keys.json").read_text(encoding="utf-8"))["metrics"]}
        assert keymap["spans/relaxed_0.5/micro/f1"] == "spans/relaxed@0.5/micro/f1"
        # per-document ledger: every document × tag × mode, summing to the per-tag counts
        rec = pd.read_parquet(local / "records.parquet")
        n_tags = len(expected["tags"])
        assert len(rec) == expected["n_documents"] * n_tags * 3 and set(rec["model"]) == {model}
        sums = rec.groupby(["mode", "tag"], observed=True)[list(COUNTS)].sum()
        for mode in ("exact", "relaxed@0.5", "relaxed@0.8"):
            for tag, tm in exp[mode]["per_tag"].items():
                assert tuple(sums.loc[(mode, tag)]) == (tm["tp"], tm["fp"], tm["fn"]), (model, mode, tag)
        table = pd.read_csv(local / "tag_metrics.csv")
        assert set(table["mode"]) == {"exact", "relaxed@0.5", "relaxed@0.8"} and set(table["model"]) == {model}
        html = (local / "report.html").read_text(encoding="utf-8")
        assert "Error breakdown" in html and "Micro F1 vs relaxed threshold" in html


def test_evaluate_token_file_logs_token_accuracy(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conll = tmp_path / "out.txt"
    conll.write_text("Rockwell NNP B-NP B-NP\nsaid VBD B-VP B-VP\nthe DT B-NP B-NP\nagreement NN I-NP B-NP\n\n"
                     "It PRP B-NP B-NP\nworks VBZ B-VP I-VP\n", encoding="utf-8")
    code, out, err = cli("score", "spans", "--conll", f"tagger={conll}", "--no-ci", "--json")
    assert code == 0, err
    exp = json.loads(out)["models"]["tagger"]
    code, out, err = cli("evaluate", "spans", "--conll", f"tagger={conll}", "--no-ci", "--experiment", "conll", "--tracking-uri", sqlite_uri, "--json")
    assert code == 0, err
    doc = json.loads(out)
    run = MlflowClient(sqlite_uri).get_run(doc["mlflow"]["models"]["tagger"])
    md = run.data.metrics
    assert md["spans/token_accuracy"] == pytest.approx(exp["token_accuracy"]) == pytest.approx(4 / 6)  # `agreement` I-NP/B-NP and `works` B-VP/I-VP differ
    assert md["spans/exact/micro/tp"] == exp["exact"]["micro"]["tp"] == 4  # Rockwell, said, It, works; not "the agreement"
    assert "spans/exact/micro/ci_low" not in md  # --no-ci: no intervals
    assert run.data.params["unit"] == "token" and run.data.params["scheme"] == "conlleval" and run.data.params["truth"] == str(conll)


# ---------------------------------------------------------------------------------------------
# the evaluator plugin on a DataFrame

TEXTS = [
    "The administrator can delete inactive accounts.",
    "If the session expires, the system shall notify the user.",
    "The user must confirm the payment before checkout.",
]


def _sp(text: str, phrase: str, tag: str) -> dict:
    i = text.index(phrase)
    return {"start": i, "end": i + len(phrase), "tag": tag}


def _frame() -> tuple[pd.DataFrame, list[list[dict]]]:
    """Documents with gold spans and one model's output; returns the frame and the spans the
    model's output amounts to once its unreadable parts are set aside."""
    gold = [
        [_sp(TEXTS[0], "administrator", "Main_actor"), _sp(TEXTS[0], "delete", "Action"), _sp(TEXTS[0], "inactive accounts", "Entity")],
        [_sp(TEXTS[1], "If the session expires", "Condition"), _sp(TEXTS[1], "system", "Main_actor"), _sp(TEXTS[1], "notify", "Action")],
        [_sp(TEXTS[2], "user", "Main_actor"), _sp(TEXTS[2], "confirm", "Action"), _sp(TEXTS[2], "before checkout", "Condition")],
    ]
    pred = [
        [_sp(TEXTS[0], "The administrator", "Main_actor"), _sp(TEXTS[0], "delete", "Action"), _sp(TEXTS[0], "accounts", "Entity")],
        [_sp(TEXTS[1], "session expires", "Condition"), _sp(TEXTS[1], "system", "Entity"), _sp(TEXTS[1], "notify", "Action"),
         {"start": 40, "end": 30, "tag": "Action"}],  # ill-formed: dropped and counted
        "I could not find any spans.",  # not a list: predicts nothing, counted
    ]
    rows = []
    for i in range(12):  # four copies of the three documents
        k = i % 3
        target = {"text": TEXTS[k], "spans": gold[k]}
        rows.append({"id": f"req-{i:02d}", "requirement": TEXTS[k], "truth": json.dumps(target),
                     "output": pred[k] if isinstance(pred[k], str) else json.dumps(pred[k])})
    clean = [[s for s in p if s["end"] > s["start"]] if isinstance(p, list) else [] for p in pred]
    return pd.DataFrame(rows), clean


def _score_files(cli, df: pd.DataFrame, clean: list[list[dict]], tmp_path: Path) -> dict:
    """The same documents through the JSONL reader and `score spans --json` (the oracle)."""
    truth, preds = tmp_path / "truth.jsonl", tmp_path / "m.jsonl"
    truth.write_text("\n".join(json.dumps({"id": r, **json.loads(t)}) for r, t in zip(df["id"], df["truth"])), encoding="utf-8")
    preds.write_text("\n".join(json.dumps({"id": r, "pred": clean[i % 3]}) for i, r in enumerate(df["id"])), encoding="utf-8")
    code, out, err = cli("score", "spans", "--truth", str(truth), "--predictions", f"m={preds}", "--no-ci", "--json")
    assert code == 0, err
    return json.loads(out)["models"]["m"]


def test_mlflow_evaluate_static_dataframe(cli, sqlite_uri, tmp_path):
    import mlflow

    df, clean = _frame()
    expected = _score_files(cli, df, clean, tmp_path)
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("spans-static", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                data=df, targets="truth", predictions="output", model_type="extraction-spans", evaluators="extracteval",
                evaluator_config={"id_column": "id", "model_name": "tagger-v1", "bootstrap": 0},
            )
    finally:
        mlflow.set_tracking_uri("")
    for mode, seg in (("exact", "exact"), ("relaxed@0.5", "relaxed_0.5"), ("relaxed@0.8", "relaxed_0.8")):
        for k in (*RATIOS, *COUNTS):
            assert result.metrics[f"spans/{seg}/micro/{k}"] == pytest.approx(expected[mode]["micro"][k]), (mode, k)
    assert result.metrics["spans/relaxed_0.5/micro/tp"] > result.metrics["spans/exact/micro/tp"] > 0  # boundary slips forgiven
    assert result.metrics["spans/errors/type"] == expected["errors"]["counts"]["type"] == 4
    assert result.metrics["tag/Main_actor/support"] == 12
    logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
    assert logged.data.tags["extracteval.task"] == "spans" and logged.data.tags["extracteval.model"] == "tagger-v1"
    assert logged.data.metrics["spans/exact/micro/f1"] == pytest.approx(expected["exact"]["micro"]["f1"])
    assert {"result", "report", "records", "tag_metrics", "f1_vs_threshold"} <= set(result.artifacts)
    doc = result.artifacts["result"].content
    assert doc["invalid_outputs"]["tagger-v1"] == {"count": 4, "record_ids": ["req-02", "req-05", "req-08", "req-11"], "invalid_spans": 4}
    assert any("not a list of spans" in w for w in doc["warnings"]) and any("ill-formed span" in w for w in doc["warnings"])


def test_score_frame_accepts_python_lists_and_does_not_depend_on_row_order():
    from extracteval.mlflow.keys import KeyMap
    from extracteval.tasks.spans.adapter import ADAPTER

    df, _ = _frame()
    objs = df.assign(truth=[json.loads(t) for t in df["truth"]],
                     output=[o if o.startswith("I could") else json.loads(o) for o in df["output"]])

    def metrics(frame: pd.DataFrame) -> dict:
        s = ADAPTER.score_frame(ids=list(frame["id"]), targets=list(frame["truth"]), predictions={"m": list(frame["output"])},
                                config={"bootstrap": 0}, truth_source="t")
        return ADAPTER.metrics(s, "m", KeyMap.build(ADAPTER.item_names(s)))

    base = metrics(df)
    assert metrics(objs) == base
    assert metrics(objs.sample(frac=1.0, random_state=7)) == base


def test_bad_truth_span_is_an_input_error_naming_record_and_span(sqlite_uri, tmp_path):
    import mlflow

    df, _ = _frame()
    df.loc[4, "truth"] = json.dumps({"text": TEXTS[1], "spans": [{"start": 9, "end": 3, "tag": "Condition"}]})
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("spans-bad", tmp_path)
        with pytest.raises(InputError, match=r"record 'req-04': span 0: expected 0 ≤ start < end .*\[9, 3\)"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-spans", evaluators="extracteval")
    finally:
        mlflow.set_tracking_uri("")
    from extracteval.tasks.spans.adapter import ADAPTER

    with pytest.raises(InputError, match=r"record 'a': span 0: tag: expected a non-empty string"):
        ADAPTER.score_frame(ids=["a"], targets=[[{"start": 0, "end": 2, "tag": ""}]], predictions={"m": [[]]}, config={}, truth_source="t")
    with pytest.raises(InputError, match=r"evaluator_config: Expected `threshold` to be a float in the \[0, 1\] range, but got 1.5"):
        ADAPTER.score_frame(ids=["a"], targets=[[]], predictions={"m": [[]]}, config={"threshold": 1.5}, truth_source="t")


def test_evaluate_spans_bad_file_exits_2_naming_file_and_line(cli, sqlite_uri, tmp_path):
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a", "gold": []}\n{"id": "b", "gold": [{"start": 0, "end": "x", "tag": "T"}]}\n', encoding="utf-8")
    code, out, err = cli("evaluate", "spans", "--truth", str(truth), "--predictions", f"m={truth}", "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "Traceback" not in err
    assert str(truth) in err and "line 2" in err


def test_user_strings_are_escaped_and_keys_sanitised(tmp_path):
    """A tag and a model named like markup: escaped in report.html, sanitised in metric keys."""
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.tasks.spans.adapter import ADAPTER

    evil = "<script>alert(1)</script>"
    text = "The administrator can delete accounts."
    target = json.dumps({"text": text, "spans": [{"start": 4, "end": 17, "tag": evil}]})
    output = json.dumps([{"start": 0, "end": 17, "tag": evil}])
    scored = ADAPTER.score_frame(ids=["a", "b"], targets=[target, target], predictions={evil: [output, output]}, config={"bootstrap": 0}, truth_source="t")
    bundle = write_bundle(scored, ADAPTER, tmp_path / "b", experiment="x")
    metrics = bundle.metrics("single")
    assert all(is_valid_key(k) for k in metrics)
    assert metrics["tag/_script_alert_1_script_/support"] == 2 and metrics["spans/relaxed_0.5/micro/tp"] == 2
    html = (bundle.run_dir("single") / "artifacts" / "extracteval" / "report.html").read_text(encoding="utf-8")
    assert "<script" not in html.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
