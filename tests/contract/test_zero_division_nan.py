"""`zero_division="nan"` over the task registry: the tasks that offer it (`core.counts.NAN_TASKS`:
labels, entities) give the same numbers through every door — the command line in memory, in
chunks and with workers, the Python API, the evaluator plugin and `rescore` — and every document
they write is strict JSON (an undefined number is `null`); every other task refuses it with exit
code 2 and a message naming the tasks that offer it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import extracteval
from extracteval.core.counts import NAN_TASKS
from extracteval.core.strict_json import dumps
from extracteval.errors import InputError
from extracteval.mlflow.adapters import get_adapter
from extracteval.tasks import TASKS
from tests.conftest import run_cli
from tests.contract.cases import EXPERIMENTS, task_cases
from tests.contract.test_door_parity import _differences, _example, _report, _without_source_names

mlflow = pytest.importorskip("mlflow")

OFFERING = [t for t in TASKS if t in NAN_TASKS]
# every other task that has a `zero_division` option (the json task's scores have no ratio over a count that may be 0)
REFUSING = [t for t in TASKS if t not in NAN_TASKS and "zero_division" in get_adapter(t).config_keys]


def strict(text: str) -> Any:
    """A JSON document that must be strict JSON: a NaN or Infinity token fails the test."""
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} in a JSON document")

    return json.loads(text, parse_constant=refuse)


def _nulls(doc: Any) -> int:
    """Undefined numbers (`null`) in a document; a feature without a positive label has `positive_label: null` besides."""
    if isinstance(doc, dict):
        return sum(_nulls(v) for k, v in doc.items() if k != "positive_label")
    if isinstance(doc, list):
        return sum(_nulls(v) for v in doc)
    return doc is None


def _score(task: str, *extra: str) -> str:
    r = run_cli("score", task, *task_cases()[task].score_args, "--zero-division", "nan", "--json", *extra)
    assert r.code == 0, r.err
    return r.out


def test_the_tasks_that_offer_nan_are_in_the_registry() -> None:
    assert sorted(OFFERING) == sorted(NAN_TASKS)


@pytest.mark.parametrize("task", OFFERING)
def test_in_memory_in_chunks_and_with_workers_the_same_document(task: str) -> None:
    whole = _score(task)
    doc = strict(whole)
    assert doc["config"]["zero_division"] == "nan"
    assert _nulls(doc["models"]) > 0, "the example has no undefined value: the test would compare nothing undefined"
    for engine in (("--chunk-size", "7"), ("--workers", "2")):
        got = strict(_score(task, *engine))
        diff = _differences(doc, got)
        assert not diff, f"{engine}:\n{_report(diff)}"


@pytest.mark.parametrize("task", OFFERING)
def test_the_python_api_gives_the_command_lines_numbers(task: str) -> None:
    ex = _example(task)
    r = run_cli("score", task, "--truth", str(ex.truth), "--predictions", f"{ex.model}={ex.predictions}", *ex.cli_options,
                "--zero-division", "nan", "--json")
    assert r.code == 0, r.err
    want = _without_source_names(strict(r.out), ex.model)
    for given in ("nan", float("nan")):
        result = extracteval.score(task, str(ex.truth), {ex.model: str(ex.predictions)}, **{**ex.config, "zero_division": given})
        got = _without_source_names(strict(dumps(result.to_dict(), default=str)), ex.model)
        diff = _differences({k: want[k] for k in ("models", "ranking", "config")}, {k: got[k] for k in ("models", "ranking", "config")})
        assert not diff, _report(diff)


@pytest.mark.parametrize("task", REFUSING)
def test_other_tasks_refuse_nan_by_name(task: str) -> None:
    r = run_cli("score", task, *task_cases()[task].score_args, "--zero-division", "nan")
    assert r.code == 2, (r.code, r.err)
    assert "nan" in r.err and "labels and entities" in r.err and "Traceback" not in r.err, r.err
    ex = _example(task)
    with pytest.raises(InputError, match="labels and entities"):
        extracteval.score(task, str(ex.truth), {ex.model: str(ex.predictions)}, **{**ex.config, "zero_division": "nan"})


# ---- MLflow: the evaluator plugin, the logged runs read back, rescore


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("nan-mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("nan-parity")
    yield uri
    mlflow.set_tracking_uri("")


def _same_metrics(got: dict[str, float], want: dict[str, float]) -> dict[str, tuple[float, float]]:
    assert sorted(got) == sorted(want)
    return {k: (want[k], got[k]) for k in want if not ((math.isnan(want[k]) and math.isnan(got[k])) or abs(got[k] - want[k]) < 1e-12)}


@pytest.mark.parametrize("task", OFFERING)
def test_the_evaluator_plugin_logs_the_command_lines_metrics(store: str, tmp_path: Path, task: str) -> None:
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.bundle import write_bundle
    from tests.contract.test_evaluator_parity import CASES, _frame, _models, _read, _spec

    name = next(n for n, (t, *_rest) in CASES.items() if t == task)
    folder, spec = _spec(name)
    adapter = get_adapter(task)

    def by_command_line(model: str, zd: Any) -> dict[str, float]:  # the `extracteval evaluate` path: the metrics it bundles for upload
        scored = adapter.score_experiment(folder, {**spec, "predictions": {model: str(folder / spec["predictions"][model])}, "zero_division": zd})
        return write_bundle(scored, adapter, tmp_path / f"bundle-{model}-{zd}", experiment=None, tracking_uri=None, figures=False).metrics("single")

    # the first model whose metrics the NaN rule changes (and whose records a DataFrame of truth rows holds)
    truth_ids = set(_read(folder / spec["truth"])["id"])
    model, want = next((m, nan) for m in _models(name) if set(_read(folder / spec["predictions"][m])["id"]) <= truth_ids
                       for nan in [by_command_line(m, "nan")] if _same_metrics(nan, by_command_line(m, 0.0)))
    df, config = _frame(name, model)
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type=CASES[name][1], evaluators="extracteval",
                                        evaluator_config={**config, "zero_division": "nan"})
    got = dict(result.metrics)
    assert _same_metrics(got, want) == {}
    logged = mlflow.tracking.MlflowClient(store).get_run(run.info.run_id).data
    assert logged.params["zero_division"] == "nan"
    assert _same_metrics({k: logged.metrics[k] for k in got}, got) == {}  # NaN logged as NaN, read back as NaN


@pytest.mark.parametrize("task", OFFERING)
def test_rescore_reads_nan_back_and_equals_evaluate_on_the_edited_truth(cli: Any, store: str, tmp_path: Path, task: str) -> None:
    from mlflow.tracking import MlflowClient

    case = task_cases()[task]
    r = case.rescore
    base = EXPERIMENTS / case.example
    # labels: a positive label no row holds, so the feature's precision, recall and F1 are undefined (NaN) in every run
    options = [str(base / o) if (base / o).is_file() else o for o in r.options] + (["--positive-label", "sentiment=furious"] if task == "labels" else [])

    def evaluate(truth: Path, experiment: str) -> str:
        code, out, err = cli("evaluate", task, "--truth", str(truth), "--predictions", f"{r.model}={base / r.predictions}", *options,
                             "--zero-division", "nan", "--experiment", experiment, "--tracking-uri", store, "--no-figures", "--json")
        assert code == 0, err
        return strict(out)["mlflow"]["models"][r.model]

    edited = tmp_path / f"edited-{r.truth}"
    r.edit(base / r.truth, edited)
    run_id = evaluate(base / r.truth, f"nan-rescore-{task}")
    code, text, err = cli("rescore", "--run", run_id, "--truth", str(edited), "--tracking-uri", store, "--json", "--no-figures")
    assert code == 0, err
    out = strict(text)
    want_id = evaluate(edited, f"nan-edited-{task}")
    client = MlflowClient(store)
    new, want = client.get_run(out["new_run_id"]).data, client.get_run(want_id).data
    assert new.params["zero_division"] == want.params["zero_division"] == "nan"
    assert _same_metrics(new.metrics, want.metrics) == {}
    RESCORED_NAN[task] = any(math.isnan(v) for v in new.metrics.values())
    if task == "labels":  # the undefined feature read back by compare and leaderboard
        metric = "feature/sentiment/precision"
        assert math.isnan(new.metrics[metric])
        code, _out, err = cli("compare", "--baseline", run_id, "--candidate", out["new_run_id"], "--metric", metric, "--allow-different-truth",
                              "--tracking-uri", store)
        assert code == 2 and "undefined" in err and "Traceback" not in err, err
        code, text, err = cli("leaderboard", "--experiment", f"nan-rescore-{task}", "--metric", metric, "--group-by-truth", "--no-log", "--no-ci",
                              "--tracking-uri", store, "--json")
        assert code == 0, err
        assert [e["score"] for g in strict(text)["groups"] for e in g["ranking"]] == [None, None]


RESCORED_NAN: dict[str, bool] = {}  # task → whether its rescored run logged an undefined metric


def test_some_rescored_run_held_an_undefined_metric() -> None:
    # runs after the rescore cases above (file order): NaN metrics went through the store and back
    assert any(RESCORED_NAN.values()), RESCORED_NAN


# ---- mlflow.genai: a row's undefined value is no feedback; the run's aggregates are logged as NaN where undefined


def test_genai_scorer_leaves_a_rows_undefined_value_out_of_its_feedback(sqlite_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    from extracteval.mlflow.genai import extraction_scorer, log_micro_metrics

    pytest.importorskip("mlflow.genai")
    rows = [  # the second row predicts no entity: its entity precision is 0/0
        {"inputs": {"d": 1}, "outputs": json.dumps({"entities": [{"description": "Pen", "amount": "1.00"}]}),
         "expectations": {"expected": [{"description": "Pen", "amount": "1.00"}]}},
        {"inputs": {"d": 2}, "outputs": json.dumps({"entities": []}), "expectations": {"expected": [{"description": "Ink", "amount": "2.00"}]}},
    ]
    s = extraction_scorer("entities", {"zero_division": "nan"})
    first, second = ({f.name: f.value for f in s(outputs=r["outputs"], expectations=r["expectations"])} for r in rows)
    assert first["extracteval/entity_precision"] == 1.0 and "extracteval/entity_precision" not in second
    assert second["extracteval/entity_recall"] == 0.0 and second["extracteval/entity_f1"] == 0.0
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(sqlite_uri)
    try:
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("genai-nan", artifact_location=(tmp_path / "artifacts").as_uri()))
        result = mlflow.genai.evaluate(data=rows, scorers=[s])
        logged = log_micro_metrics(result)
    finally:
        mlflow.set_tracking_uri("")
    assert result.metrics["extracteval/entity_precision/mean"] == 1.0  # MLflow's mean over the rows that define it
    assert logged["extracteval/entities/precision_entities"] == 1.0 and logged["extracteval/entities/recall_entities"] == 0.5
    assert MlflowClient(sqlite_uri).get_run(result.run_id).data.metrics["extracteval/entities/precision_entities"] == 1.0
