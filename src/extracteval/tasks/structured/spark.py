"""The `structured` task on Spark: the keyed-JSONL glue (`spark.keyed`) and the chunked engine's
`StructuredTask`, so the document is the local engine's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["structured_spark_job"]


def structured_spark_job(spark: Any, truth: str, predictions: Sequence[str], *, config: Any, partitions: int | None = None) -> Any:
    """The `SparkJob` of `score structured --engine spark` (its `run().result`: `StructuredResult`)."""
    from extracteval.tasks.structured.chunked import StructuredTask, _truth_value
    from extracteval.io.record_keys import STRUCTURED_TRUTH_KEYS
    from extracteval.spark.keyed import keyed_spark_job

    def value(source: str, rid: str, rec: dict[str, Any], key: str) -> Any:
        return _truth_value(Path(source), 0, rid, rec, key)

    return keyed_spark_job(spark, StructuredTask(config=config), truth, predictions, truth_keys=STRUCTURED_TRUTH_KEYS, truth_value=value,
                           partitions=partitions)
