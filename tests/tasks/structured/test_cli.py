"""End-to-end: `extracteval score structured`, `compare-models`, the slm-vs-llm demo."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from extracteval.report.live_progress import LiveProgress

REPO = Path(__file__).resolve().parents[3]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    truth = write_jsonl(tmp_path / "truth.jsonl", [{"id": f"r{i}", "reference": {"name": f"n{i}", "items": [i, i + 1]}} for i in range(20)])
    llm = write_jsonl(tmp_path / "llm.jsonl", [{"id": f"r{i}", "output": json.dumps({"name": f"n{i}", "items": [i, i + 1]})} for i in range(20)])
    slm = write_jsonl(tmp_path / "slm.jsonl",
                      [{"id": f"r{i}", "output": ("```json\n" + json.dumps({"name": f"n{i}", "items": [i, i + 1]}) + "\n```") if i % 3 else '{"name": '} for i in range(20)])
    return {"truth": truth, "llm": llm, "slm": slm, "dir": tmp_path}


def test_json_document_keys_and_values(cli, files) -> None:
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['llm']}", "--predictions", f"slm={files['slm']}", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["task"] == "structured" and doc["ranking"] == ["llm", "slm"] and doc["n_records"] == 20
    slm = doc["models"]["slm"]
    for key in ("json_valid_rate", "json_extracted_rate", "exact_match_rate", "field_precision", "field_recall", "field_f1", "counts", "fields", "invalid_examples"):
        assert key in slm
    assert slm["json_valid_rate"] == pytest.approx(13 / 20)
    assert slm["json_extracted_rate"] == pytest.approx(13 / 20)
    assert doc["models"]["llm"]["exact_match_rate"] == 1.0
    assert set(slm["fields"]) == {"name", "items[]"}
    assert r.err == ""  # no progress when stderr is not a terminal


def test_terminal_table_and_inline_decision(cli, files) -> None:
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['llm']}", "--predictions", f"slm={files['slm']}",
            "--baseline", "llm", "--candidate", "slm", "--resamples", "200")
    assert r.code == 0, r.err
    assert "JSON valid" in r.out and "Exact match" in r.out
    assert "fine-tuning recommended" in r.out and "95% CI" in r.out


def test_progress_flag_writes_running_metrics_to_stderr(cli, files) -> None:
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"slm={files['slm']}", "--progress", "always", "--json")
    assert r.code == 0
    lines = r.err.strip().splitlines()
    assert lines[0].startswith("[1/20] structured slm json_valid_rate=") and "exact_match_rate=" in lines[0]
    assert lines[-1] == "[20/20] structured slm json_valid_rate=65.0% exact_match_rate=65.0%"
    json.loads(r.out)  # stdout stays a clean JSON document


def test_live_progress_on_a_tty_rewrites_one_line() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    s = Tty()
    p = LiveProgress("toolcalls", ("valid_call_rate",), stream=s, interval=0.0)
    p(1, 2, "m", {"valid_call_rate": 1.0})
    p(2, 2, "m", {"valid_call_rate": 0.5})
    assert s.getvalue() == "\r\x1b[2K[1/2] toolcalls m valid_call_rate=100.0%\r\x1b[2K[2/2] toolcalls m valid_call_rate=50.0%\n"
    quiet = io.StringIO()
    LiveProgress("x", (), stream=quiet)(1, 1, "m", {})
    assert quiet.getvalue() == ""


def test_output_folder_then_compare_models(cli, files) -> None:
    out = files["dir"] / "out"
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['llm']}", "--predictions", f"slm={files['slm']}", "--output", str(out), "--json")
    assert r.code == 0, r.err
    assert (out / "result.json").is_file() and len((out / "records.jsonl").read_text().splitlines()) == 40
    c = cli("compare-models", "--result", str(out), "--baseline", "llm", "--candidate", "slm", "--metric", "json_valid_rate", "--json")
    assert c.code == 0, c.err
    d = c.json()["decision"]
    assert d["gap"] == pytest.approx(7 / 20) and d["gap_band"] == "fine-tuning recommended" and d["ci"]["low"] <= d["gap"] <= d["ci"]["high"]
    # the interval reaches into "moderate": not settled, so not a recommendation
    assert d["verdict_range"] == ["moderate", "fine-tuning recommended"] and d["verdict_settled"] is False
    assert d["verdict"] == "not settled — leaning fine-tuning recommended (the 95% interval spans moderate → fine-tuning recommended)"
    assert d["fine_tuning_recommended"] is False
    text = cli("compare-models", "--result", str(out), "--baseline", "llm", "--candidate", "slm")
    # the default metric is the task's primary metric, the one it ranks by
    assert "Decision (field_f1)" in text.out and "fine-tuning recommended" in text.out
    bad = cli("compare-models", "--result", str(out), "--baseline", "gpt", "--candidate", "slm")
    assert bad.code == 2 and "'gpt'" in bad.err and "llm, slm" in bad.err
    none = cli("compare-models", "--result", str(files["dir"] / "nowhere"), "--baseline", "a", "--candidate", "b")
    assert none.code == 2 and "result.json" in none.err


def test_extended_flags_resolve_backends_by_name(cli, files, monkeypatch) -> None:
    import extracteval.core.similarity as sim

    asked = []

    class Fixed:
        name = "fixed"

        def similarity(self, a, b):
            return np.full(len(a), 0.9)

    def fake_get_similarity(name, **options):
        asked.append((name, options))
        return Fixed()

    monkeypatch.setattr(sim, "get_similarity", fake_get_similarity)
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['llm']}", "--semantic-similarity", "--llm-judge",
            "--similarity-option", "model=local-path", "--json")
    assert r.code == 0, r.err
    assert asked == [("embedding", {"model": "local-path"}), ("llm_judge", {"model": "local-path"})]
    m = r.json()["models"]["llm"]
    assert m["semantic_similarity_mean"] == pytest.approx(0.9) and m["judge_score_pass_rate"] == 1.0


@pytest.mark.parametrize("content,expected", [
    ('{"id": "a", "reference": {"x": 1}}\n{"id": "b", "reference": {"x": \n', "line 2"),
    ('{"reference": {"x": 1}}\n', 'no "id" key'),
    ('{"id": "a", "answer_json": {"x": 1}}\n', "no reference key"),
    ('{"id": "a", "reference": "{not json"}\n', "id a"),
])
def test_bad_truth_files_exit_2_naming_file_and_line(cli, files, content: str, expected: str) -> None:
    bad = files["dir"] / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    r = cli("score", "structured", "--truth", str(bad), "--predictions", f"llm={files['llm']}")
    assert r.code == 2 and "Traceback" not in r.err
    assert str(bad) in r.err and expected in r.err


def test_missing_prediction_file_and_duplicate_model(cli, files) -> None:
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['dir'] / 'nope.jsonl'}")
    assert r.code == 2 and "file not found" in r.err
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"m={files['llm']}", "--predictions", f"m={files['slm']}")
    assert r.code == 2 and "given twice" in r.err
    assert str(files["llm"]) in r.err and str(files["slm"]) in r.err  # both files named


def test_demo_runs_the_slm_vs_llm_example(cli) -> None:
    # printing only: logging both tracks to MLflow is tested in tests/tasks/structured/test_mlflow.py
    # (here it would write ./mlflow.db into the working directory)
    r = cli("demo", "--experiments", str(REPO / "experiments"), "--only", "slm-vs-llm", "--no-mlflow")
    assert r.code == 0, r.err
    assert "structured track" in r.out and "toolcalls track" in r.out
    assert r.out.count("Decision (") == 2 and "gpt-4o" in r.out and "qwen2.5-1.5b" in r.out


def test_example_data_is_what_the_generator_writes(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_data", REPO / "experiments" / "slm-vs-llm" / "make_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.HERE = tmp_path
    mod.main()
    for rel in ("structured/truth.jsonl", "structured/qwen2.5-1.5b.jsonl", "toolcalls/gpt-4o.jsonl", "toolcalls/llama-3.1-8b.jsonl"):
        assert (tmp_path / rel).read_text(encoding="utf-8") == (REPO / "experiments" / "slm-vs-llm" / rel).read_text(encoding="utf-8"), rel
    assert len((tmp_path / "toolcalls" / "truth.jsonl").read_text().splitlines()) >= 50


def test_missing_and_extra_ids_are_reported(cli, files) -> None:
    preds = write_jsonl(files["dir"] / "partial.jsonl", [{"id": "r1", "output": "{}"}, {"id": "zz9", "output": "{}"}])
    r = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"p={preds}")
    assert r.code == 0
    assert "no output for 19 record(s)" in r.out and "ids not in the truth (ignored), e.g. zz9" in r.out
    doc = cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"p={preds}", "--json").json()
    assert doc["models"]["p"]["extra_ids"] == ["zz9"] and len(doc["models"]["p"]["missing_ids"]) == 19
    assert doc["models"]["p"]["missing_ids"][:3] == ["r0", "r2", "r3"]  # natural id order


def test_compare_models_on_a_result_without_a_known_task_is_one_clear_error(cli, files) -> None:
    """A result.json that names no task (or one the decision does not know) is refused with exit 2 saying whose counts
    the decision reads; a metric of the other task is refused naming this task's metrics."""
    out = files["dir"] / "out"
    assert cli("score", "structured", "--truth", str(files["truth"]), "--predictions", f"llm={files['llm']}", "--predictions",
               f"slm={files['slm']}", "--output", str(out)).code == 0
    other = cli("compare-models", "--result", str(out), "--baseline", "llm", "--candidate", "slm", "--metric", "call_accuracy")
    assert other.code == 2 and "call_accuracy" in other.err and "field_f1" in other.err and "Traceback" not in other.err, other.err
    doc = json.loads((out / "result.json").read_text())
    doc.pop("task")
    (out / "result.json").write_text(json.dumps(doc))
    r = cli("compare-models", "--result", str(out), "--baseline", "llm", "--candidate", "slm", "--metric", "json_valid_rate")
    assert r.code == 2 and "structured or toolcalls" in r.err and "'None'" in r.err and "Traceback" not in r.err, r.err
