"""Spark `local[2]` gives the local engine's `spans` document exactly (10k JSONL documents,
unsorted files): per-tag, relaxed, curve, error examples and bootstrap intervals. One
SparkSession per module."""

from __future__ import annotations

import json
import random

import pytest

from tests.system import require_spark

require_spark()  # pyspark and a Java runtime, or the skip that names what to install

N = 10_000
TEXT = "The administrator can delete inactive accounts after the session expires."
SPANS = [(4, 17, "Main_actor"), (22, 28, "Action"), (29, 46, "Entity"), (53, 73, "Condition")]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark_spans")
    rng = random.Random(5)
    ids = [f"req-{i}" for i in range(N)]
    rng.shuffle(ids)
    gold = {i: [s for s in SPANS if rng.random() < 0.8] for i in ids}
    _write(d / "truth.jsonl", [{"id": i, "text": TEXT, "gold": [{"start": s, "end": e, "tag": t} for s, e, t in gold[i]]} for i in ids])

    def pred(i, slip):
        out = []
        for s, e, t in gold[i]:
            r = rng.random()
            if r < 0.1:
                continue
            if r < 0.1 + slip:
                s = max(0, s - 4)
            if r > 0.95:
                t = "Entity"
            out.append({"start": s, "end": e, "tag": t})
        if rng.random() < 0.05:
            out.append({"start": 0, "end": 3, "tag": "Entity"})
        return out

    _write(d / "a.jsonl", [{"id": i, "pred": pred(i, 0.1)} for i in ids])
    _write(d / "b.jsonl", [{"id": i, "pred": pred(i, 0.3)} for i in reversed(ids)])
    return d


def test_spark_local2_equals_local_engine_on_10k_documents(spark, cli, files):
    args = ["score", "spans", "--truth", str(files / "truth.jsonl"), "--predictions", f"a={files / 'a.jsonl'}",
            "--predictions", f"b={files / 'b.jsonl'}", "--resamples", "200", "--json"]
    local = cli(*args)
    on_spark = cli(*args, "--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "4")
    assert local.code == on_spark.code == 0, on_spark.err
    assert on_spark.out == local.out
    doc = json.loads(local.out)
    assert doc["n_documents"] == N and doc["models"]["a"]["ci"] is not None and doc["models"]["b"]["errors"]["counts"]["boundary"] > 0


def test_document_missing_from_predictions_is_an_input_error(spark, cli, tmp_path):
    _write(tmp_path / "t.jsonl", [{"id": "a", "gold": []}, {"id": "b", "gold": []}])
    _write(tmp_path / "p.jsonl", [{"id": "a", "pred": []}])
    r = cli("score", "spans", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}",
            "--engine", "spark", "--spark-master", "local[2]")
    assert r.code == 2 and "truth document(s) have no prediction: 'b'" in r.err, r.err
