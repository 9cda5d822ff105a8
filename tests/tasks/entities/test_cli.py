"""`extracteval score entities` end to end: --json keys, views, weights files, bad inputs, demo."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from extracteval.tasks.entities.semantics import PRESENCE_KEYS

REPO = Path(__file__).resolve().parents[3]

TRUTH = [
    {"id": "INV-1", "entities": [
        {"description": "Steel bolt M8", "quantity": 100, "unit_price": "0.12", "amount": "12.00"},
        {"description": "Hex nut M8", "quantity": 100, "unit_price": "0.05", "amount": "5.00"},
    ]},
    {"id": "INV-2", "entities": [{"description": "Consulting hours", "quantity": 10, "unit_price": "150.00", "amount": "1,500.00"}]},
]
GOOD = [
    {"id": "INV-1", "entities": [
        {"description": "Hex nut M8", "quantity": "100", "unit_price": 0.05, "amount": 5},
        {"description": "Steel bolt M8", "quantity": 100, "unit_price": "0.12", "amount": "12"},
    ]},
    {"id": "INV-2", "entities": [{"description": "Consulting hrs", "quantity": 10, "unit_price": "150", "amount": "1500"}]},
]
FEW = [{"id": "INV-1", "entities": [TRUTH[0]["entities"][0]]}, {"id": "INV-2", "entities": []}]


def _jsonl(path: Path, rows) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return {
        "truth": _jsonl(tmp_path / "truth.jsonl", TRUTH),
        "good": _jsonl(tmp_path / "good.jsonl", GOOD),
        "few": _jsonl(tmp_path / "few.jsonl", FEW),
        "dir": tmp_path,
    }


def test_json_keys_views_and_ranking(cli, files):
    (files["dir"] / "w.yaml").write_text("weights: {description: 2, amount: 1}\nstrategies: {description: FUZZY}\n", encoding="utf-8")
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}",
            "--predictions", f"few={files['few']}", "--weights", str(files["dir"] / "w.yaml"), "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["ranking"] == ["good", "few"]
    assert doc["key_fields"] == ["amount", "description"] and doc["weights"] == {"amount": 1.0, "description": 2.0}
    for m in ("good", "few"):
        summary = doc["models"][m]["entity_detection_summary"]
        assert set(PRESENCE_KEYS) <= set(summary)
        assert {"matched", "strict"} <= set(doc["models"][m])
    few = doc["models"]["few"]
    assert few["entity_detection_summary"]["matched_count"] == 1
    assert few["entity_detection_summary"]["recall_entities"] == pytest.approx(1 / 3)
    assert few["matched"]["row_accuracy"] == 1.0 and few["strict"]["row_accuracy"] == pytest.approx(1 / 3)
    assert doc["models"]["good"]["matched"]["features"]["description"]["micro_accuracy"] == 1.0  # "hrs" ≈ "hours"
    assert any("'few'" in w and "of gold entities found" in w for w in doc["warnings"])


def test_terminal_shows_both_views_and_key_fields_option(cli, files, tmp_path):
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"few={files['few']}",
            "--key-fields", "description", "--output", str(tmp_path / "out"))
    assert r.code == 0, r.err
    assert "aligned on description×1" in r.out
    assert "Matched-pairs F1" in r.out and "Strict F1" in r.out and "Entity R" in r.out
    assert "1/3" in r.out
    assert (tmp_path / "out" / "feature_metrics.csv").read_text().count("matched") > 0
    import pandas as pd

    recs = pd.read_parquet(tmp_path / "out" / "records.parquet")
    assert recs.set_index("record_id")[["gold", "predicted", "matched"]].to_dict("index") == {
        "INV-1": {"gold": 2, "predicted": 1, "matched": 1}, "INV-2": {"gold": 1, "predicted": 0, "matched": 0}}
    assert recs["matched"].sum() == 1


@pytest.mark.parametrize(
    ("truth_rows", "args", "message"),
    [
        ([{"id": "A", "entities": [{"description": "x"}, "Bolt"]}], [], r"truth\.jsonl: line 1: record 'A': entities\[1\]: expected an object .*found str 'Bolt'"),
        (TRUTH, ["--key-fields", "sku"], r"unknown key field\(s\) \['sku'\]: not a field of any ground-truth entity"),
        (TRUTH, ["--features", "description,discount"], r"unknown feature\(s\) \['discount'\]"),
        ([{"id": "A", "entities": [{"description": "x", "sku": None}]}, {"id": "B", "entities": [{"description": "y"}]}], [],
         r"feature 'sku' is missing in every ground-truth entity"),
        ([{"id": "A", "entities": [{"d": 1}]}, {"id": "A", "entities": []}], [], r"line 2: record id 'A' repeats line 1"),
        ([{"id": "A"}], [], r"line 1: record 'A': no 'entities' key"),
    ],
)
def test_bad_inputs_exit_2_naming_file_line_and_field(cli, files, truth_rows, args, message):
    truth = _jsonl(files["dir"] / "truth.jsonl", truth_rows)
    r = cli("score", "entities", "--truth", str(truth), "--predictions", f"good={files['good']}", *args)
    assert r.code == 2, r.out
    assert "Traceback" not in r.err
    assert re.search(message, r.err), r.err


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("description: 0\namount: 0\n", r"w\.yaml: weights: expected weights that sum to a positive number"),
        ("description: -1\namount: 2\n", r"weight of field 'description': expected a finite number ≥ 0, but got -1"),
        ("weights: {description: 1}\nmatch_treshold: 0.4\n", r"unknown keys \['match_treshold'\]"),
        ("weights: {description: 1}\nstrategies: {description: CLOSE}\n", r"expected one of EXACT, FUZZY, SEMANTIC, IGNORE, but got 'CLOSE'"),
    ],
)
def test_bad_weights_files(cli, files, weights, message):
    (files["dir"] / "w.yaml").write_text(weights, encoding="utf-8")
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}", "--weights", str(files["dir"] / "w.yaml"))
    assert r.code == 2
    assert re.search(message, r.err), r.err


def test_demo_runs_the_invoices_example(cli, tmp_path, monkeypatch):
    if not (REPO / "experiments" / "invoices" / "experiment.yaml").exists():
        pytest.fail("experiments/invoices is missing")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the demo logs to ./mlflow.db and ./mlartifacts: here, not in the checkout
    r = cli("demo", "--experiments", str(REPO / "experiments"), "--only", "invoices", "--output", str(tmp_path / "out"))
    assert r.code == 0, r.err
    assert (work / "mlflow.db").is_file()
    assert "== invoices (entities)" in r.out
    doc = json.loads((tmp_path / "out" / "invoices" / "result.json").read_text())
    models = doc["models"]
    assert len(models) == 3
    # the story the example tells: one model is excellent on the pairs it matched but misses lines
    looks_good = [m for m, v in models.items()
                  if v["matched"]["row_accuracy"] >= 0.85 and v["entity_detection_summary"]["recall_entities"] <= 0.75]
    assert looks_good, {m: (v["matched"]["row_accuracy"], v["entity_detection_summary"]["recall_entities"]) for m, v in models.items()}
    assert models[looks_good[0]]["rank"] > 1
    assert any("of gold entities found" in w for w in doc["warnings"])


def test_parquet_and_json_object_inputs_give_the_same_result(cli, files):
    import pandas as pd

    # Parquet structs need one type per field: the same predictions with every value a string
    rows = [{"id": r["id"], "entities": [{k: str(v) for k, v in e.items()} for e in r["entities"]]} for r in GOOD]
    jl = _jsonl(files["dir"] / "good_str.jsonl", rows)
    pq = files["dir"] / "good.parquet"
    pd.DataFrame({"id": [r["id"] for r in rows], "entities": [r["entities"] for r in rows]}).to_parquet(pq)
    obj = files["dir"] / "good.json"
    obj.write_text(json.dumps({r["id"]: r["entities"] for r in rows}), encoding="utf-8")
    docs = []
    for path in (jl, pq, obj):
        r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={path}", "--json")
        assert r.code == 0, r.err
        d = r.json()
        d.pop("inputs")
        d["models"]["good"].pop("source")
        docs.append(d)
    assert docs[0]["models"]["good"]["entity_detection_summary"]["matched_count"] == 3
    assert docs[0] == docs[1] == docs[2]


def test_malformed_prediction_lists_are_counted_not_fatal(cli, files):
    bad = _jsonl(files["dir"] / "bad.jsonl", [
        {"id": "INV-1", "entities": "no line items found"},
        {"id": "INV-2", "entities": None},
    ])
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"bad={bad}", "--json")
    assert r.code == 0, r.err
    s = r.json()["models"]["bad"]["entity_detection_summary"]
    assert (s["predicted_count"], s["matched_count"], s["invalid_predictions_count"], s["missed_gold_count"]) == (1, 0, 1, 3)


def test_semantic_strategy_uses_the_lexical_backend_and_names_it(cli, files):
    from extracteval.core.similarity import LexicalSimilarity

    (files["dir"] / "s.yaml").write_text("description: SEMANTIC\n", encoding="utf-8")
    score = float(LexicalSimilarity().similarity(["consulting hours"], ["consulting hrs"])[0])
    base = ("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}",
            "--strategies", str(files["dir"] / "s.yaml"), "--key-fields", "description")
    for thr in (score - 0.01, score + 0.01):  # the threshold decides the INV-2 description, not the alignment
        r = cli(*base, "--semantic-threshold", f"{thr:.6f}", "--json")
        assert r.code == 0, r.err
        doc = r.json()
        assert doc["config"]["semantic_backend"] == "lexical"
        assert doc["config"]["strategies_used"]["description"] == "SEMANTIC"
        good = doc["models"]["good"]
        assert good["entity_detection_summary"]["matched_count"] == 3
        assert good["matched"]["features"]["description"]["correct"] == (3 if thr < score else 2)
    r = cli(*base)
    assert r.code == 0, r.err
    assert "SEMANTIC fields description: `lexical` backend (TF-IDF character n-gram cosine (lexical, not semantic)" in r.out


def test_similarity_option_and_weights_file_pick_the_backend(cli, files):
    (files["dir"] / "w.yaml").write_text(
        "weights: {description: 1}\nstrategies: {description: SEMANTIC}\nsimilarity: fuzzy\nsemantic_threshold: 0.5\n", encoding="utf-8")
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}",
            "--weights", str(files["dir"] / "w.yaml"), "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["config"]["semantic_backend"] == "fuzzy" and doc["config"]["semantic_threshold"] == 0.5
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}",
            "--weights", str(files["dir"] / "w.yaml"), "--similarity", "lexical", "--json")
    assert r.json()["config"]["semantic_backend"] == "lexical"  # the option overrides the file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--similarity", "meaning"], r"similarity: expected one of embedding, fuzzy, lexical, llm_judge, but got 'meaning'"),
        (["--similarity", "llm_judge"], r"llm_judge similarity: needs a base URL and a model name"),
        (["--semantic-threshold", "1.5"], r"Expected `semantic_threshold` to be a number in \[0, 1\], but got 1.5"),
    ],
)
def test_bad_similarity_options_exit_2(cli, files, args, message, monkeypatch):
    monkeypatch.delenv("EXTRACTEVAL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("EXTRACTEVAL_JUDGE_MODEL", raising=False)
    r = cli("score", "entities", "--truth", str(files["truth"]), "--predictions", f"good={files['good']}", *args)
    assert r.code == 2, r.out
    assert "Traceback" not in r.err
    assert re.search(message, r.err), r.err
