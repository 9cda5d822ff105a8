"""The engine as mlflow.genai scorers: per-row feedback and micro metrics logged afterwards."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mlflow.genai")

from tests.contract.cases import task_cases  # noqa: E402


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


# ---- every task with a per-row meaning ---------------------------------------------------------

# task → [(truth, output)]; each set has a right row, a partly wrong row and a malformed output
# (each task's `genai_rows`, tests/tasks/<task>/cases.py)
_TASK_ROWS = {t: list(c.genai_rows) for t, c in task_cases().items() if c.genai_rows}
# the feedback each task must give on every row (the primary one first)
_PRIMARY = {t: c.genai_primary for t, c in task_cases().items() if c.genai_rows}


def _whole(task: str) -> dict[str, float]:
    """The task's own metrics of all rows scored at once, by the adapter the evaluator plugin uses."""
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.adapters import get_adapter

    a = get_adapter(task)
    rows = _TASK_ROWS[task]
    s = a.score_frame(ids=[f"r{i}" for i in range(len(rows))], targets=[t for t, _ in rows], predictions={"m": [o for _, o in rows]},
                      config={"bootstrap": 0} if "bootstrap" in a.config_keys else {}, truth_source="t")
    return a.metrics(s, "m", KeyMap.build(a.item_names(s)))


@pytest.mark.parametrize("task", sorted(_TASK_ROWS))
def test_scorer_per_row_feedback_for_every_task(task):
    from extracteval.mlflow.genai import extraction_scorer

    s = extraction_scorer(task)
    (t0, o0), _, (t2, o2) = _TASK_ROWS[task]
    right = s(outputs=o0, expectations={"expected": t0})
    best = 0.45 + 0.25 + 0.15 if task == "json" else 1.0  # SPEC §5: the best RQS is a + c + s
    assert right[0].name == f"extracteval/{_PRIMARY[task]}" and right[0].value in (pytest.approx(best), True)
    assert right[0].rationale and right[0].metadata["extracteval.task"] == task
    malformed = {f.name: f.value for f in s(outputs=o2, expectations={"expected": t2})}  # counted, never raised
    assert malformed[f"extracteval/{_PRIMARY[task]}"] in (0.0, False) or task == "json"
    if task == "json":  # an unreadable output has no value present: completeness 0, counted invalid
        assert malformed["extracteval/completeness"] == 0.0 and malformed["extracteval/invalid_predictions"] == 1


@pytest.mark.parametrize("task", sorted(_TASK_ROWS))
def test_genai_evaluate_logs_the_tasks_own_micro_metrics(task, sqlite_uri, tmp_path, monkeypatch):
    """Per-row feedback summed by log_micro_metrics equals the engine's metrics over all rows at once."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics

    monkeypatch.chdir(tmp_path)
    data = [{"inputs": {"i": i}, "outputs": o, "expectations": {"expected": t}} for i, (t, o) in enumerate(_TASK_ROWS[task])]
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        mlflow.set_experiment(experiment_id=mlflow.create_experiment(f"genai-{task}", artifact_location=(tmp_path / "artifacts").as_uri()))
        result = mlflow.genai.evaluate(data=data, scorers=[extraction_scorer(task)])
        logged = log_micro_metrics(result)  # the task is read from the feedback metadata
    finally:
        mlflow.set_tracking_uri("")
    whole = _whole(task)
    common = {k.split("/", 1)[1] for k in logged} & set(whole)
    assert len(common) >= 3, (sorted(logged), sorted(whole))
    for k in common:
        assert logged[f"extracteval/{k}"] == pytest.approx(whole[k]), k
    assert logged["extracteval/rows"] == 3 and logged["extracteval/rows_scored"] == 3
    on_run = MlflowClient(sqlite_uri).get_run(result.run_id).data.metrics
    assert all(on_run[k] == pytest.approx(v) for k, v in logged.items())
    assert f"extracteval/{_PRIMARY[task]}/mean" in on_run  # MLflow's own per-row average beside them


def test_scorer_refuses_a_task_without_per_row_meaning(monkeypatch):
    from extracteval.errors import InputError
    from extracteval import tasks
    from extracteval.mlflow.genai import extraction_scorer

    import sys
    import types

    from extracteval.tasks.fields import adapter as fields_adapter

    # a task registered for the evaluator (a package with an adapter) but with no `scorer` module
    package, adapter = types.ModuleType("extracteval.tasks.corpus_only"), types.ModuleType("extracteval.tasks.corpus_only.adapter")
    package.__path__ = []  # a package, so that importing its missing `scorer` module fails as for a real one
    adapter.ADAPTER = fields_adapter.ADAPTER
    monkeypatch.setitem(sys.modules, package.__name__, package)
    monkeypatch.setitem(sys.modules, adapter.__name__, adapter)
    monkeypatch.setitem(tasks.TASKS, "corpus-only", tasks.TaskSpec("corpus-only", "extraction-fields", "corpus_only"))
    with pytest.raises(InputError, match=r"'corpus-only' has no per-row meaning.*supported tasks: fields, json, spans, entities, labels, structured, toolcalls"):
        extraction_scorer("corpus-only")
