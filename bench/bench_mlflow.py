"""Overhead of logging one evaluation to MLflow (embedded SQLite store), with every artifact.

Measured in one run, on synthetic `fields` data (values drawn from 50 labels per field, 10–15%
of the cells wrong, two models):

1. 200 fields × 1,000 records: scoring time, then the logging overhead split into writing the
   local copy (metrics, result.json, CSV, MLflow table, per-record Parquet, two figures,
   report.html per run, dataset description) and uploading it (parent + 2 child runs, ~2,400
   metrics each), each as wall and CPU time (the machine is shared: CPU time is the steadier
   figure). Target: overhead ≤ 3 s.
2. 100,000 records × 200 fields (40M scored cells, default settings: 1000 bootstrap
   resamples), in this process from frames in memory: scoring, then writing the local copy and
   uploading it, wall and CPU — the whole cost of the logging when it starts after the scoring
   (as in `mlflow.models.evaluate`).
3. The same evaluation as a user runs it, end to end from CSV files: `extracteval score fields`
   (no MLflow) and `extracteval evaluate fields` (everything logged to a SQLite store), run
   alternately three times each in fresh processes. `evaluate` writes its Parquet files, digests
   the truth and imports MLflow's client while the bootstrap still runs (mlflow/early.py). The
   logging overhead is what `evaluate` takes over `score`, and its share of the `evaluate` run is
   the figure the target (≤ 10%) is about.
   (2 and 3 need ~6 GB of memory and several minutes; `EXTRACTEVAL_BENCH_SMALL=1` skips them,
   `EXTRACTEVAL_BENCH_LARGE_ONLY=1` runs only them.)

Peer: `mlflow.log_metric` called once per metric (what a naive integration does) for the same
200-field metric set, against the batched upload.

`python bench/run.py mlflow` (or `make bench`).
"""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from pathlib import Path


def _data(n: int, f: int, seed: int = 0):  # noqa: ANN202
    import numpy as np
    import pandas as pd

    from extracteval.tasks.fields.semantics import ModelPredictions

    rng = np.random.default_rng(seed)
    ids = [f"r{i:06d}" for i in range(n)]
    labels = np.array([f"value {k}" for k in range(50)], dtype=object)
    truth = pd.DataFrame(labels[rng.integers(0, 50, size=(n, f))], index=ids, columns=[f"field_{j:03d}" for j in range(f)])
    preds = []
    for m in range(2):
        arr = truth.to_numpy(dtype=object).copy()
        arr[rng.random((n, f)) < 0.10 + 0.05 * m] = "wrong"
        arr[rng.random((n, f)) < 0.03] = None
        preds.append(ModelPredictions(name=f"model-{m}", values=pd.DataFrame(arr, index=ids, columns=truth.columns)))
    return truth, preds


class _Clock:
    """Wall and CPU (this process) seconds of a block."""

    def __enter__(self) -> "_Clock":
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall0, time.process_time() - self.cpu0


def _one(n: int, f: int, root: Path, bootstrap: int) -> dict[str, float]:
    from extracteval.tasks.fields.semantics import FieldsConfig, score_fields
    from extracteval.mlflow.bundle import write_bundle
    from extracteval.mlflow.adapters import Scored, get_adapter
    from extracteval.mlflow.upload import upload_bundle

    adapter = get_adapter("fields")
    truth, preds = _data(n, f)
    with _Clock() as score:
        codes: dict = {}
        result = score_fields(truth, preds, config=FieldsConfig(bootstrap=bootstrap), truth_source="synthetic", keep_codes=codes)
        doc = result.to_dict()
        scored = Scored(task="fields", result=result, doc=doc, models=tuple(result.ranking), truth=truth, truth_source="synthetic", config=doc["config"])
        scored.cache["predictions"] = {p.name: p for p in preds}  # logged for `extracteval rescore`, as the CLI does
        scored.cache["prediction_codes"] = codes
    with _Clock() as write:
        bundle = write_bundle(scored, adapter, root / f"bundle-{n}-{f}", experiment=f"bench-{n}x{f}")
    with _Clock() as upload:
        res = upload_bundle(bundle, tracking_uri=f"sqlite:///{root / 'bench.db'}", experiment=f"bench-{n}x{f}")
    n_metrics = sum(len(bundle.metrics(r.key)) for r in bundle.runs)
    return {"score": score.wall, "write": write.wall, "upload": upload.wall,
            "score_cpu": score.cpu, "write_cpu": write.cpu, "upload_cpu": upload.cpu, "metrics": n_metrics, "runs": len(res.run_ids)}


def _share(b: dict[str, float], suffix: str = "") -> float:
    log = b["write" + suffix] + b["upload" + suffix]
    return log / (b["score" + suffix] + log)


def _naive_per_metric(root: Path, metrics: dict[str, float]) -> float:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'bench.db'}")
    exp = client.get_experiment_by_name("bench-naive") or None
    exp_id = exp.experiment_id if exp else client.create_experiment("bench-naive", artifact_location=(root / "naive").as_uri())
    run = client.create_run(exp_id)
    t = time.perf_counter()
    for k, v in metrics.items():
        client.log_metric(run.info.run_id, k, v)
    client.set_terminated(run.info.run_id)
    return time.perf_counter() - t


def _small(root: Path) -> None:
    """The 1,000-record case and the per-metric peer."""
    from mlflow.tracking import MlflowClient

    a = _one(1_000, 200, root, bootstrap=200)
    overhead, overhead_cpu = a["write"] + a["upload"], a["write_cpu"] + a["upload_cpu"]
    print(f"200 fields × 1,000 records, 2 models ({a['runs']} runs, {a['metrics']} metrics):     wall      CPU")
    print(f"  scoring (200 bootstrap resamples)    {a['score']:6.2f} s {a['score_cpu']:6.2f} s")
    print(f"  write local copy (all artifacts)     {a['write']:6.2f} s {a['write_cpu']:6.2f} s")
    print(f"  upload to SQLite store               {a['upload']:6.2f} s {a['upload_cpu']:6.2f} s")
    print(f"  logging overhead                     {overhead:6.2f} s {overhead_cpu:6.2f} s   "
          f"(target ≤ 3 s: {'met' if overhead <= 3 else 'NOT met'} by wall time, {'met' if overhead_cpu <= 3 else 'NOT met'} by CPU time)")

    from extracteval.mlflow.bundle import load_bundle

    child = load_bundle(root / "bundle-1000-200").metrics("model-1")
    naive = _naive_per_metric(root, child)
    t = time.perf_counter()
    client = MlflowClient(f"sqlite:///{root / 'bench.db'}")
    from mlflow.entities import Metric

    run = client.create_run(client.get_experiment_by_name("bench-naive").experiment_id)
    ts = int(time.time() * 1000)
    items = [Metric(k, v, ts, 0) for k, v in child.items()]
    for i in range(0, len(items), 1000):
        client.log_batch(run.info.run_id, metrics=items[i : i + 1000])
    batched = time.perf_counter() - t
    print(f"  {len(child)} metrics of one run: log_metric one by one {naive:.2f} s vs log_batch ≤1000 {batched:.2f} s "
          f"({naive / batched:.0f}× faster batched)")


def _write_csv(frame, path: Path) -> None:  # noqa: ANN001
    """`frame.to_csv(path)` (missing cells empty) by Arrow: pandas takes a minute for 60M cells."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    table = pa.Table.from_arrays([pa.array(frame.index.to_numpy(dtype=object), type=pa.string()),
                                  *(pa.array(frame[c].to_numpy(dtype=object), type=pa.string(), from_pandas=True) for c in frame.columns)],
                                 names=["id", *frame.columns])
    pcsv.write_csv(table, path, pcsv.WriteOptions(quoting_style="needed"))


def _cli(root: Path, rounds: int = 3) -> None:
    """`extracteval score fields` against `extracteval evaluate fields` on 100k × 200 CSV files."""
    import os
    import subprocess
    import sys

    truth, preds = _data(100_000, 200)
    _write_csv(truth, root / "truth.csv")
    inputs = ["--truth", str(root / "truth.csv")]
    for p in preds:
        _write_csv(p.values, root / f"{p.name}.csv")
        inputs += ["--predictions", f"{p.name}={root / (p.name + '.csv')}"]
    del truth, preds
    uri = f"sqlite:///{root / 'cli.db'}"
    commands = {
        "score": [sys.executable, "-m", "extracteval", "score", "fields", *inputs],
        "evaluate": [sys.executable, "-m", "extracteval", "evaluate", "fields", *inputs, "--experiment", "bench-cli", "--tracking-uri", uri],
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for _ in range(rounds):
        for name, cmd in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root, env=env)
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            times[name].append((wall, cpu))
    print(f"100,000 records × 200 fields from CSV files, 2 models, end to end ({rounds} alternating runs each, mean):     wall      CPU")
    mean = {k: (sum(w for w, _ in v) / len(v), sum(c for _, c in v) / len(v)) for k, v in times.items()}
    for k, label in (("score", "extracteval score fields"), ("evaluate", "extracteval evaluate fields")):
        runs = ", ".join(f"{w:.1f}" for w, _ in times[k])
        print(f"  {label:35s}  {mean[k][0]:7.2f} s {mean[k][1]:7.2f} s   (wall per run: {runs} s)")
    over, over_cpu = mean["evaluate"][0] - mean["score"][0], mean["evaluate"][1] - mean["score"][1]
    share, share_cpu = over / mean["evaluate"][0], over_cpu / mean["evaluate"][1]
    print(f"  logging overhead (evaluate − score)  {over:7.2f} s {over_cpu:7.2f} s")
    print(f"  its share of the evaluate run        {100 * share:6.1f} %  {100 * share_cpu:6.1f} %   "
          f"(target ≤ 10%: {'met' if share <= 0.10 else 'NOT met'} by wall time, {'met' if share_cpu <= 0.10 else 'NOT met'} by CPU time)")


def main() -> None:
    import os

    from mlflow.tracking import MlflowClient

    root = Path(tempfile.mkdtemp(prefix="extracteval-bench-mlflow-"))
    try:
        t = time.perf_counter()
        import matplotlib.figure  # noqa: F401 - one-time imports, reported on their own
        import mlflow.data  # noqa: F401

        print(f"one-time imports (matplotlib, mlflow.data), paid once per process: {time.perf_counter() - t:.2f} s")
        MlflowClient(f"sqlite:///{root / 'bench.db'}").search_experiments()  # create the schema outside the timings
        if not os.environ.get("EXTRACTEVAL_BENCH_LARGE_ONLY"):
            _small(root)
        if os.environ.get("EXTRACTEVAL_BENCH_SMALL"):
            print("100,000 records × 200 fields: skipped (EXTRACTEVAL_BENCH_SMALL is set)")
        else:
            b = _one(100_000, 200, root, bootstrap=1000)
            print("100,000 records × 200 fields, 2 models, default settings (1000 bootstrap resamples):     wall      CPU")
            for k, label in (("score", "scoring"), ("write", "write local copy"), ("upload", "upload")):
                print(f"  {label:35s}  {b[k]:7.2f} s {b[k + '_cpu']:7.2f} s")
            share, share_cpu = _share(b), _share(b, "_cpu")
            print(f"  logging share of scoring + logging   {100 * share:6.1f} %  {100 * share_cpu:6.1f} %   "
                  "(inputs already in memory: no file reading, no imports; the target is judged end to end, below)")
            del b
            _cli(root)
        print(f"peak memory (max RSS) {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
