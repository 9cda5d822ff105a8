"""Cross-run leaderboard from a tracking store: 500 runs × ~200 metrics in an embedded SQLite store.

Measured in one run of this benchmark, on the same store:
1. bare `MlflowClient.search_runs` of the 500 runs (the floor: reading the runs at all);
2. `build_tracking_leaderboard(ci=False)`: the same search plus RunSummary, item-name
   restoration (metric_keys.json, fetched once), grouping, field winners and ranking.
   Target: ≤ 1.5× the bare search.
3. `build_tracking_leaderboard(ci=True)` with 1000 resamples: plus downloading 500 per-record
   Parquet artifacts (200 records × 16 fields) and the paired bootstrap. Target ≤ 10 s.
4. For information: rendering CSV/JSON/HTML/PNG, and logging the leaderboard run plus the
   write-back of `leaderboard/<stamp>/rank` and `…/field_wins` to the 500 runs (one log_batch each).

Each timing is the best of 3 (2 and 1 for the longer steps), alternating bare and leaderboard; the
with-CI line also gives the CPU time of that call, and the load average is printed (the machine
may be shared: wall time then measures the other tenants too).
`python bench/run.py leaderboard` (or `make bench`).
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

N_RUNS = 500
N_FIELDS = 16  # 16 fields × 12 keys + 7 overall/micro = 199 metrics per run
N_RECORDS = 200


def _populate(uri: str, root: Path) -> str:
    import numpy as np
    import pandas as pd
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    from extracteval.core.counts import ratios
    from extracteval.mlflow.keys import KeyMap

    client = MlflowClient(uri)
    exp = client.create_experiment("bench-leaderboard", artifact_location=(root / "artifacts").as_uri())
    fields = [f"field_{j:02d}" for j in range(N_FIELDS)]
    keys = KeyMap.build(fields)
    rng = np.random.default_rng(0)
    rec_ids = [f"r{i:04d}" for i in range(N_RECORDS)]
    stage = root / "stage"
    for k in range(N_RUNS):
        skill = 0.55 + 0.4 * rng.random()
        correct = rng.random((N_RECORDS, N_FIELDS)) < skill
        absent = rng.random((N_RECORDS, N_FIELDS)) < 0.1
        tp = (correct & ~absent).astype(np.int64)
        tn = (correct & absent).astype(np.int64)
        fp = (~correct).astype(np.int64)
        fn = (~correct & ~absent).astype(np.int64)
        m: dict[str, float] = {}
        r = ratios(tp.sum(0), fp.sum(0), fn.sum(0), tn.sum(0), zero_division=0.0)
        for j, f in enumerate(fields):
            for key, arr in (("tp", tp), ("fp", fp), ("fn", fn), ("tn", tn)):
                m[keys.key("field", f, key)] = float(arr[:, j].sum())
            m[keys.key("field", f, "excluded")] = 0.0
            for key in ("precision", "recall", "f1", "accuracy"):
                m[keys.key("field", f, key)] = float(r[key][j])
            m[keys.key("field", f, "exact_match_rate")] = float(correct[:, j].mean())
            m[keys.key("field", f, "ci_low")] = float(r["f1"][j]) - 0.05
            m[keys.key("field", f, "ci_high")] = float(r["f1"][j]) + 0.05
        for key in ("precision", "recall", "f1", "accuracy"):
            m[f"overall/{key}"] = float(np.mean(r[key]))
        tot = ratios(tp.sum(), fp.sum(), fn.sum(), tn.sum(), zero_division=0.0)
        for key in ("precision", "recall", "f1"):
            m[f"micro/{key}"] = float(tot[key])
        run = client.create_run(exp, run_name=f"model-{k:03d}")
        rid = run.info.run_id
        tags = {"extracteval.task": "fields", "extracteval.role": "model", "extracteval.model": f"model-{k:03d}",
                "extracteval.truth_digest": "t" * 64, "extracteval.config_digest": "c" * 64}
        client.log_batch(rid, metrics=[Metric(a, b, 0, 0) for a, b in m.items()], tags=[RunTag(a, b) for a, b in tags.items()],
                         params=[])
        adir = stage / rid / "extracteval"
        adir.mkdir(parents=True)
        rec = pd.DataFrame({
            "model": f"model-{k:03d}",
            "record_id": np.repeat(np.array(rec_ids, dtype=object), N_FIELDS),
            "field": np.tile(np.array(fields, dtype=object), N_RECORDS),
            "tp": tp.ravel(), "fp": fp.ravel(), "fn": fn.ravel(), "tn": tn.ravel(), "excluded": 0,
        })
        rec.to_parquet(adir / "records.parquet", index=False)
        import json

        (adir / "metric_keys.json").write_text(json.dumps({"names": keys.names_table(), "metrics": []}))
        client.log_artifacts(rid, str(adir.parent))
        client.set_terminated(rid, "FINISHED")
    shutil.rmtree(stage)
    return exp


def _cpu() -> float:
    """CPU seconds of this process, all threads (BLAS's included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _best(fn, repeat: int, cpu: list[float] | None = None) -> tuple[float, object]:  # noqa: ANN001
    """Best wall time of `repeat` calls; `cpu` receives the CPU time of that best call (on a
    shared, loaded machine wall time mostly measures the other tenants, CPU time the work)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), _cpu()
        res = fn()
        wall = time.perf_counter() - t0
        if wall < best:  # the best call's result, so its own timings are printed with it
            best, out = wall, res
            if cpu is not None:
                cpu[:] = [_cpu() - c0]
    return best, out


def main() -> None:
    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    from extracteval.mlflow.tracking_leaderboard import build_tracking_leaderboard, log_leaderboard, write_outputs

    root = Path(tempfile.mkdtemp(prefix="extracteval-bench-lb-"))
    try:
        uri = f"sqlite:///{root / 'mlflow.db'}"
        t0 = time.perf_counter()
        exp = _populate(uri, root)
        print(f"store: {N_RUNS} runs × {N_FIELDS * 12 + 7} metrics, per-record Parquet {N_RECORDS} records × {N_FIELDS} fields each "
              f"(populated in {time.perf_counter() - t0:.1f} s)")
        client = MlflowClient(uri)

        def bare() -> int:
            n, token = 0, None
            while True:
                page = client.search_runs([exp], max_results=1000, page_token=token)
                n += len(page)
                token = page.token
                if not token:
                    return n

        def board(ci: bool):  # noqa: ANN202
            return lambda: build_tracking_leaderboard(experiment="bench-leaderboard", tracking_uri=uri, ci=ci)

        print("load average (1, 5, 15 min) at the start: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        bare()  # warm the store's caches once for both sides
        t_bare = t_lb = float("inf")
        lb = None
        for _ in range(3):
            tb, n = _best(bare, 1)
            tl, res = _best(board(False), 1)
            if tl < t_lb:
                lb = res
            t_bare, t_lb = min(t_bare, tb), min(t_lb, tl)
        assert n == N_RUNS and lb is not None and len(lb.leaderboard.groups[0].entries) == N_RUNS
        print(f"bare search_runs:               {t_bare:6.2f} s")
        print(f"leaderboard without CI:         {t_lb:6.2f} s   ratio {t_lb / t_bare:.2f}× the bare search (target ≤ 1.5×)")
        print(f"  of which search {lb.timings['search_s']:.2f} s, summaries + ranking {lb.timings['rank_s']:.2f} s")
        cpu_ci: list[float] = []
        t_ci, lbc = _best(board(True), 2, cpu_ci)
        print(f"leaderboard with CI (1000 res.): {t_ci:6.2f} s   (target ≤ 10 s; CPU {cpu_ci[0]:.2f} s; "
              f"of which search {lbc.timings['search_s']:.2f} s, Parquet reads + bootstrap {lbc.timings['ci_s']:.2f} s, "
              f"CPU {lbc.timings['ci_cpu_s']:.2f} s)")
        assert lbc.leaderboard.groups[0].entries[0].ci is not None
        t_out, _ = _best(lambda: write_outputs(lbc, root / "out", figures=True), 1)
        print(f"outputs (CSV, JSON, HTML, 2 PNG): {t_out:5.2f} s")
        t_log, _ = _best(lambda: log_leaderboard(lbc, root / "out"), 1)
        print(f"leaderboard run + write-back to {N_RUNS} runs (one log_batch each): {t_log:.2f} s")
        print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of the benchmark process: {peak:.0f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
