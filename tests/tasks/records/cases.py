"""The `records` task's cases for the tests over the registry (tests/contract/cases.py)."""

import json
from pathlib import Path

from tests.contract.cases import Rescore, TaskCase, first_csv_row, models

_EX = Path(__file__).resolve().parent / "example"

CASE = TaskCase(
    example=_EX,
    score_args=["--truth", str(_EX / "truth.csv"),
                *models(_EX, {"careful": "predictions/careful.csv", "hasty": "predictions/hasty.csv", "lazy": "predictions/lazy.csv"})],
    evaluator_config={"task": "records"},
    cells="rows",
    rescore=Rescore("truth.csv", "hasty", "predictions/hasty.csv", [], first_csv_row("city", "Edited City")),
    genai_rows=[
        ({"name": "Ann", "city": "Paris"}, json.dumps({"name": "Ann", "city": "Paris"})),
        ({"name": "Bob", "city": "Lyon"}, {"name": "Bob", "city": "Rome"}),
        ({"name": "Cy", "city": "Oslo"}, "Sorry, I cannot help."),
    ],
    genai_primary="correct",
)
