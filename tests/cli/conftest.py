from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from extracteval.cli import main


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

    def run(*argv: str) -> CliResult:
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors and --help
            code = int(e.code or 0)
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run
