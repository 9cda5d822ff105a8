"""The doors users open, each against its floor, measured in the same run.

A door is how a user reaches an engine: the `extracteval` command as a whole process, the Python
API (`extracteval.score`) on DataFrames, the evaluator plugin (`mlflow.models.evaluate(...,
evaluators="extracteval")`). Its floor is the least work the same answer needs: the fastest read
of the same file (pyarrow's CSV reader, orjson over the JSONL lines, the file's bytes) plus the
engine on what was read. A door's ratio to its floor is what the door itself costs.

- `fields`: 100k records × 10 fields × 3 models = 3M cells, as four CSV files (the `fields`
  benchmark's data). Floor: pyarrow reads the four files + `score_fields`. Doors: the command
  process, `extracteval.score` on the floor's DataFrames, and the evaluator plugin on one model
  (1M cells, truth and output as JSON text per row, a warm SQLite store): its time on 100k
  records minus its time on 100 (the fixed cost: figures, report, artifacts) against its floor
  (orjson over the two JSON columns, columns per field, `score_fields`).
- `json`: 100k JSONL records, one model (the `json` benchmark's data). Floor: orjson over the
  lines + `score_json`. Door: the command process.
- `spans`: 1M tokens in one CoNLL file (token, gold, predicted). Floor: the file's bytes split
  into columns + `score_spans`. Door: the command process.

Every door and its floor must give the same primary metric (printed); intervals are off
everywhere (`--no-ci`, `bootstrap=0`). The floors run with the cycle-collector settings the doors
use (`core.collector.bulk_work`), so a door is not measured against a floor slowed by collections.
Peak memory: each door once more in a fresh interpreter (`--peak`), its peak resident set. Each side is timed three times, the sides taking turns;
each keeps its fastest wall time (the command's wall time is what a user waits). Sizes:
`EXTRACTEVAL_BENCH_DOORS_SCALE` (default 1.0) multiplies every data set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
SCALE = float(os.environ.get("EXTRACTEVAL_BENCH_DOORS_SCALE", "1.0"))
REPEATS = 3
EXTRACTEVAL = str(Path(sys.executable).with_name("extracteval"))


def _bench(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"bench_{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def best_walls(sides: dict[str, Callable[[], Any]]) -> dict[str, tuple[float, Any]]:
    """Each side's fastest wall time of REPEATS calls (the sides taking turns, the order
    reversed every other round) and its first result."""
    import gc

    from extracteval.core.collector import bulk_work

    out: dict[str, tuple[float, Any]] = {}
    names = list(sides)
    for r in range(REPEATS):
        for name in (names if r % 2 == 0 else names[::-1]):
            gc.collect()
            t = time.perf_counter()
            with bulk_work():  # the collector policy the doors use, for the floors too
                res = sides[name]()
            wall = time.perf_counter() - t
            best, first = out.get(name, (float("inf"), res))
            out[name] = (min(best, wall), first)
    return out


def command(*args: str) -> dict[str, Any]:
    """`extracteval …` as its own process (what a user's shell runs): the JSON document it prints."""
    done = subprocess.run([EXTRACTEVAL, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"extracteval {' '.join(args[:2])} exited {done.returncode}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _line(door: str, wall: float, floor: float, target: float | None, same: bool) -> str:
    ratio = wall / floor
    verdict = "" if target is None else f"  (target ≤ {target:g}×: {'met' if ratio <= target else 'NOT met'})"
    return f"  {door:<50} {wall:7.2f} s  {ratio:5.1f}× the floor{verdict}   same numbers: {same}"


# ---- fields -------------------------------------------------------------------------------------


def _fields_files(folder: Path) -> tuple[Path, dict[str, Path], int]:
    bf = _bench("fields")
    bf.N_RECORDS = max(1000, int(bf.N_RECORDS * SCALE))
    truth, models = bf.make_data()
    tpath = folder / "truth.csv"
    truth.rename_axis("id").reset_index().to_csv(tpath, index=False)
    paths = {}
    for m in models:
        paths[m.name] = folder / f"{m.name}.csv"
        m.values.rename_axis("id").reset_index().to_csv(paths[m.name], index=False)
    return tpath, paths, truth.size * len(models)


def _read_csv_strings(path: Path) -> pd.DataFrame:
    """pyarrow's CSV reader, every column text as written, empty cells null."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path, "rb") as fh:
        header = fh.readline().decode("utf-8").rstrip("\r\n").split(",")
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in header}, strings_can_be_null=True,
                                   null_values=[""], quoted_strings_can_be_null=False)
    return pacsv.read_csv(path, convert_options=convert).to_pandas()


def _fields_f1(result: Any) -> dict[str, float]:
    return {m: round(float(result.models[m].overall["f1"]), 12) for m in result.models}


def bench_fields() -> None:
    from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

    import extracteval

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tpath, ppaths, cells = _fields_files(folder)
        print(f"fields: {cells:,} cells ({len(ppaths)} models) in four CSV files; load average {os.getloadavg()[0]:.1f}")

        def floor() -> Any:
            truth = _read_csv_strings(tpath).set_index("id")
            preds = [ModelPredictions(name=m, values=_read_csv_strings(p).set_index("id")) for m, p in ppaths.items()]
            return _fields_f1(score_fields(truth, preds, config=FieldsConfig(bootstrap=0)))

        def cli() -> Any:
            doc = command("score", "fields", "--truth", str(tpath), *[a for m, p in ppaths.items() for a in ("--predictions", f"{m}={p}")],
                          "--no-ci", "--json")
            return {m: round(float(doc["models"][m]["overall"]["f1"]), 12) for m in doc["models"]}

        frames = {"truth": _read_csv_strings(tpath), **{m: _read_csv_strings(p) for m, p in ppaths.items()}}

        def api() -> Any:
            r = extracteval.score("fields", frames["truth"], {m: frames[m] for m in ppaths}, bootstrap=0)
            return {m: round(float(r.metrics(m)["overall/f1"]), 12) for m in r.models}

        walls = best_walls({"floor": floor, "cli": cli, "api": api})
        f, want = walls["floor"]
        print(f"  {'floor: pyarrow reads the files + score_fields':<50} {f:7.2f} s")
        print(_line("`extracteval score fields` (process)", walls["cli"][0], f, 2, walls["cli"][1] == want))
        print(_line("extracteval.score on DataFrames", walls["api"][0], f, 1.5, walls["api"][1] == want))
        print(f"  peak traced memory: floor {_peak(floor):,.0f} MiB, API {_peak(api):,.0f} MiB")
        rss = {door: _peak_rss(door, folder) for door in ("cli", "api", "plugin")}
        print(f"  peak resident memory, each door in a fresh process: the command {rss['cli'][0]:,.0f} MiB; the API "
              f"{rss['api'][0]:,.0f} MiB ({rss['api'][1]:,.0f} MiB of it the process and the user's frames before the call); "
              f"the plugin, one model (1M cells) {rss['plugin'][0]:,.0f} MiB")
        _fields_plugin(frames, next(iter(ppaths)), folder)


def _peak_rss(door: str, folder: Path) -> tuple[float, float]:
    """(peak resident memory, resident memory before the door is called) in MiB of one door on
    the `fields` files in `folder`, run alone in a fresh interpreter (`bench_doors.py --peak DOOR
    FOLDER`): what the user's process holds (the API's process holds the user's frames too)."""
    done = subprocess.run([sys.executable, __file__, "--peak", door, str(folder)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"--peak {door} exited {done.returncode}: {done.stderr[-2000:]}")
    values = [float(x) for x in done.stdout.strip().splitlines()[-2:]]
    return values[-1], (values[0] if len(values) == 2 else 0.0)


def _run_peak(door: str, folder: Path) -> None:
    """`--peak`: run one door on the files `_fields_files` wrote into `folder`, print the peak RSS."""
    import contextlib
    import io

    tpath, ppaths = folder / "truth.csv", {p.stem: p for p in sorted(folder.glob("*.csv")) if p.stem != "truth"}
    if door == "cli":
        from extracteval.cli import main as cli_main

        with contextlib.redirect_stdout(io.StringIO()):
            cli_main(["score", "fields", "--truth", str(tpath), *[a for m, p in ppaths.items() for a in ("--predictions", f"{m}={p}")],
                      "--no-ci", "--json"])
    elif door == "api":
        import extracteval

        frames = {m: _read_csv_strings(p) for m, p in ppaths.items()}
        truth = _read_csv_strings(tpath)
        print(_vm("VmRSS"))  # what the user's frames hold before the API is called
        extracteval.score("fields", truth, frames, bootstrap=0).to_dict()
    else:
        import mlflow
        import orjson

        truth, pred = _read_csv_strings(tpath), _read_csv_strings(next(iter(ppaths.values())))
        rows = lambda df: [orjson.dumps({k: v for k, v in zip(df.columns[1:], r) if v is not None}).decode()  # noqa: E731
                           for r in df.drop(columns="id").itertuples(index=False)]
        data = pd.DataFrame({"id": truth["id"], "truth": rows(truth), "output": rows(pred)})
        del truth, pred
        mlflow.set_tracking_uri(f"sqlite:///{folder / 'peak.db'}")
        with mlflow.start_run():
            mlflow.models.evaluate(data=data, targets="truth", predictions="output", model_type="extraction-fields",
                                   evaluators="extracteval", evaluator_config={"id_column": "id", "bootstrap": 0, "figures": False})
    # VmHWM, not getrusage's ru_maxrss: Linux keeps ru_maxrss across fork and exec, so a child of
    # this benchmark would report the parent's peak (the data sets it holds)
    print(_vm("VmHWM"))


def _vm(key: str) -> float:
    """A line of /proc/self/status in MiB (`VmHWM`: the peak resident set; `VmRSS`: now)."""
    status = Path("/proc/self/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith(key + ":"))) / 1024


def _peak(fn: Callable[[], Any]) -> float:
    from _timing import peak_traced_mib

    return peak_traced_mib(fn)


def _fields_plugin(frames: dict[str, pd.DataFrame], model: str, folder: Path) -> None:
    """The evaluator plugin on one model: truth and output as JSON text per row (as an LLM's
    output arrives), in a warm SQLite store; 100k records against 100."""
    import mlflow
    import orjson

    from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, score_fields

    truth, pred = frames["truth"], frames[model]

    def json_rows(df: pd.DataFrame) -> list[str]:
        rest = df.drop(columns="id")
        return [orjson.dumps({k: v for k, v in zip(rest.columns, row) if v is not None}).decode() for row in rest.itertuples(index=False)]

    data = pd.DataFrame({"id": truth["id"], "truth": json_rows(truth), "output": json_rows(pred)})
    small = data.head(100).copy()
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'store.db'}")
    mlflow.set_experiment("doors")

    def plugin(df: pd.DataFrame) -> Callable[[], Any]:
        def run() -> float:
            with mlflow.start_run():
                r = mlflow.models.evaluate(data=df, targets="truth", predictions="output", model_type="extraction-fields",
                                           evaluators="extracteval", evaluator_config={"id_column": "id", "model_name": model, "bootstrap": 0})
            return round(float(r.metrics["overall/f1"]), 12)
        return run

    def floor() -> float:
        t = pd.DataFrame([orjson.loads(s) for s in data["truth"]], index=data["id"])
        p = pd.DataFrame([orjson.loads(s) for s in data["output"]], index=data["id"])
        r = score_fields(t, [ModelPredictions(name=model, values=p)], config=FieldsConfig(bootstrap=0))
        return round(float(r.models[model].overall["f1"]), 12)

    plugin(small)()  # warm: the store's schema, the experiment, the imports
    walls = best_walls({"floor": floor, "big": plugin(data), "small": plugin(small)})
    f, want = walls["floor"]
    grows = walls["big"][0] - walls["small"][0]
    print(f"  evaluator plugin, one model ({len(data):,} records, JSON text cells, warm SQLite store):")
    print(f"    {'floor: orjson over the columns + score_fields':<48} {f:7.2f} s")
    print(f"    {'the plugin on 100 records (fixed cost)':<48} {walls['small'][0]:7.2f} s")
    print(f"    {'the plugin on all records':<48} {walls['big'][0]:7.2f} s   same numbers: {walls['big'][1] == want}")
    print(f"    the part that grows with the data: {grows:.2f} s = {grows / f:.1f}× the floor (target ≤ 3×: {'met' if grows / f <= 3 else 'NOT met'})")


# ---- json ---------------------------------------------------------------------------------------


def bench_json() -> None:
    import orjson
    import yaml

    from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json

    bj = _bench("json")
    n = max(1000, int(100_000 * SCALE))
    truth, pred = bj.make_data(n)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tpath, ppath, spath = folder / "truth.jsonl", folder / "m.jsonl", folder / "strategies.yaml"
        tpath.write_bytes(b"".join(orjson.dumps({"id": i, **r}) + b"\n" for i, r in truth.items()))
        ppath.write_bytes(b"".join(orjson.dumps({"id": i, **r}) + b"\n" for i, r in pred.items()))
        spath.write_text(yaml.safe_dump({"strategies": bj.STRATEGIES}), encoding="utf-8")
        del truth, pred
        print(f"json: {n:,} records per file (truth and one model), JSONL; load average {os.getloadavg()[0]:.1f}")
        cfg = JsonConfig(flatten=True, strategies=bj.STRATEGIES)

        def read(path: Path) -> dict[str, Any]:
            out = {}
            with open(path, "rb") as fh:
                for line in fh:
                    rec = orjson.loads(line)
                    out[rec.pop("id")] = rec
            return out

        def floor() -> float:
            r = score_json(read(tpath), [JsonPredictions(name="m", records=read(ppath))], config=cfg)
            return round(float(r.models["m"].rqs["mean"]), 12)

        def cli() -> float:
            doc = command("score", "json", "--truth", str(tpath), "--predictions", f"m={ppath}", "--strategies", str(spath), "--flatten",
                          "--json")
            return round(float(doc["models"]["m"]["rqs"]["mean"]), 12)

        walls = best_walls({"floor": floor, "cli": cli})
        f, want = walls["floor"]
        print(f"  {'floor: orjson over the lines + score_json':<50} {f:7.2f} s")
        print(_line("`extracteval score json` (process)", walls["cli"][0], f, 2, walls["cli"][1] == want))


# ---- spans --------------------------------------------------------------------------------------


def bench_spans() -> None:
    from extracteval.tasks.spans.semantics import SpansConfig, corpus_from_tags, score_spans

    bs = _bench("spans")
    n = max(10_000, int(1_000_000 * SCALE))
    gold, pred = bs.make_data(n, 25)
    words = [bs.WORDS[(i * 7919) % len(bs.WORDS)] for i in range(25)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.conll"
        with open(path, "w", encoding="utf-8") as fh:
            for g, p in zip(gold, pred):
                fh.write("".join(f"{w} {a} {b}\n" for w, a, b in zip(words, g, p)) + "\n")
        del gold, pred
        print(f"spans: {n:,} tokens in one CoNLL file (token, gold, predicted); load average {os.getloadavg()[0]:.1f}")

        def floor() -> float:
            lines = path.read_bytes().decode("utf-8").split("\n")
            tokens, g, p, starts = [], [], [], []
            new = True
            for line in lines:
                if not line:
                    new = True
                    continue
                w, a, b = line.split(" ")
                starts.append(new)
                new = False
                tokens.append(w)
                g.append(a)
                p.append(b)
            corpus = corpus_from_tags(g, {"m": p}, sentence_start=np.asarray(starts), tokens=tokens)
            r = score_spans(corpus, config=SpansConfig(scheme="conlleval", bootstrap=0))
            return round(float(r.models["m"].exact.micro.f1), 12)

        def cli() -> float:
            doc = command("score", "spans", "--conll", str(path), "--no-ci", "--json")
            return round(float(doc["models"][next(iter(doc["models"]))]["exact"]["micro"]["f1"]), 12)

        walls = best_walls({"floor": floor, "cli": cli})
        f, want = walls["floor"]
        print(f"  {'floor: the bytes split into columns + score_spans':<50} {f:7.2f} s")
        print(_line("`extracteval score spans --conll` (process)", walls["cli"][0], f, 2, walls["cli"][1] == want))


def main() -> None:
    if sys.argv[1:2] == ["--peak"]:
        _run_peak(sys.argv[2], Path(sys.argv[3]))
        return
    wanted = {a for a in sys.argv[1:] if a in ("fields", "json", "spans")}
    for name, fn in (("fields", bench_fields), ("json", bench_json), ("spans", bench_spans)):
        if not wanted or name in wanted:
            fn()


if __name__ == "__main__":
    main()
