"""Slices through every door, for every task of the registry: `score <task> --json`, the Python
API (`extracteval.score(..., slice_by=…)`, `.slices`), the evaluator plugin
(`mlflow.models.evaluate(..., evaluator_config={"slice_by": …})`, its logged
`extracteval/slices.json`) and `evaluate <task>` give the same slices, number for number; and a
metadata column of the ground truth is read, never scored.

Each task's example (its first model; predictions for ids outside the truth left out, which a
DataFrame of truth rows cannot hold) is sliced by a text column and a numeric one. The command
line and the API read them from a metadata file keyed by record id; the evaluator from columns of
the evaluated DataFrame itself. The stores are real SQLite tracking stores in a temporary folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

mlflow = pytest.importorskip("mlflow")

import extracteval  # noqa: E402
from extracteval.core.slices import ALL  # noqa: E402
from extracteval.tasks import TASKS  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.contract.test_door_parity import _example  # noqa: E402
from tests.contract.test_evaluator_parity import CASES, _frame, _read  # noqa: E402
from tests.contract.test_door_parity import EXAMPLE  # noqa: E402

SLICE_BY = ["channel", "size"]
MIN_SIZE = "5"


def _text(rows: list[dict[str, Any]]) -> str:
    """Rows as canonical JSON (NaN and None compared as written)."""
    return json.dumps(rows, sort_keys=True, default=str)


def _kept(task: str, tmp: Path) -> tuple[Any, Path, pd.DataFrame]:
    """The task's example, its first model's predictions restricted to the truth's ids, and a
    metadata table (id, channel, size) of the truth's records."""
    ex = _example(task)
    truth_ids = [str(i) for i in _read(ex.truth)["id"]]
    path = ex.predictions
    pred = _read(path)
    if not set(map(str, pred["id"])) <= set(truth_ids):
        lines = path.read_text(encoding="utf-8").splitlines()
        path = tmp / path.name
        path.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.split(",", 1)[0] in set(truth_ids)]) + "\n", encoding="utf-8")
    rng = np.random.default_rng(sum(map(ord, task)))
    meta = pd.DataFrame({"id": truth_ids, "channel": rng.choice(["email", "chat", "phone"], len(truth_ids)),
                         "size": rng.integers(1, 500, len(truth_ids))})
    return ex, path, meta


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("slices")
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    mlflow.set_experiment("slices")
    yield root
    mlflow.set_tracking_uri("")


@pytest.mark.parametrize("task", list(TASKS))
def test_every_door_gives_the_same_slices(task: str, store: Path, tmp_path: Path) -> None:
    ex, pred, meta = _kept(task, tmp_path)
    meta_file = tmp_path / "meta.csv"
    meta.to_csv(meta_file, index=False)
    r = run_cli("score", task, "--truth", str(ex.truth), "--predictions", f"{ex.model}={pred}", *ex.cli_options,
                *[a for c in SLICE_BY for a in ("--slice-by", c)], "--metadata", str(meta_file), "--slice-min-size", MIN_SIZE, "--json")
    assert r.code == 0, r.err
    cli = json.loads(r.out)["slices"]
    assert {row["slice"] for row in cli["rows"]} == {ALL, *SLICE_BY}
    # the Python API: the same keys, from the file and from a DataFrame of metadata
    api = extracteval.score(task, ex.truth, {ex.model: pred}, **ex.config, slice_by=SLICE_BY, metadata=str(meta_file), slice_min_size=5)
    assert _text(api.to_dict()["slices"]["rows"]) == _text(cli["rows"])
    assert api.to_dict()["slices"]["gaps"] == cli["gaps"] and api.to_dict()["slices"]["weakest"] == cli["weakest"]
    frame = api.slices
    assert isinstance(frame, pd.DataFrame)
    pd.testing.assert_frame_equal(frame, pd.DataFrame(cli["rows"]), check_exact=True)
    api2 = extracteval.score(task, ex.truth, {ex.model: pred}, **ex.config, slice_by=SLICE_BY, metadata=meta, slice_min_size=5)
    assert _text(api2.to_dict()["slices"]["rows"]) == _text(cli["rows"])
    # the evaluator plugin: the metadata as columns of the evaluated data, its run's slices.json
    name = EXAMPLE[task]
    df, config = _frame(name, ex.model)
    by_id = meta.set_index("id")
    df = df.assign(channel=[by_id.loc[str(i), "channel"] for i in df["id"]], size=[by_id.loc[str(i), "size"] for i in df["id"]])
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type=CASES[name][1], evaluators="extracteval",
                                        evaluator_config={**config, "model_name": ex.model, "slice_by": SLICE_BY, "slice_min_size": 5})
    logged = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="extracteval/slices.json",
                                                                 dst_path=str(tmp_path))).read_text(encoding="utf-8"))
    assert _text(logged["rows"]) == _text(cli["rows"])
    assert "slices" in result.artifacts and "slices.parquet" in result.artifacts
    assert any(k.startswith("slice/channel/") for k in result.metrics)
    # no slicing column became a scored column
    assert not any("channel" in k or "size" in k for k in result.metrics if not k.startswith("slice/"))


@pytest.mark.parametrize("task", list(TASKS))
def test_a_metadata_column_of_the_truth_is_read_not_scored(task: str, tmp_path: Path) -> None:
    """The truth with the metadata as its own column (CSV) or key (JSON Lines) gives the result
    of the truth without it, and the slices of the metadata given in a file."""
    ex, pred, meta = _kept(task, tmp_path)
    truth = tmp_path / ex.truth.name
    by_id = meta.set_index("id")
    if ex.truth.suffix == ".csv":
        t = pd.read_csv(ex.truth, dtype=str, keep_default_na=False)
        t["channel"] = [by_id.loc[i, "channel"] for i in t["id"]]
        t.to_csv(truth, index=False)
    else:
        recs = [json.loads(ln) for ln in ex.truth.read_text(encoding="utf-8").splitlines() if ln.strip()]
        truth.write_text("".join(json.dumps({**r, "channel": by_id.loc[str(r["id"]), "channel"]}) + "\n" for r in recs), encoding="utf-8")
    common = ["--predictions", f"{ex.model}={pred}", *ex.cli_options, "--slice-min-size", MIN_SIZE, "--json"]
    inside = run_cli("score", task, "--truth", str(truth), *common, "--slice-by", "channel")
    meta_file = tmp_path / "meta.csv"
    meta.to_csv(meta_file, index=False)
    apart = run_cli("score", task, "--truth", str(ex.truth), *common, "--slice-by", "channel", "--metadata", str(meta_file))
    plain = run_cli("score", task, "--truth", str(ex.truth), *common[:-3], "--json")
    assert inside.code == apart.code == plain.code == 0, inside.err + apart.err
    a, b, c = json.loads(inside.out), json.loads(apart.out), json.loads(plain.out)
    # the Python API on the same truth file, and (a table) on it read into a DataFrame: the command line's document
    api = extracteval.score(task, truth, {ex.model: pred}, **ex.config, slice_by=["channel"], slice_min_size=5).to_dict()
    assert api["inputs"]["truth"] == str(truth)
    docs = [api]
    if truth.suffix == ".csv":
        docs.append(extracteval.score(task, pd.read_csv(truth, dtype=str, keep_default_na=False), {ex.model: pred}, **ex.config,
                                      slice_by=["channel"], slice_min_size=5).to_dict())
    for d in docs:
        assert _text(d.pop("slices")["rows"]) == _text(a["slices"]["rows"])
        d.pop("inputs")
    assert _text(a.pop("slices")["rows"]) == _text(b.pop("slices")["rows"])
    assert a.pop("inputs")["truth"] == str(truth)
    b.pop("inputs"), c.pop("inputs")
    if task in ("fields", "labels", "json"):  # the tasks whose truth columns (keys) are all scored say which ones they left out
        assert a["config"].pop("metadata") == ["channel"]
        for d in docs:
            assert d["config"].pop("metadata") == ["channel"]
    assert a == b == c
    assert all(json.loads(json.dumps(d, default=str)) == json.loads(json.dumps(a, default=str)) for d in docs), task
