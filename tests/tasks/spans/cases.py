"""The `spans` task's cases for the tests over the registry (tests/contract/cases.py)."""

from tests.contract.cases import EXPERIMENTS, Rescore, TaskCase, first_json_line, models

_EX = EXPERIMENTS / "requirements"
_TEXT = "The user must confirm the payment."


def _sp(phrase: str, tag: str) -> dict:
    i = _TEXT.index(phrase)
    return {"start": i, "end": i + len(phrase), "tag": tag}


CASE = TaskCase(
    example="requirements",
    score_args=["--truth", str(_EX / "truth.jsonl"),
                *models(_EX, {"qwen": "predictions/qwen3-4b-pipeline.jsonl", "kw": "predictions/keyword-baseline.jsonl"})],
    evaluator_config={"threshold": 0.5},
    cells="rows",
    rescore=Rescore("truth.jsonl", "llama-3.1-8b", "predictions/llama-3.1-8b.jsonl", ["--threshold", "0.5", "--no-ci"],
                    first_json_line(lambda r: r["gold"].pop())),
    genai_rows=[
        ({"text": _TEXT, "spans": [_sp("user", "Actor"), _sp("confirm", "Action")]}, [_sp("user", "Actor"), _sp("confirm", "Action")]),
        ({"text": _TEXT, "spans": [_sp("user", "Actor"), _sp("the payment", "Entity")]}, [_sp("The user", "Actor"), _sp("the payment", "Entity")]),
        ({"text": _TEXT, "spans": [_sp("confirm", "Action")]}, "no spans found"),
    ],
    genai_primary="f1",
)
