"""Ctrl-C ends `python -m extracteval …` with exit status 130, wherever the interrupt lands.

CPython ends a `-m` run by SIGINT of its own (status -2 to a parent) once a KeyboardInterrupt has
passed through code run from a string — `exec`/`eval`, which `collections.namedtuple` and
`dataclasses` use to build their methods — even when the program handled the interrupt and asked
for another exit code. The run below is the real `python -m extracteval` entry (its `__main__`),
with a command whose interrupt passes through such code, as an interrupt landing while pandas
builds a named tuple does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

DRIVER = '''
import argparse
import runpy

import extracteval.cli as cli


def interrupted(args):
    exec("raise KeyboardInterrupt", {})  # an interrupt landing inside code run from a string


def main(argv=None):
    return cli.run_command(interrupted, argparse.Namespace())


cli.main = main
runpy.run_module("extracteval", run_name="__main__", alter_sys=True)
'''


def _run_module(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    """`python -m name` of a module with this source, extracteval importable from the checkout."""
    (tmp_path / f"{name}.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_an_interrupt_inside_string_built_code_still_exits_130(tmp_path: Path) -> None:
    done = _run_module(tmp_path, "drive_interrupt", DRIVER)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "extracteval: interrupted\n"


def test_the_plain_exit_path_is_unchanged(tmp_path: Path) -> None:
    # a run that was not interrupted leaves through sys.exit as before: its code and its exit handlers
    done = _run_module(tmp_path, "drive_exit", "import atexit, sys\nfrom extracteval.cli import leave\n"
                       "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\nleave(2)\n")
    assert (done.returncode, done.stderr) == (2, "exit handler ran\n")


def test_an_interrupted_run_still_runs_its_exit_handlers_and_flushes(tmp_path: Path) -> None:
    done = _run_module(tmp_path, "drive_handlers", "import atexit, sys\nfrom extracteval.cli import leave\n"
                       "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
                       "print('unflushed output', end='')\nleave(130)\n")
    assert (done.returncode, done.stdout, done.stderr) == (130, "unflushed output", "exit handler ran\n")
