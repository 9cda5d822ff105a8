"""`extracteval rescore` over the task registry: for every task in `TASKS`, an `experiments/`
example is logged with `extracteval evaluate`, its model run is rescored against an edited copy
of the truth, and the new run must carry exactly the metrics that `extracteval evaluate` logs on
the edited truth, the same configuration digest, and the link tag; the unchanged truth is a no-op.
A task whose adapter cannot write or read back its predictions fails here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from extracteval.mlflow.adapters import TASKS
from tests.contract.cases import EXPERIMENTS, task_cases



def _case(task: str) -> tuple[Path, str, str, str, list[str], Callable[[Path, Path], None]]:
    """(example folder, truth file, model, its predictions file, options of `evaluate`, edit of the truth)."""
    case = task_cases()[task]
    r = case.rescore
    base = case.example if isinstance(case.example, Path) else EXPERIMENTS / case.example  # a track's own folder
    return base, r.truth, r.model, r.predictions, list(r.options), r.edit


# task → its rescore case (tests/tasks/<task>/cases.py)
CASES = {task: _case(task) for task in task_cases()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('rescore-tasks') / 'mlflow.db'}"


def _evaluate(cli: Any, uri: str, task: str, truth: Path, experiment: str) -> str:
    base, _t, model, preds, options, _edit = CASES[task]
    opts = [str(base / o) if (base / o).is_file() else o for o in options]
    r = cli("evaluate", task, "--truth", str(truth), "--predictions", f"{model}={base / preds}", *opts,
            "--experiment", experiment, "--tracking-uri", uri, "--no-figures", "--json")
    code, out, err = r
    assert code == 0, err
    return json.loads(out)["mlflow"]["models"][model]


@pytest.mark.parametrize("task", list(TASKS))
def test_rescore_equals_evaluate_on_the_edited_truth(cli: Any, store: str, tmp_path: Path, task: str) -> None:
    assert task in CASES, f"no rescore example for task {task!r}"
    folder, truth_name, *_ = CASES[task]
    truth = folder / truth_name
    edited = tmp_path / f"edited-{truth_name}"
    CASES[task][-1](truth, edited)
    run_id = _evaluate(cli, store, task, truth, f"rescore-{task}")

    same = cli("rescore", "--run", run_id, "--truth", str(truth), "--tracking-uri", store, "--json")
    code, text, err = same
    assert code == 0, err
    doc = json.loads(text)
    assert doc["skipped"] is True and doc["new_run_id"] is None and "nothing to rescore" in doc["message"]

    res = cli("rescore", "--run", run_id, "--truth", str(edited), "--tracking-uri", store, "--json", "--no-figures")
    code, text, err = res
    assert code == 0, err
    out = json.loads(text)
    assert out["skipped"] is False and out["new_run_id"]
    want_id = _evaluate(cli, store, task, edited, f"evaluate-edited-{task}")

    client = MlflowClient(store)
    old, new, want = client.get_run(run_id), client.get_run(out["new_run_id"]), client.get_run(want_id)
    assert new.data.tags["extracteval.rescored_from"] == run_id
    assert new.data.tags["extracteval.task"] == task
    assert new.info.experiment_id == old.info.experiment_id
    assert new.data.tags["extracteval.config_digest"] == old.data.tags["extracteval.config_digest"] == want.data.tags["extracteval.config_digest"]
    assert new.data.tags["extracteval.truth_digest"] == want.data.tags["extracteval.truth_digest"] != old.data.tags["extracteval.truth_digest"]
    got, expected = new.data.metrics, want.data.metrics
    assert sorted(got) == sorted(expected)
    differ = {k: (expected[k], got[k]) for k in expected if not abs(got[k] - expected[k]) < 1e-12}
    assert differ == {}
    assert got != old.data.metrics  # the edit changed the scores, so the comparison above means something
    primary = next(iter(out["new"]))
    assert out["new"][primary] == pytest.approx(got[primary]) and out["old"][primary] == pytest.approx(old.data.metrics[primary])


@pytest.mark.parametrize("damage", [b"{not json", b"[1, 2]", b'{"config": "x"}'])
def test_a_damaged_result_artifact_is_a_clear_error(cli: Any, store: str, tmp_path: Path, damage: bytes) -> None:
    """A run whose logged `result.json` was damaged (or replaced) is refused with exit 2 naming the
    run and the artifact, never a traceback; nothing new is logged."""
    from urllib.parse import unquote, urlparse

    folder, truth_name, *_ = CASES["fields"]
    run_id = _evaluate(cli, store, "fields", folder / truth_name, "rescore-damaged")
    client = MlflowClient(store)
    artifacts = Path(unquote(urlparse(client.get_run(run_id).info.artifact_uri).path))
    (artifacts / "extracteval" / "result.json").write_bytes(damage)
    before = len(client.search_runs([client.get_run(run_id).info.experiment_id]))
    code, out, err = cli("rescore", "--run", run_id, "--truth", str(folder / truth_name), "--tracking-uri", store, "--json")
    assert code == 2 and f"--run {run_id}" in err and "result.json" in err and "Traceback" not in err, err
    assert len(client.search_runs([client.get_run(run_id).info.experiment_id])) == before


def _with_segment(src: Path, dst: Path) -> None:
    """`src` with a `segment` column (CSV) or top-level key (JSON Lines), alternating north/south."""
    import csv

    if src.suffix == ".csv":
        with src.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        with dst.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([[*rows[0], "segment"], *([*r, "north" if k % 2 else "south"] for k, r in enumerate(rows[1:]))])
    else:
        recs = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
        dst.write_text("".join(json.dumps({**r, "segment": "north" if k % 2 else "south"}) + "\n" for k, r in enumerate(recs)), encoding="utf-8")


@pytest.mark.parametrize("task", ["fields", "labels", "json"])
def test_a_truth_column_the_run_sliced_by_stays_unscored_when_rescored(cli: Any, store: str, tmp_path: Path, task: str) -> None:
    """A run that read a truth column as record metadata (`--slice-by segment`) is rescored on an
    edited truth that still has the column: the column is left unscored again, so the new run's
    metrics and configuration digest are those `evaluate --slice-by segment` logs on that truth;
    on the truth it was scored on there is nothing to rescore."""
    folder, truth_name, model, preds, options, edit = CASES[task]
    truth, edited = tmp_path / f"s-{truth_name}", tmp_path / f"e-{truth_name}"
    _with_segment(folder / truth_name, truth)
    edit(folder / truth_name, tmp_path / f"plain-e-{truth_name}")
    _with_segment(tmp_path / f"plain-e-{truth_name}", edited)
    opts = [str(folder / o) if (folder / o).is_file() else o for o in options]

    def evaluate(path: Path, experiment: str) -> str:
        code, out, err = cli("evaluate", task, "--truth", str(path), "--predictions", f"{model}={folder / preds}", *opts, "--slice-by", "segment",
                             "--experiment", experiment, "--tracking-uri", store, "--no-figures", "--json")
        assert code == 0, err
        return json.loads(out)["mlflow"]["models"][model]

    run_id = evaluate(truth, f"sliced-{task}")
    code, text, err = cli("rescore", "--run", run_id, "--truth", str(truth), "--tracking-uri", store, "--json")
    assert code == 0 and json.loads(text)["skipped"] is True, text + err  # the truth it was scored on, metadata and all: nothing to do
    code, text, err = cli("rescore", "--run", run_id, "--truth", str(edited), "--tracking-uri", store, "--json", "--no-figures")
    assert code == 0, err
    new_id = json.loads(text)["new_run_id"]
    want_id = evaluate(edited, f"sliced-edited-{task}")
    client = MlflowClient(store)
    new, want = client.get_run(new_id), client.get_run(want_id)
    assert new.data.tags["extracteval.config_digest"] == want.data.tags["extracteval.config_digest"]
    got = {k: v for k, v in new.data.metrics.items() if not k.startswith("slice/")}
    expected = {k: v for k, v in want.data.metrics.items() if not k.startswith("slice/")}
    assert not any(k.split("/")[1:2] == ["segment"] for k in got), [k for k in got if "/segment/" in k][:3]  # no item of that name
    assert sorted(got) == sorted(expected) and all(abs(got[k] - expected[k]) < 1e-12 for k in expected)
