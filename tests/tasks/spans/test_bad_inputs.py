"""Bad-input catalogue: `extracteval score spans` (JSONL spans and CoNLL token files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, drop_first, duplicate_first, ids, latin1, raw, rows, run_case,
)

TEXTS = ["The administrator can delete inactive accounts.", "If the session expires, the system shall notify the user.",
         "The user shall log in.", "The clerk approves invoices."]


def _span(text: str, phrase: str, tag: str) -> dict:
    i = text.index(phrase)
    return {"start": i, "end": i + len(phrase), "tag": tag}


def _truth() -> list[dict]:
    return [
        {"id": "R1", "text": TEXTS[0], "gold": [_span(TEXTS[0], "administrator", "Main_actor"), _span(TEXTS[0], "delete", "Action")]},
        {"id": "R2", "text": TEXTS[1], "gold": [_span(TEXTS[1], "system", "Main_actor"), _span(TEXTS[1], "notify", "Action")]},
        {"id": "R3", "text": TEXTS[2], "gold": [_span(TEXTS[2], "user", "Main_actor")]},
        {"id": "R4", "text": TEXTS[3], "gold": [_span(TEXTS[3], "clerk", "Main_actor")]},
    ]


def _pred() -> list[dict]:
    return [{"id": r["id"], "pred": list(r["gold"])} for r in _truth()]


SPEC = TaskSpec("spans", "jsonl", _truth, _pred,
                lambda t, p: ["score", "spans", "--truth", str(t), "--predictions", f"m={p}", "--json", "--no-ci"])


def _pred_spans(spans: list[dict], row: int = 0):
    def fn(rs: list[dict]) -> list[dict]:
        rs[row]["pred"] = spans
        return rs

    return rows("pred", fn)


def _gold_spans(spans: list[dict], row: int = 0):
    def fn(rs: list[dict]) -> list[dict]:
        rs[row]["gold"] = spans
        return rs

    return rows("truth", fn)


CASES = [
    Case("empty truth", raw("truth", b""), Bad("{truth}", "empty")),
    Case("empty predictions", raw("pred", b""), Bad("{pred}")),
    Case("BOM", bom("truth"), Ok(same=True)),
    Case("CRLF", crlf("pred"), Ok(same=True)),
    Case("non-UTF-8 bytes", latin1("truth"), Bad("{truth}", "line 3", "UTF-8")),
    Case("duplicate ids truth", rows("truth", duplicate_first), Bad("{truth}", "R1")),
    Case("duplicate ids predictions", rows("pred", duplicate_first), Bad("{pred}", "R1")),
    Case("id missing in predictions", rows("pred", drop_first), Bad("{pred}", "no prediction", "R1"),
         behaviour="exit 2: a document without predictions is ambiguous (write `pred: []` for none)"),
    Case("id missing in truth", rows("truth", drop_first), Bad("{pred}", "R1")),
    Case("backwards gold span", _gold_spans([{"start": 10, "end": 2, "tag": "Action"}]), Bad("{truth}", "R1", "10")),
    Case("gold span past the text", _gold_spans([{"start": 0, "end": 10_000, "tag": "Action"}]), Bad("{truth}", "R1", "10000")),
    Case("NaN offset in gold", _gold_spans([{"start": float("nan"), "end": 3, "tag": "Action"}]), Bad("{truth}", "R1")),
    Case("overlapping gold spans", _gold_spans([{"start": 0, "end": 10, "tag": "Action"}, {"start": 4, "end": 17, "tag": "Entity"}]), Ok()),
    Case("backwards predicted span", _pred_spans([{"start": 10, "end": 2, "tag": "Action"}]), Bad("{pred}", "R1", "pred[0].end", "10", "2"),
         behaviour="exit 2 naming the path: offsets are a file's structure, not free model text"),
    Case("overlapping predicted spans", _pred_spans([{"start": 0, "end": 10, "tag": "Action"}, {"start": 4, "end": 17, "tag": "Entity"}]), Ok()),
    Case("1 MB tag", _pred_spans([{"start": 0, "end": 3, "tag": "x" * 1_000_000}]), Ok()),
    Case("unknown scheme", None, Bad("scheme", "bogus"), extra=("--scheme", "bogus")),
    Case("threshold above 1", None, Bad("threshold", "1.5"), extra=("--threshold", "1.5")),
    Case("IoU weight below 0", None, Bad("weight", "-0.5"), extra=("--iou-weight", "-0.5")),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_spans_bad_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, SPEC, case, tmp_path)


CONLL_OK = "The DT B-NP B-NP\nclerk NN I-NP I-NP\napproves VBZ B-VP B-VP\n\nHe PRP B-NP B-NP\nleft VBD B-VP O\n"
CONLL_CASES = [
    ("too few columns", CONLL_OK.replace("clerk NN I-NP I-NP", "clerk I-NP"), ("line 2",)),
    ("ragged column count", CONLL_OK.replace("left VBD B-VP O", "left B-VP O"), ("line 6",)),
    ("non-UTF-8 bytes", CONLL_OK.encode().replace(b"clerk", b"cl\xe9rk"), ("line 2", "UTF-8")),
    ("bad tag prefix", CONLL_OK.replace("B-VP B-VP", "Z-VP B-VP", 1), ("line 3", "Z-VP")),
    ("empty file", "", ("empty",)),
    ("blank lines only: no sentence", "\n\n\n", ("no tokens found",)),  # seqeval returns 0 with a warning; nothing to score is an error here
]


@pytest.mark.parametrize("name,content,needles", CONLL_CASES, ids=[c[0].replace(" ", "-") for c in CONLL_CASES])
def test_conll_bad_input(cli, tmp_path: Path, name: str, content, needles) -> None:
    p = tmp_path / "eval.conll"
    p.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    r = cli("score", "spans", "--conll", f"m={p}", "--json", "--no-ci")
    assert "Traceback" not in r.err
    assert r.code == 2, r.err
    msg = r.err.strip().splitlines()[-1]
    assert "eval.conll" in msg
    for n in needles:
        assert n.lower() in msg.lower(), msg


def test_conll_crlf_and_bom_score_like_the_clean_file(cli, tmp_path: Path) -> None:
    clean, dirty = tmp_path / "clean.conll", tmp_path / "dirty.conll"
    clean.write_text(CONLL_OK, encoding="utf-8")
    dirty.write_bytes(("\ufeff" + CONLL_OK.replace("\n", "\r\n")).encode("utf-8"))
    a = cli("score", "spans", "--conll", f"m={clean}", "--json", "--no-ci")
    b = cli("score", "spans", "--conll", f"m={dirty}", "--json", "--no-ci")
    assert a.code == b.code == 0, b.err
    assert a.json()["models"]["m"]["exact"] == b.json()["models"]["m"]["exact"]
