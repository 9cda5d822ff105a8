"""The scale options on json / toolcalls / structured / spans: pyspark is imported only by
`--engine spark`, and a missing pyspark is one clear message."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _files(tmp_path):
    (tmp_path / "j.jsonl").write_text('{"id": "a", "x": 1}\n')
    (tmp_path / "c.jsonl").write_text('{"id": "a", "calls": [], "reference": {}, "output": "[]"}\n')
    (tmp_path / "s.jsonl").write_text('{"id": "a", "gold": [], "pred": []}\n')
    (tmp_path / "l.csv").write_text("id,colour\na,red\n")
    (tmp_path / "e.jsonl").write_text('{"id": "a", "entities": [{"sku": "A"}]}\n')
    return {
        "labels": ["--truth", str(tmp_path / "l.csv"), "--predictions", f"m={tmp_path / 'l.csv'}"],
        "entities": ["--truth", str(tmp_path / "e.jsonl"), "--predictions", f"m={tmp_path / 'e.jsonl'}"],
        "json": ["--truth", str(tmp_path / "j.jsonl"), "--predictions", f"m={tmp_path / 'j.jsonl'}"],
        "toolcalls": ["--truth", str(tmp_path / "c.jsonl"), "--predictions", f"m={tmp_path / 'c.jsonl'}"],
        "structured": ["--truth", str(tmp_path / "c.jsonl"), "--predictions", f"m={tmp_path / 'c.jsonl'}"],
        "spans": ["--truth", str(tmp_path / "s.jsonl"), "--predictions", f"m={tmp_path / 's.jsonl'}"],
    }


def test_chunked_and_worker_runs_never_import_pyspark(tmp_path):
    code = (
        "import sys\nfrom extracteval.cli import main\n"
        f"for task, args in {_files(tmp_path)!r}.items():\n"
        "    assert main(['score', task, *args, '--chunk-size', '1', '--json']) == 0\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    tasks = ['labels', 'entities', 'json', 'toolcalls', 'structured', 'spans']
    assert [t for t in tasks if f'"task": "{t}"' in r.stdout] == tasks


@pytest.mark.parametrize("task", ["json", "toolcalls", "spans", "structured", "labels", "entities"])
def test_engine_spark_without_pyspark_says_how_to_install(cli, tmp_path, no_pyspark, task):
    res = cli("score", task, *_files(tmp_path)[task], "--engine", "spark")
    assert res.code == 2 and "pip install 'extracteval[spark]'" in res.err and "Traceback" not in res.err, res.err


@pytest.mark.parametrize("task", ["json", "toolcalls", "structured", "spans", "labels", "entities"])
def test_workers_must_be_positive(cli, tmp_path, task):
    res = cli("score", task, *_files(tmp_path)[task], "--workers", "0")
    assert res.code == 2 and "--workers to be ≥ 1, but got 0" in res.err, res.err


@pytest.mark.parametrize("task", ["json", "toolcalls", "structured"])
def test_chunked_output_folder_that_cannot_be_made_is_one_clear_error(cli, tmp_path, task):
    (tmp_path / "taken").write_text("a file, not a folder")
    out = tmp_path / "taken" / "out"
    res = cli("score", task, *_files(tmp_path)[task], "--chunk-size", "1", "--output", str(out))
    assert res.code == 2 and f"{out}: cannot create the output folder" in res.err and "Traceback" not in res.err, res.err
