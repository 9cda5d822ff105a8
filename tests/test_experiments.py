"""The bundled examples (experiments/<name>/) meet what issue 9 promises users of them.

Each folder: an experiment.yaml the demo runs, ≥ 50 records of truth, ≥ 3 models' predictions,
its configuration, a deterministic make_data.py, and a README.md whose commands work — they are
run here in-process (fast), from a copy of experiments/ so nothing is written into the checkout.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from extracteval.io.config import load_mapping
from tests.test_readme import readme_blocks

REPO = Path(__file__).resolve().parents[1]
SPECS = sorted((REPO / "experiments").glob("*/experiment.yaml"))
IDS = [s.parent.name for s in SPECS]


def _tracks(spec: dict) -> list[dict]:
    """One dict with truth and predictions per track (a single-task example has one)."""
    return list(spec["tracks"].values()) if "tracks" in spec else [spec]


def _records(path: Path) -> int:
    if path.suffix == ".jsonl":
        return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return len(pd.read_csv(path))


def test_every_task_has_an_example() -> None:
    tasks = {t for s in SPECS for t in str(load_mapping(s)["task"]).split("+")}
    assert tasks == {"fields", "json", "spans", "labels", "entities", "structured", "toolcalls"}


@pytest.mark.parametrize("spec_path", SPECS, ids=IDS)
def test_example_is_realistic_in_size_models_and_configuration(spec_path: Path) -> None:
    folder = spec_path.parent
    spec = load_mapping(spec_path)
    assert spec.get("description"), "the demo prints the description"
    assert (folder / "make_data.py").is_file(), "the data must come with its deterministic generator"
    for track in _tracks(spec):
        assert _records(folder / track["truth"]) >= 50
        assert len(track["predictions"]) >= 3
        for path in track["predictions"].values():
            assert _records(folder / path) >= 45  # a model may skip a few records, on purpose
    configured = {"strategies", "weights", "config", "threshold", "decision", "flatten"} & set(spec)
    assert configured, "each example shows its configuration"


def test_contracts_example_has_pending_and_error_records() -> None:
    statuses = set()
    for path in (REPO / "experiments" / "contracts" / "predictions").glob("*.csv"):
        statuses |= set(pd.read_csv(path, dtype=str)["status"].dropna().str.strip().str.lower())
    assert {"pending", "error"} <= statuses


@pytest.mark.parametrize("spec_path", SPECS, ids=IDS)
def test_example_readme_commands_run(spec_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:
    name = spec_path.parent.name
    readme = spec_path.parent / "README.md"
    assert readme.is_file(), f"experiments/{name}/README.md is missing"
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"# {name} "), "the README is titled with the folder name"
    blocks = [b for b in readme_blocks(text) if "runnable" in b.markers]
    assert blocks, "the README shows the command that runs the example"
    commands = [shlex.split(c, comments=True) for b in blocks for c in b.text.replace("\\\n", " ").splitlines() if c.strip()]
    assert ["extracteval", "demo", "--only", name] in commands
    shutil.copytree(REPO / "experiments", tmp_path / "experiments")
    monkeypatch.chdir(tmp_path)
    scored = 0
    for argv in commands:
        assert argv[0] == "extracteval"
        if argv[1] == "demo":  # exercised for every example by tests/mlflow/test_demo.py
            continue
        result = cli(*argv[1:], "--json")
        assert result.code == 0, result.err
        assert result.json()["ranking"]
        scored += 1
    assert scored >= 1
