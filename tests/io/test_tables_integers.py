"""Integers stay integers when other records lack the key or are null (JSONL, JSON, Parquet):
no detour through float64, which printed 7 as 7.0 and rounded integers above 2**53."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from extracteval.io.tables import read_table

BIG = 2**60 + 1


def test_jsonl_integers_survive_missing_keys(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in ({"id": "1", "n": 7}, {"id": "2"}, {"id": "3", "n": BIG})), encoding="utf-8")
    values = read_table(p)["n"].tolist()
    assert values[0] == 7 and isinstance(values[0], int) and pd.isna(values[1]) and values[2] == BIG


def test_json_array_integers_survive_missing_keys(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps([{"id": "1", "n": BIG}, {"id": "2"}]), encoding="utf-8")
    assert read_table(p)["n"].tolist()[0] == BIG


def test_parquet_integers_with_nulls_and_list_columns(tmp_path):
    p = tmp_path / "x.parquet"
    rows = 1500  # more than the 1000 rows the old reader sampled to find list cells
    table = pa.table({
        "id": [str(i) for i in range(rows)],
        "n": [None if i % 2 else BIG for i in range(rows)],
        "tags": [None] * 1200 + [["a", "b"]] * 300,
    })
    pq.write_table(table, p)
    frame = read_table(p)
    assert frame["n"].tolist()[:2] == [BIG, None]
    assert frame["tags"].tolist()[-1] == ["a", "b"] and isinstance(frame["tags"].tolist()[-1], list)
