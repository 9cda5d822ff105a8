"""The `fields` task's cases for the tests over the registry (tests/contract/cases.py)."""

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_csv_row, models

_EX = EXPERIMENTS / "contracts"

CASE = TaskCase(
    example="contracts",
    score_args=["--truth", str(_EX / "truth.csv"), "--strategies", str(_EX / "strategies.yaml"),
                *models(_EX, {"gpt": "predictions/gpt-4o-mini.csv", "llama": "predictions/llama-3.1-8b.csv"})],
    evaluator_config={"strategies": str(_EX / "strategies.yaml")},
    cells="rows",
    rescore=Rescore("truth.csv", "gpt-4o-mini", "predictions/gpt-4o-mini.csv", ["--strategies", "strategies.yaml", "--no-ci"],
                    first_csv_row("contract_type", "Edited Agreement")),
)
