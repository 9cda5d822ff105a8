"""Benchmark of scale: the chunked engine, `--workers 2` and Spark `local[2]` on CSV files on disk.

Data (written once to a temporary folder, sorted by id, generated in batches so the generator
stays small): R records × 10 fields for the truth and one model — R × 10 (record, field) cells —
realistic strings (names from a pool of 20,000, dates in mixed formats, amounts, 10% absent,
case changes and wrong values in the predictions).

Measured in the same run, each in its own process so peak RSS is that run's alone, reading the
CSV files and scoring them with the default 1,000-resample bootstrap (the CLI default):
  * 1M cells: in-memory engine vs chunked engine (chunks of 50,000 records): throughput ratio
    (target: chunked within 20% of in-memory), and peak RSS of both;
  * 10M cells: chunked engine, 1 process and `--workers 2`: throughput, peak RSS (target < 1 GB),
    speed-up of 2 workers on this 2-core machine;
  * Spark `local[2]` (when pyspark is installed) on the same files: throughput, reported side by
    side — Spark is for data beyond one machine, not for beating the local engine on one box.

`EXTRACTEVAL_BENCH_SCALE_CELLS` (default 10,000,000) sets the large size;
`EXTRACTEVAL_BENCH_SCALE_IN_MEMORY_LARGE=1` also runs the in-memory engine on it (several GB);
`EXTRACTEVAL_BENCH_SCALE_SPARK_CELLS` (default: the large size) sets Spark's size.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FIELDS = ["contract_type", "party", "effective_date", "governing_law", "amount", "term", "currency", "signatory", "renewal", "notice_days"]
ABSENT = np.asarray(["", "N/A", "Not Present"], dtype=object)
BATCH = 100_000
CHUNK = 50_000  # records per chunk (× 10 fields = 500,000 cells)


def _vocab(rng: np.random.Generator) -> dict[str, np.ndarray]:
    import pandas as pd

    days = pd.date_range("2015-01-01", periods=3000, freq="D")
    words = ["Acme", "Bolt", "Crane", "Delta", "Evergreen", "Fjord", "Granite"]
    kinds = ["Robotics", "Energy", "Health", "Freight", "Foods", "Capital"]
    return {
        "contract_type": np.asarray(["Service Agreement", "NDA", "License Agreement", "Lease", "Supply Agreement"], dtype=object),
        "party": np.asarray([f"{words[i % 7]} {kinds[i % 6]} {i} Inc." for i in range(20_000)], dtype=object),
        "effective_date": np.asarray(days.strftime("%Y-%m-%d"), dtype=object),
        "governing_law": np.asarray(["New York", "Delaware", "California", "England and Wales", "Ontario"], dtype=object),
        "amount": np.asarray([f"{x * 250:.2f}" for x in range(1, 5000)], dtype=object),
        "term": np.asarray(["12", "24", "36", "60"], dtype=object),
        "currency": np.asarray(["USD", "EUR", "GBP"], dtype=object),
        "signatory": np.asarray([f"Person {i}" for i in range(5000)], dtype=object),
        "renewal": np.asarray(["yes", "no"], dtype=object),
        "notice_days": np.asarray(["30", "60", "90"], dtype=object),
    }


def write_data(folder: Path, records: int, seed: int = 0) -> tuple[Path, Path]:
    """truth.csv and model.csv, sorted by id, written BATCH records at a time."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    vocab = _vocab(rng)
    alt_date = {v: pd.Timestamp(v).strftime("%B %d, %Y") for v in vocab["effective_date"]}
    truth_p, pred_p = folder / "truth.csv", folder / "model.csv"
    for start in range(0, records, BATCH):
        n = min(BATCH, records - start)
        ids = np.char.add("doc-", np.char.zfill(np.arange(start, start + n).astype(str), 9)).astype(object)
        truth = {"id": ids}
        pred = {"id": ids}
        for f in FIELDS:
            v = vocab[f]
            col = v[rng.integers(0, len(v), n)]
            col[rng.random(n) < 0.10] = ABSENT[rng.integers(0, 3)]
            truth[f] = col
            p = col.copy()
            u = rng.random(n)
            if f == "effective_date":
                idx = np.flatnonzero(u < 0.3)
                p[idx] = [alt_date.get(x, x) for x in p[idx]]
            else:
                idx = np.flatnonzero(u < 0.1)
                p[idx] = [x.upper() for x in p[idx]]
            wrong = rng.random(n) < 0.12
            p[wrong] = v[rng.integers(0, len(v), int(wrong.sum()))]
            p[rng.random(n) < 0.05] = ""
            pred[f] = p
        mode, header = ("w", True) if start == 0 else ("a", False)
        pd.DataFrame(truth).to_csv(truth_p, mode=mode, header=header, index=False)
        pd.DataFrame(pred).to_csv(pred_p, mode=mode, header=header, index=False)
    return truth_p, pred_p


# ---------------------------------------------------------------------------------------------
# one measurement, in a child process


def measure(mode: str, truth: str, pred: str, chunk: int, workers: int) -> dict:
    from extracteval.tasks.fields.semantics import FieldsConfig

    cfg = FieldsConfig()
    t0 = time.perf_counter()
    if mode == "memory":
        from extracteval.tasks.fields.semantics import score_fields
        from extracteval.tasks.fields.inputs import load_fields_inputs

        t, preds, src = load_fields_inputs(truth, [f"model={pred}"])
        result = score_fields(t, preds, config=cfg, truth_source=src)
    elif mode == "chunked":
        from extracteval.chunked import run_chunks
        from extracteval.tasks.fields.chunked import FieldsTask
        from extracteval.tasks.fields.semantics import plan_fields
        from extracteval.io.wide_tables import open_table_stream

        stream = open_table_stream(truth, [f"model={pred}"], chunk_size=chunk)
        plan = plan_fields(stream.truth_fields, stream.models, config=cfg, truth_source=stream.truth_source)
        result, _ = run_chunks(FieldsTask(plan), stream.chunks(), workers=workers)
    else:
        from extracteval.spark import get_session
        from extracteval.tasks.fields.spark import score_fields_files

        get_session("local[2]", shuffle_partitions=8)
        t0 = time.perf_counter()  # session start-up (≈10 s) is not scoring
        result, _ = score_fields_files(truth, [f"model={pred}"], config=cfg, master="local[2]", partitions=8)
    seconds = time.perf_counter() - t0
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    doc = result.to_dict()
    return {"seconds": seconds, "rss_mb": own, "child_rss_mb": kids, "f1": doc["models"]["model"]["overall"]["f1"], "doc": json.dumps(doc, sort_keys=True)}


def run_child(mode: str, truth: Path, pred: Path, chunk: int = 0, workers: int = 1) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, "--measure", mode, str(truth), str(pred), str(chunk), str(workers)],
        capture_output=True, text=True, env=env, check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(label: str, cells: int, r: dict) -> str:
    rss = f"peak RSS {r['rss_mb']:,.0f} MB" + (f" (+ each worker ≤ {r['child_rss_mb']:,.0f} MB)" if r.get("child_rss_mb", 0) > 1 and "workers" in label else "")
    return f"{label:<34} {r['seconds']:7.1f} s  {cells / r['seconds'] / 1e6:5.2f} M cells/s  {rss}"


def main() -> None:
    large = int(os.environ.get("EXTRACTEVAL_BENCH_SCALE_CELLS", 10_000_000))
    spark_cells = int(os.environ.get("EXTRACTEVAL_BENCH_SCALE_SPARK_CELLS", large))
    small = 1_000_000
    with tempfile.TemporaryDirectory(prefix="extracteval-bench-scale-") as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        (folder / "small").mkdir()
        (folder / "large").mkdir()
        ts, ps = write_data(folder / "small", small // len(FIELDS), seed=1)
        tl, pl = write_data(folder / "large", large // len(FIELDS), seed=2)
        print(f"data: {small:,} and {large:,} cells (records × {len(FIELDS)} fields, 1 model), CSV "
              f"{(tl.stat().st_size + pl.stat().st_size) / 1e6:,.0f} MB for the large set, written in {time.perf_counter() - t:.0f} s")
        print("each run reads the CSV files and scores them with the 1,000-resample bootstrap, in its own process")

        mem = run_child("memory", ts, ps)
        chk = run_child("chunked", ts, ps, chunk=CHUNK)
        print(line(f"{small / 1e6:.0f}M cells in-memory", small, mem))
        print(line(f"{small / 1e6:.0f}M cells chunked ({CHUNK // 1000}k records)", small, chk))
        print(f"  chunked throughput = {mem['seconds'] / chk['seconds']:.0%} of in-memory (target ≥ 80%); identical --json: {mem['doc'] == chk['doc']}")

        one = run_child("chunked", tl, pl, chunk=CHUNK, workers=1)
        two = run_child("chunked", tl, pl, chunk=CHUNK, workers=2)
        print(line(f"{large / 1e6:.0f}M cells chunked, 1 process", large, one))
        print(line(f"{large / 1e6:.0f}M cells chunked, --workers 2", large, two))
        print(f"  --workers 2 speed-up: {one['seconds'] / two['seconds']:.2f}×   identical --json: {one['doc'] == two['doc']}   "
              f"peak RSS target < 1,024 MB: {'met' if one['rss_mb'] < 1024 else 'NOT met'} (1 process)")
        print(f"  peak RSS at {small / 1e6:.0f}M vs {large / 1e6:.0f}M cells, same chunks: {chk['rss_mb']:,.0f} MB vs {one['rss_mb']:,.0f} MB "
              f"(in-memory at {small / 1e6:.0f}M: {mem['rss_mb']:,.0f} MB)")
        if os.environ.get("EXTRACTEVAL_BENCH_SCALE_IN_MEMORY_LARGE") == "1":
            big = run_child("memory", tl, pl)
            print(line(f"{large / 1e6:.0f}M cells in-memory", large, big))
            print(f"  identical --json: {big['doc'] == one['doc']}")

        try:
            import pyspark  # noqa: F401
        except ImportError:
            print("Spark local[2]: skipped (pip install 'extracteval[spark]')")
            return
        if spark_cells == large:
            st, sp, ref = tl, pl, one
        else:
            (folder / "spark").mkdir()
            st, sp = write_data(folder / "spark", spark_cells // len(FIELDS), seed=2)
            ref = run_child("chunked", st, sp, chunk=CHUNK)
        spk = run_child("spark", st, sp)
        print(line(f"{spark_cells / 1e6:.0f}M cells Spark local[2]", spark_cells, {**spk, "child_rss_mb": 0}))
        print(f"  Spark / local chunked (1 process) throughput: {ref['seconds'] / spk['seconds']:.2f}×   identical --json: {spk['doc'] == ref['doc']}"
              "   (driver RSS only; the JVM and Python workers are extra)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        mode, truth, pred, chunk, workers = sys.argv[2:7]
        res = measure(mode, truth, pred, int(chunk), int(workers))
        print(json.dumps(res))
    else:
        main()
