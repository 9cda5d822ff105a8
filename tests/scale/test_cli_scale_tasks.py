"""The scale options on every task of the registry: pyspark is imported only by `--engine spark`,
and a missing pyspark, or a worker count below one, is one clear message. Each task runs on its own
example (`score_args` of tests/tasks/<task>/cases.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from extracteval.tasks import TASKS
from tests.conftest import REPO
from tests.contract.engine_cases import TASK_ARGS


def _files(tmp_path):
    (tmp_path / "j.jsonl").write_text('{"id": "a", "x": 1}\n')
    (tmp_path / "c.jsonl").write_text('{"id": "a", "calls": [], "reference": {}, "output": "[]"}\n')
    return {
        "json": ["--truth", str(tmp_path / "j.jsonl"), "--predictions", f"m={tmp_path / 'j.jsonl'}"],
        "toolcalls": ["--truth", str(tmp_path / "c.jsonl"), "--predictions", f"m={tmp_path / 'c.jsonl'}"],
        "structured": ["--truth", str(tmp_path / "c.jsonl"), "--predictions", f"m={tmp_path / 'c.jsonl'}"],
    }


def test_chunked_and_worker_runs_never_import_pyspark():
    registry = {t: (s.task, s.model_type, s.package) for t, s in TASKS.items()}  # the test suite's own tasks too
    code = (
        "import sys\nfrom extracteval.tasks import TASKS, TaskSpec\n"
        f"TASKS.update({{t: TaskSpec(*s) for t, s in {registry!r}.items()}})\n"
        "from extracteval.cli import main\n"
        f"for task, args in {TASK_ARGS!r}.items():\n"
        "    assert main(['score', task, *args, '--chunk-size', '7', '--json']) == 0, task\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=REPO)  # a loaded machine
    assert r.returncode == 0, r.stderr
    assert set(TASK_ARGS) == set(TASKS)
    assert [t for t in TASK_ARGS if f'"task": "{t}"' in r.stdout] == list(TASK_ARGS)  # each task's document came


@pytest.mark.parametrize("task", list(TASKS))
def test_engine_spark_without_pyspark_says_how_to_install(cli, no_pyspark, task):
    res = cli("score", task, *TASK_ARGS[task], "--engine", "spark")
    assert res.code == 2 and "pip install 'extracteval[spark]'" in res.err and "Traceback" not in res.err, res.err


@pytest.mark.parametrize("task", list(TASKS))
def test_workers_must_be_positive(cli, task):
    res = cli("score", task, *TASK_ARGS[task], "--workers", "0")
    assert res.code == 2 and "--workers to be ≥ 1, but got 0" in res.err, res.err


@pytest.mark.parametrize("task", ["json", "toolcalls", "structured"])
def test_chunked_output_folder_that_cannot_be_made_is_one_clear_error(cli, tmp_path, task):
    (tmp_path / "taken").write_text("a file, not a folder")
    out = tmp_path / "taken" / "out"
    res = cli("score", task, *_files(tmp_path)[task], "--chunk-size", "1", "--output", str(out))
    assert res.code == 2 and f"{out}: cannot create the output folder" in res.err and "Traceback" not in res.err, res.err
