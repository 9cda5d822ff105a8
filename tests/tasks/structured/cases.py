"""The `structured` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_json_line, models, set_at

_EX = EXPERIMENTS / "slm-vs-llm" / "structured"

CASE = TaskCase(
    example="slm-vs-llm/structured",
    score_args=["--truth", str(_EX / "truth.jsonl"), *models(_EX, {"gpt": "gpt-4o.jsonl", "qwen": "qwen2.5-1.5b.jsonl"})],
    evaluator_config={"list_matching": "positional"},
    cells=("reference", "output"),
    rescore=Rescore("truth.jsonl", "llama-3.1-8b", "llama-3.1-8b.jsonl", ["--list-matching", "positional"],
                    first_json_line(set_at(("reference", "order_id"), "ORD-EDITED"))),
    genai_rows=[
        ({"user": {"name": "U1", "age": 31}}, json.dumps({"user": {"name": "U1", "age": 31}})),
        ({"user": {"name": "U2", "age": 32}}, "Here:\n```json\n" + json.dumps({"user": {"name": "U2", "age": "32"}}) + "\n```"),
        ({"user": {"name": "U3", "age": 33}}, '{"user": {"name": "U3", "age": '),
    ],
    genai_primary="field_f1",
)
