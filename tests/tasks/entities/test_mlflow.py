"""The `entities` task in MLflow: `extracteval evaluate entities` on the invoices example read back
from the embedded SQLite store, the evaluator plugin on a static DataFrame, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from extracteval.errors import InputError

from tests.fixtures.tracking import REPO

INVOICES = REPO / "experiments" / "invoices"
RUN_LINE = re.compile(r"run ([0-9a-f]{32})  (comparison \(parent\)|model (.+))")
PRESENCE = ("predicted_count", "gold_count", "matched_count", "extra_predictions_count", "missed_gold_count",
            "precision_entities", "recall_entities", "f1_entities")


def _args() -> list[str]:
    return [
        "--truth", str(INVOICES / "truth.jsonl"),
        *[a for m in ("gpt-4o", "layout-ocr-v2", "mistral-7b") for a in ("--predictions", f"{m}={INVOICES / 'predictions' / (m + '.jsonl')}")],
        "--weights", str(INVOICES / "weights.yaml"),
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


def test_evaluate_invoices_logs_the_score_numbers(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, score_out, err = cli("score", "entities", *_args(), "--json")
    assert code == 0, err
    expected = json.loads(score_out)
    code, out, err = cli("evaluate", "entities", *_args(), "--experiment", "invoices", "--tracking-uri", sqlite_uri, "--output", str(tmp_path / "out"))
    assert code == 0, err
    runs = {m.group(3): m.group(1) for m in RUN_LINE.finditer(out)}
    parent = runs.pop(None)
    assert set(runs) == set(expected["ranking"])
    client = MlflowClient(sqlite_uri)

    prun = client.get_run(parent)
    assert prun.data.tags["extracteval.task"] == "entities" and prun.data.tags["extracteval.ranking"] == ", ".join(expected["ranking"])
    assert json.loads(prun.data.params["weights"]) == expected["weights"]
    assert {"extracteval/leaderboard.csv", "extracteval/feature_winners.csv", "figures/feature_f1.png",
            "figures/feature_f1_matched.png", "figures/entity_counts.png"} <= _artifact_paths(client, parent)
    board = pd.read_csv(client.download_artifacts(parent, "extracteval/leaderboard.csv", str(tmp_path / "p")))
    assert list(board["model"]) == expected["ranking"]

    for model, rid in runs.items():
        run = client.get_run(rid)
        exp_m = expected["models"][model]
        mx = run.data.metrics
        for k in PRESENCE:
            assert mx[f"entities/{k}"] == pytest.approx(exp_m["entity_detection_summary"][k]), (model, k)
        for view, prefix in (("strict", ""), ("matched", "matched/")):
            v = exp_m[view]
            assert mx[f"{prefix}entities/macro/f1"] == pytest.approx(v["totals"]["f1"])
            assert mx[f"{prefix}entities/row_accuracy"] == pytest.approx(v["row_accuracy"])
            assert mx[f"{prefix}entities/rows"] == v["rows"]
            for f in expected["features"]:
                for k in ("precision", "recall", "f1", "specificity", "micro_accuracy"):
                    assert mx[f"{prefix}feature/{f}/{k}"] == pytest.approx(v["features"][f][k]), (model, view, f, k)
        assert mx["wins/field_wins"] == pytest.approx(exp_m["feature_wins"])
        assert run.data.tags["extracteval.model"] == model and run.data.tags["mlflow.parentRunId"] == parent
        assert {"extracteval/result.json", "extracteval/feature_metrics.csv", "extracteval/feature_metrics_table.json",
                "extracteval/records.parquet", "extracteval/report.html", "extracteval/metric_keys.json",
                "figures/feature_f1.png", "figures/entity_counts.png"} <= _artifact_paths(client, rid)
        local = Path(client.download_artifacts(rid, "extracteval", str(tmp_path / f"dl-{rid}")))
        assert json.loads((local / "result.json").read_text(encoding="utf-8"))["models"][model] == exp_m
        # the per-record presence ledger sums to the entity counts
        rec = pd.read_parquet(local / "records.parquet")
        e = exp_m["entity_detection_summary"]
        assert set(rec["model"]) == {model} and len(rec) == expected["n_records"]
        assert (rec["matched"].sum(), rec["predicted"].sum(), rec["gold"].sum()) == (e["matched_count"], e["predicted_count"], e["gold_count"])
        assert rec["correct_pairs"].sum() == exp_m["matched"]["correct_rows"]
        assert list(pd.read_csv(local / "feature_metrics.csv")["feature"]) == expected["features"]


def test_leaderboard_keys_are_logged():
    """RANKING_SPECS["entities"] reads keys the adapter logs, and the leaderboard ranks as `score
    entities` does: by the strict view's macro F1. Entity F1 alone would put mistral-7b (finds more
    line items) above layout-ocr-v2 (gets more of them right): pinned, so the choice is deliberate."""
    from extracteval.core.run_ranking import RunSummary
    from extracteval.mlflow.tracking_leaderboard import rank_runs as build_leaderboard
    from extracteval.tasks import RANKING_SPECS
    from extracteval.io.config import load_mapping
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("entities")
    scored = adapter.score_experiment(INVOICES, load_mapping(INVOICES / "experiment.yaml"))
    keys = KeyMap.build([*adapter.item_names(scored), *scored.models])
    spec = RANKING_SPECS["entities"]
    runs = []
    for m in sorted(scored.models):
        metrics = adapter.metrics(scored, m, keys)
        assert {spec.primary, *spec.tie_breaks} <= set(metrics)
        assert all(f"{spec.item_prefix}{f}/{k}" in metrics for f in scored.result.features for k in spec.item_keys)
        runs.append(RunSummary(run_id=m, model=m, task="entities", truth_digest="t", config_digest="c", metrics=metrics))
    board = build_leaderboard(runs).to_dict()
    by_primary = sorted(runs, key=lambda r: -r.metrics[spec.primary])
    assert [e["model"] for e in board["ranking"]] == [r.model for r in by_primary] == list(scored.models) == ["gpt-4o", "layout-ocr-v2", "mistral-7b"]
    by_entity_f1 = sorted(runs, key=lambda r: -r.metrics["entities/f1_entities"])
    assert [r.model for r in by_entity_f1] == ["gpt-4o", "mistral-7b", "layout-ocr-v2"]
    # the item winners the leaderboard finds are the task's own (both on the strict view)
    assert {f: tuple(w["winners"]) for f, w in board["field_winners"].items()} == {f: w.winners for f, w in scored.result.feature_winners.items()}


def _invoice_frame() -> pd.DataFrame:
    rows = []
    for i in range(24):
        gold = [{"description": f"Item {i}-{k}", "quantity": k + 1, "amount": f"{10 * (k + 1)}.00"} for k in range(1 + i % 3)]
        pred = [dict(e) for e in gold]
        if i % 4 == 0:
            pred = pred[:-1]  # a missed line
        if i % 6 == 0:
            pred.append({"description": "Subtotal", "quantity": None, "amount": "999.00"})  # an extra line
        if i % 5 == 0 and pred:
            pred[0]["amount"] = "1.00"  # a wrong value on a matched line
        rows.append({"id": f"inv{i:02d}", "doc": f"invoice {i}", "truth": gold, "output": json.dumps({"entities": pred})})
    rows[9]["output"] = '{"entities": [{"description": "Item 9-0"'  # truncated JSON
    return pd.DataFrame(rows)


def test_evaluator_plugin_static_dataset(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, score_entities

    df = _invoice_frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("entities-static", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(
                data=df, targets="truth", predictions="output", model_type="extraction-entities", evaluators="extracteval",
                evaluator_config={"weights": {"description": 2, "amount": 1}, "types": {"amount": "number"}, "model_name": "llm"},
            )
        truth = {r: list(g) for r, g in zip(df["id"], df["truth"])}
        preds = {}
        for r, o in zip(df["id"], df["output"]):
            try:
                preds[r] = json.loads(o)["entities"]
            except ValueError:
                preds[r] = [o]  # unparsable output: one invalid entity
        direct = score_entities(truth, [ModelEntities(name="llm", records=preds)],
                                config=EntitiesConfig(weights={"description": 2, "amount": 1}, types={"amount": "number"})).models["llm"]
        pres = direct.presence.to_dict()
        assert pres["invalid_predictions_count"] == 1 and pres["extra_predictions_count"] >= 5
        for k in PRESENCE:
            assert result.metrics[f"entities/{k}"] == pytest.approx(pres[k]), k
        assert result.metrics["feature/amount/f1"] == pytest.approx(direct.strict.features["amount"].f1)
        assert result.metrics["matched/entities/row_accuracy"] == pytest.approx(direct.matched.row_accuracy)
        logged = MlflowClient(sqlite_uri).get_run(run.info.run_id)
        assert logged.data.tags["extracteval.task"] == "entities"  # the model_type's default task
        assert logged.data.metrics["entities/invalid_predictions_count"] == 1
        doc = result.artifacts["result"].content
        assert doc["invalid_outputs"]["llm"]["record_ids"] == ["inv09"]
        assert {"records", "feature_metrics", "report", "feature_f1", "entity_counts"} <= set(result.artifacts)
    finally:
        mlflow.set_tracking_uri("")


def test_truth_digest_ignores_entity_and_record_order():
    from extracteval.mlflow.bundle import truth_digest
    from extracteval.tasks.entities.adapter import truth_frame

    a = {"r1": [{"x": 1}, {"x": 2}], "r2": [{"y": "b", "x": 3}]}
    b = {"r2": [{"x": 3, "y": "b"}], "r1": [{"x": 2}, {"x": 1}]}
    assert truth_digest(truth_frame(a)) == truth_digest(truth_frame(b))
    assert truth_digest(truth_frame(a)) != truth_digest(truth_frame({**a, "r2": [{"x": 4}]}))


def test_bad_input_names_the_record(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("entities")
    with pytest.raises(InputError, match=r"record 'b': expected a list of entity objects \(or its JSON string\), but found invalid JSON"):
        adapter.score_frame(ids=["a", "b"], targets=['[{"x": 1}]', "[{"], predictions={"m": ["[]", "[]"]}, config={}, truth_source="dataset")
    with pytest.raises(InputError, match=r"record 'a': entities\[1\]: expected an object"):
        adapter.score_frame(ids=["a"], targets=[[{"x": 1}, "oops"]], predictions={"m": ["[]"]}, config={}, truth_source="dataset")
    df = _invoice_frame()
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("entities-bad", tmp_path)
        with pytest.raises(InputError, match=r"match_threshold.*\[0, 1\].*1\.5"):
            with mlflow.start_run():
                mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-entities",
                                       evaluators="extracteval", evaluator_config={"match_threshold": 1.5})
    finally:
        mlflow.set_tracking_uri("")


def test_evaluate_cli_bad_input_exits_2(cli, sqlite_uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "truth.jsonl"
    bad.write_text('{"id": "A", "entities": [{"x": 1}]}\n{"id": "B", "entities": "none"}\n', encoding="utf-8")
    code, out, err = cli("evaluate", "entities", "--truth", str(bad), "--predictions", f"m={bad}", "--experiment", "bad", "--tracking-uri", sqlite_uri)
    assert code == 2 and "Traceback" not in err
    assert "truth.jsonl" in err and "line 2" in err and "'B'" in err


def test_record_and_entity_order_do_not_change_metrics():
    import random

    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter("entities")
    df = _invoice_frame()
    rng = random.Random(3)
    shuffled = df.sample(frac=1.0, random_state=5)
    shuffled = shuffled.assign(truth=[rng.sample(list(t), len(t)) for t in shuffled["truth"]])
    out = []
    for frame in (df, shuffled):
        scored = adapter.score_frame(ids=list(frame["id"]), targets=list(frame["truth"]), predictions={"m": list(frame["output"])},
                                     config={"weights": {"description": 2, "amount": 1}}, truth_source="dataset")
        keys = KeyMap.build([*adapter.item_names(scored), *scored.models])
        from extracteval.mlflow.bundle import truth_digest

        out.append((adapter.metrics(scored, "m", keys), truth_digest(scored.truth)))
    assert out[0] == out[1]


def test_evaluator_config_takes_a_semantic_strategy_and_similarity_backend(sqlite_uri, tmp_path):
    import mlflow

    from extracteval.tasks.entities.semantics import EntitiesConfig, ModelEntities, score_entities
    from extracteval.core.similarity import FuzzySimilarity
    from extracteval.mlflow.adapters import get_adapter

    gold = {f"inv{i}": [{"description": f"steel bolt m{i}", "amount": "1.00"}, {"description": f"hex nut m{i}", "amount": "2.00"}]
            for i in range(6)}
    # plural and reordered words: only a similarity, not equality, pairs these descriptions
    pred = {r: [{"description": f"hex nuts m{i}", "amount": "2.00"}, {"description": f"bolt steel m{i}" if i % 2 else f"steel bolts m{i}", "amount": "1.00"}]
            for i, r in enumerate(gold)}
    df = pd.DataFrame({"id": list(gold), "truth": [json.dumps(v) for v in gold.values()], "output": [json.dumps(pred[r]) for r in gold]})
    config = {"strategies": {"description": "SEMANTIC"}, "key_fields": "description", "similarity": "fuzzy", "semantic_threshold": 0.9}
    direct = score_entities(gold, [ModelEntities(name="llm", records=pred)],
                            config=EntitiesConfig(strategies={"description": "SEMANTIC"}, key_fields=["description"], semantic_threshold=0.9),
                            similarity=FuzzySimilarity()).models["llm"]
    exact = score_entities(gold, [ModelEntities(name="llm", records=pred)], config=EntitiesConfig(key_fields=["description"])).models["llm"]
    assert direct.presence.to_dict()["matched_count"] == 12 and exact.presence.to_dict()["matched_count"] == 0
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        _use_experiment("entities-semantic", tmp_path)
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-entities",
                                            evaluators="extracteval", evaluator_config={**config, "model_name": "llm"})
        for k in PRESENCE:
            assert result.metrics[f"entities/{k}"] == pytest.approx(direct.presence.to_dict()[k]), k
        assert result.metrics["matched/feature/description/micro_accuracy"] == pytest.approx(direct.matched.features["description"].micro_accuracy)
        assert 0 < direct.matched.features["description"].micro_accuracy < 1  # the 0.9 threshold splits the pairs
        params = MlflowClient(sqlite_uri).get_run(run.info.run_id).data.params
        assert params["semantic_backend"] == "fuzzy" and params["semantic_threshold"] == "0.9"
    finally:
        mlflow.set_tracking_uri("")
    adapter = get_adapter("entities")
    args = dict(ids=list(df["id"]), targets=list(df["truth"]), predictions={"m": list(df["output"])}, truth_source="dataset")
    lexical = adapter.score_frame(config={k: v for k, v in config.items() if k != "similarity"}, **args)
    assert lexical.config["semantic_backend"] == "lexical" and adapter.params(lexical)["semantic_backend"] == "lexical"
    with pytest.raises(InputError, match=r"expected one of embedding, fuzzy, lexical, llm_judge, but got 'meaning'"):
        adapter.score_frame(config={**config, "similarity": "meaning"}, **args)
