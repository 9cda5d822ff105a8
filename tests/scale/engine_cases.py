"""One small example per task (from `experiments/`), as `score <task>` / `evaluate <task>`
arguments, for the tests that run every engine over the task registry. A task added to the
registry without an example here fails those tests."""

from __future__ import annotations

from tests.conftest import EXPERIMENTS

__all__ = ["TASK_ARGS"]


def _models(folder: str, names: dict[str, str]) -> list[str]:
    out: list[str] = []
    for name, path in names.items():
        out += ["--predictions", f"{name}={EXPERIMENTS / folder / path}"]
    return out


TASK_ARGS: dict[str, list[str]] = {
    "fields": ["--truth", str(EXPERIMENTS / "contracts/truth.csv"), "--strategies", str(EXPERIMENTS / "contracts/strategies.yaml"),
               *_models("contracts", {"gpt": "predictions/gpt-4o-mini.csv", "llama": "predictions/llama-3.1-8b.csv"})],
    "json": ["--truth", str(EXPERIMENTS / "customers/truth.jsonl"), "--strategies", str(EXPERIMENTS / "customers/strategies.yaml"), "--flatten",
             *_models("customers", {"gpt": "predictions/gpt-4o-mini.jsonl", "llama": "predictions/llama-3.1-8b.jsonl"})],
    "spans": ["--truth", str(EXPERIMENTS / "requirements/truth.jsonl"),
              *_models("requirements", {"qwen": "predictions/qwen3-4b-pipeline.jsonl", "kw": "predictions/keyword-baseline.jsonl"})],
    "entities": ["--truth", str(EXPERIMENTS / "invoices/truth.jsonl"), "--weights", str(EXPERIMENTS / "invoices/weights.yaml"),
                 *_models("invoices", {"gpt": "predictions/gpt-4o.jsonl", "mistral": "predictions/mistral-7b.jsonl"})],
    "labels": ["--truth", str(EXPERIMENTS / "tickets/truth.csv"), "--config", str(EXPERIMENTS / "tickets/config.yaml"),
               *_models("tickets", {"gpt": "predictions/gpt-4o-mini.csv", "rules": "predictions/keyword-rules.csv"})],
    "structured": ["--truth", str(EXPERIMENTS / "slm-vs-llm/structured/truth.jsonl"),
                   *_models("slm-vs-llm/structured", {"gpt": "gpt-4o.jsonl", "qwen": "qwen2.5-1.5b.jsonl"})],
    "toolcalls": ["--truth", str(EXPERIMENTS / "slm-vs-llm/toolcalls/truth.jsonl"),
                  *_models("slm-vs-llm/toolcalls", {"gpt": "gpt-4o.jsonl", "qwen": "qwen2.5-1.5b.jsonl"})],
}
