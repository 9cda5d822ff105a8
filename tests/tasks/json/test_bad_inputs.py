"""Bad-input catalogue: `extracteval score json` (JSONL/JSON readers, strategies, options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bad_inputs.harness import (
    Bad, Case, Ok, TaskSpec, bom, crlf, deep, drop_first, duplicate_first, header_only, ids, json_text_edit, latin1,
    raw, rows, run_case, wide, wrong_delimiter,
)


def _truth() -> list[dict]:
    return [
        {"id": "R1", "name": "Ada Lovelace", "amount": 100.5, "address": {"city": "London"}},
        {"id": "R2", "name": "Alan Turing", "amount": 20, "address": {"city": "Wilmslow"}},
        {"id": "R3", "name": "Grace Hopper", "amount": 3, "address": {"city": "Arlington"}},
        {"id": "R4", "name": "Katherine Johnson", "amount": 4000, "address": {"city": "Hampton"}},
    ]


def _pred() -> list[dict]:
    out = [{"id": r["id"], "prediction": {k: v for k, v in r.items() if k != "id"}} for r in _truth()]
    out[1]["prediction"]["amount"] = 21
    return out


def _argv(truth: Path, pred: Path) -> list[str]:
    return ["score", "json", "--truth", str(truth), "--predictions", f"m={pred}", "--json"]


SPEC = TaskSpec("json", "jsonl", _truth, _pred, _argv)


def _model(doc: dict) -> dict:
    return doc["models"]["m"]


def _pred_value(key: str, value, row: int = 0):
    def fn(rs: list[dict]) -> list[dict]:
        rs[row]["prediction"][key] = value
        return rs

    return rows("pred", fn)


def _check(**expected):
    def check(doc: dict) -> None:
        m = _model(doc)
        for k, v in expected.items():
            got = m[k]
            assert (v(got) if callable(v) else got == v), f"{k}: {got!r}"

    return check


def _accuracy_below_clean(doc: dict) -> None:
    assert _model(doc)["accuracy"] < 1.0


CASES = [
    Case("empty truth", raw("truth", b""), Bad("{truth}", "empty")),
    Case("empty predictions", raw("pred", b""), Bad("{pred}", "empty")),
    Case("no records truth", header_only("truth"), Bad("truth.json", "no records")),
    Case("no records predictions", header_only("pred"), Bad("pred.json", "no records")),
    Case("two records on one line", wrong_delimiter("truth"), Bad("{truth}", "line 1")),
    Case("BOM", bom("truth"), Ok(same=True)),
    Case("CRLF", crlf("pred"), Ok(same=True)),
    Case("non-UTF-8 bytes", latin1("pred"), Bad("{pred}", "line 3", "UTF-8")),
    Case("duplicate ids truth", rows("truth", duplicate_first), Bad("{truth}", "R1", "duplicate")),
    Case("duplicate ids predictions", rows("pred", duplicate_first), Bad("{pred}", "R1", "duplicate")),
    Case("id missing in predictions", rows("pred", drop_first), Ok(_check(missing_records=1))),
    Case("id missing in truth", rows("truth", drop_first), Bad("{pred}", "not in the ground truth", "R1")),
    Case("NaN in truth", json_text_edit("truth", lambda t: t.replace("100.5", "NaN")), Ok(_check(hallucination=lambda h: h > 0)),
         behaviour="NaN in the truth is an absent value (null); a predicted value there counts as a hallucination"),
    Case("NaN in prediction", _pred_value("amount", float("nan")), Ok(_accuracy_below_clean)),
    Case("Infinity in prediction", _pred_value("amount", float("inf")), Ok(_accuracy_below_clean)),
    Case("1 MB string", _pred_value("name", "x" * 1_000_000), Ok(_accuracy_below_clean), extra=("--similarity", "fuzzy")),
    Case("100k keys in a prediction", _pred_value("extra", wide()), Ok(_check(hallucination=lambda h: h > 0))),
    # 10k, not 100k, top-level keys: each is a reported field and the pretty-printed --json of
    # 100k fields alone takes ~20 s (linear; Python's indenting encoder)
    Case("10k hallucinated top-level keys", rows("pred", lambda rs: [{**r, "prediction": {**r["prediction"], **wide(10_000)}} if i == 0 else r for i, r in enumerate(rs)]),
         Ok(_check(hallucination=lambda h: h > 0))),
    Case("10,000-deep nesting in prediction", json_text_edit("pred", lambda t: t.replace('"London"', deep(), 1)), Ok(_accuracy_below_clean)),
    Case("10,000-deep nesting in truth", json_text_edit("truth", lambda t: t.replace('"London"', deep(), 1)), Ok()),
    Case("duplicate keys in prediction", json_text_edit("pred", lambda t: t.replace('"name": "Ada Lovelace"', '"name": "Ada Lovelace", "name": "Bob"', 1)), Ok(_check(matched=10)),
         behaviour="last key wins (as in JSON.parse and json.loads)"),
    Case("duplicate keys in truth", json_text_edit("truth", lambda t: t.replace('"name": "Ada Lovelace"', '"name": "Ada Lovelace", "name": "Bob"', 1)),
         Bad("{truth}", "line 1", "'name'", "more than once"),
         behaviour="a record naming a key twice is refused (inside a predicted value, the last key wins)"),
    Case("prediction is a refusal string", rows("pred", lambda rs: [{**r, "prediction": "I cannot help"} if i == 0 else r for i, r in enumerate(rs)]),
         Ok(_check(invalid_predictions=1))),
    Case("prediction is a list", rows("pred", lambda rs: [{**r, "prediction": ["x"]} if i == 0 else r for i, r in enumerate(rs)]), Ok(_check(invalid_predictions=1))),
    Case("fuzzy threshold above 1", None, Bad("fuzzy", "1.5"), extra=("--fuzzy-threshold", "1.5")),
    Case("semantic threshold below 0", None, Bad("semantic", "-1"), extra=("--semantic-threshold", "-1")),
    Case("semantic threshold NaN", None, Bad("semantic", "nan"), extra=("--semantic-threshold", "nan")),
    Case("unknown similarity backend", None, Bad("bogus"), extra=("--similarity", "bogus")),
    Case("bad RQS weights", None, Bad("weight", "completeness", "-1"), extra=("--weights", "accuracy=2,completeness=-1")),
    Case("default safety outside [0,1]", None, Bad("safety", "7"), extra=("--default-safety", "7")),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_json_bad_input(cli, tmp_path: Path, case: Case) -> None:
    run_case(cli, SPEC, case, tmp_path)


STRATEGY_CASES = [
    ("unknown strategy name", '{"name": "BOGUS"}', ".json", ("BOGUS",)),
    ("YAML python tag", "name: !!python/object/apply:os.system ['echo pwned > PWNED']\n", ".yaml", ("strategies.yaml",)),
    ("threshold in file outside [0,1]", '{"strategies": {}, "fuzzy_threshold": 3}', ".json", ("fuzzy", "3")),
]


@pytest.mark.parametrize("name,text,suffix,needles", STRATEGY_CASES, ids=[c[0].replace(" ", "-") for c in STRATEGY_CASES])
def test_json_bad_strategies(cli, tmp_path: Path, monkeypatch, name, text, suffix, needles) -> None:
    monkeypatch.chdir(tmp_path)
    strategies = tmp_path / f"strategies{suffix}"
    strategies.write_text(text, encoding="utf-8")
    run_case(cli, SPEC, Case(name, None, Bad(*needles), extra=("--strategies", str(strategies))), tmp_path)
    assert not (tmp_path / "PWNED").exists()
