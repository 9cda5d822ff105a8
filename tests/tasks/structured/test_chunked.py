"""The chunked `structured` engine equals the in-memory one: the same document, byte for byte,
for any chunk size (1 included) and with worker processes."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.tasks.structured.chunked import StructuredTask
from extracteval.tasks.structured.semantics import StructuredConfig, score_structured
from tests.tasks.toolcalls.test_chunked import split

LEAF = st.sampled_from(["Acme", "acme", 1, 1.0, "1", True, None, 2.5, ""])
DOC = st.recursive(LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "items", "qty"]), inner, max_size=3)), max_leaves=6)
OUTPUT = st.one_of(
    DOC,
    DOC.map(json.dumps),
    DOC.map(lambda d: f"Here you go:\n```json\n{json.dumps(d)}\n```"),
    DOC.map(lambda d: json.dumps(d)[:-1]),  # truncated
    st.sampled_from(["", "no json here", None]),
)


@st.composite
def datasets(draw):
    ids = sorted({f"r{draw(st.integers(0, 40))}" for _ in range(draw(st.integers(1, 25)))})
    truth = {i: draw(DOC) for i in ids}
    preds = {}
    for m in ("b", "a", "c"):
        out = {}
        for i in ids:
            if draw(st.integers(0, 5)):
                out[i] = truth[i] if draw(st.booleans()) else draw(OUTPUT)
        for extra in draw(st.lists(st.sampled_from(["q1", "r99", "a0"]), max_size=2, unique=True)):
            out[extra] = draw(OUTPUT)
        preds[m] = out
    return truth, preds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), lm=st.sampled_from(["positional", "optimal"]), vm=st.sampled_from(["exact", "normalized"]))
def test_chunked_document_is_byte_identical(data, size, lm, vm):
    truth, preds = data
    cfg = StructuredConfig(list_matching=lm, value_match=vm)
    want = score_structured(truth, preds, config=cfg).to_dict()
    got, _ = run_chunks(StructuredTask(config=cfg), split(truth, preds, size))
    assert json.dumps(got.to_dict()) == json.dumps(want)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_cli_chunked_with_workers_equals_in_memory(cli, tmp_path):
    ids = sorted(f"r{i}" for i in range(250))
    docs = [{"a": f"x{i % 7}", "items": [{"qty": i % 3}, {"qty": 1}]} for i in range(250)]
    _write(tmp_path / "t.jsonl", [{"id": i, "reference": d} for i, d in zip(ids, docs)])
    _write(tmp_path / "p.jsonl", [{"id": i, "output": json.dumps(d) if k % 4 else "oops"} for k, (i, d) in enumerate(zip(ids, docs)) if k % 9])
    _write(tmp_path / "q.jsonl", [{"id": i, "output": {"a": d["a"].upper(), "items": d["items"][::-1]}} for i, d in zip(ids, docs)])
    args = ["--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}", "--predictions", f"q={tmp_path / 'q.jsonl'}",
            "--list-matching", "optimal", "--json"]
    want = cli("score", "structured", *args)
    got = cli("score", "structured", *args, "--chunk-size", "23", "--workers", "2", "--output", str(tmp_path / "out"))
    assert want.code == got.code == 0, got.err
    assert got.out == want.out
    assert (tmp_path / "out" / "records.parquet").is_file() and json.loads((tmp_path / "out" / "result.json").read_text()) == json.loads(want.out)


def test_unsorted_file_is_refused_with_its_line(cli, tmp_path):
    _write(tmp_path / "t.jsonl", [{"id": "b", "reference": {}}, {"id": "a", "reference": {}}])
    _write(tmp_path / "p.jsonl", [{"id": "a", "output": "{}"}])
    r = cli("score", "structured", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "2")
    assert r.code == 2 and "t.jsonl: line 2: record id 'a' is out of order (it follows 'b' at line 1)" in r.err, r.err
