"""End-to-end: `extracteval score toolcalls`, generic and BFCL checkers (self-contained data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def generic(tmp_path: Path) -> dict[str, Path]:
    truth = write_jsonl(tmp_path / "truth.jsonl", [
        {"id": "1", "calls": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "2", "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "get_time", "arguments": {"tz": "CET"}}]},
        {"id": "3", "calls": {"name": "book", "arguments": {"seats": 2}}},
    ])
    good = write_jsonl(tmp_path / "good.jsonl", [
        {"id": "1", "output": {"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}},
        {"id": "2", "output": '[get_time(tz="CET"), get_weather(city="Oslo")]'},
        {"id": "3", "output": "```json\n{\"name\": \"book\", \"arguments\": {\"seats\": 2}}\n```"},
    ])
    bad = write_jsonl(tmp_path / "bad.jsonl", [
        {"id": "1", "output": '{"name": "get_weather", "arguments": "{\\"city\\": "}'},
        {"id": "2", "output": '[get_weather(city="Oslo")]'},
        {"id": "3", "output": '{"name": "book", "arguments": {"seats": "2"}}'},
    ])
    return {"truth": truth, "good": good, "bad": bad, "dir": tmp_path}


def test_generic_json_keys(cli, generic) -> None:
    r = cli("score", "toolcalls", "--truth", str(generic["truth"]), "--predictions", f"good={generic['good']}", "--predictions", f"bad={generic['bad']}", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["checker"] == "generic" and doc["ranking"] == ["good", "bad"]
    g, b = doc["models"]["good"], doc["models"]["bad"]
    for key in ("valid_call_rate", "name_match_rate", "args_exact_rate", "args_precision", "args_recall", "args_f1", "call_accuracy", "correct_count", "total_count", "failed_ids"):
        assert key in g
    assert (g["call_accuracy"], g["correct_count"], g["total_count"], g["failed_ids"]) == (1.0, 3, 3, [])
    assert b["valid_call_rate"] == pytest.approx(2 / 3)
    assert b["name_match_rate"] == pytest.approx(3 / 4)
    assert b["args_exact_rate"] == pytest.approx(1 / 4)
    assert b["failed_ids"] == ["1", "2", "3"]
    assert b["counts"]["invalid_calls"] == 1


def test_generic_table_progress_and_decision(cli, generic) -> None:
    r = cli("score", "toolcalls", "--truth", str(generic["truth"]), "--predictions", f"good={generic['good']}", "--predictions", f"bad={generic['bad']}",
            "--baseline", "good", "--candidate", "bad", "--progress", "always", "--resamples", "100")
    assert r.code == 0, r.err
    assert "Call acc." in r.out and "Decision (call_accuracy)" in r.out and "fine-tuning recommended" in r.out
    assert "[3/3] toolcalls bad valid_call_rate=66.7% call_accuracy=0.0%" in r.err


def test_generic_possible_answer_truth_is_detected(cli, generic) -> None:
    truth = write_jsonl(generic["dir"] / "pa.jsonl", [{"id": "1", "ground_truth": [{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}}]}])
    preds = write_jsonl(generic["dir"] / "p.jsonl", [{"id": "1", "output": [{"get_weather": "{\"city\": \"Paris, France\"}"}]}])
    r = cli("score", "toolcalls", "--truth", str(truth), "--predictions", f"m={preds}", "--json")
    assert r.code == 0, r.err
    assert r.json()["models"]["m"]["call_accuracy"] == 1.0


def _bfcl_files(d: Path) -> dict[str, Path]:
    fn = {"name": "calc.area", "parameters": {"type": "dict", "properties": {"base": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["base"]}}
    q = write_jsonl(d / "BFCL_v4_simple_python.json", [{"id": f"simple_python_{i}", "question": [[{"role": "user", "content": "?"}]], "function": [fn]} for i in range(3)])
    a = write_jsonl(d / "pa.json", [{"id": f"simple_python_{i}", "ground_truth": [{"calc.area": {"base": [i], "unit": ["cm", ""]}}]} for i in range(3)])
    r = write_jsonl(d / "res.json", [
        {"id": "simple_python_2", "result": [{"calc.area": "{\"base\": 2, \"unit\": \"CM\"}"}]},
        {"id": "simple_python_0", "result": "[calc.area(base=0)]"},
        {"id": "simple_python_1", "result": [{"calc.area": "{\"base\": \"1\"}"}]},
    ])
    return {"q": q, "a": a, "r": r}


def test_bfcl_checker_on_hand_made_files(cli, tmp_path) -> None:
    f = _bfcl_files(tmp_path)
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={f['r']}", "--json")
    assert r.code == 0, r.err
    m = r.json()["models"]["m"]
    assert (m["call_accuracy"], m["correct_count"], m["total_count"], m["failed_ids"]) == (2 / 3, 2, 3, ["simple_python_1"])
    assert m["failures"]["simple_python_1"]["error_type"] == "type_error:simple"
    text = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={f['r']}")
    assert "66.7%" in text.out and "simple_python_1" in text.out


def test_bfcl_missing_result_counts_as_failed(cli, tmp_path) -> None:
    f = _bfcl_files(tmp_path)
    partial = write_jsonl(tmp_path / "partial.json", [{"id": "simple_python_0", "result": "[calc.area(base=0)]"}])
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={partial}", "--json")
    m = r.json()["models"]["m"]
    assert m["missing_ids"] == ["simple_python_1", "simple_python_2"] and m["correct_count"] == 1


@pytest.mark.parametrize("extra,expected", [
    ([], "needs --questions"),
    (["--questions", "Q", "--questions", "Q"], "pairs --questions and --truth"),
])
def test_bfcl_usage_errors(cli, tmp_path, extra, expected) -> None:
    f = _bfcl_files(tmp_path)
    extra = [str(f["q"]) if x == "Q" else x for x in extra]
    r = cli("score", "toolcalls", "--checker", "bfcl", "--truth", str(f["a"]), "--predictions", f"m={f['r']}", *extra)
    assert r.code == 2 and expected in r.err


def test_bfcl_bad_inputs_name_file_and_line(cli, tmp_path) -> None:
    f = _bfcl_files(tmp_path)
    broken = tmp_path / "broken_pa.json"
    broken.write_text('{"id": "simple_python_0", "ground_truth": [{"calc.area": {"base": 0}}]}\n', encoding="utf-8")
    # an irregular entry is scored as BFCL scores it, and reported with file, line and id
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(broken), "--predictions", f"m={f['r']}", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["models"]["m"]["failures"] == {"simple_python_0": {"error_type": "value_error:others", "error": doc["models"]["m"]["failures"]["simple_python_0"]["error"]}}
    shape = [w for w in doc["warnings"] if w["kind"] == "answer_shape"]
    assert [(w["file"], w["line"], w["id"]) for w in shape] == [(str(broken), 1, "simple_python_0")]
    assert doc["warning_counts"] == {"answer_shape": 1, "question_without_answer": 2} and doc["n_records"] == 1
    text = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(broken), "--predictions", f"m={f['r']}").out
    assert "warnings: 3 — answer_shape 1, question_without_answer 2" in text and f"{broken}: line 1 (id simple_python_0)" in text
    # only a file that is not BFCL data at all is refused
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["r"]), "--predictions", f"m={f['r']}")
    assert r.code == 2 and str(f["r"]) in r.err and "not a BFCL possible-answer file" in r.err and "Traceback" not in r.err
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["a"]), "--truth", str(f["a"]), "--predictions", f"m={f['r']}")
    assert r.code == 2 and "not a BFCL question file" in r.err
    stray = write_jsonl(tmp_path / "stray.json", [{"id": "simple_python_99", "result": []}])
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={stray}")
    assert r.code == 2 and "simple_python_99" in r.err
    nores = write_jsonl(tmp_path / "nores.json", [{"id": "simple_python_0", "answer": []}])
    r = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={nores}")
    assert r.code == 2 and 'no "result" key' in r.err


def test_generic_bad_truth_exit_2(cli, generic) -> None:
    bad = write_jsonl(generic["dir"] / "t.jsonl", [{"id": "9", "calls": {"name": "f", "arguments": "{oops"}}])
    r = cli("score", "toolcalls", "--truth", str(bad), "--predictions", f"m={generic['good']}")
    assert r.code == 2 and "reference 9" in r.err and "Traceback" not in r.err
    r = cli("score", "toolcalls", "--truth", str(generic["truth"]), "--questions", "q.json", "--predictions", f"m={generic['good']}")
    assert r.code == 2 and "--checker bfcl" in r.err


def test_help_lists_both_tasks_and_compare_models(cli) -> None:
    r = cli("score", "--help")
    assert "structured" in r.out and "toolcalls" in r.out
    r = cli("--help")
    assert "compare-models" in r.out


def test_bfcl_output_also_carries_the_generic_view(cli, tmp_path) -> None:
    f = _bfcl_files(tmp_path)
    m = cli("score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]), "--predictions", f"m={f['r']}", "--json").json()["models"]["m"]
    g = m["generic"]
    # simple_python_2 passes BFCL ("CM" normalises to "cm") but is not an exact value generically
    assert g["call_accuracy"] == pytest.approx(1 / 3) and g["valid_call_rate"] == 1.0 and g["name_match_rate"] == 1.0


def _mangling_files(d: Path) -> dict[str, Path]:
    fn = {"name": "calc.area", "parameters": {"type": "dict", "properties": {"base": {"type": "integer"}}, "required": ["base"]}}
    q = write_jsonl(d / "q.json", [{"id": f"simple_{i}", "function": fn} for i in range(3)])
    a = write_jsonl(d / "a.json", [{"id": f"simple_{i}", "ground_truth": {"calc.area": {"base": [i]}}} for i in range(3)])
    fc = write_jsonl(d / "fc.json", [{"id": f"simple_{i}", "result": [{"calc_area": json.dumps({"base": i})}]} for i in range(3)])
    prompt = write_jsonl(d / "prompt.json", [{"id": f"simple_{i}", "result": f"[calc.area(base={i})]"} for i in range(3)])
    return {"q": q, "a": a, "fc": fc, "prompt": prompt}


def test_bfcl_name_mangling_per_model_in_one_run(cli, tmp_path) -> None:
    f = _mangling_files(tmp_path)
    base = ["score", "toolcalls", "--checker", "bfcl", "--questions", str(f["q"]), "--truth", str(f["a"]),
            "--predictions", f"fc={f['fc']}", "--predictions", f"prompt={f['prompt']}"]
    r = cli(*base, "--underscore-to-dot", "fc", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["config"]["underscore_to_dot"] == ["fc"]
    assert {m: (d["call_accuracy"], d["underscore_to_dot"]) for m, d in doc["models"].items()} == {"fc": (1.0, True), "prompt": (1.0, False)}
    assert [w for w in doc["warnings"] if w["kind"] == "name_mangling"] == []
    # forgetting the option: the function-calling model fails, and a warning names the model and the option
    r = cli(*base, "--json")
    doc = r.json()
    assert doc["models"]["fc"]["call_accuracy"] == 0.0 and doc["models"]["prompt"]["call_accuracy"] == 1.0
    (w,) = [w for w in doc["warnings"] if w["kind"] == "name_mangling"]
    assert w["model"] == "fc" and "--underscore-to-dot fc" in w["message"] and "3 entries" in w["message"]
    assert "--underscore-to-dot fc" in cli(*base).out
    # the run-wide form still applies to every model (and now warns about the prompt model)
    doc = cli(*base, "--underscore-to-dot", "--json").json()
    assert doc["config"]["underscore_to_dot"] == ["fc", "prompt"] and doc["models"]["prompt"]["call_accuracy"] == 0.0
    assert [w["model"] for w in doc["warnings"] if w["kind"] == "name_mangling"] == ["prompt"]
    r = cli(*base, "--underscore-to-dot", "nobody")
    assert r.code == 2 and "--underscore-to-dot nobody" in r.err and "fc, prompt" in r.err and "Traceback" not in r.err
