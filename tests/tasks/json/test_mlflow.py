"""The `json` task in MLflow: `extracteval evaluate json` on the customers example and
`mlflow.models.evaluate(..., model_type="extraction-json", evaluators="extracteval")` on a static
DataFrame, logged to the embedded SQLite store and read back with MlflowClient."""

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

CUSTOMERS = REPO / "experiments" / "customers"
MODELS = ("gpt-4o-mini", "llama-3.1-8b", "regex-baseline")
BUCKETS = ("extra_keys", "gt_null_aio_has_value", "gt_non_null", "aio_missing_or_null", "both_non_null")


@pytest.fixture
def customers_args() -> list[str]:
    return [
        "--truth", str(CUSTOMERS / "truth.jsonl"),
        *(a for m in MODELS for a in ("--predictions", f"{m}={CUSTOMERS / 'predictions' / f'{m}.jsonl'}")),
        "--strategies", str(CUSTOMERS / "strategies.yaml"), "--flatten",
    ]


def test_evaluate_customers_logs_the_score_numbers(cli, sqlite_uri, customers_args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("score", "json", *customers_args, "--json")
    assert code == 0, err
    expected = json.loads(out)
    code, out, err = cli("evaluate", "json", *customers_args, "--experiment", "customers", "--tracking-uri", sqlite_uri, "--output", str(tmp_path / "out"))
    assert code == 0, err
    parent, children = _runs(out)
    assert parent is not None and set(children) == set(MODELS)
    client = MlflowClient(sqlite_uri)
    prun = client.get_run(parent)
    tags = prun.data.tags
    assert tags["extracteval.task"] == "json" and tags["extracteval.winner"] == expected["ranking"][0]
    assert re.fullmatch(r"[0-9a-f]{64}", tags["extracteval.truth_digest"]) and re.fullmatch(r"[0-9a-f]{64}", tags["extracteval.config_digest"])
    pm = comparison_figures(client, parent)
    for m in MODELS:
        assert pm[f"ranking/{m}/rank"] == expected["models"][m]["rank"]
        assert pm[f"models/{m}/rqs/mean"] == pytest.approx(expected["models"][m]["rqs"]["mean"])
    assert sum(pm[f"wins/{m}/field_wins"] for m in MODELS) == pytest.approx(pm["field_winners/sole"] + pm["field_winners/shared"])
    assert {"extracteval/leaderboard.csv", "extracteval/field_winners.csv", "extracteval/report.html",
            "figures/rqs_histogram.png", "figures/field_accuracy.png"} <= _artifact_paths(client, parent)

    spec = RANKING_SPECS["json"]
    for model, rid in children.items():
        run = client.get_run(rid)
        exp = expected["models"][model]
        md = run.data.metrics
        assert run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parent
        assert run.data.tags["extracteval.truth_digest"] == tags["extracteval.truth_digest"]
        assert all(is_valid_key(k) for k in md)
        for k in ("mean", "median", "min", "max"):
            assert md[f"rqs/{k}"] == pytest.approx(exp["rqs"][k])
        for k in ("completeness", "hallucination", "accuracy", "safety"):
            assert md[f"json/{k}"] == pytest.approx(exp[k])
        for b in BUCKETS:
            assert md[f"json/buckets/{b}"] == exp["buckets"][b]
        for k in ("scored", "matched", "invalid_predictions", "missing_records"):
            assert md[f"json/{k}"] == exp[k]
        for f, fa in exp["fields"].items():
            if fa["accuracy"] is None:
                assert f"field/{f}/accuracy" not in md
            else:
                assert md[f"field/{f}/accuracy"] == pytest.approx(fa["accuracy"]), (model, f)
            for b in BUCKETS:
                assert md[f"field/{f}/{b}"] == fa[b]
        # everything the leaderboard ranks by is there
        assert {spec.primary, *spec.tie_breaks} <= set(md)
        assert any(k.startswith(spec.item_prefix) and k.endswith("/" + spec.item_keys[0]) for k in md)
        assert md["ranking/rank"] == exp["rank"]
        params = run.data.params
        assert params["task"] == "json" and params["flatten"] == "True" and params["semantic_threshold"] == "0.5"
        assert json.loads(params["strategies"])["referral_code"] == "IGNORE"
        (inp,) = run.inputs.dataset_inputs
        assert inp.dataset.name == "json-truth" and json.loads(inp.dataset.profile)["num_rows"] == expected["n_records"]
        paths = _artifact_paths(client, rid)
        assert {"extracteval/result.json", "extracteval/field_accuracy.csv", "extracteval/field_accuracy_table.json", "extracteval/records.parquet",
                "extracteval/report.html", "extracteval/metric_keys.json", "figures/rqs_histogram.png", "figures/field_accuracy.png",
                "figures/bucket_counts.png"} <= paths
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        logged = json.loads((local / "result.json").read_text(encoding="utf-8"))
        assert logged["models"][model]["fields"] == exp["fields"]
        rec = pd.read_parquet(local / "records.parquet")
        assert len(rec) == expected["n_records"] and set(rec["model"]) == {model}
        assert rec["rqs"].mean() == pytest.approx(md["rqs/mean"])  # no excluded records here
        assert rec["extra_keys"].sum() == exp["buckets"]["extra_keys"]
        assert rec["keys_extra_keys"].map(len).sum() == exp["buckets"]["extra_keys"]  # the listing, not only the count
        table = pd.read_csv(local / "field_accuracy.csv")
        assert set(table["field"]) == set(exp["fields"]) and set(table["model"]) == {model}
        html = (local / "report.html").read_text(encoding="utf-8")
        assert "Response Quality Score" in html and "Lowest-scoring records" in html


def test_truth_digest_ignores_key_order_and_file_layout(tmp_path):
    """The same golden objects in another key order and line order digest identically."""
    import argparse

    from extracteval.mlflow.bundle import truth_digest
    from extracteval.tasks.json.adapter import ADAPTER

    lines = [json.loads(x) for x in (CUSTOMERS / "truth.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    shuffled = tmp_path / "truth.jsonl"
    shuffled.write_text("\n".join(json.dumps(dict(reversed(list(o.items())))) for o in reversed(lines)), encoding="utf-8")

    def digest(truth: Path) -> str:
        ns = argparse.Namespace(truth=str(truth), predictions=[f"m={CUSTOMERS / 'predictions' / 'regex-baseline.jsonl'}"], strategies=None,
                                similarity=None, embedding_model=None, judge_base_url=None, judge_model=None, fuzzy_threshold=None,
                                semantic_threshold=None, weights=None, flatten=True, id_key="id", safety_key=None, default_safety=None,
                                null_tokens=None, dayfirst=False, records="none")
        return truth_digest(ADAPTER.score_args(ns).truth)

    assert digest(shuffled) == digest(CUSTOMERS / "truth.jsonl")


def _frame(dict_cells: bool = False) -> pd.DataFrame:
    """Customer records; targets as JSON strings (mlflow.models.evaluate hashes the targets
    column, which fails on dict cells), or, for `score_frame` directly, every other one a dict."""
    rows = []
    for i in range(24):
        truth = {"name": f"Customer {i}", "email": f"c{i}@example.com", "tier": ["gold", "silver"][i % 2], "note": None}
        out = dict(truth)
        if i % 4 == 0:
            out["tier"] = "bronze"  # a wrong value
        if i % 6 == 0:
            out["note"] = "invented"  # a value for a null field: hallucination
        if i % 5 == 0:
            del out["email"]  # missing
        cell = json.dumps(out)
        if i == 3:
            cell = f"```json\n{cell}\n```"  # fenced, as LLMs write it: still an object
        if i == 7:
            cell = "Sorry, I cannot help with that."  # not JSON: counted, never raised
        rows.append({"id": f"c-{i:02d}", "email_text": f"mail {i}", "truth": truth if dict_cells and i % 2 else json.dumps(truth),
                     "output": out if dict_cells and i % 3 == 1 and i != 7 else cell})
    return pd.DataFrame(rows)


def _direct(df: pd.DataFrame) -> dict:
    from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json

    truth = {r: t if isinstance(t, dict) else json.loads(t) for r, t in zip(df["id"], df["truth"])}
    preds = {}
    for r, o in zip(df["id"], df["output"]):
        if isinstance(o, dict):
            preds[r] = o
            continue
        try:
            preds[r] = json.loads(o.removeprefix("```json\n").removesuffix("\n```"))
        except ValueError:
            preds[r] = o
    return score_json(truth, [JsonPredictions(name="m", records=preds)], config=JsonConfig(strategies={"name": "FUZZY"})).to_dict()["models"]["m"]


def test_mlflow_evaluate_static_dataframe(sqlite_uri, tmp_path):
    import mlflow

    df = _frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("json-static", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                data=df, targets="truth", predictions="output", model_type="extraction-json", evaluators="extracteval",
                evaluator_config={"id_column": "id", "model_name": "llm-v1", "strategies": {"name": "FUZZY"}},
            )
    finally:
        mlflow.set_tracking_uri("")
    expected = _direct(df)
    assert result.metrics["rqs/mean"] == pytest.approx(expected["rqs"]["mean"])
    assert result.metrics["json/hallucination"] == pytest.approx(expected["hallucination"])
    assert expected["hallucination"] > 0
    assert result.metrics["json/invalid_predictions"] == expected["invalid_predictions"] == 1
    assert result.metrics["field/tier/accuracy"] == pytest.approx(expected["fields"]["tier"]["accuracy"])
    assert expected["fields"]["tier"]["accuracy"] == pytest.approx(17 / 23)  # six wrong tiers; record 7 not an object
    logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
    assert logged.data.metrics["json/buckets/aio_missing_or_null"] == expected["buckets"]["aio_missing_or_null"]
    assert logged.data.tags["extracteval.task"] == "json" and logged.data.tags["extracteval.model"] == "llm-v1"
    assert logged.data.params["strategies"] == '{"name": "FUZZY"}'
    assert {"result", "report", "records", "field_accuracy", "rqs_histogram"} <= set(result.artifacts)
    assert any("not JSON objects" in w for w in result.artifacts["result"].content["warnings"])


def test_score_frame_does_not_depend_on_row_order():
    from extracteval.mlflow.keys import KeyMap
    from extracteval.tasks.json.adapter import ADAPTER

    df = _frame(dict_cells=True)
    shuffled = df.sample(frac=1.0, random_state=3)

    def metrics(frame: pd.DataFrame) -> dict:
        s = ADAPTER.score_frame(ids=list(frame["id"]), targets=list(frame["truth"]), predictions={"m": list(frame["output"])},
                                config={"strategies": {"name": "FUZZY"}}, truth_source="t")
        return ADAPTER.metrics(s, "m", KeyMap.build(ADAPTER.item_names(s)))

    assert metrics(shuffled) == metrics(df)
    # dict cells and JSON-string cells are the same thing
    expected = _direct(df)
    assert metrics(df)["rqs/mean"] == pytest.approx(expected["rqs"]["mean"])
    assert metrics(df)["json/invalid_predictions"] == 1


def test_bad_truth_cell_is_an_input_error_naming_the_record(sqlite_uri, tmp_path):
    import mlflow

    df = _frame()
    df.loc[5, "truth"] = '{"name": "broken"'
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("json-bad", tmp_path)
        with pytest.raises(InputError, match=r"record 'c-05': expected a JSON object, but found invalid JSON"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-json", evaluators="extracteval")
        with pytest.raises(InputError, match=r"unknown key\(s\) 'threshold'.*semantic_threshold"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=_frame(), targets="truth", predictions="output", model_type="extraction-json",
                                       evaluators="extracteval", evaluator_config={"threshold": 0.5})
    finally:
        mlflow.set_tracking_uri("")


def test_evaluate_json_bad_file_exits_2_naming_file_and_line(cli, sqlite_uri, tmp_path):
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a", "x": 1}\n{"id": "b", "x": \n', encoding="utf-8")
    code, out, err = cli("evaluate", "json", "--truth", str(truth), "--predictions", f"m={truth}", "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "Traceback" not in err
    assert str(truth) in err and "line 2" in err


def test_records_frame_lists_the_same_buckets_as_the_core():
    """The per-record Parquet's bucket listing (built vectorised) equals `RecordScore.buckets`."""
    from extracteval.io.config import load_mapping
    from extracteval.tasks.json.adapter import ADAPTER

    scored = ADAPTER.score_experiment(CUSTOMERS, load_mapping(CUSTOMERS / "experiment.yaml"))
    for m in scored.models:
        rec = ADAPTER.records_frame(scored, m).set_index("record_id")
        records = scored.result.models[m].records()
        assert len(rec) == len(records) == 60
        for r in records:
            row = rec.loc[r.record_id]
            assert row["rqs"] == pytest.approx(r.rqs)
            for b in ("extra_keys", "gt_null_aio_has_value", "aio_missing_or_null", "both_non_null"):
                assert list(row[f"keys_{b}"]) == list(r.buckets[b]), (m, r.record_id, b)
            assert list(row["keys_mismatched"]) == list(r.mismatched), (m, r.record_id)


@pytest.mark.parametrize("column", ["safety_score", "risk"])
def test_safety_scores_in_a_data_column_are_read(sqlite_uri, tmp_path, column):
    """A prediction-only object has no safety score: the data's `safety_score` column (or the
    column `safety_column` names) gives each record's, as the pairs files' key does."""
    import mlflow

    df = _frame()
    df[column] = [0.5 if i % 2 else 1.0 for i in range(len(df))]
    config = {"id_column": "id", "strategies": {"name": "FUZZY"}, **({"safety_column": column} if column != "safety_score" else {})}
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment(f"json-safety-{column}", tmp_path)
        with mlflow.start_run(run_name="safe"):
            result = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-json",
                                            evaluators="extracteval", evaluator_config=config)
        # the same scores written into each prediction object: the pairs files' way
        wrapped = df.assign(output=[json.dumps({"prediction": o, "safety_score": s}) for o, s in zip(df["output"], df[column])]).drop(columns=[column])
        with mlflow.start_run(run_name="wrapped"):
            inside = mlflow.models.evaluate(data=wrapped, targets="truth", predictions="output", model_type="extraction-json",
                                            evaluators="extracteval", evaluator_config={k: v for k, v in config.items() if k != "safety_column"})
        bad = df.assign(**{column: ["high"] + [1.0] * (len(df) - 1)})
        with pytest.raises(Exception, match=r"safety_column`: record 'c-00': expected a safety score, a number in \[0, 1\], but found 'high'"):
            with mlflow.start_run(run_name="bad"):
                mlflow.models.evaluate(data=bad, targets="truth", predictions="output", model_type="extraction-json",
                                       evaluators="extracteval", evaluator_config=config)
    finally:
        mlflow.set_tracking_uri("")
    # 0.75 over the 24 rows, but record c-07 is no object: its score is not counted (1.0, the default), as in a file
    assert result.metrics["json/safety"] == pytest.approx((0.75 * 24 - 0.5 + 1.0) / 24)
    assert result.metrics["json/safety"] == pytest.approx(inside.metrics["json/safety"])
    assert result.metrics["rqs/mean"] == pytest.approx(inside.metrics["rqs/mean"])
