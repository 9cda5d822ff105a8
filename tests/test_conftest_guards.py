"""The suite's own guards (tests/conftest.py): no test sees the developer's MLflow environment."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import AMBIENT_MLFLOW, REPO


def test_no_ambient_mlflow_variables_inside_a_test() -> None:
    assert [n for n in AMBIENT_MLFLOW if n in os.environ] == []


def test_ambient_mlflow_variables_of_the_shell_are_removed() -> None:
    """Run the test above in a pytest whose environment points at someone's tracking server and run."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": "http://127.0.0.1:9", "MLFLOW_EXPERIMENT_ID": "42",
           "MLFLOW_EXPERIMENT_NAME": "theirs", "MLFLOW_RUN_ID": "0" * 32}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{__file__}::test_no_ambient_mlflow_variables_inside_a_test"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
