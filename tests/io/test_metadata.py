"""Record metadata files: ids of any type read as the text of each value, whatever the column's
type in the file; nothing a file holds makes a traceback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from extracteval.io.metadata import read_metadata


def test_ids_are_the_text_of_each_value_whatever_the_column_type(tmp_path: Path) -> None:
    cases = {
        "text": (pa.array([" r1 ", "r2"]), ["r1", "r2"]),
        "ints": (pa.array([7, 12], type=pa.int64()), ["7", "12"]),
        "floats": (pa.array([1.0, 2.5]), ["1.0", "2.5"]),
        "bytes": (pa.array([b"r1", b"\xff"], type=pa.binary()), ["b'r1'", "b'\\xff'"]),  # not decoded: a byte string is no text
    }
    for name, (ids, want) in cases.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"id": ids, "g": ["a", "b"]}), path)
        got = read_metadata(path, ["g"])
        assert got.index.tolist() == want, name
        assert got["g"].tolist() == ["a", "b"]


def test_a_metadata_file_of_undecodable_byte_ids_is_a_clear_error(cli, tmp_path: Path) -> None:
    from tests.contract.cases import task_cases

    path = tmp_path / "meta.parquet"
    pq.write_table(pa.table({"id": pa.array([b"r1", b"\xff"], type=pa.binary()), "g": ["a", "b"]}), path)
    r = cli("score", "fields", *task_cases()["fields"].score_args, "--slice-by", "g", "--metadata", str(path))
    assert r.code == 2 and "no record id of the metadata matches" in r.err and "Traceback" not in r.err, r.err
    assert pd.read_parquet(path).shape == (2, 2)  # the user's file is read, never changed
