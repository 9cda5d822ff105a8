"""BFCL agreement bar: our checker reproduces the official BFCL AST checker's published scores.

Reference data (../shared/data/toolcalls): BFCL v4 questions and possible answers, a third-party
model's raw results and the score files the official checker wrote for them (accuracy line, then
one line per FAILED entry). Also the older v1 layout sample.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from extracteval.cli import main
from extracteval.tasks.toolcalls.bfcl import BfclEntry, category_of, check_entry, decode_result, entry_sort_key, score_bfcl
from extracteval.tasks.toolcalls.inputs import load_bfcl_answers, load_bfcl_questions, load_bfcl_results

V4_CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple"]
SUBMISSION = "third_party_submission_glyphh-ada-1.1"


def _v4(shared: Path, cat: str):
    root = shared / "toolcalls" / "bfcl_v4"
    q = load_bfcl_questions(root / f"BFCL_v4_{cat}.json")
    a = load_bfcl_answers(root / "possible_answer" / f"BFCL_v4_{cat}.json", q)
    r = load_bfcl_results(root / SUBMISSION / "result" / f"BFCL_v4_{cat}_result.json")
    lines = (root / SUBMISSION / "score" / f"BFCL_v4_{cat}_score.json").read_text(encoding="utf-8").splitlines()
    summary = json.loads(lines[0])
    failed = [json.loads(line) for line in lines[1:] if line.strip()]
    entries = [BfclEntry(id=i, category=q[i].category, functions=q[i].functions, answers=a[i]) for i in q]
    return entries, r, summary, failed


@pytest.mark.parametrize("cat", V4_CATEGORIES)
def test_v4_reproduces_published_accuracy_and_failed_ids(shared_data: Path, cat: str) -> None:
    entries, results, summary, failed = _v4(shared_data, cat)
    score = score_bfcl(entries, results, model="glyphh-ada-1.1")
    assert score.correct_count == summary["correct_count"]
    assert score.total_count == summary["total_count"]
    assert score.call_accuracy == summary["accuracy"]
    expected_ids = sorted((f["id"] for f in failed), key=entry_sort_key)
    assert list(score.failed_ids) == expected_ids
    assert score.categories[cat].failed_ids == tuple(expected_ids)


@pytest.mark.parametrize("cat", V4_CATEGORIES)
def test_v4_error_types_agree_with_the_official_checker(shared_data: Path, cat: str) -> None:
    entries, results, _, failed = _v4(shared_data, cat)
    score = score_bfcl(entries, results)
    assert {i: v.error_type for i, v in score.failures.items()} == {f["id"]: f["error_type"] for f in failed}


def test_v4_verdicts_do_not_depend_on_result_order(shared_data: Path) -> None:
    entries, results, summary, failed = _v4(shared_data, "parallel_multiple")
    items = list(results.items())
    random.Random(7).shuffle(items)
    shuffled_entries = list(entries)
    random.Random(8).shuffle(shuffled_entries)
    score = score_bfcl(shuffled_entries, dict(items))
    assert list(score.failed_ids) == sorted((f["id"] for f in failed), key=entry_sort_key)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_cli_bfcl_json_has_the_issue_keys_for_all_four_categories(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_data / "toolcalls" / "bfcl_v4"
    argv = ["score", "toolcalls", "--checker", "bfcl", "--json"]
    for cat in V4_CATEGORIES:
        argv += ["--questions", str(root / f"BFCL_v4_{cat}.json"), "--truth", str(root / "possible_answer" / f"BFCL_v4_{cat}.json"),
                 "--predictions", f"glyphh={root / SUBMISSION / 'result' / f'BFCL_v4_{cat}_result.json'}"]
    m = _cli(capsys, *argv)["models"]["glyphh"]
    all_failed = []
    for cat in V4_CATEGORIES:
        lines = (root / SUBMISSION / "score" / f"BFCL_v4_{cat}_score.json").read_text(encoding="utf-8").splitlines()
        summary = json.loads(lines[0])
        ids = sorted((json.loads(line)["id"] for line in lines[1:] if line.strip()), key=entry_sort_key)
        c = m["categories"][cat]
        assert (c["accuracy"], c["correct_count"], c["total_count"], c["failed_ids"]) == (summary["accuracy"], summary["correct_count"], summary["total_count"], ids)
        all_failed += ids
    assert m["failed_ids"] == sorted(all_failed, key=entry_sort_key)
    assert m["total_count"] == 1000 and m["correct_count"] == 1000 - len(all_failed)
    assert m["call_accuracy"] == m["correct_count"] / 1000


def test_cli_bfcl_single_category_matches_issue_example(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_data / "toolcalls" / "bfcl_v4"
    doc = _cli(capsys, "score", "toolcalls", "--checker", "bfcl", "--questions", str(root / "BFCL_v4_multiple.json"),
              "--truth", str(root / "possible_answer" / "BFCL_v4_multiple.json"),
              "--predictions", f"m={root / SUBMISSION / 'result' / 'BFCL_v4_multiple_result.json'}", "--json")
    m = doc["models"]["m"]
    assert (m["call_accuracy"], m["correct_count"], m["total_count"]) == (0.945, 189, 200)
    assert m["failed_ids"] == ["multiple_7", "multiple_53", "multiple_58", "multiple_76", "multiple_91", "multiple_132",
                               "multiple_136", "multiple_138", "multiple_168", "multiple_190", "multiple_193"]


# --------------------------------------------------------------------------------------------
# v1 layout: no published results, so we build results from the possible answers themselves


def _first_acceptable(values: list, required: bool) -> tuple[bool, object]:
    """The first acceptable value; optional parameters ("" among the values) are left out unless
    the spec requires them (the v1 data has such contradictions, e.g. simple_17)."""
    if "" in values and not required:
        return False, None
    v = next(x for x in values if x != "")
    if isinstance(v, dict):  # a dict parameter: its keys carry lists of acceptable values too
        v = {k: vs[0] for k, vs in v.items() if "" not in vs}
    return True, v


def _perfect_result(answers: list[dict], specs: list[dict]) -> list[dict]:
    out = []
    for item in answers:
        name, params = next(iter(item.items()))
        spec = next(f for f in specs if f["name"] == name)
        required = set(spec["parameters"].get("required", []))
        args = {}
        for p, values in params.items():
            present, v = _first_acceptable(values, p in required)
            if present:
                args[p] = v
        out.append({name: json.dumps(args)})
    return out


V1 = ["simple", "multiple_function", "parallel_function", "parallel_multiple_function"]


@pytest.mark.parametrize("cat", V1)
def test_v1_layout_reads_and_a_perfect_result_passes_in_any_call_order(shared_data: Path, cat: str) -> None:
    root = shared_data / "toolcalls" / "bfcl_v1_sample"
    q = load_bfcl_questions(root / f"{cat}.json")
    a = load_bfcl_answers(root / "possible_answer" / f"{cat}.json", q)
    assert len(q) == len(a) == 25
    rng = random.Random(1)
    for rid, question in q.items():
        assert question.category == category_of(rid) == cat
        names = {f["name"] for f in question.functions}
        assert all(next(iter(item)) in names for item in a[rid])  # suffixes like "spotify.play_1" are stripped
        result = _perfect_result(a[rid], question.functions)
        rng.shuffle(result)
        verdict = check_entry(question.functions, decode_result(result), a[rid], question.category, entry_id=rid)
        assert verdict.valid, (rid, verdict)


def test_v1_parallel_answer_suffixes_map_to_function_names(shared_data: Path) -> None:
    root = shared_data / "toolcalls" / "bfcl_v1_sample"
    q = load_bfcl_questions(root / "parallel_function.json")
    a = load_bfcl_answers(root / "possible_answer" / "parallel_function.json", q)
    assert [next(iter(x)) for x in a["parallel_function_0"]] == ["spotify.play", "spotify.play"]
    raw = json.loads((root / "possible_answer" / "parallel_function.json").read_text(encoding="utf-8").splitlines()[0])
    assert list(raw["ground_truth"]) == ["spotify.play_1", "spotify.play_2"]


def test_v1_wrong_values_fail_with_bfcl_error_types(shared_data: Path) -> None:
    root = shared_data / "toolcalls" / "bfcl_v1_sample"
    q = load_bfcl_questions(root / "simple.json")
    a = load_bfcl_answers(root / "possible_answer" / "simple.json", q)
    # simple_0: calculate_triangle_area(base=10, height=5, unit optional)
    bad = [{"calculate_triangle_area": json.dumps({"base": 11, "height": 5})}]
    v = check_entry(q["simple_0"].functions, decode_result(bad), a["simple_0"], "simple", entry_id="simple_0")
    assert (v.valid, v.error_type) == (False, "value_error:others")
    python_style = "[calculate_triangle_area(base=10, height=5)]"
    assert check_entry(q["simple_0"].functions, decode_result(python_style), a["simple_0"], "simple").valid


def _v1_argv(root: Path, folder: Path, alter) -> list[str]:
    """`score toolcalls --checker bfcl` on the four v1 categories with a result file per category:
    each entry's perfect result passed through `alter(id, result)` (None: no result)."""
    argv = ["score", "toolcalls", "--checker", "bfcl", "--json"]
    for cat in V1:
        q = load_bfcl_questions(root / f"{cat}.json")
        a = load_bfcl_answers(root / "possible_answer" / f"{cat}.json", q)
        rows = [{"id": rid, "result": r} for rid in q if (r := alter(rid, _perfect_result(a[rid], q[rid].functions))) is not None]
        res = folder / f"{cat}_result.json"
        res.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        argv += ["--questions", str(root / f"{cat}.json"), "--truth", str(root / "possible_answer" / f"{cat}.json"), "--predictions", f"m={res}"]
    return argv


def test_cli_reads_the_v1_layout_for_all_four_categories(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = {"simple_3", "parallel_function_7"}
    argv = _v1_argv(shared_data / "toolcalls" / "bfcl_v1_sample", tmp_path, lambda rid, result: result[:-1] if rid in broken else result)
    m = _cli(capsys, *argv)["models"]["m"]
    assert (m["total_count"], m["correct_count"]) == (100, 98)
    assert m["failed_ids"] == ["parallel_function_7", "simple_3"]
    assert m["error_types"] == {"parallel_function_checker_no_order:wrong_count": 1, "simple_function_checker:wrong_count": 1}


# --------------------------------------------------------------------------------------------
# the v1 sample extended by hand-made irregular entries: every category scores, each verdict is
# the one BFCL's rules give (worked out by hand next to each entry)

_PROPS = {"w": {"type": "integer"}, "h": {"type": "float"}}
_EXTRA = {
    "simple": [
        # the answer names `find_closest`; the question describes `restaurant_search.find_closest`:
        # checked against the described function, so the described name passes
        ({"id": "simple_900", "function": {"name": "restaurant_search.find_closest", "parameters": {"type": "dict",
          "properties": {"location": {"type": "string"}}, "required": ["location"]}}},
         {"id": "simple_900", "ground_truth": {"find_closest": {"location": ["Boston, MA"]}}},
         "[restaurant_search.find_closest(location='boston ma')]", True),
        # acceptable values given as a bare string: compared character by character
        ({"id": "simple_901", "function": {"name": "f", "parameters": {"type": "dict", "properties": {"u": {"type": "string"}}, "required": []}}},
         {"id": "simple_901", "ground_truth": {"f": {"u": "cm"}}}, "[f(u='cm')]", False),
        # an empty possible answer: a single-call entry cannot pass
        ({"id": "simple_902", "function": {"name": "f", "parameters": {"type": "dict", "properties": {}, "required": []}}},
         {"id": "simple_902", "ground_truth": {}}, "[f()]", False),
    ],
    "multiple_function": [
        # v1 lookup: the first function whose name occurs in the key `calculate_bmi` is `calc`
        ({"id": "multiple_function_900", "function": [{"name": "calc", "parameters": {"type": "dict", "properties": _PROPS, "required": []}},
                                                      {"name": "calculate_bmi", "parameters": {"type": "dict", "properties": _PROPS, "required": []}}]},
         {"id": "multiple_function_900", "ground_truth": {"calculate_bmi": {"w": [70], "h": [1.8]}}}, "[calculate_bmi(w=70, h=1.8)]", False),
        ({"id": "multiple_function_901", "function": [{"name": "calc", "parameters": {"type": "dict", "properties": _PROPS, "required": []}},
                                                      {"name": "calculate_bmi", "parameters": {"type": "dict", "properties": _PROPS, "required": []}}]},
         {"id": "multiple_function_901", "ground_truth": {"calculate_bmi": {"w": [70], "h": [1.8]}}}, "[calc(w=70, h=1.8)]", True),
    ],
    "parallel_function": [
        # one described function; the keys do not contain its name: no description is found
        ({"id": "parallel_function_900", "function": {"name": "spotify.play", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": []}}},
         {"id": "parallel_function_900", "ground_truth": {"play_1": {"x": [1]}, "play_2": {"x": [2]}}}, "[spotify.play(x=1), spotify.play(x=2)]", False),
    ],
    "parallel_multiple_function": [
        # one expected call's parameter map is a list: that call cannot be matched
        ({"id": "parallel_multiple_function_900", "function": [
            {"name": "a.get", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": []}},
            {"name": "b.set", "parameters": {"type": "dict", "properties": {"y": {"type": "integer"}}, "required": []}}]},
         {"id": "parallel_multiple_function_900", "ground_truth": {"a.get": {"x": [1]}, "b.set": [{"y": [2]}]}}, "[a.get(x=1), b.set(y=2)]", False),
        # the answer names a function the question does not describe
        ({"id": "parallel_multiple_function_901", "function": [
            {"name": "a.get", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": []}}]},
         {"id": "parallel_multiple_function_901", "ground_truth": {"zzz.get": {"x": [1]}}}, "[zzz.get(x=1)]", False),
    ],
}


def test_v1_sample_extended_with_irregular_entries_scores_every_category(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_data / "toolcalls" / "bfcl_v1_sample"
    argv = ["score", "toolcalls", "--checker", "bfcl", "--json"]
    expected_failed: list[str] = []
    for cat in V1:
        q = load_bfcl_questions(root / f"{cat}.json")
        a = load_bfcl_answers(root / "possible_answer" / f"{cat}.json", q)
        qf, af, rf = tmp_path / f"{cat}.json", tmp_path / f"pa_{cat}.json", tmp_path / f"res_{cat}.json"
        qf.write_text((root / f"{cat}.json").read_text(encoding="utf-8").rstrip("\n") + "\n"
                      + "".join(json.dumps(x[0]) + "\n" for x in _EXTRA[cat]), encoding="utf-8")
        af.write_text((root / "possible_answer" / f"{cat}.json").read_text(encoding="utf-8").rstrip("\n") + "\n"
                      + "".join(json.dumps(x[1]) + "\n" for x in _EXTRA[cat]), encoding="utf-8")
        rows = [{"id": rid, "result": _perfect_result(a[rid], q[rid].functions)} for rid in q]
        rows += [{"id": x[0]["id"], "result": x[2]} for x in _EXTRA[cat]]
        rf.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        expected_failed += [x[0]["id"] for x in _EXTRA[cat] if not x[3]]
        argv += ["--questions", str(qf), "--truth", str(af), "--predictions", f"m={rf}"]
    doc = _cli(capsys, *argv)
    m = doc["models"]["m"]
    n_extra = sum(len(v) for v in _EXTRA.values())
    assert m["total_count"] == 100 + n_extra
    assert m["failed_ids"] == sorted(expected_failed, key=entry_sort_key)
    assert set(m["categories"]) == set(V1)
    assert m["failures"]["parallel_function_900"]["error_type"] == "parallel_function_checker_no_order:cannot_find_description"
    assert m["failures"]["parallel_multiple_function_900"]["error_type"] == "parallel_function_checker_no_order:cannot_find_match"
    assert m["failures"]["multiple_function_900"]["error_type"] == "parallel_function_checker_no_order:cannot_find_match"
    # every hand-made irregular entry is listed with its file, line and id; the sample itself is regular
    flagged = {w["id"] for w in doc["warnings"]}
    assert flagged == {x[0]["id"] for v in _EXTRA.values() for x in v}
    for w in doc["warnings"]:
        cat = category_of(w["id"])
        assert w["file"] == str(tmp_path / f"pa_{cat}.json") and w["line"] == 25 + 1 + [x[0]["id"] for x in _EXTRA[cat]].index(w["id"])
    assert sum(doc["warning_counts"].values()) == len(doc["warnings"])


# --------------------------------------------------------------------------------------------
# the chunked engine (--chunk-size / --workers) gives the in-memory document, byte for byte


def _v4_argv(root: Path) -> list[str]:
    argv = ["score", "toolcalls", "--checker", "bfcl", "--json"]
    for cat in V4_CATEGORIES:
        argv += ["--questions", str(root / f"BFCL_v4_{cat}.json"), "--truth", str(root / "possible_answer" / f"BFCL_v4_{cat}.json"),
                 "--predictions", f"glyphh={root / SUBMISSION / 'result' / f'BFCL_v4_{cat}_result.json'}"]
    return argv


@pytest.mark.parametrize("chunking", [["--chunk-size", "1"], ["--chunk-size", "2"], ["--chunk-size", "3"], ["--chunk-size", "7"],
                                      ["--chunk-size", "1000"], ["--chunk-size", "50", "--workers", "2"]])
def test_v4_chunked_equals_in_memory_and_the_published_scores(shared_data: Path, capsys: pytest.CaptureFixture[str], chunking: list[str]) -> None:
    root = shared_data / "toolcalls" / "bfcl_v4"
    want = _cli(capsys, *_v4_argv(root))
    got = _cli(capsys, *_v4_argv(root), *chunking)
    assert json.dumps(got) == json.dumps(want)
    for cat in V4_CATEGORIES:
        lines = (root / SUBMISSION / "score" / f"BFCL_v4_{cat}_score.json").read_text(encoding="utf-8").splitlines()
        c = got["models"]["glyphh"]["categories"][cat]
        assert (c["accuracy"], c["failed_ids"]) == (json.loads(lines[0])["accuracy"],
                                                   sorted((json.loads(x)["id"] for x in lines[1:] if x.strip()), key=entry_sort_key))


def test_v1_chunked_equals_in_memory(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(3)

    def alter(rid: str, result: list) -> list | None:  # some wrong, some missing: failures of several kinds
        if rng.random() < 0.3:
            result = result[:-1] if len(result) > 1 else [{next(iter(result[0])): "{}"}]
        return result if rng.random() > 0.1 else None

    argv = _v1_argv(shared_data / "toolcalls" / "bfcl_v1_sample", tmp_path, alter)
    want = _cli(capsys, *argv)
    assert 0 < want["models"]["m"]["correct_count"] < want["models"]["m"]["total_count"] == 100
    for chunking in (["--chunk-size", "1"], ["--chunk-size", "7"], ["--chunk-size", "1000"], ["--chunk-size", "3", "--workers", "2"]):
        assert json.dumps(_cli(capsys, *argv, *chunking)) == json.dumps(want), chunking
