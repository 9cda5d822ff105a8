"""`extracteval score json` end to end, including bad inputs (exit 2, message names file/line)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import EXPERIMENTS

SEED_GT = {"id": "w1", "name": "John Smith", "email": "john@example.com",
           "bio": "Senior engineer with 10 years of experience...", "internal_id": None, "status": "active"}
SEED_AIO = {"id": "w1", "name": "John Smyth", "email": "john@example.com",
            "bio": "Experienced senior engineer, 10+ years...", "internal_id": "abc123", "extra_field": "surprise"}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def seed_files(tmp_path: Path) -> dict[str, Path]:
    return {
        "truth": write_jsonl(tmp_path / "truth.jsonl", [SEED_GT, {"id": "w2", "age": 30, "dob": "2024-01-05"}]),
        "pred": write_jsonl(tmp_path / "pred.jsonl", [{**SEED_AIO, "safety_score": 0.5}, {"id": "w2", "age": "30.0", "dob": "January 5, 2024"}]),
        "strategies": _write(tmp_path / "s.yaml", "name: FUZZY\nbio: SEMANTIC\n"),
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_json_document_keys(cli, seed_files) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}",
            "--strategies", str(seed_files["strategies"]), "--json")
    assert r.code == 0, r.err
    d = r.json()
    m = d["models"]["m"]
    assert set(m["rqs"]) == {"mean", "median", "min", "max"}
    for k in ("completeness", "hallucination", "accuracy", "buckets", "fields", "records", "rank", "tier"):
        assert k in m
    assert m["buckets"] == {"extra_keys": 1, "gt_null_aio_has_value": 1, "gt_non_null": 6, "aio_missing_or_null": 1, "both_non_null": 5}
    w1 = next(x for x in m["records"] if x["record_id"] == "w1")
    assert w1["completeness"] == 0.75 and w1["hallucination"] == 2 / 6 and w1["safety_score"] == 0.5
    assert w1["buckets"]["extra_keys"] == ["extra_field"]
    # the lexical default does not pass the bio paraphrase: accuracy 2/3 (seed's LLM scored 0.88)
    assert w1["accuracy"] == pytest.approx(2 / 3) and w1["mismatched"] == ["bio"]
    assert w1["rqs"] == pytest.approx(0.45 * 2 / 3 + 0.1875 + 0.15 * 0.5 - 0.05)
    w2 = next(x for x in m["records"] if x["record_id"] == "w2")
    assert w2["accuracy"] == 1.0  # 30 = "30.0", 2024-01-05 = January 5, 2024
    assert m["fields"]["bio"]["strategies"] == {"SEMANTIC": 1} and m["fields"]["age"]["strategies"] == {"EXACT": 1}
    assert d["config"]["semantic_backend"] == "lexical"
    assert d["config"]["safety_score"] == {"key": "safety_score", "default": 1.0}
    assert m["safety_scores_given"] == 1


def test_terminal_output_labels_lexical(cli, seed_files) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}")
    assert r.code == 0, r.err
    assert "`lexical` backend" in r.out and "not semantic" in r.out
    assert "RQS mean" in r.out and "extra_keys" in r.out


def test_pairs_layout_without_truth_and_invalid_prediction(cli, tmp_path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": "1", "truth": {"a": 1, "b": "x"}, "prediction": "the model returned prose"},
        {"id": "2", "truth": {"a": 2}, "prediction": {"a": 2.0}},
    ])
    r = cli("score", "json", "--predictions", f"p={pairs}", "--json")
    assert r.code == 0, r.err
    m = r.json()["models"]["p"]
    assert m["invalid_predictions"] == 1
    rec1 = next(x for x in m["records"] if x["record_id"] == "1")
    assert rec1["flags"] == ["invalid_prediction:str"] and rec1["completeness"] == 0.0
    assert any("not JSON objects" in w for w in r.json()["warnings"])


def test_multi_model_pairs_file_and_ranking(cli, tmp_path) -> None:
    rows = []
    for i in range(4):
        t = {"name": f"n{i}", "age": i}
        rows.append({"id": str(i), "model": "good", "truth": t, "prediction": t})
        rows.append({"id": str(i), "model": "bad", "truth": t, "prediction": {"name": f"n{i}", "age": i + 1, "x": 1}})
    f = write_jsonl(tmp_path / "both.jsonl", rows)
    r = cli("score", "json", "--predictions", str(f), "--json", "--records", "none")
    assert r.code == 0, r.err
    d = r.json()
    assert d["ranking"] == ["good", "bad"] and "records" not in d["models"]["good"]


def test_wide_tables_of_the_fields_task(cli, tmp_path) -> None:
    truth = _write(tmp_path / "truth.csv", "id,name,amount,date,note\n1,Acme,100,2024-01-05,\n2,Bolt,20,2024-02-01,x\n")
    pred = _write(tmp_path / "pred.csv", "id,name,amount,date,note,extra\n1,acme,100.00,01/05/2024,,\n2,Bolt,21,2024-02-01,,oops\n")
    r = cli("score", "json", "--truth", str(truth), "--predictions", f"m={pred}", "--json")
    assert r.code == 0, r.err
    m = r.json()["models"]["m"]
    # empty `extra` cell of record 1 is not an output key; record 2's "oops" is (extra_keys)
    assert m["buckets"]["extra_keys"] == 1
    assert m["buckets"]["aio_missing_or_null"] == 1  # note "x" of record 2
    assert m["fields"]["amount"]["accuracy"] == 0.5 and m["fields"]["date"]["accuracy"] == 1.0


def test_flatten_and_output_folder(cli, tmp_path) -> None:
    truth = write_jsonl(tmp_path / "t.jsonl", [{"id": "1", "customer": {"name": "Ann", "tags": ["a", "b"]}}])
    pred = write_jsonl(tmp_path / "p.jsonl", [{"id": "1", "customer": {"name": "Ann", "tags": ["a"]}, "safety_score": 0.2}])
    out = tmp_path / "out"
    r = cli("score", "json", "--truth", str(truth), "--predictions", f"m={pred}", "--flatten", "--output", str(out), "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["fields"] == ["customer.name", "customer.tags[*]"]
    assert d["models"]["m"]["fields"]["customer.tags[*]"]["aio_missing_or_null"] == 1
    assert json.loads((out / "result.json").read_text())["ranking"] == ["m"]
    cells = pd.read_parquet(out / "buckets.parquet")
    assert sorted(cells["key"]) == ["customer.name", "customer.tags[0]", "customer.tags[1]"]
    recs = pd.read_parquet(out / "records.parquet")
    assert recs.loc[0, "safety_score"] == 0.2
    assert set(pd.read_csv(out / "field_accuracy.csv")["field"]) == {"customer.name", "customer.tags[*]"}


def test_llm_judge_needs_configuration(cli, seed_files, monkeypatch) -> None:
    monkeypatch.delenv("EXTRACTEVAL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("EXTRACTEVAL_JUDGE_MODEL", raising=False)
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}", "--similarity", "llm_judge")
    assert r.code == 2 and "needs a base URL and a model" in r.err and "Traceback" not in r.err


# --- bad inputs -------------------------------------------------------------------------------


def test_invalid_json_line_names_file_and_line(cli, seed_files, tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "w1", "name": "x"}\n{"id": "w2", "name": \n', encoding="utf-8")
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={bad}")
    assert r.code == 2
    assert f"{bad}: line 2:" in r.err and "not valid JSON" in r.err and "Traceback" not in r.err


def test_unknown_strategy(cli, seed_files, tmp_path) -> None:
    s = _write(tmp_path / "s.json", '{"name": "CLOSE_ENOUGH"}')
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}", "--strategies", str(s))
    assert r.code == 2 and "field 'name'" in r.err and "EXACT, FUZZY, SEMANTIC, IGNORE" in r.err


@pytest.mark.parametrize("flag", ["--fuzzy-threshold", "--semantic-threshold"])
def test_threshold_outside_unit_interval(cli, seed_files, flag) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}", flag, "1.5")
    assert r.code == 2 and "in [0, 1], but got 1.5" in r.err


def test_unknown_similarity_lists_names(cli, seed_files) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}", "--similarity", "bert")
    assert r.code == 2 and "embedding, fuzzy, lexical, llm_judge" in r.err


def test_bad_safety_score(cli, seed_files, tmp_path) -> None:
    pred = write_jsonl(tmp_path / "p.jsonl", [{"id": "w1", "name": "x", "safety_score": "high"}])
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={pred}")
    assert r.code == 2 and "line 1" in r.err and "'safety_score' must be a number in [0, 1]" in r.err


def test_truth_line_not_an_object(cli, seed_files, tmp_path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"id": "1", "a": 1}\n[1, 2]\n', encoding="utf-8")
    r = cli("score", "json", "--truth", str(t), "--predictions", f"m={seed_files['pred']}")
    assert r.code == 2 and f"{t}: line 2: expected a JSON object" in r.err


def test_missing_id_and_duplicate_id(cli, seed_files, tmp_path) -> None:
    p = write_jsonl(tmp_path / "p.jsonl", [{"name": "x"}])
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={p}")
    assert r.code == 2 and "line 1: no 'id' key" in r.err
    p = write_jsonl(tmp_path / "p2.jsonl", [{"id": "w1"}, {"id": "w1"}])
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={p}")
    assert r.code == 2 and "line 2: record id 'w1' appears twice (first at line 1)" in r.err


def test_prediction_for_unknown_record(cli, seed_files, tmp_path) -> None:
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": "nope", "a": 1}])
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={p}")
    assert r.code == 2 and "not in the ground truth" in r.err and "'nope'" in r.err


def test_pairs_truth_disagreeing_with_truth_file(cli, seed_files, tmp_path) -> None:
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": "w2", "truth": {"age": 31}, "prediction": {"age": 31}}])
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={p}")
    assert r.code == 2 and "line 1: record 'w2': its 'truth' differs from the ground truth" in r.err


def test_demo_runs_the_customers_example(cli, tmp_path, monkeypatch) -> None:
    if not (EXPERIMENTS / "customers" / "experiment.yaml").exists():
        pytest.skip("experiments/customers not generated")
    monkeypatch.chdir(tmp_path)  # the demo logs to ./mlflow.db and ./mlartifacts: here, not in the checkout
    r = cli("demo", "--experiments", str(EXPERIMENTS), "--only", "customers")
    assert r.code == 0, r.err
    assert (tmp_path / "mlflow.db").is_file()
    assert "== customers (json)" in r.out and "RQS mean" in r.out and "`lexical` backend" in r.out


def test_status_in_pairs_layout(cli, tmp_path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": "1", "truth": {"a": 1}, "prediction": {"a": 1}, "status": "ok"},
        {"id": "2", "truth": {"a": 2}, "prediction": None, "status": "error"},
    ])
    r = cli("score", "json", "--predictions", f"p={pairs}", "--json")
    assert r.code == 0, r.err
    m = r.json()["models"]["p"]
    assert m["excluded_records"] == 1 and m["rqs"]["min"] == 0.85


def test_embedding_needs_a_local_model_folder(cli, seed_files, tmp_path) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}",
            "--similarity", "embedding", "--embedding-model", str(tmp_path / "no-such-model"))
    assert r.code == 2 and "never downloads" in r.err and "Traceback" not in r.err


def test_weights_option(cli, seed_files) -> None:
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}",
            "--weights", "accuracy=0.5,completeness=0.5,hallucination=0,safety=0", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["config"]["weights"] == {"accuracy": 0.5, "completeness": 0.5, "hallucination": 0.0, "safety": 0.0}
    w2 = next(x for x in d["models"]["m"]["records"] if x["record_id"] == "w2")
    assert w2["rqs"] == 1.0
    r = cli("score", "json", "--truth", str(seed_files["truth"]), "--predictions", f"m={seed_files['pred']}", "--weights", "speed=1")
    assert r.code == 2 and "accuracy, completeness, hallucination, safety" in r.err
