"""Irregular BFCL question / possible-answer entries: each shape BFCL's AST checker meets in the
official files is scored per entry by its rules and reported as a warning (file, line, id),
never a refusal of the whole file. Every case is a tiny hand-made file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extracteval.tasks.toolcalls.bfcl import answer_targets, check_entry, decode_result, score_bfcl
from extracteval.errors import InputError
from extracteval.tasks.toolcalls.inputs import load_bfcl_entries


def fn(name: str, props: dict | None = None, required: list | None = None) -> dict:
    return {"name": name, "parameters": {"type": "dict", "properties": props or {"x": {"type": "integer"}}, "required": required or []}}


def write(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def scored(tmp_path: Path, questions: list, answers: list, results: dict, **kw):
    files = load_bfcl_entries(write(tmp_path / "q.json", questions), write(tmp_path / "a.json", answers))
    score = score_bfcl(files.entries, results, **kw)
    return score, files.warnings


def kinds(warnings) -> list[tuple[str, int, str]]:
    return [(w.kind, w.line, w.id) for w in warnings]


def test_single_call_entry_is_checked_against_the_described_function(tmp_path: Path) -> None:
    # the possible answer says `find_closest`, the question describes `restaurant_search.find_closest`
    q = [{"id": "simple_0", "function": fn("restaurant_search.find_closest", {"city": {"type": "string"}}, ["city"])}]
    a = [{"id": "simple_0", "ground_truth": {"find_closest": {"city": ["Boston"]}}}]
    ok, w = scored(tmp_path, q, a, {"simple_0": "[restaurant_search.find_closest(city='boston')]"})
    assert ok.correct_count == 1
    assert kinds(w) == [("answer_names_other_function", 1, "simple_0")] and "q.json" not in w[0].file and w[0].file.endswith("a.json")
    bad, _ = scored(tmp_path, q, a, {"simple_0": "[find_closest(city='Boston')]"})
    assert bad.failures["simple_0"].error_type == "simple_function_checker:wrong_func_name"
    # v4 layout, same rule: a simple entry uses the first described function
    a4 = [{"id": "simple_0", "ground_truth": [{"find_closest": {"city": ["Boston"]}}]}]
    ok4, _ = scored(tmp_path, q, a4, {"simple_0": [{"restaurant_search.find_closest": '{"city": "Boston"}'}]})
    assert ok4.correct_count == 1


def test_parameter_map_that_is_not_an_object_cannot_be_matched(tmp_path: Path) -> None:
    q = [{"id": "parallel_multiple_function_0", "function": [fn("a.get"), fn("b.set", {"y": {"type": "integer"}})]}]
    a = [{"id": "parallel_multiple_function_0", "ground_truth": {"a.get": {"x": [1]}, "b.set": [{"y": [2]}]}}]
    score, w = scored(tmp_path, q, a, {"parallel_multiple_function_0": "[a.get(x=1), b.set(y=2)]"})
    assert score.failures["parallel_multiple_function_0"].error_type == "parallel_function_checker_no_order:cannot_find_match"
    assert kinds(w) == [("answer_shape", 1, "parallel_multiple_function_0")] and "not an object" in w[0].message
    # the rule in one call: any argument is unexpected; an empty list with no argument passes
    spec = fn("b.set", {"y": {"type": "integer"}})
    assert check_entry([spec], decode_result("[b.set(y=2)]"), [{"b.set": [{"y": [2]}]}], "simple").error_type == "simple_function_checker:unexpected_param"
    assert check_entry([spec], decode_result("[b.set()]"), [{"b.set": []}], "simple").valid
    assert check_entry([spec], decode_result("[b.set()]"), [{"b.set": [{"y": [2]}]}], "simple").error_type == "simple_function_checker:missing_optional"


def test_v1_lookup_takes_the_first_function_whose_name_is_inside_the_answer_key(tmp_path: Path) -> None:
    props = {"w": {"type": "integer"}, "h": {"type": "float"}}
    q = [{"id": "multiple_function_0", "function": [fn("calc", props), fn("calculate_bmi", props)]}]
    a = [{"id": "multiple_function_0", "ground_truth": {"calculate_bmi": {"w": [70], "h": [1.8]}}}]
    # BFCL's v1 lookup finds `calc` first ("calc" occurs in "calculate_bmi"): only a call to `calc` passes
    named, w = scored(tmp_path, q, a, {"multiple_function_0": "[calculate_bmi(w=70, h=1.8)]"})
    assert named.failures["multiple_function_0"].error_type == "parallel_function_checker_no_order:cannot_find_match"
    assert kinds(w) == [("answer_names_other_function", 1, "multiple_function_0")]
    first, _ = scored(tmp_path, q, a, {"multiple_function_0": "[calc(w=70, h=1.8)]"})
    assert first.correct_count == 1
    # v4 (list answers) looks names up exactly
    a4 = [{"id": "multiple_0", "ground_truth": [{"calculate_bmi": {"w": [70], "h": [1.8]}}]}]
    q4 = [{"id": "multiple_0", "function": q[0]["function"]}]
    exact, w4 = scored(tmp_path, q4, a4, {"multiple_0": "[calculate_bmi(w=70, h=1.8)]"})
    assert exact.correct_count == 1 and w4 == []


def test_answer_naming_an_undescribed_function_fails_that_entry_only(tmp_path: Path) -> None:
    q = [{"id": "parallel_multiple_function_0", "function": [fn("a.get")]}, {"id": "parallel_multiple_function_1", "function": [fn("a.get")]}]
    a = [{"id": "parallel_multiple_function_0", "ground_truth": {"zzz": {"x": [1]}}},
         {"id": "parallel_multiple_function_1", "ground_truth": {"a.get": {"x": [1]}}}]
    res = {"parallel_multiple_function_0": "[zzz(x=1)]", "parallel_multiple_function_1": "[a.get(x=1)]"}
    score, w = scored(tmp_path, q, a, res)
    assert score.failed_ids == ("parallel_multiple_function_0",) and score.correct_count == 1
    assert score.failures["parallel_multiple_function_0"].error_type == "parallel_function_checker_no_order:cannot_find_description"
    assert kinds(w) == [("unknown_function", 1, "parallel_multiple_function_0")]


def test_v1_parallel_function_with_one_described_function_is_looked_up_by_name(tmp_path: Path) -> None:
    q = [{"id": "parallel_function_0", "function": fn("spotify.play")}, {"id": "parallel_function_1", "function": fn("spotify.play")}]
    a = [{"id": "parallel_function_0", "ground_truth": {"spotify.play_1": {"x": [1]}, "spotify.play_2": {"x": [2]}}},
         {"id": "parallel_function_1", "ground_truth": {"play_1": {"x": [1]}}}]
    res = {"parallel_function_0": "[spotify.play(x=2), spotify.play(x=1)]", "parallel_function_1": "[spotify.play(x=1)]"}
    score, w = scored(tmp_path, q, a, res)
    assert score.failed_ids == ("parallel_function_1",)
    assert score.failures["parallel_function_1"].error_type == "parallel_function_checker_no_order:cannot_find_description"
    assert kinds(w) == [("unknown_function", 2, "parallel_function_1")]
    # in any other category one described object is the description, whatever the key
    assert answer_targets([fn("f")], ["other"], "multiple_function", layout="v1", function_was_object=True) == (0,)


def test_acceptable_values_that_are_not_a_list(tmp_path: Path) -> None:
    props = {"x": {"type": "integer"}, "unit": {"type": "string"}, "n": {"type": "integer"}}
    q = [{"id": f"simple_{i}", "function": fn("f", props, ["x"])} for i in range(4)]
    gt = {"f": {"x": [3], "unit": "cm", "n": [1, ""]}}
    a = [{"id": f"simple_{i}", "ground_truth": gt} for i in range(3)] + [{"id": "simple_3", "ground_truth": {"f": {"x": 3}}}]
    res = {"simple_0": "[f(x=3)]", "simple_1": "[f(x=3, unit='cm')]", "simple_2": "[f(x=3, unit='c')]", "simple_3": "[f(x=3)]"}
    score, w = scored(tmp_path, q, a, res)
    # a bare string is compared character by character, and may be left out; a bare number never matches
    assert score.failed_ids == ("simple_1", "simple_3")
    assert score.failures["simple_1"].error_type == "value_error:string"
    assert score.failures["simple_3"].error_type == "value_error:others"
    assert [k for k, _, _ in kinds(w)] == ["answer_shape"] * 4


def test_empty_possible_answer(tmp_path: Path) -> None:
    q = [{"id": "simple_0", "function": fn("f")}, {"id": "parallel_function_0", "function": fn("f")}, {"id": "parallel_function_1", "function": fn("f")}]
    a = [{"id": "simple_0", "ground_truth": {}}, {"id": "parallel_function_0", "ground_truth": {}}, {"id": "parallel_function_1", "ground_truth": {}}]
    score, w = scored(tmp_path, q, a, {"simple_0": "[f(x=1)]", "parallel_function_0": [], "parallel_function_1": "[f(x=1)]"})
    assert score.failed_ids == ("parallel_function_1", "simple_0")
    assert score.failures["simple_0"].error_type == "simple_function_checker:empty_possible_answer"
    assert [k for k, _, _ in kinds(w)] == ["empty_answer"] * 3


def test_irregular_function_descriptions_fail_the_calls_that_need_them(tmp_path: Path) -> None:
    q = [{"id": "simple_0", "function": fn("f", {"x": {"type": "number"}})},
         {"id": "simple_1", "function": {"name": "g"}},
         {"id": "simple_2", "function": {"name": "h", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}}}},
         {"id": "simple_3", "function": "not a description"}]
    a = [{"id": f"simple_{i}", "ground_truth": {n: {"x": [1]}}} for i, n in enumerate("fghk")]
    res = {"simple_0": "[f(x=1)]", "simple_1": "[g(x=1)]", "simple_2": "[h(x=1)]", "simple_3": "[k(x=1)]"}
    score, w = scored(tmp_path, q, a, res)
    assert score.failures["simple_0"].error_type == "type_error:unknown_type"
    assert score.failures["simple_1"].error_type == "simple_function_checker:unexpected_param"
    assert "simple_2" not in score.failures  # no "required" list: nothing is required
    assert score.failures["simple_3"].error_type == "simple_function_checker:cannot_find_description"
    assert sorted({(k, i) for k, _, i in kinds(w)}) == [("function_description", "simple_0"), ("function_description", "simple_1"),
                                                         ("function_description", "simple_3"), ("unknown_function", "simple_3")]


def test_ground_truth_of_another_shape_fails_the_entry(tmp_path: Path) -> None:
    q = [{"id": "parallel_0", "function": [fn("f")]}, {"id": "parallel_1", "function": [fn("f")]}]
    a = [{"id": "parallel_0", "ground_truth": "f(x=1)"}, {"id": "parallel_1", "ground_truth": [{"f": {"x": [1]}}, ["oops"]]}]
    score, w = scored(tmp_path, q, a, {"parallel_0": "[f(x=1)]", "parallel_1": "[f(x=1), f(x=2)]"})
    assert score.failed_ids == ("parallel_0", "parallel_1")
    assert [(k, i) for k, _, i in kinds(w)] == [("answer_shape", "parallel_0"), ("answer_shape", "parallel_1")]


def test_unpaired_and_repeated_records(tmp_path: Path) -> None:
    q = [{"id": "simple_0", "function": fn("f")}, {"id": "simple_1", "function": fn("f")}, {"id": "simple_0", "function": fn("g")}, ["junk"]]
    a = [{"id": "simple_0", "ground_truth": {"f": {"x": [1]}}}, {"id": "simple_9", "ground_truth": {"f": {"x": [1]}}}]
    score, w = scored(tmp_path, q, a, {"simple_0": "[f(x=1)]"})
    assert (score.total_count, score.correct_count) == (1, 1)  # the first simple_0 counts; simple_1 has no answer
    assert kinds(w) == [("repeated_id", 3, "simple_0"), ("record_without_id", 4, ""), ("question_without_answer", 2, "simple_1"),
                        ("answer_without_question", 2, "simple_9")]


def test_a_file_that_is_not_bfcl_data_is_refused(tmp_path: Path) -> None:
    q = write(tmp_path / "q.json", [{"id": "simple_0", "function": fn("f")}])
    a = write(tmp_path / "a.json", [{"id": "simple_0", "ground_truth": {"f": {"x": [1]}}}])
    results = write(tmp_path / "r.json", [{"id": "simple_0", "result": "[f(x=1)]"}])
    with pytest.raises(InputError, match="not a BFCL possible-answer file"):
        load_bfcl_entries(q, results)
    with pytest.raises(InputError, match="not a BFCL question file"):
        load_bfcl_entries(a, a)


def test_name_forms_are_counted_for_the_mangling_warning(tmp_path: Path) -> None:
    q = [{"id": f"simple_{i}", "function": fn("math.add")} for i in range(3)]
    a = [{"id": f"simple_{i}", "ground_truth": {"math.add": {"x": [i]}}} for i in range(3)]
    res = {f"simple_{i}": [{"math_add": json.dumps({"x": i})}] for i in range(3)}
    plain, _ = scored(tmp_path, q, a, res)
    assert (plain.correct_count, plain.underscored_name_entries, plain.dotted_name_entries) == (0, 3, 0)
    mangled, _ = scored(tmp_path, q, a, res, underscore_to_dot=True)
    assert mangled.correct_count == 3 and mangled.to_dict()["underscore_to_dot"] is True


def test_early_release_layout_index_ids_and_answers_without_ids(tmp_path: Path) -> None:
    """Early BFCL releases name the id `index` and write possible answers without ids, one per
    line in the order of the questions: scored as the id-bearing files are, with one warning."""
    q_ids = [{"id": f"simple_{i}", "function": fn("f")} for i in range(3)]
    a_ids = [{"id": f"simple_{i}", "ground_truth": {"f": {"x": [i]}}} for i in range(3)]
    results = {"simple_0": "[f(x=0)]", "simple_1": "[f(x=5)]", "simple_2": "[f(x=2)]"}
    with_ids, w_ids = scored(tmp_path, q_ids, a_ids, results)
    q_index = [{"index": f"simple_{i}", "function": fn("f")} for i in range(3)]
    a_bare = [{"f": {"x": [i]}} for i in range(3)]
    early, w = scored(tmp_path, q_index, a_bare, results)
    assert (early.correct_count, early.total_count) == (with_ids.correct_count, with_ids.total_count) == (2, 3)
    assert sorted(early.failures) == sorted(with_ids.failures) == ["simple_1"]
    assert kinds(w) == [("answers_by_position", 1, "")] and w_ids == []
    # an extra bare answer has no question at its position: ignored with a warning
    _, w = scored(tmp_path, q_index, [*a_bare, {"f": {"x": [9]}}], results)
    assert ("answer_without_question", 4, "") in kinds(w)
    # a results file given as answers is still refused, not paired by position
    with pytest.raises(InputError, match="not a BFCL possible-answer file"):
        load_bfcl_entries(write(tmp_path / "q2.json", q_index), write(tmp_path / "r2.json", [{"result": "[f(x=0)]"}] * 3))
