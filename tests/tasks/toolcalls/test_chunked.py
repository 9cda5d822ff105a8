"""The chunked `toolcalls` engine (generic checker) equals the in-memory one: the same document,
byte for byte, for any chunk size (1 included) and with worker processes."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.tasks.toolcalls.chunked import ToolCallsTask
from extracteval.tasks.toolcalls.semantics import ToolCallConfig, score_toolcalls
from extracteval.io.keyed_chunks import KeyedChunk

ARGS = st.dictionaries(st.sampled_from(["city", "unit", "n"]), st.sampled_from(["Berlin", "berlin", "celsius", 1, 2.0, True, None, [1, 2]]), max_size=3)
CALL = st.fixed_dictionaries({"name": st.sampled_from(["get_weather", "book", "search"]), "arguments": ARGS})
OUTPUTS = st.one_of(
    CALL,
    st.lists(CALL, max_size=3),
    CALL.map(lambda c: json.dumps(c)),
    CALL.map(lambda c: f"```json\n{json.dumps([c])}\n```"),
    st.sampled_from(['[get_weather(city="Berlin")]', "book(n=1), search()", "I cannot help", "", "{not json", None, 42]),
)


@st.composite
def datasets(draw):
    n = draw(st.integers(min_value=1, max_value=25))
    # ids whose natural order (r2 < r10) is not their byte order
    ids = sorted({f"r{draw(st.integers(0, 40))}" for _ in range(n)})
    truth = {i: draw(st.lists(CALL, min_size=1, max_size=3)) for i in ids}
    preds = {}
    for m in ("small", "large"):
        out = {i: draw(OUTPUTS) for i in ids if draw(st.integers(0, 5))}  # some records without an output
        for extra in draw(st.lists(st.sampled_from(["q1", "r99", "a0", "r100"]), max_size=2, unique=True)):
            out[extra] = draw(OUTPUTS)  # ids the truth does not have: listed, not scored
        preds[m] = out
    return truth, preds


def split(truth, preds, size):
    """As the stream does: by byte order of ids, predictions-only ids in the chunk open when met."""
    all_ids = sorted(set(truth) | {i for p in preds.values() for i in p})
    chunk_t, chunk_p = {}, {m: {} for m in preds}
    for i in all_ids:
        if i in truth:
            chunk_t[i] = truth[i]
        for m, p in preds.items():
            if i in p:
                chunk_p[m][i] = p[i]
        if len(chunk_t) >= size:
            yield KeyedChunk(truth=chunk_t, predictions=chunk_p)
            chunk_t, chunk_p = {}, {m: {} for m in preds}
    if chunk_t or any(chunk_p.values()):
        yield KeyedChunk(truth=chunk_t, predictions=chunk_p)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), vm=st.sampled_from(["exact", "normalized"]))
def test_chunked_document_is_byte_identical(data, size, vm):
    truth, preds = data
    cfg = ToolCallConfig(value_match=vm)
    want = score_toolcalls(truth, preds, config=cfg).to_dict()
    got, _ = run_chunks(ToolCallsTask(config=cfg), split(truth, preds, size))
    assert json.dumps(got.to_dict()) == json.dumps(want)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), vm=st.sampled_from(["exact", "normalized"]))
def test_evaluate_chunks_give_the_in_memory_function_counts_and_records(data, size, vm):
    """What `evaluate toolcalls` logs beyond the document, merged from chunks: the counts per
    function (a name predicted in one chunk may be a reference name of a later one only) and the
    per-record rows, as the in-memory run makes them."""
    from extracteval.tasks.toolcalls.chunked import ToolCallsEvaluateTask, record_table
    from extracteval.tasks.toolcalls.functions import function_counts
    from extracteval.tasks.toolcalls.semantics import reference_calls

    truth, preds = data
    cfg = ToolCallConfig(value_match=vm)
    want = score_toolcalls(truth, preds, config=cfg)
    refs = {i: reference_calls(v, key_fn=cfg.key_fn()) for i, v in truth.items()}
    frames = []
    got, _ = run_chunks(ToolCallsEvaluateTask(config=cfg), split(truth, preds, size), records_path=None)
    for chunk in split(truth, preds, size):
        frames.append(ToolCallsEvaluateTask(config=cfg).score_chunk(chunk).records)
    assert json.dumps(got.result.to_dict()) == json.dumps(want.to_dict())
    for m in want.ranking:
        assert got.functions[m] == function_counts(refs, preds[m], want.records[m], key_fn=cfg.key_fn())
        streamed = pd.concat(frames, ignore_index=True)
        streamed = streamed[streamed["model"] == m].set_index("record_id").sort_index()
        pd.testing.assert_frame_equal(streamed, record_table(m, want.records[m]).set_index("record_id").sort_index(), check_index_type=False, check_dtype=False)


def test_a_name_predicted_before_the_reference_uses_it_is_counted_under_its_name():
    from extracteval.tasks.toolcalls.chunked import ToolCallsEvaluateTask
    from extracteval.tasks.toolcalls.functions import OTHER_FUNCTIONS

    truth = {"a": [{"name": "f", "arguments": {"x": 1}}], "b": [{"name": "g", "arguments": {"y": 2}}]}
    preds = {"m": {"a": {"name": "g", "arguments": {"y": 2}}, "b": {"name": "h", "arguments": {}}}}
    got, _ = run_chunks(ToolCallsEvaluateTask(config=ToolCallConfig()), split(truth, preds, 1))
    assert list(got.functions["m"]) == ["f", "g", OTHER_FUNCTIONS]
    assert got.functions["m"]["g"]["pred_calls"] == 2 - 1 and got.functions["m"][OTHER_FUNCTIONS]["pred_calls"] == 1


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cli_chunked_with_workers_equals_in_memory(cli, tmp_path):
    ids = sorted(f"r{i}" for i in range(300))
    calls = [{"name": "get_weather", "arguments": {"city": f"c{i % 9}", "n": i % 4}} for i in range(300)]
    _write(tmp_path / "t.jsonl", [{"id": i, "calls": [c]} for i, c in zip(ids, calls)])
    _write(tmp_path / "a.jsonl", [{"id": i, "output": json.dumps(c)} for i, c in zip(ids, calls) if not i.endswith("7")] + [{"id": "s1", "output": "x"}])
    _write(tmp_path / "b.jsonl", [{"id": i, "output": f"get_weather(city='c{k % 5}')"} for k, i in enumerate(ids)])
    args = ["--truth", str(tmp_path / "t.jsonl"), "--predictions", f"a={tmp_path / 'a.jsonl'}", "--predictions", f"b={tmp_path / 'b.jsonl'}", "--json"]
    want = cli("score", "toolcalls", *args)
    got = cli("score", "toolcalls", *args, "--chunk-size", "17", "--workers", "2", "--output", str(tmp_path / "out"))
    assert want.code == got.code == 0, got.err
    assert got.out == want.out
    rows = pd.read_parquet(tmp_path / "out" / "records.parquet")
    assert len(rows) == 600 and int(rows["correct"].sum()) == sum(json.loads(want.out)["models"][m]["correct_count"] for m in ("a", "b"))


@pytest.mark.parametrize(
    ("truth", "extra", "match"),
    [
        (['{"id": "b", "calls": []}', '{"id": "a", "calls": []}'], [], r"t\.jsonl: line 2: record id 'a' is out of order \(it follows 'b' at line 1\)"),
        (['{"id": "a", "calls": []}', '{"id": "b", "ground_truth": []}'], [], r"t\.jsonl: line 2 \(id b\): a `ground_truth`.*--possible-answer"),
        (['{"id": "a", "calls": []}'], ["--llm-judge"], r"--llm-judge needs every record in memory"),
        (['{"id": "a", "calls": []}'], ["--baseline", "p", "--candidate", "p"], r"--baseline/--candidate needs every record"),
    ],
)
def test_chunked_errors(cli, tmp_path, truth, extra, match):
    import re

    (tmp_path / "t.jsonl").write_text("\n".join(truth) + "\n")
    (tmp_path / "p.jsonl").write_text('{"id": "a", "output": ""}\n')
    r = cli("score", "toolcalls", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "1", *extra)
    assert r.code == 2 and re.search(match, r.err), r.err


@pytest.mark.parametrize("extra, match", [
    (["--checker", "bfcl", "--questions", "q.json"], "--checker bfcl scores in memory"),
    (["--semantic-similarity"], "--semantic-similarity needs every record in memory"),
])
def test_streamed_evaluate_refuses_what_needs_every_record(cli, tmp_path, extra, match):
    from tests.contract.engine_cases import TASK_ARGS

    res = cli("evaluate", "toolcalls", *TASK_ARGS["toolcalls"], "--experiment", "e", "--tracking-uri", f"sqlite:///{tmp_path / 'x.db'}",
              "--chunk-size", "5", *extra)
    assert res.code == 2 and match in res.err and "Traceback" not in res.err, res.err
