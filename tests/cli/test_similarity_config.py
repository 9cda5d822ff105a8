"""`similarity` / `similarity_options` in config files and evaluator_config: one reading for the
json and entities tasks, a clear error for options that are not a mapping, API keys refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extracteval.errors import InputError
from extracteval.io.config import similarity_settings


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def commands(tmp_path: Path) -> dict[str, list[str]]:
    jt = _jsonl(tmp_path / "jt.jsonl", [{"id": "1", "name": "Ada Lovelace"}])
    et = _jsonl(tmp_path / "et.jsonl", [{"id": "1", "entities": [{"item": "bolt", "qty": 2}]}])
    return {
        "json": ["score", "json", "--truth", str(jt), "--predictions", f"m={jt}", "--strategies"],
        "entities": ["score", "entities", "--truth", str(et), "--predictions", f"m={et}", "--weights"],
    }


@pytest.mark.parametrize("task", ["json", "entities"])
@pytest.mark.parametrize(("options", "message"), [
    ("[1, 2]", "'similarity_options' must be a mapping, but found list"),
    ("{api_key: sk-secret}", "do not put API keys in configs; set EXTRACTEVAL_JUDGE_API_KEY"),
])
def test_config_file_similarity_options_are_checked(cli, commands, tmp_path, task, options, message):
    body = "strategies: {name: SEMANTIC}\n" if task == "json" else "weights: {item: 1}\n"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"{body}similarity: fuzzy\nsimilarity_options: {options}\n", encoding="utf-8")
    r = cli(*commands[task], str(cfg))
    assert r.code == 2 and f"{cfg}: {message}" in r.err and "Traceback" not in r.err and "sk-secret" not in r.err


@pytest.mark.parametrize("task", ["json", "entities"])
def test_config_file_names_the_backend(cli, commands, tmp_path, task):
    body = "strategies: {name: SEMANTIC}\n" if task == "json" else "weights: {item: 1}\nstrategies: {item: SEMANTIC}\n"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"{body}similarity: fuzzy\n", encoding="utf-8")
    r = cli(*commands[task], str(cfg), "--json")
    assert r.code == 0, r.err
    assert "fuzzy" in json.dumps(r.json()["config"]) and "lexical" not in json.dumps(r.json()["config"])


@pytest.mark.parametrize("task", ["json", "entities"])
def test_evaluator_config_similarity_options_are_checked(task):
    from extracteval.mlflow.adapters import get_adapter

    adapter = get_adapter(task)
    _, name, opts = adapter.build_config({"similarity": "fuzzy", "similarity_options": {"scorer": "ratio"}})
    assert (name, opts) == ("fuzzy", {"scorer": "ratio"})
    assert adapter.build_config({})[1:] == ("lexical", {})
    with pytest.raises(InputError, match="evaluator_config: 'similarity_options' must be a mapping, but found str"):
        adapter.build_config({"similarity_options": "fast"})
    with pytest.raises(InputError, match="do not put API keys in configs"):
        adapter.build_config({"similarity": "llm_judge", "similarity_options": {"api_key": "x"}})


def test_similarity_settings_default_and_copy():
    raw = {"similarity_options": {"model_path": "/m"}}
    name, opts = similarity_settings(raw, source="f.yaml")
    assert name == "lexical" and opts == {"model_path": "/m"} and opts is not raw["similarity_options"]
    assert similarity_settings({"similarity": None}, source="f.yaml", default="fuzzy") == ("fuzzy", {})
