"""`--engine spark`, for every task of the registry: a truth, predictions or configuration file
that is not there is reported before Spark starts — exit code 2 and the error alone, not after
the seconds a Spark session takes to start and the lines its JVM prints. Both commands (`score`
and `evaluate`) are checked; Spark itself is never started here (starting it fails the test), so
no Java runtime is needed; each case runs with pyspark and as without it (the file's error comes
before the install hint)."""

from __future__ import annotations

from pathlib import Path

import pytest

from extracteval.mlflow.adapters import TASKS
from tests.contract.engine_cases import TASK_ARGS

CONFIG_OPTIONS = ("--strategies", "--weights", "--config")


def _with_missing(args: list[str], which: str, tmp_path: Path) -> tuple[list[str], str]:
    """`args` with one file replaced by a path that does not exist (same suffix), and that path."""
    out = list(args)
    if which == "truth":
        at = out.index("--truth") + 1
        missing = str(tmp_path / f"no-truth{Path(out[at]).suffix}")
        out[at] = missing
    elif which == "predictions":
        at = len(out) - 1 - out[::-1].index("--predictions") + 1  # the last model's file
        name, _, file = out[at].partition("=")
        missing = str(tmp_path / f"no-predictions{Path(file).suffix}")
        out[at] = f"{name}={missing}"
    else:
        at = next(i for i, a in enumerate(out) if a in CONFIG_OPTIONS) + 1
        missing = str(tmp_path / f"no-config{Path(out[at]).suffix}")
        out[at] = missing
    return out, missing


# each task's truth and predictions, and its configuration file where its example has one
CASES = [(task, which) for task in TASKS for which in ("truth", "predictions", "config")
         if which != "config" or set(CONFIG_OPTIONS) & set(TASK_ARGS[task])]


@pytest.mark.parametrize("command", ["score", "evaluate"])
@pytest.mark.parametrize(("task", "which"), CASES)
def test_a_missing_file_is_reported_before_spark_starts(cli, tmp_path, monkeypatch, spark_never_starts, pyspark_or_not, task, which,
                                                       command):
    args, missing = _with_missing(TASK_ARGS[task], which, tmp_path)
    monkeypatch.chdir(tmp_path)
    logging = ["--experiment", "x", "--tracking-uri", f"sqlite:///{tmp_path / 'store.db'}"] if command == "evaluate" else []
    res = cli(command, task, *args, *logging, "--engine", "spark", "--spark-master", "local[2]")
    assert spark_never_starts == [], res.err
    assert res.code == 2, res.err
    assert f"{missing}: file not found." in res.err, res.err
    assert "Traceback" not in res.err
    assert not (tmp_path / "store.db").exists()  # nothing was logged
