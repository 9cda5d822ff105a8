"""The code meets its lint configuration (`[tool.ruff]` in pyproject.toml): no unused or undefined
names, no redefinitions, no line over the configured length, in `src/` and `tests/` alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.system import python_package

REPO = Path(__file__).resolve().parents[1]


def test_the_code_meets_the_lint_configuration() -> None:
    python_package("ruff", "lint")
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "src", "tests"],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]
