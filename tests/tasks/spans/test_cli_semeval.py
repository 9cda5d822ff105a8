"""`extracteval score spans` and the SemEval-2013 schemas: `--json`'s `nervaluate`, `--min-overlap`,
`--report-style nervaluate|classification`, and every engine giving the same counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.system import python_package

SCHEMAS = ["strict", "exact", "partial", "ent_type"]
KEYS = {"correct", "incorrect", "partial", "missed", "spurious", "possible", "actual", "precision", "recall", "f1", "per_type"}
GOLD = [["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "I-ORG", "O", "B-LOC"], ["O", "B-PER", "O", "B-ORG", "B-MISC", "I-MISC"],
        ["B-LOC", "I-LOC", "I-LOC", "I-LOC", "O", "B-PER"]]
PRED = [["B-PER", "I-PER", "O", "B-ORG", "O", "O", "O", "B-PER"], ["O", "B-PER", "I-PER", "O", "B-MISC", "I-MISC"],
        ["B-LOC", "O", "O", "O", "O", "O"]]


@pytest.fixture
def conll(tmp_path: Path) -> Path:
    f = tmp_path / "m.conll"
    f.write_text("\n\n".join("\n".join(f"w{i} {g} {p}" for i, (g, p) in enumerate(zip(gs, ps))) for gs, ps in zip(GOLD, PRED)) + "\n",
                 encoding="utf-8")
    return f


@pytest.fixture
def jsonl(tmp_path: Path) -> tuple[Path, Path]:
    def spans(tags: list[str]) -> list[dict]:
        out: list[dict] = []
        for i, t in enumerate(tags):
            if t.startswith("B-"):
                out.append({"start": i, "end": i + 1, "tag": t[2:]})
            elif t.startswith("I-"):
                out[-1]["end"] = i + 1
        return out

    truth, pred = tmp_path / "t.jsonl", tmp_path / "p.jsonl"
    truth.write_text("".join(json.dumps({"id": f"d{k}", "gold": spans(g)}) + "\n" for k, g in enumerate(GOLD)), encoding="utf-8")
    pred.write_text("".join(json.dumps({"id": f"d{k}", "pred": spans(p)}) + "\n" for k, p in enumerate(PRED)), encoding="utf-8")
    return truth, pred


def test_json_has_the_four_schemas(cli, conll: Path) -> None:
    r = cli("score", "spans", "--conll", f"m={conll}", "--json", "--no-ci")
    assert r.code == 0, r.err
    doc = r.json()
    ner = doc["models"]["m"]["nervaluate"]
    assert list(ner) == SCHEMAS and all(set(ner[s]) == KEYS for s in SCHEMAS)
    assert set(ner["strict"]["per_type"]) == {"LOC", "MISC", "ORG", "PER"}
    assert ner["strict"]["correct"] == doc["models"]["m"]["exact"]["micro"]["tp"]  # strict is the task's exact match
    assert doc["config"]["min_overlap"] == 1.0


def test_json_agrees_with_nervaluate(cli, conll: Path) -> None:
    nervaluate = python_package("nervaluate", "test")
    r = cli("score", "spans", "--conll", f"m={conll}", "--json", "--no-ci", "--min-overlap", "40")
    ner = r.json()["models"]["m"]["nervaluate"]
    theirs = nervaluate.Evaluator(GOLD, PRED, tags=["LOC", "MISC", "ORG", "PER"], loader="list", min_overlap_percentage=40).evaluate()
    for s in SCHEMAS:
        assert {k: ner[s][k] for k in ("correct", "incorrect", "partial", "missed", "spurious")} == \
            {k: getattr(theirs["overall"][s], k) for k in ("correct", "incorrect", "partial", "missed", "spurious")}
        assert ner[s]["f1"] == pytest.approx(theirs["overall"][s].f1, abs=1e-12)


def test_min_overlap_changes_the_pairs(cli, conll: Path) -> None:
    low = cli("score", "spans", "--conll", f"m={conll}", "--json", "--no-ci").json()["models"]["m"]["nervaluate"]
    high = cli("score", "spans", "--conll", f"m={conll}", "--json", "--no-ci", "--min-overlap", "100").json()["models"]["m"]["nervaluate"]
    # ORG [3, 6) predicted [3, 4) covers a third, LOC [0, 4) predicted [0, 1) a quarter: under 100%;
    # PER [1, 2) predicted [1, 3) covers all of the gold span: a pair at 100% too
    assert low["partial"]["partial"] == 3 and high["partial"]["partial"] == 1
    assert high["partial"]["spurious"] == low["partial"]["spurious"] + 2


@pytest.mark.parametrize("value", ["0", "0.5", "101", "abc", "nan", "-3"])
def test_bad_min_overlap(cli, conll: Path, value: str) -> None:
    r = cli("score", "spans", "--conll", str(conll), f"--min-overlap={value}")
    assert r.code == 2
    assert "--min-overlap" in r.err and "from 1 to 100" in r.err and repr(value) in r.err
    assert "Traceback" not in r.err


def test_bad_report_style(cli, conll: Path) -> None:
    r = cli("score", "spans", "--conll", str(conll), "--report-style", "fancy")
    assert r.code == 2 and "--report-style" in r.err and "nervaluate" in r.err and "Traceback" not in r.err


def test_report_style_nervaluate(cli, conll: Path) -> None:
    r = cli("score", "spans", "--conll", f"m={conll}", "--report-style", "nervaluate", "--no-ci")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("Schema "))
    assert lines[head].split() == ["Schema", "COR", "INC", "PAR", "MIS", "SPU", "POS", "ACT", "P", "R", "F1"]
    assert [x.split()[0] for x in lines[head + 2 : head + 6]] == SCHEMAS
    assert "Per type:" in r.out and "min overlap 1% of the gold span" in r.out
    per = lines[lines.index("Per type:") + 1]
    assert per.split()[:2] == ["Type", "Schema"]
    assert "Exact match (conlleval layout)" not in r.out


def test_report_style_classification_is_seqevals(cli, conll: Path) -> None:
    seqeval = python_package("seqeval.metrics", "test")
    r = cli("score", "spans", "--conll", f"m={conll}", "--report-style", "classification", "--no-ci")
    assert r.code == 0, r.err
    expected = seqeval.classification_report(GOLD, PRED).rstrip("\n")
    got = r.out.split("== m\n", 1)[1].rstrip("\n")
    assert got == expected


def test_report_style_default_is_unchanged(cli, conll: Path) -> None:
    r = cli("score", "spans", "--conll", f"m={conll}", "--no-ci")
    assert "Exact match (conlleval layout):" in r.out and "Schema " not in r.out


@pytest.mark.parametrize("engine", [("--chunk-size", "1"), ("--chunk-size", "2", "--workers", "2")])
def test_engines_give_the_same_schemas(cli, jsonl: tuple[Path, Path], engine: tuple[str, ...]) -> None:
    truth, pred = jsonl
    base = ("score", "spans", "--truth", str(truth), "--predictions", f"m={pred}", "--json", "--no-ci", "--min-overlap", "30")
    whole = cli(*base).json()["models"]["m"]["nervaluate"]
    assert cli(*base, *engine).json()["models"]["m"]["nervaluate"] == whole
