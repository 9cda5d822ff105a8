"""The `toolcalls` task (generic checker) on Spark: the keyed-JSONL glue (`spark.keyed`: lines
read as text, since Spark's JSON schema inference would reshape arbitrary call arguments; ids and
keys checked on the executors; truth and each model's outputs joined by id) and the chunked
engine's `ToolCallsTask`, reduced and finalised once on the driver: the same counts, so the same
numbers as the local engine.

The inputs need not be sorted. Duplicated ids are an `InputError` naming the file and ids;
outputs for ids the truth does not have are listed as `extra_ids`, as locally.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["toolcalls_spark_job"]


def toolcalls_spark_job(spark: Any, truth: str, predictions: Sequence[str], *, config: Any, possible_answer: bool = False,
                        partitions: int | None = None) -> Any:
    """The `SparkJob` of `score toolcalls --engine spark` (its `run().result`: `ToolCallResult`);
    as in memory, one possible-answer record makes the whole truth file possible answers."""
    from dataclasses import replace

    from extracteval.tasks.toolcalls.chunked import ToolCallsTask
    from extracteval.io.keyed_chunks import keyed_record
    from extracteval.io.record_keys import TOOLCALL_TRUTH_KEYS
    from extracteval.spark.engine import guard
    from extracteval.spark.keyed import keyed_spark_job

    job = keyed_spark_job(spark, None, truth, predictions, truth_keys=TOOLCALL_TRUTH_KEYS,
                          truth_value=lambda source, rid, rec, key: rec[key], partitions=partitions)
    if not possible_answer:
        def answer_keys(batches):  # type: ignore[no-untyped-def]
            from extracteval.io.json_text import loads as _loads

            for pdf in batches:
                found = {keyed_record(truth, "a line", _loads(line), TOOLCALL_TRUTH_KEYS, "reference")[1]
                         for line in pdf["tl"].tolist() if isinstance(line, str)}
                yield pd.DataFrame({"possible": [bool(found & {"ground_truth", "possible_answer"})]})

        possible_answer = bool(guard(lambda: job.df.mapInPandas(answer_keys, schema="possible boolean").filter("possible").limit(1).count()))
    return replace(job, task=ToolCallsTask(config=config, possible_answer=possible_answer))
