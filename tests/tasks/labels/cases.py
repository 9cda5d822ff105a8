"""The `labels` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_csv_row, models

_EX = EXPERIMENTS / "tickets"

CASE = TaskCase(
    example="tickets",
    score_args=["--truth", str(_EX / "truth.csv"), "--config", str(_EX / "config.yaml"),
                *models(_EX, {"gpt": "predictions/gpt-4o-mini.csv", "rules": "predictions/keyword-rules.csv"})],
    evaluator_config={"task": "labels", "config_file": "config.yaml"},
    cells="rows",
    rescore=Rescore("truth.csv", "distilbert-clf", "predictions/distilbert-clf.csv", ["--config", "config.yaml"],
                    first_csv_row("category", "billing")),
    genai_rows=[
        ({"category": "bug", "priority": "low"}, json.dumps({"category": "bug", "priority": "low"})),
        ({"category": "billing", "priority": "high"}, json.dumps({"category": "bug", "priority": "high"})),
        ({"category": "refund", "priority": "low"}, "I could not classify this."),
    ],
    genai_primary="accuracy",
)
