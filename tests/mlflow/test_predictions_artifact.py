"""`extracteval/predictions.parquet`, the predictions as scored that `extracteval rescore` reads:
the vectorised encoder (JSON text once per distinct value) gives, cell by cell, what a plain
per-cell encoder gives, and the direct Arrow writer's file reads back as that frame."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.fields.semantics import ModelPredictions
from extracteval.io import parquet_rows
from extracteval.mlflow import predictions_file
from extracteval.mlflow.predictions_file import predictions_to_frame, write_predictions_parquet
from extracteval.tasks.fields.inputs import frame_to_predictions


def _reference_text(v):
    """One cell's JSON text, with nothing shared between cells (the plain reference)."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (list, tuple)):
        return json.dumps([json.loads(_reference_text(x)) if _reference_text(x) is not None else None for x in v], ensure_ascii=False)
    if isinstance(v, dict):
        return json.dumps({str(k): json.loads(t) if (t := _reference_text(x)) is not None else None for k, x in v.items()},
                          ensure_ascii=False, sort_keys=True)
    if isinstance(v, np.generic):
        return _reference_text(v.item())
    return json.dumps(v, ensure_ascii=False)


def _reference_frame(p: ModelPredictions) -> pd.DataFrame:
    values = p.values
    rows = []
    for i, rid in enumerate(values.index):
        for j, f in enumerate(values.columns):
            if p.status is None:
                s = None
            elif isinstance(p.status, pd.DataFrame):
                s = p.status.reindex(index=values.index, columns=values.columns).iloc[i, j]
            else:
                s = p.status.reindex(values.index).iloc[i]
            s = None if s is None or (isinstance(s, float) and math.isnan(s)) else str(s)
            rows.append((str(rid), str(f), _reference_text(values.iloc[i, j]), s))
    return pd.DataFrame(rows, columns=["id", "field", "value", "status"], dtype=object)


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Missing as None, every column object: dtypes aside, the cells compared."""
    return frame.astype(object).where(frame.notna(), None).reset_index(drop=True)


# cells whose JSON texts differ although Python hashing makes them equal (1 == 1.0 == True, 0.0 == -0.0)
_TRICKY = [1, 1.0, True, 0, 0.0, -0.0, False, "1", "true", None, float("nan"), [1, "a"], {"b": 1, "a": [2.5]}, "Zürich", "",
           (1,), (1.0,), (True,), (0.0,), (-0.0,), np.float64(-0.0), np.float64(0.0), np.int64(1), np.bool_(True), pd.NA, pd.NaT]

cells = st.one_of(
    st.sampled_from(_TRICKY), st.text(max_size=4), st.integers(-3, 3), st.floats(allow_nan=True, width=32),
    st.booleans(), st.lists(st.sampled_from(["x", "y", 1]), max_size=2),
)


@st.composite
def predictions(draw):
    n, f = draw(st.integers(0, 6)), draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["mixed", "str", "int", "float", "bool"]))
    cols = {}
    for j in range(f):
        if kind == "mixed":
            col = pd.Series([draw(cells) for _ in range(n)], dtype=object)
        elif kind == "str":
            col = pd.Series([draw(st.one_of(st.none(), st.text(max_size=3))) for _ in range(n)], dtype="str" if draw(st.booleans()) else object)
        elif kind == "int":
            col = pd.Series([draw(st.integers(-5, 5)) for _ in range(n)], dtype=np.int64)
        elif kind == "float":
            col = pd.Series([draw(st.sampled_from([0.0, -0.0, 1.5, float("nan"), 2.0])) for _ in range(n)], dtype=np.float64)
        else:
            col = pd.Series([draw(st.booleans()) for _ in range(n)], dtype=bool)
        cols[f"f{j}"] = col.to_numpy() if kind != "str" else col.array
    ids = pd.Index([f"r{i}" for i in range(n)], name="id")
    values = pd.DataFrame({k: pd.Series(v, index=ids) if len(v) else pd.Series(v, index=ids, dtype=object) for k, v in cols.items()}, index=ids)
    statuses = st.sampled_from(["ok", "pending", "error", None])
    status = draw(st.sampled_from(["none", "record", "cell"]))
    shuffled = ids[::-1] if draw(st.booleans()) else ids  # the status may list the records in another order
    if status == "record":
        status = pd.Series([draw(statuses) for _ in range(n)], index=shuffled, dtype=object)
    elif status == "cell":
        status = pd.DataFrame({c: [draw(statuses) for _ in range(n)] for c in values.columns}, index=shuffled, dtype=object)
    else:
        status = None
    return ModelPredictions(name="m", values=values, status=status, source="generated")


@settings(max_examples=150, deadline=None)
@given(predictions())
def test_encoder_gives_each_cell_its_own_json_text(p):
    got = predictions_to_frame(p)
    assert list(got.columns) == ["id", "field", "value", "status"]
    pd.testing.assert_frame_equal(_plain(got), _plain(_reference_frame(p)))


def test_values_equal_under_hashing_keep_their_own_text():
    # 1, 1.0 and True hash alike, as do 0.0 and -0.0: a cache keyed by the value alone gave
    # True the text "1" and False the text "-0.0"
    values = pd.DataFrame({"a": [1, 1.0, True, False, 0.0, -0.0, "1"]}, index=[f"r{i}" for i in range(7)], dtype=object)
    got = predictions_to_frame(ModelPredictions(name="m", values=values))
    assert got["value"].tolist() == ["1", "1.0", "true", "false", "0.0", "-0.0", '"1"']
    floats = pd.DataFrame({"a": [0.0, -0.0, 0.0]}, index=["x", "y", "z"])
    assert predictions_to_frame(ModelPredictions(name="m", values=floats))["value"].tolist() == ["0.0", "-0.0", "0.0"]
    # inside multi-valued cells and as NumPy scalars too; pandas' NA and NaT are missing cells
    cells = [(1,), (1.0,), (True,), (0.0,), (-0.0,), np.float64(0.0), np.float64(-0.0), np.int64(1), np.bool_(True), pd.NA, pd.NaT]
    ids = [f"r{i}" for i in range(len(cells))]
    values = pd.DataFrame({"a": pd.Series(cells, index=ids, dtype=object)}, index=ids)
    got = predictions_to_frame(ModelPredictions(name="m", values=values))["value"]
    assert got.tolist()[:9] == ["[1]", "[1.0]", "[true]", "[0.0]", "[-0.0]", "0.0", "-0.0", "1", "true"]
    assert got.iloc[9:].isna().all()


@pytest.mark.parametrize("row_group", [1, 5, 7, 1 << 20])
@settings(max_examples=40, deadline=None)
@given(p=predictions())
def test_direct_writer_reads_back_as_the_frame(tmp_path_factory, row_group, p):
    path = tmp_path_factory.mktemp("p") / "predictions.parquet"
    old, old_compact = parquet_rows.ROW_GROUP, predictions_file._COMPACT_ABOVE
    parquet_rows.ROW_GROUP = row_group  # small row groups: ids straddle them, each carries only its own ids
    predictions_file._COMPACT_ABOVE = 0 if row_group == 5 else old_compact  # and only its own value texts
    try:
        write_predictions_parquet(p, path)
    finally:
        parquet_rows.ROW_GROUP, predictions_file._COMPACT_ABOVE = old, old_compact
    frame = predictions_to_frame(p)
    back = pd.read_parquet(path)
    # what pandas reads back: the frame, dtypes included (the file says strings, not categoricals)
    pd.testing.assert_frame_equal(back, frame)
    f = pq.ParquetFile(path)
    assert f.metadata.num_row_groups == max(1, -(-len(frame) // row_group))
    if row_group == 5 and len(frame):
        for g in range(f.metadata.num_row_groups):
            assert len(pq.ParquetFile(path, read_dictionary=["value"]).read_row_group(g, columns=["value"]).column(0).chunk(0).dictionary) <= 5


def test_rescore_reads_the_direct_writers_file(tmp_path):
    values = pd.DataFrame({"party": [["A Corp", "B Ltd"], "C GmbH", None], "amount": [1000.0, np.nan, "1,000"], "date": ["2024-01-01", "Not Present", None]},
                          index=pd.Index(["r1", "r2", "r3"], name="id"))
    status = pd.DataFrame({"party": ["ok", "ok", "pending"], "amount": ["ok", "error", "ok"], "date": ["ok", "ok", "ok"]}, index=["r1", "r2", "r3"])
    p = ModelPredictions(name="m", values=values, status=status)
    write_predictions_parquet(p, tmp_path / "p.parquet")
    back = frame_to_predictions(pd.read_parquet(tmp_path / "p.parquet"), name="m", source="file")
    assert back.values.to_dict() == values.astype(object).where(values.notna(), None).to_dict()
    assert back.status.to_dict() == status.to_dict()


@settings(max_examples=60, deadline=None)
@given(p=predictions())
def test_codes_kept_by_the_scoring_give_the_same_file(tmp_path_factory, p):
    """`score_fields(keep_codes=…)` hands over its factorisation of each model column; the writer
    takes the columns whose distinct values are all text from it, and the file is the same."""
    from extracteval.tasks.fields.semantics import FieldsConfig, score_fields

    truth = pd.DataFrame({c: ["x"] * len(p.values) for c in p.values.columns}, index=p.values.index)
    kept: dict = {}
    score_fields(truth, [p], config=FieldsConfig(bootstrap=0), keep_codes=kept)
    for column, (codes, uniques) in kept.get("m", {}).items():
        assert codes.dtype == np.int32 and len(codes) == len(p.values)
        assert np.array_equal(pd.factorize(p.values[column], use_na_sentinel=True)[0], codes)
    path = tmp_path_factory.mktemp("k") / "predictions.parquet"
    write_predictions_parquet(p, path, kept.get("m"))
    pd.testing.assert_frame_equal(pd.read_parquet(path), predictions_to_frame(p))


def test_kept_codes_are_taken_for_text_columns_only():
    values = pd.DataFrame({"a": ["x", "y", "x"], "b": [1, 1.0, True]}, index=["r1", "r2", "r3"], dtype=object)
    p = ModelPredictions(name="m", values=values)
    # what a factorisation of column b by value would give: 1, 1.0 and True as one value
    known = {"a": (np.array([1, 0, 1], dtype=np.int32), pd.Index(["y", "x"], dtype=object)),
             "b": (np.zeros(3, dtype=np.int32), pd.Index([1], dtype=object))}
    coded = predictions_file.code_predictions(p, known)
    got = predictions_to_frame(p)
    assert got["value"].tolist() == ['"x"', "1", '"y"', "1.0", '"x"', "true"]
    texts = coded.value_texts.to_pylist()
    assert [texts[c] for c in coded.values] == got["value"].tolist()
    # the codes given for `a` were used (their order differs from a fresh factorisation's)
    assert texts[coded.values[0]] == '"x"' and coded.values[0] != predictions_file.code_predictions(p).values[0]


def test_predictions_without_fields_give_an_empty_file(tmp_path):
    p = ModelPredictions(name="m", values=pd.DataFrame(index=pd.Index(["a", "b"], name="id")))
    write_predictions_parquet(p, tmp_path / "p.parquet")
    back = pd.read_parquet(tmp_path / "p.parquet")
    assert list(back.columns) == ["id", "field", "value", "status"] and back.empty
