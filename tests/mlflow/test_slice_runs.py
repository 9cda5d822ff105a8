"""What `extracteval evaluate <task> --slice-by …` logs, in a real SQLite tracking store: the
parent run's slices table, document and heat map; each model run's bounded `slice/…` metrics
(valid keys whatever the names) and its records' metadata; a report section that escapes the
values; the `slices.json` of the run equal to `score --json`'s; and nothing of it without slicing."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

mlflow = pytest.importorskip("mlflow")

from mlflow.tracking import MlflowClient  # noqa: E402

from extracteval.mlflow.keys import is_valid_key  # noqa: E402
from extracteval.mlflow.slice_logging import MAX_SLICE_METRICS  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.contract.cases import task_cases  # noqa: E402

ODD = "<script>alert(1)</script> $x$ " + "v" * 300  # markup, mathtext and a name longer than any key


def _meta(tmp: Path) -> Path:
    args = list(task_cases()["labels"].score_args)
    ids = [str(i) for i in pd.read_csv(args[args.index("--truth") + 1], dtype=str)["id"]]
    meta = pd.DataFrame({"id": ids, "channel": [ODD if k % 4 == 0 else ("email" if k % 2 else "chat") for k in range(len(ids))],
                         "ticket": [f"t{k}" for k in range(len(ids))]})  # one slice per record: more slices than the bound
    path = tmp / "meta.csv"
    meta.to_csv(path, index=False)
    assert len(ids) > MAX_SLICE_METRICS
    return path


def _runs(uri: str, experiment: str) -> dict[str, object]:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    return {r.data.tags.get("extracteval.role"): r for r in client.search_runs([exp.experiment_id])} | {
        r.data.tags.get("extracteval.model"): r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("extracteval.role") == "model"}


def test_evaluate_logs_the_slices(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    meta = _meta(tmp_path)
    args = [*task_cases()["labels"].score_args, "--slice-by", "channel", "--slice-by", "ticket", "--slice-by", "channel,ticket",
            "--metadata", str(meta), "--slice-min-size", "1"]
    r = run_cli("evaluate", "labels", *args, "--experiment", "sliced", "--tracking-uri", uri)
    assert r.code == 0, r.err
    assert "By channel:" in r.out
    client = MlflowClient(uri)
    runs = _runs(uri, "sliced")
    parent = runs["comparison"]
    names = {a.path for a in client.list_artifacts(parent.info.run_id, "extracteval")}
    assert {"extracteval/slices.parquet", "extracteval/slices.json", "extracteval/slices.png"} <= names
    logged = json.loads(Path(client.download_artifacts(parent.info.run_id, "extracteval/slices.json", str(tmp_path))).read_text())
    score = run_cli("score", "labels", *args, "--json")
    assert score.code == 0, score.err
    assert json.dumps(logged["rows"], sort_keys=True) == json.dumps(json.loads(score.out)["slices"]["rows"], sort_keys=True)
    table = pd.read_parquet(client.download_artifacts(parent.info.run_id, "extracteval/slices.parquet", str(tmp_path)))
    assert len(table) == len(logged["rows"]) and set(table["model"]) == {"gpt", "rules"}
    html = Path(client.download_artifacts(parent.info.run_id, "extracteval/report.html", str(tmp_path))).read_text()
    assert "<h2>Slices</h2>" in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert not any(k.startswith("slice/") for k in parent.data.metrics)
    primary = logged["metric"]
    for model in ("gpt", "rules"):
        run = runs[model]
        sliced = {k: v for k, v in run.data.metrics.items() if k.startswith("slice/")}
        assert len(sliced) == MAX_SLICE_METRICS and all(is_valid_key(k) and k.endswith("/" + primary) for k in sliced)
        mine = sorted((not row["ranked"], row["estimate"]) for row in logged["rows"]
                      if row["model"] == model and row["slice"] != "(all records)" and row["estimate"] is not None)  # no value: no metric
        assert sorted(sliced.values()) == sorted(e for _, e in mine[:MAX_SLICE_METRICS])  # the ranked slices first, weakest first
        keys = json.loads(Path(client.download_artifacts(run.info.run_id, "extracteval/metric_keys.json", str(tmp_path / model))).read_text())
        originals = {m["key"]: m["original"] for m in keys["metrics"] if m["key"].startswith("slice/")}
        assert set(originals) == set(sliced)
        # each key names its slice by the original names (the value of 300 characters too, in metric_keys.json)
        want = {f"slice/{row['slice']}/{row['value']}/{primary}": row["estimate"] for row in logged["rows"] if row["model"] == model}
        assert all(want[originals[k]] == v for k, v in sliced.items())
        rec = pd.read_parquet(client.download_artifacts(run.info.run_id, "extracteval/record_metadata.parquet", str(tmp_path / model)))
        assert list(rec.columns) == ["record_id", "channel", "ticket"] and rec["record_id"].is_unique
        assert (rec["channel"] == ODD).any()


def test_without_slicing_nothing_of_it_is_logged(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    r = run_cli("evaluate", "labels", *task_cases()["labels"].score_args, "--experiment", "plain", "--tracking-uri", uri, "--no-figures")
    assert r.code == 0, r.err
    client = MlflowClient(uri)
    for run in _runs(uri, "plain").values():
        names = {a.path for a in client.list_artifacts(run.info.run_id, "extracteval")}
        assert not names & {"extracteval/slices.parquet", "extracteval/slices.json", "extracteval/slices.png", "extracteval/record_metadata.parquet"}
        assert not any(k.startswith("slice/") for k in run.data.metrics)
        result = json.loads(Path(client.download_artifacts(run.info.run_id, "extracteval/result.json", str(tmp_path / run.info.run_id))).read_text())
        assert "slices" not in result


def test_slice_metric_keys_hold_any_name(tmp_path: Path) -> None:
    """A value of 300 characters, markup and `$`, and crossed columns: each key is valid, one per
    slice, its original name kept."""
    import extracteval
    from extracteval.mlflow.keys import KeyMap
    from extracteval.mlflow.slice_logging import slice_metrics

    args = list(task_cases()["labels"].score_args)
    truth = args[args.index("--truth") + 1]
    preds = {args[i + 1].split("=", 1)[0]: args[i + 1].split("=", 1)[1] for i, a in enumerate(args) if a == "--predictions"}
    config = yaml.safe_load(Path(args[args.index("--config") + 1]).read_text(encoding="utf-8"))
    meta = str(_meta(tmp_path))
    r = extracteval.score("labels", truth, preds, **config, slice_by=["channel"], metadata=meta, slice_min_size=1)
    keys = KeyMap.build([])
    got = slice_metrics(r.scored, "gpt", keys)
    assert len(got) == 3 and all(is_valid_key(k) for k in got)  # chat, email, the odd value; (missing) holds only the rules' extra records
    odd = [k for k in got if keys.originals[k] == f"slice/channel/{ODD}/{r.to_dict()['slices']['metric']}"]
    assert len(odd) == 1 and len(odd[0]) <= 250 and "<" not in odd[0]
    crossed = extracteval.score("labels", truth, preds, **config, slice_by=["channel,ticket"], metadata=meta, slice_min_size=1)
    got = slice_metrics(crossed.scored, "gpt", KeyMap.build([]))
    assert len(got) == MAX_SLICE_METRICS and all(is_valid_key(k) and k.startswith("slice/channel _ ticket/") for k in got)


def test_an_experiment_file_takes_the_slicing_keys(tmp_path: Path) -> None:
    """`experiment.yaml` with `slice_by` (the demo, `mlflow run . -e demo`): the truth's metadata
    column is read, not scored, and the result names the experiment's own truth file."""
    import shutil

    from extracteval.io.config import load_mapping
    from extracteval.mlflow.adapters import get_adapter
    from extracteval.mlflow.experiment_slices import score_experiment

    src = Path(__file__).resolve().parents[2] / "experiments" / "contracts"
    folder = tmp_path / "contracts"
    shutil.copytree(src, folder)
    truth = pd.read_csv(folder / "truth.csv", dtype=str, keep_default_na=False)
    truth["channel"] = ["scan" if k % 3 else "digital" for k in range(len(truth))]
    truth.to_csv(folder / "truth.csv", index=False)
    own = {k: v for k, v in load_mapping(src / "experiment.yaml").items() if k not in ("metadata", "slice_by", "cluster_by")}  # the example's own slicing aside
    spec = {**own, "slice_by": "channel", "slice_min_size": 5}
    adapter = get_adapter("fields")
    scored = score_experiment(adapter, folder, spec)
    plain = adapter.score_experiment(src, load_mapping(src / "experiment.yaml"))
    assert "channel" not in scored.doc["fields"]
    for m, got in scored.doc["models"].items():
        assert (got["overall"], got["ci"], got["totals"]) == (plain.doc["models"][m]["overall"], plain.doc["models"][m]["ci"], plain.doc["models"][m]["totals"])
    assert scored.truth_source == str(folder / "truth.csv") and scored.doc["inputs"]["truth"] == str(folder / "truth.csv")
    assert {r["value"] for r in scored.doc["slices"]["rows"] if r["slice"] == "channel"} == {"scan", "digital"}


@pytest.mark.parametrize("task", ["labels", "fields", "toolcalls"])
def test_leaderboard_and_compare_on_a_slice_give_the_slices_numbers(task: str, tmp_path: Path) -> None:
    """`leaderboard --slice COLUMN=VALUE --cluster-by COLUMN` ranks the logged runs on one slice's
    records with the numbers `score --slice-by` gives that slice — values and clustered intervals —
    and `compare --slice` gives the gap between two runs there."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = list(task_cases()[task].score_args)
    truth = Path(args[args.index("--truth") + 1])
    if truth.suffix == ".csv":
        ids = [str(i) for i in pd.read_csv(truth, dtype=str)["id"]]
    else:
        ids = [str(json.loads(line)["id"]) for line in truth.read_text(encoding="utf-8").splitlines() if line.strip()]
    meta = tmp_path / "meta.csv"
    pd.DataFrame({"id": ids, "channel": ["chat" if k % 3 else "email" for k in range(len(ids))],
                  "customer": [f"c{k % 9}" for k in range(len(ids))]}).to_csv(meta, index=False)
    slicing = ["--slice-by", "channel", "--metadata", str(meta), "--cluster-by", "customer"]
    r = run_cli("evaluate", task, *args, *slicing, "--experiment", "lb-slices", "--tracking-uri", uri)
    assert r.code == 0, r.err
    score = json.loads(run_cli("score", task, *args, *slicing, "--json").out)["slices"]
    want = {row["model"]: row for row in score["rows"] if row["slice"] == "channel" and row["value"] == "chat"}
    lb = run_cli("leaderboard", "--experiment", "lb-slices", "--tracking-uri", uri, "--slice", "channel=chat", "--cluster-by", "customer",
                 "--json", "--no-figures")
    assert lb.code == 0, lb.err
    doc = json.loads(lb.out)
    entries = [e for g in doc["groups"] for e in g["ranking"]]
    assert {e["model"] for e in entries} == set(want)
    primary = score["metric"]
    for e in entries:
        w = want[e["model"]]
        assert e["score"] == pytest.approx(w["estimate"], abs=1e-12) and primary == doc["primary_metric"]
        assert (e["ci"]["low"], e["ci"]["high"]) == pytest.approx((w["low"], w["high"]), abs=1e-12)
    assert doc["leaderboard_run_id"] is None  # a slice's ranking is a view: nothing is logged
    a, b = sorted(want)
    cmp = run_cli("compare", "--experiment", "lb-slices", "--tracking-uri", uri, "--baseline", a, "--candidate", b, "--slice", "channel=chat",
                  "--json")
    assert cmp.code == 0, cmp.err
    gap = json.loads(cmp.out)
    assert gap["gap"] == pytest.approx(want[a]["estimate"] - want[b]["estimate"], abs=1e-12)


def test_the_fields_runs_per_field_intervals_resample_the_clusters(tmp_path: Path) -> None:
    """With --cluster-by, a fields model run's per-field intervals (`field/<f>/ci_low|ci_high`)
    resample whole clusters too: with every record its own cluster they are the record
    bootstrap's, with a few large clusters they differ."""
    args = list(task_cases()["fields"].score_args)
    ids = [str(i) for i in pd.read_csv(args[args.index("--truth") + 1], dtype=str)["id"]]
    meta = tmp_path / "meta.csv"
    pd.DataFrame({"id": ids, "own": ids, "few": [f"c{k % 4}" for k in range(len(ids))]}).to_csv(meta, index=False)

    def field_cis(name: str, *more: str) -> dict[str, float]:
        uri = f"sqlite:///{tmp_path / (name + '.db')}"
        r = run_cli("evaluate", "fields", *args, "--metadata", str(meta), *more, "--experiment", name, "--tracking-uri", uri)
        assert r.code == 0, r.err
        run = next(iter(_runs(uri, name)[m] for m in ("gpt",)))
        return {k: v for k, v in run.data.metrics.items() if k.startswith("field/") and k.endswith(("/ci_low", "/ci_high"))}

    plain = field_cis("plain", "--slice-by", "few")
    own = field_cis("own", "--slice-by", "few", "--cluster-by", "own")
    few = field_cis("few", "--slice-by", "few", "--cluster-by", "few")
    assert plain and own == plain
    assert few != plain
    # streamed in chunks (no ledger in memory): the clusters are summed from the streamed per-record rows, the same intervals
    assert field_cis("few-chunks", "--slice-by", "few", "--cluster-by", "few", "--chunk-size", "7") == few


@pytest.mark.parametrize("task", ["labels", "fields"])
def test_leaderboard_on_a_bin_of_a_numeric_column_and_of_the_built_in_size(task: str, tmp_path: Path) -> None:
    """`leaderboard --slice length=(a, b]` and `--slice @size=[a, b]`: a bin written as `score`
    prints it takes the records whose number falls in it — the numbers `score --slice-by` gives
    that bin; `@size` is read from the runs' per-record counts."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = list(task_cases()[task].score_args)
    ids = [str(i) for i in pd.read_csv(args[args.index("--truth") + 1], dtype=str)["id"]]
    meta = tmp_path / "meta.csv"
    pd.DataFrame({"id": ids, "length": [(k * 7) % 23 for k in range(len(ids))],
                  "conf": [round(((k * 5) % 17) / 7 + 0.1234567, 9) for k in range(len(ids))]}).to_csv(meta, index=False)  # edges of 8+ digits
    slicing = ["--slice-by", "length", "--slice-by", "conf", "--slice-by", "@size", "--slice-bins", "3", "--metadata", str(meta)]
    r = run_cli("evaluate", task, *args, *slicing, "--experiment", "bins", "--tracking-uri", uri)
    assert r.code == 0, r.err
    score = json.loads(run_cli("score", task, *args, *slicing, "--json").out)["slices"]
    checked = 0
    for slicing_name in ("length", "conf", "@size"):
        values = [row["value"] for row in score["rows"] if row["slice"] == slicing_name and row["records"] >= 5 and row["value"] != "(missing)"]
        for value in dict.fromkeys(values):
            want = {row["model"]: row["estimate"] for row in score["rows"] if row["slice"] == slicing_name and row["value"] == value}
            lb = run_cli("leaderboard", "--experiment", "bins", "--tracking-uri", uri, "--slice", f"{slicing_name}={value}", "--json", "--no-figures")
            assert lb.code == 0, lb.err
            got = {e["model"]: e["score"] for g in json.loads(lb.out)["groups"] for e in g["ranking"]}
            assert got == pytest.approx(want, abs=1e-12), (slicing_name, value)
            checked += 1
    assert checked >= 5


def test_a_slice_value_matches_text_numbers_and_bins_as_score_prints_them() -> None:
    from extracteval.mlflow.run_slices import _in_slice

    nums = ["1", "5", "5.5", "12", "", "40"]
    assert _in_slice(nums, "[1, 5]") == [True, True, False, False, False, False]
    assert _in_slice(nums, "(5, 12]") == [False, False, True, True, False, False]
    assert _in_slice(nums, "< 1") == [False] * 6 and _in_slice(nums, "> 12") == [False] * 5 + [True]
    assert _in_slice(nums, "5.0") == [False, True, False, False, False, False]
    text = ["[1, 5]", "chat", "(5, 12]"]
    assert _in_slice(text, "[1, 5]") == [True, False, False] and _in_slice(text, "(5, 12]") == [False, False, True]
    assert _in_slice(["a", "b"], "< 3") == [False, False]
