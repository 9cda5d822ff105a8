"""`extracteval score spans` end to end: outputs, --json keys, several models, bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EX2 = "The administrator can delete inactive accounts."
EX3 = "If the session expires, the system shall notify the user."


def _span(text: str, phrase: str, tag: str) -> dict:
    i = text.index(phrase)
    return {"start": i, "end": i + len(phrase), "tag": tag}


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def jsonl_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    truth = _write_jsonl(
        tmp_path / "truth.jsonl",
        [
            {"id": "r2", "text": EX2, "gold": [_span(EX2, "administrator", "Main_actor"), _span(EX2, "delete", "Action"), _span(EX2, "inactive accounts", "Entity")]},
            {"id": "r3", "text": EX3,
             "gold": [_span(EX3, "If the session expires", "Condition"), _span(EX3, "system", "Main_actor"), _span(EX3, "notify", "Action"), _span(EX3, "user", "Entity")]},
        ],
    )
    llm = _write_jsonl(
        tmp_path / "llm.jsonl",
        [
            {"id": "r3", "pred": [_span(EX3, "session expires", "Condition"), _span(EX3, "system", "Main_actor"), _span(EX3, "notify the user", "Action")]},
            {"id": "r2", "pred": [_span(EX2, "The administrator", "Main_actor"), _span(EX2, "delete", "Action"), _span(EX2, "accounts", "Entity")]},
        ],
    )
    perfect = _write_jsonl(
        tmp_path / "perfect.jsonl",
        [{"id": r["id"], "pred": r["gold"]} for r in map(json.loads, truth.read_text().splitlines())],
    )
    return truth, llm, perfect


def test_jsonl_two_models_json_document(cli, jsonl_files) -> None:
    truth, llm, perfect = jsonl_files
    r = cli("score", "spans", "--truth", str(truth), "--predictions", f"llm={llm}", "--predictions", f"oracle={perfect}", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["ranking"] == ["oracle", "llm"]
    m = doc["models"]["llm"]
    assert set(m["exact"]["micro"]) >= {"precision", "recall", "f1", "tp", "fp", "fn"}
    assert (m["exact"]["micro"]["tp"], m["exact"]["micro"]["fp"], m["exact"]["micro"]["fn"]) == (2, 4, 5)
    assert "f1" in m["exact"]["macro"]
    assert set(m["exact"]["per_tag"]["Entity"]) == {"precision", "recall", "f1", "support", "tp", "fp", "fn"}
    assert m["exact"]["per_tag"]["Entity"]["support"] == 2
    rel = m["relaxed@0.5"]["micro"]
    assert (rel["tp"], rel["fp"], rel["fn"]) == (5, 1, 2)  # seed examples 2 and 3 together
    assert "relaxed@0.8" in m and len(m["curve"]) == 21 and m["curve"][0]["threshold"] == 0.0 and m["curve"][-1]["threshold"] == 1.0
    assert set(m["errors"]["counts"]) == {"boundary", "type", "boundary_type", "missed", "spurious"}
    assert "token_accuracy" not in m
    assert doc["models"]["oracle"]["rank"] == 1 and doc["models"]["oracle"]["exact"]["micro"]["f1"] == 1.0
    assert doc["config"]["iou_weight"] == 0.65 and doc["config"]["report_thresholds"] == [0.5, 0.8]
    ci = m["ci"]["exact_micro_f1"]
    assert ci["low"] <= m["exact"]["micro"]["f1"] <= ci["high"] and ci["resamples"] == 1000
    (cmp,) = doc["comparisons"]
    assert (cmp["higher"], cmp["lower"]) == ("oracle", "llm") and cmp["verdict"] in ("significantly different", "not significantly different")
    again = cli("score", "spans", "--truth", str(truth), "--predictions", f"llm={llm}", "--predictions", f"oracle={perfect}", "--json")
    assert again.json() == doc  # seeded
    bare = cli("score", "spans", "--truth", str(truth), "--predictions", f"llm={llm}", "--no-ci", "--json").json()
    assert bare["models"]["llm"]["ci"] is None and bare["comparisons"] == []


def test_jsonl_terminal_view_and_threshold(cli, jsonl_files, tmp_path: Path) -> None:
    truth, llm, _ = jsonl_files
    out = tmp_path / "out"
    r = cli("score", "spans", "--truth", str(truth), "--predictions", f"llm={llm}", "--threshold", "0.7", "--output", str(out))
    assert r.code == 0, r.err
    assert "processed 2 documents with 7 spans; found: 6 spans; correct: 2." in r.out
    assert "relaxed@0.7" in r.out and "Errors of the exact match" in r.out
    doc = json.loads((out / "result.json").read_text())
    assert doc["models"]["llm"]["relaxed@0.7"]["micro"]["tp"] == 4
    assert (out / "tag_metrics.csv").read_text().startswith("model,mode,tag,precision")
    assert (out / "f1_vs_threshold.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_combined_jsonl_file(cli, tmp_path: Path) -> None:
    f = _write_jsonl(tmp_path / "both.jsonl", [{"id": "a", "text": EX2, "gold": [_span(EX2, "delete", "Action")], "pred": [_span(EX2, "delete", "Action")]}])
    r = cli("score", "spans", "--truth", str(f), "--json")
    assert r.code == 0, r.err
    assert r.json()["models"]["both"]["exact"]["micro"]["f1"] == 1.0


CONLL = """-DOCSTART- -X- O O

The DT B-NP B-NP
cat NN I-NP I-NP
sat VBD B-VP B-VP
on IN B-PP B-PP
the DT B-NP B-NP
mat NN I-NP O

Dogs NNS B-NP B-NP
bark VBP B-VP B-NP
"""


def test_conll_token_file(cli, tmp_path: Path) -> None:
    f = tmp_path / "out.conll"
    f.write_text(CONLL, encoding="utf-8")
    r = cli("score", "spans", "--conll", str(f), "--json")
    assert r.code == 0, r.err
    doc = r.json()
    m = doc["models"]["out"]
    assert doc["n_tokens"] == 8 and doc["n_documents"] == 2  # -DOCSTART- is not a token
    assert m["token_accuracy"] == pytest.approx(6 / 8)
    assert (m["exact"]["micro"]["tp"], m["exact"]["micro"]["fp"], m["exact"]["micro"]["fn"]) == (4, 2, 2)
    assert m["errors"]["counts"]["boundary"] == 1 and m["errors"]["counts"]["type"] == 1
    text = cli("score", "spans", "--conll", str(f))
    assert "processed 8 tokens with 6 phrases; found: 6 phrases; correct: 4." in text.out
    assert "accuracy:  75.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67" in text.out


def test_separate_token_files_and_strict_scheme_warning(cli, tmp_path: Path) -> None:
    gold = tmp_path / "gold.txt"
    pred = tmp_path / "pred.txt"
    gold.write_text("a B-X\nb I-X\nc O\n\nd B-Y\n", encoding="utf-8")
    pred.write_text("a I-X\nb I-X\nc O\n\nd B-Y\n", encoding="utf-8")
    r = cli("score", "spans", "--truth", str(gold), "--predictions", f"m={pred}", "--scheme", "IOB2", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["models"]["m"]["ill_formed_chunks"] == 1
    assert doc["models"]["m"]["exact"]["micro"]["tp"] == 1
    assert any("ill-formed" in w and "model 'm'" in w for w in doc["warnings"])


@pytest.mark.parametrize(
    ("scheme", "content"),
    [
        # gold New York | Boston (B after its own type); predicted New York Boston, and a B-PER
        # right after a sentence break: stray in IOB1, so the predicted PER chunk is only "Lee"
        ("IOB1", "New I-LOC I-LOC\nYork I-LOC I-LOC\nBoston B-LOC I-LOC\nis O O\n\nAnn I-PER B-PER\nLee I-PER I-PER\n\nParis I-LOC I-LOC\n"),
        # gold New York | Boston (E before its own type); the predicted "Ann Lee" ends in E at the sentence end
        ("IOE1", "New I-LOC I-LOC\nYork E-LOC I-LOC\nBoston I-LOC I-LOC\nis O O\n\nAnn I-PER I-PER\nLee I-PER E-PER\n\nParis I-LOC I-LOC\n"),
    ],
)
def test_iob1_ioe1_schemes(cli, tmp_path: Path, scheme: str, content: str) -> None:
    f = tmp_path / "tags.conll"
    f.write_text(content, encoding="utf-8")
    r = cli("score", "spans", "--conll", f"m={f}", "--scheme", scheme.lower(), "--no-ci", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    m = doc["models"]["m"]
    assert doc["config"]["scheme"] == scheme and doc["n_gold_spans"] == 4 and doc["gold_ill_formed_chunks"] == 0
    assert (m["exact"]["micro"]["tp"], m["exact"]["micro"]["fp"], m["exact"]["micro"]["fn"]) == (1, {"IOB1": 2, "IOE1": 1}[scheme], 3)
    assert m["ill_formed_chunks"] == 1 and any("ill-formed" in w and "model 'm'" in w for w in doc["warnings"])
    text = cli("score", "spans", "--conll", f"m={f}", "--scheme", scheme, "--no-ci")
    assert f"1 ill-formed predicted chunk(s) dropped under {scheme}" in text.out


@pytest.mark.parametrize(
    ("content", "scheme", "needle"),
    [
        ("a B-X B-X\nb I-X\n", "conlleval", "line 2: expected 3 columns as on line 1"),
        ("a B-X\n", "conlleval", "line 1: expected at least 3 whitespace-separated columns"),
        ("a B-X B-X\nb Q-X I-X\n", "conlleval", "line 2: gold tag 'Q-X' is not valid under scheme conlleval"),
        ("a B-X B-X\nb I-X E-X\n", "IOB2", "line 2: predicted tag 'E-X' is not valid under scheme IOB2"),
        ("a B-X B-X\nb I-X E-X\n", "IOB1", "line 2: predicted tag 'E-X' is not valid under scheme IOB1"),
        ("a I-X I-X\nb E-X B-X\n", "IOE1", "line 2: predicted tag 'B-X' is not valid under scheme IOE1"),
    ],
)
def test_bad_token_files(cli, tmp_path: Path, content: str, scheme: str, needle: str) -> None:
    f = tmp_path / "bad.conll"
    f.write_text(content, encoding="utf-8")
    r = cli("score", "spans", "--conll", str(f), "--scheme", scheme)
    assert r.code == 2
    assert str(f) in r.err and needle in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize(
    ("gold", "needle"),
    [
        ([{"start": 5, "end": 3, "tag": "A"}], "gold[0].end: expected end > start (5; end is exclusive), but found 3 (end before start)"),
        ([{"start": 0, "end": 99, "tag": "A"}], "gold[0]: span [0, 99) lies outside the document text"),
        ([{"start": 0, "end": 3, "tag": ""}], "gold[0].tag: expected a non-empty string"),
        ([{"start": "0", "end": 3, "tag": "A"}], "gold[0].start: expected an integer character offset, but found '0'"),
        ([{"start": 0, "end": 3, "tag": "A", "text": "xyz"}], "gold[0].text: expected the document text at [0, 3), 'The', but found 'xyz'"),
    ],
)
def test_bad_jsonl_spans(cli, tmp_path: Path, gold: list, needle: str) -> None:
    truth = _write_jsonl(tmp_path / "t.jsonl", [{"id": "doc-1", "text": EX2, "gold": gold}])
    pred = _write_jsonl(tmp_path / "p.jsonl", [{"id": "doc-1", "pred": []}])
    r = cli("score", "spans", "--truth", str(truth), "--predictions", f"m={pred}")
    assert r.code == 2, r.out
    assert f"{truth}: line 1 (id 'doc-1')" in r.err and needle in r.err


def test_mismatched_document_ids(cli, tmp_path: Path) -> None:
    truth = _write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "gold": []}, {"id": "b", "gold": []}])
    pred = _write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "pred": []}, {"id": "c", "pred": []}])
    r = cli("score", "spans", "--truth", str(truth), "--predictions", f"m={pred}")
    assert r.code == 2
    assert "document ids do not match" in r.err and "'b'" in r.err and "'c'" in r.err and str(pred) in r.err


def test_usage_errors(cli, tmp_path: Path) -> None:
    r = cli("score", "spans", "--scheme", "BIO9", "--conll", "x")
    assert r.code == 2 and "expected one of conlleval, IOB1, IOB2, IOE1, IOE2, IOBES, BILOU" in r.err
    r = cli("score", "spans")
    assert r.code == 2 and "--conll" in r.err
    r = cli("score", "spans", "--conll", str(tmp_path / "missing.conll"))
    assert r.code == 2 and "file not found" in r.err
    f = tmp_path / "a.conll"
    f.write_text("a B-X B-X\n", encoding="utf-8")
    r = cli("score", "spans", "--conll", str(f), "--iou-weight", "1.5")
    assert r.code == 2 and "iou_weight" in r.err


def test_help_lists_spans(cli) -> None:
    r = cli("score", "--help")
    assert r.code == 0 and "spans" in r.out


def test_two_conll_files_are_two_models_and_gold_must_agree(cli, tmp_path: Path) -> None:
    a = tmp_path / "a.conll"
    b = tmp_path / "b.conll"
    a.write_text("x B-X B-X\ny I-X I-X\n", encoding="utf-8")
    b.write_text("x B-X B-X\ny I-X O\n", encoding="utf-8")
    r = cli("score", "spans", "--conll", f"good={a}", "--conll", f"short={b}", "--json")
    assert r.code == 0, r.err
    assert r.json()["ranking"] == ["good", "short"]
    c = tmp_path / "c.conll"
    c.write_text("x B-X B-X\ny O O\n", encoding="utf-8")
    r = cli("score", "spans", "--conll", f"good={a}", "--conll", f"other={c}")
    assert r.code == 2 and f"{c}: line 2: gold tag 'O' differs from 'I-X'" in r.err


def test_predictions_must_tag_the_truth_tokens(cli, tmp_path: Path) -> None:
    gold = tmp_path / "gold.txt"
    pred = tmp_path / "pred.txt"
    gold.write_text("a B-X\nb I-X\n", encoding="utf-8")
    pred.write_text("a B-X\nc I-X\n", encoding="utf-8")
    r = cli("score", "spans", "--truth", str(gold), "--predictions", f"m={pred}")
    assert r.code == 2 and f"{pred}: line 2: token 'c' differs from 'b'" in r.err


def test_suffix_tags(cli, tmp_path: Path) -> None:
    f = tmp_path / "s.conll"
    f.write_text("x NP-B NP-B\ny NP-I NP-I\nz O VP-B\n", encoding="utf-8")
    r = cli("score", "spans", "--conll", str(f), "--suffix", "--json")
    assert r.code == 0, r.err
    m = r.json()["models"]["s"]["exact"]["micro"]
    assert (m["tp"], m["fp"], m["fn"]) == (1, 1, 0)
    r = cli("score", "spans", "--conll", str(f))
    assert r.code == 2 and "line 1: gold tag 'NP-B' is not valid" in r.err


def test_predicted_span_outside_the_truth_text(cli, tmp_path: Path) -> None:
    truth = _write_jsonl(tmp_path / "t.jsonl", [{"id": "d", "text": "short", "gold": []}])
    pred = _write_jsonl(tmp_path / "p.jsonl", [{"id": "d", "pred": [{"start": 2, "end": 40, "tag": "A"}]}])
    r = cli("score", "spans", "--truth", str(truth), "--predictions", f"m={pred}")
    assert r.code == 2 and f"{pred}: line 1 (id 'd'): pred[0]: span [2, 40) lies outside the truth text (5 characters)" in r.err


def test_json_array_of_documents(cli, tmp_path: Path) -> None:
    f = tmp_path / "docs.json"
    f.write_text(json.dumps([{"id": "a", "text": EX2, "gold": [_span(EX2, "delete", "Action")], "pred": [_span(EX2, "delete", "Action")]}]), encoding="utf-8")
    r = cli("score", "spans", "--truth", str(f), "--json")
    assert r.code == 0, r.err
    assert r.json()["models"]["docs"]["exact"]["micro"]["tp"] == 1
