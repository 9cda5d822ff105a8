"""Multi-label features on Spark: the local engine's document."""

from __future__ import annotations

from tests.system import require_spark

require_spark()  # pyspark and a Java runtime, or the skip that names what to install

from tests.tasks.labels.test_multilabel_cli import _files  # noqa: E402


def test_spark_document_equals_the_local_one(cli, tmp_path):
    t, p = _files(tmp_path, "jsonl", n=60)
    # --features: Spark orders a JSON file's keys by name
    args = ["score", "labels", "--truth", str(t), "--predictions", f"m={p}", "--multi-label", "tags", "--type", "tags=category", "--features", "tags,kind",
            "--json"]
    want = cli(*args)
    got = cli(*args, "--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "3")
    assert want.code == 0 and got.code == 0, (want.err, got.err)
    assert got.out == want.out
