"""The chunked engine equals the in-memory engine: same `to_dict()` for any split of the records
into chunks (sizes 1, 2, 3, 7 and all), any merge order, in this process or in worker processes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.io.wide_tables import TableChunk
from extracteval.tasks.fields.chunked import FieldsTask
from extracteval.tasks.fields.semantics import FieldsConfig, ModelPredictions, fields_ledger, fields_result, plan_fields, score_fields
from extracteval.core.strategies import Strategy

VALUES = st.sampled_from(["Acme Ltd", "acme ltd.", "ACME", "2024-01-02", "02/01/2024", "1,000", "1000", "N/A", "", None, "Beta", ["A", "B"], ["b", "a"], ["A"]])
FIELDS = ("party", "date", "amount")


@st.composite
def datasets(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    ids = [f"r{i:03d}" for i in draw(st.permutations(range(n)))]  # shuffled: chunking sorts by id
    truth = pd.DataFrame({f: [draw(VALUES) for _ in ids] for f in FIELDS}, index=ids, dtype=object)
    preds = []
    for name in ("m1", "m2"):
        keep = [i for i in ids if draw(st.booleans()) or draw(st.booleans())]  # ~75% of records predicted
        cols = [f for f in FIELDS if f != "amount" or name == "m1"] + (["extra"] if name == "m2" else [])
        vals = pd.DataFrame({c: [draw(VALUES) for _ in keep] for c in cols}, index=keep, dtype=object)
        status = pd.Series([draw(st.sampled_from(["ok", "ok", "ok", "pending", "error", ""])) for _ in keep], index=keep, dtype=object)
        preds.append(ModelPredictions(name=name, values=vals, status=status, source=f"{name}.csv"))
    return truth, preds


def chunk_split(truth: pd.DataFrame, preds: list[ModelPredictions], size: int) -> list[TableChunk]:
    order = sorted(truth.index)
    out = []
    for a in range(0, len(order), size):
        ids = order[a : a + size]
        sub = []
        for p in preds:
            keep = [i for i in p.values.index if i in set(ids)]
            sub.append(ModelPredictions(name=p.name, values=p.values.loc[keep], status=None if p.status is None else p.status.loc[keep], source=p.source))
        out.append(TableChunk(truth=truth.loc[ids], predictions=sub))
    return out


CONFIGS = [
    FieldsConfig(bootstrap=0, min_records=5, max_examples=2),
    FieldsConfig(bootstrap=40, seed=3, strategies={"party": Strategy.FUZZY}, max_examples=3),
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), ci=st.sampled_from([0, 1]))
def test_chunked_equals_in_memory(data, size, ci):
    truth, preds = data
    cfg = CONFIGS[ci]
    expected = score_fields(truth, preds, config=cfg, truth_source="truth.csv").to_dict()
    plan = plan_fields(list(truth.columns), {p.name: p.source for p in preds}, config=cfg, truth_source="truth.csv")
    result, stats = run_chunks(FieldsTask(plan), chunk_split(truth, preds, size))
    assert stats.chunks == -(-len(truth) // size)
    assert json.dumps(result.to_dict(), sort_keys=True) == json.dumps(expected, sort_keys=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 3]))
def test_ledger_merge_is_order_independent(data, size):
    truth, preds = data
    plan = plan_fields(list(truth.columns), {p.name: p.source for p in preds}, config=FieldsConfig(bootstrap=0))
    ledgers = [fields_ledger(c.truth, c.predictions, plan=plan)[0] for c in chunk_split(truth, preds, size)]
    forward = ledgers[0]
    for x in ledgers[1:]:
        forward = forward + x
    backward = ledgers[-1]
    for x in reversed(ledgers[:-1]):
        backward = x + backward if len(ledgers) % 2 else backward + x
    a, b = fields_result(forward, plan).to_dict(), fields_result(backward, plan).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    whole = fields_ledger(truth, preds, plan=plan)[0]
    assert np.array_equal(forward.counts, whole.counts) and forward.n_records == len(truth)


def test_bootstrap_from_merged_patterns_equals_in_memory_on_both_paths():
    """Few distinct patterns (multinomial over patterns) and many (records resampled one by one,
    read back from the spilled rows): both give the in-memory intervals exactly."""
    rng = np.random.default_rng(7)
    paths = set()
    for n, flip, alphabet in ((2000, 0.03, ["A", None]), (60, 1.0, [f"v{i}" for i in range(30)] + [None])):
        ids = [f"{i:05d}" for i in range(n)]
        truth = pd.DataFrame({f: rng.choice(np.asarray(alphabet, dtype=object), n) for f in FIELDS}, index=ids)
        preds = []
        for m in ("a", "b", "c"):
            noise = pd.DataFrame({f: rng.choice(np.asarray(alphabet, dtype=object), n) for f in FIELDS}, index=ids)
            preds.append(ModelPredictions(name=m, values=truth.where(rng.random((n, len(FIELDS))) >= flip, noise)))
        cfg = FieldsConfig(bootstrap=200, seed=11)
        expected = score_fields(truth, preds, config=cfg).to_dict()
        plan = plan_fields(list(FIELDS), {p.name: "" for p in preds}, config=cfg)
        result, _ = run_chunks(FieldsTask(plan), chunk_split(truth, preds, 17))
        assert result.to_dict() == expected
        assert all(m["ci"]["overall_f1"]["resamples"] == 200 for m in expected["models"].values())
        paths.add(len(fields_ledger(truth, preds, plan=plan)[0].freq) * 4 <= n)
    assert paths == {True, False}  # both bootstrap paths were exercised


@pytest.mark.parametrize("block", [1, 7, 64])
def test_too_many_patterns_to_keep_resample_the_spilled_records_in_blocks(monkeypatch, block):
    """Past `PATTERN_ENTRIES` the ledgers drop their full-width patterns (merging cannot bring
    them back) and the bootstrap streams the spilled rows in blocks of records straddling the
    chunks: the intervals are the in-memory ones, and the per-field patterns are still there."""
    import extracteval.core.bootstrap as bootstrap
    from extracteval.core.bootstrap import field_patterns

    rng = np.random.default_rng(3)
    n = 90
    ids = [f"{i:05d}" for i in range(n)]
    alphabet = np.asarray(["x", "y", "z", None], dtype=object)
    truth = pd.DataFrame({f: rng.choice(alphabet, n) for f in FIELDS}, index=ids)
    preds = [ModelPredictions(name=m, values=pd.DataFrame({f: rng.choice(alphabet, n) for f in FIELDS}, index=ids)) for m in ("a", "b")]
    cfg = FieldsConfig(bootstrap=150, seed=2)
    plan = plan_fields(list(FIELDS), {"a": "", "b": ""}, config=cfg)
    monkeypatch.setattr(bootstrap, "PATTERN_ENTRIES", 24 * 6)  # 6 patterns of 24 counts at most
    monkeypatch.setattr(bootstrap, "_DRAW_ENTRIES", 150 * block)
    expected = score_fields(truth, preds, config=cfg)
    whole, records = fields_ledger(truth, preds, plan=plan)
    assert whole.patterns is None and whole.freq is None
    parts = [fields_ledger(c.truth, c.predictions, plan=plan)[0] for c in chunk_split(truth, preds, 11)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged + p
    assert merged.patterns is None
    fp, ff = field_patterns([records.counts[m] for m in ("a", "b")])
    got_rows = {tuple(r): f for r, f in zip(merged.field_patterns.tolist(), merged.field_freq.tolist())}
    assert got_rows == {tuple(r): f for r, f in zip(fp.tolist(), ff.tolist())}
    assert sum(f for r, f in got_rows.items() if r[:2] == (0, 0)) == n  # every record once per (model, field)
    result, _ = run_chunks(FieldsTask(plan), chunk_split(truth, preds, 11))
    assert result.to_dict() == expected.to_dict()
    assert all(m["ci"]["overall_f1"]["resamples"] == 150 for m in expected.to_dict()["models"].values())


def test_worker_processes_give_the_same_result_and_stream_records(tmp_path):
    rng = np.random.default_rng(1)
    n = 300
    ids = [f"{i:05d}" for i in range(n)]
    alphabet = np.asarray(["x", "y", "z", None], dtype=object)
    truth = pd.DataFrame({f: rng.choice(alphabet, n) for f in FIELDS}, index=ids)
    preds = [ModelPredictions(name=m, values=pd.DataFrame({f: rng.choice(alphabet, n) for f in FIELDS}, index=ids)) for m in ("a", "b")]
    cfg = FieldsConfig(bootstrap=100)
    expected = score_fields(truth, preds, config=cfg)
    plan = plan_fields(list(FIELDS), {"a": "", "b": ""}, config=cfg)
    out = tmp_path / "records.parquet"
    result, stats = run_chunks(FieldsTask(plan, keep_records=True), chunk_split(truth, preds, 50), workers=2, records_path=out)
    assert stats.workers == 2 and stats.chunks == 6
    assert result.to_dict() == expected.to_dict()
    got = pd.read_parquet(out).sort_values(["model", "record_id", "field"]).reset_index(drop=True)
    want = expected.records.to_frame().sort_values(["model", "record_id", "field"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_a_prediction_id_missing_from_the_truth_chunk_is_an_input_error():
    from extracteval.errors import InputError

    truth = pd.DataFrame({"a": ["1", "2"]}, index=["1", "2"])
    plan = plan_fields(["a"], {"m": "m.csv"}, config=FieldsConfig(bootstrap=0))
    chunk = TableChunk(truth=truth, predictions=[ModelPredictions(name="m", values=pd.DataFrame({"a": ["1"]}, index=["9"]), source="m.csv")])
    with pytest.raises(InputError, match=r"m\.csv: 1 record id\(s\) are not in the ground truth.*'9'"):
        run_chunks(FieldsTask(plan), [chunk])


def test_chunks_survive_the_trip_to_a_worker_unchanged():
    """Chunks pickle with Arrow string columns; values of other types and per-cell status too."""
    import pickle

    idx = pd.Index(["a", "b", "c"], dtype=object, name="id")
    truth = pd.DataFrame({"x": ["1", None, ""], "y": [["A", "B"], "z", float("nan")], "z": [1, 2.5, None]}, index=idx, dtype=object)
    status = pd.DataFrame({"x": ["ok", "error", ""]}, index=idx, dtype=object)
    chunk = TableChunk(truth=truth, predictions=[ModelPredictions(name="m", values=truth, status=status, source="m.csv")])
    back = pickle.loads(pickle.dumps(chunk))
    assert back.truth.index.tolist() == ["a", "b", "c"] and back.truth.index.name == "id"
    assert back.truth["y"].tolist()[:2] == [["A", "B"], "z"] and back.truth["z"].tolist()[:2] == [1, 2.5]
    assert back.truth["x"].tolist() == ["1", None, ""]
    pd.testing.assert_frame_equal(back.predictions[0].status, status)
    plan = plan_fields(["x", "y", "z"], {"m": "m.csv"}, config=FieldsConfig(bootstrap=0))
    a = fields_result(fields_ledger(chunk.truth, chunk.predictions, plan=plan)[0], plan).to_dict()
    b = fields_result(fields_ledger(back.truth, back.predictions, plan=plan)[0], plan).to_dict()
    assert a == b
