"""Per-function counts of the `toolcalls` task: they split each model's totals exactly."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from extracteval.tasks.toolcalls.functions import FUNCTION_COUNT_KEYS, OTHER_FUNCTIONS, function_counts
from extracteval.tasks.toolcalls.semantics import reference_calls, score_toolcalls

NAMES = ("f", "g", "h")
_arg = st.fixed_dictionaries({}, optional={"a": st.integers(0, 2), "b": st.sampled_from(["x", "y"]), "c": st.lists(st.integers(0, 1), max_size=2)})
_call = st.builds(lambda n, a: {"name": n, "arguments": a}, st.sampled_from(NAMES), _arg)
_output = st.one_of(
    st.lists(_call, max_size=3).map(json.dumps),
    st.lists(st.builds(lambda n, a: {"name": n, "arguments": a}, st.sampled_from(("f", "zzz")), _arg), max_size=2),
    st.sampled_from(['{"name": "f", "arguments": "{bad', "no calls here", "", '[f(a=1), g(b="x")]', '[{"name": null}]']),
)


def _totals(truth: dict, outputs: dict) -> tuple[dict, dict]:
    result = score_toolcalls(truth, {"m": outputs})
    refs = {i: reference_calls(v) for i, v in truth.items()}
    return result.models["m"].counts.to_dict(), function_counts(refs, outputs, result.records["m"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(_call, max_size=3), _output), min_size=1, max_size=6))
def test_function_counts_add_up_to_the_model_totals(records):
    truth = {f"r{i}": ref for i, (ref, _) in enumerate(records)}
    outputs = {f"r{i}": out for i, (_, out) in enumerate(records) if i % 5 != 4}  # some records without output
    totals, per = _totals(truth, outputs)
    for k in FUNCTION_COUNT_KEYS:
        assert sum(c[k] for c in per.values()) == totals[k], k
    # items are the reference's function names, plus one pooled row for any other name
    assert set(per) - {OTHER_FUNCTIONS} <= {c["name"] for ref, _ in records for c in ref}
    assert all(c["name_matches"] <= c["ref_calls"] and c["args_exact"] <= c["name_matches"] for c in per.values())


def test_hand_made_record():
    truth = {"r1": [{"name": "f", "arguments": {"a": 1, "b": "x"}}, {"name": "g", "arguments": {"a": 2}}]}
    outputs = {"r1": '[g(a=3), f(a=1, b="x"), k(q=1)]'}  # g wrong value, f right, k hallucinated
    totals, per = _totals(truth, outputs)
    assert per["f"] == {"ref_calls": 1, "pred_calls": 1, "invalid_calls": 0, "name_matches": 1, "args_exact": 1, "tp": 2, "fp": 0, "fn": 0}
    assert per["g"] == {"ref_calls": 1, "pred_calls": 1, "invalid_calls": 0, "name_matches": 1, "args_exact": 0, "tp": 0, "fp": 1, "fn": 1}
    assert per[OTHER_FUNCTIONS] == {"ref_calls": 0, "pred_calls": 1, "invalid_calls": 0, "name_matches": 0, "args_exact": 0, "tp": 0, "fp": 1, "fn": 0}
    assert totals["fp"] == 2 and list(per) == ["f", "g", OTHER_FUNCTIONS]
