"""Shared fixtures. Reference data lives outside the repository in ../shared/data; tests that
need it skip with a clear reason when it is absent (a user's clone)."""

from __future__ import annotations

import os
from pathlib import Path

import json
from dataclasses import dataclass
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = REPO / "experiments"


def _shared_data() -> Path:
    env = os.environ.get("EXTRACTEVAL_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


SHARED_DATA = _shared_data()


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (or $EXTRACTEVAL_SHARED_DATA); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA} (set EXTRACTEVAL_SHARED_DATA to run the reference tests)")
    return SHARED_DATA



@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the `extracteval` command in-process: cli("score", "fields", ...) -> CliResult."""

    from extracteval.cli import main

    def run(*argv: str) -> CliResult:
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors and --help
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run
