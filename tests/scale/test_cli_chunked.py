"""`extracteval score fields --chunk-size/--workers` end to end: the same --json as the in-memory
engine for CSV, JSONL and Parquet files, and precise errors for what streaming cannot do."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXPERIMENTS

CONTRACTS = EXPERIMENTS / "contracts"
CONTRACT_ARGS = [
    "--truth", str(CONTRACTS / "truth.csv"),
    "--predictions", f"gpt={CONTRACTS / 'predictions/gpt-4o-mini.csv'}",
    "--predictions", f"llama={CONTRACTS / 'predictions/llama-3.1-8b.csv'}",
    "--predictions", f"regex={CONTRACTS / 'predictions/regex-baseline.csv'}",
    "--strategies", str(CONTRACTS / "strategies.yaml"),
    "--json",
]


@pytest.mark.parametrize("extra", [["--chunk-size", "1"], ["--chunk-size", "7"], ["--chunk-size", "1000"], ["--chunk-size", "9", "--workers", "2"]])
def test_contracts_example_is_identical_chunked(cli, extra):
    want = cli("score", "fields", *CONTRACT_ARGS)
    got = cli("score", "fields", *CONTRACT_ARGS, *extra)
    assert want.code == got.code == 0, got.err
    assert got.json() == want.json()


def _frames(n: int, rng: np.random.Generator):
    ids = [f"d{i:04d}" for i in range(n)]
    vocab = np.asarray(["alpha", "Beta", "beta ", "N/A", "", "2024-03-01", "01/03/2024", "7", "7.0"], dtype=object)
    truth = pd.DataFrame({"id": ids, "a": rng.choice(vocab, n), "b": rng.choice(vocab, n)})
    keep = rng.random(n) < 0.8
    pred = pd.DataFrame({"id": np.asarray(ids)[keep], "a": rng.choice(vocab, keep.sum()), "b": rng.choice(vocab, keep.sum())})
    pred["status"] = rng.choice(np.asarray(["ok", "ok", "pending", "error", ""], dtype=object), keep.sum())
    return truth, pred


def _write(frame: pd.DataFrame, path, fmt: str):
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for rec in frame.to_dict("records"):
                fh.write(json.dumps({k: v for k, v in rec.items() if v != ""}) + "\n")  # keys missing here and there
    else:
        frame.to_parquet(path, index=False)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 60), size=st.sampled_from([1, 2, 5, 64]), fmt=st.sampled_from(["csv", "jsonl", "parquet"]), seed=st.integers(0, 2**16))
def test_chunked_files_give_the_in_memory_document(cli, tmp_path, n, size, fmt, seed):
    truth, pred = _frames(n, np.random.default_rng(seed))
    t, p = tmp_path / f"t.{fmt}", tmp_path / f"p.{fmt}"
    _write(truth, t, fmt)
    _write(pred, p, fmt)
    args = ["score", "fields", "--truth", str(t), "--predictions", f"m={p}", "--json", "--resamples", "50"]
    want, got = cli(*args), cli(*args, "--chunk-size", str(size))
    assert want.code == got.code, got.err
    if want.code == 0:
        assert got.json() == want.json()
    else:  # e.g. a predictions file with no records: the same message from both engines
        assert got.err == want.err and "no records" in want.err


def test_output_folder_streams_per_record_rows(cli, tmp_path):
    out = tmp_path / "out"
    res = cli("score", "fields", *CONTRACT_ARGS, "--chunk-size", "8", "--output", str(out))
    assert res.code == 0, res.err
    ref = tmp_path / "ref"
    assert cli("score", "fields", *CONTRACT_ARGS, "--output", str(ref)).code == 0
    keys = ["model", "record_id", "field"]
    got = pd.read_parquet(out / "records.parquet").sort_values(keys).reset_index(drop=True)
    want = pd.read_parquet(ref / "records.parquet").sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert json.loads((out / "result.json").read_text())["models"] == json.loads((ref / "result.json").read_text())["models"]


def test_unsorted_ids_name_the_file_line_and_ids(cli, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n3,y\n2,z\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={t}", "--chunk-size", "2")
    assert res.code == 2
    assert "t.csv: line 4: record id '2' is out of order (it follows '3')" in res.err and "sorted by id" in res.err
    assert "Traceback" not in res.err


def test_duplicate_id_across_chunks_is_reported(cli, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n2,y\n3,y\n", encoding="utf-8")
    p = tmp_path / "p.csv"
    p.write_text("id,a\n1,x\n2,y\n2,z\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={p}", "--chunk-size", "2")
    assert res.code == 2 and "p.csv: line 4: record id '2' is duplicated" in res.err


def test_prediction_ids_beyond_the_truth_are_reported(cli, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n2,y\n", encoding="utf-8")
    p = tmp_path / "p.csv"
    p.write_text("id,a\n1,x\n15,y\n9,z\n", encoding="utf-8")  # '15' < '2' < '9' in code-point order
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={p}", "--chunk-size", "1")
    assert res.code == 2
    assert "p.csv: 1 record id(s) are not in the ground truth" in res.err and "'15'" in res.err
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={p}", "--chunk-size", "5")
    assert res.code == 2 and "not in the ground truth" in res.err


def test_long_layout_cannot_be_streamed(cli, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n", encoding="utf-8")
    p = tmp_path / "p.csv"
    p.write_text("id,field,value\n1,a,x\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={p}", "--chunk-size", "5")
    assert res.code == 2 and "p.csv: long layout" in res.err and "wide files only" in res.err


@pytest.mark.parametrize("args,msg", [(["--chunk-size", "0"], "--chunk-size to be a positive"), (["--workers", "0"], "--workers to be ≥ 1")])
def test_bad_scale_options(cli, tmp_path, args, msg):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={t}", *args)
    assert res.code == 2 and msg in res.err


def test_engine_spark_without_pyspark_says_how_to_install(cli, tmp_path, no_pyspark):
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={t}", "--engine", "spark")
    assert res.code == 2 and "pip install 'extracteval[spark]'" in res.err and "Traceback" not in res.err


@pytest.mark.parametrize("java_home", [None, "no-jdk"])
def test_engine_spark_without_java_says_so(cli, tmp_path, monkeypatch, java_home):
    # pyspark installed, no Java runtime: pyspark would fail with its own gateway traceback. Spark
    # runs $JAVA_HOME/bin/java whenever JAVA_HOME is set: a `java` on the PATH does not help then
    from tests.system import python_package

    python_package("pyspark", "spark")
    if java_home is None:
        monkeypatch.setenv("PATH", str(tmp_path / "no-java-here"))
        monkeypatch.delenv("JAVA_HOME", raising=False)
    else:
        monkeypatch.setenv("JAVA_HOME", str(tmp_path / java_home))
    t = tmp_path / "t.csv"
    t.write_text("id,a\n1,x\n", encoding="utf-8")
    res = cli("score", "fields", "--truth", str(t), "--predictions", f"m={t}", "--engine", "spark", "--spark-master", "local[1]")
    assert res.code == 2 and "Traceback" not in res.err, res.err
    if java_home is None:
        assert "--engine spark needs a Java 17+ runtime" in res.err and "default-jre-headless" in res.err, res.err
    else:
        assert f"$JAVA_HOME ({tmp_path / java_home}) has no bin/java" in res.err, res.err


@pytest.mark.parametrize("args", [["--chunk-size", "5"], ["--workers", "2"], ["--engine", "spark"]])
def test_evaluate_refuses_the_scale_options_where_it_scores_in_memory(cli, tmp_path, monkeypatch, spark_never_starts, pyspark_or_not, args):
    # every task streams its evaluation, but some inputs are scored in memory (BFCL's checker reads
    # its question and answer files whole): an option that would change how they are scored must
    # not pass silently
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    q = tmp_path / "q.json"
    q.write_text('{"id": "simple_0", "question": "x", "function": {"name": "f", "parameters": {"type": "dict", "properties": {}}}}\n', encoding="utf-8")
    a = tmp_path / "a.json"
    a.write_text('{"id": "simple_0", "ground_truth": {"f": {}}}\n', encoding="utf-8")
    r = tmp_path / "r.json"
    r.write_text('{"id": "simple_0", "result": "[f()]"}\n', encoding="utf-8")
    res = cli("evaluate", "toolcalls", "--checker", "bfcl", "--questions", str(q), "--truth", str(a), "--predictions", f"m={r}",
              "--experiment", "x", "--tracking-uri", uri, *args)
    assert spark_never_starts == [], res.err  # refused before Spark would start
    assert res.code == 2 and "evaluate toolcalls --checker bfcl scores in memory" in res.err and "Traceback" not in res.err, res.err
    assert not (tmp_path / "store.db").exists()  # refused before anything was scored or logged


@pytest.mark.parametrize(("args", "message"), [
    (["--chunk-size", "0"], "Expected --chunk-size to be a positive number of records, but got 0"),
    (["--workers", "0"], "Expected --workers to be ≥ 1, but got 0"),
    (["--spark-master", "local[2]"], "--spark-master go with --engine spark"),
    (["--engine", "spark", "--chunk-size", "5"], "--chunk-size/--workers are for the local engine"),
])
def test_evaluate_fields_scale_options_are_checked_before_anything_is_logged(cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    res = cli("evaluate", "fields", *CONTRACT_ARGS[:-1], "--experiment", "x", "--tracking-uri", uri, *args)
    assert res.code == 2 and message in res.err and "Traceback" not in res.err, res.err
    assert not (tmp_path / "store.db").exists()


def test_an_empty_predictions_file_is_the_same_error_on_both_engines(cli, tmp_path):
    # an empty JSONL file has no records, whichever engine reads it (a Hypothesis example found
    # the in-memory reader calling it a table without a header)
    truth, _ = _frames(3, np.random.default_rng(0))
    _write(truth, tmp_path / "t.jsonl", "jsonl")
    (tmp_path / "p.jsonl").write_text("")
    args = ["score", "fields", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"m={tmp_path / 'p.jsonl'}", "--json"]
    want, got = cli(*args), cli(*args, "--chunk-size", "2")
    assert want.code == got.code == 2
    assert got.err == want.err and "p.jsonl: the file has no records" in want.err
