"""The engine as mlflow.genai scorers: per-row feedback and micro metrics logged afterwards."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mlflow.genai")


def _rows() -> list[dict]:
    truth = [{"vendor": "Acme Inc.", "total": "100.00"}, {"vendor": "Bolt LLC", "total": None}, {"vendor": "Cora", "total": "7"}]
    outputs = [json.dumps({"vendor": "ACME Inc.", "total": "100"}), {"vendor": "Bolt", "total": "5"}, "I could not find it"]
    return [{"inputs": {"doc": f"d{i}"}, "outputs": o, "expectations": {"expected_fields": t}} for i, (t, o) in enumerate(zip(truth, outputs))]


def test_scorer_gives_per_row_feedback_from_the_engine():
    from extracteval.mlflow.genai import extraction_scorer

    s = extraction_scorer("fields")
    rows = _rows()
    fb = {f.name: f for f in s(outputs=rows[0]["outputs"], expectations=rows[0]["expectations"])}
    assert fb["extracteval/f1"].value == 1.0 and fb["extracteval/exact"].value is True  # casefold + number normalisation
    fb = {f.name: f for f in s(outputs=rows[1]["outputs"], expectations=rows[1]["expectations"])}
    # vendor wrong → FP+FN; total spurious → FP
    assert (fb["extracteval/tp"].value, fb["extracteval/fp"].value, fb["extracteval/fn"].value) == (0, 2, 1)
    assert "vendor: wrong value (FP+FN)" in fb["extracteval/f1"].rationale
    fb = {f.name: f for f in s(outputs=rows[2]["outputs"], expectations=rows[2]["expectations"])}
    assert fb["extracteval/fn"].value == 2 and fb["extracteval/f1"].value == 0.0  # malformed output counted, not raised


def test_scorer_rejects_unknown_config_keys_by_name():
    from extracteval.errors import InputError
    from extracteval.mlflow.genai import extraction_scorer

    with pytest.raises(InputError, match="'treshold'"):
        extraction_scorer("fields", {"treshold": 0.5})


def test_genai_evaluate_then_micro_metrics_on_the_run(sqlite_uri, tmp_path, monkeypatch):
    import mlflow
    from mlflow.tracking import MlflowClient

    from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics

    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("genai", artifact_location=(tmp_path / "artifacts").as_uri()))
        result = mlflow.genai.evaluate(data=_rows(), scorers=[extraction_scorer("fields")])
        logged = log_micro_metrics(result)
    finally:
        mlflow.set_tracking_uri("")
    # summed counts over the three rows: tp 2, fp 2, fn 3
    assert logged["extracteval/total/tp"] == 2 and logged["extracteval/total/fp"] == 2 and logged["extracteval/total/fn"] == 3
    assert logged["extracteval/micro/precision"] == pytest.approx(0.5)
    assert logged["extracteval/micro/recall"] == pytest.approx(0.4)
    metrics = MlflowClient(sqlite_uri).get_run(result.run_id).data.metrics
    assert metrics["extracteval/micro/f1"] == pytest.approx(2 * 0.5 * 0.4 / 0.9)
    assert metrics["extracteval/f1/mean"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)  # the per-row average MLflow logs
