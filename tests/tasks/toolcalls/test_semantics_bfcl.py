"""Hand-made cases for the BFCL-compatible checker: one test per documented rule."""

from __future__ import annotations

import json

from extracteval.tasks.toolcalls.bfcl import check_entry, decode_result, normalize_text, parse_python_calls

SPEC = [
    {
        "name": "weather.get",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string"},
                "ratio": {"type": "float"},
                "tags": {"type": "array", "items": {"type": "float"}},
                "detailed": {"type": "boolean"},
                "opts": {"type": "dict"},
            },
            "required": ["city", "days"],
        },
    },
    {"name": "time.now", "parameters": {"type": "dict", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}},
]
ANSWER = [{"weather.get": {"city": ["New York", "NYC"], "days": [3], "unit": ["celsius", ""], "ratio": [0.5, ""], "tags": [[1.0, 2.0], ""],
                           "detailed": [True, ""], "opts": [{"lang": ["en"], "region": ["", "us"]}, ""]}}]


def verdict(call: dict, *, category: str = "simple", answer=ANSWER, **kw):
    return check_entry(SPEC, decode_result([{k: json.dumps(v)} for k, v in call.items()]), answer, category, **kw)


def test_correct_call_passes() -> None:
    assert verdict({"weather.get": {"city": "New York", "days": 3}}).valid


def test_name_mismatch() -> None:
    v = verdict({"weather.fetch": {"city": "New York", "days": 3}})
    assert (v.valid, v.error_type) == (False, "simple_function_checker:wrong_func_name")


def test_dot_to_underscore_name_mangling() -> None:
    call = [{"weather_get": json.dumps({"city": "NYC", "days": 3})}]
    assert not check_entry(SPEC, decode_result(call), ANSWER, "simple").valid
    assert check_entry(SPEC, decode_result(call), ANSWER, "simple", underscore_to_dot=True).valid


def test_missing_required_argument() -> None:
    v = verdict({"weather.get": {"city": "New York"}})
    assert v.error_type == "simple_function_checker:missing_required"


def test_extra_argument_not_in_spec_or_answer() -> None:
    v = verdict({"weather.get": {"city": "New York", "days": 3, "hourly": True}})
    assert v.error_type == "simple_function_checker:unexpected_param"


def test_wrong_type_integer_given_as_string() -> None:
    v = verdict({"weather.get": {"city": "New York", "days": "3"}})
    assert v.error_type == "type_error:simple"


def test_bool_is_not_an_integer() -> None:
    assert verdict({"weather.get": {"city": "NYC", "days": True}}).error_type == "type_error:simple"


def test_int_accepted_for_float_at_top_level_but_not_inside_arrays() -> None:
    answer = [{"weather.get": {**ANSWER[0]["weather.get"], "ratio": [1.0]}}]
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "ratio": 1}}, answer=answer).valid
    strict = [{"weather.get": {**ANSWER[0]["weather.get"], "tags": [[1.0, 2.0]]}}]
    v = verdict({"weather.get": {"city": "NYC", "days": 3, "tags": [1, 2]}}, answer=strict)
    assert v.error_type == "type_error:nested"
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "tags": [1.0, 2.0]}}, answer=strict).valid
    # BFCL quirk reproduced: when "" (optional) is among the acceptable values the item-type
    # check passes, and [1, 2] == [1.0, 2.0] by value
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "tags": [1, 2]}}).valid


def test_optional_argument_omitted_and_required_by_answer() -> None:
    assert verdict({"weather.get": {"city": "NYC", "days": 3}}).valid  # all optional ones carry ""
    answer = [{"weather.get": {**ANSWER[0]["weather.get"], "unit": ["celsius"]}}]
    v = verdict({"weather.get": {"city": "NYC", "days": 3}}, answer=answer)
    assert v.error_type == "simple_function_checker:missing_optional"


def test_acceptable_alternative_value_and_string_normalisation() -> None:
    assert verdict({"weather.get": {"city": "NYC", "days": 3}}).valid
    assert verdict({"weather.get": {"city": "new-york", "days": 3}}).valid  # spaces, '-', case dropped
    v = verdict({"weather.get": {"city": "Boston", "days": 3}})
    assert v.error_type == "value_error:string"
    assert normalize_text("April 1, 2024") == normalize_text("april 1 2024") == "april12024"


def test_wrong_number_value() -> None:
    assert verdict({"weather.get": {"city": "NYC", "days": 4}}).error_type == "value_error:others"


def test_dict_parameter_keys_and_values() -> None:
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "opts": {"lang": "EN"}}}).valid
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "opts": {"lang": "fr"}}}).error_type == "value_error:dict_value"
    assert verdict({"weather.get": {"city": "NYC", "days": 3, "opts": {"lang": "en", "x": 1}}}).error_type == "value_error:dict_key"


def test_malformed_argument_json_is_a_decoder_failure_not_an_exception() -> None:
    d = decode_result([{"weather.get": '{"city": "NYC", "days": '}])
    v = check_entry(SPEC, d, ANSWER, "simple")
    assert (v.valid, v.error_type) == (False, "ast_decoder:decoder_failed")


def test_wrong_output_format() -> None:
    d = decode_result([{"weather.get": "[1, 2]"}])
    assert check_entry(SPEC, d, ANSWER, "simple").error_type == "ast_decoder:decoder_wrong_output_format"


def test_wrong_count_simple_and_multiple() -> None:
    two = [{"weather.get": json.dumps({"city": "NYC", "days": 3})}] * 2
    assert check_entry(SPEC, decode_result(two), ANSWER, "simple").error_type == "simple_function_checker:wrong_count"
    assert check_entry(SPEC, decode_result(two), ANSWER, "multiple").error_type == "multiple_function_checker:wrong_count"
    assert check_entry(SPEC, decode_result([]), ANSWER, "simple").error_type == "simple_function_checker:wrong_count"


PAR_ANSWER = [{"weather.get": {"city": ["NYC"], "days": [3]}}, {"weather.get": {"city": ["Paris"], "days": [1]}}, {"time.now": {"tz": ["CET"]}}]


def test_parallel_calls_in_another_order_pass() -> None:
    calls = [{"time.now": {"tz": "CET"}}, {"weather.get": {"city": "Paris", "days": 1}}, {"weather.get": {"city": "NYC", "days": 3}}]
    d = decode_result([{k: json.dumps(v)} for c in calls for k, v in c.items()])
    assert check_entry(SPEC, d, PAR_ANSWER, "parallel_multiple").valid


def test_parallel_duplicate_calls_fail() -> None:
    calls = [{"time.now": {"tz": "CET"}}, {"weather.get": {"city": "NYC", "days": 3}}, {"weather.get": {"city": "NYC", "days": 3}}]
    d = decode_result([{k: json.dumps(v)} for c in calls for k, v in c.items()])
    v = check_entry(SPEC, d, PAR_ANSWER, "parallel")
    assert v.error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_parallel_wrong_count() -> None:
    d = decode_result([{"time.now": json.dumps({"tz": "CET"})}])
    assert check_entry(SPEC, d, PAR_ANSWER, "parallel").error_type == "parallel_function_checker_no_order:wrong_count"


def test_python_call_strings_are_parsed_with_ast_never_evaluated() -> None:
    calls = parse_python_calls('[weather.get(city="NYC", days=3, tags=[1.0, -2.5]), time.now(tz=__import__("os").name)]')
    assert calls[0] == {"weather.get": {"city": "NYC", "days": 3, "tags": [1.0, -2.5]}}
    assert calls[1] == {"time.now": {"tz": "__import__('os').name"}}  # text, not executed
    d = decode_result('```\n[weather.get(city="NYC", days=3)]\n```')
    assert check_entry(SPEC, d, ANSWER, "simple").valid


def test_answer_naming_an_undescribed_function_fails_the_entry_instead_of_the_run() -> None:
    d = decode_result([{"other": "{}"}])
    v = check_entry(SPEC, d, [{"other": {}}], "multiple", entry_id="multiple_9")
    assert (v.valid, v.error_type) == (False, "multiple_function_checker:cannot_find_description")
    v = check_entry(SPEC, d, [{"other": {}}], "parallel", entry_id="parallel_9")
    assert (v.valid, v.error_type) == (False, "parallel_function_checker_no_order:cannot_find_description")
