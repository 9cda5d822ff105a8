"""The `json` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_json_line, models, set_at

_EX = EXPERIMENTS / "customers"

CASE = TaskCase(
    example="customers",
    score_args=["--truth", str(_EX / "truth.jsonl"), "--strategies", str(_EX / "strategies.yaml"), "--flatten",
                *models(_EX, {"gpt": "predictions/gpt-4o-mini.jsonl", "llama": "predictions/llama-3.1-8b.jsonl"})],
    evaluator_config={"strategies": str(_EX / "strategies.yaml"), "flatten": True},
    cells="rows",
    rescore=Rescore("truth.jsonl", "llama-3.1-8b", "predictions/llama-3.1-8b.jsonl", ["--strategies", "strategies.yaml", "--flatten"],
                    first_json_line(set_at(("full_name",), "Someone Else"))),
    genai_rows=[
        ({"name": "Ann", "email": "a@x.org", "note": None}, json.dumps({"name": "Ann", "email": "a@x.org", "note": None})),
        ({"name": "Bob", "email": "b@x.org", "note": None}, {"name": "Bob", "note": "invented", "extra": 1}),
        ({"name": "Cy", "email": "c@x.org", "note": None}, "Sorry, I cannot help."),
    ],
    genai_primary="rqs",
)
