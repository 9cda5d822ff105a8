"""Benchmark of `extracteval evaluate fields` streamed (`--chunk-size 100000`) vs in memory, 20 fields.

Data: R records × 20 fields for the truth and one model, CSV files on disk sorted by id, written
in batches (the 10 realistic fields of bench_scale.py, twice). Each measurement runs the real CLI
in a subprocess of a fresh helper process, logging into a new temporary SQLite tracking store with
`--no-figures`, so `getrusage(RUSAGE_CHILDREN)` is that run's wall, CPU and peak RSS alone.

Sizes: 200,000 and 1,000,000 records (`EXTRACTEVAL_BENCH_EVALUATE_RECORDS`, comma-separated).
The streamed peak does not grow with the input, with or without intervals; the in-memory peak
does. With intervals on, records with 20 fields rarely share a count pattern (as here), so the
bootstrap streams every record's counts back from disk block by block (docs/scale.md).
`EXTRACTEVAL_BENCH_EVALUATE_IN_MEMORY=0` skips the in-memory runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
CHUNK = 100_000


def _scale_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_scale", HERE / "bench_scale.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_data(folder: Path, records: int) -> tuple[Path, Path]:
    """20-field truth.csv and model.csv: bench_scale's 10-field files side by side with a second
    draw of the same fields (renamed `<field>_2`), joined batch by batch."""
    import pandas as pd

    scale = _scale_module()
    a, b = folder / "a", folder / "b"
    a.mkdir(exist_ok=True)
    b.mkdir(exist_ok=True)
    ta, pa_ = scale.write_data(a, records, seed=0)
    tb, pb = scale.write_data(b, records, seed=1)
    out = []
    for name, x, y in (("truth.csv", ta, tb), ("model.csv", pa_, pb)):
        dest = folder / name
        rx = pd.read_csv(x, dtype=str, keep_default_na=False, chunksize=scale.BATCH)
        ry = pd.read_csv(y, dtype=str, keep_default_na=False, chunksize=scale.BATCH)
        for i, (cx, cy) in enumerate(zip(rx, ry)):
            cy = cy.drop(columns=["id"]).add_suffix("_2")
            pd.concat([cx, cy], axis=1).to_csv(dest, mode="w" if i == 0 else "a", header=i == 0, index=False)
        out.append(dest)
    for p in (ta, pa_, tb, pb):
        p.unlink()
    return out[0], out[1]


def child(argv: list[str]) -> None:
    """In a helper process: run the CLI once and print its wall, CPU and peak RSS."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(json.dumps({"error": proc.stderr[-2000:]}))
        return
    print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}))


def measure(truth: Path, pred: Path, work: Path, label: str, extra: list[str]) -> dict:
    db = work / f"{label}.db"
    cli = [sys.executable, "-m", "extracteval", "evaluate", "fields", "--truth", str(truth), "--predictions", f"model={pred}",
           "--experiment", "bench", "--tracking-uri", f"sqlite:///{db}", "--no-figures", "--output", str(work / f"{label}-out"), *extra]
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *cli], capture_output=True, text=True, check=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    if "error" in r:
        raise RuntimeError(f"{label}: {r['error']}")
    import shutil

    shutil.rmtree(work / f"{label}-out", ignore_errors=True)
    shutil.rmtree(work / "mlartifacts", ignore_errors=True)
    return r


def main() -> None:
    sizes = [int(x) for x in os.environ.get("EXTRACTEVAL_BENCH_EVALUATE_RECORDS", "200000,1000000").split(",")]
    in_memory = os.environ.get("EXTRACTEVAL_BENCH_EVALUATE_IN_MEMORY", "1") != "0"
    print(f"extracteval evaluate fields, 20 fields, 1 model, CSV sorted by id, --no-figures, SQLite store; load average {os.getloadavg()[0]:.1f}")
    print(f"{'records':>10} {'engine':<24} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="extracteval-bench-evaluate-") as d:
            work = Path(d)
            truth, pred = write_data(work, n)
            # with the default 1,000-resample bootstrap, records with 20 fields rarely share a count
            # pattern, so the bootstrap streams every record's counts back from disk (records × 80
            # integers, block by block); `--no-ci` shows the scoring and logging alone
            runs = [("chunked", f"streamed --chunk-size {CHUNK}", ["--chunk-size", str(CHUNK)]),
                    ("chunked-noci", "streamed, --no-ci", ["--chunk-size", str(CHUNK), "--no-ci"])]
            if in_memory:
                runs.insert(0, ("memory", "in memory", []))
            for label, name, extra in runs:
                r = measure(truth, pred, work, label, extra)
                print(f"{n:>10,} {name:<24} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['rss_mb']:>12.0f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
