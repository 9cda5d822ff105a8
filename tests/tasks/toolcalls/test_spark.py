"""Spark `local[2]` gives the local engine's `toolcalls` document exactly (10k records, unsorted
files, extra and missing ids), and a duplicated id is an `InputError`. One SparkSession per module."""

from __future__ import annotations

import json
import random

import pytest

from tests.system import require_spark

require_spark()  # pyspark and a Java runtime, or the skip that names what to install

N = 10_000


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark_toolcalls")
    rng = random.Random(3)
    ids = [f"q{i}" for i in range(N)]
    rng.shuffle(ids)  # Spark needs no sorted input
    calls = {i: [{"name": rng.choice(["get_weather", "book", "search"]), "arguments": {"city": rng.choice(["Berlin", "Pune"]), "n": rng.randint(0, 3)}}
                 for _ in range(rng.choice([1, 1, 2]))] for i in ids}
    _write(d / "truth.jsonl", [{"id": i, "calls": calls[i]} for i in ids])

    def output(i):
        r = rng.random()
        if r < 0.5:
            return json.dumps(calls[i])
        if r < 0.7:
            c = calls[i][0]
            return f"{c['name']}(city='{c['arguments']['city']}', n={c['arguments']['n'] + (r < 0.6)})"
        if r < 0.85:
            return {"name": calls[i][0]["name"], "arguments": {"city": "Pune"}}
        return rng.choice(["", "I can't", "{broken"])

    _write(d / "a.jsonl", [{"id": i, "output": output(i)} for i in ids if rng.random() < 0.97] + [{"id": "zz1", "output": "x"}])
    _write(d / "b.jsonl", [{"id": i, "output": output(i)} for i in ids])
    return d


def test_spark_local2_equals_local_engine_on_10k_records(spark, cli, files):
    args = ["score", "toolcalls", "--truth", str(files / "truth.jsonl"), "--predictions", f"a={files / 'a.jsonl'}",
            "--predictions", f"b={files / 'b.jsonl'}", "--json"]
    local = cli(*args)
    on_spark = cli(*args, "--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "4")
    assert local.code == on_spark.code == 0, on_spark.err
    assert on_spark.out == local.out
    doc = json.loads(local.out)
    assert doc["n_records"] == N and doc["models"]["a"]["extra_ids"] == ["zz1"] and doc["models"]["a"]["missing_ids"]


def test_duplicated_id_is_an_input_error(spark, cli, tmp_path):
    _write(tmp_path / "t.jsonl", [{"id": "a", "calls": []}, {"id": "a", "calls": []}])
    _write(tmp_path / "p.jsonl", [{"id": "a", "output": ""}])
    r = cli("score", "toolcalls", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}",
            "--engine", "spark", "--spark-master", "local[2]")
    assert r.code == 2 and "t.jsonl: record id 'a' appears twice; ids must be unique" in r.err, r.err
