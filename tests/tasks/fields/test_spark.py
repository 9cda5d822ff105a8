"""Spark `local[2]` gives the local engine's numbers exactly (10k-record `fields` data set),
and bad input is an `InputError`, not an executor stack trace. One SparkSession per module."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.system import require_spark

require_spark()  # pyspark and a Java runtime, or the skip that names what to install

from extracteval.tasks.fields.semantics import FieldsConfig, score_fields  # noqa: E402
from extracteval.core.strategies import Strategy  # noqa: E402
from extracteval.errors import InputError  # noqa: E402
from extracteval.tasks.fields.inputs import load_fields_inputs  # noqa: E402
from tests.tasks.fields.data import make_fields_data  # noqa: E402

N = 10_000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("spark_fields")
    truth, models = make_fields_data(N, seed=5)
    truth.to_csv(d / "truth.csv", index=False)
    specs = []
    for name, frame in models.items():
        if name == "gamma":  # one model from Parquet: typed (non-text) input on both engines
            frame.to_parquet(d / f"{name}.parquet", index=False)
            specs.append(f"{name}={d / f'{name}.parquet'}")
        else:
            frame.to_csv(d / f"{name}.csv", index=False)
            specs.append(f"{name}={d / f'{name}.csv'}")
    return d, specs


def test_spark_local2_equals_local_engine_on_10k_records(spark, files, tmp_path):
    from extracteval.tasks.fields.spark import score_fields_files

    d, specs = files
    cfg = FieldsConfig(strategies={"vendor": Strategy.FUZZY}, bootstrap=200)
    truth, preds, source = load_fields_inputs(d / "truth.csv", specs)
    local = score_fields(truth, preds, config=cfg, truth_source=source)
    out = tmp_path / "records.parquet"
    result, inputs = score_fields_files(str(d / "truth.csv"), specs, config=cfg, master="local[2]", partitions=4, records_path=out)
    assert result.to_dict() == local.to_dict()
    assert local.n_records == N and inputs["predictions"]["gamma"].endswith("gamma.parquet")
    keys = ["model", "record_id", "field"]
    got = pd.read_parquet(out).sort_values(keys).reset_index(drop=True)
    want = local.records.to_frame().sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_spark_cli_matches_local_cli(cli, files):
    d, specs = files
    args = ["score", "fields", "--truth", str(d / "truth.csv"), *[x for s in specs[:2] for x in ("--predictions", s)], "--json", "--no-ci"]
    local = cli(*args)
    on_spark = cli(*args, "--engine", "spark", "--spark-master", "local[2]")
    assert local.code == on_spark.code == 0, on_spark.err
    assert on_spark.json() == local.json()


def test_unknown_and_duplicated_ids_are_input_errors(spark):
    from extracteval.tasks.fields.spark import score_fields_spark

    truth = spark.createDataFrame(pd.DataFrame({"id": ["1", "2", "3"], "a": ["x", "y", "z"]}))
    extra = spark.createDataFrame(pd.DataFrame({"id": ["1", "9"], "a": ["x", "y"]}))
    with pytest.raises(InputError, match=r"m\.csv: 1 record id\(s\) are not in the ground truth \(truth\.csv\): '9'"):
        score_fields_spark(truth, {"m": extra}, truth_source="truth.csv", sources={"m": "m.csv"})
    dup = spark.createDataFrame(pd.DataFrame({"id": ["1", "1"], "a": ["x", "y"]}))
    with pytest.raises(InputError, match=r"m\.csv: record ids must be unique; found duplicated: '1'"):
        score_fields_spark(truth, {"m": dup}, sources={"m": "m.csv"})
    bad_status = spark.createDataFrame(pd.DataFrame({"id": ["1"], "a": ["x"], "status": ["done"]}))
    with pytest.raises(InputError, match=r"column 'status' must be one of ok, pending, error, skipped"):
        score_fields_spark(truth, {"m": bad_status}, config=FieldsConfig(bootstrap=0), sources={"m": "m.csv"})


def test_evaluate_engine_spark_logs_what_the_in_memory_evaluate_logs(spark, cli, tmp_path, monkeypatch):
    # one small data set (Spark runs every step as jobs): the same metrics, params, tags, truth
    # digest, dataset input, artifact listing and Parquet rows as `evaluate` in memory
    from tests.tasks.fields.test_streamed import _assert_same, _evaluate, _generated

    monkeypatch.chdir(tmp_path)
    args = _generated(tmp_path, 400, 11) + ["--resamples", "100", "--no-figures"]
    want, _ = _evaluate(cli, args, tmp_path, "memory")
    got, _ = _evaluate(cli, args, tmp_path, "spark", "--engine", "spark", "--spark-master", "local[2]", "--spark-partitions", "3")
    _assert_same(want, got, tmp_path)
