"""Everything two evaluations logged, read back from real SQLite tracking stores and compared:
the runs' metrics, params, tags, dataset inputs, artifact listings, Parquet rows and the bytes of
every JSON and CSV artifact (result.json, item tables, metric key maps)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

__all__ = ["store", "assert_same_stores", "evaluate_task"]

# differ between any two runs however they were scored
_RUN_TAGS = {"mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.source.git.commit"}


def _artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in client.list_artifacts(run_id, path):
        if a.is_dir:
            out.update(_artifacts(client, run_id, a.path))
        else:
            out[a.path] = a.path
    return out


def _name(run_name: str) -> str:
    """A run's name without the time a parent or leaderboard run is named with."""
    import re

    return re.sub(r" · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", "", run_name)


def store(uri: str, experiment: str) -> dict[str, dict]:
    """Everything logged to `experiment`, by run name (without the time in it)."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    out = {}
    for run in client.search_runs([exp.experiment_id]):
        rid = run.info.run_id
        tags = {k: _name(v) if k == "mlflow.runName" else v for k, v in run.data.tags.items() if k not in _RUN_TAGS and k != "mlflow.parentRunId"}
        inputs = [(d.dataset.name, d.dataset.digest, d.dataset.schema, d.dataset.profile, d.dataset.source_type)
                  for d in run.inputs.dataset_inputs]
        out[_name(run.info.run_name)] = {
            "status": run.info.status, "metrics": run.data.metrics, "params": run.data.params, "tags": tags, "inputs": inputs,
            "artifacts": sorted(_artifacts(client, rid)), "parent": run.data.tags.get("mlflow.parentRunId") is not None,
            "run_id": rid,
        }
    return out


def _parquet(client: MlflowClient, run_id: str, path: str, tmp: Path) -> pd.DataFrame:
    local = client.download_artifacts(run_id, path, str(tmp))
    frame = pd.read_parquet(local)
    return frame.astype({c: str for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)})


def assert_same_stores(want_uri: str, got_uri: str, tmp: Path) -> None:
    want, got = store(want_uri, "e"), store(got_uri, "e")
    assert set(got) == set(want)
    for name, w in want.items():
        g = got[name]
        assert g["status"] == w["status"] == "FINISHED"
        assert g["metrics"] == w["metrics"], name
        assert g["params"] == w["params"], name
        assert g["tags"] == w["tags"], name
        assert g["inputs"] == w["inputs"], name
        assert g["artifacts"] == w["artifacts"], name
        for path in w["artifacts"]:
            if path.endswith(".parquet"):
                a = _parquet(MlflowClient(want_uri), w["run_id"], path, tmp / "w" / name)
                b = _parquet(MlflowClient(got_uri), g["run_id"], path, tmp / "g" / name)
                pd.testing.assert_frame_equal(b, a, check_dtype=False)
            elif path.endswith((".json", ".csv")):
                a = Path(MlflowClient(want_uri).download_artifacts(w["run_id"], path, str(tmp / "w" / name))).read_bytes()
                b = Path(MlflowClient(got_uri).download_artifacts(g["run_id"], path, str(tmp / "g" / name))).read_bytes()
                assert a == b, path




def evaluate_task(cli, task: str, args: list[str], tmp: Path, name: str, *extra: str) -> str:
    """`evaluate <task> ARGS` into a fresh SQLite store `tmp/<name>.db` (experiment `e`, no
    figures); the store's URI."""
    uri = f"sqlite:///{tmp / f'{name}.db'}"
    res = cli("evaluate", task, *args, "--experiment", "e", "--tracking-uri", uri, "--output", str(tmp / f"{name}-out"), "--no-figures", *extra)
    assert res.code == 0, res.err
    return uri
