"""The `toolcalls` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_json_line, models, set_at

_EX = EXPERIMENTS / "slm-vs-llm" / "toolcalls"
_REF = [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]

CASE = TaskCase(
    example="slm-vs-llm/toolcalls",
    score_args=["--truth", str(_EX / "truth.jsonl"), *models(_EX, {"gpt": "gpt-4o.jsonl", "qwen": "qwen2.5-1.5b.jsonl"})],
    evaluator_config={},
    cells=("calls", "output"),
    rescore=Rescore("truth.jsonl", "llama-3.1-8b", "llama-3.1-8b.jsonl", [],
                    first_json_line(set_at(("calls", 0, "arguments", "city"), "Edited City"))),
    genai_rows=[
        (json.dumps(_REF), '[get_weather(city="Paris", unit="celsius")]'),
        (json.dumps(_REF), json.dumps([{"name": "get_weather", "arguments": {"city": "Lyon", "unit": "celsius"}}])),
        (json.dumps(_REF), "I cannot call tools"),
    ],
    genai_primary="call_correct",
)
