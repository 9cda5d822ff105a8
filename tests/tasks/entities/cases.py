"""The `entities` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_json_line, models, set_at

_EX = EXPERIMENTS / "invoices"

CASE = TaskCase(
    example="invoices",
    score_args=["--truth", str(_EX / "truth.jsonl"), "--weights", str(_EX / "weights.yaml"),
                *models(_EX, {"gpt": "predictions/gpt-4o.jsonl", "mistral": "predictions/mistral-7b.jsonl"})],
    evaluator_config={"config_file": "weights.yaml"},
    cells=("entities", "entities"),
    rescore=Rescore("truth.jsonl", "mistral-7b", "predictions/mistral-7b.jsonl", ["--weights", "weights.yaml"],
                    first_json_line(set_at(("entities", 0, "description"), "Something else entirely"))),
    genai_rows=[
        ([{"description": "Pen", "amount": "1.00"}], json.dumps({"entities": [{"description": "Pen", "amount": "1.00"}]})),
        ([{"description": "Ink", "amount": "2.00"}, {"description": "Pad", "amount": "3.00"}],
         json.dumps({"entities": [{"description": "Ink", "amount": "9.00"}, {"description": "Total", "amount": "12.00"}]})),
        ([{"description": "Cap", "amount": "4.00"}], '{"entities": [{"description": "Cap"'),
    ],
    genai_primary="entity_f1",
)
