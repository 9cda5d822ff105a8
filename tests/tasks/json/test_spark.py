"""Spark `local[2]` gives the local engine's `json` document exactly (10k records, unsorted files,
records and pairs layouts, statuses, safety scores): the means and medians of per-record scores
included, bit for bit. One SparkSession per module."""

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
    d = tmp_path_factory.mktemp("spark_json")
    rng = random.Random(11)
    ids = [f"rec{i}" for i in range(N)]
    rng.shuffle(ids)
    names = ["John Smith", "Jane Doe", "Acme Ltd", "acme ltd.", None, "n/a", ""]
    truth = {i: {"name": rng.choice(names), "amount": rng.choice([1, 2.5, 0, None]), "tags": rng.sample(["a", "b", "c"], rng.randint(0, 2)),
                 "addr": {"city": rng.choice(["Berlin", "Pune", None])}} for i in ids}
    _write(d / "truth.jsonl", [{"id": i, **truth[i]} for i in ids])

    def noisy(obj):
        out = {k: (rng.choice(names) if k == "name" and rng.random() < 0.3 else v) for k, v in obj.items() if rng.random() < 0.9}
        if rng.random() < 0.1:
            out["extra"] = "x"
        return out

    _write(d / "a.jsonl", [{"id": i, **noisy(truth[i]), **({"safety_score": 0.5} if rng.random() < 0.2 else {})} for i in ids if rng.random() < 0.95])
    _write(d / "b.jsonl", [{"id": i, "truth": truth[i], "prediction": noisy(truth[i]) if rng.random() < 0.95 else "oops",
                            **({"status": rng.choice(["ok", "pending", "error"])} if rng.random() < 0.1 else {})} for i in ids])
    (d / "s.json").write_text(json.dumps({"name": "FUZZY", "addr": "SEMANTIC"}))
    return d


def test_spark_local2_equals_local_engine_on_10k_records(spark, cli, files):
    args = ["score", "json", "--truth", str(files / "truth.jsonl"), "--predictions", f"a={files / 'a.jsonl'}",
            "--predictions", f"b={files / 'b.jsonl'}", "--strategies", str(files / "s.json"), "--json"]
    local = cli(*args)
    on_spark = cli(*args, "--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "4")
    assert local.code == on_spark.code == 0, on_spark.err
    assert on_spark.out == local.out
    doc = json.loads(local.out)
    assert doc["n_records"] == N and doc["models"]["b"]["excluded_records"] > 0 and doc["models"]["a"]["missing_records"] > 0


def test_prediction_id_outside_the_truth_is_an_input_error(spark, cli, tmp_path):
    _write(tmp_path / "t.jsonl", [{"id": "a", "x": 1}])
    _write(tmp_path / "p.jsonl", [{"id": "a", "x": 1}, {"id": "z", "x": 1}])
    r = cli("score", "json", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}",
            "--engine", "spark", "--spark-master", "local[2]")
    assert r.code == 2 and "p.jsonl: record id(s) are not in the ground truth" in r.err and "'z'" in r.err, r.err
