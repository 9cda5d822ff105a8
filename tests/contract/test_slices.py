"""Slices over the registry: for every task, a slice's metrics are those of scoring its records
alone, `--cluster-by` resamples whole clusters, and bad slicing options are clear errors.

Each task's example case (`tests/tasks/<task>/cases.py`) is scored with `--slice-by` over a
metadata file that puts its records into random groups; each group's records are then written to
their own truth and prediction files and scored alone, and every model's primary metric and
main metrics (the MLflow keys the task logs) must equal the slice's, exactly.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from extracteval.commands.runner import build_parser
from extracteval.core.slices import ALL, MISSING
from extracteval.mlflow.adapters import get_adapter
from extracteval.mlflow.keys import KeyMap
from extracteval.mlflow.slicing import record_tables, slice_options, slice_scored
from extracteval.tasks import TASKS, ranking_spec
from tests.contract.cases import task_cases

CASES = task_cases()


def _ids_of(path: Path) -> list[str]:
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            return [row["id"] for row in csv.DictReader(f)]
    return [str(json.loads(line)["id"]) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _subset(src: Path, dst: Path, keep: set[str]) -> None:
    """`src` with only the records whose id is in `keep` (a CSV's rows, a JSON Lines file's lines)."""
    if src.suffix == ".csv":
        with src.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        k = rows[0].index("id")
        with dst.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([rows[0], *(r for r in rows[1:] if r[k] in keep)])
    else:
        lines = [ln for ln in src.read_text(encoding="utf-8").splitlines() if ln.strip() and str(json.loads(ln)["id"]) in keep]
        dst.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _files(args: list[str]) -> tuple[Path, dict[str, Path]]:
    truth = Path(args[args.index("--truth") + 1])
    preds = {}
    for i, a in enumerate(args):
        if a == "--predictions":
            name, _, path = args[i + 1].partition("=")
            preds[name] = Path(path)
    return truth, preds


def _scored(task: str, argv: list[str]):
    args = build_parser().parse_args(["score", task, *argv])
    return get_adapter(task).score_args(args)


def _metric_keys(task: str) -> list[str]:
    spec = ranking_spec(task)
    return list(dict.fromkeys([spec.primary, *spec.tie_breaks, *get_adapter(task).interval_metrics]))


@pytest.mark.parametrize("task", list(TASKS))
def test_a_slice_scores_as_its_records_alone(task: str, tmp_path: Path) -> None:
    """Random groups of each task's example records: every model's metrics in each group's slice
    equal those of the group's records scored on their own, and the `(all records)` slice equals
    the whole evaluation."""
    import pandas as pd

    case = CASES[task]
    argv = list(case.score_args)
    truth, preds = _files(argv)
    scored = _scored(task, argv)
    ids = sorted(set(_ids_of(truth)).union(*(_ids_of(p) for p in preds.values())))
    rng = np.random.default_rng(sum(map(ord, task)))
    groups = rng.choice(["g1", "g2", "g3"], size=len(ids), p=[0.5, 0.3, 0.2])
    meta = pd.DataFrame({"group": groups}, index=pd.Index(ids, dtype=object))
    report = slice_scored(scored, slice_options({"slice_by": ["group"], "resamples": 50, "slice_min_size": 1}), meta).to_dict()
    keys = _metric_keys(task)
    adapter = get_adapter(task)
    whole = {m: adapter.metrics(scored, m, KeyMap.build(adapter.item_names(scored))) for m in scored.models}
    for row in (r for r in report["rows"] if r["slice"] == ALL):
        for k in keys:
            if f"metrics/{k}" in row:
                assert row[f"metrics/{k}"] == pytest.approx(whole[row["model"]][k], abs=1e-12), (task, k)
    checked = 0
    for value in ("g1", "g2", "g3"):
        keep = {i for i, g in zip(ids, groups) if g == value}
        if not keep & set(_ids_of(truth)):
            continue
        sub_truth = tmp_path / f"{value}-truth{truth.suffix}"
        _subset(truth, sub_truth, keep)
        sub_argv = [a for a in argv]
        sub_argv[sub_argv.index("--truth") + 1] = str(sub_truth)
        for name, p in preds.items():
            dst = tmp_path / f"{value}-{name}{p.suffix}"
            _subset(p, dst, keep)
            sub_argv[sub_argv.index(f"{name}={p}")] = f"{name}={dst}"
        alone = _scored(task, sub_argv)
        km = KeyMap.build(adapter.item_names(alone))
        for row in (r for r in report["rows"] if r["slice"] == "group" and r["value"] == value):
            got = adapter.metrics(alone, row["model"], km)
            for k in keys:
                if f"metrics/{k}" in row:
                    assert row[f"metrics/{k}"] == pytest.approx(got[k], abs=1e-12), (task, value, row["model"], k)
                    checked += 1
    assert checked > 0


@pytest.mark.parametrize("task", list(TASKS))
def test_the_tasks_count_table_in_memory_is_what_its_run_logs(task: str, tmp_path: Path) -> None:
    """`record_table` (slices are taken from it) hands over exactly the per-record counts and
    sizes that the task's readers get from the rows its run logs (`records_frame` → Parquet →
    `record_counts`, `record_sizes`), for every model of the example."""
    import pandas as pd

    scored = _scored(task, list(CASES[task].score_args))
    adapter = get_adapter(task)
    params = adapter.params(scored)
    for k, m in enumerate(scored.models):
        path = tmp_path / f"records-{k}.parquet"
        adapter.records_frame(scored, m).to_parquet(path, index=False)
        logged, logged_sizes = adapter.record_counts(path, params), adapter.record_sizes(path, params)
        table, sizes = adapter.record_table(scored, m, sizes=True)
        assert table.record_ids.tolist() == logged.record_ids.tolist() and table.columns == logged.columns, (task, m)
        assert table.counts.dtype.kind == logged.counts.dtype.kind and np.array_equal(table.counts, logged.counts), (task, m)
        pd.testing.assert_series_equal(sizes, logged_sizes, check_index_type=False)
        assert adapter.record_table(scored, m)[1] is None


@pytest.mark.parametrize("task", list(TASKS))
def test_cluster_by_resamples_whole_clusters(task: str) -> None:
    """With every record its own cluster the intervals are the record bootstrap's; with two
    clusters the notes warn that the interval may be too narrow."""
    import pandas as pd

    scored = _scored(task, list(CASES[task].score_args))
    from extracteval.core.record_counts import paired_counts

    rec, _, _ = paired_counts(record_tables(scored)[0])
    meta = pd.DataFrame({"own": rec, "two": [str(k % 2) for k in range(len(rec))]}, index=pd.Index(rec, dtype=object))
    plain = slice_scored(scored, slice_options({"slice_by": [], "cluster_by": "own", "resamples": 200}), meta).to_dict()
    base = slice_scored(scored, slice_options({"slice_by": ["two"], "resamples": 200}), meta).to_dict()
    one = {r["model"]: (r["low"], r["high"]) for r in plain["rows"]}
    ref = {r["model"]: (r["low"], r["high"]) for r in base["rows"] if r["slice"] == ALL}
    assert one == ref
    two = slice_scored(scored, slice_options({"cluster_by": "two", "resamples": 200}), meta).to_dict()
    assert any("2 clusters" in n for n in two["notes"])
    assert all(r["clusters"] == 2 for r in two["rows"])


def test_a_slice_of_one_models_extra_records_leaves_the_others_undefined(cli, tmp_path: Path) -> None:
    """A slice of records only one model predicted (ids the truth lacks): there the other model
    is n/a and unranked, not 0.0%, in --json and on the terminal."""
    case = CASES["labels"]
    argv = list(case.score_args)
    _, preds = _files(argv)
    name, path = next(iter(preds.items()))
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("id")
    extra = [[f"extra-{j}" if i == k else c for i, c in enumerate(rows[1])] for j in range(25)]
    copy = tmp_path / f"{name}.csv"
    with copy.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([*rows, *extra])
    argv[argv.index(f"{name}={path}")] = f"{name}={copy}"
    truth, _ = _files(argv)
    meta = tmp_path / "meta.csv"
    meta.write_text("id,channel\n" + "".join(f"{i},{'chat' if j % 2 else 'mail'}\n" for j, i in enumerate(_ids_of(truth)))
                    + "".join(f"extra-{j},web\n" for j in range(25)), encoding="utf-8")
    r = cli("score", "labels", *argv, "--slice-by", "channel", "--metadata", str(meta), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)["slices"]
    missing = {x["model"]: x for x in doc["rows"] if x["value"] == "web"}
    other = next(m for m in missing if m != name)
    assert missing[other]["estimate"] is None and missing[other]["rank"] is None and not missing[other]["ranked"]
    assert missing[name]["ranked"] and missing[name]["rank"] == 1 and missing[name]["records"] == 25
    assert any(f"no record of {other!r}" in n for n in doc["notes"])
    text = cli("score", "labels", *argv, "--slice-by", "channel", "--metadata", str(meta))
    line = next(ln for ln in text.out.splitlines() if ln.startswith("web "))
    assert line.split()[-2:] == ["n/a", name] or "n/a" in line.split(), line


def test_score_slices_on_the_command_line(cli, tmp_path: Path) -> None:
    case = CASES["labels"]
    truth, _ = _files(list(case.score_args))
    ids = _ids_of(truth)
    meta = tmp_path / "meta.csv"
    meta.write_text("id,channel,length\n" + "".join(f"{i},{'email' if k % 3 else 'chat'},{k}\n" for k, i in enumerate(ids[:-3])), encoding="utf-8")
    r = cli("score", "labels", *case.score_args, "--slice-by", "channel", "--slice-by", "length", "--slice-by", "channel,length",
            "--metadata", str(meta), "--slice-bins", "3", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)["slices"]
    assert doc["by"] == ["channel", "length", "channel × length"]
    values = {(row["slice"], row["value"]) for row in doc["rows"]}
    assert ("channel", "chat") in values and ("channel", MISSING) in values
    assert sum(1 for s, _ in values if s == "length") == 4  # three quantile bins and the records without metadata
    text = cli("score", "labels", *case.score_args, "--slice-by", "channel", "--metadata", str(meta))
    assert text.code == 0 and "By channel:" in text.out and "chat" in text.out


@pytest.mark.parametrize("argv, needle", [
    (["--slice-by", "nope"], "'nope'"),
    (["--slice-by", "channel", "--slice-bins", "x"], "--slice-bins"),
    (["--slice-by", "channel", "--slice-min-size", "0"], "--slice-min-size"),
    (["--slice-by", "channel", "--chunk-size", "10", "--output", "OUT"], "do not write --output"),
    (["--slice-by", "channel", "--slice-bins", "channel=1,2"], "must be a finite number"),
    (["--slice-by", "channel", "--metadata-id", "nope"], "'nope'"),
])
def test_bad_slicing_options_are_clear_errors(cli, tmp_path: Path, argv: list[str], needle: str) -> None:
    case = CASES["labels"]
    truth, _ = _files(list(case.score_args))
    meta = tmp_path / "meta.csv"
    meta.write_text("id,channel\n" + "".join(f"{i},x\n" for i in _ids_of(truth)), encoding="utf-8")
    r = cli("score", "labels", *case.score_args, "--metadata", str(meta), *[str(tmp_path / "out") if a == "OUT" else a for a in argv])
    assert r.code == 2 and needle in r.err and "Traceback" not in r.err, r.err


def _with_column(src: Path, dst: Path, name: str, values: dict[str, str]) -> None:
    """`src` with one more column (CSV) or top-level key (JSON Lines) per record."""
    if src.suffix == ".csv":
        with src.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        k = rows[0].index("id")
        with dst.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([[*rows[0], name], *([*r, values[r[k]]] for r in rows[1:])])
    else:
        out = []
        for line in src.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                rec[name] = values[str(rec["id"])]
                out.append(json.dumps(rec))
        dst.write_text("\n".join(out) + "\n", encoding="utf-8")


@pytest.mark.parametrize("task", list(TASKS))
def test_a_metadata_column_of_the_truth_is_not_scored(task: str, tmp_path: Path) -> None:
    """A truth column (or top-level key) named by --slice-by / --cluster-by describes the record:
    every model's metrics are those of the truth without it, and it is no item of the result."""
    argv = list(CASES[task].score_args)
    truth, _ = _files(argv)
    ids = _ids_of(truth)
    dst = tmp_path / f"truth{truth.suffix}"
    _with_column(truth, dst, "segment", {i: ("north" if k % 2 else "south") for k, i in enumerate(ids)})
    plain = _scored(task, argv)
    argv[argv.index("--truth") + 1] = str(dst)
    _, preds = _files(argv)
    for name, p in preds.items():  # the predictions may carry the column too: it is no prediction either
        copy = tmp_path / f"{name}{p.suffix}"
        _with_column(p, copy, "segment", {i: "east" for i in _ids_of(p)})
        argv[argv.index(f"{name}={p}")] = f"{name}={copy}"
    sliced = _scored(task, [*argv, "--slice-by", "segment", "--cluster-by", "segment"])
    adapter = get_adapter(task)
    assert "segment" not in set(adapter.item_names(sliced))
    km = KeyMap.build(adapter.item_names(plain))
    for m in plain.models:
        assert adapter.metrics(sliced, m, km) == adapter.metrics(plain, m, km), (task, m)


def test_a_column_cannot_be_both_a_field_and_metadata(cli) -> None:
    case = CASES["fields"]
    r = cli("score", "fields", *case.score_args, "--fields", "contract_type,parties", "--slice-by", "contract_type")
    assert r.code == 2 and "record metadata" in r.err and "Traceback" not in r.err, r.err
    r = cli("score", "labels", *CASES["labels"].score_args, "--features", "category", "--slice-by", "category")
    assert r.code == 2 and "record metadata" in r.err, r.err


def _metadata_file(task: str, tmp_path: Path) -> Path:
    truth, preds = _files(list(CASES[task].score_args))
    ids = sorted(set(_ids_of(truth)).union(*(_ids_of(p) for p in preds.values())))
    meta = tmp_path / "meta.csv"
    meta.write_text("id,group,customer\n" + "".join(f"{i},{'abc'[k % 3]},c{k % 7}\n" for k, i in enumerate(ids)), encoding="utf-8")
    return meta


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("engine", [["--chunk-size", "7"], ["--chunk-size", "11", "--workers", "2"]], ids=["chunks", "workers"])
def test_slices_are_the_same_in_chunks_and_with_workers(task: str, engine: list[str], cli, tmp_path: Path) -> None:
    meta = _metadata_file(task, tmp_path)
    argv = ["score", task, *CASES[task].score_args, "--slice-by", "group", "--cluster-by", "customer", "--metadata", str(meta), "--json"]
    memory = cli(*argv)
    assert memory.code == 0, memory.err
    streamed = cli(*argv, *engine)
    assert streamed.code == 0, streamed.err
    assert json.loads(streamed.out)["slices"] == json.loads(memory.out)["slices"]


@pytest.mark.parametrize("task", list(TASKS))
def test_the_built_in_size_slice(task: str, cli) -> None:
    """`--slice-by @size` bins each record's size as the task counts it, with no metadata: every
    record falls in one bin, and the result names what the size counts."""
    r = cli("score", task, *CASES[task].score_args, "--slice-by", "@size", "--slice-bins", "3", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)["slices"]
    assert doc["size"]
    rows = [x for x in doc["rows"] if x["slice"] == "@size"]
    first = rows[0]["model"]
    total = next(x["records"] for x in doc["rows"] if x["slice"] == ALL)
    assert sum(x["records"] for x in rows if x["model"] == first) == total
    assert MISSING not in {x["value"] for x in rows}


@pytest.mark.parametrize("task", list(TASKS))
def test_cluster_by_makes_the_results_own_intervals_clustered(task: str, cli, tmp_path: Path) -> None:
    """With --cluster-by the result's intervals and adjacent comparisons are the cluster
    bootstrap's (those of the slice of all records), and so is a task's per-model interval."""
    from extracteval.tasks import present

    meta = _metadata_file(task, tmp_path)
    r = cli("score", task, *CASES[task].score_args, "--cluster-by", "customer", "--metadata", str(meta), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    rows = {x["model"]: x for x in doc["slices"]["rows"] if x["slice"] == ALL}
    assert "cluster bootstrap over 'customer' (7 clusters)" == doc["intervals"]["method"]
    for m, iv in doc["intervals"]["models"].items():
        assert (iv["estimate"], iv["low"], iv["high"]) == (rows[m]["estimate"], rows[m]["low"], rows[m]["high"])
    order = [x["model"] for x in sorted(rows.values(), key=lambda x: x["rank"])]
    assert [(c["higher"], c["lower"]) for c in doc["comparisons"]] == list(zip(order, order[1:]))
    key = getattr(present(task, "contract"), "PRIMARY_CI", None)
    if key:
        for m in rows:
            ci = doc["models"][m]["ci"][key]
            assert (ci["low"], ci["high"]) == (rows[m]["low"], rows[m]["high"])


@pytest.mark.parametrize("task", list(TASKS))
def test_a_truth_metadata_column_is_dropped_by_the_streaming_engines_too(task: str, cli, tmp_path: Path) -> None:
    argv = list(CASES[task].score_args)
    truth, _ = _files(argv)
    dst = tmp_path / f"truth{truth.suffix}"
    _with_column(truth, dst, "segment", {i: ("north" if k % 3 else "south") for k, i in enumerate(_ids_of(truth))})
    argv[argv.index("--truth") + 1] = str(dst)
    memory = cli("score", task, *argv, "--slice-by", "segment", "--json")
    chunks = cli("score", task, *argv, "--slice-by", "segment", "--json", "--chunk-size", "9")
    assert memory.code == 0 and chunks.code == 0, chunks.err
    assert json.loads(chunks.out)["slices"] == json.loads(memory.out)["slices"]


def test_slices_without_intervals_and_the_resamples_of_a_task_without_its_own(cli, tmp_path: Path) -> None:
    """`--no-ci` keeps the slices' values and rankings and drops their intervals (and leads); a
    task whose result has no intervals of its own still takes --resamples and --seed for them."""
    fields = cli("score", "fields", *CASES["fields"].score_args, "--slice-by", "@size", "--no-ci", "--json")
    assert fields.code == 0, fields.err
    doc = json.loads(fields.out)["slices"]
    assert doc["resamples"] == 0 and not doc["gaps"] and all(r["low"] is None and r["high"] is None for r in doc["rows"])
    assert all(r["rank"] for r in doc["rows"] if r["ranked"]) and all(w["supported_drop"] is None for ws in doc["weakest"].values() for w in ws)
    labels = cli("score", "labels", *CASES["labels"].score_args, "--slice-by", "@size", "--resamples", "50", "--seed", "3", "--json")
    assert labels.code == 0, labels.err
    got = json.loads(labels.out)["slices"]
    assert (got["resamples"], got["seed"]) == (50, 3)


def test_the_evaluators_data_is_not_asked_for_the_built_in_size() -> None:
    """`evaluator_config={"slice_by": ["@size", "channel"]}`: `@size` is the task's, not a column of the evaluated data."""
    import pandas as pd

    from extracteval.mlflow.slicing import frame_slicing

    features = pd.DataFrame({"channel": ["chat", "email"]})
    options, meta = frame_slicing({"slice_by": ["@size", "channel"]}, features, ["r1", "r2"])
    assert options.by == (("@size",), ("channel",)) and list(meta.columns) == ["channel"] and meta.loc["r2", "channel"] == "email"
