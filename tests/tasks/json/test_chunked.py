"""The chunked `json` engine equals the in-memory one: the same `--json` document, byte for byte,
for any chunk size (1 included), in this process or in worker processes; JSONL files streamed by
id with precise errors for unsorted or duplicated ids."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.tasks.json.chunked import JsonTask
from extracteval.tasks.json.semantics import JsonConfig, JsonPredictions, score_json
from extracteval.core.strategies import Strategy
from extracteval.tasks.json.chunks import JsonChunk

LEAVES = st.sampled_from(["John Smith", "john smyth", "Acme", "acme ltd", "", "n/a", None, 0, 1, 1.0, True, False, 2.5, "2024-01-02"])
VALUES = st.one_of(LEAVES, st.lists(LEAVES, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), LEAVES, max_size=2))
KEYS = ["name", "bio", "amount", "tags", "addr"]


@st.composite
def datasets(draw):
    n = draw(st.integers(min_value=1, max_value=25))
    ids = [f"r{i:03d}" for i in range(n)]
    truth = {i: draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=5)) for i in ids}
    preds = []
    for name in ("m2", "m1"):  # not in name order: the core sorts them
        recs, safety, status = {}, {}, {}
        for i in ids:
            kind = draw(st.sampled_from(["same", "other", "other", "missing", "invalid"]))
            if kind == "same":
                recs[i] = dict(truth[i])
            elif kind == "other":
                recs[i] = draw(st.dictionaries(st.sampled_from([*KEYS, "extra"]), VALUES, max_size=5))
            elif kind == "invalid":
                recs[i] = draw(st.sampled_from(["oops", [1], 3]))
            if draw(st.integers(0, 3)) == 0:
                safety[i] = draw(st.sampled_from([0.0, 0.25, 1.0]))
            if draw(st.integers(0, 3)) == 0:
                status[i] = draw(st.sampled_from(["ok", "pending", "error", ""]))
        preds.append(JsonPredictions(name=name, records=recs, safety=safety, status=status, source=f"{name}.jsonl"))
    return truth, preds


def split(truth, preds, size):
    order = sorted(truth)
    for a in range(0, len(order), size):
        ids = set(order[a : a + size])
        yield JsonChunk(
            truth={i: truth[i] for i in order[a : a + size]},
            predictions=[
                JsonPredictions(name=p.name, records={k: v for k, v in p.records.items() if k in ids},
                                safety={k: v for k, v in p.safety.items() if k in ids},
                                status={k: v for k, v in p.status.items() if k in ids}, source=p.source)
                for p in preds
            ],
            truth_source="truth.jsonl",
        )


CONFIGS = [
    JsonConfig(),
    JsonConfig(strategies={"name": Strategy.FUZZY, "bio": Strategy.SEMANTIC, "amount": Strategy.IGNORE, "nowhere": Strategy.EXACT}),
    JsonConfig(flatten=True, strategies={"tags[*]": Strategy.FUZZY}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), ci=st.sampled_from([0, 1, 2]), records=st.sampled_from(["auto", "all", "none"]))
def test_chunked_document_is_byte_identical(data, size, ci, records):
    truth, preds = data
    cfg = CONFIGS[ci]
    include = {"auto": None, "all": True, "none": False}[records]
    want = score_json(truth, preds, config=cfg, truth_source="truth.jsonl").to_dict(include_records=include)
    got, stats = run_chunks(JsonTask(config=cfg, records_mode=records), split(truth, preds, size))
    assert stats.chunks == -(-len(truth) // size)
    assert json.dumps(got.to_dict(include_records=include)) == json.dumps(want)


def test_auto_listing_stops_being_kept_past_the_limit(monkeypatch):
    """`auto` keeps the per-record listing only while it may be shown (bounded memory)."""
    import extracteval.tasks.json.config as jc  # where the limit is kept

    monkeypatch.setattr(jc, "_RECORD_LIMIT", 6)
    truth = {f"r{i}": {"a": i} for i in range(4)}
    preds = [JsonPredictions(name="m", records=truth)]
    small, _ = run_chunks(JsonTask(config=JsonConfig()), split(dict(list(truth.items())[:3]), preds, 1))
    big, _ = run_chunks(JsonTask(config=JsonConfig()), split(truth, [JsonPredictions(name="m", records=truth), JsonPredictions(name="n", records=truth)], 1))
    assert small.records is not None and len(small.records["m"]) == 3
    assert big.records is None and big.to_dict()["records_included"] is False


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _files(tmp_path, truth, preds, pairs_model=None):
    _write_jsonl(tmp_path / "truth.jsonl", [{"id": k, **v} for k, v in sorted(truth.items())])
    args = ["--truth", str(tmp_path / "truth.jsonl")]
    for p in preds:
        f = tmp_path / f"{p.name}.jsonl"
        if p.name == pairs_model:  # the {"id", "truth", "prediction"} layout
            rows = [{"id": k, "truth": truth[k], "prediction": v, **({"status": p.status[k]} if k in p.status else {})}
                    for k, v in sorted(p.records.items())]
        else:
            rows = [{"id": k, **v, **({"safety_score": p.safety[k]} if k in p.safety else {})}
                    for k, v in sorted(p.records.items()) if isinstance(v, dict)]
        _write_jsonl(f, rows)
        args += ["--predictions", f"{p.name}={f}"]
    return args


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=datasets(), size=st.sampled_from([1, 4, 100]), no_truth=st.booleans())
def test_cli_chunked_equals_in_memory(cli, tmp_path, data, size, no_truth):
    truth, preds = data
    args = _files(tmp_path, truth, preds, pairs_model="m2")
    if no_truth:  # the truth comes from the pairs file (which then holds every record there is)
        i = args.index(f"m2={tmp_path / 'm2.jsonl'}")
        args = args[i - 1 : i + 1]
    want = cli("score", "json", *args, "--json")
    got = cli("score", "json", *args, "--json", "--chunk-size", str(size))
    # a model with no record at all writes an empty file: both engines refuse it, alike
    empty = [p.name for p in preds if f"{p.name}={tmp_path / f'{p.name}.jsonl'}" in args and not (tmp_path / f"{p.name}.jsonl").read_text()]
    assert want.code == got.code == (2 if empty else 0), got.err
    assert (got.out, got.err) == (want.out, want.err)
    if empty:
        assert "the file is empty; expected one JSON object per line" in got.err


def test_cli_workers_and_streamed_parquet(cli, tmp_path):
    truth = {f"r{i:04d}": {"name": f"n{i % 7}", "v": i % 3, "tags": ["a", str(i % 2)]} for i in range(400)}
    preds = [
        JsonPredictions(name="a", records={k: {**v, "v": 0} for k, v in truth.items() if k[-1] != "3"}, safety={"r0001": 0.5}),
        JsonPredictions(name="b", records={k: {"name": v["name"].upper(), "x": 1} for k, v in truth.items()}),
    ]
    args = [*_files(tmp_path, truth, preds), "--strategies", str(tmp_path / "s.json"), "--json"]
    (tmp_path / "s.json").write_text(json.dumps({"name": "FUZZY"}))
    want = cli("score", "json", *args, "--output", str(tmp_path / "mem"))
    got = cli("score", "json", *args, "--chunk-size", "37", "--workers", "2", "--output", str(tmp_path / "chunked"))
    assert want.code == got.code == 0, got.err
    assert got.out == want.out
    for name, keys in (("records.parquet", ["model", "record_id"]), ("buckets.parquet", ["model", "record_id", "key"])):
        a = pd.read_parquet(tmp_path / "mem" / name).sort_values(keys).reset_index(drop=True)
        b = pd.read_parquet(tmp_path / "chunked" / name).sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    assert (tmp_path / "mem" / "field_accuracy.csv").read_text() == (tmp_path / "chunked" / "field_accuracy.csv").read_text()


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (['{"id": "b", "x": 1}', '{"id": "a", "x": 1}'], r"p\.jsonl: line 2: record id 'a' is out of order \(it follows 'b' at line 1\)"),
        (['{"id": "a", "x": 1}', '{"id": "a", "x": 2}'], r"p\.jsonl: line 2: record id 'a' is duplicated"),
        (['{"id": "z", "x": 1}'], r"p\.jsonl: record id 'z' is not in the ground truth"),
        (['{"id": "a", "truth": {"x": 1}, "prediction": {}, "model": "m"}'], r"p\.jsonl: line 1: a `model` key"),
        (['{"id": "a", "truth": {"x": 2}, "prediction": {}}'], r"p\.jsonl: line 1: record 'a': its 'truth' differs"),
    ],
)
def test_stream_errors_name_file_line_and_ids(cli, tmp_path, lines, match):
    (tmp_path / "t.jsonl").write_text('{"id": "a", "x": 1}\n{"id": "b", "x": 1}\n')
    (tmp_path / "p.jsonl").write_text("\n".join(lines) + "\n")
    r = cli("score", "json", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "1")
    assert r.code == 2, r.err
    assert pytest.importorskip("re").search(match, r.err), r.err
    assert "Traceback" not in r.err


def test_non_jsonl_files_are_refused_with_chunk_size(cli, tmp_path):
    (tmp_path / "t.json").write_text('[{"id": "a"}]')
    r = cli("score", "json", "--truth", str(tmp_path / "t.json"), "--predictions", f"p={tmp_path / 't.json'}", "--chunk-size", "5")
    assert r.code == 2 and "streams JSONL files" in r.err
