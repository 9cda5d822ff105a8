"""The chunked `spans` engine (JSONL documents) equals the in-memory one: the same document, byte
for byte — bootstrap intervals included — for any chunk size (1 included) and with workers."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extracteval.chunked import run_chunks
from extracteval.tasks.spans.ledger import SpansTask
from extracteval.tasks.spans.semantics import SpansConfig, score_spans
from extracteval.tasks.spans.chunks import SpanDoc, chunk_corpus

TAGS = ["Action", "Entity", "Actor"]
TEXT = "The administrator can delete inactive accounts after review."


@st.composite
def spans(draw, n_max=4):
    out = []
    for _ in range(draw(st.integers(0, n_max))):
        s = draw(st.integers(0, len(TEXT) - 2))
        e = draw(st.integers(s + 1, min(len(TEXT), s + 15)))
        out.append((s, e, draw(st.sampled_from(TAGS)), None))
    return out


@st.composite
def datasets(draw):
    ids = sorted({f"d{draw(st.integers(0, 30))}" for _ in range(draw(st.integers(1, 15)))})
    with_text = draw(st.booleans())
    gold = [SpanDoc(id=i, at="", text=TEXT if with_text or draw(st.booleans()) else None, spans=draw(spans())) for i in ids]
    preds = {}
    for m in ("b", "a"):
        docs = []
        for g in gold:
            keep = [sp for sp in g.spans if draw(st.booleans())]
            moved = [(max(0, s - 1), e, t if draw(st.integers(0, 3)) else "Entity", None) for s, e, t, _ in g.spans if draw(st.booleans())]
            docs.append(SpanDoc(id=g.id, at="", text=None, spans=keep + moved + draw(spans(2))))
        preds[m] = docs
    return gold, preds


CONFIGS = [SpansConfig(bootstrap=0), SpansConfig(bootstrap=60, seed=4, max_examples=2), SpansConfig(bootstrap=0, relaxed=False)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=datasets(), size=st.sampled_from([1, 2, 3, 7, 1000]), ci=st.sampled_from([0, 1, 2]))
def test_chunked_document_is_byte_identical(data, size, ci):
    gold, preds = data
    cfg = CONFIGS[ci]
    want = score_spans(chunk_corpus(gold, preds), config=cfg).to_dict()
    chunks = [chunk_corpus(gold[a : a + size], {m: d[a : a + size] for m, d in preds.items()}) for a in range(0, len(gold), size)]
    got, _ = run_chunks(SpansTask(config=cfg), chunks)
    assert json.dumps(got.to_dict()) == json.dumps(want)


def test_cli_chunked_with_workers_equals_in_memory(cli, tmp_path):
    def write(name, rows):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    ids = sorted(f"d{i}" for i in range(120))
    write("t.jsonl", [{"id": i, "text": TEXT, "gold": [{"start": 4, "end": 17, "tag": "Actor"}, {"start": 22, "end": 28, "tag": "Action"}]} for i in ids])
    write("a.jsonl", [{"id": i, "pred": [{"start": 0 if k % 3 else 4, "end": 17, "tag": "Actor"}]} for k, i in enumerate(ids)])
    write("b.jsonl", [{"id": i, "pred": [{"start": 22, "end": 28, "tag": "Action" if k % 5 else "Entity"}]} for k, i in enumerate(ids)])
    args = ["--truth", str(tmp_path / "t.jsonl"), "--predictions", f"a={tmp_path / 'a.jsonl'}", "--predictions", f"b={tmp_path / 'b.jsonl'}",
            "--resamples", "200", "--json"]
    want = cli("score", "spans", *args)
    got = cli("score", "spans", *args, "--chunk-size", "11", "--workers", "2")
    assert want.code == got.code == 0, got.err
    assert got.out == want.out


def test_chunked_refuses_unsorted_ids_and_spark_for_token_files(cli, tmp_path, pyspark_or_not):
    (tmp_path / "x.conll").write_text("a B-X B-X\n")
    for scheme in ("conlleval", "IOB1", "IOE1"):  # a scheme decodes token files, which Spark does not read
        r = cli("score", "spans", "--conll", str(tmp_path / "x.conll"), "--scheme", scheme, "--engine", "spark")
        assert r.code == 2 and "--engine spark reads JSONL span files" in r.err, r.err
    (tmp_path / "t.jsonl").write_text('{"id": "b", "gold": []}\n{"id": "a", "gold": []}\n')
    (tmp_path / "p.jsonl").write_text('{"id": "b", "pred": []}\n{"id": "a", "pred": []}\n')
    r = cli("score", "spans", "--truth", str(tmp_path / "t.jsonl"), "--predictions", f"p={tmp_path / 'p.jsonl'}", "--chunk-size", "5")
    assert r.code == 2 and "t.jsonl: line 2: document id 'a' is out of order (it follows 'b' at line 1)" in r.err, r.err
